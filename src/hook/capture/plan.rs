//! The first step: the payload read into a queue entry, the safety gate run, and the
//! transcript read the event needs named.

use serde_json::Value;

use super::gate;
use super::reading::{self, TranscriptRead, WorkspaceMark};
use crate::config::{Config, LogLevel};
use crate::files::debug_log::DebugLog;
use crate::files::transcript::SeenSession;
use crate::hook::checks::{self, Job};
use crate::model::queue_line::{HookType, QueueEntry};
use crate::model::redact::Redactor;
use crate::model::transcript::Turn;
use crate::model::wire::{self, payload::sniff_string_field, Agent, DecodeError, Limits, Payload};

/// One hook run's input, as the shell read it.
#[derive(Debug, Clone, Copy)]
pub struct Hook<'a> {
    /// The payload's bytes, as many as were kept.
    pub bytes: &'a [u8],
    /// Every byte the agent sent, kept or not.
    pub total_len: u64,
    /// `--agent`: an agent's name, or `auto` to tell it from the payload.
    pub agent: &'a str,
    /// `--event`, when given.
    pub event: Option<&'a str>,
    /// When the hook ran (Unix milliseconds): the entries' timestamp.
    pub now_ms: i64,
    /// What is wrong with the configuration, in one line ([`crate::config::error_note`]):
    /// noted on every entry while there is something.
    pub config_error: Option<&'a str>,
    /// The hook process's working directory: the session's folder for an agent whose
    /// payloads mostly name none ([`Agent::cwd_of_hook`]).
    pub cwd: Option<&'a str>,
    /// The sessions the agents' variables name in the hook's process
    /// ([`crate::model::agents::Profile::session_env`]), for payloads that name none.
    pub session_vars: &'a [(Agent, String)],
}

impl Hook<'_> {
    /// True when the agent sent more bytes than were kept.
    pub fn truncated(&self) -> bool {
        self.total_len > self.bytes.len() as u64
    }
}

/// What one event records, before the transcript is read: made by [`prepare`], completed by
/// [`Plan::finish`].
#[derive(Debug)]
pub struct Plan<'c> {
    pub(super) config: &'c Config,
    pub(super) redactor: Redactor,
    pub(super) agent: Agent,
    /// The event name as the agent spells it.
    pub(super) event: Option<String>,
    pub(super) hook_type: Option<HookType>,
    /// The event's own entry.
    pub(super) entry: QueueEntry,
    /// The safety gate's deny reply, in enforce mode.
    pub(super) deny: Option<Value>,
    pub(super) transcript: Option<TranscriptRead>,
    /// The session as its workspace notes it, for the shell.
    pub(super) workspace: Option<WorkspaceMark>,
    /// Earlier sessions of the workspace the shell closed, with their last turns.
    pub(super) closed: Vec<(SeenSession, Vec<Turn>)>,
    /// [`Hook::config_error`], for every entry.
    pub(super) config_error: Option<String>,
    /// The tool input the checks are chosen from, kept only when `[checks]` is configured:
    /// they are chosen in [`Plan::take_checks`], once the call's outcome is known (a Codex
    /// call's exit code comes from its rollout, after [`prepare`]).
    pub(super) check_input: Option<Value>,
    /// A budget warning the reply tells the agent ([`Plan::warn`]).
    pub(super) notice: Option<super::reply::Notice>,
    /// A Cline run's id (`taskId`, which says when the run began).
    pub(super) cline_task: Option<String>,
}

/// The checks an event asks for, with what their feedback reply needs.
#[derive(Debug, Clone)]
pub struct PendingChecks {
    pub jobs: Vec<Job>,
    /// The agent, whose reply shape the feedback takes.
    pub agent: Agent,
    /// The event name as the agent spelled it.
    pub event: String,
}

