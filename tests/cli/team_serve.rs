//! `cmstore serve --store postgres://…` (issue 40): the dashboard on a team store gives each
//! endpoint's figures as the machines' own dashboards add up, per user and per machine too,
//! keeps its token, Host and Origin checks, and refuses every write through its SQL page.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::common::{capture, pg_database, TestEnv};
use crate::push::{filled_with_checks, machine_of, push_ok};
use crate::serve::Served;

/// A filled store whose pushes carry `user`, with calls the gate flagged (the workload's
/// lines are not the gate's): a safe one, two risky ones, one of them denied.
fn labelled(seed: u64, lines: usize, user: &str) -> TestEnv {
    let env = filled_with_checks(seed, lines);
    let session = format!("gate-{seed}");
    for (command, mode) in [
        ("ls", "audit"),
        ("rm -rf /", "audit"),
        ("rm -rf ~", "enforce"),
    ] {
        std::fs::write(
            env.home().join("cmstore.toml"),
            format!("mode = \"{mode}\"\n"),
        )
        .unwrap();
        let payload = serde_json::json!({"session_id": session, "hook_event_name": "PreToolUse",
            "cwd": "/work/app", "tool_name": "Bash", "tool_input": {"command": command}});
        capture(&env, payload.to_string(), &[]);
    }
    env.ingest_once();
    std::fs::write(
        env.home().join("cmstore.toml"),
        format!("[push]\nuser = \"{user}\"\nteam = \"web\"\n"),
    )
    .unwrap();
    env
}

/// `name`'s figure in each of `values`, summed.
fn sum(values: &[&Value], name: &str) -> i64 {
    values.iter().map(|v| v[name].as_i64().unwrap_or(0)).sum()
}

/// Per tool: calls, succeeded, failed, denied, unfinished, summed over `lists`.
fn tools_of(lists: &[&Value]) -> BTreeMap<String, [i64; 5]> {
    let mut out: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    for list in lists {
        for t in list.as_array().unwrap() {
            let row = out
                .entry(t["tool_name"].as_str().unwrap_or("?").to_string())
                .or_default();
            for (i, k) in ["calls", "succeeded", "failed", "denied", "unfinished"]
                .iter()
                .enumerate()
            {
                row[i] += t[*k].as_i64().unwrap_or(0);
            }
        }
    }
    out
}

/// The parts of a story the team store holds as the machine does (a long input's whole text
/// stays on the machine).
fn comparable(mut story: Value) -> Value {
    for item in story["items"].as_array_mut().unwrap() {
        item.as_object_mut().unwrap().remove("input");
    }
    for key in ["machine_id", "user_label"] {
        story.as_object_mut().unwrap().remove(key);
    }
    story
}

