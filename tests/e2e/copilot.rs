//! Copilot CLI (`@github/copilot`, pinned in `.ci/install-agents`) in prompt mode, wired with
//! `cmstore hooks install --agent copilot`, offline against the mock Responses API as a custom
//! model provider (BYOK: `COPILOT_PROVIDER_BASE_URL`, no GitHub authentication).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::harness::{self, Run, World, AGENT_TIMEOUT};
use crate::mock::MockServer;
use crate::openai::{self, call_id, Step};

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

/// One finished `copilot -p` session in enforce mode, ingested.
struct Session {
    world: World,
    mock: MockServer,
    run: Run,
    id: String,
}

fn session(prompt: &str, script: impl FnOnce(&World) -> Vec<Step>) -> Option<Session> {
    let copilot = copilot()?;
    let world = World::new();
    world.enforce();
    install_hooks(&world);
    let mock = MockServer::start(openai::responder(script(&world)));
    let cmd = copilot_command(&world, &copilot, &mock, prompt);
    let run = harness::spawn(&world, "copilot", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    let id = session_id(&run);
    world.ingest();
    Some(Session {
        world,
        mock,
        run,
        id,
    })
}

impl Session {
    fn query(&self, sql: &str) -> Vec<Value> {
        let sql = sql.replace(":sid", &format!("'{}'", self.id));
        self.world.query(&sql)
    }

    fn context(&self) -> String {
        format!(
            "queue:\n{}\nagent stdout: {}\nagent stderr: {}",
            self.world.queue_text(),
            self.run.stdout,
            self.run.stderr
        )
    }
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

/// Issue 15.3: `agentStop` carries no text and the transcript is written after it; cmstore
/// records the turn at `sessionEnd`, from `~/.copilot/session-state/<id>/events.jsonl`. In a
/// `-p` run of 1.0.102 that file holds, even then, only the turn's start (the prompt and the
/// first tool call): the rest, the answer included, is written after the last hook.
#[test]
#[ignore = "Copilot CLI 1.0.102 writes the answer to events.jsonl only after its last hook \
            (sessionEnd), so no hook can read it; needs ingest to read the transcript later"]
fn a_copilot_turn_has_its_prompt_and_response() {
    let Some(s) = main_session() else { return };
    assert_eq!(
        s.query("select prompt, response, outcome from turns where session_id = :sid"),
        vec![json!({"prompt": PROMPT, "response": "All done.", "outcome": null})],
        "{}",
        s.context()
    );
}

/// What cmstore can record of a Copilot turn today: its prompt, from the transcript that
/// `sessionEnd` finds (its payload names none). Before, the session had no turn at all.
#[test]
fn a_copilot_turn_has_its_prompt() {
    let Some(s) = main_session() else { return };
    assert_eq!(
        s.query("select prompt from turns where session_id = :sid"),
        vec![json!({ "prompt": PROMPT })],
        "{}",
        s.context()
    );
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
