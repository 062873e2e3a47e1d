//! `cmstore export otlp`: spans to a local collector, their ids and attributes, the cursor,
//! retries and refusals.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::common::{entry, the_one_error, TestEnv};
use crate::otlp_collector::{attr, closed_port, Answer, Collector};

/// One session's turn: a prompt, a risky tool call, a failed one, a subagent, the Stop.
/// Returns the event ids in order.
fn one_turn(env: &TestEnv, session: &str, t0: i64) -> Vec<String> {
    let mut lines = Vec::new();
    let at = |hook: &str, dt: i64| {
        let mut e = entry(hook, session);
        e.timestamp = t0 + dt;
        e
    };
    let mut prompt = at("UserPromptSubmit", 0);
    prompt.prompt = Some("ship it, token ghp_abcdefghijklmnopqrstuvwxyz0123456789".into());
    lines.push(prompt);
    let mut pre = at("PreToolUse", 100);
    pre.tool_call_id = Some(format!("{session}-call-1"));
    pre.risk = Some("rm-rf".into());
    pre.tool_input = Some(r#"{"command":"rm -rf build"}"#.into());
    lines.push(pre);
    let mut post = at("PostToolUse", 400);
    post.tool_call_id = Some(format!("{session}-call-1"));
    post.duration_ms = Some(300);
    post.tool_input = Some(r#"{"command":"rm -rf build"}"#.into());
    post.tool_response = Some("removed".into());
    lines.push(post);
    let mut failed = at("PostToolUseFailure", 600);
    failed.tool_call_id = Some(format!("{session}-call-2"));
    failed.error = Some(serde_json::json!({"message": "exit 2"}));
    lines.push(failed);
    let mut start = at("SubagentStart", 700);
    start.delegated_agent = Some("Explore".into());
    lines.push(start);
    let mut stop = at("SubagentStop", 900);
    stop.delegated_agent = Some("Explore".into());
    lines.push(stop);
    let mut end = at("Stop", 1000);
    end.response = Some("shipped".into());
    lines.push(end);
    let ids = lines.iter().map(|e| e.id.clone()).collect();
    env.append(&lines.iter().map(|e| e.to_line()).collect::<Vec<_>>());
    ids
}

fn export(env: &TestEnv, base: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    env.cmd()
        .args(["export", "otlp", "--endpoint", base])
        .args(extra)
        .timeout(Duration::from_secs(60))
        .assert()
}

fn cursor(env: &TestEnv) -> i64 {
    env.int("SELECT coalesce(max(seq), 0) FROM export_cursors")
}

#[test]
fn each_span_kind_has_its_attributes_ids_and_parent() {
    let env = TestEnv::new();
    let ids = one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let collector = Collector::start();
    export(&env, &collector.base(), &[]).success();

    let spans = collector.spans();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "execute_tool Bash",
            "execute_tool Bash",
            "invoke_agent Explore",
            "invoke_agent claude"
        ]
    );
    let (tool, failed, sub, turn) = (&spans[0], &spans[1], &spans[2], &spans[3]);
    assert!(spans
        .iter()
        .all(|s| s.trace_id == turn.trace_id && s.trace_id.len() == 16));
    assert!(spans
        .iter()
        .all(|s| attr(s, "gen_ai.conversation.id").as_deref() == Some("sess-a")));

    assert_eq!(
        attr(tool, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attr(tool, "gen_ai.tool.name").as_deref(), Some("Bash"));
    assert_eq!(
        attr(tool, "gen_ai.tool.call.id").as_deref(),
        Some("sess-a-call-1")
    );
    assert_eq!(attr(tool, "cmstore.gate.risk").as_deref(), Some("rm-rf"));
    assert_eq!(
        attr(tool, "cmstore.event.id").as_deref(),
        Some(ids[2].as_str())
    );
    assert_eq!(
        tool.end_time_unix_nano - tool.start_time_unix_nano,
        300_000_000
    );
    assert_eq!(tool.status.as_ref().unwrap().code, 0);
    assert_eq!(
        tool.parent_span_id, turn.span_id,
        "a tool call is a child of its turn"
    );

    assert_eq!(attr(failed, "error.type").as_deref(), Some("tool_error"));
    assert_eq!(failed.status.as_ref().unwrap().code, 2, "STATUS_CODE_ERROR");

    assert_eq!(
        attr(sub, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(attr(sub, "gen_ai.agent.name").as_deref(), Some("Explore"));
    assert_eq!(sub.parent_span_id, turn.span_id);
    assert_eq!(
        sub.end_time_unix_nano - sub.start_time_unix_nano,
        200_000_000
    );

    assert_eq!(attr(turn, "gen_ai.agent.name").as_deref(), Some("claude"));
    assert!(turn.parent_span_id.is_empty());
    assert_eq!(turn.start_time_unix_nano, 1_700_000_000_000 * 1_000_000);
    assert_eq!(turn.end_time_unix_nano, 1_700_000_001_000 * 1_000_000);

    for span in &spans {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert_eq!(
                attr(span, key),
                None,
                "content export is off by default: {key}"
            );
        }
    }
    let received = collector.received();
    assert_eq!(received.len(), 1);
    assert!(received[0].gzip, "gzip by default");
    let resource = received[0].request.as_ref().unwrap().resource_spans[0]
        .resource
        .clone()
        .unwrap();
    let keys: Vec<String> = resource
        .attributes
        .iter()
        .map(|kv| kv.key.clone())
        .collect();
    assert!(keys.contains(&"service.name".to_string()), "{keys:?}");
    assert!(
        !keys.contains(&"user.id".to_string()),
        "no user unless configured: {keys:?}"
    );
    assert_eq!(cursor(&env), env.int("SELECT max(seq) FROM events"));

    // Caught up: a second run sends nothing.
    export(&env, &collector.base(), &[]).success();
    assert_eq!(collector.received().len(), 1);
}

#[test]
fn a_resend_carries_the_same_ids() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    one_turn(&env, "sess-b", 1_700_000_100_000);
    env.ingest_once();
    let collector = Collector::start();
    export(&env, &collector.base(), &[]).success();
    let first = collector.spans();
    env.rw()
        .execute("UPDATE export_cursors SET seq = 0", [])
        .unwrap();
    export(&env, &collector.base(), &[]).success();
    let all = collector.spans();
    assert_eq!(all.len(), first.len() * 2);
    let ids = |spans: &[opentelemetry_proto::tonic::trace::v1::Span]| {
        spans
            .iter()
            .map(|s| {
                (
                    s.trace_id.clone(),
                    s.span_id.clone(),
                    s.parent_span_id.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&all[first.len()..]), ids(&first));
    let distinct: BTreeSet<_> = first.iter().map(|s| s.span_id.clone()).collect();
    assert_eq!(distinct.len(), first.len(), "span ids are unique");
    let traces: BTreeSet<_> = first.iter().map(|s| s.trace_id.clone()).collect();
    assert_eq!(traces.len(), 2, "one trace per session");
}

#[test]
fn content_is_sent_only_when_switched_on_and_redacted() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let collector = Collector::start();
    export(&env, &collector.base(), &["--content"]).success();
    let spans = collector.spans();
    let turn = spans
        .iter()
        .find(|s| s.name == "invoke_agent claude")
        .unwrap();
    let input = attr(turn, "gen_ai.input.messages").expect("the prompt");
    assert!(input.contains("ship it"), "{input}");
    assert!(
        !input.contains("ghp_abcdefghij"),
        "redacted before it leaves: {input}"
    );
    assert!(attr(turn, "gen_ai.output.messages")
        .unwrap()
        .contains("shipped"));
    let tool = &spans[0];
    assert!(attr(tool, "gen_ai.tool.call.arguments")
        .unwrap()
        .contains("rm -rf build"));
    assert_eq!(
        attr(tool, "gen_ai.tool.call.result").as_deref(),
        Some("removed")
    );
}

#[test]
fn a_503_with_retry_after_then_200_is_retried_after_the_pause() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let collector = Collector::scripted(&[Answer::retry_after(503, 1)]);
    let started = Instant::now();
    export(&env, &collector.base(), &[])
        .success()
        .stderr(predicates::str::contains("1 retries"));
    let received = collector.received();
    assert_eq!(
        received.iter().map(|r| r.status).collect::<Vec<_>>(),
        [503, 200]
    );
    let pause = received[1].at - received[0].at;
    assert!(
        pause >= Duration::from_millis(950),
        "Retry-After honoured: {pause:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(collector.spans().len(), 4);
    assert_eq!(cursor(&env), env.int("SELECT max(seq) FROM events"));
}

#[test]
fn a_429_is_retried_with_back_off() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let collector = Collector::scripted(&[Answer::status(429), Answer::status(429)]);
    export(&env, &collector.base(), &[]).success();
    let statuses: Vec<u16> = collector.received().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [429, 429, 200]);
    assert_eq!(collector.spans().len(), 4);
}

