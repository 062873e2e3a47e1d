//! Installing, checking and removing cmstore's entries in a parsed hook configuration,
//! leaving everything else in the document as it was.
//!
//! cmstore's entries are recognized only by their marker (see [`crate::hook::agent_settings::Marker`]);
//! nothing is matched by command text, so a user's own `cmstore capture` hooks are theirs.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Map, Value};
use thiserror::Error;

use super::{versions, Agent, Expected, Shape, Wiring, CURRENT_VERSION};

/// The keys that hold command lines; an entry differing only there was installed from
/// another binary path.
const COMMAND_KEYS: [&str; 4] = ["command", "windows", "bash", "powershell"];

/// A document cmstore will not edit, because it is not shaped like a hook configuration.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShapeError {
    /// The document is not a JSON object.
    #[error("the top level is not a JSON object")]
    NotObject,
    /// `hooks` exists but is not an object.
    #[error("\"hooks\" is not a JSON object")]
    HooksNotObject,
    /// An event cmstore writes to exists but is not an array.
    #[error("\"hooks.{0}\" is not an array")]
    EventNotArray(String),
    /// A top-level key cmstore needs (Copilot's `version`) holds another value.
    #[error("\"{key}\" is {found}; cmstore writes {expected}")]
    TopKeyMismatch {
        /// The key.
        key: String,
        /// Its value in the file.
        found: String,
        /// The value cmstore needs.
        expected: String,
    },
}

/// How an agent's installation compares with what this cmstore would write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// No cmstore entry at all.
    Missing,
    /// Every event holds exactly what this cmstore writes.
    Installed,
    /// Written by an older cmstore (older token) or for another binary path: `install`
    /// updates it.
    Outdated,
    /// cmstore's entries are present at the current token but were edited, duplicated or
    /// partly removed: `install` leaves them alone unless forced.
    ModifiedByHand,
}

impl State {
    /// The name shown by `status`.
    pub fn name(self) -> &'static str {
        match self {
            State::Missing => "missing",
            State::Installed => "installed",
            State::Outdated => "outdated",
            State::ModifiedByHand => "modified-by-hand",
        }
    }
}

/// The result of [`status`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// The overall state.
    pub state: State,
    /// Token versions found on cmstore's entries.
    pub versions: BTreeSet<u32>,
    /// Events cmstore writes.
    pub events_total: usize,
    /// Events holding exactly what this cmstore writes.
    pub events_current: usize,
    /// One line per difference, for people.
    pub notes: Vec<String>,
    /// Some of the events differ only because the agent's version knows others: an event
    /// it fires is missing, or one it does not know is there.
    pub refit: bool,
}

