//! Ingest: mirror the queue into the store, every line exactly once.
//!
//! A pass runs batches until no complete line is left. Each batch is one `BEGIN IMMEDIATE`
//! transaction ([`crate::store::Batch`]): check the source's identity, read up to
//! `batch_lines` complete lines from the stored offset, insert rows, rejects and counters, then
//! move the offset with a compare-and-set. A crash anywhere leaves rows and offset consistent.

pub mod budget_notice;
pub mod chores;
pub mod follow;
pub mod lines;
pub mod source;
pub mod sweep;

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use anyhow::Context;

use crate::files::identity::FileId;
use crate::files::ingest_lock::{holder_path, lock_path, Holder};
use crate::files::queue::append::lock_queue;
use crate::files::queue::read::{LineReader, DEFAULT_MAX_LINE_BYTES};
use crate::model::queue_line::parse::{parse_line, reject_key, RejectedBytes, FILE_START};
use crate::model::queue_line::EventRow;
use crate::store::checkpoint::Checkpointer;
use crate::store::write::{Advance, Fate, Rejected};
use crate::store::{self, Batch, SourceRow, Store};
use crate::support::clock::now_ms;
use lines::{BatchLines, Parsed};
use source::Verdict;

/// Default number of lines per transaction.
pub const DEFAULT_BATCH_LINES: usize = 10_000;

/// A batch also ends once it has read this many bytes, so a run of huge lines cannot make one
/// transaction (and its WAL) arbitrarily large.
pub const MAX_BATCH_BYTES: u64 = 64 * 1024 * 1024;

/// A backlog at least this large, and at least as large as the database, is loaded with the
/// secondary indexes set aside ([`DeferIndexes::Auto`]).
pub const BULK_MIN_BYTES: u64 = 64 * 1024 * 1024;

/// When a pass sets the secondary indexes aside and rebuilds them once at the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DeferIndexes {
    /// For a backlog of at least 64 MiB that is also at least the size of the database's pages
    /// in use (rebuilding then costs less than keeping the indexes up to date row by row).
    #[default]
    Auto,
    /// For the backlog found when ingest starts, whatever its size (later passes of follow
    /// mode keep the indexes).
    Always,
    /// Never: queries stay fast while a backlog loads, at the cost of a slower load.
    Never,
}

/// Tuning of a pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Lines per transaction.
    pub batch_lines: usize,
    /// Longer lines (newline excluded) are rejected as `too_long` without being buffered.
    pub max_line_bytes: usize,
    /// When to load without secondary indexes.
    pub defer_indexes: DeferIndexes,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            batch_lines: DEFAULT_BATCH_LINES,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            defer_indexes: DeferIndexes::Auto,
        }
    }
}

