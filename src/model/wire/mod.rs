//! Agent payload dialects -> the canonical queue entry, and the replies each agent expects.
//!
//! Five incompatible payload shapes reach the hook (see docs/design.md, "Agent payloads"):
//! Claude Code, VS Code Copilot Chat (snake_case or camelCase), Copilot CLI with camelCase
//! hooks (no event name; `toolArgs` as a JSON string; epoch-ms timestamp), Copilot CLI with
//! PascalCase hooks, and Codex. Every field is read in every spelling, so the dialect only
//! matters for naming the agent and for the shape of the reply.

pub mod cline;
pub mod goose;
pub mod kimi;
pub mod kiro;
pub mod opencode;
pub mod outcome;
pub mod payload;
pub mod reply;
pub mod windsurf;

use serde_json::Value;

pub use crate::model::agents::Agent;
use crate::model::queue_line::{error_object, HookType, QueueEntry};
use crate::model::shorten::{compact_json, cut_text};
pub use payload::{DecodeError, Payload};

const GEMINI_EVENTS: [&str; 8] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "PreCompress",
];

/// Guesses the agent from the payload's shape (the order is in docs/design.md, "Agent payloads").
pub fn sniff_agent(p: &Payload) -> Agent {
    if windsurf::is_payload(p) {
        return Agent::Windsurf;
    }
    if goose::is_payload(p) {
        return Agent::Goose;
    }
    if kimi::is_payload(p) {
        return Agent::Kimi;
    }
    if p.has_any(&["conversation_id"]) && p.has_any(&["workspace_roots"]) {
        return Agent::Cursor;
    }
    if cline::is_payload(p) {
        return Agent::Cline;
    }
    let numeric_time = p.get_any(&["timestamp"]).is_some_and(Value::is_number);
    if numeric_time || p.has_any(&["toolArgs", "toolResult"]) {
        return Agent::Copilot;
    }
    if p.has_any(&["turn_id"]) {
        return Agent::Codex;
    }
    if kiro::is_payload(p) {
        return Agent::Kiro;
    }
    let event = p.str_any(&["hook_event_name", "hookEventName"]);
    if event.as_deref().is_some_and(|e| GEMINI_EVENTS.contains(&e)) {
        return Agent::Gemini;
    }
    // cmstore's OpenCode plugin sends OpenCode's own dotted event names.
    if event.as_deref().is_some_and(opencode::is_event) {
        return Agent::Opencode;
    }
    let transcript = p
        .str_any(&["transcript_path", "transcriptPath"])
        .unwrap_or_default()
        .replace('\\', "/");
    // Gemini CLI's lifecycle events (SessionStart, SessionEnd, Notification) share their names
    // with other agents; its transcript lives under `~/.gemini/`.
    if transcript.contains("/.gemini/") {
        return Agent::Gemini;
    }
    // Qwen Code's payloads are Claude Code's, with an ISO `timestamp`; its chats live under
    // `~/.qwen/`.
    if transcript.contains("/.qwen/") {
        return Agent::Qwen;
    }
    // Qoder CLI's payloads are Claude Code's; its transcripts live under `~/.qoder/`.
    if transcript.contains("/.qoder/") {
        return Agent::Qoder;
    }
    // Droid's payloads are Claude Code's; its sessions live under `~/.factory/`.
    if transcript.contains("/.factory/") {
        return Agent::Droid;
    }
    if transcript.contains("GitHub.copilot-chat") || p.has_any(&["hookEventName"]) {
        return Agent::Vscode;
    }
    if transcript.contains("/.claude/") {
        return Agent::Claude;
    }
    if transcript.contains("/.copilot/") {
        return Agent::Copilot;
    }
    if p.get_any(&["timestamp"]).is_some_and(Value::is_string) {
        // ISO timestamps come from VS Code's Local harness (and Copilot CLI's PascalCase
        // hooks, which send the VS Code-compatible payload).
        return Agent::Vscode;
    }
    if p.has_any(&["session_id", "hook_event_name"]) {
        return Agent::Claude;
    }
    Agent::Unknown
}

/// Size limits applied while normalizing, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub tool_input: usize,
    pub tool_response: usize,
    pub text: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            tool_input: 8 * 1024,
            tool_response: 8 * 1024,
            text: 256 * 1024,
        }
    }
}

/// Tool names that hand work to another agent.
pub const DELEGATION_TOOLS: [&str; 5] = ["runSubagent", "Task", "Agent", "task", "agent"];

