//! The usage of API responses, read from Gemini CLI chat files (pure).
//!
//! Gemini CLI 0.61 writes `~/.gemini/tmp/<project>/chats/session-*.jsonl`: a header line
//! (`sessionId`, `projectHash`, `kind`), one line per message and `{"$set": …}` updates. A
//! message of `type: "gemini"` carries `tokens` (`input`, `output`, `cached`, `thoughts`,
//! `tool`, `total`: the API's `usageMetadata` of the response's final streamed chunk) and
//! `model`. A message is written again, with the same `id`, when its tool calls are added: the
//! key is that id, and the last line wins as for Claude Code. See docs/usage.md.
//!
//! Earlier versions (2025-09 to 2026-04 in the real files) write one JSON document per chat,
//! `chats/session-*.json`, rewritten whole on every message: `{sessionId, projectHash,
//! startTime, lastUpdated, kind?, messages: [...]}` with the same messages. A subagent's chat
//! (`kind: "subagent"`) lies in a folder named after its parent session,
//! `chats/<parent session id>/<subagent id>.json`: [`from_json_chat`] reads either.
//!
//! Gemini's counts overlap where Anthropic's do not: `input` (`promptTokenCount`) includes the
//! `cached` tokens, and `output` (`candidatesTokenCount`) excludes the `thoughts`. They are
//! stored the Anthropic way, so that sums and cost mean the same for every agent:
//! `input_tokens = input - cached + tool`, `cache_read_tokens = cached`,
//! `output_tokens = output + thoughts` (thinking is billed as output).

use std::borrow::Cow;

use serde::Deserialize;

use crate::model::queue_line::usage::UsageRecord;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    tokens: Option<Tokens>,
}

/// Gemini CLI's `tokens` of a message, as its chat file spells them.
#[derive(Deserialize)]
struct Tokens {
    input: Option<u64>,
    output: Option<u64>,
    cached: Option<u64>,
    thoughts: Option<u64>,
    tool: Option<u64>,
}

#[derive(Deserialize)]
struct Header<'a> {
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
}

/// The usage one chat-file line (newline excluded) at byte `offset` reports, if any: a
/// `gemini` message with an id and `tokens`. The caller has checked that the line mentions
/// `"tokens"`.
pub(super) fn from_line(bytes: &[u8], offset: u64) -> Option<UsageRecord> {
    from_message(serde_json::from_slice(bytes.trim_ascii()).ok()?, offset)
}

/// [`from_line`] of a line already parsed into `value`.
pub(super) fn from_value(value: &serde_json::Value, offset: u64) -> Option<UsageRecord> {
    from_message(Line::deserialize(value).ok()?, offset)
}

fn from_message(line: Line<'_>, offset: u64) -> Option<UsageRecord> {
    if line.kind.as_deref() != Some("gemini") {
        return None;
    }
    let t = line.tokens?;
    let cached = t.cached.unwrap_or(0);
    Some(UsageRecord {
        message_id: line.id.filter(|id| !id.is_empty())?.into_owned(),
        request_id: None,
        model: line.model.filter(|m| !m.is_empty()).map(Cow::into_owned),
        input: t
            .input
            .unwrap_or(0)
            .saturating_sub(cached)
            .saturating_add(t.tool.unwrap_or(0)),
        output: t
            .output
            .unwrap_or(0)
            .saturating_add(t.thoughts.unwrap_or(0)),
        reasoning: t.thoughts,
        cache_read: cached,
        ts: line
            .timestamp
            .as_deref()
            .and_then(crate::support::clock::rfc3339_ms),
        offset,
        ..UsageRecord::default()
    })
}

/// The session a chat file's header line names (`sessionId`), for `cmstore import`: the
/// message lines do not.
pub fn session_of_header(bytes: &[u8]) -> Option<String> {
    memchr::memmem::find(bytes, b"\"sessionId\"")?;
    let header: Header<'_> = serde_json::from_slice(bytes.trim_ascii()).ok()?;
    header
        .session_id
        .filter(|s| !s.is_empty())
        .map(Cow::into_owned)
}

/// One JSON chat file's messages and what names them (see the module doc).
#[derive(Deserialize)]
struct JsonChat<'a> {
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    messages: Vec<Line<'a>>,
}