/// Why ingest cannot run; callers branch on it for the exit message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Another `cmstore ingest` holds the database's ingest lock.
    #[error("another `cmstore ingest` is already running on this database (lock {})", .lock.display())]
    AlreadyRunning {
        /// The lock file.
        lock: PathBuf,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot open ingest lock {}", .lock.display())]
    Lock {
        /// The lock file.
        lock: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// A pass committed its batches but could not rebuild the indexes it set aside (the next
/// pass, or the next ingest, retries). Carries what the pass did, so totals stay exact.
#[derive(Debug, thiserror::Error)]
#[error("cannot rebuild the secondary indexes (the next ingest will retry)")]
pub struct RebuildFailed {
    /// What the pass committed.
    pub stats: Stats,
    /// Why the rebuild failed.
    #[source]
    pub source: store::Error,
}

/// Running totals of what ingest did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Lines consumed (rows, duplicates and rejects).
    pub lines: u64,
    /// Bytes consumed, newlines included.
    pub bytes: u64,
    /// New event rows.
    pub rows: u64,
    /// Lines whose id was already stored.
    pub duplicates: u64,
    /// Lines recorded in `rejects`.
    pub rejects: u64,
    /// Committed transactions.
    pub batches: u64,
    /// Times the queue was found truncated or replaced.
    pub restarts: u64,
    /// Secondary indexes rebuilt after a load without them.
    pub rebuilt_indexes: u64,
    /// Time spent rebuilding them, in milliseconds.
    pub rebuild_ms: u64,
    /// Secondary indexes set aside during this pass (seen by the progress callback only).
    pub indexes_set_aside: u64,
    /// The pass has read everything and is rebuilding the indexes it set aside.
    pub rebuilding: bool,
}

impl Stats {
    /// Adds the counts of `other`, a later pass.
    pub fn add(&mut self, other: &Stats) {
        self.lines += other.lines;
        self.bytes += other.bytes;
        self.rows += other.rows;
        self.duplicates += other.duplicates;
        self.rejects += other.rejects;
        self.batches += other.batches;
        self.restarts += other.restarts;
        self.rebuilt_indexes += other.rebuilt_indexes;
        self.rebuild_ms += other.rebuild_ms;
        // Not totals: where the latest pass is.
        self.indexes_set_aside = other.indexes_set_aside;
        self.rebuilding = other.rebuilding;
    }
}

/// How long [`lock`] tries: `cmstore status` takes the lock for an instant to see whether it
/// is held ([`probe`](crate::files::ingest_lock::probe)), and an ingest starting just then must not take that for another one.
const LOCK_WAIT: Duration = Duration::from_millis(250);

/// The exclusive ingest lock of a database, held while this lives (or until the process
/// dies: a killed ingester never blocks the next one). Its [`Holder`] file is removed when it
/// is dropped, before the lock is released; one left by a killed holder is stale.
#[derive(Debug)]
pub struct IngestLock {
    /// The locked file; closing it releases the lock, after `drop` ran.
    _file: File,
    holder: PathBuf,
}

impl Drop for IngestLock {
    fn drop(&mut self) {
        // Best effort: a file left behind is reported as stale, never taken for a holder.
        let _ = std::fs::remove_file(&self.holder);
    }
}

/// Takes the exclusive ingest lock of `db` for a process that reads `queue`, and writes who
/// holds it to [`holder_path`] (best effort: without it `status` still sees the lock, only
/// not whose it is).
pub fn lock(db: &Path, queue: &Path) -> Result<IngestLock, Error> {
    let lock = lock_path(db);
    // On a fresh machine the home directory does not exist yet.
    crate::files::paths::create_private_dir(crate::files::paths::dir_of(db)).map_err(|source| {
        Error::Lock {
            lock: lock.clone(),
            source,
        }
    })?;
    let file = match crate::files::lock::exclusive(&lock, LOCK_WAIT) {
        Ok(Some(file)) => file,
        Ok(None) => return Err(Error::AlreadyRunning { lock }),
        Err(source) => return Err(Error::Lock { lock, source }),
    };
    let holder = Holder {
        pid: std::process::id(),
        started_ms: now_ms(),
        command: std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" "),
        queue: std::path::absolute(queue)
            .unwrap_or_else(|_| queue.to_path_buf())
            .to_string_lossy()
            .into_owned(),
        schema: Some(crate::store::MIGRATIONS.len() as i64),
    };
    let path = holder_path(db);
    // Written in place, not renamed over: on Windows a rename over a file someone reads fails.
    let written = crate::files::paths::private_file_options()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .and_then(|mut f| {
            let json = serde_json::to_vec(&holder).map_err(io::Error::other)?;
            io::Write::write_all(&mut f, &json)
        });
    if written.is_err() {
        // A stale file of a killed holder must not pass for this one's.
        let _ = std::fs::remove_file(&path);
    }
    Ok(IngestLock {
        _file: file,
        holder: path,
    })
}

/// How far ingest is behind the end of the queue ([`Ingester::behind`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Behind {
    /// Bytes not ingested yet.
    pub bytes: u64,
    /// Complete lines among them, when they were counted.
    pub lines: Option<u64>,
}

/// An open queue file and its identity.
struct Held {
    file: File,
    id: FileId,
}

/// Ingests one queue file into one store.
pub struct Ingester {
    store: Store,
    path: PathBuf,
    key: String,
    options: Options,
    /// The file being read. Kept open across passes (Unix) so that lines appended to a file
    /// that is then deleted or renamed away are still drained before moving on.
    held: Option<Held>,
    /// (identity, size, mtime) when the last pass found nothing to do: a cheap idle check.
    idle_at: Option<(FileId, u64, Option<SystemTime>)>,
    /// Copies the WAL into the database while batches are read and parsed. Without it (the
    /// thread could not start, or failed), commits checkpoint themselves (SQLite's backstop:
    /// [`store::WalLimits`]).
    checkpointer: Option<Checkpointer>,
    /// False until a pass has made sure no index is left deferred by an interrupted load.
    indexes_settled: bool,
    /// The current pass found at least [`BULK_MIN_BYTES`] to read: its batches let the WAL grow
    /// larger before it starts over ([`store::BULK_WAL_LIMITS`]).
    large_backlog: bool,
    /// Passes run so far.
    passes: u64,
    /// The current batch's lines (the buffer is reused).
    lines: BatchLines,
    /// The next batch's lines, read while the current batch is written ([`ReadAhead`]).
    ahead: BatchLines,
    /// Where the lines in `ahead` come from, while they may still be used.
    read_ahead: Option<ReadAhead>,
    /// Told about problems ingest recovered from (the caller prints them; by default they
    /// are dropped).
    on_warning: Box<dyn FnMut(Warning) + Send>,
    /// The line a rejected line at the end of the last batch would follow, so that the next
    /// batch need not read back for it.
    anchor: Option<AnchorAt>,
}

