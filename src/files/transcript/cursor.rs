//! Per-session transcript cursors: `<state dir>/<key>.json`, guarded by `<key>.lock`.
//!
//! A [`Tracker`] remembers how far a transcript has been read (`offset`, always just past a
//! complete line), the turn still open at that point, how far the last `PreCompact` got
//! (`compact_offset`), and the ids of the last [`RECORDED_IDS`] turns written to the queue.
//! Each hook then reads only the bytes appended since the previous one.
//!
//! Claude Code runs hooks in parallel, so the read-modify-write of a cursor happens under an
//! exclusive lock on a separate lock file (the cursor itself is replaced by rename, and a lock
//! on a replaced inode guards nothing). A hook that cannot get the lock within [`LOCK_WAIT`]
//! skips the transcript: the next hook reads the same bytes. The cursor is written to a temp
//! file and renamed into place; a missing, corrupt or older-version cursor counts as none.

use std::collections::VecDeque;
use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::files::paths::create_private_dir;
use crate::files::tail::{Line, LineReader};
use crate::model::transcript::parse::{line_time, parse_value, records_of};
use crate::model::transcript::turns::{Assembler, OpenTurn};
use crate::model::transcript::usage::{self, CodexReader, UsageRecord};
use crate::model::transcript::{Error, FinalTurn, ParseOptions, ReadStats, Turn};

/// How long [`Tracker::open`] waits for a cursor held by a concurrent hook.
pub const LOCK_WAIT: Duration = Duration::from_millis(200);

/// On first sight of a transcript, only its last this-many bytes are read.
///
/// cmstore was not installed (or had no cursor) when the earlier part was written; reading a
/// large transcript from the start would stall the agent on a single hook.
pub const COLD_START_BYTES: u64 = 1 << 20;

/// `PreCompact` reads at most this many trailing bytes since the previous compaction.
pub const MAX_COMPACT_BYTES: u64 = 8 << 20;

/// Most usage records a cursor keeps for the next hook when no line carried them.
pub const MAX_PENDING_USAGE: usize = 4096;

/// How many recorded turn ids a cursor remembers.
pub const RECORDED_IDS: usize = 64;

/// Version of the cursor file; a cursor of another version is ignored.
const STATE_VERSION: u32 = 1;

/// Bytes at the start of a transcript hashed to notice that it was replaced.
const FINGERPRINT_BYTES: u64 = 1024;

/// Hash of the first `len` bytes of the transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct Fingerprint {
    len: u64,
    hash: u64,
}

/// The cursor file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct State {
    v: u32,
    transcript: String,
    fingerprint: Option<Fingerprint>,
    offset: u64,
    open: Option<OpenTurn>,
    compact_offset: u64,
    recorded: VecDeque<String>,
    /// Usage read but not yet carried by a queue line (the event's lines were all filtered
    /// out): the next hook carries it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    usage: Vec<UsageRecord>,
    /// A Codex rollout's reader as of `offset` (its session, model and turn), for the usage
    /// of the lines after it: a `token_count` line names neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    codex: Option<CodexReader>,
    /// Whether a response's own usage was read from this transcript: then a session's
    /// totals (Copilot CLI's `session.shutdown`) stand for nothing and are not taken.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    responses: bool,
    /// A Droid session's totals as last read from its settings file (all its counts summed):
    /// the same totals are not carried again.
    #[serde(default, skip_serializing_if = "is_zero")]
    droid_counted: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A locked, loaded cursor for one session (or one subagent) and its transcript.
#[derive(Debug)]
pub struct Tracker {
    state_path: PathBuf,
    transcript: PathBuf,
    options: ParseOptions,
    state: State,
    /// The state as loaded (`None` when there was no readable file): an unchanged cursor is
    /// not rewritten, which spares most hooks a file creation and a rename.
    loaded: Option<State>,
    stats: ReadStats,
    /// Usage of the responses read by [`Tracker::advance`], for the queue line.
    usage: usage::Responses,
    lock: File,
}

impl Tracker {
    /// Locks and loads the cursor of `key` (session id, or session id + agent id for
    /// subagents). `Ok(None)` if the lock stays busy for [`LOCK_WAIT`].
    ///
    /// Claude Code subagent transcripts (`agent-*.jsonl`) are read in sidechain mode.
    pub fn open(state_dir: &Path, key: &str, transcript: &Path) -> Result<Option<Tracker>, Error> {
        let options = ParseOptions {
            sidechain: is_subagent_transcript(transcript),
        };
        Tracker::open_with(state_dir, key, transcript, options)
    }

    /// [`Tracker::open`] with explicit parse options.
    pub fn open_with(
        state_dir: &Path,
        key: &str,
        transcript: &Path,
        options: ParseOptions,
    ) -> Result<Option<Tracker>, Error> {
        create_private_dir(state_dir).map_err(|source| Error::CreateDir {
            path: state_dir.to_path_buf(),
            source,
        })?;
        let name = file_name_for(key);
        let lock_path = state_dir.join(format!("{name}.lock"));
        let locked =
            crate::files::lock::exclusive(&lock_path, LOCK_WAIT).map_err(|source| Error::Lock {
                path: lock_path.clone(),
                source,
            })?;
        let Some(lock) = locked else {
            return Ok(None);
        };
        let state_path = state_dir.join(format!("{name}.json"));
        let loaded = load(&state_path);
        Ok(Some(Tracker {
            state_path,
            transcript: transcript.to_path_buf(),
            options,
            state: loaded.clone().unwrap_or_default(),
            loaded,
            stats: ReadStats::default(),
            usage: usage::Responses::default(),
            lock,
        }))
    }

