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
//!
//! Earlier versions (the real event logs of 2026-03 to 2026-06) write no per-response line:
//! their only usage is the `session.shutdown` line's per-model totals (`data.modelMetrics`;
//! `data.accountingSnapshot.modelMetrics` in 1.0.102), with the requests and the premium
//! requests they cost (`requests.cost`; a response's own is its `usage.cost`). [`totals_from_shutdown`] makes one record per model of those, keyed
//! by the model and the session's start time (the same on every shutdown of a resumed
//! session), named by [`SESSION_TOTAL`]: the store keeps them only for a session without a
//! per-response record (docs/usage.md).

use std::borrow::Cow;

use serde::Deserialize;

use crate::model::queue_line::usage::UsageRecord;

/// The line type that carries a response's usage.
pub(super) const USAGE_RECORD: &[u8] = b"\"session.usage_record\"";

/// The line type that carries a session's totals per model.
pub(super) const SHUTDOWN: &[u8] = b"\"session.shutdown\"";

pub use crate::model::queue_line::usage::SESSION_TOTAL;

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
    /// The premium requests the response cost.
    cost: Option<f64>,
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
        premium_requests: usage.cost.filter(|c| c.is_finite() && *c >= 0.0),
        ts: line
            .timestamp
            .as_deref()
            .and_then(crate::support::clock::rfc3339_ms),
        session_id: nonempty(usage.accounting.and_then(|a| a.source_session_id)),
        offset,
        ..UsageRecord::default()
    })
}

/// The usage a `session.shutdown` line (parsed into `value`, at byte `offset`) reports: one
/// record per model of its `modelMetrics` with any input or output, its counts stored the
/// Anthropic way as a response's are, keyed `copilot-total:<model>` with the session's start
/// time as request id. Empty for any other line.
pub fn totals_from_shutdown(value: &serde_json::Value, offset: u64) -> Vec<UsageRecord> {
    if value["type"] != "session.shutdown" {
        return Vec::new();
    }
    let data = &value["data"];
    let snapshot = &data["accountingSnapshot"];
    let metrics = data["modelMetrics"]
        .as_object()
        .or_else(|| snapshot["modelMetrics"].as_object());
    let start = [&data["sessionStartTime"], &snapshot["sessionStartTime"]]
        .into_iter()
        .find_map(|t| match t {
            serde_json::Value::Number(n) => Some(n.to_string()),
            serde_json::Value::String(s) => {
                crate::support::clock::rfc3339_ms(s).map(|ms| ms.to_string())
            }
            _ => None,
        });
    let ts = value["timestamp"]
        .as_str()
        .and_then(crate::support::clock::rfc3339_ms);
    let Some(metrics) = metrics else {
        return Vec::new();
    };
    metrics
        .iter()
        .filter_map(|(model, m)| {
            let n = |k: &str| m["usage"][k].as_u64().unwrap_or(0);
            let (input, output) = (n("inputTokens"), n("outputTokens"));
            if (input == 0 && output == 0) || model.is_empty() {
                return None;
            }
            let cache_read = n("cacheReadTokens").min(input);
            let cache_write = n("cacheWriteTokens").min(input - cache_read);
            Some(UsageRecord {
                message_id: format!("{SESSION_TOTAL}{model}"),
                request_id: start.clone(),
                model: Some(model.clone()),
                input: input - cache_read - cache_write,
                output,
                reasoning: m["usage"]["reasoningTokens"]
                    .as_u64()
                    .map(|r| r.min(output)),
                cache_write,
                cache_read,
                premium_requests: m["requests"]["cost"].as_f64().filter(|c| *c >= 0.0),
                ts,
                offset,
                ..UsageRecord::default()
            })
        })
        .collect()
}

