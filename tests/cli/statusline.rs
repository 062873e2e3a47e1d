//! `cmstore statusline` and the spend file it reads: ingest counts what the agents spent today
//! and this week (local time) into `spend.json` beside the queue, and the status line reads it
//! and Claude Code's status payload, without the database.

use serde_json::{json, Value};

use crate::common::TestEnv;

/// A Stop line of a Claude Code session carrying `responses` responses of a priced model.
fn usage_line(ts: i64, id: &str, responses: &[(&str, u64, u64)]) -> String {
    let usage: Vec<Value> = responses
        .iter()
        .map(|(message, input, output)| {
            json!({"messageId": message, "model": "claude-sonnet-4-5", "input": input,
                   "output": output, "cacheWrite": 0, "cacheRead": 0, "ts": ts, "offset": 1})
        })
        .collect();
    json!({"hookType": "Stop", "timestamp": ts, "sessionId": "s1", "id": id, "v": 1,
           "agent": "claude", "usage": usage, "sizeBytes": 1, "estimatedTokens": 1,
           "hookExecutionMs": 0})
    .to_string()
}

#[test]
fn ingest_counts_todays_spend_and_the_status_line_shows_it() {
    let env = TestEnv::new();
    let now = chrono::Utc::now().timestamp_millis();
    env.append(&[
        usage_line(
            now - 1000,
            "01a00000-0000-7000-8000-000000000001",
            &[("m1", 100_000, 20_000)],
        ),
        usage_line(
            now - 500,
            "01a00000-0000-7000-8000-000000000002",
            &[("m2", 50_000, 1_000)],
        ),
    ]);
    env.ingest_once();
    let path = env.home().join("spend.json");
    let file: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let total = env.text("SELECT printf('%.6f', sum(cost_usd)) FROM v_usage");
    assert_eq!(
        format!("{:.6}", file["day"]["usd"].as_f64().unwrap()),
        total
    );
    assert_eq!(file["day"]["responses"], 2);
    assert_eq!(file["day"]["tokens"], 171_000);
    assert_eq!(file["week"]["usd"], file["day"]["usd"]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let dollars = format!("${:.2}", file["day"]["usd"].as_f64().unwrap());
    let out = env
        .cmd()
        .arg("statusline")
        .write_stdin(json!({"session_id": "s1", "cost": {"total_cost_usd": 0.4212}}).to_string())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("cmstore · today {dollars} · week {dollars} · session $0.42\n")
    );
    // It never opens the database: gone, the line stays the same.
    std::fs::remove_file(env.home().join("cmstore.db")).unwrap();
    let again = env.cmd().arg("statusline").output().unwrap();
    assert_eq!(
        String::from_utf8(again.stdout).unwrap(),
        format!("cmstore · today {dollars} · week {dollars}\n")
    );
    assert!(!env.home().join("cmstore.db").exists());
}

#[test]
fn without_a_spend_file_the_status_line_says_how_to_get_one() {
    let env = TestEnv::new();
    let out = env.cmd().arg("statusline").output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "cmstore · no spend yet (`cmstore ingest` counts it)\n"
    );
}

/// A following ingest writes the spend file when new usage comes in (checked every few
/// seconds), so a status line is at most that much behind the queue.
#[cfg(unix)]
#[test]
fn a_following_ingest_keeps_the_spend_file_current() {
    use std::time::{Duration, Instant};
    let env = TestEnv::new();
    let now = chrono::Utc::now().timestamp_millis();
    env.append(&[usage_line(
        now - 1000,
        "01a00000-0000-7000-8000-000000000011",
        &[("m1", 1000, 10)],
    )]);
    let mut follower = env.spawn_follow(&["--heartbeat-ms", "0"]);
    let responses = |env: &TestEnv| -> i64 {
        std::fs::read(env.home().join("spend.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["day"]["responses"].as_i64())
            .unwrap_or(0)
    };
    let wait_for = |n: i64| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while responses(&env) != n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        responses(&env)
    };
    assert_eq!(wait_for(1), 1);
    env.append(&[usage_line(
        now - 500,
        "01a00000-0000-7000-8000-000000000012",
        &[("m2", 1000, 10)],
    )]);
    assert_eq!(wait_for(2), 2, "the new response counted");
    crate::common::terminate(&follower);
    assert!(crate::common::wait_timeout(&mut follower, Duration::from_secs(20)).is_some());
}
