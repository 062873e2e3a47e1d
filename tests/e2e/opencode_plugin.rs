//! cmstore's OpenCode plugin (`resources/opencode/cmstore.js`) on its own, under node: the
//! plugin `hooks install` writes, its capture command the real cmstore, driven by a script
//! that plays OpenCode's hooks and events in the orders a real OpenCode sends them in cases
//! the end-to-end runs cannot make the mock produce (prompts queued while busy, an abort, an
//! error OpenCode recovers from, two projects in one process). What reaches the store is
//! what each turn was.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use crate::harness::{self, World};

/// The driver: loads the plugin, then plays one scenario (its name the first argument).
const DRIVER: &str = r#"
const { CmstorePlugin } = await import(process.argv[2])
const scenario = process.argv[3]
const project = { directory: process.argv[4] }
const h = await CmstorePlugin(project)
const ev = (type, properties) => h.event({ event: { type, properties } })
const chat = (sid, id, text) => h["chat.message"]({ sessionID: sid },
  { message: { id, sessionID: sid, model: { modelID: "m" } }, parts: [{ type: "text", text }] })
const asst = (sid, id, parent, completed, error) => ev("message.updated", { sessionID: sid,
  info: { id, role: "assistant", parentID: parent, modelID: "m", sessionID: sid,
          tokens: { input: 1, output: 1, reasoning: 0, cache: { read: 0, write: 0 } },
          time: completed ? { created: 1, completed: 2 } : { created: 1 }, error } })
const text = (sid, mid, t) => h["experimental.text.complete"]({ sessionID: sid, messageID: mid },
  { text: t })
if (scenario === "queued") {
  await ev("session.created", { sessionID: "s-queued", info: { id: "s-queued" } })
  await chat("s-queued", "u1", "first")
  await asst("s-queued", "a1", "u1", false)
  await chat("s-queued", "u2", "second")
  await text("s-queued", "a1", "answer one")
  await asst("s-queued", "a1", "u1", true)
  await asst("s-queued", "a2", "u2", false)
  await text("s-queued", "a2", "answer two")
  await asst("s-queued", "a2", "u2", true)
  await ev("session.idle", { sessionID: "s-queued" })
}
if (scenario === "abort") {
  await ev("session.created", { sessionID: "s-abort", info: { id: "s-abort" } })
  await chat("s-abort", "u1", "stop me")
  await asst("s-abort", "a1", "u1", false)
  await ev("session.error", { sessionID: "s-abort",
    error: { name: "MessageAbortedError", data: { message: "aborted" } } })
  await ev("session.idle", { sessionID: "s-abort" })
}
if (scenario === "recover") {
  await ev("session.created", { sessionID: "s-recover", info: { id: "s-recover" } })
  await chat("s-recover", "u1", "long one")
  await asst("s-recover", "a1", "u1", false)
  await ev("session.error", { sessionID: "s-recover",
    error: { name: "ContextOverflowError", data: { message: "too long" } } })
  await asst("s-recover", "a1", "u1", true, { name: "ContextOverflowError" })
  await asst("s-recover", "a2", "u1", false)
  await text("s-recover", "a2", "done after compacting")
  await asst("s-recover", "a2", "u1", true)
  await ev("session.idle", { sessionID: "s-recover" })
  await ev("session.idle", { sessionID: "s-recover" })
}
if (scenario === "two-projects") {
  // The same project's second copy records nothing; another project's records.
  const again = await CmstorePlugin(project)
  const other = await CmstorePlugin({ directory: process.argv[4] + "/other" })
  console.log(JSON.stringify([Object.keys(again).length, Object.keys(other).length]))
  await other.event({ event: { type: "session.created",
    properties: { sessionID: "s-other", info: { id: "s-other" } } } })
}
"#;

/// Runs `scenario` through the plugin `world`'s `hooks install` wrote, with node; `None`
/// (skipped, with a note) without node.
fn play(world: &World, scenario: &str) -> Option<String> {
    if Command::new("node").arg("--version").output().is_err() {
        harness::skipped("node is not installed: the plugin is not run");
        return None;
    }
    let plugin = world.project().join(".opencode/plugin/cmstore.js");
    if !plugin.exists() {
        let program = env!("CARGO_BIN_EXE_cmstore");
        world.cmstore_ok(&[
            "hooks",
            "install",
            "--agent",
            "opencode",
            "--command",
            program,
        ]);
    }
    // node reads ES modules from `.mjs`; OpenCode (Bun) from `.js`.
    let module = world.dir.path().join("cmstore-plugin.mjs");
    std::fs::copy(&plugin, &module).expect("copy the plugin");
    let driver = world.dir.path().join("driver.mjs");
    std::fs::write(&driver, DRIVER).expect("write the driver");
    let out = world
        .command(Path::new("node"))
        .arg(&driver)
        .arg(&module)
        .arg(scenario)
        .arg(world.project())
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "{scenario}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    world.ingest();
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Prompts sent while OpenCode is still answering the first are queued; the session goes
/// idle once, after all: each prompt is a turn with its own answer, in order.
#[test]
fn queued_prompts_are_turns_of_their_own() {
    let world = World::new();
    if play(&world, "queued").is_none() {
        return;
    }
    let turns = world.query(
        "SELECT prompt, response, outcome FROM turns WHERE session_id = 's-queued' \
         ORDER BY prompt",
    );
    assert_eq!(
        turns,
        [
            json!({"prompt": "first", "response": "answer one", "outcome": null}),
            json!({"prompt": "second", "response": "answer two", "outcome": null}),
        ],
        "{}",
        world.queue_text()
    );
}

/// A turn the person stopped (`MessageAbortedError`) is `interrupted`; one whose error
/// OpenCode went on from (a context it compacted) is answered, and a second idle ends nothing.
#[test]
fn an_abort_interrupts_and_an_error_opencode_recovers_from_fails_nothing() {
    let world = World::new();
    if play(&world, "abort").is_none() {
        return;
    }
    play(&world, "recover");
    let turns =
        world.query("SELECT session_id, prompt, response, outcome FROM turns ORDER BY session_id");
    assert_eq!(
        turns,
        [
            json!({"session_id": "s-abort", "prompt": "stop me", "response": null,
                   "outcome": "interrupted"}),
            json!({"session_id": "s-recover", "prompt": "long one",
                   "response": "done after compacting", "outcome": null}),
        ],
        "{}",
        world.queue_text()
    );
}

/// The plugin found twice for one project (the user's and the project's copy) records once;
/// another project served by the same process records all the same.
#[test]
fn a_second_copy_of_one_project_records_nothing_another_project_records() {
    let world = World::new();
    let Some(said) = play(&world, "two-projects") else {
        return;
    };
    let counts: Vec<usize> = serde_json::from_str(said.trim()).expect("the driver's counts");
    assert_eq!(counts[0], 0, "the same project's second copy has no hooks");
    assert!(counts[1] > 0, "another project's copy has its hooks");
    assert_eq!(
        world.scalar("SELECT count(*) FROM events WHERE session_id = 's-other'"),
        1,
        "{}",
        world.queue_text()
    );
}
