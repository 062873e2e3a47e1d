//! `cmstore verify`: the record's chain proves that no stored event was altered, removed or
//! inserted since ingest stored it (issue 39), edits made with the sqlite3 CLI as an
//! administrator would make them, prune's deletions told apart from an intruder's.

use std::process::Command;

use serde_json::Value;

use crate::common::{assert_chain_whole, entry, TestEnv};

/// `cmstore verify ARGS`: its exit code and stdout.
fn verify(env: &TestEnv, args: &[&str]) -> (i32, String) {
    let out = env.cmd().arg("verify").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// Runs `sql` on the store as an administrator would: with the sqlite3 CLI when it is here,
/// else through SQLite all the same (a note says so).
fn as_admin(env: &TestEnv, sql: &str) {
    match Command::new("sqlite3").arg(env.db()).arg(sql).output() {
        Ok(out) => assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(_) => {
            eprintln!("note: no sqlite3 CLI here; the edit is made through SQLite directly");
            env.rw().execute_batch(sql).unwrap();
        }
    }
}

/// Lines of `sessions` sessions, `per` prompts each, dated `ts`.
fn prompts(sessions: usize, per: usize, ts: i64) -> Vec<String> {
    (0..sessions * per)
        .map(|i| {
            let mut e = entry("UserPromptSubmit", &format!("s{}", i % sessions));
            e.timestamp = ts + i as i64;
            e.prompt = Some(format!("prompt {i}"));
            e.to_line()
        })
        .collect()
}

#[test]
fn an_edit_a_delete_and_an_insert_are_each_named() {
    let env = TestEnv::new();
    let now = crate::common::now_ms();
    env.append(&prompts(3, 4, now - 60_000));
    env.ingest_once();
    env.append(&prompts(2, 2, now - 30_000));
    env.ingest_once();
    let whole = assert_chain_whole(&env);
    assert_eq!(whole["rows"], 16);
    let (code, text) = verify(&env, &[]);
    assert_eq!(code, 0);
    assert!(
        text.starts_with(
            "Verified 16 rows in 2 chain records: none altered, removed or inserted.\nHead: "
        ),
        "{text}"
    );
    let (_, head) = verify(&env, &["--head"]);
    let head = head.trim().to_string();
    assert_eq!(head.len(), 64, "{head}");
    assert!(text.ends_with(&format!("Head: {head}\n")), "{text}");

    as_admin(
        &env,
        "UPDATE events SET entry = replace(entry, 'prompt 2', 'prompt two') WHERE seq = 3;
         DELETE FROM events WHERE seq = 7;
         INSERT INTO events(id, ts, entry, ingested_at) VALUES ('forged', 1, '{}', 1);",
    );
    let (code, text) = verify(&env, &["--expect", &head]);
    assert_eq!(code, 1, "{text}");
    let id3 = env.text("SELECT id FROM events WHERE seq = 3");
    let forged = env.int("SELECT seq FROM events WHERE id = 'forged'");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "3 changes found (14 rows verified in 2 chain records):"
    );
    assert_eq!(lines[1], format!("  row 3 ({id3}) was altered"));
    assert!(
        lines[2].starts_with("  row 7 (of ")
            && lines[2].ends_with(") was removed, and not by prune"),
        "{text}"
    );
    assert_eq!(
        lines[3],
        format!("  row {forged} (forged) was inserted, not by ingest")
    );
    // The head kept earlier is still the chain's: the rows changed under it.
    assert!(
        text.contains(&format!("The head {head} is in the chain.")),
        "{text}"
    );
}

#[test]
fn an_edited_chain_and_a_head_it_does_not_hold_are_said() {
    let env = TestEnv::new();
    env.append(&prompts(2, 3, crate::common::now_ms() - 1000));
    env.ingest_once();
    let before = assert_chain_whole(&env)["head"]
        .as_str()
        .unwrap()
        .to_string();
    // Rewritten from scratch, consistently: the chain checks, but not against the old head.
    env.append(&prompts(1, 1, crate::common::now_ms()));
    as_admin(&env, "DELETE FROM chain; DELETE FROM events WHERE seq > 2;");
    env.make_ingest_read_again_from_start();
    env.ingest_once();
    let (code, text) = verify(&env, &["--expect", &before]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(&format!(
            "The head {before} is NOT in the chain: the chain was rewritten since, or pruned past it."
        )),
        "{text}"
    );
    // A record's body edited: the chain breaks there.
    as_admin(
        &env,
        "UPDATE chain SET body = zeroblob(length(body)) WHERE id = (SELECT max(id) FROM chain);",
    );
    let (code, text) = verify(&env, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("does not follow from the one before it"),
        "{text}"
    );
}

