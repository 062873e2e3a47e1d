//! `cmstore summarize`: figures per session, tool, day and agent, equal to the views'.

use serde_json::Value;

use crate::common::now_ms as now;
use crate::common::{entry, TestEnv};

const HOUR: i64 = 3_600_000;

/// One line of `hook` in `session` at `ts`, adjusted by `f`.
fn at(
    hook: &str,
    session: &str,
    ts: i64,
    f: impl FnOnce(&mut cmstore::model::queue_line::QueueEntry),
) -> String {
    let mut e = entry(hook, session);
    e.timestamp = ts;
    f(&mut e);
    e.to_line()
}

fn tool(hook: &str, session: &str, ts: i64, name: &str, call: &str) -> String {
    at(hook, session, ts, |e| {
        e.tool_name = Some(name.into());
        e.tool_call_id = Some(call.into());
    })
}

/// The usage of one response: 1000 input, `output` output, 2000 cache writes, 4000 reads.
pub fn usage(id: &str, model: &str, output: u64) -> cmstore::model::queue_line::usage::UsageRecord {
    cmstore::model::queue_line::usage::UsageRecord {
        message_id: id.into(),
        request_id: Some(format!("req_{id}")),
        model: Some(model.into()),
        input: 1000,
        output,
        cache_write: 2000,
        cache_read: 4000,
        ..Default::default()
    }
}

/// A store with a full session (s1, two hours ago), a session full of unknowns (s2, half an
/// hour ago), a line without a session, and an old session (s_old, ten days ago).
pub fn seeded() -> TestEnv {
    let env = TestEnv::new();
    let t = now() - 2 * HOUR;
    let s2 = now() - HOUR / 2;
    let old = now() - 240 * HOUR;
    let lines = vec![
        at("SessionStart", "s1", t, |e| {
            e.model = Some("m1".into());
            e.cwd = Some("/p".into());
        }),
        at("UserPromptSubmit", "s1", t + 10, |e| {
            e.prompt = Some("one".into())
        }),
        tool("PreToolUse", "s1", t + 20, "Bash", "c1"),
        tool("PostToolUse", "s1", t + 120, "Bash", "c1"),
        tool("PreToolUse", "s1", t + 200, "Edit", "c2"),
        tool("PostToolUseFailure", "s1", t + 250, "Edit", "c2"),
        at("PreToolUse", "s1", t + 300, |e| {
            e.tool_name = Some("Task".into());
            e.tool_call_id = Some("c3".into());
            e.delegated_agent = Some("planner".into());
        }),
        tool("PostToolUse", "s1", t + 1300, "Task", "c3"),
        at("UserPromptSubmit", "s1", t + 1400, |e| {
            e.prompt = Some("two".into())
        }),
        at("SubagentStop", "s1", t + 1450, |e| {
            e.response = Some("the subagent's answer".into())
        }),
        at("Stop", "s1", t + 1500, |e| {
            e.turn_id = Some("t1".into());
            e.usage = Some(vec![
                usage("msg_1", "claude-sonnet-4-20250514", 7),
                usage("msg_2", "unpriced-model", 9),
            ]);
        }),
        at("SessionEnd", "s1", t + 1600, |_| {}),
        at("UserPromptSubmit", "s2", s2, |e| {
            e.agent = Some("vscode".into())
        }),
        at("Weird", "s2", s2 + 1, |e| e.agent = Some("vscode".into())),
        at("Weird", "s2", s2 + 2, |e| e.agent = Some("vscode".into())),
        at("SessionStart", "s2", s2 + 3, |e| {
            e.agent = Some("vscode".into());
            e.actor_name = None;
            e.actor_type = None;
        }),
        at("PreToolUse", "s2", s2 + 4, |e| {
            e.agent = Some("vscode".into());
            e.tool_name = None;
        }),
        at("Notification", "x", s2 + 5, |e| e.session_id = None),
        at("UserPromptSubmit", "s_old", old, |_| {}),
        tool("PreToolUse", "s_old", old + 1, "Read", "c9"),
        tool("PostToolUse", "s_old", old + 2, "Read", "c9"),
    ];
    env.append(&lines);
    env.ingest_once();
    env
}

fn json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env
        .cmd()
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stdout(env: &TestEnv, args: &[&str]) -> String {
    let out = env.cmd().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn summarize_and_query_agree_for_every_grouping() {
    let env = seeded();
    let cases = [
        (
            "session",
            format!(
                "select {}, {} from v_session_usage order by last_seen desc, session_id",
                cmstore::read::summaries::SESSION_COLUMNS,
                cmstore::read::summaries::USAGE_COLUMNS
            ),
        ),
        (
            "tool",
            "select *, round(1.0 * failed / nullif(succeeded + failed, 0), 4) as failure_rate from v_tools order by calls desc, tool_name".to_string(),
        ),
        (
            "day",
            "select * from v_daily_usage order by day".to_string(),
        ),
        (
            "agent",
            "select * from v_agents_usage order by sessions desc, agent".to_string(),
        ),
        (
            "model",
            "select m.*, (select round(sum(premium_requests), 4) from usage u \
             where coalesce(u.model, '?') = m.model) as premium_requests \
             from v_usage_models m order by cost_usd is null, cost_usd desc, model"
                .to_string(),
        ),
    ];
    for (by, sql) in cases {
        let summary = stdout(&env, &["summarize", "--by", by, "--format", "json"]);
        let query = stdout(&env, &["query", &sql, "--format", "json"]);
        assert_eq!(summary, query, "--by {by}");
        let rows: Value = serde_json::from_str(&summary).unwrap();
        assert!(!rows.as_array().unwrap().is_empty(), "--by {by}");
    }
}

#[test]
fn a_session_shows_every_figure() {
    let env = seeded();
    let rows = json(&env, &["summarize", "--session", "s1"]);
    let s = &rows[0];
    assert_eq!(rows.as_array().unwrap().len(), 1);
    assert_eq!(s["agent"], "claude");
    assert_eq!(s["model"], "m1");
    assert_eq!(s["cwd"], "/p");
    assert_eq!(s["duration_ms"], 1600);
    assert_eq!(s["ended"], 1);
    assert_eq!(s["prompts"], 2);
    assert_eq!(s["turns"], 1, "the main conversation's turns");
    assert_eq!(s["subagent_turns"], 1);
    assert_eq!(s["tool_uses"], 3);
    assert_eq!(s["tool_failures"], 1);
    assert_eq!(s["tools"], "Bash=1/0/100ms;Edit=1/1/50ms;Task=1/0/1000ms");
    assert_eq!(s["delegations"], 1);
    assert_eq!(s["delegated_to"], "planner=1");
    assert_eq!(s["unknown_total"], 0);
    assert_eq!(s["unknown_breakdown"], "");
    assert!(s["start"].as_str().unwrap().ends_with('Z'));

    let tools = json(&env, &["summarize", "--session", "s1", "--by", "tool"]);
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tool_name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Bash", "Edit", "Task"]);
    assert_eq!(tools[1]["failed"], 1);
    assert_eq!(tools[2]["total_ms"], 1000);
}

#[test]
fn the_unknown_breakdown_is_sorted_by_reason() {
    let env = seeded();
    let rows = json(&env, &["summarize", "--session", "s2"]);
    assert_eq!(rows[0]["unknown_total"], 4);
    assert_eq!(
        rows[0]["unknown_breakdown"],
        "session_event_without_actor=1;tool_event_without_tool_name=1;unknown_hook_type=2"
    );
    // The line without a session counts under vstack's `unknown-session`, in the view.
    let n = env.int(
        "SELECT count FROM unknown_counts WHERE session_id = 'unknown-session' \
         AND reason = 'missing_session_id'",
    );
    assert_eq!(n, 1);
}

#[test]
fn since_keeps_recent_sessions_and_days() {
    let env = seeded();
    let ids = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|r| r["session_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = json(&env, &["summarize"]);
    assert!(ids(&all).contains(&"s_old".to_string()));
    let recent = json(&env, &["summarize", "--since", "24h"]);
    assert_eq!(
        ids(&recent),
        ["s2", "s1"],
        "newest first, the old one left out"
    );
    let hour = json(&env, &["summarize", "--since", "1h"]);
    assert_eq!(ids(&hour), ["s2"]);
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(1))
        .format("%Y-%m-%d")
        .to_string();
    assert_eq!(
        json(&env, &["summarize", "--since", &tomorrow]),
        Value::Array(vec![])
    );

    let tools = json(&env, &["summarize", "--by", "tool", "--since", "7d"]);
    assert!(tools
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["tool_name"] != "Read"));
    let agents = json(&env, &["summarize", "--by", "agent", "--since", "1w"]);
    assert_eq!(agents.as_array().unwrap().len(), 2);
    let days = json(&env, &["summarize", "--by", "day", "--since", "2d"]);
    let total: i64 = days
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["events"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 18, "every event but the old session's three");
}

