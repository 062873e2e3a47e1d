//! `cmstore prune`: retention by age, dry runs, the retention fallback, and pruning and queue
//! compaction while hooks and ingest keep going.

#[cfg(unix)]
use std::collections::HashMap;
#[cfg(unix)]
use std::io::Write;
#[cfg(unix)]
use std::process::{Child, Stdio};
use std::time::Duration;

use sha2::{Digest, Sha256};

use serde_json::json;

use crate::common::now_ms as now;
use crate::common::{capture, entry, read_lines, the_one_error, TestEnv};

const DAY: i64 = 86_400_000;

/// `n` lines of `hook` in session `session`, `days` days old (spread over a few ms).
fn aged(n: usize, session: &str, days: i64) -> Vec<String> {
    let base = now() - days * DAY;
    (0..n)
        .map(|i| {
            let hook = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"][i % 4];
            let mut e = entry(hook, session);
            e.timestamp = base + i as i64;
            if hook.contains("Tool") {
                e.tool_call_id = Some(format!("{session}-c{}", i / 4));
            }
            if hook == "Stop" {
                e.turn_id = Some(format!("{session}-t{i}"));
            }
            e.to_line()
        })
        .collect()
}

fn hash(path: &std::path::Path) -> String {
    Sha256::digest(std::fs::read(path).unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn prune(env: &TestEnv, args: &[&str]) -> String {
    let out = env.cmd().arg("prune").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "prune {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The number `prune` printed for `table`.
fn removed(report: &str, table: &str) -> i64 {
    report
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix(table)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no {table} in {report}"))
}

#[test]
fn prune_then_ingest_brings_nothing_back() {
    let env = TestEnv::new();
    env.append(&aged(40, "old", 10));
    env.append(&aged(12, "new", 1));
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM events"), 52);
    let offset = env.int("SELECT offset FROM sources");

    let report = prune(&env, &["--days", "7"]);
    assert_eq!(removed(&report, "events"), 40);
    assert_eq!(removed(&report, "tool_calls"), 10);
    assert_eq!(removed(&report, "turns"), 10);
    assert_eq!(removed(&report, "sessions"), 1);
    assert!(report.contains("longest write lock"), "{report}");
    assert_eq!(env.int("SELECT count(*) FROM events"), 12);
    assert_eq!(
        env.int("SELECT count(*) FROM sessions WHERE session_id = 'old'"),
        0
    );
    assert_eq!(
        env.int("SELECT offset FROM sources"),
        offset,
        "offsets untouched"
    );

    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events"),
        12,
        "nothing came back"
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'old'"),
        0
    );
    // Pages went back to the file system and the WAL was truncated.
    assert_eq!(env.int("PRAGMA freelist_count"), 0);
    assert!(
        report.contains("returned by incremental vacuum"),
        "{report}"
    );
}

#[test]
fn pruning_everything_does_not_make_ingest_skip_lines_written_later() {
    let env = TestEnv::new();
    env.append(&aged(8, "old", 10));
    env.ingest_once();
    let cutoff = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let report = prune(&env, &["--before", &cutoff]);
    assert_eq!(removed(&report, "events"), 8);
    // A line stamped a minute before that cutoff (a hook that wrote late, a harvested turn)
    // but newer than anything the store held.
    let mut late = entry("Notification", "late");
    late.timestamp = now() - 60_000;
    env.append(&[late.to_line()]);
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'late'"),
        1
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events"),
        1,
        "nothing came back"
    );
}

#[test]
fn dry_run_changes_nothing() {
    let env = TestEnv::new();
    env.append(&aged(30, "old", 9));
    env.append(&aged(5, "new", 0));
    env.ingest_once();
    // Settle the WAL so that the main file holds everything before hashing it.
    prune(&env, &["--days", "30"]);
    let (db, queue) = (hash(&env.db()), hash(&env.queue()));
    let report = prune(&env, &["--days", "7", "--dry-run", "--compact-queue"]);
    assert!(report.contains("would remove"), "{report}");
    assert_eq!(removed(&report, "events"), 30);
    assert_eq!(removed(&report, "queue lines"), 30);
    assert!(report.contains("nothing changed"));
    assert_eq!(hash(&env.db()), db);
    assert_eq!(hash(&env.queue()), queue);
    assert_eq!(env.int("SELECT count(*) FROM events"), 35);
    // The real run removes exactly what the dry run announced.
    let real = prune(&env, &["--days", "7"]);
    assert_eq!(removed(&real, "events"), 30);
}

#[test]
fn the_retention_falls_back_to_seven_days_with_a_warning() {
    let env = TestEnv::new();
    env.append(&aged(4, "eight", 8));
    env.append(&aged(4, "six", 6));
    env.ingest_once();
    let out = env
        .cmd()
        .env("CMSTORE_RETENTION_DAYS", "abc")
        .args(["prune", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning") && stderr.contains("CMSTORE_RETENTION_DAYS"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("keeping 7 days"), "{stdout}");
    assert_eq!(removed(&stdout, "events"), 4);

    for bad in ["0", "-3"] {
        let out = env
            .cmd()
            .env("CMSTORE_RETENTION_DAYS", bad)
            .args(["prune", "--dry-run"])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).contains("warning"));
        assert!(String::from_utf8_lossy(&out.stdout).contains("keeping 7 days"));
    }
    // A valid value is used, from the environment or the config file.
    let out = env
        .cmd()
        .env("CMSTORE_RETENTION_DAYS", "5")
        .args(["prune"])
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(removed(&String::from_utf8_lossy(&out.stdout), "events"), 8);
    assert_eq!(env.int("SELECT count(*) FROM events"), 0);
}

/// Starts `cmstore capture` for a Notification of session `session`.
#[cfg(unix)]
fn spawn_capture(env: &TestEnv, session: &str) -> Child {
    let mut child = env
        .std_cmd()
        .arg("capture")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let input =
        format!(r#"{{"session_id":"{session}","hook_event_name":"Notification","message":"m"}}"#);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child
}

/// In `writers` scoped threads, each running `per` captures one after another (sessions
/// `w<writer>-<n>`), runs `during` meanwhile and returns what it returned.
#[cfg(unix)]
fn with_capture_storm<T>(
    env: &TestEnv,
    writers: usize,
    per: usize,
    during: impl FnOnce() -> T,
) -> T {
    std::thread::scope(|scope| {
        for w in 0..writers {
            scope.spawn(move || {
                for j in 0..per {
                    let status = spawn_capture(env, &format!("w{w}-{j}")).wait().unwrap();
                    assert!(status.success());
                }
            });
        }
        during()
    })
}

#[test]
#[cfg(unix)]
fn prune_while_capture_and_ingest_run_loses_nothing_new() {
    let env = TestEnv::new();
    env.append(&aged(6000, "old", 10));
    env.append(&aged(40, "recent", 1));
    env.ingest_once();
    let mut ingest = env.spawn_follow(&["--poll-ms", "20"]);
    let report = with_capture_storm(&env, 4, 15, || {
        prune(&env, &["--days", "7", "--batch-rows", "500"])
    });
    assert_eq!(removed(&report, "events"), 6000);
    let lines = read_lines(&env.queue());
    let want = lines.len() as i64 - 6000;
    let got = env.wait_for("SELECT count(*) FROM events", want, Duration::from_secs(30));
    crate::common::terminate(&ingest);
    crate::common::wait_timeout(&mut ingest, Duration::from_secs(10)).expect("ingest exits");
    assert_eq!(got, want);
    let conn = env.conn();
    for line in lines
        .iter()
        .filter(|l| l["timestamp"].as_i64().unwrap() > now() - 7 * DAY)
    {
        let id = line["id"].as_str().unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM events WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 1, "{id} is stored exactly once");
    }
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id LIKE 'w%'"),
        60
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'old'"),
        0
    );
}

