//! `cmstore capture`: every dialect, every reply shape, bad input, concurrency.

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::{capture, one_json_object, payload, read_lines, real_fixtures, TestEnv};

fn last_line(env: &TestEnv) -> Value {
    env.queue_lines().pop().expect("a queue line")
}

#[test]
fn every_real_claude_code_payload_is_recorded_with_its_canonical_type() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    let mut runs = 0;
    for source in fs::read_dir(real.join("claude-code")).unwrap() {
        let source = source.unwrap().path();
        if !source.is_dir()
            || !source
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("hooks-")
        {
            continue;
        }
        for file in fs::read_dir(&source).unwrap() {
            let file = file.unwrap().path();
            let text = fs::read_to_string(&file).unwrap();
            // A sample of each file keeps the test quick; the first and last lines differ most.
            let lines: Vec<&str> = text.lines().collect();
            let sample = lines.iter().take(6).chain(lines.last()).copied();
            for line in sample {
                let before = env.queue_lines().len();
                let input = cmstore::model::wire::Payload::decode(line.as_bytes())
                    .expect("fixture decodes")
                    .to_value();
                let reply = capture(&env, line, &[]);
                let lines = env.queue_lines();
                assert_eq!(
                    lines.len(),
                    before + 1,
                    "{}: one line per payload",
                    file.display()
                );
                let got = lines.last().unwrap();
                runs += 1;
                let Some(event) = input["hook_event_name"].as_str() else {
                    // Hand-written log entries without an event name are kept, as Unknown.
                    assert_eq!(got["hookType"], "Unknown");
                    continue;
                };
                let canonical = match event {
                    "SessionStart" | "SessionEnd" | "UserPromptSubmit" | "PreToolUse"
                    | "PostToolUse" | "PostToolUseFailure" | "PreCompact" | "Stop"
                    | "SubagentStart" | "SubagentStop" | "Notification" | "PermissionRequest" => {
                        event
                    }
                    other => panic!("unexpected event {other} in {}", file.display()),
                };
                assert_eq!(got["hookType"], canonical, "{}", file.display());
                assert_eq!(got["event"], event);
                assert_eq!(got["agent"], "claude", "{line}");
                assert_eq!(got["sessionId"], input["session_id"]);
                assert_eq!(got["v"], 1);
                assert_eq!(got["sizeBytes"], line.len() as u64);
                assert_eq!(got["estimatedTokens"], (line.len() as u64).div_ceil(4));
                if let Some(tool) = input["tool_name"].as_str() {
                    assert_eq!(got["toolName"], tool);
                    let tool_input: Value =
                        serde_json::from_str(got["toolInput"].as_str().unwrap()).unwrap();
                    assert!(tool_input.is_object(), "toolInput parses: {tool_input}");
                }
                if let Some(id) = input["tool_use_id"].as_str() {
                    assert_eq!(got["toolCallId"], id);
                }
                if matches!(event, "PreToolUse" | "PostToolUse") {
                    assert_eq!(reply, json!({}));
                }
            }
        }
    }
    assert!(runs > 100, "only {runs} payloads were tried");
}

#[test]
fn vscode_snake_case_payload() {
    let env = TestEnv::new();
    capture(&env, payload("vscode-snake-pre-tool-use.json"), &[]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "PreToolUse");
    assert_eq!(line["agent"], "vscode");
    assert_eq!(line["participant"], "copilot");
    assert_eq!(line["sessionId"], "6f1c2a7e-1b2c-4d5e-8f90-123456789abc");
    assert_eq!(line["toolName"], "run_in_terminal");
    assert_eq!(line["toolCallId"], "call_abc123");
    assert_eq!(line["cwd"], "/home/me/app");
    assert_eq!(line["rootHint"], "/home/me/app");
    assert_eq!(line["origin"], "vscode-extension");
    assert_eq!(line["producer"], "cmstore");
    let input: Value = serde_json::from_str(line["toolInput"].as_str().unwrap()).unwrap();
    assert_eq!(input["command"], "npm test");
}

#[test]
fn vscode_camel_case_payload() {
    let env = TestEnv::new();
    capture(&env, payload("vscode-camel-user-prompt-submit.json"), &[]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "UserPromptSubmit");
    assert_eq!(line["agent"], "vscode");
    assert_eq!(line["sessionId"], "vs-camel-1");
    assert_eq!(line["prompt"], "Explain the failing test");
    assert!(line.get("transcriptPath").is_none(), "null path is no path");
}

#[test]
fn vscode_post_tool_use_keeps_the_string_response() {
    let env = TestEnv::new();
    capture(&env, payload("vscode-post-tool-use.json"), &[]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "PostToolUse");
    assert_eq!(line["toolResponse"], "The file was edited.");
}

