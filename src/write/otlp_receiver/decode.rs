//! OTLP/HTTP logs and metrics bodies (protobuf or JSON, gzip or not) as the rows the store
//! keeps. Pure: no I/O.
//!
//! A record's key is a hash of its resource, scope and the record itself, each in its
//! protobuf encoding, so the same record sent as protobuf or JSON, or sent again by an SDK's
//! retry, is the same row. OTLP gives records no id of their own: two records identical in
//! every field and timestamp are one row here.

use std::io::Read;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as Number;
use opentelemetry_proto::tonic::metrics::v1::AggregationTemporality;
use prost::Message;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Which signal a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Logs,
    Metrics,
}

impl Signal {
    /// The signal of an OTLP/HTTP path (`/v1/logs`, `/v1/metrics`), query string ignored.
    pub fn of_path(path: &str) -> Option<Signal> {
        match path.split('?').next()? {
            "/v1/logs" => Some(Signal::Logs),
            "/v1/metrics" => Some(Signal::Metrics),
            _ => None,
        }
    }
}

/// How the body is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Protobuf,
    Json,
}

impl Format {
    /// The format of a `Content-Type` (parameters ignored).
    pub fn of_content_type(content_type: &str) -> Option<Format> {
        let media = content_type.split(';').next()?.trim().to_ascii_lowercase();
        match media.as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Format::Protobuf),
            "application/json" => Some(Format::Json),
            _ => None,
        }
    }
}

/// One log record as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct LogRow {
    pub key: String,
    pub ts: Option<i64>,
    pub event_name: Option<String>,
    pub session_id: Option<String>,
    pub prompt_id: Option<String>,
    pub service_name: Option<String>,
    pub severity: Option<String>,
    pub body: Option<String>,
    pub attributes: String,
    pub resource: String,
}

/// One metric data point as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    pub key: String,
    pub ts: Option<i64>,
    pub name: String,
    pub unit: Option<String>,
    pub kind: &'static str,
    pub value: Option<f64>,
    pub count: Option<i64>,
    pub session_id: Option<String>,
    pub service_name: Option<String>,
    pub attributes: String,
    pub resource: String,
    /// A sum's point: whether it is a running total (cumulative temporality) rather than the
    /// change since the previous point (delta), and when its series started. Not stored in
    /// `otel_metrics` (whose columns the chain covers); read for the agents' totals.
    pub sum: Option<SumPoint>,
}

/// What a sum's point adds to: see [`MetricRow::sum`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SumPoint {
    /// Cumulative temporality: the point is its series' running total.
    pub cumulative: bool,
    /// The series' start, epoch ns (0: not given).
    pub start_nanos: u64,
}

/// What a body held.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decoded {
    pub logs: Vec<LogRow>,
    pub metrics: Vec<MetricRow>,
}

/// Why a body could not be read (the answer is a 400).
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not gzip: {0}")]
    Gzip(std::io::Error),
    #[error("not an OTLP protobuf message: {0}")]
    Protobuf(#[from] prost::DecodeError),
    #[error("not OTLP JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Unpacks a gzip body (`Content-Encoding: gzip`), at most `limit` bytes of it; `Ok(None)`
/// when it unpacks to more.
pub fn gunzip(body: &[u8], limit: usize) -> Result<Option<Vec<u8>>, DecodeError> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(DecodeError::Gzip)?;
    Ok((out.len() <= limit).then_some(out))
}

/// The rows of one request body.
pub fn decode(signal: Signal, format: Format, body: &[u8]) -> Result<Decoded, DecodeError> {
    match signal {
        Signal::Logs => {
            let request: ExportLogsServiceRequest = match format {
                Format::Protobuf => ExportLogsServiceRequest::decode(body)?,
                Format::Json => serde_json::from_slice(body)?,
            };
            Ok(Decoded {
                logs: log_rows(&request),
                ..Decoded::default()
            })
        }
        Signal::Metrics => {
            let request: ExportMetricsServiceRequest = match format {
                Format::Protobuf => ExportMetricsServiceRequest::decode(body)?,
                Format::Json => serde_json::from_slice(body)?,
            };
            Ok(Decoded {
                metrics: metric_rows(&request),
                ..Decoded::default()
            })
        }
    }
}

/// The body a successful request is answered with (an empty export response, which encodes
/// to nothing in protobuf).
pub fn success_body(format: Format) -> &'static [u8] {
    match format {
        Format::Protobuf => b"",
        Format::Json => b"{}",
    }
}

