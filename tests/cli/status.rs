//! `cmstore status`: sources, backlog, totals and sizes, with or without a database.

use std::time::Duration;

use serde_json::Value;

use crate::common::{lines, response_line, TestEnv};

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
    assert_eq!(src["lines_behind"], 0);
    assert_eq!(src["state"], "not followed: no ingest running");
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
    assert_eq!(doc["sources"][0]["lines_behind"], 2);
    // A half-written line is not a line yet.
    env.append_raw(b"{\"half\":");
    assert_eq!(status_json(&env)["sources"][0]["lines_behind"], 2);

    // Table output carries the same sections.
    env.cmd()
        .args(["status", "--format", "table"])
        .assert()
        .success()
        .stdout(predicates::str::contains("Sources"))
        .stdout(predicates::str::contains("Ingest"))
        .stdout(predicates::str::contains("no ingest running"));
}

#[test]
fn status_says_whether_an_ingest_runs_and_which() {
    let env = TestEnv::new();
    env.append(&lines(3));
    let doc = status_json(&env);
    assert_eq!(doc["ingest"]["running"], false, "{doc}");
    assert_eq!(doc["sources"][0]["lines_behind"], 3);

    let mut child = env.spawn_follow(&["--poll-ms", "20"]);
    let events = "SELECT count(*) FROM events";
    assert_eq!(env.wait_for(events, 3, Duration::from_secs(60)), 3);
    let doc = status_json(&env);
    let ingest = &doc["ingest"];
    assert_eq!(ingest["running"], true, "{doc}");
    assert_eq!(ingest["pid"], child.id(), "{doc}");
    assert!(
        ingest["command"].as_str().unwrap().contains("ingest"),
        "{doc}"
    );
    assert!(ingest["started"].as_str().unwrap().ends_with('Z'), "{doc}");
    assert!(
        ingest["last_commit"].as_str().unwrap().ends_with('Z'),
        "{doc}"
    );
    assert_eq!(ingest["lines_behind"], 0, "{doc}");
    assert_eq!(ingest["stale_pid"], Value::Null, "{doc}");
    assert_eq!(ingest["note"], "", "{doc}");
    assert_eq!(doc["sources"][0]["state"], "following", "{doc}");
    // As an ingest of a cmstore from before the chain by key (its pid file names no schema)
    // leaves it: restart it, says status.
    let pid_file = format!("{}.ingest.pid", env.db().display());
    let holder: Value = serde_json::from_str(&std::fs::read_to_string(&pid_file).unwrap()).unwrap();
    let mut older = holder.clone();
    older.as_object_mut().unwrap().remove("schema");
    std::fs::write(&pid_file, older.to_string()).unwrap();
    let note = status_json(&env)["ingest"]["note"].clone();
    assert!(
        note.as_str().unwrap().starts_with(&format!(
            "the running ingest (pid {}) is of an older cmstore than this one: restart it",
            child.id()
        )),
        "{note}"
    );
    std::fs::write(&pid_file, holder.to_string()).unwrap();
    env.cmd()
        .args(["status", "--format", "table"])
        .assert()
        .success()
        .stdout(predicates::str::contains(child.id().to_string()));

    // kill -9 leaves the pid file behind, but not the lock.
    child.kill().unwrap();
    child.wait().unwrap();
    let doc = status_json(&env);
    assert_eq!(doc["ingest"]["running"], false, "{doc}");
    assert_eq!(doc["ingest"]["pid"], Value::Null, "{doc}");
    assert_eq!(doc["ingest"]["stale_pid"], child.id(), "{doc}");
    assert_eq!(
        doc["sources"][0]["state"],
        "not followed: no ingest running"
    );
    env.cmd()
        .args(["status", "--format", "table"])
        .assert()
        .success()
        .stdout(predicates::str::contains("no ingest running"))
        .stdout(predicates::str::contains("stale"));

    // The next ingest takes the pid file over and removes it when it ends.
    env.append(&lines(2));
    env.ingest_once();
    let doc = status_json(&env);
    assert_eq!(doc["ingest"]["running"], false);
    assert_eq!(doc["ingest"]["stale_pid"], Value::Null, "{doc}");
    assert_eq!(doc["sources"][0]["lines_behind"], 0);
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

#[cfg(unix)]
#[test]
fn status_shows_the_retention_policy_and_its_last_run() {
    let env = TestEnv::new();
    env.append(&lines(3));
    env.ingest_once();
    let doc = status_json(&env);
    let retention = &doc["retention"];
    assert_eq!(retention["days"], 7);
    assert_eq!(retention["automatic"], false);
    assert_eq!(retention["compact_queue"], false);
    assert_eq!(retention["last_run"], Value::Null);
    assert!(
        retention["note"]
            .as_str()
            .unwrap()
            .starts_with("off: retention_days is not set"),
        "{retention}"
    );

    std::fs::write(
        env.home().join("cmstore.toml"),
        "retention_days = 30\ncompact_queue = true\n",
    )
    .unwrap();
    let mut ingest = env
        .std_cmd()
        .env("CMSTORE_RETENTION_INTERVAL_MS", "100000")
        .args(["ingest", "--poll-ms", "20"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The run at start is recorded.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let retention = loop {
        let doc = status_json(&env);
        if doc["retention"]["last_run"].is_string() || std::time::Instant::now() > deadline {
            break doc["retention"].clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    crate::common::terminate(&ingest);
    crate::common::wait_timeout(&mut ingest, Duration::from_secs(10)).expect("stopped");
    assert_eq!(retention["days"], 30);
    assert_eq!(retention["automatic"], true);
    assert_eq!(retention["compact_queue"], true);
    assert!(retention["last_run"].is_string(), "{retention}");
    assert_eq!(retention["last_removed_rows"], 0);
    assert_eq!(retention["last_removed_queue_lines"], 0);
    let table = env
        .cmd()
        .args(["status", "--format", "tsv"])
        .output()
        .unwrap();
    let text = String::from_utf8(table.stdout).unwrap();
    for field in ["days\t30", "auto\tyes", "compact\tyes", "removed\t0"] {
        assert!(
            text.contains(&format!("\nretention\t1\t{field}\n")),
            "{field}: {text}"
        );
    }
}

/// csv and tsv print one table that parses as a whole (`section`, `row`, `field`, `value`),
/// jsonl an object per row of each section; each holds what `--format json` says.
#[test]
fn every_machine_format_of_status_parses_as_a_whole() {
    let env = TestEnv::new();
    env.append(&lines(3));
    env.ingest_once();
    let run = |format: &str| {
        let out = env
            .cmd()
            .args(["status", "--format", format])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}");
        String::from_utf8(out.stdout).unwrap()
    };
    let tsv = run("tsv");
    let mut rows = tsv.lines();
    assert_eq!(rows.next(), Some("section\trow\tfield\tvalue"));
    let rows: Vec<Vec<&str>> = rows.map(|l| l.split('\t').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 4), "{tsv}");
    let sections: std::collections::BTreeSet<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(
        sections.into_iter().collect::<Vec<_>>(),
        ["ingest", "retention", "sources", "store"]
    );
    assert!(rows.contains(&vec!["store", "1", "events", "3"]), "{tsv}");
    let csv = run("csv");
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("section,")).count(),
        1,
        "{csv}"
    );
    assert_eq!(csv.lines().count(), tsv.lines().count(), "{csv}");
    assert!(csv.contains("\r\nstore,1,events,3\r\n"), "{csv}");

    let doc = status_json(&env);
    let objects: Vec<Value> = run("jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object a line"))
        .collect();
    let of = |name: &str| {
        objects
            .iter()
            .find(|o| o["section"] == name)
            .unwrap()
            .clone()
    };
    // The JSON document's sections, names and values: a line per object.
    let sections: Vec<&str> = objects
        .iter()
        .map(|o| o["section"].as_str().unwrap())
        .collect();
    assert_eq!(
        sections,
        [
            "database",
            "queue",
            "ingest",
            "sources",
            "totals",
            "retention"
        ],
        "{objects:?}"
    );
    assert_eq!(of("ingest")["running"], doc["ingest"]["running"]);
    assert_eq!(
        of("ingest")["running"],
        false,
        "a boolean, as in --format json"
    );
    assert_eq!(of("retention")["automatic"], doc["retention"]["automatic"]);
    assert_eq!(of("sources")["path"], doc["sources"][0]["path"]);
    assert_eq!(of("sources")["offset"], doc["sources"][0]["offset"]);
    assert_eq!(of("totals")["events"], 3);
}

