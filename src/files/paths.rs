//! Where cmstore's files live: flags, then environment, then defaults under the home directory;
//! and the one way each of these is done to a file: creating its private directory, creating
//! it private, replacing it atomically.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Name of the home directory under the user's home, shared with the ContextManager extension.
pub const DEFAULT_HOME_DIR: &str = ".contextmanager";

/// The paths a user named (on the command line or in `CMSTORE_*` variables); each `None`
/// takes its default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GivenPaths {
    pub home: Option<PathBuf>,
    pub queue: Option<PathBuf>,
    pub db: Option<PathBuf>,
    pub config: Option<PathBuf>,
}

/// Why the configuration file named with `--config` cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum GivenConfigError {
    /// Nothing is at the path.
    #[error("--config {}: does not exist", .0.display())]
    Missing(PathBuf),
    /// The path is a directory.
    #[error("--config {}: is a directory, not a configuration file", .0.display())]
    Directory(PathBuf),
    /// The file is there but cannot be opened (permissions).
    #[error("--config {}: cannot be read", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

/// Every path cmstore uses, resolved once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub home: PathBuf,
    pub queue: PathBuf,
    pub db: PathBuf,
    pub config: PathBuf,
    /// What the paths were resolved from: which were given and which are defaults.
    pub given: GivenPaths,
}

impl Paths {
    /// Resolves every path: a given one as it is, the others under the home directory.
    pub fn resolve(given: GivenPaths) -> Paths {
        let home = given.home.clone().unwrap_or_else(default_home);
        Paths {
            queue: given
                .queue
                .clone()
                .unwrap_or_else(|| home.join("hook-queue.jsonl")),
            db: given.db.clone().unwrap_or_else(|| home.join("cmstore.db")),
            config: given
                .config
                .clone()
                .unwrap_or_else(|| home.join("cmstore.toml")),
            home,
            given,
        }
    }

    /// Checks that a configuration file named with `--config` is one that can be read: a
    /// path that is not there, or names a directory, is a mistake to stop at, never a reason
    /// to run with the defaults. The default path may be absent. Not a file nor a directory
    /// (`/dev/null`) passes: reading it is reading an empty configuration.
    pub fn check_given_config(&self) -> Result<(), GivenConfigError> {
        if self.given.config.is_none() {
            return Ok(());
        }
        let path = &self.config;
        let unreadable = |source| GivenConfigError::Unreadable {
            path: path.clone(),
            source,
        };
        let meta = match fs::metadata(path) {
            Ok(meta) => meta,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Err(GivenConfigError::Missing(path.clone()))
            }
            Err(err) => return Err(unreadable(err)),
        };
        if meta.is_dir() {
            return Err(GivenConfigError::Directory(path.clone()));
        }
        if meta.is_file() {
            fs::File::open(path).map_err(unreadable)?;
        }
        Ok(())
    }

    /// What the agents spent today, this week and this month ([`crate::model::spend`]),
    /// beside the queue: ingest writes it, `statusline` reads it.
    pub fn spend_file(&self) -> PathBuf {
        self.home.join(crate::model::spend::FILE_NAME)
    }

    /// Per-session transcript cursors and last-seen turn ids.
    pub fn state_dir(&self) -> PathBuf {
        self.home.join("state")
    }

    /// The capture debug log, written only when debugging is on.
    pub fn debug_log(&self) -> PathBuf {
        self.home.join("logs").join("capture.log")
    }

    /// Context injected into the agent on prompt, session and subagent start.
    pub fn session_context(&self) -> PathBuf {
        self.home.join("session-context.txt")
    }

    /// Where `archive_transcripts = true` keeps a copy of each transcript an import reads.
    pub fn archive_dir(&self) -> PathBuf {
        self.home.join("archive")
    }

    /// Message shown to the agent before it compacts its context.
    pub fn knowledge_index(&self) -> PathBuf {
        self.home.join("knowledge-index.txt")
    }
}

/// The user's home directory from the platform's variables (`HOME`, else `USERPROFILE`).
pub fn user_home() -> Option<PathBuf> {
    crate::support::env::path("HOME").or_else(|| crate::support::env::path("USERPROFILE"))
}

fn default_home() -> PathBuf {
    user_home()
        .unwrap_or_else(|| PathBuf::from("."))
        .join(DEFAULT_HOME_DIR)
}

/// The directory `path` is in: its parent, or `.` for a bare file name.
pub fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Creates `dir` and its parents; directories cmstore creates are private (0700 on Unix).
/// For the directory a file goes in, pass [`dir_of`] the file.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// The file `path` leads to when it is a symlink, else `path` itself: what to rename over to
/// replace the file's contents while leaving a link as it is. Only a link resolves, so paths
/// on file systems where resolving fails (some network shares and RAM disks on Windows) work
/// as before.
pub fn resolve_link(path: &Path) -> std::io::Result<PathBuf> {
    if fs::symlink_metadata(path)?.file_type().is_symlink() {
        fs::canonicalize(path)
    } else {
        Ok(path.to_path_buf())
    }
}

