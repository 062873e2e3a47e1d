//! `cmstore query`: run one read-only SQL statement against the store and print the rows.
//!
//! The SQL comes from the argument, `--file PATH`, or stdin (`-`). Output defaults to a table
//! when stdout is a terminal and to TSV when it is a pipe or a file (streamed, one line per
//! row, so `| head`, `| grep` and `| cut` work). Human formats (`table`, `markdown`) stop at
//! 1000 rows unless `--max-rows` says otherwise; machine formats have no cap. A cut is always
//! announced on stderr. See `docs/query.md`.

use std::io::{self, BufWriter, IsTerminal, LineWriter, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use crate::files::paths::Paths;
use crate::read::render::{Format, Renderer};
use crate::read::report::table_options;
use crate::store::read_only::{Param, ReadOnlyDb};

/// Rows shown by `table` and `markdown` when `--max-rows` is not given.
pub const DEFAULT_MAX_ROWS_FOR_PEOPLE: u64 = 1000;

/// Seconds a query may spend in SQLite when `--timeout` is not given.
pub const DEFAULT_TIMEOUT_SECS: &str = "30";

/// Arguments of `cmstore query`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// One SQL statement; `-` reads it from stdin
    #[arg(
        value_name = "SQL",
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    pub sql: Option<String>,
    /// Read the SQL statement from a file
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
    /// Bind the named parameter :NAME (repeatable). A canonical integer (42, -7) binds as an
    /// integer, anything else as text
    #[arg(long = "param", value_name = "NAME=VALUE", value_parser = Param::parse)]
    pub params: Vec<Param>,
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table on a
    /// terminal, tsv otherwise]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Print at most N rows, with a notice on stderr when more exist; 0 = no limit
    /// [default: 1000 for table and markdown, no limit otherwise]
    #[arg(long, value_name = "N")]
    pub max_rows: Option<u64>,
    /// Interrupt the query after this many seconds spent in SQLite; 0 = no limit
    #[arg(long, value_name = "SECONDS", default_value = DEFAULT_TIMEOUT_SECS, value_parser = parse_timeout)]
    pub timeout: Duration,
    /// Run it on the team store instead (`postgres://…`, as `[push]` url takes it), in a
    /// read-only transaction; parameters are then $1, $2, … given as --param 1=VALUE
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

/// Parses `--timeout`: non-negative seconds, fractions allowed.
fn parse_timeout(s: &str) -> Result<Duration, String> {
    s.parse::<f64>()
        .ok()
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .ok_or_else(|| format!("{s:?} is not a number of seconds"))
}

/// Runs the query and prints its rows.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let sql = read_sql(&args)?;
    let stdout = io::stdout();
    let on_terminal = stdout.is_terminal();
    let format = args.format.unwrap_or(if on_terminal {
        Format::Table
    } else {
        Format::Tsv
    });
    let max_rows = match args.max_rows {
        Some(0) => None,
        Some(n) => Some(n),
        None if format.is_for_people() => Some(DEFAULT_MAX_ROWS_FOR_PEOPLE),
        None => None,
    };
    let timeout = Some(args.timeout).filter(|t| !t.is_zero());
    if let Some(url) = &args.store {
        let (columns, rows) = on_team_store(paths, url, &sql, &args.params, timeout)?;
        let table = table_options(on_terminal);
        let out: Box<dyn Write> = Box::new(BufWriter::new(stdout.lock()));
        let mut renderer = Renderer::new(format, out, columns, table).context("writing results")?;
        let shown = max_rows.map_or(rows.len(), |max| rows.len().min(max as usize));
        for row in &rows[..shown] {
            renderer.row(row).context("writing results")?;
        }
        renderer.finish().context("writing results")?;
        say_cut(shown as u64, shown < rows.len());
        return Ok(ExitCode::SUCCESS);
    }

    let db = ReadOnlyDb::open(&paths.db, timeout)?;
    let mut query = db.prepare(&sql)?;
    let columns = query.columns();
    let mut rows = query.run(&args.params)?;
    // The first step does most of the work (sorting, aggregating); an error or a timeout
    // there leaves stdout empty instead of holding a lone header.
    let mut next = rows.next()?;

    let table = table_options(on_terminal);
    // On a terminal each row shows as soon as it is read; in a pipe, block writes are faster.
    let out: Box<dyn Write> = if on_terminal {
        Box::new(LineWriter::new(stdout.lock()))
    } else {
        Box::new(BufWriter::new(stdout.lock()))
    };
    let mut renderer = Renderer::new(format, out, columns, table).context("writing results")?;
    let mut shown: u64 = 0;
    let mut cut = false;
    while let Some(row) = next {
        if max_rows.is_some_and(|max| shown >= max) {
            cut = true;
            break;
        }
        renderer.row(&row).context("writing results")?;
        shown += 1;
        next = rows.next()?;
    }
    renderer.finish().context("writing results")?;
    say_cut(shown, cut);
    Ok(ExitCode::SUCCESS)
}

/// Says on stderr that the output stopped after `shown` rows, when it was `cut`.
fn say_cut(shown: u64, cut: bool) {
    if cut {
        eprintln!(
            "cmstore: output cut after {shown} row{}; use --max-rows N to see more (0 = no limit)",
            if shown == 1 { "" } else { "s" }
        );
    }
}

/// The statement's rows on the team store at `url`: its certificate authority from `[push]`
/// when set, the parameters in order of their names `1`, `2`, ….
fn on_team_store(
    paths: &Paths,
    url: &str,
    sql: &str,
    params: &[Param],
    timeout: Option<Duration>,
) -> anyhow::Result<crate::read::push::team_query::Rows> {
    use crate::read::push::team_query;
    let mut positional = Vec::new();
    for (n, param) in params.iter().enumerate() {
        if param.name != (n + 1).to_string() {
            anyhow::bail!(
                "--param {}: on the team store parameters are $1, $2, … in order: --param 1=VALUE",
                param.name
            );
        }
        positional.push(match &param.value {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t.clone(),
            other => format!("{other:?}"),
        });
    }
    let (config, _) = crate::config::Config::load_for(paths);
    let mut client = team_query::connect_store(url, &config)?;
    Ok(team_query::run(&mut client, sql, &positional, timeout)?)
}

/// The SQL text from the argument, `--file`, or stdin.
fn read_sql(args: &Args) -> anyhow::Result<String> {
    match (&args.sql, &args.file) {
        (Some(sql), _) if sql == "-" => {
            let mut sql = String::new();
            io::stdin()
                .read_to_string(&mut sql)
                .context("reading SQL from stdin")?;
            Ok(sql)
        }
        (Some(sql), _) => Ok(sql.clone()),
        (None, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("reading SQL from {}", path.display())),
        // clap requires one of the two.
        (None, None) => anyhow::bail!("no SQL given"),
    }
}
