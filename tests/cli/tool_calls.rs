//! Tool calls: one `tool_calls` row per call, whatever the agent's payloads carry, with a true
//! duration and an outcome, and the figures of `v_tools`, `v_session_tools` and `summarize`
//! that follow from them.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::common::{capture, entry, real_fixtures, TestEnv};
use cmstore::model::queue_line::QueueEntry;

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

fn json_out(env: &TestEnv, args: &[&str]) -> Value {
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

/// The `summarize --by tool` row of `tool`.
fn tool_summary(env: &TestEnv, tool: &str) -> Value {
    let all = json_out(env, &["summarize", "--by", "tool"]);
    all.as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool_name"] == tool)
        .cloned()
        .unwrap_or_else(|| panic!("no {tool} in {all}"))
}

/// A Copilot CLI camelCase payload (no event name, no tool call id, `toolArgs` a JSON string).
fn copilot(session: &str, tool: &str, args: Value, result: Option<&str>) -> String {
    let mut p = json!({
        "timestamp": 1_704_614_600_000_i64,
        "cwd": "/p",
        "sessionId": session,
        "toolName": tool,
        "toolArgs": args.to_string(),
    });
    if let Some(kind) = result {
        p["toolResult"] = json!({"resultType": kind, "textResultForLlm": "done"});
    }
    p.to_string()
}

fn copilot_hook(env: &TestEnv, event: &str, payload: &str) {
    capture(env, payload, &["--agent", "copilot", "--event", event]);
}

#[test]
fn copilot_cli_calls_without_ids_pair_by_session_order_tool_and_input() {
    let env = TestEnv::new();
    let ls = json!({"command": "ls", "description": "list"});
    let (a, b) = (json!({"path": "/p/a.rs"}), json!({"path": "/p/b.rs"}));
    // One plain call; two calls of the same tool in parallel whose results come back in the
    // other order; the same command started in another session, still running.
    copilot_hook(
        &env,
        "preToolUse",
        &copilot("cp1", "bash", ls.clone(), None),
    );
    copilot_hook(
        &env,
        "preToolUse",
        &copilot("cp2", "bash", ls.clone(), None),
    );
    copilot_hook(
        &env,
        "postToolUse",
        &copilot("cp1", "bash", ls.clone(), Some("success")),
    );
    copilot_hook(&env, "preToolUse", &copilot("cp1", "view", a.clone(), None));
    copilot_hook(&env, "preToolUse", &copilot("cp1", "view", b.clone(), None));
    copilot_hook(
        &env,
        "postToolUse",
        &copilot("cp1", "view", b, Some("success")),
    );
    copilot_hook(
        &env,
        "postToolUse",
        &copilot("cp1", "view", a, Some("success")),
    );
    env.ingest_once();

    assert_eq!(
        env.int("SELECT count(*) FROM tool_calls"),
        4,
        "one row per call: {:?}",
        rows(&env, "SELECT * FROM tool_calls")
    );
    let bash = tool_summary(&env, "bash");
    assert_eq!(
        (
            &bash["calls"],
            &bash["succeeded"],
            &bash["failed"],
            &bash["unfinished"]
        ),
        (&json!(2), &json!(1), &json!(0), &json!(1)),
        "{bash}"
    );
    let view = tool_summary(&env, "view");
    assert_eq!(
        (&view["calls"], &view["succeeded"], &view["unfinished"]),
        (&json!(2), &json!(2), &json!(0)),
        "{view}"
    );
    // Each Post found the Pre of its own session and, among parallel calls, of its input.
    assert_eq!(
        rows(
            &env,
            "SELECT c.session_id, c.tool_name, json_extract(p.entry, '$.toolInput') =
                    json_extract(q.entry, '$.toolInput'), c.duration_ms >= 0, c.success
             FROM tool_calls c JOIN events p ON p.id = c.pre_event_id
             JOIN events q ON q.id = c.post_event_id ORDER BY c.rowid"
        ),
        ["cp1|bash|1|1|1", "cp1|view|1|1|1", "cp1|view|1|1|1"]
    );
    assert_eq!(
        rows(
            &env,
            "SELECT session_id, start_ts IS NOT NULL, end_ts FROM tool_calls
             WHERE post_event_id IS NULL"
        ),
        ["cp2|1|-"]
    );

    // The shell-commands recipe sees the call's outcome.
    let recipe =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/queries/shell_commands.sql");
    let out = env
        .cmd()
        .args(["query", "--format", "json", "--file"])
        .arg(&recipe)
        .output()
        .unwrap();
    assert!(out.status.success());
    let shell: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let outcomes: Vec<(&str, &str)> = shell
        .iter()
        .map(|r| {
            (
                r["session_id"].as_str().unwrap(),
                r["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(outcomes, [("cp2", "unfinished"), ("cp1", "ok")]);
}

#[test]
fn real_copilot_post_tool_use_payloads_pair_with_their_pre_tool_use() {
    let Some(real) = real_fixtures() else { return };
    let text =
        std::fs::read_to_string(real.join("copilot-cli/hook-post-tool-use.embedded-samples.jsonl"))
            .unwrap();
    let env = TestEnv::new();
    let posts: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // preToolUse carries the same fields as postToolUse, less the result.
    for post in &posts {
        let mut pre = post.clone();
        pre.as_object_mut().unwrap().remove("toolResult");
        copilot_hook(&env, "preToolUse", &pre.to_string());
    }
    for post in &posts {
        copilot_hook(&env, "postToolUse", &post.to_string());
    }
    env.ingest_once();
    assert_eq!(
        rows(
            &env,
            "SELECT tool_name, start_ts IS NOT NULL, end_ts IS NOT NULL, success
             FROM tool_calls ORDER BY tool_name"
        ),
        ["report_intent|1|1|1", "skill|1|1|1"]
    );
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

/// Every call has a time, `ts` (migration 0027): its start, else its end. A failure whose
/// PreToolUse was never seen counts in "the failed calls since" asked of `ts`, through its index.
#[test]
fn every_call_has_a_time_its_start_else_its_end() {
    let lines = [
        half("PreToolUse", "s1", 1_000, |e| {
            e.tool_call_id = Some("a".into())
        }),
        half("PostToolUse", "s1", 1_300, |e| {
            e.tool_call_id = Some("a".into())
        }),
        half("PostToolUseFailure", "s1", 2_000, |e| {
            e.tool_call_id = Some("only-its-end".into())
        }),
    ];
    let env = TestEnv::new();
    env.append(&lines);
    env.ingest_once();
    assert_eq!(
        rows(
            &env,
            "SELECT tool_call_id, start_ts, end_ts, ts FROM tool_calls ORDER BY ts"
        ),
        ["a|1000|1300|1000", "only-its-end|-|2000|2000"]
    );
    let failed_since = "SELECT count(*) FROM tool_calls WHERE outcome = 'failed' AND ts >= 1500";
    assert_eq!(rows(&env, failed_since), ["1"]);
    let plan = rows(&env, &format!("EXPLAIN QUERY PLAN {failed_since}"));
    assert!(
        plan.iter().any(|p| p.contains("USING INDEX tool_calls_ts")),
        "{plan:?}"
    );
}

#[test]
fn no_tool_call_is_stored_with_a_negative_duration() {
    let id = |k: &str| {
        let k = k.to_string();
        move |e: &mut QueueEntry| e.tool_call_id = Some(k)
    };
    let lines = [
        // The Post read before its Pre, and the clocks disagree: 150 ms "before" it started.
        half("PostToolUse", "n1", 1_000, id("k1")),
        half("PreToolUse", "n1", 1_150, id("k1")),
        // The agent's own figure is taken over the timestamps.
        half("PostToolUse", "n1", 2_000, |e| {
            e.tool_call_id = Some("k2".into());
            e.duration_ms = Some(40);
        }),
        half("PreToolUse", "n1", 2_100, id("k2")),
        // A negative figure of the agent's own is dropped; the timestamps stand.
        half("PreToolUse", "n1", 3_000, id("k3")),
        half("PostToolUse", "n1", 3_070, |e| {
            e.tool_call_id = Some("k3".into());
            e.duration_ms = Some(-5);
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
            env.int("SELECT count(*) FROM tool_calls WHERE duration_ms < 0"),
            0,
            "batch size {batch}: {:?}",
            rows(&env, "SELECT call_key, duration_ms FROM tool_calls")
        );
        assert_eq!(
            rows(
                &env,
                "SELECT call_key, duration_ms FROM tool_calls ORDER BY call_key"
            ),
            ["k1|-", "k2|40", "k3|70"]
        );
        assert_eq!(
            rows(&env, "SELECT calls, total_ms, avg_ms, max_ms FROM v_tools"),
            ["3|110|55|70"]
        );
        // Both dropped figures are on record.
        assert_eq!(
            rows(
                &env,
                "SELECT session_id, reason, count FROM unknown_counts
                 WHERE reason LIKE '%duration%'"
            ),
            ["n1|negative_tool_duration|2"]
        );
    }
}

#[test]
fn claude_code_s_own_duration_is_the_one_stored() {
    let Some(real) = real_fixtures() else { return };
    let dir = real.join("claude-code/hooks-hockey");
    let read = |name: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(name))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    };
    let env = TestEnv::new();
    let posts = read("post_tool_use.jsonl");
    for line in read("pre_tool_use.jsonl").iter().chain(&posts) {
        capture(&env, line.as_bytes(), &["--agent", "claude"]);
    }
    // Capture hands the payload's duration_ms on as the line's durationMs.
    let queue = env.queue_lines();
    let mut reported = 0;
    for post in &posts {
        // A few lines hold lone UTF-16 surrogates (capture repairs them; serde_json does not).
        let Ok(p) = serde_json::from_str::<Value>(post) else {
            continue;
        };
        let line = queue
            .iter()
            .find(|l| l["hookType"] == "PostToolUse" && l["toolCallId"] == p["tool_use_id"])
            .unwrap();
        assert_eq!(line["durationMs"], p["duration_ms"], "{line}");
        reported += usize::from(p["duration_ms"].is_i64());
    }
    assert!(reported >= 10);
    env.ingest_once();
    // Every paired call with a figure of Claude's own has exactly it (capture's clock would
    // say a few milliseconds).
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT c.duration_ms, json_extract(q.entry, '$.durationMs') FROM tool_calls c
             JOIN events q ON q.id = c.post_event_id
             WHERE c.pre_event_id IS NOT NULL AND json_extract(q.entry, '$.durationMs') IS NOT NULL",
        )
        .unwrap();
    let pairs: Vec<(i64, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(pairs.len() >= 8, "{pairs:?}");
    assert!(pairs.iter().all(|(stored, own)| stored == own), "{pairs:?}");
}

#[test]
fn denied_refused_and_abandoned_calls_are_not_left_unfinished() {
    let env = TestEnv::new();
    let call = |k: &'static str| move |e: &mut QueueEntry| e.tool_call_id = Some(k.into());
    let lines = [
        // The safety gate denied it: the agent never ran it.
        half("PreToolUse", "a", 1_000, |e| {
            e.tool_call_id = Some("c1".into());
            e.risk = Some("rm-rf-root".into());
            e.decision = Some("deny".into());
        }),
        // Claude Code's own permission check refused it.
        half("PreToolUse", "a", 1_100, call("c2")),
        half("PermissionDenied", "a", 1_150, call("c2")),
        // Done.
        half("PreToolUse", "a", 1_200, call("c5")),
        half("PostToolUse", "a", 1_250, call("c5")),
        // Still open when its session ended.
        half("PreToolUse", "a", 1_300, call("c3")),
        half("SessionEnd", "a", 1_400, |_| {}),
        // The session resumed: this one is in flight.
        half("SessionStart", "a", 1_500, |_| {}),
        half("PreToolUse", "a", 1_600, call("c4")),
        // Copilot CLI: its permission system refused a call; another was cut off by the end.
        half("PreToolUse", "b", 2_000, |e| {
            e.tool_name = Some("bash".into())
        }),
        half("PostToolUse", "b", 2_050, |e| {
            e.tool_name = Some("bash".into());
            e.tool_result_type = Some("denied".into());
        }),
        half("PreToolUse", "b", 2_100, |e| {
            e.tool_name = Some("view".into())
        }),
        half("SessionEnd", "b", 2_200, |_| {}),
        // Copilot CLI reporting the gate's denial back as a denied result: one call, denied.
        half("PreToolUse", "g", 3_000, |e| {
            e.tool_name = Some("bash".into());
            e.decision = Some("deny".into());
        }),
        half("PostToolUse", "g", 3_010, |e| {
            e.tool_name = Some("bash".into());
            e.tool_result_type = Some("denied".into());
        }),
    ];
    env.append(&lines);
    env.ingest_once();
    // Only the call still running counts as unfinished.
    let figures = |env: &TestEnv| {
        rows(
            env,
            "SELECT sum(calls), sum(succeeded), sum(failed), sum(unfinished) FROM v_tools",
        )
    };
    assert_eq!(figures(&env), ["8|1|0|1"]);
    let bash = tool_summary(&env, "bash");
    assert_eq!(bash["unfinished"], 0, "{bash}");
    assert_eq!(
        rows(
            &env,
            "SELECT session_id, coalesce(tool_call_id, tool_name), outcome, success
             FROM tool_calls ORDER BY session_id, start_ts"
        ),
        [
            "a|c1|denied|-",
            "a|c2|refused|-",
            "a|c5|succeeded|1",
            "a|c3|abandoned|-",
            "a|c4|-|-",
            "b|bash|refused|-",
            "b|view|abandoned|-",
            "g|bash|denied|-",
        ]
    );
    assert_eq!(
        rows(
            &env,
            "SELECT tool_name, calls, succeeded, failed, unfinished, denied, refused, abandoned
             FROM v_tools ORDER BY tool_name"
        ),
        [
            "Bash|5|1|0|1|1|1|1",
            "bash|2|0|0|0|1|1|0",
            "view|1|0|0|0|0|0|1"
        ]
    );
    assert_eq!(
        json_out(&env, &["summarize", "--by", "tool"]),
        json_out(
            &env,
            &[
                "query",
                "select *, round(1.0 * failed / nullif(succeeded + failed, 0), 4) as failure_rate from v_tools order by calls desc, tool_name"
            ]
        )
    );
    // The same, one line per batch.
    let one_by_one = TestEnv::new();
    one_by_one.append(&lines);
    one_by_one
        .cmd()
        .args(["ingest", "--once", "--batch-size", "1"])
        .assert()
        .success();
    assert_eq!(figures(&one_by_one), figures(&env));
    let all = "SELECT * FROM tool_calls ORDER BY rowid";
    assert_eq!(rows(&one_by_one, all), rows(&env, all));
}

#[test]
fn a_call_the_gate_denies_in_enforce_mode_is_recorded_as_denied() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let pre = json!({
        "session_id": "e1",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf /"},
        "tool_use_id": "toolu_01",
    });
    let reply = capture(&env, pre.to_string(), &["--agent", "claude"]);
    assert_eq!(reply["hookSpecificOutput"]["permissionDecision"], "deny");
    env.ingest_once();
    assert_eq!(
        rows(&env, "SELECT calls, unfinished FROM v_session_tools"),
        ["1|0"]
    );
    assert_eq!(
        rows(&env, "SELECT outcome, success FROM tool_calls"),
        ["denied|-"]
    );
    assert_eq!(rows(&env, "SELECT denied FROM v_session_tools"), ["1"]);
}

/// One Claude Code hook through capture, in session `session`.
fn claude_hook(env: &TestEnv, payload: Value) {
    crate::common::capture(env, payload.to_string(), &["--agent", "claude"]);
}

/// Issue 39's decision chains: who or what decided each call, from the event sequences Claude
/// Code 2.1.332 fires (seen in the e2e runs): a call a rule allows (PreToolUse, PostToolUse),
/// one it asks about (PreToolUse, PermissionRequest with no call id, then PostToolUse when
/// allowed, nothing when not), one the gate denies, one its auto mode's classifier refuses
/// (PermissionDenied), one in bypassPermissions mode; and the calls nothing tells about.
#[test]
fn each_call_says_who_decided_it_where_the_events_tell() {
    let env = TestEnv::new();
    let pre = |id: &str, mode: Option<&str>, command: &str| {
        let mut p = json!({"session_id": "dc", "hook_event_name": "PreToolUse", "cwd": "/w",
            "tool_name": "Bash", "tool_use_id": id, "tool_input": {"command": command}});
        if let Some(mode) = mode {
            p["permission_mode"] = json!(mode);
        }
        p
    };
    let post = |id: &str, command: &str| {
        json!({"session_id": "dc", "hook_event_name": "PostToolUse", "cwd": "/w",
            "tool_name": "Bash", "tool_use_id": id, "tool_input": {"command": command},
            "tool_response": {"stdout": "", "stderr": "", "interrupted": false}})
    };
    let asked = |command: &str| {
        json!({"session_id": "dc", "hook_event_name": "PermissionRequest", "cwd": "/w",
            "tool_name": "Bash", "tool_input": {"command": command}, "permission_mode": "default"})
    };
    // Allowed by a rule: no question.
    claude_hook(&env, pre("t1", Some("default"), "ls"));
    claude_hook(&env, post("t1", "ls"));
    // Asked, and allowed: it ran.
    claude_hook(&env, pre("t2", Some("default"), "make"));
    claude_hook(&env, asked("make"));
    claude_hook(&env, post("t2", "make"));
    // Asked, not allowed: it never ran.
    claude_hook(&env, pre("t3", Some("default"), "touch x"));
    claude_hook(&env, asked("touch x"));
    // The gate denied it (enforce mode).
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    claude_hook(&env, pre("t4", Some("default"), "rm -rf /"));
    // Auto mode: one the classifier refused, one it (or a rule) allowed.
    claude_hook(&env, pre("t5", Some("auto"), "curl x"));
    claude_hook(
        &env,
        json!({"session_id": "dc", "hook_event_name": "PermissionDenied", "cwd": "/w",
            "tool_name": "Bash", "tool_use_id": "t5", "tool_input": {"command": "curl x"},
            "reason": "classifier"}),
    );
    claude_hook(&env, pre("t6", Some("auto"), "pwd"));
    claude_hook(&env, post("t6", "pwd"));
    // bypassPermissions: nothing is asked.
    claude_hook(&env, pre("t7", Some("bypassPermissions"), "date"));
    claude_hook(&env, post("t7", "date"));
    // A line from before permissionMode was recorded: nothing tells.
    claude_hook(&env, pre("t8", None, "whoami"));
    claude_hook(&env, post("t8", "whoami"));
    // In audit mode the gate allows what it flags: a rule allowed one, the user the other.
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"audit\"\n").unwrap();
    claude_hook(&env, pre("t9", Some("default"), "git push --force"));
    claude_hook(&env, post("t9", "git push --force"));
    claude_hook(&env, pre("ta", Some("default"), "git reset --hard"));
    claude_hook(&env, asked("git reset --hard"));
    claude_hook(&env, post("ta", "git reset --hard"));
    env.ingest_once();
    let report = crate::common::run_at_100(&env, &["gate", "report", "--format", "table"]);
    assert!(
        report.contains("\nOf the 2 allowed: 1 by settings, 1 by the user.\n"),
        "{report}"
    );

    let decided = rows(
        &env,
        "SELECT tool_call_id || ' ' || decided_by FROM v_tool_call_decisions ORDER BY tool_call_id",
    );
    assert_eq!(
        decided,
        [
            "t1 settings",
            "t2 user",
            "t3 user",
            "t4 gate",
            "t5 classifier",
            "t6 auto",
            "t7 mode",
            "t8 unknown",
            "t9 settings",
            "ta user"
        ]
    );
    let story = json_out(&env, &["show", "dc"]);
    let by: Vec<Value> = story["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .map(|i| i["decided_by"].clone())
        .collect();
    assert_eq!(
        by,
        [
            json!("settings"),
            json!("user"),
            json!("user"),
            json!("gate"),
            json!("classifier"),
            json!("auto"),
            json!("mode"),
            Value::Null,
            json!("settings"),
            json!("user")
        ],
        "{story}"
    );
    let text = crate::common::run_at_100(&env, &["show", "dc"]);
    for (command, said) in [
        ("ls", "by settings]"),
        ("make", "by the user]"),
        ("pwd", "by auto mode]"),
        ("date", "by bypass mode]"),
        ("curl x", "by the classifier]"),
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(&format!("Bash  {command}")))
            .unwrap_or_else(|| panic!("{command}: {text}"));
        assert!(line.ends_with(said), "{line}");
    }
    let refused = text.lines().find(|l| l.contains("Bash  curl x")).unwrap();
    assert!(refused.contains("  [refused, "), "{refused}");

    // A session with no PermissionRequest or PermissionDenied is decided by `show` from its
    // calls' rows alone: the same as the view says.
    let in_plain = |mut p: Value| {
        p["session_id"] = json!("plain");
        p
    };
    for (id, mode, command) in [
        ("p1", Some("default"), "ls -l"),
        ("p2", Some("bypassPermissions"), "date -u"),
        ("p3", Some("auto"), "pwd -P"),
        ("p4", Some("acceptEdits"), "id"),
        ("p5", None, "uname"),
    ] {
        claude_hook(&env, in_plain(pre(id, mode, command)));
        claude_hook(&env, in_plain(post(id, command)));
    }
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    claude_hook(&env, in_plain(pre("p6", Some("default"), "rm -rf /")));
    claude_hook(&env, in_plain(pre("p7", Some("plan"), "sleep 1")));
    env.ingest_once();
    let view = rows(
        &env,
        "SELECT tool_call_id || ' ' || decided_by FROM v_tool_call_decisions
         WHERE session_id = 'plain' ORDER BY tool_call_id",
    );
    assert_eq!(
        view,
        [
            "p1 settings",
            "p2 mode",
            "p3 auto",
            "p4 settings",
            "p5 unknown",
            "p6 gate",
            "p7 unknown"
        ]
    );
    let story = json_out(&env, &["show", "plain"]);
    let shown: Vec<String> = story["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .map(|i| i["decided_by"].as_str().unwrap_or("unknown").to_string())
        .collect();
    let from_view: Vec<String> = view
        .iter()
        .map(|v| v.split_once(' ').unwrap().1.to_string())
        .collect();
    assert_eq!(shown, from_view, "{story}");
}