fn log_rows(request: &ExportLogsServiceRequest) -> Vec<LogRow> {
    let mut rows = Vec::new();
    for rl in &request.resource_logs {
        let resource_attrs = rl
            .resource
            .as_ref()
            .map(|r| &r.attributes[..])
            .unwrap_or(&[]);
        let resource_key = rl
            .resource
            .as_ref()
            .map(Message::encode_to_vec)
            .unwrap_or_default();
        let resource = attributes_json(resource_attrs);
        let service_name = string_attr(resource_attrs, "service.name");
        for sl in &rl.scope_logs {
            let scope_key = sl
                .scope
                .as_ref()
                .map(Message::encode_to_vec)
                .unwrap_or_default();
            for record in &sl.log_records {
                let attrs = &record.attributes[..];
                let nanos = match record.time_unix_nano {
                    0 => record.observed_time_unix_nano,
                    t => t,
                };
                rows.push(LogRow {
                    key: key(&[&resource_key, &scope_key, &record.encode_to_vec()]),
                    ts: millis(nanos),
                    event_name: Some(record.event_name.clone())
                        .filter(|n| !n.is_empty())
                        .or_else(|| string_attr(attrs, "event.name")),
                    session_id: string_attr(attrs, "session.id")
                        .or_else(|| string_attr(resource_attrs, "session.id")),
                    prompt_id: string_attr(attrs, "prompt.id"),
                    service_name: service_name.clone(),
                    severity: Some(record.severity_text.clone()).filter(|s| !s.is_empty()),
                    body: record.body.as_ref().and_then(any_text),
                    attributes: attributes_json(attrs),
                    resource: resource.clone(),
                });
            }
        }
    }
    rows
}

fn metric_rows(request: &ExportMetricsServiceRequest) -> Vec<MetricRow> {
    let mut rows = Vec::new();
    for rm in &request.resource_metrics {
        let resource_attrs = rm
            .resource
            .as_ref()
            .map(|r| &r.attributes[..])
            .unwrap_or(&[]);
        let resource_key = rm
            .resource
            .as_ref()
            .map(Message::encode_to_vec)
            .unwrap_or_default();
        let resource = attributes_json(resource_attrs);
        let service_name = string_attr(resource_attrs, "service.name");
        for sm in &rm.scope_metrics {
            let scope_key = sm
                .scope
                .as_ref()
                .map(Message::encode_to_vec)
                .unwrap_or_default();
            for metric in &sm.metrics {
                // The metric without its points names it in each point's key.
                let mut bare = metric.clone();
                bare.data = None;
                let metric_key = bare.encode_to_vec();
                let mut push = |kind: &'static str,
                                attrs: &[KeyValue],
                                nanos: u64,
                                value: Option<f64>,
                                count: Option<u64>,
                                point: Vec<u8>,
                                sum: Option<SumPoint>| {
                    rows.push(MetricRow {
                        key: key(&[&resource_key, &scope_key, &metric_key, &point]),
                        ts: millis(nanos),
                        name: metric.name.clone(),
                        unit: Some(metric.unit.clone()).filter(|u| !u.is_empty()),
                        kind,
                        value,
                        count: count.and_then(|c| i64::try_from(c).ok()),
                        session_id: string_attr(attrs, "session.id")
                            .or_else(|| string_attr(resource_attrs, "session.id")),
                        service_name: service_name.clone(),
                        attributes: attributes_json(attrs),
                        resource: resource.clone(),
                        sum,
                    })
                };
                match &metric.data {
                    Some(Data::Gauge(g)) => {
                        for p in &g.data_points {
                            push(
                                "gauge",
                                &p.attributes,
                                p.time_unix_nano,
                                number(&p.value),
                                None,
                                p.encode_to_vec(),
                                None,
                            );
                        }
                    }
                    Some(Data::Sum(s)) => {
                        for p in &s.data_points {
                            let cumulative = s.aggregation_temporality
                                == AggregationTemporality::Cumulative as i32;
                            push(
                                "sum",
                                &p.attributes,
                                p.time_unix_nano,
                                number(&p.value),
                                None,
                                p.encode_to_vec(),
                                Some(SumPoint {
                                    cumulative,
                                    start_nanos: p.start_time_unix_nano,
                                }),
                            );
                        }
                    }
                    Some(Data::Histogram(h)) => {
                        for p in &h.data_points {
                            push(
                                "histogram",
                                &p.attributes,
                                p.time_unix_nano,
                                p.sum,
                                Some(p.count),
                                p.encode_to_vec(),
                                None,
                            );
                        }
                    }
                    Some(Data::ExponentialHistogram(h)) => {
                        for p in &h.data_points {
                            push(
                                "exponential_histogram",
                                &p.attributes,
                                p.time_unix_nano,
                                p.sum,
                                Some(p.count),
                                p.encode_to_vec(),
                                None,
                            );
                        }
                    }
                    Some(Data::Summary(s)) => {
                        for p in &s.data_points {
                            push(
                                "summary",
                                &p.attributes,
                                p.time_unix_nano,
                                Some(p.sum),
                                Some(p.count),
                                p.encode_to_vec(),
                                None,
                            );
                        }
                    }
                    None => {}
                }
            }
        }
    }
    rows
}

fn number(value: &Option<Number>) -> Option<f64> {
    match value {
        Some(Number::AsDouble(d)) => Some(*d),
        Some(Number::AsInt(i)) => Some(*i as f64),
        None => None,
    }
}