#[test]
fn copilot_camel_case_hooks_take_the_event_from_the_flag() {
    let env = TestEnv::new();
    capture(
        &env,
        payload("copilot-camel-pre-tool-use.json"),
        &["--agent", "copilot", "--event", "preToolUse"],
    );
    let line = last_line(&env);
    assert_eq!(line["hookType"], "PreToolUse");
    assert_eq!(line["event"], "preToolUse");
    assert_eq!(line["agent"], "copilot");
    assert_eq!(line["participant"], "copilot-cli");
    assert_eq!(line["sessionId"], "cp-1");
    let input: Value = serde_json::from_str(line["toolInput"].as_str().unwrap()).unwrap();
    assert_eq!(
        input["command"], "rm -rf dist",
        "toolArgs JSON string is unpacked"
    );
    assert!(
        line["timestamp"].as_i64().unwrap() > 1_704_614_600_000,
        "capture's own clock"
    );

    // Sniffed without --agent; toolArgs as an object; toolResult text kept.
    capture(
        &env,
        payload("copilot-camel-post-tool-use.json"),
        &["--event", "postToolUse"],
    );
    let line = last_line(&env);
    assert_eq!(line["hookType"], "PostToolUse");
    assert_eq!(line["agent"], "copilot");
    assert_eq!(line["toolResponse"], "File edited");
    assert_eq!(line["toolResultType"], "success");
    let input: Value = serde_json::from_str(line["toolInput"].as_str().unwrap()).unwrap();
    assert_eq!(input["path"], "/path/to/project/a.txt");

    capture(
        &env,
        payload("copilot-camel-agent-stop.json"),
        &["--event", "agentStop"],
    );
    let line = last_line(&env);
    assert_eq!(line["hookType"], "Stop");
    assert_eq!(line["transcriptPath"], "/nonexistent/events.jsonl");

    capture(
        &env,
        payload("copilot-camel-error-occurred.json"),
        &["--event", "errorOccurred"],
    );
    let line = last_line(&env);
    assert_eq!(line["hookType"], "ErrorOccurred");
    assert_eq!(line["error"]["message"], "Network timeout");
}

#[test]
fn copilot_session_start_gets_top_level_context() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home()).unwrap();
    fs::write(env.home().join("session-context.txt"), "Project: demo\n").unwrap();
    let reply = capture(
        &env,
        payload("copilot-camel-session-start.json"),
        &["--agent", "copilot", "--event", "sessionStart"],
    );
    assert_eq!(reply, json!({"additionalContext": "Project: demo"}));
    let line = last_line(&env);
    assert_eq!(line["hookType"], "SessionStart");
    assert_eq!(
        line["prompt"], "Fix the build",
        "initialPrompt is the prompt"
    );
    assert_eq!(line["source"], "new");
}

#[test]
fn copilot_pascal_case_hooks() {
    let env = TestEnv::new();
    capture(
        &env,
        payload("copilot-pascal-pre-tool-use.json"),
        &["--agent", "copilot"],
    );
    let line = last_line(&env);
    assert_eq!(line["hookType"], "PreToolUse");
    assert_eq!(line["agent"], "copilot");
    assert_eq!(line["toolName"], "Bash");
    assert_eq!(line["sessionId"], "3b1f0c2d");
}

#[test]
fn codex_payloads() {
    let env = TestEnv::new();
    capture(&env, payload("codex-pre-tool-use.json"), &[]);
    let line = last_line(&env);
    assert_eq!(line["agent"], "codex");
    assert_eq!(line["model"], "gpt-5-codex");
    assert_eq!(line["turnId"], "turn-7");
    assert_eq!(line["toolCallId"], "call_x1");
    capture(&env, payload("codex-stop.json"), &[]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "Stop");
    assert_eq!(
        line["response"], "All tests pass now.",
        "last_assistant_message without a transcript"
    );
    assert_eq!(line["turnId"], "turn-7");
}

#[test]
fn delegation_and_actor_fields() {
    let env = TestEnv::new();
    let task = json!({"session_id":"s","transcript_path":"/x/.claude/projects/p/s.jsonl","hook_event_name":"PreToolUse",
        "tool_name":"Task","tool_input":{"description":"review","prompt":"review it","subagent_type":"code-reviewer"},"tool_use_id":"toolu_9"});
    capture(&env, task.to_string(), &[]);
    let line = last_line(&env);
    assert_eq!(line["delegatedAgent"], "code-reviewer");
    assert_eq!(line["actorType"], "main");

    capture(&env, payload("vscode-subagent-start.json"), &[]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "SubagentStart");
    assert_eq!(line["actorName"], "planner");
    assert_eq!(line["actorType"], "subagent");
}

#[test]
fn context_is_injected_on_prompt_subagent_and_session_start() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home()).unwrap();
    // Empty context: nothing to inject, but still a valid reply.
    let reply = capture(
        &env,
        r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#,
        &[],
    );
    assert_eq!(reply, json!({}));

    fs::write(
        env.home().join("session-context.txt"),
        "  Project: cmstore\nGoal: ship  \n",
    )
    .unwrap();
    for event in ["UserPromptSubmit", "SubagentStart", "SessionStart"] {
        let input = json!({"session_id":"s","hook_event_name":event,"prompt":"hi"});
        let reply = capture(&env, input.to_string(), &[]);
        assert_eq!(
            reply,
            json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": "Project: cmstore\nGoal: ship"}}),
        );
    }
    let reply = capture(
        &env,
        r#"{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Read"}"#,
        &[],
    );
    assert_eq!(reply, json!({}), "no injection on other events");
}

#[test]
fn pre_compact_shows_the_knowledge_index() {
    let env = TestEnv::new();
    let input = r#"{"session_id":"s","hook_event_name":"PreCompact","trigger":"auto","custom_instructions":""}"#;
    assert_eq!(capture(&env, input, &[]), json!({}));
    fs::write(env.home().join("knowledge-index.txt"), "Cards: A, B\n").unwrap();
    assert_eq!(
        capture(&env, input, &[]),
        json!({"systemMessage": "Cards: A, B"})
    );
    assert_eq!(last_line(&env)["trigger"], "auto");
}

