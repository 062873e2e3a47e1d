//! Which hook events each version of an agent accepts, so that `hooks install` never writes
//! an event the installed agent does not know.
//!
//! This matters because Claude Code before 2.1.101 rejects a whole settings file that names
//! an event it does not know ("Invalid key in record"), and then ignores every other setting
//! in it, `permissions.deny` included. The first version of each event comes from Claude
//! Code's CHANGELOG and its published packages (docs/hooks.md lists them with the evidence).
//! An event with no entry here is known to every version cmstore supports.

use std::fmt;

use super::{Agent, Expected};

/// An agent's release number, `major.minor.patch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// The first `N.N.N` in `text` (`claude --version` prints `2.1.332 (Claude Code)`).
    pub fn find(text: &str) -> Option<Version> {
        text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .find_map(Version::parse)
    }

    /// `text` exactly `N.N.N` (or `N.N`, patch 0).
    pub fn parse(text: &str) -> Option<Version> {
        let mut parts = text.split('.').map(|p| p.parse::<u32>().ok());
        let (major, minor) = (parts.next()??, parts.next()??);
        let patch = match parts.next() {
            None => 0,
            Some(p) => p?,
        };
        parts
            .next()
            .is_none()
            .then_some(Version(major, minor, patch))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// Claude Code's hook events with the first published version whose settings schema names
/// them (read from each version's package: docs/hooks.md). `PreToolUse`, `PostToolUse` and
/// `Notification` are known to every version with hooks (1.0.23).
const CLAUDE_EVENTS_SINCE: [(&str, Version); 14] = [
    ("Stop", Version(1, 0, 31)),
    ("SubagentStop", Version(1, 0, 41)),
    ("PreCompact", Version(1, 0, 48)),
    ("UserPromptSubmit", Version(1, 0, 53)),
    ("SessionStart", Version(1, 0, 62)),
    ("SessionEnd", Version(1, 0, 85)),
    ("SubagentStart", Version(2, 0, 44)),
    ("PermissionRequest", Version(2, 0, 45)),
    ("PostToolUseFailure", Version(2, 0, 56)),
    ("PostCompact", Version(2, 1, 76)),
    ("StopFailure", Version(2, 1, 78)),
    ("PermissionDenied", Version(2, 1, 88)),
    ("PostToolBatch", Version(2, 1, 118)),
    ("MessageDisplay", Version(2, 1, 152)),
];

/// The oldest version of `agent` whose events cmstore writes when it cannot tell the
/// installed one: every event it knows is known to every later version. For Claude Code,
/// the first to know `PostToolUseFailure` (late 2025); from 2.1.101 on an unknown event is
/// ignored with a warning, not the whole file.
pub fn floor(agent: Agent) -> Option<Version> {
    (agent == Agent::Claude).then_some(Version(2, 0, 56))
}

/// The first version of `agent` that knows `event`, when not every version does.
pub fn first_version(agent: Agent, event: &str) -> Option<Version> {
    if agent != Agent::Claude {
        return None;
    }
    CLAUDE_EVENTS_SINCE
        .iter()
        .find(|(name, _)| *name == event)
        .map(|(_, since)| *since)
}

/// Whether this cmstore knows, for `agent`, that some versions reject events they do not
/// know: then `hooks install` asks the agent its version.
pub fn is_version_aware(agent: Agent) -> bool {
    floor(agent).is_some()
}

/// An event left out of what is written, and the version that would accept it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The event.
    pub event: String,
    /// The first version of the agent that knows it.
    pub since: Version,
}

/// Keeps in `expected` only the events `version` knows (`None`, not known: those of the
/// agent's [`floor`]), and returns those it took out, in template order.
pub fn keep_known(expected: &mut Expected, version: Option<Version>) -> Vec<LeftOut> {
    expected.for_version = version;
    let Some(version) = version.or_else(|| floor(expected.agent)) else {
        return Vec::new();
    };
    let agent = expected.agent;
    let mut left_out = Vec::new();
    expected
        .events
        .retain(|(event, _)| match first_version(agent, event) {
            Some(since) if since > version => {
                left_out.push(LeftOut {
                    event: event.clone(),
                    since,
                });
                false
            }
            _ => true,
        });
    expected.left_out = left_out.clone();
    left_out
}

#[cfg(test)]
mod tests {
    use super::super::Wiring;
    use super::*;

    #[test]
    fn versions_are_read_from_what_the_cli_prints() {
        assert_eq!(
            Version::find("2.1.332 (Claude Code)"),
            Some(Version(2, 1, 332))
        );
        assert_eq!(
            Version::find("claude-code v1.0.115\n"),
            Some(Version(1, 0, 115))
        );
        assert_eq!(Version::parse("2.1"), Some(Version(2, 1, 0)));
        for bad in ["", "2", "2.x.1", "2.1.3.4", "v2.1.3"] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
        assert_eq!(Version::find("command not found"), None);
        assert!(Version(2, 1, 100) < Version(2, 1, 101));
        assert!(Version(2, 0, 999) < Version(2, 1, 0));
    }

    fn events_for(version: Option<Version>) -> (Vec<String>, Vec<String>) {
        let mut expected = Agent::Claude.expected("cmstore");
        let left = keep_known(&mut expected, version);
        (
            expected.events.into_iter().map(|(e, _)| e).collect(),
            left.into_iter().map(|l| l.event).collect(),
        )
    }

    #[test]
    fn an_older_claude_gets_only_the_events_it_knows() {
        let (all, none) = events_for(Some(Version(2, 1, 332)));
        assert_eq!((all.len(), none.len()), (15, 0), "{all:?}");
        let (kept, left) = events_for(Some(Version(2, 1, 100)));
        assert_eq!(left, ["PostToolBatch", "MessageDisplay"]);
        assert_eq!(kept.len(), 13);
        let (kept, left) = events_for(Some(Version(1, 0, 115)));
        assert_eq!(
            left,
            [
                "PostToolUseFailure",
                "SubagentStart",
                "PermissionRequest",
                "PermissionDenied",
                "PostToolBatch",
                "MessageDisplay"
            ]
        );
        assert!(kept.contains(&"SessionEnd".to_string()));
        let (kept, _) = events_for(Some(Version(1, 0, 38)));
        assert_eq!(
            kept,
            ["PreToolUse", "PostToolUse", "Stop", "Notification"],
            "the hooks of the first release"
        );
    }

    #[test]
    fn an_unknown_version_gets_the_floors_events() {
        assert_eq!(events_for(None), events_for(floor(Agent::Claude)));
        let mut gemini = Agent::Gemini.expected("cmstore");
        let all = gemini.events.len();
        assert!(keep_known(&mut gemini, None).is_empty());
        assert_eq!(gemini.events.len(), all);
    }

    #[test]
    fn every_event_of_the_table_is_one_cmstore_writes_or_said_not_to() {
        let template = Agent::Claude.expected("cmstore");
        let unwritten = ["PostCompact", "StopFailure"];
        for (event, _) in CLAUDE_EVENTS_SINCE {
            assert!(
                unwritten.contains(&event) || template.events.iter().any(|(e, _)| e == event),
                "{event}"
            );
        }
    }
}
