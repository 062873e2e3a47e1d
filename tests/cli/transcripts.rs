//! Turns as each agent's hooks and transcripts give them, end to end through `capture` and
//! `ingest`: Codex's prompt from its UserPromptSubmit, Copilot CLI's turns once its transcript
//! holds them.

use std::fs;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

/// `(prompt, response)` of every `turns` row, oldest first.
fn turns(env: &TestEnv) -> Vec<(Option<String>, Option<String>)> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare("SELECT prompt, response FROM turns ORDER BY ts, rowid")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

fn pair(prompt: &str, response: &str) -> (Option<String>, Option<String>) {
    (Some(prompt.to_string()), Some(response.to_string()))
}

#[test]
fn a_codex_turn_has_the_prompt_of_its_user_prompt_submit() {
    let env = TestEnv::new();
    capture(&env, payload("codex-user-prompt-submit.json"), &[]);
    capture(&env, payload("codex-pre-tool-use.json"), &[]);
    capture(&env, payload("codex-stop.json"), &[]);
    let stop = env.queue_lines().pop().unwrap();
    assert_eq!(stop["hookType"], "Stop");
    assert_eq!(stop["turnId"], "turn-7");
    env.ingest_once();
    assert_eq!(
        turns(&env),
        [pair("Make the failing test pass.", "All tests pass now.")]
    );
}

#[test]
fn a_codex_prompt_ingested_after_its_stop_still_reaches_the_turn() {
    let env = TestEnv::new();
    capture(&env, payload("codex-stop.json"), &[]);
    env.ingest_once();
    assert_eq!(turns(&env), [(None, Some("All tests pass now.".into()))]);
    capture(&env, payload("codex-user-prompt-submit.json"), &[]);
    env.ingest_once();
    assert_eq!(
        turns(&env),
        [pair("Make the failing test pass.", "All tests pass now.")]
    );
    // A prompt of another turn changes nothing.
    let other = payload("codex-user-prompt-submit.json")
        .replace("turn-7", "turn-8")
        .replace("Make the failing test pass.", "next");
    capture(&env, other, &[]);
    env.ingest_once();
    assert_eq!(
        turns(&env),
        [pair("Make the failing test pass.", "All tests pass now.")]
    );
}

/// A Copilot CLI hook payload (camelCase, epoch-ms `timestamp`), as in
/// `tests/fixtures/payloads/copilot-camel-*.json`.
fn copilot(transcript: &Path, fields: Value) -> String {
    let mut p = json!({
        "timestamp": 1_704_614_700_000_i64,
        "cwd": "/path/to/project",
        "sessionId": "cp-1",
        "transcriptPath": transcript.to_string_lossy(),
    });
    for (k, v) in fields.as_object().unwrap() {
        p[k] = v.clone();
    }
    p.to_string()
}

fn copilot_hook(env: &TestEnv, event: &str, transcript: &Path, fields: Value) {
    capture(env, copilot(transcript, fields), &["--event", event]);
}

/// Lines of a second turn in Copilot CLI's envelope.
fn second_turn() -> String {
    [
        json!({"type": "user.message", "data": {"content": "Now summarize the PR."},
            "id": "u-2", "timestamp": "2026-07-20T22:20:00.000Z", "parentId": null}),
        json!({"type": "assistant.turn_start", "data": {"turnId": "0"}, "id": "t-2",
            "timestamp": "2026-07-20T22:20:01.000Z", "parentId": "u-2"}),
        json!({"type": "assistant.message", "data": {"messageId": "m-2",
            "content": "PR #57 assigns Copilot to issue 53.", "toolRequests": []},
            "id": "a-2", "timestamp": "2026-07-20T22:20:02.000Z", "parentId": "t-2"}),
        json!({"type": "assistant.turn_end", "data": {"turnId": "0"}, "id": "e-2",
            "timestamp": "2026-07-20T22:20:03.000Z", "parentId": "a-2"}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

#[test]
fn copilot_cli_turns_are_recorded_once_their_text_exists_never_shifted() {
    let Some(real) = real_fixtures() else { return };
    let first_turn = fs::read(real.join("copilot-cli/output-json-1.non-ephemeral.jsonl")).unwrap();
    let env = TestEnv::new();
    let dir = env.user_home().join(".copilot/session-state/cp-1");
    fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join("events.jsonl");

    // Run 1: the transcript does not exist yet when agentStop and sessionEnd fire.
    copilot_hook(
        &env,
        "userPromptSubmitted",
        &transcript,
        json!({"prompt": "Invoke skill"}),
    );
    copilot_hook(
        &env,
        "agentStop",
        &transcript,
        json!({"stopReason": "end_turn"}),
    );
    copilot_hook(
        &env,
        "sessionEnd",
        &transcript,
        json!({"reason": "complete"}),
    );
    fs::write(&transcript, &first_turn).unwrap();

    // Run 2 (resumed): its agentStop sees only the first turn, which is not its own.
    copilot_hook(
        &env,
        "userPromptSubmitted",
        &transcript,
        json!({"prompt": "Now summarize the PR."}),
    );
    copilot_hook(
        &env,
        "agentStop",
        &transcript,
        json!({"stopReason": "end_turn"}),
    );
    let stop = env.queue_lines().pop().unwrap();
    assert_eq!(stop["hookType"], "Stop");
    assert!(stop.get("response").is_none(), "{stop}");
    assert!(stop.get("prompt").is_none(), "{stop}");
    assert_eq!(stop["turnPending"], true);
    let mut file = fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    file.write_all(second_turn().as_bytes()).unwrap();
    drop(file);
    copilot_hook(
        &env,
        "sessionEnd",
        &transcript,
        json!({"reason": "complete"}),
    );

    env.ingest_once();
    let rows = turns(&env);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let (prompt, response) = &rows[0];
    assert!(
        prompt.as_deref().unwrap().starts_with("Invoke skill"),
        "{prompt:?}"
    );
    assert!(
        response
            .as_deref()
            .unwrap()
            .starts_with("No CI checks exist"),
        "{response:?}"
    );
    assert_eq!(
        rows[1],
        pair(
            "Now summarize the PR.",
            "PR #57 assigns Copilot to issue 53."
        )
    );
    assert_eq!(env.int("SELECT count(*) FROM turns WHERE synthetic = 0"), 0);
}

#[test]
fn thinking_is_stored_apart_and_a_pending_stop_makes_no_turn() {
    let env = TestEnv::new();
    let mut harvested = entry("Stop", "t1");
    harvested.turn_id = Some("u1".into());
    harvested.synthetic = Some(true);
    harvested.prompt = Some("why?".into());
    harvested.response = Some(String::new());
    harvested.thinking = Some("private reasoning".into());
    let mut pending = entry("Stop", "t1");
    pending.turn_pending = Some(true);
    env.append(&[harvested.to_line(), pending.to_line()]);
    env.ingest_once();
    let conn = env.conn();
    let (response, thinking): (Option<String>, String) = conn
        .query_row("SELECT response, thinking FROM turns", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    // An empty response is no response (ingest stores NULL); the reasoning is not one.
    assert_eq!((response, thinking.as_str()), (None, "private reasoning"));
    assert_eq!(env.int("SELECT count(*) FROM turns"), 1);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE hook_type = 'Stop'"),
        2
    );
}
