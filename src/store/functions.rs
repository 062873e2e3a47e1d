//! SQL functions cmstore registers on the connections that write the store, so that a
//! statement (a migration's backfill, `prune`'s `RETURNING`) applies a rule the Rust code owns
//! rather than a copy of it in SQL, which would drift from it.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use crate::model::queue_line::parse::parse_line;

/// `cmstore_tool_failure(entry)`: 1 when the stored queue line `entry` reports a failed tool
/// call by [`EventRow::reports_tool_failure`](crate::model::queue_line::EventRow::reports_tool_failure),
/// the rule ingest counts `sessions.tool_failures` by; 0 otherwise (and for a line that does
/// not parse).
pub const TOOL_FAILURE: &str = "cmstore_tool_failure";

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
    )
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