/// Compares `doc` with `expected`.
pub fn status(doc: &Value, expected: &Expected) -> Result<Status, ShapeError> {
    let agent = expected.agent;
    let empty = Map::new();
    let obj = doc.as_object().ok_or(ShapeError::NotObject)?;
    let hooks = match obj.get("hooks") {
        None => &empty,
        Some(Value::Object(h)) => h,
        Some(_) => return Err(ShapeError::HooksNotObject),
    };
    let mut st = Status {
        state: State::Missing,
        versions: BTreeSet::new(),
        events_total: expected.events.len(),
        events_current: 0,
        notes: Vec::new(),
        refit: false,
    };
    let (mut older, mut edited, mut other_command, mut absent) = (false, false, false, 0);
    for (event, want) in &expected.events {
        let entries = match hooks.get(event) {
            None => &[][..],
            Some(Value::Array(a)) => a.as_slice(),
            Some(_) => return Err(ShapeError::EventNotArray(event.clone())),
        };
        let marked: Vec<(&Value, u32)> = entries
            .iter()
            .filter_map(|e| entry_version(e, agent).map(|v| (e, v)))
            .collect();
        let Some(&(entry, version)) = marked.first() else {
            match (expected.for_version, versions::first_version(agent, event)) {
                // Written for an older agent: an update adds it.
                (Some(version), Some(_)) => {
                    older = true;
                    st.refit = true;
                    st.notes.push(format!(
                        "{event}: not installed; {} {version} fires it",
                        agent.profile().title
                    ));
                }
                _ => {
                    absent += 1;
                    st.notes.push(format!("{event}: not installed"));
                }
            }
            continue;
        };
        st.versions.insert(version);
        if marked.len() > 1 {
            edited = true;
            st.notes
                .push(format!("{event}: {} cmstore entries", marked.len()));
        }
        if version < CURRENT_VERSION {
            older = true;
            st.notes.push(format!("{event}: hooks-v{version}"));
        } else if version > CURRENT_VERSION {
            edited = true;
            st.notes.push(format!(
                "{event}: hooks-v{version} is newer than this cmstore (hooks-v{CURRENT_VERSION})"
            ));
        } else if entry == want {
            if marked.len() == 1 {
                st.events_current += 1;
            }
        } else if with_commands_of(entry, want, agent) == *want {
            other_command = true;
            st.notes.push(match first_command(entry, agent) {
                Some(found) => format!("{event}: runs another command ({found})"),
                None => format!("{event}: runs another command"),
            });
        } else {
            edited = true;
            st.notes.push(format!("{event}: edited by hand"));
        }
    }
    for (event, entries) in hooks {
        if expected.events.iter().any(|(e, _)| e == event) {
            continue;
        }
        for version in entries
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| entry_version(e, agent))
        {
            st.versions.insert(version);
            let left_out = expected.left_out.iter().any(|l| &l.event == event);
            if left_out && expected.for_version.is_none() && version == CURRENT_VERSION {
                // The agent's version is not known: it may well fire this event.
                continue;
            }
            let unknown_to = expected.for_version.filter(|_| left_out);
            if let Some(agent_version) = unknown_to {
                older = true;
                st.refit = true;
                st.notes.push(format!(
                    "{event}: {} {agent_version} does not know this event and may ignore \
                     the whole file for it",
                    agent.profile().title
                ));
            } else if version < CURRENT_VERSION {
                older = true;
                st.notes
                    .push(format!("{event}: hooks-v{version}, no longer written"));
            } else {
                edited = true;
                st.notes.push(format!("{event}: unexpected cmstore entry"));
            }
        }
    }
    if !st.versions.is_empty() {
        for (key, want) in &expected.top {
            if obj.get(key) != Some(want) {
                edited = true;
                st.notes.push(format!("\"{key}\" is not {want}"));
            }
        }
    }
    st.state = if st.versions.is_empty() {
        State::Missing
    } else if older {
        State::Outdated
    } else if edited || absent > 0 {
        State::ModifiedByHand
    } else if other_command {
        State::Outdated
    } else {
        State::Installed
    };
    Ok(st)
}

/// Writes `expected` into `doc`: cmstore's existing entries are replaced in place, missing
/// ones appended to their event, stale ones (events no longer written) removed. Everything
/// unmarked is left as it is.
pub fn install(doc: &mut Value, expected: &Expected) -> Result<(), ShapeError> {
    let agent = expected.agent;
    let obj = doc.as_object_mut().ok_or(ShapeError::NotObject)?;
    for (i, (key, want)) in expected.top.iter().enumerate() {
        match obj.get(key) {
            None => {
                obj.shift_insert(i.min(obj.len()), key.clone(), want.clone());
            }
            Some(found) if found == want => {}
            Some(found) => {
                return Err(ShapeError::TopKeyMismatch {
                    key: key.clone(),
                    found: found.to_string(),
                    expected: want.to_string(),
                })
            }
        }
    }
    let Value::Object(hooks) = obj
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
    else {
        return Err(ShapeError::HooksNotObject);
    };
    for (event, _) in &expected.events {
        if hooks.get(event).is_some_and(|v| !v.is_array()) {
            return Err(ShapeError::EventNotArray(event.clone()));
        }
    }
    let stale: Vec<String> = hooks
        .keys()
        .filter(|k| !expected.events.iter().any(|(e, _)| e == *k))
        .cloned()
        .collect();
    for event in stale {
        remove_marked_from_event(hooks, &event, agent);
    }
    for (event, want) in &expected.events {
        let Value::Array(entries) = hooks
            .entry(event.clone())
            .or_insert_with(|| Value::Array(Vec::new()))
        else {
            unreachable!("checked above");
        };
        let marked: Vec<usize> = (0..entries.len())
            .filter(|&i| entry_version(&entries[i], agent).is_some())
            .collect();
        let Some((&first, rest)) = marked.split_first() else {
            entries.push(want.clone());
            continue;
        };
        for &i in rest.iter().rev() {
            remove_marked_from_entry(entries, i, agent);
        }
        replace_entry(&mut entries[first], want, agent);
    }
    Ok(())
}

