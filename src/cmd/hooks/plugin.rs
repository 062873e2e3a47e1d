//! `cmstore hooks` for an agent wired by a plugin file cmstore owns whole (OpenCode's
//! `.opencode/plugin/cmstore.js`, [`plugin`]): install writes it, status compares it with
//! what this cmstore writes, uninstall deletes it, the doctor runs its capture command.

use std::fs;
use std::path::Path;

use anyhow::bail;

use super::{read_existing, remove_empty_folders, write_atomic, Row};
use crate::files::paths::Paths;
use crate::hook::agent_settings::merge::State;
use crate::hook::agent_settings::plugin::{self, PluginFile};
use crate::hook::agent_settings::{Agent, Location, CURRENT_VERSION};
use crate::hook::probe;

/// Writes the plugin at `location`, running `program` (the words before `capture`); replaces
/// one edited by hand only when `force`.
pub fn install(
    plugin: &PluginFile,
    location: &Location,
    program: &[String],
    force: bool,
) -> anyhow::Result<String> {
    let path = plugin::path(plugin, location);
    let shown = path.display();
    let existing = read_existing(&path)?;
    let (state, found, notes) = plugin::status(plugin, existing.as_deref(), program);
    match state {
        State::Installed => {
            return Ok(format!(
                "already installed (hooks-v{CURRENT_VERSION}) in {shown}"
            ))
        }
        State::ModifiedByHand if found.is_none() && !force => bail!(
            "{shown} is not cmstore's plugin ({}); move it away, or re-run with --force to \
             replace it",
            notes.join("; ")
        ),
        State::ModifiedByHand if !force => bail!(
            "{shown}: cmstore's plugin was changed by hand ({}); re-run with --force to \
             replace it, or uninstall first",
            notes.join("; ")
        ),
        _ => {}
    }
    write_atomic(&path, &plugin::render(plugin, program))?;
    Ok(match state {
        State::Missing => format!(
            "installed hooks-v{CURRENT_VERSION} (a plugin for {} events) into {shown}",
            plugin.events.len()
        ),
        State::Outdated => format!("updated the plugin to hooks-v{CURRENT_VERSION} in {shown}"),
        _ => format!("replaced the plugin with hooks-v{CURRENT_VERSION} in {shown}"),
    })
}

/// Deletes cmstore's plugin at `location` (a file there without cmstore's marker is left),
/// and the folders it leaves empty.
pub fn uninstall(plugin: &PluginFile, location: &Location) -> anyhow::Result<String> {
    let path = plugin::path(plugin, location);
    let shown = path.display();
    let Some(existing) = read_existing(&path)? else {
        return Ok(format!("not installed ({shown} does not exist)"));
    };
    if plugin::version(plugin, &existing).is_none() {
        return Ok(format!(
            "not installed: {shown} is not cmstore's plugin; left as it is"
        ));
    }
    fs::remove_file(&path).map_err(|e| anyhow::anyhow!("cannot remove {shown}: {e}"))?;
    let folders = remove_empty_folders(&path, &plugin::root(location));
    let folders = match folders.as_slice() {
        [] => String::new(),
        some => {
            let shown: Vec<String> = some.iter().map(|f| f.display().to_string()).collect();
            format!(", and the folders it left empty: {}", shown.join(", "))
        }
    };
    Ok(format!("removed the plugin {shown}{folders}"))
}

/// `hooks status`'s row of `agent`'s plugin at `location`.
pub fn status_row(
    agent: Agent,
    plugin: &PluginFile,
    location: &Location,
    program: &[String],
) -> Row {
    let path = plugin::path(plugin, location);
    let mut row = Row::missing(agent, location, &path);
    row.events = plugin.events.len();
    match read_existing(&path) {
        Ok(text) => {
            let (state, found, notes) = plugin::status(plugin, text.as_deref(), program);
            row.state = state.name();
            row.tokens = found.map(|v| format!("hooks-v{v}")).into_iter().collect();
            row.events_current = match state {
                State::Installed => plugin.events.len(),
                _ => 0,
            };
            row.notes = notes;
        }
        Err(err) => {
            row.state = "invalid";
            row.notes = vec![format!("{err:#}")];
        }
    }
    row
}

/// Fires the doctor's probe through the capture command the plugin at `path` names, as the
/// plugin runs it (the program itself, no shell), its line sent to a queue of its own under
/// cmstore's state directory (removed after).
pub fn probe_file(
    paths: &Paths,
    agent: Agent,
    location: &Location,
    path: &Path,
) -> Result<String, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let mut words = plugin::command(&text)
        .filter(|w| !w.is_empty())
        .ok_or("the plugin names no capture command (`const COMMAND = [...]`)")?;
    words.extend(["capture", "--agent", agent.as_str()].map(str::to_string));
    let session = format!("cmstore-doctor-{}", uuid::Uuid::new_v4());
    let cwd = match location {
        Location::Project(dir) => dir.display().to_string(),
        Location::User { home, .. } => home.display().to_string(),
    };
    let probe = probe::probe(agent, &session, &cwd, crate::support::clock::now_ms());
    let dir = paths.state_dir().join(&session);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let queue = dir.join("hook-queue.jsonl");
    let ran = probe::fire_words(&words, &probe, &queue);
    let written = fs::read_to_string(&queue).unwrap_or_default();
    let _ = fs::remove_dir_all(&dir);
    probe::verdict(&ran, &written, &probe)
}
