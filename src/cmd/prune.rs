//! `cmstore prune`: delete what is older than the retention, without stopping capture or ingest.
//!
//! The retention comes from `--days`, else `--before`, else the configuration
//! (`retention_days`, `CMSTORE_RETENTION_DAYS`; invalid or non-positive means 7, with a
//! warning). Rows go in short batches ([`crate::store::prune`]); `--compact-queue` also rewrites
//! the queue file ([`crate::write::prune::queue`]), beside a running `cmstore ingest` or not; it refuses
//! (exit 3) before changing anything only while another compaction of the queue runs.
//! `--dry-run` opens the database read-only and prints the same counts.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Context};

use crate::config::Config;
use crate::files::paths::Paths;
use crate::store::{self, prune as store_prune};
use crate::support::clock::now_ms;
use crate::support::failure::Refused;
use crate::support::{human, timespec};
use crate::write::ingest;
use crate::write::prune::queue as compact;

/// A day in milliseconds.
const DAY_MS: i64 = 86_400_000;

/// Arguments of `cmstore prune`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Keep this many days [default: retention_days from the config or CMSTORE_RETENTION_DAYS,
    /// else 7]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub days: Option<u32>,
    /// Delete what is older than this instead: a duration ago (36h, 2w; 0m or now for
    /// everything up to now), today, yesterday, or an ISO date/datetime (local time, UTC with
    /// --utc), not in the future
    #[arg(long, value_name = "WHEN", conflicts_with = "days")]
    pub before: Option<String>,
    /// Print what would be removed and change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Do not ask: a cutoff less than a day ago (it deletes the last day's records too) is
    /// asked about first when prune runs on a terminal
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Also rewrite the queue file without its ingested lines older than the cutoff (a
    /// running `cmstore ingest` keeps going; docs/prune.md)
    #[arg(long)]
    pub compact_queue: bool,
    /// Most rows deleted per transaction (batches shrink when one holds the write lock over
    /// 25 ms)
    #[arg(long, value_name = "N", default_value_t = store_prune::DEFAULT_BATCH_ROWS as u64,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub batch_rows: u64,
}

