//! Copilot CLI (`@github/copilot`, pinned in `.ci/install-agents`) in prompt mode, wired with
//! `cmstore hooks install --agent copilot`, offline against the mock Responses API as a custom
//! model provider (BYOK: `COPILOT_PROVIDER_BASE_URL`, no GitHub authentication).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::{self, Run, Session, World, AGENT_TIMEOUT};
use crate::mock::MockServer;
use crate::openai::{self, call_id, Step, Usage};

/// The npm package's launcher, run with node: it starts the platform package's native binary.
fn copilot() -> Option<PathBuf> {
    harness::agent("copilot", "node_modules/@github/copilot/npm-loader.js")
}

/// A model Copilot CLI knows (its configuration and token limits), served by the mock.
const MODEL: &str = "gpt-5.4";

/// Wires cmstore into the project the way a user does: `cmstore hooks install --agent copilot`.
fn install_hooks(world: &World) {
    let project = world.project();
    let project = project.to_str().expect("a UTF-8 temp path");
    world.cmstore_ok(&[
        "hooks",
        "install",
        "--agent",
        "copilot",
        "--project",
        project,
    ]);
}

/// `copilot -p PROMPT` in `world`, talking to `mock` and nothing else: `COPILOT_OFFLINE` turns
/// off GitHub authentication, telemetry, web tools, the GitHub MCP server and updates.
/// `COPILOT_ALLOW_ALL=true` (exactly "true") also trusts the project, which loads its hooks.
fn copilot_command(world: &World, copilot: &Path, mock: &MockServer, prompt: &str) -> Command {
    let mut cmd = world.command(Path::new("node"));
    cmd.arg(copilot)
        .args(["-p", prompt, "--allow-all", "--output-format", "json"])
        .env("COPILOT_HOME", world.home().join(".copilot"))
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env("COPILOT_ALLOW_ALL", "true")
        .env("COPILOT_PROVIDER_BASE_URL", format!("{}/v1", mock.url()))
        .env("COPILOT_PROVIDER_API_KEY", "sk-e2e-dummy")
        .env("COPILOT_PROVIDER_WIRE_API", "responses")
        .env("COPILOT_MODEL", MODEL);
    cmd
}

/// The session id in the closing `result` line of `--output-format json`.
fn session_id(run: &Run) -> String {
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .and_then(|v| v["sessionId"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no result line in copilot's output:\n{}", run.stdout))
}

/// The counts the mock reports for its `n`-th response of a session: distinct per response,
/// with cached and reasoning tokens, so that a count read from the wrong place shows.
fn usage(n: usize) -> Usage {
    let n = n as u64;
    Usage {
        input: 1200 + 10 * n,
        cached: 1000 + n,
        output: 30 + n,
        reasoning: 7,
    }
}

/// `cmstore ingest --once` once the agent has exited: its transcript is complete, so the
/// sweep need not wait for it to be quiet (`CMSTORE_CLOSE_QUIET_SECS=0`).
fn ingest_after_exit(world: &World) {
    let mut cmd = world.cmstore();
    cmd.args(["ingest", "--once"])
        .env("CMSTORE_CLOSE_QUIET_SECS", "0");
    let run = harness::spawn(world, "cmstore", cmd).wait(AGENT_TIMEOUT);
    assert!(run.status.success(), "ingest failed: {}", run.stderr);
}

/// Runs `copilot -p prompt` (with `extra` arguments) in `world` against a mock playing
/// `script`; returns the run and the mock.
fn run_copilot(
    world: &World,
    copilot: &Path,
    prompt: &str,
    extra: &[&str],
    script: Vec<Step>,
) -> (Run, MockServer) {
    let mock = MockServer::start(openai::responder_with_usage(script, usage));
    let mut cmd = copilot_command(world, copilot, &mock, prompt);
    cmd.args(extra);
    let run = harness::spawn(world, "copilot", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    (run, mock)
}

fn session(prompt: &str, script: impl FnOnce(&World) -> Vec<Step>) -> Option<Session> {
    let copilot = copilot()?;
    let world = World::new();
    world.enforce();
    install_hooks(&world);
    let (run, mock) = run_copilot(&world, &copilot, prompt, &[], script(&world));
    let id = session_id(&run);
    ingest_after_exit(&world);
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
            Step::Tool(
                "bash",
                json!({"command": "sleep 0.3; echo hi", "description": "say hi"}),
            ),
            Step::Tool(
                "bash",
                json!({"command": "echo failing; exit 3", "description": "fail"}),
            ),
            Step::Tool("bash", json!({"command": denied, "description": "risky"})),
            Step::Text("All done."),
        ]
    })
}

