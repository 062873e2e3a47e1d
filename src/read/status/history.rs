//! `cmstore status`'s History section: the agents' history that is not, or not all, in the
//! store (issue 37; docs/usage.md, "Whole sessions from transcripts").
//!
//! - Claude Code deletes a transcript `cleanupPeriodDays` after its last change, at its next
//!   start, with no trash. The sessions whose transcript is on disk but which the store does
//!   not hold (no `sessions` row: no hook recorded them, no import read them) are counted, with
//!   how many it will delete within [`SOON_DAYS`] days and when the first goes.
//! - What the hooks missed over the last [`SOON_DAYS`] days, per agent, from `v_coverage`:
//!   the turns and tool calls only an import read from a transcript.

use std::path::Path;

use rusqlite::types::Value;

use super::{iso, Section};
use crate::files::transcript::claude_retention::{self, Transcript};
use crate::read::report;
use crate::store::read_only::{Param, ReadOnlyDb};

/// Days ahead a deletion is warned of, and back the hooks' misses are counted.
pub const SOON_DAYS: i64 = 7;

const DAY_MS: i64 = 86_400_000;

/// The History section at `now_ms` (one row), from the store when there is one and Claude
/// Code's folder `claude`; `None` when neither has anything to say.
pub fn report(
    db: Option<&ReadOnlyDb>,
    claude: Option<&Path>,
    now_ms: i64,
) -> anyhow::Result<Option<Section>> {
    let transcripts = claude
        .map(claude_retention::transcripts)
        .unwrap_or_default();
    let missed = match db {
        Some(db) => missed_lately(db, now_ms)?,
        None => None,
    };
    if transcripts.is_empty() && missed.is_none() {
        return Ok(None);
    }
    let mut columns: Vec<String> = Vec::new();
    let mut row: Vec<Value> = Vec::new();
    if let (Some(claude), false) = (claude, transcripts.is_empty()) {
        let retention = claude_retention::retention(claude);
        let unstored = match db {
            Some(db) => unstored(db, &transcripts)?,
            None => transcripts,
        };
        let deleted_at = |t: &Transcript| t.modified_ms + retention.days as i64 * DAY_MS;
        let soon: Vec<&Transcript> = unstored
            .iter()
            .filter(|t| deleted_at(t) < now_ms + SOON_DAYS * DAY_MS)
            .collect();
        columns.extend(
            [
                "claude_cleanup_days",
                "claude_cleanup_set_in",
                "claude_sessions_not_stored",
                "deleted_within_7_days",
                "first_deletion",
            ]
            .map(String::from),
        );
        row.push(Value::Integer(retention.days as i64));
        row.push(Value::Text(if retention.configured {
            retention.settings.display().to_string()
        } else {
            "Claude Code's default".to_string()
        }));
        row.push(Value::Integer(unstored.len() as i64));
        row.push(Value::Integer(soon.len() as i64));
        row.push(
            unstored
                .iter()
                .map(deleted_at)
                .min()
                .and_then(iso)
                .map_or(Value::Null, Value::Text),
        );
        if !soon.is_empty() {
            columns.push("advice".into());
            // Short enough for a terminal of 100 columns: where the period is set is the
            // field above.
            row.push(Value::Text(
                "run `cmstore import` to keep them, or raise cleanupPeriodDays".to_string(),
            ));
        }
    }
    columns.push("hooks_missed_7_days".into());
    row.push(Value::Text(missed.unwrap_or_else(|| "nothing".into())));
    Ok(Some((columns, vec![row])))
}

/// Of `transcripts`, those whose session the store holds no row of.
fn unstored(db: &ReadOnlyDb, transcripts: &[Transcript]) -> anyhow::Result<Vec<Transcript>> {
    let ids: Vec<&str> = transcripts.iter().map(|t| t.session.as_str()).collect();
    let param = Param {
        name: "ids".into(),
        value: Value::Text(serde_json::to_string(&ids)?),
    };
    let (_, rows) = report::fetch(
        db,
        "SELECT value FROM json_each(:ids) \
         WHERE value NOT IN (SELECT session_id FROM sessions)",
        &[param],
    )?;
    let missing: std::collections::HashSet<String> = rows
        .into_iter()
        .filter_map(|mut r| match r.swap_remove(0) {
            Value::Text(id) => Some(id),
            _ => None,
        })
        .collect();
    Ok(transcripts
        .iter()
        .filter(|t| missing.contains(&t.session))
        .cloned()
        .collect())
}

/// What the hooks missed in the sessions active over the last [`SOON_DAYS`] days, per agent
/// (`claude: 2 turns, 5 tool calls in 3 sessions`); `None` when they missed nothing there, or
/// the store predates turn coverage (migration 0036).
fn missed_lately(db: &ReadOnlyDb, now_ms: i64) -> anyhow::Result<Option<String>> {
    let known = "SELECT 1 FROM pragma_table_info('turns') WHERE name = 'imported'";
    if report::fetch(db, known, &[])?.1.is_empty() {
        return Ok(None);
    }
    let since = Param {
        name: "since".into(),
        value: Value::Integer(now_ms - SOON_DAYS * DAY_MS),
    };
    let (_, rows) = report::fetch(
        db,
        "SELECT coalesce(s.agent, '?'), coalesce(sum(c.missed_turns), 0),
                sum(c.missed_tool_calls), count(*)
         FROM v_coverage c JOIN sessions s USING (session_id)
         WHERE s.last_seen >= :since
           AND (coalesce(c.missed_turns, 0) > 0 OR c.missed_tool_calls > 0)
         GROUP BY 1 ORDER BY 1",
        &[since],
    )?;
    let parts: Vec<String> = rows
        .iter()
        .map(|r| {
            let n = |i: usize| match r[i] {
                Value::Integer(n) => n,
                _ => 0,
            };
            let agent = match &r[0] {
                Value::Text(a) => a.as_str(),
                _ => "?",
            };
            format!(
                "{agent}: {} turn(s), {} tool call(s) in {} session(s)",
                n(1),
                n(2),
                n(3)
            )
        })
        .collect();
    Ok(Some(parts.join("; ")).filter(|p| !p.is_empty()))
}
