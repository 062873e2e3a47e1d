//! Queue compaction: rewrite `hook-queue.jsonl` without the ingested lines older than a cutoff.
//!
//! The caller holds the compaction lock ([`lock`]), so compactions of one queue never overlap.
//! It may hold the ingest lock ([`crate::write::ingest::lock`]) too, or a `cmstore ingest` may be
//! running: then the two coordinate through the queue lock. Ingest starts a source over
//! (retires its row, reads a file from 0) only while it holds that lock; compaction renames the
//! new file over the queue *and* records it in `sources` while it holds it (steps 3 and 4). So
//! ingest never sees the renamed file without its row, never takes it for a replaced file, and
//! never reads it again from its start; until then it may go on in the old file, which step 4
//! accounts for. Compaction waits for the database under the queue lock, ingest never waits for
//! the queue lock inside a transaction: no deadlock. Steps, and what a crash at each point
//! leaves:
//!
//! 1. Check that the store follows this very file (identity, as ingest checks it). `prune`
//!    drains the queue into the store just before when it holds the ingest lock, so as much as
//!    possible is ingested, and old lines are pruned from the store in the same run.
//! 2. Copy the ingested lines to keep (age unknown or at/after the cutoff) into
//!    `<queue>.compact.tmp` in the same directory (that of the file the queue path leads to,
//!    when it is a symlink: the link stays), then the not-yet-ingested rest, and fsync
//!    it, all without the queue lock: hooks keep appending. *Crash: a temp file is left, the queue is intact;
//!    the next compaction overwrites the temp file.*
//! 3. Take the queue lock (hooks wait for it, at most [`crate::files::queue::append::LOCK_WAIT`]), check
//!    the queue and its `sources` row are still those of step 1, copy the tail appended since
//!    step 2, fsync, rename the temp file over the queue. The lock is held only for the tail
//!    copy, the rename and step 4 (milliseconds), so no hook gives up waiting and appends to the
//!    old file.
//! 4. Still under the lock, in one transaction, retire the old source row (`retired_why =
//!    'compacted'`) and create one for the new file at the new place of what is ingested now
//!    (the offset read in this transaction, less the dropped bytes); release, fsync the
//!    directory. *Crash between 3 and 4:
//!    ingest sees a new inode and reads the new file from 0; every line in it is either already
//!    stored (absorbed by `UNIQUE(id)`) or new. Nothing is lost; lines without an `id` are keyed
//!    by a hash of their bytes, which did not change, and rejected lines by the event line
//!    before them, which stayed with them.*
//!
//! Lines beyond the committed offset are always kept, whatever their age. Of the ingested
//! ones, what leaves is what the store no longer holds (`Sorter`): lines older than the
//! cutoff, lines without a time whose event prune deleted, and the rejected lines after a line
//! that leaves (a rejected line goes with the event line before it; those before any event line
//! stay).
//!
//! The ContextManager extension tails the same queue and keeps its place as a byte offset in
//! [`EXTENSION_OFFSET_FILE`] beside it, read when it starts. Right after the rename of step 3
//! that offset is moved to the same line of the new file (back by the bytes of the dropped
//! lines before it), so an extension started afterwards repeats nothing and skips only the old
//! lines dropped here. A running extension keeps its place in memory and saves it over ours,
//! hence `docs/prune.md`'s advice to compact with VS Code closed. An offset that is missing,
//! unreadable or past the end of the file is left as it is.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use rusqlite::Connection;

use crate::files::identity::FileId;
use crate::files::paths::private_file_options;
use crate::files::queue::append::{lock_queue, LOCK_WAIT};
use crate::files::queue::read::DEFAULT_MAX_LINE_BYTES;
use crate::model::queue_line::parse::parse_line;
use crate::store::write::{active_source, Advance, SourceRow};
use crate::store::{Batch, Store};
use crate::support::clock::now_ms;
use crate::write::ingest::source::{self, Verdict};

