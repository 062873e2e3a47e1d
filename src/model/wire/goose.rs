//! Goose's hooks (Goose 1.34 and later, the Agentic AI Foundation's `goose`): an Open Plugins
//! plugin folder's `hooks/hooks.json`, Claude Code's nesting of handlers, but payloads of
//! Goose's own. Every payload has `event`, `session_id` (`YYYYMMDD_N`, a counter in Goose's
//! `sessions.db`) and `matcher_context` (null where no matcher applies); the tool events add
//! `tool_call_id`, `tool_name` (bare: `shell`, `write`, `edit`), `tool_input` and
//! `working_dir`; `UserPromptSubmit` the prompt as `message`; `Stop` the answer as
//! `last_assistant_message`. No event carries a tool's output, an error's text or a transcript
//! path, and SessionStart, UserPromptSubmit and SessionEnd name no folder (the hook runs in
//! Goose's own working directory).
//!
//! Goose reads a hook's exit code: 2 refuses a tool call (stderr is the reason the model is
//! told) or blocks a Stop (the turn goes on); 0 with nothing printed allows. Anything else,
//! `{}` included, is counted as a failed hook and logged as a warning, so cmstore prints
//! nothing ([`super::reply::deliver`]). A prompt cannot be refused. Fields as docs/agents.md,
//! "Goose", cites them (seen with Goose 1.52.0).

use super::payload::Payload;
use crate::model::queue_line::{HookType, QueueEntry};
use crate::model::shorten::cut_text;

/// True for a payload of Goose's: `event` beside `matcher_context` (null where no matcher
/// applies, never left out), a pair no other agent sends.
pub fn is_payload(p: &Payload) -> bool {
    p.has_key("matcher_context") && p.str_any(&["event"]).is_some()
}

/// The event name a Goose payload carries (`event`); `None` for any other payload.
pub fn event_name(p: &Payload) -> Option<String> {
    is_payload(p).then(|| p.str_any(&["event"])).flatten()
}

/// The plugin folder cmstore's hooks run from: a deny `blocked_by` it is the gate's own, which
/// its PreToolUse already records.
const OWN_PLUGIN: &str = "cmstore";

/// The canonical hook type of a Goose event; `None` for those kept under their own names:
/// `PreToolUseResult` (the decision every plugin's hooks came to, `decision` and who refused
/// and why), and the per-kind repeats of a tool event (`BeforeShellExecution`,
/// `AfterShellExecution`, `BeforeReadFile`, `AfterFileEdit`), which name no call id. A
/// `PreToolUseResult` that says another plugin refused the call is the call's end, as Claude
/// Code's `PermissionDenied` is (Goose fires no PostToolUse for it): the call is `refused`.
pub fn hook_type(event: &str, p: &Payload) -> Option<HookType> {
    let refused_by_another = || {
        p.str_any(&["decision"]).as_deref() == Some("deny")
            && p.str_any(&["blocked_by"]).as_deref() != Some(OWN_PLUGIN)
    };
    match event.trim() {
        "PreToolUseResult" if refused_by_another() => Some(HookType::PermissionDenied),
        "SessionStart" => Some(HookType::SessionStart),
        "UserPromptSubmit" => Some(HookType::UserPromptSubmit),
        "PreToolUse" => Some(HookType::PreToolUse),
        "PostToolUse" => Some(HookType::PostToolUse),
        "PostToolUseFailure" => Some(HookType::PostToolUseFailure),
        "Stop" => Some(HookType::Stop),
        "SessionEnd" => Some(HookType::SessionEnd),
        _ => None,
    }
}

/// What Goose's payloads say in fields of their own: the folder (`working_dir`), and the
/// prompt, which is `message` (not a message of the agent's).
pub fn fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, limit: usize) {
    if e.cwd.is_none() {
        e.cwd = p.str_any(&["working_dir"]);
        e.root_hint = e.cwd.clone();
    }
    if kind == Some(HookType::UserPromptSubmit) && e.prompt.is_none() {
        e.prompt = e.message.take().map(|m| cut_text(&m, limit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn payload(v: serde_json::Value) -> Payload {
        Payload::decode(v.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_goose_payload_is_told_by_event_beside_matcher_context() {
        let start = payload(json!({"event": "SessionStart", "session_id": "20261208_1",
            "matcher_context": null}));
        assert!(is_payload(&start));
        assert_eq!(event_name(&start).as_deref(), Some("SessionStart"));
        let other = payload(json!({"event": "x", "session_id": "s"}));
        assert!(!is_payload(&other));
        assert_eq!(event_name(&other), None);
    }

    #[test]
    fn tool_repeats_and_the_decision_keep_their_own_names() {
        let none = payload(json!({"event": "x", "matcher_context": null}));
        assert_eq!(
            hook_type("PostToolUseFailure", &none),
            Some(HookType::PostToolUseFailure)
        );
        let refused = |by: &str| {
            payload(
                json!({"event": "PreToolUseResult", "matcher_context": "shell",
                           "decision": "deny", "blocked_by": by}),
            )
        };
        assert_eq!(
            hook_type("PreToolUseResult", &refused("guard")),
            Some(HookType::PermissionDenied)
        );
        assert_eq!(hook_type("PreToolUseResult", &refused("cmstore")), None);
        for own in [
            "PreToolUseResult",
            "BeforeShellExecution",
            "AfterShellExecution",
            "BeforeReadFile",
            "AfterFileEdit",
        ] {
            assert_eq!(hook_type(own, &none), None, "{own}");
        }
    }
}
