//! `cmstore show` over migration 0019: what a session's story shows of its tool calls comes
//! from their `tool_calls` rows, the same for a store migrated from 0018 as for one ingested
//! at 0019.

use std::path::Path;

use serde_json::Value;

use crate::common::run_at_100 as run;
use crate::common::{entry, real_fixtures, run_in_zone, TestEnv};

/// 2026-01-05T10:00:00Z: old enough that "ago" prints a date.
const T0: i64 = 1_767_607_200_000;
const SECOND: i64 = 1_000;

/// The store as migration 0018 left it, made from one ingested at the latest: 0020 undone,
/// the four columns and 0019's indexes taken out, 0017's indexes back, the schema version 18.
fn back_to_0018(env: &TestEnv) {
    let conn = env.rw();
    crate::summarize::back_to_0019(&conn);
    conn.execute_batch(
        "DROP INDEX tool_calls_session_id;
         ALTER TABLE tool_calls DROP COLUMN input;
         ALTER TABLE tool_calls DROP COLUMN risk;
         ALTER TABLE tool_calls DROP COLUMN decision;
         ALTER TABLE tool_calls DROP COLUMN delegated_agent;",
    )
    .unwrap();
    conn.execute_batch(include_str!("../../migrations/0017_story_indexes.sql"))
        .unwrap();
    conn.pragma_update(None, "user_version", 18).unwrap();
}

