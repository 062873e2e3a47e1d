//! The sessions seen lately in one workspace: `<state dir>/ws-<hash of the cwd>.json`, guarded
//! by `ws-<hash>.lock`.
//!
//! Why: a session whose Stop never fires (VS Code) leaves its last turn in its transcript
//! cursor until a next prompt completes it, and a session that also ends without a SessionEnd
//! (the window closed, the editor quit) never gets that prompt. The next hook of a later
//! session in the same workspace finds the earlier session here and closes its cursor
//! ([`Tracker::close`](super::Tracker::close)), which records that turn once: the cursor's
//! recorded ids keep it from being recorded again by anyone.
//!
//! Only a session whose transcript has been idle for [`IDLE_BEFORE_CLOSE`] is closed: two
//! sessions may run side by side in one workspace, and closing one mid-turn would record a
//! half-written answer. A session that has ended by its agent's word but whose transcript is
//! written after its last hook (Copilot CLI's `sessionEnd`: [`SeenSession::ended_ms`]) is
//! closed sooner, once its transcript has been quiet for [`QUIET_AFTER_END`]; one whose
//! transcript does not exist yet (Copilot CLI creates it when it first flushes, after the last
//! hook of a short session) is waited for as long as an idle one. A running
//! `cmstore ingest` closes due sessions too (its sweep), with the same rule ([`due`]). A busy
//! lock skips the whole step; the next hook tries again.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::files::paths::create_private_dir;

/// How long a session's transcript must have been left alone before another session in the
/// workspace closes it: longer than an agent's pause between two lines of one answer.
pub const IDLE_BEFORE_CLOSE: Duration = Duration::from_secs(60);

/// How long the transcript of a session that has ended (its `sessionEnd` fired) must have been
/// quiet, and the end that long ago, before the session is closed: Copilot CLI writes the
/// session's last lines a few milliseconds after that hook, as it exits.
pub const QUIET_AFTER_END: Duration = Duration::from_secs(3);

/// Replaces [`IDLE_BEFORE_CLOSE`] (seconds, a decimal number).
pub const IDLE_ENV: &str = "CMSTORE_CLOSE_IDLE_SECS";

/// Replaces [`QUIET_AFTER_END`] (seconds, a decimal number).
pub const QUIET_ENV: &str = "CMSTORE_CLOSE_QUIET_SECS";

/// How many sessions one workspace file remembers; the oldest is forgotten first.
pub const MAX_SESSIONS: usize = 16;

/// How long a hook waits for the workspace lock before skipping the step.
const LOCK_WAIT: Duration = Duration::from_millis(20);

/// Version of the workspace file; a file of another version counts as empty.
const STATE_VERSION: u32 = 1;

/// One session seen in the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenSession {
    /// The session id (also its transcript cursor's key).
    pub session: String,
    /// Its transcript.
    pub transcript: String,
    /// The agent, as written in queue lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The queue line's `participant` the session's lines carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub participant: Option<String>,
    /// When its agent said it ended (epoch ms), for an agent that writes the transcript after
    /// that hook (Copilot CLI): the session is closed once the transcript is quiet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<i64>,
    /// When a hook noted the session (epoch ms; first sight, or its end or resumption): a
    /// transcript that does not exist yet is waited for from then (see [`due`]). `None` in a
    /// file written before cmstore kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noted_ms: Option<i64>,
}

/// The waits before a session is closed: [`IDLE_BEFORE_CLOSE`] and [`QUIET_AFTER_END`], or
/// what [`IDLE_ENV`] and [`QUIET_ENV`] say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// A session whose transcript has been left alone this long is closed.
    pub idle: Duration,
    /// An ended session whose transcript (and end) is this old is closed.
    pub quiet_after_end: Duration,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            idle: IDLE_BEFORE_CLOSE,
            quiet_after_end: QUIET_AFTER_END,
        }
    }
}

