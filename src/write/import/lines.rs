//! One line-oriented transcript (Claude Code, Codex, Copilot CLI and VS Code, Gemini CLI's
//! JSONL chats, Qwen Code) read line by line into batches for the writer: its responses'
//! usage, the tool calls and results it shows, its turns. Pure but for the files a Gemini
//! chat's project is read from; nothing here touches the store.

use std::collections::HashMap;
use std::path::Path;

use super::turns::{self, ReadTurn, TurnReader};
use super::{
    codex_turn, copilot_start_cwd, gemini_project, is_qwen_subagent, note_cwd, Format,
    BATCH_RECORDS, BATCH_TURNS,
};
use crate::model::transcript::codex_items::codex_tool_items;
use crate::model::transcript::codex_turns::CodexTurnReader;
use crate::model::transcript::items::{ToolCallItem, ToolResultItem};
use crate::model::transcript::usage::{
    from_line, from_qwen_line, session_of_header, totals_of, CodexReader, UsageRecord,
};
use crate::model::transcript::ParseOptions;

/// What the reader hands the writer: what some lines of one file hold.
#[derive(Default)]
pub struct Batch {
    /// Responses' usage (a response's lines not yet merged: the writer dedups).
    pub records: Vec<UsageRecord>,
    /// Tool calls and results the lines show.
    pub shown: (Vec<ToolCallItem>, Vec<ToolResultItem>),
    /// Turns completed.
    pub turns: Vec<ReadTurn>,
    /// The file's session where its lines name none, as far as read.
    pub fallback: Option<String>,
    /// Each session's working directory, as far as read.
    pub cwds: HashMap<String, String>,
}

/// What is known of the file once it is read whole, besides its last batch.
pub struct End {
    /// The file's session where its lines name none.
    pub fallback: Option<String>,
    /// Each session's working directory.
    pub cwds: HashMap<String, String>,
    /// The working directory of the file's sessions that have none of their own.
    pub file_cwd: Option<String>,
    /// A Copilot log's responses and its own totals, for the cross-check.
    pub check: (Vec<UsageRecord>, Vec<UsageRecord>),
    /// Lines too long to read, passed over.
    pub too_long: u64,
}

/// The reading of one file: the state kept from line to line.
pub struct FileRead<'a> {
    format: Format,
    named: &'a Path,
    /// A Claude Code agent's own file (`agent-acompact-…`): copies of the parent's lines,
    /// whose turns are the parent's.
    own_agent: bool,
    fallback: Option<String>,
    turns: Option<TurnReader>,
    codex: CodexReader,
    codex_turns: Option<CodexTurnReader>,
    batch: Batch,
    cwds: HashMap<String, String>,
    copilot_cwd: Option<String>,
    check: (Vec<UsageRecord>, Vec<UsageRecord>),
    too_long: u64,
}

