//! Claude Code (`@anthropic-ai/claude-code`, pinned in `.ci/install-agents`) in print mode,
//! wired with `cmstore hooks install --agent claude`, against the mock Messages API.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::anthropic::{self, Step, Usage, MODEL};
use crate::harness::{self, Session, World, AGENT_TIMEOUT};
use crate::mock::MockServer;

/// The native binary the npm package installs (its `bin` entry).
fn claude() -> Option<PathBuf> {
    harness::agent(
        "claude",
        "node_modules/@anthropic-ai/claude-code/bin/claude.exe",
    )
}

/// `script` gets the world, for the paths its tool calls name.
fn session(prompt: &str, script: impl FnOnce(&World) -> Vec<Step>) -> Option<Session> {
    let claude = claude()?;
    let world = World::new();
    world.enforce();
    let script = script(&world);
    install_hooks(&world);
    let mock = MockServer::start(anthropic::responder(script));
    let cmd = claude_command(&world, &claude, &mock, prompt);
    let run = harness::spawn(&world, "claude", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = run.json()["session_id"]
        .as_str()
        .expect("session_id in claude's output")
        .to_string();
    world.ingest();
    Some(Session {
        world,
        mock,
        run,
        id,
    })
}

/// Wires cmstore into the project the way a user does: `cmstore hooks install --agent claude`.
fn install_hooks(world: &World) {
    let project = world.project();
    let project = project.to_str().expect("a UTF-8 temp path");
    world.cmstore_ok(&[
        "hooks",
        "install",
        "--agent",
        "claude",
        "--project",
        project,
    ]);
}

/// `claude -p PROMPT` in `world`, talking to `mock`, with nothing but loopback to reach.
fn claude_command(world: &World, claude: &Path, mock: &MockServer, prompt: &str) -> Command {
    claude_command_allowing(world, claude, mock, prompt, "Bash,Write")
}

/// [`claude_command`] with only `allowed` tools allowed by a rule: print mode asks about the
/// others (`PermissionRequest`), and with nobody to answer does not run them.
fn claude_command_allowing(
    world: &World,
    claude: &Path,
    mock: &MockServer,
    prompt: &str,
    allowed: &str,
) -> Command {
    let mut cmd = world.command(claude);
    cmd.args(["-p", prompt, "--output-format", "json", "--model", MODEL])
        // Print mode runs only the tools it is allowed; bypassPermissions is refused as root.
        .args(["--allowedTools", allowed])
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-dummy")
        .env("CLAUDE_CONFIG_DIR", world.home().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1");
    cmd
}

/// The main session: a command that works, one that exits 3, one the gate denies (it would
/// create the marker), a file write, then the answer.
fn main_session() -> Option<Session> {
    session(PROMPT, |world| {
        let denied = format!(
            "touch {} && echo 'drop table users'",
            world.marker().display()
        );
        let file = world.project().join("notes.txt");
        vec![
            Step::Tool(
                "Bash",
                json!({"command": "sleep 0.3; echo hi", "description": "say hi"}),
            ),
            Step::Tool(
                "Bash",
                json!({"command": "echo failing; exit 3", "description": "fail"}),
            ),
            Step::Tool("Bash", json!({"command": denied, "description": "risky"})),
            Step::Tool(
                "Write",
                json!({"file_path": file, "content": "written by the agent\n"}),
            ),
            Step::Text("All done."),
        ]
    })
}

const PROMPT: &str = "run the four steps";

#[test]
fn events_tool_calls_turn_and_session_are_what_claude_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    assert_eq!(
        s.query(
            "select hook_type, count(*) n from events where session_id = :sid
             group by 1 order by 1"
        ),
        // PostToolBatch after each model response that called tools (one call each here),
        // MessageDisplay for the answer: registered by `hooks install` since hooks-v2.
        vec![
            json!({"hook_type": "MessageDisplay", "n": 1}),
            json!({"hook_type": "PostToolBatch", "n": 4}),
            json!({"hook_type": "PostToolUse", "n": 2}),
            json!({"hook_type": "PostToolUseFailure", "n": 1}),
            json!({"hook_type": "PreToolUse", "n": 4}),
            json!({"hook_type": "SessionEnd", "n": 1}),
            json!({"hook_type": "SessionStart", "n": 1}),
            json!({"hook_type": "Stop", "n": 1}),
            json!({"hook_type": "UserPromptSubmit", "n": 1}),
        ],
        "{ctx}"
    );
    // Every event cmstore registers for is a known one.
    assert_eq!(
        s.world.scalar("select count(*) from unknown_counts"),
        0,
        "{ctx}"
    );

    assert_eq!(
        s.query(
            "select tool_call_id, tool_name, success, outcome from tool_calls
             where session_id = :sid order by start_ts"
        ),
        vec![
            json!({"tool_call_id": "toolu_mock_0", "tool_name": "Bash", "success": 1, "outcome": "succeeded"}),
            json!({"tool_call_id": "toolu_mock_1", "tool_name": "Bash", "success": 0, "outcome": "failed"}),
            json!({"tool_call_id": "toolu_mock_2", "tool_name": "Bash", "success": null, "outcome": "denied"}),
            json!({"tool_call_id": "toolu_mock_3", "tool_name": "Write", "success": 1, "outcome": "succeeded"}),
        ],
        "{ctx}"
    );
    assert_durations(&s);

    assert_eq!(
        s.query("select prompt, response, tool_call_count, model, synthetic from turns"),
        vec![
            json!({"prompt": PROMPT, "response": "All done.", "tool_call_count": 4,
                    "model": MODEL, "synthetic": 0})
        ],
        "{ctx}"
    );
    assert_eq!(
        s.query(
            "select session_id, agent, model, prompts, tool_uses, tool_failures, stops, ended
             from sessions"
        ),
        vec![
            json!({"session_id": s.id, "agent": "claude", "model": MODEL, "prompts": 1,
                    "tool_uses": 3, "tool_failures": 1, "stops": 1, "ended": 1})
        ],
        "{ctx}"
    );
    assert_eq!(
        std::fs::read_to_string(s.world.project().join("notes.txt"))
            .ok()
            .as_deref(),
        Some("written by the agent\n"),
        "the Write ran"
    );
}

/// Durations: the agent's own `durationMs` where it reports one, so the `sleep 0.3` call
/// took at least 300 ms; every finished call has one; the denied call never finished.
fn assert_durations(s: &Session) {
    let rows = s.query(
        "select tool_call_id, duration_ms, end_ts - start_ts span from tool_calls
         where session_id = :sid order by start_ts",
    );
    let ms = |i: usize, key: &str| rows[i][key].as_i64();
    let slept = ms(0, "duration_ms").expect("the first call's duration");
    assert!(
        (300..AGENT_TIMEOUT.as_millis() as i64).contains(&slept),
        "{rows:?}"
    );
    for i in [1, 3] {
        let d = ms(i, "duration_ms").expect("a finished call's duration");
        assert!(d >= 0 && d <= ms(i, "span").unwrap(), "{rows:?}");
    }
    assert_eq!(rows[2]["duration_ms"], Value::Null, "{rows:?}");
}

#[test]
fn the_gate_denies_and_claude_obeys() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let pre = s.query(
        "select json_extract(entry, '$.decision') decision, json_extract(entry, '$.risk') risk
         from events where tool_call_id = 'toolu_mock_2' and hook_type = 'PreToolUse'",
    );
    assert_eq!(
        pre,
        vec![json!({"decision": "deny", "risk": "drop-table"})],
        "{ctx}"
    );
    // What Claude Code sent the model back for the denied call: an error naming the gate.
    let result = s
        .mock
        .requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|m| m["content"].as_array().cloned())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_mock_2")
        .expect("a tool_result for the denied call");
    assert_eq!(result["is_error"], true, "{result}");
    let text = result["content"].as_str().unwrap_or_default();
    assert!(text.contains("cmstore safety gate"), "{result}");
}

