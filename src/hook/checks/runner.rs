//! The check runner of a `cmstore ingest`: runs the audit-mode jobs the hooks hand off, so
//! that a hook whose checks are in audit mode starts no process of its own.
//!
//! While it lives, the runner holds the queue's runner lock ([`detach::runner_lock`]); a hook
//! that finds the lock held only writes the job file ([`detach::write_job`]). The runner is
//! woken by file notifications on the jobs directory (and a poll), takes each job by renaming
//! its file into `running/` (so a job is taken once, by this runner or by a detached
//! `cmstore check run`), runs it on a worker thread of its own, at most [`MAX_WORKERS`] at a
//! time, each within its time limit, appends the `CheckResult` line with the queue's own
//! append (under the queue lock, as capture does), then removes the file.
//!
//! A runner killed mid-check leaves its job in `running/`; the next runner of the queue
//! (which can only start once the lock is free, so once the killed one is gone) puts it back
//! and runs it again. A result appended just before the kill is appended again with the same
//! event id, and the store keeps one. Nothing here blocks ingest's own loop or its commits:
//! the runner has threads of its own, and the results reach the store as any line does.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use notify::{RecursiveMode, Watcher};

use super::{detach, Job};

/// Jobs run at once; the others wait in the jobs directory, not taken yet.
pub const MAX_WORKERS: usize = 4;

/// How often the jobs directory is looked at without a notification.
const WATCHED_POLL: Duration = Duration::from_secs(2);

/// The same without file notifications.
const UNWATCHED_POLL: Duration = Duration::from_millis(200);

/// How long [`start`] waits for the runner lock: a hook's probe holds it for an instant.
const LOCK_WAIT: Duration = Duration::from_millis(200);

/// Where a runner keeps the jobs it took: `<jobs dir>/running/`.
pub fn running_dir(jobs_dir: &Path) -> PathBuf {
    jobs_dir.join("running")
}

/// What a runner did by the time [`Runner::finish`] returned.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Finished {
    /// Results appended to the queue.
    pub ran: u64,
    /// Jobs still running when the wait ended: the next runner runs them again.
    pub left: usize,
}

/// A running check runner; dropping it stops it taking jobs (see [`Runner::finish`]).
pub struct Runner {
    shared: Arc<Shared>,
    wake: Sender<()>,
    thread: Option<JoinHandle<()>>,
    /// Kept alive while the runner runs: dropping it ends the notifications.
    _watcher: Option<notify::RecommendedWatcher>,
}

/// What the runner's threads share.
struct Shared {
    queue: PathBuf,
    /// The queue as a file (links resolved), to tell this queue's jobs from others'.
    queue_file: PathBuf,
    dir: PathBuf,
    running: PathBuf,
    stop: AtomicBool,
    /// Looks at the jobs directory so far (how idle the runner is).
    looks: std::sync::atomic::AtomicU64,
    count: Mutex<Count>,
    done: Condvar,
    warn: Box<dyn Fn(String) + Send + Sync>,
    /// The runner lock, released once the runner and its last worker are gone (or the
    /// process died): a job still running keeps the next runner from putting it back.
    _lock: File,
}

#[derive(Default)]
struct Count {
    in_flight: usize,
    ran: u64,
}

/// What [`beside_ingest`] started.
pub struct BesideIngest {
    /// The runner, when it started.
    pub runner: Option<Runner>,
    /// Another runner of the queue (a detached `cmstore check run`) held its jobs: a
    /// following ingest starts its own once that one is gone ([`once_free`]).
    pub held_elsewhere: bool,
}

