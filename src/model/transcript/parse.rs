//! One transcript line to zero or more [`Record`]s, whichever agent wrote it.
//!
//! The format is detected per line from its `type`: Claude Code uses bare words (`user`,
//! `assistant`, `system`), VS Code Copilot and Copilot CLI use dotted names (`user.message`),
//! Droid `message` with the role inside. (Gemini CLI's chat messages are read by
//! [`super::gemini`], for `cmstore import` only.)
//! Both formats are internal to their agents and change between versions, so anything
//! unknown or unparseable yields no record instead of an error.

use serde_json::Value;

use super::record::{ParseOptions, Record};
use super::{claude, droid, vscode};

/// Parses one transcript line (without its newline). Never fails: unknown or broken lines
/// give an empty list.
pub fn parse_line(line: &[u8], options: ParseOptions) -> Vec<Record> {
    parse_value(line).map_or_else(Vec::new, |value| records_of(&value, options))
}

/// The JSON object of one transcript line (without its newline); `None` for anything else.
/// With [`records_of`], what [`parse_line`] does, for a caller that reads more of the line
/// (the cursor takes its usage too, without parsing it twice).
pub fn parse_value(line: &[u8]) -> Option<Value> {
    let trimmed = line.trim_ascii();
    if trimmed.first() != Some(&b'{') {
        return None;
    }
    serde_json::from_slice::<Value>(trimmed).ok()
}

/// When one parsed transcript line was written (its `timestamp`: RFC 3339, as Claude Code,
/// VS Code and Copilot CLI write it, or epoch milliseconds), if it says.
pub fn line_time(value: &Value) -> Option<i64> {
    match value.get("timestamp")? {
        Value::String(text) => crate::support::clock::rfc3339_ms(text),
        Value::Number(ms) => ms.as_i64(),
        _ => None,
    }
}

/// The records of one parsed transcript line.
pub fn records_of(value: &Value, options: ParseOptions) -> Vec<Record> {
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Vec::new();
    };
    match kind {
        // `tool_result`: Qwen Code's line of a tool's output, in Claude Code's envelope.
        "user" | "assistant" | "system" | "tool_result" => claude::parse(kind, value, options),
        // Droid: Anthropic's blocks in an envelope of its own; a turn's end.
        "message" => droid::parse(value, options),
        "agent_turn_outcome" => vec![Record::TurnEnd],
        "user.message"
        | "assistant.message"
        | "tool.execution_start"
        | "tool.execution_complete"
        | "hook.end" => vscode::parse(kind, value),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_broken_lines_are_skipped() {
        let opts = ParseOptions::default();
        assert!(parse_line(b"", opts).is_empty());
        assert!(parse_line(b"not json", opts).is_empty());
        assert!(parse_line(b"{\"type\":\"user\",", opts).is_empty());
        assert!(parse_line(b"[1,2]", opts).is_empty());
        assert!(parse_line(b"{\"no\":\"type\"}", opts).is_empty());
        assert!(parse_line(br#"{"type":"progress","data":{}}"#, opts).is_empty());
        assert!(parse_line(br#"{"type":"session.start","data":{}}"#, opts).is_empty());
        assert!(parse_line(br#"{"type":"user","message":7}"#, opts).is_empty());
    }
}