/// The last line before a point of the queue that became an event: what a rejected line at
/// that point is keyed by and goes with ([`crate::model::queue_line::parse::reject_key`]).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Anchor {
    /// That line's event id, or [`FILE_START`] when no line before the point is an event.
    id: String,
    /// Its time, when it has one of its own.
    ts: Option<i64>,
    /// It was pruned (or is as old as what was): the rejected lines after it are too.
    pruned: bool,
    /// Lines rejected since it.
    gap: u64,
}

impl Anchor {
    fn file_start() -> Anchor {
        Anchor {
            id: FILE_START.to_string(),
            ts: None,
            pruned: false,
            gap: 0,
        }
    }

    /// The line `row` became `fate`: the lines after it follow it.
    fn event(&mut self, row: &EventRow<'_>, fate: Fate) {
        // Reused: no allocation per line.
        self.id.clear();
        self.id.push_str(&row.id);
        self.ts = row.dated.then_some(row.ts);
        self.pruned = fate == Fate::Pruned;
        self.gap = 0;
    }

    /// The key of the next line, rejected.
    fn next_reject(&mut self, bytes: RejectedBytes<'_>) -> String {
        self.gap += 1;
        reject_key(&self.id, self.gap, bytes)
    }
}

/// Where an [`Anchor`] was: in source row `source`, for the point `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AnchorAt {
    source: i64,
    offset: u64,
    anchor: Anchor,
}

/// A problem ingest recovered from and went on: worth telling the user, not an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Warning {
    /// The background checkpoint thread failed; commits checkpoint themselves from now on.
    #[error(
        "background WAL checkpoints stopped ({why}); commits checkpoint themselves from now on"
    )]
    CheckpointsStopped {
        /// The thread's failure.
        why: String,
    },
    /// Another writer held the database past the busy timeout; follow mode retries.
    #[error("database busy ({error}); retrying")]
    DatabaseBusy {
        /// The error the pass ended with.
        error: String,
    },
}

/// Lines read ahead, on the parsing thread, for the next batch, while a batch of at least
/// [`lines::THREAD_MIN_LINES`] lines is written. The next batch uses them only if it finds the
/// same file and begins exactly where they do (its source check passed), and the file still
/// holds the same bytes before where they end (an append rolled back meanwhile would not);
/// otherwise it reads again. Only where files have an identity (Unix): elsewhere the path is
/// reopened for each batch and could name another file by then.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ReadAhead {
    id: FileId,
    /// The `sources` row they were read for.
    source: i64,
    start: u64,
    /// Just after the last line read ahead.
    end: u64,
    /// [`source::marker`] at `end` when they were read.
    marker: Option<String>,
}

impl ReadAhead {
    /// Whether a batch of file `id` (of `size` bytes now) that begins at `start` of source
    /// row `source` may use these lines.
    fn still_valid(
        &self,
        file: &File,
        id: FileId,
        source: i64,
        start: u64,
        size: u64,
    ) -> io::Result<bool> {
        Ok(self.id == id
            && self.source == source
            && self.start == start
            && self.end <= size
            && source::marker(file, self.end)? == self.marker)
    }
}

/// The source row a batch continues, as [`Ingester::find_source`] found it.
struct FoundSource {
    row: SourceRow,
    /// The row was created by this batch (the store followed no file yet).
    created: bool,
    /// 1 when the file changed and reading starts over in a new row, else 0.
    restarts: u64,
}

impl FoundSource {
    /// True when the batch continues an existing row where it was: with nothing new to read,
    /// there is nothing to commit.
    fn unchanged(&self) -> bool {
        self.restarts == 0 && !self.created
    }
}

/// The part of the file a batch may read: from the committed offset to the size taken in
/// the transaction.
#[derive(Clone, Copy)]
struct Span<'f> {
    file: &'f File,
    id: FileId,
    start: u64,
    size: u64,
}

/// What [`Ingester::write_lines`] wrote.
struct Written {
    /// Complete lines written (as events or rejects).
    lines: u64,
    /// The offset just after them.
    end: u64,
    /// The next batch's lines, read ahead meanwhile.
    next: Option<ReadAhead>,
    /// The line a rejected line at `end` would follow.
    anchor: Anchor,
}

