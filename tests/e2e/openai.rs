//! The OpenAI Responses API as Codex and Copilot CLI (BYOK) call it (`POST /v1/responses`,
//! server-sent events), answering from a script: the n-th reply of the agent loop is the
//! script's n-th step.

use serde_json::{json, Value};

use crate::mock::{Reply, Request};

/// One reply of the scripted model.
#[derive(Clone)]
pub enum Step {
    /// Ask for one function (tool) call: its name and its arguments.
    Tool(&'static str, Value),
    /// Answer with text and end the turn.
    Text(&'static str),
    /// Never answer (the turn is interrupted while it waits).
    Stall,
}

/// A responder for [`crate::mock::MockServer::start`] playing `script`.
///
/// The agent loop's requests carry `tools`; the step is the number of `function_call_output`
/// items in the conversation so far, so a retried request gets the same answer. Other requests
/// (titles, summaries) get a short text.
pub fn responder(script: Vec<Step>) -> impl Fn(&Request) -> Reply + Send + Sync {
    responder_counting(script, |_| Usage::SMALL)
}

/// [`responder`], the reply to step `n` (or [`SIDE`] outside the agent loop) reporting
/// `usage(n)` in its `response.completed`.
pub fn responder_counting(
    script: Vec<Step>,
    usage: fn(usize) -> Usage,
) -> impl Fn(&Request) -> Reply + Send + Sync {
    scripted(script, usage, Some(SIDE))
}

/// [`responder`], each response reporting `usage(n)` for step `n`, requests outside the agent
/// loop included (their `n` is the conversation's count of tool outputs, as for the others).
pub fn responder_with_usage(
    script: Vec<Step>,
    usage: impl Fn(usize) -> Usage + Send + Sync,
) -> impl Fn(&Request) -> Reply + Send + Sync {
    scripted(script, usage, None)
}

/// The responder of `script`; requests outside the agent loop report `usage(side)`, or
/// `usage(n)` without a `side`.
fn scripted(
    script: Vec<Step>,
    usage: impl Fn(usize) -> Usage + Send + Sync,
    side: Option<usize>,
) -> impl Fn(&Request) -> Reply + Send + Sync {
    move |req| {
        if req.method != "POST" || !req.path.starts_with("/v1/responses") {
            return Reply::Status(404);
        }
        let n = function_outputs(&req.body);
        let (step, counted) = if req.body.get("tools").is_some() {
            (script[n.min(script.len() - 1)].clone(), n)
        } else {
            (Step::Text("ok"), side.unwrap_or(n))
        };
        let item = match step {
            Step::Stall => return Reply::Stall,
            Step::Tool(name, args) => json!({
                "type": "function_call", "id": format!("fc_{n}"), "call_id": call_id(n),
                "name": name, "arguments": args.to_string(), "status": "completed"
            }),
            Step::Text(text) => json!({
                "type": "message", "id": format!("msg_{n}"), "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}]
            }),
        };
        Reply::Sse(stream(&req.body, n, item, usage(counted)))
    }
}

/// The step number [`responder_counting`] gives requests outside the agent loop (no `tools`).
pub const SIDE: usize = 99;

/// The token counts a reply reports (the Responses API's `usage`): `input` includes
/// `cached`, `output` includes `reasoning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub input: u64,
    pub cached: u64,
    pub output: u64,
    pub reasoning: u64,
}

impl Usage {
    /// What [`responder`] reports for every reply.
    pub const SMALL: Usage = Usage {
        input: 10,
        cached: 0,
        output: 5,
        reasoning: 0,
    };

    /// Distinctive counts per step, so a stored figure can only come from that reply.
    pub fn of_step(n: usize) -> Usage {
        let n = n as u64;
        Usage {
            input: 12_007 + 1_000 * n,
            cached: 8_003 + 100 * n,
            output: 311 + 10 * n,
            reasoning: 67 + n,
        }
    }

    pub fn total(&self) -> u64 {
        self.input + self.output
    }

    fn json(&self) -> Value {
        json!({"input_tokens": self.input,
               "input_tokens_details": {"cached_tokens": self.cached},
               "output_tokens": self.output,
               "output_tokens_details": {"reasoning_tokens": self.reasoning},
               "total_tokens": self.total()})
    }
}

/// The call id the mock gives the `n`-th tool call (counting from 0).
pub fn call_id(n: usize) -> String {
    format!("call_mock_{n}")
}

/// The events of one streamed response holding `item`: Codex reads `output_item.done`,
/// Copilot CLI the `output` of `response.completed`; both get both.
fn stream(body: &Value, n: usize, item: Value, usage: Usage) -> Vec<(Option<&'static str>, Value)> {
    let id = format!("resp_{n}");
    let model = body["model"].clone();
    let mut events = vec![
        (
            Some("response.created"),
            json!({"type": "response.created", "response": {"id": id, "object": "response",
                   "status": "in_progress", "model": model, "output": []}}),
        ),
        (
            Some("response.output_item.added"),
            json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        ),
    ];
    if let Some(text) = item["content"][0]["text"].as_str() {
        events.push((
            Some("response.output_text.delta"),
            json!({"type": "response.output_text.delta", "output_index": 0,
                   "content_index": 0, "item_id": item["id"], "delta": text}),
        ));
    }
    events.push((
        Some("response.output_item.done"),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    ));
    events.push((
        Some("response.completed"),
        json!({"type": "response.completed", "response": {
            "id": id, "object": "response", "status": "completed", "model": model,
            "output": [item], "usage": usage.json()}}),
    ));
    events
}

/// How many `function_call_output` items the conversation in a request body holds.
pub fn function_outputs(body: &Value) -> usize {
    body["input"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
        .iter()
        .filter(|item| item["type"] == "function_call_output")
        .count()
}

/// The output the agent sent the model for the call `id`, if it has.
pub fn output_of(body: &Value, id: &str) -> Option<String> {
    body["input"]
        .as_array()?
        .iter()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == id)
        .map(|item| match &item["output"] {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
}
