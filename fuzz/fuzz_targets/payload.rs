//! The hook path over arbitrary stdin bytes, as `cmstore capture` runs it (without I/O):
//! decode, sniff the agent and event, normalize, gate, redact, serialize.
//!
//! Invariants: nothing panics; the queue line parses back as a JSON object; its `toolInput`,
//! when present, parses as JSON (also after redaction); ingest turns the line into one row
//! with the entry's id, hook type and session id.
#![no_main]

use cmstore::config::Config;
use cmstore::model::queue_line::parse::parse_line;
use cmstore::model::redact::Redactor;
use cmstore::model::wire::{self, payload, Limits, Payload};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let payload = Payload::decode(data).unwrap_or_default();
    let agent = wire::sniff_agent(&payload);
    let event = wire::event_name(None, &payload).or_else(|| {
        payload::sniff_string_field(data, "hook_event_name")
            .or_else(|| payload::sniff_string_field(data, "hookEventName"))
    });
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = payload::repair_lone_surrogates(text);
    }
    let _ = payload::sniff_string_field(data, "session_id");

    let mut entry = wire::normalize(
        &payload,
        agent,
        event.as_deref(),
        1_700_000_000_000,
        data.len() as u64,
        &Limits::default(),
    );
    check_line(&entry.to_line(), "normalized");
    if let Some(input) = &entry.tool_input {
        assert!(
            input.chars().count() <= Limits::default().tool_input,
            "toolInput over the limit: {} chars",
            input.chars().count()
        );
    }

    let input = wire::tool_input(&payload);
    let _ = cmstore::model::safety::check(
        entry.tool_name.as_deref(),
        input.as_ref(),
        &Config::default().safety,
    );

    Redactor::new(&[]).redact_entry(&mut entry);
    let line = entry.to_line();
    check_line(&line, "redacted");

    // What capture writes, ingest takes: one row, under the entry's own id and hook type.
    let row = parse_line(line.as_bytes(), 0)
        .unwrap_or_else(|e| panic!("ingest rejects a capture line ({e:?}): {line}"));
    assert_eq!(row.id, entry.id.as_str());
    assert_eq!(row.hook_type.as_deref(), Some(entry.hook_type.as_str()));
    assert_eq!(row.session_id.as_deref(), entry.session_id.as_deref());
});

fn check_line(line: &str, stage: &str) {
    assert!(!line.contains('\n'), "{stage}: the line holds a newline");
    let value: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("{stage}: line does not parse: {e}: {line}"));
    let object = value.as_object().expect("the line is an object");
    if let Some(input) = object.get("toolInput") {
        let text = input.as_str().expect("toolInput is a string");
        if let Err(e) = serde_json::from_str::<Value>(text) {
            panic!("{stage}: toolInput does not parse: {e}: {text}");
        }
    }
}
