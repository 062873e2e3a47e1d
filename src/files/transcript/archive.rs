//! A compressed copy of each transcript an import reads, in cmstore's own folder
//! (`archive_transcripts = true`; docs/usage.md "The archive"), so that nothing depends on the
//! agents' files: Claude Code deletes its transcripts after `cleanupPeriodDays`.
//!
//! The copy of `<user home>/<path>` is `<cmstore home>/archive/home/<path>.gz` (a file outside
//! the user's home: `archive/other/<its path>.gz`): gzip, so `zcat` or any gzip reader gives
//! the file back, and `cmstore import` reads the folder as it reads the agents' own. A copy is
//! written whole to a private temporary file and renamed over the last one: a process killed
//! while writing it leaves the last copy whole (and its temporary file, which the next writer
//! replaces once it has been idle for ten minutes). It bears the modification time of the file it
//! copies and, as every gzip file does, its length (mod 2^32) in its last four bytes: a copy
//! with both the file's is current, at the cost of a `stat` and a read of four bytes (the time
//! alone would miss lines written within a coarse clock's tick).
//!
//! The copy holds the agent's file as it is: neither redaction nor `store_text = false` nor
//! retention applies to it (docs/usage.md).

use std::fs::{self, File};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use crate::files::paths::{create_private_dir, dir_of, private_file_options};

/// The extension of a copy.
const EXTENSION: &str = "gz";

/// Where the copy of `source` goes in the archive at `root`, `home` the user's home (both
/// paths as [`fs::canonicalize`] gives them, so that one file has one copy whatever path named
/// it).
pub fn copy_path(root: &Path, home: Option<&Path>, source: &Path) -> PathBuf {
    let (base, rest) = match home.and_then(|h| source.strip_prefix(h).ok()) {
        Some(rest) => ("home", rest),
        None => ("other", source),
    };
    // Only the names: a root, a drive or a `..` names no folder of the archive.
    let mut path = root.join(base);
    for part in rest.components() {
        if let Component::Normal(name) = part {
            path.push(name);
        }
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".");
    name.push(EXTENSION);
    path.set_file_name(name);
    path
}

/// The name of the file `path` is a copy of (the path without `.gz`), when it is a copy.
pub fn original_name(path: &Path) -> Option<PathBuf> {
    (path.extension()? == EXTENSION).then(|| path.with_extension(""))
}

/// Makes `copy` a copy of `source` unless it is one of it as it is now (the same modification
/// time and length); whether it wrote one.
pub fn keep(source: &Path, copy: &Path) -> io::Result<bool> {
    let meta = fs::metadata(source)?;
    let modified = meta.modified()?;
    if is_copy_of(copy, (modified, meta.len())) {
        return Ok(false);
    }
    let dir = dir_of(copy);
    create_private_dir(dir)?;
    let temp = dir.join(format!(
        ".{}.cmstore.tmp",
        copy.file_name().unwrap_or_default().to_string_lossy()
    ));
    let Some(file) = claim(&temp)? else {
        // Another import is writing this copy now.
        return Ok(false);
    };
    let written = write_copy(source, file)
        .and_then(|()| fs::rename(&temp, copy))
        // Dated once in place: a temporary file's own time tells a writer at work from one
        // a killed process left.
        .and_then(|()| {
            File::options()
                .write(true)
                .open(copy)?
                .set_modified(modified)
        });
    if written.is_err() {
        // Best effort: the error being reported matters more than the leftover.
        let _ = fs::remove_file(&temp);
    }
    written.map(|()| true)
}

/// A temporary file untouched this long was left by a process that was killed while it
/// wrote it (a writer at work touches it with every block it writes).
const ABANDONED_AFTER: Duration = Duration::from_secs(600);

/// The temporary file `temp`, created for this writer (private, new); `None` while another
/// writer is at work on it. One left by a killed writer is replaced, so none piles up.
fn claim(temp: &Path) -> io::Result<Option<File>> {
    let create = || {
        private_file_options()
            .write(true)
            .create_new(true)
            .open(temp)
    };
    match create() {
        Ok(file) => Ok(Some(file)),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            let idle = fs::metadata(temp)?
                .modified()?
                .elapsed()
                .unwrap_or_default();
            if idle < ABANDONED_AFTER {
                return Ok(None);
            }
            fs::remove_file(temp)?;
            create().map(Some)
        }
        Err(err) => Err(err),
    }
}

