//! The queue-line contract, format v1, in one place: the entry capture writes
//! ([`QueueEntry`]), the lenient parser ingest reads every producer's lines with ([`parse`]),
//! and the row a line becomes in the store ([`row`]). No I/O here.
//!
//! A queue line is a superset of ContextManager's `HookEntry`, so the extension that tails the
//! same file keeps working. Field names are a public interface (see docs/design.md, "Queue line").

pub mod budget;
pub mod check;
pub mod parse;
pub mod row;
pub mod tool_input;
pub mod usage;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use row::{
    EventRow, GATE_UNREADABLE, MISSING_SESSION_ID, NEGATIVE_DURATION, SESSION_WITHOUT_ACTOR,
    TOOL_WITHOUT_NAME, UNKNOWN_HOOK_TYPE, UNKNOWN_SESSION,
};

/// Version written in the `v` field of every line cmstore produces.
pub const QUEUE_FORMAT_VERSION: u32 = 1;

/// Value of `producer` on lines cmstore writes, and of `origin` on the lines versions before
/// 0.4 wrote (they named cmstore as the origin; `origin` now names the agent's session origin
/// as the ContextManager extension knows it, see [`crate::model::agents::Agent::origin`]).
pub const PRODUCER: &str = "cmstore";

/// The session origin the ContextManager extension falls back to for an agent it has no
/// origin of its own for (Codex, Gemini CLI, Cursor).
pub use crate::model::agents::UNKNOWN_ORIGIN;

/// The canonical hook types, PascalCase as ContextManager spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookType {
    SessionStart,
    SessionEnd,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PreCompact,
    Stop,
    SubagentStart,
    SubagentStop,
    ErrorOccurred,
    Notification,
    PermissionRequest,
    /// Claude Code's auto-mode classifier refused a tool call (`PermissionDenied`).
    PermissionDenied,
    /// Claude Code: every parallel tool call of a batch resolved (`PostToolBatch`).
    PostToolBatch,
    /// Claude Code: assistant text was displayed (`MessageDisplay`).
    MessageDisplay,
    /// After a compaction (Claude Code, Codex: `PostCompact`).
    PostCompact,
    /// A turn ended on an API error (Claude Code, Codex: `StopFailure`).
    StopFailure,
    /// The user interrupted a turn (Codex: `Interrupt`).
    Interrupt,
    /// A request is about to go to the model (Gemini CLI: `BeforeModel`).
    ModelRequest,
    /// A response (or a streamed chunk of one) came back from the model (Gemini CLI:
    /// `AfterModel`).
    ModelResponse,
    /// The model is about to choose among the tools (Gemini CLI: `BeforeToolSelection`).
    ToolSelection,
    /// The agent considered compacting and may have compacted nothing (Gemini CLI: an automatic
    /// `PreCompress`, which fires before the size check decides whether to compress).
    CompactionCheck,
    /// cmstore's own: a post-edit or post-commit check's result ([`check::CheckRecord`] in
    /// the line's `check` field), written after the event that triggered it.
    CheckResult,
    /// cmstore's own: the `usage` of API responses read while closing a session that had no
    /// line of its own to carry them (its last turns already recorded, or switched off in
    /// `[events]`). Synthetic; never switched off itself.
    Usage,
}

impl HookType {
    /// Every canonical type.
    pub const ALL: [HookType; 25] = [
        HookType::SessionStart,
        HookType::SessionEnd,
        HookType::UserPromptSubmit,
        HookType::PreToolUse,
        HookType::PostToolUse,
        HookType::PostToolUseFailure,
        HookType::PreCompact,
        HookType::Stop,
        HookType::SubagentStart,
        HookType::SubagentStop,
        HookType::ErrorOccurred,
        HookType::Notification,
        HookType::PermissionRequest,
        HookType::PermissionDenied,
        HookType::PostToolBatch,
        HookType::MessageDisplay,
        HookType::PostCompact,
        HookType::StopFailure,
        HookType::Interrupt,
        HookType::ModelRequest,
        HookType::ModelResponse,
        HookType::ToolSelection,
        HookType::CompactionCheck,
        HookType::CheckResult,
        HookType::Usage,
    ];

