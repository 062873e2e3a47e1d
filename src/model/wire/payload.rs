//! The raw hook payload: decoding stdin and reading fields in any agent's spelling.

use serde_json::{Map, Value};

/// Why stdin could not be read as a JSON object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("empty payload")]
    Empty,
    #[error("payload is not JSON: {0}")]
    NotJson(String),
    #[error("payload is JSON but not an object ({0})")]
    NotObject(&'static str),
    #[error("payload exceeds the size limit and was cut")]
    Truncated,
}

/// A decoded hook payload: the JSON object an agent wrote on stdin.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Payload {
    fields: Map<String, Value>,
    /// True when stdin held invalid UTF-8 or unpaired surrogate escapes, replaced by U+FFFD.
    pub lossy_utf8: bool,
}

impl Payload {
    /// Decodes stdin bytes. Invalid UTF-8 is replaced rather than rejected, so one bad byte in
    /// a tool output does not lose the whole event.
    pub fn decode(bytes: &[u8]) -> Result<Payload, DecodeError> {
        // Cursor on Windows starts its payloads with a UTF-8 byte order mark (seen with 3.7.21).
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let (value, lossy_utf8) = match serde_json::from_slice::<Value>(bytes) {
            Ok(value) => (value, false),
            Err(first) => {
                let text = String::from_utf8_lossy(bytes);
                if text.trim().is_empty() {
                    return Err(DecodeError::Empty);
                }
                match std::str::from_utf8(bytes) {
                    // Lone UTF-16 surrogate escapes (`\ud83d` alone) are real: Claude Code on
                    // Windows writes them. They become U+FFFD instead of losing the event.
                    Ok(text) => match repair_lone_surrogates(text)
                        .and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
                    {
                        Some(value) => (value, true),
                        // Valid UTF-8 already: the JSON itself is broken.
                        None => return Err(DecodeError::NotJson(first.to_string())),
                    },
                    Err(_) => match serde_json::from_str::<Value>(&text) {
                        Ok(value) => (value, true),
                        Err(e) => return Err(DecodeError::NotJson(e.to_string())),
                    },
                }
            }
        };
        match value {
            Value::Object(fields) => Ok(Payload { fields, lossy_utf8 }),
            Value::Array(_) => Err(DecodeError::NotObject("array")),
            Value::String(_) => Err(DecodeError::NotObject("string")),
            Value::Number(_) => Err(DecodeError::NotObject("number")),
            Value::Bool(_) => Err(DecodeError::NotObject("boolean")),
            Value::Null => Err(DecodeError::NotObject("null")),
        }
    }

    /// Wraps an already-decoded object (tests, fuzzing).
    pub fn from_map(fields: Map<String, Value>) -> Payload {
        Payload {
            fields,
            lossy_utf8: false,
        }
    }

    /// The payload's top-level keys in payload order, for the debug log.
    pub fn keys(&self) -> Vec<&str> {
        self.fields.keys().map(String::as_str).collect()
    }

    /// True when `key` is present, null or not.
    pub fn has_key(&self, key: &str) -> bool {
        self.fields.contains_key(key)
    }

    /// True when any of `keys` is present (null counts as absent).
    pub fn has_any(&self, keys: &[&str]) -> bool {
        self.get_any(keys).is_some()
    }

    /// The first of `keys` present with a non-null value.
    pub fn get_any(&self, keys: &[&str]) -> Option<&Value> {
        keys.iter()
            .filter_map(|k| self.fields.get(*k))
            .find(|v| !v.is_null())
    }

    /// The first of `keys` holding a non-empty string (numbers are accepted as their text).
    pub fn str_any(&self, keys: &[&str]) -> Option<String> {
        keys.iter()
            .filter_map(|k| self.fields.get(*k))
            .find_map(scalar_text)
    }

    /// The first of `keys` holding an integer (or an integer-looking string).
    pub fn int_any(&self, keys: &[&str]) -> Option<i64> {
        keys.iter()
            .filter_map(|k| self.fields.get(*k))
            .find_map(|v| {
                v.as_i64()
                    .or_else(|| v.as_f64().map(|f| f as i64))
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            })
    }

    /// Replaces secrets in every string of the payload.
    pub fn redact_with(&mut self, redactor: &crate::model::redact::Redactor) {
        for value in self.fields.values_mut() {
            redactor.redact_value(value);
        }
    }

