//! Entries serialized as queue lines.

use crate::debug_log::DebugLog;
use crate::queue::Batch;
use crate::queue_line::QueueEntry;

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
    let mut batch = Batch::new();
    for e in entries {
        e.hook_execution_ms = hook_execution_ms;
        fit_line(&mut batch, e, max_line_bytes, log);
    }
    batch
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
