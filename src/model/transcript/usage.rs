//! The usage of API responses, read from Claude Code transcript lines, Gemini CLI chat
//! files (`usage_gemini`) and Qwen Code chat files (`usage_qwen`) (pure); Codex rollouts need
//! a reader that keeps state per file ([`CodexReader`]).
//!
//! Every `assistant` line Claude Code writes carries its response's `message.usage`; one
//! response is written as one line per content block, the usage repeated and, while streaming,
//! `output_tokens` growing. [`from_line`] reads one line; [`UsageRecord::key`] and
//! [`dedup`] make one row per response with the counts of
//! its last line. Lines of the `<synthetic>` model (API errors, placeholders Claude Code
//! writes itself) carry no usage. See docs/usage.md.

use std::borrow::Cow;
use std::sync::OnceLock;

use memchr::memmem::Finder;
use serde::Deserialize;

use super::claude::SYNTHETIC_MODEL;
pub use super::usage_codex::CodexReader;
pub use super::usage_copilot::totals_differ;
pub use super::usage_gemini::{
    from_json_chat, is_chat_file, is_json_chat_file, json_chat_parent, session_of_header,
};
pub use super::usage_qwen::is_qwen_chat_file;
pub use crate::model::queue_line::usage::{dedup, Responses, UsageRecord};

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
    #[serde(borrow, rename = "requestId")]
    request_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain")]
    is_sidechain: Option<bool>,
    #[serde(borrow, rename = "agentId")]
    agent_id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    usage: Option<Usage<'a>>,
}

#[derive(Deserialize)]
struct Usage<'a> {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation: Option<CacheCreation>,
    #[serde(borrow)]
    service_tier: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct CacheCreation {
    ephemeral_5m_input_tokens: Option<u64>,
    ephemeral_1h_input_tokens: Option<u64>,
}

/// The usage one transcript line (newline excluded) at byte `offset` reports, if any: a
/// Claude Code `assistant` line with a message id and `message.usage`, of a model other than
/// `<synthetic>`; a Copilot CLI `session.usage_record` (`usage_copilot`); or a Gemini CLI
/// `gemini` message with `tokens`. Lines without `"usage"` or `"tokens"` are passed over
/// without being parsed. Qwen Code's chat lines: [`from_qwen_line`].
pub fn from_line(bytes: &[u8], offset: u64) -> Option<UsageRecord> {
    let [usage, tokens] = finders();
    if usage.find(bytes).is_some() {
        return from_claude_line(bytes, offset).or_else(|| {
            memchr::memmem::find(bytes, super::usage_copilot::USAGE_RECORD)
                .and_then(|_| super::usage_copilot::from_line(bytes, offset))
        });
    }
    tokens.find(bytes)?;
    super::usage_gemini::from_line(bytes, offset)
}

/// The usage a Qwen Code chat line reports, if any: an API response's `ui_telemetry` record
/// (`usage_qwen`); other lines are passed over without being parsed. Apart from [`from_line`]
/// so that no other agent's lines pay for looking (`cmstore import` knows a chat by its path).
pub fn from_qwen_line(bytes: &[u8], offset: u64) -> Option<UsageRecord> {
    memchr::memmem::find(bytes, super::usage_qwen::UI_TELEMETRY)?;
    super::usage_qwen::from_line(bytes, offset)
}

/// [`from_line`] of a line already parsed (`value`, its bytes `bytes`): the same record,
/// read from the value instead of parsing the bytes again (the transcript cursor parses
/// every line for its turns). Only the lines whose `type` can give a record are looked at.
pub fn from_parsed(value: &serde_json::Value, bytes: &[u8], offset: u64) -> Option<UsageRecord> {
    let has = |finder: &Finder<'_>| finder.find(bytes).is_some();
    let [usage, tokens] = finders();
    match value.get("type").and_then(serde_json::Value::as_str)? {
        // The same typed `Line` as `from_claude_line` reads, so both give the same record.
        "assistant" if has(usage) => from_claude(Line::deserialize(value).ok()?, offset),
        // As in `from_line`: a line mentioning `"usage"` is never read as Gemini's.
        "gemini" if !has(usage) && has(tokens) => super::usage_gemini::from_value(value, offset),
        // Rare (one line per response) and small: read from its bytes as `from_line` does.
        "session.usage_record" => super::usage_copilot::from_line(bytes, offset),
        "system" if memchr::memmem::find(bytes, super::usage_qwen::UI_TELEMETRY).is_some() => {
            super::usage_qwen::from_value(value, offset)
        }
        _ => None,
    }
}