#[test]
fn events_tool_calls_and_session_are_what_copilot_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    // The denied call fires no postToolUse.
    assert_eq!(
        s.query(
            "select event, hook_type, count(*) n from events
             where session_id = :sid and synthetic is null group by 1, 2 order by 1"
        ),
        vec![
            json!({"event": "agentStop", "hook_type": "Stop", "n": 1}),
            json!({"event": "postToolUse", "hook_type": "PostToolUse", "n": 2}),
            json!({"event": "preToolUse", "hook_type": "PreToolUse", "n": 3}),
            json!({"event": "sessionEnd", "hook_type": "SessionEnd", "n": 1}),
            json!({"event": "sessionStart", "hook_type": "SessionStart", "n": 1}),
            json!({"event": "userPromptSubmitted", "hook_type": "UserPromptSubmit", "n": 1}),
        ],
        "{ctx}"
    );
    assert_eq!(
        s.world.scalar("select count(*) from unknown_counts"),
        0,
        "{ctx}"
    );
    // Copilot CLI's hooks carry no call id: the halves are paired in order.
    let calls = s.query(
        "select tool_name, outcome, duration_ms, end_ts - start_ts span
         from tool_calls where session_id = :sid order by start_ts",
    );
    let shape: Vec<Value> = calls
        .iter()
        .map(|c| json!([c["tool_name"], c["outcome"]]))
        .collect();
    assert_eq!(
        shape,
        vec![
            json!(["bash", "succeeded"]),
            json!(["bash", "failed"]),
            json!(["bash", "denied"]),
        ],
        "{ctx}"
    );
    let slept = calls[0]["duration_ms"].as_i64().expect("a duration");
    assert!(
        (300..AGENT_TIMEOUT.as_millis() as i64).contains(&slept),
        "{calls:?}"
    );
    assert_eq!(calls[0]["duration_ms"], calls[0]["span"], "{calls:?}");
    assert_eq!(calls[2]["duration_ms"], Value::Null, "{calls:?}");
    assert_eq!(
        s.query(
            "select session_id, agent, prompts, tool_uses, tool_failures, stops, ended
             from sessions"
        ),
        vec![
            json!({"session_id": s.id, "agent": "copilot", "prompts": 1, "tool_uses": 2,
                    "tool_failures": 1, "stops": 1, "ended": 1})
        ],
        "{ctx}"
    );
}

/// Issue 15.1: Copilot CLI 1.0.102 ends a shell result with `<shellId: N completed with exit
/// code 3>` and calls it `resultType: "success"`.
#[test]
fn a_failed_copilot_command_is_a_failure() {
    let Some(s) = main_session() else { return };
    assert_eq!(
        s.query(
            "select success, outcome, json_extract(e.entry, '$.exitCode') code
             from tool_calls t join events e on e.id = t.post_event_id
             where t.session_id = :sid order by t.start_ts"
        ),
        vec![
            json!({"success": 1, "outcome": "succeeded", "code": 0}),
            json!({"success": 0, "outcome": "failed", "code": 3}),
        ],
        "{}",
        s.context()
    );
}

/// Issue 15.3: `agentStop` carries no text and the transcript is written after it. In a `-p`
/// run of 1.0.102 `~/.copilot/session-state/<id>/events.jsonl` holds, even at `sessionEnd`,
/// only the turn's start (the prompt and the first tool call): the rest, the answer included,
/// is written after the last hook. `sessionEnd` notes the session as ended, and ingest's sweep
/// closes it once its transcript is quiet: the turn is one synthetic Stop with its prompt, its
/// answer and its tool calls.
#[test]
fn a_copilot_turn_has_its_prompt_and_response() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    assert_eq!(
        s.query(
            "select prompt, response, outcome, tool_call_count, synthetic from turns
             where session_id = :sid"
        ),
        vec![
            json!({"prompt": PROMPT, "response": "All done.", "outcome": null,
                    "tool_call_count": 3, "synthetic": 1})
        ],
        "{ctx}"
    );
    // Once, in the queue too (the extension reads it), and after another ingest.
    let stops = "select count(*) from events where session_id = :sid and synthetic = 1";
    assert_eq!(
        s.world
            .scalar(&stops.replace(":sid", &format!("'{}'", s.id))),
        1,
        "{ctx}"
    );
    ingest_after_exit(&s.world);
    assert_eq!(
        s.world
            .scalar(&stops.replace(":sid", &format!("'{}'", s.id))),
        1,
        "{ctx}"
    );
}

