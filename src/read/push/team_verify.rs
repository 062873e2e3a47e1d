//! `cmstore verify --store postgres://…`: each machine's chain as it pushed it (team schema
//! 0008), checked on the server, read-only: the links of its records, and every event row its
//! records list, by the row's digest where the server holds the row's whole line (the `full`
//! profile, or a `redacted` line redaction left as it was), by its presence and time otherwise.
//!
//! The server keeps what the machines' own retention deletes, so a listed row that is gone was
//! removed on the server. Records of the tables chained by key (usage, OTLP) count for the
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
        let listed = check_links(&mut tx, &mut one)?;
        check_rows(&mut tx, &mut one, listed)?;
        found.push(one);
    }
    Ok(found)
}

/// The links of the machine's records, in id order; what its `rows` records list, by `seq`.
fn check_links(
    tx: &mut postgres::Transaction<'_>,
    one: &mut MachineVerified,
) -> Result<Vec<Listed>, ServerError> {
    let mut records = tx
        .query_raw(
            "SELECT id, kind, decode(body, 'hex'), decode(hash, 'hex') FROM chain
             WHERE machine_id = $1 ORDER BY id",
            [&one.machine],
        )
        .map_err(ServerError::pg("cannot read the chain"))?;
    let mut listed: Vec<Listed> = Vec::new();
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
            listed.extend(chain::listed_rows(&body));
        }
        prev = Some((id, hash));
    }
    one.verified.head = prev.map(|(_, h)| h);
    listed.sort_by_key(|l| l.0);
    Ok(listed)
}

/// The machine's event rows beside what its records list, both by `seq`.
fn check_rows(
    tx: &mut postgres::Transaction<'_>,
    one: &mut MachineVerified,
    listed: Vec<Listed>,
) -> Result<(), ServerError> {
    let start = listed.first().map_or(i64::MAX, |l| l.0);
    let mut listed = listed.into_iter().peekable();
    let mut rows = tx
        .query_raw(
            "SELECT seq, id, ts, entry FROM events WHERE machine_id = $1 ORDER BY seq",
            [&one.machine],
        )
        .map_err(ServerError::pg("cannot read the events"))?;
    let full = one.content == "full";
    let v = &mut one.verified;
    while let Some(r) = rows
        .next()
        .map_err(ServerError::pg("cannot read the events"))?
    {
        let (seq, id, ts, entry): (i64, String, i64, Option<String>) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        while let Some(&(l_seq, l_ts, _)) = listed.peek() {
            if l_seq >= seq {
                break;
            }
            listed.next();
            v.problem(Problem::Removed {
                seq: l_seq,
                ts: l_ts,
            });
        }
        match listed.peek().copied() {
            Some((l_seq, l_ts, digest)) if l_seq == seq => {
                listed.next();
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
    for (seq, ts, _) in listed {
        v.problem(Problem::Removed { seq, ts });
    }
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
