//! The turns and tool results of a Claude Code transcript or a Copilot event log, for
//! `cmstore import` (issue 37).
//!
//! Turns are assembled as the
//! hooks assemble them, made into the line a hook would have written for each (a synthetic
//! Stop: redacted, without text when `store_text = false`, left out when `[events]` switches
//! Stop off), and written into `turns` as imported ([`crate::store::imported_turns`]), never
//! into the queue: the ContextManager extension would show months of old turns as new cards.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::Error;
use crate::config::Config;
use crate::files::debug_log::DebugLog;
use crate::files::transcript::SeenSession;
use crate::hook::capture;
use crate::model::queue_line::parse::parse_line as parse_queue_line;
use crate::model::transcript::items::{
    claude_tool_calls, claude_tool_results, ToolCallItem, ToolResultItem,
};
use crate::model::transcript::parse::{line_time, parse_value, records_of};
use crate::model::transcript::usage::{self, UsageRecord};
use crate::model::transcript::{claude_fast, gemini};
use crate::model::transcript::{Assembler, OpenTurn, ParseOptions, Record, Turn};
use crate::store::imported_turns;

/// The turns of one transcript file, as its lines are read.
pub struct TurnReader {
    assembler: Assembler,
    options: ParseOptions,
    /// Each turn's session and the time of its prompt's line, by turn id.
    sessions: HashMap<String, (String, Option<i64>)>,
    /// The session whose hooks read the file, when its path says
    /// ([`claude_file_session`]).
    file_session: Option<String>,
    /// The working directory the first prompt line of each session names.
    cwds: HashMap<String, String>,
    /// The tool results read since the last take.
    results: Vec<ToolResultItem>,
    /// A Gemini CLI chat's reader: its lines are messages ([`gemini::records`]).
    gemini_chat: bool,
}

/// The session whose hooks read the Claude Code transcript at `path`, as its path names it:
/// `<session>.jsonl`, and a subagent's `<session>/subagents/agent-<id>.jsonl`. Every turn of
/// the file is that session's, as the hooks record it (a resumed session's file holds the
/// earlier sessions' lines too, under their own ids). `None` for a file named otherwise (a
/// copy renamed): its turns are the sessions their lines name.
pub fn claude_file_session(path: &Path) -> Option<String> {
    let stem = path.file_stem()?.to_str()?;
    let named = if stem.starts_with("agent-") {
        let subagents = path
            .parent()
            .filter(|p| p.file_name() == Some("subagents".as_ref()))?;
        subagents.parent()?.file_name()?.to_str()?
    } else {
        stem
    };
    uuid::Uuid::parse_str(named).ok().map(|_| named.to_owned())
}

/// What a Claude Code line shows besides its turn.
#[derive(Debug, Default)]
pub struct Shown {
    /// Its response's usage, in the turn going on.
    pub usage: Option<UsageRecord>,
    /// Its tool calls.
    pub calls: Vec<ToolCallItem>,
}

/// A turn read, with its session.
pub struct ReadTurn {
    session: String,
    turn: Turn,
    /// When its prompt was written, if its line says: when the turn began.
    started: Option<i64>,
}

impl ReadTurn {
    /// `turn` of `session`, begun at `started`.
    pub fn new(session: String, turn: Turn, started: Option<i64>) -> ReadTurn {
        ReadTurn {
            session,
            turn,
            started,
        }
    }

    /// The session it belongs to.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// When it happened (its latest line's time), if its lines say.
    pub fn ts(&self) -> Option<i64> {
        self.turn.ts
    }
}

impl TurnReader {
    /// A reader of a file read with `options` (a subagent's file reads its sidechain lines),
    /// all of whose turns are `file_session`'s when its path names one; else each turn is the
    /// session its prompt's line names.
    pub fn new(options: ParseOptions, file_session: Option<String>) -> TurnReader {
        TurnReader {
            assembler: Assembler::default(),
            options,
            sessions: HashMap::new(),
            file_session,
            cwds: HashMap::new(),
            results: Vec::new(),
            gemini_chat: false,
        }
    }

