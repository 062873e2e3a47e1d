//! The files cmstore writes for an agent that runs no hook commands from a configuration
//! file ([`PluginFile`]): OpenCode's plugin, Cline's hook scripts. cmstore owns each file
//! whole, so installing writes them, checking compares them with what this cmstore would
//! write, and removing deletes them. Pure: the text in, the text or a verdict out.
//!
//! A line near the top of each carries the version token (`// cmstore: hooks-v3`), and the
//! capture command is in it (`const COMMAND = ["…", …]`, or a shell line), so `status` tells a
//! file of an older cmstore, or one that runs another binary, from one edited by hand.

use std::path::PathBuf;

use super::merge::State;
use super::quote;
use super::{Location, CURRENT_VERSION};
pub use crate::model::agents::{Agent, PluginFile, Registry, Runner, UserFolder};

/// The line that names the capture command, before its JSON array of words.
const COMMAND_LINE: &str = "const COMMAND = ";

/// How many lines from the top the version token may be on (after a shebang and the like).
const MARKER_LINES: usize = 3;

/// The agent's files, or `None` for an agent cmstore wires by a hook file.
pub fn of(agent: Agent) -> Option<&'static PluginFile> {
    agent.profile().plugin.as_ref()
}

/// The folder the files go in at `location`.
pub fn folder(plugin: &PluginFile, location: &Location) -> PathBuf {
    let sub = match (location, &plugin.user) {
        (Location::Project(_), _) => plugin.project,
        (Location::User { .. }, UserFolder::UnderConfig(sub)) => sub,
        (Location::User { .. }, UserFolder::Home { sub, .. }) => sub,
        (Location::User { .. }, UserFolder::UnderHome { sub, .. }) => sub,
    };
    sub.iter().fold(root(plugin, location), |p, s| p.join(s))
}

/// Each file's path at `location`, in [`PluginFile::files`]' order.
pub fn paths(plugin: &PluginFile, location: &Location) -> Vec<PathBuf> {
    let folder = folder(plugin, location);
    plugin.files.iter().map(|f| folder.join(f)).collect()
}

/// What `status` names as the place: the file, or the folder of several.
pub fn shown(plugin: &PluginFile, location: &Location) -> PathBuf {
    match plugin.files {
        [one] => folder(plugin, location).join(one),
        _ => folder(plugin, location),
    }
}

/// The folder an install may create folders under: the project, the user's configuration
/// directory (`XDG_CONFIG_HOME`, else `~/.config`), or the agent's own (`$CLINE_DIR`, else
/// `~/.cline`).
pub fn root(plugin: &PluginFile, location: &Location) -> PathBuf {
    match (location, &plugin.user) {
        (Location::Project(dir), _) => dir.clone(),
        (
            Location::User {
                home,
                xdg_config_home,
                ..
            },
            UserFolder::UnderConfig(_),
        ) => xdg_config_home
            .clone()
            .unwrap_or_else(|| home.join(".config")),
        (
            Location::User {
                home, cline_dir, ..
            },
            UserFolder::Home {
                dir_env, home_dir, ..
            },
        ) => match *dir_env {
            "CLINE_DIR" => cline_dir.clone(),
            // An agent's own variable that nothing else reads (`KIMI_CODE_HOME`).
            other => crate::support::env::path(other),
        }
        .unwrap_or_else(|| home.join(home_dir)),
        (Location::User { home, .. }, UserFolder::UnderHome { home_dir, .. }) => {
            home.join(home_dir)
        }
    }
}

/// A file's text, running `words` (the cmstore binary and any global options) as its capture
/// command.
pub fn render<S: AsRef<str>>(plugin: &PluginFile, words: &[S]) -> String {
    let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    let array = serde_json::to_string(&words).expect("strings serialize");
    let line = quote::sh_line(&words);
    // Kiro runs a hook file's command with `cmd.exe` on Windows.
    let native = match cfg!(windows) {
        true => quote::cmd_line(&words),
        false => line.clone(),
    };
    let in_json = serde_json::to_string(&native).expect("strings serialize");
    template(plugin)
        .replace("{{command}}", &array)
        .replace("{{sh_json}}", &in_json[1..in_json.len() - 1])
        .replace("{{sh}}", &line)
}