#[test]
fn what_prune_removed_is_told_apart_from_what_was_removed_after() {
    let env = TestEnv::new();
    let now = crate::common::now_ms();
    let day = 86_400_000;
    env.append(&prompts(2, 5, now - 30 * day));
    env.ingest_once();
    env.append(&prompts(2, 3, now - day));
    env.ingest_once();
    let out = env
        .cmd()
        .args(["prune", "--days", "7", "--yes"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.int("SELECT count(*) FROM events"), 6);
    let whole = assert_chain_whole(&env);
    assert_eq!(whole["rows"], 6, "{whole}");
    // The emptied record went, anchored: the chain starts after it.
    assert_eq!(env.int("SELECT count(*) FROM chain WHERE kind = 'rows'"), 1);
    let (_, text) = verify(&env, &[]);
    assert!(
        text.starts_with("Verified 6 rows in 3 chain records: none altered, removed or inserted."),
        "{text}"
    );
    // More ingested, then a recent row removed by hand: not prune's.
    env.append(&prompts(1, 2, now));
    env.ingest_once();
    let head = assert_chain_whole(&env)["head"]
        .as_str()
        .unwrap()
        .to_string();
    as_admin(
        &env,
        "DELETE FROM events WHERE seq = (SELECT max(seq) FROM events);",
    );
    let (code, text) = verify(&env, &["--expect", &head]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("was removed, and not by prune"), "{text}");
}

/// Everything pruned: every record goes, the chain is anchored on the last, and what ingest
/// stores next follows from that anchor; a head kept before the prune is pruned past, one kept
/// after it stays in the chain.
#[test]
fn a_prune_of_everything_leaves_a_chain_that_goes_on() {
    let env = TestEnv::new();
    let now = crate::common::now_ms();
    env.append(&prompts(2, 2, now - 10_000));
    env.ingest_once();
    let head = |env: &TestEnv| {
        assert_chain_whole(env)["head"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let before = head(&env);
    let out = env
        .cmd()
        .args(["prune", "--before", "now", "--yes"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.int("SELECT count(*) FROM events"), 0);
    assert_eq!(env.int("SELECT count(*) FROM chain WHERE kind = 'rows'"), 0);
    let after = head(&env);
    env.append(&prompts(1, 2, crate::common::now_ms()));
    env.ingest_once();
    assert_eq!(assert_chain_whole(&env)["rows"], 2);
    let (code, text) = verify(&env, &["--expect", &after]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains(&format!("The head {after} is in the chain.")),
        "{text}"
    );
    let (code, text) = verify(&env, &["--expect", &before]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("or pruned past it"), "{text}");
}

#[test]
fn rows_stored_before_the_chain_began_are_counted_not_covered() {
    let env = TestEnv::new();
    env.append(&prompts(2, 2, crate::common::now_ms() - 1000));
    env.ingest_once();
    // As a store of the version before: no chain yet.
    crate::summarize::back_to_0028(&env.rw());
    let (code, text) = verify(&env, &[]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        text,
        "Nothing chained yet: the chain begins with the next rows ingest stores.\n\
         4 rows stored before the chain began are not covered.\n"
    );
    env.append(&prompts(1, 3, crate::common::now_ms()));
    env.ingest_once();
    let report: Value = assert_chain_whole(&env);
    assert_eq!(
        (report["rows"].as_i64(), report["before_chain"].as_i64()),
        (Some(3), Some(4))
    );
    let (_, text) = verify(&env, &[]);
    assert!(
        text.contains("\n4 rows stored before the chain began are not covered.\n"),
        "{text}"
    );
}

/// The newest row deleted: its seq is given again to the next row ingest stores, so the
/// records' seqs no longer only grow (verify then sorts what they list); the deletion is
/// still found.
#[test]
fn the_newest_row_deleted_and_its_seq_given_again_is_found() {
    let env = TestEnv::new();
    let now = crate::common::now_ms();
    env.append(&prompts(1, 3, now - 2000));
    env.ingest_once();
    as_admin(&env, "DELETE FROM events WHERE seq = 3;");
    env.append(&prompts(1, 1, now - 1000));
    env.ingest_once();
    assert_eq!(
        env.int("SELECT max(seq) FROM events"),
        3,
        "the seq was given again"
    );
    let (code, text) = verify(&env, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("  row 3 (of "), "{text}");
    assert!(text.contains(") was removed, and not by prune"), "{text}");
}

/// `usage` is chained by key (migration 0035): what `cmstore import` read from an agent's own
/// files, and a response's row updated as its counts grow, check; an edit of a count, a
/// deleted response and a forged one made with the sqlite3 CLI are each named. A second
/// import of the same files changes nothing and the chain stays whole.
#[test]
fn usage_rows_imported_and_edited_are_chained_by_key() {
    let env = TestEnv::new();
    let chats = env.user_home().join(".gemini/tmp/app/chats");
    std::fs::create_dir_all(&chats).unwrap();
    let message = |id: &str, output: u64| {
        format!(
            r#"{{"id":"{id}","type":"gemini","timestamp":"2026-04-16T22:39:17.604Z","model":"gemini-2.5-pro",
               "tokens":{{"input":100,"output":{output},"cached":0,"thoughts":0,"tool":0}}}}"#
        )
    };
    let chat = |output: u64| {
        format!(
            r#"{{"sessionId":"s-gemini","projectHash":"h","messages":[{},{},{}]}}"#,
            message("g1", output),
            message("g2", 20),
            message("g3", 30),
        )
    };
    let file = chats.join("session-2026-04-16T22-38-aaaa.json");
    std::fs::write(&file, chat(10)).unwrap();
    env.cmd().arg("import").assert().success();
    // The session went on: g1's count grew, and its row is updated in place.
    std::fs::write(&file, chat(15)).unwrap();
    env.cmd().arg("import").assert().success();
    env.cmd().arg("import").assert().success();
    assert_eq!(
        env.int("SELECT output_tokens FROM usage WHERE message_id = 'g1'"),
        15
    );
    let whole = assert_chain_whole(&env);
    assert_eq!(whole["by_table"]["usage"], 3, "{whole}");
    let (code, text) = verify(&env, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.starts_with("Verified 3 rows (3 usage) in "), "{text}");

    as_admin(
        &env,
        "UPDATE usage SET output_tokens = 1 WHERE message_id = 'g1';
         DELETE FROM usage WHERE message_id = 'g2';
         INSERT INTO usage(message_id, output_tokens, origin) VALUES ('forged', 5, 'import');",
    );
    let (code, text) = verify(&env, &[]);
    assert_eq!(code, 1, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("3 changes found (1 rows (1 usage) verified in "),
        "{text}"
    );
    assert!(lines.contains(&"  usage row g1 was altered"), "{text}");
    assert!(
        lines.contains(&"  usage row forged was inserted, not by cmstore"),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("  a usage row (key ") && l.ends_with(") was removed")),
        "{text}"
    );
}

/// A store from before usage was chained (0034): its usage rows are taken into the chain as
/// they are when a cmstore that chains them first opens it, once, and check from then on.
#[test]
fn usage_stored_before_it_was_chained_is_taken_in_once() {
    let env = TestEnv::new();
    env.append(&prompts(1, 2, crate::common::now_ms() - 1000));
    env.ingest_once();
    crate::summarize::back_to_0034(&env.rw());
    env.rw()
        .execute_batch(
            "INSERT INTO usage(message_id, output_tokens, origin) VALUES ('m1', 7, 'import'),
               ('m2', 8, 'import');",
        )
        .unwrap();
    env.ingest_once();
    let report = assert_chain_whole(&env);
    assert_eq!(report["by_table"]["usage"], 2, "{report}");
    assert_eq!(
        env.int("SELECT count(*) FROM chain WHERE kind = 'usage'"),
        1,
        "taken in by one record"
    );
    env.ingest_once();
    assert_eq!(
        env.int("SELECT count(*) FROM chain WHERE kind = 'usage'"),
        1
    );
    // A process that migrated a store and stopped before taking its rows in: verify, the
    // first to open it after, takes them in, and does not name them inserted.
    env.rw()
        .execute_batch(
            "DELETE FROM chain WHERE kind = 'usage';
             INSERT INTO meta(key, value) VALUES ('chain_keyed_adopt', 0);",
        )
        .unwrap();
    let report = assert_chain_whole(&env);
    assert_eq!(report["by_table"]["usage"], 2, "{report}");
    as_admin(
        &env,
        "UPDATE usage SET output_tokens = 70 WHERE message_id = 'm1';",
    );
    let (code, text) = verify(&env, &[]);
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("  usage row m1 was altered\n"), "{text}");
}
