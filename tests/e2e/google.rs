//! The Gemini API as Gemini CLI calls it (`POST /v1beta/models/MODEL:streamGenerateContent`,
//! server-sent events), answering from a script: the n-th reply of the agent loop is the
//! script's n-th step.

use serde_json::{json, Value};

use crate::mock::{Reply, Request};

/// One reply of the scripted model.
#[derive(Clone)]
pub enum Step {
    /// Ask for one function (tool) call.
    Tool(&'static str, Value),
    /// Answer with text and end the turn.
    Text(&'static str),
    /// Never answer (the turn is interrupted while it waits).
    Stall,
}

/// The model that the mock serves and the agent is started with.
pub const MODEL: &str = "gemini-2.5-flash";

/// A responder for [`crate::mock::MockServer::start`] playing `script`.
///
/// The agent loop's requests carry `tools`; the step is the number of `functionResponse` parts
/// in the conversation so far. Other requests (token counts, side questions) get a short text.
pub fn responder(script: Vec<Step>) -> impl Fn(&Request) -> Reply + Send + Sync {
    responder_streaming(script, false)
}

/// [`responder`], or with `usage` the reply to step `n` counted as [`Usage::of_step`] says
/// (cached and thinking tokens included), streamed in two chunks: the first with a partial
/// count and no part, the last with the reply and the final count (the one to count).
///
/// Without `usage` the reply is one chunk with a small count and no thinking, as before: with
/// the richer count (cached and thinking tokens, a `responseId`), even in one chunk, Gemini CLI
/// 0.61 puts `" \n"` per model call before the answer in AfterAgent's `prompt_response`,
/// which the tests of the response do not expect.
pub fn responder_streaming(
    script: Vec<Step>,
    usage: bool,
) -> impl Fn(&Request) -> Reply + Send + Sync {
    move |req| {
        if req.path.contains(":countTokens") {
            return Reply::Json(json!({"totalTokens": 10}));
        }
        if req.method != "POST" || !req.path.contains("/models/") {
            return Reply::Status(404);
        }
        let (n, step) = if req.body.get("tools").is_some() {
            let n = function_responses(&req.body).min(script.len() - 1);
            (n, script[n].clone())
        } else {
            (SIDE, Step::Text("ok"))
        };
        let part = match step {
            Step::Stall => return Reply::Stall,
            Step::Tool(name, args) => json!({"functionCall": {"name": name, "args": args}}),
            Step::Text(text) => json!({"text": text}),
        };
        if !usage {
            let chunk = json!({
                "candidates": [{"content": {"role": "model", "parts": [part]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                                  "totalTokenCount": 15},
                "modelVersion": MODEL
            });
            return if req.path.contains(":streamGenerateContent") {
                Reply::Sse(vec![(None, chunk)])
            } else {
                Reply::Json(chunk)
            };
        }
        let counts = Usage::of_step(n);
        let chunk = |parts: Vec<Value>, metadata: Value, last: bool| {
            let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
            if last {
                candidate["finishReason"] = json!("STOP");
            }
            json!({"candidates": [candidate], "usageMetadata": metadata, "modelVersion": MODEL,
                   "responseId": format!("mock-response-{n}")})
        };
        let last = chunk(vec![part], counts.metadata(), true);
        if req.path.contains(":streamGenerateContent") {
            Reply::Sse(vec![
                (None, chunk(vec![], counts.partial(), false)),
                (None, last),
            ])
        } else {
            Reply::Json(last)
        }
    }
}

/// The step number the mock gives requests outside the agent loop (no `tools`).
pub const SIDE: usize = 99;

/// The token counts the mock reports for the reply to step `n`: distinctive per step, so a
/// stored figure can only come from that reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub prompt: u64,
    pub cached: u64,
    pub candidates: u64,
    pub thoughts: u64,
}

impl Usage {
    pub fn of_step(n: usize) -> Usage {
        let n = n as u64;
        Usage {
            prompt: 10_007 + 1_000 * n,
            cached: 4_003 + 100 * n,
            candidates: 211 + 10 * n,
            thoughts: 53 + n,
        }
    }

    pub fn total(&self) -> u64 {
        self.prompt + self.candidates + self.thoughts
    }

    /// The final `usageMetadata` of the reply.
    pub fn metadata(&self) -> Value {
        json!({"promptTokenCount": self.prompt, "candidatesTokenCount": self.candidates,
               "cachedContentTokenCount": self.cached, "thoughtsTokenCount": self.thoughts,
               "totalTokenCount": self.total()})
    }

    /// What the first chunk of the stream says: the prompt, a little of the output.
    fn partial(&self) -> Value {
        json!({"promptTokenCount": self.prompt, "candidatesTokenCount": 1,
               "cachedContentTokenCount": self.cached, "totalTokenCount": self.prompt + 1})
    }
}

/// How many `functionResponse` parts the conversation in a request body holds.
pub fn function_responses(body: &Value) -> usize {
    let contents = body["contents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    contents
        .iter()
        .filter_map(|c| c["parts"].as_array())
        .flatten()
        .filter(|part| part.get("functionResponse").is_some())
        .count()
}
