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

use rusqlite::{params, Connection};

use crate::model::queue_line::EventRow;

/// `turns` row of an imported turn: ?1 session, ?2 turn id (its key), ?3 time, ?4 hook type,
/// ?5 prompt, ?6 response, ?7 tool call count, ?8 event id, ?9 model, ?10 thinking,
/// ?11 outcome, ?12 feedback, ?13 whether the time is the turn's own (a turn whose lines name
/// none is dated by its first import, and keeps that date).
const UPSERT_IMPORTED_TURN: &str = "
    INSERT INTO turns(session_id, turn_key, turn_id, ts, hook_type, prompt, response,
      tool_call_count, synthetic, event_id, model, thinking, outcome, feedback, imported)
    VALUES (?1, ?2, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, ?10, ?11, ?12, 1)
    ON CONFLICT(session_id, turn_key) DO UPDATE SET
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
    ])?;
    conn.prepare_cached(NOTE_TURN_ITEM)?.execute(params![
        session,
        turn_id,
        row.agent.as_deref(),
        started.unwrap_or(ts),
        subagent,
    ])?;
    Ok(true)
}
