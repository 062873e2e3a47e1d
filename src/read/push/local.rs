//! What `cmstore push` reads from, and remembers in, the local store: the machine's id, each
//! server's cursor over the events and its digests of the sessions it was sent.
//!
//! The push writes only its own tables (migration 0032); the record itself is only read.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension};

use super::rows::{self, Profile, Rows, Table};

/// This store's machine id, made (a random UUID) the first time it is asked for.
pub fn machine_id(conn: &Connection, now_ms: i64) -> rusqlite::Result<String> {
    conn.execute(
        "INSERT OR IGNORE INTO push_machine (id, machine_id, created_at) VALUES (1, ?1, ?2)",
        params![uuid::Uuid::new_v4().to_string(), now_ms],
    )?;
    conn.query_row(
        "SELECT machine_id FROM push_machine WHERE id = 1",
        [],
        |r| r.get(0),
    )
}

/// The seq of the last event `destination` committed (0: none).
pub fn cursor(conn: &Connection, destination: &str) -> rusqlite::Result<i64> {
    conn.query_row(
        "SELECT seq FROM push_cursors WHERE destination = ?1",
        [destination],
        |r| r.get(0),
    )
    .optional()
    .map(|seq| seq.unwrap_or(0))
}

/// Moves `destination`'s cursor from `from` to `to` (the server has committed the events in
/// between): compare-and-set, so a second pusher that moved it first is seen (`false`).
pub fn advance(
    conn: &Connection,
    destination: &str,
    (from, to): (i64, i64),
    events: usize,
    now_ms: i64,
) -> rusqlite::Result<bool> {
    conn.execute(
        "INSERT OR IGNORE INTO push_cursors (destination, seq, updated_at) VALUES (?1, 0, ?2)",
        params![destination, now_ms],
    )?;
    let moved = conn.execute(
        "UPDATE push_cursors SET seq = ?3, events = events + ?4, updated_at = ?5,
                last_error = NULL, last_error_at = NULL
         WHERE destination = ?1 AND seq = ?2",
        params![destination, from, to, events as i64, now_ms],
    )?;
    Ok(moved == 1)
}

/// Notes why a push to `destination` failed, for `status`.
pub fn note_error(
    conn: &Connection,
    destination: &str,
    error: &str,
    now_ms: i64,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO push_cursors (destination, seq, updated_at, last_error, last_error_at)
         VALUES (?1, 0, ?3, ?2, ?3)
         ON CONFLICT (destination) DO UPDATE SET last_error = ?2, last_error_at = ?3",
        params![destination, error, now_ms],
    )?;
    Ok(())
}

/// Events after the cursor still to push to `destination`.
pub fn backlog(conn: &Connection, destination: &str) -> rusqlite::Result<i64> {
    let after = cursor(conn, destination)?;
    conn.query_row("SELECT count(*) FROM events WHERE seq > ?1", [after], |r| {
        r.get(0)
    })
}

/// Up to `limit` events after `after`, in seq order, shaped by `profile`; and the last seq
/// among them (read from the rows themselves: a second look at the table could see events
/// ingest committed since, which the cursor would then pass unsent).
pub fn events_after(
    conn: &Connection,
    after: i64,
    limit: usize,
    profile: &Profile<'_>,
) -> rusqlite::Result<(Rows, Option<i64>)> {
    let sql = format!(
        "SELECT {} FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        Rows::select_list(&rows::EVENTS)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = Rows::new(&rows::EVENTS);
    rows.read(&mut stmt, params![after, limit as i64], profile)?;
    let last = rows.ints("seq").max();
    Ok((rows, last))
}

/// The first chain record after the record `after` that lists an event after `pushed` (the
/// events cursor): a record goes to the server only once the rows it lists are there, so the
/// push stops before it. `None`: every record after `after` may go.
pub fn chain_block(conn: &Connection, after: i64, pushed: i64) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT min(id) FROM chain WHERE id > ?1 AND kind = 'rows' AND seq_to > ?2",
    )?
    .query_row(params![after, pushed], |r| r.get(0))
}

