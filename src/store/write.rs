//! One ingest batch: event rows, derived rows, unknown counters, rejects and the new offset,
//! all in one `BEGIN IMMEDIATE` transaction that commits only if the offset is still where the
//! batch found it (compare-and-set).
//!
//! Derived rows and counters are written only when the event row is new, so a replayed line
//! (after a crash, a rotation or a second ingester) changes nothing.

use std::collections::HashMap;

use rusqlite::{
    params, CachedStatement, Connection, OptionalExtension, Transaction, TransactionBehavior,
};

use super::continued_turn;
use super::tool_calls::{self, ToolCalls};
use super::Error;
use crate::model::agents::Agent;
use crate::model::queue_line::parse::at_file_start;
use crate::model::queue_line::{EventRow, HookType, NEGATIVE_DURATION, UNKNOWN_SESSION};

/// Inserts one event row, unless its id is stored already.
const INSERT_EVENT: &str = "
    INSERT INTO events(id, ts, hook_type, event, agent, session_id, tool_name, tool_call_id,
      turn_id, model, cwd, origin, actor_name, actor_type, delegated_agent, synthetic, prompt,
      response, tool_result_type, duration_ms, size_bytes, estimated_tokens, entry, source_id,
      source_offset, ingested_at, producer, risk, decision)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
      ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)
    ON CONFLICT(id) DO NOTHING";

/// One (session, turn) row: the incoming fields win unless they are synthetic (harvested from
/// the transcript) and the stored row is real. A line without a prompt (Codex's Stop) takes
/// the one its turn's UserPromptSubmit gave.
const UPSERT_TURN: &str = "
    INSERT INTO turns(session_id, turn_key, turn_id, ts, hook_type, prompt, response,
      tool_call_count, synthetic, event_id, model, thinking, outcome, feedback)
    VALUES (?1, ?2, ?3, ?4, ?5, coalesce(?6, (SELECT e.prompt FROM events e
        WHERE e.hook_type = 'UserPromptSubmit' AND e.turn_id IS NOT NULL
          AND e.session_id = ?12 AND e.turn_id = ?3 AND e.prompt IS NOT NULL
        ORDER BY e.ts DESC LIMIT 1)),
      ?7, ?8, ?9, ?10, ?11, ?13, ?14, ?15)
    ON CONFLICT(session_id, turn_key) DO UPDATE SET
      outcome = coalesce(excluded.outcome, outcome),
      feedback = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN coalesce(excluded.feedback, feedback) ELSE coalesce(feedback, excluded.feedback) END,
      ts = CASE WHEN excluded.synthetic = 0 OR synthetic = 1 THEN excluded.ts ELSE ts END,
      hook_type = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN excluded.hook_type ELSE hook_type END,
      prompt = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN coalesce(excluded.prompt, prompt) ELSE coalesce(prompt, excluded.prompt) END,
      response = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN coalesce(excluded.response, response) ELSE coalesce(response, excluded.response) END,
      tool_call_count = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN coalesce(excluded.tool_call_count, tool_call_count)
        ELSE coalesce(tool_call_count, excluded.tool_call_count) END,
      event_id = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN excluded.event_id ELSE event_id END,
      model = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN coalesce(excluded.model, model) ELSE coalesce(model, excluded.model) END,
      thinking = CASE WHEN excluded.synthetic = 0 OR synthetic = 1
        THEN coalesce(excluded.thinking, thinking) ELSE coalesce(thinking, excluded.thinking) END,
      synthetic = min(synthetic, excluded.synthetic),
      imported = 0";

/// The turn a Codex `Interrupt` (?1 session, ?2 turn key, ?3 turn id, ?4 time, ?5 event id,
/// ?6 model) cut short: `interrupted`, with the prompt of its `UserPromptSubmit` (same turn id).
const INTERRUPTED_TURN: &str = "
    INSERT INTO turns(session_id, turn_key, turn_id, ts, hook_type, prompt, synthetic, event_id,
      model, outcome)
    VALUES (?1, ?2, ?3, ?4, 'Interrupt',
      (SELECT prompt FROM events WHERE session_id = ?1 AND turn_id = ?3
         AND hook_type = 'UserPromptSubmit' ORDER BY seq DESC LIMIT 1),
      0, ?5, ?6, 'interrupted')
    ON CONFLICT(session_id, turn_key) DO UPDATE SET
      outcome = 'interrupted', prompt = coalesce(prompt, excluded.prompt), imported = 0";

/// The turn of session ?1 an import read from its transcript before the hooks recorded it
/// (issue 37), of an agent whose hooks name no turn (Gemini CLI, OpenCode), found by what the
/// hooks know of it: its prompt ?2, and its end within two minutes of the Stop's time ?3, or
/// its prompt within two minutes of the prompt event's ?4 (a long turn an import read while it
/// went on). This is how a hook's row and an imported one become one.
const IMPORTED_TURN_BY_PROMPT: &str = "
    SELECT t.turn_key FROM turns t
    LEFT JOIN transcript_items i
      ON i.session_id = t.session_id AND i.kind = 'turn' AND i.item_id = t.turn_key
    WHERE t.session_id = ?1 AND t.imported = 1 AND t.hook_type = 'Stop'
      AND ?2 IS NOT NULL AND t.prompt = ?2
      AND min(abs(t.ts - ?3), abs(coalesce(i.ts, t.ts) - coalesce(?4, ?3))) <= 120000
    ORDER BY min(abs(t.ts - ?3), abs(coalesce(i.ts, t.ts) - coalesce(?4, ?3))) LIMIT 1";