#[test]
fn a_claude_turn_keeps_its_tool_outputs() {
    let Some(s) = main_session() else { return };
    let outputs = s.query(
        "select json_extract(value, '$.output') output from events, json_each(entry, '$.toolCalls')
         where hook_type = 'Stop' and session_id = :sid order by key",
    );
    let outputs: Vec<&str> = outputs
        .iter()
        .map(|r| r["output"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outputs.len(), 4, "{}", s.context());
    assert_eq!(outputs[0], "hi", "{}", s.context());
    assert!(outputs[1].contains("Exit code 3"), "{outputs:?}");
    assert!(outputs[2].contains("cmstore safety gate"), "{outputs:?}");
    assert!(
        outputs[3].starts_with("File created successfully"),
        "{outputs:?}"
    );
}

#[test]
fn thinking_is_never_a_claude_turns_response() {
    let Some(s) = session("think only", |_| vec![Step::ThinkingOnly(THOUGHT)]) else {
        return;
    };
    let turns = s.query("select prompt, response from turns");
    assert_eq!(turns.len(), 1, "{}", s.context());
    assert_eq!(turns[0]["prompt"], "think only", "{}", s.context());
    let response = turns[0]["response"].as_str().unwrap_or("");
    assert!(
        !response.contains(THOUGHT),
        "thinking stored as the response: {turns:?}"
    );
    let stop = s.query("select response from events where hook_type = 'Stop'");
    assert!(
        !stop
            .iter()
            .any(|r| r["response"].as_str().unwrap_or("").contains(THOUGHT)),
        "{stop:?}"
    );
}

const THOUGHT: &str = "private reasoning that is not the answer";

#[test]
fn an_interrupted_claude_turn_is_recorded_as_interrupted() {
    let Some(claude) = claude() else { return };
    let world = World::new();
    install_hooks(&world);
    // The model answers the first request with a tool call and never answers the second.
    let script = vec![
        Step::Tool("Bash", json!({"command": "echo hi"})),
        Step::Stall,
    ];
    let mock = MockServer::start(anthropic::responder(script));
    let mut running = harness::spawn(
        &world,
        "claude",
        claude_command(&world, &claude, &mock, "wait for me"),
    );
    let waiting = mock.wait_for(AGENT_TIMEOUT, |r| anthropic::tool_results(&r.body) == 1);
    assert!(waiting, "claude never sent the tool result");
    running.interrupt();
    running.wait_or_kill(Duration::from_secs(20));
    world.ingest();
    harness::assert_interrupted_turn(&world, "wait for me");
}

/// The transcript Claude Code wrote for session `id`, under `$CLAUDE_CONFIG_DIR/projects`.
fn transcript_of(world: &World, id: &str) -> PathBuf {
    let projects = world.home().join(".claude/projects");
    let found: Vec<PathBuf> = std::fs::read_dir(&projects)
        .expect("claude's projects directory")
        .flatten()
        .map(|project| project.path().join(format!("{id}.jsonl")))
        .filter(|path| path.is_file())
        .collect();
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

/// The usage rows, as the test compares them.
const USAGE_ROWS: &str = "select message_id, request_id, session_id, agent, model, input_tokens,
    cache_write_tokens, cache_write_1h_tokens, cache_read_tokens, output_tokens, service_tier,
    sidechain, origin from usage order by ts, message_id";

/// Issue 16: a response of two content blocks (two transcript lines repeating its usage) and
/// a one-block answer, each reporting counts of its own: what Claude Code's transcript
/// records of them, capture alone storing exactly the mock's counts once per response keyed
/// on (message id, request id), their cost from the shipped prices, and `cmstore import` of
/// the same transcript (twice, and by default) leaving the same rows.
#[test]
fn claude_usage_is_the_mocks_numbers_once_per_response() {
    let Some(claude) = claude() else { return };
    let world = World::new();
    install_hooks(&world);
    let mock = counting_mock();
    let run = harness::spawn(
        &world,
        "claude",
        claude_command(&world, &claude, &mock, "count my tokens"),
    )
    .wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = run.json()["session_id"]
        .as_str()
        .expect("session_id in claude's output")
        .to_string();
    world.ingest();
    let path = transcript_of(&world, &id);
    let transcript = std::fs::read_to_string(&path).expect("read the transcript");
    let ctx = format!(
        "transcript:\n{transcript}\nqueue:\n{}\nstdout: {}",
        world.queue_text(),
        run.stdout
    );

    // The replies the mock gave: steps 0 and 1 of the agent loop, nothing outside it.
    let steps = anthropic::steps_answered(&mock);
    assert_eq!(steps, [0, 1], "{ctx}");

    // What the transcript records: one assistant line per content block, each repeating its
    // response's ids and final counts (2.1.332 writes them once the response is complete).
    let lines: Vec<Value> = transcript
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "assistant")
        .map(|l| {
            let u = &l["message"]["usage"];
            json!([
                l["message"]["id"],
                l["requestId"],
                u["output_tokens"],
                u["cache_creation"]["ephemeral_1h_input_tokens"]
            ])
        })
        .collect();
    let line = |n: usize| {
        let u = Usage::of_step(n);
        json!([
            format!("msg_mock_{n}"),
            format!("req_mock_{n}"),
            u.output,
            u.cache_write_1h
        ])
    };
    assert_eq!(lines, [line(0), line(0), line(1)], "{ctx}");

    // Capture alone (the hooks' cursor read the transcript; no import yet).
    let expected: Vec<Value> = steps
        .iter()
        .map(|&n| {
            let u = Usage::of_step(n);
            json!({"message_id": format!("msg_mock_{n}"), "request_id": format!("req_mock_{n}"),
                   "session_id": id, "agent": "claude", "model": MODEL, "input_tokens": u.input,
                   "cache_write_tokens": u.cache_write(), "cache_write_1h_tokens": u.cache_write_1h,
                   "cache_read_tokens": u.cache_read, "output_tokens": u.output,
                   "service_tier": "standard", "sidechain": 0, "origin": "hook"})
        })
        .collect();
    let stored = world.query(USAGE_ROWS);
    assert_eq!(stored, expected, "capture alone\n{ctx}");
    // Each response belongs to the session's one turn.
    assert_eq!(
        world.scalar("select count(*) from usage join turns using (turn_id)"),
        json!(2),
        "{ctx}"
    );

    // The cost, from the price the store holds for the model (the shipped table).
    let price = world.query(&format!(
        "select input, output, cache_write_5m, cache_write_1h, cache_read from prices
         where model = '{MODEL}'"
    ));
    assert_eq!(price.len(), 1, "{MODEL} has a shipped price");
    let per = |key: &str| price[0][key].as_f64().unwrap();
    let cost: f64 = steps
        .iter()
        .map(|&n| {
            let u = Usage::of_step(n);
            (u.input as f64 * per("input")
                + u.output as f64 * per("output")
                + u.cache_write_5m as f64 * per("cache_write_5m")
                + u.cache_write_1h as f64 * per("cache_write_1h")
                + u.cache_read as f64 * per("cache_read"))
                / 1e6
        })
        .sum();
    let sessions = world.query("select responses, unpriced, cost_usd from v_usage_sessions");
    assert_eq!(sessions.len(), 1, "{ctx}");
    assert_eq!(sessions[0]["responses"], json!(2), "{sessions:?}");
    assert_eq!(sessions[0]["unpriced"], json!(0), "{sessions:?}");
    let stored_cost = sessions[0]["cost_usd"].as_f64().unwrap();
    assert!(
        (stored_cost - cost).abs() < 1e-6,
        "{stored_cost} against {cost}"
    );

    // `cmstore import` of the same transcript leaves the same rows (still capture's); run
    // again, and by default (`~/.claude/projects`), and ingested again: the same rows.
    world.cmstore_ok(&["import", path.to_str().unwrap()]);
    assert_eq!(world.query(USAGE_ROWS), stored, "after import\n{ctx}");
    world.cmstore_ok(&["import", path.to_str().unwrap()]);
    world.cmstore_ok(&["import"]);
    world.ingest();
    assert_eq!(world.query(USAGE_ROWS), stored, "after imports\n{ctx}");
}

/// The mock of the usage tests: a text with a call, then the answer, each reply reporting
/// counts of its own ([`Usage::of_step`]).
fn counting_mock() -> MockServer {
    let script = vec![
        Step::TextAndTool(
            "Counting.",
            "Bash",
            json!({"command": "echo hi", "description": "say hi"}),
        ),
        Step::Text("Counted."),
    ];
    MockServer::start(anthropic::responder_counting(script, Usage::of_step))
}

/// Writes the project's Claude settings with a Stop hook of the user's that blocks the first
/// Stop (exit 2, its reason on stderr) and lets the next one pass; `hooks install` then merges
/// cmstore's hooks beside it.
fn write_blocking_stop_hook(world: &World) {
    let once = world.blocked_marker();
    let script = world.home().join("block-once.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ -e '{0}' ]; then exit 0; fi\ntouch '{0}'\n\
             echo '2 tests fail' >&2\nexit 2\n",
            once.display()
        ),
    )
    .unwrap();
    let settings = json!({"hooks": {"Stop": [{"hooks": [{"type": "command",
        "command": format!("sh '{}'", script.display())}]}]}});
    let dir = world.project().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
}