enum Outcome {
    /// Nothing to read (or the held file no longer matches the source).
    Idle,
    /// A batch committed.
    Done(Stats),
}

/// What [`Ingester::find_source`] found.
enum Found {
    /// The row to continue.
    Source(FoundSource),
    /// A `stale` file (one kept open only to drain) is no longer what the store follows.
    Stale,
    /// The file is not the one the store follows, and the queue lock is not held.
    NeedsLock,
}

/// How long a batch waits for the queue lock before reading a queue again from its start.
/// Compaction holds it while it swaps the file and its `sources` row (milliseconds); past this,
/// ingest goes on without it (a queue read again loses and doubles nothing, it only costs).
pub const RESTART_LOCK_WAIT: Duration = Duration::from_secs(5);

impl Ingester {
    /// An ingester of the queue at `path` into `store`.
    pub fn new(store: Store, path: &Path, options: Options) -> Ingester {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let checkpointer = Checkpointer::start(&store).ok();
        Ingester {
            checkpointer,
            indexes_settled: false,
            large_backlog: false,
            passes: 0,
            lines: BatchLines::default(),
            ahead: BatchLines::default(),
            read_ahead: None,
            store,
            key: path.to_string_lossy().into_owned(),
            path,
            options,
            held: None,
            idle_at: None,
            on_warning: Box::new(|_| {}),
            anchor: None,
        }
    }

    /// Sends every [`Warning`] to `sink` from now on.
    pub fn on_warning(&mut self, sink: impl FnMut(Warning) + Send + 'static) {
        self.on_warning = Box::new(sink);
    }

    /// Tells the caller about `warning`.
    fn warn(&mut self, warning: Warning) {
        (self.on_warning)(warning);
    }

    /// The store this ingests into.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The queue file this reads (absolute).
    pub fn queue(&self) -> &Path {
        &self.path
    }

    /// How far behind the end of the queue the committed offset is: bytes, and complete lines
    /// when there are at most `count_up_to` bytes to count them in (a backlog of gigabytes is
    /// not read twice just to say how many lines it holds).
    pub fn behind(&self, count_up_to: u64) -> anyhow::Result<Behind> {
        let Ok(meta) = std::fs::metadata(&self.path) else {
            return Ok(Behind::default());
        };
        let conn = self.store.conn()?;
        let offset =
            store::write::active_source(&conn, &self.key)?.map_or(0, |s| s.offset.max(0) as u64);
        drop(conn);
        // A queue shorter than the offset was truncated: all of it is to be read again.
        let from = if meta.len() < offset { 0 } else { offset };
        let bytes = meta.len() - from;
        let lines = match bytes <= count_up_to {
            true => Some(
                crate::files::tail::count_lines(&self.path, from, bytes)
                    .with_context(|| format!("cannot read {}", self.path.display()))?,
            ),
            false => None,
        };
        Ok(Behind { bytes, lines })
    }

    /// Whether a pass now would find exactly what the last one left idle (one `stat`, no
    /// database): the queue has not changed since, and no index waits to be rebuilt.
    fn still_idle(&self) -> bool {
        let Some(idle) = self.idle_at else {
            return false;
        };
        if !self.indexes_settled {
            return false;
        }
        std::fs::metadata(&self.path)
            .is_ok_and(|meta| (FileId::of(&meta), meta.len(), meta.modified().ok()) == idle)
    }

    /// Bytes between the committed offset and the end of the queue (0 when unknown).
    pub fn backlog(&self) -> anyhow::Result<u64> {
        let Ok(meta) = std::fs::metadata(&self.path) else {
            return Ok(0);
        };
        let conn = self.store.conn()?;
        let source = store::write::active_source(&conn, &self.key)?;
        Ok(meta
            .len()
            .saturating_sub(source.map_or(0, |s| s.offset.max(0) as u64)))
    }