/// When session ?1's prompt ?2 was submitted last before the event ?3.
const PROMPT_TIME: &str = "
    SELECT max(ts) FROM events
    WHERE session_id = ?1 AND hook_type = 'UserPromptSubmit' AND prompt = ?2
      AND seq < (SELECT seq FROM events WHERE id = ?3)";

/// A Gemini CLI session's previous prompt (before the event ?2 of session ?1) when no `Stop`
/// (`AfterAgent`) followed it: its turn was interrupted (Gemini fires no hook for that). An
/// import that read the turn first ([`IMPORTED_TURN_BY_PROMPT`]'s rule) keeps its row, which
/// becomes the hooks' and `interrupted`.
const UNANSWERED_PROMPT: &str = "
    INSERT INTO turns(session_id, turn_key, turn_id, ts, hook_type, prompt, synthetic, event_id,
      outcome)
    SELECT p.session_id,
      coalesce((SELECT t.turn_key FROM turns t
                LEFT JOIN transcript_items i
                  ON i.session_id = t.session_id AND i.kind = 'turn' AND i.item_id = t.turn_key
                WHERE t.session_id = p.session_id AND t.imported = 1 AND t.hook_type = 'Stop'
                  AND p.prompt IS NOT NULL AND t.prompt = p.prompt
                  AND min(abs(t.ts - p.ts), abs(coalesce(i.ts, t.ts) - p.ts)) <= 120000
                ORDER BY min(abs(t.ts - p.ts), abs(coalesce(i.ts, t.ts) - p.ts)) LIMIT 1),
               p.id),
      p.turn_id, p.ts, p.hook_type, p.prompt, 0, p.id, 'interrupted'
    FROM events p, (SELECT seq AS now FROM events WHERE id = ?2) c
    WHERE p.seq = (SELECT max(seq) FROM events
                   WHERE session_id = ?1 AND hook_type = 'UserPromptSubmit' AND seq < c.now)
      AND NOT EXISTS (SELECT 1 FROM events s
                      WHERE s.session_id = ?1 AND s.seq > p.seq AND s.seq < c.now
                        AND s.hook_type IN ('Stop', 'Interrupt', 'StopFailure'))
    ON CONFLICT(session_id, turn_key) DO UPDATE SET
      outcome = 'interrupted', event_id = excluded.event_id, imported = 0
    WHERE imported = 1";
/// The Stop (event ?2 of session ?1) of an agent whose Stop names neither its prompt nor its
/// turn (Cursor's `stop`, Kiro's): its prompt is the session's last `UserPromptSubmit`
/// before it, its answer (when the Stop has none) Cursor's last `afterAgentResponse` between
/// the two (docs/agents.md, "Cursor", "Kiro").
const PROMPT_BEFORE_STOP: &str = "
    SELECT p.prompt,
           (SELECT a.response FROM events a
            WHERE a.session_id = ?1 AND a.hook_type = 'afterAgentResponse'
              AND a.seq > coalesce(p.seq, 0) AND a.seq < s.seq
            ORDER BY a.seq DESC LIMIT 1)
    FROM (SELECT seq FROM events WHERE id = ?2) s
    LEFT JOIN events p ON p.seq = (SELECT max(seq) FROM events
        WHERE session_id = ?1 AND hook_type = 'UserPromptSubmit' AND seq < s.seq)";

/// A prompt that came after its turn's row (Codex: UserPromptSubmit and Stop share a
/// `turn_id`), into the row that has none.
const FILL_TURN_PROMPT: &str = "
    UPDATE turns SET prompt = ?3 WHERE session_id = ?1 AND turn_key = ?2 AND prompt IS NULL";

/// A row of `sources`: one identified generation of a queue file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRow {
    /// Row id, referenced by `events.source_id` and `rejects.source_id`.
    pub id: i64,
    /// The queue path, absolute.
    pub path: String,
    /// Committed byte offset: always just after a newline.
    pub offset: i64,
    /// Device of the file (Unix).
    pub device: Option<i64>,
    /// Inode of the file (Unix).
    pub inode: Option<i64>,
    /// Hash of the first line, once it is complete.
    pub fingerprint: Option<String>,
    /// Hash of the bytes just before `offset`.
    pub marker: Option<String>,
    /// Complete lines consumed so far.
    pub lines: i64,
}

/// Where a batch leaves a source: the compare-and-set target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advance {
    /// The new offset, just after the last line consumed.
    pub offset: i64,
    /// Hash of the bytes before the new offset.
    pub marker: Option<String>,
    /// Fingerprint to record if none is stored yet.
    pub fingerprint: Option<String>,
    /// File size seen by the batch.
    pub size: i64,
    /// Lines consumed by the batch.
    pub lines: i64,
}

#[derive(Debug, Default)]
struct SessionAgg {
    agent: Option<String>,
    model: Option<String>,
    cwd: Option<String>,
    first_seen: i64,
    last_seen: i64,
    events: i64,
    prompts: i64,
    tool_uses: i64,
    tool_failures: i64,
    stops: i64,
    tokens: i64,
    ended_at: Option<i64>,
}