/// Issue 32: a Stop hook that blocks makes Claude Code write its reason as a user line and
/// answer it in the same turn, then fire Stop again: one turn, its prompt the person's, the
/// hook's words its feedback, its answer the last.
#[test]
fn a_blocking_stop_hook_continues_the_turn_it_blocked() {
    // The mock answers by the number of tool results, so the turn's second request gets the
    // same answer: what matters is where the store puts the hook's words.
    let Some(s) = session("fix the build", |world| {
        write_blocking_stop_hook(world);
        vec![Step::Text("The build passes.")]
    }) else {
        return;
    };
    let transcript = std::fs::read_to_string(transcript_of(&s.world, &s.id)).unwrap();
    let context = format!("{}\ntranscript:\n{transcript}", s.context());
    let turns = s.query("select prompt, response, feedback from turns where session_id = :sid");
    assert_eq!(turns.len(), 1, "{turns:?}\n{context}");
    assert_eq!(turns[0]["prompt"], "fix the build", "{context}");
    assert_eq!(turns[0]["response"], "The build passes.", "{context}");
    let feedback = turns[0]["feedback"].as_str().unwrap_or_default();
    assert!(
        feedback.starts_with("Stop hook feedback:") && feedback.contains("2 tests fail"),
        "{feedback:?}\n{context}"
    );
    assert_eq!(
        s.query("select count(*) AS n from events where hook_type = 'Stop'")[0]["n"],
        json!(2),
        "{context}"
    );
}

