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
pub mod debug_log;
pub mod event;
pub mod hooks;
pub mod ingest;
pub mod output;
pub mod paths;
pub mod query;
pub mod queue;
pub mod redact;
pub mod safety;
pub mod shorten;
pub mod store;
pub mod timespec;
pub mod transcript;
pub mod wire;

use std::process::ExitCode;

use cli::{Cli, Command};

/// Runs one parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let globals = cli.globals;
    match cli.command {
        // The hook path: never fails, never opens the store.
        Command::Capture(args) => Ok(cmd::capture::run(&globals, args)),
        Command::Ingest(args) => cmd::ingest::run(&globals, args),
        Command::Query(args) => cmd::query::run(&globals, args),
        Command::Summarize(args) => cmd::summarize::run(&globals, args),
        Command::Status(args) => cmd::status::run(&globals, args),
        Command::Prune(args) => cmd::prune::run(&globals, args),
        Command::Config(args) => cmd::config::run(&globals, args),
        Command::Hooks(args) => cmd::hooks::run(&globals, args),
        Command::Completions(args) => cmd::generate::completions(args),
        Command::Man(args) => cmd::generate::man(args),
    }
}

/// True when `err` comes from writing to a closed pipe (`cmstore query … | head`), which is
/// not an error for a command-line tool.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
