//! The items a transcript shows, by the ids the hooks see too, so that the store can tell what
//! the hooks missed (`transcript_items`, `v_coverage`; docs/usage.md "Coverage"). Pure.
//!
//! Claude Code: each `tool_use` block of an `assistant` line is one tool call, its `id` the
//! `tool_use_id` that PreToolUse and PostToolUse carry. A call written again (one response
//! is written as one line per content block, and a compaction's subagent re-saves the
//! parent's lines) has the same id: one item.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// One tool call a transcript shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallItem {
    /// The call's id (`tool_use.id`).
    pub id: String,
    /// The tool's name.
    pub name: Option<String>,
    /// The line's session (`sessionId`; a subagent's lines name the parent's).
    pub session_id: Option<String>,
    /// The line's time, epoch milliseconds.
    pub ts: Option<i64>,
    /// A subagent's call (`isSidechain`).
    pub sidechain: bool,
    /// The call's input, as the line holds it (JSON text).
    pub input: Option<String>,
}

/// The result of a tool call a transcript shows: when it came and whether it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultItem {
    /// The call's id (`tool_result.tool_use_id`).
    pub id: String,
    /// The line's session.
    pub session_id: Option<String>,
    /// The line's time, epoch milliseconds.
    pub ts: Option<i64>,
    /// The result says the call failed (`is_error`).
    pub failed: bool,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    sidechain: Option<bool>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
}

/// An assistant line's message: its content is a list of blocks (a line whose content is a
/// plain string holds no tool call, and does not parse as this).
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    content: Option<Vec<Block<'a>>>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
}

/// The tool calls one Claude Code transcript line (newline excluded) shows; none for a line
/// that does not mention `"tool_use"`, which is not parsed.
pub fn claude_tool_calls(bytes: &[u8]) -> Vec<ToolCallItem> {
    if memchr::memmem::find(bytes, b"\"tool_use\"").is_none() {
        return Vec::new();
    }
    let Ok(line) = serde_json::from_slice::<Line<'_>>(bytes.trim_ascii()) else {
        return Vec::new();
    };
    if line.kind.as_deref() != Some("assistant") {
        return Vec::new();
    }
    let Some(blocks) = line.message.and_then(|m| m.content) else {
        return Vec::new();
    };
    let ts = line
        .timestamp
        .as_deref()
        .and_then(crate::support::clock::rfc3339_ms);
    blocks
        .into_iter()
        .filter(|b| b.kind.as_deref() == Some("tool_use"))
        .filter_map(|b| {
            Some(ToolCallItem {
                id: b.id.filter(|id| !id.is_empty())?.into_owned(),
                name: b.name.map(Cow::into_owned),
                session_id: line.session_id.as_deref().map(str::to_owned),
                ts,
                sidechain: line.sidechain.unwrap_or(false),
                input: b.input.map(|raw| raw.get().to_owned()),
            })
        })
        .collect()
}

/// The tool results a parsed Claude Code `user` line shows (its `tool_result` blocks); none for
/// any other line.
pub fn claude_tool_results(value: &Value) -> Vec<ToolResultItem> {
    if value.get("type").and_then(Value::as_str) != Some("user") {
        return Vec::new();
    }
    let Some(blocks) = value.pointer("/message/content").and_then(Value::as_array) else {
        return Vec::new();
    };
    let text = |key: &str| value.get(key).and_then(Value::as_str);
    let ts = text("timestamp").and_then(crate::support::clock::rfc3339_ms);
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .filter_map(|b| {
            let id = b.get("tool_use_id").and_then(Value::as_str)?;
            Some(ToolResultItem {
                id: Some(id).filter(|id| !id.is_empty())?.to_owned(),
                session_id: text("sessionId").map(str::to_owned),
                ts,
                failed: b.get("is_error").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_use_block_is_a_call_and_nothing_else_is() {
        let line = r#"{"type":"assistant","sessionId":"s1","isSidechain":true,"timestamp":"2026-02-08T17:28:33.068Z","message":{"content":[{"type":"text","text":"the \"tool_use\" word"},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}},{"type":"tool_use","id":"toolu_2","name":"Read","input":{}}]}}"#;
        let calls = claude_tool_calls(line.as_bytes());
        assert_eq!(
            calls.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(),
            ["toolu_1", "toolu_2"]
        );
        assert_eq!(calls[0].name.as_deref(), Some("Bash"));
        assert_eq!(calls[0].session_id.as_deref(), Some("s1"));
        assert_eq!(calls[0].ts, Some(1_770_571_713_068));
        assert!(calls[0].sidechain);
        assert_eq!(calls[0].input.as_deref(), Some("{}"));
        for other in [
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1"}]},"x":"tool_use"}"#,
            r#"{"type":"assistant","message":{"content":"a \"tool_use\" in text"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}"#,
            "not json \"tool_use\"",
        ] {
            assert_eq!(claude_tool_calls(other.as_bytes()), [], "{other}");
        }
    }

    #[test]
    fn each_tool_result_block_says_its_call_and_whether_it_failed() {
        let line = serde_json::json!({
            "type": "user", "sessionId": "s1", "timestamp": "2026-02-08T17:28:33.068Z",
            "message": {"content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true,
                 "content": [{"type": "text", "text": "exit 1"}]},
                {"type": "text", "text": "tool_result"},
                {"type": "tool_result", "tool_use_id": ""}
            ]}
        });
        let results = claude_tool_results(&line);
        let seen: Vec<(&str, bool)> = results.iter().map(|r| (r.id.as_str(), r.failed)).collect();
        assert_eq!(seen, [("toolu_1", false), ("toolu_2", true)]);
        assert_eq!(results[0].ts, Some(1_770_571_713_068));
        assert_eq!(results[0].session_id.as_deref(), Some("s1"));
        let assistant = serde_json::json!({"type": "assistant", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "toolu_3"}]}});
        assert_eq!(claude_tool_results(&assistant), []);
        let plain = serde_json::json!({"type": "user", "message": {"content": "tool_result"}});
        assert_eq!(claude_tool_results(&plain), []);
    }
}