impl Plan<'_> {
    /// The checks the event asks for, chosen now from the entry as it stands (after
    /// [`Plan::set_exit_code`]: a commit that failed starts no scan): `None` when there are
    /// none (always, unless `[checks]` is configured). A second call finds none.
    pub fn take_checks(&mut self) -> Option<PendingChecks> {
        if self.config.checks.is_empty() {
            return None;
        }
        let input = self.check_input.take();
        let jobs = checks::jobs(
            &self.config.checks,
            &self.config.redact,
            self.hook_type,
            input.as_ref(),
            &self.entry,
        );
        if jobs.is_empty() {
            return None;
        }
        Some(PendingChecks {
            jobs,
            agent: self.agent,
            event: self
                .event
                .clone()
                .unwrap_or_else(|| "PostToolUse".to_string()),
        })
    }

    /// The agent that ran the hook: told by `--agent`, else sniffed from the payload.
    pub fn agent(&self) -> Agent {
        self.agent
    }

    /// The transcript read the event needs, if any: the shell opens the cursor, reads, and
    /// passes the [`Turns`](super::Turns) to [`Plan::finish`].
    pub fn transcript(&self) -> Option<&TranscriptRead> {
        self.transcript.as_ref()
    }

    /// The running session as its workspace's file should note it, if the event has one.
    pub fn workspace(&self) -> Option<&WorkspaceMark> {
        self.workspace.as_ref()
    }

    /// The turns the shell read when it closed `session`, an earlier session of the
    /// workspace: [`Plan::finish`] records them as synthetic Stops of that session, ahead of
    /// everything else.
    pub fn add_closed(&mut self, session: SeenSession, turns: Vec<Turn>) {
        self.closed.push((session, turns));
    }

    /// For a Codex PostToolUse whose result gave no exit code (Codex 0.171 gives only the
    /// output): the rollout and the call id to find it by. The shell reads it
    /// ([`codex_exit_code`](crate::model::transcript::codex_exit_code)) and passes it to
    /// [`Plan::set_exit_code`].
    pub fn rollout_lookup(&self) -> Option<(&str, &str)> {
        let e = &self.entry;
        if self.agent != Agent::Codex
            || self.hook_type != Some(HookType::PostToolUse)
            || e.exit_code.is_some()
        {
            return None;
        }
        let path = e.transcript_path.as_deref().filter(|p| !p.is_empty())?;
        Some((path, e.tool_call_id.as_deref()?))
    }

    /// For the end of a Cline run (its `TaskComplete`, `TaskError`, `TaskCancel` or
    /// `SessionShutdown`): the session and when the run began (from its `taskId`), whose
    /// files the shell reads ([`crate::files::transcript::cline::run`]) and passes to
    /// [`Plan::set_cline_run`]. Cline's payloads name neither the prompt nor the model.
    pub fn cline_run_lookup(&self) -> Option<(&str, Option<i64>)> {
        let ends = matches!(
            self.hook_type,
            Some(
                HookType::Stop | HookType::StopFailure | HookType::Interrupt | HookType::SessionEnd
            )
        );
        if self.agent != Agent::Cline || !ends {
            return None;
        }
        let session = self.entry.session_id.as_deref()?;
        let started = self
            .cline_task
            .as_deref()
            .and_then(wire::cline::run_started);
        Some((session, started))
    }

    /// What the shell read of a Cline run: its prompt (on a turn's end, when the payload had
    /// none; redacted as the payload is), its model, and its model calls' usage. Cline shuts a
    /// session down only after a run it stopped (the gate's cancel, Ctrl-C), which fires no
    /// end of its own: such a run is recorded as an `interrupted` turn of its prompt, keyed by
    /// the run, unless the session's file says it completed or failed (those fire their own).
    /// The file may still say `running` then: Cline does not wait for the hook.
    pub fn set_cline_run(&mut self, run: crate::files::transcript::cline::Run) {
        let prompt = run.prompt.map(|p| self.redactor.redact(&p).into_owned());
        let e = &mut self.entry;
        if e.model.is_none() {
            e.model.clone_from(&run.model);
        }
        if !run.usage.is_empty() {
            e.usage = Some(run.usage);
        }
        let ended = self.hook_type == Some(HookType::SessionEnd);
        if !ended {
            if e.prompt.is_none() {
                e.prompt = prompt;
            }
            return;
        }
        let (Some(session), Some(prompt), Some(task)) =
            (e.session_id.clone(), prompt, self.cline_task.clone())
        else {
            return;
        };
        if matches!(run.status.as_deref(), Some("completed" | "failed")) {
            return;
        }
        let seen = SeenSession {
            session,
            transcript: run.transcript.display().to_string(),
            agent: Some(Agent::Cline.as_str().to_string()),
            participant: Some(Agent::Cline.participant().to_string()),
            ..SeenSession::default()
        };
        let turn = Turn {
            turn_id: Some(task),
            user: prompt,
            complete: true,
            interrupted: true,
            model: run.model,
            ts: Some(e.timestamp),
            ..Turn::default()
        };
        self.add_closed(seen, vec![turn]);
    }

    /// The tool call's exit code, read by the shell: a code other than 0 makes it failed.
    pub fn set_exit_code(&mut self, code: i64) {
        self.entry.exit_code = Some(code);
        if code != 0 {
            self.entry.tool_failed = Some(true);
        }
    }
}

