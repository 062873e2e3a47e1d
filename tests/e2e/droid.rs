//! Factory's Droid (`@factory/cli-linux-x64`, pinned in `.ci/install-agents`) in headless mode
//! (`droid exec`), wired with `cmstore hooks install --agent droid --user`, against the mock
//! Messages API: a custom model of Droid's own (`customModels`, its `anthropic` provider, the
//! mock's URL), run air-gapped (`FACTORY_AIRGAP_ENABLED`: no call to Factory's servers, no
//! login, no telemetry).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::anthropic::{self, Step, Usage};
use crate::harness::{self, Session, World};
use crate::mock::MockServer;

/// The platform binary.
fn droid() -> Option<PathBuf> {
    harness::agent("droid", "node_modules/@factory/cli-linux-x64/bin/droid")
}

/// The custom model's id as `droid exec -m` takes it: `custom:<displayName>-<index>`.
const MODEL_ID: &str = "custom:Mock-0";

/// The model the custom model sends. Not a Claude model's name: for one, Droid asks for
/// extended thinking, and against the mock's replies (which have no thinking block) it then
/// keeps no token totals at all.
const DROID_MODEL: &str = "mock-model";

/// The user's settings (the mock as Droid's one custom model), then cmstore's hooks, written
/// into `~/.factory/hooks.json` as a user wires them.
fn write_settings(world: &World, mock: &MockServer) {
    let settings = json!({
        "customModels": [{
            "model": DROID_MODEL,
            "displayName": "Mock",
            "baseUrl": mock.url(),
            "apiKey": "e2e-dummy-key",
            "provider": "anthropic",
            "maxOutputTokens": 4096,
        }]
    });
    let dir = world.home().join(".factory");
    std::fs::create_dir_all(&dir).expect("create ~/.factory");
    std::fs::write(dir.join("settings.json"), settings.to_string()).expect("write settings");
    world.cmstore_ok(&["hooks", "install", "--agent", "droid", "--user"]);
}

/// `droid exec PROMPT` in `world`, its tools run without asking (`--auto high`; the gate's
/// deny still applies, on PreToolUse).
fn droid_command(world: &World, droid: &Path, prompt: &str) -> Command {
    let mut cmd = world.command(droid);
    cmd.args(["exec", "--auto", "high", "-m", MODEL_ID, prompt])
        .env("FACTORY_AIRGAP_ENABLED", "1")
        .env("FACTORY_DROID_AUTO_UPDATE_ENABLED", "false");
    cmd
}

const PROMPT: &str = "run the two steps";

/// An `Execute` call's input as Droid's tool schema requires it: a summary of three to eight
/// words starting with a capital, and a declared risk.
fn execute(command: &str, summary: &str) -> serde_json::Value {
    json!({
        "command": command,
        "summary": summary,
        "riskLevelReason": "It prints a line and touches nothing else",
        "riskLevel": "low",
    })
}

/// A command that works, one the gate denies (it would create the marker), then the answer;
/// each reply reports counts of its own (`Usage::of_step`).
fn main_session() -> Option<Session> {
    let droid = droid()?;
    let world = World::new();
    world.enforce();
    let denied = format!(
        "touch {} && echo 'drop table users'",
        world.marker().display()
    );
    let script = vec![
        Step::Tool("Execute", execute("echo hi", "Print a short greeting")),
        Step::Tool("Execute", execute(&denied, "Create the marker file")),
        Step::Text("Both steps are done."),
    ];
    let mock = MockServer::start(anthropic::responder_counting(script, Usage::of_step));
    write_settings(&world, &mock);
    let cmd = droid_command(&world, &droid, PROMPT);
    Some(Session::run(world, mock, "droid", cmd))
}

