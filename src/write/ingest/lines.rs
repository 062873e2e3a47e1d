//! The lines of one ingest batch, read into one buffer and then parsed on a helper thread while
//! the writer inserts them.
//!
//! The writer (the thread in the SQLite transaction) is the bottleneck of a bulk load, and
//! parsing JSON is about a tenth of its work. Parsed rows borrow from the batch's buffer (a
//! scoped thread may share it), so handing them over costs no copy; they cross in chunks of
//! [`CHUNK_LINES`] to keep the channel's cost per line small. A small batch (follow mode) is
//! parsed in place: a thread would cost more than it saves.
//!
//! Once the writer has a full channel of parsed lines to go on with, the helper thread also
//! runs a job of the caller's ([`BatchLines::for_each_and`]): ingest reads the next batch's
//! lines into a second buffer then, so that the writer never waits for the queue file.

use std::io::{self, Read};
use std::ops::Range;
use std::sync::mpsc;

use crate::files::queue::read::{Line, LineReader, PREFIX_BYTES};
use crate::model::queue_line::parse::{parse_line, RejectReason, RejectedBytes};
use crate::model::queue_line::EventRow;
use crate::store::chain;

/// A batch holds at most this many bytes of lines, so that a run of long lines cannot make the
/// buffer (or the transaction) large: 8 MiB is 10,000 lines of 800 bytes.
pub const BUFFER_BYTES: usize = 8 * 1024 * 1024;

/// Longer lines are not copied into the buffer: each is parsed where the reader holds it, last
/// in its batch (a copy of a line of many MiB would add as much to the resident size).
pub const LONG_LINE_BYTES: usize = 1024 * 1024;

/// Lines parsed and handed to the writer at a time.
pub const CHUNK_LINES: usize = 256;

/// Batches of fewer lines are parsed on the writer's thread.
pub const THREAD_MIN_LINES: usize = 2 * CHUNK_LINES;

/// Parsed chunks that may wait for the writer: about 10 ms of its work, which covers reading
/// the next batch (a few ms) on the helper thread.
pub const CHUNKS_AHEAD: usize = 16;

#[derive(Debug)]
enum Item {
    Line {
        offset: u64,
        range: Range<usize>,
    },
    TooLong {
        offset: u64,
        length: u64,
        prefix: Vec<u8>,
    },
}

/// What a line became, for the writer.
// Nearly every line is a row: boxing it would cost an allocation per line.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, PartialEq)]
pub enum Parsed<'a> {
    /// A row to insert.
    Row {
        /// Offset of the line in the queue.
        offset: u64,
        /// The row, borrowing from the batch's buffer.
        row: EventRow<'a>,
        /// Its digest in the record's chain, computed here: hashing the line is ~5 % of a bulk
        /// load's time on the writer's thread, which has none to spare (1M lines of 684 bytes).
        digest: [u8; chain::DIGEST_LEN],
    },
    /// A line to record in `rejects`.
    Reject {
        /// Offset of the line in the queue.
        offset: u64,
        /// Its length, newline excluded.
        length: u64,
        /// Why.
        reason: RejectReason,
        /// Its first bytes.
        prefix: &'a [u8],
        /// What its key is made of ([`crate::model::queue_line::parse::reject_key`]).
        bytes: RejectedBytes<'a>,
    },
}

/// A reusable buffer for the lines of one batch.
#[derive(Debug, Default)]
pub struct BatchLines {
    buf: Vec<u8>,
    items: Vec<Item>,
    long_next: bool,
}

impl BatchLines {
    /// Replaces the contents with up to `max_lines` lines from `reader`, stopping before a
    /// line that would take the buffer over [`BUFFER_BYTES`], before a line longer than
    /// [`LONG_LINE_BYTES`] (see [`BatchLines::long_next`]), or once the reader has moved
    /// `max_read` bytes past `start`.
    pub fn read<R: Read>(
        &mut self,
        reader: &mut LineReader<R>,
        start: u64,
        max_lines: usize,
        max_read: u64,
    ) -> io::Result<()> {
        self.buf.clear();
        if self.buf.capacity() == 0 {
            // At once rather than by doublings: a batch usually fills most of it, and it never
            // grows past it.
            self.buf.reserve_exact(BUFFER_BYTES);
        }
        self.items.clear();
        self.long_next = false;
        while self.items.len() < max_lines && reader.offset() - start < max_read {
            match reader.next_line()? {
                None => break,
                Some(Line::Complete { bytes, .. }) if bytes.len() > LONG_LINE_BYTES => {
                    // Not copied: the caller takes it from the reader, last in this batch.
                    reader.unread();
                    self.long_next = true;
                    break;
                }
                Some(Line::Complete { bytes, .. })
                    if self.buf.len() + bytes.len() > BUFFER_BYTES =>
                {
                    reader.unread();
                    break;
                }
                Some(Line::Complete { offset, bytes }) => {
                    let from = self.buf.len();
                    self.buf.extend_from_slice(bytes);
                    self.items.push(Item::Line {
                        offset,
                        range: from..self.buf.len(),
                    });
                }
                Some(Line::TooLong {
                    offset,
                    length,
                    prefix,
                }) => self.items.push(Item::TooLong {
                    offset,
                    length,
                    prefix: prefix.to_vec(),
                }),
            }
        }
        Ok(())
    }

