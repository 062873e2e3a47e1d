//! The tables `cmstore push` mirrors, column by column, and the rows it carries between the
//! two stores: read from SQLite, shaped by the content profile, written to PostgreSQL as one
//! array per column (`INSERT … SELECT … FROM unnest(…)`, one statement per table and batch).

use std::fmt::Write as _;

use postgres::types::ToSql;
use rusqlite::types::ValueRef;
use sha2::{Digest, Sha256};

use crate::config::push::Content;
use crate::model::redact::Redactor;

/// How a column's values are carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number (`bigint` on the server).
    Int,
    /// A number with a fraction (`double precision` on the server).
    Real,
    /// Text that is never a prompt, an answer or a tool's input or output.
    Text,
    /// Text the content profile decides about: dropped under `none`, redacted again under
    /// `redacted`, as stored under `full`.
    Content,
    /// A working directory: under `none` only its last component, the project's name (a
    /// path names its user and their folders: `/home/ana/clients/acme/app`); whole otherwise.
    Path,
}

/// One column: its name on both sides, the local expression that reads it, and its kind.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub local: &'static str,
    pub kind: Kind,
}

const fn col(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        local: name,
        kind,
    }
}

/// What a row that is already on the server becomes when it is pushed again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnConflict {
    /// It stays: the row cannot change (a queue line).
    Keep,
    /// It takes the new values (a derived row that grows as events arrive).
    Replace,
}

/// One mirrored table.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    /// The row's own key; the server's is `machine_id` and these.
    pub key: &'static [&'static str],
    pub columns: &'static [Column],
    /// Whether each row carries the machine's user and team labels.
    pub labelled: bool,
    /// Whether each row carries the content profile it was pushed under (`content`, team
    /// migration 0010): `verify --store` checks a row by it.
    pub profiled: bool,
    /// A column filled with the SHA-256 (hex) of another's text, before the profile applies.
    pub digest_of: Option<(&'static str, &'static str)>,
    pub on_conflict: OnConflict,
}

use Kind::{Content as C, Int as I, Path as P, Real as R, Text as T};

pub const EVENTS: Table = Table {
    name: "events",
    key: &["id"],
    columns: &[
        col("id", T),
        col("seq", I),
        col("ts", I),
        col("hook_type", T),
        col("event", T),
        col("agent", T),
        col("session_id", T),
        col("tool_name", T),
        col("tool_call_id", T),
        col("turn_id", T),
        col("model", T),
        col("cwd", P),
        col("origin", T),
        col("actor_name", T),
        col("actor_type", T),
        col("delegated_agent", T),
        col("synthetic", I),
        col("prompt", C),
        col("response", C),
        col("tool_result_type", T),
        col("duration_ms", I),
        col("size_bytes", I),
        col("estimated_tokens", I),
        col("producer", T),
        col("risk", T),
        col("decision", T),
        col("entry", C),
    ],
    labelled: true,
    profiled: true,
    digest_of: None,
    on_conflict: OnConflict::Keep,
};

pub const SESSIONS: Table = Table {
    name: "sessions",
    key: &["session_id"],
    columns: &[
        col("session_id", T),
        col("agent", T),
        col("model", T),
        col("cwd", P),
        col("first_seen", I),
        col("last_seen", I),
        col("events", I),
        col("prompts", I),
        col("tool_uses", I),
        col("tool_failures", I),
        col("stops", I),
        col("estimated_tokens", I),
        col("ended", I),
        col("ended_at", I),
    ],
    labelled: true,
    profiled: false,
    digest_of: None,
    on_conflict: OnConflict::Replace,
};

pub const TURNS: Table = Table {
    name: "turns",
    key: &["session_id", "turn_key"],
    columns: &[
        col("session_id", T),
        col("turn_key", T),
        col("turn_id", T),
        col("ts", I),
        col("hook_type", T),
        col("prompt", C),
        col("response", C),
        col("tool_call_count", I),
        col("synthetic", I),
        col("event_id", T),
        col("model", T),
        col("outcome", T),
        col("thinking", C),
        col("feedback", C),
        col("imported", I),
    ],
    labelled: false,
    profiled: false,
    digest_of: None,
    on_conflict: OnConflict::Replace,
};

