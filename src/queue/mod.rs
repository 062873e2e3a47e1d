//! The queue file `hook-queue.jsonl`: one compact JSON object per line.
//!
//! Capture appends whole lines under an exclusive lock ([`append`]); ingest reads complete
//! lines from a byte offset. The queue never imports the store.

pub mod append;

pub use append::{append_lines, AppendError};
