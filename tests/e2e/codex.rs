//! Codex (`@openai/codex`, pinned in `.ci/install-agents`) in `codex exec`, its hooks written by
//! hand into the test's `~/.codex/config.toml` (`[[hooks.<Event>]]` tables), against the mock
//! Responses API as a custom model provider.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::harness::{self, Run, Session, World, AGENT_TIMEOUT};
use crate::mock::MockServer;
use crate::openai::{self, call_id, Step};

/// The launcher the npm package installs (its `bin` entry), run with node: it starts the
/// platform's native binary with the bundled ripgrep on `PATH`.
fn codex() -> Option<PathBuf> {
    harness::agent("codex", "node_modules/@openai/codex/bin/codex.js")
}

/// The model the mock serves. Unknown to Codex's model catalog (it warns and uses defaults),
/// so no catalog or model-list request is made.
const MODEL: &str = "gpt-5-codex";

/// `s` as a TOML basic string.
fn toml_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Writes `~/.codex/config.toml`: the mock as the model provider, no approvals and no sandbox
/// (the gate is what must stop a command), nothing that reaches beyond loopback (update check,
/// analytics, plugins and apps off); then wires cmstore the way a user does, with
/// `cmstore hooks install --agent codex --user` (`~/.codex/hooks.json`).
fn write_config(world: &World, mock: &MockServer) {
    let config = format!(
        "model = {model}\nmodel_provider = \"mock\"\napproval_policy = \"never\"\n\
         sandbox_mode = \"danger-full-access\"\ncheck_for_update_on_startup = false\n\n\
         [model_providers.mock]\nname = \"mock\"\nbase_url = {url}\nwire_api = \"responses\"\n\
         env_key = \"CMSTORE_E2E_OPENAI_KEY\"\n\n\
         [analytics]\nenabled = false\n\n\
         [features]\nplugins = false\nremote_plugin = false\napps = false\n\
         plugin_sharing = false\ntool_suggest = false\n",
        model = toml_str(MODEL),
        url = toml_str(&format!("{}/v1", mock.url())),
    );
    let dir = world.home().join(".codex");
    std::fs::create_dir_all(&dir).expect("create ~/.codex");
    std::fs::write(dir.join("config.toml"), config).expect("write config.toml");
    world.cmstore_ok(&["hooks", "install", "--agent", "codex", "--user"]);
}

/// `codex exec PROMPT` in `world`. Hooks a user has not reviewed do not run, hence
/// `--dangerously-bypass-hook-trust`; the project is no git repository.
fn codex_command(world: &World, codex: &Path, prompt: &str) -> Command {
    let mut cmd = reviewed_codex_command(world, codex);
    cmd.arg("--dangerously-bypass-hook-trust").arg(prompt);
    cmd
}

/// `codex exec` in `world`, its hooks run only as Codex's review allows (the prompt to add).
fn reviewed_codex_command(world: &World, codex: &Path) -> Command {
    let mut cmd = world.command(Path::new("node"));
    cmd.arg(codex)
        .args(["exec", "--json", "--skip-git-repo-check"])
        .env("CODEX_HOME", world.home().join(".codex"))
        .env("CMSTORE_E2E_OPENAI_KEY", "sk-e2e-dummy");
    cmd
}

/// The thread id in `codex exec --json`'s first line: the hooks' `session_id`.
fn thread_id(run: &Run) -> String {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "thread.started")
        .and_then(|v| v["thread_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no thread.started in codex's output:\n{}", run.stdout))
}