#[test]
fn a_collector_that_is_down_leaves_the_cursor_and_the_next_run_sends_everything() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let port = closed_port();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    export(&env, &base, &["--give-up-after", "2"])
        .code(1)
        .stderr(predicates::str::contains("gave up"));
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(cursor(&env), 0, "nothing acknowledged, nothing skipped");
    // The collector comes up on the same address.
    let collector = Collector::on_port(port, &[]);
    export(&env, &base, &[]).success();
    assert_eq!(collector.spans().len(), 4);
    assert_eq!(cursor(&env), env.int("SELECT max(seq) FROM events"));
}

#[test]
fn giving_up_says_why_once() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let base = format!("http://127.0.0.1:{}", closed_port());
    let out = env
        .cmd()
        .args([
            "export",
            "otlp",
            "--endpoint",
            &base,
            "--give-up-after",
            "1",
        ])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    // Warnings about each retry come first; the error is the last line.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (retries, error) = stderr.trim_end().rsplit_once('\n').unwrap_or(("", &stderr));
    assert!(
        retries.lines().all(|l| l.contains("trying again")),
        "{stderr}"
    );
    let error = the_one_error(&std::process::Output {
        stderr: format!("{error}\n").into_bytes(),
        ..out
    });
    assert_eq!(error.matches("gave up").count(), 1, "{error}");
    assert_eq!(error.matches("cannot reach").count(), 1, "{error}");
}

