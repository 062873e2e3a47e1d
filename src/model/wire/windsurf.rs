//! Windsurf's Cascade hooks (Devin Desktop since mid-2026): twelve snake_case actions, each
//! payload `{agent_action_name, trajectory_id, execution_id, timestamp, model_name, tool_info}`.
//! The conversation is `trajectory_id`, one turn of it `execution_id`; what the action did is
//! in `tool_info` (a command line and its folder, a file and its edits, an MCP tool and its
//! arguments, the person's prompt, the answer). No payload carries a call id, an exit code or
//! the command's output, and no event starts or ends a session.
//!
//! A hook blocks a `pre_*` action by exiting 2 (its stderr goes to the model); stdout is never
//! read ([`super::reply::deliver`]). Fields as docs/agents.md, "Windsurf", cites them; the
//! fixtures are a logged session of Devin Desktop, 2026-06.

use serde_json::{json, Value};

use super::payload::{scalar_text, Payload};
use crate::model::queue_line::{HookType, QueueEntry};
use crate::model::shorten::{compact_json, cut_text};

/// The tool name a shell command's call is recorded under (`pre_run_command`).
pub const SHELL_TOOL: &str = "run_command";
/// The tool name a file edit's call is recorded under (`pre_write_code`).
pub const EDIT_TOOL: &str = "write_code";
/// The tool name a file read's call is recorded under (`pre_read_code`).
pub const READ_TOOL: &str = "read_code";

/// True for a payload of Cascade's: its event in `agent_action_name`.
pub fn is_payload(p: &Payload) -> bool {
    p.has_any(&["agent_action_name"])
}

/// The canonical hook type of a Cascade action; `None` for the actions kept under their own
/// names (`post_cascade_response_with_transcript`, `post_setup_worktree`).
pub fn hook_type(event: &str) -> Option<HookType> {
    Some(match event.trim() {
        "pre_user_prompt" => HookType::UserPromptSubmit,
        "pre_read_code" | "pre_write_code" | "pre_run_command" | "pre_mcp_tool_use" => {
            HookType::PreToolUse
        }
        "post_read_code" | "post_write_code" | "post_run_command" | "post_mcp_tool_use" => {
            HookType::PostToolUse
        }
        // Sent once the answer to a prompt is complete: the turn's end.
        "post_cascade_response" => HookType::Stop,
        _ => return None,
    })
}

/// The `tool_info` object, if the payload has one.
fn info(p: &Payload) -> Option<&Value> {
    p.get_any(&["tool_info"]).filter(|v| v.is_object())
}

/// A text field of `tool_info`.
fn info_text(p: &Payload, key: &str) -> Option<String> {
    info(p)?.get(key).and_then(scalar_text)
}

/// The tool a `pre_*`/`post_*` action stands for: the shell, a file read or edit, or an MCP
/// tool as `mcp__<server>__<tool>` (Claude Code's spelling, so one rule names MCP tools of
/// every agent).
fn tool_name(event: &str, p: &Payload) -> Option<String> {
    let action = event
        .trim()
        .strip_prefix("pre_")
        .or_else(|| event.trim().strip_prefix("post_"))?;
    Some(match action {
        "run_command" => SHELL_TOOL.to_string(),
        "read_code" => READ_TOOL.to_string(),
        "write_code" => EDIT_TOOL.to_string(),
        "mcp_tool_use" => format!(
            "mcp__{}__{}",
            info_text(p, "mcp_server_name").unwrap_or_default(),
            info_text(p, "mcp_tool_name").unwrap_or_default()
        ),
        _ => return None,
    })
}

/// The call's arguments, the same in its `pre_*` and `post_*` payloads so the two halves pair
/// (no call id): the command line and folder, the file and its edits, the MCP arguments.
pub fn tool_input(p: &Payload) -> Option<Value> {
    let event = p.str_any(&["agent_action_name"])?;
    let info = info(p)?;
    let get = |key: &str| info.get(key).cloned().unwrap_or(Value::Null);
    match tool_name(&event, p)?.as_str() {
        SHELL_TOOL => Some(json!({"command": get("command_line"), "cwd": get("cwd")})),
        READ_TOOL => Some(json!({"file_path": get("file_path")})),
        EDIT_TOOL => Some(json!({"file_path": get("file_path"), "edits": get("edits")})),
        _ => info.get("mcp_tool_arguments").cloned(),
    }
}

