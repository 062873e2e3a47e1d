//! The tool calls of one ingest batch: PreToolUse and PostToolUse halves joined into
//! `tool_calls` rows, and the per-session totals of `session_tools` moved by what changed.
//!
//! A half with a call id joins the latest call of its key (its session and `toolCallId`)
//! while that call lacks a half, whether the call is in this batch or stored (`tool_calls_open`
//! indexes the incomplete ones); otherwise it starts a call of its own. The session is part of
//! the key: agents that number their calls (`call_1`, …) reuse ids across sessions, and a half
//! never completes another session's call. A half without a session id joins only halves
//! without one.
//!
//! Halves without a call id (Copilot CLI, Gemini CLI, Claude Code before 2.0) are paired
//! within their session and tool name, in the order they were read: a PostToolUse completes
//! the earliest PreToolUse still waiting for one, or among those the earliest with the same
//! `toolInput`, so that calls of one tool run in parallel find their own halves
//! (`tool_calls_unpaired` indexes the stored ones waiting). A PreToolUse never joins an earlier
//! PostToolUse: an agent writes a call's Pre before its Post, and a Post whose Pre was lost
//! would otherwise take the next call's Pre, and so on down the session. Such a half, and one
//! without a session id or a tool name, is a call of its own.
//!
//! A call's outcome (`tool_calls.outcome`) is what its PostToolUse said (`succeeded`,
//! `failed`, or `refused` for the agent's own permission check: Copilot's `denied` result, Claude
//! Code's `PermissionDenied`); `denied` when the safety gate denied its PreToolUse (unless a
//! PostToolUse says it ran after all); `abandoned` when its session ended (`SessionEnd`) while it
//! was in flight; and none while it is in flight, which is all "unfinished" means. A call
//! without an id that the gate denied waits only for a refusal (the agent reporting the denial),
//! and an abandoned one for nothing.
//!
//! These rules read only the lines before a half and what they left, so the rows come out the
//! same however the lines fall into batches.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use rusqlite::{params, Connection, OptionalExtension, Statement};

use super::Error;
use crate::model::queue_line::{tool_input, EventRow, HookType, UNKNOWN_SESSION};

/// The columns of a stored call that a batch reads back, as [`StoredCall::read`] takes them.
macro_rules! call_columns {
    () => {
        "rowid, tool_call_id, session_id, tool_name, start_ts, end_ts, duration_ms, outcome,
         result_type, pre_event_id, post_event_id, call_key, input, risk, decision,
         delegated_agent, permission_mode"
    };
}

/// The store's calls without an id of a session (?1) and tool (?2) waiting for their
/// PostToolUse (in flight, or denied by the gate), oldest first (`tool_calls_unpaired`), with
/// the line of each one's PreToolUse.
const WAITING_CALLS: &str = concat!(
    "SELECT ",
    call_columns!(),
    ", (SELECT entry FROM events WHERE id = pre_event_id) AS pre_entry
      FROM tool_calls
      WHERE session_id = ?1 AND tool_name = ?2 AND tool_call_id IS NULL AND end_ts IS NULL
        AND start_ts IS NOT NULL AND (outcome IS NULL OR outcome = 'denied')
      ORDER BY rowid"
);

/// The store's calls of a session (?1) in flight (`tool_calls_in_flight`).
pub(super) const IN_FLIGHT_CALLS: &str = concat!(
    "SELECT ",
    call_columns!(),
    " FROM tool_calls WHERE session_id = ?1 AND outcome IS NULL"
);

/// What became of a tool call (`tool_calls.outcome`); a call without one is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Its PostToolUse said it succeeded.
    Succeeded,
    /// A PostToolUseFailure, or a PostToolUse whose result type is `failure` or whose agent's
    /// signal (an exit code other than 0, `toolFailed`) says so.
    Failed,
    /// The safety gate denied its PreToolUse (`decision: "deny"`).
    Denied,
    /// The agent's own permission check refused it (a `denied` result, `PermissionDenied`).
    Refused,
    /// Its session ended while it was in flight.
    Abandoned,
}

impl Outcome {
    /// The `tool_calls.outcome` value.
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Denied => "denied",
            Outcome::Refused => "refused",
            Outcome::Abandoned => "abandoned",
        }
    }

    fn parse(value: &str) -> Option<Outcome> {
        [
            Outcome::Succeeded,
            Outcome::Failed,
            Outcome::Denied,
            Outcome::Refused,
            Outcome::Abandoned,
        ]
        .into_iter()
        .find(|o| o.as_str() == value)
    }

    /// What a closing half (PostToolUse, PostToolUseFailure, PermissionDenied) says.
    fn of_post(row: &EventRow<'_>) -> Outcome {
        match (row.kind, row.tool_result_type.as_deref()) {
            (Some(HookType::PostToolUseFailure), _) => Outcome::Failed,
            (Some(HookType::PostToolUse), Some("denied")) => Outcome::Refused,
            (Some(HookType::PostToolUse), _) if row.reports_tool_failure() => Outcome::Failed,
            (Some(HookType::PostToolUse), _) => Outcome::Succeeded,
            // PermissionDenied, the only other closing half.
            _ => Outcome::Refused,
        }
    }

    /// `tool_calls.success`: 1 succeeded, 0 failed, NULL otherwise (the tool did not run, or
    /// not yet, or nobody knows).
    fn success(outcome: Option<Outcome>) -> Option<bool> {
        match outcome? {
            Outcome::Succeeded => Some(true),
            Outcome::Failed => Some(false),
            _ => None,
        }
    }
}

