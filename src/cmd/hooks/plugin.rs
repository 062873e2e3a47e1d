//! `cmstore hooks` for an agent wired by files cmstore owns whole ([`plugin`]): OpenCode's
//! plugin (`.opencode/plugin/cmstore.js`), Cline's hook scripts (`.cline/hooks/<Event>`),
//! Kiro's hook file (`.kiro/hooks/cmstore.json`), Kimi Code's plugin
//! (`~/.kimi-code/plugins/cmstore/kimi.plugin.json`, with its entry in the agent's list of
//! plugins, `plugins/installed.json`).
//! Install writes them, status compares them with what this cmstore writes, uninstall deletes
//! them, the doctor runs one as the agent does.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::bail;

use super::{read_existing, remove_empty_folders, write_atomic, Row};
use crate::files::paths::Paths;
use crate::hook::agent_settings::merge::State;
use crate::hook::agent_settings::plugin::{self, PluginFile, Runner};
use crate::hook::agent_settings::{Agent, Location, CURRENT_VERSION};
use crate::hook::probe;

/// Each file's path and text (`None`: missing) at `location`.
fn read_all(
    plugin: &PluginFile,
    location: &Location,
) -> anyhow::Result<Vec<(PathBuf, Option<String>)>> {
    plugin::paths(plugin, location)
        .into_iter()
        .map(|path| Ok((path.clone(), read_existing(&path)?)))
        .collect()
}

/// What the files are, in words: `a plugin`, `a hook file`, `10 hook scripts`, after
/// `article`.
fn what(plugin: &PluginFile, article: &str) -> String {
    match (plugin.files.len(), plugin.runner) {
        (1, Runner::Listed) if plugin.registry.is_none() => format!("{article} hook file"),
        (1, _) => format!("{article} plugin"),
        (n, _) => format!("{n} hook scripts"),
    }
}

/// Whether the agent reads the files at `location`: everywhere, but for an agent that reads
/// them from the user's folder only (Kimi Code) not in a project.
pub fn serves(plugin: &PluginFile, location: &Location) -> bool {
    !(plugin.user_only() && matches!(location, Location::Project(_)))
}

/// The agent's title, for messages.
fn title(plugin: &PluginFile) -> &'static str {
    Agent::from_name(plugin.agent).map_or(plugin.agent, |a| a.profile().title)
}

/// Lists cmstore's folder in the agent's list of plugins at `location`, when it keeps one;
/// what was done, to say.
fn list(plugin: &PluginFile, location: &Location) -> anyhow::Result<Option<String>> {
    let (Some(registry), Some(path)) = (&plugin.registry, plugin::registry_path(plugin, location))
    else {
        return Ok(None);
    };
    let folder = plugin::folder(plugin, location).display().to_string();
    let text = read_existing(&path)?;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    match plugin::list(text.as_deref(), registry.id, &folder, &now) {
        Ok(Some(listed)) => {
            write_atomic(&path, &listed)?;
            Ok(Some(format!("listed it in {}", path.display())))
        }
        Ok(None) => Ok(None),
        Err(why) => bail!(
            "{}: {why}; {} loads no plugin while it does not parse: mend it, then install \
             again",
            path.display(),
            title(plugin)
        ),
    }
}

/// Takes cmstore's entry out of the agent's list of plugins at `location`; what was done.
fn unlist(plugin: &PluginFile, location: &Location) -> anyhow::Result<Option<String>> {
    let (Some(registry), Some(path)) = (&plugin.registry, plugin::registry_path(plugin, location))
    else {
        return Ok(None);
    };
    let Some(text) = read_existing(&path)? else {
        return Ok(None);
    };
    let folder = plugin::folder(plugin, location).display().to_string();
    if plugin::listing(Some(&text), registry.id, &folder) == plugin::Listing::Unreadable {
        return Ok(Some(format!(
            "left {} as it is: it does not parse (take cmstore's entry out by hand if it has \
             one)",
            path.display()
        )));
    }
    match plugin::unlist(&text, registry.id, &folder) {
        Some(plugin::Unlisted::Rest(rest)) => {
            write_atomic(&path, &rest)?;
            Ok(Some(format!("removed its entry in {}", path.display())))
        }
        Some(plugin::Unlisted::Empty) => {
            fs::remove_file(&path)
                .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
            let left = remove_empty_folders(&path, &plugin::root(plugin, location));
            let folders: Vec<String> = left.iter().map(|f| f.display().to_string()).collect();
            Ok(Some(match folders.as_slice() {
                [] => format!("removed {}, which held nothing else", path.display()),
                some => format!(
                    "removed {}, which held nothing else, and {}",
                    path.display(),
                    some.join(", ")
                ),
            }))
        }
        None => Ok(None),
    }
}