/// Issue 32's failed turn, end to end: the API answers the turn's second request with an
/// error Claude Code does not retry (400), so the turn ends on it and Claude Code fires
/// `StopFailure` (wired by hand beside `hooks install`'s, which leaves it out) and no `Stop`.
/// One turn, its prompt the person's, outcome `failed`. In `-p` mode 2.1.332 sometimes exits
/// without firing `StopFailure` (2 of 25 runs here): the turn is then harvested from the
/// transcript at `SessionEnd`, whose API error line says `failed` all the same.
#[test]
fn a_turn_an_api_error_ends_is_one_failed_turn() {
    let Some(claude) = claude() else { return };
    let world = World::new();
    install_hooks(&world);
    let command = format!(
        "{} --home {} capture --agent claude",
        env!("CARGO_BIN_EXE_cmstore"),
        world.cmhome().display()
    );
    let local = json!({"hooks": {"StopFailure": [{"hooks": [{"type": "command",
        "command": command, "timeout": 30}]}]}});
    std::fs::write(
        world.project().join(".claude/settings.local.json"),
        local.to_string(),
    )
    .unwrap();
    let script = anthropic::responder(vec![
        Step::Tool("Bash", json!({"command": "echo hi"})),
        Step::Text("never sent"),
    ]);
    let mock = MockServer::start(move |req: &crate::mock::Request| {
        if req.body.get("tools").is_some() && anthropic::tool_results(&req.body) == 1 {
            return crate::mock::Reply::Status(400);
        }
        script(req)
    });
    let run = harness::spawn(
        &world,
        "claude",
        claude_command(&world, &claude, &mock, "fail on the second call"),
    )
    .wait(AGENT_TIMEOUT);
    world.ingest();
    let context = format!(
        "queue:\n{}\nstdout: {}\nstderr: {}",
        world.queue_text(),
        run.stdout,
        run.stderr
    );
    let count = |hook: &str| {
        world.scalar(&format!(
            "select count(*) from events where hook_type = '{hook}'"
        ))
    };
    assert!(count("StopFailure").as_i64() <= Some(1), "{context}");
    assert_eq!(
        world.scalar("select count(*) from events where hook_type = 'Stop' and synthetic is null"),
        json!(0),
        "no Stop fired\n{context}"
    );
    let turns = world.query("select prompt, outcome from turns");
    assert_eq!(
        turns,
        vec![json!({"prompt": "fail on the second call", "outcome": "failed"})],
        "{context}"
    );
}

