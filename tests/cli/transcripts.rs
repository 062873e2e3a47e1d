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

    ingest_after_the_session(&env);
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

/// `cmstore ingest --once` without waiting for a transcript to be quiet after its session's
/// end (`CMSTORE_CLOSE_QUIET_SECS=0`): the test has written it whole.
fn ingest_after_the_session(env: &TestEnv) {
    env.cmd()
        .args(["ingest", "--once"])
        .env("CMSTORE_CLOSE_QUIET_SECS", "0")
        .assert()
        .success();
}

/// A real Copilot CLI 1.0.102 session (tests/e2e's main Copilot scenario: three bash calls,
/// the third denied, then "All done."), its events.jsonl recorded with the vendor's system
/// prompt left out. Each hook gets the payload its `hook.start` line records.
struct RecordedCopilot {
    lines: Vec<String>,
    session: String,
    transcript: std::path::PathBuf,
}

impl RecordedCopilot {
    /// How many of the file's first lines it holds at `sessionEnd` in the real run: the
    /// prompt and the first tool call; the rest is written after the last hook.
    const AT_SESSION_END: usize = 11;

    fn new(env: &TestEnv) -> RecordedCopilot {
        let text = payload("copilot-1.0.102-events.jsonl");
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let first: Value = serde_json::from_str(&lines[0]).unwrap();
        let session = first["data"]["sessionId"].as_str().unwrap().to_string();
        let dir = env
            .user_home()
            .join(".copilot/session-state")
            .join(&session);
        fs::create_dir_all(&dir).unwrap();
        RecordedCopilot {
            lines,
            session,
            transcript: dir.join("events.jsonl"),
        }
    }

    /// The file as it stands when the agent has written its first `n` lines; none: no file
    /// (Copilot CLI creates it when it first flushes).
    fn write(&self, n: usize) {
        if n == 0 {
            let _ = fs::remove_file(&self.transcript);
            return;
        }
        let text: String = self.lines[..n].iter().map(|l| format!("{l}\n")).collect();
        fs::write(&self.transcript, text).unwrap();
    }

    /// Runs every hook of the session in order, the file as it was at each; the whole file
    /// arrives after `sessionEnd`.
    fn run_hooks(&self, env: &TestEnv) {
        self.hooks(env, Self::AT_SESSION_END);
        self.write(self.lines.len());
    }

    /// Runs every hook of the session in order, the file holding at each the lines before
    /// it, at most `at_end`; the rest is left unwritten.
    fn hooks(&self, env: &TestEnv, at_end: usize) {
        let recorded_home = "/home/dev/e2e/home";
        let home = env.user_home().to_string_lossy().to_string();
        for (i, line) in self.lines.iter().enumerate() {
            let line: Value = serde_json::from_str(line).unwrap();
            if line["type"] != "hook.start" {
                continue;
            }
            self.write(i.min(at_end));
            let event = line["data"]["hookType"].as_str().unwrap();
            let input = line["data"]["input"]
                .to_string()
                .replace(recorded_home, &home);
            capture(env, input, &["--event", event]);
        }
    }
}

/// A short Copilot CLI session creates its events.jsonl only after its last hook (seen in the
/// e2e run of `copilot -p`): a sweep in between finds no transcript. It waits for the file
/// instead of forgetting the session, and records the turn once the file is there and quiet.
#[test]
fn a_sweep_before_the_copilot_transcript_exists_waits_for_it() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.hooks(&env, 0);
    assert!(!recorded.transcript.exists());
    ingest_after_the_session(&env);
    assert_eq!(turns(&env), []);
    assert_eq!(
        noted_sessions(&env),
        [recorded.session.as_str()],
        "still noted"
    );

    recorded.write(recorded.lines.len());
    ingest_after_the_session(&env);
    assert_eq!(turns(&env), [pair("run the three steps", "All done.")]);
    assert_eq!(noted_sessions(&env), Vec::<String>::new(), "closed");
}

