//! What leaves capture of an entry's text: secrets redacted, and no text at all when
//! `store_text = false`.

use serde_json::Value;

use crate::files::debug_log::DebugLog;
use crate::model::queue_line::QueueEntry;
use crate::model::redact::Redactor;

/// Redacts every secret in `entry`, and drops its text unless `store_text`.
pub(super) fn protect(
    entry: &mut QueueEntry,
    redactor: &Redactor,
    store_text: bool,
    log: &mut DebugLog,
) {
    if redactor.redact_entry(entry) {
        log.note(|| format!("secrets redacted in {} entry", entry.hook_type));
    }
    if !store_text {
        drop_text(entry);
    }
}

/// Drops prompt, response and reasoning text (`store_text = false`), keeping the rest of the entry.
fn drop_text(e: &mut QueueEntry) {
    e.prompt = None;
    e.response = None;
    e.thinking = None;
    e.hook_feedback = None;
    e.message = None;
    if let Some(turns) = &mut e.turns {
        for turn in turns {
            turn.user.clear();
            turn.assistant.clear();
        }
    }
    if let Some(payload) = e.payload.as_mut().and_then(Value::as_object_mut) {
        for key in [
            "prompt",
            "last_assistant_message",
            "response",
            "initialPrompt",
            "message",
        ] {
            payload.remove(key);
        }
    }
}
