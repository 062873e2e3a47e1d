//! Cline's CLI (`cline` 3, pinned in `.ci/install-agents`; its platform binary run itself)
//! headless (`cline --json PROMPT`), wired with `cmstore hooks install --agent cline --user`
//! (a hook script per event in `~/.cline/hooks/`), against the mock Messages API as its
//! `anthropic` provider (`~/.cline/data/settings/providers.json`, the mock's `baseUrl`).
//! Offline: telemetry off in its global settings, in-process (no hub daemon), no feature-flag
//! poll, no update check (docs/dev/e2e.md).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::anthropic::{self, Step, Usage};
use crate::harness::{self, Session, World};
use crate::mock::MockServer;

/// The platform binary the wrapper package installs.
fn cline() -> Option<PathBuf> {
    harness::agent("cline", "node_modules/@cline/cli-linux-x64/bin/cline")
}

/// The provider (the mock, as `anthropic`: Cline's own `auth` takes no base URL for it, so the
/// file is written as it would) and settings, then cmstore's hooks as a user installs them.
fn write_config(world: &World, mock: &MockServer) {
    let settings = world.home().join(".cline/data/settings");
    std::fs::create_dir_all(&settings).expect("create ~/.cline/data/settings");
    let providers = json!({"version": 1, "lastUsedProvider": "anthropic", "providers": {
        "anthropic": {"settings": {"provider": "anthropic", "apiKey": "e2e-dummy-key",
                                   "model": anthropic::MODEL,
                                   "baseUrl": format!("{}/v1", mock.url())},
                      // Without it Cline drops the file and calls its own service.
                      "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual"}}});
    std::fs::write(settings.join("providers.json"), providers.to_string()).expect("providers");
    std::fs::write(
        settings.join("global-settings.json"),
        json!({"telemetryOptOut": true, "autoUpdateEnabled": false}).to_string(),
    )
    .expect("global settings");
    world.cmstore_ok(&["hooks", "install", "--agent", "cline", "--user"]);
}

/// `cline --json PROMPT` in `world`, offline.
fn cline_command(world: &World, cline: &Path, prompt: &str) -> Command {
    let mut cmd = world.command(cline);
    cmd.args(["--json", prompt])
        .env("USER", "e2e")
        .env("CLINE_SESSION_BACKEND_MODE", "local")
        .env("IS_TEST", "true")
        .env("CLINE_NO_AUTO_UPDATE", "1")
        .env("NO_UPDATE_NOTIFIER", "1")
        .env("CLINE_DISABLE_CLINE_PASS_NOTICE", "1");
    cmd
}

