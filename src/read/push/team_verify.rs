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
    /// The first record the server holds, when it is not the machine's first: it follows
    /// from the anchor a pushed prune named (the records before were pruned before they were
    /// pushed).
    pub begins_at: Option<i64>,
    /// Whether a head kept earlier (`--expect`) is a record's hash in this machine's chain.
    pub holds_expected: bool,
}

/// What the machine's `prune` records on the server say: the latest cutoff, and each anchor
/// (the id and hash of the last record a prune deleted).
#[derive(Default)]
struct Prunes {
    cutoff: Option<i64>,
    anchors: std::collections::HashMap<i64, Hash>,
}

/// Checks each machine's chain on the server (only `machine` when given), in one read-only
/// transaction that sees one snapshot (repeatable read: a push meanwhile is not half seen);
/// `expect`, a head kept earlier, is looked for in each machine's chain.
pub fn verify(
    client: &mut Client,
    machine: Option<&str>,
    expect: Option<&str>,
) -> Result<Vec<MachineVerified>, ServerError> {
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .isolation_level(postgres::IsolationLevel::RepeatableRead)
        .start()
        .map_err(ServerError::pg("cannot start a read-only transaction"))?;
    let machines = tx
        .query(
            "SELECT machine_id, user_label, host, content FROM machines
             WHERE $1::text IS NULL OR machine_id = $1 ORDER BY machine_id",
            &[&machine],
        )
        .map_err(ServerError::pg("cannot read the machines"))?;
    let expect = expect.map(|h| h.trim().to_ascii_lowercase());
    let mut found = Vec::new();
    for m in machines {
        let mut one = MachineVerified {
            machine: m.get(0),
            user: m.get(1),
            host: m.get(2),
            content: m.get(3),
            ..MachineVerified::default()
        };
        let prunes = prunes(&mut tx, &one.machine)?;
        let order = check_links(&mut tx, &mut one, &prunes, expect.as_deref())?;
        check_rows(&mut tx, &mut one, order, prunes.cutoff)?;
        found.push(one);
    }
    Ok(found)
}

/// The machine's `prune` records: few, read first, so that a record after a gap (the records a
/// prune deleted before they were pushed) is checked against the anchor it follows from.
fn prunes(tx: &mut postgres::Transaction<'_>, machine: &str) -> Result<Prunes, ServerError> {
    let rows = tx
        .query(
            "SELECT decode(body, 'hex') FROM chain WHERE machine_id = $1 AND kind = $2",
            &[&machine, &chain::PRUNE],
        )
        .map_err(ServerError::pg("cannot read the chain"))?;
    let mut found = Prunes::default();
    for r in rows {
        if let Some((cutoff, anchor)) = chain::prune_parts(&r.get::<_, Vec<u8>>(0)) {
            found.cutoff = found.cutoff.max(Some(cutoff));
            if let Some((id, hash)) = anchor {
                found.anchors.insert(id, hash);
            }
        }
    }
    Ok(found)
}

/// The links of the machine's records, in id order. A record follows from the one before,
/// or, with none just before it (the first, or after a gap), from the anchor of a pushed prune
/// that deleted those before it; the first record is the chain's first (id 1) or so anchored.
/// Returns whether the seqs its `rows` records list only grow (then [`check_rows`] reads them
/// as they come, else gathers and sorts them), the first and the last of them.
fn check_links(
    tx: &mut postgres::Transaction<'_>,
    one: &mut MachineVerified,
    prunes: &Prunes,
    expect: Option<&str>,
) -> Result<Order, ServerError> {
    let mut records = tx
        .query_raw(
            "SELECT id, kind, decode(body, 'hex'), decode(hash, 'hex') FROM chain
             WHERE machine_id = $1 ORDER BY id",
            [&one.machine],
        )
        .map_err(ServerError::pg("cannot read the chain"))?;
    let mut order = Order {
        in_order: true,
        first: None,
        last: None,
    };
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
            None if id == 1 => Some(chain::GENESIS),
            _ => {
                let anchored = prunes.anchors.get(&(id - 1)).copied();
                if prev.is_none() && anchored.is_some() {
                    one.begins_at = Some(id);
                }
                anchored
            }
        };
        if before.is_none_or(|h| chain::link(&h, &kind, &body) != hash) {
            v.problem(Problem::Chain { record: id });
        }
        if expect.is_some_and(|e| chain::hex(&hash) == e) {
            one.holds_expected = true;
        }
        if kind == chain::ROWS {
            for (seq, _, _) in chain::listed_rows(&body) {
                order.first = Some(order.first.map_or(seq, |f: i64| f.min(seq)));
                order.in_order &= order.last.is_none_or(|l| seq > l);
                order.last = Some(order.last.map_or(seq, |l: i64| l.max(seq)));
            }
        }
        prev = Some((id, hash));
    }
    one.verified.head = prev.map(|(_, h)| h);
    Ok(order)
}

