//! The usage of a Droid session, read from the settings file Droid keeps beside its transcript
//! (pure).
//!
//! Droid writes no usage into its transcript (`~/.factory/sessions/<folder>/<session>.jsonl`).
//! It keeps the session's totals in `<session>.settings.json` beside it, as it goes:
//! `tokenUsage` with `inputTokens` (not read from or written to the cache, as Anthropic's API
//! counts them), `outputTokens`, `cacheCreationTokens`, `cacheReadTokens` and
//! `thinkingTokens`, the sums of its calls' counts (checked against a mock whose counts the
//! test chose: Droid 0.225.2). One record stands for the session, keyed [`SESSION_TOTAL`] and
//! the session, its counts growing as the file does: the store keeps the largest of each
//! (docs/usage.md). `model` names the session's model; a custom model of the user's
//! (`custom:<name>-<index>`) is the `model` of the `customModels` entry it names in Droid's
//! own `settings.json`, when given.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::model::queue_line::usage::UsageRecord;

/// The message id prefix of a Droid session's totals.
pub const SESSION_TOTAL: &str = "droid-session:";

/// Droid's folder (`.factory`) when `path` is a Droid session's transcript:
/// `.factory/sessions/<folder>/<session>.jsonl`, or directly in `sessions/` (older Droids).
pub fn factory_of(path: &Path) -> Option<PathBuf> {
    if path.extension().is_none_or(|e| e != "jsonl") {
        return None;
    }
    path.ancestors().skip(1).take(2).find_map(|dir| {
        let factory = dir.parent()?;
        let named = |d: &Path, name: &str| d.file_name().is_some_and(|n| n == name);
        (named(dir, "sessions") && named(factory, ".factory")).then(|| factory.to_path_buf())
    })
}

/// The settings file Droid keeps beside the transcript at `path`.
pub fn settings_of(path: &Path) -> PathBuf {
    path.with_extension("settings.json")
}

/// The totals of `session` in the text of its `<session>.settings.json`, dated `ts` (when the
/// file's time is known: else the queue line's); `settings` gives the user's own settings
/// (Droid's `settings.json`), asked for only to name a custom model. `None` when the file does
/// not parse or counts nothing.
pub fn from_session_settings(
    session: &str,
    text: &str,
    settings: impl FnOnce() -> Option<Value>,
    ts: Option<i64>,
) -> Option<UsageRecord> {
    let file: Value = serde_json::from_str(text).ok()?;
    let usage = file.get("tokenUsage")?;
    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (n("inputTokens"), n("outputTokens"));
    let (cache_write, cache_read) = (n("cacheCreationTokens"), n("cacheReadTokens"));
    let counted = input + output + cache_write + cache_read;
    if counted == 0 || session.is_empty() {
        return None;
    }
    let thinking = n("thinkingTokens");
    let model = file
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(|m| custom_model(m, settings).unwrap_or_else(|| m.to_string()));
    Some(UsageRecord {
        message_id: format!("{SESSION_TOTAL}{session}"),
        model,
        input,
        output,
        reasoning: (thinking > 0).then_some(thinking.min(output)),
        cache_write,
        cache_read,
        ts,
        session_id: Some(session.to_string()),
        // Counts only grow: the later state of the file is the larger one.
        offset: counted,
        ..UsageRecord::default()
    })
}

