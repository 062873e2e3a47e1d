//! Audit mode: the hook hands a check to a detached `cmstore check run` and returns at once.
//!
//! The job goes into a private file under the state directory (a command line could be too
//! long for Windows); the runner reads it, removes it, runs the check and appends its
//! `CheckResult` line under the queue lock. The child has no stdin, stdout or stderr of the
//! hook's (so neither the agent nor a test harness waits for it) and runs in a process group
//! of its own, so it outlives the hook.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Job;

/// Writes `job` to a new file in `dir` and starts `exe --queue QUEUE check run --job FILE`
/// detached. Returns the job file's path.
pub fn spawn(job: &Job, dir: &Path, exe: &Path, queue: &Path) -> io::Result<PathBuf> {
    let file = write_job(job, dir)?;
    let mut cmd = Command::new(exe);
    cmd.arg("--queue")
        .arg(queue)
        .args(["check", "run", "--job"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Ok(cwd) = std::env::current_dir() {
        cmd.current_dir(cwd);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        const CREATE_NO_WINDOW: u32 = 0x0800_0000;
        cmd.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
    }
    match cmd.spawn() {
        // Not waited for: the hook exits and the runner is adopted; dropping the handle
        // neither kills nor waits for it.
        Ok(_child) => Ok(file),
        Err(err) => {
            let _ = std::fs::remove_file(&file);
            Err(err)
        }
    }
}

/// Writes `job` as JSON to a fresh private file in `dir` (created if needed).
pub fn write_job(job: &Job, dir: &Path) -> io::Result<PathBuf> {
    crate::paths::create_private_dir(dir)?;
    let path = dir.join(format!("job-{}.json", crate::queue_line::new_id()));
    let bytes = serde_json::to_vec(job).map_err(io::Error::other)?;
    let mut file = crate::paths::private_file_options()
        .write(true)
        .create_new(true)
        .open(&path)?;
    file.write_all(&bytes)?;
    Ok(path)
}

/// Reads and removes the job file at `path`.
pub fn take_job(path: &Path) -> io::Result<Job> {
    let bytes = std::fs::read(path)?;
    let _ = std::fs::remove_file(path);
    serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Kind;
    use crate::queue_line::QueueEntry;

    #[test]
    fn a_job_file_is_private_and_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let job = Job {
            kind: Kind::Markdown,
            mode: "audit".into(),
            timeout_ms: 1000,
            cwd: "/repo".into(),
            files: vec!["a.md".into()],
            command: None,
            max_line_length: Some(80),
            redact: vec![],
            entry: QueueEntry::new("CheckResult", 5),
        };
        let path = write_job(&job, &dir.path().join("checks")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(take_job(&path).unwrap(), job);
        assert!(!path.exists());
        assert!(take_job(&path).is_err());
    }
}
