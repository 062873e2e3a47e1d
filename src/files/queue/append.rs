//! Appending whole lines to the queue: one `write` under an exclusive advisory lock.
//!
//! The lock is taken on a sibling file (`hook-queue.jsonl.lock`), never on the queue itself:
//! queue compaction replaces the queue by rename while holding the lock, and a writer that
//! locked the old inode would append to a file nobody reads any more. Locking a file that is
//! never replaced, then opening the queue by path, always appends to the live queue.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::files::paths::{create_private_dir, dir_of, private_file_options};

/// How long a hook waits for the queue lock before appending without it.
///
/// Writers hold the lock for one `write`; only queue compaction holds it longer. A hook must
/// never stall its agent, so after this long it appends unlocked: a single `O_APPEND` write
/// of one buffer is still not interleaved with other appends on local file systems.
pub const LOCK_WAIT: Duration = Duration::from_millis(1000);

/// Why lines could not be appended.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    #[error("cannot create queue directory {path}: {source}")]
    CreateDir { path: PathBuf, source: io::Error },
    #[error("cannot open {path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot write to {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// What happened while appending, for the debug log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendReport {
    /// Bytes written, newlines included.
    pub bytes: usize,
    /// False when the lock could not be had within [`LOCK_WAIT`] and the write went unlocked.
    pub locked: bool,
}

/// Path of the lock file that guards `queue`: `<queue>.lock` beside the queue file itself, so
/// that capture, ingest and compaction take one lock whichever spelling of the queue each was
/// given (a symlink or its target; [`crate::files::lock::path_for`]).
pub fn lock_path(queue: &Path) -> PathBuf {
    crate::files::lock::path_for(queue, ".lock")
}

/// Opens (creating, private) the lock file for `queue` and takes its exclusive lock, waiting at
/// most `wait`. Returns `Ok(None)` when the lock is still held by someone else after `wait`.
pub fn lock_queue(queue: &Path, wait: Duration) -> Result<Option<File>, AppendError> {
    let path = lock_path(queue);
    crate::files::lock::exclusive(&path, wait).map_err(|source| AppendError::Open { path, source })
}

/// True when the last byte of `file` (of length `len`) is a newline (or cannot be read).
fn ends_with_newline(file: &mut File, len: u64) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))
        .and_then(|_| file.read_exact(&mut last))
        .map_or(true, |()| last[0] == b'\n')
}

/// Lines to append in one write, each serialized straight into the buffer that is written.
///
/// A hook's lines can reach a megabyte (the first hook of a session on a long transcript), and
/// on a small VM every page of heap touched is a page fault that costs more than building the
/// line: one buffer, not a `String` per line copied into a joined buffer copied again.
#[derive(Debug)]
pub struct Batch {
    /// Byte 0 is kept for the newline that ends a torn last line of the queue (see
    /// [`append_batch`]); the lines, each with its newline, follow.
    buf: Vec<u8>,
    /// Where the last line pushed starts, for [`Batch::undo_last`].
    last_start: usize,
    lines: usize,
}

impl Default for Batch {
    fn default() -> Self {
        Self::new()
    }
}