#[test]
fn bad_stdin_never_breaks_the_agent() {
    let env = TestEnv::new();
    // Empty stdin: nothing to record.
    assert_eq!(capture(&env, "", &[]), json!({}));
    assert!(env.queue_lines().is_empty());

    // Not JSON, not an object, invalid UTF-8: recorded with the reason, reply {}.
    let mut bad_utf8 =
        br#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"caf"#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, 0xfe]);
    bad_utf8.extend_from_slice(br#""}"#);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"this is not json".to_vec(), "not JSON"),
        (b"[1,2,3]".to_vec(), "not an object"),
        (b"\"a string\"".to_vec(), "not an object"),
        (b"{\"session_id\":\"s\", \"trunc".to_vec(), "not JSON"),
        (bad_utf8, "invalid UTF-8"),
    ];
    for (input, why) in cases {
        assert_eq!(capture(&env, input.clone(), &[]), json!({}));
        let line = last_line(&env);
        assert!(
            line["parseError"].as_str().unwrap().contains(why),
            "{why}: {line}"
        );
    }
    let line = last_line(&env);
    assert_eq!(
        line["hookType"], "UserPromptSubmit",
        "invalid UTF-8 still decodes"
    );
    assert_eq!(line["prompt"], "caf\u{fffd}\u{fffd}");

    // An empty payload with --event is still an event.
    capture(&env, "", &["--agent", "copilot", "--event", "sessionEnd"]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "SessionEnd");
    assert!(line["parseError"].as_str().unwrap().contains("empty"));
}

#[test]
fn a_huge_payload_is_drained_and_marked_truncated() {
    let env = TestEnv::new();
    let big = "x".repeat(17 * 1024 * 1024);
    let input = format!(
        r#"{{"session_id":"big-1","hook_event_name":"PostToolUse","tool_name":"Read","tool_response":"{big}"}}"#
    );
    let reply = capture(&env, input.clone(), &[]);
    assert_eq!(reply, json!({}));
    let line = last_line(&env);
    assert_eq!(line["truncated"], true);
    assert_eq!(
        line["hookType"], "PostToolUse",
        "event sniffed from the kept prefix"
    );
    assert_eq!(line["sessionId"], "big-1");
    assert_eq!(line["sizeBytes"], input.len() as u64, "every byte counted");
    let queue_size = fs::metadata(env.queue()).unwrap().len();
    assert!(
        queue_size < 4096,
        "the queue line stays small: {queue_size}"
    );
}

#[test]
fn an_unwritable_queue_still_answers_the_agent() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home()).unwrap();
    fs::write(env.home().join("session-context.txt"), "ctx").unwrap();
    // A queue whose parent is a file cannot be created, even by root.
    let blocker = env.dir.path().join("not-a-dir");
    fs::write(&blocker, "").unwrap();
    let queue = blocker.join("q.jsonl");
    let out = env
        .cmd()
        .args(["capture", "--queue"])
        .arg(&queue)
        .write_stdin(r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#)
        .env("CMSTORE_DEBUG", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        one_json_object(&out.stdout),
        json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx"}})
    );
    let log = fs::read_to_string(env.home().join("logs/capture.log")).unwrap();
    assert!(log.contains("queue append failed"), "{log}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_still_answers_the_agent() {
    let env = TestEnv::new();
    // A queue that is a link to /dev/full: every write fails with ENOSPC.
    let queue = env.dir.path().join("full.jsonl");
    std::os::unix::fs::symlink("/dev/full", &queue).unwrap();
    let out = env
        .cmd()
        .args(["capture", "--queue"])
        .arg(&queue)
        .write_stdin(r#"{"session_id":"s","hook_event_name":"Stop"}"#)
        .env("CMSTORE_DEBUG", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(one_json_object(&out.stdout), json!({}));
    let log = fs::read_to_string(env.home().join("logs/capture.log")).unwrap();
    assert!(log.contains("No space left"), "{log}");
}

#[test]
fn debug_log_records_keys_and_nothing_without_the_switch() {
    let env = TestEnv::new();
    let input = r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi there"}"#;
    capture(&env, input, &[]);
    assert!(!env.home().join("logs").exists(), "no log unless asked");
    env.cmd()
        .arg("capture")
        .env("CMSTORE_DEBUG", "1")
        .write_stdin(input)
        .assert()
        .success();
    let log = fs::read_to_string(env.home().join("logs/capture.log")).unwrap();
    // The keys are listed in payload order; which order is not the point here.
    let listed = log
        .split_once("keys=[")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(keys, _)| keys)
        .unwrap_or_else(|| panic!("no keys in {log}"));
    let mut keys: Vec<&str> = listed.split(", ").collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [r#""hook_event_name""#, r#""prompt""#, r#""session_id""#],
        "{log}"
    );
    assert!(log.contains("event=UserPromptSubmit agent=claude"), "{log}");
}

#[cfg(unix)]
#[test]
fn files_capture_creates_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    env.cmd()
        .arg("capture")
        .env("CMSTORE_DEBUG", "1")
        .write_stdin(r#"{"session_id":"s","hook_event_name":"Stop"}"#)
        .assert()
        .success();
    let mode = |p: &std::path::Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&env.queue()), 0o600);
    assert_eq!(mode(&env.home()), 0o700);
    assert_eq!(mode(&env.home().join("logs/capture.log")), 0o600);
}

