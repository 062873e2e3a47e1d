//! What each agent's payloads say, as the store says it (issue 15): a failed command is a
//! failed call, the extension's origin and cmstore as producer, an error object, the agents'
//! regular events known, Gemini's model, and interrupted turns. Payloads in
//! `tests/fixtures/payloads/` are composed from each agent's documented and observed shapes;
//! the real ones come from `../shared/fixtures/real` when it is there.

use serde_json::Value;

use crate::common::{capture, payload, real_fixtures, TestEnv};

/// Captures each fixture (with `--event` when given), then ingests.
fn captured(env: &TestEnv, fixtures: &[(&str, Option<&str>)]) {
    for (name, event) in fixtures {
        let args: Vec<&str> = match event {
            Some(e) => vec!["--event", e],
            None => vec![],
        };
        capture(env, payload(name), &args);
    }
    env.ingest_once();
}

/// The rows of `sql`'s three columns.
fn rows3<A, B, C>(env: &TestEnv, sql: &str) -> Vec<(A, B, C)>
where
    A: rusqlite::types::FromSql,
    B: rusqlite::types::FromSql,
    C: rusqlite::types::FromSql,
{
    let conn = env.conn();
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn text(env: &TestEnv, sql: &str) -> Option<String> {
    env.conn().query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn failed_commands_are_failed_calls_and_printed_words_are_not() {
    let env = TestEnv::new();
    captured(
        &env,
        &[
            ("gemini-after-tool-exit-3.json", None),
            ("gemini-after-tool-prints-exit-code.json", None),
            (
                "copilot-camel-post-tool-use-exit-3.json",
                Some("postToolUse"),
            ),
            ("codex-post-tool-use-exit-3.json", None),
        ],
    );
    let lines = env.queue_lines();
    assert_eq!(lines[0]["exitCode"], 3);
    assert_eq!(lines[0]["toolFailed"], true);
    assert!(lines[1].get("exitCode").is_none(), "{}", lines[1]);
    assert_eq!(
        lines[2]["toolResultType"], "success",
        "Copilot's own word kept"
    );
    assert_eq!(lines[2]["exitCode"], 3);
    assert_eq!(lines[3]["exitCode"], 3);
    let outcomes = |session: &str| {
        let conn = env.conn();
        let mut stmt = conn
            .prepare(
                "SELECT outcome, success FROM tool_calls WHERE session_id = ?1 ORDER BY end_ts",
            )
            .unwrap();
        stmt.query_map([session], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap()
    };
    assert_eq!(
        outcomes("gem-1"),
        [("failed".into(), Some(0)), ("succeeded".into(), Some(1))]
    );
    assert_eq!(outcomes("cop-1"), [("failed".into(), Some(0))]);
    assert_eq!(outcomes("cdx-1"), [("failed".into(), Some(0))]);
    assert_eq!(
        env.int("SELECT tool_failures FROM sessions WHERE session_id = 'gem-1'"),
        1
    );
}

#[test]
fn real_successful_payloads_stay_successes() {
    let Some(real) = real_fixtures() else {
        return;
    };
    let env = TestEnv::new();
    for (file, args) in [
        (
            "copilot-cli/hook-post-tool-use.embedded-samples.jsonl",
            vec!["--event", "postToolUse"],
        ),
        ("gemini-cli/hook-after-tool.embedded-samples.jsonl", vec![]),
    ] {
        let text = std::fs::read_to_string(real.join(file)).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            capture(&env, line, &args);
        }
    }
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM tool_calls"), 5);
    assert_eq!(
        env.int("SELECT count(*) FROM tool_calls WHERE outcome = 'succeeded'"),
        5
    );
    assert_eq!(
        env.int("SELECT count(*) FROM unknown_counts WHERE reason = 'unknown_hook_type'"),
        0
    );
}

#[test]
fn lines_name_the_extensions_origin_and_cmstore_as_producer_old_lines_too() {
    let env = TestEnv::new();
    captured(
        &env,
        &[
            ("copilot-camel-session-start.json", Some("sessionStart")),
            ("codex-pre-tool-use.json", None),
            ("vscode-post-tool-use.json", None),
        ],
    );
    let lines = env.queue_lines();
    let origins: Vec<&str> = lines
        .iter()
        .map(|l| l["origin"].as_str().unwrap())
        .collect();
    assert_eq!(
        origins,
        ["copilot-cli-plugin", "unknown", "vscode-extension"]
    );
    assert!(lines.iter().all(|l| l["producer"] == "cmstore"));
    // A line an older cmstore wrote: cmstore in `origin`, no `producer`.
    env.append(&[
        r#"{"hookType":"Stop","timestamp":1796008451514,"sessionId":"old","origin":"cmstore","id":"01a22a72-1dba-70d3-9349-b299ba62686a","v":1}"#.to_string(),
        r#"{"origin":"vscode-extension","hookType":"Stop","sessionId":"ext","timestamp":1767323045000}"#.to_string(),
    ]);
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE producer = 'cmstore'"),
        4
    );
    assert_eq!(
        text(&env, "SELECT producer FROM events WHERE session_id = 'ext'"),
        None,
        "the extension's own line is not cmstore's"
    );
}

#[test]
fn a_failure_error_is_an_object_the_extension_reads() {
    let env = TestEnv::new();
    let failure = r#"{"session_id":"c1","transcript_path":"/h/.claude/projects/p/c1.jsonl","cwd":"/w","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"exit 3"},"tool_use_id":"toolu_1","error":"Exit code 3","is_interrupt":false}"#;
    capture(&env, failure, &["--agent", "claude"]);
    let line = &env.queue_lines()[0];
    assert_eq!(line["error"], serde_json::json!({"message": "Exit code 3"}));
    if let Some(real) = real_fixtures() {
        let text = std::fs::read_to_string(
            real.join("claude-code/hooks-hockey/post_tool_use_failure.jsonl"),
        )
        .unwrap();
        let first = text.lines().next().unwrap();
        capture(&env, first, &["--agent", "claude"]);
        let real_line = env.queue_lines().pop().unwrap();
        assert!(real_line["error"]["message"].is_string(), "{real_line}");
    }
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM tool_calls WHERE outcome = 'failed'"),
        env.int("SELECT count(*) FROM events WHERE hook_type = 'PostToolUseFailure'")
    );
}

#[test]
fn gemini_names_its_model_and_its_own_events_are_known() {
    let env = TestEnv::new();
    captured(
        &env,
        &[
            ("gemini-before-model.json", None),
            ("gemini-pre-compress-auto.json", None),
        ],
    );
    let lines: Vec<Value> = env.queue_lines();
    assert_eq!(lines[0]["hookType"], "ModelRequest");
    assert_eq!(lines[0]["event"], "BeforeModel");
    assert_eq!(lines[1]["hookType"], "CompactionCheck");
    assert!(lines[1].get("turns").is_none(), "no compaction's turns");
    assert_eq!(
        text(
            &env,
            "SELECT model FROM sessions WHERE session_id = 'gem-1'"
        )
        .as_deref(),
        Some("gemini-2.5-flash")
    );
    assert_eq!(env.int("SELECT count(*) FROM unknown_counts"), 0);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE hook_type = 'PreCompact'"),
        0
    );
}

#[test]
fn an_automatic_gemini_pre_compress_prints_no_knowledge_index() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("knowledge-index.txt"), "index").unwrap();
    let reply = capture(&env, payload("gemini-pre-compress-auto.json"), &[]);
    assert_eq!(reply, serde_json::json!({}));
}

