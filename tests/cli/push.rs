//! `cmstore push` into a real PostgreSQL server (issue 40): the team store holds what each
//! machine's store holds, exactly once, whatever happens to the pusher or the connection, and
//! the `none` profile sends no text.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cmstore_workload::{Options, Workload};

use crate::common::{pg_database, PgDatabase, TestEnv};

/// `lines` queue lines of a seeded workload (no broken ones), ingested; and a Gemini CLI chat
/// imported for usage.
pub fn filled(seed: u64, lines: usize) -> TestEnv {
    filled_as(seed, lines, false)
}

/// [`filled`], with five check results after the workload's lines.
pub fn filled_with_checks(seed: u64, lines: usize) -> TestEnv {
    filled_as(seed, lines, true)
}

fn filled_as(seed: u64, lines: usize, checks: bool) -> TestEnv {
    let env = TestEnv::new();
    let mut workload = Workload::new(Options {
        seed,
        sessions: 6,
        garbage_per_mille: 0,
        ..Options::default()
    });
    let mut rng = cmstore_workload::Rng::new(seed);
    let mut queue: Vec<String> = (0..lines)
        .map(|_| workload.next_call().to_queue_line(&mut rng))
        .collect();
    if checks {
        queue.extend(check_results(seed, &queue));
    }
    env.append(&queue);
    env.ingest_once();
    let chats = env.dir.path().join(format!("g{seed}/.gemini/tmp/p/chats"));
    std::fs::create_dir_all(&chats).unwrap();
    let chat = include_str!("../fixtures/gemini/chat-0.61.0.jsonl").replace(
        "619d1b70-73c5-42a0-8e14-50b8efc17598",
        &format!("gemini-session-{seed}"),
    );
    std::fs::write(chats.join("session-2026-12-01T23-29-619d1b70.jsonl"), chat).unwrap();
    env.cmd().arg("import").arg(&chats).assert().success();
    env
}

/// Five `CheckResult` lines (docs/checks.md) in the session of the first prompt of `queue`:
/// each status, one blocking with a finding.
fn check_results(seed: u64, queue: &[String]) -> Vec<String> {
    let prompt: serde_json::Value = queue
        .iter()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["hookType"] == "UserPromptSubmit")
        .expect("a prompt");
    let statuses = ["passed", "failed", "timed_out", "error", "failed"];
    let names = ["format", "security", "markdown"];
    (0..5)
        .map(|i| {
            let mut line = serde_json::json!({
                "v": 1,
                "id": format!("00000000-0000-7000-8000-{seed:04x}{i:08x}"),
                "hookType": "CheckResult",
                "timestamp": prompt["timestamp"].as_i64().unwrap() + 1000 * i as i64,
                "check": {
                    "name": names[i % 3],
                    "mode": "enforce",
                    "status": statuses[i],
                    "durationMs": 100 + 37 * i,
                    "blocked": i == 1,
                    "findings": if i == 1 {
                        serde_json::json!([{"rule": "aws-access-key", "file": "a.txt", "line": 3}])
                    } else {
                        serde_json::json!([])
                    },
                },
            });
            for key in ["sessionId", "agent", "cwd"] {
                line[key] = prompt[key].clone();
            }
            line.to_string()
        })
        .collect()
}

/// `cmstore push --url URL ARGS` in `env`: its status and stderr.
fn push(env: &TestEnv, url: &str, args: &[&str]) -> (bool, String) {
    let out = env
        .cmd()
        .args(["push", "--url", url])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

pub fn push_ok(env: &TestEnv, url: &str, args: &[&str]) -> String {
    let (ok, stderr) = push(env, url, args);
    assert!(ok, "{stderr}");
    stderr
}

/// Per table, what the local store holds and what the server holds of `machine`: row counts
/// and sums that change with any row's loss or doubling.
const FIGURES: [(&str, &str, &str); 6] = [
    ("events", "count(*)", "count(*)"),
    ("events", "sum(length(id))", "sum(length(id))"),
    ("sessions", "count(*) || ':' || sum(events) || ':' || sum(prompts) || ':' || sum(tool_uses)",
     "count(*) || ':' || sum(events) || ':' || sum(prompts) || ':' || sum(tool_uses)"),
    ("turns", "count(*) || ':' || count(prompt)", "count(*) || ':' || count(prompt)"),
    ("tool_calls", "count(*) || ':' || sum(duration_ms) || ':' || count(outcome)",
     "count(*) || ':' || sum(duration_ms) || ':' || count(outcome)"),
    ("usage", "count(*) || ':' || sum(input_tokens) || ':' || sum(output_tokens) || ':' || sum(cache_read_tokens)",
     "count(*) || ':' || sum(input_tokens) || ':' || sum(output_tokens) || ':' || sum(cache_read_tokens)"),
];

fn local_figures(env: &TestEnv) -> Vec<String> {
    let mut figures: Vec<String> = FIGURES
        .iter()
        .map(|(table, local, _)| env.text(&format!("SELECT CAST(({local}) AS TEXT) FROM {table}")))
        .collect();
    figures.push(env.text(
        "SELECT count(*) || ':' || sum(json_array_length(entry, '$.check.findings')) || ':'
                || sum(coalesce(json_extract(entry, '$.check.blocked'), 0)) || ':'
                || sum(json_extract(entry, '$.check.durationMs'))
         FROM events WHERE hook_type = 'CheckResult'",
    ));
    figures
}

fn server_figures(client: &mut postgres::Client, machine: &str) -> Vec<String> {
    FIGURES
        .iter()
        .map(|(table, _, server)| format!("SELECT ({server})::text FROM {table}"))
        .chain([
            "SELECT (count(*) || ':' || sum(findings) || ':' || sum(blocked) || ':'
                     || sum(duration_ms))::text FROM check_results"
                .to_string(),
        ])
        .map(|sql| {
            client
                .query_one(&format!("{sql} WHERE machine_id = $1"), &[&machine])
                .unwrap()
                .get::<_, Option<String>>(0)
                .unwrap_or_default()
        })
        .collect()
}