/// The session totals a line reports (Copilot CLI's `session.shutdown`, see
/// `usage_copilot`), `value` the line parsed or `None` to parse `bytes` when it may hold
/// some. Empty for every other line, which is not parsed.
pub fn totals_of(value: Option<&serde_json::Value>, bytes: &[u8], offset: u64) -> Vec<UsageRecord> {
    match value {
        // A parsed line's type is one lookup; `totals_from_shutdown` checks it.
        Some(value) => super::usage_copilot::totals_from_shutdown(value, offset),
        None if memchr::memmem::find(bytes, super::usage_copilot::SHUTDOWN).is_some() => {
            serde_json::from_slice(bytes.trim_ascii())
                .map(|value| super::usage_copilot::totals_from_shutdown(&value, offset))
                .unwrap_or_default()
        }
        None => Vec::new(),
    }
}

/// Searchers for `"usage"` and `"tokens"`, built once: every line a cursor reads is searched.
fn finders() -> &'static [Finder<'static>; 2] {
    static FINDERS: OnceLock<[Finder<'static>; 2]> = OnceLock::new();
    FINDERS.get_or_init(|| [Finder::new(b"\"usage\""), Finder::new(b"\"tokens\"")])
}

fn from_claude_line(bytes: &[u8], offset: u64) -> Option<UsageRecord> {
    from_claude(serde_json::from_slice(bytes.trim_ascii()).ok()?, offset)
}

fn from_claude(line: Line<'_>, offset: u64) -> Option<UsageRecord> {
    if line.kind.as_deref() != Some("assistant") {
        return None;
    }
    let message = line.message?;
    let response = ClaudeResponse {
        message_id: message.id.as_deref(),
        model: message.model.as_deref(),
        request_id: line.request_id.as_deref(),
        timestamp: line.timestamp.as_deref(),
        sidechain: line.is_sidechain.unwrap_or(false),
        agent_id: line.agent_id.as_deref(),
        session_id: line.session_id.as_deref(),
    };
    record_of(response, message.usage?, offset)
}

/// What a Claude Code `assistant` line says around its response's `message.usage`, as another
/// reader of the line read it: `cmstore import` reads each line once, for its turn and its
/// usage alike (`claude_fast`). Each field is the line's own text, unescaped.
#[derive(Debug, Clone, Copy)]
pub struct ClaudeResponse<'a> {
    /// `message.id`.
    pub message_id: Option<&'a str>,
    /// `message.model`.
    pub model: Option<&'a str>,
    /// `requestId`.
    pub request_id: Option<&'a str>,
    /// `timestamp`.
    pub timestamp: Option<&'a str>,
    /// `isSidechain`.
    pub sidechain: bool,
    /// `agentId`.
    pub agent_id: Option<&'a str>,
    /// `sessionId`.
    pub session_id: Option<&'a str>,
}

/// [`from_line`]'s record of an `assistant` line whose other fields `response` holds and
/// whose `message.usage` is `usage` (its JSON text).
pub fn from_claude_response(
    response: ClaudeResponse<'_>,
    usage: &str,
    offset: u64,
) -> Option<UsageRecord> {
    record_of(response, serde_json::from_str(usage).ok()?, offset)
}

fn record_of(response: ClaudeResponse<'_>, usage: Usage<'_>, offset: u64) -> Option<UsageRecord> {
    let model = response.model.filter(|m| !m.is_empty());
    if model == Some(SYNTHETIC_MODEL) {
        return None;
    }
    let split = usage.cache_creation;
    Some(UsageRecord {
        message_id: response.message_id.filter(|id| !id.is_empty())?.to_owned(),
        request_id: response
            .request_id
            .filter(|r| !r.is_empty())
            .map(str::to_owned),
        model: model.map(str::to_owned),
        input: usage.input_tokens.unwrap_or(0),
        output: usage.output_tokens.unwrap_or(0),
        // Anthropic's usage does not say how much of the output was thinking.
        reasoning: None,
        cache_write: usage.cache_creation_input_tokens.unwrap_or(0),
        cache_write_5m: split.as_ref().and_then(|s| s.ephemeral_5m_input_tokens),
        cache_write_1h: split.as_ref().and_then(|s| s.ephemeral_1h_input_tokens),
        cache_read: usage.cache_read_input_tokens.unwrap_or(0),
        premium_requests: None,
        service_tier: usage.service_tier.map(Cow::into_owned),
        ts: response.timestamp.and_then(epoch_ms),
        session_id: response.session_id.map(str::to_owned),
        turn_id: None,
        sidechain: response.sidechain,
        agent_id: response.agent_id.map(str::to_owned),
        offset,
    })
}

