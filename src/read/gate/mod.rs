//! The safety gate's record, read back: the PreToolUse calls cmstore's gate ruled on, how often
//! each rule fired ([`report()`], `cmstore gate report`), and what another rule set would have
//! decided on the same calls ([`replay`], `cmstore gate replay`).
//!
//! The gate's ruling is read from the `risk` and `decision` columns of `events` (migration
//! 0018: ingest writes them from the line), so [`report()`] counts in SQL, from two partial
//! indexes, instead of parsing every PreToolUse line.
//!
//! Only lines cmstore wrote (`producer = 'cmstore'`) are read: another producer's PreToolUse
//! lines never went through this gate. Every figure is over the calls that were recorded: a
//! clean call is recorded only while `PreToolUse` is enabled in `[events]`, a flagged one
//! always.

use rusqlite::types::Value;

use crate::read::report;
use crate::read::sessions::Filters;
use crate::store::read_only::{Param, QueryError, ReadOnlyDb};

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
    let (wheres, params) = gate_conditions(filters, &[]);
    let input = if with_input {
        "json_extract(entry, '$.toolInput'), json_extract(entry, '$.truncated'), \
         json_extract(entry, '$.parseError'), json_extract(entry, '$.sizeBytes')"
    } else {
        "NULL, NULL, NULL, NULL"
    };
    let sql = format!(
        "SELECT ts, session_id, agent, cwd, tool_name, risk, decision, {input}\n\
         FROM events\nWHERE {wheres}\nORDER BY ts, seq"
    );
    let (_, rows) = report::fetch(db, &sql, &params)?;
    Ok(rows.iter().map(|row| call(row)).collect())
}

/// The conditions of the recorded calls `filters` select, `extra` first: cmstore's own
/// PreToolUse lines, as the gate's partial indexes (migration 0018) say them.
fn gate_conditions(filters: &Filters, extra: &[&'static str]) -> (String, Vec<Param>) {
    let (conditions, params) = filters.event_conditions();
    let mut wheres = extra.to_vec();
    wheres.extend(["hook_type = 'PreToolUse'", "producer = 'cmstore'"]);
    wheres.extend(conditions);
    (wheres.join(" AND "), params)
}

/// `cmstore gate report`'s figures over the calls `filters` select: the same as
/// [`tally::tally`] of [`calls`], counted by SQLite. The calls are counted from the index of
/// cmstore's PreToolUse lines by time, and the findings grouped from the index of the lines
/// with a `risk`, so neither reads the lines themselves (unless an agent or project filter
/// asks for their columns).
pub fn report(
    db: &ReadOnlyDb,
    filters: &Filters,
) -> Result<(tally::Totals, Vec<tally::Row>), QueryError> {
    let (wheres, params) = gate_conditions(filters, &[]);
    let (_, rows) = report::fetch(
        db,
        &format!("SELECT count(*) FROM events WHERE {wheres}"),
        &params,
    )?;
    let calls = rows
        .first()
        .and_then(|r| r.first())
        .and_then(report::integer)
        .unwrap_or(0);
    let (wheres, params) = gate_conditions(filters, &["risk IS NOT NULL"]);
    let sql = format!(
        "SELECT risk, decision, agent, cwd, count(*), min(ts), max(ts)\n\
         FROM events\nWHERE {wheres}\nGROUP BY risk, decision, agent, cwd"
    );
    let (_, rows) = report::fetch(db, &sql, &params)?;
    let findings: Vec<tally::Finding> = rows.iter().map(|row| finding(row)).collect();
    Ok(tally::tally_findings(calls, &findings))
}

/// The flagged calls the gate allowed among those `filters` select, counted by who or what then
/// decided them (`v_tool_call_decisions.decided_by`, 0028), most first: a settings rule, the
/// user, the mode, auto mode, or `unknown`.
pub fn allowed_by(db: &ReadOnlyDb, filters: &Filters) -> Result<Vec<(String, i64)>, QueryError> {
    let (wheres, params) = gate_conditions(filters, &["risk IS NOT NULL", "decision = 'allow'"]);
    let sql = format!(
        // A correlated lookup per call, not a join: joined, SQLite materializes the whole
        // view (every call's decision) first.
        "SELECT coalesce((SELECT d.decided_by FROM v_tool_call_decisions d \
                          WHERE d.call_rowid = c.rowid), 'unknown') AS by, count(*) AS n\n\
         FROM (SELECT id FROM events WHERE {wheres}) AS e\n\
         LEFT JOIN tool_calls c ON c.pre_event_id = e.id AND c.risk IS NOT NULL\n\
         GROUP BY by ORDER BY n DESC, by"
    );
    let (_, rows) = report::fetch(db, &sql, &params)?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some((
                r.first().and_then(report::text)?,
                r.get(1).and_then(report::integer)?,
            ))
        })
        .collect())
}

/// The finding of one grouped row `risk, decision, agent, cwd, calls, first ts, last ts` (as
/// [`fn@report`] groups them here, and the team store's dashboard there).
pub fn finding(row: &[Value]) -> tally::Finding {
    let text = |i: usize| row.get(i).and_then(report::text);
    let int = |i: usize| row.get(i).and_then(report::integer).unwrap_or_default();
    tally::Finding {
        risk: text(0).unwrap_or_default(),
        decision: text(1),
        agent: text(2),
        cwd: text(3),
        calls: int(4),
        first_ts: int(5),
        last_ts: int(6),
    }
}

