//! The record's chain: tamper evidence for `events` (docs/verify.md).
//!
//! Each ingest batch that stores rows appends one `chain` record in its own transaction: for
//! every row it stored, its `seq`, its `ts` and a digest of what the row records (its `id`,
//! `ts` and `entry`, the whole line, from which every other column is derived); and the
//! record's hash, SHA-256 over the previous record's hash, its kind and its body. The last
//! hash, the head, therefore stands for every row ever chained: `verify` recomputes the chain
//! and each row's digest, and names the first row altered, removed or inserted since.
//!
//! Prune removes old rows; the rows a record lists that are gone and older than the prune's
//! cutoff are pruned, not removed. Once every row of the oldest records is gone, prune deletes
//! those records and appends a `prune` record naming the cutoff and the last deleted record
//! (its id and hash, the anchor): the chain then starts after the anchor, and the anchor is
//! itself in the chain, under the head. A head kept elsewhere (`verify --head`) proves the
//! whole chain up to it: rewriting it, even consistently, changes the head.
//!
//! Rows stored before the chain began (migration 0029) are not covered, and are counted so.
//!
//! The tables not derived from the lines (`usage`, the OTLP receiver's) are chained by key, as
//! [`keyed`] says.

pub mod keyed;

use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

pub use crate::model::queue_line::parse::hex;

/// Bytes of a row's digest kept in a record (the first 16 of its SHA-256).
pub const DIGEST_LEN: usize = 16;

/// Bytes of one row in a `rows` record: `seq`, `ts` (each 8, little-endian), digest.
const ROW_LEN: usize = 8 + 8 + DIGEST_LEN;

/// A chain hash (SHA-256).
pub type Hash = [u8; 32];

/// The hash before the first record.
pub const GENESIS: Hash = [0; 32];

/// A record's kind, as stored and as hashed.
pub const ROWS: &str = "rows";
/// The kind of a prune's record.
pub const PRUNE: &str = "prune";

/// The digest of a stored row: SHA-256 over its `id`, `ts` and `entry`, each length-prefixed.
pub fn row_digest(id: &str, ts: i64, entry: &str) -> [u8; DIGEST_LEN] {
    let mut h = Sha256::new();
    h.update((id.len() as u64).to_le_bytes());
    h.update(id.as_bytes());
    h.update(ts.to_le_bytes());
    h.update((entry.len() as u64).to_le_bytes());
    h.update(entry.as_bytes());
    let full = h.finalize();
    let mut out = [0; DIGEST_LEN];
    out.copy_from_slice(&full[..DIGEST_LEN]);
    out
}

/// The rows one batch stored, gathered for its record.
#[derive(Debug, Default)]
pub struct Links {
    body: Vec<u8>,
    /// The first and last `seq` listed.
    seqs: Option<(i64, i64)>,
    ts_max: Option<i64>,
}

impl Links {
    /// Adds the row stored as `seq`, whose [`row_digest`] is `digest`.
    pub fn push(&mut self, seq: i64, ts: i64, digest: &[u8; DIGEST_LEN]) {
        self.body.extend_from_slice(&seq.to_le_bytes());
        self.body.extend_from_slice(&ts.to_le_bytes());
        self.body.extend_from_slice(digest);
        self.seqs = Some((self.seqs.map_or(seq, |s| s.0), seq));
        self.ts_max = self.ts_max.max(Some(ts));
    }

    /// Appends the batch's record to the chain (in the batch's transaction); nothing when it
    /// stored no row.
    pub fn append(&self, conn: &Connection) -> rusqlite::Result<()> {
        match self.seqs {
            Some(seqs) => {
                let record = Record {
                    kind: ROWS,
                    body: &self.body,
                    seqs: Some(seqs),
                    ts_max: self.ts_max,
                };
                append(conn, record, None)
            }
            None => Ok(()),
        }
    }
}

/// Appends a record of `kind` (a [`keyed`] table's) listing `body`, in the caller's transaction.
fn append_listings(conn: &Connection, kind: &str, body: &[u8]) -> rusqlite::Result<()> {
    let record = Record {
        kind,
        body,
        seqs: None,
        ts_max: None,
    };
    append(conn, record, None)
}

/// The chain's last record: its id and hash.
pub fn head(conn: &Connection) -> rusqlite::Result<Option<(i64, Hash)>> {
    conn.prepare_cached("SELECT id, hash FROM chain ORDER BY id DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, to_hash(&r.get::<_, Vec<u8>>(1)?))))
        .optional()
}

/// A record one batch's rows (`seqs`, `ts_max`) or a prune wrote, linked to the last record;
/// to `anchor` when the chain has none left (a prune just deleted them all). Its id follows
/// the one it is linked to, given explicitly: after such a delete SQLite would give the
/// first id again, and the chain would no longer follow from its anchor.
struct Record<'b> {
    kind: &'b str,
    body: &'b [u8],
    seqs: Option<(i64, i64)>,
    ts_max: Option<i64>,
}

