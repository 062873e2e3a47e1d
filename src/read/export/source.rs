//! The export's side of the store: the events after the cursor, in `seq` order, with what
//! their spans link to; and the cursor itself, advanced by a compare-and-set only after the
//! collector acknowledged.
//!
//! Every lookup is deterministic (the latest matching event before this one, by `seq`), so a
//! resend links the same spans. The lookups walk a session's events of one kind backwards on
//! `events_session` (session, kind, then `seq`) from the event, and stop at the first match
//! or after [`LOOKBACK_SEQ`] rows of `seq`.
//!
//! Which prompt began a turn (its span is named by it, and its tool calls name it as their
//! parent): a Codex turn's prompt has its turn id; a turn harvested from the transcript, whose
//! line came at a later hook (an interrupted Claude Code turn, a VS Code turn), was begun by the
//! latest prompt before the turn's own time; a fired Stop's turn by the latest prompt before
//! its first end (a Stop a blocking hook repeated, or one after a prompt the agent never
//! answered, names the turn its first Stop named). A prompt another turn's Stop already
//! claimed (a Stop between them with another turn id) began none of them: such a turn is
//! named by its own key.

use rusqlite::{params, Connection, OptionalExtension};

use super::spans::{EventRecord, Links, TurnStart};

/// How far back, in `seq`, a span looks for its turn's prompt, its subagent's start or its
/// tool call's PreToolUse.
pub const LOOKBACK_SEQ: i64 = 200_000;

/// The events after the cursor (?1), at most ?2, with the fields their spans carry; the gate's
/// `risk` and `decision` as [`GATE_SQL`] reads them.
const BATCH_SQL: &str = "
SELECT seq, id, ts, hook_type, agent, session_id, tool_name, tool_call_id, turn_id, model,
       delegated_agent, actor_name, duration_ms, estimated_tokens, prompt, response,
       CASE WHEN json_valid(entry) THEN json_extract(entry, '$.toolInput') END,
       CASE WHEN json_valid(entry) THEN json_extract(entry, '$.toolResponse') END,
       CASE WHEN json_valid(entry) THEN json_extract(entry, '$.toolFailed') END,
       CASE WHEN json_valid(entry) THEN json_extract(entry, '$.error.message') END,
       CASE WHEN producer = 'cmstore' THEN risk
            WHEN json_valid(entry) THEN json_extract(entry, '$.risk') END,
       CASE WHEN producer = 'cmstore' THEN decision
            WHEN json_valid(entry) THEN json_extract(entry, '$.decision') END,
       synthetic,
       CASE WHEN json_valid(entry) THEN json_extract(entry, '$.turnTs') END,
       CASE WHEN json_valid(entry) THEN json_extract(entry, '$.turnPending') END,
       CASE WHEN json_valid(entry) THEN json_extract(entry, '$.turnOutcome') END
FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2";

const PROMPT_SQL: &str = "
SELECT id, ts, prompt, seq FROM events
WHERE session_id = ?1 AND seq < ?2 AND seq > ?2 - ?3 AND hook_type = 'UserPromptSubmit'
ORDER BY seq DESC LIMIT 1";

/// The prompt of a turn by its turn id (?2; Codex's prompts carry it), on the partial index
/// `events_turn_prompt`.
const PROMPT_OF_TURN_SQL: &str = "
SELECT id, ts, prompt, seq FROM events
WHERE session_id = ?1 AND turn_id = ?2 AND hook_type = 'UserPromptSubmit'
ORDER BY seq DESC LIMIT 1";

/// The latest prompt before the event (?2) at or before a harvested turn's own time (?4).
const PROMPT_BEFORE_TIME_SQL: &str = "
SELECT id, ts, prompt, seq FROM events
WHERE session_id = ?1 AND seq < ?2 AND seq > ?2 - ?3 AND hook_type = 'UserPromptSubmit'
  AND ts <= ?4
