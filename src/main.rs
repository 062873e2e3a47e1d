//! The `cmstore` binary: parse arguments, run, turn the result into an exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cmstore::cli::Cli::parse_args();
    match cmstore::run(cli) {
        Ok(code) => code,
        Err(err) => {
            let (message, code) = cmstore::support::failure::describe(&err);
            if let Some(message) = message {
                eprintln!("{message}");
            }
            code
        }
    }
}