    /// A reader of a Gemini CLI JSONL chat of `session` (its messages, keyed by their ids:
    /// a turn by its prompt's).
    pub fn gemini(session: String) -> TurnReader {
        TurnReader {
            gemini_chat: true,
            ..TurnReader::new(ParseOptions::default(), Some(session))
        }
    }

    /// The working directory the first prompt line of each of the file's sessions names.
    pub fn cwds(&self) -> &HashMap<String, String> {
        &self.cwds
    }

    /// Feeds the line (newline excluded) that starts at byte `offset`.
    pub fn feed(&mut self, offset: u64, bytes: &[u8]) {
        self.read(offset, bytes, false);
    }

    /// Feeds a Claude Code transcript's line (newline excluded) that starts at byte `offset`;
    /// returns what else it shows, read in the same pass: its response's usage (in the turn
    /// going on) and its tool calls.
    pub fn feed_claude(&mut self, offset: u64, bytes: &[u8]) -> Shown {
        self.read(offset, bytes, true).unwrap_or_default()
    }

    fn read(&mut self, offset: u64, bytes: &[u8], shown: bool) -> Option<Shown> {
        // Most lines are read the fast way; no prompt is (its session is read below).
        let fast = (!self.gemini_chat)
            .then(|| claude_fast::read(bytes, self.options, offset))
            .flatten();
        if let Some(line) = fast {
            let mut usage = line.usage;
            if let Some(record) = usage.as_mut() {
                record.turn_id = self.open_turn_id();
            }
            self.results.extend(line.results);
            self.assembler.at(line.ts);
            for record in line.records {
                self.assembler.feed(offset, record);
            }
            return Some(Shown {
                usage,
                calls: line.calls,
            });
        }
        let value = parse_value(bytes)?;
        let shown = shown.then(|| {
            let mut usage = usage::from_parsed(&value, bytes, offset);
            if let Some(record) = usage.as_mut() {
                record.turn_id = self.open_turn_id();
            }
            let calls = claude_tool_calls(bytes);
            Shown { usage, calls }
        });
        self.results.extend(claude_tool_results(&value));
        let ts = line_time(&value);
        self.assembler.at(ts);
        let records = match self.gemini_chat {
            true => gemini::records(&value),
            false => records_of(&value, self.options),
        };
        for record in records {
            if let Record::UserPrompt { id: Some(id), .. } = &record {
                let text = |key: &str| value.get(key).and_then(|v| v.as_str());
                let session = self
                    .file_session
                    .clone()
                    .or_else(|| text("sessionId").map(str::to_owned));
                if let Some(session) = session {
                    if let Some(cwd) = text("cwd").filter(|c| !c.is_empty()) {
                        self.cwds
                            .entry(session.clone())
                            .or_insert_with(|| cwd.to_owned());
                    }
                    self.sessions.insert(id.clone(), (session, ts));
                }
            }
            self.assembler.feed(offset, record);
        }
        shown
    }

    /// The id of the turn going on: the turn of the responses read now.
    pub fn open_turn_id(&self) -> Option<String> {
        self.assembler.open().and_then(|o| o.turn_id.clone())
    }

    /// The tool results read so far, taken.
    pub fn take_results(&mut self) -> Vec<ToolResultItem> {
        std::mem::take(&mut self.results)
    }

    /// The turns completed so far, taken.
    pub fn take_completed(&mut self) -> Vec<ReadTurn> {
        let turns = self.assembler.take_completed();
        self.with_sessions(turns)
    }

    /// The turns completed since the last take, then the turn still going at the end of the
    /// file if it has any output (as a Stop read now would record it).
    pub fn finish(mut self) -> Vec<ReadTurn> {
        let mut turns = self.assembler.take_completed();
        let open = self.assembler.open().filter(|o| o.has_output());
        turns.extend(open.map(|o: &OpenTurn| o.to_turn(false)));
        self.with_sessions(turns)
    }

