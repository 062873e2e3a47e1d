//! The domain: what an event is, in every agent's dialect, and the pure rules applied to it.
//! Nothing here does I/O on the queue or the store.
//!
//! - [`agents`]: the agent table: every agent, its names and its hook file;
//! - [`wire`]: agents' payloads and replies;
//! - [`queue_line`]: the queue line, format v1 (a public interface) and its parse;
//! - [`transcript`]: transcript parsers and usage readers;
//! - [`safety`], [`redact`]: the gate's rules and secret patterns;
//! - [`prices`]: model prices; [`shorten`]: shortening text without breaking JSON or UTF-8;
//! - [`spend`]: the spend file, what the agents spent today, this week and this month;
//! - [`budget`]: the `[budget]` limits, and where the spend stands against each.

pub mod agents;
pub mod budget;
pub mod prices;
pub mod queue_line;
pub mod redact;
pub mod safety;
pub mod shorten;
pub mod spend;
pub mod transcript;
pub mod wire;