/// The runner beside `cmstore ingest`. A following ingest (`follow`) always starts one: the
/// hooks read `[checks]` for themselves, so checks configured after the ingest started are
/// still left to it (an idle runner costs a file watch and a look at the jobs directory every
/// 2 s). `ingest --once` starts one only when there is work for it: `[checks]`
/// is configured, or jobs wait (left by hooks, or by a runner that was killed). Problems go to
/// `warn`, a runner that cannot start among them (the hooks then start their own).
pub fn beside_ingest(
    paths: &crate::files::paths::Paths,
    follow: bool,
    warn: impl Fn(String) + Send + Sync + 'static,
) -> BesideIngest {
    let none = |held_elsewhere| BesideIngest {
        runner: None,
        held_elsewhere,
    };
    let dir = super::jobs_dir(&paths.state_dir());
    let (config, _) = crate::config::Config::load_for(paths);
    let waiting = |dir: &Path| !job_files(dir).is_empty();
    if !follow && config.checks.is_empty() && !waiting(&dir) && !waiting(&running_dir(&dir)) {
        return none(false);
    }
    let warn = Arc::new(warn);
    let to_runner = Arc::clone(&warn);
    match start(&paths.queue, &dir, move |w| to_runner(w)) {
        Ok(Some(runner)) => BesideIngest {
            runner: Some(runner),
            held_elsewhere: false,
        },
        Ok(None) => {
            let then = if follow {
                "running them once it is gone"
            } else {
                "not running them"
            };
            warn(format!(
                "another runner holds the check jobs of this queue: {then}"
            ));
            none(true)
        }
        Err(err) => {
            warn(cannot_start(&err));
            none(false)
        }
    }
}

/// What a following ingest says of a runner that cannot start.
pub fn cannot_start(err: &io::Error) -> String {
    format!("the check runner cannot start ({err}): hooks start their own")
}

/// For a following ingest whose runner could not start because another runner of the queue
/// (a detached `cmstore check run`) held the lock: starts it once that runner is gone.
/// `Ok(None)` while the lock is still held, found by a probe of a few microseconds, so that
/// asking often never holds up the ingest's loop.
pub fn once_free(
    paths: &crate::files::paths::Paths,
    warn: impl Fn(String) + Send + Sync + 'static,
) -> io::Result<Option<Runner>> {
    if detach::runner_alive(&paths.queue) {
        return Ok(None);
    }
    start(&paths.queue, &super::jobs_dir(&paths.state_dir()), warn)
}

/// Creates `dir` (private), an error naming it.
fn create_dir(dir: &Path) -> io::Result<()> {
    crate::files::paths::create_private_dir(dir)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display())))
}

/// Starts the runner of `queue`'s jobs in `jobs_dir`, after putting back the jobs a killed
/// runner left in `running/`. `Ok(None)` when another runner of the queue holds the lock.
/// Problems met later (a job that cannot be read, an append that fails) go to `warn`.
pub fn start(
    queue: &Path,
    jobs_dir: &Path,
    warn: impl Fn(String) + Send + Sync + 'static,
) -> io::Result<Option<Runner>> {
    create_dir(crate::files::paths::dir_of(queue))?;
    let Some(lock) = crate::files::lock::exclusive(&detach::runner_lock(queue), LOCK_WAIT)? else {
        return Ok(None);
    };
    let running = running_dir(jobs_dir);
    create_dir(&running)?;
    let shared = Arc::new(Shared {
        queue: queue.to_path_buf(),
        queue_file: file_of(queue),
        dir: jobs_dir.to_path_buf(),
        running,
        stop: AtomicBool::new(false),
        looks: std::sync::atomic::AtomicU64::new(0),
        count: Mutex::new(Count::default()),
        done: Condvar::new(),
        warn: Box::new(warn),
        _lock: lock,
    });
    shared.put_back_orphans();
    let (wake, woken) = mpsc::channel();
    // Taken before `start` returns: an `ingest --once` may finish its pass before the loop
    // thread looks.
    shared.take_waiting(&wake);
    let watcher = watch(jobs_dir, wake.clone());
    let poll = if watcher.is_some() {
        WATCHED_POLL
    } else {
        UNWATCHED_POLL
    };
    let thread = {
        let (shared, wake) = (Arc::clone(&shared), wake.clone());
        thread::Builder::new()
            .name("cmstore-checks".into())
            .spawn(move || take_loop(&shared, &wake, &woken, poll))?
    };
    Ok(Some(Runner {
        shared,
        wake,
        thread: Some(thread),
        _watcher: watcher,
    }))
}

