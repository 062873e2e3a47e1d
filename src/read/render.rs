//! Renderers for query results: table, JSON, JSON Lines, CSV, TSV and Markdown.
//!
//! Pure: column names and rows of SQLite values go in, text comes out on any [`Write`]. No
//! database access happens here, so every convention below is unit-tested on plain values.
//!
//! Conventions, per format:
//!
//! | format | NULL | integer / real | blob | text |
//! |---|---|---|---|---|
//! | `table` | `∅` (dimmed with color) | right-aligned | `X'…'` hex | one line: `↵` for newlines, control pictures for other control characters; cut with `…` to the width |
//! | `json`, `jsonl` | `null` | exact JSON numbers (`1.0` stays a real) | `{"$base64":true,"encoded":"…"}` | JSON string, Unicode kept |
//! | `csv` | empty, unquoted | decimal | `X'…'` hex | RFC 4180: quoted when it holds `,` `"` CR or LF; empty text is `""` |
//! | `tsv` | `\N` | decimal | `X'…'` hex | PostgreSQL text-COPY escapes: `\\` `\t` `\n` `\r` |
//! | `markdown` | `∅` | decimal | `X'…'` hex | `\|` for pipes, `<br>` for newlines |
//!
//! Reals print as the shortest text that reads back to the same `f64`, always with a `.` or an
//! exponent (`1.0`, `1e+300`); infinities print as `Inf`/`-Inf` (JSON: the strings `"Inf"` and
//! `"-Inf"`, as JSON has no such numbers). JSON objects need unique keys, so a repeated column
//! name gets a suffix there (`n`, `n_2`, …); the other formats keep names as given.
//!
//! `json`, `jsonl`, `csv`, `tsv` and `markdown` stream: each row is written as it arrives.
//! `table` must see every row to size its columns, so it buffers them. A bordered table too
//! wide for the terminal to read is drawn as records, one line per column ([`render_records`]).

use std::borrow::Cow;
use std::fmt;
use std::io::{self, Write};
use std::str::FromStr;

use base64::Engine as _;
use comfy_table::{presets, Attribute, Cell, CellAlignment, ContentArrangement, Row, Table};
use rusqlite::types::Value;

/// How query results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A bordered table sized to the terminal, for reading.
    Table,
    /// One JSON array of objects.
    Json,
    /// One JSON object per line.
    Jsonl,
    /// RFC 4180 comma-separated values with a header line.
    Csv,
    /// Tab-separated values with PostgreSQL-style escapes and a header line.
    Tsv,
    /// A GitHub-flavoured Markdown table.
    Markdown,
}

impl Format {
    /// Every format, in the order the help lists them.
    pub const ALL: [Format; 6] = [
        Format::Table,
        Format::Json,
        Format::Jsonl,
        Format::Csv,
        Format::Tsv,
        Format::Markdown,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Jsonl => "jsonl",
            Format::Csv => "csv",
            Format::Tsv => "tsv",
            Format::Markdown => "markdown",
        }
    }

    /// True for formats meant for people rather than programs; they get a default row cap.
    pub fn is_for_people(self) -> bool {
        matches!(self, Format::Table | Format::Markdown)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown `--format` name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown format {0:?} (expected table, json, jsonl, csv, tsv or markdown)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Format, UnknownFormat> {
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// Options of the `table` format.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// Total width to fit, in terminal columns; `None` draws every cell in full.
    pub width: Option<u16>,
    /// Use terminal attributes (dimmed NULL).
    pub color: bool,
    /// The readable look of the curated reports: no borders, a line under the headers.
    pub plain: bool,
    /// With a width: the columns that may be cut to fit (the others keep their content's
    /// width, so an id stays whole). Empty: any column may be cut.
    pub cuttable: &'static [&'static str],
    /// Columns right-aligned, header and cells (figures shown as text, `8m 02s`, `1.8M`).
    pub right: &'static [&'static str],
}

/// [`TableOptions::plain`]: only the header line (comfy-table draws no border whose
/// character is a space).
const PLAIN_PRESET: &str = "     ─             ";