/// Copilot CLI names the model on each `assistant.message` of its events.jsonl: the session
/// and its turn carry it, as a Claude Code session's come from its transcript.
#[test]
fn a_copilot_cli_session_has_the_model_its_events_name() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.run_hooks(&env);
    ingest_after_the_session(&env);
    assert_eq!(turns(&env), [pair("run the three steps", "All done.")]);
    let model = |sql: &str| -> Option<String> {
        env.conn()
            .query_row(sql, [&recorded.session], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(
        model("SELECT model FROM sessions WHERE session_id = ?1").as_deref(),
        Some("gpt-5.4")
    );
    assert_eq!(
        model("SELECT model FROM turns WHERE session_id = ?1").as_deref(),
        Some("gpt-5.4")
    );
}

/// A session whose transcript never appears is forgotten once it has been missing as long
/// as an idle session is left before it is closed (`CMSTORE_CLOSE_IDLE_SECS`).
#[test]
fn a_copilot_session_whose_transcript_never_appears_is_forgotten_after_the_idle_wait() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.hooks(&env, 0);
    env.cmd()
        .args(["ingest", "--once"])
        .env("CMSTORE_CLOSE_IDLE_SECS", "0")
        .assert()
        .success();
    assert_eq!(noted_sessions(&env), Vec::<String>::new());
    assert_eq!(turns(&env), []);
}

/// A session closed with usage read and no line of its own to carry it (here its harvested
/// Stops are switched off in `[events]`) gets a `Usage` line: the responses are stored, not
/// left in a cursor the closed session's workspace forgets.
#[test]
fn usage_read_when_a_session_is_closed_without_a_line_of_its_own_is_stored() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home()).unwrap();
    fs::write(env.home().join("cmstore.toml"), "[events]\nStop = false\n").unwrap();
    let recorded = RecordedCopilot::new(&env);
    recorded.run_hooks(&env);
    let responses = recorded
        .lines
        .iter()
        .filter(|l| l.contains("\"type\":\"session.usage_record\""))
        .count();
    assert_eq!(responses, 4);
    ingest_after_the_session(&env);
    assert_eq!(noted_sessions(&env), Vec::<String>::new(), "closed");
    let stored = "SELECT count(*) FROM usage WHERE session_id = ";
    let sid = &recorded.session;
    assert_eq!(env.int(&format!("{stored}'{sid}'")), responses as i64);
    let carrier = format!(
        "SELECT count(*) FROM events WHERE hook_type = 'Usage' AND synthetic = 1 \
           AND agent = 'copilot' AND session_id = '{sid}'"
    );
    assert_eq!(env.int(&carrier), 1);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE hook_type = 'Stop'"),
        0
    );

    // Read again from a lost cursor, the same line: the store keeps one, and one row each.
    fs::remove_dir_all(env.home().join("state")).unwrap();
    recorded.run_hooks(&env);
    ingest_after_the_session(&env);
    assert_eq!(env.int(&format!("{stored}'{sid}'")), responses as i64);
    assert_eq!(env.int(&carrier), 1);
}

/// The sessions the workspace files of `env`'s state dir name.
fn noted_sessions(env: &TestEnv) -> Vec<String> {
    let mut sessions = Vec::new();
    for entry in fs::read_dir(env.home().join("state")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("ws-") && name.ends_with(".json") {
            let state: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
            for seen in state["sessions"].as_array().unwrap() {
                sessions.push(seen["session"].as_str().unwrap().to_string());
            }
        }
    }
    sessions
}