impl Thresholds {
    /// The defaults, each replaced by its variable when that holds a number of seconds
    /// (anything else is ignored).
    pub fn from_env() -> Thresholds {
        Thresholds::from_vars(crate::support::env::var)
    }

    /// [`Thresholds::from_env`] with the variables read by `var`.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Thresholds {
        let secs = |name: &str, default: Duration| {
            var(name)
                .and_then(|v| v.trim().parse::<f64>().ok())
                .and_then(|s| Duration::try_from_secs_f64(s).ok())
                .unwrap_or(default)
        };
        Thresholds {
            idle: secs(IDLE_ENV, IDLE_BEFORE_CLOSE),
            quiet_after_end: secs(QUIET_ENV, QUIET_AFTER_END),
        }
    }
}

/// What to do about a noted session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// Close it now: its last turn is written.
    Close,
    /// Not yet: it may still be writing.
    Wait,
    /// Its transcript is gone: nothing is left to close.
    Forget,
}

/// Whether `seen`, whose transcript was last modified at `modified` (`None`: there is no
/// such file), is due to be closed at `now`: an ended session once the transcript and the end
/// are both [`Thresholds::quiet_after_end`] old, any other once the transcript is
/// [`Thresholds::idle`] old. A missing transcript is forgotten once the session's last note
/// (its end, or when a hook noted it) is [`Thresholds::idle`] old, and waited for until then.
/// A clock that went back counts as no time passed.
pub fn due(
    seen: &SeenSession,
    modified: Option<SystemTime>,
    now: SystemTime,
    thresholds: Thresholds,
) -> Due {
    let since = |ms: i64| {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64);
        now.duration_since(t).unwrap_or_default()
    };
    let Some(modified) = modified else {
        // Why wait: Copilot CLI creates events.jsonl when it first flushes, which in a short
        // session is after its last hook (`sessionEnd`); a sweep in between that forgot the
        // session would lose its only turn.
        let noted = seen.ended_ms.max(seen.noted_ms);
        return match noted {
            Some(ms) if since(ms) < thresholds.idle => Due::Wait,
            _ => Due::Forget,
        };
    };
    let quiet = now.duration_since(modified).unwrap_or_default();
    let waited = match seen.ended_ms {
        Some(ended) => quiet.min(since(ended)) >= thresholds.quiet_after_end,
        None => quiet >= thresholds.idle,
    };
    if waited {
        Due::Close
    } else {
        Due::Wait
    }
}

/// The modification time of `transcript`; `None` when it is gone.
fn modified(transcript: &str) -> Option<SystemTime> {
    std::fs::metadata(transcript)
        .and_then(|m| m.modified())
        .ok()
}

/// The file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct State {
    v: u32,
    cwd: String,
    sessions: Vec<SeenSession>,
}

/// A locked, loaded workspace file.
#[derive(Debug)]
pub struct Workspace {
    path: PathBuf,
    state: State,
    loaded: State,
    _lock: File,
}