fn append(
    conn: &Connection,
    record: Record<'_>,
    anchor: Option<(i64, Hash)>,
) -> rusqlite::Result<()> {
    let (last_id, prev) = match head(conn)? {
        Some(last) => last,
        None => anchor.unwrap_or((0, GENESIS)),
    };
    let hash = link(&prev, record.kind, record.body);
    conn.prepare_cached(
        "INSERT INTO chain(id, kind, seq_from, seq_to, ts_max, body, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        last_id + 1,
        record.kind,
        record.seqs.map(|s| s.0),
        record.seqs.map(|s| s.1),
        record.ts_max,
        record.body,
        &hash[..]
    ])?;
    Ok(())
}

/// A record's hash: SHA-256 over the previous hash, the kind and the body.
pub fn link(prev: &Hash, kind: &str, body: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update(prev);
    h.update((kind.len() as u64).to_le_bytes());
    h.update(kind.as_bytes());
    h.update(body);
    h.finalize().into()
}

/// `bytes` as a hash (zeros when they are not 32 bytes).
pub fn to_hash(bytes: &[u8]) -> Hash {
    let mut out = GENESIS;
    if bytes.len() == out.len() {
        out.copy_from_slice(bytes);
    }
    out
}

/// After prune deleted the rows older than `cutoff_ms`: deletes the oldest records none of
/// whose rows is left, and appends a `prune` record with the cutoff, where the chain began and
/// the anchor (the last deleted record, or the earlier anchor), in one transaction of the
/// caller's.
pub fn note_prune(conn: &Connection, cutoff_ms: i64) -> rusqlite::Result<()> {
    let prune = latest_prune(conn)?;
    let Some(start) = chain_start(conn, prune)? else {
        // Nothing was ever chained: nothing to anchor.
        return Ok(());
    };
    // The records before the first one that still lists a stored row: the chain stays
    // contiguous from the anchor on.
    let oldest_kept: Option<i64> =
        conn.query_row("SELECT min(seq) FROM events", [], |r| r.get(0))?;
    let last_gone: Option<i64> = conn.query_row(
        "SELECT max(id) FROM chain WHERE id < coalesce(
             (SELECT min(id) FROM chain WHERE kind = 'rows' AND seq_to >= ?1),
             (SELECT max(id) + 1 FROM chain))",
        [oldest_kept.unwrap_or(i64::MAX)],
        |r| r.get(0),
    )?;
    let mut carried = Vec::new();
    let anchor = match last_gone {
        Some(id) => {
            carried = keyed::to_carry(conn, id)?;
            let hash: Vec<u8> =
                conn.query_row("SELECT hash FROM chain WHERE id = ?1", [id], |r| r.get(0))?;
            conn.execute("DELETE FROM chain WHERE id <= ?1", [id])?;
            Some((id, to_hash(&hash)))
        }
        None => prune.and_then(|p| p.anchor),
    };
    let body = Prune {
        cutoff: cutoff_ms,
        start,
        anchor,
    }
    .write();
    let record = Record {
        kind: PRUNE,
        body: &body,
        seqs: None,
        ts_max: None,
    };
    append(conn, record, anchor)?;
    keyed::carry(conn, &carried)
}

/// The first row the chain covers: the latest prune record's (`prune`), else the first
/// record's first.
fn chain_start(conn: &Connection, prune: Option<Prune>) -> rusqlite::Result<Option<i64>> {
    if let Some(prune) = prune {
        return Ok(Some(prune.start));
    }
    conn.query_row(
        "SELECT seq_from FROM chain WHERE kind = 'rows' ORDER BY id LIMIT 1",
        [],
        |r| r.get(0),
    )
    .optional()
}

/// The latest `prune` record, if any.
fn latest_prune(conn: &Connection) -> rusqlite::Result<Option<Prune>> {
    let body: Option<Vec<u8>> = conn
        .query_row(
            "SELECT body FROM chain WHERE kind = 'prune' ORDER BY id DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(body.and_then(|b| Prune::read(&b)))
}

/// A `prune` record's cutoff (epoch ms: rows older were pruned) and its anchor (the id and
/// hash of the last record it deleted, which the next record left links to), from its body.
pub fn prune_parts(body: &[u8]) -> Option<(i64, Option<(i64, Hash)>)> {
    Prune::read(body).map(|p| (p.cutoff, p.anchor))
}

/// A `prune` record's body: the cutoff, where the chain began, and the anchor.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Prune {
    cutoff: i64,
    start: i64,
    anchor: Option<(i64, Hash)>,
}