#[test]
fn a_codex_interrupt_records_its_prompt_as_interrupted() {
    let env = TestEnv::new();
    let prompt = r#"{"session_id":"cdx-1","turn_id":"turn-2","transcript_path":null,"cwd":"/w","hook_event_name":"UserPromptSubmit","model":"gpt-5-codex","permission_mode":"default","prompt":"count to a million"}"#;
    capture(&env, prompt, &[]);
    captured(&env, &[("codex-interrupt.json", None)]);
    assert_eq!(env.queue_lines()[1]["hookType"], "Interrupt");
    let conn = env.conn();
    let (prompt, outcome): (Option<String>, Option<String>) = conn
        .query_row(
            "SELECT prompt, outcome FROM turns WHERE session_id = 'cdx-1' AND turn_id = 'turn-2'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(prompt.as_deref(), Some("count to a million"));
    assert_eq!(outcome.as_deref(), Some("interrupted"));
}

#[test]
fn a_gemini_prompt_without_after_agent_is_interrupted_in_any_batches() {
    let prompt = |text: &str, ts: &str| {
        format!(
            r#"{{"session_id":"gem-2","transcript_path":"/u/.gemini/tmp/p/chats/session-2.json","cwd":"/w","hook_event_name":"BeforeAgent","timestamp":"{ts}","prompt":"{text}"}}"#
        )
    };
    let answer = r#"{"session_id":"gem-2","transcript_path":"/u/.gemini/tmp/p/chats/session-2.json","cwd":"/w","hook_event_name":"AfterAgent","timestamp":"2026-03-01T10:00:09Z","prompt":"second","prompt_response":"done"}"#;
    let end = r#"{"session_id":"gem-2","transcript_path":"/u/.gemini/tmp/p/chats/session-2.json","cwd":"/w","hook_event_name":"SessionEnd","timestamp":"2026-03-01T10:00:20Z","reason":"exit"}"#;
    let payloads = [
        prompt("first", "2026-03-01T10:00:00Z"),
        prompt("second", "2026-03-01T10:00:05Z"),
        answer.to_string(),
        prompt("third", "2026-03-01T10:00:10Z"),
        end.to_string(),
    ];
    let mut results = Vec::new();
    for ingest_each in [false, true] {
        let env = TestEnv::new();
        for p in &payloads {
            capture(&env, p.as_str(), &[]);
            if ingest_each {
                env.ingest_once();
            }
        }
        env.ingest_once();
        let conn = env.conn();
        let mut stmt = conn
            .prepare(
                "SELECT coalesce(prompt, '-'), coalesce(outcome, 'answered') FROM turns
                 WHERE session_id = 'gem-2' ORDER BY ts",
            )
            .unwrap();
        let rows: Vec<(String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        results.push(rows);
    }
    let want: Vec<(String, String)> = vec![
        ("first".into(), "interrupted".into()),
        ("second".into(), "answered".into()),
        ("third".into(), "interrupted".into()),
    ];
    assert_eq!(results[0], want);
    assert_eq!(
        results[1], want,
        "one batch or one per line: the same turns"
    );
}

/// Codex 0.171's PostToolUse, as the end-to-end suite recorded it, with the rollout it names
/// copied into the test's directory (or not, with `rollout: false`).
fn codex_171_post_tool_use(env: &TestEnv, name: &str, rollout: bool) -> Value {
    let path = env.dir.path().join("rollout.jsonl");
    if rollout {
        std::fs::write(&path, payload("codex-0.171-rollout.jsonl")).unwrap();
    }
    let mut post: Value = serde_json::from_str(&payload(name)).unwrap();
    post["transcript_path"] = Value::from(path.to_str().unwrap());
    post
}

/// Issue 15.1 for Codex 0.171: its PostToolUse gives only the output (`"failing\n"`), so the
/// exit code comes from the rollout the payload names.
#[test]
fn a_codex_171_exit_code_is_read_from_its_rollout() {
    let env = TestEnv::new();
    for name in [
        "codex-0.171-post-tool-use.json",
        "codex-0.171-post-tool-use-exit-3.json",
    ] {
        let post = codex_171_post_tool_use(&env, name, true);
        capture(&env, post.to_string(), &[]);
    }
    env.ingest_once();
    let lines = env.queue_lines();
    assert_eq!(lines[0]["exitCode"], 0);
    assert!(lines[0].get("toolFailed").is_none(), "{}", lines[0]);
    assert_eq!(lines[1]["exitCode"], 3);
    assert_eq!(lines[1]["toolFailed"], true);
    assert_eq!(
        text(
            &env,
            "SELECT group_concat(outcome, ',') FROM (SELECT outcome FROM tool_calls ORDER BY end_ts)"
        )
        .as_deref(),
        Some("succeeded,failed")
    );
    assert_eq!(env.int("SELECT tool_failures FROM sessions"), 1);
}

#[test]
fn a_codex_171_call_without_its_rollout_has_no_exit_code() {
    let env = TestEnv::new();
    let post = codex_171_post_tool_use(&env, "codex-0.171-post-tool-use-exit-3.json", false);
    capture(&env, post.to_string(), &[]);
    let lines = env.queue_lines();
    assert!(lines[0].get("exitCode").is_none(), "{}", lines[0]);
    assert!(lines[0].get("toolFailed").is_none(), "{}", lines[0]);
}

/// Issue 15.1 for Copilot CLI 1.0.102: its shell result ends in `<shellId: N completed with
/// exit code 3>`, with `resultType: "success"` (payloads recorded by the end-to-end suite).
#[test]
fn a_copilot_1_0_102_exit_code_is_read_from_its_shell_line() {
    let env = TestEnv::new();
    captured(
        &env,
        &[
            ("copilot-1.0.102-post-tool-use.json", Some("postToolUse")),
            (
                "copilot-1.0.102-post-tool-use-exit-3.json",
                Some("postToolUse"),
            ),
        ],
    );
    let lines = env.queue_lines();
    assert_eq!(lines[0]["exitCode"], 0);
    assert_eq!(lines[1]["exitCode"], 3);
    assert_eq!(lines[1]["toolFailed"], true);
    assert_eq!(
        lines[1]["toolResultType"], "success",
        "Copilot's own word kept"
    );
    assert_eq!(env.int("SELECT tool_failures FROM sessions"), 1);
}

/// Cursor (issue 38): its payloads, composed from captures of Cursor 2.5 to 3.7 published in
/// open projects (docs/agents.md, "Cursor", cites each), as the installed hooks send them: one
/// session with its prompt, calls paired with their outcomes (the exit code inside the
/// result's JSON string; a postToolUseFailure with its message) and durations, the answer
/// (afterAgentResponse), a turn, and the session's end, sent with a byte order mark as Cursor
/// on Windows sends it, without flags (the payload names its agent and event).
#[test]
fn cursor_payloads_are_a_session_with_its_prompt_calls_and_answer() {
    let env = TestEnv::new();
    let order = [
        ("cursor-3.7-session-start.json", "sessionStart"),
        ("cursor-2.7-before-submit-prompt.json", "beforeSubmitPrompt"),
        ("cursor-3.7-pre-tool-use-shell.json", "preToolUse"),
        ("cursor-2.5-post-tool-use-shell.json", "postToolUse"),
        ("cursor-3.7-pre-tool-use-shell-2.json", "preToolUse"),
        ("cursor-post-tool-use-shell-exit-3.json", "postToolUse"),
        ("cursor-3.7-pre-tool-use-grep.json", "preToolUse"),
        (
            "cursor-3.7-post-tool-use-failure.json",
            "postToolUseFailure",
        ),
        ("cursor-3.7-subagent-stop.json", "subagentStop"),
        ("cursor-3.7-after-agent-response.json", "afterAgentResponse"),
        ("cursor-3.7-stop.json", "stop"),
    ];
    for (name, event) in order {
        let reply = capture(
            &env,
            payload(name),
            &["--agent", "cursor", "--event", event],
        );
        assert!(reply.get("hookSpecificOutput").is_none(), "{name}: {reply}");
    }
    let mut with_bom = vec![0xEF, 0xBB, 0xBF];
    with_bom.extend(payload("cursor-2.7-session-end.json").into_bytes());
    capture(&env, with_bom, &[]);
    env.ingest_once();

    let conv = "2a409a3e-5b1c-4f7e-9d0a-7c1e2f3a4b5c";
    assert_eq!(
        env.int(&format!(
            "SELECT count(*) FROM events WHERE agent = 'cursor' AND session_id = '{conv}'"
        )),
        12
    );
    assert_eq!(
        text(
            &env,
            "SELECT prompt FROM events WHERE hook_type = 'UserPromptSubmit'"
        )
        .as_deref(),
        Some("run the test suite and fix what fails")
    );
    let calls: Vec<(String, String, i64)> = rows3(
        &env,
        "SELECT tool_name, outcome, duration_ms FROM tool_calls ORDER BY start_ts",
    );
    assert_eq!(
        calls,
        [
            ("Shell".to_string(), "succeeded".to_string(), 280),
            ("Shell".to_string(), "failed".to_string(), 1512),
            ("Grep".to_string(), "failed".to_string(), 6),
        ]
    );
    assert_eq!(
        env.int(
            "SELECT json_extract(entry, '$.exitCode') FROM events \
             WHERE tool_call_id = 'tool_5d6e7f80-shell' AND hook_type = 'PostToolUse'"
        ),
        3
    );
    assert_eq!(
        text(
            &env,
            "SELECT json_extract(entry, '$.error.message') FROM events \
             WHERE hook_type = 'PostToolUseFailure'"
        )
        .as_deref(),
        Some("Path does not exist")
    );
    assert_eq!(
        text(
            &env,
            "SELECT response FROM events WHERE hook_type = 'afterAgentResponse'"
        )
        .as_deref(),
        Some("The tests pass now; the linter reports three problems in src/app.ts.")
    );
    assert_eq!(
        env.int("SELECT count(*) FROM turns WHERE hook_type = 'Stop'"),
        1
    );
    // The turn takes its prompt and its answer from the lines Cursor sent them on.
    assert_eq!(
        text(
            &env,
            "SELECT prompt || ' / ' || response FROM turns WHERE hook_type = 'Stop'"
        )
        .as_deref(),
        Some(
            "run the test suite and fix what fails / The tests pass now; the linter reports \
             three problems in src/app.ts."
        )
    );

    assert_eq!(
        text(
            &env,
            "SELECT json_extract(entry, '$.reason') FROM events WHERE hook_type = 'SessionEnd'"
        )
        .as_deref(),
        Some("user_close")
    );
}

/// Cursor's deny: in enforce mode a risky Shell call's preToolUse gets `permission: deny`,
/// with the reason for the user and the agent; a prompt the gate refuses, `continue: false`.
#[test]
fn cursor_is_denied_in_its_own_shape() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let mut risky: Value =
        serde_json::from_str(&payload("cursor-3.7-pre-tool-use-shell.json")).unwrap();
    risky["tool_input"]["command"] = Value::from("rm -rf /");
    let reply = capture(
        &env,
        risky.to_string(),
        &["--agent", "cursor", "--event", "preToolUse"],
    );
    assert_eq!(reply["permission"], "deny", "{reply}");
    let reason = reply["user_message"].as_str().unwrap();
    assert!(
        !reason.is_empty() && reply["agent_message"] == reason,
        "{reply}"
    );
    env.ingest_once();
    assert_eq!(
        text(
            &env,
            "SELECT decision FROM events WHERE hook_type = 'PreToolUse'"
        )
        .as_deref(),
        Some("deny")
    );
}

/// Each Cursor turn takes its own prompt and only an answer sent after it: a second turn with
/// no `afterAgentResponse` has its prompt and no answer, not the first turn's.
#[test]
fn each_cursor_turn_takes_its_own_prompt_and_answer() {
    let env = TestEnv::new();
    let with = |name: &str, key: &str, value: &str| -> String {
        let mut v: Value = serde_json::from_str(&payload(name)).unwrap();
        v[key] = Value::from(value);
        v.to_string()
    };
    let flags = |event: &'static str| ["--agent", "cursor", "--event", event];
    let prompt = "cursor-2.7-before-submit-prompt.json";
    capture(
        &env,
        with(prompt, "prompt", "first"),
        &flags("beforeSubmitPrompt"),
    );
    let answer = "cursor-3.7-after-agent-response.json";
    capture(
        &env,
        with(answer, "text", "first answer"),
        &flags("afterAgentResponse"),
    );
    capture(&env, payload("cursor-3.7-stop.json"), &flags("stop"));
    capture(
        &env,
        with(prompt, "prompt", "second"),
        &flags("beforeSubmitPrompt"),
    );
    capture(
        &env,
        with("cursor-3.7-stop.json", "status", "aborted"),
        &flags("stop"),
    );
    env.ingest_once();
    let turns: Vec<(Option<String>, Option<String>, Option<String>)> = rows3(
        &env,
        "SELECT prompt, response, outcome FROM turns ORDER BY ts, rowid",
    );
    assert_eq!(
        turns,
        [
            (Some("first".into()), Some("first answer".into()), None),
            (Some("second".into()), None, Some("interrupted".into())),
        ]
    );
}

/// Droid (issue 38): its payloads as the installed hooks send them (`--agent droid`), the
/// first three as captured from Droid 0.208 (delaanthonio/firstmate,
/// `docs/verification/droid-primary.md`, paths replaced). Claude Code's dialect with Droid's
/// tool names and no call id: the session, its `Execute` call paired in order with its
/// PostToolUse, the permission mode, and a turn at Stop; without the flag the transcript
/// under `~/.factory/` names the agent.
#[test]
fn droid_payloads_are_a_session_with_its_calls_paired_in_order() {
    let env = TestEnv::new();
    let session = "8d9dc6ac-89f0-4fee-99a2-08484dfb3355";
    let pre = payload("droid-0.208-pre-tool-use-execute.json");
    // The call's PostToolUse as Droid 0.225 sent one, in this session.
    let mut post: Value = serde_json::from_str(&pre).unwrap();
    let real: Value =
        serde_json::from_str(&payload("droid-0.225-post-tool-use-execute.json")).unwrap();
    post["hook_event_name"] = real["hook_event_name"].clone();
    post["tool_response"] = real["tool_response"].clone();
    let flags = ["--agent", "droid"];
    for stdin in [
        payload("droid-0.208-session-start.json"),
        pre.clone(),
        post.to_string(),
    ] {
        let reply = capture(&env, stdin, &flags);
        assert!(reply.get("decision").is_none(), "{reply}");
    }
    capture(&env, payload("droid-0.208-stop.json"), &[]);
    env.ingest_once();

    assert_eq!(
        env.int(&format!(
            "SELECT count(*) FROM events WHERE agent = 'droid' AND session_id = '{session}'"
        )),
        4
    );
    let calls: Vec<(String, String, Option<String>)> = rows3(
        &env,
        "SELECT tool_calls.tool_name, outcome, json_extract(entry, '$.permissionMode') \
         FROM tool_calls JOIN events ON events.id = tool_calls.pre_event_id",
    );
    assert_eq!(
        calls,
        [(
            "Execute".to_string(),
            "succeeded".to_string(),
            Some("auto-medium".to_string())
        )]
    );
    assert_eq!(
        env.int("SELECT count(*) FROM turns WHERE hook_type = 'Stop'"),
        1
    );
    assert_eq!(
        env.int(
            "SELECT json_extract(entry, '$.exitCode') FROM events WHERE hook_type = 'PostToolUse'"
        ),
        0
    );
}

/// Droid's other events, as Droid 0.225.2 sent them in runs against a mock (its JSON-RPC mode
/// for the prompt, the compaction and the permission prompt; a `Task` call for the subagent),
/// captured without flags: each is Droid's, of its type, with its own fields; a subagent's
/// answer is its SubagentStop's.
#[test]
fn droid_prompt_subagent_compaction_and_notification_are_read() {
    let env = TestEnv::new();
    for name in [
        "droid-0.225-user-prompt-submit.json",
        "droid-0.225-subagent-stop.json",
        "droid-0.225-pre-compact.json",
        "droid-0.225-notification.json",
        "droid-0.225-session-end.json",
    ] {
        capture(&env, payload(name), &[]);
    }
    env.ingest_once();
    let rows: Vec<(String, String, Option<String>)> = rows3(
        &env,
        "SELECT agent, hook_type, coalesce(prompt, json_extract(entry, '$.message'), \
                json_extract(entry, '$.trigger'), json_extract(entry, '$.reason')) \
         FROM events ORDER BY seq",
    );
    let droid = |kind: &str, said: &str| {
        (
            "droid".to_string(),
            kind.to_string(),
            Some(said.to_string()),
        )
    };
    assert_eq!(
        rows,
        [
            droid("UserPromptSubmit", "run echo hi"),
            ("droid".to_string(), "SubagentStop".to_string(), None),
            droid("PreCompact", "manual"),
            droid(
                "Notification",
                "Factory CLI needs permission to execute 1 tool(s)"
            ),
            droid("SessionEnd", "other"),
        ]
    );
    // The subagent's answer (`task_result`) is its turn's.
    assert_eq!(
        text(
            &env,
            "SELECT response FROM turns WHERE hook_type = 'SubagentStop'"
        )
        .as_deref(),
        Some("done")
    );
}

/// Droid's deny: a risky `Execute` (its shell tool) is denied in Claude Code's shape, which
/// Droid 0.186 to 0.225 honour (`hookSpecificOutput.permissionDecision`).
#[test]
fn droid_is_denied_in_claude_codes_shape() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let mut risky: Value =
        serde_json::from_str(&payload("droid-0.208-pre-tool-use-execute.json")).unwrap();
    risky["tool_input"]["command"] = Value::from("rm -rf /");
    let reply = capture(&env, risky.to_string(), &["--agent", "droid"]);
    assert_eq!(
        reply["hookSpecificOutput"]["permissionDecision"], "deny",
        "{reply}"
    );
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "PreToolUse");
    env.ingest_once();
    assert_eq!(
        text(
            &env,
            "SELECT decision FROM events WHERE hook_type = 'PreToolUse'"
        )
        .as_deref(),
        Some("deny")
    );
}

