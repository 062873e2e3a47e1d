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

/// `import` of `dirs` into `env`, asserted successful; its stderr.
fn import(env: &TestEnv, dirs: &[&Path]) -> String {
    let out = env.cmd().arg("import").args(dirs).output().unwrap();
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

/// The `thoughts` of every Gemini response, once per message id.
fn gemini_thoughts_by_hand(dir: &Path) -> i64 {
    let mut thoughts: BTreeMap<String, i64> = BTreeMap::new();
    for chat in files_under(dir, &|p| {
        p.extension().is_some_and(|e| e == "json" || e == "jsonl")
    }) {
        let text = std::fs::read_to_string(&chat).unwrap();
        let messages: Vec<Value> = match serde_json::from_str::<Value>(&text) {
            Ok(doc) => doc["messages"].as_array().cloned().unwrap_or_default(),
            Err(_) => text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        };
        for m in messages.iter().filter(|m| m["type"] == "gemini") {
            if let (Some(id), Some(t)) = (m["id"].as_str(), m["tokens"]["thoughts"].as_i64()) {
                thoughts.insert(id.to_owned(), t);
            }
        }
    }
    thoughts.values().sum()
}

#[test]
fn every_gemini_chat_of_every_version_is_imported_and_counted_once() {
    let Some(dir) = real_more_fixtures("gemini") else {
        return;
    };
    let env = TestEnv::new();
    let stderr = import(&env, &[&dir]);
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
    // Gemini's thoughts, kept apart as a part of the output: every response reports them.
    let thoughts = env.int("SELECT sum(reasoning_tokens) FROM usage WHERE agent = 'gemini'");
    assert_eq!(thoughts, gemini_thoughts_by_hand(&dir));
    let without = "SELECT count(*) FROM usage WHERE agent = 'gemini' AND reasoning_tokens IS NULL";
    assert_eq!(env.int(without), 0);
    let sessions = env.int("SELECT count(*) FROM sessions WHERE agent = 'gemini'");
    assert_eq!(sessions, 7);
    let before = env.int("SELECT count(*) FROM usage");
    import(&env, &[&dir]);
    assert_eq!(
        env.int("SELECT count(*) FROM usage"),
        before,
        "re-import +0"
    );
    assert_eq!(stored(&env, "gemini"), expected);
}

/// Codex's counts by hand, by the chain its running total makes: a `token_count` event is a
/// new response when its `total_token_usage.total_tokens` is the previous event's total plus
/// its own `last_token_usage.total_tokens`, or starts a new count (a compaction or a review
/// thread: the total falls back, or equals its own last). An event that repeats a total, or
/// brings back a total from before a review, is no response. Input without the cached part,
/// output with the reasoning (OpenAI counts it inside), cached input as cache reads; and the
/// reasoning apart.
fn codex_by_hand(dir: &Path) -> (Counts, BTreeMap<String, i64>) {
    let (mut counts, mut reasoning) = (Counts::new(), BTreeMap::new());
    for rollout in files_under(dir, &|p| p.extension().is_some_and(|e| e == "jsonl")) {
        let name = rollout.file_stem().unwrap().to_string_lossy().into_owned();
        let session = name[name.len() - 36..].to_owned();
        let mut previous: Option<i64> = None;
        for line in std::fs::read_to_string(&rollout).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let info = &v["payload"]["info"];
            if v["payload"]["type"] != "token_count" || !info.is_object() {
                continue;
            }
            let (total, last) = (&info["total_token_usage"], &info["last_token_usage"]);
            let n = |u: &Value, k: &str| u[k].as_i64().unwrap_or(0);
            let running = n(total, "total_tokens");
            let own = n(last, "total_tokens");
            let new = match previous {
                None => true,
                Some(p) => running != p && (running == p + own || running == own || running < p),
            };
            previous = Some(running);
            if !new || (n(last, "input_tokens") == 0 && n(last, "output_tokens") == 0) {
                continue;
            }
            let cached = n(last, "cached_input_tokens");
            let c = counts.entry(session.clone()).or_default();
            c[0] += 1;
            c[1] += n(last, "input_tokens") - cached;
            c[2] += n(last, "output_tokens");
            c[3] += cached;
            *reasoning.entry(session.clone()).or_default() += n(last, "reasoning_output_tokens");
        }
    }
    (counts, reasoning)
}

