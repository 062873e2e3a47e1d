//! The chain over the tables not derived from the queue's lines (docs/verify.md): `usage` (an
//! import's rows are read from the agents' own files, and a response's row is upserted as
//! its counts grow) and the OTLP receiver's `otel_logs` and `otel_metrics`.
//!
//! Their rows are found by key, not by a `seq` that only grows, and may change in place, so
//! they are chained by what cmstore did to each: a record of such a table's kind lists, for
//! every row a transaction inserted, updated or deleted, a digest of its key and a digest of
//! the row as the transaction left it (zeros for a row it deleted). The latest listing of a key
//! is what the row must be. `verify` replays the listings and compares every row.
//!
//! What a connection changed is gathered without a word from the code that changes it:
//! [`watch`] gives every connection cmstore writes through `TEMP` triggers that note each
//! changed key in a `TEMP` table, and [`flush`], in the writer's transaction, turns the notes
//! into one record per table. A change made through another connection (the sqlite3 CLI) is
//! noted by nothing, and `verify` names it. Rows stored before the chain covered these tables
//! (migration 0035) are taken in as they were then, by [`adopt`], once.

use std::collections::HashMap;

use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use super::{Problem, Verified, DIGEST_LEN};

/// A table chained by key: its name (also its records' kind), its key columns and the columns
/// a row's digest covers, in this order.
///
/// A migration that adds a column to one of these tables must not change a list: rows listed
/// before would no longer match. It must add a kind of its own (`usage/2`) with the longer
/// list, and teach verify to read each row by the kind that listed it last.
pub struct Table {
    /// The table, and the kind of its records.
    pub name: &'static str,
    key: &'static [&'static str],
    columns: &'static [&'static str],
}

/// The tables chained by key.
pub const TABLES: &[Table] = &[
    Table {
        name: "usage",
        key: &["message_id", "request_id"],
        columns: &[
            "message_id",
            "request_id",
            "session_id",
            "agent",
            "turn_id",
            "subagent_id",
            "sidechain",
            "model",
            "ts",
            "input_tokens",
            "output_tokens",
            "cache_write_tokens",
            "cache_write_1h_tokens",
            "cache_read_tokens",
            "service_tier",
            "line_offset",
            "origin",
            "reasoning_tokens",
            "premium_requests",
        ],
    },
    Table {
        name: "otel_logs",
        key: &["record_key"],
        columns: &[
            "record_key",
            "ts",
            "event_name",
            "session_id",
            "prompt_id",
            "service_name",
            "severity",
            "body",
            "attributes",
            "resource",
            "received_at",
        ],
    },
    Table {
        name: "otel_metrics",
        key: &["point_key"],
        columns: &[
            "point_key",
            "ts",
            "name",
            "unit",
            "kind",
            "value",
            "count",
            "session_id",
            "service_name",
            "attributes",
            "resource",
            "received_at",
        ],
    },
];

/// Bytes of one listing: the key's digest, then the row's (zeros: deleted).
const LISTING_LEN: usize = 2 * DIGEST_LEN;

/// The row digest of a deleted row.
const DELETED: [u8; DIGEST_LEN] = [0; DIGEST_LEN];

