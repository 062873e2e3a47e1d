//! Secret redaction at capture, before anything touches disk.
//!
//! Common API key and token shapes plus configured patterns are replaced by
//! `[REDACTED:<kind>]` in every string of a queue entry. Fields that hold JSON *text*
//! (`toolInput`, tool call inputs) are parsed, redacted and re-serialized, so they still parse.
//! Patterns are only compiled when a cheap keyword check finds a candidate, which keeps the
//! common hook (no secret at all) free of regex start-up cost.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::model::queue_line::QueueEntry;

mod strings;

/// A built-in secret shape.
struct Shape {
    /// Case-sensitive keywords, one of which must occur for the pattern to be tried.
    needles: &'static [&'static str],
    pattern: &'static str,
    /// Replacement; `$1` keeps a prefix such as `Bearer `.
    replacement: &'static str,
}

const SHAPES: &[Shape] = &[
    Shape {
        needles: &["PRIVATE KEY-----"],
        pattern: r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[\s\S]*)",
        replacement: "[REDACTED:private-key]",
    },
    Shape {
        needles: &["sk-"],
        pattern: r"\bsk-(?:ant-|proj-|live-|test-|or-)?[A-Za-z0-9_-]{20,}",
        replacement: "[REDACTED:api-key]",
    },
    Shape {
        needles: &["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
        pattern: r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})",
        replacement: "[REDACTED:github-token]",
    },
    Shape {
        needles: &["AKIA", "ASIA"],
        pattern: r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
        replacement: "[REDACTED:aws-key]",
    },
    Shape {
        needles: &["xox"],
        pattern: r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
        replacement: "[REDACTED:slack-token]",
    },
    Shape {
        needles: &["AIza"],
        pattern: r"\bAIza[0-9A-Za-z_-]{35}",
        replacement: "[REDACTED:google-key]",
    },
    Shape {
        needles: &["Bearer", "bearer", "BEARER"],
        pattern: r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/-]{8,}=*",
        replacement: "${1}[REDACTED:bearer-token]",
    },
];

/// The compiled pattern of built-in shape `index`, compiled on first use.
fn shape_regex(index: usize) -> &'static Regex {
    static COMPILED: [OnceLock<Regex>; SHAPES.len()] = [const { OnceLock::new() }; SHAPES.len()];
    COMPILED[index]
        .get_or_init(|| Regex::new(SHAPES[index].pattern).expect("built-in patterns compile"))
}

/// A searcher for every built-in shape's keywords, built once: the keyword check runs over
/// every entry capture writes, and a SIMD substring search is many times faster on it than
/// `str::contains` (and than building a searcher per call).
fn needle_finders() -> &'static [memchr::memmem::Finder<'static>] {
    static FINDERS: OnceLock<Vec<memchr::memmem::Finder<'static>>> = OnceLock::new();
    FINDERS.get_or_init(|| {
        SHAPES
            .iter()
            .flat_map(|shape| shape.needles.iter())
            .map(memchr::memmem::Finder::new)
            .collect()
    })
}

/// The kind a shape's replacement names: `aws-key` of `[REDACTED:aws-key]`.
fn shape_kind(shape: &Shape) -> &'static str {
    let replacement = shape.replacement;
    let start = replacement
        .find("[REDACTED:")
        .map_or(0, |i| i + "[REDACTED:".len());
    let end = replacement[start..]
        .find(']')
        .map_or(replacement.len(), |i| start + i);
    &replacement[start..end]
}

/// Replaces secrets in text.
#[derive(Debug)]
pub struct Redactor {
    configured: Vec<Regex>,
}

impl Redactor {
    /// A redactor with the built-in shapes plus `patterns` (already validated by the config
    /// loader; an invalid one is skipped).
    pub fn new(patterns: &[String]) -> Redactor {
        Redactor {
            configured: patterns.iter().filter_map(|p| Regex::new(p).ok()).collect(),
        }
    }

    /// True when `text` may hold a secret (a keyword of a built-in shape, or any configured
    /// pattern exists).
    pub fn may_match(&self, text: &str) -> bool {
        !self.configured.is_empty()
            || needle_finders()
                .iter()
                .any(|f| f.find(text.as_bytes()).is_some())
    }