    /// The canonical spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            HookType::SessionStart => "SessionStart",
            HookType::SessionEnd => "SessionEnd",
            HookType::UserPromptSubmit => "UserPromptSubmit",
            HookType::PreToolUse => "PreToolUse",
            HookType::PostToolUse => "PostToolUse",
            HookType::PostToolUseFailure => "PostToolUseFailure",
            HookType::PreCompact => "PreCompact",
            HookType::Stop => "Stop",
            HookType::SubagentStart => "SubagentStart",
            HookType::SubagentStop => "SubagentStop",
            HookType::ErrorOccurred => "ErrorOccurred",
            HookType::Notification => "Notification",
            HookType::PermissionRequest => "PermissionRequest",
            HookType::PermissionDenied => "PermissionDenied",
            HookType::PostToolBatch => "PostToolBatch",
            HookType::MessageDisplay => "MessageDisplay",
            HookType::PostCompact => "PostCompact",
            HookType::StopFailure => "StopFailure",
            HookType::Interrupt => "Interrupt",
            HookType::ModelRequest => "ModelRequest",
            HookType::ModelResponse => "ModelResponse",
            HookType::ToolSelection => "ToolSelection",
            HookType::CompactionCheck => "CompactionCheck",
            HookType::CheckResult => "CheckResult",
            HookType::Usage => "Usage",
        }
    }

    /// The canonical type spelled exactly `name` (a queue line's `hookType`), if any.
    pub fn from_canonical(name: &str) -> Option<HookType> {
        HookType::ALL.iter().copied().find(|t| t.as_str() == name)
    }

    /// Maps an event name from any agent onto a canonical type, or `None` when it has none.
    ///
    /// Matching ignores case, so Claude's `PreToolUse`, Copilot CLI's `preToolUse` and the
    /// canonical spelling all land on the same type. Agent-specific aliases (Copilot CLI's
    /// `agentStop` and `userPromptSubmitted`, Gemini CLI's `BeforeTool`, Cursor's
    /// `beforeSubmitPrompt`, …) are listed explicitly.
    pub fn from_event_name(name: &str) -> Option<HookType> {
        let lower = name.trim().to_ascii_lowercase();
        if let Some(known) = HookType::ALL
            .iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(&lower))
        {
            return Some(*known);
        }
        Some(match lower.as_str() {
            "userpromptsubmitted" | "beforesubmitprompt" | "beforeagent" => {
                HookType::UserPromptSubmit
            }
            "agentstop" | "afteragent" => HookType::Stop,
            "beforetool" => HookType::PreToolUse,
            "aftertool" => HookType::PostToolUse,
            "precompress" => HookType::PreCompact,
            "beforemodel" => HookType::ModelRequest,
            "aftermodel" => HookType::ModelResponse,
            "beforetoolselection" => HookType::ToolSelection,
            "erroroccured" | "error" => HookType::ErrorOccurred,
            _ => return None,
        })
    }
}

/// One tool call of a recorded turn.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    #[serde(rename = "toolName")]
    pub tool_name: String,
    /// Compact JSON of the arguments, shortened inside the JSON value so it always parses.
    pub input: String,
    pub output: String,
}