#[test]
fn every_codex_rollout_is_counted_once_and_a_review_does_not_count_twice() {
    let Some(dir) = real_more_fixtures("codex") else {
        return;
    };
    let env = TestEnv::new();
    import(&env, &[&dir]);
    let (expected, reasoning) = codex_by_hand(&dir);
    // Five sessions with usage (the older rollouts before `token_count` have none).
    assert_eq!(expected.len(), 5, "{expected:?}");
    // 019b55c1: a review thread, five compactions, and after the review the pre-review total
    // brought back unchanged (no response: the next total adds the next response to it).
    let review = "019b55c1-d022-7061-bbb9-b0c90708472b";
    assert_eq!(expected[review], [353, 850_265, 79_954, 27_494_784]);
    assert_eq!(stored(&env, "codex"), expected);
    // The reasoning apart, as a part of the output.
    for (session, sum) in reasoning {
        let sql = format!("SELECT sum(reasoning_tokens) FROM usage WHERE session_id = '{session}'");
        assert_eq!(env.int(&sql), sum, "{session}");
    }
    let before = env.int("SELECT count(*) FROM usage");
    import(&env, &[&dir]);
    assert_eq!(
        env.int("SELECT count(*) FROM usage"),
        before,
        "re-import +0"
    );
}

/// LiteLLM's pinned rates (resources/prices-litellm.tsv) of `model`, per million tokens:
/// input, output, cache read.
fn litellm_rates(model: &str) -> [f64; 3] {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("resources/prices-litellm.tsv");
    let text = std::fs::read_to_string(path).unwrap();
    let line = text
        .lines()
        .find(|l| l.split('\t').next() == Some(model))
        .unwrap_or_else(|| panic!("{model} is not in the pinned table"));
    let f: Vec<f64> = line
        .split('\t')
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    [f[0], f[1], f[4]]
}

#[test]
fn every_model_the_real_files_name_is_priced_or_free_and_codex_and_gemini_cost_what_the_table_says()
{
    let (Some(real), Some(more)) = (crate::common::real_fixtures(), real_more_fixtures("")) else {
        return;
    };
    let env = TestEnv::new();
    import(&env, &[&real, &more]);
    // Two exceptions, unpriced rather than a guess (docs/usage.md): GLM-5 Turbo (through
    // Claude Code) has no price of its maker's in LiteLLM's table, only resellers'; Qwen
    // OAuth's `coder-model` is billed per request, not per token.
    let unpriced: Vec<String> = env
        .conn()
        .prepare("SELECT DISTINCT model FROM v_usage WHERE cost_usd IS NULL ORDER BY 1")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(unpriced, ["coder-model", "glm-5-turbo"]);
    // Each Codex and Gemini session's cost, from the pinned rows written out here.
    let row_of = |model: &str| match model {
        "kimi-k2.5:cloud" => "moonshot/kimi-k2.5".to_owned(),
        "gemini-3-pro-preview" => "vertex_ai/gemini-3-pro-preview".to_owned(),
        other => other.to_owned(),
    };
    let conn = env.conn();
    let mut stmt = conn
        .prepare(
            "SELECT session_id, model, sum(input_tokens), sum(output_tokens),
               sum(cache_read_tokens) FROM usage WHERE agent IN ('codex', 'gemini')
             GROUP BY session_id, model",
        )
        .unwrap();
    let mut by_hand: BTreeMap<String, f64> = BTreeMap::new();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                [r.get::<_, f64>(2)?, r.get(3)?, r.get(4)?],
            ))
        })
        .unwrap();
    for row in rows {
        let (session, model, tokens) = row.unwrap();
        let rates = litellm_rates(&row_of(&model));
        let cost: f64 = tokens.iter().zip(rates).map(|(t, r)| t * r / 1e6).sum();
        *by_hand.entry(session).or_default() += cost;
    }
    assert_eq!(by_hand.len(), 12, "5 Codex and 7 Gemini sessions");
    for (session, cost) in by_hand {
        let stored: f64 = env
            .conn()
            .query_row(
                "SELECT cost_usd FROM v_usage_sessions WHERE session_id = ?1",
                [&session],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            (stored - cost).abs() < 1e-5,
            "{session}: {stored} against {cost}"
        );
    }
}