ORDER BY seq DESC LIMIT 1";

/// Whether a turn other than ?4 ended between the prompt (seq ?2) and the event (seq ?3): a
/// Stop fired with another turn id, or a harvested one whose turn happened after the prompt
/// (time ?5). Then the prompt began that turn, not this one.
const CLAIMED_SQL: &str = "
SELECT EXISTS (
  SELECT 1 FROM events
  WHERE session_id = ?1 AND seq > ?2 AND seq < ?3 AND hook_type IN ('Stop', 'StopFailure')
    AND turn_id IS NOT NULL AND turn_id <> ?4
    AND (coalesce(synthetic, 0) = 0
         OR coalesce(json_extract(entry, '$.turnTs'), 0) >= ?5)
    AND coalesce(json_extract(entry, '$.turnPending'), 0) = 0)";

/// Whether the turn ?4 ended (a Stop or StopFailure fired for it) between the events ?2 and
/// ?3 (seq): then the prompt at ?3 came after the turn's first end, and did not begin it.
const ENDED_BETWEEN_SQL: &str = "
SELECT EXISTS (
  SELECT 1 FROM events
  WHERE session_id = ?1 AND seq > ?2 AND seq < ?3 AND hook_type IN ('Stop', 'StopFailure')
    AND turn_id = ?4)";

/// A Gemini CLI session's previous prompt before the event ?2 whose turn the store made
/// `interrupted` (no AfterAgent answered it).
const UNANSWERED_SQL: &str = "
SELECT p.id, p.ts, p.prompt, p.seq FROM events p
JOIN turns t ON t.session_id = p.session_id AND t.turn_key = p.id
WHERE p.seq = (SELECT max(seq) FROM events
               WHERE session_id = ?1 AND seq < ?2 AND seq > ?2 - ?3
                 AND hook_type = 'UserPromptSubmit')
  AND t.outcome = 'interrupted' AND t.hook_type = 'UserPromptSubmit'";

const SUBAGENT_SQL: &str = "
SELECT ts FROM events
WHERE session_id = ?1 AND seq < ?2 AND seq > ?2 - ?3 AND hook_type = 'SubagentStart'
ORDER BY seq DESC LIMIT 1";

/// The gate's `risk` and `decision` of the latest PreToolUse of a call: for cmstore's own lines
/// the columns of migration 0018, which hold the line's values (cmstore's gate writes them only
/// as non-empty strings), without parsing the line; another producer's line is read as before
/// (an empty string or a number is carried as the line has it).
const GATE_SQL: &str = "
SELECT CASE WHEN producer = 'cmstore' THEN risk
            WHEN json_valid(entry) THEN json_extract(entry, '$.risk') END,
       CASE WHEN producer = 'cmstore' THEN decision
            WHEN json_valid(entry) THEN json_extract(entry, '$.decision') END,
       ts
FROM events
WHERE session_id = ?1 AND seq < ?2 AND seq > ?2 - ?3 AND hook_type = 'PreToolUse'
  AND tool_call_id = ?4
ORDER BY seq DESC LIMIT 1";

/// A turn's token usage: the session's main-conversation responses (not a subagent's) from
/// the turn's prompt (?2, exclusive) to its end (?3, inclusive), epoch ms. Matched by time:
/// transcripts do not tie a response to its prompt's line id.
const USAGE_SQL: &str = "
SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
       coalesce(sum(cache_read_tokens), 0), coalesce(sum(cache_write_tokens), 0)
FROM usage
WHERE session_id = ?1 AND ts > ?2 AND ts <= ?3 AND sidechain = 0";

