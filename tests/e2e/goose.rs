//! Goose (`@aaif/goose-binary-linux-x64`, pinned in `.ci/install-agents`; its native binary run
//! itself) in `goose run`, wired with `cmstore hooks install --agent goose --user` (cmstore's
//! plugin folder, `~/.agents/plugins/cmstore/hooks/hooks.json`), against the mock Messages API
//! as Goose's `anthropic` provider (`ANTHROPIC_HOST` the mock's). Offline: no keyring, no
//! telemetry, tools run without asking (`GOOSE_MODE=auto`; the gate's deny still applies).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::anthropic::Usage;
use crate::anthropic::{self, MODEL};
use crate::harness::{self, Session, World};
use crate::mock::MockServer;

/// The native binary.
fn goose() -> Option<PathBuf> {
    crate::harness::agent(
        "goose",
        "node_modules/@aaif/goose-binary-linux-x64/bin/goose",
    )
}

/// `goose run -t PROMPT` in `world`, offline, against `mock`.
fn goose_command(world: &World, goose: &Path, mock: &MockServer, prompt: &str) -> Command {
    let mut cmd = world.command(goose);
    cmd.args(["run", "-t", prompt])
        .env("GOOSE_PROVIDER", "anthropic")
        .env("GOOSE_MODEL", MODEL)
        .env("ANTHROPIC_HOST", mock.url())
        .env("ANTHROPIC_API_KEY", "e2e-dummy-key")
        .env("GOOSE_MODE", "auto")
        .env("GOOSE_DISABLE_KEYRING", "1")
        .env("GOOSE_TELEMETRY_OFF", "1");
    cmd
}

const PROMPT: &str = "run the three steps";

/// A `shell` call's input as Goose's developer tools take it.
fn shell(command: &str) -> serde_json::Value {
    json!({ "command": command })
}

/// [`anthropic::three_steps`] run by Goose, and the denied command.
fn main_session() -> Option<(Session, String)> {
    let goose = goose()?;
    let world = World::new();
    let (mock, denied) = anthropic::three_steps(&world, "shell", shell);
    world.cmstore_ok(&["hooks", "install", "--agent", "goose", "--user"]);
    let cmd = goose_command(&world, &goose, &mock, PROMPT);
    Some((Session::run(world, mock, "goose", cmd), denied))
}

/// Every event Goose fires is one row under `goose`, in its session (`YYYYMMDD_N`), with the
/// project as its folder although three of its payloads name none; the calls paired by their
/// ids with the outcome Goose reported (PostToolUse or PostToolUseFailure), the gate's deny
/// obeyed (the denied command never ran) and Goose's own account of it (`PreToolUseResult`);
/// the turn with its prompt and answer.
#[test]
fn goose_events_calls_and_turn_are_what_it_did() {
    let Some((s, denied)) = main_session() else {
        return;
    };
    let ctx = s.context();
    let kinds = s.hook_types("goose");
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(
        [
            count("SessionStart"),
            count("UserPromptSubmit"),
            count("PreToolUse"),
            count("PreToolUseResult"),
            count("PostToolUse"),
            count("PostToolUseFailure"),
            count("Stop"),
            count("SessionEnd"),
        ],
        [1, 1, 3, 3, 1, 1, 1, 1],
        "{kinds:?}\n{ctx}"
    );
    let folders = s.query("SELECT DISTINCT cwd FROM events WHERE session_id = :sid");
    let project = s.world.project();
    assert_eq!(
        folders,
        [json!({"cwd": project.to_str().unwrap()})],
        "{ctx}"
    );
    let calls = s.query(
        "SELECT tool_name, input, outcome FROM tool_calls WHERE session_id = :sid \
         ORDER BY start_ts",
    );
    assert_eq!(
        calls,
        [
            json!({"tool_name": "shell", "input": "echo hi", "outcome": "succeeded"}),
            json!({"tool_name": "shell", "input": "echo failing; exit 3", "outcome": "failed"}),
            json!({"tool_name": "shell", "input": denied, "outcome": "denied"}),
        ],
        "{ctx}"
    );
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let decisions = s.query(
        "SELECT json_extract(entry, '$.reason') AS reason FROM events WHERE session_id = :sid \
         AND hook_type = 'PreToolUseResult' AND json_extract(entry, '$.reason') IS NOT NULL",
    );
    assert_eq!(decisions.len(), 1, "Goose's record of the deny\n{ctx}");
    assert!(
        decisions[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("drop")),
        "{decisions:?}\n{ctx}"
    );
    let turns = s.query("SELECT prompt, response FROM turns WHERE session_id = :sid");
    assert_eq!(
        turns,
        [json!({"prompt": PROMPT, "response": "All three steps are done."})],
        "{ctx}"
    );
}

/// Goose's store (`~/.local/share/goose/sessions/sessions.db`), imported after the run: each
/// model call's usage is the mock's counts (Goose counts the cache inside the input; cmstore
/// stores it apart), Goose's own running totals agree, and the turn and the calls are the ones
/// the hooks recorded: the import changes no turn and adds no call.
#[test]
fn goose_usage_from_its_store_is_the_mocks_numbers_and_the_hooks_turn() {
    let Some((s, _)) = main_session() else {
        return;
    };
    let ctx = s.context();
    let turns = "SELECT session_id, turn_key, hook_type, prompt, response, outcome, imported \
                 FROM turns ORDER BY session_id, turn_key";
    let by_hooks = s.query(turns);
    let store = s
        .world
        .home()
        .join(".local/share/goose/sessions/sessions.db");
    let said = s.world.cmstore_ok(&["import", store.to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&s.world, (turns, &by_hooks), &ctx);
    harness::assert_every_call_hooked(&s, &ctx);
    let usage = s.query(
        "SELECT model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens \
         FROM usage WHERE session_id = :sid ORDER BY cache_read_tokens",
    );
    let expected: Vec<serde_json::Value> = (0..4)
        .map(Usage::of_step)
        .map(|u| {
            json!({"model": MODEL, "input_tokens": u.input, "output_tokens": u.output,
                   "cache_read_tokens": u.cache_read, "cache_write_tokens": u.cache_write()})
        })
        .collect();
    assert_eq!(usage, expected, "{said}\n{ctx}");
    let check = s.world.cmstore_ok(&["usage", "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_str(&check).unwrap();
    let verdicts: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["source"] == "goose-session")
        .filter_map(|r| r["verdict"].as_str())
        .collect();
    assert_eq!(verdicts, ["equal"], "{check}\n{ctx}");
    assert_eq!(
        s.query("SELECT agent, cwd FROM sessions"),
        [json!({"agent": "goose", "cwd": s.world.project().to_str().unwrap()})],
        "{ctx}"
    );
}
