//! OpenCode's events, as cmstore's plugin (`resources/opencode/cmstore.js`) hands them to
//! `capture`: OpenCode runs no hook commands, so the plugin sends each event it forwards under
//! OpenCode's own name (`tool.execute.before`, `session.idle`, …) with the fields it lifts out
//! of OpenCode's arguments in the names the other dialects use (`session_id`, `tool_name`,
//! `tool_use_id`, `tool_input`, `tool_response`, `prompt`, `response`, `error`). What each
//! event means is decided here, not in the plugin, so the plugin stays a courier.
//!
//! Seen with OpenCode 1.18.33 (docs/agents.md, "OpenCode"; the end-to-end suite runs it).

use serde_json::Value;

use super::payload::Payload;
use crate::model::queue_line::usage::UsageRecord;
use crate::model::queue_line::HookType;

/// The canonical hook type of OpenCode's `event`, or `None` for an event without one (kept
/// under its own name).
///
/// - `chat.message` (a prompt, before the model sees it) is a `UserPromptSubmit`;
/// - `tool.execute.before` and `tool.execute.after` bracket a tool call; a tool part that
///   ended in an error (`message.part.updated`: a tool that failed by itself or was denied,
///   which never reaches `tool.execute.after`) is a `PostToolUseFailure`;
/// - `session.created` starts a session, `session.idle` ends a turn, `session.error` ends one
///   on an error;
/// - `experimental.session.compacting` and `session.compacted` bracket a compaction;
/// - `permission.asked` asks the person, and `permission.replied` with `reply: "reject"` is
///   their refusal;
/// - `message.updated` (an assistant message completed: one model call) is a response.
pub fn hook_type(event: &str, p: &Payload) -> Option<HookType> {
    Some(match event.trim() {
        "chat.message" => HookType::UserPromptSubmit,
        "tool.execute.before" => HookType::PreToolUse,
        "tool.execute.after" => HookType::PostToolUse,
        "message.part.updated" => HookType::PostToolUseFailure,
        "session.created" => HookType::SessionStart,
        "session.idle" => HookType::Stop,
        "session.error" => HookType::StopFailure,
        "experimental.session.compacting" => HookType::PreCompact,
        "session.compacted" => HookType::PostCompact,
        "permission.asked" => HookType::PermissionRequest,
        "permission.replied" if p.str_any(&["reply"]).as_deref() == Some("reject") => {
            HookType::PermissionDenied
        }
        "message.updated" => HookType::ModelResponse,
        _ => return None,
    })
}

/// True when `event` is one of OpenCode's names: dotted, as no other agent's are.
pub fn is_event(event: &str) -> bool {
    let event = event.trim();
    event.contains('.') && event.chars().all(|c| c.is_ascii_lowercase() || c == '.')
}

/// The text of a tool's result (`tool.execute.after`'s `{title, output, metadata}`): its
/// `output`, what the model was given.
pub fn tool_result_text(result: &Value) -> Option<String> {
    result.get("output")?.as_str().map(str::to_string)
}

/// The exit code of a shell tool's result: `metadata.exit` (the bash tool's; the model never
/// sees it, only the output). `None` for any other tool.
pub fn exit_code(result: &Value) -> Option<i64> {
    result.pointer("/metadata/exit")?.as_i64()
}

/// True when a shell tool's result says it ended with no exit code (`metadata.exit: null`:
/// the call was aborted, seen with OpenCode 1.18.33): not a success.
pub fn ended_without_exit(result: &Value) -> bool {
    result
        .get("metadata")
        .and_then(|m| m.as_object())
        .is_some_and(|m| m.get("exit") == Some(&Value::Null))
}

