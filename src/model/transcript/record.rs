//! What a transcript line says, whichever agent wrote it: the [`Record`]s every format's
//! parser produces ([`super::parse`] picks the parser).

use serde_json::Value;

/// Characters of compact JSON kept per tool-call input.
pub const MAX_TOOL_INPUT_CHARS: usize = 2000;

/// Characters kept per tool-call output (as many as of an input): a reader may cut a
/// [`Record::ToolResult`]'s text to it as it reads it.
pub const MAX_TOOL_OUTPUT_CHARS: usize = MAX_TOOL_INPUT_CHARS;

/// What one transcript line says about the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// A prompt typed (or sent) by the user: the start of a turn. Text the harness injects
    /// (skill expansions, command caveats, reminders) is never one.
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
        /// The call's id (Claude `tool_use.id`, VS Code `toolCallId`), to pair its result.
        id: Option<String>,
        /// Tool name as the agent spells it.
        name: String,
        /// Tool arguments (a JSON string in the transcript is parsed into its value).
        input: Value,
    },
    /// What a tool call returned (Claude `tool_result`, VS Code `tool.execution_complete`).
    ToolResult {
        /// The id of the call it answers.
        id: String,
        /// The result's text. Claude Code's readers cut it to [`MAX_TOOL_OUTPUT_CHARS`]
        /// characters, all a turn keeps of it, as they read it: a tool's output is the bulk
        /// of a transcript.
        output: String,
    },
    /// Output of a command the user ran without the model (Claude `<local-command-stdout>`,
    /// `<bash-stdout>`): the command was no prompt, so a turn it opened without any answer
    /// is dropped.
    LocalOutput,
    /// The model that wrote an assistant line (Claude `message.model`, never `<synthetic>`;
    /// Copilot CLI `data.model`).
    Model {
        /// The model's id.
        name: String,
    },
    /// What a blocking hook told the agent (Claude `Stop hook feedback: …`, `Bash operation
    /// feedback: …`, written as a user line): no prompt, the turn goes on with it.
    HookFeedback {
        /// The feedback as the agent wrote it.
        text: String,
    },
    /// A Stop hook blocked the turn's end with this reason (Copilot CLI's `hook.end` of
    /// `agentStop` whose output says `decision: block`). The agent sends the reason on as a
    /// user message of its own: that message is the hook's feedback, no prompt.
    StopBlocked {
        /// The hook's `reason`.
        reason: String,
    },
    /// The API answered with an error Claude Code gave up on (`isApiErrorMessage`): no
    /// answer; unless the model goes on after it, the turn ended `failed`.
    ApiError,
    /// The end of the user's turn (Claude `system`/`turn_duration`).
    TurnEnd,
    /// The user interrupted the turn (Claude `[Request interrupted by user…]`): it ends
    /// unfinished, and is recorded with its prompt even when nothing was answered.
    Interrupted,
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
