//! OpenCode's stored messages as turns (pure), for `cmstore import` (issue 37).
//!
//! OpenCode keeps each message's fields as JSON (`message.data`: `role`, `time`, `modelID`,
//! `error`, …) and its parts apart (`part.data`: `text` with `synthetic` for text it added,
//! `reasoning`, `tool` with `tool`, `callID` and `state`). A turn is a `user` message (its id,
//! its text parts that are not synthetic, joined by newlines as cmstore's plugin joins them for
//! the hooks' prompt) and the `assistant` messages after it in the session: the last one's text
//! is the answer, the last reasoning the thinking, the tool parts the calls; an error ends it
//! `failed`, or `interrupted` when the person stopped it (`MessageAbortedError`).

use serde_json::Value;

use super::items::{ToolCallItem, ToolResultItem};
use super::{Turn, MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS, MAX_TOOL_OUTPUT_CHARS};
use crate::model::queue_line::ToolCallRecord;
use crate::model::shorten::{compact_json, cut_text};

/// One stored message with its parts, oldest first within its session.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// The message's id (a user message's is its turn's id).
    pub id: String,
    /// Its session.
    pub session: String,
    /// `message.data`.
    pub data: Value,
    /// Its parts' `data`, in their order.
    pub parts: Vec<Value>,
    /// When it was created, epoch ms.
    pub created: i64,
}

/// A turn read from the store: its session, the turn, and when its prompt was written.
pub type StoredTurn = (String, Turn, Option<i64>);

/// The turns of `messages` (grouped by session, each session's in order): a user message
/// with no answer at all makes none.
pub fn turns(messages: &[StoredMessage]) -> Vec<StoredTurn> {
    let mut turns = Vec::new();
    let mut open: Option<StoredTurn> = None;
    for m in messages {
        let same_session = open.as_ref().is_some_and(|(s, ..)| *s == m.session);
        match m.data.get("role").and_then(Value::as_str) {
            Some("user") => {
                turns.extend(open.take().filter(answered));
                open = Some((m.session.clone(), prompt_of(m), Some(m.created)));
            }
            Some("assistant") if same_session => {
                if let Some((_, turn, _)) = open.as_mut() {
                    answer(turn, m);
                }
            }
            _ => {}
        }
    }
    turns.extend(open.filter(answered));
    turns
}

fn answered((_, turn, _): &StoredTurn) -> bool {
    !turn.assistant.is_empty()
        || turn.reasoning.is_some()
        || !turn.tool_calls.is_empty()
        || turn.failed
        || turn.interrupted
}

/// A user message as a turn's start.
fn prompt_of(m: &StoredMessage) -> Turn {
    let text: Vec<&str> = m
        .parts
        .iter()
        .filter(|p| p["type"] == "text" && p["synthetic"] != true)
        .filter_map(|p| p["text"].as_str())
        .collect();
    Turn {
        turn_id: Some(m.id.clone()),
        user: text.join("\n"),
        complete: true,
        ts: Some(m.created),
        ..Turn::default()
    }
}

/// Adds an assistant message to its turn.
fn answer(turn: &mut Turn, m: &StoredMessage) {
    if let Some(model) = m.data["modelID"].as_str() {
        turn.model = Some(model.to_owned());
    }
    let time = &m.data["time"];
    turn.ts = time["completed"]
        .as_i64()
        .or(time["created"].as_i64())
        .or(turn.ts);
    let text: Vec<&str> = m
        .parts
        .iter()
        .filter(|p| p["type"] == "text" && p["synthetic"] != true)
        .filter_map(|p| p["text"].as_str())
        .filter(|t| !t.trim().is_empty())
        .collect();
    if !text.is_empty() {
        turn.assistant = text.join("\n");
    }
    for part in &m.parts {
        match part["type"].as_str() {
            Some("reasoning") => {
                if let Some(t) = part["text"].as_str().filter(|t| !t.trim().is_empty()) {
                    turn.reasoning = Some(t.to_owned());
                }
            }
            Some("tool") if turn.tool_calls.len() < MAX_TOOL_CALLS => {
                let state = &part["state"];
                turn.tool_calls.push(ToolCallRecord {
                    tool_name: part["tool"].as_str().unwrap_or_default().to_owned(),
                    input: compact_json(&state["input"], MAX_TOOL_INPUT_CHARS),
                    output: cut_text(
                        state["output"]
                            .as_str()
                            .or(state["error"].as_str())
                            .unwrap_or_default(),
                        MAX_TOOL_OUTPUT_CHARS,
                    ),
                });
            }
            _ => {}
        }
    }
    match m.data["error"]["name"].as_str() {
        Some("MessageAbortedError") => turn.interrupted = true,
        Some(_) => turn.failed = true,
        None => turn.failed = false,
    }
}