/// Writes one result set in one format: [`Renderer::new`], then [`Renderer::row`] per row,
/// then [`Renderer::finish`].
pub struct Renderer<W: Write> {
    format: Format,
    out: W,
    columns: Vec<String>,
    table: TableOptions,
    /// Rows held back by the `table` format.
    buffered: Vec<Vec<Value>>,
    rows: u64,
}

impl<W: Write> Renderer<W> {
    /// Starts the output: streaming formats write their header now.
    pub fn new(
        format: Format,
        mut out: W,
        columns: Vec<String>,
        table: TableOptions,
    ) -> io::Result<Renderer<W>> {
        let columns = match format {
            Format::Json | Format::Jsonl => unique_names(columns),
            _ => columns,
        };
        match format {
            Format::Csv => {
                write_record(&mut out, "", columns.iter().map(|c| csv_text(c)), ",", CRLF)?
            }
            Format::Tsv => write_record(
                &mut out,
                "",
                columns.iter().map(|c| tsv_text(c)),
                "\t",
                "\n",
            )?,
            Format::Markdown => {
                let header = columns.iter().map(|c| markdown_text(c));
                write_record(&mut out, MD.0, header, MD.1, MD.2)?;
                let rule = columns.iter().map(|_| "---".into());
                write_record(&mut out, MD.0, rule, MD.1, MD.2)?;
            }
            Format::Json => out.write_all(b"[")?,
            Format::Table | Format::Jsonl => {}
        }
        Ok(Renderer {
            format,
            out,
            columns,
            table,
            buffered: Vec::new(),
            rows: 0,
        })
    }

    /// Writes (or, for `table`, keeps) one row; `cells` has one value per column.
    pub fn row(&mut self, cells: &[Value]) -> io::Result<()> {
        let first = self.rows == 0;
        self.rows += 1;
        let out = &mut self.out;
        match self.format {
            Format::Table => self.buffered.push(cells.to_vec()),
            Format::Json => {
                out.write_all(if first { b"\n" } else { b",\n" })?;
                write_json_object(out, &self.columns, cells)?;
            }
            Format::Jsonl => {
                write_json_object(out, &self.columns, cells)?;
                out.write_all(b"\n")?;
            }
            Format::Csv => write_record(out, "", cells.iter().map(csv_field), ",", CRLF)?,
            Format::Tsv => write_record(out, "", cells.iter().map(tsv_field), "\t", "\n")?,
            Format::Markdown => {
                write_record(out, MD.0, cells.iter().map(markdown_field), MD.1, MD.2)?;
            }
        }
        Ok(())
    }

    /// Ends the output (the table is drawn now), flushes, and hands the writer back.
    pub fn finish(mut self) -> io::Result<W> {
        match self.format {
            Format::Table => {
                let text = render_table(&self.columns, &self.buffered, self.table);
                self.out.write_all(text.as_bytes())?;
                self.out.write_all(b"\n")?;
            }
            Format::Json => {
                let end: &[u8] = if self.rows == 0 { b"]\n" } else { b"\n]\n" };
                self.out.write_all(end)?;
            }
            _ => {}
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

/// RFC 4180 ends records with CRLF.
const CRLF: &str = "\r\n";

/// Start, separator and end of a Markdown table row.
const MD: (&str, &str, &str) = ("| ", " | ", " |\n");

/// Writes `start`, the `fields` joined by `sep`, then `end`.
fn write_record<'a>(
    out: &mut impl Write,
    start: &str,
    fields: impl Iterator<Item = Cow<'a, str>>,
    sep: &str,
    end: &str,
) -> io::Result<()> {
    out.write_all(start.as_bytes())?;
    for (i, field) in fields.enumerate() {
        if i > 0 {
            out.write_all(sep.as_bytes())?;
        }
        out.write_all(field.as_bytes())?;
    }
    out.write_all(end.as_bytes())
}

/// Makes column names unique for JSON objects: the second `n` becomes `n_2`, and so on.
pub fn unique_names(columns: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(columns.len());
    for name in columns {
        let mut candidate = name.clone();
        let mut n = 2;
        while !seen.insert(candidate.clone()) {
            candidate = format!("{name}_{n}");
            n += 1;
        }
        out.push(candidate);
    }
    out
}

/// Rows as JSON objects, keys in column order and made unique ([`unique_names`]), the values
/// as `--format json` prints them: for the documents that hold rows (`status`, the dashboard).
pub fn json_objects(columns: Vec<String>, rows: &[Vec<Value>]) -> Vec<serde_json::Value> {
    let names = unique_names(columns);
    rows.iter()
        .map(|row| {
            let map: serde_json::Map<String, serde_json::Value> = names
                .iter()
                .cloned()
                .zip(row.iter().map(json_value))
                .collect();
            serde_json::Value::Object(map)
        })
        .collect()
}

/// Writes one row as a JSON object, keys in column order.
fn write_json_object(out: &mut impl Write, columns: &[String], cells: &[Value]) -> io::Result<()> {
    out.write_all(b"{")?;
    for (i, (name, value)) in columns.iter().zip(cells).enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, name)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut *out, &json_value(value))?;
    }
    out.write_all(b"}")
}

