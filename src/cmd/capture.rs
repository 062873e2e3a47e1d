//! `cmstore capture`: the hook handler every agent runs on every event.
//!
//! Reads the event on stdin, appends its queue line(s) in one locked write, and prints the one
//! JSON object the agent expects. It never opens the database and never fails the agent: any
//! internal problem becomes a note in the debug log, and the exit code is always 0.

use std::io::{self, IsTerminal, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use serde_json::Value;

use crate::config::{Config, LogLevel, Mode};
use crate::debug_log::DebugLog;
use crate::paths::Paths;
use crate::queue_line::{estimate_tokens, HookType, QueueEntry};
use crate::redact::Redactor;
use crate::safety::{self, Verdict};
use crate::shorten::cut_text;
use crate::transcript::{self, DiscoveryEnv, FinalTurn, Tracker, Turn};
use crate::wire::{self, payload::sniff_string_field, reply, Agent, DecodeError, Limits, Payload};

/// Largest payload read from stdin; the rest is drained and the entry marked `truncated`.
pub const MAX_PAYLOAD_BYTES: usize = 16 * 1024 * 1024;

/// Longest queue line capture writes: ingest rejects longer ones.
const MAX_LINE_BYTES: usize = crate::queue::read::DEFAULT_MAX_LINE_BYTES;

/// Characters of each side of an exchange shown in the debug log.
const DEBUG_EXCERPT: usize = 80;

/// Arguments of `cmstore capture`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Agent running the hook: claude, vscode, copilot, codex, gemini or auto (sniffed from
    /// the payload)
    #[arg(long, value_name = "AGENT", default_value = "auto")]
    pub agent: String,
    /// Event name; needed for Copilot CLI camelCase hooks, whose payload carries none
    #[arg(long, value_name = "NAME")]
    pub event: Option<String>,
}