const SESSION_KEYS: [&str; 6] = [
    "session_id",
    "sessionId",
    "conversation_id",
    "conversationId",
    "chat_id",
    "chatId",
];
const TOOL_NAME_KEYS: [&str; 2] = ["tool_name", "toolName"];
const TOOL_INPUT_KEYS: [&str; 4] = ["tool_input", "toolInput", "toolArgs", "tool_args"];
const TOOL_CALL_ID_KEYS: [&str; 6] = [
    "tool_use_id",
    "toolUseId",
    "toolCallId",
    "tool_call_id",
    "callId",
    "call_id",
];

/// The event name: the `--event` flag, else `hook_event_name`, else `hookEventName`, else
/// Cline's `hookName`, else Windsurf's `agent_action_name`, else Goose's `event`.
pub fn event_name(flag: Option<&str>, p: &Payload) -> Option<String> {
    flag.map(str::to_string)
        .filter(|e| !e.trim().is_empty())
        .or_else(|| {
            p.str_any(&[
                "hook_event_name",
                "hookEventName",
                "hookName",
                "agent_action_name",
            ])
        })
        .or_else(|| goose::event_name(p))
}

/// The session id in any spelling.
pub fn session_id(p: &Payload) -> Option<String> {
    p.str_any(&SESSION_KEYS)
}

/// The transcript path in any spelling.
pub fn transcript_path(p: &Payload) -> Option<String> {
    p.str_any(&["transcript_path", "transcriptPath"])
}

/// The tool's arguments as a JSON value; Copilot CLI sends them as a JSON *string*.
pub fn tool_input(p: &Payload) -> Option<Value> {
    let raw = p.get_any(&TOOL_INPUT_KEYS)?;
    Some(match raw {
        Value::String(s) => serde_json::from_str::<Value>(s).unwrap_or_else(|_| raw.clone()),
        other => other.clone(),
    })
}

/// [`tool_input`] as `agent` sends it: Cline's in its `tool_call` or `tool_result`.
pub fn tool_input_of(agent: Agent, p: &Payload) -> Option<Value> {
    match agent {
        Agent::Cline => cline::tool_input(p),
        Agent::Windsurf => windsurf::tool_input(p),
        _ => tool_input(p),
    }
}

/// The canonical hook type of `agent`'s `event` with this payload, or `None` when it has none.
///
/// The event name decides, except for Gemini CLI's `PreCompress`: it fires before Gemini checks
/// whether the history is long enough to compress, so an automatic one (`trigger: "auto"`)
/// says only that a compaction was considered ([`HookType::CompactionCheck`]); a manual one
/// (`/compress`) compacts ([`HookType::PreCompact`]). And Qwen Code fires `UserPromptSubmit`
/// again for each round of tool results it sends the model, with an empty `prompt`: such a one is
/// a request to the model ([`HookType::ModelRequest`]), not a prompt (seen with Qwen Code
/// 0.24.4 in the end-to-end suite).
pub fn hook_type(agent: Agent, event: &str, p: &Payload) -> Option<HookType> {
    if agent.speaks_opencode() && opencode::is_event(event) {
        return opencode::hook_type(event, p);
    }
    if agent == Agent::Cline {
        return cline::hook_type(event, p);
    }
    if agent == Agent::Windsurf {
        return windsurf::hook_type(event);
    }
    if agent == Agent::Kiro {
        return kiro::hook_type(event);
    }
    if agent == Agent::Goose {
        return goose::hook_type(event, p);
    }
    let kind = HookType::from_event_name(event)?;
    let no_prompt = || {
        p.str_any(&["prompt"])
            .is_none_or(|prompt| prompt.trim().is_empty())
    };
    if agent == Agent::Qwen && kind == HookType::UserPromptSubmit && no_prompt() {
        return Some(HookType::ModelRequest);
    }
    let gemini_check = event.trim().eq_ignore_ascii_case("PreCompress")
        && p.str_any(&["trigger"]).as_deref() != Some("manual");
    Some(if gemini_check {
        HookType::CompactionCheck
    } else {
        kind
    })
}