#[test]
#[cfg(unix)]
fn compaction_while_eight_captures_append_loses_no_line() {
    let env = TestEnv::new();
    let old = aged(3000, "old", 10);
    let kept = aged(200, "kept", 2);
    env.append(&old);
    env.append(&kept);
    env.ingest_once();
    let unread = aged(50, "unread", 20);
    env.append(&unread);

    let report = with_capture_storm(&env, 8, 12, || {
        std::thread::sleep(Duration::from_millis(100));
        prune(&env, &["--days", "7", "--compact-queue"])
    });
    // The unread old lines were ingested (prune drains the queue first), then pruned.
    assert_eq!(removed(&report, "events"), 3050, "{report}");
    assert_eq!(removed(&report, "queue lines"), 3050, "{report}");
    assert!(report.contains("lock held"), "{report}");
    assert!(!cmstore::write::prune::queue::temp_path(&env.queue()).exists());

    // The queue keeps every line but the 3000 old ingested ones, each once.
    let lines = read_lines(&env.queue());
    let mut per_session: HashMap<String, usize> = HashMap::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    for l in &lines {
        *per_session
            .entry(l["sessionId"].as_str().unwrap().to_owned())
            .or_default() += 1;
        *ids.entry(l["id"].as_str().unwrap().to_owned()).or_default() += 1;
    }
    assert!(ids.values().all(|&n| n == 1), "no line doubled");
    assert_eq!(per_session.get("old"), None);
    assert_eq!(per_session["kept"], 200);
    assert_eq!(per_session.get("unread"), None);
    for w in 0..8 {
        for j in 0..12 {
            assert_eq!(per_session.get(&format!("w{w}-{j}")), Some(&1), "w{w}-{j}");
        }
    }
    assert_eq!(lines.len(), 200 + 96);

    // Ingest goes on from the right offset: every line in the DB exactly once.
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM events"), 200 + 96);
    let conn = env.conn();
    for id in ids.keys() {
        let n: i64 = conn
            .query_row("SELECT count(*) FROM events WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 1, "{id}");
    }
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_why = 'compacted'"),
        1
    );
    let size = std::fs::metadata(env.queue()).unwrap().len() as i64;
    assert_eq!(
        env.int("SELECT offset FROM sources WHERE retired_at IS NULL"),
        size
    );
}