impl Batch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty batch with room for `bytes` of lines.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes.saturating_add(1));
        buf.push(b'\n');
        Batch {
            buf,
            last_start: 1,
            lines: 0,
        }
    }

    /// Adds `line`, which must not contain a newline.
    pub fn push_line(&mut self, line: &str) {
        debug_assert!(!line.contains('\n'), "queue lines are single lines");
        self.last_start = self.buf.len();
        self.buf.extend_from_slice(line.as_bytes());
        self.buf.push(b'\n');
        self.lines += 1;
    }

    /// Adds `value` as one line of compact JSON (which never contains a newline) and returns
    /// the line's length without its newline.
    pub fn push_json<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> usize {
        self.last_start = self.buf.len();
        // Serializing into a Vec cannot fail for the plain data queue lines hold.
        serde_json::to_writer(&mut self.buf, value).expect("queue line serializes");
        let len = self.buf.len() - self.last_start;
        self.buf.push(b'\n');
        self.lines += 1;
        len
    }

    /// Removes the line pushed last (once: a second call removes nothing more).
    pub fn undo_last(&mut self) {
        if self.buf.len() > self.last_start {
            self.buf.truncate(self.last_start);
            self.lines -= 1;
        }
    }

    /// How many lines the batch holds.
    pub fn len(&self) -> usize {
        self.lines
    }

    /// True when the batch holds no line.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// The lines, each without its newline.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        // Every byte pushed came from a `&str` or from serde_json, so the buffer is UTF-8.
        std::str::from_utf8(&self.buf[1..])
            .expect("queue lines are UTF-8")
            .lines()
    }
}

/// Appends `lines` (each without its newline) to `queue` in a single write under the lock.
///
/// Creates the queue's directory (0700) and the queue (0600) when missing. Lines must not
/// contain a newline; serialized JSON never does.
pub fn append_lines(queue: &Path, lines: &[String]) -> Result<AppendReport, AppendError> {
    let mut batch = Batch::new();
    for line in lines {
        batch.push_line(line);
    }
    append_batch(queue, &batch)
}