/// The same with a running `cmstore ingest` and no setting changed: the sweep closes the
/// session a few seconds after its end.
#[test]
fn a_running_ingest_records_the_copilot_answer_after_the_session() {
    let Some(copilot) = copilot() else { return };
    let world = World::new();
    install_hooks(&world);
    let mut ingest = world.cmstore();
    ingest.arg("ingest");
    let mut ingest = harness::spawn(&world, "cmstore", ingest);
    let script = vec![Step::Text("Followed.")];
    let (run, _mock) = run_copilot(&world, &copilot, "say something", &[], script);
    let id = session_id(&run);
    let sql = format!("select prompt, response from turns where session_id = '{id}'");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut turns = Vec::new();
    while std::time::Instant::now() < deadline {
        turns = world.query(&sql);
        if !turns.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    ingest.interrupt();
    let ingest = ingest.wait(AGENT_TIMEOUT);
    let state = world.home().join(".copilot/session-state").join(&id);
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_else(|e| e.to_string());
    assert_eq!(
        turns,
        vec![json!({"prompt": "say something", "response": "Followed."})],
        "queue:\n{}\ningest: {}\nevents.jsonl:\n{}\nworkspace files:\n{}",
        world.queue_text(),
        ingest.stderr,
        read(state.join("events.jsonl")),
        world.workspace_text(),
    );
}

/// Issue 15.3, the resumed turn: `copilot --resume <id> -p …` is a second turn of the same
/// session, in the same events.jsonl. Each turn has its own prompt and answer, none shifted
/// onto the other's Stop, whether or not an ingest closed the session between the two runs.
fn resumed_session(ingest_between: bool) {
    let Some(copilot) = copilot() else { return };
    let world = World::new();
    install_hooks(&world);
    let first = vec![Step::Text("First answer.")];
    let (run, _mock) = run_copilot(&world, &copilot, "first question", &[], first);
    let id = session_id(&run);
    if ingest_between {
        ingest_after_exit(&world);
    }
    let second = vec![
        Step::Tool(
            "bash",
            json!({"command": "echo again", "description": "again"}),
        ),
        Step::Text("Second answer."),
    ];
    let resume = ["--resume", id.as_str()];
    let (again, _mock) = run_copilot(&world, &copilot, "second question", &resume, second);
    assert_eq!(
        session_id(&again),
        id,
        "the resumed run is the same session"
    );
    ingest_after_exit(&world);
    let events = world
        .home()
        .join(".copilot/session-state")
        .join(&id)
        .join("events.jsonl");
    let ctx = format!(
        "queue:\n{}\nevents.jsonl:\n{}",
        world.queue_text(),
        std::fs::read_to_string(events).unwrap_or_default()
    );
    assert_eq!(
        world.query(&format!(
            "select prompt, response, tool_call_count from turns
             where session_id = '{id}'
             order by ts, (select seq from events where id = turns.event_id)"
        )),
        vec![
            json!({"prompt": "first question", "response": "First answer.",
                   "tool_call_count": 0}),
            json!({"prompt": "second question", "response": "Second answer.",
                   "tool_call_count": 1}),
        ],
        "{ctx}"
    );
    assert_eq!(
        world.scalar(&format!(
            "select count(*) from events where session_id = '{id}' and synthetic = 1"
        )),
        2,
        "{ctx}"
    );
    // One response in the first run, two in the second (whose mock counts from 0 again):
    // three rows, the line's own id keeping the reused response ids apart.
    assert_eq!(
        world.scalar(&format!(
            "select count(*) from usage where session_id = '{id}'"
        )),
        3,
        "{ctx}"
    );
    import_changes_no_turn(&world, &id, 2, &ctx);
}

/// Issue 37: `cmstore import` of the session's events.jsonl after the hooks recorded its
/// `turns` turns reads the same turns, by the same ids: none added, none changed, every one
/// the transcript shows hooked.
fn import_changes_no_turn(world: &World, id: &str, turns: usize, ctx: &str) {
    let events = world
        .home()
        .join(".copilot/session-state")
        .join(id)
        .join("events.jsonl");
    let sql = format!(
        "select turn_key, hook_type, prompt, response, tool_call_count, feedback, outcome,
                imported
         from turns where session_id = '{id}' order by turn_key"
    );
    let by_hooks = world.query(&sql);
    assert_eq!(by_hooks.len(), turns, "{ctx}");
    world.cmstore_ok(&["import", events.to_str().unwrap()]);
    assert_eq!(world.query(&sql), by_hooks, "{ctx}");
    assert_eq!(
        world.query(&format!(
            "select transcript_turns, hooked_turns, missed_turns, hook_only_turns
             from v_coverage where session_id = '{id}'"
        )),
        vec![
            json!({"transcript_turns": turns, "hooked_turns": turns, "missed_turns": 0,
                    "hook_only_turns": 0})
        ],
        "{ctx}"
    );
}

#[test]
fn a_resumed_copilot_session_has_each_turn_with_its_own_answer() {
    resumed_session(false);
}

#[test]
fn a_copilot_session_resumed_after_ingest_closed_it_has_each_turn_with_its_own_answer() {
    resumed_session(true);
}

/// Issue 16: Copilot CLI 1.0.102 writes each response's usage as a `session.usage_record`
/// line of events.jsonl; each is one `usage` row, with the mock's own counts stored the
/// Anthropic way (input without the cached tokens; output with the reasoning), once, also
/// after the queue is ingested again into a new store.
#[test]
fn copilot_usage_is_the_mocks_numbers_once_per_response() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let calls = s
        .mock
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/responses"))
        .count();
    assert_eq!(calls, 4, "{ctx}");
    let expected: Vec<Value> = (0..calls)
        .map(|n| {
            let u = usage(n);
            json!({"message_id": format!("resp_{n}"), "session_id": s.id, "agent": "copilot",
                   "model": MODEL, "input_tokens": u.input - u.cached,
                   "cache_read_tokens": u.cached, "cache_write_tokens": 0,
                   "output_tokens": u.output})
        })
        .collect();
    let rows = "select message_id, session_id, agent, model, input_tokens, cache_read_tokens,
        cache_write_tokens, output_tokens from usage order by message_id";
    assert_eq!(s.world.query(rows), expected, "{ctx}");
    std::fs::remove_file(s.world.cmhome().join("cmstore.db")).expect("remove the store");
    for side in ["cmstore.db-wal", "cmstore.db-shm"] {
        let _ = std::fs::remove_file(s.world.cmhome().join(side));
    }
    ingest_after_exit(&s.world);
    assert_eq!(s.world.query(rows), expected, "{ctx}");

    // Issue 36: the shutdown's own totals, read by an import of the log, agree with the
    // responses, and `cmstore usage` keeps saying so.
    let events = s
        .world
        .home()
        .join(".copilot/session-state")
        .join(&s.id)
        .join("events.jsonl");
    s.world.cmstore_ok(&["import", events.to_str().unwrap()]);
    let check = s.world.query(
        "select session_id, source, model, verdict, responses, agent_output_tokens
         from v_usage_check",
    );
    let output: u64 = (0..calls).map(|n| usage(n).output).sum();
    assert_eq!(
        check,
        vec![
            json!({"session_id": s.id, "source": "copilot-shutdown", "model": MODEL,
                    "verdict": "equal", "responses": calls, "agent_output_tokens": output})
        ],
        "{ctx}"
    );
    // Named: a session active in the last 10 minutes is otherwise left to settle.
    let args = ["usage", "--check", "--session", &s.id, "--format", "json"];
    let disagreeing = s.world.cmstore_ok(&args);
    assert_eq!(disagreeing.trim(), "[]", "{ctx}");
}

