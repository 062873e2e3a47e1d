//! The two most common Claude Code lines read without a `serde_json::Value` of the whole line,
//! for reading whole transcripts (`cmstore import`): an assistant line of content blocks (the
//! model's text, thinking and tool calls, and its response's usage) and a user line of tool
//! results. Each such line is parsed once, for its turn, its usage and its tool calls alike
//! (three parsers of the line were a sixth of an import's time). Read into borrowed,
//! typed shapes instead, they cost a fraction of what building the `Value` (every key and
//! string of the line copied into an ordered map) did: that was 40 % of an import's time
//! (BENCHMARKS.md).
//!
//! The records are [`super::parse`]'s, the usage [`super::usage::from_line`]'s and the calls
//! [`super::items::claude_tool_calls`]'s, exactly: any line that is not one of the two shapes, or
//! differs from them in any way (a field of another type, a key twice, a text block beside the
//! tool results, Qwen Code's `parts`), gives `None`, and the caller reads it the usual way. A
//! test holds the two readers to the same records over every line of the real transcripts.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::claude::SYNTHETIC_MODEL;
use super::items::{ToolCallItem, ToolResultItem};
use super::record::{tool_input, ParseOptions, Record, MAX_TOOL_OUTPUT_CHARS};
use super::usage::{from_claude_response, ClaudeResponse, UsageRecord};
use crate::model::shorten::cut_text;

/// What one line says: its records, its time and the tool results it shows.
#[derive(Debug, Clone, PartialEq)]
pub struct FastLine {
    /// [`super::parse::records_of`] of the line.
    pub records: Vec<Record>,
    /// [`super::parse::line_time`] of the line.
    pub ts: Option<i64>,
    /// [`super::items::claude_tool_results`] of the line.
    pub results: Vec<ToolResultItem>,
    /// [`super::usage::from_line`] of the line.
    pub usage: Option<UsageRecord>,
    /// [`super::items::claude_tool_calls`] of the line.
    pub calls: Vec<ToolCallItem>,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(rename = "isSidechain")]
    sidechain: Option<bool>,
    #[serde(rename = "isApiErrorMessage")]
    api_error: Option<bool>,
    #[serde(rename = "isMeta")]
    meta: Option<bool>,
    #[serde(rename = "isCompactSummary")]
    compact_summary: Option<bool>,
    #[serde(rename = "isVisibleInTranscriptOnly")]
    transcript_only: Option<bool>,
    #[serde(borrow)]
    timestamp: Option<&'a RawValue>,
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<&'a RawValue>,
    #[serde(borrow, rename = "requestId")]
    request_id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "agentId")]
    agent_id: Option<Cow<'a, str>>,
    /// Qwen Code names the model on the line: such a line is read the usual way.
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    /// Read in the line's one pass (not kept raw and read again: a tool result's text is most
    /// of the line); a line whose content is a plain string does not parse as this.
    #[serde(borrow)]
    content: Option<Vec<Block<'a>>>,
    #[serde(borrow)]
    usage: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    tool_use_id: Option<Cow<'a, str>>,
    is_error: Option<bool>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

/// The line (newline excluded) at byte `offset` read the fast way, as a reader with `options`
/// would read it; `None` for a line to read the usual way.
pub fn read(bytes: &[u8], options: ParseOptions, offset: u64) -> Option<FastLine> {
    let bytes = bytes.trim_ascii();
    // An object, as the usual reader wants (serde would also read a struct from an array).
    if bytes.first() != Some(&b'{') {
        return None;
    }
    let line: Line<'_> = serde_json::from_slice(bytes).ok()?;
    if line.model.is_some() {
        return None;
    }
    let ts = line_time(line.timestamp)?;
    let message = line.message.as_ref()?;
    let blocks = message.content.as_deref()?;
    let same_chain = line.sidechain.unwrap_or(false) == options.sidechain;
    let mut read = FastLine {
        records: Vec::new(),
        ts,
        results: Vec::new(),
        usage: None,
        calls: Vec::new(),
    };
    match line.kind.as_ref() {
        "assistant" => {
            if same_chain {
                read.records = assistant(&line, message, blocks)?;
            }
            // The usage and call readers read these two as strings; a line where either is
            // something else is read the usual way.
            let timestamp = text_of(line.timestamp)?;
            let session_id = text_of(line.session_id)?;
            let response = ClaudeResponse {
                message_id: message.id.as_deref(),
                model: message.model.as_deref(),
                request_id: line.request_id.as_deref(),
                timestamp: timestamp.as_deref(),
                sidechain: line.sidechain.unwrap_or(false),
                agent_id: line.agent_id.as_deref(),
                session_id: session_id.as_deref(),
            };
            read.usage = message
                .usage
                .and_then(|usage| from_claude_response(response, usage.get(), offset));
            read.calls = tool_calls(response, blocks);
        }
        "user" => (read.records, read.results) = tool_results(&line, blocks, same_chain)?,
        _ => return None,
    }
    Some(read)
}

