//! `cmstore status`: where ingest stands and how big the store is.
//!
//! Per active source: path, committed offset, file size, bytes and complete lines behind
//! (from the offset to the end; the whole file when it was replaced since the last commit),
//! last commit time, identity, and whether an ingest follows it. Whether an ingest runs (the
//! database's ingest lock is held), its pid, command and start, and a stale pid file left by
//! one that was killed. Totals of events, sessions, rejects and unknowns; database and WAL
//! size; the retention policy (days, whether a running ingest applies it, whether it compacts
//! the queue) and what its last automatic run removed; configuration problems.
//! Read-only: it never creates the database (nor any other file), and reports clearly when
//! there is none yet. `--format json` prints one object for scripts, `jsonl` the same as a
//! line per section (with its `section`), `csv` and `tsv` one table of `section`, `row`,
//! `field`, `value`; `table` and `markdown` print each section under its title.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use rusqlite::types::Value;
use serde_json::{json, Map};

use crate::files::ingest_lock;
use crate::files::paths::Paths;
use crate::read::render::{json_objects, Format};
use crate::read::report::{self, Sink};
use crate::read::status::{self, Section, Status};
use crate::support::{clock, human};

/// Arguments of `cmstore status`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table, in a
    /// pipe too]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
}

/// Runs `cmstore status`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let sink = Sink::for_stdout(args.format);
    let Status {
        db_exists,
        files,
        sources,
        totals,
        ingest,
        retention,
        budget,
        push,
        history,
        problems,
    } = status::gather(paths)?;

    let mut out = io::stdout().lock();
    if matches!(sink.format, Format::Json | Format::Jsonl) {
        let objects = |(columns, rows): &Section| json_objects(columns.clone(), rows);
        let doc = json!({
            "database": {
                "path": paths.db.display().to_string(),
                "exists": db_exists,
                "bytes": files.0,
                "wal_bytes": files.1,
            },
            "queue": paths.queue.display().to_string(),
            "ingest": ingest.to_json(&ingest_lock::lock_path(&paths.db)),
            "sources": objects(&sources),
            "totals": totals.as_ref().and_then(|t| objects(t).into_iter().next()),
            "retention": retention.to_json(),
            "budget": budget.as_ref().map(|b| objects(&b.raw)),
            "push": push.as_ref().map(objects),
            "history": history.as_ref().and_then(|h| objects(h).into_iter().next()),
            "config_problems": problems,
        });
        if sink.format == Format::Jsonl {
            write_json_lines(&mut out, doc).context("writing")?;
        } else {
            serde_json::to_writer_pretty(&mut out, &doc).context("writing")?;
            writeln!(out).context("writing")?;
        }
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
    let (ingest_columns, ingest_row) = ingest.to_row();
    let (retention_columns, retention_row) = retention.to_row();
    let mut sections: Vec<Named> = vec![
        ("Sources", sources),
        ("Store", (columns, vec![row])),
        ("Ingest", (ingest_columns, vec![ingest_row])),
        ("Retention", (retention_columns, vec![retention_row])),
    ];
    if let Some(budget) = budget {
        let for_a_person = matches!(sink.format, Format::Table | Format::Markdown);
        sections.push((
            "Budget",
            if for_a_person {
                budget.readable
            } else {
                budget.raw
            },
        ));
    }
    if let Some(push) = push {
        sections.push(("Push", push));
    }
    if let Some(history) = history {
        sections.push(("History", history));
    }
    if !problems.is_empty() {
        let rows = problems.into_iter().map(|p| vec![Value::Text(p)]).collect();
        sections.push((PROBLEMS, (vec!["problem".into()], rows)));
    }
    match sink.format {
        Format::Table | Format::Markdown => write_sections(&mut out, sink, sections)?,
        _ => write_long(&mut out, sink, sections)?,
    }
    out.flush().context("writing")?;
    Ok(ExitCode::SUCCESS)
}

