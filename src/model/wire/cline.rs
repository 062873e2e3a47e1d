//! Cline's hook payloads (its CLI 3.x, `cline` on npm; the VS Code extension's hooks send the
//! older shape this also reads): `hookName` names the event (`tool_call`, `agent_end`, …, or
//! the event's own name), the session is `sessionContext.rootSessionId` (the same across a
//! resumed session's runs; `taskId` is one run's), the folder is `workspaceRoots[0]`, a tool
//! call is `tool_call` and its result `tool_result` (`{id, name, input, output, error?,
//! durationMs}`). No payload names the model or carries the person's prompt; the shell reads
//! them from the session's files at the run's end (`files::transcript::cline`).
//!
//! Seen with Cline 3.0.65 (docs/agents.md, "Cline"; the end-to-end suite runs it).

use serde_json::Value;

use super::payload::{scalar_text, Payload};
use crate::model::queue_line::usage::UsageRecord;
use crate::model::queue_line::{HookType, QueueEntry};
use crate::model::shorten::{compact_json, cut_text};

/// True for a payload of Cline's: its event in `hookName`, its run in `taskId`.
pub fn is_payload(p: &Payload) -> bool {
    p.has_any(&["hookName"]) && p.has_any(&["taskId"])
}

/// The canonical hook type of Cline's event, by the payload's `hookName` (3.x) or the hook
/// file's event name (the VS Code extension's). A subagent's end (its `parent_agent_id` set)
/// is a `SubagentStop`. Cline 3 fires `prompt_submit` only for messages added during a run
/// (its own reminders, never the person's prompt): a `ModelRequest`, as Qwen Code's prompt
/// events without a prompt are, no prompt counted.
pub fn hook_type(event: &str, p: &Payload) -> Option<HookType> {
    let subagent = p
        .get_any(&["parent_agent_id"])
        .is_some_and(|v| !v.is_null());
    Some(match event.trim() {
        "tool_call" | "PreToolUse" => HookType::PreToolUse,
        "tool_result" | "PostToolUse" => HookType::PostToolUse,
        "agent_start" | "TaskStart" | "agent_resume" | "TaskResume" => HookType::SessionStart,
        "agent_end" | "TaskComplete" if subagent => HookType::SubagentStop,
        "agent_end" | "TaskComplete" => HookType::Stop,
        "agent_error" | "TaskError" => HookType::StopFailure,
        "agent_abort" | "TaskCancel" => HookType::Interrupt,
        "prompt_submit" => HookType::ModelRequest,
        "UserPromptSubmit" => HookType::UserPromptSubmit,
        "session_shutdown" | "SessionShutdown" => HookType::SessionEnd,
        "pre_compact" | "PreCompact" => HookType::PreCompact,
        _ => return None,
    })
}

/// When a run began (epoch ms): Cline names a run `conv_<ms>_<random>`.
pub fn run_started(task_id: &str) -> Option<i64> {
    task_id
        .strip_prefix("conv_")?
        .split('_')
        .next()?
        .parse()
        .ok()
}

/// What Cline's payload says in shapes of its own, put on the entry `e` of an event of `kind`.
pub fn fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, text_limit: usize) {
    let get = |key: &str| p.get_any(&[key]);
    e.session_id = get("sessionContext")
        .and_then(|c| c.get("rootSessionId"))
        .and_then(scalar_text)
        .or_else(|| p.str_any(&["taskId"]));
    if e.cwd.is_none() {
        e.cwd = get("workspaceRoots")
            .and_then(|r| r.get(0))
            .and_then(scalar_text);
        e.root_hint.clone_from(&e.cwd);
    }
    // Every payload names its agent (`agent_id`); a subagent's names its parent too.
    let parent = get("parent_agent_id").is_some_and(|v| !v.is_null());
    e.actor_type = Some(if parent { "subagent" } else { "main" }.to_string());
    if kind == Some(HookType::SessionStart) {
        let resumed = matches!(
            p.str_any(&["hookName"]).as_deref(),
            Some("agent_resume" | "TaskResume")
        );
        e.source = Some(if resumed { "resume" } else { "startup" }.to_string());
    }
    if let Some(said) = get("turn")
        .and_then(|t| t.get("outputText"))
        .and_then(Value::as_str)
    {
        e.response = Some(cut_text(said, text_limit));
    }
    if let Some(prompt) = get("userPromptSubmit")
        .and_then(|u| u.get("prompt"))
        .and_then(Value::as_str)
    {
        e.prompt = Some(cut_text(prompt, text_limit));
    }
    if let Some(call) = get("tool_call").or_else(|| get("tool_result")) {
        e.tool_name = call.get("name").and_then(scalar_text);
        e.tool_call_id = call.get("id").and_then(scalar_text);
    } else if let Some(named) = get("preToolUse").or_else(|| get("postToolUse")) {
        e.tool_name = named.get("toolName").and_then(scalar_text);
    }
}

/// A tool call's input, from `tool_call` or `tool_result` (3.x) or `preToolUse` /
/// `postToolUse` (`toolName`, `parameters`: the extension's).
pub fn tool_input(p: &Payload) -> Option<Value> {
    let call = p.get_any(&["tool_call", "tool_result"]);
    if let Some(input) = call.and_then(|c| c.get("input")) {
        return Some(input.clone());
    }
    p.get_any(&["preToolUse", "postToolUse"])
        .and_then(|u| u.get("parameters"))
        .cloned()
}

