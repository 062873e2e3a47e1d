//! Qwen Code (`@qwen-code/qwen-code`, pinned in `.ci/install-agents`) in headless mode, wired
//! with `cmstore hooks install --agent qwen --user`, against the mock Messages API (Qwen Code's
//! `anthropic` provider, its `baseUrl` the mock's).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::anthropic::{self, Step, Usage, MODEL};
use crate::harness::{self, Session, World};
use crate::mock::MockServer;

/// The CLI's bundled entry point, run with node.
fn qwen() -> Option<PathBuf> {
    harness::agent("qwen", "node_modules/@qwen-code/qwen-code/cli.js")
}

/// The user's settings: the mock as the one Anthropic model, no telemetry, usage statistics
/// or update checks (nothing but loopback); then cmstore's hooks, merged in the way a user
/// wires them.
fn write_settings(world: &World, mock: &MockServer) {
    let settings = json!({
        "modelProviders": {"anthropic": [
            {"id": MODEL, "envKey": "ANTHROPIC_API_KEY", "baseUrl": mock.url()}
        ]},
        "security": {"auth": {"selectedType": "anthropic"}},
        "model": {"name": MODEL},
        "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
    });
    let dir = world.home().join(".qwen");
    std::fs::create_dir_all(&dir).expect("create ~/.qwen");
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("write settings");
    world.cmstore_ok(&["hooks", "install", "--agent", "qwen", "--user"]);
}

/// `qwen -p PROMPT --yolo` in `world`.
fn qwen_command(world: &World, qwen: &Path, prompt: &str) -> Command {
    let mut cmd = world.command(Path::new("node"));
    cmd.arg(qwen)
        .args(["-p", prompt, "-o", "json"])
        // Runs tools without asking; the gate's deny still applies (PreToolUse).
        .arg("--yolo")
        .env("ANTHROPIC_API_KEY", "e2e-dummy-key");
    cmd
}

const PROMPT: &str = "run the two steps";

/// A command that works, one the gate denies (it would create the marker), then the answer;
/// each reply reports counts of its own (`Usage::of_step`).
fn main_session() -> Option<Session> {
    let qwen = qwen()?;
    let world = World::new();
    world.enforce();
    let denied = format!(
        "touch {} && echo 'drop table users'",
        world.marker().display()
    );
    let script = vec![
        Step::Tool(
            "run_shell_command",
            json!({"command": "echo hi", "description": "say hi"}),
        ),
        Step::Tool(
            "run_shell_command",
            json!({"command": denied, "description": "denied"}),
        ),
        Step::Text("Both steps are done."),
    ];
    let mock = MockServer::start(anthropic::responder_counting(script, Usage::of_step));
    write_settings(&world, &mock);
    let cmd = qwen_command(&world, &qwen, PROMPT);
    Some(Session::run(world, mock, "qwen", cmd))
}

