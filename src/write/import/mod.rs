//! `cmstore import`'s stage: existing Claude Code transcripts, Gemini CLI and Qwen Code chat
//! files, Codex rollouts and Copilot event logs into the `usage` table, the same rows capture
//! and ingest write (docs/usage.md), so a new user sees their history on day one; of a Claude
//! Code transcript also its turns and tool calls (its `turns` and `items` modules), under the
//! keys the hooks use. A file's agent is known
//! by its path: `…/chats/session-*.jsonl` is Gemini's, and so are its older JSON chats
//! (`session-*.json`, a subagent's `chats/<parent>/*.json`), `rollout-*.jsonl` Codex's,
//! `…/session-state/<session>/events.jsonl` Copilot CLI's, `…/GitHub.copilot-chat/transcripts/
//! *.jsonl` VS Code Copilot Chat's, `…/projects/<project>/chats/*.jsonl` Qwen Code's, any
//! other `.jsonl` a Claude Code transcript, unless its
//! first line is a payload Claude Code or Gemini CLI hands a hook (a hook logger's file):
//! such a file is passed over and counted.
//!
//! Streaming with bounded memory: each transcript is read line by line ([`LineReader`]; a line
//! longer than [`MAX_LINE_BYTES`] is passed over and counted), and its records are written
//! every [`BATCH_RECORDS`] in one short transaction. Idempotent: rows are upserted on the
//! response's key with the same counts and offsets, so a second run leaves the same rows.
//! It writes beside a running `cmstore ingest` the way `prune` does: through SQLite's write
//! lock (busy timeout) in short transactions, never touching the queue or its offsets.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::config::Config;
use crate::files::tail::{Line, LineReader};
use crate::files::transcript::archive;
use crate::files::transcript::cline as cline_session;
use crate::files::transcript::goose as goose_store;
use crate::files::transcript::kimi as kimi_log;
use crate::files::transcript::opencode as opencode_store;
use crate::model::redact::Redactor;
use crate::model::transcript::codex_turns::{CodexTurn, CodexTurnReader};
use crate::model::transcript::items::{ToolCallItem, ToolResultItem};
use crate::model::transcript::usage::{
    dedup, from_json_chat, is_chat_file, is_json_chat_file, is_qwen_chat_file, json_chat_parent,
    totals_differ, CodexReader, UsageRecord,
};
use crate::model::transcript::usage_droid;
use crate::model::transcript::ParseOptions;
use crate::store::{self, usage, Store};
use lines::{Batch, FileRead};
use turns::{ReadTurn, TurnReader};

mod items;
mod lines;
mod turns;

/// Records written per transaction.
pub const BATCH_RECORDS: usize = 2000;

/// Turns written per transaction: each holds its texts, tool inputs and outputs.
const BATCH_TURNS: usize = 200;

/// Longest transcript line read; longer ones (huge tool results) are skipped and counted. An
/// assistant line carrying usage is far shorter.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// The agent whose file is being read, by its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Claude,
    Gemini,
    /// Gemini CLI's older chat files: one JSON document each.
    GeminiJson,
    Codex,
    /// Copilot CLI's `session-state/<session>/events.jsonl`.
    CopilotCli,
    /// VS Code Copilot Chat's `GitHub.copilot-chat/transcripts/<session>.jsonl`: the same
    /// event envelope as Copilot CLI's.
    VscodeCopilot,
    /// Qwen Code's `projects/<project>/chats/<session>.jsonl`.
    Qwen,
    /// Droid's `.factory/sessions/<folder>/<session>.jsonl`, whose usage is the session's
    /// totals in the settings file beside it.
    Droid,
    /// OpenCode's SQLite store, `opencode/opencode.db`: its assistant messages.
    Opencode,
    /// Kilo's, `kilo/kilo.db`: OpenCode's store under Kilo's name.
    Kilo,
    /// Cline's `sessions/<id>/<id>.messages.json`: a session's transcript, one document.
    Cline,
    /// Qoder CLI's `.qoder/projects/<project>/<session>.jsonl`: Claude Code's lines.
    Qoder,
    /// Goose's SQLite store, `goose/sessions/sessions.db`: its sessions and messages.
    Goose,
    /// Kimi Code's `sessions/<workspace>/<session>/agents/<agent>/wire.jsonl`: a record log.
    Kimi,
}

impl Format {
    fn of(path: &Path) -> Format {
        let rollout = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("rollout-"));
        let named =
            |p: Option<&Path>, name: &str| p.and_then(Path::file_name).is_some_and(|n| n == name);
        let parent = path.parent();
        if rollout {
            Format::Codex
        } else if is_chat_file(path) {
            Format::Gemini
        } else if is_json_chat_file(path) {
            Format::GeminiJson
        } else if is_qwen_chat_file(path) {
            Format::Qwen
        } else if named(Some(path), "events.jsonl")
            && named(parent.and_then(Path::parent), "session-state")
        {
            Format::CopilotCli
        } else if named(parent, "transcripts")
            && named(parent.and_then(Path::parent), "GitHub.copilot-chat")
        {
            Format::VscodeCopilot
        } else if usage_droid::factory_of(path).is_some() {
            Format::Droid
        } else if opencode_store::is_store(path) {
            Format::Opencode
        } else if opencode_store::is_kilo_store(path) {
            Format::Kilo
        } else if goose_store::is_store(path) {
            Format::Goose
        } else if kimi_log::log_of(path).is_some() {
            Format::Kimi
        } else if cline_session::transcript_of(path).is_some() {
            Format::Cline
        } else if crate::files::transcript::history::is_qoders(path) {
            Format::Qoder
        } else {
            Format::Claude
        }
    }

    /// The session a file is named after: a transcript's or VS Code transcript's name, the
    /// uuid a rollout's name ends with, the folder of a Copilot CLI event log (a Gemini CLI
    /// chat file's header line names its own).
    fn session_of_path(self, path: &Path) -> Option<String> {
        let name = |p: Option<&Path>| p.map(|p| p.to_string_lossy().into_owned());
        match self {
            Format::Claude
            | Format::Qoder
            | Format::VscodeCopilot
            | Format::Qwen
            | Format::Droid => name(path.file_stem().map(Path::new)),
            Format::Codex => CodexReader::session_of_path(path),
            Format::CopilotCli => name(path.parent().and_then(Path::file_name).map(Path::new)),
            Format::Gemini
            | Format::GeminiJson
            | Format::Opencode
            | Format::Kilo
            | Format::Goose
            | Format::Cline => None,
            Format::Kimi => kimi_log::log_of(path).map(|(session, _)| session),
        }
    }

    /// The agent its rows are attributed to, as capture's lines name it.
    fn agent(self) -> &'static str {
        match self {
            Format::Claude => "claude",
            Format::Qoder => "qoder",
            Format::Gemini | Format::GeminiJson => "gemini",
            Format::Codex => "codex",
            Format::CopilotCli => "copilot",
            Format::VscodeCopilot => "vscode",
            Format::Qwen => "qwen",
            Format::Droid => "droid",
            Format::Opencode => "opencode",
            Format::Kilo => "kilo",
            Format::Cline => "cline",
            Format::Goose => "goose",
            Format::Kimi => "kimi",
        }
    }
}