/// Each rollup the server keeps against the same figures counted from its base tables: they
/// must agree after any push, whatever happened to it.
const ROLLUPS: [(&str, &str); 10] = [
    (
        "SELECT machine_id, session_id, turns FROM rollup_session_turns",
        "SELECT machine_id, session_id, count(*) FROM turns
         WHERE hook_type IS DISTINCT FROM 'SubagentStop' GROUP BY 1, 2",
    ),
    (
        "SELECT machine_id, day, tool_name, calls, succeeded, failed, unfinished, total_ms,
                timed, max_ms, denied, refused, abandoned FROM rollup_tools_days",
        "SELECT machine_id, coalesce(team_day(ts), ''), coalesce(tool_name, ''), count(*),
                count(*) FILTER (WHERE outcome = 'succeeded'),
                count(*) FILTER (WHERE outcome = 'failed'), count(*) FILTER (WHERE outcome IS NULL),
                sum(duration_ms), count(duration_ms), max(duration_ms),
                count(*) FILTER (WHERE outcome = 'denied'),
                count(*) FILTER (WHERE outcome = 'refused'),
                count(*) FILTER (WHERE outcome = 'abandoned')
         FROM tool_calls GROUP BY 1, 2, 3",
    ),
    (
        "SELECT machine_id, day, agent, cwd, user_label, team_label, risk, decision, calls,
                first_ts, last_ts FROM rollup_gate",
        "SELECT machine_id, team_day(ts), coalesce(agent, ''), coalesce(cwd, ''),
                coalesce(user_label, ''), coalesce(team_label, ''), coalesce(risk, ''),
                coalesce(decision, ''), count(*), min(ts), max(ts)
         FROM events WHERE hook_type = 'PreToolUse' AND producer = 'cmstore'
         GROUP BY 1, 2, 3, 4, 5, 6, 7, 8",
    ),
    (
        "SELECT machine_id, day, user_label, team_label, agent, hook_type, events
         FROM v_daily_events",
        "SELECT machine_id, team_day(ts), user_label, team_label, agent, hook_type, count(*)
         FROM events GROUP BY 1, 2, 3, 4, 5, 6",
    ),
    (
        "SELECT * FROM v_tools",
        "SELECT tool_name, count(*), count(*) FILTER (WHERE outcome = 'succeeded'),
                count(*) FILTER (WHERE outcome = 'failed'), count(*) FILTER (WHERE outcome IS NULL),
                sum(duration_ms), sum(duration_ms) / nullif(count(duration_ms), 0),
                max(duration_ms), count(*) FILTER (WHERE outcome = 'denied'),
                count(*) FILTER (WHERE outcome = 'refused'),
                count(*) FILTER (WHERE outcome = 'abandoned')
         FROM tool_calls GROUP BY tool_name",
    ),
    (
        "SELECT day, machine_id, user_label, team_label, agent, responses, input_tokens,
                output_tokens, cache_write_tokens, cache_read_tokens, cost_usd, unpriced
         FROM v_daily_usage",
        "SELECT day, machine_id, user_label, team_label, agent, count(*), sum(input_tokens),
                sum(output_tokens), sum(cache_write_tokens), sum(cache_read_tokens),
                round(sum(cost_usd)::numeric, 6), count(*) FILTER (WHERE cost_usd IS NULL)
         FROM v_usage GROUP BY 1, 2, 3, 4, 5",
    ),
    (
        "SELECT machine_id, session_id, responses, input_tokens, cost_usd, unpriced,
                subagent_responses
         FROM v_usage_sessions",
        "SELECT machine_id, session_id, count(*), sum(input_tokens),
                round(sum(cost_usd)::numeric, 6), count(*) FILTER (WHERE cost_usd IS NULL),
                sum(sidechain)
         FROM v_usage GROUP BY 1, 2",
    ),
    (
        "SELECT * FROM v_usage_users",
        "SELECT user_label, team_label, count(DISTINCT machine_id),
                count(DISTINCT (machine_id, session_id)), count(*), sum(input_tokens),
                sum(output_tokens), sum(cache_write_tokens), sum(cache_read_tokens),
                round(sum(cost_usd)::numeric, 6), count(*) FILTER (WHERE cost_usd IS NULL)
         FROM v_usage GROUP BY 1, 2",
    ),
    (
        "SELECT * FROM v_usage_models",
        "SELECT coalesce(model, '?'), count(DISTINCT (machine_id, session_id)), count(*),
                sum(input_tokens), sum(output_tokens), sum(cache_write_tokens),
                sum(cache_read_tokens), round(sum(cost_usd)::numeric, 6),
                count(*) FILTER (WHERE cost_usd IS NULL)
         FROM v_usage GROUP BY 1",
    ),
    (
        "SELECT machine_id, session_id, turns, responses, cost_usd, unpriced FROM v_sessions",
        "SELECT s.machine_id, s.session_id,
                (SELECT count(*) FROM turns t WHERE t.machine_id = s.machine_id
                   AND t.session_id = s.session_id
                   AND t.hook_type IS DISTINCT FROM 'SubagentStop'),
                u.n, u.cost, u.unpriced
         FROM sessions s LEFT JOIN (
             SELECT machine_id, session_id, count(*) AS n,
                    round(sum(cost_usd)::numeric, 6) AS cost,
                    count(*) FILTER (WHERE cost_usd IS NULL) AS unpriced
             FROM v_usage GROUP BY 1, 2) u
           ON u.machine_id = s.machine_id AND u.session_id = s.session_id",
    ),
];

fn assert_rollups_agree(client: &mut postgres::Client) {
    let text_of = |client: &mut postgres::Client, sql: &str| -> String {
        let sql = format!(
            "SELECT coalesce(string_agg(r::text, '\n' ORDER BY r::text), '') FROM ({sql}) AS r"
        );
        client.query_one(&sql, &[]).unwrap().get(0)
    };
    for (rollup, base) in ROLLUPS {
        let (kept, counted) = (text_of(client, rollup), text_of(client, base));
        assert_eq!(kept, counted, "{rollup}");
        assert!(
            !kept.is_empty() || base.contains("v_usage"),
            "{rollup}: no rows"
        );
    }
}

pub fn machine_of(env: &TestEnv) -> String {
    env.text("SELECT machine_id FROM push_machine")
}

#[test]
fn push_mirrors_the_store_exactly_and_again_adds_nothing() {
    let Some(db) = pg_database() else { return };
    let env = filled_with_checks(1, 3000);
    let stderr = push_ok(&env, &db.url, &["--content", "full"]);
    assert!(stderr.contains("3005 events and"), "{stderr}");
    assert!(stderr.contains("0 events left"), "{stderr}");
    let machine = machine_of(&env);
    let before = local_figures(&env);
    assert_eq!(server_figures(&mut db.client(), &machine), before);
    assert_rollups_agree(&mut db.client());
    assert_eq!(
        db.int("SELECT count(*) FROM usage WHERE session_id = 'gemini-session-1'"),
        2
    );
    // The views read the same figures as the local ones.
    let tools_local = env.text(
        "SELECT group_concat(tool_name || '=' || calls || '/' || failed || '/' || total_ms, ',')
         FROM (SELECT * FROM v_tools ORDER BY tool_name)",
    );
    let tools_server: String = db
        .client()
        .query_one(
            "SELECT string_agg(tool_name || '=' || calls || '/' || failed || '/' || total_ms, ','
                               ORDER BY tool_name) FROM v_tools",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tools_server, tools_local);
    let cost_local: f64 = env
        .conn()
        .query_row("SELECT sum(cost_usd) FROM v_usage", [], |r| r.get(0))
        .unwrap();
    let cost_server: f64 = db
        .client()
        .query_one("SELECT sum(cost_usd)::float8 FROM v_usage", &[])
        .unwrap()
        .get(0);
    assert!(
        (cost_local - cost_server).abs() < 1e-9,
        "{cost_local} {cost_server}"
    );
    // Again: nothing new, nothing doubled.
    let stderr = push_ok(&env, &db.url, &["--content", "full"]);
    assert!(stderr.contains("0 events and 0 sessions"), "{stderr}");
    assert_eq!(server_figures(&mut db.client(), &machine), before);
    // More events: only they go, and the sessions they touch are brought up to date.
    let mut workload = Workload::new(Options {
        seed: 99,
        sessions: 2,
        garbage_per_mille: 0,
        start_ms: 1_767_300_000_000,
    });
    let mut rng = cmstore_workload::Rng::new(99);
    let more: Vec<String> = (0..500)
        .map(|_| workload.next_call().to_queue_line(&mut rng))
        .collect();
    env.append(&more);
    env.ingest_once();
    let stderr = push_ok(&env, &db.url, &["--content", "full"]);
    assert!(stderr.contains("500 events and"), "{stderr}");
    assert_eq!(
        server_figures(&mut db.client(), &machine),
        local_figures(&env)
    );
    assert_rollups_agree(&mut db.client());
    assert_eq!(db.int("SELECT count(*) FROM machines"), 1);
    let out = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let push = &status["push"][0];
    assert_eq!(push["pushed"], 3505, "{status}");
    assert_eq!(push["backlog"], 0, "{status}");
    assert!(push["last_error"].is_null(), "{status}");
}

