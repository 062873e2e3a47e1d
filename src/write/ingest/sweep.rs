//! The sweep: a running ingest closes the sessions its workspace files name
//! (`<state dir>/ws-*.json`, [`Workspace`]) that are due, and appends their last turns to the
//! queue as synthetic Stops, the lines a later hook in the same folder would have written.
//!
//! Why: Copilot CLI writes a turn's answer to its transcript only after its last hook
//! (`sessionEnd`) has run, so no hook can record it; and a VS Code session whose window closed
//! leaves its last turn unrecorded until another session's hook comes along. The sweep runs
//! between passes (follow mode) and after the pass of `--once`, with the hooks' own rule
//! ([`transcript::due`]): an ended session once its transcript has been quiet for a few
//! seconds, a VS Code or Copilot CLI session once it has been idle for a minute (ten times that
//! while its last tool call has no result: a long command, not a closed window). Claude Code's
//! `Stop` records every turn itself, so its idle sessions are left to the hooks: closing one
//! while a long tool call runs would record half a turn.
//!
//! The lines go through the queue (its own append, under the queue lock, 0600), so the queue
//! stays the source of truth and the ContextManager extension sees them too.
//!
//! A turn is recorded once, whatever is killed when. For each session the sweep takes its
//! cursor's lock, reads what the cursor had not recorded, then ingests the queue to its end
//! and drops every turn the store already holds: a hook or an earlier sweep that appended a
//! turn and died before saving the cursor left that turn in the queue, and so, after the
//! pass, in the store. Only then are the lines appended, and only after the append are the
//! cursors saved and the sessions forgotten. A kill between the append and the saves leaves
//! the turns unmarked in the cursor, and the next sweep finds them in the store.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, SystemTime};

use anyhow::Context;

use super::Ingester;
use crate::config::Config;
use crate::files::debug_log::DebugLog;
use crate::files::paths::Paths;
use crate::files::transcript::{self, SeenSession, Thresholds, Tracker, Workspace};
use crate::hook::capture;
use crate::model::agents::Agent;
use crate::model::queue_line::usage::UsageRecord;
use crate::model::redact::Redactor;
use crate::model::transcript::Turn;

/// How often follow mode sweeps.
pub const EVERY: Duration = Duration::from_secs(1);

/// A running session whose last turn has a tool call without a result may be waiting on a
/// long command rather than gone: it is closed only once idle this many times the usual wait.
pub const IN_FLIGHT_FACTOR: u32 = 10;

/// What one sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Sessions closed (their cursors saved, their notes forgotten).
    pub sessions: usize,
    /// Lines appended to the queue: the closed sessions' turns, and their `Usage` lines.
    pub lines: usize,
    /// Turns read again that the store already held (a writer died before saving a cursor).
    pub already_stored: usize,
    /// What went wrong on the way; the rest of the sweep went on.
    pub problems: Vec<String>,
}

/// A session being closed: its cursor, locked, and the turns it had not recorded.
struct Closing {
    cwd: String,
    seen: SeenSession,
    cursor: Tracker,
    turns: Vec<Turn>,
}

/// Whether the sweep closes `seen` when it is due: an ended session (its agent writes the
/// transcript after its last hook), or a session of an agent whose turn end no hook reliably
/// records ([`Profile::closed_when_idle`](crate::model::agents::Profile): VS Code, Copilot CLI).
pub fn sweeps(seen: &SeenSession) -> bool {
    seen.ended_ms.is_some()
        || seen
            .agent
            .as_deref()
            .and_then(Agent::from_name)
            .is_some_and(|agent| agent.profile().closed_when_idle)
}

/// Closes every due session of the workspace files in `paths`' state dir at `now` and appends
/// their last turns to the ingester's queue (see the module's notes for the order).
pub fn sweep(
    ingester: &mut Ingester,
    paths: &Paths,
    thresholds: Thresholds,
    now: SystemTime,
) -> anyhow::Result<Swept> {
    let mut swept = Swept::default();
    let mut closing = open_due(&paths.state_dir(), now, thresholds, &mut swept);
    if closing.is_empty() {
        return Ok(swept);
    }
    ingester
        .pass(&AtomicBool::new(false), &mut |_| {})
        .context("cannot ingest the queue before closing sessions")?;
    drop_stored(ingester, &mut closing, &mut swept)?;
    let (config, problems) = Config::load_for(paths);
    let config_error = crate::config::error_note(&problems);
    let mut log = DebugLog::default();
    let now_ms = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let mut entries = Vec::new();
    for c in &mut closing {
        let mut own = capture::closed_entries(
            &config,
            config_error.as_deref(),
            (&c.cwd, &c.seen),
            &c.turns,
            now_ms,
            &mut log,
        );
        let left = capture::carry_usage(&mut c.cursor, own.last_mut());
        let left = unstored_usage(ingester, left)?;
        if !left.is_empty() {
            own.push(capture::usage_entry(
                &c.seen,
                left,
                config_error.as_deref(),
                now_ms,
            ));
        }
        entries.append(&mut own);
    }
    let lines = capture::queue_lines(
        &mut entries,
        0,
        crate::files::queue::read::DEFAULT_MAX_LINE_BYTES,
        &mut log,
    );
    if !lines.is_empty() {
        crate::files::queue::append_batch(ingester.queue(), &lines)
            .with_context(|| format!("cannot append to {}", ingester.queue().display()))?;
    }
    swept.lines = lines.len();
    finish(&paths.state_dir(), closing, &config, &mut swept);
    Ok(swept)
}