/// Removes every cmstore entry from `doc`, with the event arrays (and the `hooks` object)
/// that removal leaves empty. Returns how many handlers were removed.
pub fn uninstall(doc: &mut Value, agent: Agent) -> Result<usize, ShapeError> {
    let obj = doc.as_object_mut().ok_or(ShapeError::NotObject)?;
    let hooks = match obj.get_mut("hooks") {
        None => return Ok(0),
        Some(Value::Object(h)) => h,
        Some(_) => return Err(ShapeError::HooksNotObject),
    };
    let events: Vec<String> = hooks.keys().cloned().collect();
    let removed: usize = events
        .iter()
        .map(|e| remove_marked_from_event(hooks, e, agent))
        .sum();
    if removed > 0 && hooks.is_empty() {
        obj.shift_remove("hooks");
    }
    Ok(removed)
}

/// True when `doc` holds nothing but what cmstore itself adds at the top level, so a file
/// cmstore owns can be deleted.
pub fn is_empty(doc: &Value, expected: &Expected) -> bool {
    doc.as_object().is_some_and(|obj| {
        obj.iter()
            .all(|(k, v)| expected.top.get(k) == Some(v) && expected.agent.owns_file())
    })
}

/// The token version of a cmstore entry (a marked handler, or a group holding one).
fn entry_version(entry: &Value, agent: Agent) -> Option<u32> {
    let marker = agent.marker();
    match agent.shape() {
        Shape::Flat => marker.version(entry),
        Shape::Grouped => entry
            .get("hooks")?
            .as_array()?
            .iter()
            .find_map(|h| marker.version(h)),
    }
}

/// Copies into `doc` the hooks `from` (another configuration: Droid's `settings.json`) holds for
/// each event cmstore writes that `doc` has none of; returns those events. Droid runs one list
/// per event, `hooks.json`'s first: without the copy, adding cmstore's entry to `hooks.json`
/// would silence the user's hooks of that event in `settings.json`.
pub fn carry_events(doc: &mut Value, from: Option<&Value>, expected: &Expected) -> Vec<String> {
    let Some(theirs) = from.and_then(|f| f.get("hooks")).and_then(Value::as_object) else {
        return Vec::new();
    };
    let hooks = doc
        .as_object_mut()
        .map(|top| {
            top.entry("hooks")
                .or_insert_with(|| Value::Object(Map::new()))
        })
        .and_then(Value::as_object_mut);
    let Some(hooks) = hooks else {
        return Vec::new();
    };
    let non_empty = |v: Option<&Value>| v.and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    let mut carried = Vec::new();
    for (event, _) in &expected.events {
        if non_empty(theirs.get(event)) && !non_empty(hooks.get(event)) {
            hooks.insert(event.clone(), theirs[event].clone());
            carried.push(event.clone());
        }
    }
    carried
}