/// The Claude Code of `.ci/install-agents`'s `claude-2.1.100`: the last version that rejects
/// a whole settings file naming an event it does not know.
const STRICT_CLAUDE: &str = "claude-2.1.100";

/// Issue 35.1, with a real older Claude Code: `hooks install` asks it its version and writes
/// only the events it knows, so the settings file it shares with the user's
/// `permissions.deny` stays valid: the denied command does not run, and cmstore's hooks fire.
/// With every event cmstore knows written instead (`--agent-version` of the pinned Claude),
/// the same Claude ignores the whole file: the deny with it, and no hook fires. That second
/// run is what the first one guards against.
#[test]
fn an_older_claude_keeps_the_users_settings_and_fires_the_hooks() {
    if harness::agent(
        STRICT_CLAUDE,
        "node_modules/@anthropic-ai/claude-code/cli.js",
    )
    .is_none()
    {
        return;
    }
    let run = |extra: &[&str]| {
        let world = World::new();
        world.put_first_on_path(harness::agent_bin(STRICT_CLAUDE));
        let settings = json!({"permissions": {"deny": ["Bash(touch:*)"]}});
        let dir = world.project().join(".claude");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
        let project = world.project();
        let mut args = vec!["hooks", "install", "--agent", "claude", "--project"];
        args.push(project.to_str().unwrap());
        args.extend(extra);
        world.cmstore_ok(&args);
        let touch = format!("touch {}", world.marker().display());
        let mock = MockServer::start(anthropic::responder(vec![
            Step::Tool("Bash", json!({"command": touch, "description": "touch"})),
            Step::Text("Done."),
        ]));
        // The package's `claude` command: cli.js, run by node.
        let claude = harness::agent_bin(STRICT_CLAUDE).join("claude");
        let cmd = claude_command(&world, &claude, &mock, "touch the marker");
        let ran = harness::spawn(&world, "claude", cmd).wait(AGENT_TIMEOUT);
        world.ingest();
        (world, ran)
    };

    let (world, ran) = run(&[]);
    let context = format!(
        "queue:\n{}\nstdout: {}\nstderr: {}",
        world.queue_text(),
        ran.stdout,
        ran.stderr
    );
    let written = std::fs::read_to_string(world.project().join(".claude/settings.json")).unwrap();
    assert!(!written.contains("PostToolBatch"), "{written}");
    assert!(
        !world.marker().exists(),
        "the user's deny was ignored\n{context}"
    );
    let fired = world.query("select distinct hook_type from events order by 1");
    for hook in ["PreToolUse", "SessionStart", "Stop", "UserPromptSubmit"] {
        assert!(
            fired.contains(&json!({"hook_type": hook})),
            "{hook} did not fire: {fired:?}\n{context}"
        );
    }

    let (world, ran) = run(&["--agent-version", "2.1.332"]);
    let context = format!("stdout: {}\nstderr: {}", ran.stdout, ran.stderr);
    assert!(
        world.marker().exists(),
        "Claude Code 2.1.100 kept a file naming PostToolBatch: the test shows nothing\n{context}"
    );
    assert_eq!(world.queue_text(), "", "{context}");
}

