//! Read-only SQL over the store: the database side of `cmstore query`.
//!
//! Four independent locks keep a query from changing anything:
//!
//! 1. the file is opened with `SQLITE_OPEN_READ_ONLY` (never created, never written);
//! 2. `PRAGMA query_only = ON`;
//! 3. an authorizer allows only reading actions (`SELECT`, reads, functions, recursive CTEs and
//!    pragmas that set nothing); everything else, `ATTACH` and transactions included, is
//!    denied while the statement is prepared, before it runs (the one exception is the read
//!    transaction [`ReadOnlyDb::in_one_snapshot`] itself begins and ends);
//! 4. a prepared statement that SQLite itself does not call read-only (`VACUUM INTO`,
//!    `PRAGMA journal_mode=…`) is refused before its first step. The attached-database limit is
//!    also 0.
//!
//! One statement per query: a second statement is refused rather than guessed at, so every
//! output format holds exactly one result set.
//!
//! Time limit: a progress handler interrupts SQLite once the time spent *inside SQLite* passes
//! the limit. Time spent writing rows (a slow pipe, a pager) does not count.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::Value;
use rusqlite::{ffi, Connection, ErrorCode, OpenFlags, Statement};

/// The longest a reader waits for a writer (ingest holds its lock briefly) before SQLite
/// reports the database busy.
pub const MAX_BUSY_WAIT: Duration = Duration::from_secs(5);

/// Opens the store at `path` for reading only: `SQLITE_OPEN_READ_ONLY` (never created, never
/// written) and `query_only`, waiting up to `busy` for a writer. Never creates the file; a
/// missing one is an error.
pub fn connection(path: &Path, busy: Duration) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.pragma_update(None, "query_only", true)?;
    super::functions::register(&conn)?;
    conn.busy_timeout(busy)?;
    Ok(conn)
}

/// Virtual-machine steps between two checks of the time limit.
const PROGRESS_STEPS: i32 = 1_000;

/// Pragmas that take an argument but only read: schema introspection.
const READING_PRAGMAS: &[&str] = &[
    "table_info",
    "table_xinfo",
    "table_list",
    "index_info",
    "index_xinfo",
    "index_list",
    "foreign_key_list",
    "foreign_key_check",
    "integrity_check",
    "quick_check",
];

/// Why a query did not run to the end. Callers branch on it (exit codes, messages).
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// There is no database file to read.
    #[error("no database at {}; run `cmstore ingest` first", .0.display())]
    MissingDatabase(PathBuf),
    /// The database path names a directory.
    #[error("{} is a directory, not a database file", .0.display())]
    Directory(PathBuf),
    /// The statement would change something.
    #[error("query refused: the store is read-only ({0})")]
    Refused(String),
    /// More than one statement was given.
    #[error("query refused: give one SQL statement per query (found more after the first)")]
    MultipleStatements,
    /// The SQL holds no statement at all (empty, or only comments).
    #[error("no SQL statement given")]
    Empty,
    /// The time limit ran out.
    #[error("query interrupted after {}s (--timeout)", format_secs(*.0))]
    Interrupted(Duration),
    /// A named parameter has no `--param`, or a `--param` names nothing in the SQL.
    #[error("{0}")]
    Parameter(String),
    /// SQLite rejected the SQL; `position` points into it when SQLite knows where.
    #[error("SQL error: {message}{}", .position.as_ref().map(|p| format!(" {p}")).unwrap_or_default())]
    Sql {
        /// SQLite's message.
        message: String,
        /// Where in the SQL, with the offending line and a caret under it.
        position: Option<Position>,
    },
    /// Opening or reading the database failed for another reason.
    #[error("{context}")]
    Database {
        /// What was being done.
        context: String,
        /// The SQLite error.
        source: rusqlite::Error,
    },
}

/// A place in the SQL text, for error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// The text of that line.
    pub text: String,
}

