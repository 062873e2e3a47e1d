//! Goose's own history: its SQLite store, `sessions.db` in `<data>/sessions/`
//! (`$GOOSE_PATH_ROOT/data`, else `$XDG_DATA_HOME/goose` or `~/.local/share/goose`; on Windows
//! `%APPDATA%\Block\goose\data`), read read-only for `cmstore import`. Written in WAL mode:
//! what Goose wrote last may be in `sessions.db-wal` beside it, which SQLite reads too. The
//! rows become turns, calls and usage in [`crate::model::transcript::goose`].

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::model::transcript::goose::{cache_exclusive, Message, Session};

/// True when `path` is named as Goose's store: `sessions.db` in a `sessions` folder, under a
/// folder named `goose` or in `$GOOSE_PATH_ROOT`.
pub fn is_store(path: &Path) -> bool {
    let named =
        |p: Option<&Path>, name: &str| p.and_then(Path::file_name).is_some_and(|n| n == name);
    named(Some(path), "sessions.db")
        && named(path.parent(), "sessions")
        && (path.ancestors().any(|dir| named(Some(dir), "goose"))
            || crate::support::env::path("GOOSE_PATH_ROOT")
                .is_some_and(|root| path.starts_with(root)))
}

/// Goose's store where it keeps it on this machine (whether it exists or not):
/// `$GOOSE_PATH_ROOT/data/sessions/sessions.db`, else under `$XDG_DATA_HOME/goose` or
/// `~/.local/share/goose` (Linux and macOS), or `%APPDATA%\Block\goose\data` (Windows).
pub fn store(home: Option<&Path>) -> Option<PathBuf> {
    let env = crate::support::env::path;
    let data = match env("GOOSE_PATH_ROOT") {
        Some(root) => root.join("data"),
        None if cfg!(windows) => env("APPDATA")?.join("Block").join("goose").join("data"),
        None => env("XDG_DATA_HOME")
            .or_else(|| home.map(|h| h.join(".local").join("share")))?
            .join("goose"),
    };
    Some(data.join("sessions").join("sessions.db"))
}

/// Every message of the store at `path`, grouped by session and in each session's order.
pub fn messages(path: &Path) -> rusqlite::Result<Vec<Message>> {
    let conn = super::sqlite_store::open(path)?;
    let mut statement = conn.prepare(
        "SELECT id, message_id, session_id, role, content_json, metadata_json,
                created_timestamp
         FROM messages ORDER BY session_id, id",
    )?;
    let json = |text: Option<String>| {
        text.and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .unwrap_or(Value::Null)
    };
    let rows = statement.query_map([], |row| {
        Ok(Message {
            row: row.get(0)?,
            id: row.get(1)?,
            session: row.get(2)?,
            role: row.get(3)?,
            content: json(row.get(4)?),
            metadata: json(row.get(5)?),
            created: row.get::<_, i64>(6)?.saturating_mul(1000),
        })
    })?;
    rows.collect()
}

/// Every session of the store at `path`: its folder, the model it asked for, Goose's totals.
pub fn sessions(path: &Path) -> rusqlite::Result<Vec<Session>> {
    let conn = super::sqlite_store::open(path)?;
    let mut statement = conn.prepare(
        "SELECT id, working_dir, json_extract(model_config_json, '$.model_name'),
                accumulated_input_tokens, accumulated_output_tokens,
                accumulated_cache_read_tokens, accumulated_cache_write_tokens
         FROM sessions WHERE json_valid(coalesce(model_config_json, '{}'))",
    )?;
    let rows = statement.query_map([], |row| {
        let count = |n: usize| -> rusqlite::Result<Option<u64>> {
            Ok(row.get::<_, Option<i64>>(n)?.map(|v| v.max(0) as u64))
        };
        let (input, output, read, write) = (count(3)?, count(4)?, count(5)?, count(6)?);
        let totals = (input.is_some() || output.is_some()).then(|| {
            cache_exclusive(
                input.unwrap_or(0),
                output.unwrap_or(0),
                read.unwrap_or(0),
                write.unwrap_or(0),
            )
        });
        Ok(Session {
            id: row.get(0)?,
            cwd: row.get::<_, Option<String>>(1)?.filter(|d| !d.is_empty()),
            model: row.get(2)?,
            totals,
        })
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn goose_stores_are_told_by_their_place() {
        assert!(is_store(Path::new(
            "/home/me/.local/share/goose/sessions/sessions.db"
        )));
        assert!(is_store(Path::new(
            "/c/Users/me/AppData/Roaming/Block/goose/data/sessions/sessions.db"
        )));
        assert!(!is_store(Path::new("/srv/app/sessions/sessions.db")));
        assert!(!is_store(Path::new(
            "/home/me/.local/share/goose/sessions/other.db"
        )));
    }

    #[test]
    fn the_store_and_its_rows_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("goose/sessions/sessions.db");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, working_dir TEXT NOT NULL,
               model_config_json TEXT, accumulated_input_tokens INTEGER,
               accumulated_output_tokens INTEGER, accumulated_cache_read_tokens INTEGER,
               accumulated_cache_write_tokens INTEGER);
             CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT,
               session_id TEXT NOT NULL, role TEXT NOT NULL, content_json TEXT NOT NULL,
               created_timestamp INTEGER NOT NULL, metadata_json TEXT);
             INSERT INTO sessions VALUES ('20261208_1', '/w', '{\"model_name\":\"m\"}',
               240, 14, 40, 10);
             INSERT INTO messages (message_id, session_id, role, content_json,
               created_timestamp, metadata_json)
             VALUES ('msg_1', '20261208_1', 'user', '[{\"type\":\"text\",\"text\":\"hi\"}]',
               1796689504, NULL);",
        )
        .unwrap();
        drop(conn);
        let sessions = sessions(&path).unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(
            (sessions[0].cwd.as_deref(), sessions[0].model.as_deref()),
            (Some("/w"), Some("m"))
        );
        let totals = sessions[0].totals.clone().unwrap();
        assert_eq!(
            (
                totals.input,
                totals.output,
                totals.cache_read,
                totals.cache_write
            ),
            (190, 14, 40, 10)
        );
        let messages = messages(&path).unwrap();
        assert_eq!(messages[0].created, 1_796_689_504_000);
        assert_eq!(messages[0].content[0]["text"], "hi");
        assert_eq!(messages[0].metadata, Value::Null);
    }
}