#[test]
fn bad_options_fail_clearly() {
    let env = seeded();
    env.cmd()
        .args(["summarize", "--since", "last tuesday"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("expected a duration ago"));
    let out = env
        .cmd()
        .args(["summarize", "--session", "nope"])
        .output()
        .unwrap();
    assert!(!out.status.success() && out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "printed once: {err}");
    assert!(
        err.contains("no session in the store matches \"nope\""),
        "{err}"
    );
    let empty = TestEnv::new();
    empty
        .cmd()
        .args(["summarize"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("run `cmstore ingest` first"));
}

#[test]
fn table_output_shows_the_session() {
    let env = seeded();
    // The readable table: the curated columns; --wide: every column, raw.
    let text = stdout(&env, &["summarize", "--session", "s1", "--format", "table"]);
    assert!(
        text.contains("$0.01+") && !text.contains("planner=1"),
        "{text}"
    );
    let wide = stdout(
        &env,
        &[
            "summarize",
            "--session",
            "s1",
            "--format",
            "table",
            "--wide",
        ],
    );
    assert!(wide.contains("planner=1"), "{wide}");
    let sql = env
        .cmd()
        .args(["summarize", "--show-sql", "--by", "tool"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&sql.stderr).contains("FROM v_session_tools"));
}

#[test]
fn token_figures_past_the_64_bit_range_saturate_instead_of_failing() {
    // `estimatedTokens` is whatever the line says: a broken writer's figure must not turn a
    // session's total negative or make summarize fail for the whole store.
    let env = TestEnv::new();
    let t = now() - HOUR;
    let huge = |session: &str, ts: i64| {
        at("Notification", session, ts, |e| {
            e.estimated_tokens = i64::MAX as u64
        })
    };
    // Two in one batch (summed in Rust), one more in a later batch (summed by SQLite).
    env.append(&[huge("s1", t), huge("s1", t + 1), huge("s2", t + 2)]);
    env.ingest_once();
    env.append(&[huge("s1", t + 3)]);
    env.ingest_once();
    assert_eq!(
        env.int("SELECT estimated_tokens FROM sessions WHERE session_id = 's1'"),
        i64::MAX
    );
    assert_eq!(
        env.int("SELECT count(*) FROM sessions WHERE typeof(estimated_tokens) != 'integer'"),
        0
    );
    for by in ["day", "agent"] {
        let rows = json(&env, &["summarize", "--by", by]);
        assert_eq!(rows[0]["estimated_tokens"], i64::MAX, "--by {by}: {rows}");
    }
    for view in ["v_daily", "v_agents"] {
        let sql = format!("select estimated_tokens from {view}");
        let rows = json(&env, &["query", &sql]);
        assert_eq!(rows[0]["estimated_tokens"], i64::MAX, "{view}: {rows}");
    }
    let sessions = json(&env, &["summarize"]);
    assert!(sessions
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["estimated_tokens"] == i64::MAX));
}

#[test]
fn usage_and_cost_sit_beside_the_hook_figures() {
    let env = seeded();
    let rows = json(&env, &["summarize", "--session", "s1"]);
    let s = &rows[0];
    assert_eq!(s["responses"], 2);
    assert_eq!(s["input_tokens"], 2000);
    assert_eq!(s["output_tokens"], 16);
    assert_eq!(s["cache_write_tokens"], 4000);
    assert_eq!(s["cache_read_tokens"], 8000);
    // Sonnet 4 list prices; the other model has none and is counted, not guessed.
    let expected = (1000.0 * 3.0 + 7.0 * 15.0 + 2000.0 * 3.75 + 4000.0 * 0.3) / 1e6;
    assert!(
        (s["cost_usd"].as_f64().unwrap() - expected).abs() < 1e-9,
        "{s}"
    );
    assert_eq!(s["unpriced"], 1);
    let models = json(&env, &["summarize", "--by", "model"]);
    assert_eq!(models[0]["model"], "claude-sonnet-4-20250514");
    assert_eq!(models[1]["model"], "unpriced-model");
    assert_eq!(models[1]["cost_usd"], Value::Null);
    assert_eq!(models[1]["unpriced"], 1);
    let days = json(&env, &["summarize", "--by", "day"]);
    let total: i64 = days
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["output_tokens"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 16);
    let agents = json(&env, &["summarize", "--by", "agent"]);
    let claude = agents
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "claude")
        .unwrap();
    assert_eq!(claude["responses"], 2);
    assert!(
        claude["estimated_tokens"].is_i64(),
        "the payload figure stays"
    );
}

#[test]
fn a_price_in_cmstore_toml_prices_all_of_history_at_the_next_summary() {
    let env = seeded();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[prices.\"unpriced-model\"]\ninput = 0\noutput = 1000000\ncache_write_5m = 0\n\
         cache_write_1h = 0\ncache_read = 0\n",
    )
    .unwrap();
    let models = json(&env, &["summarize", "--by", "model"]);
    let other = models
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "unpriced-model")
        .unwrap();
    assert_eq!(other["cost_usd"], 9.0, "9 output tokens at $1 each");
    assert_eq!(other["unpriced"], 0);
    let stored = env.int("SELECT count(*) FROM prices WHERE origin = 'cmstore.toml'");
    assert_eq!(stored, 1);
}

/// 2026-01-05T10:00:00Z: old enough that "ago" prints a date, so snapshots stay fixed.
const T0: i64 = 1_767_607_200_000;
const MIN: i64 = 60_000;

/// A store at fixed, old times: two Claude Code sessions whose ids share eleven characters
/// (in `cmstore`, on two days), a VS Code session in `webapp`, tool calls of four tools, and
/// the usage of five responses of two models (one without a price).
fn fixed() -> TestEnv {
    let env = TestEnv::new();
    let a = "aaaaaaaa-1111-4000-8000-000000000001";
    let b = "aaaaaaaa-1112-4000-8000-000000000002";
    let v = "bbbbbbbb-2222-4000-8000-000000000003";
    let mut lines = Vec::new();
    let mut at = |hook: &str, session: &str, minute: i64, f: &dyn Fn(&mut QueueEntry)| {
        let mut e = entry(hook, session);
        e.timestamp = T0 + minute * MIN;
        e.cwd = Some(if session == v {
            "C:\\src\\webapp".into()
        } else {
            "/home/dev/cmstore".into()
        });
        if session == v {
            e.agent = Some("vscode".into());
        }
        f(&mut e);
        lines.push(e.to_line());
    };
    let none = |_: &mut QueueEntry| {};
    let call = |name: &'static str, id: &'static str| {
        move |e: &mut QueueEntry| {
            e.tool_name = Some(name.into());
            e.tool_call_id = Some(id.into());
        }
    };
    at("SessionStart", a, 0, &|e| {
        e.model = Some("claude-sonnet-4-5".into())
    });
    at("UserPromptSubmit", a, 1, &none);
    at("PreToolUse", a, 2, &call("Bash", "a1"));
    at("PostToolUseFailure", a, 3, &|e| {
        call("Bash", "a1")(e);
        e.duration_ms = Some(2_100);
    });
    at("PreToolUse", a, 4, &|e| {
        call("Bash", "a2")(e);
        e.risk = Some("rm-rf-root".into());
        e.decision = Some("deny".into());
    });
    at("PreToolUse", a, 5, &call("Edit", "a3"));
    at("PostToolUse", a, 13, &|e| {
        call("Edit", "a3")(e);
        e.duration_ms = Some(482_000);
    });
    at("Stop", a, 14, &|e| {
        e.turn_id = Some("t1".into());
        e.usage = Some(vec![
            usage("m1", "claude-sonnet-4-5", 1_200_000),
            usage("m2", "claude-sonnet-4-5", 600_000),
            usage("m3", "unpriced-model", 50),
        ]);
    });
    at("SessionEnd", a, 15, &none);
    // The second session: the next day.
    at("UserPromptSubmit", b, 24 * 60, &none);
    for (i, id) in ["b1", "b2", "b3"].into_iter().enumerate() {
        let minute = 24 * 60 + 1 + i as i64 * 2;
        at(
            "PreToolUse",
            b,
            minute,
            &call("mcp__github__search_issues", id),
        );
        at("PostToolUse", b, minute + 1, &|e| {
            call("mcp__github__search_issues", id)(e);
            e.duration_ms = Some(350);
        });
    }
    at("Stop", b, 24 * 60 + 9, &|e| {
        e.turn_id = Some("t2".into());
        e.usage = Some(vec![usage("m4", "claude-opus-4-1", 30_000)]);
    });
    at("UserPromptSubmit", v, 120, &none);
    at("PreToolUse", v, 121, &call("runSubagent", "v1"));
    at("PostToolUse", v, 125, &|e| {
        call("runSubagent", "v1")(e);
        e.duration_ms = Some(3 * 3_600_000 + 5 * 60_000);
    });
    at("Notification", "x", 126, &|e| e.session_id = None);
    env.append(&lines);
    env.ingest_once();
    env
}