impl Runner {
    /// Stops taking jobs and waits for the ones running: all of them with `wait` `None`, else
    /// at most `wait` (those still running are run again by the next runner).
    pub fn finish(mut self, wait: Option<Duration>) -> Finished {
        if wait.is_none() {
            // Drain: the jobs still waiting too, a worker's worth at a time.
            while !job_files(&self.shared.dir).is_empty() {
                let before = self.shared.lock_count().ran;
                self.shared.take_waiting(&self.wake);
                self.wait_idle();
                if self.shared.lock_count().ran == before {
                    break;
                }
            }
        }
        self.stop_taking();
        let deadline = wait.map(|w| Instant::now() + w);
        let mut count = self.shared.lock_count();
        while count.in_flight > 0 {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            count = match left {
                Some(Duration::ZERO) => break,
                Some(left) => match self.shared.done.wait_timeout(count, left) {
                    Ok((count, _)) => count,
                    Err(poisoned) => poisoned.into_inner().0,
                },
                None => self
                    .shared
                    .done
                    .wait(count)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            };
        }
        Finished {
            ran: count.ran,
            left: count.in_flight,
        }
    }

    /// Waits until no job is running.
    fn wait_idle(&self) {
        let mut count = self.shared.lock_count();
        while count.in_flight > 0 {
            count = self
                .shared
                .done
                .wait(count)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn stop_taking(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = self.wake.send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        self.stop_taking();
    }
}

/// File notifications on `dir`, each a wake-up; `None` where they do not work (the poll is
/// faster then).
fn watch(dir: &Path, wake: Sender<()>) -> Option<notify::RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        // Not an access: listing the directory opens it, which inotify reports, and a wake-up
        // on that would list it again, a loop that kept an idle ingest's core busy.
        if res.is_ok_and(|event| !event.kind.is_access()) {
            let _ = wake.send(());
        }
    })
    .ok()?;
    watcher.watch(dir, RecursiveMode::NonRecursive).ok()?;
    Some(watcher)
}