/// Claude Code's counts by hand: every `assistant` line with `message.usage` (not of the
/// `<synthetic>` model), grouped by (message id, request id) across a session's main file
/// and its subagents' files, each field the largest value its lines give (streamed counts
/// only grow); in the session its lines name. Per session: (responses, input, output,
/// cache read), and the cache writes apart.
fn claude_by_hand(dir: &Path) -> (Counts, BTreeMap<String, i64>) {
    let mut groups: BTreeMap<(String, String), (String, [i64; 5])> = BTreeMap::new();
    for file in files_under(dir, &|p| p.extension().is_some_and(|e| e == "jsonl")) {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let m = &v["message"];
            if v["type"] != "assistant" || m["model"] == "<synthetic>" || !m["usage"].is_object() {
                continue;
            }
            let (Some(id), Some(session)) = (m["id"].as_str(), v["sessionId"].as_str()) else {
                continue;
            };
            let key = (
                id.to_owned(),
                v["requestId"].as_str().unwrap_or("").to_owned(),
            );
            let u = &m["usage"];
            let n = |k: &str| u[k].as_i64().unwrap_or(0);
            let fields = [
                n("input_tokens"),
                n("output_tokens"),
                n("cache_read_input_tokens"),
                n("cache_creation_input_tokens"),
                0,
            ];
            let entry = groups.entry(key).or_insert((session.to_owned(), [0; 5]));
            for (held, new) in entry.1.iter_mut().zip(fields) {
                *held = (*held).max(new);
            }
        }
    }
    let (mut counts, mut writes) = (Counts::new(), BTreeMap::new());
    for (session, f) in groups.into_values() {
        let c = counts.entry(session.clone()).or_default();
        c[0] += 1;
        c[1] += f[0];
        c[2] += f[1];
        c[3] += f[2];
        *writes.entry(session).or_default() += f[3];
    }
    (counts, writes)
}

#[test]
fn every_claude_code_session_counts_each_response_once_at_its_final_count() {
    let Some(dir) = real_more_fixtures("claude-code") else {
        return;
    };
    let env = TestEnv::new();
    import(&env, &[&dir]);
    let (expected, writes) = claude_by_hand(&dir);
    assert_eq!(expected.len(), 15, "six users, 1.0.115 to 2.1.111");
    assert_eq!(stored(&env, "claude"), expected);
    for (session, write) in writes {
        let stored = env
            .conn()
            .query_row(
                "SELECT sum(cache_write_tokens) FROM usage WHERE session_id = ?1",
                [&session],
                |r| r.get::<_, i64>(0),
            )
            .unwrap();
        assert_eq!(stored, write, "{session}");
    }
    // 744827a2: its compaction subagent's file re-saves 61 of the parent's responses, two of
    // them with final counts where the parent's file stopped at a partial one. They stay the
    // parent's; only the compaction's own response is the subagent's.
    let compaction = "SELECT count(*) FROM usage WHERE subagent_id LIKE 'acompact-%'";
    assert_eq!(env.int(compaction), 1);
    let before = env.int("SELECT count(*) FROM usage");
    import(&env, &[&dir]);
    assert_eq!(
        env.int("SELECT count(*) FROM usage"),
        before,
        "re-import +0"
    );
    assert_eq!(stored(&env, "claude"), expected);
}

/// Copilot CLI's totals by hand: each session's `session.shutdown` lines' `modelMetrics`, the
/// largest value per field over its shutdowns (a resumed session shuts down again), input
/// without the cached parts, per session (its folder); Copilot's own charge where the line
/// gives one (`totalNanoAiu`); and the premium requests: per model the largest
/// `requests.cost`, summed per session, which must equal the line's own
/// `totalPremiumRequests` (the largest of the session's).
fn copilot_by_hand(dir: &Path) -> (Counts, BTreeMap<String, f64>, BTreeMap<String, f64>) {
    let (mut counts, mut charged) = (Counts::new(), BTreeMap::new());
    let mut premium: BTreeMap<String, f64> = BTreeMap::new();
    for log in files_under(dir, &|p| p.ends_with("events.jsonl")) {
        let session = log
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mut per_model: BTreeMap<String, [i64; 4]> = BTreeMap::new();
        let mut premium_per_model: BTreeMap<String, f64> = BTreeMap::new();
        let mut total_premium: Option<f64> = None;
        for line in std::fs::read_to_string(&log).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["type"] != "session.shutdown" {
                continue;
            }
            if let Some(nano) = v["data"]["totalNanoAiu"].as_f64() {
                charged.insert(session.clone(), nano);
            }
            if let Some(total) = v["data"]["totalPremiumRequests"].as_f64() {
                total_premium = Some(total_premium.unwrap_or(0.0).max(total));
            }
            for (model, m) in v["data"]["modelMetrics"].as_object().unwrap() {
                if let Some(cost) = m["requests"]["cost"].as_f64() {
                    let held = premium_per_model.entry(model.clone()).or_insert(0.0);
                    *held = held.max(cost);
                }
                let n = |k: &str| m["usage"][k].as_i64().unwrap_or(0);
                let (read, write) = (n("cacheReadTokens"), n("cacheWriteTokens"));
                let fields = [1, n("inputTokens") - read - write, n("outputTokens"), read];
                let held = per_model.entry(model.clone()).or_default();
                for (h, f) in held.iter_mut().zip(fields) {
                    *h = (*h).max(f);
                }
            }
        }
        for held in per_model.values() {
            let c = counts.entry(session.clone()).or_default();
            for (slot, f) in c.iter_mut().zip(held) {
                *slot += f;
            }
        }
        if !premium_per_model.is_empty() && per_model.values().any(|h| h[1] + h[2] > 0) {
            let sum: f64 = premium_per_model.values().sum();
            if let Some(total) = total_premium {
                assert!(
                    (sum - total).abs() < 1e-9,
                    "{session}: {sum} against {total}"
                );
            }
            premium.insert(session.clone(), sum);
        }
    }
    (counts, charged, premium)
}

