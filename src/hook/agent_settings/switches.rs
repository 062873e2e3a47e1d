//! Settings beside cmstore's hooks that keep them from running, so that `hooks status` and
//! `hooks install` can say why hooks that are installed will not fire: Gemini CLI's
//! `hooksConfig` (`enabled: false`, or cmstore's handler name in `disabled`) and Codex's
//! `[features] hooks = false` in the `config.toml` beside its `hooks.json`; Qwen Code's
//! `disableAllHooks` and `hooks.enabled`/`hooks.disabled`; Droid's `hooksDisabled`, its
//! organisation's `allowManagedHooksOnly`, a hook of the same file it rejects, and the user's
//! hooks a `hooks.json` holds in the settings shape, which Droid never runs.

use serde_json::Value;

/// Why Gemini CLI will not run the hooks named `names` of its settings `doc`.
pub fn gemini(doc: &Value, names: &[String]) -> Vec<String> {
    let mut off = Vec::new();
    let config = doc.get("hooksConfig");
    if config
        .and_then(|c| c.get("enabled"))
        .and_then(Value::as_bool)
        == Some(false)
    {
        off.push("Gemini CLI's hooks are off (\"hooksConfig\": {\"enabled\": false})".to_string());
    }
    // Gemini CLI before `hooksConfig`: the switch was `hooks.enabled`.
    if doc.pointer("/hooks/enabled").and_then(Value::as_bool) == Some(false) {
        off.push("Gemini CLI's hooks are off (\"hooks\": {\"enabled\": false})".to_string());
    }
    off.extend(listed(
        config.and_then(|c| c.get("disabled")),
        names,
        "Gemini CLI skips cmstore's hooks: \"hooksConfig.disabled\"",
    ));
    off
}

/// `what lists "<name>"` for each of `names` in the array `list`.
fn listed(list: Option<&Value>, names: &[String], what: &str) -> Vec<String> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|d| names.iter().any(|n| n == d))
        .map(|name| format!("{what} lists {name:?}"))
        .collect()
}

/// Why Qwen Code will not run the hooks named `names` of its settings `doc`: `disableAllHooks`,
/// `hooks.enabled: false`, or a name in `hooks.disabled` (the keys Qwen Code 0.24 reads
/// beside the events in `hooks`).
pub fn qwen(doc: &Value, names: &[String]) -> Vec<String> {
    let mut off = Vec::new();
    if doc.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
        off.push("Qwen Code's hooks are off (\"disableAllHooks\": true)".to_string());
    }
    if doc.pointer("/hooks/enabled").and_then(Value::as_bool) == Some(false) {
        off.push("Qwen Code's hooks are off (\"hooks\": {\"enabled\": false})".to_string());
    }
    off.extend(listed(
        doc.pointer("/hooks/disabled"),
        names,
        "Qwen Code skips cmstore's hooks: \"hooks.disabled\"",
    ));
    off
}

/// Why Qoder CLI will not run the hooks of its settings `doc`: `disableAllHooks`, or
/// `hooksConfig.enabled: false` (read from Qoder CLI 1.1.52's published package).
pub fn qoder(doc: &Value) -> Vec<String> {
    let mut off = Vec::new();
    if doc.get("disableAllHooks").and_then(Value::as_bool) == Some(true) {
        off.push("Qoder's hooks are off (\"disableAllHooks\": true)".to_string());
    }
    if doc.pointer("/hooksConfig/enabled").and_then(Value::as_bool) == Some(false) {
        off.push("Qoder's hooks are off (\"hooksConfig\": {\"enabled\": false})".to_string());
    }
    off
}

/// Where Droid reads the settings an organisation manages (Factory's enterprise docs).
pub const DROID_MANAGED: &str = if cfg!(windows) {
    r"C:\Program Files\Factory\settings.json"
} else if cfg!(target_os = "macos") {
    "/Library/Application Support/Factory/settings.json"
} else {
    "/etc/factory/settings.json"
};