/// One `{user, assistant}` exchange, as PreCompact records them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub user: String,
    pub assistant: String,
    #[serde(rename = "turnId", default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// One queue line (format v1). `None` fields are left out of the line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueEntry {
    pub hook_type: String,
    /// Epoch milliseconds, taken by capture.
    pub timestamp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub participant: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_hint: Option<String>,
    /// The session origin as the ContextManager extension names it (`claude-code-plugin`,
    /// `vscode-extension`, `copilot-cli-plugin`, else `unknown`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// Who wrote the line: [`PRODUCER`] on every line cmstore writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub producer: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
    /// The model's reasoning in the turn (Claude `thinking`, VS Code `reasoningText`): kept
    /// apart from `response`, which it never is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// On a `Stop` (real or synthetic): how the turn ended when not by an answer:
    /// `interrupted` (the user stopped it), `failed` (a `StopFailure`: an API error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_outcome: Option<String>,
    /// On a `Stop` (real or synthetic): what blocking Stop hooks told the agent during the
    /// turn (Claude `Stop hook feedback: …`), oldest first, joined by newlines. Text like the
    /// prompt: redacted,
    /// dropped with `store_text = false`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_feedback: Option<String>,
    /// On a `Stop`: the agent fired it again because a Stop hook blocked the turn's end
    /// (`stop_hook_active: true` in the payload); the line is left without it otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_hook_active: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_result_type: Option<String>,
    /// The exit code of a shell command, as the agent's tool result reports it (see
    /// docs/agents.md for where each agent gives it, and what is exact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// `true` when the agent's own signal in the tool result says the call failed (an exit
    /// code other than 0, a Gemini `error`), although the event is a PostToolUse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_failed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallRecord>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<Vec<TurnRecord>>,
    pub id: String,
    pub v: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// On a `PreToolUse` or `PermissionRequest`: the agent's permission mode as its payload
    /// says (Claude Code, Codex: `default`, `acceptEdits`, `plan`, `auto`, `dontAsk`,
    /// `bypassPermissions`), for the call's decision chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegated_agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The payload's `error`, always an object with at least `message` (ContextManager's
    /// `{message, name, stack}`): a string error becomes `{"message": …}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<i64>,
    pub size_bytes: u64,
    pub estimated_tokens: u64,
    pub hook_execution_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<bool>,
    /// On a synthetic `Stop`: when its turn happened (epoch ms, the time of the turn's latest
    /// transcript line), which `timestamp`, the hook's, is not: ingest dates the turn by it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_ts: Option<i64>,
    /// On a `Stop` whose turn was recorded before (harvested, or an earlier `Stop`): the line
    /// names the turn (`turnId`) but does not repeat its exchange.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_recorded: Option<bool>,
    /// On a `Stop` whose exchange is not in the transcript yet (Copilot CLI writes it after
    /// the hook): a later synthetic Stop records the turn, so this line makes no `turns` row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_pending: Option<bool>,
    /// The usage of the API responses in the transcript bytes this hook read (one record per
    /// response; ingest upserts them, so a response seen twice counts once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Vec<usage::UsageRecord>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
    /// Why the payload could not be read, when it could not (the line is still written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Value>,
    /// What is wrong with the configuration capture ran with, on every line while something
    /// is ([`crate::config::error_note`]): the settings it could not read took their defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    /// `capture --agent` named no agent cmstore knows: the value, and that the agent was
    /// told from the payload instead (a typo in a hook command must not pass unseen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_error: Option<String>,
    /// On a `CheckResult` line: the check's result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<check::CheckRecord>,
    /// On a tool call or prompt made past a `[budget]` limit, or on the event whose reply
    /// warned the agent: the limit's standing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<budget::BudgetMark>,
}

impl QueueEntry {
    /// A fresh entry with a new UUIDv7 id, the format version, cmstore as its producer and
    /// the `unknown` origin (normalizing a payload sets the agent's).
    pub fn new(hook_type: impl Into<String>, timestamp_ms: i64) -> QueueEntry {
        QueueEntry {
            hook_type: hook_type.into(),
            timestamp: timestamp_ms,
            id: new_id(),
            v: QUEUE_FORMAT_VERSION,
            origin: Some(UNKNOWN_ORIGIN.to_string()),
            producer: Some(PRODUCER.to_string()),
            ..QueueEntry::default()
        }
    }

    /// The compact JSON line, without the trailing newline.
    pub fn to_line(&self) -> String {
        // Serializing plain strings, numbers and `Value`s cannot fail.
        serde_json::to_string(self).expect("queue entry serializes")
    }
}

/// A payload's `error` as the queue line carries it: an object with at least `message`, as the
/// extension's `HookEntry.error` declares (`{message, name, stack}`). A string (Claude Code's
/// and Copilot CLI's `PostToolUseFailure`) becomes `{"message": …}`; an object without a
/// string `message` gets one made of its JSON; any other value becomes the message's text.
pub fn error_object(error: &Value) -> Value {
    match error {
        Value::Object(m) if m.get("message").is_some_and(Value::is_string) => error.clone(),
        Value::Object(m) => {
            let mut m = m.clone();
            m.insert("message".into(), Value::String(error.to_string()));
            Value::Object(m)
        }
        Value::String(s) => serde_json::json!({ "message": s }),
        other => serde_json::json!({ "message": other.to_string() }),
    }
}

