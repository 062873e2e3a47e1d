//! `compact_json` over arbitrary JSON values and budgets.
//!
//! Input: two bytes of budget (little endian), then JSON text.
//! Invariants: the output parses; it fits the budget unless the budget is tiny (below
//! `TINY`, the last resort — the whole text cut and quoted — may escape past it).
#![no_main]

use cmstore::model::shorten::{compact_json, cut_text};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const TINY: usize = 64;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let max = usize::from(u16::from_le_bytes([data[0], data[1]]));
    let Ok(value) = serde_json::from_slice::<Value>(&data[2..]) else {
        if let Ok(text) = std::str::from_utf8(&data[2..]) {
            let cut = cut_text(text, max);
            let n = cut.chars().count();
            assert!(n <= max, "cut_text gave {n} chars for a budget of {max}");
        }
        return;
    };
    let out = compact_json(&value, max);
    if let Err(e) = serde_json::from_str::<Value>(&out) {
        panic!("output does not parse: {e}: {out}");
    }
    if max >= TINY {
        let n = out.chars().count();
        assert!(n <= max, "{n} chars for a budget of {max}: {out}");
    }
});
