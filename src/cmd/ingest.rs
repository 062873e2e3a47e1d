//! `cmstore ingest`: mirror the queue into the database, following it until SIGINT/SIGTERM, or
//! draining it once with `--once`.
//!
//! Exit codes: 0 done (or stopped cleanly by a signal, after the current commit), 1 error,
//! 3 another `cmstore ingest` already holds this database's ingest lock.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Config;
use crate::failure::Refused;
use crate::ingest::follow::{self, FollowOptions};
use crate::ingest::{self, Ingester, Options, Stats};
use crate::paths::Paths;
use crate::queue::read::DEFAULT_MAX_LINE_BYTES;
use crate::store;

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
    /// Lines per transaction
    #[arg(long, value_name = "N", default_value_t = ingest::DEFAULT_BATCH_LINES as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch_size: u64,
    /// Follow mode: longest pause between checks when no file notification arrives
    #[arg(long, value_name = "MS", default_value_t = 500,
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub poll_ms: u64,
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
    let options = Options {
        batch_lines: usize::try_from(args.batch_size).unwrap_or(ingest::DEFAULT_BATCH_LINES),
        max_line_bytes: usize::try_from(args.max_line_bytes).unwrap_or(usize::MAX),
        defer_indexes: args.defer_indexes.into(),
    };
    let mut ingester = Ingester::new(store, &paths.queue, options);
    ingester.on_warning(|warning| eprintln!("cmstore ingest: {warning}"));
    // Capture reads the same configuration: what is wrong with it is said here once, and
    // again only when the file changes and its problems with it.
    let mut config = ConfigWatch::new(paths);
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

    let receiver = crate::otlp_receiver::beside_ingest(paths, args.otlp_listen.as_deref(), |w| {
        eprintln!("cmstore ingest: {w}")
    })
    .context("the OTLP receiver cannot start")?;
    if let Some(r) = &receiver {
        eprintln!(
            "cmstore ingest: receiving OTLP/HTTP logs and metrics on http://{}",
            r.addr
        );
    }
    let export = crate::export::beside_ingest(paths, |w| eprintln!("cmstore ingest: {w}"));
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
    let stats = if args.once {
        ingester.pass(&stop, &mut on_batch)?
    } else {
        let dir = crate::paths::dir_of(&paths.queue);
        crate::paths::create_private_dir(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let _watcher = match follow::watch(&paths.queue, wake_tx) {
            Ok(w) => Some(w),
            Err(why) => {
                eprintln!("cmstore ingest: file notifications unavailable ({why}); polling");
                None
            }
        };
        let options = FollowOptions {
            poll: Duration::from_millis(args.poll_ms),
            ..FollowOptions::default()
        };
        follow::follow(&mut ingester, options, &stop, &wake_rx, &mut on_batch)?
    };
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    eprintln!("{}", summary(&stats, started.elapsed()));
    if let Some(export) = export {
        finish_export(export);
    }
    if let Some(receiver) = receiver {
        receiver.finish();
    }
    Ok(ExitCode::SUCCESS)
}

/// Stops the continuous export and says what it did.
fn finish_export(export: crate::export::Continuous) {
    match export.finish() {
        Ok(s) => eprintln!(
            "cmstore ingest: exported {} events as {} spans in {} requests; {} events left to export",
            s.events, s.spans, s.requests, s.backlog
        ),
        Err(err) => eprintln!("cmstore ingest: export stopped: {err}"),
    }
}

/// The configuration's problems, warned about on stderr when they are new.
struct ConfigWatch<'a> {
    paths: &'a Paths,
    /// The file as it was at the last look: `None` before the first, or when it is absent.
    stamp: Option<Option<(u64, Option<SystemTime>)>>,
    /// The problems already warned about.
    reported: Vec<String>,
}

impl<'a> ConfigWatch<'a> {
    fn new(paths: &'a Paths) -> ConfigWatch<'a> {
        ConfigWatch {
            paths,
            stamp: None,
            reported: Vec::new(),
        }
    }

    /// Loads the configuration when the file changed (one `stat` otherwise) and warns about
    /// each problem not warned about yet; says so once when the last one is gone. The
    /// environment cannot change under a running process: only the file is looked at.
    fn check(&mut self) {
        let stamp = std::fs::metadata(&self.paths.config)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        if self.stamp == Some(stamp) {
            return;
        }
        self.stamp = Some(stamp);
        let (_, problems) = Config::load_for(self.paths);
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

/// The one-line summary printed on exit.
pub fn summary(stats: &Stats, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        stats.lines as f64 / secs
    } else {
        0.0
    };
    let mut line = format!(
        "cmstore ingest: {} lines, {} rows, {} duplicates, {} rejects in {:.2} s ({:.0} lines/s)",
        stats.lines, stats.rows, stats.duplicates, stats.rejects, secs, rate
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
