//! The items a transcript shows, by the ids the hooks see too, so that the store can tell what
//! the hooks missed (`transcript_items`, `v_coverage`; docs/usage.md "Coverage"). Pure.
//!
//! Claude Code: each `tool_use` block of an `assistant` line is one tool call, its `id` the
//! `tool_use_id` that PreToolUse and PostToolUse carry. A call written again (one response
//! is written as one line per content block, and a compaction's subagent re-saves the
//! parent's lines) has the same id: one item.

use std::borrow::Cow;

use serde::Deserialize;

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
        for other in [
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1"}]},"x":"tool_use"}"#,
            r#"{"type":"assistant","message":{"content":"a \"tool_use\" in text"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]}}"#,
            "not json \"tool_use\"",
        ] {
            assert_eq!(claude_tool_calls(other.as_bytes()), [], "{other}");
        }
    }
}
