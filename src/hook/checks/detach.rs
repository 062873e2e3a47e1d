//! Audit mode's hand-off: the hook writes the job to a file and returns at once.
//!
//! The job goes into a private file under the state directory (a command line could be too
//! long for Windows), written under a temporary name and renamed into place, so a runner
//! never reads half a job. Who runs it:
//!
//! - the runner of a following `cmstore ingest` for the same queue ([`super::runner`]), when
//!   one holds the queue's runner lock ([`runner_alive`]: a probe of a few microseconds); the
//!   hook then starts nothing;
//! - else a detached `cmstore check run` ([`spawn`]), with no stdin, stdout or stderr of the
//!   hook's (so neither the agent nor a test harness waits for it), in a process group of its
//!   own, so it outlives the hook.
//!
//! A runner takes a job by renaming its file ([`take_job`], [`super::runner`]): whoever
//! renames it first runs it, the other finds it gone, so a job runs once even when an ingest
//! starts while a detached runner is on its way.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::Job;

/// The name of a job file waiting for its runner ends so; a runner looks at no other file.
pub const JOB_SUFFIX: &str = ".json";

/// What the name of a job file waiting for its runner starts with.
pub const JOB_PREFIX: &str = "job-";

/// The lock an ingest's check runner holds while it takes jobs for `queue`: beside the queue
/// (`<queue>.checks.lock`), as the queue's own lock is.
pub fn runner_lock(queue: &Path) -> PathBuf {
    crate::files::lock::path_for(queue, ".checks.lock")
}

/// True when a following `cmstore ingest` runs the checks of `queue` (it holds
/// [`runner_lock`]); false when none does, or the probe fails (the hook then starts its own
/// runner: a job is never left without one).
pub fn runner_alive(queue: &Path) -> bool {
    matches!(
        crate::files::lock::is_held(&runner_lock(queue)),
        Ok(Some(true))
    )
}

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

/// Writes `job` as JSON to a fresh private file in `dir` (created if needed): under a
/// temporary name first, then renamed to `job-<id>.json`, so a runner scanning `dir` sees the
/// whole job or none of it.
pub fn write_job(job: &Job, dir: &Path) -> io::Result<PathBuf> {
    crate::files::paths::create_private_dir(dir)?;
    let id = crate::model::queue_line::new_id();
    let temp = dir.join(format!("tmp-{id}"));
    let path = dir.join(format!("{JOB_PREFIX}{id}{JOB_SUFFIX}"));
    let bytes = serde_json::to_vec(job).map_err(io::Error::other)?;
    let written = crate::files::paths::private_file_options()
        .write(true)
        .create_new(true)
        .open(&temp)
        .and_then(|mut file| file.write_all(&bytes));
    match written.and_then(|()| std::fs::rename(&temp, &path)) {
        Ok(()) => Ok(path),
        Err(err) => {
            let _ = std::fs::remove_file(&temp);
            Err(err)
        }
    }
}

/// True when `name` is the name of a job file waiting for its runner.
pub fn is_job_name(name: &str) -> bool {
    name.starts_with(JOB_PREFIX) && name.ends_with(JOB_SUFFIX)
}

/// Reads the job file at `path`.
pub fn read_job(path: &Path) -> io::Result<Job> {
    let bytes = std::fs::read(path)?;
    serde_json::from_slice(&bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Takes the job at `path` for a detached runner: renames it out of the runners' sight, reads
/// it and removes it. `Ok(None)` when it is gone: another runner took it first.
pub fn take_job(path: &Path) -> io::Result<Option<Job>> {
    let mut name = path.as_os_str().to_os_string();
    name.push(".run");
    let taken = PathBuf::from(name);
    match std::fs::rename(path, &taken) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err),
    }
    let job = read_job(&taken);
    let _ = std::fs::remove_file(&taken);
    job.map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::checks::Kind;
    use crate::model::queue_line::QueueEntry;

    pub(crate) fn job() -> Job {
        Job {
            kind: Kind::Markdown,
            mode: "audit".into(),
            timeout_ms: 1000,
            cwd: "/repo".into(),
            files: vec!["a.md".into()],
            command: None,
            max_line_length: Some(80),
            redact: vec![],
            entry: QueueEntry::new("CheckResult", 5),
            queue: None,
        }
    }

    #[test]
    fn a_job_file_is_private_whole_and_taken_once() {
        let dir = tempfile::tempdir().unwrap();
        let job = job();
        let path = write_job(&job, &dir.path().join("checks")).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<String> = std::fs::read_dir(dir.path().join("checks"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
        assert!(is_job_name(&names[0]), "{names:?}");
        assert_eq!(take_job(&path).unwrap(), Some(job));
        assert!(!path.exists());
        assert_eq!(take_job(&path).unwrap(), None, "taken once");
        assert_eq!(
            std::fs::read_dir(dir.path().join("checks"))
                .unwrap()
                .count(),
            0
        );
    }

    #[test]
    fn the_probe_sees_a_runner_only_while_it_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let queue = dir.path().join("hook-queue.jsonl");
        assert!(!runner_alive(&queue));
        let held = crate::files::lock::exclusive(&runner_lock(&queue), std::time::Duration::ZERO)
            .unwrap()
            .unwrap();
        assert!(runner_alive(&queue));
        drop(held);
        assert!(!runner_alive(&queue));
    }

    #[test]
    fn a_queue_is_kept_only_when_set() {
        let mut job = job();
        assert!(!serde_json::to_string(&job).unwrap().contains("queue"));
        job.queue = Some(PathBuf::from("/h/q.jsonl"));
        let back: Job = serde_json::from_str(&serde_json::to_string(&job).unwrap()).unwrap();
        assert_eq!(back, job);
    }
}