impl Position {
    /// The position of byte `offset` in `sql` (clamped to the text, moved back to a char
    /// boundary).
    pub fn at(sql: &str, offset: usize) -> Position {
        let mut offset = offset.min(sql.len());
        while !sql.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &sql[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let line_end = sql[offset..].find('\n').map_or(sql.len(), |i| offset + i);
        Position {
            line: before.matches('\n').count() + 1,
            column: sql[line_start..offset].chars().count() + 1,
            text: sql[line_start..line_end].trim_end_matches('\r').to_owned(),
        }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let caret = " ".repeat(self.column.saturating_sub(1));
        write!(
            f,
            "at line {}, column {}\n  {}\n  {caret}^",
            self.line, self.column, self.text
        )
    }
}

fn format_secs(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

/// What the hooks installed on the connection have seen.
#[derive(Debug, Default)]
struct Guard {
    /// The first action the authorizer denied, described for the user.
    denied: Option<String>,
    /// The time limit; `None` means none.
    limit: Option<Duration>,
    /// Time spent inside SQLite so far.
    spent: Duration,
    /// When the current call into SQLite began.
    running_since: Option<Instant>,
    /// The progress handler interrupted SQLite.
    tripped: bool,
    /// [`ReadOnlyDb::in_one_snapshot`] is beginning or ending its read transaction, which
    /// the authorizer allows then and only then.
    own_transaction: bool,
}

impl Guard {
    fn over_time(&mut self) -> bool {
        let Some(limit) = self.limit else {
            return false;
        };
        let now = self.spent + self.running_since.map_or(Duration::ZERO, |t| t.elapsed());
        if now > limit {
            self.tripped = true;
        }
        self.tripped
    }
}

type SharedGuard = Arc<Mutex<Guard>>;

fn lock(guard: &SharedGuard) -> MutexGuard<'_, Guard> {
    // A panic inside a hook cannot leave the guard half-updated in a way that matters here.
    guard
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The read transaction of [`ReadOnlyDb::in_one_snapshot`], ended when dropped too (a failed
/// or panicking read), so that the connection never stays in an old snapshot. A read
/// transaction ends alike committed or rolled back.
struct OpenSnapshot<'a>(Option<&'a ReadOnlyDb>);

impl OpenSnapshot<'_> {
    /// Ends it, saying whether SQLite could.
    fn end(mut self) -> Result<(), QueryError> {
        match self.0.take() {
            Some(db) => db.own_transaction("COMMIT"),
            None => Ok(()),
        }
    }
}

impl Drop for OpenSnapshot<'_> {
    fn drop(&mut self) {
        if let Some(db) = self.0.take() {
            let _ = db.own_transaction("COMMIT");
        }
    }
}

/// A read-only connection to the store.
pub struct ReadOnlyDb {
    conn: Connection,
    guard: SharedGuard,
}

impl ReadOnlyDb {
    /// Opens `path` read-only; `timeout` limits the time any one query spends in SQLite.
    /// Never creates the file.
    pub fn open(path: &Path, timeout: Option<Duration>) -> Result<ReadOnlyDb, QueryError> {
        if !path.exists() {
            return Err(QueryError::MissingDatabase(path.to_owned()));
        }
        if path.is_dir() {
            return Err(QueryError::Directory(path.to_owned()));
        }
        let db_err = |context: &str| {
            let context = format!("{context} {}", path.display());
            move |source| QueryError::Database { context, source }
        };
        // A writer (ingest) holds its lock briefly; wait for it rather than fail at once.
        let busy = timeout.unwrap_or(MAX_BUSY_WAIT).min(MAX_BUSY_WAIT);
        let conn = connection(path, busy).map_err(db_err("opening"))?;
        conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)
            .map_err(db_err("limiting attached databases on"))?;