/// A transcript cursor of a session idle for ten days, which prune removes.
fn idle_cursor(env: &TestEnv) -> std::path::PathBuf {
    let state = env.home().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let cursor = state.join("idle.json");
    let file = std::fs::File::create(&cursor).unwrap();
    let ten_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
    file.set_modified(ten_days_ago).unwrap();
    cursor
}

#[test]
#[cfg(unix)]
fn compaction_while_ingest_follows_the_queue_loses_and_doubles_nothing() {
    let env = TestEnv::new();
    env.append(&aged(3000, "old", 10));
    env.append(&aged(200, "kept", 2));
    let cursor = idle_cursor(&env);
    let mut ingest = env.spawn_follow(&["--poll-ms", "20"]);
    let wait = Duration::from_secs(30);
    assert_eq!(
        env.wait_for("SELECT count(*) FROM events", 3200, wait),
        3200
    );

    // Hooks keep appending and ingest keeps following while the queue is compacted.
    let report = with_capture_storm(&env, 4, 10, || {
        std::thread::sleep(Duration::from_millis(100));
        prune(&env, &["--days", "7", "--compact-queue"])
    });
    assert_eq!(removed(&report, "events"), 3000, "{report}");
    assert_eq!(removed(&report, "queue lines"), 3000, "{report}");
    assert!(!cursor.exists(), "the idle cursor went");
    env.append(&aged(20, "after", 0));
    let want = 200 + 40 + 20;
    let got = env.wait_for("SELECT count(*) FROM events", want, wait);
    crate::common::terminate(&ingest);
    crate::common::wait_timeout(&mut ingest, Duration::from_secs(10)).expect("ingest exits");
    assert_eq!(got, want);

    // The queue holds every line but the old ones, once; the store holds each of them once.
    let lines = read_lines(&env.queue());
    assert_eq!(lines.len() as i64, want);
    let conn = env.conn();
    for line in &lines {
        let id = line["id"].as_str().unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM events WHERE id = ?1", [id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(n, 1, "{id}");
    }
    // Ingest went on from where compaction put it: it never read the new file from its start.
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_at IS NOT NULL"),
        1
    );
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_why = 'compacted'"),
        1
    );
    let size = std::fs::metadata(env.queue()).unwrap().len() as i64;
    assert_eq!(
        env.int("SELECT offset FROM sources WHERE retired_at IS NULL"),
        size
    );
}

#[test]
fn a_second_compaction_refuses_before_changing_anything() {
    let env = TestEnv::new();
    env.append(&aged(5, "old", 10));
    env.ingest_once();
    let cursor = idle_cursor(&env);
    // Another `prune --compact-queue` holds the compaction lock.
    let lock = env.home().join("hook-queue.jsonl.compact.lock");
    let _held = cmstore::files::lock::exclusive(&lock, Duration::ZERO)
        .unwrap()
        .expect("free lock");
    let before = hash(&env.queue());
    let events = env.int("SELECT count(*) FROM events");
    env.cmd()
        .args(["prune", "--days", "7", "--compact-queue"])
        .assert()
        .code(3)
        .stderr(predicates::str::contains("nothing was changed"));
    assert_eq!(hash(&env.queue()), before);
    assert!(cursor.exists(), "no cursor removed");
    assert_eq!(env.int("SELECT count(*) FROM events"), events);
}

#[test]
fn without_a_database_there_is_nothing_to_prune() {
    let env = TestEnv::new();
    env.cmd()
        .args(["prune"])
        .assert()
        .success()
        .stdout(predicates::str::contains("nothing to prune"));
    assert!(!env.db().exists());
}

#[test]
fn lines_beyond_the_offset_are_kept_however_old() {
    let env = TestEnv::new();
    env.append(&aged(20, "old", 10));
    env.ingest_once();
    env.append(&aged(7, "unread", 30));
    let store = cmstore::store::open(&env.db()).unwrap();
    let c = cmstore::write::prune::queue::compact(&store, &env.queue(), now() - 7 * DAY, false)
        .unwrap();
    assert_eq!((c.dropped_lines, c.kept_lines), (20, 0));
    let lines = read_lines(&env.queue());
    assert_eq!(lines.len(), 7);
    assert!(lines.iter().all(|l| l["sessionId"] == "unread"));
    assert_eq!(
        env.int("SELECT offset FROM sources WHERE retired_at IS NULL"),
        0
    );
    drop(store);
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'unread'"),
        7
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events"),
        27,
        "nothing read twice"
    );
}

