//! SQL functions cmstore registers on every connection to the store (the read-only ones
//! included), so that a statement (a migration's backfill, `prune`'s `RETURNING`, a report's
//! days) applies a rule the Rust code owns rather than a copy of it in SQL, which would drift
//! from it.

use std::cell::RefCell;

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::model::queue_line::parse::parse_line;
use crate::support::zone;

/// `cmstore_tool_failure(entry)`: 1 when the stored queue line `entry` reports a failed tool
/// call by [`EventRow::reports_tool_failure`](crate::model::queue_line::EventRow::reports_tool_failure),
/// the rule ingest counts `sessions.tool_failures` by; 0 otherwise (and for a line that does
/// not parse).
pub const TOOL_FAILURE: &str = "cmstore_tool_failure";

/// `cmstore_day(ms)`: the date (`2026-04-01`) of the epoch milliseconds `ms` in the zone a
/// person reads times in ([`zone::chosen`]: local, or UTC with `--utc`); NULL for NULL or a
/// time out of range. How `summarize --by day` and the dashboard name their days.
pub const DAY: &str = "cmstore_day";

/// `cmstore_splits_hour(hour_n)`: 1 when a day begins inside the UTC hour `hour_n`
/// (`floor(ms / 3,600,000)`) after its first millisecond, in that zone
/// ([`zone::Zone::splits_hour`]), so the hour's rollup rows belong to two days.
pub const SPLITS_HOUR: &str = "cmstore_splits_hour";

/// Registers cmstore's functions on `conn`.
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        TOOL_FAILURE,
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            Ok(match ctx.get_raw(0) {
                ValueRef::Text(line) => {
                    parse_line(line, 0).is_ok_and(|row| row.reports_tool_failure())
                }
                _ => false,
            })
        },
    )?;
    // Not DETERMINISTIC: the answer depends on the zone, which a process chooses once; a
    // deterministic function may be used in an index, where another zone would corrupt it.
    let hours = LastHour::default();
    conn.create_scalar_function(DAY, 1, FunctionFlags::SQLITE_UTF8, move |ctx| {
        let ms = match ctx.get_raw(0) {
            ValueRef::Integer(ms) => ms,
            ValueRef::Real(ms) => ms as i64,
            _ => return Ok(None),
        };
        Ok(hours.day(ms.div_euclid(HOUR_MS)).or_else(|| day_text(ms)))
    })?;
    let hours = LastHour::default();
    conn.create_scalar_function(SPLITS_HOUR, 1, FunctionFlags::SQLITE_UTF8, move |ctx| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Integer(hour) => hours.day(hour).is_none(),
            _ => false,
        })
    })
}

const HOUR_MS: i64 = 3_600_000;

/// The one day every moment of the last UTC hour asked about falls on, kept for the next
/// call: a report's rows come by hour, and a zone lookup per row cost more than the rest of
/// `summarize --by day`.
#[derive(Default)]
struct LastHour(RefCell<Option<(i64, Option<String>)>>);

impl LastHour {
    /// The day all of UTC hour `hour` falls on in the chosen zone; `None` when a day begins
    /// inside it (or it is out of range).
    fn day(&self, hour: i64) -> Option<String> {
        if let Some((last, day)) = &*self.0.borrow() {
            if *last == hour {
                return day.clone();
            }
        }
        let day = match zone::chosen().splits_hour(hour) {
            true => None,
            false => day_text(hour.saturating_mul(HOUR_MS)),
        };
        *self.0.borrow_mut() = Some((hour, day.clone()));
        day
    }
}

/// `ms`'s date in the chosen zone, as SQLite's `date()` writes one.
fn day_text(ms: i64) -> Option<String> {
    zone::chosen()
        .day_of(ms)
        .map(|d| d.format("%Y-%m-%d").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The function says what the parsed line says, for every way a line reports a failure
    /// (or looks as if it did).
    #[test]
    fn tool_failure_is_the_rows_own_rule() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let lines = [
            r#"{"hookType":"PostToolUseFailure"}"#,
            r#"{"hookType":"PostToolUse","toolResultType":"failure"}"#,
            r#"{"hookType":"PostToolUse","toolResultType":"success"}"#,
            r#"{"hookType":"PostToolUse","toolFailed":true}"#,
            r#"{"hookType":"PostToolUse","toolFailed":"true"}"#,
            r#"{"hookType":"PostToolUse","toolFailed":1}"#,
            r#"{"hookType":"PostToolUse","toolFailed":false}"#,
            r#"{"hookType":"PostToolUse","exitCode":3}"#,
            r#"{"hookType":"PostToolUse","exitCode":" 3 "}"#,
            r#"{"hookType":"PostToolUse","exitCode":"3abc"}"#,
            r#"{"hookType":"PostToolUse","exitCode":2.5}"#,
            r#"{"hookType":"PostToolUse","exitCode":0}"#,
            r#"{"hookType":"PostToolUse","exitCode":"99999999999999999999"}"#,
            r#"{"hookType":"PreToolUse","exitCode":3}"#,
            r#"{"event":"postToolUse","toolResultType":"failure"}"#,
            r#"{"hookType":"PostToolUse"}"#,
            "not json",
        ];
        for line in lines {
            let expected = parse_line(line.as_bytes(), 0).is_ok_and(|r| r.reports_tool_failure());
            let got: bool = conn
                .query_row(&format!("SELECT {TOOL_FAILURE}(?1)"), [line], |r| r.get(0))
                .unwrap();
            assert_eq!(got, expected, "{line}");
        }
        let null: bool = conn
            .query_row(&format!("SELECT {TOOL_FAILURE}(NULL)"), [], |r| r.get(0))
            .unwrap();
        assert!(!null);
        // The cases hold both answers, so a function that always said one would fail above.
        let failures = lines
            .iter()
            .filter(|l| parse_line(l.as_bytes(), 0).is_ok_and(|r| r.reports_tool_failure()))
            .count();
        assert!((4..lines.len()).contains(&failures), "{failures}");
    }
}
