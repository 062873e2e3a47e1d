//! Kimi Code's record log of one agent of one session (`wire.jsonl`) as turns, calls and usage
//! (pure), for `cmstore import`.
//!
//! Kimi Code (2.x) writes a record per line, each with a `type` and a `time` (epoch ms): a
//! person's prompt is `turn.prompt` (`promptId`, `input` content parts); each model call is a
//! step (`context.append_loop_event` with `step.begin` … `step.end`, the step's end carrying the
//! call's `usage` and the provider's `messageId`), the model it asked for the `llm.request`
//! before it; inside a step, `content.part` (the answer's text), `tool.call` (`toolCallId`,
//! `name`, `args`) and `tool.result` (`output`, `isError`); `turn.ended` closes the turn with
//! its `reason`. Usage counts the cache apart (`inputOther` is the uncached input). A
//! subagent's log (`agents/agent-N/wire.jsonl`) is its own file: its calls count as the
//! session's, sidechain, and it makes no turn. Fields as docs/agents.md, "Kimi Code", cites
//! them (seen with Kimi Code 2.1.0).

use serde_json::Value;

use super::items::{ToolCallItem, ToolResultItem};
use super::{Turn, MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS, MAX_TOOL_OUTPUT_CHARS};
use crate::model::queue_line::usage::UsageRecord;
use crate::model::queue_line::ToolCallRecord;
use crate::model::shorten::{compact_json, cut_text};

/// What one log holds.
#[derive(Debug, Default, PartialEq)]
pub struct Read {
    /// Its turns, each with when its prompt was written (none from a subagent's log).
    pub turns: Vec<(Turn, Option<i64>)>,
    /// Each model call's usage.
    pub usage: Vec<UsageRecord>,
    /// The calls it shows, and how each ended.
    pub calls: Vec<ToolCallItem>,
    /// Their results.
    pub results: Vec<ToolResultItem>,
}

/// A turn being read, with its calls' ids in the order of its `tool_calls`, and the text of
/// the step read last.
#[derive(Default)]
struct Open {
    turn: Turn,
    started: Option<i64>,
    call_ids: Vec<String>,
    step_text: String,
}

/// Reads the `records` of session `session`'s log (`subagent`: a subagent's).
pub fn read(records: &[Value], session: &str, subagent: bool) -> Read {
    let mut read = Read::default();
    let mut open: Option<Open> = None;
    let mut model: Option<String> = None;
    for record in records {
        let time = record["time"].as_i64();
        match record["type"].as_str() {
            // A person's prompt; a system trigger's (`origin.kind` other than `user`) fires no
            // UserPromptSubmit and belongs to the turn it runs in.
            Some("turn.prompt") if !subagent && is_persons(record) => {
                close(&mut read, open.take());
                open = Some(prompt(record, time));
            }
            Some("llm.request") => model = record["model"].as_str().map(str::to_owned),
            Some("turn.ended") => {
                if let Some(o) = open.as_mut() {
                    ended(&mut o.turn, record["reason"].as_str(), time);
                }
                close(&mut read, open.take());
            }
            Some("context.append_loop_event") => {
                let event = &record["event"];
                let facts = (session, subagent, time, model.as_deref());
                loop_event(&mut read, open.as_mut(), event, facts);
            }
            _ => {}
        }
    }
    close(&mut read, open);
    read
}

/// Whether a `turn.prompt` is the person's (`origin.kind: "user"`, or no origin named).
fn is_persons(record: &Value) -> bool {
    record["origin"]["kind"]
        .as_str()
        .is_none_or(|kind| kind == "user")
}

