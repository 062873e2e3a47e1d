//! Follow mode's chores, run between passes on schedules of their own (the sweep that closes
//! sessions, the check runner's late start, automatic retention, the heartbeat), the watch on
//! the configuration file, and the lines that say what ingest is doing. What they have to say
//! goes to the caller's [`Say`] (`cmd/ingest.rs` writes it to stderr), one line at a time.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use super::follow::{Chore, Progress};
use super::Ingester;
use crate::config::retention::Policy;
use crate::config::Config;
use crate::files::paths::Paths;
use crate::files::transcript::Thresholds;
use crate::store;
use crate::store::retention::Run;
use crate::write::prune::auto as auto_retention;

/// Where a chore's lines go (each a whole line, without its newline). A plain function: the
/// check runner hands it to a thread of its own.
pub type Say = fn(&str);

/// Ingest's sweep ([`super::sweep`]): closes the sessions of the workspace files that are
/// due and appends their last turns to the queue. True when it appended any. A problem is
/// printed the first time only (`said`): follow mode sweeps every second, and a lasting one
/// (an unreadable workspace file) would otherwise fill the log.
pub fn sweep_sessions(
    paths: &Paths,
    ingester: &mut Ingester,
    thresholds: Thresholds,
    said: &mut HashSet<String>,
    say: Say,
) -> bool {
    let (lines, problems) =
        match super::sweep::sweep(ingester, paths, thresholds, SystemTime::now()) {
            Ok(swept) => (swept.lines, swept.problems),
            Err(err) => (0, vec![format!("{err:#}")]),
        };
    for problem in not_said_yet(problems, said) {
        say(&format!("cmstore ingest: closing sessions: {problem}"));
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

/// The sweep as a chore of follow mode, every [`super::sweep::EVERY`].
pub fn sweep_chore<'a>(paths: &'a Paths, say: Say) -> Chore<'a> {
    let thresholds = Thresholds::from_env();
    let mut said = HashSet::new();
    Chore::new(
        Duration::ZERO,
        super::sweep::EVERY,
        move |ingester: &mut Ingester, _: &Progress| {
            sweep_sessions(paths, ingester, thresholds, &mut said, say);
        },
    )
}

/// How often follow mode looks at the agents' history folders for transcripts that grew: a
/// `stat` per file each time (2,000 transcripts looked at every minute took 0.03 % of a core,
/// BENCHMARKS.md), and the agents keep their files for weeks (Claude Code 30 days by default).
pub const TRANSCRIPTS_EVERY: Duration = Duration::from_secs(300);

/// Replaces [`TRANSCRIPTS_EVERY`] (milliseconds).
pub const TRANSCRIPTS_EVERY_ENV: &str = "CMSTORE_TRANSCRIPTS_EVERY_MS";

/// Follow mode's import of the agents' history (issue 37): every [`TRANSCRIPTS_EVERY`], the
/// transcripts in the agents' standard folders that are new or changed since an import read
/// them are imported ([`crate::write::import`]: into the store, never the queue), so a session
/// is kept long before its agent deletes the file. A file that has not changed costs a
/// `stat`. Off with `follow_transcripts = false`. It says what it imported, and a failure once.
pub fn transcripts_chore<'a>(paths: &'a Paths, say: Say) -> Chore<'a> {
    let every = crate::support::env::var(TRANSCRIPTS_EVERY_ENV)
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(TRANSCRIPTS_EVERY, Duration::from_millis);
    let mut said = HashSet::new();
    Chore::new(
        Duration::ZERO,
        every,
        move |ingester: &mut Ingester, _: &Progress| {
            let (config, _) = Config::load_for(paths);
            if !config.follow_transcripts {
                return;
            }
            match import_history(ingester.store(), &config, paths) {
                Ok(Some(line)) => say(&line),
                Ok(None) => {}
                Err(err) => {
                    for problem in not_said_yet(vec![format!("{err:#}")], &mut said) {
                        say(&format!("cmstore ingest: importing transcripts: {problem}"));
                    }
                }
            }
        },
    )
}

