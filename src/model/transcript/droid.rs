//! Droid's transcript lines (`~/.factory/sessions/<folder>/<session>.jsonl`), read as Claude
//! Code's (pure).
//!
//! A Droid line is `{"type": "message", "id", "message": {"role", "content"}}` with
//! Anthropic's content blocks (text, thinking, tool use, tool result), its model named
//! `modelId` on the message; the lines Droid writes for each hook's run are user messages with
//! no content, and the tools' list it sends the model a user message of `<system-reminder>`
//! text, which Claude Code's reading passes over as injected. A turn ends with an
//! `agent_turn_outcome` line. Seen with Droid 0.225.2 (docs/agents.md).

use serde_json::{json, Value};

use super::claude;
use super::record::{ParseOptions, Record};

/// Records of one Droid `message` line: the line in Claude Code's shape (its `id` as the
/// line's `uuid` and the message's `id`, its `modelId` as the message's `model`), read as
/// Claude Code's.
pub(crate) fn parse(line: &Value, options: ParseOptions) -> Vec<Record> {
    let Some(message) = line.get("message") else {
        return Vec::new();
    };
    let Some(role) = message.get("role").and_then(Value::as_str) else {
        return Vec::new();
    };
    if !matches!(role, "user" | "assistant") {
        return Vec::new();
    }
    let id = line.get("id").cloned().unwrap_or(Value::Null);
    let claude_line = json!({
        "uuid": id,
        "timestamp": line.get("timestamp"),
        "message": {
            "id": id,
            "model": message.get("modelId"),
            "content": message.get("content"),
        },
    });
    claude::parse(role, &claude_line, options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::transcript::parse::parse_line;

    fn records(line: &str) -> Vec<Record> {
        parse_line(line.as_bytes(), ParseOptions::default())
    }

    /// Lines of a Droid 0.225.2 session against the e2e mock, shortened.
    #[test]
    fn a_droid_session_reads_as_prompt_calls_answer_and_turn_end() {
        let hook = r#"{"type":"message","id":"h1","message":{"role":"user","content":[],"visibility":"user_only","hookEventName":"SessionStart"}}"#;
        assert_eq!(records(hook), vec![]);
        let context = r#"{"type":"message","id":"context-p1","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>\nThe tools listed below are available"}]}}"#;
        assert_eq!(records(context), vec![]);
        let prompt = r#"{"type":"message","id":"p1","parentId":"context-p1","timestamp":"2026-12-07T05:42:53.764Z","message":{"role":"user","content":[{"type":"text","text":"run the two steps"}],"interactionMode":"auto"}}"#;
        assert_eq!(
            records(prompt),
            vec![Record::UserPrompt {
                id: Some("p1".into()),
                text: "run the two steps".into()
            }]
        );
        let call = r#"{"type":"message","id":"a1","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_0","name":"Execute","input":{"command":"echo hi"}}],"modelId":"custom:Mock-0"}}"#;
        let got = records(call);
        assert!(
            got.contains(&Record::Model {
                name: "custom:Mock-0".into()
            }),
            "{got:?}"
        );
        assert!(
            got.iter()
                .any(|r| matches!(r, Record::ToolUse { name, .. } if name == "Execute")),
            "{got:?}"
        );
        let answer = r#"{"type":"message","id":"a2","message":{"role":"assistant","content":[{"type":"text","text":"Both steps are done."}],"modelId":"custom:Mock-0"}}"#;
        assert!(records(answer).contains(&Record::AssistantText {
            message_id: Some("a2".into()),
            text: "Both steps are done.".into()
        }));
        let end = r#"{"type":"agent_turn_outcome","turnId":"p1","reason":"completed","resultKind":"text"}"#;
        assert_eq!(records(end), vec![Record::TurnEnd]);
        let start = r#"{"type":"session_start","id":"s","version":2,"cwd":"/w"}"#;
        assert_eq!(records(start), vec![]);
    }
}