/// Why an import failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A transcript or folder could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The store refused a write.
    #[error(transparent)]
    Store(#[from] store::Error),
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        Error::Store(store::Error::Sqlite(e))
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Sessions whose responses were checked against the agent's own totals, per agent
    /// (Copilot CLI's shutdown totals, OpenCode's and Cline's session totals).
    pub checked: std::collections::BTreeMap<&'static str, u64>,
    /// Of those, where they differ: `<agent> <session> <model>: counted …, the agent says …`.
    pub differing: Vec<String>,
    /// Transcripts read.
    pub files: u64,
    /// Files of hook payloads, not transcripts, passed over after their first line.
    pub hook_payload_files: u64,
    /// `.json` files named like Gemini CLI chats that hold no chat, passed over.
    pub not_chats: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Usage records read (lines of one response counted once per batch).
    pub records: u64,
    /// Lines longer than [`MAX_LINE_BYTES`], passed over.
    pub too_long: u64,
    /// Rows of `usage` before and after.
    pub rows_before: i64,
    /// See `rows_before`.
    pub rows_after: i64,
    /// Files passed over: an import read them before, and they have not changed since.
    pub unchanged: u64,
    /// Turns read from transcripts and written (new rows, or rows filled in or completed).
    pub turns: u64,
    /// Turns older than what `prune` deleted, left out.
    pub turns_pruned: u64,
    /// Rows of `turns` before and after.
    pub turn_rows_before: i64,
    /// See `turn_rows_before`.
    pub turn_rows_after: i64,
    /// Copies written into the archive (`archive_transcripts`).
    pub archived: u64,
    /// Files that could not be copied into the archive, each with why (they were imported).
    pub not_archived: Vec<String>,
}

impl Stats {
    /// Checks a session's counted `responses` against the agent's own `totals`.
    fn check(
        &mut self,
        agent: &'static str,
        session: &str,
        responses: &[UsageRecord],
        totals: &[UsageRecord],
    ) {
        *self.checked.entry(agent).or_default() += 1;
        let differing = totals_differ(responses, totals);
        self.differing.extend(
            differing
                .into_iter()
                .map(|d| format!("{agent} {session} {d}")),
        );
    }
}

/// Every `*.jsonl` file and Gemini CLI JSON chat at or under `roots` (folders are walked,
/// links not followed), with its size, sorted by path.
pub fn find_transcripts(roots: &[PathBuf]) -> Result<Vec<(PathBuf, u64)>, Error> {
    let mut found = Vec::new();
    for root in roots {
        walk(root, &mut found)?;
    }
    found.sort();
    found.dedup();
    Ok(found)
}

fn walk(path: &Path, found: &mut Vec<(PathBuf, u64)>) -> Result<(), Error> {
    let read_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::symlink_metadata(path).map_err(read_error)?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(read_error)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect();
        entries.sort();
        for entry in entries {
            walk(&entry, found)?;
        }
    } else if meta.is_file() && is_read(path) {
        found.push((path.to_path_buf(), meta.len()));
    }
    Ok(())
}

/// Whether an import reads the file at `path`: a transcript, or an archive's copy of a JSONL
/// transcript or a Gemini CLI JSON chat (the others need files beside theirs).
fn is_read(path: &Path) -> bool {
    if let Some(named) = archive::original_name(path) {
        return named.extension().is_some_and(|e| e == "jsonl") || is_json_chat_file(&named);
    }
    path.extension().is_some_and(|e| e == "jsonl")
        || is_json_chat_file(path)
        || opencode_store::is_store(path)
        || opencode_store::is_kilo_store(path)
        || goose_store::is_store(path)
        || cline_session::transcript_of(path).is_some()
}

/// How an import reads.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// Turns are recorded as this configuration has the hooks record them (redaction, text,
    /// the events switched off).
    pub config: &'a Config,
    /// Read every file, also those unchanged since an import read them.
    pub again: bool,
    /// Keep a compressed copy of each file in this archive folder
    /// ([`crate::files::transcript::archive`]), but of the files in it.
    pub archive: Option<&'a Path>,
}

/// Imports `files` into `store` as `options` say; `progress` is told the bytes read (or passed
/// over) so far, now and then. A file an import read before that has not changed since (its
/// size and modification time, `imported_files`) is passed over, but with `again`.
pub fn import(
    store: &Store,
    files: &[PathBuf],
    options: &Options<'_>,
    mut progress: impl FnMut(u64),
) -> Result<Stats, Error> {
    let config = options.config;
    let mut conn = store.conn()?;
    // Its temporary tables (the chain's notes, the statements' sorts) in memory rather than in
    // a temporary file: an import of a 256 MB transcript took 14 % less time, its peak memory
    // the same (30 MB; BENCHMARKS.md). Not for ingest, whose bulk index builds sort far more.
    // Changing it drops the connection's temporary schema, the chain's triggers with it: set
    // them up again.
    conn.execute_batch("PRAGMA temp_store = MEMORY")?;
    crate::store::chain::keyed::watch(&conn)?;
    let mut stats = Stats {
        rows_before: usage::count(&conn)?,
        turn_rows_before: count_turns(&conn)?,
        ..Stats::default()
    };
    // The sizes of the files passed over, so that the progress still reaches the total.
    let mut passed_over = 0;
    let archive = options.archive.map(Archive::new);
    for path in files {
        let stamp = stamp_of(path);
        if let Some(archive) = &archive {
            archive.keep(path, &mut stats);
        }
        if let (Some(stamp), false) = (stamp, options.again) {
            if read_before(&conn, path, stamp)? {
                stats.unchanged += 1;
                passed_over += stamp.0 as u64;
                progress(stats.bytes + passed_over);
                continue;
            }
        }
        let kind = import_file(&mut conn, path, config, &mut stats, &mut |b| {
            progress(b + passed_over)
        })?;
        if let Some(stamp) = stamp {
            note_read(&conn, path, stamp)?;
        }
        match kind {
            Kind::Transcript => stats.files += 1,
            Kind::HookPayloads { len } => {
                stats.hook_payload_files += 1;
                passed_over += len;
                progress(stats.bytes + passed_over);
            }
            Kind::NotAChat { len } => {
                stats.not_chats += 1;
                passed_over += len;
                progress(stats.bytes + passed_over);
            }
        }
    }
    stats.rows_after = usage::count(&conn)?;
    stats.turn_rows_after = count_turns(&conn)?;
    Ok(stats)
}

/// The archive an import keeps copies in, its folder and the user's home as the file system
/// names them.
struct Archive {
    root: PathBuf,
    home: Option<PathBuf>,
}

impl Archive {
    fn new(root: &Path) -> Archive {
        let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        Archive {
            root: canonical(root),
            home: crate::files::paths::user_home().map(|h| canonical(&h)),
        }
    }

    /// Keeps a copy of `path` (not of a copy, nor of OpenCode's store, a database), noting
    /// it in `stats`. Before the file is read: a copy is of the file as it was when it was
    /// read, or later.
    fn keep(&self, path: &Path, stats: &mut Stats) {
        if matches!(
            Format::of(path),
            Format::Opencode | Format::Kilo | Format::Goose
        ) {
            return;
        }
        // One file, one copy, whatever path named it (relative, through `..`).
        let source = match std::fs::canonicalize(path) {
            Ok(source) if !source.starts_with(&self.root) => source,
            Ok(_) => return,
            Err(err) => {
                let why = format!("{}: {err}", path.display());
                return stats.not_archived.push(why);
            }
        };
        let copy = archive::copy_path(&self.root, self.home.as_deref(), &source);
        match archive::keep(&source, &copy) {
            Ok(written) => stats.archived += u64::from(written),
            Err(err) => stats
                .not_archived
                .push(format!("{}: {err}", path.display())),
        }
    }
}