#[test]
fn a_copilot_turn_written_after_session_end_is_closed_by_ingest_once_with_its_answer() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.run_hooks(&env);
    let sid = recorded.session.as_str();
    let stop = |e: &Value| e["hookType"] == "Stop" && e["sessionId"] == sid;
    let pending: Vec<Value> = env.queue_lines().into_iter().filter(stop).collect();
    assert_eq!(pending.len(), 1, "only agentStop's own line: {pending:?}");
    assert_eq!(pending[0]["turnPending"], true);

    // Ended a moment ago and just written: not quiet for the default 3 s yet.
    env.ingest_once();
    assert_eq!(turns(&env), []);
    ingest_after_the_session(&env);
    assert_eq!(turns(&env), [pair("run the three steps", "All done.")]);
    let synthetic: Vec<Value> = env
        .queue_lines()
        .into_iter()
        .filter(|e| stop(e) && e["synthetic"] == true)
        .collect();
    assert_eq!(synthetic.len(), 1, "{synthetic:?}");
    let calls: Vec<&str> = synthetic[0]["toolCalls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["output"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        [
            "hi\n<shellId: 0 completed with exit code 0>",
            "failing\n<shellId: 1 completed with exit code 3>",
            ""
        ]
    );
    // Its usage rides on that line: one row per response of the run.
    assert_eq!(
        env.int("SELECT count(*) FROM usage WHERE agent = 'copilot'"),
        4
    );
    // Closed once: the session is forgotten, and nothing more is written.
    ingest_after_the_session(&env);
    let again = env.queue_lines().into_iter().filter(stop).count();
    assert_eq!(again, 2);
}

/// The cursor and workspace files of `env`'s state directory, with their bytes: what a
/// process killed now would leave.
fn state_files(env: &TestEnv) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    fs::read_dir(env.home().join("state"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| (p.clone(), fs::read(&p).unwrap()))
        .collect()
}

/// Puts back what [`state_files`] read, as if the process that changed them since had been
/// killed before it saved them.
fn restore(saved: &[(std::path::PathBuf, Vec<u8>)]) {
    for (path, bytes) in saved {
        fs::write(path, bytes).unwrap();
    }
}

/// `kill -9` of ingest between its append and its saving the cursor and the workspace file:
/// played by putting both files back as they were before that ingest. The next sweep reads
/// the turn again, finds it in the store (after a pass) and writes nothing.
#[test]
fn a_sweep_killed_after_its_append_records_the_turn_once() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.run_hooks(&env);
    let saved = state_files(&env);
    assert!(saved.len() >= 2, "a cursor and a workspace file: {saved:?}");
    ingest_after_the_session(&env);
    let before = env.queue_lines().len();
    restore(&saved);
    ingest_after_the_session(&env);
    assert_eq!(env.queue_lines().len(), before, "nothing appended twice");
    assert_eq!(turns(&env), [pair("run the three steps", "All done.")]);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE synthetic = 1"),
        1
    );
    // The cursor and the workspace file are right again: a third sweep has nothing to do.
    ingest_after_the_session(&env);
    assert_eq!(env.queue_lines().len(), before);
}

/// The prompt of another Copilot CLI session in the folder of [`RecordedCopilot`]'s, with no
/// quiet wait: its hook closes the recorded session once that one has ended.
fn later_hook_in_the_folder(env: &TestEnv, prompt: &str) {
    let next = json!({"sessionId": "cp-next", "timestamp": 1_796_198_100_000_i64,
        "cwd": "/home/dev/e2e/project", "prompt": prompt});
    env.cmd()
        .args(["capture", "--event", "userPromptSubmitted"])
        .env("CMSTORE_CLOSE_QUIET_SECS", "0")
        .write_stdin(next.to_string())
        .assert()
        .success();
}

/// A later hook of another session in the same folder closes an ended Copilot CLI session
/// too, with the same rule, when no ingest runs.
#[test]
fn a_later_copilot_session_in_the_folder_closes_an_ended_one() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.run_hooks(&env);
    later_hook_in_the_folder(&env, "next");
    let lines = env.queue_lines();
    let closed = &lines[lines.len() - 2];
    assert_eq!(closed["synthetic"], true, "{closed}");
    assert_eq!(closed["sessionId"], recorded.session.as_str());
    assert_eq!(closed["response"], "All done.");
    assert_eq!(lines[lines.len() - 1]["sessionId"], "cp-next");
    env.ingest_once();
    assert_eq!(turns(&env), [pair("run the three steps", "All done.")]);
}

