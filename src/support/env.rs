//! Reading the process environment one way: a variable set to the empty string counts as
//! unset (`CMSTORE_DB= cmstore …` means the default database, not a file named ""), except
//! through [`value`], for the lookups that give an empty value a meaning of their own.
//! Nothing else in `src/` reads the environment (`tests/architecture.rs`).

use std::ffi::OsString;
use std::path::PathBuf;

/// The value of `name`; `None` when it is unset or empty.
pub fn var_os(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// [`var_os`] as a path.
pub fn path(name: &str) -> Option<PathBuf> {
    var_os(name).map(PathBuf::from)
}

/// [`var_os`] as text; `None` also when the value is not valid Unicode.
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

/// Where the PATH finds `program` (on Windows also `program.exe`), as a shell would look it
/// up; `None` when no folder of the PATH has it.
pub fn find_on_path(program: &str) -> Option<PathBuf> {
    let names: Vec<String> = if cfg!(windows) {
        vec![format!("{program}.exe"), program.to_string()]
    } else {
        vec![program.to_string()]
    };
    std::env::split_paths(&var_os("PATH")?)
        .filter(|dir| !dir.as_os_str().is_empty())
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

/// The value of `name` as set, the empty string included; `None` when unset or not valid
/// Unicode. For configuration lookups that decide for themselves what an empty value means
/// (an empty `CMSTORE_DEBUG` turns the switch off; the other blanks count as unset there).
pub fn value(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// The machine's name: the usual variables (`HOSTNAME`, `COMPUTERNAME` on Windows), else
/// `/etc/hostname`.
pub fn host_name() -> Option<String> {
    let name = var("HOSTNAME")
        .or_else(|| var("COMPUTERNAME"))
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })?;
    Some(name).filter(|n| !n.is_empty())
}

/// The login name of the user running cmstore (`USER`, `USERNAME` on Windows).
pub fn user_name() -> Option<String> {
    var("USER").or_else(|| var("USERNAME"))
}
