//! Writing many rows in one statement: SQLite keeps each writing statement's undo (a
//! statement journal, which triggers and upserts make it keep) by copying each page the
//! statement changes, once per statement. Rows written one statement each copy the same
//! pages again for every row; a statement of many rows copies them once (an import spent a
//! quarter of its time so: BENCHMARKS.md).

use std::sync::OnceLock;

use rusqlite::types::{ToSqlOutput, Value, ValueRef};

/// A text parameter, borrowed; `NULL` for none.
pub fn text(t: Option<&str>) -> ToSqlOutput<'_> {
    match t {
        Some(t) => ToSqlOutput::Borrowed(ValueRef::Text(t.as_bytes())),
        None => ToSqlOutput::Owned(Value::Null),
    }
}

/// An integer parameter; `NULL` for none.
pub fn int(n: Option<i64>) -> ToSqlOutput<'static> {
    ToSqlOutput::Owned(n.map_or(Value::Null, Value::Integer))
}

/// Rows a statement of [`ManyRows`] writes at most, in the writers that chunk.
pub const ROWS_PER_STATEMENT: usize = 64;

/// A one-row insert of `columns` columns, written many rows at a time.
pub struct ManyRows {
    one_row: &'static str,
    columns: usize,
    /// The statement of [`ROWS_PER_STATEMENT`] rows, made once.
    full: OnceLock<String>,
}

impl ManyRows {
    /// `one_row`, an `INSERT … VALUES (?1, …, ?columns) …`, written many rows at a time.
    pub const fn new(one_row: &'static str, columns: usize) -> ManyRows {
        ManyRows {
            one_row,
            columns,
            full: OnceLock::new(),
        }
    }

    /// Writes `rows` rows (at most [`ROWS_PER_STATEMENT`]) in one statement, `values` theirs
    /// in order.
    pub fn execute(
        &self,
        conn: &rusqlite::Connection,
        rows: usize,
        values: Vec<ToSqlOutput<'_>>,
    ) -> rusqlite::Result<usize> {
        let values = rusqlite::params_from_iter(values);
        if rows == ROWS_PER_STATEMENT {
            let sql = self
                .full
                .get_or_init(|| repeat_values(self.one_row, self.columns, rows));
            return conn.prepare_cached(sql)?.execute(values);
        }
        // A chunk's tail is of any length: not kept in the statement cache, where it would
        // push out the statements used again.
        conn.prepare(&repeat_values(self.one_row, self.columns, rows))?
            .execute(values)
    }
}

/// `sql`, a one-row `INSERT … VALUES (?1, …, ?columns) …`, with its `VALUES` tuple repeated
/// for `rows` rows, numbered on (`?columns+1` the second row's first).
fn repeat_values(sql: &str, columns: usize, rows: usize) -> String {
    let (head, rest) = sql.split_once("VALUES").expect("an insert with values");
    let tail = &rest[rest.find(')').expect("a values tuple") + 1..];
    let tuples: Vec<String> = (0..rows)
        .map(|row| {
            let numbers: Vec<String> = (1..=columns)
                .map(|i| format!("?{}", row * columns + i))
                .collect();
            format!("({})", numbers.join(", "))
        })
        .collect();
    format!("{head}VALUES {}{tail}", tuples.join(",\n      "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_values_repeat_numbered_on_and_the_rest_stays() {
        let sql =
            "INSERT INTO t(a, b) VALUES (?1, ?2)\n    ON CONFLICT(a) DO UPDATE SET b = excluded.b";
        assert_eq!(
            repeat_values(sql, 2, 3),
            "INSERT INTO t(a, b) VALUES (?1, ?2),\n      (?3, ?4),\n      (?5, ?6)\n    ON CONFLICT(a) DO UPDATE SET b = excluded.b"
        );
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t(a PRIMARY KEY, b)")
            .unwrap();
        conn.execute(&repeat_values(sql, 2, 3), [1, 10, 2, 20, 1, 11])
            .unwrap();
        let b: i64 = conn
            .query_row("SELECT b FROM t WHERE a = 1", [], |r| r.get(0))
            .unwrap();
        assert_eq!(b, 11, "a later row of the statement updates an earlier one");
    }
}
