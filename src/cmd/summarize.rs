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

use crate::cli::filters::{ReportFilters, TeamStore};
use crate::files::paths::Paths;
use crate::read::push::team_reports::TeamBy;
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
    /// One row per user label (the team store: --store)
    User,
    /// One row per machine (the team store: --store)
    Machine,
}

impl ByArg {
    /// The summary of the local store, if there is one of this kind.
    fn local(self) -> anyhow::Result<By> {
        Ok(match self {
            ByArg::Session => By::Session,
            ByArg::Tool => By::Tool,
            ByArg::Day => By::Day,
            ByArg::Agent => By::Agent,
            ByArg::Model => By::Model,
            ByArg::Check => By::Check,
            ByArg::User | ByArg::Machine => anyhow::bail!(
                "--by {}: one store is one machine; a team store has users and machines \
                 (--store postgres://…, docs/teams.md)",
                self.name()
            ),
        })
    }

    /// The summary of the team store of this kind.
    fn team(self) -> TeamBy {
        match self {
            ByArg::Session => TeamBy::Session,
            ByArg::Tool => TeamBy::Tool,
            ByArg::Day => TeamBy::Day,
            ByArg::Agent => TeamBy::Agent,
            ByArg::Model => TeamBy::Model,
            ByArg::User => TeamBy::User,
            ByArg::Machine => TeamBy::Machine,
            ByArg::Check => TeamBy::Check,
        }
    }

    fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map_or_else(String::new, |v| v.get_name().to_string())
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
    /// One row per session, tool, day, agent, model or check; on the team store (--store) per
    /// user or machine too
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
    #[command(flatten)]
    pub team: TeamStore,
}

/// Runs `cmstore summarize`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let now = crate::support::clock::now_ms();
    let mut filters = args.filters.parse(now)?;
    if let Some(url) = args.team.store.clone() {
        return on_team_store(paths, &url, &args, filters, now);
    }
    let by = args.by.local()?;
    let (config, _) = crate::config::Config::load_for(paths);
    report::refresh_prices(&paths.db, &config.prices);
    let db = report::open_read_only(&paths.db)?;
    if let Some(given) = args.session.as_deref() {
        filters.session = Some(resolve_session(&db, given)?);
    }
    let plan = plan(by, &filters);
    if args.show_sql {
        eprintln!("{};", plan.sql);
    }
    let (columns, all_rows) = report::fetch(&db, &plan.sql, &plan.params)?;
    let all_ids = if by == By::Session && wants_readable(&args) {
        sessions::all_ids(&db)?
    } else {
        Vec::new()
    };
    let shape = Shape {
        readable: readable_spec(by),
        summed: summed_columns(by),
        all_ids: &all_ids,
        now,
    };
    let empty = print(&args, columns, all_rows, shape)?;
    if empty {
        let (what, hint) = nothing_of(by);
        let why = sessions::unmatched_filter(&db, &filters)?;
        // As `sessions`: the machine formats say on stderr only a filter that names nothing.
        match (wants_table(&args), why) {
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

/// `--store URL`: the team store's summary, read in a read-only transaction.
fn on_team_store(
    paths: &Paths,
    url: &str,
    args: &Args,
    common: Filters,
    now: i64,
) -> anyhow::Result<ExitCode> {
    use crate::read::push::{team_query, team_reports, team_story};
    let by = args.by.team();
    let (config, _) = crate::config::Config::load_for(paths);
    let mut client = team_query::connect_store(url, &config)?;
    let mut filters = team_reports::TeamFilters {
        common,
        machine: args.team.machine.clone(),
        user: args.team.user.clone(),
    };
    if let Some(given) = args.session.as_deref() {
        // A whole id or a unique prefix, as locally; its machine too (two machines may share
        // an id).
        let found = team_story::resolve(
            &mut client,
            given,
            filters.machine.as_deref(),
            filters.user.as_deref(),
        )?;
        filters.common.session = Some(found.session_id);
        filters.machine = Some(found.machine_id);
    }
    let plan = team_reports::plan(by, &filters);
    if args.show_sql {
        eprintln!("{};", plan.sql);
    }
    let (columns, all_rows) = team_query::run_report(&mut client, &plan.sql, &plan.params)?;
    let shape = Shape {
        readable: team_reports::readable_spec(by),
        summed: team_reports::summed_columns(by),
        all_ids: &[],
        now,
    };
    let empty = print(args, columns, all_rows, shape)?;
    if empty && wants_table(args) {
        match filters != team_reports::TeamFilters::default() {
            true => eprintln!("no rows of the team store match the filters"),
            false => eprintln!(
                "nothing on the team store yet (`cmstore push` sends a machine's record: \
                 docs/teams.md)"
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// How a summary's rows are shown to a person.
struct Shape<'a> {
    /// The readable table's columns, those that may go, those aligned right.
    readable: (
        &'static [report::Column],
        &'static [&'static str],
        &'static [&'static str],
    ),
    /// The columns its total row sums.
    summed: &'static [&'static str],
    /// Every session id, sorted, for their shortest unique prefixes (none: whole ids).
    all_ids: &'a [String],
    now: i64,
}

fn wants_table(args: &Args) -> bool {
    Sink::for_stdout(args.format).format == Format::Table
}

fn wants_readable(args: &Args) -> bool {
    wants_table(args) && !args.wide
}

/// Prints a summary's rows as `args` ask (at most `--limit`, readable on a terminal, with a
/// total row and the costs' legend there); whether there were none.
fn print(
    args: &Args,
    columns: Vec<String>,
    all_rows: Vec<Vec<rusqlite::types::Value>>,
    shape: Shape<'_>,
) -> anyhow::Result<bool> {
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
    let (columns, rows) = if wants_readable(args) {
        let (spec, cuttable, right) = shape.readable;
        let spec = &report::present(spec, &columns, &all_rows)[..];
        sink.table.plain = true;
        sink.table.cuttable = cuttable;
        sink.table.right = right;
        let prefixes = crate::support::human::unique_prefixes(shape.all_ids, sessions::MIN_PREFIX);
        let cx = report::Glance {
            all_ids: shape.all_ids,
            prefixes: &prefixes,
            now_ms: shape.now,
        };
        let total = report::total_row(&columns, &all_rows, spec, shape.summed, cx);
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
    Ok(all == 0)
}