    /// Runs batches until the queue holds no complete unread line or `stop` is set (checked
    /// between commits). `on_batch` sees the totals after every commit. A large backlog is
    /// loaded without secondary indexes (see [`DeferIndexes`]); they are back, rebuilt, when
    /// this returns, and so are any that an interrupted earlier load left out.
    pub fn pass(
        &mut self,
        stop: &AtomicBool,
        on_batch: &mut dyn FnMut(&Stats),
    ) -> anyhow::Result<Stats> {
        // Follow mode's idle check, made often: what `drain` would find first, without the
        // database (the backlog query and a pooled connection cost more than the rest).
        if self.still_idle() {
            return Ok(Stats::default());
        }
        let backlog = self.backlog()?;
        let bulk = self.bulk_load(backlog);
        self.large_backlog = backlog >= BULK_MIN_BYTES;
        self.passes += 1;
        let mut set_aside = 0;
        if bulk {
            let mut conn = self.store.conn()?;
            set_aside = store::indexes::defer(&mut conn)
                .context("cannot set secondary indexes aside")? as u64;
            self.indexes_settled = false;
        }
        let drained = self.drain(stop, &mut |s: &Stats| {
            on_batch(&Stats {
                indexes_set_aside: set_aside,
                ..*s
            })
        });
        // Follow mode may idle for hours between passes: no need to hold the buffers meanwhile.
        self.lines.release();
        self.ahead.release();
        self.read_ahead = None;
        if self.indexes_settled {
            return drained;
        }
        if let (Ok(stats), true) = (&drained, set_aside > 0) {
            // Tell the caller why nothing moves for a while.
            on_batch(&Stats {
                indexes_set_aside: set_aside,
                rebuilding: true,
                ..*stats
            });
        }
        let started = std::time::Instant::now();
        let restored = self.store.conn().and_then(|mut conn| {
            // The connection may come from a batch of a large backlog: back to the usual
            // backstop, so that the rebuild's pages get checkpointed.
            store::set_wal_limits(&conn, store::WAL_LIMITS)?;
            store::indexes::restore(&mut conn)
        });
        let mut stats = drained?;
        let rebuilt = restored.map_err(|source| RebuildFailed { stats, source })?;
        self.indexes_settled = true;
        if rebuilt > 0 {
            stats.rebuilt_indexes = rebuilt as u64;
            stats.rebuild_ms = started.elapsed().as_millis() as u64;
            on_batch(&stats);
        }
        Ok(stats)
    }

    /// Whether a pass that finds `backlog` bytes to read should load without secondary
    /// indexes.
    fn bulk_load(&self, backlog: u64) -> bool {
        let min = match self.options.defer_indexes {
            DeferIndexes::Never => return false,
            // Only the backlog found at start: in follow mode every later pass would rebuild
            // the indexes for a few lines.
            DeferIndexes::Always if self.passes > 0 => return false,
            DeferIndexes::Always => 1,
            DeferIndexes::Auto => BULK_MIN_BYTES,
        };
        if backlog < min {
            return false;
        }
        if self.options.defer_indexes == DeferIndexes::Auto {
            // Pages in use, not the file's size: after a prune the file keeps free pages until
            // its vacuum steps hand them back, and a store that looks bigger than its rows
            // would keep its indexes live for a backlog that loads faster without them.
            let stored = self
                .store
                .conn()
                .ok()
                .and_then(|conn| store::used_bytes(&conn).ok())
                .unwrap_or_else(|| std::fs::metadata(self.store.path()).map_or(0, |m| m.len()));
            return backlog >= stored;
        }
        true
    }

    fn drain(
        &mut self,
        stop: &AtomicBool,
        on_batch: &mut dyn FnMut(&Stats),
    ) -> anyhow::Result<Stats> {
        let mut total = Stats::default();
        let mut conflicts = 0;
        while !stop.load(Ordering::SeqCst) {
            let fresh = match File::open(&self.path) {
                Ok(file) => {
                    let meta = file
                        .metadata()
                        .with_context(|| format!("cannot stat {}", self.path.display()))?;
                    Some((file, meta))
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot open {}", self.path.display()))
                }
            };
            let fresh_id = fresh.as_ref().map(|(_, m)| FileId::of(m));
            let stale = match (&self.held, fresh_id) {
                (Some(held), Some(id)) => held.id != id,
                (Some(_), None) => true,
                (None, _) => false,
            };
            // The file as it was before this batch: what an idle batch saw at most. A probe
            // taken after it could include a line appended meanwhile, and the next pass, finding
            // the same probe, would leave that line unread until the file changed again.
            let mut before = None;
            if !stale {
                let Some((file, meta)) = fresh else { break };
                let id = FileId::of(&meta);
                let probe = (id, meta.len(), meta.modified().ok());
                before = Some(probe);
                if self.idle_at == Some(probe) {
                    break;
                }
                if self.held.is_none() && id.is_known() {
                    self.held = Some(Held { file, id });
                } else if !id.is_known() {
                    // Without an inode there is nothing to hold on to: read what the path names.
                    self.held = None;
                    self.read_ahead = None;
                    match self.batch_checked(&file, id, false, &mut conflicts)? {
                        Outcome::Idle => {
                            self.idle_at = Some(probe);
                            break;
                        }
                        Outcome::Done(s) => {
                            total.add(&s);
                            on_batch(&total);
                        }
                    }
                    continue;
                }
            }
            let held = self.held.as_ref().expect("held file");
            let (file, id) = (held.file.try_clone()?, held.id);
            match self.batch_checked(&file, id, stale, &mut conflicts)? {
                Outcome::Done(s) => {
                    self.idle_at = None;
                    total.add(&s);
                    on_batch(&total);
                }
                Outcome::Idle if stale => {
                    // The old file is drained: move on to whatever the path names now.
                    self.held = None;
                    self.read_ahead = None;
                }
                Outcome::Idle => {
                    self.idle_at = before;
                    break;
                }
            }
        }
        Ok(total)
    }

