//! What every report on the read side does: open the store for reading, fetch a result set,
//! read its cells, and print it through the same renderers as `cmstore query` (whole, or as
//! the readable table of human units a person reads on a terminal).

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;

use anyhow::Context;
use rusqlite::types::Value;

use crate::read::render::{Format, Renderer, TableOptions};
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
    /// `format`, else the readable table, on a terminal and in a pipe alike (as git keeps its
    /// human output in a pipe: `cmstore sessions | grep web` reads as the terminal does);
    /// scripts name `--format tsv|csv|json|jsonl`.
    pub fn for_stdout(format: Option<Format>) -> Sink {
        let on_terminal = io::stdout().is_terminal();
        Sink {
            format: format.unwrap_or(Format::Table),
            table: table_options(on_terminal),
        }
    }
}

/// Tables for stdout: fitted to the terminal's width, and in color on a terminal unless
/// `NO_COLOR` is set.
pub fn table_options(on_terminal: bool) -> TableOptions {
    TableOptions {
        width: terminal_width(on_terminal),
        color: on_terminal && crate::support::env::var_os("NO_COLOR").is_none(),
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
pub fn refresh_prices(db: &Path, overrides: &crate::model::prices::PriceTable) {
    if !db.exists() {
        return;
    }
    let current = read_only::connection(db, read_only::MAX_BUSY_WAIT)
        .and_then(|c| store::usage::prices_current(&c, overrides))
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
) -> Result<(Vec<String>, Vec<Vec<Value>>), QueryError> {
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
    rows: &[Vec<Value>],
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

/// What a report's table says on stderr when it has no rows (the table itself is only its
/// header): `no {what}`, and why there may be none. One wording for every report, so that an
/// empty `summarize --by check` reads like an empty `sessions`.
pub fn empty_note(what: &str, filtered: bool, hint: Option<&str>) -> String {
    let scope = if filtered {
        "match the filters"
    } else {
        "in the store yet"
    };
    let hint = hint.map_or(String::new(), |h| format!(" ({h})"));
    format!("no {what} {scope}{hint}")
}

/// Width to fit tables into: `COLUMNS` when set, else the terminal's; `None` for a pipe.
pub fn terminal_width(on_terminal: bool) -> Option<u16> {
    if let Some(cols) = crate::support::env::var("COLUMNS")
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

/// How one column of a readable table is made from a raw row (columns named as the report's
/// SQL names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// The value as it is.
    Raw(&'static str),
    /// A session id as its shortest unique prefix.
    Session(&'static str),
    /// A working directory as its project (last component).
    Project(&'static str),
    /// Milliseconds as `8m 02s`.
    Duration(&'static str),
    /// A count as `1.8M`.
    Count(&'static str),
    /// A fractional quantity as `1,234.5` (two decimals at most).
    Decimal(&'static str),
    /// The sum of these counts, as `1.8M`.
    Sum(&'static [&'static str]),
    /// A share (0.25) as a percentage (`25.0%`); empty when there is none.
    Percent(&'static str),
    /// The cost of `cost_usd`, `+` when `unpriced` responses have none, `?` when none has.
    Cost,
    /// An ISO-8601 UTC time (`2026-11-30T08:00:00Z`) as `2h ago`, or the local date.
    Ago(&'static str),
}

/// One column of a readable table: its header and how its cells are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    /// The header.
    pub header: &'static str,
    /// The cells.
    pub shown: Shown,
    /// Left out of a table where no row has a value for it ([`present`]): a figure only some
    /// agents report.
    pub optional: bool,
}

/// A column `header` shown as `shown`.
pub const fn col(header: &'static str, shown: Shown) -> Column {
    Column {
        header,
        shown,
        optional: false,
    }
}

/// A column `header` shown as `shown`, left out where no row has a value for it.
pub const fn optional_col(header: &'static str, shown: Shown) -> Column {
    Column {
        header,
        shown,
        optional: true,
    }
}

/// The columns of `spec` a table of `rows` shows: each but an optional one whose raw value
/// is NULL (or missing) in every row.
pub fn present(spec: &[Column], columns: &[String], rows: &[Vec<Value>]) -> Vec<Column> {
    let has_value = |name: &str| {
        let index = columns.iter().position(|c| c == name);
        index.is_some_and(|i| {
            rows.iter()
                .any(|row| !matches!(row.get(i), None | Some(Value::Null)))
        })
    };
    spec.iter()
        .filter(|c| match (c.optional, c.shown) {
            (false, _) => true,
            (true, Shown::Raw(n) | Shown::Count(n) | Shown::Decimal(n)) => has_value(n),
            (true, _) => true,
        })
        .copied()
        .collect()
}

/// What the readable cells need besides the row.
#[derive(Debug, Clone, Copy)]
pub struct Glance<'a> {
    /// Every session id in the store, sorted (for the unique prefixes).
    pub all_ids: &'a [String],
    /// The same ids' shortest unique prefixes, in the same order.
    pub prefixes: &'a [String],
    /// Now, epoch ms (for `2h ago`).
    pub now_ms: i64,
}

/// The readable table of a raw result: `spec`'s headers, and each row's cells made from the
/// raw values by name. A column the result lacks shows empty.
pub fn readable(
    columns: &[String],
    rows: &[Vec<Value>],
    spec: &[Column],
    cx: Glance<'_>,
) -> (Vec<String>, Vec<Vec<Value>>) {
    let headers = spec.iter().map(|c| c.header.to_string()).collect();
    let out = rows
        .iter()
        .map(|row| {
            spec.iter()
                .map(|c| cell(columns, row, c.shown, cx))
                .collect()
        })
        .collect();
    (headers, out)
}

/// The `total` row of a readable table over every raw row: the first column says `total`;
/// the columns of `summed` raw names, token sums and the cost are added up (the cost with
/// its `+`/`?` as any row's); the others stay empty (a session counted on two days, an
/// average, a time). `None` for fewer than two rows.
pub fn total_row(
    columns: &[String],
    rows: &[Vec<Value>],
    spec: &[Column],
    summed: &[&str],
    cx: Glance<'_>,
) -> Option<Vec<Value>> {
    if rows.len() < 2 {
        return None;
    }
    let mut names: Vec<&str> = vec!["cost_usd", "unpriced", "responses"];
    for column in spec {
        match column.shown {
            Shown::Raw(n) | Shown::Count(n) | Shown::Duration(n) | Shown::Decimal(n)
                if summed.contains(&n) =>
            {
                names.push(n)
            }
            Shown::Sum(parts) => names.extend(parts),
            _ => {}
        }
    }
    let sum_of = |name: &str| -> Value {
        let i = columns.iter().position(|c| c == name);
        let values = rows.iter().filter_map(|row| i.and_then(|i| row.get(i)));
        let mut real = false;
        let (mut int, mut float) = (0i64, 0.0f64);
        let mut any = false;
        for value in values {
            match value {
                Value::Integer(n) => (int, any) = (int.saturating_add(*n), true),
                Value::Real(r) => (float, real, any) = (float + r, true, true),
                _ => {}
            }
        }
        match (any, real) {
            (false, _) => Value::Null,
            (true, true) => Value::Real(float + int as f64),
            (true, false) => Value::Integer(int),
        }
    };
    let names: Vec<String> = names.into_iter().map(str::to_owned).collect();
    let totals: Vec<Value> = names.iter().map(|n| sum_of(n)).collect();
    let mut row: Vec<Value> = spec
        .iter()
        .map(|c| match c.shown {
            Shown::Raw(n) | Shown::Count(n) | Shown::Duration(n) | Shown::Decimal(n)
                if !summed.contains(&n) =>
            {
                Value::Text(String::new())
            }
            Shown::Session(_) | Shown::Project(_) | Shown::Ago(_) | Shown::Percent(_) => {
                Value::Text(String::new())
            }
            shown => cell(&names, &totals, shown, cx),
        })
        .collect();
    if let Some(first) = row.first_mut() {
        *first = Value::Text("total".into());
    }
    Some(row)
}

/// The line that explains a readable table's costs, when a cell of column `cost` shows `+`
/// (some responses have no price) or `?` (none has).
pub fn cost_legend(rows: &[Vec<Value>], cost: usize) -> Option<&'static str> {
    let marked = rows
        .iter()
        .any(|row| matches!(row.get(cost), Some(Value::Text(t)) if t.ends_with('+') || t == "?"));
    marked.then_some("cost: + some responses have no price, ? none has ([prices] in cmstore.toml)")
}

fn cell(columns: &[String], row: &[Value], shown: Shown, cx: Glance<'_>) -> Value {
    use crate::support::human;
    use Value;
    let get = |name: &str| {
        columns
            .iter()
            .position(|c| c == name)
            .and_then(|i| row.get(i))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let int = |name: &str| match get(name) {
        Value::Integer(i) => Some(i),
        Value::Real(r) => Some(r as i64),
        _ => None,
    };
    let txt = |s: String| Value::Text(s);
    match shown {
        Shown::Raw(name) => get(name),
        Shown::Session(name) => match get(name) {
            Value::Text(id) => txt(
                match cx.all_ids.binary_search_by(|probe| probe.as_str().cmp(&id)) {
                    Ok(i) => cx.prefixes[i].clone(),
                    Err(_) => id,
                },
            ),
            other => other,
        },
        Shown::Project(name) => match get(name) {
            Value::Text(cwd) => txt(human::project(&cwd).to_string()),
            _ => txt(String::new()),
        },
        Shown::Duration(name) => {
            int(name).map_or(txt(String::new()), |ms| txt(human::duration(ms)))
        }
        Shown::Count(name) => int(name).map_or(txt(String::new()), |n| txt(human::count(n))),
        Shown::Decimal(name) => match get(name) {
            Value::Real(r) => txt(human::decimal(r)),
            Value::Integer(i) => txt(human::decimal(i as f64)),
            _ => txt(String::new()),
        },
        Shown::Percent(name) => match get(name) {
            Value::Real(r) => txt(format!("{:.1}%", 100.0 * r)),
            Value::Integer(i) => txt(format!("{:.1}%", 100.0 * i as f64)),
            _ => txt(String::new()),
        },
        // Blank, as the cost is, for a row with no response read: nothing is known of its
        // tokens, which `0` would say were none.
        Shown::Sum(_) if int("responses") == Some(0) => txt(String::new()),
        Shown::Sum(names) => {
            let total = names
                .iter()
                .filter_map(|n| int(n))
                .fold(0i64, i64::saturating_add);
            txt(human::count(total))
        }
        Shown::Cost => {
            let cost = match get("cost_usd") {
                Value::Real(r) => Some(r),
                Value::Integer(i) => Some(i as f64),
                _ => None,
            };
            let unpriced = int("unpriced").unwrap_or(0);
            txt(match cost {
                Some(c) => format!("{}{}", human::cost(c), if unpriced > 0 { "+" } else { "" }),
                None if unpriced > 0 => "?".to_string(),
                None => String::new(),
            })
        }
        Shown::Ago(name) => match get(name) {
            Value::Text(iso) => txt(chrono::DateTime::parse_from_rfc3339(&iso)
                .map(|t| human::ago(t.timestamp_millis(), cx.now_ms))
                .unwrap_or(iso)),
            other => other,
        },
    }
}
/// The text of a value, if it is text.
pub fn text(value: &Value) -> Option<String> {
    match value {
        Value::Text(t) => Some(t.clone()),
        _ => None,
    }
}

/// The text of a value, if it is one, taken out of it (which is left `Null`): for rows read
/// once, whose texts need not be copied.
pub fn take_text(value: &mut Value) -> Option<String> {
    match std::mem::replace(value, Value::Null) {
        Value::Text(t) => Some(t),
        _ => None,
    }
}

/// The integer of a value, if it is one.
pub fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Integer(i) => Some(*i),
        _ => None,
    }
}