/// A hash of a line's tool input text (equal texts, equal hashes, in every batch of a process:
/// the hasher's keys are fixed), for the halves of calls without an id.
fn input_hash(row: &EventRow<'_>) -> Option<u64> {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let input = row.tool_input.as_deref()?;
    let mut h = DefaultHasher::new();
    input.hash(&mut h);
    Some(h.finish())
}

/// True for Claude Code's `PermissionDenied`, which cmstore keeps raw (it is not one of the
/// canonical hook types): the auto-mode classifier refused the call of its `tool_use_id`.
pub(super) fn is_permission_denied(hook_type: Option<&str>) -> bool {
    hook_type.is_some_and(|h| h.eq_ignore_ascii_case("PermissionDenied"))
}

/// The store's call of a key (?1 the call key, ?2 the session id) that still lacks a half, if
/// any (`tool_calls_open`).
pub(super) const OPEN_CALL: &str = concat!(
    "SELECT ",
    call_columns!(),
    " FROM tool_calls
      WHERE call_key = ?1 AND session_id IS ?2 AND tool_call_id IS NOT NULL
        AND (start_ts IS NULL OR end_ts IS NULL)"
);

/// The tool calls of a batch, in the order their first half was read.
///
/// Their text (keys, ids, names) is kept in one buffer per batch: a bulk load sees ~700k
/// halves, and a `String` per field, allocated and freed, was a third of this module's time.
#[derive(Debug, Default)]
pub(super) struct ToolCalls<S = RandomState> {
    text: String,
    calls: Vec<ToolCallAgg>,
    /// The latest call of each key hash, session included (the calls of the same hash are
    /// chained, latest first).
    index: HashMap<u64, usize>,
    /// Calls without an id waiting for their PostToolUse, by session and tool name.
    waiting: HashMap<String, HashMap<String, Waiting>>,
    /// The stored calls this batch carries on: rowid to slot in `calls`.
    resumed: HashMap<i64, usize>,
    /// The calls of each session, by slot (what a `SessionEnd` looks through).
    by_session: HashMap<String, Vec<usize>>,
    hasher: S,
}

/// The calls without an id of one session and tool that wait for a PostToolUse, oldest first.
#[derive(Debug, Default)]
struct Waiting {
    /// The stored ones were read (once per batch, at the first PostToolUse that needs them).
    loaded: bool,
    calls: Vec<Waiter>,
}

/// A call waiting for its PostToolUse.
#[derive(Debug)]
enum Waiter {
    /// A call of this batch, by slot.
    Batch(usize),
    /// A stored call this batch has not touched yet, with its input's hash.
    Stored(Box<StoredCall>, Option<u64>),
}

/// Where a string is in [`ToolCalls::text`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
}

impl<S: BuildHasher> ToolCalls<S> {
    /// Adds one PreToolUse, PostToolUse, PostToolUseFailure or PermissionDenied row (new to the
    /// store).
    /// `open_call` is [`OPEN_CALL`], prepared. Returns how many negative durations the row
    /// brought that are not stored (each counts as
    /// [`NEGATIVE_DURATION`](crate::model::queue_line::NEGATIVE_DURATION)).
    pub(super) fn add(
        &mut self,
        open_call: &mut Statement<'_>,
        conn: &Connection,
        row: &EventRow<'_>,
    ) -> Result<i64, Error> {
        let is_pre = row.kind == Some(HookType::PreToolUse);
        let slot = match row.tool_call_id.as_deref() {
            Some(key) => self.keyed(open_call, row.session_id.as_deref(), key)?,
            None if is_pre => {
                let key = self.keep(&row.id);
                let slot = self.push(ToolCallAgg {
                    key,
                    input_hash: input_hash(row),
                    ..ToolCallAgg::default()
                });
                if let (Some(session), Some(tool)) = (&row.session_id, &row.tool_name) {
                    self.waiting_for(session, tool)
                        .calls
                        .push(Waiter::Batch(slot));
                }
                slot
            }
            None => match self.pair(conn, row)? {
                Some(slot) => slot,
                None => {
                    let key = self.keep(&row.id);
                    self.push(ToolCallAgg {
                        key,
                        ..ToolCallAgg::default()
                    })
                }
            },
        };
        Ok(self.apply(slot, row, is_pre))
    }