fn epoch_ms(text: &str) -> Option<i64> {
    crate::support::clock::rfc3339_ms(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"parentUuid":"p","isSidechain":true,"sessionId":"s1","agentId":"a7","requestId":"req_1","message":{"content":[{"type":"text","text":"\"usage\" in text"}],"id":"msg_1","model":"claude-haiku-4-5-20251001","usage":{"cache_creation":{"ephemeral_1h_input_tokens":5,"ephemeral_5m_input_tokens":4410},"cache_creation_input_tokens":4415,"cache_read_input_tokens":7,"input_tokens":10,"output_tokens":8,"service_tier":"standard"}},"type":"assistant","uuid":"u","timestamp":"2026-02-08T17:28:33.068Z"}"#;

    #[test]
    fn every_field_is_read() {
        let got = from_line(LINE.as_bytes(), 42).unwrap();
        let value = super::super::parse::parse_value(LINE.as_bytes()).unwrap();
        assert_eq!(
            from_parsed(&value, LINE.as_bytes(), 42).as_ref(),
            Some(&got)
        );
        assert_eq!(
            got,
            UsageRecord {
                message_id: "msg_1".into(),
                request_id: Some("req_1".into()),
                model: Some("claude-haiku-4-5-20251001".into()),
                input: 10,
                output: 8,
                reasoning: None,
                cache_write: 4415,
                cache_write_5m: Some(4410),
                cache_write_1h: Some(5),
                cache_read: 7,
                premium_requests: None,
                service_tier: Some("standard".into()),
                ts: Some(1_770_571_713_068),
                session_id: Some("s1".into()),
                turn_id: None,
                sidechain: true,
                agent_id: Some("a7".into()),
                offset: 42,
            }
        );
    }

    #[test]
    fn lines_without_usage_give_none() {
        for line in [
            r#"{"type":"user","message":{"content":"what is \"usage\"?"}}"#,
            r#"{"type":"assistant","message":{"id":"m","model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}"#,
            r#"{"type":"assistant","message":{"model":"claude-opus-4","usage":{"input_tokens":1}}}"#,
            r#"{"type":"assistant","message":{"id":"m","content":[]}}"#,
            r#"{"type":"assistant","message":{"id":"m","usage":7}}"#,
            "not json \"usage\"",
        ] {
            assert_eq!(from_line(line.as_bytes(), 0), None, "{line}");
            let parsed = super::super::parse::parse_value(line.as_bytes());
            assert_eq!(
                parsed.and_then(|v| from_parsed(&v, line.as_bytes(), 0)),
                None,
                "{line}"
            );
        }
    }

    #[test]
    fn an_older_line_without_split_or_request_id_still_counts() {
        let line = r#"{"type":"assistant","message":{"id":"m","model":"claude-sonnet-4","usage":{"input_tokens":3,"cache_creation_input_tokens":9,"output_tokens":2}}}"#;
        let got = from_line(line.as_bytes(), 0).unwrap();
        assert_eq!(got.key(), ("m", ""));
        assert_eq!((got.cache_write, got.cache_write_5m), (9, None));
        assert!(!got.sidechain);
    }
}

#[cfg(test)]
mod fixtures {
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use super::*;

