//! The SQLite store: opening (pool, pragmas, embedded migrations) and the ingest batch writer.
//!
//! Every connection gets the same pragmas from the pool's init hook; the schema is brought up to
//! date once per [`open`]. The store never imports the queue: ingest hands it parsed rows.

/// Binds each value to the next parameter of a prepared statement, then runs it; evaluates to
/// the `rusqlite::Result` of `raw_execute` (an `InvalidParameterCount` error, as `execute`
/// gives, when the values do not match the parameters), so `?` applies. For the statements run
/// once per line: `execute(params![…])` binds through `&dyn ToSql`, one indirect call and a
/// result conversion per value, which was a tenth of a bulk load's writer time.
macro_rules! execute_bound {
    ($stmt:expr; $($value:expr),+ $(,)?) => {{
        let stmt: &mut rusqlite::Statement<'_> = $stmt;
        let count = stmt.parameter_count();
        let mut index = 0_usize;
        $(
            index += 1;
            if index <= count {
                stmt.raw_bind_parameter(index, $value)?;
            }
        )+
        if index == count {
            stmt.raw_execute()
        } else {
            Err(rusqlite::Error::InvalidParameterCount(index, count))
        }
    }};
}

pub mod agent_totals;
pub mod chain;
pub mod checkpoint;
mod closing;
pub mod continued_turn;
pub mod functions;
pub mod imported_turns;
pub mod indexes;
pub mod many_rows;
pub mod prune;
pub mod read_only;
pub mod retention;
pub mod spend;
mod tool_calls;
pub mod usage;
pub mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;

use crate::files::paths::{create_private_dir, dir_of, private_file_options};
use closing::OpenConnections;

pub use write::{Batch, SourceRow};

/// A pool of connections to one database file.
pub type Pool = r2d2::Pool<SqliteConnectionManager>;

/// A pooled connection.
pub type PooledConnection = r2d2::PooledConnection<SqliteConnectionManager>;

/// WAL bytes after which a committing connection checkpoints, unless a
/// [`checkpoint::Checkpointer`] does it in the background (set in pages: 4,096 of 16 KiB, or
/// 16,384 of 4 KiB in a database created by an earlier cmstore).
pub const AUTOCHECKPOINT_BYTES: i64 = 64 * 1024 * 1024;

/// How large a connection lets the WAL grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalLimits {
    /// A commit that leaves more WAL than this checkpoints (`wal_autocheckpoint`): the
    /// backstop behind the background [`checkpoint::Checkpointer`].
    pub autocheckpoint_bytes: i64,
    /// A WAL that starts over is cut back to this size (`journal_size_limit`).
    pub keep_bytes: i64,
    /// Once the WAL holds this much, the writer lets the background checkpoint catch up so
    /// that it starts over ([`checkpoint::Checkpointer::before_batch`]).
    pub restart_bytes: i64,
}

/// Every connection's limits.
pub const WAL_LIMITS: WalLimits = WalLimits {
    autocheckpoint_bytes: AUTOCHECKPOINT_BYTES,
    keep_bytes: 64 * 1024 * 1024,
    restart_bytes: checkpoint::RESET_WAL_BYTES,
};

/// The writer's limits while it loads a large backlog: the WAL starts over only every
/// [`checkpoint::BULK_RESET_WAL_BYTES`], which needs room above that. Kept at its size, the file
/// is rewritten where its pages are already cached and allocated: cut back to 64 MiB at every
/// restart, growing it again made commits ~20% slower.
pub const BULK_WAL_LIMITS: WalLimits = WalLimits {
    autocheckpoint_bytes: 256 * 1024 * 1024,
    keep_bytes: 256 * 1024 * 1024,
    restart_bytes: checkpoint::BULK_RESET_WAL_BYTES,
};

// Room above the restart size for the batches committed before the writer hears of a
// checkpoint: the backstop must not fire in the writer.
const _: () = assert!(BULK_WAL_LIMITS.autocheckpoint_bytes >= 2 * BULK_WAL_LIMITS.restart_bytes);
const _: () = assert!(WAL_LIMITS.autocheckpoint_bytes >= 2 * WAL_LIMITS.restart_bytes);

/// The integer value of `PRAGMA name` on `conn`.
pub fn pragma_int(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
}

/// Applies `limits` to `conn` (the restart size is the [`checkpoint::Checkpointer`]'s to
/// apply).
pub fn set_wal_limits(conn: &Connection, limits: WalLimits) -> rusqlite::Result<()> {
    let page_size = pragma_int(conn, "page_size")?;
    conn.pragma_update(None, "journal_size_limit", limits.keep_bytes)?;
    conn.pragma_update(
        None,
        "wal_autocheckpoint",
        limits.autocheckpoint_bytes / page_size.max(512),
    )
}

/// Page size of a new database. Rows of queue lines (typically 0.5–2 KiB each) fill 16 KiB pages
/// better than SQLite's default 4 KiB ones, which left ~14% of each page unused; and each page
/// costs a header, a cell directory and a pointer-map entry. A bulk load of 1M lines takes ~15%
/// less time (BENCHMARKS.md). An existing database keeps its page size.
pub const PAGE_SIZE: i64 = 16 * 1024;

/// The schema version from which `deferred_indexes` exists.
const DEFERRED_INDEXES_SINCE: i64 = 6;

