//! Kimi Code's hooks (`@moonshot-ai/kimi-code`, 0.32 and later): Claude Code's event names and
//! much of its payload (`hook_event_name`, `session_id` as `session_<uuid>`, `cwd`,
//! `tool_name`, `tool_input`, `tool_call_id`), with fields of its own: every payload names
//! `client_type: "kimi_code_cli"`; `UserPromptSubmit`'s `prompt` is an array of content parts
//! (`[{"type": "text", "text": …}]`); `PostToolUse` carries the output as `tool_output` (the
//! first 2,000 characters) and `PostToolUseFailure` an `error` object (`{code, message}`, a
//! shell command's ending `Command failed with exit code: N.`). No payload names a transcript
//! or carries the answer (`Stop` has only `stop_hook_active`).
//!
//! Kimi reads the exit code: 2 refuses a tool call, a prompt or a Stop (stderr is the reason);
//! with exit 0 a prompt's stdout, JSON or not, is added to the conversation, so cmstore prints
//! text only where it has context to give ([`super::reply::deliver`]). Fields as docs/agents.md,
//! "Kimi Code", cites them (seen with Kimi Code 2.1.0).

use serde_json::Value;

use super::payload::Payload;
use crate::model::queue_line::{HookType, QueueEntry};
use crate::model::shorten::cut_text;

/// True for a payload of Kimi Code's: its `client_type`.
pub fn is_payload(p: &Payload) -> bool {
    p.str_any(&["client_type"])
        .is_some_and(|client| client.starts_with("kimi"))
}

/// What Kimi's payloads say in fields of their own: the prompt's text parts, a failed call's
/// exit code in its error's last line, a failed turn's error (`error_type`, `error_message`).
pub fn fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, limit: usize) {
    if e.prompt.is_none() {
        e.prompt = p
            .get_any(&["prompt"])
            .and_then(prompt_text)
            .map(|t| cut_text(&t, limit));
    }
    if kind == Some(HookType::StopFailure) && e.error.is_none() {
        // `error_type` and `error_message`, not `error`.
        let message = p.str_any(&["error_message"]);
        let name = p.str_any(&["error_type"]);
        if message.is_some() || name.is_some() {
            e.error = Some(serde_json::json!({"message": message.unwrap_or_default(),
                                              "name": name}));
        }
    }
    if kind == Some(HookType::PostToolUseFailure) {
        let message = p
            .get_any(&["error"])
            .and_then(|error| error.get("message"))
            .and_then(Value::as_str);
        e.exit_code = message.and_then(exit_code);
    }
}

/// The text parts of a prompt sent as content parts, joined by newlines.
fn prompt_text(prompt: &Value) -> Option<String> {
    let parts: Vec<&str> = prompt
        .as_array()?
        .iter()
        .filter(|part| part["type"] == "text")
        .filter_map(|part| part["text"].as_str())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n"))
}

/// The exit code Kimi's shell tool writes as the last line of a failed command's error:
/// `Command failed with exit code: N.`
fn exit_code(message: &str) -> Option<i64> {
    super::outcome::last_line_exit_code(message, "Command failed with exit code: ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_prompts_text_parts_are_its_text() {
        let parts = json!([{"type": "text", "text": "say"}, {"type": "image_url"},
                           {"type": "text", "text": "hello"}]);
        assert_eq!(prompt_text(&parts).as_deref(), Some("say\nhello"));
        assert_eq!(prompt_text(&json!([{"type": "image_url"}])), None);
        assert_eq!(prompt_text(&json!("plain")), None);
    }

    #[test]
    fn a_failed_commands_exit_code_is_its_errors_last_line() {
        assert_eq!(
            exit_code("oops\nCommand failed with exit code: 3."),
            Some(3)
        );
        assert_eq!(
            exit_code("printed: Command failed with exit code: 3. ok"),
            None
        );
        assert_eq!(exit_code("timed out"), None);
    }
}