    fn claude_fixtures() -> Option<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real/claude-code");
        if dir.is_dir() {
            Some(dir)
        } else {
            println!("skipped: real fixtures not found at {}", dir.display());
            None
        }
    }

    /// Every transcript of the fixture set: the main ones and the subagents'.
    fn transcripts(dir: &Path) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && path.to_string_lossy().ends_with(".subagents") {
                found.extend(transcripts(&path));
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
        found.sort();
        found
    }

    /// Totals (responses, input, output, cache write, cache read) of `bytes` by the rule,
    /// counted independently of [`from_line`]: a generic JSON parse, groups by (message id,
    /// request id or none), each group's last line's counts.
    fn independent(bytes: &[u8]) -> [u64; 5] {
        let mut groups: BTreeMap<(String, Option<String>), Value> = BTreeMap::new();
        for line in bytes.split(|&b| b == b'\n') {
            let Ok(v) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            let m = &v["message"];
            if v["type"] != "assistant" || m["model"] == "<synthetic>" || !m["usage"].is_object() {
                continue;
            }
            let Some(id) = m["id"].as_str() else { continue };
            let req = v["requestId"].as_str().map(str::to_owned);
            groups.insert((id.to_owned(), req), m["usage"].clone());
        }
        let n = |u: &Value, k: &str| u[k].as_u64().unwrap_or(0);
        groups
            .values()
            .fold([groups.len() as u64, 0, 0, 0, 0], |mut t, u| {
                t[1] += n(u, "input_tokens");
                t[2] += n(u, "output_tokens");
                t[3] += n(u, "cache_creation_input_tokens");
                t[4] += n(u, "cache_read_input_tokens");
                t
            })
    }

    fn ours(bytes: &[u8]) -> [u64; 5] {
        let mut offset = 0;
        let mut records = Vec::new();
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            records.extend(from_line(line.strip_suffix(b"\n").unwrap_or(line), offset));
            offset += line.len() as u64;
        }
        let rows = dedup(records);
        rows.iter()
            .fold([rows.len() as u64, 0, 0, 0, 0], |mut t, r| {
                t[1] += r.input;
                t[2] += r.output;
                t[3] += r.cache_write;
                t[4] += r.cache_read;
                t
            })
    }

    #[test]
    fn per_session_totals_match_an_independent_count() {
        let Some(dir) = claude_fixtures() else { return };
        let files = transcripts(&dir);
        assert!(files.len() >= 16, "{files:?}");
        let mut responses = 0;
        for path in files {
            let bytes = std::fs::read(&path).unwrap();
            let expected = independent(&bytes);
            assert_eq!(ours(&bytes), expected, "{}", path.display());
            responses += expected[0];
        }
        assert!(responses > 400, "{responses}");
    }

    /// The records `from_parsed` and `from_line` give each line of `bytes`, which must agree;
    /// how many there were.
    fn both_agree(bytes: &[u8], name: &str) -> usize {
        let mut records = 0;
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            let parsed = super::super::parse::parse_value(line)
                .and_then(|value| from_parsed(&value, line, i as u64));
            assert_eq!(parsed, from_line(line, i as u64), "{name}:{i}");
            records += usize::from(parsed.is_some());
        }
        records
    }

    #[test]
    fn a_parsed_line_gives_the_record_its_bytes_give() {
        let gemini = include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gemini/chat-0.61.0.jsonl"
        ));
        assert_eq!(both_agree(gemini, "gemini chat"), 3);
        let copilot = include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/payloads/copilot-1.0.102-events.jsonl"
        ));
        assert!(both_agree(copilot, "copilot events") > 0);
        let Some(dir) = claude_fixtures() else { return };
        let mut records = 0;
        for path in transcripts(&dir) {
            let bytes = std::fs::read(&path).unwrap();
            records += both_agree(&bytes, &path.display().to_string());
        }
        assert!(records > 400, "{records}");
    }

    #[test]
    fn a_streamed_response_counts_its_final_output_once() {
        // transcript-4: five lines of one response, output 3, 3, 3, 3 then 1941.
        let Some(dir) = claude_fixtures() else { return };
        let bytes = std::fs::read(dir.join("transcript-4.jsonl")).unwrap();
        let mut records = Vec::new();
        for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
            records.extend(from_line(line, i as u64));
        }
        let lines: Vec<_> = records
            .iter()
            .filter(|r| r.message_id == "msg_011T5Y1R81WaDJUhMTN8Bvpc")
            .map(|r| r.output)
            .collect();
        assert_eq!(lines, [3, 3, 3, 3, 1941]);
        let rows: Vec<_> = dedup(records)
            .into_iter()
            .filter(|r| r.message_id == "msg_011T5Y1R81WaDJUhMTN8Bvpc")
            .collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].output, 1941);
    }
}
