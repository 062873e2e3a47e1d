//! Goose's stored sessions as turns, calls and usage (pure), for `cmstore import`.
//!
//! Goose (1.10 and later) keeps its history in one SQLite store, `sessions.db`: a row per
//! session (`sessions`: its folder, model, type, parent and running totals) and per message
//! (`messages`: `role`, `content_json`, an array of `text`, `thinking`, `toolRequest` and
//! `toolResponse` items, and `metadata_json` with the message's `usage` and whether the person
//! saw it). A turn is a user message of text the person saw (Goose also stores a hidden
//! `<turn-context>` message per turn, and a call's result as a user message of `toolResponse`
//! items) and the assistant messages after it in its session: the last text is the answer, the
//! last thinking the reasoning, the `toolRequest` items the calls with their results. A
//! message's `usage` counts the cache reads and writes inside `inputTokens`; cmstore's input is
//! what is left. Fields as docs/agents.md, "Goose", cites them (seen with Goose 1.52.0).

use serde_json::Value;

use super::items::{ToolCallItem, ToolResultItem};
use super::{Turn, MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS, MAX_TOOL_OUTPUT_CHARS};
use crate::model::queue_line::usage::UsageRecord;
use crate::model::queue_line::ToolCallRecord;
use crate::model::shorten::{compact_json, cut_text};

/// One stored message, in its session's order.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// The store's row id, which orders a session's messages.
    pub row: i64,
    /// `message_id`: a user message's `msg_<uuid>`, an assistant's the provider's response id.
    pub id: Option<String>,
    /// Its session.
    pub session: String,
    /// `user` or `assistant`.
    pub role: String,
    /// `content_json`: the message's items.
    pub content: Value,
    /// `metadata_json`.
    pub metadata: Value,
    /// `created_timestamp`, epoch milliseconds (Goose stores seconds).
    pub created: i64,
}

/// One stored session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Session {
    /// Its id, the hooks' `session_id`.
    pub id: String,
    /// `working_dir`.
    pub cwd: Option<String>,
    /// `model_config_json.model_name`: the model asked for.
    pub model: Option<String>,
    /// Goose's running totals (`accumulated_*`), input without the cache, as usage is stored;
    /// `None` when it keeps none.
    pub totals: Option<UsageRecord>,
}

/// A turn read from the store: its session, the turn, and when its prompt was written.
pub type StoredTurn = (String, Turn, Option<i64>);

