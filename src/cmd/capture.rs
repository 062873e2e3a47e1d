//! `cmstore capture`: the hook handler every agent runs on every event.
//!
//! Reads the event on stdin, appends its queue line(s) in one locked write, and prints the one
//! JSON object the agent expects. It never opens the database and never fails the agent: any
//! internal problem becomes a note in the debug log, and the exit code is 0 unless the hook
//! deliberately refuses an action of an agent that reads only the exit code (Windsurf: 2).
//!
//! This file is the shell: stdin, the clock, the transcript cursor, the append, the cursor's
//! save and the reply's files. What an event records is decided by the planner in
//! [`crate::hook::capture`], which does no I/O.

use std::io::{self, IsTerminal, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use serde_json::Value;

use crate::config::Config;
use crate::files::debug_log::DebugLog;
use crate::files::paths::Paths;
use crate::files::transcript::{self, DiscoveryEnv, SeenSession, Tracker, Workspace};
use crate::hook::capture::{
    self, ContextFile, Hook, Location, Outcome, ReadKind, Reply, TranscriptRead, Turns,
};
use crate::hook::checks;
use crate::model::queue_line::usage::UsageRecord;
use crate::model::queue_line::QueueEntry;
use crate::model::redact::Redactor;
use crate::model::transcript::{codex_exit_code, FinalTurn, Turn};
use crate::model::wire::{reply, Agent};

/// Largest payload read from stdin; the rest is drained and the entry marked `truncated`.
pub const MAX_PAYLOAD_BYTES: usize = 16 * 1024 * 1024;

/// Longest queue line capture writes: ingest rejects longer ones.
const MAX_LINE_BYTES: usize = crate::files::queue::read::DEFAULT_MAX_LINE_BYTES;

/// Arguments of `cmstore capture`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Agent running the hook: claude, vscode, copilot, codex, gemini, qwen, cursor, qoder,
    /// droid, opencode, kilo, cline, windsurf, kiro, goose, kimi or auto (sniffed from the
    /// payload)
    #[arg(long, value_name = "AGENT", default_value = "auto")]
    pub agent: String,
    /// Event name; needed for Copilot CLI camelCase hooks, whose payload carries none
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

/// Runs the hook. Exits 0, or 2 when it refuses an action of an agent that reads only the exit
/// code ([`reply::deliver`]): a failing hook would break the agent.
pub fn run(paths: &Paths, args: Args) -> ExitCode {
    let started = Instant::now();
    let (config, problems) = Config::load_for(paths);
    let config_error = crate::config::error_note(&problems);
    let mut log = DebugLog::new(paths.debug_log(), config.debug);
    for problem in &problems {
        log.note(|| format!("config: {problem}"));
    }
    let flagged = Agent::from_flag(&args.agent).unwrap_or(Agent::Unknown);
    let (reply, agent) = panic::catch_unwind(AssertUnwindSafe(|| {
        capture(
            paths,
            &config,
            config_error.as_deref(),
            &args,
            started,
            &mut log,
        )
    }))
    .unwrap_or((reply::empty(), None));
    let delivery = reply::deliver(agent.unwrap_or(flagged), &reply);
    // A closed stdout or stderr is the agent's business; nothing useful can be done here.
    if let Some(line) = &delivery.stdout {
        let mut stdout = io::stdout().lock();
        let _ = writeln!(stdout, "{line}").and_then(|()| stdout.flush());
    }
    if let Some(line) = &delivery.stderr {
        let _ = writeln!(io::stderr().lock(), "{line}");
    }
    log.flush();
    ExitCode::from(delivery.exit_code)
}

/// What was read from stdin.
#[derive(Debug, Default)]
pub struct StdinPayload {
    /// The first [`MAX_PAYLOAD_BYTES`] bytes.
    pub bytes: Vec<u8>,
    /// Every byte the agent sent, kept or not.
    pub total_len: u64,
}

impl StdinPayload {
    /// True when the payload was longer than the limit and was cut.
    pub fn truncated(&self) -> bool {
        self.total_len > self.bytes.len() as u64
    }
}

/// Reads `reader` to EOF, keeping at most `limit` bytes. Reading everything matters: an agent
/// writing a large payload into a pipe nobody drains would block or get `EPIPE`.
pub fn read_payload(mut reader: impl Read, limit: usize) -> io::Result<StdinPayload> {
    let mut bytes = Vec::new();
    (&mut reader).take(limit as u64).read_to_end(&mut bytes)?;
    let rest = io::copy(&mut reader, &mut io::sink())?;
    Ok(StdinPayload {
        total_len: bytes.len() as u64 + rest,
        bytes,
    })
}

/// One hook run, in named steps: read stdin, plan, read the transcript, finish the plan,
/// append, save the cursor. Returns the reply to give and the agent it is for (`None` when
/// nothing told it: the `--agent` flag's is taken then).
fn capture(
    paths: &Paths,
    config: &Config,
    config_error: Option<&str>,
    args: &Args,
    started: Instant,
    log: &mut DebugLog,
) -> (Value, Option<Agent>) {
    let input = read_stdin(log);
    let cwd = std::env::current_dir()
        .ok()
        .map(|dir| dir.display().to_string());
    let session_vars = session_vars();
    let hook = Hook {
        bytes: &input.bytes,
        total_len: input.total_len,
        agent: &args.agent,
        event: args.event.as_deref(),
        now_ms: chrono::Utc::now().timestamp_millis(),
        config_error,
        cwd: cwd.as_deref(),
        session_vars: &session_vars,
    };
    let Some(mut plan) = capture::prepare(&hook, config, log) else {
        return (reply::empty(), None);
    };
    let agent = plan.agent();
    read_rollout_exit_code(&mut plan, log);
    read_cline_run(&mut plan, log);
    if plan.budget_due() {
        apply_budget(paths, &mut plan, hook.now_ms, log);
    }
    let checks = plan.take_checks();
    // The cursors are saved only once their turns are in the queue: saving first would mark
    // them recorded even when the append then fails, and they would never be written.
    let read_session = plan.transcript().map(|read| read.session.clone());
    let (mut tracker, turns) = match plan.transcript() {
        Some(read) => read_transcript(paths, read, log),
        None => (None, None),
    };
    let read_path = tracker
        .as_ref()
        .map(|t| t.transcript().display().to_string());
    let mut workspace = close_idle_sessions(paths, &mut plan, read_path, log);
    let ending = plan
        .workspace()
        .filter(|mark| mark.ending)
        .map(|mark| mark.seen.clone());
    let Outcome {
        mut entries,
        reply,
        notice,
        redactor,
    } = plan.finish(turns, log);
    // A line's usage is its session's: each cursor's rides on the last line of its session;
    // a session that ends or is closed without such a line gets a `Usage` line, as no later
    // hook of it would read its cursor.
    let now_ms = hook.now_ms;
    if let (Some(tracker), Some(session)) = (tracker.as_mut(), &read_session) {
        let left = carry_usage(tracker, last_of(&mut entries, session), log);
        match ending.filter(|seen| &seen.session == session) {
            Some(seen) if !left.is_empty() => {
                entries.push(capture::usage_entry(&seen, left, config_error, now_ms))
            }
            _ => tracker.keep_usage(left),
        }
    }
    if let Some(closing) = workspace.as_mut() {
        for (seen, cursor) in &mut closing.cursors {
            let left = carry_usage(cursor, last_of(&mut entries, &seen.session), log);
            if !left.is_empty() {
                entries.push(capture::usage_entry(seen, left, config_error, now_ms));
            }
        }
    }
    let mut reply = answer(paths, reply, log);
    if let Some(notice) = notice {
        reply = notice.told(reply);
    }
    let elapsed = started.elapsed().as_millis() as u64;
    let lines = capture::queue_lines(&mut entries, elapsed, MAX_LINE_BYTES, log);
    let appended = append(paths, &lines, tracker, workspace, &redactor, log);
    // After the append: the event's own line is in the queue before any check runs, so an
    // agent that kills its hook at its own time limit (Claude Code's PostToolUse has 15 s, a
    // security scan may take 30) loses the checks' results and feedback, never the event.
    let detached = match checks {
        Some(checks) => {
            let (feedback, detached, mut results) = enforce_checks(checks, log);
            // Results without their event's line (its append failed) would be orphans; the
            // agent still gets the feedback.
            if appended && !results.is_empty() {
                let elapsed = started.elapsed().as_millis() as u64;
                let lines = capture::queue_lines(&mut results, elapsed, MAX_LINE_BYTES, log);
                append(paths, &lines, None, None, &redactor, log);
            }
            if let Some(feedback) = feedback {
                reply = feedback;
            }
            detached
        }
        None => Vec::new(),
    };
    detach_checks(paths, detached, log);
    (reply, Some(agent))
}

/// The sessions the agents' own variables name in this process (Kiro's `KIRO_SESSION_ID`).
fn session_vars() -> Vec<(Agent, String)> {
    Agent::ALL
        .into_iter()
        .filter_map(|agent| {
            let name = agent.profile().session_env?;
            Some((agent, crate::support::env::var(name)?))
        })
        .collect()
}

/// Applies the `[budget]` limits to the event by the spend file (a missing or unreadable one
/// leaves every limit unknown: nothing is denied), and gives a warning due only if no earlier
/// hook of the session gave it in this window: its marker file, created once, holds that.
fn apply_budget(paths: &Paths, plan: &mut capture::Plan, now_ms: i64, log: &mut DebugLog) {
    let file = crate::files::spend::read(&paths.spend_file())
        .map_err(|why| log.note(|| format!("{why}: budgets unknown")))
        .ok();
    let config_file = paths.config.display().to_string();
    let Some(warning) = plan.apply_budget(file.as_ref(), now_ms, &config_file) else {
        return;
    };
    match crate::files::budget_marks::mark_once(&paths.state_dir(), &warning.marker) {
        Ok(true) => {
            log.note(|| format!("budget warning: {}", warning.text));
            plan.warn(warning);
        }
        Ok(false) => {}
        Err(err) => log.note(|| format!("budget warning not given: {err}")),
    }
}

/// Runs the enforce-mode checks here, each within its time limit; returns the feedback reply
/// when one failed, the audit-mode jobs left to run detached, and the results' entries.
fn enforce_checks(
    pending: capture::PendingChecks,
    log: &mut DebugLog,
) -> (
    Option<Value>,
    Vec<checks::Job>,
    Vec<crate::model::queue_line::QueueEntry>,
) {
    let (enforced, detached): (Vec<_>, Vec<_>) =
        pending.jobs.into_iter().partition(checks::Job::enforced);
    let mut entries = Vec::new();
    let mut records = Vec::new();
    for job in &enforced {
        let mut record = checks::run(job);
        log.note(|| {
            format!(
                "check {} ({} file(s)): {} in {} ms",
                record.name,
                job.files.len(),
                record.status,
                record.duration_ms
            )
        });
        record.blocked = record.failed() && reply::feedback_blocks(pending.agent);
        records.push(record.clone());
        let now = chrono::Utc::now().timestamp_millis();
        entries.push(checks::result_entry(job, record, now));
    }
    let feedback = checks::feedback(&records)
        .map(|reason| reply::tool_feedback(pending.agent, &pending.event, &reason));
    (feedback, detached, entries)
}

/// Hands each audit-mode job off: to the check runner of a following `cmstore ingest` when
/// one holds the queue's runner lock (the hook only writes the job file), else to a detached
/// `cmstore check run` of its own.
fn detach_checks(paths: &Paths, jobs: Vec<checks::Job>, log: &mut DebugLog) {
    if jobs.is_empty() {
        return;
    }
    let dir = checks::jobs_dir(&paths.state_dir());
    let jobs = jobs.into_iter().map(|job| checks::Job {
        queue: Some(paths.queue.clone()),
        ..job
    });
    if checks::detach::runner_alive(&paths.queue) {
        for job in jobs {
            match checks::detach::write_job(&job, &dir) {
                Ok(file) => log.note(|| {
                    format!(
                        "check {} left to ingest ({})",
                        job.kind.as_str(),
                        file.display()
                    )
                }),
                Err(err) => {
                    log.note(|| format!("check {} not handed off: {err}", job.kind.as_str()))
                }
            }
        }
        return;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(err) => {
            log.note(|| format!("checks not started: no path to cmstore: {err}"));
            return;
        }
    };
    for job in jobs {
        match checks::detach::spawn(&job, &dir, &exe, &paths.queue) {
            Ok(file) => {
                log.note(|| format!("check {} detached ({})", job.kind.as_str(), file.display()))
            }
            Err(err) => log.note(|| format!("check {} not started: {err}", job.kind.as_str())),
        }
    }
}

/// A Codex tool call's exit code from its rollout, when the plan asks for it; a rollout that
/// cannot be read leaves the call without one (a note in the debug log).
fn read_rollout_exit_code(plan: &mut capture::Plan, log: &mut DebugLog) {
    let Some((path, call_id)) = plan.rollout_lookup() else {
        return;
    };
    match codex_exit_code(Path::new(path), call_id) {
        Ok(Some(code)) => plan.set_exit_code(code),
        Ok(None) => log.note(|| format!("no exit code for {call_id} in the rollout")),
        Err(err) => log.note(|| format!("rollout unreadable: {err}")),
    }
}

/// At the end of a Cline run, what its session's files say of it: the prompt, the model and
/// the model calls' usage (Cline runs these hooks without waiting for them).
fn read_cline_run(plan: &mut capture::Plan, log: &mut DebugLog) {
    let Some((session, since)) = plan.cline_run_lookup() else {
        return;
    };
    let env = crate::support::env::path;
    let data = crate::files::transcript::cline::data_dir(
        env("CLINE_DATA_DIR"),
        env("CLINE_DIR"),
        crate::files::paths::user_home(),
    );
    let run = data.and_then(|data| crate::files::transcript::cline::run(&data, session, since));
    match run {
        Some(run) => plan.set_cline_run(run),
        None => log.note(|| format!("no files of Cline session {session}")),
    }
}

/// The workspace file, locked, and the cursors of the earlier sessions it closed: saved
/// after the append, like the event's own cursor.
struct Closing {
    workspace: Workspace,
    /// Each closed session and its cursor.
    cursors: Vec<(SeenSession, Tracker)>,
}

/// Closes the earlier sessions of the event's workspace that are due (idle, or quiet after
/// their end: `transcript::due`; their last turns go to the plan), and notes the event's
/// session, with `read_path` (the transcript its cursor read) when the payload named none.
/// `None` when the event has no workspace mark, or the workspace file is busy or unusable.
fn close_idle_sessions(
    paths: &Paths,
    plan: &mut capture::Plan,
    read_path: Option<String>,
    log: &mut DebugLog,
) -> Option<Closing> {
    let mut mark = plan.workspace()?.clone();
    if mark.seen.transcript.is_empty() {
        mark.seen.transcript = read_path.unwrap_or_default();
    }
    let state_dir = paths.state_dir();
    let mut workspace = match Workspace::open(&state_dir, &mark.cwd) {
        Ok(Some(workspace)) => workspace,
        Ok(None) => {
            log.note(|| "workspace file busy: earlier sessions not checked".into());
            return None;
        }
        Err(err) => {
            log.note(|| format!("workspace file unavailable: {err}"));
            return None;
        }
    };
    let mut cursors = Vec::new();
    let thresholds = transcript::Thresholds::from_env();
    for seen in workspace.due_others(&mark.seen.session, SystemTime::now(), thresholds) {
        match close_session(&state_dir, &seen, log) {
            Some((cursor, turns)) => {
                log.note(|| {
                    format!(
                        "closed idle session {}: {} turn(s)",
                        seen.session,
                        turns.len()
                    )
                });
                workspace.forget(&seen.session);
                cursors.push((seen.clone(), cursor));
                plan.add_closed(seen, turns);
            }
            None => workspace.forget(&seen.session),
        }
    }
    if mark.ending {
        workspace.forget(&mark.seen.session);
    } else {
        workspace.note(mark.seen);
    }
    Some(Closing { workspace, cursors })
}

/// The cursor of `seen` and the turns it had not recorded, its trailing one included. `None`
/// (and a note) when the cursor is held by a hook of that session (it is not idle after all:
/// it stays noted) or cannot be read.
fn close_session(
    state_dir: &Path,
    seen: &SeenSession,
    log: &mut DebugLog,
) -> Option<(Tracker, Vec<Turn>)> {
    let mut cursor = match Tracker::open(state_dir, &seen.session, Path::new(&seen.transcript)) {
        Ok(Some(cursor)) => cursor,
        Ok(None) => {
            log.note(|| format!("cursor of idle session {} busy: not closed", seen.session));
            return None;
        }
        Err(err) => {
            log.note(|| format!("cursor of idle session {} unavailable: {err}", seen.session));
            return None;
        }
    };
    match cursor.close() {
        Ok(turns) => Some((cursor, turns)),
        Err(err) => {
            log.note(|| format!("closing idle session {} failed: {err}", seen.session));
            None
        }
    }
}

/// The last of `entries` that belongs to `session`.
fn last_of<'e>(entries: &'e mut [QueueEntry], session: &str) -> Option<&'e mut QueueEntry> {
    entries
        .iter_mut()
        .rev()
        .find(|e| e.session_id.as_deref() == Some(session))
}

