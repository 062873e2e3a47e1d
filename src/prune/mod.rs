//! Retention: what `cmstore prune` does beyond the store's own batched deletes
//! ([`crate::store::prune`]).
//!
//! [`queue`] rewrites the queue file without the lines that are both ingested and older than
//! the cutoff (`--compact-queue`).

pub mod queue;