/// Imports what changed in the agents' history folders; the line that says what came in,
/// when anything did.
fn import_history(
    store: &store::Store,
    config: &Config,
    paths: &Paths,
) -> anyhow::Result<Option<String>> {
    let roots = crate::files::transcript::history::history_roots();
    if roots.is_empty() {
        return Ok(None);
    }
    let files: Vec<std::path::PathBuf> = crate::write::import::find_transcripts(&roots)?
        .into_iter()
        .map(|(path, _)| path)
        .collect();
    let archive = paths.archive_dir();
    let options = crate::write::import::Options {
        config,
        again: false,
        archive: config.archive_transcripts.then_some(archive.as_path()),
    };
    let stats = crate::write::import::import(store, &files, &options, |_| {})?;
    // Said once per file and reason (a count would make each tick's message new).
    if let Some(why) = stats.not_archived.first() {
        anyhow::bail!(
            "could not copy into the archive {} (the file was imported): {why}",
            archive.display()
        );
    }
    if stats.files == 0 {
        return Ok(None);
    }
    Ok(Some(format!(
        "cmstore ingest: imported {} transcript(s): {} new response row(s), {} new turn row(s)",
        stats.files,
        stats.rows_after - stats.rows_before,
        stats.turn_rows_after - stats.turn_rows_before
    )))
}

/// How often follow mode looks whether the spend file is due: when new rows came in, or
/// [`SPEND_AT_LEAST`] after it was last written (usage an `import` added, a new day).
pub const SPEND_EVERY: Duration = Duration::from_secs(5);

/// The longest the spend file goes unwritten while an ingest follows.
pub const SPEND_AT_LEAST: Duration = Duration::from_secs(60);

/// Writes the spend file ([`write_spend`]) when new rows came in since its last write, or
/// [`SPEND_AT_LEAST`] after it: a spend seen by `statusline` is at most that old, plus the
/// ingest's lag. A failure is said once.
pub fn spend_chore<'a>(paths: &'a Paths, say: Say) -> Chore<'a> {
    let mut written: Option<(u64, std::time::Instant)> = None;
    let mut failed = false;
    Chore::new(
        Duration::ZERO,
        SPEND_EVERY,
        move |ingester: &mut Ingester, progress: &Progress| {
            let rows = progress.total.rows;
            let due = written
                .is_none_or(|(at_rows, at)| at_rows != rows || at.elapsed() >= SPEND_AT_LEAST);
            if !due {
                return;
            }
            match write_spend(paths, ingester.store(), super::budget_notice::Wait::No(say)) {
                Ok(problems) => {
                    written = Some((rows, std::time::Instant::now()));
                    failed = false;
                    for problem in problems {
                        say(&format!("cmstore ingest: warning: {problem}"));
                    }
                }
                Err(err) if !failed => {
                    failed = true;
                    say(&format!(
                        "cmstore ingest: warning: cannot write {} ({err:#}); `statusline` \
                         shows an older spend",
                        paths.spend_file().display()
                    ));
                }
                Err(_) => {}
            }
        },
    )
}

