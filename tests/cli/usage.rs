//! Real token usage: capture carries it from the transcript bytes it reads, ingest stores one
//! row per API response, and no re-read (lost cursor, replayed queue) counts one twice.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Value};

use crate::common::{capture, real_fixtures, the_one_error, TestEnv};

/// (responses, input, output, cache write, cache read) of a transcript by the rule, counted
/// from the raw JSONL with a generic parse: group by (message id, request id or none), the
/// group's last line's counts; `<synthetic>` lines count nothing.
pub fn independent(bytes: &[u8]) -> [i64; 5] {
    let mut groups: BTreeMap<(String, Option<String>), Value> = BTreeMap::new();
    for line in bytes.split(|&b| b == b'\n') {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue;
        };
        let m = &v["message"];
        if v["type"] != "assistant" || m["model"] == "<synthetic>" || !m["usage"].is_object() {
            continue;
        }
        let Some(id) = m["id"].as_str() else { continue };
        let req = v["requestId"].as_str().map(str::to_owned);
        groups.insert((id.to_owned(), req), m["usage"].clone());
    }
    let n = |u: &Value, k: &str| u[k].as_i64().unwrap_or(0);
    groups
        .values()
        .fold([groups.len() as i64, 0, 0, 0, 0], |mut t, u| {
            t[1] += n(u, "input_tokens");
            t[2] += n(u, "output_tokens");
            t[3] += n(u, "cache_creation_input_tokens");
            t[4] += n(u, "cache_read_input_tokens");
            t
        })
}

/// The same figures from the store's `usage` table, `filter` a SQL condition.
fn stored(env: &TestEnv, filter: &str) -> [i64; 5] {
    let conn = env.conn();
    conn.query_row(
        &format!(
            "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(output_tokens), 0),
               coalesce(sum(cache_write_tokens), 0), coalesce(sum(cache_read_tokens), 0)
             FROM usage WHERE {filter}"
        ),
        [],
        |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?]),
    )
    .unwrap()
}

fn hook(env: &TestEnv, event: &str, session: &str, transcript: &Path) {
    let input = json!({"session_id": session, "transcript_path": transcript, "cwd": "/w",
        "hook_event_name": event, "tool_name": "Bash", "tool_input": {"command": "ls"},
        "tool_response": {"stdout": ""}, "tool_use_id": "t1", "stop_hook_active": false});
    capture(env, input.to_string(), &["--agent", "claude"]);
}

/// Writes `bytes` to `path` as a transcript growing by `chunks` batches of lines, each batch
/// ending in half a line still being written, running a PostToolUse hook after each; then
/// the rest and a Stop.
fn replay(env: &TestEnv, session: &str, bytes: &[u8], path: &Path, chunks: usize) {
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let per = lines.len().div_ceil(chunks).max(1);
    let mut file = std::fs::File::create(path).unwrap();
    let mut rest: &[u8] = &[];
    for batch in lines.chunks(per) {
        file.write_all(rest).unwrap();
        let (last, whole) = batch.split_last().unwrap();
        for line in whole {
            file.write_all(line).unwrap();
        }
        let (head, tail) = last.split_at(last.len() / 2);
        file.write_all(head).unwrap();
        file.flush().unwrap();
        rest = tail;
        hook(env, "PostToolUse", session, path);
    }
    file.write_all(rest).unwrap();
    file.flush().unwrap();
    hook(env, "Stop", session, path);
}

