//! `cmstore summarize`: ready-made summaries per session, tool, day, agent or model.
//!
//! Every summary is one `SELECT` over the store's views ([`crate::read::summaries`] says
//! which), so `cmstore query` against the same view gives the same figures; `--show-sql`
//! prints the statement. The report filters (`--since`, `--until`, `--agent`, `--project`,
//! `--session`) are those of every report: see [`plan`] for what each chooses.
//!
//! On a terminal the table is the readable one: the columns that fit 100 columns, in human
//! units (`8m 02s`, `1.8M`, `$12.34`, `2h ago`), the project as the working directory's last
//! component, session ids as the shortest unique prefix that `--session` accepts. `--wide`
//! and the machine formats give every column with raw values.

use std::process::ExitCode;

use crate::cli::filters::ReportFilters;
use crate::files::paths::Paths;
use crate::read::render::Format;
use crate::read::report::{self, Sink};
use crate::read::sessions::{self, Filters};
use crate::read::summaries::{
    nothing_of, plan, readable_spec, resolve_session, summed_columns, By,
};

/// What one summary row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ByArg {
    /// One row per session (default)
    Session,
    /// One row per tool
    Tool,
    /// One row per day, in the local zone (UTC with --utc)
    Day,
    /// One row per agent
    Agent,
    /// One row per model: real token usage and cost (from the transcripts)
    Model,
    /// One row per check (format, markdown, security): runs, failures, findings
    Check,
}

impl From<ByArg> for By {
    fn from(by: ByArg) -> By {
        match by {
            ByArg::Session => By::Session,
            ByArg::Tool => By::Tool,
            ByArg::Day => By::Day,
            ByArg::Agent => By::Agent,
            ByArg::Model => By::Model,
            ByArg::Check => By::Check,
        }
    }
}

/// Arguments of `cmstore summarize`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub filters: ReportFilters,
    /// Only this session: its id, or a unique prefix of it (as the table shows it)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// One row per session, tool, day, agent, model or check
    #[arg(long, value_enum, default_value_t = ByArg::Session)]
    pub by: ByArg,
    /// Every column, with raw values, in the table too
    #[arg(long)]
    pub wide: bool,
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table, in a
    /// pipe too]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Print the SQL that produced the summary on stderr
    #[arg(long)]
    pub show_sql: bool,
    /// At most this many rows, in the summary's order, a cut said on stderr; 0 = no limit
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
    /// Print the table directly, without a pager
    #[arg(long)]
    pub no_pager: bool,
}

/// Runs `cmstore summarize`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let now = crate::support::clock::now_ms();
    let mut filters = args.filters.parse(now)?;
    let (config, _) = crate::config::Config::load_for(paths);
    report::refresh_prices(&paths.db, &config.prices);
    let db = report::open_read_only(&paths.db)?;
    if let Some(given) = args.session.as_deref() {
        filters.session = Some(resolve_session(&db, given)?);
    }
    let by = By::from(args.by);
    let plan = plan(by, &filters);
    if args.show_sql {
        eprintln!("{};", plan.sql);
    }
    let (columns, all_rows) = report::fetch(&db, &plan.sql, &plan.params)?;
    let all = all_rows.len();
    let limit = args
        .limit
        .filter(|&n| n > 0)
        .map_or(all, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let rows = &all_rows[..all.min(limit)];
    // Explains the `+` and `?` of a readable table's costs, after it.
    let mut legend = None;
    let mut has_total = false;
    let mut sink = Sink::for_stdout(args.format);
    let (columns, rows) = if sink.format == Format::Table && !args.wide {
        let (spec, cuttable, right) = readable_spec(by);
        sink.table.plain = true;
        sink.table.cuttable = cuttable;
        sink.table.right = right;
        let all_ids = if by == By::Session {
            sessions::all_ids(&db)?
        } else {
            Vec::new()
        };
        let prefixes = crate::support::human::unique_prefixes(&all_ids, sessions::MIN_PREFIX);
        let cx = report::Glance {
            all_ids: &all_ids,
            prefixes: &prefixes,
            now_ms: now,
        };
        let total = report::total_row(&columns, &all_rows, spec, summed_columns(by), cx);
        let (headers, mut shown) = report::readable(&columns, rows, spec, cx);
        has_total = total.is_some();
        shown.extend(total);
        legend = spec
            .iter()
            .position(|c| c.shown == report::Shown::Cost)
            .and_then(|i| report::cost_legend(&shown, i));
        (headers, shown)
    } else {
        // Every column: drawn in full, for a terminal that scrolls or a pager.
        sink.table.width = None;
        (columns, rows.to_vec())
    };
    let table = sink.format == Format::Table;
    let shown = all.min(limit);
    super::pager::print_report(sink, columns, &rows, !args.no_pager)?;
    if shown < all {
        let total = if has_total {
            format!("; the total row is of all {all}")
        } else {
            String::new()
        };
        eprintln!("cmstore: {shown} of {all} rows shown (--limit {shown}{total})");
    }
    if let Some(legend) = legend {
        eprintln!("{legend}");
    }
    if rows.is_empty() {
        let (what, hint) = nothing_of(by);
        let why = sessions::unmatched_filter(&db, &filters)?;
        // As `sessions`: the machine formats say on stderr only a filter that names nothing.
        match (table, why) {
            (true, why) => eprintln!(
                "{}",
                report::empty_note(what, filters != Filters::default(), why.as_deref().or(hint))
            ),
            (false, Some(why)) => eprintln!("cmstore: {why}"),
            (false, None) => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}
