//! Reading a JSON file's layout (indentation, line endings, final newline, BOM) so a
//! rewritten file looks like the one it replaces.
//!
//! Key order is kept by `serde_json`'s `preserve_order` feature; this module only decides
//! the whitespace. Files in the conventional pretty layout (`JSON.stringify(v, null, n)`,
//! Python's `json.dumps(v, indent=n)`, what Claude Code and VS Code write) round-trip byte
//! for byte; see [`Style::round_trips`].

use serde::Serialize;
use serde_json::Value;

const BOM: &str = "\u{feff}";

/// The whitespace layout of a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Style {
    /// One level of indentation; `None` for a compact (single-line) document.
    pub indent: Option<String>,
    /// True when lines end in `\r\n`.
    pub crlf: bool,
    /// True when the document ends with a line break.
    pub final_newline: bool,
    /// True when the file starts with a UTF-8 byte-order mark.
    pub bom: bool,
}

impl Default for Style {
    /// The layout of a file cmstore creates: two spaces, `\n`, final newline.
    fn default() -> Style {
        Style {
            indent: Some("  ".to_string()),
            crlf: false,
            final_newline: true,
            bom: false,
        }
    }
}

impl Style {
    /// Reads the layout of `text` (a whole file, BOM included).
    pub fn detect(text: &str) -> Style {
        let bom = text.starts_with(BOM);
        let body = text.strip_prefix(BOM).unwrap_or(text);
        let trimmed = body.trim_end();
        let indent = if trimmed.contains('\n') {
            Some(first_indent(trimmed).unwrap_or_else(|| "  ".to_string()))
        } else {
            None
        };
        Style {
            indent,
            crlf: body.contains("\r\n"),
            final_newline: body.ends_with('\n'),
            bom,
        }
    }

    /// Serializes `value` in this layout.
    pub fn render(&self, value: &Value) -> String {
        let mut out = match &self.indent {
            None => value.to_string(),
            Some(indent) => {
                let mut buf = Vec::new();
                let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
                let mut ser = serde_json::Serializer::with_formatter(&mut buf, formatter);
                value
                    .serialize(&mut ser)
                    .expect("a serde_json::Value always serializes");
                String::from_utf8(buf).expect("serde_json writes UTF-8")
            }
        };
        if self.final_newline {
            out.push('\n');
        }
        if self.crlf {
            // Line breaks inside strings are escaped, so every raw `\n` is layout.
            out = out.replace('\n', "\r\n");
        }
        if self.bom {
            out.insert_str(0, BOM);
        }
        out
    }

    /// True when rendering `text`'s own value in its detected layout gives `text` back, that
    /// is when a rewrite changes nothing but the parts that were edited.
    pub fn round_trips(text: &str) -> bool {
        let body = text.strip_prefix(BOM).unwrap_or(text);
        match serde_json::from_str::<Value>(body) {
            Ok(value) => Style::detect(text).render(&value) == text,
            Err(_) => false,
        }
    }
}

/// The leading whitespace of the first indented line after the first one.
fn first_indent(text: &str) -> Option<String> {
    text.lines().skip(1).find_map(|line| {
        let body = line.trim_start_matches([' ', '\t']);
        let lead = &line[..line.len() - body.len()];
        (!body.is_empty() && !lead.is_empty()).then(|| {
            if lead.starts_with('\t') {
                "\t".to_string()
            } else {
                lead.chars().take_while(|&c| c == ' ').collect()
            }
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) {
        assert!(Style::round_trips(text), "{text:?}");
    }

    #[test]
    fn conventional_layouts_round_trip() {
        round_trip("{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}\n");
        round_trip("{\n    \"z\": 1,\n    \"a\": {\n        \"k\": \"v\"\n    }\n}");
        round_trip("{\n\t\"z\": [],\n\t\"a\": {\n\t\t\"k\": null\n\t}\n}\n");
        round_trip("{\r\n  \"a\": 1\r\n}\r\n");
        round_trip("\u{feff}{\n  \"a\": true\n}\n");
        round_trip("{\"b\":1,\"a\":[1,2]}");
        round_trip("{\"b\":1}\n");
    }

    #[test]
    fn detects_each_part() {
        let s = Style::detect("{\n    \"a\": 1\n}");
        assert_eq!(s.indent.as_deref(), Some("    "));
        assert!(!s.final_newline && !s.crlf && !s.bom);
        assert_eq!(Style::detect("{}").indent, None);
        assert!(Style::detect("{\r\n\t\"a\": 1\r\n}\r\n").crlf);
    }

    #[test]
    fn other_layouts_are_reported_as_not_round_tripping() {
        assert!(!Style::round_trips("{\n  \"a\": [1, 2]\n}\n"));
        assert!(!Style::round_trips("{ \"a\": 1 }"));
        assert!(!Style::round_trips("not json"));
    }

    #[test]
    fn key_order_is_kept() {
        let text = "{\n  \"zeta\": 1,\n  \"alpha\": 2\n}\n";
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(Style::detect(text).render(&value), text);
    }
}