/// What `droid exec` fires (its session's start and end, each tool call's two halves, the
/// turn's Stop; no prompt event in this mode), the calls paired without ids with their
/// outcomes (the exit code Droid writes after the output), the permission mode, the gate's
/// deny obeyed (the denied command never ran), and the turn with its prompt and answer.
#[test]
fn droid_events_and_tool_calls_are_what_it_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let kinds = s.hook_types("droid");
    for kind in [
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SessionEnd",
    ] {
        assert!(
            kinds.iter().any(|k| k == kind),
            "{kind} in {kinds:?}\n{ctx}"
        );
    }
    assert_eq!(
        kinds.iter().filter(|k| *k == "PreToolUse").count(),
        2,
        "{kinds:?}\n{ctx}"
    );
    let calls = s.query(
        "SELECT tool_name, outcome, input, permission_mode FROM tool_calls \
         WHERE session_id = :sid ORDER BY rowid",
    );
    assert_eq!(calls.len(), 2, "{calls:?}\n{ctx}");
    assert_eq!(calls[0]["tool_name"], "Execute", "{ctx}");
    assert_eq!(calls[0]["input"], "echo hi", "{calls:?}\n{ctx}");
    assert_eq!(calls[0]["outcome"], "succeeded", "{calls:?}\n{ctx}");
    assert_eq!(calls[0]["permission_mode"], "auto-high", "{calls:?}\n{ctx}");
    assert_eq!(calls[1]["outcome"], "denied", "{calls:?}\n{ctx}");
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let exit = s.query(
        "SELECT json_extract(entry, '$.exitCode') AS code FROM events \
         WHERE session_id = :sid AND hook_type = 'PostToolUse'",
    );
    assert_eq!(exit.len(), 1, "{exit:?}\n{ctx}");
    assert_eq!(exit[0]["code"], 0, "{ctx}");
    // The deny's reason reached the model, as the denied call's result.
    let results = anthropic::sent_tool_results(&s.mock);
    assert!(
        results
            .iter()
            .any(|r| r.contains("Blocked by cmstore safety gate")),
        "{results:?}\n{ctx}"
    );
    // The turn, its prompt and answer read from Droid's transcript at its Stop (neither is in
    // a payload of `droid exec`); its id is the prompt's line's.
    let turns = s.query("SELECT prompt, response, turn_id FROM turns WHERE session_id = :sid");
    assert_eq!(turns.len(), 1, "{turns:?}\n{ctx}");
    assert_eq!(turns[0]["prompt"], PROMPT, "{turns:?}\n{ctx}");
    assert_eq!(
        turns[0]["response"], "Both steps are done.",
        "{turns:?}\n{ctx}"
    );
    let transcript = s.query(
        "SELECT json_extract(entry, '$.transcriptPath') AS transcript_path FROM events \
         WHERE session_id = :sid AND hook_type = 'Stop'",
    );
    let transcript = transcript[0]["transcript_path"]
        .as_str()
        .expect("a transcript path");
    let prompt_id = std::fs::read_to_string(transcript)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["message"]["content"][0]["text"] == PROMPT)
        .and_then(|l| l["id"].as_str().map(str::to_owned))
        .expect("the prompt's line");
    assert_eq!(turns[0]["turn_id"], prompt_id.as_str(), "{turns:?}\n{ctx}");

    // Issue 37: `cmstore import` of Droid's sessions reads the same turn by the same id: none
    // added, none changed, the turn the transcript shows hooked.
    let sql = "SELECT session_id, turn_key, hook_type, prompt, response, model, outcome, \
               imported FROM turns ORDER BY session_id, turn_key";
    let by_hooks = s.query(sql);
    let sessions = s.world.home().join(".factory").join("sessions");
    s.world.cmstore_ok(&["import", sessions.to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&s.world, (sql, &by_hooks), &ctx);
}

/// Droid's usage: the session's totals Droid keeps beside its transcript, read by the hooks
/// that read the transcript, one row for the session with the sums of the mock's counts over
/// its three replies, under the custom model's own name; a later `cmstore import` of Droid's
/// sessions adds nothing and changes nothing.
#[test]
fn droid_usage_is_the_sessions_sums_of_the_mocks_numbers() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let sum = |field: fn(&Usage) -> u64| (0..3).map(|n| field(&Usage::of_step(n))).sum::<u64>();
    let sql = "SELECT message_id, model, input_tokens, output_tokens, cache_write_tokens, \
               cache_read_tokens FROM usage";
    let expected = [json!({
        "message_id": format!("droid-session:{}", s.id),
        "model": DROID_MODEL,
        "input_tokens": sum(|u| u.input),
        "output_tokens": sum(|u| u.output),
        "cache_write_tokens": sum(Usage::cache_write),
        "cache_read_tokens": sum(|u| u.cache_read),
    })];
    assert_eq!(s.query(sql), expected, "{ctx}");
    let sessions = s.world.home().join(".factory").join("sessions");
    s.world.cmstore_ok(&["import", sessions.to_str().unwrap()]);
    assert_eq!(s.query(sql), expected, "after import\n{ctx}");
}
