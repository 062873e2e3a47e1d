//! The tool calls of one ingest batch: PreToolUse and PostToolUse halves joined into
//! `tool_calls` rows, and the per-session totals of `session_tools` moved by what changed.
//!
//! A half joins the latest call of its key (`toolCallId`, else its event id) while that call
//! lacks a half, whether the call is in this batch or stored (`tool_calls_open` indexes the
//! incomplete ones); otherwise it starts a call of its own. So the rows come out the same
//! however the lines fall into batches.

use std::collections::HashMap;

use rusqlite::{params, Connection, OptionalExtension, Statement};

use super::write::{EventRow, UNKNOWN_SESSION};
use super::Error;
use crate::event::HookType;

/// The store's call of a key that still lacks a half, if any (`tool_calls_open`).
pub(super) const OPEN_CALL: &str = "
    SELECT rowid, session_id, tool_name, success, duration_ms, start_ts IS NOT NULL,
      end_ts IS NOT NULL
    FROM tool_calls
    WHERE call_key = ?1 AND (start_ts IS NULL OR end_ts IS NULL)";

/// The tool calls of a batch, in the order their first half was read.
#[derive(Debug, Default)]
pub(super) struct ToolCalls {
    calls: Vec<(String, ToolCallAgg)>,
    /// Index in `calls` of the latest call of each key.
    index: HashMap<String, usize>,
}

impl ToolCalls {
    /// Adds one PreToolUse, PostToolUse or PostToolUseFailure row (new to the store).
    /// `open_call` is [`OPEN_CALL`], prepared.
    pub(super) fn add(
        &mut self,
        open_call: &mut Statement<'_>,
        row: &EventRow<'_>,
    ) -> Result<(), Error> {
        let key = row.tool_call_id.as_deref().unwrap_or(row.id.as_ref());
        let is_pre = row.kind == Some(HookType::PreToolUse);
        // See the module's documentation for the rule.
        let slot = match self.index.get(key) {
            Some(&i) if !self.calls[i].1.is_complete() => i,
            seen => {
                let stored = match seen {
                    // The store's incomplete call, if any, was joined by that earlier one.
                    Some(_) => None,
                    None => open_call
                        .query_row([key], |r| {
                            Ok(StoredCall {
                                rowid: r.get(0)?,
                                share: CallShare {
                                    session_id: r.get(1)?,
                                    tool_name: r.get(2)?,
                                    success: r.get(3)?,
                                    duration_ms: whole_ms(r.get(4)?),
                                    last_ts: None,
                                },
                                has_pre: r.get(5)?,
                                has_post: r.get(6)?,
                            })
                        })
                        .optional()?,
                };
                self.calls.push((
                    key.to_string(),
                    ToolCallAgg {
                        stored,
                        ..ToolCallAgg::default()
                    },
                ));
                let i = self.calls.len() - 1;
                self.index.insert(key.to_string(), i);
                i
            }
        };
        let agg = &mut self.calls[slot].1;
        for (slot, value) in [
            (&mut agg.tool_call_id, &row.tool_call_id),
            (&mut agg.session_id, &row.session_id),
            (&mut agg.tool_name, &row.tool_name),
        ] {
            if slot.is_none() {
                *slot = value.as_deref().map(str::to_string);
            }
        }
        if is_pre {
            agg.start_ts = Some(row.ts);
            agg.pre_event_id = Some(row.id.to_string());
        } else {
            // A later half wins, but only with what it says (as the store's join does).
            agg.end_ts = Some(row.ts);
            if row.duration_ms.is_some() {
                agg.reported_ms = row.duration_ms;
            }
            agg.success = Some(
                row.kind == Some(HookType::PostToolUse)
                    && !matches!(row.tool_result_type.as_deref(), Some("failure" | "denied")),
            );
            if let Some(result) = row.tool_result_type.as_deref() {
                agg.result_type = Some(result.to_string());
            }
            agg.post_event_id = Some(row.id.to_string());
        }
        Ok(())
    }