use cmstore::model::queue_line::QueueEntry;

/// `args` at 100 columns in UTC, asserted successful.
fn at_100(env: &TestEnv, args: &[&str]) -> String {
    let out = env
        .cmd()
        .env("TZ", "UTC")
        .env("COLUMNS", "100")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{args:?}: {line}");
    }
    text
}

#[test]
fn every_summary_reads_at_a_glance_in_100_columns() {
    let env = fixed();
    for by in ["session", "tool", "day", "agent", "model"] {
        let table = at_100(&env, &["summarize", "--by", by, "--format", "table"]);
        insta::assert_snapshot!(format!("summarize_{by}_table"), table);
    }
}

/// Copilot's premium requests get a column of the model table where some model has them,
/// summed in the total row; a table of other agents' models has none (the snapshots above).
#[test]
fn the_model_table_shows_premium_requests_where_an_agent_reports_them() {
    let env = fixed();
    let ts = 1_764_590_400_000; // 2025-12-01T12:00:00Z
    let lines: Vec<String> = [
        ("p1", "claude-sonnet-4-5", Some(1.0)),
        ("p2", "claude-sonnet-4-5", Some(1.0)),
        ("p3", "claude-haiku-4-5", Some(0.33)),
        ("p4", "gpt-5-mini", Some(0.0)),
        ("p5", "gpt-5-mini", None),
    ]
    .into_iter()
    .map(|(id, model, premium)| {
        at("Stop", "s-copilot", ts, |e| {
            e.agent = Some("copilot".into());
            let mut u = usage(id, model, 10);
            u.ts = Some(ts);
            u.premium_requests = premium;
            e.usage = Some(vec![u]);
        })
    })
    .collect();
    env.append(&lines);
    env.ingest_once();
    let table = at_100(&env, &["summarize", "--by", "model", "--format", "table"]);
    insta::assert_snapshot!(table);
    let rows = json(&env, &["summarize", "--by", "model", "--agent", "copilot"]);
    let premium: Vec<(String, Value)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["model"].as_str().unwrap().to_string(),
                r["premium_requests"].clone(),
            )
        })
        .collect();
    assert_eq!(
        premium,
        [
            ("claude-sonnet-4-5".to_string(), serde_json::json!(2.0)),
            ("claude-haiku-4-5".to_string(), serde_json::json!(0.33)),
            ("gpt-5-mini".to_string(), serde_json::json!(0.0)),
        ]
    );
}

/// The total row adds up what adds up, over every row even when `--limit` shows fewer, and
/// a legend explains the cost's `+` and `?`; the machine formats have neither.
#[test]
fn a_readable_summary_ends_with_its_total_and_explains_its_cost_marks() {
    let env = fixed();
    let models = json(&env, &["summarize", "--by", "model"]);
    let rows = models.as_array().unwrap();
    assert!(
        rows.iter().all(|r| r["model"] != "total"),
        "no total in JSON"
    );
    let responses: i64 = rows.iter().map(|r| r["responses"].as_i64().unwrap()).sum();
    let out = env
        .cmd()
        .env("COLUMNS", "100")
        .args([
            "summarize",
            "--by",
            "model",
            "--format",
            "table",
            "--limit",
            "1",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let total = stdout.lines().last().unwrap();
    let cells: Vec<&str> = total.split_whitespace().collect();
    assert_eq!(cells[0], "total", "{stdout}");
    assert_eq!(cells[1], responses.to_string(), "of every row: {stdout}");
    assert!(
        cells.last().unwrap().ends_with('+'),
        "one model is unpriced: {total}"
    );
    assert!(
        stderr.contains("1 of 3 rows shown (--limit 1; the total row is of all 3)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cost: + some responses have no price, ? none has"),
        "{stderr}"
    );
    let tsv = env
        .cmd()
        .args(["summarize", "--by", "model", "--format", "tsv"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&tsv.stdout).contains("total"));
    assert!(!String::from_utf8_lossy(&tsv.stderr).contains("cost: +"));
}

/// In a pipe the reports keep the readable form a terminal shows (issue 35, item 10: as git
/// does), without colour, pager or a width to cut to; `--format tsv` is the machines'.
#[test]
fn a_report_in_a_pipe_reads_as_on_a_terminal() {
    let env = fixed();
    for args in [
        &["sessions"][..],
        &["summarize"],
        &["summarize", "--by", "day"],
        &["gate", "report"],
    ] {
        let out = env.cmd().args(args).env_remove("COLUMNS").output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text.contains('\t') && !text.contains("\\N"),
            "{args:?}: {text}"
        );
        assert!(
            !text.contains('\u{1b}'),
            "no colour in a pipe: {args:?}: {text}"
        );
        let tsv = env
            .cmd()
            .args(args)
            .args(["--format", "tsv"])
            .output()
            .unwrap();
        assert!(
            String::from_utf8(tsv.stdout).unwrap().contains('\t'),
            "{args:?}"
        );
    }
    // The session list as a person reads it: ids, a project and a human time, not epochs.
    let out = env.cmd().arg("sessions").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("cmstore") && !text.contains("1767607200000"),
        "{text}"
    );
}

#[test]
fn the_session_prefixes_a_summary_shows_are_what_session_accepts() {
    let env = fixed();
    let table = at_100(&env, &["summarize", "--format", "table"]);
    for prefix in ["aaaaaaaa-1111", "aaaaaaaa-1112", "bbbbbbbb"] {
        assert!(
            table
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{prefix} "))),
            "{prefix}\n{table}"
        );
        let rows = json(&env, &["summarize", "--session", prefix]);
        assert_eq!(rows.as_array().unwrap().len(), 1, "{prefix}");
        assert!(rows[0]["session_id"].as_str().unwrap().starts_with(prefix));
    }
    // An ambiguous prefix: one error, listing the candidates.
    let out = env
        .cmd()
        .args(["summarize", "--by", "tool", "--session", "aaaaaaaa"])
        .output()
        .unwrap();
    assert!(!out.status.success() && out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("matches 2 sessions")
            && err.contains("aaaaaaaa-1111-4000-8000-000000000001")
            && err.contains("aaaaaaaa-1112-4000-8000-000000000002"),
        "{err}"
    );
}

