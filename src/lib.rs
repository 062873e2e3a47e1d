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

pub mod agent_settings;
pub mod capture;
pub mod checks;
pub mod cli;
pub mod clock;
pub mod cmd;
pub mod config;
pub mod debug_log;
pub mod env;
pub mod export;
pub mod failure;
pub mod gate;
pub mod human;
pub mod import;
pub mod ingest;
pub mod lock;
pub mod otlp_receiver;
pub mod paths;
pub mod prices;
pub mod prune;
pub mod queue;
pub mod queue_line;
pub mod redact;
pub mod render;
pub mod report;
pub mod safety;
pub mod serve;
pub mod sessions;
pub mod shorten;
pub mod store;
pub mod story;
pub mod tail;
pub mod timespec;
pub mod transcript;
pub mod wire;

use std::process::ExitCode;

use cli::{Cli, Command};
use paths::Paths;

/// Runs one parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let paths = &Paths::resolve(cli.globals.given_paths());
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
        Command::Prune(args) => cmd::prune::run(paths, args),
        Command::Export(args) => cmd::export::run(paths, args),
        Command::Config(args) => cmd::config::run(paths, args),
        Command::Hooks(args) => cmd::hooks::run(paths, args),
        Command::Check(args) => cmd::check::run(paths, args),
        Command::Completions(args) => cmd::generate::completions(args, Cli::definition()),
        Command::Man(args) => cmd::generate::man(args, Cli::definition()),
    }
}
