//! The second step: the turns read from the transcript put into entries, every entry made
//! fit to leave capture, and the reply chosen.

use super::exchange::{closed_stop, fill_exchange, of_closed_session, synthetic_stop};
use super::plan::Plan;
use super::privacy::protect;
use super::reply::Reply;
use super::DEBUG_EXCERPT;
use crate::config::Config;
use crate::files::debug_log::DebugLog;
use crate::files::transcript::{SeenSession, Tracker};
use crate::model::queue_line::usage::UsageRecord;
use crate::model::queue_line::{HookType, QueueEntry};
use crate::model::redact::Redactor;
use crate::model::shorten::cut_text;
use crate::model::transcript::{FinalTurn, Turn};
use crate::model::wire::reply;

/// What the shell read from the transcript, by [`ReadKind`](super::ReadKind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turns {
    /// [`Harvest`](super::ReadKind::Harvest): complete turns whose Stop never fired.
    Harvested(Vec<Turn>),
    /// [`FinishTurn`](super::ReadKind::FinishTurn): complete turns not recorded yet before
    /// the final one, and the final one.
    Finished {
        /// Turns before the final one, recorded as synthetic Stops ahead of the event.
        earlier: Vec<Turn>,
        /// The final turn: the event's own exchange.
        last: FinalTurn,
    },
    /// [`Compact`](super::ReadKind::Compact): every turn since the last compaction.
    Compacted(Vec<Turn>),
    /// [`Close`](super::ReadKind::Close): turns never recorded, the session's last included,
    /// recorded as synthetic Stops ahead of the SessionEnd.
    Closed(Vec<Turn>),
}

/// What one event records and what the agent is told.
#[derive(Debug)]
pub struct Outcome {
    /// The queue entries to append, in order: synthetic Stops of earlier turns, the event's
    /// own entry, synthetic Stops of harvested turns; each redacted, and without text when
    /// `store_text = false`. Types disabled in `[events]` are left out, except a safety-gate
    /// finding.
    pub entries: Vec<QueueEntry>,
    /// The reply to the agent.
    pub reply: Reply,
    /// A budget warning to add to the reply once it is made
    /// ([`Notice::told`](super::Notice::told)).
    pub notice: Option<super::reply::Notice>,
    /// The redactor the entries went through; the shell scrubs the transcript cursor's open
    /// turn with it before saving the cursor.
    pub redactor: Redactor,
}

/// Entries read from the transcript, around the event's own: `entries[..main_at]` go before
/// it, the rest after. One vector, into which the event's entry is inserted last: a harvest
/// makes hundreds of entries of 1.3 KB each, and every copy of them into a new vector is
/// fresh pages to fault in on the hook path.
#[derive(Default)]
struct Around {
    entries: Vec<QueueEntry>,
    main_at: usize,
}

impl Around {
    fn before(entries: Vec<QueueEntry>) -> Self {
        Around {
            main_at: entries.len(),
            entries,
        }
    }

    fn after(entries: Vec<QueueEntry>) -> Self {
        Around {
            entries,
            main_at: 0,
        }
    }
}