/// `kill -9` of a later hook between its append of the closed session's turn and its saving
/// the cursor and the workspace file: the next hook closes the session again and appends the
/// turn again (capture cannot read the store), and the store keeps one line of it: the
/// harvested turn's line has the same id each time.
#[test]
fn a_later_hook_killed_after_closing_a_session_leaves_one_stored_line_of_its_turn() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.run_hooks(&env);
    let saved = state_files(&env);
    later_hook_in_the_folder(&env, "next");
    restore(&saved);
    later_hook_in_the_folder(&env, "after the kill");
    let closes: Vec<Value> = env
        .queue_lines()
        .into_iter()
        .filter(|l| l["synthetic"] == true)
        .collect();
    assert_eq!(closes.len(), 2, "the queue has the turn twice: {closes:?}");
    assert_eq!(closes[0]["id"], closes[1]["id"]);
    env.ingest_once();
    assert_eq!(turns(&env), [pair("run the three steps", "All done.")]);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE synthetic = 1"),
        1
    );
}

/// A VS Code session whose window closed after an answer: no Stop, no SessionEnd. The
/// transcript's last turn, the tool call's result present or not (`done`).
fn vscode_session(env: &TestEnv, done: bool) -> std::path::PathBuf {
    let transcript = env.dir.path().join("v1.jsonl");
    let mut lines = vec![
        json!({"type": "user.message", "data": {"content": "build it"}, "id": "u-1"}),
        json!({"type": "tool.execution_start", "data": {"toolCallId": "c1",
            "toolName": "run_in_terminal", "arguments": {"command": "make"}}, "id": "t-1"}),
    ];
    if done {
        lines.push(
            json!({"type": "tool.execution_complete", "data": {"toolCallId": "c1",
            "result": {"content": "built"}}, "id": "t-2"}),
        );
        lines.push(
            json!({"type": "assistant.message", "data": {"content": "Built."},
            "id": "a-1"}),
        );
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&transcript, text).unwrap();
    let hook = json!({"hook_event_name": "PreToolUse", "session_id": "v1", "cwd": "/w",
        "timestamp": "2026-12-02T08:00:00.000Z", "tool_name": "run_in_terminal",
        "tool_input": {"command": "make"}, "transcript_path": transcript.to_string_lossy()});
    capture(env, hook.to_string(), &["--agent", "vscode"]);
    transcript
}

fn ingest_with_idle(env: &TestEnv, secs: &str) {
    env.cmd()
        .args(["ingest", "--once"])
        .env("CMSTORE_CLOSE_IDLE_SECS", secs)
        .assert()
        .success();
}

/// Sets `path`'s modification time `secs` seconds back.
fn age(path: &Path, secs: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

#[test]
fn ingest_closes_an_idle_vscode_session_but_not_one_waiting_on_a_tool() {
    let env = TestEnv::new();
    let transcript = vscode_session(&env, false);
    age(&transcript, 3);
    // Idle for 3 s, 1 s is enough, but its last call has no result: ten times that is not over.
    ingest_with_idle(&env, "1");
    assert_eq!(turns(&env), []);
    ingest_with_idle(&env, "0.2");
    assert_eq!(turns(&env), [(Some("build it".to_string()), None)]);

    let env = TestEnv::new();
    let transcript = vscode_session(&env, true);
    env.ingest_once();
    assert_eq!(turns(&env), [], "not idle for the default minute");
    age(&transcript, 3);
    ingest_with_idle(&env, "1");
    assert_eq!(turns(&env), [pair("build it", "Built.")]);
    ingest_with_idle(&env, "0");
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE synthetic = 1"),
        1
    );
}