#[test]
fn export_without_a_store_says_so_and_creates_none() {
    let env = TestEnv::new();
    let base = format!("http://127.0.0.1:{}", closed_port());
    let out = env
        .cmd()
        .args(["export", "otlp", "--endpoint", &base])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let error = the_one_error(&out);
    assert!(
        error.contains(&format!("no database at {}", env.db().display())),
        "{error}"
    );
    assert!(error.contains("nothing to export"), "{error}");
    assert!(!env.db().exists(), "a reading command created the store");
    assert!(!env.home().exists(), "a reading command created the home");
}

#[test]
fn the_cursor_moves_only_past_acknowledged_batches() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    // Batches of two events: [prompt, pre] has no span and sends nothing; [post, failed] is
    // acknowledged; [start, subagent stop] is refused.
    let collector = Collector::scripted(&[Answer::status(200), Answer::status(400)]);
    export(&env, &collector.base(), &["--batch-events", "2"])
        .code(1)
        .stderr(predicates::str::contains("400"));
    let seqs: Vec<i64> = {
        let conn = env.conn();
        let mut stmt = conn.prepare("SELECT seq FROM events ORDER BY seq").unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(
        cursor(&env),
        seqs[3],
        "past the acknowledged batch, before the refused one"
    );
    assert_eq!(collector.spans().len(), 2);
    export(&env, &collector.base(), &["--batch-events", "2"]).success();
    assert_eq!(cursor(&env), seqs[6]);
    assert_eq!(collector.spans().len(), 4, "each span acknowledged once");
}

