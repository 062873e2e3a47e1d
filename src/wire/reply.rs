//! The JSON reply each agent expects on stdout: exactly one object (or nothing).

use serde_json::{json, Value};

use super::Agent;

/// The reply that injects `context` into the agent's conversation.
///
/// Claude Code, VS Code, Codex and Gemini read `hookSpecificOutput.additionalContext`, naming
/// the event they sent (VS Code ignores replies naming another event); Copilot CLI reads a
/// top-level `additionalContext`.
pub fn context_injection(agent: Agent, event: &str, context: &str) -> Value {
    match agent {
        Agent::Copilot => json!({ "additionalContext": context }),
        _ => json!({
            "hookSpecificOutput": { "hookEventName": event, "additionalContext": context }
        }),
    }
}

/// The reply that denies a tool call, in the shape each agent reads.
///
/// Claude Code, VS Code and Codex read `hookSpecificOutput.permissionDecision`; Copilot CLI
/// (both hook casings) a top-level `permissionDecision`; Gemini CLI `decision`; Cursor
/// `permission`.
pub fn deny(agent: Agent, event: &str, reason: &str) -> Value {
    match agent {
        Agent::Copilot => {
            json!({ "permissionDecision": "deny", "permissionDecisionReason": reason })
        }
        Agent::Gemini => json!({ "decision": "deny", "reason": reason }),
        Agent::Cursor => {
            json!({ "permission": "deny", "user_message": reason, "agent_message": reason })
        }
        Agent::Claude | Agent::Vscode | Agent::Codex | Agent::Unknown => json!({
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }),
    }
}

/// A message shown to the user (PreCompact's knowledge index).
pub fn system_message(text: &str) -> Value {
    json!({ "systemMessage": text })
}

/// "No opinion": every agent reads `{}` as "carry on".
pub fn empty() -> Value {
    json!({})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_shapes_per_agent() {
        assert_eq!(
            deny(Agent::Copilot, "preToolUse", "no")["permissionDecision"],
            "deny"
        );
        assert_eq!(
            deny(Agent::Claude, "PreToolUse", "no")["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        assert_eq!(deny(Agent::Gemini, "BeforeTool", "no")["decision"], "deny");
        assert_eq!(
            deny(Agent::Cursor, "preToolUse", "no")["permission"],
            "deny"
        );
    }

    #[test]
    fn copilot_takes_top_level_context_others_nest_it() {
        assert_eq!(
            context_injection(Agent::Copilot, "sessionStart", "ctx"),
            json!({"additionalContext": "ctx"})
        );
        assert_eq!(
            context_injection(Agent::Claude, "UserPromptSubmit", "ctx"),
            json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx"}})
        );
    }
}