/// The files' template with the agent it hands events to filled in.
fn template(plugin: &PluginFile) -> String {
    plugin.template.replace("{{agent}}", plugin.agent)
}

/// The version token of a file's `text`: on one of its first lines after cmstore's marker,
/// or, in a hook file listing hooks (Kiro's), in a hook's `description` after it, however the
/// file is laid out.
pub fn version(plugin: &PluginFile, text: &str) -> Option<u32> {
    let token = |after: &str| after.trim().strip_prefix("hooks-v")?.parse().ok();
    if plugin.runner == Runner::Listed {
        // In the file's own `description` (Kimi Code's manifest), or a hook's (Kiro's).
        let doc: serde_json::Value = serde_json::from_str(text).ok()?;
        let hooks = doc.get("hooks")?.as_array()?;
        return std::iter::once(&doc).chain(hooks).find_map(|item| {
            token(
                item.get("description")?
                    .as_str()?
                    .strip_prefix(plugin.marker)?,
            )
        });
    }
    text.lines().take(MARKER_LINES).find_map(|line| {
        token(
            line.trim_start_matches('\u{feff}')
                .strip_prefix(plugin.marker)?,
        )
    })
}

/// The capture command's words in a plugin's `text`, if it names them on a `const COMMAND`
/// line (OpenCode's).
pub fn command(text: &str) -> Option<Vec<String>> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(COMMAND_LINE))?;
    serde_json::from_str(line.trim().trim_end_matches(';')).ok()
}

/// How one file's `text` (`None`: no file) compares with what this cmstore writes with
/// `words`, its token, and what tells so.
pub fn status<S: AsRef<str>>(
    plugin: &PluginFile,
    text: Option<&str>,
    words: &[S],
) -> (State, Option<u32>, Vec<String>) {
    let Some(text) = text else {
        return (State::Missing, None, Vec::new());
    };
    // A checkout that turned the line ends into CRLF (git's `autocrlf` on Windows) changed
    // nothing that matters.
    let text = &text.replace("\r\n", "\n");
    let Some(found) = version(plugin, text) else {
        return (
            State::ModifiedByHand,
            None,
            vec!["the file does not carry cmstore's marker line".to_string()],
        );
    };
    if *text == render(plugin, words) {
        return (State::Installed, Some(found), Vec::new());
    }
    if found < CURRENT_VERSION {
        let note = format!("written by an older cmstore (hooks-v{found})");
        return (State::Outdated, Some(found), vec![note]);
    }
    if let Some(said) = written_for(plugin, text) {
        let note = format!("runs another command ({said})");
        return (State::Outdated, Some(found), vec![note]);
    }
    (
        State::ModifiedByHand,
        Some(found),
        vec!["the file differs from what cmstore writes".to_string()],
    )
}

/// The capture command `text` runs, when `text` is this cmstore's file written for another
/// command: the template with something else where the command goes.
fn written_for(plugin: &PluginFile, text: &str) -> Option<String> {
    let template = template(plugin);
    let placeholder = ["{{command}}", "{{sh_json}}", "{{sh}}"]
        .into_iter()
        .find(|p| template.contains(p))?;
    let line = template.lines().find(|l| l.contains(placeholder))?;
    let (before, after) = line.split_once(placeholder)?;
    let said = text
        .lines()
        .find_map(|l| l.strip_prefix(before)?.strip_suffix(after))?;
    if template.replace(placeholder, said) != text {
        return None;
    }
    Some(match serde_json::from_str::<Vec<String>>(said) {
        Ok(words) => words.join(" "),
        Err(_) => said.to_string(),
    })
}

