//! One queue line as ingest reads it.
//!
//! Invariants: nothing panics; a line that becomes a row has a non-empty id, and keeps the
//! line's own text as its `entry`.
#![no_main]

use cmstore::model::queue_line::parse::parse_line;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(row) = parse_line(data, 1_700_000_000_000) {
        assert!(!row.id.is_empty(), "empty id");
        assert!(
            data.starts_with(row.entry.as_bytes()),
            "entry is not the line"
        );
    }
});
