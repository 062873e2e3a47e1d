//! Entries serialized as queue lines.

use crate::files::debug_log::DebugLog;
use crate::files::queue::Batch;
use crate::model::queue_line::QueueEntry;

/// The entries' queue lines, each entry stamped with how long the hook took, serialized into
/// the one buffer the append writes. An entry whose line would reach `max_line_bytes` (longer
/// than ingest accepts) loses its raw `payload`: the normalized fields are worth more than the
/// copy.
pub fn queue_lines(
    entries: &mut [QueueEntry],
    hook_execution_ms: u64,
    max_line_bytes: usize,
    log: &mut DebugLog,
) -> Batch {
    let mut batch = Batch::with_capacity(
        entries
            .iter()
            .map(|e| line_estimate(e).min(max_line_bytes))
            .fold(0, usize::saturating_add),
    );
    for e in entries {
        e.hook_execution_ms = hook_execution_ms;
        fit_line(&mut batch, e, max_line_bytes, log);
    }
    batch
}

/// About how long `e`'s line is, from what it already counts (its payload's or its texts' bytes,
/// its usage records): room reserved once, so that the batch of a long harvest is not copied as it
/// grows (each copy into fresh pages was a quarter of that hook's page faults). A wrong guess
/// costs only a grown buffer, and room reserved but never written is never touched.
fn line_estimate(e: &QueueEntry) -> usize {
    const FIELDS: usize = 1024;
    const USAGE_RECORD: usize = 320;
    let usage = e.usage.as_ref().map_or(0, Vec::len) * USAGE_RECORD;
    (e.size_bytes as usize)
        .saturating_add(usage)
        .saturating_add(FIELDS)
}

fn fit_line(batch: &mut Batch, e: &mut QueueEntry, max_line_bytes: usize, log: &mut DebugLog) {
    let len = batch.push_json(e);
    if len < max_line_bytes || e.payload.is_none() {
        return;
    }
    batch.undo_last();
    e.payload = None;
    log.note(|| format!("raw payload left out: the line would be {len} bytes"));
    batch.push_json(e);
}
