//! Whole sessions from transcripts (issue 37): `cmstore import` writes the turns and tool calls
//! a Claude Code transcript shows, and a turn both the hooks and the import saw is one row,
//! whatever the order.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;

const SESSION: &str = "5e551011-0000-4000-8000-000000000001";

/// A Claude Code transcript line of `kind` at second `s` after 2026-12-01 10:00.
fn line(kind: &str, uuid: &str, s: u32, rest: Value) -> String {
    let at = format!(
        "2026-12-01T{:02}:{:02}:{:02}.000Z",
        10 + s / 3600,
        s / 60 % 60,
        s % 60
    );
    let mut v = json!({"type": kind, "uuid": uuid, "sessionId": SESSION, "cwd": "/w/proj",
        "timestamp": at});
    v.as_object_mut()
        .unwrap()
        .extend(rest.as_object().unwrap().clone());
    v.to_string()
}

fn prompt(uuid: &str, s: u32, text: &str) -> String {
    line(
        "user",
        uuid,
        s,
        json!({"message": {"role": "user", "content": text}}),
    )
}

fn assistant(uuid: &str, s: u32, id: &str, content: Value) -> String {
    line(
        "assistant",
        uuid,
        s,
        json!({"requestId": format!("req_{id}"), "message": {"id": id, "role": "assistant",
            "model": "claude-sonnet-4-5", "content": content,
            "usage": {"input_tokens": 10, "output_tokens": 5}}}),
    )
}

fn result(uuid: &str, s: u32, call: &str, output: &str, is_error: bool) -> String {
    line(
        "user",
        uuid,
        s,
        json!({"message": {"role": "user", "content": [{"type": "tool_result",
            "tool_use_id": call, "content": output, "is_error": is_error}]}}),
    )
}

fn turn_end(uuid: &str, s: u32) -> String {
    line(
        "system",
        uuid,
        s,
        json!({"subtype": "turn_duration", "durationMs": 1000}),
    )
}

fn tool_use(id: &str, command: &str) -> Value {
    json!({"type": "tool_use", "id": id, "name": "Bash", "input": {"command": command}})
}

/// The hook payload of `event` in the session, with `extra` fields.
fn hook(event: &str, transcript: &Path, extra: Value) -> String {
    let mut v = json!({"session_id": SESSION, "transcript_path": transcript, "cwd": "/w/proj",
        "hook_event_name": event});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v.to_string()
}