impl Prune {
    fn write(&self) -> Vec<u8> {
        let mut body = self.cutoff.to_le_bytes().to_vec();
        body.extend_from_slice(&self.start.to_le_bytes());
        if let Some((id, hash)) = self.anchor {
            body.extend_from_slice(&id.to_le_bytes());
            body.extend_from_slice(&hash);
        }
        body
    }

    fn read(body: &[u8]) -> Option<Prune> {
        let int = |at: usize| Some(i64::from_le_bytes(body.get(at..at + 8)?.try_into().ok()?));
        let anchor = match body.len() {
            16 => None,
            56 => Some((int(16)?, to_hash(&body[24..56]))),
            _ => return None,
        };
        Some(Prune {
            cutoff: int(0)?,
            start: int(8)?,
            anchor,
        })
    }
}

/// What `verify` found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verified {
    /// Records of the chain checked.
    pub records: u64,
    /// Rows whose digest matched.
    pub rows: u64,
    /// Rows a record lists that prune removed (older than its cutoff).
    pub pruned: u64,
    /// Rows stored before the chain began: not covered.
    pub before_chain: u64,
    /// Rows whose digest matched, per table (`events`, and each of [`keyed::TABLES`]).
    pub by_table: std::collections::BTreeMap<&'static str, u64>,
    /// The chain's last hash.
    pub head: Option<Hash>,
    /// The problems, in the order found (the first is the earliest), at most [`MAX_PROBLEMS`].
    pub problems: Vec<Problem>,
    /// Every problem found, counted.
    pub problem_count: u64,
}

impl Verified {
    /// Counts `p`, and keeps it when fewer than [`MAX_PROBLEMS`] are kept.
    pub fn problem(&mut self, p: Problem) {
        self.problem_count += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p);
        }
    }
}

/// The most problems `verify` keeps to name (all are counted).
pub const MAX_PROBLEMS: usize = 20;

/// One thing the chain shows was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// A chain record's hash does not follow from the one before: the chain itself was edited.
    Chain { record: i64 },
    /// The row stored as `seq` is not what was stored.
    Altered { seq: i64, id: String },
    /// The row stored as `seq` is gone, and no prune removed it.
    Removed { seq: i64, ts: i64 },
    /// The row `seq` was never stored by ingest.
    Inserted { seq: i64, id: String },
    /// On the team store: a row after the last one the machine's records there list. Inserted
    /// on the server, or pushed without its record (a push stopped between the two).
    NotChained { seq: i64, id: String },
    /// A row of a table chained by key is not what cmstore left it.
    KeyedAltered { table: &'static str, key: String },
    /// A row of a table chained by key is gone, and cmstore did not delete it (its key's
    /// digest, in hex: the key itself is gone with it).
    KeyedRemoved { table: &'static str, key: String },
    /// A row of a table chained by key that cmstore never stored.
    KeyedInserted { table: &'static str, key: String },
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Chain { record } => {
                write!(
                    f,
                    "chain record {record} does not follow from the one before it"
                )
            }
            Problem::Altered { seq, id } => write!(f, "row {seq} ({id}) was altered"),
            Problem::Removed { seq, ts } => write!(
                f,
                "row {seq} (of {}) was removed, and not by prune",
                chrono::DateTime::from_timestamp_millis(*ts).map_or(ts.to_string(), |t| t
                    .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                    .to_string())
            ),
            Problem::Inserted { seq, id } => {
                write!(f, "row {seq} ({id}) was inserted, not by ingest")
            }
            Problem::NotChained { seq, id } => write!(
                f,
                "row {seq} ({id}) is listed by no record on the server: inserted there, or \
                 pushed without its record by a push that stopped (push again, then verify)"
            ),
            Problem::KeyedAltered { table, key } => write!(f, "{table} row {key} was altered"),
            Problem::KeyedRemoved { table, key } => {
                write!(f, "a {table} row (key {key}) was removed")
            }
            Problem::KeyedInserted { table, key } => {
                write!(f, "{table} row {key} was inserted, not by cmstore")
            }
        }
    }
}

/// A row a `rows` record lists: its `seq`, `ts` and digest.
pub type Listed = (i64, i64, [u8; DIGEST_LEN]);