#[test]
fn the_gate_denies_and_copilot_obeys() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let pre = s.query(
        "select json_extract(entry, '$.decision') decision, json_extract(entry, '$.risk') risk
         from events where hook_type = 'PreToolUse'
         and json_extract(entry, '$.toolInput') like '%drop table%'",
    );
    assert_eq!(
        pre,
        vec![json!({"decision": "deny", "risk": "drop-table"})],
        "{ctx}"
    );
    let output = s
        .mock
        .requests()
        .iter()
        .find_map(|r| openai::output_of(&r.body, &call_id(2)))
        .expect("a function_call_output for the denied call");
    assert!(
        output.contains("Denied by preToolUse hook: Blocked by cmstore safety gate"),
        "{output}"
    );
}

/// Issue 32, Copilot CLI's counterpart of a blocking Stop hook: an `agentStop` hook of the
/// user's that blocks once (`decision: block`) makes Copilot CLI (1.0.102) send the reason on
/// as a user message, firing `userPromptSubmitted` with it, then `agentStop` again with
/// `stop_hook_active: true`; its events.jsonl names the reason in the hook's `hook.end`. One
/// turn, the person's prompt, the reason its feedback, one prompt counted.
#[test]
fn a_blocking_agent_stop_hook_continues_the_copilot_turn_it_blocked() {
    let Some(copilot) = copilot() else { return };
    let world = World::new();
    // The user's own hook file beside the one `hooks install` writes.
    let dir = world.project().join(".github/hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let hooks = json!({"version": 1, "hooks": {"agentStop": [{"type": "command",
        "bash": world.block_once_hook()}]}});
    std::fs::write(dir.join("block.json"), hooks.to_string()).unwrap();
    install_hooks(&world);
    let (run, _mock) = run_copilot(
        &world,
        &copilot,
        "fix the build",
        &[],
        vec![Step::Text("The build passes.")],
    );
    ingest_after_exit(&world);
    let context = format!("queue:\n{}\nstdout: {}", world.queue_text(), run.stdout);
    assert!(world.blocked_once(), "the hook blocked once\n{context}");
    let turns = world.query("select prompt, response, feedback, outcome from turns");
    assert_eq!(turns.len(), 1, "{turns:?}\n{context}");
    assert_eq!(turns[0]["prompt"], "fix the build", "{context}");
    assert_eq!(turns[0]["feedback"], "2 tests fail", "{context}");
    assert_eq!(
        world.query("select hook_type, count(*) n from events where event = 'userPromptSubmitted' group by 1 order by 1"),
        vec![
            json!({"hook_type": "HookFeedback", "n": 1}),
            json!({"hook_type": "UserPromptSubmit", "n": 1}),
        ],
        "{context}"
    );
    assert_eq!(
        world.scalar("select prompts from sessions"),
        json!(1),
        "{context}"
    );
    import_changes_no_turn(&world, &session_id(&run), 1, &context);
}