    fn push(&mut self, agg: ToolCallAgg) -> usize {
        self.calls.push(agg);
        self.calls.len() - 1
    }

    /// The waiting calls of `session` and `tool`.
    fn waiting_for(&mut self, session: &str, tool: &str) -> &mut Waiting {
        // Looked up by reference first: most halves go to a pair seen before in the batch.
        if !self.waiting.contains_key(session) {
            self.waiting.insert(session.to_string(), HashMap::new());
        }
        let tools = self.waiting.get_mut(session).expect("inserted above");
        if !tools.contains_key(tool) {
            tools.insert(tool.to_string(), Waiting::default());
        }
        tools.get_mut(tool).expect("inserted above")
    }

    /// The call a PostToolUse without an id completes, if one waits for it (see the module's
    /// documentation for the rule).
    fn pair(&mut self, conn: &Connection, row: &EventRow<'_>) -> Result<Option<usize>, Error> {
        let (Some(session), Some(tool)) = (row.session_id.as_deref(), row.tool_name.as_deref())
        else {
            return Ok(None);
        };
        if !self.waiting_for(session, tool).loaded {
            let mut stored = Vec::new();
            let mut stmt = conn.prepare_cached(WAITING_CALLS)?;
            let mut rows = stmt.query(params![session, tool])?;
            while let Some(r) = rows.next()? {
                let call = StoredCall::read(r)?;
                let entry: Option<String> = r.get("pre_entry")?;
                let hash = entry.and_then(|e| {
                    crate::model::queue_line::parse::parse_line(e.as_bytes(), 0)
                        .ok()
                        .and_then(|line| input_hash(&line))
                });
                stored.push(match self.resumed.get(&call.rowid) {
                    Some(&slot) => Waiter::Batch(slot),
                    None => Waiter::Stored(Box::new(call), hash),
                });
            }
            let waiting = self.waiting_for(session, tool);
            waiting.loaded = true;
            // The stored ones came first.
            stored.append(&mut waiting.calls);
            waiting.calls = stored;
        }
        let waiting = self
            .waiting
            .get_mut(session)
            .and_then(|tools| tools.get_mut(tool))
            .expect("made above");
        // The calls still waiting (the others leave the list), and the one to pair.
        let refusal = Outcome::of_post(row) == Outcome::Refused;
        let calls = &self.calls;
        let resumed = &self.resumed;
        // (still waiting for some Post, waiting for this one, its input).
        let state = |w: &Waiter| -> (bool, bool, Option<u64>) {
            let (start, end, outcome, input) = match w {
                Waiter::Stored(call, hash) if !resumed.contains_key(&call.rowid) => {
                    (call.start_ts, call.end_ts, call.outcome, *hash)
                }
                Waiter::Stored(call, _) => {
                    let c = &calls[resumed[&call.rowid]];
                    (c.start_ts, c.end_ts, c.outcome(), c.input_hash)
                }
                Waiter::Batch(slot) => {
                    let c = &calls[*slot];
                    (c.start_ts, c.end_ts, c.outcome(), c.input_hash)
                }
            };
            let open = start.is_some() && end.is_none();
            let waits = open && matches!(outcome, None | Some(Outcome::Denied));
            let for_this =
                open && (outcome.is_none() || (refusal && outcome == Some(Outcome::Denied)));
            (waits, for_this, input)
        };
        waiting.calls.retain(|w| state(w).0);
        let candidates = || waiting.calls.iter().enumerate().filter(|(_, w)| state(w).1);
        let chosen = input_hash(row)
            .and_then(|h| candidates().find(|(_, w)| state(w).2 == Some(h)))
            .or_else(|| candidates().next())
            .map(|(i, _)| i);
        let Some(i) = chosen else { return Ok(None) };
        let slot = match waiting.calls.remove(i) {
            Waiter::Batch(slot) => slot,
            Waiter::Stored(call, hash) => match self.resumed.get(&call.rowid) {
                Some(&slot) => slot,
                None => {
                    let agg = ToolCallAgg {
                        input_hash: hash,
                        ..ToolCallAgg::default()
                    };
                    self.resume(agg, *call)
                }
            },
        };
        Ok(Some(slot))
    }

    /// Marks the calls of `session` in flight as abandoned: its `SessionEnd` was read. The stored
    /// ones (`tool_calls_in_flight`) are carried on by this batch. `in_flight` is
    /// [`IN_FLIGHT_CALLS`], prepared.
    pub(super) fn end_session(
        &mut self,
        in_flight: &mut Statement<'_>,
        session: &str,
    ) -> Result<(), Error> {
        let mut rows = in_flight.query([session])?;
        while let Some(r) = rows.next()? {
            let call = StoredCall::read(r)?;
            if self.resumed.contains_key(&call.rowid) {
                continue;
            }
            let mut agg = ToolCallAgg::default();
            if call.tool_call_id.is_some() {
                // Found by its key later in this batch, as the store would find it.
                let hash = self
                    .hasher
                    .hash_one((Some(session), call.call_key.as_str()));
                agg.key = self.keep(&call.call_key);
                agg.same_hash = self.index.insert(hash, self.calls.len());
            }
            self.resume(agg, call);
        }
        for &slot in self.by_session.get(session).into_iter().flatten() {
            let c = &mut self.calls[slot];
            if c.outcome().is_none() {
                c.abandoned = true;
            }
        }
        Ok(())
    }

