//! The SQL recipes in `examples/queries/`: each runs through `cmstore query --file` against a
//! generated store and returns the expected rows.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::{json, Value};

use cmstore::model::queue_line::check::{CheckRecord, Finding};

use crate::common::now_ms as now;
use crate::common::{entry, TestEnv};

/// Two sessions with every kind of fact the recipes look for, plus one unreadable line.
fn store() -> TestEnv {
    let env = TestEnv::new();
    // Everything happens within the last second, so "today" holds it unless the test runs
    // in the first second after midnight UTC.
    let t = now() - 900;
    let mut lines = Vec::new();
    let mut add = |hook: &str,
                   session: &str,
                   dt: i64,
                   f: &dyn Fn(&mut cmstore::model::queue_line::QueueEntry)| {
        let mut e = entry(hook, session);
        e.timestamp = t + dt;
        e.estimated_tokens = 10;
        if session == "b" {
            e.agent = Some("vscode".into());
        }
        f(&mut e);
        lines.push(e.to_line());
    };
    let call = |name: &'static str, id: &'static str, input: &'static str| {
        move |e: &mut cmstore::model::queue_line::QueueEntry| {
            e.tool_name = Some(name.into());
            e.tool_call_id = Some(id.into());
            e.tool_input = Some(input.into());
        }
    };
    add("SessionStart", "a", 0, &|_| {});
    add("UserPromptSubmit", "a", 1, &|_| {});
    add(
        "PreToolUse",
        "a",
        10,
        &call("Bash", "c1", r#"{"command":"cargo test"}"#),
    );
    add(
        "PostToolUse",
        "a",
        310,
        &call("Bash", "c1", r#"{"command":"cargo test"}"#),
    );
    add("PreToolUse", "a", 320, &|e| {
        call("Bash", "c2", r#"{"command":"rm -rf /"}"#)(e);
        e.risk = Some("rm-rf-root".into());
        e.decision = Some("allow".into());
    });
    add(
        "PostToolUseFailure",
        "a",
        370,
        &call("Bash", "c2", r#"{"command":"rm -rf /"}"#),
    );
    add(
        "PreToolUse",
        "a",
        400,
        &call("Edit", "c3", r#"{"file_path":"/src/main.rs"}"#),
    );
    add(
        "PostToolUse",
        "a",
        420,
        &call("Edit", "c3", r#"{"file_path":"/src/main.rs"}"#),
    );
    add(
        "PreToolUse",
        "a",
        430,
        &call("Write", "c4", r#"{"file_path":"/src/lib.rs"}"#),
    );
    add(
        "PostToolUse",
        "a",
        440,
        &call("Write", "c4", r#"{"file_path":"/src/lib.rs"}"#),
    );
    add(
        "PostToolUse",
        "a",
        450,
        &call("Edit", "c7", r#"{"file_path":"/src/main.rs"}"#),
    );
    let check = |status: &'static str, findings: Vec<Finding>| {
        move |e: &mut cmstore::model::queue_line::QueueEntry| {
            e.estimated_tokens = 0;
            e.check = Some(CheckRecord {
                name: if findings.is_empty() {
                    "format"
                } else {
                    "security"
                }
                .into(),
                mode: "audit".into(),
                status: status.into(),
                files: vec!["app.py".into(), "lib.py".into()],
                findings: findings.clone(),
                ..CheckRecord::default()
            });
        }
    };
    add("CheckResult", "a", 445, &check("passed", vec![]));
    add(
        "CheckResult",
        "a",
        446,
        &check(
            "failed",
            vec![Finding {
                rule: "aws-key".into(),
                file: Some("app.py".into()),
                line: Some(4),
                message: None,
            }],
        ),
    );
    add("PreToolUse", "a", 460, &|e| {
        call("Task", "c5", r#"{"subagent_type":"planner"}"#)(e);
        e.delegated_agent = Some("planner".into());
    });
    add("PostToolUse", "a", 5460, &call("Task", "c5", "{}"));
    add("UserPromptSubmit", "a", 5470, &|_| {});
    add("SessionEnd", "a", 5480, &|e| {
        let response = |id: &str, model: &str| cmstore::model::queue_line::usage::UsageRecord {
            message_id: id.into(),
            model: Some(model.into()),
            input: 1_000_000,
            output: 100_000,
            ..Default::default()
        };
        e.usage = Some(vec![
            response("m1", "claude-haiku-4-5"),
            response("m2", "claude-haiku-4-5"),
            response("m3", "someone-elses-model"),
        ]);
    });
    add("UserPromptSubmit", "b", 100, &|_| {});
    add(
        "PreToolUse",
        "b",
        110,
        &call("run_in_terminal", "c6", r#"{"command":"ls"}"#),
    );
    add(
        "PostToolUseFailure",
        "b",
        120,
        &call("run_in_terminal", "c6", r#"{"command":"ls"}"#),
    );
    for dt in [130, 140, 150] {
        add("Weird", "b", dt, &|_| {});
    }
    env.append(&lines);
    env.append_raw(b"not json\n");
    env.ingest_once();
    env
}

fn recipe(env: &TestEnv, name: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/queries")
        .join(format!("{name}.sql"));
    let out = env
        .cmd()
        .args(["query", "--format", "json", "--file"])
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    match serde_json::from_slice(&out.stdout).unwrap() {
        Value::Array(rows) => rows,
        other => panic!("{name}: {other}"),
    }
}

/// The values of `keys` in each row.
fn pick(rows: &[Value], keys: &[&str]) -> Vec<Value> {
    rows.iter()
        .map(|r| Value::Array(keys.iter().map(|k| r[*k].clone()).collect()))
        .collect()
}

#[test]
fn every_recipe_opens_with_the_question_it_answers_and_is_tested() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/queries");
    let mut names = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("-- "), "{}", path.display());
        names.insert(path.file_stem().unwrap().to_string_lossy().into_owned());
    }
    let tested: BTreeSet<String> = TESTED.iter().map(|s| s.to_string()).collect();
    assert_eq!(names, tested);
    assert!(names.len() >= 10);
}

const TESTED: [&str; 14] = [
    "check_failures",
    "cost_per_day_and_model",
    "files_edited_today",
    "shell_commands",
    "failed_tool_calls_per_session",
    "delegations_to_subagents",
    "tokens_per_day_and_agent",
    "sessions_without_end",
    "noisiest_unknown_reasons",
    "slowest_tool_calls",
    "prompts_per_hour",
    "risky_commands",
    "rejected_lines",
    "tool_failure_rate",
];

#[test]
fn recipes_return_the_expected_rows() {
    let env = store();

    let rows = recipe(&env, "files_edited_today");
    assert_eq!(
        pick(&rows, &["file", "edits", "sessions"]),
        [json!(["/src/main.rs", 2, 1]), json!(["/src/lib.rs", 1, 1])]
    );

    let rows = recipe(&env, "shell_commands");
    assert_eq!(
        pick(&rows, &["command", "outcome", "session_id"]),
        [
            json!(["rm -rf /", "failed", "a"]),
            json!(["ls", "failed", "b"]),
            json!(["cargo test", "ok", "a"]),
        ]
    );
    assert_eq!(rows[2]["duration_ms"], 300);

    let rows = recipe(&env, "failed_tool_calls_per_session");
    assert_eq!(
        pick(&rows, &["session_id", "failed", "calls", "failing_tools"]),
        [
            json!(["a", 1, 6, "Bash"]),
            json!(["b", 1, 1, "run_in_terminal"])
        ]
    );

    let rows = recipe(&env, "delegations_to_subagents");
    assert_eq!(
        pick(&rows, &["session_id", "delegated_agent", "calls"]),
        [json!(["a", "planner", 1])]
    );

    let rows = recipe(&env, "tokens_per_day_and_agent");
    let by_agent: Vec<Value> = pick(&rows, &["agent", "estimated_tokens"]);
    let claude: i64 = by_agent
        .iter()
        .filter(|r| r[0] == "claude")
        .map(|r| r[1].as_i64().unwrap())
        .sum();
    let vscode: i64 = by_agent
        .iter()
        .filter(|r| r[0] == "vscode")
        .map(|r| r[1].as_i64().unwrap())
        .sum();
    assert_eq!((claude, vscode), (150, 60));

    let rows = recipe(&env, "cost_per_day_and_model");
    assert_eq!(
        pick(
            &rows,
            &[
                "model",
                "responses",
                "output_tokens",
                "cost_usd",
                "unpriced"
            ]
        ),
        // Haiku 4.5: 2 x (1M input at $1 + 100k output at $5 per million).
        [
            json!(["claude-haiku-4-5", 2, 200_000, 3.0, 0]),
            json!(["someone-elses-model", 1, 100_000, null, 1])
        ]
    );

    let rows = recipe(&env, "sessions_without_end");
    assert_eq!(
        pick(&rows, &["session_id", "agent"]),
        [json!(["b", "vscode"])]
    );
    assert!(rows[0]["idle_minutes"].as_i64().unwrap() <= 1);

    let rows = recipe(&env, "noisiest_unknown_reasons");
    assert_eq!(
        pick(&rows, &["reason", "total", "sessions"]),
        [json!(["unknown_hook_type", 3, 1])]
    );

    let rows = recipe(&env, "slowest_tool_calls");
    assert_eq!(
        pick(&rows[..3], &["tool_name", "duration_ms", "outcome"]),
        [
            json!(["Task", 5000, "ok"]),
            json!(["Bash", 300, "ok"]),
            json!(["Bash", 50, "failed"]),
        ]
    );

    let rows = recipe(&env, "prompts_per_hour");
    let prompts: i64 = rows.iter().map(|r| r["prompts"].as_i64().unwrap()).sum();
    assert_eq!(prompts, 3);

    let rows = recipe(&env, "risky_commands");
    assert_eq!(
        pick(&rows, &["session_id", "risk", "decision", "command"]),
        [json!(["a", "rm-rf-root", "allow", "rm -rf /"])]
    );

    let rows = recipe(&env, "rejected_lines");
    assert_eq!(
        pick(&rows, &["reason", "lines"]),
        [json!(["invalid_json", 1])]
    );
    assert!(rows[0]["first_at"]
        .as_str()
        .unwrap()
        .contains("hook-queue.jsonl:"));

    let rows = recipe(&env, "check_failures");
    assert_eq!(
        pick(
            &rows,
            &["session_id", "check", "status", "files", "findings"]
        ),
        [json!([
            "a",
            "security",
            "failed",
            "app.py, lib.py",
            "aws-key app.py:4"
        ])]
    );

    let rows = recipe(&env, "tool_failure_rate");
    assert_eq!(
        pick(&rows[..2], &["tool_name", "failed_pct"]),
        [json!(["run_in_terminal", 100.0]), json!(["Bash", 50.0])]
    );
}