#[test]
fn beside_a_running_ingest_the_last_ingested_event_line_stays_however_old() {
    let env = TestEnv::new();
    let old = aged(5, "old", 10);
    env.append(&old);
    env.ingest_once();
    // Ingest may record a rejected line after the last line compaction knows ingested, from
    // the old file: that line must stay, or the rejected one would follow another in the new
    // file (another key: a re-read would record it twice).
    let store = cmstore::store::open(&env.db()).unwrap();
    let c =
        cmstore::write::prune::queue::compact(&store, &env.queue(), now() - 7 * DAY, true).unwrap();
    assert_eq!((c.dropped_lines, c.kept_lines), (4, 1));
    assert_eq!(
        std::fs::read_to_string(env.queue()).unwrap(),
        format!("{}\n", old[4])
    );
    drop(store);
    env.append_raw(b"garbage after it\n");
    env.ingest_once();
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 1);
    assert_eq!(env.int("SELECT count(DISTINCT id) FROM events"), 5);
    assert_eq!(env.int("SELECT count(*) FROM events"), 5);
}

#[test]
fn a_crash_between_rename_and_source_update_loses_and_doubles_nothing() {
    let env = TestEnv::new();
    let new = aged(10, "new", 1);
    env.append(&aged(10, "old", 10));
    env.append(&new);
    env.ingest_once();
    // What compaction renames over the queue (kept lines, then a line appended meanwhile),
    // with the process dying before it records the new file in `sources`.
    let late = aged(3, "late", 0);
    let text: String = new.iter().chain(&late).map(|l| format!("{l}\n")).collect();
    let temp = cmstore::write::prune::queue::temp_path(&env.queue());
    std::fs::write(&temp, text).unwrap();
    std::fs::rename(&temp, env.queue()).unwrap();
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events"),
        23,
        "the late lines, nothing twice"
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'late'"),
        3
    );
    assert_eq!(env.int("SELECT count(DISTINCT id) FROM events"), 23);
}

/// `lines` as queue bytes, each with its newline.
fn joined(lines: &[&str]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect()
}

#[test]
fn a_crash_between_rename_and_source_update_records_no_reject_twice() {
    let env = TestEnv::new();
    let (old, new) = (aged(6, "old", 10), aged(4, "new", 1));
    env.append_raw(&joined(&[
        "garbage before any event",
        &old[0],
        &old[1],
        "garbage after an old line",
        &old[2],
        &old[3],
        &old[4],
        &old[5],
        &new[0],
        "garbage after a new line",
        "garbage after a new line",
        &new[1],
        &new[2],
        "[\"not an object\"]",
        &new[3],
    ]));
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 5);
    // Compact, then put `sources` back as it was before step 4: a crash right after the
    // rename leaves the old row live, and ingest takes the new file for another one.
    let report = prune(&env, &["--days", "7", "--compact-queue"]);
    let rw = env.rw();
    rw.execute_batch(
        "DELETE FROM sources WHERE retired_at IS NULL;
         UPDATE sources SET retired_at = NULL, retired_why = NULL WHERE retired_why = 'compacted';",
    )
    .unwrap();
    drop(rw);
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .success()
        .stderr(predicates::str::contains("0 rows, 8 duplicates, 0 rejects"));
    assert_eq!(
        env.int("SELECT count(*) FROM rejects"),
        4,
        "one went with its old line"
    );
    assert_eq!(env.int("SELECT count(*) FROM events"), 4);
    assert_eq!(
        removed(&report, "queue lines"),
        7,
        "the old lines and the garbage after one"
    );
}

#[test]
fn rejected_lines_go_with_the_line_before_them_and_do_not_come_back() {
    let env = TestEnv::new();
    let (old, new) = (aged(3, "old", 10), aged(2, "new", 1));
    env.append_raw(&joined(&[
        "garbage before any event",
        &old[0],
        &old[1],
        "garbage after an old line",
        &old[2],
        &new[0],
        "garbage after a new line",
        &new[1],
    ]));
    env.ingest_once();
    let report = prune(&env, &["--days", "7"]);
    assert_eq!(removed(&report, "rejects"), 1, "{report}");
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM rejects"),
        2,
        "the old one stays pruned"
    );
    assert_eq!(env.int("SELECT count(*) FROM events"), 2);

    // Everything goes: the rejected line before any event line has only the time it was
    // ingested, which no watermark covers, so its key is remembered instead.
    let report = prune(&env, &["--before", "0m", "--compact-queue"]);
    assert_eq!(removed(&report, "rejects"), 2, "{report}");
    // The queue keeps what it cannot date: the rejected line at its start.
    let queue = std::fs::read_to_string(env.queue()).unwrap();
    assert_eq!(queue, "garbage before any event\n");
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM rejects"),
        0,
        "nothing came back"
    );
    assert_eq!(env.int("SELECT count(*) FROM events"), 0);
}