/// The tool calls the stored messages show (their `tool` parts) and how each ended, keyed by
/// the part's `callID`, which cmstore's plugin sends the hooks as `tool_use_id` (coverage:
/// what the hooks missed). A call still running has no result; one whose state is `error`
/// failed.
pub fn tool_items(messages: &[StoredMessage]) -> (Vec<ToolCallItem>, Vec<ToolResultItem>) {
    let (mut calls, mut results) = (Vec::new(), Vec::new());
    for m in messages {
        for part in m.parts.iter().filter(|p| p["type"] == "tool") {
            let Some(id) = part["callID"].as_str() else {
                continue;
            };
            let state = &part["state"];
            let time = &state["time"];
            calls.push(ToolCallItem {
                id: id.to_owned(),
                name: part["tool"].as_str().map(str::to_owned),
                session_id: Some(m.session.clone()),
                ts: time["start"].as_i64().or(Some(m.created)),
                sidechain: false,
                input: Some(state["input"].to_string()).filter(|_| !state["input"].is_null()),
            });
            let status = state["status"].as_str();
            if matches!(status, Some("completed" | "error")) {
                results.push(ToolResultItem {
                    id: id.to_owned(),
                    session_id: Some(m.session.clone()),
                    ts: time["end"].as_i64().or(time["start"].as_i64()),
                    failed: status == Some("error"),
                });
            }
        }
    }
    (calls, results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(id: &str, session: &str, data: Value, parts: Vec<Value>, at: i64) -> StoredMessage {
        StoredMessage {
            id: id.into(),
            session: session.into(),
            data,
            parts,
            created: at,
        }
    }

    #[test]
    fn a_prompt_and_its_answers_are_a_turn() {
        let messages = vec![
            message(
                "msg_u1",
                "ses_1",
                json!({"role": "user", "time": {"created": 1}}),
                vec![
                    json!({"type": "text", "text": "list the files"}),
                    json!({"type": "text", "text": "cmstore: context", "synthetic": true}),
                ],
                1,
            ),
            message(
                "msg_a1",
                "ses_1",
                json!({"role": "assistant", "modelID": "mock-model",
                       "time": {"created": 2, "completed": 3}}),
                vec![
                    json!({"type": "reasoning", "text": "Thinking."}),
                    json!({"type": "tool", "tool": "bash", "callID": "c1",
                           "state": {"status": "completed", "input": {"command": "ls"},
                                     "output": "a\nb"}}),
                ],
                2,
            ),
            message(
                "msg_a2",
                "ses_1",
                json!({"role": "assistant", "modelID": "mock-model",
                       "time": {"created": 4, "completed": 5}}),
                vec![json!({"type": "text", "text": "Two files."})],
                4,
            ),
            // Stopped by the person before any answer.
            message(
                "msg_u2",
                "ses_1",
                json!({"role": "user", "time": {"created": 6}}),
                vec![json!({"type": "text", "text": "and again"})],
                6,
            ),
            message(
                "msg_a3",
                "ses_1",
                json!({"role": "assistant", "error": {"name": "MessageAbortedError"},
                       "time": {"created": 7}}),
                vec![],
                7,
            ),
            // A prompt nothing answered makes no turn.
            message(
                "msg_u3",
                "ses_2",
                json!({"role": "user"}),
                vec![json!({"type": "text", "text": "hello?"})],
                8,
            ),
        ];
        let got = turns(&messages);
        assert_eq!(got.len(), 2, "{got:?}");
        let (session, first, started) = &got[0];
        assert_eq!((session.as_str(), *started), ("ses_1", Some(1)));
        assert_eq!(first.turn_id.as_deref(), Some("msg_u1"));
        assert_eq!(
            (first.user.as_str(), first.assistant.as_str()),
            ("list the files", "Two files.")
        );
        assert_eq!(first.reasoning.as_deref(), Some("Thinking."));
        assert_eq!(first.model.as_deref(), Some("mock-model"));
        assert_eq!(first.ts, Some(5));
        assert_eq!(
            first.tool_calls,
            vec![ToolCallRecord {
                tool_name: "bash".into(),
                input: r#"{"command":"ls"}"#.into(),
                output: "a\nb".into()
            }]
        );
        let (calls, results) = tool_items(&messages);
        assert_eq!(
            calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_deref(), c.input.as_deref()))
                .collect::<Vec<_>>(),
            [("c1", Some("bash"), Some(r#"{"command":"ls"}"#))]
        );
        assert_eq!(
            results
                .iter()
                .map(|r| (r.id.as_str(), r.failed))
                .collect::<Vec<_>>(),
            [("c1", false)]
        );
        let second = &got[1].1;
        assert_eq!(
            (second.user.as_str(), second.interrupted, second.failed),
            ("and again", true, false)
        );
    }
}
