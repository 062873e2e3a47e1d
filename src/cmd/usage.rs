//! `cmstore usage`: the token usage cmstore counted for each session, beside what the agent
//! itself says the session used (Copilot CLI's shutdown totals, OpenCode's and Cline's
//! session totals, Claude Code's OpenTelemetry events and metrics), with a verdict per
//! session and model. `--check` shows only what disagrees and exits 1 when something does,
//! for a cron job or CI.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use rusqlite::types::Value;

use crate::cli::filters::ReportFilters;
use crate::files::paths::Paths;
use crate::read::render::Format;
use crate::read::report::{self, Sink};
use crate::read::{sessions, usage_check};

/// Arguments of `cmstore usage`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub filters: ReportFilters,
    /// Only this session (its id, or a unique prefix)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only what disagrees with the agent's own figures (`differs`, `only counted`), of
    /// sessions quiet for 10 minutes or named with --session; exit 1 when something does
    #[arg(long)]
    pub check: bool,
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table, in a
    /// pipe too]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// Runs `cmstore usage`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let now = crate::support::clock::now_ms();
    let mut filters = args.filters.parse(now)?;
    let prices = crate::config::Config::load_for(paths).0.prices;
    report::refresh_prices(&paths.db, &prices);
    let db = report::open_read_only(&paths.db)?;
    if let Some(given) = args.session.as_deref() {
        filters.session = Some(sessions::resolve(&db, given)?);
    }
    let (columns, mut rows) = usage_check::fetch(&db, &filters)?;
    let named = args.session.is_some();
    let latest = usage_check::latest_figures(&columns, &rows);
    let failing = |row: &[Value]| usage_check::disagrees(&columns, row, now, named, &latest);
    let (sessions, disagreeing) = usage_check::tally(&columns, &rows, failing);
    if args.check {
        rows.retain(|row| failing(row));
    }
    let mut sink = Sink::for_stdout(args.format);
    let readable = sink.format == Format::Table;
    let (columns, rows) = match readable {
        true => {
            sink.table.plain = true;
            sink.table.right = usage_check::READABLE_RIGHT;
            sink.table.cuttable = usage_check::READABLE_CUTTABLE;
            let headers = usage_check::READABLE_COLUMNS.iter().map(|c| c.to_string());
            let all_ids = sessions::all_ids(&db)?;
            (
                headers.collect(),
                usage_check::readable(&columns, &rows, &all_ids),
            )
        }
        false => (columns, rows),
    };
    // A table with no row would be its header alone (the line below says why); the machine
    // formats print their empty list.
    if !(readable && rows.is_empty()) {
        report::render(&mut io::stdout().lock(), sink, columns, &rows)?;
    }
    if readable || args.check {
        let summary = summary(sessions, disagreeing, args.check);
        let mut err = io::stderr().lock();
        writeln!(err, "{summary}").context("writing")?;
    }
    Ok(match args.check && disagreeing > 0 {
        true => ExitCode::from(1),
        false => ExitCode::SUCCESS,
    })
}

/// The line under the table (on stderr): how many sessions were compared and how many
/// disagree, or why there is nothing to compare.
fn summary(sessions: usize, disagreeing: usize, check: bool) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match (sessions, check) {
        (0, _) => "no session has figures of its agent's own to compare with \
             (Copilot CLI's shutdown totals, OpenCode's or Cline's session totals, Claude \
             Code's OpenTelemetry through `cmstore ingest`'s receiver: docs/usage.md)"
            .to_string(),
        (n, true) if disagreeing == 0 => format!(
            "{n} session{} compared with the agent's own figures: all agree",
            plural(n)
        ),
        (n, false) => format!(
            "{n} session{} compared with the agent's own figures: {}",
            plural(n),
            match disagreeing {
                0 => "all agree".to_string(),
                d => format!("{d} disagree{}", if d == 1 { "s" } else { "" }),
            }
        ),
        (n, true) => format!(
            "{disagreeing} of {n} session{} disagree{} with the agent's own figures",
            plural(n),
            if disagreeing == 1 { "s" } else { "" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn the_summary_counts_sessions_and_says_why_none() {
        assert_eq!(
            summary(3, 1, false),
            "3 sessions compared with the agent's own figures: 1 disagrees"
        );
        assert_eq!(
            summary(1, 0, false),
            "1 session compared with the agent's own figures: all agree"
        );
        assert_eq!(
            summary(3, 1, true),
            "1 of 3 sessions disagrees with the agent's own figures"
        );
        assert_eq!(
            summary(2, 0, true),
            "2 sessions compared with the agent's own figures: all agree"
        );
        assert!(summary(0, 0, false).starts_with("no session has figures"));
        assert!(summary(0, 0, true).starts_with("no session has figures"));
    }
}