/// The due sessions the sweep closes, each with its cursor locked and read to its end. A busy
/// workspace file or cursor leaves its sessions for the next sweep.
fn open_due(
    state_dir: &Path,
    now: SystemTime,
    thresholds: Thresholds,
    swept: &mut Swept,
) -> Vec<Closing> {
    let mut closing = Vec::new();
    for cwd in transcript::with_due_sessions(state_dir, now, thresholds, sweeps) {
        let mut workspace = match Workspace::open(state_dir, &cwd) {
            Ok(Some(workspace)) => workspace,
            Ok(None) => continue,
            Err(err) => {
                swept.problems.push(format!("workspace of {cwd}: {err}"));
                continue;
            }
        };
        // No session is the running one here: every due one is closed.
        let due = workspace.due_others("", now, thresholds);
        // Saved now: the notes of transcripts that are gone are dropped.
        if let Err(err) = workspace.save() {
            swept.problems.push(format!("workspace of {cwd}: {err}"));
        }
        for seen in due.into_iter().filter(sweeps) {
            if let Some((cursor, turns)) = close(state_dir, &seen, swept) {
                if seen.ended_ms.is_none()
                    && in_flight(&turns)
                    && idle_for(&seen, now) < thresholds.idle * IN_FLIGHT_FACTOR
                {
                    // Dropped unsaved: nothing read is marked, the next sweep looks again.
                    continue;
                }
                closing.push(Closing {
                    cwd: cwd.clone(),
                    seen,
                    cursor,
                    turns,
                });
            }
        }
    }
    closing
}

/// The cursor of `seen`, locked, and the turns it had not recorded (the trailing one
/// included); `None` when a hook holds it or it cannot be read.
fn close(state_dir: &Path, seen: &SeenSession, swept: &mut Swept) -> Option<(Tracker, Vec<Turn>)> {
    let path = Path::new(&seen.transcript);
    let mut cursor = match Tracker::open(state_dir, &seen.session, path) {
        Ok(Some(cursor)) => cursor,
        Ok(None) => return None,
        Err(err) => {
            swept
                .problems
                .push(format!("session {}: {err}", seen.session));
            return None;
        }
    };
    match cursor.close() {
        Ok(turns) => Some((cursor, turns)),
        Err(err) => {
            swept
                .problems
                .push(format!("session {}: {err}", seen.session));
            None
        }
    }
}

/// True when the last of `turns` has a tool call whose result the transcript does not hold.
fn in_flight(turns: &[Turn]) -> bool {
    turns
        .last()
        .and_then(|t| t.tool_calls.last())
        .is_some_and(|call| call.output.is_empty())
}

/// How long the transcript of `seen` has been left alone at `now`.
fn idle_for(seen: &SeenSession, now: SystemTime) -> Duration {
    std::fs::metadata(&seen.transcript)
        .and_then(|m| m.modified())
        .map(|modified| now.duration_since(modified).unwrap_or_default())
        .unwrap_or_default()
}

/// Drops from `closing` every turn whose `(session, turn id)` the store holds already.
fn drop_stored(
    ingester: &Ingester,
    closing: &mut [Closing],
    swept: &mut Swept,
) -> anyhow::Result<()> {
    let conn = ingester.store().conn()?;
    let mut known =
        conn.prepare_cached("SELECT 1 FROM turns WHERE session_id = ?1 AND turn_key = ?2 LIMIT 1")?;
    for c in closing.iter_mut() {
        let mut stored = HashSet::new();
        for turn in &c.turns {
            if let Some(id) = &turn.turn_id {
                if known.exists((&c.seen.session, id))? {
                    stored.insert(id.clone());
                }
            }
        }
        let before = c.turns.len();
        c.turns
            .retain(|t| t.turn_id.as_ref().is_none_or(|id| !stored.contains(id)));
        swept.already_stored += before - c.turns.len();
    }
    Ok(())
}