/// Takes jobs whenever woken (a new file, a worker done) or polled, until stopped.
fn take_loop(shared: &Arc<Shared>, wake: &Sender<()>, woken: &Receiver<()>, poll: Duration) {
    while !shared.stop.load(Ordering::SeqCst) {
        shared.take_waiting(wake);
        match woken.recv_timeout(poll) {
            Ok(()) | Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        // A burst of notifications is one look at the directory.
        while woken.try_recv().is_ok() {}
    }
}

impl Shared {
    fn lock_count(&self) -> std::sync::MutexGuard<'_, Count> {
        self.count.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Puts this queue's jobs left in `running/` by a killed runner back with the waiting
    /// ones. The lock is held: no live runner of this queue has them.
    fn put_back_orphans(&self) {
        for (path, name) in job_files(&self.running) {
            match detach::read_job(&path) {
                Ok(job) if !self.owns(&job) => {}
                Ok(_) => {
                    if let Err(err) = std::fs::rename(&path, self.dir.join(&name)) {
                        (self.warn)(format!("check job {name} not put back: {err}"));
                    }
                }
                Err(err) => self.drop_broken(&path, &name, &err),
            }
        }
    }

    /// Takes the waiting jobs of this queue, oldest first, while a worker is free.
    fn take_waiting(self: &Arc<Self>, wake: &Sender<()>) {
        self.looks.fetch_add(1, Ordering::Relaxed);
        for (path, name) in job_files(&self.dir) {
            if self.stop.load(Ordering::SeqCst) || self.lock_count().in_flight >= MAX_WORKERS {
                return;
            }
            let job = match detach::read_job(&path) {
                Ok(job) if self.owns(&job) => job,
                Ok(_) => continue,
                // Taken meanwhile by a detached runner.
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => {
                    self.drop_broken(&path, &name, &err);
                    continue;
                }
            };
            let taken = self.running.join(&name);
            match std::fs::rename(&path, &taken) {
                Ok(()) => self.start_worker(job, taken, wake.clone()),
                Err(err) if err.kind() == io::ErrorKind::NotFound => {}
                Err(err) => (self.warn)(format!("check job {name} not taken: {err}")),
            }
        }
    }

    fn start_worker(self: &Arc<Self>, job: Job, taken: PathBuf, wake: Sender<()>) {
        self.lock_count().in_flight += 1;
        let shared = Arc::clone(self);
        let spawned = thread::Builder::new()
            .name("cmstore-check".into())
            .spawn(move || {
                let appended = shared.run(&job, &taken);
                let mut count = shared.lock_count();
                count.in_flight -= 1;
                count.ran += u64::from(appended);
                drop(count);
                shared.done.notify_all();
                // A worker is free: look for the jobs left waiting.
                let _ = wake.send(());
            });
        if let Err(err) = spawned {
            self.lock_count().in_flight -= 1;
            (self.warn)(format!("no thread for a check: {err}"));
        }
    }

    /// Runs `job` (its file taken to `taken`) and appends its result; true once appended.
    /// A result that cannot be appended leaves the job in `running/`, for the next runner.
    fn run(&self, job: &Job, taken: &Path) -> bool {
        let record = super::run(job);
        let entry = super::result_entry(job, record, crate::support::clock::now_ms());
        if let Err(err) = crate::files::queue::append_lines(&self.queue, &[entry.to_line()]) {
            (self.warn)(format!(
                "the {} check's result not appended: {err}",
                job.kind.as_str()
            ));
            return false;
        }
        if let Err(err) = std::fs::remove_file(taken) {
            (self.warn)(format!("check job {} not removed: {err}", taken.display()));
        }
        true
    }

    /// True for a job of this runner's queue (a job that names none is anyone's).
    fn owns(&self, job: &Job) -> bool {
        job.queue
            .as_deref()
            .is_none_or(|queue| file_of(queue) == self.queue_file)
    }

    /// A job file that cannot be read as a job never will be: removed, and said.
    fn drop_broken(&self, path: &Path, name: &str, err: &io::Error) {
        (self.warn)(format!("check job {name} unreadable, removed: {err}"));
        let _ = std::fs::remove_file(path);
    }
}

/// The job files in `dir` (path and name), oldest first; none when it cannot be read.
fn job_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<(SystemTime, PathBuf, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let modified = e
                .metadata()
                .ok()?
                .modified()
                .unwrap_or(SystemTime::UNIX_EPOCH);
            detach::is_job_name(&name).then(|| (modified, e.path(), name))
        })
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|(_, path, name)| (path, name))
        .collect()
}

