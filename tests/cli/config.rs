//! `cmstore config check|show`, and how the other commands report configuration problems.

use std::io::Read;
use std::time::Duration;

use predicates::str::contains;
use serde_json::Value;

use crate::common::{lines, the_one_error, TestEnv};

/// Every command but capture (and its detached check runner), as a user would run it.
fn commands(env: &TestEnv) -> Vec<Vec<String>> {
    let nothing = env.dir.path().join("no-transcripts");
    std::fs::create_dir_all(&nothing).unwrap();
    [
        vec!["query", "SELECT count(*) FROM events"],
        vec!["summarize"],
        vec!["sessions"],
        vec!["show", "s"],
        vec!["status"],
        vec!["gate", "report"],
        vec!["gate", "replay"],
        vec!["prune", "--days", "7"],
        vec!["prune"],
        vec![
            "export",
            "otlp",
            "--endpoint",
            "http://127.0.0.1:9",
            "--give-up-after",
            "1",
        ],
        vec!["import", nothing.to_str().unwrap()],
        vec!["ingest", "--once"],
        vec!["serve", "--port", "0"],
        vec!["config", "check"],
        vec!["config", "show"],
        vec!["hooks", "status"],
    ]
    .into_iter()
    .map(|args| args.into_iter().map(String::from).collect())
    .collect()
}

#[test]
fn a_given_config_that_is_not_a_file_is_an_error_for_every_command_but_capture() {
    let env = TestEnv::new();
    env.append(&lines(3));
    env.ingest_once();
    let missing = env.dir.path().join("missing.toml");
    let folder = env.dir.path().join("folder.toml");
    std::fs::create_dir_all(&folder).unwrap();
    for (config, why) in [
        (&missing, "does not exist"),
        (&folder, "is a directory, not a configuration file"),
    ] {
        for args in commands(&env) {
            let out = env
                .cmd()
                .arg("--config")
                .arg(config)
                .args(&args)
                .timeout(Duration::from_secs(30))
                .output()
                .unwrap();
            let error = the_one_error(&out);
            assert!(
                error.contains(&format!("--config {}: {why}", config.display())),
                "{args:?}: {error}"
            );
        }
    }
    // Nothing ran: prune deleted nothing, ingest read nothing more.
    assert_eq!(env.int("SELECT count(*) FROM events"), 3);

    // The default path, absent, is no problem.
    env.cmd()
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(contains("absent: defaults apply"));
}

#[test]
fn capture_with_a_given_config_that_is_not_a_file_records_and_carries_on() {
    let env = TestEnv::new();
    let missing = env.dir.path().join("missing.toml");
    let folder = env.dir.path().join("folder.toml");
    std::fs::create_dir_all(&folder).unwrap();
    let payload = r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
    for config in [&missing, &folder] {
        crate::common::capture(&env, payload, &["--config", config.to_str().unwrap()]);
    }
    let lines = env.queue_lines();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let note = lines[0]["configError"].as_str().unwrap();
    assert!(note.contains("missing.toml"), "{note}");
    assert!(note.contains("does not exist"), "{note}");
    let note = lines[1]["configError"].as_str().unwrap();
    assert!(note.contains("folder.toml"), "{note}");
    assert!(note.contains("cannot read"), "{note}");
}

/// Appends `n` lines and waits until follow-mode ingest has them all (`total` in the store).
fn feed(env: &TestEnv, n: usize, total: i64) {
    env.append(&lines(n));
    assert_eq!(
        env.wait_for(
            "SELECT count(*) FROM events",
            total,
            Duration::from_secs(60)
        ),
        total
    );
}

#[test]
fn follow_mode_ingest_warns_once_per_configuration_problem() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    let config = env.home().join("cmstore.toml");
    std::fs::write(&config, "mode = \"enforce\"\nretention_days = 3O\n").unwrap();
    let mut child = env.spawn_follow(&["--poll-ms", "20"]);
    for round in 1..=3 {
        feed(&env, 2, round * 2);
    }
    // A new problem is warned about once; fixing the file is said once.
    std::fs::write(&config, "mode = \"enforce\"\ncolour = \"blue\"\n").unwrap();
    feed(&env, 2, 8);
    feed(&env, 2, 10);
    std::fs::write(&config, "mode = \"enforce\"\n").unwrap();
    feed(&env, 2, 12);
    feed(&env, 2, 14);
    // Warnings are written as they happen: how ingest ends does not matter.
    child.kill().unwrap();
    child.wait().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        stderr.matches("line 2: retention_days").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr.matches("unknown setting colour").count(),
        1,
        "{stderr}"
    );
    assert_eq!(
        stderr
            .matches("the configuration problems are gone")
            .count(),
        1,
        "{stderr}"
    );
}

#[test]
fn status_names_the_lines_a_syntax_error_costs() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "mode = \"enforce\"\n[safety]\nremove = [\"dd\"\n",
    )
    .unwrap();
    let out = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = doc["config_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0]
            .as_str()
            .unwrap()
            .contains("line 3: safety.remove: not valid TOML"),
        "{problems:?}"
    );
    env.cmd()
        .args(["config", "show"])
        .assert()
        .success()
        .stdout(contains("mode = \"enforce\""));
}

#[test]
fn capture_notes_a_configuration_problem_on_every_line() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    let config = env.home().join("cmstore.toml");
    std::fs::write(&config, "mode = \"enforce\"\nretention_days = 3O\n").unwrap();
    let payload = r#"{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":"hi"}"#;
    crate::common::capture(&env, payload, &[]);
    std::fs::write(&config, "mode = \"enforce\"\n").unwrap();
    crate::common::capture(&env, payload, &[]);
    let lines = env.queue_lines();
    let note = lines[0]["configError"].as_str().unwrap();
    assert!(note.contains("line 2: retention_days"), "{note}");
    assert!(lines[1].get("configError").is_none(), "{}", lines[1]);
}

#[test]
fn config_show_and_check_know_prices() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[prices.\"my-model\"]\ninput = 1\noutput = 2\ncache_write_5m = 1.25\n\
         cache_write_1h = 2\ncache_read = 0.1\n",
    )
    .unwrap();
    env.cmd().args(["config", "check"]).assert().success();
    env.cmd()
        .args(["config", "show"])
        .assert()
        .success()
        .stdout(contains(
            "prices.\"my-model\" = { input = 1, output = 2, cache_write_5m = 1.25, \
             cache_write_1h = 2, cache_read = 0.1 }",
        ));
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[prices.\"my-model\"]\ninput = \"cheap\"\n",
    )
    .unwrap();
    env.cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stdout(contains("prices.my-model: input = \"cheap\""));
}

#[test]
fn a_misspelled_event_name_is_a_problem_that_names_the_event_meant() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[events]\nNotifcation = false\nBeforeTool = false\nWorktreeCreate = false\n",
    )
    .unwrap();
    let out = env.cmd().args(["config", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains("events.Notifcation: no such event (did you mean Notification?); ignored"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("events.BeforeTool"),
        "an agent's alias is an event: {stdout}"
    );
    assert!(
        !stdout.contains("events.WorktreeCreate"),
        "an event no agent maps is recorded under its own name, and switched by it: {stdout}"
    );
    // The misspelled switch is ignored: Notification is still recorded; WorktreeCreate is not.
    for event in ["Notification", "WorktreeCreate"] {
        let payload = format!(r#"{{"hook_event_name":"{event}","session_id":"s1"}}"#);
        crate::common::capture(&env, payload, &["--agent", "claude"]);
    }
    let lines = env.queue_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["hookType"], "Notification");
}