#[test]
fn sixty_four_concurrent_captures_write_sixty_four_whole_lines() {
    let env = TestEnv::new();
    let big = "z".repeat(6000);
    let mut children = Vec::new();
    for i in 0..64 {
        let input = json!({"session_id": format!("s{i}"), "hook_event_name": "PostToolUse",
            "tool_name": "Write", "tool_input": {"file_path": format!("/f{i}"), "content": big},
            "tool_response": {"success": true}});
        let mut child = Command::new(crate::common::bin())
            .arg("capture")
            .env("CMSTORE_HOME", env.home())
            .env("HOME", env.user_home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.to_string().as_bytes())
            .unwrap();
        children.push(child);
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(one_json_object(&out.stdout), json!({}));
    }
    let lines = read_lines(&env.queue());
    assert_eq!(lines.len(), 64);
    let mut sessions: Vec<String> = lines
        .iter()
        .map(|l| l["sessionId"].as_str().unwrap().to_string())
        .collect();
    sessions.sort();
    sessions.dedup();
    assert_eq!(sessions.len(), 64, "every capture wrote its own line");
    let mut ids: Vec<&str> = lines.iter().map(|l| l["id"].as_str().unwrap()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 64, "ids are unique");
}

// ---- transcripts: harvest, Stop, PreCompact, discovery ----

