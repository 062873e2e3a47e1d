//! OpenCode (`opencode-ai`, pinned in `.ci/install-agents`; its platform binary run itself) in
//! `opencode run`, wired with `cmstore hooks install --agent opencode --user` (cmstore's plugin
//! in `~/.config/opencode/plugin/`), against the mock Messages API as a provider of the user's
//! config (`@ai-sdk/anthropic`, bundled in OpenCode, its `baseURL` the mock's). Offline:
//! models.dev, the auto-update and the share service are turned off by OpenCode's own
//! variables, and the npm install OpenCode starts in each configuration folder (of its plugin
//! SDK) finds the folder already provided for (docs/dev/e2e.md).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;

use crate::anthropic::{self, Step, Usage};
use crate::harness::{self, Session, World, AGENT_TIMEOUT};
use crate::mock::MockServer;

/// The platform binary the wrapper package installs.
fn opencode() -> Option<PathBuf> {
    harness::agent("opencode", "node_modules/opencode-linux-x64/bin/opencode")
}

/// OpenCode's version, which its configuration folders' package files name.
const VERSION: &str = "1.18.33";

/// The user's `opencode.json`: the mock as a provider with one model, then cmstore's plugin
/// installed as a user installs it. OpenCode installs its plugin SDK (`@opencode-ai/plugin`)
/// into each configuration folder with npm before it loads a plugin, and waits over a minute
/// for a registry it cannot reach; a folder whose lock file already lists the SDK is left
/// alone (OpenCode 1.18.33).
fn write_config(world: &World, mock: &MockServer) {
    write_config_with(world, mock, json!({}));
}

/// [`write_config`] with `extra` settings in `opencode.json` beside the provider's.
fn write_config_with(world: &World, mock: &MockServer, extra: serde_json::Value) {
    let dir = world.home().join(".config").join("opencode");
    let mut config = provider_config(mock);
    config["$schema"] = json!("https://opencode.ai/config.json");
    if let (Some(config), Some(extra)) = (config.as_object_mut(), extra.as_object()) {
        config.extend(extra.clone());
    }
    provide_sdk(&dir, "@opencode-ai/plugin", VERSION);
    std::fs::write(dir.join("opencode.json"), config.to_string()).expect("write opencode.json");
    world.cmstore_ok(&["hooks", "install", "--agent", "opencode", "--user"]);
}

/// The configuration of OpenCode (and of Kilo, its fork) that makes the mock its provider,
/// with one model.
pub fn provider_config(mock: &MockServer) -> serde_json::Value {
    json!({
        "autoupdate": false,
        "share": "disabled",
        "model": format!("mock/{}", anthropic::MODEL),
        "small_model": format!("mock/{}", anthropic::MODEL),
        "provider": {"mock": {
            "npm": "@ai-sdk/anthropic",
            "name": "Mock",
            "options": {"baseURL": format!("{}/v1", mock.url()), "apiKey": "e2e-dummy-key"},
            "models": {anthropic::MODEL: {
                "name": "Mock",
                "tool_call": true,
                "limit": {"context": 200000, "output": 8192},
            }},
        }},
    })
}

/// A configuration folder `dir` of OpenCode's (or Kilo's), its plugin SDK `package` of
/// `version` installed as far as OpenCode checks (`node_modules/`, and a lock file that lists
/// the SDK): OpenCode then runs no npm install there.
pub fn provide_sdk(dir: &Path, package: &str, version: &str) {
    std::fs::create_dir_all(dir.join("node_modules")).expect("create node_modules");
    let sdk = json!({ package: version });
    std::fs::write(
        dir.join("package.json"),
        json!({"dependencies": sdk}).to_string(),
    )
    .expect("write package.json");
    std::fs::write(
        dir.join("package-lock.json"),
        json!({"lockfileVersion": 3, "packages": {"": {"dependencies": sdk}}}).to_string(),
    )
    .expect("write package-lock.json");
}

/// `opencode run PROMPT` in `world`, offline.
fn opencode_command(world: &World, opencode: &Path, prompt: &str) -> Command {
    let mut cmd = world.command(opencode);
    cmd.args(["run", prompt])
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_SHARE", "1");
    cmd
}

/// One word: `opencode run` quotes an argument that holds a space before it sends it.
const PROMPT: &str = "steps";

/// A `bash` call's input as OpenCode's tool schema asks for it.
fn bash(command: &str) -> serde_json::Value {
    json!({"command": command, "description": "Runs a step"})
}

/// The mock of a run of OpenCode (or Kilo) in `world` ([`anthropic::three_steps`] with
/// OpenCode's `bash` tool), and the denied command.
pub fn three_steps(world: &World) -> (MockServer, String) {
    anthropic::three_steps(world, "bash", bash)
}

