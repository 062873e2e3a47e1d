//! Reading what can still be read of a `cmstore.toml` that is not valid TOML.
//!
//! The toml crate rejects a whole document for one bad line, and a configuration that falls
//! back to its defaults turns enforce into audit. So a document that fails is read again
//! statement by statement: each key/value statement (with the header of the table it is in)
//! is parsed on its own, and one that fails costs only its own lines.
//!
//! Where a statement ends is found the way TOML finds it: at the end of the line on which
//! every bracket (`[`, `{`) it opened is closed and no multi-line string (`"""`, `'''`) is
//! open, strings and comments being skipped. So a multi-line array or string is parsed, or
//! dropped, as a whole. A statement whose bracket or string is never closed costs only its
//! first line: what follows is read on its own, which is what the author most likely meant.
//! A table header that does not parse costs its whole section: the keys under it belong to
//! a table nobody can name.
//!
//! What TOML forbids but is still readable statement by statement (a key set twice, a table
//! defined twice) is merged and reported: for a key set twice the first value applies, except
//! for `mode`, where `enforce` wins (the safety gate must not go quiet because of a
//! duplicate).

use std::collections::HashMap;

use toml::{Table, Value};

/// The readable statements of `text` merged into one table, and what could not be read, in
/// the order of the lines (each message starts with its line numbers). `whole` is the error
/// the document as a whole failed with; it is reported when no statement is to blame.
pub(super) fn recover(text: &str, whole: &toml::de::Error) -> (Table, Vec<String>) {
    // A byte-order mark is allowed only at the start of a document, not of each statement.
    let lines: Vec<&str> = text
        .strip_prefix('\u{feff}')
        .unwrap_or(text)
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut reader = Reader {
        lines: &lines,
        table: Table::new(),
        first_line: HashMap::new(),
        problems: Vec::new(),
        dropped: None,
        section: Section::Top,
    };
    reader.read();
    if reader.problems.is_empty() {
        let line = whole
            .span()
            .map(|span| line_of(text, span.start))
            .unwrap_or(1);
        reader.problems.push(format!(
            "line {line}: not valid TOML ({}); each setting was read on its own",
            one_line(whole.message())
        ));
    }
    (reader.table, reader.problems)
}

/// The table the statements being read belong to.
enum Section {
    /// Before the first header.
    Top,
    /// Under a `[name]` header: its line, and the table's dotted name.
    Table { header: String, name: String },
    /// Under a `[[name]]` header: cmstore has no array of tables, so its statements are
    /// skipped (the array itself is kept, to be reported as an unknown setting).
    ArrayOfTables,
    /// Under a header that does not parse: its statements are dropped with it.
    Broken,
}

/// A run of lines dropped together: one problem.
struct Dropped {
    first: usize,
    last: usize,
    message: String,
}

struct Reader<'a> {
    lines: &'a [&'a str],
    table: Table,
    /// The line (1-based) on which each dotted key was first set.
    first_line: HashMap<String, usize>,
    problems: Vec<String>,
    dropped: Option<Dropped>,
    section: Section,
}