/// Droid's usage (issue 36): no transcript line carries any; the session's totals are in the
/// `<session>.settings.json` Droid keeps beside the transcript, read by the hooks that read the
/// transcript. One row per session, its counts those of the file's latest state; a custom
/// model named by the user's `customModels`; the same totals are not carried twice.
#[test]
fn droid_usage_is_the_sessions_totals_from_the_file_beside_its_transcript() {
    let env = TestEnv::new();
    let factory = env.user_home().join(".factory");
    let dir = factory.join("sessions/-home-me-src-webapp");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        factory.join("settings.json"),
        r#"{"customModels": [{"model": "claude-sonnet-4-5", "displayName": "Mock",
            "provider": "anthropic"}]}"#,
    )
    .unwrap();
    let session = "8d9dc6ac-89f0-4fee-99a2-08484dfb3355";
    let transcript = dir.join(format!("{session}.jsonl"));
    std::fs::write(
        &transcript,
        format!("{{\"type\":\"session_start\",\"id\":\"{session}\",\"version\":2}}\n"),
    )
    .unwrap();
    let totals = |input: u64, output: u64| {
        let text = format!(
            r#"{{"model": "custom:Mock-0", "tokenUsage": {{"inputTokens": {input},
                "outputTokens": {output}, "cacheCreationTokens": 6120,
                "cacheReadTokens": 30014, "thinkingTokens": 0, "factoryCredits": 0}}}}"#
        );
        std::fs::write(dir.join(format!("{session}.settings.json")), text).unwrap();
    };
    let event = |name: &str| -> String {
        let mut v: Value = serde_json::from_str(&payload(name)).unwrap();
        v["transcript_path"] = Value::from(transcript.to_string_lossy().into_owned());
        v.to_string()
    };
    totals(6, 90);
    capture(&env, event("droid-0.208-stop.json"), &["--agent", "droid"]);
    // A second Stop with the file unchanged carries nothing again.
    capture(&env, event("droid-0.208-stop.json"), &["--agent", "droid"]);
    totals(9, 135);
    let mut end: Value = serde_json::from_str(&event("droid-0.225-session-end.json")).unwrap();
    end["session_id"] = Value::from(session);
    capture(&env, end.to_string(), &["--agent", "droid"]);
    let carried: Vec<usize> = env
        .queue_lines()
        .iter()
        .map(|l| l["usage"].as_array().map_or(0, Vec::len))
        .collect();
    assert_eq!(carried, [1, 0, 1]);
    env.ingest_once();
    let rows: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT message_id, model, input_tokens || '/' || output_tokens || '/' || \
                cache_write_tokens || '/' || cache_read_tokens FROM usage",
    );
    assert_eq!(
        rows,
        [(
            format!("droid-session:{session}"),
            "claude-sonnet-4-5".to_string(),
            "9/135/6120/30014".to_string()
        )]
    );
    assert!(
        text(&env, "SELECT CAST(cost_usd AS TEXT) FROM v_usage").is_some(),
        "priced as its model"
    );
    // `cmstore import` of Droid's sessions finds the same totals: nothing added or changed.
    env.cmd()
        .arg("import")
        .arg(factory.join("sessions"))
        .assert()
        .success();
    let again: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT message_id, model, input_tokens || '/' || output_tokens || '/' || \
                cache_write_tokens || '/' || cache_read_tokens FROM usage",
    );
    assert_eq!(again, rows);
}

/// `cmstore import` of Droid's history, with no hook ever run: each session with totals is a
/// row of usage and a session of Droid's in its working directory (the transcript's
/// `session_start`); a session whose settings file counts nothing, or is missing, adds none.
#[test]
fn droid_history_is_imported_from_the_sessions_folder() {
    let env = TestEnv::new();
    let dir = env
        .user_home()
        .join(".factory/sessions/-home-me-src-webapp");
    std::fs::create_dir_all(&dir).unwrap();
    for (session, usage) in [
        (
            "a1",
            Some(r#"{"inputTokens": 5, "outputTokens": 7, "cacheReadTokens": 11}"#),
        ),
        ("b2", Some("{}")),
        ("c3", None),
    ] {
        std::fs::write(
            dir.join(format!("{session}.jsonl")),
            format!(
                "{{\"type\":\"session_start\",\"id\":\"{session}\",\"version\":2,\
                 \"cwd\":\"/home/me/src/webapp\"}}\n"
            ),
        )
        .unwrap();
        if let Some(usage) = usage {
            let settings = format!(r#"{{"model": "gpt-5-codex", "tokenUsage": {usage}}}"#);
            std::fs::write(dir.join(format!("{session}.settings.json")), settings).unwrap();
        }
    }
    env.cmd()
        .arg("import")
        .arg(env.user_home().join(".factory/sessions"))
        .assert()
        .success();
    let rows: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT u.session_id, s.agent || ' ' || s.cwd, \
                input_tokens || '/' || output_tokens || '/' || cache_read_tokens \
         FROM usage u JOIN sessions s USING (session_id)",
    );
    assert_eq!(
        rows,
        [(
            "a1".to_string(),
            "droid /home/me/src/webapp".to_string(),
            "5/7/11".to_string()
        )]
    );
}

/// The events cmstore's OpenCode plugin sent from a run of OpenCode 1.18.33 against a mock
/// (a prompt, a `bash` call, its answer), captured without flags: one OpenCode session with
/// its prompt, the call paired by its id, the model call's usage, the turn's answer.
#[test]
fn opencode_events_are_a_session_with_its_prompt_call_usage_and_answer() {
    let env = TestEnv::new();
    for name in [
        "opencode-1.18-session-created.json",
        "opencode-1.18-chat-message.json",
        "opencode-1.18-tool-execute-before-bash.json",
        "opencode-1.18-tool-execute-after-bash.json",
        "opencode-1.18-message-updated.json",
        "opencode-1.18-session-idle.json",
    ] {
        assert_eq!(
            capture(&env, payload(name), &[]),
            serde_json::json!({}),
            "{name}"
        );
    }
    env.ingest_once();
    let session = "ses_db06e7f42ffeEUxX3PuVlMo6WB";
    let rows: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT agent, hook_type, event FROM events ORDER BY seq",
    );
    let opencode =
        |kind: &str, event: &str| ("opencode".to_string(), kind.to_string(), event.to_string());
    assert_eq!(
        rows,
        [
            opencode("SessionStart", "session.created"),
            opencode("UserPromptSubmit", "chat.message"),
            opencode("PreToolUse", "tool.execute.before"),
            opencode("PostToolUse", "tool.execute.after"),
            opencode("ModelResponse", "message.updated"),
            opencode("Stop", "session.idle"),
        ]
    );
    let calls: Vec<(String, String, Option<i64>)> = rows3(
        &env,
        "SELECT tool_calls.tool_name, outcome, json_extract(entry, '$.exitCode') \
         FROM tool_calls JOIN events ON events.id = tool_calls.post_event_id",
    );
    assert_eq!(
        calls,
        [("bash".to_string(), "succeeded".to_string(), Some(0))]
    );
    assert_eq!(
        text(&env, "SELECT json_extract(entry, '$.toolResponse') FROM events WHERE hook_type = 'PostToolUse'").as_deref(),
        Some("hi\n"),
        "the output the model was given, not OpenCode's result object"
    );
    let turn: (Option<String>, Option<String>, Option<String>) = rows3(
        &env,
        &format!("SELECT prompt, response, model FROM turns WHERE session_id = '{session}'"),
    )
    .remove(0);
    assert_eq!(
        turn,
        (
            Some("Run it.\n@@bash echo hi\n".to_string()),
            Some("FINAL ANSWER: done. last tool output: hi | ".to_string()),
            Some("mock-model".to_string())
        )
    );
    let usage: Vec<(String, i64, i64)> = rows3(
        &env,
        "SELECT message_id, input_tokens + cache_read_tokens, output_tokens FROM usage",
    );
    assert_eq!(
        usage,
        [("msg_24f918b3f001r8gZJYulPtvtNA".to_string(), 100, 23)]
    );
}

