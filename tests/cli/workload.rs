//! The workload generator's payloads, fed to `cmstore capture` as a load test would.

use serde_json::Value;

use crate::common::TestEnv;
use cmstore_workload::{Dialect, Options, Workload};

#[test]
fn every_generated_payload_gives_exactly_one_clean_queue_line() {
    let env = TestEnv::new();
    let workload = Workload::new(Options {
        seed: 11,
        sessions: 4,
        garbage_per_mille: 0,
        ..Options::default()
    });
    // Up to 25 runs of each dialect (the sessions' dialects are drawn at random).
    let mut per_dialect = std::collections::HashMap::new();
    let calls = workload.take(5000).filter(|call| {
        let n = per_dialect.entry(call.dialect).or_insert(0);
        *n += 1;
        *n <= 25
    });
    let mut lines = 0;
    for call in calls {
        let stdin = call.stdin();
        env.cmd()
            .args(&call.args)
            .write_stdin(stdin.clone())
            .assert()
            .success();
        let queue = env.queue_lines();
        assert_eq!(
            queue.len(),
            lines + 1,
            "{:?} {}",
            call.args,
            String::from_utf8_lossy(&stdin)
        );
        lines += 1;
        let entry = queue.last().unwrap();
        assert!(entry.get("parseError").is_none(), "{entry}");
        assert_eq!(entry["agent"], call.dialect.agent().as_str());
        assert_eq!(entry["event"], call.event.as_str(), "{entry}");
        if let Some(input) = entry.get("toolInput").and_then(Value::as_str) {
            serde_json::from_str::<Value>(input).expect("toolInput parses");
        }
    }
    assert_eq!(lines, 25 * Dialect::ALL.len());
}

#[test]
fn broken_payloads_are_recorded_with_a_parse_error() {
    let env = TestEnv::new();
    let workload = Workload::new(Options {
        seed: 5,
        garbage_per_mille: 1000,
        ..Options::default()
    });
    for call in workload.take(12) {
        assert!(call.garbage);
        env.cmd()
            .args(&call.args)
            .write_stdin(call.stdin())
            .assert()
            .success();
    }
    let queue = env.queue_lines();
    assert_eq!(queue.len(), 12);
    assert!(queue.iter().all(|e| e.get("parseError").is_some()));
}