/// What Cascade's payload says, put on the entry `e` of an event of `kind`: the session and
/// turn, the folder (a command's, a new worktree's), the tool call, the prompt, the answer,
/// the transcript.
pub fn fields(p: &Payload, kind: Option<HookType>, e: &mut QueueEntry, text_limit: usize) {
    let event = p.str_any(&["agent_action_name"]).unwrap_or_default();
    e.session_id = p.str_any(&["trajectory_id"]);
    e.turn_id = p.str_any(&["execution_id"]);
    let folder = info_text(p, "cwd").or_else(|| info_text(p, "worktree_path"));
    if folder.is_some() {
        e.cwd.clone_from(&folder);
        e.root_hint = folder;
    }
    if let Some(path) = info_text(p, "transcript_path") {
        e.transcript_path = Some(path);
    }
    match kind {
        Some(HookType::UserPromptSubmit) => {
            e.prompt = info_text(p, "user_prompt").map(|t| cut_text(&t, text_limit));
        }
        Some(HookType::Stop) => {
            e.response = info_text(p, "response").map(|t| cut_text(&t, text_limit));
        }
        Some(HookType::PreToolUse | HookType::PostToolUse) => {
            e.tool_name = tool_name(&event, p);
        }
        _ => {}
    }
}

/// An MCP call's result (`post_mcp_tool_use`'s `mcp_result`), the only output Cascade sends.
pub fn tool_result(p: &Payload, limit: usize) -> Option<String> {
    let result = info(p)?.get("mcp_result")?;
    Some(match result {
        Value::String(text) => cut_text(text, limit),
        other => compact_json(other, limit),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(text: &str) -> Payload {
        Payload::decode(text.as_bytes()).unwrap()
    }

    #[test]
    fn actions_map_to_hook_types_and_the_rest_keep_their_names() {
        assert_eq!(
            hook_type("pre_user_prompt"),
            Some(HookType::UserPromptSubmit)
        );
        assert_eq!(hook_type("pre_mcp_tool_use"), Some(HookType::PreToolUse));
        assert_eq!(hook_type("post_write_code"), Some(HookType::PostToolUse));
        assert_eq!(hook_type("post_cascade_response"), Some(HookType::Stop));
        assert_eq!(hook_type("post_setup_worktree"), None);
        assert_eq!(hook_type("post_cascade_response_with_transcript"), None);
    }

    #[test]
    fn a_calls_halves_have_the_same_input_and_an_mcp_tool_its_server_in_the_name() {
        let pre = payload(
            r#"{"agent_action_name":"pre_mcp_tool_use","tool_info":{"mcp_server_name":"github","mcp_tool_name":"create_issue","mcp_tool_arguments":{"repo":"r"}}}"#,
        );
        let post = payload(
            r#"{"agent_action_name":"post_mcp_tool_use","tool_info":{"mcp_server_name":"github","mcp_tool_name":"create_issue","mcp_tool_arguments":{"repo":"r"},"mcp_result":"made #4"}}"#,
        );
        assert_eq!(tool_input(&pre), tool_input(&post));
        assert_eq!(tool_input(&pre), Some(json!({"repo": "r"})));
        assert_eq!(
            tool_name("pre_mcp_tool_use", &pre).as_deref(),
            Some("mcp__github__create_issue")
        );
        assert_eq!(tool_result(&post, 100).as_deref(), Some("made #4"));
        assert_eq!(tool_result(&pre, 100), None);
    }

    #[test]
    fn a_command_is_the_shell_tools_input_with_its_folder() {
        let p = payload(
            r#"{"agent_action_name":"pre_run_command","trajectory_id":"t","execution_id":"x","tool_info":{"command_line":"ls","cwd":"/w"}}"#,
        );
        assert_eq!(tool_input(&p), Some(json!({"command": "ls", "cwd": "/w"})));
        let mut e = QueueEntry::new("PreToolUse".to_string(), 0);
        fields(&p, Some(HookType::PreToolUse), &mut e, 100);
        assert_eq!(e.session_id.as_deref(), Some("t"));
        assert_eq!(e.turn_id.as_deref(), Some("x"));
        assert_eq!(e.cwd.as_deref(), Some("/w"));
        assert_eq!(e.tool_name.as_deref(), Some(SHELL_TOOL));
    }
}