/// What else OpenCode 1.18.33 reported through the plugin: a call that exited 3 (`failed`,
/// its exit code from the result's metadata), a file write, a call OpenCode's permission
/// refused (asked, denied: one call, `refused`; the plugin sends no error part for it), a
/// tool that failed by itself (its error part closes its call as failed), and a turn an API
/// error ended.
#[test]
fn opencode_failures_permissions_and_errors_are_read() {
    let env = TestEnv::new();
    for name in [
        "opencode-1.18-tool-execute-before-bash-exit3.json",
        "opencode-1.18-tool-execute-after-bash-exit3.json",
        "opencode-1.18-tool-execute-after-write.json",
        "opencode-1.18-tool-execute-before-read.json",
        "opencode-1.18-permission-asked.json",
        "opencode-1.18-permission-replied.json",
    ] {
        capture(&env, payload(name), &[]);
    }
    // A read that failed by itself: its call, then its error part.
    for name in [
        "opencode-1.18-tool-execute-before-read.json",
        "opencode-1.18-message-part-updated-tool-error.json",
    ] {
        let mut sent: Value = serde_json::from_str(&payload(name)).unwrap();
        sent["tool_use_id"] = Value::from("call_0012");
        capture(&env, sent.to_string(), &[]);
    }
    capture(&env, payload("opencode-1.18-session-error.json"), &[]);
    env.ingest_once();
    let calls: Vec<(String, String, Option<i64>)> = rows3(
        &env,
        "SELECT tool_calls.tool_name, outcome, json_extract(entry, '$.exitCode') \
         FROM tool_calls LEFT JOIN events ON events.id = tool_calls.post_event_id \
         ORDER BY tool_calls.tool_call_id",
    );
    assert_eq!(
        calls,
        [
            ("bash".to_string(), "failed".to_string(), Some(3)),
            ("write".to_string(), "succeeded".to_string(), None),
            ("read".to_string(), "refused".to_string(), None),
            ("read".to_string(), "failed".to_string(), None),
        ]
    );
    let kinds: Vec<(String, Option<String>, Option<String>)> = rows3(
        &env,
        "SELECT hook_type, tool_name, json_extract(entry, '$.error.message') FROM events \
         WHERE hook_type NOT IN ('PreToolUse', 'PostToolUse') ORDER BY seq",
    );
    let row = |kind: &str, tool: Option<&str>, error: Option<&str>| {
        (
            kind.to_string(),
            tool.map(str::to_string),
            error.map(str::to_string),
        )
    };
    assert_eq!(
        kinds,
        [
            row("PermissionRequest", Some("external_directory"), None),
            row("PermissionDenied", None, None),
            row(
                "PostToolUseFailure",
                Some("read"),
                Some("The user rejected permission to use this specific tool call.")
            ),
            row("StopFailure", None, Some("mock bad request")),
        ]
    );
    assert_eq!(
        text(
            &env,
            "SELECT outcome FROM turns WHERE hook_type = 'StopFailure'"
        )
        .as_deref(),
        Some("failed")
    );
}

/// A turn the person stopped: the plugin says so at the session's idle, and the turn is
/// `interrupted`.
#[test]
fn an_opencode_turn_the_person_stopped_is_interrupted() {
    let env = TestEnv::new();
    let mut idle: Value =
        serde_json::from_str(&payload("opencode-1.18-session-idle.json")).unwrap();
    idle["outcome"] = Value::from("interrupted");
    capture(&env, payload("opencode-1.18-chat-message.json"), &[]);
    capture(&env, idle.to_string(), &[]);
    env.ingest_once();
    assert_eq!(
        text(&env, "SELECT outcome FROM turns").as_deref(),
        Some("interrupted")
    );
}

/// In enforce mode a risky `bash` call's `tool.execute.before` gets Claude Code's deny, which
/// the plugin turns into the error it throws; the call is recorded as denied.
#[test]
fn opencode_is_denied_in_the_shape_its_plugin_reads() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let reply = capture(
        &env,
        payload("opencode-1.18-tool-execute-before-bash-risky.json"),
        &["--agent", "opencode"],
    );
    assert_eq!(
        reply["hookSpecificOutput"]["permissionDecision"], "deny",
        "{reply}"
    );
    let reason = reply["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("curl"), "{reason}");
    env.ingest_once();
    assert_eq!(
        text(&env, "SELECT outcome FROM tool_calls").as_deref(),
        Some("denied")
    );
}