    /// The whole payload as a JSON value (verbose logging keeps it).
    pub fn to_value(&self) -> Value {
        Value::Object(self.fields.clone())
    }
}

/// Text of a string or number value; `None` for empty strings and other types.
pub fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Replaces `\uXXXX` escapes of unpaired UTF-16 surrogates with `\ufffd`, which JSON
/// parsers accept. Returns `None` when there was nothing to repair.
pub fn repair_lone_surrogates(text: &str) -> Option<String> {
    fn escape_at(bytes: &[u8], i: usize) -> Option<u16> {
        let hex = bytes.get(i + 2..i + 6)?;
        if bytes[i] != b'\\' || bytes[i + 1] != b'u' {
            return None;
        }
        u16::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut last, mut changed) = (0, 0, false);
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(bytes, i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(escape_at(bytes, i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    out.push_str(&text[last..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    last = i;
                    changed = true;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.push_str(&text[last..i]);
                out.push_str("\\ufffd");
                i += 6;
                last = i;
                changed = true;
            }
            // Any other escape, `\\` included: skip the escaped character.
            _ => i += 2,
        }
    }
    out.push_str(&text[last..]);
    changed.then_some(out)
}

/// Reads the string value of `"key":"…"` from the start of a payload that is too large (or too
/// broken) to parse, so a cut payload still gets its event name and session id.
pub fn sniff_string_field(bytes: &[u8], key: &str) -> Option<String> {
    let needle = format!("\"{key}\"");
    let text = String::from_utf8_lossy(bytes);
    let at = text.find(&needle)? + needle.len();
    let rest = text[at..].trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => return (!out.is_empty()).then_some(out),
            '\\' => out.push(chars.next()?),
            c if out.len() > 256 => {
                let _ = c;
                return None;
            }
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_objects_and_explains_everything_else() {
        assert!(Payload::decode(br#"{"a":1}"#).is_ok());
        assert_eq!(Payload::decode(b"").unwrap_err(), DecodeError::Empty);
        assert_eq!(Payload::decode(b"  \n").unwrap_err(), DecodeError::Empty);
        assert!(matches!(
            Payload::decode(b"{not json").unwrap_err(),
            DecodeError::NotJson(_)
        ));
        assert_eq!(
            Payload::decode(b"[1,2]").unwrap_err(),
            DecodeError::NotObject("array")
        );
        assert_eq!(
            Payload::decode(b"null").unwrap_err(),
            DecodeError::NotObject("null")
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let mut bytes = br#"{"prompt":"caf"#.to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(br#""}"#);
        let p = Payload::decode(&bytes).unwrap();
        assert!(p.lossy_utf8);
        assert_eq!(p.str_any(&["prompt"]).unwrap(), "caf\u{fffd}");
    }

    #[test]
    fn lone_surrogates_are_repaired_pairs_kept() {
        let p =
            Payload::decode(br#"{"a":"x\ud83dy","b":"\ud83d\ude00","c":"\\ud800","d":"\udc00"}"#)
                .unwrap();
        assert!(p.lossy_utf8);
        assert_eq!(p.str_any(&["a"]).unwrap(), "x\u{fffd}y");
        assert_eq!(p.str_any(&["b"]).unwrap(), "\u{1f600}");
        assert_eq!(
            p.str_any(&["c"]).unwrap(),
            "\\ud800",
            "an escaped backslash is no escape"
        );
        assert_eq!(p.str_any(&["d"]).unwrap(), "\u{fffd}");
    }

    #[test]
    fn fields_are_read_in_either_spelling() {
        let p = Payload::decode(br#"{"sessionId":"s","session_id":null,"n":"12","e":""}"#).unwrap();
        assert_eq!(p.str_any(&["session_id", "sessionId"]).unwrap(), "s");
        assert_eq!(p.int_any(&["n"]), Some(12));
        assert_eq!(p.str_any(&["e"]), None);
    }

    #[test]
    fn fields_are_sniffed_from_a_cut_payload() {
        let cut = br#"{"session_id":"abc","hook_event_name" : "PostToolUse","tool_input":{"content":"xxxxx"#;
        assert_eq!(
            sniff_string_field(cut, "hook_event_name").unwrap(),
            "PostToolUse"
        );
        assert_eq!(sniff_string_field(cut, "session_id").unwrap(), "abc");
        assert_eq!(sniff_string_field(cut, "missing"), None);
    }
}