fn session(prompt: &str, script: impl FnOnce(&World) -> Vec<Step>) -> Option<Session> {
    let codex = codex()?;
    let world = World::new();
    world.enforce();
    let mock = MockServer::start(openai::responder(script(&world)));
    write_config(&world, &mock);
    let cmd = codex_command(&world, &codex, prompt);
    let run = harness::spawn(&world, "codex", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = thread_id(&run);
    world.ingest();
    Some(Session {
        world,
        mock,
        run,
        id,
    })
}

const PROMPT: &str = "run the three steps";

/// A command that works, one that exits 3, one the gate denies (it would create the marker),
/// then the answer.
fn main_session() -> Option<Session> {
    session(PROMPT, |world| {
        let denied = format!(
            "touch {} && echo 'drop table users'",
            world.marker().display()
        );
        vec![
            Step::Tool("exec_command", json!({"cmd": "sleep 0.3; echo hi"})),
            Step::Tool("exec_command", json!({"cmd": "echo failing; exit 3"})),
            Step::Tool("exec_command", json!({"cmd": denied})),
            Step::Text("All done."),
        ]
    })
}

#[test]
fn events_tool_calls_and_session_are_what_codex_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    // The denied call fires no PostToolUse; no PermissionRequest with approvals off.
    assert_eq!(
        s.query(
            "select event, hook_type, count(*) n from events where session_id = :sid
             group by 1, 2 order by 1"
        ),
        vec![
            json!({"event": "PostToolUse", "hook_type": "PostToolUse", "n": 2}),
            json!({"event": "PreToolUse", "hook_type": "PreToolUse", "n": 3}),
            json!({"event": "SessionEnd", "hook_type": "SessionEnd", "n": 1}),
            json!({"event": "SessionStart", "hook_type": "SessionStart", "n": 1}),
            json!({"event": "Stop", "hook_type": "Stop", "n": 1}),
            json!({"event": "UserPromptSubmit", "hook_type": "UserPromptSubmit", "n": 1}),
        ],
        "{ctx}"
    );
    assert_eq!(
        s.world.scalar("select count(*) from unknown_counts"),
        0,
        "{ctx}"
    );
    let calls = s.query(
        "select tool_call_id, tool_name, outcome, duration_ms, end_ts - start_ts span
         from tool_calls where session_id = :sid order by start_ts",
    );
    let shape: Vec<Value> = calls
        .iter()
        .map(|c| json!([c["tool_call_id"], c["tool_name"], c["outcome"]]))
        .collect();
    assert_eq!(
        shape,
        vec![
            json!([call_id(0), "Bash", "succeeded"]),
            json!([call_id(1), "Bash", "failed"]),
            json!([call_id(2), "Bash", "denied"]),
        ],
        "{ctx}"
    );
    // Codex reports no duration of its own to the hooks: it is the time between them.
    let slept = calls[0]["duration_ms"].as_i64().expect("a duration");
    assert!(
        (300..AGENT_TIMEOUT.as_millis() as i64).contains(&slept),
        "{calls:?}"
    );
    assert_eq!(calls[0]["duration_ms"], calls[0]["span"], "{calls:?}");
    assert_eq!(calls[2]["duration_ms"], Value::Null, "{calls:?}");
    assert_eq!(
        s.query(
            "select session_id, agent, model, prompts, tool_uses, tool_failures, stops, ended
             from sessions"
        ),
        vec![
            json!({"session_id": s.id, "agent": "codex", "model": MODEL, "prompts": 1,
                    "tool_uses": 2, "tool_failures": 1, "stops": 1, "ended": 1})
        ],
        "{ctx}"
    );
}

/// Issue 15.1: Codex 0.171's PostToolUse gives only the command's output (`failing\n`); the
/// exit code is in the rollout, which cmstore reads for it.
#[test]
fn a_failed_codex_command_is_a_failure() {
    let Some(s) = main_session() else { return };
    assert_eq!(
        s.query(
            "select tool_call_id, success, outcome from tool_calls
             where session_id = :sid and tool_call_id in ('call_mock_0', 'call_mock_1')
             order by start_ts"
        ),
        vec![
            json!({"tool_call_id": call_id(0), "success": 1, "outcome": "succeeded"}),
            json!({"tool_call_id": call_id(1), "success": 0, "outcome": "failed"}),
        ],
        "{}",
        s.context()
    );
    assert_eq!(
        s.query(
            "select json_extract(entry, '$.exitCode') code from events
             where hook_type = 'PostToolUse' order by ts"
        ),
        vec![json!({"code": 0}), json!({"code": 3})],
        "{}",
        s.context()
    );
}