impl SessionAgg {
    /// A session's figures in a batch, begun by an event at `ts`.
    fn starting(ts: i64) -> SessionAgg {
        SessionAgg {
            first_seen: ts,
            last_seen: ts,
            ..SessionAgg::default()
        }
    }
}

/// One (hour, session) of the events' rollup (`hourly_sessions`, migrations 0016 and 0031):
/// the figures of the new events a batch adds, or of the events a prune deletes.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct HourAgg {
    pub(super) events: i64,
    pub(super) prompts: i64,
    pub(super) tool_uses: i64,
    pub(super) tool_failures: i64,
    pub(super) stops: i64,
    pub(super) tokens: i64,
}

impl HourAgg {
    /// Counts one event, by its `hook_type` as written and what `event` says of it (a failed
    /// tool call by [`EventRow::reports_tool_failure`], as `sessions` counts them).
    pub(super) fn add(&mut self, hook_type: Option<&str>, event: RollupEvent, tokens: Option<i64>) {
        self.events += 1;
        match hook_type {
            Some("UserPromptSubmit") => self.prompts += 1,
            Some("PostToolUse" | "PostToolUseFailure") => {
                self.tool_uses += 1;
                self.tool_failures += i64::from(event.failure);
            }
            Some("Stop" | "SubagentStop") if !event.synthetic => self.stops += 1,
            _ => {}
        }
        // Saturating: the figure comes from the line as written (see migration 0007).
        self.tokens = self.tokens.saturating_add(tokens.unwrap_or(0));
    }
}

/// What the hourly rollup needs of an event besides its type.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RollupEvent {
    /// A harvested turn's synthetic Stop (not a firing).
    pub(super) synthetic: bool,
    /// It reports a failed tool call.
    pub(super) failure: bool,
}

/// The rollup key of an event at `ts`: its UTC hour number (as `date(ts / 1000,
/// 'unixepoch')` reads seconds: truncated toward zero, then floored to the hour) and its
/// session.
pub(super) fn hour_key(ts: i64, session_id: Option<&str>) -> (i64, Option<String>) {
    (
        (ts / 1000).div_euclid(3_600),
        session_id.map(str::to_string),
    )
}

/// Adds (or, with `sign` -1, takes away) one rollup row's figures; a row left without events
/// goes.
pub(super) fn apply_hours(
    tx: &Connection,
    hours: impl IntoIterator<Item = ((i64, Option<String>), HourAgg)>,
    sign: i64,
) -> rusqlite::Result<()> {
    let mut upsert = tx.prepare_cached(
        "INSERT INTO hourly_sessions(hour_n, no_session, session_id, events, prompts, tool_uses,
           tool_failures, stops, estimated_tokens)
         VALUES (?1, ?2, coalesce(?3, ''), ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT(hour_n, no_session, session_id) DO UPDATE SET
           events = events + excluded.events,
           prompts = prompts + excluded.prompts,
           tool_uses = tool_uses + excluded.tool_uses,
           tool_failures = tool_failures + excluded.tool_failures,
           stops = stops + excluded.stops,
           -- Past the 64-bit range SQLite's + gives a REAL, which CAST saturates.
           estimated_tokens = CAST(estimated_tokens + excluded.estimated_tokens AS INTEGER)",
    )?;
    let mut empty = tx.prepare_cached(
        "DELETE FROM hourly_sessions WHERE hour_n = ?1 AND no_session = ?2
           AND session_id = coalesce(?3, '') AND events <= 0",
    )?;
    for ((hour, session), d) in hours {
        let no_session = session.is_none();
        upsert.execute(params![
            hour,
            no_session,
            session,
            sign * d.events,
            sign * d.prompts,
            sign * d.tool_uses,
            sign * d.tool_failures,
            sign * d.stops,
            d.tokens.saturating_mul(sign),
        ])?;
        if sign < 0 {
            empty.execute(params![hour, no_session, session])?;
        }
    }
    Ok(())
}

/// What a batch wrote.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BatchCounts {
    /// New `events` rows.
    pub rows: u64,
    /// Lines already stored (an event's id, a reject's key), or stored once and pruned since
    /// (a harvested turn: as old as what prune deleted).
    pub duplicates: u64,
    /// New `rejects` rows.
    pub rejects: u64,
}

/// What became of a line handed to a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Stored now.
    New,
    /// Stored already: a line read again.
    Known,
    /// Stored once and pruned since (or as old as what was): not stored again.
    Pruned,
    /// A harvested turn as old as what prune deleted: not stored again, although the line is
    /// new (the rejected lines after it are not pruned with it).
    PrunedTurn,
}

/// A line that could not become an event, as a batch records it in `rejects`.
#[derive(Debug, Clone, Copy)]
pub struct Rejected<'a> {
    /// Offset of the line in the queue file.
    pub offset: i64,
    /// Its length, newline excluded.
    pub length: i64,
    /// Why (`rejects.reason`).
    pub reason: &'a str,
    /// Its first bytes.
    pub prefix: &'a [u8],
    /// Its key ([`crate::model::queue_line::parse::reject_key`]).
    pub key: &'a str,
    /// The time of the event line before it, when that line has one of its own.
    pub line_ts: Option<i64>,
    /// That event line was pruned: the rejected lines after it went with it.
    pub after_pruned: bool,
}

