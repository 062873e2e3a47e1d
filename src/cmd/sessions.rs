//! `cmstore sessions`: the sessions in the store, newest first.
//!
//! On a terminal the table is the readable one (a unique id prefix that `--session` and
//! `cmstore show` accept, the project, when, how long, the counts); `--wide` and the machine
//! formats give every column with raw values.

use std::process::ExitCode;

use crate::cli::filters::{ReportFilters, TeamStore};
use crate::files::paths::Paths;
use crate::read::render::Format;
use crate::read::report::{self, Sink};
use crate::read::sessions;

/// Arguments of `cmstore sessions`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub filters: ReportFilters,
    /// At most this many sessions (the newest); 0 = no limit
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub limit: u64,
    /// Every column, with raw values, in the table too
    #[arg(long)]
    pub wide: bool,
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table, in a
    /// pipe too]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Print the table directly, without a pager
    #[arg(long)]
    pub no_pager: bool,
    /// Also the sessions that went nowhere (no prompt, no turn, no tool call: a start from
    /// `clear` or `compact`, an editor opened and closed), which are left out otherwise
    #[arg(long)]
    pub all: bool,
    #[command(flatten)]
    pub team: TeamStore,
}

/// Runs `cmstore sessions`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let now = crate::support::clock::now_ms();
    let filters = args.filters.parse(now)?;
    if let Some(url) = args.team.store.as_deref() {
        return on_team_store(paths, url, &args, filters, now);
    }
    let db = report::open_read_only(&paths.db)?;
    let (sql, params) = sessions::list_sql(&filters, Some(args.limit).filter(|&n| n > 0), args.all);
    let (columns, rows) = report::fetch(&db, &sql, &params)?;
    let mut sink = Sink::for_stdout(args.format);
    let (columns, rows) = if sink.format == Format::Table && !args.wide {
        sink.table.plain = true;
        sink.table.cuttable = sessions::READABLE_CUTTABLE;
        sink.table.right = sessions::READABLE_RIGHT;
        sessions::readable(&columns, &rows, &sessions::all_ids(&db)?, now)
    } else {
        // Every column: drawn in full, for a terminal that scrolls or a pager.
        sink.table.width = None;
        (columns, rows)
    };
    let table = sink.format == Format::Table;
    super::pager::print_report(sink, columns, &rows, !args.no_pager)?;
    let left_out = match args.all {
        true => 0,
        false => sessions::empty_count(&db, &filters)?,
    };
    say_left_out(left_out);
    if rows.is_empty() && left_out == 0 {
        let filtered = filters != sessions::Filters::default();
        let why = sessions::unmatched_filter(&db, &filters)?;
        // A table says why it is empty; the machine formats keep stdout to their rows, and
        // say on stderr only a filter that names what the store has none of (a typo).
        match (table, why) {
            (true, why) => eprintln!(
                "{}",
                report::empty_note("sessions", filtered, why.as_deref())
            ),
            (false, Some(why)) => eprintln!("cmstore: {why}"),
            (false, None) => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--store URL`: the team store's sessions, read in a read-only transaction.
fn on_team_store(
    paths: &Paths,
    url: &str,
    args: &Args,
    common: sessions::Filters,
    now: i64,
) -> anyhow::Result<ExitCode> {
    use crate::read::push::{team_query, team_reports};
    let filters = team_reports::TeamFilters {
        common,
        machine: args.team.machine.clone(),
        user: args.team.user.clone(),
    };
    let limit = Some(args.limit).filter(|&n| n > 0);
    let (config, _) = crate::config::Config::load_for(paths);
    let mut client = team_query::connect_store(url, &config)?;
    let mut read =
        |plan: team_reports::TeamPlan| team_query::run_report(&mut client, &plan.sql, &plan.params);
    let (columns, rows) = read(team_reports::sessions_list(&filters, limit, args.all))?;
    let left_out = match args.all {
        true => 0,
        false => {
            let (_, count) = read(team_reports::nowhere_count(&filters))?;
            count
                .first()
                .and_then(|r| report::integer(&r[0]))
                .unwrap_or(0)
        }
    };
    let mut sink = Sink::for_stdout(args.format);
    let table = sink.format == Format::Table;
    let (columns, rows) = if table && !args.wide {
        let (spec, cuttable, right) = team_reports::readable_spec(team_reports::TeamBy::Session);
        sink.table.plain = true;
        sink.table.cuttable = cuttable;
        sink.table.right = right;
        let cx = report::Glance {
            all_ids: &[],
            prefixes: &[],
            now_ms: now,
        };
        report::readable(&columns, &rows, spec, cx)
    } else {
        sink.table.width = None;
        (columns, rows)
    };
    super::pager::print_report(sink, columns, &rows, !args.no_pager)?;
    say_left_out(left_out);
    if rows.is_empty() && left_out == 0 && table {
        eprintln!("no sessions of the team store match the filters");
    }
    Ok(ExitCode::SUCCESS)
}

/// Says on stderr (in every format: stdout keeps to the rows) how many sessions that went
/// nowhere the list left out.
fn say_left_out(left_out: i64) {
    if left_out > 0 {
        eprintln!(
            "cmstore: {left_out} session{} that went nowhere (no prompt, turn or tool call) \
             not shown; --all shows them",
            if left_out == 1 { "" } else { "s" }
        );
    }
}
