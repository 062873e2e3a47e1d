//! The capture debug log (`<home>/logs/capture.log`), written only when `CMSTORE_DEBUG=1`
//! or `debug = true` in the configuration.
//!
//! The hook's stdout belongs to the agent, so this is where capture says what it saw and why
//! it did what it did. Failing to write it is never an error.

use std::io::Write;
use std::path::PathBuf;

use crate::files::paths::{create_private_dir, dir_of, private_file_options};

/// Collects notes during one hook run and appends them as one block at the end.
#[derive(Debug, Default)]
pub struct DebugLog {
    path: Option<PathBuf>,
    lines: Vec<String>,
}

impl DebugLog {
    /// A log that writes to `path` when `enabled`, and otherwise drops everything.
    pub fn new(path: PathBuf, enabled: bool) -> DebugLog {
        DebugLog {
            path: enabled.then_some(path),
            lines: Vec::new(),
        }
    }

    /// Whether notes are kept at all (lets callers skip building expensive notes).
    pub fn is_on(&self) -> bool {
        self.path.is_some()
    }

    /// Adds one note.
    pub fn note(&mut self, text: impl FnOnce() -> String) {
        if self.path.is_some() {
            self.lines.push(text());
        }
    }

    /// Appends the collected notes, each line prefixed with the time and process id.
    pub fn flush(self) {
        let Some(path) = self.path else { return };
        if self.lines.is_empty() {
            return;
        }
        let _ = create_private_dir(dir_of(&path));
        let stamp = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.3fZ");
        let pid = std::process::id();
        let mut block = String::new();
        for line in &self.lines {
            block.push_str(&format!("{stamp} pid={pid} {line}\n"));
        }
        if let Ok(mut file) = private_file_options().create(true).append(true).open(&path) {
            let _ = file.write_all(block.as_bytes());
        }
    }
}
