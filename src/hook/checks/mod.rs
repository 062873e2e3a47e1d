//! vstack's post-edit format, markdown quality and post-commit security scan hooks as cmstore
//! checks (docs/checks.md): which checks an event asks for ([`trigger`]), running one
//! ([`run`]), the `CheckResult` line of its result ([`result_entry`]), the agent's feedback in
//! enforce mode ([`feedback`]), and audit mode's hand-off ([`detach`]) to the runner of a
//! following `cmstore ingest` ([`runner`]) or to a detached `cmstore check run`.
//!
//! On the hook path: nothing here reaches the store. In audit mode the hook only writes the
//! job to a file, and starts `cmstore check run` detached only when no ingest's runner is
//! there to take it; in enforce mode the hook runs the check itself, bounded by its time
//! limit.

pub mod detach;
pub mod diff;
pub mod glob;
pub mod markdown;
pub mod process;
pub mod runner;
pub mod trigger;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::model::queue_line::check::{status, CheckRecord, Finding};
use crate::model::queue_line::{estimate_tokens, QueueEntry};
use crate::model::redact::Redactor;
use process::{Ending, Ran};

pub use trigger::jobs;

/// Lines of a command's output kept on the result.
const OUTPUT_LINES: usize = 20;
/// Characters of a command's output kept on the result.
const OUTPUT_CHARS: usize = 4000;
/// Files named on one result.
const MAX_FILES: usize = 200;
/// Findings kept on one result.
const MAX_FINDINGS: usize = 100;
/// Largest markdown file the built-in checks read.
const MAX_MARKDOWN_BYTES: u64 = 4 * 1024 * 1024;

/// Which check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Format,
    Markdown,
    Security,
}

impl Kind {
    /// The check's name on its result.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Format => "format",
            Kind::Markdown => "markdown",
            Kind::Security => "security",
        }
    }
}

/// One check to run: everything the runner needs, so the detached `cmstore check run` reads
/// no configuration of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub kind: Kind,
    /// `audit` or `enforce`.
    pub mode: String,
    pub timeout_ms: u64,
    /// The agent's working directory, where the command runs.
    pub cwd: String,
    /// The edited files the check is for (empty for the commit scan).
    pub files: Vec<String>,
    /// The command line (format; markdown's or the scanner's when configured).
    pub command: Option<String>,
    /// The markdown line limit.
    pub max_line_length: Option<usize>,
    /// The configured redaction patterns, for the command's output.
    pub redact: Vec<String>,
    /// The result's queue entry, with the triggering event's session, agent and call. Its
    /// id is fixed when the job is made, so a job run twice (its runner killed after the
    /// append) still gives the store one result.
    pub entry: QueueEntry,
    /// The queue the result goes to, set when the job is handed to a runner: an ingest's
    /// runner leaves the jobs of other queues alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<PathBuf>,
}

impl Job {
    /// True in enforce mode: the hook runs the check and tells the agent of a failure.
    pub fn enforced(&self) -> bool {
        self.mode == "enforce"
    }
}

/// Runs `job` and returns its result; never fails (a check that cannot run is an `error`).
pub fn run(job: &Job) -> CheckRecord {
    let started = Instant::now();
    let redactor = Redactor::new(&job.redact);
    let cwd = Path::new(&job.cwd);
    let limit = Duration::from_millis(job.timeout_ms);
    let mut record = match (job.kind, &job.command) {
        (Kind::Format, Some(command)) | (Kind::Markdown, Some(command)) => {
            let line = fill_files(command, &job.files);
            let mut record = from_ran(&shell_ran(&line, cwd, limit), job, &redactor);
            record.command = Some(line);
            record
        }
        (Kind::Format, None) => CheckRecord {
            status: status::ERROR.into(),
            error: Some("no command configured".into()),
            ..CheckRecord::default()
        },
        (Kind::Markdown, None) => markdown(job, cwd),
        (Kind::Security, _) => security(job, cwd, started + limit, &redactor),
    };
    record.name = job.kind.as_str().to_string();
    record.mode.clone_from(&job.mode);
    if record.files.is_empty() {
        record.files = job.files.clone();
    }
    record.files.truncate(MAX_FILES);
    record.findings.truncate(MAX_FINDINGS);
    record.duration_ms = started.elapsed().as_millis() as u64;
    record
}

fn shell_ran(line: &str, cwd: &Path, limit: Duration) -> Ran {
    process::shell(line, cwd, limit)
}

/// `command` with `{files}` replaced by the quoted files (left as it is without one).
pub fn fill_files(command: &str, files: &[String]) -> String {
    command.replace("{files}", &process::quote_files(files))
}