    /// `turns` with their sessions; a turn without an id, or whose session is unknown, is
    /// left out: nothing could tell it from the hooks' record of it.
    fn with_sessions(&mut self, turns: Vec<Turn>) -> Vec<ReadTurn> {
        turns
            .into_iter()
            .filter_map(|turn| {
                let (session, started) = self.sessions.remove(turn.turn_id.as_deref()?)?;
                Some(ReadTurn {
                    session,
                    turn,
                    started,
                })
            })
            .collect()
    }
}

/// What writing turns did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Turns written (new rows, or rows filled in or completed).
    pub turns: u64,
    /// Turns older than what `prune` deleted: left out, as a queue read again leaves them.
    pub pruned: u64,
}

/// The file's facts every turn's line carries.
pub struct FileFacts<'a> {
    /// The transcript's path.
    pub path: &'a str,
    /// The agent, as lines name it.
    pub agent: &'static str,
    /// A subagent's transcript: its turns are `SubagentStop`s.
    pub subagent: bool,
    /// Each session's working directory, where a line named it.
    pub cwds: &'a HashMap<String, String>,
}

/// Writes `turns` in one short transaction, each as the line a hook would have written for it
/// under `config` ([`capture::closed_entries`]) made into an imported `turns` row.
pub fn write(
    conn: &mut Connection,
    config: &Config,
    turns: Vec<ReadTurn>,
    file: &FileFacts<'_>,
    now_ms: i64,
) -> Result<Written, Error> {
    let mut written = Written::default();
    if turns.is_empty() {
        return Ok(written);
    }
    // A subagent's turns are what its SubagentStop records: `[events]` switches them by that.
    let config = match file.subagent {
        true => Cow::Owned(as_subagent_stops(config)),
        false => Cow::Borrowed(config),
    };
    let config = config.as_ref();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let pruned_before = pruned_before(&tx)?;
    let mut log = DebugLog::default();
    for (session, turns) in by_session(turns) {
        // By when the turn began: a hook's row, and so the watermark, is dated by its Stop,
        // which Claude Code writes lines after (`turn_duration`).
        let (kept, old): (Vec<ReadTurn>, Vec<ReadTurn>) = turns
            .into_iter()
            .partition(|t| t.started.or(t.turn.ts).is_none_or(|ts| ts >= pruned_before));
        written.pruned += old.len() as u64;
        let seen = SeenSession {
            session: session.clone(),
            transcript: file.path.to_owned(),
            agent: Some(file.agent.to_owned()),
            participant: None,
            ended_ms: None,
            noted_ms: None,
        };
        let cwd = file.cwds.get(&session).map_or("", String::as_str);
        let mut started: HashMap<String, i64> = HashMap::new();
        let kept: Vec<Turn> = kept
            .into_iter()
            .map(|t| {
                if let (Some(id), Some(ts)) = (&t.turn.turn_id, t.started) {
                    started.insert(id.clone(), ts);
                }
                t.turn
            })
            .collect();
        let entries = capture::closed_entries(config, None, (cwd, &seen), &kept, now_ms, &mut log);
        for entry in entries {
            let line = serde_json::to_vec(&entry).expect("a queue entry serializes");
            // The same parse ingest gives the line: the row is what the hook's line makes.
            let Ok(row) = parse_queue_line(&line, now_ms) else {
                continue;
            };
            let began = row
                .turn_id
                .as_deref()
                .and_then(|id| started.get(id).copied());
            if imported_turns::upsert(&tx, &row, file.subagent, began)? {
                written.turns += 1;
            }
        }
    }
    tx.commit()?;
    Ok(written)
}

