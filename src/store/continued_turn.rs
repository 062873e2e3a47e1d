//! A turn a Stop hook blocked, made one turn again when the agent sent the hook's reason on
//! as a prompt.
//!
//! When a Stop hook blocks (`decision: block`), Gemini CLI and Copilot CLI send its reason to
//! the model as a new message of the same turn, and fire their prompt hook (`BeforeAgent`,
//! `userPromptSubmitted`) with the reason as its `prompt`: nothing in that payload tells it
//! from a typed prompt. Then they fire the Stop hook again with `stop_hook_active: true`.
//! Only that second Stop shows what the prompt between was, so ingest mends the record there,
//! from the stored events (whatever the batches):
//!
//! - the reason's event keeps its row and line but is typed [`HOOK_FEEDBACK`], no longer
//!   `UserPromptSubmit`: no prompt is counted, shown or exported for it, in every reader;
//! - with `merge`, for an agent whose turns its Stops record (Gemini CLI), the turn the
//!   previous Stop recorded takes the new Stop's answer, time and event, and the reason as its
//!   `feedback` (oldest first), and the new Stop makes no turn row of its own. Copilot CLI's
//!   turns come from its transcript, which names the reason itself.
//!
//! When the store cannot tell (no earlier Stop, or more than one prompt between: a person
//! typed one), the Stop is recorded as any other.

use rusqlite::{params, OptionalExtension, Transaction};

use super::Error;
use crate::model::queue_line::EventRow;

/// The `hook_type` of an event that carried a Stop hook's feedback to the agent as if it
/// were a prompt.
pub const HOOK_FEEDBACK: &str = "HookFeedback";

/// The `seq` and id of the session's (?1) latest fired Stop before the event ?2, and the
/// event's own `seq`. Fired: a Stop harvested from the transcript in between (Copilot CLI's
/// turns) is no end the agent's hooks saw.
const PREVIOUS_STOP: &str = "
    SELECT s.seq, s.id, c.seq FROM events s, (SELECT seq FROM events WHERE id = ?2) c
    WHERE s.seq = (SELECT max(seq) FROM events
                   WHERE session_id = ?1 AND hook_type = 'Stop' AND seq < c.seq
                     AND coalesce(synthetic, 0) = 0)";

/// The turn of session ?1 that the Stop ?2 recorded (the row whose event it is).
const TURN_OF_STOP: &str = "SELECT turn_key FROM turns WHERE session_id = ?1 AND event_id = ?2";

/// The prompts of session ?1 between the events at `seq` ?2 and ?3, at most two.
const PROMPTS_BETWEEN: &str = "
    SELECT id, ts, prompt FROM events
    WHERE session_id = ?1 AND hook_type = 'UserPromptSubmit' AND seq > ?2 AND seq < ?3
    ORDER BY seq LIMIT 2";

/// The turn (?1 session, ?2 key) continued by the Stop ?3 at ?4: its answer (?5), model (?6)
/// and the hook's feedback (?7) added after what it had.
const CONTINUE_TURN: &str = "
    UPDATE turns SET event_id = ?3, ts = ?4, response = coalesce(?5, response),
      model = coalesce(?6, model), imported = 0,
      feedback = CASE WHEN ?7 IS NULL THEN feedback
                      WHEN feedback IS NULL THEN ?7
                      ELSE feedback || char(10) || ?7 END
    WHERE session_id = ?1 AND turn_key = ?2";

const RETYPE: &str = "UPDATE events SET hook_type = ?2 WHERE id = ?1";

/// The turn of session ?1 an import made of the message ?2 that carried a Stop hook's reason,
/// sent at ?3 (it read the message before the hooks told it was feedback): no hook recorded
/// it. Within two minutes of the reason's event, as turns are met by their prompts.
const DROP_IMPORTED_FEEDBACK_TURN: &str = "
    DELETE FROM turns WHERE session_id = ?1 AND imported = 1 AND prompt = ?2
      AND abs(ts - ?3) <= 120000";

/// The transcript's note of that turn (dropped first, while the row still names it).
const DROP_IMPORTED_FEEDBACK_ITEM: &str = "
    DELETE FROM transcript_items WHERE session_id = ?1 AND kind = 'turn' AND item_id IN
      (SELECT turn_key FROM turns WHERE session_id = ?1 AND imported = 1 AND prompt = ?2
         AND abs(ts - ?3) <= 120000)";

/// What [`continue_blocked_turn`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Continued {
    /// The Stop's turn is the previous Stop's: it makes no row of its own.
    pub merged: bool,
    /// The time (epoch ms) of the prompt event that was the hook's feedback: the rollups must
    /// take back the prompt they counted for it.
    pub feedback_ts: Option<i64>,
}

/// Mends the record of the Stop `row` (fired again after a blocking Stop hook) in `session`,
/// merging turn rows when `merge` says so. See the module docs.
pub fn continue_blocked_turn(
    tx: &Transaction<'_>,
    row: &EventRow<'_>,
    session: &str,
    merge: bool,
) -> Result<Continued, Error> {
    let previous = tx
        .prepare_cached(PREVIOUS_STOP)?
        .query_row(params![session, row.id.as_ref()], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .optional()?;
    let Some((from, stop_id, to)) = previous else {
        return Ok(Continued::default());
    };
    let prompts: Vec<(String, i64, Option<String>)> = tx
        .prepare_cached(PROMPTS_BETWEEN)?
        .query_map(params![session, from, to], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<Result<_, _>>()?;
    if prompts.len() > 1 {
        return Ok(Continued::default());
    }
    let feedback = prompts.first();
    let turn: Option<String> = if merge {
        tx.prepare_cached(TURN_OF_STOP)?
            .query_row(params![session, stop_id], |r| r.get(0))
            .optional()?
    } else {
        None
    };
    if let Some(turn_key) = &turn {
        tx.prepare_cached(CONTINUE_TURN)?.execute(params![
            session,
            turn_key,
            row.id.as_ref(),
            row.ts,
            row.response.as_deref(),
            row.model.as_deref(),
            feedback.and_then(|(_, _, text)| text.as_deref()),
        ])?;
    }
    if let Some((id, _, text)) = feedback {
        tx.prepare_cached(RETYPE)?
            .execute(params![id, HOOK_FEEDBACK])?;
        // An import that read the reason's message first made a turn of it: it is none.
        if let (true, Some(text)) = (merge, text) {
            let at = feedback.map(|(_, ts, _)| *ts);
            tx.prepare_cached(DROP_IMPORTED_FEEDBACK_ITEM)?
                .execute(params![session, text, at])?;
            tx.prepare_cached(DROP_IMPORTED_FEEDBACK_TURN)?
                .execute(params![session, text, at])?;
        }
    }
    Ok(Continued {
        merged: turn.is_some(),
        feedback_ts: feedback.map(|(_, ts, _)| *ts),
    })
}