/// Runs the hook. Always exits 0: a failing hook would break the agent.
pub fn run(paths: &Paths, args: Args) -> ExitCode {
    let started = Instant::now();
    let (config, problems) = Config::load(&paths.config);
    let mut log = DebugLog::new(paths.debug_log(), config.debug);
    for problem in &problems {
        log.note(|| format!("config: {problem}"));
    }
    let reply = panic::catch_unwind(AssertUnwindSafe(|| {
        capture(paths, &config, &args, started, &mut log)
    }))
    .unwrap_or_else(|_| reply::empty());
    let mut stdout = io::stdout().lock();
    // A closed stdout is the agent's business; nothing useful can be done about it here.
    let _ = writeln!(stdout, "{reply}").and_then(|()| stdout.flush());
    log.flush();
    ExitCode::SUCCESS
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

fn capture(
    paths: &Paths,
    config: &Config,
    args: &Args,
    started: Instant,
    log: &mut DebugLog,
) -> Value {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        eprintln!("cmstore capture: reading a hook payload from stdin (end with Ctrl-D)");
    }
    let input = match read_payload(stdin.lock(), MAX_PAYLOAD_BYTES) {
        Ok(input) => input,
        Err(err) => {
            log.note(|| format!("stdin unreadable: {err}"));
            StdinPayload::default()
        }
    };
    let now_ms = chrono::Utc::now().timestamp_millis();

    let (mut payload, decode_error) = if input.truncated() {
        (Payload::default(), Some(DecodeError::Truncated))
    } else {
        match Payload::decode(&input.bytes) {
            Ok(p) => (p, None),
            Err(e) => (Payload::default(), Some(e)),
        }
    };
    // Redact before anything is shortened: a cut secret no longer matches its pattern.
    let redactor = Redactor::new(&config.redact);
    if decode_error.is_none() && redactor.may_match(&String::from_utf8_lossy(&input.bytes)) {
        payload.redact_with(&redactor);
    }
    let agent = Agent::from_flag(&args.agent).unwrap_or_else(|| wire::sniff_agent(&payload));
    let event = wire::event_name(args.event.as_deref(), &payload).or_else(|| {
        sniff_string_field(&input.bytes, "hook_event_name")
            .or_else(|| sniff_string_field(&input.bytes, "hookEventName"))
    });
    log.note(|| {
        format!(
            "event={} agent={} bytes={} keys={:?}",
            event.as_deref().unwrap_or("-"),
            agent.as_str(),
            input.total_len,
            payload.keys()
        )
    });
    if decode_error == Some(DecodeError::Empty) && event.is_none() {
        log.note(|| "empty payload and no --event: nothing to record".to_string());
        return reply::empty();
    }

    let mut entry = wire::normalize(
        &payload,
        agent,
        event.as_deref(),
        now_ms,
        input.total_len,
        &Limits::default(),
    );
    if let Some(err) = &decode_error {
        log.note(|| format!("payload not usable: {err}"));
        entry.parse_error = Some(err.to_string());
        if input.truncated() {
            entry.truncated = Some(true);
            entry.session_id = sniff_string_field(&input.bytes, "session_id")
                .or_else(|| sniff_string_field(&input.bytes, "sessionId"));
        }
    } else if payload.lossy_utf8 {
        entry.parse_error = Some(
            "payload held invalid UTF-8 or unpaired surrogates, replaced by U+FFFD".to_string(),
        );
    }

    let hook_type = event.as_deref().and_then(HookType::from_event_name);
    if config.log_level == LogLevel::Verbose && decode_error.is_none() {
        entry.payload = Some(payload.to_value());
    }
    let mut reply = None;
    if hook_type == Some(HookType::PreToolUse) {
        if decode_error.is_none() {
            reply = safety_gate(config, agent, event.as_deref(), &payload, &mut entry, log);
        } else {
            // Allowed unchecked, like any call the gate cannot read, and counted by ingest.
            entry.risk = Some(safety::UNREADABLE.to_string());
            entry.decision = Some("allow".to_string());
        }
    }
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut record_main = config.event_enabled(&entry.hook_type);
    // The cursor is saved only once its turns are in the queue: saving first would mark them
    // recorded even when the append then fails, and they would never be written.
    let mut tracker_to_save = None;
    match hook_type {
        Some(t @ HookType::PostToolUse) => {
            if let Some(mut tracker) = open_tracker(paths, t, &payload, &entry, log) {
                match tracker.harvest() {
                    Ok(turns) => {
                        after.extend(turns.iter().map(|t| synthetic_stop(&entry, t)));
                    }
                    Err(err) => log.note(|| format!("harvest failed: {err}")),
                }
                tracker_to_save = Some(tracker);
            }
        }
        Some(t @ (HookType::Stop | HookType::SubagentStop)) => {
            if let Some(mut tracker) = open_tracker(paths, t, &payload, &entry, log) {
                match tracker.finish_turn() {
                    Ok((earlier, last)) => {
                        before.extend(earlier.iter().map(|t| synthetic_stop(&entry, t)));
                        match last {
                            FinalTurn::Fresh(turn) => fill_exchange(&mut entry, &turn),
                            FinalTurn::Recorded => {
                                log.note(|| "turn already recorded: Stop skipped".into());
                                record_main = false;
                            }
                            FinalTurn::Missing => {
                                log.note(|| "no turn in the transcript: payload only".into())
                            }
                        }
                    }
                    Err(err) => log.note(|| format!("reading the final exchange failed: {err}")),
                }
                tracker_to_save = Some(tracker);
            }
        }
        Some(t @ HookType::PreCompact) => {
            if let Some(mut tracker) = open_tracker(paths, t, &payload, &entry, log) {
                match tracker.compact() {
                    Ok(turns) => {
                        entry.turns = Some(turns.iter().map(Turn::to_record).collect());
                    }
                    Err(err) => log.note(|| format!("reading turns failed: {err}")),
                }
                tracker_to_save = Some(tracker);
            }
        }
        _ => {}
    }
    for e in before
        .iter_mut()
        .chain(std::iter::once(&mut entry))
        .chain(after.iter_mut())
    {
        if redactor.redact_entry(e) {
            log.note(|| format!("secrets redacted in {} entry", e.hook_type));
        }
        if !config.store_text {
            drop_text(e);
        }
    }
    if log.is_on() {
        if let (Some(p), Some(r)) = (&entry.prompt, &entry.response) {
            log.note(|| {
                format!(
                    "exchange {:?} -> {:?}",
                    cut_text(p, DEBUG_EXCERPT),
                    cut_text(r, DEBUG_EXCERPT)
                )
            });
        }
    }

    let reply = reply.unwrap_or_else(|| reply_for(paths, agent, hook_type, event.as_deref(), log));

    let elapsed = started.elapsed().as_millis() as u64;
    let mut entries = before;
    if record_main {
        entries.push(entry);
    }
    entries.extend(after);
    entries.retain(|e| config.event_enabled(&e.hook_type));
    let lines: Vec<String> = entries
        .iter_mut()
        .map(|e| {
            e.hook_execution_ms = elapsed;
            fit_line(e, log)
        })
        .collect();
    match crate::queue::append_lines(&paths.queue, &lines) {
        Ok(report) => {
            if let Some(mut tracker) = tracker_to_save {
                tracker.scrub_open_turn(|text| {
                    if let std::borrow::Cow::Owned(clean) = redactor.redact(text) {
                        *text = clean;
                    }
                });
                finish_tracker(tracker, log);
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
            })
        }
        // The cursor is dropped unsaved: the next hook reads the same turns again.
        Err(err) => log.note(|| format!("queue append failed: {err}")),
    }
    reply
}

