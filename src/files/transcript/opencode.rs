//! OpenCode's own history: its SQLite store (`~/.local/share/opencode/opencode.db`, or
//! `$XDG_DATA_HOME/opencode/`; `opencode-<channel>.db` for its other release channels), read
//! read-only for `cmstore import`. OpenCode 1.18 keeps each message's fields as JSON in
//! `message.data`, without the message's and session's ids, which are columns; a session's
//! folder is `session.directory`. Written in WAL mode: what OpenCode wrote last may be in
//! `opencode.db-wal` beside it, which SQLite reads too.

use std::path::Path;

use serde_json::Value;

use crate::model::queue_line::usage::UsageRecord;
use crate::model::transcript::opencode::StoredMessage;

/// One assistant message (one model call) of OpenCode's store.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The message as OpenCode's `message.updated` event carries it: its `data` with `id` and
    /// `sessionID` put back.
    pub info: Value,
    /// The session's folder.
    pub cwd: Option<String>,
}

/// True when `path` is named as OpenCode's store: `opencode.db`, or `opencode-<channel>.db`,
/// in a folder named `opencode`.
pub fn is_store(path: &Path) -> bool {
    is_store_of(path, "opencode")
}

/// True when `path` is named as the store of Kilo (OpenCode's fork, the same store):
/// `kilo.db`, or `kilo-<channel>.db`, in a folder named `kilo`.
pub fn is_kilo_store(path: &Path) -> bool {
    is_store_of(path, "kilo")
}

/// True when `path` is `<name>.db` or `<name>-<channel>.db` in a folder named `name`.
fn is_store_of(path: &Path, name: &str) -> bool {
    let named = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
        n.strip_suffix(".db").is_some_and(|stem| {
            stem == name || stem.strip_prefix(name).is_some_and(|c| c.starts_with('-'))
        })
    });
    let in_folder = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == name);
    named && in_folder
}

/// Every assistant message of the store at `path`, oldest first. The store is opened
/// read-only (nothing of OpenCode's is written; a running OpenCode is not waited for longer
/// than a second).
pub fn assistant_messages(path: &Path) -> rusqlite::Result<Vec<Message>> {
    let conn = super::sqlite_store::open(path)?;
    let mut statement = conn.prepare(
        "SELECT m.id, m.session_id, m.data, s.directory FROM message m \
         LEFT JOIN session s ON s.id = m.session_id \
         WHERE json_valid(m.data) AND json_extract(m.data, '$.role') = 'assistant' \
         ORDER BY m.time_created, m.id",
    )?;
    let rows = statement.query_map([], |row| {
        let (id, session, data): (String, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        Ok((id, session, data, row.get::<_, Option<String>>(3)?))
    })?;
    let mut messages = Vec::new();
    for row in rows {
        let (id, session, data, cwd) = row?;
        let Ok(Value::Object(mut info)) = serde_json::from_str::<Value>(&data) else {
            continue;
        };
        info.insert("id".into(), Value::String(id));
        info.insert("sessionID".into(), Value::String(session));
        messages.push(Message {
            info: Value::Object(info),
            cwd,
        });
    }
    Ok(messages)
}

/// Every message of the store at `path` with its parts, grouped by session and oldest first
/// within one, for its turns ([`crate::model::transcript::opencode::turns`]); none from a
/// store without parts (an OpenCode before 1.18's tables).
pub fn messages_with_parts(path: &Path) -> rusqlite::Result<Vec<StoredMessage>> {
    let conn = super::sqlite_store::open(path)?;
    let has_parts = conn
        .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'part'")?
        .exists([])?;
    if !has_parts {
        return Ok(Vec::new());
    }
    let mut statement = conn.prepare(
        "SELECT m.id, m.session_id, m.data, m.time_created,
           (SELECT json_group_array(json(p.data)) FROM
              (SELECT data FROM part WHERE message_id = m.id AND json_valid(data)
               ORDER BY time_created, id) p)
         FROM message m WHERE json_valid(m.data)
         ORDER BY m.session_id, m.time_created, m.id",
    )?;
    let rows = statement.query_map([], |row| {
        Ok((
            row.get::<_, String>(0)?,
            row.get::<_, String>(1)?,
            row.get::<_, String>(2)?,
            row.get::<_, i64>(3)?,
            row.get::<_, Option<String>>(4)?,
        ))
    })?;
    let mut messages = Vec::new();
    for row in rows {
        let (id, session, data, created, parts) = row?;
        let parts = parts
            .and_then(|p| serde_json::from_str::<Vec<Value>>(&p).ok())
            .unwrap_or_default();
        messages.push(StoredMessage {
            id,
            session,
            data: serde_json::from_str(&data).unwrap_or(Value::Null),
            parts,
            created,
        });
    }
    Ok(messages)
}

/// Each session's own totals in the store at `path` (its `tokens_*` columns), as a record
/// without a model stored the way usage is (the reasoning inside the output); an error when
/// the store keeps none (an OpenCode without those columns).
pub fn session_totals(path: &Path) -> rusqlite::Result<Vec<(String, UsageRecord)>> {
    let conn = super::sqlite_store::open(path)?;
    let mut statement = conn.prepare(
        "SELECT id, tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, \
         tokens_cache_write FROM session",
    )?;
    let rows = statement.query_map([], |row| {
        let n = |i: usize| row.get::<_, i64>(i).map(|v| v.max(0) as u64);
        Ok((
            row.get::<_, String>(0)?,
            UsageRecord {
                message_id: String::new(),
                input: n(1)?,
                output: n(2)?.saturating_add(n(3)?),
                cache_read: n(4)?,
                cache_write: n(5)?,
                ..UsageRecord::default()
            },
        ))
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_known_by_its_name_and_folder() {
        assert!(is_store(Path::new("/h/.local/share/opencode/opencode.db")));
        assert!(is_store(Path::new(
            "/h/.local/share/opencode/opencode-beta.db"
        )));
        assert!(!is_store(Path::new(
            "/h/.local/share/opencode/opencode.db-wal"
        )));
        assert!(!is_store(Path::new("/h/elsewhere/opencode.db")));
        assert!(!is_store(Path::new("/h/.local/share/opencode/other.db")));
        assert!(!is_store(Path::new(
            "/h/.local/share/opencode/opencodex.db"
        )));
        assert!(is_kilo_store(Path::new("/h/.local/share/kilo/kilo.db")));
        assert!(is_kilo_store(Path::new(
            "/h/.local/share/kilo/kilo-nightly.db"
        )));
        assert!(!is_kilo_store(Path::new(
            "/h/.local/share/opencode/opencode.db"
        )));
        assert!(!is_kilo_store(Path::new(
            "/h/.local/share/kilo/kilocode.db"
        )));
    }
}