/// `turn`, read from a Codex rollout by `reader`, as a turn of the rollout's session; none of
/// a subagent's rollout or without a session or a turn id (nothing could tell it from the
/// hooks' record of it).
fn codex_turn(reader: &CodexTurnReader, turn: Option<CodexTurn>) -> Option<ReadTurn> {
    let turn = turn.filter(|t| t.turn.turn_id.is_some() && !reader.is_subagent())?;
    let session = reader.session()?.to_owned();
    Some(ReadTurn::new(session, turn.turn, turn.started))
}

/// A file's size and modification time (epoch ms), by which an import tells it has not
/// changed since it read it: of a Droid session, its transcript's and its settings file's
/// together (its usage is in the settings file beside the transcript); `None` for a file
/// always read again, OpenCode's store (its writes land in its WAL first), or one that cannot
/// be looked at.
fn stamp_of(path: &Path) -> Option<(i64, i64)> {
    let stamp = |file: &Path| -> Option<(i64, i64)> {
        let meta = std::fs::metadata(file).ok()?;
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?;
        Some((meta.len() as i64, modified.as_millis() as i64))
    };
    match Format::of(path) {
        Format::Opencode | Format::Kilo | Format::Goose => None,
        Format::Droid => {
            let (len, modified) = stamp(path)?;
            let settings = stamp(&usage_droid::settings_of(path)).unwrap_or((0, 0));
            Some((len + settings.0, modified.max(settings.1)))
        }
        _ => stamp(path),
    }
}

/// Whether an import read the file at `path` when it had `stamp`.
fn read_before(
    conn: &Connection,
    path: &Path,
    (size, modified): (i64, i64),
) -> Result<bool, Error> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM imported_files WHERE path = ?1 AND size = ?2 AND modified_ms = ?3",
        )?
        .exists(params![path.to_string_lossy(), size, modified])?)
}

/// Notes that the file at `path` was read whole as it was at `stamp` (taken before reading: a
/// file that grew meanwhile is read again next time).
fn note_read(conn: &Connection, path: &Path, (size, modified): (i64, i64)) -> Result<(), Error> {
    conn.prepare_cached(
        "INSERT INTO imported_files(path, size, modified_ms, imported_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(path) DO UPDATE SET size = ?2, modified_ms = ?3, imported_at = ?4",
    )?
    .execute(params![
        path.to_string_lossy(),
        size,
        modified,
        crate::support::clock::now_ms()
    ])?;
    Ok(())
}

/// Rows of `turns`.
fn count_turns(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT count(*) FROM turns", [], |r| r.get(0))
}

/// First and last time, the latest model and the working directory seen of one session.
#[derive(Debug, Default)]
struct Seen {
    first: i64,
    last: i64,
    model: Option<String>,
    cwd: Option<String>,
}

/// The `cwd` of a Claude Code line.
#[derive(serde::Deserialize)]
struct LineCwd<'a> {
    #[serde(borrow)]
    cwd: Option<std::borrow::Cow<'a, str>>,
}

/// Notes the working directory the line of `record` names, the first time its session has one.
fn note_cwd(
    cwds: &mut HashMap<String, String>,
    record: &UsageRecord,
    fallback: Option<&str>,
    bytes: &[u8],
) {
    let Some(session) = record.session_id.as_deref().or(fallback) else {
        return;
    };
    if cwds.contains_key(session) {
        return;
    }
    let cwd = serde_json::from_slice::<LineCwd<'_>>(bytes.trim_ascii())
        .ok()
        .and_then(|line| line.cwd)
        .filter(|cwd| !cwd.is_empty());
    if let Some(cwd) = cwd {
        cwds.insert(session.to_owned(), cwd.into_owned());
    }
}

/// The project a Gemini CLI chat file belongs to: `~/.gemini/tmp/<project>/.project_root`,
/// which Gemini CLI writes with the project's path (`chats/` is beside it); `None` when
/// there is none (older versions named the folder by a hash only).
fn gemini_project(chat: &Path) -> Option<String> {
    let chats = chat
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "chats"))?;
    let marker = chats.parent()?.join(".project_root");
    let text = std::fs::read_to_string(marker).ok()?;
    Some(text.trim().to_owned()).filter(|p| !p.is_empty())
}

/// What a file turned out to be.
enum Kind {
    /// A transcript, read to its end.
    Transcript,
    /// A file of hook payloads, `len` bytes, passed over after its first line.
    HookPayloads { len: u64 },
    /// A `.json` file named like a Gemini chat that is none, `len` bytes.
    NotAChat { len: u64 },
}

fn import_file(
    conn: &mut Connection,
    path: &Path,
    config: &Config,
    stats: &mut Stats,
    progress: &mut impl FnMut(u64),
) -> Result<Kind, Error> {
    let read_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    // A copy in the archive is read as the file it copies, its name that file's.
    let copied = archive::original_name(path);
    let named = copied.as_deref().unwrap_or(path);
    let format = Format::of(named);
    if format == Format::GeminiJson {
        return import_json_chat(conn, (path, named), config, stats, progress);
    }
    if format == Format::Droid {
        return import_droid_session(conn, (path, named), config, stats, progress);
    }
    if matches!(format, Format::Opencode | Format::Kilo) {
        return import_opencode_store(conn, (path, format), config, stats, progress);
    }
    if format == Format::Cline {
        return import_cline_session(conn, path, config, stats, progress);
    }
    if format == Format::Goose {
        return import_goose_store(conn, path, config, stats, progress);
    }
    if format == Format::Kimi {
        return import_kimi_log(
            conn,
            (path, named),
            copied.is_some(),
            config,
            stats,
            progress,
        );
    }
    let mut reader = open_lines(path, copied.is_some()).map_err(read_error)?;
    let name = named.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let file = FileFacts {
        path,
        format,
        subagent: matches!(format, Format::Claude | Format::Qoder) && name.starts_with("agent-"),
        config,
        redactor: Redactor::new(&config.redact),
    };
    let start = stats.bytes;
    // Reading and writing overlap: this thread reads and parses the lines while a writer
    // thread stores the batches read before (an import of a generated 256 MB Claude Code
    // transcript spent about half its time in each). One batch waits at most, so memory
    // stays that of three batches.
    let (batches, to_write) = std::sync::mpsc::sync_channel::<Batch>(1);
    let (read, written) = std::thread::scope(|scope| {
        let writer = scope.spawn(|| -> Result<HashMap<String, Seen>, Error> {
            let mut sessions = HashMap::new();
            for batch in to_write {
                write_file_batch(conn, batch, &file, &mut sessions, stats)?;
            }
            Ok(sessions)
        });
        let read = read_file(
            &mut reader,
            FileRead::new(format, named),
            &batches,
            |offset| progress(start + offset),
        );
        drop(batches);
        let written = writer.join().expect("the import's writer does not panic");
        (read, written)
    });
    // The writer's error first: it stops the reader (its batches are refused).
    let sessions = written?;
    let end = match read.map_err(read_error)? {
        FileEnd::Whole(end) => end,
        FileEnd::HookPayloads => {
            let len = std::fs::metadata(path).map_err(read_error)?.len();
            return Ok(Kind::HookPayloads { len });
        }
    };
    stats.too_long += end.too_long;
    let mut cwds = end.cwds;
    let mut sessions = sessions;
    for (session, seen) in &mut sessions {
        seen.cwd = cwds.remove(session).or_else(|| end.file_cwd.clone());
    }
    write_sessions(conn, format.agent(), sessions)?;
    let (responses, totals) = end.check;
    if !responses.is_empty() && !totals.is_empty() {
        let session = end.fallback.as_deref().unwrap_or("?");
        stats.check("Copilot CLI", session, &dedup(responses), &totals);
    }
    stats.bytes = start + reader.offset();
    progress(stats.bytes);
    Ok(Kind::Transcript)
}

