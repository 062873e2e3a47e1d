//! Read-only SQL on the team store (`cmstore query --store postgres://…`): one statement, in a
//! read-only transaction with a statement timeout, its rows as the local store's values so
//! that every output format prints them the same way.
//!
//! The statement is first parsed alone through the extended protocol, which refuses more than
//! one statement and gives the columns' types; it then runs through `PREPARE`/`EXECUTE` in the
//! text format, which prints every PostgreSQL type as PostgreSQL writes it. Whole numbers,
//! floating and numeric values and booleans become numbers; everything else is text.

use std::time::Duration;

use postgres::types::Type;
use postgres::{Client, SimpleQueryMessage};
use rusqlite::types::Value;

use super::server::ServerError;

/// Rows of one statement: its column names and its values.
pub type Rows = (Vec<String>, Vec<Vec<Value>>);

/// Connects to the team store a report's `--store` names (a `postgres://` or
/// `postgresql://` URL, completed by the `PG*` variables and the password file as `[push]`
/// url is), verifying TLS against `[push] ca_file` too when `config` sets it.
pub fn connect_store(url: &str, config: &crate::config::Config) -> Result<Client, ServerError> {
    let ca_file = config.push.as_ref().and_then(|p| p.ca_file.as_deref());
    if !url.starts_with("postgres://") && !url.starts_with("postgresql://") {
        return Err(ServerError::Settings(format!(
            "--store {url:?}: expected a postgres:// URL (the local store is --db)"
        )));
    }
    let settings = super::server::settings(Some(url), &crate::support::env::value)?;
    super::server::connect(&settings, ca_file)
}

/// Runs `sql` on `client` in a read-only transaction, `params` bound to `$1`, `$2`, … in
/// order (as literals the statement's own types then read), stopping it after `timeout`
/// (`None`: no limit). The transaction is rolled back whatever happens.
pub fn run(
    client: &mut Client,
    sql: &str,
    params: &[String],
    timeout: Option<Duration>,
) -> Result<Rows, ServerError> {
    run_with(client, sql, params, timeout, "", None)
}

/// How long one of cmstore's own reports on the team store may take before the server
/// stops it.
pub const REPORT_TIMEOUT: Duration = Duration::from_secs(60);

/// [`run`] for cmstore's own reports, which read rollups by index: stopped after
/// [`REPORT_TIMEOUT`], and without the server's JIT compilation, which its planner asks for
/// on large estimates and which cost a list of 40,000 sessions 0.3 s of its 1.2 s.
///
/// A table, view, column or function of the team schema that is not there means a database no
/// cmstore has pushed to, or one an older cmstore keeps: a push from this one migrates it.
pub fn run_report(client: &mut Client, sql: &str, params: &[String]) -> Result<Rows, ServerError> {
    use postgres::error::SqlState;
    let ran = run_with(
        client,
        sql,
        params,
        Some(REPORT_TIMEOUT),
        "SET LOCAL jit = off;",
        None,
    );
    match ran {
        Err(ServerError::Postgres { source, .. })
            if [
                SqlState::UNDEFINED_TABLE,
                SqlState::UNDEFINED_FUNCTION,
                SqlState::UNDEFINED_COLUMN,
            ]
            .iter()
            .any(|state| source.code() == Some(state)) =>
        {
            let missing = source.as_db_error().map_or("", |db| db.message());
            Err(ServerError::Settings(format!(
                "this database holds no team store, or one older than this cmstore reads \
                 ({missing}): `cmstore push` to it with this cmstore first (docs/teams.md)"
            )))
        }
        other => other,
    }
}

/// [`run`] for the dashboard's SQL page: at most `max_rows` rows, and whether more were left
/// out. A query is read through a cursor, so the server sends no more than the cap and one
/// row. A statement a cursor cannot read (a write, `CREATE`) is run as [`run`] runs it, for
/// the server's own verdict: a read-only transaction refuses it.
pub fn run_capped(
    client: &mut Client,
    sql: &str,
    timeout: Option<Duration>,
    max_rows: u64,
) -> Result<(Rows, bool), ServerError> {
    use postgres::error::SqlState;
    let (columns, mut rows) = match run_with(client, sql, &[], timeout, "", Some(max_rows)) {
        // The statement was parsed alone already: these are the server refusing a cursor
        // for it.
        Err(ServerError::Postgres { source, .. })
            if source.code() == Some(&SqlState::SYNTAX_ERROR)
                || source.code() == Some(&SqlState::FEATURE_NOT_SUPPORTED) =>
        {
            match run_with(client, sql, &[], timeout, "", None) {
                // Neither a cursor nor `PREPARE` takes it (`CREATE`, `SHOW`, `VACUUM`): a
                // statement this page does not run.
                Err(ServerError::Postgres { source, .. })
                    if source.code() == Some(&SqlState::SYNTAX_ERROR) =>
                {
                    let said = source.as_db_error().map_or(String::new(), |db| {
                        format!(" (the server: {})", db.message())
                    });
                    return Err(ServerError::Refused(format!(
                        "only one query (SELECT, WITH, VALUES, TABLE) runs here: the team store \
                         is read-only{said}"
                    )));
                }
                other => other?,
            }
        }
        other => other?,
    };
    let cut = rows.len() as u64 > max_rows;
    rows.truncate(usize::try_from(max_rows).unwrap_or(usize::MAX));
    Ok(((columns, rows), cut))
}

