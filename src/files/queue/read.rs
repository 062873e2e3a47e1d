//! Reading complete lines from a byte offset of the queue: the [`crate::files::tail`] reader, with
//! the queue's limit on a line's length.

pub use crate::files::tail::{Line, LineReader, PREFIX_BYTES};

/// Default limit on a line's length (newline excluded).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;