/// Counts what the agents spent today, this week and this month (local time), in all and in
/// each scope the `[budget]` limits count, and replaces the spend file with it (private,
/// written whole). The configuration is read afresh each time, so a limit just added is
/// counted at the next write; its problems are `status`'s and `config check`'s to report.
/// Then gives the budget notices now due (`[budget] notify`); the problems of those, each a
/// sentence, are returned.
pub fn write_spend(
    paths: &Paths,
    store: &store::Store,
    wait: super::budget_notice::Wait,
) -> anyhow::Result<Vec<String>> {
    let now = crate::support::clock::now_ms();
    let conn = store.conn()?;
    let budget = Config::load_for(paths).0.budget;
    let starts = crate::model::spend::window_starts(now);
    let file = store::spend::spend_file(&conn, now, starts, &budget.scopes())?;
    crate::files::spend::write(&paths.spend_file(), &file)?;

    // The budget warnings' marks of windows that have ended (the oldest window still running
    // starts on the 1st or on this week's Monday, whichever is earlier). A mark left behind
    // costs an empty file and changes nothing: a failure here is not worth a warning.
    let oldest =
        std::time::UNIX_EPOCH + Duration::from_millis(starts.1.min(starts.2).max(0) as u64);
    let _ = crate::files::budget_marks::remove_ended(&paths.state_dir(), oldest);
    Ok(super::budget_notice::notify_crossings(
        &budget,
        &file,
        now,
        &paths.state_dir(),
        wait,
    ))
}

/// How often a following ingest whose check runner could not start looks again.
const CHECKS_RETRY: Duration = Duration::from_secs(2);

/// Starts the check runner once the runner that held the queue's jobs when the ingest
/// started (a detached `cmstore check run`) is gone; until then the hooks start their own. A
/// start that then fails for another reason is said once and not tried again. (A start that
/// failed so at the ingest's start was said then, and makes no chore.)
pub fn checks_chore<'a>(
    paths: &'a Paths,
    checks: &'a mut Option<crate::hook::checks::runner::Runner>,
    say: Say,
) -> Chore<'a> {
    let mut given_up = false;
    Chore::new(
        CHECKS_RETRY,
        CHECKS_RETRY,
        move |_: &mut Ingester, _: &Progress| {
            if given_up || checks.is_some() {
                return;
            }
            let warn = move |w| say(&format!("cmstore ingest: {w}"));
            match crate::hook::checks::runner::once_free(paths, warn) {
                Ok(Some(runner)) => {
                    say("cmstore ingest: the check runner started (the other one is gone)");
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

/// Backlogs up to this size are counted in lines for the start line and the heartbeat;
/// beyond it, in bytes (counting lines would read it all once more).
const COUNT_LINES_UP_TO: u64 = 64 * 1024 * 1024;

/// Follow mode's first line: what it reads, where it writes, how far behind it starts, how it
/// is woken and what retention it applies.
pub fn start_line(
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
        retention_text(&Policy::of(&config))
    )
}

/// The retention policy in a few words.
fn retention_text(policy: &Policy) -> String {
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
fn behind_text(behind: &super::Behind) -> String {
    match behind.lines {
        Some(1) => "1 line behind".to_string(),
        Some(n) => format!("{n} lines behind"),
        None => format!("{:.1} MiB behind", behind.bytes as f64 / (1024.0 * 1024.0)),
    }
}

/// A duration as every command prints one (`500ms`, `10s`, `15m 00s`).
fn human_duration(d: Duration) -> String {
    crate::support::human::duration(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Applies the configured retention at start (after the first pass) and every `every_ms`:
/// the configuration is read each time, so a `retention_days` set or changed later applies
/// from the next run. Without an explicit `retention_days` nothing is deleted.
pub fn retention_chore<'a>(paths: &'a Paths, every_ms: u64, say: Say) -> Chore<'a> {
    // The first run compacts whatever it deletes; later ones when they delete something, or
    // when the last compaction did not happen.
    let mut compact_anyway = true;
    Chore::new(
        Duration::ZERO,
        Duration::from_millis(every_ms),
        move |ingester: &mut Ingester, _: &Progress| {
            let (config, _) = Config::load_for(paths);
            let policy = Policy::of(&config);
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
                    say(&retention_line(&policy, &run));
                }
                Err(err) => say(&format!(
                    "cmstore ingest: warning: automatic retention failed ({err:#}); \
                     the next run tries again"
                )),
            }
        },
    )
}

/// What an automatic retention run did, in one line.
fn retention_line(policy: &Policy, run: &Run) -> String {
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
pub fn heartbeat_chore<'a>(every: Duration, say: Say) -> Chore<'a> {
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
            say(&heartbeat_line(&last, now, every * quiet.max(1), &behind));
            last = *now;
        },
    )
}

/// Heartbeats skipped while idle before one says so.
pub const IDLE_HEARTBEATS: u32 = 15;

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
pub fn rate(lines: u64, busy: Duration) -> String {
    let secs = busy.as_secs_f64();
    match secs > 0.0 {
        true => format!("{:.0}", lines as f64 / secs),
        false => "-".to_string(),
    }
}

/// The configuration's problems, warned about when they are new.
pub struct ConfigWatch<'a> {
    paths: &'a Paths,
    /// Where its warnings go.
    say: Say,
    /// The file as it was at the last look: `None` before the first, or when it is absent.
    stamp: Option<Option<(u64, Option<SystemTime>)>>,
    /// The problems already warned about.
    reported: Vec<String>,
    /// The store whose price table follows the file's `[prices]`.
    store: store::Store,
    /// The file's `[prices]` as last loaded, and when the store's table was last brought in
    /// line with them: again every [`PRICES_EVERY`], for the models new usage names.
    prices: (crate::model::prices::PriceTable, Option<std::time::Instant>),
}

