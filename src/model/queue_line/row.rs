//! The row a queue line becomes: what ingest's parser reads out of a line and the store
//! writes, plus the reasons a line counts as unknown. No I/O.

use std::borrow::Cow;

use super::HookType;

/// Session id under which lines without one are counted.
pub const UNKNOWN_SESSION: &str = "unknown-session";

/// Unknown reason: `hookType` is missing or not one of the canonical types
/// ([`HookType::ALL`](super::HookType::ALL)).
pub const UNKNOWN_HOOK_TYPE: &str = "unknown_hook_type";
/// Unknown reason: the line carries no session id.
pub const MISSING_SESSION_ID: &str = "missing_session_id";
/// Unknown reason: a PreToolUse/PostToolUse/PostToolUseFailure without a tool name.
pub const TOOL_WITHOUT_NAME: &str = "tool_event_without_tool_name";
/// Unknown reason: a SessionStart/SessionEnd without `actorName` or `actorType`.
pub const SESSION_WITHOUT_ACTOR: &str = "session_event_without_actor";
/// Unknown reason: the safety gate could not read the tool call (`risk: "unreadable"`), so it
/// was allowed unchecked.
pub const GATE_UNREADABLE: &str = "safety_gate_unreadable";
/// Unknown reason: a tool call duration below zero, not stored: a line's `durationMs`, or a
/// call whose end (by the timestamps) came before its start and that reported none of its own.
/// Counted by ingest once per figure, under the call's session.
pub const NEGATIVE_DURATION: &str = "negative_tool_duration";

impl EventRow<'_> {
    /// When the turn of a harvested (synthetic) Stop happened, when the line says: the hook
    /// that harvested it may have run long after.
    pub fn harvested_turn_ts(&self) -> Option<i64> {
        self.turn_ts.filter(|_| self.synthetic == Some(true))
    }

    /// True when the line reports a failed tool call: a PostToolUseFailure, or a PostToolUse
    /// whose result type is `failure`, whose exit code is not 0, or that says `toolFailed`.
    pub fn reports_tool_failure(&self) -> bool {
        match self.kind {
            Some(HookType::PostToolUseFailure) => true,
            Some(HookType::PostToolUse) => {
                self.tool_result_type.as_deref() == Some("failure")
                    || self.tool_failed == Some(true)
                    || self.exit_code.is_some_and(|c| c != 0)
            }
            _ => false,
        }
    }
}

/// One parsed queue line, borrowing from the line where it can.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventRow<'a> {
    /// The dedup key: the line's `id`, else `sha256:<hex>` of its bytes.
    pub id: Cow<'a, str>,
    /// Epoch milliseconds.
    pub ts: i64,
    /// True when `ts` comes from the line (`timestamp` or `ts`); false when the line carries
    /// no time and `ts` is the time of ingest.
    pub dated: bool,
    /// `hookType`, else the canonical name of `event`, else the raw `event`.
    pub hook_type: Option<Cow<'a, str>>,
    /// `hook_type` when it is one of the canonical types.
    pub kind: Option<HookType>,
    /// The raw event name.
    pub event: Option<Cow<'a, str>>,
    /// `agent`, else ContextManager's `participant`.
    pub agent: Option<Cow<'a, str>>,
    /// `sessionId` / `session_id`.
    pub session_id: Option<Cow<'a, str>>,
    /// `toolName` / `tool_name`.
    pub tool_name: Option<Cow<'a, str>>,
    /// `toolCallId` / `tool_call_id`.
    pub tool_call_id: Option<Cow<'a, str>>,
    /// `turnId`.
    pub turn_id: Option<Cow<'a, str>>,
    /// `model`, else vstack's `model_used`.
    pub model: Option<Cow<'a, str>>,
    /// Working directory of the agent.
    pub cwd: Option<Cow<'a, str>>,
    /// The session origin (`claude-code-plugin`, `vscode-extension`, …; `cmstore` on lines
    /// older cmstore versions wrote).
    pub origin: Option<Cow<'a, str>>,
    /// Who wrote the line: `producer`, else `cmstore` for a line whose `origin` is `cmstore`
    /// (written before the two were told apart).
    pub producer: Option<Cow<'a, str>>,
    /// `exitCode`: a shell command's exit code, as the agent reported it.
    pub exit_code: Option<i64>,
    /// `toolFailed`: the agent's own signal said the tool call failed.
    pub tool_failed: Option<bool>,
    /// The text of `error`: the string, or the object's `message`.
    pub error: Option<Cow<'a, str>>,
    /// `actorName` / `actor_name`.
    pub actor_name: Option<Cow<'a, str>>,
    /// `actorType` / `actor_type`.
    pub actor_type: Option<Cow<'a, str>>,
    /// `delegatedAgent` / `delegated_agent_name`.
    pub delegated_agent: Option<Cow<'a, str>>,
    /// True for a Stop harvested from the transcript.
    pub synthetic: Option<bool>,
    /// `turnTs`: when a harvested turn happened (epoch ms), apart from the line's time.
    pub turn_ts: Option<i64>,
    /// The user prompt.
    pub prompt: Option<Cow<'a, str>>,
    /// The assistant's answer.
    pub response: Option<Cow<'a, str>>,
    /// The model's reasoning (`thinking`), kept apart from the answer.
    pub thinking: Option<Cow<'a, str>>,
    /// `turnPending`: a Stop whose turn a later line records; it makes no `turns` row.
    pub turn_pending: bool,
    /// `turnOutcome`: how the Stop's turn ended when not by an answer (`interrupted`,
    /// `failed`).
    pub turn_outcome: Option<Cow<'a, str>>,
    /// `hookFeedback`: what blocking Stop hooks told the agent during the turn.
    pub hook_feedback: Option<Cow<'a, str>>,
    /// `stopHookActive`: a Stop fired again after a Stop hook blocked the turn's end.
    pub stop_hook_active: bool,
    /// `success`, `failure` or `denied`, when the agent says.
    pub tool_result_type: Option<Cow<'a, str>>,
    /// The safety gate's finding on a PreToolUse: the rules that matched, comma-separated, or
    /// `unreadable` (the `risk` column; a non-empty string only).
    pub risk: Option<Cow<'a, str>>,
    /// The safety gate's `allow` or `deny` (PreToolUse with a `risk`): the `decision` column,
    /// and ingest reads it for the call's outcome.
    pub decision: Option<Cow<'a, str>>,
    /// `permissionMode`: the agent's permission mode on a PreToolUse (Claude Code, Codex).
    pub permission_mode: Option<Cow<'a, str>>,
    /// Reported duration of the tool call.
    pub duration_ms: Option<i64>,
    /// Payload size in bytes.
    pub size_bytes: Option<i64>,
    /// `ceil(size_bytes / 4)`.
    pub estimated_tokens: Option<i64>,
    /// Number of entries in `toolCalls`, when present.
    pub tool_call_count: Option<i64>,
    /// `toolInput` (else `tool_input`) as the JSON text the line holds, unparsed (a string's
    /// quotes and escapes included). Not a column of its own: ingest compares it to tell apart
    /// tool calls without an id.
    pub tool_input: Option<Cow<'a, str>>,
    /// `usage` as the JSON text the line holds, unparsed: the usage records capture read from
    /// the transcript ([`super::usage::UsageRecord`]), which the store upserts.
    pub usage: Option<Cow<'a, str>>,
    /// The whole line.
    pub entry: &'a str,
    /// Unknown reasons this line counts under (see the `*` constants of this module).
    pub unknown: [Option<&'static str>; 5],
}
