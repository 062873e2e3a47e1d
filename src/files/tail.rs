//! Tailing a file that others append to: its complete lines from a byte offset.
//!
//! Only `\n`-terminated lines are yielded: a half-written last line is left where it is, and
//! [`LineReader::offset`] never moves past its first byte, so the next pass reads it whole.
//! A line longer than the limit is never buffered whole: the reader keeps its first bytes for
//! the record and skips through the rest.
//!
//! Both tails read through it: ingest's of the queue ([`crate::files::queue::read`], whose lines have
//! a limit) and capture's of a transcript ([`crate::model::transcript`], whose lines have none: the
//! window read is bounded instead). How each decides that the file is still the one its offset
//! belongs to differs on purpose; see `ingest::source` and `transcript::cursor`.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

/// Bytes of a too-long line kept for the record.
pub const PREFIX_BYTES: usize = 256;

const CHUNK: usize = 256 * 1024;

/// One item read from the queue.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A complete line, newline excluded.
    Complete {
        /// Offset of the line's first byte.
        offset: u64,
        /// The line.
        bytes: &'a [u8],
    },
    /// A complete line over the limit: only its length and first bytes are known.
    TooLong {
        /// Offset of the line's first byte.
        offset: u64,
        /// Its length, newline excluded.
        length: u64,
        /// Its first [`PREFIX_BYTES`] bytes.
        prefix: &'a [u8],
    },
}

impl Line<'_> {
    /// Byte offset of the line's first byte.
    pub fn offset(&self) -> u64 {
        match self {
            Line::Complete { offset, .. } | Line::TooLong { offset, .. } => *offset,
        }
    }
}

/// Reads complete lines from `inner`, starting at a byte offset.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max_line: usize,
    buf: Vec<u8>,
    /// `buf[start..end]` holds unread bytes; `buf[start]` is at file offset `pos`.
    start: usize,
    end: usize,
    pos: u64,
    /// How far into `buf[start..end]` no newline has been found.
    scanned: usize,
    prefix: Vec<u8>,
    eof: bool,
    /// (`start`, `pos`) before the last complete line yielded, while its bytes are buffered.
    before_last: Option<(usize, u64)>,
}

impl<R: Read + Seek> LineReader<R> {
    /// Positions `inner` at `offset` and reads lines of at most `max_line` bytes from there.
    pub fn new(mut inner: R, offset: u64, max_line: usize) -> io::Result<LineReader<R>> {
        inner.seek(SeekFrom::Start(offset))?;
        Ok(LineReader::positioned(inner, offset, max_line))
    }
}

impl<R: Read> LineReader<R> {
    /// Reads lines of at most `max_line` bytes from `inner`, which is already at file offset
    /// `offset` (a window of a file, say: `file.take(len)` after a seek).
    pub fn positioned(inner: R, offset: u64, max_line: usize) -> LineReader<R> {
        LineReader {
            inner,
            max_line: max_line.max(1),
            buf: Vec::new(),
            start: 0,
            end: 0,
            pos: offset,
            scanned: 0,
            prefix: Vec::new(),
            eof: false,
            before_last: None,
        }
    }

    /// Offset just after the last line yielded: where the next complete line starts.
    pub fn offset(&self) -> u64 {
        self.pos
    }

