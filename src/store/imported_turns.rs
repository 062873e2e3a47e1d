//! Turns `cmstore import` read from transcripts, written into `turns` beside the hooks'
//! (migration 0036; docs/usage.md, "Whole sessions from transcripts").
//!
//! A turn is keyed as the hooks key it, by its prompt line's id, so a turn both roads saw is
//! one row whatever came first. The rule when both have it: **a hook's fields win**; import
//! fills in only what the hook's row lacks (a reasoning the hook read before the transcript
//! had it). An imported row no hook has recorded yet (`imported = 1`) takes a later import's
//! fields, so a turn read while it was still going is completed by the next import; its
//! outcome is the later import's even when that is none (a turn that ended by itself after
//! an API error it was retried past). A row of
//! another kind (a main turn, a subagent's) is never changed by the other's import. Ingest's
//! own upsert takes a hook line's fields over an imported row's and clears `imported`, so the
//! two orders leave the same row.

use rusqlite::{params, Connection, OptionalExtension};

use crate::model::queue_line::EventRow;

/// `turns` row of an imported turn: ?1 session, ?2 turn id, ?3 time, ?4 hook type, ?5 prompt,
/// ?6 response, ?7 tool call count, ?8 event id, ?9 model, ?10 thinking, ?11 outcome,
/// ?12 feedback, ?13 whether the time is the turn's own (a turn whose lines name none is
/// dated by its first import, and keeps that date), ?14 its key (the turn id, but for a Gemini
/// turn its hooks recorded under another: [`TURN_ROW_BY_PROMPT`]). A row without a turn id gets
/// this one.
const UPSERT_IMPORTED_TURN: &str = "
    INSERT INTO turns(session_id, turn_key, turn_id, ts, hook_type, prompt, response,
      tool_call_count, synthetic, event_id, model, thinking, outcome, feedback, imported)
    VALUES (?1, ?14, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, ?10, ?11, ?12, 1)
    ON CONFLICT(session_id, turn_key) DO UPDATE SET
      turn_id = coalesce(turn_id, excluded.turn_id),
      ts = CASE WHEN imported = 1 AND ?13 THEN excluded.ts ELSE ts END,
      prompt = CASE WHEN imported = 1 THEN coalesce(excluded.prompt, prompt)
        ELSE coalesce(prompt, excluded.prompt) END,
      response = CASE WHEN imported = 1 THEN coalesce(excluded.response, response)
        ELSE coalesce(response, excluded.response) END,
      tool_call_count = CASE WHEN imported = 1
        THEN coalesce(excluded.tool_call_count, tool_call_count)
        ELSE coalesce(tool_call_count, excluded.tool_call_count) END,
      model = CASE WHEN imported = 1 THEN coalesce(excluded.model, model)
        ELSE coalesce(model, excluded.model) END,
      thinking = CASE WHEN imported = 1 THEN coalesce(excluded.thinking, thinking)
        ELSE coalesce(thinking, excluded.thinking) END,
      outcome = CASE WHEN imported = 1 THEN excluded.outcome
        ELSE coalesce(outcome, excluded.outcome) END,
      feedback = CASE WHEN imported = 1 THEN coalesce(excluded.feedback, feedback)
        ELSE coalesce(feedback, excluded.feedback) END
    WHERE hook_type IS excluded.hook_type";

/// The transcript shows turn ?2 of session ?1 (coverage: `v_coverage`), begun at ?4 (its
/// prompt's time), a subagent's when ?5.
const NOTE_TURN_ITEM: &str = "
    INSERT OR IGNORE INTO transcript_items(session_id, kind, item_id, agent, ts, sidechain)
    VALUES (?1, 'turn', ?2, ?3, ?4, ?5)";

/// The row of session ?1 that holds the turn whose transcript id is ?5, of an agent whose hooks
/// name no turn ([`crate::model::agents::Profile::turns_by_prompt`]: Gemini CLI, OpenCode):
/// the row keyed by it, else the hooks' row of its prompt ?2 whose end is within two minutes
/// of the turn's (?3, its last line's time) or whose prompt event is within two minutes of the
/// turn's prompt (?4), the nearest. Such hooks key a turn by its Stop event (or, for a turn
/// never answered, by its prompt's event; Cline a cancelled run by the run's id) and give it
/// no `turn_id` of the transcript's; an import that finds it gives it one where it has none.
/// A turn without a prompt (`store_text = false`) meets none.
const TURN_ROW_BY_PROMPT: &str = "
    SELECT turn_key, hook_type FROM (
      SELECT t.turn_key, t.hook_type, t.turn_id,
        min(abs(t.ts - ?3), abs(coalesce(
          (SELECT max(p.ts) FROM events p
           WHERE p.session_id = t.session_id AND p.hook_type = 'UserPromptSubmit'
             AND p.prompt = t.prompt
             AND p.seq <= (SELECT e.seq FROM events e WHERE e.id = t.event_id)),
          t.ts) - ?4)) AS gap
      FROM turns t
      WHERE t.session_id = ?1 AND (t.turn_id = ?5
        OR (t.imported = 0 AND ?2 IS NOT NULL AND t.prompt = ?2
            AND t.hook_type IN ('Stop', 'StopFailure', 'UserPromptSubmit', 'Interrupt'))))
    WHERE turn_id = ?5 OR gap <= 120000
    ORDER BY turn_id IS NOT ?5, gap LIMIT 1";

