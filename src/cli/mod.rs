//! Command-line definitions: global options and one variant per subcommand.
//!
//! Each variant wraps the `Args` of its `cmd::*` module; nothing below `cmd/` sees clap types.

// Doc comments here are also `--help` text, where `<home>` reads right; rustdoc takes it for
// an HTML tag.
#![allow(rustdoc::invalid_html_tags)]

pub mod filters;

use std::path::PathBuf;

use clap::error::ErrorKind;
use clap::{Args, Parser, Subcommand};

use crate::cmd;
use crate::files::paths::GivenPaths;

/// An exact, queryable, private event store for AI coding agent hooks.
#[derive(Debug, Parser)]
#[command(name = "cmstore", version, about, long_about = None)]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Parses the process's command line.
    ///
    /// A mistake in a hook's `cmstore capture …` command line must not break the agent: clap
    /// would exit 2, which Claude Code and VS Code read as "block this tool call". So a
    /// `capture` command line that does not parse runs capture with its defaults (agent
    /// sniffed, paths from `CMSTORE_*` variables) after a warning on stderr.
    pub fn parse_args() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
        if let Some(cli) = Cli::parse_capture(&args) {
            return cli;
        }
        match Cli::try_parse() {
            Ok(cli) => cli,
            Err(err) => {
                let informational = matches!(
                    err.kind(),
                    ErrorKind::DisplayHelp
                        | ErrorKind::DisplayVersion
                        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                );
                let is_capture = std::env::args_os().skip(1).any(|a| a == "capture");
                if informational || !is_capture {
                    err.exit();
                }
                let first_line = err.to_string();
                let first_line = first_line.lines().next().unwrap_or_default();
                eprintln!("cmstore capture: {first_line}; capturing with default options");
                Cli {
                    globals: Globals::salvage(std::env::args_os().skip(1)),
                    command: Command::Capture(cmd::capture::Args::default()),
                }
            }
        }
    }
}

impl Cli {
    /// The whole command line's definition, for completions and the man page.
    pub fn definition() -> clap::Command {
        <Cli as clap::CommandFactory>::command()
    }

    /// The hook path's command line (`[GLOBALS] capture [--agent A] [--event E]`), parsed
    /// without building clap's whole command tree: every agent event pays for process start-up,
    /// so capture skips what only the other commands need. Anything else — help, an unknown
    /// flag, a non-UTF-8 argument — returns `None` and goes through clap.
    ///
    /// Hand-written on purpose: benches/HISTORY.md (Capture) measured it at 153 → 115 page faults
    /// per capture, post-2k from 1.63× to 1.55× an empty hook binary.
    pub fn parse_capture(args: &[std::ffi::OsString]) -> Option<Cli> {
        let mut globals = Globals::from_env();
        let mut capture = cmd::capture::Args {
            agent: "auto".to_string(),
            event: None,
        };
        let mut seen_capture = false;
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            let arg = arg.to_str()?;
            if arg == "capture" && !seen_capture {
                seen_capture = true;
                continue;
            }
            let (flag, inline) = match arg.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value)),
                _ => (arg, None),
            };
            let mut value = || match inline {
                Some(v) => Some(v.to_string()),
                None => rest.next()?.to_str().map(str::to_string),
            };
            match flag {
                "--home" => globals.home = Some(PathBuf::from(value()?)),
                "--queue" => globals.queue = Some(PathBuf::from(value()?)),
                "--db" => globals.db = Some(PathBuf::from(value()?)),
                "--config" => globals.config = Some(PathBuf::from(value()?)),
                "--agent" if seen_capture => capture.agent = value()?,
                "--event" if seen_capture => capture.event = Some(value()?),
                _ => return None,
            }
        }
        seen_capture.then_some(Cli {
            globals,
            command: Command::Capture(capture),
        })
    }
}

/// The help's heading of [`Globals`]: listed apart from each subcommand's own options.
const GLOBAL: &str = "Global options";

/// Options every subcommand accepts.
#[derive(Debug, Clone, Default, Args)]
pub struct Globals {
    /// Home directory holding the queue, database, state and logs
    /// [default: ~/.contextmanager]
    #[arg(long, global = true, env = "CMSTORE_HOME", value_name = "DIR", help_heading = GLOBAL)]
    pub home: Option<PathBuf>,
    /// Queue file [default: <home>/hook-queue.jsonl]
    #[arg(long, global = true, env = "CMSTORE_QUEUE", value_name = "FILE", help_heading = GLOBAL)]
    pub queue: Option<PathBuf>,
    /// SQLite database [default: <home>/cmstore.db]
    #[arg(long, global = true, env = "CMSTORE_DB", value_name = "FILE", help_heading = GLOBAL)]
    pub db: Option<PathBuf>,
    /// Configuration file [default: <home>/cmstore.toml]
    #[arg(long, global = true, value_name = "FILE", help_heading = GLOBAL)]
    pub config: Option<PathBuf>,
    /// Times in UTC: dates given (--since 2026-04-01, today), the days of --by day and the
    /// times shown [default: the local zone, TZ]
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub utc: bool,
}