/// The events of `doc` with a handler whose command line ends with `tail` but carries no
/// marker of `agent`'s: cmstore's own, once an editor dropped the marker (Droid's `/hooks`).
pub fn unmarked_commands(doc: &Value, agent: Agent, tail: &str) -> Vec<String> {
    let Some(events) = doc.get("hooks").and_then(Value::as_object) else {
        return Vec::new();
    };
    let marker = agent.marker();
    let runs_it = |h: &Value| {
        marker.version(h).is_none()
            && h.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| c.trim_end().ends_with(tail))
    };
    events
        .iter()
        .filter(|(_, entries)| {
            entries
                .as_array()
                .into_iter()
                .flatten()
                .any(|entry| match agent.shape() {
                    Shape::Flat => runs_it(entry),
                    Shape::Grouped => entry
                        .get("hooks")
                        .and_then(Value::as_array)
                        .is_some_and(|hs| hs.iter().any(runs_it)),
                })
        })
        .map(|(event, _)| event.clone())
        .collect()
}

/// cmstore's handler for `event` in `doc` (the one carrying its marker), if installed.
pub fn installed_handler<'a>(doc: &'a Value, agent: Agent, event: &str) -> Option<&'a Value> {
    let entries = doc.get("hooks")?.get(event)?.as_array()?;
    let marker = agent.marker();
    entries.iter().find_map(|entry| match agent.shape() {
        Shape::Flat => marker.version(entry).map(|_| entry),
        Shape::Grouped => entry
            .get("hooks")?
            .as_array()?
            .iter()
            .find(|h| marker.version(h).is_some()),
    })
}

/// The first command line of cmstore's handler in `entry`, to show what it runs.
fn first_command(entry: &Value, agent: Agent) -> Option<&str> {
    let handler = match agent.shape() {
        Shape::Flat => entry,
        Shape::Grouped => entry
            .get("hooks")?
            .as_array()?
            .iter()
            .find(|h| agent.marker().version(h).is_some())?,
    };
    COMMAND_KEYS
        .iter()
        .find_map(|k| handler.get(*k).and_then(Value::as_str))
}

/// `entry` with its command lines taken from `want`, to tell a path change from an edit.
fn with_commands_of(entry: &Value, want: &Value, agent: Agent) -> Value {
    let mut entry = entry.clone();
    let (handler, want_handler) = match agent.shape() {
        Shape::Flat => (Some(&mut entry), Some(want)),
        Shape::Grouped => {
            let marker = agent.marker();
            let handler = entry
                .get_mut("hooks")
                .and_then(Value::as_array_mut)
                .and_then(|hs| hs.iter_mut().find(|h| marker.version(h).is_some()));
            (handler, want.get("hooks").and_then(|h| h.get(0)))
        }
    };
    if let (Some(Value::Object(h)), Some(Value::Object(w))) = (handler, want_handler) {
        for key in COMMAND_KEYS {
            if let (Some(slot), Some(value)) = (h.get_mut(key), w.get(key)) {
                *slot = value.clone();
            }
        }
    }
    entry
}

/// Puts `want` where the cmstore entry `entry` is. A Claude group that also holds the
/// user's handlers keeps them: only cmstore's handler in it is replaced.
fn replace_entry(entry: &mut Value, want: &Value, agent: Agent) {
    let marker = agent.marker();
    let shared_group = agent.shape() == Shape::Grouped
        && entry["hooks"]
            .as_array()
            .is_some_and(|hs| hs.iter().any(|h| marker.version(h).is_none()));
    if !shared_group {
        *entry = want.clone();
        return;
    }
    let Some(handlers) = entry.get_mut("hooks").and_then(Value::as_array_mut) else {
        return;
    };
    let mut replaced = false;
    handlers.retain_mut(|h| {
        if marker.version(h).is_none() {
            return true;
        }
        if replaced {
            return false;
        }
        replaced = true;
        *h = want["hooks"][0].clone();
        true
    });
}