impl Workspace {
    /// Locks and loads the file of the workspace `cwd`. `Ok(None)` when another hook holds it.
    pub fn open(state_dir: &Path, cwd: &str) -> io::Result<Option<Workspace>> {
        create_private_dir(state_dir)?;
        let name = format!("ws-{:016x}", super::cursor::fnv1a(cwd.as_bytes()));
        let Some(lock) =
            crate::files::lock::exclusive(&state_dir.join(format!("{name}.lock")), LOCK_WAIT)?
        else {
            return Ok(None);
        };
        let path = state_dir.join(format!("{name}.json"));
        let loaded = std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<State>(&bytes).ok())
            .filter(|s| s.v == STATE_VERSION && s.cwd == cwd)
            .unwrap_or_else(|| State {
                v: STATE_VERSION,
                cwd: cwd.to_string(),
                sessions: Vec::new(),
            });
        Ok(Some(Workspace {
            path,
            state: loaded.clone(),
            loaded,
            _lock: lock,
        }))
    }

    /// The sessions other than `current` due to be closed at `now` ([`due`]), oldest seen
    /// first. A session whose transcript has not appeared for as long as an idle one would be
    /// closed after is forgotten: there is nothing to close.
    pub fn due_others(
        &mut self,
        current: &str,
        now: SystemTime,
        thresholds: Thresholds,
    ) -> Vec<SeenSession> {
        let mut closing = Vec::new();
        self.state.sessions.retain(|seen| {
            if seen.session == current {
                return true;
            }
            match due(seen, modified(&seen.transcript), now, thresholds) {
                Due::Close => closing.push(seen.clone()),
                Due::Wait => {}
                Due::Forget => return false,
            }
            true
        });
        closing
    }

    /// Notes `seen` (the session of the running hook), first sight only (a file that changes
    /// on every hook would cost every hook a rename), and when it ended or went on after an
    /// end (resumed). A hook that knows no transcript keeps the one noted.
    pub fn note(&mut self, mut seen: SeenSession) {
        match self
            .state
            .sessions
            .iter_mut()
            .find(|s| s.session == seen.session)
        {
            Some(known)
                if (seen.transcript.is_empty() || known.transcript == seen.transcript)
                    && known.ended_ms.is_some() == seen.ended_ms.is_some() => {}
            Some(known) => {
                if seen.transcript.is_empty() {
                    seen.transcript = std::mem::take(&mut known.transcript);
                }
                *known = seen;
            }
            None if seen.transcript.is_empty() => {}
            None => {
                self.state.sessions.push(seen);
                let excess = self.state.sessions.len().saturating_sub(MAX_SESSIONS);
                self.state.sessions.drain(..excess);
            }
        }
    }

    /// Forgets `session`: its last turn was recorded (it was closed, or ended itself).
    pub fn forget(&mut self, session: &str) {
        self.state.sessions.retain(|s| s.session != session);
    }

    /// The sessions the file names, in the order first seen.
    pub fn sessions(&self) -> &[SeenSession] {
        &self.state.sessions
    }

    /// The workspace's folder (the cwd its sessions ran in).
    pub fn cwd(&self) -> &str {
        &self.state.cwd
    }

    /// Writes the file when it changed, and releases the lock.
    pub fn save(self) -> io::Result<()> {
        if self.state == self.loaded {
            return Ok(());
        }
        let bytes = serde_json::to_vec(&self.state).map_err(io::Error::other)?;
        crate::files::paths::replace_private_file(&self.path, &bytes)
    }
}