/// The ContextManager extension's place in the queue: a decimal byte offset, in a file of this
/// name in the queue's directory (docs/prune.md, "`--compact-queue`").
pub const EXTENSION_OFFSET_FILE: &str = ".queue-offset";

/// The name of the queue file the extension tails, and whose place [`EXTENSION_OFFSET_FILE`]
/// holds.
pub const EXTENSION_QUEUE_FILE: &str = "hook-queue.jsonl";

/// How long compaction waits for the queue lock (hooks hold it for one write each).
const QUEUE_LOCK_WAIT: Duration = Duration::from_secs(5);

/// What a compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Compaction {
    /// Ingested lines dropped (older than the cutoff).
    pub dropped_lines: u64,
    /// Their bytes, newlines included.
    pub dropped_bytes: u64,
    /// Ingested lines kept.
    pub kept_lines: u64,
    /// Bytes beyond the committed offset carried over (appended or not yet ingested).
    pub tail_bytes: u64,
    /// Size of the new queue file.
    pub new_size: u64,
    /// How long the queue lock was held.
    pub lock_held: Duration,
    /// The extension's offset ([`EXTENSION_OFFSET_FILE`]) before and after, when it was moved.
    pub extension_offset: Option<(u64, u64)>,
    /// Why the extension's offset could not be moved, if it could not (the compaction itself
    /// went through).
    pub extension_offset_error: Option<String>,
}

/// Path of the lock that keeps a second compaction off `queue` (the temporary file and the
/// rename are one compaction's): `<queue>.compact.lock`, beside the file itself when `queue`
/// is a symlink ([`crate::files::lock::path_for`]), as the temporary file is.
pub fn lock_path(queue: &Path) -> PathBuf {
    crate::files::lock::path_for(queue, ".compact.lock")
}

/// Takes the compaction lock of `queue` ([`lock_path`]), in one try: `Ok(None)` while another
/// compaction holds it. Held until the returned file is dropped.
pub fn lock(queue: &Path) -> io::Result<Option<File>> {
    crate::files::lock::exclusive(&lock_path(queue), Duration::ZERO)
}

/// Path of the temporary file compaction writes next to `queue`.
///
/// Not [`crate::files::paths::replace_file`], which writes bytes it is given at once: compaction
/// streams the old file into its temp file in two parts, the second under the queue lock
/// after checking the queue's identity, and renames while still holding that lock.
pub fn temp_path(queue: &Path) -> PathBuf {
    let mut name = queue.file_name().unwrap_or_default().to_os_string();
    name.push(".compact.tmp");
    queue.with_file_name(name)
}

/// Which ingested lines leave the queue, line by line in queue order: the store's own rules,
/// so that what leaves is exactly what prune deleted (or would) and a queue read again from
/// its start brings nothing back.
///
/// - A line with a time of its own leaves when it is older than the cutoff.
/// - A line without one has the time of ingest in the store: it leaves once prune deleted its
///   event, which `pruned_lines` remembers (its key is forgotten once the line is gone).
/// - A rejected line goes with the closest line before it that is an event (ingest keys and
///   dates it by that line); one before any event line stays.
struct Sorter {
    cutoff_ms: i64,
    /// `pruned_lines` when compaction started.
    pruned: HashSet<String>,
    /// Whether the last event line left; `None` before the first one.
    last_event_left: Option<bool>,
    /// Keys of `pruned_lines` whose lines left.
    forget: Vec<String>,
    /// The start of an event line that stays whatever its age.
    keep_event_at: Option<u64>,
}

impl Sorter {
    fn new(conn: &Connection, cutoff_ms: i64) -> anyhow::Result<Sorter> {
        Ok(Sorter {
            cutoff_ms,
            pruned: remembered_pruned(conn)?,
            last_event_left: None,
            forget: Vec::new(),
            keep_event_at: None,
        })
    }

