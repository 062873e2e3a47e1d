//! `cmstore gate report|replay`: how the safety gate ruled on the recorded PreToolUse calls,
//! and how another rule set would have ruled on them.
//!
//! On a terminal each prints a summary line and a readable table; `--format json|jsonl|csv|tsv`
//! prints the raw rows alone (the per-rule counts, or with `gate replay --show-changes` the
//! changed calls), for scripts.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::{bail, Context};

use crate::cli::filters::ReportFilters;
use crate::config::Config;
use crate::files::paths::Paths;
use crate::read::gate::{self, replay, tally};
use crate::read::render::Format;
use crate::read::report::{self, Sink};
use crate::read::sessions;
use crate::store::read_only::ReadOnlyDb;

/// Arguments of `cmstore gate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// report or replay.
    #[command(subcommand)]
    pub action: Action,
}

/// What to show of the gate.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// How often each safety rule fired, per agent and project, and what was denied or allowed
    Report(ReportArgs),
    /// Re-run the gate with the rules of --config FILE over the recorded PreToolUse calls and
    /// compare its decisions with the recorded ones
    #[command(
        long_about = "Re-run the safety gate with the rules and mode of the cmstore.toml named \
by --config FILE (required here; CMSTORE_* variables do not apply to it) over the recorded \
PreToolUse calls, and compare its decisions with the ones recorded: per rule and overall, how \
many calls it would deny that were allowed, allow that were denied, and leave unchanged. Calls \
whose input the store does not hold exactly (a payload that was cut or not JSON, no input \
recorded, an input shortened to fit the line) are counted as not replayable, never guessed."
    )]
    Replay(ReplayArgs),
}

/// Arguments of `cmstore gate report`.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("since", |a| a.help(SINCE_HELP)),
    mut_arg("until", |a| a.help(UNTIL_HELP)),
    mut_arg("agent", |a| a.help(AGENT_HELP)),
    mut_arg("project", |a| a.help(PROJECT_HELP))
)]
pub struct ReportArgs {
    #[command(flatten)]
    pub filters: ReportFilters,
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table, in a
    /// pipe too]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// Arguments of `cmstore gate replay`.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("since", |a| a.help(SINCE_HELP)),
    mut_arg("until", |a| a.help(UNTIL_HELP)),
    mut_arg("agent", |a| a.help(AGENT_HELP)),
    mut_arg("project", |a| a.help(PROJECT_HELP))
)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub filters: ReportFilters,
    /// Also list the calls whose decision or matched rules changed (in the machine formats:
    /// only those)
    #[arg(long)]
    pub show_changes: bool,
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table, in a
    /// pipe too]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
}

const SINCE_HELP: &str = "Only calls recorded since then: a duration ago (90m, 36h, 7d, 2w), \
today, yesterday, or a date/datetime (local time, UTC with --utc)";
const UNTIL_HELP: &str = "Only calls recorded before then (same forms as --since)";
const AGENT_HELP: &str =
    "Only calls of this agent (claude, vscode, copilot, codex, gemini, qwen, cursor, qoder, droid, opencode, kilo, cline, windsurf, kiro, goose, kimi)";
const PROJECT_HELP: &str =
    "Only calls in this project: the working directory's last component, or its path";

/// Runs `cmstore gate`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Report(args) => report_cmd(paths, args),
        Action::Replay(args) => replay_cmd(paths, args),
    }
}

fn report_cmd(paths: &Paths, args: ReportArgs) -> anyhow::Result<ExitCode> {
    let now = crate::support::clock::now_ms();
    let filters = args.filters.parse(now)?;
    let db = report::open_read_only(&paths.db)?;
    let (totals, rows) = gate::report(&db, &filters)?;
    let mut sink = Sink::for_stdout(args.format);
    let mut out = io::stdout().lock();
    if sink.format == Format::Table {
        writeln!(out, "{}", tally::summary(&totals)).context("writing")?;
        if let Some(line) = tally::allowed_by_line(&gate::allowed_by(&db, &filters)?) {
            writeln!(out, "{line}").context("writing")?;
        }
        if rows.is_empty() {
            out.flush().context("writing")?;
            return Ok(ExitCode::SUCCESS);
        }
        writeln!(out).context("writing")?;
        sink.table.plain = true;
        sink.table.cuttable = tally::READABLE_CUTTABLE;
        let (columns, rows) = tally::readable(&rows, now);
        report::render(&mut out, sink, columns, &rows)?;
    } else {
        let (columns, rows) = tally::raw(&rows);
        report::render(&mut out, sink, columns, &rows)?;
    }
    out.flush().context("writing")?;
    Ok(ExitCode::SUCCESS)
}

fn replay_cmd(paths: &Paths, args: ReplayArgs) -> anyhow::Result<ExitCode> {
    let config = replay_config(paths)?;
    let now = crate::support::clock::now_ms();
    let filters = args.filters.parse(now)?;
    let db = report::open_read_only(&paths.db)?;
    let calls = gate::calls(&db, &filters, true)?;
    let result = replay::replay(&calls, &config);
    let mut sink = Sink::for_stdout(args.format);
    let mut out = io::stdout().lock();
    if sink.format != Format::Table {
        let (columns, rows) = if args.show_changes {
            replay::changes_raw(&result)
        } else {
            replay::rules_raw(&result)
        };
        report::render(&mut out, sink, columns, &rows)?;
        out.flush().context("writing")?;
        return Ok(ExitCode::SUCCESS);
    }
    let origin = paths.config.display().to_string();
    writeln!(out, "{}\n", replay::summary(&result, &origin)).context("writing")?;
    sink.table.plain = true;
    sink.table.cuttable = replay::RULES_CUTTABLE;
    let (columns, rows) = replay::rules_readable(&result);
    report::render(&mut out, sink, columns, &rows)?;
    if args.show_changes {
        write_changes(&mut out, sink, &db, &result)?;
    }
    out.flush().context("writing")?;
    Ok(ExitCode::SUCCESS)
}

/// The configuration `--config` names: it must be given and exist. Its other problems are
/// warnings (the setting's default applies, as capture would apply it).
fn replay_config(paths: &Paths) -> anyhow::Result<Config> {
    if paths.given.config.is_none() {
        bail!("gate replay needs --config FILE: the cmstore.toml whose rules to replay");
    }
    let path = &paths.config;
    std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    // The file alone: a CMSTORE_MODE in this shell is not the rule set under test.
    let (config, problems) = Config::load_from(path, true, &|_| None);
    for problem in problems {
        eprintln!("cmstore gate replay: warning: {problem}");
    }
    Ok(config)
}

fn write_changes(
    out: &mut dyn Write,
    mut sink: Sink,
    db: &ReadOnlyDb,
    result: &replay::Replay,
) -> anyhow::Result<()> {
    if result.changed.is_empty() {
        writeln!(out, "\nNo call changed.").context("writing")?;
        return Ok(());
    }
    writeln!(out, "\nChanged calls:\n").context("writing")?;
    let ids = sessions::all_ids(db)?;
    let prefixes = crate::support::human::unique_prefixes(&ids, sessions::MIN_PREFIX);
    let short = |id: &str| match ids.binary_search_by(|probe| probe.as_str().cmp(id)) {
        Ok(i) => prefixes[i].clone(),
        Err(_) => id.to_string(),
    };
    sink.table.cuttable = replay::CHANGES_CUTTABLE;
    let (columns, rows) =
        replay::changes_readable(result, &short, &crate::support::human::local_time);
    report::render(out, sink, columns, &rows)
}