/// The state of a folder of files (`texts`, each file's text in [`PluginFile::files`]' order)
/// as a whole: missing when none exists, installed when each is, modified by hand when any
/// is (or is not cmstore's), else outdated; the tokens found, and the notes, each naming its
/// file when there are several.
pub fn status_all<S: AsRef<str>>(
    plugin: &PluginFile,
    texts: &[Option<String>],
    words: &[S],
) -> (State, Vec<u32>, Vec<String>) {
    let mut states = Vec::new();
    let (mut versions, mut notes) = (Vec::new(), Vec::new());
    for (name, text) in plugin.files.iter().zip(texts) {
        let (state, found, said) = status(plugin, text.as_deref(), words);
        versions.extend(found);
        let prefix = match plugin.files.len() {
            1 => String::new(),
            _ => format!("{name}: "),
        };
        match (state, text) {
            (State::Missing, _) => notes.push(format!("{prefix}missing")),
            _ => notes.extend(said.into_iter().map(|n| format!("{prefix}{n}"))),
        }
        states.push(state);
    }
    versions.sort_unstable();
    versions.dedup();
    let state = if states.iter().all(|s| *s == State::Missing) {
        notes.clear();
        State::Missing
    } else if states.iter().all(|s| *s == State::Installed) {
        State::Installed
    } else if states.contains(&State::ModifiedByHand) {
        State::ModifiedByHand
    } else {
        State::Outdated
    };
    (state, versions, notes)
}

/// The agent's list of plugins at `location` (the user's only), when it keeps one.
pub fn registry_path(plugin: &PluginFile, location: &Location) -> Option<PathBuf> {
    let registry = plugin.registry.as_ref()?;
    let home = match location {
        Location::Project(_) => return None,
        Location::User { .. } => root(plugin, location),
    };
    Some(registry.file.iter().fold(home, |p, s| p.join(s)))
}

/// What the agent's list says of cmstore's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// No entry of cmstore's: the agent does not load the files.
    Unlisted,
    /// An entry naming this folder: on, or turned off by the person (`enabled: false`).
    Listed {
        /// Its `enabled`.
        enabled: bool,
    },
    /// An entry naming another folder.
    Elsewhere(String),
    /// The list does not parse as one (the agent then loads no plugin at all).
    Unreadable,
}

/// The plugin entries of a list's text, `None` when it is not `{"plugins": [...]}`.
fn entries(text: &str) -> Option<(serde_json::Value, Vec<serde_json::Value>)> {
    let doc: serde_json::Value = serde_json::from_str(text).ok()?;
    let plugins = doc.get("plugins")?.as_array()?.clone();
    Some((doc, plugins))
}

/// What the list `text` (`None`: no file) says of the entry `id` for the folder `folder`.
pub fn listing(text: Option<&str>, id: &str, folder: &str) -> Listing {
    let Some(text) = text else {
        return Listing::Unlisted;
    };
    let Some((_, plugins)) = entries(text) else {
        return Listing::Unreadable;
    };
    // The agent takes the last entry of an id, and loads it only when `enabled` is true.
    match plugins.iter().rev().find(|p| p["id"] == id) {
        None => Listing::Unlisted,
        Some(entry) if entry["root"] == folder => Listing::Listed {
            enabled: entry["enabled"] == true,
        },
        Some(entry) => Listing::Elsewhere(entry["root"].as_str().unwrap_or("").to_string()),
    }
}

/// The list `text` (`None`: no file yet) with cmstore's entry `id` naming `folder`, enabled
/// unless the person turned it off, and when it was first listed kept (`now` otherwise);
/// every other entry as it was. `None` when the text is already so (nothing to write);
/// an error when the list does not parse (it is left alone).
pub fn list(
    text: Option<&str>,
    id: &str,
    folder: &str,
    now: &str,
) -> Result<Option<String>, String> {
    let (mut doc, plugins) = match text {
        None => (serde_json::json!({"version": 1, "plugins": []}), Vec::new()),
        Some(text) => entries(text).ok_or("it is not a list of plugins ({\"plugins\": [...]})")?,
    };
    if let Listing::Elsewhere(root) = listing(text, id, folder) {
        return Err(format!(
            "its entry \"{id}\" names another folder ({root}): take that entry out first"
        ));
    }
    let ours: Vec<&serde_json::Value> = plugins.iter().filter(|p| p["id"] == id).collect();
    if let [only] = ours.as_slice() {
        if only["root"] == folder && only["enabled"].is_boolean() {
            return Ok(None);
        }
    }
    let earlier = ours.last();
    // Turned off by the person stays off; an entry with no `enabled` is turned on.
    let enabled = earlier.is_none_or(|e| e["enabled"] != false);
    let since = earlier
        .and_then(|e| e["installedAt"].as_str())
        .unwrap_or(now)
        .to_string();
    let mut kept: Vec<serde_json::Value> = plugins.into_iter().filter(|p| p["id"] != id).collect();
    kept.push(
        serde_json::json!({"id": id, "root": folder, "source": "local-path",
        "enabled": enabled, "installedAt": since}),
    );
    doc["plugins"] = serde_json::Value::Array(kept);
    Ok(Some(match text {
        Some(text) => super::splice::rewrite(text, &doc),
        None => serde_json::to_string_pretty(&doc).expect("JSON serializes") + "\n",
    }))
}

