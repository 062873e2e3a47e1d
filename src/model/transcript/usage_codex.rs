//! The usage of API responses, read from Codex rollouts (pure, with state per file).
//!
//! A rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`) is JSON Lines of
//! `{timestamp, type, payload}`: `session_meta` (`payload.id`, the session), `turn_context`
//! (`payload.model`, and `payload.turn_id` where the version writes it), `response_item` and
//! `event_msg`. After each model response Codex writes an `event_msg` of `payload.type:
//! "token_count"` whose `payload.info` holds `last_token_usage` (that response) and
//! `total_token_usage` (the session's running sum of every `last_token_usage`). It writes the
//! same event again, unchanged, when only the rate limits moved, and `info` is null before the
//! first response.
//!
//! So one response is one *distinct running total*: the key is
//! `codex:<session>:<total_token_usage.total_tokens>`, a repeated event has the same key
//! (counted once), and a re-read of the file, from anywhere, finds the same keys. The running
//! total is never counted as a response. An event whose `last_token_usage` has neither input nor
//! output (Codex's "context window full" marker, which only sets `total_tokens`) is no response.
//!
//! OpenAI's counts overlap: `input_tokens` includes `cached_input_tokens`, and
//! `output_tokens` includes `reasoning_output_tokens`. Stored the Anthropic way:
//! `input_tokens = input - cached`, `cache_read_tokens = cached`, `output_tokens = output`.
//! Verified against Codex's source (`TokenUsageInfo::append_last_usage`) and end to end
//! against Codex 0.171.0 (tests/e2e/codex.rs); the unit tests compose `token_count` lines in
//! that shape (the recorded rollout, tests/fixtures/payloads/codex-0.171-rollout.jsonl, has
//! none) between real lines of the recorded rollout.
//!
//! Capture's transcript cursor and `cmstore import` both read rollouts with this reader, so
//! both give a response the same key. The cursor keeps the reader's state (session, model,
//! turn) between hooks; one that starts mid-file has seen no `turn_context` yet, and its
//! records have no model and no turn until one comes (never a guessed one).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::model::queue_line::usage::UsageRecord;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow)]
    turn_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    cwd: Option<Cow<'a, str>>,
    info: Option<Info>,
}

#[derive(Deserialize)]
struct Info {
    total_token_usage: Option<Counts>,
    last_token_usage: Option<Counts>,
}

#[derive(Deserialize)]
struct Counts {
    input_tokens: Option<u64>,
    cached_input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    reasoning_output_tokens: Option<u64>,
    total_tokens: Option<u64>,
}

/// Reads one rollout from its first line on: remembers the session, the model and the turn
/// the lines so far named, and gives the usage of each response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodexReader {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    turn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
}

impl CodexReader {
    /// A reader for a rollout whose `session_meta` may be missing: `fallback` is the session
    /// (the uuid at the end of its file name), until a `session_meta` line names one.
    pub fn new(fallback: Option<String>) -> CodexReader {
        CodexReader {
            session: fallback,
            ..CodexReader::default()
        }
    }

    /// The session of a rollout named `rollout-<time>-<uuid>.jsonl`: its last 36 characters.
    pub fn session_of_path(path: &std::path::Path) -> Option<String> {
        let stem = path.file_stem()?.to_str()?;
        if !stem.starts_with("rollout-") {
            return None;
        }
        let uuid = stem.get(stem.len().checked_sub(36)?..)?;
        (uuid.len() == 36 && uuid.chars().filter(|&c| c == '-').count() == 4)
            .then(|| uuid.to_owned())
    }

    /// The session's working directory: its `session_meta`'s `cwd`, else (a rollout read
    /// without it) the first `turn_context`'s; `None` before either.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// Forgets the model and turn: the lines since they were read are skipped (a gap), and
    /// a `turn_context` in the gap may have changed them. The session and cwd stay.
    pub fn forget_turn(&mut self) {
        self.model = None;
        self.turn = None;
    }