pub const TOOL_CALLS: Table = Table {
    name: "tool_calls",
    key: &["session_id", "call_key"],
    columns: &[
        Column {
            name: "session_id",
            local: "coalesce(session_id, '')",
            kind: T,
        },
        col("call_key", T),
        col("tool_call_id", T),
        col("tool_name", T),
        col("ts", I),
        col("start_ts", I),
        col("end_ts", I),
        col("duration_ms", I),
        col("success", I),
        col("result_type", T),
        col("pre_event_id", T),
        col("post_event_id", T),
        col("outcome", T),
        col("input", C),
        Column {
            name: "input_digest",
            local: "NULL",
            kind: T,
        },
        col("risk", T),
        col("decision", T),
        col("delegated_agent", T),
        col("permission_mode", T),
        // Read where the call's lines are (team migration 0005): a lookup per call.
        Column {
            name: "decided_by",
            local: "(SELECT d.decided_by FROM v_tool_call_decisions d \
                     WHERE d.call_rowid = tool_calls.rowid)",
            kind: T,
        },
    ],
    labelled: false,
    profiled: false,
    digest_of: Some(("input", "input_digest")),
    on_conflict: OnConflict::Replace,
};

pub const USAGE: Table = Table {
    name: "usage",
    key: &["message_id", "request_id"],
    columns: &[
        col("message_id", T),
        col("request_id", T),
        Column {
            name: "session_id",
            local: "coalesce(session_id, '')",
            kind: T,
        },
        col("agent", T),
        col("turn_id", T),
        col("subagent_id", T),
        col("sidechain", I),
        col("model", T),
        col("ts", I),
        col("input_tokens", I),
        col("output_tokens", I),
        col("cache_write_tokens", I),
        col("cache_write_1h_tokens", I),
        col("cache_read_tokens", I),
        col("reasoning_tokens", I),
        col("premium_requests", R),
        col("service_tier", T),
        col("origin", T),
    ],
    labelled: true,
    profiled: false,
    digest_of: None,
    on_conflict: OnConflict::Replace,
};

/// A `CheckResult` event's figures, read out of its queue line (which `none` does not send):
/// team migration 0003. The findings' text and the check's output stay behind.
pub const CHECK_RESULTS: Table = Table {
    name: "check_results",
    key: &["event_id"],
    columns: &[
        Column {
            name: "event_id",
            local: "id",
            kind: T,
        },
        col("ts", I),
        col("session_id", T),
        col("agent", T),
        col("cwd", P),
        Column {
            name: "check_name",
            local: "json_extract(entry, '$.check.name')",
            kind: T,
        },
        Column {
            name: "status",
            local: "json_extract(entry, '$.check.status')",
            kind: T,
        },
        Column {
            name: "mode",
            local: "json_extract(entry, '$.check.mode')",
            kind: T,
        },
        Column {
            name: "blocked",
            local: "coalesce(json_extract(entry, '$.check.blocked'), 0)",
            kind: I,
        },
        Column {
            name: "findings",
            local: "coalesce(json_array_length(entry, '$.check.findings'), 0)",
            kind: I,
        },
        Column {
            name: "duration_ms",
            local: "json_extract(entry, '$.check.durationMs')",
            kind: I,
        },
    ],
    labelled: true,
    profiled: false,
    digest_of: None,
    on_conflict: OnConflict::Keep,
};

/// The machine's chain records (team migration 0008), body and hash in lowercase hex: pushed
/// in their order and never replaced, so that `verify --store` checks the server's rows
/// against the chain as the machine wrote it.
pub const CHAIN: Table = Table {
    name: "chain",
    key: &["id"],
    columns: &[
        col("id", I),
        col("kind", T),
        col("seq_from", I),
        col("seq_to", I),
        col("ts_max", I),
        Column {
            name: "body",
            local: "lower(hex(body))",
            kind: T,
        },
        Column {
            name: "hash",
            local: "lower(hex(hash))",
            kind: T,
        },
    ],
    labelled: false,
    profiled: false,
    digest_of: None,
    on_conflict: OnConflict::Keep,
};