#[test]
fn every_real_transcript_through_capture_and_ingest_counts_each_response_once() {
    let Some(real) = real_fixtures() else { return };
    let dir = real.join("claude-code");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let env = TestEnv::new();
        let bytes = std::fs::read(&path).unwrap();
        let t = env.dir.path().join("session.jsonl");
        replay(&env, "s", &bytes, &t, 6);
        env.ingest_once();
        let expected = independent(&bytes);
        assert_eq!(stored(&env, "1"), expected, "{}", path.display());
        let harvested = "SELECT count(*) FROM events WHERE synthetic = 1";
        let (turns, synthetic) = (env.int("SELECT count(*) FROM turns"), env.int(harvested));
        // A lost cursor: the next hook reads the transcript's tail again, a replayed queue
        // line carries the same responses again. Neither counts one twice, nor stores a
        // harvested turn's line twice.
        std::fs::remove_dir_all(env.home().join("state")).unwrap();
        hook(&env, "PostToolUse", "s", &t);
        env.make_ingest_read_again_from_start();
        env.ingest_once();
        assert_eq!(stored(&env, "1"), expected, "{} again", path.display());
        assert_eq!(
            env.int("SELECT count(*) FROM turns"),
            turns,
            "{}",
            path.display()
        );
        assert_eq!(env.int(harvested), synthetic, "{}", path.display());
        checked += 1;
    }
    assert_eq!(checked, 12);
}

#[test]
fn subagent_transcripts_are_counted_as_the_subagents() {
    let Some(real) = real_fixtures() else { return };
    let dir = real.join("claude-code");
    let env = TestEnv::new();
    let main = std::fs::read(dir.join("transcript-10.jsonl")).unwrap();
    let t = env.dir.path().join("main.jsonl");
    std::fs::write(&t, &main).unwrap();
    hook(&env, "Stop", "s", &t);
    let mut expected_sub = [0; 5];
    for entry in std::fs::read_dir(dir.join("transcript-10.subagents")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let counts = independent(&bytes);
        for (sum, n) in expected_sub.iter_mut().zip(counts) {
            *sum += n;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let agent = name.trim_start_matches("agent-").trim_end_matches(".jsonl");
        let copy = env.dir.path().join(&name);
        std::fs::write(&copy, &bytes).unwrap();
        let input = json!({"session_id": "s", "transcript_path": t, "hook_event_name": "SubagentStop",
            "agent_id": agent, "agent_type": "general-purpose", "agent_transcript_path": copy,
            "stop_hook_active": false});
        capture(&env, input.to_string(), &["--agent", "claude"]);
    }
    env.ingest_once();
    assert_eq!(stored(&env, "sidechain = 0"), independent(&main));
    assert_eq!(stored(&env, "sidechain = 1"), expected_sub);
    assert_eq!(
        env.int("SELECT count(DISTINCT subagent_id) FROM usage WHERE sidechain = 1"),
        4
    );
    assert_eq!(
        env.int("SELECT count(*) FROM v_usage_subagents WHERE session_id IS NOT NULL"),
        4
    );
}

#[test]
fn usage_read_by_a_hook_that_writes_no_line_rides_on_the_next_one() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[events]\nPostToolUse = false\nStop = false\n",
    )
    .unwrap();
    let bytes = std::fs::read(real.join("claude-code/transcript-9.jsonl")).unwrap();
    let t = env.dir.path().join("session.jsonl");
    std::fs::write(&t, &bytes).unwrap();
    hook(&env, "PostToolUse", "s", &t);
    assert!(
        !env.queue().exists() || env.queue_lines().is_empty(),
        "PostToolUse and the Stops it harvests are switched off"
    );
    hook(&env, "SessionEnd", "s", &t);
    let lines = env.queue_lines();
    let carried: usize = lines
        .iter()
        .map(|l| l["usage"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(carried as i64, independent(&bytes)[0]);
    env.ingest_once();
    assert_eq!(stored(&env, "1"), independent(&bytes));
}

#[test]
fn usage_read_by_a_session_that_ends_with_no_line_of_its_own_gets_a_usage_line() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[events]\nPostToolUse = false\nStop = false\nSessionEnd = false\n",
    )
    .unwrap();
    let bytes = std::fs::read(real.join("claude-code/transcript-9.jsonl")).unwrap();
    let t = env.dir.path().join("session.jsonl");
    std::fs::write(&t, &bytes).unwrap();
    hook(&env, "PostToolUse", "s", &t);
    hook(&env, "SessionEnd", "s", &t);
    let lines = env.queue_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["hookType"], "Usage");
    assert_eq!(lines[0]["sessionId"], "s");
    assert_eq!(lines[0]["agent"], "claude");
    assert_eq!(lines[0]["synthetic"], true);
    env.ingest_once();
    // Each record names the transcript's own session.
    assert_eq!(stored(&env, "agent = 'claude'"), independent(&bytes));
    // Its time is the last response's, not the hook's: the session is not stretched.
    let last_response = env.int("SELECT max(ts) FROM usage");
    assert_eq!(
        env.int("SELECT ts FROM events WHERE hook_type = 'Usage'"),
        last_response
    );
}