/// [`capture::carry_usage`], noted in the debug log.
fn carry_usage(
    tracker: &mut Tracker,
    last: Option<&mut QueueEntry>,
    log: &mut DebugLog,
) -> Vec<UsageRecord> {
    let left = capture::carry_usage(tracker, last);
    if !left.is_empty() {
        log.note(|| {
            format!(
                "usage of {} response(s) with no line of the session",
                left.len()
            )
        });
    }
    left
}

/// The payload on stdin; an unreadable stdin counts as an empty one.
fn read_stdin(log: &mut DebugLog) -> StdinPayload {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        eprintln!("cmstore capture: reading a hook payload from stdin (end with Ctrl-D)");
    }
    match read_payload(stdin.lock(), MAX_PAYLOAD_BYTES) {
        Ok(input) => input,
        Err(err) => {
            log.note(|| format!("stdin unreadable: {err}"));
            StdinPayload::default()
        }
    }
}

/// Appends the lines in one locked write; only then saves the transcript cursor, its open
/// turn scrubbed of secrets first. Whether the lines were written.
fn append(
    paths: &Paths,
    lines: &crate::files::queue::Batch,
    tracker: Option<Tracker>,
    closing: Option<Closing>,
    redactor: &Redactor,
    log: &mut DebugLog,
) -> bool {
    match crate::files::queue::append_batch(&paths.queue, lines) {
        Ok(report) => {
            let closing = closing.map_or((Vec::new(), None), |c| {
                (
                    c.cursors.into_iter().map(|(_, cursor)| cursor).collect(),
                    Some(c.workspace),
                )
            });
            for mut tracker in tracker.into_iter().chain(closing.0) {
                tracker.scrub_open_turn(|text| {
                    if let std::borrow::Cow::Owned(clean) = redactor.redact(text) {
                        *text = clean;
                    }
                });
                finish_tracker(tracker, log);
            }
            // After the cursors: a session forgotten here has had its last turn recorded.
            if let Some(Err(err)) = closing.1.map(Workspace::save) {
                log.note(|| format!("saving the workspace file failed: {err}"));
            }
            log.note(|| {
                format!(
                    "appended {} line(s), {} bytes{}",
                    lines.len(),
                    report.bytes,
                    if report.locked {
                        ""
                    } else {
                        " WITHOUT the lock"
                    }
                )
            });
            true
        }
        // The cursor is dropped unsaved: the next hook reads the same turns again.
        Err(err) => {
            log.note(|| format!("queue append failed: {err}"));
            false
        }
    }
}

