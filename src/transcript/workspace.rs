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
//! half-written answer. A busy lock skips the whole step; the next hook tries again.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::paths::create_private_dir;

/// How long a session's transcript must have been left alone before another session in the
/// workspace closes it: longer than an agent's pause between two lines of one answer.
pub const IDLE_BEFORE_CLOSE: Duration = Duration::from_secs(60);

/// How many sessions one workspace file remembers; the oldest is forgotten first.
pub const MAX_SESSIONS: usize = 16;

/// How long a hook waits for the workspace lock before skipping the step.
const LOCK_WAIT: Duration = Duration::from_millis(20);

/// Version of the workspace file; a file of another version counts as empty.
const STATE_VERSION: u32 = 1;

/// One session seen in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
            crate::lock::exclusive(&state_dir.join(format!("{name}.lock")), LOCK_WAIT)?
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

    /// The sessions other than `current` whose transcripts have been idle for
    /// [`IDLE_BEFORE_CLOSE`] at `now`, oldest seen first. A session whose transcript is gone
    /// is forgotten: there is nothing left to close.
    pub fn idle_others(&mut self, current: &str, now: SystemTime) -> Vec<SeenSession> {
        let mut idle = Vec::new();
        self.state.sessions.retain(|seen| {
            if seen.session == current {
                return true;
            }
            match std::fs::metadata(&seen.transcript).and_then(|m| m.modified()) {
                Ok(modified) => {
                    if now.duration_since(modified).unwrap_or_default() >= IDLE_BEFORE_CLOSE {
                        idle.push(seen.clone());
                    }
                    true
                }
                Err(_) => false,
            }
        });
        idle
    }

    /// Notes `seen` (the session of the running hook), first sight only: a file that changes
    /// on every hook would cost every hook a rename.
    pub fn note(&mut self, seen: SeenSession) {
        match self
            .state
            .sessions
            .iter_mut()
            .find(|s| s.session == seen.session)
        {
            Some(known) if known.transcript == seen.transcript => {}
            Some(known) => *known = seen,
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

    /// Writes the file when it changed, and releases the lock.
    pub fn save(self) -> io::Result<()> {
        if self.state == self.loaded {
            return Ok(());
        }
        let bytes = serde_json::to_vec(&self.state).map_err(io::Error::other)?;
        crate::paths::replace_private_file(&self.path, &bytes)
    }
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
        }
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
        let idle = ws.idle_others("new", SystemTime::now());
        assert_eq!(idle, vec![seen("old", &old)]);
        // The session whose transcript is gone is forgotten; the current one is never idle.
        assert_eq!(ws.sessions().len(), 2);
        assert!(ws.idle_others("old", SystemTime::now()).is_empty());
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