/// Up to `limit` events after `after`, in `seq` order.
pub fn batch(conn: &Connection, after: i64, limit: usize) -> rusqlite::Result<Vec<EventRecord>> {
    let mut stmt = conn.prepare_cached(BATCH_SQL)?;
    let rows = stmt.query_map(params![after, limit as i64], |r| {
        Ok(EventRecord {
            seq: r.get(0)?,
            id: r.get(1)?,
            ts: r.get(2)?,
            hook_type: r.get(3)?,
            agent: r.get(4)?,
            session_id: r.get(5)?,
            tool_name: r.get(6)?,
            tool_call_id: r.get(7)?,
            turn_id: r.get(8)?,
            model: r.get(9)?,
            delegated_agent: r.get(10)?,
            actor_name: r.get(11)?,
            duration_ms: r.get(12)?,
            estimated_tokens: r.get(13)?,
            prompt: r.get(14)?,
            response: r.get(15)?,
            tool_input: text_of(r.get_ref(16)?),
            tool_response: text_of(r.get_ref(17)?),
            tool_failed: matches!(r.get::<_, Option<i64>>(18), Ok(Some(1))),
            error: text_of(r.get_ref(19)?),
            risk: text_of(r.get_ref(20)?),
            decision: text_of(r.get_ref(21)?),
            synthetic: matches!(r.get::<_, Option<i64>>(22), Ok(Some(1))),
            turn_ts: r.get::<_, Option<i64>>(23).ok().flatten(),
            turn_pending: matches!(r.get::<_, Option<i64>>(24), Ok(Some(1))),
            turn_outcome: text_of(r.get_ref(25)?),
        })
    })?;
    rows.collect()
}

/// A JSON field as text: strings as they are, anything else (an object tool input) as JSON.
fn text_of(value: rusqlite::types::ValueRef<'_>) -> Option<String> {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Null => None,
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
        ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
    }
}

/// What the span of `event` links to (see [`Links`]); nothing for an event that becomes no
/// span.
pub fn links(conn: &Connection, event: &EventRecord) -> rusqlite::Result<Links> {
    let mut links = Links::default();
    let Some(kind) = super::spans::Kind::of(event) else {
        return Ok(links);
    };
    let Some(session) = event.session_id.as_deref() else {
        return Ok(links);
    };
    let back = params![session, event.seq, LOOKBACK_SEQ];
    use super::spans::Kind;
    links.turn = match kind {
        Kind::Turn => prompt_of_turn(conn, event, session)?,
        Kind::Unanswered => None,
        _ => query_prompt(conn, PROMPT_SQL, back)?,
    };
    match kind {
        Kind::Subagent => {
            links.subagent_start = conn
                .prepare_cached(SUBAGENT_SQL)?
                .query_row(back, |r| r.get(0))
                .optional()?;
        }
        Kind::Tool => {
            if let Some(call) = event.tool_call_id.as_deref() {
                let pre = conn
                    .prepare_cached(GATE_SQL)?
                    .query_row(params![session, event.seq, LOOKBACK_SEQ, call], |r| {
                        Ok((
                            (text_of(r.get_ref(0)?), text_of(r.get_ref(1)?)),
                            r.get::<_, Option<i64>>(2)?,
                        ))
                    })
                    .optional()?;
                links.call_start = pre.as_ref().and_then(|(_, ts)| *ts);
                links.gate = pre
                    .map(|(gate, _)| gate)
                    .filter(|(risk, decision)| risk.is_some() || decision.is_some());
            }
        }
        Kind::Unanswered => links.unanswered = query_prompt(conn, UNANSWERED_SQL, back)?,
        Kind::Turn => {
            if let Some(start) = links.turn.as_ref().map(|t| t.ts) {
                links.usage = conn.prepare_cached(USAGE_SQL)?.query_row(
                    params![session, start, event.turn_end()],
                    |r| {
                        let responses: i64 = r.get(0)?;
                        Ok((responses > 0).then_some(super::spans::Usage {
                            input: r.get(1)?,
                            output: r.get(2)?,
                            cache_read: r.get(3)?,
                            cache_creation: r.get(4)?,
                        }))
                    },
                )?;
            }
        }
        Kind::Denied => {}
    }
    Ok(links)
}