/// The reply to print, with the text of the file it needs read from the home.
fn answer(paths: &Paths, reply: Reply, log: &mut DebugLog) -> Value {
    let text = reply.needs().and_then(|file| {
        let path = match file {
            ContextFile::SessionContext => paths.session_context(),
            ContextFile::KnowledgeIndex => paths.knowledge_index(),
        };
        read_text(&path, log)
    });
    reply.into_value(text.as_deref())
}

/// The text of `path`, or `None` when it is missing or unreadable.
fn read_text(path: &Path, log: &mut DebugLog) -> Option<String> {
    match std::fs::read(path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => {
            log.note(|| format!("cannot read {}: {err}", path.display()));
            None
        }
    }
}

/// Opens the transcript cursor `read` names, finding the session's transcript when the
/// payload gives none. `None` when there is no transcript, or the cursor is busy.
fn open_tracker(paths: &Paths, read: &TranscriptRead, log: &mut DebugLog) -> Option<Tracker> {
    let (path, how) = match &read.location {
        Location::Given(path) => (PathBuf::from(path), "given"),
        Location::Discover => {
            match transcript::discover(&read.session, &DiscoveryEnv::from_env()) {
                Some(found) => (found, "discovered"),
                None => {
                    log.note(|| format!("no transcript for session {}", read.session));
                    return None;
                }
            }
        }
    };
    log.note(|| format!("transcript ({how}) {}", path.display()));
    match Tracker::open(&paths.state_dir(), &read.key, &path) {
        Ok(Some(tracker)) => Some(tracker),
        Ok(None) => {
            log.note(|| "transcript cursor busy (another hook holds it): skipped".into());
            None
        }
        Err(err) => {
            log.note(|| format!("transcript cursor unavailable: {err}"));
            None
        }
    }
}