/// The rows a `rows` record's body lists.
pub fn listed_rows(body: &[u8]) -> impl Iterator<Item = Listed> + '_ {
    body.chunks_exact(ROW_LEN).map(|c| {
        let seq = i64::from_le_bytes(c[..8].try_into().expect("8 bytes"));
        let ts = i64::from_le_bytes(c[8..16].try_into().expect("8 bytes"));
        let mut digest = [0; DIGEST_LEN];
        digest.copy_from_slice(&c[16..]);
        (seq, ts, digest)
    })
}

/// The rows the records list, in `seq` order: read record by record as the chain holds them
/// when their seqs only grow (ingest is the one writer, so they do unless the newest row was
/// deleted and its seq given again), else gathered and sorted (32 bytes a row in memory).
struct ListedRows<'s> {
    /// Record bodies in order, when they are read as they come.
    records: Option<rusqlite::Rows<'s>>,
    body: Vec<u8>,
    at: usize,
    /// All of them sorted, otherwise.
    sorted: std::vec::IntoIter<Listed>,
    peeked: Option<Listed>,
}

impl ListedRows<'_> {
    fn peek(&mut self) -> rusqlite::Result<Option<Listed>> {
        if self.peeked.is_none() {
            self.peeked = self.next_one()?;
        }
        Ok(self.peeked)
    }

    fn take(&mut self) -> rusqlite::Result<Option<Listed>> {
        let next = self.peek()?;
        self.peeked = None;
        Ok(next)
    }

    fn next_one(&mut self) -> rusqlite::Result<Option<Listed>> {
        let Some(records) = self.records.as_mut() else {
            return Ok(self.sorted.next());
        };
        while self.at + ROW_LEN > self.body.len() {
            match records.next()? {
                Some(r) => {
                    self.body = r.get(0)?;
                    self.at = 0;
                }
                None => return Ok(None),
            }
        }
        let row = listed_rows(&self.body[self.at..self.at + ROW_LEN]).next();
        self.at += ROW_LEN;
        Ok(row)
    }
}

const ROW_RECORDS: &str = "SELECT body FROM chain WHERE kind = 'rows' ORDER BY id";

/// Checks the chain and every row it lists against the store (read in one snapshot by the
/// caller): recomputes each record's hash from the one before (the first from the anchor of
/// the latest prune), and each stored row's digest; a row a record lists that is gone is
/// pruned when older than the latest prune's cutoff, else removed; a row no record lists,
/// newer than the chain's start, was inserted. Two passes over the chain (its links, then its
/// rows beside the stored ones), one over `events`; then the tables chained by key
/// ([`keyed`]).
pub fn verify(conn: &Connection) -> rusqlite::Result<Verified> {
    let mut out = Verified::default();
    let prune = latest_prune(conn)?;
    let cutoff = prune.map(|p| p.cutoff);
    let in_order = check_links(conn, prune.and_then(|p| p.anchor), &mut out)?;
    let chain_start = chain_start(conn, prune)?.unwrap_or(i64::MAX);
    let mut records = conn.prepare(ROW_RECORDS)?;
    let mut listed = ListedRows {
        records: None,
        body: Vec::new(),
        at: 0,
        sorted: Vec::new().into_iter(),
        peeked: None,
    };
    if in_order {
        listed.records = Some(records.query([])?);
    } else {
        let mut all: Vec<Listed> = Vec::new();
        let mut rows = records.query([])?;
        while let Some(r) = rows.next()? {
            all.extend(listed_rows(&r.get::<_, Vec<u8>>(0)?));
        }
        all.sort_by_key(|l| l.0);
        listed.sorted = all.into_iter();
    }
    let gone = |out: &mut Verified, seq: i64, ts: i64| match cutoff.is_some_and(|c| ts < c) {
        true => out.pruned += 1,
        false => out.problem(Problem::Removed { seq, ts }),
    };
    let mut stored = conn.prepare("SELECT seq, id, ts, entry FROM events ORDER BY seq")?;
    let mut rows = stored.query([])?;
    while let Some(r) = rows.next()? {
        let (seq, id, ts, entry): (i64, String, i64, String) =
            (r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?);
        while let Some((l_seq, l_ts, _)) = listed.peek()? {
            if l_seq >= seq {
                break;
            }
            listed.take()?;
            gone(&mut out, l_seq, l_ts);
        }
        match listed.peek()? {
            Some((l_seq, l_ts, digest)) if l_seq == seq => {
                listed.take()?;
                if l_ts == ts && row_digest(&id, ts, &entry) == digest {
                    out.rows += 1;
                } else {
                    out.problem(Problem::Altered { seq, id });
                }
            }
            _ if seq < chain_start => out.before_chain += 1,
            _ => out.problem(Problem::Inserted { seq, id }),
        }
    }
    while let Some((seq, ts, _)) = listed.take()? {
        gone(&mut out, seq, ts);
    }
    out.by_table.insert("events", out.rows);
    keyed::verify(conn, &mut out)?;
    Ok(out)
}