/// The folders whose workspace file in `state_dir` names a session that `keep` accepts and
/// that is due at `now` (or to be forgotten, its transcript long missing): read without the
/// locks (a file is replaced whole, by rename), so an idle sweep costs a directory listing
/// and a read per workspace. The caller opens each with [`Workspace::open`] and decides again
/// under the lock.
pub fn with_due_sessions(
    state_dir: &Path,
    now: SystemTime,
    thresholds: Thresholds,
    keep: impl Fn(&SeenSession) -> bool,
) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(state_dir) else {
        return Vec::new();
    };
    let mut folders = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with("ws-") && name.ends_with(".json")) {
            continue;
        }
        let Some(state) = std::fs::read(entry.path())
            .ok()
            .and_then(|bytes| serde_json::from_slice::<State>(&bytes).ok())
            .filter(|s| s.v == STATE_VERSION)
        else {
            continue;
        };
        let any_due = state.sessions.iter().any(|seen| {
            keep(seen) && due(seen, modified(&seen.transcript), now, thresholds) != Due::Wait
        });
        if any_due {
            folders.push(state.cwd);
        }
    }
    folders
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(session: &str, transcript: &Path) -> SeenSession {
        SeenSession {
            session: session.into(),
            transcript: transcript.display().to_string(),
            agent: Some("vscode".into()),
            participant: None,
            ended_ms: None,
            noted_ms: None,
        }
    }

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn a_session_is_due_once_idle_or_quiet_after_its_end() {
        let t = Thresholds::default();
        let mut s = seen("s", Path::new("/t"));
        // Running: 60 s of an idle transcript.
        assert_eq!(due(&s, Some(at(1000)), at(1059), t), Due::Wait);
        assert_eq!(due(&s, Some(at(1000)), at(1060), t), Due::Close);
        assert_eq!(due(&s, None, at(1000), t), Due::Forget);
        // Ended at 1000 s: 3 s of quiet after both the end and the last write.
        s.ended_ms = Some(1_000_000);
        assert_eq!(due(&s, Some(at(990)), at(1002), t), Due::Wait);
        assert_eq!(due(&s, Some(at(990)), at(1003), t), Due::Close);
        // Written after the end (Copilot CLI's last lines): quiet counts from that write.
        assert_eq!(due(&s, Some(at(1001)), at(1003), t), Due::Wait);
        assert_eq!(due(&s, Some(at(1001)), at(1004), t), Due::Close);
        // A clock that went back waits.
        assert_eq!(due(&s, Some(at(1001)), at(900), t), Due::Wait);
        let now = Thresholds {
            idle: Duration::ZERO,
            quiet_after_end: Duration::ZERO,
        };
        assert_eq!(due(&s, Some(at(1001)), at(1001), now), Due::Close);
    }

    #[test]
    fn a_transcript_not_written_yet_is_waited_for_from_the_last_note() {
        let t = Thresholds::default();
        let mut s = seen("s", Path::new("/not-yet"));
        // A note from before cmstore kept the time: forgotten, as it always was.
        assert_eq!(due(&s, None, at(1000), t), Due::Forget);
        // Noted at 1000 s (Copilot CLI's agentStop, the file not flushed yet).
        s.noted_ms = Some(1_000_000);
        assert_eq!(due(&s, None, at(1001), t), Due::Wait);
        assert_eq!(due(&s, None, at(1059), t), Due::Wait);
        assert_eq!(due(&s, None, at(1060), t), Due::Forget);
        // Its end at 1030 s, however soon quiet_after_end is, waits a whole idle from then.
        s.ended_ms = Some(1_030_000);
        let quick = Thresholds {
            quiet_after_end: Duration::ZERO,
            ..t
        };
        assert_eq!(due(&s, None, at(1060), quick), Due::Wait);
        assert_eq!(due(&s, None, at(1090), quick), Due::Forget);
        // Once the file is there, the usual rule: quiet after the end.
        assert_eq!(due(&s, Some(at(1031)), at(1031), quick), Due::Close);
        assert_eq!(due(&s, Some(at(1031)), at(1033), t), Due::Wait);
    }

    #[test]
    fn thresholds_come_from_the_environment_when_they_are_numbers() {
        let t = Thresholds::from_vars(|name| match name {
            QUIET_ENV => Some("0.25".into()),
            IDLE_ENV => Some("soon".into()),
            _ => None,
        });
        assert_eq!(t.quiet_after_end, Duration::from_millis(250));
        assert_eq!(t.idle, IDLE_BEFORE_CLOSE);
    }

    #[test]
    fn ending_resuming_and_a_hook_without_a_transcript_update_the_note() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = Workspace::open(dir.path(), "/r").unwrap().unwrap();
        let mut bare = seen("s", Path::new(""));
        ws.note(bare.clone());
        assert!(
            ws.sessions().is_empty(),
            "nothing to close without a transcript"
        );
        ws.note(seen("s", Path::new("/t")));
        bare.ended_ms = Some(5);
        ws.note(bare.clone());
        assert_eq!(ws.sessions()[0].ended_ms, Some(5));
        assert_eq!(ws.sessions()[0].transcript, "/t");
        bare.ended_ms = None;
        ws.note(bare);
        assert_eq!(ws.sessions(), [seen("s", Path::new("/t"))]);
    }

    #[test]
    fn the_sweep_finds_the_folders_with_a_due_session() {
        let dir = tempfile::tempdir().unwrap();
        let transcript = dir.path().join("t.jsonl");
        std::fs::write(&transcript, "").unwrap();
        let mut ws = Workspace::open(dir.path(), "/done").unwrap().unwrap();
        let mut ended = seen("a", &transcript);
        ended.ended_ms = Some(0);
        ws.note(ended);
        ws.save().unwrap();
        let mut ws = Workspace::open(dir.path(), "/busy").unwrap().unwrap();
        ws.note(seen("b", &transcript));
        ws.save().unwrap();
        let later = SystemTime::now() + Duration::from_secs(10);
        let t = Thresholds::default();
        let all = |_: &SeenSession| true;
        assert_eq!(with_due_sessions(dir.path(), later, t, all), ["/done"]);
        let mut folders = with_due_sessions(dir.path(), later + IDLE_BEFORE_CLOSE, t, all);
        folders.sort();
        assert_eq!(folders, ["/busy", "/done"]);
        let ended = |s: &SeenSession| s.ended_ms.is_some();
        let folders = with_due_sessions(dir.path(), later + IDLE_BEFORE_CLOSE, t, ended);
        assert_eq!(folders, ["/done"]);
        assert!(with_due_sessions(&dir.path().join("none"), later, t, all).is_empty());
    }

    #[test]
    fn remembers_sessions_and_names_the_idle_ones() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.jsonl");
        let busy = dir.path().join("busy.jsonl");
        std::fs::write(&old, "").unwrap();
        std::fs::write(&busy, "").unwrap();
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(120))
            .unwrap();
        let mut ws = Workspace::open(dir.path(), "/repo").unwrap().unwrap();
        ws.note(seen("old", &old));
        ws.note(seen("busy", &busy));
        ws.note(seen("gone", &dir.path().join("missing.jsonl")));
        ws.save().unwrap();

        let mut ws = Workspace::open(dir.path(), "/repo").unwrap().unwrap();
        assert_eq!(ws.sessions().len(), 3);
        let t = Thresholds::default();
        let idle = ws.due_others("new", SystemTime::now(), t);
        assert_eq!(idle, vec![seen("old", &old)]);
        // The session whose transcript is gone is forgotten; the current one is never idle.
        assert_eq!(ws.sessions().len(), 2);
        assert!(ws.due_others("old", SystemTime::now(), t).is_empty());
        ws.forget("old");
        assert_eq!(ws.sessions(), [seen("busy", &busy)]);
    }

    #[test]
    fn another_workspace_has_its_own_file_and_a_held_lock_skips() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = Workspace::open(dir.path(), "/a").unwrap().unwrap();
        a.note(seen("s", Path::new("/t")));
        assert!(Workspace::open(dir.path(), "/a").unwrap().is_none());
        let b = Workspace::open(dir.path(), "/b").unwrap().unwrap();
        assert!(b.sessions().is_empty());
        a.save().unwrap();
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, 3, "two lock files and one workspace file");
    }

    #[test]
    fn keeps_at_most_max_sessions_and_rewrites_nothing_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let mut ws = Workspace::open(dir.path(), "/r").unwrap().unwrap();
        for i in 0..MAX_SESSIONS + 3 {
            ws.note(seen(&format!("s{i}"), Path::new("/t")));
        }
        assert_eq!(ws.sessions().len(), MAX_SESSIONS);
        assert_eq!(ws.sessions()[0].session, "s3");
        ws.save().unwrap();
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "json"))
            .unwrap();
        let before = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut ws = Workspace::open(dir.path(), "/r").unwrap().unwrap();
        ws.note(seen("s5", Path::new("/t")));
        ws.save().unwrap();
        assert_eq!(
            std::fs::metadata(&file).unwrap().modified().unwrap(),
            before
        );
    }
}