/// What [`read_file`] found.
enum FileEnd {
    /// A transcript, read to its end.
    Whole(lines::End),
    /// A file of hook payloads, passed over after its first line.
    HookPayloads,
}

/// Reads the lines of `reader` through `read`, handing each full batch, then the last, to
/// `batches`; `progress` gets the offset read after each. Stops early, with the batches
/// handed so far, when the writer refuses one (it failed: its error says why).
fn read_file(
    reader: &mut LineReader<Box<dyn Read>>,
    mut read: FileRead<'_>,
    batches: &std::sync::mpsc::SyncSender<Batch>,
    mut progress: impl FnMut(u64),
) -> io::Result<FileEnd> {
    let mut first_line = true;
    loop {
        let line = reader.next_line()?;
        if first_line && !is_blank(&line) {
            first_line = false;
            if opens_with_a_hook_payload(&line) {
                return Ok(FileEnd::HookPayloads);
            }
        }
        match line {
            Some(Line::Complete { offset, bytes }) => read.feed(offset, bytes),
            Some(Line::TooLong { .. }) => read.too_long(),
            None => break,
        }
        if read.is_full() {
            if batches.send(read.take()).is_err() {
                break;
            }
            progress(reader.offset());
        }
    }
    let (last, end) = read.finish();
    // Refused: the writer failed, and says why.
    let _ = batches.send(last);
    Ok(FileEnd::Whole(end))
}

/// What the writer of one file's batches needs of it.
struct FileFacts<'a> {
    path: &'a Path,
    format: Format,
    /// A Claude Code subagent's transcript.
    subagent: bool,
    config: &'a Config,
    redactor: Redactor,
}

/// Stores one batch of a file: its responses' usage, the tool calls and results it shows,
/// its turns.
fn write_file_batch(
    conn: &mut Connection,
    batch: Batch,
    file: &FileFacts<'_>,
    sessions: &mut HashMap<String, Seen>,
    stats: &mut Stats,
) -> Result<(), Error> {
    let format = file.format;
    write_batch(
        conn,
        batch.records,
        (format, &batch.fallback),
        sessions,
        stats,
    )?;
    let session = (format.agent(), &batch.fallback);
    items::write(conn, batch.shown, &file.redactor, session)?;
    let facts = (file.path, format, file.subagent, &batch.cwds);
    write_turns(conn, file.config, batch.turns, facts, sessions, stats)
}

/// One Gemini CLI JSON chat, read whole (Gemini rewrites it whole; it holds one session's
/// messages): its usage and, of a main chat, its turns. A file larger than
/// [`MAX_LINE_BYTES`] is passed over and counted as a line too long would be.
fn import_json_chat(
    conn: &mut Connection,
    (path, named): (&Path, &Path),
    config: &Config,
    stats: &mut Stats,
    progress: &mut impl FnMut(u64),
) -> Result<Kind, Error> {
    let read_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let len = std::fs::metadata(path).map_err(read_error)?.len();
    if len > MAX_LINE_BYTES as u64 {
        stats.too_long += 1;
        stats.bytes += len;
        return Ok(Kind::Transcript);
    }
    let bytes = read_whole(path, path != named).map_err(read_error)?;
    // A copy's own length is its compressed one: the chat's is known once read.
    if bytes.len() > MAX_LINE_BYTES {
        stats.too_long += 1;
        stats.bytes += len;
        return Ok(Kind::Transcript);
    }
    let Some(records) = from_json_chat(&bytes, json_chat_parent(named).as_deref()) else {
        return Ok(Kind::NotAChat { len });
    };
    let cwd = gemini_project(named);
    let read = json_chat_turns(&bytes, named);
    let mut sessions = HashMap::new();
    write_batch(
        conn,
        records,
        (Format::GeminiJson, &None),
        &mut sessions,
        stats,
    )?;
    let cwds: HashMap<String, String> = read
        .first()
        .zip(cwd.as_ref())
        .map(|(t, cwd)| (t.session().to_owned(), cwd.clone()))
        .into_iter()
        .collect();
    let file = (path, Format::GeminiJson, false, &cwds);
    write_turns(conn, config, read, file, &mut sessions, stats)?;
    for seen in sessions.values_mut() {
        seen.cwd.clone_from(&cwd);
    }
    write_sessions(conn, Format::GeminiJson.agent(), sessions)?;
    stats.bytes += len;
    progress(stats.bytes);
    Ok(Kind::Transcript)
}

/// The turns of a Gemini CLI JSON chat (`bytes`, the file `named`): its `messages` read as a
/// JSONL chat's lines are, keyed by their prompts' ids; none of a subagent's chat.
fn json_chat_turns(bytes: &[u8], named: &Path) -> Vec<ReadTurn> {
    let Ok(chat) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return Vec::new();
    };
    let Some(session) = chat["sessionId"].as_str().filter(|s| !s.is_empty()) else {
        return Vec::new();
    };
    let parent = json_chat_parent(named);
    if chat["kind"] == "subagent" || parent.is_some_and(|p| p != session) {
        return Vec::new();
    }
    let mut reader = TurnReader::gemini(session.to_owned());
    let mut read = Vec::new();
    let messages = chat["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, message) in messages.iter().enumerate() {
        reader.feed(i as u64, message.to_string().as_bytes());
        read.extend(reader.take_completed());
    }
    read.extend(reader.finish());
    read
}

/// One Droid session: no line of its transcript carries usage, so its totals come from the
/// settings file Droid keeps beside it ([`crate::files::transcript::droid`]), and its working
/// directory from the transcript's first line (`session_start`). Its turns are read from the
/// transcript as the hooks' cursor reads them (Claude Code's shape), each keyed by its
/// prompt line's `id`, as the hooks key it.
fn import_droid_session(
    conn: &mut Connection,
    (path, named): (&Path, &Path),
    config: &Config,
    stats: &mut Stats,
    progress: &mut impl FnMut(u64),
) -> Result<Kind, Error> {
    let read_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let len = file_len(path)?;
    let copy = path != named;
    let session = Format::Droid.session_of_path(named);
    let totals = match copy {
        // A copy's figures stayed beside the file it copies.
        true => None,
        false => crate::files::transcript::droid::session_totals(path),
    };
    let mut lines = open_lines(path, copy).map_err(read_error)?;
    let mut reader = TurnReader::new(ParseOptions { sidechain: false }, session.clone());
    let (mut read, mut cwd) = (Vec::new(), None);
    while let Some(line) = lines.next_line().map_err(read_error)? {
        match line {
            Line::Complete { offset, bytes } => {
                if offset == 0 {
                    cwd = droid_start_cwd(bytes);
                }
                reader.feed(offset, bytes);
                read.extend(reader.take_completed());
            }
            Line::TooLong { .. } => stats.too_long += 1,
        }
    }
    read.extend(reader.finish());
    let mut sessions = HashMap::new();
    write_batch(
        conn,
        totals.into_iter().collect(),
        (Format::Droid, &session),
        &mut sessions,
        stats,
    )?;
    let cwds: HashMap<String, String> = match (&session, &cwd) {
        (Some(session), Some(cwd)) => HashMap::from([(session.clone(), cwd.clone())]),
        _ => HashMap::new(),
    };
    let file = (path, Format::Droid, false, &cwds);
    write_turns(conn, config, read, file, &mut sessions, stats)?;
    for seen in sessions.values_mut() {
        seen.cwd.clone_from(&cwd);
    }
    write_sessions(conn, Format::Droid.agent(), sessions)?;
    stats.bytes += len;
    progress(stats.bytes);
    Ok(Kind::Transcript)
}

