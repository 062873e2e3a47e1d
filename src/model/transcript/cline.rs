//! Cline's session transcript (`<data>/sessions/<id>/<id>.messages.json`, Cline 3) as turns
//! (pure), for `cmstore import` (issue 37).
//!
//! The transcript is a JSON document whose `messages` are Anthropic's: a `user` message whose
//! text is `<user_input mode="…">PROMPT</user_input>` begins a turn (its `id` the turn's id,
//! its `ts` when); a `user` message of `tool_result` blocks answers calls; an `assistant`
//! message gives text (the last non-empty is the answer), `thinking` and `tool_use` blocks,
//! and its model in `modelInfo.id`. Anything else (a reminder Cline adds, a hook's context) is
//! no prompt and goes to the turn going on.

use serde_json::Value;

use super::items::{ToolCallItem, ToolResultItem};
use super::{Turn, MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS, MAX_TOOL_OUTPUT_CHARS};
use crate::model::queue_line::ToolCallRecord;
use crate::model::shorten::{compact_json, cut_text};
use crate::model::wire::cline::prompt_of_message;

/// The turns of session `session`'s `messages`: each with its session and when its prompt was
/// written. A prompt nothing answered makes none.
pub fn turns(messages: &[Value], session: &str) -> Vec<(String, Turn, Option<i64>)> {
    let mut turns = Vec::new();
    // The turn going on, and its calls' ids in its order.
    let mut open: Option<(Turn, Option<i64>, Vec<String>)> = None;
    for m in messages {
        let ts = m["ts"].as_i64();
        if let Some(prompt) = prompt_of_message(m) {
            turns.extend(open.take().and_then(|o| answered(session, o)));
            let turn = Turn {
                turn_id: m["id"].as_str().map(str::to_owned),
                user: prompt,
                complete: true,
                ts,
                ..Turn::default()
            };
            open = Some((turn, ts, Vec::new()));
            continue;
        }
        let Some((turn, _, ids)) = open.as_mut() else {
            continue;
        };
        turn.ts = ts.or(turn.ts);
        let blocks = m["content"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        match m["role"].as_str() {
            Some("assistant") => answer(turn, ids, m, blocks),
            Some("user") => results(turn, ids, blocks),
            _ => {}
        }
    }
    turns.extend(open.and_then(|o| answered(session, o)));
    turns
}

fn answered(
    session: &str,
    (turn, started, _): (Turn, Option<i64>, Vec<String>),
) -> Option<(String, Turn, Option<i64>)> {
    let has = !turn.assistant.is_empty() || turn.reasoning.is_some() || !turn.tool_calls.is_empty();
    (has && turn.turn_id.is_some()).then(|| (session.to_owned(), turn, started))
}

/// An assistant message's text, thinking, calls and model, into the turn.
fn answer(turn: &mut Turn, ids: &mut Vec<String>, m: &Value, blocks: &[Value]) {
    if let Some(model) = m["modelInfo"]["id"].as_str() {
        turn.model = Some(model.to_owned());
    }
    let text: Vec<&str> = blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .filter(|t| !t.trim().is_empty())
        .collect();
    if !text.is_empty() {
        turn.assistant = text.join("\n");
    }
    for block in blocks {
        match block["type"].as_str() {
            Some("thinking") => {
                if let Some(t) = block["thinking"].as_str().filter(|t| !t.trim().is_empty()) {
                    turn.reasoning = Some(t.to_owned());
                }
            }
            Some("tool_use") if turn.tool_calls.len() < MAX_TOOL_CALLS => {
                ids.push(block["id"].as_str().unwrap_or_default().to_owned());
                turn.tool_calls.push(ToolCallRecord {
                    tool_name: block["name"].as_str().unwrap_or_default().to_owned(),
                    input: compact_json(&block["input"], MAX_TOOL_INPUT_CHARS),
                    output: String::new(),
                });
            }
            _ => {}
        }
    }
}

/// A user message's tool results, into the calls they answer.
fn results(turn: &mut Turn, ids: &[String], blocks: &[Value]) {
    for block in blocks.iter().filter(|b| b["type"] == "tool_result") {
        let Some(id) = block["tool_use_id"].as_str() else {
            continue;
        };
        let Some(i) = ids.iter().position(|c| c == id) else {
            continue;
        };
        let output = match &block["content"] {
            Value::String(s) => s.clone(),
            // Text blocks, or Cline's own results (`run_commands`: `{query, result, success}`).
            Value::Array(parts) => parts
                .iter()
                .map(|p| match p["text"].as_str().or(p["result"].as_str()) {
                    Some(text) => text.to_owned(),
                    None => p.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        if let Some(call) = turn.tool_calls.get_mut(i) {
            call.output = cut_text(&output, MAX_TOOL_OUTPUT_CHARS);
        }
    }
}

/// The tool calls the transcript shows (`tool_use` blocks) and their results (`tool_result`
/// blocks, failed when `is_error`), keyed by the call's id, for coverage.
pub fn tool_items(messages: &[Value], session: &str) -> (Vec<ToolCallItem>, Vec<ToolResultItem>) {
    let (mut calls, mut results) = (Vec::new(), Vec::new());
    for m in messages {
        let ts = m["ts"].as_i64();
        for block in m["content"].as_array().into_iter().flatten() {
            match (m["role"].as_str(), block["type"].as_str()) {
                (Some("assistant"), Some("tool_use")) => {
                    let Some(id) = block["id"].as_str() else {
                        continue;
                    };
                    calls.push(ToolCallItem {
                        id: id.to_owned(),
                        name: block["name"].as_str().map(str::to_owned),
                        session_id: Some(session.to_owned()),
                        ts,
                        sidechain: false,
                        input: Some(block["input"].to_string()),
                    });
                }
                (Some("user"), Some("tool_result")) => {
                    let Some(id) = block["tool_use_id"].as_str() else {
                        continue;
                    };
                    results.push(ToolResultItem {
                        id: id.to_owned(),
                        session_id: Some(session.to_owned()),
                        ts,
                        failed: block["is_error"] == true,
                    });
                }
                _ => {}
            }
        }
    }
    (calls, results)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cline 3.0.65's transcript of the end-to-end run (a prompt, a `run_commands` call, its
    /// result, the answer): one turn keyed by its prompt's message id.
    #[test]
    fn a_cline_run_is_one_turn_keyed_by_its_prompt() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/cline-3.0.65/sessions/1796632098181_05clx/",
            "1796632098181_05clx.messages.json"
        );
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let messages = doc["messages"].as_array().unwrap();
        let got = turns(messages, "1796632098181_05clx");
        assert_eq!(got.len(), 1, "{got:?}");
        let (session, turn, started) = &got[0];
        assert_eq!(session, "1796632098181_05clx");
        assert_eq!(
            turn.turn_id.as_deref(),
            Some("a475e797-0031-46e8-b7c1-70887a9d5ab9")
        );
        assert_eq!(turn.user, "SCENARIO:basic t-anth");
        assert_eq!(turn.assistant, "Done: ran echo.");
        assert_eq!(*started, Some(1_796_632_098_238));
        assert_eq!(turn.tool_calls.len(), 1, "{:?}", turn.tool_calls);
        assert_eq!(turn.tool_calls[0].tool_name, "run_commands");
        assert_eq!(turn.tool_calls[0].output, "hello-from-mock\n");
        let (calls, results) = tool_items(messages, "1796632098181_05clx");
        assert_eq!(
            (
                calls.len(),
                calls[0].id.as_str(),
                results.len(),
                results[0].failed
            ),
            (1, "toolu_1ad3e81363", 1, false)
        );
    }
}
