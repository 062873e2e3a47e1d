//! Gemini CLI (`@google/gemini-cli`, pinned in `.ci/install-agents`) in headless mode, its hooks
//! written by hand into the test's `~/.gemini/settings.json` (`cmstore hooks install` has no
//! Gemini installer), against the mock Gemini API.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::google::{self, Step, MODEL};
use crate::harness::{self, Session, World, AGENT_TIMEOUT};
use crate::mock::MockServer;

/// The CLI's bundled entry point, run with node.
fn gemini() -> Option<PathBuf> {
    harness::agent("gemini", "node_modules/@google/gemini-cli/bundle/gemini.js")
}

/// Gemini's other regular events (issue 15.4).
const MODEL_EVENTS: [&str; 3] = ["BeforeModel", "AfterModel", "BeforeToolSelection"];

/// Writes the user settings: API-key auth, no telemetry, usage statistics or update checks
/// (nothing but loopback), and `cmstore capture --agent gemini` on each of `by_hand` (events
/// `hooks install` leaves out); then wires cmstore the way a user does, with
/// `cmstore hooks install --agent gemini --user`, merged into the same `settings.json`.
fn write_settings(world: &World, by_hand: &[&str]) {
    write_settings_beside(world, by_hand, serde_json::Map::new());
}

/// [`write_settings`], with the user's own `hooks` (event → matcher groups) written first.
fn write_settings_beside(
    world: &World,
    by_hand: &[&str],
    mut hooks: serde_json::Map<String, Value>,
) {
    let command = format!(
        "{} --home {} capture --agent gemini",
        env!("CARGO_BIN_EXE_cmstore"),
        world.cmhome().display()
    );
    for event in by_hand {
        // Gemini's timeout is in milliseconds.
        let handler = json!({"type": "command", "command": command, "timeout": 10_000});
        hooks.insert(
            event.to_string(),
            json!([{"matcher": "*", "hooks": [handler]}]),
        );
    }
    let settings = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "hooks": hooks,
    });
    let dir = world.home().join(".gemini");
    std::fs::create_dir_all(&dir).expect("create ~/.gemini");
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("write settings");
    world.cmstore_ok(&["hooks", "install", "--agent", "gemini", "--user"]);
}

/// `gemini -p PROMPT` in `world`, talking to `mock`.
fn gemini_command(world: &World, gemini: &Path, mock: &MockServer, prompt: &str) -> Command {
    let mut cmd = world.command(Path::new("node"));
    cmd.arg(gemini)
        .args(["-p", prompt, "-m", MODEL, "-o", "json"])
        // Runs tools without asking; the gate's deny still applies (BeforeTool).
        .arg("--yolo")
        .env("GEMINI_API_KEY", "e2e-dummy-key")
        .env("GOOGLE_GEMINI_BASE_URL", mock.url())
        // Headless runs refuse an untrusted folder.
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("GEMINI_TELEMETRY_ENABLED", "false");
    cmd
}

