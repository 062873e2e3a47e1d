//! A tool call's input as one line of text, the way a session's story shows it: a shell
//! command as it is, a file path, pattern, URL or prompt as it is, anything else as its compact
//! JSON. Ingest keeps it in `tool_calls.input` (cut to [`STORED_CHARS`]), so `cmstore show`
//! reads a session's calls from one index instead of a page of `events` per call. No I/O.
//!
//! The text is what the story read from each line before (migration 0019): the value SQLite's
//! `json_extract(entry, '$.toolInput')` gives (a JSON string decoded, an object or an array as
//! its minified text, a number or a boolean nothing), then [`input_text`] of it. The
//! migration's backfill computes the same in SQL.

use crate::model::shorten::ELLIPSIS;

/// Characters of a tool input `tool_calls.input` keeps; a longer one is kept as its first
/// `STORED_CHARS` characters and `…`. The text view shows 100 of them (`story::SHORT_INPUT`),
/// whitespace collapsed; `--format json` and `--full` show the whole input, read from the line
/// when it was cut. 256 characters hold every input of the generated benchmark store and 90 %
/// of the real calls in the shared fixtures (the rest are long Task prompts, todo lists, file
/// contents), while each character is in the covering index `show` reads, on every call.
pub const STORED_CHARS: usize = 256;

/// The story's text of a line's tool input, given as the JSON text the line holds
/// ([`EventRow::tool_input`](super::row::EventRow::tool_input)), whole; `None` when it is a
/// number, a boolean or not JSON.
pub fn story_text(raw: &str) -> Option<String> {
    let raw = raw.trim_matches(is_json_space);
    let value = match raw.as_bytes().first()? {
        b'"' => serde_json::from_str::<String>(raw).ok()?,
        b'{' | b'[' => minify(raw),
        _ => return None,
    };
    Some(input_text(value))
}

/// A tool input as one line: the first of its `command`, `file_path`, `path`, `pattern`,
/// `url` or `prompt` that is a string, else the text as it is.
pub fn input_text(raw: String) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(&raw).ok();
    let command = parsed.as_ref().and_then(|v| {
        ["command", "file_path", "path", "pattern", "url", "prompt"]
            .iter()
            .find_map(|k| v.get(*k).and_then(|c| c.as_str()).map(str::to_string))
    });
    command.unwrap_or(raw)
}

/// `text` as `tool_calls.input` keeps it: whole up to [`STORED_CHARS`] characters, else its
/// first `STORED_CHARS` and `…` (so a kept text longer than that is a cut one: [`is_cut`]).
pub fn stored(text: String) -> String {
    match text.char_indices().nth(STORED_CHARS) {
        None => text,
        Some((end, _)) => {
            let mut cut = text;
            cut.truncate(end);
            cut.push(ELLIPSIS);
            cut
        }
    }
}

/// True when a `tool_calls.input` value is a cut one (see [`stored`]).
pub fn is_cut(stored: &str) -> bool {
    stored.len() > STORED_CHARS && stored.chars().nth(STORED_CHARS).is_some()
}

fn is_json_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// JSON text without the whitespace between its tokens, as SQLite's `json_extract` renders an
/// object or an array (strings, numbers and escapes as they are).
fn minify(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in raw.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
        } else if is_json_space(c) {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_input_reads_as_its_command() {
        let raw = r#"{"command":"cargo test","description":"x"}"#;
        assert_eq!(input_text(raw.into()), "cargo test");
        assert_eq!(input_text(r#"{"a":1}"#.into()), r#"{"a":1}"#);
        assert_eq!(input_text(r#"{"path":1,"url":"u"}"#.into()), "u");
    }

    #[test]
    fn the_line_s_json_text_reads_as_sqlite_extracts_it() {
        // cmstore writes toolInput as a string holding JSON.
        assert_eq!(
            story_text(r#""{\"command\":\"ls -la\"}""#).as_deref(),
            Some("ls -la")
        );
        assert_eq!(story_text(r#""plain text""#).as_deref(), Some("plain text"));
        assert_eq!(
            story_text(r#"{ "a" : [1, 2.50], "b": "x  y" }"#).as_deref(),
            Some(r#"{"a":[1,2.50],"b":"x  y"}"#)
        );
        assert_eq!(story_text("12"), None);
        assert_eq!(story_text("true"), None);
        assert_eq!(story_text("not json"), None);
    }

    /// The same values as the SQLite cmstore is built with gives: what the story read before,
    /// and what migration 0019's backfill reads.
    #[test]
    fn story_text_agrees_with_sqlite_s_json_extract() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let samples = [
            r#""{\"command\":\"cargo test\",\"description\":\"run\"}""#,
            r#""{\"file_path\":\"src/a.rs\",\"content\":\"x\\ny\"}""#,
            r#"{"command":"echo \"hi\"  there","timeout":5}"#,
            r#"{ "todos" : [ {"content":"a b","status":"pending"} ], "n": 1.0e3 }"#,
            r#"{"pattern":"fn \\w+","path":"src"}"#,
            r#"{"url":"https://x.dev/?q=1\/2","prompt":"read"}"#,
            r#"{"a":"\u00e9\t"}"#,
            r#""é plain \\ text""#,
            r#"["x", {"y": null}]"#,
            r#""{\"command\": 12}""#,
            r#"{}"#,
            "17",
            "false",
        ];
        for raw in samples {
            let line = format!(r#"{{"hookType":"PreToolUse","toolInput":{raw}}}"#);
            let sqlite: Option<String> = conn
                .query_row(
                    "SELECT CASE WHEN typeof(v) = 'text' THEN v END \
                     FROM (SELECT json_extract(?1, '$.toolInput') AS v)",
                    [&line],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(story_text(raw), sqlite.map(input_text), "{raw}");
        }
    }

    #[test]
    fn a_long_input_is_kept_cut_and_known_as_cut() {
        let exact = "é".repeat(STORED_CHARS);
        assert_eq!(stored(exact.clone()), exact);
        assert!(!is_cut(&exact));
        let long = format!("{exact}more");
        let kept = stored(long);
        assert_eq!(kept, format!("{exact}…"));
        assert!(is_cut(&kept));
        assert!(!is_cut("short…"));
    }
}
