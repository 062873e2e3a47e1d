//! A Gemini CLI turn a Stop hook blocked, made one turn again.
//!
//! When an `AfterAgent` hook blocks (`decision: block`), Gemini CLI sends the hook's reason to
//! the model as a new request of the same turn: it fires `BeforeAgent` with the reason as its
//! `prompt` (nothing in that payload tells it from a typed prompt), then `AfterAgent` again
//! with `stop_hook_active: true`, the person's prompt and both answers. Only that second Stop
//! shows what the prompt between was, so ingest mends the record there, from the stored
//! events (whatever the batches):
//!
//! - the turn the previous Stop recorded takes the new Stop's answer, time and event, and the
//!   reason as its `feedback` (oldest first, as Claude Code's blocking Stop hooks give it);
//! - the reason's event keeps its row and line but is typed [`HOOK_FEEDBACK`], no longer
//!   `UserPromptSubmit`: no prompt is counted, shown or exported for it, in every reader;
//! - the new Stop makes no turn row of its own.
//!
//! When the store cannot tell (no earlier Stop with a turn row, or more than one prompt
//! between: a person typed one), the Stop is recorded as any other.

use rusqlite::{params, OptionalExtension, Transaction};

use super::Error;
use crate::model::queue_line::EventRow;

/// The `hook_type` of an event that carried a Stop hook's feedback to the agent as if it
/// were a prompt.
pub const HOOK_FEEDBACK: &str = "HookFeedback";

/// The session's (?1) latest Stop before the event ?2, its `seq`, and the turn it recorded
/// (the row whose event it is).
const PREVIOUS_TURN: &str = "
    SELECT t.turn_key, s.seq, c.seq FROM events s
    JOIN (SELECT seq FROM events WHERE id = ?2) c
    JOIN turns t ON t.session_id = s.session_id AND t.event_id = s.id
    WHERE s.seq = (SELECT max(seq) FROM events
                   WHERE session_id = ?1 AND hook_type = 'Stop'
                     AND seq < (SELECT seq FROM events WHERE id = ?2))";

/// The prompts of session ?1 between the events at `seq` ?2 and ?3, at most two.
const PROMPTS_BETWEEN: &str = "
    SELECT id, ts, prompt FROM events
    WHERE session_id = ?1 AND hook_type = 'UserPromptSubmit' AND seq > ?2 AND seq < ?3
    ORDER BY seq LIMIT 2";

/// The turn (?1 session, ?2 key) continued by the Stop ?3 at ?4: its answer (?5), model (?6)
/// and the hook's feedback (?7) added after what it had.
const CONTINUE_TURN: &str = "
    UPDATE turns SET event_id = ?3, ts = ?4, response = coalesce(?5, response),
      model = coalesce(?6, model),
      feedback = CASE WHEN ?7 IS NULL THEN feedback
                      WHEN feedback IS NULL THEN ?7
                      ELSE feedback || char(10) || ?7 END
    WHERE session_id = ?1 AND turn_key = ?2";

const RETYPE: &str = "UPDATE events SET hook_type = ?2 WHERE id = ?1";

/// What [`continue_blocked_turn`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Continued {
    /// Nothing: the Stop is recorded as any other.
    No,
    /// The turn was continued; no prompt came between.
    Turn,
    /// The turn was continued, and the prompt event at this time (epoch ms) was the hook's
    /// feedback: the rollups must take back the prompt they counted for it.
    WithFeedback { ts: i64 },
}

/// Makes the turn that the Stop `row` (fired again after a blocking Stop hook) continues one
/// turn with it, in `session`. See the module docs.
pub fn continue_blocked_turn(
    tx: &Transaction<'_>,
    row: &EventRow<'_>,
    session: &str,
) -> Result<Continued, Error> {
    let previous = tx
        .prepare_cached(PREVIOUS_TURN)?
        .query_row(params![session, row.id.as_ref()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .optional()?;
    let Some((turn_key, from, to)) = previous else {
        return Ok(Continued::No);
    };
    let prompts: Vec<(String, i64, Option<String>)> = tx
        .prepare_cached(PROMPTS_BETWEEN)?
        .query_map(params![session, from, to], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    if prompts.len() > 1 {
        return Ok(Continued::No);
    }
    let feedback = prompts.first();
    tx.prepare_cached(CONTINUE_TURN)?.execute(params![
        session,
        turn_key,
        row.id.as_ref(),
        row.ts,
        row.response.as_deref(),
        row.model.as_deref(),
        feedback.and_then(|(_, _, text)| text.as_deref()),
    ])?;
    Ok(match feedback {
        Some((id, ts, _)) => {
            tx.prepare_cached(RETYPE)?
                .execute(params![id, HOOK_FEEDBACK])?;
            Continued::WithFeedback { ts: *ts }
        }
        None => Continued::Turn,
    })
}