/// The schema as a list: each table's columns, each index's, view's and trigger's SQL.
pub(crate) fn schema(conn: &rusqlite::Connection) -> Vec<String> {
    let mut stmt = conn
        .prepare(
            "SELECT m.type, m.name, CASE m.type WHEN 'table' THEN \
                 (SELECT group_concat(c.name, ',') FROM pragma_table_info(m.name) c) \
                 ELSE m.sql END \
             FROM sqlite_master m WHERE m.name NOT LIKE 'sqlite_%' ORDER BY m.type, m.name",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok(format!(
                "{} {}: {}",
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?.unwrap_or_default()
            ))
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// A call's key, and the input, finding and delegation its row keeps.
type Shown = (String, Option<String>, Option<String>, Option<String>);

/// What the store keeps of each call for the story.
fn shown_columns(env: &TestEnv) -> Vec<Shown> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT call_key, input, risk, delegated_agent FROM tool_calls \
             ORDER BY call_key, rowid",
        )
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Ingests `lines` into two stores, one at 0019 and one taken back to 0018, and asserts that
/// `show` tells each of `sessions` alike in every form once the second has migrated. Returns
/// the first store.
fn fresh_and_migrated(write: &dyn Fn(&TestEnv), sessions: &[&str]) -> TestEnv {
    let fresh = TestEnv::new();
    write(&fresh);
    fresh.ingest_once();
    let old = TestEnv::new();
    write(&old);
    old.ingest_once();
    back_to_0018(&old);
    let made = tempfile::tempdir().unwrap();
    let path = made.path().join("0018.db");
    let mut at_0018 = rusqlite::Connection::open(&path).unwrap();
    cmstore::store::migrate(&mut at_0018, &path, 18).unwrap();
    assert_eq!(
        schema(&old.conn()),
        schema(&at_0018),
        "a store as 0018 left it"
    );
    for session in sessions {
        for args in [
            vec!["show", session, "--no-pager"],
            vec!["show", session, "--full"],
            vec!["show", session, "--format", "json"],
        ] {
            // The first `show` of the old store migrates it.
            assert_eq!(run(&old, &args), run(&fresh, &args), "{args:?}");
        }
    }
    assert_eq!(schema(&old.conn()), schema(&fresh.conn()));
    assert_eq!(shown_columns(&old), shown_columns(&fresh));
    fresh
}

#[test]
fn a_store_migrated_from_0018_shows_what_one_ingested_at_0019_shows() {
    let long = format!("cargo test -- {}", "--exact name ".repeat(30));
    let spaced = format!("echo {}done", " ".repeat(300));
    let write = |env: &TestEnv| {
        let mut lines = Vec::new();
        let mut at =
            |hook: &str,
             s: i64,
             call: &str,
             edit: &dyn Fn(&mut cmstore::model::queue_line::QueueEntry)| {
                let mut e = entry(hook, "mig-1");
                e.timestamp = T0 + s * SECOND;
                e.tool_call_id = Some(call.into());
                edit(&mut e);
                lines.push(e.to_line());
            };
        let input = |v: Value| Some(v.to_string());
        at("PreToolUse", 1, "c1", &|e| {
            e.tool_input = input(serde_json::json!({"command": "rm -rf /"}));
            e.risk = Some("rm-rf-root".into());
            e.decision = Some("deny".into());
        });
        at("PreToolUse", 2, "c2", &|e| {
            e.tool_name = Some("Task".into());
            e.delegated_agent = Some("reviewer".into());
            e.tool_input = input(serde_json::json!({"prompt": "review the diff", "n": 1}));
        });
        at("PostToolUse", 3, "c2", &|e| {
            e.tool_name = Some("Task".into())
        });
        // Longer than a row keeps: cut there, whole in JSON and with --full.
        at("PreToolUse", 4, "c3", &|e| {
            e.tool_input = input(serde_json::json!({"command": long}))
        });
        at("PostToolUse", 5, "c3", &|_| {});
        // So much whitespace that the row's part is too little even for the text view.
        at("PreToolUse", 6, "c4", &|e| {
            e.tool_input = input(serde_json::json!({"command": spaced}))
        });
        // No input on the PreToolUse: the PostToolUse's.
        at("PreToolUse", 7, "c5", &|_| {});
        at("PostToolUse", 8, "c5", &|e| {
            e.tool_input = input(serde_json::json!({"file_path": "src/x.rs"}))
        });
        // Only the end was seen.
        at("PostToolUseFailure", 9, "c6", &|e| {
            e.tool_input = input(serde_json::json!({"todos": [{"content": "a  b"}]}))
        });
        env.append(&lines);
        // Another producer's line: the input an object, with spaces between its tokens.
        env.append_raw(
            format!(
                "{{\"hookType\": \"PreToolUse\", \"id\": \"raw-1\", \"timestamp\": {}, \
                 \"sessionId\": \"mig-1\", \"toolName\": \"Grep\", \"toolCallId\": \"c7\", \
                 \"toolInput\": {{ \"pattern\" : \"fn  main\", \"glob\": \"*.rs\" }} }}\n",
                T0 + 10 * SECOND
            )
            .as_bytes(),
        );
    };
    let fresh = fresh_and_migrated(&write, &["mig-1"]);
    let json: Value =
        serde_json::from_str(&run(&fresh, &["show", "mig-1", "--format", "json"])).unwrap();
    let calls: Vec<&Value> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .collect();
    let inputs: Vec<&str> = calls.iter().map(|c| c["input"].as_str().unwrap()).collect();
    assert_eq!(
        inputs,
        [
            "rm -rf /",
            "review the diff",
            long.as_str(),
            spaced.as_str(),
            "src/x.rs",
            r#"{"todos":[{"content":"a  b"}]}"#,
            "fn  main"
        ]
    );
    assert_eq!(calls[0]["risk"], "rm-rf-root");
    assert_eq!(calls[0]["decision"], "deny");
    assert_eq!(calls[1]["delegated_to"], "reviewer");
    let text = run(&fresh, &["show", "mig-1", "--no-pager"]);
    assert!(
        text.contains("Task  -> reviewer  review the diff"),
        "{text}"
    );
    assert!(text.contains("echo done  [in flight]"), "{text}");
    let kept = shown_columns(&fresh);
    let c3 = kept.iter().find(|c| c.0 == "c3").unwrap();
    assert_eq!(c3.1.as_ref().unwrap().chars().count(), 257);
    assert!(c3.1.as_ref().unwrap().ends_with('…'));

    // The lines gone (as a prune of another tool would leave it), the story still shows what
    // the calls' rows hold: the finding, the delegation and the inputs.
    fresh
        .rw()
        .execute_batch("DELETE FROM events WHERE hook_type LIKE '%ToolUse%'")
        .unwrap();
    let text = run(&fresh, &["show", "mig-1", "--no-pager"]);
    assert!(
        text.contains("rm -rf /  [denied, gate: rm-rf-root (deny)]"),
        "{text}"
    );
    assert!(
        text.contains("Task  -> reviewer  review the diff"),
        "{text}"
    );
    assert!(text.contains("Grep  fn main"), "{text}");
}

/// Queue lines made from the shared real PreToolUse and PostToolUse payloads of Claude Code:
/// half in cmstore's form (toolInput a string of JSON), half as another producer writes them
/// (an object, with whitespace between its tokens). Returns the lines and the sessions.
fn real_lines(dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut sessions = Vec::new();
    let mut n = 0;
    for hooks in std::fs::read_dir(dir.join("claude-code")).unwrap() {
        let hooks = hooks.unwrap().path();
        for (file, hook) in [
            ("pre_tool_use.jsonl", "PreToolUse"),
            ("post_tool_use.jsonl", "PostToolUse"),
        ] {
            let Ok(text) = std::fs::read_to_string(hooks.join(file)) else {
                continue;
            };
            for payload in text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            {
                let Some(session) = payload["session_id"].as_str() else {
                    continue;
                };
                n += 1;
                let mut e = entry(hook, session);
                e.timestamp = T0 + n * SECOND;
                e.tool_name = payload["tool_name"].as_str().map(str::to_string);
                e.tool_call_id = payload["tool_use_id"].as_str().map(str::to_string);
                let input = &payload["tool_input"];
                if n % 2 == 0 {
                    e.tool_input = (!input.is_null()).then(|| input.to_string());
                    lines.push(e.to_line());
                } else {
                    let mut line: Value = serde_json::from_str(&e.to_line()).unwrap();
                    line["toolInput"] = input.clone();
                    let spaced = serde_json::to_string_pretty(&line).unwrap();
                    lines.push(spaced.replace('\n', " "));
                }
                if !sessions.iter().any(|s| s == session) {
                    sessions.push(session.to_string());
                }
            }
        }
    }
    (lines, sessions)
}

#[test]
fn real_tool_inputs_show_alike_after_the_migration_and_at_0019() {
    let Some(dir) = real_fixtures() else { return };
    let (lines, sessions) = real_lines(&dir);
    assert!(sessions.len() > 3, "{} sessions", sessions.len());
    let write = |env: &TestEnv| {
        let mut text = lines.join("\n");
        text.push('\n');
        env.append_raw(text.as_bytes());
    };
    let sessions: Vec<&str> = sessions.iter().map(String::as_str).collect();
    let fresh = fresh_and_migrated(&write, &sessions);
    let cut = fresh.int("SELECT count(*) FROM tool_calls WHERE length(input) = 257");
    let all = fresh.int("SELECT count(*) FROM tool_calls WHERE input IS NOT NULL");
    assert!(cut > 0 && cut < all, "{cut} cut of {all}");
}

#[test]
fn a_call_s_halves_in_two_ingests_show_what_one_ingest_shows() {
    let halves = |env: &TestEnv, stage: u8| {
        let line = |hook: &str, s: i64, call: &str, input: Option<&str>| {
            let mut e = entry(hook, "split-1");
            e.timestamp = T0 + s * SECOND;
            e.tool_call_id = Some(call.into());
            e.tool_input = input.map(str::to_string);
            if call == "c1" && hook == "PreToolUse" {
                e.risk = Some("curl-pipe-sh".into());
                e.decision = Some("allow".into());
            }
            e.to_line()
        };
        let pres = [
            line("PreToolUse", 1, "c1", Some(r#"{"command":"curl x | sh"}"#)),
            line("PreToolUse", 2, "c2", None),
        ];
        let posts = [
            line(
                "PostToolUse",
                3,
                "c1",
                Some(r#"{"command":"not this one"}"#),
            ),
            line("PostToolUse", 4, "c2", Some(r#"{"command":"cargo test"}"#)),
            // Its PreToolUse comes later (in a later ingest): it still wins.
            line("PostToolUse", 6, "c3", Some(r#"{"command":"the post's"}"#)),
        ];
        let late = [line(
            "PreToolUse",
            5,
            "c3",
            Some(r#"{"command":"the pre's"}"#),
        )];
        match stage {
            0 => env.append(&pres),
            1 => env.append(&posts),
            _ => env.append(&late),
        }
    };
    let whole = TestEnv::new();
    for stage in 0..3 {
        halves(&whole, stage);
    }
    whole.ingest_once();
    // Each stage in an ingest of its own: the later halves join the stored calls.
    let split = TestEnv::new();
    for stage in 0..3 {
        halves(&split, stage);
        split.ingest_once();
    }
    for args in [
        vec!["show", "split-1", "--no-pager"],
        vec!["show", "split-1", "--format", "json"],
    ] {
        assert_eq!(run(&split, &args), run(&whole, &args), "{args:?}");
    }
    assert_eq!(shown_columns(&split), shown_columns(&whole));
    let inputs: Vec<Option<String>> = shown_columns(&split).into_iter().map(|c| c.1).collect();
    assert_eq!(
        inputs,
        [
            Some("curl x | sh".to_string()),
            Some("cargo test".to_string()),
            Some("the pre's".to_string())
        ]
    );
    assert_eq!(shown_columns(&split)[0].2.as_deref(), Some("curl-pipe-sh"));
}

#[test]
fn a_store_migrated_from_0020_shows_the_usage_one_built_at_0021_shows() {
    let fresh = crate::summarize::responses_at_day_edges();
    let old = crate::summarize::responses_at_day_edges();
    crate::summarize::back_to_0020(&old.rw());
    let made = tempfile::tempdir().unwrap();
    let path = made.path().join("0020.db");
    let mut at_0020 = rusqlite::Connection::open(&path).unwrap();
    cmstore::store::migrate(&mut at_0020, &path, 20).unwrap();
    assert_eq!(
        schema(&old.conn()),
        schema(&at_0020),
        "a store as 0020 left it"
    );
    for session in ["s-a", "s-b"] {
        for args in [
            vec!["show", session, "--no-pager"],
            vec!["show", session, "--format", "json"],
        ] {
            // The first `show` of the old store migrates it.
            let shown = run(&old, &args);
            assert_eq!(shown, run(&fresh, &args), "{args:?}");
            assert!(shown.contains("tokens"), "{shown}");
        }
    }
    assert_eq!(schema(&old.conn()), schema(&fresh.conn()));
}

/// `show`'s times of day as the local zone has them, on both sides of its changes, also when a
/// change falls within a UTC hour (the clock looks the offset up once per hour). POSIX rules
/// in `TZ`, so the test needs no time zone database.
#[test]
fn times_of_day_follow_the_zone_across_its_changes() {
    let env = TestEnv::new();
    // 2026-03-29T00:00:00Z and 2026-10-25T00:00:00Z, the last Sundays of March and October.
    let (march, october) = (1_774_742_400_000_i64, 1_792_886_400_000_i64);
    let hour = 3_600 * SECOND;
    let at = [
        march + hour - SECOND,
        march + hour,
        march + hour + hour / 2 - SECOND,
        march + hour + hour / 2,
        october + hour - SECOND,
        october + hour,
    ];
    let lines: Vec<String> = at
        .iter()
        .enumerate()
        .map(|(i, ts)| {
            let mut e = entry("UserPromptSubmit", "tz-1");
            e.timestamp = *ts;
            e.prompt = Some(format!("p{i}"));
            e.to_line()
        })
        .collect();
    env.append_raw(format!("{}\n", lines.join("\n")).as_bytes());
    env.ingest_once();
    let clock_of = |tz: &str| -> Vec<String> {
        run_in_zone(&env, tz, &["show", "tz-1", "--no-pager"])
            .lines()
            .filter(|l| l.contains("  prompt   p"))
            .map(|l| l[..8].to_string())
            .collect()
    };
    // Central Europe: +1, +2 from 01:00 UTC on the last Sunday of March, +1 again from 01:00
    // UTC on the last Sunday of October.
    assert_eq!(
        clock_of("CET-1CEST,M3.5.0,M10.5.0/3"),
        ["01:59:59", "03:00:00", "03:29:59", "03:30:00", "02:59:59", "02:00:00"]
    );
    // A zone whose spring change is at 02:30 standard time: 01:30 UTC, within an hour.
    assert_eq!(
        clock_of("XST-1XDT,M3.5.0/2:30,M10.5.0/3"),
        ["01:59:59", "02:00:00", "02:29:59", "03:30:00", "02:59:59", "02:00:00"]
    );
}

/// A failed call says why: its exit code in the brackets, and the first line of its error (or,
/// without one, of what it printed, stderr first; Claude Code's `Exit code N` line with the
/// line after it) on an `error` line; all of it with `--full` and in JSON. A call that
/// succeeded says nothing more.
#[test]
fn show_says_why_a_call_failed() {
    let env = TestEnv::new();
    let at = |hook: &str,
              n: i64,
              call: &str,
              f: &dyn Fn(&mut cmstore::model::queue_line::QueueEntry)| {
        let mut e = entry(hook, "why-1");
        e.timestamp = T0 + n * SECOND;
        e.tool_call_id = Some(call.into());
        f(&mut e);
        e.to_line()
    };
    let lines = vec![
        at("PreToolUse", 1, "c1", &|e| {
            e.tool_input = Some(r#"{"command":"cargo test"}"#.into())
        }),
        // Claude Code's PostToolUseFailure: the error as text, its first line the exit code.
        at("PostToolUseFailure", 2, "c1", &|e| {
            e.error = Some(serde_json::json!({
                "message": "Exit code 101\nerror: test failed, to rerun pass `--lib`\nmore"
            }))
        }),
        at("PreToolUse", 3, "c2", &|e| {
            e.tool_input = Some(r#"{"command":"grep -q x f"}"#.into())
        }),
        // A shell result with an exit code and no error: what it printed on stderr says why.
        at("PostToolUse", 4, "c2", &|e| {
            e.exit_code = Some(2);
            e.tool_failed = Some(true);
            e.tool_response = Some(r#"{"stdout":"","stderr":"grep: f: No such file\n"}"#.into());
        }),
        at("PreToolUse", 5, "c3", &|e| {
            e.tool_input = Some(r#"{"command":"ls"}"#.into())
        }),
        at("PostToolUse", 6, "c3", &|e| {
            e.tool_response = Some(r#"{"stdout":"a\nb","stderr":""}"#.into())
        }),
    ];
    env.append(&lines);
    env.ingest_once();

    let text = run(&env, &["show", "why-1", "--no-pager"]);
    let tool_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("  tool  ") || l.contains("  error  "))
        .collect();
    assert_eq!(tool_lines.len(), 5, "{text}");
    assert!(tool_lines[0].contains("cargo test  [failed"), "{text}");
    assert!(
        tool_lines[1]
            .ends_with("error    Exit code 101: error: test failed, to rerun pass `--lib`"),
        "{text}"
    );
    assert!(tool_lines[2].contains("[failed, exit 2"), "{text}");
    assert!(
        tool_lines[3].ends_with("error    grep: f: No such file"),
        "{text}"
    );
    assert!(tool_lines[4].contains("ls  [succeeded"), "{text}");

    let full = run(&env, &["show", "why-1", "--no-pager", "--full"]);
    assert!(
        full.contains("error    Exit code 101\nerror: test failed, to rerun pass `--lib`\nmore"),
        "{full}"
    );

    let json: Value =
        serde_json::from_str(&run(&env, &["show", "why-1", "--format", "json"])).unwrap();
    let calls: Vec<&Value> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .collect();
    assert_eq!(
        calls[0]["error"],
        "Exit code 101\nerror: test failed, to rerun pass `--lib`\nmore"
    );
    assert!(calls[0].get("exit_code").is_none(), "{}", calls[0]);
    assert_eq!(calls[1]["exit_code"], 2);
    assert_eq!(calls[1]["error"], "grep: f: No such file\n");
    assert!(calls[2].get("error").is_none() && calls[2].get("exit_code").is_none());
}