/// At most `limit` chain records after the record `after` and before `block`
/// ([`chain_block`]), in order.
pub fn chain_after(
    conn: &Connection,
    after: i64,
    block: Option<i64>,
    limit: usize,
) -> rusqlite::Result<Rows> {
    let sql = format!(
        "SELECT {} FROM chain WHERE id > ?1 AND id < ?2 ORDER BY id LIMIT ?3",
        Rows::select_list(&rows::CHAIN)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = Rows::new(&rows::CHAIN);
    let profile = Profile {
        content: crate::config::push::Content::Full,
        redactor: &crate::model::redact::Redactor::new(&[]),
    };
    let before = block.unwrap_or(i64::MAX);
    rows.read(&mut stmt, params![after, before, limit as i64], &profile)?;
    Ok(rows)
}

/// The check results among the events after `after` up to `last`, shaped by `profile`: what
/// goes beside those events.
pub fn check_results_between(
    conn: &Connection,
    (after, last): (i64, i64),
    profile: &Profile<'_>,
) -> rusqlite::Result<Rows> {
    let sql = format!(
        "SELECT {} FROM events WHERE seq > ?1 AND seq <= ?2 AND hook_type = 'CheckResult' \
         ORDER BY seq",
        Rows::select_list(&rows::CHECK_RESULTS)
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut rows = Rows::new(&rows::CHECK_RESULTS);
    rows.read(&mut stmt, params![after, last], profile)?;
    Ok(rows)
}

/// Each session's digest now: its `sessions` row, its usage, its imported turns and how many
/// items its transcripts show, which change whenever anything the push sends of it changes (a
/// session's other turns and its tool calls change with its events, which change its row, or
/// with an import, which notes what it read: a hook's turn it filled in is one of those; a
/// hook that records an imported turn is an event). A session that has usage and no row (an import of
/// history whose session was pruned, or a response no session named: `''`) has one too.
/// `{only}` limits it to some sessions (empty: all). A session without premium requests has
/// none in its digest (`concat_ws` passes over a NULL), so the digests stores pushed before
/// migration 0034 stay what they were; nor without imported turns (migration 0036).
const DIGEST_SQL: &str = "
WITH u AS (
  SELECT coalesce(session_id, '') AS session_id, count(*) AS n, total(input_tokens) AS i,
         total(output_tokens) AS o, total(cache_write_tokens) AS cw,
         total(cache_write_1h_tokens) AS cw1, total(cache_read_tokens) AS cr,
         total(reasoning_tokens) AS r, count(reasoning_tokens) AS rn, count(model) AS m,
         count(turn_id) AS t, total(line_offset) AS off, total(sidechain) AS sc,
         CASE WHEN count(premium_requests) > 0 THEN total(premium_requests) END AS pr
  FROM usage {only} GROUP BY 1
),
it AS (
  SELECT session_id, count(*) AS n, total(ts) AS ts,
         total(length(coalesce(prompt, '') || coalesce(response, '') || coalesce(thinking, '')))
           AS len
  FROM turns INDEXED BY turns_imported WHERE imported = 1 {and_only} GROUP BY 1
),
ti AS (SELECT session_id, count(*) AS n FROM transcript_items {only} GROUP BY 1),
k AS (SELECT session_id FROM sessions {only} UNION SELECT session_id FROM u)
SELECT k.session_id,
       concat_ws('|', s.agent, s.model, s.cwd, s.first_seen, s.last_seen, s.events, s.prompts,
                 s.tool_uses, s.tool_failures, s.stops, s.estimated_tokens, s.ended, s.ended_at,
                 u.n, u.i, u.o, u.cw, u.cw1, u.cr, u.r, u.rn, u.m, u.t, u.off, u.sc, u.pr,
                 it.n, it.ts, it.len, ti.n)
FROM k
LEFT JOIN sessions s ON s.session_id = k.session_id
LEFT JOIN u ON u.session_id = k.session_id
LEFT JOIN it ON it.session_id = k.session_id
LEFT JOIN ti ON ti.session_id = k.session_id";

/// `sql` (a [`DIGEST_SQL`]) of every session, or, when `only`, of the sessions the JSON list
/// `?1` names.
fn digest_sql(sql: &str, only: bool) -> String {
    const ONLY: &str = "session_id IN (SELECT value FROM json_each(?1))";
    let (filter, and_filter) = match only {
        true => (format!("WHERE {ONLY}"), format!("AND {ONLY}")),
        false => (String::new(), String::new()),
    };
    sql.replace("{only}", &filter)
        .replace("{and_only}", &and_filter)
}

/// The sessions whose digest differs from what `destination` was last sent, with their
/// digest now: of every session, or of `only` those (the sessions of the events just pushed,
/// read through the session indexes rather than all the usage).
pub fn changed_sessions(
    conn: &Connection,
    destination: &str,
    only: Option<&[String]>,
) -> rusqlite::Result<Vec<(String, String)>> {
    let mut sent: HashMap<String, String> = HashMap::new();
    let mut stmt =
        conn.prepare_cached("SELECT session_id, digest FROM push_sessions WHERE destination = ?1")?;
    for row in stmt.query_map([destination], |r| Ok((r.get(0)?, r.get(1)?)))? {
        let (session, digest) = row?;
        sent.insert(session, digest);
    }
    let mut changed = Vec::new();
    let list = only.map(|ids| serde_json::to_string(ids).expect("strings serialize"));
    let mut stmt = conn.prepare_cached(&digest_sql(DIGEST_SQL, only.is_some()))?;
    let read = |r: &rusqlite::Row<'_>| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?));
    let rows = match only {
        Some(_) => stmt.query_map([list], read)?,
        None => stmt.query_map([], read)?,
    };
    for row in rows {
        let (session, text) = row?;
        let digest = rows::sha256_hex(&text);
        if sent.get(&session) != Some(&digest) {
            changed.push((session, digest));
        }
    }
    Ok(changed)
}

/// Records that `destination` now holds `sessions` as their digests say.
pub fn sessions_sent(
    conn: &Connection,
    destination: &str,
    sessions: &[(String, String)],
) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO push_sessions (destination, session_id, digest) VALUES (?1, ?2, ?3)
             ON CONFLICT (destination, session_id) DO UPDATE SET digest = ?3",
        )?;
        for (session, digest) in sessions {
            stmt.execute(params![destination, session, digest])?;
        }
    }
    tx.commit()
}