/// Issue 15.2: the Stop carries only the answer; the prompt is the UserPromptSubmit's of the
/// same `turn_id`.
#[test]
fn a_codex_turn_has_its_prompt_and_response() {
    let Some(s) = main_session() else { return };
    let turn_id = s.query(
        "select turn_id from events where hook_type = 'UserPromptSubmit' and session_id = :sid",
    );
    assert_eq!(turn_id.len(), 1, "{}", s.context());
    assert_eq!(
        s.query("select turn_id, prompt, response, model, synthetic, outcome from turns"),
        vec![json!({"turn_id": turn_id[0]["turn_id"], "prompt": PROMPT,
                    "response": "All done.", "model": MODEL, "synthetic": 0,
                    "outcome": null})],
        "{}",
        s.context()
    );
    import_changes_no_turn(&s.world, 1, &s.context());
}

/// Issue 37: `cmstore import` of the world's rollouts after the hooks recorded `turns` turns
/// reads the same turns, by the turn ids Codex's hooks send: none added, none changed, each
/// one the rollout shows hooked. And the calls: each the rollouts show (counted here from
/// their lines) is the one the hooks recorded under its `call_id`.
fn import_changes_no_turn(world: &World, turns: usize, ctx: &str) {
    let sql = "select session_id, turn_key, hook_type, prompt, response, model, outcome,
                      imported from turns order by session_id, turn_key";
    let by_hooks = world.query(sql);
    assert_eq!(by_hooks.len(), turns, "{ctx}");
    let found = rollouts(world);
    assert!(!found.is_empty(), "{ctx}");
    let mut args = vec!["import".to_string()];
    args.extend(found.iter().map(|p| p.display().to_string()));
    world.cmstore_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(world.query(sql), by_hooks, "{ctx}");
    assert_eq!(
        world.query(
            "select sum(transcript_turns) shown, sum(hooked_turns) hooked,
                    sum(missed_turns) missed, sum(hook_only_turns) hook_only from v_coverage"
        ),
        vec![json!({"shown": turns, "hooked": turns, "missed": 0, "hook_only": 0})],
        "{ctx}"
    );
    let calls = rollout_calls(&found);
    let hooked = world.query(
        "select count(distinct tool_call_id) n from tool_calls where tool_call_id is not null",
    );
    assert_eq!(hooked, vec![json!({"n": calls})], "{ctx}");
    assert_eq!(
        world.query(
            "select sum(transcript_tool_calls) shown, sum(hooked_tool_calls) hooked,
                    sum(missed_tool_calls) missed, sum(hook_only_tool_calls) hook_only
             from v_coverage"
        ),
        vec![json!({"shown": calls, "hooked": calls, "missed": 0, "hook_only": 0})],
        "{ctx}"
    );
}

/// The distinct calls (`call_id`s of `function_call`, `custom_tool_call` and
/// `local_shell_call` items) the rollouts show.
fn rollout_calls(rollouts: &[PathBuf]) -> usize {
    let mut ids = std::collections::BTreeSet::new();
    for path in rollouts {
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let item = &v["payload"];
            let kind = item["type"].as_str().unwrap_or("");
            let call = ["function_call", "custom_tool_call", "local_shell_call"].contains(&kind);
            if let (true, Some(id)) = (call, item["call_id"].as_str()) {
                ids.insert(id.to_owned());
            }
        }
    }
    ids.len()
}

#[test]
fn the_gate_denies_and_codex_obeys() {
    let Some(s) = main_session() else { return };
    // Who decided each call (issue 39): with approvals off Codex says `bypassPermissions`, so
    // what ran ran by that mode; the gate's deny is the gate's.
    assert_eq!(
        s.query(
            "select outcome, permission_mode, decided_by from v_tool_call_decisions order by ts"
        ),
        vec![
            json!({"outcome": "succeeded", "permission_mode": "bypassPermissions", "decided_by": "mode"}),
            json!({"outcome": "failed", "permission_mode": "bypassPermissions", "decided_by": "mode"}),
            json!({"outcome": "denied", "permission_mode": "bypassPermissions", "decided_by": "gate"}),
        ],
        "{}",
        s.context()
    );
    let ctx = s.context();
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let pre = s.query(
        "select json_extract(entry, '$.decision') decision, json_extract(entry, '$.risk') risk
         from events where tool_call_id = 'call_mock_2' and hook_type = 'PreToolUse'",
    );
    assert_eq!(
        pre,
        vec![json!({"decision": "deny", "risk": "drop-table"})],
        "{ctx}"
    );
    // What Codex sent the model back for the denied call: the block and the gate's reason.
    let output = s
        .mock
        .requests()
        .iter()
        .find_map(|r| openai::output_of(&r.body, &call_id(2)))
        .expect("a function_call_output for the denied call");
    assert!(
        output.starts_with("Command blocked by PreToolUse hook: Blocked by cmstore safety gate"),
        "{output}"
    );
}

