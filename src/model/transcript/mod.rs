//! Transcript readers (Claude Code, VS Code Copilot, Codex, Gemini CLI, Copilot CLI): pure
//! functions from a transcript's lines to turns and token usage.
//!
//! The hook handler reads a transcript on `PostToolUse` (harvest turns whose `Stop` never
//! fired), `Stop`/`SubagentStop` (the final exchange) and `PreCompact` (every turn since the
//! last compaction), through a per-session cursor that lives with the other files
//! ([`crate::files::transcript`]); this module is what the cursor parses with.
//!
//! Layers, each testable alone:
//! - [`parse_line`]: one JSONL line to [`Record`]s, format detected per line (pure);
//! - [`Assembler`]: records to [`Turn`]s (pure);
//! - [`usage`]: one transcript line to the usage of its API response (pure);
//! - [`codex_exit_code`]: a Codex shell call's exit code from the rollout's tail, which its
//!   PostToolUse payload does not carry.

mod claude;
pub mod claude_fast;
pub mod cline;
mod codex;
pub mod codex_items;
pub mod codex_turns;
mod droid;
pub mod gemini;
pub mod goose;
pub mod items;
pub mod kimi;
pub mod opencode;
pub mod parse;
#[cfg(test)]
mod real_transcript_tests;
mod record;
pub mod turns;
pub mod usage;
mod usage_codex;
mod usage_copilot;
pub mod usage_droid;
mod usage_gemini;
mod usage_qwen;
mod vscode;

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::model::queue_line::ToolCallRecord;
use crate::model::queue_line::TurnRecord;
pub use codex::exit_code as codex_exit_code;
pub use parse::parse_line;
pub use record::{ParseOptions, Record};
pub use turns::{
    assemble, Assembler, OpenTurn, MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS, MAX_TOOL_OUTPUT_CHARS,
};

/// One user prompt and what the assistant did about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Id of the user prompt's line; the dedup key for recorded turns.
    pub turn_id: Option<String>,
    /// The prompt text.
    pub user: String,
    /// Text of the last assistant message with non-empty text (empty when there was none).
    pub assistant: String,
    /// The last non-empty reasoning (Claude `thinking`, VS Code `reasoningText`): private to
    /// the model, never the answer.
    pub reasoning: Option<String>,
    /// The first ten tool calls; inputs are compact JSON that always parses, outputs their
    /// result's text, both shortened (empty when the transcript holds no result).
    pub tool_calls: Vec<ToolCallRecord>,
    /// True once the turn has ended (or `Stop` says it has).
    pub complete: bool,
    /// The model of the turn's latest assistant line, when the transcript names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The user interrupted it (its outcome is `interrupted`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// It ended on an API error (its outcome is `failed`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
    /// When the turn's latest transcript line that names a time was written (epoch ms): when
    /// the turn happened, whenever a hook reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<i64>,
    /// What blocking Stop hooks told the agent during the turn (Claude `Stop hook feedback`),
    /// oldest first, joined by newlines: the turn went on after each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}

impl Turn {
    /// The assistant's answer: its text, else `None`. Reasoning is never the answer (a turn
    /// that only thought and called tools has none): see [`Turn::thinking`].
    pub fn response(&self) -> Option<&str> {
        Some(self.assistant.as_str()).filter(|a| !a.trim().is_empty())
    }

    /// The model's reasoning, when the transcript holds any.
    pub fn thinking(&self) -> Option<&str> {
        self.reasoning.as_deref().filter(|r| !r.trim().is_empty())
    }

    /// The `{user, assistant, turnId}` shape of a PreCompact queue entry's `turns`, with
    /// [`Turn::response`] as the assistant text (reasoning left out).
    pub fn to_record(&self) -> TurnRecord {
        TurnRecord {
            user: self.user.clone(),
            assistant: self.response().unwrap_or_default().to_owned(),
            turn_id: self.turn_id.clone(),
        }
    }
}

/// The final turn a `Stop` hook asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinalTurn {
    /// Not recorded yet: record it now.
    Fresh(Turn),
    /// Already recorded (harvested, or an earlier `Stop`), with its turn id: the event is
    /// recorded without the exchange, naming the turn.
    Recorded(Option<String>),
    /// Recorded by an earlier `Stop` whose hook blocked it, and gone on since with that
    /// hook's feedback: recorded again, whole, under the same turn id (the store keeps one
    /// row per turn, with this later end).
    Continued(Turn),
    /// The transcript holds no turn at all (missing, empty, or nothing since the cursor).
    Missing,
    /// The transcript is written after the hook (Copilot CLI): the turn is not in it yet, and
    /// a later hook records it once it is.
    Pending,
}

impl FinalTurn {
    /// The turn to record, if any.
    pub fn into_turn(self) -> Option<Turn> {
        match self {
            FinalTurn::Fresh(turn) | FinalTurn::Continued(turn) => Some(turn),
            FinalTurn::Recorded(_) | FinalTurn::Missing | FinalTurn::Pending => None,
        }
    }
}

/// Why a transcript or cursor could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The state directory could not be created.
    #[error("cannot create state directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    /// The lock file could not be opened or locked.
    #[error("cannot lock {path}: {source}")]
    Lock { path: PathBuf, source: io::Error },
    /// The transcript could not be read.
    #[error("cannot read transcript {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    /// The cursor file could not be written.
    #[error("cannot write cursor {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// What one [`Tracker`](crate::files::transcript::Tracker) call read from the transcript.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Byte offset where reading started.
    pub start_offset: u64,
    /// Byte offset just past the last complete line consumed.
    pub end_offset: u64,
    /// Bytes read from the transcript, an incomplete last line included (the small
    /// fingerprint read that detects a replaced file is not counted).
    pub bytes_read: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_is_never_the_response() {
        let mut turn = Turn {
            turn_id: Some("u1".into()),
            user: "q".into(),
            assistant: "answer".into(),
            reasoning: Some("thoughts".into()),
            ..Turn::default()
        };
        assert_eq!(turn.response(), Some("answer"));
        assert_eq!(turn.thinking(), Some("thoughts"));
        turn.assistant = " ".into();
        assert_eq!(turn.response(), None);
        assert_eq!(turn.thinking(), Some("thoughts"));
        assert_eq!(
            turn.to_record(),
            TurnRecord {
                user: "q".into(),
                assistant: String::new(),
                turn_id: Some("u1".into())
            }
        );
        turn.reasoning = Some(" ".into());
        assert_eq!(turn.thinking(), None);
    }
}