/// A digest of key or row values: SHA-256 over each value's type and bytes, its first
/// [`DIGEST_LEN`] bytes.
fn digest_values(values: &[ValueRef<'_>]) -> [u8; DIGEST_LEN] {
    let mut h = Sha256::new();
    for value in values {
        match value {
            ValueRef::Null => h.update([0]),
            ValueRef::Integer(i) => {
                h.update([1]);
                h.update(i.to_le_bytes());
            }
            ValueRef::Real(f) => {
                h.update([2]);
                h.update(f.to_bits().to_le_bytes());
            }
            ValueRef::Text(bytes) | ValueRef::Blob(bytes) => {
                h.update([if matches!(value, ValueRef::Text(_)) {
                    3
                } else {
                    4
                }]);
                h.update((bytes.len() as u64).to_le_bytes());
                h.update(bytes);
            }
        }
    }
    let full = h.finalize();
    let mut out = [0; DIGEST_LEN];
    out.copy_from_slice(&full[..DIGEST_LEN]);
    out
}

impl Table {
    /// `SELECT <key columns>, <columns> FROM <table>`, with `filter` after it.
    fn select(&self, filter: &str) -> String {
        format!(
            "SELECT {}, {} FROM {} {filter}",
            self.key.join(", "),
            self.columns.join(", "),
            self.name
        )
    }

    /// The key's and the row's digests of a row read by [`Table::select`].
    fn digests(&self, r: &rusqlite::Row<'_>) -> rusqlite::Result<Listed> {
        let n = self.key.len();
        let values = (0..n + self.columns.len())
            .map(|i| r.get_ref(i))
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(Listed {
            key: digest_values(&values[..n]),
            row: digest_values(&values[n..]),
        })
    }

    /// The key of a row read by [`Table::select`], as text for a person (only a problem's row
    /// needs it).
    fn shown_key(&self, r: &rusqlite::Row<'_>) -> rusqlite::Result<String> {
        let mut parts = Vec::new();
        for i in 0..self.key.len() {
            match r.get_ref(i)? {
                ValueRef::Text(t) if !t.is_empty() => {
                    parts.push(String::from_utf8_lossy(t).into_owned())
                }
                ValueRef::Integer(i) => parts.push(i.to_string()),
                _ => {}
            }
        }
        Ok(parts.join(" "))
    }
}

/// One row's digests, as listed or as stored.
struct Listed {
    key: [u8; DIGEST_LEN],
    row: [u8; DIGEST_LEN],
}

/// Gives `conn` the `TEMP` triggers that note each key of a chained table it changes, once
/// the store is migrated that far (a new database's first connection is set up before its
/// migrations). Again on a watched connection: nothing.
pub fn watch(conn: &Connection) -> rusqlite::Result<()> {
    if !is_migrated(conn)? {
        return Ok(());
    }
    if is_watched(conn)? {
        return Ok(());
    }
    // A plain table, noted into as cheaply as a row can be: a key noted twice is read once at
    // the flush (DISTINCT). No key constraint: in a trigger an upsert's own conflict clause
    // would override an `OR IGNORE`.
    let mut sql = String::from("CREATE TEMP TABLE chain_pending (tbl TEXT NOT NULL, k1, k2);");
    for t in TABLES {
        let keys = |row: &str| {
            let mut k: Vec<String> = t.key.iter().map(|c| format!("{row}.{c}")).collect();
            k.resize(2, "''".into());
            k.join(", ")
        };
        let note = |row: &str| {
            format!(
                "INSERT INTO chain_pending VALUES ('{}', {});",
                t.name,
                keys(row)
            )
        };
        let differ = |columns: &[&str]| {
            columns
                .iter()
                .map(|c| format!("old.{c} IS NOT new.{c}"))
                .collect::<Vec<_>>()
                .join(" OR ")
        };
        // An upsert that changes nothing (an import read again) is no change to chain; a
        // changed key (cmstore changes none) is the old key's deletion too.
        sql.push_str(&format!(
            "CREATE TEMP TRIGGER chain_{t}_insert AFTER INSERT ON {t}
               BEGIN {new} END;
             CREATE TEMP TRIGGER chain_{t}_update AFTER UPDATE ON {t}
               WHEN {changed} BEGIN {new} END;
             CREATE TEMP TRIGGER chain_{t}_rekey AFTER UPDATE OF {key_list} ON {t}
               WHEN {rekeyed} BEGIN {old} END;
             CREATE TEMP TRIGGER chain_{t}_delete AFTER DELETE ON {t}
               BEGIN {old} END;",
            t = t.name,
            new = note("new"),
            old = note("old"),
            changed = differ(t.columns),
            rekeyed = differ(t.key),
            key_list = t.key.join(", "),
        ));
    }
    conn.execute_batch(&sql)
}

/// Chains what this connection changed in the chained tables since the last flush: one
/// record per table, in the caller's transaction (before its commit). Nothing when it
/// changed nothing. A connection of a migrated store that was never [`watch`]ed is an error:
/// what it changed would be named as an intruder's.
pub fn flush(conn: &Connection) -> rusqlite::Result<()> {
    let pending = conn
        .prepare_cached("SELECT DISTINCT tbl FROM temp.chain_pending")
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        });
    let pending = match pending {
        Ok(tables) => tables,
        Err(rusqlite::Error::SqliteFailure(_, Some(why)))
            if why.contains("no such table") && !is_migrated(conn)? =>
        {
            // A store before migration 0035 (a test's, or one being migrated): nothing chained.
            return Ok(());
        }
        Err(err) => return Err(err),
    };
    for t in TABLES
        .iter()
        .filter(|t| pending.iter().any(|p| p == t.name))
    {
        flush_table(conn, t)?;
    }
    if !pending.is_empty() {
        conn.prepare_cached("DELETE FROM temp.chain_pending")?
            .execute([])?;
    }
    Ok(())
}