/// A new UUIDv7: unique per entry, and time-ordered so ids sort like the events.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// The namespace of [`harvested_id`]'s name-based UUIDs (a random UUID, fixed forever: a
/// harvested turn must get the same id from every cmstore version).
const HARVESTED_NAMESPACE: uuid::Uuid = uuid::uuid!("aa3991e4-bb2d-465f-9fbb-63e287c57b18");

/// The id of the synthetic `Stop` that records turn `turn_id` of `session`, harvested from
/// its transcript: a UUIDv5 of the two, the same each time the turn is harvested. A hook that
/// cannot know whether its append of a turn landed (killed before saving its cursor, a cursor
/// lost, a transcript read again) may append the turn again; the store keeps one line of it by
/// its id.
pub fn harvested_id(session: &str, turn_id: &str) -> String {
    // Lengths first: no two (session, turn) pairs make the same name.
    let name = format!("{}:{session}:{turn_id}", session.len());
    uuid::Uuid::new_v5(&HARVESTED_NAMESPACE, name.as_bytes()).to_string()
}

/// The id of a `Usage` line of `session` carrying `usage`: a UUIDv5 of the session and the
/// responses' keys and transcript offsets, the same each time the same lines are read, so a
/// line appended again (a hook killed before saving its cursor, a lost cursor) is one line to
/// the store; a later line of a response (its final streamed count) makes another.
pub fn usage_line_id(session: &str, usage: &[usage::UsageRecord]) -> String {
    // `usage:` first: a harvested turn's name starts with a digit, so the two never meet.
    let mut name = format!("usage:{}:{session}", session.len());
    for record in usage {
        let (message, request) = record.key();
        name.push_str(&format!(
            ":{}:{message}:{}:{request}:{}",
            message.len(),
            request.len(),
            record.offset
        ));
    }
    uuid::Uuid::new_v5(&HARVESTED_NAMESPACE, name.as_bytes()).to_string()
}