/// A Qoder CLI session killed mid-way (no Stop, no SessionEnd) is closed from its transcript,
/// Claude Code's lines under `~/.qoder/projects`, by the next session's hook in its folder once
/// idle, and the turn is Qoder's.
#[test]
fn a_later_hook_in_the_folder_closes_an_idle_qoder_session_from_its_transcript() {
    let env = TestEnv::new();
    let folder = env.user_home().join(".qoder/projects/-w");
    fs::create_dir_all(&folder).unwrap();
    let transcript = |session: &str| folder.join(format!("{session}.jsonl"));
    let line = |kind: &str, uuid: &str, message: Value| {
        json!({"type": kind, "uuid": uuid, "sessionId": "q1", "cwd": "/w",
            "timestamp": "2026-12-08T08:00:00.000Z", "message": message})
        .to_string()
    };
    let lines = [
        line(
            "user",
            "u1",
            json!({"role": "user", "content": "list the files"}),
        ),
        line(
            "assistant",
            "a1",
            json!({"id": "msg_1", "role": "assistant", "model": "auto",
                "content": [{"type": "text", "text": "Two files."}],
                "usage": {"input_tokens": 10, "output_tokens": 5}}),
        ),
    ];
    fs::write(transcript("q1"), lines.join("\n") + "\n").unwrap();
    let hook = |session: &str, event: &str| {
        json!({"hook_event_name": event, "session_id": session, "cwd": "/w",
            "prompt": "list the files", "transcript_path": transcript(session).to_string_lossy()})
        .to_string()
    };
    capture(&env, hook("q1", "UserPromptSubmit"), &[]);
    age(&transcript("q1"), 3);
    env.cmd()
        .args(["capture"])
        .env("CMSTORE_CLOSE_IDLE_SECS", "1")
        .write_stdin(hook("q2", "SessionStart"))
        .assert()
        .success();
    env.ingest_once();
    assert_eq!(turns(&env), [pair("list the files", "Two files.")]);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE hook_type = 'Stop' AND agent = 'qoder'"),
        1
    );
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

/// A `usage` row: message id, request id, session, agent, input, output, cache write and
/// cache read tokens.
type UsageRow = (String, String, String, String, i64, i64, i64, i64);

/// The `usage` rows of the recorded Copilot session, as the store holds them.
fn copilot_usage_rows(env: &TestEnv) -> Vec<UsageRow> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT message_id, request_id, session_id, agent, input_tokens, output_tokens, \
                    cache_write_tokens, cache_read_tokens \
             FROM usage ORDER BY message_id, request_id",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// The rows the recorded `events.jsonl` calls for, counted here from its raw lines: one per
/// `session.usage_record`, keyed on its `apiCallId` and the line's `id`, input without the
/// cached tokens.
fn copilot_usage_expected(recorded: &RecordedCopilot) -> Vec<UsageRow> {
    let mut rows: Vec<_> = recorded
        .lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "session.usage_record")
        .map(|l| {
            let u = &l["data"]["usage"];
            let n = |k: &str| u[k].as_i64().unwrap();
            (
                u["apiCallId"].as_str().unwrap().to_string(),
                l["id"].as_str().unwrap().to_string(),
                recorded.session.clone(),
                "copilot".to_string(),
                n("inputTokens") - n("cacheReadTokens") - n("cacheWriteTokens"),
                n("outputTokens"),
                n("cacheWriteTokens"),
                n("cacheReadTokens"),
            )
        })
        .collect();
    rows.sort();
    rows
}

fn import_default_locations(env: &TestEnv) {
    env.cmd().arg("import").assert().success();
}

