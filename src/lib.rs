//! cmstore: an event store for AI coding agent hooks.
//!
//! Data flows one way:
//!
//! ```text
//! agent ─stdin─▶ capture ─append─▶ queue file ─tail─▶ ingest ─▶ SQLite ─▶ query / summarize / prune
//!                  │                    └────────▶ ContextManager extension (reads the same lines)
//!                  └─ transcript cursors (state/)
//! ```
//!
//! The hook path (`capture`) runs before anything opens the database: [`run`] dispatches it
//! first, and nothing it calls imports the store.

pub mod cli;
pub mod cmd;
pub mod config;
pub mod files;
pub mod hook;
pub mod model;
pub mod read;
pub mod store;
pub mod support;
pub mod write;

use std::process::ExitCode;

use cli::{Cli, Command};
use files::paths::Paths;

/// Runs one parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = &Paths::resolve(cli.globals.given_paths());
    support::zone::choose(match cli.globals.utc {
        true => support::zone::Zone::Utc,
        false => support::zone::Zone::Local,
    });
    // A mistyped --config must not quietly become the defaults: other prices, another gate
    // mode, prune's seven days where the file said thirty. The hook path is the exception:
    // capture never fails, and records the problem on its line instead (`configError`).
    if !matches!(cli.command, Command::Capture(_) | Command::Check(_)) {
        paths.check_given_config()?;
    }
    match cli.command {
        // The hook path: never fails, never opens the store.
        Command::Capture(args) => Ok(cmd::capture::run(paths, args)),
        Command::Ingest(args) => cmd::ingest::run(paths, args),
        Command::Import(args) => cmd::import::run(paths, args),
        Command::Query(args) => cmd::query::run(paths, args),
        Command::Summarize(args) => cmd::summarize::run(paths, args),
        Command::Sessions(args) => cmd::sessions::run(paths, args),
        Command::Show(args) => cmd::show::run(paths, args),
        Command::Gate(args) => cmd::gate::run(paths, args),
        Command::Serve(args) => cmd::serve::run(paths, args),
        Command::Status(args) => cmd::status::run(paths, args),
        Command::Budget(args) => cmd::budget::run(paths, args),
        Command::Usage(args) => cmd::usage::run(paths, args),
        Command::Verify(args) => cmd::verify::run(paths, args),
        Command::Statusline(args) => cmd::statusline::run(paths, args),
        Command::Prune(args) => cmd::prune::run(paths, args),
        Command::Export(args) => cmd::export::run(paths, args),
        Command::Push(args) => cmd::push::run(paths, args),
        Command::Config(args) => cmd::config::run(paths, args),
        Command::Hooks(args) => cmd::hooks::run(paths, args),
        Command::Check(args) => cmd::check::run(paths, args),
        Command::Completions(args) => cmd::generate::completions(args, Cli::definition()),
        Command::Man(args) => cmd::generate::man(args, Cli::definition()),
    }
}