#[test]
fn copilot_sessions_without_a_response_line_are_counted_by_their_shutdown_totals() {
    let Some(dir) = real_more_fixtures("copilot") else {
        return;
    };
    let env = TestEnv::new();
    import(&env, &[&dir]);
    let (expected, charged, premium) = copilot_by_hand(&dir);
    // Four sessions that used a model (a fifth, resumed, never did), one row per model each.
    assert_eq!(expected.len(), 4, "{expected:?}");
    assert_eq!(stored(&env, "copilot"), expected);
    // Copilot's own charge in AI units (nano): one unit is a cent of the tokens' list price,
    // so the pinned prices give the charge to the cent.
    assert_eq!(charged.len(), 3);
    for (session, nano) in charged {
        let sql = "SELECT cost_usd FROM v_usage_sessions WHERE session_id = ?1";
        let cost: f64 = env.conn().query_row(sql, [&session], |r| r.get(0)).unwrap();
        assert!(
            (cost - nano / 1e11).abs() < 0.005,
            "{session}: {cost} against {nano} nAIU"
        );
    }
    // Copilot's premium requests, per session as its shutdowns say (0.33 for a light model).
    let stored_premium: BTreeMap<String, f64> = {
        let conn = env.conn();
        let mut stmt = conn
            .prepare(
                "SELECT session_id, total(premium_requests) FROM usage \
                 WHERE premium_requests IS NOT NULL GROUP BY session_id",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(stored_premium, premium);
    assert!(premium.values().any(|p| p.fract() != 0.0), "{premium:?}");
    let before = env.int("SELECT count(*) FROM usage");
    import(&env, &[&dir]);
    assert_eq!(
        env.int("SELECT count(*) FROM usage"),
        before,
        "re-import +0"
    );
}

/// Qwen Code's counts by hand: every `ui_telemetry` record of a `qwen-code.api_response`
/// event, once per `response_id`, in the session its record names; input without the cached
/// part plus tool prompts, the output with the thinking (inside it when the total says so),
/// the cached part as cache reads, the four adding up to the event's own total. Also, per
/// session, the `assistant` records' `usageMetadata` (the main thread's responses only).
fn qwen_by_hand(dir: &Path) -> (Counts, BTreeMap<String, [i64; 2]>) {
    let chats = files_under(dir, &|p| p.extension().is_some_and(|e| e == "jsonl"));
    let mut responses: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut messages: BTreeMap<String, [i64; 2]> = BTreeMap::new();
    for chat in chats {
        for line in std::fs::read_to_string(&chat).unwrap().lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            let session = record["sessionId"].as_str().unwrap().to_owned();
            let event = &record["systemPayload"]["uiEvent"];
            if record["subtype"] == "ui_telemetry"
                && event["event.name"] == "qwen-code.api_response"
            {
                let id = event["response_id"].as_str().unwrap().to_owned();
                responses.insert((session, id), event.clone());
            } else if record["type"] == "assistant" {
                let m = &record["usageMetadata"];
                let sum = messages.entry(session).or_default();
                sum[0] += m["promptTokenCount"].as_i64().unwrap();
                sum[1] += m["candidatesTokenCount"].as_i64().unwrap();
            }
        }
    }
    let mut counts = Counts::new();
    for ((session, _), e) in responses {
        let n = |k: &str| e[k].as_i64().unwrap_or(0);
        let inside = n("total_token_count")
            == n("input_token_count") + n("output_token_count") + n("tool_token_count");
        let thoughts = if inside { 0 } else { n("thoughts_token_count") };
        let parts = [
            n("input_token_count") - n("cached_content_token_count") + n("tool_token_count"),
            n("output_token_count") + thoughts,
            n("cached_content_token_count"),
        ];
        assert_eq!(parts.iter().sum::<i64>(), n("total_token_count"), "{e}");
        let c = counts.entry(session).or_default();
        c[0] += 1;
        for (slot, part) in c[1..].iter_mut().zip(parts) {
            *slot += part;
        }
    }
    (counts, messages)
}

#[test]
fn every_qwen_code_response_and_its_subagents_is_counted_once() {
    let Some(dir) = real_more_fixtures("other/qwen-code") else {
        return;
    };
    let env = TestEnv::new();
    let stderr = import(&env, &[&dir]);
    assert!(stderr.contains("3 transcript(s)"), "{stderr}");
    let (expected, messages) = qwen_by_hand(&dir);
    // Two chats with responses (0.14.2 with two subagents, 0.14.0); a third holds only a
    // slash command.
    assert_eq!(expected.len(), 2, "{expected:?}");
    assert_eq!(stored(&env, "qwen"), expected);
    assert_eq!(
        env.int(
            "SELECT count(DISTINCT subagent_id) FROM usage WHERE agent = 'qwen' AND sidechain = 1"
        ),
        2
    );
    // The main thread's responses are the ones the chat also writes as messages: the same
    // counts, so the messages are the telemetry's subset and are rightly not read again.
    let main = "SELECT session_id, sum(input_tokens + cache_read_tokens), sum(output_tokens)
                FROM usage WHERE agent = 'qwen' AND sidechain = 0 GROUP BY session_id";
    let conn = env.conn();
    let mut stmt = conn.prepare(main).unwrap();
    let got: BTreeMap<String, [i64; 2]> = stmt
        .query_map([], |r| Ok((r.get(0)?, [r.get(1)?, r.get(2)?])))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(got, messages);
    let thoughts =
        env.int("SELECT count(*) FROM usage WHERE agent = 'qwen' AND reasoning_tokens IS NULL");
    assert_eq!(thoughts, 0, "every response says its thinking");
    let cwd = "SELECT count(*) FROM sessions WHERE agent = 'qwen' AND cwd LIKE 'C:\\Users\\%'";
    assert_eq!(env.int(cwd), 2, "the project from the records' cwd");
    let before = env.int("SELECT count(*) FROM usage");
    import(&env, &[&dir]);
    assert_eq!(
        env.int("SELECT count(*) FROM usage"),
        before,
        "re-import +0"
    );
    assert_eq!(stored(&env, "qwen"), expected);
}

/// The tool calls Claude Code's files show, by hand: every `tool_use` block of an `assistant`
/// line, once per id, in the session its line names (a subagent's file names the parent).
fn claude_tool_calls_by_hand(dir: &Path) -> BTreeMap<String, i64> {
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    for file in files_under(dir, &|p| p.extension().is_some_and(|e| e == "jsonl")) {
        for line in std::fs::read_to_string(&file).unwrap().lines() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let (Some(session), Some(blocks)) =
                (v["sessionId"].as_str(), v["message"]["content"].as_array())
            else {
                continue;
            };
            if v["type"] != "assistant" {
                continue;
            }
            for b in blocks.iter().filter(|b| b["type"] == "tool_use") {
                ids.insert(b["id"].as_str().unwrap().to_owned(), session.to_owned());
            }
        }
    }
    let mut counts = BTreeMap::new();
    for session in ids.into_values() {
        *counts.entry(session).or_default() += 1;
    }
    counts
}

