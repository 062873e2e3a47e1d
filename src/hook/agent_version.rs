//! Asking an installed agent its version (`claude --version`), so that `hooks install` writes
//! only the events it knows and `hooks status` can say what will fire. Run by those commands,
//! never on the hook path; time-limited, as a check's command is.

use std::path::Path;
use std::time::Duration;

use crate::hook::agent_settings::versions::{self, Version};
use crate::hook::agent_settings::Expected;
use crate::hook::checks::process::{self, Ending};
use crate::model::agents::Agent;

/// How long an agent gets to print its version (a first run of a packaged CLI can be slow).
const LIMIT: Duration = Duration::from_secs(10);

/// What asking an agent its version gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// It printed this version.
    Version(Version),
    /// Why there is none: not installed where the PATH leads, failed, or printed none.
    Unknown(String),
}

/// The command that prints `agent`'s version, for the agents whose versions differ in the
/// events they accept (Claude Code) or in what keeps their hooks from running (Codex, whose
/// hooks review began in 0.129).
pub fn version_command(agent: Agent) -> Option<&'static str> {
    match agent {
        Agent::Claude => Some("claude"),
        Agent::Codex => Some("codex"),
        _ => None,
    }
}

/// Runs `agent`'s CLI (found on the PATH) with `--version`.
pub fn ask(agent: Agent) -> Asked {
    let Some(program) = version_command(agent) else {
        return Asked::Unknown(format!("cmstore cannot ask {} its version", agent.as_str()));
    };
    if crate::support::env::find_on_path(program).is_none() {
        return Asked::Unknown(format!("no `{program}` on the PATH"));
    }
    let ran = process::program(program, &["--version"], Path::new("."), LIMIT);
    let said = ran.output.lines().next().unwrap_or("").trim().to_string();
    match ran.ending {
        Ending::Exited(Some(0)) => match Version::find(&said) {
            Some(version) => Asked::Version(version),
            None => Asked::Unknown(format!(
                "`{program} --version` printed no version ({said:?})"
            )),
        },
        Ending::NotStarted(why) => Asked::Unknown(format!("`{program}` could not be run: {why}")),
        Ending::TimedOut => Asked::Unknown(format!(
            "`{program} --version` gave no answer within {}s",
            LIMIT.as_secs()
        )),
        Ending::Exited(code) => Asked::Unknown(format!(
            "`{program} --version` failed (exit {})",
            code.map_or("by a signal".to_string(), |c| c.to_string())
        )),
    }
}

/// The version `cmstore hooks` goes by for `agent`: `given` (`--agent-version`), else what
/// its CLI prints; `None` for an agent every version of which accepts cmstore's events.
pub fn resolve(agent: Agent, given: Option<Version>) -> Option<Asked> {
    if !versions::is_version_aware(agent) {
        return None;
    }
    Some(given.map_or_else(|| ask(agent), Asked::Version))
}

/// Keeps in `expected` the events `asked` allows ([`versions::keep_known`]); what a person
/// should know of it, when anything was left out or the version is not known.
pub fn fit(expected: &mut Expected, asked: Option<&Asked>) -> Option<String> {
    let asked = asked?;
    let title = expected.agent.profile().title;
    let version = match asked {
        Asked::Version(v) => Some(*v),
        Asked::Unknown(_) => None,
    };
    let left = versions::keep_known(expected, version);
    let names: Vec<&str> = left.iter().map(|l| l.event.as_str()).collect();
    let names = names.join(", ");
    match asked {
        Asked::Version(_) if left.is_empty() => None,
        Asked::Version(v) => Some(format!(
            "{title} {v} does not know {names}: left out (after an upgrade, run \
             `cmstore hooks install` again)"
        )),
        Asked::Unknown(why) => {
            let floor = versions::floor(expected.agent).map_or(String::new(), |f| f.to_string());
            let left = if names.is_empty() {
                String::new()
            } else {
                format!(" (left out: {names})")
            };
            Some(format!(
                "{title}'s version is not known: {why}; only the events every {title} since \
                 {floor} knows{left}; pass --agent-version, or run again with it on the PATH"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::agent_settings::Wiring;

    #[test]
    fn what_is_said_of_a_fitted_install() {
        let fitted = |asked: Asked| {
            let mut expected = Agent::Claude.expected("cmstore");
            let said = fit(&mut expected, Some(&asked));
            (expected.events.len(), said)
        };
        assert_eq!(fitted(Asked::Version(Version(2, 1, 332))), (15, None));
        let (n, said) = fitted(Asked::Version(Version(2, 1, 100)));
        assert_eq!(n, 13);
        assert_eq!(
            said.as_deref(),
            Some(
                "Claude Code 2.1.100 does not know PostToolBatch, MessageDisplay: left out \
                 (after an upgrade, run `cmstore hooks install` again)"
            )
        );
        let (n, said) = fitted(Asked::Unknown(
            "`claude` could not be run: not found".into(),
        ));
        assert_eq!(n, 12);
        assert!(said.unwrap().starts_with(
            "Claude Code's version is not known: `claude` could not be run: not found; \
                 only the events every Claude Code since 2.0.56 knows (left out: Permission"
        ));
        let mut codex = Agent::Codex.expected("cmstore");
        assert_eq!(fit(&mut codex, resolve(Agent::Codex, None).as_ref()), None);
    }
}