/// Removes cmstore's handlers from `hooks[event]`, and the array if that empties it.
fn remove_marked_from_event(hooks: &mut Map<String, Value>, event: &str, agent: Agent) -> usize {
    let Some(Value::Array(entries)) = hooks.get_mut(event) else {
        return 0;
    };
    let mut removed = 0;
    for i in (0..entries.len()).rev() {
        removed += remove_marked_from_entry(entries, i, agent);
    }
    if removed > 0 && entries.is_empty() {
        hooks.shift_remove(event);
    }
    removed
}

/// Removes cmstore's handlers from `entries[i]`: the entry itself when it is a handler or a
/// group left empty, else only the handlers inside the group.
fn remove_marked_from_entry(entries: &mut Vec<Value>, i: usize, agent: Agent) -> usize {
    let marker = agent.marker();
    match agent.shape() {
        Shape::Flat => {
            if marker.version(&entries[i]).is_some() {
                entries.remove(i);
                1
            } else {
                0
            }
        }
        Shape::Grouped => {
            let Some(handlers) = entries[i].get_mut("hooks").and_then(Value::as_array_mut) else {
                return 0;
            };
            let before = handlers.len();
            handlers.retain(|h| marker.version(h).is_none());
            let removed = before - handlers.len();
            if removed > 0 && handlers.is_empty() {
                entries.remove(i);
            }
            removed
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn expected(agent: Agent) -> Expected {
        agent.expected("/bin/cmstore")
    }

    fn installed(agent: Agent, mut doc: Value) -> Value {
        install(&mut doc, &expected(agent)).unwrap();
        doc
    }

    #[test]
    fn empty_document_gets_every_event() {
        for agent in Agent::with_hook_files() {
            let e = expected(agent);
            let doc = installed(agent, json!({}));
            let st = status(&doc, &e).unwrap();
            assert_eq!(st.state, State::Installed, "{agent:?} {:?}", st.notes);
            assert_eq!(st.events_current, e.events.len());
            assert_eq!(doc["hooks"].as_object().unwrap().len(), e.events.len());
        }
        assert_eq!(installed(Agent::Copilot, json!({}))["version"], 1);
    }

    #[test]
    fn missing_when_nothing_is_marked() {
        let doc = json!({"hooks": {"Stop": [{"hooks": [{"type": "command",
            "command": "/bin/cmstore capture --agent claude"}]}]}});
        let st = status(&doc, &expected(Agent::Claude)).unwrap();
        assert_eq!(st.state, State::Missing);
    }

    #[test]
    fn user_entries_and_keys_keep_their_place() {
        let before = json!({
            "model": "x",
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
                "Custom": [{"hooks": []}]
            },
            "z": 1
        });
        let doc = installed(Agent::Claude, before.clone());
        let keys: Vec<&String> = doc.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["model", "hooks", "z"]);
        let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(events[..2], ["Stop", "Custom"]);
        assert_eq!(doc["hooks"]["Stop"][0], before["hooks"]["Stop"][0]);
        assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
        let mut doc = doc;
        assert_eq!(uninstall(&mut doc, Agent::Claude).unwrap(), 15);
        assert_eq!(doc, before);
    }

    #[test]
    fn install_twice_is_a_no_op() {
        for agent in Agent::with_hook_files() {
            let once = installed(agent, json!({"hooks": {}}));
            assert_eq!(installed(agent, once.clone()), once, "{agent:?}");
        }
    }

    #[test]
    fn older_token_is_outdated_and_install_updates_in_place() {
        for agent in Agent::with_hook_files() {
            let e = expected(agent);
            let mut doc = installed(agent, json!({}));
            let text = doc.to_string().replace("hooks-v3", "hooks-v0");
            doc = serde_json::from_str(&text).unwrap();
            let st = status(&doc, &e).unwrap();
            assert_eq!(st.state, State::Outdated, "{agent:?}");
            assert_eq!(st.versions, BTreeSet::from([0]));
            install(&mut doc, &e).unwrap();
            assert_eq!(doc, installed(agent, json!({})), "{agent:?}");
        }
    }

    #[test]
    fn another_binary_is_outdated() {
        for agent in Agent::with_hook_files() {
            let doc = installed(agent, json!({}));
            let st = status(&doc, &agent.expected("/other/cmstore")).unwrap();
            assert_eq!(st.state, State::Outdated, "{agent:?}");
        }
    }

    #[test]
    fn hand_edits_are_detected() {
        let e = expected(Agent::Copilot);
        let mut doc = installed(Agent::Copilot, json!({}));
        doc["hooks"]["preToolUse"][0]["timeoutSec"] = json!(99);
        let st = status(&doc, &e).unwrap();
        assert_eq!(st.state, State::ModifiedByHand);
        assert_eq!(st.notes, ["preToolUse: edited by hand"]);

        let mut doc = installed(Agent::Claude, json!({}));
        doc["hooks"].as_object_mut().unwrap().shift_remove("Stop");
        let st = status(&doc, &expected(Agent::Claude)).unwrap();
        assert_eq!(st.state, State::ModifiedByHand);
        assert_eq!(st.notes, ["Stop: not installed"]);
    }

    #[test]
    fn newer_token_is_not_downgraded_silently() {
        let mut doc = installed(Agent::Vscode, json!({}));
        doc["hooks"]["Stop"][0]["cmstore"] = json!("hooks-v9");
        let st = status(&doc, &expected(Agent::Vscode)).unwrap();
        assert_eq!(st.state, State::ModifiedByHand);
    }

    #[test]
    fn user_handler_inside_our_group_survives() {
        let e = expected(Agent::Claude);
        let mut doc = installed(Agent::Claude, json!({}));
        doc["hooks"]["Stop"][0]["hooks"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "command", "command": "mine"}));
        let text = doc.to_string().replace("hooks-v3", "hooks-v0");
        let mut doc: Value = serde_json::from_str(&text).unwrap();
        install(&mut doc, &e).unwrap();
        let stop = doc["hooks"]["Stop"][0]["hooks"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[1]["command"], "mine");
        uninstall(&mut doc, Agent::Claude).unwrap();
        assert_eq!(
            doc,
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}})
        );
    }

    #[test]
    fn stale_events_are_dropped_on_update() {
        let mut doc = installed(Agent::Copilot, json!({}));
        doc["hooks"]["oldEvent"] = json!([{"bash": "x", "comment": "cmstore hooks-v0"}]);
        assert_eq!(
            status(&doc, &expected(Agent::Copilot)).unwrap().state,
            State::Outdated
        );
        install(&mut doc, &expected(Agent::Copilot)).unwrap();
        assert!(doc["hooks"].get("oldEvent").is_none());
    }

    #[test]
    fn uninstall_leaves_owned_file_empty() {
        for agent in Agent::with_hook_files() {
            let e = expected(agent);
            let mut doc = installed(agent, json!({}));
            uninstall(&mut doc, agent).unwrap();
            assert!(
                is_empty(&doc, &e) || agent == Agent::Claude,
                "{agent:?} {doc}"
            );
            assert!(!is_empty(&json!({"other": 1}), &e));
        }
        let mut doc = installed(Agent::Claude, json!({}));
        uninstall(&mut doc, Agent::Claude).unwrap();
        assert_eq!(doc, json!({}));
    }

    #[test]
    fn shapes_that_are_not_hook_configs_are_refused() {
        let e = expected(Agent::Claude);
        assert_eq!(install(&mut json!([]), &e), Err(ShapeError::NotObject));
        assert_eq!(
            install(&mut json!({"hooks": []}), &e),
            Err(ShapeError::HooksNotObject)
        );
        assert_eq!(
            install(&mut json!({"hooks": {"Stop": {}}}), &e),
            Err(ShapeError::EventNotArray("Stop".into()))
        );
        let c = expected(Agent::Copilot);
        assert!(matches!(
            install(&mut json!({"version": 2}), &c),
            Err(ShapeError::TopKeyMismatch { .. })
        ));
    }
}
