//! The stages that write the store: everything that turns files into rows, or removes rows.
//!
//! - [`ingest`]: the queue into the store, exactly once, once or following;
//! - [`import`]: transcripts' token usage, and Claude Code's turns and tool calls, into the store;
//! - [`prune`]: retention, of rows and of the queue file;
//! - [`otlp_receiver`]: agents' OTLP logs and metrics into the store.

pub mod import;
pub mod ingest;
pub mod otlp_receiver;
pub mod prune;