    fn batch_checked(
        &mut self,
        file: &File,
        id: FileId,
        stale: bool,
        conflicts: &mut u32,
    ) -> anyhow::Result<Outcome> {
        let outcome = match self.batch(file, id, stale, false) {
            Ok(None) => {
                // Outside any transaction: compaction waits for the database while it holds
                // the queue lock. It replaces the queue and its `sources` row under that lock,
                // so once it is ours, the store follows either the old file or the new one,
                // never a renamed file without its row: a compacted queue is never taken for
                // a replaced one and read again from its start.
                let lock = lock_queue(&self.path, RESTART_LOCK_WAIT).ok().flatten();
                let outcome = self.batch(file, id, stale, true);
                drop(lock);
                // Only a batch without the lock asks for it: `None` cannot come back.
                outcome.map(|o| o.unwrap_or(Outcome::Done(Stats::default())))
            }
            other => other.map(|o| o.unwrap_or(Outcome::Done(Stats::default()))),
        };
        match outcome {
            Err(e) => match e.downcast_ref::<store::Error>() {
                Some(store::Error::OffsetMoved { .. }) if *conflicts < 5 => {
                    // Someone else committed first; re-read the source and try again.
                    *conflicts += 1;
                    Ok(Outcome::Done(Stats::default()))
                }
                _ => Err(e),
            },
            ok => ok,
        }
    }

    /// One transaction: identity check, up to `batch_lines` lines, compare-and-set.
    /// `locked`: the queue lock is held, so the source may start over; without it, a file
    /// that changed gives `None` and nothing is written (the caller takes the lock and asks
    /// again).
    fn batch(
        &mut self,
        file: &File,
        id: FileId,
        stale: bool,
        locked: bool,
    ) -> anyhow::Result<Option<Outcome>> {
        let now = now_ms();
        let mut conn = self.store.conn()?;
        self.prepare_wal(&conn)?;
        let mut batch = Batch::begin(&mut conn, now).context("cannot start ingest transaction")?;
        // Looked at inside the transaction, like the offset it is compared with: another
        // ingester (one reaching the database by another path, past the lock) may have
        // committed lines beyond a size taken before, which would look like a truncation.
        let size = file.metadata()?.len();
        let found = match self.find_source(&batch, file, id, size, stale, locked)? {
            Found::Source(found) => found,
            Found::Stale => return Ok(Some(Outcome::Idle)),
            Found::NeedsLock => return Ok(None),
        };
        let src = &found.row;
        if found.restarts > 0 {
            // Only the new row, while the queue lock is held (hooks wait for it): the lines
            // come in the next batches, without it.
            let advance = Advance {
                offset: 0,
                marker: None,
                fingerprint: source::fingerprint(file)?,
                size: size as i64,
                lines: 0,
            };
            batch.commit(src, &advance)?;
            self.read_ahead = None;
            self.anchor = None;
            return Ok(Some(Outcome::Done(Stats {
                restarts: found.restarts,
                batches: 1,
                ..Stats::default()
            })));
        }
        let start = u64::try_from(src.offset).unwrap_or(0);
        if start >= size && found.unchanged() {
            return Ok(Some(Outcome::Idle));
        }
        let span = Span {
            file,
            id,
            start,
            size,
        };
        let written = self.write_lines(&mut batch, src, span, now, found.restarts == 0)?;
        if written.lines == 0 && found.unchanged() {
            // Nothing written: the anchor read back still holds for the same point.
            self.anchor = Some(AnchorAt {
                source: src.id,
                offset: written.end,
                anchor: written.anchor,
            });
            return Ok(Some(Outcome::Idle));
        }
        let advance = Advance {
            offset: written.end as i64,
            marker: source::marker(file, written.end)?,
            fingerprint: match src.fingerprint {
                Some(_) => None,
                None => source::fingerprint(file)?,
            },
            size: size as i64,
            lines: written.lines as i64,
        };
        let counts = batch.commit(src, &advance)?;
        self.anchor = Some(AnchorAt {
            source: src.id,
            offset: written.end,
            anchor: written.anchor,
        });
        self.read_ahead = written.next;
        let bytes = written.end - start;
        if let Some(checkpointer) = &mut self.checkpointer {
            checkpointer.committed(bytes);
        }
        if written.lines == 0 && found.restarts == 0 {
            // Only the new source row was written; there is nothing more to read now.
            return Ok(Some(Outcome::Idle));
        }
        Ok(Some(Outcome::Done(Stats {
            restarts: found.restarts,
            lines: written.lines,
            bytes,
            rows: counts.rows,
            duplicates: counts.duplicates,
            rejects: counts.rejects,
            batches: 1,
            ..Stats::default()
        })))
    }