/// [`three_steps`] run by OpenCode.
fn main_session() -> Option<Session> {
    let opencode = opencode()?;
    let world = World::new();
    let (mock, _) = three_steps(&world);
    write_config(&world, &mock);
    let cmd = opencode_command(&world, &opencode, PROMPT);
    Some(Session::run(world, mock, "opencode", cmd))
}

/// Every event the plugin hands on is one row (the session's start, the prompt, each call's
/// two halves, each model call, the turn's end), the calls paired by their ids with their
/// true outcomes (the exit code OpenCode keeps from the model), the gate's deny obeyed (the
/// denied command never ran; its reason was the call's result), and the turn with its
/// prompt, answer and model.
#[test]
fn opencode_events_and_tool_calls_are_what_it_did() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let kinds = s.hook_types("opencode");
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(
        [
            count("SessionStart"),
            count("UserPromptSubmit"),
            count("PreToolUse"),
            count("PostToolUse"),
            count("ModelResponse"),
            count("Stop"),
        ],
        [1, 1, 3, 2, 4, 1],
        "{kinds:?}\n{ctx}"
    );
    let calls = s.query(
        "SELECT tool_name, outcome, input FROM tool_calls WHERE session_id = :sid \
         ORDER BY start_ts",
    );
    let outcomes: Vec<(String, String)> = calls
        .iter()
        .map(|c| {
            (
                c["input"].as_str().unwrap_or("").to_string(),
                c["outcome"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        outcomes[..2],
        [
            ("echo hi".to_string(), "succeeded".to_string()),
            ("echo failing; exit 3".to_string(), "failed".to_string()),
        ],
        "{calls:?}\n{ctx}"
    );
    assert_eq!(outcomes.len(), 3, "{calls:?}\n{ctx}");
    assert_eq!(outcomes[2].1, "denied", "{calls:?}\n{ctx}");
    assert!(!s.world.marker().exists(), "the denied command ran\n{ctx}");
    let exits = s.query(
        "SELECT json_extract(entry, '$.exitCode') AS code FROM events \
         WHERE session_id = :sid AND hook_type = 'PostToolUse' ORDER BY seq",
    );
    assert_eq!(exits, [json!({"code": 0}), json!({"code": 3})], "{ctx}");
    // The deny's reason reached the model, as the denied call's result.
    let results = anthropic::sent_tool_results(&s.mock);
    assert!(
        results
            .iter()
            .any(|r| r.contains("Blocked by cmstore safety gate")),
        "{results:?}\n{ctx}"
    );
    let turns = s.query("SELECT prompt, response, model FROM turns WHERE session_id = :sid");
    assert_eq!(
        turns,
        [
            json!({"prompt": PROMPT, "response": "All three steps are done.",
                "model": anthropic::MODEL})
        ],
        "{ctx}"
    );
}

/// OpenCode's usage: one row per model call, the mock's own counts in each column (OpenCode
/// splits the input as the Messages API does), under the model's name, priced; a later
/// `cmstore import` of OpenCode's own store (its SQLite database, read as OpenCode left it)
/// finds the same calls and adds nothing.
#[test]
fn opencode_usage_is_the_mocks_numbers_per_response() {
    let Some(s) = main_session() else { return };
    let ctx = s.context();
    let rows = s.query(
        "SELECT input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, model, \
         cost_usd IS NOT NULL AS priced FROM v_usage WHERE session_id = :sid \
         ORDER BY cache_read_tokens",
    );
    let expected: Vec<serde_json::Value> = (0..4)
        .map(Usage::of_step)
        .map(|u| {
            json!({
                "input_tokens": u.input,
                "output_tokens": u.output,
                "cache_write_tokens": u.cache_write(),
                "cache_read_tokens": u.cache_read,
                "model": anthropic::MODEL,
                "priced": 1,
            })
        })
        .collect();
    assert_eq!(rows, expected, "{ctx}");
    let store = s.world.home().join(".local/share/opencode/opencode.db");
    let turns = "SELECT session_id, turn_key, hook_type, prompt, response, outcome, imported \
                 FROM turns ORDER BY session_id, turn_key";
    let by_hooks = s.query(turns);
    let imported = s.world.cmstore_ok(&["import", store.to_str().unwrap()]);
    // Issue 37: the store's turn is the one the hooks recorded (met by its prompt and time:
    // the plugin's Stop names no turn): none added, the hooks' fields kept, the turn hooked.
    harness::assert_import_changed_no_turn(&s.world, (turns, &by_hooks), &ctx);
    assert_eq!(
        s.query("SELECT turn_id IS NOT NULL AS keyed, model FROM turns WHERE session_id = :sid"),
        vec![json!({"keyed": 1, "model": anthropic::MODEL})],
        "{ctx}"
    );
    // Its calls too, by the `callID` the plugin sends the hooks: every one the store shows
    // hooked, none the hooks saw missing from it.
    harness::assert_every_call_hooked(&s, &ctx);
    let after = s.query(
        "SELECT input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, model, \
         cost_usd IS NOT NULL AS priced FROM v_usage WHERE session_id = :sid \
         ORDER BY cache_read_tokens",
    );
    assert_eq!(after, expected, "after import: {imported}\n{ctx}");
    assert_eq!(
        s.world
            .scalar("SELECT count(*) FROM usage WHERE origin = 'import'"),
        0,
        "{ctx}"
    );
    // The store alone, into a store of its own: the same calls.
    let alone = s.world.dir.path().join("imported-alone");
    let cmstore = |args: &[&str]| {
        let out = s
            .world
            .command(Path::new(env!("CARGO_BIN_EXE_cmstore")))
            .arg("--home")
            .arg(&alone)
            .args(args)
            .output()
            .expect("run cmstore");
        assert!(out.status.success(), "{args:?}: {out:?}");
        (
            String::from_utf8(out.stdout).expect("UTF-8"),
            String::from_utf8(out.stderr).expect("UTF-8"),
        )
    };
    let (_, said) = cmstore(&["import", store.to_str().unwrap()]);
    assert!(
        said.contains("1 session(s) checked against the agent's own totals (OpenCode 1): equal"),
        "{said}"
    );
    // Kept, and compared again whenever asked.
    let (_, said) = cmstore(&["usage", "--check"]);
    assert!(
        said.contains("1 session compared with the agent's own figures: all agree"),
        "{said}"
    );
    let sql = "SELECT input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, model, \
               cost_usd IS NOT NULL AS priced FROM v_usage ORDER BY cache_read_tokens";
    let rows: serde_json::Value =
        serde_json::from_str(&cmstore(&["query", "--format", "json", sql]).0).expect("JSON");
    assert_eq!(rows, serde_json::Value::from(expected), "{ctx}");
}

/// Issue 39's budget with a real OpenCode: near the day's limit the prompt goes on and the
/// model is told where the budget stands (the plugin adds the reply's context to the prompt);
/// past it the plugin refuses the prompt before any request is made (OpenCode's `run` then
/// ends with an error of its own).
#[test]
fn an_opencode_prompt_near_the_budget_is_warned_and_past_it_refused() {
    let Some(opencode) = opencode() else { return };
    let world = World::new();
    world.spend("day = 1\nwarn_at = 0.5\n", 1);
    let mock = MockServer::start(anthropic::responder(vec![Step::Text("Hello.")]));
    write_config(&world, &mock);
    let cmd = opencode_command(&world, &opencode, "hello");
    let run = harness::spawn(&world, "opencode", cmd).wait(AGENT_TIMEOUT);
    run.assert_ok();
    harness::assert_budget_warned(&world, &mock);

    world.spend("day = 1\nwarn_at = 0.5\n", 1);
    let refused = MockServer::start(anthropic::responder(vec![Step::Text("Hello.")]));
    write_config(&world, &refused);
    let cmd = opencode_command(&world, &opencode, "greetings");
    let run = harness::spawn(&world, "opencode", cmd).wait(AGENT_TIMEOUT);
    harness::assert_prompt_refused(&world, &refused, &run, "greetings");
}

/// A call OpenCode's own permission refuses (`"bash": "ask"`, with nobody to answer in `run`
/// mode) is one call, `refused`, not also a failed one; and cmstore's plugin in both the
/// user's folder and the project's (OpenCode loads both) records each event once.
#[test]
fn an_opencode_call_its_permission_refuses_is_one_refused_call_and_two_plugins_record_once() {
    let Some(opencode) = opencode() else { return };
    let world = World::new();
    let script = vec![
        Step::Tool("bash", bash("echo asked")),
        Step::Text("It was refused."),
    ];
    let mock = MockServer::start(anthropic::responder(script));
    write_config_with(&world, &mock, json!({"permission": {"bash": "ask"}}));
    let project = world.project().join(".opencode");
    provide_sdk(&project, "@opencode-ai/plugin", VERSION);
    world.cmstore_ok(&["hooks", "install", "--agent", "opencode"]);
    assert!(project.join("plugin/cmstore.js").exists());
    let cmd = opencode_command(&world, &opencode, PROMPT);
    let s = Session::run(world, mock, "opencode", cmd);
    let ctx = s.context();
    let calls = s.query("SELECT tool_name, outcome FROM tool_calls WHERE session_id = :sid");
    assert_eq!(
        calls,
        [json!({"tool_name": "bash", "outcome": "refused"})],
        "{ctx}"
    );
    let kinds = s.hook_types("opencode");
    let count = |kind: &str| kinds.iter().filter(|k| *k == kind).count();
    assert_eq!(
        [
            count("SessionStart"),
            count("UserPromptSubmit"),
            count("PreToolUse"),
            count("PermissionRequest"),
            count("PermissionDenied"),
            count("PostToolUseFailure"),
        ],
        [1, 1, 1, 1, 1, 0],
        "{kinds:?}\n{ctx}"
    );
}