/// `path` with links resolved, or as given when that fails.
fn file_of(path: &Path) -> PathBuf {
    crate::files::paths::resolve_link(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::checks::Kind;
    use crate::model::queue_line::QueueEntry;

    /// A built-in markdown check of `a.md` in `cwd` (an unclosed fence: it fails).
    fn job(cwd: &Path) -> Job {
        std::fs::write(cwd.join("a.md"), "# A\n\n```\ncode\n").unwrap();
        Job {
            kind: Kind::Markdown,
            mode: "audit".into(),
            timeout_ms: 5000,
            cwd: cwd.to_string_lossy().into_owned(),
            files: vec!["a.md".into()],
            command: None,
            max_line_length: None,
            redact: vec![],
            entry: QueueEntry::new("CheckResult", 5),
            queue: None,
        }
    }

    fn results(queue: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(queue)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn wait_results(queue: &Path, n: usize) -> Vec<serde_json::Value> {
        let until = Instant::now() + Duration::from_secs(10);
        while results(queue).len() < n && Instant::now() < until {
            thread::sleep(Duration::from_millis(10));
        }
        results(queue)
    }

    #[test]
    fn a_job_handed_off_is_run_once_and_its_file_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (queue, jobs) = (dir.path().join("q.jsonl"), dir.path().join("checks"));
        let runner = start(&queue, &jobs, |w| panic!("{w}")).unwrap().unwrap();
        assert!(detach::runner_alive(&queue), "the hook sees the runner");
        let job = job(dir.path());
        detach::write_job(&job, &jobs).unwrap();
        let lines = wait_results(&queue, 1);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0]["id"], job.entry.id.as_str());
        assert_eq!(lines[0]["check"]["status"], "failed");
        assert_eq!(runner.finish(None), Finished { ran: 1, left: 0 });
        assert!(!detach::runner_alive(&queue), "the lock is let go");
        assert!(job_files(&jobs).is_empty() && job_files(&running_dir(&jobs)).is_empty());
        assert_eq!(results(&queue).len(), 1);
    }

    #[test]
    fn an_idle_runner_looks_at_its_directory_only_when_polled() {
        let dir = tempfile::tempdir().unwrap();
        let (queue, jobs) = (dir.path().join("q.jsonl"), dir.path().join("checks"));
        let runner = start(&queue, &jobs, |_| {}).unwrap().unwrap();
        std::thread::sleep(Duration::from_millis(600));
        let looks = runner.shared.looks.load(Ordering::Relaxed);
        // The first look, at most one poll (every 2 s watched, 200 ms unwatched), and the
        // wake-ups of the runner's own `running/`: never a look woken by the last look.
        assert!(looks <= 5, "{looks} looks in 600 ms");
        runner.finish(None);
    }

    #[test]
    fn a_second_runner_of_a_queue_does_not_start() {
        let dir = tempfile::tempdir().unwrap();
        let (queue, jobs) = (dir.path().join("q.jsonl"), dir.path().join("checks"));
        let first = start(&queue, &jobs, |_| {}).unwrap().unwrap();
        assert!(start(&queue, &jobs, |_| {}).unwrap().is_none());
        first.finish(None);
        assert!(start(&queue, &jobs, |_| {}).unwrap().is_some());
    }

    #[test]
    fn jobs_a_killed_runner_took_are_run_by_the_next_and_others_queues_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let (queue, jobs) = (dir.path().join("q.jsonl"), dir.path().join("checks"));
        let orphan = job(dir.path());
        let taken = detach::write_job(&orphan, &jobs).unwrap();
        std::fs::create_dir_all(running_dir(&jobs)).unwrap();
        let name = taken.file_name().unwrap();
        std::fs::rename(&taken, running_dir(&jobs).join(name)).unwrap();
        let mut other = job(dir.path());
        other.queue = Some(dir.path().join("other.jsonl"));
        let other_file = detach::write_job(&other, &jobs).unwrap();
        let runner = start(&queue, &jobs, |w| panic!("{w}")).unwrap().unwrap();
        let lines = wait_results(&queue, 1);
        assert_eq!(runner.finish(None), Finished { ran: 1, left: 0 });
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["id"], orphan.entry.id.as_str());
        assert!(other_file.exists(), "another queue's job is not taken");
    }

    #[test]
    fn finishing_with_a_limit_leaves_a_long_check_for_the_next_runner() {
        let dir = tempfile::tempdir().unwrap();
        let (queue, jobs) = (dir.path().join("q.jsonl"), dir.path().join("checks"));
        let runner = start(&queue, &jobs, |_| {}).unwrap().unwrap();
        let mut slow = job(dir.path());
        slow.kind = Kind::Format;
        slow.command = Some(if cfg!(windows) {
            "ping -n 3 127.0.0.1 >NUL".into()
        } else {
            "sleep 2".into()
        });
        detach::write_job(&slow, &jobs).unwrap();
        let until = Instant::now() + Duration::from_secs(10);
        while job_files(&running_dir(&jobs)).is_empty() && Instant::now() < until {
            thread::sleep(Duration::from_millis(10));
        }
        let finished = runner.finish(Some(Duration::from_millis(100)));
        assert_eq!(finished, Finished { ran: 0, left: 1 });
        assert_eq!(job_files(&running_dir(&jobs)).len(), 1, "kept for the next");
    }
}
