//! `cmstore ingest`: exactly once, across restarts, rotations, garbage and kill -9.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use predicates::str::contains;

use crate::common::{self, entry, line, lines, Rng, TestEnv};

const ROWS_EXACT: &str =
    "SELECT CASE WHEN count(*) = count(DISTINCT id) THEN count(*) ELSE -1 END FROM events";

#[test]
fn once_ingests_every_line_exactly_once_and_a_rerun_adds_nothing() {
    let env = TestEnv::new();
    env.append(&lines(250));
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .success()
        .stderr(contains("250 lines, 250 rows"));
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .success()
        .stderr(contains("0 lines, 0 rows"));
    assert_eq!(env.int(ROWS_EXACT), 250);
    assert_eq!(env.int("SELECT sum(events) FROM sessions"), 250);
    assert_eq!(env.int("SELECT count(*) FROM sources"), 1);
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 0);
    assert_eq!(
        env.int("SELECT offset FROM sources"),
        std::fs::metadata(env.queue()).unwrap().len() as i64
    );
}

/// Large batches are parsed on a second thread (here the first: 650 lines, a reject among
/// them), a line over 1 MiB is taken from the reader (last in that batch), and a batch stops
/// before a line that would overflow its 8 MiB buffer (the 900 KiB lines): none of it may
/// lose, double or reorder a line.
#[test]
fn long_lines_and_large_batches_lose_and_double_nothing() {
    let env = TestEnv::new();
    let mut all = lines(700);
    all.insert(300, "not json".into());
    let mut long = entry("UserPromptSubmit", "s-long");
    long.prompt = Some("p".repeat(2 * 1024 * 1024));
    all.insert(650, long.to_line());
    for i in 0..12 {
        let mut near_full = entry("UserPromptSubmit", "s-near");
        near_full.prompt = Some("q".repeat(900 * 1024));
        all.insert(660 + i, near_full.to_line());
    }
    env.append(&all);
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .success()
        .stderr(contains("714 lines, 713 rows, 0 duplicates, 1 rejects"));
    assert_eq!(env.int(ROWS_EXACT), 713);
    assert_eq!(
        env.int("SELECT length(prompt) FROM events WHERE session_id = 's-long'"),
        2 * 1024 * 1024
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 's-near'"),
        12
    );
    // Rows come in queue order: their offsets grow with their sequence numbers.
    assert_eq!(
        env.int(
            "SELECT count(*) FROM events a JOIN events b ON b.seq = a.seq + 1
             WHERE b.source_offset <= a.source_offset"
        ),
        0
    );
    assert_eq!(
        env.int("SELECT offset FROM sources"),
        std::fs::metadata(env.queue()).unwrap().len() as i64
    );
}

/// Batches of `batch_lines` through the library, with `between` called after each commit.
fn ingest_with(
    env: &TestEnv,
    batch_lines: usize,
    mut between: impl FnMut(&cmstore::write::ingest::Stats),
) {
    let store = cmstore::store::open(&env.db()).unwrap();
    let options = cmstore::write::ingest::Options {
        batch_lines,
        ..Default::default()
    };
    let mut ingester = cmstore::write::ingest::Ingester::new(store, &env.queue(), options);
    let stop = AtomicBool::new(false);
    ingester.pass(&stop, &mut |stats| between(stats)).unwrap();
}

/// The queue offsets of the rows, in insertion order, are strictly increasing within each
/// source (no line read twice or out of order).
const ROWS_OUT_OF_ORDER: &str = "SELECT count(*) FROM events a JOIN events b ON b.seq = a.seq + 1
    WHERE b.source_id = a.source_id AND b.source_offset <= a.source_offset";

#[test]
fn a_line_appended_while_an_idle_batch_waits_for_the_lock_is_read_next_pass() {
    let env = TestEnv::new();
    env.append(&lines(1));
    let store = cmstore::store::open(&env.db()).unwrap();
    let mut ingester =
        cmstore::write::ingest::Ingester::new(store, &env.queue(), Default::default());
    let stop = AtomicBool::new(false);
    // Once the first line is committed, another writer takes the database: the pass's next
    // batch waits for the lock, and a line is appended meanwhile. Either that batch reads it
    // (it looks at the file's size inside its transaction) or, having found nothing, it must
    // not remember the file as already seen with that line in it. (Before either fix, the
    // size was taken before the wait and the file remembered after it: the line was lost
    // until the next append. The remaining window, between the size and the idle probe, is
    // too short to hit from here.)
    let mut finisher = None;
    let (db, queue, late) = (env.db(), env.queue(), lines(1));
    ingester
        .pass(&stop, &mut |_| {
            if finisher.is_some() {
                return;
            }
            let blocker = rusqlite::Connection::open(&db).unwrap();
            blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
            let (queue, late) = (queue.clone(), late.clone());
            finisher = Some(std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                cmstore::files::queue::append_lines(&queue, &late).unwrap();
                std::thread::sleep(Duration::from_millis(100));
                blocker.execute_batch("COMMIT").unwrap();
            }));
        })
        .unwrap();
    finisher.expect("a batch was committed").join().unwrap();
    // The file changed since that batch looked at it: the next pass must read the line.
    ingester.pass(&stop, &mut |_| {}).unwrap();
    assert_eq!(env.int(ROWS_EXACT), 2);
}

#[test]
fn lines_read_ahead_of_their_batch_are_neither_lost_nor_doubled() {
    let env = TestEnv::new();
    // 600-line batches are parsed on a thread, which reads each next batch ahead. A reject
    // and a 2 MiB line (which the read-ahead stops before) fall in the third batch.
    let mut all = lines(3000);
    all.insert(1250, "not json".into());
    let mut long = entry("UserPromptSubmit", "s-long");
    long.prompt = Some("p".repeat(2 * 1024 * 1024));
    all.insert(1500, long.to_line());
    env.append(&all);
    let mut commits = 0;
    ingest_with(&env, 600, |_| commits += 1);
    assert_eq!(env.int(ROWS_EXACT), 3001);
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 1);
    assert_eq!(env.int(ROWS_OUT_OF_ORDER), 0);
    assert!(commits >= 6, "{commits} commits");
    let queue_len = std::fs::metadata(env.queue()).unwrap().len() as i64;
    assert_eq!(env.int("SELECT offset FROM sources"), queue_len);
    assert_eq!(env.int("SELECT lines FROM sources"), 3002);
}

/// Ingests 2,000 lines in 600-line batches, `change` being called with `new_lines` new lines
/// once the first batch is committed (the second one is read ahead by then).
#[cfg(unix)]
fn change_queue_after_first_batch(env: &TestEnv, new_lines: usize, change: impl FnOnce(String)) {
    env.append(&lines(2000));
    let new: Vec<String> = (0..new_lines)
        .map(|_| line("Notification", "s-new"))
        .collect();
    let mut change = Some(change);
    ingest_with(env, 600, |stats| {
        if stats.batches == 1 {
            if let Some(change) = change.take() {
                change(new.join("\n") + "\n");
            }
        }
    });
    assert!(change.is_none(), "the queue was changed");
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 's-new'"),
        new_lines as i64
    );
    assert_eq!(env.int(ROWS_OUT_OF_ORDER), 0);
}

#[cfg(unix)]
#[test]
fn lines_read_ahead_from_a_queue_truncated_meanwhile_are_dropped() {
    let env = TestEnv::new();
    // copytruncate, then more bytes than the offset: the next batch's lines, already read
    // from the old content, must not be taken for the new file's.
    change_queue_after_first_batch(&env, 2500, |new| std::fs::write(env.queue(), new).unwrap());
    assert_eq!(env.int(ROWS_EXACT), 600 + 2500);
    assert_eq!(
        env.int("SELECT count(*) FROM sources"),
        2,
        "the old source retired"
    );
}

#[cfg(unix)]
#[test]
fn lines_read_ahead_from_a_queue_replaced_meanwhile_are_drained_first() {
    let env = TestEnv::new();
    // Delete-and-recreate by rename: the old file, still open, is read to its end first.
    change_queue_after_first_batch(&env, 1500, |new| {
        let next = env.home().join("next.jsonl");
        std::fs::write(&next, new).unwrap();
        std::fs::rename(&next, env.queue()).unwrap();
    });
    assert_eq!(env.int(ROWS_EXACT), 2000 + 1500);
}

