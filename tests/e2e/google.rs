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
    move |req| {
        if req.path.contains(":countTokens") {
            return Reply::Json(json!({"totalTokens": 10}));
        }
        if req.method != "POST" || !req.path.contains("/models/") {
            return Reply::Status(404);
        }
        let step = if req.body.get("tools").is_some() {
            script[function_responses(&req.body).min(script.len() - 1)].clone()
        } else {
            Step::Text("ok")
        };
        let part = match step {
            Step::Stall => return Reply::Stall,
            Step::Tool(name, args) => json!({"functionCall": {"name": name, "args": args}}),
            Step::Text(text) => json!({"text": text}),
        };
        let chunk = json!({
            "candidates": [{"content": {"role": "model", "parts": [part]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                              "totalTokenCount": 15},
            "modelVersion": MODEL
        });
        if req.path.contains(":streamGenerateContent") {
            Reply::Sse(vec![(None, chunk)])
        } else {
            Reply::Json(chunk)
        }
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