/// A field that is a string, unescaped: `Some(None)` when there is none (or `null`), `None`
/// when it is something else.
fn text_of(raw: Option<&RawValue>) -> Option<Option<Cow<'_, str>>> {
    let Some(raw) = raw.map(RawValue::get) else {
        return Some(None);
    };
    // Borrowed unless it holds an escape (serde gives a `Cow` owned whatever it holds).
    if let Ok(text) = serde_json::from_str::<Option<&str>>(raw) {
        return Some(text.map(Cow::Borrowed));
    }
    let text = serde_json::from_str::<Option<String>>(raw).ok()?;
    Some(text.map(Cow::Owned))
}

/// The tool calls of an assistant line's `blocks`, as `items::claude_tool_calls` gives them.
fn tool_calls(line: ClaudeResponse<'_>, blocks: &[Block<'_>]) -> Vec<ToolCallItem> {
    let ts = line.timestamp.and_then(crate::support::clock::rfc3339_ms);
    blocks
        .iter()
        .filter(|b| b.kind.as_deref() == Some("tool_use"))
        .filter_map(|b| {
            Some(ToolCallItem {
                id: b.id.as_deref().filter(|id| !id.is_empty())?.to_owned(),
                name: b.name.as_deref().map(str::to_owned),
                session_id: line.session_id.map(str::to_owned),
                ts,
                sidechain: line.sidechain,
                input: b.input.map(|raw| raw.get().to_owned()),
            })
        })
        .collect()
}

/// The line's time as [`super::parse::line_time`] reads it: `Some(None)` when it says none,
/// `None` when its shape is not one this reader knows.
fn line_time(field: Option<&RawValue>) -> Option<Option<i64>> {
    let Some(raw) = field.map(RawValue::get) else {
        return Some(None);
    };
    if raw.starts_with('"') {
        let text = text_of(field)?;
        return Some(text.as_deref().and_then(crate::support::clock::rfc3339_ms));
    }
    Some(match serde_json::from_str::<Value>(raw).ok()? {
        Value::String(text) => crate::support::clock::rfc3339_ms(&text),
        Value::Number(ms) => ms.as_i64(),
        _ => None,
    })
}

