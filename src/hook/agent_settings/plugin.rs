//! The plugin file cmstore writes for an agent that loads code instead of running hook
//! commands (OpenCode, [`PluginFile`]): cmstore owns the file whole, so installing writes it,
//! checking compares it with what this cmstore would write, and removing deletes it. Pure: the
//! text in, the text or a verdict out.
//!
//! The file's first line carries the version token (`// cmstore: hooks-v3`) and a line of its
//! own the capture command (`const COMMAND = ["…", …]`), so `status` tells a file of an older
//! cmstore, or one that runs another binary, from one edited by hand.

use std::path::PathBuf;

use super::merge::State;
use super::{Location, CURRENT_VERSION};
pub use crate::model::agents::{Agent, PluginFile};

/// The line that names the capture command, before its JSON array of words.
const COMMAND_LINE: &str = "const COMMAND = ";

/// The agent's plugin, or `None` for an agent cmstore wires by a hook file.
pub fn of(agent: Agent) -> Option<&'static PluginFile> {
    agent.profile().plugin.as_ref()
}

/// Where the plugin goes at `location`: under the project, or under the user's configuration
/// directory (`XDG_CONFIG_HOME`, else `~/.config`).
pub fn path(plugin: &PluginFile, location: &Location) -> PathBuf {
    let (root, segments) = match location {
        Location::Project(dir) => (dir.clone(), plugin.project),
        Location::User { .. } => (root(location), plugin.user),
    };
    segments.iter().fold(root, |p, s| p.join(s))
}

/// The folder an install may create folders under: the project, or the user's configuration
/// directory.
pub fn root(location: &Location) -> PathBuf {
    match location {
        Location::Project(dir) => dir.clone(),
        Location::User {
            home,
            xdg_config_home,
            ..
        } => xdg_config_home
            .clone()
            .unwrap_or_else(|| home.join(".config")),
    }
}

/// The plugin's text, running `words` (the cmstore binary and any global options) as its
/// capture command.
pub fn render<S: AsRef<str>>(plugin: &PluginFile, words: &[S]) -> String {
    let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
    let array = serde_json::to_string(&words).expect("strings serialize");
    plugin.template.replace("{{command}}", &array)
}

/// The version token of a plugin's `text`, if its first line carries cmstore's marker.
pub fn version(plugin: &PluginFile, text: &str) -> Option<u32> {
    text.lines()
        .next()?
        .trim_start_matches('\u{feff}')
        .strip_prefix(plugin.marker)?
        .trim()
        .strip_prefix("hooks-v")?
        .parse()
        .ok()
}

/// The capture command's words in a plugin's `text`, if it names one.
pub fn command(text: &str) -> Option<Vec<String>> {
    let line = text
        .lines()
        .find_map(|l| l.trim().strip_prefix(COMMAND_LINE))?;
    serde_json::from_str(line.trim().trim_end_matches(';')).ok()
}