/// Why Droid will not run the hooks of its `hooks.json` (`hooks`, as the merge reads it: the
/// events under `hooks`), given the `settings.json` beside it and the organisation's managed
/// settings, when there are: `hooksDisabled` in either (Droid 0.225 reads it among the hooks;
/// its docs put it at the top of `settings.json`), `allowManagedHooksOnly`, or a hook in the
/// file that Droid's schema rejects, for which it ignores the whole file.
pub fn droid(hooks: &Value, settings: Option<&Value>, managed: Option<&Value>) -> Vec<String> {
    let mut off = Vec::new();
    let on = |doc: Option<&Value>, pointer: &str| {
        doc.and_then(|d| d.pointer(pointer))
            .and_then(Value::as_bool)
            == Some(true)
    };
    if on(Some(hooks), "/hooks/hooksDisabled") {
        off.push("Droid's hooks are off (\"hooksDisabled\": true in hooks.json)".to_string());
    }
    if on(settings, "/hooks/hooksDisabled") || on(settings, "/hooksDisabled") {
        off.push("Droid's hooks are off (\"hooksDisabled\": true in settings.json)".to_string());
    }
    if on(managed, "/allowManagedHooksOnly") || on(managed, "/hooks/allowManagedHooksOnly") {
        off.push(format!(
            "your organisation lets Droid run only its own hooks (\"allowManagedHooksOnly\": \
             true in {DROID_MANAGED})"
        ));
    }
    if let Some(why) = hooks.get("hooks").and_then(droid_rejects) {
        off.push(format!("Droid ignores the whole file: {why}"));
    }
    off
}

/// The events whose hooks the user wrote into Droid's `hooks.json` (`hooks`, as the merge
/// reads it) in the settings shape, under a `hooks` key: Droid never runs them
/// (Factory-AI/factory#3). Not cmstore's, which it writes at the file's top, but as silent.
pub fn droid_hooks_never_run(hooks: &Value) -> Vec<String> {
    let wrapped = hooks.pointer("/hooks/hooks").and_then(Value::as_object);
    wrapped
        .into_iter()
        .flatten()
        .filter(|(event, entries)| DROID_EVENTS.contains(&event.as_str()) && entries.is_array())
        .map(|(event, _)| event.clone())
        .collect()
}

/// Droid's nine events, as its hook files name them.
const DROID_EVENTS: [&str; 9] = [
    "PreToolUse",
    "PostToolUse",
    "Notification",
    "UserPromptSubmit",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
];

/// The first hook of a Droid event map that its schema rejects (it then ignores the file):
/// a handler whose `type` is not `command`, whose `command` is no text or whose `timeout`
/// no number, or a group that is no object with a `hooks` list.
fn droid_rejects(events: &Value) -> Option<String> {
    for (event, groups) in events.as_object()?.iter() {
        if !DROID_EVENTS.contains(&event.as_str()) {
            continue;
        }
        let Some(groups) = groups.as_array() else {
            return Some(format!("{event} is not a list"));
        };
        for group in groups {
            let handlers = group.get("hooks").and_then(Value::as_array);
            let text_or_absent = |key: &str| group.get(key).is_none_or(Value::is_string);
            let Some(handlers) = handlers.filter(|_| text_or_absent("matcher")) else {
                return Some(format!("a group of {event} has no \"hooks\" list"));
            };
            for h in handlers {
                if h.get("type").and_then(Value::as_str) != Some("command") {
                    return Some(format!("a hook of {event} is not of \"type\": \"command\""));
                }
                if !h.get("command").is_some_and(Value::is_string) {
                    return Some(format!("a hook of {event} has no \"command\" text"));
                }
                if !h.get("timeout").is_none_or(Value::is_number) {
                    return Some(format!(
                        "a hook of {event} has a \"timeout\" that is no number"
                    ));
                }
            }
        }
    }
    None
}