#[test]
fn every_summary_takes_the_report_filters() {
    let env = fixed();
    let rows = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["summarize"];
        all.extend_from_slice(args);
        json(&env, &all).as_array().unwrap().clone()
    };
    let field = |rows: &[Value], name: &str| -> Vec<String> {
        rows.iter()
            .map(|r| match &r[name] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect()
    };
    let short = |ids: Vec<String>| -> Vec<String> { ids.iter().map(|i| i[..13].into()).collect() };
    // Sessions.
    assert_eq!(
        short(field(&rows(&["--agent", "claude"]), "session_id")),
        ["aaaaaaaa-1112", "aaaaaaaa-1111"]
    );
    assert_eq!(
        short(field(&rows(&["--project", "webapp"]), "session_id")),
        ["bbbbbbbb-2222"]
    );
    assert_eq!(
        short(field(
            &rows(&["--since", "2026-01-05T11:00", "--until", "2026-01-05T13:00"]),
            "session_id"
        )),
        ["bbbbbbbb-2222"]
    );
    // Tools of the chosen sessions.
    assert_eq!(
        field(&rows(&["--by", "tool", "--project", "webapp"]), "tool_name"),
        ["runSubagent"]
    );
    assert_eq!(
        field(
            &rows(&["--by", "tool", "--session", "aaaaaaaa-1112"]),
            "calls"
        ),
        ["3"]
    );
    // Days: of the chosen sessions, from --since's day to --until's.
    let days = rows(&["--by", "day", "--agent", "claude"]);
    assert_eq!(field(&days, "day"), ["2026-01-05", "2026-01-06"]);
    assert_eq!(
        field(&days, "events"),
        ["9", "8"],
        "the VS Code session left out"
    );
    assert_eq!(field(&days, "sessions"), ["1", "1"]);
    assert_eq!(field(&days, "output_tokens"), ["1800050", "30000"]);
    let all_days = rows(&["--by", "day"]);
    assert_eq!(
        field(&all_days, "events"),
        ["13", "8"],
        "and the line without a session"
    );
    assert_eq!(
        field(
            &rows(&["--by", "day", "--until", "2026-01-06T00:00"]),
            "day"
        ),
        ["2026-01-05"]
    );
    assert_eq!(
        field(&rows(&["--by", "day", "--since", "2026-01-06"]), "day"),
        ["2026-01-06"]
    );
    assert_eq!(
        field(&rows(&["--by", "day", "--session", "bbbbbbbb"]), "events"),
        ["3"]
    );
    // Agents of the chosen sessions.
    let agents = rows(&["--by", "agent", "--project", "cmstore"]);
    assert_eq!(field(&agents, "agent"), ["claude"]);
    assert_eq!(field(&agents, "sessions"), ["2"]);
    // Models: the responses of the chosen sessions, in the chosen time.
    assert_eq!(
        field(
            &rows(&["--by", "model", "--session", "aaaaaaaa-1112"]),
            "model"
        ),
        ["claude-opus-4-1"]
    );
    assert_eq!(
        field(
            &rows(&[
                "--by",
                "model",
                "--project",
                "cmstore",
                "--until",
                "2026-01-06"
            ]),
            "responses"
        ),
        ["2", "1"]
    );
    assert!(rows(&["--by", "model", "--project", "webapp"]).is_empty());
}

/// Prunes what is older than four minutes past [`T0`], in batches of one row.
fn prune_mid_day(env: &TestEnv) {
    env.cmd()
        .args(["prune", "--before", "2026-01-05T10:04:00Z"])
        .args(["--batch-rows", "1"])
        .assert()
        .success();
}

#[test]
fn the_daily_rollup_stays_true_under_re_reads_and_prune() {
    let env = fixed();
    // What v_daily gave before the rollup: every event, grouped by its UTC day.
    let from_events = "SELECT group_concat(line, ' ') FROM (SELECT date(ts / 1000, 'unixepoch') \
        || '=' || count(*) || '/' || count(DISTINCT session_id) || '/' \
        || sum(hook_type = 'UserPromptSubmit') || '/' \
        || sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')) || '/' \
        || sum(hook_type = 'PostToolUseFailure') || '/' \
        || sum(hook_type IN ('Stop', 'SubagentStop') AND coalesce(synthetic, 0) = 0) AS line \
        FROM events GROUP BY date(ts / 1000, 'unixepoch') ORDER BY 1)";
    let rollup = "SELECT group_concat(line, ' ') FROM (SELECT day || '=' || events || '/' \
        || sessions || '/' || prompts || '/' || tool_uses || '/' || tool_failures || '/' \
        || stops AS line FROM v_daily ORDER BY day)";
    let text = |sql: &str| -> String {
        env.conn()
            .query_row(sql, [], |r| r.get::<_, String>(0))
            .unwrap()
    };
    let before = text(from_events);
    assert_eq!(text(rollup), before);
    assert_eq!(before, "2026-01-05=13/2/2/3/1/1 2026-01-06=8/1/1/3/0/1");
    // The queue read again from its start: nothing doubled.
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(text(rollup), before);
    // Prune in the middle of a day, in batches of one row: what is left, counted.
    prune_mid_day(&env);
    let after = text(from_events);
    assert_eq!(after, "2026-01-05=9/2/1/2/0/1 2026-01-06=8/1/1/3/0/1");
    assert_eq!(text(rollup), after);
    // A later line of a pruned day adds to what is left.
    let mut e = entry("UserPromptSubmit", "late");
    e.timestamp = T0 + 300 * MIN;
    env.append(&[e.to_line()]);
    env.ingest_once();
    assert_eq!(text(rollup), text(from_events));
    env.cmd()
        .args(["prune", "--before", "2026-01-07"])
        .assert()
        .success();
    assert_eq!(env.int("SELECT count(*) FROM hourly_sessions"), 0);
}

/// Migration 0031 on a store with events: the hours hold what the days held (each hour a
/// `GROUP BY` over its events), and the views read what they read before it.
#[test]
fn the_hourly_rollup_takes_the_days_figures_over() {
    let env = fixed();
    // Failures a PostToolUse line reports (Copilot CLI's result type, an exit code), in two
    // hours of one session, beside one that succeeded: the migration parses these lines.
    let mut lines = Vec::new();
    for (minute, failed) in [(10, Some("failure")), (70, None), (130, Some("failure"))] {
        let mut e = entry("PostToolUse", "copilot-1");
        e.timestamp = T0 + minute * MIN;
        e.tool_name = Some("bash".into());
        e.tool_result_type = failed.map(str::to_string);
        lines.push(e.to_line());
    }
    env.append(&lines);
    env.ingest_once();
    let text = |sql: &str| -> String {
        env.conn()
            .query_row(sql, [], |r| r.get::<_, String>(0))
            .unwrap()
    };
    let views = "SELECT json_group_array(json_array(day, events, sessions, prompts, tool_uses, \
        tool_failures, stops, estimated_tokens, responses, output_tokens, cost_usd, unpriced)) \
        FROM (SELECT * FROM v_daily_usage ORDER BY day)";
    let hours_from_events = "SELECT group_concat(line, ' ') FROM (SELECT (ts / 3600000) \
        || '=' || count(*) || '/' || sum(hook_type = 'UserPromptSubmit') || '/' \
        || sum(hook_type IN ('PostToolUse', 'PostToolUseFailure')) || '/' \
        || sum(hook_type = 'PostToolUseFailure' OR (hook_type = 'PostToolUse' \
               AND coalesce(entry ->> 'toolResultType' = 'failure', 0))) || '/' \
        || sum(hook_type IN ('Stop', 'SubagentStop') AND coalesce(synthetic, 0) = 0) AS line \
        FROM events GROUP BY ts / 3600000, session_id ORDER BY ts / 3600000, session_id)";
    let hours = "SELECT group_concat(line, ' ') FROM (SELECT hour_n || '=' || events || '/' \
        || prompts || '/' || tool_uses || '/' || tool_failures || '/' || stops AS line \
        FROM hourly_sessions ORDER BY hour_n, no_session DESC, session_id)";
    let latest = text(views);
    assert!(
        latest.contains("2026-01-05") && latest.contains("2026-01-06"),
        "{latest}"
    );
    assert_eq!(text(hours), text(hours_from_events));

    back_to_0030(&env.rw());
    assert_eq!(text(views), latest, "the days at 0030");
    env.ingest_once();
    assert_eq!(env.int("PRAGMA user_version"), 40);
    assert_eq!(
        env.int("SELECT count(*) FROM sqlite_master WHERE name = 'daily_sessions'"),
        0
    );
    assert_eq!(text(views), latest);
    assert_eq!(text(hours), text(hours_from_events));
    assert_eq!(
        env.int("SELECT sum(tool_failures) FROM hourly_sessions WHERE session_id = 'copilot-1'"),
        2
    );
}

