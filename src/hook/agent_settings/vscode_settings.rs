//! VS Code's settings that decide whether its agent runs the hook files cmstore writes, so
//! that `hooks status` and `hooks doctor` can say why hooks that are installed will not fire.
//!
//! - `chat.useHooks` (on by default) runs hooks at all.
//! - `chat.hookFilesLocations` maps folders to `true` or `false`. VS Code merges it over its
//!   defaults key by key, so `false` turns a location off, a default one (`.github/hooks`)
//!   included, and a key it does not list keeps its default. `~/` keys are the user's folders.
//!
//! A workspace's `.vscode/settings.json` wins over the user's, key by key. Settings files are
//! JSONC (comments, trailing commas), read as tolerantly as VS Code reads them; one that does
//! not parse is left to VS Code to report.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One settings file that was read.
#[derive(Debug, Clone)]
pub struct SettingsFile {
    /// Where it is.
    pub path: PathBuf,
    /// What it holds.
    pub doc: Value,
}

/// `text`, a settings file, as JSON; `None` when it does not parse even leniently.
pub fn parse(text: &str) -> Option<Value> {
    let options = jsonc_parser::ParseOptions::default();
    match jsonc_parser::parse_to_serde_value::<Option<Value>>(text, &options) {
        Ok(Some(doc)) => Some(doc),
        Ok(None) => Some(Value::Object(Default::default())),
        Err(_) => None,
    }
}

/// The user settings files VS Code may read, for each of its builds (stable and Insiders),
/// given the user's `home` and the environment `var` (portable mode, `VSCODE_APPDATA`, and
/// each system's own place: `XDG_CONFIG_HOME` or `~/.config` on Linux, `~/Library/Application
/// Support` on macOS, `%APPDATA%` on Windows).
pub fn user_settings_paths(home: &Path, var: impl Fn(&str) -> Option<PathBuf>) -> Vec<PathBuf> {
    if let Some(portable) = var("VSCODE_PORTABLE") {
        return vec![portable
            .join("user-data")
            .join("User")
            .join("settings.json")];
    }
    let root = var("VSCODE_APPDATA").unwrap_or_else(|| {
        if cfg!(windows) {
            var("APPDATA").unwrap_or_else(|| home.join("AppData").join("Roaming"))
        } else if cfg!(target_os = "macos") {
            home.join("Library").join("Application Support")
        } else {
            var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"))
        }
    });
    ["Code", "Code - Insiders"]
        .iter()
        .map(|build| root.join(build).join("User").join("settings.json"))
        .collect()
}

/// The VS Code build whose user settings file is at `path` (`Code`, `Code - Insiders`, as
/// [`user_settings_paths`] names it); `None` for a workspace's or a portable one's.
pub fn build_of(path: &Path) -> Option<String> {
    let user = path.parent()?;
    if user.file_name()? != "User" {
        return None;
    }
    let build = user.parent()?.file_name()?.to_str()?;
    match build {
        "Code" => Some("VS Code".into()),
        "Code - Insiders" => Some("VS Code Insiders".into()),
        _ => None,
    }
}

/// Why VS Code will not run the hooks in the folder VS Code names `location` (`.github/hooks`,
/// `~/.copilot/hooks`), by `files`: the user's settings first, then the workspace's, whose
/// keys win.
pub fn will_not_fire(files: &[SettingsFile], location: &str) -> Vec<String> {
    let mut off = Vec::new();
    if let Some(file) = last_saying(files, |doc| doc.get("chat.useHooks")) {
        if file.doc.get("chat.useHooks").and_then(Value::as_bool) == Some(false) {
            off.push(format!(
                "VS Code runs no hooks (\"chat.useHooks\": false in {})",
                file.path.display()
            ));
        }
    }
    let said = last_saying(files, |doc| locations(doc)?.get(location));
    if let Some(file) = said {
        if locations(&file.doc)
            .and_then(|l| l.get(location))
            .is_some_and(is_false)
        {
            off.push(format!(
                "VS Code does not read {location} (\"chat.hookFilesLocations\": {{\"{location}\": \
                 false}} in {})",
                file.path.display()
            ));
        }
    }
    if let Some(file) = last_saying(files, |doc| doc.get("chat.hookFilesLocations")) {
        if file.doc.get("chat.hookFilesLocations") == Some(&Value::Null) {
            off.push(format!(
                "VS Code reads no hook files (\"chat.hookFilesLocations\": null in {})",
                file.path.display()
            ));
        }
    }
    off
}