    /// PostToolUse: every complete turn not yet recorded, oldest first; marks them recorded.
    pub fn harvest(&mut self) -> Result<Vec<Turn>, Error> {
        let completed = self.advance()?;
        Ok(self.take_fresh(completed).0)
    }

    /// Stop: (earlier complete turns never recorded, oldest first; the final turn — the
    /// current/last turn treated as complete — or why there is none). Marks all returned
    /// turns recorded.
    ///
    /// The final turn is returned even without any assistant output (the transcript may lag
    /// behind the hook), so the caller can fall back to the payload's
    /// `last_assistant_message`. It stays open in the cursor: later output of the same turn
    /// is not reported again, since its id is recorded.
    pub fn finish_turn(&mut self) -> Result<(Vec<Turn>, FinalTurn), Error> {
        let completed = self.advance()?;
        let (mut earlier, last_is_fresh) = self.take_fresh(completed);
        let last = match &self.state.open {
            Some(open) => {
                let turn = open.to_turn(true);
                match (self.is_recorded(&turn), turn.feedback.is_some()) {
                    (false, _) => FinalTurn::Fresh(turn),
                    (true, true) => FinalTurn::Continued(turn),
                    (true, false) => FinalTurn::Recorded(turn.turn_id),
                }
            }
            // The turn already ended in the transcript (e.g. an interruption): the last
            // completed turn is the final one.
            None if last_is_fresh => earlier.pop().map_or(FinalTurn::Missing, FinalTurn::Fresh),
            None if self.state.recorded.is_empty() => FinalTurn::Missing,
            None => FinalTurn::Recorded(self.state.recorded.back().cloned()),
        };
        if let FinalTurn::Fresh(turn) = &last {
            self.mark_recorded(turn);
        }
        Ok((earlier, last))
    }

    /// SessionEnd: every turn not recorded yet, oldest first, the trailing one included when
    /// the assistant answered it (no prompt will follow to complete it: VS Code's Stop never
    /// fires, and this is the session's last hook). Marks them recorded.
    pub fn close(&mut self) -> Result<Vec<Turn>, Error> {
        let mut completed = self.advance()?;
        if let Some(open) = self.state.open.as_ref().filter(|o| o.has_output()) {
            completed.push(open.to_turn(true));
        }
        Ok(self.take_fresh(completed).0)
    }

    /// PreCompact: every complete turn since the last compaction, oldest first, whether
    /// recorded or not; with `last_turn` (a manual compaction, run between turns) the trailing
    /// turn too when the assistant answered it. Re-reads from `compact_offset` (at most [`MAX_COMPACT_BYTES`]), which
    /// then moves to the start of the incomplete trailing turn, so that turn is returned by a
    /// later call once complete. Leaves the harvest cursor alone.
    pub fn compact(&mut self, last_turn: bool) -> Result<Vec<Turn>, Error> {
        let Some((mut file, size)) = self.open_transcript()? else {
            return Ok(Vec::new());
        };
        self.check_identity(&mut file, size)?;
        let mut start = self.state.compact_offset;
        if size - start > MAX_COMPACT_BYTES {
            start = align_to_line(&mut file, size - MAX_COMPACT_BYTES, size)
                .map_err(|e| self.read_error(e))?;
        }
        let (assembler, end) = self.read_from(&mut file, start, size, None, false)?;
        let (mut completed, open) = assembler.finish();
        self.state.compact_offset = match open {
            Some(open) if last_turn && open.has_output() => {
                completed.push(open.to_turn(true));
                end
            }
            Some(open) => open.start_offset,
            None => end,
        };
        Ok(completed)
    }

    /// Applies `scrub` to every text the cursor keeps of the open turn (prompt, assistant text,
    /// reasoning, tool call inputs), so that secret redaction reaches the state file too.
    pub fn scrub_open_turn(&mut self, mut scrub: impl FnMut(&mut String)) {
        if let Some(open) = &mut self.state.open {
            scrub(&mut open.user);
            scrub(&mut open.assistant);
            if let Some(reasoning) = &mut open.reasoning {
                scrub(reasoning);
            }
            for call in &mut open.tool_calls {
                scrub(&mut call.input);
                scrub(&mut call.output);
            }
        }
    }

    /// The usage of the responses read since the cursor (and any a previous hook left for
    /// this one), one record per response; a queue line carries it.
    pub fn take_usage(&mut self) -> Vec<UsageRecord> {
        let read = std::mem::take(&mut self.usage);
        if self.state.usage.is_empty() {
            return read.into_records();
        }
        let mut all = std::mem::take(&mut self.state.usage);
        all.extend(read.into_records());
        usage::dedup(all)
    }

    /// Keeps `records` in the cursor for the next hook: no queue line carried them. At most
    /// `MAX_PENDING_USAGE`, the newest (a re-read from a lost cursor or `cmstore import`
    /// restores the rest).
    pub fn keep_usage(&mut self, mut records: Vec<UsageRecord>) {
        if records.len() > MAX_PENDING_USAGE {
            records.drain(..records.len() - MAX_PENDING_USAGE);
        }
        self.state.usage = records;
    }