        let guard = SharedGuard::default();
        lock(&guard).limit = timeout;
        let for_auth = Arc::clone(&guard);
        conn.authorizer(Some(move |ctx: AuthContext<'_>| {
            match denial(&ctx.action) {
                None => Authorization::Allow,
                Some(_)
                    if matches!(ctx.action, AuthAction::Transaction { .. })
                        && lock(&for_auth).own_transaction =>
                {
                    Authorization::Allow
                }
                Some(what) => {
                    lock(&for_auth).denied.get_or_insert(what);
                    Authorization::Deny
                }
            }
        }))
        .map_err(db_err("installing the authorizer on"))?;
        let for_progress = Arc::clone(&guard);
        conn.progress_handler(
            PROGRESS_STEPS,
            Some(move || lock(&for_progress).over_time()),
        )
        .map_err(db_err("installing the time limit on"))?;
        Ok(ReadOnlyDb { conn, guard })
    }

    /// Runs `read` in one read transaction: every statement of it sees the store as one
    /// moment left it (a WAL snapshot, taken at its first read), whatever a writer commits
    /// meanwhile. For reports made of several statements that must agree. Within another
    /// snapshot, `read` is part of that one.
    pub fn in_one_snapshot<T, E: From<QueryError>>(
        &self,
        read: impl FnOnce(&Self) -> Result<T, E>,
    ) -> Result<T, E> {
        if !self.conn.is_autocommit() {
            return read(self);
        }
        self.own_transaction("BEGIN")?;
        let open = OpenSnapshot(Some(self));
        let value = read(self)?;
        open.end()?;
        Ok(value)
    }

    fn own_transaction(&self, sql: &str) -> Result<(), QueryError> {
        lock(&self.guard).own_transaction = true;
        let done = self.conn.execute_batch(sql);
        lock(&self.guard).own_transaction = false;
        done.map_err(|err| self.classify(err, sql))
    }

    /// Prepares the one statement in `sql`, refusing anything that is not read-only.
    pub fn prepare(&self, sql: &str) -> Result<Query<'_>, QueryError> {
        if sql_is_blank(sql) {
            return Err(QueryError::Empty);
        }
        lock(&self.guard).denied = None;
        let stmt = match self.conn.prepare(sql) {
            Ok(stmt) => stmt,
            Err(err) => return Err(self.classify(err, sql)),
        };
        if !stmt.readonly() {
            return Err(QueryError::Refused(format!(
                "SQLite reports that `{}` would write",
                first_words(sql, 2)
            )));
        }
        Ok(Query {
            db: self,
            stmt,
            sql: sql.to_owned(),
        })
    }

    /// Turns a rusqlite error into what the user needs to know.
    fn classify(&self, err: rusqlite::Error, sql: &str) -> QueryError {
        let denied = lock(&self.guard).denied.take();
        let tripped = lock(&self.guard).tripped;
        let limit = lock(&self.guard).limit;
        match err {
            rusqlite::Error::MultipleStatement => QueryError::MultipleStatements,
            _ if err.sqlite_error_code() == Some(ErrorCode::AuthorizationForStatementDenied) => {
                let what = match denied {
                    // SQLite stops at its schema table before naming the statement itself.
                    Some(what) if is_schema_write(&what) => {
                        format!("`{}` would change the schema", first_words(sql, 3))
                    }
                    Some(what) => format!("{what} is not allowed"),
                    None => format!("`{}` is not allowed", first_words(sql, 3)),
                };
                QueryError::Refused(format!("{what}; SQLite: {}", message(&err)))
            }
            // Plain SQLITE_READONLY is a refused write; its extended forms (a WAL index that
            // cannot be set up, say) are trouble reading, reported as they are.
            rusqlite::Error::SqliteFailure(e, _) if e.extended_code == ffi::SQLITE_READONLY => {
                QueryError::Refused(format!("SQLite: {}", message(&err)))
            }
            _ if err.sqlite_error_code() == Some(ErrorCode::OperationInterrupted) && tripped => {
                QueryError::Interrupted(limit.unwrap_or_default())
            }
            rusqlite::Error::SqlInputError { msg, offset, .. } => QueryError::Sql {
                message: msg,
                position: usize::try_from(offset).ok().map(|o| Position::at(sql, o)),
            },
            rusqlite::Error::SqliteFailure(_, _) | rusqlite::Error::InvalidQuery => {
                QueryError::Sql {
                    message: message(&err),
                    position: None,
                }
            }
            other => QueryError::Database {
                context: "running the query".to_owned(),
                source: other,
            },
        }
    }
}