/// The prompt event that began the turn `event` ends (see the module's rules); `None` when
/// none did.
fn prompt_of_turn(
    conn: &Connection,
    event: &EventRecord,
    session: &str,
) -> rusqlite::Result<Option<TurnStart>> {
    if let Some(turn) = event.turn_id.as_deref() {
        let by_id = query_prompt(conn, PROMPT_OF_TURN_SQL, params![session, turn])?;
        if by_id.is_some() {
            return Ok(by_id);
        }
    }
    let candidate = match event.turn_ts.filter(|_| event.synthetic) {
        Some(turn_ts) => query_prompt(
            conn,
            PROMPT_BEFORE_TIME_SQL,
            params![session, event.seq, LOOKBACK_SEQ, turn_ts],
        )?,
        // A harvested turn that does not say when it happened: no prompt can be told its.
        None if event.synthetic => None,
        None => prompt_before_first_end(conn, event, session)?,
    };
    let Some(prompt) = candidate else {
        return Ok(None);
    };
    let claimed = match event.turn_id.as_deref() {
        Some(turn) => conn.prepare_cached(CLAIMED_SQL)?.query_row(
            params![session, prompt.seq, event.seq, turn, prompt.ts],
            |r| r.get::<_, bool>(0),
        )?,
        None => false,
    };
    Ok((!claimed).then_some(prompt))
}

/// The latest prompt before the first end of the turn a fired Stop ends: the latest before
/// the Stop, moved back past every prompt that came after the turn had already ended once.
fn prompt_before_first_end(
    conn: &Connection,
    event: &EventRecord,
    session: &str,
) -> rusqlite::Result<Option<TurnStart>> {
    let mut prompt = query_prompt(conn, PROMPT_SQL, params![session, event.seq, LOOKBACK_SEQ])?;
    let Some(turn) = event.turn_id.as_deref() else {
        return Ok(prompt);
    };
    while let Some(p) = prompt.take() {
        let earlier = query_prompt(conn, PROMPT_SQL, params![session, p.seq, LOOKBACK_SEQ])?;
        let from = earlier.as_ref().map_or(p.seq - LOOKBACK_SEQ, |e| e.seq);
        let ended = conn
            .prepare_cached(ENDED_BETWEEN_SQL)?
            .query_row(params![session, from, p.seq, turn], |r| r.get::<_, bool>(0))?;
        if !ended {
            return Ok(Some(p));
        }
        prompt = earlier;
    }
    Ok(None)
}