fn append(path: &Path, lines: &[String]) {
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

/// A session of three turns: the hooks fire for the first two as Claude Code fires them while
/// the transcript grows, and miss the third (interrupted, no hook after its prompt). Returns
/// the transcript and the queue the hooks wrote.
fn session_with_hooks(hooks: &TestEnv) -> (PathBuf, Vec<u8>) {
    let t = hooks
        .dir
        .path()
        .join(format!("projects/-w-proj/{SESSION}.jsonl"));
    fs::create_dir_all(t.parent().unwrap()).unwrap();
    // Each hook right after the transcript line it follows (`_s`), as Claude Code fires them;
    // the hook's own time is the test's clock (a payload naming its time reads as VS Code's).
    let fire = |event: &str, _s: u32, extra: Value| {
        let line = capture(hooks, hook(event, &t, extra), &[]);
        assert_eq!(line, json!({}), "{event}");
    };
    append(&t, &[prompt("u1", 0, "list the files")]);
    fire("UserPromptSubmit", 0, json!({"prompt": "list the files"}));
    append(
        &t,
        &[assistant(
            "a1",
            1,
            "msg_1",
            json!([{"type": "thinking", "thinking": "ls will do"}, tool_use("toolu_1", "ls")]),
        )],
    );
    let ls =
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"});
    fire("PreToolUse", 1, ls.clone());
    append(&t, &[result("r1", 2, "toolu_1", "a.txt", false)]);
    fire("PostToolUse", 2, ls);
    append(
        &t,
        &[
            assistant(
                "a2",
                3,
                "msg_2",
                json!([{"type": "text", "text": "There is a.txt."}]),
            ),
            turn_end("d1", 3),
        ],
    );
    fire(
        "Stop",
        3,
        json!({"stop_hook_active": false, "last_assistant_message": "There is a.txt."}),
    );

    append(&t, &[prompt("u2", 10, "run false")]);
    fire("UserPromptSubmit", 10, json!({"prompt": "run false"}));
    append(
        &t,
        &[assistant(
            "a3",
            11,
            "msg_3",
            json!([tool_use("toolu_2", "false")]),
        )],
    );
    let no =
        json!({"tool_name": "Bash", "tool_input": {"command": "false"}, "tool_use_id": "toolu_2"});
    fire("PreToolUse", 11, no.clone());
    append(&t, &[result("r2", 12, "toolu_2", "exit 1", true)]);
    let mut failed = no;
    failed["error"] = json!("exit 1");
    fire("PostToolUseFailure", 12, failed);
    append(
        &t,
        &[
            assistant(
                "a4",
                13,
                "msg_4",
                json!([{"type": "text", "text": "It failed."}]),
            ),
            turn_end("d2", 13),
        ],
    );
    fire(
        "Stop",
        13,
        json!({"stop_hook_active": false, "last_assistant_message": "It failed."}),
    );

    // The third turn: its hooks never ran (a hook killed on exit, a version that stopped
    // firing one).
    append(
        &t,
        &[
            prompt("u3", 20, "now count them"),
            assistant(
                "a5",
                21,
                "msg_5",
                json!([tool_use("toolu_3", "ls | wc -l")]),
            ),
            result("r3", 22, "toolu_3", "1", false),
            assistant(
                "a6",
                23,
                "msg_6",
                json!([{"type": "text", "text": "Counting"}]),
            ),
            line(
                "user",
                "i3",
                24,
                json!({"message": {"role": "user", "content": [{"type": "text",
                    "text": "[Request interrupted by user]"}]}}),
            ),
        ],
    );
    let queue = fs::read(hooks.queue()).unwrap();
    (t, queue)
}

/// Every row of `turns`, every column, in key order.
fn turns_table(env: &TestEnv) -> Vec<String> {
    rows(env, "SELECT * FROM turns ORDER BY session_id, turn_key")
}

/// The rows of `sql`, each as its columns' debug text.
fn rows(env: &TestEnv, sql: &str) -> Vec<String> {
    let conn = env.conn();
    let mut stmt = conn.prepare(sql).unwrap();
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |r| {
            (0..n)
                .map(|i| {
                    r.get::<_, rusqlite::types::Value>(i)
                        .map(|v| format!("{v:?}"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(|v| v.join(" | "))
        })
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

/// What a turn records, whichever road brought it: everything but its time, its event, whether
/// it was harvested and whether a hook recorded it.
const TURN_CONTENT: &str = "SELECT session_id, turn_key, turn_id, hook_type, prompt, response,
    tool_call_count, model, thinking, outcome, feedback FROM turns ORDER BY session_id, turn_key";

fn import(env: &TestEnv, transcript: &Path) -> String {
    let out = env.cmd().arg("import").arg(transcript).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

/// `cmstore import --again`: every file read, unchanged or not.
fn import_again(env: &TestEnv, transcript: &Path) -> String {
    let out = env
        .cmd()
        .args(["import", "--again"])
        .arg(transcript)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

fn ingest_queue(env: &TestEnv, queue: &[u8]) {
    env.append_raw(queue);
    env.ingest_once();
}

#[test]
fn a_turn_the_hooks_and_an_import_both_saw_is_one_row_whatever_the_order() {
    let hooks = TestEnv::new();
    let (transcript, queue) = session_with_hooks(&hooks);

    let hooks_alone = TestEnv::new();
    ingest_queue(&hooks_alone, &queue);
    let by_hooks = turns_table(&hooks_alone);
    assert_eq!(by_hooks.len(), 2, "the hooks saw two turns: {by_hooks:#?}");

    let import_alone = TestEnv::new();
    let said = import(&import_alone, &transcript);
    assert!(said.contains("3 turn(s)"), "{said}");
    let imported = rows(&import_alone, TURN_CONTENT);
    assert_eq!(imported.len(), 3, "{imported:#?}");
    // The two turns the hooks saw, as the hooks recorded them.
    assert_eq!(imported[..2], rows(&hooks_alone, TURN_CONTENT)[..]);
    assert_eq!(
        import_alone.text("SELECT group_concat(imported) FROM turns"),
        "1,1,1"
    );

    let hooks_then_import = TestEnv::new();
    ingest_queue(&hooks_then_import, &queue);
    import(&hooks_then_import, &transcript);
    let import_then_hooks = TestEnv::new();
    import(&import_then_hooks, &transcript);
    ingest_queue(&import_then_hooks, &queue);
    let both = turns_table(&hooks_then_import);
    assert_eq!(
        both,
        turns_table(&import_then_hooks),
        "the order changes nothing"
    );
    assert_eq!(
        both[..2],
        by_hooks[..],
        "the hooks' rows are left as they were"
    );
    assert_eq!(both.len(), 3);

    // Again, and again after the hooks: nothing added, nothing changed.
    import_again(&hooks_then_import, &transcript);
    import_again(&import_then_hooks, &transcript);
    assert_eq!(turns_table(&hooks_then_import), both);
    assert_eq!(turns_table(&import_then_hooks), both);

    // What the hooks missed: the third turn and its call, and nothing only the hooks saw.
    let coverage = "SELECT transcript_tool_calls, hooked_tool_calls, missed_tool_calls,
        hook_only_tool_calls, transcript_turns, hooked_turns, missed_turns, hook_only_turns
        FROM v_coverage";
    assert_eq!(
        rows(&hooks_then_import, coverage),
        ["Integer(3) | Integer(2) | Integer(1) | Integer(0) | Integer(3) | Integer(2) | Integer(1) | Integer(0)"]
    );
    assert_eq!(
        rows(&import_then_hooks, coverage),
        rows(&hooks_then_import, coverage)
    );
    // The interrupted turn, as the transcript tells it.
    assert_eq!(
        hooks_then_import.text(
            "SELECT prompt || ' / ' || response || ' / ' || outcome || ' / ' || imported
             FROM turns WHERE turn_key = 'u3'"
        ),
        "now count them / Counting / interrupted / 1"
    );
    // Imported history is written to the store, never to the queue the extension tails.
    assert!(!import_alone.queue().exists());
}

#[test]
fn show_tells_an_imported_session_with_the_calls_no_hook_recorded() {
    let hooks = TestEnv::new();
    let (transcript, queue) = session_with_hooks(&hooks);
    let env = TestEnv::new();
    ingest_queue(&env, &queue);
    import(&env, &transcript);
    let out = env
        .cmd()
        .args(["show", SESSION, "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let story: Value = serde_json::from_slice(&out.stdout).unwrap();
    let items = story["items"].as_array().unwrap();
    // In the order of their inputs: the hooks' calls are dated by the test's clock, the
    // transcript's by its lines.
    let mut calls: Vec<(String, bool, Value)> = items
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .map(|i| {
            (
                i["input"].as_str().unwrap_or_default().to_owned(),
                i["imported"].as_bool().unwrap(),
                i["outcome"].clone(),
            )
        })
        .collect();
    calls.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        calls,
        [
            ("false".to_owned(), false, json!("failed")),
            ("ls".to_owned(), false, json!("succeeded")),
            ("ls | wc -l".to_owned(), true, json!("succeeded")),
        ]
    );
    let imported_call = items
        .iter()
        .find(|i| i["kind"] == "tool_call" && i["imported"] == true)
        .unwrap();
    assert_eq!(
        imported_call["duration_ms"], 1000,
        "from its call to its result"
    );
    // The imported turn's prompt where it was typed, then its call, then its answer.
    let third = items
        .iter()
        .find(|i| i["text"] == "now count them")
        .unwrap();
    let began = third["ts"].as_i64().unwrap();
    let kinds: Vec<&str> = items
        .iter()
        .filter(|i| (began..began + 10_000).contains(&i["ts"].as_i64().unwrap()))
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["prompt", "tool_call", "answer"]);
    let text =
        String::from_utf8(env.cmd().args(["show", SESSION]).output().unwrap().stdout).unwrap();
    assert!(
        text.contains("3 turns (1 imported) · 3 tool calls (1 imported)"),
        "{text}"
    );
    // An imported answer is marked as an imported call is: a short mark leaves room for the
    // answer at 100 columns.
    assert!(
        text.contains("answer   Counting  [interrupted]  (imported)"),
        "{text}"
    );

    // The list says it too: of the session's turns, one only the import read.
    let listed = json_rows(&env, &["sessions"]);
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (&listed[0]["turns"], &listed[0]["imported_turns"]),
        (&json!(3), &json!(1))
    );
    let table = run_at_100(&env, &["sessions"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "session", "agent", "project", "last", "lasted", "prompts", "turns", "imported",
            "tools", "failed", "model"
        ],
        "{table}"
    );
}

#[test]
fn imported_text_is_redacted_and_dropped_as_captured_text_is() {
    let env = TestEnv::new();
    let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let transcript = env.dir.path().join(format!("{SESSION}.jsonl"));
    let lines = [
        prompt("u1", 0, &format!("use the token {secret}")),
        assistant(
            "a1",
            1,
            "msg_1",
            json!([tool_use("toolu_1", &format!("gh auth login --with-token {secret}")),
                   {"type": "text", "text": format!("Logged in with {secret}.")}]),
        ),
        turn_end("d1", 2),
    ];
    append(&transcript, &lines);
    import(&env, &transcript);
    let stored = rows(
        &env,
        "SELECT prompt, response, input FROM turns, transcript_items WHERE kind = 'tool_call'",
    );
    assert_eq!(stored.len(), 1);
    assert!(!stored[0].contains(secret), "{stored:?}");
    assert!(stored[0].contains("Logged in with"), "{stored:?}");

    // With `store_text = false`, no prompt or answer text; the turn and its call are kept.
    let quiet = TestEnv::new();
    fs::create_dir_all(quiet.home()).unwrap();
    fs::write(quiet.home().join("cmstore.toml"), "store_text = false\n").unwrap();
    import(&quiet, &transcript);
    assert_eq!(
        rows(&quiet, "SELECT prompt, response, thinking FROM turns"),
        ["Null | Null | Null"]
    );
    assert_eq!(
        quiet.int("SELECT count(*) FROM transcript_items WHERE kind = 'tool_call'"),
        1
    );
}

#[test]
fn an_import_after_prune_brings_back_no_turn_prune_deleted() {
    let env = TestEnv::new();
    let transcript = env.dir.path().join(format!("{SESSION}.jsonl"));
    append(
        &transcript,
        &[
            prompt("u1", 0, "old question"),
            assistant(
                "a1",
                1,
                "msg_1",
                json!([{"type": "text", "text": "old answer"}]),
            ),
            turn_end("d1", 1),
        ],
    );
    import(&env, &transcript);
    assert_eq!(env.int("SELECT count(*) FROM turns"), 1);
    // An event newer than the turn, so that prune's cutoff passes the turn.
    env.append(&[line_at("Notification", now_ms())]);
    env.ingest_once();
    env.cmd().args(["prune", "--days", "1"]).assert().success();
    assert_eq!(env.int("SELECT count(*) FROM turns"), 0);
    // Unchanged, the file is passed over; read again all the same, its turn stays out.
    let said = import(&env, &transcript);
    assert!(said.contains("passed over 1 file(s) unchanged"), "{said}");
    let said = import_again(&env, &transcript);
    assert_eq!(env.int("SELECT count(*) FROM turns"), 0, "{said}");
    assert!(
        said.contains("left out 1 turn(s) older than what prune deleted"),
        "{said}"
    );
}

/// A queue line of `hook_type` in another session at `ts`.
fn line_at(hook_type: &str, ts: i64) -> String {
    let mut e = entry(hook_type, "other");
    e.timestamp = ts;
    e.to_line()
}

/// `status` says what the hooks missed over the last week, per agent: here an import read a
/// session no hook recorded, an hour ago.
#[test]
fn status_counts_what_the_hooks_missed_this_week() {
    let env = TestEnv::new();
    let at = |s: i64| {
        chrono::DateTime::from_timestamp_millis(now_ms() - 3_600_000 + s * 1000)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string()
    };
    let recent = |kind: &str, uuid: &str, s: i64, rest: Value| {
        let mut v = json!({"type": kind, "uuid": uuid, "sessionId": SESSION, "timestamp": at(s)});
        v.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        v.to_string()
    };
    let transcript = env.dir.path().join(format!("{SESSION}.jsonl"));
    append(
        &transcript,
        &[
            recent(
                "user",
                "u1",
                0,
                json!({"message": {"role": "user", "content": "hi"}}),
            ),
            recent(
                "assistant",
                "a1",
                1,
                json!({"message": {"id": "m1", "model": "claude-sonnet-4-5",
                    "content": [tool_use("toolu_1", "ls")]}}),
            ),
            recent(
                "assistant",
                "a2",
                2,
                json!({"message": {"id": "m2", "model": "claude-sonnet-4-5",
                    "content": [{"type": "text", "text": "done"}]}}),
            ),
        ],
    );
    import(&env, &transcript);
    let out = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        status["history"]["hooks_missed_7_days"],
        "claude: 1 turn(s), 1 tool call(s) in 1 session(s)",
        "{status}"
    );
}

/// A file an import read and that has not changed since costs a look at its size and time, not
/// a read; one that grew is read again (its new turn comes in); `--again` reads every file.
#[test]
fn an_unchanged_transcript_is_passed_over_and_a_grown_one_read_again() {
    let env = TestEnv::new();
    let transcript = env.dir.path().join(format!("{SESSION}.jsonl"));
    append(
        &transcript,
        &[
            prompt("u1", 0, "first"),
            assistant("a1", 1, "msg_1", json!([{"type": "text", "text": "one"}])),
            turn_end("d1", 1),
        ],
    );
    let said = import(&env, &transcript);
    assert!(said.contains("1 transcript(s)"), "{said}");
    let said = import(&env, &transcript);
    assert!(said.contains("0 transcript(s)"), "{said}");
    assert!(said.contains("passed over 1 file(s) unchanged"), "{said}");
    append(
        &transcript,
        &[
            prompt("u2", 5, "second"),
            assistant("a2", 6, "msg_2", json!([{"type": "text", "text": "two"}])),
        ],
    );
    let said = import(&env, &transcript);
    assert!(said.contains("1 transcript(s)"), "{said}");
    assert_eq!(
        env.text("SELECT group_concat(response, ',') FROM turns"),
        "one,two"
    );
    let said = import_again(&env, &transcript);
    assert!(
        said.contains("1 transcript(s)") && !said.contains("unchanged"),
        "{said}"
    );
}

/// `cmstore ingest` following, looking at the agents' history every 100 ms; its stderr piped.
fn follow_history(env: &TestEnv) -> std::process::Child {
    env.std_cmd()
        .arg("ingest")
        .env("CMSTORE_TRANSCRIPTS_EVERY_MS", "100")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// A following `cmstore ingest` imports the agents' history as it grows (issue 37): a Claude
/// Code session written under `~/.claude/projects` comes into the store, its new turn too, and
/// stays whole in `show` once Claude Code has deleted the file, and with
/// `archive_transcripts = true` so does the file's copy. Never through the queue.
#[test]
fn a_following_ingest_keeps_a_transcript_after_the_agent_deletes_it() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "archive_transcripts = true\n",
    )
    .unwrap();
    let project = env.user_home().join(".claude/projects/-w-proj");
    std::fs::create_dir_all(&project).unwrap();
    let transcript = project.join(format!("{SESSION}.jsonl"));
    append(
        &transcript,
        &[
            prompt("u1", 0, "first"),
            assistant("a1", 1, "msg_1", json!([{"type": "text", "text": "one"}])),
            turn_end("d1", 1),
        ],
    );
    let mut follow = follow_history(&env);
    let turns = "SELECT count(*) FROM turns";
    let waited = std::time::Duration::from_secs(20);
    assert_eq!(env.wait_for(turns, 1, waited), 1);
    append(
        &transcript,
        &[
            prompt("u2", 5, "second"),
            assistant("a2", 6, "msg_2", json!([{"type": "text", "text": "two"}])),
            turn_end("d2", 6),
        ],
    );
    assert_eq!(env.wait_for(turns, 2, waited), 2);
    std::fs::remove_file(&transcript).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    terminate(&follow);
    let status = wait_timeout(&mut follow, waited).expect("ingest stops");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut follow.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("imported 1 transcript(s)"), "{stderr}");
    let out = env.cmd().args(["show", SESSION]).output().unwrap();
    let story = String::from_utf8(out.stdout).unwrap();
    for text in ["first", "one", "second", "two"] {
        assert!(story.contains(text), "{text}: {story}");
    }
    let copy = env.home().join(format!(
        "archive/home/.claude/projects/-w-proj/{SESSION}.jsonl.gz"
    ));
    let kept = unzipped(&copy);
    assert_eq!(kept.lines().count(), 6, "{kept}");
    assert!(
        !env.queue().exists() || env.queue_lines().is_empty(),
        "nothing through the queue"
    );

    // Switched off, a following ingest leaves the history to `cmstore import`.
    let off = TestEnv::new();
    let project = off.user_home().join(".claude/projects/-w-proj");
    std::fs::create_dir_all(&project).unwrap();
    append(
        &project.join(format!("{SESSION}.jsonl")),
        &[prompt("u1", 0, "first"), turn_end("d1", 1)],
    );
    std::fs::create_dir_all(off.home()).unwrap();
    std::fs::write(
        off.home().join("cmstore.toml"),
        "follow_transcripts = false\n",
    )
    .unwrap();
    let mut follow = follow_history(&off);
    // Eight of its 100 ms rounds: time enough to import, were it on.
    std::thread::sleep(Duration::from_millis(800));
    terminate(&follow);
    wait_timeout(&mut follow, waited).expect("ingest stops");
    assert_eq!(off.int("SELECT count(*) FROM imported_files"), 0);
}

/// The text a gzip file holds.
fn unzipped(path: &Path) -> String {
    let mut text = String::new();
    let mut gz = flate2::read::MultiGzDecoder::new(fs::File::open(path).unwrap());
    std::io::Read::read_to_string(&mut gz, &mut text).unwrap();
    text
}

/// Runs `cmstore capture` in `hooks` for `event` of the session whose transcript is `t`.
fn fire(hooks: &TestEnv, t: &Path, event: &str, extra: Value) {
    assert_eq!(
        capture(hooks, hook(event, t, extra), &[]),
        json!({}),
        "{event}"
    );
}

/// A line of the session's subagent: on its side chain.
fn side(line: String) -> String {
    let mut v: Value = serde_json::from_str(&line).unwrap();
    v["isSidechain"] = json!(true);
    v.to_string()
}

/// Review of the session's change (found by reproduction): a prompt whose hook fired and
/// whose Stop did not is shown once, where it was typed.
#[test]
fn a_prompt_the_hooks_saw_is_shown_once_when_only_its_stop_was_missed() {
    let hooks = TestEnv::new();
    let t = hooks.dir.path().join(format!("{SESSION}.jsonl"));
    append(&t, &[prompt("u1", 0, "list the files")]);
    fire(
        &hooks,
        &t,
        "UserPromptSubmit",
        json!({"prompt": "list the files"}),
    );
    append(
        &t,
        &[
            assistant("a1", 1, "msg_1", json!([{"type": "text", "text": "a.txt"}])),
            turn_end("d1", 2),
        ],
    );
    let env = TestEnv::new();
    ingest_queue(&env, &std::fs::read(hooks.queue()).unwrap());
    import(&env, &t);
    let story = json_of(&env, &["show", SESSION, "--format", "json"]);
    let prompts = story["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "prompt")
        .count();
    assert_eq!(prompts, 1, "{story}");
}

fn json_of(env: &TestEnv, args: &[&str]) -> Value {
    serde_json::from_slice(&env.cmd().args(args).output().unwrap().stdout).unwrap()
}

/// Claude Code's own agents (a side question, a compaction) write copies of the parent's
/// lines, with the same ids: their files add no turn and change none, whatever the order.
#[test]
fn claude_codes_own_agents_files_leave_the_main_turns_alone() {
    let env = TestEnv::new();
    let t = env.dir.path().join(format!("projects/-w/{SESSION}.jsonl"));
    std::fs::create_dir_all(t.parent().unwrap()).unwrap();
    let lines = [
        prompt("u1", 0, "levelset"),
        assistant(
            "a1",
            1,
            "msg_1",
            json!([{"type": "text", "text": "MAIN ANSWER"}]),
        ),
        turn_end("d1", 2),
    ];
    append(&t, &lines);
    let aside = t
        .with_extension("")
        .join("subagents/agent-aside_question-7a81e4850e48fc1e.jsonl");
    std::fs::create_dir_all(aside.parent().unwrap()).unwrap();
    let mut copies: Vec<String> = lines.iter().cloned().map(side).collect();
    copies.push(side(assistant(
        "q2",
        11,
        "msg_9",
        json!([{"type": "text", "text": "ASIDE ANSWER"}]),
    )));
    append(&aside, &copies);
    let main_only = TestEnv::new();
    import(&main_only, &t);
    let expected = rows(
        &main_only,
        "SELECT turn_key, hook_type, response, ts FROM turns",
    );
    import(&env, &aside);
    import(&env, &t);
    import_again(&env, t.parent().unwrap());
    assert_eq!(
        rows(&env, "SELECT turn_key, hook_type, response, ts FROM turns"),
        expected
    );
}

/// Prune's watermark is the hook's row's time (its Stop), and Claude Code writes the turn's
/// duration line after its Stop: a turn is judged by when it began, and stays deleted.
#[test]
fn a_pruned_turn_whose_last_line_came_after_its_stop_stays_deleted() {
    let env = TestEnv::new();
    let t = env.dir.path().join(format!("{SESSION}.jsonl"));
    append(
        &t,
        &[
            prompt("u1", 0, "question"),
            assistant(
                "a1",
                2,
                "msg_1",
                json!([{"type": "text", "text": "answer"}]),
            ),
        ],
    );
    let ms = |s: &str| cmstore::support::clock::rfc3339_ms(s).unwrap();
    let mut stop = entry("Stop", SESSION);
    stop.timestamp = ms("2026-12-01T10:00:03.000Z");
    stop.turn_id = Some("u1".into());
    stop.prompt = Some("question".into());
    stop.response = Some("answer".into());
    env.append(&[stop.to_line()]);
    env.ingest_once();
    // Written a second after the Stop (past the watermark prune leaves), as Claude Code may.
    append(
        &t,
        &[line("system", "d1", 4, json!({"subtype": "turn_duration"}))],
    );
    env.cmd()
        .args(["prune", "--before", "2026-12-02", "--yes"])
        .assert()
        .success();
    assert_eq!(env.int("SELECT count(*) FROM turns"), 0);
    import(&env, &t);
    assert_eq!(env.int("SELECT count(*) FROM turns"), 0);
}

/// What the transcripts showed goes with the rest at prune (a call's input is text), and
/// coverage does not then count the hooks' deleted rows as missed.
#[test]
fn prune_deletes_what_the_transcripts_showed_and_an_import_does_not_bring_it_back() {
    let hooks = TestEnv::new();
    let (transcript, queue) = session_with_hooks(&hooks);
    let env = TestEnv::new();
    ingest_queue(&env, &queue);
    import(&env, &transcript);
    assert!(env.int("SELECT count(*) FROM transcript_items") > 0);
    env.cmd()
        .args(["prune", "--before", "0m", "--yes"])
        .assert()
        .success();
    assert_eq!(env.int("SELECT count(*) FROM transcript_items"), 0);
    assert_eq!(env.int("SELECT count(*) FROM v_coverage"), 0);
    import_again(&env, &transcript);
    assert_eq!(env.int("SELECT count(*) FROM transcript_items"), 0);
    assert_eq!(env.int("SELECT count(*) FROM turns"), 0);
}

/// `[events]` switches an imported subagent's turns by SubagentStop, as the hooks record them,
/// and the main conversation's by Stop.
#[test]
fn a_subagents_imported_turns_follow_the_subagent_stop_switch() {
    let t = Path::new("projects/-w").join(format!("{SESSION}.jsonl"));
    let sub = t.with_extension("").join("subagents/agent-a1234567.jsonl");
    let imported = |events: &str| {
        let env = TestEnv::new();
        for (file, lines) in [
            (&t, vec![prompt("u1", 0, "delegate"), turn_end("d1", 9)]),
            (
                &sub,
                vec![
                    side(prompt("s1", 1, "find the files")),
                    side(assistant(
                        "s2",
                        2,
                        "msg_s",
                        json!([{"type": "text", "text": "two"}]),
                    )),
                ],
            ),
        ] {
            let path = env.dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            append(&path, &lines);
        }
        std::fs::create_dir_all(env.home()).unwrap();
        std::fs::write(
            env.home().join("cmstore.toml"),
            format!("[events]\n{events}\n"),
        )
        .unwrap();
        import(&env, &env.dir.path().join("projects"));
        rows(
            &env,
            "SELECT turn_key, hook_type FROM turns ORDER BY turn_key",
        )
    };
    assert_eq!(
        imported("Stop = false"),
        ["Text(\"s1\") | Text(\"SubagentStop\")"]
    );
    assert_eq!(imported("SubagentStop = false"), Vec::<String>::new());
}

/// Fault test: an import killed with SIGKILL at any moment, then run again (as a following
/// ingest runs it again), leaves exactly the rows one uninterrupted import leaves: nothing lost,
/// nothing doubled. Bounded: a transcript of 1,500 turns, four kills.
#[test]
fn an_import_killed_at_any_moment_then_run_again_loses_and_doubles_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join(format!("{SESSION}.jsonl"));
    let mut lines = Vec::new();
    for n in 0..1500u32 {
        let s = n * 10;
        let call = format!("toolu_{n}");
        lines.push(prompt(&format!("u{n}"), s, &format!("question {n}")));
        lines.push(assistant(
            &format!("a{n}"),
            s + 1,
            &format!("msg_a{n}"),
            json!([{"type": "thinking", "thinking": format!("think {n}")},
                   tool_use(&call, &format!("echo {n}"))]),
        ));
        lines.push(result(
            &format!("r{n}"),
            s + 2,
            &call,
            &"x".repeat(2000),
            n % 7 == 0,
        ));
        lines.push(assistant(
            &format!("b{n}"),
            s + 3,
            &format!("msg_b{n}"),
            json!([{"type": "text", "text": format!("answer {n}")}]),
        ));
        lines.push(turn_end(&format!("d{n}"), s + 4));
    }
    append(&t, &lines);
    const TABLES: [&str; 3] = [
        "SELECT * FROM turns ORDER BY session_id, turn_key",
        "SELECT message_id, request_id, session_id, turn_id, model, ts, input_tokens,
                output_tokens, origin FROM usage ORDER BY message_id",
        "SELECT * FROM transcript_items ORDER BY session_id, kind, item_id",
    ];
    let whole = TestEnv::new();
    import(&whole, &t);
    let expected: Vec<Vec<String>> = TABLES.iter().map(|sql| rows(&whole, sql)).collect();
    assert_eq!(expected[0].len(), 1500);

    let env = TestEnv::new();
    for delay_ms in [30, 90, 200, 400] {
        let mut killed = env
            .std_cmd()
            .arg("import")
            .arg(&t)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        killed.kill().unwrap();
        killed.wait().unwrap();
    }
    // A killed import noted no file as read: this one reads what they left unread (or, had
    // the last one finished, passes over the file it read whole).
    import(&env, &t);
    assert_eq!(env.int("SELECT count(*) FROM imported_files"), 1);
    let got: Vec<Vec<String>> = TABLES.iter().map(|sql| rows(&env, sql)).collect();
    for (i, sql) in TABLES.iter().enumerate() {
        let first = got[i].iter().zip(&expected[i]).find(|(g, e)| g != e);
        assert!(
            got[i] == expected[i],
            "{sql}: {} rows against {}; first difference: {first:?}",
            got[i].len(),
            expected[i].len()
        );
    }
}

/// A turn whose lines name no time is dated by its first import, and keeps that date when read
/// again (a re-dated row would be a change each time).
#[test]
fn a_turn_without_a_time_keeps_the_date_of_its_first_import() {
    let env = TestEnv::new();
    let t = env.dir.path().join(format!("{SESSION}.jsonl"));
    let undated = |l: String| {
        let mut v: Value = serde_json::from_str(&l).unwrap();
        v.as_object_mut().unwrap().remove("timestamp");
        v.to_string()
    };
    append(
        &t,
        &[
            undated(prompt("u1", 0, "q")),
            undated(assistant(
                "a1",
                1,
                "m1",
                json!([{"type": "text", "text": "a"}]),
            )),
        ],
    );
    import(&env, &t);
    let first = rows(&env, "SELECT * FROM turns");
    std::thread::sleep(Duration::from_millis(20));
    import_again(&env, &t);
    assert_eq!(rows(&env, "SELECT * FROM turns"), first);
}

/// A call's end is the same whether its result is read in the batch of its call (one
/// statement writes both) or in a later one: the calls of one line, more than a batch holds,
/// answered after it, against each call answered at once.
#[test]
fn a_calls_end_is_the_same_whether_its_result_comes_in_its_batch_or_a_later_one() {
    const CALLS: usize = 2_100;
    let id = |i: usize| format!("toolu_{i:05}");
    let failed = |i: usize| i % 7 == 3;
    let results = |first_s: u32| -> Vec<String> {
        (0..CALLS)
            .map(|i| {
                let s = first_s + i as u32;
                result(&format!("r{i}"), s, &id(i), "ok", failed(i))
            })
            .collect()
    };
    // One line of every call, then the results: the calls fill a batch before any result.
    let batched = TestEnv::new();
    let late = batched.dir.path().join("late.jsonl");
    let calls: Vec<Value> = (0..CALLS).map(|i| tool_use(&id(i), "ls")).collect();
    let mut lines = vec![
        prompt("p1", 0, "list"),
        assistant("a1", 1, "msg_1", Value::Array(calls)),
    ];
    lines.extend(results(2));
    append(&late, &lines);
    import(&batched, &late);
    // Each call answered at once.
    let at_once = TestEnv::new();
    let soon = at_once.dir.path().join("soon.jsonl");
    let mut lines = vec![prompt("p1", 0, "list")];
    for (i, r) in results(2).into_iter().enumerate() {
        let s = 2 + i as u32;
        lines.push(assistant(
            &format!("a{i}"),
            s,
            "msg_1",
            json!([tool_use(&id(i), "ls")]),
        ));
        lines.push(r);
    }
    append(&soon, &lines);
    import(&at_once, &soon);
    let ends = "SELECT item_id, end_ts, outcome FROM transcript_items WHERE kind = 'tool_call'
        ORDER BY item_id";
    let (a, b) = (rows(&batched, ends), rows(&at_once, ends));
    assert_eq!(a.len(), CALLS);
    assert_eq!(a, b);
    let failures = (0..CALLS).filter(|&i| failed(i)).count();
    let count = "SELECT count(*) FROM transcript_items WHERE outcome = 'failed'";
    assert_eq!(rows(&batched, count), [format!("Integer({failures})")]);
    let unended = "SELECT count(*) FROM transcript_items
        WHERE kind = 'tool_call' AND (end_ts IS NULL OR outcome IS NULL)";
    assert_eq!(rows(&batched, unended), ["Integer(0)"]);
}

/// A turn an import read while its last line was an API error is `failed` only until an import
/// reads it again, retried past it and ended by itself: then it is what one import of the
/// whole file makes of it.
#[test]
fn a_turn_retried_past_an_api_error_is_not_left_failed_by_an_earlier_import() {
    let api_error = line(
        "assistant",
        "e1",
        2,
        json!({"isApiErrorMessage": true, "message": {"model": "<synthetic>",
            "role": "assistant", "content": [{"type": "text", "text": "API Error: 529"}]}}),
    );
    let first = vec![prompt("u1", 1, "build it"), api_error];
    let rest = vec![
        assistant(
            "a1",
            30,
            "msg_1",
            json!([{"type": "text", "text": "done after a retry"}]),
        ),
        turn_end("d1", 31),
    ];
    let outcome =
        "SELECT turn_id, coalesce(response, '-'), coalesce(outcome, '-'), imported FROM turns";

    let growing = TestEnv::new();
    let t = growing.dir.path().join(format!("{SESSION}.jsonl"));
    append(&t, &first);
    import(&growing, &t);
    assert_eq!(
        rows(&growing, outcome),
        [r#"Text("u1") | Text("-") | Text("failed") | Integer(1)"#]
    );
    append(&t, &rest);
    import(&growing, &t);

    let whole = TestEnv::new();
    let w = whole.dir.path().join(format!("{SESSION}.jsonl"));
    append(&w, &[first, rest].concat());
    import(&whole, &w);
    let once = rows(&whole, outcome);
    assert_eq!(
        once,
        [r#"Text("u1") | Text("done after a retry") | Text("-") | Integer(1)"#]
    );
    assert_eq!(rows(&growing, outcome), once);
}

/// A Codex rollout's calls (issue 37): each is known by the `call_id` Codex's hooks send as
/// `tool_use_id`, so the one the hooks recorded is hooked and the two they missed are shown by
/// `show`, with how each ended.
#[test]
fn a_codex_rollouts_calls_are_matched_to_the_hooks_by_call_id() {
    let env = TestEnv::new();
    const CODEX_SESSION: &str = "01a233db-a1ad-7d42-a75e-233cab91536d";
    let sessions = env.dir.path().join("codex/sessions/2026/12/01");
    fs::create_dir_all(&sessions).unwrap();
    let rollout = sessions.join(format!("rollout-2026-12-01T23-06-01-{CODEX_SESSION}.jsonl"));
    fs::write(&rollout, payload("codex-0.171-rollout.jsonl")).unwrap();
    for name in [
        "codex-0.171-pre-tool-use.json",
        "codex-0.171-post-tool-use.json",
    ] {
        capture(&env, payload(name), &["--agent", "codex"]);
    }
    env.ingest_once();
    import(&env, &rollout);
    assert_eq!(
        rows(
            &env,
            "SELECT item_id, name, outcome FROM transcript_items WHERE kind = 'tool_call'
             ORDER BY item_id"
        ),
        [
            r#"Text("call_0") | Text("exec_command") | Text("succeeded")"#,
            r#"Text("call_1") | Text("exec_command") | Text("failed")"#,
            r#"Text("call_2") | Text("exec_command") | Text("failed")"#,
        ]
    );
    assert_eq!(
        rows(
            &env,
            "SELECT transcript_tool_calls, hooked_tool_calls, missed_tool_calls,
                    hook_only_tool_calls FROM v_coverage"
        ),
        ["Integer(3) | Integer(1) | Integer(2) | Integer(0)"]
    );
    let out = env.cmd().args(["show", CODEX_SESSION]).output().unwrap();
    let shown = String::from_utf8(out.stdout).unwrap();
    let imported_calls: Vec<&str> = shown
        .lines()
        .filter(|l| l.contains("  tool  ") && l.ends_with("(imported)"))
        .collect();
    assert_eq!(imported_calls.len(), 2, "{shown}");
    assert!(imported_calls[0].contains("exit 3") && imported_calls[0].contains("[failed"));
    assert!(
        shown.contains("3 tool calls (2 imported), 2 failed"),
        "{shown}"
    );
}

/// `archive_transcripts = true` (issue 37): an import keeps a private gzip copy of each
/// transcript it reads in cmstore's folder, written again only when the file changed; once the
/// agent deletes the file, an import of the archive into another store makes the same rows as
/// the transcript made.
#[test]
fn an_archived_transcript_outlives_its_file_and_imports_as_the_file_did() {
    let env = TestEnv::new();
    fs::create_dir_all(env.home()).unwrap();
    fs::write(
        env.home().join("cmstore.toml"),
        "archive_transcripts = true\n",
    )
    .unwrap();
    let t = env
        .user_home()
        .join(format!(".claude/projects/-w-proj/{SESSION}.jsonl"));
    fs::create_dir_all(t.parent().unwrap()).unwrap();
    append(
        &t,
        &[
            prompt("u1", 0, "list the files"),
            assistant("a1", 1, "msg_1", json!([tool_use("toolu_1", "ls")])),
            result("r1", 2, "toolu_1", "a.txt", false),
            assistant(
                "a2",
                3,
                "msg_2",
                json!([{"type": "text", "text": "One file."}]),
            ),
            turn_end("d1", 4),
        ],
    );
    let said = import(&env, &t);
    assert!(said.contains("kept 1 transcript copy(ies)"), "{said}");
    let copy = env.home().join(format!(
        "archive/home/.claude/projects/-w-proj/{SESSION}.jsonl.gz"
    ));
    assert_eq!(unzipped(&copy), fs::read_to_string(&t).unwrap());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&copy), 0o600);
        assert_eq!(mode(copy.parent().unwrap()), 0o700);
    }
    // Unchanged: neither read nor copied again.
    let again = import(&env, &t);
    assert!(!again.contains("kept"), "{again}");
    assert!(again.contains("passed over 1 file(s) unchanged"), "{again}");
    // Named by a relative path, the file is the same file: its one copy. And the archive
    // named by a relative path is no file to copy.
    for (dir, what) in [
        (t.parent().unwrap().to_path_buf(), "."),
        (env.home(), "archive"),
    ] {
        let out = env
            .cmd()
            .current_dir(dir)
            .args(["import", "--again", what])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !said.contains("kept"), "{said}");
    }
    let mut copies = Vec::new();
    let mut stack = vec![env.home().join("archive")];
    while let Some(p) = stack.pop() {
        match p.is_dir() {
            true => stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path())),
            false => copies.push(p),
        }
    }
    assert_eq!(copies, std::slice::from_ref(&copy));

    let tables = |env: &TestEnv| {
        [
            rows(env, TURN_CONTENT),
            rows(
                env,
                "SELECT message_id, session_id, turn_id, model, input_tokens, output_tokens
                 FROM usage ORDER BY message_id",
            ),
            rows(
                env,
                "SELECT session_id, kind, item_id, name, input, end_ts, outcome
                 FROM transcript_items ORDER BY kind, item_id",
            ),
        ]
    };
    let from_file = tables(&env);
    assert_eq!(from_file[0].len(), 1, "{from_file:?}");
    assert_eq!(from_file[1].len(), 2, "{from_file:?}");
    fs::remove_file(&t).unwrap();
    let elsewhere = TestEnv::new();
    import(&elsewhere, &env.home().join("archive"));
    assert_eq!(tables(&elsewhere), from_file);
}