/// SQLite's own message for an error, without rusqlite's wrapping.
fn message(err: &rusqlite::Error) -> String {
    match err {
        rusqlite::Error::SqliteFailure(_, Some(msg)) => msg.clone(),
        rusqlite::Error::SqlInputError { msg, .. } => msg.clone(),
        other => other.to_string(),
    }
}

/// `None` when the authorizer may allow `action`, else a description of it for the user.
fn denial(action: &AuthAction<'_>) -> Option<String> {
    match action {
        AuthAction::Select
        | AuthAction::Read { .. }
        | AuthAction::Function { .. }
        | AuthAction::Recursive => None,
        AuthAction::Pragma {
            pragma_name,
            pragma_value: None,
        } if !pragma_name.eq_ignore_ascii_case("optimize") => None,
        AuthAction::Pragma {
            pragma_name,
            pragma_value: Some(_),
        } if READING_PRAGMAS
            .iter()
            .any(|p| p.eq_ignore_ascii_case(pragma_name)) =>
        {
            None
        }
        AuthAction::Pragma {
            pragma_name,
            pragma_value,
        } => Some(match pragma_value {
            Some(value) => format!("PRAGMA {pragma_name} = {value}"),
            None => format!("PRAGMA {pragma_name}"),
        }),
        AuthAction::Attach { filename } => Some(format!("ATTACH of {filename:?}")),
        AuthAction::Detach { database_name } => Some(format!("DETACH of {database_name}")),
        AuthAction::Insert { table_name } => Some(format!("INSERT into {table_name}")),
        AuthAction::Update { table_name, .. } => Some(format!("UPDATE of {table_name}")),
        AuthAction::Delete { table_name } => Some(format!("DELETE from {table_name}")),
        other => Some(describe(other)),
    }
}

/// True for a denial that names SQLite's schema table rather than the user's statement.
fn is_schema_write(what: &str) -> bool {
    [
        "sqlite_master",
        "sqlite_temp_master",
        "sqlite_schema",
        "sqlite_temp_schema",
    ]
    .iter()
    .any(|t| what.ends_with(t))
}

/// A short name for a denied action that has no special wording.
fn describe(action: &AuthAction<'_>) -> String {
    let debug = format!("{action:?}");
    let name = debug.split([' ', '{', '(']).next().unwrap_or("statement");
    let mut words = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            words.push(' ');
        }
        words.push(c.to_ascii_uppercase());
    }
    words
}

/// True when `sql` has no statement: only whitespace, `;` and comments.
fn sql_is_blank(sql: &str) -> bool {
    let mut rest = sql;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
        if let Some(after) = rest.strip_prefix("--") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else {
            return rest.is_empty();
        }
    }
}

/// The first `n` words of `sql`, for messages.
fn first_words(sql: &str, n: usize) -> String {
    sql.split_whitespace().take(n).collect::<Vec<_>>().join(" ")
}

/// A value given on the command line for a named parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// The name without its `:`, `@` or `$`.
    pub name: String,
    /// The value to bind.
    pub value: Value,
}

impl Param {
    /// Parses `name=value`. A value written as a canonical integer (`42`, `-7`; not `007` or
    /// `+1`) binds as an integer; anything else binds as text.
    pub fn parse(spec: &str) -> Result<Param, String> {
        let (name, raw) = spec
            .split_once('=')
            .ok_or_else(|| format!("--param {spec:?}: expected NAME=VALUE"))?;
        let name = name.trim_start_matches([':', '@', '$']);
        if name.is_empty() {
            return Err(format!("--param {spec:?}: the name is empty"));
        }
        let value = match raw.parse::<i64>() {
            Ok(i) if i.to_string() == raw => Value::Integer(i),
            _ => Value::Text(raw.to_owned()),
        };
        Ok(Param {
            name: name.to_owned(),
            value,
        })
    }
}

/// One prepared, read-only statement.
pub struct Query<'db> {
    db: &'db ReadOnlyDb,
    stmt: Statement<'db>,
    sql: String,
}