/// The derived rows of `sessions`: their `sessions` rows, turns, tool calls and usage.
pub struct SessionRows {
    pub sessions: Rows,
    pub turns: Rows,
    pub tool_calls: Rows,
    pub usage: Rows,
}

/// Reads the derived rows of `sessions` (`''`: the rows no session named), shaped by
/// `profile`.
pub fn session_rows(
    conn: &Connection,
    sessions: &[(String, String)],
    profile: &Profile<'_>,
) -> rusqlite::Result<SessionRows> {
    let read = |table: &'static Table| -> rusqlite::Result<Rows> {
        let sql = format!(
            "SELECT {} FROM {} WHERE session_id IS ?1",
            Rows::select_list(table),
            table.name
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = Rows::new(table);
        for (session, _) in sessions {
            let id = Some(session.as_str()).filter(|s| !s.is_empty());
            rows.read(&mut stmt, [id], profile)?;
        }
        Ok(rows)
    };
    Ok(SessionRows {
        sessions: read(&rows::SESSIONS)?,
        turns: read(&rows::TURNS)?,
        tool_calls: read(&rows::TOOL_CALLS)?,
        usage: read(&rows::USAGE)?,
    })
}

/// The store's price table, one row per model: (model, the five rates, as_of, origin).
pub type PriceRow = (String, [f64; 5], Option<String>, String);