/// Copies the fixture transcripts into `projects` as Claude Code lays them out:
/// `<project>/<n>.jsonl`, and transcript-10's subagents under `<n>/subagents/`. Returns the
/// independent totals of all of them.
fn lay_out_projects(real: &Path, projects: &Path) -> [i64; 5] {
    let dir = real.join("claude-code");
    let project = projects.join("-home-me-app");
    std::fs::create_dir_all(&project).unwrap();
    let mut total = [0; 5];
    let mut add = |bytes: &[u8]| {
        for (sum, n) in total.iter_mut().zip(independent(bytes)) {
            *sum += n;
        }
    };
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".subagents") {
            let sub = project
                .join(stem.trim_start_matches("transcript-"))
                .join("subagents");
            std::fs::create_dir_all(&sub).unwrap();
            for agent in std::fs::read_dir(&path).unwrap() {
                let agent = agent.unwrap().path();
                let bytes = std::fs::read(&agent).unwrap();
                add(&bytes);
                std::fs::write(sub.join(agent.file_name().unwrap()), &bytes).unwrap();
            }
        } else if let Some(stem) = name.strip_suffix(".jsonl") {
            let bytes = std::fs::read(&path).unwrap();
            add(&bytes);
            let n = stem.trim_start_matches("transcript-");
            std::fs::write(project.join(format!("{n}.jsonl")), &bytes).unwrap();
        }
    }
    total
}

fn dump(env: &TestEnv) -> Vec<String> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare("SELECT * FROM usage ORDER BY message_id, request_id")
        .unwrap();
    let columns = stmt.column_count();
    stmt.query_map([], |r| {
        Ok((0..columns)
            .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
            .collect::<Vec<_>>()
            .join("|"))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn import_reads_the_standard_location_idempotently() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    let expected = lay_out_projects(&real, &env.user_home().join(".claude/projects"));
    let out = env.cmd().arg("import").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("16 transcript(s)"), "{stderr}");
    assert_eq!(stored(&env, "1"), expected);
    let first = dump(&env);
    env.cmd().arg("import").assert().success();
    assert_eq!(dump(&env), first, "run twice, same rows");
    assert_eq!(
        env.int("SELECT count(*) FROM usage WHERE sidechain = 1 AND subagent_id IS NOT NULL"),
        8
    );
    // Imported sessions are listed with their usage, though no hook ever ran.
    let out = env
        .cmd()
        .args(["summarize", "--format", "json"])
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let responses: i64 = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["responses"].as_i64().unwrap())
        .sum();
    assert_eq!(responses, expected[0]);
}

/// The hook payload files of a hook logger (`hooks-*/pre_tool_use.jsonl`, …) beside the
/// transcripts are not transcripts: import passes over them, says so once with their count,
/// and stores what the transcripts alone hold.
#[test]
fn import_passes_over_files_of_hook_payloads_and_says_so_once() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    let projects = env.dir.path().join("projects");
    let expected = lay_out_projects(&real, &projects);
    let mut payload_files = 0;
    for dir in std::fs::read_dir(real.join("claude-code")).unwrap() {
        let dir = dir.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("hooks-") {
            continue;
        }
        std::fs::create_dir_all(projects.join(&name)).unwrap();
        for file in std::fs::read_dir(&dir).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, projects.join(&name).join(file.file_name().unwrap())).unwrap();
            payload_files += 1;
        }
    }
    assert!(payload_files > 40, "{payload_files}");
    let out = env.cmd().arg("import").arg(&projects).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("16 transcript(s)"), "{stderr}");
    let said = format!("passed over {payload_files} file(s) of hook payloads, not transcripts");
    assert_eq!(stderr.matches(&said).count(), 1, "{stderr}");
    assert_eq!(stderr.matches("not transcripts").count(), 1, "{stderr}");
    assert_eq!(stored(&env, "1"), expected);
}

