//! Kiro's hooks (the `kiro-cli` and the Kiro IDE). Two dialects, both Claude Code's shape of
//! payload (`hook_event_name`, `cwd`, `session_id`, `prompt`, `tool_name`, `tool_input`,
//! `tool_response`):
//!
//! - the agent configuration's hooks (CLI 2.x, "v2"): five camelCase triggers, `agentSpawn`,
//!   `userPromptSubmit`, `preToolUse`, `postToolUse`, `stop` (with `assistant_response`);
//!   `session_id` only in the interactive terminal (the process's `KIRO_SESSION_ID` names it
//!   otherwise);
//! - the standalone hook files (CLI 3, IDE 1.x, "v3"), which cmstore installs: PascalCase
//!   triggers, `SessionStart`, `UserPromptSubmit`, `PreToolUse`, `PostToolUse`, `Stop`, and
//!   spec-task, file and manual triggers kept under their own names.
//!
//! A tool's result is `{success, result: […]}` or `{success: false, error: …}`; a shell
//! command's entry carries `exit_status` (a string), `stdout` and `stderr`. The IDE sends the
//! result as text instead, a command's ending on its own line `Exit Code: N`. Kiro reads no JSON
//! back: exit 2 refuses a tool call (stderr goes to the model) and a session start's or
//! prompt's stdout is added to the context as text ([`super::reply::deliver`]). Fields as
//! docs/agents.md, "Kiro", cites them.

use serde_json::Value;

use super::payload::Payload;
use crate::model::queue_line::HookType;
use crate::model::shorten::{compact_json, cut_text};

/// The agent configuration's (v2) trigger names, which no other agent sends as
/// `hook_event_name`.
const V2_TRIGGERS: [&str; 5] = [
    "agentSpawn",
    "userPromptSubmit",
    "preToolUse",
    "postToolUse",
    "stop",
];

/// True for a v2 payload of Kiro's: one of its camelCase triggers as `hook_event_name` (Cursor,
/// whose events are camelCase too, is told apart before this by its own fields).
pub fn is_payload(p: &Payload) -> bool {
    p.str_any(&["hook_event_name"])
        .is_some_and(|e| V2_TRIGGERS.contains(&e.as_str()))
}

/// The canonical hook type of a Kiro trigger; `None` for the triggers kept under their own
/// names (`PreTaskExec`, `PostTaskExec`, `PostFileCreate`, `PostFileSave`, `PostFileDelete`,
/// `Manual`).
pub fn hook_type(event: &str) -> Option<HookType> {
    match event.trim() {
        "agentSpawn" | "SessionStart" => Some(HookType::SessionStart),
        "userPromptSubmit" | "UserPromptSubmit" => Some(HookType::UserPromptSubmit),
        "preToolUse" | "PreToolUse" => Some(HookType::PreToolUse),
        "postToolUse" | "PostToolUse" => Some(HookType::PostToolUse),
        "stop" | "Stop" => Some(HookType::Stop),
        _ => None,
    }
}

/// What a tool's result says: its text, a shell command's exit code, and whether it failed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ToolResult {
    /// A shell command's stdout and stderr, else the result (or error) as compact JSON.
    pub text: Option<String>,
    /// A shell command's `exit_status`.
    pub exit_code: Option<i64>,
    /// `success: false`, or an exit code other than 0.
    pub failed: bool,
}

