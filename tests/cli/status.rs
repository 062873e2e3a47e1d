//! `cmstore status`: sources, backlog, totals and sizes, with or without a database.

use serde_json::Value;

use crate::common::{lines, TestEnv};

fn status_json(env: &TestEnv) -> Value {
    let out = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("status --format json parses")
}

#[test]
fn without_a_database_status_says_so_and_creates_nothing() {
    let env = TestEnv::new();
    env.cmd()
        .args(["status", "--format", "table"])
        .assert()
        .success()
        .stdout(predicates::str::contains("no database at"))
        .stdout(predicates::str::contains("run `cmstore ingest`"));
    env.cmd()
        .args(["status", "--format", "tsv"])
        .assert()
        .success()
        .stderr(predicates::str::contains("no database at"));
    let doc = status_json(&env);
    assert_eq!(doc["database"]["exists"], false);
    assert_eq!(doc["sources"], Value::Array(vec![]));
    assert_eq!(doc["totals"], Value::Null);
    assert!(!env.db().exists(), "status never creates the database");

    // A queue waiting for its first ingest is wholly behind.
    env.append(&lines(4));
    let doc = status_json(&env);
    let size = std::fs::metadata(env.queue()).unwrap().len();
    assert_eq!(doc["sources"][0]["bytes_behind"], size);
    assert!(!env.db().exists());
}

#[test]
fn bytes_behind_follow_ingest_and_appends() {
    let env = TestEnv::new();
    env.append(&lines(10));
    env.append_raw(b"not json\n");
    env.ingest_once();
    let doc = status_json(&env);
    let src = &doc["sources"][0];
    let size = std::fs::metadata(env.queue()).unwrap().len();
    assert_eq!(src["bytes_behind"], 0);
    assert_eq!(src["offset"], size);
    assert_eq!(src["size"], size);
    assert_eq!(src["lines"], 11);
    assert_eq!(src["state"], "following");
    assert!(src["identity"].as_str().unwrap().contains("fp "));
    assert!(src["last_commit"].as_str().unwrap().ends_with('Z'));
    assert_eq!(doc["totals"]["events"], 10);
    assert_eq!(doc["totals"]["sessions"], 3);
    assert_eq!(doc["totals"]["rejects"], 1);
    assert_eq!(doc["totals"]["indexes_set_aside"], 0);
    assert!(doc["database"]["bytes"].as_u64().unwrap() > 0);

    // What a bulk load that died leaves: status says so until the next ingest.
    rusqlite::Connection::open(env.db())
        .unwrap()
        .execute_batch(
            "INSERT INTO deferred_indexes(name, tbl, sql)
               SELECT name, tbl_name, sql FROM sqlite_master WHERE name = 'events_tool_name';
             DROP INDEX events_tool_name;",
        )
        .unwrap();
    assert_eq!(status_json(&env)["totals"]["indexes_set_aside"], 1);
    env.ingest_once();
    assert_eq!(status_json(&env)["totals"]["indexes_set_aside"], 0);

    let more = lines(2);
    env.append(&more);
    let doc = status_json(&env);
    let appended = more.iter().map(|l| l.len() as u64 + 1).sum::<u64>();
    assert_eq!(doc["sources"][0]["bytes_behind"], appended);

    // Table output carries the same sections.
    env.cmd()
        .args(["status", "--format", "table"])
        .assert()
        .success()
        .stdout(predicates::str::contains("Sources"))
        .stdout(predicates::str::contains("following"));
}

#[test]
fn config_problems_are_reported() {
    let env = TestEnv::new();
    let doc = {
        let out = env
            .cmd()
            .env("CMSTORE_RETENTION_DAYS", "abc")
            .args(["status", "--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success());
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let problems = doc["config_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1);
    assert!(problems[0]
        .as_str()
        .unwrap()
        .contains("CMSTORE_RETENTION_DAYS"));
}
