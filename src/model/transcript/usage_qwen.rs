//! The usage of API responses, read from Qwen Code chat files (pure).
//!
//! Qwen Code writes `<runtime>/projects/<project>/chats/<session>.jsonl` (`<runtime>` is
//! `$QWEN_RUNTIME_DIR`, `$QWEN_HOME` or `~/.qwen`; an archived session lies in
//! `chats/archive/`): Claude Code-like records (`uuid`, `parentUuid`, `sessionId`, `type`)
//! holding Gemini-style messages. Every API response of the session, its subagents' included,
//! is one `system` record of subtype `ui_telemetry` whose `systemPayload.uiEvent` is the
//! `qwen-code.api_response` event: `response_id`, `model`, `input_token_count`
//! (`promptTokenCount`), `output_token_count` (`candidatesTokenCount`),
//! `cached_content_token_count`, `thoughts_token_count`, `tool_token_count`,
//! `total_token_count`, `prompt_id`, and from 0.24 the subagent's `subagent_id`. Qwen Code
//! replays these records to rebuild a resumed session's statistics, so they are its own
//! account. The `assistant` records' `usageMetadata` repeat the main thread's responses only
//! (a subagent's are not written as messages): they are not read, or those would count twice.
//!
//! The counts are Gemini's shape whatever the provider: `input_token_count` includes the
//! cached tokens (and, behind Anthropic's API, the cache writes, which Qwen Code folds in
//! without saying how many). Whether `output_token_count` includes the thinking depends on the
//! provider: OpenAI-compatible ones count reasoning inside the completion, Gemini's outside it.
//! The total tells: when `total = input + output` the thinking is inside. Stored the Anthropic
//! way, as for the other agents: `input_tokens = input - cached + tool`,
//! `cache_read_tokens = cached`, `output_tokens` = the output with the thinking,
//! `reasoning_tokens = thoughts`. See docs/usage.md.

use std::borrow::Cow;

use serde::Deserialize;

use crate::model::queue_line::usage::UsageRecord;

/// Text every line that may hold a response contains: the record's subtype, quoted as a key's
/// value is.
pub(super) const UI_TELEMETRY: &[u8] = b"\"ui_telemetry\"";

/// The event name of one API response.
const API_RESPONSE: &str = "qwen-code.api_response";

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subtype: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "systemPayload")]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow, rename = "uiEvent")]
    event: Option<Event<'a>>,
}

/// The `qwen-code.api_response` event as the chat file spells it.
#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "event.name")]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "event.timestamp")]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    input_token_count: Option<u64>,
    output_token_count: Option<u64>,
    cached_content_token_count: Option<u64>,
    thoughts_token_count: Option<u64>,
    tool_token_count: Option<u64>,
    total_token_count: Option<u64>,
    #[serde(borrow)]
    prompt_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    subagent_id: Option<Cow<'a, str>>,
}

/// The usage one chat-file line (newline excluded) at byte `offset` reports, if any: an API
/// response's `ui_telemetry` record. The caller has checked that the line mentions
/// [`UI_TELEMETRY`].
pub(super) fn from_line(bytes: &[u8], offset: u64) -> Option<UsageRecord> {
    from_record(serde_json::from_slice(bytes.trim_ascii()).ok()?, offset)
}

/// [`from_line`] of a line already parsed into `value`.
pub(super) fn from_value(value: &serde_json::Value, offset: u64) -> Option<UsageRecord> {
    from_record(Line::deserialize(value).ok()?, offset)
}

