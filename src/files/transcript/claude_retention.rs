//! Claude Code's own retention: it deletes a session's transcript
//! (`<claude dir>/projects/<project>/<session>.jsonl`) once the file has not changed for
//! `cleanupPeriodDays` days (30 when unset), at its next start, with no trash. `cmstore status`
//! warns before it deletes sessions the store does not hold (docs/usage.md).
//!
//! The period is the user's `settings.json`'s (`$CLAUDE_CONFIG_DIR` or `~/.claude`). A
//! project's own `.claude/settings.json` can set another, which Claude Code then applies to
//! every project's transcripts (anthropics/claude-code#90148): not read here.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Claude Code's period when its settings name none.
pub const DEFAULT_DAYS: u64 = 30;

/// The retention Claude Code applies, as its user settings say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Retention {
    /// Days a transcript is kept after its last change.
    pub days: u64,
    /// The settings file named it (else it is [`DEFAULT_DAYS`]).
    pub configured: bool,
    /// The settings file read.
    pub settings: PathBuf,
}

/// One session's transcript and when it last changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    /// The session (the file's name).
    pub session: String,
    /// Its last change, epoch ms.
    pub modified_ms: i64,
}

/// The retention of the Claude Code whose folder is `claude_dir`. An unreadable or malformed
/// settings file, or a value that is no whole number of days, counts as none: the default.
pub fn retention(claude_dir: &Path) -> Retention {
    let settings = claude_dir.join("settings.json");
    let days = fs::read(&settings)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .and_then(|v| {
            v.get("cleanupPeriodDays")
                .and_then(serde_json::Value::as_u64)
        });
    Retention {
        days: days.unwrap_or(DEFAULT_DAYS),
        configured: days.is_some(),
        settings,
    }
}

/// The session transcripts Claude Code's cleanup would delete: the `.jsonl` files directly in
/// each project folder of `claude_dir/projects` (a subagent's, in its session's folder, are
/// left by the cleanup), with their last change.
pub fn transcripts(claude_dir: &Path) -> Vec<Transcript> {
    let Ok(projects) = fs::read_dir(claude_dir.join("projects")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for project in projects.flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
        let Ok(files) = fs::read_dir(&project) else {
            continue;
        };
        for file in files.flatten() {
            let path = file.path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let (Some(session), Ok(meta)) = (path.file_stem(), file.metadata()) else {
                continue;
            };
            let Some(modified_ms) = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_millis() as i64)
            else {
                continue;
            };
            found.push(Transcript {
                session: session.to_string_lossy().into_owned(),
                modified_ms,
            });
        }
    }
    found.sort_by(|a, b| {
        a.modified_ms
            .cmp(&b.modified_ms)
            .then(a.session.cmp(&b.session))
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_the_settings_else_thirty_days() {
        let dir = tempfile::tempdir().unwrap();
        let r = retention(dir.path());
        assert_eq!((r.days, r.configured), (30, false));
        fs::write(
            dir.path().join("settings.json"),
            r#"{"cleanupPeriodDays": 99999}"#,
        )
        .unwrap();
        assert_eq!(retention(dir.path()).days, 99999);
        assert!(retention(dir.path()).configured);
        for odd in [
            r#"{"cleanupPeriodDays": "7"}"#,
            "{ not json",
            r#"{"cleanupPeriodDays": -1}"#,
        ] {
            fs::write(dir.path().join("settings.json"), odd).unwrap();
            assert_eq!(retention(dir.path()).days, 30, "{odd}");
        }
    }

    #[test]
    fn only_a_projects_own_transcripts_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("projects/-w");
        fs::create_dir_all(project.join("s1/subagents")).unwrap();
        fs::write(project.join("s1.jsonl"), "{}\n").unwrap();
        fs::write(project.join("s1/subagents/agent-a.jsonl"), "{}\n").unwrap();
        fs::write(project.join("notes.txt"), "x").unwrap();
        let found = transcripts(dir.path());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].session, "s1");
        assert!(found[0].modified_ms > 0);
        assert!(transcripts(&dir.path().join("absent")).is_empty());
    }
}
