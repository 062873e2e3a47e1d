//! The `cmstore` binary: parse arguments, run, turn the result into an exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cmstore::cli::Cli::parse_args();
    match cmstore::run(cli) {
        Ok(code) => code,
        Err(err) => {
            if cmstore::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("cmstore: {err:#}");
            ExitCode::FAILURE
        }
    }
}