    /// The transcript this cursor reads.
    pub fn transcript(&self) -> &Path {
        &self.transcript
    }

    /// What the last call read (for the debug log and tests).
    pub fn stats(&self) -> ReadStats {
        self.stats
    }

    /// Persists the cursor (written to a temporary file, then renamed into place:
    /// [`crate::files::paths::replace_private_file`]) and releases the lock.
    pub fn save(self) -> Result<(), Error> {
        if self.loaded.as_ref() == Some(&self.state) {
            return Ok(());
        }
        let write_error = |source| Error::Write {
            path: self.state_path.clone(),
            source,
        };
        let bytes = serde_json::to_vec(&State {
            v: STATE_VERSION,
            ..self.state.clone()
        })
        .map_err(|e| write_error(io::Error::other(e)))?;
        crate::files::paths::replace_private_file(&self.state_path, &bytes).map_err(write_error)?;
        drop(self.lock);
        Ok(())
    }

    /// Reads the lines appended since the cursor and returns the turns they completed.
    fn advance(&mut self) -> Result<Vec<Turn>, Error> {
        let Some((mut file, size)) = self.open_transcript()? else {
            return Ok(Vec::new());
        };
        self.check_identity(&mut file, size)?;
        let mut open = self.state.open.take();
        let mut start = self.state.offset;
        if size - start > MAX_COMPACT_BYTES {
            // A hook must stay fast whatever happened since the last one (hooks disabled, a
            // busy cursor, huge tool results): skip to the last MAX_COMPACT_BYTES. The turn
            // that was open is cut by the gap, so it is dropped rather than mis-assembled.
            start = align_to_line(&mut file, size - MAX_COMPACT_BYTES, size)
                .map_err(|e| self.read_error(e))?;
            open = None;
            if let Some(codex) = &mut self.state.codex {
                codex.forget_turn();
            }
        }
        if self.state.codex.is_none() && is_rollout(&self.transcript) {
            // The session a rollout's `session_meta` names is the uuid its name ends with:
            // a cursor starting mid-file keys responses as `cmstore import` does.
            self.state.codex = Some(CodexReader::new(CodexReader::session_of_path(
                &self.transcript,
            )));
        }
        let (assembler, end) = self.read_from(&mut file, start, size, open, true)?;
        let (completed, open) = assembler.finish();
        self.state.open = open;
        self.state.offset = end;
        if let Some(totals) = super::droid::session_totals(&self.transcript) {
            // The same totals are not carried again.
            if totals.offset != self.state.droid_counted {
                self.state.droid_counted = totals.offset;
                self.usage.push(totals);
            }
        }
        Ok(completed)
    }

    /// The transcript and its size; `None` (nothing read) when it does not exist (yet).
    fn open_transcript(&mut self) -> Result<Option<(File, u64)>, Error> {
        let opened = File::open(&self.transcript).and_then(|f| Ok((f.metadata()?.len(), f)));
        match opened {
            Ok((size, file)) => Ok(Some((file, size))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let offset = self.state.offset;
                self.stats = ReadStats {
                    start_offset: offset,
                    end_offset: offset,
                    bytes_read: 0,
                };
                Ok(None)
            }
            Err(e) => Err(self.read_error(e)),
        }
    }

    /// Starts over when the cursor belongs to another file: a first sight, a different path,
    /// a transcript that shrank below the cursor or whose first bytes changed.
    ///
    /// Not ingest's check of the queue (`ingest::source`: device and inode, a SHA-256 of the
    /// complete first line, a marker before the offset), on purpose. Ingest starts over from
    /// byte 0 and `UNIQUE(id)` absorbs what it reads twice, so any doubt may restart it; here
    /// starting over reads only the last [`COLD_START_BYTES`] and drops the open turn. This
    /// fingerprint exists from the first hook on (a first line still being written included)
    /// and grows with the file up to [`FINGERPRINT_BYTES`]. And it is part of the cursor file:
    /// another format is another [`STATE_VERSION`], which every cursor would be reset by.
    fn check_identity(&mut self, file: &mut File, size: u64) -> Result<(), Error> {
        let path = self.transcript.to_string_lossy();
        let same = self.state.transcript == path
            && size >= self.state.offset
            && size >= self.state.compact_offset
            && match self.state.fingerprint {
                Some(old) if old.len > 0 && size >= old.len => {
                    fingerprint(file, old.len).map_err(|e| self.read_error(e))? == old
                }
                _ => false,
            };
        if !same {
            let start = if size > COLD_START_BYTES {
                align_to_line(file, size - COLD_START_BYTES, size)
                    .map_err(|e| self.read_error(e))?
            } else {
                0
            };
            // Recorded ids survive: a replaced file may repeat turns already queued.
            self.state = State {
                v: STATE_VERSION,
                transcript: path.into_owned(),
                fingerprint: None,
                offset: start,
                open: None,
                compact_offset: start,
                recorded: std::mem::take(&mut self.state.recorded),
                usage: std::mem::take(&mut self.state.usage),
                codex: None,
                responses: false,
                droid_counted: 0,
            };
        }
        let wanted = size.min(FINGERPRINT_BYTES);
        if self.state.fingerprint.is_none_or(|fp| fp.len < wanted) {
            self.state.fingerprint =
                Some(fingerprint(file, wanted).map_err(|e| self.read_error(e))?);
        }
        Ok(())
    }

