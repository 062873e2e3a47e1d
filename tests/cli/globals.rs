//! The global options every command takes, named wrong: `--db` naming a directory.

use std::time::Duration;

use crate::common::{lines, the_one_error, TestEnv};

#[test]
fn a_db_that_is_a_directory_is_said_to_be_one_by_every_command_that_opens_it() {
    let env = TestEnv::new();
    env.append(&lines(3));
    let folder = env.dir.path().join("folder.db");
    std::fs::create_dir_all(&folder).unwrap();
    let nothing = env.dir.path().join("no-transcripts");
    std::fs::create_dir_all(&nothing).unwrap();
    let commands: &[&[&str]] = &[
        &["query", "SELECT 1"],
        &["summarize"],
        &["sessions"],
        &["show", "s"],
        &["status"],
        &["gate", "report"],
        &["prune", "--days", "7"],
        &["prune", "--days", "7", "--dry-run"],
        &["export", "otlp", "--endpoint", "http://127.0.0.1:9"],
        &["import", nothing.to_str().unwrap()],
        &["ingest", "--once"],
        &["serve", "--port", "0"],
    ];
    for args in commands {
        let out = env
            .cmd()
            .arg("--db")
            .arg(&folder)
            .args(*args)
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let error = the_one_error(&out);
        assert!(
            error.contains(&format!(
                "{} is a directory, not a database file",
                folder.display()
            )),
            "{args:?}: {error}"
        );
        assert!(!error.contains("disk I/O error"), "{args:?}: {error}");
    }
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
}

/// Every `--agent` help lists the agent table's names (spelled out in the help texts, held to
/// the table by `model::agents::NAMES`'s own test).
#[test]
fn every_agent_option_lists_the_agent_tables_names() {
    let env = crate::common::TestEnv::new();
    for args in [
        &["capture", "--help"][..],
        &["sessions", "--help"],
        &["summarize", "--help"],
        &["gate", "report", "--help"],
        &["gate", "replay", "--help"],
    ] {
        let out = env.cmd().args(args).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains(cmstore::model::agents::NAMES),
            "{args:?}: {help}"
        );
    }
}
