//! The files cmstore reads and writes beside the store: where they are, how they are locked,
//! and how their lines are read.
//!
//! - [`paths`]: every location, resolved once, and private (0600) file creation;
//! - [`queue`]: the hook queue, appended by the hook and read by ingest;
//! - [`tail`]: complete lines from a byte offset;
//! - [`lock`]: advisory file locks with a time limit;
//! - [`transcript`]: transcript cursors, discovery, and a workspace's recent sessions;
//! - [`identity`]: a file's device and inode;
//! - [`ingest_lock`]: who holds a database's ingest lock;
//! - [`debug_log`]: the opt-in debug log;
//! - [`budget_marks`]: the once-per-session marks of budget warnings;
//! - [`spend`]: the spend file, read by the hook and the status line.

pub mod budget_marks;
pub mod debug_log;
pub mod identity;
pub mod ingest_lock;
pub mod lock;
pub mod paths;
pub mod queue;
pub mod spend;
pub mod tail;
pub mod transcript;