/// The model a custom model id (`custom:<displayName>-<index>`) stands for: the `model` of
/// the user's `customModels` entry at that index, when its display name matches. The user's
/// settings are read only for such an id.
fn custom_model(id: &str, settings: impl FnOnce() -> Option<Value>) -> Option<String> {
    let (name, index) = id.strip_prefix("custom:")?.rsplit_once('-')?;
    let index = index.parse::<usize>().ok()?;
    let settings = settings()?;
    let entry = settings.get("customModels")?.get(index)?;
    if entry.get("displayName").and_then(Value::as_str) != Some(name) {
        return None;
    }
    entry
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What Droid 0.225.2 wrote after two calls against a mock whose every reply reported
    /// input 3, cache writes 3,060, cache reads 15,007 and output 45 (its other keys
    /// shortened).
    const SETTINGS: &str = r#"{"assistantActiveTimeMs": 203, "model": "custom:MockAnthropic-0",
        "reasoningEffort": "high", "autonomyMode": "auto-high",
        "tokenUsage": {"inputTokens": 6, "outputTokens": 90, "cacheCreationTokens": 6120,
          "cacheReadTokens": 30014, "thinkingTokens": 0, "factoryCredits": 0},
        "childInclusiveTokenUsageBySessionId": {},
        "lastCallTokenUsage": {"inputTokens": 3, "outputTokens": 45, "cacheReadTokens": 15007},
        "providerLock": "anthropic"}"#;

    #[test]
    fn a_sessions_totals_are_one_record_of_the_sums_droid_kept() {
        let user = json!({"customModels": [{"model": "claude-sonnet-4-5",
            "displayName": "MockAnthropic", "provider": "anthropic"}]});
        let got = from_session_settings("s1", SETTINGS, || Some(user.clone()), Some(7)).unwrap();
        assert_eq!(
            got,
            UsageRecord {
                message_id: "droid-session:s1".into(),
                model: Some("claude-sonnet-4-5".into()),
                input: 6,
                output: 90,
                cache_write: 6120,
                cache_read: 30014,
                ts: Some(7),
                session_id: Some("s1".into()),
                offset: 6 + 90 + 6120 + 30014,
                ..UsageRecord::default()
            }
        );
        // Without the user's settings, or another name at that index, the id as Droid says it.
        let unnamed = from_session_settings("s1", SETTINGS, || None, Some(7)).unwrap();
        assert_eq!(unnamed.model.as_deref(), Some("custom:MockAnthropic-0"));
        let other = json!({"customModels": [{"model": "m", "displayName": "Other"}]});
        let renamed =
            from_session_settings("s1", SETTINGS, || Some(other.clone()), Some(7)).unwrap();
        assert_eq!(renamed.model.as_deref(), Some("custom:MockAnthropic-0"));
    }

    #[test]
    fn a_droid_transcript_is_told_by_its_folders() {
        let factory = Path::new("/home/me/.factory");
        let at = |p: &str| factory_of(Path::new(p));
        assert_eq!(
            at("/home/me/.factory/sessions/-home-me-app/s1.jsonl").as_deref(),
            Some(factory)
        );
        assert_eq!(
            at("/home/me/.factory/sessions/s1.jsonl").as_deref(),
            Some(factory)
        );
        assert_eq!(at("/home/me/.claude/projects/-app/s1.jsonl"), None);
        assert_eq!(at("/home/me/.factory/sessions/-app/s1.settings.json"), None);
        assert_eq!(at("/home/me/sessions/-app/s1.jsonl"), None);
        assert_eq!(
            settings_of(Path::new("/x/s1.jsonl")),
            Path::new("/x/s1.settings.json")
        );
    }

    #[test]
    fn an_empty_or_unreadable_file_counts_nothing_and_thinking_is_of_the_output() {
        let empty = r#"{"model": "custom:M-0", "tokenUsage": {}}"#;
        assert_eq!(from_session_settings("s", empty, || None, None), None);
        assert_eq!(from_session_settings("s", "{", || None, None), None);
        assert_eq!(from_session_settings("", SETTINGS, || None, None), None);
        let thinking = r#"{"model": "claude-opus-4-1", "tokenUsage": {"inputTokens": 1,
            "outputTokens": 10, "thinkingTokens": 4}}"#;
        let got = from_session_settings(
            "s",
            thinking,
            || panic!("no custom model: no settings read"),
            None,
        )
        .unwrap();
        assert_eq!(
            (got.reasoning, got.model.as_deref()),
            (Some(4), Some("claude-opus-4-1"))
        );
    }
}
