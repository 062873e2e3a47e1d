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
/// `permission`. Codex shows `<reason>. Command: <command>`, so its reason loses a final
/// period of its own.
pub fn deny(agent: Agent, event: &str, reason: &str) -> Value {
    let reason = match agent {
        Agent::Codex => reason.strip_suffix('.').unwrap_or(reason),
        _ => reason,
    };
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

/// The reply that sends `reason` back to the agent after a tool call (PostToolUse), so it
/// acts on it (a check failed on the file it just edited), in the shape each agent reads.
///
/// Claude Code, VS Code and Codex read a top-level `decision: "block"` with its `reason`
/// (the call has run; the reason goes to the model), with the text also as
/// `hookSpecificOutput.additionalContext`; Gemini CLI's `AfterTool` reads `decision: "deny"`
/// and `reason`; Copilot CLI's `postToolUse` (both casings) takes only a top-level
/// `additionalContext`; Cursor's post-tool hooks take no feedback, so it gets `{}`.
pub fn tool_feedback(agent: Agent, event: &str, reason: &str) -> Value {
    match agent {
        Agent::Copilot => json!({ "additionalContext": reason }),
        Agent::Gemini => json!({ "decision": "deny", "reason": reason }),
        Agent::Cursor => empty(),
        Agent::Claude | Agent::Vscode | Agent::Codex | Agent::Unknown => json!({
            "decision": "block",
            "reason": reason,
            "hookSpecificOutput": { "hookEventName": event, "additionalContext": reason },
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
    fn codex_adds_the_final_period_itself() {
        let reason = |agent| {
            deny(agent, "PreToolUse", "Blocked: x.")["hookSpecificOutput"]
                ["permissionDecisionReason"]
                .clone()
        };
        assert_eq!(reason(Agent::Codex), "Blocked: x");
        assert_eq!(reason(Agent::Claude), "Blocked: x.");
        assert_eq!(
            deny(Agent::Gemini, "BeforeTool", "Blocked: x.")["reason"],
            "Blocked: x."
        );
    }

    #[test]
    fn feedback_after_a_tool_call_per_agent() {
        let claude = tool_feedback(Agent::Claude, "PostToolUse", "fix it");
        assert_eq!(claude["decision"], "block");
        assert_eq!(claude["reason"], "fix it");
        assert_eq!(claude["hookSpecificOutput"]["hookEventName"], "PostToolUse");
        assert_eq!(
            tool_feedback(Agent::Copilot, "postToolUse", "fix it"),
            json!({"additionalContext": "fix it"})
        );
        assert_eq!(
            tool_feedback(Agent::Gemini, "AfterTool", "fix it"),
            json!({"decision": "deny", "reason": "fix it"})
        );
        assert_eq!(tool_feedback(Agent::Cursor, "postToolUse", "x"), json!({}));
        for agent in [Agent::Vscode, Agent::Codex] {
            assert_eq!(
                tool_feedback(agent, "PostToolUse", "x")["decision"],
                "block"
            );
        }
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