/// An assistant line's records, as `claude::assistant` gives them.
fn assistant(line: &Line<'_>, message: &Message<'_>, blocks: &[Block<'_>]) -> Option<Vec<Record>> {
    if line.api_error == Some(true) {
        return Some(vec![Record::ApiError]);
    }
    if message.model.as_deref() == Some(SYNTHETIC_MODEL) {
        return Some(Vec::new());
    }
    let mut records = Vec::with_capacity(blocks.len() + 1);
    for block in blocks {
        let record = match block.kind.as_deref() {
            Some("text") => block.text.as_ref().map(|text| Record::AssistantText {
                message_id: message.id.as_deref().map(str::to_owned),
                text: text.clone().into_owned(),
            }),
            Some("thinking") => block.thinking.as_ref().map(|text| Record::Reasoning {
                text: text.clone().into_owned(),
            }),
            Some("tool_use") => match &block.name {
                Some(name) => Some(Record::ToolUse {
                    id: block.id.as_deref().map(str::to_owned),
                    name: name.clone().into_owned(),
                    input: input_of(block.input)?,
                }),
                None => None,
            },
            _ => None,
        };
        records.extend(record);
    }
    let model = message.model.as_deref().filter(|m| !m.is_empty());
    if let (Some(name), false) = (model, records.is_empty()) {
        records.insert(
            0,
            Record::Model {
                name: name.to_owned(),
            },
        );
    }
    Some(records)
}

/// A tool call's input as `record::tool_input` reads it; `None` when it is no JSON.
fn input_of(raw: Option<&RawValue>) -> Option<Value> {
    let value = match raw {
        Some(raw) => Some(serde_json::from_str::<Value>(raw.get()).ok()?),
        None => None,
    };
    Some(tool_input(value.as_ref()))
}

/// A user line of tool results only: its results (records, when `same_chain`, and coverage
/// items either way), as `claude::user` and `items::claude_tool_results` give them. `None` for
/// any other user line (a prompt, a text block beside the results: feedback, interruptions).
fn tool_results(
    line: &Line<'_>,
    blocks: &[Block<'_>],
    same_chain: bool,
) -> Option<(Vec<Record>, Vec<ToolResultItem>)> {
    if blocks.is_empty()
        || blocks
            .iter()
            .any(|b| b.kind.as_deref() != Some("tool_result"))
    {
        return None;
    }
    // As `items::claude_tool_results` reads them: what is not a string is none.
    let session = text_of(line.session_id).flatten().map(Cow::into_owned);
    let stamped = text_of(line.timestamp)
        .flatten()
        .and_then(|text| crate::support::clock::rfc3339_ms(&text));
    let items = blocks
        .iter()
        .filter_map(|b| {
            let id = b.tool_use_id.as_deref().filter(|id| !id.is_empty())?;
            Some(ToolResultItem {
                id: id.to_owned(),
                session_id: session.clone(),
                ts: stamped,
                failed: b.is_error == Some(true),
            })
        })
        .collect();
    let injected = [line.meta, line.compact_summary, line.transcript_only].contains(&Some(true));
    if !same_chain || injected {
        return Some((Vec::new(), items));
    }
    let mut records = Vec::with_capacity(blocks.len());
    for block in blocks {
        let Some(id) = &block.tool_use_id else {
            continue;
        };
        records.push(Record::ToolResult {
            id: id.clone().into_owned(),
            output: result_text(block.content)?,
        });
    }
    Some((records, items))
}

/// A `tool_result` block's text, as `claude::tool_result` reads it: a string, or the text
/// parts of an array joined; nothing for anything else.
fn result_text(content: Option<&RawValue>) -> Option<String> {
    let Some(raw) = content.map(RawValue::get) else {
        return Some(String::new());
    };
    // Cut from the line's own text: a tool's output is the bulk of most transcripts, and a
    // turn keeps no more of it.
    Some(match raw.as_bytes().first() {
        Some(b'"') => cut_text(
            &text_of(content)?.unwrap_or_default(),
            MAX_TOOL_OUTPUT_CHARS,
        ),
        Some(b'[') => {
            let parts: Vec<Part<'_>> = serde_json::from_str(raw).ok()?;
            let texts = parts
                .iter()
                .filter(|p| p.kind.as_deref() == Some("text"))
                .filter_map(|p| p.text.as_deref());
            cut_text(&texts.collect::<Vec<_>>().join("\n"), MAX_TOOL_OUTPUT_CHARS)
        }
        _ => String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::transcript::items::{claude_tool_calls, claude_tool_results};
    use crate::model::transcript::parse::{line_time as usual_time, parse_value, records_of};
    use crate::model::transcript::usage::from_line;

    const OFFSET: u64 = 4096;

    /// What the usual readers make of `line`.
    fn usual(line: &str, options: ParseOptions) -> FastLine {
        let value = parse_value(line.as_bytes()).unwrap();
        FastLine {
            records: records_of(&value, options),
            ts: usual_time(&value),
            results: claude_tool_results(&value),
            usage: from_line(line.as_bytes(), OFFSET),
            calls: claude_tool_calls(line.as_bytes()),
        }
    }

    /// Holds the fast read of `line` to the usual one, both chains; whether it was read fast.
    fn check(line: &str) -> bool {
        let mut fast = false;
        for sidechain in [false, true] {
            let options = ParseOptions { sidechain };
            if let Some(read) = read(line.as_bytes(), options, OFFSET) {
                assert_eq!(read, usual(line, options), "{line}");
                fast = true;
            }
        }
        fast
    }

    #[test]
    fn assistant_and_tool_result_lines_read_as_the_usual_reader_reads_them() {
        let fast = [
            r#"{"type":"assistant","timestamp":"2026-02-08T17:28:33.068Z","message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"t2","name":"Edit","input":"{\"a\":1}"},{"type":"tool_use","name":"Read"},{"type":"image"}]}}"#,
            r#"{"type":"assistant","isSidechain":true,"message":{"id":"m1","model":"claude-sonnet-4-5","content":[{"type":"text","text":"sub"}]}}"#,
            r#"{"type":"assistant","sessionId":"s\u0031","agentId":"a7","requestId":"req_1","isSidechain":true,"timestamp":"2026-02-08T17:28:33.068Z","message":{"id":"m1","model":"claude-haiku-4-5","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"output_tokens":8,"cache_creation_input_tokens":4415,"cache_read_input_tokens":7,"cache_creation":{"ephemeral_5m_input_tokens":4410,"ephemeral_1h_input_tokens":5},"service_tier":"standard"}}}"#,
            r#"{"type":"assistant","sessionId":null,"timestamp":null,"message":{"id":"m2","content":[{"type":"text","text":"x"}],"usage":{"output_tokens":3}}}"#,
            r#"{"type":"assistant","message":{"id":"","model":"m","content":[{"type":"tool_use","id":"","name":"Bash","input":{}}],"usage":{"output_tokens":3}}}"#,
            r#"{"type":"assistant","message":{"id":"m3","model":"<synthetic>","content":[{"type":"text","text":"x"}],"usage":{"output_tokens":0}}}"#,
            r#"{"type":"assistant","isApiErrorMessage":true,"message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error"}]}}"#,
            r#"{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"No response requested."}]}}"#,
            r#"{"type":"assistant","message":{"model":"","content":[{"type":"redacted_thinking","data":"x"}]}}"#,
            r#"{"type":"user","sessionId":"s1","timestamp":"2026-02-08T17:28:34.000Z","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"},{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":[{"type":"text","text":"x"},{"type":"image"},{"type":"text","text":"y"}]},{"type":"tool_result","content":"no id"},{"type":"tool_result","tool_use_id":""}]}}"#,
            r#"{"type":"user","isMeta":true,"timestamp":1770571713068,"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":null}]}}"#,
            r#"{"type":"user","isSidechain":true,"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":{"x":1}}]}}"#,
        ];
        for line in fast {
            assert!(check(line), "read fast: {line}");
        }
        let usual_only = [
            // A prompt, text beside results, Qwen's shapes, odd types, no message.
            r#"{"type":"user","uuid":"u1","message":{"content":"hello"}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"},{"type":"text","text":"[Request interrupted by user]"}]}}"#,
            r#"{"type":"assistant","model":"qwen3","message":{"content":[{"type":"text","text":"q"}]}}"#,
            r#"{"type":"assistant","message":{"parts":[{"text":"q"}]}}"#,
            r#"{"type":"assistant","message":{"content":"plain text"}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":7}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","is_error":"yes"}]}}"#,
            r#"{"type":"assistant","isSidechain":"no","message":{"content":[]}}"#,
            r#"{"type":"system","subtype":"turn_duration"}"#,
            r#"{"type":"assistant","type":"user","message":{"content":[]}}"#,
            // Fields the usage and call readers read as strings, that are not.
            r#"{"type":"assistant","timestamp":1770571713068,"message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{}}],"usage":{"output_tokens":1}}}"#,
            r#"{"type":"assistant","sessionId":7,"message":{"id":"m1","content":[],"usage":{"output_tokens":1}}}"#,
            r#"{"type":"assistant","requestId":7,"message":{"id":"m1","content":[],"usage":{"output_tokens":1}}}"#,
        ];
        for line in usual_only {
            assert!(!check(line), "read the usual way: {line}");
        }
    }

    /// Every line of the real Claude Code transcripts: the fast read, where it reads one, is
    /// the usual one; and it reads most of their assistant and tool-result lines.
    #[test]
    fn every_real_line_the_fast_reader_reads_reads_as_the_usual_one() {
        let shared = crate::model::transcript::real_transcript_tests::shared_fixtures;
        let (Some(real), Some(more)) =
            (shared("real/claude-code"), shared("real-more/claude-code"))
        else {
            return;
        };
        let roots = [real, more];
        let (mut lines, mut fast) = (0, 0);
        let mut stack: Vec<std::path::PathBuf> = roots.to_vec();
        while let Some(path) = stack.pop() {
            if path.is_dir() {
                stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
                continue;
            }
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let Some(value) = parse_value(line.as_bytes()) else {
                    continue;
                };
                let kind = value.get("type").and_then(Value::as_str);
                if matches!(kind, Some("assistant" | "user")) {
                    lines += 1;
                    fast += usize::from(check(line));
                }
            }
        }
        assert!(lines > 1000, "{lines} lines");
        assert!(fast * 10 > lines * 6, "{fast} of {lines} read fast");
    }
}