    /// Whether `line` (newline excluded), which starts at byte `start`, leaves the queue.
    fn leaves(&mut self, start: u64, line: &[u8]) -> bool {
        let row = match line.len() > DEFAULT_MAX_LINE_BYTES {
            true => None,
            // `now` only matters for lines without a time, which are not judged by it.
            false => parse_line(line, i64::MAX).ok(),
        };
        let Some(row) = row else {
            return self.last_event_left == Some(true);
        };
        let pruned = self.pruned.contains(row.id.as_ref());
        let leaves = match row.dated {
            true => row.ts < self.cutoff_ms,
            false => pruned,
        } && self.keep_event_at != Some(start);
        if leaves && pruned {
            self.forget.push(row.id.into_owned());
        }
        self.last_event_left = Some(leaves);
        leaves
    }
}

/// The keys in `pruned_lines` (none in a database from before it, which a dry run does not
/// upgrade).
fn remembered_pruned(conn: &Connection) -> anyhow::Result<HashSet<String>> {
    let exists: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'pruned_lines'",
        [],
        |r| r.get(0),
    )?;
    if !exists {
        return Ok(HashSet::new());
    }
    let mut stmt = conn.prepare("SELECT key FROM pruned_lines")?;
    let keys = stmt
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    Ok(keys)
}

/// Counts what [`compact`] would drop, changing nothing: ingested lines older than the cutoff.
/// Returns `(lines, bytes)`; `conn` may be read-only.
pub fn count(conn: &Connection, queue: &Path, cutoff_ms: i64) -> anyhow::Result<(u64, u64)> {
    let Some((file, source)) = ingested_part(conn, queue)? else {
        return Ok((0, 0));
    };
    let offset = u64::try_from(source.offset).unwrap_or(0);
    let mut sorter = Sorter::new(conn, cutoff_ms)?;
    let mut dropped = (0, 0);
    let mut start = 0;
    for_each_line(&file, offset, |line| {
        if sorter.leaves(start, trim_newline(line)) {
            dropped.0 += 1;
            dropped.1 += line.len() as u64;
        }
        start += line.len() as u64;
        Ok(())
    })?;
    Ok(dropped)
}

/// Rewrites `queue` without the ingested lines older than `cutoff_ms` (see the module docs).
/// The caller must hold the ingest lock of `store`.
///
/// `beside_ingest`: a `cmstore ingest` may be running (the caller could not take the ingest
/// lock). Compaction then coordinates with it through the queue lock (see the module docs)
/// and keeps the last ingested event line, whatever its age, so that a rejected line that
/// ingest records after it from the old file keeps its key in the new one.
pub fn compact(
    store: &Store,
    queue: &Path,
    cutoff_ms: i64,
    beside_ingest: bool,
) -> anyhow::Result<Compaction> {
    let mut report = Compaction::default();
    if !queue.exists() {
        return Ok(report);
    }
    let mut old = OldQueue::open(store, queue)?;
    let mut sorter = Sorter::new(&*store.conn()?, cutoff_ms)?;
    if beside_ingest {
        sorter.keep_event_at = last_event_line(&old.file, old.offset)?;
    }
    let mut copy = copy_unlocked(&mut old, &mut sorter, &mut report)?;
    let recorded = swap_in(store, &old, &mut copy, &sorter.forget, &mut report)?;
    let copied = copy.copied;
    report.tail_bytes = copied - old.offset;
    move_extension_place(&old, copied, &mut report);
    // Whatever step 4 did: the new file is the queue now, and late bytes must reach it.
    carry_over_late_writes(&old, copied, &mut report)?;
    recorded?;
    Ok(report)
}

/// Where the last line before `offset` that is an event starts, if any.
fn last_event_line(file: &File, offset: u64) -> anyhow::Result<Option<u64>> {
    let mut start = offset;
    let mut found = false;
    source::lines_before(file, offset, DEFAULT_MAX_LINE_BYTES, |length, line| {
        start -= length + 1;
        found = line.is_some_and(|bytes| parse_line(bytes, i64::MAX).is_ok());
        found
    })?;
    Ok(found.then_some(start))
}

