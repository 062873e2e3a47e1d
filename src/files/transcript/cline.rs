//! A Cline session's own files, read at a run's end (Cline 3: `<data>/sessions/<id>/<id>.json`
//! and the transcript `<id>.messages.json` beside it, `<data>` being `$CLINE_DATA_DIR`, else
//! `$CLINE_DIR/data`, else `~/.cline/data`): the run's prompt and model, and the usage of its
//! model calls, which no hook payload of Cline's carries. Cline runs the hooks of a run's end
//! without waiting for them, so reading the whole transcript there costs the agent nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::model::queue_line::usage::UsageRecord;
use crate::model::wire::cline::{prompt_of_message, usage_of_message};

/// The largest transcript read (a JSON document, read whole).
const MAX_TRANSCRIPT_BYTES: u64 = 64 << 20;

/// What a run left in its session's files.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Run {
    /// The person's prompt that began the run.
    pub prompt: Option<String>,
    /// The model the session runs.
    pub model: Option<String>,
    /// The usage of the run's model calls.
    pub usage: Vec<UsageRecord>,
    /// The session's working directory.
    pub cwd: Option<String>,
    /// The session's own totals (its file's `metadata.usage`), stored the way usage is.
    pub totals: Option<UsageRecord>,
    /// How the session's last run ended, as its file says (`completed`, `cancelled`,
    /// `failed`, `running`).
    pub status: Option<String>,
    /// The session's transcript.
    pub transcript: PathBuf,
}

/// The data folder and session of a session's transcript at `path`
/// (`<data>/sessions/<id>/<id>.messages.json`), if it is one.
pub fn transcript_of(path: &Path) -> Option<(PathBuf, String)> {
    let name = path.file_name()?.to_str()?;
    let session = name.strip_suffix(".messages.json")?;
    let folder = path.parent()?;
    let sessions = folder.parent()?;
    let named = folder.file_name()? == session && sessions.file_name()? == "sessions";
    named.then(|| {
        (
            sessions.parent().unwrap_or(sessions).to_path_buf(),
            session.to_string(),
        )
    })
}

/// Cline's data folder: `data_dir` (`$CLINE_DATA_DIR`), else `cline_dir` (`$CLINE_DIR`) or
/// `~/.cline`, then `data`.
pub fn data_dir(
    data_dir: Option<PathBuf>,
    cline_dir: Option<PathBuf>,
    home: Option<PathBuf>,
) -> Option<PathBuf> {
    data_dir.or_else(|| {
        Some(
            cline_dir
                .or_else(|| Some(home?.join(".cline")))?
                .join("data"),
        )
    })
}