/// Builds the queue entry for one decoded payload. The caller sets `hookExecutionMs`, adds
/// transcript-derived fields and any safety finding.
pub fn normalize(
    p: &Payload,
    agent: Agent,
    event: Option<&str>,
    timestamp_ms: i64,
    size_bytes: u64,
    limits: &Limits,
) -> QueueEntry {
    let kind = event.and_then(|e| hook_type(agent, e, p));
    let hook_type = kind
        .map(|t| t.as_str().to_string())
        .or_else(|| event.map(str::to_string))
        .unwrap_or_else(|| "Unknown".to_string());
    let mut e = QueueEntry::new(hook_type, timestamp_ms);
    e.event = event.map(str::to_string);
    e.agent = Some(agent.as_str().to_string());
    e.origin = Some(agent.origin().to_string());
    e.participant = Some(agent.participant().to_string());
    e.session_id = session_id(p);
    e.cwd = p.str_any(&["cwd"]).or_else(|| {
        p.get_any(&["workspace_roots"])
            .and_then(|v| v.get(0))
            .and_then(payload::scalar_text)
    });
    e.root_hint = e.cwd.clone();
    e.transcript_path = transcript_path(p);
    e.size_bytes = size_bytes;
    e.estimated_tokens = crate::model::queue_line::estimate_tokens(size_bytes);

    let text = |keys: &[&str]| p.str_any(keys).map(|s| cut_text(&s, limits.text));
    e.prompt = text(&["prompt", "userPrompt", "user_prompt", "initialPrompt"]);
    e.response = text(&[
        "last_assistant_message",
        "lastAssistantMessage",
        "response",
        "prompt_response",
    ]);
    if agent == Agent::Gemini {
        // Gemini CLI 0.61 starts AfterAgent's `prompt_response` with " \n" per model call
        // when the reply carries cached or thinking counts: blanks, not the answer.
        e.response = e.response.map(|r| match r.trim_start() {
            trimmed if trimmed.len() == r.len() => r,
            trimmed => trimmed.to_string(),
        });
    }
    e.message = text(&["message"]);
    e.source = p.str_any(&["source"]);
    e.reason = p.str_any(&["reason", "stopReason"]);
    e.trigger = p.str_any(&["trigger"]);
    e.error = p.get_any(&["error"]).map(error_object);
    e.duration_ms = p.int_any(&["duration_ms", "durationMs"]);
    if agent == Agent::Cursor {
        cursor_fields(p, kind, &mut e, limits);
    }
    if agent == Agent::Droid && kind == Some(HookType::SubagentStop) {
        // Droid's SubagentStop says what the subagent answered, or why it failed, in fields
        // of its own (seen with Droid 0.225.2).
        e.response = e.response.take().or_else(|| text(&["task_result"]));
        e.error = e.error.take().or_else(|| {
            p.get_any(&["task_error"])
                .filter(|v| !v.is_null())
                .map(error_object)
        });
    }
    e.turn_id = p.str_any(&["turn_id", "turnId"]);
    e.model = model(p);
    if matches!(
        kind,
        Some(HookType::PreToolUse | HookType::PermissionRequest)
    ) {
        e.permission_mode = p.str_any(&["permission_mode", "permissionMode"]);
    }
    if matches!(kind, Some(HookType::Stop | HookType::SubagentStop))
        && p.get_any(&["stop_hook_active", "stopHookActive"])
            .and_then(Value::as_bool)
            == Some(true)
    {
        e.stop_hook_active = Some(true);
    }
    if kind == Some(HookType::StopFailure) {
        // The turn ended on an API error: a turn all the same, with this outcome.
        e.turn_outcome = Some("failed".to_string());
    }

    e.tool_name = p.str_any(&TOOL_NAME_KEYS);
    e.tool_call_id = p.str_any(&TOOL_CALL_ID_KEYS);
    let input = tool_input(p);
    e.tool_input = input.as_ref().map(|v| compact_json(v, limits.tool_input));
    if let Some(result) = p.get_any(&[
        "tool_response",
        "toolResponse",
        "toolResult",
        "tool_result",
        // Cursor's postToolUse: the result as a JSON string (`{"output", "exitCode"}`).
        "tool_output",
    ]) {
        let (text, result_type) = tool_result_text(result);
        e.tool_response = Some(match text {
            Some(t) => cut_text(&t, limits.tool_response),
            None => compact_json(result, limits.tool_response),
        });
        e.tool_result_type = result_type;
        if kind == Some(HookType::PostToolUse) {
            let read = outcome::read(agent, result);
            e.exit_code = read.exit_code;
            e.tool_failed = read.failed.then_some(true);
        }
    }

    let subagent_name = p.str_any(&[
        "agent_type",
        "agentType",
        "agentName",
        "agent_name",
        "agentDisplayName",
        "subagentName",
        "subagent_name",
        "actorName",
        "actor_name",
    ]);
    let in_subagent = subagent_name.is_some() || p.has_any(&["agent_id", "agentId"]);
    e.actor_name = subagent_name;
    e.actor_type = Some(
        p.str_any(&["actorType", "actor_type"])
            .unwrap_or_else(|| if in_subagent { "subagent" } else { "main" }.to_string()),
    );
    if let Some(tool) = e.tool_name.as_deref() {
        if DELEGATION_TOOLS.contains(&tool) {
            e.delegated_agent = Some(
                input
                    .as_ref()
                    .and_then(delegated_agent)
                    .unwrap_or_else(|| "unknown".to_string()),
            );
        }
    }
    if agent.speaks_opencode() {
        opencode_fields(p, kind, &mut e, limits);
    }
    if agent == Agent::Cline {
        cline_fields(p, kind, &mut e, limits);
    }
    if agent == Agent::Windsurf {
        windsurf_fields(p, kind, &mut e, limits);
    }
    if agent == Agent::Kiro {
        kiro_fields(p, kind, &mut e, limits);
    }
    if agent == Agent::Goose {
        goose::fields(p, kind, &mut e, limits.text);
    }
    if agent == Agent::Kimi {
        kimi::fields(p, kind, &mut e, limits.text);
    }
    e
}