/// The prompt `sql` finds (its id, time, text and seq), if any.
fn query_prompt(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Option<TurnStart>> {
    conn.prepare_cached(sql)?
        .query_row(params, |r| {
            Ok(TurnStart {
                event_id: r.get(0)?,
                ts: r.get(1)?,
                prompt: r.get(2)?,
                seq: r.get(3)?,
            })
        })
        .optional()
}

/// The export cursor of `destination`: the `seq` of the last event acknowledged (0: none).
pub fn cursor(conn: &Connection, destination: &str) -> rusqlite::Result<i64> {
    Ok(conn
        .query_row(
            "SELECT seq FROM export_cursors WHERE destination = ?1",
            [destination],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(0))
}

/// Moves the cursor of `destination` from `from` to `to`, counting `events` and `spans`;
/// `false` when it was not at `from` (another exporter moved it, or prune brought it back),
/// and then nothing changes. The cursor never passes the newest event: when prune deleted
/// the batch's last events meanwhile, the seqs after what remains will be used again, and
/// must still be exported.
pub fn advance(
    conn: &Connection,
    destination: &str,
    from: i64,
    to: i64,
    events: usize,
    spans: usize,
    now_ms: i64,
) -> rusqlite::Result<bool> {
    let changed = if from == 0 {
        conn.execute(
            "INSERT INTO export_cursors (destination, seq, events, spans, updated_at)
             VALUES (?1, min(?2, (SELECT coalesce(max(seq), 0) FROM events)), ?3, ?4, ?5)
             ON CONFLICT (destination) DO UPDATE
               SET seq = excluded.seq, events = events + excluded.events,
                   spans = spans + excluded.spans, updated_at = excluded.updated_at
               WHERE seq = 0",
            params![destination, to, events as i64, spans as i64, now_ms],
        )?
    } else {
        conn.execute(
            "UPDATE export_cursors
             SET seq = min(?3, (SELECT coalesce(max(seq), 0) FROM events)),
                 events = events + ?4, spans = spans + ?5, updated_at = ?6
             WHERE destination = ?1 AND seq = ?2",
            params![destination, from, to, events as i64, spans as i64, now_ms],
        )?
    };
    Ok(changed == 1)
}

/// Whether ingest is loading a backlog with the secondary indexes set aside: the span
/// lookups would scan the table meanwhile, so continuous export waits for the rebuild.
pub fn indexes_set_aside(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row("SELECT EXISTS (SELECT 1 FROM deferred_indexes)", [], |r| {
        r.get(0)
    })
}

/// Events after the cursor of `destination` (the backlog).
pub fn backlog(conn: &Connection, destination: &str) -> rusqlite::Result<i64> {
    let after = cursor(conn, destination)?;
    conn.query_row("SELECT count(*) FROM events WHERE seq > ?1", [after], |r| {
        r.get(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store_with(seqs: &[i64]) -> (tempfile::TempDir, crate::store::Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("c.db")).unwrap();
        let conn = store.conn().unwrap();
        for seq in seqs {
            conn.execute(
                "INSERT INTO events (seq, id, ts, entry, ingested_at) VALUES (?1, ?2, 0, '{}', 0)",
                params![seq, format!("e{seq}")],
            )
            .unwrap();
        }
        drop(conn);
        (dir, store)
    }

    #[test]
    fn the_cursor_moves_by_compare_and_set_and_never_past_the_newest_event() {
        let (_dir, store) = store_with(&[1, 2, 3, 4, 5]);
        let conn = store.conn().unwrap();
        assert_eq!(cursor(&conn, "d").unwrap(), 0);
        assert!(advance(&conn, "d", 0, 3, 3, 1, 1).unwrap());
        assert!(
            !advance(&conn, "d", 0, 5, 2, 1, 1).unwrap(),
            "not at 0 any more"
        );
        assert_eq!(cursor(&conn, "d").unwrap(), 3);
        // Prune deleted 4 and 5 after the batch was read: the cursor stops at 3.
        conn.execute("DELETE FROM events WHERE seq > 3", [])
            .unwrap();
        assert!(advance(&conn, "d", 3, 5, 2, 1, 1).unwrap());
        assert_eq!(cursor(&conn, "d").unwrap(), 3);
    }

    #[test]
    fn deleting_the_newest_events_brings_the_cursors_back() {
        let (_dir, store) = store_with(&[1, 2, 3, 4, 5]);
        let conn = store.conn().unwrap();
        assert!(advance(&conn, "a", 0, 5, 5, 5, 1).unwrap());
        assert!(advance(&conn, "b", 0, 2, 2, 2, 1).unwrap());
        conn.execute("DELETE FROM events WHERE seq >= 3", [])
            .unwrap();
        assert_eq!(cursor(&conn, "a").unwrap(), 2);
        assert_eq!(cursor(&conn, "b").unwrap(), 2);
        conn.execute("DELETE FROM events", []).unwrap();
        assert_eq!(cursor(&conn, "a").unwrap(), 0);
        // The seqs used again are after the cursor.
        conn.execute(
            "INSERT INTO events (id, ts, entry, ingested_at) VALUES ('new', 0, '{}', 0)",
            [],
        )
        .unwrap();
        assert_eq!(
            batch(&conn, cursor(&conn, "a").unwrap(), 10).unwrap()[0].id,
            "new"
        );
    }
}