/// The run of `session` that began at `since_ms` (every message when `None`), from the
/// session's files under `data`; `None` when neither can be read.
pub fn run(data: &Path, session: &str, since_ms: Option<i64>) -> Option<Run> {
    if session.is_empty() || session.contains(['/', '\\']) || session.starts_with('.') {
        return None;
    }
    let folder = data.join("sessions").join(session);
    let manifest = read_json(&folder.join(format!("{session}.json")));
    let transcript = read_json(&folder.join(format!("{session}.messages.json")));
    if manifest.is_none() && transcript.is_none() {
        return None;
    }
    let messages: Vec<&Value> = transcript
        .as_ref()
        .and_then(|t| t.get("messages"))
        .and_then(Value::as_array)
        .map(|m| {
            m.iter()
                .filter(|m| {
                    let ts = m.get("ts").and_then(Value::as_i64);
                    since_ms.is_none_or(|since| ts.is_some_and(|ts| ts >= since))
                })
                .collect()
        })
        .unwrap_or_default();
    let text = |key: &str| {
        manifest
            .as_ref()
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    // The run's prompt is the session's last (a resumed run's prompt may be written before
    // the run's id was made).
    let every: Vec<&Value> = transcript
        .as_ref()
        .and_then(|t| t.get("messages"))
        .and_then(Value::as_array)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    Some(Run {
        prompt: every
            .iter()
            .rev()
            .find_map(|m| prompt_of_message(m))
            .or_else(|| text("prompt")),
        model: text("model"),
        cwd: text("cwd"),
        status: text("status"),
        transcript: folder.join(format!("{session}.messages.json")),
        totals: manifest
            .as_ref()
            .and_then(|m| m.pointer("/metadata/usage"))
            .and_then(totals_of),
        usage: messages
            .iter()
            .filter_map(|m| usage_of_message(m, session))
            .collect(),
    })
}

/// A session's `metadata.usage` (`inputTokens`, with the cached tokens inside, `outputTokens`,
/// `cacheReadTokens`, `cacheWriteTokens`) as a record without a model.
fn totals_of(usage: &Value) -> Option<UsageRecord> {
    let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let (input, read, write) = (
        n("inputTokens"),
        n("cacheReadTokens"),
        n("cacheWriteTokens"),
    );
    let read = read.min(input);
    let write = write.min(input - read);
    Some(UsageRecord {
        message_id: String::new(),
        input: input - read - write,
        output: n("outputTokens"),
        cache_read: read,
        cache_write: write,
        ..UsageRecord::default()
    })
    .filter(|t| t.input + t.output + t.cache_read + t.cache_write > 0)
}

/// The `messages` of the session transcript at `path` (none when it cannot be read).
pub fn messages(path: &Path) -> Vec<Value> {
    match read_json(path) {
        Some(Value::Object(mut doc)) => match doc.remove("messages") {
            Some(Value::Array(messages)) => messages,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    }
}

fn read_json(path: &Path) -> Option<Value> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > MAX_TRANSCRIPT_BYTES {
        return None;
    }
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_folder_follows_clines_variables() {
        let p = |s: &str| Some(PathBuf::from(s));
        assert_eq!(data_dir(p("/d"), p("/c"), p("/h")), p("/d"));
        assert_eq!(data_dir(None, p("/c"), p("/h")), p("/c/data"));
        assert_eq!(data_dir(None, None, p("/h")), p("/h/.cline/data"));
        assert_eq!(data_dir(None, None, None), None);
    }

    #[test]
    fn a_run_is_its_messages_since_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("sessions").join("s1");
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join("s1.json"),
            r#"{"session_id":"s1","model":"claude-sonnet-4-5","prompt":"first"}"#,
        )
        .unwrap();
        let call = |id: &str, ts: i64| {
            serde_json::json!({"id": id, "role": "assistant", "ts": ts,
                "modelInfo": {"id": "claude-sonnet-4-5", "provider": "anthropic"},
                "metrics": {"inputTokens": 1341, "outputTokens": 56, "cacheReadTokens": 100,
                            "cacheWriteTokens": 7}})
        };
        let prompt = |text: &str, ts: i64| {
            serde_json::json!({"id": "u", "role": "user", "ts": ts,
                "content": [{"type": "text", "text": format!("<user_input mode=\"act\">{text}</user_input>")}]})
        };
        let doc = serde_json::json!({"messages": [prompt("first", 1), call("m1", 2),
            prompt("second", 10), call("m2", 11)]});
        std::fs::write(folder.join("s1.messages.json"), doc.to_string()).unwrap();
        let later = run(dir.path(), "s1", Some(10)).unwrap();
        assert_eq!(later.prompt.as_deref(), Some("second"));
        assert_eq!(later.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(later.usage.len(), 1);
        let u = &later.usage[0];
        assert_eq!(
            (
                u.message_id.as_str(),
                u.input,
                u.output,
                u.cache_read,
                u.cache_write
            ),
            ("m2", 1234, 56, 100, 7)
        );
        assert_eq!(run(dir.path(), "s1", None).unwrap().usage.len(), 2);
        assert_eq!(run(dir.path(), "../s1", None), None);
        assert_eq!(
            transcript_of(&folder.join("s1.messages.json")),
            Some((dir.path().to_path_buf(), "s1".to_string()))
        );
        assert_eq!(transcript_of(&folder.join("s2.messages.json")), None);
        assert_eq!(run(dir.path(), "none", None), None);
    }
}
