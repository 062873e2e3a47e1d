//! cmstore's own reports on the team store (`summarize --store postgres://…`, issue 40): each
//! machine's figures there equal what the machine's own store says, whichever way the team's
//! rows are cut (per machine, user, tool, model, session, day) and filtered.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::common::{pg_database, TestEnv};
use crate::push::{filled_with_checks, machine_of, push_ok};

/// A filled store whose pushes carry `user` and the team `web`.
fn labelled(seed: u64, lines: usize, user: &str) -> TestEnv {
    let env = filled_with_checks(seed, lines);
    std::fs::write(
        env.home().join("cmstore.toml"),
        format!("[push]\nuser = \"{user}\"\nteam = \"web\"\n"),
    )
    .unwrap();
    env
}

fn json_of(env: &TestEnv, args: &[&str]) -> Vec<Value> {
    let out = env
        .cmd()
        .args(args)
        .args(["--format", "json"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice::<Value>(&out.stdout)
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

/// Rows keyed by `key`, each reduced to `fields` (as JSON text, so 3 and 3.0 differ only
/// where a type differs).
fn keyed(rows: &[Value], key: &str, fields: &[&str]) -> BTreeMap<String, Vec<String>> {
    rows.iter()
        .map(|row| {
            let values = fields.iter().map(|f| row[*f].to_string()).collect();
            (row[key].as_str().unwrap_or("?").to_string(), values)
        })
        .collect()
}

#[test]
fn the_team_summaries_equal_each_machines_own() {
    let Some(db) = pg_database() else { return };
    let ana = labelled(21, 1500, "ana");
    let bo = labelled(22, 1000, "bo");
    for env in [&ana, &bo] {
        push_ok(env, &db.url, &[]);
    }
    let url = db.url.as_str();
    let team = |args: &[&str]| json_of(&ana, &[&["summarize", "--store", url], args].concat());

    // Per machine and per user: events, sessions, responses and cost, each machine's own.
    let machines = team(&["--by", "machine"]);
    let users = team(&["--by", "user"]);
    assert_eq!(machines.len(), 2);
    for (env, user) in [(&ana, "ana"), (&bo, "bo")] {
        let id = machine_of(env);
        let row = machines.iter().find(|r| r["machine_id"] == id).unwrap();
        let by_user = users.iter().find(|r| r["user_label"] == user).unwrap();
        for row in [row, by_user] {
            assert_eq!(
                row["events"],
                env.int("SELECT count(*) FROM events"),
                "{row}"
            );
            assert_eq!(row["sessions"], env.int("SELECT count(*) FROM sessions"));
            assert_eq!(row["responses"], env.int("SELECT count(*) FROM usage"));
            let cost: f64 = env
                .conn()
                .query_row("SELECT round(sum(cost_usd), 6) FROM v_usage", [], |r| {
                    r.get(0)
                })
                .unwrap();
            assert!(
                (row["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9,
                "{row}"
            );
        }
        assert_eq!(row["machine_user"], user);
        assert_eq!(by_user["machines"], 1);

        // Per tool, model and session of one machine: the local summaries' own figures.
        let local_tools = json_of(env, &["summarize", "--by", "tool"]);
        let team_tools = team(&["--by", "tool", "--machine", &id]);
        let tool_fields = [
            "calls",
            "succeeded",
            "failed",
            "denied",
            "unfinished",
            "total_ms",
        ];
        assert_eq!(
            keyed(&team_tools, "tool_name", &tool_fields),
            keyed(&local_tools, "tool_name", &tool_fields)
        );
        let local_models = json_of(env, &["summarize", "--by", "model"]);
        let model_fields = [
            "sessions",
            "responses",
            "input_tokens",
            "output_tokens",
            "cost_usd",
        ];
        // Through the rollup per session (a user chosen) and the second level (a machine).
        for chosen in [["--user", user], ["--machine", id.as_str()]] {
            let team_models = team(&[&["--by", "model"][..], &chosen[..]].concat());
            assert_eq!(
                keyed(&team_models, "model", &model_fields),
                keyed(&local_models, "model", &model_fields),
                "{chosen:?}"
            );
        }
        let local_sessions = json_of(env, &["summarize", "--by", "session"]);
        let team_sessions = team(&["--by", "session", "--machine", &id]);
        let session_fields = ["agent", "prompts", "turns", "tool_uses", "tool_failures"];
        assert_eq!(
            keyed(&team_sessions, "session_id", &session_fields),
            keyed(&local_sessions, "session_id", &session_fields)
        );
    }

    // Every session of the team, unfiltered (each session's usage and turns summed once and
    // joined): the rows of each machine's own list, every column equal.
    let key = |r: &Value| {
        (
            r["machine_id"].as_str().unwrap_or_default().to_string(),
            r["session_id"].as_str().unwrap_or_default().to_string(),
        )
    };
    let mut every = team(&["--by", "session"]);
    let mut per_machine: Vec<Value> = [&ana, &bo]
        .iter()
        .flat_map(|env| team(&["--by", "session", "--machine", &machine_of(env)]))
        .collect();
    every.sort_by_key(key);
    per_machine.sort_by_key(key);
    assert_eq!(every, per_machine);
    assert!(every.iter().any(|r| r["responses"].as_i64() > Some(0)));

    // The day, agent and session filters choose what they say.
    let days = team(&["--by", "day"]);
    let all: i64 = days.iter().map(|d| d["events"].as_i64().unwrap_or(0)).sum();
    assert_eq!(
        all,
        ana.int("SELECT count(*) FROM events") + bo.int("SELECT count(*) FROM events")
    );
    let first_day = team(&[
        "--by",
        "day",
        "--utc",
        "--since",
        "2026-01-01",
        "--until",
        "2026-01-02",
    ]);
    assert_eq!(first_day.len(), 1, "{first_day:?}");
    let in_day = "SELECT count(*) FROM events WHERE ts >= 1767225600000 AND ts < 1767312000000";
    assert_eq!(first_day[0]["events"], ana.int(in_day) + bo.int(in_day));
    let session = ana.text("SELECT session_id FROM sessions ORDER BY events DESC LIMIT 1");
    // A unique prefix of the id chooses the session, and its machine, as locally.
    let one = team(&["--by", "agent", "--session", &session[..12]]);
    assert_eq!(one.len(), 1, "{one:?}");
    assert_eq!(
        one[0]["events"],
        ana.int(&format!(
            "SELECT count(*) FROM events WHERE session_id = '{session}'"
        ))
    );
    assert_eq!(one[0]["sessions"], 1);
    let agent = one[0]["agent"].as_str().unwrap().to_string();
    for row in team(&["--by", "agent", "--agent", &agent]) {
        assert_eq!(row["agent"], agent.as_str());
    }
    assert!(team(&["--by", "user", "--user", "nobody"]).is_empty());

    // `sessions --store`: each machine's list is its own list, those that went nowhere left
    // out alike; `--user` and `--limit` choose.
    for env in [&ana, &bo] {
        let id = machine_of(env);
        for all in [&[][..], &["--all"][..]] {
            let ids = |rows: Vec<Value>| -> Vec<String> {
                rows.iter().map(|r| r["session_id"].to_string()).collect()
            };
            let local = ids(json_of(
                env,
                &[&["sessions", "--limit", "0"][..], all].concat(),
            ));
            let on_team = ids(json_of(
                env,
                &[
                    &["sessions", "--limit", "0", "--store", url, "--machine", &id][..],
                    all,
                ]
                .concat(),
            ));
            assert!(!local.is_empty());
            assert_eq!(on_team, local, "{all:?}");
        }
    }
    let newest = json_of(
        &bo,
        &["sessions", "--store", url, "--user", "bo", "--limit", "2"],
    );
    assert_eq!(newest.len(), 2);
    assert!(newest.iter().all(|r| r["user_label"] == "bo"));
}

#[test]
fn team_only_and_local_only_summaries_say_so() {
    let env = TestEnv::new();
    env.ingest_once();
    let out = env
        .cmd()
        .args(["summarize", "--by", "user"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a team store has users and machines"),
        "{stderr}"
    );
    let out = env
        .cmd()
        .args(["summarize", "--machine", "m1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--store"));
    let out = env
        .cmd()
        .args([
            "summarize",
            "--by",
            "check",
            "--store",
            "postgres://127.0.0.1:1/x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A server that does not answer: said at once, in one line.
    assert!(
        stderr.starts_with("cmstore: cannot connect to postgres://") && stderr.lines().count() == 1,
        "{stderr}"
    );
    let out = env
        .cmd()
        .args(["summarize", "--store", "mysql://x/y"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("expected a postgres:// URL"), "{stderr}");
}

/// The Grafana dashboard in `resources/grafana/` asks questions the team store answers: each
/// panel's SQL, with Grafana's macros and the user variable expanded as Grafana expands them,
/// runs on a pushed server and finds the machines' own figures.
#[test]
fn the_grafana_dashboards_panels_run_on_the_team_store() {
    let Some(db) = pg_database() else { return };
    let envs = [labelled(31, 600, "ana"), labelled(32, 400, "bo")];
    for env in &envs {
        push_ok(env, &db.url, &[]);
    }
    let dashboard: Value =
        serde_json::from_str(include_str!("../../resources/grafana/cmstore-team.json")).unwrap();
    let mut client = db.client();
    let variable = dashboard["templating"]["list"][0]["query"]
        .as_str()
        .unwrap();
    let users: Vec<String> = client
        .query(variable, &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(users, ["ana", "bo"]);
    let expand = |sql: &str| {
        sql.replace("$__timeFrom()", "'2025-12-01T00:00:00Z'")
            .replace("$__timeTo()", "'2026-12-31T00:00:00Z'")
            .replace("${user:sqlstring}", "'ana','bo'")
    };
    let mut answers = BTreeMap::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        let title = panel["title"].as_str().unwrap();
        let target = &panel["targets"][0];
        let sql = expand(target["rawSql"].as_str().unwrap());
        assert!(!sql.contains('$'), "{title}: a macro left: {sql}");
        let rows = client
            .query(sql.as_str(), &[])
            .unwrap_or_else(|e| panic!("{title}: {e}\n{sql}"));
        assert!(!rows.is_empty(), "{title}: no rows");
        if target["format"] == "time_series" {
            let names: Vec<&str> = rows[0].columns().iter().map(|c| c.name()).collect();
            assert_eq!(names, ["time", "metric", "value"], "{title}");
        }
        if panel["type"] == "stat" {
            let text: String = client
                .query_one(&format!("SELECT (x.*)::text FROM ({sql}) AS x"), &[])
                .unwrap()
                .get(0);
            answers.insert(title.to_string(), text);
        }
    }
    let sum = |sql: &str| -> i64 { envs.iter().map(|e| e.int(sql)).sum() };
    assert_eq!(
        answers["Events"],
        format!("({})", sum("SELECT count(*) FROM events"))
    );
    assert_eq!(
        answers["Active sessions"],
        format!("({})", sum("SELECT count(*) FROM sessions"))
    );
    let spend: f64 = answers["Spend"].trim_matches(['(', ')']).parse().unwrap();
    let local: f64 = envs
        .iter()
        .map(|e| {
            e.conn()
                .query_row("SELECT total(cost_usd) FROM v_usage", [], |r| {
                    r.get::<_, f64>(0)
                })
                .unwrap()
        })
        .sum();
    assert!(
        spend > 0.0 && (spend - local).abs() < 1e-9,
        "{spend} {local}"
    );
}

/// `show --store`: a session's story on the team store is the story `show` tells on its
/// machine (the same prompts, calls, answers and usage, in the same order), but for why a call
/// failed, which stays on the machine; under `none` its texts say they were not sent.
#[test]
fn show_on_the_team_store_tells_the_machines_story() {
    let Some(db) = pg_database() else { return };
    let full = labelled(41, 800, "ana");
    let none = labelled(42, 300, "bo");
    push_ok(&full, &db.url, &["--content", "full"]);
    push_ok(&none, &db.url, &["--content", "none"]);
    let url = db.url.as_str();
    let one = |env: &TestEnv, args: &[&str]| -> Value {
        let out = env
            .cmd()
            .args(["show", "--format", "json"])
            .args(args)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // What stays on the machine: a long input's whole text.
    let comparable = |mut story: Value| -> Value {
        for item in story["items"].as_array_mut().unwrap() {
            item.as_object_mut().unwrap().remove("input");
        }
        story.as_object_mut().unwrap().remove("machine_id");
        story.as_object_mut().unwrap().remove("user_label");
        story
    };
    let session = full
        .text("SELECT session_id FROM sessions ORDER BY tool_failures DESC, events DESC LIMIT 1");
    let local = one(&full, &[&session]);
    let team = one(&full, &["--store", url, &session]);
    assert_eq!(team["machine_id"], machine_of(&full).as_str());
    assert_eq!(team["user_label"], "ana");
    assert!(local["items"].as_array().unwrap().len() > 20);
    let told = |story: &Value| {
        story["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| !i["error"].is_null())
            .count()
    };
    assert!(told(&local) > 0, "no failed call says why");
    assert_eq!(told(&team), told(&local));
    assert_eq!(comparable(team), comparable(local));
    // A unique prefix finds it; the machine's texts under `none` say they were not sent.
    let prefix = &session[..session.len() - 1];
    let quiet = none.text("SELECT session_id FROM sessions ORDER BY events DESC LIMIT 1");
    let machine = machine_of(&none);
    let team = one(&none, &["--store", url, &quiet, "--machine", &machine]);
    let prompts: Vec<&Value> = team["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "prompt")
        .collect();
    assert!(!prompts.is_empty());
    assert!(prompts.iter().all(|p| p["text"]
        .as_str()
        .unwrap()
        .starts_with("(not sent to the team store")));
    let out = full
        .cmd()
        .args(["show", "--store", url, "--no-pager", prefix])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whose = format!("team store: machine {}, user ana\n", machine_of(&full));
    assert!(text.starts_with(&whose), "{text}");
    assert!(text.contains(&session), "{text}");
    for (given, says) in [
        ("no-such-session", "no session of the team store matches"),
        ("", "names more than 10 sessions"),
    ] {
        let out = full
            .cmd()
            .args(["show", "--store", url, "--no-pager", given])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{given:?}: {stderr}");
    }
}
