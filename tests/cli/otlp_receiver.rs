//! `cmstore ingest --otlp-listen`: the agents' own OTLP logs and metrics, stored once each,
//! joined to sessions and prompts by their ids; malformed, oversize and unexpected requests
//! answered without harm.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Child;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::metrics::v1::{
    metric::Data, number_data_point, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use serde_json::Value;

use crate::common::{line, wait_timeout, TestEnv};
use crate::otlp_collector::closed_port;

fn kv(key: &str, value: Any) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn s(text: &str) -> Any {
    Any::StringValue(text.into())
}

fn resource() -> Option<Resource> {
    Some(Resource {
        attributes: vec![
            kv("service.name", s("claude-code")),
            kv("service.version", s("2.1.0")),
        ],
        ..Resource::default()
    })
}

/// Claude Code's `claude_code.api_request` and `claude_code.user_prompt` events, as its
/// monitoring documentation describes them.
fn claude_logs(session: &str, prompt: &str, at_ms: u64) -> ExportLogsServiceRequest {
    let common = |name: &str| {
        vec![
            kv("event.name", s(name)),
            kv("event.timestamp", s("2026-12-01T10:00:00.000Z")),
            kv("session.id", s(session)),
            kv("prompt.id", s(prompt)),
            kv("user.id", s("u-1")),
        ]
    };
    let mut api = common("api_request");
    api.extend([
        kv("model", s("claude-sonnet-4-5")),
        kv("cost_usd", Any::DoubleValue(0.0123)),
        kv("duration_ms", Any::IntValue(2300)),
        kv("input_tokens", Any::IntValue(12)),
        kv("output_tokens", Any::IntValue(345)),
        kv("cache_read_tokens", Any::IntValue(20_000)),
        kv("cache_creation_tokens", Any::IntValue(1_500)),
    ]);
    let mut user = common("user_prompt");
    user.push(kv("prompt_length", Any::IntValue(42)));
    let record = |name: &str, attributes, dt: u64| LogRecord {
        time_unix_nano: (at_ms + dt) * 1_000_000,
        observed_time_unix_nano: (at_ms + dt) * 1_000_000,
        body: Some(AnyValue {
            value: Some(s(&format!("claude_code.{name}"))),
        }),
        attributes,
        ..LogRecord::default()
    };
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: resource(),
            scope_logs: vec![ScopeLogs {
                log_records: vec![
                    record("user_prompt", user, 0),
                    record("api_request", api, 10),
                ],
                ..ScopeLogs::default()
            }],
            ..ResourceLogs::default()
        }],
    }
}

/// `claude_code.token.usage`, one point per token type.
fn claude_metrics(session: &str, at_ms: u64) -> ExportMetricsServiceRequest {
    let point = |kind: &str, n: i64| NumberDataPoint {
        attributes: vec![
            kv("session.id", s(session)),
            kv("type", s(kind)),
            kv("model", s("claude-sonnet-4-5")),
        ],
        time_unix_nano: at_ms * 1_000_000,
        value: Some(number_data_point::Value::AsInt(n)),
        ..NumberDataPoint::default()
    };
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: resource(),
            scope_metrics: vec![ScopeMetrics {
                metrics: vec![Metric {
                    name: "claude_code.token.usage".into(),
                    unit: "tokens".into(),
                    data: Some(Data::Sum(Sum {
                        data_points: vec![
                            point("input", 12),
                            point("output", 345),
                            point("cacheRead", 20_000),
                            point("cacheCreation", 1_500),
                        ],
                        aggregation_temporality: 1,
                        is_monotonic: true,
                    })),
                    ..Metric::default()
                }],
                ..ScopeMetrics::default()
            }],
            ..ResourceMetrics::default()
        }],
    }
}

