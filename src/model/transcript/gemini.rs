//! Gemini CLI's chat records (pure): the lines of a JSON Lines chat
//! (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, 0.39 on) and the `messages` of the JSON
//! chats before it, which share their shape.
//!
//! A message is `{"id", "timestamp", "type", "content", …}`:
//! - `user`: `content` is the prompt Gemini sent (its parts' texts, `@`-files expanded; what
//!   the person typed is `displayContent`), or the results of the model's tool calls
//!   (`functionResponse` parts, 0.61); the record's `id` is the turn's id, which capture
//!   keys the turn by at `AfterAgent` and `import` keys it by again;
//! - `gemini`: the model's answer (`content`), its `thoughts`, `model` and `toolCalls` (each
//!   with its `result` once it ran). Gemini appends a message again, whole and with the same
//!   id, each time its tool calls change: its text replaces the answer's, and a call already
//!   seen is not counted twice;
//! - `error`: the request failed;
//! - `info`, `warning`, the header line, `$set` and `$rewindTo` lines: nothing of a turn.
//!
//! Not prompts: the `<session_context>` message Gemini opens a chat with, and the
//! `Please continue.` it sends by itself when its next-speaker check says the model should go
//! on (no `BeforeAgent` fires for either). A `<hook_context>` part is what a hook (cmstore's
//! reply) added to the prompt, not the person's words.

use serde_json::Value;

use super::record::{tool_input, Record};

/// The records of one line of a Gemini CLI chat (a message); none for any other line.
pub fn records(line: &Value) -> Vec<Record> {
    let Some(kind) = line.get("type").and_then(Value::as_str) else {
        return Vec::new();
    };
    if line.get("content").is_none() || line.get("id").is_none() {
        return Vec::new();
    }
    match kind {
        "user" => user(line),
        "gemini" => gemini(line),
        "error" => vec![Record::ApiError],
        _ => Vec::new(),
    }
}

/// The messages Gemini CLI sends by itself, never a person's prompt.
const NOT_PROMPTS: &[&str] = &["Please continue.", "System: Please continue."];

fn user(message: &Value) -> Vec<Record> {
    let mut records = Vec::new();
    let mut text = String::new();
    match message.get("content") {
        Some(Value::String(s)) => text.push_str(s),
        Some(Value::Array(parts)) => {
            for part in parts {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    if !t.trim_start().starts_with("<hook_context>") {
                        text.push_str(t);
                    }
                }
                if let Some(result) = part.get("functionResponse") {
                    records.extend(tool_result(result));
                }
            }
        }
        _ => {}
    }
    let opening = text.trim_start();
    let injected = opening.starts_with("<session_context>")
        || NOT_PROMPTS.contains(&text.trim())
        || opening.is_empty();
    if !injected {
        let id = message.get("id").and_then(Value::as_str).map(str::to_owned);
        records.insert(0, Record::UserPrompt { id, text });
    }
    records
}

fn gemini(message: &Value) -> Vec<Record> {
    let mut records = Vec::new();
    if let Some(model) = message.get("model").and_then(Value::as_str) {
        records.push(Record::Model {
            name: model.to_owned(),
        });
    }
    let thoughts: Vec<&str> = message
        .get("thoughts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("description").and_then(Value::as_str))
        .filter(|d| !d.trim().is_empty())
        .collect();
    if !thoughts.is_empty() {
        records.push(Record::Reasoning {
            text: thoughts.join("\n"),
        });
    }
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    };
    // No message id: a message written again replaces the answer rather than adding to it.
    records.push(Record::AssistantText {
        message_id: None,
        text,
    });
    for call in message
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = call.get("name").and_then(Value::as_str) else {
            continue;
        };
        let id = call.get("id").and_then(Value::as_str).map(str::to_owned);
        records.push(Record::ToolUse {
            id,
            name: name.to_owned(),
            input: tool_input(call.get("args")),
        });
        for part in call
            .get("result")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(result) = part.get("functionResponse") {
                records.extend(tool_result(result));
            }
        }
    }
    records
}

/// A `functionResponse` part as the result of the call it names: its `response.output` (or
/// `response.error`), else the response's JSON.
fn tool_result(result: &Value) -> Option<Record> {
    let id = result.get("id").and_then(Value::as_str)?;
    let response = result.get("response");
    let output = response
        .and_then(|r| r.get("output").or_else(|| r.get("error")))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| response.map(Value::to_string))
        .unwrap_or_default();
    Some(Record::ToolResult {
        id: id.to_owned(),
        output,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::transcript::parse::line_time;
    use crate::model::transcript::Assembler;

    const CHAT_0_61: &str = include_str!("../../../tests/fixtures/gemini/chat-0.61.0.jsonl");

    /// Gemini CLI 0.61's chat of the end-to-end run: one prompt, a shell call and its result,
    /// the answer; the `<session_context>` message of the `$set` checkpoint is no prompt.
    /// The turns of a whole chat, as an import assembles them.
    fn assemble(chat: &str) -> Vec<crate::model::transcript::Turn> {
        let mut assembler = Assembler::default();
        let mut offset = 0;
        for line in chat.lines() {
            let value: Value = serde_json::from_str(line).unwrap();
            assembler.at(line_time(&value));
            for record in records(&value) {
                assembler.feed(offset, record);
            }
            offset += line.len() as u64 + 1;
        }
        let (mut turns, open) = assembler.finish();
        turns.extend(open.filter(|o| o.has_output()).map(|o| o.to_turn(false)));
        turns
    }

    #[test]
    fn a_chat_of_0_61_is_one_turn_keyed_by_its_user_record() {
        let turns = assemble(CHAT_0_61);
        assert_eq!(turns.len(), 1, "{turns:?}");
        let turn = &turns[0];
        assert_eq!(
            turn.turn_id.as_deref(),
            Some("c287b7c8-e3a5-4b6d-a3e2-e37955466b4e")
        );
        assert_eq!(
            (turn.user.as_str(), turn.assistant.as_str()),
            ("explore", "Done.")
        );
        assert_eq!(turn.model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(turn.reasoning.as_deref(), Some("Thinking."));
        // The call written twice (its message appended again with its result) is one call.
        assert_eq!(turn.tool_calls.len(), 1, "{:?}", turn.tool_calls);
        let call = &turn.tool_calls[0];
        assert_eq!(call.tool_name, "run_shell_command");
        assert_eq!(call.input, r#"{"command":"echo hi"}"#);
        assert!(call.output.contains("Output: hi"), "{}", call.output);
    }

    #[test]
    fn injected_messages_and_hook_context_are_no_prompt() {
        let line = |content: Value| {
            serde_json::json!({"id": "u1", "timestamp": "2026-12-01T10:00:00Z", "type": "user",
                "content": content})
        };
        let of = |content| records(&line(content));
        assert_eq!(of(serde_json::json!("Please continue.")), vec![]);
        assert_eq!(
            of(serde_json::json!([{"text": "<session_context>\nThis is the Gemini CLI."}])),
            vec![]
        );
        assert_eq!(
            of(serde_json::json!([{"text": "fix it"},
                {"text": "<hook_context>budget: 80 %</hook_context>"}])),
            vec![Record::UserPrompt {
                id: Some("u1".into()),
                text: "fix it".into()
            }]
        );
        // A JSON chat's string content, as 0.38 and earlier wrote it.
        assert_eq!(
            of(serde_json::json!("explore")),
            vec![Record::UserPrompt {
                id: Some("u1".into()),
                text: "explore".into()
            }]
        );
        let header = serde_json::json!({"sessionId": "s", "kind": "main"});
        assert_eq!(records(&header), vec![]);
    }
}