    /// The next complete line, or `None` at end of file (a trailing partial line is left).
    ///
    /// After `None`, more data appended to the file is not seen by this reader; make a new
    /// reader at [`LineReader::offset`].
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.before_last = None;
        loop {
            if let Some(i) = find_newline(&self.buf[self.start + self.scanned..self.end]) {
                let nl = self.start + self.scanned + i;
                let offset = self.pos;
                let line_start = self.start;
                self.start = nl + 1;
                self.scanned = 0;
                self.pos += (nl + 1 - line_start) as u64;
                let length = nl - line_start;
                if length > self.max_line {
                    return Ok(Some(Line::TooLong {
                        offset,
                        length: length as u64,
                        prefix: &self.buf[line_start..line_start + length.min(PREFIX_BYTES)],
                    }));
                }
                self.before_last = Some((line_start, offset));
                return Ok(Some(Line::Complete {
                    offset,
                    bytes: &self.buf[line_start..nl],
                }));
            }
            self.scanned = self.end - self.start;
            if self.scanned > self.max_line {
                return self.skip_long_line();
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    /// Puts back the complete line the last [`LineReader::next_line`] returned, so that the
    /// next call returns it again. False (and nothing changes) after anything else.
    pub fn unread(&mut self) -> bool {
        match self.before_last.take() {
            Some((start, pos)) => {
                self.start = start;
                self.pos = pos;
                self.scanned = 0;
                true
            }
            None => false,
        }
    }

    /// Reads more bytes after `buf[start..end]`; false at end of file.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let want = self.end + CHUNK;
        if self.buf.len() < want {
            self.buf.resize(want, 0);
        }
        let n = read_retrying(&mut self.inner, &mut self.buf[self.end..])?;
        if n == 0 {
            self.eof = true;
            return Ok(false);
        }
        self.end += n;
        Ok(true)
    }

    /// Skips the rest of a line already known to be over the limit, keeping its prefix.
    fn skip_long_line(&mut self) -> io::Result<Option<Line<'_>>> {
        let offset = self.pos;
        self.prefix.clear();
        let keep = (self.end - self.start).min(PREFIX_BYTES);
        self.prefix
            .extend_from_slice(&self.buf[self.start..self.start + keep]);
        let mut length = (self.end - self.start) as u64;
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        loop {
            if !self.fill()? {
                // The line is not complete yet: leave it for a later pass. `pos` still points
                // at its first byte; this reader is spent.
                return Ok(None);
            }
            if let Some(i) = find_newline(&self.buf[..self.end]) {
                length += i as u64;
                self.start = i + 1;
                self.pos = offset + length + 1;
                // Shrink back to normal size: one long line must not pin memory.
                if self.buf.capacity() > 4 * CHUNK && self.end - self.start <= CHUNK {
                    self.buf.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                    self.buf.truncate(CHUNK.max(self.end));
                    self.buf.shrink_to_fit();
                }
                return Ok(Some(Line::TooLong {
                    offset,
                    length,
                    prefix: &self.prefix,
                }));
            }
            length += self.end as u64;
            self.end = 0;
        }
    }
}