    /// The usage one line (newline excluded) at byte `offset` reports, if any. Lines that
    /// name none of `session_meta`, `turn_context` and `token_count` are not parsed.
    pub fn feed(&mut self, bytes: &[u8], offset: u64) -> Option<UsageRecord> {
        let interesting = [&b"token_count"[..], b"turn_context", b"session_meta"]
            .iter()
            .any(|needle| memchr::memmem::find(bytes, needle).is_some());
        if !interesting {
            return None;
        }
        self.feed_line(serde_json::from_slice(bytes.trim_ascii()).ok()?, offset)
    }

    /// [`CodexReader::feed`] of a line already parsed (the transcript cursor parses every
    /// line once): the same record. Only lines of the three types that matter are read.
    pub fn feed_value(&mut self, value: &serde_json::Value, offset: u64) -> Option<UsageRecord> {
        let kind = value.get("type").and_then(serde_json::Value::as_str)?;
        if !matches!(kind, "session_meta" | "turn_context" | "event_msg") {
            return None;
        }
        self.feed_line(Line::deserialize(value).ok()?, offset)
    }

    fn feed_line(&mut self, line: Line<'_>, offset: u64) -> Option<UsageRecord> {
        let payload = line.payload?;
        let owned = |v: Option<Cow<'_, str>>| v.filter(|s| !s.is_empty()).map(Cow::into_owned);
        match line.kind.as_deref() {
            Some("session_meta") => {
                if let Some(id) = owned(payload.id) {
                    self.session = Some(id);
                }
                if let Some(cwd) = owned(payload.cwd) {
                    self.cwd = Some(cwd);
                }
                None
            }
            Some("turn_context") => {
                if let Some(model) = owned(payload.model) {
                    self.model = Some(model);
                }
                if self.cwd.is_none() {
                    self.cwd = owned(payload.cwd);
                }
                self.turn = owned(payload.turn_id);
                None
            }
            Some("event_msg") if payload.kind.as_deref() == Some("token_count") => {
                self.record(payload.info?, line.timestamp.as_deref(), offset)
            }
            _ => None,
        }
    }