/// A transcript is known by its lines' own keys, not by what they quote: a first prompt that
/// pastes a hook payload leaves the file a transcript.
#[test]
fn a_transcript_quoting_a_hook_payload_is_imported() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    let bytes = std::fs::read(real.join("claude-code/transcript-4.jsonl")).unwrap();
    let quoting = json!({
        "type": "user",
        "sessionId": "s",
        "message": {"role": "user", "content": r#"why does {"hook_event_name":"Stop","transcript_path":"/t"} fail?"#},
    });
    let mut file = format!("{quoting}\n").into_bytes();
    file.extend_from_slice(&bytes);
    let t = env.dir.path().join("quoting.jsonl");
    std::fs::write(&t, &file).unwrap();
    let out = env.cmd().arg("import").arg(&t).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("1 transcript(s)"), "{stderr}");
    assert!(!stderr.contains("not transcripts"), "{stderr}");
    assert_eq!(stored(&env, "1"), independent(&bytes));
}

#[test]
fn import_and_capture_of_the_same_transcript_count_each_response_once() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    let bytes = std::fs::read(real.join("claude-code/transcript-4.jsonl")).unwrap();
    let t = env.dir.path().join("session.jsonl");
    replay(&env, "s", &bytes, &t, 4);
    env.ingest_once();
    let hooked = dump(&env);
    env.cmd().arg("import").arg(&t).assert().success();
    assert_eq!(stored(&env, "1"), independent(&bytes));
    assert_eq!(
        dump(&env),
        hooked,
        "the import found every row already there"
    );
}

#[test]
fn import_runs_beside_a_following_ingest() {
    let Some(real) = real_fixtures() else { return };
    let env = TestEnv::new();
    let projects = env.dir.path().join("projects");
    let expected = lay_out_projects(&real, &projects);
    let mut follow = env.spawn_follow(&["--poll-ms", "20"]);
    env.append(&crate::common::lines(2000));
    let out = env.cmd().arg("import").arg(&projects).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    env.wait_for(
        "SELECT count(*) FROM events",
        2000,
        std::time::Duration::from_secs(30),
    );
    crate::common::terminate(&follow);
    follow.wait().unwrap();
    assert_eq!(stored(&env, "1"), expected);
}

#[test]
fn import_of_a_missing_path_says_why_once() {
    let env = TestEnv::new();
    let missing = env.dir.path().join("missing");
    let out = env.cmd().arg("import").arg(&missing).output().unwrap();
    let error = the_one_error(&out);
    assert!(
        error.contains(&format!("cannot read {}: ", missing.display())),
        "{error}"
    );
    assert_eq!(error.matches("os error 2").count(), 1, "{error}");
}

