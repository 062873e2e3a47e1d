//! The "once" of a budget warning: a marker file per session, limit and window in
//! `state/budget/`, created by the first hook that gives the warning (`create_new`, so two hooks
//! at the same instant still warn once), and removed by ingest once its window has ended.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::files::paths::{create_private_dir, private_file_options};
use crate::files::transcript::fnv1a;

/// The markers' folder in the state directory.
fn dir(state_dir: &Path) -> PathBuf {
    state_dir.join("budget")
}

/// Marks `marker` given: true when this call made the mark (the warning is due), false when
/// an earlier hook had.
pub fn mark_once(state_dir: &Path, marker: &str) -> io::Result<bool> {
    let dir = dir(state_dir);
    create_private_dir(&dir)?;
    let path = dir.join(format!("{:016x}", fnv1a(marker.as_bytes())));
    match private_file_options()
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(_) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(err) => Err(err),
    }
}

/// Removes the markers made before `before` (the start of the oldest window still running):
/// their windows have ended. Returns how many.
pub fn remove_ended(state_dir: &Path, before: SystemTime) -> io::Result<usize> {
    let entries = match fs::read_dir(dir(state_dir)) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err),
    };
    let mut removed = 0;
    for entry in entries {
        let path = entry?.path();
        let made = match fs::metadata(&path).and_then(|m| m.modified()) {
            Ok(made) => made,
            Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
            Err(err) => return Err(err),
        };
        if made < before {
            match fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => return Err(err),
            }
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_marker_is_made_once_and_removed_once_its_window_ended() {
        let state = tempfile::tempdir().unwrap();
        assert!(mark_once(state.path(), "s1\nday.usd\n1").unwrap());
        assert!(!mark_once(state.path(), "s1\nday.usd\n1").unwrap());
        assert!(mark_once(state.path(), "s2\nday.usd\n1").unwrap());
        let past = SystemTime::now() - Duration::from_secs(60);
        assert_eq!(remove_ended(state.path(), past).unwrap(), 0);
        let future = SystemTime::now() + Duration::from_secs(60);
        assert_eq!(remove_ended(state.path(), future).unwrap(), 2);
        assert!(mark_once(state.path(), "s1\nday.usd\n1").unwrap());
    }
}