    /// Feeds the complete lines in `start..size` to an assembler continuing `open`; returns it
    /// with the offset just past the last complete line, and records the stats. With
    /// `with_usage`, also collects the lines' usage, each record naming its turn.
    fn read_from(
        &mut self,
        file: &mut File,
        start: u64,
        size: u64,
        open: Option<OpenTurn>,
        with_usage: bool,
    ) -> Result<(Assembler, u64), Error> {
        file.seek(SeekFrom::Start(start))
            .map_err(|e| self.read_error(e))?;
        let mut window = file.take(size - start);
        let mut assembler = Assembler::new(open);
        // No limit on a line's length: the window is bounded (by MAX_COMPACT_BYTES), so every
        // line comes whole. A last line without its newline is still being written: left for later.
        let mut reader = LineReader::positioned(&mut window, start, usize::MAX);
        loop {
            match reader.next_line() {
                Ok(Some(Line::Complete { offset, bytes })) => {
                    // Parsed once, for its turns and its usage.
                    let Some(value) = parse_value(bytes) else {
                        continue;
                    };
                    assembler.at(line_time(&value));
                    for record in records_of(&value, self.options) {
                        assembler.feed(offset, record);
                    }
                    if with_usage {
                        let turn = || assembler.open().and_then(|o| o.turn_id.clone());
                        if let Some(record) = self.usage_of(&value, bytes, offset, turn) {
                            self.state.responses = true;
                            self.usage.push(record);
                        }
                        if !self.state.responses {
                            for total in usage::totals_of(Some(&value), bytes, offset) {
                                self.usage.push(total);
                            }
                        }
                    }
                }
                // Never without a limit.
                Ok(Some(Line::TooLong { .. })) => {}
                Ok(None) => break,
                Err(e) => return Err(self.read_error(e)),
            }
        }
        let end = reader.offset();
        drop(reader);
        self.stats = ReadStats {
            start_offset: start,
            end_offset: end,
            bytes_read: size - start - window.limit(),
        };
        Ok((assembler, end))
    }

    /// The usage of one parsed line: a Codex rollout's through its reader (the session, model
    /// and turn are the rollout's own, as `cmstore import` reads them), any other's through
    /// [`usage::from_parsed`], in the turn `turn` gives.
    fn usage_of(
        &mut self,
        value: &serde_json::Value,
        bytes: &[u8],
        offset: u64,
        turn: impl FnOnce() -> Option<String>,
    ) -> Option<UsageRecord> {
        if let Some(codex) = &mut self.state.codex {
            return codex.feed_value(value, offset);
        }
        let mut record = usage::from_parsed(value, bytes, offset)?;
        record.turn_id = turn();
        Some(record)
    }

    /// The turns not recorded yet, now marked recorded (a turn id repeated within `turns`
    /// counts once), and whether the last of `turns` was among them.
    fn take_fresh(&mut self, turns: Vec<Turn>) -> (Vec<Turn>, bool) {
        let count = turns.len();
        let mut fresh = Vec::new();
        let mut last_is_fresh = false;
        for (i, turn) in turns.into_iter().enumerate() {
            if !self.is_recorded(&turn) {
                self.mark_recorded(&turn);
                last_is_fresh = i + 1 == count;
                fresh.push(turn);
            }
        }
        (fresh, last_is_fresh)
    }

    fn is_recorded(&self, turn: &Turn) -> bool {
        turn.turn_id
            .as_ref()
            .is_some_and(|id| self.state.recorded.contains(id))
    }

    fn mark_recorded(&mut self, turn: &Turn) {
        if let Some(id) = &turn.turn_id {
            if !self.state.recorded.contains(id) {
                self.state.recorded.push_back(id.clone());
            }
            while self.state.recorded.len() > RECORDED_IDS {
                self.state.recorded.pop_front();
            }
        }
    }

    fn read_error(&self, source: io::Error) -> Error {
        Error::Read {
            path: self.transcript.clone(),
            source,
        }
    }
}

/// True for Claude Code subagent transcripts (`subagents/agent-<id>.jsonl`), which hold only
/// sidechain lines.
fn is_subagent_transcript(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("agent-"))
}

/// True for a Codex rollout (`rollout-*.jsonl`), as `cmstore import` recognizes one.
fn is_rollout(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("rollout-"))
}

/// A file name for `key` that is safe on every platform; keys that needed changes get a hash
/// suffix so that two keys never share a cursor.
fn file_name_for(key: &str) -> String {
    let mut name: String = key
        .chars()
        .take(96)
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '-' | '_' => c,
            _ => '_',
        })
        .collect();
    if name != key || name.is_empty() {
        name.push_str(&format!("-{:016x}", fnv1a(key.as_bytes())));
    }
    name
}

/// Loads a cursor; anything unreadable or of another version counts as no cursor.
fn load(path: &Path) -> Option<State> {
    let bytes = fs::read(path).ok()?;
    let mut state: State = serde_json::from_slice(&bytes).ok()?;
    if state.v != STATE_VERSION {
        return None;
    }
    while state.recorded.len() > RECORDED_IDS {
        state.recorded.pop_front();
    }
    Some(state)
}

