//! What Claude Code's own telemetry says a session used, for `cmstore usage --check`: each
//! `claude_code.api_request` event is one request (its tokens and cost), and each point of
//! the `claude_code.token.usage` and `claude_code.cost.usage` metrics is either the change
//! since the previous point (delta temporality, Claude Code's default) or a running total
//! of its series (cumulative). Pure: the figures a stored row adds to `agent_totals`.

use serde_json::{Map, Value};

use super::decode::{LogRow, MetricRow};
use crate::store::agent_totals::{Figures, Merge, Source};

/// One row's share of a session's total.
#[derive(Debug, Clone, PartialEq)]
pub struct Share {
    /// The session (`session.id`).
    pub session: String,
    /// Who says so.
    pub source: Source,
    /// The model (`model`), `""` when the row names none.
    pub model: String,
    /// A cumulative metric's series (its start, ns); `""` otherwise.
    pub series: String,
    /// The figures.
    pub figures: Figures,
    /// Added, or the larger kept.
    pub merge: Merge,
    /// The row's time, epoch ms.
    pub ts: Option<i64>,
}

/// The share of a Claude Code `api_request` event; `None` for any other record.
pub fn of_log(row: &LogRow) -> Option<Share> {
    let claude = row.service_name.as_deref() == Some("claude-code");
    let name = row.event_name.as_deref()?;
    if !(name == "claude_code.api_request" || (claude && name == "api_request")) {
        return None;
    }
    let attrs = attributes(&row.attributes)?;
    let count = |key: &str| attrs.get(key).and_then(number).unwrap_or(0.0) as i64;
    Some(Share {
        session: row.session_id.clone()?,
        source: Source::ClaudeRequests,
        model: text(&attrs, "model"),
        series: String::new(),
        figures: Figures {
            requests: Some(1),
            input: count("input_tokens"),
            output: count("output_tokens"),
            cache_read: count("cache_read_tokens"),
            cache_write: count("cache_creation_tokens"),
            cost_usd: attrs.get("cost_usd").and_then(number),
        },
        merge: Merge::Add,
        ts: row.ts,
    })
}

/// The share of a point of Claude Code's token or cost metric; `None` for any other point.
pub fn of_metric(row: &MetricRow) -> Option<Share> {
    let sum = row.sum?;
    let value = row.value?;
    let attrs = attributes(&row.attributes)?;
    let mut figures = Figures::default();
    match row.name.as_str() {
        "claude_code.cost.usage" => figures.cost_usd = Some(value),
        "claude_code.token.usage" => {
            let slot = match attrs.get("type").and_then(Value::as_str)? {
                "input" => &mut figures.input,
                "output" => &mut figures.output,
                "cacheRead" => &mut figures.cache_read,
                "cacheCreation" => &mut figures.cache_write,
                _ => return None,
            };
            *slot = value as i64;
        }
        _ => return None,
    }
    let (merge, series) = match sum.cumulative {
        // A series is its start and its attributes: two that started together (or name no
        // start) are summed, not taken for one.
        true => (
            Merge::Raise,
            format!("{}:{}", sum.start_nanos, digest(&row.attributes)),
        ),
        false => (Merge::Add, String::new()),
    };
    Some(Share {
        session: row.session_id.clone()?,
        source: Source::ClaudeMetrics,
        model: text(&attrs, "model"),
        series,
        figures,
        merge,
        ts: row.ts,
    })
}

/// A short, stable digest of a point's attributes (SHA-256's first 8 bytes, in hex).
fn digest(attributes: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(attributes.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn attributes(json: &str) -> Option<Map<String, Value>> {
    serde_json::from_str(json).ok()
}

/// A number, or a number written as text (Claude Code sends its counts as strings).
fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn text(attrs: &Map<String, Value>, key: &str) -> String {
    attrs
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::super::decode::{decode, Format, Signal};
    use super::*;

    fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/fixtures/otlp/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(path).unwrap()
    }

    #[test]
    fn an_api_request_event_is_one_request_of_its_model() {
        let decoded = decode(
            Signal::Logs,
            Format::Json,
            &fixture("claude_code_logs.json"),
        )
        .unwrap();
        let shares: Vec<Share> = decoded.logs.iter().filter_map(of_log).collect();
        assert_eq!(shares.len(), 1, "{shares:?}");
        let s = &shares[0];
        assert_eq!(
            (s.session.as_str(), s.model.as_str(), s.merge),
            ("fixture-session", "claude-sonnet-4-5-20250929", Merge::Add)
        );
        assert_eq!(
            s.figures,
            Figures {
                requests: Some(1),
                input: 12,
                output: 345,
                cache_read: 20000,
                cache_write: 1500,
                cost_usd: Some(0.0123),
            }
        );
    }

    #[test]
    fn delta_token_and_cost_points_add_to_their_columns() {
        let decoded = decode(
            Signal::Metrics,
            Format::Json,
            &fixture("claude_code_metrics.json"),
        )
        .unwrap();
        let shares: Vec<Share> = decoded.metrics.iter().filter_map(of_metric).collect();
        let sum = |f: fn(&Figures) -> i64| shares.iter().map(|s| f(&s.figures)).sum::<i64>();
        assert_eq!((sum(|f| f.input), sum(|f| f.output)), (12, 345));
        let cost: f64 = shares.iter().filter_map(|s| s.figures.cost_usd).sum();
        assert_eq!(cost, 0.0123);
        assert!(shares
            .iter()
            .all(|s| s.merge == Merge::Add && s.series.is_empty()));
        // The session counter and others are not usage.
        assert!(decoded.metrics.len() > shares.len());
    }

    #[test]
    fn a_cumulative_point_raises_its_series() {
        let body =
            br#"{"resourceMetrics":[{"resource":{"attributes":[]},"scopeMetrics":[{"metrics":[
          {"name":"claude_code.token.usage","sum":{"aggregationTemporality":2,"isMonotonic":true,
           "dataPoints":[{"attributes":[{"key":"session.id","value":{"stringValue":"s"}},
             {"key":"type","value":{"stringValue":"output"}},
             {"key":"model","value":{"stringValue":"m"}}],
             "startTimeUnixNano":"1000","timeUnixNano":"2000000","asInt":"40"}]}}]}]}]}"#;
        let decoded = decode(Signal::Metrics, Format::Json, body).unwrap();
        let share = of_metric(&decoded.metrics[0]).unwrap();
        assert_eq!((share.merge, share.figures.output), (Merge::Raise, 40));
        assert!(share.series.starts_with("1000:"), "{}", share.series);
    }
}