/// The queue as the store follows it, before compaction (step 1).
struct OldQueue<'q> {
    /// The queue path as configured (hooks lock and append through it).
    path: &'q Path,
    /// The file the path leads to when it is a symlink: what the rename replaces.
    target: PathBuf,
    file: File,
    id: FileId,
    /// The `sources` row that follows it, as it was when compaction started.
    source: SourceRow,
    /// The committed offset then: the end of what is known ingested.
    offset: u64,
    /// The extension's place in this file, when it keeps one beside it.
    extension: Option<ExtensionPlace>,
    extension_file: PathBuf,
}

impl<'q> OldQueue<'q> {
    fn open(store: &Store, queue: &'q Path) -> anyhow::Result<OldQueue<'q>> {
        let Some((file, source)) = ingested_part(&*store.conn()?, queue)? else {
            bail!(
                "{} is not ingested up to a known offset (new or replaced); run `cmstore ingest --once` first",
                queue.display()
            );
        };
        let id = FileId::of(&file.metadata()?);
        // Renaming over a symlink would replace the link itself: the user's layout (a queue
        // kept on another disk, say) would be gone, and the old file left behind with every
        // line. The queue lock is the target's whatever the spelling (`lock_path`), as hooks
        // take it.
        let target = crate::files::paths::resolve_link(queue)
            .with_context(|| format!("cannot resolve {}", queue.display()))?;
        // Only beside the extension's own queue file: a `.queue-offset` next to some other
        // queue is not its place in this one.
        let extension_file = queue.with_file_name(EXTENSION_OFFSET_FILE);
        let extension = (queue.file_name() == Some(EXTENSION_QUEUE_FILE.as_ref()))
            .then(|| read_extension_offset(&extension_file))
            .flatten()
            .map(ExtensionPlace::new);
        Ok(OldQueue {
            path: queue,
            target,
            file,
            id,
            offset: u64::try_from(source.offset).unwrap_or(0),
            source,
            extension,
            extension_file,
        })
    }
}

/// The new queue being written next to the old one.
struct NewCopy {
    temp: PathBuf,
    out: BufWriter<File>,
    /// Bytes of the old file read so far.
    copied: u64,
}

/// Step 2: the kept ingested lines, then the rest, into the temp file and synced, all without
/// the queue lock (hooks keep appending).
fn copy_unlocked(
    old: &mut OldQueue<'_>,
    sorter: &mut Sorter,
    report: &mut Compaction,
) -> anyhow::Result<NewCopy> {
    let temp = temp_path(&old.target);
    let out = private_file_options()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&temp)
        .with_context(|| format!("cannot create {}", temp.display()))?;
    let mut out = BufWriter::new(out);
    let mut line_start = 0;
    for_each_line(&old.file, old.offset, |line| {
        let dropped = sorter.leaves(line_start, trim_newline(line));
        if let Some(place) = &mut old.extension {
            place.line(line_start, line.len() as u64, dropped);
        }
        line_start += line.len() as u64;
        if dropped {
            report.dropped_lines += 1;
            report.dropped_bytes += line.len() as u64;
        } else {
            report.kept_lines += 1;
            out.write_all(line)?;
        }
        Ok(())
    })
    .with_context(|| format!("cannot copy {} to {}", old.path.display(), temp.display()))?;
    let copied = old.offset + copy_from(&old.file, old.offset, &mut out)?;
    // The bulk of the fsync happens here, unlocked; under the lock only the tail is synced.
    out.flush()?;
    out.get_ref()
        .sync_data()
        .with_context(|| format!("cannot sync {}", temp.display()))?;
    Ok(NewCopy { temp, out, copied })
}

