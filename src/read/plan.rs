//! What the summaries share: the statement a summary runs ([`Plan`]) and the SQL pieces its
//! planners put together (`summaries` for every kind of row, `days` for `--by day`).

use rusqlite::types::Value;

use super::sessions::Filters;
use crate::store::read_only::Param;

/// The usage sums of groups of `v_usage_rollup` rows (migration 0016), each already a sum of
/// responses (a `usage` row counts as a group of one): real tokens from the transcripts and
/// their cost (`cost_usd` covers the priced responses; `unpriced` counts the others).
pub const ROLLUP_SUMS: &str = "sum(responses) AS responses, \
     CAST(total(input_tokens) AS INTEGER) AS input_tokens, \
     CAST(total(output_tokens) AS INTEGER) AS output_tokens, \
     CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens, \
     CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens, \
     round(sum(cost_usd), 6) AS cost_usd, sum(unpriced) AS unpriced";

/// The usage columns a row gets from a joined usage group `u`: zero without usage, the cost
/// NULL then (as the views do).
pub const JOINED_USAGE: &str = "coalesce(u.responses, 0) AS responses, \
     coalesce(u.input_tokens, 0) AS input_tokens, coalesce(u.output_tokens, 0) AS output_tokens, \
     coalesce(u.cache_write_tokens, 0) AS cache_write_tokens, \
     coalesce(u.cache_read_tokens, 0) AS cache_read_tokens, u.cost_usd, \
     coalesce(u.unpriced, 0) AS unpriced";

/// The statement behind a summary, and its parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The `SELECT`.
    pub sql: String,
    /// Values of its named parameters.
    pub params: Vec<Param>,
}

/// `conditions` joined into a `WHERE` clause on its own line (empty without any).
pub fn where_of(conditions: &[String]) -> String {
    if conditions.is_empty() {
        String::new()
    } else {
        format!("\nWHERE {}", conditions.join(" AND "))
    }
}

/// The sessions `filters` choose as conditions over a `sessions` row, and their parameters;
/// none when nothing is filtered.
pub fn session_conditions(filters: &Filters) -> (Vec<String>, Vec<Param>) {
    let (wheres, params) = filters.conditions();
    (wheres.into_iter().map(str::to_string).collect(), params)
}

/// `column IN (the chosen sessions)`, when `filters` choose any.
pub fn in_sessions(column: &str, filters: &Filters) -> (Option<String>, Vec<Param>) {
    let (wheres, params) = filters.conditions();
    if wheres.is_empty() {
        return (None, params);
    }
    (
        Some(format!(
            "{column} IN (SELECT session_id FROM sessions WHERE {})",
            wheres.join(" AND ")
        )),
        params,
    )
}

/// Adds `more` to `params`, leaving out a name already bound (`:since` in two clauses).
pub fn merge_params(params: &mut Vec<Param>, more: Vec<Param>) {
    for p in more {
        if !params.iter().any(|q| q.name == p.name) {
            params.push(p);
        }
    }
}

/// A named integer parameter.
pub fn int_param(name: &str, value: i64) -> Param {
    Param {
        name: name.into(),
        value: Value::Integer(value),
    }
}
