//! The read side: what the store is asked and how the answers are shown. Nothing here writes
//! the store (`query` cannot) or imports [`crate::write`].
//!
//! - [`report`], [`render`]: SQL results as tables, CSV or JSON;
//! - [`sessions`], [`story`]: the session list and one session's story (`show`);
//! - [`summaries`], [`days`], [`plan`]: `summarize`'s statements, `--by day`'s in the
//!   reader's zone, and what they share;
//! - [`status`]: where ingest stands and how big the store is;
//! - [`gate`]: what the safety gate did, and a replay of rules over the record;
//! - [`budget`]: where each `[budget]` limit stands;
//! - [`serve`]: the local dashboard and its JSON API;
//! - [`export`]: the record as OTLP spans to a collector.

pub mod beside;
pub mod budget;
pub mod days;
pub mod export;
pub mod gate;
pub mod plan;
pub mod push;
pub mod render;
pub mod report;
pub mod serve;
pub mod sessions;
pub mod status;
pub mod story;
pub mod summaries;
pub mod usage_check;