/// Every prompt, answer and tool input the store holds, as text to look for.
fn texts(env: &TestEnv) -> Vec<String> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT prompt FROM events WHERE length(prompt) > 12
             UNION SELECT response FROM turns WHERE length(response) > 12
             UNION SELECT input FROM tool_calls WHERE length(input) > 12",
        )
        .unwrap();
    let rows = stmt.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

#[test]
fn the_none_profile_sends_no_prompt_answer_or_tool_input() {
    let Some(db) = pg_database() else { return };
    let env = filled_with_checks(2, 2000);
    let texts = texts(&env);
    assert!(texts.len() > 100, "{}", texts.len());
    push_ok(&env, &db.url, &["--content", "none"]);
    let machine = machine_of(&env);
    // Every figure goes but the turns' prompts, the check results' too (read out of lines
    // that themselves stay).
    let (mut server, mut local) = (
        server_figures(&mut db.client(), &machine),
        local_figures(&env),
    );
    let turns = FIGURES.iter().position(|f| f.0 == "turns").unwrap();
    assert!(server[turns].ends_with(":0"), "{}", server[turns]);
    server.remove(turns);
    local.remove(turns);
    assert_eq!(server, local);
    // Every text column of every table, searched for every text.
    let mut client = db.client();
    let columns = client
        .query(
            "SELECT table_name, column_name FROM information_schema.columns
             WHERE table_schema = 'public' AND data_type = 'text'
               AND table_name IN ('events', 'sessions', 'turns', 'tool_calls', 'usage',
                                  'check_results')",
            &[],
        )
        .unwrap();
    assert!(columns.len() > 30);
    let all: String = columns
        .iter()
        .map(|c| {
            let (table, column): (String, String) = (c.get(0), c.get(1));
            format!("SELECT {column} AS t FROM {table}")
        })
        .collect::<Vec<_>>()
        .join(" UNION ALL ");
    let found = client
        .query(
            &format!("SELECT t FROM ({all}) x WHERE t = ANY($1)"),
            &[&texts],
        )
        .unwrap();
    assert_eq!(
        found.len(),
        0,
        "{:?}",
        found.first().map(|r| r.get::<_, String>(0))
    );
    // The tool calls are still counted and told apart by their inputs' digests.
    let digests = db.int("SELECT count(DISTINCT input_digest) FROM tool_calls");
    let inputs = env.int("SELECT count(DISTINCT input) FROM tool_calls");
    assert_eq!(digests, inputs);
    assert_eq!(
        db.int("SELECT count(*) FROM events WHERE entry IS NOT NULL"),
        0
    );
    // The working directories are their projects' names, not paths that name the user.
    for table in ["events", "sessions", "check_results"] {
        assert_eq!(
            db.int(&format!(
                "SELECT count(*) FROM {table} WHERE cwd LIKE '%/%' OR cwd LIKE '%\\%'"
            )),
            0,
            "{table}"
        );
    }
    assert_eq!(
        db.int("SELECT count(DISTINCT cwd) FROM sessions"),
        env.int("SELECT count(DISTINCT cwd) FROM sessions")
    );
    let content: String = client
        .query_one("SELECT content FROM machines", &[])
        .unwrap()
        .get(0);
    assert_eq!(content, "none");
}

#[test]
fn two_machines_pushing_at_once_keep_their_own_rows() {
    let Some(db) = pg_database() else { return };
    let envs = [filled_with_checks(3, 4000), filled_with_checks(4, 4000)];
    std::thread::scope(|s| {
        for env in &envs {
            let url = db.url.clone();
            s.spawn(move || push_ok(env, &url, &["--batch-events", "300", "--content", "full"]));
        }
    });
    for env in &envs {
        assert_eq!(
            server_figures(&mut db.client(), &machine_of(env)),
            local_figures(env)
        );
    }
    assert_ne!(machine_of(&envs[0]), machine_of(&envs[1]));
    assert_eq!(db.int("SELECT count(*) FROM machines"), 2);
    let total = envs
        .iter()
        .map(|e| e.int("SELECT count(*) FROM events"))
        .sum::<i64>();
    assert_eq!(db.int("SELECT count(*) FROM events"), total);
    assert_rollups_agree(&mut db.client());
}

#[test]
fn a_pusher_killed_at_any_point_resumes_without_loss_or_double() {
    let Some(db) = pg_database() else { return };
    let env = filled(5, 12_000);
    let mut rng = cmstore_workload::Rng::new(5);
    let mut partial = false;
    for round in 0..6 {
        let mut child = env
            .std_cmd()
            .args([
                "push",
                "--url",
                &db.url,
                "--batch-events",
                "100",
                "--content",
                "full",
            ])
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150 + rng.below(600)));
        child.kill().unwrap();
        child.wait().unwrap();
        let pushed = events(&db);
        assert!(pushed <= 12_000, "round {round}: {pushed}");
        partial |= pushed > 0 && pushed < 12_000;
    }
    assert!(partial, "no kill fell in the middle of a push");
    push_ok(&env, &db.url, &["--content", "full"]);
    assert_eq!(
        server_figures(&mut db.client(), &machine_of(&env)),
        local_figures(&env)
    );
    assert_rollups_agree(&mut db.client());
}