/// The lines of the file at `path`, or of the file it is a copy of (`copy`).
fn open_lines(path: &Path, copy: bool) -> io::Result<LineReader<Box<dyn Read>>> {
    let input: Box<dyn Read> = match copy {
        true => Box::new(archive::open(path)?),
        false => Box::new(File::open(path)?),
    };
    Ok(LineReader::positioned(input, 0, MAX_LINE_BYTES))
}

/// The usage of OpenCode's store at `path` (or Kilo's, as `format` says): each assistant
/// message's, keyed as the hook keys it (capture and import in any order store each model
/// call once), each session with its folder. The store is SQLite, read read-only; one that
/// cannot be read is an error of the file, as a transcript that cannot be.
fn import_opencode_store(
    conn: &mut Connection,
    (path, format): (&Path, Format),
    config: &Config,
    stats: &mut Stats,
    progress: &mut impl FnMut(u64),
) -> Result<Kind, Error> {
    let len = file_len(path)?;
    let messages = opencode_store::assistant_messages(path).map_err(|e| Error::Read {
        path: path.to_path_buf(),
        source: io::Error::other(e),
    })?;
    let mut cwds: HashMap<String, String> = HashMap::new();
    let mut records = Vec::new();
    for message in messages {
        let Some(record) = crate::model::wire::opencode::usage_of_message(&message.info) else {
            continue;
        };
        if let (Some(session), Some(cwd)) = (record.session_id.clone(), message.cwd) {
            cwds.entry(session).or_insert(cwd);
        }
        records.push(record);
    }
    // OpenCode's own totals of each session, where its store keeps them.
    if let Ok(totals) = opencode_store::session_totals(path) {
        let source = store::agent_totals::Source::OpencodeSession;
        store_session_totals(conn, (format.agent(), source), totals, &records, stats)?;
    }
    let mut sessions = HashMap::new();
    write_batch(conn, records, (format, &None), &mut sessions, stats)?;
    // Its turns, met with the hooks' by their prompts (the plugin's Stop names no turn).
    let messages = opencode_store::messages_with_parts(path).map_err(|e| Error::Read {
        path: path.to_path_buf(),
        source: io::Error::other(e),
    })?;
    let read: Vec<ReadTurn> = crate::model::transcript::opencode::turns(&messages)
        .into_iter()
        .map(|(session, turn, started)| ReadTurn::new(session, turn, started))
        .collect();
    // And its calls, by the ids the plugin sends the hooks (coverage).
    let shown = crate::model::transcript::opencode::tool_items(&messages);
    let read = (read, shown);
    write_whole_sessions(conn, config, (path, format), read, &cwds, sessions, stats)?;
    stats.bytes += len;
    progress(stats.bytes);
    Ok(Kind::Transcript)
}

/// What an import of sessions read whole (an agent's store, a session's file) writes after their
/// usage (`sessions`, as writing it left them): the calls they show (coverage), their turns
/// (`read`), and each session with its folder from `cwds`.
fn write_whole_sessions(
    conn: &mut Connection,
    config: &Config,
    (path, format): (&Path, Format),
    (read, shown): (Vec<ReadTurn>, (Vec<ToolCallItem>, Vec<ToolResultItem>)),
    cwds: &HashMap<String, String>,
    mut sessions: HashMap<String, Seen>,
    stats: &mut Stats,
) -> Result<(), Error> {
    let redactor = Redactor::new(&config.redact);
    items::write(conn, shown, &redactor, (format.agent(), &None))?;
    let file = (path, format, false, cwds);
    write_turns(conn, config, read, file, &mut sessions, stats)?;
    for (session, seen) in sessions.iter_mut() {
        seen.cwd = cwds.get(session).cloned();
    }
    write_sessions(conn, format.agent(), sessions)
}

/// Stores each session's totals as its agent keeps them (`source`), in one transaction (a
/// following ingest reads the agent's store again at every look: an unchanged total is not
/// written), and checks the responses counted of the session (`records`) against them.
fn store_session_totals(
    conn: &mut Connection,
    (agent, source): (&'static str, store::agent_totals::Source),
    totals: Vec<(String, UsageRecord)>,
    records: &[UsageRecord],
    stats: &mut Stats,
) -> Result<(), Error> {
    let mut by_session: HashMap<&str, Vec<UsageRecord>> = HashMap::new();
    for r in records {
        if let Some(session) = r.session_id.as_deref() {
            by_session.entry(session).or_default().push(r.clone());
        }
    }
    let title = crate::model::agents::Agent::from_name(agent).map_or(agent, |a| a.profile().title);
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for (session, total) in totals {
        if [
            total.input,
            total.output,
            total.cache_read,
            total.cache_write,
        ] == [0; 4]
        {
            continue; // a session that never reached a model
        }
        store::agent_totals::replace(&tx, &session, Some(agent), source, &total, "import")?;
        if let Some(counted) = by_session.get(session.as_str()) {
            stats.check(title, &session, counted, &[total]);
        }
    }
    tx.commit()?;
    Ok(())
}

/// Goose's store at `path`: each model call's usage, each session's turns (met with the hooks'
/// by their prompts: Goose's Stop names no turn) and calls (by the ids its hooks send), each
/// session with its folder, and Goose's own running totals to check the usage against. The
/// store is SQLite, read read-only; one that cannot be read is an error of the file, as a
/// transcript that cannot be.
fn import_goose_store(
    conn: &mut Connection,
    path: &Path,
    config: &Config,
    stats: &mut Stats,
    progress: &mut impl FnMut(u64),
) -> Result<Kind, Error> {
    let len = file_len(path)?;
    let unreadable = |e: rusqlite::Error| Error::Read {
        path: path.to_path_buf(),
        source: io::Error::other(e),
    };
    let stored = goose_store::sessions(path).map_err(unreadable)?;
    let messages = goose_store::messages(path).map_err(unreadable)?;
    let records = crate::model::transcript::goose::usage(&messages, &stored);
    let totals = stored
        .iter()
        .filter_map(|s| Some((s.id.clone(), s.totals.clone()?)))
        .collect();
    let source = store::agent_totals::Source::GooseSession;
    store_session_totals(
        conn,
        (Format::Goose.agent(), source),
        totals,
        &records,
        stats,
    )?;
    let mut sessions = HashMap::new();
    write_batch(conn, records, (Format::Goose, &None), &mut sessions, stats)?;
    let read: Vec<ReadTurn> = crate::model::transcript::goose::turns(&messages, &stored)
        .into_iter()
        .map(|(session, turn, started)| ReadTurn::new(session, turn, started))
        .collect();
    let shown = crate::model::transcript::goose::tool_items(&messages);
    let cwds: HashMap<String, String> = stored
        .iter()
        .filter_map(|s| Some((s.id.clone(), s.cwd.clone()?)))
        .collect();
    let file = (path, Format::Goose);
    write_whole_sessions(conn, config, file, (read, shown), &cwds, sessions, stats)?;
    stats.bytes += len;
    progress(stats.bytes);
    Ok(Kind::Transcript)
}

/// A Kimi Code record log at `path` (named `named`; `copy`: an archive's copy of it): each
/// model call's usage, the session's turns (met with the hooks' by their prompts: Kimi's Stop
/// names no turn) and calls (by the ids its hooks send), the session's folder from its
/// `state.json`. Read whole: one session's log, a line per record.
fn import_kimi_log(
    conn: &mut Connection,
    (path, named): (&Path, &Path),
    copy: bool,
    config: &Config,
    stats: &mut Stats,
    progress: &mut impl FnMut(u64),
) -> Result<Kind, Error> {
    let (session, subagent) = kimi_log::log_of(named).expect("Format::of checked it");
    let bytes = read_whole(path, copy).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let records: Vec<serde_json::Value> = bytes
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice(line).ok())
        .collect();
    let read = crate::model::transcript::kimi::read(&records, &session, subagent);
    let mut sessions = HashMap::new();
    let agent = (Format::Kimi, &Some(session.clone()));
    write_batch(conn, read.usage, agent, &mut sessions, stats)?;
    let shown = (read.calls, read.results);
    let turns: Vec<ReadTurn> = read
        .turns
        .into_iter()
        .map(|(turn, started)| ReadTurn::new(session.clone(), turn, started))
        .collect();
    let cwd = kimi_log::cwd_of(named).or_else(|| kimi_log::cwd_of(path));
    let cwds: HashMap<String, String> = cwd.map(|c| (session.clone(), c)).into_iter().collect();
    let file = (path, Format::Kimi);
    write_whole_sessions(conn, config, file, (turns, shown), &cwds, sessions, stats)?;
    stats.bytes += bytes.len() as u64;
    progress(stats.bytes);
    Ok(Kind::Transcript)
}

