//! The Anthropic Messages API as Claude Code calls it (`POST /v1/messages`, streamed), answering
//! from a script: the n-th reply of the agent loop is the script's n-th step.

use serde_json::{json, Value};

use crate::mock::{Reply, Request};

/// One reply of the scripted model.
#[derive(Clone)]
pub enum Step {
    /// Ask for one tool call.
    Tool(&'static str, Value),
    /// Say something, then ask for one tool call: one response of two content blocks.
    TextAndTool(&'static str, &'static str, Value),
    /// Answer with text and end the turn.
    Text(&'static str),
    /// End the turn with private reasoning and no text at all.
    ThinkingOnly(&'static str),
    /// Never answer (the turn is interrupted while it waits).
    Stall,
}

/// The model that the mock serves.
pub const MODEL: &str = "claude-sonnet-4-5";

/// The token counts a reply reports, as the Messages API splits them: `input` excludes the
/// cache reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub cache_read: u64,
    pub output: u64,
}

impl Usage {
    /// What [`responder`] reports for every reply.
    pub const SMALL: Usage = Usage {
        input: 10,
        cache_write_5m: 0,
        cache_write_1h: 0,
        cache_read: 0,
        output: 5,
    };

    /// Counts of their own for step `n`, every field different, so that a count put in the
    /// wrong column or taken from the wrong response shows.
    pub fn of_step(n: usize) -> Usage {
        let n = n as u64;
        Usage {
            input: 3 + n,
            cache_write_5m: 1_021 + 100 * n,
            cache_write_1h: 2_039 + 10 * n,
            cache_read: 15_007 + 1_000 * n,
            output: 211 + 7 * n,
        }
    }

    /// All cache writes, as `cache_creation_input_tokens` reports them.
    pub fn cache_write(&self) -> u64 {
        self.cache_write_5m + self.cache_write_1h
    }
}

/// The mock of a run in `world`, in enforce mode, of three calls of the shell tool `tool`
/// (its input `input(command)`): a command that works, one that exits 3, one the gate denies
/// (it would create the marker), then the answer "All three steps are done."; each reply
/// reports counts of its own (`Usage::of_step`). Also the denied command.
pub fn three_steps(
    world: &crate::harness::World,
    tool: &'static str,
    input: fn(&str) -> Value,
) -> (crate::mock::MockServer, String) {
    world.enforce();
    let denied = format!(
        "touch {} && echo 'drop table users'",
        world.marker().display()
    );
    let script = vec![
        Step::Tool(tool, input("echo hi")),
        Step::Tool(tool, input("echo failing; exit 3")),
        Step::Tool(tool, input(&denied)),
        Step::Text("All three steps are done."),
    ];
    let mock = crate::mock::MockServer::start(responder_counting(script, Usage::of_step));
    (mock, denied)
}

/// The step number requests outside the agent loop (no `tools`) are answered as.
pub const SIDE: usize = 99;

/// A responder for [`crate::mock::MockServer::start`] playing `script`.
///
/// The agent loop's requests carry `tools`; the step is the number of `tool_result` blocks in
/// the conversation so far, so a retried request gets the same answer. Other requests (titles,
/// summaries, token counts) get a short text.
pub fn responder(script: Vec<Step>) -> impl Fn(&Request) -> Reply + Send + Sync {
    responder_counting(script, |_| Usage::SMALL)
}

/// [`responder`], the reply to step `n` (or [`SIDE`]) reporting `usage(n)`, with the message id
/// `msg_mock_<n>` and the `request-id` header `req_mock_<n>`.
pub fn responder_counting(
    script: Vec<Step>,
    usage: fn(usize) -> Usage,
) -> impl Fn(&Request) -> Reply + Send + Sync {
    move |req| {
        if req.path.contains("count_tokens") {
            return Reply::Json(json!({"input_tokens": 10}));
        }
        if req.method != "POST" || !req.path.starts_with("/v1/messages") {
            return Reply::Status(404);
        }
        let (n, step) = if req.body.get("tools").is_some() {
            let n = tool_results(&req.body);
            (n, script[n.min(script.len() - 1)].clone())
        } else {
            (SIDE, Step::Text("ok"))
        };
        match reply(&req.body, step, &format!("msg_mock_{n}"), usage(n)) {
            Reply::Stall => Reply::Stall,
            reply => Reply::WithHeaders(
                vec![("request-id", format!("req_mock_{n}"))],
                Box::new(reply),
            ),
        }
    }
}

/// The step each Messages request `mock` answered was, in order: the agent loop's steps, and
/// [`SIDE`] for a request outside it.
pub fn steps_answered(mock: &crate::mock::MockServer) -> Vec<usize> {
    mock.requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/messages"))
        .map(|r| match r.body.get("tools") {
            Some(_) => tool_results(&r.body),
            None => SIDE,
        })
        .collect()
}

/// The content of every `tool_result` block the mock was sent (as JSON text), over all its
/// requests: what the agent gave the model as its calls' results.
pub fn sent_tool_results(mock: &crate::mock::MockServer) -> Vec<String> {
    mock.requests()
        .iter()
        .filter_map(|r| r.body["messages"].as_array().cloned())
        .flatten()
        .filter_map(|m| m["content"].as_array().cloned())
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].to_string())
        .collect()
}

/// How many `tool_result` blocks the conversation in a request body holds.
pub fn tool_results(body: &Value) -> usize {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    messages
        .iter()
        .filter_map(|m| m["content"].as_array())
        .flatten()
        .filter(|block| block["type"] == "tool_result")
        .count()
}