#[test]
fn real_transcripts_summarize_readably() {
    let Some(real) = crate::common::real_fixtures() else {
        return;
    };
    let env = TestEnv::new();
    let dir = env.dir.path().join("transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(real.join("claude-code")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    env.cmd().arg("import").arg(&dir).assert().success();
    for by in ["session", "day", "model"] {
        let table = at_100(&env, &["summarize", "--by", by, "--format", "table"]);
        insta::assert_snapshot!(format!("summarize_real_{by}_table"), table);
    }
}

/// The usage views (over the rollup of migration 0018) against the same sums over every
/// response: per session, day, model and agent, tokens, cost and unpriced. The cost to a
/// hundredth of a cent: summed per group rather than per response, the sixth decimal can
/// differ.
fn usage_views_match_the_responses(env: &TestEnv) {
    let text = |sql: &str| -> String {
        env.conn()
            .query_row(
                &format!("SELECT group_concat(line, ' ') FROM ({sql})"),
                [],
                |r| r.get::<_, Option<String>>(0),
            )
            .unwrap()
            .unwrap_or_default()
    };
    for key in [
        "session_id",
        "day",
        "coalesce(model, '?')",
        "coalesce(agent, '?')",
    ] {
        let view = match key {
            "session_id" => "v_usage_sessions",
            "day" => "v_usage_daily",
            "coalesce(model, '?')" => "v_usage_models",
            _ => "v_usage_agents",
        };
        let column = match view {
            "v_usage_models" => "model",
            "v_usage_agents" => "agent",
            _ => key,
        };
        let figures = "responses || '/' || input_tokens || '/' || output_tokens || '/' \
            || cache_write_tokens || '/' || cache_read_tokens || '/' \
            || coalesce(printf('%.4f', cost_usd), 'null') || '/' || unpriced";
        let raw = text(&format!(
            "SELECT k || '=' || {figures} AS line FROM (SELECT {key} AS k, count(*) AS responses, \
             CAST(total(input_tokens) AS INTEGER) AS input_tokens, \
             CAST(total(output_tokens) AS INTEGER) AS output_tokens, \
             CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens, \
             CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens, \
             round(sum(cost_usd), 6) AS cost_usd, sum(cost_usd IS NULL) AS unpriced \
             FROM v_usage GROUP BY {key}) ORDER BY 1"
        ));
        let rolled = text(&format!(
            "SELECT {column} || '=' || {figures} AS line FROM {view} ORDER BY 1"
        ));
        assert!(!raw.is_empty(), "{view}");
        assert_eq!(rolled, raw, "{view}");
    }
    // The hourly rollup (0020): the sums of the responses with a time, per UTC hour, session,
    // agent and model.
    let sums = "count(*) || '/' || sum(input_tokens) || '/' || sum(output_tokens) || '/' \
        || sum(cache_write_tokens) || '/' || sum(coalesce(cache_write_1h_tokens, 0)) || '/' \
        || sum(cache_read_tokens)";
    let raw = text(&format!(
        "SELECT k || '=' || s AS line FROM (SELECT \
         ((ts / 1000 - ((ts / 1000) % 3600 + 3600) % 3600) / 3600) || ' ' \
         || coalesce(session_id, '') || ' ' || coalesce(agent, '') || ' ' \
         || coalesce(model, '') AS k, {sums} AS s \
         FROM usage WHERE ts IS NOT NULL GROUP BY k) ORDER BY 1"
    ));
    let rolled = text(
        "SELECT hour_n || ' ' || session_id || ' ' || agent || ' ' || model || '=' || responses \
         || '/' || input_tokens || '/' || output_tokens || '/' || cache_write_tokens || '/' \
         || cache_write_1h_tokens || '/' || cache_read_tokens AS line \
         FROM usage_hourly ORDER BY 1",
    );
    assert!(!raw.is_empty());
    assert_eq!(rolled, raw, "usage_hourly");
}

#[test]
fn the_usage_rollup_stays_true_when_responses_are_read_again() {
    let env = fixed();
    usage_views_match_the_responses(&env);
    // The same responses again, with a larger count on a later line (streamed counts only
    // grow): the larger count wins, in the rollup too (the upsert's update moves the old
    // figures out).
    let mut again = entry("Stop", "aaaaaaaa-1111-4000-8000-000000000001");
    again.timestamp = T0 + 24 * 60 * MIN;
    let mut later = usage("m1", "claude-sonnet-4-5", 1_300_007);
    later.offset = 99;
    again.usage = Some(vec![later, usage("m9", "claude-haiku-4-5", 5)]);
    env.append(&[again.to_line()]);
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(
        env.int("SELECT output_tokens FROM usage WHERE message_id = 'm1'"),
        1_300_007
    );
    usage_views_match_the_responses(&env);
}

#[test]
fn the_usage_rollup_of_real_transcripts_equals_their_responses() {
    let Some(real) = crate::common::real_fixtures() else {
        return;
    };
    let env = TestEnv::new();
    let dir = env.dir.path().join("transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(real.join("claude-code")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    env.cmd().arg("import").arg(&dir).assert().success();
    usage_views_match_the_responses(&env);
}

/// A store whose responses sit at the edges of UTC days and hours: five days from
/// 2026-01-05, each with a response at its midnight, a millisecond after, a millisecond before
/// 06:00, at 06:00, at 06:30, at noon and a millisecond before the next midnight, of two
/// sessions (two agents) and two models, one without a price; and one response without a time.
pub(crate) fn responses_at_day_edges() -> TestEnv {
    let env = TestEnv::new();
    write_responses_at_day_edges(&env);
    env
}

/// Ingests the responses of [`responses_at_day_edges`] into `env`.
fn write_responses_at_day_edges(env: &TestEnv) {
    let day0 = 1_767_571_200_000; // 2026-01-05T00:00:00Z
    let day = 86_400_000;
    let mut lines = Vec::new();
    let mut n = 0;
    for d in 0..5 {
        for offset in [
            0,
            1,
            6 * HOUR - 1,
            6 * HOUR,
            6 * HOUR + HOUR / 2,
            day / 2,
            day - 1,
        ] {
            n += 1;
            let ts = day0 + d * day + offset;
            let session = if n % 3 == 0 { "s-b" } else { "s-a" };
            let model = if n % 2 == 0 {
                "claude-sonnet-4-5"
            } else {
                "unpriced-model"
            };
            let mut e = entry("Stop", session);
            e.timestamp = ts;
            e.agent = Some(if session == "s-b" { "codex" } else { "claude" }.into());
            let mut u = usage(&format!("r{n}"), model, 100 * n);
            u.ts = Some(ts);
            u.cache_write_1h = Some(n % 4 * 100);
            e.usage = Some(vec![u]);
            lines.push(e.to_line());
        }
    }
    let mut e = entry("Stop", "s-a");
    e.timestamp = day0;
    e.usage = Some(vec![usage("no-time", "claude-sonnet-4-5", 1)]);
    lines.push(e.to_line());
    env.append(&lines);
    env.ingest_once();
    env.rw()
        .execute(
            "UPDATE usage SET ts = NULL WHERE message_id = 'no-time'",
            [],
        )
        .unwrap();
}

/// Windows of `--by model` over the responses of [`responses_at_day_edges`], cutting days
/// and hours every way.
const WINDOWS: &[(Option<&str>, Option<&str>)] = &[
    // Partial edge days around whole ones.
    (Some("2026-01-05T12:00:00Z"), Some("2026-01-08T12:00:00Z")),
    // Whole days: both edges at midnight.
    (Some("2026-01-06"), Some("2026-01-08")),
    // Midnight to a millisecond before or after one.
    (Some("2026-01-06"), Some("2026-01-07T23:59:59.999Z")),
    (
        Some("2026-01-05T00:00:00.001Z"),
        Some("2026-01-08T00:00:00.001Z"),
    ),
    // Adjacent days, no whole one between them.
    (
        Some("2026-01-06T23:59:59.999Z"),
        Some("2026-01-07T00:00:00.001Z"),
    ),
    // Inside one day: partial, from its midnight, to the next midnight, the whole day.
    (
        Some("2026-01-07T00:00:00.001Z"),
        Some("2026-01-07T23:59:59.999Z"),
    ),
    (Some("2026-01-07"), Some("2026-01-07T12:00:00Z")),
    (Some("2026-01-07T12:00:00Z"), Some("2026-01-08")),
    (Some("2026-01-07"), Some("2026-01-08")),
    // Cutting hours: minutes on both edges, across days and inside one.
    (Some("2026-01-05T06:30:00Z"), Some("2026-01-08T06:15:00Z")),
    (Some("2026-01-05T05:59:00Z"), Some("2026-01-07T06:31:00Z")),
    (Some("2026-01-06T06:00:00Z"), Some("2026-01-07T06:00:00Z")),
    (
        Some("2026-01-06T06:00:00.001Z"),
        Some("2026-01-07T05:59:59.999Z"),
    ),
    (Some("2026-01-07T05:30:00Z"), Some("2026-01-07T06:30:00Z")),
    (
        Some("2026-01-07T05:59:59.999Z"),
        Some("2026-01-07T06:00:00.001Z"),
    ),
    (Some("2026-01-07T06:00:00Z"), Some("2026-01-07T07:00:00Z")),
    (
        Some("2026-01-07T01:10:00Z"),
        Some("2026-01-07T12:00:00.001Z"),
    ),
    // Empty: a millisecond-wide window on nothing, and an until before since.
    (
        Some("2026-01-07T06:00:00.001Z"),
        Some("2026-01-07T06:00:00.002Z"),
    ),
    (Some("2026-01-08"), Some("2026-01-06")),
    // One side only.
    (Some("2026-01-07T12:00:00Z"), None),
    (Some("2026-01-07"), None),
    (Some("2026-01-07T06:20:00Z"), None),
    (None, Some("2026-01-07T12:00:00Z")),
    (None, Some("2026-01-07")),
    (None, Some("2026-01-07T06:00:00.001Z")),
    // Beyond every response.
    (Some("2020-01-01"), Some("2030-01-01")),
];

/// Takes a store at the latest migration back to what 0023 left: no `turns.feedback`, the
/// schema version 23.
pub(crate) fn back_to_0023(conn: &rusqlite::Connection) {
    back_to_0024(conn);
    conn.execute_batch("ALTER TABLE turns DROP COLUMN feedback; PRAGMA user_version = 23;")
        .unwrap();
}

/// Takes a store at the latest migration back to what 0038 left: no agents' own totals
/// (0039).
pub(crate) fn back_to_0038(conn: &rusqlite::Connection) {
    conn.execute_batch(
        "DROP VIEW v_usage_check; DROP TABLE agent_totals; PRAGMA user_version = 38;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0036 left: no record of the files an
/// import read (0037), no index of the transcript items by time (0038).
pub(crate) fn back_to_0036(conn: &rusqlite::Connection) {
    back_to_0038(conn);
    conn.execute_batch(
        "DROP INDEX transcript_items_ts; DROP TABLE imported_files; PRAGMA user_version = 36;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0035 left: no imported turns, no
/// transcript item's input, end or outcome, the coverage of tool calls only (0036).
pub(crate) fn back_to_0035(conn: &rusqlite::Connection) {
    back_to_0036(conn);
    let m0033 = include_str!("../../migrations/0033_transcript_items.sql");
    let view = &m0033[m0033.find("CREATE VIEW v_coverage").unwrap()..];
    conn.execute_batch(&format!(
        "DROP VIEW v_coverage;
         {view}
         ALTER TABLE transcript_items DROP COLUMN input;
         ALTER TABLE transcript_items DROP COLUMN end_ts;
         ALTER TABLE transcript_items DROP COLUMN outcome;
         DROP INDEX turns_imported;
         ALTER TABLE turns DROP COLUMN imported;
         PRAGMA user_version = 35;"
    ))
    .unwrap();
}

/// Takes a store at the latest migration back to what 0034 left: the chain over `events` only
/// (no records of the tables chained by key, nothing asked or noted of them in `meta`).
pub(crate) fn back_to_0034(conn: &rusqlite::Connection) {
    back_to_0035(conn);
    conn.execute_batch(
        "DELETE FROM chain WHERE kind IN ('usage', 'otel_logs', 'otel_metrics');
         DELETE FROM meta WHERE key IN ('chain_keyed_adopt', 'chain_keyed_since');
         PRAGMA user_version = 34;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0033 left: no premium requests (0034).
pub(crate) fn back_to_0033(conn: &rusqlite::Connection) {
    back_to_0034(conn);
    conn.execute_batch(
        "DROP VIEW v_premium_requests;
         DROP INDEX usage_premium;
         ALTER TABLE usage DROP COLUMN premium_requests;
         PRAGMA user_version = 33;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0032 left: no transcript items (0033).
pub(crate) fn back_to_0032(conn: &rusqlite::Connection) {
    back_to_0033(conn);
    conn.execute_batch(
        "DROP VIEW v_coverage;
         DROP TABLE transcript_items;
         PRAGMA user_version = 32;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0031 left: no push tables (0032).
pub(crate) fn back_to_0031(conn: &rusqlite::Connection) {
    back_to_0032(conn);
    let m0015 = include_str!("../../migrations/0015_otlp_export_and_receiver.sql");
    let at = m0015
        .find("CREATE TRIGGER export_cursors_follow_pruned_top")
        .unwrap();
    let trigger = &m0015[at..at + m0015[at..].find("END;").unwrap() + "END;".len()];
    conn.execute_batch(&format!(
        "DROP TRIGGER cursors_follow_pruned_top;
         {trigger}
         DROP TABLE push_sessions;
         DROP TABLE push_cursors;
         DROP TABLE push_machine;
         PRAGMA user_version = 31;"
    ))
    .unwrap();
}

/// Takes a store at the latest migration back to what 0030 left: the events' rollup per UTC
/// day (`daily_sessions` as 0016 made it, its rows summed from the hours), `v_daily` and
/// `v_daily_usage` as 0016 and 0023 made them, the schema version 30.
pub(crate) fn back_to_0030(conn: &rusqlite::Connection) {
    back_to_0031(conn);
    let m0016 = include_str!("../../migrations/0016_daily_rollup.sql");
    let section = |from: &str| {
        let at = m0016.find(from).unwrap();
        &m0016[at..=at + m0016[at..].find(';').unwrap()]
    };
    conn.execute_batch(&format!(
        "DROP VIEW v_daily;
         {}
         {}
         INSERT INTO daily_sessions SELECT hour_n / 24, no_session, session_id, sum(events),
           sum(prompts), sum(tool_uses), sum(tool_failures), sum(stops), sum(estimated_tokens)
         FROM hourly_sessions GROUP BY 1, 2, 3;
         DROP TABLE hourly_sessions;
         {}",
        section("CREATE TABLE daily_sessions"),
        section("CREATE INDEX daily_sessions_session"),
        section("CREATE VIEW v_daily AS"),
    ))
    .unwrap();
    conn.execute_batch(include_str!(
        "../../migrations/0023_daily_sessions_with_usage.sql"
    ))
    .unwrap();
    conn.execute_batch("PRAGMA user_version = 30;").unwrap();
}

/// Takes a store at the latest migration back to what 0029 left: no
/// `tool_calls.permission_mode`, the view and `tool_calls_session_id` as 0028 and 0019 made
/// them, the schema version 29.
pub(crate) fn back_to_0029(conn: &rusqlite::Connection) {
    back_to_0030(conn);
    let m0028 = include_str!("../../migrations/0028_tool_call_decisions.sql");
    let view = &m0028[..m0028.find("\n-- The calls the gate flagged").unwrap()];
    let m0019 = include_str!("../../migrations/0019_story_calls.sql");
    let at = m0019.find("CREATE INDEX tool_calls_session_id").unwrap();
    let index = &m0019[at..at + m0019[at..].find(';').unwrap()];
    conn.execute_batch(
        "DROP VIEW v_tool_call_decisions;
         DROP INDEX tool_calls_session_id;
         ALTER TABLE tool_calls DROP COLUMN permission_mode;",
    )
    .unwrap();
    conn.execute_batch(index).unwrap();
    conn.execute_batch(view).unwrap();
    conn.execute_batch("PRAGMA user_version = 29;").unwrap();
}

/// Takes a store at the latest migration back to what 0028 left: no `chain`, the schema
/// version 28.
pub(crate) fn back_to_0028(conn: &rusqlite::Connection) {
    back_to_0029(conn);
    conn.execute_batch("DROP TABLE chain; PRAGMA user_version = 28;")
        .unwrap();
}

/// Takes a store at the latest migration back to what 0027 left: no
/// `v_tool_call_decisions` and its index, the schema version 27.
pub(crate) fn back_to_0027(conn: &rusqlite::Connection) {
    back_to_0028(conn);
    conn.execute_batch(
        "DROP VIEW v_tool_call_decisions;
         DROP INDEX tool_calls_flagged_pre;
         PRAGMA user_version = 27;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0026 left: no `tool_calls.ts`, and
/// `tool_calls_ts` on the expression (as 0005 made it), the schema version 26.
pub(crate) fn back_to_0026(conn: &rusqlite::Connection) {
    back_to_0027(conn);
    conn.execute_batch(
        "DROP INDEX tool_calls_ts;
         ALTER TABLE tool_calls DROP COLUMN ts;
         CREATE INDEX tool_calls_ts ON tool_calls(coalesce(start_ts, end_ts));
         PRAGMA user_version = 26;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0025 left: no `usage.reasoning_tokens`,
/// the schema version 25.
pub(crate) fn back_to_0025(conn: &rusqlite::Connection) {
    back_to_0026(conn);
    conn.execute_batch("ALTER TABLE usage DROP COLUMN reasoning_tokens; PRAGMA user_version = 25;")
        .unwrap();
}

/// Takes a store at the latest migration back to what 0024 left: `events_session_id` and
/// `events_story` (as 0001 and 0019 made them) in place of `events_session`, the schema
/// version 24.
pub(crate) fn back_to_0024(conn: &rusqlite::Connection) {
    back_to_0025(conn);
    let made_by_0019 = include_str!("../../migrations/0019_story_calls.sql");
    let start = made_by_0019.find("CREATE INDEX events_story").unwrap();
    let end = start + made_by_0019[start..].find(';').unwrap() + 1;
    conn.execute_batch(&format!(
        "DROP INDEX events_session;
         CREATE INDEX events_session_id ON events(session_id);
         {}
         PRAGMA user_version = 24;",
        &made_by_0019[start..end]
    ))
    .unwrap();
}

/// Takes a store at the latest migration back to what 0022 left: `v_daily_usage` as 0014
/// made it (a day's sessions those of its hooks), the schema version 22.
pub(crate) fn back_to_0022(conn: &rusqlite::Connection) {
    back_to_0023(conn);
    let made_by_0014 = include_str!("../../migrations/0014_usage.sql");
    let start = made_by_0014.find("CREATE VIEW v_daily_usage").unwrap();
    let end = start + made_by_0014[start..].find(';').unwrap() + 1;
    conn.execute_batch(&format!(
        "DROP VIEW v_daily_usage; {} PRAGMA user_version = 22;",
        &made_by_0014[start..end]
    ))
    .unwrap();
}

/// Takes a store at the latest migration back to what 0020 left: `usage_session` on the
/// session alone (as 0014 made it), the schema version 20.
pub(crate) fn back_to_0020(conn: &rusqlite::Connection) {
    back_to_0022(conn);
    conn.execute_batch(
        "DROP INDEX usage_session;
         CREATE INDEX usage_session ON usage(session_id);
         PRAGMA user_version = 20;",
    )
    .unwrap();
}

/// Takes a store at the latest migration back to what 0019 left: 0021 undone, the hourly
/// usage, its view and its triggers out, the schema version 19 (the responses stay, for 0020
/// to backfill from).
pub(crate) fn back_to_0019(conn: &rusqlite::Connection) {
    back_to_0020(conn);
    conn.execute_batch(
        "DROP VIEW v_usage_hourly;
         DROP TRIGGER usage_hourly_insert;
         DROP TRIGGER usage_hourly_update;
         DROP TRIGGER usage_hourly_delete;
         DROP TABLE usage_hourly;
         PRAGMA user_version = 19;",
    )
    .unwrap();
}

#[test]
fn a_store_migrated_from_0019_reports_what_one_built_at_0020_reports() {
    let fresh = responses_at_day_edges();
    let old = responses_at_day_edges();
    back_to_0019(&old.rw());
    let made = tempfile::tempdir().unwrap();
    let path = made.path().join("0019.db");
    let mut at_0019 = rusqlite::Connection::open(&path).unwrap();
    cmstore::store::migrate(&mut at_0019, &path, 19).unwrap();
    assert_eq!(
        crate::show::schema(&old.conn()),
        crate::show::schema(&at_0019),
        "a store as 0019 left it"
    );
    // An ingest with nothing to read migrates it.
    old.ingest_once();
    assert_eq!(
        crate::show::schema(&old.conn()),
        crate::show::schema(&fresh.conn())
    );
    // Each hour's key and sums (its `first_ts` and `last_ts` bound its responses: as in the
    // daily rollup, they stay when a response leaves the hour, as the one without a time did).
    let hourly = |env: &TestEnv| -> Vec<String> {
        let conn = env.conn();
        let mut stmt = conn
            .prepare("SELECT * FROM usage_hourly ORDER BY hour_n, session_id, agent, model")
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                (0..10)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map(|v| v.join(" "))
            })
            .unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    let rows = hourly(&fresh);
    assert_eq!(hourly(&old), rows);
    assert_eq!(
        rows.len(),
        35,
        "a row per hour, session and model: {rows:#?}"
    );
    let mut reports: Vec<Vec<&str>> = ["session", "tool", "day", "agent", "model"]
        .iter()
        .map(|by| vec!["summarize", "--by", by])
        .collect();
    for &(since, until) in WINDOWS {
        let mut args = vec!["summarize", "--by", "model"];
        args.extend(since.iter().flat_map(|s| ["--since", s]));
        args.extend(until.iter().flat_map(|u| ["--until", u]));
        reports.push(args);
    }
    for args in reports {
        assert_eq!(json(&old, &args), json(&fresh, &args), "{args:?}");
    }
}

#[test]
fn the_model_summary_of_a_window_equals_a_group_by_over_its_responses() {
    let env = responses_at_day_edges();
    // Premium requests (Copilot's) on some responses, as a fraction: not in any rollup.
    env.rw()
        .execute(
            "UPDATE usage SET premium_requests = 0.33 * (CAST(substr(message_id, 2) AS INTEGER) % 4) \
             WHERE CAST(substr(message_id, 2) AS INTEGER) % 5 IN (0, 2)",
            [],
        )
        .unwrap();
    let ms = |iso: &str| cmstore::support::timespec::parse_point(iso, 0).unwrap();
    // Each figure of `--by model`, as a line per model.
    let lines = |rows: &Value| -> Vec<String> {
        let rows = rows.as_array().unwrap();
        rows.iter()
            .map(|r| {
                let cost = r["cost_usd"].as_f64().map(|c| format!("{c:.6}"));
                format!(
                    "{} {} {} {} {} {} {} {:?} {} {} {} {}",
                    r["model"],
                    r["sessions"],
                    r["responses"],
                    r["input_tokens"],
                    r["output_tokens"],
                    r["cache_write_tokens"],
                    r["cache_read_tokens"],
                    cost,
                    r["unpriced"],
                    r["first_seen"],
                    r["last_seen"],
                    r["premium_requests"]
                )
            })
            .collect()
    };
    // The same from every response in the window, grouped.
    let direct = |since: Option<&str>, until: Option<&str>, agent: Option<&str>| -> Value {
        let mut wheres = vec!["1".to_string()];
        wheres.extend(since.map(|s| format!("ts >= {}", ms(s))));
        wheres.extend(until.map(|u| format!("ts < {}", ms(u))));
        wheres.extend(agent.map(|a| format!("agent = '{a}'")));
        let sql = format!(
            "SELECT json_group_array(json_object('model', model, 'sessions', sessions, \
             'responses', responses, 'input_tokens', input_tokens, \
             'output_tokens', output_tokens, 'cache_write_tokens', cache_write_tokens, \
             'cache_read_tokens', cache_read_tokens, 'cost_usd', cost_usd, \
             'unpriced', unpriced, 'first_seen', first_seen, 'last_seen', last_seen, \
             'premium_requests', premium_requests)) \
             FROM (SELECT coalesce(model, '?') AS model, count(DISTINCT session_id) AS sessions, \
             count(*) AS responses, CAST(total(input_tokens) AS INTEGER) AS input_tokens, \
             CAST(total(output_tokens) AS INTEGER) AS output_tokens, \
             CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens, \
             CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens, \
             round(sum(cost_usd), 6) AS cost_usd, sum(cost_usd IS NULL) AS unpriced, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(ts) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(ts) / 1000, 'unixepoch') AS last_seen, \
             round(sum(premium_requests), 4) AS premium_requests \
             FROM v_usage WHERE {} GROUP BY coalesce(model, '?') \
             ORDER BY cost_usd IS NULL, cost_usd DESC, model)",
            wheres.join(" AND ")
        );
        let text: String = env.conn().query_row(&sql, [], |r| r.get(0)).unwrap();
        serde_json::from_str(&text).unwrap()
    };
    let mut compared = 0;
    for &(since, until) in WINDOWS {
        for agent in [None, Some("codex")] {
            let mut args = vec!["summarize", "--by", "model"];
            args.extend(since.iter().flat_map(|s| ["--since", s]));
            args.extend(until.iter().flat_map(|u| ["--until", u]));
            args.extend(agent.iter().flat_map(|a| ["--agent", a]));
            let want = lines(&direct(since, until, agent));
            assert_eq!(lines(&json(&env, &args)), want, "{args:?}");
            compared += want.len();
        }
    }
    assert!(compared > 40, "the windows hold responses: {compared}");
    // Without a window: every response, premium requests by model.
    let all = json(&env, &["summarize", "--by", "model"]);
    assert_eq!(lines(&all), lines(&direct(None, None, None)));
    assert!(
        all.as_array().unwrap().iter().any(|r| r["premium_requests"]
            .as_f64()
            .is_some_and(|p| p.fract() != 0.0)),
        "{all:#}"
    );
}

/// With `--since`/`--until`, a session's (and an agent's) usage is that of its responses in
/// the window, not of its whole life (issue 35, item 7): equal to a `GROUP BY` over the
/// responses in the window, for every window of [`WINDOWS`].
#[test]
fn a_sessions_cost_in_a_window_counts_the_responses_in_the_window() {
    let env = responses_at_day_edges();
    let ms = |iso: &str| cmstore::support::timespec::parse_point(iso, 0).unwrap();
    let figures = [
        "responses",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "unpriced",
    ];
    // key → the figures and the cost to the sixth decimal, as a line.
    let line = |r: &Value, key: &str| -> (String, String) {
        let cost = r["cost_usd"].as_f64().map(|c| format!("{c:.6}"));
        let numbers: Vec<String> = figures.iter().map(|f| r[f].to_string()).collect();
        (
            r[key].as_str().unwrap_or("?").to_string(),
            format!("{} {cost:?}", numbers.join(" ")),
        )
    };
    let mut compared = 0;
    for &(since, until) in WINDOWS {
        let mut wheres = vec!["ts IS NOT NULL".to_string()];
        wheres.extend(since.map(|s| format!("ts >= {}", ms(s))));
        wheres.extend(until.map(|u| format!("ts < {}", ms(u))));
        for key in ["session_id", "agent"] {
            let sql = format!(
                "SELECT json_group_array(json_object('{key}', {key}, 'responses', n, \
                 'input_tokens', i, 'output_tokens', o, 'cache_read_tokens', r, \
                 'unpriced', u, 'cost_usd', c)) FROM (SELECT {key}, count(*) AS n, \
                 sum(input_tokens) AS i, sum(output_tokens) AS o, sum(cache_read_tokens) AS r, \
                 sum(cost_usd IS NULL) AS u, round(sum(cost_usd), 6) AS c \
                 FROM v_usage WHERE {} GROUP BY {key})",
                wheres.join(" AND ")
            );
            let text: String = env.conn().query_row(&sql, [], |r| r.get(0)).unwrap();
            let want: std::collections::BTreeMap<_, _> = serde_json::from_str::<Value>(&text)
                .unwrap()
                .as_array()
                .unwrap()
                .iter()
                .map(|r| line(r, key))
                .collect();
            let by = if key == "agent" { "agent" } else { "session" };
            let mut args = vec!["summarize", "--by", by];
            args.extend(since.iter().flat_map(|s| ["--since", s]));
            args.extend(until.iter().flat_map(|u| ["--until", u]));
            let got: std::collections::BTreeMap<_, _> = json(&env, &args)
                .as_array()
                .unwrap()
                .iter()
                .map(|r| line(r, key))
                // A session active in the window without a response in it has none.
                .filter(|(_, l)| !l.starts_with("0 "))
                .collect();
            assert_eq!(got, want, "{args:?}");
            compared += want.len();
        }
    }
    assert!(compared > 20, "the windows hold responses: {compared}");
}

/// A failed call that an agent reports on a `PostToolUse` line (Copilot CLI's result type, a
/// non-zero exit code, `toolFailed`) is a failure in `--by day` as in `--by session` and
/// `--by agent`; a prune takes it out of the day with its line; and a store whose rollup was
/// counted by 0016's rule is recounted by 0022.
#[test]
fn a_failure_on_a_post_tool_use_line_counts_in_every_report() {
    let env = TestEnv::new();
    let post = |minute: i64, call: &str, f: &dyn Fn(&mut QueueEntry)| {
        let mut e = entry("PostToolUse", "c");
        e.agent = Some("copilot".into());
        e.timestamp = T0 + minute * MIN;
        e.tool_name = Some("bash".into());
        e.tool_call_id = Some(call.into());
        f(&mut e);
        e.to_line()
    };
    let lines = vec![
        post(1, "c1", &|e| e.tool_result_type = Some("failure".into())),
        post(3, "c2", &|e| e.exit_code = Some(3)),
        post(5, "c3", &|e| e.tool_failed = Some(true)),
        post(6, "c4", &|e| e.exit_code = Some(0)),
        post(7, "c5", &|e| e.hook_type = "PostToolUseFailure".into()),
    ];
    env.append(&lines);
    env.ingest_once();
    let failures = |by: &str| -> Vec<i64> {
        let rows = json(&env, &["summarize", "--by", by]);
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| r["tool_failures"].as_i64().unwrap())
            .collect()
    };
    // Counted from the lines as written, independently of cmstore's rule.
    let from_events = "SELECT count(*) FROM events WHERE hook_type = 'PostToolUseFailure' \
        OR tool_result_type = 'failure' OR json_extract(entry, '$.exitCode') <> 0 \
        OR json_extract(entry, '$.toolFailed') = 1";
    assert_eq!(env.int(from_events), 4);
    assert_eq!(failures("day"), [4]);
    assert_eq!(failures("session"), [4]);
    assert_eq!(failures("agent"), [4]);

    prune_mid_day(&env);
    assert_eq!(env.int(from_events), 2);
    assert_eq!(failures("day"), [2]);

    // As 0016 counted it (PostToolUseFailure lines only), at schema 21: recounted.
    let conn = env.rw();
    back_to_0023(&conn);
    conn.execute_batch("UPDATE daily_sessions SET tool_failures = 1; PRAGMA user_version = 21;")
        .unwrap();
    drop(conn);
    let rollup = "SELECT sum(tool_failures) FROM daily_sessions";
    assert_eq!(env.int(rollup), 1, "the old count, before the migration");
    env.ingest_once();
    // 0022 recounted the days, and 0031 the hours from the events.
    assert_eq!(env.int("SELECT sum(tool_failures) FROM hourly_sessions"), 2);
    assert_eq!(failures("day"), [2]);
}

/// A day's `sessions` counts the sessions seen that day by their hooks or their responses,
/// each once: usage backfilled by `import` (no hook ever fired) counts its sessions too.
#[test]
fn a_day_counts_the_sessions_of_its_responses_as_well_as_of_its_hooks() {
    let env = TestEnv::new();
    let march_1 = 1_772_359_200_000; // 2026-03-01T10:00:00Z
    let day = 86_400_000;
    let response = |session: &str, id: &str, at: i64| {
        let ts = chrono::DateTime::from_timestamp_millis(at)
            .unwrap()
            .to_rfc3339();
        crate::common::response_line(session, id, &ts)
    };
    crate::common::import_lines(
        &env,
        "imported.jsonl",
        &[
            response("imp-1", "m1", march_1),
            response("imp-1", "m2", march_1 + day),
            response("imp-2", "m3", march_1 + day),
        ],
    );
    // imp-1 also fired a hook on March 1st, h-3 only fired hooks.
    env.append(&[
        at("UserPromptSubmit", "imp-1", march_1 + 1000, |e| {
            e.agent = Some("claude".into())
        }),
        at("UserPromptSubmit", "h-3", march_1 + 2000, |e| {
            e.agent = Some("claude".into())
        }),
    ]);
    env.ingest_once();
    let days = |extra: &[&str]| -> Vec<(String, i64, i64)> {
        let mut args = vec!["summarize", "--by", "day", "--since", "2026-01-01"];
        args.extend_from_slice(extra);
        json(&env, &args)
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let n = |k: &str| d[k].as_i64().unwrap();
                (
                    d["day"].as_str().unwrap().to_string(),
                    n("sessions"),
                    n("responses"),
                )
            })
            .collect()
    };
    let expected = vec![
        ("2026-03-01".to_string(), 2, 1),
        ("2026-03-02".to_string(), 2, 2),
    ];
    assert_eq!(days(&[]), expected);
    // The filtered statement counts the same way.
    assert_eq!(days(&["--agent", "claude"]), expected);
}

#[test]
fn limit_keeps_the_first_rows_and_says_so_on_stderr() {
    let env = seeded();
    let all = json(&env, &["summarize"]).as_array().unwrap().len();
    assert!(all >= 3, "{all}");
    let out = env
        .cmd()
        .args(["summarize", "--format", "json", "--limit", "2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first_two: Vec<Value> = json(&env, &["summarize"]).as_array().unwrap()[..2].to_vec();
    assert_eq!(rows.as_array().unwrap(), &first_two);
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        format!("cmstore: 2 of {all} rows shown (--limit 2)\n")
    );
    // A limit above the count cuts nothing and says nothing.
    let out = env
        .cmd()
        .args(["summarize", "--format", "json", "--limit", "999"])
        .output()
        .unwrap();
    assert!(out.stderr.is_empty());
}