#[cfg(unix)]
#[test]
fn lines_read_ahead_that_the_queue_no_longer_holds_are_read_again() {
    let env = TestEnv::new();
    let old = lines(2000);
    env.append(&old);
    // After the first batch (lines 0..600) the second (600..1200) is read ahead. Then the
    // queue loses its lines from 900 on (an append rolled back) and gets others, more bytes
    // than it lost: the first 600 lines are intact, so the source check passes, but the lines
    // read ahead are no longer all there.
    let keep: u64 = old[..900].iter().map(|l| l.len() as u64 + 1).sum();
    let new: Vec<String> = (0..1500).map(|_| line("Notification", "s-new")).collect();
    let mut cut = false;
    ingest_with(&env, 600, |stats| {
        if !cut && stats.batches == 1 {
            cut = true;
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(env.queue())
                .unwrap();
            file.set_len(keep).unwrap();
            drop(file);
            env.append(&new);
        }
    });
    assert!(cut);
    assert_eq!(env.int(ROWS_EXACT), 900 + 1500);
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 's-new'"),
        1500
    );
    assert_eq!(env.int("SELECT count(*) FROM sources"), 1, "the same file");
    assert_eq!(env.int(ROWS_OUT_OF_ORDER), 0);
    let queue_len = std::fs::metadata(env.queue()).unwrap().len() as i64;
    assert_eq!(env.int("SELECT offset FROM sources"), queue_len);
}

#[cfg(unix)]
#[test]
fn the_database_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    env.append(&lines(3));
    env.ingest_once();
    let mode = std::fs::metadata(env.db()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// The WAL is removed when ingest ends (docs/running.md): its last connection closes before the
/// process exits, whichever thread holds it last. Fresh homes, many times, for the race of a
/// pool's helper thread holding the pool a moment after handing out a connection.
#[test]
fn once_leaves_no_wal_behind() {
    let started = std::time::Instant::now();
    let mut runs = 0;
    while runs < 60 && (runs < 10 || started.elapsed() < Duration::from_secs(4)) {
        let env = TestEnv::new();
        if runs % 2 == 1 {
            env.append(&lines(3));
        }
        env.ingest_once();
        runs += 1;
        let wal = env.home().join("cmstore.db-wal");
        assert!(
            !wal.exists(),
            "run {runs}: {} was left behind",
            wal.display()
        );
    }
}

/// `import` and `prune`, the other commands that write the store, leave no WAL either.
#[test]
fn import_and_prune_leave_no_wal_behind() {
    let started = std::time::Instant::now();
    let mut runs = 0;
    while runs < 40 && (runs < 6 || started.elapsed() < Duration::from_secs(4)) {
        let env = TestEnv::new();
        env.append(&lines(3));
        env.ingest_once();
        let transcript = env.dir.path().join("t.jsonl");
        let response =
            crate::common::response_line("s", &format!("m{runs}"), "2026-03-01T10:00:00Z");
        std::fs::write(&transcript, format!("{response}\n")).unwrap();
        let command: &[&str] = if runs % 2 == 0 {
            &["import", transcript.to_str().unwrap()]
        } else {
            &["prune", "--before", "0m"]
        };
        env.cmd().args(command).assert().success();
        runs += 1;
        let wal = env.home().join("cmstore.db-wal");
        assert!(
            !wal.exists(),
            "run {runs} ({command:?}): {} left behind",
            wal.display()
        );
    }
}

#[test]
fn a_partial_line_waits_and_is_completed_across_a_restart() {
    let env = TestEnv::new();
    env.append(&lines(2));
    let third = line("Stop", "s1");
    let (head, tail) = third.split_at(third.len() / 2);
    env.append_raw(head.as_bytes());
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), 2);
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 0);
    env.append_raw(format!("{tail}\n").as_bytes());
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), 3);
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 0);
}

#[test]
fn truncation_is_detected_and_the_new_content_read_from_zero() {
    let env = TestEnv::new();
    env.append(&lines(20));
    env.ingest_once();
    std::fs::write(env.queue(), b"").unwrap();
    env.append(&lines(3));
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .success()
        .stderr(contains("truncated or replaced 1 time"));
    assert_eq!(env.int(ROWS_EXACT), 23);
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_why LIKE 'truncated%'"),
        1
    );
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_at IS NULL"),
        1
    );
}

#[test]
fn copytruncate_then_more_bytes_than_the_offset_is_detected_by_the_marker() {
    let env = TestEnv::new();
    let old = lines(10);
    env.append(&old);
    env.ingest_once();
    // logrotate's copytruncate: copy aside, truncate in place, writers go on at 0.
    std::fs::copy(env.queue(), env.home().join("hook-queue.jsonl.1")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(env.queue())
        .unwrap()
        .set_len(0)
        .unwrap();
    // Re-appending two old lines proves replays are absorbed, not doubled.
    let mut new = lines(30);
    new.extend_from_slice(&old[..2]);
    env.append(&new);
    assert!(std::fs::metadata(env.queue()).unwrap().len() > 10 * 200);
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), 40);
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_why LIKE 'replaced%'"),
        1
    );
}

#[cfg(unix)]
#[test]
fn delete_and_recreate_with_the_same_inode_is_caught_by_the_fingerprint() {
    use std::os::unix::fs::MetadataExt;
    let env = TestEnv::new();
    env.append(&lines(10));
    env.ingest_once();
    std::fs::remove_file(env.queue()).unwrap();
    env.append(&lines(12));
    let meta = std::fs::metadata(env.queue()).unwrap();
    // Whether or not the file system reused the inode, make the store believe it did: only
    // the content checks are left to notice the new file.
    env.conn().close().unwrap();
    {
        let rw = rusqlite::Connection::open(env.db()).unwrap();
        rw.execute(
            "UPDATE sources SET device = ?1, inode = ?2",
            [meta.dev() as i64, meta.ino() as i64],
        )
        .unwrap();
    }
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), 22);
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_why = 'replaced: first line changed'"),
        1
    );
}

#[test]
fn delete_and_recreate_is_read_from_zero() {
    let env = TestEnv::new();
    env.append(&lines(10));
    env.ingest_once();
    std::fs::remove_file(env.queue()).unwrap();
    env.append(&lines(4));
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), 14);
}

#[test]
fn malformed_lines_are_rejected_with_a_record_and_ingest_goes_on() {
    let env = TestEnv::new();
    let good = lines(5);
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    let mut push = |data: &mut Vec<u8>, bytes: &[u8]| {
        offsets.push(data.len() as i64);
        data.extend_from_slice(bytes);
        data.push(b'\n');
    };
    push(&mut data, good[0].as_bytes());
    push(&mut data, b"{\"hookType\": \"Stop\", "); // cut JSON
    push(&mut data, good[1].as_bytes());
    push(&mut data, b"{\"prompt\":\"\xff\xfe\"}"); // invalid UTF-8
    push(&mut data, b"[\"an\", \"array\"]");
    push(&mut data, b"\"a string\"");
    push(&mut data, good[2].as_bytes());
    push(&mut data, &vec![b'x'; 5000]); // over the 1000-byte limit below
    push(&mut data, b"");
    push(&mut data, good[3].as_bytes());
    push(&mut data, b"payload-parse-failed"); // vstack's bare marker lines
    push(&mut data, good[4].as_bytes());
    env.append_raw(&data);
    env.cmd()
        .args(["ingest", "--once"])
        .env("CMSTORE_MAX_LINE_BYTES", "1000")
        .assert()
        .success()
        .stderr(contains("12 lines, 5 rows, 0 duplicates, 7 rejects"));
    assert_eq!(env.int(ROWS_EXACT), 5);
    let conn = env.conn();
    let mut stmt = conn
        .prepare("SELECT offset, length, reason, raw_prefix FROM rejects ORDER BY offset")
        .unwrap();
    let rows: Vec<(i64, i64, String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let reasons: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "invalid_json",
            "invalid_utf8",
            "not_an_object",
            "not_an_object",
            "too_long",
            "invalid_json",
            "invalid_json"
        ]
    );
    assert_eq!(rows[0].0, offsets[1]);
    assert_eq!(
        rows[4],
        (offsets[7], 5000, "too_long".into(), "x".repeat(256))
    );
    assert_eq!(rows[1].3, "{\"prompt\":\"\u{fffd}\u{fffd}\"}");
    assert_eq!(
        env.int("SELECT offset FROM sources"),
        data.len() as i64,
        "the offset moved past every line"
    );
}

