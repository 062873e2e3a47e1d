//! Shortening long values without breaking them.
//!
//! ContextManager cut serialized tool input at a byte count, so the extension's `JSON.parse`
//! failed on every long input (seed bug A-B8). Here long strings are shortened *inside* the
//! JSON value and arrays/objects lose trailing members, so the result always parses.

use serde_json::{Map, Value};

/// Marker appended to every shortened string.
pub const ELLIPSIS: char = '…';

/// Cuts `text` to at most `max_chars` characters, ending in `…` when something was removed
/// (a budget of 0 leaves no room for it: the result is empty).
pub fn cut_text(text: &str, max_chars: usize) -> String {
    // No more bytes than the budget: no more characters either, and nothing to count.
    if text.len() <= max_chars {
        return text.to_string();
    }
    // No room even for the `…`.
    if max_chars == 0 {
        return String::new();
    }
    // Longer than the budget in bytes: if those bytes are characters of one byte each, it is
    // longer in characters too (the common case, found without counting).
    if text.as_bytes()[..max_chars].is_ascii() {
        return format!("{}{ELLIPSIS}", &text[..max_chars - 1]);
    }
    // One pass: where the kept characters end, and whether more than the budget follow.
    let mut starts = text.char_indices().map(|(i, _)| i).skip(max_chars - 1);
    let (Some(end), Some(_)) = (starts.next(), starts.next()) else {
        return text.to_string();
    };
    let mut out = String::with_capacity(end + ELLIPSIS.len_utf8());
    out.push_str(&text[..end]);
    out.push(ELLIPSIS);
    out
}

/// Compact JSON text of `value`, at most about `max_chars` characters, that always parses.
///
/// Strings are shortened first (the longest ones lose most); when the structure alone is too
/// big, arrays and objects keep their first members plus a `"…(+N more)"` note. As a last
/// resort the whole text is cut and returned as a JSON string.
pub fn compact_json(value: &Value, max_chars: usize) -> String {
    let full = to_compact(value);
    if char_len(&full) <= max_chars {
        return full;
    }
    // Largest per-string cap that fits, by binary search over the cap.
    let longest = longest_string(value);
    if let Some(text) = fit(longest, max_chars, |cap| limit(value, cap, usize::MAX)) {
        return text;
    }
    // Strings at a small cap still don't fit: trim collection sizes as well.
    let widest = widest_collection(value);
    if let Some(text) = fit(widest, max_chars, |items| limit(value, 16, items)) {
        return text;
    }
    to_compact(&Value::String(cut_text(&full, max_chars.saturating_sub(2))))
}

/// Binary search for the largest `n` in `0..=upper` whose rendering fits `max_chars`.
fn fit(upper: usize, max_chars: usize, render: impl Fn(usize) -> Value) -> Option<String> {
    let (mut lo, mut hi) = (0usize, upper);
    let mut best = None;
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        let text = to_compact(&render(mid));
        if char_len(&text) <= max_chars {
            best = Some(text);
            lo = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            hi = mid - 1;
        }
    }
    best
}

fn limit(value: &Value, str_cap: usize, item_cap: usize) -> Value {
    match value {
        Value::String(s) => Value::String(cut_text(s, str_cap.max(1))),
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(item_cap)
                .map(|v| limit(v, str_cap, item_cap))
                .collect();
            if items.len() > item_cap {
                out.push(Value::String(format!(
                    "{ELLIPSIS}(+{} more)",
                    items.len() - item_cap
                )));
            }
            Value::Array(out)
        }
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map.iter().take(item_cap) {
                out.insert(k.clone(), limit(v, str_cap, item_cap));
            }
            if map.len() > item_cap {
                out.insert(
                    ELLIPSIS.to_string(),
                    Value::String(format!("+{} more", map.len() - item_cap)),
                );
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

fn longest_string(value: &Value) -> usize {
    match value {
        Value::String(s) => s.chars().count(),
        Value::Array(items) => items.iter().map(longest_string).max().unwrap_or(0),
        Value::Object(map) => map.values().map(longest_string).max().unwrap_or(0),
        _ => 0,
    }
}

fn widest_collection(value: &Value) -> usize {
    match value {
        Value::Array(items) => items
            .iter()
            .map(widest_collection)
            .max()
            .unwrap_or(0)
            .max(items.len()),
        Value::Object(map) => map
            .values()
            .map(widest_collection)
            .max()
            .unwrap_or(0)
            .max(map.len()),
        _ => 0,
    }
}

fn to_compact(value: &Value) -> String {
    serde_json::to_string(value).expect("JSON values serialize")
}

fn char_len(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cut as it reads: the whole text when it has at most `max` characters, else its
    /// first `max - 1` and the `…`.
    fn cut_as_said(text: &str, max: usize) -> String {
        let chars: Vec<char> = text.chars().collect();
        if chars.len() <= max {
            return text.to_owned();
        }
        match max {
            0 => String::new(),
            _ => chars[..max - 1].iter().chain([&ELLIPSIS]).collect(),
        }
    }

    #[test]
    fn a_cut_keeps_what_the_budget_says_on_every_length_around_it() {
        for text in [
            "",
            "a",
            "abc",
            "héllo wörld",
            "日本語のテキスト",
            "a😀b😀c😀d",
        ] {
            for max in 0..14 {
                assert_eq!(
                    cut_text(text, max),
                    cut_as_said(text, max),
                    "{text:?} {max}"
                );
            }
        }
    }
    use serde_json::json;

    #[test]
    fn short_text_is_kept_and_long_text_ends_with_ellipsis() {
        assert_eq!(cut_text("abc", 3), "abc");
        assert_eq!(cut_text("abcd", 3), "ab…");
        assert_eq!(cut_text("ééééé", 3).chars().count(), 3);
        assert_eq!(cut_text("", 0), "");
    }

    #[test]
    fn a_zero_budget_gives_nothing_not_an_ellipsis() {
        // Found by `cargo fuzz run shorten`: the budget 0 gave "…", one char over it.
        assert_eq!(cut_text("\"q", 0), "");
        assert_eq!(cut_text("é", 0), "");
        assert_eq!(cut_text("ab", 1), "…");
    }

    #[test]
    fn small_values_are_untouched() {
        let v = json!({"command": "ls -la", "n": 3});
        assert_eq!(compact_json(&v, 100), r#"{"command":"ls -la","n":3}"#);
    }

    #[test]
    fn long_strings_are_shortened_inside_the_json() {
        let v = json!({"file_path": "/a/b.rs", "content": "x".repeat(10_000)});
        let out = compact_json(&v, 400);
        assert!(out.chars().count() <= 400, "{}", out.len());
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back["file_path"], "/a/b.rs", "short fields survive whole");
        assert!(back["content"].as_str().unwrap().ends_with('…'));
    }

    #[test]
    fn wide_structures_are_trimmed_and_still_parse() {
        let items: Vec<Value> = (0..5000).map(|i| json!({"id": i})).collect();
        let v = json!({"todos": items});
        let out = compact_json(&v, 300);
        assert!(out.chars().count() <= 300);
        let back: Value = serde_json::from_str(&out).unwrap();
        assert!(back["todos"].as_array().unwrap().len() < 5000);
    }

    #[test]
    fn anything_always_parses_even_with_a_tiny_budget() {
        let v = json!({"a": ["x".repeat(50), {"b": "y".repeat(50)}], "c": 1});
        for max in [0, 1, 2, 5, 10, 20, 40, 80] {
            let out = compact_json(&v, max);
            serde_json::from_str::<Value>(&out).unwrap_or_else(|e| panic!("{max}: {out}: {e}"));
        }
    }
}