/// The values of one column, in row order.
#[derive(Debug, Clone, PartialEq)]
enum Values {
    Int(Vec<Option<i64>>),
    Real(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
}

/// Rows of one table, column by column, shaped for the server.
#[derive(Debug)]
pub struct Rows {
    table: &'static Table,
    columns: Vec<Values>,
    len: usize,
}

/// How text is shaped on its way out.
pub struct Profile<'a> {
    pub content: Content,
    pub redactor: &'a Redactor,
}

impl Profile<'_> {
    fn shape(&self, text: Option<String>) -> Option<String> {
        match self.content {
            Content::None => None,
            Content::Full => text,
            Content::Redacted => text.map(|t| self.redactor.redact(&t).into_owned()),
        }
    }

    fn shape_path(&self, path: Option<String>) -> Option<String> {
        match self.content {
            Content::None => path.map(|p| crate::support::human::project(&p).to_string()),
            Content::Full | Content::Redacted => path,
        }
    }
}

impl Rows {
    /// No rows of `table`.
    pub fn new(table: &'static Table) -> Rows {
        let columns = table
            .columns
            .iter()
            .map(|c| match c.kind {
                Kind::Int => Values::Int(Vec::new()),
                Kind::Real => Values::Real(Vec::new()),
                Kind::Text | Kind::Content | Kind::Path => Values::Text(Vec::new()),
            })
            .collect();
        Rows {
            table,
            columns,
            len: 0,
        }
    }