/// The JSON form of one value (see the module table).
pub fn json_value(value: &Value) -> serde_json::Value {
    match value {
        Value::Null => serde_json::Value::Null,
        Value::Integer(i) => serde_json::Value::from(*i),
        Value::Real(r) => serde_json::Number::from_f64(*r)
            .map(serde_json::Value::Number)
            .unwrap_or_else(|| serde_json::Value::String(real_text(*r))),
        Value::Text(t) => serde_json::Value::String(t.clone()),
        Value::Blob(b) => serde_json::json!({ "$base64": true, "encoded": base64(b) }),
    }
}

/// A real as the shortest text that reads back to the same `f64` (`1.0`, `0.1`, `1e+300`).
pub fn real_text(r: f64) -> String {
    match serde_json::Number::from_f64(r) {
        Some(n) => n.to_string(),
        None if r.is_nan() => "NaN".to_owned(),
        None if r > 0.0 => "Inf".to_owned(),
        None => "-Inf".to_owned(),
    }
}

/// A blob as an SQLite hex literal, `X'00FF'`, which can be pasted back into SQL.
pub fn hex_literal(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2 + 3);
    s.push_str("X'");
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 0xF)] as char);
    }
    s.push('\'');
    s
}

/// Standard base64 (RFC 4648, with padding).
pub fn base64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A non-text value as plain text, shared by every text format; `None` for NULL and text.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::Integer(i) => Some(i.to_string()),
        Value::Real(r) => Some(real_text(*r)),
        Value::Blob(b) => Some(hex_literal(b)),
        Value::Null | Value::Text(_) => None,
    }
}

/// One CSV field: NULL is empty and unquoted, empty text is `""`, so the two stay apart.
pub fn csv_field(value: &Value) -> Cow<'_, str> {
    match value {
        Value::Null => "".into(),
        Value::Text(t) if t.is_empty() => "\"\"".into(),
        Value::Text(t) => csv_text(t),
        other => scalar_text(other).unwrap_or_default().into(),
    }
}

/// Quotes `s` per RFC 4180 when it holds a comma, a quote, CR or LF; quotes are doubled.
///
/// csv-core, the core of the `csv` crate, decides and escapes. The `csv` crate's `Writer`
/// is not used: it writes NULL and empty text alike (an empty field, or `""` when it is the
/// record's only field), and this format keeps the two apart (see [`csv_field`]).
pub fn csv_text(s: &str) -> Cow<'_, str> {
    let mut writer = csv_core::Writer::new();
    if !writer.should_quote(s.as_bytes()) {
        return s.into();
    }
    // csv-core's bound for one field: the two quotes, and every byte a doubled quote.
    let mut out = vec![0; 2 + 2 * s.len()];
    let (_, read, mut written) = writer.field(s.as_bytes(), &mut out);
    debug_assert_eq!(read, s.len());
    written += writer.finish(&mut out[written..]).1;
    out.truncate(written);
    String::from_utf8(out)
        .expect("csv-core only adds ASCII quotes to UTF-8 text")
        .into()
}

/// One TSV field, PostgreSQL text-COPY style: NULL is `\N`.
pub fn tsv_field(value: &Value) -> Cow<'_, str> {
    match value {
        Value::Null => "\\N".into(),
        Value::Text(t) => tsv_text(t),
        other => scalar_text(other).unwrap_or_default().into(),
    }
}