/// Where a session's counted responses and its own totals disagree, model by model: `model:
/// counted <sums>, the agent says <sums>` per model, the sums `input/output/cache read/cache
/// write` as stored. Empty when they agree (or there is nothing to compare: no response or
/// no total). A total without a model (a session's, over every model) is compared with the
/// sums over every model.
pub fn totals_differ(responses: &[UsageRecord], totals: &[UsageRecord]) -> Vec<String> {
    use std::collections::BTreeMap;
    if responses.is_empty() || totals.is_empty() {
        return Vec::new();
    }
    let sums = |records: &[UsageRecord]| {
        let mut by_model: BTreeMap<String, [u64; 4]> = BTreeMap::new();
        for r in records {
            let s = by_model
                .entry(r.model.clone().unwrap_or_default())
                .or_default();
            for (slot, n) in s
                .iter_mut()
                .zip([r.input, r.output, r.cache_read, r.cache_write])
            {
                *slot += n;
            }
        }
        by_model
    };
    let whole = totals.iter().all(|t| t.model.is_none());
    let unnamed: Vec<UsageRecord>;
    let responses = match whole {
        true => {
            unnamed = responses
                .iter()
                .map(|r| UsageRecord {
                    model: None,
                    ..r.clone()
                })
                .collect();
            &unnamed[..]
        }
        false => responses,
    };
    let (counted, reported) = (sums(responses), sums(totals));
    let models: std::collections::BTreeSet<&String> =
        counted.keys().chain(reported.keys()).collect();
    let show = |s: Option<&[u64; 4]>| {
        let [i, o, r, w] = s.copied().unwrap_or_default();
        format!("{i}/{o}/{r}/{w}")
    };
    models
        .into_iter()
        .filter(|m| counted.get(*m) != reported.get(*m))
        .map(|m| {
            format!(
                "{}: counted {}, the agent says {} (input/output/cache read/cache write)",
                if m.is_empty() {
                    "every model"
                } else {
                    m.as_str()
                },
                show(counted.get(m)),
                show(reported.get(m))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_agreeing_with_its_totals_shows_nothing_and_one_that_does_not_says_where() {
        let record = |id: &str, model: &str, output: u64| UsageRecord {
            message_id: id.into(),
            model: Some(model.into()),
            input: 10,
            output,
            ..UsageRecord::default()
        };
        let responses = [record("r1", "gpt-5.4", 5), record("r2", "gpt-5.4", 7)];
        let total = [record("copilot-total:gpt-5.4", "gpt-5.4", 0)];
        let agreeing = UsageRecord {
            input: 20,
            output: 12,
            ..total[0].clone()
        };
        assert_eq!(totals_differ(&responses, &[agreeing]), Vec::<String>::new());
        assert_eq!(
            totals_differ(&responses, &total),
            ["gpt-5.4: counted 20/12/0/0, the agent says 10/0/0/0 (input/output/cache read/cache write)"]
        );
        assert_eq!(
            totals_differ(&[], &total),
            Vec::<String>::new(),
            "nothing to compare"
        );
    }

    #[test]
    fn a_shutdown_gives_its_sessions_totals_per_model() {
        // Copilot CLI of 2026-06 (a real line, its file list shortened).
        let line = r#"{"type":"session.shutdown","data":{"shutdownType":"routine","totalPremiumRequests":1,"totalNanoAiu":33616230000,"totalApiDurationMs":3406,"sessionStartTime":1780883337913,"modelMetrics":{"claude-sonnet-4.6":{"requests":{"count":13,"cost":1},"usage":{"inputTokens":441514,"outputTokens":4199,"cacheReadTokens":400526,"cacheWriteTokens":40074,"reasoningTokens":499}}},"currentModel":"claude-sonnet-4.6"},"id":"bee7d796","timestamp":"2026-06-08T01:58:22.764Z"}"#;
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let got = totals_from_shutdown(&value, 7);
        assert_eq!(got.len(), 1);
        let r = &got[0];
        assert_eq!(r.message_id, "copilot-total:claude-sonnet-4.6");
        assert_eq!(r.request_id.as_deref(), Some("1780883337913"));
        // 914 uncached input, as the line's own `tokenDetails` says.
        assert_eq!(
            (r.input, r.cache_read, r.cache_write, r.output),
            (914, 400_526, 40_074, 4199)
        );
        assert_eq!((r.reasoning, r.offset), (Some(499), 7));
        assert_eq!(r.premium_requests, Some(1.0), "requests.cost");
        // 1.0.102 puts them under `accountingSnapshot`, its start time as text.
        let snapshot = r#"{"type":"session.shutdown","data":{"accountingSnapshot":{"sessionStartTime":"2026-12-02T08:09:05.333Z","modelMetrics":{"gpt-5.4":{"requests":{"count":4,"cost":0.0},"usage":{"inputTokens":4860,"outputTokens":126,"cacheReadTokens":4006,"cacheWriteTokens":0,"reasoningTokens":28}}}}},"id":"x"}"#;
        let value: serde_json::Value = serde_json::from_str(snapshot).unwrap();
        let got = totals_from_shutdown(&value, 0);
        assert_eq!((got[0].input, got[0].output), (854, 126));
        let start = crate::support::clock::rfc3339_ms("2026-12-02T08:09:05.333Z").unwrap();
        assert_eq!(got[0].request_id, Some(start.to_string()));
        // An empty session's shutdown, and other lines, give none.
        for other in [
            r#"{"type":"session.shutdown","data":{"modelMetrics":{},"sessionStartTime":1}}"#,
            r#"{"type":"session.start","data":{"modelMetrics":{"m":{"usage":{"inputTokens":5}}}}}"#,
        ] {
            let value: serde_json::Value = serde_json::from_str(other).unwrap();
            assert_eq!(totals_from_shutdown(&value, 0), vec![], "{other}");
        }
    }

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
                premium_requests: Some(0.0),
                offset: 9,
                ..UsageRecord::default()
            }
        );
        // A premium model's multiplier (0.33 for a light one), and none when not said.
        let light = LINE.replace(r#""cost":0.0"#, r#""cost":0.33"#);
        assert_eq!(
            from_line(light.as_bytes(), 0).unwrap().premium_requests,
            Some(0.33)
        );
        let unsaid = LINE.replace(r#""cost":0.0,"#, "");
        assert_eq!(
            from_line(unsaid.as_bytes(), 0).unwrap().premium_requests,
            None
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