#[test]
fn lines_without_a_time_do_not_come_back_after_prune() {
    let env = TestEnv::new();
    // ContextManager's older lines and other producers' may carry no time at all: the store
    // dates them by their ingest. One with an id, one keyed by the hash of its bytes.
    let undated = [
        r#"{"id":"u-1","hookType":"Notification","sessionId":"undated","message":"a"}"#,
        r#"{"hookType":"Notification","sessionId":"undated","message":"b"}"#,
    ];
    let new = aged(3, "new", 1);
    env.append_raw(&joined(&[
        undated[0], &new[0], undated[1], &new[1], &new[2],
    ]));
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'undated'"),
        2
    );
    // Ten days on for them: prune deletes them.
    env.rw()
        .execute_batch(&format!(
            "UPDATE events SET ts = ts - 10 * {DAY}, ingested_at = ingested_at - 10 * {DAY}
              WHERE session_id = 'undated';
             UPDATE sessions SET first_seen = first_seen - 10 * {DAY},
                                 last_seen = last_seen - 10 * {DAY}
              WHERE session_id = 'undated';"
        ))
        .unwrap();
    let report = prune(&env, &["--days", "7"]);
    assert_eq!(removed(&report, "events"), 2, "{report}");
    // The queue read again from its start must not bring them back.
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'undated'"),
        0,
        "pruned lines without a time came back"
    );
    assert_eq!(env.int("SELECT count(*) FROM events"), 3);
    // Compaction lets them leave the queue, and the store forgets them.
    let report = prune(&env, &["--days", "7", "--compact-queue"]);
    assert_eq!(removed(&report, "queue lines"), 2, "{report}");
    assert!(read_lines(&env.queue())
        .iter()
        .all(|l| l["sessionId"] == "new"));
    assert_eq!(env.int("SELECT count(*) FROM pruned_lines"), 0);
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM events"), 3);
}

#[test]
fn a_temp_file_left_by_a_crash_before_the_rename_is_overwritten() {
    let env = TestEnv::new();
    env.append(&aged(10, "old", 10));
    env.append(&aged(4, "new", 1));
    env.ingest_once();
    let temp = cmstore::write::prune::queue::temp_path(&env.queue());
    std::fs::write(&temp, "half a stale copy").unwrap();
    let report = prune(&env, &["--compact-queue"]);
    assert_eq!(removed(&report, "queue lines"), 10);
    assert!(!temp.exists());
    let lines = read_lines(&env.queue());
    assert_eq!(lines.len(), 4);
    assert!(lines.iter().all(|l| l["sessionId"] == "new"));
}

#[test]
#[cfg(unix)]
fn compacting_a_queue_reached_through_a_symlink_keeps_the_link() {
    // The queue kept elsewhere (another disk, say) and linked from the usual place.
    let env = TestEnv::new();
    let real = env.link_queue_elsewhere();
    let old = aged(10, "old", 10);
    env.append(&old);
    env.append(&aged(4, "new", 1));
    env.ingest_once();
    // The extension's place sits beside the link it knows, after the old lines.
    let offset_file = env.home().join(".queue-offset");
    let read: usize = old.iter().map(|l| l.len() + 1).sum();
    std::fs::write(&offset_file, read.to_string()).unwrap();

    let report = prune(&env, &["--days", "7", "--compact-queue"]);
    assert_eq!(std::fs::read_to_string(&offset_file).unwrap(), "0");
    assert_eq!(removed(&report, "queue lines"), 10);
    let link = std::fs::symlink_metadata(env.queue()).unwrap();
    assert!(link.file_type().is_symlink(), "the link became {link:?}");
    let lines = read_lines(&real);
    assert_eq!(lines.len(), 4, "the target is the file compacted");
    assert!(lines.iter().all(|l| l["sessionId"] == "new"));
    assert!(!cmstore::write::prune::queue::temp_path(&real).exists());
    assert!(!cmstore::write::prune::queue::temp_path(&env.queue()).exists());

    // Hooks and ingest go on through the link: nothing lost, nothing read twice.
    env.append(&aged(2, "later", 0));
    env.ingest_once();
    assert_eq!(read_lines(&real).len(), 6);
    assert_eq!(env.int("SELECT count(*) FROM events"), 6);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'later'"),
        2
    );
}

#[test]
fn compaction_moves_the_extensions_place_to_the_same_line() {
    let env = TestEnv::new();
    let (old, new) = (aged(10, "old", 10), aged(4, "new", 1));
    env.append(&old);
    env.append(&new);
    env.ingest_once();
    let unread = aged(2, "unread", 0);
    env.append(&unread);
    // The ContextManager extension has read the old lines and two of the new ones.
    let bytes = |lines: &[String]| lines.iter().map(|l| l.len() as u64 + 1).sum::<u64>();
    let place = bytes(&old) + bytes(&new[..2]);
    let offset_file = env.home().join(".queue-offset");
    std::fs::write(&offset_file, format!("{place}\n")).unwrap();

    let report = prune(&env, &["--days", "7", "--compact-queue"]);
    let moved: u64 = std::fs::read_to_string(&offset_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(moved, bytes(&new[..2]));
    assert!(
        report.contains(&format!("byte {place} -> {moved}")),
        "{report}"
    );
    // What it reads next is what it would have read next.
    let queue = std::fs::read_to_string(env.queue()).unwrap();
    let next: String = new[2..]
        .iter()
        .chain(&unread)
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(&queue[moved as usize..], next);
}

#[test]
fn an_unreadable_extension_offset_is_left_as_it_is() {
    let env = TestEnv::new();
    env.append(&aged(10, "old", 10));
    env.append(&aged(4, "new", 1));
    env.ingest_once();
    let offset_file = env.home().join(".queue-offset");
    std::fs::write(&offset_file, "not a number").unwrap();
    let report = prune(&env, &["--days", "7", "--compact-queue"]);
    assert_eq!(removed(&report, "queue lines"), 10);
    assert_eq!(
        std::fs::read_to_string(&offset_file).unwrap(),
        "not a number"
    );
    assert!(!report.contains("ContextManager's place"), "{report}");
}

#[test]
fn the_configured_retention_is_the_one_prune_uses() {
    // vstack's B-B5: a configured retention that one of its two pruners never read.
    let env = TestEnv::new();
    env.append(&aged(3, "four", 4));
    env.append(&aged(2, "two", 2));
    env.ingest_once();
    std::fs::write(env.home().join("cmstore.toml"), "retention_days = 3\n").unwrap();
    let report = prune(&env, &[]);
    assert!(report.contains("keeping 3 days"), "{report}");
    assert_eq!(removed(&report, "events"), 3);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'two'"),
        2
    );
}

