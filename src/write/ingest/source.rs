//! Source identity: is the file at the queue path still the one whose offset we stored?
//!
//! A source row holds the device and inode (Unix; elsewhere they stay NULL and only content
//! checks apply), a fingerprint of the first line and a marker hashing the bytes just before the
//! committed offset. A file smaller than the offset was truncated; a different inode, first line
//! or marker means it was replaced (copytruncate, delete-and-recreate, inode reuse). Either way
//! the new content is read from 0, and `UNIQUE(id)` absorbs any line seen twice.
//!
//! Transcript cursors (`transcript::cursor`) check their file differently, on purpose: they
//! restart at a transcript's tail rather than at 0, and rely on the turn ids they recorded
//! rather than on `UNIQUE(id)`; and their fingerprint is part of the cursor file's format.
//! What both tails share is the reader of complete lines from an offset ([`crate::files::tail`]).

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use sha2::{Digest, Sha256};

use crate::files::identity::FileId;
use crate::model::queue_line::parse::hex;
use crate::store::SourceRow;

/// The first line is fingerprinted up to this many bytes.
pub const FINGERPRINT_BYTES: usize = 1024;

/// The marker hashes this many bytes before the offset (fewer near the start of the file).
pub const MARKER_BYTES: u64 = 32;

/// What the checks found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Same file: continue at the stored offset.
    Same,
    /// Truncated or replaced, with why: start over at 0 under a new source row.
    Changed(&'static str),
}

/// Compares the stored `source` with the open `file` (identity `id`, size `size`).
pub fn check(source: &SourceRow, id: FileId, size: u64, file: &File) -> io::Result<Verdict> {
    if let (Some(dev), Some(ino), Some(now_dev), Some(now_ino)) =
        (source.device, source.inode, id.device, id.inode)
    {
        if (dev, ino) != (now_dev, now_ino) {
            return Ok(Verdict::Changed("replaced: other device/inode"));
        }
    }
    let offset = u64::try_from(source.offset).unwrap_or(0);
    if size < offset {
        return Ok(Verdict::Changed("truncated: size below offset"));
    }
    if let Some(stored) = &source.fingerprint {
        if fingerprint(file)?.as_ref() != Some(stored) {
            return Ok(Verdict::Changed("replaced: first line changed"));
        }
    }
    if offset > 0 && marker(file, offset)? != source.marker {
        return Ok(Verdict::Changed("replaced: bytes before offset changed"));
    }
    Ok(Verdict::Same)
}

/// Hash of the first line (newline included, at most [`FINGERPRINT_BYTES`]); `None` while the
/// file holds neither a newline nor that many bytes.
pub fn fingerprint(mut file: &File) -> io::Result<Option<String>> {
    let mut buf = [0u8; FINGERPRINT_BYTES];
    file.seek(SeekFrom::Start(0))?;
    let n = read_full(file, &mut buf)?;
    let head = &buf[..n];
    let len = match head.iter().position(|&b| b == b'\n') {
        Some(i) => i + 1,
        None if n == FINGERPRINT_BYTES => n,
        None => return Ok(None),
    };
    Ok(Some(hex(&Sha256::digest(&head[..len]))))
}

/// Hash of the (up to) [`MARKER_BYTES`] bytes before `offset`; `None` at offset 0.
pub fn marker(mut file: &File, offset: u64) -> io::Result<Option<String>> {
    if offset == 0 {
        return Ok(None);
    }
    let start = offset.saturating_sub(MARKER_BYTES);
    let mut buf = [0u8; MARKER_BYTES as usize];
    let want = (offset - start) as usize;
    file.seek(SeekFrom::Start(start))?;
    let n = read_full(file, &mut buf[..want])?;
    if n < want {
        // The file is shorter than the offset: it cannot match any stored marker.
        return Ok(Some(String::new()));
    }
    Ok(Some(hex(&Sha256::digest(&buf[..want]))))
}

/// The lines before `offset` (which is 0 or just after a newline), newest first: `f` gets each
/// one's length and bytes (newline excluded; `None` for a line over `max_line` bytes, not
/// read), until it returns true or the file's start is reached. For the line a batch starts
/// after; it moves the file's position.
pub fn lines_before(
    mut file: &File,
    offset: u64,
    max_line: usize,
    mut f: impl FnMut(u64, Option<&[u8]>) -> bool,
) -> io::Result<()> {
    const CHUNK: u64 = 64 * 1024;
    let mut end = offset;
    let mut chunk = Vec::new();
    let mut line = Vec::new();
    while end > 0 {
        // The line ends with the newline at `end - 1`; it starts after the newline before it.
        let newline = end - 1;
        let mut start = 0;
        let mut at = newline;
        while at > 0 {
            let from = at.saturating_sub(CHUNK);
            chunk.resize((at - from) as usize, 0);
            file.seek(SeekFrom::Start(from))?;
            let n = read_full(file, &mut chunk)?;
            if n < chunk.len() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the queue is shorter than its committed offset",
                ));
            }
            if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
                start = from + i as u64 + 1;
                break;
            }
            at = from;
        }
        let length = newline - start;
        let bytes = if length > max_line as u64 {
            None
        } else {
            line.resize(length as usize, 0);
            file.seek(SeekFrom::Start(start))?;
            if read_full(file, &mut line)? < line.len() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the queue is shorter than its committed offset",
                ));
            }
            Some(&line[..])
        };
        if f(length, bytes) {
            return Ok(());
        }
        end = start;
    }
    Ok(())
}

fn read_full(mut file: &File, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn fingerprint_needs_a_complete_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(b"{\"a\":1}").unwrap();
        let r = File::open(&path).unwrap();
        assert_eq!(fingerprint(&r).unwrap(), None);
        f.write_all(b"\n{\"b\":2}\n").unwrap();
        let first = fingerprint(&r).unwrap().unwrap();
        f.write_all(b"more\n").unwrap();
        assert_eq!(fingerprint(&r).unwrap().unwrap(), first);
        assert_eq!(marker(&r, 0).unwrap(), None);
        assert_ne!(marker(&r, 8).unwrap(), marker(&r, 16).unwrap());
        assert_eq!(marker(&r, 1000).unwrap(), Some(String::new()));
    }

    #[test]
    fn lines_before_an_offset_come_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q");
        let long = "y".repeat(70 * 1024);
        std::fs::write(&path, format!("a\n\n{long}\nbb\nccc\n")).unwrap();
        let file = File::open(&path).unwrap();
        let size = file.metadata().unwrap().len();
        let walk = |offset: u64, stop_after: usize| {
            let mut seen = Vec::new();
            lines_before(&file, offset, 1024, |length, line| {
                if let Some(line) = line {
                    assert_eq!(line.len() as u64, length);
                } else {
                    assert_eq!(length, 70 * 1024);
                }
                seen.push(line.map(|l| String::from_utf8(l.to_vec()).unwrap()));
                seen.len() == stop_after
            })
            .unwrap();
            seen
        };
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            walk(size, usize::MAX),
            [some("ccc"), some("bb"), None, some(""), some("a")]
        );
        assert_eq!(walk(size, 2), [some("ccc"), some("bb")]);
        assert_eq!(walk(2, usize::MAX), [some("a")]);
        assert!(walk(0, usize::MAX).is_empty());
    }
}