#[test]
fn qwen_events_prompt_and_tool_calls_are_what_it_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let kinds = s.hook_types("qwen");
    for kind in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "{kind} in {kinds:?}\n{ctx}"
        );
    }
    // One prompt: Qwen Code fires UserPromptSubmit again, without a prompt, for each round of
    // tool results it sends the model; those are model requests.
    let prompts = s.query(
        "SELECT prompt FROM events WHERE session_id = :sid AND hook_type = 'UserPromptSubmit'",
    );
    assert_eq!(prompts.len(), 1, "{ctx}");
    assert_eq!(prompts[0]["prompt"], PROMPT, "{ctx}");
    let rounds = s.query(
        "SELECT count(*) AS n FROM events WHERE session_id = :sid \
         AND hook_type = 'ModelRequest' AND event = 'UserPromptSubmit'",
    );
    assert_eq!(rounds[0]["n"], 2, "two rounds of tool results\n{ctx}");
    let session = s.query("SELECT prompts, agent FROM sessions WHERE session_id = :sid");
    assert_eq!(session[0]["prompts"], 1, "{ctx}");
    // The turn's answer, from its Stop (Qwen Code's chats, which would give its prompt too,
    // are read for usage only: docs/agents.md).
    let turns =
        s.query("SELECT prompt, response, turn_id, synthetic FROM turns WHERE session_id = :sid");
    assert_eq!(turns.len(), 1, "{turns:?}\n{ctx}");
    assert_eq!(turns[0]["response"], "Both steps are done.", "{ctx}");
    assert_eq!(turns[0]["prompt"], PROMPT, "{turns:?}\n{ctx}");
    // The turn's id is the chat's prompt record's uuid, as Claude Code's turns take theirs.
    let chats = s.world.home().join(".qwen/projects");
    let chat = std::fs::read_dir(
        std::fs::read_dir(&chats)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
            .join("chats"),
    )
    .unwrap()
    .map(|e| e.unwrap().path())
    .find(|p| p.to_string_lossy().ends_with(&format!("{}.jsonl", s.id)))
    .expect("the session's chat");
    let prompt_uuid = std::fs::read_to_string(chat)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["type"] == "user")
        .and_then(|r| r["uuid"].as_str().map(str::to_owned))
        .expect("a user record");
    assert_eq!(
        turns[0]["turn_id"],
        prompt_uuid.as_str(),
        "{turns:?}\n{ctx}"
    );
    // The command that ran, paired and succeeded; the one the gate denied, denied.
    let calls = s.query(
        "SELECT tool_name, outcome, input FROM tool_calls WHERE session_id = :sid ORDER BY rowid",
    );
    assert_eq!(calls.len(), 2, "{calls:?}\n{ctx}");
    assert_eq!(calls[0]["tool_name"], "run_shell_command", "{ctx}");
    assert_eq!(calls[0]["outcome"], "succeeded", "{calls:?}\n{ctx}");
    assert_eq!(calls[1]["outcome"], "denied", "{calls:?}\n{ctx}");
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
}

/// Qwen Code's usage, read by capture's cursor from the chat file the hooks name: one row per
/// reply of the agent loop with the mock's counts (the cache writes inside the input, as Qwen
/// Code records them), under the hooks' session; a later `cmstore import` of the chats adds
/// nothing and changes nothing.
#[test]
fn qwen_usage_is_the_mocks_numbers_once_per_response() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let sql = "SELECT message_id, model, input_tokens, cache_read_tokens, cache_write_tokens, \
               output_tokens, sidechain FROM usage WHERE session_id = :sid ORDER BY message_id";
    let rows = s.query(sql);
    let expected: Vec<_> = (0..3)
        .map(|n| {
            let u = Usage::of_step(n);
            json!({
                "message_id": format!("msg_mock_{n}"),
                "model": MODEL,
                "input_tokens": u.input + u.cache_write(),
                "cache_read_tokens": u.cache_read,
                "cache_write_tokens": 0,
                "output_tokens": u.output,
                "sidechain": 0,
            })
        })
        .collect();
    assert_eq!(rows, expected, "{ctx}");
    let all = s.query("SELECT count(*) AS n FROM usage");
    assert_eq!(all[0]["n"], 3, "no row outside the session\n{ctx}");
    let turns_sql = "SELECT session_id, turn_key, hook_type, prompt, response, model, outcome, \
                     imported FROM turns ORDER BY session_id, turn_key";
    let by_hooks = s.query(turns_sql);
    assert_eq!(by_hooks.len(), 1, "{by_hooks:?}\n{ctx}");
    let chats = s.world.home().join(".qwen").join("projects");
    s.world.cmstore_ok(&["import", chats.to_str().unwrap()]);
    assert_eq!(s.query(sql), expected, "after import\n{ctx}");
    let all = s.query("SELECT count(*) AS n FROM usage");
    assert_eq!(all[0]["n"], 3, "import adds nothing\n{ctx}");
    // Issue 37: the import reads the same turn by the same id (the prompt record's uuid).
    harness::assert_import_changed_no_turn(&s.world, (turns_sql, &by_hooks), &ctx);
}