/// Of `records`, those the store lacks, or holds from an earlier line of the transcript (a
/// count still streaming): a session closed again after a sweep killed before saving its
/// cursor reads responses its turns' lines already carried, and needs no `Usage` line.
fn unstored_usage(
    ingester: &Ingester,
    records: Vec<UsageRecord>,
) -> anyhow::Result<Vec<UsageRecord>> {
    if records.is_empty() {
        return Ok(records);
    }
    let conn = ingester.store().conn()?;
    let mut final_count = conn.prepare_cached(
        "SELECT 1 FROM usage WHERE message_id = ?1 AND request_id = ?2 AND line_offset >= ?3",
    )?;
    let mut left = Vec::with_capacity(records.len());
    for record in records {
        let (message, request) = record.key();
        let offset = i64::try_from(record.offset).unwrap_or(i64::MAX);
        if !final_count.exists((message, request, offset))? {
            left.push(record);
        }
    }
    Ok(left)
}

/// After the append: saves each cursor (its open turn scrubbed of secrets) and forgets each
/// closed session in its workspace file.
fn finish(state_dir: &Path, closing: Vec<Closing>, config: &Config, swept: &mut Swept) {
    let redactor = Redactor::new(&config.redact);
    let mut forget: Vec<(String, String)> = Vec::new();
    for mut c in closing {
        c.cursor.scrub_open_turn(|text| {
            if let std::borrow::Cow::Owned(clean) = redactor.redact(text) {
                *text = clean;
            }
        });
        match c.cursor.save() {
            Ok(()) => {
                swept.sessions += 1;
                forget.push((c.cwd, c.seen.session));
            }
            Err(err) => swept
                .problems
                .push(format!("session {}: {err}", c.seen.session)),
        }
    }
    forget.sort();
    for (cwd, sessions) in group(forget) {
        match Workspace::open(state_dir, &cwd) {
            Ok(Some(mut workspace)) => {
                for session in &sessions {
                    workspace.forget(session);
                }
                if let Err(err) = workspace.save() {
                    swept.problems.push(format!("workspace of {cwd}: {err}"));
                }
            }
            // Busy: the next sweep finds these sessions due again, and closes them with
            // nothing left to record.
            Ok(None) => {}
            Err(err) => swept.problems.push(format!("workspace of {cwd}: {err}")),
        }
    }
}

/// `(cwd, session)` pairs, sorted, as each cwd with its sessions.
fn group(pairs: Vec<(String, String)>) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for (cwd, session) in pairs {
        match groups.last_mut() {
            Some((last, sessions)) if *last == cwd => sessions.push(session),
            _ => groups.push((cwd, vec![session])),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(agent: &str, ended_ms: Option<i64>) -> SeenSession {
        SeenSession {
            session: "s".into(),
            transcript: "/t".into(),
            agent: Some(agent.into()),
            participant: None,
            ended_ms,
            noted_ms: None,
        }
    }

    #[test]
    fn idle_claude_sessions_are_left_to_the_hooks() {
        // Claude Code's Stop records every turn: an idle one may be in a long tool call.
        assert!(!sweeps(&seen("claude", None)));
        assert!(sweeps(&seen("claude", Some(1))));
        assert!(sweeps(&seen("vscode", None)));
        assert!(sweeps(&seen("copilot", None)));
        assert!(!sweeps(&seen("qoder", None)));
    }

    #[test]
    fn a_turn_waiting_on_a_tool_result_is_in_flight() {
        let call = |output: &str| crate::model::transcript::ToolCallRecord {
            tool_name: "bash".into(),
            input: "{}".into(),
            output: output.into(),
        };
        let turn = |calls| Turn {
            user: "q".into(),
            tool_calls: calls,
            ..Turn::default()
        };
        assert!(!in_flight(&[]));
        assert!(!in_flight(&[turn(vec![])]));
        assert!(!in_flight(&[turn(vec![call(""), call("done")])]));
        assert!(in_flight(&[turn(vec![call("done"), call("")])]));
        // Only the last turn counts: an earlier one is complete.
        assert!(!in_flight(&[turn(vec![call("")]), turn(vec![call("ok")])]));
    }

    #[test]
    fn closed_sessions_are_forgotten_per_folder() {
        let pairs = vec![
            ("/a".to_string(), "1".to_string()),
            ("/a".to_string(), "2".to_string()),
            ("/b".to_string(), "3".to_string()),
        ];
        assert_eq!(
            group(pairs),
            vec![
                ("/a".to_string(), vec!["1".to_string(), "2".to_string()]),
                ("/b".to_string(), vec!["3".to_string()]),
            ]
        );
    }
}
