//! The end-to-end torture test: the guarantees of docs/design.md under everything at once.
//!
//! Capture processes append realistic events of every agent dialect while `ingest` follows the
//! queue and is killed with SIGKILL at random moments and restarted, the queue is compacted (with ingest down and beside it) and
//! prune runs. At the end every event written is in the store exactly once, nothing older than
//! the retention cutoff survives, nothing newer is missing, `status` shows no lag, and the tool
//! calls (with ids and without, denied by the gate of the one writer in enforce mode, refused,
//! abandoned) and their totals are exactly what one uninterrupted ingest of the same lines
//! makes.
//!
//! One more writer runs Claude Code's hooks on a session whose transcript grows one line at a
//! time, one streamed API response after another: prompts, tool calls and their results,
//! answers whose two lines may straddle the Stop (Claude Code writes its transcript after the
//! hook), interrupted turns, turns no hook saw; its cursor now and then lost. The same hooks
//! run on a calm store of their own too, which tells what lines they wrote. Beside it all an
//! import writer (issue 37) runs `cmstore import` on the transcript's folder again and again as
//! it grows, and a few times after, killing some of those imports with SIGKILL at random
//! moments. After a last clean import and a last ingest, of that session: the hook lines are
//! the calm store's, each once; every response is in `usage` once with its final count (and
//! the hook lines alone bring every response the hooks read); each turn and tool call of the
//! transcript is in `turns` and `transcript_items` once; and its `usage`, `turns`,
//! `transcript_items` and `sessions` rows are those one uninterrupted run of the same hook
//! lines and a single import makes, the import first or last.
//!
//! When a PostgreSQL server is at hand (always in CI), `push --follow` mirrors the store into a
//! team store beside it all, killed -9 at random moments too: after a last push the server
//! holds every event the store holds, once, and the same sessions, tool calls and usage.
//!
//! Bounded: a fixed number of hook runs and chaos rounds, imports while the transcript grows
//! and a fixed few after, well under a minute on 2 cores. Every random choice comes from one
//! seeded generator ([`SEED`]), which the failures name.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{entry, Rng, TestEnv};
use cmstore_workload::{Options, Workload};