/// How long a connection waits for another writer before SQLite reports `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The embedded migrations, in order. Append only: a released file is never edited.
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_create_tables",
        include_str!("../../migrations/0001_create_tables.sql"),
    ),
    (
        "0002_create_views",
        include_str!("../../migrations/0002_create_views.sql"),
    ),
    (
        "0003_create_summary_views",
        include_str!("../../migrations/0003_create_summary_views.sql"),
    ),
    (
        "0004_create_meta",
        include_str!("../../migrations/0004_create_meta.sql"),
    ),
    (
        "0005_reshape_tool_calls",
        include_str!("../../migrations/0005_reshape_tool_calls.sql"),
    ),
    (
        "0006_create_deferred_indexes",
        include_str!("../../migrations/0006_create_deferred_indexes.sql"),
    ),
    (
        "0007_saturating_token_sums",
        include_str!("../../migrations/0007_saturating_token_sums.sql"),
    ),
    (
        "0008_exact_tool_calls_and_turns",
        include_str!("../../migrations/0008_exact_tool_calls_and_turns.sql"),
    ),
    (
        "0009_reject_keys_and_pruned_lines",
        include_str!("../../migrations/0009_reject_keys_and_pruned_lines.sql"),
    ),
    (
        "0010_turn_model",
        include_str!("../../migrations/0010_turn_model.sql"),
    ),
    (
        "0011_stops_count_firings",
        include_str!("../../migrations/0011_stops_count_firings.sql"),
    ),
    (
        "0012_producer_and_turn_outcome",
        include_str!("../../migrations/0012_producer_and_turn_outcome.sql"),
    ),
    (
        "0013_turn_thinking_and_prompts",
        include_str!("../../migrations/0013_turn_thinking_and_prompts.sql"),
    ),
    (
        "0014_usage",
        include_str!("../../migrations/0014_usage.sql"),
    ),
    (
        "0015_otlp_export_and_receiver",
        include_str!("../../migrations/0015_otlp_export_and_receiver.sql"),
    ),
    (
        "0016_daily_rollup",
        include_str!("../../migrations/0016_daily_rollup.sql"),
    ),
    (
        "0017_story_indexes",
        include_str!("../../migrations/0017_story_indexes.sql"),
    ),
    (
        "0018_gate_columns",
        include_str!("../../migrations/0018_gate_columns.sql"),
    ),
    (
        "0019_story_calls",
        include_str!("../../migrations/0019_story_calls.sql"),
    ),
    (
        "0020_hourly_usage",
        include_str!("../../migrations/0020_hourly_usage.sql"),
    ),
    (
        "0021_usage_story_index",
        include_str!("../../migrations/0021_usage_story_index.sql"),
    ),
    (
        "0022_daily_tool_failures",
        include_str!("../../migrations/0022_daily_tool_failures.sql"),
    ),
    (
        "0023_daily_sessions_with_usage",
        include_str!("../../migrations/0023_daily_sessions_with_usage.sql"),
    ),
    (
        "0024_turn_hook_feedback",
        include_str!("../../migrations/0024_turn_hook_feedback.sql"),
    ),
    (
        "0025_events_session_index",
        include_str!("../../migrations/0025_events_session_index.sql"),
    ),
    (
        "0026_usage_reasoning",
        include_str!("../../migrations/0026_usage_reasoning.sql"),
    ),
    (
        "0027_tool_call_time",
        include_str!("../../migrations/0027_tool_call_time.sql"),
    ),
    (
        "0028_tool_call_decisions",
        include_str!("../../migrations/0028_tool_call_decisions.sql"),
    ),
    (
        "0029_chain",
        include_str!("../../migrations/0029_chain.sql"),
    ),
    (
        "0030_call_permission_mode",
        include_str!("../../migrations/0030_call_permission_mode.sql"),
    ),
    (
        "0031_hourly_sessions",
        include_str!("../../migrations/0031_hourly_sessions.sql"),
    ),
    ("0032_push", include_str!("../../migrations/0032_push.sql")),
    (
        "0033_transcript_items",
        include_str!("../../migrations/0033_transcript_items.sql"),
    ),
    (
        "0034_premium_requests",
        include_str!("../../migrations/0034_premium_requests.sql"),
    ),
    (
        "0035_chain_by_key",
        include_str!("../../migrations/0035_chain_by_key.sql"),
    ),
    (
        "0036_imported_turns",
        include_str!("../../migrations/0036_imported_turns.sql"),
    ),
    (
        "0037_imported_files",
        include_str!("../../migrations/0037_imported_files.sql"),
    ),
    (
        "0038_transcript_items_ts",
        include_str!("../../migrations/0038_transcript_items_ts.sql"),
    ),
    (
        "0039_agent_totals",
        include_str!("../../migrations/0039_agent_totals.sql"),
    ),
    (
        "0040_usage_check_models",
        include_str!("../../migrations/0040_usage_check_models.sql"),
    ),
];