fn read_retrying<R: Read>(inner: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match inner.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Index of the first `\n`. Eight bytes at a time (a byte-wise search was 3% of a bulk load):
/// `(w - 0x01..) & !w & 0x80..` marks the bytes of `w` that are zero, the lowest of them exactly.
fn find_newline(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const NEWLINES: u64 = u64::from_le_bytes([b'\n'; 8]);
    let mut words = bytes.chunks_exact(8);
    let mut at = 0;
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ NEWLINES;
        let zeros = w.wrapping_sub(ONES) & !w & HIGHS;
        if zeros != 0 {
            return Some(at + (zeros.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    words
        .remainder()
        .iter()
        .position(|&b| b == b'\n')
        .map(|i| at + i)
}

/// Newlines (complete lines) in the `len` bytes of `path` from `from`: how far a reader is
/// behind, for `status` and ingest's heartbeat.
pub fn count_lines(path: &Path, from: u64, len: u64) -> io::Result<u64> {
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(from))?;
    let mut rest = file.take(len);
    let mut buf = vec![0u8; 256 * 1024];
    let mut lines = 0;
    loop {
        let n = rest.read(&mut buf)?;
        if n == 0 {
            return Ok(lines);
        }
        lines += buf[..n].iter().filter(|b| **b == b'\n').count() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn collect(data: &[u8], offset: u64, max: usize) -> (Vec<(u64, Vec<u8>, bool)>, u64) {
        let mut r = LineReader::new(Cursor::new(data), offset, max).unwrap();
        let mut out = Vec::new();
        while let Some(line) = r.next_line().unwrap() {
            match line {
                Line::Complete { offset, bytes } => out.push((offset, bytes.to_vec(), false)),
                Line::TooLong { offset, length, .. } => {
                    out.push((offset, vec![0; length as usize], true))
                }
            }
        }
        (out, r.offset())
    }

    #[test]
    fn yields_complete_lines_and_leaves_a_partial_one() {
        let (lines, end) = collect(b"a\nbb\n\nccc", 0, 100);
        assert_eq!(
            lines,
            vec![
                (0, b"a".to_vec(), false),
                (2, b"bb".to_vec(), false),
                (5, b"".to_vec(), false)
            ]
        );
        assert_eq!(end, 6);
        let (lines, end) = collect(b"a\nbb\n\nccc\n", 6, 100);
        assert_eq!(lines, vec![(6, b"ccc".to_vec(), false)]);
        assert_eq!(end, 10);
    }

    #[test]
    fn the_first_newline_is_found_wherever_it_is() {
        for len in 0..40 {
            for fill in [b'a', 0x0b, 0x09, 0x8a, 0xff, 0x00] {
                let mut bytes = vec![fill; len];
                assert_eq!(find_newline(&bytes), None, "{len} x {fill:#x}");
                for first in 0..len {
                    bytes[first..].fill(b'\n');
                    assert_eq!(find_newline(&bytes), Some(first), "{len} x {fill:#x}");
                    bytes.fill(fill);
                }
            }
        }
    }

    #[test]
    fn an_unread_line_comes_again() {
        let mut r = LineReader::new(Cursor::new(&b"a\nbb\ncc"[..]), 0, 100).unwrap();
        assert!(!r.unread(), "nothing read yet");
        assert_eq!(r.next_line().unwrap().map(|l| l.offset()), Some(0));
        assert_eq!(r.offset(), 2);
        assert!(r.unread());
        assert!(!r.unread(), "only the last line");
        assert_eq!(r.offset(), 0);
        let again = r.next_line().unwrap();
        assert_eq!(
            again,
            Some(Line::Complete {
                offset: 0,
                bytes: b"a"
            })
        );
        assert_eq!(r.next_line().unwrap().map(|l| l.offset()), Some(2));
        assert_eq!(r.next_line().unwrap(), None, "cc is partial");
        assert!(!r.unread(), "not after the end");
        assert_eq!(r.offset(), 5);
    }

    #[test]
    fn long_lines_are_skipped_not_buffered() {
        let mut data = b"ok\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 3 * CHUNK + 17));
        data.extend_from_slice(b"\nafter\n");
        let (lines, end) = collect(&data, 0, 1000);
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].0, 3);
        assert!(lines[1].2);
        assert_eq!(lines[1].1.len(), 3 * CHUNK + 17);
        assert_eq!(
            lines[2],
            (3 + 3 * CHUNK as u64 + 18, b"after".to_vec(), false)
        );
        assert_eq!(end, data.len() as u64);
    }

    #[test]
    fn an_unfinished_long_line_waits() {
        let mut data = b"ok\n".to_vec();
        data.extend(std::iter::repeat_n(b'x', 5000));
        let (lines, end) = collect(&data, 0, 1000);
        assert_eq!(lines.len(), 1);
        assert_eq!(end, 3);
    }

    #[test]
    fn a_line_of_exactly_the_limit_is_complete() {
        let (lines, _) = collect(b"abcd\nabcde\n", 0, 4);
        assert!(!lines[0].2);
        assert!(lines[1].2);
    }

    #[test]
    fn many_lines_across_chunk_boundaries() {
        let mut data = Vec::new();
        for i in 0..50_000 {
            data.extend_from_slice(format!("line number {i}\n").as_bytes());
        }
        let (lines, end) = collect(&data, 0, 64);
        assert_eq!(lines.len(), 50_000);
        assert_eq!(lines[49_999].1, b"line number 49999".to_vec());
        assert_eq!(end, data.len() as u64);
    }
}