/// Gives the row (?1 session, ?2 key) the transcript's id ?3 of its turn, when it has none.
const GIVE_TURN_ID: &str = "
    UPDATE turns SET turn_id = ?3 WHERE session_id = ?1 AND turn_key = ?2 AND turn_id IS NULL";

/// Whether `agent`'s turns are met by their prompt and time.
fn by_prompt(agent: Option<&str>) -> bool {
    agent
        .and_then(crate::model::agents::Agent::from_name)
        .is_some_and(crate::model::agents::Agent::turns_by_prompt)
}

/// Whether session ?1's hooks recorded ?2 as a Stop hook's reason sent on as a prompt,
/// within two minutes of ?3 (the message's time).
const HOOK_FEEDBACK_PROMPT: &str = "SELECT 1 FROM events
    WHERE session_id = ?1 AND hook_type = 'HookFeedback' AND prompt = ?2
      AND abs(ts - ?3) <= 120000";

/// Writes `row`, the line a hook would have written for a turn read from a transcript (a
/// synthetic Stop, redacted as capture redacts), as an imported turn of its session; a
/// subagent's turn when `subagent`. Notes the turn as shown by the transcript, begun at
/// `started` (its prompt's time, else the turn's). A row without a session or a turn id is
/// not written (nothing could tell it from a hook's): `false`.
pub fn upsert(
    conn: &Connection,
    row: &EventRow<'_>,
    subagent: bool,
    started: Option<i64>,
) -> rusqlite::Result<bool> {
    let (Some(session), Some(turn_id)) = (row.session_id.as_deref(), row.turn_id.as_deref()) else {
        return Ok(false);
    };
    let own_time = row.harvested_turn_ts();
    let ts = own_time.unwrap_or(row.ts);
    let hook_type = if subagent { "SubagentStop" } else { "Stop" };
    let mut key = turn_id.to_owned();
    if by_prompt(row.agent.as_deref()) {
        let started = started.unwrap_or(ts);
        match meet_hooks_row(conn, session, turn_id, row.prompt.as_deref(), (ts, started))? {
            Meeting::Feedback | Meeting::Unknowable => return Ok(false),
            Meeting::Theirs(found) => {
                conn.prepare_cached(GIVE_TURN_ID)?
                    .execute(params![session, found, turn_id])?;
                note_item(conn, (session, &found), row, started, subagent)?;
                return Ok(false);
            }
            Meeting::Same(found) => key = found,
            Meeting::None => {}
        }
    }
    conn.prepare_cached(UPSERT_IMPORTED_TURN)?.execute(params![
        session,
        turn_id,
        ts,
        hook_type,
        row.prompt.as_deref(),
        row.response.as_deref(),
        row.tool_call_count,
        row.id.as_ref(),
        row.model.as_deref(),
        row.thinking.as_deref(),
        row.turn_outcome.as_deref(),
        row.hook_feedback.as_deref(),
        own_time.is_some(),
        key,
    ])?;
    note_item(conn, (session, &key), row, started.unwrap_or(ts), subagent)?;
    Ok(true)
}

/// What an imported turn of an agent whose hooks name no turn is to the hooks' rows.
enum Meeting {
    /// The row keyed so holds it: the import fills it in.
    Same(String),
    /// The hooks recorded it as failed or interrupted (a row of another kind): kept as it is.
    Theirs(String),
    /// The message carried a Stop hook's reason: the hooks made it the turn before's feedback.
    Feedback,
    /// It has no prompt (`store_text = false`): nothing could tell it from the hooks' rows.
    Unknowable,
    /// No row holds it yet.
    None,
}

/// Finds the row of `session` that holds the turn `turn_id` of `prompt`, which ended at the
/// first time and began at the second ([`TURN_ROW_BY_PROMPT`]).
fn meet_hooks_row(
    conn: &Connection,
    session: &str,
    turn_id: &str,
    prompt: Option<&str>,
    (ts, started): (i64, i64),
) -> rusqlite::Result<Meeting> {
    let Some(prompt) = prompt else {
        return Ok(Meeting::Unknowable);
    };
    let feedback = conn
        .prepare_cached(HOOK_FEEDBACK_PROMPT)?
        .exists(params![session, prompt, started])?;
    if feedback {
        return Ok(Meeting::Feedback);
    }
    let found: Option<(String, String)> = conn
        .prepare_cached(TURN_ROW_BY_PROMPT)?
        .query_row(params![session, prompt, ts, started, turn_id], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?;
    Ok(match found {
        Some((key, kind)) if kind == "Stop" => Meeting::Same(key),
        Some((key, _)) => Meeting::Theirs(key),
        None => Meeting::None,
    })
}

/// Notes turn `key` of `session` as shown by the transcript, begun at `started`.
fn note_item(
    conn: &Connection,
    (session, key): (&str, &str),
    row: &EventRow<'_>,
    started: i64,
    subagent: bool,
) -> rusqlite::Result<()> {
    conn.prepare_cached(NOTE_TURN_ITEM)?.execute(params![
        session,
        key,
        row.agent.as_deref(),
        started,
        subagent,
    ])?;
    Ok(())
}