    /// True when [`BatchLines::read`] stopped before a line longer than [`LONG_LINE_BYTES`]:
    /// the reader's next line is that one, still in its buffer, to be taken after the lines
    /// held here.
    pub fn long_next(&self) -> bool {
        self.long_next
    }

    /// Gives the buffer's memory back (ingest is about to idle or to rebuild indexes).
    pub fn release(&mut self) {
        *self = BatchLines::default();
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// True when no line is held.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Parses every line and hands each result to `write`, in queue order, on the calling
    /// thread. The first error of `write` stops the batch and is returned.
    pub fn for_each<E>(
        &self,
        now_ms: i64,
        write: impl FnMut(Parsed<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.for_each_and(now_ms, write, || {})
    }

    /// [`BatchLines::for_each`], and `meanwhile` on the helper thread, as soon as the writer
    /// has [`CHUNKS_AHEAD`] parsed chunks waiting (or once all lines are parsed). A batch
    /// parsed in place (a small one, or no thread to be had) does not run it; nor, usually, does
    /// one whose `write` has failed (it may have started before): the caller must not rely on
    /// its effects when this returns an error.
    pub fn for_each_and<E>(
        &self,
        now_ms: i64,
        mut write: impl FnMut(Parsed<'_>) -> Result<(), E>,
        meanwhile: impl FnOnce() + Send,
    ) -> Result<(), E> {
        if self.items.len() < THREAD_MIN_LINES {
            return self.parse_in_place(now_ms, write);
        }
        std::thread::scope(|scope| {
            let (send, receive) = mpsc::sync_channel::<Vec<Parsed<'_>>>(CHUNKS_AHEAD);
            let parser = std::thread::Builder::new()
                .name("parse".into())
                .spawn_scoped(scope, move || {
                    let mut meanwhile = Some(meanwhile);
                    for chunk in self.items.chunks(CHUNK_LINES) {
                        let parsed = chunk.iter().map(|i| self.parse(i, now_ms)).collect();
                        let parsed = match send.try_send(parsed) {
                            Ok(()) => continue,
                            // The writer stopped on an error.
                            Err(mpsc::TrySendError::Disconnected(_)) => return,
                            Err(mpsc::TrySendError::Full(parsed)) => parsed,
                        };
                        // The writer has plenty to go on with.
                        if let Some(job) = meanwhile.take() {
                            job();
                        }
                        if send.send(parsed).is_err() {
                            return;
                        }
                    }
                    if let Some(job) = meanwhile.take() {
                        job();
                    }
                });
            if parser.is_err() {
                // No thread to be had: parse here.
                drop(receive);
                return self.parse_in_place(now_ms, write);
            }
            // `receive` is dropped on an early return, which ends the parser before the
            // scope waits for it.
            for chunk in receive {
                chunk.into_iter().try_for_each(&mut write)?;
            }
            Ok(())
        })
    }

    fn parse_in_place<E>(
        &self,
        now_ms: i64,
        mut write: impl FnMut(Parsed<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.items
            .iter()
            .try_for_each(|item| write(self.parse(item, now_ms)))
    }

    fn parse<'a>(&'a self, item: &'a Item, now_ms: i64) -> Parsed<'a> {
        match item {
            Item::Line { offset, range } => parse(
                Line::Complete {
                    offset: *offset,
                    bytes: &self.buf[range.clone()],
                },
                now_ms,
            ),
            Item::TooLong {
                offset,
                length,
                prefix,
            } => parse(
                Line::TooLong {
                    offset: *offset,
                    length: *length,
                    prefix,
                },
                now_ms,
            ),
        }
    }
}

/// What one line becomes.
pub fn parse(line: Line<'_>, now_ms: i64) -> Parsed<'_> {
    match line {
        Line::Complete { offset, bytes } => match parse_line(bytes, now_ms) {
            Ok(row) => Parsed::Row {
                offset,
                digest: chain::row_digest(&row.id, row.ts, row.entry),
                row,
            },
            Err(reason) => Parsed::Reject {
                offset,
                length: bytes.len() as u64,
                reason,
                prefix: &bytes[..bytes.len().min(PREFIX_BYTES)],
                bytes: RejectedBytes::Whole(bytes),
            },
        },
        Line::TooLong {
            offset,
            length,
            prefix,
        } => Parsed::Reject {
            offset,
            length,
            reason: RejectReason::TooLong,
            prefix,
            bytes: RejectedBytes::Cut { prefix, length },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn queue(lines: usize) -> Vec<u8> {
        let mut q = Vec::new();
        for i in 0..lines {
            if i % 7 == 4 {
                q.extend_from_slice(b"{\"id\":\"\xff\xfe\"}\n");
                continue;
            }
            let line = match i % 7 {
                3 => "not json".to_string(),
                5 => "[1,2]".to_string(),
                6 => "x".repeat(300),
                _ => format!(
                    r#"{{"id":"e{i}","hookType":"Stop","sessionId":"s","prompt":"p\u00e9{i}"}}"#
                ),
            };
            q.extend_from_slice(line.as_bytes());
            q.push(b'\n');
        }
        q.extend_from_slice(b"{\"id\":\"partial");
        q
    }

    fn collect(lines: &BatchLines) -> Vec<String> {
        let mut out = Vec::new();
        lines
            .for_each(0, |p| {
                out.push(format!("{p:?}"));
                Ok::<(), ()>(())
            })
            .unwrap();
        out
    }

    /// What parsing each line in place gives, as `for_each` should hand it over.
    fn expected(q: &[u8], max_line: usize) -> Vec<String> {
        let mut reader = LineReader::new(Cursor::new(q), 0, max_line).unwrap();
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().unwrap() {
            let parsed = parse(line, 0);
            out.push(format!("{parsed:?}"));
        }
        out
    }

    #[test]
    fn parsed_lines_come_in_queue_order_on_a_thread_or_not() {
        for count in [0, 1, THREAD_MIN_LINES - 1, THREAD_MIN_LINES, 3000] {
            let q = queue(count);
            let mut lines = BatchLines::default();
            let mut reader = LineReader::new(Cursor::new(&q[..]), 0, 200).unwrap();
            lines.read(&mut reader, 0, usize::MAX, u64::MAX).unwrap();
            assert_eq!(lines.len(), count, "the partial last line waits");
            assert_eq!(collect(&lines), expected(&q, 200), "{count} lines");
        }
    }

    #[test]
    fn a_batch_stops_at_its_line_count_or_read_limit() {
        let q = queue(1000);
        let mut lines = BatchLines::default();
        let mut reader = LineReader::new(Cursor::new(&q[..]), 0, 1 << 20).unwrap();
        lines.read(&mut reader, 0, 600, u64::MAX).unwrap();
        assert_eq!(lines.len(), 600);
        let at = reader.offset();
        lines.read(&mut reader, at, usize::MAX, 1).unwrap();
        assert_eq!(lines.len(), 1, "the limit is checked before each line");
        let mut offsets = Vec::new();
        lines
            .for_each(0, |p| {
                offsets.push(match p {
                    Parsed::Row { offset, .. } | Parsed::Reject { offset, .. } => offset,
                });
                Ok::<(), ()>(())
            })
            .unwrap();
        assert_eq!(offsets, [at]);
    }

    #[test]
    fn a_batch_stops_before_its_buffer_overflows() {
        let line = format!("{{\"id\":\"{}\"}}\n", "a".repeat(900 * 1024));
        let q = line.repeat(12);
        let mut lines = BatchLines::default();
        let mut reader = LineReader::new(Cursor::new(q.as_bytes()), 0, 2 << 20).unwrap();
        lines.read(&mut reader, 0, usize::MAX, u64::MAX).unwrap();
        assert_eq!(lines.len(), 9, "8 MiB of lines at most");
        assert!(!lines.long_next());
        let at = reader.offset();
        assert_eq!(at, 9 * line.len() as u64);
        lines.read(&mut reader, at, usize::MAX, u64::MAX).unwrap();
        assert_eq!(lines.len(), 3, "the line that did not fit comes next");
        assert_eq!(lines.buf.capacity(), BUFFER_BYTES, "never grown");
    }

    #[test]
    fn a_long_line_is_left_to_the_reader() {
        let long = format!("{{\"id\":\"{}\"}}", "x".repeat(LONG_LINE_BYTES));
        let q = format!("{{}}\n{long}\n{{}}\n");
        let mut reader = LineReader::new(Cursor::new(q.as_bytes()), 0, 16 << 20).unwrap();
        let mut lines = BatchLines::default();
        lines.read(&mut reader, 0, usize::MAX, u64::MAX).unwrap();
        assert_eq!((lines.len(), lines.long_next()), (1, true));
        let line = reader.next_line().unwrap().unwrap();
        assert_eq!(line.offset(), 3);
        match parse(line, 0) {
            Parsed::Row { row, .. } => assert_eq!(row.entry, long),
            other => panic!("{other:?}"),
        }
        let at = reader.offset();
        lines.read(&mut reader, at, usize::MAX, u64::MAX).unwrap();
        assert_eq!((lines.len(), lines.long_next()), (1, false));
    }

    #[test]
    fn the_first_error_of_the_writer_stops_the_parser() {
        let q = queue(5000);
        let mut lines = BatchLines::default();
        let mut reader = LineReader::new(Cursor::new(&q[..]), 0, 200).unwrap();
        lines.read(&mut reader, 0, usize::MAX, u64::MAX).unwrap();
        let mut seen = 0;
        let outcome = lines.for_each(0, |_| {
            seen += 1;
            if seen == 700 {
                Err("disk full")
            } else {
                Ok(())
            }
        });
        assert_eq!(outcome, Err("disk full"));
        assert_eq!(seen, 700);
    }
}