/// An open ingest transaction.
pub struct Batch<'c> {
    /// Statements run once per line, prepared once per batch: looking one up in the
    /// connection's cache hashes its whole text, about 5% of a bulk load. Declared before `tx`
    /// so that they are reset before a dropped transaction rolls back.
    insert_event: CachedStatement<'c>,
    upsert_turn: CachedStatement<'c>,
    open_call: CachedStatement<'c>,
    in_flight: CachedStatement<'c>,
    tx: Transaction<'c>,
    now: i64,
    /// Lines older than this were pruned (or are due to be): they are not stored again.
    pruned_before: i64,
    sessions: HashMap<String, SessionAgg>,
    /// The hourly rollup of the batch's new events, by (UTC hour, session).
    hours: HashMap<(i64, Option<String>), HourAgg>,
    tool_calls: ToolCalls,
    unknowns: HashMap<(String, &'static str), i64>,
    counts: BatchCounts,
    /// Whether `rejects` holds rows from before their key (migration 0009), once looked up.
    legacy_rejects: Option<bool>,
    /// The rows stored, for the batch's chain record ([`super::chain`]).
    links: super::chain::Links,
}

/// The `sources` columns [`source_from_row`] reads, in its order.
const SOURCE_COLUMNS: &str = "id, path, offset, device, inode, fingerprint, marker, lines";

/// The live (not retired) source for `path`, if any: where ingest stands in that queue file.
/// `conn` may be read-only, or inside a transaction.
pub fn active_source(conn: &Connection, path: &str) -> rusqlite::Result<Option<SourceRow>> {
    let sql =
        format!("SELECT {SOURCE_COLUMNS} FROM sources WHERE path = ?1 AND retired_at IS NULL");
    conn.prepare_cached(&sql)?
        .query_row([path], source_from_row)
        .optional()
}

/// A `sources` row selected as [`SOURCE_COLUMNS`].
fn source_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SourceRow> {
    Ok(SourceRow {
        id: r.get(0)?,
        path: r.get(1)?,
        offset: r.get(2)?,
        device: r.get(3)?,
        inode: r.get(4)?,
        fingerprint: r.get(5)?,
        marker: r.get(6)?,
        lines: r.get(7)?,
    })
}