    /// The whole-number values of the column `name`, NULLs left out.
    pub fn ints(&self, name: &str) -> impl Iterator<Item = i64> + '_ {
        let at = self.table.columns.iter().position(|c| c.name == name);
        let values = match at.map(|at| &self.columns[at]) {
            Some(Values::Int(values)) => values.as_slice(),
            _ => &[],
        };
        values.iter().flatten().copied()
    }

    /// The text values of the column `name`, NULLs left out.
    pub fn texts(&self, name: &str) -> impl Iterator<Item = &str> {
        let at = self.table.columns.iter().position(|c| c.name == name);
        let values = match at.map(|at| &self.columns[at]) {
            Some(Values::Text(values)) => values.as_slice(),
            _ => &[],
        };
        values.iter().filter_map(|v| v.as_deref())
    }

    /// The table's name.
    pub fn table_name(&self) -> &'static str {
        self.table.name
    }

    /// How many rows.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The local `SELECT` list of the table's columns.
    pub fn select_list(table: &Table) -> String {
        let list: Vec<&str> = table.columns.iter().map(|c| c.local).collect();
        list.join(", ")
    }

    /// Appends the rows a statement that selects [`Rows::select_list`] returns, shaped by
    /// `profile`.
    pub fn read(
        &mut self,
        stmt: &mut rusqlite::Statement<'_>,
        params: impl rusqlite::Params,
        profile: &Profile<'_>,
    ) -> rusqlite::Result<()> {
        let mut rows = stmt.query(params)?;
        while let Some(row) = rows.next()? {
            let mut digest = None;
            for (i, column) in self.table.columns.iter().enumerate() {
                let value = row.get_ref(i)?;
                match (&mut self.columns[i], column.kind) {
                    (Values::Int(v), _) => v.push(int_of(value)),
                    (Values::Real(v), _) => v.push(real_of(value)),
                    (Values::Text(v), Kind::Content) => {
                        let text = text_of(value);
                        if self
                            .table
                            .digest_of
                            .is_some_and(|(from, _)| from == column.name)
                        {
                            digest = text.as_deref().map(sha256_hex);
                        }
                        v.push(profile.shape(text));
                    }
                    (Values::Text(v), Kind::Path) => v.push(profile.shape_path(text_of(value))),
                    (Values::Text(v), _) => v.push(text_of(value)),
                }
            }
            if let Some((_, to)) = self.table.digest_of {
                let at = self.table.columns.iter().position(|c| c.name == to);
                if let Some(Values::Text(v)) = at.map(|at| &mut self.columns[at]) {
                    *v.last_mut().expect("a value per row") = digest;
                }
            }
            self.len += 1;
        }
        Ok(())
    }

    /// The statement that writes the rows on the server, and its parameters: the machine id,
    /// the labels when the table carries them, then one array per column.
    pub fn insert<'a>(
        &'a self,
        machine: &'a (dyn ToSql + Sync),
        labels: [&'a (dyn ToSql + Sync); 2],
        content: &'a (dyn ToSql + Sync),
    ) -> (String, Vec<&'a (dyn ToSql + Sync)>) {
        let table = self.table;
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![machine];
        let mut names = vec!["machine_id"];
        let mut select = vec!["$1".to_string()];
        if table.labelled {
            params.extend(labels);
            names.extend(["user_label", "team_label"]);
            select.extend(["$2".to_string(), "$3".to_string()]);
        }
        if table.profiled {
            params.push(content);
            names.push("content");
            select.push(format!("${}", params.len()));
        }
        let mut arrays = Vec::new();
        for (column, values) in table.columns.iter().zip(&self.columns) {
            names.push(column.name);
            let (param, kind): (&(dyn ToSql + Sync), &str) = match values {
                Values::Int(v) => (v, "bigint[]"),
                Values::Real(v) => (v, "double precision[]"),
                Values::Text(v) => (v, "text[]"),
            };
            params.push(param);
            arrays.push(format!("${}::{kind}", params.len()));
        }
        select.push("u.*".to_string());
        let mut sql = format!(
            "INSERT INTO {} ({}) SELECT {} FROM unnest({}) AS u ON CONFLICT (machine_id, {}) ",
            table.name,
            names.join(", "),
            select.join(", "),
            arrays.join(", "),
            table.key.join(", ")
        );
        match table.on_conflict {
            OnConflict::Keep => sql.push_str("DO NOTHING"),
            OnConflict::Replace => {
                sql.push_str("DO UPDATE SET ");
                let updates: Vec<String> = names
                    .iter()
                    .filter(|n| **n != "machine_id" && !table.key.contains(n))
                    .map(|n| format!("{n} = EXCLUDED.{n}"))
                    .collect();
                sql.push_str(&updates.join(", "));
            }
        }
        (sql, params)
    }
}