/// The items of a message's content.
fn items(m: &Message) -> &[Value] {
    m.content.as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// The text of a message's `text` items, joined by newlines.
fn text_of(m: &Message) -> String {
    let texts: Vec<&str> = items(m)
        .iter()
        .filter(|item| item["type"] == "text")
        .filter_map(|item| item["text"].as_str())
        .filter(|t| !t.trim().is_empty())
        .collect();
    texts.join("\n")
}

/// A user message that opens a turn: text the person saw, not Goose's hidden turn context nor
/// a call's result.
fn is_prompt(m: &Message) -> bool {
    m.role == "user"
        && m.metadata["userVisible"] != false
        && m.metadata["turnContext"] != true
        && items(m).iter().any(|item| item["type"] == "text")
}

/// A turn being read, with the ids of its calls in the order of its `tool_calls`.
struct OpenTurn {
    turn: StoredTurn,
    call_ids: Vec<String>,
}

/// The turns of `messages` (grouped by session, each session's in order), with the model of
/// the session where a message names none; a prompt with no answer at all makes none.
pub fn turns(messages: &[Message], sessions: &[Session]) -> Vec<StoredTurn> {
    let mut turns = Vec::new();
    let mut open: Option<OpenTurn> = None;
    let mut close = |open: Option<OpenTurn>| turns.extend(open.map(|o| o.turn).filter(answered));
    for m in messages {
        if is_prompt(m) {
            close(open.take());
            let turn = Turn {
                turn_id: m.id.clone(),
                user: text_of(m),
                complete: true,
                ts: Some(m.created),
                model: session_model(sessions, &m.session),
                ..Turn::default()
            };
            open = Some(OpenTurn {
                turn: (m.session.clone(), turn, Some(m.created)),
                call_ids: Vec::new(),
            });
            continue;
        }
        let Some(current) = open.as_mut() else {
            continue;
        };
        if current.turn.0 != m.session {
            close(open.take());
            continue;
        }
        match m.role.as_str() {
            "assistant" => answer(current, m),
            "user" => results(current, m),
            _ => {}
        }
    }
    close(open);
    turns
}

fn answered((_, turn, _): &StoredTurn) -> bool {
    !turn.assistant.is_empty() || turn.reasoning.is_some() || !turn.tool_calls.is_empty()
}

fn session_model(sessions: &[Session], id: &str) -> Option<String> {
    sessions
        .iter()
        .find(|s| s.id == id)
        .and_then(|s| s.model.clone())
}

/// Adds an assistant message to its turn: its text, thinking, calls and model.
fn answer(open: &mut OpenTurn, m: &Message) {
    let turn = &mut open.turn.1;
    if let Some(model) = m.metadata.pointer("/inference/requestedModel") {
        turn.model = model.as_str().map(str::to_owned).or(turn.model.take());
    }
    turn.ts = Some(m.created);
    let text = text_of(m);
    if !text.is_empty() {
        turn.assistant = text;
    }
    for item in items(m) {
        match item["type"].as_str() {
            Some("thinking") => {
                if let Some(t) = item["thinking"].as_str().filter(|t| !t.trim().is_empty()) {
                    turn.reasoning = Some(t.to_owned());
                }
            }
            Some("toolRequest") if turn.tool_calls.len() < MAX_TOOL_CALLS => {
                let call = &item["toolCall"]["value"];
                turn.tool_calls.push(ToolCallRecord {
                    tool_name: call["name"].as_str().unwrap_or_default().to_owned(),
                    input: compact_json(&call["arguments"], MAX_TOOL_INPUT_CHARS),
                    output: String::new(),
                });
                open.call_ids
                    .push(item["id"].as_str().unwrap_or_default().to_owned());
            }
            _ => {}
        }
    }
}

/// Fills in the outputs of the turn's calls from a user message of `toolResponse` items, each
/// by its call's id.
fn results(open: &mut OpenTurn, m: &Message) {
    for item in items(m)
        .iter()
        .filter(|item| item["type"] == "toolResponse")
    {
        let id = item["id"].as_str().unwrap_or_default();
        if let Some(n) = open.call_ids.iter().position(|call| call == id) {
            open.turn.1.tool_calls[n].output = cut_text(&result_text(item), MAX_TOOL_OUTPUT_CHARS);
        }
    }
}

/// A `toolResponse` item's text: its content's text items, or its error.
fn result_text(item: &Value) -> String {
    let result = &item["toolResult"];
    let texts: Vec<&str> = result
        .pointer("/value/content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "text")
        .filter_map(|c| c["text"].as_str())
        .collect();
    match (texts.is_empty(), result["error"].as_str()) {
        (false, _) => texts.join("\n"),
        (true, Some(error)) => error.to_owned(),
        (true, None) => String::new(),
    }
}

/// Whether a `toolResponse` item says its call failed: an error result, `isError`, or a
/// shell's `exit_code` other than 0.
fn failed(item: &Value) -> bool {
    let result = &item["toolResult"];
    let exit = result
        .pointer("/value/structuredContent/exit_code")
        .and_then(Value::as_i64);
    result["status"] == "error"
        || result.pointer("/value/isError") == Some(&Value::Bool(true))
        || exit.is_some_and(|code| code != 0)
}

/// The tool calls the store shows and how each ended, keyed by the call's id, which Goose's
/// hooks send as `tool_call_id` (coverage: what the hooks missed).
pub fn tool_items(messages: &[Message]) -> (Vec<ToolCallItem>, Vec<ToolResultItem>) {
    let (mut calls, mut results) = (Vec::new(), Vec::new());
    for m in messages {
        for item in items(m) {
            let Some(id) = item["id"].as_str() else {
                continue;
            };
            match item["type"].as_str() {
                Some("toolRequest") => {
                    let call = &item["toolCall"]["value"];
                    calls.push(ToolCallItem {
                        id: id.to_owned(),
                        name: call["name"].as_str().map(str::to_owned),
                        session_id: Some(m.session.clone()),
                        ts: Some(m.created),
                        sidechain: false,
                        input: Some(call["arguments"].to_string())
                            .filter(|_| !call["arguments"].is_null()),
                    });
                }
                Some("toolResponse") => results.push(ToolResultItem {
                    id: id.to_owned(),
                    session_id: Some(m.session.clone()),
                    ts: Some(m.created),
                    failed: failed(item),
                }),
                _ => {}
            }
        }
    }
    (calls, results)
}

/// The usage of each assistant message that reports some (one model call each), keyed by its
/// response id (else by its row), in the turn it belongs to, with the model it asked for (else
/// the session's).
pub fn usage(messages: &[Message], sessions: &[Session]) -> Vec<UsageRecord> {
    let mut records = Vec::new();
    let mut turn: Option<(&str, String)> = None;
    for m in messages {
        if is_prompt(m) {
            turn = m.id.clone().map(|id| (m.session.as_str(), id));
        }
        if m.role != "assistant" {
            continue;
        }
        let Some(mut record) = counts(&m.metadata["usage"]) else {
            continue;
        };
        record.message_id =
            m.id.clone()
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("goose:{}:{}", m.session, m.row));
        record.model = m
            .metadata
            .pointer("/inference/requestedModel")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| session_model(sessions, &m.session));
        record.ts = Some(m.created);
        record.session_id = Some(m.session.clone());
        record.turn_id = turn
            .as_ref()
            .filter(|(session, _)| *session == m.session)
            .map(|(_, id)| id.clone());
        records.push(record);
    }
    records
}

