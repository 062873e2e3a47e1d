//! `cmstore verify --store postgres://…`: each machine's chain as it pushed it (team schema
//! 0008), checked on the server, read-only: the links of its records, and every event row its
//! records list, by the row's digest where the server holds the row's whole line (the `full`
//! profile, or a `redacted` line redaction left as it was), by its presence and time otherwise.
//!
//! The server keeps what the machines' own retention deletes, so a listed row that is gone was
//! removed on the server. The records and the rows are read side by side through two portals,
//! a chunk at a time: constant memory, whatever a machine pushed (unless its records' seqs do
//! not only grow: then what they list is gathered and sorted, 32 bytes a row). Records of the tables chained by key (usage, OTLP) count for the
//! links only: the server's usage is rewritten per session by each push.

use postgres::fallible_iterator::FallibleIterator;
use postgres::Client;

use super::server::ServerError;
use crate::store::chain::{self, Hash, Listed, Problem, Verified};

/// What `verify --store` found of one machine.
#[derive(Debug, Clone, Default)]
pub struct MachineVerified {
    /// The machine's id, and its labels as its last push set them.
    pub machine: String,
    pub user: Option<String>,
    pub host: Option<String>,
    /// The content profile of its last push.
    pub content: String,
    /// What was found; `rows` counts the rows whose digest matched.
    pub verified: Verified,
    /// Rows checked by their presence and time only (the server has not their whole line).
    pub by_presence: u64,
    /// The first record the server holds, when it is not the machine's first: its link to
    /// the one before cannot be checked (the records before never reached the server).
    pub begins_at: Option<i64>,
}

/// Checks each machine's chain on the server (only `machine` when given), in one read-only
/// transaction.
pub fn verify(
    client: &mut Client,
    machine: Option<&str>,
) -> Result<Vec<MachineVerified>, ServerError> {
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(ServerError::pg("cannot start a read-only transaction"))?;
    let machines = tx
        .query(
            "SELECT machine_id, user_label, host, content FROM machines
             WHERE $1::text IS NULL OR machine_id = $1 ORDER BY machine_id",
            &[&machine],
        )
        .map_err(ServerError::pg("cannot read the machines"))?;
    let mut found = Vec::new();
    for m in machines {
        let mut one = MachineVerified {
            machine: m.get(0),
            user: m.get(1),
            host: m.get(2),
            content: m.get(3),
            ..MachineVerified::default()
        };
        let order = check_links(&mut tx, &mut one)?;
        check_rows(&mut tx, &mut one, order)?;
        found.push(one);
    }
    Ok(found)
}

/// The links of the machine's records, in id order: whether the seqs its `rows` records list
/// only grow (then [`check_rows`] reads them as they come, else gathers and sorts them), and
/// the first of them.
fn check_links(
    tx: &mut postgres::Transaction<'_>,
    one: &mut MachineVerified,
) -> Result<(bool, Option<i64>), ServerError> {
    let mut records = tx
        .query_raw(
            "SELECT id, kind, decode(body, 'hex'), decode(hash, 'hex') FROM chain
             WHERE machine_id = $1 ORDER BY id",
            [&one.machine],
        )
        .map_err(ServerError::pg("cannot read the chain"))?;
    let (mut in_order, mut last_seq, mut first_seq) = (true, i64::MIN, None);
    let mut prev: Option<(i64, Hash)> = None;
    while let Some(r) = records
        .next()
        .map_err(ServerError::pg("cannot read the chain"))?
    {
        let (id, kind): (i64, String) = (r.get(0), r.get(1));
        let (body, hash): (Vec<u8>, Vec<u8>) = (r.get(2), r.get(3));
        let hash = chain::to_hash(&hash);
        let v = &mut one.verified;
        v.records += 1;
        let before = match prev {
            Some((last, h)) if last + 1 == id => Some(h),
            // Records missing between two the server holds: this one follows from nothing.
            Some(_) => {
                v.problem(Problem::Chain { record: id });
                None
            }
            None if id == 1 => Some(chain::GENESIS),
            // The machine's earlier records were pruned before they reached the server.
            None => {
                one.begins_at = Some(id);
                None
            }
        };
        if before.is_some_and(|h| chain::link(&h, &kind, &body) != hash) {
            v.problem(Problem::Chain { record: id });
        }
        if kind == chain::ROWS {
            for (seq, _, _) in chain::listed_rows(&body) {
                first_seq = Some(first_seq.map_or(seq, |f: i64| f.min(seq)));
                in_order &= seq > last_seq;
                last_seq = seq;
            }
        }
        prev = Some((id, hash));
    }
    one.verified.head = prev.map(|(_, h)| h);
    Ok((in_order, first_seq))
}

/// Rows a statement returns, read through a portal a chunk at a time: two can be read side by
/// side in one transaction, each in constant memory.
struct Paged {
    portal: postgres::Portal,
    chunk: std::collections::VecDeque<postgres::Row>,
    done: bool,
}

/// Rows fetched from a portal at a time.
const CHUNK: i32 = 2000;

impl Paged {
    fn open(
        tx: &mut postgres::Transaction<'_>,
        sql: &str,
        machine: &str,
    ) -> Result<Paged, ServerError> {
        let portal = tx
            .bind(sql, &[&machine])
            .map_err(ServerError::pg("cannot read the team store"))?;
        Ok(Paged {
            portal,
            chunk: Default::default(),
            done: false,
        })
    }