/// The migration from which the tables are chained by key (0035), their columns as
/// [`TABLES`] lists them.
const SINCE_VERSION: i64 = 35;

/// Whether `conn` is [`watch`]ed: it has its table of notes.
pub fn is_watched(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM temp.sqlite_master WHERE name = 'chain_pending'")?
        .exists([])
}

/// Whether the store is at [`SINCE_VERSION`] or later (and no newer than this cmstore knows:
/// such a store is refused before anything is written).
fn is_migrated(conn: &Connection) -> rusqlite::Result<bool> {
    let version = crate::store::schema_version(conn)?;
    Ok((SINCE_VERSION..=crate::store::MIGRATIONS.len() as i64).contains(&version))
}

/// One record of what this connection changed of `t`.
fn flush_table(conn: &Connection, t: &Table) -> rusqlite::Result<()> {
    let mut body = Vec::new();
    let mut keys =
        conn.prepare_cached("SELECT DISTINCT k1, k2 FROM temp.chain_pending WHERE tbl = ?1")?;
    let filter = t
        .key
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{c} = ?{}", i + 1))
        .collect::<Vec<_>>()
        .join(" AND ");
    let mut row = conn.prepare_cached(&t.select(&format!("WHERE {filter}")))?;
    let mut noted = keys.query([t.name])?;
    while let Some(k) = noted.next()? {
        let key: Vec<Value> = (0..t.key.len())
            .map(|i| k.get(i))
            .collect::<rusqlite::Result<_>>()?;
        let now = row
            .query_row(rusqlite::params_from_iter(key.iter()), |r| t.digests(r))
            .optional()?;
        let key_refs: Vec<ValueRef<'_>> = key.iter().map(ValueRef::from).collect();
        body.extend_from_slice(&digest_values(&key_refs));
        body.extend_from_slice(&now.map_or(DELETED, |l| l.row));
    }
    if body.is_empty() {
        return Ok(());
    }
    super::append_listings(conn, t.name, &body)
}

/// Once, when migration 0035 asked for it (`meta.chain_keyed_adopt`): lists every row the
/// chained tables hold as it is, in one transaction of its own, and notes when
/// (`meta.chain_keyed_since`). Two processes opening the store at once adopt once.
pub fn adopt(conn: &mut Connection) -> rusqlite::Result<()> {
    if !adoption_pending(conn)? {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    if !adoption_pending(&tx)? {
        return Ok(());
    }
    for t in TABLES {
        let mut body = Vec::new();
        let mut stmt = tx.prepare(&t.select(""))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let l = t.digests(r)?;
            body.extend_from_slice(&l.key);
            body.extend_from_slice(&l.row);
        }
        if !body.is_empty() {
            super::append_listings(&tx, t.name, &body)?;
        }
    }
    tx.execute("DELETE FROM meta WHERE key = 'chain_keyed_adopt'", [])?;
    tx.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES ('chain_keyed_since', ?1)",
        [crate::support::clock::now_ms()],
    )?;
    tx.commit()
}

/// Whether migration 0035's adoption is still to be done (a process that migrated the store
/// stopped before it).
pub fn adoption_pending(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare("SELECT 1 FROM meta WHERE key = 'chain_keyed_adopt'")?
        .exists([])
}

/// The listings of a record's body: key digest, row digest.
fn listings(body: &[u8]) -> impl Iterator<Item = ([u8; DIGEST_LEN], [u8; DIGEST_LEN])> + '_ {
    body.chunks_exact(LISTING_LEN).map(|c| {
        let (mut key, mut row) = ([0; DIGEST_LEN], [0; DIGEST_LEN]);
        key.copy_from_slice(&c[..DIGEST_LEN]);
        row.copy_from_slice(&c[DIGEST_LEN..]);
        (key, row)
    })
}

/// What the records of `kind` with ids in `ids` say each key must be: the latest listing.
fn replay(
    conn: &Connection,
    kind: &str,
    ids: (i64, i64),
) -> rusqlite::Result<HashMap<[u8; DIGEST_LEN], [u8; DIGEST_LEN]>> {
    let mut latest = HashMap::new();
    let mut stmt = conn
        .prepare("SELECT body FROM chain WHERE kind = ?1 AND id BETWEEN ?2 AND ?3 ORDER BY id")?;
    let mut rows = stmt.query(params![kind, ids.0, ids.1])?;
    while let Some(r) = rows.next()? {
        latest.extend(listings(&r.get::<_, Vec<u8>>(0)?));
    }
    Ok(latest)
}