/// `ceil(bytes / 4)`, the token estimate vstack's audit hooks use.
pub fn estimate_tokens(size_bytes: u64) -> u64 {
    size_bytes.div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_harvested_turn_has_the_same_id_each_time_and_no_other_turn_has_it() {
        let id = harvested_id("s1", "t1");
        assert_eq!(id, harvested_id("s1", "t1"));
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 5);
        for (session, turn) in [("s1", "t2"), ("s2", "t1"), ("s1:", "t1"), ("s", "1:t1")] {
            assert_ne!(id, harvested_id(session, turn), "{session} {turn}");
        }
        assert_ne!(harvested_id("a:b", "c"), harvested_id("a", "b:c"));
    }

    #[test]
    fn a_usage_line_has_the_same_id_for_the_same_responses_only() {
        let record = |message: &str, request: Option<&str>, output: u64| usage::UsageRecord {
            message_id: message.into(),
            request_id: request.map(str::to_string),
            output,
            ..usage::UsageRecord::default()
        };
        let a = [record("m1", Some("r1"), 5), record("m2", None, 7)];
        let id = usage_line_id("s1", &a);
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 5);
        // The counts are not part of the name: the same lines read again are the same line.
        assert_eq!(
            id,
            usage_line_id("s1", &[record("m1", Some("r1"), 9), record("m2", None, 7)])
        );
        // A later line of a response (its final streamed count) is another.
        let mut later = a.clone();
        later[0].offset = 4096;
        assert_ne!(id, usage_line_id("s1", &later));
        assert_ne!(id, usage_line_id("s2", &a));
        assert_ne!(id, usage_line_id("s1", &a[..1]));
        assert_ne!(
            usage_line_id("s", &[record("m1", Some("r1"), 0)]),
            usage_line_id("s", &[record("m1:", Some("r1"), 0)])
        );
        assert_ne!(id, harvested_id("s1", "m1"));
    }

    #[test]
    fn event_names_of_every_agent_map_to_canonical_types() {
        let cases = [
            ("PreToolUse", HookType::PreToolUse),
            ("preToolUse", HookType::PreToolUse),
            ("userPromptSubmitted", HookType::UserPromptSubmit),
            ("UserPromptSubmit", HookType::UserPromptSubmit),
            ("agentStop", HookType::Stop),
            ("Stop", HookType::Stop),
            ("subagentStop", HookType::SubagentStop),
            ("errorOccurred", HookType::ErrorOccurred),
            ("sessionStart", HookType::SessionStart),
            ("postToolUseFailure", HookType::PostToolUseFailure),
            ("permissionRequest", HookType::PermissionRequest),
            ("notification", HookType::Notification),
            ("preCompact", HookType::PreCompact),
            ("BeforeTool", HookType::PreToolUse),
            ("AfterTool", HookType::PostToolUse),
            ("PreCompress", HookType::PreCompact),
        ];
        for (raw, want) in cases {
            assert_eq!(HookType::from_event_name(raw), Some(want), "{raw}");
        }
        assert_eq!(HookType::from_event_name("WriteIntent"), None);
        assert_eq!(HookType::from_event_name(""), None);
    }

    #[test]
    fn regular_events_of_claude_codex_and_gemini_are_known() {
        let cases = [
            ("PostToolBatch", HookType::PostToolBatch),
            ("MessageDisplay", HookType::MessageDisplay),
            ("PermissionDenied", HookType::PermissionDenied),
            ("PostCompact", HookType::PostCompact),
            ("StopFailure", HookType::StopFailure),
            ("Interrupt", HookType::Interrupt),
            ("BeforeModel", HookType::ModelRequest),
            ("AfterModel", HookType::ModelResponse),
            ("BeforeToolSelection", HookType::ToolSelection),
        ];
        for (raw, want) in cases {
            assert_eq!(HookType::from_event_name(raw), Some(want), "{raw}");
            assert_eq!(HookType::from_canonical(want.as_str()), Some(want));
        }
        assert_eq!(
            HookType::from_canonical("preToolUse"),
            None,
            "exact spelling"
        );
        let names: std::collections::HashSet<_> =
            HookType::ALL.iter().map(|t| t.as_str()).collect();
        assert_eq!(names.len(), HookType::ALL.len(), "every name once");
    }

    #[test]
    fn an_error_is_always_an_object_with_a_message() {
        let string = error_object(&serde_json::json!("Exit code 3\nboom"));
        assert_eq!(string, serde_json::json!({"message": "Exit code 3\nboom"}));
        let full = serde_json::json!({"message": "m", "name": "E", "stack": "s"});
        assert_eq!(error_object(&full), full);
        let odd = error_object(&serde_json::json!({"code": 7}));
        assert_eq!(odd["code"], 7);
        assert_eq!(odd["message"], r#"{"code":7}"#);
        assert_eq!(
            error_object(&serde_json::json!(5)),
            serde_json::json!({"message": "5"})
        );
    }

    #[test]
    fn token_estimate_rounds_up() {
        assert_eq!(estimate_tokens(0), 0);
        assert_eq!(estimate_tokens(1), 1);
        assert_eq!(estimate_tokens(4), 1);
        assert_eq!(estimate_tokens(5), 2);
    }

    #[test]
    fn a_config_error_is_on_the_line_only_while_there_is_one() {
        let mut e = QueueEntry::new("Stop", 1_700_000_000_000);
        let v: Value = serde_json::from_str(&e.to_line()).unwrap();
        assert!(v.get("configError").is_none());
        e.config_error = Some("cmstore.toml: line 2: not valid TOML".into());
        let v: Value = serde_json::from_str(&e.to_line()).unwrap();
        assert_eq!(v["configError"], "cmstore.toml: line 2: not valid TOML");
    }

    #[test]
    fn entry_line_is_compact_and_omits_unknowns() {
        let mut e = QueueEntry::new("Stop", 1_700_000_000_000);
        e.session_id = Some("s1".into());
        let line = e.to_line();
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["hookType"], "Stop");
        assert_eq!(v["sessionId"], "s1");
        assert_eq!(v["v"], 1);
        assert_eq!(v["producer"], "cmstore");
        assert_eq!(v["origin"], "unknown", "an origin the extension knows");
        assert!(v.get("prompt").is_none());
        assert_eq!(v["id"].as_str().unwrap().len(), 36);
    }
}
