//! What `cmstore status` says, gathered: the sources and how far behind each is, whether an
//! ingest runs, the store's totals and size, the retention policy and its last run, the
//! configuration's problems. Read-only: it never creates the database nor any other file.
//! `cmd/status.rs` prints it.

use std::path::Path;

use rusqlite::types::Value;
use serde_json::json;

use crate::config::retention::Policy;
use crate::config::Config;
use crate::files::identity::FileId;
use crate::files::ingest_lock::{self, Holder, Liveness};
use crate::files::paths::Paths;
use crate::read::report;
use crate::store::read_only::ReadOnlyDb;
use crate::store::retention;
use crate::support::clock;

mod history;

/// What `cmstore status` reports, gathered in one look that writes nothing.
pub struct Status {
    /// The database exists (status never creates it).
    pub db_exists: bool,
    /// The database's and its WAL's size in bytes, when they exist.
    pub files: (Option<i64>, Option<i64>),
    /// The active sources, each compared with the file its path names now.
    pub sources: Section,
    /// Totals of events, sessions, rejects and unknowns; `None` without a database.
    pub totals: Option<Section>,
    /// Whether an ingest runs, which, and how far behind it is.
    pub ingest: IngestReport,
    /// The retention policy and its last automatic run.
    pub retention: RetentionReport,
    /// Where each `[budget]` limit stands (readable rows and raw rows, as `cmstore budget`
    /// has them), and its summary; `None` when no limit is set.
    pub budget: Option<BudgetReport>,
    /// Per team store (`cmstore push`): what it holds and what it lacks, its last commit and
    /// its last failure; `None` when nothing was pushed and `[push]` is not set.
    pub push: Option<Section>,
    /// The agents' history: Claude Code's transcripts its own cleanup will delete that the
    /// store does not hold, and what the hooks missed lately (docs/usage.md); `None` when
    /// there is nothing to say of either.
    pub history: Option<Section>,
    /// The configuration's problems, as `config check` says them.
    pub problems: Vec<String>,
}

/// What status says of the budget.
pub struct BudgetReport {
    /// A field per limit, and the mode: one row ([`super::budget::fields`]).
    pub readable: Section,
    /// `cmstore budget`'s raw rows, for `--format json`.
    pub raw: Section,
}

/// Gathers [`Status`]: the configuration, the ingest lock, and the store read in one snapshot
/// (the sources' offsets and the totals agree while an ingest writes).
pub fn gather(paths: &Paths) -> anyhow::Result<Status> {
    let (config, problems) = Config::load_for(paths);
    let policy = Policy::of(&config);
    let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
    // Before the sources: a source is followed only while an ingest runs.
    let liveness = ingest_lock::probe(&paths.db).map_err(|err| {
        format!(
            "cannot tell whether an ingest runs ({}: {err})",
            ingest_lock::lock_path(&paths.db).display()
        )
    });
    let db_exists = paths.db.exists();
    let configured = config.push.as_ref().and_then(|p| {
        let settings = super::push::server::settings(p.url.as_deref(), &crate::support::env::value);
        settings.ok().map(|s| super::push::server::destination(&s))
    });
    let claude = crate::files::transcript::DiscoveryEnv::from_env().claude_dir();
    let (sources, totals, last_run, push, history) = if db_exists {
        let db = ReadOnlyDb::open(&paths.db, None)?;
        db.in_one_snapshot(|db| -> anyhow::Result<_> {
            Ok((
                sources(db, &liveness)?,
                Some(report::fetch(db, &totals_sql(db)?, &[])?),
                last_retention_run(db)?,
                push_report(db, configured.as_deref())?,
                history::report(Some(db), claude.as_deref(), clock::now_ms())?,
            ))
        })?
    } else {
        let history = history::report(None, claude.as_deref(), clock::now_ms())?;
        (queue_only(&paths.queue), None, None, None, history)
    };
    let ingest = IngestReport::new(&liveness, &sources);
    let budget = budget_report(paths, &config.budget, db_exists)?;
    Ok(Status {
        db_exists,
        files: file_sizes(&paths.db),
        sources,
        totals,
        ingest,
        retention: RetentionReport { policy, last_run },
        budget,
        push,
        history,
        problems,
    })
}