/// The usage a JSON chat file reports, one record per response, each naming its session:
/// the chat's own `sessionId`, or for a subagent's chat the parent session `parent` names
/// (the folder it lies in), the record then a sidechain whose agent id is the chat's own.
/// A message's offset is its place in the list (the file is one document). `None` when the
/// bytes are not a chat: no `sessionId` and `messages`.
pub fn from_json_chat(bytes: &[u8], parent: Option<&str>) -> Option<Vec<UsageRecord>> {
    let chat: JsonChat<'_> = serde_json::from_slice(bytes).ok()?;
    let own = chat.session_id.filter(|s| !s.is_empty())?.into_owned();
    let subagent = chat.kind.as_deref() == Some("subagent") || parent.is_some_and(|p| p != own);
    let session = match parent {
        Some(parent) if subagent => parent.to_owned(),
        _ => own.clone(),
    };
    let records = chat
        .messages
        .into_iter()
        .enumerate()
        .filter_map(|(i, message)| from_message(message, i as u64))
        .map(|mut r| {
            r.session_id = Some(session.clone());
            if subagent {
                r.sidechain = true;
                r.agent_id = Some(own.clone());
            }
            r
        })
        .collect();
    Some(records)
}

/// True for a Gemini CLI JSON chat file's path: `session-*.json`, or any `.json` in a
/// folder under `chats/` (a subagent's chat).
pub fn is_json_chat_file(path: &std::path::Path) -> bool {
    let named = |p: Option<&std::path::Path>, name: &str| {
        p.and_then(std::path::Path::file_name)
            .is_some_and(|n| n == name)
    };
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.ends_with(".json")
        && (name.starts_with("session-")
            || named(path.parent().and_then(std::path::Path::parent), "chats"))
}

/// The parent session a subagent's JSON chat lies under: the folder's name when the folder
/// is inside `chats/`.
pub fn json_chat_parent(path: &std::path::Path) -> Option<String> {
    let folder = path.parent()?;
    let in_chats = folder
        .parent()
        .and_then(std::path::Path::file_name)
        .is_some_and(|n| n == "chats");
    in_chats.then(|| folder.file_name()?.to_str().map(str::to_owned))?
}