    /// The call a half with a call id belongs to (see the module's documentation).
    fn keyed(
        &mut self,
        open_call: &mut Statement<'_>,
        session: Option<&str>,
        key: &str,
    ) -> Result<usize, Error> {
        let hash = self.hasher.hash_one((session, key));
        // See the module's documentation for the rule.
        let slot = match self.latest(hash, session, key) {
            Some(i) if !self.calls[i].is_complete() => i,
            seen => {
                let stored = match seen {
                    // The store's incomplete call, if any, was joined by that earlier one.
                    Some(_) => None,
                    None => open_call
                        .query_row(params![key, session], StoredCall::read)
                        .optional()?,
                };
                let key = self.keep(key);
                let agg = ToolCallAgg {
                    key,
                    same_hash: self.index.insert(hash, self.calls.len()),
                    ..ToolCallAgg::default()
                };
                match stored {
                    Some(stored) => self.resume(agg, stored),
                    None => self.push(agg),
                }
            }
        };
        Ok(slot)
    }

    /// A call of this batch carrying on `stored` (its fields, and its share of the totals to
    /// take out), added to the batch: returns its slot.
    fn resume(&mut self, mut agg: ToolCallAgg, stored: StoredCall) -> usize {
        let text = |calls: &mut Self, v: &Option<String>| v.as_deref().map(|v| calls.keep(v));
        agg.tool_call_id = text(self, &stored.tool_call_id);
        agg.session_id = text(self, &stored.share.session_id);
        agg.tool_name = text(self, &stored.share.tool_name);
        agg.result_type = text(self, &stored.result_type);
        agg.pre_event_id = text(self, &stored.pre_event_id);
        agg.post_event_id = text(self, &stored.post_event_id);
        agg.input = text(self, &stored.input);
        // A stored call lacks a half: with a PreToolUse, its input is that line's.
        agg.input_from_pre = stored.start_ts.is_some() && stored.input.is_some();
        agg.risk = text(self, &stored.risk);
        agg.decision = text(self, &stored.decision);
        agg.delegated_agent = text(self, &stored.delegated_agent);
        agg.permission_mode = text(self, &stored.permission_mode);
        agg.start_ts = stored.start_ts;
        agg.end_ts = stored.end_ts;
        // A call lacking a half has no duration but the one its half reported.
        agg.reported_ms = stored.share.duration_ms.filter(|ms| *ms >= 0);
        match stored.outcome {
            _ if stored.end_ts.is_some() => agg.post = stored.outcome,
            Some(Outcome::Denied) => agg.gate_denied = true,
            Some(Outcome::Abandoned) => agg.abandoned = true,
            _ => {}
        }
        agg.stored = Some(stored.rowid);
        let session = stored.share.session_id.clone();
        agg.was = Some(stored.share);
        let slot = self.push(agg);
        self.resumed.insert(stored.rowid, slot);
        if let Some(session) = session {
            self.of_session(slot, &session);
        }
        slot
    }

    /// Records that the call in `slot` belongs to `session`.
    fn of_session(&mut self, slot: usize, session: &str) {
        match self.by_session.get_mut(session) {
            Some(slots) => slots.push(slot),
            None => {
                self.by_session.insert(session.to_string(), vec![slot]);
            }
        }
    }

    /// Applies one half to the call in `slot`: what it says wins, what it does not say stays.
    /// Returns the negative durations it brought (see [`ToolCalls::add`]).
    fn apply(&mut self, slot: usize, row: &EventRow<'_>, is_pre: bool) -> i64 {
        for (field, value) in [
            (Field::ToolCallId, &row.tool_call_id),
            (Field::SessionId, &row.session_id),
            (Field::ToolName, &row.tool_name),
        ] {
            if let Some(value) = value.as_deref() {
                if self.calls[slot].field(field).is_none() {
                    let span = self.keep(value);
                    *self.calls[slot].field(field) = Some(span);
                    if let Field::SessionId = field {
                        self.of_session(slot, value);
                    }
                }
            }
        }
        let id = self.keep(&row.id);
        let result_type = row.tool_result_type.as_deref().map(|r| self.keep(r));
        self.shown(slot, row, is_pre);
        let agg = &mut self.calls[slot];
        let was_complete = agg.is_complete();
        let mut negative = 0;
        if is_pre {
            agg.start_ts = Some(row.ts);
            agg.pre_event_id = Some(id);
            agg.gate_denied |= row.decision.as_deref() == Some("deny");
        } else {
            // A later half wins, but only with what it says.
            agg.end_ts = Some(row.ts);
            match row.duration_ms {
                Some(ms) if ms < 0 => negative += 1,
                Some(ms) => agg.reported_ms = Some(ms),
                None => {}
            }
            agg.post = Some(Outcome::of_post(row));
            if result_type.is_some() {
                agg.result_type = result_type;
            }
            agg.post_event_id = Some(id);
        }
        // Once both halves are in: an end before the start is no duration (once per call,
        // whichever batch its halves came in).
        if !was_complete && agg.is_complete() && agg.duration().is_none() {
            negative += 1;
        }
        negative
    }