const WRITERS: u64 = 4;
const CALLS_PER_WRITER: usize = 500;
/// Chaos rounds at least, even if the writers finish first.
const MIN_ROUNDS: usize = 20;
/// API responses of the usage writer's session that its hooks read, each as two streamed
/// lines; a last turn no hook saw adds [`UNHOOKED_RESPONSES`].
const RESPONSES: u64 = 150;
/// Responses of the session's last turn, which no hook saw: only an import reads them.
const UNHOOKED_RESPONSES: u64 = 2;
/// The usage writer's session, as Claude Code names it (and its transcript after it).
const USAGE_SESSION: &str = "5e55a9e0-7000-4000-8000-000000000150";
/// Imports the import writer runs (and kills) once the transcript has stopped growing.
const IMPORTS_AFTER: u64 = 4;
const OLD_EVENTS: usize = 300;
const DAY_MS: i64 = 86_400_000;
/// The seed of every random choice of the chaos and of the import writer.
const SEED: u64 = 0x5eed;

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
            let cmstore = Spawner::of(&cmd);
            let captured = Arc::clone(&captured);
            thread::spawn(move || {
                let calls = Workload::new(Options {
                    seed: 1000 + w,
                    sessions: 3,
                    garbage_per_mille: 0,
                    ..Options::default()
                });
                for call in calls.take(CALLS_PER_WRITER) {
                    let out = run_with_stdin(cmstore.cmd().args(&call.args), &call.stdin());
                    assert_eq!(out.status.code(), Some(0), "{:?}", call.args);
                    captured.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    // The usage writer: a Claude Code session whose transcript grows one line at a time, the
    // hooks run among its lines as Claude Code runs them (`usage_session`); every 10th hook
    // loses its cursor. Each hook runs twice: on the store under chaos and on a calm one, whose
    // queue is ingested once at the end (the lines the hooks wrote, to compare with).
    let calm = TestEnv::new();
    let projects = env.dir.path().join("projects");
    let transcript = projects
        .join("-w-usage")
        .join(format!("{USAGE_SESSION}.jsonl"));
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    let session = usage_session(&transcript, now_ms - 3_600_000);
    let usage_hooks = Arc::new(AtomicU64::new(0));
    let transcript_done = Arc::new(AtomicBool::new(false));
    let usage_writer = {
        let stores = [Spawner::of(&env.std_cmd()), Spawner::of(&calm.std_cmd())];
        let cursors = [env.home(), calm.home()]
            .map(|home| home.join("state").join(format!("{USAGE_SESSION}.json")));
        let transcript = transcript.clone();
        let steps = session.steps.clone();
        let hooks = Arc::clone(&usage_hooks);
        let done = Arc::clone(&transcript_done);
        thread::spawn(move || {
            use std::io::Write;
            // Said even if this thread fails: the import writer stops.
            let _done = SetOnDrop(done);
            let mut file = std::fs::File::create(&transcript).unwrap();
            for step in steps {
                let input = match step {
                    Step::Line(line) => {
                        writeln!(file, "{line}").unwrap();
                        file.flush().unwrap();
                        continue;
                    }
                    Step::Hook(input) => input,
                };
                if hooks.load(Ordering::SeqCst) % 10 == 9 {
                    for cursor in &cursors {
                        let _ = std::fs::remove_file(cursor);
                    }
                }
                // Both at once: the transcript stays as it is until both are done.
                let hooks_run: Vec<_> = stores
                    .iter()
                    .map(|store| {
                        spawn_with_stdin(
                            store.cmd().args(["capture", "--agent", "claude"]),
                            input.to_string().as_bytes(),
                        )
                    })
                    .collect();
                for hook in hooks_run {
                    let out = hook.wait_with_output().unwrap();
                    assert_eq!(out.status.code(), Some(0), "{input}");
                }
                hooks.fetch_add(1, Ordering::SeqCst);
            }
        })
    };

    // Chaos: kill -9 the follower at random moments, compact the queue while it is down and
    // while it runs, prune while it runs.
    eprintln!("torture: seed {SEED:#x}");
    let mut rng = Rng::new(SEED);
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
    // The import writer (issue 37): `cmstore import` of the transcript's folder again and
    // again while the transcript grows, half of the runs killed -9 at a random moment of the
    // time a whole run takes; then a few more runs, each killed so (a killed run must leave
    // the grown file to be read again).
    let import_writer = {
        let cmstore = Spawner::of(&env.std_cmd());
        let projects = projects.clone();
        let done = Arc::clone(&transcript_done);
        let mut rng = Rng::new(rng.next_u64());
        thread::spawn(move || {
            use std::os::unix::process::ExitStatusExt;
            let (mut runs, mut kills, mut after) = (0u64, 0u64, 0);
            let mut whole_run = Duration::from_millis(100);
            while after < IMPORTS_AFTER {
                if done.load(Ordering::SeqCst) {
                    after += 1;
                }
                let began = Instant::now();
                let mut import = cmstore
                    .cmd()
                    .arg("import")
                    .arg(&projects)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .expect("spawn import");
                runs += 1;
                if after > 0 || rng.chance(50) {
                    let at = rng.below(whole_run.as_millis() as u64 + 1);
                    thread::sleep(Duration::from_millis(at));
                    import.kill().expect("kill -9 import");
                }
                let out = import.wait_with_output().expect("reap import");
                if out.status.signal() == Some(9) {
                    kills += 1;
                } else {
                    assert!(
                        out.status.success(),
                        "import (seed {SEED:#x}): {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    whole_run = began.elapsed();
                }
                thread::sleep(Duration::from_millis(rng.range(10, 60)));
            }
            (runs, kills)
        })
    };
    let mut pusher_kills = 0;
    let mut rounds = 0;
    let (mut kills, mut compactions, mut prunes, mut compactions_beside) = (0, 0, 0, 0);
    while !writers.iter().all(|w| w.is_finished())
        || !usage_writer.is_finished()
        || !import_writer.is_finished()
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
    let (import_runs, import_kills) = import_writer.join().expect("import writer");
    assert!(import_kills > 0, "no import was killed (seed {SEED:#x})");
    ingest.kill().unwrap();
    ingest.wait().unwrap();
    if let Some(mut running) = pusher {
        running.kill().unwrap();
        running.wait().unwrap();
    }

    // Settle: drain, apply retention, drain again (nothing may come back); a last clean
    // import, and a last drain.
    env.ingest_once();
    env.cmd()
        .args(["prune", "--days", "7", "--compact-queue"])
        .assert()
        .success();
    env.ingest_once();
    import(&env, &projects);
    env.ingest_once();
    // What the usage writer's hooks wrote: the lines of the calm store.
    calm.ingest_once();
    let usage_hooks = usage_hooks.load(Ordering::SeqCst) as i64;
    let hook_lines = calm.int("SELECT count(*) FROM events");
    let expected = captured.load(Ordering::SeqCst) as i64;
    assert_eq!(expected, (WRITERS as usize * CALLS_PER_WRITER) as i64);
    let cutoff = now_ms - 7 * DAY_MS;
    assert_eq!(
        env.int(&format!("SELECT count(*) FROM events WHERE ts < {cutoff}")),
        0,
        "nothing older than the cutoff survives"
    );
    assert_eq!(
        env.int(&format!("SELECT count(*) FROM events WHERE ts >= {cutoff}")),
        expected + hook_lines,
        "every captured event is in the store (seed {SEED:#x})"
    );
    assert_eq!(
        env.int("SELECT count(DISTINCT id) FROM events"),
        expected + hook_lines,
        "and exactly once (seed {SEED:#x})"
    );
    let responses = (RESPONSES + UNHOOKED_RESPONSES) as i64;
    assert_eq!(
        env.text(&format!(
            "SELECT count(*) || ' rows, ' || count(DISTINCT message_id) || ' responses'
             FROM usage WHERE session_id = '{USAGE_SESSION}'"
        )),
        format!("{responses} rows, {responses} responses"),
        "every response once: none lost, none doubled (seed {SEED:#x})"
    );
    assert_eq!(
        env.int(&format!(
            "SELECT sum(output_tokens) FROM usage WHERE session_id = '{USAGE_SESSION}'"
        )),
        (0..responses).map(|i| 100 + i).sum::<i64>(),
        "each with its final streamed count (seed {SEED:#x})"
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id LIKE 'old-%'"),
        0
    );

    same_tool_calls_as_one_uninterrupted_ingest(&env);
    same_session_as_one_uninterrupted_run(&env, &calm, &session, &transcript);
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
         {pusher_kills} kills of the pusher, {import_runs} imports ({import_kills} killed), \
         {usage_hooks} hooks of the usage writer, {:.1} s",
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
    spawn_with_stdin(cmd, stdin).wait_with_output().unwrap()
}

/// `cmd` started with `stdin` written to it (and closed), its output piped.
fn spawn_with_stdin(cmd: &mut std::process::Command, stdin: &[u8]) -> std::process::Child {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn capture");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child
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
    let lines = entries(env, recent);
    let fresh = TestEnv::new();
    fresh.append(&lines);
    fresh.ingest_once();
    let got = rows(env, &calls);
    let want = rows(&fresh, &calls);
    let only = |x: &[String], y: &[String]| -> Vec<String> {
        x.iter().filter(|r| !y.contains(r)).cloned().collect()
    };
    assert!(
        got == want,
        "tool calls under chaos: {:#?}\nin one ingest: {:#?}",
        only(&got, &want),
        only(&want, &got)
    );
    assert_eq!(rows(env, totals), rows(&fresh, totals));
    assert_eq!(rows(env, unknowns), rows(&fresh, unknowns));
    // The traffic had every kind of call in it.
    let outcomes = rows(
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

/// How a command of a `TestEnv` is made, to make it in another thread.
struct Spawner {
    program: std::ffi::OsString,
    envs: Vec<(std::ffi::OsString, Option<std::ffi::OsString>)>,
}

impl Spawner {
    /// The program and environment of `cmd`.
    fn of(cmd: &std::process::Command) -> Spawner {
        Spawner {
            program: cmd.get_program().to_owned(),
            envs: cmd
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
                .collect(),
        }
    }

    /// A new command of that program in that environment.
    fn cmd(&self) -> std::process::Command {
        let mut cmd = std::process::Command::new(&self.program);
        for (k, v) in &self.envs {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd
    }
}

/// Sets its flag when dropped: when its thread ends, whether it finished or failed.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// What the usage writer does next.
#[derive(Debug, Clone)]
enum Step {
    /// Appends this line to the transcript.
    Line(String),
    /// Runs `cmstore capture --agent claude` on this hook payload.
    Hook(Value),
}

/// A turn of the usage writer's session, as its transcript tells it.
struct PlannedTurn {
    /// Its prompt line's id: the turn's key.
    id: String,
    prompt: String,
    /// Tool calls in it.
    calls: usize,
    /// The user interrupted it (no Stop hook ran for it).
    interrupted: bool,
}

/// The usage writer's session: its steps, and what its transcript shows in the end.
struct UsageSession {
    steps: Vec<Step>,
    turns: Vec<PlannedTurn>,
    /// Each tool call's id, and how its result says it ended.
    calls: Vec<(String, &'static str)>,
}

/// When the Stop hook of a turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// After the answer's last line.
    After,
    /// Between the answer's two lines: Claude Code wrote the transcript after the hook.
    Between,
    /// Never: the user interrupted the turn, or no hook ran at all.
    Never,
}

/// A Claude Code session of [`RESPONSES`] API responses the hooks read, then a last turn of
/// [`UNHOOKED_RESPONSES`] no hook saw, its lines dated a second apart from `base_ms`. Each
/// response is two streamed lines (the second carries its final output count, `100 + i`); turn
/// `t` holds `1 + t % 3` of them: tool calls (a thinking or a text line, then the call, then
/// its result; every 5th call fails), then the answer. Of every six turns, two have their
/// Stop run between the answer's lines, one is interrupted (no Stop), one is seen by no hook;
/// the hooks' last turn is a whole one (its Stop reads the transcript to its end).
fn usage_session(transcript: &Path, base_ms: i64) -> UsageSession {
    let mut steps = Vec::new();
    let mut lines = 0;
    let mut line = |steps: &mut Vec<Step>, rest: Value| {
        let at = chrono::DateTime::from_timestamp_millis(base_ms + lines * 1000)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        lines += 1;
        let mut v = json!({"sessionId": USAGE_SESSION, "cwd": "/w/usage", "timestamp": at});
        v.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        steps.push(Step::Line(v.to_string()));
    };
    let hook = |event: &str, rest: Value| {
        let mut v = json!({"session_id": USAGE_SESSION, "transcript_path": transcript,
            "hook_event_name": event});
        v.as_object_mut()
            .unwrap()
            .extend(rest.as_object().unwrap().clone());
        Step::Hook(v)
    };
    let response = |i: u64, part: u64, content: Value| {
        json!({"type": "assistant", "uuid": format!("a{i}-{part}"),
            "requestId": format!("req_{i}"),
            "message": {"id": format!("msg_{i}"), "role": "assistant",
                "model": "claude-haiku-4-5", "content": content,
                "usage": {"input_tokens": 10, "output_tokens": if part == 0 { 1 } else { 100 + i }}}})
    };
    let (mut turns, mut calls) = (Vec::new(), Vec::new());
    let (mut i, mut t) = (0, 0);
    while i < RESPONSES + UNHOOKED_RESPONSES {
        let hooked = i < RESPONSES;
        let n = match hooked {
            true => (1 + t % 3).min(RESPONSES - i),
            false => UNHOOKED_RESPONSES,
        };
        let (hooks, stop, interrupted) = match t % 6 {
            _ if !hooked => (false, Stop::Never, false),
            _ if i + n == RESPONSES => (true, Stop::After, false),
            4 => (false, Stop::Never, false),
            5 => (true, Stop::Never, true),
            1 | 3 => (true, Stop::Between, false),
            _ => (true, Stop::After, false),
        };
        let id = format!("u{t}");
        let prompt = format!("question {t}");
        line(
            &mut steps,
            json!({"type": "user", "uuid": id, "message": {"role": "user", "content": prompt}}),
        );
        if hooks {
            steps.push(hook("UserPromptSubmit", json!({"prompt": prompt})));
        }
        for k in i..i + n {
            if k + 1 < i + n {
                let call = format!("toolu_{k}");
                let first = match k % 2 {
                    0 => json!([{"type": "thinking", "thinking": format!("think {k}")}]),
                    _ => json!([{"type": "text", "text": format!("looking at f{k}")}]),
                };
                line(&mut steps, response(k, 0, first));
                let input = json!({"file_path": format!("/w/usage/f{k}")});
                line(
                    &mut steps,
                    response(
                        k,
                        1,
                        json!([{"type": "tool_use", "id": call, "name": "Read", "input": input}]),
                    ),
                );
                let tool = json!({"tool_name": "Read", "tool_input": input, "tool_use_id": call});
                if hooks {
                    steps.push(hook("PreToolUse", tool.clone()));
                }
                let failed = k % 5 == 0;
                line(
                    &mut steps,
                    json!({"type": "user", "uuid": format!("r{k}"), "message": {"role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": call,
                            "content": format!("contents of f{k}"), "is_error": failed}]}}),
                );
                if hooks {
                    let mut post = tool;
                    let event = match failed {
                        true => {
                            post["error"] = json!("no such file");
                            "PostToolUseFailure"
                        }
                        false => {
                            post["tool_response"] = json!({"content": format!("contents of f{k}")});
                            "PostToolUse"
                        }
                    };
                    steps.push(hook(event, post));
                }
                calls.push((call, if failed { "failed" } else { "succeeded" }));
                continue;
            }
            let stop_hook = hook("Stop", json!({"stop_hook_active": false}));
            let text = |text: String| json!([{"type": "text", "text": text}]);
            line(
                &mut steps,
                response(k, 0, text(format!("answer {t} begins"))),
            );
            if stop == Stop::Between {
                steps.push(stop_hook.clone());
            }
            line(&mut steps, response(k, 1, text(format!("answer {t} ends"))));
            if stop == Stop::After {
                steps.push(stop_hook);
            }
            match interrupted {
                true => line(
                    &mut steps,
                    json!({"type": "user", "uuid": format!("i{t}"), "message": {"role": "user",
                        "content": [{"type": "text", "text": "[Request interrupted by user]"}]}}),
                ),
                false => line(
                    &mut steps,
                    json!({"type": "system", "uuid": format!("d{t}"), "subtype": "turn_duration",
                        "durationMs": 1000}),
                ),
            }
        }
        turns.push(PlannedTurn {
            id,
            prompt,
            calls: n as usize - 1,
            interrupted,
        });
        i += n;
        t += 1;
    }
    UsageSession {
        steps,
        turns,
        calls,
    }
}

/// `cmstore import PATH`, asserted successful.
fn import(env: &TestEnv, path: &Path) {
    let out = env.cmd().arg("import").arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The rows of `sql` in `env`'s store, each as its columns' debug text.
fn rows(env: &TestEnv, sql: &str) -> Vec<String> {
    let conn = env.conn();
    let mut stmt = conn.prepare(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
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
}

/// The queue lines of the events of `env` that `filter` selects, in the order they were read.
fn entries(env: &TestEnv, filter: &str) -> Vec<String> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare(&format!(
            "SELECT entry FROM events WHERE {filter} ORDER BY seq"
        ))
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Asserts that `got` holds the rows `want` does, naming those only one of them holds.
fn same_rows(what: &str, got: &[String], want: &[String]) {
    let only = |x: &[String], y: &[String]| -> Vec<String> {
        x.iter().filter(|r| !y.contains(r)).cloned().collect()
    };
    assert!(
        got == want,
        "{what} (seed {SEED:#x}): {} rows where {} were wanted; not wanted: {:#?}\nmissing: \
         {:#?}",
        got.len(),
        want.len(),
        only(got, want),
        only(want, got)
    );
}

/// The usage writer's session in `env` after the chaos: its hook lines are those the same
/// hooks wrote into the `calm` store, each once; and its `usage`, `turns`, `transcript_items`
/// and `sessions` rows are those one uninterrupted run makes of the same hook lines (in the
/// order they were read) and a single import of the final `transcript`, whether the import
/// comes after the lines or before them; each turn and tool call the transcript shows once,
/// as `session` planned them.
fn same_session_as_one_uninterrupted_run(
    env: &TestEnv,
    calm: &TestEnv,
    session: &UsageSession,
    transcript: &Path,
) {
    let s = USAGE_SESSION;
    // Each hook its own line (and the turns it read, as synthetic Stops).
    let own = format!(
        "SELECT hook_type || ' ' || coalesce(tool_call_id, '') FROM events
         WHERE session_id = '{s}' AND synthetic IS NOT 1 ORDER BY 1"
    );
    let mut planned: Vec<String> = session
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Hook(input) => Some(format!(
                "Text(\"{} {}\")",
                input["hook_event_name"].as_str().unwrap(),
                input["tool_use_id"].as_str().unwrap_or_default()
            )),
            Step::Line(_) => None,
        })
        .collect();
    planned.sort();
    same_rows("the hooks' own lines", &rows(calm, &own), &planned);
    // The lines: what varies between two runs of the same hooks (ids, times) left out.
    let lines = format!(
        "SELECT hook_type, synthetic, turn_id, tool_call_id, prompt, response, model
         FROM events WHERE session_id = '{s}' ORDER BY 1, 2, 3, 4, 5, 6, 7"
    );
    same_rows("the hook lines", &rows(env, &lines), &rows(calm, &lines));
    let tables = [
        (
            "usage",
            format!(
                "SELECT message_id, request_id, session_id, agent, turn_id, subagent_id,
                        sidechain, model, ts, input_tokens, output_tokens, cache_write_tokens,
                        cache_write_1h_tokens, cache_read_tokens, service_tier, line_offset,
                        reasoning_tokens, premium_requests
                 FROM usage WHERE session_id = '{s}' ORDER BY message_id, request_id"
            ),
        ),
        (
            // An imported row's event is the synthetic line each import makes anew.
            "turns",
            format!(
                "SELECT session_id, turn_key, turn_id, ts, hook_type, prompt, response,
                        tool_call_count, synthetic, CASE WHEN imported = 0 THEN event_id END,
                        model, outcome, thinking, feedback, imported
                 FROM turns WHERE session_id = '{s}' ORDER BY turn_key"
            ),
        ),
        (
            "transcript_items",
            format!(
                "SELECT * FROM transcript_items WHERE session_id = '{s}' ORDER BY kind, item_id"
            ),
        ),
        (
            "sessions",
            format!("SELECT * FROM sessions WHERE session_id = '{s}'"),
        ),
    ];
    let hook_lines = entries(env, &format!("session_id = '{s}'"));
    // The lines, then the import.
    let lines_first = TestEnv::new();
    lines_first.append(&hook_lines);
    lines_first.ingest_once();
    // The hooks' lines alone bring every response the hooks read, with its final count.
    assert_eq!(
        lines_first.text("SELECT count(*) || ':' || sum(output_tokens) FROM usage"),
        format!(
            "{RESPONSES}:{}",
            (0..RESPONSES as i64).map(|i| 100 + i).sum::<i64>()
        ),
        "the hooks' usage (seed {SEED:#x})"
    );
    import(&lines_first, transcript);
    // The import, then the lines.
    let import_first = TestEnv::new();
    import(&import_first, transcript);
    import_first.append(&hook_lines);
    import_first.ingest_once();
    for (table, sql) in &tables {
        let want = rows(&lines_first, sql);
        same_rows(
            &format!("{table}: import first or last"),
            &rows(&import_first, sql),
            &want,
        );
        same_rows(table, &rows(env, sql), &want);
    }

    // Each turn and tool call of the transcript once, as planned.
    let turns = rows(
        env,
        &format!(
            "SELECT turn_key, prompt, tool_call_count, outcome FROM turns
             WHERE session_id = '{s}' ORDER BY turn_key"
        ),
    );
    let mut planned: Vec<String> = session
        .turns
        .iter()
        .map(|t| {
            let outcome = match t.interrupted {
                true => "Text(\"interrupted\")",
                false => "Null",
            };
            format!(
                "Text({:?})|Text({:?})|Integer({})|{outcome}",
                t.id, t.prompt, t.calls
            )
        })
        .collect();
    planned.sort();
    same_rows("the turns the transcript shows", &turns, &planned);
    let items = rows(
        env,
        &format!(
            "SELECT kind, item_id, outcome, end_ts IS NOT NULL FROM transcript_items
             WHERE session_id = '{s}' ORDER BY kind, item_id"
        ),
    );
    let mut planned: Vec<String> = session
        .calls
        .iter()
        .map(|(id, outcome)| {
            format!("Text(\"tool_call\")|Text({id:?})|Text({outcome:?})|Integer(1)")
        })
        .chain(
            session
                .turns
                .iter()
                .map(|t| format!("Text(\"turn\")|Text({:?})|Null|Integer(0)", t.id)),
        )
        .collect();
    planned.sort();
    same_rows("the items the transcript shows", &items, &planned);
    // None twice under another key.
    assert_eq!(
        env.text(&format!(
            "SELECT (SELECT count(*) || ':' || count(DISTINCT turn_id) FROM turns
                     WHERE session_id = '{s}')
                 || ' ' || (SELECT count(*) FROM sessions WHERE session_id = '{s}')
                 || ' ' || (SELECT count(*) FROM imported_files)"
        )),
        format!("{0}:{0} 1 1", session.turns.len()),
        "turns, the session and the file read, once (seed {SEED:#x})"
    );
}