impl Globals {
    /// Global options picked out of a command line that did not parse, over the `CMSTORE_*`
    /// variables: `cmstore hooks install --home …` writes `--home` into the hook command, and
    /// a typo elsewhere on that line must not send events to another queue.
    pub fn salvage(args: impl IntoIterator<Item = std::ffi::OsString>) -> Globals {
        let mut globals = Globals::from_env();
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let text = arg.to_string_lossy().to_string();
            let (flag, inline) = match text.split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => {
                    (flag.to_string(), Some(value.into()))
                }
                _ => (text, None),
            };
            let slot = match flag.as_str() {
                "--home" => &mut globals.home,
                "--queue" => &mut globals.queue,
                "--db" => &mut globals.db,
                "--config" => &mut globals.config,
                _ => continue,
            };
            if let Some(value) = inline.or_else(|| args.next()) {
                *slot = Some(PathBuf::from(value));
            }
        }
        globals
    }

    /// The paths these options name, for [`crate::files::paths::Paths::resolve`].
    pub fn given_paths(&self) -> GivenPaths {
        GivenPaths {
            home: self.home.clone(),
            queue: self.queue.clone(),
            db: self.db.clone(),
            config: self.config.clone(),
        }
    }

    /// Global options from the `CMSTORE_*` variables alone.
    pub fn from_env() -> Globals {
        Globals {
            home: crate::support::env::path("CMSTORE_HOME"),
            queue: crate::support::env::path("CMSTORE_QUEUE"),
            db: crate::support::env::path("CMSTORE_DB"),
            config: None,
            utc: false,
        }
    }
}

/// The subcommands, in data-flow order.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Hook handler: read one agent event on stdin, append it to the queue, print the agent's reply
    Capture(cmd::capture::Args),
    /// Mirror the queue into the database, exactly once per line (follows until Ctrl-C)
    Ingest(cmd::ingest::Args),
    /// Read existing transcripts into the store: whole sessions (turns, tool calls) and token usage (idempotent: run twice, same rows)
    Import(cmd::import::Args),
    /// Run one read-only SQL statement against the store and print the rows
    Query(cmd::query::Args),
    /// Summaries per session, tool, day, agent, model or check, from the store's views (or a
    /// team store's, per user and machine too)
    Summarize(cmd::summarize::Args),
    /// List sessions, newest first
    Sessions(cmd::sessions::Args),
    /// One session's story: prompts, answers, tool calls, gate decisions, in order
    Show(cmd::show::Args),
    /// The safety gate's record: how often each rule fired, and what changed rules would decide
    Gate(cmd::gate::Args),
    /// A read-only web dashboard over the store, for its owner only (prints the address)
    Serve(cmd::serve::Args),
    /// Where ingest stands: sources, offsets, backlog, totals, database size, config problems
    Status(cmd::status::Args),
    /// Prove that no stored event, usage or OTLP row was altered, removed or inserted since
    /// cmstore stored it
    Verify(cmd::verify::Args),
    /// Where each budget limit of cmstore.toml stands: the spend of its day, week or month
    Budget(cmd::budget::Args),
    /// Token usage counted per session and model beside what the agent itself says it used;
    /// --check: only what disagrees, exit 1 when something does
    Usage(cmd::usage::Args),
    /// One line for a status bar (Claude Code's statusLine): today's and this week's spend,
    /// this session's cost; reads the spend file ingest keeps, never the database
    Statusline(cmd::statusline::Args),
    /// Delete what is older than the retention, in short batches; optionally compact the queue
    Prune(cmd::prune::Args),
    /// Send the store's events to an OpenTelemetry collector (OTLP/HTTP spans)
    Export(cmd::export::Args),
    /// Mirror the store into the team's PostgreSQL database, exactly once (docs/teams.md)
    Push(cmd::push::Args),
    /// Check or show the configuration (cmstore.toml plus CMSTORE_* variables)
    Config(cmd::config::Args),
    /// Install, check or remove the agent hook configuration that runs `cmstore capture`
    Hooks(cmd::hooks::Args),
    /// Run a check detached from the hook (audit mode; started by `capture`)
    #[command(hide = true)]
    Check(cmd::check::Args),
    /// Print shell completions (bash, zsh, fish, powershell, elvish)
    Completions(cmd::generate::CompletionsArgs),
    /// Print a man page (roff): cmstore(1), or a subcommand's (`cmstore man ingest`); --all DIR writes every one
    Man(cmd::generate::ManArgs),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_capture_fast_path_agrees_with_clap() {
        let cases: &[&[&str]] = &[
            &["capture"],
            &["capture", "--agent", "claude"],
            &["capture", "--agent=copilot", "--event", "preToolUse"],
            &["--home", "/h", "capture", "--event=Stop"],
            &[
                "capture", "--home", "/h", "--queue", "/q", "--db=/d", "--config", "/c",
            ],
        ];
        for case in cases {
            let args: Vec<std::ffi::OsString> = case.iter().map(Into::into).collect();
            let fast = Cli::parse_capture(&args).expect("fast path");
            let slow = Cli::try_parse_from(std::iter::once("cmstore").chain(case.iter().copied()))
                .expect("clap");
            assert_eq!(format!("{fast:?}"), format!("{slow:?}"), "{case:?}");
        }
        for other in [
            &["capture", "--help"][..],
            &["capture", "--bogus"],
            &["query", "select 1"],
            &["capture", "--agent"],
            &[],
        ] {
            let args: Vec<std::ffi::OsString> = other.iter().map(Into::into).collect();
            assert!(Cli::parse_capture(&args).is_none(), "{other:?}");
        }
    }

    #[test]
    fn global_paths_are_salvaged_from_a_broken_command_line() {
        let args = [
            "capture",
            "--agnet",
            "x",
            "--home",
            "/h",
            "--queue=/q.jsonl",
        ]
        .map(std::ffi::OsString::from);
        let globals = Globals::salvage(args);
        assert_eq!(globals.home, Some(PathBuf::from("/h")));
        assert_eq!(globals.queue, Some(PathBuf::from("/q.jsonl")));
    }
}
