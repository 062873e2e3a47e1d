//! `cmstore check run --job FILE` (hidden): the detached runner of an audit-mode check.
//!
//! The hook (`cmstore capture`) writes the job to a private file and starts this with no
//! stdin, stdout or stderr; it takes the file (unless the check runner of an `ingest` that
//! started meanwhile took it first: then it has nothing to do), runs the check within its
//! time limit, and appends the `CheckResult` line under the queue lock. It never opens the
//! store.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::files::paths::Paths;
use crate::hook::checks::{self, detach};

/// Arguments of `cmstore check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

/// What `cmstore check` does.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Run one check job written by the hook and append its result to the queue
    Run {
        /// The job file (removed once read; gone already when another runner took it)
        #[arg(long, value_name = "FILE")]
        job: PathBuf,
    },
}

/// Runs the job and appends its result line.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let Action::Run { job } = args.action;
    let Some(job) = detach::take_job(&job).with_context(|| format!("reading {}", job.display()))?
    else {
        return Ok(ExitCode::SUCCESS);
    };
    let record = checks::run(&job);
    let entry = checks::result_entry(&job, record, chrono::Utc::now().timestamp_millis());
    crate::files::queue::append_lines(&paths.queue, &[entry.to_line()])
        .with_context(|| format!("appending to {}", paths.queue.display()))?;
    Ok(ExitCode::SUCCESS)
}
