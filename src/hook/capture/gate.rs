//! The safety gate on a PreToolUse event: the finding on the entry, the deny reply in enforce
//! mode.

use serde_json::Value;

use super::DEBUG_EXCERPT;
use crate::config::{Config, Mode, ModeOrigin};
use crate::files::debug_log::DebugLog;
use crate::model::queue_line::QueueEntry;
use crate::model::safety::{self, Decision, Ruling, Verdict};
use crate::model::shorten::cut_text;
use crate::model::wire::{self, reply, Agent, Payload};

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
    let input = wire::tool_input_of(agent, payload);
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
        Verdict::Risky { rules, text } => risky(&ruling, rules, text, &config.mode_origin, log)
            .map(|reason| reply::deny(agent, event.unwrap_or("PreToolUse"), &reason)),
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

/// Notes a risky call's rules; when the ruling denies it, the deny reason.
fn risky(
    ruling: &Ruling,
    rules: &[String],
    text: &str,
    origin: &ModeOrigin,
    log: &mut DebugLog,
) -> Option<String> {
    let rules = rules.join(",");
    log.note(|| {
        format!(
            "safety gate: {rules} in {:?}",
            cut_text(text, DEBUG_EXCERPT)
        )
    });
    (ruling.decision == Some(Decision::Deny)).then(|| deny_reason(&rules, text, origin))
}

/// Characters of the matched text the deny reason quotes.
const REASON_TEXT_CHARS: usize = 200;

/// The deny reason: the rules, what they matched, and where enforce mode was set, so the way
/// back to audit is the right one. The matched text may end in a period of its own: the
/// reason's own sentence follows a dash.
fn deny_reason(rules: &str, text: &str, origin: &ModeOrigin) -> String {
    let how = match origin {
        ModeOrigin::Env => {
            "enforce mode is set by the environment variable CMSTORE_MODE; set it to audit"
                .to_string()
        }
        ModeOrigin::File(path) => {
            format!("enforce mode is set in {path}; set mode = \"audit\" there")
        }
        ModeOrigin::Default => "enforce mode is on; set mode = \"audit\"".to_string(),
    };
    format!(
        "Blocked by cmstore safety gate ({rules}): {} — {how} to allow such calls.",
        cut_text(text, REASON_TEXT_CHARS)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_says_where_enforce_mode_was_set_and_ends_once() {
        let text = "rm -rf ~ && echo done.";
        assert_eq!(
            deny_reason("rm-rf-root", text, &ModeOrigin::Env),
            "Blocked by cmstore safety gate (rm-rf-root): rm -rf ~ && echo done. — enforce mode \
             is set by the environment variable CMSTORE_MODE; set it to audit to allow such calls."
        );
        assert_eq!(
            deny_reason(
                "dd,mkfs",
                "dd if=/x",
                &ModeOrigin::File("/h/cmstore.toml".into())
            ),
            "Blocked by cmstore safety gate (dd,mkfs): dd if=/x — enforce mode is set in \
             /h/cmstore.toml; set mode = \"audit\" there to allow such calls."
        );
        let long = deny_reason("x", &"a".repeat(500), &ModeOrigin::Default);
        assert!(
            long.contains(&format!("{}… — enforce mode is on", "a".repeat(199))),
            "{long}"
        );
    }
}