/// Writes the files at `location`, running `program` (the words before `capture`), and lists
/// them where the agent needs it; replaces ones edited by hand only when `force`, and never a
/// file at one of their paths that is not cmstore's.
pub fn install(
    plugin: &PluginFile,
    location: &Location,
    program: &[String],
    force: bool,
) -> anyhow::Result<String> {
    if !serves(plugin, location) {
        bail!(
            "{} reads its plugins from the user's folder only: install with --user",
            title(plugin)
        );
    }
    let written = write_files(plugin, location, program, force)?;
    Ok(match list(plugin, location)? {
        Some(listed) => format!("{written}; {listed}"),
        None => written,
    })
}

/// [`install`]'s files.
fn write_files(
    plugin: &PluginFile,
    location: &Location,
    program: &[String],
    force: bool,
) -> anyhow::Result<String> {
    let shown = plugin::shown(plugin, location);
    let shown = shown.display();
    let files = read_all(plugin, location)?;
    let texts: Vec<Option<String>> = files.iter().map(|(_, t)| t.clone()).collect();
    let (state, _, notes) = plugin::status_all(plugin, &texts, program);
    let foreign: Vec<String> = files
        .iter()
        .filter(|(_, text)| {
            text.as_deref()
                .is_some_and(|t| plugin::version(plugin, t).is_none())
        })
        .map(|(path, _)| path.display().to_string())
        .collect();
    match state {
        State::Installed => {
            return Ok(format!(
                "already installed (hooks-v{CURRENT_VERSION}) in {shown}"
            ))
        }
        _ if !foreign.is_empty() && !force => bail!(
            "{} {} not cmstore's; move {} away, or re-run with --force to replace {}",
            foreign.join(", "),
            if foreign.len() == 1 { "is" } else { "are" },
            if foreign.len() == 1 { "it" } else { "them" },
            if foreign.len() == 1 { "it" } else { "them" },
        ),
        State::ModifiedByHand if !force => bail!(
            "{shown}: cmstore's files were changed by hand ({}); re-run with --force to \
             replace them, or uninstall first",
            notes.join("; ")
        ),
        _ => {}
    }
    let text = plugin::render(plugin, program);
    for (path, existing) in &files {
        if existing.as_deref() != Some(text.as_str()) {
            write_atomic(path, &text)?;
        }
    }
    let events = plugin.events.len();
    Ok(match state {
        State::Missing => format!(
            "installed hooks-v{CURRENT_VERSION} ({} for {events} events) into {shown}",
            what(plugin, "a")
        ),
        State::Outdated => format!(
            "updated {} to hooks-v{CURRENT_VERSION} in {shown}",
            what(plugin, "the")
        ),
        _ => format!(
            "replaced {} with hooks-v{CURRENT_VERSION} in {shown}",
            what(plugin, "the")
        ),
    })
}

/// Deletes cmstore's files at `location` as this or an older cmstore wrote them, and the
/// folders they leave empty. A file at one of their paths that is not cmstore's, or that was
/// changed by hand, is left, and said.
pub fn uninstall(
    plugin: &PluginFile,
    location: &Location,
    program: &[String],
) -> anyhow::Result<String> {
    if !serves(plugin, location) {
        return Ok(format!(
            "not installed ({} reads plugins from the user's folder only)",
            title(plugin)
        ));
    }
    let removed = remove_files(plugin, location, program)?;
    Ok(match unlist(plugin, location)? {
        Some(entry) => format!("{removed}; {entry}"),
        None => removed,
    })
}