fn session(
    prompt: &str,
    by_hand: &[&str],
    script: impl FnOnce(&World) -> Vec<Step>,
) -> Option<Session> {
    let gemini = gemini()?;
    let world = World::new();
    world.enforce();
    write_settings(&world, by_hand);
    let mock = MockServer::start(google::responder(script(&world)));
    let cmd = gemini_command(&world, &gemini, &mock, prompt);
    let run = harness::spawn(&world, "gemini", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = run.json()["session_id"]
        .as_str()
        .expect("session_id in gemini's output")
        .to_string();
    world.ingest();
    Some(Session {
        world,
        mock,
        run,
        id,
    })
}

const PROMPT: &str = "run the three steps";

/// A command that works, one the gate denies (it would create the marker), a file write, then
/// the answer.
fn main_session() -> Option<Session> {
    session(PROMPT, &[], |world| {
        let denied = format!(
            "touch {} && echo 'drop table users'",
            world.marker().display()
        );
        let file = world.project().join("notes.txt");
        vec![
            Step::Tool(
                "run_shell_command",
                json!({"command": "sleep 0.3; echo hi"}),
            ),
            Step::Tool("run_shell_command", json!({"command": denied})),
            Step::Tool(
                "write_file",
                json!({"file_path": file, "content": "written by the agent\n"}),
            ),
            Step::Text("All done."),
        ]
    })
}

#[test]
fn events_tool_calls_turn_and_session_are_what_gemini_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    assert_eq!(
        s.query(
            "select event, hook_type, count(*) n from events where session_id = :sid
             group by 1, 2 order by 1"
        ),
        vec![
            json!({"event": "AfterAgent", "hook_type": "Stop", "n": 1}),
            json!({"event": "AfterTool", "hook_type": "PostToolUse", "n": 2}),
            json!({"event": "BeforeAgent", "hook_type": "UserPromptSubmit", "n": 1}),
            json!({"event": "BeforeTool", "hook_type": "PreToolUse", "n": 3}),
            // Before each of the four model calls Gemini checks whether to compress.
            json!({"event": "PreCompress", "hook_type": "CompactionCheck", "n": 4}),
            json!({"event": "SessionEnd", "hook_type": "SessionEnd", "n": 1}),
            json!({"event": "SessionStart", "hook_type": "SessionStart", "n": 1}),
        ],
        "{ctx}"
    );
    assert_eq!(
        s.world.scalar("select count(*) from unknown_counts"),
        0,
        "{ctx}"
    );
    // Gemini's hooks carry no call id: the halves are paired in order.
    let calls = s.query(
        "select tool_name, success, outcome, duration_ms, end_ts - start_ts span
         from tool_calls where session_id = :sid order by start_ts",
    );
    let shape: Vec<Value> = calls
        .iter()
        .map(|c| json!([c["tool_name"], c["success"], c["outcome"]]))
        .collect();
    assert_eq!(
        shape,
        vec![
            json!(["run_shell_command", 1, "succeeded"]),
            json!(["run_shell_command", null, "denied"]),
            json!(["write_file", 1, "succeeded"]),
        ],
        "{ctx}"
    );
    let slept = calls[0]["duration_ms"].as_i64().expect("a duration");
    assert!(
        (300..AGENT_TIMEOUT.as_millis() as i64).contains(&slept),
        "{calls:?}"
    );
    assert_eq!(calls[0]["duration_ms"], calls[0]["span"], "{calls:?}");
    assert_eq!(calls[1]["duration_ms"], Value::Null, "{calls:?}");
    assert!(
        calls[2]["duration_ms"].as_i64().is_some_and(|d| d >= 0),
        "{calls:?}"
    );

    assert_eq!(
        s.query("select prompt, response, synthetic from turns where session_id = :sid"),
        vec![json!({"prompt": PROMPT, "response": "All done.", "synthetic": 0})],
        "{ctx}"
    );

    // Issue 37: `cmstore import` of the chat reads the turn the hooks recorded (its prompt,
    // at its time): none added, the hooks' fields kept, the turn the chat shows hooked; the
    // row gains the chat's id of the turn and what the hooks did not see of it.
    let sql = "SELECT session_id, turn_key, hook_type, prompt, response, outcome, imported \
               FROM turns ORDER BY session_id, turn_key";
    let by_hooks = s.query(sql);
    s.world
        .cmstore_ok(&["import", chats(&s.world).to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&s.world, (sql, &by_hooks), &ctx);
    assert_eq!(
        s.query("select turn_id, model, tool_call_count from turns where session_id = :sid"),
        vec![
            json!({"turn_id": prompt_record_id(&s.world, PROMPT), "model": MODEL,
                    "tool_call_count": 3})
        ],
        "{ctx}"
    );
    assert_eq!(
        s.query(
            "select session_id, agent, prompts, tool_uses, tool_failures, stops, ended
             from sessions"
        ),
        vec![
            json!({"session_id": s.id, "agent": "gemini", "prompts": 1, "tool_uses": 2,
                    "tool_failures": 0, "stops": 1, "ended": 1})
        ],
        "{ctx}"
    );
    assert_eq!(
        std::fs::read_to_string(s.world.project().join("notes.txt"))
            .ok()
            .as_deref(),
        Some("written by the agent\n"),
        "the write_file ran"
    );
}

/// Where Gemini CLI keeps `world`'s chats.
fn chats(world: &World) -> std::path::PathBuf {
    world.home().join(".gemini/tmp")
}

/// The id of the chat's `user` record whose text is `prompt`: the turn's id in Gemini's chat.
fn prompt_record_id(world: &World, prompt: &str) -> String {
    let mut found = Vec::new();
    let mut stack = vec![chats(world)];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.extend(
                    std::fs::read_to_string(&path)
                        .unwrap()
                        .lines()
                        .filter_map(|l| {
                            let line: Value = serde_json::from_str(l).ok()?;
                            let text = line["content"][0]["text"].as_str()?;
                            (line["type"] == "user" && text == prompt)
                                .then(|| line["id"].as_str().map(str::to_owned))?
                        }),
                );
            }
        }
    }
    assert_eq!(found.len(), 1, "one user record of {prompt:?}: {found:?}");
    found.remove(0)
}