impl Plan<'_> {
    /// Completes the plan with the turns the shell read (`None` when the event reads none,
    /// or there was no transcript, or the read failed): the entries to write and the reply.
    pub fn finish(mut self, turns: Option<Turns>, log: &mut DebugLog) -> Outcome {
        if self.transcript.as_ref().map(|t| t.kind) == Some(super::ReadKind::LateStop) {
            // Whether or not the read succeeded: the turn is harvested later either way (a
            // busy cursor leaves the bytes for the next hook), so this line makes no row.
            self.entry.turn_pending = Some(true);
        }
        let mut around = match turns {
            Some(turns) => self.take_turns(turns, log),
            None => Around::default(),
        };
        let closed: Vec<QueueEntry> = std::mem::take(&mut self.closed)
            .into_iter()
            .flat_map(|(seen, turns)| {
                let trigger = &self.entry;
                turns
                    .into_iter()
                    .map(move |t| closed_stop(trigger, &seen, t))
            })
            .collect();
        around.main_at += closed.len();
        around.entries.splice(0..0, closed);
        let (before, after) = around.entries.split_at_mut(around.main_at);
        for e in before
            .iter_mut()
            .chain(std::iter::once(&mut self.entry))
            .chain(after.iter_mut())
        {
            protect(e, &self.redactor, self.config.store_text, log);
            e.config_error.clone_from(&self.config_error);
        }
        note_exchange(&self.entry, log);
        let reply = self.reply();
        let mut entries = around.entries;
        // The event's own entry among them; `recorded` keeps what is written (its type
        // enabled, or a gate finding or a budget's mark on it).
        entries.insert(around.main_at, self.entry);
        entries.retain(|e| super::plan::recorded(self.config, e));
        Outcome {
            entries,
            reply,
            notice: self.notice,
            redactor: self.redactor,
        }
    }

    /// Puts the turns into entries: synthetic Stops, a Stop's exchange, PreCompact's turns.
    fn take_turns(&mut self, turns: Turns, log: &mut DebugLog) -> Around {
        let stops = |turns: Vec<Turn>, trigger: &QueueEntry| -> Vec<QueueEntry> {
            turns
                .into_iter()
                .map(|t| synthetic_stop(trigger, t))
                .collect()
        };
        match turns {
            Turns::Harvested(turns) => Around::after(stops(turns, &self.entry)),
            Turns::Finished { earlier, last } => {
                let before = stops(earlier, &self.entry);
                match last {
                    FinalTurn::Fresh(turn) => fill_exchange(&mut self.entry, turn),
                    FinalTurn::Continued(turn) => {
                        // A Stop hook blocked the earlier Stop: the turn went on, and this
                        // Stop records it whole again (ingest keeps its one `turns` row).
                        log.note(|| "turn continued after a Stop hook's feedback".into());
                        fill_exchange(&mut self.entry, turn)
                    }
                    FinalTurn::Recorded(turn_id) => {
                        // Every firing is an event; the exchange is on the earlier line, and
                        // ingest merges both into the turn's one `turns` row by its id.
                        log.note(|| "turn already recorded: Stop recorded without it".into());
                        if self.entry.turn_id.is_none() {
                            self.entry.turn_id = turn_id;
                        }
                        self.entry.turn_recorded = Some(true);
                    }
                    FinalTurn::Missing => {
                        log.note(|| "no turn in the transcript: payload only".into())
                    }
                    FinalTurn::Pending => {
                        log.note(|| "transcript written after the hook: turn recorded later".into())
                    }
                }
                Around::before(before)
            }
            Turns::Closed(turns) => Around::before(stops(turns, &self.entry)),
            Turns::Compacted(turns) => {
                self.entry.turns = Some(turns.iter().map(Turn::to_record).collect());
                Around::default()
            }
        }
    }

    /// The reply: the gate's deny, context injection, the compaction message, or `{}`.
    fn reply(&mut self) -> Reply {
        if let Some(deny) = self.deny.take() {
            return Reply::Ready(deny);
        }
        match self.hook_type {
            Some(
                t @ (HookType::UserPromptSubmit | HookType::SubagentStart | HookType::SessionStart),
            ) => Reply::Context {
                agent: self.agent,
                event: self.event.clone().unwrap_or_else(|| t.as_str().to_string()),
            },
            Some(HookType::PreCompact) => Reply::SystemMessage,
            _ => Reply::Ready(reply::empty()),
        }
    }
}

/// The synthetic Stops of `turns`, the last turns of `seen` (a session of the folder `cwd`)
/// that something other than a hook closed at `now_ms` (ingest's sweep): the lines a later
/// hook in that folder would have written for them, redacted, without text when
/// `store_text = false`, and left out when `[events]` switches Stop off.
pub fn closed_entries(
    config: &Config,
    config_error: Option<&str>,
    closing: (&str, &SeenSession),
    turns: &[Turn],
    now_ms: i64,
    log: &mut DebugLog,
) -> Vec<QueueEntry> {
    let (cwd, seen) = closing;
    let redactor = Redactor::new(&config.redact);
    let mut trigger = QueueEntry::new(HookType::Stop.as_str(), now_ms);
    trigger.cwd = Some(cwd.to_string());
    trigger.root_hint = Some(cwd.to_string());
    let mut entries: Vec<QueueEntry> = turns
        .iter()
        .map(|turn| closed_stop(&trigger, seen, turn.clone()))
        .collect();
    for e in &mut entries {
        protect(e, &redactor, config.store_text, log);
        e.config_error = config_error.map(str::to_string);
    }
    entries.retain(|e| super::plan::recorded(config, e));
    entries
}

/// Puts the usage `cursor` read (and any it kept) on `last`, the session's last line; with no
/// such line, returns it (empty when it was carried or there was none): the caller keeps it
/// in the cursor for the session's next hook, or writes a [`usage_entry`].
pub fn carry_usage(cursor: &mut Tracker, last: Option<&mut QueueEntry>) -> Vec<UsageRecord> {
    let usage = cursor.take_usage();
    match last {
        Some(entry) if !usage.is_empty() => {
            entry.usage = Some(usage);
            Vec::new()
        }
        _ => usage,
    }
}

/// The `Usage` line of `seen`, a session being closed or ending, for the responses its
/// transcript read found when no line of the session carries them: without it they would wait
/// in a cursor that nothing reads again. Dated by the last response (else `now_ms`), so it does
/// not stretch the session; no `cwd` (a session's project is that of its latest line with
/// one); `[events]` does not switch it off.
pub fn usage_entry(
    seen: &SeenSession,
    usage: Vec<UsageRecord>,
    config_error: Option<&str>,
    now_ms: i64,
) -> QueueEntry {
    let ts = usage.iter().filter_map(|r| r.ts).max().unwrap_or(now_ms);
    let mut e = QueueEntry::new(HookType::Usage.as_str(), ts);
    e.id = crate::model::queue_line::usage_line_id(&seen.session, &usage);
    of_closed_session(&mut e, seen);
    e.synthetic = Some(true);
    e.config_error = config_error.map(str::to_string);
    e.usage = Some(usage);
    e
}

/// The exchange an entry records, in the debug log.
fn note_exchange(entry: &QueueEntry, log: &mut DebugLog) {
    if !log.is_on() {
        return;
    }
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