/// [`uninstall`]'s files.
fn remove_files(
    plugin: &PluginFile,
    location: &Location,
    program: &[String],
) -> anyhow::Result<String> {
    let shown = plugin::shown(plugin, location);
    let shown = shown.display();
    let files = read_all(plugin, location)?;
    let (mut removed, mut kept) = (Vec::new(), Vec::new());
    for (path, text) in &files {
        let Some(text) = text.as_deref() else {
            continue;
        };
        match plugin::status(plugin, Some(text), program) {
            (State::Installed | State::Outdated, _, _) => {
                fs::remove_file(path)
                    .map_err(|e| anyhow::anyhow!("cannot remove {}: {e}", path.display()))?;
                removed.push(path);
            }
            (_, None, _) => kept.push(format!("{} (not cmstore's)", path.display())),
            _ => kept.push(format!(
                "{} (changed by hand: remove it yourself)",
                path.display()
            )),
        }
    }
    let left = match kept.as_slice() {
        [] => String::new(),
        some => format!(
            "; left as {}: {}",
            if some.len() == 1 { "it is" } else { "they are" },
            some.join(", ")
        ),
    };
    let Some(last) = removed.last() else {
        return Ok(match kept.is_empty() {
            true => format!("not installed in {shown}"),
            false => format!("not installed{left}"),
        });
    };
    let folders = remove_empty_folders(last, &plugin::root(plugin, location));
    let folders = match folders.as_slice() {
        [] => String::new(),
        some => {
            let shown: Vec<String> = some.iter().map(|f| f.display().to_string()).collect();
            format!(", and the folders they left empty: {}", shown.join(", "))
        }
    };
    let whole = match plugin.files.len() {
        1 => format!("removed {} {shown}", what(plugin, "the")),
        _ => format!("removed {} hook scripts from {shown}", removed.len()),
    };
    Ok(format!("{whole}{folders}{left}"))
}

/// When `agent` runs the files of the user's folder (`user`) and of a project's (`location`)
/// alike, as Cline does with its hooks folders (OpenCode loads cmstore's plugin once however
/// many copies it finds): every event would be captured twice. What to say then.
pub fn twice(
    agent: Agent,
    plugin: &PluginFile,
    location: &Location,
    user: Option<Location>,
) -> Option<String> {
    let (Location::Project(_), Some(user)) = (location, user) else {
        return None;
    };
    if plugin.runner == Runner::Command {
        return None;
    }
    let (mine, theirs) = (
        plugin::folder(plugin, location),
        plugin::folder(plugin, &user),
    );
    let any = |l: &Location| plugin::paths(plugin, l).iter().any(|p| p.exists());
    (mine != theirs && any(location) && any(&user)).then(|| {
        format!(
            "{0}: {1} runs the hooks of {2} and of {3} alike: every event is captured twice; \
             keep one (`cmstore hooks uninstall --agent {0} --user`, or without --user in the \
             project)",
            agent.as_str(),
            agent.profile().title,
            theirs.display(),
            mine.display()
        )
    })
}

/// `hooks status`'s row of `agent`'s files at `location`.
pub fn status_row(
    agent: Agent,
    plugin: &PluginFile,
    location: &Location,
    program: &[String],
) -> Row {
    let mut row = Row::missing(agent, location, &plugin::shown(plugin, location));
    row.events = plugin.events.len();
    match read_all(plugin, location) {
        Ok(files) => {
            let texts: Vec<Option<String>> = files.into_iter().map(|(_, t)| t).collect();
            let (state, versions, notes) = plugin::status_all(plugin, &texts, program);
            row.state = state.name();
            row.tokens = versions.iter().map(|v| format!("hooks-v{v}")).collect();
            row.events_current = match state {
                State::Installed => plugin.events.len(),
                _ => 0,
            };
            row.notes = notes;
            if state != State::Missing {
                check_listing(plugin, location, &mut row);
            }
        }
        Err(err) => {
            row.state = "invalid";
            row.notes = vec![format!("{err:#}")];
        }
    }
    row
}

