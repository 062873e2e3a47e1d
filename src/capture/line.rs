//! Entries serialized as queue lines.

use crate::debug_log::DebugLog;
use crate::queue_line::QueueEntry;

/// The entries' queue lines, each entry stamped with how long the hook took. An entry whose
/// line would reach `max_line_bytes` (longer than ingest accepts) loses its raw `payload`:
/// the normalized fields are worth more than the copy.
pub fn queue_lines(
    entries: &mut [QueueEntry],
    hook_execution_ms: u64,
    max_line_bytes: usize,
    log: &mut DebugLog,
) -> Vec<String> {
    entries
        .iter_mut()
        .map(|e| {
            e.hook_execution_ms = hook_execution_ms;
            fit_line(e, max_line_bytes, log)
        })
        .collect()
}

fn fit_line(e: &mut QueueEntry, max_line_bytes: usize, log: &mut DebugLog) -> String {
    let line = e.to_line();
    if line.len() < max_line_bytes || e.payload.is_none() {
        return line;
    }
    e.payload = None;
    log.note(|| {
        format!(
            "raw payload left out: the line would be {} bytes",
            line.len()
        )
    });
    e.to_line()
}