/// The entry's queue line, without its raw `payload` when that would make the line longer than
/// ingest accepts (the normalized fields are worth more than the copy).
fn fit_line(e: &mut QueueEntry, log: &mut DebugLog) -> String {
    let line = e.to_line();
    if line.len() < MAX_LINE_BYTES || e.payload.is_none() {
        return line;
    }
    e.payload = None;
    log.note(|| {
        format!(
            "raw payload left out: the line would be {} bytes",
            line.len()
        )
    });
    e.to_line()
}

/// Runs the safety gate on a PreToolUse payload: records the finding on `entry`, and in
/// enforce mode returns the agent's deny reply.
fn safety_gate(
    config: &Config,
    agent: Agent,
    event: Option<&str>,
    payload: &Payload,
    entry: &mut QueueEntry,
    log: &mut DebugLog,
) -> Option<Value> {
    let input = wire::tool_input(payload);
    match safety::check(entry.tool_name.as_deref(), input.as_ref(), &config.safety) {
        Verdict::Clean => None,
        Verdict::Unreadable => {
            // Never block what cannot be read: enforce mode must not deny everything.
            entry.risk = Some(safety::UNREADABLE.to_string());
            entry.decision = Some("allow".to_string());
            log.note(|| "safety gate could not read the tool call: allowed".into());
            None
        }
        Verdict::Risky { rules, text } => {
            let rules = rules.join(",");
            log.note(|| {
                format!(
                    "safety gate: {rules} in {:?}",
                    cut_text(&text, DEBUG_EXCERPT)
                )
            });
            entry.risk = Some(rules.clone());
            match config.mode {
                Mode::Audit => {
                    entry.decision = Some("allow".to_string());
                    None
                }
                Mode::Enforce => {
                    entry.decision = Some("deny".to_string());
                    let reason = format!(
                        "Blocked by cmstore safety gate ({rules}): {}. Set mode = \"audit\" in cmstore.toml to allow such commands.",
                        cut_text(&text, 200)
                    );
                    Some(reply::deny(agent, event.unwrap_or("PreToolUse"), &reason))
                }
            }
        }
    }
}

/// Drops prompt and response text (`store_text = false`), keeping the rest of the entry.
fn drop_text(e: &mut QueueEntry) {
    e.prompt = None;
    e.response = None;
    e.message = None;
    if let Some(turns) = &mut e.turns {
        for turn in turns {
            turn.user.clear();
            turn.assistant.clear();
        }
    }
    if let Some(payload) = e.payload.as_mut().and_then(Value::as_object_mut) {
        for key in [
            "prompt",
            "last_assistant_message",
            "response",
            "initialPrompt",
            "message",
        ] {
            payload.remove(key);
        }
    }
}

/// The reply for this event: context injection, the compaction message, or `{}`.
fn reply_for(
    paths: &Paths,
    agent: Agent,
    hook_type: Option<HookType>,
    event: Option<&str>,
    log: &mut DebugLog,
) -> Value {
    match hook_type {
        Some(
            t @ (HookType::UserPromptSubmit | HookType::SubagentStart | HookType::SessionStart),
        ) => match read_text(&paths.session_context(), log) {
            Some(context) => reply::context_injection(agent, event.unwrap_or(t.as_str()), &context),
            None => reply::empty(),
        },
        Some(HookType::PreCompact) => match read_text(&paths.knowledge_index(), log) {
            Some(text) => reply::system_message(&text),
            None => reply::empty(),
        },
        _ => reply::empty(),
    }
}

/// The trimmed text of `path`, or `None` when it is missing, unreadable or blank.
fn read_text(path: &Path, log: &mut DebugLog) -> Option<String> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes).trim().to_string();
            (!text.is_empty()).then_some(text)
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => None,
        Err(err) => {
            log.note(|| format!("cannot read {}: {err}", path.display()));
            None
        }
    }
}