/// Runs `cmstore prune`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let (cutoff, why) = cutoff(paths, &args)?;
    // Before anything changes or is locked.
    if !args.dry_run && !args.yes && cutoff > now_ms() - DAY_MS && !confirmed(cutoff)? {
        eprintln!("cmstore prune: not confirmed; nothing deleted");
        return Ok(ExitCode::FAILURE);
    }
    // Before the transcript cursors go: a --db that is wrong stops prune before any change.
    store::not_a_directory(&paths.db)?;
    // Before anything changes: a second compaction of the queue refuses, and changes nothing.
    let _compaction_lock = match args.compact_queue && !args.dry_run {
        true => lock_compaction(paths)?,
        false => None,
    };
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "cmstore prune: cutoff {} (keeping {why}){}",
        human::moment(cutoff),
        if args.dry_run { "; dry run" } else { "" }
    )?;
    prune_cursors(&mut out, paths, cutoff, args.dry_run)?;
    if !paths.db.exists() {
        writeln!(
            out,
            "no database at {}; nothing to prune",
            paths.db.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.dry_run {
        dry_run(&mut out, paths, &args, cutoff)?;
        return Ok(ExitCode::SUCCESS);
    }

    let ingest_lock = match args.compact_queue {
        true => sole_ingester(paths)?,
        false => None,
    };
    let db_before = sizes(&paths.db);
    let store = store::open(&paths.db)
        .with_context(|| format!("cannot open database {}", paths.db.display()))?;
    if ingest_lock.is_some() {
        drain_queue(&store, paths)?;
    }
    let report = prune_rows(&store, paths, cutoff, args.batch_rows)?;
    let compaction = if args.compact_queue {
        let beside_ingest = ingest_lock.is_none();
        Some(
            compact::compact(&store, &paths.queue, cutoff, beside_ingest)
                .with_context(|| format!("cannot compact {}", paths.queue.display()))?,
        )
    } else {
        None
    };
    // The last connection removes the WAL; waited for here, not left to the process's exit.
    store.close();

    print_removed(
        &mut out,
        "removed",
        &report.removed,
        compaction
            .as_ref()
            .map(|c| (c.dropped_lines, c.dropped_bytes)),
    )?;
    print_lock_and_space(&mut out, &report, db_before, sizes(&paths.db))?;
    if let Some(compaction) = compaction {
        print_compaction(&mut out, &compaction)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether a person agrees to delete everything before `cutoff`, asked on the terminal; true
/// without one (a script or a service has chosen its cutoff, and `--yes` says so too).
fn confirmed(cutoff: i64) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(true);
    }
    eprint!(
        "cmstore prune: this deletes everything recorded before {}, the last day's records \
         included. Go on? [y/N] ",
        human::moment(cutoff)
    );
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .context("reading the answer")?;
    Ok(matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}

/// The cutoff (epoch ms) and how it was chosen: `--before`, else `--days`, else the
/// configured retention (whose problems are warned about). A cutoff after now or before 1970
/// is refused: the one would delete every event, the other none (docs/prune.md).
fn cutoff(paths: &Paths, args: &Args) -> anyhow::Result<(i64, String)> {
    let now = now_ms();
    let ago = |days: u32| now.checked_sub(i64::from(days) * DAY_MS);
    let (cutoff, given, why) = match (&args.before, args.days) {
        (Some(when), _) => (
            Some(timespec::parse_point(when, now).context("--before")?),
            format!("--before {when}"),
            format!("--before {when}"),
        ),
        (None, Some(days)) => (ago(days), format!("--days {days}"), format!("{days} days")),
        (None, None) => {
            // A --config that is not there never gets here (`Paths::check_given_config`):
            // prune deletes, and the default seven days may be far shorter than the file's.
            let (config, problems) = Config::load_for(paths);
            for p in problems
                .iter()
                .filter(|p| p.to_string().to_ascii_lowercase().contains("retention"))
            {
                eprintln!("cmstore prune: warning: {p}");
            }
            let days = config.retention_days;
            (
                ago(days),
                format!("retention_days = {days}"),
                format!("{days} days"),
            )
        }
    };
    match cutoff {
        Some(cutoff) if cutoff > now => bail!(
            "{given} is in the future ({}): every event is older than that; to delete \
             everything up to now, give --before 0m",
            human::moment(cutoff)
        ),
        Some(cutoff) if cutoff >= 0 => Ok((cutoff, why)),
        _ if args.before.is_some() => bail!("{given} is before 1970: no event is that old"),
        _ => bail!(
            "{given} reaches back before 1970: give at most {} days",
            now / DAY_MS
        ),
    }
}

/// Removes the transcript cursors of sessions idle since the cutoff, and says how many.
fn prune_cursors(
    out: &mut dyn Write,
    paths: &Paths,
    cutoff: i64,
    dry_run: bool,
) -> anyhow::Result<()> {
    let cutoff_time =
        std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(cutoff).unwrap_or(0));
    let cursors = crate::files::transcript::remove_stale(&paths.state_dir(), cutoff_time, dry_run)
        .with_context(|| format!("cannot prune {}", paths.state_dir().display()))?;
    writeln!(
        out,
        "transcript cursors of sessions idle since the cutoff: {cursors} {}",
        if dry_run {
            "would be removed"
        } else {
            "removed"
        }
    )?;
    Ok(())
}

/// `--dry-run`: counts what would go, on a read-only connection, and changes nothing.
fn dry_run(out: &mut dyn Write, paths: &Paths, args: &Args, cutoff: i64) -> anyhow::Result<()> {
    let conn = store::read_only::connection(&paths.db, store::BUSY_TIMEOUT)
        .with_context(|| format!("cannot open {}", paths.db.display()))?;
    let removed = store_prune::count(&conn, cutoff)
        .with_context(|| format!("cannot count old rows in {}", paths.db.display()))?;
    let queue = if args.compact_queue {
        Some(compact::count(&conn, &paths.queue, cutoff)?)
    } else {
        None
    };
    print_removed(out, "would remove", &removed, queue)?;
    writeln!(out, "dry run: nothing changed")?;
    Ok(())
}

/// The compaction lock of the queue ([`compact::lock`]); a refusal (exit 3) while another
/// `prune --compact-queue` holds it. `None` when the queue's directory is not there (nothing to
/// compact).
fn lock_compaction(paths: &Paths) -> anyhow::Result<Option<File>> {
    if !crate::files::paths::dir_of(&paths.queue).is_dir() {
        return Ok(None);
    }
    let lock = compact::lock_path(&paths.queue);
    match compact::lock(&paths.queue) {
        Ok(Some(file)) => Ok(Some(file)),
        Ok(None) => Err(Refused {
            why: anyhow::anyhow!(
                "another `cmstore prune --compact-queue` is compacting {} (lock {})",
                paths.queue.display(),
                lock.display()
            ),
            what: "nothing was changed",
        }
        .into()),
        Err(err) => Err(err).with_context(|| format!("cannot open {}", lock.display())),
    }
}

/// The ingest lock when no `cmstore ingest` holds it: prune is then the one ingester, and
/// drains the queue before compacting it. `None` while ingest runs: compaction goes on beside
/// it, the two coordinating through the queue lock ([`compact::compact`]).
fn sole_ingester(paths: &Paths) -> anyhow::Result<Option<ingest::IngestLock>> {
    match ingest::lock(&paths.db, &paths.queue) {
        Ok(lock) => Ok(Some(lock)),
        Err(ingest::Error::AlreadyRunning { .. }) => Ok(None),
        Err(err) => Err(err.into()),
    }
}

/// Ingests the whole queue: as the one ingester now, this puts the queue's old lines in the
/// store (and so in what is pruned from it) before they leave the queue. (Beside a running
/// ingest, lines it has not read yet stay in the queue, whatever their age, until a later run.)
fn drain_queue(store: &store::Store, paths: &Paths) -> anyhow::Result<()> {
    let mut ingester = ingest::Ingester::new(store.clone(), &paths.queue, Default::default());
    ingester.on_warning(|warning| eprintln!("cmstore prune: warning: {warning}"));
    ingester
        .pass(&AtomicBool::new(false), &mut |_| {})
        .with_context(|| {
            format!(
                "cannot ingest {} before compacting it",
                paths.queue.display()
            )
        })?;
    Ok(())
}

/// Deletes the rows older than the cutoff, in batches of `batch_rows`.
fn prune_rows(
    store: &store::Store,
    paths: &Paths,
    cutoff: i64,
    batch_rows: u64,
) -> anyhow::Result<store_prune::Report> {
    let mut conn = store.conn()?;
    store_prune::prune(
        &mut conn,
        cutoff,
        usize::try_from(batch_rows).unwrap_or(store_prune::DEFAULT_BATCH_ROWS),
        &mut |_| {},
    )
    .with_context(|| format!("cannot prune {}", paths.db.display()))
}

/// The longest write lock prune took, and the space before and after.
fn print_lock_and_space(
    out: &mut dyn Write,
    report: &store_prune::Report,
    db_before: (u64, u64),
    db_after: (u64, u64),
) -> std::io::Result<()> {
    writeln!(
        out,
        "longest write lock: {} over {} transaction(s){}",
        ms(report.longest_lock),
        report.batches,
        if report.batches > 0 {
            format!(" (a {} batch)", report.longest_what)
        } else {
            String::new()
        }
    )?;
    let space = match report.auto_vacuum {
        2 => format!(
            "{} page(s) returned by incremental vacuum",
            report.vacuumed_pages
        ),
        // auto_vacuum can only change with a full VACUUM, which would lock the store for as
        // long as it copies it: freed pages are reused by later inserts instead.
        _ => "freed pages are reused (the database predates incremental auto-vacuum; \
              an offline `sqlite3 DB 'PRAGMA auto_vacuum=INCREMENTAL; VACUUM'` shrinks it)"
            .to_string(),
    };
    writeln!(
        out,
        "space: database {} -> {}, WAL {} -> {}{}; {space}",
        bytes(db_before.0),
        bytes(db_after.0),
        bytes(db_before.1),
        bytes(db_after.1),
        if report.checkpoint_busy {
            " (a reader kept the WAL checkpoint from finishing)"
        } else {
            ""
        }
    )
}

/// What `--compact-queue` did to the queue and to the extension's place in it.
fn print_compaction(out: &mut dyn Write, c: &compact::Compaction) -> std::io::Result<()> {
    writeln!(
        out,
        "queue: {} line(s) kept, {} bytes carried over unread, now {}; lock held {}",
        c.kept_lines,
        c.tail_bytes,
        bytes(c.new_size),
        ms(c.lock_held)
    )?;
    if let Some((old, new)) = c.extension_offset {
        writeln!(
            out,
            "ContextManager's place in the queue ({}): byte {old} -> {new}",
            compact::EXTENSION_OFFSET_FILE
        )?;
    }
    if let Some(why) = &c.extension_offset_error {
        eprintln!("cmstore prune: warning: {why}; the extension may skip or repeat lines");
    }
    Ok(())
}

fn print_removed(
    out: &mut dyn Write,
    verb: &str,
    removed: &store_prune::Removed,
    queue: Option<(u64, u64)>,
) -> std::io::Result<()> {
    writeln!(out, "{verb}:")?;
    for (table, n) in &removed.tables {
        writeln!(out, "  {table:<16} {n}")?;
    }
    if let Some((lines, b)) = queue {
        writeln!(out, "  {:<16} {lines} ({})", "queue lines", bytes(b))?;
    }
    Ok(())
}

fn sizes(db: &Path) -> (u64, u64) {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mut wal = db.as_os_str().to_os_string();
    wal.push("-wal");
    (size(db), size(Path::new(&wal)))
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}