/// Why Codex will not run hooks, from the text of its `config.toml`; nothing when it does
/// not parse (Codex says so itself).
pub fn codex(config_toml: &str) -> Vec<String> {
    let Ok(config) = config_toml.parse::<toml::Table>() else {
        return Vec::new();
    };
    let off = config
        .get("features")
        .and_then(|f| f.get("hooks"))
        .and_then(toml::Value::as_bool)
        == Some(false);
    if off {
        vec!["Codex's hooks are off ([features] hooks = false in config.toml)".to_string()]
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gemini_switches_that_keep_hooks_from_running() {
        let ours = ["cmstore-hooks-v3".to_string()];
        assert!(gemini(&json!({"hooks": {}}), &ours).is_empty());
        assert!(gemini(
            &json!({"hooksConfig": {"enabled": true, "disabled": ["x"]}}),
            &ours
        )
        .is_empty());
        let off = gemini(
            &json!({"hooksConfig": {"enabled": false, "disabled": ["cmstore-hooks-v3"]},
                    "hooks": {"enabled": false}}),
            &ours,
        );
        assert_eq!(off.len(), 3, "{off:?}");
        assert!(off[2].contains("lists \"cmstore-hooks-v3\""));
    }

    #[test]
    fn qoders_two_switches_turn_its_hooks_off() {
        assert!(qoder(&json!({"hooks": {}})).is_empty());
        assert_eq!(qoder(&json!({"disableAllHooks": true})).len(), 1);
        assert_eq!(
            qoder(&json!({"hooksConfig": {"enabled": false}, "disableAllHooks": true})).len(),
            2
        );
        assert!(qoder(&json!({"hooksConfig": {"enabled": true}})).is_empty());
    }

    #[test]
    fn qwen_switches_that_keep_hooks_from_running() {
        let ours = ["cmstore-hooks-v3".to_string()];
        assert!(qwen(
            &json!({"hooks": {"enabled": true, "disabled": ["x"]}}),
            &ours
        )
        .is_empty());
        assert!(qwen(&json!({"disableAllHooks": false}), &ours).is_empty());
        let off = qwen(
            &json!({"disableAllHooks": true,
                    "hooks": {"enabled": false, "disabled": ["cmstore-hooks-v3"]}}),
            &ours,
        );
        assert_eq!(
            off,
            [
                "Qwen Code's hooks are off (\"disableAllHooks\": true)",
                "Qwen Code's hooks are off (\"hooks\": {\"enabled\": false})",
                "Qwen Code skips cmstore's hooks: \"hooks.disabled\" lists \"cmstore-hooks-v3\"",
            ]
        );
    }

    #[test]
    fn droid_switches_and_files_it_rejects() {
        let ours = json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "c",
            "timeout": 30, "cmstore": "hooks-v3"}]}], "showHookOutput": true}});
        assert!(droid(&ours, None, None).is_empty());
        assert!(droid(
            &ours,
            Some(&json!({"hooksDisabled": false})),
            Some(&json!({"hooks": {}}))
        )
        .is_empty());
        let mut off = ours.clone();
        off["hooks"]["hooksDisabled"] = json!(true);
        off["hooks"]["PreToolUse"] = json!([{"matcher": "Execute",
            "hooks": [{"type": "prompt", "prompt": "is it safe?"}]}]);
        let said = droid(
            &off,
            Some(&json!({"hooks": {"hooksDisabled": true}})),
            Some(&json!({"allowManagedHooksOnly": true})),
        );
        assert_eq!(said.len(), 4, "{said:?}");
        assert_eq!(
            said[0],
            "Droid's hooks are off (\"hooksDisabled\": true in hooks.json)"
        );
        assert_eq!(
            said[1],
            "Droid's hooks are off (\"hooksDisabled\": true in settings.json)"
        );
        assert!(said[2].contains("allowManagedHooksOnly"), "{}", said[2]);
        assert_eq!(
            said[3],
            "Droid ignores the whole file: a hook of PreToolUse is not of \"type\": \"command\""
        );
        let bad = |events: Value| droid_rejects(&events);
        assert!(bad(json!({"Stop": {}})).unwrap().contains("not a list"));
        assert!(bad(json!({"Stop": [{"matcher": 1, "hooks": []}]})).is_some());
        assert!(bad(
            json!({"Stop": [{"hooks": [{"type": "command", "command": "c",
            "timeout": "30"}]}]})
        )
        .unwrap()
        .contains("timeout"));
        assert_eq!(bad(json!({"Custom": 1, "hooksDisabled": false})), None);
        // Hooks written in the settings shape into hooks.json: the user's, never run.
        let mut wrapped = ours.clone();
        wrapped["hooks"]["hooks"] = json!({"Stop": [{"hooks": [{"type": "command",
            "command": "./notify.sh"}]}], "hooksDisabled": false});
        assert!(droid(&wrapped, None, None).is_empty(), "cmstore's own run");
        assert_eq!(droid_hooks_never_run(&wrapped), ["Stop"]);
        assert!(droid_hooks_never_run(&ours).is_empty());
    }

    #[test]
    fn codex_switch_that_keeps_hooks_from_running() {
        assert!(codex("model = \"gpt-5\"\n[features]\nhooks = true\n").is_empty());
        assert!(codex("not toml [").is_empty());
        assert_eq!(
            codex("[features]\nhooks = false\n"),
            ["Codex's hooks are off ([features] hooks = false in config.toml)"]
        );
    }
}