/// Reads one hook's input into a plan: decodes and redacts the payload, tells the agent and
/// the event, normalizes the entry and runs the safety gate on PreToolUse. `None` when there
/// is nothing to record (an empty payload and no event name): the reply is then `{}`, and
/// nothing is written.
pub fn prepare<'c>(hook: &Hook<'_>, config: &'c Config, log: &mut DebugLog) -> Option<Plan<'c>> {
    let (mut payload, decode_error) = decode(hook);
    // Redact before anything is shortened: a cut secret no longer matches its pattern.
    let redactor = Redactor::new(&config.redact);
    if decode_error.is_none() && redactor.may_match(&String::from_utf8_lossy(hook.bytes)) {
        payload.redact_with(&redactor);
    }
    let named = Agent::from_flag(hook.agent);
    let agent = named.unwrap_or_else(|| wire::sniff_agent(&payload));
    let flag = hook.agent.trim();
    let unknown_flag = named.is_none() && !flag.is_empty() && !flag.eq_ignore_ascii_case("auto");
    let event = event_name(hook, &payload);
    log.note(|| {
        format!(
            "event={} agent={} bytes={} keys={:?}",
            event.as_deref().unwrap_or("-"),
            agent.as_str(),
            hook.total_len,
            payload.keys()
        )
    });
    if decode_error == Some(DecodeError::Empty) && event.is_none() {
        log.note(|| "empty payload and no --event: nothing to record".to_string());
        return None;
    }

    let mut entry = normalize(
        hook,
        &payload,
        agent,
        event.as_deref(),
        decode_error.as_ref(),
        log,
    );
    if unknown_flag {
        let known: Vec<&str> = Agent::ALL
            .iter()
            .filter(|a| **a != Agent::Unknown)
            .map(|a| a.as_str())
            .collect();
        entry.agent_error = Some(format!(
            "--agent {flag:?} names no agent ({}, or auto); told from the payload: {}",
            known.join(", "),
            agent.as_str()
        ));
    }
    let readable = decode_error.is_none().then_some(&payload);
    if config.log_level == LogLevel::Verbose {
        entry.payload = readable.map(Payload::to_value);
    }
    // The entry's type, not the event name's: a payload can refine it (Gemini's automatic
    // PreCompress is only a check, and reads no transcript).
    let hook_type = HookType::from_canonical(&entry.hook_type);
    let deny = match hook_type {
        Some(HookType::PreToolUse) => {
            gate::check(config, agent, event.as_deref(), readable, &mut entry, log)
        }
        _ => None,
    };
    let check_input = match config.checks.is_empty() {
        true => None,
        false => readable.and_then(|p| wire::tool_input_of(agent, p)),
    };
    let transcript = reading::locate(agent, hook_type, &payload, &entry);
    let workspace = reading::workspace_mark(agent, hook_type, &entry);
    Some(Plan {
        config,
        redactor,
        agent,
        event,
        hook_type,
        entry,
        deny,
        transcript,
        workspace,
        closed: Vec::new(),
        config_error: hook.config_error.map(str::to_string),
        check_input,
        notice: None,
        cline_task: match agent {
            Agent::Cline => payload.str_any(&["taskId"]),
            _ => None,
        },
    })
}

/// Whether `entry` is written: its type is enabled in `[events]`, or it carries a safety-gate
/// finding (`risk`, a `deny`) or a budget's mark, which no event filter turns off: an audit
/// trail of what the gate flagged or blocked must not depend on which events are recorded.
pub(super) fn recorded(config: &Config, entry: &QueueEntry) -> bool {
    config.event_enabled(&entry.hook_type)
        || entry.risk.is_some()
        || entry.decision.as_deref() == Some("deny")
        || entry.budget.is_some()
}

/// The decoded payload, or an empty one and why it could not be decoded.
fn decode(hook: &Hook<'_>) -> (Payload, Option<DecodeError>) {
    if hook.truncated() {
        return (Payload::default(), Some(DecodeError::Truncated));
    }
    match Payload::decode(hook.bytes) {
        Ok(payload) => (payload, None),
        Err(err) => (Payload::default(), Some(err)),
    }
}

/// The event name: `--event`, else the payload's, else one sniffed from bytes that did not
/// decode.
fn event_name(hook: &Hook<'_>, payload: &Payload) -> Option<String> {
    wire::event_name(hook.event, payload).or_else(|| {
        sniff_string_field(hook.bytes, "hook_event_name")
            .or_else(|| sniff_string_field(hook.bytes, "hookEventName"))
    })
}

/// The event's entry; a payload that could not be decoded still gives one, with its
/// `parseError` (and for a cut payload, `truncated` and the session id sniffed from the bytes).
fn normalize(
    hook: &Hook<'_>,
    payload: &Payload,
    agent: Agent,
    event: Option<&str>,
    decode_error: Option<&DecodeError>,
    log: &mut DebugLog,
) -> QueueEntry {
    let mut entry = wire::normalize(
        payload,
        agent,
        event,
        hook.now_ms,
        hook.total_len,
        &Limits::default(),
    );
    if entry.cwd.is_none() && agent.cwd_of_hook() {
        entry.cwd = hook.cwd.map(str::to_string);
        entry.root_hint.clone_from(&entry.cwd);
    }
    if let Some(err) = decode_error {
        log.note(|| format!("payload not usable: {err}"));
        entry.parse_error = Some(err.to_string());
        if hook.truncated() {
            entry.truncated = Some(true);
            entry.session_id = ["session_id", "sessionId", "trajectory_id"]
                .into_iter()
                .find_map(|key| sniff_string_field(hook.bytes, key));
        }
    } else if payload.lossy_utf8 {
        entry.parse_error = Some(
            "payload held invalid UTF-8 or unpaired surrogates, replaced by U+FFFD".to_string(),
        );
    }
    if entry.session_id.is_none() {
        entry.session_id = hook
            .session_vars
            .iter()
            .find(|(named, _)| *named == agent)
            .map(|(_, session)| session.clone());
    }
    entry
}