/// True for a Gemini CLI chat file's path: `…/chats/session-*.jsonl`.
pub fn is_chat_file(path: &std::path::Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str());
    name.starts_with("session-") && name.ends_with(".jsonl") && parent == Some("chats")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chat file Gemini CLI 0.61.0 wrote in the end-to-end suite (tests/e2e), against the
    /// mock Gemini API: two responses, the first written twice (its tool call added).
    const CHAT: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gemini/chat-0.61.0.jsonl"
    ));

    fn records(text: &str) -> Vec<UsageRecord> {
        let mut offset = 0;
        let mut out = Vec::new();
        for line in text.split_inclusive('\n') {
            out.extend(from_line(line.trim_end().as_bytes(), offset));
            offset += line.len() as u64;
        }
        out
    }

    #[test]
    fn a_real_chat_file_gives_one_row_per_response_with_the_mocks_numbers() {
        let all = records(CHAT);
        assert_eq!(all.len(), 3, "the first response is written twice");
        let rows = crate::model::queue_line::usage::dedup(all);
        // The mock (tests/e2e/google.rs, Usage::of_step): prompt 10007 + 1000 n, cached
        // 4003 + 100 n, candidates 211 + 10 n, thoughts 53 + n.
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.input, r.cache_read, r.output, r.cache_write))
            .collect();
        assert_eq!(
            got,
            vec![
                (10007 - 4003, 4003, 211 + 53, 0),
                (11007 - 4103, 4103, 221 + 54, 0)
            ]
        );
        // The thoughts are kept apart too, as a part of the output.
        let thoughts: Vec<_> = rows.iter().map(|r| r.reasoning).collect();
        assert_eq!(thoughts, [Some(53), Some(54)]);
        assert_eq!(rows[0].message_id, "482cae6f-1146-4412-9cf7-fe3ca072cc89");
        assert_eq!(rows[0].model.as_deref(), Some("gemini-2.5-flash"));
        assert_eq!(rows[0].key().1, "");
        assert!(rows[0].ts.is_some());
        let first_line = CHAT.lines().next().unwrap();
        assert_eq!(
            session_of_header(first_line.as_bytes()).as_deref(),
            Some("619d1b70-73c5-42a0-8e14-50b8efc17598")
        );
    }

    #[test]
    fn the_stored_columns_add_up_to_geminis_total() {
        for line in CHAT.lines().filter(|l| l.contains("\"tokens\"")) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            let r = from_line(line.as_bytes(), 0).unwrap();
            assert_eq!(
                r.input + r.cache_read + r.output,
                v["tokens"]["total"].as_u64().unwrap()
            );
        }
    }

    #[test]
    fn tool_prompt_tokens_are_input_and_other_lines_give_none() {
        let line = r#"{"id":"g1","type":"gemini","content":"","tokens":{"input":100,"output":7,"cached":40,"thoughts":3,"tool":9,"total":119},"model":"gemini-2.5-pro"}"#;
        let r = from_line(line.as_bytes(), 5).unwrap();
        assert_eq!((r.input, r.cache_read, r.output), (69, 40, 10));
        assert_eq!(r.input + r.cache_read + r.output, 119);
        for line in [
            r#"{"id":"u1","type":"user","content":[{"text":"my \"tokens\":{} are"}]}"#,
            r#"{"id":"g2","type":"gemini","content":"no tokens yet"}"#,
            r#"{"type":"gemini","tokens":{"input":1}}"#,
            r#"{"$set":{"lastUpdated":"2026-12-01T23:29:11.086Z"}}"#,
        ] {
            assert_eq!(from_line(line.as_bytes(), 0), None, "{line}");
        }
    }

    #[test]
    fn a_json_chat_gives_its_responses_and_a_subagents_chat_its_parents_session() {
        let chat = r#"{"sessionId":"s1","projectHash":"h","messages":[
            {"id":"u1","type":"user","content":"hi"},
            {"id":"g1","type":"gemini","content":"","model":"gemini-2.5-pro",
             "timestamp":"2026-04-16T22:39:17.604Z",
             "tokens":{"input":100,"output":7,"cached":40,"thoughts":3,"tool":0,"total":110}},
            {"id":"i1","type":"info","content":"note"}]}"#;
        let main = from_json_chat(chat.as_bytes(), None).unwrap();
        assert_eq!(main.len(), 1);
        let r = &main[0];
        assert_eq!((r.input, r.cache_read, r.output), (60, 40, 10));
        assert_eq!(r.session_id.as_deref(), Some("s1"));
        assert_eq!(
            (r.sidechain, r.agent_id.as_deref(), r.offset),
            (false, None, 1)
        );
        let sub = chat.replace(
            r#""s1","projectHash""#,
            r#""tl63m8","kind":"subagent","projectHash""#,
        );
        let sub = from_json_chat(sub.as_bytes(), Some("s0")).unwrap();
        assert_eq!(sub[0].session_id.as_deref(), Some("s0"));
        assert_eq!(
            (sub[0].sidechain, sub[0].agent_id.as_deref()),
            (true, Some("tl63m8"))
        );
        // Not a chat: no session or no messages, or not JSON at all.
        for other in [r#"{"messages":[]}"#, r#"{"sessionId":"s"}"#, "[1,2]", "{"] {
            assert_eq!(from_json_chat(other.as_bytes(), None), None, "{other}");
        }
    }

    #[test]
    fn json_chat_files_and_their_parents_are_known_by_their_path() {
        use std::path::Path;
        let main = Path::new("/h/.gemini/tmp/p/chats/session-2026-04-16T22-38-b1f31681.json");
        let sub = Path::new("/h/.gemini/tmp/p/chats/b1f31681-4b57/tl63m8.json");
        assert!(is_json_chat_file(main) && is_json_chat_file(sub));
        assert_eq!(json_chat_parent(main), None);
        assert_eq!(json_chat_parent(sub).as_deref(), Some("b1f31681-4b57"));
        assert!(!is_json_chat_file(Path::new("/h/.gemini/tmp/p/logs.json")));
        assert!(!is_json_chat_file(Path::new("/h/.gemini/settings.json")));
        assert!(!is_json_chat_file(main.with_extension("jsonl").as_path()));
    }

    #[test]
    fn chat_files_are_known_by_their_path() {
        use std::path::Path;
        assert!(is_chat_file(Path::new(
            "/h/.gemini/tmp/p/chats/session-2026-12-01T23-29-619d1b70.jsonl"
        )));
        assert!(!is_chat_file(Path::new(
            "/h/.claude/projects/p/session-1.jsonl"
        )));
        assert!(!is_chat_file(Path::new("/h/chats/other.jsonl")));
    }
}