#[test]
fn headers_and_endpoint_come_from_the_standard_variables() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let collector = Collector::start();
    env.cmd()
        .args(["export", "otlp"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", collector.base())
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer%20t0ken,x-team=core",
        )
        .env("OTEL_EXPORTER_OTLP_COMPRESSION", "none")
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let r = &collector.received()[0];
    assert!(!r.gzip);
    assert!(r
        .headers
        .contains(&("authorization".into(), "Bearer t0ken".into())));
    assert!(r.headers.contains(&("x-team".into(), "core".into())));
    assert!(r
        .headers
        .contains(&("content-type".into(), "application/x-protobuf".into())));
}

#[test]
fn events_after_a_prune_that_emptied_the_store_are_not_skipped() {
    let env = TestEnv::new();
    one_turn(&env, "sess-a", 1_700_000_000_000);
    env.ingest_once();
    let collector = Collector::start();
    export(&env, &collector.base(), &[]).success();
    assert_eq!(collector.spans().len(), 4);
    // What prune does when every event is older than the retention.
    env.rw().execute("DELETE FROM events", []).unwrap();
    one_turn(&env, "sess-b", 1_700_000_100_000);
    env.ingest_once();
    assert!(
        env.int("SELECT max(seq) FROM events") <= 7,
        "SQLite gives the new events the deleted seqs again"
    );
    export(&env, &collector.base(), &[]).success();
    let spans = collector.spans();
    assert_eq!(spans.len(), 8);
    assert!(spans[4..]
        .iter()
        .all(|s| attr(s, "gen_ai.conversation.id").as_deref() == Some("sess-b")));
}

#[test]
fn a_turn_span_carries_its_token_usage_cached_tokens_in_the_input() {
    let env = TestEnv::new();
    let t0 = 1_700_000_000_000;
    one_turn(&env, "sess-u", t0);
    env.ingest_once();
    // Two responses inside the turn, one of a subagent, one after the turn's end.
    env.rw()
        .execute_batch(&format!(
            "INSERT INTO usage(message_id, session_id, agent, sidechain, model, ts, input_tokens,
               output_tokens, cache_write_tokens, cache_read_tokens, origin)
             VALUES ('m1', 'sess-u', 'claude', 0, 'claude-sonnet-4-5', {a}, 10, 5, 20, 100, 'hook'),
                    ('m2', 'sess-u', 'claude', 0, 'claude-sonnet-4-5', {b}, 3, 7, 0, 50, 'hook'),
                    ('m3', 'sess-u', 'claude', 1, 'claude-haiku-4-5', {b}, 1000, 1000, 0, 0, 'hook'),
                    ('m4', 'sess-u', 'claude', 0, 'claude-sonnet-4-5', {late}, 1000, 1000, 0, 0, 'hook');",
            a = t0 + 200,
            b = t0 + 800,
            late = t0 + 5_000
        ))
        .unwrap();
    let collector = Collector::start();
    export(&env, &collector.base(), &[]).success();
    let spans = collector.spans();
    let turn = spans
        .iter()
        .find(|s| s.name == "invoke_agent claude")
        .expect("the turn span");
    // The conventions count cached tokens in the input: 10 + 3 + (100 + 50) read + 20 written.
    assert_eq!(
        attr(turn, "gen_ai.usage.input_tokens").as_deref(),
        Some("183")
    );
    assert_eq!(
        attr(turn, "gen_ai.usage.output_tokens").as_deref(),
        Some("12")
    );
    assert_eq!(
        attr(turn, "gen_ai.usage.cache_read.input_tokens").as_deref(),
        Some("150")
    );
    let tool = spans
        .iter()
        .find(|s| s.name.starts_with("execute_tool"))
        .unwrap();
    assert_eq!(attr(tool, "gen_ai.usage.input_tokens"), None);
}

