//! Turns read from the transcript, put into entries: the final exchange of a Stop, and the
//! synthetic Stops of harvested turns.

use crate::files::transcript::SeenSession;
use crate::model::queue_line::{
    estimate_tokens, harvested_id, HookType, QueueEntry, ToolCallRecord,
};
use crate::model::transcript::Turn;

/// Puts a turn read from the transcript into a Stop entry.
///
/// The response is the payload's `last_assistant_message`, else the transcript's last
/// assistant text: Claude Code writes its transcript asynchronously, so the final message may
/// not be there yet. The reasoning goes to `thinking`, never to the response.
pub(super) fn fill_exchange(entry: &mut QueueEntry, turn: Turn) {
    let parts = Parts::of(turn);
    entry.turn_outcome = parts.outcome.or(entry.turn_outcome.take());
    entry.hook_feedback = parts.feedback;
    let from_payload = entry.response.take().filter(|r| !r.trim().is_empty());
    entry.response = from_payload.or(parts.response);
    entry.thinking = parts.thinking;
    if !parts.user.is_empty() {
        entry.prompt = Some(parts.user);
    }
    entry.tool_calls = Some(parts.tool_calls);
    if parts.turn_id.is_some() {
        entry.turn_id = parts.turn_id;
    }
    // The payload's model when it names one (Codex, per turn), else the transcript's.
    if entry.model.is_none() {
        entry.model = parts.model;
    }
}

/// A turn taken apart for an entry, its texts moved, not copied: the first hook of a session
/// on a long transcript harvests hundreds of turns, and copying their texts and tool outputs
/// was a fifth of that hook's page faults.
struct Parts {
    turn_id: Option<String>,
    user: String,
    /// [`Turn::response`].
    response: Option<String>,
    /// [`Turn::thinking`].
    thinking: Option<String>,
    tool_calls: Vec<ToolCallRecord>,
    model: Option<String>,
    outcome: Option<String>,
    /// [`Turn::feedback`].
    feedback: Option<String>,
    /// [`Turn::ts`].
    ts: Option<i64>,
}

impl Parts {
    fn of(turn: Turn) -> Parts {
        let outcome = turn_outcome(&turn);
        let has_thinking = turn.thinking().is_some();
        let has_response = turn.response().is_some();
        let Turn {
            turn_id,
            user,
            assistant,
            reasoning,
            tool_calls,
            model,
            ts,
            feedback,
            ..
        } = turn;
        Parts {
            turn_id,
            user,
            response: Some(assistant).filter(|_| has_response),
            thinking: reasoning.filter(|_| has_thinking),
            tool_calls,
            model,
            outcome,
            feedback,
            ts,
        }
    }
}

/// `interrupted` for a turn the user stopped, `failed` for one an API error ended; `None`
/// for one that ended by itself.
fn turn_outcome(turn: &Turn) -> Option<String> {
    if turn.interrupted {
        Some("interrupted".to_string())
    } else {
        turn.failed.then(|| "failed".to_string())
    }
}

/// A synthetic `Stop` entry for a turn harvested from the transcript (VS Code turns are
/// captured this way when its Stop hook never fires). Its size is the turn's own text.
pub(super) fn synthetic_stop(trigger: &QueueEntry, turn: Turn) -> QueueEntry {
    let mut e = harvested_stop(trigger, turn);
    name_by_turn(&mut e);
    e
}

