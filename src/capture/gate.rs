//! The safety gate on a PreToolUse event: the finding on the entry, the deny reply in enforce
//! mode.

use serde_json::Value;

use super::DEBUG_EXCERPT;
use crate::config::{Config, Mode};
use crate::debug_log::DebugLog;
use crate::queue_line::QueueEntry;
use crate::safety::{self, Decision, Ruling, Verdict};
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
    let verdict = safety::check(entry.tool_name.as_deref(), input.as_ref(), &config.safety);
    let ruling = Ruling::of(verdict, config.mode == Mode::Enforce);
    record(entry, &ruling);
    match &ruling.verdict {
        Verdict::Clean => None,
        Verdict::Unreadable => {
            // Never block what cannot be read (the ruling allows it): enforce mode must not
            // deny everything.
            log.note(|| "safety gate could not read the tool call: allowed".into());
            None
        }
        Verdict::Risky { rules, text } => risky(&ruling, agent, event, rules, text, log),
    }
}

fn allow_unread(entry: &mut QueueEntry) {
    record(entry, &Ruling::of(Verdict::Unreadable, false));
}

/// Writes the ruling's `risk` and `decision` on the entry (neither for a clean call).
fn record(entry: &mut QueueEntry, ruling: &Ruling) {
    entry.risk = ruling.risk();
    entry.decision = ruling.decision.map(|d| d.as_str().to_string());
}

/// Notes a risky call's rules; when the ruling denies it, the deny reply, naming the rules and
/// the command.
fn risky(
    ruling: &Ruling,
    agent: Agent,
    event: Option<&str>,
    rules: &[String],
    text: &str,
    log: &mut DebugLog,
) -> Option<Value> {
    let rules = rules.join(",");
    log.note(|| {
        format!(
            "safety gate: {rules} in {:?}",
            cut_text(text, DEBUG_EXCERPT)
        )
    });
    match ruling.decision {
        Some(Decision::Deny) => {
            let reason = format!(
                "Blocked by cmstore safety gate ({rules}): {}. Set mode = \"audit\" in cmstore.toml to allow such commands.",
                cut_text(text, 200)
            );
            Some(reply::deny(agent, event.unwrap_or("PreToolUse"), &reason))
        }
        _ => None,
    }
}