/// What Kiro's payloads say in fields of their own ([`kiro`]): the answer at `stop`
/// (`assistant_response`), and a tool result's text, exit code and failure.
fn kiro_fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, limits: &Limits) {
    if kind == Some(HookType::Stop) && e.response.is_none() {
        e.response = p
            .str_any(&["assistant_response"])
            .map(|t| cut_text(&t, limits.text));
    }
    if let Some(result) = p.get_any(&["tool_response"]) {
        let read = kiro::tool_result(result, limits.tool_response);
        e.tool_response = read.text.or(e.tool_response.take());
        if kind == Some(HookType::PostToolUse) {
            e.exit_code = read.exit_code;
            e.tool_failed = read.failed.then_some(true);
        }
    }
}

/// What Windsurf's payloads say inside `tool_info` ([`windsurf`]): the session and turn, the
/// folder, the tool call and its arguments, an MCP call's result, the prompt, the answer.
fn windsurf_fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, limits: &Limits) {
    windsurf::fields(p, kind, e, limits.text);
    if matches!(kind, Some(HookType::PreToolUse | HookType::PostToolUse)) {
        let input = windsurf::tool_input(p);
        e.tool_input = input.as_ref().map(|v| compact_json(v, limits.tool_input));
    }
    if let Some(result) = windsurf::tool_result(p, limits.tool_response) {
        e.tool_response = Some(result);
    }
}

/// What Cline's payloads say in shapes of their own ([`cline`]): the session, folder, tool
/// call and its outcome, the run's answer.
fn cline_fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, limits: &Limits) {
    cline::fields(p, kind, e, limits.text);
    if let Some(input) = cline::tool_input(p) {
        e.tool_input = Some(compact_json(&input, limits.tool_input));
    }
    if let Some(result) = cline::tool_result(p, limits.tool_response) {
        e.tool_response = result.text;
        e.duration_ms = result.duration_ms;
        if kind == Some(HookType::PostToolUse) {
            e.exit_code = result.exit_code;
            e.tool_failed = result.failed.then_some(true);
        }
    }
}

/// What Cursor says in fields of its own (docs/agents.md, "Cursor", cites each): a tool call's
/// `duration` (milliseconds, a fraction), a failed call's `error_message`, the answer of
/// `afterAgentResponse` (`text`), and how `stop` ended a turn (`status`: `aborted` is a turn
/// the user stopped, `error` one that failed).
fn cursor_fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, limits: &Limits) {
    if e.duration_ms.is_none() {
        e.duration_ms = p.int_any(&["duration"]);
    }
    if e.error.is_none() {
        e.error = p.get_any(&["error_message"]).map(error_object);
    }
    if p.str_any(&["hook_event_name", "hookEventName"]).as_deref() == Some("afterAgentResponse")
        && e.response.is_none()
    {
        e.response = p.str_any(&["text"]).map(|t| cut_text(&t, limits.text));
    }
    if kind == Some(HookType::Stop) {
        e.turn_outcome = match p.str_any(&["status"]).as_deref() {
            Some("aborted") => Some("interrupted".to_string()),
            Some("error") => Some("failed".to_string()),
            _ => e.turn_outcome.take(),
        };
    }
}

