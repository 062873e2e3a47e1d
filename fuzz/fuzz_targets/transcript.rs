//! Transcript lines and whole transcripts, in both Claude Code and VS Code/Copilot formats.
//!
//! Invariants: nothing panics; every turn holds at most `MAX_TOOL_CALLS` tool calls, and
//! every tool-call input parses as JSON.
#![no_main]

use cmstore::model::transcript::{self, ParseOptions, MAX_TOOL_CALLS};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    for sidechain in [false, true] {
        let opts = ParseOptions { sidechain };
        for line in data.split(|&b| b == b'\n') {
            let _ = transcript::parse_line(line, opts);
        }
        // A single line without its newline is not a complete line: feed it with one too.
        let mut owned;
        let bytes = if data.ends_with(b"\n") {
            data
        } else {
            owned = data.to_vec();
            owned.push(b'\n');
            &owned[..]
        };
        for turn in transcript::assemble(bytes, opts) {
            assert!(
                turn.tool_calls.len() <= MAX_TOOL_CALLS,
                "{} tool calls in one turn",
                turn.tool_calls.len()
            );
            for call in &turn.tool_calls {
                if let Err(e) = serde_json::from_str::<Value>(&call.input) {
                    panic!("tool call input does not parse: {e}: {}", call.input);
                }
            }
            let _ = turn.to_record();
        }
    }
});