/// Issue 15.5: SIGINT while the model request is pending fires `Interrupt` (with the turn's
/// `turn_id`) and `SessionEnd`, no `Stop`.
#[test]
fn an_interrupted_codex_turn_is_recorded_as_interrupted() {
    let Some(codex) = codex() else { return };
    let world = World::new();
    let script = vec![
        Step::Tool("exec_command", json!({"cmd": "echo hi"})),
        Step::Stall,
    ];
    let mock = MockServer::start(openai::responder(script));
    write_config(&world, &mock);
    let cmd = codex_command(&world, &codex, "wait for me");
    let mut running = harness::spawn(&world, "codex", cmd);
    let waiting = mock.wait_for(AGENT_TIMEOUT, |r| openai::function_outputs(&r.body) == 1);
    assert!(waiting, "codex never sent the tool result");
    running.interrupt();
    running.wait_or_kill(Duration::from_secs(20));
    world.ingest();
    let events =
        world.query("select hook_type from events where hook_type in ('Interrupt', 'Stop')");
    assert_eq!(
        events,
        vec![json!({"hook_type": "Interrupt"})],
        "{}",
        world.queue_text()
    );
    harness::assert_interrupted_turn(&world, "wait for me");
    import_changes_no_turn(&world, 1, &world.queue_text());
}

/// The rollouts Codex wrote under the world's `~/.codex/sessions`.
fn rollouts(world: &World) -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, found);
            } else if path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("rollout-"))
            {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&world.home().join(".codex/sessions"), &mut found);
    found
}

/// The usage rows, as the test compares them.
const USAGE_ROWS: &str = "select message_id, session_id, agent, model, input_tokens,
    cache_read_tokens, cache_write_tokens, output_tokens, origin from usage order by ts, input_tokens";