    fn record(&self, info: Info, ts: Option<&str>, offset: u64) -> Option<UsageRecord> {
        let last = info.last_token_usage?;
        let running = info.total_token_usage?.total_tokens?;
        let input = last.input_tokens.unwrap_or(0);
        let output = last.output_tokens.unwrap_or(0);
        if input == 0 && output == 0 {
            return None;
        }
        let cached = last.cached_input_tokens.unwrap_or(0).min(input);
        let session = self.session.as_deref()?;
        Some(UsageRecord {
            message_id: format!("codex:{session}:{running}"),
            model: self.model.clone(),
            input: input - cached,
            output,
            reasoning: last.reasoning_output_tokens.map(|r| r.min(output)),
            cache_read: cached,
            ts: ts.and_then(crate::support::clock::rfc3339_ms),
            session_id: Some(session.to_owned()),
            turn_id: self.turn.clone(),
            offset,
            ..UsageRecord::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Composed lines, in the shape of Codex's protocol types (`TokenUsage`, `TokenUsageInfo`);
    // no rollout of a real Codex run was at hand.
    const META: &str = r#"{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{"id":"0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000","cwd":"/w","originator":"codex_cli_rs","cli_version":"0.171.0"}}"#;
    const TURN: &str = r#"{"timestamp":"2026-03-01T10:00:01.000Z","type":"turn_context","payload":{"cwd":"/w","model":"gpt-5-codex","turn_id":"t1"}}"#;
    const NULL_INFO: &str = r#"{"timestamp":"2026-03-01T10:00:01.500Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":7.0}}}}"#;

    fn count(last: [u64; 5], total: [u64; 5]) -> String {
        let usage = |[i, c, o, r, t]: [u64; 5]| {
            serde_json::json!({"input_tokens": i, "cached_input_tokens": c, "output_tokens": o,
                "reasoning_output_tokens": r, "total_tokens": t})
        };
        serde_json::json!({"timestamp": "2026-03-01T10:00:02.000Z", "type": "event_msg",
            "payload": {"type": "token_count", "info": {"total_token_usage": usage(total),
            "last_token_usage": usage(last), "model_context_window": 272000}}})
        .to_string()
    }

    fn read(lines: &[String]) -> Vec<UsageRecord> {
        let mut reader = CodexReader::new(None);
        let mut offset = 0;
        let mut out = Vec::new();
        for line in lines {
            out.extend(reader.feed(line.as_bytes(), offset));
            offset += line.len() as u64 + 1;
        }
        crate::model::queue_line::usage::dedup(out)
    }

    #[test]
    fn each_response_once_a_repeated_event_and_the_running_total_never() {
        let first = [5000, 4000, 300, 120, 5300];
        let second = [6100, 5000, 80, 0, 6180];
        let both = [11100, 9000, 380, 120, 11480];
        let lines = vec![
            META.to_owned(),
            TURN.to_owned(),
            NULL_INFO.to_owned(),
            count(first, first),
            count(first, first), // the same event again: only the rate limits moved
            count(second, both),
        ];
        let rows = read(&lines);
        let got: Vec<_> = rows
            .iter()
            .map(|r| (r.message_id.as_str(), r.input, r.cache_read, r.output))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "codex:0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000:5300",
                    1000,
                    4000,
                    300
                ),
                (
                    "codex:0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000:11480",
                    1100,
                    5000,
                    80
                ),
            ]
        );
        // Stored columns add up to Codex's own total (reasoning is inside output).
        assert!(rows
            .iter()
            .zip([first, second])
            .all(|(r, c)| r.input + r.cache_read + r.output == c[4]));
        // The reasoning is kept apart, as a part of the output.
        let reasoning: Vec<_> = rows.iter().map(|r| r.reasoning).collect();
        assert_eq!(reasoning, [Some(120), Some(0)]);
        assert_eq!(rows[0].model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(rows[0].turn_id.as_deref(), Some("t1"));
        assert_eq!(
            rows[0].session_id.as_deref(),
            Some("0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000")
        );
        assert_eq!(rows[0].ts, Some(1_772_359_202_000));
    }

    #[test]
    fn a_re_read_from_the_middle_finds_the_same_keys() {
        let first = [5000, 4000, 300, 120, 5300];
        let second = [6100, 5000, 80, 0, 6180];
        let lines = vec![
            META.to_owned(),
            TURN.to_owned(),
            count(first, first),
            count(second, [11100, 9000, 380, 120, 11480]),
        ];
        let whole = read(&lines);
        let mut tail = CodexReader::new(Some("0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000".into()));
        let late = tail.feed(lines[3].as_bytes(), 999).unwrap();
        assert_eq!(late.key(), whole[1].key());
    }

    #[test]
    fn a_context_window_marker_and_unknown_sessions_give_nothing() {
        let marker = count([0, 0, 0, 0, 4000], [0, 0, 0, 0, 272000]);
        assert!(read(&[META.to_owned(), marker]).is_empty());
        let orphan = count([10, 0, 2, 0, 12], [10, 0, 2, 0, 12]);
        assert!(CodexReader::new(None).feed(orphan.as_bytes(), 0).is_none());
    }

    #[test]
    fn the_session_of_a_rollout_is_the_uuid_its_name_ends_with() {
        use std::path::Path;
        let p = Path::new(
            "/h/.codex/sessions/2026/03/01/rollout-2026-03-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000.jsonl",
        );
        assert_eq!(
            CodexReader::session_of_path(p).as_deref(),
            Some("0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000")
        );
        assert_eq!(
            CodexReader::session_of_path(Path::new("/x/sess-1.jsonl")),
            None
        );
    }
}

/// Capture's transcript cursor on rollouts: the same records as `cmstore import`'s reading.
#[cfg(test)]
mod cursor_tests {
    use std::io::Write;
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::files::transcript::Tracker;