/// Opens the cursor and reads the transcript as `read` says. The cursor comes back, unsaved,
/// whenever it opened, the read failed or not.
fn read_transcript(
    paths: &Paths,
    read: &TranscriptRead,
    log: &mut DebugLog,
) -> (Option<Tracker>, Option<Turns>) {
    let Some(mut tracker) = open_tracker(paths, read, log) else {
        return (None, None);
    };
    let turns = read_turns(&mut tracker, read.kind, log);
    (Some(tracker), turns)
}

/// The read `kind` from the transcript; `None` (and a note) when it failed.
fn read_turns(tracker: &mut Tracker, kind: ReadKind, log: &mut DebugLog) -> Option<Turns> {
    let (turns, what) = match kind {
        ReadKind::Harvest => (tracker.harvest().map(Turns::Harvested), "harvest failed"),
        ReadKind::FinishTurn => (
            tracker
                .finish_turn()
                .map(|(earlier, last)| Turns::Finished { earlier, last }),
            "reading the final exchange failed",
        ),
        ReadKind::LateStop => (
            tracker.harvest().map(|earlier| Turns::Finished {
                earlier,
                last: FinalTurn::Pending,
            }),
            "harvest failed",
        ),
        ReadKind::Compact { last_turn } => (
            tracker.compact(last_turn).map(Turns::Compacted),
            "reading turns failed",
        ),
        ReadKind::Close => (tracker.close().map(Turns::Closed), "harvest failed"),
    };
    turns
        .map_err(|err| log.note(|| format!("{what}: {err}")))
        .ok()
}

fn finish_tracker(tracker: Tracker, log: &mut DebugLog) {
    let stats = tracker.stats();
    log.note(|| {
        format!(
            "transcript read {} bytes ({}..{})",
            stats.bytes_read, stats.start_offset, stats.end_offset
        )
    });
    if let Err(err) = tracker.save() {
        log.note(|| format!("saving the transcript cursor failed: {err}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_everything_but_keeps_only_the_limit() {
        let data = vec![b'x'; 1000];
        let got = read_payload(&data[..], 100).unwrap();
        assert_eq!(got.bytes.len(), 100);
        assert_eq!(got.total_len, 1000);
        assert!(got.truncated());
        let got = read_payload(&data[..], 1000).unwrap();
        assert!(!got.truncated());
    }
}