/// The outcome of `tool_result`: its text (each command's result, in order), its exit code
/// (`run_commands` says `Command exited with code N` of a command that failed: the first
/// one's), whether it failed (an `error`, or a command that did not succeed: the tool itself
/// still reports success then), and how long it ran.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ToolResult {
    pub text: Option<String>,
    pub exit_code: Option<i64>,
    pub failed: bool,
    pub duration_ms: Option<i64>,
}

/// [`ToolResult`] of the payload's `tool_result`, `None` without one.
pub fn tool_result(p: &Payload, limit: usize) -> Option<ToolResult> {
    let result = p.get_any(&["tool_result"])?;
    let output = result.get("output").unwrap_or(&Value::Null);
    let entries: Vec<&Value> = match output {
        Value::Array(items) => items.iter().collect(),
        _ => Vec::new(),
    };
    let text = match output {
        Value::String(s) => Some(cut_text(s, limit)),
        Value::Array(_) if entries.iter().all(|e| e.get("result").is_some()) => Some(cut_text(
            &entries
                .iter()
                .filter_map(|e| e.get("result").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            limit,
        )),
        Value::Null => None,
        other => Some(compact_json(other, limit)),
    };
    let exit_code = entries
        .iter()
        .filter_map(|e| e.get("error").and_then(Value::as_str))
        .find_map(|error| {
            error
                .strip_prefix("Command exited with code ")?
                .trim()
                .parse()
                .ok()
        });
    let errored = result.get("error").is_some_and(|e| !e.is_null());
    let unsuccessful = entries
        .iter()
        .any(|e| e.get("success").and_then(Value::as_bool) == Some(false));
    Some(ToolResult {
        text,
        exit_code,
        failed: errored || unsuccessful,
        duration_ms: result.get("durationMs").and_then(Value::as_i64),
    })
}

/// The usage of one message of a session's `<id>.messages.json` (Cline 3): an assistant
/// message's `metrics` (`inputTokens`, which includes the cached tokens, `outputTokens`,
/// `cacheReadTokens`, `cacheWriteTokens`), under its own id and model (`modelInfo.id`), stored
/// the Anthropic way as every agent's; `None` for any other message or one without counts.
pub fn usage_of_message(message: &Value, session: &str) -> Option<UsageRecord> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let metrics = message.get("metrics")?;
    let count = |key: &str| metrics.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (count("inputTokens"), count("outputTokens"));
    if input == 0 && output == 0 {
        return None;
    }
    let cache_read = count("cacheReadTokens").min(input);
    let cache_write = count("cacheWriteTokens").min(input - cache_read);
    Some(UsageRecord {
        message_id: message.get("id").and_then(scalar_text)?,
        model: message.pointer("/modelInfo/id").and_then(scalar_text),
        input: input - cache_read - cache_write,
        output,
        cache_write,
        cache_read,
        ts: message.get("ts").and_then(Value::as_i64),
        session_id: Some(session.to_string()),
        ..UsageRecord::default()
    })
}

/// The person's prompt in a user message's text: Cline wraps it as `<user_input mode="act">
/// PROMPT</user_input>`; `None` for a message that is no prompt (a tool result, a hook's
/// context).
pub fn prompt_of_message(message: &Value) -> Option<String> {
    if message.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let text = message
        .get("content")?
        .as_array()?
        .iter()
        .find_map(|block| block.get("text").and_then(Value::as_str))?;
    let inner = text.trim().strip_prefix("<user_input")?;
    let (_, rest) = inner.split_once('>')?;
    Some(rest.strip_suffix("</user_input>")?.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(json: &str) -> Payload {
        Payload::decode(json.as_bytes()).unwrap()
    }

    #[test]
    fn a_failed_command_is_read_from_its_entry_not_from_the_tool() {
        let p = payload(
            r#"{"hookName":"tool_result","taskId":"conv_1796630739000_z8y8ijd",
                "tool_result":{"id":"call_1","name":"run_commands",
                  "input":{"commands":["echo a; exit 3"]},
                  "output":[{"query":"echo a; exit 3",
                    "result":"[Command exited with code 3]\na\n",
                    "error":"Command exited with code 3","success":false}],
                  "durationMs":13},
                "postToolUse":{"toolName":"run_commands","success":true}}"#,
        );
        assert_eq!(
            tool_result(&p, 100).unwrap(),
            ToolResult {
                text: Some("[Command exited with code 3]\na\n".into()),
                exit_code: Some(3),
                failed: true,
                duration_ms: Some(13),
            }
        );
        assert_eq!(
            run_started("conv_1796630739000_z8y8ijd"),
            Some(1_796_630_739_000)
        );
        assert_eq!(run_started("1796630739000"), None);
        assert!(is_payload(&p));
        assert_eq!(hook_type("tool_result", &p), Some(HookType::PostToolUse));
        assert_eq!(hook_type("TaskResume", &p), Some(HookType::SessionStart));
        assert_eq!(hook_type("tool_calls", &p), None);
        let sub = payload(r#"{"hookName":"agent_end","taskId":"t","parent_agent_id":"agent_1"}"#);
        assert_eq!(hook_type("agent_end", &sub), Some(HookType::SubagentStop));
        assert_eq!(hook_type("agent_end", &p), Some(HookType::Stop));
        assert_eq!(hook_type("prompt_submit", &p), Some(HookType::ModelRequest));
    }
}