/// A turn opened by a `turn.prompt` record.
fn prompt(record: &Value, time: Option<i64>) -> Open {
    let text: Vec<&str> = record["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|part| part["type"] == "text")
        .filter_map(|part| part["text"].as_str())
        .collect();
    Open {
        turn: Turn {
            turn_id: record["promptId"].as_str().map(str::to_owned),
            user: text.join("\n"),
            complete: true,
            ts: time,
            ..Turn::default()
        },
        started: time,
        ..Open::default()
    }
}

/// How `turn.ended`'s reason ends the turn: `completed`, or the person's cancel
/// (`interrupted`), or anything else (`failed`).
fn ended(turn: &mut Turn, reason: Option<&str>, time: Option<i64>) {
    match reason {
        Some("completed") | None => {}
        Some("cancelled" | "interrupted" | "aborted") => turn.interrupted = true,
        Some(_) => turn.failed = true,
    }
    turn.ts = time.or(turn.ts);
}

/// Adds a finished turn that has anything of an answer.
fn close(read: &mut Read, open: Option<Open>) {
    let Some(open) = open else { return };
    let turn = open.turn;
    if !turn.assistant.is_empty() || !turn.tool_calls.is_empty() || turn.interrupted || turn.failed
    {
        read.turns.push((turn, open.started));
    }
}

/// One loop event: a step's text, a call, a call's result, a step's end (a model call's
/// usage).
fn loop_event(
    read: &mut Read,
    open: Option<&mut Open>,
    event: &Value,
    (session, subagent, time, model): (&str, bool, Option<i64>, Option<&str>),
) {
    match event["type"].as_str() {
        Some("step.begin") => {
            if let Some(o) = open {
                o.step_text.clear();
            }
        }
        Some("content.part") if event["part"]["type"] == "text" => {
            if let (Some(o), Some(text)) = (open, event["part"]["text"].as_str()) {
                o.step_text.push_str(text);
                o.turn.assistant = o.step_text.clone();
            }
        }
        Some("tool.call") => {
            let id = event["toolCallId"].as_str().unwrap_or_default();
            read.calls.push(ToolCallItem {
                id: id.to_owned(),
                name: event["name"].as_str().map(str::to_owned),
                session_id: Some(session.to_owned()),
                ts: time,
                sidechain: subagent,
                input: Some(event["args"].to_string()).filter(|_| !event["args"].is_null()),
            });
            if let Some(o) = open.filter(|o| o.turn.tool_calls.len() < MAX_TOOL_CALLS) {
                o.turn.tool_calls.push(ToolCallRecord {
                    tool_name: event["name"].as_str().unwrap_or_default().to_owned(),
                    input: compact_json(&event["args"], MAX_TOOL_INPUT_CHARS),
                    output: String::new(),
                });
                o.call_ids.push(id.to_owned());
            }
        }
        Some("tool.result") => {
            let id = event["toolCallId"].as_str().unwrap_or_default();
            let result = &event["result"];
            read.results.push(ToolResultItem {
                id: id.to_owned(),
                session_id: Some(session.to_owned()),
                ts: time,
                failed: result["isError"] == true,
            });
            if let Some(o) = open {
                if let Some(n) = o.call_ids.iter().position(|call| call == id) {
                    let output = result["output"].as_str().unwrap_or_default();
                    o.turn.tool_calls[n].output = cut_text(output, MAX_TOOL_OUTPUT_CHARS);
                }
            }
        }
        Some("step.end") => {
            let turn_id = open.as_ref().and_then(|o| o.turn.turn_id.clone());
            if let Some(o) = open {
                o.turn.model = model.map(str::to_owned).or(o.turn.model.take());
                o.turn.ts = time.or(o.turn.ts);
            }
            if let Some(mut record) = usage(&event["usage"]) {
                record.message_id = event["messageId"]
                    .as_str()
                    .filter(|id| !id.is_empty())
                    .map(str::to_owned)
                    .unwrap_or_else(|| {
                        let step = event["uuid"].as_str().unwrap_or_default();
                        format!("kimi:{session}:{step}")
                    });
                record.model = model.map(str::to_owned);
                record.ts = time;
                record.session_id = Some(session.to_owned());
                record.turn_id = turn_id;
                record.sidechain = subagent;
                read.usage.push(record);
            }
        }
        _ => {}
    }
}

/// A step's `usage` as a record; `None` when it counts nothing.
fn usage(usage: &Value) -> Option<UsageRecord> {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    let record = UsageRecord {
        input: count("inputOther"),
        output: count("output"),
        cache_read: count("inputCacheRead"),
        cache_write: count("inputCacheCreation"),
        ..UsageRecord::default()
    };
    (record.input + record.output + record.cache_read + record.cache_write > 0).then_some(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn step(n: u64, time: i64, inner: Vec<Value>, usage: Value) -> Vec<Value> {
        let uuid = format!("step-{n}");
        let mut records = vec![
            json!({"type": "context.append_loop_event", "time": time,
                   "event": {"type": "step.begin", "uuid": uuid, "step": n}}),
            json!({"type": "llm.request", "model": "claude-sonnet-4-5", "modelAlias": "mock",
                   "time": time}),
        ];
        records.extend(inner.into_iter().map(
            |event| json!({"type": "context.append_loop_event", "time": time, "event": event}),
        ));
        records.push(
            json!({"type": "context.append_loop_event", "time": time + 1,
            "event": {"type": "step.end", "uuid": uuid, "usage": usage,
                      "messageId": format!("msg_mock_{n}")}}),
        );
        records
    }

    /// A log as Kimi Code 2.1.0 wrote it in a run of the end-to-end suite, cut to the records
    /// read: a prompt, a call that worked, one that failed, the answer.
    fn log() -> Vec<Value> {
        let mut records = vec![json!({"type": "turn.prompt", "agentId": "main",
            "input": [{"type": "text", "text": "run the steps"}],
            "promptId": "msg_01M99K9J", "turnId": 0, "time": 100})];
        let counts = |n: u64| {
            json!({"inputOther": 3 + n, "output": 211 + n, "inputCacheRead": 15_007 + n,
                   "inputCacheCreation": 3_060 + n})
        };
        records.extend(step(
            0,
            110,
            vec![
                json!({"type": "tool.call", "toolCallId": "toolu_0", "name": "Bash",
                       "args": {"command": "echo hi"}}),
                json!({"type": "tool.result", "toolCallId": "toolu_0",
                       "result": {"output": "hi\n", "durationMs": 20}}),
                json!({"type": "tool.call", "toolCallId": "toolu_1", "name": "Bash",
                       "args": {"command": "exit 3"}}),
                json!({"type": "tool.result", "toolCallId": "toolu_1",
                       "result": {"output": "Command failed with exit code: 3.",
                                  "isError": true}}),
            ],
            counts(0),
        ));
        records.extend(step(
            1,
            120,
            vec![
                json!({"type": "content.part", "part": {"type": "text", "text": "All "}}),
                json!({"type": "content.part", "part": {"type": "text", "text": "done."}}),
            ],
            counts(1),
        ));
        records.push(
            json!({"type": "turn.ended", "turnId": 0, "reason": "completed",
                            "time": 130}),
        );
        records
    }

    #[test]
    fn a_prompt_its_steps_and_its_end_are_a_turn() {
        let read = read(&log(), "session_1", false);
        assert_eq!(read.turns.len(), 1);
        let (turn, started) = &read.turns[0];
        assert_eq!(*started, Some(100));
        assert_eq!(turn.turn_id.as_deref(), Some("msg_01M99K9J"));
        assert_eq!(
            (turn.user.as_str(), turn.assistant.as_str()),
            ("run the steps", "All done.")
        );
        assert_eq!(turn.model.as_deref(), Some("claude-sonnet-4-5"));
        assert_eq!(
            (turn.ts, turn.failed, turn.interrupted),
            (Some(130), false, false)
        );
        assert_eq!(
            turn.tool_calls
                .iter()
                .map(|c| (c.input.as_str(), c.output.as_str()))
                .collect::<Vec<_>>(),
            [
                (r#"{"command":"echo hi"}"#, "hi\n"),
                (
                    r#"{"command":"exit 3"}"#,
                    "Command failed with exit code: 3."
                )
            ]
        );
        assert_eq!(
            read.results
                .iter()
                .map(|r| (r.id.as_str(), r.failed))
                .collect::<Vec<_>>(),
            [("toolu_0", false), ("toolu_1", true)]
        );
    }

    #[test]
    fn each_step_is_one_model_calls_usage() {
        let read = read(&log(), "session_1", false);
        let got: Vec<_> = read
            .usage
            .iter()
            .map(|r| {
                (
                    r.message_id.as_str(),
                    r.turn_id.as_deref(),
                    (r.input, r.output, r.cache_read, r.cache_write),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("msg_mock_0", Some("msg_01M99K9J"), (3, 211, 15_007, 3_060)),
                ("msg_mock_1", Some("msg_01M99K9J"), (4, 212, 15_008, 3_061)),
            ]
        );
    }

    #[test]
    fn a_subagents_log_makes_no_turn_and_its_calls_are_sidechain() {
        let read = read(&log(), "session_1", true);
        assert!(read.turns.is_empty());
        assert!(read
            .usage
            .iter()
            .all(|r| r.sidechain && r.turn_id.is_none()));
        assert!(read.calls.iter().all(|c| c.sidechain));
    }

    #[test]
    fn a_system_triggers_prompt_opens_no_turn() {
        let mut records = log();
        records.insert(
            3,
            json!({"type": "turn.prompt", "origin": {"kind": "system_trigger"},
                   "input": [{"type": "text", "text": "a reminder"}], "promptId": "p9",
                   "time": 105}),
        );
        let read = read(&records, "session_1", false);
        assert_eq!(read.turns.len(), 1);
        assert_eq!(read.turns[0].0.turn_id.as_deref(), Some("msg_01M99K9J"));
    }

    #[test]
    fn a_cancelled_turn_is_interrupted_and_an_unanswered_one_is_none() {
        let records = [
            json!({"type": "turn.prompt", "input": [{"type": "text", "text": "a"}],
                   "promptId": "p1", "time": 1}),
            json!({"type": "turn.ended", "reason": "cancelled", "time": 2}),
            json!({"type": "turn.prompt", "input": [{"type": "text", "text": "b"}],
                   "promptId": "p2", "time": 3}),
        ];
        let read = read(&records, "s", false);
        assert_eq!(read.turns.len(), 1);
        assert!(read.turns[0].0.interrupted);
    }
}
