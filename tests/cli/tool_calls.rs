//! Tool calls: one `tool_calls` row per call, whatever the agent's payloads carry, with a true
//! duration and an outcome, and the figures of `v_tools`, `v_session_tools` and `summarize`
//! that follow from them.

use crate::common::{entry, TestEnv};
use cmstore::queue_line::QueueEntry;

/// A tool line of `hook` in `session` at `ts`, adjusted by `f`.
fn half(hook: &str, session: &str, ts: i64, f: impl FnOnce(&mut QueueEntry)) -> String {
    let mut e = entry(hook, session);
    e.timestamp = ts;
    f(&mut e);
    e.to_line()
}

/// `select` as rows of text, one string per row with its values joined by `|`.
fn rows(env: &TestEnv, select: &str) -> Vec<String> {
    let conn = env.conn();
    let mut stmt = conn.prepare(select).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |r| {
        Ok((0..n)
            .map(|i| match r.get::<_, rusqlite::types::Value>(i).unwrap() {
                rusqlite::types::Value::Null => "-".to_string(),
                rusqlite::types::Value::Integer(v) => v.to_string(),
                rusqlite::types::Value::Text(t) => t,
                other => format!("{other:?}"),
            })
            .collect::<Vec<_>>()
            .join("|"))
    })
    .unwrap()
    .collect::<Result<_, _>>()
    .unwrap()
}

#[test]
fn a_call_id_joins_the_halves_of_its_own_session_only() {
    // Two sessions whose agents number their calls alike.
    let lines = [
        half("PreToolUse", "s1", 1_000, |e| {
            e.tool_call_id = Some("call_1".into())
        }),
        half("PreToolUse", "s2", 1_100, |e| {
            e.tool_call_id = Some("call_1".into())
        }),
        half("PostToolUse", "s1", 1_300, |e| {
            e.tool_call_id = Some("call_1".into())
        }),
        half("PostToolUse", "s2", 1_500, |e| {
            e.tool_call_id = Some("call_1".into())
        }),
    ];
    for batch in ["100", "1"] {
        let env = TestEnv::new();
        env.append(&lines);
        env.cmd()
            .args(["ingest", "--once", "--batch-size", batch])
            .assert()
            .success();
        assert_eq!(
            rows(
                &env,
                "SELECT session_id, start_ts, end_ts, duration_ms, success FROM tool_calls
                 ORDER BY session_id"
            ),
            ["s1|1000|1300|300|1", "s2|1100|1500|400|1"],
            "batch size {batch}"
        );
        assert_eq!(
            rows(
                &env,
                "SELECT session_id, calls, unfinished FROM v_session_tools ORDER BY 1"
            ),
            ["s1|1|0", "s2|1|0"]
        );
    }
}
