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