/// Whether `copy` is a copy of a file modified at `modified` of `len` bytes: its time, and the
/// length its gzip trailer states (mod 2^32).
fn is_copy_of(copy: &Path, (modified, len): (std::time::SystemTime, u64)) -> bool {
    let current = || -> io::Result<bool> {
        let mut file = File::open(copy)?;
        if file.metadata()?.modified()? != modified {
            return Ok(false);
        }
        file.seek(SeekFrom::End(-4))?;
        let mut trailer = [0; 4];
        file.read_exact(&mut trailer)?;
        Ok(u32::from_le_bytes(trailer) == len as u32)
    };
    current().unwrap_or(false)
}

/// Writes the compressed bytes of `source` to `file`.
fn write_copy(source: &Path, file: File) -> io::Result<()> {
    let mut input = File::open(source)?;
    // Fast rather than small: a session's file is copied again each time it grew.
    let mut encoder = GzEncoder::new(file, Compression::fast());
    io::copy(&mut input, &mut encoder)?;
    encoder.finish()?.sync_all()
}

/// The bytes of the file a copy holds.
pub fn open(copy: &Path) -> io::Result<impl Read> {
    Ok(MultiGzDecoder::new(BufReader::new(File::open(copy)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_mirrors_its_path_below_the_users_home_or_outside_it() {
        let root = Path::new("/c/archive");
        let home = Path::new("/u/me");
        let inside = Path::new("/u/me/.claude/projects/-w/s.jsonl");
        let copy = copy_path(root, Some(home), inside);
        assert_eq!(
            copy,
            Path::new("/c/archive/home/.claude/projects/-w/s.jsonl.gz")
        );
        assert_eq!(
            original_name(&copy).unwrap(),
            Path::new("/c/archive/home/.claude/projects/-w/s.jsonl")
        );
        let outside = Path::new("/srv/agents/../x/rollout-1.jsonl");
        assert_eq!(
            copy_path(root, Some(home), outside),
            Path::new("/c/archive/other/srv/agents/x/rollout-1.jsonl.gz")
        );
        assert_eq!(original_name(Path::new("/a/s.jsonl")), None);
    }

    #[test]
    fn a_copy_gives_the_file_back_and_is_written_again_only_when_the_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("s.jsonl");
        fs::write(&source, "{\"a\":1}\n").unwrap();
        let copy = copy_path(&dir.path().join("archive"), Some(dir.path()), &source);
        assert!(keep(&source, &copy).unwrap());
        assert!(!keep(&source, &copy).unwrap(), "current: not written again");
        let back = |copy: &Path| {
            let mut text = String::new();
            open(copy).unwrap().read_to_string(&mut text).unwrap();
            text
        };
        assert_eq!(back(&copy), "{\"a\":1}\n");
        let grown = "{\"a\":1}\n{\"b\":2}\n";
        fs::write(&source, grown).unwrap();
        let later =
            fs::metadata(&source).unwrap().modified().unwrap() + std::time::Duration::from_secs(2);
        File::options()
            .write(true)
            .open(&source)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(keep(&source, &copy).unwrap());
        assert_eq!(back(&copy), grown);
        // Grown within the same tick of a coarse clock: the time is the same, not the length.
        let same_time = fs::metadata(&source).unwrap().modified().unwrap();
        let more = format!("{grown}{{\"c\":3}}\n");
        fs::write(&source, &more).unwrap();
        File::options()
            .write(true)
            .open(&source)
            .unwrap()
            .set_modified(same_time)
            .unwrap();
        assert!(
            keep(&source, &copy).unwrap(),
            "a longer file is copied again"
        );
        assert_eq!(back(&copy), more);
        assert!(!keep(&source, &copy).unwrap());
        // No temporary file is left beside it.
        let names: Vec<_> = fs::read_dir(dir_of(&copy))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [copy.file_name().unwrap()]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&copy).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
        // A temporary file another writer is at work on: left to it. One a killed writer left
        // (idle ten minutes): replaced, and none stays.
        let temp = dir_of(&copy).join(format!(
            ".{}.cmstore.tmp",
            copy.file_name().unwrap().to_string_lossy()
        ));
        fs::write(&source, "{\"d\":4}\n").unwrap();
        fs::write(&temp, "partial").unwrap();
        assert!(!keep(&source, &copy).unwrap(), "another writer's");
        assert_eq!(fs::read_to_string(&temp).unwrap(), "partial");
        let long_ago = std::time::SystemTime::now() - ABANDONED_AFTER * 2;
        File::options()
            .write(true)
            .open(&temp)
            .unwrap()
            .set_modified(long_ago)
            .unwrap();
        assert!(keep(&source, &copy).unwrap());
        assert!(!temp.exists());
        assert_eq!(back(&copy), "{\"d\":4}\n");
        // A file that is gone is an error; its copy stays.
        fs::remove_file(&source).unwrap();
        assert!(keep(&source, &copy).is_err());
        assert_eq!(back(&copy), "{\"d\":4}\n");
    }
}
