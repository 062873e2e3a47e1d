//! The JSON reply each agent expects on stdout: exactly one object (or nothing).
//!
//! OpenCode runs no hook commands: cmstore's own plugin (`resources/opencode/cmstore.js`)
//! reads Claude Code's shapes and does what they say in OpenCode's terms (a deny or a refused
//! prompt is an error thrown, context a text part added to the prompt or the tool's output).
//! Cline 3 reads `cancel` (with `errorMessage`: it stops the whole task, and the model is not
//! told) and `contextModification` (a message the model reads next), from its tool hooks only.
//! Windsurf and Goose read no reply at all, only the exit code (Goose counts even `{}` as a
//! failed hook), and Kiro and Kimi Code the exit code and plain text:
//! [`deliver`] turns a refusal into exit 2 with its reason on stderr, and for Kiro context
//! into text on stdout.

use serde_json::{json, Value};

use super::Agent;
use crate::model::agents::Answer;

/// What `capture` writes and how it exits, for an agent's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The line for stdout, if any.
    pub stdout: Option<String>,
    /// The line for stderr, if any.
    pub stderr: Option<String>,
    /// The process's exit code: 0, or 2 where the agent reads a refusal from it.
    pub exit_code: u8,
}

/// How `reply` reaches `agent`: the object on stdout; or, for an agent that reads the exit
/// code, exit 2 and the reason on stderr when the reply refuses the action (a deny or a
/// refused prompt), else the context as text on stdout where the agent reads it (Kiro), else
/// nothing.
pub fn deliver(agent: Agent, reply: &Value) -> Delivery {
    let answer = agent.answer();
    if answer == Answer::Json {
        return Delivery {
            stdout: Some(reply.to_string()),
            stderr: None,
            exit_code: 0,
        };
    }
    if let Some(reason) = refusal(reply) {
        return Delivery {
            stdout: None,
            stderr: Some(reason),
            exit_code: 2,
        };
    }
    let context = reply
        .pointer("/hookSpecificOutput/additionalContext")
        .and_then(Value::as_str)
        .filter(|_| answer == Answer::ExitCodeAndText);
    Delivery {
        stdout: context.map(str::to_string),
        stderr: None,
        exit_code: 0,
    }
}

/// The reason of a reply that refuses an action: a `decision: "block"` (the shape [`deny`] and
/// [`refuse_prompt`] build for an agent that reads the exit code).
fn refusal(reply: &Value) -> Option<String> {
    (reply.get("decision").and_then(Value::as_str) == Some("block")).then(|| {
        reply
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("refused by cmstore")
            .to_string()
    })
}