    /// Keeps what the story shows of the call from this half: the PreToolUse's input (else
    /// the PostToolUse's), and the PreToolUse's finding and delegation, as the story read them
    /// from the lines before migration 0019 (the line of the call's `pre_event_id`, else of its
    /// `post_event_id`).
    fn shown(&mut self, slot: usize, row: &EventRow<'_>, is_pre: bool) {
        let from_line = |calls: &mut Self| {
            let text = row.tool_input.as_deref().and_then(tool_input::story_text)?;
            Some(calls.keep(&tool_input::stored(text)))
        };
        if is_pre {
            let input = from_line(self);
            let risk = row.risk.as_deref().map(|v| self.keep(v));
            let decision = row.decision.as_deref().map(|v| self.keep(v));
            let delegated = row.delegated_agent.as_deref().map(|v| self.keep(v));
            let mode = row.permission_mode.as_deref().map(|v| self.keep(v));
            let agg = &mut self.calls[slot];
            agg.input_from_pre = input.is_some();
            // Without an input of its own, the call shows its PostToolUse's, if one came.
            if input.is_some() || agg.post_event_id.is_none() {
                agg.input = input;
            }
            agg.risk = risk;
            agg.decision = decision;
            agg.delegated_agent = delegated;
            agg.permission_mode = mode;
        } else if !self.calls[slot].input_from_pre {
            let input = from_line(self);
            self.calls[slot].input = input;
        }
    }

    /// The latest call of `key` in `session` in this batch.
    fn latest(&self, hash: u64, session: Option<&str>, key: &str) -> Option<usize> {
        let mut at = self.index.get(&hash).copied();
        while let Some(i) = at {
            let call = &self.calls[i];
            if self.str(call.key) == key && self.opt_str(call.session_id) == session {
                return Some(i);
            }
            at = self.calls[i].same_hash;
        }
        None
    }

    /// Copies `value` into the batch's text.
    fn keep(&mut self, value: &str) -> Span {
        let start = self.text.len();
        self.text.push_str(value);
        Span {
            start,
            end: self.text.len(),
        }
    }

    fn str(&self, span: Span) -> &str {
        &self.text[span.start..span.end]
    }

    fn opt_str(&self, span: Option<Span>) -> Option<&str> {
        span.map(|span| self.str(span))
    }

    /// Binds `first` (?1: the call's key to insert, or the rowid of the stored call it
    /// carries on) and the call's fields (?2–?17), which the two statements of
    /// [`ToolCalls::flush`] take alike.
    fn bind_call(
        &self,
        stmt: &mut Statement<'_>,
        first: impl rusqlite::ToSql,
        c: &ToolCallAgg,
    ) -> rusqlite::Result<()> {
        if stmt.parameter_count() != 17 {
            return Err(rusqlite::Error::InvalidParameterCount(
                17,
                stmt.parameter_count(),
            ));
        }
        let outcome = c.outcome();
        stmt.raw_bind_parameter(1, first)?;
        stmt.raw_bind_parameter(2, self.opt_str(c.tool_call_id))?;
        stmt.raw_bind_parameter(3, self.opt_str(c.session_id))?;
        stmt.raw_bind_parameter(4, self.opt_str(c.tool_name))?;
        stmt.raw_bind_parameter(5, c.start_ts)?;
        stmt.raw_bind_parameter(6, c.end_ts)?;
        stmt.raw_bind_parameter(7, c.duration())?;
        stmt.raw_bind_parameter(8, Outcome::success(outcome))?;
        stmt.raw_bind_parameter(9, self.opt_str(c.result_type))?;
        stmt.raw_bind_parameter(10, self.opt_str(c.pre_event_id))?;
        stmt.raw_bind_parameter(11, self.opt_str(c.post_event_id))?;
        stmt.raw_bind_parameter(12, outcome.map(Outcome::as_str))?;
        stmt.raw_bind_parameter(13, self.opt_str(c.input))?;
        stmt.raw_bind_parameter(14, self.opt_str(c.risk))?;
        stmt.raw_bind_parameter(15, self.opt_str(c.decision))?;
        stmt.raw_bind_parameter(16, self.opt_str(c.delegated_agent))?;
        stmt.raw_bind_parameter(17, self.opt_str(c.permission_mode))
    }

