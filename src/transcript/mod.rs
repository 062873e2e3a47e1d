//! Transcript readers (Claude Code, VS Code Copilot), per-session cursors, turn assembly.
//!
//! The hook handler calls this on `PostToolUse` (harvest turns whose `Stop` never fired),
//! `Stop`/`SubagentStop` (the final exchange) and `PreCompact` (every turn since the last
//! compaction). A hook must be fast, so it never rescans a transcript: a per-session
//! [`Tracker`] keeps a byte cursor in the state dir and reads only what was appended since the
//! last hook.
//!
//! Layers, each testable alone:
//! - [`parse_line`]: one JSONL line to [`Record`]s, format detected per line (pure);
//! - [`Assembler`]: records to [`Turn`]s (pure);
//! - [`Tracker`]: the cursor file, its lock, and reading complete lines from the transcript;
//! - [`discover`]: where a session's transcript lives when the payload does not say.

mod claude;
mod cursor;
mod discover;
#[cfg(test)]
mod fixtures;
mod record;
mod turns;
mod vscode;

use std::io;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::event::ToolCallRecord;
pub use cursor::{Tracker, COLD_START_BYTES, LOCK_WAIT, MAX_COMPACT_BYTES, RECORDED_IDS};
pub use discover::{discover, DiscoveryEnv};
pub use record::{parse_line, ParseOptions, Record};
pub use turns::{assemble, Assembler, OpenTurn, MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS};

/// One user prompt and what the assistant did about it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// Id of the user prompt's line; the dedup key for recorded turns.
    pub turn_id: Option<String>,
    /// The prompt text.
    pub user: String,
    /// Text of the last assistant message with non-empty text (empty when there was none).
    pub assistant: String,
    /// The last non-empty reasoning, a fallback when `assistant` is empty.
    pub reasoning: Option<String>,
    /// The first ten tool calls; inputs are compact JSON that always parses, outputs empty.
    pub tool_calls: Vec<ToolCallRecord>,
    /// True once the turn has ended (or `Stop` says it has).
    pub complete: bool,
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

/// What one [`Tracker`] call read from the transcript.
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