/// Cline runs the hooks of a run's end without waiting for them: they may still be writing
/// when it exits. Waits, at most 10 s, for the queue to hold a line of `hook_type`.
fn wait_for_line(world: &World, hook_type: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let needle = format!("\"hookType\":\"{hook_type}\"");
    while !world.queue_text().contains(&needle) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `run_commands` call's input.
fn commands(line: &str) -> serde_json::Value {
    json!({"commands": [line]})
}

/// A command that works, one that exits 3, then the answer.
fn main_session() -> Option<Session> {
    let cline = cline()?;
    let world = World::new();
    let script = vec![
        Step::Tool("run_commands", commands("echo hi")),
        Step::Tool("run_commands", commands("echo failing; exit 3")),
        Step::Text("Both steps are done."),
    ];
    let mock = MockServer::start(anthropic::responder_counting(script, Usage::of_step));
    write_config(&world, &mock);
    let cmd = cline_command(&world, &cline, "two steps");
    let run = harness::spawn(&world, "cline", cmd).wait(harness::AGENT_TIMEOUT);
    run.assert_ok();
    wait_for_line(&world, "Stop");
    world.ingest();
    let id = harness::only_session(&world, "cline", &run);
    Some(Session {
        world,
        mock,
        run,
        id,
    })
}

/// What a headless Cline run fires (its start, each call's two halves, its end), each one
/// row; the calls paired by the model's call ids, the failing command `failed` with its exit
/// code (Cline reports the tool itself a success); the turn with its prompt (read from the
/// session's files: no payload carries it), answer and model; and each model call's usage,
/// the mock's counts.
#[test]
fn cline_events_tool_calls_turn_and_usage_are_what_it_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let kinds = s.hook_types("cline");
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(
        [
            count("SessionStart"),
            count("PreToolUse"),
            count("PostToolUse"),
            count("Stop"),
        ],
        [1, 2, 2, 1],
        "{kinds:?}\n{ctx}"
    );
    let calls = s.query(
        "SELECT tool_name, outcome, input FROM tool_calls WHERE session_id = :sid \
         ORDER BY start_ts",
    );
    assert_eq!(
        calls,
        [
            json!({"tool_name": "run_commands", "outcome": "succeeded",
                   "input": "{\"commands\":[\"echo hi\"]}"}),
            json!({"tool_name": "run_commands", "outcome": "failed",
                   "input": "{\"commands\":[\"echo failing; exit 3\"]}"}),
        ],
        "{ctx}"
    );
    let exits = s.query(
        "SELECT json_extract(entry, '$.exitCode') AS code FROM events \
         WHERE session_id = :sid AND hook_type = 'PostToolUse' ORDER BY seq",
    );
    assert_eq!(exits, [json!({"code": null}), json!({"code": 3})], "{ctx}");
    let turns = s.query("SELECT prompt, response, model FROM turns WHERE session_id = :sid");
    assert_eq!(
        turns,
        [
            json!({"prompt": "two steps", "response": "Both steps are done.",
                "model": anthropic::MODEL})
        ],
        "{ctx}"
    );
    let usage = s.query(
        "SELECT input_tokens, output_tokens, cache_write_tokens, cache_read_tokens \
         FROM usage WHERE session_id = :sid ORDER BY cache_read_tokens",
    );
    let expected: Vec<serde_json::Value> = (0..3)
        .map(Usage::of_step)
        .map(|u| {
            json!({"input_tokens": u.input, "output_tokens": u.output,
                   "cache_write_tokens": u.cache_write(), "cache_read_tokens": u.cache_read})
        })
        .collect();
    assert_eq!(usage, expected, "{ctx}");
    // `cmstore import` of Cline's sessions finds the same calls under the same keys, and the
    // turn the hooks recorded (met by its prompt and time: Cline's hooks name no turn).
    let turns = "SELECT session_id, turn_key, hook_type, prompt, response, outcome, imported \
                 FROM turns ORDER BY session_id, turn_key";
    let by_hooks = s.query(turns);
    let sessions = s.world.home().join(".cline/data/sessions");
    s.world.cmstore_ok(&["import", sessions.to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&s.world, (turns, &by_hooks), &ctx);
    // Its calls too, by the model's call id, which Cline's hooks send: every one hooked.
    harness::assert_every_call_hooked(&s, &ctx);
    let again = s.query(
        "SELECT input_tokens, output_tokens, cache_write_tokens, cache_read_tokens \
         FROM usage WHERE session_id = :sid ORDER BY cache_read_tokens",
    );
    assert_eq!(again, expected, "after import\n{ctx}");
    assert_eq!(
        s.world
            .scalar("SELECT count(*) FROM usage WHERE origin = 'import'"),
        0,
        "{ctx}"
    );
}

/// In enforce mode the gate's deny is Cline's `cancel`: the command never ran, and Cline
/// stopped the whole task there (it tells the model nothing); the call is `denied`, and the
/// run (which fires no end of its own, only the session's shutdown) is an `interrupted`
/// turn of its prompt.
#[test]
fn a_cline_call_the_gate_denies_never_runs() {
    let Some(cline) = cline() else { return };
    let world = World::new();
    world.enforce();
    let denied = format!(
        "touch {} && echo 'drop table users'",
        world.marker().display()
    );
    let script = vec![
        Step::Tool("run_commands", commands(&denied)),
        Step::Text("Done."),
    ];
    let mock = MockServer::start(anthropic::responder(script));
    write_config(&world, &mock);
    let cmd = cline_command(&world, &cline, "one step");
    let run = harness::spawn(&world, "cline", cmd).wait(harness::AGENT_TIMEOUT);
    wait_for_line(&world, "SessionEnd");
    world.ingest();
    let context = format!(
        "queue:\n{}\nstdout: {}\nstderr: {}",
        world.queue_text(),
        run.stdout,
        run.stderr
    );
    assert!(
        !world.marker().exists(),
        "the denied command ran\n{context}"
    );
    let calls = world.query("SELECT outcome FROM tool_calls");
    assert_eq!(calls, [json!({"outcome": "denied"})], "{context}");
    assert_eq!(mock.requests().len(), 1, "Cline stops the task\n{context}");
    let turns = world.query("SELECT prompt, outcome FROM turns");
    assert_eq!(
        turns,
        [json!({"prompt": "one step", "outcome": "interrupted"})],
        "{context}"
    );
    // Issue 37: the cancelled run's turn, which the hooks keyed by the run's id, is the one an
    // import of Cline's sessions reads (met by its prompt and time): none added.
    let sql = "SELECT turn_key, prompt, outcome, imported FROM turns";
    let by_hooks = world.query(sql);
    let sessions = world.home().join(".cline/data/sessions");
    world.cmstore_ok(&["import", sessions.to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&world, (sql, &by_hooks), &context);
}