/// Steps 3 and 4: under the queue lock, the tail appended since step 2, the rename over the
/// queue and the new file's `sources` row. Nothing changes (and the temp file goes) when the
/// lock stays busy or the queue was replaced meanwhile. Once renamed, what step 4 gave: an
/// error then still leaves the new file the queue (ingest reads it again from its start).
fn swap_in(
    store: &Store,
    old: &OldQueue<'_>,
    copy: &mut NewCopy,
    forget: &[String],
    report: &mut Compaction,
) -> anyhow::Result<anyhow::Result<()>> {
    let Some(lock) = lock_queue(old.path, QUEUE_LOCK_WAIT)? else {
        let _ = std::fs::remove_file(&copy.temp);
        bail!(
            "the queue lock {} stayed busy for {:?}; nothing changed",
            crate::files::queue::append::lock_path(old.path).display(),
            QUEUE_LOCK_WAIT
        );
    };
    let held = Instant::now();
    let now_id = std::fs::metadata(old.path).map(|m| FileId::of(&m)).ok();
    // Ingest starts a source over only under this lock, so the row cannot change from here on.
    let followed = active_source(&*store.conn()?, &source_key(old.path))?;
    if now_id != Some(old.id) || followed.map(|row| row.id) != Some(old.source.id) {
        drop(lock);
        let _ = std::fs::remove_file(&copy.temp);
        bail!(
            "{} was replaced during compaction; nothing changed",
            old.path.display()
        );
    }
    copy.copied += copy_from(&old.file, copy.copied, &mut copy.out)?;
    copy.out.flush()?;
    copy.out
        .get_ref()
        .sync_data()
        .with_context(|| format!("cannot sync {}", copy.temp.display()))?;
    std::fs::rename(&copy.temp, &old.target).with_context(|| {
        format!(
            "cannot rename {} over {}",
            copy.temp.display(),
            old.target.display()
        )
    })?;
    // Still under the lock: an ingester that finds the new file waits for its row.
    let recorded = record_new_source(store, old, copy.copied, forget, report);
    drop(lock);
    report.lock_held = held.elapsed();
    // The rename is atomic either way; syncing the directory only makes it durable, and hooks
    // may append to the new file meanwhile.
    sync_dir(&old.target);
    Ok(recorded)
}

/// The extension's place, moved to the same line of the new file at once: the old offset
/// means nothing in it. Bytes carried over later land after what hooks append meanwhile, so
/// only a place within what the new file holds now (`copied`) can be moved.
fn move_extension_place(old: &OldQueue<'_>, copied: u64, report: &mut Compaction) {
    let Some(moved) = old.extension.and_then(|place| place.moved(copied)) else {
        return;
    };
    match write_extension_offset(&old.extension_file, moved.1) {
        Ok(()) => report.extension_offset = Some(moved),
        Err(e) => {
            report.extension_offset_error = Some(format!(
                "cannot update {}: {e}",
                old.extension_file.display()
            ))
        }
    }
}

/// A hook that gave up waiting (only possible while the lock was held past `LOCK_WAIT`) may
/// have opened the old file before the rename and write to it after: such bytes are carried
/// over rather than lost. Such a hook writes within moments of giving up, so one more look
/// after `LOCK_WAIT` covers it.
fn carry_over_late_writes(
    old: &OldQueue<'_>,
    mut copied: u64,
    report: &mut Compaction,
) -> anyhow::Result<()> {
    for look in 0..2 {
        if look == 1 {
            if report.lock_held < LOCK_WAIT / 2 {
                break;
            }
            std::thread::sleep(LOCK_WAIT + Duration::from_millis(200));
        }
        if old.file.metadata()?.len() > copied {
            let lock = lock_queue(old.path, QUEUE_LOCK_WAIT)?;
            let mut new = private_file_options()
                .append(true)
                .open(old.path)
                .with_context(|| format!("cannot reopen {}", old.path.display()))?;
            let late = copy_from(&old.file, copied, &mut new)?;
            copied += late;
            report.tail_bytes += late;
            drop(lock);
        }
    }
    Ok(())
}