    /// Writes this batch's tool calls: a call that is incomplete in the store (one half came in
    /// an earlier batch) is joined in place, any other becomes a new row. The per-session tool
    /// totals move by what changed: the stored row's share out, the joined row's share in.
    pub(super) fn flush(&mut self, tx: &Connection) -> Result<(), Error> {
        if self.calls.is_empty() {
            return Ok(());
        }
        let mut totals: HashMap<(String, String), ToolTotals> = HashMap::new();
        {
            // Incoming halves win over stored ones; the duration is the reported one, else
            // end minus start once both ends are known (in this batch or across batches).
            let mut complete = tx.prepare_cached(
                "UPDATE tool_calls SET
                   tool_call_id = coalesce(tool_call_id, ?2),
                   session_id = coalesce(session_id, ?3),
                   tool_name = coalesce(tool_name, ?4),
                   duration_ms = coalesce(?7, duration_ms,
                       coalesce(?6, end_ts) - coalesce(?5, start_ts)),
                   start_ts = coalesce(?5, start_ts),
                   end_ts = coalesce(?6, end_ts),
                   success = coalesce(?8, success),
                   result_type = coalesce(?9, result_type),
                   pre_event_id = coalesce(?10, pre_event_id),
                   post_event_id = coalesce(?11, post_event_id)
                 WHERE rowid = ?1
                 RETURNING session_id, tool_name, success, duration_ms,
                   max(coalesce(start_ts, end_ts), coalesce(end_ts, start_ts))",
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, start_ts,
                   end_ts, duration_ms, success, result_type, pre_event_id, post_event_id)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, coalesce(?7, ?6 - ?5), ?8, ?9, ?10, ?11)",
            )?;
            self.index.clear();
            for (key, c) in self.calls.drain(..) {
                let now = match &c.stored {
                    Some(stored) => {
                        let was = &stored.share;
                        totals
                            .entry(totals_key(was.session_id.clone(), was.tool_name.clone()))
                            .or_default()
                            .remove(was.success, was.duration_ms);
                        complete.query_row(
                            params![
                                stored.rowid,
                                c.tool_call_id,
                                c.session_id,
                                c.tool_name,
                                c.start_ts,
                                c.end_ts,
                                c.reported_ms,
                                c.success,
                                c.result_type,
                                c.pre_event_id,
                                c.post_event_id,
                            ],
                            CallShare::from_row,
                        )?
                    }
                    None => {
                        execute_bound!(&mut insert;
                            &key,
                            &c.tool_call_id,
                            &c.session_id,
                            &c.tool_name,
                            c.start_ts,
                            c.end_ts,
                            c.reported_ms,
                            c.success,
                            &c.result_type,
                            &c.pre_event_id,
                            &c.post_event_id,
                        )?;
                        // What the row holds, worked out here: RETURNING would make SQLite
                        // buffer every inserted row.
                        CallShare {
                            duration_ms: c.reported_ms.or_else(|| {
                                // SQLite's `end - start` turns REAL when it overflows, which
                                // `whole_ms` saturates: the same as saturating here.
                                Some(c.end_ts?.saturating_sub(c.start_ts?))
                            }),
                            last_ts: c.start_ts.max(c.end_ts),
                            session_id: c.session_id,
                            tool_name: c.tool_name,
                            success: c.success,
                        }
                    }
                };
                totals
                    .entry(totals_key(now.session_id, now.tool_name))
                    .or_default()
                    .add(now.success, now.duration_ms, now.last_ts);
            }
        }
        let mut upsert = tx.prepare_cached(
            "INSERT INTO session_tools(session_id, tool_name, calls, succeeded, failed, unfinished,
               total_ms, timed, max_ms, last_ts)
             VALUES (?1, ?2, max(?3, 0), max(?4, 0), max(?5, 0), max(?6, 0), ?7, max(?8, 0), ?9,
               coalesce(?10, 0))
             ON CONFLICT(session_id, tool_name) DO UPDATE SET
               calls = calls + ?3,
               succeeded = succeeded + ?4,
               failed = failed + ?5,
               unfinished = unfinished + ?6,
               total_ms = total_ms + ?7,
               timed = timed + ?8,
               max_ms = max(coalesce(max_ms, ?9), coalesce(?9, max_ms)),
               last_ts = max(last_ts, coalesce(?10, last_ts))",
        )?;
        // A joined call can move to another row (its session or tool name came with the
        // second half); a row left without calls goes.
        let mut drop_empty = tx.prepare_cached(
            "DELETE FROM session_tools WHERE session_id = ?1 AND tool_name = ?2 AND calls <= 0",
        )?;
        for ((session_id, tool_name), t) in totals {
            execute_bound!(&mut upsert;
                &session_id,
                &tool_name,
                t.calls,
                t.succeeded,
                t.failed,
                t.unfinished,
                t.total_ms,
                t.timed,
                t.max_ms,
                t.last_ts,
            )?;
            if t.calls < 0 {
                drop_empty.execute(params![session_id, tool_name])?;
            }
        }
        Ok(())
    }
}