/// Issue 16: what a real rollout records of the mock's counts (`event_msg` `token_count`),
/// capture alone storing exactly those counts once per response, and `cmstore import` of the
/// same rollout (twice, and by default) leaving the same rows.
#[test]
fn codex_usage_is_the_mocks_numbers_once_per_response() {
    let Some(codex) = codex() else { return };
    let world = World::new();
    let script = vec![
        Step::Tool("exec_command", json!({"cmd": "echo hi"})),
        Step::Text("Counted."),
    ];
    let mock = MockServer::start(openai::responder_counting(script, openai::Usage::of_step));
    write_config(&world, &mock);
    let run = harness::spawn(
        &world,
        "codex",
        codex_command(&world, &codex, "count my tokens"),
    )
    .wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = thread_id(&run);
    world.ingest();
    let found = rollouts(&world);
    assert_eq!(found.len(), 1, "{found:?}");
    let rollout = std::fs::read_to_string(&found[0]).expect("read the rollout");
    let ctx = format!(
        "rollout:\n{rollout}\nqueue:\n{}\nstderr: {}",
        world.queue_text(),
        run.stderr
    );

    // The replies the mock gave, in order: each one's counts.
    let replies: Vec<openai::Usage> = mock
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/responses"))
        .map(|r| match r.body.get("tools") {
            Some(_) => openai::Usage::of_step(openai::function_outputs(&r.body)),
            None => openai::Usage::of_step(openai::SIDE),
        })
        .collect();
    assert_eq!(
        replies,
        [openai::Usage::of_step(0), openai::Usage::of_step(1)],
        "{ctx}"
    );

    // What the rollout records: after each response a `token_count` whose `last_token_usage`
    // is that response's counts and whose `total_token_usage` is the running sum.
    let counts: Vec<Value> = rollout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "event_msg" && l["payload"]["type"] == "token_count")
        .filter(|l| !l["payload"]["info"].is_null())
        .map(|l| l["payload"]["info"].clone())
        .collect();
    let as_codex = |u: &openai::Usage| {
        // 0.171.0 also writes `cache_write_input_tokens` (0: the Responses API reports none).
        json!({"input_tokens": u.input, "cached_input_tokens": u.cached,
               "cache_write_input_tokens": 0,
               "output_tokens": u.output, "reasoning_output_tokens": u.reasoning,
               "total_tokens": u.total()})
    };
    let mut lasts: Vec<Value> = counts
        .iter()
        .map(|i| i["last_token_usage"].clone())
        .collect();
    lasts.dedup();
    assert_eq!(
        lasts,
        replies.iter().map(as_codex).collect::<Vec<_>>(),
        "{ctx}"
    );
    let running: u64 = replies.iter().map(openai::Usage::total).sum();
    assert_eq!(
        counts.last().unwrap()["total_token_usage"]["total_tokens"],
        json!(running),
        "{ctx}"
    );
    let meta: Value = serde_json::from_str(rollout.lines().next().unwrap()).unwrap();
    assert_eq!(meta["type"], "session_meta", "{ctx}");
    assert_eq!(
        meta["payload"]["id"],
        json!(id),
        "the hooks' session is the rollout's"
    );

    // Capture alone (the hooks' cursor read the rollout; no import yet): one row per
    // response, the mock's counts, keyed as `cmstore import` keys them.
    let mut sum = 0;
    let expected: Vec<Value> = replies
        .iter()
        .map(|u| {
            sum += u.total();
            json!({"message_id": format!("codex:{id}:{sum}"), "session_id": id,
                   "agent": "codex", "model": MODEL, "input_tokens": u.input - u.cached,
                   "cache_read_tokens": u.cached, "cache_write_tokens": 0,
                   "output_tokens": u.output, "origin": "hook"})
        })
        .collect();
    let stored = world.query(USAGE_ROWS);
    assert_eq!(stored, expected, "capture alone\n{ctx}");
    // `cmstore import` of the same rollout leaves the same rows (still capture's).
    world.cmstore_ok(&["import", found[0].to_str().unwrap()]);
    assert_eq!(world.query(USAGE_ROWS), stored, "after import\n{ctx}");
    // Run again, and by default (`~/.codex/sessions`): the same rows.
    world.cmstore_ok(&["import", found[0].to_str().unwrap()]);
    world.cmstore_ok(&["import"]);
    world.ingest();
    assert_eq!(world.query(USAGE_ROWS), stored, "after import\n{ctx}");
    assert_eq!(
        world.query(
            "select responses, input_tokens + cache_read_tokens + output_tokens total
                     from v_usage_sessions"
        ),
        vec![json!({"responses": replies.len(), "total": running})],
        "{ctx}"
    );
    assert_eq!(
        world.query("select cwd from sessions"),
        vec![json!({"cwd": world.project().to_str().unwrap()})],
        "{ctx}"
    );
}

/// Issue 32, Codex's counterpart of a blocking Stop hook: a Stop hook of the user's that
/// blocks once (`decision: block`) makes Codex go on in the same turn (the same `turn_id`,
/// no new prompt) and fire Stop again: one turn, its prompt the person's, two Stop events.
#[test]
fn a_blocking_stop_hook_continues_the_codex_turn_it_blocked() {
    let Some(s) = session("fix the build", |world| {
        // The user's hooks.json, which `hooks install` then merges cmstore's into.
        let dir = world.home().join(".codex");
        std::fs::create_dir_all(&dir).unwrap();
        let hooks = json!({"hooks": {"Stop": [{"hooks": [{"type": "command",
            "command": world.block_once_hook()}]}]}});
        std::fs::write(dir.join("hooks.json"), hooks.to_string()).unwrap();
        vec![Step::Text("The build passes.")]
    }) else {
        return;
    };
    let context = s.world.queue_text();
    assert!(s.world.blocked_once(), "the hook blocked once");
    let turns = s.world.query("select prompt, response from turns");
    assert_eq!(turns.len(), 1, "{turns:?}\n{context}");
    assert_eq!(turns[0]["prompt"], "fix the build", "{context}");
    let count = |hook: &str| {
        s.world.scalar(&format!(
            "select count(*) from events where hook_type = '{hook}'"
        ))
    };
    assert_eq!(count("Stop"), json!(2), "{context}");
    assert_eq!(count("UserPromptSubmit"), json!(1), "{context}");
    import_changes_no_turn(&s.world, 1, &context);
}