/// A model id an agent records that is no row of the price table finds its maker's row
/// (an Ollama Cloud tag, a Vertex-only preview, an OpenRouter free variant); one nothing
/// prices stays unpriced; `cmstore.toml` still wins.
#[test]
fn imported_models_are_priced_through_their_makers_rows_and_overrides_win() {
    let env = TestEnv::new();
    let chats = env.user_home().join(".gemini/tmp/app/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let message = |id: &str, model: &str| {
        format!(
            r#"{{"id":"{id}","type":"gemini","timestamp":"2026-04-16T22:39:17.604Z","model":"{model}",
               "tokens":{{"input":2000000,"output":1000000,"cached":1000000,"thoughts":0,"tool":0}}}}"#
        )
    };
    let chat = format!(
        r#"{{"sessionId":"s-gemini","projectHash":"h","messages":[{},{},{},{}]}}"#,
        message("g1", "gemini-3-pro-preview"),
        message("g2", "x-ai/grok-4-fast:free"),
        message("g3", "my-local-model"),
        message("g4", "kimi-k2.5:cloud"),
    );
    std::fs::write(chats.join("session-2026-04-16T22-38-aaaa.json"), chat).unwrap();
    env.cmd().arg("import").assert().success();
    let priced = |model: &str| -> (Option<f64>, Option<String>) {
        env.conn()
            .query_row(
                "SELECT u.cost_usd, p.origin FROM v_usage u LEFT JOIN prices p USING (model)
                 WHERE u.model = ?1",
                [model],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    };
    // Vertex AI's rates for it: 2 input, 12 output, 0.2 cache read per million.
    let (cost, origin) = priced("gemini-3-pro-preview");
    assert!(
        (cost.unwrap() - (2.0 + 12.0 + 0.2)).abs() < 1e-9,
        "{cost:?}"
    );
    assert_eq!(
        origin.as_deref(),
        Some("litellm via vertex_ai/gemini-3-pro-preview")
    );
    assert_eq!(
        priced("x-ai/grok-4-fast:free"),
        (Some(0.0), Some("free".into()))
    );
    assert_eq!(priced("my-local-model"), (None, None));
    assert_eq!(
        priced("kimi-k2.5:cloud").1.as_deref(),
        Some("litellm via moonshot/kimi-k2.5")
    );
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[prices.\"kimi-k2.5:cloud\"]\ninput = 0\noutput = 0\ncache_write_5m = 0\n\
         cache_write_1h = 0\ncache_read = 0\n",
    )
    .unwrap();
    let out = env
        .cmd()
        .args(["summarize", "--by", "model", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        priced("kimi-k2.5:cloud"),
        (Some(0.0), Some("cmstore.toml".into()))
    );
}

/// A line dated before what prune deleted is not stored again, but the usage it carries is:
/// prune never deletes usage, and a `Usage` line is dated by its responses, which may be that
/// old when their session is closed long after.
#[test]
fn usage_on_a_line_older_than_what_prune_deleted_is_stored() {
    let env = TestEnv::new();
    env.append(&[crate::common::line("SessionStart", "s-old")]);
    env.ingest_once();
    env.cmd()
        .args(["prune", "--before", "0m"])
        .assert()
        .success();
    let mut carrier = crate::common::entry("Usage", "s-old");
    carrier.timestamp -= 3_600_000;
    carrier.synthetic = Some(true);
    carrier.usage = Some(vec![crate::summarize::usage(
        "msg_old",
        "claude-sonnet-4-5",
        50,
    )]);
    env.append(&[carrier.to_line()]);
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE hook_type = 'Usage'"),
        0
    );
    assert_eq!(
        env.int("SELECT output_tokens FROM usage WHERE message_id = 'msg_old'"),
        50
    );
}

/// `import` of responses older than what `prune` deleted stores their usage (prune never
/// deletes usage) but no `sessions` row, which the next prune would delete again.
#[test]
fn import_after_a_prune_does_not_bring_back_the_sessions_it_deleted() {
    let env = TestEnv::new();
    env.append(&[crate::common::line("SessionStart", "s-now")]);
    env.ingest_once();
    env.cmd()
        .args(["prune", "--before", "0m"])
        .assert()
        .success();
    let response = crate::common::response_line("s-old", "m1", "2026-03-01T10:00:00Z");
    crate::common::import_lines(&env, "old.jsonl", &[response]);
    assert_eq!(
        env.int("SELECT count(*) FROM usage WHERE session_id = 's-old'"),
        1
    );
    assert_eq!(
        env.int("SELECT count(*) FROM sessions WHERE session_id = 's-old'"),
        0
    );
    // The day still counts the session, from its responses (migration 0023).
    let out = env
        .cmd()
        .args(["summarize", "--by", "day", "--since", "2026-01-01"])
        .args(["--format", "json"])
        .output()
        .unwrap();
    let days: Value = serde_json::from_slice(&out.stdout).unwrap();
    let march = days
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["day"] == "2026-03-01")
        .unwrap();
    assert_eq!(
        (march["sessions"].as_i64(), march["responses"].as_i64()),
        (Some(1), Some(1))
    );
}