fn run_with(
    client: &mut Client,
    sql: &str,
    params: &[String],
    timeout: Option<Duration>,
    settings: &str,
    max_rows: Option<u64>,
) -> Result<Rows, ServerError> {
    let failed = |context: &str| {
        let context = context.to_string();
        move |source| ServerError::Postgres { context, source }
    };
    let mut tx = client
        .build_transaction()
        .read_only(true)
        .start()
        .map_err(failed("cannot start a read-only transaction"))?;
    let millis = timeout.map_or(0, |t| t.as_millis().max(1));
    tx.batch_execute(&format!("{settings}SET LOCAL statement_timeout = {millis}"))
        .map_err(failed("cannot set the statement timeout"))?;
    let statement = tx.prepare(sql).map_err(failed("the statement"))?;
    if statement.params().len() != params.len() {
        return Err(ServerError::Settings(format!(
            "the statement has {} parameter(s) ($1, $2, …) and {} were given with --param",
            statement.params().len(),
            params.len()
        )));
    }
    let columns: Vec<(String, Type)> = statement
        .columns()
        .iter()
        .map(|c| (c.name().to_string(), c.type_().clone()))
        .collect();
    let arguments = match params.is_empty() {
        true => String::new(),
        false => {
            let literals: Vec<String> = params.iter().map(|p| literal(p)).collect();
            format!(" ({})", literals.join(", "))
        }
    };
    // A prepared statement or a cursor outlives nothing but its transaction's end: each has a
    // name of its own (a connection may run several; a pooler may hand one server session to
    // several processes), and a prepared one goes once it has run, or failed.
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = format!(
        "cmstore_query_{}_{}",
        std::process::id(),
        RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    // Line breaks: a statement ending in a `--` comment must not swallow what follows.
    let text = match max_rows {
        Some(cap) => format!(
            "DECLARE {name} NO SCROLL CURSOR FOR {sql}\n;\nFETCH FORWARD {} FROM {name}",
            cap.saturating_add(1)
        ),
        None => {
            format!("PREPARE {name} AS {sql}\n;\nEXECUTE {name}{arguments};\nDEALLOCATE {name}")
        }
    };
    let messages = match tx.simple_query(&text) {
        Ok(messages) => messages,
        Err(source) => {
            drop(tx);
            if max_rows.is_none() {
                // Prepared before the EXECUTE failed, it would stay: best effort, it goes.
                let _ = client.batch_execute(&format!("DEALLOCATE {name}"));
            }
            return Err(failed("the statement")(source));
        }
    };
    let mut rows = Vec::new();
    for message in messages {
        if let SimpleQueryMessage::Row(row) = message {
            let values = columns
                .iter()
                .enumerate()
                .map(|(i, (_, ty))| value_of(row.get(i), ty))
                .collect();
            rows.push(values);
        }
    }
    // Dropping the transaction rolls it back; said here, not left to the drop.
    tx.rollback()
        .map_err(failed("cannot end the transaction"))?;
    Ok((columns.into_iter().map(|(name, _)| name).collect(), rows))
}

/// `text` as a SQL string literal: quotes doubled (the server's `standard_conforming_strings`,
/// on since PostgreSQL 9.1, reads backslashes as they are).
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// A value as PostgreSQL wrote it in the text format, read as the column's type says.
fn value_of(text: Option<&str>, ty: &Type) -> Value {
    let Some(text) = text else {
        return Value::Null;
    };
    let number = match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 | Type::OID => text.parse().ok().map(Value::Integer),
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => text
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Value::Real),
        Type::BOOL => Some(Value::Integer(i64::from(text == "t"))),
        _ => None,
    };
    number.unwrap_or_else(|| Value::Text(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_read_by_their_columns_type() {
        assert_eq!(value_of(Some("42"), &Type::INT8), Value::Integer(42));
        assert_eq!(value_of(Some("1.5"), &Type::NUMERIC), Value::Real(1.5));
        assert_eq!(
            value_of(Some("NaN"), &Type::NUMERIC),
            Value::Text("NaN".into())
        );
        assert_eq!(value_of(Some("t"), &Type::BOOL), Value::Integer(1));
        assert_eq!(
            value_of(Some("{1,2}"), &Type::INT4_ARRAY),
            Value::Text("{1,2}".into())
        );
        assert_eq!(value_of(None, &Type::TEXT), Value::Null);
    }

    #[test]
    fn a_literal_keeps_its_quotes_inside() {
        assert_eq!(literal("it's"), "'it''s'");
        assert_eq!(literal("a\\b"), "'a\\b'");
    }
}