/// Issue 37, the other order: the chat imported while the hooks' lines wait in the queue,
/// then ingested. The hooks' Stop finds the imported turn (Gemini names no turn id: by its
/// prompt and time) and makes it theirs: one row, the hooks' fields, under the chat's id.
#[test]
fn a_gemini_turn_imported_before_its_hooks_are_ingested_is_one_row() {
    let Some(gemini) = gemini() else { return };
    let world = World::new();
    write_settings(&world, &[]);
    let script = vec![
        Step::Tool("run_shell_command", json!({"command": "echo hi"})),
        Step::Text("Said hi."),
    ];
    let mock = MockServer::start(google::responder(script));
    let cmd = gemini_command(&world, &gemini, &mock, "say hi");
    let run = harness::spawn(&world, "gemini", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    let context = format!("queue:\n{}\nstderr: {}", world.queue_text(), run.stderr);
    world.cmstore_ok(&["import", chats(&world).to_str().unwrap()]);
    let id = prompt_record_id(&world, "say hi");
    let sql = "select turn_key, turn_id, prompt, response, imported from turns";
    assert_eq!(
        world.query(sql),
        vec![json!({"turn_key": id, "turn_id": id, "prompt": "say hi",
                    "response": "Said hi.", "imported": 1})],
        "imported first\n{context}"
    );
    world.ingest();
    let after = world.query(sql);
    assert_eq!(
        after,
        vec![json!({"turn_key": id, "turn_id": id, "prompt": "say hi",
                    "response": "Said hi.", "imported": 0})],
        "then the hooks\n{context}"
    );
    world.cmstore_ok(&["import", chats(&world).to_str().unwrap()]);
    assert_eq!(world.query(sql), after, "imported again\n{context}");
    assert_eq!(
        world.query("select transcript_turns, hooked_turns, missed_turns from v_coverage"),
        vec![json!({"transcript_turns": 1, "hooked_turns": 1, "missed_turns": 0})],
        "{context}"
    );
}

#[test]
fn the_gate_denies_and_gemini_obeys() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let pre = s.query(
        "select json_extract(entry, '$.decision') decision, json_extract(entry, '$.risk') risk
         from events where event = 'BeforeTool' and json_extract(entry, '$.toolInput') like '%drop table%'",
    );
    assert_eq!(
        pre,
        vec![json!({"decision": "deny", "risk": "drop-table"})],
        "{ctx}"
    );
    // Gemini counts the denied call as a failed tool call in its own statistics.
    let stats = &s.run.json()["stats"]["tools"];
    assert_eq!(stats["totalCalls"], 3, "{stats}");
    assert_eq!(stats["totalFail"], 1, "{stats}");
    assert!(
        s.run.stderr.contains("cmstore safety gate"),
        "{}",
        s.run.stderr
    );
}

#[test]
fn a_failed_gemini_command_is_a_failure() {
    let script = |_: &World| {
        vec![
            Step::Tool(
                "run_shell_command",
                json!({"command": "echo failing; exit 3"}),
            ),
            Step::Text("It failed."),
        ]
    };
    let Some(s) = session("fail once", &[], script) else {
        return;
    };
    assert_eq!(
        s.query("select tool_name, success, outcome from tool_calls where session_id = :sid"),
        vec![json!({"tool_name": "run_shell_command", "success": 0, "outcome": "failed"})],
        "{}",
        s.context()
    );
    assert_eq!(
        s.world.scalar("select tool_failures from sessions"),
        1,
        "{}",
        s.context()
    );
}

#[test]
fn a_gemini_session_names_its_model_and_its_events_are_known() {
    let script = |_: &World| {
        vec![
            Step::Tool("run_shell_command", json!({"command": "echo hi"})),
            Step::Text("Done."),
        ]
    };
    let Some(s) = session("which model", &MODEL_EVENTS, script) else {
        return;
    };
    let ctx = s.context();
    assert_eq!(s.world.scalar("select model from sessions"), MODEL, "{ctx}");
    assert_eq!(
        s.query("select reason, count from unknown_counts"),
        Vec::<Value>::new(),
        "{ctx}"
    );
    let unknown = s.query(
        "select event, count(*) n from events where hook_type is null group by 1 order by 1",
    );
    assert_eq!(unknown, Vec::<Value>::new(), "{ctx}");
}