/// How the plugin file's `text` (`None`: no file) compares with what this cmstore writes with
/// `words`, and what tells so.
pub fn status<S: AsRef<str>>(
    plugin: &PluginFile,
    text: Option<&str>,
    words: &[S],
) -> (State, Option<u32>, Vec<String>) {
    let Some(text) = text else {
        return (State::Missing, None, Vec::new());
    };
    let Some(found) = version(plugin, text) else {
        return (
            State::ModifiedByHand,
            None,
            vec!["the file does not start with cmstore's marker line".to_string()],
        );
    };
    let expected = render(plugin, words);
    if text == expected {
        return (State::Installed, Some(found), Vec::new());
    }
    let older = found < CURRENT_VERSION;
    let other_command = command(text).is_some_and(|said| {
        let words: Vec<&str> = words.iter().map(AsRef::as_ref).collect();
        said != words && render(plugin, &said) == text
    });
    if older {
        let note = format!("written by an older cmstore (hooks-v{found})");
        return (State::Outdated, Some(found), vec![note]);
    }
    if other_command {
        let said = command(text).unwrap_or_default().join(" ");
        return (
            State::Outdated,
            Some(found),
            vec![format!("runs another command ({said})")],
        );
    }
    (
        State::ModifiedByHand,
        Some(found),
        vec!["the plugin differs from what cmstore writes".to_string()],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opencode() -> &'static PluginFile {
        of(Agent::Opencode).unwrap()
    }

    #[test]
    fn the_plugin_runs_the_words_it_is_given_and_carries_the_current_token() {
        let text = render(opencode(), &["/opt/cmstore", "--home", "/h/x \"y\""]);
        assert_eq!(version(opencode(), &text), Some(CURRENT_VERSION));
        assert_eq!(
            command(&text).unwrap(),
            ["/opt/cmstore", "--home", "/h/x \"y\""]
        );
        assert!(!text.contains("{{"), "every placeholder filled");
        assert_eq!(
            status(
                opencode(),
                Some(&text),
                &["/opt/cmstore", "--home", "/h/x \"y\""]
            )
            .0,
            State::Installed
        );
    }

    #[test]
    fn a_file_of_another_binary_or_an_older_token_is_outdated_an_edit_is_by_hand() {
        let words = ["cmstore"];
        let other = render(opencode(), &["/old/cmstore"]);
        let (state, _, notes) = status(opencode(), Some(&other), &words);
        assert_eq!(state, State::Outdated);
        assert_eq!(notes, ["runs another command (/old/cmstore)"]);
        let older = render(opencode(), &words).replacen(
            &format!("hooks-v{CURRENT_VERSION}"),
            "hooks-v1",
            1,
        );
        assert_eq!(status(opencode(), Some(&older), &words).0, State::Outdated);
        let edited = render(opencode(), &words) + "// mine\n";
        assert_eq!(
            status(opencode(), Some(&edited), &words).0,
            State::ModifiedByHand
        );
        let foreign = "export const Mine = async () => ({})\n";
        assert_eq!(
            status(opencode(), Some(foreign), &words),
            (
                State::ModifiedByHand,
                None,
                vec!["the file does not start with cmstore's marker line".to_string()]
            )
        );
        assert_eq!(status(opencode(), None, &words).0, State::Missing);
    }

    /// Every event the row lists is one the plugin sends, and one capture gives a type; the
    /// template is pinned to its token as the hook files are (`templates_changed_without_
    /// bumping_the_token`): edit it, bump `CURRENT_VERSION`, update the hash.
    #[test]
    fn the_plugin_sends_the_events_it_lists_and_its_text_is_pinned_to_its_token() {
        let template = opencode().template;
        let reject = crate::model::wire::Payload::decode(br#"{"reply":"reject"}"#).unwrap();
        for event in opencode().events {
            assert!(template.contains(&format!("\"{event}\"")), "{event}");
            assert!(
                crate::model::wire::opencode::hook_type(event, &reject).is_some(),
                "{event}"
            );
        }
        assert_eq!(version(opencode(), template), Some(CURRENT_VERSION));
        let fnv = template.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        assert_eq!(
            fnv, 16_463_739_433_406_781_453,
            "resources/opencode/cmstore.js edited"
        );
    }

    #[test]
    fn the_user_plugin_lives_under_the_xdg_config_directory() {
        let user = |xdg: Option<&str>| Location::User {
            home: PathBuf::from("/home/me"),
            claude_config_dir: None,
            copilot_home: None,
            codex_home: None,
            xdg_config_home: xdg.map(PathBuf::from),
        };
        assert_eq!(
            path(opencode(), &user(None)),
            PathBuf::from("/home/me/.config/opencode/plugin/cmstore.js")
        );
        assert_eq!(
            path(opencode(), &user(Some("/cfg"))),
            PathBuf::from("/cfg/opencode/plugin/cmstore.js")
        );
        assert_eq!(
            path(opencode(), &Location::Project(PathBuf::from("/w"))),
            PathBuf::from("/w/.opencode/plugin/cmstore.js")
        );
    }
}
