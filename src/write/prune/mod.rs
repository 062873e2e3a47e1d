//! Retention: what `cmstore prune` does beyond the store's own batched deletes
//! ([`crate::store::prune`]).
//!
//! [`queue`] rewrites the queue file without the lines that are both ingested and older than
//! the cutoff (`--compact-queue`); [`auto`] is the retention a running `cmstore ingest`
//! applies by itself when `retention_days` is set.

pub mod auto;
pub mod queue;