    /// Writes this batch's tool calls: a call stored before (one half came in an earlier batch)
    /// is rewritten in place, any other becomes a new row. The per-session tool totals move by
    /// what changed: the stored row's share out, the call's share now in.
    pub(super) fn flush(&mut self, tx: &Connection) -> Result<(), Error> {
        if self.calls.is_empty() {
            return Ok(());
        }
        let mut totals = Totals::default();
        {
            let mut update = tx.prepare_cached(
                "UPDATE tool_calls SET tool_call_id = ?2, session_id = ?3, tool_name = ?4,
                   start_ts = ?5, end_ts = ?6, duration_ms = ?7, success = ?8, result_type = ?9,
                   pre_event_id = ?10, post_event_id = ?11, outcome = ?12, input = ?13,
                   risk = ?14, decision = ?15, delegated_agent = ?16, permission_mode = ?17
                 WHERE rowid = ?1",
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, start_ts,
                   end_ts, duration_ms, success, result_type, pre_event_id, post_event_id,
                   outcome, input, risk, decision, delegated_agent, permission_mode)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                   ?17)",
            )?;
            for c in &self.calls {
                if let Some(was) = &c.was {
                    totals
                        .get(was.session_id.as_deref(), was.tool_name.as_deref())
                        .remove(was.outcome, was.duration_ms);
                }
                match c.stored {
                    Some(rowid) => {
                        self.bind_call(&mut update, rowid, c)?;
                        if update.raw_execute()? != 1 {
                            return Err(rusqlite::Error::QueryReturnedNoRows.into());
                        }
                    }
                    None => {
                        self.bind_call(&mut insert, self.str(c.key), c)?;
                        insert.raw_execute()?;
                    }
                }
                totals
                    .get(self.opt_str(c.session_id), self.opt_str(c.tool_name))
                    .add(c.outcome(), c.duration(), c.start_ts.max(c.end_ts));
            }
        }
        self.text.clear();
        self.calls.clear();
        self.index.clear();
        self.waiting.clear();
        self.resumed.clear();
        self.by_session.clear();
        let mut upsert = tx.prepare_cached(
            "INSERT INTO session_tools(session_id, tool_name, calls, succeeded, failed, unfinished,
               total_ms, timed, max_ms, last_ts, denied, refused, abandoned)
             VALUES (?1, ?2, max(?3, 0), max(?4, 0), max(?5, 0), max(?6, 0), ?7, max(?8, 0), ?9,
               coalesce(?10, 0), max(?11, 0), max(?12, 0), max(?13, 0))
             ON CONFLICT(session_id, tool_name) DO UPDATE SET
               calls = calls + ?3,
               succeeded = succeeded + ?4,
               failed = failed + ?5,
               unfinished = unfinished + ?6,
               total_ms = total_ms + ?7,
               timed = timed + ?8,
               max_ms = max(coalesce(max_ms, ?9), coalesce(?9, max_ms)),
               last_ts = max(last_ts, coalesce(?10, last_ts)),
               denied = denied + ?11,
               refused = refused + ?12,
               abandoned = abandoned + ?13",
        )?;
        // A joined call can move to another row (its session or tool name came with the
        // second half); a row left without calls goes.
        let mut drop_empty = tx.prepare_cached(
            "DELETE FROM session_tools WHERE session_id = ?1 AND tool_name = ?2 AND calls <= 0",
        )?;
        for (session_id, tools) in &totals.0 {
            for (tool_name, t) in tools {
                execute_bound!(&mut upsert;
                    session_id,
                    tool_name,
                    t.calls,
                    t.succeeded,
                    t.failed,
                    t.unfinished,
                    t.total_ms,
                    t.timed,
                    t.max_ms,
                    t.last_ts,
                    t.denied,
                    t.refused,
                    t.abandoned,
                )?;
                if t.calls < 0 {
                    drop_empty.execute(params![session_id, tool_name])?;
                }
            }
        }
        Ok(())
    }
}

/// A batch's changes to `session_tools`, by session id and tool name.
#[derive(Debug, Default)]
struct Totals(HashMap<String, HashMap<String, ToolTotals>>);

impl Totals {
    /// The change to the row of a call's session and tool: calls without a session id count
    /// under [`UNKNOWN_SESSION`], calls without a tool name under ''.
    fn get(&mut self, session_id: Option<&str>, tool_name: Option<&str>) -> &mut ToolTotals {
        let session_id = session_id.unwrap_or(UNKNOWN_SESSION);
        let tool_name = tool_name.unwrap_or_default();
        // Looked up by reference first: most calls go to a row seen before in the batch.
        if !self.0.contains_key(session_id) {
            self.0.insert(session_id.to_string(), HashMap::new());
        }
        let tools = self.0.get_mut(session_id).expect("inserted above");
        if !tools.contains_key(tool_name) {
            tools.insert(tool_name.to_string(), ToolTotals::default());
        }
        tools.get_mut(tool_name).expect("inserted above")
    }
}