/// The error of `session.error` (`{name, data: {message, statusCode, …}}`) or of a tool part
/// (a string), as the line's error object: `message` the readable text, `name` kept.
pub fn error(error: &Value) -> Option<Value> {
    match error {
        Value::String(s) if !s.is_empty() => Some(serde_json::json!({ "message": s })),
        Value::Object(m) => {
            let message = error
                .pointer("/data/message")
                .or_else(|| m.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            let mut out = serde_json::json!({ "message": message });
            if let Some(name) = m.get("name").and_then(Value::as_str) {
                out["name"] = Value::String(name.to_string());
            }
            Some(out)
        }
        _ => None,
    }
}

/// The usage of one model call the plugin sent: a completed assistant message
/// (`message.updated`'s `info`, sent as `assistant_message`); see [`usage_of_message`].
pub fn usage(p: &Payload) -> Option<UsageRecord> {
    usage_of_message(p.get_any(&["assistant_message"])?)
}

/// The usage of an assistant message (`info`, as OpenCode's events and its store hold one),
/// keyed by its id: the same record from the hook and from `cmstore import`. OpenCode stores
/// the input without its cached parts (`input`, `cache.read`, `cache.write`), as cmstore does,
/// and the output without the reasoning (`output`, `reasoning`), which cmstore counts inside
/// the output. `None` for a message without counts (an error before any token).
pub fn usage_of_message(info: &Value) -> Option<UsageRecord> {
    if info.get("role").and_then(Value::as_str) != Some("assistant") {
        return None;
    }
    let tokens = info.get("tokens")?;
    let count = |path: &str| tokens.pointer(path).and_then(Value::as_u64).unwrap_or(0);
    let (input, output, reasoning) = (count("/input"), count("/output"), count("/reasoning"));
    let (cache_read, cache_write) = (count("/cache/read"), count("/cache/write"));
    if input + output + reasoning + cache_read + cache_write == 0 {
        return None;
    }
    let text = |key: &str| {
        info.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Some(UsageRecord {
        message_id: text("id")?,
        model: text("modelID"),
        input,
        output: output.saturating_add(reasoning),
        reasoning: (reasoning > 0).then_some(reasoning),
        cache_write,
        cache_read,
        ts: info
            .pointer("/time/completed")
            .or_else(|| info.pointer("/time/created"))
            .and_then(Value::as_i64),
        session_id: text("sessionID"),
        ..UsageRecord::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(json: &str) -> Payload {
        Payload::decode(json.as_bytes()).unwrap()
    }

    #[test]
    fn events_are_opencodes_dotted_names() {
        for event in ["tool.execute.before", "session.idle", "chat.message"] {
            assert!(is_event(event), "{event}");
        }
        for event in ["PreToolUse", "preToolUse", "BeforeTool", "", "a.B"] {
            assert!(!is_event(event), "{event}");
        }
        let p = payload(r#"{"reply":"reject"}"#);
        assert_eq!(
            hook_type("permission.replied", &p),
            Some(HookType::PermissionDenied)
        );
        let once = payload(r#"{"reply":"once"}"#);
        assert_eq!(hook_type("permission.replied", &once), None);
        assert_eq!(hook_type("session.diff", &once), None);
    }

    #[test]
    fn a_completed_assistant_message_is_one_response_with_the_reasoning_in_its_output() {
        let p = payload(
            r#"{"assistant_message":{"id":"msg_1","sessionID":"ses_1","role":"assistant",
                "modelID":"claude-sonnet-4-5","providerID":"anthropic","cost":0.01,
                "tokens":{"total":200,"input":80,"output":30,"reasoning":12,
                          "cache":{"write":8,"read":20}},
                "time":{"created":1000,"completed":1500}}}"#,
        );
        let got = usage(&p).unwrap();
        assert_eq!(got.message_id, "msg_1");
        assert_eq!(got.session_id.as_deref(), Some("ses_1"));
        assert_eq!(got.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(
            (
                got.input,
                got.output,
                got.reasoning,
                got.cache_read,
                got.cache_write
            ),
            (80, 42, Some(12), 20, 8)
        );
        assert_eq!(got.ts, Some(1500));
        let empty = payload(
            r#"{"assistant_message":{"id":"m","role":"assistant","tokens":{"input":0,"output":0}}}"#,
        );
        assert_eq!(usage(&empty), None);
        let user =
            payload(r#"{"assistant_message":{"id":"m","role":"user","tokens":{"input":5}}}"#);
        assert_eq!(usage(&user), None);
    }

    #[test]
    fn errors_keep_their_readable_message_and_name() {
        let api = serde_json::json!({"name": "APIError",
            "data": {"message": "mock bad request", "statusCode": 400}});
        assert_eq!(
            error(&api).unwrap(),
            serde_json::json!({"message": "mock bad request", "name": "APIError"})
        );
        assert_eq!(
            error(&Value::String("denied".into())).unwrap()["message"],
            "denied"
        );
        assert_eq!(error(&Value::Null), None);
        let result = serde_json::json!({"title": "exit 3", "output": "x\n",
            "metadata": {"output": "x\n", "exit": 3, "truncated": false}});
        assert_eq!(exit_code(&result), Some(3));
        assert_eq!(tool_result_text(&result).as_deref(), Some("x\n"));
        assert_eq!(exit_code(&serde_json::json!({"output": "x"})), None);
        assert!(ended_without_exit(
            &serde_json::json!({"metadata": {"exit": null}})
        ));
        assert!(!ended_without_exit(&result));
        assert!(!ended_without_exit(
            &serde_json::json!({"metadata": {"diff": "x"}})
        ));
    }
}
