//! Rewriting a JSON file so that every part whose value did not change keeps its exact text.
//!
//! [`rewrite`] walks the new value alongside the old file: an unchanged value (a user's hook,
//! an untouched settings key) is copied byte for byte from the old text; only containers that
//! changed are laid out again, in the file's own [`Style`]. A file in the conventional pretty
//! layout comes out exactly as a full re-render would; a file in any other layout (short
//! arrays on one line, odd spacing, comments aside) keeps that layout everywhere cmstore did
//! not write.

use serde_json::Value;

use super::style::Style;

/// Where a value sits in the old text.
#[derive(Debug)]
struct Node {
    start: usize,
    end: usize,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Object(Vec<(String, Node)>),
    Array(Vec<Node>),
    Scalar,
}

/// `new` written over the old file text `original`, which must parse as JSON (else `new` is
/// rendered in full in the original's detected style).
pub fn rewrite(original: &str, new: &Value) -> String {
    let style = Style::detect(original);
    let body_start = original.len() - original.trim_start_matches('\u{feff}').len();
    let old = serde_json::from_str::<Value>(&original[body_start..]);
    let root = Scanner::new(original, body_start).document();
    let (Ok(old), Some(root)) = (old, root) else {
        return style.render(new);
    };
    let nl = if style.crlf { "\r\n" } else { "\n" };
    let ctx = Ctx {
        text: original,
        indent: style.indent.as_deref(),
        nl,
    };
    let mut out = original[..root.start].to_string();
    out.push_str(&ctx.value(new, Some((&old, &root)), 0));
    out.push_str(&original[root.end..]);
    out
}

struct Ctx<'a> {
    text: &'a str,
    indent: Option<&'a str>,
    nl: &'a str,
}

impl Ctx<'_> {
    /// `new` at nesting `depth`, reusing `old`'s text where the values are equal.
    fn value(&self, new: &Value, old: Option<(&Value, &Node)>, depth: usize) -> String {
        if let Some((old_value, node)) = old {
            if old_value == new {
                return self.text[node.start..node.end].to_string();
            }
        }
        match new {
            Value::Object(map) => {
                let members = match old {
                    Some((
                        Value::Object(old_map),
                        Node {
                            kind: Kind::Object(members),
                            ..
                        },
                    )) => Some((old_map, members)),
                    _ => None,
                };
                let sep = if self.indent.is_some() { ": " } else { ":" };
                let items = map
                    .iter()
                    .map(|(key, value)| {
                        let old_child = members.and_then(|(old_map, members)| {
                            let node = &members.iter().rev().find(|(k, _)| k == key)?.1;
                            Some((old_map.get(key)?, node))
                        });
                        format!(
                            "{}{sep}{}",
                            Value::String(key.clone()),
                            self.value(value, old_child, depth + 1)
                        )
                    })
                    .collect();
                self.container('{', '}', items, depth)
            }
            Value::Array(values) => {
                let mut olds: Vec<Option<(&Value, &Node)>> = match old {
                    Some((
                        Value::Array(old_values),
                        Node {
                            kind: Kind::Array(nodes),
                            ..
                        },
                    )) if old_values.len() == nodes.len() => {
                        old_values.iter().zip(nodes).map(Some).collect()
                    }
                    _ => Vec::new(),
                };
                let items = values
                    .iter()
                    .map(|value| {
                        // Reuse the first unused old element equal to this one.
                        let reused = olds
                            .iter_mut()
                            .find(|o| o.is_some_and(|(v, _)| v == value))
                            .and_then(Option::take);
                        self.value(value, reused, depth + 1)
                    })
                    .collect();
                self.container('[', ']', items, depth)
            }
            scalar => scalar.to_string(),
        }
    }

    fn container(&self, open: char, close: char, items: Vec<String>, depth: usize) -> String {
        if items.is_empty() {
            return format!("{open}{close}");
        }
        let Some(indent) = self.indent else {
            return format!("{open}{}{close}", items.join(","));
        };
        let inner = format!("{}{}", self.nl, indent.repeat(depth + 1));
        format!(
            "{open}{inner}{}{}{}{close}",
            items.join(&format!(",{inner}")),
            self.nl,
            indent.repeat(depth)
        )
    }
}

