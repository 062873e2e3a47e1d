//! `cmstore ingest`: mirror the queue into the database, following it until SIGINT/SIGTERM, or
//! draining it once with `--once`.
//!
//! Exit codes: 0 done (or stopped cleanly by a signal, after the current commit), 1 error,
//! 3 another `cmstore ingest` already holds this database's ingest lock.

use std::collections::HashSet;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use crate::files::paths::Paths;
use crate::files::queue::read::DEFAULT_MAX_LINE_BYTES;
use crate::files::transcript::Thresholds;
use crate::store;
use crate::support::failure::Refused;
use crate::write::ingest::chores::{
    checks_chore, heartbeat_chore, rate, retention_chore, spend_chore, start_line, sweep_chore,
    sweep_sessions, transcripts_chore, write_spend, ConfigWatch,
};
use crate::write::ingest::follow::{self, FollowOptions, Progress};
use crate::write::ingest::{self, Ingester, Options, Stats};
use crate::write::prune::auto as auto_retention;

/// A backlog at least this large gets a progress bar (when stderr is a terminal).
const PROGRESS_MIN_BYTES: u64 = 8 * 1024 * 1024;

/// Arguments of `cmstore ingest`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "Exit status: 0 when drained or stopped by SIGINT/SIGTERM (after the \
    current commit), 1 on error, 3 when another `cmstore ingest` already runs on this database."
)]
pub struct Args {
    /// Drain the queue and exit instead of following it
    #[arg(long)]
    pub once: bool,
    /// Lines per transaction: each commits its rows and the new queue offset together, and
    /// also ends after 64 MiB of queue
    #[arg(long, value_name = "N", default_value_t = ingest::DEFAULT_BATCH_LINES as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch_size: u64,
    /// Follow mode: longest pause between checks when no file notification arrives
    /// [default: 10000 while file notifications work, 500 without them]
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub poll_ms: Option<u64>,
    /// Follow mode: a line on stderr this often when lines were ingested (and every 15th time
    /// when idle); 0 turns it off
    #[arg(long, value_name = "MS", default_value_t = 60_000)]
    pub heartbeat_ms: u64,
    /// Follow mode: how often the configured retention is applied (for tests; an hour)
    #[arg(long, hide = true, env = "CMSTORE_RETENTION_INTERVAL_MS", value_name = "MS",
          default_value_t = auto_retention::DEFAULT_INTERVAL.as_millis() as u64,
          value_parser = clap::value_parser!(u64).range(10..))]
    pub retention_interval_ms: u64,
    /// When to load a backlog without the secondary indexes and rebuild them at the end
    /// (faster for a large backlog; queries are slower meanwhile)
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = DeferIndexes::Auto)]
    pub defer_indexes: DeferIndexes,
    /// Lines longer than this many bytes are rejected without being read whole
    #[arg(long, hide = true, env = "CMSTORE_MAX_LINE_BYTES", value_name = "BYTES",
          default_value_t = DEFAULT_MAX_LINE_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(16..=1 << 32))]
    pub max_line_bytes: u64,
    /// Also receive the agents' own OpenTelemetry logs and metrics (OTLP/HTTP, protobuf or
    /// JSON) on this address, e.g. 127.0.0.1:4318; loopback only unless cmstore.toml allows
    /// more (`[otlp_receiver]`)
    #[arg(long, value_name = "ADDR")]
    pub otlp_listen: Option<String>,
}

/// `--defer-indexes`: the command line's spelling of [`ingest::DeferIndexes`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum DeferIndexes {
    /// For a backlog of at least 64 MiB that is also at least the size of the database's pages
    /// in use (rebuilding then costs less than keeping the indexes up to date row by row).
    #[default]
    Auto,
    /// For the backlog found when ingest starts, whatever its size (later passes of follow
    /// mode keep the indexes).
    Always,
    /// Never: queries stay fast while a backlog loads, at the cost of a slower load.
    Never,
}