/// A section of the report: its title and its table.
type Named = (&'static str, Section);

/// The sections for a person: each under its title. On a terminal each reads as `field  value`
/// lines: the values (a path, a state) are whole at any width, and no header is wrapped.
fn write_sections(out: &mut dyn Write, sink: Sink, sections: Vec<Named>) -> anyhow::Result<()> {
    for (title, (columns, rows)) in sections {
        writeln!(out, "\n{title}").context("writing")?;
        match (sink.format, title) {
            (Format::Table, PROBLEMS) => write_problems(out, &rows).context("writing")?,
            (Format::Table, _) => {
                let rows = for_a_person(&columns, rows, clock::now_ms());
                write_fields(out, &columns, &rows, sink.table.width).context("writing")?
            }
            _ => report::render(out, sink, columns, &rows)?,
        }
    }
    Ok(())
}

/// Fields holding a size in bytes.
const SIZES: [&str; 5] = ["bytes", "wal_bytes", "offset", "size", "bytes_behind"];

/// Fields holding a moment (RFC 3339, UTC).
const MOMENTS: [&str; 8] = [
    "first_deletion",
    "last_commit",
    "oldest",
    "newest",
    "started",
    "last_run",
    "last_push",
    "last_error_at",
];

/// The rows as a person reads them on a terminal: sizes in kB and MB, moments in local time
/// (with how long ago, within a month), and a file's identity (device, inode, fingerprint)
/// left to the machine formats, which keep every value as stored.
fn for_a_person(columns: &[String], rows: Vec<Vec<Value>>, now_ms: i64) -> Vec<Vec<Value>> {
    let readable = |name: &str, value: Value| match value {
        Value::Integer(n) if SIZES.contains(&name) => Value::Text(human::bytes(n)),
        Value::Text(t) if MOMENTS.contains(&name) => match clock::rfc3339_ms(&t) {
            // A moment to come (when Claude Code will delete a transcript).
            Some(ms) if ms > now_ms => Value::Text(format!(
                "{} ({})",
                human::local_time(ms),
                human::ahead(ms, now_ms)
            )),
            Some(ms) if now_ms - ms < 30 * 86_400_000 => Value::Text(format!(
                "{} ({})",
                human::local_time(ms),
                human::ago(ms, now_ms)
            )),
            Some(ms) => Value::Text(human::local_time(ms)),
            None => Value::Text(t),
        },
        _ if name == "identity" => Value::Null,
        other => other,
    };
    rows.into_iter()
        .map(|row| {
            columns
                .iter()
                .zip(row)
                .map(|(name, value)| readable(name, value))
                .collect()
        })
        .collect()
}

/// The title of the configuration problems' section.
const PROBLEMS: &str = "Configuration problems";

/// Each configuration problem whole, as `config check` prints it: a problem is read for its
/// end (what applies instead), which a table cell cut to the terminal would lose.
fn write_problems(out: &mut dyn Write, rows: &[Vec<Value>]) -> io::Result<()> {
    for row in rows {
        if let Some(Value::Text(problem)) = row.first() {
            for (i, line) in problem.lines().enumerate() {
                writeln!(out, "{}{line}", if i == 0 { "  - " } else { "    " })?;
            }
        }
    }
    Ok(())
}

/// `--format json`'s document as JSON Lines, the same names and values: an object per line,
/// `section` first (the document's key): a line per object, per element of a list (a
/// configuration problem as `problem`), and a lone value (the queue) as `path`.
fn write_json_lines(out: &mut dyn Write, doc: serde_json::Value) -> io::Result<()> {
    let serde_json::Value::Object(doc) = doc else {
        return Ok(());
    };
    for (section, value) in doc {
        let items = match value {
            serde_json::Value::Array(items) => items,
            serde_json::Value::Null => Vec::new(),
            other => vec![other],
        };
        for item in items {
            let mut line = Map::new();
            line.insert("section".into(), section.clone().into());
            match item {
                serde_json::Value::Object(fields) => line.extend(fields),
                other if section == "config_problems" => {
                    line.insert("problem".into(), other);
                }
                other => {
                    line.insert("path".into(), other);
                }
            }
            serde_json::to_writer(&mut *out, &line)?;
            writeln!(out)?;
        }
    }
    Ok(())
}

/// A section's title as a machine format names it: `Configuration problems` is
/// `configuration_problems`.
fn section_name(title: &str) -> String {
    title.to_ascii_lowercase().replace(' ', "_")
}

/// The sections for a program, as one table that parses as a whole: a row per value,
/// `section`, `row` (from 1, within the section), `field`, `value`.
fn write_long(out: &mut dyn Write, sink: Sink, sections: Vec<Named>) -> anyhow::Result<()> {
    let mut long = Vec::new();
    for (title, (columns, rows)) in sections {
        let section = section_name(title);
        for (index, row) in rows.into_iter().enumerate() {
            for (field, value) in columns.iter().zip(row) {
                long.push(vec![
                    Value::Text(section.clone()),
                    Value::Integer(index as i64 + 1),
                    Value::Text(field.clone()),
                    value,
                ]);
            }
        }
    }
    let columns = ["section", "row", "field", "value"]
        .map(String::from)
        .to_vec();
    report::render(out, sink, columns, &long)
}

/// Writes each row as one `field  value` line per column, a blank line between rows; a NULL
/// or empty value is left out, and a value longer than `width` allows is cut with `…`.
fn write_fields(
    out: &mut dyn Write,
    columns: &[String],
    rows: &[Vec<Value>],
    width: Option<u16>,
) -> io::Result<()> {
    if rows.is_empty() {
        writeln!(out, "  (none)")?;
    }
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        let shown: Vec<(&String, String)> = columns
            .iter()
            .zip(row)
            .filter_map(|(name, value)| Some((name, field_text(value)?)))
            .collect();
        // Aligned on the names shown: a left-out NULL does not widen the gap.
        let name_width = shown
            .iter()
            .map(|(n, _)| n.chars().count())
            .max()
            .unwrap_or(0);
        let room = width.map(|w| usize::from(w).saturating_sub(name_width + 4).max(10));
        for (name, text) in shown {
            let text = room.map_or_else(
                || text.clone(),
                |room| crate::model::shorten::cut_text(&text, room),
            );
            writeln!(out, "  {name:<name_width$}  {text}")?;
        }
    }
    Ok(())
}

/// A field's value on one line; `None` for NULL and empty text, which are left out.
fn field_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::Text(t) if t.is_empty() => None,
        Value::Text(t) => Some(crate::read::render::one_line(t).into_owned()),
        Value::Integer(n) => Some(n.to_string()),
        Value::Real(r) => Some(crate::read::render::real_text(*r)),
        Value::Blob(b) => Some(crate::read::render::hex_literal(b)),
    }
}