    /// Sets the WAL's limits for this batch (on every batch: the pool may hand out any of its
    /// connections) and lets the checkpointer catch up first; a failed checkpointer is
    /// reported once and dropped.
    fn prepare_wal(&mut self, conn: &rusqlite::Connection) -> anyhow::Result<()> {
        let limits = if self.large_backlog {
            store::BULK_WAL_LIMITS
        } else {
            store::WAL_LIMITS
        };
        store::set_wal_limits(conn, limits).context("cannot set the WAL's limits")?;
        if let Some(checkpointer) = &mut self.checkpointer {
            if !checkpointer.before_batch(limits.restart_bytes) {
                // Said once: SQLite's backstop checkpoint does the work from here on.
                let why = checkpointer.failure().unwrap_or_default();
                self.checkpointer = None;
                self.warn(Warning::CheckpointsStopped { why });
            }
        }
        Ok(())
    }

    /// The source row this batch continues: the active one when it still follows this file,
    /// else, when `locked` (the queue lock is held), a new one (the old one retired).
    fn find_source(
        &self,
        batch: &Batch<'_>,
        file: &File,
        id: FileId,
        size: u64,
        stale: bool,
        locked: bool,
    ) -> anyhow::Result<Found> {
        let (row, created) = match batch.active_source(&self.key)? {
            Some(row) => (row, false),
            None if stale => return Ok(Found::Stale),
            None => (batch.create_source(&self.key, id.device, id.inode)?, true),
        };
        let verdict = source::check(&row, id, size, file)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        Ok(match verdict {
            Verdict::Same => Found::Source(FoundSource {
                row,
                created,
                restarts: 0,
            }),
            Verdict::Changed(_) if stale => Found::Stale,
            Verdict::Changed(_) if !locked => Found::NeedsLock,
            Verdict::Changed(why) => {
                batch.retire_source(&row, why)?;
                Found::Source(FoundSource {
                    row: batch.create_source(&self.key, id.device, id.inode)?,
                    created,
                    restarts: 1,
                })
            }
        })
    }

