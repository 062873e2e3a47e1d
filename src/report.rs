//! Shared by `summarize` and `status`: open the store for reading and print one result set
//! through the same renderers as `cmstore query`.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;

use anyhow::Context;

use crate::render::{Format, Renderer, TableOptions};
use crate::store;
use crate::store::read_only::{self, Param, QueryError, ReadOnlyDb};

/// Where and how a report is printed.
#[derive(Debug, Clone, Copy)]
pub struct Sink {
    /// The output format.
    pub format: Format,
    /// Table width and color.
    pub table: TableOptions,
}

impl Sink {
    /// `format`, else a table on a terminal and TSV in a pipe (as `query` does).
    pub fn for_stdout(format: Option<Format>) -> Sink {
        let on_terminal = io::stdout().is_terminal();
        Sink {
            format: format.unwrap_or(if on_terminal {
                Format::Table
            } else {
                Format::Tsv
            }),
            table: table_options(on_terminal),
        }
    }
}

/// Tables for stdout: fitted to the terminal's width, and in color on a terminal unless
/// `NO_COLOR` is set.
pub fn table_options(on_terminal: bool) -> TableOptions {
    TableOptions {
        width: terminal_width(on_terminal),
        color: on_terminal && crate::env::var_os("NO_COLOR").is_none(),
        ..TableOptions::default()
    }
}

/// Opens `db` read-only after bringing its schema up to date: a database written by an older
/// cmstore lacks the newer views, and migrations only add (views, indexes).
pub fn open_read_only(db: &Path) -> Result<ReadOnlyDb, QueryError> {
    if db.exists() {
        let behind = read_only::connection(db, read_only::MAX_BUSY_WAIT)
            .and_then(|c| store::schema_version(&c))
            .is_ok_and(|v| v < store::MIGRATIONS.len() as i64);
        if behind {
            // Migrating needs a write; a failure here shows again, clearer, below.
            let _ = store::open(db);
        }
    }
    ReadOnlyDb::open(db, None)
}

/// Brings the store's price table in line with cmstore's and `overrides` (cmstore.toml), so
/// that the cost a summary shows follows the prices of now. Only writes when they differ;
/// a store that cannot be written keeps its table (the summary then shows it).
pub fn refresh_prices(db: &Path, overrides: &crate::prices::PriceTable) {
    if !db.exists() {
        return;
    }
    let table = crate::prices::effective(overrides);
    let current = read_only::connection(db, read_only::MAX_BUSY_WAIT)
        .and_then(|c| store::usage::prices_match(&c, &table))
        .unwrap_or(false);
    if !current {
        if let Ok(store) = store::open(db) {
            let _ = store::usage::sync_store_prices(&store, overrides);
        }
    }
}

/// Runs `sql` with `params` and returns its column names and every row.
pub fn fetch(
    db: &ReadOnlyDb,
    sql: &str,
    params: &[Param],
) -> Result<(Vec<String>, Vec<Vec<rusqlite::types::Value>>), QueryError> {
    let mut query = db.prepare(sql)?;
    let columns = query.columns();
    let mut rows = query.run(params)?;
    let mut all = Vec::new();
    while let Some(row) = rows.next()? {
        all.push(row);
    }
    Ok((columns, all))
}

/// Prints `columns` and `rows` to `out` in `sink`'s format.
pub fn render(
    out: &mut dyn Write,
    sink: Sink,
    columns: Vec<String>,
    rows: &[Vec<rusqlite::types::Value>],
) -> anyhow::Result<()> {
    let mut renderer =
        Renderer::new(sink.format, BufWriter::new(out), columns, sink.table).context("writing")?;
    for row in rows {
        renderer.row(row).context("writing")?;
    }
    renderer
        .finish()
        .context("writing")?
        .flush()
        .context("writing")?;
    Ok(())
}

/// Width to fit tables into: `COLUMNS` when set, else the terminal's; `None` for a pipe.
pub fn terminal_width(on_terminal: bool) -> Option<u16> {
    if let Some(cols) = crate::env::var("COLUMNS")
        .and_then(|c| c.trim().parse::<u16>().ok())
        .filter(|&c| c > 0)
    {
        return Some(cols);
    }
    // comfy-table already knows how to ask the terminal; an empty table reports that width.
    on_terminal
        .then(|| comfy_table::Table::new().width())
        .flatten()
}