/// A Copilot CLI log with both its responses and its shutdown's totals (1.0.102) is checked
/// against them on import: equal as Copilot wrote it, and a response changed by hand is named.
#[test]
fn import_checks_copilot_responses_against_the_sessions_own_totals() {
    let env = TestEnv::new();
    let log = crate::common::payload("copilot-1.0.102-events.jsonl");
    let folder = env
        .user_home()
        .join(".copilot/session-state/93aa0f57-9ec5-4031-a31a-65e49dbc99ea");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("events.jsonl"), &log).unwrap();
    let out = env.cmd().arg("import").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr
            .contains("1 session(s) checked against the agent's own totals (Copilot CLI 1): equal"),
        "{stderr}"
    );
    // Only the responses are stored: the totals stand in for none.
    assert_eq!(
        env.int("SELECT count(*) FROM usage WHERE message_id LIKE 'copilot-total:%'"),
        0
    );
    assert_eq!(env.int("SELECT count(*) FROM usage"), 4);
    // Kept for `cmstore usage`, which compares them with the responses whenever asked.
    let out = env.cmd().args(["usage", "--check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("1 session compared with the agent's own figures: all agree"),
        "{out:?}"
    );
    let table = env
        .cmd()
        .arg("usage")
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    insta::assert_snapshot!(
        "usage_table",
        String::from_utf8_lossy(&table.stdout).to_string()
    );
    let changed = log.replacen("\"outputTokens\":31,", "\"outputTokens\":40,", 1);
    assert_ne!(
        changed, log,
        "the fixture has a response with 31 output tokens"
    );
    std::fs::write(folder.join("events.jsonl"), changed).unwrap();
    let fresh = TestEnv::new();
    let out = fresh.cmd().arg("import").arg(&folder).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("these differ"), "{stderr}");
    assert!(
        stderr.contains("93aa0f57-9ec5-4031-a31a-65e49dbc99ea gpt-5.4: counted "),
        "{stderr}"
    );
    assert!(stderr.contains("/135/"), "126 + 9 output counted: {stderr}");
    let out = fresh
        .cmd()
        .args(["usage", "--check", "--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (
            rows[0]["model"].as_str(),
            rows[0]["verdict"].as_str(),
            rows[0]["output_tokens"].as_i64(),
            rows[0]["agent_output_tokens"].as_i64()
        ),
        (Some("gpt-5.4"), Some("differs"), Some(135), Some(126))
    );
}

/// One Qwen Code API response as its chat file records it (`ui_telemetry`), of `session`.
fn qwen_response(session: &str, id: &str) -> String {
    format!(
        r#"{{"uuid":"u-{id}","sessionId":"{session}","timestamp":"2026-04-09T10:47:51.179Z","type":"system","cwd":"/w/q","subtype":"ui_telemetry","systemPayload":{{"uiEvent":{{"event.name":"qwen-code.api_response","event.timestamp":"2026-04-09T10:47:51.179Z","response_id":"{id}","model":"qwen3-coder-plus","input_token_count":1000,"output_token_count":50,"cached_content_token_count":400,"thoughts_token_count":10,"total_token_count":1050,"prompt_id":"{session}########0"}}}}}}"#
    )
}