/// The list `text` without cmstore's entries `id` for `folder`, every other part as it was
/// written (an entry of that id for another folder is not cmstore's here, and stays); `None`
/// when it has none (or does not parse). A list left as an install that found none starts one
/// (`{"version": 1, "plugins": []}`) is [`Unlisted::Empty`]: the file can go.
pub fn unlist(text: &str, id: &str, folder: &str) -> Option<Unlisted> {
    let (mut doc, plugins) = entries(text)?;
    let before = plugins.len();
    let kept: Vec<serde_json::Value> = plugins
        .into_iter()
        .filter(|p| !(p["id"] == id && p["root"] == folder))
        .collect();
    if kept.len() == before {
        return None;
    }
    doc["plugins"] = serde_json::Value::Array(kept);
    if doc == serde_json::json!({"version": 1, "plugins": []}) {
        return Some(Unlisted::Empty);
    }
    Some(Unlisted::Rest(super::splice::rewrite(text, &doc)))
}

/// What is left of a list of plugins without cmstore's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unlisted {
    /// The list's text without it.
    Rest(String),
    /// Nothing but an empty list.
    Empty,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmstores_entry_is_listed_once_and_taken_out_leaving_the_rest_as_written() {
        let theirs = "{\n  \"version\": 1,\n  \"plugins\": [\n    {\n      \"id\": \"other\",\n      \"root\": \"/x\",\n      \"enabled\": true\n    }\n  ]\n}\n";
        let now = "2026-12-08T00:00:00.000Z";
        let listed = list(Some(theirs), "cmstore", "/h/p/cmstore", now)
            .unwrap()
            .expect("a change");
        assert_eq!(
            listing(Some(&listed), "cmstore", "/h/p/cmstore"),
            Listing::Listed { enabled: true }
        );
        assert_eq!(
            listing(Some(&listed), "other", "/x"),
            Listing::Listed { enabled: true }
        );
        assert_eq!(
            list(Some(&listed), "cmstore", "/h/p/cmstore", now),
            Ok(None)
        );
        assert_eq!(
            unlist(&listed, "cmstore", "/h/p/cmstore"),
            Some(Unlisted::Rest(theirs.to_string()))
        );
        assert_eq!(unlist(&listed, "cmstore", "/elsewhere"), None);
        assert_eq!(unlist(theirs, "cmstore", "/h/p/cmstore"), None);
        // Turned off by the person: a new install keeps it off, and when it was first listed.
        let off = listed.replace(
            "\"enabled\": true,\n      \"installedAt\"",
            "\"enabled\": false,\n      \"installedAt\"",
        );
        assert_eq!(
            listing(Some(&off), "cmstore", "/h/p/cmstore"),
            Listing::Listed { enabled: false }
        );
        let again = list(Some(&off), "cmstore", "/h/p/cmstore", "later");
        assert_eq!(again, Ok(None), "left off");
        // An entry of the id for another folder is not taken over.
        assert!(list(Some(&off), "cmstore", "/h/q/cmstore", "later").is_err());
        // One without `enabled` is not loaded, and an install turns it on.
        let bare = off.replace("\"enabled\": false,\n      ", "");
        assert_eq!(
            listing(Some(&bare), "cmstore", "/h/p/cmstore"),
            Listing::Listed { enabled: false }
        );
        let on = list(Some(&bare), "cmstore", "/h/p/cmstore", "later")
            .unwrap()
            .unwrap();
        assert_eq!(
            listing(Some(&on), "cmstore", "/h/p/cmstore"),
            Listing::Listed { enabled: true }
        );
        assert!(on.contains(now), "{on}");
    }

    #[test]
    fn a_list_started_by_an_install_goes_with_its_entry_and_one_that_does_not_parse_is_left() {
        let started = list(None, "cmstore", "/h/p/cmstore", "t").unwrap().unwrap();
        assert_eq!(
            unlist(&started, "cmstore", "/h/p/cmstore"),
            Some(Unlisted::Empty)
        );
        assert!(list(Some("{not json"), "cmstore", "/h/p/cmstore", "t").is_err());
        assert_eq!(listing(Some("[]"), "cmstore", "/x"), Listing::Unreadable);
        assert_eq!(listing(None, "cmstore", "/x"), Listing::Unlisted);
    }

    fn opencode() -> &'static PluginFile {
        of(Agent::Opencode).unwrap()
    }

    fn cline() -> &'static PluginFile {
        of(Agent::Cline).unwrap()
    }

    #[test]
    fn the_files_run_the_words_they_are_given_and_carry_the_current_token() {
        let words = ["/opt/cmstore", "--home", "/h/x \"y\""];
        let text = render(opencode(), &words);
        assert_eq!(version(opencode(), &text), Some(CURRENT_VERSION));
        assert_eq!(command(&text).unwrap(), words);
        assert!(!text.contains("{{"), "every placeholder filled");
        assert_eq!(status(opencode(), Some(&text), &words).0, State::Installed);
        let script = render(cline(), &words);
        assert!(
            script.starts_with("#!/bin/sh\n# cmstore: hooks-v3\n"),
            "{script}"
        );
        assert!(
            script.contains("\nexec /opt/cmstore --home '/h/x \"y\"' capture --agent cline\n"),
            "{script}"
        );
        assert_eq!(version(cline(), &script), Some(CURRENT_VERSION));
        assert_eq!(status(cline(), Some(&script), &words).0, State::Installed);
    }

    #[test]
    fn a_file_of_another_binary_or_an_older_token_is_outdated_an_edit_is_by_hand() {
        let words = ["cmstore"];
        for plugin in [opencode(), cline()] {
            let other = render(plugin, &["/old/cmstore"]);
            let (state, _, notes) = status(plugin, Some(&other), &words);
            assert_eq!(state, State::Outdated);
            assert_eq!(notes, ["runs another command (/old/cmstore)"]);
            let older = render(plugin, &words).replacen(
                &format!("hooks-v{CURRENT_VERSION}"),
                "hooks-v1",
                1,
            );
            assert_eq!(status(plugin, Some(&older), &words).0, State::Outdated);
            let edited = render(plugin, &words) + "# mine\n";
            assert_eq!(
                status(plugin, Some(&edited), &words).0,
                State::ModifiedByHand
            );
            let crlf = render(plugin, &words).replace('\n', "\r\n");
            assert_eq!(status(plugin, Some(&crlf), &words).0, State::Installed);
            assert_eq!(status(plugin, None, &words).0, State::Missing);
        }
        let foreign = "export const Mine = async () => ({})\n";
        assert_eq!(
            status(opencode(), Some(foreign), &words),
            (
                State::ModifiedByHand,
                None,
                vec!["the file does not carry cmstore's marker line".to_string()]
            )
        );
    }

    #[test]
    fn a_folder_is_installed_when_each_file_is() {
        let words = ["cmstore"];
        let text = render(cline(), &words);
        let mut texts: Vec<Option<String>> =
            cline().files.iter().map(|_| Some(text.clone())).collect();
        assert_eq!(status_all(cline(), &texts, &words).0, State::Installed);
        texts[2] = None;
        let (state, versions, notes) = status_all(cline(), &texts, &words);
        assert_eq!((state, versions), (State::Outdated, vec![CURRENT_VERSION]));
        assert_eq!(notes, ["TaskCancel: missing"]);
        texts[3] = Some(text.clone() + "# mine\n");
        assert_eq!(status_all(cline(), &texts, &words).0, State::ModifiedByHand);
        let none: Vec<Option<String>> = cline().files.iter().map(|_| None).collect();
        assert_eq!(
            status_all(cline(), &none, &words),
            (State::Missing, vec![], vec![])
        );
    }

    /// Every event the row lists is one the plugin sends, and one capture gives a type; each
    /// template is pinned to its token as the hook files are (`templates_changed_without_
    /// bumping_the_token`): edit one, bump `CURRENT_VERSION`, update the hash.
    #[test]
    fn the_files_send_the_events_they_list_and_their_text_is_pinned_to_its_token() {
        let template = opencode().template;
        let reject = crate::model::wire::Payload::decode(br#"{"reply":"reject"}"#).unwrap();
        for event in opencode().events {
            assert!(template.contains(&format!("\"{event}\"")), "{event}");
            assert!(
                crate::model::wire::opencode::hook_type(event, &reject).is_some(),
                "{event}"
            );
        }
        for event in cline().events {
            assert!(
                crate::model::wire::cline::hook_type(event, &reject).is_some(),
                "{event}"
            );
        }
        let fnv = |text: &str| {
            text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
        };
        // The text written, the agent filled in: OpenCode's is what it was before Kilo shared it.
        for (plugin, hash) in [
            (opencode(), 14_774_868_767_514_898_370),
            (cline(), 12_984_748_622_243_828_019),
            (of(Agent::Kiro).unwrap(), 14_558_250_983_501_539_881),
            (of(Agent::Kimi).unwrap(), 5_381_787_464_888_774_254),
        ] {
            assert_eq!(version(plugin, plugin.template), Some(CURRENT_VERSION));
            assert_eq!(
                fnv(&super::template(plugin)),
                hash,
                "{:?} edited",
                plugin.files
            );
        }
    }

    /// Kiro's file keeps its token however it is laid out again (an editor's formatter).
    #[test]
    fn a_hook_files_token_is_read_from_its_hooks_descriptions() {
        let kiro = of(Agent::Kiro).unwrap();
        let written = render(kiro, &["/usr/bin/cmstore"]);
        assert_eq!(version(kiro, &written), Some(CURRENT_VERSION));
        let doc: serde_json::Value = serde_json::from_str(&written).unwrap();
        let pretty = serde_json::to_string_pretty(&doc).unwrap();
        assert_eq!(version(kiro, &pretty), Some(CURRENT_VERSION));
        assert_eq!(version(kiro, r#"{"version": "v1", "hooks": []}"#), None);
        assert_eq!(version(kiro, "not JSON"), None);
    }

    #[test]
    fn the_user_folders_follow_their_variables() {
        let user = |xdg: Option<&str>, cline_dir: Option<&str>| Location::User {
            home: PathBuf::from("/home/me"),
            claude_config_dir: None,
            copilot_home: None,
            codex_home: None,
            xdg_config_home: xdg.map(PathBuf::from),
            cline_dir: cline_dir.map(PathBuf::from),
        };
        assert_eq!(
            paths(opencode(), &user(None, None)),
            [PathBuf::from("/home/me/.config/opencode/plugin/cmstore.js")]
        );
        assert_eq!(
            paths(opencode(), &user(Some("/cfg"), None)),
            [PathBuf::from("/cfg/opencode/plugin/cmstore.js")]
        );
        assert_eq!(
            paths(opencode(), &Location::Project(PathBuf::from("/w"))),
            [PathBuf::from("/w/.opencode/plugin/cmstore.js")]
        );
        assert_eq!(
            shown(cline(), &user(None, None)),
            PathBuf::from("/home/me/.cline/hooks")
        );
        assert_eq!(
            shown(cline(), &user(None, Some("/c"))),
            PathBuf::from("/c/hooks")
        );
        assert_eq!(
            paths(cline(), &Location::Project(PathBuf::from("/w")))[6],
            PathBuf::from("/w/.cline/hooks/PreToolUse")
        );
    }
}
