//! Which transcript an event reads, and which read it needs.

use crate::files::transcript::SeenSession;
use crate::model::queue_line::{HookType, QueueEntry};
use crate::model::wire::{self, Agent, Payload};

/// The read of the transcript an event needs (a method of
/// [`Tracker`](crate::files::transcript::Tracker)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    /// PostToolUse: complete turns whose Stop never fired (`Tracker::harvest`).
    Harvest,
    /// Stop, StopFailure and SubagentStop: the final exchange (`Tracker::finish_turn`).
    FinishTurn,
    /// Stop of an agent that writes its transcript only after the hook (Copilot CLI): what
    /// the transcript holds is older than this Stop, so only its complete turns are taken
    /// (`Tracker::harvest`), and this Stop's turn is recorded once its text exists, by a later
    /// hook (SessionEnd at the latest).
    LateStop,
    /// PreCompact: every turn since the last compaction (`Tracker::compact`); `last_turn` for
    /// a manual compaction, which runs between turns: the trailing answered turn is complete.
    Compact {
        /// Include the trailing turn when it has an answer.
        last_turn: bool,
    },
    /// SessionEnd: every turn not recorded yet, the trailing one included (`Tracker::close`).
    Close,
}

impl ReadKind {
    /// The read `hook_type` needs, if any (PreCompact: an automatic compaction's).
    pub fn for_hook(hook_type: HookType) -> Option<ReadKind> {
        match hook_type {
            HookType::PostToolUse => Some(ReadKind::Harvest),
            HookType::Stop | HookType::StopFailure | HookType::SubagentStop => {
                Some(ReadKind::FinishTurn)
            }
            HookType::PreCompact => Some(ReadKind::Compact { last_turn: false }),
            HookType::SessionEnd => Some(ReadKind::Close),
            _ => None,
        }
    }
}

/// Where the transcript is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The payload names it.
    Given(String),
    /// The payload does not: the shell looks for the session's transcript
    /// ([`discover`](crate::files::transcript::discover)).
    Discover,
}

/// The transcript read one event needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranscriptRead {
    /// What to read.
    pub kind: ReadKind,
    /// The session the event belongs to.
    pub session: String,
    /// The cursor's key in the state dir: the session, or `session:agent` for a subagent.
    pub key: String,
    /// Where the transcript is.
    pub location: Location,
}

/// Whether the transcript at `path` is written only after the Stop hook has run: the agent
/// says so ([`Profile::transcript_after_stop`](crate::model::agents::Profile)), or the path is
/// Copilot CLI's (`~/.copilot/session-state/<id>/events.jsonl`) under an agent not told.
fn writes_late(agent: Agent, path: &str) -> bool {
    agent.profile().transcript_after_stop
        || path.replace('\\', "/").contains("/.copilot/session-state/")
}

/// The transcript read for an event of `hook_type`: the session's transcript, or for
/// SubagentStop the subagent's own (`agent_transcript_path`, a cursor per subagent). `None`
/// when the event reads none, or there is no session id, or a SubagentStop names no
/// transcript of its own, or the payload names none and the agent's could not be found
/// ([`Profile::finds_transcript`](crate::model::agents::Profile)).
pub(super) fn locate(
    agent: Agent,
    hook_type: Option<HookType>,
    payload: &Payload,
    entry: &QueueEntry,
) -> Option<TranscriptRead> {
    let hook_type = hook_type?;
    let kind = match ReadKind::for_hook(hook_type)? {
        ReadKind::Compact { .. } => ReadKind::Compact {
            last_turn: entry.trigger.as_deref() == Some("manual"),
        },
        kind => kind,
    };
    let session = entry.session_id.clone()?;
    if hook_type == HookType::SubagentStop {
        // The main transcript's turn is not the subagent's: without its own transcript the
        // payload's `last_assistant_message` is all there is.
        let path = payload.str_any(&["agent_transcript_path", "agentTranscriptPath"])?;
        let agent = payload
            .str_any(&["agent_id", "agentId"])
            .unwrap_or_else(|| "subagent".to_string());
        return Some(TranscriptRead {
            kind,
            key: format!("{session}:{agent}"),
            session,
            location: Location::Given(path),
        });
    }
    let location = match wire::transcript_path(payload) {
        Some(path) => Location::Given(path),
        None if agent.profile().finds_transcript => Location::Discover,
        None => return None,
    };
    let late = match &location {
        Location::Given(path) => writes_late(agent, path),
        Location::Discover => writes_late(agent, ""),
    };
    let kind = match kind {
        ReadKind::FinishTurn if late => ReadKind::LateStop,
        // Even the last hook comes before the session's last lines: only its complete turns
        // are taken now, and the session is closed once its transcript is quiet (a later
        // hook in the folder, or ingest's sweep: `transcript::due`).
        ReadKind::Close if late => ReadKind::Harvest,
        kind => kind,
    };
    Some(TranscriptRead {
        kind,
        key: session.clone(),
        session,
        location,
    })
}

/// The running session as its workspace's file notes it: the shell opens that file
/// ([`Workspace`](crate::files::transcript::Workspace)), closes the earlier sessions it names that
/// are due ([`due`](crate::files::transcript::due)), and notes this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkspaceMark {
    /// The workspace: the event's `cwd`.
    pub cwd: String,
    /// The session, its transcript and how its lines name the agent. The transcript is empty
    /// when the payload names none (Copilot CLI names it on `agentStop` only): the shell
    /// fills in the one its cursor read, if any.
    pub seen: SeenSession,
    /// The event is the session's SessionEnd: it closes its own cursor, and the workspace
    /// forgets it.
    pub ending: bool,
}

/// The workspace mark of an event of an agent that marks its workspace
/// ([`Profile::marks_workspace`](crate::model::agents::Profile): Claude Code, VS Code, Copilot
/// CLI, Qoder CLI), with a session, a cwd and (but for a late writer) a transcript path; `None`
/// otherwise. Copilot CLI's `sessionEnd` marks the session ended instead of ending it: its last
/// lines come after that hook.
pub(super) fn workspace_mark(
    agent: Agent,
    hook_type: Option<HookType>,
    entry: &QueueEntry,
) -> Option<WorkspaceMark> {
    if !agent.profile().marks_workspace {
        return None;
    }
    let late = agent.profile().transcript_after_stop;
    let nonempty = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
    let transcript = match nonempty(&entry.transcript_path) {
        Some(path) => path,
        None if late => String::new(),
        None => return None,
    };
    let end = hook_type == Some(HookType::SessionEnd);
    Some(WorkspaceMark {
        cwd: nonempty(&entry.cwd)?,
        seen: SeenSession {
            session: nonempty(&entry.session_id)?,
            transcript,
            agent: entry.agent.clone(),
            participant: entry.participant.clone(),
            ended_ms: (end && late).then_some(entry.timestamp),
            noted_ms: Some(entry.timestamp),
        },
        ending: end && !late,
    })
}