/// Opens the transcript cursor this hook reads: the session's transcript (discovered when the
/// payload has no path), or for SubagentStop the subagent's own transcript
/// (`agent_transcript_path`, a cursor per subagent). `None` when there is no session id, no
/// transcript, or the cursor is busy.
fn open_tracker(
    paths: &Paths,
    hook_type: HookType,
    payload: &Payload,
    entry: &QueueEntry,
    log: &mut DebugLog,
) -> Option<Tracker> {
    let session = entry.session_id.as_deref()?;
    let (key, path, how) = if hook_type == HookType::SubagentStop {
        // The main transcript's turn is not the subagent's: without its own transcript the
        // payload's `last_assistant_message` is all there is.
        let path = payload.str_any(&["agent_transcript_path", "agentTranscriptPath"])?;
        let agent = payload
            .str_any(&["agent_id", "agentId"])
            .unwrap_or_else(|| "subagent".to_string());
        (format!("{session}:{agent}"), PathBuf::from(path), "given")
    } else {
        match wire::transcript_path(payload) {
            Some(given) => (session.to_string(), PathBuf::from(given), "given"),
            None => match transcript::discover(session, &DiscoveryEnv::from_env()) {
                Some(found) => (session.to_string(), found, "discovered"),
                None => {
                    log.note(|| format!("no transcript for session {session}"));
                    return None;
                }
            },
        }
    };
    log.note(|| format!("transcript ({how}) {}", path.display()));
    match Tracker::open(&paths.state_dir(), &key, &path) {
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

/// Puts a turn read from the transcript into a Stop entry.
///
/// The response is the transcript's last assistant text, falling back to its reasoning text
/// (VS Code turns that only called tools), then to the payload's `last_assistant_message`.
/// When the payload has `last_assistant_message` and it differs, the payload wins: Claude
/// Code writes its transcript asynchronously, so the final message may not be there yet.
fn fill_exchange(entry: &mut QueueEntry, turn: &Turn) {
    let from_payload = entry.response.take().filter(|r| !r.trim().is_empty());
    entry.response = from_payload.or_else(|| turn.response().map(str::to_string));
    if !turn.user.is_empty() {
        entry.prompt = Some(turn.user.clone());
    }
    entry.tool_calls = Some(turn.tool_calls.clone());
    if turn.turn_id.is_some() {
        entry.turn_id = turn.turn_id.clone();
    }
}

/// A synthetic `Stop` entry for a turn harvested from the transcript (VS Code turns are
/// captured this way when its Stop hook never fires). Its size is the turn's own text.
fn synthetic_stop(trigger: &QueueEntry, turn: &Turn) -> QueueEntry {
    let mut e = QueueEntry::new(HookType::Stop.as_str(), trigger.timestamp);
    e.event = trigger.event.clone();
    e.agent = trigger.agent.clone();
    e.participant = trigger.participant.clone();
    e.session_id = trigger.session_id.clone();
    e.cwd = trigger.cwd.clone();
    e.root_hint = trigger.root_hint.clone();
    e.transcript_path = trigger.transcript_path.clone();
    e.model = trigger.model.clone();
    e.actor_type = trigger.actor_type.clone();
    e.actor_name = trigger.actor_name.clone();
    e.synthetic = Some(true);
    e.prompt = Some(turn.user.clone());
    e.response = Some(turn.response().unwrap_or_default().to_string());
    e.turn_id = turn.turn_id.clone();
    e.tool_calls = Some(turn.tool_calls.clone());
    let size = turn.user.len()
        + e.response.as_ref().map_or(0, String::len)
        + turn
            .tool_calls
            .iter()
            .map(|c| c.tool_name.len() + c.input.len() + c.output.len())
            .sum::<usize>();
    e.size_bytes = size as u64;
    e.estimated_tokens = estimate_tokens(e.size_bytes);
    e
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

    #[test]
    fn payload_text_wins_over_a_lagging_transcript() {
        let mut e = QueueEntry::new("Stop", 0);
        e.response = Some("final".into());
        let turn = Turn {
            user: "q".into(),
            assistant: "earlier".into(),
            ..Turn::default()
        };
        fill_exchange(&mut e, &turn);
        assert_eq!(e.response.as_deref(), Some("final"));
        assert_eq!(e.prompt.as_deref(), Some("q"));

        let mut e = QueueEntry::new("Stop", 0);
        let turn = Turn {
            reasoning: Some("thinking".into()),
            ..Turn::default()
        };
        fill_exchange(&mut e, &turn);
        assert_eq!(e.response.as_deref(), Some("thinking"));
    }
}