/// Two writers of one machine's usage at once, by hand (not cmstore's pushes, which its
/// `machines` row serialises): the first holds its transaction open while the second writes
/// and commits, both recounting a session that had a row already. The rollups count each row
/// once (each machine's recount is serialised; without it the old row counted twice).
#[test]
fn two_writers_of_one_machine_at_once_keep_the_rollups_exact() {
    let Some(db) = pg_database() else { return };
    let env = filled(21, 100);
    push_ok(&env, &db.url, &[]);
    let insert = |id: &str| {
        format!(
            "INSERT INTO usage (machine_id, message_id, request_id, session_id, sidechain, model,
                                ts, input_tokens, output_tokens, cache_write_tokens,
                                cache_read_tokens)
             VALUES ('m-hand', '{id}', 'r', 's', 0, 'claude-sonnet-4-5', 1767225600000, 1, 10,
                     0, 100)"
        )
    };
    db.client().batch_execute(&insert("a0")).unwrap();
    let (first, second) = (insert("a1"), insert("a2"));
    let mut slow = db.client();
    let holder = std::thread::spawn(move || {
        let mut tx = slow.transaction().unwrap();
        tx.batch_execute(&first).unwrap();
        std::thread::sleep(Duration::from_millis(800));
        tx.commit().unwrap();
    });
    std::thread::sleep(Duration::from_millis(300));
    db.client().batch_execute(&second).unwrap();
    holder.join().unwrap();
    assert_eq!(
        db.int("SELECT responses FROM v_usage_sessions WHERE machine_id = 'm-hand'"),
        3
    );
    assert_rollups_agree(&mut db.client());
}

/// Events on the server (0 before the first push has made the table).
fn events(db: &PgDatabase) -> i64 {
    let mut client = db.client();
    let n = client.query_one("SELECT count(*) FROM events", &[]);
    n.map_or(0, |row| row.get::<_, i64>(0))
}

/// A TCP relay to the server that the test can cut: every connection through it is closed at
/// once when `cut` is set, as a server stopped mid-push would close them.
fn relay(server_port: u16, cut: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            if cut.load(Ordering::SeqCst) {
                continue;
            }
            let Ok(server) = TcpStream::connect(("127.0.0.1", server_port)) else {
                continue;
            };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server, client),
            ] {
                let cut = Arc::clone(&cut);
                std::thread::spawn(move || {
                    from.set_read_timeout(Some(Duration::from_millis(50)))
                        .unwrap();
                    let mut buf = [0u8; 16384];
                    loop {
                        if cut.load(Ordering::SeqCst) {
                            let _ = from.shutdown(std::net::Shutdown::Both);
                            let _ = to.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                        match from.read(&mut buf) {
                            Ok(0) => return,
                            Ok(n) => {
                                if to.write_all(&buf[..n]).is_err() {
                                    return;
                                }
                            }
                            Err(e)
                                if e.kind() == std::io::ErrorKind::WouldBlock
                                    || e.kind() == std::io::ErrorKind::TimedOut => {}
                            Err(_) => return,
                        }
                    }
                });
            }
        }
    });
    port
}

#[test]
fn a_server_gone_mid_push_is_waited_for_and_nothing_is_lost_or_doubled() {
    let Some(db) = pg_database() else { return };
    let env = filled(6, 8000);
    let url: url_parts::Parts = url_parts::parse(&db.url);
    let cut = Arc::new(AtomicBool::new(false));
    let port = relay(url.port, Arc::clone(&cut));
    let through = url.with_port(port);
    let child = env
        .std_cmd()
        .args([
            "push",
            "--url",
            &through,
            "--batch-events",
            "100",
            "--give-up-after",
            "60",
            "--content",
            "full",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Cut once some batches are in, then bring the server back.
    let started = Instant::now();
    while events(&db) < 1000 && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    cut.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1500));
    let during = events(&db);
    assert!(
        during < 8000,
        "the cut came too late to test anything: {during}"
    );
    cut.store(false, Ordering::SeqCst);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("trying again in"), "{stderr}");
    assert_eq!(
        server_figures(&mut db.client(), &machine_of(&env)),
        local_figures(&env)
    );
}

#[test]
fn a_server_that_refuses_the_login_is_an_error_at_once_and_the_password_is_never_printed() {
    let Some(db) = pg_database() else { return };
    let env = filled(7, 50);
    let wrong = db.url.replacen(":cmstore_test@", ":not-the-password@", 1);
    let started = Instant::now();
    let (ok, stderr) = push(&env, &wrong, &[]);
    assert!(!ok);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "not retried for long"
    );
    assert!(
        stderr.contains("cannot connect to postgres://cmstore_test@127.0.0.1"),
        "{stderr}"
    );
    assert!(
        stderr.contains("password authentication failed"),
        "{stderr}"
    );
    assert!(!stderr.contains("not-the-password"), "{stderr}");
    assert_eq!(
        env.int("SELECT count(*) FROM push_cursors WHERE seq > 0"),
        0
    );
    // `status` says so, and what the server lacks.
    let out = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let push = &status["push"][0];
    assert_eq!(push["backlog"], 50, "{status}");
    assert_eq!(push["pushed"], 0, "{status}");
    let error = push["last_error"].as_str().unwrap_or_default();
    assert!(error.contains("password authentication failed"), "{status}");
}

#[test]
fn push_without_a_server_or_a_database_says_what_to_do() {
    let env = TestEnv::new();
    let out = env
        .cmd()
        .args(["push"])
        .env_remove("PGHOST")
        .env_remove("PGDATABASE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no database at"), "{stderr}");
    env.ingest_once();
    let out = env
        .cmd()
        .args(["push"])
        .env_remove("PGHOST")
        .env_remove("PGDATABASE")
        .env_remove("PGSERVICE")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no team store named: give --url"),
        "{stderr}"
    );
    assert!(Path::new(&env.db()).exists());
}

/// The pieces of a test URL the relay needs.
mod url_parts {
    pub struct Parts {
        before: String,
        pub port: u16,
        after: String,
    }

    impl Parts {
        pub fn with_port(&self, port: u16) -> String {
            format!("{}:{port}{}", self.before, self.after)
        }
    }

    /// `postgres://u:p@127.0.0.1:5432/db?x` into its parts around the port.
    pub fn parse(url: &str) -> Parts {
        let at = url.find("@127.0.0.1:").expect("a loopback test URL") + "@127.0.0.1".len();
        let rest = &url[at + 1..];
        let end = rest.find('/').unwrap();
        Parts {
            before: url[..at].to_string(),
            port: rest[..end].parse().unwrap(),
            after: rest[end..].to_string(),
        }
    }
}