#[test]
fn prune_removes_transcript_cursors_of_idle_sessions() {
    let env = TestEnv::new();
    let state = env.home().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let ten_days_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
    for (name, old) in [
        ("idle.json", true),
        ("idle.lock", true),
        ("live.json", false),
        ("live.lock", false),
    ] {
        let file = std::fs::File::create(state.join(name)).unwrap();
        if old {
            file.set_modified(ten_days_ago).unwrap();
        }
    }
    let out = env
        .cmd()
        .args(["prune", "--days", "7", "--dry-run"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("cursors of sessions idle since the cutoff: 1 would be removed"));
    assert!(state.join("idle.json").exists());
    env.cmd().args(["prune", "--days", "7"]).assert().success();
    assert!(!state.join("idle.json").exists());
    assert!(!state.join("idle.lock").exists());
    assert!(state.join("live.json").exists());
    assert!(state.join("live.lock").exists());
}

#[test]
fn pruned_events_do_not_come_back_when_the_queue_is_read_again_from_its_start() {
    let env = TestEnv::new();
    let now = crate::common::now_ms();
    let mut lines = Vec::new();
    for i in 0..20 {
        let mut e = entry("PreToolUse", "old-s");
        e.timestamp = now - 10 * 86_400_000 - i;
        lines.push(e.to_line());
    }
    lines.extend((0..5).map(|_| entry("Stop", "new-s").to_line()));
    env.append(&lines);
    env.ingest_once();
    env.cmd().args(["prune", "--days", "7"]).assert().success();
    assert_eq!(env.int("SELECT count(*) FROM events"), 5);
    // The queue is replaced by a copy holding the same lines (a rotation restored, a sync
    // tool rewriting it): ingest sees a new file and reads it from 0.
    // It starts with a line of its own, so its identity differs from the old queue.
    let mut text = format!("{}\n", entry("Stop", "newer-s").to_line()).into_bytes();
    text.extend(std::fs::read(env.queue()).unwrap());
    std::fs::remove_file(env.queue()).unwrap();
    std::fs::write(env.queue(), &text).unwrap();
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'old-s'"),
        0,
        "nothing comes back"
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events"),
        6,
        "the new line is stored"
    );
    assert_eq!(env.int("SELECT count(DISTINCT id) FROM events"), 6);
}

#[test]
fn a_missing_config_file_given_to_prune_deletes_nothing() {
    // The default retention (7 days) must not stand in for a file that says 30.
    let env = TestEnv::new();
    env.append(&aged(2, "ten", 10));
    env.ingest_once();
    let missing = env.home().join("no-such.toml");
    let out = env
        .cmd()
        .arg("--config")
        .arg(&missing)
        .arg("prune")
        .output()
        .unwrap();
    let error = the_one_error(&out);
    let said = format!("--config {}: does not exist", missing.display());
    assert!(error.contains(&said), "{error}");
    assert_eq!(env.int("SELECT count(*) FROM events"), 2);
    // With the retention given, the path is still wrong: a mistake to fix, as for every
    // command but capture.
    let out = env
        .cmd()
        .arg("--config")
        .arg(&missing)
        .args(["prune", "--days", "7"])
        .output()
        .unwrap();
    assert!(the_one_error(&out).contains(&said));
    assert_eq!(env.int("SELECT count(*) FROM events"), 2);
    prune(&env, &["--days", "7"]);
    assert_eq!(env.int("SELECT count(*) FROM events"), 0);
}

#[test]
fn a_cutoff_in_the_future_is_refused_and_nothing_goes() {
    let env = TestEnv::new();
    env.append(&aged(4, "old", 10));
    env.append(&aged(4, "new", 0));
    env.ingest_once();
    for args in [
        &["--before", "2999-01-01"][..],
        &["--before", "2999-01-01", "--dry-run"],
        &["--before", "2999-01-01", "--compact-queue"],
    ] {
        let out = env.cmd().arg("prune").args(args).output().unwrap();
        let error = the_one_error(&out);
        assert!(error.contains("--before 2999-01-01"), "{args:?}: {error}");
        assert!(error.contains("is in the future"), "{args:?}: {error}");
        assert!(error.contains("--before 0m"), "{args:?}: {error}");
    }
    assert_eq!(env.int("SELECT count(*) FROM events"), 8);
    // The present is not the future: everything up to now goes, when asked for.
    let report = prune(&env, &["--before", "0m"]);
    assert_eq!(removed(&report, "events"), 8, "{report}");
}