/// Coverage (issue 37): `import` records every tool call Claude Code's files show, once, and
/// `v_coverage` counts them per session; with no hook ever run here, every one is missed.
#[test]
fn every_tool_call_the_claude_code_files_show_is_recorded_once() {
    let Some(dir) = real_more_fixtures("claude-code") else {
        return;
    };
    let env = TestEnv::new();
    import(&env, &[&dir]);
    let expected = claude_tool_calls_by_hand(&dir);
    assert!(expected.values().sum::<i64>() > 100, "{expected:?}");
    let conn = env.conn();
    let mut stmt = conn
        // Sessions whose transcript shows turns and no call are listed too.
        .prepare(
            "SELECT session_id, transcript_tool_calls, missed_tool_calls FROM v_coverage
             WHERE transcript_tool_calls > 0",
        )
        .unwrap();
    let mut got = BTreeMap::new();
    for row in stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .unwrap()
    {
        let (session, shown, missed) = row.unwrap();
        assert_eq!(shown, missed, "{session}: no hook ran");
        got.insert(session, shown);
    }
    assert_eq!(got, expected);
    let before = env.int("SELECT count(*) FROM transcript_items");
    import(&env, &[&dir]);
    assert_eq!(
        env.int("SELECT count(*) FROM transcript_items"),
        before,
        "re-import +0"
    );
}