/// OpenCode's store, as OpenCode 1.18.33 lays it out (the tables and columns `cmstore import`
/// reads: `session.directory`, `message.data` without the ids it has as columns), holding the
/// assistant message of `opencode-1.18-message-updated.json`, a second model call, a user
/// message and a call an error ended before any token.
fn opencode_store(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.dir.path().join("share").join("opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("opencode.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL,
           `parent_id` text, `slug` text NOT NULL, `directory` text NOT NULL,
           `title` text NOT NULL, `version` text NOT NULL, `time_created` integer NOT NULL,
           `time_updated` integer NOT NULL);
         CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
           `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
           `data` text NOT NULL);",
    )
    .unwrap();
    let sent: Value = serde_json::from_str(&payload("opencode-1.18-message-updated.json")).unwrap();
    let info = &sent["assistant_message"];
    let session = info["sessionID"].as_str().unwrap();
    conn.execute(
        "INSERT INTO session VALUES (?1, 'p', NULL, 's', '/w/app', 't', '1.18.33', 1, 2)",
        [session],
    )
    .unwrap();
    let mut data = info.clone();
    let object = data.as_object_mut().unwrap();
    object.remove("id");
    object.remove("sessionID");
    let mut earlier = data.clone();
    earlier["tokens"] = serde_json::json!({"total": 150, "input": 100, "output": 30,
        "reasoning": 5, "cache": {"write": 10, "read": 5}});
    let user = serde_json::json!({"role": "user", "time": {"created": 1},
        "model": {"providerID": "mock", "modelID": "mock-model"}});
    let mut failed = data.clone();
    failed["tokens"] = serde_json::json!({"total": 0, "input": 0, "output": 0,
        "reasoning": 0, "cache": {"write": 0, "read": 0}});
    failed["error"] = serde_json::json!({"name": "APIError", "data": {"message": "bad"}});
    for (id, at, message) in [
        ("msg_0user", 1, user),
        ("msg_1earlier", 2, earlier),
        (info["id"].as_str().unwrap(), 3, data),
        ("msg_3failed", 4, failed),
    ] {
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, session, at, message.to_string()],
        )
        .unwrap();
    }
    path
}

/// `cmstore import` reads OpenCode's store: each model call's usage once, keyed as the plugin's
/// event keys it, so a call the hook recorded is not counted again (and one imported first is
/// not counted again by the hook); the session gets its folder.
#[test]
fn opencodes_store_is_imported_once_with_what_the_hooks_recorded() {
    let env = TestEnv::new();
    capture(&env, payload("opencode-1.18-message-updated.json"), &[]);
    env.ingest_once();
    let store = opencode_store(&env);
    let out = env.cmd().arg("import").arg(&store).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("2 usage record(s) read, 1 new response row(s), 2 in all"),
        "{stderr}"
    );
    let rows: Vec<(String, i64, String)> = rows3(
        &env,
        "SELECT message_id, input_tokens + output_tokens + cache_read_tokens \
         + cache_write_tokens, origin FROM usage ORDER BY message_id",
    );
    assert_eq!(
        rows,
        [
            ("msg_1earlier".to_string(), 150, "import".to_string()),
            (
                "msg_24f918b3f001r8gZJYulPtvtNA".to_string(),
                123,
                "hook".to_string()
            ),
        ]
    );
    assert_eq!(
        env.int("SELECT reasoning_tokens FROM usage WHERE message_id = 'msg_1earlier'"),
        5
    );
    // Again: nothing new.
    let again = env.cmd().arg("import").arg(&store).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 new response row(s)"));

    // The other order: imported first (the session gets the store's folder), then the hook.
    let first = TestEnv::new();
    let store = opencode_store(&first);
    first.cmd().arg("import").arg(&store).assert().success();
    assert_eq!(
        text(&first, "SELECT cwd FROM sessions").as_deref(),
        Some("/w/app")
    );
    capture(&first, payload("opencode-1.18-message-updated.json"), &[]);
    first.ingest_once();
    assert_eq!(first.int("SELECT count(*) FROM usage"), 2);
}

/// A headless Cline 3.0.65 run's payloads (a run's start, a `run_commands` call and its
/// result, the run's end), captured without flags: one Cline session (its root session id,
/// not the run's task id), the call paired by the model's call id, the run's answer. A call
/// whose command exited 3 is `failed` with that exit code, though Cline calls the tool a
/// success; a run an API error ended is `failed`; a reminder Cline adds to a run is no prompt.
#[test]
fn cline_payloads_are_a_session_with_its_calls_answer_and_failures() {
    let env = TestEnv::new();
    for name in [
        "cline-3.0.65-task-start.json",
        "cline-3.0.65-pre-tool-use.json",
        "cline-3.0.65-post-tool-use.json",
        "cline-3.0.65-task-complete.json",
        "cline-3.0.65-pre-tool-use-exit-3.json",
        "cline-3.0.65-post-tool-use-exit-3.json",
        "cline-3.0.65-task-error.json",
        "cline-3.0.65-session-shutdown.json",
    ] {
        assert_eq!(
            capture(&env, payload(name), &[]),
            serde_json::json!({}),
            "{name}"
        );
    }
    env.ingest_once();
    let events: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT agent, hook_type, session_id FROM events ORDER BY seq",
    );
    let cline =
        |kind: &str, session: &str| ("cline".to_string(), kind.to_string(), session.to_string());
    assert_eq!(
        events,
        [
            cline("SessionStart", "1796630663644_6y40d"),
            cline("PreToolUse", "1796630663644_6y40d"),
            cline("PostToolUse", "1796630663644_6y40d"),
            cline("Stop", "1796630663644_6y40d"),
            cline("PreToolUse", "1796630738917_wsw3e"),
            cline("PostToolUse", "1796630738917_wsw3e"),
            cline("StopFailure", "1796630807429_sxf6o"),
            cline("SessionEnd", "1796630746517_glsaw"),
        ]
    );
    let calls: Vec<(String, String, Option<i64>)> = rows3(
        &env,
        "SELECT tool_calls.tool_name, outcome, json_extract(entry, '$.exitCode') \
         FROM tool_calls JOIN events ON events.id = tool_calls.post_event_id ORDER BY seq",
    );
    assert_eq!(
        calls,
        [
            ("run_commands".to_string(), "succeeded".to_string(), None),
            ("run_commands".to_string(), "failed".to_string(), Some(3)),
        ]
    );
    assert_eq!(
        text(&env, "SELECT response FROM turns WHERE hook_type = 'Stop'").as_deref(),
        Some("Done: ran echo.")
    );
    assert_eq!(
        text(
            &env,
            "SELECT outcome FROM turns WHERE hook_type = 'StopFailure'"
        )
        .as_deref(),
        Some("failed")
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE json_extract(entry, '$.actorType') = 'main'"),
        8
    );
    // A reminder Cline adds to a run is no person's prompt.
    capture(&env, payload("cline-3.0.65-user-prompt-submit.json"), &[]);
    env.ingest_once();
    assert!(text(
        &env,
        "SELECT prompt FROM events WHERE hook_type = 'ModelRequest'"
    )
    .is_some_and(|p| p.starts_with("[SYSTEM]")));
    assert_eq!(env.int("SELECT coalesce(sum(prompts), 0) FROM sessions"), 0);
}

/// In enforce mode a risky command of `run_commands` (each of its command lines read) gets
/// Cline's `cancel` with the reason; Cline has no reply that refuses a prompt.
#[test]
fn cline_is_denied_by_cancelling_the_task() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let mut risky: Value =
        serde_json::from_str(&payload("cline-3.0.65-pre-tool-use.json")).unwrap();
    risky["tool_call"]["input"]["commands"] = serde_json::json!(["echo first", "rm -rf /"]);
    let reply = capture(&env, risky.to_string(), &["--agent", "cline"]);
    assert_eq!(reply["cancel"], true, "{reply}");
    assert!(
        reply["errorMessage"]
            .as_str()
            .is_some_and(|r| r.starts_with("Blocked by cmstore safety gate")),
        "{reply}"
    );
    env.ingest_once();
    assert_eq!(
        text(&env, "SELECT outcome FROM tool_calls").as_deref(),
        Some("denied")
    );
}

/// `cmstore import` reads a Cline session's transcript (a real one of Cline 3.0.65, from a
/// run against the mock): each model call's usage from its `metrics`, the input without its
/// cached parts, keyed by the message id as capture keys it; the session with its folder; a
/// second import adds nothing.
#[test]
fn a_cline_sessions_usage_is_imported_from_its_transcript() {
    let env = TestEnv::new();
    let sessions = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cline-3.0.65/sessions");
    let out = env.cmd().arg("import").arg(&sessions).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<(String, i64, i64)> = rows3(
        &env,
        "SELECT message_id, input_tokens, cache_read_tokens + cache_write_tokens FROM usage \
         ORDER BY ts",
    );
    assert_eq!(
        rows,
        [
            ("msg_IZ00Rss5".to_string(), 1234, 107),
            ("msg_t_00t3Jy".to_string(), 1234, 107),
        ]
    );
    assert_eq!(
        rows3::<String, String, String>(&env, "SELECT session_id, agent, cwd FROM sessions"),
        [(
            "1796632098181_05clx".to_string(),
            "cline".to_string(),
            "/tmp/cline-probe/runs/anth-basic/ws".to_string()
        )]
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("1 session(s) checked against the agent's own totals (Cline 1): equal"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let again = env.cmd().arg("import").arg(&sessions).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 new response row(s)"));

    // A session whose own totals say otherwise is named, with both sums.
    let copy = env.dir.path().join("data/sessions/1796632098181_05clx");
    std::fs::create_dir_all(&copy).unwrap();
    for name in [
        "1796632098181_05clx.json",
        "1796632098181_05clx.messages.json",
    ] {
        let mut text =
            std::fs::read_to_string(sessions.join("1796632098181_05clx").join(name)).unwrap();
        if name == "1796632098181_05clx.json" {
            let mut manifest: Value = serde_json::from_str(&text).unwrap();
            manifest["metadata"]["usage"]["outputTokens"] = Value::from(1);
            text = manifest.to_string();
        }
        std::fs::write(copy.join(name), text).unwrap();
    }
    let other = TestEnv::new();
    let out = other
        .cmd()
        .arg("import")
        .arg(env.dir.path().join("data/sessions"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "  Cline 1796632098181_05clx every model: counted 2468/112/200/14, the agent says \
             2468/1/200/14 (input/output/cache read/cache write)"
        ),
        "{stderr}"
    );
    // Kept: `cmstore usage` compares them whenever asked (the session's whole count, since
    // Cline's totals name no model).
    let check = |env: &TestEnv| {
        let out = env
            .cmd()
            .args(["usage", "--format", "json"])
            .output()
            .unwrap();
        let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
        let row = &rows[0];
        (
            rows.as_array().unwrap().len(),
            row["source"].as_str().map(str::to_string),
            row["model"].is_null(),
            row["verdict"].as_str().map(str::to_string),
            row["output_tokens"].as_i64(),
            row["agent_output_tokens"].as_i64(),
        )
    };
    let cline = Some("cline-session".to_string());
    assert_eq!(
        check(&env),
        (
            1,
            cline.clone(),
            true,
            Some("equal".into()),
            Some(112),
            Some(112)
        )
    );
    assert_eq!(
        check(&other),
        (1, cline, true, Some("differs".into()), Some(112), Some(1))
    );
}

/// Cline shuts a session down only after a run it stopped (the gate's cancel, Ctrl-C), which
/// fires no end of its own: the run is an `interrupted` turn of its prompt, read from the
/// session's files; a run whose file says it completed has its own end and gets none here.
#[test]
fn a_cline_run_stopped_before_its_end_is_an_interrupted_turn() {
    let shutdown = payload("cline-3.0.65-session-shutdown.json");
    let session = "1796630746517_glsaw";
    for (status, turns) in [("running", 1), ("cancelled", 1), ("completed", 0)] {
        let env = TestEnv::new();
        let folder = env.user_home().join(".cline/data/sessions").join(session);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(
            folder.join(format!("{session}.json")),
            serde_json::json!({"session_id": session, "status": status,
                               "model": "claude-sonnet-4-5"})
            .to_string(),
        )
        .unwrap();
        let prompt = serde_json::json!({"id": "u1", "role": "user", "ts": 1,
            "content": [{"type": "text", "text": "<user_input mode=\"act\">clean up</user_input>"}]});
        std::fs::write(
            folder.join(format!("{session}.messages.json")),
            serde_json::json!({"messages": [prompt]}).to_string(),
        )
        .unwrap();
        capture(&env, shutdown.clone(), &[]);
        capture(&env, shutdown.clone(), &[]);
        env.ingest_once();
        assert_eq!(env.int("SELECT count(*) FROM turns"), turns, "{status}");
        if turns == 1 {
            let turn: Vec<(String, String, String)> =
                rows3(&env, "SELECT prompt, outcome, model FROM turns");
            assert_eq!(
                turn,
                [(
                    "clean up".to_string(),
                    "interrupted".to_string(),
                    "claude-sonnet-4-5".to_string()
                )],
                "{status}: one turn, however many times it is told"
            );
        }
    }
}

/// The other order of Cline's two roads: a session imported first, then its run's end told
/// by the hook, which reads the same files: each model call is still one row, and the hook
/// gives the run its turn.
#[test]
fn a_cline_session_imported_before_its_hook_is_counted_once() {
    let env = TestEnv::new();
    let session = "1796632098181_05clx";
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cline-3.0.65/sessions")
        .join(session);
    let sessions = env.user_home().join(".cline/data/sessions");
    std::fs::create_dir_all(sessions.join(session)).unwrap();
    for entry in std::fs::read_dir(&fixture).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), sessions.join(session).join(entry.file_name())).unwrap();
    }
    env.cmd().arg("import").arg(&sessions).assert().success();
    assert_eq!(env.int("SELECT count(*) FROM usage"), 2);
    let mut end: Value = serde_json::from_str(&payload("cline-3.0.65-task-complete.json")).unwrap();
    end["sessionContext"]["rootSessionId"] = Value::from(session);
    // The run began before its first message.
    end["taskId"] = Value::from("conv_1796632098100_abcdefg");
    capture(&env, end.to_string(), &[]);
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM usage"), 2, "each call once");
    assert_eq!(
        text(&env, "SELECT prompt FROM turns").as_deref(),
        Some("SCENARIO:basic t-anth")
    );
    let line = env
        .queue_lines()
        .into_iter()
        .find(|l| l["hookType"] == "Stop")
        .unwrap();
    assert_eq!(line["usage"].as_array().map(Vec::len), Some(2), "{line}");
}

/// An OpenCode store (its tables as 1.18.33 lays them out, parts included) holding one turn of
/// session `ses_t`, written now: the prompt `Run it.`, a `bash` call, the answer `Done.`.
fn opencode_store_with_a_turn(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.dir.path().join("share-t").join("opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("opencode.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE `session` (`id` text PRIMARY KEY, `directory` text NOT NULL);
         CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
           `time_created` integer NOT NULL, `time_updated` integer NOT NULL,
           `data` text NOT NULL);
         CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL,
           `session_id` text NOT NULL, `time_created` integer NOT NULL,
           `time_updated` integer NOT NULL, `data` text NOT NULL);
         INSERT INTO session VALUES ('ses_t', '/w/app');",
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let messages = [
        (
            "msg_u",
            now - 3000,
            serde_json::json!({"role": "user", "time": {"created": now - 3000}}),
        ),
        (
            "msg_a",
            now - 2000,
            serde_json::json!({"role": "assistant", "modelID": "mock-model", "providerID": "mock",
                   "time": {"created": now - 2000, "completed": now - 1000}}),
        ),
    ];
    for (id, at, data) in messages {
        conn.execute(
            "INSERT INTO message VALUES (?1, 'ses_t', ?2, ?2, ?3)",
            rusqlite::params![id, at, data.to_string()],
        )
        .unwrap();
    }
    let parts = [
        (
            "prt_1",
            "msg_u",
            serde_json::json!({"type": "text", "text": "Run it."}),
        ),
        (
            "prt_2",
            "msg_u",
            serde_json::json!({"type": "text", "text": "cmstore: today $1", "synthetic": true}),
        ),
        (
            "prt_3",
            "msg_a",
            serde_json::json!({"type": "tool", "tool": "bash", "callID": "c1",
                   "state": {"status": "completed", "input": {"command": "echo hi"},
                             "output": "hi"}}),
        ),
        (
            "prt_4",
            "msg_a",
            serde_json::json!({"type": "text", "text": "Done."}),
        ),
    ];
    for (i, (id, message, data)) in parts.into_iter().enumerate() {
        conn.execute(
            "INSERT INTO part VALUES (?1, ?2, 'ses_t', ?3, ?3, ?4)",
            rusqlite::params![id, message, now - 3000 + i as i64, data.to_string()],
        )
        .unwrap();
    }
    path
}

/// Issue 37: OpenCode's turns from its store. Its plugin's Stop (`session.idle`) names no
/// turn, so an imported turn and the hooks' row of it are met by their prompt and time: in
/// either order one row, the hooks' fields, the store's id, the turn hooked.
#[test]
fn opencodes_turns_from_its_store_are_the_hooks_turns_whatever_the_order() {
    let hooks = [
        serde_json::json!({"hook_event_name": "chat.message", "cwd": "/w/app", "session_id": "ses_t",
               "prompt": "Run it.", "model": "mock-model", "message_id": "msg_u"}),
        serde_json::json!({"hook_event_name": "session.idle", "cwd": "/w/app", "session_id": "ses_t",
               "prompt": "Run it.", "model": "mock-model", "response": "Done. (hooks)"}),
    ];
    let what = "SELECT turn_id, prompt, response, model, imported FROM turns";
    let mut seen = Vec::new();
    for import_first in [false, true] {
        let env = TestEnv::new();
        let store = opencode_store_with_a_turn(&env);
        for payload in &hooks {
            capture(&env, payload.to_string(), &["--agent", "opencode"]);
        }
        let import = || env.cmd().arg("import").arg(&store).assert().success();
        if import_first {
            import();
            assert_eq!(env.int("SELECT count(*) FROM turns WHERE imported = 1"), 1);
        }
        env.ingest_once();
        if !import_first {
            import();
        }
        import();
        let rows: Vec<(String, String, String)> = rows3(
            &env,
            "SELECT turn_id, prompt, response || ' / ' || model || ' / ' || imported FROM turns",
        );
        assert_eq!(
            env.int("SELECT hooked_turns FROM v_coverage WHERE session_id = 'ses_t'"),
            1,
            "{what}"
        );
        // The store's call, by its `callID`: the hooks saw none here (no tool payload sent).
        assert_eq!(
            env.int("SELECT missed_tool_calls FROM v_coverage WHERE session_id = 'ses_t'"),
            1
        );
        seen.push(rows);
    }
    assert_eq!(seen[0], seen[1], "either order");
    assert_eq!(
        seen[0],
        [(
            "msg_u".to_string(),
            "Run it.".to_string(),
            "Done. (hooks) / mock-model / 0".to_string()
        )]
    );
}

/// Runs `capture --agent windsurf --event <event>` in `dir` on a Windsurf fixture; Windsurf reads
/// no reply, so stdout stays empty.
fn windsurf(env: &TestEnv, name: &str, dir: &std::path::Path) -> std::process::Output {
    let event = serde_json::from_str::<Value>(&payload(name)).unwrap()["agent_action_name"]
        .as_str()
        .unwrap()
        .to_string();
    env.cmd()
        .current_dir(dir)
        .args(["capture", "--agent", "windsurf", "--event", &event])
        .write_stdin(payload(name))
        .output()
        .unwrap()
}

/// A session of Devin Desktop's Cascade, as its hooks logged it (docs/agents.md, "Windsurf"):
/// the prompt, the calls paired without ids by their arguments, the turn's answer under its
/// `execution_id`, the folder of the hook's process where the payload names none; the MCP and
/// worktree payloads are composed from Windsurf's documentation.
#[test]
fn windsurf_actions_are_a_session_with_its_prompt_calls_and_answer() {
    let env = TestEnv::new();
    let workspace = tempfile::tempdir().unwrap();
    let order = [
        "windsurf-devin-2026-06-pre-user-prompt.json",
        "windsurf-devin-2026-06-pre-run-command.json",
        "windsurf-devin-2026-06-pre-read-code.json",
        "windsurf-devin-2026-06-post-read-code.json",
        "windsurf-devin-2026-06-post-run-command.json",
        "windsurf-devin-2026-06-pre-write-code.json",
        "windsurf-devin-2026-06-post-write-code.json",
        "windsurf-doc-pre-mcp-tool-use.json",
        "windsurf-doc-post-mcp-tool-use.json",
        "windsurf-devin-2026-06-pre-read-code-denied.json",
        "windsurf-devin-2026-06-pre-run-command-denied.json",
        "windsurf-devin-2026-06-post-cascade-response.json",
        "windsurf-doc-post-setup-worktree.json",
    ];
    for name in order {
        let out = windsurf(&env, name, workspace.path());
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{name}");
    }
    // Told from the payload alone.
    let sniffed = env
        .cmd()
        .arg("capture")
        .write_stdin(payload(
            "windsurf-devin-2026-06-post-cascade-response-with-transcript.json",
        ))
        .output()
        .unwrap();
    assert_eq!(sniffed.status.code(), Some(0));
    assert!(sniffed.stdout.is_empty());
    env.ingest_once();

    let trajectory = "64944513-a64d-410b-af09-426251271f8b";
    assert_eq!(
        env.int(&format!(
            "SELECT count(*) FROM events WHERE agent = 'windsurf' AND session_id = '{trajectory}' \
             AND model = 'SWE-1.6 Slow'"
        )),
        14
    );
    let prompt = text(
        &env,
        "SELECT prompt FROM events WHERE hook_type = 'UserPromptSubmit'",
    );
    assert!(prompt
        .unwrap()
        .starts_with("This is a sanctioned diagnostic test of MY OWN editor hooks"));
    // The prompt names no folder: the hook's, where Windsurf runs it (the workspace's root).
    assert_eq!(
        text(
            &env,
            "SELECT cwd FROM events WHERE hook_type = 'UserPromptSubmit'"
        ),
        Some(workspace.path().display().to_string())
    );
    assert_eq!(
        text(
            &env,
            "SELECT cwd FROM events WHERE hook_type = 'PreToolUse' ORDER BY ts LIMIT 1"
        )
        .as_deref(),
        Some("/Users/isolomatov/Sources/5-min-demo/spring-boot-react-mysql")
    );
    let calls: Vec<(String, Option<String>, String)> = rows3(
        &env,
        "SELECT tool_name, outcome, input FROM tool_calls ORDER BY start_ts, rowid",
    );
    let calls: Vec<(&str, Option<&str>)> = calls
        .iter()
        .map(|(tool, outcome, _)| (tool.as_str(), outcome.as_deref()))
        .collect();
    // The two calls another hook blocked get no post_* action: still in flight.
    assert_eq!(
        calls,
        [
            ("run_command", Some("succeeded")),
            ("read_code", Some("succeeded")),
            ("write_code", Some("succeeded")),
            ("mcp__github__create_issue", Some("succeeded")),
            ("read_code", None),
            ("run_command", None),
        ]
    );
    assert_eq!(
        text(
            &env,
            "SELECT json_extract(entry, '$.toolResponse') FROM events \
             WHERE event = 'post_mcp_tool_use'"
        )
        .as_deref(),
        Some("Created issue #42: Bug report")
    );
    let (turn, prompt, response): (String, String, String) = rows3(
        &env,
        "SELECT turn_id, prompt, response FROM turns WHERE hook_type = 'Stop'",
    )
    .remove(0);
    assert_eq!(turn, "0b8ee740-32eb-4415-a31b-6da673e21988");
    assert!(prompt.starts_with("This is a sanctioned diagnostic test"));
    assert!(response.starts_with("### Planner Response"), "{response}");
    assert_eq!(
        env.int("SELECT count(*) FROM turns WHERE hook_type = 'Stop'"),
        1
    );
    // Actions with no canonical meaning keep their own names.
    assert_eq!(
        text(
            &env,
            "SELECT cwd FROM events WHERE hook_type = 'post_setup_worktree'"
        )
        .as_deref(),
        Some("/Users/u/.windsurf/worktrees/my-cool-repo/cascade-1")
    );
    assert_eq!(
        text(
            &env,
            "SELECT agent || ' ' || json_extract(entry, '$.transcriptPath') FROM events \
             WHERE hook_type = 'post_cascade_response_with_transcript'"
        )
        .as_deref(),
        Some(
            "windsurf /Users/isolomatov/.windsurf/transcripts/\
             64944513-a64d-410b-af09-426251271f8b.jsonl"
        )
    );
}

/// Windsurf reads only the exit code: in enforce mode a risky command's `pre_run_command`
/// exits 2 with the reason on stderr and nothing on stdout; the same command in audit mode,
/// and every other action, exits 0 silently.
#[test]
fn windsurf_is_denied_by_exit_code_2_with_the_reason_on_stderr() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let mut risky: Value =
        serde_json::from_str(&payload("windsurf-devin-2026-06-pre-run-command.json")).unwrap();
    risky["tool_info"]["command_line"] = Value::from("rm -rf /");
    let run = |env: &TestEnv| {
        env.cmd()
            .current_dir(dir.path())
            .args(["capture", "--agent", "windsurf"])
            .write_stdin(risky.to_string())
            .output()
            .unwrap()
    };
    let audited = run(&env);
    assert_eq!(audited.status.code(), Some(0));
    assert!(audited.stdout.is_empty() && audited.stderr.is_empty());

    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let denied = run(&env);
    assert_eq!(denied.status.code(), Some(2));
    assert!(denied.stdout.is_empty(), "{denied:?}");
    let reason = String::from_utf8(denied.stderr).unwrap();
    assert!(reason.contains("rm -rf"), "{reason}");
    assert_eq!(reason.lines().count(), 1, "{reason}");
    let read = windsurf(
        &env,
        "windsurf-devin-2026-06-pre-read-code.json",
        dir.path(),
    );
    assert_eq!(read.status.code(), Some(0));
    assert!(read.stdout.is_empty());
    env.ingest_once();
    assert_eq!(
        env.int(
            "SELECT count(*) FROM events WHERE hook_type = 'PreToolUse' \
             AND decision = 'deny' AND tool_name = 'run_command'"
        ),
        1
    );
    assert_eq!(
        text(
            &env,
            "SELECT outcome FROM tool_calls WHERE decision = 'deny'"
        )
        .as_deref(),
        Some("denied")
    );
}

/// Runs `capture` (`--agent goose` unless `sniff`) in `dir` on the Goose fixture `name`.
fn goose(env: &TestEnv, name: &str, dir: &std::path::Path, sniff: bool) -> std::process::Output {
    let mut cmd = env.cmd();
    cmd.current_dir(dir).arg("capture");
    if !sniff {
        cmd.args(["--agent", "goose"]);
    }
    cmd.write_stdin(payload(name)).output().unwrap()
}

/// A session of Goose 1.52.0 as its hooks gave it in a run here (docs/agents.md, "Goose"):
/// every event one row under `goose`, nothing printed (Goose counts even `{}` as a failed hook),
/// the folder of the hook's process where a payload names none, the call paired by its id, the
/// turn's prompt (`message`) and answer, and the tool events' repeats under their own names.
#[test]
fn goose_events_are_a_session_with_its_prompt_call_and_answer() {
    let env = TestEnv::new();
    let project = tempfile::tempdir().unwrap();
    let order = [
        "goose-1.52-session-start.json",
        "goose-1.52-user-prompt-submit.json",
        "goose-1.52-pre-tool-use.json",
        "goose-1.52-pre-tool-use-result.json",
        "goose-1.52-before-shell-execution.json",
        "goose-1.52-post-tool-use.json",
        "goose-1.52-after-shell-execution.json",
        "goose-1.52-stop.json",
        "goose-1.52-session-end.json",
    ];
    for (n, name) in order.into_iter().enumerate() {
        let out = goose(&env, name, project.path(), n % 2 == 1);
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{name}: {out:?}"
        );
    }
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE agent = 'goose' AND session_id = '20261208_1'"),
        9
    );
    assert_eq!(
        text(
            &env,
            "SELECT cwd FROM events WHERE hook_type = 'UserPromptSubmit'"
        ),
        Some(project.path().display().to_string())
    );
    assert_eq!(
        text(
            &env,
            "SELECT cwd FROM events WHERE hook_type = 'PreToolUse'"
        )
        .as_deref(),
        Some("/tmp/goose-research/run/r1/proj")
    );
    let calls: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT tool_name, outcome, tool_call_id FROM tool_calls",
    );
    assert_eq!(
        calls,
        [(
            "shell".to_string(),
            "succeeded".to_string(),
            "call_mock_1".to_string()
        )]
    );
    assert_eq!(
        text(&env, "SELECT prompt || ' / ' || response FROM turns").as_deref(),
        Some("please run echo / All done: the mock says hello.")
    );
    let own: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT hook_type, coalesce(tool_name, ''), coalesce(json_extract(entry, '$.toolInput'), '') \
         FROM events WHERE hook_type NOT IN ('SessionStart', 'UserPromptSubmit', 'PreToolUse', \
         'PostToolUse', 'Stop', 'SessionEnd') ORDER BY seq",
    );
    let own: Vec<&str> = own.iter().map(|(kind, _, _)| kind.as_str()).collect();
    assert_eq!(
        own,
        [
            "PreToolUseResult",
            "BeforeShellExecution",
            "AfterShellExecution"
        ]
    );
}

/// A call another of Goose's plugins refused ends with Goose's `PreToolUseResult` (no
/// PostToolUse follows): `refused`, the reason Goose gave kept on the line.
#[test]
fn a_goose_call_another_plugin_refused_is_refused() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    let result: Value =
        serde_json::from_str(&payload("goose-1.52-pre-tool-use-result-denied.json")).unwrap();
    let mut pre: Value = serde_json::from_str(&payload("goose-1.52-pre-tool-use.json")).unwrap();
    for key in ["tool_call_id", "tool_input", "working_dir"] {
        pre[key] = result[key].clone();
    }
    for event in [pre, result] {
        let out = env
            .cmd()
            .current_dir(dir.path())
            .args(["capture", "--agent", "goose"])
            .write_stdin(event.to_string())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty());
    }
    env.ingest_once();
    assert_eq!(
        text(
            &env,
            "SELECT outcome FROM tool_calls WHERE tool_call_id = 'call_mock_0'"
        )
        .as_deref(),
        Some("refused")
    );
    assert_eq!(
        text(
            &env,
            "SELECT event || ': ' || json_extract(entry, '$.reason') FROM events \
             WHERE hook_type = 'PermissionDenied'"
        )
        .as_deref(),
        Some("PreToolUseResult: cmstore probe denies this")
    );
}

/// Goose reads only the exit code: in enforce mode a risky `shell` call's PreToolUse exits 2
/// with the reason on stderr and nothing on stdout; a failed call (PostToolUseFailure) is
/// failed.
#[test]
fn goose_is_denied_by_exit_code_2_with_the_reason_on_stderr() {
    let env = TestEnv::new();
    let dir = tempfile::tempdir().unwrap();
    refused_by_exit_code_2(&env, "goose", "goose-1.52-pre-tool-use.json");

    let failed = goose(
        &env,
        "goose-1.52-post-tool-use-failure-write-edit-fail.json",
        dir.path(),
        false,
    );
    assert_eq!(failed.status.code(), Some(0));
    assert!(failed.stdout.is_empty());
    env.ingest_once();
    assert_eq!(
        text(
            &env,
            "SELECT outcome FROM tool_calls WHERE decision = 'deny'"
        )
        .as_deref(),
        Some("denied")
    );
    assert_eq!(
        text(
            &env,
            "SELECT outcome FROM tool_calls WHERE tool_call_id = 'call_mock_2'"
        )
        .as_deref(),
        Some("failed")
    );
}

/// Goose's store where Goose keeps it (`~/.local/share/goose/sessions/sessions.db`), with the
/// tables and columns `cmstore import` reads, holding the rows of a run of Goose 1.52.0 (a
/// prompt, Goose's hidden turn context, a `shell` call and its result, the answer; each model
/// call's usage with the cache inside its input).
fn goose_store(env: &TestEnv) -> std::path::PathBuf {
    let dir = env.user_home().join(".local/share/goose/sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sessions.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE sessions (id TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '',
           session_type TEXT NOT NULL DEFAULT 'user', working_dir TEXT NOT NULL,
           accumulated_total_tokens INTEGER, accumulated_input_tokens INTEGER,
           accumulated_output_tokens INTEGER, accumulated_cache_read_tokens INTEGER,
           accumulated_cache_write_tokens INTEGER, provider_name TEXT,
           model_config_json TEXT, parent_session_id TEXT);
         CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT,
           session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL,
           content_json TEXT NOT NULL, created_timestamp INTEGER NOT NULL,
           timestamp TIMESTAMP DEFAULT CURRENT_TIMESTAMP, tokens INTEGER, metadata_json TEXT);
         INSERT INTO sessions (id, name, working_dir, accumulated_total_tokens,
           accumulated_input_tokens, accumulated_output_tokens, accumulated_cache_read_tokens,
           accumulated_cache_write_tokens, provider_name, model_config_json)
         VALUES ('20261208_1', 'All done', '/w/app', 254, 240, 14, 40, 10, 'openai',
           '{\"model_name\":\"mock-model\",\"temperature\":null}');",
    )
    .unwrap();
    let usage = serde_json::json!({"userVisible": true, "agentVisible": true,
        "inference": {"provider": "openai", "requestedModel": "mock-model"},
        "usage": {"inputTokens": 120, "outputTokens": 7, "totalTokens": 127,
                  "cacheReadTokens": 20, "cacheWriteTokens": 5}});
    let seen = serde_json::json!({"userVisible": true, "agentVisible": true});
    let rows = [
        (
            "msg_39d3b34b",
            "user",
            serde_json::json!([{"type": "text", "text": "usage"}]),
            seen.clone(),
        ),
        (
            "msg_55938d74",
            "user",
            serde_json::json!([{"type": "text", "text": "<turn-context>\n</turn-context>"}]),
            serde_json::json!({"userVisible": false, "agentVisible": true, "turnContext": true}),
        ),
        (
            "chatcmpl-mock1",
            "assistant",
            serde_json::json!([{"type": "toolRequest", "id": "call_mock_0", "toolCall":
                {"status": "success", "value": {"name": "shell",
                 "arguments": {"command": "echo u"}}}}]),
            usage.clone(),
        ),
        (
            "msg_d8af37ff",
            "user",
            serde_json::json!([{"type": "toolResponse", "id": "call_mock_0", "toolResult":
                {"status": "success", "value": {"content": [{"type": "text", "text": "u"}],
                 "structuredContent": {"stdout": "u", "stderr": "", "exit_code": 0},
                 "isError": false}}}]),
            seen,
        ),
        (
            "chatcmpl-mock2",
            "assistant",
            serde_json::json!([{"type": "text", "text": "All done: the mock says hello."}]),
            usage,
        ),
    ];
    for (id, role, content, metadata) in rows {
        conn.execute(
            "INSERT INTO messages (message_id, session_id, role, content_json,
               created_timestamp, metadata_json) VALUES (?1, '20261208_1', ?2, ?3, 1796689505, ?4)",
            rusqlite::params![id, role, content.to_string(), metadata.to_string()],
        )
        .unwrap();
    }
    path
}

/// `cmstore import`, given no path, reads Goose's store where Goose keeps it: the turn with its
/// prompt, answer and call, each model call's usage without the cache in its input, the
/// session's folder, Goose's own totals agreeing; a second import adds nothing.
#[test]
fn goose_store_is_imported_from_its_place_once() {
    let env = TestEnv::new();
    goose_store(&env);
    let import = || {
        let out = env.cmd().arg("import").output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let said = import();
    assert!(said.contains("(Goose 1): equal"), "{said}");
    assert!(said.contains("2 new response row(s)"), "{said}");
    assert_eq!(
        text(
            &env,
            "SELECT prompt || ' / ' || response || ' / ' || tool_call_count FROM turns"
        )
        .as_deref(),
        Some("usage / All done: the mock says hello. / 1")
    );
    let usage: Vec<(String, i64, String)> = rows3(
        &env,
        "SELECT message_id, input_tokens, model FROM usage WHERE agent = 'goose' ORDER BY 1",
    );
    assert_eq!(
        usage,
        [
            ("chatcmpl-mock1".to_string(), 95, "mock-model".to_string()),
            ("chatcmpl-mock2".to_string(), 95, "mock-model".to_string())
        ]
    );
    assert_eq!(
        text(&env, "SELECT agent || ' ' || cwd FROM sessions").as_deref(),
        Some("goose /w/app")
    );
    assert_eq!(
        text(
            &env,
            "SELECT transcript_tool_calls || ' ' || missed_tool_calls FROM v_coverage"
        )
        .as_deref(),
        Some("1 1")
    );
    let again = import();
    assert!(again.contains("0 new response row(s)"), "{again}");
    assert_eq!(env.int("SELECT count(*) FROM turns"), 1);
}

/// Runs `capture` (`--agent kimi` unless `sniff`) on the Kimi Code fixture `name`.
fn kimi(env: &TestEnv, name: &str, sniff: bool) -> std::process::Output {
    let mut cmd = env.cmd();
    cmd.arg("capture");
    if !sniff {
        cmd.args(["--agent", "kimi"]);
    }
    cmd.write_stdin(payload(name)).output().unwrap()
}

/// A session of Kimi Code 2.1.0 as its hooks gave it in runs here (docs/agents.md, "Kimi
/// Code"): every event one row under `kimi`, nothing printed (Kimi adds a prompt's stdout to
/// the conversation, `{}` too), the prompt's text from its content parts, the calls paired by
/// their ids, a failed command's exit code from its error, the turn with its prompt.
#[test]
fn kimi_events_are_a_session_with_its_prompt_and_calls() {
    let env = TestEnv::new();
    let order = [
        "kimi-2.1-session-start.json",
        "kimi-2.1-user-prompt-submit.json",
        "kimi-2.1-turn-started.json",
        "kimi-2.1-pre-tool-use.json",
        "kimi-2.1-post-tool-use.json",
        "kimi-2.1-pre-tool-use-exit-3.json",
        "kimi-2.1-post-tool-use-failure.json",
        "kimi-2.1-stop.json",
    ];
    for (n, name) in order.into_iter().enumerate() {
        let out = kimi(&env, name, n % 2 == 1);
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{name}: {out:?}"
        );
    }
    env.ingest_once();
    let session = "session_bf2fa782-78ab-4d6a-a584-65811bf891e8";
    assert_eq!(
        env.int(&format!(
            "SELECT count(*) FROM events WHERE agent = 'kimi' AND session_id = '{session}'"
        )),
        8
    );
    assert_eq!(
        text(
            &env,
            "SELECT prompt FROM events WHERE hook_type = 'UserPromptSubmit'"
        )
        .as_deref(),
        Some("say hello")
    );
    let calls: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT tool_call_id, outcome, input FROM tool_calls ORDER BY start_ts, rowid",
    );
    let calls: Vec<(&str, &str)> = calls
        .iter()
        .map(|(id, outcome, _)| (id.as_str(), outcome.as_str()))
        .collect();
    assert_eq!(
        calls,
        [("call_mock_1", "succeeded"), ("call_mock_2", "failed")]
    );
    assert_eq!(
        env.int(
            "SELECT json_extract(entry, '$.exitCode') FROM events \
             WHERE hook_type = 'PostToolUseFailure'"
        ),
        3
    );
    assert_eq!(
        text(&env, "SELECT prompt FROM turns WHERE hook_type = 'Stop'").as_deref(),
        Some("say hello")
    );
    // A turn that ended on the provider's error keeps it.
    let failed = kimi(&env, "kimi-2.1-stop-failure.json", false);
    assert!(failed.status.success() && failed.stdout.is_empty());
    env.ingest_once();
    assert_eq!(
        text(
            &env,
            "SELECT json_extract(entry, '$.error.name') || ': ' || \
             json_extract(entry, '$.error.message') FROM events WHERE hook_type = 'StopFailure'"
        )
        .as_deref(),
        Some("APIStatusError: 400 mock bad request")
    );
}

/// Kimi Code reads the exit code: in enforce mode a risky `Bash` call's PreToolUse exits 2
/// with the reason on stderr and nothing on stdout.
#[test]
fn kimi_is_denied_by_exit_code_2_with_the_reason_on_stderr() {
    let env = TestEnv::new();
    refused_by_exit_code_2(&env, "kimi", "kimi-2.1-pre-tool-use.json");
}

/// In enforce mode, `agent`'s PreToolUse fixture `name` with its command made `rm -rf /`
/// exits 2 with the reason, one line, on stderr and nothing on stdout.
fn refused_by_exit_code_2(env: &TestEnv, agent: &str, name: &str) {
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let mut risky: Value = serde_json::from_str(&payload(name)).unwrap();
    risky["tool_input"]["command"] = Value::from("rm -rf /");
    let denied = env
        .cmd()
        .args(["capture", "--agent", agent])
        .write_stdin(risky.to_string())
        .output()
        .unwrap();
    assert_eq!(denied.status.code(), Some(2), "{agent}");
    assert!(denied.stdout.is_empty(), "{agent}: {denied:?}");
    let reason = String::from_utf8(denied.stderr).unwrap();
    assert!(reason.contains("rm -rf"), "{agent}: {reason}");
    assert_eq!(reason.lines().count(), 1, "{agent}: {reason}");
}

/// `cmstore import`, given no path, reads Kimi Code's record logs where Kimi keeps them
/// (`~/.kimi-code/sessions/…/agents/main/wire.jsonl`, a log of a 2.1.0 run): the turn with its
/// prompt, answer, model and calls, each model call's usage (the cache apart, as Kimi counts
/// it), the session's folder from its `state.json`; a second import adds nothing.
#[test]
fn kimi_logs_are_imported_from_their_place_once() {
    let env = TestEnv::new();
    let session = "session_5f86d9d9-a0a8-4461-9c4a-52e37aa3be5b";
    let dir = env
        .user_home()
        .join(".kimi-code/sessions/wd_app_3775bcccaa80")
        .join(session);
    std::fs::create_dir_all(dir.join("agents/main")).unwrap();
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kimi-2.1/wire.jsonl");
    std::fs::copy(fixture, dir.join("agents/main/wire.jsonl")).unwrap();
    std::fs::write(
        dir.join("state.json"),
        format!(r#"{{"id":"{session}","version":2,"cwd":"/w/app"}}"#),
    )
    .unwrap();
    let import = || {
        let out = env.cmd().arg("import").output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let said = import();
    assert!(said.contains("4 new response row(s)"), "{said}");
    assert_eq!(
        text(
            &env,
            "SELECT prompt || ' / ' || response || ' / ' || model || ' / ' || tool_call_count \
             FROM turns"
        )
        .as_deref(),
        Some("run the three steps / All three steps are done. / claude-sonnet-4-5 / 3")
    );
    let usage: Vec<(String, i64, String)> = rows3(
        &env,
        "SELECT message_id, input_tokens, model FROM usage ORDER BY 1",
    );
    assert_eq!(
        usage
            .iter()
            .map(|(id, input, _)| (id.as_str(), *input))
            .collect::<Vec<_>>(),
        [
            ("msg_mock_0", 3),
            ("msg_mock_1", 4),
            ("msg_mock_2", 5),
            ("msg_mock_3", 6)
        ]
    );
    assert!(usage
        .iter()
        .all(|(_, _, model)| model == "claude-sonnet-4-5"));
    assert_eq!(
        text(&env, "SELECT agent || ' ' || cwd FROM sessions").as_deref(),
        Some("kimi /w/app")
    );
    assert_eq!(
        text(
            &env,
            "SELECT transcript_tool_calls || ' ' || missed_tool_calls FROM v_coverage"
        )
        .as_deref(),
        Some("3 3")
    );
    let again = import();
    assert!(again.contains("0 new response row(s)"), "{again}");
    assert_eq!(env.int("SELECT count(*) FROM turns"), 1);
}

/// Runs `capture --agent kiro` on `stdin` with `KIRO_SESSION_ID` set as Kiro sets it.
fn kiro(env: &TestEnv, stdin: String, session: Option<&str>) -> std::process::Output {
    let mut cmd = env.cmd();
    if let Some(session) = session {
        cmd.env("KIRO_SESSION_ID", session);
    }
    cmd.args(["capture", "--agent", "kiro"])
        .write_stdin(stdin)
        .output()
        .unwrap()
}

/// A `kiro-cli chat --no-interactive` run as its hooks logged it (Kiro 2.16, docs/agents.md,
/// "Kiro"): its payloads name no session, `KIRO_SESSION_ID` does; the shell call is paired
/// with its exit code, the turn has its prompt and answer; a TUI payload's own `session_id`
/// wins, and a payload without `--agent` is told by its camelCase trigger.
#[test]
fn kiro_hooks_are_a_session_with_its_prompt_call_and_answer() {
    let env = TestEnv::new();
    let session = "2d7f6a1e-9c3b-4e8a-b1f0-5a6c7d8e9f01";
    for name in [
        "kiro-2.16-agent-spawn.json",
        "kiro-2.16-user-prompt-submit.json",
        "kiro-2.16-pre-tool-use.json",
        "kiro-2.16-post-tool-use.json",
        "kiro-2.16-stop.json",
    ] {
        let out = kiro(&env, payload(name), Some(session));
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{name}: {out:?}"
        );
    }
    let tui = kiro(
        &env,
        payload("kiro-2.2-agent-spawn-tui.json"),
        Some(session),
    );
    assert_eq!(tui.status.code(), Some(0));
    env.cmd()
        .arg("capture")
        .write_stdin(payload("kiro-2.16-stop.json"))
        .assert()
        .success()
        .stdout("");
    env.ingest_once();

    let kinds: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT hook_type, coalesce(session_id, '-'), agent FROM events ORDER BY ts, rowid",
    );
    let kind = |t: &str, s: &str| (t.to_string(), s.to_string(), "kiro".to_string());
    assert_eq!(
        kinds,
        [
            kind("SessionStart", session),
            kind("UserPromptSubmit", session),
            kind("PreToolUse", session),
            kind("PostToolUse", session),
            kind("Stop", session),
            kind("SessionStart", "c186a259-e55f-4572-abc7-bd3697cfcfb1"),
            kind("Stop", "-"),
        ]
    );
    let calls: Vec<(String, String, i64)> = rows3(
        &env,
        "SELECT tool_name, outcome, (SELECT json_extract(entry, '$.exitCode') FROM events \
         WHERE id = post_event_id) FROM tool_calls",
    );
    assert_eq!(
        calls,
        [("execute_bash".to_string(), "succeeded".to_string(), 0)]
    );
    assert_eq!(
        text(
            &env,
            "SELECT json_extract(entry, '$.toolResponse') FROM events WHERE hook_type = 'PostToolUse'"
        )
        .as_deref(),
        Some("repro\n")
    );
    assert_eq!(
        text(
            &env,
            &format!(
                "SELECT prompt || ' / ' || response FROM turns WHERE session_id = '{session}'"
            )
        )
        .as_deref(),
        Some("Run exactly this command and nothing else: echo repro / Output: `repro`")
    );
}

/// Kiro reads no JSON: a session start's or a prompt's context is plain text on stdout, a
/// tool call the gate denies is exit 2 with the reason on stderr, and a failed command's
/// `exit_status` fails its call.
#[test]
fn kiro_gets_context_as_text_and_a_deny_as_exit_code_2() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("session-context.txt"), "Project: demo\n").unwrap();
    let spawn = kiro(&env, payload("kiro-2.2-agent-spawn-tui.json"), None);
    assert_eq!(spawn.status.code(), Some(0));
    assert_eq!(String::from_utf8(spawn.stdout).unwrap(), "Project: demo\n");
    let prompt = kiro(
        &env,
        payload("kiro-2.16-user-prompt-submit.json"),
        Some("s"),
    );
    assert_eq!(String::from_utf8(prompt.stdout).unwrap(), "Project: demo\n");

    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let mut risky: Value = serde_json::from_str(&payload("kiro-2.16-pre-tool-use.json")).unwrap();
    risky["tool_input"]["command"] = Value::from("rm -rf /");
    let denied = kiro(&env, risky.to_string(), Some("s"));
    assert_eq!(denied.status.code(), Some(2));
    assert!(denied.stdout.is_empty());
    let reason = String::from_utf8(denied.stderr).unwrap();
    assert!(reason.contains("rm -rf"), "{reason}");

    let mut failed: Value = serde_json::from_str(&payload("kiro-2.16-post-tool-use.json")).unwrap();
    failed["tool_response"]["result"][0] =
        serde_json::json!({"exit_status": "1", "stdout": "", "stderr": "boom"});
    assert!(kiro(&env, failed.to_string(), Some("s")).status.success());
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE decision = 'deny' AND agent = 'kiro'"),
        1
    );
    assert_eq!(
        env.int(
            "SELECT json_extract(entry, '$.exitCode') FROM events \
             WHERE hook_type = 'PostToolUse' AND json_extract(entry, '$.toolFailed')"
        ),
        1
    );
}

/// Kiro's standalone hook files (CLI 3, IDE 1.x; what `hooks install --agent kiro` writes):
/// PascalCase triggers, `sess_` session ids, an IDE command's result as text ending in its
/// exit code, a Stop with no answer.
#[test]
fn kiro_hook_files_payloads_are_read() {
    let env = TestEnv::new();
    for name in [
        "kiro-3.0-session-start.json",
        "kiro-3.0-user-prompt-submit.json",
        "kiro-ide-1.0-post-tool-use.json",
        "kiro-3.0-stop.json",
    ] {
        let out = kiro(&env, payload(name), None);
        assert_eq!(out.status.code(), Some(0), "{name}");
        assert!(out.stdout.is_empty(), "{name}");
    }
    env.ingest_once();
    let session = "sess_5e748cf0-2069-4448-b1f7-35a1e42ad9b3";
    let kinds: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT hook_type, session_id, agent FROM events ORDER BY ts, rowid",
    );
    let kind = |t: &str, s: &str| (t.to_string(), s.to_string(), "kiro".to_string());
    assert_eq!(
        kinds,
        [
            kind("SessionStart", "sess_cf14f65e-2c1d-4b7a-9e3f-6a8b0c2d4e51"),
            kind("UserPromptSubmit", session),
            kind("PostToolUse", session),
            kind("Stop", session),
        ]
    );
    assert_eq!(
        env.int(
            "SELECT json_extract(entry, '$.exitCode') FROM events WHERE hook_type = 'PostToolUse'"
        ),
        0
    );
    assert_eq!(
        env.int(&format!(
            "SELECT count(*) FROM turns WHERE session_id = '{session}' AND response IS NULL"
        )),
        1
    );
}

/// Qoder CLI's hooks send Claude Code's payloads (composed from its published package,
/// docs/agents.md, "Qoder CLI"): told apart by a transcript under `~/.qoder/`, its call paired
/// by id, its turn ended with its answer, and denied in Claude Code's shape.
#[test]
fn qoder_payloads_are_claude_codes_under_its_own_name() {
    let env = TestEnv::new();
    // Its transcript, Claude Code's lines, where the payloads name it.
    let session = "7e0c2f4a-1b3d-4c5e-8f9a-0b1c2d3e4f50";
    let folder = env.user_home().join(".qoder/projects/-home-u-shop");
    std::fs::create_dir_all(&folder).unwrap();
    let transcript = folder.join(format!("{session}.jsonl"));
    let line = |kind: &str, uuid: &str, message: Value| {
        serde_json::json!({"type": kind, "uuid": uuid, "sessionId": session,
            "cwd": "/home/u/shop", "timestamp": "2026-12-07T10:00:00.000Z", "message": message})
        .to_string()
    };
    let lines = [
        line(
            "user",
            "u1",
            serde_json::json!({"role": "user", "content": "run the tests"}),
        ),
        line(
            "assistant",
            "a1",
            serde_json::json!({"id": "msg_1", "role": "assistant", "model": "auto",
                "content": [{"type": "text", "text": "All 12 tests pass."}],
                "usage": {"input_tokens": 10, "output_tokens": 5}}),
        ),
    ];
    std::fs::write(&transcript, lines.join("\n") + "\n").unwrap();
    for name in [
        "qoder-1.1-session-start.json",
        "qoder-1.1-user-prompt-submit.json",
        "qoder-1.1-pre-tool-use.json",
        "qoder-1.1-post-tool-use.json",
        "qoder-1.1-stop.json",
    ] {
        let mut event: Value = serde_json::from_str(&payload(name)).unwrap();
        event["transcript_path"] = Value::from(transcript.display().to_string());
        let reply = capture(&env, event.to_string(), &[]);
        assert!(reply.get("permissionDecision").is_none(), "{name}: {reply}");
    }
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE agent = 'qoder'"),
        5
    );
    let calls: Vec<(String, String, String)> = rows3(
        &env,
        "SELECT tool_name, outcome, tool_call_id FROM tool_calls",
    );
    assert_eq!(
        calls,
        [(
            "Bash".to_string(),
            "succeeded".to_string(),
            "toolu_01Qd7".to_string()
        )]
    );
    assert_eq!(
        text(&env, "SELECT prompt || ' / ' || response FROM turns").as_deref(),
        Some("run the tests / All 12 tests pass.")
    );

    std::fs::write(env.home().join("cmstore.toml"), "mode = \"enforce\"\n").unwrap();
    let mut risky: Value = serde_json::from_str(&payload("qoder-1.1-pre-tool-use.json")).unwrap();
    risky["tool_input"]["command"] = Value::from("rm -rf /");
    let reply = capture(&env, risky.to_string(), &["--agent", "qoder"]);
    assert_eq!(
        reply["hookSpecificOutput"]["permissionDecision"], "deny",
        "{reply}"
    );
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "PreToolUse");
}