fn key(parts: &[&[u8]]) -> String {
    let mut h = Sha256::new();
    for part in parts {
        // Lengths first, so the parts cannot run into one another.
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let digest = h.finalize();
    let mut text = String::with_capacity(7 + 64);
    text.push_str("sha256:");
    for b in digest {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

fn millis(nanos: u64) -> Option<i64> {
    (nanos > 0).then(|| i64::try_from(nanos / 1_000_000).unwrap_or(i64::MAX))
}

fn string_attr(attrs: &[KeyValue], name: &str) -> Option<String> {
    attrs
        .iter()
        .find(|kv| kv.key == name)
        .and_then(|kv| kv.value.as_ref())
        .and_then(any_text)
}

/// A value as text: strings as they are, anything else as JSON.
fn any_text(value: &AnyValue) -> Option<String> {
    match value.value.as_ref()? {
        Any::StringValue(s) => Some(s.clone()),
        _ => Some(any_json(value).to_string()),
    }
}

fn attributes_json(attrs: &[KeyValue]) -> String {
    Value::Object(attributes_map(attrs)).to_string()
}

fn attributes_map(attrs: &[KeyValue]) -> Map<String, Value> {
    attrs
        .iter()
        .map(|kv| {
            let value = kv.value.as_ref().map(any_json).unwrap_or(Value::Null);
            (kv.key.clone(), value)
        })
        .collect()
}

fn any_json(value: &AnyValue) -> Value {
    match &value.value {
        None => Value::Null,
        Some(Any::StringValue(s)) => Value::String(s.clone()),
        Some(Any::BoolValue(b)) => Value::Bool(*b),
        Some(Any::IntValue(i)) => Value::from(*i),
        Some(Any::DoubleValue(d)) => {
            serde_json::Number::from_f64(*d).map_or(Value::Null, Value::Number)
        }
        Some(Any::ArrayValue(a)) => Value::Array(a.values.iter().map(any_json).collect()),
        Some(Any::KvlistValue(kv)) => Value::Object(attributes_map(&kv.values)),
        Some(Any::BytesValue(b)) => Value::String(b.iter().map(|x| format!("{x:02x}")).collect()),
        Some(Any::StringValueStrindex(i)) => Value::from(*i),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Claude Code `claude_code.api_request` event as its documented schema describes it.
    pub(crate) const API_REQUEST_JSON: &str = r#"{"resourceLogs":[{"resource":{"attributes":[
        {"key":"service.name","value":{"stringValue":"claude-code"}}]},
      "scopeLogs":[{"scope":{"name":"com.anthropic.claude_code.events","version":"2.1.0"},
        "logRecords":[{"timeUnixNano":"1764633600000000000","observedTimeUnixNano":"1764633600000000000",
          "body":{"stringValue":"claude_code.api_request"},
          "attributes":[
            {"key":"event.name","value":{"stringValue":"api_request"}},
            {"key":"session.id","value":{"stringValue":"sess-1"}},
            {"key":"prompt.id","value":{"stringValue":"prompt-1"}},
            {"key":"model","value":{"stringValue":"claude-sonnet-4-5"}},
            {"key":"input_tokens","value":{"intValue":"12"}},
            {"key":"cost_usd","value":{"doubleValue":0.0042}}]}]}]}]}"#;

    #[test]
    fn json_and_protobuf_of_one_record_are_one_key() {
        let from_json = decode(Signal::Logs, Format::Json, API_REQUEST_JSON.as_bytes()).unwrap();
        let request: ExportLogsServiceRequest = serde_json::from_str(API_REQUEST_JSON).unwrap();
        let from_proto = decode(Signal::Logs, Format::Protobuf, &request.encode_to_vec()).unwrap();
        assert_eq!(from_json, from_proto);
        let row = &from_json.logs[0];
        assert_eq!(row.session_id.as_deref(), Some("sess-1"));
        assert_eq!(row.prompt_id.as_deref(), Some("prompt-1"));
        assert_eq!(row.event_name.as_deref(), Some("api_request"));
        assert_eq!(row.service_name.as_deref(), Some("claude-code"));
        assert_eq!(row.ts, Some(1_764_633_600_000));
        let attrs: Value = serde_json::from_str(&row.attributes).unwrap();
        assert_eq!(attrs["input_tokens"], 12);
        assert_eq!(attrs["cost_usd"], 0.0042);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(decode(Signal::Logs, Format::Protobuf, b"\xff\xff\xff\xff").is_err());
        assert!(decode(Signal::Metrics, Format::Json, b"{\"resourceMetrics\": 7}").is_err());
        assert!(gunzip(b"not gzip", 100).is_err());
    }

    #[test]
    fn media_types_and_paths() {
        assert_eq!(
            Format::of_content_type("application/json; charset=utf-8"),
            Some(Format::Json)
        );
        assert_eq!(
            Format::of_content_type("application/x-protobuf"),
            Some(Format::Protobuf)
        );
        assert_eq!(Format::of_content_type("text/plain"), None);
        assert_eq!(Signal::of_path("/v1/logs"), Some(Signal::Logs));
        assert_eq!(Signal::of_path("/v1/traces"), None);
    }
}