/// Step 4: in one transaction, the old source row retired and the new file's created, at the
/// place in it of what is ingested now (ingest may have gone on in the old file meanwhile: the
/// bytes after the old offset were copied as they were, `dropped_bytes` earlier), and the
/// pruned lines that left forgotten. `copied`: the bytes of the old file the new one holds.
fn record_new_source(
    store: &Store,
    old: &OldQueue<'_>,
    copied: u64,
    forget: &[String],
    report: &mut Compaction,
) -> anyhow::Result<()> {
    let queue = old.path;
    let new_file = File::open(queue).with_context(|| format!("cannot open {}", queue.display()))?;
    let new_meta = new_file.metadata()?;
    let new_id = FileId::of(&new_meta);
    report.new_size = new_meta.len();
    let key = source_key(queue);
    let mut conn = store.conn()?;
    let batch = Batch::begin(&mut conn, now_ms())?;
    let Some(live) = batch
        .active_source(&key)?
        .filter(|row| row.id == old.source.id)
    else {
        bail!(
            "{} is followed by another sources row than when compaction started; \
             ingest will read the compacted file again from its start (nothing lost)",
            queue.display()
        );
    };
    let live_offset = u64::try_from(live.offset).unwrap_or(0);
    // Lines ingested from the old file since step 1 are where they were, `dropped_bytes`
    // earlier. Past `copied` (a late writer's bytes, carried over to the end later) the old
    // offset is the place known to be a line's start: what follows is read again.
    let (ingested, lines) = match live_offset <= copied {
        true => (
            live_offset,
            report.kept_lines as i64 + (live.lines - old.source.lines),
        ),
        false => (old.offset, report.kept_lines as i64),
    };
    let kept_bytes = ingested - report.dropped_bytes;
    batch.retire_source(&live, "compacted")?;
    let fresh = batch.create_source(&key, new_id.device, new_id.inode)?;
    batch.forget_pruned(forget)?;
    let advance = Advance {
        offset: kept_bytes as i64,
        marker: source::marker(&new_file, kept_bytes)?,
        fingerprint: source::fingerprint(&new_file)?,
        size: report.new_size as i64,
        lines,
    };
    batch
        .commit(&fresh, &advance)
        .context("recording the compacted queue")?;
    Ok(())
}

/// The extension's offset in the old queue, and the bytes before it that compaction drops.
#[derive(Debug, Clone, Copy)]
struct ExtensionPlace {
    offset: u64,
    dropped_before: u64,
}

impl ExtensionPlace {
    fn new(offset: u64) -> ExtensionPlace {
        ExtensionPlace {
            offset,
            dropped_before: 0,
        }
    }

    /// Takes note of the old file's line at `start`, `len` bytes, `dropped` or kept. A place
    /// inside a dropped line goes to where that line was: the start of the next line kept.
    fn line(&mut self, start: u64, len: u64, dropped: bool) {
        if dropped && start < self.offset {
            self.dropped_before += len.min(self.offset - start);
        }
    }

    /// `(old, new)` offsets when the place moved and is within the old file's first
    /// `old_size` bytes (past them, the extension starts from the end anyway).
    fn moved(self, old_size: u64) -> Option<(u64, u64)> {
        (self.dropped_before > 0 && self.offset <= old_size)
            .then(|| (self.offset, self.offset - self.dropped_before))
    }
}

