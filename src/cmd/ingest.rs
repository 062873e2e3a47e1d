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
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Config;
use crate::files::paths::Paths;
use crate::files::queue::read::DEFAULT_MAX_LINE_BYTES;
use crate::files::transcript::Thresholds;
use crate::store;
use crate::support::failure::Refused;
use crate::write::ingest::follow::{self, Chore, FollowOptions, Progress};
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
    let mut config = ConfigWatch::new(paths, store.clone());
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
        );
        let checked = finish_checks(checks, None) > 0;
        if swept || checked {
            stats.add(&ingester.pass(&stop, &mut on_batch)?);
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
        retention_chore(paths, args.retention_interval_ms),
        sweep_chore(paths),
    ];
    if checks_held {
        chores.push(checks_chore(paths, checks));
    }
    if args.heartbeat_ms > 0 {
        chores.push(heartbeat_chore(Duration::from_millis(args.heartbeat_ms)));
    }
    follow::follow(ingester, options, stop, &wake_rx, on_batch, &mut chores)
}

/// Ingest's sweep ([`ingest::sweep`]): closes the sessions of the workspace files that are
/// due and appends their last turns to the queue. True when it appended any. A problem is
/// printed the first time only (`said`): follow mode sweeps every second, and a lasting one
/// (an unreadable workspace file) would otherwise fill the log.
fn sweep_sessions(
    paths: &Paths,
    ingester: &mut Ingester,
    thresholds: Thresholds,
    said: &mut HashSet<String>,
) -> bool {
    let (lines, problems) =
        match ingest::sweep::sweep(ingester, paths, thresholds, SystemTime::now()) {
            Ok(swept) => (swept.lines, swept.problems),
            Err(err) => (0, vec![format!("{err:#}")]),
        };
    for problem in not_said_yet(problems, said) {
        eprintln!("cmstore ingest: closing sessions: {problem}");
    }
    lines > 0
}

/// The `messages` not in `said`, each once, now added to it.
fn not_said_yet(messages: Vec<String>, said: &mut HashSet<String>) -> Vec<String> {
    messages
        .into_iter()
        .filter(|m| said.insert(m.clone()))
        .collect()
}

/// The sweep as a chore of follow mode, every [`ingest::sweep::EVERY`].
fn sweep_chore(paths: &Paths) -> Chore<'_> {
    let thresholds = Thresholds::from_env();
    let mut said = HashSet::new();
    Chore::new(
        Duration::ZERO,
        ingest::sweep::EVERY,
        move |ingester: &mut Ingester, _: &Progress| {
            sweep_sessions(paths, ingester, thresholds, &mut said);
        },
    )
}

/// How often a following ingest whose check runner could not start looks again.
const CHECKS_RETRY: Duration = Duration::from_secs(2);

/// Starts the check runner once the runner that held the queue's jobs when the ingest
/// started (a detached `cmstore check run`) is gone; until then the hooks start their own. A
/// start that then fails for another reason is said once and not tried again. (A start that
/// failed so at the ingest's start was said then, and makes no chore.)
fn checks_chore<'a>(
    paths: &'a Paths,
    checks: &'a mut Option<crate::hook::checks::runner::Runner>,
) -> Chore<'a> {
    let mut given_up = false;
    Chore::new(
        CHECKS_RETRY,
        CHECKS_RETRY,
        move |_: &mut Ingester, _: &Progress| {
            if given_up || checks.is_some() {
                return;
            }
            let warn = |w| eprintln!("cmstore ingest: {w}");
            match crate::hook::checks::runner::once_free(paths, warn) {
                Ok(Some(runner)) => {
                    eprintln!("cmstore ingest: the check runner started (the other one is gone)");
                    *checks = Some(runner);
                }
                Ok(None) => {}
                Err(err) => {
                    warn(crate::hook::checks::runner::cannot_start(&err));
                    given_up = true;
                }
            }
        },
    )
}

/// The poll of follow mode: `--poll-ms` when given, else rare while file notifications work.
fn poll(given_ms: Option<u64>, watched: bool) -> Duration {
    match (given_ms, watched) {
        (Some(ms), _) => Duration::from_millis(ms),
        (None, true) => follow::WATCHED_POLL,
        (None, false) => follow::UNWATCHED_POLL,
    }
}

/// Backlogs up to this size are counted in lines for the start line and the heartbeat;
/// beyond it, in bytes (counting lines would read it all once more).
const COUNT_LINES_UP_TO: u64 = 64 * 1024 * 1024;