/// Replaces `path` with `bytes` through a temporary file in the same directory and a rename,
/// so readers see the old file or the new one, never a mix; the new bytes are synced before
/// the rename. A symlink is followed (the link stays a link, [`resolve_link`]) and the
/// replaced file's permissions carry over; a new file gets the usual ones.
pub fn replace_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, false, true)
}

/// [`replace_file`] for a state file of cmstore's own on the hook path (a transcript cursor):
/// always private (0600 on Unix), from the temporary file's first byte, and not synced.
///
/// Why not synced: the fsync was 0.35 ms of a 1.5 ms harvesting hook (capture 1.24x slower
/// with it, benches/HISTORY.md "Capture"), and it bought nothing. The cursor records which turns
/// are in the queue, and the queue append itself is not synced: after a power loss a synced
/// cursor could outlive the queue lines it vouches for, and those turns would never be
/// written again. Unsynced, the two are as durable as each other; a torn or lost cursor only
/// makes the next hook read the transcript's tail again (its recorded turn ids go with it, so
/// at worst a harvested turn gets a second synthetic Stop line, which ingest merges into the
/// same `turns` row).
pub fn replace_private_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    replace(path, bytes, true, false)
}

fn replace(path: &Path, bytes: &[u8], private: bool, sync: bool) -> io::Result<()> {
    use std::io::Write;
    // A file not there yet is created; a dangling link is an error, not replaced.
    let target = match fs::symlink_metadata(path) {
        Ok(_) => resolve_link(path)?,
        Err(_) => path.to_path_buf(),
    };
    let dir = dir_of(&target);
    // Not private: the directories of files other tools own (an agent's settings) are theirs.
    fs::create_dir_all(dir)?;
    let permissions = match private {
        true => None,
        false => fs::metadata(&target).ok().map(|m| m.permissions()),
    };
    let tmp = dir.join(temp_name(target.file_name().unwrap_or_default()));
    let result = (|| -> io::Result<()> {
        let mut options = if private {
            private_file_options()
        } else {
            fs::OpenOptions::new()
        };
        let mut file = options.create(true).write(true).truncate(true).open(&tmp)?;
        file.write_all(bytes)?;
        if sync {
            file.sync_all()?;
        }
        if let Some(permissions) = permissions {
            fs::set_permissions(&tmp, permissions)?;
        }
        fs::rename(&tmp, &target)
    })();
    if result.is_err() {
        // Best effort: the error being reported matters more than the leftover.
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// The temporary file [`replace_file`] writes before renaming it over `name`.
fn temp_name(name: &std::ffi::OsStr) -> std::ffi::OsString {
    let mut temp = std::ffi::OsString::from(".");
    temp.push(name);
    temp.push(format!(".cmstore-{}.tmp", std::process::id()));
    temp
}

/// The name of the file that `temp` was to replace, when `temp` is the name of a temporary
/// file of [`replace_file`] (one a crash left behind).
pub fn replaced_by_temp(temp: &str) -> Option<&str> {
    let inner = temp.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (name, pid) = inner.rsplit_once(".cmstore-")?;
    (!name.is_empty() && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then_some(name)
}

/// Open options for a file cmstore creates: private (0600 on Unix) from its first byte.
pub fn private_file_options() -> fs::OpenOptions {
    // Only Unix has a mode to set.
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut options = fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_link_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("queue.jsonl");
        fs::write(&file, "").unwrap();
        assert_eq!(resolve_link(&file).unwrap(), file);
        assert!(resolve_link(&dir.path().join("missing")).is_err());
        #[cfg(unix)]
        {
            let link = dir.path().join("link.jsonl");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert_eq!(
                resolve_link(&link).unwrap(),
                fs::canonicalize(&file).unwrap()
            );
        }
    }

    #[test]
    fn a_replacement_temp_names_the_file_it_replaces() {
        let temp = temp_name("a.json".as_ref());
        assert_eq!(replaced_by_temp(temp.to_str().unwrap()), Some("a.json"));
        assert_eq!(replaced_by_temp("a.json"), None);
        assert_eq!(replaced_by_temp(".a.json.cmstore-x.tmp"), None);
    }

    #[test]
    fn a_private_replacement_is_private_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        replace_private_file(&file, b"1").unwrap();
        replace_private_file(&file, b"22").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"22");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn flags_override_home_defaults() {
        let given = GivenPaths {
            home: Some(PathBuf::from("/h")),
            queue: Some(PathBuf::from("/q.jsonl")),
            db: None,
            config: None,
        };
        let paths = Paths::resolve(given);
        assert_eq!(paths.queue, PathBuf::from("/q.jsonl"));
        assert_eq!(paths.db, PathBuf::from("/h/cmstore.db"));
        assert_eq!(paths.config, PathBuf::from("/h/cmstore.toml"));
        assert_eq!(paths.state_dir(), PathBuf::from("/h/state"));
    }
}
