//! Opening an agent's SQLite store (OpenCode's, Goose's) for `cmstore import`; apart from the
//! rest of `files::transcript`, which the hook path uses and which opens no database.

use std::path::Path;

use rusqlite::{Connection, OpenFlags};

/// Opens the store at `path` read-only: nothing of the agent's is written, and a running agent
/// is not waited for longer than a second.
pub(super) fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(1))?;
    Ok(conn)
}