/// The reply that injects `context` into the agent's conversation.
///
/// Claude Code, VS Code, Codex and Gemini read `hookSpecificOutput.additionalContext`, naming
/// the event they sent (VS Code ignores replies naming another event); Copilot CLI reads a
/// top-level `additionalContext`; Cursor a top-level `additional_context` (`sessionStart`,
/// `postToolUse`; docs/agents.md cites where).
pub fn context_injection(agent: Agent, event: &str, context: &str) -> Value {
    match agent {
        Agent::Copilot => json!({ "additionalContext": context }),
        Agent::Cursor => json!({ "additional_context": context }),
        Agent::Cline => json!({ "contextModification": context }),
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
        Agent::Cline => json!({ "cancel": true, "errorMessage": reason }),
        Agent::Windsurf | Agent::Kiro | Agent::Goose | Agent::Kimi => {
            json!({ "decision": "block", "reason": reason })
        }
        Agent::Claude
        | Agent::Vscode
        | Agent::Codex
        | Agent::Qwen
        | Agent::Qoder
        | Agent::Droid
        | Agent::Opencode
        | Agent::Kilo
        | Agent::Unknown => json!({
            "hookSpecificOutput": {
                "hookEventName": event,
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }),
    }
}

/// The reply that refuses a prompt before the model sees it, in the shape each agent reads;
/// `None` for an agent whose prompt hook cannot refuse one (Copilot CLI reads no reply to
/// `userPromptSubmitted`).
///
/// Claude Code, VS Code, Codex and Qwen Code read a top-level `decision: "block"` with its
/// `reason` (UserPromptSubmit); Gemini CLI's `BeforeAgent` reads `decision: "deny"`; Cursor's
/// `beforeSubmitPrompt` reads `continue: false` with a `user_message`. Droid documents
/// Claude Code's `decision`, but 0.225 reads only `continue: false` (and its `stopReason`)
/// there: both are sent. Windsurf and Kiro get `decision: "block"`, which [`deliver`] makes
/// exit 2; `event` tells Kiro's hook files (`UserPromptSubmit`) from its agent
/// configuration's hooks (`userPromptSubmit`), which cannot refuse.
pub fn refuse_prompt(agent: Agent, event: &str, reason: &str) -> Option<Value> {
    // Kiro's agent-configuration hooks (camelCase) cannot refuse a prompt; its hook files'
    // `UserPromptSubmit` can.
    if agent == Agent::Kiro && event == "userPromptSubmit" {
        return None;
    }
    match agent {
        // Goose's prompt hook cannot refuse: exit 2 there is ignored (seen with 1.52.0).
        Agent::Copilot | Agent::Cline | Agent::Goose => None,
        Agent::Gemini => Some(json!({ "decision": "deny", "reason": reason })),
        Agent::Cursor => Some(json!({ "continue": false, "user_message": reason })),
        Agent::Droid => Some(json!({
            "decision": "block",
            "reason": reason,
            "continue": false,
            "stopReason": reason,
        })),
        Agent::Claude
        | Agent::Vscode
        | Agent::Codex
        | Agent::Qwen
        | Agent::Qoder
        | Agent::Opencode
        | Agent::Kilo
        | Agent::Windsurf
        | Agent::Kiro
        | Agent::Kimi
        | Agent::Unknown => Some(json!({ "decision": "block", "reason": reason })),
    }
}

/// `reply` with `notice` told to the agent as context ahead of any it already injects, and,
/// where the agent shows one (Claude Code, VS Code, Gemini CLI, Qwen Code, Qoder, Droid), shown to
/// the user as its `systemMessage`. A reply that denies or blocks something is left as it is: its reason says
/// more than the notice.
pub fn with_notice(agent: Agent, event: &str, mut reply: Value, notice: &str) -> Value {
    if reply.get("decision").is_some()
        || reply.get("permissionDecision").is_some()
        || reply.get("permission").is_some()
        || reply.get("cancel").is_some()
        || reply
            .pointer("/hookSpecificOutput/permissionDecision")
            .is_some()
    {
        return reply;
    }
    let slot = match agent {
        Agent::Copilot => reply.get_mut("additionalContext"),
        Agent::Cursor => reply.get_mut("additional_context"),
        Agent::Cline => reply.get_mut("contextModification"),
        _ => reply.pointer_mut("/hookSpecificOutput/additionalContext"),
    };
    match slot {
        Some(Value::String(context)) => *context = format!("{notice}\n\n{context}"),
        _ => reply = context_injection(agent, event, notice),
    }
    if matches!(
        agent,
        Agent::Claude | Agent::Vscode | Agent::Gemini | Agent::Qwen | Agent::Qoder | Agent::Droid
    ) {
        reply["systemMessage"] = Value::String(notice.to_string());
    }
    reply
}

/// The reply that sends `reason` back to the agent after a tool call (PostToolUse), so it
/// acts on it (a check failed on the file it just edited), in the shape each agent reads.
///
/// Claude Code, VS Code and Codex read a top-level `decision: "block"` with its `reason`
/// (the call has run; the reason goes to the model), with the text also as
/// `hookSpecificOutput.additionalContext`; Gemini CLI's `AfterTool` reads `decision: "deny"`
/// and `reason`; Copilot CLI's `postToolUse` (both casings) takes only a top-level
/// `additionalContext`; Cursor's `postToolUse` a top-level `additional_context`. Droid 0.225
/// reads only the `additionalContext` of Claude Code's shape there.
pub fn tool_feedback(agent: Agent, event: &str, reason: &str) -> Value {
    match agent {
        Agent::Copilot => json!({ "additionalContext": reason }),
        Agent::Gemini => json!({ "decision": "deny", "reason": reason }),
        Agent::Cursor => json!({ "additional_context": reason }),
        Agent::Cline => json!({ "contextModification": reason }),
        // A post-action hook cannot refuse anything, and no reply is read (Kiro drops what a
        // tool hook prints; Goose and Kimi Code read none after a call).
        Agent::Windsurf | Agent::Kiro | Agent::Goose | Agent::Kimi => empty(),
        Agent::Claude
        | Agent::Vscode
        | Agent::Codex
        | Agent::Qwen
        | Agent::Qoder
        | Agent::Droid
        | Agent::Opencode
        | Agent::Kilo
        | Agent::Unknown => json!({
            "decision": "block",
            "reason": reason,
            "hookSpecificOutput": { "hookEventName": event, "additionalContext": reason },
        }),
    }
}

/// Whether [`tool_feedback`] reaches `agent` as a block it must act on: not Cursor's (context
/// only), nor Windsurf's, Kiro's, Goose's and Kimi Code's (they read no reply after a call).
pub fn feedback_blocks(agent: Agent) -> bool {
    !matches!(
        agent,
        Agent::Cursor | Agent::Windsurf | Agent::Kiro | Agent::Goose | Agent::Kimi
    )
}

/// Whether a prompt hook's reply can tell `agent` something: not Copilot CLI's or Cursor's
/// (their prompt hooks read no context), nor Windsurf's and Goose's (they read no reply).
pub fn prompt_reads_context(agent: Agent) -> bool {
    !matches!(
        agent,
        Agent::Copilot | Agent::Cursor | Agent::Windsurf | Agent::Goose
    )
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
    fn droid_refuses_a_prompt_with_continue_false_beside_claude_codes_decision() {
        let refused = refuse_prompt(Agent::Droid, "UserPromptSubmit", "over budget").unwrap();
        assert_eq!(refused["continue"], false);
        assert_eq!(refused["stopReason"], "over budget");
        assert_eq!(refused["decision"], "block");
        assert_eq!(
            deny(Agent::Droid, "PreToolUse", "no")["hookSpecificOutput"]["permissionDecision"],
            "deny"
        );
        let told = with_notice(
            Agent::Droid,
            "SessionStart",
            empty(),
            "80 % of today's budget",
        );
        assert_eq!(told["systemMessage"], "80 % of today's budget");
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
        assert_eq!(
            tool_feedback(Agent::Cursor, "postToolUse", "x"),
            json!({"additional_context": "x"})
        );
        assert_eq!(
            context_injection(Agent::Cursor, "sessionStart", "c"),
            json!({"additional_context": "c"})
        );
        assert_eq!(
            with_notice(
                Agent::Cursor,
                "sessionStart",
                json!({"additional_context": "c"}),
                "n"
            ),
            json!({"additional_context": "n\n\nc"})
        );
    }

    #[test]
    fn a_prompt_is_refused_in_each_agents_shape_where_it_can_be() {
        let block = json!({"decision": "block", "reason": "no"});
        assert_eq!(
            refuse_prompt(Agent::Claude, "UserPromptSubmit", "no"),
            Some(block.clone())
        );
        assert_eq!(
            refuse_prompt(Agent::Codex, "UserPromptSubmit", "no"),
            Some(block)
        );
        assert_eq!(
            refuse_prompt(Agent::Gemini, "UserPromptSubmit", "no").unwrap()["decision"],
            "deny"
        );
        assert_eq!(
            refuse_prompt(Agent::Cursor, "UserPromptSubmit", "no").unwrap()["continue"],
            false
        );
        assert_eq!(
            refuse_prompt(Agent::Copilot, "UserPromptSubmit", "no"),
            None
        );
        assert_eq!(refuse_prompt(Agent::Kiro, "userPromptSubmit", "no"), None);
        assert_eq!(
            refuse_prompt(Agent::Kiro, "UserPromptSubmit", "no"),
            Some(json!({"decision": "block", "reason": "no"}))
        );
    }

    #[test]
    fn a_notice_goes_ahead_of_the_context_and_never_into_a_deny() {
        let context = context_injection(Agent::Claude, "UserPromptSubmit", "ctx");
        let told = with_notice(Agent::Claude, "UserPromptSubmit", context, "spent 85 %");
        assert_eq!(
            told,
            json!({
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": "spent 85 %\n\nctx"
                },
                "systemMessage": "spent 85 %"
            })
        );
        assert_eq!(
            with_notice(Agent::Copilot, "sessionStart", empty(), "n"),
            json!({"additionalContext": "n"})
        );
        assert_eq!(
            with_notice(Agent::Codex, "SessionStart", empty(), "n"),
            context_injection(Agent::Codex, "SessionStart", "n")
        );
        let denied = deny(Agent::Claude, "PreToolUse", "no");
        assert_eq!(
            with_notice(Agent::Claude, "PreToolUse", denied.clone(), "n"),
            denied
        );
        let refused = refuse_prompt(Agent::Gemini, "UserPromptSubmit", "no").unwrap();
        assert_eq!(
            with_notice(Agent::Gemini, "BeforeAgent", refused.clone(), "n"),
            refused
        );
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