#[test]
fn import_reads_copilot_cli_session_state_with_the_keys_capture_uses() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.write(recorded.lines.len());
    let expected = copilot_usage_expected(&recorded);
    assert_eq!(expected.len(), 4, "the recorded run's responses");

    import_default_locations(&env);
    assert_eq!(copilot_usage_rows(&env), expected);
    let session = format!(
        "SELECT count(*) FROM sessions WHERE session_id = '{}' AND agent = 'copilot' \
         AND cwd = '/home/dev/e2e/project'",
        recorded.session
    );
    assert_eq!(env.int(&session), 1, "the session row, with its project");
    import_default_locations(&env);
    assert_eq!(copilot_usage_rows(&env), expected, "a second import");

    // The hooks and ingest of the same session afterwards find the same responses.
    recorded.run_hooks(&env);
    ingest_after_the_session(&env);
    assert_eq!(copilot_usage_rows(&env), expected, "capture after import");
}

#[test]
fn an_import_after_capture_leaves_the_copilot_rows_as_they_were() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    recorded.run_hooks(&env);
    ingest_after_the_session(&env);
    let expected = copilot_usage_expected(&recorded);
    assert_eq!(copilot_usage_rows(&env), expected, "capture alone");
    import_default_locations(&env);
    assert_eq!(copilot_usage_rows(&env), expected, "import after capture");
}

#[test]
fn import_reads_vscode_copilot_transcripts_under_their_own_agent() {
    let env = TestEnv::new();
    let recorded = RecordedCopilot::new(&env);
    let transcripts = env
        .user_home()
        .join(".config/Code/User/workspaceStorage/0a1b2c/GitHub.copilot-chat/transcripts");
    fs::create_dir_all(&transcripts).unwrap();
    let text: String = recorded.lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(
        transcripts.join(format!("{}.jsonl", recorded.session)),
        text,
    )
    .unwrap();
    import_default_locations(&env);
    let vscode: Vec<_> = copilot_usage_expected(&recorded)
        .into_iter()
        .map(|mut r| {
            r.3 = "vscode".into();
            r
        })
        .collect();
    assert_eq!(copilot_usage_rows(&env), vscode);
}

#[test]
fn a_harvested_turn_is_dated_by_when_it_happened_and_its_line_by_the_hook() {
    let env = TestEnv::new();
    let transcript = env.dir.path().join("late.jsonl");
    let two_days_ago = crate::common::now_ms() - 2 * 86_400_000;
    let iso = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    // A turn answered two days ago, and the next prompt, which completes it, today.
    let lines = [
        json!({"type": "user", "uuid": "u1", "timestamp": iso(two_days_ago),
            "message": {"role": "user", "content": "old question"}}),
        json!({"type": "assistant", "uuid": "a1", "timestamp": iso(two_days_ago + 4_000),
            "message": {"id": "m1", "role": "assistant",
            "content": [{"type": "text", "text": "old answer"}]}}),
        json!({"type": "user", "uuid": "u2", "timestamp": iso(two_days_ago + 9_000),
            "message": {"role": "user", "content": "new question"}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&transcript, text).unwrap();
    let hook = json!({"hook_event_name": "PostToolUse", "session_id": "late", "cwd": "/w",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1",
        "transcript_path": transcript});
    let before = crate::common::now_ms();
    capture(&env, hook.to_string(), &[]);
    let stop = env
        .queue_lines()
        .into_iter()
        .find(|l| l["synthetic"] == true)
        .expect("the harvested turn");
    assert_eq!(stop["turnTs"], two_days_ago + 4_000, "{stop}");
    assert!(stop["timestamp"].as_i64().unwrap() >= before, "{stop}");

    env.ingest_once();
    let (turn_ts, event_ts): (i64, i64) = env
        .conn()
        .query_row(
            "SELECT t.ts, e.ts FROM turns t JOIN events e ON e.id = t.event_id",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(turn_ts, two_days_ago + 4_000, "the turn: when it happened");
    assert!(event_ts >= before, "the event: when the hook ran");
}