#[test]
fn the_status_tables_read_whole_in_100_columns() {
    let env = TestEnv::new();
    // Fixed times, so that the oldest and newest event stay the same.
    let at = |i: i64| {
        let mut e = crate::common::entry("UserPromptSubmit", "s1");
        e.timestamp = 1_767_607_200_000 + i * 60_000;
        e.to_line()
    };
    env.append(&[at(0), at(1), at(2)]);
    env.ingest_once();
    env.append(&[at(3)]);
    let out = env
        .cmd()
        .env("COLUMNS", "100")
        .env("TZ", "UTC")
        .args(["status", "--format", "table"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    // Sizes in kB and MB, moments in local time, no device or inode numbers (issue 35.10).
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("bytes ")
                && (l.ends_with(" kB") || l.ends_with(" MB"))),
        "{text}"
    );
    assert!(!text.contains("ino "), "{text}");
    // What differs from run to run (the temporary directory, sizes, times) is masked; the
    // rest is as a person reads it.
    let dir = env.dir.path().display().to_string();
    let masked: Vec<String> = text
        .replace(&dir, "[DIR]")
        .lines()
        .map(|line| {
            let field = line.split_whitespace().next().unwrap_or("");
            if ["bytes", "wal_bytes", "last_commit", "identity"].contains(&field) {
                let name_end = line.find(field).unwrap() + field.len();
                let value_at =
                    name_end + line[name_end..].len() - line[name_end..].trim_start().len();
                format!("{}[masked]", &line[..value_at])
            } else {
                line.to_string()
            }
        })
        .collect();
    let masked = masked.join("\n");
    assert!(
        masked.lines().any(|l| l.trim_start().starts_with("state")
            && l.ends_with("  not followed: no ingest running")),
        "{masked}"
    );
    insta::assert_snapshot!("status_table", masked);
}