/// Appends the lines of `batch` to `queue` in a single write under the lock, as
/// [`append_lines`] does.
pub fn append_batch(queue: &Path, batch: &Batch) -> Result<AppendReport, AppendError> {
    if batch.is_empty() {
        return Ok(AppendReport {
            bytes: 0,
            locked: true,
        });
    }
    let dir = dir_of(queue);
    create_private_dir(dir).map_err(|source| AppendError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    // The lock is released when `guard` drops, after the queue file is closed. A file system
    // without advisory locks (some network mounts) must not cost the event: append unlocked.
    let guard = lock_queue(queue, LOCK_WAIT).unwrap_or(None);
    let mut file = private_file_options()
        .create(true)
        .read(true)
        .append(true)
        .open(queue)
        .map_err(|source| AppendError::Open {
            path: queue.to_path_buf(),
            source,
        })?;
    let len_before = file.metadata().map(|m| m.len()).unwrap_or(0);
    // A writer died mid-line (or a full disk cut its write): the reserved leading newline ends
    // that fragment so it becomes one rejected line instead of swallowing ours.
    let torn = len_before > 0 && !ends_with_newline(&mut file, len_before);
    let out = if torn {
        &batch.buf[..]
    } else {
        &batch.buf[1..]
    };
    if let Err(source) = file.write_all(out) {
        // Leave no torn line behind for the next append to join.
        let _ = file.set_len(len_before);
        return Err(AppendError::Write {
            path: queue.to_path_buf(),
            source,
        });
    }
    drop(file);
    let locked = guard.is_some();
    drop(guard);
    Ok(AppendReport {
        bytes: out.len(),
        locked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn appends_whole_lines_and_creates_private_files() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("sub").join("q.jsonl");
        append_lines(&queue, &["{\"a\":1}".into()]).unwrap();
        let report = append_lines(&queue, &["{\"b\":2}".into(), "{\"c\":3}".into()]).unwrap();
        assert!(report.locked);
        assert_eq!(report.bytes, 16);
        let text = std::fs::read_to_string(&queue).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&queue).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(lock_path(&queue))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = std::fs::metadata(queue.parent().unwrap())
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    #[test]
    fn a_batch_with_room_reserved_writes_what_one_without_writes() {
        for room in [0, 3, 1 << 20] {
            let mut batch = Batch::with_capacity(room);
            assert!(batch.is_empty());
            batch.push_line("{\"a\":1}");
            batch.push_json(&serde_json::json!({"b": 2}));
            let dir = tempfile::tempdir().unwrap();
            let queue = dir.path().join("q.jsonl");
            std::fs::write(&queue, "torn").unwrap();
            append_batch(&queue, &batch).unwrap();
            let text = std::fs::read_to_string(&queue).unwrap();
            assert_eq!(text, "torn\n{\"a\":1}\n{\"b\":2}\n", "room {room}");
        }
    }

    #[test]
    fn a_batch_holds_its_lines_and_undoes_the_last_once() {
        let mut batch = Batch::new();
        assert!(batch.is_empty());
        batch.push_line("{\"a\":1}");
        assert_eq!(batch.push_json(&serde_json::json!({"b": "x y"})), 11);
        assert_eq!(batch.len(), 2);
        batch.undo_last();
        batch.undo_last();
        assert_eq!(batch.lines().collect::<Vec<_>>(), ["{\"a\":1}"]);
        batch.push_json(&serde_json::json!({"c": 3}));
        assert_eq!(
            batch.lines().collect::<Vec<_>>(),
            ["{\"a\":1}", "{\"c\":3}"]
        );
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("q.jsonl");
        let report = append_batch(&queue, &batch).unwrap();
        assert_eq!(report.bytes, 16);
        let text = std::fs::read_to_string(&queue).unwrap();
        assert_eq!(text, "{\"a\":1}\n{\"c\":3}\n");
    }

    #[test]
    fn an_empty_batch_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("sub").join("q.jsonl");
        let report = append_batch(&queue, &Batch::new()).unwrap();
        assert_eq!(report.bytes, 0);
        assert!(!queue.parent().unwrap().exists());
    }

    #[test]
    fn a_torn_last_line_is_ended_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("q.jsonl");
        std::fs::write(&queue, "{\"a\":1}\n{\"cut").unwrap();
        append_lines(&queue, &["{\"b\":2}".into()]).unwrap();
        let text = std::fs::read_to_string(&queue).unwrap();
        assert_eq!(
            text, "{\"a\":1}\n{\"cut\n{\"b\":2}\n",
            "our line stays whole"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_failed_write_leaves_no_partial_line() {
        // A queue that is a link to /dev/full, which fails every write with ENOSPC (the lock
        // file stays in the temp dir).
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("q.jsonl");
        std::os::unix::fs::symlink("/dev/full", &queue).unwrap();
        let err = append_lines(&queue, &["{}".into()]).unwrap_err();
        assert!(matches!(err, AppendError::Write { .. }), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn two_spellings_of_one_queue_take_one_lock() {
        // The queue kept elsewhere and linked from the home directory: capture configured
        // with the link and prune with the target (or the other way round) must exclude each
        // other, or a hook can append to the inode compaction is renaming away.
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("elsewhere")).unwrap();
        let real = dir.path().join("elsewhere").join("queue.jsonl");
        std::fs::write(&real, "").unwrap();
        let link = dir.path().join("hook-queue.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        for (first, second) in [(&link, &real), (&real, &link)] {
            let held = lock_queue(first, Duration::ZERO)
                .unwrap()
                .expect("free lock");
            assert!(
                lock_queue(second, Duration::ZERO).unwrap().is_none(),
                "{} takes the lock {} holds",
                second.display(),
                first.display()
            );
            drop(held);
        }
        // The lock file sits beside the file itself, not beside the link.
        assert!(!dir.path().join("hook-queue.jsonl.lock").exists());
        assert!(dir
            .path()
            .join("elsewhere")
            .join("queue.jsonl.lock")
            .exists());
    }

    #[test]
    fn a_held_lock_is_waited_for_then_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("q.jsonl");
        let held = lock_queue(&queue, Duration::ZERO)
            .unwrap()
            .expect("free lock");
        let start = Instant::now();
        assert!(lock_queue(&queue, Duration::from_millis(50))
            .unwrap()
            .is_none());
        assert!(start.elapsed() >= Duration::from_millis(50));
        drop(held);
        assert!(lock_queue(&queue, Duration::ZERO).unwrap().is_some());
    }
}