impl<'a> FileRead<'a> {
    /// The reading of the file `named` (its own name, or the name of the file a copy is of),
    /// of `format`.
    pub fn new(format: Format, named: &'a Path) -> FileRead<'a> {
        let name = named.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let options = ParseOptions {
            sidechain: name.starts_with("agent-"),
        };
        // Sessions a file names that the line does not.
        let fallback = format.session_of_path(named);
        // The turns of a Claude Code transcript or a Copilot event log, in the session whose
        // hooks read the file (a response's turn is the one going on). Of a subagent's file
        // only a task's (`agent-a<hex>.jsonl`) are recorded: Claude Code's own agents
        // (`agent-acompact-…` for a compaction, `agent-aside_question-…`) write copies of the
        // parent's lines, whose turns are the parent's.
        let own_agent = name
            .strip_prefix("agent-")
            .is_some_and(|rest| rest.trim_end_matches(".jsonl").contains('-'));
        let turns = match format {
            Format::Claude | Format::Qoder => {
                Some(TurnReader::new(options, turns::claude_file_session(named)))
            }
            Format::CopilotCli | Format::VscodeCopilot => {
                Some(TurnReader::new(options, fallback.clone()))
            }
            // A main chat's: a background subagent's (`subagents/<session>/…`) is not known to
            // the hooks by its turns.
            Format::Qwen if !is_qwen_subagent(named) => {
                Some(TurnReader::new(options, fallback.clone()))
            }
            _ => None,
        };
        FileRead {
            format,
            named,
            own_agent,
            codex: CodexReader::new(fallback.clone()),
            // A rollout's turns, by the turn ids Codex's hooks send; not a subagent's (whose
            // hooks' session is not known).
            codex_turns: (format == Format::Codex).then(|| CodexTurnReader::new(fallback.clone())),
            fallback,
            turns,
            batch: Batch::default(),
            cwds: HashMap::new(),
            copilot_cwd: None,
            check: Default::default(),
            too_long: 0,
        }
    }

    /// Reads one complete line, `bytes` at `offset`.
    pub fn feed(&mut self, offset: u64, bytes: &[u8]) {
        match self.format {
            Format::Codex => self.feed_codex(offset, bytes),
            Format::CopilotCli | Format::VscodeCopilot => self.feed_copilot(offset, bytes),
            Format::Gemini => self.feed_gemini(offset, bytes),
            Format::Qwen => {
                // Rows are linked to the session only, as Gemini CLI's are; the chat's records
                // are assembled into turns as the hooks' cursor assembles them.
                if let Some(record) = from_qwen_line(bytes, offset) {
                    note_cwd(&mut self.cwds, &record, self.fallback.as_deref(), bytes);
                    self.batch.records.push(record);
                }
                if let Some(reader) = self.turns.as_mut() {
                    reader.feed(offset, bytes);
                    self.batch.turns.extend(reader.take_completed());
                }
            }
            // Claude Code's, the formats above aside.
            _ => {
                let reader = self
                    .turns
                    .as_mut()
                    .expect("a Claude Code transcript's turns");
                let shown = reader.feed_claude(offset, bytes);
                self.batch.shown.0.extend(shown.calls);
                if let Some(record) = shown.usage {
                    note_cwd(&mut self.cwds, &record, self.fallback.as_deref(), bytes);
                    self.batch.records.push(record);
                }
                let done = reader.take_completed();
                if !self.own_agent {
                    self.batch.turns.extend(done);
                }
            }
        }
    }

    /// Counts a line too long to read.
    pub fn too_long(&mut self) {
        self.too_long += 1;
    }

    fn feed_codex(&mut self, offset: u64, bytes: &[u8]) {
        self.batch.records.extend(self.codex.feed(bytes, offset));
        if let Some(reader) = self.codex_turns.as_mut() {
            let ended = reader.feed(bytes);
            // A subagent's calls are left out as its turns are (its hooks' session is not
            // known), and a fork's copies of its parent's calls.
            if !reader.is_subagent() && !reader.in_copied_turn() {
                let (calls, ends) = codex_tool_items(bytes, reader.session());
                self.batch.shown.0.extend(calls);
                self.batch.shown.1.extend(ends);
            }
            self.batch.turns.extend(codex_turn(reader, ended));
        }
    }

    /// A Gemini CLI JSONL chat's line: its header names the session (and whether the chat
    /// is a subagent's, whose turns the hooks do not know); its messages are turns, keyed by
    /// their prompts' record ids as capture keys them at `AfterAgent`.
    fn feed_gemini(&mut self, offset: u64, bytes: &[u8]) {
        if self.fallback.is_none() {
            self.fallback = session_of_header(bytes);
            let subagent = memchr::memmem::find(bytes, br#""kind":"subagent""#).is_some();
            if let Some(session) = self.fallback.clone().filter(|_| !subagent) {
                self.turns = Some(TurnReader::gemini(session));
            }
        }
        let mut records = from_line(bytes, offset);
        if let Some(reader) = self.turns.as_mut() {
            reader.feed(offset, bytes);
            if let Some(record) = records.as_mut() {
                record.turn_id = reader.open_turn_id();
            }
            self.batch.turns.extend(reader.take_completed());
        }
        self.batch.records.extend(records);
    }

    fn feed_copilot(&mut self, offset: u64, bytes: &[u8]) {
        if self.copilot_cwd.is_none() {
            self.copilot_cwd = copilot_start_cwd(bytes);
        }
        let response = from_line(bytes, offset);
        self.check.0.extend(response.clone());
        self.batch.records.extend(response);
        if let Some(reader) = self.turns.as_mut() {
            reader.feed(offset, bytes);
            self.batch.turns.extend(reader.take_completed());
        }
        for total in totals_of(None, bytes, offset) {
            // Totals grow from one shutdown to the next: the last per model is kept.
            self.check
                .1
                .retain(|t: &UsageRecord| t.model != total.model);
            self.check.1.push(total.clone());
            self.batch.records.push(total);
        }
    }

    /// Whether the batch read so far is due for the writer.
    pub fn is_full(&self) -> bool {
        let b = &self.batch;
        b.records.len() >= BATCH_RECORDS
            || b.shown.0.len() + b.shown.1.len() >= BATCH_RECORDS
            || b.turns.len() >= BATCH_TURNS
    }

    /// The batch read so far, with the tool results the turns' reader holds.
    pub fn take(&mut self) -> Batch {
        let mut batch = std::mem::take(&mut self.batch);
        if let Some(reader) = self.turns.as_mut() {
            batch.shown.1.extend(reader.take_results());
        }
        batch.fallback = self.fallback.clone();
        batch.cwds = self.cwds.clone();
        batch
    }

    /// The file read whole: its last batch (with the turns still open at its end), and what
    /// is known of it.
    pub fn finish(mut self) -> (Batch, End) {
        let mut last = self.take();
        if let Some(reader) = self.codex_turns.as_mut() {
            let open = reader.take_open();
            last.turns.extend(codex_turn(reader, open));
        }
        for (session, cwd) in self
            .turns
            .as_ref()
            .map(TurnReader::cwds)
            .into_iter()
            .flatten()
        {
            self.cwds
                .entry(session.clone())
                .or_insert_with(|| cwd.clone());
        }
        if !self.own_agent {
            last.turns
                .extend(self.turns.map(TurnReader::finish).unwrap_or_default());
        }
        last.cwds = self.cwds.clone();
        let file_cwd = match self.format {
            Format::Claude
            | Format::Qoder
            | Format::Qwen
            | Format::Droid
            | Format::Opencode
            | Format::Kilo
            | Format::Goose
            | Format::Kimi
            | Format::Cline => None,
            Format::Codex => self.codex.cwd().map(str::to_owned),
            Format::Gemini | Format::GeminiJson => gemini_project(self.named),
            Format::CopilotCli | Format::VscodeCopilot => self.copilot_cwd,
        };
        let end = End {
            fallback: self.fallback,
            cwds: self.cwds,
            file_cwd,
            check: self.check,
            too_long: self.too_long,
        };
        (last, end)
    }
}