/// The offset of the first line that starts at or after `pos` (`size` when none does).
fn align_to_line(file: &mut File, pos: u64, size: u64) -> io::Result<u64> {
    if pos == 0 {
        return Ok(0);
    }
    // Start one byte early: if that byte is a newline, `pos` itself starts a line.
    file.seek(SeekFrom::Start(pos - 1))?;
    let mut reader = io::BufReader::with_capacity(64 * 1024, file.take(size - (pos - 1)));
    let mut skipped = Vec::new();
    let n = io::BufRead::read_until(&mut reader, b'\n', &mut skipped)?;
    if skipped.last() == Some(&b'\n') {
        Ok(pos - 1 + n as u64)
    } else {
        Ok(size)
    }
}

/// Hash of the first `len` bytes of `file`.
fn fingerprint(file: &mut File, len: u64) -> io::Result<Fingerprint> {
    let mut buf = Vec::with_capacity(len as usize);
    file.seek(SeekFrom::Start(0))?;
    file.take(len).read_to_end(&mut buf)?;
    Ok(Fingerprint {
        len: buf.len() as u64,
        hash: fnv1a(&buf),
    })
}

/// 64-bit FNV-1a: stable across Rust versions, unlike `DefaultHasher`.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Removes the cursors of sessions not seen since `cutoff` (their `<key>.json` untouched since
/// then), and workspace files untouched as long, with their lock files and any temp files a
/// crash left behind; returns how many cursors were (or, with `dry_run`, would be) removed. Cursors hold prompt text of the open
/// turn, so retention applies to them as to the store.
///
/// A cursor file is rewritten by every hook of its session, so an old one belongs to a session
/// that has ended; removing its lock file then cannot race a hook that holds it.
pub fn remove_stale(
    state_dir: &Path,
    cutoff: std::time::SystemTime,
    dry_run: bool,
) -> io::Result<usize> {
    let entries = match fs::read_dir(state_dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err),
    };
    let mut removed = 0;
    for entry in entries {
        let path = entry?.path();
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let is_cursor = name.ends_with(".json");
        // `<key>.json.tmp<pid>` is what cmstore wrote before it used `replace_private_file`.
        let is_temp = name.contains(".json.tmp")
            || crate::files::paths::replaced_by_temp(&name).is_some_and(|n| n.ends_with(".json"));
        if !is_cursor && !is_temp {
            continue;
        }
        // A hook may rename or remove a file meanwhile: that file is simply not stale.
        let modified = match fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(modified) => modified,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err),
        };
        if modified >= cutoff {
            continue;
        }
        // A workspace file (`ws-*.json`) goes with its sessions' cursors but is not one.
        if is_cursor && !name.starts_with("ws-") {
            removed += 1;
        }
        if !dry_run {
            match fs::remove_file(&path) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
                _ => {}
            }
            if is_cursor {
                let lock = path.with_extension("lock");
                match fs::remove_file(&lock) {
                    Err(err) if err.kind() != io::ErrorKind::NotFound => return Err(err),
                    _ => {}
                }
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;
    use std::thread;
    use std::time::Instant;

    fn prompt(id: &str, text: &str) -> String {
        json!({"type": "user", "uuid": id, "message": {"role": "user", "content": text}})
            .to_string()
            + "\n"
    }

    fn answer(message_id: &str, text: &str) -> String {
        json!({"type": "assistant", "uuid": format!("a-{message_id}"),
            "message": {"id": message_id, "role": "assistant",
                "content": [{"type": "text", "text": text}]}})
        .to_string()
            + "\n"
    }

    fn thinking(message_id: &str, text: &str) -> String {
        json!({"type": "assistant", "message": {"id": message_id,
            "content": [{"type": "thinking", "thinking": text, "signature": "s"}]}})
        .to_string()
            + "\n"
    }

    fn turn_end() -> String {
        "{\"type\":\"system\",\"subtype\":\"turn_duration\",\"durationMs\":9}\n".to_string()
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        state: PathBuf,
        transcript: PathBuf,
    }

    impl Fixture {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            Fixture {
                state: dir.path().join("state"),
                transcript: dir.path().join("session.jsonl"),
                _dir: dir,
            }
        }

        fn append(&self, text: &str) {
            let mut file = fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.transcript)
                .unwrap();
            file.write_all(text.as_bytes()).unwrap();
        }

        fn len(&self) -> u64 {
            fs::metadata(&self.transcript).map_or(0, |m| m.len())
        }

        fn tracker(&self) -> Tracker {
            Tracker::open(&self.state, "sess-1", &self.transcript)
                .unwrap()
                .expect("lock is free")
        }

        /// One hook: open, run `call`, save.
        fn hook<T>(&self, call: impl FnOnce(&mut Tracker) -> T) -> (T, ReadStats) {
            let mut tracker = self.tracker();
            let out = call(&mut tracker);
            let stats = tracker.stats();
            tracker.save().unwrap();
            (out, stats)
        }

        fn saved(&self) -> State {
            load(&self.state.join("sess-1.json")).expect("saved cursor")
        }
    }

    fn ids(turns: &[Turn]) -> Vec<&str> {
        turns.iter().filter_map(|t| t.turn_id.as_deref()).collect()
    }

    #[test]
    fn harvest_reads_only_appended_bytes() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "first") + &answer("m1", "one")));
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert!(turns.is_empty(), "turn 1 is still open");
        assert_eq!(stats.start_offset, 0);
        assert_eq!(stats.end_offset, fx.len());
        let before = fx.len();
        assert_eq!(fx.saved().offset, before);
        assert_eq!(fx.saved().open.unwrap().turn_id.as_deref(), Some("u1"));

        let appended = prompt("u2", "second") + &answer("m2", "two");
        fx.append(&appended);
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(ids(&turns), ["u1"]);
        assert_eq!(turns[0].user, "first");
        assert_eq!(turns[0].assistant, "one");
        assert!(turns[0].complete);
        assert_eq!(stats.start_offset, before);
        assert_eq!(stats.bytes_read, appended.len() as u64);
        assert_eq!(stats.end_offset, fx.len());
        assert_eq!(fx.saved().offset, fx.len());

        // Nothing new: nothing read, nothing returned.
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert!(turns.is_empty());
        assert_eq!(stats.bytes_read, 0);
    }

    #[test]
    fn a_turn_is_reported_once_by_harvest_and_stop() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "first") + &answer("m1", "one") + &turn_end()));
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(ids(&turns), ["u1"]);
        let ((earlier, last), _) =
            fx.hook(|t| t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap());
        assert!(earlier.is_empty());
        assert_eq!(last, None, "already harvested");

        // Stop first, then the next prompt completes the same turn for harvest: not again.
        fx.append(&(prompt("u2", "second") + &answer("m2", "two")));
        let ((earlier, last), _) =
            fx.hook(|t| t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap());
        assert!(earlier.is_empty());
        let last = last.unwrap();
        assert_eq!(last.turn_id.as_deref(), Some("u2"));
        assert_eq!(last.assistant, "two");
        assert!(last.complete);
        fx.append(&(turn_end() + &prompt("u3", "third") + &answer("m3", "three")));
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert!(turns.is_empty(), "{turns:?}");
        let ((_, again), _) =
            fx.hook(|t| t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap());
        assert_eq!(again.unwrap().turn_id.as_deref(), Some("u3"));
        let ((_, again), _) =
            fx.hook(|t| t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap());
        assert_eq!(again, None);
    }

    #[test]
    fn a_stop_hooks_feedback_continues_the_turn_and_the_next_stop_records_it_whole() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "fix the build") + &answer("m1", "it builds")));
        let ((_, last), _) = fx.hook(|t| t.finish_turn().unwrap());
        assert!(matches!(last, FinalTurn::Fresh(_)), "{last:?}");
        // The Stop hook blocked: Claude Code writes its reason as a user line.
        let feedback = "Stop hook feedback:\n- [make test]: 2 tests fail\n";
        fx.append(&(prompt("u2", feedback) + &answer("m2", "tests fixed")));
        let ((earlier, last), _) = fx.hook(|t| t.finish_turn().unwrap());
        assert!(
            earlier.is_empty(),
            "the feedback began no turn: {earlier:?}"
        );
        let FinalTurn::Continued(turn) = last else {
            panic!("{last:?}")
        };
        assert_eq!(turn.turn_id.as_deref(), Some("u1"));
        assert_eq!(turn.user, "fix the build");
        assert_eq!(turn.assistant, "tests fixed");
        assert_eq!(
            turn.feedback.as_deref(),
            Some("Stop hook feedback:\n- [make test]: 2 tests fail")
        );
        // The next prompt completes it; it is recorded already.
        fx.append(&prompt("u3", "next"));
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert!(turns.is_empty(), "{turns:?}");
    }

    #[test]
    fn stop_returns_unrecorded_earlier_turns_and_keeps_reasoning() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "a") + &answer("m1", "one")));
        fx.append(&(prompt("u2", "b") + &answer("m2", "two")));
        fx.append(&(prompt("u3", "c") + &thinking("m3", "only thoughts")));
        let ((earlier, last), _) =
            fx.hook(|t| t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap());
        assert_eq!(ids(&earlier), ["u1", "u2"]);
        let last = last.unwrap();
        assert_eq!(last.assistant, "");
        assert_eq!(last.reasoning.as_deref(), Some("only thoughts"));
        assert_eq!(fx.saved().recorded, ["u1", "u2", "u3"]);
    }

    #[test]
    fn a_turn_id_repeated_in_the_transcript_is_reported_once() {
        let fx = Fixture::new();
        let turn = prompt("u1", "a") + &answer("m1", "one") + &turn_end();
        fx.append(&(turn.clone() + &turn));
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(ids(&turns), ["u1"]);
    }

    #[test]
    fn a_half_written_line_waits_for_its_newline() {
        let fx = Fixture::new();
        let first = prompt("u1", "first");
        let reply = answer("m1", "one");
        let (head, tail) = reply.split_at(reply.len() / 2);
        fx.append(&(first.clone() + head));
        let (_, stats) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(stats.end_offset, first.len() as u64);
        assert_eq!(stats.bytes_read, fx.len());
        assert_eq!(fx.saved().offset, first.len() as u64);

        fx.append(&(tail.to_string() + &turn_end()));
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(stats.start_offset, first.len() as u64);
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].assistant, "one");
    }

    #[test]
    fn compact_keeps_the_trailing_turn_for_later() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "a") + &answer("m1", "one")));
        let second_at = fx.len();
        fx.append(&(prompt("u2", "b") + &thinking("m2", "working")));
        let (turns, stats) = fx.hook(|t| t.compact(false).unwrap());
        assert_eq!(ids(&turns), ["u1"]);
        assert_eq!(stats.start_offset, 0);
        assert_eq!(fx.saved().compact_offset, second_at);
        assert_eq!(fx.saved().offset, 0, "the harvest cursor is not moved");

        fx.append(&(answer("m2", "two") + &prompt("u3", "c")));
        let (turns, stats) = fx.hook(|t| t.compact(false).unwrap());
        assert_eq!(ids(&turns), ["u2"]);
        assert_eq!(turns[0].assistant, "two");
        assert_eq!(stats.start_offset, second_at);

        // Compaction does not mark turns recorded: harvest still reports them.
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(ids(&turns), ["u1", "u2"]);
    }

    #[test]
    fn a_shrunk_or_replaced_transcript_is_read_from_the_start() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "a") + &answer("m1", "one") + &prompt("u2", "b")));
        fx.hook(|t| t.harvest().unwrap());

        fs::write(&fx.transcript, prompt("x1", "new") + &answer("n1", "fresh")).unwrap();
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert!(turns.is_empty());
        assert_eq!(stats.start_offset, 0);
        assert_eq!(fx.saved().open.unwrap().turn_id.as_deref(), Some("x1"));

        // Same size or longer, different first line: replaced as well.
        let longer = prompt("y1", "other") + &answer("o1", "x") + &prompt("y2", "more");
        assert!(longer.len() as u64 > fx.len());
        fs::write(&fx.transcript, &longer).unwrap();
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(stats.start_offset, 0);
        assert_eq!(ids(&turns), ["y1"]);
    }

    #[test]
    fn a_corrupt_cursor_counts_as_none() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "a") + &answer("m1", "one") + &turn_end()));
        fs::create_dir_all(&fx.state).unwrap();
        fs::write(fx.state.join("sess-1.json"), b"{\"v\":1,\"offset\":").unwrap();
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(ids(&turns), ["u1"]);
        assert_eq!(stats.start_offset, 0);
    }

    #[test]
    fn a_busy_lock_gives_up() {
        let fx = Fixture::new();
        let held = fx.tracker();
        let started = Instant::now();
        let second = Tracker::open(&fx.state, "sess-1", &fx.transcript).unwrap();
        assert!(second.is_none());
        assert!(started.elapsed() >= LOCK_WAIT);
        assert!(Tracker::open(&fx.state, "other", &fx.transcript)
            .unwrap()
            .is_some());
        held.save().unwrap();
        assert!(Tracker::open(&fx.state, "sess-1", &fx.transcript)
            .unwrap()
            .is_some());
    }

    #[test]
    fn a_missing_transcript_reads_nothing_and_keeps_the_cursor() {
        let fx = Fixture::new();
        fx.append(&(prompt("u1", "a") + &answer("m1", "one")));
        fx.hook(|t| t.harvest().unwrap());
        let before = fx.saved();
        fs::rename(&fx.transcript, fx.transcript.with_extension("gone")).unwrap();
        let ((earlier, last), stats) =
            fx.hook(|t| t.finish_turn().map(|(e, l)| (e, l.into_turn())).unwrap());
        assert!(earlier.is_empty());
        assert_eq!(
            last.unwrap().turn_id.as_deref(),
            Some("u1"),
            "the open turn"
        );
        assert_eq!(stats.bytes_read, 0);
        assert_eq!(fx.saved().offset, before.offset);
    }

    #[test]
    fn a_big_transcript_seen_first_is_read_from_its_tail() {
        let fx = Fixture::new();
        let filler = answer("mf", &"x".repeat(1000));
        let mut text = String::new();
        let mut n = 0;
        while text.len() as u64 <= COLD_START_BYTES + 5000 {
            text += &prompt(&format!("u{n}"), "p");
            text += &filler;
            n += 1;
        }
        fx.append(&text);
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        let size = fx.len();
        assert!(stats.start_offset >= size - COLD_START_BYTES);
        assert!(stats.start_offset < size - COLD_START_BYTES + filler.len() as u64);
        assert_eq!(&text.as_bytes()[stats.start_offset as usize - 1], &b'\n');
        assert_eq!(stats.end_offset, size);
        assert!(!turns.is_empty() && turns.len() < n);
        let last = format!("u{}", n - 2);
        assert_eq!(
            turns.last().unwrap().turn_id.as_deref(),
            Some(last.as_str())
        );
    }

    #[test]
    fn a_huge_growth_between_hooks_is_read_from_its_tail() {
        let fx = Fixture::new();
        fx.append(&prompt("u0", "p"));
        let _ = fx.hook(|t| t.harvest().unwrap());
        let filler = answer("mf", &"x".repeat(4000));
        let mut text = String::new();
        let mut n = 1;
        while text.len() as u64 <= MAX_COMPACT_BYTES + 10_000 {
            text += &prompt(&format!("u{n}"), "p");
            text += &filler;
            n += 1;
        }
        fx.append(&text);
        let (turns, stats) = fx.hook(|t| t.harvest().unwrap());
        assert!(stats.bytes_read <= MAX_COMPACT_BYTES, "{stats:?}");
        assert_eq!(stats.end_offset, fx.len());
        assert!(!turns.is_empty());
        assert!(
            turns.iter().all(|t| t.turn_id.as_deref() != Some("u0")),
            "the cut turn is dropped"
        );
    }

    #[test]
    fn parallel_hooks_report_each_turn_once() {
        let fx = Fixture::new();
        for i in 0..20 {
            fx.append(&(prompt(&format!("u{i}"), "p") + &answer("m", "a") + &turn_end()));
        }
        let reported: Vec<Turn> = thread::scope(|scope| {
            let hooks: Vec<_> = (0..6)
                .map(|_| {
                    scope.spawn(|| {
                        let opened = Tracker::open(&fx.state, "sess-1", &fx.transcript).unwrap();
                        let mut tracker = opened.expect("hooks this short never wait 200 ms");
                        let turns = tracker.harvest().unwrap();
                        tracker.save().unwrap();
                        turns
                    })
                })
                .collect();
            hooks.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        let mut ids: Vec<_> = reported
            .iter()
            .map(|t| t.turn_id.clone().unwrap())
            .collect();
        ids.sort();
        ids.dedup();
        assert_eq!(reported.len(), 20);
        assert_eq!(ids.len(), 20);
    }

    #[test]
    fn vscode_turns_end_at_the_next_user_message_only() {
        let fx = Fixture::new();
        let line = |kind: &str, id: &str, data: serde_json::Value| {
            json!({"type": kind, "data": data, "id": id, "timestamp": "t", "parentId": null})
                .to_string()
                + "\n"
        };
        fx.append(&line(
            "session.start",
            "e0",
            json!({"producer": "copilot-agent"}),
        ));
        fx.append(&line(
            "user.message",
            "e1",
            json!({"content": "Run the tests"}),
        ));
        fx.append(&line("assistant.turn_start", "e2", json!({"turnId": "0"})));
        fx.append(&line(
            "assistant.message",
            "e3",
            json!({"messageId": "m1", "content": "", "reasoningText": "Need to run tests."}),
        ));
        fx.append(&line(
            "tool.execution_start",
            "e4",
            json!({"toolCallId": "c1", "toolName": "run_in_terminal",
                "arguments": "{\"command\":\"npm test\"}"}),
        ));
        fx.append(&line("assistant.turn_end", "e5", json!({"turnId": "0"})));
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert!(
            turns.is_empty(),
            "assistant.turn_end does not end the user's turn"
        );

        fx.append(&line(
            "assistant.message",
            "e6",
            json!({"messageId": "m2", "content": "5 passing"}),
        ));
        fx.append(&line("user.message", "e7", json!({"content": "thanks"})));
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(ids(&turns), ["e1"]);
        let turn = &turns[0];
        assert_eq!(turn.assistant, "5 passing");
        assert_eq!(turn.reasoning.as_deref(), Some("Need to run tests."));
        assert_eq!(turn.tool_calls[0].tool_name, "run_in_terminal");
        assert_eq!(turn.tool_calls[0].input, r#"{"command":"npm test"}"#);
    }

    #[test]
    fn recorded_ids_are_bounded() {
        let fx = Fixture::new();
        for i in 0..(RECORDED_IDS + 10) {
            fx.append(&(prompt(&format!("u{i}"), "p") + &answer("m", "a") + &turn_end()));
        }
        let (turns, _) = fx.hook(|t| t.harvest().unwrap());
        assert_eq!(turns.len(), RECORDED_IDS + 10);
        let recorded = fx.saved().recorded;
        assert_eq!(recorded.len(), RECORDED_IDS);
        assert_eq!(recorded.back().map(String::as_str), Some("u73"));
    }

    #[cfg(unix)]
    #[test]
    fn cursor_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let fx = Fixture::new();
        fx.append(&prompt("u1", "a"));
        fx.hook(|t| t.harvest().unwrap());
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&fx.state), 0o700);
        assert_eq!(mode(&fx.state.join("sess-1.json")), 0o600);
        assert_eq!(mode(&fx.state.join("sess-1.lock")), 0o600);
        let names: Vec<_> = fs::read_dir(&fx.state)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp file left: {names:?}");
    }

    #[test]
    fn keys_become_safe_distinct_file_names() {
        assert_eq!(file_name_for("abc-123_X"), "abc-123_X");
        let odd = file_name_for("../sess/agent:1");
        assert!(odd.starts_with("___sess_agent_1-"), "{odd}");
        assert_ne!(file_name_for("a/b"), file_name_for("a:b"));
        assert!(!file_name_for("").is_empty());
        assert!(file_name_for(&"k".repeat(500)).len() < 120);
    }

    #[test]
    fn stale_cursors_are_removed_with_their_locks() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "old.json",
            "old.lock",
            "new.json",
            "new.lock",
            "x.json.tmp42",
            ".x.json.cmstore-42.tmp",
        ] {
            fs::write(dir.path().join(name), "{}").unwrap();
        }
        let future = std::time::SystemTime::now() + std::time::Duration::from_secs(60);
        // Everything is older than a cutoff in the future; nothing is older than one in the past.
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        assert_eq!(remove_stale(dir.path(), past, false).unwrap(), 0);
        assert_eq!(
            remove_stale(dir.path(), future, true).unwrap(),
            2,
            "dry run counts"
        );
        assert!(
            dir.path().join("old.json").exists(),
            "dry run removes nothing"
        );
        assert_eq!(remove_stale(dir.path(), future, false).unwrap(), 2);
        let left: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(
            remove_stale(&dir.path().join("missing"), future, false).unwrap(),
            0
        );
    }
}