/// Errors callers branch on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The database was written by a newer cmstore.
    #[error("{path}: schema version {found} is newer than this cmstore knows ({known}); upgrade cmstore")]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// Migrations this binary knows.
        known: usize,
    },
    /// Another writer advanced a source's offset between our read and our update.
    #[error(
        "offset of source {source_id} moved from {expected} (another ingester?); batch rolled back"
    )]
    OffsetMoved {
        /// The source whose offset moved.
        source_id: i64,
        /// The offset the batch started from.
        expected: i64,
    },
    /// The database path names a directory.
    #[error("{} is a directory, not a database file", .0.display())]
    Directory(PathBuf),
    /// The database file or its directory could not be created.
    #[error("cannot create {path}")]
    Create {
        /// What could not be created.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Any other SQLite failure.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// No connection could be had from the pool.
    #[error(transparent)]
    Pool(#[from] r2d2::Error),
    /// A background thread could not be started.
    #[error("cannot start a thread: {0}")]
    Thread(String),
}

/// How long [`Store::close`] waits for the pool's connections to close.
pub const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// An open store: a connection pool on a migrated database.
#[derive(Debug, Clone)]
pub struct Store {
    pool: Pool,
    path: PathBuf,
    open: Arc<OpenConnections>,
}

impl Store {
    /// A connection from the pool.
    pub fn conn(&self) -> Result<PooledConnection, Error> {
        Ok(self.pool.get()?)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Drops this handle and waits, at most [`CLOSE_WAIT`], until every connection of its pool
    /// is closed, wherever the pool's last handle goes: the last one to close removes the WAL,
    /// which a process exiting meanwhile would leave behind. Call it once the other handles
    /// of the pool and its connections are dropped; false when some connection is still open
    /// after the wait.
    pub fn close(self) -> bool {
        let Store { pool, open, .. } = self;
        drop(pool);
        open.wait_closed(CLOSE_WAIT)
    }
}

/// Opens (creating, private) the database at `path` and applies pending migrations.
pub fn open(path: &Path) -> Result<Store, Error> {
    create_private_file(path)?;
    {
        // Only possible before the first page is written, which setting WAL (in the pool's
        // init hook) already does: for a new file, or one a crash left without a page.
        // Incremental vacuum lets `prune` give space back.
        let conn = Connection::open(path)?;
        if pragma_int(&conn, "page_count")? == 0 {
            conn.execute_batch(&format!(
                "PRAGMA page_size = {PAGE_SIZE}; PRAGMA auto_vacuum = INCREMENTAL"
            ))?;
        }
    }
    let open = Arc::new(OpenConnections::default());
    let manager = {
        let open = Arc::clone(&open);
        SqliteConnectionManager::file(path).with_init(move |conn| {
            open.track(conn)?;
            apply_pragmas(conn)
        })
    };
    let pool = r2d2::Pool::builder()
        .max_size(4)
        .min_idle(Some(0))
        .build(manager)?;
    {
        let mut conn = pool.get()?;
        migrate(&mut conn, path, MIGRATIONS.len())?;
        chain::keyed::adopt(&mut conn)?;
        // Set up before the tables existed (a new store): watched from now on.
        chain::keyed::watch(&conn)?;
    }
    restrict_sidecars(path);
    Ok(Store {
        pool,
        path: path.to_path_buf(),
        open,
    })
}

/// Per-connection settings. `journal_mode` is persistent but cannot change inside a
/// transaction, so it is set here rather than in a migration.
fn apply_pragmas(conn: &mut Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    functions::register(conn)?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL;
         PRAGMA foreign_keys = ON;
         PRAGMA cache_size = -16000;",
    )?;
    set_wal_limits(conn, WAL_LIMITS)?;
    // Every change this connection makes to a table chained by key is noted for the chain.
    chain::keyed::watch(conn)
}

/// Bytes of the database's pages in use (free pages, which `prune` leaves until its vacuum
/// steps hand them back, do not count), as of the latest commit, WAL included.
pub fn used_bytes(conn: &Connection) -> rusqlite::Result<u64> {
    let pages = pragma_int(conn, "page_count")? - pragma_int(conn, "freelist_count")?;
    Ok(u64::try_from(pages.max(0) * pragma_int(conn, "page_size")?).unwrap_or(0))
}

/// Creates the database file with private permissions before SQLite does (SQLite gives the
/// `-wal` and `-shm` files the permissions of the database file), unless it exists.
fn create_private_file(path: &Path) -> Result<(), Error> {
    not_a_directory(path)?;
    let dir = dir_of(path);
    create_private_dir(dir).map_err(|source| Error::Create {
        path: dir.to_path_buf(),
        source,
    })?;
    if path.exists() {
        return Ok(());
    }
    private_file_options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map(|_| ())
        .map_err(|source| Error::Create {
            path: path.to_path_buf(),
            source,
        })
}

/// Fails when the database path names a directory, which SQLite would only call a "disk I/O
/// error" or "unable to open database file".
pub fn not_a_directory(path: &Path) -> Result<(), Error> {
    match path.is_dir() {
        true => Err(Error::Directory(path.to_path_buf())),
        false => Ok(()),
    }
}

/// Belt and braces: the `-wal`/`-shm` files may predate us (created by another tool).
fn restrict_sidecars(path: &Path) {
    #[cfg(unix)]
    for suffix in ["", "-wal", "-shm"] {
        use std::os::unix::fs::PermissionsExt;
        let mut name = path.as_os_str().to_os_string();
        name.push(suffix);
        let file = PathBuf::from(name);
        if let Ok(meta) = std::fs::metadata(&file) {
            if meta.permissions().mode() & 0o077 != 0 {
                let _ = std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600));
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// The schema version recorded in the database.
pub fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
}

/// Applies migrations up to `target` (a count of [`MIGRATIONS`]), each in its own
/// `BEGIN IMMEDIATE` transaction that re-reads the version, so two processes opening a fresh
/// database at once apply each file exactly once.
pub fn migrate(conn: &mut Connection, path: &Path, target: usize) -> Result<(), Error> {
    let target = target.min(MIGRATIONS.len());
    // A migration's backfill may call them (0022), whoever opened the connection.
    functions::register(conn)?;
    loop {
        // What a migration changes of the tables chained by key is chained with it: the
        // triggers are there from the migration that brought them on.
        chain::keyed::watch(conn)?;
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        let version = schema_version(&tx)?;
        if version > MIGRATIONS.len() as i64 {
            return Err(Error::TooNew {
                path: path.to_path_buf(),
                found: version,
                known: MIGRATIONS.len(),
            });
        }
        let next = version as usize;
        if next >= target {
            return Ok(());
        }
        if version >= DEFERRED_INDEXES_SINCE {
            // A migration may rely on any index: bring back those a bulk load set aside.
            indexes::restore_in(&tx)?;
        }
        tx.execute_batch(MIGRATIONS[next].1)?;
        tx.pragma_update(None, "user_version", next as i64 + 1)?;
        if chain::keyed::is_watched(&tx)? {
            chain::keyed::flush(&tx)?;
        }
        tx.commit()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `.cargo/config.toml` builds the bundled SQLite without its process-wide page cache
    /// mutex and memory statistics (see there why). Fails if that setting is lost, or is
    /// overridden by a `LIBSQLITE3_FLAGS` of your own.
    #[test]
    fn sqlite_is_built_without_global_cache_and_malloc_mutexes() {
        let conn = Connection::open_in_memory().unwrap();
        let options: Vec<String> = conn
            .prepare("SELECT compile_options FROM pragma_compile_options")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // A LIBSQLITE3_FLAGS of your own replaces the repository's; so does running cargo
        // from outside the repository (`.cargo/config.toml` is not read then).
        let hint = format!(
            "bundled SQLite built with {options:?}; LIBSQLITE3_FLAGS at build time: {:?} \
             (see .cargo/config.toml)",
            option_env!("LIBSQLITE3_FLAGS")
        );
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "{hint}"
        );
        assert!(options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"), "{hint}");
    }

    #[test]
    fn used_bytes_leave_out_free_pages() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("u.db");
        let store = open(&path).unwrap();
        let conn = store.conn().unwrap();
        let empty = used_bytes(&conn).unwrap();
        let blob = "x".repeat(4000);
        for i in 0..500 {
            conn.execute(
                "INSERT INTO events(id, ts, entry, ingested_at) VALUES (?1, 0, ?2, 0)",
                rusqlite::params![format!("e{i}"), blob],
            )
            .unwrap();
        }
        let full = used_bytes(&conn).unwrap();
        assert!(full >= empty + 500 * 4000, "{empty} -> {full}");
        conn.execute("DELETE FROM events", []).unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
        let file = std::fs::metadata(&path).unwrap().len();
        let after = used_bytes(&conn).unwrap();
        assert!(after < empty + 100_000, "{after}");
        assert!(
            file >= full,
            "the file keeps its free pages ({file} < {full})"
        );
    }

    #[test]
    fn a_database_file_left_empty_gets_the_settings_of_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.db");
        // As a crash between creating the file and writing its first page leaves it.
        std::fs::File::create(&path).unwrap();
        let store = open(&path).unwrap();
        let conn = store.conn().unwrap();
        assert_eq!(pragma_int(&conn, "page_size").unwrap(), PAGE_SIZE);
        assert_eq!(pragma_int(&conn, "auto_vacuum").unwrap(), 2, "incremental");
        assert_eq!(schema_version(&conn).unwrap(), MIGRATIONS.len() as i64);
    }

    #[test]
    fn execute_bound_wants_one_value_per_parameter() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t(a, b)").unwrap();
        let mut insert = conn.prepare("INSERT INTO t(a, b) VALUES (?1, ?2)").unwrap();
        let mut run = |values: &[i64]| -> rusqlite::Result<usize> {
            match values {
                [a] => execute_bound!(&mut insert; a),
                [a, b] => execute_bound!(&mut insert; a, b),
                [a, b, c] => execute_bound!(&mut insert; a, b, c),
                _ => unreachable!(),
            }
        };
        assert_eq!(run(&[1, 2]).unwrap(), 1);
        for (values, given) in [(&[1][..], 1), (&[1, 2, 3][..], 3)] {
            match run(values) {
                Err(rusqlite::Error::InvalidParameterCount(n, 2)) => assert_eq!(n, given),
                other => panic!("{other:?}"),
            }
        }
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(rows, 1, "nothing run with the wrong number of values");
    }

    #[test]
    fn wal_limits_are_set_in_bytes_whatever_the_page_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = open(&dir.path().join("w.db")).unwrap();
        let conn = store.conn().unwrap();
        let read = |conn: &Connection| -> (i64, i64) {
            let pages = pragma_int(conn, "wal_autocheckpoint").unwrap();
            (
                pages * PAGE_SIZE,
                pragma_int(conn, "journal_size_limit").unwrap(),
            )
        };
        set_wal_limits(&conn, BULK_WAL_LIMITS).unwrap();
        assert_eq!(
            read(&conn),
            (
                BULK_WAL_LIMITS.autocheckpoint_bytes,
                BULK_WAL_LIMITS.keep_bytes
            )
        );
        set_wal_limits(&conn, WAL_LIMITS).unwrap();
        assert_eq!(
            read(&conn),
            (WAL_LIMITS.autocheckpoint_bytes, WAL_LIMITS.keep_bytes)
        );
    }

    #[test]
    fn every_migration_file_is_embedded_in_order() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        files.sort();
        let embedded: Vec<String> = MIGRATIONS.iter().map(|(n, _)| format!("{n}.sql")).collect();
        assert_eq!(files, embedded);
        for (i, (name, sql)) in MIGRATIONS.iter().enumerate() {
            // Consecutive: `user_version` counts the migrations applied, by position.
            assert!(name.starts_with(&format!("{:04}_", i + 1)), "{name}");
            assert!(
                sql.trim_start().starts_with("--"),
                "{name} opens with a why-comment"
            );
        }
    }

    #[test]
    fn open_applies_every_migration_and_makes_a_private_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("c.db");
        let store = open(&path).unwrap();
        let conn = store.conn().unwrap();
        assert_eq!(schema_version(&conn).unwrap(), MIGRATIONS.len() as i64);
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let vacuum: i64 = conn
            .query_row("PRAGMA auto_vacuum", [], |r| r.get(0))
            .unwrap();
        assert_eq!(vacuum, 2, "incremental");
        let page_size: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(page_size, PAGE_SIZE);
        let autocheckpoint: i64 = conn
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap();
        assert_eq!(autocheckpoint * page_size, AUTOCHECKPOINT_BYTES);
        let keep: i64 = conn
            .query_row("PRAGMA journal_size_limit", [], |r| r.get(0))
            .unwrap();
        assert_eq!(keep, WAL_LIMITS.keep_bytes);
        for name in [
            "events",
            "sources",
            "rejects",
            "unknown_counts",
            "sessions",
            "tool_calls",
            "turns",
            "v_sessions",
            "v_tools",
            "v_daily",
            "v_unknown",
        ] {
            let n: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = ?1",
                    [name],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(n, 1, "{name}");
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            for suffix in ["", "-wal", "-shm"] {
                let mut p = path.as_os_str().to_os_string();
                p.push(suffix);
                let mode = std::fs::metadata(&p).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "{suffix}");
            }
        }
        drop(conn);
        // Reopening is a no-op.
        let again = open(&path).unwrap();
        assert_eq!(
            schema_version(&again.conn().unwrap()).unwrap(),
            MIGRATIONS.len() as i64
        );
    }

    #[test]
    fn a_database_of_an_older_version_upgrades_with_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            migrate(&mut conn, &path, 1).unwrap();
            assert_eq!(schema_version(&conn).unwrap(), 1);
            conn.execute_batch(
                "INSERT INTO events(id, ts, hook_type, session_id, entry, ingested_at)
                   VALUES ('e1', 86400000, 'UserPromptSubmit', 's1', '{}', 0);
                 INSERT INTO sessions(session_id, first_seen, last_seen, events, prompts)
                   VALUES ('s1', 86400000, 86400000, 1, 1);
                 INSERT INTO unknown_counts VALUES ('s1', 'missing_session_id', 2);",
            )
            .unwrap();
        }
        let store = open(&path).unwrap();
        let conn = store.conn().unwrap();
        assert_eq!(schema_version(&conn).unwrap(), MIGRATIONS.len() as i64);
        // Made with SQLite's default page size, which it keeps; the backstop stays 64 MiB.
        let page_size: i64 = conn
            .query_row("PRAGMA page_size", [], |r| r.get(0))
            .unwrap();
        assert_eq!(page_size, 4096);
        let autocheckpoint: i64 = conn
            .query_row("PRAGMA wal_autocheckpoint", [], |r| r.get(0))
            .unwrap();
        assert_eq!(autocheckpoint, 16384);
        let (prompts, unknown): (i64, String) = conn
            .query_row(
                "SELECT prompts, unknown_breakdown FROM v_sessions WHERE session_id = 's1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((prompts, unknown.as_str()), (1, "missing_session_id=2"));
        let day: String = conn
            .query_row("SELECT day FROM v_daily", [], |r| r.get(0))
            .unwrap();
        assert_eq!(day, "1970-01-02");
    }

    #[test]
    fn indexes_a_bulk_load_set_aside_are_back_before_a_later_migration_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v6.db");
        let mut conn = Connection::open(&path).unwrap();
        migrate(&mut conn, &path, DEFERRED_INDEXES_SINCE as usize).unwrap();
        // A bulk load interrupted at version 6: the deferrable indexes that version has
        // (later migrations made more deferrable ones) recorded and dropped.
        let existing: i64 = conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'index'
                  AND name IN (SELECT value FROM json_each(?1))",
                [serde_json::to_string(&indexes::DEFERRABLE).unwrap()],
                |r| r.get(0),
            )
            .unwrap();
        assert!(existing > 0, "version 6 has deferrable indexes");
        assert_eq!(indexes::defer(&mut conn).unwrap() as i64, existing);
        migrate(&mut conn, &path, MIGRATIONS.len()).unwrap();
        assert_eq!(schema_version(&conn).unwrap(), MIGRATIONS.len() as i64);
        assert_eq!(indexes::count(&conn).unwrap(), 0, "nothing left set aside");
        for name in indexes::DEFERRABLE {
            let found: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?1",
                    [name],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(found, 1, "{name}");
        }
    }

    #[test]
    fn tool_calls_of_version_4_keep_their_rows_and_get_their_totals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v4.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            migrate(&mut conn, &path, 4).unwrap();
            conn.execute_batch(
                "INSERT INTO tool_calls(call_key, session_id, tool_name, start_ts, end_ts,
                   duration_ms, success) VALUES
                   ('c1', 's1', 'Bash', 1000, 1200, 200, 1),
                   ('c2', 's1', 'Bash', 2000, 2900, 900, 0),
                   ('c3', 's1', 'Read', 3000, NULL, NULL, NULL),
                   ('c4', NULL, NULL, NULL, 4000, NULL, 1);",
            )
            .unwrap();
        }
        let store = open(&path).unwrap();
        let conn = store.conn().unwrap();
        assert_eq!(schema_version(&conn).unwrap(), MIGRATIONS.len() as i64);
        type Totals = (
            String,
            Option<String>,
            i64,
            i64,
            i64,
            i64,
            Option<i64>,
            Option<i64>,
        );
        let rows: Vec<Totals> = conn
            .prepare(
                "SELECT session_id, tool_name, calls, succeeded, failed, unfinished, total_ms,
                        max_ms FROM v_session_tools ORDER BY session_id, tool_name",
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            rows,
            vec![
                (
                    "s1".into(),
                    Some("Bash".into()),
                    2,
                    1,
                    1,
                    0,
                    Some(1100),
                    Some(900)
                ),
                ("s1".into(), Some("Read".into()), 1, 0, 0, 1, None, None),
                ("unknown-session".into(), None, 1, 1, 0, 0, None, None),
            ]
        );
        // The incomplete call is found by its key; the complete ones are not in that index.
        let open_calls: i64 = conn
            .query_row(
                "SELECT count(*) FROM tool_calls INDEXED BY tool_calls_open
                  WHERE call_key >= '' AND (start_ts IS NULL OR end_ts IS NULL)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(open_calls, 2);
        assert_eq!(
            conn.query_row("SELECT count(*) FROM tool_calls", [], |r| r
                .get::<_, i64>(0))
                .unwrap(),
            4
        );
    }

    #[test]
    fn stops_lose_the_harvested_turns_an_older_version_counted() {
        let (_dir, store) = upgraded_from_version_7(
            "INSERT INTO events(id, ts, hook_type, session_id, synthetic, entry, ingested_at)
               VALUES ('h', 1, 'Stop', 's1', 1, '{}', 0), ('r', 2, 'Stop', 's1', NULL, '{}', 0),
                      ('o', 3, 'Stop', 's2', 0, '{}', 0);
             INSERT INTO sessions(session_id, first_seen, last_seen, events, stops)
               VALUES ('s1', 1, 2, 2, 2), ('s2', 3, 3, 1, 1);",
        );
        let conn = store.conn().unwrap();
        assert_eq!(
            rows_of(&conn, "SELECT session_id, stops FROM sessions ORDER BY 1"),
            ["s1|1", "s2|1"]
        );
        assert_eq!(rows_of(&conn, "SELECT stops FROM v_daily"), ["2"]);
    }

    /// A database of version 7 holding `sql` (events and the tool calls ingest made of them),
    /// opened (migrated) by this cmstore.
    fn upgraded_from_version_7(sql: &str) -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v7.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            migrate(&mut conn, &path, 7).unwrap();
            conn.execute_batch(sql).unwrap();
        }
        let store = open(&path).unwrap();
        (dir, store)
    }

    /// `select`'s rows, each as its values joined by `|` (NULL as `-`).
    fn rows_of(conn: &Connection, select: &str) -> Vec<String> {
        let mut stmt = conn.prepare(select).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            Ok((0..n)
                .map(|i| match r.get::<_, rusqlite::types::Value>(i).unwrap() {
                    rusqlite::types::Value::Null => "-".to_string(),
                    rusqlite::types::Value::Integer(v) => v.to_string(),
                    rusqlite::types::Value::Text(t) => t,
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>()
                .join("|"))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    /// The totals of `session_tools` equal the stored calls summed (nothing was pruned).
    fn assert_totals_are_the_calls_summed(conn: &Connection) {
        let summed = rows_of(
            conn,
            "SELECT coalesce(session_id, 'unknown-session'), coalesce(tool_name, ''), count(*),
                    count(*) FILTER (WHERE outcome = 'succeeded'),
                    count(*) FILTER (WHERE outcome = 'failed'),
                    count(*) FILTER (WHERE outcome IS NULL),
                    count(*) FILTER (WHERE outcome = 'denied'),
                    count(*) FILTER (WHERE outcome = 'refused'),
                    count(*) FILTER (WHERE outcome = 'abandoned'),
                    CAST(total(duration_ms) AS INTEGER), count(duration_ms)
             FROM tool_calls GROUP BY 1, 2 ORDER BY 1, 2",
        );
        let totals = rows_of(
            conn,
            "SELECT session_id, tool_name, calls, succeeded, failed, unfinished, denied, refused,
                    abandoned, total_ms, timed
             FROM session_tools ORDER BY 1, 2",
        );
        assert_eq!(totals, summed);
    }

    /// Events of a version-7 store, as `(id, ts, hook_type, session, tool, call id, entry)`.
    fn v7_event(id: &str, ts: i64, hook: &str, session: &str, tool: &str, call: &str) -> String {
        let call = if call.is_empty() {
            "NULL".to_string()
        } else {
            format!("'{call}'")
        };
        format!(
            "INSERT INTO events(id, ts, hook_type, session_id, tool_name, tool_call_id, entry,
               ingested_at) VALUES ('{id}', {ts}, '{hook}', '{session}', '{tool}', {call}, '{{}}', 0);"
        )
    }

    #[test]
    fn a_call_joined_across_sessions_before_version_8_is_split() {
        let mut sql = String::new();
        // call_1 of s1 was completed by s2's PostToolUse; s2's own Pre came later and stayed
        // open, so that row cannot be split (s2 would have two open call_1s) and stays.
        for (id, ts, hook, session) in [
            ("p1", 1000, "PreToolUse", "s1"),
            ("q1", 1300, "PostToolUse", "s2"),
            ("p2", 2000, "PreToolUse", "s3"),
            ("q2", 2400, "PostToolUse", "s4"),
            ("p3", 3000, "PreToolUse", "s4"),
        ] {
            let key = if id.ends_with('1') {
                "call_1"
            } else {
                "call_2"
            };
            sql.push_str(&v7_event(id, ts, hook, session, "Bash", key));
        }
        sql.push_str(
            "INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, start_ts,
               end_ts, duration_ms, success, pre_event_id, post_event_id) VALUES
               ('call_1', 'call_1', 's1', 'Bash', 1000, 1300, 300, 1, 'p1', 'q1'),
               ('call_2', 'call_2', 's3', 'Bash', 2000, 2400, 400, 1, 'p2', 'q2'),
               ('call_2', 'call_2', 's4', 'Bash', 3000, NULL, NULL, NULL, 'p3', NULL);
             INSERT INTO session_tools VALUES
               ('s1', 'Bash', 1, 1, 0, 0, 300, 1, 300, 1300),
               ('s3', 'Bash', 1, 1, 0, 0, 400, 1, 400, 2400),
               ('s4', 'Bash', 1, 0, 0, 1, 0, 0, NULL, 3000);",
        );
        let (_dir, store) = upgraded_from_version_7(&sql);
        let conn = store.conn().unwrap();
        assert_eq!(
            rows_of(
                &conn,
                "SELECT call_key, session_id, start_ts, end_ts, duration_ms, success,
                        pre_event_id, post_event_id FROM tool_calls ORDER BY rowid"
            ),
            [
                "call_1|s1|1000|-|-|-|p1|-",
                "call_2|s3|2000|2400|400|1|p2|q2",
                "call_2|s4|3000|-|-|-|p3|-",
                "call_1|s2|-|1300|-|1|-|q1",
            ]
        );
        assert_totals_are_the_calls_summed(&conn);
    }

    #[test]
    fn halves_without_ids_stored_before_version_8_are_paired_in_order() {
        let mut sql = String::new();
        // bash: Pre Pre Post Post Pre (the last one still running); view: a Post whose Pre
        // was never seen, then a call; another session's Post is not cp1's.
        let halves = [
            ("e1", 1000, "PreToolUse", "cp1", "bash"),
            ("e2", 1010, "PreToolUse", "cp1", "bash"),
            ("e3", 1020, "PostToolUse", "cp1", "view"),
            ("e4", 1100, "PostToolUse", "cp1", "bash"),
            ("e5", 1200, "PostToolUse", "cp2", "bash"),
            ("e6", 1300, "PostToolUse", "cp1", "bash"),
            ("e7", 1400, "PreToolUse", "cp1", "view"),
            ("e8", 1450, "PostToolUse", "cp1", "view"),
            ("e9", 1500, "PreToolUse", "cp1", "bash"),
        ];
        for (id, ts, hook, session, tool) in halves {
            sql.push_str(&v7_event(id, ts, hook, session, tool, ""));
            let (start, end, success, pre, post) = if hook == "PreToolUse" {
                (
                    ts.to_string(),
                    "NULL",
                    "NULL",
                    format!("'{id}'"),
                    "NULL".to_string(),
                )
            } else {
                (
                    "NULL".to_string(),
                    "",
                    "1",
                    "NULL".to_string(),
                    format!("'{id}'"),
                )
            };
            let end = if end.is_empty() {
                ts.to_string()
            } else {
                end.to_string()
            };
            sql.push_str(&format!(
                "INSERT INTO tool_calls(call_key, session_id, tool_name, start_ts, end_ts,
                   success, pre_event_id, post_event_id)
                 VALUES ('{id}', '{session}', '{tool}', {start}, {end}, {success}, {pre}, {post});
                 INSERT INTO session_tools VALUES ('{session}', '{tool}', 1, {s}, 0, {u}, 0, 0,
                   NULL, {ts})
                 ON CONFLICT DO UPDATE SET calls = calls + 1, succeeded = succeeded + {s},
                   unfinished = unfinished + {u};",
                s = i64::from(hook != "PreToolUse"),
                u = i64::from(hook == "PreToolUse"),
            ));
        }
        let (_dir, store) = upgraded_from_version_7(&sql);
        let conn = store.conn().unwrap();
        assert_eq!(
            rows_of(
                &conn,
                "SELECT session_id, tool_name, pre_event_id, post_event_id, duration_ms, success
                 FROM tool_calls ORDER BY coalesce(start_ts, end_ts)"
            ),
            [
                "cp1|bash|e1|e4|100|1",
                "cp1|bash|e2|e6|290|1",
                "cp1|view|-|e3|-|1",
                "cp2|bash|-|e5|-|1",
                "cp1|view|e7|e8|50|1",
                "cp1|bash|e9|-|-|-",
            ]
        );
        assert_totals_are_the_calls_summed(&conn);
    }

    #[test]
    fn halves_without_ids_stored_before_version_8_pair_by_input_first() {
        let mut sql = String::new();
        // view a's Post was lost: b's Post must find b's Pre, not a's; a Post whose input no
        // Pre has then takes the earliest left (a's), as ingest does.
        let halves = [
            ("e1", 1000, "PreToolUse", r#"{\"path\":\"/a\"}"#),
            ("e2", 1010, "PreToolUse", r#"{\"path\":\"/b\"}"#),
            ("e3", 1100, "PostToolUse", r#"{\"path\":\"/b\"}"#),
            ("e4", 1200, "PostToolUse", r#"{\"path\":\"/c\"}"#),
        ];
        for (id, ts, hook, input) in halves {
            sql.push_str(&v7_event(id, ts, hook, "cp1", "view", ""));
            sql.push_str(&format!(
                r#"UPDATE events SET entry = '{{"hookType":"{hook}","toolInput":"{input}"}}'
                     WHERE id = '{id}';"#
            ));
            let pre = hook == "PreToolUse";
            sql.push_str(&format!(
                "INSERT INTO tool_calls(call_key, session_id, tool_name, start_ts, end_ts,
                   success, pre_event_id, post_event_id)
                 VALUES ('{id}', 'cp1', 'view', {start}, {end}, {success}, {pre_id}, {post_id});",
                start = if pre { ts.to_string() } else { "NULL".into() },
                end = if pre {
                    "NULL".to_string()
                } else {
                    ts.to_string()
                },
                success = if pre { "NULL" } else { "1" },
                pre_id = if pre {
                    format!("'{id}'")
                } else {
                    "NULL".into()
                },
                post_id = if pre {
                    "NULL".to_string()
                } else {
                    format!("'{id}'")
                },
            ));
        }
        sql.push_str(
            "INSERT INTO session_tools VALUES ('cp1', 'view', 4, 2, 0, 2, 0, 0, NULL, 1200);",
        );
        let (_dir, store) = upgraded_from_version_7(&sql);
        let conn = store.conn().unwrap();
        assert_eq!(
            rows_of(
                &conn,
                "SELECT pre_event_id, post_event_id, duration_ms FROM tool_calls ORDER BY rowid"
            ),
            ["e1|e4|200", "e2|e3|90"]
        );
        assert_totals_are_the_calls_summed(&conn);
    }

    #[test]
    fn negative_durations_stored_before_version_8_are_dropped_and_counted() {
        let (_dir, store) = upgraded_from_version_7(
            "INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, start_ts,
               end_ts, duration_ms, success) VALUES
               ('k1', 'k1', 'n1', 'Bash', 1150, 1000, -150, 1),
               ('k2', 'k2', 'n1', 'Bash', 3000, 3070, -5, 1),
               ('k3', 'k3', 'n1', 'Bash', 4000, 4040, 40, 1);
             INSERT INTO session_tools VALUES ('n1', 'Bash', 3, 3, 0, 0, -115, 3, 40, 4040);",
        );
        let conn = store.conn().unwrap();
        assert_eq!(
            rows_of(
                &conn,
                "SELECT call_key, duration_ms FROM tool_calls ORDER BY call_key"
            ),
            ["k1|-", "k2|70", "k3|40"]
        );
        assert_eq!(
            rows_of(&conn, "SELECT calls, total_ms, max_ms FROM v_tools"),
            ["3|110|70"]
        );
        assert_totals_are_the_calls_summed(&conn);
        assert_eq!(
            rows_of(
                &conn,
                "SELECT session_id, reason, count FROM unknown_counts"
            ),
            ["n1|negative_tool_duration|2"]
        );
    }

    #[test]
    fn calls_stored_before_version_8_get_their_outcomes() {
        let mut sql = String::new();
        for (id, ts, hook, call) in [
            ("p1", 1000, "PreToolUse", "c1"),
            ("p2", 1100, "PreToolUse", "c2"),
            ("q2", 1150, "PostToolUse", "c2"),
            ("p3", 1200, "PreToolUse", "c3"),
            ("q3", 1250, "PostToolUseFailure", "c3"),
            ("p4", 1300, "PreToolUse", "c4"),
            ("q4", 1350, "PostToolUse", "c4"),
            ("p5", 1400, "PreToolUse", "c5"),
            ("p7", 1410, "PreToolUse", "c7"),
            ("r7", 1440, "PermissionDenied", "c7"),
        ] {
            sql.push_str(&v7_event(id, ts, hook, "a", "Bash", call));
        }
        // The gate denied c1; c2 was refused (Copilot's `denied` result, counted as a failure
        // before); c3 failed; c4 succeeded; c5 was open when the session ended; c6 started
        // after that end; c7 was refused by Claude Code's auto mode (`PermissionDenied`).
        sql.push_str(
            r#"UPDATE events SET entry = '{"hookType":"PreToolUse","risk":"rm-rf-root","decision":"deny"}'
                 WHERE id = 'p1';
               INSERT INTO sessions(session_id, first_seen, last_seen, ended, ended_at)
                 VALUES ('a', 1000, 1600, 1, 1500);
               INSERT INTO tool_calls(call_key, tool_call_id, session_id, tool_name, start_ts,
                 end_ts, duration_ms, success, result_type, pre_event_id, post_event_id) VALUES
                 ('c1', 'c1', 'a', 'Bash', 1000, NULL, NULL, NULL, NULL, 'p1', NULL),
                 ('c2', 'c2', 'a', 'Bash', 1100, 1150, 50, 0, 'denied', 'p2', 'q2'),
                 ('c3', 'c3', 'a', 'Bash', 1200, 1250, 50, 0, NULL, 'p3', 'q3'),
                 ('c4', 'c4', 'a', 'Bash', 1300, 1350, 50, 1, 'success', 'p4', 'q4'),
                 ('c5', 'c5', 'a', 'Bash', 1400, NULL, NULL, NULL, NULL, 'p5', NULL),
                 ('c6', 'c6', 'a', 'Bash', 1600, NULL, NULL, NULL, NULL, NULL, NULL),
                 ('c7', 'c7', 'a', 'Bash', 1410, NULL, NULL, NULL, NULL, 'p7', NULL);
               INSERT INTO session_tools VALUES ('a', 'Bash', 7, 1, 2, 4, 150, 3, 50, 1600);"#,
        );
        let (_dir, store) = upgraded_from_version_7(&sql);
        let conn = store.conn().unwrap();
        assert_eq!(
            rows_of(
                &conn,
                "SELECT call_key, outcome, success FROM tool_calls ORDER BY call_key"
            ),
            [
                "c1|denied|-",
                "c2|refused|-",
                "c3|failed|0",
                "c4|succeeded|1",
                "c5|abandoned|-",
                "c6|-|-",
                "c7|refused|-",
            ]
        );
        assert_eq!(
            rows_of(
                &conn,
                "SELECT end_ts, duration_ms, post_event_id FROM tool_calls WHERE call_key = 'c7'"
            ),
            ["1440|30|r7"]
        );
        assert_eq!(
            rows_of(
                &conn,
                "SELECT calls, succeeded, failed, unfinished, denied, refused, abandoned
                 FROM v_tools"
            ),
            ["7|1|1|1|1|2|1"]
        );
        let by_outcome = rows_of(
            &conn,
            "SELECT count(*) FILTER (WHERE outcome = 'succeeded'),
                    count(*) FILTER (WHERE outcome = 'failed'),
                    count(*) FILTER (WHERE outcome IS NULL),
                    count(*) FILTER (WHERE outcome = 'denied'),
                    count(*) FILTER (WHERE outcome = 'refused'),
                    count(*) FILTER (WHERE outcome = 'abandoned') FROM tool_calls",
        );
        let totals = rows_of(
            &conn,
            "SELECT succeeded, failed, unfinished, denied, refused, abandoned FROM session_tools",
        );
        assert_eq!(totals, by_outcome);
    }

    #[test]
    fn the_gate_columns_of_stored_lines_are_what_ingest_reads_from_them() {
        let before = MIGRATIONS
            .iter()
            .position(|(name, _)| name.ends_with("_gate_columns"))
            .unwrap();
        let lines = [
            r#"{"hookType":"PreToolUse","risk":"rm-rf-root","decision":"deny"}"#,
            r#"{"hookType":"PreToolUse","risk":"dd,mkfs","decision":"allow"}"#,
            r#"{"hookType":"PreToolUse","risk":"unreadable","decision":"allow"}"#,
            r#"{"hookType":"PreToolUse","risk":"rm\u002drf-root","decision":"d\u0065ny"}"#,
            r#"{"hookType":"PreToolUse","risk":"","decision":""}"#,
            r#"{"hookType":"PreToolUse","risk":7,"decision":true}"#,
            r#"{"hookType":"PreToolUse","risk":{"rule":"dd"},"decision":["deny"]}"#,
            r#"{"hookType":"PreToolUse","risk":null}"#,
            r#"{"hookType":"PreToolUse","toolInput":{"risk":"dd","decision":"deny"}}"#,
            r#"{"hookType":"UserPromptSubmit","prompt":"what is the \"risk\" here?"}"#,
            r#"{"hookType":"PostToolUse","decision":"deny"}"#,
            r#"{"hookType":"PreToolUse"}"#,
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            migrate(&mut conn, &path, before).unwrap();
            for (i, line) in lines.iter().enumerate() {
                conn.execute(
                    "INSERT INTO events(id, ts, hook_type, entry, ingested_at)
                     VALUES (?1, 0, 'PreToolUse', ?2, 0)",
                    rusqlite::params![format!("e{i}"), line],
                )
                .unwrap();
            }
        }
        let store = open(&path).unwrap();
        let conn = store.conn().unwrap();
        let migrated = rows_of(&conn, "SELECT risk, decision FROM events ORDER BY seq");
        let parsed: Vec<String> = lines
            .iter()
            .map(|line| {
                let row = crate::model::queue_line::parse::parse_line(line.as_bytes(), 0)
                    .unwrap_or_else(|e| panic!("{line}: {e:?}"));
                let or_dash = |v: Option<std::borrow::Cow<'_, str>>| {
                    v.map_or("-".to_string(), |v| v.into_owned())
                };
                format!("{}|{}", or_dash(row.risk), or_dash(row.decision))
            })
            .collect();
        assert_eq!(migrated, parsed);
        assert_eq!(migrated[3], "rm-rf-root|deny");
        assert_eq!(migrated[10], "-|deny");
        assert_eq!(migrated[6], "-|-");
    }

    #[test]
    fn a_newer_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "user_version", 99).unwrap();
        }
        assert!(matches!(open(&path), Err(Error::TooNew { found: 99, .. })));
    }
}