/// A Droid session's turns (issue 37): read from its transcript as the hooks' cursor reads
/// it, keyed by the prompt line's `id` as the hooks key them, in the session its file names,
/// with the working directory of its `session_start`.
#[test]
fn a_droid_sessions_turns_are_imported_under_the_hooks_keys() {
    let env = TestEnv::new();
    const DROID_SESSION: &str = "d201d000-0000-4000-8000-000000000001";
    let dir = env.user_home().join(".factory/sessions/-w-app");
    fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join(format!("{DROID_SESSION}.jsonl"));
    let lines = [
        format!(r#"{{"type":"session_start","id":"{DROID_SESSION}","version":2,"cwd":"/w/app"}}"#),
        r#"{"type":"message","id":"h1","message":{"role":"user","content":[],"visibility":"user_only","hookEventName":"SessionStart"}}"#.to_owned(),
        r#"{"type":"message","id":"context-p1","message":{"role":"user","content":[{"type":"text","text":"<system-reminder>\nThe tools listed below are available"}]}}"#.to_owned(),
        r#"{"type":"message","id":"p1","parentId":"context-p1","timestamp":"2026-12-07T05:42:53.764Z","message":{"role":"user","content":[{"type":"text","text":"run the two steps"}],"interactionMode":"auto"}}"#.to_owned(),
        r#"{"type":"message","id":"a1","timestamp":"2026-12-07T05:42:54.000Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_0","name":"Execute","input":{"command":"echo hi"}}],"modelId":"custom:Mock-0"}}"#.to_owned(),
        r#"{"type":"message","id":"r1","timestamp":"2026-12-07T05:42:55.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_0","content":"hi"}]}}"#.to_owned(),
        r#"{"type":"message","id":"a2","timestamp":"2026-12-07T05:42:56.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Both steps are done."}],"modelId":"custom:Mock-0"}}"#.to_owned(),
        r#"{"type":"agent_turn_outcome","turnId":"p1","reason":"completed","resultKind":"text"}"#.to_owned(),
    ];
    append(&transcript, &lines);
    import(&env, &transcript);
    let turns = "SELECT session_id, turn_id, hook_type, prompt, response, tool_call_count, model,
        imported FROM turns";
    let want = [format!(
        r#"Text("{DROID_SESSION}") | Text("p1") | Text("Stop") | Text("run the two steps") | Text("Both steps are done.") | Integer(1) | Text("custom:Mock-0") | Integer(1)"#
    )];
    assert_eq!(rows(&env, turns), want);
    assert_eq!(
        rows(&env, "SELECT agent, cwd FROM sessions"),
        [r#"Text("droid") | Text("/w/app")"#]
    );
    // Read again: the same row.
    import_again(&env, &transcript);
    assert_eq!(rows(&env, turns), want);
    // Unchanged, passed over; its settings file (its usage) changed beside it: read again.
    assert!(import(&env, &transcript).contains("passed over 1 file(s) unchanged"));
    fs::write(dir.join(format!("{DROID_SESSION}.settings.json")), "{}").unwrap();
    let said = import(&env, &transcript);
    assert!(!said.contains("passed over"), "{said}");
    assert_eq!(rows(&env, turns), want);

    // Archived (`archive_transcripts = true`), its copy gives the same turn back.
    fs::write(
        env.home().join("cmstore.toml"),
        "archive_transcripts = true\n",
    )
    .unwrap();
    import_again(&env, &transcript);
    let elsewhere = TestEnv::new();
    import(&elsewhere, &env.home().join("archive"));
    assert_eq!(rows(&elsewhere, turns), want);
}

/// Qwen Code's chats (issue 37): each `user` record of a main chat is a turn, keyed by its
/// `uuid` as Qwen Code's hooks key it, with its answer; counted here from the records
/// themselves. An import read again adds nothing.
#[test]
fn qwen_codes_real_chats_give_one_turn_per_user_record() {
    let Some(qwen) = real_more_fixtures("other/qwen-code") else {
        return;
    };
    let env = TestEnv::new();
    import(&env, &qwen);
    let mut want = Vec::new();
    let mut stack = vec![qwen.clone()];
    while let Some(path) = stack.pop() {
        if path.is_dir() {
            stack.extend(fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let session = path.file_stem().unwrap().to_string_lossy().into_owned();
        for line in fs::read_to_string(&path).unwrap().lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            if record["type"] == "user" {
                want.push(format!("{session} {}", record["uuid"].as_str().unwrap()));
            }
        }
    }
    want.sort();
    assert!(want.len() >= 5, "{want:?}");
    let keys = "SELECT session_id || ' ' || turn_key FROM turns
        WHERE imported = 1 AND prompt <> '' AND response <> '' ORDER BY 1";
    let got: Vec<String> = rows(&env, keys)
        .into_iter()
        .map(|r| {
            r.trim_start_matches("Text(\"")
                .trim_end_matches("\")")
                .to_owned()
        })
        .collect();
    assert_eq!(got, want);
    let before = turns_table(&env);
    import_again(&env, &qwen);
    assert_eq!(turns_table(&env), before);
}

/// A Gemini CLI JSONL chat of session `gem-9` in `env`'s home, its two turns written around
/// now (capture dates the hooks' lines by its own clock): `first` answered `one`, `second`
/// answered `two` after a shell call.
fn gemini_chat(env: &TestEnv) -> PathBuf {
    let chats = env.user_home().join(".gemini/tmp/p/chats");
    fs::create_dir_all(&chats).unwrap();
    let path = chats.join("session-2026-12-07T10-00-gem9.jsonl");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let at = |s: i64| {
        chrono::DateTime::from_timestamp(now - 10 + s, 0)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    let gemini = |id: &str, s: i64, content: &str, calls: Value| {
        json!({"id": id, "timestamp": at(s), "type": "gemini", "content": content,
               "thoughts": [{"subject": "", "description": "Thinking."}],
               "tokens": {"input": 10, "output": 5, "cached": 0, "thoughts": 0, "tool": 0,
                          "total": 15},
               "model": "gemini-2.5-flash", "toolCalls": calls})
        .to_string()
    };
    let call = json!([{"id": "c1", "name": "run_shell_command", "args": {"command": "echo hi"},
        "result": [{"functionResponse": {"id": "c1", "name": "run_shell_command",
                                         "response": {"output": "hi"}}}]}]);
    let lines = [
        json!({"sessionId": "gem-9", "projectHash": "h", "startTime": at(0), "kind": "main"})
            .to_string(),
        json!({"id": "u-1", "timestamp": at(1), "type": "user", "content": [{"text": "first"}]})
            .to_string(),
        gemini("g-1", 2, "one", json!([])),
        json!({"$set": {"lastUpdated": at(2)}}).to_string(),
        json!({"id": "u-2", "timestamp": at(3), "type": "user", "content": [{"text": "second"}]})
            .to_string(),
        gemini("g-2", 4, "", call.clone()),
        gemini("g-3", 5, "two", json!([])),
    ];
    fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// The hooks' payloads of [`gemini_chat`]'s two turns.
fn gemini_hooks(chat: &Path) -> Vec<String> {
    let payload = |event: &str, extra: Value| {
        let mut p = json!({"session_id": "gem-9", "transcript_path": chat, "cwd": "/w",
                           "hook_event_name": event});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p.to_string()
    };
    vec![
        payload("BeforeAgent", json!({"prompt": "first"})),
        payload(
            "AfterAgent",
            json!({"prompt": "first", "prompt_response": "one"}),
        ),
        payload("BeforeAgent", json!({"prompt": "second"})),
        payload(
            "AfterAgent",
            json!({"prompt": "second", "prompt_response": "two"}),
        ),
    ]
}

/// Issue 37: Gemini CLI's hooks name no turn id (they key a turn by its `AfterAgent`), and its
/// chat keys a turn by its prompt's record id. An import finds the hooks' row of each turn by
/// its prompt and time, and the hooks' Stop finds an imported row the same way: whichever
/// comes first, one row per turn, the hooks' fields, the chat's id, every turn hooked.
#[test]
fn a_gemini_chats_turns_are_the_hooks_turns_whatever_the_order() {
    let what = "SELECT turn_id, prompt, response, tool_call_count, model, thinking, outcome, \
                imported FROM turns ORDER BY turn_id";
    let mut seen = Vec::new();
    for import_first in [false, true] {
        let env = TestEnv::new();
        let chat = gemini_chat(&env);
        for payload in gemini_hooks(&chat) {
            capture(&env, payload, &["--agent", "gemini"]);
        }
        if import_first {
            import(&env, &chat);
            assert_eq!(
                rows(
                    &env,
                    "SELECT turn_key, imported FROM turns ORDER BY turn_key"
                ),
                ["Text(\"u-1\") | Integer(1)", "Text(\"u-2\") | Integer(1)"]
            );
        }
        env.ingest_once();
        if !import_first {
            import(&env, &chat);
        }
        let after = rows(&env, what);
        import_again(&env, &chat);
        assert_eq!(rows(&env, what), after, "imported again");
        assert_eq!(
            rows(&env, "SELECT count(*) FROM turns"),
            ["Integer(2)"],
            "one row per turn"
        );
        assert_eq!(
            rows(
                &env,
                "SELECT transcript_turns, hooked_turns, missed_turns FROM v_coverage"
            ),
            ["Integer(2) | Integer(2) | Integer(0)"]
        );
        seen.push(after);
    }
    assert_eq!(seen[0], seen[1], "either order");
    assert_eq!(
        seen[0],
        [
            "Text(\"u-1\") | Text(\"first\") | Text(\"one\") | Integer(0) | \
             Text(\"gemini-2.5-flash\") | Text(\"Thinking.\") | Null | Integer(0)",
            "Text(\"u-2\") | Text(\"second\") | Text(\"two\") | Integer(1) | \
             Text(\"gemini-2.5-flash\") | Text(\"Thinking.\") | Null | Integer(0)",
        ]
    );
}

/// Qoder CLI writes Claude Code's transcript lines under its own folder
/// (`~/.qoder/projects/<project>/<session>.jsonl`): an import reads the session as Qoder's, and
/// the default import (no path) finds it there.
#[test]
fn a_qoder_transcript_is_read_as_claude_codes_lines_and_named_qoders() {
    let env = TestEnv::new();
    let folder = env.user_home().join(".qoder/projects/-w-proj");
    fs::create_dir_all(&folder).unwrap();
    let transcript = folder.join(format!("{SESSION}.jsonl"));
    append(
        &transcript,
        &[
            prompt("u1", 0, "run the tests"),
            assistant(
                "a1",
                2,
                "msg_1",
                json!([{"type": "text", "text": "They pass."}]),
            ),
            turn_end("t1", 3),
        ],
    );
    let said = import(&env, &env.user_home());
    assert!(said.contains("1 transcript(s)"), "{said}");
    assert_eq!(
        rows(&env, "SELECT DISTINCT agent FROM sessions"),
        ["Text(\"qoder\")"]
    );
    assert_eq!(
        rows(&env, "SELECT prompt, response FROM turns"),
        ["Text(\"run the tests\") | Text(\"They pass.\")"]
    );
    assert_eq!(
        rows(&env, "SELECT DISTINCT agent FROM usage"),
        ["Text(\"qoder\")"]
    );
}