    const SID: &str = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000";

    fn meta() -> String {
        format!(
            r#"{{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{{"id":"{SID}","cwd":"/w"}}}}"#
        )
    }

    fn turn(model: &str, id: &str) -> String {
        serde_json::json!({"timestamp": "2026-03-01T10:00:01.000Z", "type": "turn_context",
            "payload": {"cwd": "/w", "model": model, "turn_id": id}})
        .to_string()
    }

    /// A `token_count` event in Codex 0.171.0's shape (as tests/e2e/codex.rs saw it).
    fn count(input: u64, cached: u64, output: u64, running: u64) -> String {
        let usage = |t: u64| {
            serde_json::json!({"input_tokens": input, "cached_input_tokens": cached,
                "cache_write_input_tokens": 0, "output_tokens": output,
                "reasoning_output_tokens": 0, "total_tokens": t})
        };
        serde_json::json!({"timestamp": "2026-03-01T10:00:02.000Z", "type": "event_msg",
            "payload": {"type": "token_count", "info": {"total_token_usage": usage(running),
            "last_token_usage": usage(input + output), "model_context_window": 258400,
            "last_usage_includes_reasoning": false}}})
        .to_string()
    }

    /// Lines of a real Codex 0.171 rollout (no `token_count` among them): the responses,
    /// calls and task events between the usage lines.
    fn real_lines() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/payloads/codex-0.171-rollout.jsonl"
        );
        std::fs::read_to_string(path).expect("the recorded rollout")
    }

    struct Rollout {
        dir: tempfile::TempDir,
        path: PathBuf,
    }

    impl Rollout {
        fn new() -> Rollout {
            let dir = tempfile::tempdir().unwrap();
            let path = dir
                .path()
                .join(format!("rollout-2026-03-01T10-00-00-{SID}.jsonl"));
            Rollout { dir, path }
        }

        fn append(&self, lines: &[String]) {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .unwrap();
            for line in lines {
                writeln!(file, "{}", line.trim_end()).unwrap();
            }
        }

        /// One Stop hook: the usage the cursor's read gives, then the cursor saved.
        fn hook(&self) -> Vec<UsageRecord> {
            let state = self.dir.path().join("state");
            let mut tracker = Tracker::open(&state, SID, &self.path).unwrap().unwrap();
            tracker.finish_turn().unwrap();
            let usage = tracker.take_usage();
            tracker.save().unwrap();
            usage
        }

        /// What `cmstore import` reads: the whole file, the session from the name as fallback.
        fn import(&self) -> Vec<UsageRecord> {
            read_all(&self.path)
        }
    }

    fn read_all(path: &Path) -> Vec<UsageRecord> {
        let text = std::fs::read(path).unwrap();
        let mut reader = CodexReader::new(CodexReader::session_of_path(path));
        let mut offset = 0;
        let mut out = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            out.extend(reader.feed(line, offset));
            offset += line.len() as u64 + 1;
        }
        crate::model::queue_line::usage::dedup(out)
    }

    /// A record as the tests compare it: key, input, cache read, output, model, turn.
    type Summary<'a> = (String, u64, u64, u64, Option<&'a str>, Option<&'a str>);

    fn summary(records: &[UsageRecord]) -> Vec<Summary<'_>> {
        records
            .iter()
            .map(|r| {
                (
                    r.message_id.clone(),
                    r.input,
                    r.cache_read,
                    r.output,
                    r.model.as_deref(),
                    r.turn_id.as_deref(),
                )
            })
            .collect()
    }

    #[test]
    fn hook_by_hook_the_cursor_gives_what_import_gives() {
        let rollout = Rollout::new();
        rollout.append(&[meta(), turn("gpt-5-codex", "t1")]);
        rollout.append(&real_lines().lines().map(str::to_owned).collect::<Vec<_>>());
        rollout.append(&[count(1200, 1000, 30, 1230), count(1200, 1000, 30, 1230)]);
        let first = rollout.hook();
        // The next hook reads only what was appended: the model and turn are the cursor's.
        rollout.append(&[count(1300, 1200, 20, 2550)]);
        let second = rollout.hook();
        rollout.append(&[turn("gpt-5.1-codex", "t2"), count(900, 0, 5, 3455)]);
        let third = rollout.hook();
        assert!(rollout.hook().is_empty(), "nothing new, nothing read");

        let captured: Vec<_> = [first, second, third].concat();
        let key = |t: u64| format!("codex:{SID}:{t}");
        let t1 = Some("t1");
        assert_eq!(
            summary(&captured),
            vec![
                (key(1230), 200, 1000, 30, Some("gpt-5-codex"), t1),
                (key(2550), 100, 1200, 20, Some("gpt-5-codex"), t1),
                (key(3455), 900, 0, 5, Some("gpt-5.1-codex"), Some("t2")),
            ]
        );
        assert_eq!(summary(&captured), summary(&rollout.import()));
        let offsets: Vec<u64> = captured.iter().map(|r| r.offset).collect();
        let imported: Vec<u64> = rollout.import().iter().map(|r| r.offset).collect();
        assert_eq!(offsets, imported, "the same line wins the upsert");
        assert!(captured
            .iter()
            .all(|r| r.session_id.as_deref() == Some(SID) && r.ts.is_some()));
    }

    #[test]
    fn a_cursor_starting_mid_file_keys_as_import_and_invents_no_model() {
        let rollout = Rollout::new();
        rollout.append(&[meta(), turn("gpt-5-codex", "t1")]);
        // More than the cold-start window of filler: a first hook starts past the
        // `session_meta` and the `turn_context`.
        let filler = real_lines();
        let copies = (crate::files::transcript::COLD_START_BYTES as usize / filler.len()) + 2;
        let lines: Vec<String> = filler.lines().map(str::to_owned).collect();
        for _ in 0..copies {
            rollout.append(&lines);
        }
        rollout.append(&[count(1200, 1000, 30, 1230)]);
        let cold = rollout.hook();
        let key = format!("codex:{SID}:1230");
        assert_eq!(summary(&cold), vec![(key, 200, 1000, 30, None, None)]);
        assert_eq!(cold[0].session_id.as_deref(), Some(SID));
        // Once a turn_context comes, its model and turn are used.
        rollout.append(&[turn("gpt-5-codex", "t2"), count(100, 0, 3, 1333)]);
        let later = rollout.hook();
        assert_eq!(later[0].model.as_deref(), Some("gpt-5-codex"));
        assert_eq!(later[0].turn_id.as_deref(), Some("t2"));
        let import = rollout.import();
        assert_eq!(
            [&cold[..], &later[..]]
                .concat()
                .iter()
                .map(|r| (r.key(), r.input, r.cache_read, r.output))
                .collect::<Vec<_>>(),
            import
                .iter()
                .map(|r| (r.key(), r.input, r.cache_read, r.output))
                .collect::<Vec<_>>()
        );
        assert_eq!(import[0].model.as_deref(), Some("gpt-5-codex"));
    }

    #[test]
    fn a_replaced_rollout_starts_a_fresh_reader() {
        let rollout = Rollout::new();
        rollout.append(&[meta(), turn("gpt-5-codex", "t1"), count(10, 0, 2, 12)]);
        assert_eq!(rollout.hook().len(), 1);
        // Rewritten from scratch (a shorter file with other first bytes), no turn_context.
        std::fs::write(&rollout.path, format!("{}\n", count(7, 0, 1, 8))).unwrap();
        let fresh = rollout.hook();
        assert_eq!(summary(&fresh), summary(&rollout.import()));
        assert_eq!(
            fresh[0].model, None,
            "the old file's model is not carried over"
        );
    }
}
