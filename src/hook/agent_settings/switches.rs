//! Settings beside cmstore's hooks that keep them from running, so that `hooks status` and
//! `hooks install` can say why hooks that are installed will not fire: Gemini CLI's
//! `hooksConfig` (`enabled: false`, or cmstore's handler name in `disabled`) and Codex's
//! `[features] hooks = false` in the `config.toml` beside its `hooks.json`; Qwen Code's
//! `disableAllHooks` and `hooks.enabled`/`hooks.disabled`.

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
    fn codex_switch_that_keeps_hooks_from_running() {
        assert!(codex("model = \"gpt-5\"\n[features]\nhooks = true\n").is_empty());
        assert!(codex("not toml [").is_empty());
        assert_eq!(
            codex("[features]\nhooks = false\n"),
            ["Codex's hooks are off ([features] hooks = false in config.toml)"]
        );
    }
}