/// The offset in the extension's file: a decimal number, surrounding whitespace allowed.
fn read_extension_offset(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Replaces the extension's file with `offset`, by rename: never a half-written number.
fn write_extension_offset(path: &Path, offset: u64) -> io::Result<()> {
    crate::files::paths::replace_file(path, offset.to_string().as_bytes())?;
    sync_dir(path);
    Ok(())
}

/// The source key ingest uses for `queue`: its absolute path.
fn source_key(queue: &Path) -> String {
    std::path::absolute(queue)
        .unwrap_or_else(|_| queue.to_path_buf())
        .to_string_lossy()
        .into_owned()
}

/// The open queue and the `sources` row that follows it, when the store follows this very file.
fn ingested_part(conn: &Connection, queue: &Path) -> anyhow::Result<Option<(File, SourceRow)>> {
    let file = match File::open(queue) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", queue.display())),
    };
    let meta = file.metadata()?;
    let src = active_source(conn, &source_key(queue))?;
    let Some(src) = src else {
        return Ok(None);
    };
    if source::check(&src, FileId::of(&meta), meta.len(), &file)? != Verdict::Same {
        return Ok(None);
    }
    Ok(Some((file, src)))
}

/// Calls `f` with each line (newline included) of the first `end` bytes of `file`.
fn for_each_line(
    file: &File,
    end: u64,
    mut f: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(1 << 20, file.try_clone()?.take(end));
    reader.get_mut().get_mut().seek(SeekFrom::Start(0))?;
    let mut line = Vec::new();
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        f(&line)?;
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// Copies `file` from `from` to its current end into `out`; returns the bytes copied.
fn copy_from(file: &File, from: u64, out: &mut dyn Write) -> io::Result<u64> {
    let mut f = file.try_clone()?;
    f.seek(SeekFrom::Start(from))?;
    io::copy(&mut f, out)
}

/// Makes the rename durable (Unix); elsewhere the rename is as durable as the platform makes it.
fn sync_dir(queue: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(crate::files::paths::dir_of(queue)) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = queue;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The old file's lines as (length, dropped), fed to a place at `offset`.
    fn place_after(offset: u64, lines: &[(u64, bool)]) -> ExtensionPlace {
        let mut place = ExtensionPlace::new(offset);
        let mut start = 0;
        for &(len, dropped) in lines {
            place.line(start, len, dropped);
            start += len;
        }
        place
    }

    const LINES: [(u64, bool); 5] = [(10, true), (20, false), (30, true), (40, false), (50, true)];

    #[test]
    fn the_extensions_place_moves_back_by_the_dropped_lines_before_it() {
        // After the first dropped line: it now starts the file.
        assert_eq!(place_after(10, &LINES).moved(150), Some((10, 0)));
        // After the kept 20 and the dropped 30: at the start of the kept 40.
        assert_eq!(place_after(60, &LINES).moved(150), Some((60, 20)));
        // Inside a kept line: the same byte of it.
        assert_eq!(place_after(70, &LINES).moved(150), Some((70, 30)));
        // At the end, after every line.
        assert_eq!(place_after(150, &LINES).moved(150), Some((150, 60)));
        // Inside a dropped line (the 30 at 30..60): where that line was, before the kept 40.
        assert_eq!(place_after(45, &LINES).moved(150), Some((45, 20)));
    }

    #[test]
    fn the_extensions_place_stays_when_it_cannot_be_placed_or_need_not_move() {
        // Nothing dropped before it.
        assert_eq!(place_after(0, &LINES).moved(150), None);
        assert_eq!(place_after(5, &[(10, false), (10, true)]).moved(20), None);
        // Past the end of the old file: the extension starts from the end anyway.
        assert_eq!(place_after(151, &LINES).moved(150), None);
    }

    #[test]
    fn the_extensions_file_is_read_leniently_and_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EXTENSION_OFFSET_FILE);
        assert_eq!(read_extension_offset(&path), None);
        std::fs::write(&path, " 1234\n").unwrap();
        assert_eq!(read_extension_offset(&path), Some(1234));
        std::fs::write(&path, "12a").unwrap();
        assert_eq!(read_extension_offset(&path), None);
        write_extension_offset(&path, 77).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "77");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temp file left"
        );
    }
}