fn reply(body: &Value, step: Step, id: &str, usage: Usage) -> Reply {
    let model = body["model"].as_str().unwrap_or(MODEL).to_string();
    let (blocks, stop) = match step {
        Step::Stall => return Reply::Stall,
        Step::Tool(name, input) => (vec![tool_block(body, name, input)], "tool_use"),
        Step::TextAndTool(text, name, input) => (
            vec![text_block(text), tool_block(body, name, input)],
            "tool_use",
        ),
        Step::Text(text) => (vec![text_block(text)], "end_turn"),
        Step::ThinkingOnly(text) => (vec![thinking_block(text)], "end_turn"),
    };
    if body["stream"] != true {
        let content: Vec<Value> = blocks.iter().map(|(start, _)| start.clone()).collect();
        return Reply::Json(json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": stop, "stop_sequence": null,
            "usage": usage_json(usage, usage.output)
        }));
    }
    // As the API streams it: `message_start` with the input side and a first output count,
    // `message_delta` with the final output count.
    let mut events = vec![(
        Some("message_start"),
        json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": usage_json(usage, 1)}}),
    )];
    for (index, (start, deltas)) in blocks.into_iter().enumerate() {
        let empty = empty_of(&start);
        events.push((
            Some("content_block_start"),
            json!({"type": "content_block_start", "index": index, "content_block": empty}),
        ));
        for delta in deltas {
            events.push((
                Some("content_block_delta"),
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push((
            Some("content_block_stop"),
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        Some("message_delta"),
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": usage.output}}),
    ));
    events.push((Some("message_stop"), json!({"type": "message_stop"})));
    Reply::Sse(events)
}

/// `usage` as the API reports it, with `output` output tokens so far.
fn usage_json(usage: Usage, output: u64) -> Value {
    json!({
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_write(),
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write_5m,
            "ephemeral_1h_input_tokens": usage.cache_write_1h,
        },
        "output_tokens": output,
        "service_tier": "standard",
    })
}

/// A block as the non-streamed reply holds it, and the deltas that stream it.
type Block = (Value, Vec<Value>);

fn tool_block(body: &Value, name: &str, input: Value) -> Block {
    let id = format!("toolu_mock_{}", tool_results(body));
    let partial = input.to_string();
    (
        json!({"type": "tool_use", "id": id, "name": name, "input": input}),
        vec![json!({"type": "input_json_delta", "partial_json": partial})],
    )
}

fn text_block(text: &str) -> Block {
    (
        json!({"type": "text", "text": text}),
        vec![json!({"type": "text_delta", "text": text})],
    )
}

fn thinking_block(text: &str) -> Block {
    (
        json!({"type": "thinking", "thinking": text, "signature": "bW9jaw=="}),
        vec![
            json!({"type": "thinking_delta", "thinking": text}),
            json!({"type": "signature_delta", "signature": "bW9jaw=="}),
        ],
    )
}

/// The block as `content_block_start` announces it: its content left to the deltas.
fn empty_of(block: &Value) -> Value {
    let mut empty = block.clone();
    match block["type"].as_str() {
        Some("tool_use") => empty["input"] = json!({}),
        Some("text") => empty["text"] = json!(""),
        Some("thinking") => {
            empty["thinking"] = json!("");
            empty["signature"] = json!("");
        }
        _ => {}
    }
    empty
}

/// [`responder`] as the API answers in Claude Code's auto mode, its classifier on the server:
/// a request asking for it (`safeguards: [{"type": "dangerous_tool_use", …}]`) and answered
/// with tool calls gets, in its closing `message_delta`, a `safeguard_results` that flags
/// each of those calls with `reason` (docs/dev/research/claude-auto-mode.md). Claude Code
/// 2.1.332 then refuses the call and fires `PermissionDenied` with `reason`.
pub fn responder_flagging(
    script: Vec<Step>,
    reason: &'static str,
) -> impl Fn(&Request) -> Reply + Send + Sync {
    let respond = responder(script);
    move |req| {
        let reply = respond(req);
        let asked = req.body["safeguards"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["type"] == "dangerous_tool_use"));
        if asked {
            flag_tool_calls(reply, reason)
        } else {
            reply
        }
    }
}

/// `reply` (a stream) with every tool call it holds flagged in its `message_delta`.
fn flag_tool_calls(reply: Reply, reason: &str) -> Reply {
    match reply {
        Reply::WithHeaders(headers, inner) => {
            Reply::WithHeaders(headers, Box::new(flag_tool_calls(*inner, reason)))
        }
        Reply::Sse(mut events) => {
            let verdicts: serde_json::Map<String, Value> = events
                .iter()
                .map(|(_, e)| &e["content_block"])
                .filter(|block| block["type"] == "tool_use")
                .filter_map(|block| block["id"].as_str())
                .map(|id| {
                    let verdict = json!({"type": "evaluated", "outcome": "flagged",
                                          "explanation": reason});
                    (id.to_string(), verdict)
                })
                .collect();
            if verdicts.is_empty() {
                return Reply::Sse(events);
            }
            for (_, event) in events.iter_mut() {
                if event["type"] == "message_delta" {
                    event["delta"]["safeguard_results"] = json!([{"type": "dangerous_tool_use",
                        "status": {"type": "available", "tool_uses": verdicts}}]);
                }
            }
            Reply::Sse(events)
        }
        reply => reply,
    }
}