/// `import` with no path reads Qwen Code's chats where Qwen Code keeps them: under
/// `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`, else `~/.qwen`, archived sessions included.
#[test]
fn import_finds_qwen_codes_chats_where_qwen_code_keeps_them() {
    let env = TestEnv::new();
    let write = |root: &std::path::Path, chat: &str, session: &str| {
        let path = root.join("projects/-w-q").join(chat);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let line = qwen_response(session, &format!("r-{session}"));
        std::fs::write(path, line + "\n").unwrap();
    };
    let home_qwen = env.user_home().join(".qwen");
    write(&home_qwen, "chats/s-home.jsonl", "s-home");
    write(&home_qwen, "chats/archive/s-old.jsonl", "s-old");
    let qwen_home = env.dir.path().join("qwen-home");
    write(&qwen_home, "chats/s-env.jsonl", "s-env");
    let runtime = env.dir.path().join("qwen-runtime");
    write(&runtime, "chats/s-runtime.jsonl", "s-runtime");
    let sessions = |env: &TestEnv| -> Vec<String> {
        let conn = env.conn();
        let mut stmt = conn
            .prepare("SELECT session_id FROM usage WHERE agent = 'qwen' ORDER BY 1")
            .unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.collect::<Result<_, _>>().unwrap()
    };
    env.cmd().arg("import").assert().success();
    assert_eq!(sessions(&env), ["s-home", "s-old"]);
    env.cmd()
        .arg("import")
        .env("QWEN_HOME", &qwen_home)
        .assert()
        .success();
    assert_eq!(sessions(&env), ["s-env", "s-home", "s-old"]);
    env.cmd()
        .arg("import")
        .env("QWEN_HOME", &qwen_home)
        .env("QWEN_RUNTIME_DIR", &runtime)
        .assert()
        .success();
    assert_eq!(sessions(&env), ["s-env", "s-home", "s-old", "s-runtime"]);
    // The counts, converted as for every agent: the cached part out of the input, the
    // thinking inside the output (the total says so).
    let row = env.conn().query_row(
        "SELECT input_tokens, cache_read_tokens, output_tokens, reasoning_tokens, cwd
         FROM usage JOIN sessions USING (session_id) WHERE session_id = 's-env'",
        [],
        |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
            ))
        },
    );
    assert_eq!(row.unwrap(), (600, 400, 50, 10, "/w/q".to_owned()));
}

/// Coverage (issue 37): the tool calls a transcript shows against those the hooks recorded,
/// per session: one the hooks missed, one only the hooks saw.
#[test]
fn coverage_says_which_tool_calls_the_hooks_missed() {
    let env = TestEnv::new();
    let mut lines = Vec::new();
    for id in ["toolu_a", "toolu_b", "toolu_x"] {
        for hook in ["PreToolUse", "PostToolUse"] {
            let mut e = crate::common::entry(hook, "s-cov");
            e.tool_call_id = Some(id.to_string());
            lines.push(e.to_line());
        }
    }
    env.append(&lines);
    env.ingest_once();
    let dir = env.dir.path().join("projects/-w");
    std::fs::create_dir_all(&dir).unwrap();
    let call = |id: &str, n: u32| {
        format!(
            r#"{{"type":"assistant","sessionId":"s-cov","uuid":"u{n}","timestamp":"2026-12-01T10:00:0{n}Z","message":{{"id":"msg_{n}","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"{id}","name":"Bash","input":{{"command":"ls"}}}}],"usage":{{"input_tokens":1,"output_tokens":1}}}}}}"#
        )
    };
    let transcript = [
        call("toolu_a", 1),
        call("toolu_b", 2),
        call("toolu_c", 3),
        call("toolu_c", 3),
    ];
    std::fs::write(dir.join("s-cov.jsonl"), transcript.join("\n") + "\n").unwrap();
    env.cmd().arg("import").arg(&dir).assert().success();
    let row = |env: &TestEnv| {
        env.conn()
            .query_row(
                "SELECT transcript_tool_calls, hooked_tool_calls, missed_tool_calls,
                        hook_only_tool_calls FROM v_coverage WHERE session_id = 's-cov'",
                [],
                |r| Ok([r.get::<_, i64>(0)?, r.get(1)?, r.get(2)?, r.get(3)?]),
            )
            .unwrap()
    };
    assert_eq!(row(&env), [3, 2, 1, 1]);
    let missed = env.text(
        "SELECT group_concat(item_id) FROM transcript_items i WHERE session_id = 's-cov'
           AND NOT EXISTS (SELECT 1 FROM tool_calls c
                           WHERE c.session_id = i.session_id AND c.tool_call_id = i.item_id)",
    );
    assert_eq!(missed, "toolu_c");
    env.cmd().arg("import").arg(&dir).assert().success();
    assert_eq!(row(&env), [3, 2, 1, 1], "re-import +0");
}