/// What the agent's list of plugins says of cmstore's files, on `row`: not listed (or listed
/// for another folder), they do not load, and an install mends it; turned off, or a list that
/// does not parse, they will not fire.
fn check_listing(plugin: &PluginFile, location: &Location, row: &mut Row) {
    let (Some(registry), Some(path)) = (&plugin.registry, plugin::registry_path(plugin, location))
    else {
        return;
    };
    let folder = plugin::folder(plugin, location).display().to_string();
    let text = match read_existing(&path) {
        Ok(text) => text,
        Err(err) => return row.may_not_fire.push(format!("{err:#}")),
    };
    let name = title(plugin);
    match plugin::listing(text.as_deref(), registry.id, &folder) {
        plugin::Listing::Listed { enabled: true } => {}
        plugin::Listing::Listed { enabled: false } => row.may_not_fire.push(format!(
            "turned off in {name} ({}: `enabled: false`; `/plugins enable {}` turns it on)",
            path.display(),
            registry.id
        )),
        plugin::Listing::Unreadable => row.may_not_fire.push(format!(
            "{} does not parse: {name} loads no plugin",
            path.display()
        )),
        plugin::Listing::Unlisted | plugin::Listing::Elsewhere(_) => {
            row.state = State::Outdated.name();
            row.events_current = 0;
            row.notes.push(format!(
                "{} does not list this folder: {name} does not load it (install again)",
                path.display()
            ));
        }
    }
}

/// Fires the doctor's probe through the agent's first file at `location`, as the agent runs
/// it: the command a plugin's `const COMMAND` line names (the program itself, no shell), or
/// the script through `sh`; its line sent to a queue of its own under cmstore's state
/// directory (removed after).
pub fn probe_file(
    paths: &Paths,
    agent: Agent,
    plugin: &PluginFile,
    location: &Location,
) -> Result<String, String> {
    let path = plugin::paths(plugin, location)
        .into_iter()
        .find(|p| p.exists())
        .ok_or("none of the files exists")?;
    let run = how_to_run(agent, plugin, &path)?;
    let session = format!("cmstore-doctor-{}", uuid::Uuid::new_v4());
    let cwd = match location {
        Location::Project(dir) => dir.display().to_string(),
        Location::User { home, .. } => home.display().to_string(),
    };
    let probe = probe::probe(agent, &session, &cwd, crate::support::clock::now_ms());
    let dir = paths.state_dir().join(&session);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let queue = dir.join("hook-queue.jsonl");
    let ran = match &run {
        Run::Words(words) => probe::fire_words(words, &probe, &queue),
        Run::Line(line) => probe::fire(probe::Shell::system(), line, &probe, &queue),
    };
    let written = fs::read_to_string(&queue).unwrap_or_default();
    let _ = fs::remove_dir_all(&dir);
    probe::verdict(&ran, &written, &probe)
}

/// How the doctor runs a file as its agent does.
enum Run {
    /// The program and its arguments, no shell.
    Words(Vec<String>),
    /// A command line for the system's shell.
    Line(String),
}

/// How to run the file at `path` as `agent` runs it: the command a plugin's `const COMMAND`
/// line names, a script through `sh`, or a hook file's first command line.
fn how_to_run(agent: Agent, plugin: &PluginFile, path: &Path) -> Result<Run, String> {
    let read = || fs::read_to_string(path).map_err(|e| format!("cannot read the file: {e}"));
    match plugin.runner {
        Runner::Command => {
            let mut words = plugin::command(&read()?)
                .filter(|w| !w.is_empty())
                .ok_or("the plugin names no capture command (`const COMMAND = [...]`)")?;
            words.extend(["capture", "--agent", agent.as_str()].map(str::to_string));
            Ok(Run::Words(words))
        }
        Runner::Shell => Ok(Run::Words(vec![
            "sh".to_string(),
            path.display().to_string(),
        ])),
        Runner::Listed => listed_command(&read()?)
            .map(Run::Line)
            .ok_or_else(|| "the file lists no hook with a command (`hooks[].command`)".into()),
    }
}

/// The first hook's command line in a hook file that lists them (Kiro's
/// `{"hooks": [{"action": {"command": …}}]}`, Kimi Code's `{"hooks": [{"command": …}]}`).
fn listed_command(text: &str) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_str(text).ok()?;
    doc.get("hooks")?
        .as_array()?
        .iter()
        .find_map(|hook| {
            hook.pointer("/action/command")
                .or_else(|| hook.get("command"))?
                .as_str()
        })
        .map(str::to_string)
}