/// A message's `usage` (camelCase) as a record: the input without the cache reads and writes
/// Goose counts inside it. `None` when it counts nothing.
fn counts(usage: &Value) -> Option<UsageRecord> {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let record = cache_exclusive(
        count("inputTokens"),
        count("outputTokens"),
        count("cacheReadTokens"),
        count("cacheWriteTokens"),
    );
    (record.input + record.output + record.cache_read + record.cache_write > 0).then_some(record)
}

/// A record of Goose's counts, whose input holds the cache reads and writes.
pub fn cache_exclusive(input: u64, output: u64, cache_read: u64, cache_write: u64) -> UsageRecord {
    UsageRecord {
        input: input.saturating_sub(cache_read).saturating_sub(cache_write),
        output,
        cache_read,
        cache_write,
        ..UsageRecord::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(row: i64, id: &str, role: &str, content: Value, metadata: Value) -> Message {
        Message {
            row,
            id: Some(id.into()),
            session: "20261208_1".into(),
            role: role.into(),
            content,
            metadata,
            created: 1_796_689_504_000 + row,
        }
    }

    /// The messages of a run of Goose 1.52.0 (its `sessions.db`, r-usage in
    /// docs/dev/research/goose.md), a failed call added.
    fn stored() -> Vec<Message> {
        let seen = json!({"userVisible": true, "agentVisible": true});
        let usage = |input: u64| {
            json!({"userVisible": true, "inference": {"requestedModel": "mock-model"},
                   "usage": {"inputTokens": input, "outputTokens": 7, "totalTokens": input + 7,
                             "cacheReadTokens": 20, "cacheWriteTokens": 5}})
        };
        vec![
            message(
                1,
                "msg_u1",
                "user",
                json!([{"type": "text", "text": "usage"}]),
                seen.clone(),
            ),
            message(
                2,
                "msg_ctx",
                "user",
                json!([{"type": "text", "text": "<turn-context>…</turn-context>"}]),
                json!({"userVisible": false, "turnContext": true}),
            ),
            message(
                3,
                "chatcmpl-1",
                "assistant",
                json!([{"type": "thinking", "thinking": "Run it."},
                       {"type": "toolRequest", "id": "call_0", "toolCall": {"status": "success",
                        "value": {"name": "shell", "arguments": {"command": "echo u"}}}},
                       {"type": "toolRequest", "id": "call_1", "toolCall": {"status": "success",
                        "value": {"name": "shell", "arguments": {"command": "exit 3"}}}}]),
                usage(120),
            ),
            message(
                4,
                "msg_r1",
                "user",
                json!([{"type": "toolResponse", "id": "call_0", "toolResult": {"status": "success",
                        "value": {"content": [{"type": "text", "text": "u"}],
                                  "structuredContent": {"exit_code": 0}, "isError": false}}},
                       {"type": "toolResponse", "id": "call_1", "toolResult": {"status": "success",
                        "value": {"content": [{"type": "text", "text": "exit 3"}],
                                  "structuredContent": {"exit_code": 3}, "isError": true}}}]),
                seen.clone(),
            ),
            message(
                5,
                "chatcmpl-2",
                "assistant",
                json!([{"type": "text", "text": "All done."}]),
                usage(130),
            ),
            // A prompt nothing answered makes no turn.
            message(
                6,
                "msg_u2",
                "user",
                json!([{"type": "text", "text": "hello?"}]),
                seen,
            ),
        ]
    }

    #[test]
    fn a_prompt_its_calls_and_answer_are_a_turn() {
        let got = turns(&stored(), &[]);
        assert_eq!(got.len(), 1, "{got:?}");
        let (session, turn, started) = &got[0];
        assert_eq!(
            (session.as_str(), *started),
            ("20261208_1", Some(1_796_689_504_001))
        );
        assert_eq!(turn.turn_id.as_deref(), Some("msg_u1"));
        assert_eq!(
            (turn.user.as_str(), turn.assistant.as_str()),
            ("usage", "All done.")
        );
        assert_eq!(turn.reasoning.as_deref(), Some("Run it."));
        assert_eq!(turn.model.as_deref(), Some("mock-model"));
        assert_eq!(
            turn.tool_calls
                .iter()
                .map(|c| (c.tool_name.as_str(), c.input.as_str(), c.output.as_str()))
                .collect::<Vec<_>>(),
            [
                ("shell", r#"{"command":"echo u"}"#, "u"),
                ("shell", r#"{"command":"exit 3"}"#, "exit 3")
            ]
        );
    }

    #[test]
    fn calls_are_keyed_by_their_ids_with_how_they_ended() {
        let (calls, results) = tool_items(&stored());
        assert_eq!(
            calls
                .iter()
                .map(|c| (c.id.as_str(), c.name.as_deref()))
                .collect::<Vec<_>>(),
            [("call_0", Some("shell")), ("call_1", Some("shell"))]
        );
        assert_eq!(
            results
                .iter()
                .map(|r| (r.id.as_str(), r.failed))
                .collect::<Vec<_>>(),
            [("call_0", false), ("call_1", true)]
        );
    }

    #[test]
    fn each_model_call_is_one_record_without_the_cache_in_its_input() {
        let records = usage(&stored(), &[]);
        let got: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r.message_id.as_str(),
                    r.turn_id.as_deref(),
                    r.model.as_deref(),
                    (r.input, r.output, r.cache_read, r.cache_write),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "chatcmpl-1",
                    Some("msg_u1"),
                    Some("mock-model"),
                    (95, 7, 20, 5)
                ),
                (
                    "chatcmpl-2",
                    Some("msg_u1"),
                    Some("mock-model"),
                    (105, 7, 20, 5)
                ),
            ]
        );
        assert_eq!(cache_exclusive(3, 1, 5, 0).input, 0, "never below zero");
    }
}