/// On a terminal each configuration problem is printed whole, its end (what applies instead)
/// included, however long: a table cell cut to the width lost it.
#[test]
fn the_table_prints_each_configuration_problem_whole() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "mode = \"enforced\"\n[safety]\nremove = [\"no-such-rule-with-a-rather-long-name\"]\n",
    )
    .unwrap();
    let out = env
        .cmd()
        .env("COLUMNS", "100")
        .args(["status", "--format", "table"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let problems: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Configuration problems")
        .skip(1)
        .collect();
    assert_eq!(problems.len(), 2, "{text}");
    assert!(
        problems
            .iter()
            .all(|p| p.starts_with("  - ") && !p.contains('…')),
        "{text}"
    );
    assert!(
        problems[0].ends_with("expected \"audit\" or \"enforce\"; using audit"),
        "{text}"
    );
    assert!(
        problems[1].contains("no-such-rule-with-a-rather-long-name"),
        "{text}"
    );
}

/// Issue 37: Claude Code deletes a transcript `cleanupPeriodDays` after its last change.
/// Status counts the sessions on disk the store does not hold, those it will delete within a
/// week, and says what to do; an import takes them off; a longer period set in Claude Code's
/// settings moves the deletion.
#[test]
fn status_warns_before_claude_code_deletes_transcripts_the_store_lacks() {
    let env = TestEnv::new();
    let projects = env.user_home().join(".claude/projects/-w");
    std::fs::create_dir_all(&projects).unwrap();
    let old = projects.join("5e551011-0000-4000-8000-00000000000a.jsonl");
    let young = projects.join("5e551011-0000-4000-8000-00000000000b.jsonl");
    for (file, session) in [(&old, "a"), (&young, "b")] {
        let line = response_line(
            &format!("5e551011-0000-4000-8000-00000000000{session}"),
            &format!("msg_{session}"),
            "2026-11-01T10:00:00Z",
        );
        std::fs::write(file, line + "\n").unwrap();
    }
    let days_ago =
        |days: u64| std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    std::fs::File::options()
        .write(true)
        .open(&old)
        .unwrap()
        .set_modified(days_ago(25))
        .unwrap();
    let history = |env: &TestEnv| status_json(env)["history"].clone();
    let h = history(&env);
    assert_eq!(h["claude_cleanup_days"], 30, "{h}");
    assert_eq!(h["claude_cleanup_set_in"], "Claude Code's default", "{h}");
    assert_eq!(h["claude_sessions_not_stored"], 2, "{h}");
    assert_eq!(h["deleted_within_7_days"], 1, "{h}");
    assert!(
        h["advice"].as_str().unwrap().contains("cmstore import"),
        "{h}"
    );
    let first = h["first_deletion"].as_str().unwrap();
    let in_5_days = crate::common::now_ms() + 5 * 86_400_000;
    let first_ms = chrono::DateTime::parse_from_rfc3339(first)
        .unwrap()
        .timestamp_millis();
    assert!((first_ms - in_5_days).abs() < 600_000, "{first}");
    let text = String::from_utf8(env.cmd().arg("status").output().unwrap().stdout).unwrap();
    assert!(text.contains("deleted_within_7_days       1"), "{text}");

    // A longer period, set where Claude Code reads it: nothing is due within the week.
    let settings = env.user_home().join(".claude/settings.json");
    std::fs::write(&settings, r#"{"cleanupPeriodDays": 365}"#).unwrap();
    let h = history(&env);
    assert_eq!(h["claude_cleanup_days"], 365, "{h}");
    assert_eq!(
        h["claude_cleanup_set_in"],
        settings.display().to_string(),
        "{h}"
    );
    assert_eq!(h["deleted_within_7_days"], 0, "{h}");
    assert!(h.get("advice").is_none(), "{h}");

    // Imported, the sessions are in the store: none is left to lose.
    env.cmd().arg("import").assert().success();
    let h = history(&env);
    assert_eq!(h["claude_sessions_not_stored"], 0, "{h}");
    assert!(h["first_deletion"].is_null(), "{h}");
}
