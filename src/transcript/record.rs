//! One transcript line to zero or more [`Record`]s, whichever agent wrote it.
//!
//! The format is detected per line from its `type`: Claude Code uses bare words (`user`,
//! `assistant`, `system`), VS Code Copilot and Copilot CLI use dotted names (`user.message`).
//! Both formats are internal to their agents and change between versions, so anything
//! unknown or unparseable yields no record instead of an error.

use serde_json::Value;

use super::{claude, vscode};

/// What one transcript line says about the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A prompt typed (or sent) by the user: the start of a turn.
    UserPrompt {
        /// The line's own id (Claude `uuid`, VS Code `id`): the turn id.
        id: Option<String>,
        /// The prompt text.
        text: String,
    },
    /// Visible assistant text. Lines sharing a `message_id` are parts of one message.
    AssistantText {
        /// The API message this text belongs to, when the transcript names it.
        message_id: Option<String>,
        /// The text of this part.
        text: String,
    },
    /// Model reasoning (Claude `thinking`, VS Code `reasoningText`).
    Reasoning {
        /// The reasoning text.
        text: String,
    },
    /// A tool call the assistant made.
    ToolUse {
        /// Tool name as the agent spells it.
        name: String,
        /// Tool arguments (a JSON string in the transcript is parsed into its value).
        input: Value,
    },
    /// The end of the user's turn (Claude `system`/`turn_duration`, or an interruption).
    TurnEnd,
}

/// Choices that depend on the transcript file rather than on the line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Read Claude Code sidechain lines (`isSidechain: true`) *instead of* main-chain lines.
    ///
    /// Subagent transcripts (`subagents/agent-<id>.jsonl`) hold nothing but sidechain lines,
    /// while older main transcripts interleave them with the main conversation.
    pub sidechain: bool,
}

/// Parses one transcript line (without its newline). Never fails: unknown or broken lines
/// give an empty list.
pub fn parse_line(line: &[u8], options: ParseOptions) -> Vec<Record> {
    let trimmed = line.trim_ascii();
    if trimmed.first() != Some(&b'{') {
        return Vec::new();
    }
    let Ok(value) = serde_json::from_slice::<Value>(trimmed) else {
        return Vec::new();
    };
    let Some(kind) = value.get("type").and_then(Value::as_str) else {
        return Vec::new();
    };
    match kind {
        "user" | "assistant" | "system" => claude::parse(kind, &value, options),
        "user.message" | "assistant.message" | "tool.execution_start" => {
            vscode::parse(kind, &value)
        }
        _ => Vec::new(),
    }
}

/// Parses a tool-argument value that may be an object or a JSON *string* holding one.
pub(crate) fn tool_input(value: Option<&Value>) -> Value {
    match value {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::String(text)) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        Some(other) => other.clone(),
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

    #[test]
    fn tool_input_accepts_objects_and_json_strings() {
        let obj = serde_json::json!({"a": 1});
        assert_eq!(tool_input(Some(&obj)), obj);
        assert_eq!(tool_input(Some(&Value::String("{\"a\":1}".into()))), obj);
        assert_eq!(
            tool_input(Some(&Value::String("plain".into()))),
            Value::String("plain".into())
        );
        assert_eq!(tool_input(None), serde_json::json!({}));
    }
}
