//! `cmstore sessions`: the sessions in the store, newest first.
//!
//! On a terminal the table is the readable one (a unique id prefix that `--session` and
//! `cmstore show` accept, the project, when, how long, the counts); `--wide` and the machine
//! formats give every column with raw values.

use std::process::ExitCode;

use crate::cli::filters::ReportFilters;
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
}

/// Runs `cmstore sessions`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let now = crate::support::clock::now_ms();
    let filters = args.filters.parse(now)?;
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
    if left_out > 0 {
        // On stderr in every format: stdout keeps to the rows.
        eprintln!(
            "cmstore: {left_out} session{} that went nowhere (no prompt, turn or tool call) \
             not shown; --all shows them",
            if left_out == 1 { "" } else { "s" }
        );
    }
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
