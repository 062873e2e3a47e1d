//! The queue file `hook-queue.jsonl`: one compact JSON object per line.
//!
//! Capture appends whole lines under an exclusive lock ([`append`]); ingest reads complete
//! lines from a byte offset ([`read`]). The queue never imports the store.

pub mod append;
pub mod read;

pub use append::{append_batch, append_lines, AppendError, Batch};
pub use read::{Line, LineReader};