/// Which text field of a call.
#[derive(Debug, Clone, Copy)]
enum Field {
    ToolCallId,
    SessionId,
    ToolName,
}

/// A tool call as this batch leaves it: its stored state, if any, and the halves read since.
#[derive(Debug, Default)]
struct ToolCallAgg {
    key: Span,
    /// The call with the same key hash before this one (the same key or a collision).
    same_hash: Option<usize>,
    tool_call_id: Option<Span>,
    session_id: Option<Span>,
    tool_name: Option<Span>,
    start_ts: Option<i64>,
    end_ts: Option<i64>,
    /// The duration a half reported (never negative: a negative one is dropped).
    reported_ms: Option<i64>,
    /// What its closing half said.
    post: Option<Outcome>,
    /// The safety gate denied its PreToolUse.
    gate_denied: bool,
    /// Its session ended while it was in flight.
    abandoned: bool,
    result_type: Option<Span>,
    pre_event_id: Option<Span>,
    post_event_id: Option<Span>,
    /// The tool input as the story shows it (`tool_calls.input`).
    input: Option<Span>,
    /// `input` is the PreToolUse's: a PostToolUse does not replace it.
    input_from_pre: bool,
    /// The PreToolUse's `risk`, `decision` and `delegated_agent`.
    risk: Option<Span>,
    decision: Option<Span>,
    delegated_agent: Option<Span>,
    /// The PreToolUse's `permissionMode` (`tool_calls.permission_mode`, 0030).
    permission_mode: Option<Span>,
    /// The hash of the PreToolUse's `toolInput` (calls without an id).
    input_hash: Option<u64>,
    /// The rowid of the stored call this one carries on.
    stored: Option<i64>,
    /// What that stored row added to `session_tools`.
    was: Option<CallShare>,
}

impl ToolCallAgg {
    /// Both halves seen (the test of the `tool_calls_open` index).
    fn is_complete(&self) -> bool {
        self.start_ts.is_some() && self.end_ts.is_some()
    }

    /// What became of it (see the module's documentation); `None` while in flight.
    fn outcome(&self) -> Option<Outcome> {
        match self.post {
            // It ran after all.
            Some(Outcome::Succeeded) => Some(Outcome::Succeeded),
            // The agent reporting the gate's denial (or its consequence).
            Some(_) if self.gate_denied => Some(Outcome::Denied),
            Some(said) => Some(said),
            None if self.gate_denied => Some(Outcome::Denied),
            None if self.abandoned => Some(Outcome::Abandoned),
            None => None,
        }
    }

    /// The agent's own figure, else end minus start; never negative.
    fn duration(&self) -> Option<i64> {
        self.reported_ms.or_else(|| {
            // Saturating, as SQLite's arithmetic on absurd timestamps from the queue was.
            let ms = self.end_ts?.saturating_sub(self.start_ts?);
            (ms >= 0).then_some(ms)
        })
    }

    fn field(&mut self, field: Field) -> &mut Option<Span> {
        match field {
            Field::ToolCallId => &mut self.tool_call_id,
            Field::SessionId => &mut self.session_id,
            Field::ToolName => &mut self.tool_name,
        }
    }
}

/// A `tool_calls` row a batch carries on (it lacks a half).
#[derive(Debug)]
struct StoredCall {
    rowid: i64,
    call_key: String,
    tool_call_id: Option<String>,
    start_ts: Option<i64>,
    end_ts: Option<i64>,
    result_type: Option<String>,
    pre_event_id: Option<String>,
    post_event_id: Option<String>,
    outcome: Option<Outcome>,
    input: Option<String>,
    risk: Option<String>,
    decision: Option<String>,
    delegated_agent: Option<String>,
    permission_mode: Option<String>,
    /// What the row adds to `session_tools` now.
    share: CallShare,
}

impl StoredCall {
    /// A row selected as `call_columns!()`.
    fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredCall> {
        let outcome = r
            .get::<_, Option<String>>(7)?
            .as_deref()
            .and_then(Outcome::parse);
        Ok(StoredCall {
            rowid: r.get(0)?,
            call_key: r.get(11)?,
            tool_call_id: r.get(1)?,
            outcome,
            share: CallShare {
                session_id: r.get(2)?,
                tool_name: r.get(3)?,
                duration_ms: whole_ms(r.get(6)?),
                outcome,
            },
            start_ts: r.get(4)?,
            end_ts: r.get(5)?,
            result_type: r.get(8)?,
            pre_event_id: r.get(9)?,
            post_event_id: r.get(10)?,
            input: r.get(12)?,
            risk: r.get(13)?,
            decision: r.get(14)?,
            delegated_agent: r.get(15)?,
            permission_mode: r.get(16)?,
        })
    }
}