impl<'db> Query<'db> {
    /// The result column names, in order.
    pub fn columns(&self) -> Vec<String> {
        self.stmt
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    /// Binds `params` by name and starts the query. Every named parameter in the SQL needs a
    /// value, and every value must name a parameter.
    pub fn run(&mut self, params: &[Param]) -> Result<QueryRows<'_, 'db>, QueryError> {
        let mut used = vec![false; params.len()];
        for index in 1..=self.stmt.parameter_count() {
            let Some(name) = self.stmt.parameter_name(index).map(str::to_owned) else {
                return Err(QueryError::Parameter(
                    "positional parameters (`?`) are not supported; use :name with --param name=VALUE"
                        .to_owned(),
                ));
            };
            let bare = name.trim_start_matches([':', '@', '$', '?']);
            if bare.chars().all(|c| c.is_ascii_digit()) {
                return Err(QueryError::Parameter(format!(
                    "numbered parameter {name} is not supported; use :name with --param name=VALUE"
                )));
            }
            // The last --param for a name wins, as with any repeated flag.
            let Some(i) = params.iter().rposition(|p| p.name == bare) else {
                return Err(QueryError::Parameter(format!(
                    "no value for parameter {name}; give it with --param {bare}=VALUE"
                )));
            };
            for (j, p) in params.iter().enumerate() {
                if p.name == bare {
                    used[j] = true;
                }
            }
            self.stmt
                .raw_bind_parameter(index, &params[i].value)
                .map_err(|source| QueryError::Database {
                    context: format!("binding {name}"),
                    source,
                })?;
        }
        if let Some(unused) = params.iter().zip(&used).find(|(_, u)| !**u) {
            return Err(QueryError::Parameter(format!(
                "--param {} names no parameter in the SQL (expected :{} in it)",
                unused.0.name, unused.0.name
            )));
        }
        Ok(QueryRows {
            db: self.db,
            columns: self.stmt.column_count(),
            sql: &self.sql,
            rows: self.stmt.raw_query(),
        })
    }
}

/// The rows of a running query; time spent fetching them counts against the time limit.
pub struct QueryRows<'s, 'db> {
    db: &'db ReadOnlyDb,
    rows: rusqlite::Rows<'s>,
    columns: usize,
    sql: &'s str,
}

impl QueryRows<'_, '_> {
    /// The next row, or `None` at the end.
    // Not an Iterator: the borrow of the current row ends at each call, and errors end the
    // query, so a plain method reads better than `Option<Result<…>>`.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<Option<Vec<Value>>, QueryError> {
        lock(&self.db.guard).running_since = Some(Instant::now());
        let step = self.rows.next();
        {
            let mut guard = lock(&self.db.guard);
            if let Some(since) = guard.running_since.take() {
                guard.spent += since.elapsed();
            }
        }
        let row = match step {
            Ok(Some(row)) => row,
            Ok(None) => return Ok(None),
            Err(err) => return Err(self.db.classify(err, self.sql)),
        };
        // Sized once: collecting into a `Result` loses the length, and the row grew by
        // doubling (5 % of `show`'s instructions for a session of 50,000 events).
        let mut values = Vec::with_capacity(self.columns);
        for i in 0..self.columns {
            values.push(
                row.get::<_, Value>(i)
                    .map_err(|err| self.db.classify(err, self.sql))?,
            );
        }
        Ok(Some(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn position_counts_lines_and_characters() {
        let sql = "select 1,\n  é, frm x";
        let offset = sql.find("frm").unwrap();
        let p = Position::at(sql, offset);
        assert_eq!((p.line, p.column), (2, 6));
        assert_eq!(p.text, "  é, frm x");
        assert_eq!(p.to_string(), "at line 2, column 6\n    é, frm x\n       ^");
    }

    #[test]
    fn position_clamps_and_respects_char_boundaries() {
        let p = Position::at("é", 1);
        assert_eq!((p.line, p.column), (1, 1));
        let p = Position::at("ab", 99);
        assert_eq!((p.line, p.column), (1, 3));
    }

    #[test]
    fn params_bind_canonical_integers_as_integers() {
        let p = Param::parse("n=42").unwrap();
        assert_eq!((p.name.as_str(), &p.value), ("n", &Value::Integer(42)));
        assert_eq!(Param::parse(":n=-7").unwrap().value, Value::Integer(-7));
        for text in ["007", "+1", "1.5", "", "abc", "99999999999999999999"] {
            let spec = format!("s={text}");
            assert_eq!(
                Param::parse(&spec).unwrap().value,
                Value::Text(text.to_owned())
            );
        }
        assert_eq!(
            Param::parse("a=b=c").unwrap().value,
            Value::Text("b=c".into())
        );
        assert!(Param::parse("novalue").is_err());
        assert!(Param::parse("=1").is_err());
    }

    #[test]
    fn blank_sql_is_only_space_semicolons_and_comments() {
        assert!(sql_is_blank(" ;\n-- note\n/* block */ ;"));
        assert!(!sql_is_blank("-- note\nselect 1"));
    }

    #[test]
    fn one_snapshot_sees_one_moment_and_user_sql_still_cannot_begin() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch(
                "PRAGMA journal_mode = WAL; CREATE TABLE t(x); INSERT INTO t VALUES (1);",
            )
            .unwrap();
        let db = ReadOnlyDb::open(&path, None).unwrap();
        let count = |db: &ReadOnlyDb| -> Result<i64, QueryError> {
            let mut q = db.prepare("SELECT count(*) FROM t")?;
            let mut rows = q.run(&[])?;
            let row = rows.next()?.expect("one row");
            Ok(match row[0] {
                Value::Integer(n) => n,
                _ => -1,
            })
        };
        let (before, during) = db
            .in_one_snapshot(|db| {
                let before = count(db)?;
                writer.execute("INSERT INTO t VALUES (2)", []).unwrap();
                Ok::<_, QueryError>((before, count(db)?))
            })
            .unwrap();
        assert_eq!((before, during), (1, 1));
        assert_eq!(count(&db).unwrap(), 2, "the next read sees the commit");
        // Nested: the inner read is part of the outer snapshot.
        let (outer, inner) = db
            .in_one_snapshot(|db| {
                let outer = count(db)?;
                writer.execute("INSERT INTO t VALUES (3)", []).unwrap();
                Ok::<_, QueryError>((outer, db.in_one_snapshot(count)?))
            })
            .unwrap();
        assert_eq!((outer, inner), (2, 2));
        assert_eq!(count(&db).unwrap(), 3);
        // A failed read ends its snapshot: the next one sees what was committed since.
        let failed: Result<(), QueryError> = db.in_one_snapshot(|db| {
            count(db)?;
            writer.execute("INSERT INTO t VALUES (4)", []).unwrap();
            db.prepare("SELECT nothing FROM nowhere").map(|_| ())
        });
        assert!(failed.is_err());
        assert_eq!(db.in_one_snapshot(count).unwrap(), 4);
        for sql in ["BEGIN", "COMMIT", "SAVEPOINT s"] {
            assert!(
                matches!(db.prepare(sql), Err(QueryError::Refused(_))),
                "{sql} refused"
            );
        }
    }

    #[test]
    fn denied_actions_are_named() {
        assert_eq!(
            denial(&AuthAction::Insert {
                table_name: "events"
            })
            .as_deref(),
            Some("INSERT into events")
        );
        assert_eq!(denial(&AuthAction::Select), None);
        assert_eq!(
            denial(&AuthAction::Pragma {
                pragma_name: "table_info",
                pragma_value: Some("events")
            }),
            None
        );
        assert_eq!(
            denial(&AuthAction::Pragma {
                pragma_name: "user_version",
                pragma_value: Some("5")
            })
            .as_deref(),
            Some("PRAGMA user_version = 5")
        );
        assert_eq!(
            denial(&AuthAction::CreateTable { table_name: "t" }).as_deref(),
            Some("CREATE TABLE")
        );
    }
}