/// Whether the seqs the `rows` records list only grow, and the first and last of them.
struct Order {
    in_order: bool,
    first: Option<i64>,
    last: Option<i64>,
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
/// a time. A listed row that is gone was removed on the server, unless it is older than the
/// cutoff of a prune the machine pushed (it was pruned before it was pushed); a row after the
/// last listed one was inserted on the server, or pushed by a push that stopped before its
/// record (which goes right after each batch of events).
fn check_rows(
    tx: &mut postgres::Transaction<'_>,
    one: &mut MachineVerified,
    order: Order,
    cutoff: Option<i64>,
) -> Result<(), ServerError> {
    let (start, last) = (
        order.first.unwrap_or(i64::MAX),
        order.last.unwrap_or(i64::MIN),
    );
    let mut listed = ListedRows::open(tx, &one.machine, order.in_order)?;
    let mut rows = Paged::open(
        tx,
        "SELECT seq, id, ts, entry, content FROM events WHERE machine_id = $1 ORDER BY seq",
        &one.machine,
    )?;
    let profile_now = one.content.clone();
    let gone = |v: &mut Verified, seq: i64, ts: i64| match cutoff.is_some_and(|c| ts < c) {
        true => v.pruned += 1,
        false => v.problem(Problem::Removed { seq, ts }),
    };
    while let Some(r) = rows.next(tx)? {
        let (seq, id, ts, entry): (i64, String, i64, Option<String>) =
            (r.get(0), r.get(1), r.get(2), r.get(3));
        let pushed_as: Option<String> = r.get(4);
        while let Some((l_seq, l_ts, _)) = listed.peek(tx)? {
            if l_seq >= seq {
                break;
            }
            listed.take(tx)?;
            gone(&mut one.verified, l_seq, l_ts);
        }
        let v = &mut one.verified;
        match listed.peek(tx)? {
            Some((l_seq, l_ts, digest)) if l_seq == seq => {
                listed.take(tx)?;
                // A row an older cmstore pushed says nothing of its profile: without a line it
                // is judged as `none`'s, with one by the machine's profile now.
                let profile = match (&pushed_as, &entry) {
                    (Some(p), _) => p.as_str(),
                    (None, None) => "none",
                    (None, Some(_)) => profile_now.as_str(),
                };
                let matches = entry
                    .as_deref()
                    .map(|e| chain::row_digest(&id, ts, e) == digest);
                match judge(profile, l_ts == ts, matches, entry.as_deref()) {
                    Judged::Verified => v.rows += 1,
                    Judged::ByPresence => one.by_presence += 1,
                    Judged::Altered => v.problem(Problem::Altered { seq, id }),
                }
            }
            _ if seq < start => v.before_chain += 1,
            _ if seq > last => v.problem(Problem::NotChained { seq, id }),
            _ => v.problem(Problem::Inserted { seq, id }),
        }
    }
    while let Some((seq, ts, _)) = listed.take(tx)? {
        gone(&mut one.verified, seq, ts);
    }
    let v = &mut one.verified;
    v.by_table.insert("events", v.rows + one.by_presence);
    Ok(())
}

/// What a listed row on the server is found to be.
#[derive(Debug, PartialEq, Eq)]
enum Judged {
    Verified,
    ByPresence,
    Altered,
}

/// A listed row pushed under `profile`, its time as listed or not, its line's digest as
/// listed or not (`None`: no line), judged: under `full` its line must be there and match;
/// under `none` it must not be there (only its presence and time are checked); a `redacted`
/// line that does not match must show redaction's mark, or it was changed after.
fn judge(profile: &str, same_time: bool, matches: Option<bool>, entry: Option<&str>) -> Judged {
    if !same_time {
        return Judged::Altered;
    }
    match (profile, matches) {
        (_, Some(true)) => Judged::Verified,
        ("none", None) => Judged::ByPresence,
        ("redacted", Some(false)) if entry.is_some_and(|e| e.contains("[REDACTED")) => {
            Judged::ByPresence
        }
        _ => Judged::Altered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each profile's rows: `full` must carry their line unchanged, `none` none, a `redacted`
    /// line may differ only where redaction marked it; a time changed is always an edit.
    #[test]
    fn each_profile_judges_its_rows() {
        use Judged::*;
        let marked = Some("{\"prompt\":\"key [REDACTED:api-key]\"}");
        let cases = [
            (("full", true, Some(true), Some("{}")), Verified),
            (("full", true, None, None), Altered),
            (("full", true, Some(false), marked), Altered),
            (("none", true, None, None), ByPresence),
            (("none", true, Some(false), Some("{}")), Altered),
            (("redacted", true, Some(true), Some("{}")), Verified),
            (("redacted", true, Some(false), marked), ByPresence),
            (
                (
                    "redacted",
                    true,
                    Some(false),
                    Some("{\"prompt\":\"other\"}"),
                ),
                Altered,
            ),
            (("redacted", true, None, None), Altered),
            (("full", false, Some(true), Some("{}")), Altered),
        ];
        for ((profile, same_time, matches, entry), want) in cases {
            assert_eq!(
                judge(profile, same_time, matches, entry),
                want,
                "{profile} {same_time} {matches:?} {entry:?}"
            );
        }
    }
}
