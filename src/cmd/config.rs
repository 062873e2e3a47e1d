//! `cmstore config check|show`: what the configuration says, and what is wrong with it.

use std::io::Write;
use std::process::ExitCode;

use crate::config::{Config, LogLevel, Mode};
use crate::paths::Paths;

/// Arguments of `cmstore config`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

/// What to do with the configuration.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Action {
    /// Report problems in cmstore.toml and CMSTORE_* variables (exit 1 when there are any)
    Check,
    /// Print the effective configuration (file, environment and defaults combined)
    Show,
}

/// Runs `cmstore config`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let (config, problems) = Config::load_for(paths);
    let mut out = std::io::stdout().lock();
    match args.action {
        Action::Check => {
            if problems.is_empty() {
                let state = if paths.config.exists() {
                    ""
                } else {
                    " (absent: defaults apply)"
                };
                writeln!(out, "configuration OK: {}{state}", paths.config.display())?;
                return Ok(ExitCode::SUCCESS);
            }
            for problem in &problems {
                writeln!(out, "problem: {problem}")?;
            }
            writeln!(
                out,
                "{} problem(s); capture keeps working with defaults for those settings",
                problems.len()
            )?;
            Ok(ExitCode::FAILURE)
        }
        Action::Show => {
            writeln!(
                out,
                "# effective configuration ({})",
                paths.config.display()
            )?;
            let mode = match config.mode {
                Mode::Audit => "audit",
                Mode::Enforce => "enforce",
            };
            let level = match config.log_level {
                LogLevel::Minimal => "minimal",
                LogLevel::Verbose => "verbose",
            };
            writeln!(out, "mode = {mode:?}")?;
            writeln!(out, "log_level = {level:?}")?;
            writeln!(
                out,
                "retention_days = {}{}",
                config.retention_days,
                match config.retention_explicit {
                    true => "  # applied by a running `cmstore ingest` every hour",
                    false =>
                        "  # the default: for `cmstore prune` only, nothing is deleted by itself",
                }
            )?;
            writeln!(out, "compact_queue = {}", config.compact_queue)?;
            writeln!(out, "store_text = {}", config.store_text)?;
            writeln!(out, "debug = {}", config.debug)?;
            writeln!(out, "\n[events]")?;
            for (event, on) in &config.events {
                writeln!(out, "{event} = {on}")?;
            }
            writeln!(out, "\n[safety]")?;
            writeln!(
                out,
                "# built-in rules: {}",
                crate::safety::rule_names().join(", ")
            )?;
            writeln!(out, "remove = {:?}", config.safety.remove)?;
            for (name, pattern) in &config.safety.add {
                writeln!(out, "add.{name} = {pattern:?}")?;
            }
            writeln!(out, "\n[redaction]")?;
            writeln!(out, "patterns = {:?}", config.redact)?;
            for problem in &problems {
                eprintln!("warning: {problem}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