/// A following `cmstore ingest` with `[push]` in cmstore.toml pushes what it ingests, the
/// sessions' rows kept up to date as they grow, until it is stopped.
#[cfg(unix)]
#[test]
fn a_following_ingest_pushes_what_it_ingests() {
    let Some(db) = pg_database() else { return };
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        format!(
            "[push]\nurl = \"{}\"\ncontent = \"full\"\nuser = \"ana\"\nteam = \"web\"\n",
            db.url
        ),
    )
    .unwrap();
    let mut ingest = env.spawn_follow(&["--poll-ms", "100"]);
    let mut workload = Workload::new(Options {
        seed: 8,
        sessions: 3,
        garbage_per_mille: 0,
        ..Options::default()
    });
    let mut rng = cmstore_workload::Rng::new(8);
    for _ in 0..4 {
        let lines: Vec<String> = (0..300)
            .map(|_| workload.next_call().to_queue_line(&mut rng))
            .collect();
        env.append(&lines);
        std::thread::sleep(Duration::from_millis(300));
    }
    let started = Instant::now();
    while events(&db) < 1200 && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(100));
    }
    // The last sessions' rows follow their events within a poll.
    let machine = machine_of(&env);
    let started = Instant::now();
    while server_figures(&mut db.client(), &machine) != local_figures(&env)
        && started.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    crate::common::terminate(&ingest);
    assert!(crate::common::wait_timeout(&mut ingest, Duration::from_secs(30)).is_some());
    let mut stderr = String::new();
    ingest
        .stderr
        .as_mut()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("cmstore ingest: pushing to postgres://cmstore_test@127.0.0.1"),
        "{stderr}"
    );
    assert!(stderr.contains("0 events left to push"), "{stderr}");
    assert_eq!(
        server_figures(&mut db.client(), &machine),
        local_figures(&env),
        "{stderr}"
    );
    let labels: (String, String) = {
        let row = db
            .client()
            .query_one("SELECT min(user_label), min(team_label) FROM events", &[])
            .unwrap();
        (row.get(0), row.get(1))
    };
    assert_eq!(labels, ("ana".to_string(), "web".to_string()));
}

/// Once prune has deleted the newest events (every event older than the retention), the next
/// ones get the same seqs again; the cursor comes back with them, so none is skipped.
#[test]
fn events_after_a_prune_that_emptied_the_store_are_pushed() {
    let Some(db) = pg_database() else { return };
    let env = filled(9, 300);
    push_ok(&env, &db.url, &[]);
    assert_eq!(events(&db), 300);
    env.rw().execute("DELETE FROM events", []).unwrap();
    let mut workload = Workload::new(Options {
        seed: 10,
        sessions: 2,
        garbage_per_mille: 0,
        start_ms: 1_767_400_000_000,
    });
    let mut rng = cmstore_workload::Rng::new(10);
    let more: Vec<String> = (0..50)
        .map(|_| workload.next_call().to_queue_line(&mut rng))
        .collect();
    env.append(&more);
    env.ingest_once();
    assert!(
        env.int("SELECT max(seq) FROM events") <= 300,
        "the seqs again"
    );
    let stderr = push_ok(&env, &db.url, &[]);
    assert!(stderr.contains("50 events and"), "{stderr}");
    assert_eq!(events(&db), 350, "the server keeps what prune deleted here");
}

/// TLS is verified: the test server's own certificate (Debian's, for `localhost`) is refused
/// until `ca_file` names it, and then the push goes through TLS (`sslmode=require`).
#[test]
fn tls_is_verified_against_the_roots_and_ca_file() {
    let Some(db) = pg_database() else { return };
    let mut client = db.client();
    let ssl: String = client.query_one("SHOW ssl", &[]).unwrap().get(0);
    let cert: String = client.query_one("SHOW ssl_cert_file", &[]).unwrap().get(0);
    let Ok(pem) = std::fs::read(&cert).map(|_| cert.clone()) else {
        crate::common::skipped(&format!("the server's certificate {cert} is not readable"));
        return;
    };
    if ssl != "on" {
        crate::common::skipped("the test server does not offer TLS");
        return;
    }
    let env = filled(11, 100);
    let url = db
        .url
        .replacen("@127.0.0.1:", "@localhost:", 1)
        .replace("sslmode=disable", "sslmode=require");
    let (ok, stderr) = push(&env, &url, &["--give-up-after", "1"]);
    assert!(!ok);
    assert!(stderr.contains("invalid peer certificate"), "{stderr}");
    assert!(stderr.contains("name its authority in ca_file"), "{stderr}");
    std::fs::write(
        env.home().join("cmstore.toml"),
        format!("[push]\nurl = \"{url}\"\nca_file = \"{pem}\"\n"),
    )
    .unwrap();
    let out = env.cmd().arg("push").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("100 events"), "{stderr}");
    assert_eq!(events(&db), 100);
}

/// The password can stay out of cmstore.toml and the command line: the password file libpq
/// reads (`~/.pgpass`, private), as psql would use it.
#[cfg(unix)]
#[test]
fn the_password_comes_from_the_password_file() {
    use std::os::unix::fs::PermissionsExt;
    let Some(db) = pg_database() else { return };
    let env = filled(12, 100);
    let without = db.url.replacen(":cmstore_test@", "@", 1);
    let (ok, stderr) = push(&env, &without, &["--give-up-after", "1"]);
    assert!(!ok, "no password anywhere: {stderr}");
    std::fs::create_dir_all(env.user_home()).unwrap();
    let pgpass = env.user_home().join(".pgpass");
    std::fs::write(
        &pgpass,
        "# the test server\n127.0.0.1:*:*:cmstore_test:cmstore_test\n",
    )
    .unwrap();
    std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
    push_ok(&env, &without, &[]);
    assert_eq!(events(&db), 100);
}

/// A connection service (`PGSERVICE`, `~/.pg_service.conf`) names the server as libpq's
/// tools take it: `push` with no URL, and `summarize --store` with only `?service=`.
#[test]
fn a_connection_service_names_the_team_store() {
    let Some(db) = pg_database() else { return };
    let env = filled(20, 100);
    let parts = url_parts::parse(&db.url);
    let name = db
        .url
        .rsplit('/')
        .next()
        .unwrap()
        .split('?')
        .next()
        .unwrap();
    std::fs::create_dir_all(env.user_home()).unwrap();
    std::fs::write(
        env.user_home().join(".pg_service.conf"),
        format!(
            "# the test server\n[team]\nhost=127.0.0.1\nport={}\ndbname={name}\n\
             user=cmstore_test\npassword=cmstore_test\nsslmode=disable\n",
            parts.port
        ),
    )
    .unwrap();
    let out = env
        .cmd()
        .env("PGSERVICE", "team")
        .args(["push"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(&format!("/{name} ")), "{stderr}");
    assert_eq!(events(&db), 100);
    let out = env
        .cmd()
        .args([
            "summarize",
            "--store",
            "postgres:///?service=team",
            "--by",
            "machine",
        ])
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["events"], 100, "{rows}");
}