/// Issue 39's budget with a real Copilot CLI, whose prompt hook cannot refuse: past the day's
/// limit it is told at the session's start, the prompt goes on, its line says so, and the tool
/// call is denied (`preToolUse`'s `permissionDecision: "deny"`): the command never runs.
#[test]
fn a_copilot_tool_call_past_the_budget_is_denied() {
    let Some(copilot) = copilot() else { return };
    let world = World::new();
    world.spend("day = 1\n", 2);
    install_hooks(&world);
    let touch = format!("touch {}", world.marker().display());
    let (run, _mock) = run_copilot(
        &world,
        &copilot,
        "touch the marker",
        &[],
        vec![
            Step::Tool("bash", json!({"command": touch, "description": "touch"})),
            Step::Text("Done."),
        ],
    );
    ingest_after_exit(&world);
    let context = format!("stdout: {}\nqueue:\n{}", run.stdout, world.queue_text());
    assert!(
        !world.marker().exists(),
        "the denied command ran\n{context}"
    );
    let calls = world.query(
        "select hook_type, risk, decision, json_extract(entry, '$.budget.level') level
         from events where json_extract(entry, '$.budget') is not null order by seq",
    );
    assert_eq!(
        calls,
        vec![
            // Told at the session's start, the one hook whose reply Copilot reads as context.
            json!({"hook_type": "SessionStart", "risk": null, "decision": null, "level": "over"}),
            json!({"hook_type": "UserPromptSubmit", "risk": null, "decision": null, "level": "over"}),
            json!({"hook_type": "PreToolUse", "risk": "budget:day.usd", "decision": "deny", "level": "over"}),
        ],
        "{context}"
    );
}
