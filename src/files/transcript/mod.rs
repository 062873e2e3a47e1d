//! Transcripts on disk: where a session's transcript lives, how far each one has been read,
//! and which sessions a workspace has seen lately.
//!
//! A hook must be fast, so it never rescans a transcript: a per-session [`Tracker`] keeps a
//! byte cursor in the state dir and reads only what was appended since the last hook, parsing
//! it with [`crate::model::transcript`].
//!
//! - [`Tracker`]: the cursor file, its lock, and reading complete lines from the transcript;
//! - [`archive`]: a compressed copy of each transcript an import reads, kept in cmstore's folder;
//! - [`discover`]: where a session's transcript lives when the payload does not say;
//! - [`cline`]: a Cline run's prompt, model and usage, from its session's files;
//! - [`droid`]: a Droid session's totals, kept beside its transcript;
//! - [`opencode`]: OpenCode's own store, read for `cmstore import`;
//! - [`Workspace`]: the sessions seen lately in a workspace, so that a later session's hook
//!   closes an earlier one whose last turn no Stop or SessionEnd recorded.

pub mod archive;
pub mod claude_retention;
pub mod cline;
mod cursor;
mod discover;
pub mod droid;
pub mod goose;
pub mod history;
pub mod kimi;
pub mod opencode;
mod sqlite_store;
mod workspace;

pub use cursor::{
    fnv1a, remove_stale, Tracker, COLD_START_BYTES, LOCK_WAIT, MAX_COMPACT_BYTES, RECORDED_IDS,
};
pub use discover::{discover, DiscoveryEnv};
pub use workspace::{
    due, with_due_sessions, Due, SeenSession, Thresholds, Workspace, IDLE_BEFORE_CLOSE, IDLE_ENV,
    QUIET_AFTER_END, QUIET_ENV,
};
