//! `cmstore budget`: where each `[budget]` limit of cmstore.toml stands: the spend of its
//! window counted from the store now, its share of the limit, and the spend the hooks see
//! (the spend file a running ingest keeps, which capture reads instead of the database).
//!
//! On a terminal a summary line and a readable table; `--format json|jsonl|csv|tsv` prints
//! the raw rows alone, for scripts.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;

use crate::config::Config;
use crate::files::paths::Paths;
use crate::read::budget;
use crate::read::render::Format;
use crate::read::report::{self, Sink};

/// Arguments of `cmstore budget`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table, in a
    /// pipe too]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// Runs `cmstore budget`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let (config, _) = Config::load_for(paths);
    let limits = config.budget;
    let mut out = io::stdout().lock();
    if limits.is_empty() {
        writeln!(
            out,
            "No budget is set. Add limits to {} (docs/budget.md), e.g.\n\n\
             [budget]\nday = 20                    # USD a day, every agent\n\
             week = {{ tokens = 50_000_000 }}\nwarn_at = 0.8               # tell the agent at 80 %\n\
             mode = \"audit\"              # or \"enforce\": refuse tool calls past a limit",
            paths.config.display()
        )
        .context("writing")?;
        return Ok(ExitCode::SUCCESS);
    }
    let now = crate::support::clock::now_ms();
    let counted = budget::spend_now(&paths.db, &limits, now)?;
    let hooks = crate::files::spend::read(&paths.spend_file()).ok();
    let sink = Sink::for_stdout(args.format);
    let readable = sink.format == Format::Table;
    if readable {
        writeln!(out, "{}\n", budget::summary(&limits, hooks.as_ref(), now)).context("writing")?;
    }
    let rows = budget::rows(&limits, &counted, hooks.as_ref(), now, readable);
    let columns = budget::columns(readable);
    report::render(&mut out, sink, columns, &rows)?;
    Ok(ExitCode::SUCCESS)
}
