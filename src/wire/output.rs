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
