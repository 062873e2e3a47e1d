//! Continuous export from a running `cmstore ingest` with `[export.otlp]` configured: events
//! reach the collector as they are ingested; a collector that is down leaves a backlog in the
//! store and gets everything once up; kill -9 skips nothing and resends at most one batch.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::common::{entry, wait_timeout, Rng, TestEnv};
use crate::otlp_collector::{attr, closed_port, Answer, Collector};

fn configure(env: &TestEnv, base: &str, batch: usize) {
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        format!("[export.otlp]\nendpoint = \"{base}\"\nbatch_events = {batch}\n"),
    )
    .unwrap();
}

/// `n` finished tool calls (one span each), their event ids returned.
fn tool_calls(env: &TestEnv, session: &str, n: usize) -> Vec<String> {
    let entries: Vec<_> = (0..n)
        .map(|i| {
            let mut e = entry("PostToolUse", session);
            e.tool_call_id = Some(format!("{session}-{i}"));
            e.duration_ms = Some(5);
            e
        })
        .collect();
    env.append(&entries.iter().map(|e| e.to_line()).collect::<Vec<_>>());
    entries.into_iter().map(|e| e.id).collect()
}

/// How often each event id reached the collector.
fn counts(collector: &Collector) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for span in collector.spans() {
        *counts
            .entry(attr(&span, "cmstore.event.id").unwrap())
            .or_insert(0) += 1;
    }
    counts
}

fn stop(mut ingest: std::process::Child) -> String {
    crate::common::terminate(&ingest);
    assert!(wait_timeout(&mut ingest, Duration::from_secs(30)).is_some());
    let mut err = String::new();
    std::io::Read::read_to_string(ingest.stderr.as_mut().unwrap(), &mut err).unwrap();
    err
}

#[cfg(unix)]
#[test]
fn a_running_ingest_exports_what_it_ingests() {
    let env = TestEnv::new();
    let collector = Collector::start();
    configure(&env, &collector.base(), 50);
    let ingest = env.spawn_follow(&["--poll-ms", "50"]);
    let ids = tool_calls(&env, "s1", 30);
    assert_eq!(collector.wait_spans(30, Duration::from_secs(30)), 30);
    let err = stop(ingest);
    assert!(err.contains("exported 30 events as 30 spans"), "{err}");
    assert_eq!(counts(&collector).keys().cloned().collect::<Vec<_>>(), {
        let mut ids = ids;
        ids.sort();
        ids
    });
}

#[cfg(unix)]
#[test]
fn a_collector_down_leaves_a_backlog_in_the_store_and_ingest_goes_on() {
    let env = TestEnv::new();
    let port = closed_port();
    configure(&env, &format!("http://127.0.0.1:{port}"), 20);
    let ingest = env.spawn_follow(&["--poll-ms", "50"]);
    let ids = tool_calls(&env, "s1", 100);
    // Ingest is not held up by the export.
    assert_eq!(
        env.wait_for("SELECT count(*) FROM events", 100, Duration::from_secs(30)),
        100
    );
    // Long enough for the export to have tried (it looks every 500 ms) and failed.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        env.int("SELECT count(*) FROM export_cursors"),
        0,
        "nothing acknowledged"
    );
    let collector = Collector::on_port(port, &[]);
    assert_eq!(collector.wait_spans(100, Duration::from_secs(40)), 100);
    let err = stop(ingest);
    assert!(err.contains("trying again"), "the retries are said: {err}");
    let counts = counts(&collector);
    assert_eq!(counts.len(), ids.len(), "nothing lost");
    assert!(counts.values().all(|n| *n == 1), "nothing doubled");
}

#[cfg(unix)]
#[test]
fn kill_9_during_export_skips_nothing_and_resends_at_most_one_batch_per_kill() {
    const BATCH: usize = 10;
    let env = TestEnv::new();
    let collector = Collector::start();
    // A slow collector, so kills land while requests are in flight.
    collector.answer_always(Answer {
        delay: Duration::from_millis(30),
        ..Answer::status(200)
    });
    configure(&env, &collector.base(), BATCH);
    let mut ids = Vec::new();
    let mut rng = Rng::new(19);
    let mut kills = 0;
    for round in 0..6 {
        ids.extend(tool_calls(&env, &format!("s{round}"), 40));
        let mut ingest = env.spawn_follow(&["--poll-ms", "20"]);
        std::thread::sleep(Duration::from_millis(100 + rng.below(400)));
        ingest.kill().expect("kill -9");
        ingest.wait().unwrap();
        kills += 1;
    }
    let ingest = env.spawn_follow(&["--poll-ms", "20"]);
    // Caught up: the cursor at the newest event (a killed run may have delivered the last
    // batch without moving the cursor; this run then sends it again).
    assert_eq!(
        env.wait_for(
            "SELECT coalesce((SELECT seq FROM export_cursors) = (SELECT max(seq) FROM events), 0)",
            1,
            Duration::from_secs(60)
        ),
        1
    );
    stop(ingest);
    let counts = counts(&collector);
    let missing: Vec<_> = ids.iter().filter(|id| !counts.contains_key(*id)).collect();
    assert!(
        missing.is_empty(),
        "{} events never exported",
        missing.len()
    );
    let resent: usize = counts.values().map(|n| n - 1).sum();
    assert!(
        resent <= kills * BATCH,
        "{resent} spans resent after {kills} kills, batches of {BATCH}"
    );
}