    /// `text` with every secret replaced.
    pub fn redact<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let mut out = Cow::Borrowed(text);
        for (index, shape) in SHAPES.iter().enumerate() {
            if shape.needles.iter().any(|n| out.contains(n)) {
                if let Cow::Owned(s) = shape_regex(index).replace_all(&out, shape.replacement) {
                    out = Cow::Owned(s);
                }
            }
        }
        for re in &self.configured {
            if let Cow::Owned(s) = re.replace_all(&out, "[REDACTED]") {
                out = Cow::Owned(s);
            }
        }
        out
    }

    /// The kinds of secret in `text`, each once, in a fixed order: a built-in shape's name
    /// (`private-key`, `api-key`, `github-token`, `aws-key`, `slack-token`, `google-key`,
    /// `bearer-token`) or `configured` for a `[redaction]` pattern. Never the values: this is
    /// what the commit scan reports.
    pub fn kinds_in(&self, text: &str) -> Vec<&'static str> {
        let mut kinds: Vec<&'static str> = SHAPES
            .iter()
            .enumerate()
            .filter(|(_, shape)| shape.needles.iter().any(|n| text.contains(n)))
            .filter(|(index, _)| shape_regex(*index).is_match(text))
            .map(|(_, shape)| shape_kind(shape))
            .collect();
        if self.configured.iter().any(|re| re.is_match(text)) {
            kinds.push("configured");
        }
        kinds
    }

    /// Redacts every string inside `value`.
    pub fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.redact_value(v)),
            _ => {}
        }
    }

    /// Redacts a queue entry in place; returns true when anything changed.
    pub fn redact_entry(&self, entry: &mut QueueEntry) -> bool {
        // The strings of the line, not the line: the same keywords, without serializing.
        if self.configured.is_empty() && !self.may_match(&strings::collect(entry)) {
            return false;
        }
        let mut changed = false;
        let mut text = |field: &mut Option<String>, json_text: bool| {
            if let Some(s) = field {
                let redacted = if json_text {
                    self.redact_json_text(s)
                } else {
                    self.redact(s).into_owned()
                };
                if redacted != *s {
                    *s = redacted;
                    changed = true;
                }
            }
        };
        text(&mut entry.prompt, false);
        text(&mut entry.response, false);
        text(&mut entry.thinking, false);
        text(&mut entry.hook_feedback, false);
        text(&mut entry.message, false);
        text(&mut entry.tool_input, true);
        text(&mut entry.tool_response, true);
        text(&mut entry.cwd, false);
        text(&mut entry.root_hint, false);
        if let Some(calls) = &mut entry.tool_calls {
            for call in calls {
                let input = self.redact_json_text(&call.input);
                let output = self.redact(&call.output).into_owned();
                changed |= input != call.input || output != call.output;
                call.input = input;
                call.output = output;
            }
        }
        if let Some(turns) = &mut entry.turns {
            for turn in turns {
                let user = self.redact(&turn.user).into_owned();
                let assistant = self.redact(&turn.assistant).into_owned();
                changed |= user != turn.user || assistant != turn.assistant;
                turn.user = user;
                turn.assistant = assistant;
            }
        }
        for value in [&mut entry.payload, &mut entry.error].into_iter().flatten() {
            let before = value.clone();
            self.redact_value(value);
            changed |= *value != before;
        }
        changed
    }

    /// Redacts JSON text so that it still parses: strings inside the value are redacted and the
    /// value re-serialized. Text that is not JSON is redacted as plain text.
    pub fn redact_json_text(&self, text: &str) -> String {
        if !self.may_match(text) {
            return text.to_string();
        }
        match serde_json::from_str::<Value>(text) {
            Ok(mut value) => {
                self.redact_value(&mut value);
                serde_json::to_string(&value).expect("JSON values serialize")
            }
            Err(_) => self.redact(text).into_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECRETS: [(&str, &str); 9] = [
        (
            "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "api-key",
        ),
        ("sk-proj-abcdefghijklmnopqrstuvwxyz123456", "api-key"),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github-token"),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "github-token",
        ),
        ("AKIAIOSFODNN7EXAMPLE", "aws-key"),
        ("xoxb-123456789012-abcdefghijkl", "slack-token"),
        ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "google-key"),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
            "private-key",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA",
            "private-key",
        ),
    ];

    #[test]
    fn every_built_in_shape_is_redacted() {
        let r = Redactor::new(&[]);
        for (secret, kind) in SECRETS {
            let text = format!("token: {secret} end");
            let out = r.redact(&text);
            assert!(!out.contains(secret), "{kind}: {out}");
            assert!(out.contains(&format!("[REDACTED:{kind}]")), "{kind}: {out}");
        }
        let out = r.redact("curl -H 'Authorization: Bearer abc.def-ghi_jkl123'");
        assert_eq!(
            out,
            "curl -H 'Authorization: Bearer [REDACTED:bearer-token]'"
        );
    }

    #[test]
    fn every_built_in_shape_is_named_by_its_kind() {
        let r = Redactor::new(&["corp-[0-9]{6}".to_string()]);
        for (secret, kind) in SECRETS {
            assert_eq!(r.kinds_in(&format!("x = {secret}")), vec![kind], "{secret}");
        }
        assert_eq!(
            r.kinds_in("Authorization: Bearer abcdefgh12345678"),
            vec!["bearer-token"]
        );
        assert_eq!(r.kinds_in("id corp-123456"), vec!["configured"]);
        assert!(r.kinds_in("nothing to see, sk- and AKIA alone").is_empty());
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        let r = Redactor::new(&[]);
        for text in [
            "task-list ready",
            "git push",
            "the risk-free path",
            "sk-short",
        ] {
            assert!(matches!(r.redact(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn configured_patterns_apply() {
        let r = Redactor::new(&["corp-[0-9]{6}".to_string()]);
        assert_eq!(r.redact("id corp-123456 ok"), "id [REDACTED] ok");
    }

    #[test]
    fn json_text_fields_still_parse_after_redaction() {
        let r = Redactor::new(&[]);
        let mut e = QueueEntry::new("PreToolUse", 0);
        e.tool_input = Some(
            json!({"command": "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz123456", "key": "-----BEGIN EC PRIVATE KEY-----\nabc"})
                .to_string(),
        );
        e.prompt = Some("use ghp_abcdefghijklmnopqrstuvwxyz0123456789 please".into());
        e.payload = Some(json!({"tool_input": {"token": "AKIAIOSFODNN7EXAMPLE"}}));
        assert!(r.redact_entry(&mut e));
        let input: Value = serde_json::from_str(e.tool_input.as_deref().unwrap()).unwrap();
        assert_eq!(input["command"], "export OPENAI_API_KEY=[REDACTED:api-key]");
        assert_eq!(input["key"], "[REDACTED:private-key]");
        assert_eq!(
            e.prompt.as_deref(),
            Some("use [REDACTED:github-token] please")
        );
        assert_eq!(
            e.payload.unwrap()["tool_input"]["token"],
            "[REDACTED:aws-key]"
        );
    }
}