/// Each team store's cursor: the events it holds and still lacks, its last commit, its last
/// failure; the configured one too before its first push. `None` when there is neither, or
/// the store predates the push (migration 0032).
fn push_report(db: &ReadOnlyDb, configured: Option<&str>) -> anyhow::Result<Option<Section>> {
    let table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'push_cursors'";
    if report::fetch(db, table, &[])?.1.is_empty() {
        return Ok(None);
    }
    let sql = "
        WITH c AS (SELECT destination, seq, events, updated_at, last_error, last_error_at
                   FROM push_cursors
                   UNION ALL
                   SELECT $dest, 0, 0, NULL, NULL, NULL WHERE $dest IS NOT NULL
                     AND $dest NOT IN (SELECT destination FROM push_cursors))
        SELECT destination, events AS pushed,
               (SELECT count(*) FROM events WHERE seq > c.seq) AS backlog,
               strftime('%Y-%m-%dT%H:%M:%SZ', updated_at / 1000, 'unixepoch') AS last_push,
               last_error,
               strftime('%Y-%m-%dT%H:%M:%SZ', last_error_at / 1000, 'unixepoch') AS last_error_at
        FROM c ORDER BY destination";
    let param = crate::store::read_only::Param {
        name: "dest".to_string(),
        value: configured.map_or(Value::Null, |d| Value::Text(d.to_string())),
    };
    let section = report::fetch(db, sql, &[param])?;
    Ok(Some(section).filter(|(_, rows)| !rows.is_empty()))
}

/// [`BudgetReport`] for the limits of `budget`, counted from the store when it exists (else
/// from the spend file alone); `None` without a limit, or with nothing to count from.
fn budget_report(
    paths: &Paths,
    budget: &crate::model::budget::Budget,
    db_exists: bool,
) -> anyhow::Result<Option<BudgetReport>> {
    if budget.is_empty() {
        return Ok(None);
    }
    let now = crate::support::clock::now_ms();
    let hooks = crate::files::spend::read(&paths.spend_file()).ok();
    let counted = match db_exists {
        true => Some(super::budget::spend_now(&paths.db, budget, now)?),
        false => hooks.clone(),
    };
    let Some(counted) = counted else {
        return Ok(None);
    };
    let columns = super::budget::columns(false);
    let (fields, row) = super::budget::fields(budget, &counted, now);
    Ok(Some(BudgetReport {
        readable: (fields, vec![row]),
        raw: (
            columns,
            super::budget::rows(budget, &counted, hooks.as_ref(), now, false),
        ),
    }))
}

/// One result set: column names and rows.
pub type Section = (Vec<String>, Vec<Vec<Value>>);

/// How long a running ingest took to commit what `queue` held when asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatchUp {
    /// Every line then in the queue was in the store after this long.
    Reached(std::time::Duration),
    /// Still `left` bytes short when the time was up, having taken in `moved` meanwhile (a
    /// large backlog, when not 0).
    Behind { left: u64, moved: u64 },
}

