//! `cmstore status`: where ingest stands and how big the store is.
//!
//! Per active source: path, committed offset, file size, bytes behind (size − offset; the whole
//! file when it was replaced since the last commit), last commit time and identity. Totals of
//! events, sessions, rejects and unknowns; database and WAL size; configuration problems.
//! Read-only: it never creates the database, and reports clearly when there is none yet.
//! `--format json` prints one object for scripts; other formats print one section per table.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use rusqlite::types::Value;
use serde_json::{json, Map};

use crate::config::Config;
use crate::ingest::source::FileId;
use crate::paths::Paths;
use crate::render::{json_value, Format};
use crate::report::{self, Sink};
use crate::store::read_only::ReadOnlyDb;

/// Arguments of `cmstore status`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table on a
    /// terminal, tsv otherwise]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// One result set: column names and rows.
type Section = (Vec<String>, Vec<Vec<Value>>);

const SOURCES_SQL: &str = "SELECT id, path, offset, size, lines, device, inode, fingerprint, \
     strftime('%Y-%m-%dT%H:%M:%SZ', updated_at / 1000, 'unixepoch') AS last_commit \
     FROM sources WHERE retired_at IS NULL ORDER BY path";

const TOTALS_SQL: &str = "SELECT (SELECT count(*) FROM events) AS events, \
     (SELECT count(*) FROM sessions) AS sessions, \
     (SELECT count(*) FROM rejects) AS rejects, \
     (SELECT coalesce(sum(count), 0) FROM unknown_counts) AS unknowns, \
     (SELECT count(*) FROM sources WHERE retired_at IS NOT NULL) AS retired_sources, \
     (SELECT strftime('%Y-%m-%dT%H:%M:%SZ', min(ts) / 1000, 'unixepoch') FROM events) AS oldest, \
     (SELECT strftime('%Y-%m-%dT%H:%M:%SZ', max(ts) / 1000, 'unixepoch') FROM events) AS newest";

/// [`TOTALS_SQL`] plus how many secondary indexes are set aside right now (a bulk load in
/// progress, or one that died: the next ingest rebuilds them). A database that ingest has not
/// upgraded yet has no `deferred_indexes` table: none then.
fn totals_sql(db: &ReadOnlyDb) -> anyhow::Result<String> {
    let has_table = !report::fetch(
        db,
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'deferred_indexes'",
        &[],
    )?
    .1
    .is_empty();
    let set_aside = if has_table {
        "(SELECT count(*) FROM deferred_indexes)"
    } else {
        "0"
    };
    Ok(format!("{TOTALS_SQL}, {set_aside} AS indexes_set_aside"))
}

/// Runs `cmstore status`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let (_, problems) = Config::load_for(paths);
    let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
    let sink = Sink::for_stdout(args.format);

    let db_exists = paths.db.exists();
    let (sources, totals) = if db_exists {
        let db = ReadOnlyDb::open(&paths.db, None)?;
        (
            sources(&db)?,
            Some(report::fetch(&db, &totals_sql(&db)?, &[])?),
        )
    } else {
        (queue_only(&paths.queue), None)
    };
    let files = file_sizes(&paths.db);

    let mut out = io::stdout().lock();
    if sink.format == Format::Json {
        let objects = |(columns, rows): &Section| -> Vec<serde_json::Value> {
            rows.iter()
                .map(|row| {
                    let map: Map<String, serde_json::Value> = columns
                        .iter()
                        .cloned()
                        .zip(row.iter().map(json_value))
                        .collect();
                    serde_json::Value::Object(map)
                })
                .collect()
        };
        let doc = json!({
            "database": {
                "path": paths.db.display().to_string(),
                "exists": db_exists,
                "bytes": files.0,
                "wal_bytes": files.1,
            },
            "queue": paths.queue.display().to_string(),
            "sources": objects(&sources),
            "totals": totals.as_ref().and_then(|t| objects(t).into_iter().next()),
            "config_problems": problems,
        });
        serde_json::to_writer_pretty(&mut out, &doc).context("writing")?;
        writeln!(out).context("writing")?;
        return Ok(ExitCode::SUCCESS);
    }

    if !db_exists {
        let note = format!(
            "no database at {} yet; run `cmstore ingest` to create it",
            paths.db.display()
        );
        // Machine formats keep stdout to their rows.
        match sink.format {
            Format::Table | Format::Markdown => writeln!(out, "{note}")?,
            _ => eprintln!("cmstore status: {note}"),
        }
    }
    let heading = |out: &mut dyn Write, title: &str| -> io::Result<()> {
        match sink.format {
            Format::Table | Format::Markdown => writeln!(out, "\n{title}"),
            _ => Ok(()),
        }
    };
    heading(&mut out, "Sources")?;
    report::render(&mut out, sink, sources.0, &sources.1)?;
    heading(&mut out, "Store")?;
    let mut columns = vec!["database".into(), "bytes".into(), "wal_bytes".into()];
    let mut row = vec![
        Value::Text(paths.db.display().to_string()),
        files.0.map_or(Value::Null, Value::Integer),
        files.1.map_or(Value::Null, Value::Integer),
    ];
    if let Some((t_columns, t_rows)) = totals {
        columns.extend(t_columns);
        row.extend(t_rows.into_iter().next().unwrap_or_default());
    }
    report::render(&mut out, sink, columns, &[row])?;
    if !problems.is_empty() {
        heading(&mut out, "Configuration problems")?;
        let rows: Vec<Vec<Value>> = problems.into_iter().map(|p| vec![Value::Text(p)]).collect();
        report::render(&mut out, sink, vec!["problem".into()], &rows)?;
    }
    out.flush().context("writing")?;
    Ok(ExitCode::SUCCESS)
}