/// `config` with `[events]`' SubagentStop switch in place of its Stop switch: the entries a
/// subagent's turns are made into are Stops until they are written.
fn as_subagent_stops(config: &Config) -> Config {
    let mut config = config.clone();
    match config.events.get("SubagentStop").copied() {
        Some(on) => config.events.insert("Stop".to_owned(), on),
        None => config.events.remove("Stop"),
    };
    config
}

/// `turns` grouped by session, each session's in their order.
fn by_session(turns: Vec<ReadTurn>) -> Vec<(String, Vec<ReadTurn>)> {
    let mut groups: Vec<(String, Vec<ReadTurn>)> = Vec::new();
    for turn in turns {
        match groups.iter_mut().find(|(s, _)| *s == turn.session) {
            Some((_, group)) => group.push(turn),
            None => groups.push((turn.session.clone(), vec![turn])),
        }
    }
    groups
}

/// The time before which `prune` deleted what was stored (`meta.pruned_before`).
pub fn pruned_before(conn: &Connection) -> rusqlite::Result<i64> {
    Ok(conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'pruned_before'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(i64::MIN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transcripts_session_is_the_one_its_path_names() {
        let id = "5aab28de-84f9-4096-9c8b-6f9bc4360a2c";
        let main = format!("/h/.claude/projects/-w/{id}.jsonl");
        assert_eq!(claude_file_session(Path::new(&main)).as_deref(), Some(id));
        let sub = format!("/h/.claude/projects/-w/{id}/subagents/agent-a2df51c9.jsonl");
        assert_eq!(claude_file_session(Path::new(&sub)).as_deref(), Some(id));
        for other in [
            "/fixtures/transcript-4.jsonl",
            "/h/.claude/projects/-w/agent-a2df51c9.jsonl",
            "/h/x/not-a-session/subagents/agent-a1.jsonl",
        ] {
            assert_eq!(claude_file_session(Path::new(other)), None, "{other}");
        }
    }

    /// A resumed session's file holds the earlier sessions' lines: their turns are the
    /// session's whose hooks read the file, as the hooks record them.
    #[test]
    fn every_turn_of_a_resumed_sessions_file_is_its_own() {
        let id = "5aab28de-84f9-4096-9c8b-6f9bc4360a2c";
        let path = format!("/p/{id}.jsonl");
        let mut reader = TurnReader::new(
            ParseOptions::default(),
            claude_file_session(Path::new(&path)),
        );
        let lines = [
            r#"{"type":"user","uuid":"u1","sessionId":"earlier","cwd":"/w","message":{"role":"user","content":"first"}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"earlier","message":{"id":"m1","content":[{"type":"text","text":"one"}]}}"#,
            r#"{"type":"user","uuid":"u2","sessionId":"5aab28de-84f9-4096-9c8b-6f9bc4360a2c","message":{"role":"user","content":"second"}}"#,
            r#"{"type":"assistant","uuid":"a2","sessionId":"5aab28de-84f9-4096-9c8b-6f9bc4360a2c","message":{"id":"m2","content":[{"type":"text","text":"two"}]}}"#,
        ];
        for (i, line) in lines.iter().enumerate() {
            reader.feed(i as u64, line.as_bytes());
        }
        assert_eq!(reader.cwds().get(id).map(String::as_str), Some("/w"));
        let turns = reader.finish();
        let got: Vec<(&str, &str)> = turns
            .iter()
            .map(|t| (t.session(), t.turn.assistant.as_str()))
            .collect();
        assert_eq!(got, [(id, "one"), (id, "two")]);

        let mut renamed = TurnReader::new(
            ParseOptions::default(),
            claude_file_session(Path::new("/p/copy.jsonl")),
        );
        for (i, line) in lines.iter().enumerate() {
            renamed.feed(i as u64, line.as_bytes());
        }
        let sessions: Vec<String> = renamed
            .finish()
            .iter()
            .map(|t| t.session().to_owned())
            .collect();
        assert_eq!(sessions, ["earlier", id]);
    }
}