/// Lines as bytes, each with its newline.
fn joined(lines: &[&[u8]]) -> Vec<u8> {
    lines
        .iter()
        .flat_map(|l| l.iter().chain(b"\n"))
        .copied()
        .collect()
}

#[test]
fn rejected_lines_are_recorded_once_however_often_the_queue_is_read_again() {
    let env = TestEnv::new();
    let good = lines(5);
    // Two appends, the second starting with garbage: its key is read back across ingests.
    env.append_raw(&joined(&[
        b"not json at the very start",
        good[0].as_bytes(),
        b"payload-parse-failed",
        good[1].as_bytes(),
        b"{\"cut\": ",
    ]));
    env.cmd()
        .args(["ingest", "--once", "--batch-size", "2"])
        .assert()
        .success();
    env.append_raw(&joined(&[
        b"payload-parse-failed", // the same bytes as above, elsewhere: another reject
        b"payload-parse-failed", // and right after it: one more
        good[2].as_bytes(),
        b"[1, 2]",
        good[3].as_bytes(),
        good[4].as_bytes(),
    ]));
    env.ingest_once();
    let rejects = "SELECT count(*) FROM rejects";
    assert_eq!(env.int(rejects), 6);
    assert_eq!(env.int(ROWS_EXACT), 5);
    // Read again from the start, in batches of every size: the same rejects, none twice.
    for batch in ["1", "3", "10000"] {
        env.make_ingest_read_again_from_start();
        env.cmd()
            .args(["ingest", "--once", "--batch-size", batch])
            .assert()
            .success()
            .stderr(contains("11 lines, 0 rows, 11 duplicates, 0 rejects"))
            .stderr(contains("read again from 0"));
        assert_eq!(env.int(rejects), 6, "batches of {batch}");
    }
    assert_eq!(env.int(ROWS_EXACT), 5);
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_at IS NOT NULL"),
        3
    );
}

#[test]
fn rejects_recorded_before_they_had_a_key_are_not_recorded_again_after_the_upgrade() {
    let env = TestEnv::new();
    let good = lines(3);
    let garbage: [&[u8]; 3] = [b"payload-parse-failed", b"[1]", b"payload-parse-failed"];
    let data = joined(&[
        good[0].as_bytes(),
        garbage[0],
        good[1].as_bytes(),
        garbage[1],
        garbage[2],
        good[2].as_bytes(),
    ]);
    env.append_raw(&data);
    // What an older cmstore (schema 0007) left: the queue ingested, its rejects keyed by
    // (source, offset) only; and a queue it now takes for another file (read again from 0).
    {
        let mut conn = rusqlite::Connection::open(env.db()).unwrap();
        cmstore::store::migrate(&mut conn, &env.db(), 7).unwrap();
        let path = env.queue().to_string_lossy().into_owned();
        conn.execute(
            "INSERT INTO sources(path, offset, fingerprint, created_at, updated_at)
             VALUES (?1, ?2, 'the file it read', 0, 0)",
            rusqlite::params![path, data.len() as i64],
        )
        .unwrap();
        let mut offset = 0;
        for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            if garbage.contains(&line) {
                let reason = if line == b"[1]" {
                    "not_an_object"
                } else {
                    "invalid_json"
                };
                conn.execute(
                    "INSERT INTO rejects(source, source_id, offset, length, reason, raw_prefix, ts)
                     VALUES (?1, 1, ?2, ?3, ?4, ?5, 0)",
                    rusqlite::params![
                        path,
                        offset,
                        line.len() as i64,
                        reason,
                        String::from_utf8_lossy(line)
                    ],
                )
                .unwrap();
            }
            offset += line.len() as i64 + 1;
        }
    }
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 3, "none twice");
    assert_eq!(
        env.int("SELECT count(*) FROM rejects WHERE line_key IS NULL"),
        0,
        "each old row took its line's key"
    );
    // Garbage written after the upgrade, equal to an old line, is a reject of its own.
    env.append_raw(b"payload-parse-failed\n");
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 4);
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM rejects"), 4);
}

#[cfg(unix)]
#[test]
fn a_queue_swapped_under_the_queue_lock_is_not_taken_for_a_replaced_one() {
    use cmstore::files::identity::FileId;
    use cmstore::write::ingest::source::{fingerprint, marker};
    let env = TestEnv::new();
    let old = lines(20);
    env.append(&old);
    env.ingest_once();
    // Compaction's steps 3 and 4, played by the test: under the queue lock, a file without
    // the first 5 lines (plus 3 new ones) renamed over the queue, then its `sources` row.
    let lock = cmstore::files::queue::append::lock_queue(&env.queue(), Duration::ZERO)
        .unwrap()
        .expect("free lock");
    let dropped: u64 = old[..5].iter().map(|l| l.len() as u64 + 1).sum();
    let mut text: String = old[5..].iter().map(|l| format!("{l}\n")).collect();
    text.extend(lines(3).iter().map(|l| format!("{l}\n")));
    let temp = env.home().join("swap.tmp");
    std::fs::write(&temp, &text).unwrap();
    std::fs::rename(&temp, env.queue()).unwrap();
    // An ingest meanwhile finds a file that is not the one the store follows: it waits for
    // the lock instead of reading it again from its start.
    let mut ingest = env
        .std_cmd()
        .args(["ingest", "--once"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        ingest.try_wait().unwrap().is_none(),
        "ingest waits for the lock"
    );
    {
        let store = cmstore::store::open(&env.db()).unwrap();
        let mut conn = store.conn().unwrap();
        let batch = cmstore::store::Batch::begin(&mut conn, 0).unwrap();
        let key = env.queue().to_string_lossy().into_owned();
        let live = batch.active_source(&key).unwrap().unwrap();
        batch.retire_source(&live, "compacted").unwrap();
        let file = std::fs::File::open(env.queue()).unwrap();
        let meta = file.metadata().unwrap();
        let id = FileId::of(&meta);
        let fresh = batch.create_source(&key, id.device, id.inode).unwrap();
        let offset = live.offset as u64 - dropped;
        let advance = cmstore::store::write::Advance {
            offset: offset as i64,
            marker: marker(&file, offset).unwrap(),
            fingerprint: fingerprint(&file).unwrap(),
            size: meta.len() as i64,
            lines: 15,
        };
        batch.commit(&fresh, &advance).unwrap();
    }
    drop(lock);
    let out = ingest.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("3 lines, 3 rows, 0 duplicates"), "{stderr}");
    assert!(!stderr.contains("read again"), "{stderr}");
    assert_eq!(env.int(ROWS_EXACT), 23);
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_at IS NOT NULL"),
        1
    );
}

#[test]
fn legacy_contextmanager_and_vstack_lines_are_accepted_and_deduplicated_by_hash() {
    let env = TestEnv::new();
    let legacy = [
        r#"{"origin":"vscode-extension","hookType":"PostToolUse","toolName":"read_file","toolInput":"{\"p\":1}","toolResponse":"","sessionId":"cm1","timestamp":1767323045000,"cwd":"/w","rootHint":"w"}"#,
        r#"{"timestamp":"2026-01-02T03:04:05Z","event":"preToolUse","session_id":"vs1","actor_name":"main","actor_type":"agent","tool_name":"bash","delegated_agent_name":"","model_used":"gpt-5","size_bytes":120,"estimated_tokens":30,"hook_execution_ms":3}"#,
        r#"{"hookType":"WriteIntent","projectIdHint":"p","writeIntent":"x","timestamp":1767323045000}"#,
    ];
    let lines: Vec<String> = legacy.iter().map(|s| s.to_string()).collect();
    env.append(&lines);
    env.append(&lines[..1]); // the very same bytes again: one row
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .success()
        .stderr(contains("4 lines, 3 rows, 1 duplicates"));
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE id LIKE 'sha256:%'"),
        3
    );
    assert_eq!(
        env.int("SELECT ts FROM events WHERE session_id = 'vs1'"),
        1_767_323_045_000
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE hook_type = 'PreToolUse' AND model = 'gpt-5'"),
        1
    );
    assert_eq!(
        env.int("SELECT count FROM unknown_counts WHERE session_id = 'unknown-session' AND reason = 'unknown_hook_type'"),
        1
    );
}