#[test]
fn the_team_dashboard_adds_up_the_machines_own() {
    let Some(db) = pg_database() else { return };
    let ana = labelled(51, 1200, "ana");
    let bo = labelled(52, 800, "bo");
    push_ok(&ana, &db.url, &["--content", "full"]);
    push_ok(&bo, &db.url, &["--content", "none"]);
    let local_ana = Served::start(&ana);
    let local_bo = Served::start(&bo);
    let team = Served::start_on(&ana, &[], &["--store", &db.url]);
    let locals = [&local_ana, &local_bo];
    let each = |path: &str| -> Vec<Value> { locals.iter().map(|s| s.json(path)).collect() };

    // The overview: every total is the machines' totals added up.
    let overview = team.json("/api/overview?since=");
    let own = each("/api/overview?since=");
    let own_totals: Vec<&Value> = own.iter().map(|o| &o["totals"]).collect();
    for name in [
        "events",
        "sessions",
        "prompts",
        "tool_uses",
        "tool_failures",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
        "unpriced",
    ] {
        assert_eq!(
            overview["totals"][name].as_i64(),
            Some(sum(&own_totals, name)),
            "{name}: {}",
            overview["totals"]
        );
    }
    let cost: f64 = own_totals
        .iter()
        .map(|t| t["cost_usd"].as_f64().unwrap_or(0.0))
        .sum();
    let team_cost = overview["totals"]["cost_usd"].as_f64().unwrap();
    assert!(
        (team_cost - cost).abs() < 1e-4,
        "{team_cost} against {cost}"
    );
    assert_eq!(overview["store"], "team");
    assert_eq!(overview["zone"], "UTC");
    let days: Vec<&Value> = overview["days"].as_array().unwrap().iter().collect();
    assert_eq!(
        sum(&days, "events"),
        overview["totals"]["events"].as_i64().unwrap()
    );
    // Per user and per machine: one row each, with each machine's own events.
    let users: Vec<&str> = overview["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["user_label"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 2);
    assert!(users.contains(&"ana") && users.contains(&"bo"), "{users:?}");
    for (env, own) in [(&ana, &own[0]), (&bo, &own[1])] {
        let machine = machine_of(env);
        let row = overview["machines"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["machine_id"] == machine.as_str())
            .unwrap_or_else(|| panic!("{machine} in {}", overview["machines"]));
        assert_eq!(row["events"], own["totals"]["events"]);
        assert_eq!(row["sessions"], own["totals"]["sessions"]);
    }
    // The gate: the calls checked and the findings, every machine's.
    let gates: Vec<&Value> = own.iter().map(|o| &o["gate"]["totals"]).collect();
    for name in ["calls", "flagged", "denied", "unreadable"] {
        assert_eq!(
            overview["gate"]["totals"][name].as_i64(),
            Some(sum(&gates, name)),
            "gate {name}"
        );
    }
    assert!(sum(&gates, "flagged") > 0, "the workload has findings");

    // Tools: per tool, the machines' calls added up.
    let tools = team.json("/api/tools?since=");
    let own_tools = each("/api/tools?since=");
    assert_eq!(
        tools_of(&[&tools]),
        tools_of(&own_tools.iter().collect::<Vec<_>>())
    );

    // Sessions: every machine's, each with its machine and user, and those that went
    // nowhere counted as each machine counts them.
    let list = team.json("/api/sessions?since=&limit=10000");
    let own_lists = each("/api/sessions?since=&limit=10000");
    let count = |l: &Value| l["sessions"].as_array().unwrap().len();
    assert_eq!(count(&list), own_lists.iter().map(count).sum::<usize>());
    assert_eq!(
        list["hidden"].as_i64(),
        Some(
            own_lists
                .iter()
                .map(|l| l["hidden"].as_i64().unwrap())
                .sum()
        )
    );
    assert_eq!(list["store"], "team");
    assert_eq!(list["machines"].as_array().unwrap().len(), 2);
    assert_eq!(list["users"], serde_json::json!(["ana", "bo"]));
    let only_bo = team.json("/api/sessions?since=&limit=10000&user=bo");
    assert_eq!(count(&only_bo), count(&own_lists[1]));
    assert!(only_bo["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["user_label"] == "bo" && s["machine_id"] == machine_of(&bo).as_str()));

    // A session: the machine's own story, and one timeline bar per call.
    let session = ana
        .text("SELECT session_id FROM sessions ORDER BY tool_failures DESC, events DESC LIMIT 1");
    let machine = machine_of(&ana);
    let theirs = team.json(&format!("/api/session?id={session}&machine={machine}"));
    let mine = local_ana.json(&format!("/api/session?id={session}"));
    assert_eq!(
        comparable(theirs["story"].clone()),
        comparable(mine["story"].clone())
    );
    assert_eq!(theirs["story"]["user_label"], "ana");
    let calls = theirs["calls"].as_array().unwrap();
    assert_eq!(calls.len(), mine["calls"].as_array().unwrap().len());
    assert!(!calls.is_empty());
    // A call's input and output, as the machine has them (it sent its lines: `full`).
    let key = calls[0]["key"].as_str().unwrap();
    let call = team.json(&format!(
        "/api/call?session={session}&key={key}&machine={machine}"
    ));
    let own_call = local_ana.json(&format!("/api/call?session={session}&key={key}"));
    for field in [
        "tool",
        "outcome",
        "input",
        "output",
        "error",
        "risk",
        "decision",
        "decided_by",
    ] {
        assert_eq!(call[field], own_call[field], "{field}");
    }
    // Who decided the call the gate denied, as the machine read it from the call's lines.
    let gate_session = "gate-51";
    let story = team.json(&format!("/api/session?id={gate_session}&machine={machine}"));
    let denied = story["calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["outcome"] == "denied")
        .unwrap_or_else(|| panic!("a denied call: {story}"))["key"]
        .as_str()
        .unwrap()
        .to_string();
    let theirs = team.json(&format!(
        "/api/call?session={gate_session}&key={denied}&machine={machine}"
    ));
    assert_eq!(theirs["decided_by"], "gate", "{theirs}");
    assert_eq!(
        team.get(&format!("/api/call?session={session}&key={key}"))
            .status,
        400
    );
    assert_eq!(team.get("/api/session?id=no-such-session").status, 404);

    // SQL: the team's rows, read-only.
    let events: i64 =
        ana.int("SELECT count(*) FROM events") + bo.int("SELECT count(*) FROM events");
    let r = team.json("/api/sql?q=SELECT+count(*)+AS+n+FROM+events");
    assert_eq!(r["rows"][0][0].as_i64(), Some(events));
    let cut = team.json("/api/sql?q=SELECT+id+FROM+events&max_rows=7");
    assert_eq!(cut["rows"].as_array().unwrap().len(), 7);
    assert_eq!(cut["cut"], true);
    let whole = team.json("/api/sql?q=SELECT+1+UNION+SELECT+2&max_rows=2");
    assert_eq!(whole["cut"], false);
    let values = team.json("/api/sql?q=VALUES+(1)%2C(2)%2C(3)&max_rows=2");
    assert_eq!(
        (values["rows"].as_array().unwrap().len(), &values["cut"]),
        (2, &Value::Bool(true))
    );
    let r = team.get("/api/sql?q=SELECT+nothing+FROM+events");
    assert_eq!(r.status, 400);
    let said: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        said["error"],
        "the statement: column \"nothing\" does not exist"
    );
    for write in [
        "DELETE FROM events",
        "UPDATE machines SET user_label = 'x'",
        "CREATE TABLE evil (x int)",
        "WITH d AS (DELETE FROM events RETURNING 1) SELECT count(*) FROM d",
    ] {
        let r = team.get(&format!("/api/sql?q={}", write.replace(' ', "+")));
        assert_eq!(r.status, 403, "{write}: {}", r.body);
    }
    let r = team.get("/api/sql?q=SELECT+1%3B+DELETE+FROM+events");
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("multiple commands"), "{}", r.body);
    assert_eq!(db.int("SELECT count(*) FROM events"), events);
    assert_eq!(
        db.int("SELECT count(*) FROM machines WHERE user_label = 'x'"),
        0
    );

    // Its token, Host and Origin checks, as on the local store.
    let host = format!("127.0.0.1:{}", team.port);
    let cookie = team.cookie();
    for (what, headers) in [
        ("no token", vec![("Host", host.as_str())]),
        (
            "another Host",
            vec![("Host", "attacker.example"), ("Cookie", &cookie)],
        ),
        (
            "another origin",
            vec![
                ("Host", &host),
                ("Cookie", &cookie),
                ("Origin", "http://attacker.example"),
            ],
        ),
    ] {
        let r = team.raw("GET", "/api/overview", &headers);
        assert_eq!(r.status, 403, "{what}: {}", r.body);
        assert!(!r.body.contains("events"), "{what}");
    }
    assert_eq!(team.json("/api/version")["store"], "team");

    // Limited to one machine on the command line: a page cannot ask for another.
    let bo_only = Served::start_on(
        &ana,
        &[],
        &["--store", &db.url, "--machine", &machine_of(&bo)],
    );
    let o = bo_only.json(&format!("/api/overview?since=&machine={machine}"));
    assert_eq!(o["totals"]["events"], own[1]["totals"]["events"]);
    // Limited to a user: another's session and calls are not there, and SQL (which would
    // read them) is not offered.
    let bo_user = Served::start_on(&ana, &[], &["--store", &db.url, "--user", "bo"]);
    let theirs = format!("session={session}&key={key}&machine={machine}");
    assert_eq!(bo_user.get(&format!("/api/call?{theirs}")).status, 404);
    assert_eq!(
        bo_user
            .get(&format!("/api/session?id={session}&machine={machine}"))
            .status,
        404
    );
    let r = bo_user.get("/api/sql?q=SELECT+1");
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(team.get(&format!("/api/call?{theirs}")).status, 200);
}

/// A database without a team store, or no server: `serve --store` says so and starts nothing.
#[test]
fn serve_store_says_what_is_wrong_with_the_store() {
    let Some(db) = pg_database() else { return };
    let env = TestEnv::new();
    for (url, says) in [
        (
            db.url.as_str(),
            "this database holds no team store, or one older than this cmstore reads \
             (relation \"machines\" does not exist): `cmstore push` to it with this cmstore \
             first",
        ),
        (
            "postgres://nobody@127.0.0.1:1/x?sslmode=disable",
            "the team store: cannot connect to",
        ),
    ] {
        let out = env
            .cmd()
            .args(["serve", "--port", "0", "--store", url])
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{url}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{url}: {stderr}");
        assert!(out.stdout.is_empty(), "no address printed: {url}");
    }
}

/// The team store's server restarted under a running dashboard (each worker's connection
/// lost): a request meanwhile says the server cannot be reached (503), and once it is back
/// the dashboard answers again, each worker connected anew.
#[cfg(unix)]
#[test]
fn the_dashboard_connects_again_after_the_server_restarts() {
    let Some(cluster) = crate::common::PgCluster::start() else {
        return;
    };
    let env = labelled(53, 300, "ana");
    push_ok(&env, &cluster.url(), &[]);
    let served = Served::start_on(&env, &[], &["--store", &cluster.url()]);
    let before = served.json("/api/overview?since=");
    cluster.stop_server();
    let down = served.get("/api/overview?since=&n=1");
    assert_eq!(down.status, 503, "{}", down.body);
    cluster.start_server();
    // Four workers, each with its own connection: every one must come back.
    for n in 2..12 {
        let again = served.json(&format!("/api/overview?since=&n={n}"));
        assert_eq!(again["totals"], before["totals"]);
    }
}

/// The server gone between the dashboard's start and its first request: each worker connects
/// at its first request, so the dashboard answers 503 and stays up (it exited when a worker
/// could not connect as it started: a flake of the test above), then serves once the server
/// is back.
#[test]
fn the_dashboard_outlives_a_server_gone_before_its_first_request() {
    let Some(cluster) = crate::common::PgCluster::start() else {
        return;
    };
    let env = labelled(54, 200, "bo");
    push_ok(&env, &cluster.url(), &[]);
    let served = Served::start_on(&env, &[], &["--store", &cluster.url()]);
    cluster.stop_server();
    for n in 0..6 {
        let down = served.get(&format!("/api/overview?since=&n={n}"));
        assert_eq!(down.status, 503, "{}", down.body);
    }
    cluster.start_server();
    for n in 6..14 {
        let again = served.json(&format!("/api/overview?since=&n={n}"));
        assert!(again["totals"]["events"].as_i64() > Some(0), "{again}");
    }
}