fn call(row: &[Value]) -> Call {
    let text = |i: usize| row.get(i).and_then(report::text);
    let int = |i: usize| row.get(i).and_then(report::integer);
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

    /// A store of PreToolUse rows with findings in two projects and three agents, clean calls,
    /// another producer's finding, and a finding on a line other than a PreToolUse.
    fn store() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let store = crate::store::open(&path).unwrap();
        let conn = store.conn().unwrap();
        let rows = [
            (
                "PreToolUse",
                "cmstore",
                "claude",
                "/p/web",
                "rm-rf-root",
                "deny",
            ),
            (
                "PreToolUse",
                "cmstore",
                "claude",
                "/p/web/",
                "rm-rf-root,dd",
                "allow",
            ),
            ("PreToolUse", "cmstore", "codex", "/p/api", "dd", "deny"),
            ("PreToolUse", "cmstore", "codex", "/p/api", "", ""),
            (
                "PreToolUse",
                "cmstore",
                "vscode",
                "/p/api",
                "unreadable",
                "allow",
            ),
            ("PreToolUse", "cmstore", "", "", "dd", "deny"),
            ("PreToolUse", "cmstore", "claude", "/p/web", " , ", "allow"),
            ("PreToolUse", "other", "claude", "/p/web", "dd", "deny"),
            ("PostToolUse", "cmstore", "claude", "/p/web", "dd", "deny"),
        ];
        for i in 0..40_i64 {
            let (hook, producer, agent, cwd, risk, decision) = rows[i as usize % rows.len()];
            conn.execute(
                "INSERT INTO events(id, ts, hook_type, session_id, agent, cwd, producer, risk,
                   decision, entry, ingested_at)
                 VALUES (?1, ?2, ?3, ?4, nullif(?5, ''), nullif(?6, ''), ?7, nullif(?8, ''),
                   nullif(?9, ''), '{}', 0)",
                rusqlite::params![
                    format!("e{i}"),
                    1000 + i,
                    hook,
                    format!("s{}", i % 3),
                    agent,
                    cwd,
                    producer,
                    risk,
                    decision
                ],
            )
            .unwrap();
        }
        (dir, path)
    }

    #[test]
    fn the_report_counted_in_sql_is_the_tally_of_every_call() {
        let (_dir, path) = store();
        let db = ReadOnlyDb::open(&path, None).unwrap();
        let filters = [
            Filters::default(),
            Filters {
                since: Some(1010),
                until: Some(1030),
                ..Filters::default()
            },
            Filters {
                agent: Some("claude".into()),
                ..Filters::default()
            },
            Filters {
                project: Some("api".into()),
                session: Some("s1".into()),
                ..Filters::default()
            },
        ];
        for f in &filters {
            let by_call = tally::tally(&calls(&db, f, false).unwrap());
            assert_eq!(report(&db, f).unwrap(), by_call, "{f:?}");
        }
        let (totals, rows) = report(&db, &Filters::default()).unwrap();
        // 7 of every 9 rows are cmstore's PreToolUse lines; of those, 5 have rules.
        assert_eq!((totals.calls, totals.flagged), (32, 23));
        assert!(rows
            .iter()
            .any(|r| r.agent == "unknown" && r.project.is_empty()));
    }

    #[test]
    fn the_report_reads_the_gate_indexes_alone() {
        let (_dir, path) = store();
        let conn = rusqlite::Connection::open(&path).unwrap();
        let plan = |sql: &str| -> String {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            for i in 1..=stmt.parameter_count() {
                stmt.raw_bind_parameter(i, "x").unwrap();
            }
            let mut rows = stmt.raw_query();
            let mut out = Vec::new();
            while let Some(row) = rows.next().unwrap() {
                out.push(row.get::<_, String>(3).unwrap());
            }
            out.join("; ")
        };
        let all = Filters {
            since: Some(1),
            until: Some(2),
            agent: Some("a".into()),
            project: Some("p".into()),
            // A session is found through the events' session index instead.
            session: None,
        };
        for f in [Filters::default(), all] {
            let (wheres, _) = gate_conditions(&f, &[]);
            let count = plan(&format!("SELECT count(*) FROM events WHERE {wheres}"));
            let (wheres, _) = gate_conditions(&f, &["risk IS NOT NULL"]);
            let groups = plan(&format!(
                "SELECT risk, decision, agent, cwd, count(*), min(ts), max(ts) FROM events
                 WHERE {wheres} GROUP BY risk, decision, agent, cwd"
            ));
            assert!(
                count.contains("COVERING INDEX events_gate_calls"),
                "{count}"
            );
            // Of all time, from the findings; of a time range, from the calls of that range.
            assert!(groups.contains("COVERING INDEX events_gate_"), "{groups}");
            if f.since.is_none() {
                assert!(groups.contains("events_gate_findings"), "{groups}");
            }
        }
    }

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