    fn next(
        &mut self,
        tx: &mut postgres::Transaction<'_>,
    ) -> Result<Option<postgres::Row>, ServerError> {
        if self.chunk.is_empty() && !self.done {
            let rows = tx
                .query_portal(&self.portal, CHUNK)
                .map_err(ServerError::pg("cannot read the team store"))?;
            self.done = rows.len() < CHUNK as usize;
            self.chunk.extend(rows);
        }
        Ok(self.chunk.pop_front())
    }
}

/// What the machine's `rows` records list, by `seq`: read from them as they come when their
/// seqs only grow, else gathered and sorted (32 bytes a row).
enum ListedRows {
    Streamed {
        records: Paged,
        body: std::collections::VecDeque<Listed>,
    },
    Sorted(std::iter::Peekable<std::vec::IntoIter<Listed>>),
}

const ROW_RECORDS: &str = "SELECT decode(body, 'hex') FROM chain
    WHERE machine_id = $1 AND kind = 'rows' ORDER BY id";

impl ListedRows {
    fn open(
        tx: &mut postgres::Transaction<'_>,
        machine: &str,
        in_order: bool,
    ) -> Result<ListedRows, ServerError> {
        let mut records = Paged::open(tx, ROW_RECORDS, machine)?;
        if in_order {
            return Ok(ListedRows::Streamed {
                records,
                body: Default::default(),
            });
        }
        let mut all = Vec::new();
        while let Some(r) = records.next(tx)? {
            all.extend(chain::listed_rows(&r.get::<_, Vec<u8>>(0)));
        }
        all.sort_by_key(|l| l.0);
        Ok(ListedRows::Sorted(all.into_iter().peekable()))
    }

    fn peek(&mut self, tx: &mut postgres::Transaction<'_>) -> Result<Option<Listed>, ServerError> {
        match self {
            ListedRows::Sorted(rows) => Ok(rows.peek().copied()),
            ListedRows::Streamed { records, body } => {
                while body.is_empty() {
                    match records.next(tx)? {
                        Some(r) => body.extend(chain::listed_rows(&r.get::<_, Vec<u8>>(0))),
                        None => return Ok(None),
                    }
                }
                Ok(body.front().copied())
            }
        }
    }

    fn take(&mut self, tx: &mut postgres::Transaction<'_>) -> Result<Option<Listed>, ServerError> {
        let next = self.peek(tx)?;
        match self {
            ListedRows::Sorted(rows) => {
                rows.next();
            }
            ListedRows::Streamed { body, .. } => {
                body.pop_front();
            }
        }
        Ok(next)
    }
}

/// The machine's event rows beside what its records list, both by `seq`, each read a chunk at
/// a time.
fn check_rows(
    tx: &mut postgres::Transaction<'_>,
    one: &mut MachineVerified,
    (in_order, first_seq): (bool, Option<i64>),
) -> Result<(), ServerError> {
    let start = first_seq.unwrap_or(i64::MAX);
    let mut listed = ListedRows::open(tx, &one.machine, in_order)?;
    let mut rows = Paged::open(
        tx,
        "SELECT seq, id, ts, entry FROM events WHERE machine_id = $1 ORDER BY seq",
        &one.machine,
    )?;
    let full = one.content == "full";
    while let Some(r) = rows.next(tx)? {
        let (seq, id, ts, entry): (i64, String, i64, Option<String>) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        while let Some((l_seq, l_ts, _)) = listed.peek(tx)? {
            if l_seq >= seq {
                break;
            }
            listed.take(tx)?;
            one.verified.problem(Problem::Removed {
                seq: l_seq,
                ts: l_ts,
            });
        }
        let v = &mut one.verified;
        match listed.peek(tx)? {
            Some((l_seq, l_ts, digest)) if l_seq == seq => {
                listed.take(tx)?;
                let matches = entry
                    .as_deref()
                    .map(|e| chain::row_digest(&id, ts, e) == digest);
                match (l_ts == ts, matches) {
                    (true, Some(true)) => v.rows += 1,
                    // The line is not on the server, or it is redacted: as far as can be told.
                    (true, None) => one.by_presence += 1,
                    (true, Some(false)) if !full => one.by_presence += 1,
                    _ => v.problem(Problem::Altered { seq, id }),
                }
            }
            _ if seq < start => v.before_chain += 1,
            _ => v.problem(Problem::Inserted { seq, id }),
        }
    }
    while let Some((seq, ts, _)) = listed.take(tx)? {
        one.verified.problem(Problem::Removed { seq, ts });
    }
    let v = &mut one.verified;
    v.by_table.insert("events", v.rows + one.by_presence);
    Ok(())
}

/// Whether `hex` (a head kept earlier) is a record's hash in the chain of `machine` on the
/// server; the machine whose chain holds it, with `machine` `None`.
pub fn holds(
    client: &mut Client,
    machine: Option<&str>,
    hex: &str,
) -> Result<Option<String>, ServerError> {
    let wanted = hex.trim().to_ascii_lowercase();
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(ServerError::pg("cannot start a read-only transaction"))?;
    let row = tx
        .query_opt(
            "SELECT machine_id FROM chain WHERE hash = $1
               AND ($2::text IS NULL OR machine_id = $2) LIMIT 1",
            &[&wanted, &machine],
        )
        .map_err(ServerError::pg("cannot read the chain"))?;
    Ok(row.map(|r| r.get(0)))
}