/// Before a prune deletes the records up to `last_gone`: every key they list that no later
/// record lists again, as they list it, but deletions, to list again once they are gone
/// ([`carry`]): such a row must still be what they said.
pub(super) fn to_carry(conn: &Connection, last_gone: i64) -> rusqlite::Result<Vec<Carried>> {
    let mut carried = Vec::new();
    for t in TABLES {
        let mut latest = replay(conn, t.name, (i64::MIN, last_gone))?;
        // What a later record lists again is not carried: read them until none is left.
        let mut later =
            conn.prepare("SELECT body FROM chain WHERE kind = ?1 AND id > ?2 ORDER BY id")?;
        let mut bodies = later.query(params![t.name, last_gone])?;
        while !latest.is_empty() {
            let Some(r) = bodies.next()? else { break };
            for (key, _) in listings(&r.get::<_, Vec<u8>>(0)?) {
                latest.remove(&key);
            }
        }
        if latest.is_empty() {
            continue;
        }
        let mut body: Vec<u8> = Vec::with_capacity(latest.len() * LISTING_LEN);
        let mut kept: Vec<_> = latest.into_iter().filter(|(_, r)| *r != DELETED).collect();
        kept.sort_unstable();
        for (key, row) in kept {
            body.extend_from_slice(&key);
            body.extend_from_slice(&row);
        }
        carried.push(Carried { kind: t.name, body });
    }
    Ok(carried)
}

/// Listings a prune carries past the records it deletes.
pub(super) struct Carried {
    kind: &'static str,
    body: Vec<u8>,
}

/// Chains the listings [`to_carry`] kept, after the prune's record.
pub(super) fn carry(conn: &Connection, carried: &[Carried]) -> rusqlite::Result<()> {
    for c in carried.iter().filter(|c| !c.body.is_empty()) {
        super::append_listings(conn, c.kind, &c.body)?;
    }
    Ok(())
}