/// A tool call's Pre and Post halves seen in this batch, merged before one write.
#[derive(Debug, Default)]
struct ToolCallAgg {
    tool_call_id: Option<String>,
    session_id: Option<String>,
    tool_name: Option<String>,
    start_ts: Option<i64>,
    end_ts: Option<i64>,
    reported_ms: Option<i64>,
    success: Option<bool>,
    result_type: Option<String>,
    pre_event_id: Option<String>,
    post_event_id: Option<String>,
    /// The store's incomplete call of the same key, which this one completes.
    stored: Option<StoredCall>,
}

impl ToolCallAgg {
    /// Both halves seen, here or in the stored row (the test of the `tool_calls_open` index).
    fn is_complete(&self) -> bool {
        let stored = self.stored.as_ref();
        (self.start_ts.is_some() || stored.is_some_and(|s| s.has_pre))
            && (self.end_ts.is_some() || stored.is_some_and(|s| s.has_post))
    }
}

/// An incomplete `tool_calls` row found by key.
#[derive(Debug)]
struct StoredCall {
    rowid: i64,
    /// What the row adds to `session_tools` now.
    share: CallShare,
    has_pre: bool,
    has_post: bool,
}

/// The key of a call's row in `session_tools`: calls without a session id count under
/// [`UNKNOWN_SESSION`], calls without a tool name under ''.
fn totals_key(session_id: Option<String>, tool_name: Option<String>) -> (String, String) {
    (
        session_id.unwrap_or_else(|| UNKNOWN_SESSION.to_string()),
        tool_name.unwrap_or_default(),
    )
}

/// What one `tool_calls` row adds to its `session_tools` row.
#[derive(Debug)]
struct CallShare {
    session_id: Option<String>,
    tool_name: Option<String>,
    success: Option<bool>,
    duration_ms: Option<i64>,
    last_ts: Option<i64>,
}

impl CallShare {
    fn from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CallShare> {
        Ok(CallShare {
            session_id: r.get(0)?,
            tool_name: r.get(1)?,
            success: r.get(2)?,
            duration_ms: whole_ms(r.get(3)?),
            last_ts: r.get(4)?,
        })
    }
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
    unfinished: i64,
    total_ms: i64,
    timed: i64,
    max_ms: Option<i64>,
    last_ts: Option<i64>,
}

impl ToolTotals {
    fn add(&mut self, success: Option<bool>, duration_ms: Option<i64>, last_ts: Option<i64>) {
        self.calls += 1;
        match success {
            Some(true) => self.succeeded += 1,
            Some(false) => self.failed += 1,
            None => self.unfinished += 1,
        }
        if let Some(ms) = duration_ms {
            self.total_ms = self.total_ms.saturating_add(ms);
            self.timed += 1;
            self.max_ms = Some(self.max_ms.map_or(ms, |m| m.max(ms)));
        }
        self.last_ts = self.last_ts.max(last_ts);
    }

    /// Takes a stored call's share back out before it is joined. Its duration stays in
    /// `max_ms`: a join keeps a known duration unless the new half reports another.
    fn remove(&mut self, success: Option<bool>, duration_ms: Option<i64>) {
        self.calls -= 1;
        match success {
            Some(true) => self.succeeded -= 1,
            Some(false) => self.failed -= 1,
            None => self.unfinished -= 1,
        }
        if let Some(ms) = duration_ms {
            self.total_ms = self.total_ms.saturating_sub(ms);
            self.timed -= 1;
        }
    }
}