/// Follow mode's first line: what it reads, where it writes, how far behind it starts, how it
/// is woken and what retention it applies.
fn start_line(
    paths: &Paths,
    ingester: &Ingester,
    watcher: &Result<notify::RecommendedWatcher, String>,
    poll: Duration,
) -> String {
    let behind = ingester
        .behind(COUNT_LINES_UP_TO)
        .map_or_else(|e| format!("lag unknown ({e:#})"), |b| behind_text(&b));
    let waking = match watcher {
        Ok(_) => format!("file notifications, a poll every {}", human_duration(poll)),
        Err(why) => format!(
            "a poll every {} (file notifications unavailable: {why})",
            human_duration(poll)
        ),
    };
    let (config, _) = Config::load_for(paths);
    format!(
        "cmstore ingest: following {} into {}; {behind}; woken by {waking}; {}",
        paths.queue.display(),
        paths.db.display(),
        retention_text(&auto_retention::Policy::of(&config))
    )
}

/// The retention policy in a few words.
fn retention_text(policy: &auto_retention::Policy) -> String {
    match (policy.automatic, policy.compact_queue) {
        (false, _) => "no automatic retention (retention_days is not set)".to_string(),
        (true, false) => format!("retention {} days, applied hourly", policy.days),
        (true, true) => format!(
            "retention {} days, applied hourly, queue compacted too",
            policy.days
        ),
    }
}

/// `12 lines behind`, or bytes when the lines were not counted.
fn behind_text(behind: &ingest::Behind) -> String {
    match behind.lines {
        Some(1) => "1 line behind".to_string(),
        Some(n) => format!("{n} lines behind"),
        None => format!("{:.1} MiB behind", behind.bytes as f64 / (1024.0 * 1024.0)),
    }
}

/// A duration as a person reads it: `500 ms`, `10 s`, `15 min`.
fn human_duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0..=999 => format!("{ms} ms"),
        _ if ms.is_multiple_of(60_000) => format!("{} min", ms / 60_000),
        _ if ms.is_multiple_of(1000) => format!("{} s", ms / 1000),
        _ => format!("{:.1} s", d.as_secs_f64()),
    }
}

/// Applies the configured retention at start (after the first pass) and every `every_ms`:
/// the configuration is read each time, so a `retention_days` set or changed later applies
/// from the next run. Without an explicit `retention_days` nothing is deleted.
fn retention_chore(paths: &Paths, every_ms: u64) -> Chore<'_> {
    // The first run compacts whatever it deletes; later ones when they delete something, or
    // when the last compaction did not happen.
    let mut compact_anyway = true;
    Chore::new(
        Duration::ZERO,
        Duration::from_millis(every_ms),
        move |ingester: &mut Ingester, _: &Progress| {
            let (config, _) = Config::load_for(paths);
            let policy = auto_retention::Policy::of(&config);
            if !policy.automatic {
                return;
            }
            let run = auto_retention::apply(
                ingester.store(),
                ingester.queue(),
                &paths.state_dir(),
                &policy,
                crate::support::clock::now_ms(),
                compact_anyway,
            );
            match run {
                Ok(run) => {
                    compact_anyway = run.compaction_skipped.is_some();
                    eprintln!("{}", retention_line(&policy, &run));
                }
                Err(err) => eprintln!(
                    "cmstore ingest: warning: automatic retention failed ({err:#}); \
                     the next run tries again"
                ),
            }
        },
    )
}

/// What an automatic retention run did, in one line.
fn retention_line(policy: &auto_retention::Policy, run: &auto_retention::Run) -> String {
    let mut line = format!(
        "cmstore ingest: retention ({} days, cutoff {}): removed {} rows ({} events), {} \
         transcript cursors",
        policy.days,
        crate::support::timespec::iso(run.cutoff_ms),
        run.rows,
        run.events,
        run.cursors
    );
    if policy.compact_queue {
        line.push_str(&format!(", {} queue lines", run.queue_lines));
    }
    line.push_str(&format!(" in {:.2} s", run.took.as_secs_f64()));
    if let Some(why) = &run.compaction_skipped {
        line.push_str(&format!("; queue not compacted: {why}"));
    }
    line
}

/// A heartbeat every `every`: what was ingested since the last one, the rate over busy time
/// and how far behind ingest is; when nothing happened, only every [`IDLE_HEARTBEATS`]th
/// time, so an idle journal stays short.
fn heartbeat_chore<'a>(every: Duration) -> Chore<'a> {
    let mut last = Progress::default();
    let mut quiet = 0u32;
    Chore::new(
        every,
        every,
        move |ingester: &mut Ingester, now: &Progress| {
            let lines = now.total.lines - last.total.lines;
            if lines == 0 {
                quiet += 1;
                if !quiet.is_multiple_of(IDLE_HEARTBEATS) {
                    return;
                }
            } else {
                quiet = 0;
            }
            let behind = ingester
                .behind(COUNT_LINES_UP_TO)
                .map_or_else(|e| format!("lag unknown ({e:#})"), |b| behind_text(&b));
            eprintln!(
                "{}",
                heartbeat_line(&last, now, every * quiet.max(1), &behind)
            );
            last = *now;
        },
    )
}

/// Heartbeats skipped while idle before one says so.
const IDLE_HEARTBEATS: u32 = 15;