fn from_record(line: Line<'_>, offset: u64) -> Option<UsageRecord> {
    if line.kind.as_deref() != Some("system") || line.subtype.as_deref() != Some("ui_telemetry") {
        return None;
    }
    let event = line.payload?.event?;
    if event.name.as_deref() != Some(API_RESPONSE) {
        return None;
    }
    let session = line.session_id.filter(|s| !s.is_empty())?.into_owned();
    let subagent = subagent_of(&event, &session);
    let message_id = match event.response_id.as_deref().filter(|id| !id.is_empty()) {
        Some(id) => id.to_owned(),
        // A response without an id is still one record of the file: its own uuid names it.
        None => format!("qwen:{session}:{}", line.uuid.filter(|u| !u.is_empty())?),
    };
    let (prompt, cached) = (
        event.input_token_count.unwrap_or(0),
        event.cached_content_token_count.unwrap_or(0),
    );
    let output = event.output_token_count.unwrap_or(0);
    let thoughts = event.thoughts_token_count.unwrap_or(0);
    let tool = event.tool_token_count.unwrap_or(0);
    let thinking_inside = event
        .total_token_count
        .is_some_and(|total| total == prompt + output + tool);
    let time = event.timestamp.or(line.timestamp);
    Some(UsageRecord {
        message_id,
        model: event.model.filter(|m| !m.is_empty()).map(Cow::into_owned),
        input: prompt.saturating_sub(cached).saturating_add(tool),
        output: if thinking_inside {
            output
        } else {
            output.saturating_add(thoughts)
        },
        reasoning: event.thoughts_token_count,
        cache_read: cached,
        ts: time.as_deref().and_then(crate::support::clock::rfc3339_ms),
        session_id: Some(session),
        sidechain: subagent.is_some(),
        agent_id: subagent,
        offset,
        ..UsageRecord::default()
    })
}

/// The subagent a response was made for: the event's `subagent_id` (0.24), or the name in the
/// middle of its `prompt_id`, `<session>#<subagent>#<n>` (0.14; the main thread's is
/// `<session>########<n>`). `None` for the main thread.
fn subagent_of(event: &Event<'_>, session: &str) -> Option<String> {
    if let Some(id) = event.subagent_id.as_deref().filter(|id| !id.is_empty()) {
        return Some(id.to_owned());
    }
    let rest = event.prompt_id.as_deref()?.strip_prefix(session)?;
    let (middle, _round) = rest.rsplit_once('#')?;
    let name = middle.trim_matches('#');
    (!name.is_empty()).then(|| name.to_owned())
}

