//! The end-to-end torture test: the guarantees of docs/design.md under everything at once.
//!
//! Capture processes append realistic events of every agent dialect while `ingest` follows the
//! queue and is killed with SIGKILL at random moments and restarted, the queue is compacted (with ingest down and beside it) and
//! prune runs. At the end every event written is in the store exactly once, nothing older than
//! the retention cutoff survives, nothing newer is missing, `status` shows no lag, and the tool
//! calls (with ids and without, denied by the gate of the one writer in enforce mode, refused,
//! abandoned) and their totals are exactly what one uninterrupted ingest of the same lines
//! makes. One more writer runs Claude Code hooks on a transcript that grows one streamed API
//! response at a time, its cursor now and then lost: every response is in `usage` once, with
//! its final count. When a PostgreSQL server is at hand (always in CI), `push --follow` mirrors
//! the store into a team store beside it all, killed -9 at random moments too: after a last
//! push the server holds every event the store holds, once, and the same sessions, tool calls
//! and usage. Bounded: a fixed number of hook runs and chaos rounds, well under a minute on 2
//! cores.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{entry, Rng, TestEnv};
use cmstore_workload::{Options, Workload};

const WRITERS: u64 = 4;
const CALLS_PER_WRITER: usize = 500;
/// Chaos rounds at least, even if the writers finish first.
const MIN_ROUNDS: usize = 20;
/// API responses the usage writer appends to its transcript, each as two streamed lines.
const RESPONSES: u64 = 150;
const OLD_EVENTS: usize = 300;
const DAY_MS: i64 = 86_400_000;