/// The first pass: each record's hash from the one before (the first's from `anchor`), the
/// head; true when the seqs the records list only grow.
fn check_links(
    conn: &Connection,
    anchor: Option<(i64, Hash)>,
    out: &mut Verified,
) -> rusqlite::Result<bool> {
    let mut prev = anchor.map_or(GENESIS, |(_, h)| h);
    let mut expected_id = anchor.map(|(id, _)| id + 1);
    let (mut last_seq, mut in_order) = (i64::MIN, true);
    let mut records = conn.prepare("SELECT id, kind, body, hash FROM chain ORDER BY id")?;
    let mut rows = records.query([])?;
    while let Some(r) = rows.next()? {
        let (id, kind): (i64, String) = (r.get(0)?, r.get(1)?);
        let (body, hash): (Vec<u8>, Vec<u8>) = (r.get(2)?, r.get(3)?);
        out.records += 1;
        let contiguous = expected_id.is_none_or(|e| e == id);
        if !contiguous || link(&prev, &kind, &body) != to_hash(&hash) {
            out.problem(Problem::Chain { record: id });
        }
        prev = to_hash(&hash);
        expected_id = Some(id + 1);
        if kind == ROWS && in_order {
            for (seq, _, _) in listed_rows(&body) {
                in_order &= seq > last_seq;
                last_seq = seq;
            }
        }
    }
    out.head = (out.records > 0).then_some(prev);
    Ok(in_order)
}

/// True when `hex` (a head kept earlier) is the hash of a record still in the chain, or the
/// anchor a prune left.
pub fn contains(conn: &Connection, hex_hash: &str) -> rusqlite::Result<bool> {
    let wanted = hex_hash.trim().to_ascii_lowercase();
    let anchor = latest_prune(conn)?.and_then(|p| p.anchor);
    if anchor.is_some_and(|(_, hash)| hex(&hash) == wanted) {
        return Ok(true);
    }
    let mut stmt = conn.prepare("SELECT hash FROM chain")?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        if hex(&to_hash(&r.get::<_, Vec<u8>>(0)?)) == wanted {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store whose ingest chained `n` rows at times 1..=n, in one batch.
    fn chained(n: i64) -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        drop(crate::store::open(&path).unwrap());
        let conn = Connection::open(&path).unwrap();
        let mut links = Links::default();
        for ts in 1..=n {
            let (id, entry) = (format!("e{ts}"), format!("{{\"n\":{ts}}}"));
            conn.execute(
                "INSERT INTO events(id, ts, entry, ingested_at) VALUES (?1, ?2, ?3, 0)",
                params![id, ts, entry],
            )
            .unwrap();
            links.push(conn.last_insert_rowid(), ts, &row_digest(&id, ts, &entry));
        }
        links.append(&conn).unwrap();
        (dir, conn)
    }

    /// A prune killed midway: its record of the cutoff came before its deletes, so the rows
    /// it took are pruned, not removed; a row newer than the cutoff taken by hand is not.
    #[test]
    fn rows_a_prune_killed_midway_took_are_pruned_and_others_removed() {
        let (_dir, conn) = chained(6);
        note_prune(&conn, 5).unwrap();
        conn.execute("DELETE FROM events WHERE ts IN (1, 3)", [])
            .unwrap();
        let v = verify(&conn).unwrap();
        assert_eq!((v.rows, v.pruned, v.problem_count), (4, 2, 0), "{v:?}");

        conn.execute("DELETE FROM events WHERE ts = 6", []).unwrap();
        let v = verify(&conn).unwrap();
        assert_eq!(v.problems, [Problem::Removed { seq: 6, ts: 6 }]);
    }

    /// Once every row of a record is gone, the next prune deletes the record and anchors the
    /// chain on it: the chain still checks, and the head kept before is under it.
    #[test]
    fn an_emptied_record_is_deleted_and_the_chain_anchored_on_it() {
        let (_dir, conn) = chained(3);
        let kept = head(&conn).unwrap().unwrap().1;
        conn.execute("DELETE FROM events", []).unwrap();
        note_prune(&conn, 10).unwrap();
        let records: i64 = conn
            .query_row("SELECT count(*) FROM chain WHERE kind = 'rows'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(records, 0);
        let v = verify(&conn).unwrap();
        assert_eq!((v.problem_count, v.records), (0, 1), "{v:?}");
        assert!(contains(&conn, &hex(&kept)).unwrap());
    }
}