/// A command's result: passed on exit 0, failed on another code, an error when it did not
/// start (the shell's 127 or cmd's 9009: command not found), timed out past its limit.
fn from_ran(ran: &Ran, job: &Job, redactor: &Redactor) -> CheckRecord {
    let output = first_lines(&ran.output, redactor);
    let (status, exit_code, error) = match &ran.ending {
        Ending::Exited(Some(0)) => (status::PASSED, Some(0), None),
        Ending::Exited(Some(code @ (127 | 9009))) => (
            status::ERROR,
            Some(*code),
            Some("command not found".to_string()),
        ),
        Ending::Exited(Some(code)) => (status::FAILED, Some(*code), None),
        Ending::Exited(None) => (status::ERROR, None, Some("killed by a signal".to_string())),
        Ending::TimedOut => (
            status::TIMED_OUT,
            None,
            Some(format!(
                "ran past its {} limit and was killed",
                limit_text(job.timeout_ms)
            )),
        ),
        Ending::NotStarted(err) => (status::ERROR, None, Some(format!("cannot start: {err}"))),
    };
    CheckRecord {
        status: status.into(),
        exit_code,
        output,
        error,
        ..CheckRecord::default()
    }
}

fn limit_text(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

/// The first [`OUTPUT_LINES`] lines of `output` (at most [`OUTPUT_CHARS`]), secrets redacted;
/// `None` when it is blank.
fn first_lines(output: &str, redactor: &Redactor) -> Option<String> {
    let kept: Vec<&str> = output.lines().take(OUTPUT_LINES).collect();
    let text = kept.join("\n");
    let text = crate::model::shorten::cut_text(text.trim_end(), OUTPUT_CHARS);
    (!text.trim().is_empty()).then(|| redactor.redact(&text).into_owned())
}

/// The built-in markdown checks over the job's files.
fn markdown(job: &Job, cwd: &Path) -> CheckRecord {
    let options = markdown::Options {
        max_line_length: job.max_line_length,
    };
    let mut findings = Vec::new();
    for file in &job.files {
        let path = cwd.join(file);
        let Some(text) = read_small(&path) else {
            continue;
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let exists = |target: &str| dir.join(target).exists();
        findings.extend(markdown::check(file, &text, options, &exists));
    }
    CheckRecord {
        status: if findings.is_empty() {
            status::PASSED
        } else {
            status::FAILED
        }
        .into(),
        findings,
        ..CheckRecord::default()
    }
}

fn read_small(path: &Path) -> Option<String> {
    let len = std::fs::metadata(path).ok()?.len();
    if len > MAX_MARKDOWN_BYTES {
        return None;
    }
    std::fs::read(path)
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// The commit scan: cmstore's secret patterns over the lines `HEAD` adds, then the
/// configured scanner, all before `deadline`.
fn security(job: &Job, cwd: &Path, deadline: Instant, redactor: &Redactor) -> CheckRecord {
    let left = |now: Instant| deadline.saturating_duration_since(now);
    let show = process::program(
        "git",
        &[
            "-c",
            "core.quotepath=false",
            "show",
            "--format=%H",
            "--unified=0",
            "--no-color",
            "--no-ext-diff",
            "HEAD",
        ],
        cwd,
        left(Instant::now()),
    );
    let failed_git = |status: &str, error: String| CheckRecord {
        status: status.into(),
        command: Some("git show --format=%H --unified=0 HEAD".into()),
        error: Some(error),
        ..CheckRecord::default()
    };
    match &show.ending {
        Ending::Exited(Some(0)) => {}
        Ending::TimedOut => {
            return failed_git(status::TIMED_OUT, "git show ran past the limit".into())
        }
        Ending::NotStarted(err) => {
            return failed_git(status::ERROR, format!("cannot start git: {err}"))
        }
        Ending::Exited(_) => {
            let first = show.output.lines().next().unwrap_or("").to_string();
            return failed_git(status::ERROR, format!("git show failed: {first}"));
        }
    }
    let (hash, added) = diff::added_lines(&show.output);
    let mut files: Vec<String> = Vec::new();
    for a in &added {
        if files.last().map(String::as_str) != Some(a.file) && !files.iter().any(|f| f == a.file) {
            files.push(a.file.to_string());
        }
    }
    let findings: Vec<Finding> = diff::secrets(&added, redactor);
    let mut record = CheckRecord {
        status: if findings.is_empty() {
            status::PASSED
        } else {
            status::FAILED
        }
        .into(),
        files,
        findings,
        commit: hash.map(str::to_string),
        ..CheckRecord::default()
    };
    if let Some(command) = &job.command {
        let scanner = from_ran(
            &shell_ran(command, cwd, left(Instant::now())),
            job,
            redactor,
        );
        record.command = Some(command.clone());
        record.exit_code = scanner.exit_code;
        record.output = scanner.output;
        record.error = scanner.error;
        if record.status == status::PASSED {
            record.status = scanner.status;
        }
    }
    record
}

/// The `CheckResult` queue entry of `record`, finished at `now_ms`.
pub fn result_entry(job: &Job, record: CheckRecord, now_ms: i64) -> QueueEntry {
    let mut entry = job.entry.clone();
    entry.timestamp = now_ms;
    entry.duration_ms = Some(record.duration_ms as i64);
    entry.check = Some(record);
    let size = entry.to_line().len() as u64;
    entry.size_bytes = size;
    entry.estimated_tokens = estimate_tokens(size);
    entry
}

/// What the agent is told of the failed checks among `records` (enforce mode), or `None`
/// when none failed. Time-outs and checks that could not start never block. A secret is
/// named by its kind and place, never by its value.
pub fn feedback(records: &[CheckRecord]) -> Option<String> {
    let parts: Vec<String> = records
        .iter()
        .filter(|r| r.failed())
        .map(describe_failure)
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

fn describe_failure(r: &CheckRecord) -> String {
    let mut text = match r.name.as_str() {
        "security" => format!(
            "cmstore security scan: commit {} adds secrets. Remove them from the commit (and rotate them):",
            r.commit.as_deref().map_or("HEAD", |c| &c[..c.len().min(12)])
        ),
        name => format!(
            "cmstore {name} check failed for {}. Fix the file(s):",
            r.files.join(", ")
        ),
    };
    if let (Some(command), Some(code)) = (&r.command, r.exit_code) {
        text.push_str(&format!("\n`{command}` exited {code}"));
    }
    for f in &r.findings {
        let place = match (&f.file, f.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            (Some(file), None) => file.clone(),
            _ => String::from("?"),
        };
        let message = f.message.as_deref().unwrap_or("");
        text.push_str(&format!("\n- {place}: {} {message}", f.rule));
    }
    if let Some(output) = &r.output {
        text.push('\n');
        text.push_str(output);
    }
    text
}

/// Where audit-mode jobs wait for their runner: `<state>/checks/`.
pub fn jobs_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("checks")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str, status: &str) -> CheckRecord {
        CheckRecord {
            name: name.into(),
            mode: "enforce".into(),
            status: status.into(),
            files: vec!["src/main.rs".into()],
            ..CheckRecord::default()
        }
    }

    #[test]
    fn only_failures_are_told_and_secrets_by_kind_and_place() {
        assert_eq!(feedback(&[record("format", status::PASSED)]), None);
        assert_eq!(feedback(&[record("format", status::TIMED_OUT)]), None);
        assert_eq!(feedback(&[record("format", status::ERROR)]), None);
        let mut format = record("format", status::FAILED);
        format.command = Some("rustfmt --check 'src/main.rs'".into());
        format.exit_code = Some(1);
        format.output = Some("Diff in src/main.rs at line 1".into());
        let mut scan = record("security", status::FAILED);
        scan.commit = Some("0123456789abcdef0123".into());
        scan.findings = vec![Finding {
            rule: "aws-key".into(),
            file: Some("app.py".into()),
            line: Some(4),
            message: Some("aws-key added".into()),
        }];
        let text = feedback(&[format, scan]).unwrap();
        assert!(
            text.contains("cmstore format check failed for src/main.rs"),
            "{text}"
        );
        assert!(text.contains("exited 1"), "{text}");
        assert!(text.contains("Diff in src/main.rs"), "{text}");
        assert!(text.contains("commit 0123456789ab adds secrets"), "{text}");
        assert!(text.contains("- app.py:4: aws-key"), "{text}");
    }

    #[test]
    fn files_are_filled_in_quoted() {
        assert_eq!(
            fill_files("rustfmt --check {files}", &["a.rs".into()]),
            if cfg!(unix) {
                "rustfmt --check 'a.rs'"
            } else {
                "rustfmt --check \"a.rs\""
            }
        );
        assert_eq!(fill_files("make format", &["a.rs".into()]), "make format");
    }

    #[test]
    fn output_is_cut_to_its_first_lines_and_redacted() {
        let output: String = (0..50).map(|i| format!("line {i}\n")).collect();
        let kept = first_lines(&output, &Redactor::new(&[])).unwrap();
        assert_eq!(kept.lines().count(), OUTPUT_LINES);
        let secret = first_lines("key AKIAIOSFODNN7EXAMPLE", &Redactor::new(&[])).unwrap();
        assert_eq!(secret, "key [REDACTED:aws-key]");
        assert_eq!(first_lines("  \n", &Redactor::new(&[])), None);
    }
}