/// Issue 39's budget with a real Claude Code: near the day's limit the prompt goes on and the
/// model is told where the budget stands (the hook's context reaches the request); past it the
/// prompt is refused before any request is made.
#[test]
fn a_claude_prompt_near_the_budget_is_warned_and_past_it_refused() {
    let Some(claude) = claude() else { return };
    let world = World::new();
    world.spend("day = 1\nwarn_at = 0.5\n", 1);
    install_hooks(&world);
    let mock = MockServer::start(anthropic::responder(vec![Step::Text("Hello.")]));
    let cmd = claude_command(&world, &claude, &mock, "say hello");
    let run = harness::spawn(&world, "claude", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    harness::assert_budget_warned(&world, &mock);

    world.spend("day = 1\nwarn_at = 0.5\n", 1);
    let refused = MockServer::start(anthropic::responder(vec![Step::Text("Hello.")]));
    let cmd = claude_command(&world, &claude, &refused, "say hello again");
    let run = harness::spawn(&world, "claude", cmd).wait(AGENT_TIMEOUT);
    let context = harness::assert_prompt_refused(&world, &refused, &run, "say hello again");
    assert_eq!(run.json()["num_turns"], 0, "{context}");
}

/// Issue 39's decision chains with a real Claude Code: a call its settings allow ran with no
/// question (`settings`); one they do not made it ask (`PermissionRequest`, no call id), and
/// with nobody to answer in print mode it did not run (`user`); the gate's deny is the gate's.
#[test]
fn each_claude_call_says_who_decided_it() {
    let Some(claude) = claude() else { return };
    let world = World::new();
    world.enforce();
    install_hooks(&world);
    let touch = format!("touch {}", world.marker().display());
    let file = world.project().join("notes.txt");
    let mock = MockServer::start(anthropic::responder(vec![
        Step::Tool("Bash", json!({"command": touch, "description": "touch"})),
        Step::Tool("Write", json!({"file_path": file, "content": "x\n"})),
        Step::Tool(
            "Bash",
            json!({"command": "echo 'drop table users'", "description": "risky"}),
        ),
        Step::Text("Done."),
    ]));
    let cmd = claude_command_allowing(&world, &claude, &mock, "three steps", "Write");
    let run = harness::spawn(&world, "claude", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    world.ingest();
    let context = format!("queue:\n{}", world.queue_text());
    assert!(
        !world.marker().exists(),
        "the unallowed command ran\n{context}"
    );
    let decided = world.query(
        "select tool_name, outcome, permission_mode, decided_by from v_tool_call_decisions
         order by ts",
    );
    assert_eq!(
        decided,
        vec![
            // Never answered: in flight until the session ended.
            json!({"tool_name": "Bash", "outcome": "abandoned", "permission_mode": "default", "decided_by": "user"}),
            json!({"tool_name": "Write", "outcome": "succeeded", "permission_mode": "default", "decided_by": "settings"}),
            json!({"tool_name": "Bash", "outcome": "denied", "permission_mode": "default", "decided_by": "gate"}),
        ],
        "{context}"
    );
}

/// Coverage (issue 37): the tool calls and turns Claude Code's transcript shows are the ones
/// its hooks recorded, by the same ids: after `cmstore import`, none is missed and none is the
/// hooks' alone, and the turns the hooks recorded are as they were, not doubled. (The gate's
/// denied call is in the transcript too: Claude Code asked for it.)
#[test]
fn the_hooks_saw_every_tool_call_and_turn_the_claude_transcript_shows() {
    let Some(s) = main_session() else { return };
    const TURNS: &str = "SELECT turn_key, hook_type, prompt, response, tool_call_count, \
        imported FROM turns WHERE session_id = :sid ORDER BY turn_key";
    let by_hooks = s.query(TURNS);
    let projects = s.world.home().join(".claude/projects");
    s.world.cmstore_ok(&["import", projects.to_str().unwrap()]);
    assert!(!by_hooks.is_empty(), "{}", s.context());
    assert_eq!(s.query(TURNS), by_hooks, "{}", s.context());
    let turns = s.query(
        "SELECT transcript_turns, hooked_turns, missed_turns, hook_only_turns \
         FROM v_coverage WHERE session_id = :sid",
    );
    assert_eq!(
        turns,
        [
            json!({"transcript_turns": by_hooks.len(), "hooked_turns": by_hooks.len(),
                "missed_turns": 0, "hook_only_turns": 0})
        ],
        "{}",
        s.context()
    );
    let rows = s.query(
        "SELECT transcript_tool_calls, hooked_tool_calls, missed_tool_calls, \
         hook_only_tool_calls FROM v_coverage WHERE session_id = :sid",
    );
    assert_eq!(rows.len(), 1, "{}", s.context());
    assert_eq!(
        rows[0]["transcript_tool_calls"],
        4,
        "{rows:?}\n{}",
        s.context()
    );
    assert_eq!(rows[0]["hooked_tool_calls"], 4, "{rows:?}");
    assert_eq!(rows[0]["missed_tool_calls"], 0, "{rows:?}");
    assert_eq!(rows[0]["hook_only_tool_calls"], 0, "{rows:?}");
}

/// A model Claude Code 2.1.332 runs auto mode with. It leaves auto mode for `default` with a
/// model listed before `claude-opus-4-6` (`claude-sonnet-4-5`, [`MODEL`], among them).
const AUTO_MODEL: &str = "claude-sonnet-4-6";

/// What the mock's classifier says of the call it flags.
const CLASSIFIER_REASON: &str = "Deleting a directory outside the project is destructive.";

/// Auto mode's classifier refuses a call, end to end: in `--permission-mode auto` Claude Code
/// asks the API to classify the response's tool calls (`safeguards`), the mock flags the
/// `rm -rf` (`safeguard_results`, docs/dev/research/claude-auto-mode.md), and Claude Code
/// does not run it, tells the model so and fires `PermissionDenied` with the call's id and the
/// classifier's reason. The store pairs it with the call's PreToolUse: one call, `refused`,
/// in mode `auto`, decided by the `classifier`.
#[test]
fn claudes_auto_mode_classifier_refuses_a_call_and_the_store_says_who() {
    let Some(claude) = claude() else { return };
    let world = World::new();
    install_hooks(&world);
    let kept = world.home().join("keep-me");
    std::fs::create_dir_all(&kept).unwrap();
    let rm = format!("rm -rf {}", kept.display());
    let mock = MockServer::start(anthropic::responder_flagging(
        vec![
            Step::Tool("Bash", json!({"command": rm, "description": "remove it"})),
            Step::Text("The classifier refused."),
        ],
        CLASSIFIER_REASON,
    ));
    let mut cmd = world.command(&claude);
    cmd.args(["-p", "remove keep-me", "--output-format", "json"])
        .args(["--model", AUTO_MODEL, "--permission-mode", "auto"])
        .env("ANTHROPIC_BASE_URL", mock.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-dummy")
        .env("CLAUDE_CONFIG_DIR", world.home().join(".claude"))
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1");
    let s = Session::run(world, mock, "claude", cmd);
    let ctx = s.context();
    assert!(kept.is_dir(), "the refused command ran\n{ctx}");

    // Auto mode was on (a model it leaves sends no `safeguards`), and Claude Code reports the
    // refusal.
    let asked = s
        .mock
        .requests()
        .iter()
        .any(|r| r.body["safeguards"][0]["classifier_context"]["permission_mode"] == "auto");
    assert!(asked, "no request asked for the classifier\n{ctx}");
    assert_eq!(
        s.run.json()["permission_denials"][0]["tool_use_id"],
        "toolu_mock_0",
        "{ctx}"
    );
    // What the model was told: the classifier's refusal, with its reason.
    let result = s
        .mock
        .requests()
        .iter()
        .flat_map(|r| r.body["messages"].as_array().cloned().unwrap_or_default())
        .filter_map(|m| m["content"].as_array().cloned())
        .flatten()
        .find(|b| b["type"] == "tool_result" && b["tool_use_id"] == "toolu_mock_0")
        .expect("a tool_result for the refused call");
    let text = result["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("denied by the Claude Code auto mode classifier")
            && text.contains(CLASSIFIER_REASON),
        "{result}"
    );

    // The hook fired, for that call, with the classifier's reason. (Its `permission_mode`,
    // `auto`, is not kept: capture keeps the mode of PreToolUse and PermissionRequest only.)
    let denied = s.query(
        "select tool_call_id, tool_name, json_extract(entry, '$.reason') reason
         from events where session_id = :sid and hook_type = 'PermissionDenied'",
    );
    assert_eq!(
        denied,
        vec![json!({"tool_call_id": "toolu_mock_0", "tool_name": "Bash",
                    "reason": CLASSIFIER_REASON})],
        "{ctx}"
    );
    // One call, its two halves paired, and the classifier as the one who decided it.
    let calls = s.query(
        "select c.tool_call_id, c.tool_name, c.outcome, c.success, d.permission_mode,
         d.decided_by, (select hook_type from events where id = c.pre_event_id) pre,
         (select hook_type from events where id = c.post_event_id) post
         from tool_calls c join v_tool_call_decisions d on d.call_rowid = c.rowid
         where c.session_id = :sid",
    );
    assert_eq!(
        calls,
        vec![
            json!({"tool_call_id": "toolu_mock_0", "tool_name": "Bash", "outcome": "refused",
                    "success": null, "permission_mode": "auto", "decided_by": "classifier",
                    "pre": "PreToolUse", "post": "PermissionDenied"})
        ],
        "{ctx}"
    );
}

/// Issue 36: Claude Code's own telemetry as the cross-check of what cmstore counts. Claude Code
/// sends its `api_request` events and its `token.usage` and `cost.usage` metrics to
/// `cmstore ingest --otlp-listen`; `cmstore usage` then compares them with the responses the
/// hooks' cursor read from the transcript: equal, request by request, with the metrics'
/// default temporality (delta: each point adds) and with cumulative points (each a running
/// total of its series).
#[test]
fn claude_codes_own_telemetry_agrees_with_the_transcripts_count() {
    let Some(claude) = claude() else { return };
    for temporality in ["delta", "cumulative"] {
        telemetry_agrees(&claude, temporality);
    }
}

/// One run of [`claude_codes_own_telemetry_agrees_with_the_transcripts_count`], its metrics
/// sent with `temporality`.
fn telemetry_agrees(claude: &Path, temporality: &str) {
    let world = World::new();
    install_hooks(&world);
    let (mut receiver, endpoint) = start_receiver(&world);
    let mock = counting_mock();
    let mut cmd = claude_command(&world, claude, &mock, "count my tokens");
    cmd.env("CLAUDE_CODE_ENABLE_TELEMETRY", "1")
        .env("OTEL_METRICS_EXPORTER", "otlp")
        .env("OTEL_LOGS_EXPORTER", "otlp")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", format!("http://{endpoint}"))
        .env(
            "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
            temporality,
        )
        .env("OTEL_METRIC_EXPORT_INTERVAL", "300")
        .env("OTEL_LOGS_EXPORT_INTERVAL", "300");
    let run = harness::spawn(&world, "claude", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = run.json()["session_id"]
        .as_str()
        .expect("session_id in claude's output")
        .to_string();
    // Claude Code flushes its telemetry as it exits; the receiver stores it within moments.
    let sources = format!(
        "select count(distinct source) from agent_totals where session_id = '{id}' \
         and output_tokens > 0"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while world.scalar(&sources) != json!(2) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    receiver.interrupt();
    let stopped = receiver.wait_or_kill(Duration::from_secs(20));
    world.ingest();
    let ctx = format!(
        "{temporality}\nqueue:\n{}\nreceiver: {}\ntotals: {:?}\nmetrics: {:?}",
        world.queue_text(),
        stopped.stderr,
        world.query("select * from agent_totals"),
        world.query("select name, ts, value, attributes from otel_metrics"),
    );
    let steps = anthropic::steps_answered(&mock);
    assert_eq!(steps, [0, 1], "{ctx}");
    // The metrics came as the preference says: a cumulative series is named by its start.
    let series = world.scalar(&format!(
        "select count(*) from agent_totals where session_id = '{id}' \
         and source = 'claude-otlp-metrics' and series <> ''"
    ));
    assert_eq!(series != json!(0), temporality == "cumulative", "{ctx}");

    let sum = |f: fn(&Usage) -> u64| -> u64 { steps.iter().map(|&n| f(&Usage::of_step(n))).sum() };
    // Named: a session active in the last 10 minutes is otherwise left to settle.
    let rows = world.cmstore_ok(&["usage", "--check", "--session", &id, "--format", "json"]);
    assert_eq!(rows.trim(), "[]", "nothing disagrees\n{ctx}");
    let rows: Value =
        serde_json::from_str(&world.cmstore_ok(&["usage", "--format", "json"])).unwrap();
    let seen: Vec<Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            json!([
                r["session_id"],
                r["source"],
                r["model"],
                r["verdict"],
                r["agent_requests"],
                r["agent_input_tokens"],
                r["agent_output_tokens"],
                r["agent_cache_read_tokens"],
                r["agent_cache_write_tokens"]
            ])
        })
        .collect();
    let expected = |source: &str, requests: Value| {
        json!([
            id,
            source,
            MODEL,
            "equal",
            requests,
            sum(|u| u.input),
            sum(|u| u.output),
            sum(|u| u.cache_read),
            sum(|u| u.cache_write())
        ])
    };
    assert_eq!(
        seen,
        [
            expected("claude-otlp-metrics", Value::Null),
            expected("claude-otlp-requests", json!(2))
        ],
        "{ctx}"
    );
    // Claude Code's own cost, the same from its events and its metric, and cmstore's from the
    // shipped prices: equal.
    let costs = world.query(&format!(
        "select cost_usd, agent_cost_usd from v_usage_check where session_id = '{id}'"
    ));
    let theirs: Vec<f64> = costs
        .iter()
        .map(|c| c["agent_cost_usd"].as_f64().expect("Claude Code's cost"))
        .collect();
    assert!(
        theirs[0] > 0.0 && (theirs[0] - theirs[1]).abs() < 1e-9,
        "{costs:?}"
    );
    for (c, theirs) in costs.iter().zip(&theirs) {
        let ours = c["cost_usd"].as_f64().expect("a priced model");
        assert!((ours - theirs).abs() < 1e-9, "{costs:?}");
    }
}

/// `cmstore ingest --otlp-listen` on a free loopback port of `world`, once it listens.
fn start_receiver(world: &World) -> (harness::Running, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let endpoint = format!("127.0.0.1:{port}");
    let mut receiver = world.cmstore();
    receiver.args(["ingest", "--poll-ms", "100", "--otlp-listen", &endpoint]);
    let receiver = harness::spawn(world, "receiver", receiver);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(&endpoint).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "no receiver on {endpoint}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    (receiver, endpoint)
}