/// [`synthetic_stop`]'s entry in the session of `trigger`, before it is named.
fn harvested_stop(trigger: &QueueEntry, turn: Turn) -> QueueEntry {
    let mut e = QueueEntry::new(HookType::Stop.as_str(), trigger.timestamp);
    e.event = trigger.event.clone();
    e.agent = trigger.agent.clone();
    e.origin = trigger.origin.clone();
    e.participant = trigger.participant.clone();
    e.session_id = trigger.session_id.clone();
    e.cwd = trigger.cwd.clone();
    e.root_hint = trigger.root_hint.clone();
    e.transcript_path = trigger.transcript_path.clone();
    e.actor_type = trigger.actor_type.clone();
    e.actor_name = trigger.actor_name.clone();
    e.synthetic = Some(true);
    let parts = Parts::of(turn);
    let response = parts.response.unwrap_or_default();
    let size = parts.user.len()
        + response.len()
        + parts.feedback.as_ref().map_or(0, String::len)
        + parts
            .tool_calls
            .iter()
            .map(|c| c.tool_name.len() + c.input.len() + c.output.len())
            .sum::<usize>();
    e.turn_outcome = parts.outcome;
    e.hook_feedback = parts.feedback;
    // The model that answered this turn, else the one the triggering event names.
    e.model = parts.model.or_else(|| trigger.model.clone());
    e.prompt = Some(parts.user);
    e.response = Some(response);
    e.thinking = parts.thinking;
    e.turn_id = parts.turn_id;
    e.tool_calls = Some(parts.tool_calls);
    // The hook's time is the line's; the turn's own goes apart (ingest dates the turn by it).
    e.turn_ts = parts.ts;
    e.size_bytes = size as u64;
    e.estimated_tokens = estimate_tokens(e.size_bytes);
    e
}

/// Gives a harvested turn's line the id its session and turn make ([`harvested_id`]), when
/// the turn has an id: harvested again, it is the same line to the store.
fn name_by_turn(e: &mut QueueEntry) {
    if let Some(turn) = &e.turn_id {
        e.id = harvested_id(e.session_id.as_deref().unwrap_or(""), turn);
    }
}

/// A synthetic `Stop` for a turn of `seen`, an earlier session of the workspace that the
/// hook of `trigger` (another session) closed: the line is the earlier session's, with its
/// agent and transcript; only the time and the event name come from the trigger.
pub(super) fn closed_stop(trigger: &QueueEntry, seen: &SeenSession, turn: Turn) -> QueueEntry {
    let model = turn.model.clone();
    let mut e = harvested_stop(trigger, turn);
    of_closed_session(&mut e, seen);
    // Named in its own session, as the sweep names it.
    name_by_turn(&mut e);
    e.model = model;
    e.actor_type = None;
    e.actor_name = None;
    e
}

/// Makes `e` a line of `seen`, a session being closed: its id, transcript, agent and how its
/// lines name the agent.
pub(super) fn of_closed_session(e: &mut QueueEntry, seen: &SeenSession) {
    e.session_id = Some(seen.session.clone());
    e.transcript_path = Some(seen.transcript.clone());
    e.agent.clone_from(&seen.agent);
    e.origin = seen
        .agent
        .as_deref()
        .and_then(crate::model::wire::Agent::from_flag)
        .map(|agent| agent.origin().to_string())
        .or(e.origin.take());
    e.participant.clone_from(&seen.participant);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_text_wins_over_a_lagging_transcript() {
        let mut e = QueueEntry::new("Stop", 0);
        e.response = Some("final".into());
        let turn = Turn {
            user: "q".into(),
            assistant: "earlier".into(),
            ..Turn::default()
        };
        fill_exchange(&mut e, turn.clone());
        assert_eq!(e.response.as_deref(), Some("final"));
        assert_eq!(e.prompt.as_deref(), Some("q"));
    }

    #[test]
    fn reasoning_is_kept_apart_never_the_response() {
        let turn = Turn {
            user: "q".into(),
            reasoning: Some("private thoughts".into()),
            ..Turn::default()
        };
        let mut e = QueueEntry::new("Stop", 0);
        fill_exchange(&mut e, turn.clone());
        assert_eq!(e.response, None);
        assert_eq!(e.thinking.as_deref(), Some("private thoughts"));

        let stop = synthetic_stop(&QueueEntry::new("PostToolUse", 0), turn);
        assert_eq!(stop.response.as_deref(), Some(""));
        assert_eq!(stop.thinking.as_deref(), Some("private thoughts"));
        let line: serde_json::Value = serde_json::from_str(&stop.to_line()).unwrap();
        assert_eq!(line["thinking"], "private thoughts");
        assert_eq!(line["response"], "");
    }
}