/// What OpenCode's events carry in shapes of their own ([`opencode`]): a tool result's text
/// (its `output`; the whole `{title, output, metadata}` is what the plugin sends), an error
/// object's readable message, and a completed model call's usage.
fn opencode_fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, limits: &Limits) {
    if let Some(error) = p.get_any(&["error"]).and_then(opencode::error) {
        e.error = Some(error);
    }
    // A turn the person stopped: the plugin says so at the session's idle.
    if kind == Some(HookType::Stop) && p.str_any(&["outcome"]).as_deref() == Some("interrupted") {
        e.turn_outcome = Some("interrupted".to_string());
    }
    if kind == Some(HookType::ModelResponse) {
        e.usage = opencode::usage(p).map(|record| vec![record]);
        if e.model.is_none() {
            e.model = e.usage.as_ref().and_then(|u| u[0].model.clone());
        }
    }
    if let Some(result) = p.get_any(&["tool_response"]) {
        if let Some(text) = opencode::tool_result_text(result) {
            e.tool_response = Some(cut_text(&text, limits.tool_response));
        }
        if kind == Some(HookType::PostToolUse) && opencode::ended_without_exit(result) {
            e.tool_failed = Some(true);
        }
    }
}

/// The model name: a string, or Claude's `{id, display_name}` object; Gemini CLI names it
/// only in the request of its model events (`llm_request.model`).
fn model(p: &Payload) -> Option<String> {
    let named = p
        .get_any(&["model", "modelName", "model_name"])
        .or_else(|| {
            p.get_any(&["llm_request", "llmRequest"])
                .and_then(|r| r.get("model"))
        });
    match named? {
        Value::Object(m) => ["id", "display_name", "name"]
            .iter()
            .find_map(|k| m.get(*k).and_then(payload::scalar_text)),
        other => payload::scalar_text(other),
    }
}

/// The text of a tool result and its result type, for Copilot's `{resultType, textResultForLlm}`
/// objects and plain strings. Other objects have no text (the caller keeps their JSON).
fn tool_result_text(result: &Value) -> (Option<String>, Option<String>) {
    match result {
        Value::String(s) => (Some(s.clone()), None),
        Value::Object(m) => {
            let text = ["textResultForLlm", "text_result_for_llm"]
                .iter()
                .find_map(|k| m.get(*k).and_then(Value::as_str))
                .map(str::to_string);
            let kind = ["resultType", "result_type"]
                .iter()
                .find_map(|k| m.get(*k).and_then(Value::as_str))
                .map(str::to_string);
            (text, kind)
        }
        _ => (None, None),
    }
}

