//! The hook path alone, as a binary of its own: `cmstore capture`'s code and nothing else,
//! so link-time optimization drops every other subcommand (4.3 MB against the full binary's
//! 14.1 MB). A measuring tool for benches/HISTORY.md ("Every hook against a capture-only
//! binary"), never installed; it takes only capture's command line
//! (`[--home DIR] [--queue FILE] [--config FILE] capture [--agent A] [--event E]`).
//!
//! ```sh
//! cargo build --release --locked --example capture_only
//! ```

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let Some(cli) = cmstore::cli::Cli::parse_capture(&args) else {
        eprintln!("capture_only: expected `[GLOBALS] capture [--agent A] [--event E]`");
        return ExitCode::from(2);
    };
    let paths = cmstore::files::paths::Paths::resolve(cli.globals.given_paths());
    match cli.command {
        cmstore::cli::Command::Capture(args) => cmstore::cmd::capture::run(&paths, args),
        _ => ExitCode::from(2),
    }
}