/// A running `cmstore ingest --otlp-listen` and its port.
struct Listening {
    child: Child,
    port: u16,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn listen(env: &TestEnv) -> Listening {
    let port = closed_port();
    let addr = format!("127.0.0.1:{port}");
    let child = env.spawn_follow(&["--poll-ms", "50", "--otlp-listen", &addr]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(&addr).is_err() {
        assert!(
            Instant::now() < deadline,
            "the receiver never listened on {addr}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Listening { child, port }
}

/// Posts `body` with `Content-Length`; returns the status.
fn post(port: u16, path: &str, content_type: &str, body: &[u8], gzip: bool) -> u16 {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let mut req = agent
        .post(&format!("http://127.0.0.1:{port}{path}"))
        .header("Content-Type", content_type);
    let body = if gzip {
        req = req.header("Content-Encoding", "gzip");
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(body).unwrap();
        e.finish().unwrap()
    } else {
        body.to_vec()
    };
    req.send(&body[..]).expect("a response").status().as_u16()
}

/// Posts `body` chunked, without `Content-Length`, over a raw connection (as Claude Code's
/// exporter does); returns the status line's code.
fn post_chunked(port: u16, path: &str, content_type: &str, body: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    // A server may answer (413, 415) and close before the body is all sent, as HTTP allows:
    // the answer is read whatever became of the writes.
    let _ = (|| -> std::io::Result<()> {
        for chunk in body.chunks(100) {
            write!(stream, "{:x}\r\n", chunk.len())?;
            stream.write_all(chunk)?;
            stream.write_all(b"\r\n")?;
        }
        stream.write_all(b"0\r\n\r\n")
    })();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {answer:?}"))
}

const PROTOBUF: &str = "application/x-protobuf";
const JSON: &str = "application/json";

#[cfg(unix)]
#[test]
fn claude_code_logs_and_metrics_are_stored_once_and_join_sessions_and_prompts() {
    let env = TestEnv::new();
    env.append(&[line("UserPromptSubmit", "sess-1")]);
    let receiver = listen(&env);
    let logs = claude_logs("sess-1", "prompt-1", 1_764_583_200_000).encode_to_vec();
    assert_eq!(post(receiver.port, "/v1/logs", PROTOBUF, &logs, false), 200);
    // An SDK's retry of the same request, gzip this time: the same records.
    assert_eq!(post(receiver.port, "/v1/logs", PROTOBUF, &logs, true), 200);
    let metrics = claude_metrics("sess-1", 1_764_583_200_000).encode_to_vec();
    assert_eq!(
        post(receiver.port, "/v1/metrics", PROTOBUF, &metrics, false),
        200
    );
    assert_eq!(env.int("SELECT count(*) FROM otel_logs"), 2);
    assert_eq!(env.int("SELECT count(*) FROM otel_metrics"), 4);
    assert_eq!(
        env.wait_for(
            "SELECT count(*) FROM sessions WHERE session_id = 'sess-1'",
            1,
            Duration::from_secs(20)
        ),
        1
    );
    assert_eq!(
        env.int(
            "SELECT sum(json_extract(l.attributes, '$.output_tokens')) FROM otel_logs l
             JOIN sessions s ON s.session_id = l.session_id
             WHERE l.event_name = 'api_request' AND l.prompt_id = 'prompt-1'"
        ),
        345
    );
    assert_eq!(
        env.int(
            "SELECT CAST(sum(value) AS INTEGER) FROM otel_metrics
             WHERE name = 'claude_code.token.usage' AND session_id = 'sess-1'"
        ),
        21_857
    );
    drop(receiver);
    // After a restart, the same records sent again are still one row each.
    let receiver = listen(&env);
    assert_eq!(post(receiver.port, "/v1/logs", PROTOBUF, &logs, false), 200);
    assert_eq!(env.int("SELECT count(*) FROM otel_logs"), 2);
    // Each row is chained as the receiver stored it (issue 39).
    let report = crate::common::assert_chain_whole(&env);
    assert_eq!(
        (
            report["by_table"]["otel_logs"].as_i64(),
            report["by_table"]["otel_metrics"].as_i64()
        ),
        (Some(2), Some(4)),
        "{report}"
    );
}

#[cfg(unix)]
#[test]
fn json_and_chunked_bodies_are_read() {
    let env = TestEnv::new();
    let receiver = listen(&env);
    let request = claude_logs("sess-2", "prompt-9", 1_764_583_200_000);
    let json = serde_json::to_vec(&request).unwrap();
    assert!(
        String::from_utf8_lossy(&json).contains("\"resourceLogs\""),
        "OTLP/JSON field names"
    );
    assert_eq!(post_chunked(receiver.port, "/v1/logs", JSON, &json), 200);
    assert_eq!(
        env.int("SELECT count(*) FROM otel_logs WHERE session_id = 'sess-2'"),
        2
    );
    // The same records as protobuf, chunked: the same rows, not two more.
    let proto = request.encode_to_vec();
    assert_eq!(
        post_chunked(receiver.port, "/v1/logs", PROTOBUF, &proto),
        200
    );
    assert_eq!(env.int("SELECT count(*) FROM otel_logs"), 2);
    let metrics = serde_json::to_vec(&claude_metrics("sess-2", 1_764_583_200_000)).unwrap();
    assert_eq!(
        post(receiver.port, "/v1/metrics", JSON, &metrics, false),
        200
    );
    assert_eq!(
        env.int("SELECT count(*) FROM otel_metrics WHERE session_id = 'sess-2'"),
        4
    );
}

#[cfg(unix)]
#[test]
fn malformed_bodies_get_a_400_and_a_reject_row_and_the_receiver_goes_on() {
    let env = TestEnv::new();
    let receiver = listen(&env);
    assert_eq!(
        post(
            receiver.port,
            "/v1/logs",
            PROTOBUF,
            b"\xff\xfe not protobuf",
            false
        ),
        400
    );
    assert_eq!(
        post(
            receiver.port,
            "/v1/metrics",
            JSON,
            b"{\"resourceMetrics\": 7",
            false
        ),
        400
    );
    assert_eq!(
        post(
            receiver.port,
            "/v1/logs",
            PROTOBUF,
            b"not gzip at all",
            true
        ),
        400
    );
    assert_eq!(
        post_chunked(receiver.port, "/v1/logs", "text/plain", b"hello"),
        415
    );
    assert_eq!(post(receiver.port, "/v1/traces", PROTOBUF, b"", false), 404);
    assert_eq!(
        env.int("SELECT count(*) FROM otel_rejects WHERE status = 400"),
        3
    );
    assert_eq!(
        post(receiver.port, "/v1/logs", "text/csv", b"a,b\n1,2\n", false),
        415
    );
    // What each refused request carried, chunked or with a length, and its first bytes.
    assert_eq!(
        env.text(
            "SELECT group_concat(length || ':' || raw_prefix, '|') FROM
               (SELECT length, raw_prefix FROM otel_rejects WHERE status = 415 ORDER BY id)"
        ),
        "5:hello|8:a,b\n1,2\n"
    );
    assert_eq!(
        env.int("SELECT count(*) FROM otel_rejects WHERE raw_prefix LIKE '%not protobuf%'"),
        1
    );
    let logs = claude_logs("sess-3", "p", 1_764_583_200_000).encode_to_vec();
    assert_eq!(post(receiver.port, "/v1/logs", PROTOBUF, &logs, false), 200);
    assert_eq!(env.int("SELECT count(*) FROM otel_logs"), 2);
}

#[cfg(unix)]
#[test]
fn an_oversize_body_gets_a_413_with_or_without_a_length() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[otlp_receiver]\nmax_body_bytes = 1024\n",
    )
    .unwrap();
    let receiver = listen(&env);
    let big = vec![b'x'; 4096];
    assert_eq!(post(receiver.port, "/v1/logs", PROTOBUF, &big, false), 413);
    assert_eq!(post_chunked(receiver.port, "/v1/logs", PROTOBUF, &big), 413);
    // A small gzip body that unpacks past the limit.
    assert_eq!(
        post(
            receiver.port,
            "/v1/logs",
            PROTOBUF,
            &vec![0u8; 100_000],
            true
        ),
        413
    );
    // The declared length; what was read, one byte past the limit; the packed body's length.
    let lengths = env.text(
        "SELECT group_concat(length, ',') FROM
           (SELECT length FROM otel_rejects WHERE status = 413 ORDER BY id)",
    );
    let lengths: Vec<i64> = lengths.split(',').map(|n| n.parse().unwrap()).collect();
    assert_eq!(lengths[..2], [4096, 1025], "{lengths:?}");
    assert!((1..1024).contains(&lengths[2]), "{lengths:?}");
    let small = claude_logs("s", "p", 1_764_583_200_000).encode_to_vec();
    assert!(small.len() < 1024);
    assert_eq!(
        post(receiver.port, "/v1/logs", PROTOBUF, &small, false),
        200
    );
}

#[test]
fn a_non_loopback_address_is_refused_without_configuration() {
    let env = TestEnv::new();
    env.cmd()
        .args(["ingest", "--once", "--otlp-listen", "0.0.0.0:4318"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("not a loopback address"))
        .stderr(predicates::str::contains("allow_remote"));
    env.cmd()
        .args(["ingest", "--once", "--otlp-listen", "nonsense"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("expected an address and port"));
}

#[cfg(unix)]
#[test]
fn the_receiver_stops_with_ingest() {
    let env = TestEnv::new();
    let mut receiver = listen(&env);
    crate::common::terminate(&receiver.child);
    let status = wait_timeout(&mut receiver.child, Duration::from_secs(30)).expect("exits");
    assert!(status.success());
    assert!(TcpStream::connect(("127.0.0.1", receiver.port)).is_err());
}

#[test]
fn hooks_install_otel_sets_claude_codes_telemetry_environment_opt_in() {
    let env = TestEnv::new();
    let project = env.dir.path().join("proj");
    std::fs::create_dir_all(project.join(".claude")).unwrap();
    let settings = project.join(".claude/settings.json");
    std::fs::write(&settings, "{\n  \"env\": {\"KEEP\": \"me\"}\n}\n").unwrap();
    let install = |extra: &[&str]| {
        env.cmd()
            .args(["hooks", "install", "--agent", "claude", "--project"])
            .arg(&project)
            .args(extra)
            .assert()
    };
    install(&[]).success();
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert!(
        doc["env"].get("CLAUDE_CODE_ENABLE_TELEMETRY").is_none(),
        "opt-in: {doc}"
    );
    // Hooks already there: --otel adds the environment alone.
    install(&["--otel", "--otel-endpoint", "http://127.0.0.1:14318"])
        .success()
        .stdout(predicates::str::contains(
            "sends its telemetry to http://127.0.0.1:14318",
        ));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(doc["env"]["KEEP"], "me");
    assert_eq!(doc["env"]["CLAUDE_CODE_ENABLE_TELEMETRY"], "1");
    assert_eq!(doc["env"]["OTEL_LOGS_EXPORTER"], "otlp");
    assert_eq!(doc["env"]["OTEL_METRICS_EXPORTER"], "otlp");
    assert_eq!(doc["env"]["OTEL_EXPORTER_OTLP_PROTOCOL"], "http/protobuf");
    assert_eq!(
        doc["env"]["OTEL_EXPORTER_OTLP_ENDPOINT"],
        "http://127.0.0.1:14318"
    );
    assert!(
        doc["hooks"]["PreToolUse"].is_array(),
        "the hooks stay: {doc}"
    );
    env.cmd()
        .args([
            "hooks",
            "install",
            "--agent",
            "claude,vscode",
            "--otel",
            "--project",
        ])
        .arg(&project)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("Claude Code only"));
}

fn fixture(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/otlp")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[cfg(unix)]
#[test]
fn recorded_claude_code_bodies_in_json_and_protobuf_are_one_set_of_rows() {
    let env = TestEnv::new();
    let receiver = listen(&env);
    let logs = fixture("claude_code_logs.json");
    let metrics = fixture("claude_code_metrics.json");
    assert_eq!(post_chunked(receiver.port, "/v1/logs", JSON, &logs), 200);
    assert_eq!(
        post_chunked(receiver.port, "/v1/metrics", JSON, &metrics),
        200
    );
    assert_eq!(
        env.int("SELECT count(*) FROM otel_logs WHERE session_id = 'fixture-session'"),
        4
    );
    assert_eq!(
        env.int("SELECT count(*) FROM otel_metrics WHERE session_id = 'fixture-session'"),
        4
    );
    assert_eq!(
        env.int(
            "SELECT json_extract(attributes, '$.cache_read_tokens') FROM otel_logs
             WHERE event_name = 'api_request' AND prompt_id = 'fixture-prompt-1'"
        ),
        20_000
    );
    assert_eq!(
        env.int("SELECT ts FROM otel_logs WHERE event_name = 'api_error'"),
        1_764_583_209_000
    );
    // The same bodies as the protobuf an SDK would send: no new rows.
    let as_proto = serde_json::from_slice::<ExportLogsServiceRequest>(&logs)
        .unwrap()
        .encode_to_vec();
    assert_eq!(
        post(receiver.port, "/v1/logs", PROTOBUF, &as_proto, true),
        200
    );
    let as_proto = serde_json::from_slice::<ExportMetricsServiceRequest>(&metrics)
        .unwrap()
        .encode_to_vec();
    assert_eq!(
        post(receiver.port, "/v1/metrics", PROTOBUF, &as_proto, false),
        200
    );
    assert_eq!(env.int("SELECT count(*) FROM otel_logs"), 4);
    assert_eq!(env.int("SELECT count(*) FROM otel_metrics"), 4);
}

#[cfg(unix)]
#[test]
fn a_configuration_that_is_not_toml_keeps_neither_ingest_nor_the_receiver_from_starting() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(
        env.home().join("cmstore.toml"),
        "retention_days = 3O\n[export.otlp]\nendpoint = \"http://127.0.0.1:1\"\n",
    )
    .unwrap();
    let receiver = listen(&env);
    let logs = claude_logs("s", "p", 1_764_583_200_000).encode_to_vec();
    assert_eq!(post(receiver.port, "/v1/logs", PROTOBUF, &logs, false), 200);
    env.append(&[line("UserPromptSubmit", "s")]);
    assert_eq!(
        env.wait_for("SELECT count(*) FROM events", 1, Duration::from_secs(30)),
        1
    );
}

/// One point of a cumulative `claude_code.token.usage` series started at `start_ms`: the
/// output tokens of `session` so far.
fn cumulative_output(session: &str, start_ms: u64, at_ms: u64, n: i64) -> Vec<u8> {
    let point = NumberDataPoint {
        attributes: vec![
            kv("session.id", s(session)),
            kv("type", s("output")),
            kv("model", s("claude-sonnet-4-5")),
        ],
        start_time_unix_nano: start_ms * 1_000_000,
        time_unix_nano: at_ms * 1_000_000,
        value: Some(number_data_point::Value::AsInt(n)),
        ..NumberDataPoint::default()
    };
    let mut request = claude_metrics(session, at_ms);
    let metric = &mut request.resource_metrics[0].scope_metrics[0].metrics[0];
    metric.data = Some(Data::Sum(Sum {
        data_points: vec![point],
        aggregation_temporality: 2,
        is_monotonic: true,
    }));
    request.encode_to_vec()
}

/// `cmstore usage`: what Claude Code's own telemetry says a session used (its `api_request`
/// events, its token metrics) beside the transcript's count. A request sent again is counted
/// once; a cumulative series counts its running total once per series; a request no
/// transcript shows (a side request of another model) is named, and `--check` fails on it.
#[cfg(unix)]
#[test]
fn usage_compares_claude_codes_own_figures_with_the_transcripts_count() {
    let env = TestEnv::new();
    let response = serde_json::json!({"type": "assistant", "sessionId": "sess-1",
        "timestamp": "2026-12-01T10:00:00Z", "requestId": "req_1", "message": {"id": "msg_1",
        "role": "assistant", "model": "claude-sonnet-4-5", "usage": {"input_tokens": 12,
        "output_tokens": 345, "cache_read_input_tokens": 20_000,
        "cache_creation_input_tokens": 1_500}}});
    crate::common::import_lines(&env, "sess-1.jsonl", &[response.to_string()]);
    let receiver = listen(&env);
    let at = 1_764_583_200_000;
    let logs = claude_logs("sess-1", "prompt-1", at).encode_to_vec();
    let metrics = claude_metrics("sess-1", at).encode_to_vec();
    for gzip in [false, true] {
        assert_eq!(post(receiver.port, "/v1/logs", PROTOBUF, &logs, gzip), 200);
        assert_eq!(
            post(receiver.port, "/v1/metrics", PROTOBUF, &metrics, gzip),
            200
        );
    }
    let usage = |args: &[&str]| {
        let out = env
            .cmd()
            .arg("usage")
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), rows.as_array().unwrap().clone())
    };
    let (code, rows) = usage(&[]);
    assert_eq!(code, Some(0));
    let verdicts: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            let text = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (text("source"), text("model"), text("verdict"))
        })
        .collect();
    let equal = |source: &str| (source.into(), "claude-sonnet-4-5".into(), "equal".into());
    assert_eq!(
        verdicts,
        vec![equal("claude-otlp-metrics"), equal("claude-otlp-requests")]
    );
    let requests = &rows[1];
    assert_eq!(
        (
            requests["agent_requests"].as_i64(),
            requests["agent_output_tokens"].as_i64(),
            requests["agent_cost_usd"].as_f64()
        ),
        (Some(1), Some(345), Some(0.0123))
    );
    assert_eq!(usage(&["--check"]).0, Some(0));

    // A side request of another model, which no transcript line shows.
    let mut haiku = ExportLogsServiceRequest::decode(&logs[..]).unwrap();
    let records = &mut haiku.resource_logs[0].scope_logs[0].log_records;
    records.remove(0);
    for attribute in records[0].attributes.iter_mut() {
        if attribute.key == "model" {
            attribute.value = Some(AnyValue {
                value: Some(s("claude-haiku-4-5")),
            });
        }
    }
    let haiku = haiku.encode_to_vec();
    assert_eq!(
        post(receiver.port, "/v1/logs", PROTOBUF, &haiku, false),
        200
    );
    let (_, rows) = usage(&[]);
    let haiku_row = rows
        .iter()
        .find(|r| r["model"] == "claude-haiku-4-5")
        .expect("the side request's model");
    assert_eq!(haiku_row["verdict"], "not counted", "{rows:?}");
    // Shown, not failed on: no transcript shows such requests.
    assert_eq!(usage(&["--check"]).0, Some(0));

    // A request of the transcript's model that the transcript does not show: its figures
    // differ, and `--check` fails on them.
    let mut again = ExportLogsServiceRequest::decode(&logs[..]).unwrap();
    let records = &mut again.resource_logs[0].scope_logs[0].log_records;
    records.remove(0);
    records[0].time_unix_nano += 1_000_000;
    let again = again.encode_to_vec();
    assert_eq!(
        post(receiver.port, "/v1/logs", PROTOBUF, &again, false),
        200
    );
    let (code, rows) = usage(&["--check"]);
    assert_eq!(code, Some(1), "{:?}", usage(&[]).1);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (
            rows[0]["source"].as_str(),
            rows[0]["verdict"].as_str(),
            rows[0]["output_tokens"].as_i64(),
            rows[0]["agent_output_tokens"].as_i64()
        ),
        (
            Some("claude-otlp-requests"),
            Some("differs"),
            Some(345),
            Some(690)
        )
    );

    // Cumulative: each point is its series' running total; a new series (a restarted
    // process) starts again from zero.
    for (start, at, n) in [(at, at + 1, 100), (at, at + 2, 300), (at + 5, at + 6, 50)] {
        let body = cumulative_output("sess-2", start, at, n);
        assert_eq!(
            post(receiver.port, "/v1/metrics", PROTOBUF, &body, false),
            200
        );
    }
    assert_eq!(
        env.int(
            "SELECT sum(output_tokens) FROM agent_totals
             WHERE session_id = 'sess-2' AND source = 'claude-otlp-metrics'"
        ),
        350
    );
}