/// `cmstore query --store` runs read-only SQL on the team store: the same figures as the
/// local store's, in every format; a write, a second statement or a transaction's end is
/// refused, and the server is as it was.
#[test]
fn query_on_the_team_store_reads_and_never_writes() {
    let Some(db) = pg_database() else { return };
    let env = filled(13, 800);
    push_ok(&env, &db.url, &["--content", "full"]);
    let query = |args: &[&str]| {
        let out = env
            .cmd()
            .args(["query", "--store", &db.url])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, stdout, stderr) = query(&[
        "--format",
        "json",
        "SELECT count(*) AS events, sum(length(id)) AS ms, $1::text AS label \
         FROM events WHERE ts >= $2",
        "--param",
        "1=it's",
        "--param",
        "2=0",
    ]);
    assert!(ok, "{stderr}");
    let rows: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(rows[0]["events"], env.int("SELECT count(*) FROM events"));
    assert_eq!(rows[0]["ms"], env.int("SELECT sum(length(id)) FROM events"));
    assert_eq!(rows[0]["label"], "it's");
    let (ok, stdout, _) = query(&[
        "--format",
        "tsv",
        "SELECT 2.5::numeric AS r, true AS b -- a note",
    ]);
    assert!(ok);
    assert_eq!(stdout, "r\tb\n2.5\t1\n");
    for write in [
        "DELETE FROM events",
        "SELECT 1; DELETE FROM events",
        "COMMIT",
        "CREATE TABLE t (x int)",
        "WITH d AS (DELETE FROM events RETURNING 1) SELECT count(*) FROM d",
    ] {
        let (ok, _, stderr) = query(&[write]);
        assert!(!ok, "{write} ran");
        assert!(stderr.starts_with("cmstore: "), "{write}: {stderr}");
    }
    assert_eq!(events(&db), 800);
    let (ok, _, stderr) = query(&["SELECT $1::int", "--param", "name=3"]);
    assert!(!ok);
    assert!(stderr.contains("parameters are $1, $2"), "{stderr}");
}

/// Copilot CLI's premium requests (issue 36) reach the team store with each response: the
/// server's sum and its `v_premium_requests` equal the local ones, and a push again adds
/// nothing. The event log is the 1.0.102 fixture, each response made to cost 0.33 (a light
/// model's multiplier) instead of the 0 of the key the e2e run used.
#[test]
fn premium_requests_reach_the_team_store_with_their_responses() {
    let Some(db) = pg_database() else { return };
    let env = TestEnv::new();
    let log = env.dir.path().join("c/session-state/93aa0f57/events.jsonl");
    std::fs::create_dir_all(log.parent().unwrap()).unwrap();
    let events = include_str!("../fixtures/payloads/copilot-1.0.102-events.jsonl");
    std::fs::write(&log, events.replace("\"cost\":0.0,", "\"cost\":0.33,")).unwrap();
    env.cmd()
        .arg("import")
        .arg(log.parent().unwrap())
        .assert()
        .success();
    let local = env.text(
        "SELECT count(*) || ':' || CAST(round(total(premium_requests) * 100) AS INTEGER) \
         FROM usage WHERE premium_requests > 0",
    );
    let responses = events
        .lines()
        .filter(|l| l.contains("\"type\":\"session.usage_record\""))
        .count();
    assert_eq!(
        local,
        format!("{responses}:{}", responses * 33),
        "each at 0.33"
    );
    push_ok(&env, &db.url, &[]);
    let server = |sql: &str| -> String { db.client().query_one(sql, &[]).unwrap().get(0) };
    let figures = "SELECT (count(*) || ':' || round(sum(premium_requests) * 100)::bigint)::text \
                   FROM usage WHERE premium_requests > 0";
    assert_eq!(server(figures), local);
    assert_eq!(
        server(
            "SELECT (round(sum(premium_requests) * 100)::bigint || '/' || sum(responses))::text \
             FROM v_premium_requests"
        ),
        env.text(
            "SELECT CAST(round(sum(premium_requests) * 100) AS INTEGER) || '/' || sum(responses) \
             FROM v_premium_requests"
        )
    );
    let again = push_ok(&env, &db.url, &[]);
    assert!(again.contains("0 events and 0 sessions"), "{again}");
    assert_eq!(server(figures), local, "again: nothing added");

    // `summarize --by model --store` has each model's premium requests, as the local one does,
    // in every window (the team's are whole UTC days), and shows the column on a table.
    let by_model = |args: &[&str]| -> Vec<(String, String)> {
        let mut rows: Vec<(String, String)> = crate::common::json_rows(&env, args)
            .iter()
            .map(|r| (r["model"].to_string(), r["premium_requests"].to_string()))
            .collect();
        rows.sort();
        rows
    };
    let local_models = by_model(&["summarize", "--by", "model"]);
    assert!(
        local_models.iter().any(|(_, p)| p != "null"),
        "{local_models:?}"
    );
    assert_eq!(
        by_model(&["summarize", "--by", "model", "--store", &db.url]),
        local_models
    );
    let machine = machine_of(&env);
    for window in [
        vec!["--since", "2020-01-01", "--until", "2100-01-01"],
        vec!["--machine", machine.as_str(), "--agent", "copilot"],
    ] {
        let mut args = vec!["summarize", "--by", "model", "--store", db.url.as_str()];
        args.extend(window.iter().copied());
        assert_eq!(by_model(&args), local_models, "{window:?}");
    }
    let mut args = vec!["summarize", "--by", "model", "--store", db.url.as_str()];
    args.extend(["--since", "2100-01-01"]);
    assert!(by_model(&args).is_empty());
    let table =
        crate::common::run_at_100(&env, &["summarize", "--by", "model", "--store", &db.url]);
    assert!(table.lines().next().unwrap().contains("premium"), "{table}");
}

/// A newer cmstore may have moved the team schema on (its migrations only add): this one
/// keeps pushing into it, and says the schema's version.
#[test]
fn an_older_cmstore_keeps_pushing_into_a_newer_schema() {
    let Some(db) = pg_database() else { return };
    let env = filled(14, 200);
    push_ok(&env, &db.url, &[]);
    db.client()
        .batch_execute(
            "ALTER TABLE events ADD COLUMN from_the_future text;
             CREATE TABLE future_rows (x int);
             INSERT INTO team_schema (version, name, applied_at) VALUES (12, '0012_future', 0);",
        )
        .unwrap();
    let more = filled(15, 300);
    let stderr = push_ok(&more, &db.url, &[]);
    assert!(stderr.contains("300 events"), "{stderr}");
    assert!(stderr.contains("team schema 12"), "{stderr}");
    assert_eq!(events(&db), 500);
    assert_rollups_agree(&mut db.client());
    assert_eq!(
        db.int("SELECT count(*) FROM team_schema"),
        12,
        "nothing ran again"
    );
}

/// Two outages, each shorter than `--give-up-after` but together longer, with progress
/// between them: a connection that moved the push on counts its failures afresh, so the
/// push goes on to the end rather than giving up on the second.
#[test]
fn a_push_that_progresses_between_outages_is_not_given_up() {
    let Some(db) = pg_database() else { return };
    let env = filled(16, 20_000);
    let url: url_parts::Parts = url_parts::parse(&db.url);
    let cut = Arc::new(AtomicBool::new(false));
    let port = relay(url.port, Arc::clone(&cut));
    let through = url.with_port(port);
    let child = env
        .std_cmd()
        .args(["push", "--url", &through, "--batch-events", "100"])
        .args(["--give-up-after", "5", "--content", "full"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut outages = 0;
    for at in [1_000, 4_000] {
        while events(&db) < at && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(10));
        }
        if events(&db) >= 20_000 {
            break;
        }
        cut.store(true, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(2_000));
        cut.store(false, Ordering::SeqCst);
        outages += 1;
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        outages, 2,
        "the push ended before its second outage: {stderr}"
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        server_figures(&mut db.client(), &machine_of(&env)),
        local_figures(&env)
    );
}