#[test]
fn capture_ingest_kill_compact_prune_lose_and_double_nothing() {
    let env = TestEnv::new();
    let started = Instant::now();
    let now_ms = crate::common::now_ms();

    // History older than the 7-day retention: it must be gone at the end.
    let old: Vec<String> = (0..OLD_EVENTS)
        .map(|i| {
            let mut e = entry(
                if i % 2 == 0 { "PreToolUse" } else { "Stop" },
                &format!("old-{}", i % 7),
            );
            e.timestamp = now_ms - 10 * DAY_MS - i as i64;
            e.to_line()
        })
        .collect();
    env.append(&old);

    // Writers: real `cmstore capture` processes fed every dialect's payloads.
    let captured = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let mut cmd = env.std_cmd();
            if w == 0 {
                // One writer's gate denies: its risky calls are denied, not left open.
                cmd.env("CMSTORE_MODE", "enforce");
            }
            let program = cmd.get_program().to_owned();
            let envs: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = cmd
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
                .collect();
            let captured = Arc::clone(&captured);
            thread::spawn(move || {
                let calls = Workload::new(Options {
                    seed: 1000 + w,
                    sessions: 3,
                    garbage_per_mille: 0,
                    ..Options::default()
                });
                for call in calls.take(CALLS_PER_WRITER) {
                    let mut cmd = std::process::Command::new(&program);
                    for (k, v) in &envs {
                        match v {
                            Some(v) => cmd.env(k, v),
                            None => cmd.env_remove(k),
                        };
                    }
                    let out = run_with_stdin(cmd.args(&call.args), &call.stdin());
                    assert_eq!(out.status.code(), Some(0), "{:?}", call.args);
                    captured.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    // The usage writer: a transcript growing by responses whose two lines may straddle two
    // hooks (the second carries the final output count); every 10th hook loses its cursor.
    let usage_hooks = Arc::new(AtomicU64::new(0));
    let usage_writer = {
        let cmd = env.std_cmd();
        let program = cmd.get_program().to_owned();
        let envs: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)> = cmd
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
            .collect();
        let transcript = env.dir.path().join("usage-transcript.jsonl");
        let state = env.home().join("state");
        let hooks = Arc::clone(&usage_hooks);
        thread::spawn(move || {
            use std::io::Write;
            let mut file = std::fs::File::create(&transcript).unwrap();
            for i in 0..RESPONSES {
                for (part, output) in [(0, 1), (1, 100 + i)] {
                    let line = serde_json::json!({"type": "assistant", "sessionId": "usage-s",
                        "requestId": format!("req_{i}"), "timestamp": "2026-01-01T00:00:00Z",
                        "message": {"id": format!("msg_{i}"), "model": "claude-haiku-4-5",
                            "content": [{"type": "text", "text": format!("part {part}")}],
                            "usage": {"input_tokens": 10, "output_tokens": output}}});
                    writeln!(file, "{line}").unwrap();
                    file.flush().unwrap();
                    if (i + part) % 2 == 1 {
                        continue;
                    }
                    if hooks.load(Ordering::SeqCst) % 10 == 9 {
                        let _ = std::fs::remove_file(state.join("usage-s.json"));
                    }
                    let input = serde_json::json!({"session_id": "usage-s",
                        "transcript_path": transcript, "hook_event_name": "PostToolUse",
                        "tool_name": "Read", "tool_input": {"file_path": "/x"},
                        "tool_response": {}, "tool_use_id": format!("tu_{i}_{part}")});
                    let mut cmd = std::process::Command::new(&program);
                    for (k, v) in &envs {
                        match v {
                            Some(v) => cmd.env(k, v),
                            None => cmd.env_remove(k),
                        };
                    }
                    let out = run_with_stdin(
                        cmd.args(["capture", "--agent", "claude"]),
                        input.to_string().as_bytes(),
                    );
                    assert_eq!(out.status.code(), Some(0));
                    hooks.fetch_add(1, Ordering::SeqCst);
                }
            }
            // The last hook reads what is left.
            let input = serde_json::json!({"session_id": "usage-s",
                "transcript_path": transcript, "hook_event_name": "Stop",
                "stop_hook_active": false});
            let mut cmd = std::process::Command::new(&program);
            for (k, v) in &envs {
                match v {
                    Some(v) => cmd.env(k, v),
                    None => cmd.env_remove(k),
                };
            }
            let out = run_with_stdin(
                cmd.args(["capture", "--agent", "claude"]),
                input.to_string().as_bytes(),
            );
            assert_eq!(out.status.code(), Some(0));
            hooks.fetch_add(1, Ordering::SeqCst);
        })
    };

    // Chaos: kill -9 the follower at random moments, compact the queue while it is down and
    // while it runs, prune while it runs.
    let mut rng = Rng::new(0x5eed);
    let mut ingest = env.spawn_follow(&["--poll-ms", "50"]);
    // A pusher beside them when a PostgreSQL server is at hand (issue 40): `push --follow`
    // into the team store, killed -9 at random moments too.
    let team = crate::common::pg_database_if_any();
    if team.is_none() {
        eprintln!("torture: no PostgreSQL server, so no pusher (set CMSTORE_TEST_PG)");
    }
    let spawn_pusher = |url: &str| {
        env.std_cmd()
            .args([
                "push",
                "--follow",
                "--poll-ms",
                "50",
                "--content",
                "full",
                "--url",
                url,
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn push")
    };
    let wait_for_db = Instant::now();
    while !env.home().join("cmstore.db").exists() {
        assert!(wait_for_db.elapsed() < Duration::from_secs(30), "no store");
        thread::sleep(Duration::from_millis(20));
    }
    let mut pusher = team.as_ref().map(|db| spawn_pusher(&db.url));
    let mut pusher_kills = 0;
    let mut rounds = 0;
    let (mut kills, mut compactions, mut prunes, mut compactions_beside) = (0, 0, 0, 0);
    while !writers.iter().all(|w| w.is_finished())
        || !usage_writer.is_finished()
        || rounds < MIN_ROUNDS
    {
        rounds += 1;
        thread::sleep(Duration::from_millis(30 + rng.below(250)));
        ingest.kill().expect("kill -9 ingest");
        ingest.wait().expect("reap ingest");
        kills += 1;
        if let (Some(db), Some(running)) = (&team, pusher.as_mut()) {
            if rng.below(2) == 0 {
                running.kill().expect("kill -9 push");
                running.wait().expect("reap push");
                pusher_kills += 1;
                pusher = Some(spawn_pusher(&db.url));
            }
        }
        match rng.below(4) {
            0 => {
                let out = env
                    .cmd()
                    .args(["prune", "--days", "7", "--compact-queue"])
                    .output()
                    .unwrap();
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                compactions += 1;
            }
            1 => {
                ingest = env.spawn_follow(&["--poll-ms", "50"]);
                let out = env.cmd().args(["prune", "--days", "7"]).output().unwrap();
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                prunes += 1;
                continue;
            }
            2 => {
                ingest = env.spawn_follow(&["--poll-ms", "50"]);
                let out = env
                    .cmd()
                    .args(["prune", "--days", "7", "--compact-queue"])
                    .output()
                    .unwrap();
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                compactions_beside += 1;
                continue;
            }
            _ => {}
        }
        ingest = env.spawn_follow(&["--poll-ms", "50"]);
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "torture test ran too long"
        );
    }
    for w in writers {
        w.join().expect("writer");
    }
    usage_writer.join().expect("usage writer");
    ingest.kill().unwrap();
    ingest.wait().unwrap();
    if let Some(mut running) = pusher {
        running.kill().unwrap();
        running.wait().unwrap();
    }

    // Settle: drain, apply retention, drain again (nothing may come back).
    env.ingest_once();
    env.cmd()
        .args(["prune", "--days", "7", "--compact-queue"])
        .assert()
        .success();
    env.ingest_once();
    let expected = captured.load(Ordering::SeqCst) as i64;
    assert_eq!(expected, (WRITERS as usize * CALLS_PER_WRITER) as i64);
    let cutoff = now_ms - 7 * DAY_MS;
    assert_eq!(
        env.int(&format!("SELECT count(*) FROM events WHERE ts < {cutoff}")),
        0,
        "nothing older than the cutoff survives"
    );
    let usage_hooks = usage_hooks.load(Ordering::SeqCst) as i64;
    assert_eq!(
        env.int(&format!("SELECT count(*) FROM events WHERE ts >= {cutoff}")),
        expected + usage_hooks,
        "every captured event is in the store"
    );
    assert_eq!(
        env.int("SELECT count(DISTINCT id) FROM events"),
        expected + usage_hooks,
        "and exactly once"
    );
    let responses = RESPONSES as i64;
    assert_eq!(
        env.int("SELECT count(*) FROM usage WHERE session_id = 'usage-s'"),
        responses,
        "every response once: none lost, none doubled"
    );
    assert_eq!(
        env.int("SELECT sum(output_tokens) FROM usage WHERE session_id = 'usage-s'"),
        (0..responses).map(|i| 100 + i).sum::<i64>(),
        "each with its final streamed count"
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id LIKE 'old-%'"),
        0
    );

    same_tool_calls_as_one_uninterrupted_ingest(&env);
    if let Some(db) = &team {
        same_on_the_team_store(&env, db);
    }
    // Kills, compactions and prunes beside ingest leave the chain whole: every row stored is
    // as stored, every row gone went by a chained prune.
    crate::common::assert_chain_whole(&env);

    let status = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    assert!(status.status.success());
    let status: Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    let sources = status["sources"].as_array().expect("sources");
    let live: Vec<&Value> = sources
        .iter()
        .filter(|s| s["path"] == env.queue().display().to_string())
        .collect();
    assert!(!live.is_empty(), "{status}");
    for source in live {
        assert_eq!(source["bytes_behind"], 0, "no lag: {source}");
    }
    eprintln!(
        "torture: {expected} captures, {rounds} rounds, {kills} kills, {compactions} compactions, \
         {compactions_beside} compactions and {prunes} prunes while ingesting, \
         {pusher_kills} kills of the pusher, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// After a last `push` (once), the team store holds every event the store holds, once, and
/// none that was never captured; and of every session the store still has, the same session
/// row, tool calls and usage. (What prune deleted stays on the server, as documented.)
fn same_on_the_team_store(env: &TestEnv, db: &crate::common::PgDatabase) {
    let out = env
        .cmd()
        .args(["push", "--content", "full", "--url", &db.url])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let machine = env.text("SELECT machine_id FROM push_machine");
    let mut client = db.client();
    let server = |client: &mut postgres::Client, sql: &str| -> String {
        client
            .query_one(&format!("SELECT ({sql})::text"), &[&machine])
            .unwrap()
            .get::<_, Option<String>>(0)
            .unwrap_or_default()
    };
    let live = "session_id NOT LIKE 'old-%'";
    let figures = [
        (
            format!("SELECT count(*) || ':' || count(DISTINCT id) FROM events WHERE {live}"),
            format!(
                "SELECT count(*) || ':' || count(DISTINCT id) FROM events \
                 WHERE machine_id = $1 AND {live}"
            ),
        ),
        (
            format!(
                "SELECT count(*) || ':' || sum(events) || ':' || sum(prompts) || ':' \
                 || sum(tool_uses) FROM sessions WHERE {live}"
            ),
            format!(
                "SELECT count(*) || ':' || sum(events) || ':' || sum(prompts) || ':' \
                 || sum(tool_uses) FROM sessions WHERE machine_id = $1 AND {live}"
            ),
        ),
        (
            format!(
                "SELECT count(*) || ':' || sum(duration_ms) || ':' || count(outcome) \
                 FROM tool_calls WHERE {live}"
            ),
            format!(
                "SELECT count(*) || ':' || sum(duration_ms) || ':' || count(outcome) \
                 FROM tool_calls WHERE machine_id = $1 AND {live}"
            ),
        ),
        (
            "SELECT count(*) || ':' || sum(output_tokens) FROM usage".to_string(),
            "SELECT count(*) || ':' || sum(output_tokens) FROM usage WHERE machine_id = $1"
                .to_string(),
        ),
    ];
    for (local, on_server) in figures {
        let local = env.text(&format!("SELECT CAST(({local}) AS TEXT)"));
        assert_eq!(server(&mut client, &on_server), local, "{on_server}");
    }
    // The history prune took may be there too (pushed before it went), each once.
    let old = server(
        &mut client,
        "SELECT count(*) || ':' || count(DISTINCT id) FROM events \
         WHERE machine_id = $1 AND session_id LIKE 'old-%'",
    );
    let (n, distinct) = old.split_once(':').unwrap();
    assert_eq!(n, distinct);
    assert!(n.parse::<usize>().unwrap() <= OLD_EVENTS, "{old}");
}

fn run_with_stdin(cmd: &mut std::process::Command, stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn capture");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// The derived tool rows of `env` (recent sessions: the old ones were pruned) equal those one
/// uninterrupted ingest of the same lines, in the order they were first read, makes.
fn same_tool_calls_as_one_uninterrupted_ingest(env: &TestEnv) {
    let recent = "session_id IS NULL OR session_id NOT LIKE 'old-%'";
    let calls = format!(
        "SELECT call_key, tool_call_id, session_id, tool_name, start_ts, end_ts, duration_ms,
                success, result_type, pre_event_id, post_event_id, outcome
         FROM tool_calls WHERE {recent} ORDER BY call_key, pre_event_id, post_event_id"
    );
    let totals = "SELECT * FROM session_tools WHERE session_id NOT LIKE 'old-%' ORDER BY 1, 2";
    let unknowns = "SELECT * FROM unknown_counts WHERE session_id NOT LIKE 'old-%' ORDER BY 1, 2";
    let dump = |env: &TestEnv, sql: &str| -> Vec<String> {
        let conn = env.conn();
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            Ok((0..n)
                .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                .collect::<Vec<_>>()
                .join("|"))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    };
    let lines: Vec<String> = {
        let conn = env.conn();
        let mut stmt = conn
            .prepare(&format!(
                "SELECT entry FROM events WHERE {recent} ORDER BY seq"
            ))
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let fresh = TestEnv::new();
    fresh.append(&lines);
    fresh.ingest_once();
    let got = dump(env, &calls);
    let want = dump(&fresh, &calls);
    let only = |x: &[String], y: &[String]| -> Vec<String> {
        x.iter().filter(|r| !y.contains(r)).cloned().collect()
    };
    assert!(
        got == want,
        "tool calls under chaos: {:#?}\nin one ingest: {:#?}",
        only(&got, &want),
        only(&want, &got)
    );
    assert_eq!(dump(env, totals), dump(&fresh, totals));
    assert_eq!(dump(env, unknowns), dump(&fresh, unknowns));
    // The traffic had every kind of call in it.
    let outcomes = dump(
        env,
        &format!("SELECT DISTINCT coalesce(outcome, 'in flight') FROM tool_calls WHERE {recent}"),
    );
    for outcome in ["succeeded", "failed", "denied", "refused", "abandoned"] {
        assert!(
            outcomes.iter().any(|o| o.contains(outcome)),
            "{outcome} in {outcomes:?}"
        );
    }
    assert!(
        env.int(&format!(
            "SELECT count(*) FROM tool_calls WHERE ({recent}) AND tool_call_id IS NULL
               AND pre_event_id IS NOT NULL AND post_event_id IS NOT NULL"
        )) > 0,
        "calls without ids, paired"
    );
}