/// Reads `tool_response` (`{success, result | error}`; the IDE sends the result as text).
pub fn tool_result(result: &Value, limit: usize) -> ToolResult {
    let entries = result.get("result").and_then(Value::as_array);
    let first = entries.and_then(|e| e.first());
    let exit_code = first
        .and_then(|r| r.get("exit_status"))
        .and_then(|s| match s {
            Value::String(text) => text.trim().parse().ok(),
            other => other.as_i64(),
        })
        .or_else(|| result.as_str().and_then(text_exit_code));
    let shell_text = first.filter(|r| r.get("stdout").is_some()).map(|r| {
        let part = |key: &str| r.get(key).and_then(Value::as_str).unwrap_or_default();
        match (part("stdout"), part("stderr")) {
            (out, "") => out.to_string(),
            ("", err) => err.to_string(),
            (out, err) => format!("{out}\n{err}"),
        }
    });
    let text = match (shell_text, result) {
        (Some(text), _) => Some(cut_text(&text, limit)),
        (None, Value::String(text)) => Some(cut_text(text, limit)),
        (None, Value::Null) => None,
        (None, other) => {
            let shown = other.get("result").or_else(|| other.get("error"));
            Some(compact_json(shown.unwrap_or(other), limit))
        }
    };
    let unsuccessful = result.get("success").and_then(Value::as_bool) == Some(false);
    ToolResult {
        text,
        exit_code,
        failed: unsuccessful || exit_code.is_some_and(|c| c != 0),
    }
}

/// The exit code the IDE writes as the last line of a command's result text.
fn text_exit_code(text: &str) -> Option<i64> {
    super::outcome::last_line_exit_code(text, "Exit Code: ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_dialects_triggers_map_to_hook_types_and_the_rest_keep_their_names() {
        for (v2, v3, kind) in [
            ("agentSpawn", "SessionStart", HookType::SessionStart),
            (
                "userPromptSubmit",
                "UserPromptSubmit",
                HookType::UserPromptSubmit,
            ),
            ("preToolUse", "PreToolUse", HookType::PreToolUse),
            ("postToolUse", "PostToolUse", HookType::PostToolUse),
            ("stop", "Stop", HookType::Stop),
        ] {
            assert_eq!(hook_type(v2), Some(kind));
            assert_eq!(hook_type(v3), Some(kind));
        }
        assert_eq!(hook_type("PostFileSave"), None);
        assert_eq!(hook_type("Manual"), None);
    }

    #[test]
    fn a_shell_commands_result_gives_its_output_and_exit_code() {
        let ok = json!({"success": true, "result": [{"exit_status": "0", "stdout": "repro\n", "stderr": ""}]});
        assert_eq!(
            tool_result(&ok, 100),
            ToolResult {
                text: Some("repro\n".to_string()),
                exit_code: Some(0),
                failed: false
            }
        );
        let bad = json!({"success": true, "result": [{"exit_status": "2", "stdout": "", "stderr": "no such file"}]});
        let read = tool_result(&bad, 100);
        assert_eq!((read.exit_code, read.failed), (Some(2), true));
        assert_eq!(read.text.as_deref(), Some("no such file"));
    }

    #[test]
    fn an_unsuccessful_result_failed_and_other_results_are_kept_as_json() {
        let error = json!({"success": false, "error": ["path not found"]});
        let read = tool_result(&error, 100);
        assert!(read.failed);
        assert_eq!(read.text.as_deref(), Some(r#"["path not found"]"#));
        let text = json!("Output:\nok\nExit Code: 0");
        let read = tool_result(&text, 100);
        assert_eq!(read.text.as_deref(), Some("Output:\nok\nExit Code: 0"));
        assert_eq!((read.exit_code, read.failed), (Some(0), false));
        let failed = tool_result(&json!("Output:\nExit Code: 127\n"), 100);
        assert_eq!((failed.exit_code, failed.failed), (Some(127), true));
        let said = tool_result(
            &json!("Created the /w/a.md file. Exit Code: 3 is text"),
            100,
        );
        assert_eq!(said.exit_code, None);
    }

    #[test]
    fn only_kiros_camel_case_triggers_tell_it_apart() {
        let p = |e: &str| {
            Payload::decode(json!({"hook_event_name": e}).to_string().as_bytes()).unwrap()
        };
        assert!(is_payload(&p("agentSpawn")));
        assert!(is_payload(&p("stop")));
        assert!(!is_payload(&p("Stop")));
        assert!(!is_payload(&p("PreToolUse")));
    }
}