/// One heartbeat: `since` is the progress at the last one, `span` the time since.
fn heartbeat_line(since: &Progress, now: &Progress, span: Duration, behind: &str) -> String {
    let lines = now.total.lines - since.total.lines;
    if lines == 0 {
        return format!(
            "cmstore ingest: idle for {}; {} lines since start; {behind}",
            human_duration(span),
            now.total.lines
        );
    }
    let busy = now.busy.saturating_sub(since.busy);
    format!(
        "cmstore ingest: {lines} lines in the last {} ({} rows, {} duplicates, {} rejects), \
         {} lines/s while busy; {behind}",
        human_duration(span),
        now.total.rows - since.total.rows,
        now.total.duplicates - since.total.duplicates,
        now.total.rejects - since.total.rejects,
        rate(lines, busy)
    )
}

/// Lines per second over `busy`, rounded.
fn rate(lines: u64, busy: Duration) -> String {
    let secs = busy.as_secs_f64();
    match secs > 0.0 {
        true => format!("{:.0}", lines as f64 / secs),
        false => "-".to_string(),
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

/// The configuration's problems, warned about on stderr when they are new.
struct ConfigWatch<'a> {
    paths: &'a Paths,
    /// The file as it was at the last look: `None` before the first, or when it is absent.
    stamp: Option<Option<(u64, Option<SystemTime>)>>,
    /// The problems already warned about.
    reported: Vec<String>,
    /// The store whose price table follows the file's `[prices]`.
    store: store::Store,
}

impl<'a> ConfigWatch<'a> {
    fn new(paths: &'a Paths, store: store::Store) -> ConfigWatch<'a> {
        ConfigWatch {
            paths,
            stamp: None,
            reported: Vec::new(),
            store,
        }
    }

    /// Loads the configuration when the file changed (one `stat` otherwise), brings the
    /// store's price table in line with it, and warns about each problem not warned about yet; says so once when the last one is gone. The
    /// environment cannot change under a running process: only the file is looked at.
    fn check(&mut self) {
        let stamp = std::fs::metadata(&self.paths.config)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        if self.stamp == Some(stamp) {
            return;
        }
        self.stamp = Some(stamp);
        let (config, problems) = Config::load_for(self.paths);
        // Cost is computed from the store's price table when read: a changed price applies
        // from the next summary on, to all of history.
        if let Err(err) = store::usage::sync_store_prices(&self.store, &config.prices) {
            eprintln!("cmstore ingest: warning: cannot update the price table: {err}");
        }
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        for problem in problems.iter().filter(|p| !self.reported.contains(p)) {
            eprintln!(
                "cmstore ingest: warning: configuration problem (capture uses the default \
                 for it): {problem}"
            );
        }
        if problems.is_empty() && !self.reported.is_empty() {
            eprintln!("cmstore ingest: the configuration problems are gone");
        }
        self.reported = problems;
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

    fn progress(lines: u64, busy_ms: u64) -> Progress {
        Progress {
            total: Stats {
                lines,
                rows: lines,
                ..Stats::default()
            },
            busy: Duration::from_millis(busy_ms),
        }
    }

    #[test]
    fn a_lasting_sweep_problem_is_printed_once() {
        let mut said = HashSet::new();
        let sweep = |n: &str| {
            vec![
                format!("workspace of /p: {n}"),
                "workspace of /q: busy".into(),
            ]
        };
        assert_eq!(not_said_yet(sweep("a"), &mut said), sweep("a"));
        assert_eq!(not_said_yet(sweep("a"), &mut said), Vec::<String>::new());
        assert_eq!(
            not_said_yet(sweep("b"), &mut said),
            ["workspace of /p: b".to_string()]
        );
    }

    #[test]
    fn the_rate_counts_busy_time_only() {
        let stats = progress(3000, 0).total;
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
    fn heartbeats_say_what_happened_since_the_last_one() {
        let busy = heartbeat_line(
            &progress(100, 1000),
            &progress(1100, 1500),
            Duration::from_secs(60),
            "0 lines behind",
        );
        assert_eq!(
            busy,
            "cmstore ingest: 1000 lines in the last 1 min (1000 rows, 0 duplicates, 0 rejects), \
             2000 lines/s while busy; 0 lines behind"
        );
        let idle = heartbeat_line(
            &progress(1100, 1500),
            &progress(1100, 1500),
            Duration::from_secs(900),
            "0 lines behind",
        );
        assert_eq!(
            idle,
            "cmstore ingest: idle for 15 min; 1100 lines since start; 0 lines behind"
        );
    }

    #[test]
    fn the_poll_is_rare_while_notifications_work() {
        assert_eq!(poll(None, true), follow::WATCHED_POLL);
        assert_eq!(poll(None, false), follow::UNWATCHED_POLL);
        assert_eq!(poll(Some(20), true), Duration::from_millis(20));
    }
}