/// Columns of the sources section.
fn source_columns() -> Vec<String> {
    [
        "path",
        "offset",
        "size",
        "bytes_behind",
        "lines",
        "last_commit",
        "identity",
        "state",
    ]
    .map(String::from)
    .to_vec()
}

/// The active sources, each compared with the file its path names now.
fn sources(db: &ReadOnlyDb) -> anyhow::Result<Section> {
    let (columns, rows) = report::fetch(db, SOURCES_SQL, &[])?;
    let col = |name: &str| columns.iter().position(|c| c == name).unwrap_or(0);
    let int = |v: &Value| match v {
        Value::Integer(i) => Some(*i),
        _ => None,
    };
    let mut out = Vec::new();
    for row in rows {
        let path = match &row[col("path")] {
            Value::Text(t) => t.clone(),
            _ => String::new(),
        };
        let offset = int(&row[col("offset")]).unwrap_or(0);
        let stored = FileId {
            device: int(&row[col("device")]),
            inode: int(&row[col("inode")]),
        };
        let (size, state) = match std::fs::metadata(&path) {
            Ok(meta) => {
                let now = FileId::of(&meta);
                let len = meta.len() as i64;
                if stored.is_known() && now.is_known() && now != stored {
                    (Some(len), "replaced: read from 0 on the next pass")
                } else if len < offset {
                    (Some(len), "truncated: read from 0 on the next pass")
                } else {
                    (Some(len), "following")
                }
            }
            Err(_) => (None, "missing"),
        };
        let behind = match (size, state) {
            (Some(len), "following") => Some(len - offset),
            (Some(len), _) => Some(len),
            (None, _) => None,
        };
        let fingerprint = match &row[col("fingerprint")] {
            Value::Text(t) => t.chars().take(12).collect::<String>(),
            _ => "-".into(),
        };
        let identity = match (stored.device, stored.inode) {
            (Some(d), Some(i)) => format!("dev {d} ino {i} fp {fingerprint}"),
            _ => format!("fp {fingerprint}"),
        };
        out.push(vec![
            Value::Text(path),
            Value::Integer(offset),
            size.map_or(Value::Null, Value::Integer),
            behind.map_or(Value::Null, Value::Integer),
            row[col("lines")].clone(),
            row[col("last_commit")].clone(),
            Value::Text(identity),
            Value::Text(state.into()),
        ]);
    }
    Ok((source_columns(), out))
}

/// Without a database: the queue file alone, wholly behind.
fn queue_only(queue: &Path) -> Section {
    let rows = match std::fs::metadata(queue) {
        Ok(meta) => vec![vec![
            Value::Text(queue.display().to_string()),
            Value::Integer(0),
            Value::Integer(meta.len() as i64),
            Value::Integer(meta.len() as i64),
            Value::Integer(0),
            Value::Null,
            Value::Null,
            Value::Text("not ingested yet".into()),
        ]],
        Err(_) => Vec::new(),
    };
    (source_columns(), rows)
}

/// Sizes of the database file and its WAL, when they exist.
fn file_sizes(db: &Path) -> (Option<i64>, Option<i64>) {
    let size = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len() as i64);
    let mut wal = db.as_os_str().to_os_string();
    wal.push("-wal");
    (size(db), size(Path::new(&wal)))
}