/// Whether `files` list `location` as a hook folder to read (`true`), the last saying so.
pub fn lists(files: &[SettingsFile], location: &str) -> bool {
    last_saying(files, |doc| locations(doc)?.get(location))
        .and_then(|f| locations(&f.doc)?.get(location))
        .is_some_and(|v| {
            v == &Value::Bool(true) || v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("true"))
        })
}

/// `false`, or the text `"false"` (VS Code takes either).
fn is_false(value: &Value) -> bool {
    value == &Value::Bool(false)
        || value
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("false"))
}

fn locations(doc: &Value) -> Option<&serde_json::Map<String, Value>> {
    doc.get("chat.hookFilesLocations")?.as_object()
}

/// The last of `files` in which `key` finds a value: the one VS Code goes by.
fn last_saying(
    files: &[SettingsFile],
    key: impl Fn(&Value) -> Option<&Value>,
) -> Option<&SettingsFile> {
    files.iter().rev().find(|f| key(&f.doc).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, text: &str) -> SettingsFile {
        SettingsFile {
            path: PathBuf::from(path),
            doc: parse(text).expect("parses"),
        }
    }

    #[test]
    fn settings_are_jsonc() {
        let doc = parse(
            "{\n  // a comment\n  \"chat.hookFilesLocations\": {\".github/hooks\": false, /* x */},\n}\n",
        )
        .unwrap();
        assert_eq!(doc["chat.hookFilesLocations"][".github/hooks"], false);
        assert_eq!(parse("").unwrap(), serde_json::json!({}));
        assert_eq!(parse("{\"a\": [1, 2"), None);
    }

    #[test]
    fn what_turns_the_hooks_off_and_which_file_wins() {
        let user = file(
            "/u/settings.json",
            r#"{"chat.useHooks": false, "chat.hookFilesLocations": {".github/hooks": false, "~/.copilot/hooks": true}}"#,
        );
        let off = will_not_fire(std::slice::from_ref(&user), ".github/hooks");
        assert_eq!(off.len(), 2, "{off:?}");
        assert!(off[0].contains("\"chat.useHooks\": false in /u/settings.json"));
        assert!(off[1].starts_with("VS Code does not read .github/hooks"));
        assert!(lists(std::slice::from_ref(&user), "~/.copilot/hooks"));
        assert!(!lists(std::slice::from_ref(&user), ".github/hooks"));

        // The workspace's keys win over the user's; a key it does not name stays the user's.
        let workspace = file(
            "/p/.vscode/settings.json",
            r#"{"chat.useHooks": true, "chat.hookFilesLocations": {".github/hooks": true}}"#,
        );
        let both = [user.clone(), workspace];
        assert!(will_not_fire(&both, ".github/hooks").is_empty());
        assert!(lists(&both, "~/.copilot/hooks"));

        let text_false = file(
            "/u/settings.json",
            r#"{"chat.hookFilesLocations": {".github/hooks": "False"}}"#,
        );
        assert_eq!(will_not_fire(&[text_false], ".github/hooks").len(), 1);

        let nothing = file("/u/settings.json", r#"{"chat.hookFilesLocations": null}"#);
        let off = will_not_fire(&[nothing], "~/.copilot/hooks");
        assert_eq!(off.len(), 1, "{off:?}");
        assert!(off[0].starts_with("VS Code reads no hook files"));
        assert!(will_not_fire(&[file("/u/s.json", "{}")], ".github/hooks").is_empty());
    }

    #[test]
    fn each_build_has_its_settings() {
        let home = Path::new("/h");
        let none = |_: &str| None;
        let paths = user_settings_paths(home, none);
        assert_eq!(paths.len(), 2);
        assert!(paths[0].ends_with("Code/User/settings.json"), "{paths:?}");
        assert!(paths[1].ends_with("Code - Insiders/User/settings.json"));
        let portable = |k: &str| (k == "VSCODE_PORTABLE").then(|| PathBuf::from("/port"));
        assert_eq!(
            user_settings_paths(home, portable),
            [Path::new("/port/user-data/User/settings.json")]
        );
        assert_eq!(build_of(&paths[0]).as_deref(), Some("VS Code"));
        assert_eq!(build_of(&paths[1]).as_deref(), Some("VS Code Insiders"));
        assert_eq!(build_of(Path::new("/p/.vscode/settings.json")), None);
        if cfg!(target_os = "linux") {
            assert_eq!(paths[0], Path::new("/h/.config/Code/User/settings.json"));
            let xdg = |k: &str| (k == "XDG_CONFIG_HOME").then(|| PathBuf::from("/x"));
            assert_eq!(
                user_settings_paths(home, xdg)[0],
                Path::new("/x/Code/User/settings.json")
            );
        }
    }
}