#[test]
fn derived_rows_join_tool_calls_and_merge_real_and_harvested_turns() {
    let env = TestEnv::new();
    let mut start = entry("SessionStart", "d1");
    start.model = Some("opus".into());
    start.cwd = Some("/w".into());
    let mut pre = entry("PreToolUse", "d1");
    pre.tool_call_id = Some("call-1".into());
    pre.timestamp = 1_000;
    let mut post = entry("PostToolUseFailure", "d1");
    post.tool_call_id = Some("call-1".into());
    post.timestamp = 1_250;
    let mut real = entry("Stop", "d1");
    real.turn_id = Some("u1".into());
    real.response = Some("real answer".into());
    real.prompt = Some("question".into());
    let mut harvested = entry("Stop", "d1");
    harvested.turn_id = Some("u1".into());
    harvested.response = Some("harvested answer".into());
    harvested.synthetic = Some(true);
    let mut no_turn_id = entry("SubagentStop", "d1");
    no_turn_id.response = Some("sub".into());
    let end = entry("SessionEnd", "d1");
    // The real Stop is read first here, then the harvested one: the real fields must stay.
    env.append(&[
        start.to_line(),
        pre.to_line(),
        post.to_line(),
        real.to_line(),
        harvested.to_line(),
        no_turn_id.to_line(),
        end.to_line(),
    ]);
    env.ingest_once();
    let conn = env.conn();
    let (dur, success, name): (i64, i64, String) = conn
        .query_row(
            "SELECT duration_ms, success, tool_name FROM tool_calls WHERE call_key = 'call-1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((dur, success, name.as_str()), (250, 0, "Bash"));
    assert_eq!(env.int("SELECT count(*) FROM turns"), 2);
    let (response, synthetic): (String, i64) = conn
        .query_row(
            "SELECT response, synthetic FROM turns WHERE turn_key = 'u1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((response.as_str(), synthetic), ("real answer", 0));
    let (events, failures, ended, model): (i64, i64, i64, String) = conn
        .query_row(
            "SELECT events, tool_failures, ended, model FROM v_sessions WHERE session_id = 'd1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!((events, failures, ended, model.as_str()), (7, 1, 1, "opus"));

    // A harvested Stop first and the real one later (another batch) gives the real fields.
    let mut harvested = entry("Stop", "d2");
    harvested.turn_id = Some("u2".into());
    harvested.response = Some("harvested".into());
    harvested.synthetic = Some(true);
    env.append(&[harvested.to_line()]);
    env.ingest_once();
    let mut real = entry("Stop", "d2");
    real.turn_id = Some("u2".into());
    real.response = Some("real".into());
    env.append(&[real.to_line()]);
    env.ingest_once();
    let response: String = env
        .conn()
        .query_row(
            "SELECT response FROM turns WHERE session_id = 'd2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(response, "real");
    assert_eq!(
        env.int("SELECT synthetic FROM turns WHERE session_id = 'd2'"),
        0
    );

    // Post before Pre, in separate transactions: still one joined row.
    let mut post = entry("PostToolUse", "d2");
    post.tool_call_id = Some("call-2".into());
    post.timestamp = 5_400;
    let mut pre = entry("PreToolUse", "d2");
    pre.tool_call_id = Some("call-2".into());
    pre.timestamp = 5_000;
    env.append(&[post.to_line(), pre.to_line()]);
    env.cmd()
        .args(["ingest", "--once", "--batch-size", "1"])
        .assert()
        .success();
    assert_eq!(
        env.int("SELECT duration_ms FROM tool_calls WHERE call_key = 'call-2' AND success = 1"),
        400
    );
    assert_eq!(
        env.int("SELECT calls FROM v_tools WHERE tool_name = 'Bash'"),
        2
    );
}

#[test]
fn unknown_counters_are_exact_with_40_concurrent_writers() {
    let env = TestEnv::new();
    let mut child = env.spawn_follow(&["--poll-ms", "50", "--batch-size", "7"]);
    let queue = env.queue();
    let threads: Vec<_> = (0..40)
        .map(|i| {
            let queue = queue.clone();
            std::thread::spawn(move || {
                let mut unknown = entry("delegationStart", "vs");
                unknown.tool_name = None;
                let mut no_session = entry("Notification", "x");
                no_session.session_id = None;
                let mut no_tool = entry("PostToolUse", "vs");
                no_tool.tool_name = None;
                let mut no_actor = entry(
                    if i % 2 == 0 {
                        "SessionStart"
                    } else {
                        "SessionEnd"
                    },
                    "vs",
                );
                no_actor.actor_name = None;
                no_actor.actor_type = None;
                for line in [unknown, no_session, no_tool, no_actor] {
                    cmstore::files::queue::append_lines(&queue, &[line.to_line()]).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let got = env.wait_for("SELECT count(*) FROM events", 160, Duration::from_secs(20));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(got, 160);
    env.ingest_once();
    let count = |session: &str, reason: &str| {
        env.int(&format!(
            "SELECT coalesce(sum(count), 0) FROM unknown_counts WHERE session_id = '{session}' AND reason = '{reason}'"
        ))
    };
    assert_eq!(count("vs", "unknown_hook_type"), 40);
    assert_eq!(count("unknown-session", "missing_session_id"), 40);
    assert_eq!(count("vs", "tool_event_without_tool_name"), 40);
    assert_eq!(count("vs", "session_event_without_actor"), 40);
    assert_eq!(env.int("SELECT sum(count) FROM unknown_counts"), 160);
    assert_eq!(
        env.int("SELECT unknown_total FROM v_unknown WHERE session_id = 'vs'"),
        120
    );
}

#[test]
#[cfg(unix)]
fn follow_mode_is_woken_through_a_symlinked_queue() {
    // The queue kept elsewhere and linked from the usual place: appends change the target,
    // in another directory, so watching only the link's directory would never fire.
    let env = TestEnv::new();
    let real = env.link_queue_elsewhere();
    env.append(&lines(1));
    // Polling once a minute: only a file notification can bring the lines in in time.
    let mut child = env.spawn_follow(&["--poll-ms", "60000"]);
    let wait = Duration::from_secs(15);
    assert_eq!(env.wait_for("SELECT count(*) FROM events", 1, wait), 1);
    env.append(&lines(4)[1..]);
    let got = env.wait_for("SELECT count(*) FROM events", 4, wait);
    if got != 4 {
        common::terminate(&child);
        let out = child.wait_with_output().unwrap();
        panic!(
            "appends through the link did not wake ingest ({got} rows); its stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        common::read_lines(&real).len(),
        4,
        "the lines are in the target"
    );
    common::terminate(&child);
    common::wait_timeout(&mut child, Duration::from_secs(10)).expect("ingest exits");
}

#[test]
fn a_second_ingester_exits_with_a_clear_message() {
    let env = TestEnv::new();
    env.append(&lines(5));
    let mut child = env.spawn_follow(&[]);
    assert_eq!(
        env.wait_for("SELECT count(*) FROM events", 5, Duration::from_secs(10)),
        5
    );
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .code(3)
        .stderr(contains("already running"));
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn two_ingesters_at_once_never_double_count() {
    let env = TestEnv::new();
    env.append(&lines(3000));
    let spawn = || {
        env.std_cmd()
            .args(["ingest", "--once", "--batch-size", "100"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let codes = [a.status.code(), b.status.code()];
    assert!(codes.contains(&Some(0)), "{codes:?}");
    assert!(
        codes.iter().all(|c| *c == Some(0) || *c == Some(3)),
        "{codes:?}"
    );
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), 3000);
    assert_eq!(env.int("SELECT sum(events) FROM sessions"), 3000);
}

#[test]
fn two_ingesters_without_the_lock_are_kept_exact_by_the_offset_cas() {
    let env = TestEnv::new();
    env.append(&lines(4000));
    let store = cmstore::store::open(&env.db()).unwrap();
    let options = cmstore::write::ingest::Options {
        batch_lines: 50,
        ..Default::default()
    };
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            let queue = env.queue();
            std::thread::spawn(move || {
                let stop = AtomicBool::new(false);
                let mut ing = cmstore::write::ingest::Ingester::new(store, &queue, options);
                ing.pass(&stop, &mut |_| {}).unwrap()
            })
        })
        .collect();
    let stats: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    assert_eq!(stats.iter().map(|s| s.rows).sum::<u64>(), 4000);
    assert_eq!(stats.iter().map(|s| s.lines).sum::<u64>(), 4000);
    assert_eq!(env.int(ROWS_EXACT), 4000);
    assert_eq!(env.int("SELECT lines FROM sources"), 4000);
}

#[test]
fn two_ingesters_without_the_lock_never_take_a_growing_queue_for_a_truncated_one() {
    // Each batch compares the stored offset with the file's size. Taken before the other
    // ingester's commit, while a hook keeps appending, that size could be below the offset
    // the other one had just stored: a false "truncated", and the queue read again from 0.
    let env = TestEnv::new();
    env.append(&lines(200));
    let store = cmstore::store::open(&env.db()).unwrap();
    let options = cmstore::write::ingest::Options {
        batch_lines: 20,
        ..Default::default()
    };
    // A fixed number of appends, not as many as the ingesters' time allows: a pass reads to the
    // end of the queue, and on a busy machine it never got there while the hook kept going.
    let appends = 1500;
    let appender = {
        let queue = env.queue();
        std::thread::spawn(move || {
            for _ in 0..appends {
                cmstore::files::queue::append_lines(&queue, &lines(5)).unwrap();
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let restarts: u64 = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (store, queue, appender) = (store.clone(), env.queue(), &appender);
                scope.spawn(move || {
                    let stop = AtomicBool::new(false);
                    let mut ing = cmstore::write::ingest::Ingester::new(store, &queue, options);
                    let mut restarts = 0;
                    while !appender.is_finished() {
                        restarts += ing.pass(&stop, &mut |_| {}).unwrap().restarts;
                    }
                    restarts
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    appender.join().unwrap();
    let appended = 5 * appends;
    env.ingest_once();
    assert_eq!(restarts, 0, "a growing queue was taken for a replaced one");
    assert_eq!(
        env.int("SELECT count(*) FROM sources WHERE retired_at IS NOT NULL"),
        0
    );
    assert_eq!(env.int(ROWS_EXACT), 200 + appended);
}

#[cfg(unix)]
#[test]
fn follow_mode_sees_appends_quickly_and_stops_cleanly_on_sigterm() {
    let env = TestEnv::new();
    env.append(&lines(1));
    // Polling once a minute: lines in the store well before that were brought in by the file
    // notification, however busy the machine. (How quickly is a measurement, not a test:
    // benches/follow_latency.py.)
    let mut child = env.spawn_follow(&["--poll-ms", "60000"]);
    // Its first line stored: the watch, set up before the first pass, is in place.
    let wait = Duration::from_secs(15);
    assert_eq!(env.wait_for("SELECT count(*) FROM events", 1, wait), 1);
    env.append(&lines(3)[1..]);
    let got = env.wait_for("SELECT count(*) FROM events", 3, wait);
    assert_eq!(got, 3, "the append did not wake ingest");
    common::terminate(&child);
    let status = common::wait_timeout(&mut child, Duration::from_secs(10)).expect("stopped");
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("3 lines, 3 rows"), "{err}");
}

#[test]
fn kill_9_at_random_points_loses_and_doubles_nothing() {
    let env = TestEnv::new();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let writer = {
        let (stop, written, queue) = (stop.clone(), written.clone(), env.queue());
        std::thread::spawn(move || {
            let mut rng = common::Rng::new(7);
            while !stop.load(Ordering::SeqCst) {
                let n = 1 + rng.below(40) as usize;
                cmstore::files::queue::append_lines(&queue, &lines(n)).unwrap();
                written.fetch_add(n as u64, Ordering::SeqCst);
                std::thread::sleep(Duration::from_micros(rng.below(3000)));
            }
        })
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = common::Rng::new(seed);
    // A fixed number of kills, not as many as a deadline allows: a busy machine makes the test
    // slower, never shorter.
    for kills in 0..25 {
        // Every other ingester sets the secondary indexes aside for each pass, so kills also
        // land between dropping and rebuilding them.
        let defer = if kills % 2 == 0 { "always" } else { "auto" };
        // Batches of 512 lines or more are parsed on a thread that reads the next batch ahead:
        // a backlog grows between kills for those to happen too.
        let batch_size = if kills % 3 == 0 { "1000" } else { "64" };
        let mut child = env.spawn_follow(&[
            "--batch-size",
            batch_size,
            "--poll-ms",
            "20",
            "--defer-indexes",
            defer,
        ]);
        std::thread::sleep(Duration::from_millis(30 + rng.below(250)));
        child.kill().unwrap(); // SIGKILL on Unix
        child.wait().unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    writer.join().unwrap();
    let before = env.int("SELECT count(*) FROM events");
    assert!(before > 0, "the killed ingesters committed something");
    env.ingest_once();
    let total = written.load(Ordering::SeqCst) as i64;
    assert_eq!(env.int(ROWS_EXACT), total, "seed {seed}");
    assert_eq!(
        env.int("SELECT sum(events) FROM sessions"),
        total,
        "seed {seed}"
    );
    assert_eq!(env.int("SELECT lines FROM sources"), total, "seed {seed}");
    assert_eq!(env.int("SELECT count(*) FROM deferred_indexes"), 0);
    assert_eq!(env.int(DEFERRABLE_PRESENT), 6, "seed {seed}");
    // Each killed batch's chain record went with it: the chain covers every row once.
    let chain = common::assert_chain_whole(&env);
    assert_eq!(chain["rows"], total, "seed {seed}");
}

/// How many of the indexes a bulk load sets aside exist.
const DEFERRABLE_PRESENT: &str = "SELECT count(*) FROM sqlite_master WHERE type = 'index'
    AND name IN ('events_session', 'events_tool_name', 'events_delegated', 'events_gate_findings',
                 'tool_calls_session_id', 'tool_calls_tool_name')";

/// Every index of the database with its SQL, sorted.
fn index_definitions(env: &TestEnv) -> Vec<String> {
    env.conn()
        .prepare(
            "SELECT name || ': ' || coalesce(sql, 'auto') FROM sqlite_master
              WHERE type = 'index' ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[test]
fn a_load_without_secondary_indexes_ends_with_the_same_store() {
    let mut lines = messy_tool_lines(99);
    lines.extend(common::lines(300));
    let mut stores = Vec::new();
    for defer in ["never", "always"] {
        let env = TestEnv::new();
        env.append(&lines);
        let out = env
            .cmd()
            .args([
                "ingest",
                "--once",
                "--batch-size",
                "50",
                "--defer-indexes",
                defer,
            ])
            .assert()
            .success()
            .get_output()
            .stderr
            .clone();
        let said = String::from_utf8_lossy(&out).into_owned();
        assert_eq!(
            said.contains("loaded without secondary indexes, 6 rebuilt"),
            defer == "always",
            "{said}"
        );
        assert_eq!(env.int("SELECT count(*) FROM deferred_indexes"), 0);
        let rows: Vec<String> = env
            .conn()
            .prepare("SELECT id || hook_type || coalesce(session_id, '') FROM events ORDER BY seq")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), lines.len());
        let calls = env.int("SELECT count(*) FROM tool_calls");
        stores.push((index_definitions(&env), rows, calls));
    }
    assert_eq!(stores[0], stores[1]);
    // The planner uses the rebuilt index again.
    let env = TestEnv::new();
    env.append(&lines);
    env.cmd()
        .args(["ingest", "--once", "--defer-indexes", "always"])
        .assert()
        .success();
    let plan: String = env
        .conn()
        .query_row(
            "EXPLAIN QUERY PLAN SELECT count(*) FROM events WHERE session_id = 's1'",
            [],
            |r| r.get(3),
        )
        .unwrap();
    assert!(plan.contains("events_session"), "{plan}");
}

#[cfg(unix)]
#[test]
fn sigterm_in_the_middle_of_a_load_still_rebuilds_the_indexes() {
    let env = TestEnv::new();
    let total = 40_000;
    env.append(&lines(total));
    let mut child = env.spawn_follow(&["--defer-indexes", "always", "--batch-size", "100"]);
    // Wait for the first commits of the load, then stop it.
    let started = env.wait_for(
        "SELECT count(*) > 0 FROM events",
        1,
        Duration::from_secs(10),
    );
    assert_eq!(started, 1, "the load committed nothing in 10 s");
    common::terminate(&child);
    let status = common::wait_timeout(&mut child, Duration::from_secs(30)).expect("stopped");
    assert!(status.success(), "{status:?}");
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(
        err.contains("loaded without secondary indexes, 6 rebuilt"),
        "{err}"
    );
    let loaded = env.int("SELECT count(*) FROM events");
    assert!(loaded < total as i64, "stopped in the middle: {loaded}");
    assert_eq!(env.int("SELECT count(*) FROM deferred_indexes"), 0);
    assert_eq!(env.int(DEFERRABLE_PRESENT), 6);
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), total as i64);
}

#[test]
fn indexes_left_aside_by_an_interrupted_load_are_rebuilt_by_the_next_ingest() {
    let env = TestEnv::new();
    env.append(&lines(20));
    env.ingest_once();
    let complete = index_definitions(&env);
    // The state a load leaves when it dies after setting the indexes aside.
    rusqlite::Connection::open(env.db())
        .unwrap()
        .execute_batch(
            "INSERT INTO deferred_indexes(name, tbl, sql)
               SELECT name, tbl_name, sql FROM sqlite_master
                WHERE name IN ('events_session', 'tool_calls_tool_name');
             DROP INDEX events_session;
             DROP INDEX tool_calls_tool_name;",
        )
        .unwrap();
    assert_eq!(env.int(DEFERRABLE_PRESENT), 4);
    // Queries work meanwhile, only without those indexes.
    let by_session = env.int("SELECT count(*) FROM events WHERE session_id = 's1'");
    assert!(by_session > 0);
    env.cmd()
        .args([
            "query",
            "SELECT count(*) AS n FROM events WHERE session_id = 's1'",
            "--format",
            "csv",
        ])
        .assert()
        .success()
        .stdout(format!("n\r\n{by_session}\r\n"));
    // Nothing new to read, and `never`: the leftovers still come back.
    env.cmd()
        .args(["ingest", "--once", "--defer-indexes", "never"])
        .assert()
        .success()
        .stderr(contains("2 rebuilt"));
    assert_eq!(index_definitions(&env), complete);
    assert_eq!(env.int("SELECT count(*) FROM deferred_indexes"), 0);
}

#[test]
fn tool_calls_with_absurd_timestamps_do_not_stop_ingest() {
    let mut lines = Vec::new();
    for (session, key, start, end) in [
        ("t1", "far", i64::MIN + 1, 1_700_000_000_000),
        ("t2", "far2", i64::MIN + 1, i64::MAX),
        ("t3", "far3", i64::MIN + 1, i64::MAX),
        ("t1", "near", 1_000, 1_500),
    ] {
        let mut pre = entry("PreToolUse", session);
        pre.tool_call_id = Some(key.into());
        pre.timestamp = start;
        let mut post = entry("PostToolUse", session);
        post.tool_call_id = Some(key.into());
        post.timestamp = end;
        lines.push(pre.to_line());
        lines.push(post.to_line());
    }
    // One batch (each call written whole) and one line per batch (the Post half joins the
    // stored Pre and its duration is read back).
    for batch in ["1", "100"] {
        let env = TestEnv::new();
        env.append(&lines);
        env.cmd()
            .args(["ingest", "--once", "--batch-size", batch])
            .assert()
            .success();
        assert_eq!(env.int("SELECT count(*) FROM tool_calls"), 4, "{batch}");
        assert_eq!(
            env.int("SELECT calls FROM v_tools WHERE tool_name = 'Bash'"),
            4
        );
        assert_eq!(
            env.int("SELECT duration_ms FROM tool_calls WHERE call_key = 'near'"),
            500
        );
        // Totals past the integer range saturate rather than fail the summary.
        env.cmd()
            .args(["summarize", "--by", "tool", "--format", "json"])
            .assert()
            .success()
            .stdout(contains("\"calls\":4"));
    }
}

#[test]
fn an_older_database_is_upgraded_by_ingest() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    {
        let mut conn = rusqlite::Connection::open(env.db()).unwrap();
        cmstore::store::migrate(&mut conn, &env.db(), 1).unwrap();
    }
    env.append(&lines(4));
    env.ingest_once();
    assert_eq!(
        env.int("PRAGMA user_version"),
        cmstore::store::MIGRATIONS.len() as i64
    );
    assert_eq!(env.int("SELECT sum(events) FROM v_sessions"), 4);
}

#[test]
fn ingest_works_on_a_fresh_machine_without_a_home_directory() {
    let env = TestEnv::new();
    assert!(!env.home().exists());
    env.ingest_once();
    assert!(env.db().exists(), "the store is created");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&env.home()), 0o700);
        assert_eq!(mode(&env.db()), 0o600);
    }
}

#[test]
fn a_missing_queue_is_not_an_error() {
    let env = TestEnv::new();
    env.cmd()
        .args(["ingest", "--once"])
        .assert()
        .success()
        .stderr(contains("0 lines, 0 rows"));
    assert_eq!(env.int("SELECT count(*) FROM events"), 0);
    // The queue appears later: read from its start.
    env.append(&lines(2));
    env.ingest_once();
    assert_eq!(env.int(ROWS_EXACT), 2);
}

/// Tool call halves in a shuffled, messy order: Pre then Post, Post before Pre, a Pre that is
/// never finished, a duplicate Post from a second hook configuration, calls without a session
/// or without a tool name on one half, ids reused across sessions, clocks that disagree; calls
/// without ids (Copilot CLI), in parallel, some with the same input; calls the gate denied,
/// the agent refused, and sessions that end (and resume) with calls still open.
fn messy_tool_lines(seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut ts = 1_000_000;
    for call in 0..160 {
        let session = format!("m{}", rng.below(4));
        ts += 10 + rng.below(50) as i64;
        if rng.below(8) == 0 {
            let mut e = entry("SessionEnd", &session);
            e.timestamp = ts;
            out.push(e.to_line());
            continue;
        }
        if rng.below(3) == 0 {
            idless_calls(&mut rng, &session, ts, &mut out);
            continue;
        }
        let key = format!("mc-{}", rng.below(90)); // keys repeat: calls reuse ids
        let tool = ["Bash", "Read", "Edit"][rng.below(3) as usize];
        let half = |kind: &str, ts: i64, rng: &mut Rng| {
            let mut e = entry(kind, &session);
            e.tool_call_id = Some(key.clone());
            e.tool_name = Some(tool.into());
            e.timestamp = ts;
            match rng.below(12) {
                0 => e.session_id = None,
                1 if kind != "PreToolUse" => e.tool_name = None,
                2 if kind != "PreToolUse" => e.duration_ms = Some(7),
                3 if kind == "PreToolUse" => e.decision = Some("deny".into()),
                4 if kind != "PreToolUse" => e.duration_ms = Some(-3),
                _ => {}
            }
            e.to_line()
        };
        let post_kind = match call % 7 {
            0 => "PostToolUseFailure",
            3 => "PermissionDenied",
            _ => "PostToolUse",
        };
        match rng.below(7) {
            0 => out.push(half("PreToolUse", ts, &mut rng)),
            1 => {
                out.push(half(post_kind, ts + 30, &mut rng));
                out.push(half("PreToolUse", ts, &mut rng));
            }
            2 => {
                out.push(half("PreToolUse", ts, &mut rng));
                out.push(half(post_kind, ts + 30, &mut rng));
                out.push(half(post_kind, ts + 31, &mut rng));
            }
            // The Post read first, and its clock behind the Pre's.
            3 => {
                out.push(half(post_kind, ts, &mut rng));
                out.push(half("PreToolUse", ts + 40, &mut rng));
            }
            _ => {
                out.push(half("PreToolUse", ts, &mut rng));
                out.push(half(post_kind, ts + 25, &mut rng));
            }
        }
    }
    out
}

/// One to three Copilot-style calls without ids, run in parallel: their Pres, then their
/// Posts in any order (some never come, some are refusals, some Pres were denied).
fn idless_calls(rng: &mut Rng, session: &str, ts: i64, out: &mut Vec<String>) {
    let n = 1 + rng.below(3) as usize;
    let mut calls = Vec::new();
    for i in 0..n {
        let tool = ["bash", "view"][rng.below(2) as usize];
        let input = format!("{{\"path\":\"/f{}\"}}", rng.below(3));
        let mut pre = entry("PreToolUse", session);
        pre.agent = Some("copilot".into());
        pre.tool_name = Some(tool.into());
        pre.tool_input = Some(input.clone());
        pre.timestamp = ts + i as i64;
        if rng.below(10) == 0 {
            pre.decision = Some("deny".into());
        }
        out.push(pre.to_line());
        calls.push((tool, input));
    }
    for k in 0..n {
        let (tool, input) = calls.remove(rng.below((n - k) as u64) as usize);
        let (kind, result) = match rng.below(10) {
            0 => continue,
            1 => ("PostToolUse", Some("denied")),
            2 => ("PostToolUseFailure", None),
            3 => ("PostToolUse", Some("failure")),
            _ => ("PostToolUse", Some("success")),
        };
        let mut post = entry(kind, session);
        post.agent = Some("copilot".into());
        post.tool_name = Some(tool.into());
        post.tool_input = Some(input);
        post.tool_result_type = result.map(str::to_string);
        post.timestamp = ts + 20 + k as i64;
        out.push(post.to_line());
    }
}

#[test]
fn tool_calls_and_their_totals_do_not_depend_on_batch_boundaries() {
    for seed in [0x5eed, 7, 1234] {
        same_tool_calls_whatever_the_batches(&messy_tool_lines(seed));
    }
}

fn same_tool_calls_whatever_the_batches(lines: &[String]) {
    let mut results = Vec::new();
    for batch in ["10000", "1", "2", "7"] {
        let env = TestEnv::new();
        env.append(lines);
        env.cmd()
            .args(["ingest", "--once", "--batch-size", batch])
            .assert()
            .success();
        let conn = env.conn();
        let calls: Vec<String> = conn
            .prepare(
                "SELECT call_key || '|' || coalesce(session_id, '-') || '|'
                        || coalesce(tool_name, '-') || '|' || coalesce(start_ts, '-') || '|'
                        || coalesce(end_ts, '-') || '|' || coalesce(duration_ms, '-') || '|'
                        || coalesce(pre_event_id, '-') || '|' || coalesce(post_event_id, '-')
                        || '|' || coalesce(outcome, '-') || '|' || coalesce(success, '-')
                 FROM tool_calls ORDER BY rowid",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // The totals summaries read are exactly the calls, summed.
        let rows = |sql: &str| -> Vec<String> {
            let mut stmt = conn.prepare(sql).unwrap();
            let n = stmt.column_count();
            stmt.query_map([], |r| {
                Ok((0..n)
                    .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                    .collect::<Vec<_>>()
                    .join(","))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
        };
        let summed = rows(
            "SELECT coalesce(session_id, 'unknown-session') AS s, tool_name AS t, count(*),
                    count(*) FILTER (WHERE outcome = 'succeeded'),
                    count(*) FILTER (WHERE outcome = 'failed'),
                    count(*) FILTER (WHERE outcome IS NULL), sum(duration_ms),
                    count(duration_ms), max(duration_ms),
                    count(*) FILTER (WHERE outcome = 'denied'),
                    count(*) FILTER (WHERE outcome = 'refused'),
                    count(*) FILTER (WHERE outcome = 'abandoned')
             FROM tool_calls GROUP BY 1, 2 ORDER BY s, t",
        );
        let totals = rows(
            "SELECT session_id, tool_name, calls, succeeded, failed, unfinished, total_ms, timed,
                    max_ms, denied, refused, abandoned
             FROM v_session_tools ORDER BY session_id, tool_name",
        );
        assert_eq!(totals, summed, "batch size {batch}");
        assert_eq!(
            env.int("SELECT sum(calls) FROM v_tools"),
            calls.len() as i64
        );
        // success says the same as outcome.
        assert_eq!(
            env.int(
                "SELECT count(*) FROM tool_calls WHERE success IS NOT
                   CASE outcome WHEN 'succeeded' THEN 1 WHEN 'failed' THEN 0 END"
            ),
            0
        );
        assert_eq!(
            env.int("SELECT count(*) FROM tool_calls WHERE duration_ms < 0"),
            0
        );
        let unknowns = rows("SELECT session_id, reason, count FROM unknown_counts ORDER BY 1, 2");
        results.push((batch, calls, unknowns));
    }
    let (_, first, unknowns) = &results[0];
    // The messy input did exercise joins across halves, open calls, duplicates, calls without
    // ids, and every outcome.
    for outcome in ["-", "succeeded", "failed", "denied", "refused", "abandoned"] {
        assert!(
            first.iter().any(|c| c.split('|').nth(8) == Some(outcome)),
            "a call with outcome {outcome}"
        );
    }
    assert!(
        first.iter().any(|c| {
            let f: Vec<&str> = c.split('|').collect();
            f[2] == "view" && f[6] != "-" && f[7] != "-"
        }),
        "a call without an id, paired"
    );
    assert!(
        unknowns
            .iter()
            .any(|u| u.contains("negative_tool_duration")),
        "{unknowns:?}"
    );
    let keys: std::collections::HashSet<&str> =
        first.iter().map(|c| c.split('|').next().unwrap()).collect();
    assert!(keys.len() < first.len(), "a key with more than one call");
    for (batch, calls, other_unknowns) in &results[1..] {
        let mut a = first.clone();
        let mut b = calls.clone();
        // Row order follows the first half read in each batch; the rows themselves must match.
        a.sort();
        b.sort();
        let only = |x: &[String], y: &[String]| -> Vec<String> {
            x.iter().filter(|r| !y.contains(r)).cloned().collect()
        };
        assert!(
            a == b,
            "batch size {batch}: only in one batch: {:#?}, only in batches of {batch}: {:#?}",
            only(&a, &b),
            only(&b, &a)
        );
        assert_eq!(other_unknowns, unknowns, "batch size {batch}");
    }
}

#[test]
fn stops_count_firings_not_harvested_turns() {
    // One turn harvested (a synthetic Stop) and later its real Stop, plus a turn only ever
    // harvested: the agent fired one Stop; the store has two turns.
    let env = TestEnv::new();
    let mut harvested = entry("Stop", "s1");
    harvested.turn_id = Some("t1".into());
    harvested.response = Some("harvested".into());
    harvested.synthetic = Some(true);
    let mut only_harvested = entry("Stop", "s1");
    only_harvested.turn_id = Some("t2".into());
    only_harvested.synthetic = Some(true);
    let mut real = entry("Stop", "s1");
    real.turn_id = Some("t1".into());
    real.turn_recorded = Some(true);
    env.append(&[
        harvested.to_line(),
        only_harvested.to_line(),
        real.to_line(),
    ]);
    env.ingest_once();
    assert_eq!(
        env.int("SELECT stops FROM sessions WHERE session_id = 's1'"),
        1
    );
    assert_eq!(env.int("SELECT sum(stops) FROM v_daily"), 1);
    assert_eq!(
        env.int("SELECT count(*) FROM turns WHERE session_id = 's1'"),
        2
    );
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 's1'"),
        3
    );
}

/// The stderr of a running child, read line by line on a thread as it comes.
struct Stderr(Arc<std::sync::Mutex<Vec<String>>>);

impl Stderr {
    fn of(child: &mut std::process::Child) -> Stderr {
        let pipe = child.stderr.take().expect("stderr piped");
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = Arc::clone(&lines);
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(pipe)) {
                let Ok(line) = line else { return };
                sink.lock().unwrap().push(line);
            }
        });
        Stderr(lines)
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// Waits at most `timeout` for a line that `want` accepts, and returns it.
    fn wait_for(&self, timeout: Duration, want: impl Fn(&str) -> bool) -> Option<String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(line) = self.lines().into_iter().find(|l| want(l)) {
                return Some(line);
            }
            if std::time::Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(unix)]
#[test]
fn follow_mode_says_where_it_stands_at_start_and_beats_while_it_works() {
    let env = TestEnv::new();
    env.append(&lines(5));
    let mut child = env.spawn_follow(&["--heartbeat-ms", "300"]);
    let err = Stderr::of(&mut child);
    let wait = Duration::from_secs(15);
    let start = err
        .wait_for(wait, |l| l.contains("following"))
        .expect("a start line");
    assert_eq!(
        start,
        format!(
            "cmstore ingest: following {} into {}; 5 lines behind; woken by file notifications, \
             a poll every 10s; no automatic retention (retention_days is not set)",
            env.queue().display(),
            env.db().display()
        )
    );
    // The first heartbeat comes after the first pass: it reports the backlog.
    let first = err
        .wait_for(wait, |l| l.contains("lines in the last"))
        .expect("a heartbeat");
    assert!(
        first.starts_with(
            "cmstore ingest: 5 lines in the last 300ms (5 rows, 0 duplicates, 0 rejects), "
        ) && first.ends_with(" lines/s while busy; 0 lines behind"),
        "{first}"
    );
    env.append(&lines(3));
    assert_eq!(env.wait_for("SELECT count(*) FROM events", 8, wait), 8);
    let second = err
        .wait_for(wait, |l| {
            l.starts_with("cmstore ingest: 3 lines in the last")
        })
        .expect("a heartbeat for the new lines");
    assert!(
        second.contains("(3 rows, 0 duplicates, 0 rejects)"),
        "{second}"
    );
    // Idle: one line per 15 heartbeats, not one per heartbeat.
    let idle = err
        .wait_for(wait, |l| l.contains("idle for"))
        .expect("an idle heartbeat");
    assert_eq!(
        idle,
        "cmstore ingest: idle for 4.5s; 8 lines since start; 0 lines behind"
    );
    common::terminate(&child);
    let status = common::wait_timeout(&mut child, Duration::from_secs(10)).expect("stopped");
    assert!(status.success(), "{status:?}");
    std::thread::sleep(Duration::from_millis(100));
    let all = err.lines();
    assert_eq!(
        all.iter().filter(|l| l.contains("idle for")).count(),
        1,
        "{all:#?}"
    );
    let last = all.last().expect("a summary");
    assert!(
        last.starts_with("cmstore ingest: 8 lines, 8 rows, 0 duplicates, 0 rejects in ")
            && last.contains(" s busy)"),
        "{last}"
    );
}

/// `n` lines `days` days old, in session `session`.
fn aged_lines(n: usize, session: &str, days: i64) -> Vec<String> {
    let base = crate::common::now_ms() - days * 86_400_000;
    (0..n)
        .map(|i| {
            let mut e = entry(["UserPromptSubmit", "Notification"][i % 2], session);
            e.timestamp = base + i as i64;
            e.to_line()
        })
        .collect()
}

/// Every id in the queue file, and how often it is there.
fn queue_ids(env: &TestEnv) -> std::collections::HashMap<String, usize> {
    let mut ids = std::collections::HashMap::new();
    for line in env.queue_lines() {
        *ids.entry(line["id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    ids
}

#[cfg(unix)]
#[test]
fn a_running_ingest_applies_an_explicit_retention_while_hooks_keep_appending() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "retention_days = 2\ncompact_queue = true\n",
    )
    .unwrap();
    let mut recent = lines(40);
    env.append(&aged_lines(300, "old", 5));
    env.append(&recent);
    let mut child = env
        .std_cmd()
        .env("CMSTORE_RETENTION_INTERVAL_MS", "150")
        .args(["ingest", "--poll-ms", "20", "--heartbeat-ms", "0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = Stderr::of(&mut child);
    // Hooks keep appending, new lines and old ones (an agent's clock off, a replayed line),
    // over several retention runs and queue compactions.
    for round in 0..20 {
        let new = lines(10);
        env.append(&new);
        recent.extend(new);
        env.append(&aged_lines(5, &format!("late{round}"), 4));
        std::thread::sleep(Duration::from_millis(60));
    }
    let wait = Duration::from_secs(30);
    let want = recent.len() as i64;
    assert_eq!(
        env.wait_for("SELECT count(*) FROM events", want, wait),
        want
    );
    // A run after the last append: nothing old stays, in the store or in the queue.
    let runs = err
        .lines()
        .iter()
        .filter(|l| l.contains("retention (2 days"))
        .count();
    err.wait_for(wait, |_| {
        err.lines()
            .iter()
            .filter(|l| l.contains("retention (2 days"))
            .count()
            > runs + 1
    })
    .expect("more retention runs");
    common::terminate(&child);
    let status = common::wait_timeout(&mut child, Duration::from_secs(10)).expect("stopped");
    assert!(status.success(), "{status:?}\n{:#?}", err.lines());
    assert_eq!(env.int(ROWS_EXACT), want, "nothing new lost or doubled");
    assert_eq!(
        env.int("SELECT count(*) FROM events WHERE session_id = 'old' OR session_id LIKE 'late%'"),
        0
    );
    let ids = queue_ids(&env);
    for line in &recent {
        let id = serde_json::from_str::<serde_json::Value>(line).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(ids.get(&id), Some(&1), "{id} is in the queue exactly once");
        let stored: i64 = env
            .conn()
            .query_row("SELECT count(*) FROM events WHERE id = ?1", [&id], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(stored, 1, "{id} is stored exactly once");
    }
    assert_eq!(ids.len(), recent.len(), "the old lines left the queue");
    let all = err.lines();
    // Every old line left the queue exactly once, over the runs.
    let dropped: u64 = all
        .iter()
        .filter(|l| l.contains("retention (2 days"))
        .map(|l| {
            let (_, rest) = l.split_once("transcript cursors, ").unwrap();
            rest.split(' ').next().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(dropped, 300 + 20 * 5, "{all:#?}");
    assert!(
        !all.iter()
            .any(|l| l.contains("warning") || l.contains("not compacted")),
        "{all:#?}"
    );
    let out = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let retention = &status["retention"];
    assert_eq!(retention["days"], 2);
    assert_eq!(retention["automatic"], true);
    assert_eq!(retention["compact_queue"], true);
    assert!(retention["last_run"].is_string(), "{retention}");
}

#[cfg(unix)]
#[test]
fn without_an_explicit_retention_a_running_ingest_deletes_nothing() {
    let env = TestEnv::new();
    let old = aged_lines(30, "old", 30);
    env.append(&old);
    let before = std::fs::read(env.queue()).unwrap();
    // A blank variable is no setting: the default 7 days apply to `prune` alone.
    let mut child = env
        .std_cmd()
        .env("CMSTORE_RETENTION_INTERVAL_MS", "50")
        .env("CMSTORE_RETENTION_DAYS", " ")
        .env("CMSTORE_COMPACT_QUEUE", "1")
        .args(["ingest", "--poll-ms", "20"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = Stderr::of(&mut child);
    let wait = Duration::from_secs(15);
    assert_eq!(env.wait_for("SELECT count(*) FROM events", 30, wait), 30);
    // Twenty intervals: had a run deleted anything, it would have by now.
    std::thread::sleep(Duration::from_secs(1));
    common::terminate(&child);
    common::wait_timeout(&mut child, Duration::from_secs(10)).expect("stopped");
    assert_eq!(env.int("SELECT count(*) FROM events"), 30);
    assert_eq!(
        std::fs::read(env.queue()).unwrap(),
        before,
        "the queue is untouched"
    );
    let all = err.lines();
    assert!(!all.iter().any(|l| l.contains("): removed")), "{all:#?}");
    assert!(
        all[0].ends_with("no automatic retention (retention_days is not set)"),
        "{all:#?}"
    );
    let out = env
        .cmd()
        .args(["status", "--format", "json"])
        .output()
        .unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["retention"]["automatic"], false);
    assert_eq!(status["retention"]["last_run"], serde_json::Value::Null);
}