impl Reader<'_> {
    fn read(&mut self) {
        let mut i = 0;
        while i < self.lines.len() {
            let trimmed = self.lines[i].trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                i += 1;
                continue;
            }
            if trimmed.starts_with('[') {
                self.header(i);
                i += 1;
                continue;
            }
            let (last, closed) = statement_end(self.lines, i);
            match self.section {
                Section::Broken => {
                    if let Some(run) = self.dropped.as_mut() {
                        run.last = last;
                    }
                    i = last + 1;
                    continue;
                }
                Section::ArrayOfTables => {
                    i = last + 1;
                    continue;
                }
                Section::Top | Section::Table { .. } => {}
            }
            let header = match &self.section {
                Section::Table { header, .. } => header.as_str(),
                _ => "",
            };
            if !closed {
                // Only its first line: the rest is read statement by statement.
                let why = format!("{header}\n{}\n", self.lines[i])
                    .parse::<Table>()
                    .err()
                    .map(|e| one_line(e.message()))
                    .unwrap_or_else(|| "never closed".to_string());
                self.drop_statement(i, i, &why);
                i += 1;
                continue;
            }
            let chunk = self.lines[i..=last].join("\n");
            match format!("{header}\n{chunk}\n").parse::<Table>() {
                Ok(parsed) => {
                    self.flush();
                    self.merge(parsed, i + 1);
                }
                Err(err) => self.drop_statement(i, last, &one_line(err.message())),
            }
            i = last + 1;
        }
        self.flush();
    }

    /// A line starting with `[` where a statement would start: a table header.
    fn header(&mut self, i: usize) {
        self.flush();
        let line = self.lines[i];
        match line.parse::<Table>() {
            Ok(parsed) => {
                if line.trim_start().starts_with("[[") {
                    self.section = Section::ArrayOfTables;
                } else {
                    self.section = Section::Table {
                        header: line.to_string(),
                        name: dotted_name(&parsed),
                    };
                }
                // The table exists even when nothing under it can be read.
                self.merge(parsed, i + 1);
            }
            Err(err) => {
                self.section = Section::Broken;
                self.dropped = Some(Dropped {
                    first: i,
                    last: i,
                    message: format!(
                        "table header {:?} is not valid TOML ({}); the settings under it are \
                         ignored",
                        line.trim(),
                        one_line(err.message())
                    ),
                });
            }
        }
    }

    /// Drops the statement on lines `first..=last` (0-based), joining it to the run of
    /// dropped lines just before it, if any (blank lines and comments between them aside).
    fn drop_statement(&mut self, first: usize, last: usize, why: &str) {
        if let Some(run) = self.dropped.as_mut() {
            let between = &self.lines[run.last + 1..first];
            if between.iter().all(|l| {
                let t = l.trim_start();
                t.is_empty() || t.starts_with('#')
            }) {
                run.last = last;
                return;
            }
        }
        self.flush();
        let key = key_of(self.lines[first]);
        let label = match (&self.section, key) {
            (Section::Table { name, .. }, Some(key)) => format!("{name}.{key}: "),
            (Section::Table { name, .. }, None) => format!("in [{name}]: "),
            (_, Some(key)) => format!("{key}: "),
            (_, None) => String::new(),
        };
        let mut message = format!("{label}not valid TOML ({why}); ignored");
        if matches!(self.section, Section::Top) && key == Some("mode") {
            message.push_str(
                "; mode falls back to audit: the safety gate only audits until this line is fixed",
            );
        }
        self.dropped = Some(Dropped {
            first,
            last,
            message,
        });
    }

    /// Reports the run of dropped lines, if any.
    fn flush(&mut self) {
        if let Some(run) = self.dropped.take() {
            let lines = if run.first == run.last {
                format!("line {}", run.first + 1)
            } else {
                format!("lines {}-{}", run.first + 1, run.last + 1)
            };
            self.problems.push(format!("{lines}: {}", run.message));
        }
    }

    /// Merges a statement's table (set on 1-based `line`) into what was read so far.
    fn merge(&mut self, parsed: Table, line: usize) {
        let mut path = Vec::new();
        let mut conflicts = Vec::new();
        merge_into(
            &mut self.table,
            parsed,
            &mut path,
            line,
            &mut self.first_line,
            &mut conflicts,
        );
        for (name, enforce_won) in conflicts {
            let first = first_line_of(&self.first_line, &name);
            let applies = if enforce_won {
                "the stricter, enforce, applies"
            } else {
                "the first applies"
            };
            self.problems.push(format!(
                "line {line}: {name} is set again (first on line {first}); TOML allows a key \
                 once: {applies}"
            ));
        }
    }
}

/// Merges `from` into `into`; each key set in both (other than two tables, merged) is a
/// conflict: `(dotted name, whether the new value replaced the old one)`.
fn merge_into(
    into: &mut Table,
    from: Table,
    path: &mut Vec<String>,
    line: usize,
    first_line: &mut HashMap<String, usize>,
    conflicts: &mut Vec<(String, bool)>,
) {
    for (key, value) in from {
        path.push(key.clone());
        let name = path.join(".");
        match (into.get_mut(&key), value) {
            (None, value) => {
                first_line.entry(name).or_insert(line);
                into.insert(key, value);
            }
            (Some(Value::Table(existing)), Value::Table(table)) => {
                merge_into(existing, table, path, line, first_line, conflicts);
            }
            (Some(Value::Array(existing)), Value::Array(items))
                if is_array_of_tables(existing) && is_array_of_tables(&items) =>
            {
                existing.extend(items);
            }
            (Some(existing), value) => {
                let enforce = |v: &Value| {
                    v.as_str()
                        .is_some_and(|s| s.trim().eq_ignore_ascii_case("enforce"))
                };
                let enforce_wins = name == "mode" && enforce(&value) && !enforce(existing);
                if enforce_wins {
                    *existing = value;
                }
                conflicts.push((name, enforce_wins));
            }
        }
        path.pop();
    }
}

fn is_array_of_tables(items: &[Value]) -> bool {
    !items.is_empty() && items.iter().all(Value::is_table)
}