/// Claude Code transcript lines for one turn: prompt, a tool call and its result, an answer.
fn claude_turn(n: usize, tools: usize) -> String {
    let mut lines = vec![
        json!({"type":"user","uuid":format!("u{n}"),"sessionId":"sess","isSidechain":false,
        "message":{"role":"user","content":format!("prompt {n}")}}),
    ];
    for t in 0..tools {
        lines.push(json!({"type":"assistant","uuid":format!("a{n}-{t}"),"message":{"id":format!("m{n}-{t}"),"role":"assistant",
            "content":[{"type":"tool_use","id":format!("toolu_{n}_{t}"),"name":"Bash","input":{"command":format!("echo {t} {}", "x".repeat(3000))}}]}}));
        lines.push(json!({"type":"user","uuid":format!("r{n}-{t}"),"message":{"role":"user",
            "content":[{"type":"tool_result","tool_use_id":format!("toolu_{n}_{t}"),"content":"ok"}]}}));
    }
    lines.push(json!({"type":"assistant","uuid":format!("f{n}"),"message":{"id":format!("mf{n}"),"role":"assistant",
        "content":[{"type":"text","text":format!("answer {n}")}]}}));
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn append(path: &std::path::Path, text: &str) {
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn hook(event: &str, transcript: &std::path::Path) -> String {
    json!({"session_id":"sess","transcript_path":transcript,"cwd":"/w","hook_event_name":event,
        "tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"toolu_x"})
    .to_string()
}

fn stops(env: &TestEnv) -> Vec<Value> {
    env.queue_lines()
        .into_iter()
        .filter(|l| l["hookType"] == "Stop")
        .collect()
}

/// The offset saved in the session's cursor file.
fn cursor_offset(env: &TestEnv) -> u64 {
    let state = env.home().join("state");
    let file = fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let workspace_file = p.file_name().unwrap().to_string_lossy().starts_with("ws-");
            p.extension().is_some_and(|e| e == "json") && !workspace_file
        })
        .expect("a cursor file");
    let v: Value = serde_json::from_str(&fs::read_to_string(file).unwrap()).unwrap();
    v["offset"].as_u64().expect("offset in the cursor")
}

#[test]
fn harvest_reads_only_new_bytes_and_records_each_turn_once() {
    let env = TestEnv::new();
    let t = env.dir.path().join("sess.jsonl");
    append(&t, &claude_turn(1, 1));
    append(
        &t,
        &json!({"type":"user","uuid":"u2","message":{"role":"user","content":"prompt 2"}})
            .to_string(),
    );
    append(&t, "\n");
    // Turn 1 is complete (turn 2 has begun): the hook harvests it.
    capture(&env, hook("PostToolUse", &t), &[]);
    let size1 = fs::metadata(&t).unwrap().len();
    assert_eq!(
        cursor_offset(&env),
        size1,
        "the cursor sits at the end of what was read"
    );
    let s = stops(&env);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["synthetic"], true);
    assert_eq!(s[0]["turnId"], "u1");
    assert_eq!(s[0]["prompt"], "prompt 1");
    assert_eq!(s[0]["response"], "answer 1");
    assert_eq!(s[0]["toolCalls"].as_array().unwrap().len(), 1);

    // The transcript grows; the next hook reads exactly the appended bytes.
    let more = claude_turn(3, 2);
    append(&t, &more);
    let out = env
        .cmd()
        .arg("capture")
        .env("CMSTORE_DEBUG", "1")
        .write_stdin(hook("PostToolUse", &t))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let log = fs::read_to_string(env.home().join("logs/capture.log")).unwrap();
    let size2 = fs::metadata(&t).unwrap().len();
    assert!(
        log.contains(&format!(
            "transcript read {} bytes ({size1}..{size2})",
            more.len()
        )),
        "{log}"
    );
    assert_eq!(cursor_offset(&env), size2);
    // Turn 2 got no answer (nothing to harvest); turn 3 is still open.
    let ids: Vec<String> = stops(&env)
        .iter()
        .map(|l| l["turnId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["u1"]);

    // Stop closes turn 3 with its final exchange and up to 10 tool calls.
    capture(&env, hook("Stop", &t), &[]);
    let s = stops(&env);
    assert_eq!(s.len(), 2);
    let real = &s[1];
    assert!(real.get("synthetic").is_none());
    assert_eq!(real["turnId"], "u3");
    assert_eq!(real["prompt"], "prompt 3");
    assert_eq!(real["response"], "answer 3");
    let calls = real["toolCalls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    for call in calls {
        let input = call["input"].as_str().unwrap();
        assert!(
            input.chars().count() <= 2000,
            "tool input cut to 2000 chars"
        );
        let v: Value = serde_json::from_str(input).expect("cut input still parses");
        assert!(v["command"].as_str().unwrap().starts_with("echo"));
    }

    // A later harvest does not record turn 3 again, and neither does a repeated Stop.
    append(&t, &claude_turn(4, 0));
    capture(&env, hook("PostToolUse", &t), &[]);
    capture(&env, hook("Stop", &t), &[]);
    let ids: Vec<String> = stops(&env)
        .iter()
        .map(|l| l["turnId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids, ["u1", "u3", "u4"]);
}

#[test]
fn harvest_then_stop_of_the_same_turn_yields_one_turn() {
    let env = TestEnv::new();
    let t = env.dir.path().join("sess.jsonl");
    append(&t, &claude_turn(1, 1));
    // Claude marks the end of a turn; VS Code's Stop may never fire.
    append(
        &t,
        &format!(
            "{}\n",
            json!({"type":"system","subtype":"turn_duration","durationMs":1200})
        ),
    );
    capture(&env, hook("PostToolUse", &t), &[]);
    capture(&env, hook("Stop", &t), &[]);
    // Every firing is a line: the harvested turn, then the Stop, marked and naming the turn.
    let s = stops(&env);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[0]["turnId"], "u1");
    assert_eq!(s[0]["synthetic"], true);
    assert_eq!(
        s[0]["origin"], "claude-code-plugin",
        "a harvested turn keeps its agent's origin"
    );
    assert_eq!(s[1]["turnId"], "u1");
    assert!(s[1].get("synthetic").is_none());
    assert_eq!(s[1]["turnRecorded"], true);
    assert!(s[1].get("prompt").is_none());
    // One turns row, its exchange kept; the Stop is an event of its own.
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM turns"), 1);
    let (prompt, response, synthetic): (String, String, i64) = env
        .conn()
        .query_row(
            "SELECT prompt, response, synthetic FROM turns WHERE turn_key = 'u1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!(
        (prompt.as_str(), response.as_str(), synthetic),
        ("prompt 1", "answer 1", 0)
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE hook_type = 'Stop' AND synthetic IS NOT 1"),
        1
    );
    assert_eq!(
        env.int("SELECT tool_call_count FROM turns WHERE turn_key = 'u1'"),
        1,
        "a Stop without the exchange does not blank the turn"
    );
}

#[test]
fn stop_keeps_reasoning_apart_and_falls_back_to_the_payload() {
    let env = TestEnv::new();
    let t = env.dir.path().join("vs.jsonl");
    let lines = [
        json!({"type":"session.start","data":{"sessionId":"sess","producer":"copilot-agent"},"id":"e1","timestamp":"2026-03-20T10:29:58.000Z","parentId":null}),
        json!({"type":"user.message","data":{"content":"Run the tests"},"id":"e2","timestamp":"2026-03-20T10:30:00.000Z","parentId":"e1"}),
        json!({"type":"assistant.message","data":{"messageId":"m1","content":"","reasoningText":"Need to run tests.","toolRequests":[]},"id":"e4","timestamp":"2026-03-20T10:30:02.000Z","parentId":"e2"}),
        json!({"type":"tool.execution_start","data":{"toolCallId":"c1","toolName":"run_in_terminal","arguments":{"command":"npm test"}},"id":"e5","timestamp":"2026-03-20T10:30:02.100Z","parentId":"e4"}),
    ];
    for l in &lines {
        append(&t, &format!("{l}\n"));
    }
    let stop = json!({"timestamp":"2026-03-20T10:30:10.000Z","hook_event_name":"Stop","session_id":"sess","transcript_path":t,"stop_hook_active":false});
    capture(&env, stop.to_string(), &[]);
    let s = stops(&env);
    assert_eq!(s[0]["agent"], "vscode");
    assert_eq!(s[0]["prompt"], "Run the tests");
    // Reasoning is never the answer (issue 15.10): a turn that only thought has none.
    assert!(s[0].get("response").is_none(), "{}", s[0]);
    assert_eq!(s[0]["thinking"], "Need to run tests.");
    assert_eq!(s[0]["toolCalls"][0]["toolName"], "run_in_terminal");
    assert_eq!(s[0]["turnId"], "e2");

    // No transcript at all: the payload's last_assistant_message.
    let env = TestEnv::new();
    let stop = json!({"hook_event_name":"Stop","session_id":"other","transcript_path":"/nonexistent/t.jsonl",
        "last_assistant_message":"Done."});
    capture(&env, stop.to_string(), &[]);
    assert_eq!(stops(&env)[0]["response"], "Done.");
}

#[test]
fn pre_compact_records_complete_turns_and_keeps_the_trailing_one() {
    let env = TestEnv::new();
    let t = env.dir.path().join("sess.jsonl");
    append(&t, &claude_turn(1, 0));
    append(&t, &claude_turn(2, 1));
    // Turn 3 has started but has no answer yet.
    append(
        &t,
        &format!(
            "{}\n",
            json!({"type":"user","uuid":"u3","message":{"role":"user","content":"prompt 3"}})
        ),
    );
    let compact = |env: &TestEnv| {
        let input = json!({"session_id":"sess","transcript_path":t,"hook_event_name":"PreCompact","trigger":"auto"});
        capture(env, input.to_string(), &[]);
        last_line(env)
    };
    let line = compact(&env);
    assert_eq!(line["hookType"], "PreCompact");
    let turns = line["turns"].as_array().unwrap();
    let users: Vec<&str> = turns.iter().map(|t| t["user"].as_str().unwrap()).collect();
    assert_eq!(users, ["prompt 1", "prompt 2"]);
    assert_eq!(turns[1]["assistant"], "answer 2");

    // Turn 3 completes later; the next compaction picks it up, and nothing twice.
    append(
        &t,
        &format!(
            "{}\n",
            json!({"type":"assistant","uuid":"f3","message":{"id":"mf3","role":"assistant","content":[{"type":"text","text":"answer 3"}]}})
        ),
    );
    append(&t, &claude_turn(4, 0));
    let line = compact(&env);
    let users: Vec<&str> = line["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["user"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["prompt 3"], "turn 4 is still open");
}

#[test]
fn a_missing_transcript_path_is_discovered_on_every_platform_layout() {
    let layouts = [
        ("claude", ".claude/projects/-home-dev-app"),
        ("linux vscode", ".config/Code/User/workspaceStorage/abc123/GitHub.copilot-chat/transcripts"),
        ("macos vscode", "Library/Application Support/Code/User/workspaceStorage/abc123/GitHub.copilot-chat/transcripts"),
        ("windows vscode", "AppData/Roaming/Code/User/workspaceStorage/abc123/GitHub.copilot-chat/transcripts"),
    ];
    for (name, dir) in layouts {
        let env = TestEnv::new();
        let folder = env.user_home().join(dir);
        fs::create_dir_all(&folder).unwrap();
        let id = "5a3ac9ca-98b3-4cf0-bcdb-9972819cc928";
        append(&folder.join(format!("{id}.jsonl")), &claude_turn(1, 0));
        let stop = json!({"session_id": id, "hook_event_name": "Stop", "cwd": "/home/dev/app"});
        let out = env
            .cmd()
            .arg("capture")
            .env("CMSTORE_DEBUG", "1")
            .write_stdin(stop.to_string())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let line = last_line(&env);
        assert_eq!(line["response"], "answer 1", "{name}");
        assert_eq!(line["prompt"], "prompt 1", "{name}");
        let log = fs::read_to_string(env.home().join("logs/capture.log")).unwrap();
        assert!(log.contains("transcript (discovered)"), "{name}: {log}");
        assert!(
            log.contains("exchange \"prompt 1\" -> \"answer 1\""),
            "{name}: {log}"
        );
    }
}

#[test]
fn an_unreadable_transcript_is_not_an_error() {
    let env = TestEnv::new();
    let dir = env.dir.path().join("a-directory.jsonl");
    fs::create_dir_all(&dir).unwrap();
    for event in ["PostToolUse", "Stop", "PreCompact"] {
        assert_eq!(capture(&env, hook(event, &dir), &[]), json!({}));
    }
    assert_eq!(env.queue_lines().len(), 3);
}

#[test]
fn a_mistyped_capture_command_line_still_captures_and_exits_zero() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home()).unwrap();
    fs::write(env.home().join("session-context.txt"), "ctx").unwrap();
    let out = env
        .cmd()
        .args(["capture", "--agnet", "claude", "--bogus"])
        .write_stdin(r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "exit 2 would block the agent");
    assert_eq!(
        one_json_object(&out.stdout)["hookSpecificOutput"]["additionalContext"],
        "ctx"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("capturing with default options"));
    assert_eq!(last_line(&env)["prompt"], "hi");
    // Other commands keep clap's usual error.
    let out = env.cmd().args(["query", "--bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn turns_harvested_while_the_queue_is_unwritable_are_written_by_the_next_hook() {
    let env = TestEnv::new();
    let t = env.dir.path().join("sess.jsonl");
    append(&t, &claude_turn(1, 1));
    append(
        &t,
        &format!(
            "{}\n",
            json!({"type":"user","uuid":"u2","message":{"role":"user","content":"prompt 2"}})
        ),
    );
    let blocker = env.dir.path().join("not-a-dir");
    fs::write(&blocker, "").unwrap();
    env.cmd()
        .args(["capture", "--queue"])
        .arg(blocker.join("q.jsonl"))
        .write_stdin(hook("PostToolUse", &t))
        .assert()
        .success();
    // The failed append left the cursor unsaved: the next hook harvests the same turn.
    capture(&env, hook("PostToolUse", &t), &[]);
    let s = stops(&env);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["turnId"], "u1");
}

#[test]
fn subagent_stop_reads_the_subagents_own_transcript_not_the_main_one() {
    let env = TestEnv::new();
    let main_t = env.dir.path().join("sess.jsonl");
    append(&main_t, &claude_turn(1, 0));
    let sub_dir = env.dir.path().join("sess/subagents");
    fs::create_dir_all(&sub_dir).unwrap();
    let sub_t = sub_dir.join("agent-a1b2c3d.jsonl");
    let sub_lines = [
        json!({"type":"user","uuid":"su1","isSidechain":true,"agentId":"a1b2c3d","message":{"role":"user","content":"review src/lib.rs"}}),
        json!({"type":"assistant","uuid":"sa1","isSidechain":true,"agentId":"a1b2c3d","message":{"id":"sm1","role":"assistant",
            "content":[{"type":"tool_use","id":"toolu_s1","name":"Read","input":{"file_path":"/w/src/lib.rs"}}]}}),
        json!({"type":"assistant","uuid":"sa2","isSidechain":true,"agentId":"a1b2c3d","message":{"id":"sm2","role":"assistant",
            "content":[{"type":"text","text":"Looks fine."}]}}),
    ];
    for l in &sub_lines {
        append(&sub_t, &format!("{l}\n"));
    }
    let subagent_stop = json!({"session_id":"sess","transcript_path":main_t,"hook_event_name":"SubagentStop",
        "agent_id":"a1b2c3d","agent_type":"code-reviewer","agent_transcript_path":sub_t,"stop_hook_active":false});
    capture(&env, subagent_stop.to_string(), &[]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "SubagentStop");
    assert_eq!(line["prompt"], "review src/lib.rs");
    assert_eq!(line["response"], "Looks fine.");
    assert_eq!(line["turnId"], "su1");
    assert_eq!(line["toolCalls"][0]["toolName"], "Read");
    assert_eq!(line["actorName"], "code-reviewer");

    // The main session's turn is untouched: its Stop still records it.
    capture(&env, hook("Stop", &main_t), &[]);
    let line = last_line(&env);
    assert_eq!(line["hookType"], "Stop");
    assert_eq!(line["turnId"], "u1");
    assert_eq!(line["response"], "answer 1");

    // Without its own transcript a SubagentStop records what its payload says.
    let bare = json!({"session_id":"sess","transcript_path":main_t,"hook_event_name":"SubagentStop",
        "agent_id":"zz","last_assistant_message":"Done reviewing."});
    capture(&env, bare.to_string(), &[]);
    let line = last_line(&env);
    assert_eq!(line["response"], "Done reviewing.");
    assert!(line.get("toolCalls").is_none());
}

#[test]
fn the_model_comes_from_the_transcript_when_the_payloads_lack_it() {
    // `claude -p`: its SessionStart names no model; the transcript's assistant lines do.
    let env = TestEnv::new();
    let t = env.dir.path().join("sess.jsonl");
    let lines = [
        json!({"type":"user","uuid":"u1","message":{"role":"user","content":"prompt 1"}}),
        json!({"type":"assistant","uuid":"a1","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"answer 1"}]}}),
        json!({"type":"assistant","uuid":"a2","message":{"id":"m2","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"No response requested."}]}}),
    ];
    for l in &lines {
        append(&t, &format!("{l}\n"));
    }
    let start = json!({"session_id":"sess","transcript_path":t,"hook_event_name":"SessionStart","source":"startup"});
    capture(&env, start.to_string(), &[]);
    capture(&env, hook("Stop", &t), &[]);
    let s = stops(&env);
    assert_eq!(s[0]["model"], "claude-sonnet-4-5", "{s:?}");
    assert_eq!(s[0]["response"], "answer 1");
    env.ingest_once();
    let (session_model, turn_model): (String, String) = env
        .conn()
        .query_row(
            "SELECT s.model, t.model FROM sessions s JOIN turns t USING (session_id)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(session_model, "claude-sonnet-4-5");
    assert_eq!(turn_model, "claude-sonnet-4-5");
}

#[test]
fn session_end_records_the_last_turn_whose_stop_never_fired_once() {
    // VS Code: no Stop; the last turn has no next prompt to complete it.
    let env = TestEnv::new();
    let t = env.dir.path().join("vs.jsonl");
    let lines = [
        json!({"type":"user.message","data":{"content":"Run the tests"},"id":"e2","timestamp":"2026-03-20T10:30:00.000Z","parentId":"e1"}),
        json!({"type":"assistant.message","data":{"messageId":"m1","content":"All green."},"id":"e4","timestamp":"2026-03-20T10:30:02.000Z","parentId":"e2"}),
    ];
    for l in &lines {
        append(&t, &format!("{l}\n"));
    }
    let end = json!({"timestamp":"2026-03-20T10:31:00.000Z","hook_event_name":"SessionEnd","session_id":"sess","transcript_path":t,"reason":"exit"});
    capture(&env, end.to_string(), &[]);
    let lines = env.queue_lines();
    let types: Vec<&str> = lines
        .iter()
        .map(|l| l["hookType"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["Stop", "SessionEnd"], "the turn, then the end");
    assert_eq!(lines[0]["synthetic"], true);
    assert_eq!(lines[0]["turnId"], "e2");
    assert_eq!(lines[0]["response"], "All green.");
    // Never twice: a second SessionEnd, or a late Stop, does not repeat the exchange.
    capture(&env, end.to_string(), &[]);
    let stop = json!({"hook_event_name":"Stop","session_id":"sess","transcript_path":t});
    capture(&env, stop.to_string(), &[]);
    let s = stops(&env);
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(s[1]["turnRecorded"], true);
}

#[test]
fn a_manual_pre_compact_right_after_a_response_includes_that_turn() {
    let env = TestEnv::new();
    let t = env.dir.path().join("sess.jsonl");
    append(&t, &claude_turn(1, 0));
    append(&t, &claude_turn(2, 1));
    let compact = |env: &TestEnv| {
        let input = json!({"session_id":"sess","transcript_path":t,"hook_event_name":"PreCompact","trigger":"manual"});
        capture(env, input.to_string(), &[]);
        last_line(env)
    };
    let users = |line: &Value| -> Vec<String> {
        line["turns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["user"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(users(&compact(&env)), ["prompt 1", "prompt 2"]);
    // Not twice: the next compaction starts after it.
    append(&t, &claude_turn(3, 0));
    assert_eq!(users(&compact(&env)), ["prompt 3"]);
}

#[test]
fn a_later_session_in_the_workspace_records_the_last_turn_of_one_that_never_ended() {
    // VS Code: no Stop, and the window closed without a SessionEnd. The next session in the
    // same folder records the old session's last turn once its transcript has gone quiet.
    let env = TestEnv::new();
    let t = env.dir.path().join("old.jsonl");
    for l in [
        json!({"type":"user.message","data":{"content":"Run the tests"},"id":"e2","parentId":"e1"}),
        json!({"type":"assistant.message","data":{"messageId":"m1","content":"All green."},"id":"e4","parentId":"e2"}),
    ] {
        append(&t, &format!("{l}\n"));
    }
    let event = |session: &str, cwd: &str, name: &str, transcript: &std::path::Path| {
        json!({"hook_event_name":name,"session_id":session,"cwd":cwd,"transcript_path":transcript,
            "tool_name":"run_in_terminal","tool_input":{"command":"ls"},"tool_use_id":"c1"})
        .to_string()
    };
    let vscode = ["--agent", "vscode"];
    let new_t = env.dir.path().join("new.jsonl");
    fs::write(&new_t, "").unwrap();
    capture(&env, event("old", "/w", "PostToolUse", &t), &vscode);
    let old_stops = |env: &TestEnv| -> Vec<Value> {
        stops(env)
            .into_iter()
            .filter(|s| s["sessionId"] == "old")
            .collect()
    };
    assert!(old_stops(&env).is_empty(), "the turn is still open");

    // Still being written to: a session running beside this one is left alone.
    capture(
        &env,
        event("new", "/w", "UserPromptSubmit", &new_t),
        &vscode,
    );
    assert!(old_stops(&env).is_empty());

    fs::File::options()
        .write(true)
        .open(&t)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(120))
        .unwrap();
    // Another workspace's sessions do not close it.
    capture(
        &env,
        event("elsewhere", "/other", "UserPromptSubmit", &new_t),
        &vscode,
    );
    assert!(old_stops(&env).is_empty());

    capture(&env, event("new", "/w", "PreToolUse", &new_t), &vscode);
    let s = old_stops(&env);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["synthetic"], true);
    assert_eq!(s[0]["turnId"], "e2");
    assert_eq!(s[0]["prompt"], "Run the tests");
    assert_eq!(s[0]["response"], "All green.");
    assert_eq!(s[0]["agent"], "vscode");
    assert_eq!(s[0]["origin"], "vscode-extension");
    assert_eq!(s[0]["producer"], "cmstore");
    assert_eq!(s[0]["transcriptPath"], t.display().to_string());
    let lines = env.queue_lines();
    let closed_at = lines
        .iter()
        .position(|l| l["sessionId"] == "old" && l["hookType"] == "Stop");
    assert_eq!(
        lines[closed_at.unwrap() + 1]["hookType"],
        "PreToolUse",
        "ahead of the event that found it"
    );

    // Never twice: more hooks of the new session, then a late SessionEnd of the old one.
    capture(&env, event("new", "/w", "PostToolUse", &new_t), &vscode);
    capture(&env, event("old", "/w", "SessionEnd", &t), &vscode);
    assert_eq!(old_stops(&env).len(), 1);

    // Everything through ingest: the turn is the old session's.
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM turns WHERE session_id = 'old' AND response = 'All green.'"),
        1
    );
}

#[test]
fn an_interrupted_claude_turn_is_recorded_as_interrupted_with_its_prompt() {
    // Claude Code after Ctrl-C: no Stop, an interrupt line, then SessionEnd.
    let env = TestEnv::new();
    let t = env.dir.path().join("sess.jsonl");
    for l in [
        json!({"type":"user","uuid":"u1","message":{"role":"user","content":"wait for me"}}),
        json!({"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant",
            "content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"sleep 9"}}]}}),
        json!({"type":"user","uuid":"r1","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"toolu_1","content":"hi"}]}}),
        json!({"type":"user","uuid":"i1","message":{"role":"user","content":[
            {"type":"text","text":"[Request interrupted by user]"}]}}),
    ] {
        append(&t, &format!("{l}\n"));
    }
    let end = json!({"session_id":"sess","transcript_path":t,"cwd":"/w",
        "hook_event_name":"SessionEnd","reason":"other"});
    capture(&env, end.to_string(), &[]);
    let s = stops(&env);
    assert_eq!(s.len(), 1, "{s:?}");
    assert_eq!(s[0]["turnOutcome"], "interrupted");
    assert_eq!(s[0]["prompt"], "wait for me");
    env.ingest_once();
    let (prompt, outcome): (String, String) = env
        .conn()
        .query_row("SELECT prompt, outcome FROM turns", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (prompt.as_str(), outcome.as_str()),
        ("wait for me", "interrupted")
    );
}

/// `--agent` that names no agent (a typo in a hook command) is not silently `auto`: the agent
/// is told from the payload and the line says what was wrong in `agentError`; a known name
/// (any case) and `auto` leave no note.
#[test]
fn an_unknown_agent_flag_is_noted_on_the_line_and_sniffed() {
    let env = TestEnv::new();
    let payload = r#"{"session_id":"s1","transcript_path":"/nonexistent/.claude/t.jsonl","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
    capture(&env, payload, &["--agent", "claud"]);
    capture(&env, payload, &["--agent", "Claude"]);
    capture(&env, payload, &["--agent", "auto"]);
    capture(&env, payload, &[]);
    let lines = env.queue_lines();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["agent"], "claude", "sniffed");
    assert_eq!(
        lines[0]["agentError"],
        "--agent \"claud\" names no agent (claude, vscode, copilot, codex, gemini, qwen, cursor, \
         qoder, droid, opencode, kilo, cline, windsurf, kiro, goose, kimi, or auto); told from the payload: claude"
    );
    for line in &lines[1..] {
        assert_eq!(line["agent"], "claude");
        assert!(line.get("agentError").is_none(), "{line}");
    }
    // Ingest keeps the line as it is, the note included.
    env.ingest_once();
    assert_eq!(
        env.int(
            "SELECT count(*) FROM events WHERE json_extract(entry, '$.agentError') IS NOT NULL"
        ),
        1
    );
}