#[test]
fn an_interrupted_gemini_turn_is_recorded_as_interrupted() {
    let Some(gemini) = gemini() else { return };
    let world = World::new();
    write_settings(&world, &[]);
    let script = vec![
        Step::Tool("run_shell_command", json!({"command": "echo hi"})),
        Step::Stall,
    ];
    let mock = MockServer::start(google::responder(script));
    let cmd = gemini_command(&world, &gemini, &mock, "wait for me");
    let mut running = harness::spawn(&world, "gemini", cmd);
    let waiting = mock.wait_for(AGENT_TIMEOUT, |r| google::function_responses(&r.body) == 1);
    assert!(waiting, "gemini never sent the tool result");
    running.interrupt();
    running.wait_or_kill(Duration::from_secs(20));
    world.ingest();
    harness::assert_interrupted_turn(&world, "wait for me");
    // Issue 37: the chat shows the turn; an import finds the hooks' row of it and adds none.
    let sql = "select turn_key, prompt, outcome, imported from turns";
    let by_hooks = world.query(sql);
    world.cmstore_ok(&["import", chats(&world).to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&world, (sql, &by_hooks), "interrupted");
}

/// The usage rows, as the test compares them.
const USAGE_ROWS: &str = "select message_id, session_id, agent, model, input_tokens,
    cache_read_tokens, cache_write_tokens, output_tokens from usage order by input_tokens";

#[test]
fn gemini_usage_is_the_mocks_numbers_once_per_response() {
    let Some(gemini) = gemini() else { return };
    let world = World::new();
    write_settings(&world, &[]);
    let script = vec![
        Step::Tool("run_shell_command", json!({"command": "echo hi"})),
        Step::Text("Counted."),
    ];
    let mock = MockServer::start(google::responder_streaming(script, true));
    let cmd = gemini_command(&world, &gemini, &mock, "count my tokens");
    let run = harness::spawn(&world, "gemini", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = run.json()["session_id"]
        .as_str()
        .expect("session_id")
        .to_string();
    world.ingest();
    let ctx = format!("queue:\n{}\nstderr: {}", world.queue_text(), run.stderr);

    // One model call per step (two streamed chunks each): the final chunk's counts, once.
    let calls = mock
        .requests()
        .iter()
        .filter(|r| r.path.contains(":streamGenerateContent"))
        .count();
    assert_eq!(calls, 2, "{ctx}");
    let expected: Vec<Value> = (0..calls)
        .map(|n| {
            let u = google::Usage::of_step(n);
            json!({"session_id": id, "agent": "gemini", "model": MODEL,
                   "input_tokens": u.prompt - u.cached, "cache_read_tokens": u.cached,
                   "cache_write_tokens": 0, "output_tokens": u.candidates + u.thoughts})
        })
        .collect();
    let without_ids = |rows: Vec<Value>| -> Vec<Value> {
        rows.into_iter()
            .map(|mut r| {
                assert!(
                    r["message_id"].as_str().is_some_and(|m| !m.is_empty()),
                    "{r}"
                );
                r.as_object_mut().unwrap().remove("message_id");
                r
            })
            .collect()
    };
    let stored = world.query(USAGE_ROWS);
    assert_eq!(without_ids(stored.clone()), expected, "{ctx}");
    // The columns add up to Gemini's totalTokenCount.
    for (row, n) in stored.iter().zip(0..) {
        let sum: u64 = ["input_tokens", "cache_read_tokens", "output_tokens"]
            .iter()
            .map(|c| row[c].as_u64().unwrap())
            .sum();
        assert_eq!(sum, google::Usage::of_step(n).total(), "{row}");
    }
    // With cached and thinking counts, AfterAgent's prompt_response starts with " \n" per
    // model call: the stored answer is without those blanks.
    assert_eq!(
        world.query("select response from turns"),
        vec![json!({"response": "Counted."})],
        "{ctx}"
    );

    // Re-reads count nothing twice: the queue ingested again into a new store, then the chat
    // file imported (a whole re-read of what capture read), then a default import.
    std::fs::remove_file(world.cmhome().join("cmstore.db")).expect("remove the store");
    for side in ["cmstore.db-wal", "cmstore.db-shm"] {
        let _ = std::fs::remove_file(world.cmhome().join(side));
    }
    world.ingest();
    assert_eq!(world.query(USAGE_ROWS), stored, "re-ingest\n{ctx}");
    let chats = world.home().join(".gemini/tmp");
    world.cmstore_ok(&["import", chats.to_str().unwrap()]);
    world.cmstore_ok(&["import"]);
    world.ingest();
    assert_eq!(world.query(USAGE_ROWS), stored, "after import\n{ctx}");
    assert_eq!(
        world.scalar("select responses from v_usage_sessions"),
        json!(calls),
        "{ctx}"
    );
}

/// Issue 32, Gemini's counterpart of a blocking Stop hook: an `AfterAgent` hook of the user's
/// that blocks once (`decision: block`) makes Gemini send its reason back to the model as a new
/// request of the same turn (a `BeforeAgent` whose `prompt` is the reason) and fire
/// `AfterAgent` again with `stop_hook_active: true`. One turn, the person's prompt, the reason
/// as the turn's feedback, one prompt counted.
#[test]
fn a_blocking_after_agent_hook_continues_the_gemini_turn_it_blocked() {
    blocked_turn(false);
}

/// [`a_blocking_after_agent_hook_continues_the_gemini_turn_it_blocked`], the chat imported
/// before the hooks' lines are ingested: the import makes a turn of the reason's message too,
/// which the hooks' record of it as feedback drops.
#[test]
fn a_blocked_gemini_turn_imported_before_its_hooks_is_one_turn() {
    blocked_turn(true);
}

fn blocked_turn(import_first: bool) {
    let Some(gemini) = gemini() else { return };
    let world = World::new();
    let handler = json!({"type": "command", "command": world.block_once_hook(),
                         "timeout": 10_000});
    let mut user = serde_json::Map::new();
    user.insert(
        "AfterAgent".into(),
        json!([{"matcher": "*", "hooks": [handler]}]),
    );
    write_settings_beside(&world, &[], user);
    let mock = MockServer::start(google::responder(vec![Step::Text("The build passes.")]));
    let cmd = gemini_command(&world, &gemini, &mock, "fix the build");
    let run = harness::spawn(&world, "gemini", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    if import_first {
        world.cmstore_ok(&["import", chats(&world).to_str().unwrap()]);
        assert_eq!(
            world.scalar("select count(*) from turns where imported = 1"),
            json!(2),
            "the import reads the reason's message as a turn"
        );
    }
    world.ingest();
    let context = format!("queue:\n{}\nstderr: {}", world.queue_text(), run.stderr);
    assert!(world.blocked_once(), "the hook blocked once\n{context}");
    let count = |hook: &str| {
        world.scalar(&format!(
            "select count(*) from events where hook_type = '{hook}'"
        ))
    };
    assert_eq!(count("Stop"), json!(2), "{context}");
    let turns = world.query("select prompt, response, feedback, outcome, imported from turns");
    assert_eq!(turns.len(), 1, "{turns:?}\n{context}");
    assert_eq!(turns[0]["prompt"], "fix the build", "{context}");
    assert_eq!(turns[0]["feedback"], "2 tests fail", "{context}");
    assert_eq!(turns[0]["outcome"], Value::Null, "{context}");
    assert_eq!(turns[0]["imported"], json!(0), "{context}");
    assert_eq!(count("UserPromptSubmit"), json!(1), "{context}");
    assert_eq!(
        world.scalar("select prompts from sessions"),
        json!(1),
        "{context}"
    );
    // Issue 37: an import of the chat, where the reason is a `user` record of its own, finds
    // the turn and adds none for the reason.
    let sql = "select turn_key, prompt, response, feedback, outcome, imported from turns";
    let by_hooks = world.query(sql);
    world.cmstore_ok(&["import", "--again", chats(&world).to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&world, (sql, &by_hooks), &context);
}

/// Issue 39's budget with a real Gemini CLI: past the day's limit `BeforeAgent`'s
/// `decision: "deny"` refuses the prompt before any model request.
#[test]
fn a_gemini_prompt_past_the_budget_is_refused() {
    let Some(gemini) = gemini() else { return };
    let world = World::new();
    world.spend("day = 1\n", 2);
    write_settings(&world, &[]);
    let mock = MockServer::start(google::responder(vec![Step::Text("Hello.")]));
    let cmd = gemini_command(&world, &gemini, &mock, "say hello");
    let run = harness::spawn(&world, "gemini", cmd).wait(AGENT_TIMEOUT);
    harness::assert_prompt_refused(&world, &mock, &run, "say hello");
}