/// Checks every row of the chained tables against its latest listing: a row listed as
/// something else was altered, a listed row that is gone (and no deletion was listed) was
/// removed, a row no listing names (or listed as deleted) was inserted. In memory: the
/// latest listing of each key ever listed, deletions included (about 80 bytes a key).
pub(super) fn verify(conn: &Connection, out: &mut Verified) -> rusqlite::Result<()> {
    for t in TABLES {
        let mut latest = replay(conn, t.name, (i64::MIN, i64::MAX))?;
        let mut stmt = conn.prepare(&t.select(""))?;
        let mut rows = stmt.query([])?;
        let mut verified = 0;
        while let Some(r) = rows.next()? {
            let stored = t.digests(r)?;
            match latest.remove(&stored.key) {
                Some(row) if row == stored.row => verified += 1,
                Some(row) if row != DELETED => out.problem(Problem::KeyedAltered {
                    table: t.name,
                    key: t.shown_key(r)?,
                }),
                _ => out.problem(Problem::KeyedInserted {
                    table: t.name,
                    key: t.shown_key(r)?,
                }),
            }
        }
        let mut removed: Vec<_> = latest
            .into_iter()
            .filter(|(_, row)| *row != DELETED)
            .map(|(key, _)| key)
            .collect();
        removed.sort_unstable();
        for key in removed {
            out.problem(Problem::KeyedRemoved {
                table: t.name,
                key: super::hex(&key),
            });
        }
        out.rows += verified;
        *out.by_table.entry(t.name).or_default() += verified;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A migrated store, and a connection that writes through the chain's triggers.
    fn store() -> (tempfile::TempDir, crate::store::Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("k.db")).unwrap();
        (dir, store)
    }

    fn usage_row(conn: &Connection, id: &str, output: i64) {
        conn.execute(
            "INSERT INTO usage(message_id, output_tokens, origin) VALUES (?1, ?2, 'import')
             ON CONFLICT(message_id, request_id) DO UPDATE SET output_tokens = excluded.output_tokens",
            params![id, output],
        )
        .unwrap();
    }

    fn verified(conn: &Connection) -> Verified {
        super::super::verify(conn).unwrap()
    }

    /// Each change a watched connection makes is chained at its flush: an insert, an upsert
    /// that changes the row, a delete. Changes through an unwatched connection are named.
    #[test]
    fn what_cmstore_changed_checks_and_what_else_changed_is_named() {
        let (dir, store) = store();
        let mut conn = store.conn().unwrap();
        let tx = conn.transaction().unwrap();
        usage_row(&tx, "m1", 10);
        usage_row(&tx, "m2", 20);
        usage_row(&tx, "m3", 30);
        flush(&tx).unwrap();
        tx.commit().unwrap();
        let tx = conn.transaction().unwrap();
        usage_row(&tx, "m1", 11);
        tx.execute("DELETE FROM usage WHERE message_id = 'm3'", [])
            .unwrap();
        flush(&tx).unwrap();
        tx.commit().unwrap();
        let v = verified(&conn);
        assert_eq!((v.by_table["usage"], v.problem_count), (2, 0), "{v:?}");

        // Another connection, as the sqlite3 CLI would: no trigger notes what it does.
        let other = Connection::open(dir.path().join("k.db")).unwrap();
        other
            .execute(
                "UPDATE usage SET output_tokens = 1 WHERE message_id = 'm1'",
                [],
            )
            .unwrap();
        other
            .execute("DELETE FROM usage WHERE message_id = 'm2'", [])
            .unwrap();
        other
            .execute(
                "INSERT INTO usage(message_id, origin) VALUES ('m3', 'hook'), ('m4', 'hook')",
                [],
            )
            .unwrap();
        let v = verified(&conn);
        let said: Vec<String> = v.problems.iter().map(ToString::to_string).collect();
        assert_eq!(v.problem_count, 4, "{said:?}");
        assert!(
            said.contains(&"usage row m1 was altered".to_string()),
            "{said:?}"
        );
        assert!(said.contains(&"usage row m3 was inserted, not by cmstore".to_string()));
        assert!(said.contains(&"usage row m4 was inserted, not by cmstore".to_string()));
        assert!(
            said.iter()
                .any(|s| s.starts_with("a usage row (key ") && s.ends_with(") was removed")),
            "{said:?}"
        );
    }

    /// Rows a store held before the chain covered its tables are taken in once, as they are.
    #[test]
    fn rows_from_before_are_adopted_once() {
        let (_dir, store) = store();
        let mut conn = store.conn().unwrap();
        // As an older cmstore left them: stored, listed by nothing.
        conn.execute_batch("DROP TRIGGER temp.chain_usage_insert")
            .unwrap();
        usage_row(&conn, "old", 5);
        assert_eq!(verified(&conn).problem_count, 1);
        conn.execute(
            "INSERT INTO meta(key, value) VALUES ('chain_keyed_adopt', 0)",
            [],
        )
        .unwrap();
        adopt(&mut conn).unwrap();
        adopt(&mut conn).unwrap();
        let v = verified(&conn);
        assert_eq!((v.by_table["usage"], v.problem_count), (1, 0), "{v:?}");
        let records: i64 = conn
            .query_row("SELECT count(*) FROM chain WHERE kind = 'usage'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(records, 1);
    }

    /// A prune that deletes the records listing rows still stored lists them again after its
    /// own record, as they were listed (an edit made before still shows).
    #[test]
    fn a_prune_carries_what_its_deleted_records_listed() {
        let (dir, store) = store();
        let mut conn = store.conn().unwrap();
        let tx = conn.transaction().unwrap();
        usage_row(&tx, "kept", 1);
        usage_row(&tx, "edited", 2);
        usage_row(&tx, "gone", 3);
        tx.execute(
            "INSERT INTO events(id, ts, entry, ingested_at) VALUES ('e', 1, '{}', 0)",
            [],
        )
        .unwrap();
        let mut links = super::super::Links::default();
        links.push(
            tx.last_insert_rowid(),
            1,
            &super::super::row_digest("e", 1, "{}"),
        );
        links.append(&tx).unwrap();
        flush(&tx).unwrap();
        tx.commit().unwrap();
        let tx = conn.transaction().unwrap();
        tx.execute("DELETE FROM usage WHERE message_id = 'gone'", [])
            .unwrap();
        flush(&tx).unwrap();
        tx.commit().unwrap();
        Connection::open(dir.path().join("k.db"))
            .unwrap()
            .execute(
                "UPDATE usage SET output_tokens = 9 WHERE message_id = 'edited'",
                [],
            )
            .unwrap();
        conn.execute("DELETE FROM events", []).unwrap();
        super::super::note_prune(&conn, 10).unwrap();
        let left: Vec<String> = conn
            .prepare("SELECT kind FROM chain ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(left, ["prune", "usage"], "the emptied records went");
        let v = verified(&conn);
        let said: Vec<String> = v.problems.iter().map(ToString::to_string).collect();
        assert_eq!(said, ["usage row edited was altered"], "{v:?}");
        assert_eq!(v.by_table["usage"], 1);
    }
}