    /// Writes the batch's lines (read ahead during the previous batch, or read now) into
    /// `batch`, each as an event or a reject, while the next batch's lines are read ahead.
    fn write_lines(
        &mut self,
        batch: &mut Batch<'_>,
        src: &SourceRow,
        span: Span<'_>,
        now: i64,
        may_reuse: bool,
    ) -> anyhow::Result<Written> {
        let Span {
            file,
            id,
            start,
            size,
        } = span;
        let batch_lines = self.options.batch_lines;
        // Before the lines are read: reading back moves the file's position, which the reader
        // (and the read-ahead, on the parse thread) rely on.
        let mut anchor = match self.anchor.take() {
            Some(at) if at.source == src.id && at.offset == start => at.anchor,
            _ => self
                .anchor_before(batch, file, start, now)
                .with_context(|| format!("cannot read {}", self.path.display()))?,
        };
        let mut reader = self
            .take_lines(file, id, src.id, start, size, may_reuse)
            .with_context(|| format!("cannot read {}", self.path.display()))?;
        let lines_end = reader.offset();
        let mut write = |parsed: Parsed<'_>| -> Result<(), store::Error> {
            match parsed {
                Parsed::Row {
                    offset,
                    row,
                    digest,
                } => {
                    let fate = batch.insert_event(&row, src.id, offset as i64, &digest)?;
                    anchor.event(&row, fate);
                }
                Parsed::Reject {
                    offset,
                    length,
                    reason,
                    prefix,
                    bytes,
                } => {
                    let key = anchor.next_reject(bytes);
                    let line = Rejected {
                        offset: offset as i64,
                        length: length as i64,
                        reason: reason.as_str(),
                        prefix,
                        key: &key,
                        line_ts: anchor.ts,
                        after_pruned: anchor.pruned,
                    };
                    batch.reject(src, &line)?;
                }
            }
            Ok(())
        };
        let mut lines = self.lines.len() as u64;
        // The reader is the next batch's while this one is written, unless a long line is
        // still to be taken from it.
        let may_read_ahead = id.is_known() && !self.lines.long_next();
        let source_id = src.id;
        let mut next = None;
        {
            let (ahead, reader) = (&mut self.ahead, &mut reader);
            let read_next = || {
                if !may_read_ahead {
                    return;
                }
                // A failed read is the next batch's to find and report. (The writer does not
                // use the file while this runs: the marker may move its shared offset.)
                if let Ok(()) = ahead.read(reader, lines_end, batch_lines, MAX_BATCH_BYTES) {
                    if !ahead.is_empty() || ahead.long_next() {
                        let end = reader.offset();
                        if let Ok(marker) = source::marker(file, end) {
                            next = Some(ReadAhead {
                                id,
                                source: source_id,
                                start: lines_end,
                                end,
                                marker,
                            });
                        }
                    }
                }
            };
            self.lines.for_each_and(now, &mut write, read_next)?;
        }
        let mut end = lines_end;
        if self.lines.long_next() {
            // Still in the reader's buffer: parsed there rather than copied.
            let line = reader
                .next_line()
                .with_context(|| format!("cannot read {}", self.path.display()))?;
            if let Some(line) = line {
                lines += 1;
                write(lines::parse(line, now))?;
            }
            end = reader.offset();
        }
        Ok(Written {
            lines,
            end,
            next,
            anchor,
        })
    }

    /// The line a rejected line at `offset` follows, read back from `file`: the closest line
    /// before it that is an event (how ingest parsed it then), and how many rejected lines
    /// come between.
    fn anchor_before(
        &self,
        batch: &Batch<'_>,
        file: &File,
        offset: u64,
        now: i64,
    ) -> anyhow::Result<Anchor> {
        let mut anchor = Anchor::file_start();
        let mut found = None;
        source::lines_before(
            file,
            offset,
            self.options.max_line_bytes,
            |_, line| match line.map(|bytes| parse_line(bytes, now)) {
                Some(Ok(row)) => {
                    found = Some((row.id.into_owned(), row.ts, row.dated));
                    true
                }
                _ => {
                    anchor.gap += 1;
                    false
                }
            },
        )?;
        if let Some((id, ts, dated)) = found {
            anchor.pruned = batch.is_pruned(&id, ts, dated)?;
            anchor.ts = dated.then_some(ts);
            anchor.id = id;
        }
        Ok(anchor)
    }

    /// Puts the lines of a batch that begins at `start` in `self.lines`: those read ahead
    /// during the previous batch if they are still valid (and `may_reuse`: the source did not
    /// start over), else read now. Returns the reader, positioned after them.
    fn take_lines<'f>(
        &mut self,
        file: &'f File,
        id: FileId,
        source: i64,
        start: u64,
        size: u64,
        may_reuse: bool,
    ) -> io::Result<LineReader<&'f File>> {
        let max_line = self.options.max_line_bytes;
        if let Some(ahead) = self.read_ahead.take() {
            if may_reuse && ahead.still_valid(file, id, source, start, size)? {
                std::mem::swap(&mut self.lines, &mut self.ahead);
                return LineReader::new(file, ahead.end, max_line);
            }
        }
        let mut reader = LineReader::new(file, start, max_line)?;
        self.lines.read(
            &mut reader,
            start,
            self.options.batch_lines,
            MAX_BATCH_BYTES,
        )?;
        Ok(reader)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::ingest_lock::{probe, Liveness};

    #[test]
    fn the_lock_says_who_holds_it_until_it_is_let_go() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("cmstore.db");
        let queue = dir.path().join("hook-queue.jsonl");
        assert_eq!(
            probe(&db).unwrap(),
            Liveness {
                running: false,
                holder: None
            }
        );
        let lock = lock(&db, &queue).unwrap();
        let seen = probe(&db).unwrap();
        assert!(seen.running);
        let holder = seen.holder.expect("a holder file");
        assert_eq!(holder.pid, std::process::id());
        assert_eq!(holder.queue, queue.to_string_lossy());
        assert!(matches!(
            super::lock(&db, &queue),
            Err(Error::AlreadyRunning { .. })
        ));
        drop(lock);
        assert!(!holder_path(&db).exists());
        assert!(!probe(&db).unwrap().running);
    }
}