fn int_of(value: ValueRef<'_>) -> Option<i64> {
    match value {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) => Some(f as i64),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

fn real_of(value: ValueRef<'_>) -> Option<f64> {
    match value {
        ValueRef::Integer(i) => Some(i as f64),
        ValueRef::Real(f) => Some(f),
        ValueRef::Text(t) => std::str::from_utf8(t).ok()?.trim().parse().ok(),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

fn text_of(value: ValueRef<'_>) -> Option<String> {
    match value {
        ValueRef::Null => None,
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    }
}

/// The SHA-256 of `text`, in lower-case hex.
pub fn sha256_hex(text: &str) -> String {
    let mut hex = String::with_capacity(64);
    for byte in Sha256::digest(text.as_bytes()) {
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(table: &'static Table, sql: &str, content: Content) -> Rows {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let redactor = Redactor::new(&["corp-[0-9]{6}".to_string()]);
        let profile = Profile {
            content,
            redactor: &redactor,
        };
        let mut rows = Rows::new(table);
        let mut stmt = conn.prepare(sql).unwrap();
        rows.read(&mut stmt, [], &profile).unwrap();
        rows
    }

    const CALL: &str = "SELECT 's1', 'k1', 'c1', 'Bash', 5, 5, 9, 4, 1, NULL, 'p', 'q', \
                        'succeeded', 'echo corp-123456', NULL, NULL, NULL, NULL, 'default', \
                        'settings'";

    #[test]
    fn a_working_directory_is_its_project_under_none_and_whole_otherwise() {
        // A session's row: its columns in order, the directory fourth.
        let row: Vec<String> = SESSIONS
            .columns
            .iter()
            .map(|c| match (c.name, c.kind) {
                ("cwd", _) => "'C:\\Users\\ana\\clients\\acme\\app\\'".to_string(),
                (_, Kind::Int) => "1".to_string(),
                _ => "'x'".to_string(),
            })
            .collect();
        let sql = format!("SELECT {}", row.join(", "));
        let cwd = SESSIONS
            .columns
            .iter()
            .position(|c| c.name == "cwd")
            .unwrap();
        for (content, want) in [
            (Content::None, "app"),
            (Content::Redacted, "C:\\Users\\ana\\clients\\acme\\app\\"),
            (Content::Full, "C:\\Users\\ana\\clients\\acme\\app\\"),
        ] {
            let rows = read(&SESSIONS, &sql, content);
            assert_eq!(
                rows.columns[cwd],
                Values::Text(vec![Some(want.to_string())]),
                "{content:?}"
            );
        }
    }

    #[test]
    fn each_profile_shapes_the_text_and_the_digest_is_always_sent() {
        let digest = sha256_hex("echo corp-123456");
        for (content, input) in [
            (Content::None, None),
            (Content::Redacted, Some("echo [REDACTED]".to_string())),
            (Content::Full, Some("echo corp-123456".to_string())),
        ] {
            let rows = read(&TOOL_CALLS, CALL, content);
            assert_eq!(rows.len(), 1);
            let at = |name: &str| {
                TOOL_CALLS
                    .columns
                    .iter()
                    .position(|c| c.name == name)
                    .unwrap()
            };
            let Values::Text(got) = &rows.columns[at("input")] else {
                panic!()
            };
            match (&input, &got[0]) {
                (Some(want), Some(got)) if content == Content::Redacted => {
                    assert!(
                        !got.contains("123456") && got.starts_with("echo "),
                        "{got} {want}"
                    )
                }
                _ => assert_eq!(got[0], input, "{content:?}"),
            }
            assert_eq!(
                rows.columns[at("input_digest")],
                Values::Text(vec![Some(digest.clone())])
            );
            assert_eq!(
                rows.columns[at("tool_name")],
                Values::Text(vec![Some("Bash".into())])
            );
            assert_eq!(rows.columns[at("duration_ms")], Values::Int(vec![Some(4)]));
            // Who decided the call is a verdict, not content: sent under every profile.
            assert_eq!(
                rows.columns[at("decided_by")],
                Values::Text(vec![Some("settings".into())])
            );
        }
    }

    #[test]
    fn the_insert_names_every_column_and_the_key_decides_the_conflict() {
        let rows = Rows::new(&EVENTS);
        let machine = "m".to_string();
        let label: Option<String> = None;
        let (sql, params) = rows.insert(&machine, [&label, &label], &label);
        // The machine, its two labels and the row's content profile, then a column each.
        assert_eq!(params.len(), 4 + EVENTS.columns.len());
        assert!(sql.starts_with(
            "INSERT INTO events (machine_id, user_label, team_label, content, id, seq"
        ));
        assert!(sql.contains("SELECT $1, $2, $3, $4, u.*"), "{sql}");
        assert!(
            sql.contains("FROM unnest($5::text[], $6::bigint[]"),
            "{sql}"
        );
        assert!(
            sql.ends_with("ON CONFLICT (machine_id, id) DO NOTHING"),
            "{sql}"
        );
        let rows = Rows::new(&TURNS);
        let (sql, params) = rows.insert(&machine, [&label, &label], &label);
        assert_eq!(params.len(), 1 + TURNS.columns.len());
        assert!(sql.contains("ON CONFLICT (machine_id, session_id, turn_key) DO UPDATE SET turn_id = EXCLUDED.turn_id"), "{sql}");
        assert!(!sql.contains("session_id = EXCLUDED"), "{sql}");
    }
}
