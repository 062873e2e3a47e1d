//! Command-line definitions: global options and one variant per subcommand.
//!
//! Each variant wraps the `Args` of its `cmd::*` module; nothing below `cmd/` sees clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::cmd;

/// An exact, queryable, private event store for AI coding agent hooks.
#[derive(Debug, Parser)]
#[command(name = "cmstore", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every subcommand accepts.
#[derive(Debug, Clone, Default, Args)]
pub struct Globals {
    /// Home directory holding the queue, database, state and logs
    /// [default: ~/.contextmanager]
    #[arg(long, global = true, env = "CMSTORE_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Queue file [default: <home>/hook-queue.jsonl]
    #[arg(long, global = true, env = "CMSTORE_QUEUE", value_name = "FILE")]
    pub queue: Option<PathBuf>,
    /// SQLite database [default: <home>/cmstore.db]
    #[arg(long, global = true, env = "CMSTORE_DB", value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Configuration file [default: <home>/cmstore.toml]
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// The subcommands, in data-flow order.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Hook handler: read one agent event on stdin, append it to the queue, print the agent's reply
    Capture(cmd::capture::Args),
    /// Mirror the queue into the database, exactly once per line (follows until Ctrl-C)
    Ingest(cmd::ingest::Args),
    /// Run one read-only SQL statement against the store and print the rows
    Query(cmd::query::Args),
    /// Summaries per session, tool, day or agent, from the store's views
    Summarize(cmd::summarize::Args),
    /// Where ingest stands: sources, offsets, backlog, totals, database size, config problems
    Status(cmd::status::Args),
    /// Delete what is older than the retention, in short batches; optionally compact the queue
    Prune(cmd::prune::Args),
    /// Check or show the configuration (cmstore.toml plus CMSTORE_* variables)
    Config(cmd::config::Args),
    /// Install, check or remove the agent hook configuration that runs `cmstore capture`
    Hooks(cmd::hooks::Args),
    /// Print shell completions (bash, zsh, fish, powershell, elvish)
    Completions(cmd::generate::CompletionsArgs),
    /// Print the man page (roff)
    Man(cmd::generate::ManArgs),
}