impl From<DeferIndexes> for ingest::DeferIndexes {
    fn from(arg: DeferIndexes) -> ingest::DeferIndexes {
        match arg {
            DeferIndexes::Auto => ingest::DeferIndexes::Auto,
            DeferIndexes::Always => ingest::DeferIndexes::Always,
            DeferIndexes::Never => ingest::DeferIndexes::Never,
        }
    }
}

/// Runs `cmstore ingest`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let _lock = match ingest::lock(&paths.db, &paths.queue) {
        Ok(lock) => lock,
        Err(err @ ingest::Error::AlreadyRunning { .. }) => {
            return Err(Refused {
                why: err.into(),
                what: "not starting a second one",
            }
            .into())
        }
        Err(err) => return Err(err.into()),
    };
    let store = store::open(&paths.db)
        .with_context(|| format!("cannot open database {}", paths.db.display()))?;
    let done = ingest(paths, args, &store);
    // Here, not on a thread the exit would cut short, so that the last connection removes
    // the WAL.
    store.close();
    done
}

/// Where the chores' lines go: stderr, one line each.
fn say(line: &str) {
    eprintln!("{line}");
}

/// The ingest itself, into `store` (whose clones are all dropped when it returns).
fn ingest(paths: &Paths, args: Args, store: &store::Store) -> anyhow::Result<ExitCode> {
    let options = Options {
        batch_lines: usize::try_from(args.batch_size).unwrap_or(ingest::DEFAULT_BATCH_LINES),
        max_line_bytes: usize::try_from(args.max_line_bytes).unwrap_or(usize::MAX),
        defer_indexes: args.defer_indexes.into(),
    };
    let mut ingester = Ingester::new(store.clone(), &paths.queue, options);
    ingester.on_warning(|warning| eprintln!("cmstore ingest: {warning}"));
    // Capture reads the same configuration: what is wrong with it is said here once, and
    // again only when the file changes and its problems with it.
    let mut config = ConfigWatch::new(paths, store.clone(), say);
    config.check();

    let stop = Arc::new(AtomicBool::new(false));
    let (wake_tx, wake_rx) = follow::channel();
    {
        let stop = Arc::clone(&stop);
        let wake = wake_tx.clone();
        ctrlc::set_handler(move || {
            stop.store(true, Ordering::SeqCst);
            let _ = wake.send(());
        })
        .context("cannot install the SIGINT/SIGTERM handler")?;
    }

    let receiver =
        crate::write::otlp_receiver::beside_ingest(paths, args.otlp_listen.as_deref(), |w| {
            eprintln!("cmstore ingest: {w}")
        })
        .context("the OTLP receiver cannot start")?;
    if let Some(r) = &receiver {
        eprintln!(
            "cmstore ingest: receiving OTLP/HTTP logs and metrics on http://{}",
            r.addr
        );
    }
    let export = crate::read::export::beside_ingest(paths, |w| eprintln!("cmstore ingest: {w}"));
    // Only while following: a single pass would stop it before it connected.
    let push = match args.once {
        true => None,
        false => crate::read::push::beside_ingest(paths, |w| eprintln!("cmstore ingest: {w}")),
    };
    if let Some(push) = &push {
        eprintln!("cmstore ingest: pushing to {}", push.destination());
    }
    let beside = crate::hook::checks::runner::beside_ingest(paths, !args.once, |w| {
        eprintln!("cmstore ingest: {w}")
    });
    let (mut checks, checks_held) = (beside.runner, beside.held_elsewhere);
    let started = Instant::now();
    let bar = progress_bar(ingester.backlog().unwrap_or(0));
    let mut on_batch = |s: &Stats| {
        config.check();
        if let Some(bar) = bar.as_ref().filter(|b| !b.is_finished()) {
            bar.set_position(s.bytes);
            if s.rebuilding {
                bar.set_message(format!("{} rows; rebuilding indexes", s.rows));
                bar.enable_steady_tick(Duration::from_millis(120));
            } else if s.rebuilt_indexes > 0 || s.indexes_set_aside == 0 {
                bar.disable_steady_tick();
                bar.set_message(format!("{} rows", s.rows));
                if Some(s.bytes) >= bar.length() {
                    // The backlog is done; follow mode goes on without a bar.
                    bar.finish_and_clear();
                }
            } else {
                bar.set_message(format!("{} rows (indexes set aside)", s.rows));
            }
        }
    };
    let (stats, busy) = if args.once {
        let mut stats = ingester.pass(&stop, &mut on_batch)?;
        // The turns of the sessions the sweep closes are queue lines, and so are the results
        // of the check jobs left behind, which ran beside the pass: this run takes them too.
        let swept = sweep_sessions(
            paths,
            &mut ingester,
            Thresholds::from_env(),
            &mut HashSet::new(),
            say,
        );
        let checked = finish_checks(checks, None) > 0;
        if swept || checked {
            stats.add(&ingester.pass(&stop, &mut on_batch)?);
        }
        match write_spend(
            paths,
            ingester.store(),
            crate::write::ingest::budget_notice::Wait::Yes,
        ) {
            Ok(problems) => {
                for problem in problems {
                    eprintln!("cmstore ingest: warning: {problem}");
                }
            }
            Err(err) => eprintln!(
                "cmstore ingest: warning: cannot write {} ({err:#})",
                paths.spend_file().display()
            ),
        }
        (stats, started.elapsed())
    } else {
        let wake = (wake_tx, wake_rx);
        let progress = follow_mode(
            paths,
            &args,
            (&mut ingester, &mut checks, checks_held),
            &stop,
            wake,
            &mut on_batch,
        )?;
        finish_checks(checks, Some(CHECKS_GRACE));
        (progress.total, progress.busy)
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    eprintln!("{}", summary(&stats, started.elapsed(), busy));
    if let Some(export) = export {
        finish_export(export);
    }
    if let Some(push) = push {
        finish_push(push);
    }
    if let Some(receiver) = receiver {
        receiver.finish();
    }
    Ok(ExitCode::SUCCESS)
}

/// Follow mode: the watch, the start line, the chores (retention, sweep, the check runner
/// that another runner kept from starting (`checks_held`), heartbeat), then passes until
/// `stop`.
fn follow_mode(
    paths: &Paths,
    args: &Args,
    (ingester, checks, checks_held): (
        &mut Ingester,
        &mut Option<crate::hook::checks::runner::Runner>,
        bool,
    ),
    stop: &Arc<AtomicBool>,
    (wake_tx, wake_rx): (Sender<()>, Receiver<()>),
    on_batch: &mut dyn FnMut(&Stats),
) -> anyhow::Result<Progress> {
    let dir = crate::files::paths::dir_of(&paths.queue);
    crate::files::paths::create_private_dir(dir)
        .with_context(|| format!("cannot create {}", dir.display()))?;
    // Kept alive until follow mode ends: dropping it ends the notifications.
    let watcher = follow::watch(&paths.queue, wake_tx);
    let options = FollowOptions {
        poll: poll(args.poll_ms, watcher.is_ok()),
        ..FollowOptions::default()
    };
    eprintln!("{}", start_line(paths, ingester, &watcher, options.poll));
    let mut chores = vec![
        retention_chore(paths, args.retention_interval_ms, say),
        sweep_chore(paths, say),
        spend_chore(paths, say),
        transcripts_chore(paths, say),
    ];
    if checks_held {
        chores.push(checks_chore(paths, checks, say));
    }
    if args.heartbeat_ms > 0 {
        chores.push(heartbeat_chore(
            Duration::from_millis(args.heartbeat_ms),
            say,
        ));
    }
    follow::follow(ingester, options, stop, &wake_rx, on_batch, &mut chores)
}

/// The poll of follow mode: `--poll-ms` when given, else rare while file notifications work.
fn poll(given_ms: Option<u64>, watched: bool) -> Duration {
    match (given_ms, watched) {
        (Some(ms), _) => Duration::from_millis(ms),
        (None, true) => follow::WATCHED_POLL,
        (None, false) => follow::UNWATCHED_POLL,
    }
}

/// How long a stopping follow mode waits for the checks its runner is running.
const CHECKS_GRACE: Duration = Duration::from_secs(3);

/// Waits for the check runner's jobs (at most `wait`), says what it ran and what it left for
/// the next ingest, and returns how many results it appended.
fn finish_checks(
    runner: Option<crate::hook::checks::runner::Runner>,
    wait: Option<Duration>,
) -> u64 {
    let Some(runner) = runner else { return 0 };
    let done = runner.finish(wait);
    if done.ran > 0 {
        eprintln!("cmstore ingest: ran {} check(s)", done.ran);
    }
    if done.left > 0 {
        eprintln!(
            "cmstore ingest: {} check(s) still running, left for the next ingest to run again",
            done.left
        );
    }
    done.ran
}

/// Stops the continuous push and says what it did.
fn finish_push(push: crate::read::push::Continuous) {
    let destination = push.destination().to_string();
    match push.finish() {
        Ok(s) => eprintln!(
            "cmstore ingest: pushed {} events and {} sessions to {destination}; {} events left to push",
            s.events, s.sessions, s.backlog
        ),
        Err(err) => eprintln!(
            "cmstore ingest: push stopped: {}",
            crate::support::failure::chain(&err)
        ),
    }
}

/// Stops the continuous export and says what it did.
fn finish_export(export: crate::read::export::Continuous) {
    match export.finish() {
        Ok(s) => eprintln!(
            "cmstore ingest: exported {} events as {} spans in {} requests; {} events left to export",
            s.events, s.spans, s.requests, s.backlog
        ),
        Err(err) => eprintln!(
            "cmstore ingest: export stopped: {}",
            crate::support::failure::chain(&err)
        ),
    }
}

fn progress_bar(backlog: u64) -> Option<ProgressBar> {
    if backlog < PROGRESS_MIN_BYTES || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(backlog);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} ingest [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {msg} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    Some(bar)
}

/// The one-line summary printed on exit. The rate is over `busy`, the time spent reading and
/// writing lines: follow mode's idle hours would make any rate look slow.
pub fn summary(stats: &Stats, elapsed: Duration, busy: Duration) -> String {
    let mut line = format!(
        "cmstore ingest: {} lines, {} rows, {} duplicates, {} rejects in {:.2} s ({} lines/s \
         over {:.2} s busy)",
        stats.lines,
        stats.rows,
        stats.duplicates,
        stats.rejects,
        elapsed.as_secs_f64(),
        rate(stats.lines, busy),
        busy.as_secs_f64()
    );
    if stats.restarts > 0 {
        line.push_str(&format!(
            "; queue truncated or replaced {} time(s), read again from 0",
            stats.restarts
        ));
    }
    if stats.rebuilt_indexes > 0 {
        line.push_str(&format!(
            "; loaded without secondary indexes, {} rebuilt in {:.2} s",
            stats.rebuilt_indexes,
            stats.rebuild_ms as f64 / 1000.0
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_counts_busy_time_only() {
        let stats = Stats {
            lines: 3000,
            rows: 3000,
            ..Stats::default()
        };
        let line = summary(
            &stats,
            Duration::from_secs(3600),
            Duration::from_millis(1500),
        );
        assert!(
            line.starts_with("cmstore ingest: 3000 lines, 3000 rows, 0 duplicates, 0 rejects in 3600.00 s (2000 lines/s over 1.50 s busy)"),
            "{line}"
        );
    }

    #[test]
    fn the_poll_is_rare_while_notifications_work() {
        assert_eq!(poll(None, true), follow::WATCHED_POLL);
        assert_eq!(poll(None, false), follow::UNWATCHED_POLL);
        assert_eq!(poll(Some(20), true), Duration::from_millis(20));
    }
}