/// A server on the first team schema, with rows in it, is brought to the rollups by the next
/// push: the migration counts what the tables hold, and the rollups then follow every write,
/// whoever makes it (a person deleting a machine's rows with psql, a TRUNCATE).
#[test]
fn the_rollups_count_what_a_server_held_and_follow_every_write() {
    let Some(old) = pg_database() else { return };
    let Some(db) = pg_database() else { return };
    let first = filled_with_checks(17, 2000);
    push_ok(&first, &old.url, &["--content", "full"]);
    let mut to = db.client();
    to.batch_execute(include_str!("../../migrations/team/0001_team_tables.sql"))
        .unwrap();
    to.batch_execute(
        "CREATE TABLE team_schema (version bigint PRIMARY KEY, name text NOT NULL,
                                   applied_at bigint NOT NULL);
         INSERT INTO team_schema VALUES (1, '0001_team_tables', 0);",
    )
    .unwrap();
    let mut from = old.client();
    for table in [
        "machines",
        "events",
        "sessions",
        "turns",
        "tool_calls",
        "usage",
        "prices",
    ] {
        // The columns schema 1 has (later migrations add some).
        let columns: String = to
            .query_one(
                "SELECT string_agg(column_name, ', ' ORDER BY ordinal_position)
                 FROM information_schema.columns WHERE table_name = $1",
                &[&table],
            )
            .unwrap()
            .get(0);
        let mut rows = Vec::new();
        from.copy_out(&format!("COPY (SELECT {columns} FROM {table}) TO STDOUT"))
            .unwrap()
            .read_to_end(&mut rows)
            .unwrap();
        let mut writer = to
            .copy_in(&format!("COPY {table} ({columns}) FROM STDIN"))
            .unwrap();
        writer.write_all(&rows).unwrap();
        writer.finish().unwrap();
    }
    // Lines PostgreSQL does not take as JSON (one a redaction pattern cut short, one with a
    // \u0000 jsonb refuses) stop neither the migration nor the counting of the others.
    to.batch_execute(
        r#"INSERT INTO events (machine_id, id, seq, ts, hook_type, entry) VALUES
             ('m-broken', 'b1', 1, 1767225600000, 'CheckResult',
              '{"hookType":"CheckResult","check":{"name":"format","output":"token=[REDACTED]'),
             ('m-broken', 'b2', 2, 1767225600001, 'CheckResult',
              '{"hookType":"CheckResult","check":{"name":"format","output":"a\u0000b"}}');"#,
    )
    .unwrap();
    let second = filled_with_checks(18, 1000);
    push_ok(&second, &db.url, &["--content", "full"]);
    assert_eq!(db.int("SELECT count(*) FROM team_schema"), 11);
    assert_eq!(
        db.int("SELECT sum(events)::bigint FROM v_daily_events"),
        3012
    );
    // The check results of the first machine's events, which the copy brought without them,
    // counted from their lines by the migration; the second's pushed.
    assert_eq!(db.int("SELECT count(*) FROM check_results"), 10);
    to.execute("DELETE FROM events WHERE machine_id = 'm-broken'", &[])
        .unwrap();
    assert_rollups_agree(&mut db.client());
    let gone = machine_of(&first);
    let changed = [
        "DELETE FROM events WHERE machine_id = $1 AND seq % 3 = 0",
        "DELETE FROM tool_calls WHERE machine_id = $1 AND session_id IN (
             SELECT session_id FROM tool_calls WHERE machine_id = $1
             GROUP BY 1 ORDER BY 1 LIMIT 2)",
        "UPDATE tool_calls SET duration_ms = duration_ms + 1, tool_name = 'Renamed'
         WHERE machine_id = $1 AND tool_name = 'Bash'",
        "DELETE FROM usage WHERE machine_id = $1",
        "UPDATE events SET risk = 'renamed-rule', decision = 'allow'
         WHERE machine_id = $1 AND hook_type = 'PreToolUse' AND seq % 5 = 1",
    ];
    for sql in changed {
        assert!(to.execute(sql, &[&gone]).unwrap() > 0, "{sql}");
    }
    assert_rollups_agree(&mut db.client());
    to.batch_execute("TRUNCATE events, tool_calls, usage")
        .unwrap();
    assert_eq!(db.int("SELECT count(*) FROM rollup_events"), 0);
    assert_eq!(db.int("SELECT count(*) FROM rollup_tools"), 0);
    assert_eq!(db.int("SELECT count(*) FROM rollup_usage"), 0);
    assert_eq!(db.int("SELECT count(*) FROM rollup_usage_days"), 0);
    assert_eq!(db.int("SELECT count(*) FROM rollup_session_models"), 0);
    assert_eq!(db.int("SELECT count(*) FROM rollup_gate"), 0);
}