/// The gate's values as the spans carried them when export read them from each line's JSON:
/// it reads the `risk` and `decision` columns for cmstore's lines now (migration 0018), and
/// another producer's line (these, without `producer`) as before, whatever the values' types.
#[test]
fn the_gate_s_values_are_those_of_the_line_whatever_their_type() {
    let env = TestEnv::new();
    let t0 = 1_700_000_000_000_i64;
    let line = |hook: &str, dt: i64, call: &str, gate: &str| {
        format!(
            "{{\"hookType\":\"{hook}\",\"id\":\"{hook}-{call}\",\"timestamp\":{},\
             \"sessionId\":\"sess-g\",\"agent\":\"claude\",\"toolName\":\"Bash\",\
             \"toolCallId\":\"{call}\"{gate}}}\n",
            t0 + dt
        )
    };
    let lines = [
        line("UserPromptSubmit", 0, "p", ",\"prompt\":\"go\""),
        line(
            "PreToolUse",
            10,
            "c1",
            ",\"risk\":\"rm-rf\",\"decision\":\"allow\"",
        ),
        line("PostToolUse", 20, "c1", ""),
        line(
            "PreToolUse",
            30,
            "c2",
            ",\"risk\":\"\",\"decision\":\"allow\"",
        ),
        line("PostToolUse", 40, "c2", ""),
        line("PreToolUse", 50, "c3", ",\"risk\":7,\"decision\":\"deny\""),
        line("PreToolUse", 60, "c4", ""),
        line("PostToolUse", 70, "c4", ",\"risk\":\"not a Pre's\""),
    ];
    env.append_raw(lines.concat().as_bytes());
    env.ingest_once();
    let collector = Collector::start();
    export(&env, &collector.base(), &[]).success();
    let spans = collector.spans();
    let gate = |call: &str| {
        let span = spans
            .iter()
            .find(|s| attr(s, "gen_ai.tool.call.id").as_deref() == Some(call))
            .unwrap_or_else(|| panic!("no span of {call}"));
        (
            attr(span, "cmstore.gate.risk"),
            attr(span, "cmstore.gate.decision"),
        )
    };
    let some = |s: &str| Some(s.to_string());
    assert_eq!(gate("c1"), (some("rm-rf"), some("allow")));
    assert_eq!(gate("c2"), (some(""), some("allow")));
    assert_eq!(gate("c3"), (some("7"), some("deny")));
    assert_eq!(gate("c4"), (None, None));
}

/// With no collector named anywhere (no --endpoint, no `[export.otlp]`, no OTEL_* variable),
/// `export otlp` says it tries OTLP's default, gives up on it within seconds instead of five
/// minutes, and says how to name a collector; the cursor stays where it was. A collector
/// that is named is retried as long as before, and nothing is said about the default.
#[test]
fn with_no_collector_configured_the_default_is_tried_briefly_and_said() {
    if std::net::TcpStream::connect("127.0.0.1:4318").is_ok() {
        crate::common::skipped("something listens on 127.0.0.1:4318, OTLP's default port");
        return;
    }
    let env = TestEnv::new();
    one_turn(&env, "sess-d", 1_700_000_000_000);
    env.ingest_once();
    let started = Instant::now();
    let mut cmd = env.cmd();
    for var in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd
        .args(["export", "otlp"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(took < Duration::from_secs(30), "took {took:?}: {stderr}");
    assert!(
        stderr.starts_with(
            "cmstore export otlp: no collector configured (--endpoint, `endpoint` in \
             [export.otlp] of cmstore.toml, or OTEL_EXPORTER_OTLP_ENDPOINT): trying OTLP's \
             default, http://localhost:4318/v1/traces\n"
        ),
        "{stderr}"
    );
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "cmstore: no collector at OTLP's default endpoint: start one there, or name yours \
             with --endpoint, [export.otlp] in cmstore.toml or OTEL_EXPORTER_OTLP_ENDPOINT: "
        ),
        "{stderr}"
    );
    assert_eq!(cursor(&env), 0);

    // Named (here a closed port), it is the named one's failure, said as before.
    let base = format!("http://127.0.0.1:{}", closed_port());
    let out = export(&env, &base, &["--give-up-after", "1"])
        .failure()
        .get_output()
        .clone();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("no collector"), "{stderr}");
}