/// How often a running ingest gives the models new usage names their price rows (a model
/// first seen is unpriced until then, or until the next `summarize`).
pub const PRICES_EVERY: Duration = Duration::from_secs(60);

impl<'a> ConfigWatch<'a> {
    /// Watches `paths`' configuration for `store`, warning through `say`.
    pub fn new(paths: &'a Paths, store: store::Store, say: Say) -> ConfigWatch<'a> {
        ConfigWatch {
            paths,
            say,
            stamp: None,
            reported: Vec::new(),
            store,
            prices: Default::default(),
        }
    }

    /// Loads the configuration when the file changed (one `stat` otherwise), brings the
    /// store's price table in line with it, and warns about each problem not warned about yet; says so once when the last one is gone. The
    /// environment cannot change under a running process: only the file is looked at.
    pub fn check(&mut self) {
        let stamp = std::fs::metadata(&self.paths.config)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        if self.stamp == Some(stamp) {
            if self.prices.1.is_some_and(|at| at.elapsed() >= PRICES_EVERY) {
                self.sync_prices();
            }
            return;
        }
        self.stamp = Some(stamp);
        let (config, problems) = Config::load_for(self.paths);
        self.prices.0 = config.prices;
        self.sync_prices();
        let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
        for problem in problems.iter().filter(|p| !self.reported.contains(p)) {
            (self.say)(&format!(
                "cmstore ingest: warning: configuration problem (capture uses the default \
                 for it): {problem}"
            ));
        }
        if problems.is_empty() && !self.reported.is_empty() {
            (self.say)("cmstore ingest: the configuration problems are gone");
        }
        self.reported = problems;
    }

    /// Cost is computed from the store's price table when read: a changed price applies from
    /// the next summary on, to all of history, and a model first seen gets its row.
    fn sync_prices(&mut self) {
        self.prices.1 = Some(std::time::Instant::now());
        if let Err(err) = store::usage::sync_store_prices(&self.store, &self.prices.0) {
            (self.say)(&format!(
                "cmstore ingest: warning: cannot update the price table: {err}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Stats;
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
    fn heartbeats_say_what_happened_since_the_last_one() {
        let busy = heartbeat_line(
            &progress(100, 1000),
            &progress(1100, 1500),
            Duration::from_secs(60),
            "0 lines behind",
        );
        assert_eq!(
            busy,
            "cmstore ingest: 1000 lines in the last 1m 00s (1000 rows, 0 duplicates, 0 rejects), \
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
            "cmstore ingest: idle for 15m 00s; 1100 lines since start; 0 lines behind"
        );
    }
}