/// Waits, at most `limit`, until the ingest following `queue` into `db` has committed every
/// complete line the queue holds now (its source's offset, read read-only): whether what the
/// hooks write reaches the store, without writing anything to see.
pub fn catch_up(db: &Path, queue: &Path, limit: std::time::Duration) -> anyhow::Result<CatchUp> {
    let started = std::time::Instant::now();
    let target = complete_lines_end(queue)?;
    let now = std::fs::metadata(queue).ok();
    let file = now.as_ref().map(FileId::of).unwrap_or_default();
    let size = now.map_or(0, |m| m.len());
    // An ingest just started may not have made its store yet: nothing committed till then.
    // Opened once there (a read-only connection holds back no writer).
    let mut store: Option<ReadOnlyDb> = None;
    let mut committed_now = || -> anyhow::Result<u64> {
        if store.is_none() && db.exists() {
            store = Some(ReadOnlyDb::open(db, None)?);
        }
        let Some(store) = &store else { return Ok(0) };
        // The offset of another file at the queue's path (replaced, or cut shorter, since), which
        // ingest has not noticed yet, is none of this file's.
        Ok(match committed_offset(store, queue)? {
            Some((_, of)) if file.is_known() && of.is_known() && of != file => 0,
            Some((offset, _)) if offset > size => 0,
            Some((offset, _)) => offset,
            None => 0,
        })
    };
    let first = committed_now()?;
    loop {
        let committed = committed_now()?;
        if committed >= target {
            return Ok(CatchUp::Reached(started.elapsed()));
        }
        if started.elapsed() >= limit {
            return Ok(CatchUp::Behind {
                left: target - committed,
                moved: committed.saturating_sub(first),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The bytes `db`'s ingest has committed of `queue`: its active source's offset (the source
/// is named by the queue's absolute path, as ingest names it), and the file it was of.
fn committed_offset(db: &ReadOnlyDb, queue: &Path) -> anyhow::Result<Option<(u64, FileId)>> {
    let has_sources = !report::fetch(
        db,
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sources'",
        &[],
    )?
    .1
    .is_empty();
    if !has_sources {
        return Ok(None);
    }
    let path = std::path::absolute(queue)
        .unwrap_or_else(|_| queue.to_path_buf())
        .display()
        .to_string();
    let (_, rows) = report::fetch(
        db,
        "SELECT offset, device, inode FROM sources WHERE path = :path AND retired_at IS NULL",
        &[crate::store::read_only::Param {
            name: "path".to_string(),
            value: Value::Text(path),
        }],
    )?;
    let int = |v: Option<&Value>| match v {
        Some(Value::Integer(n)) => Some(*n),
        _ => None,
    };
    Ok(rows.first().and_then(|row| {
        let offset = u64::try_from(int(row.first())?).ok()?;
        let of = FileId {
            device: int(row.get(1)),
            inode: int(row.get(2)),
        };
        Some((offset, of))
    }))
}

/// Where `queue`'s last complete line ends (0 when it has none, or is missing).
fn complete_lines_end(queue: &Path) -> std::io::Result<u64> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = match std::fs::File::open(queue) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(err) => return Err(err),
    };
    let mut end = file.metadata()?.len();
    let mut chunk = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let len = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk[..len])?;
        if let Some(i) = memchr::memrchr(b'\n', &chunk[..len]) {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

const SOURCES_SQL: &str = "SELECT id, path, offset, size, lines, device, inode, fingerprint, \
     strftime('%Y-%m-%dT%H:%M:%SZ', updated_at / 1000, 'unixepoch') AS last_commit \
     FROM sources WHERE retired_at IS NULL ORDER BY path";

const TOTALS_SQL: &str = "SELECT (SELECT count(*) FROM events) AS events, \
     (SELECT count(*) FROM sessions) AS sessions, \
     (SELECT count(*) FROM rejects) AS rejects, \
     (SELECT coalesce(sum(count), 0) FROM unknown_counts) AS unknowns, \
     (SELECT count(*) FROM sources WHERE retired_at IS NOT NULL) AS retired_sources, \
     (SELECT strftime('%Y-%m-%dT%H:%M:%SZ', min(ts) / 1000, 'unixepoch') FROM events) AS oldest, \
     (SELECT strftime('%Y-%m-%dT%H:%M:%SZ', max(ts) / 1000, 'unixepoch') FROM events) AS newest";

/// [`TOTALS_SQL`] plus how many secondary indexes are set aside right now (a bulk load in
/// progress, or one that died: the next ingest rebuilds them). A database that ingest has not
/// upgraded yet has no `deferred_indexes` table: none then.
fn totals_sql(db: &ReadOnlyDb) -> anyhow::Result<String> {
    let has_table = !report::fetch(
        db,
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'deferred_indexes'",
        &[],
    )?
    .1
    .is_empty();
    let set_aside = if has_table {
        "(SELECT count(*) FROM deferred_indexes)"
    } else {
        "0"
    };
    Ok(format!("{TOTALS_SQL}, {set_aside} AS indexes_set_aside"))
}

/// The last automatic retention run recorded in `meta` (none in a database from before it).
fn last_retention_run(db: &ReadOnlyDb) -> anyhow::Result<Option<retention::Run>> {
    let has_meta = !report::fetch(
        db,
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
        &[],
    )?
    .1
    .is_empty();
    if !has_meta {
        return Ok(None);
    }
    let (_, rows) = report::fetch(
        db,
        "SELECT key, value FROM meta WHERE key LIKE 'auto_retention_%'",
        &[],
    )?;
    let pairs = rows.into_iter().filter_map(|row| match (&row[0], &row[1]) {
        (Value::Text(key), Value::Integer(value)) => Some((key.clone(), *value)),
        _ => None,
    });
    Ok(retention::last_run(pairs))
}

/// What status says about retention: the policy, and the last automatic run.
pub struct RetentionReport {
    /// What the configuration asks.
    pub policy: Policy,
    /// The last automatic run, when one was recorded.
    pub last_run: Option<retention::Run>,
}

impl RetentionReport {
    /// One short sentence for a person.
    pub fn note(&self) -> String {
        match (self.policy.automatic, &self.last_run) {
            (false, None) => "off: retention_days is not set".into(),
            (false, Some(_)) => "off: retention_days is no longer set".into(),
            (true, None) => "by ingest, hourly; not run yet".into(),
            (true, Some(_)) => "by ingest, hourly".into(),
        }
    }

    /// Its part of `--format json`.
    pub fn to_json(&self) -> serde_json::Value {
        let run = self.last_run.as_ref();
        json!({
            "days": self.policy.days,
            "automatic": self.policy.automatic,
            "compact_queue": self.policy.compact_queue,
            "last_run": run.and_then(|r| iso(r.at_ms)),
            "last_cutoff": run.and_then(|r| iso(r.cutoff_ms)),
            "last_removed_rows": run.map(|r| r.rows),
            "last_removed_events": run.map(|r| r.events),
            "last_removed_cursors": run.map(|r| r.cursors),
            "last_removed_queue_lines": run.map(|r| r.queue_lines),
            "last_run_ms": run.map(|r| r.took.as_millis() as u64),
            "note": self.note(),
        })
    }

    /// Its row of the readable and the long forms.
    pub fn to_row(&self) -> (Vec<String>, Vec<Value>) {
        // Short names, and the cutoff and the events only in `--format json`: a narrow table.
        let columns = [
            "days",
            "auto",
            "compact",
            "last_run",
            "removed",
            "queue_removed",
            "note",
        ]
        .map(String::from)
        .to_vec();
        let yes_no = |b: bool| Value::Text(if b { "yes" } else { "no" }.into());
        let run = self.last_run.as_ref();
        let int = |n: Option<u64>| n.map_or(Value::Null, |n| Value::Integer(n as i64));
        let row = vec![
            Value::Integer(i64::from(self.policy.days)),
            yes_no(self.policy.automatic),
            yes_no(self.policy.compact_queue),
            run.and_then(|r| iso(r.at_ms))
                .map_or(Value::Null, Value::Text),
            int(run.map(|r| r.rows)),
            int(run.map(|r| r.queue_lines)),
            Value::Text(self.note()),
        ];
        (columns, row)
    }
}

/// What status says about ingest: whether one runs, which, and how far behind it is.
pub struct IngestReport {
    /// Whether the ingest lock is held, or why that cannot be told.
    liveness: Result<Liveness, String>,
    /// The newest commit of any active source (ISO 8601).
    last_commit: Option<String>,
    /// Complete lines not ingested yet, over every source.
    lines_behind: Option<i64>,
}

/// The state of a source that an ingest reads.
const FOLLOWING: &str = "following";

/// The state of a source that nothing reads.
const NOT_FOLLOWED: &str = "not followed: no ingest running";

impl IngestReport {
    fn new(liveness: &Result<Liveness, String>, (columns, rows): &Section) -> IngestReport {
        let col = |name: &str| columns.iter().position(|c| c == name);
        let last_commit = col("last_commit").and_then(|c| {
            rows.iter()
                .filter_map(|row| match &row[c] {
                    Value::Text(t) => Some(t.clone()),
                    _ => None,
                })
                .max()
        });
        let lines_behind = col("lines_behind").and_then(|c| {
            rows.iter()
                .map(|row| match row[c] {
                    Value::Integer(n) => Some(n),
                    _ => None,
                })
                .sum::<Option<i64>>()
        });
        IngestReport {
            liveness: liveness.clone(),
            last_commit,
            lines_behind,
        }
    }

    /// The holder of the lock, when it runs; a holder file left by one that died, when not.
    fn holders(&self) -> (Option<&Holder>, Option<&Holder>) {
        match &self.liveness {
            Ok(l) if l.running => (l.holder.as_ref(), None),
            Ok(l) => (None, l.holder.as_ref()),
            Err(_) => (None, None),
        }
    }

    /// One sentence for a person.
    pub fn note(&self) -> String {
        let (_, stale) = self.holders();
        match &self.liveness {
            Err(why) => why.clone(),
            Ok(l) if l.running && l.holder.is_none() => {
                "the ingest lock is held, by a process that did not say which".into()
            }
            Ok(Liveness {
                running: true,
                holder: Some(h),
            }) if h.schema.unwrap_or(0) < crate::store::MIGRATIONS.len() as i64 => format!(
                "the running ingest (pid {}) is of an older cmstore than this one: restart it \
                 (until then what it writes of usage is not chained, and `verify` names it)",
                h.pid
            ),
            Ok(l) if l.running => String::new(),
            Ok(_) => match stale {
                None => "no ingest running: `cmstore ingest` follows the queue".into(),
                Some(h) => format!(
                    "no ingest running; stale pid file: pid {} (started {}) ended without \
                     removing it",
                    h.pid,
                    crate::support::human::moment(h.started_ms)
                ),
            },
        }
    }

    /// Its part of `--format json`.
    pub fn to_json(&self, lock: &Path) -> serde_json::Value {
        let (holder, stale) = self.holders();
        json!({
            "running": self.liveness.as_ref().ok().map(|l| l.running),
            "pid": holder.map(|h| h.pid),
            "command": holder.map(|h| h.command.clone()),
            "started": holder.and_then(|h| iso(h.started_ms)),
            "queue": holder.map(|h| h.queue.clone()),
            "last_commit": self.last_commit,
            "lines_behind": self.lines_behind,
            "stale_pid": stale.map(|h| h.pid),
            "lock": lock.display().to_string(),
            "note": self.note(),
        })
    }

    /// Its row of the readable and the long forms.
    pub fn to_row(&self) -> (Vec<String>, Vec<Value>) {
        let (holder, _) = self.holders();
        let text = |t: Option<String>| t.map_or(Value::Null, Value::Text);
        let columns = [
            "running",
            "pid",
            "command",
            "started",
            "last_commit",
            "lines_behind",
            "note",
        ]
        .map(String::from)
        .to_vec();
        let running = match &self.liveness {
            Ok(l) if l.running => Some("yes".to_string()),
            Ok(_) => Some("no".to_string()),
            Err(_) => None,
        };
        let row = vec![
            text(running),
            holder.map_or(Value::Null, |h| Value::Integer(i64::from(h.pid))),
            text(holder.map(|h| h.command.clone())),
            text(holder.and_then(|h| iso(h.started_ms))),
            text(self.last_commit.clone()),
            self.lines_behind.map_or(Value::Null, Value::Integer),
            Value::Text(self.note()),
        ];
        (columns, row)
    }
}

/// Epoch milliseconds as UTC ISO 8601 to the second, as the SQL of this report prints times.
fn iso(ms: i64) -> Option<String> {
    chrono::DateTime::from_timestamp_millis(ms).map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
}

/// Columns of the sources section.
fn source_columns() -> Vec<String> {
    [
        "path",
        "offset",
        "size",
        "bytes_behind",
        "lines_behind",
        "lines",
        "last_commit",
        "identity",
        "state",
    ]
    .map(String::from)
    .to_vec()
}

/// Complete lines in `path` between `from` and `to` (a half-written last line is not one
/// yet), or `None` when the file cannot be read.
fn lines_between(path: &Path, from: u64, to: u64) -> Option<i64> {
    let lines = crate::files::tail::count_lines(path, from, to.saturating_sub(from)).ok()?;
    i64::try_from(lines).ok()
}

/// The active sources, each compared with the file its path names now and with what the
/// running ingest (if any) reads.
fn sources(db: &ReadOnlyDb, liveness: &Result<Liveness, String>) -> anyhow::Result<Section> {
    let (columns, rows) = report::fetch(db, SOURCES_SQL, &[])?;
    let col = |name: &str| columns.iter().position(|c| c == name).unwrap_or(0);
    let int = |v: &Value| match v {
        Value::Integer(i) => Some(*i),
        _ => None,
    };
    let mut out = Vec::new();
    for row in rows {
        let path = match &row[col("path")] {
            Value::Text(t) => t.clone(),
            _ => String::new(),
        };
        let offset = int(&row[col("offset")]).unwrap_or(0);
        let stored = FileId {
            device: int(&row[col("device")]),
            inode: int(&row[col("inode")]),
        };
        // Which source the running ingest reads: the one its holder file names (an ingest
        // that did not say reads one of them: each is taken as followed).
        let state_in_place = match liveness {
            Ok(l) if l.running => match &l.holder {
                Some(h) if h.queue != path => {
                    format!("not followed: the running ingest reads {}", h.queue)
                }
                _ => FOLLOWING.to_string(),
            },
            Ok(_) => NOT_FOLLOWED.to_string(),
            Err(why) => format!("unknown: {why}"),
        };
        let (size, in_place, state) = match std::fs::metadata(&path) {
            Ok(meta) => {
                let now = FileId::of(&meta);
                let len = meta.len() as i64;
                if stored.is_known() && now.is_known() && now != stored {
                    (
                        Some(len),
                        false,
                        "replaced: read from 0 on the next pass".into(),
                    )
                } else if len < offset {
                    (
                        Some(len),
                        false,
                        "truncated: read from 0 on the next pass".into(),
                    )
                } else {
                    (Some(len), true, state_in_place)
                }
            }
            Err(_) => (None, false, "missing".to_string()),
        };
        let from = if in_place { offset } else { 0 };
        let behind = size.map(|len| len - from);
        let lines_behind =
            size.and_then(|len| lines_between(Path::new(&path), from as u64, len as u64));
        let fingerprint = match &row[col("fingerprint")] {
            Value::Text(t) => t.chars().take(12).collect::<String>(),
            _ => "-".into(),
        };
        let identity = match (stored.device, stored.inode) {
            (Some(d), Some(i)) => format!("dev {d} ino {i} fp {fingerprint}"),
            _ => format!("fp {fingerprint}"),
        };
        out.push(vec![
            Value::Text(path),
            Value::Integer(offset),
            size.map_or(Value::Null, Value::Integer),
            behind.map_or(Value::Null, Value::Integer),
            lines_behind.map_or(Value::Null, Value::Integer),
            row[col("lines")].clone(),
            row[col("last_commit")].clone(),
            Value::Text(identity),
            Value::Text(state),
        ]);
    }
    Ok((source_columns(), out))
}

/// Without a database: the queue file alone, wholly behind.
fn queue_only(queue: &Path) -> Section {
    let rows = match std::fs::metadata(queue) {
        Ok(meta) => vec![vec![
            Value::Text(queue.display().to_string()),
            Value::Integer(0),
            Value::Integer(meta.len() as i64),
            Value::Integer(meta.len() as i64),
            lines_between(queue, 0, meta.len()).map_or(Value::Null, Value::Integer),
            Value::Integer(0),
            Value::Null,
            Value::Null,
            Value::Text("not ingested yet".into()),
        ]],
        Err(_) => Vec::new(),
    };
    (source_columns(), rows)
}

/// Sizes of the database file and its WAL, when they exist.
fn file_sizes(db: &Path) -> (Option<i64>, Option<i64>) {
    let size = |p: &Path| std::fs::metadata(p).ok().map(|m| m.len() as i64);
    let mut wal = db.as_os_str().to_os_string();
    wal.push("-wal");
    (size(db), size(Path::new(&wal)))
}
