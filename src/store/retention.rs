//! What automatic retention did, kept in `meta` for `cmstore status`: the last run of the
//! retention a running ingest applies ([`crate::write::prune::auto`]).

use std::time::Duration;

use rusqlite::Connection;

/// What one automatic run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    /// When it ran, epoch ms.
    pub at_ms: i64,
    /// Its cutoff, epoch ms.
    pub cutoff_ms: i64,
    /// Rows deleted, every table together.
    pub rows: u64,
    /// Of which events.
    pub events: u64,
    /// Transcript cursors removed.
    pub cursors: u64,
    /// Queue lines dropped by compaction (0 when it is off or did not run).
    pub queue_lines: u64,
    /// Their bytes.
    pub queue_bytes: u64,
    /// How long it took.
    pub took: Duration,
    /// Why the queue was not compacted although the policy asks for it (another compaction
    /// ran, or it failed: the next run tries again).
    pub compaction_skipped: Option<String>,
}

/// The `meta` keys a run is recorded under, in [`Run`]'s order.
pub const KEYS: [&str; 7] = [
    "auto_retention_at",
    "auto_retention_cutoff",
    "auto_retention_rows",
    "auto_retention_events",
    "auto_retention_cursors",
    "auto_retention_queue_lines",
    "auto_retention_ms",
];

/// Keeps `run` in `meta` for `cmstore status`.
pub fn record(conn: &Connection, run: &Run) -> rusqlite::Result<()> {
    let values = [
        run.at_ms,
        run.cutoff_ms,
        run.rows as i64,
        run.events as i64,
        run.cursors as i64,
        run.queue_lines as i64,
        run.took.as_millis() as i64,
    ];
    let mut stmt = conn.prepare(
        "INSERT INTO meta(key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
    )?;
    for (key, value) in KEYS.iter().zip(values) {
        stmt.execute(rusqlite::params![key, value])?;
    }
    Ok(())
}

/// The last automatic run, from `meta`'s `(key, value)` pairs (any order, other keys
/// ignored); `None` when no run was recorded.
pub fn last_run(pairs: impl IntoIterator<Item = (String, i64)>) -> Option<Run> {
    let mut values = [None; KEYS.len()];
    for (key, value) in pairs {
        if let Some(i) = KEYS.iter().position(|k| *k == key) {
            values[i] = Some(value);
        }
    }
    let get = |i: usize| values[i].unwrap_or(0);
    let count = |i: usize| u64::try_from(get(i)).unwrap_or(0);
    values[0]?;
    Some(Run {
        at_ms: get(0),
        cutoff_ms: get(1),
        rows: count(2),
        events: count(3),
        cursors: count(4),
        queue_lines: count(5),
        took: Duration::from_millis(count(6)),
        ..Run::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_run_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("cmstore.db")).unwrap();
        let conn = store.conn().unwrap();
        let read = |conn: &Connection| {
            let mut stmt = conn.prepare("SELECT key, value FROM meta").unwrap();
            let pairs: Vec<(String, i64)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            last_run(pairs)
        };
        assert_eq!(read(&conn), None);
        let run = Run {
            at_ms: 10,
            cutoff_ms: 5,
            rows: 7,
            events: 4,
            cursors: 1,
            queue_lines: 3,
            took: Duration::from_millis(12),
            ..Run::default()
        };
        record(&conn, &run).unwrap();
        assert_eq!(read(&conn), Some(run.clone()));
        record(&conn, &Run { rows: 0, ..run }).unwrap();
        assert_eq!(read(&conn).unwrap().rows, 0);
    }
}