/// What one `tool_calls` row adds to its `session_tools` row.
#[derive(Debug)]
struct CallShare {
    session_id: Option<String>,
    tool_name: Option<String>,
    outcome: Option<Outcome>,
    duration_ms: Option<i64>,
}

/// A duration as stored: SQLite turns `end - start` into a REAL when it overflows (timestamps
/// come from the queue unchecked), which must not fail the batch.
fn whole_ms(value: rusqlite::types::Value) -> Option<i64> {
    match value {
        rusqlite::types::Value::Integer(ms) => Some(ms),
        // `as` saturates at the i64 range.
        rusqlite::types::Value::Real(ms) if ms.is_finite() => Some(ms as i64),
        _ => None,
    }
}

/// A batch's change to one `session_tools` row.
#[derive(Debug, Default)]
struct ToolTotals {
    calls: i64,
    succeeded: i64,
    failed: i64,
    /// In flight.
    unfinished: i64,
    denied: i64,
    refused: i64,
    abandoned: i64,
    total_ms: i64,
    timed: i64,
    max_ms: Option<i64>,
    last_ts: Option<i64>,
}

impl ToolTotals {
    /// The counter of `outcome`.
    fn count(&mut self, outcome: Option<Outcome>) -> &mut i64 {
        match outcome {
            Some(Outcome::Succeeded) => &mut self.succeeded,
            Some(Outcome::Failed) => &mut self.failed,
            Some(Outcome::Denied) => &mut self.denied,
            Some(Outcome::Refused) => &mut self.refused,
            Some(Outcome::Abandoned) => &mut self.abandoned,
            None => &mut self.unfinished,
        }
    }

    fn add(&mut self, outcome: Option<Outcome>, duration_ms: Option<i64>, last_ts: Option<i64>) {
        self.calls += 1;
        *self.count(outcome) += 1;
        if let Some(ms) = duration_ms {
            self.total_ms = self.total_ms.saturating_add(ms);
            self.timed += 1;
            self.max_ms = Some(self.max_ms.map_or(ms, |m| m.max(ms)));
        }
        self.last_ts = self.last_ts.max(last_ts);
    }

    /// Takes a stored call's share back out before it is joined. Its duration stays in
    /// `max_ms`: a join keeps a known duration unless the new half reports another.
    fn remove(&mut self, outcome: Option<Outcome>, duration_ms: Option<i64>) {
        self.calls -= 1;
        *self.count(outcome) -= 1;
        if let Some(ms) = duration_ms {
            self.total_ms = self.total_ms.saturating_sub(ms);
            self.timed -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasherDefault, Hasher};

    use super::*;
    use HookType::{PostToolUse, PreToolUse};

    /// Hashes every key alike: finding a key's latest call must go down the chain.
    #[derive(Debug, Default)]
    struct Colliding;

    impl Hasher for Colliding {
        fn finish(&self) -> u64 {
            7
        }
        fn write(&mut self, _: &[u8]) {}
    }

    /// The `tool_calls` rows (key, start, end) that `halves` (kind, key, time) make in one batch.
    fn rows<S: BuildHasher + Default>(
        halves: &[(HookType, &str, i64)],
    ) -> Vec<(String, Option<i64>, Option<i64>)> {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::open(&dir.path().join("t.db")).unwrap();
        let conn = store.conn().unwrap();
        let mut open_call = conn.prepare(OPEN_CALL).unwrap();
        let mut calls = ToolCalls::<S>::default();
        for (i, &(kind, key, ts)) in halves.iter().enumerate() {
            let row = EventRow {
                id: format!("e{i}").into(),
                ts,
                kind: Some(kind),
                tool_call_id: Some(key.into()),
                session_id: Some("s".into()),
                tool_name: Some("Bash".into()),
                ..EventRow::default()
            };
            calls.add(&mut open_call, &conn, &row).unwrap();
        }
        calls.flush(&conn).unwrap();
        let mut select = conn
            .prepare("SELECT call_key, start_ts, end_ts FROM tool_calls ORDER BY rowid")
            .unwrap();
        let found = select
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        found
    }

    #[test]
    fn calls_whose_keys_hash_alike_stay_apart() {
        let halves = [
            (PreToolUse, "a", 1),
            (PreToolUse, "b", 2),
            (PostToolUse, "a", 3),
            // A second call of key a: a call of its own, and the one its Post joins.
            (PreToolUse, "a", 4),
            (PostToolUse, "b", 5),
            (PostToolUse, "a", 6),
            (PostToolUse, "c", 7),
        ];
        let colliding = rows::<BuildHasherDefault<Colliding>>(&halves);
        let want: Vec<(String, Option<i64>, Option<i64>)> = vec![
            ("a".into(), Some(1), Some(3)),
            ("b".into(), Some(2), Some(5)),
            ("a".into(), Some(4), Some(6)),
            ("c".into(), None, Some(7)),
        ];
        assert_eq!(colliding, want);
        assert_eq!(rows::<RandomState>(&halves), want);
    }
}