/// A scanner over text already known to be valid JSON; `None` on anything unexpected.
struct Scanner<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str, pos: usize) -> Scanner<'a> {
        Scanner {
            bytes: text.as_bytes(),
            text,
            pos,
        }
    }

    fn document(mut self) -> Option<Node> {
        self.ws();
        self.value()
    }

    fn ws(&mut self) {
        while self
            .bytes
            .get(self.pos)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> bool {
        self.ws();
        let hit = self.bytes.get(self.pos) == Some(&byte);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn value(&mut self) -> Option<Node> {
        self.ws();
        let start = self.pos;
        let kind =
            match *self.bytes.get(self.pos)? {
                b'{' => {
                    self.pos += 1;
                    let mut members = Vec::new();
                    if !self.eat(b'}') {
                        loop {
                            self.ws();
                            let key_start = self.pos;
                            self.string()?;
                            let key = serde_json::from_str(&self.text[key_start..self.pos]).ok()?;
                            if !self.eat(b':') {
                                return None;
                            }
                            members.push((key, self.value()?));
                            if self.eat(b'}') {
                                break;
                            }
                            if !self.eat(b',') {
                                return None;
                            }
                        }
                    }
                    Kind::Object(members)
                }
                b'[' => {
                    self.pos += 1;
                    let mut items = Vec::new();
                    if !self.eat(b']') {
                        loop {
                            items.push(self.value()?);
                            if self.eat(b']') {
                                break;
                            }
                            if !self.eat(b',') {
                                return None;
                            }
                        }
                    }
                    Kind::Array(items)
                }
                b'"' => {
                    self.string()?;
                    Kind::Scalar
                }
                _ => {
                    while self.bytes.get(self.pos).is_some_and(|b| {
                        !b.is_ascii_whitespace() && !matches!(b, b',' | b']' | b'}')
                    }) {
                        self.pos += 1;
                    }
                    Kind::Scalar
                }
            };
        Some(Node {
            start,
            end: self.pos,
            kind,
        })
    }

    /// Moves past the string starting at the cursor.
    fn string(&mut self) -> Option<()> {
        if self.bytes.get(self.pos) != Some(&b'"') {
            return None;
        }
        self.pos += 1;
        loop {
            match *self.bytes.get(self.pos)? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    return Some(());
                }
                _ => self.pos += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn edited(text: &str, edit: impl FnOnce(&mut Value)) -> String {
        let body = text.trim_start_matches('\u{feff}');
        let mut value: Value = serde_json::from_str(body).unwrap();
        edit(&mut value);
        rewrite(text, &value)
    }

    fn add_hook(v: &mut Value) {
        v["hooks"]["Stop"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "command", "command": "x", "n": [1, 2]}));
        v["hooks"]["New"] = json!([]);
    }

    #[test]
    fn conventional_files_match_a_full_render() {
        for text in [
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"hooks\": {\n    \"Stop\": []\n  }\n}\n",
            "{\n    \"hooks\": {\n        \"Stop\": [\n            {\n                \"k\": \"v\"\n            }\n        ]\n    },\n    \"z\": {}\n}",
            "{\r\n\t\"hooks\": {\r\n\t\t\"Stop\": [\r\n\t\t\t1\r\n\t\t]\r\n\t}\r\n}\r\n",
            "\u{feff}{\"hooks\":{\"Stop\":[{\"a\":1}]},\"b\":true}",
        ] {
            assert!(Style::round_trips(text), "{text:?}");
            let mut value: Value =
                serde_json::from_str(text.trim_start_matches('\u{feff}')).unwrap();
            add_hook(&mut value);
            assert_eq!(
                rewrite(text, &value),
                Style::detect(text).render(&value),
                "{text:?}"
            );
        }
    }

    #[test]
    fn untouched_parts_of_other_layouts_keep_their_text() {
        let text = "{\n  \"permissions\": { \"allow\": [\"Bash(ls:*)\", \"Read\"] },\n  \"hooks\": {\n    \"Stop\": [ {\"type\": \"command\", \"command\": \"say hi\"} ],\n    \"Other\": [ 1,2 ]\n  },\n  \"model\" : \"opus\"\n}\n";
        let out = edited(text, add_hook);
        assert!(out.starts_with(
            "{\n  \"permissions\": { \"allow\": [\"Bash(ls:*)\", \"Read\"] },\n  \"hooks\": {\n"
        ));
        assert!(out.contains("\n      {\"type\": \"command\", \"command\": \"say hi\"},\n"));
        assert!(out.contains("\n    \"Other\": [ 1,2 ],\n"));
        assert!(out.contains("\"New\": []"));
        assert!(out.ends_with("\"model\": \"opus\"\n}\n"), "{out}");
        let back: Value = serde_json::from_str(&out).unwrap();
        let mut want: Value = serde_json::from_str(text).unwrap();
        add_hook(&mut want);
        assert_eq!(back, want);
    }

    #[test]
    fn unchanged_value_is_the_same_text() {
        let text = "{ \"a\" :1 , \"b\":[ 1 ] }  \n";
        assert_eq!(edited(text, |_| {}), text);
    }

    #[test]
    fn strings_with_escapes_and_brackets_are_scanned() {
        let text = "{\"k\\\"}\": \"]\\\\\", \"hooks\": {}}";
        let out = edited(text, |v| v["hooks"]["E"] = json!([1]));
        // The root changed, so its separators are the compact layout's.
        assert!(out.starts_with("{\"k\\\"}\":\"]\\\\\","), "{out}");
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back["hooks"]["E"], json!([1]));
    }

    #[test]
    fn removing_entries_keeps_the_rest() {
        let text = "{\n  \"hooks\": {\n    \"Stop\": [ {\"a\": 1}, {\"ours\": 2} ],\n    \"Mine\": [ 3 ]\n  }\n}\n";
        let out = edited(text, |v| {
            v["hooks"]["Stop"].as_array_mut().unwrap().pop();
        });
        assert_eq!(
            out,
            "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"a\": 1}\n    ],\n    \"Mine\": [ 3 ]\n  }\n}\n"
        );
    }
}
