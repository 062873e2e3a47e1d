//! The usage of API responses, read from Copilot CLI event logs (pure).
//!
//! Copilot CLI 1.0.102 writes one `session.usage_record` line per API response to
//! `~/.copilot/session-state/<session>/events.jsonl`: `data.usage` holds the response's
//! `inputTokens`, `outputTokens`, `cacheReadTokens`, `cacheWriteTokens` and `reasoningTokens`,
//! its `model` and `apiCallId` (the API's response id), and `accounting.sourceSessionId`.
//! Checked end to end against a mock Responses API whose counts the test chooses (tests/e2e):
//! `inputTokens` is the API's `input_tokens`, which includes the cached tokens, and
//! `outputTokens` its `output_tokens`, which includes the reasoning. They are stored the
//! Anthropic way, as for the other agents: `input_tokens = inputTokens - cacheReadTokens -
//! cacheWriteTokens`, `cache_read_tokens = cacheReadTokens`, `cache_write_tokens =
//! cacheWriteTokens`, `output_tokens = outputTokens`. See docs/usage.md.
//!
//! The key is the response id with the line's own `id`: a re-read of the line finds the same
//! key, and two sessions (or a resumed run against a provider that reuses ids) never share one.

use std::borrow::Cow;

use serde::Deserialize;

use crate::model::queue_line::usage::UsageRecord;

/// The line type that carries a response's usage.
pub(super) const USAGE_RECORD: &[u8] = b"\"session.usage_record\"";

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    data: Option<Data<'a>>,
}

#[derive(Deserialize)]
struct Data<'a> {
    #[serde(borrow)]
    usage: Option<Usage<'a>>,
}

/// `data.usage` of a `session.usage_record` line, as Copilot CLI spells it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Usage<'a> {
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_tokens: Option<u64>,
    cache_write_tokens: Option<u64>,
    reasoning_tokens: Option<u64>,
    #[serde(borrow)]
    api_call_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    accounting: Option<Accounting<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Accounting<'a> {
    #[serde(borrow)]
    source_session_id: Option<Cow<'a, str>>,
}

/// The usage one event-log line (newline excluded) at byte `offset` reports, if any: a
/// `session.usage_record` with the response's id and counts. The caller has checked that the
/// line mentions [`USAGE_RECORD`].
pub(super) fn from_line(bytes: &[u8], offset: u64) -> Option<UsageRecord> {
    let line: Line<'_> = serde_json::from_slice(bytes.trim_ascii()).ok()?;
    if line.kind.as_deref() != Some("session.usage_record") {
        return None;
    }
    let usage = line.data?.usage?;
    let input = usage.input_tokens.unwrap_or(0);
    let output = usage.output_tokens.unwrap_or(0);
    if input == 0 && output == 0 {
        return None;
    }
    let cache_read = usage.cache_read_tokens.unwrap_or(0).min(input);
    let cache_write = usage
        .cache_write_tokens
        .unwrap_or(0)
        .min(input - cache_read);
    let nonempty = |v: Option<Cow<'_, str>>| v.filter(|v| !v.is_empty()).map(Cow::into_owned);
    Some(UsageRecord {
        message_id: nonempty(usage.api_call_id)?,
        request_id: nonempty(line.id),
        model: nonempty(usage.model),
        input: input - cache_read - cache_write,
        output,
        reasoning: usage.reasoning_tokens.map(|r| r.min(output)),
        cache_write,
        cache_read,
        ts: line
            .timestamp
            .as_deref()
            .and_then(crate::support::clock::rfc3339_ms),
        session_id: nonempty(usage.accounting.and_then(|a| a.source_session_id)),
        offset,
        ..UsageRecord::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line of a Copilot CLI 1.0.102 run against the e2e mock (which reported input 1210
    /// with 1001 cached, output 31 with 7 reasoning), its other fields shortened.
    const LINE: &str = r#"{"type":"session.usage_record","data":{"usage":{"model":"gpt-5.4","modelDisplayName":"gpt-5.4","inputTokens":1210,"outputTokens":31,"cacheReadTokens":1001,"cacheWriteTokens":0,"reasoningTokens":7,"cost":0.0,"duration":3,"initiator":"agent","isByok":true,"apiCallId":"resp_1","apiEndpoint":"/responses","accounting":{"sourceSessionId":"53bd3dd4","sequence":2,"usageId":"resp_1"},"finishReason":"tool_calls"}},"id":"f1366784-fbaf","timestamp":"2026-12-02T08:04:04.194Z","parentId":"0e7abe80"}"#;

    #[test]
    fn a_usage_record_is_one_response_stored_the_anthropic_way() {
        let got = from_line(LINE.as_bytes(), 9).unwrap();
        assert_eq!(
            got,
            UsageRecord {
                message_id: "resp_1".into(),
                request_id: Some("f1366784-fbaf".into()),
                model: Some("gpt-5.4".into()),
                input: 209,
                output: 31,
                reasoning: Some(7),
                cache_read: 1001,
                ts: Some(crate::support::clock::rfc3339_ms("2026-12-02T08:04:04.194Z").unwrap()),
                session_id: Some("53bd3dd4".into()),
                offset: 9,
                ..UsageRecord::default()
            }
        );
        // The three columns sum to the API's total (input + output).
        assert_eq!(got.input + got.cache_read + got.output, 1210 + 31);
    }

    #[test]
    fn cache_writes_come_out_of_the_input_and_nothing_is_invented() {
        let line = LINE.replace(r#""cacheWriteTokens":0"#, r#""cacheWriteTokens":100"#);
        let got = from_line(line.as_bytes(), 0).unwrap();
        assert_eq!(
            (got.input, got.cache_write, got.cache_read),
            (109, 100, 1001)
        );
        let other = LINE.replace("session.usage_record", "session.usage_checkpoint");
        assert_eq!(from_line(other.as_bytes(), 0), None);
        let no_id = LINE.replace(r#""apiCallId":"resp_1","#, "");
        assert_eq!(from_line(no_id.as_bytes(), 0), None);
        let zero = LINE
            .replace(r#""inputTokens":1210"#, r#""inputTokens":0"#)
            .replace(r#""outputTokens":31"#, r#""outputTokens":0"#);
        assert_eq!(from_line(zero.as_bytes(), 0), None);
        assert_eq!(from_line(b"{not json", 0), None);
    }
}
