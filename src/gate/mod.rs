//! The safety gate's record, read back: the PreToolUse calls cmstore's gate ruled on, how often
//! each rule fired ([`report`], `cmstore gate report`), and what another rule set would have
//! decided on the same calls ([`replay`], `cmstore gate replay`).
//!
//! Only lines cmstore wrote (`producer = 'cmstore'`) are read: another producer's PreToolUse
//! lines never went through this gate. Every figure is over the calls that were recorded: a
//! clean call is recorded only while `PreToolUse` is enabled in `[events]`, a flagged one
//! always.

use rusqlite::types::Value;

use crate::report;
use crate::sessions::{self, Filters};
use crate::store::read_only::{QueryError, ReadOnlyDb};

pub mod replay;
pub mod tally;

/// One recorded PreToolUse call and the gate's ruling on it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Call {
    /// When it was recorded, epoch milliseconds.
    pub ts: i64,
    pub session_id: Option<String>,
    pub agent: Option<String>,
    pub cwd: Option<String>,
    pub tool_name: Option<String>,
    /// The rules that matched, comma-separated, or `unreadable`; `None` for a clean call.
    pub risk: Option<String>,
    /// `allow` or `deny`; `None` for a clean call.
    pub decision: Option<String>,
    /// What the line holds of the tool's input (read for a replay only).
    pub input: RecordedInput,
}

/// What a queue line holds of a tool call's input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecordedInput {
    /// `toolInput`, the compact JSON capture wrote.
    pub text: Option<String>,
    /// The payload was cut (over 16 MiB) or did not parse: the gate saw no input.
    pub payload_unread: bool,
    /// `sizeBytes`: the size of the whole payload on stdin.
    pub payload_bytes: Option<i64>,
}

impl Call {
    /// The rules the gate recorded, in order (`unreadable` among them).
    pub fn rules(&self) -> Vec<&str> {
        split_rules(self.risk.as_deref())
    }

    /// True when the gate denied the call.
    pub fn denied(&self) -> bool {
        self.decision.as_deref() == Some("deny")
    }
}

/// The rule names in a recorded `risk` value.
pub fn split_rules(risk: Option<&str>) -> Vec<&str> {
    risk.map(|r| {
        r.split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .collect()
    })
    .unwrap_or_default()
}

/// The recorded PreToolUse calls that `filters` select (by the events' own time, agent,
/// working directory and session), oldest first; with their input when `with_input`.
pub fn calls(
    db: &ReadOnlyDb,
    filters: &Filters,
    with_input: bool,
) -> Result<Vec<Call>, QueryError> {
    let (conditions, params) = filters.event_conditions();
    let mut wheres = vec!["hook_type = 'PreToolUse'", "producer = 'cmstore'"];
    wheres.extend(conditions);
    let input = if with_input {
        "json_extract(entry, '$.toolInput'), json_extract(entry, '$.truncated'), \
         json_extract(entry, '$.parseError'), json_extract(entry, '$.sizeBytes')"
    } else {
        "NULL, NULL, NULL, NULL"
    };
    let sql = format!(
        "SELECT ts, session_id, agent, cwd, tool_name, json_extract(entry, '$.risk'), \
         json_extract(entry, '$.decision'), {input}\nFROM events\nWHERE {}\nORDER BY ts, seq",
        wheres.join(" AND ")
    );
    let (_, rows) = report::fetch(db, &sql, &params)?;
    Ok(rows.iter().map(|row| call(row)).collect())
}

fn call(row: &[Value]) -> Call {
    let text = |i: usize| row.get(i).and_then(sessions::text);
    let int = |i: usize| row.get(i).and_then(sessions::integer);
    Call {
        ts: int(0).unwrap_or_default(),
        session_id: text(1),
        agent: text(2),
        cwd: text(3),
        tool_name: text(4),
        risk: text(5),
        decision: text(6),
        input: RecordedInput {
            text: text(7),
            // `truncated: true` reads back as 1. A `parseError` with neither tool name nor
            // input is a payload that did not decode; with them, one decoded lossily (invalid
            // UTF-8 replaced), which the gate did read, as the line holds it.
            payload_unread: int(8).is_some_and(|t| t != 0)
                || (text(9).is_some() && text(4).is_none() && text(7).is_none()),
            payload_bytes: int(10),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_rules_are_split_and_trimmed() {
        assert_eq!(split_rules(Some("dd, mkfs,,")), vec!["dd", "mkfs"]);
        assert!(split_rules(None).is_empty());
        let call = Call {
            decision: Some("deny".into()),
            ..Call::default()
        };
        assert!(call.denied());
        assert!(!Call::default().denied());
    }

    #[test]
    fn a_row_becomes_a_call() {
        let row = [
            Value::Integer(5),
            Value::Text("s".into()),
            Value::Text("claude".into()),
            Value::Null,
            Value::Text("Bash".into()),
            Value::Text("rm-rf-root".into()),
            Value::Text("deny".into()),
            Value::Null,
            Value::Integer(1),
            Value::Null,
            Value::Integer(20),
        ];
        let c = call(&row);
        assert_eq!((c.ts, c.rules(), c.denied()), (5, vec!["rm-rf-root"], true));
        assert!(c.input.payload_unread);
        assert_eq!(c.input.payload_bytes, Some(20));

        // A parseError on a payload that did not decode: no tool name, no input.
        let mut undecoded = row.clone();
        undecoded[4] = Value::Null;
        undecoded[8] = Value::Null;
        undecoded[9] = Value::Text("expected value at line 1".into());
        assert!(call(&undecoded).input.payload_unread);
        // A parseError on a payload decoded lossily: the gate read it.
        let mut lossy = row.clone();
        lossy[7] = Value::Text("{\"command\":\"ls\"}".into());
        lossy[8] = Value::Null;
        lossy[9] = Value::Text("payload held invalid UTF-8".into());
        assert!(!call(&lossy).input.payload_unread);
    }
}
