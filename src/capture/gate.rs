//! The safety gate on a PreToolUse event: the finding on the entry, the deny reply in enforce
//! mode.

use serde_json::Value;

use super::DEBUG_EXCERPT;
use crate::config::{Config, Mode};
use crate::debug_log::DebugLog;
use crate::queue_line::QueueEntry;
use crate::safety::{self, Verdict};
use crate::shorten::cut_text;
use crate::wire::{self, reply, Agent, Payload};

/// Runs the gate on a PreToolUse payload (`None` when it could not be decoded): records the
/// finding on `entry`, and in enforce mode returns the agent's deny reply.
pub(super) fn check(
    config: &Config,
    agent: Agent,
    event: Option<&str>,
    payload: Option<&Payload>,
    entry: &mut QueueEntry,
    log: &mut DebugLog,
) -> Option<Value> {
    let Some(payload) = payload else {
        // Allowed unchecked, like any call the gate cannot read, and counted by ingest.
        allow_unread(entry);
        return None;
    };
    let input = wire::tool_input(payload);
    match safety::check(entry.tool_name.as_deref(), input.as_ref(), &config.safety) {
        Verdict::Clean => None,
        Verdict::Unreadable => {
            // Never block what cannot be read: enforce mode must not deny everything.
            allow_unread(entry);
            log.note(|| "safety gate could not read the tool call: allowed".into());
            None
        }
        Verdict::Risky { rules, text } => {
            risky(config.mode, agent, event, &rules, &text, entry, log)
        }
    }
}

fn allow_unread(entry: &mut QueueEntry) {
    entry.risk = Some(safety::UNREADABLE.to_string());
    entry.decision = Some("allow".to_string());
}

/// Records a risky call's rules; in enforce mode denies it, naming the rules and the command.
fn risky(
    mode: Mode,
    agent: Agent,
    event: Option<&str>,
    rules: &[String],
    text: &str,
    entry: &mut QueueEntry,
    log: &mut DebugLog,
) -> Option<Value> {
    let rules = rules.join(",");
    log.note(|| {
        format!(
            "safety gate: {rules} in {:?}",
            cut_text(text, DEBUG_EXCERPT)
        )
    });
    entry.risk = Some(rules.clone());
    match mode {
        Mode::Audit => {
            entry.decision = Some("allow".to_string());
            None
        }
        Mode::Enforce => {
            entry.decision = Some("deny".to_string());
            let reason = format!(
                "Blocked by cmstore safety gate ({rules}): {}. Set mode = \"audit\" in cmstore.toml to allow such commands.",
                cut_text(text, 200)
            );
            Some(reply::deny(agent, event.unwrap_or("PreToolUse"), &reason))
        }
    }
}