/// The usage of a Cline session's transcript at `path`: each assistant message's, keyed as
/// capture keys it at a run's end (hook and import in any order store each model call once),
/// the session with its folder from the session's file beside it.
fn import_cline_session(
    conn: &mut Connection,
    path: &Path,
    config: &Config,
    stats: &mut Stats,
    progress: &mut impl FnMut(u64),
) -> Result<Kind, Error> {
    let len = file_len(path)?;
    let (data, session) = cline_session::transcript_of(path).expect("Format::of checked it");
    let run = cline_session::run(&data, &session, None).unwrap_or_default();
    if let Some(total) = run.totals.clone() {
        let source = store::agent_totals::Source::ClineSession;
        store::agent_totals::replace(conn, &session, Some("cline"), source, &total, "import")?;
        stats.check("Cline", &session, &run.usage, &[total]);
    }
    // Its turns, met with the hooks' by their prompts (Cline's hooks name no turn).
    let messages = cline_session::messages(path);
    let read: Vec<ReadTurn> = crate::model::transcript::cline::turns(&messages, &session)
        .into_iter()
        .map(|(session, turn, started)| ReadTurn::new(session, turn, started))
        .collect();
    // And its calls, by the model's call ids (coverage).
    let shown = crate::model::transcript::cline::tool_items(&messages, &session);
    let mut sessions = HashMap::new();
    write_batch(
        conn,
        run.usage,
        (Format::Cline, &Some(session.clone())),
        &mut sessions,
        stats,
    )?;
    let cwds: HashMap<String, String> = run
        .cwd
        .iter()
        .map(|cwd| (session.clone(), cwd.clone()))
        .collect();
    let file = (path, Format::Cline);
    write_whole_sessions(conn, config, file, (read, shown), &cwds, sessions, stats)?;
    stats.bytes += len;
    progress(stats.bytes);
    Ok(Kind::Transcript)
}