/// The server itself stopped mid-push (as a crash: `pg_ctl stop -m immediate`) and started
/// again: the push waits for it and ends exact, nothing lost or doubled, the rollups right.
#[cfg(unix)]
#[test]
fn a_server_stopped_and_started_again_mid_push_loses_and_doubles_nothing() {
    let Some(cluster) = crate::common::PgCluster::start() else {
        return;
    };
    let env = filled_with_checks(19, 20_000);
    let url = cluster.url();
    let child = env
        .std_cmd()
        .args([
            "push",
            "--url",
            &url,
            "--batch-events",
            "200",
            "--give-up-after",
            "60",
            "--content",
            "full",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped as soon as some events are on it, long before all.
    let started = Instant::now();
    let pushed_before = loop {
        let n = cluster
            .client()
            .query_one("SELECT count(*) FROM events", &[])
            .map_or(0, |r| r.get::<_, i64>(0));
        if n > 0 {
            break n;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "nothing pushed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    cluster.stop_server();
    std::thread::sleep(Duration::from_millis(1500));
    cluster.start_server();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        pushed_before < 30_005,
        "{pushed_before}: the push had ended"
    );
    assert!(stderr.contains("trying again in"), "{stderr}");
    assert_eq!(
        server_figures(&mut cluster.client(), &machine_of(&env)),
        local_figures(&env)
    );
    assert_rollups_agree(&mut cluster.client());
}

/// `cmstore verify --store URL ARGS`: its exit code and stdout.
fn verify_team(env: &TestEnv, url: &str, args: &[&str]) -> (i32, String) {
    let out = env
        .cmd()
        .args(["verify", "--store", url])
        .args(args)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap() + &String::from_utf8_lossy(&out.stderr),
    )
}

/// Issue 39: each machine's chain goes to the team store with its events (team schema 0008),
/// and `verify --store` checks the server's rows against it: every row of a `full` machine by
/// its digest, of a `none` one by its presence and time; an edit, a delete and an insert made
/// on the server are named; a machine's local head is found in its chain there.
#[test]
fn verify_on_the_team_store_checks_each_machines_rows_against_its_chain() {
    let Some(db) = pg_database() else { return };
    // More events than a chunk of the portal the rows are read through (2000).
    let full = filled(11, 2600);
    let none = filled(12, 400);
    push_ok(&full, &db.url, &["--content", "full"]);
    push_ok(&none, &db.url, &["--content", "none"]);
    let (a, b) = (machine_of(&full), machine_of(&none));
    let local_rows = full.int("SELECT count(*) FROM events");
    assert_eq!(
        db.int(&format!(
            "SELECT count(*) FROM chain WHERE machine_id = '{a}'"
        )),
        full.int("SELECT count(*) FROM chain"),
        "every record pushed"
    );
    let (code, text) = verify_team(&full, &db.url, &["--json"]);
    assert_eq!(code, 0, "{text}");
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let of = |m: &str| {
        report["machines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["machine"] == m)
            .unwrap()
            .clone()
    };
    assert_eq!(of(&a)["rows"], local_rows, "{report}");
    assert_eq!(
        (of(&a)["by_presence"].as_i64(), of(&a)["problems"].as_i64()),
        (Some(0), Some(0))
    );
    assert_eq!(of(&b)["rows"], 0, "{report}");
    assert_eq!(
        of(&b)["by_presence"],
        none.int("SELECT count(*) FROM events")
    );
    // The machine's head, kept on the machine, is in its chain on the server.
    let head = full
        .cmd()
        .args(["verify", "--head"])
        .output()
        .unwrap()
        .stdout;
    let head = String::from_utf8(head).unwrap().trim().to_string();
    let (code, text) = verify_team(&full, &db.url, &["--machine", &a, "--expect", &head]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("The head {head} is in the chain of machine {a}.")),
        "{text}"
    );
    assert!(
        text.contains("  verified ")
            && text.contains(" chain records: none altered, removed or inserted"),
        "{text}"
    );

    // On the server: a prompt edited, a row deleted, a row forged.
    let mut client = db.client();
    client
        .batch_execute(&format!(
            "UPDATE events SET entry = replace(entry, '\"hookType\"', '\"hookType\" ')
               WHERE machine_id = '{a}' AND seq = 5;
             DELETE FROM events WHERE machine_id = '{a}' AND seq = 9;
             INSERT INTO events (machine_id, id, seq, ts) VALUES ('{a}', 'forged', 999999, 1);"
        ))
        .unwrap();
    let (code, text) = verify_team(&full, &db.url, &["--machine", &a]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("  3 changes found ("), "{text}");
    assert!(
        text.contains("    row 5 (") && text.contains(") was altered"),
        "{text}"
    );
    assert!(text.contains("    row 9 (of "), "{text}");
    assert!(
        text.contains(
            "    row 999999 (forged) is listed by no record on the server: inserted there"
        ),
        "{text}"
    );
    // The machine that was not touched still checks.
    let (code, text) = verify_team(&none, &db.url, &["--machine", &b]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("by their presence and time only"), "{text}");
    // The machine's first records deleted on the server (no prune of its anchors them): the
    // chain no longer starts where a chain starts.
    client
        .batch_execute(&format!(
            "DELETE FROM chain WHERE machine_id = '{a}' AND id = 1"
        ))
        .unwrap();
    let (code, text) = verify_team(&full, &db.url, &["--machine", &a]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("chain record 2 does not follow from the one before it"),
        "{text}"
    );
    // A chain record edited on the server: its link breaks.
    client
        .batch_execute(&format!(
            "UPDATE chain SET body = md5(body) WHERE machine_id = '{b}' AND id = 1"
        ))
        .unwrap();
    let (code, text) = verify_team(&none, &db.url, &["--machine", &b]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("chain record 1 does not follow from the one before it"),
        "{text}"
    );
}

/// `n` prompts of one session dated from `ts` on, for the tests of verify on the team store.
fn prompts_at(first: usize, n: usize, ts: i64) -> Vec<String> {
    (first..first + n)
        .map(|i| {
            let mut e = crate::common::entry("UserPromptSubmit", "s-verify");
            e.timestamp = ts + i as i64;
            e.prompt = Some(format!(
                "prompt {i} with key sk-ant-api03-{}",
                "x".repeat(40)
            ));
            e.to_line()
        })
        .collect()
}

/// Issue 39: a machine's prune on its side does not read as tampering on the server. Rows it
/// pruned before it pushed them are counted pruned (its pushed prune says the cutoff); its
/// chain records deleted before they were pushed leave a gap the prune's anchor bridges. And
/// each row is judged by the profile it was pushed under: the rows of a `redacted` push stay
/// checked as such after the machine pushes `full`.
#[test]
fn verify_on_the_team_store_follows_the_machines_prunes_and_each_rows_profile() {
    let Some(db) = pg_database() else { return };
    let env = TestEnv::new();
    let (now, day) = (crate::common::now_ms(), 86_400_000);
    env.append(&prompts_at(0, 4, now - 30 * day));
    env.ingest_once();
    push_ok(&env, &db.url, &["--content", "redacted"]);
    // Pushed nothing of these before the prune takes them away: a record of old rows only
    // (deleted with them), then one of two old rows and five new ones (kept, listing all).
    env.append(&prompts_at(4, 3, now - 29 * day));
    env.ingest_once();
    let mut mixed = prompts_at(7, 2, now - 28 * day);
    mixed.extend(prompts_at(9, 5, now - 60_000));
    env.append(&mixed);
    env.ingest_once();
    env.cmd().args(["prune", "--days", "7"]).assert().success();
    assert_eq!(env.int("SELECT count(*) FROM events"), 5);
    push_ok(&env, &db.url, &["--content", "full"]);
    let machine = machine_of(&env);
    let (code, text) = verify_team(&env, &db.url, &["--machine", &machine, "--json"]);
    assert_eq!(code, 0, "{text}");
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let m = &report["machines"][0];
    assert_eq!(m["pruned"], 2, "{m}");
    assert_eq!(m["problems"], 0, "{m}");
    // The four rows of the redacted push (their keys marked) by presence; the five full ones
    // by their digest.
    assert_eq!(
        (m["by_presence"].as_i64(), m["rows"].as_i64()),
        (Some(4), Some(5)),
        "{m}"
    );
    // A redacted row rewritten without redaction's mark is an edit.
    db.client()
        .batch_execute(&format!(
            "UPDATE events SET entry = '{{\"prompt\":\"something else\"}}'
             WHERE machine_id = '{machine}' AND seq = 2"
        ))
        .unwrap();
    let (code, text) = verify_team(&env, &db.url, &["--machine", &machine]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("    row 2 (") && text.contains(") was altered"),
        "{text}"
    );
}