/// Issue 39's budget with a real Codex: past the day's limit `UserPromptSubmit`'s
/// `decision: "block"` refuses the prompt before any model request.
#[test]
fn a_codex_prompt_past_the_budget_is_refused() {
    let Some(codex) = codex() else { return };
    let world = World::new();
    world.spend("day = 1\n", 2);
    let mock = MockServer::start(openai::responder(vec![Step::Text("Hello.")]));
    write_config(&world, &mock);
    let cmd = codex_command(&world, &codex, "say hello");
    let run = harness::spawn(&world, "codex", cmd).wait(AGENT_TIMEOUT);
    harness::assert_prompt_refused(&world, &mock, &run, "say hello");
}

/// Issue 39: without `--dangerously-bypass-hook-trust`, Codex 0.171 runs none of cmstore's
/// hooks until they are trusted; `cmstore hooks doctor` says so, and the `config.toml` lines
/// it gives (Codex's own key and hash for each hook) make Codex run them all, which holds the
/// doctor's hashes to the real Codex.
#[test]
fn codex_runs_the_hooks_once_trusted_as_the_doctor_says() {
    let Some(codex) = codex() else { return };
    let world = World::new();
    let mock = MockServer::start(openai::responder(vec![
        Step::Tool("exec_command", json!({"cmd": "echo hi"})),
        Step::Text("Done."),
    ]));
    write_config(&world, &mock);
    let doctor = || {
        let mut cmd = world.cmstore();
        cmd.args(["hooks", "doctor", "--agent", "codex", "--user"])
            .env("CODEX_HOME", world.home().join(".codex"));
        harness::spawn(&world, "doctor", cmd).wait(AGENT_TIMEOUT)
    };
    let exec = |prompt: &str| {
        let mut cmd = reviewed_codex_command(&world, &codex);
        cmd.arg(prompt);
        let run = harness::spawn(&world, "codex", cmd).wait(AGENT_TIMEOUT);
        run.assert_ok();
        world.ingest();
        thread_id(&run)
    };
    let events_of = |id: &str| {
        world.query(&format!(
            "select hook_type, count(*) n from events where session_id = '{id}'
             group by 1 order by 1"
        ))
    };

    let report = doctor();
    assert!(!report.status.success(), "{}", report.stdout);
    assert!(
        report
            .stdout
            .contains("Codex leaves out 12 of cmstore's 12 hooks (12 not reviewed)"),
        "{}",
        report.stdout
    );
    let untrusted = exec("run it");
    assert_eq!(
        events_of(&untrusted),
        Vec::<Value>::new(),
        "{}",
        world.queue_text()
    );

    let lines: String = report
        .stdout
        .lines()
        .filter(|l| l.starts_with("        "))
        .map(|l| format!("{}\n", l.trim()))
        .collect();
    let config = world.home().join(".codex/config.toml");
    let text = std::fs::read_to_string(&config).expect("config.toml");
    std::fs::write(&config, format!("{text}\n{lines}")).expect("write config.toml");
    let report = doctor();
    assert!(report.status.success(), "{}", report.stdout);
    assert!(
        !report.stdout.contains("will not fire"),
        "{}",
        report.stdout
    );

    let trusted = exec("run it again");
    assert_eq!(
        events_of(&trusted),
        vec![
            json!({"hook_type": "PostToolUse", "n": 1}),
            json!({"hook_type": "PreToolUse", "n": 1}),
            json!({"hook_type": "SessionEnd", "n": 1}),
            json!({"hook_type": "SessionStart", "n": 1}),
            json!({"hook_type": "Stop", "n": 1}),
            json!({"hook_type": "UserPromptSubmit", "n": 1}),
        ],
        "{}",
        world.queue_text()
    );
}