impl<'c> Batch<'c> {
    /// Starts a batch with `BEGIN IMMEDIATE`, waiting (busy timeout) for another writer.
    pub fn begin(conn: &'c mut Connection, now_ms: i64) -> Result<Batch<'c>, Error> {
        // Exclusive use of `conn` is what the `&mut` guarantees; the shared borrow inside lets
        // the batch keep its statements next to the transaction.
        let conn: &'c Connection = conn;
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?;
        let pruned_before = tx
            .query_row(
                "SELECT value FROM meta WHERE key = 'pruned_before'",
                [],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(i64::MIN);
        Ok(Batch {
            insert_event: conn.prepare_cached(INSERT_EVENT)?,
            upsert_turn: conn.prepare_cached(UPSERT_TURN)?,
            open_call: conn.prepare_cached(tool_calls::OPEN_CALL)?,
            in_flight: conn.prepare_cached(tool_calls::IN_FLIGHT_CALLS)?,
            tx,
            now: now_ms,
            pruned_before,
            sessions: HashMap::new(),
            hours: HashMap::new(),
            tool_calls: ToolCalls::default(),
            unknowns: HashMap::new(),
            counts: BatchCounts::default(),
            legacy_rejects: None,
            links: super::chain::Links::default(),
        })
    }

    /// The live (not retired) source for `path`, if any.
    pub fn active_source(&self, path: &str) -> Result<Option<SourceRow>, Error> {
        Ok(active_source(&self.tx, path)?)
    }

    /// Creates the live source for `path` at offset 0.
    pub fn create_source(
        &self,
        path: &str,
        device: Option<i64>,
        inode: Option<i64>,
    ) -> Result<SourceRow, Error> {
        let sql = format!(
            "INSERT INTO sources(path, offset, device, inode, created_at, updated_at)
             VALUES (?1, 0, ?2, ?3, ?4, ?4) RETURNING {SOURCE_COLUMNS}"
        );
        Ok(self.tx.query_row(
            &sql,
            params![path, device, inode, self.now],
            source_from_row,
        )?)
    }

    /// Retires `source` (the file was truncated or replaced), if its offset is still the one read.
    pub fn retire_source(&self, source: &SourceRow, why: &str) -> Result<(), Error> {
        let n = self.tx.execute(
            "UPDATE sources SET retired_at = ?1, retired_why = ?2, updated_at = ?1
             WHERE id = ?3 AND offset = ?4 AND retired_at IS NULL",
            params![self.now, why, source.id, source.offset],
        )?;
        if n != 1 {
            return Err(Error::OffsetMoved {
                source_id: source.id,
                expected: source.offset,
            });
        }
        Ok(())
    }

    /// Whether prune deleted the line `id` (time `ts`, its own when `dated`): what a queue
    /// read again must not bring back. Older than `meta.pruned_before`, or, for a line without
    /// a time of its own (which no watermark covers), remembered in `pruned_lines`.
    pub fn is_pruned(&self, id: &str, ts: i64, dated: bool) -> Result<bool, Error> {
        Ok(ts < self.pruned_before || (!dated && self.remembered_pruned(id)?))
    }

    /// Whether `row` is a harvested turn older than what prune deleted: what a transcript
    /// harvested again must not bring back. Its line is dated by the hook that read the
    /// transcript, maybe long after the turn (a session resumed once prune took its turns and
    /// its cursor), so the turn's own time ([`EventRow::harvested_turn_ts`]) decides.
    fn is_pruned_turn(&self, row: &EventRow<'_>) -> bool {
        row.harvested_turn_ts()
            .is_some_and(|t| t < self.pruned_before)
    }

    /// Whether `key` is in `pruned_lines`.
    fn remembered_pruned(&self, key: &str) -> Result<bool, Error> {
        Ok(self
            .tx
            .prepare_cached("SELECT 1 FROM pruned_lines WHERE key = ?1")?
            .exists([key])?)
    }

    /// Upserts the usage records a line carries (each response once, the final count
    /// winning), whether or not the line itself is stored.
    fn store_usage(&self, row: &EventRow<'_>) -> Result<(), Error> {
        if let Some(json) = row.usage.as_deref() {
            let cx = super::usage::Context {
                session_id: row.session_id.as_deref(),
                agent: row.agent.as_deref(),
                ts: Some(row.ts),
                origin: "hook",
            };
            super::usage::upsert_json(&self.tx, json, cx)?;
        }
        Ok(())
    }

    /// Forgets `keys` from `pruned_lines`: their lines left the queue (compaction).
    pub fn forget_pruned(&self, keys: &[String]) -> Result<(), Error> {
        let mut forget = self
            .tx
            .prepare_cached("DELETE FROM pruned_lines WHERE key = ?1")?;
        for key in keys {
            forget.execute([key])?;
        }
        Ok(())
    }

    /// Inserts one event; when it is new, also its derived rows, unknown counts and its link
    /// in the chain. `digest` is the row's [`super::chain::row_digest`], which ingest computes
    /// on its parse thread: the writer is the bottleneck of a bulk load.
    pub fn insert_event(
        &mut self,
        row: &EventRow<'_>,
        source_id: i64,
        offset: i64,
        digest: &[u8; super::chain::DIGEST_LEN],
    ) -> Result<Fate, Error> {
        if self.is_pruned(&row.id, row.ts, row.dated)? {
            // Stored once and pruned since (or older than the retention anyway): counted with
            // the duplicates, never stored again. Its usage is kept all the same: prune never
            // deletes usage, and a `Usage` line is dated by responses that may be that old.
            self.counts.duplicates += 1;
            self.store_usage(row)?;
            return Ok(Fate::Pruned);
        }
        if self.is_pruned_turn(row) {
            self.counts.duplicates += 1;
            self.store_usage(row)?;
            return Ok(Fate::PrunedTurn);
        }
        let inserted = execute_bound!(&mut self.insert_event;
            row.id.as_ref(),
            row.ts,
            row.hook_type.as_deref(),
            row.event.as_deref(),
            row.agent.as_deref(),
            row.session_id.as_deref(),
            row.tool_name.as_deref(),
            row.tool_call_id.as_deref(),
            row.turn_id.as_deref(),
            row.model.as_deref(),
            row.cwd.as_deref(),
            row.origin.as_deref(),
            row.actor_name.as_deref(),
            row.actor_type.as_deref(),
            row.delegated_agent.as_deref(),
            row.synthetic,
            row.prompt.as_deref(),
            row.response.as_deref(),
            row.tool_result_type.as_deref(),
            row.duration_ms,
            row.size_bytes,
            row.estimated_tokens,
            row.entry,
            source_id,
            offset,
            self.now,
            row.producer.as_deref(),
            row.risk.as_deref(),
            row.decision.as_deref(),
        )? == 1;
        if !inserted {
            self.counts.duplicates += 1;
            return Ok(Fate::Known);
        }
        self.counts.rows += 1;
        self.links.push(self.tx.last_insert_rowid(), row.ts, digest);
        self.derive(row)?;
        Ok(Fate::New)
    }

    fn derive(&mut self, row: &EventRow<'_>) -> Result<(), Error> {
        let session = row.session_id.as_deref().unwrap_or(UNKNOWN_SESSION);
        for reason in row.unknown.iter().flatten() {
            *self
                .unknowns
                .entry((session.to_string(), reason))
                .or_default() += 1;
        }
        match row.kind {
            Some(HookType::PreToolUse | HookType::PostToolUse | HookType::PostToolUseFailure) => {
                let negative = self.tool_calls.add(&mut self.open_call, &self.tx, row)?;
                self.count_negative(session, negative);
            }
            Some(HookType::Stop | HookType::SubagentStop) => self.end_turn(row, session)?,
            // A turn that ended on an API error, as capture records it since it reads the
            // turn (`turnOutcome: failed`). An older line read no turn: that turn was
            // harvested later by a Stop of its own, so it makes no second row.
            Some(HookType::StopFailure) if row.turn_outcome.is_some() => {
                self.upsert_turn(row, session)?
            }
            Some(HookType::UserPromptSubmit) => {
                self.close_unanswered_prompt(row)?;
                self.fill_turn_prompt(row, session)?;
            }
            Some(HookType::SessionEnd) => {
                if let Some(sid) = row.session_id.as_deref() {
                    self.tool_calls.end_session(&mut self.in_flight, sid)?;
                }
                self.close_unanswered_prompt(row)?;
            }
            Some(HookType::Interrupt) => self.interrupted_turn(row, session)?,
            Some(HookType::PermissionDenied) => {
                let negative = self.tool_calls.add(&mut self.open_call, &self.tx, row)?;
                self.count_negative(session, negative);
            }
            None if tool_calls::is_permission_denied(row.hook_type.as_deref()) => {
                let negative = self.tool_calls.add(&mut self.open_call, &self.tx, row)?;
                self.count_negative(session, negative);
            }
            _ => {}
        }
        self.store_usage(row)?;
        if let Some(sid) = row.session_id.as_deref() {
            self.aggregate_session(sid, row);
        }
        self.hours
            .entry(hour_key(row.ts, row.session_id.as_deref()))
            .or_default()
            .add(
                row.hook_type.as_deref(),
                RollupEvent {
                    synthetic: row.synthetic == Some(true),
                    failure: row.reports_tool_failure(),
                },
                row.estimated_tokens,
            );
        Ok(())
    }

    /// Counts `negative` tool call durations dropped, under `session`.
    fn count_negative(&mut self, session: &str, negative: i64) {
        if negative > 0 {
            *self
                .unknowns
                .entry((session.to_string(), NEGATIVE_DURATION))
                .or_default() += negative;
        }
    }

    fn aggregate_session(&mut self, sid: &str, row: &EventRow<'_>) {
        // Looked up before inserting: a session's id is copied only once a batch.
        let agg = match self.sessions.get_mut(sid) {
            Some(agg) => agg,
            None => self
                .sessions
                .entry(sid.to_string())
                .or_insert(SessionAgg::starting(row.ts)),
        };
        agg.first_seen = agg.first_seen.min(row.ts);
        agg.last_seen = agg.last_seen.max(row.ts);
        agg.events += 1;
        // Saturating: the figure comes from the line as written (see migration 0007).
        agg.tokens = agg.tokens.saturating_add(row.estimated_tokens.unwrap_or(0));
        for (slot, value) in [
            (&mut agg.agent, &row.agent),
            (&mut agg.model, &row.model),
            (&mut agg.cwd, &row.cwd),
        ] {
            if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
                if slot.as_deref() != Some(v) {
                    *slot = Some(v.to_string());
                }
            }
        }
        match row.kind {
            Some(HookType::UserPromptSubmit) => agg.prompts += 1,
            Some(HookType::PostToolUse) => {
                agg.tool_uses += 1;
                agg.tool_failures += i64::from(row.reports_tool_failure());
            }
            Some(HookType::PostToolUseFailure) => {
                agg.tool_uses += 1;
                agg.tool_failures += 1;
            }
            // Firings only: a synthetic Stop is a turn harvested from the transcript, and the
            // turn's real Stop, when it fires later, is counted itself (see its migration, `stops_count_firings`).
            Some(HookType::Stop | HookType::SubagentStop) if row.synthetic != Some(true) => {
                agg.stops += 1
            }
            Some(HookType::SessionEnd) => {
                agg.ended_at = Some(agg.ended_at.map_or(row.ts, |t| t.max(row.ts)));
            }
            _ => {}
        }
    }

    fn upsert_turn(&mut self, row: &EventRow<'_>, session: &str) -> Result<(), Error> {
        // An imported row found first: the hooks' turn ids of these agents are no transcript's.
        let imported = self.imported_turn_by_prompt(row, session)?;
        let key = imported
            .as_deref()
            .or(row.turn_id.as_deref())
            .unwrap_or(row.id.as_ref());
        execute_bound!(&mut self.upsert_turn;
            session,
            key,
            row.turn_id.as_deref(),
            // A harvested turn is dated by when it happened, not by the hook that read it.
            row.harvested_turn_ts().unwrap_or(row.ts),
            row.hook_type.as_deref(),
            row.prompt.as_deref(),
            row.response.as_deref(),
            row.tool_call_count,
            row.synthetic.unwrap_or(false),
            row.id.as_ref(),
            row.model.as_deref(),
            row.session_id.as_deref(),
            row.thinking.as_deref(),
            row.turn_outcome.as_deref(),
            row.hook_feedback.as_deref(),
        )?;
        Ok(())
    }

    /// The key of the row an import made of the turn a Stop that names no turn records (of an
    /// agent whose turns are met by their prompt), if an import read it first
    /// ([`IMPORTED_TURN_BY_PROMPT`]).
    fn imported_turn_by_prompt(
        &mut self,
        row: &EventRow<'_>,
        session: &str,
    ) -> Result<Option<String>, Error> {
        let by_prompt = row
            .agent
            .as_deref()
            .and_then(Agent::from_name)
            .is_some_and(Agent::turns_by_prompt);
        let ends = matches!(row.kind, Some(HookType::Stop | HookType::StopFailure));
        if !(by_prompt && ends) {
            return Ok(None);
        }
        let Some(prompt) = row.prompt.as_deref() else {
            return Ok(None);
        };
        let ts = row.harvested_turn_ts().unwrap_or(row.ts);
        let prompted: Option<i64> = self
            .tx
            .prepare_cached(PROMPT_TIME)?
            .query_row(params![session, prompt, row.id.as_ref()], |r| r.get(0))?;
        Ok(self
            .tx
            .prepare_cached(IMPORTED_TURN_BY_PROMPT)?
            .query_row(params![session, prompt, ts, prompted], |r| r.get(0))
            .optional()?)
    }

    /// A Stop's turn: its own row, unless it continues the turn before it, or its line is
    /// pending (the synthetic Stop that follows records the turn).
    fn end_turn(&mut self, row: &EventRow<'_>, session: &str) -> Result<(), Error> {
        if self.continue_blocked_turn(row, session)? || row.turn_pending {
            return Ok(());
        }
        let agent = row.agent.as_deref().and_then(Agent::from_name);
        if agent.is_some_and(Agent::prompt_before_stop) && row.prompt.is_none() {
            return self.upsert_prompt_before_stop(row, session);
        }
        self.upsert_turn(row, session)
    }

    /// The turn of an agent whose Stop names neither its prompt nor its turn (Cursor, Kiro),
    /// with the session's last prompt before it and the answer Cursor sent on a line of its
    /// own ([`PROMPT_BEFORE_STOP`]).
    fn upsert_prompt_before_stop(
        &mut self,
        row: &EventRow<'_>,
        session: &str,
    ) -> Result<(), Error> {
        let (prompt, response): (Option<String>, Option<String>) = self
            .tx
            .prepare_cached(PROMPT_BEFORE_STOP)?
            .query_row(rusqlite::params![session, row.id.as_ref()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?
            .unwrap_or_default();
        let mut row = row.clone();
        row.prompt = prompt.map(std::borrow::Cow::Owned);
        row.response = row.response.or(response.map(std::borrow::Cow::Owned));
        self.upsert_turn(&row, session)
    }

    /// A Stop fired again after a Stop hook blocked, of an agent that sent the hook's reason
    /// on as a prompt (Gemini CLI, Copilot CLI: the agent table's `feedback_as_prompt`): that
    /// prompt is no longer counted, and where the turn goes on (Gemini CLI's
    /// `feedback_continues_turn`) the turn is the one before ([`continued_turn`]). Whether it
    /// was.
    fn continue_blocked_turn(&mut self, row: &EventRow<'_>, session: &str) -> Result<bool, Error> {
        let agent = row.agent.as_deref().and_then(Agent::from_name);
        let profile = agent.map(Agent::profile);
        let repeated = row.stop_hook_active && row.kind == Some(HookType::Stop);
        if !repeated || !profile.is_some_and(|p| p.feedback_as_prompt) || row.session_id.is_none() {
            return Ok(false);
        }
        let merge = profile.is_some_and(|p| p.feedback_continues_turn);
        let done = continued_turn::continue_blocked_turn(&self.tx, row, session, merge)?;
        if let Some(ts) = done.feedback_ts {
            self.sessions
                .entry(session.to_string())
                .or_insert(SessionAgg::starting(row.ts))
                .prompts -= 1;
            self.hours
                .entry(hour_key(ts, row.session_id.as_deref()))
                .or_default()
                .prompts -= 1;
        }
        Ok(done.merged)
    }

    /// A Codex `Interrupt`: its turn, with its prompt, is `interrupted`.
    fn interrupted_turn(&mut self, row: &EventRow<'_>, session: &str) -> Result<(), Error> {
        let key = row.turn_id.as_deref().unwrap_or(row.id.as_ref());
        self.tx.prepare_cached(INTERRUPTED_TURN)?.execute(params![
            session,
            key,
            row.turn_id.as_deref(),
            row.ts,
            row.id.as_ref(),
            row.model.as_deref(),
        ])?;
        Ok(())
    }

    /// At a prompt or session end of an agent that fires no hook for an interrupted turn
    /// (Gemini CLI: the agent table's `unanswered_prompt_interrupted`): the session's previous
    /// prompt, if no `Stop` answered it, is an interrupted turn. Read from the stored events, so
    /// batches do not change the result.
    fn close_unanswered_prompt(&mut self, row: &EventRow<'_>) -> Result<(), Error> {
        let (Some(sid), Some(agent)) = (row.session_id.as_deref(), row.agent.as_deref()) else {
            return Ok(());
        };
        let interrupts = Agent::from_name(agent).map(|a| a.profile().unanswered_prompt_interrupted);
        if interrupts != Some(true) {
            return Ok(());
        }
        self.tx
            .prepare_cached(UNANSWERED_PROMPT)?
            .execute(params![sid, row.id.as_ref()])?;
        Ok(())
    }

    /// Gives the row of a prompt's turn, stored before the prompt came, its prompt.
    fn fill_turn_prompt(&mut self, row: &EventRow<'_>, session: &str) -> Result<(), Error> {
        if let (Some(turn_id), Some(prompt)) = (row.turn_id.as_deref(), row.prompt.as_deref()) {
            self.tx
                .prepare_cached(FILL_TURN_PROMPT)?
                .execute(params![session, turn_id, prompt])?;
        }
        Ok(())
    }

    /// Records a line that could not become an event, unless it is recorded already (its
    /// key), or was and prune deleted it: it went with the event line before it, or, before
    /// any event line of its file, its key is remembered in `pruned_lines`.
    pub fn reject(&mut self, source: &SourceRow, line: &Rejected<'_>) -> Result<Fate, Error> {
        if line.after_pruned || (at_file_start(line.key) && self.remembered_pruned(line.key)?) {
            self.counts.duplicates += 1;
            return Ok(Fate::Pruned);
        }
        let prefix = String::from_utf8_lossy(line.prefix);
        if self.has_legacy_rejects()? && self.claim_legacy_reject(source, line, &prefix)? {
            self.counts.duplicates += 1;
            return Ok(Fate::Known);
        }
        let n = self
            .tx
            .prepare_cached(
                "INSERT INTO rejects(source, source_id, offset, length, reason, raw_prefix, ts,
                   line_key, line_ts)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                 ON CONFLICT DO NOTHING",
            )?
            .execute(params![
                source.path,
                source.id,
                line.offset,
                line.length,
                line.reason,
                prefix,
                self.now,
                line.key,
                line.line_ts,
            ])?;
        if n == 1 {
            self.counts.rejects += 1;
            Ok(Fate::New)
        } else {
            self.counts.duplicates += 1;
            Ok(Fate::Known)
        }
    }

    /// Whether `rejects` holds rows recorded before rejects had a key (migration 0009).
    fn has_legacy_rejects(&mut self) -> Result<bool, Error> {
        if let Some(known) = self.legacy_rejects {
            return Ok(known);
        }
        let found = self
            .tx
            .prepare_cached("SELECT 1 FROM rejects WHERE line_key IS NULL")?
            .exists([])?;
        self.legacy_rejects = Some(found);
        Ok(found)
    }

    /// Gives `line`'s key to a row recorded before rejects had one that can be the same line
    /// (same queue path, reason, length and first bytes, at or after the line's offset: a line
    /// read again is where it was or, after a compaction, before), unless a row has the key
    /// already. True when `line` is thereby known.
    fn claim_legacy_reject(
        &mut self,
        source: &SourceRow,
        line: &Rejected<'_>,
        prefix: &str,
    ) -> Result<bool, Error> {
        let known = self
            .tx
            .prepare_cached("SELECT 1 FROM rejects WHERE line_key = ?1")?
            .exists([line.key])?;
        if known {
            return Ok(true);
        }
        let claimed = self
            .tx
            .prepare_cached(
                "UPDATE rejects SET line_key = ?1, line_ts = ?2
                 WHERE id = (SELECT id FROM rejects
                              WHERE line_key IS NULL AND source = ?3 AND reason = ?4
                                AND length = ?5 AND raw_prefix = ?6 AND offset >= ?7
                              ORDER BY id LIMIT 1)",
            )?
            .execute(params![
                line.key,
                line.line_ts,
                source.path,
                line.reason,
                line.length,
                prefix,
                line.offset,
            ])?;
        Ok(claimed == 1)
    }

    /// Writes the aggregated rows, moves the offset with a compare-and-set and commits.
    /// On [`Error::OffsetMoved`] everything is rolled back.
    pub fn commit(mut self, source: &SourceRow, to: &Advance) -> Result<BatchCounts, Error> {
        self.flush_aggregates()?;
        self.links.append(&self.tx)?;
        super::chain::keyed::flush(&self.tx)?;
        let n = self.tx.execute(
            "UPDATE sources SET offset = ?1, marker = ?2,
               fingerprint = coalesce(fingerprint, ?3), size = ?4, lines = lines + ?5,
               updated_at = ?6
             WHERE id = ?7 AND offset = ?8 AND retired_at IS NULL",
            params![
                to.offset,
                to.marker,
                to.fingerprint,
                to.size,
                to.lines,
                self.now,
                source.id,
                source.offset,
            ],
        )?;
        if n != 1 {
            // Dropping the transaction rolls it back.
            return Err(Error::OffsetMoved {
                source_id: source.id,
                expected: source.offset,
            });
        }
        self.tx.commit()?;
        Ok(self.counts)
    }

    fn flush_aggregates(&mut self) -> Result<(), Error> {
        {
            let mut stmt = self.tx.prepare_cached(
                "INSERT INTO unknown_counts(session_id, reason, count) VALUES (?1, ?2, ?3)
                 ON CONFLICT(session_id, reason) DO UPDATE SET count = count + excluded.count",
            )?;
            for ((session, reason), count) in self.unknowns.drain() {
                stmt.execute(params![session, reason, count])?;
            }
        }
        self.tool_calls.flush(&self.tx)?;
        apply_hours(&self.tx, self.hours.drain(), 1)?;
        let mut stmt = self.tx.prepare_cached(
            "INSERT INTO sessions(session_id, agent, model, cwd, first_seen, last_seen, events,
               prompts, tool_uses, tool_failures, stops, estimated_tokens, ended, ended_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT(session_id) DO UPDATE SET
               agent = coalesce(excluded.agent, agent),
               model = coalesce(excluded.model, model),
               cwd = coalesce(excluded.cwd, cwd),
               first_seen = min(first_seen, excluded.first_seen),
               last_seen = max(last_seen, excluded.last_seen),
               events = events + excluded.events,
               prompts = prompts + excluded.prompts,
               tool_uses = tool_uses + excluded.tool_uses,
               tool_failures = tool_failures + excluded.tool_failures,
               stops = stops + excluded.stops,
               -- Past the 64-bit range SQLite's + gives a REAL, which CAST saturates.
               estimated_tokens = CAST(estimated_tokens + excluded.estimated_tokens AS INTEGER),
               ended = max(ended, excluded.ended),
               ended_at = max(coalesce(ended_at, excluded.ended_at),
                              coalesce(excluded.ended_at, ended_at))",
        )?;
        for (sid, s) in self.sessions.drain() {
            stmt.execute(params![
                sid,
                s.agent,
                s.model,
                s.cwd,
                s.first_seen,
                s.last_seen,
                s.events,
                s.prompts,
                s.tool_uses,
                s.tool_failures,
                s.stops,
                s.tokens,
                s.ended_at.is_some(),
                s.ended_at,
            ])?;
        }
        Ok(())
    }
}