/// Escapes backslash, tab, newline and carriage return as `\\`, `\t`, `\n`, `\r`.
///
/// Hand-written on purpose: this is PostgreSQL's text-COPY format, not CSV with tabs. The
/// `csv` crate would put a field holding a tab or a newline in quotes, where COPY writes `\t`
/// or `\n` in its place, and it has no NULL (`\N`).
pub fn tsv_text(s: &str) -> Cow<'_, str> {
    if !s.contains(['\\', '\t', '\n', '\r']) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.into()
}

/// One Markdown table cell; NULL is `∅`.
pub fn markdown_field(value: &Value) -> Cow<'_, str> {
    match value {
        Value::Null => NULL_MARK.into(),
        Value::Text(t) => markdown_text(t),
        other => scalar_text(other).unwrap_or_default().into(),
    }
}

/// Escapes `\` and `|`, turns line breaks into `<br>` and other control characters into
/// their visible pictures, so a cell never breaks the table.
pub fn markdown_text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c == '|' || c == '\\' || c.is_control()) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '|' => out.push_str("\\|"),
            '\\' => out.push_str("\\\\"),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => out.push_str("<br>"),
            c => out.push(visible(c)),
        }
    }
    out.into()
}

/// How NULL looks in the table and Markdown formats.
pub const NULL_MARK: &str = "∅";

/// Text shown on one line: `↵` for a line break, control pictures (`␉`, `␛`, …) for other
/// control characters, so a cell can neither break the table nor send escapes to the terminal.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return s.into();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\r' => out.push('↵'),
            c => out.push(visible(c)),
        }
    }
    out.into()
}

/// Control characters as their Unicode control pictures; everything else unchanged.
fn visible(c: char) -> char {
    match c {
        '\u{0}'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
        '\u{7f}' => '␡',
        c if c.is_control() => '\u{fffd}',
        c => c,
    }
}