/// The agent a delegation tool call hands work to, from the tool's arguments.
fn delegated_agent(input: &Value) -> Option<String> {
    [
        "subagent_type",
        "subagentType",
        "agentName",
        "agent_name",
        "agent_type",
        "agentType",
        "agent",
    ]
    .iter()
    .find_map(|k| input.get(*k).and_then(payload::scalar_text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(json: &str) -> Payload {
        Payload::decode(json.as_bytes()).unwrap()
    }

    fn entry(json: &str, flag: Option<&str>) -> QueueEntry {
        let p = payload(json);
        let ev = event_name(flag, &p);
        normalize(
            &p,
            sniff_agent(&p),
            ev.as_deref(),
            1,
            json.len() as u64,
            &Limits::default(),
        )
    }

    #[test]
    fn cursor_says_how_a_turn_ended_and_a_call_took_in_fields_of_its_own() {
        let stop = |status: &str| {
            entry(
                &format!(
                    r#"{{"conversation_id":"c","workspace_roots":["/w"],"hook_event_name":"stop","status":"{status}"}}"#
                ),
                None,
            )
            .turn_outcome
        };
        assert_eq!(stop("completed"), None);
        assert_eq!(stop("aborted").as_deref(), Some("interrupted"));
        assert_eq!(stop("error").as_deref(), Some("failed"));
        let failed = entry(
            r#"{"conversation_id":"c","workspace_roots":["/w"],"hook_event_name":"postToolUseFailure","tool_name":"Grep","error_message":"Path does not exist","duration":6.889}"#,
            None,
        );
        assert_eq!(failed.duration_ms, Some(6));
        assert_eq!(failed.error.unwrap()["message"], "Path does not exist");
        // `duration` and `text` are Cursor's: another agent's are not read as these.
        let other = entry(
            r#"{"session_id":"s","hook_event_name":"Stop","duration":5,"text":"x"}"#,
            None,
        );
        assert_eq!((other.duration_ms, other.response), (None, None));
        assert!(
            Payload::decode(b"\xEF\xBB\xBF{\"a\":1}").is_ok(),
            "a byte order mark"
        );
    }

    #[test]
    fn droids_subagent_stop_carries_its_answer_or_its_error() {
        let stop = |extra: &str| {
            entry(
                &format!(
                    r#"{{"session_id":"s","transcript_path":"/h/.factory/sessions/-w/s.jsonl","hook_event_name":"SubagentStop","task_name":"Run echo hi","stop_hook_active":false{extra}}}"#
                ),
                None,
            )
        };
        let done = stop(r#","task_result":"done""#);
        assert_eq!((done.response.as_deref(), done.error), (Some("done"), None));
        let failed = stop(r#","task_error":"the shell is gone","task_result":null"#);
        assert_eq!(failed.error.unwrap()["message"], "the shell is gone");
        assert_eq!(failed.response, None);
        // Another agent's `task_result` is not read as an answer.
        let other = entry(
            r#"{"session_id":"s","hook_event_name":"SubagentStop","task_result":"x"}"#,
            None,
        );
        assert_eq!(other.response, None);
    }

    #[test]
    fn sniffs_each_dialect() {
        let cases = [
            (
                r#"{"session_id":"s","transcript_path":"/home/u/.claude/projects/-x/s.jsonl","hook_event_name":"Stop"}"#,
                Agent::Claude,
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash"}"#,
                Agent::Claude,
            ),
            (
                r#"{"timestamp":"2026-03-20T10:30:00.000Z","hook_event_name":"PreToolUse","session_id":"s","transcript_path":"/h/.config/Code/User/workspaceStorage/9/GitHub.copilot-chat/transcripts/s.jsonl"}"#,
                Agent::Vscode,
            ),
            (
                r#"{"timestamp":"2026-02-09T10:30:00.000Z","sessionId":"s","hookEventName":"PreToolUse"}"#,
                Agent::Vscode,
            ),
            (
                r#"{"timestamp":1704614600000,"cwd":"/p","toolName":"bash","toolArgs":"{}"}"#,
                Agent::Copilot,
            ),
            (
                r#"{"session_id":"s","hook_event_name":"Stop","turn_id":"t1","model":"gpt-5"}"#,
                Agent::Codex,
            ),
            (
                r#"{"session_id":"s","hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z"}"#,
                Agent::Gemini,
            ),
            (
                r#"{"session_id":"s","hook_event_name":"SessionEnd","timestamp":"2026-01-01T00:00:00Z","transcript_path":"/home/u/.gemini/tmp/p/chats/session-1.json"}"#,
                Agent::Gemini,
            ),
            (
                r#"{"conversation_id":"c","workspace_roots":["/w"],"hook_event_name":"stop"}"#,
                Agent::Cursor,
            ),
            (
                r#"{"session_id":"s","hook_event_name":"PreToolUse","timestamp":"2026-04-12T10:00:00.000Z","transcript_path":"/home/u/.qwen/projects/-w/chats/s.jsonl","cwd":"/w","permission_mode":"default","tool_name":"run_shell_command"}"#,
                Agent::Qwen,
            ),
            (
                r#"{"session_id":"s","transcript_path":"/Users/u/.factory/sessions/-Users-u-w/s.jsonl","cwd":"/Users/u/w","permission_mode":"auto-medium","hook_event_name":"PreToolUse","tool_name":"Execute","tool_input":{"command":"ls"}}"#,
                Agent::Droid,
            ),
            (r#"{"foo":1}"#, Agent::Unknown),
        ];
        for (json, want) in cases {
            assert_eq!(sniff_agent(&payload(json)), want, "{json}");
        }
    }

    #[test]
    fn copilot_camel_case_tool_args_string_is_parsed() {
        let e = entry(
            r#"{"timestamp":1704614600000,"cwd":"/p","sessionId":"s1","toolName":"bash","toolArgs":"{\"command\":\"ls\",\"description\":\"list\"}","toolResult":{"resultType":"success","textResultForLlm":"a b"}}"#,
            Some("postToolUse"),
        );
        assert_eq!(e.hook_type, "PostToolUse");
        assert_eq!(e.event.as_deref(), Some("postToolUse"));
        assert_eq!(e.agent.as_deref(), Some("copilot"));
        assert_eq!(e.session_id.as_deref(), Some("s1"));
        let input: Value = serde_json::from_str(e.tool_input.as_deref().unwrap()).unwrap();
        assert_eq!(input["command"], "ls");
        assert_eq!(e.tool_response.as_deref(), Some("a b"));
        assert_eq!(e.tool_result_type.as_deref(), Some("success"));
        assert_eq!(e.timestamp, 1, "capture's clock, not the payload's");
    }

    #[test]
    fn claude_task_call_is_a_delegation() {
        let e = entry(
            r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Task","tool_input":{"description":"d","prompt":"p","subagent_type":"code-reviewer"},"tool_use_id":"toolu_1"}"#,
            None,
        );
        assert_eq!(e.delegated_agent.as_deref(), Some("code-reviewer"));
        assert_eq!(e.tool_call_id.as_deref(), Some("toolu_1"));
        assert_eq!(e.actor_type.as_deref(), Some("main"));
    }

    #[test]
    fn vscode_run_subagent_is_a_delegation() {
        let e = entry(
            r#"{"timestamp":"2026-03-20T10:30:00.000Z","hook_event_name":"PreToolUse","session_id":"s","tool_name":"runSubagent","tool_input":{"agentName":"planner","prompt":"x"},"tool_use_id":"call_1"}"#,
            None,
        );
        assert_eq!(e.agent.as_deref(), Some("vscode"));
        assert_eq!(e.delegated_agent.as_deref(), Some("planner"));
        assert_eq!(
            e.actor_name, None,
            "the delegate is not the actor (vstack bug B-B3)"
        );
    }

    #[test]
    fn subagent_payloads_name_their_actor() {
        let e = entry(
            r#"{"session_id":"s","hook_event_name":"PreToolUse","agent_id":"a1","agent_type":"Explore","tool_name":"Read","tool_input":{"file_path":"/x"}}"#,
            None,
        );
        assert_eq!(e.actor_name.as_deref(), Some("Explore"));
        assert_eq!(e.actor_type.as_deref(), Some("subagent"));
    }

    #[test]
    fn model_object_and_unknown_events() {
        let e = entry(
            r#"{"session_id":"s","hook_event_name":"WorktreeCreate","model":{"id":"claude-x","display_name":"X"}}"#,
            None,
        );
        assert_eq!(e.hook_type, "WorktreeCreate", "unknown names are kept raw");
        assert_eq!(e.model.as_deref(), Some("claude-x"));
    }

    #[test]
    fn the_origin_is_the_extensions_and_cmstore_the_producer() {
        let cases = [
            (
                r#"{"session_id":"s","hook_event_name":"Stop"}"#,
                "claude-code-plugin",
            ),
            (
                r#"{"timestamp":"2026-02-09T10:30:00.000Z","sessionId":"s","hookEventName":"Stop"}"#,
                "vscode-extension",
            ),
            (
                r#"{"timestamp":1704614600000,"sessionId":"s"}"#,
                "copilot-cli-plugin",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"Stop","turn_id":"t"}"#,
                "unknown",
            ),
            (
                r#"{"session_id":"s","hook_event_name":"AfterAgent"}"#,
                "unknown",
            ),
        ];
        for (json, origin) in cases {
            let e = entry(json, None);
            assert_eq!(e.origin.as_deref(), Some(origin), "{json}");
            assert_eq!(e.producer.as_deref(), Some("cmstore"), "{json}");
        }
    }

    #[test]
    fn a_string_error_becomes_an_object_with_its_message() {
        let e = entry(
            r#"{"session_id":"s","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_use_id":"t","error":"Exit code 3"}"#,
            None,
        );
        assert_eq!(e.error, Some(serde_json::json!({"message": "Exit code 3"})));
        let copilot = entry(
            r#"{"timestamp":1,"sessionId":"s","error":{"message":"m","name":"E","stack":"at x"}}"#,
            Some("errorOccurred"),
        );
        assert_eq!(
            copilot.error,
            Some(serde_json::json!({"message": "m", "name": "E", "stack": "at x"}))
        );
    }

    #[test]
    fn a_gemini_response_loses_its_leading_blanks_and_nothing_else() {
        let limits = Limits::default();
        let stop = |agent: Agent, text: &str| {
            let p = Payload::decode(
                serde_json::json!({"hook_event_name": "AfterAgent", "session_id": "g",
                    "prompt": "q", "prompt_response": text})
                .to_string()
                .as_bytes(),
            )
            .unwrap();
            normalize(&p, agent, Some("AfterAgent"), 0, 0, &limits).response
        };
        let seen = " \n \n \n All done.\n";
        assert_eq!(stop(Agent::Gemini, seen).as_deref(), Some("All done.\n"));
        // Blanks alone were no answer before, and still are not.
        assert_eq!(stop(Agent::Gemini, "  "), None);
        assert_eq!(stop(Agent::Gemini, "x \n y").as_deref(), Some("x \n y"));
        // Other agents' answers are kept as they are.
        assert_eq!(stop(Agent::Claude, seen).as_deref(), Some(seen));
    }

    /// Qwen Code's `UserPromptSubmit` before a round of tool results has an empty prompt: a
    /// model request. Its real prompt, and any other agent's event, stays a prompt.
    #[test]
    fn a_qwen_prompt_without_a_prompt_is_a_model_request() {
        let base = r#""session_id":"q","hook_event_name":"UserPromptSubmit","transcript_path":"/h/.qwen/projects/-p/chats/q.jsonl","timestamp":"2026-04-12T10:00:00.000Z""#;
        let round = entry(&format!(r#"{{{base},"prompt":""}}"#), None);
        assert_eq!(round.hook_type, "ModelRequest");
        assert_eq!(round.event.as_deref(), Some("UserPromptSubmit"));
        assert_eq!(round.agent.as_deref(), Some("qwen"));
        assert_eq!(
            entry(&format!("{{{base}}}"), None).hook_type,
            "ModelRequest"
        );
        let prompt = entry(&format!(r#"{{{base},"prompt":"go"}}"#), None);
        assert_eq!(prompt.hook_type, "UserPromptSubmit");
        let claude = entry(
            r#"{"session_id":"c","hook_event_name":"UserPromptSubmit","prompt":""}"#,
            None,
        );
        assert_eq!(claude.hook_type, "UserPromptSubmit");
    }

    #[test]
    fn gemini_model_events_name_the_model_and_are_known() {
        let before = entry(
            r#"{"session_id":"g","hook_event_name":"BeforeModel","timestamp":"2026-01-01T00:00:00Z","llm_request":{"model":"gemini-2.5-pro","messages":[]}}"#,
            None,
        );
        assert_eq!(before.hook_type, "ModelRequest");
        assert_eq!(
            before.event.as_deref(),
            Some("BeforeModel"),
            "the agent's own name"
        );
        assert_eq!(before.model.as_deref(), Some("gemini-2.5-pro"));
        let selection = entry(
            r#"{"session_id":"g","hook_event_name":"BeforeToolSelection","llm_request":{"model":"gemini-2.5-flash"}}"#,
            None,
        );
        assert_eq!(selection.hook_type, "ToolSelection");
        assert_eq!(selection.model.as_deref(), Some("gemini-2.5-flash"));
    }

    #[test]
    fn an_automatic_gemini_pre_compress_is_only_a_check() {
        let auto = entry(
            r#"{"session_id":"g","hook_event_name":"PreCompress","trigger":"auto"}"#,
            None,
        );
        assert_eq!(auto.hook_type, "CompactionCheck");
        assert_eq!(auto.trigger.as_deref(), Some("auto"));
        let manual = entry(
            r#"{"session_id":"g","hook_event_name":"PreCompress","trigger":"manual"}"#,
            None,
        );
        assert_eq!(manual.hook_type, "PreCompact");
        let claude = entry(
            r#"{"session_id":"c","hook_event_name":"PreCompact","trigger":"auto"}"#,
            None,
        );
        assert_eq!(
            claude.hook_type, "PreCompact",
            "Claude's auto compaction compacts"
        );
    }

    #[test]
    fn a_post_tool_use_carries_the_agents_exit_code() {
        let gemini = entry(
            r#"{"session_id":"g","hook_event_name":"AfterTool","tool_name":"run_shell_command","tool_input":{"command":"exit 3"},"tool_response":{"llmContent":"Output: (empty)\nExit Code: 3\nProcess Group PGID: 9","returnDisplay":"Command exited with code: 3"}}"#,
            None,
        );
        assert_eq!(
            (gemini.exit_code, gemini.tool_failed),
            (Some(3), Some(true))
        );
        let copilot = entry(
            r#"{"timestamp":1,"sessionId":"c","toolName":"bash","toolArgs":"{}","toolResult":{"resultType":"success","textResultForLlm":"<exited with exit code 0>"}}"#,
            Some("postToolUse"),
        );
        assert_eq!((copilot.exit_code, copilot.tool_failed), (Some(0), None));
        let pre = entry(
            r#"{"session_id":"x","hook_event_name":"PreToolUse","turn_id":"t","tool_name":"Bash","tool_response":"Exit code: 3\nOutput:\n"}"#,
            None,
        );
        assert_eq!(pre.exit_code, None, "only a PostToolUse reports an outcome");
    }

    #[test]
    fn long_tool_input_still_parses() {
        let big = "y".repeat(100_000);
        let json = format!(
            r#"{{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{{"file_path":"/a","content":"{big}"}}}}"#
        );
        let e = entry(&json, None);
        let input = e.tool_input.unwrap();
        assert!(input.chars().count() <= Limits::default().tool_input);
        let v: Value = serde_json::from_str(&input).unwrap();
        assert_eq!(v["file_path"], "/a");
    }
}