/// True for a Qwen Code chat file's path: `…/projects/<project>/chats/<session>.jsonl`,
/// `…/chats/archive/<session>.jsonl` for an archived session, or a background subagent's
/// transcript, `…/projects/<project>/subagents/<session>/agent-<id>.jsonl` (its records name
/// the parent session; a response written in both files is one row, by its id).
pub fn is_qwen_chat_file(path: &std::path::Path) -> bool {
    use std::path::Path;
    let named =
        |p: Option<&Path>, name: &str| p.and_then(Path::file_name).is_some_and(|n| n == name);
    fn up(p: Option<&Path>) -> Option<&Path> {
        p.and_then(Path::parent)
    }
    if path.extension().is_none_or(|e| e != "jsonl") {
        return false;
    }
    let folder = path.parent();
    let chats = if named(folder, "archive") {
        up(folder)
    } else {
        folder
    };
    let subagents = up(folder);
    (named(chats, "chats") && named(up(up(chats)), "projects"))
        || (named(subagents, "subagents") && named(up(up(subagents)), "projects"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response of Qwen Code 0.14.2 behind an OpenAI-compatible API (its thinking inside
    /// the output: 32197 + 258 = 32455), as its chat file writes it.
    const MAIN: &str = r#"{"uuid":"23c9","parentUuid":"b009","sessionId":"6676","timestamp":"2026-04-09T10:47:51.179Z","type":"system","cwd":"/w","version":"0.14.2","subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","event.timestamp":"2026-04-09T10:47:51.179Z","response_id":"chatcmpl-07d2","model":"coder-model","status_code":200,"duration_ms":9165,"input_token_count":32197,"output_token_count":258,"cached_content_token_count":100,"thoughts_token_count":26,"tool_token_count":0,"total_token_count":32455,"prompt_id":"6676########0","auth_type":"qwen-oauth"}}}"#;

    fn parsed(line: &str) -> Option<UsageRecord> {
        let got = super::super::usage::from_qwen_line(line.as_bytes(), 7);
        assert_eq!(from_line(line.as_bytes(), 7), got);
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(from_value(&value, 7), got, "both roads read the same");
        got
    }

    #[test]
    fn a_response_is_its_telemetry_record_converted_to_the_common_columns() {
        let r = parsed(MAIN).unwrap();
        assert_eq!(r.message_id, "chatcmpl-07d2");
        assert_eq!(r.model.as_deref(), Some("coder-model"));
        assert_eq!((r.input, r.cache_read, r.cache_write), (32097, 100, 0));
        assert_eq!((r.output, r.reasoning), (258, Some(26)));
        assert_eq!(r.input + r.cache_read + r.output, 32455, "the total");
        assert_eq!(r.session_id.as_deref(), Some("6676"));
        assert_eq!(r.ts, Some(1_775_731_671_179));
        assert_eq!((r.sidechain, r.agent_id), (false, None));
        assert_eq!(r.offset, 7);
    }

    #[test]
    fn thinking_outside_the_output_is_added_to_it() {
        // Gemini's API: total = prompt + candidates + thoughts.
        let line = MAIN.replace("32455", "32481");
        let r = parsed(&line).unwrap();
        assert_eq!((r.output, r.reasoning), (284, Some(26)));
        assert_eq!(r.input + r.cache_read + r.output, 32481);
    }

    #[test]
    fn a_subagents_response_is_a_sidechain_of_the_session() {
        let old = MAIN.replace("6676########0", "6676#fullstack-developer-vf4v7l#10");
        let r = parsed(&old).unwrap();
        assert!(r.sidechain);
        assert_eq!(r.agent_id.as_deref(), Some("fullstack-developer-vf4v7l"));
        assert_eq!(r.session_id.as_deref(), Some("6676"));
        let new = MAIN.replace(
            r#""auth_type""#,
            r#""subagent_id":"sa-1","subagent_type":"general","auth_type""#,
        );
        assert_eq!(parsed(&new).unwrap().agent_id.as_deref(), Some("sa-1"));
    }

    #[test]
    fn other_records_and_events_give_nothing() {
        for line in [
            MAIN.replace("qwen-code.api_response", "qwen-code.api_error"),
            MAIN.replace("qwen-code.api_response", "qwen-code.tool_call"),
            MAIN.replace(
                r#""subtype":"ui_telemetry""#,
                r#""subtype":"slash_command""#,
            ),
            MAIN.replace(r#""type":"system""#, r#""type":"assistant""#),
            MAIN.replace(r#""sessionId":"6676","#, ""),
        ] {
            assert_eq!(parsed(&line), None, "{line}");
        }
    }

    #[test]
    fn a_response_without_an_id_is_named_by_its_record() {
        let r = parsed(&MAIN.replace("chatcmpl-07d2", "")).unwrap();
        assert_eq!(r.message_id, "qwen:6676:23c9");
    }

    #[test]
    fn chat_files_are_known_by_their_folders() {
        use std::path::Path;
        for (path, is) in [
            ("/h/.qwen/projects/-w-app/chats/6676.jsonl", true),
            ("/h/.qwen/projects/-w-app/chats/archive/6676.jsonl", true),
            (
                "/h/.qwen/projects/-w-app/subagents/6676/agent-a1.jsonl",
                true,
            ),
            ("/h/.qwen/projects/-w-app/chats/6676.worktree.json", false),
            ("/h/.gemini/tmp/app/chats/session-1.jsonl", false),
            ("/h/.claude/projects/-w-app/6676.jsonl", false),
        ] {
            assert_eq!(is_qwen_chat_file(Path::new(path)), is, "{path}");
        }
    }
}
