//! The spend file on disk ([`crate::model::spend`]): written whole and private by ingest, read
//! by capture (the budget), `statusline`, `budget` and `status`, never through the database.

use std::path::Path;

use crate::model::spend::SpendFile;

/// Reads the spend file at `path`; the error says why there is none to use (missing,
/// unreadable, not the format).
pub fn read(path: &Path) -> Result<SpendFile, String> {
    let bytes = std::fs::read(path).map_err(|err| format!("no spend file ({err})"))?;
    serde_json::from_slice(&bytes).map_err(|err| format!("spend file unreadable: {err}"))
}

/// Replaces the spend file at `path` with `file` (private, written whole: a reader sees one
/// version or the other).
pub fn write(path: &Path, file: &SpendFile) -> anyhow::Result<()> {
    let text = serde_json::to_vec(file)?;
    crate::files::paths::replace_private_file(path, &text)?;
    Ok(())
}
