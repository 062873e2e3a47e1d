//! A Droid session's totals on disk: the `<session>.settings.json` Droid keeps beside its
//! transcript, read with the user's own `settings.json` (only for a custom model's name) and dated
//! by the file ([`crate::model::transcript::usage_droid`] reads the text). Capture's cursor and
//! `cmstore import` both read them here, so both find the same row.

use std::fs;
use std::path::Path;

use crate::model::queue_line::usage::UsageRecord;
use crate::model::transcript::usage_droid;

/// The totals of the Droid session whose transcript is `transcript`; `None` when it is no
/// Droid transcript, or its settings file is missing or counts nothing.
pub fn session_totals(transcript: &Path) -> Option<UsageRecord> {
    let factory = usage_droid::factory_of(transcript)?;
    let file = usage_droid::settings_of(transcript);
    let text = fs::read_to_string(&file).ok()?;
    let session = transcript.file_stem()?.to_str()?;
    // A file whose time cannot be read is dated by the queue line that carries it.
    let modified = fs::metadata(&file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_millis()).ok());
    let user = || {
        fs::read_to_string(factory.join("settings.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
    };
    usage_droid::from_session_settings(session, &text, user, modified)
}