#[test]
fn a_cutoff_before_1970_is_refused_and_nothing_goes() {
    let env = TestEnv::new();
    env.append(&aged(4, "old", 10));
    env.ingest_once();
    for (args, said) in [
        (&["--days", "4294967295"][..], "--days 4294967295"),
        (&["--before", "1969-12-31"], "--before 1969-12-31"),
        (&["--days", "4294967295", "--dry-run"], "--days 4294967295"),
    ] {
        let out = env.cmd().arg("prune").args(args).output().unwrap();
        let error = the_one_error(&out);
        assert!(error.contains(said), "{args:?}: {error}");
        assert!(error.contains("before 1970"), "{args:?}: {error}");
    }
    assert_eq!(env.int("SELECT count(*) FROM events"), 4);
}

/// A `hook` line of the Bash call `call` (`make <call>`) in `session`, at `ts`; with `call` as its
/// id when `keyed`, else paired by session, tool and input.
fn call_half(hook: &str, session: &str, call: &str, keyed: bool, ts: i64) -> String {
    let mut e = entry(hook, session);
    e.timestamp = ts;
    e.tool_call_id = keyed.then(|| call.to_string());
    e.tool_input = Some(format!(r#"{{"command":"make {call}"}}"#));
    e.to_line()
}

/// `(calls, succeeded, unfinished)` of `session`'s Bash totals, and its `tool_calls` rows.
fn bash_totals(env: &TestEnv, session: &str) -> ((i64, i64, i64), i64) {
    let totals = env
        .conn()
        .query_row(
            "SELECT calls, succeeded, unfinished FROM session_tools
             WHERE session_id = ?1 AND tool_name = 'Bash'",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap_or_else(|e| panic!("{session}: {e}"));
    let rows = env
        .conn()
        .query_row(
            "SELECT count(*) FROM tool_calls WHERE session_id = ?1",
            [session],
            |r| r.get(0),
        )
        .unwrap();
    (totals, rows)
}

#[test]
fn a_tool_call_straddling_the_cutoff_counts_once_and_finishes() {
    let env = TestEnv::new();
    let (old, recent) = (now() - 10 * DAY, now() - DAY);
    // Each session: call A starts before the cutoff and is still running when prune runs;
    // call B, of the same tool, ran since. With a call id, and without (paired in order).
    for (session, keyed) in [("keyed", true), ("paired", false)] {
        env.append(&[
            call_half("PreToolUse", session, "a", keyed, old),
            call_half("PreToolUse", session, "b", keyed, recent),
            call_half("PostToolUse", session, "b", keyed, recent + 5),
        ]);
    }
    // A session idle since: its running call goes with its totals.
    env.append(&[call_half("PreToolUse", "idle", "c", true, old)]);
    env.ingest_once();

    let dry = prune(&env, &["--days", "7", "--dry-run"]);
    let report = prune(&env, &["--days", "7"]);
    assert_eq!(
        removed(&dry, "tool_calls"),
        removed(&report, "tool_calls"),
        "{dry}\n{report}"
    );
    assert_eq!(removed(&report, "tool_calls"), 1, "{report}");
    assert_eq!(removed(&report, "session_tools"), 1, "{report}");

    // Their results come after the cutoff.
    let late = now();
    env.append(&[
        call_half("PostToolUse", "keyed", "a", true, late),
        call_half("PostToolUse", "paired", "a", false, late),
        call_half("PostToolUse", "idle", "c", true, late),
    ]);
    env.ingest_once();
    for session in ["keyed", "paired"] {
        assert_eq!(
            bash_totals(&env, session),
            ((2, 2, 0), 2),
            "{session}: two calls, both finished, each counted once"
        );
        let a_ms = env
            .conn()
            .query_row(
                "SELECT duration_ms FROM tool_calls WHERE session_id = ?1 AND start_ts = ?2",
                rusqlite::params![session, old],
                |r| r.get::<_, i64>(0),
            )
            .unwrap();
        assert_eq!(a_ms, late - old, "{session}: A has both its halves");
    }
    // The idle session's call went whole; its result is a call of its own, counted once.
    assert_eq!(bash_totals(&env, "idle"), ((1, 1, 0), 1));
}

/// Claude Code transcript lines of turn `n` of session `resumed`: its prompt at `at` (epoch
/// ms), the answer a second later.
fn claude_turn(n: usize, at: i64) -> String {
    let iso = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    };
    [
        json!({"type": "user", "uuid": format!("u{n}"), "sessionId": "resumed",
            "timestamp": iso(at), "message": {"role": "user", "content": format!("prompt {n}")}}),
        json!({"type": "assistant", "uuid": format!("a{n}"), "sessionId": "resumed",
            "timestamp": iso(at + 1000), "message": {"id": format!("m{n}"), "role": "assistant",
            "content": [{"type": "text", "text": format!("answer {n}")}]}}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

fn append_text(path: &std::path::Path, text: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    std::io::Write::write_all(&mut file, text.as_bytes()).unwrap();
}

/// Claude Code's `Stop` hook of session `resumed`, whose transcript is `transcript`.
fn claude_stop(env: &TestEnv, transcript: &std::path::Path) {
    let stop = json!({"hook_event_name": "Stop", "session_id": "resumed", "cwd": "/w",
        "transcript_path": transcript});
    capture(env, stop.to_string(), &[]);
}

/// The prompts of the stored turns, oldest first.
fn turn_prompts(env: &TestEnv) -> Vec<String> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare("SELECT prompt FROM turns ORDER BY ts, rowid")
        .unwrap();
    let prompts = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    prompts
}

#[test]
fn a_resumed_session_does_not_bring_pruned_turns_back() {
    let env = TestEnv::new();
    let transcript = env.dir.path().join("resumed.jsonl");
    let ten_days_ago = now() - 10 * DAY;
    // Ten days ago: two turns, each with its Stop hook.
    std::fs::write(&transcript, claude_turn(1, ten_days_ago)).unwrap();
    claude_stop(&env, &transcript);
    append_text(&transcript, &claude_turn(2, ten_days_ago + 60_000));
    claude_stop(&env, &transcript);
    // Capture dates its lines by its own clock: they are dated as they were written then.
    let text = std::fs::read_to_string(env.queue()).unwrap();
    let dated: String = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["timestamp"] = json!(ten_days_ago + 120_000);
            format!("{v}\n")
        })
        .collect();
    std::fs::write(env.queue(), dated).unwrap();
    env.ingest_once();
    assert_eq!(turn_prompts(&env), ["prompt 1", "prompt 2"]);

    // The session's cursor has been idle since then: prune takes it with the turns.
    let cursor = env.home().join("state/resumed.json");
    std::fs::File::options()
        .write(true)
        .open(&cursor)
        .unwrap()
        .set_modified(std::time::SystemTime::now() - Duration::from_secs(10 * 86_400))
        .unwrap();
    let report = prune(&env, &["--days", "7"]);
    assert_eq!(removed(&report, "turns"), 2, "{report}");
    assert!(!cursor.exists(), "the cursor went with the session's turns");

    // Today the chat is resumed (`claude --resume`): same session, same transcript, and a
    // new turn. The hook's cursor starts cold and finds the old turns unrecorded.
    append_text(&transcript, &claude_turn(3, now() - 5_000));
    claude_stop(&env, &transcript);
    env.ingest_once();
    assert_eq!(turn_prompts(&env), ["prompt 3"], "pruned turns stay pruned");
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE synthetic = 1"),
        0,
        "nor do their harvested lines come back as events"
    );
}

/// On a terminal, a cutoff less than a day ago is asked about first: `n` (or nothing) deletes
/// nothing, `y` goes on; `--yes` and a script (no terminal) are not asked.
#[test]
fn a_cutoff_within_the_last_day_is_asked_about_on_a_terminal() {
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::common::skipped("no `script` (util-linux) to make a terminal");
        return;
    }
    let env = TestEnv::new();
    let mut e = crate::common::entry("UserPromptSubmit", "s1");
    e.timestamp = crate::common::now_ms() - 60_000;
    env.append(&[e.to_line()]);
    env.ingest_once();
    let on_terminal = |args: &str, answer: &str| -> (bool, String) {
        let command = format!("{} prune {args}", crate::common::bin().display());
        let mut child = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("CMSTORE_HOME", env.home())
            .env("HOME", env.user_home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(answer.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let events = || env.int("SELECT count(*) FROM events");
    let (ok, text) = on_terminal("--before 0m", "n\n");
    assert!(
        !ok && text.contains("Go on? [y/N]") && text.contains("nothing deleted"),
        "{text}"
    );
    assert_eq!(events(), 1);
    // A week's cutoff deletes nothing of the last day: not asked.
    let (ok, text) = on_terminal("--days 7", "");
    assert!(ok && !text.contains("Go on?"), "{text}");
    let (ok, text) = on_terminal("--before 0m", "y\n");
    assert!(ok && text.contains("Go on?"), "{text}");
    assert_eq!(events(), 0);
    // Without a terminal (this process's pipes) and with --yes: not asked.
    env.append(&[{
        let mut e = crate::common::entry("UserPromptSubmit", "s2");
        e.timestamp = crate::common::now_ms() - 60_000;
        e.to_line()
    }]);
    env.ingest_once();
    prune(&env, &["--before", "0m"]);
    assert_eq!(events(), 0);
    let (ok, text) = on_terminal("--before 0m --yes", "");
    assert!(ok && !text.contains("Go on?"), "{text}");
}