/// The bytes of the file at `path`, or of the file it is a copy of (`copy`: at most one more
/// than [`MAX_LINE_BYTES`] of them, enough to tell it is too long).
fn read_whole(path: &Path, copy: bool) -> io::Result<Vec<u8>> {
    if !copy {
        return std::fs::read(path);
    }
    let mut bytes = Vec::new();
    archive::open(path)?
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The length of a file read whole, or why it cannot be read.
fn file_len(path: &Path) -> Result<u64, Error> {
    std::fs::metadata(path)
        .map(|m| m.len())
        .map_err(|source| Error::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// A Qwen Code background subagent's chat (`projects/<project>/subagents/<session>/…`).
fn is_qwen_subagent(chat: &Path) -> bool {
    let folder = chat.parent().and_then(Path::parent);
    folder.and_then(Path::file_name) == Some("subagents".as_ref())
}

/// The `cwd` of a Droid transcript's first line (`{"type": "session_start", …, "cwd": …}`).
fn droid_start_cwd(bytes: &[u8]) -> Option<String> {
    let first: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    (first["type"] == "session_start")
        .then(|| first["cwd"].as_str().map(str::to_owned))
        .flatten()
}

/// A line of only white space (the end of the file is not blank: it ends the looking).
fn is_blank(line: &Option<Line<'_>>) -> bool {
    matches!(line, Some(Line::Complete { bytes, .. }) if bytes.trim_ascii().is_empty())
}

/// Whether a file's first line is a payload an agent hands a hook (or a status line)
/// rather than a transcript line: a JSON object whose own keys name the hook's event or the
/// transcript it is about. No transcript line has either key at its top; a file is only
/// parsed here when its first line holds one of them as text.
fn opens_with_a_hook_payload(line: &Option<Line<'_>>) -> bool {
    /// The keys looked for, at the top of the object only.
    #[derive(serde::Deserialize)]
    struct Keys {
        hook_event_name: Option<serde::de::IgnoredAny>,
        transcript_path: Option<serde::de::IgnoredAny>,
    }
    let Some(Line::Complete { bytes, .. }) = line else {
        return false;
    };
    let quoted = |key: &[u8]| memchr::memmem::find(bytes, key).is_some();
    if !quoted(b"\"hook_event_name\"") && !quoted(b"\"transcript_path\"") {
        return false;
    }
    serde_json::from_slice::<Keys>(bytes)
        .is_ok_and(|k| k.hook_event_name.is_some() || k.transcript_path.is_some())
}

/// The working directory a Copilot event log's `session.start` line names
/// (`data.context.cwd`); other lines are not parsed.
fn copilot_start_cwd(bytes: &[u8]) -> Option<String> {
    memchr::memmem::find(bytes, b"\"session.start\"")?;
    let line: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if line["type"] != "session.start" {
        return None;
    }
    let cwd = line["data"]["context"]["cwd"].as_str()?;
    Some(cwd.to_owned()).filter(|c| !c.is_empty())
}

/// Writes the turns read from the transcript at `path` ([`turns::write`]); their sessions get
/// `sessions` rows as those of imported responses do.
fn write_turns(
    conn: &mut Connection,
    config: &Config,
    read: Vec<ReadTurn>,
    (path, format, subagent, cwds): (&Path, Format, bool, &HashMap<String, String>),
    sessions: &mut HashMap<String, Seen>,
    stats: &mut Stats,
) -> Result<(), Error> {
    for t in &read {
        if let Some(ts) = t.ts() {
            let seen = sessions.entry(t.session().to_owned()).or_insert(Seen {
                first: ts,
                last: ts,
                ..Seen::default()
            });
            seen.first = seen.first.min(ts);
            seen.last = seen.last.max(ts);
        }
    }
    let path_text = path.to_string_lossy();
    let file = turns::FileFacts {
        path: &path_text,
        agent: format.agent(),
        subagent,
        cwds,
    };
    let written = turns::write(conn, config, read, &file, crate::support::clock::now_ms())?;
    stats.turns += written.turns;
    stats.turns_pruned += written.pruned;
    Ok(())
}

fn write_batch(
    conn: &mut Connection,
    records: Vec<UsageRecord>,
    (format, fallback): (Format, &Option<String>),
    sessions: &mut HashMap<String, Seen>,
    stats: &mut Stats,
) -> Result<(), Error> {
    if records.is_empty() {
        return Ok(());
    }
    let records = dedup(records);
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let cx = usage::Context {
        session_id: fallback.as_deref(),
        agent: Some(format.agent()),
        ts: None,
        origin: "import",
    };
    usage::upsert_many(&tx, &records, cx)?;
    for r in &records {
        let Some(session) = r.session_id.as_deref().or(fallback.as_deref()) else {
            continue;
        };
        let Some(ts) = r.ts else { continue };
        // Looked up before it is inserted: most records are of a session seen already.
        if !sessions.contains_key(session) {
            let first = Seen {
                first: ts,
                last: ts,
                ..Seen::default()
            };
            sessions.insert(session.to_owned(), first);
        }
        let seen = sessions.get_mut(session).expect("inserted above");
        seen.first = seen.first.min(ts);
        seen.last = seen.last.max(ts);
        if r.model.is_some() && !r.sidechain {
            seen.model.clone_from(&r.model);
        }
    }
    crate::store::chain::keyed::flush(&tx)?;
    tx.commit()?;
    stats.records += records.len() as u64;
    Ok(())
}

/// The sessions of the imported responses, so summaries list them: a session ingest knows
/// keeps its figures (only its first and last time may widen, and an agent, model or
/// working directory it lacks is filled in, never one a hook gave replaced); an unknown one
/// gets a row of its own with no events. A session last seen before what `prune` deleted
/// gets none: the next prune would delete it again (its usage is stored all the same).
fn write_sessions(
    conn: &Connection,
    agent: &str,
    sessions: HashMap<String, Seen>,
) -> Result<(), Error> {
    let pruned_before: i64 = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'pruned_before'",
            [],
            |r| r.get(0),
        )
        .optional()?
        .unwrap_or(i64::MIN);
    let mut stmt = conn.prepare_cached(
        "INSERT INTO sessions(session_id, agent, model, cwd, first_seen, last_seen)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(session_id) DO UPDATE SET
           agent = coalesce(agent, excluded.agent),
           model = coalesce(model, excluded.model),
           cwd = coalesce(cwd, excluded.cwd),
           first_seen = min(first_seen, excluded.first_seen),
           last_seen = max(last_seen, excluded.last_seen)",
    )?;
    for (session, seen) in sessions
        .into_iter()
        .filter(|(_, s)| s.last >= pruned_before)
    {
        stmt.execute(params![
            session, agent, seen.model, seen.cwd, seen.first, seen.last
        ])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every file read, whatever an earlier import read.
    fn again() -> Options<'static> {
        static CONFIG: std::sync::OnceLock<Config> = std::sync::OnceLock::new();
        Options {
            config: CONFIG.get_or_init(Config::default),
            again: true,
            archive: None,
        }
    }

    #[test]
    fn a_second_import_leaves_the_same_rows_and_turns_are_linked() {
        let dir = tempfile::tempdir().unwrap();
        let store = store::open(&dir.path().join("t.db")).unwrap();
        let t = dir.path().join("projects/p/sess-1.jsonl");
        std::fs::create_dir_all(t.parent().unwrap()).unwrap();
        let lines = [
            r#"{"type":"user","uuid":"u1","sessionId":"sess-1","message":{"content":"hi"}}"#,
            r#"{"type":"assistant","sessionId":"sess-1","timestamp":"2026-01-01T00:00:00Z","requestId":"r1","message":{"id":"m1","model":"claude-haiku-4-5","usage":{"input_tokens":5,"output_tokens":1}}}"#,
            r#"{"type":"assistant","sessionId":"sess-1","timestamp":"2026-01-01T00:00:01Z","requestId":"r1","message":{"id":"m1","model":"claude-haiku-4-5","usage":{"input_tokens":5,"output_tokens":40}}}"#,
        ];
        std::fs::write(&t, lines.join("\n") + "\n").unwrap();
        let files: Vec<PathBuf> = find_transcripts(&[dir.path().join("projects")])
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(files, vec![t.clone()]);
        let first = import(&store, &files, &again(), |_| {}).unwrap();
        assert_eq!((first.rows_before, first.rows_after), (0, 1));
        let again = import(&store, &files, &again(), |_| {}).unwrap();
        assert_eq!((again.rows_before, again.rows_after), (1, 1));
        let conn = store.conn().unwrap();
        let row: (i64, String, String, i64) = conn
            .query_row(
                "SELECT output_tokens, turn_id, origin, (SELECT count(*) FROM sessions)
                 FROM usage",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(row, (40, "u1".into(), "import".into(), 1));
    }

    #[test]
    fn gemini_chats_and_codex_rollouts_are_imported_under_their_agent_and_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = store::open(&dir.path().join("t.db")).unwrap();
        let chat = dir
            .path()
            .join(".gemini/tmp/p/chats/session-2026-12-01T23-29-619d1b70.jsonl");
        std::fs::create_dir_all(chat.parent().unwrap()).unwrap();
        std::fs::write(
            &chat,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/gemini/chat-0.61.0.jsonl"
            )),
        )
        .unwrap();
        let sid = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000";
        let rollout = dir.path().join(format!(
            ".codex/sessions/2026/03/01/rollout-2026-03-01T10-00-00-{sid}.jsonl"
        ));
        std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
        // Composed lines in Codex's rollout shape (no session_meta: the name gives the session).
        let count = r#"{"timestamp":"2026-03-01T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":50,"cached_input_tokens":20,"output_tokens":9,"reasoning_output_tokens":4,"total_tokens":59},"last_token_usage":{"input_tokens":50,"cached_input_tokens":20,"output_tokens":9,"reasoning_output_tokens":4,"total_tokens":59}}}}"#;
        let turn = r#"{"timestamp":"2026-03-01T10:00:01.000Z","type":"turn_context","payload":{"model":"gpt-5-codex"}}"#;
        std::fs::write(&rollout, format!("{turn}\n{count}\n{count}\n")).unwrap();
        let files: Vec<PathBuf> = find_transcripts(&[dir.path().to_path_buf()])
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(files.len(), 2, "{files:?}");
        for _ in 0..2 {
            import(&store, &files, &again(), |_| {}).unwrap();
        }
        let conn = store.conn().unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT agent, session_id, model, input_tokens, cache_read_tokens, output_tokens
                 FROM usage ORDER BY agent, input_tokens",
            )
            .unwrap();
        let rows: Vec<(String, String, String, i64, i64, i64)> = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let gemini = "619d1b70-73c5-42a0-8e14-50b8efc17598";
        let flash = "gemini-2.5-flash";
        assert_eq!(
            rows,
            vec![
                ("codex".into(), sid.into(), "gpt-5-codex".into(), 30, 20, 9),
                (
                    "gemini".into(),
                    gemini.into(),
                    flash.into(),
                    6004,
                    4003,
                    264
                ),
                (
                    "gemini".into(),
                    gemini.into(),
                    flash.into(),
                    6904,
                    4103,
                    275
                ),
            ]
        );
        let agents: Vec<String> = conn
            .prepare("SELECT agent FROM sessions ORDER BY agent")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(agents, ["codex", "gemini"]);
    }

    #[test]
    fn gemini_json_chats_and_their_subagents_chats_are_imported_under_the_main_session() {
        let dir = tempfile::tempdir().unwrap();
        let store = store::open(&dir.path().join("t.db")).unwrap();
        let project = dir.path().join(".gemini/tmp/app");
        let chats = project.join("chats");
        let chat = |session: &str, kind: &str, id: &str, input: u64| {
            format!(
                r#"{{"sessionId":"{session}","projectHash":"h","startTime":"2026-04-16T22:38:58.587Z",
                  "kind":"{kind}","messages":[{{"id":"u-{id}","type":"user","content":"hi"}},
                  {{"id":"{id}","type":"gemini","content":"Hi!","model":"gemini-2.5-pro",
                    "timestamp":"2026-04-16T22:39:17.604Z",
                    "tokens":{{"input":{input},"output":5,"cached":10,"thoughts":2,"tool":0}}}}]}}"#
            )
        };
        let main = "b1f31681-4b57-4337-8bc5-ac73580f752a";
        std::fs::create_dir_all(chats.join(main)).unwrap();
        std::fs::write(project.join(".project_root"), "/w/app\n").unwrap();
        let files = [
            (
                chats.join("session-2026-04-16T22-38-b1f31681.json"),
                chat(main, "main", "g1", 100),
            ),
            (
                chats.join(main).join("tl63m8.json"),
                chat("tl63m8", "subagent", "g2", 50),
            ),
            // Named like a chat, holding none: passed over and counted.
            (chats.join("session-broken.json"), "{}".to_owned()),
            // Gemini's prompt log is no chat: never read.
            (project.join("logs.json"), "[]".to_owned()),
        ];
        for (path, text) in &files {
            std::fs::write(path, text).unwrap();
        }
        let found: Vec<PathBuf> = find_transcripts(&[dir.path().join(".gemini")])
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(found.len(), 3, "{found:?}");
        let stats = import(&store, &found, &again(), |_| {}).unwrap();
        assert_eq!((stats.files, stats.not_chats, stats.rows_after), (2, 1, 2));
        let conn = store.conn().unwrap();
        let rows: Vec<(String, i64, Option<String>, i64, i64)> = conn
            .prepare(
                "SELECT session_id, sidechain, subagent_id, input_tokens, output_tokens
                 FROM usage ORDER BY message_id",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (main.into(), 0, None, 90, 7),
                (main.into(), 1, Some("tl63m8".into()), 40, 7)
            ]
        );
        let session: (String, String) = conn
            .query_row("SELECT agent, cwd FROM sessions", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(session, ("gemini".into(), "/w/app".into()));
        // The main chat's turn, keyed by its prompt's id; the subagent's chat adds none.
        let turns: Vec<(String, String, String, String)> = conn
            .prepare("SELECT session_id, turn_key, prompt, response FROM turns")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            turns,
            vec![(main.into(), "u-g1".into(), "hi".into(), "Hi!".into())]
        );
        let again = import(&store, &found, &again(), |_| {}).unwrap();
        assert_eq!((again.rows_before, again.rows_after), (2, 2));
        assert_eq!((again.turn_rows_before, again.turn_rows_after), (1, 1));
    }

    #[test]
    fn a_sessions_missing_cwd_comes_from_its_files_never_over_a_hooks() {
        let dir = tempfile::tempdir().unwrap();
        let store = store::open(&dir.path().join("t.db")).unwrap();
        let conn = store.conn().unwrap();
        // A session a hook already gave a cwd, and one ingest knows without any.
        conn.execute_batch(
            "INSERT INTO sessions(session_id, cwd, first_seen, last_seen)
             VALUES ('hooked', '/from/the/hook', 1, 1), ('bare', NULL, 1, 1)",
        )
        .unwrap();
        let claude = |session: &str, cwd: &str| {
            format!(
                r#"{{"type":"user","uuid":"u-{session}","sessionId":"{session}","cwd":"{cwd}","message":{{"content":"hi"}}}}
{{"type":"assistant","sessionId":"{session}","cwd":"{cwd}","timestamp":"2026-01-01T00:00:00Z","requestId":"r-{session}","message":{{"id":"m-{session}","model":"claude-haiku-4-5","usage":{{"input_tokens":5,"output_tokens":1}}}}}}
"#
            )
        };
        let projects = dir.path().join("projects/p");
        std::fs::create_dir_all(&projects).unwrap();
        for (session, cwd) in [("hooked", "/from/the/transcript"), ("bare", "/w/bare")] {
            std::fs::write(
                projects.join(format!("{session}.jsonl")),
                claude(session, cwd),
            )
            .unwrap();
        }
        // A transcript line without a cwd leaves it unknown.
        std::fs::write(
            projects.join("nocwd.jsonl"),
            r#"{"type":"assistant","sessionId":"nocwd","timestamp":"2026-01-01T00:00:00Z","message":{"id":"m-n","usage":{"input_tokens":1}}}"#.to_owned() + "\n",
        )
        .unwrap();
        let sid = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000";
        let rollout = dir
            .path()
            .join(format!("sessions/rollout-2026-03-01T10-00-00-{sid}.jsonl"));
        std::fs::create_dir_all(rollout.parent().unwrap()).unwrap();
        let meta = format!(
            r#"{{"timestamp":"2026-03-01T10:00:00.000Z","type":"session_meta","payload":{{"id":"{sid}","cwd":"/w/codex"}}}}"#
        );
        let turn = r#"{"timestamp":"2026-03-01T10:00:01.000Z","type":"turn_context","payload":{"cwd":"/w/elsewhere","model":"gpt-5-codex"}}"#;
        let count = r#"{"timestamp":"2026-03-01T10:00:02.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6},"last_token_usage":{"input_tokens":5,"output_tokens":1,"total_tokens":6}}}}"#;
        std::fs::write(&rollout, format!("{meta}\n{turn}\n{count}\n")).unwrap();
        let project = dir.path().join(".gemini/tmp/app");
        let chat = project.join("chats/session-2026-12-01T23-29-619d1b70.jsonl");
        std::fs::create_dir_all(chat.parent().unwrap()).unwrap();
        std::fs::write(
            &chat,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/gemini/chat-0.61.0.jsonl"
            )),
        )
        .unwrap();
        std::fs::write(project.join(".project_root"), "/w/gemini\n").unwrap();

        let files: Vec<PathBuf> = find_transcripts(&[dir.path().to_path_buf()])
            .unwrap()
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(files.len(), 5, "{files:?}");
        import(&store, &files, &again(), |_| {}).unwrap();
        let cwds: Vec<(String, Option<String>)> = conn
            .prepare("SELECT session_id, cwd FROM sessions ORDER BY session_id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let some = |s: &str| Some(s.to_owned());
        assert_eq!(
            cwds,
            vec![
                (sid.to_owned(), some("/w/codex")),
                (
                    "619d1b70-73c5-42a0-8e14-50b8efc17598".into(),
                    some("/w/gemini")
                ),
                ("bare".into(), some("/w/bare")),
                ("hooked".into(), some("/from/the/hook")),
                ("nocwd".into(), None),
            ]
        );
    }
}
