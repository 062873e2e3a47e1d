//! Kilo's CLI (`@kilocode/cli-linux-x64`, pinned in `.ci/install-agents`; its platform binary
//! run itself), an OpenCode fork, in `kilo run`, wired with `cmstore hooks install --agent kilo
//! --user` (cmstore's OpenCode plugin in `~/.config/kilo/plugin/`, handing events on as
//! `--agent kilo`), against the mock Messages API as a provider of the user's `kilo.json`.
//! Offline as OpenCode is: Kilo's own variables turn off the models list, the auto-update,
//! the LSP downloads, sharing and telemetry, and its configuration folder already holds the
//! plugin SDK (`@kilocode/plugin`) it would otherwise install with npm.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::anthropic::{self, Usage};
use crate::harness::{self, Session, World};
use crate::mock::MockServer;
use crate::opencode;

/// The platform binary.
fn kilo() -> Option<PathBuf> {
    crate::harness::agent("kilo", "node_modules/@kilocode/cli-linux-x64/bin/kilo")
}

/// Kilo's version, which its configuration folder's package files name.
const VERSION: &str = "7.7.9";

/// The user's `kilo.json`: the mock as a provider with one model, as OpenCode's; then
/// cmstore's plugin installed as a user installs it.
fn write_config(world: &World, mock: &MockServer) {
    let dir = world.home().join(".config").join("kilo");
    let mut config = opencode::provider_config(mock);
    config["$schema"] = json!("https://app.kilo.ai/config.json");
    opencode::provide_sdk(&dir, "@kilocode/plugin", VERSION);
    std::fs::write(dir.join("kilo.json"), config.to_string()).expect("write kilo.json");
    world.cmstore_ok(&["hooks", "install", "--agent", "kilo", "--user"]);
}

/// `kilo run PROMPT` in `world`, offline.
fn kilo_command(world: &World, kilo: &Path, prompt: &str) -> Command {
    let mut cmd = world.command(kilo);
    cmd.args(["run", prompt])
        .env("KILO_DISABLE_MODELS_FETCH", "1")
        .env("KILO_DISABLE_AUTOUPDATE", "1")
        .env("KILO_DISABLE_LSP_DOWNLOAD", "1")
        .env("KILO_DISABLE_SHARE", "1")
        .env("KILO_TELEMETRY_LEVEL", "off");
    cmd
}

/// Every event the plugin hands on is one row under the agent `kilo`, the calls paired by
/// their ids with their true outcomes (the exit code the plugin reads), the gate's deny obeyed
/// (the denied command never ran), the turn with its prompt and answer, and each model call's
/// usage the mock's own counts.
#[test]
fn kilo_events_calls_and_usage_are_what_it_did() {
    let Some(kilo) = kilo() else { return };
    let world = World::new();
    let (mock, denied) = opencode::three_steps(&world);
    write_config(&world, &mock);
    let cmd = kilo_command(&world, &kilo, "steps");
    let s = Session::run(world, mock, "kilo", cmd);
    let ctx = s.context();
    let kinds = s.hook_types("kilo");
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(
        [
            count("SessionStart"),
            count("UserPromptSubmit"),
            count("PreToolUse"),
            count("PostToolUse"),
            count("Stop"),
        ],
        [1, 1, 3, 2, 1],
        "{kinds:?}\n{ctx}"
    );
    let calls =
        s.query("SELECT input, outcome FROM tool_calls WHERE session_id = :sid ORDER BY start_ts");
    assert_eq!(
        calls,
        [
            json!({"input": "echo hi", "outcome": "succeeded"}),
            json!({"input": "echo failing; exit 3", "outcome": "failed"}),
            json!({"input": denied, "outcome": "denied"}),
        ],
        "{ctx}"
    );
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let turns = s.query("SELECT prompt, response, model FROM turns WHERE session_id = :sid");
    assert_eq!(
        turns,
        [
            json!({"prompt": "steps", "response": "All three steps are done.",
                "model": anthropic::MODEL})
        ],
        "{ctx}"
    );
    let usage = s.query(
        "SELECT input_tokens, output_tokens, cache_read_tokens FROM v_usage \
         WHERE session_id = :sid ORDER BY cache_read_tokens",
    );
    let expected: Vec<serde_json::Value> = (0..4)
        .map(Usage::of_step)
        .map(|u| {
            json!({"input_tokens": u.input, "output_tokens": u.output,
                   "cache_read_tokens": u.cache_read})
        })
        .collect();
    assert_eq!(usage, expected, "{ctx}");

    // Kilo's own store (OpenCode's, under Kilo's name): an import finds the turn and the calls
    // the hooks recorded, and adds nothing.
    let store = s.world.home().join(".local/share/kilo/kilo.db");
    let turns = "SELECT session_id, turn_key, hook_type, prompt, response, outcome, imported \
                 FROM turns ORDER BY session_id, turn_key";
    let by_hooks = s.query(turns);
    let said = s.world.cmstore_ok(&["import", store.to_str().unwrap()]);
    harness::assert_import_changed_no_turn(&s.world, (turns, &by_hooks), &ctx);
    harness::assert_every_call_hooked(&s, &ctx);
    let after = s.query(
        "SELECT input_tokens, output_tokens, cache_read_tokens FROM v_usage \
         WHERE session_id = :sid ORDER BY cache_read_tokens",
    );
    assert_eq!(after, expected, "after import: {said}\n{ctx}");
    assert_eq!(
        s.query("SELECT DISTINCT agent FROM sessions"),
        [json!({"agent": "kilo"})],
        "{ctx}"
    );
}
