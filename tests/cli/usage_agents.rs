//! Every agent's usage on real files of many users and versions (`../shared/fixtures/
//! real-more`): `cmstore import` finds every session and counts each response once, equal to
//! a count written here from the raw files, and a second import adds nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{real_more_fixtures, TestEnv};

/// Per session: (responses, input, output, cache read), as the store holds them.
type Counts = BTreeMap<String, [i64; 4]>;

/// Every file under `dir` whose name passes `keep`, sorted.
fn files_under(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if keep(&path) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `import` of `dir` into `env`, asserted successful; its stderr.
fn import(env: &TestEnv, dir: &Path) -> String {
    let out = env.cmd().arg("import").arg(dir).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

/// The store's counts per session of `agent`.
fn stored(env: &TestEnv, agent: &str) -> Counts {
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT session_id, count(*), sum(input_tokens), sum(output_tokens),
               sum(cache_read_tokens) FROM usage WHERE agent = ?1 GROUP BY session_id",
        )
        .unwrap();
    let rows = stmt
        .query_map([agent], |r| {
            Ok((r.get(0)?, [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?]))
        })
        .unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Gemini CLI's counts by hand: every `gemini` message with `tokens`, once per message id
/// (the last write of a JSONL chat wins), input without the cached part plus tool prompts,
/// output with the thoughts (billed as output), the cached part as cache reads; each
/// message's four stored parts add up to Gemini's own `total`. A subagent's chat
/// (`chats/<parent>/<id>.json`) counts in its parent session.
fn gemini_by_hand(dir: &Path) -> Counts {
    let chats = files_under(dir, &|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name.starts_with("session-") || p.parent().unwrap().parent().unwrap().ends_with("chats")
    });
    let mut messages: BTreeMap<(String, String), Value> = BTreeMap::new();
    for chat in chats {
        let text = std::fs::read_to_string(&chat).unwrap();
        let (session, list): (String, Vec<Value>) = if chat.extension().unwrap() == "json" {
            let doc: Value = serde_json::from_str(&text).unwrap();
            let parent = chat.parent().unwrap();
            let session = if parent.parent().unwrap().ends_with("chats") {
                parent.file_name().unwrap().to_string_lossy().into_owned()
            } else {
                doc["sessionId"].as_str().unwrap().to_owned()
            };
            (session, doc["messages"].as_array().unwrap().clone())
        } else {
            let lines: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            (lines[0]["sessionId"].as_str().unwrap().to_owned(), lines)
        };
        for m in list {
            if m["type"] == "gemini" && m["tokens"].is_object() {
                let id = m["id"].as_str().unwrap().to_owned();
                messages.insert((session.clone(), id), m);
            }
        }
    }
    let mut counts = Counts::new();
    for ((session, _), m) in messages {
        let t = &m["tokens"];
        let n = |k: &str| t[k].as_i64().unwrap_or(0);
        let parts = [
            n("input") - n("cached") + n("tool"),
            n("output") + n("thoughts"),
            n("cached"),
        ];
        assert_eq!(parts.iter().sum::<i64>(), n("total"), "{m}");
        let c = counts.entry(session).or_default();
        c[0] += 1;
        for (slot, part) in c[1..].iter_mut().zip(parts) {
            *slot += part;
        }
    }
    counts
}

#[test]
fn every_gemini_chat_of_every_version_is_imported_and_counted_once() {
    let Some(dir) = real_more_fixtures("gemini") else {
        return;
    };
    let env = TestEnv::new();
    let stderr = import(&env, &dir);
    let expected = gemini_by_hand(&dir);
    // Six JSON chats (2025-09 to 2026-04), three subagent chats under one of them, one JSONL;
    // and a `gemini -o stream-json` output, read as a transcript with no usage in it.
    assert_eq!(expected.len(), 7, "{expected:?}");
    assert!(stderr.contains("11 transcript(s)"), "{stderr}");
    assert_eq!(stored(&env, "gemini"), expected);
    assert_eq!(
        env.int("SELECT count(DISTINCT subagent_id) FROM usage WHERE sidechain = 1"),
        3
    );
    let sessions = env.int("SELECT count(*) FROM sessions WHERE agent = 'gemini'");
    assert_eq!(sessions, 7);
    let before = env.int("SELECT count(*) FROM usage");
    import(&env, &dir);
    assert_eq!(
        env.int("SELECT count(*) FROM usage"),
        before,
        "re-import +0"
    );
    assert_eq!(stored(&env, "gemini"), expected);
}