/// The store's effective price table.
pub fn prices(conn: &Connection) -> rusqlite::Result<Vec<PriceRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT model, input, output, cache_write_5m, cache_write_1h, cache_read, as_of, origin
         FROM prices ORDER BY model",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get(0)?,
            [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
            r.get(6)?,
            r.get(7)?,
        ))
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::push::Content;
    use crate::model::redact::Redactor;

    #[test]
    fn a_batch_ends_at_its_own_last_event_whatever_comes_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::store::migrate(&mut conn, &path, crate::store::MIGRATIONS.len()).unwrap();
        let insert = |conn: &Connection, seq: i64| {
            conn.execute(
                "INSERT INTO events (seq, id, ts, entry, ingested_at) VALUES (?1, ?2, 1, '{}', 1)",
                params![seq, format!("e{seq}")],
            )
            .unwrap();
        };
        for seq in [3, 5, 9] {
            insert(&conn, seq);
        }
        let redactor = Redactor::new(&[]);
        let profile = Profile {
            content: Content::None,
            redactor: &redactor,
        };
        let (rows, last) = events_after(&conn, 0, 2, &profile).unwrap();
        assert_eq!((rows.len(), last), (2, Some(5)));
        let (rows, last) = events_after(&conn, 5, 10, &profile).unwrap();
        assert_eq!((rows.len(), last), (1, Some(9)));
        let (rows, last) = events_after(&conn, 9, 10, &profile).unwrap();
        assert_eq!((rows.len(), last), (0, None));
    }

    /// A store at the latest migration, in `dir`.
    fn latest_store(dir: &tempfile::TempDir) -> Connection {
        let path = dir.path().join("s.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::store::migrate(&mut conn, &path, crate::store::MIGRATIONS.len()).unwrap();
        conn
    }

    /// Each session's digest text by `sql` (a [`DIGEST_SQL`]).
    fn digests_by(conn: &Connection, sql: &str) -> HashMap<String, String> {
        let mut stmt = conn.prepare(&digest_sql(sql, false)).unwrap();
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        rows
    }

    /// Migration 0034 added premium requests to a session's digest: a session without any has
    /// the digest it had before (what the statement without them computes), so upgrading
    /// re-sends nothing; one with some has another.
    #[test]
    fn premium_requests_change_only_the_digests_of_sessions_that_have_some() {
        let dir = tempfile::tempdir().unwrap();
        let conn = latest_store(&dir);
        conn.execute_batch(
            "INSERT INTO usage (message_id, session_id, agent, model, ts, input_tokens,
               output_tokens, origin) VALUES ('m1', 'plain', 'claude', 'x', 1, 5, 7, 'hook');
             INSERT INTO usage (message_id, session_id, agent, model, ts, input_tokens,
               output_tokens, origin, premium_requests)
               VALUES ('m2', 'copilot', 'copilot', 'y', 1, 5, 7, 'hook', 0.33);",
        )
        .unwrap();
        let digests = |sql: &str| digests_by(&conn, sql);
        let now = digests(DIGEST_SQL);
        let before_0034 = DIGEST_SQL
            .replace(
                ",\n         CASE WHEN count(premium_requests) > 0 THEN total(premium_requests) END AS pr",
                "",
            )
            .replace(", u.sc, u.pr,", ", u.sc,");
        assert_ne!(
            before_0034, DIGEST_SQL,
            "the statement before 0034 is rebuilt"
        );
        let before = digests(&before_0034);
        assert_eq!(now["plain"], before["plain"]);
        assert_ne!(now["copilot"], before["copilot"]);
    }

    /// Migration 0036 added a session's imported turns to its digest: a session without any
    /// has the digest it had, whatever its other turns; one an import gave a turn, or whose
    /// imported turn a later import completed, has another.
    #[test]
    fn imported_turns_change_only_the_digests_of_sessions_that_have_some() {
        let dir = tempfile::tempdir().unwrap();
        let conn = latest_store(&dir);
        conn.execute_batch(
            "INSERT INTO sessions (session_id, first_seen, last_seen) VALUES ('hooked', 1, 2),
               ('imported', 1, 2);
             INSERT INTO turns (session_id, turn_key, ts, synthetic, event_id, response)
               VALUES ('hooked', 'u1', 1, 0, 'e1', 'hi');",
        )
        .unwrap();
        let digests = |conn: &Connection| digests_by(conn, DIGEST_SQL);
        let before = digests(&conn);
        let before_0036 = DIGEST_SQL.replace(",\n                 it.n, it.ts, it.len, ti.n)", ")");
        assert_ne!(
            before_0036, DIGEST_SQL,
            "the statement before 0036 is rebuilt"
        );
        assert_eq!(before, digests_by(&conn, &before_0036));
        conn.execute_batch(
            "INSERT INTO turns (session_id, turn_key, ts, synthetic, event_id, response, imported)
               VALUES ('imported', 'u9', 5, 1, 'e9', 'partial', 1);",
        )
        .unwrap();
        let after = digests(&conn);
        assert_eq!(after["hooked"], before["hooked"]);
        assert_ne!(after["imported"], before["imported"]);
        conn.execute_batch(
            "UPDATE turns SET response = 'partial, then whole' WHERE turn_key = 'u9'",
        )
        .unwrap();
        assert_ne!(digests(&conn)["imported"], after["imported"]);
        let only = digest_sql(DIGEST_SQL, true);
        let one: String = conn
            .query_row(&only, [r#"["imported"]"#], |r| r.get(1))
            .unwrap();
        assert_eq!(one, digests(&conn)["imported"].clone());
    }
}