/// The line on which `name`, or the nearest table around it, was first set.
fn first_line_of(first_line: &HashMap<String, usize>, name: &str) -> usize {
    let mut name = name;
    loop {
        if let Some(line) = first_line.get(name) {
            return *line;
        }
        match name.rsplit_once('.') {
            Some((parent, _)) => name = parent,
            None => return 0,
        }
    }
}

/// The dotted name of the table a header alone parses to (`[a.b]`: `{a = {b = {}}}`).
fn dotted_name(parsed: &Table) -> String {
    let mut names = Vec::new();
    let mut table = parsed;
    while let Some((key, value)) = table.iter().next() {
        names.push(key.as_str());
        match value {
            Value::Table(inner) => table = inner,
            _ => break,
        }
    }
    names.join(".")
}

/// The key a statement's first line sets, as written (before the first `=` outside quotes),
/// when there is one.
fn key_of(line: &str) -> Option<&str> {
    let mut quote = None;
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '=') => {
                let key = line[..at].trim();
                return (!key.is_empty() && key.len() <= 64).then_some(key);
            }
            (None, '#') => return None,
            _ => {}
        }
    }
    None
}

/// Where the key/value statement starting on line `start` ends: the index of its last line,
/// and whether everything it opened was closed (`false`: it ran to the end of the text).
fn statement_end(lines: &[&str], start: usize) -> (usize, bool) {
    let mut depth = 0usize;
    // The quote of the multi-line string open at the end of the previous line.
    let mut multi_line: Option<u8> = None;
    for (n, line) in lines.iter().enumerate().skip(start) {
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if let Some(q) = multi_line {
                if q == b'"' && bytes[i] == b'\\' {
                    i += 2;
                } else if bytes[i..].starts_with(&[q; 3]) {
                    // Up to two quotes just before the closing three are content.
                    let run = bytes[i..].iter().take(5).take_while(|b| **b == q).count();
                    i += run;
                    multi_line = None;
                } else {
                    i += 1;
                }
                continue;
            }
            match bytes[i] {
                b'#' => break,
                q @ (b'"' | b'\'') if bytes[i..].starts_with(&[q; 3]) => {
                    multi_line = Some(q);
                    i += 3;
                }
                q @ (b'"' | b'\'') => {
                    // A one-line string ends at its quote, or (not valid) at the line's end.
                    i += 1;
                    while i < bytes.len() {
                        if q == b'"' && bytes[i] == b'\\' {
                            i += 2;
                            continue;
                        }
                        i += 1;
                        if bytes[i - 1] == q {
                            break;
                        }
                    }
                }
                b'[' | b'{' => {
                    depth += 1;
                    i += 1;
                }
                b']' | b'}' => {
                    depth = depth.saturating_sub(1);
                    i += 1;
                }
                _ => i += 1,
            }
        }
        if depth == 0 && multi_line.is_none() {
            return (n, true);
        }
    }
    (lines.len().saturating_sub(1), false)
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// `message` on one line (the toml crate's messages can span several).
fn one_line(message: &str) -> String {
    message.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_end_where_toml_ends_them() {
        let lines = [
            "a = [",             // 0
            "  \"]\", # ]",      // 1
            "  { x = '[' },",    // 2
            "]",                 // 3
            "s = \"\"\"",        // 4
            "[not a header]",    // 5
            "\\\"\"\" \"\"\"\"", // 6: an escaped quote, then `""""` (a quote and the end)
            "t = '''x'''",       // 7
            "u = [",             // 8
        ];
        assert_eq!(statement_end(&lines, 0), (3, true));
        assert_eq!(statement_end(&lines, 4), (6, true));
        assert_eq!(statement_end(&lines, 7), (7, true));
        assert_eq!(statement_end(&lines, 8), (8, false));
    }

    #[test]
    fn a_byte_order_mark_and_crlf_line_ends_are_read_as_toml_reads_them() {
        let text = "\u{feff}mode = \"enforce\"\r\nretention_days = x\r\n[safety]\r\nremove = [\r\n  \"dd\",\r\n]\r\n";
        let err = text.parse::<Table>().unwrap_err();
        let (table, problems) = recover(text, &err);
        assert_eq!(table["mode"].as_str(), Some("enforce"));
        assert_eq!(table["safety"]["remove"][0].as_str(), Some("dd"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with("line 2: retention_days"),
            "{problems:?}"
        );
    }

    #[test]
    fn keys_are_read_up_to_the_first_bare_equals_sign() {
        assert_eq!(key_of("mode = \"enforce\""), Some("mode"));
        assert_eq!(key_of("\"a=b\" = 1"), Some("\"a=b\""));
        assert_eq!(key_of("oops not toml"), None);
        assert_eq!(key_of("# x = 1"), None);
    }
}