/// Draws the table; each row is kept to one line, cells cut with `…` when a width is set.
/// A bordered table that cannot fit the width readably is drawn as records instead
/// ([`render_records`]), as psql's `\x auto` does.
pub fn render_table(columns: &[String], rows: &[Vec<Value>], options: TableOptions) -> String {
    if let Some(width) = options.width {
        if !options.plain && !fits_readably(columns, rows, width) {
            return render_records(columns, rows, width, options.color);
        }
    }
    let mut table = Table::new();
    table.load_preset(if options.plain {
        PLAIN_PRESET
    } else {
        presets::UTF8_FULL_CONDENSED
    });
    table.set_truncation_indicator("…");
    if options.color {
        table.enforce_styling();
    } else {
        table.force_no_tty();
    }
    match options.width {
        Some(width) => {
            table.set_width(width);
            table.set_content_arrangement(ContentArrangement::Dynamic);
        }
        None => {
            table.set_content_arrangement(ContentArrangement::Disabled);
        }
    }
    table.set_header(columns.iter().map(|c| Cell::new(one_line(c))));
    if options.width.is_some() && !options.cuttable.is_empty() {
        for (column, name) in table.column_iter_mut().zip(columns) {
            if !options.cuttable.contains(&name.as_str()) {
                column.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
            }
        }
    }
    if !options.right.is_empty() {
        for (column, name) in table.column_iter_mut().zip(columns) {
            if options.right.contains(&name.as_str()) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
    }
    for cells in rows {
        let mut row = Row::new();
        row.max_height(1);
        for value in cells {
            row.add_cell(table_cell(value, options.color));
        }
        table.add_row(row);
    }
    if options.plain {
        // Without a right border the padding of the last column is only trailing blanks.
        return table
            .lines()
            .map(|line| line.trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n");
    }
    table.to_string()
}

/// The width below which a cut cell stops being readable: a column narrower than its content
/// keeps at least this much (or its header, when longer).
const READABLE_CELL: usize = 10;

/// Whether a bordered table of these rows fits `width` with every header whole and no cell cut
/// below [`READABLE_CELL`] (or below its header).
fn fits_readably(columns: &[String], rows: &[Vec<Value>], width: u16) -> bool {
    let mut needed = 1; // the left border
    for (index, name) in columns.iter().enumerate() {
        let header = display_width(&one_line(name));
        let content = rows
            .iter()
            .filter_map(|cells| cells.get(index))
            .map(cell_width)
            .max()
            .unwrap_or(0);
        // A cell, a space either side, and the border after it.
        needed += content.max(header).min(header.max(READABLE_CELL)) + 3;
        if needed > usize::from(width) {
            return false;
        }
    }
    true
}

/// Columns of the terminal a value takes in a table cell.
fn cell_width(value: &Value) -> usize {
    match value {
        Value::Null => 1,
        Value::Text(t) => display_width(&one_line(t)),
        other => scalar_text(other).map_or(0, |t| t.len()),
    }
}

/// Columns of the terminal `s` takes (East Asian wide characters take two).
pub fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// Draws rows as records, one line per column, for a table too wide for the terminal:
///
/// ```text
/// ─[ row 1 ]──────────────
/// seq       │ 1
/// hook_type │ Notification
/// ```
///
/// Names keep their width; values are kept to one line and cut with `…` to `width`.
pub fn render_records(columns: &[String], rows: &[Vec<Value>], width: u16, color: bool) -> String {
    let width = usize::from(width);
    let names: Vec<Cow<'_, str>> = columns.iter().map(|c| one_line(c)).collect();
    let name_width = names.iter().map(|n| display_width(n)).max().unwrap_or(0);
    // Names wider than the terminal still leave a value something to show: the line wraps.
    let value_width = width.saturating_sub(name_width + 3).max(READABLE_CELL);
    let mut out = String::new();
    if rows.is_empty() {
        // The columns alone, one a line, under a rule that says so.
        out.push_str("─[ no rows ]");
        for name in &names {
            out.push('\n');
            out.push_str(name);
        }
        return out;
    }
    for (index, cells) in rows.iter().enumerate() {
        if index > 0 {
            out.push('\n');
        }
        let label = format!("─[ row {} ]", index + 1);
        let rule = width.min(name_width + 3 + value_width.min(40));
        let fill = rule.saturating_sub(display_width(&label));
        out.push_str(&label);
        out.extend(std::iter::repeat_n('─', fill));
        for (name, value) in names.iter().zip(cells) {
            out.push('\n');
            out.push_str(name);
            out.extend(std::iter::repeat_n(' ', name_width - display_width(name)));
            out.push_str(" │ ");
            push_record_value(&mut out, value, value_width, color);
        }
    }
    out
}

/// One value of a record, on one line, cut to `max` columns with `…`.
fn push_record_value(out: &mut String, value: &Value, max: usize, color: bool) {
    let text: Cow<'_, str> = match value {
        Value::Null if color => {
            // SGR 2 (dim) and 0 (reset): what the table's dimmed NULL writes.
            out.push_str("\x1b[2m");
            out.push_str(NULL_MARK);
            out.push_str("\x1b[0m");
            return;
        }
        Value::Null => NULL_MARK.into(),
        Value::Text(t) => one_line(t),
        other => scalar_text(other).unwrap_or_default().into(),
    };
    if display_width(&text) <= max {
        out.push_str(&text);
        return;
    }
    let mut used = 0;
    for c in text.chars() {
        let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
}

fn table_cell(value: &Value, color: bool) -> Cell {
    match value {
        Value::Null if color => Cell::new(NULL_MARK).add_attribute(Attribute::Dim),
        Value::Null => Cell::new(NULL_MARK),
        Value::Text(t) => Cell::new(one_line(t)),
        Value::Integer(_) | Value::Real(_) => {
            Cell::new(scalar_text(value).unwrap_or_default()).set_alignment(CellAlignment::Right)
        }
        Value::Blob(_) => Cell::new(scalar_text(value).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(format: Format, columns: &[&str], rows: &[Vec<Value>]) -> String {
        let columns = columns.iter().map(|c| c.to_string()).collect();
        let mut r = Renderer::new(format, Vec::new(), columns, TableOptions::default()).unwrap();
        for row in rows {
            r.row(row).unwrap();
        }
        String::from_utf8(r.finish().unwrap()).unwrap()
    }

    fn text(s: &str) -> Value {
        Value::Text(s.to_owned())
    }

    /// NULL, a big integer, a real, unicode, a newline, quotes, a comma, a blob, empty text.
    fn tricky() -> Vec<Value> {
        vec![
            Value::Null,
            Value::Integer(9_007_199_254_740_993),
            Value::Real(1.0),
            text("héllo 🦀"),
            text("two\nlines"),
            text("say \"hi\", ok"),
            Value::Blob(vec![0, 1, 254, 255]),
            text(""),
        ]
    }

    const TRICKY_COLUMNS: [&str; 8] = ["n", "big", "real", "uni", "nl", "quote", "blob", "empty"];

    /// A writer whose bytes the test can read while the renderer still owns it.
    #[derive(Clone, Default)]
    struct Shared(std::rc::Rc<std::cell::RefCell<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.borrow_mut().write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn streaming_formats_write_each_row_before_the_end() {
        for format in [
            Format::Json,
            Format::Jsonl,
            Format::Csv,
            Format::Tsv,
            Format::Markdown,
        ] {
            let sink = Shared::default();
            let columns = vec!["n".to_owned()];
            let mut r =
                Renderer::new(format, sink.clone(), columns, TableOptions::default()).unwrap();
            r.row(&[Value::Integer(41)]).unwrap();
            let so_far = String::from_utf8(sink.0.borrow().clone()).unwrap();
            assert!(so_far.contains("41"), "{format}: {so_far:?}");
            r.row(&[Value::Integer(42)]).unwrap();
            let so_far = String::from_utf8(sink.0.borrow().clone()).unwrap();
            assert!(so_far.contains("42"), "{format}: {so_far:?}");
            r.finish().unwrap();
        }
    }

    #[test]
    fn formats_parse_by_name_case_insensitively() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        assert_eq!("JSONL".parse::<Format>(), Ok(Format::Jsonl));
        assert!("xml".parse::<Format>().is_err());
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let cases = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (input, expected) in cases {
            assert_eq!(base64(input.as_bytes()), expected, "{input:?}");
        }
        assert_eq!(base64(&[0, 1, 254, 255]), "AAH+/w==");
    }

    #[test]
    fn reals_keep_their_kind_and_precision() {
        assert_eq!(real_text(1.0), "1.0");
        assert_eq!(real_text(0.1), "0.1");
        assert_eq!(real_text(1e300), "1e+300");
        assert_eq!(real_text(f64::INFINITY), "Inf");
        assert_eq!(real_text(f64::NEG_INFINITY), "-Inf");
        assert_eq!(real_text(-2.5), "-2.5");
    }

    #[test]
    fn json_is_exact() {
        let out = render(Format::Json, &TRICKY_COLUMNS, &[tricky(), tricky()]);
        let parsed: serde_json::Value = serde_json::from_str(&out).unwrap();
        let rows = parsed.as_array().unwrap();
        assert_eq!(rows.len(), 2);
        let row = &rows[0];
        assert!(row["n"].is_null());
        assert_eq!(row["big"].as_i64(), Some(9_007_199_254_740_993));
        assert!(row["real"].is_f64());
        assert_eq!(row["real"].as_f64(), Some(1.0));
        assert_eq!(row["uni"], "héllo 🦀");
        assert_eq!(row["nl"], "two\nlines");
        assert_eq!(row["quote"], "say \"hi\", ok");
        assert_eq!(row["blob"]["$base64"], true);
        assert_eq!(row["blob"]["encoded"], "AAH+/w==");
        assert_eq!(row["empty"], "");
        // Unicode is written as is, not as \u escapes.
        assert!(out.contains("héllo 🦀"));
        // Keys keep column order.
        assert!(out.find("\"big\"").unwrap() < out.find("\"real\"").unwrap());
    }

    #[test]
    fn json_of_no_rows_is_an_empty_array() {
        let out = render(Format::Json, &["a"], &[]);
        assert_eq!(out, "[]\n");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&out).unwrap(),
            serde_json::json!([])
        );
    }

    #[test]
    fn json_infinities_become_strings() {
        assert_eq!(
            json_value(&Value::Real(f64::INFINITY)),
            serde_json::json!("Inf")
        );
    }

    #[test]
    fn jsonl_is_one_object_per_line_with_unique_keys() {
        let out = render(
            Format::Jsonl,
            &["a", "a", "a_2"],
            &[
                vec![Value::Integer(1), Value::Integer(2), Value::Integer(3)],
                vec![Value::Null, text("x\ny"), Value::Real(-0.5)],
            ],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        let first: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(first, serde_json::json!({"a": 1, "a_2": 2, "a_2_2": 3}));
        let second: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(second["a_2"], "x\ny");
        assert_eq!(second["a_2_2"].as_f64(), Some(-0.5));
    }

    #[test]
    fn csv_follows_rfc4180() {
        let out = render(Format::Csv, &TRICKY_COLUMNS, &[tricky()]);
        assert_eq!(
            out,
            "n,big,real,uni,nl,quote,blob,empty\r\n\
             ,9007199254740993,1.0,héllo 🦀,\"two\nlines\",\"say \"\"hi\"\", ok\",X'0001FEFF',\"\"\r\n"
        );
    }

    #[test]
    fn csv_quotes_header_names_too() {
        let out = render(Format::Csv, &["a,b", "c\"d"], &[]);
        assert_eq!(out, "\"a,b\",\"c\"\"d\"\r\n");
    }

    #[test]
    fn tsv_escapes_like_postgres_copy() {
        let out = render(
            Format::Tsv,
            &["n", "t"],
            &[
                vec![Value::Null, text("a\tb\nc\\d\re")],
                vec![Value::Integer(-3), text("")],
            ],
        );
        assert_eq!(out, "n\tt\n\\N\ta\\tb\\nc\\\\d\\re\n-3\t\n");
    }

    #[test]
    fn markdown_escapes_pipes_and_newlines() {
        let out = render(
            Format::Markdown,
            &["a|b", "c"],
            &[
                vec![text("x|y\nz"), Value::Null],
                vec![Value::Real(2.5), Value::Blob(vec![171])],
            ],
        );
        assert_eq!(
            out,
            "| a\\|b | c |\n| --- | --- |\n| x\\|y<br>z | ∅ |\n| 2.5 | X'AB' |\n"
        );
    }

    #[test]
    fn one_line_shows_control_characters() {
        assert_eq!(one_line("a\r\nb\nc"), "a↵b↵c");
        assert_eq!(one_line("tab\there"), "tab␉here");
        assert_eq!(one_line("\u{1b}[31mred"), "␛[31mred");
        assert_eq!(one_line("plain"), "plain");
    }

    #[test]
    fn table_without_width_shows_everything_on_one_line_per_row() {
        let long = "x".repeat(300);
        let out = render_table(
            &["id".into(), "text".into()],
            &[
                vec![Value::Integer(7), text(&format!("{long}\nmore"))],
                vec![Value::Null, text("é")],
            ],
            TableOptions::default(),
        );
        assert!(out.contains(&format!("{long}↵more")), "{out}");
        assert!(out.contains(NULL_MARK));
        // Header, two rows and four rules.
        assert_eq!(out.lines().count(), 6, "{out}");
    }

    #[test]
    fn table_with_width_cuts_wide_cells_with_an_ellipsis() {
        let long = "y".repeat(300);
        let out = render_table(
            &["id".into(), "text".into()],
            &[vec![Value::Integer(1), text(&long)]],
            TableOptions {
                width: Some(40),
                color: false,
                ..TableOptions::default()
            },
        );
        for line in out.lines() {
            assert!(line.chars().count() <= 40, "{line:?} is wider than 40");
        }
        assert!(out.contains('…'), "{out}");
        assert_eq!(out.lines().count(), 5, "{out}");
    }

    /// `n` columns named `column_1`.. with one row of short values.
    fn many_columns(n: usize) -> (Vec<String>, Vec<Vec<Value>>) {
        let columns = (1..=n).map(|i| format!("column_{i}")).collect();
        let row = (1..=n).map(|i| Value::Integer(i as i64)).collect();
        (columns, vec![row])
    }

    fn at_width(width: u16) -> TableOptions {
        TableOptions {
            width: Some(width),
            ..TableOptions::default()
        }
    }

    #[test]
    fn a_table_too_wide_for_its_headers_is_drawn_as_records() {
        let (columns, rows) = many_columns(30);
        let out = render_table(&columns, &rows, at_width(100));
        for line in out.lines() {
            assert!(display_width(line) <= 100, "{line:?} is wider than 100");
        }
        for (i, name) in columns.iter().enumerate() {
            let line = format!("{name:<9} │ {}", i + 1);
            assert!(
                out.lines().any(|l| l == line),
                "{line:?} missing from\n{out}"
            );
        }
        assert!(out.starts_with("─[ row 1 ]─"), "{out}");
    }

    #[test]
    fn records_read_as_a_person_expects() {
        let columns = vec!["seq".to_string(), "prompt".into(), "session".into()];
        let rows = vec![
            vec![Value::Integer(7), text("fix the\nbug"), Value::Null],
            vec![Value::Integer(8), text(&"x".repeat(50)), text("s1")],
        ];
        insta::assert_snapshot!(render_records(&columns, &rows, 30, false), @r"
        ─[ row 1 ]────────────────────
        seq     │ 7
        prompt  │ fix the↵bug
        session │ ∅
        ─[ row 2 ]────────────────────
        seq     │ 8
        prompt  │ xxxxxxxxxxxxxxxxxxx…
        session │ s1
        ");
    }

    #[test]
    fn records_cut_wide_characters_by_the_columns_they_take() {
        let columns = vec!["t".to_string()];
        let rows = vec![vec![text(&"漢".repeat(20))]];
        let out = render_records(&columns, &rows, 16, false);
        let value = out.lines().nth(1).unwrap();
        assert_eq!(value, "t │ 漢漢漢漢漢…", "{out}");
        assert!(display_width(value) <= 16);
    }

    #[test]
    fn a_table_that_fits_readably_stays_a_table() {
        let (columns, rows) = many_columns(5);
        let out = render_table(&columns, &rows, at_width(100));
        assert!(out.lines().nth(1).unwrap().contains("column_5"), "{out}");
        // A long value is cut in a table as long as every column keeps ten columns.
        let columns = vec!["id".to_string(), "text".into()];
        let rows = vec![vec![Value::Integer(1), text(&"y".repeat(300))]];
        let out = render_table(&columns, &rows, at_width(19));
        assert!(out.starts_with('┌'), "{out}");
        assert!(out.contains("yyyyyyyyy…"), "{out}");
        let out = render_table(&columns, &rows, at_width(18));
        assert!(out.starts_with("─[ row 1 ]"), "{out}");
    }

    #[test]
    fn records_keep_something_of_each_value_and_no_rows_is_a_header() {
        let columns = vec!["a_very_long_column_name_indeed".to_string(), "b".into()];
        let rows = vec![vec![text("abcdefghijklmnop"), Value::Integer(1)]];
        let out = render_records(&columns, &rows, 10, false);
        let first = out.lines().nth(1).unwrap();
        assert!(first.ends_with("│ abcdefghi…"), "{out}");
        // A result of no rows too wide for a table says so, and lists its columns.
        let (columns, _) = many_columns(30);
        let out = render_table(&columns, &[], at_width(40));
        assert_eq!(out.lines().next(), Some("─[ no rows ]"), "{out}");
        assert_eq!(out.lines().nth(30), Some("column_30"), "{out}");
    }

    #[test]
    fn the_plain_reports_are_never_drawn_as_records() {
        let (columns, rows) = many_columns(30);
        let options = TableOptions {
            plain: true,
            ..at_width(100)
        };
        assert!(!render_table(&columns, &rows, options).contains("─[ row"));
    }

    #[test]
    fn table_dims_null_only_with_color() {
        let rows = [vec![Value::Null]];
        let plain = render_table(&["n".into()], &rows, TableOptions::default());
        assert!(!plain.contains('\u{1b}'));
        let colored = render_table(
            &["n".into()],
            &rows,
            TableOptions {
                width: None,
                color: true,
                ..TableOptions::default()
            },
        );
        assert!(colored.contains("\u{1b}[2m"), "{colored:?}");
    }

    #[test]
    fn unique_names_suffixes_repeats() {
        let names = unique_names(vec!["a".into(), "b".into(), "a".into(), "a".into()]);
        assert_eq!(names, ["a", "b", "a_2", "a_3"]);
    }
}
