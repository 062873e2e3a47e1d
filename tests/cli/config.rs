//! `cmstore config check|show`, and how the other commands report configuration problems.

use predicates::str::contains;
use serde_json::Value;

use crate::common::TestEnv;

#[test]
fn a_given_config_that_does_not_exist_is_a_problem_the_default_one_is_not() {
    let env = TestEnv::new();
    let missing = env.dir.path().join("missing.toml");
    let missing = missing.to_str().unwrap();
    env.cmd()
        .args(["--config", missing, "config", "check"])
        .assert()
        .code(1)
        .stdout(contains("problem:"))
        .stdout(contains("does not exist"));
    let out = env
        .cmd()
        .args(["--config", missing, "status", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = doc["config_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].as_str().unwrap().contains("does not exist"));

    // The default path, absent, is no problem.
    env.cmd()
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(contains("absent: defaults apply"));
}
