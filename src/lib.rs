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
pub mod event;
pub mod ingest;
pub mod paths;
pub mod queue;
pub mod shorten;
pub mod store;
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
