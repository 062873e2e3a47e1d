//! `cmstore usage`: each session's counted token usage beside what its agent says it used
//! (the `v_usage_check` view of migration 0039), raw for scripts or as a readable table in
//! which a figure that differs shows the agent's beside cmstore's.

use rusqlite::types::Value;

use crate::read::plan::{in_sessions, where_of};
use crate::read::report;
use crate::read::sessions::Filters;
use crate::store::read_only::{QueryError, ReadOnlyDb};
use crate::support::human;

/// The verdicts that mean cmstore's count and the agent's own figures disagree: `--check`
/// shows these and fails on them. `not counted` (requests of a model no transcript shows,
/// such as Claude Code's side requests for a title) is shown by `cmstore usage`, not failed on.
pub const DISAGREEING: &[&str] = &["differs", "only counted"];

/// How long after its latest figure a session is taken to be still going (its transcript and
/// the agent's figures may be read minutes apart): `--check` leaves it out, but for a session
/// named with `--session`.
pub const SETTLING_MS: i64 = 10 * 60 * 1000;

/// The rows of `v_usage_check` for the sessions `filters` choose, the session with the newest
/// figure first.
pub fn fetch(
    db: &ReadOnlyDb,
    filters: &Filters,
) -> Result<(Vec<String>, Vec<Vec<Value>>), QueryError> {
    let (sessions, params) = in_sessions("session_id", filters);
    let conditions: Vec<String> = sessions.into_iter().collect();
    let sql = format!(
        "SELECT * FROM v_usage_check{} \
         ORDER BY max(agent_ts) OVER (PARTITION BY session_id) DESC, session_id, source, \
         model IS NULL, model",
        where_of(&conditions)
    );
    report::fetch(db, &sql, &params)
}

/// Each session's latest figure of its agent (epoch ms), over every row of it in `rows`.
pub fn latest_figures(
    columns: &[String],
    rows: &[Vec<Value>],
) -> std::collections::HashMap<String, i64> {
    let at = |name: &str| columns.iter().position(|c| c == name);
    let mut latest = std::collections::HashMap::new();
    let (Some(session), Some(ts)) = (at("session_id"), at("agent_ts")) else {
        return latest;
    };
    for row in rows {
        if let (Value::Text(id), Value::Integer(ts)) = (&row[session], &row[ts]) {
            let seen = latest.entry(id.clone()).or_insert(*ts);
            *seen = (*seen).max(*ts);
        }
    }
    latest
}

/// Whether `row` (of `columns`) is one of [`DISAGREEING`] and settled: its session's latest
/// figure (`latest`, [`latest_figures`]) is older than [`SETTLING_MS`] before `now`, or its
/// session was `named` (`--session`).
pub fn disagrees(
    columns: &[String],
    row: &[Value],
    now: i64,
    named: bool,
    latest: &std::collections::HashMap<String, i64>,
) -> bool {
    let at = |name: &str| columns.iter().position(|c| c == name).map(|i| &row[i]);
    let verdict =
        matches!(at("verdict"), Some(Value::Text(v)) if DISAGREEING.contains(&v.as_str()));
    let session_ts = match at("session_id") {
        Some(Value::Text(id)) => latest.get(id).copied(),
        _ => None,
    };
    let settled = named || session_ts.is_none_or(|ts| now - ts >= SETTLING_MS);
    verdict && settled
}

/// How many sessions `rows` cover, and how many of them have a row `failing` says fails.
pub fn tally(
    columns: &[String],
    rows: &[Vec<Value>],
    failing: impl Fn(&[Value]) -> bool,
) -> (usize, usize) {
    let Some(session) = columns.iter().position(|c| c == "session_id") else {
        return (0, 0);
    };
    let mut all = std::collections::BTreeMap::<String, bool>::new();
    for row in rows {
        let id = match &row[session] {
            Value::Text(id) => id.clone(),
            _ => String::new(),
        };
        *all.entry(id).or_default() |= failing(row);
    }
    (all.len(), all.values().filter(|d| **d).count())
}

/// The readable table's headers.
/// (The source names the agent: `copilot-shutdown`, `claude-otlp-requests`; the machine
/// formats have `agent` too.)
pub const READABLE_COLUMNS: &[&str] = &[
    "session", "says", "model", "verdict", "resp", "input", "output", "cache r", "cache w", "cost",
];

/// The readable table's columns that hold figures, right-aligned: those after `verdict`.
pub const READABLE_RIGHT: &[&str] = READABLE_COLUMNS.split_at(4).1;

/// The columns a narrow terminal may cut: never a figure (a difference is `ours ≠ theirs`).
pub const READABLE_CUTTABLE: &[&str] = &["says", "model"];

/// The readable rows of `rows`: counts as `12.3k`, and where the agent's figure differs from
/// cmstore's, `cmstore ≠ agent` (`12.3k ≠ 12.5k`); a session as its shortest unique prefix
/// among `all_ids` (sorted).
pub fn readable(columns: &[String], rows: &[Vec<Value>], all_ids: &[String]) -> Vec<Vec<Value>> {
    let prefixes = human::unique_prefixes(all_ids, crate::read::sessions::MIN_PREFIX);
    let at = |name: &str| columns.iter().position(|c| c == name);
    rows.iter()
        .map(|row| {
            let get = |name: &str| at(name).map_or(Value::Null, |i| row[i].clone());
            let int = |name: &str| match get(name) {
                Value::Integer(n) => Some(n),
                _ => None,
            };
            let real = |name: &str| match get(name) {
                Value::Real(r) => Some(r),
                Value::Integer(n) => Some(n as f64),
                _ => None,
            };
            let text = |name: &str| match get(name) {
                Value::Text(t) => t,
                _ => String::new(),
            };
            let pair = |ours: Option<String>, theirs: Option<String>| match (ours, theirs) {
                (Some(a), Some(b)) if a != b => format!("{a} ≠ {b}"),
                (a, b) => a.or(b).unwrap_or_default(),
            };
            let tokens = |name: &str| {
                let theirs = int(&format!("agent_{name}")).map(human::count);
                let ours = match text("verdict").as_str() {
                    "not counted" | "by total" => None,
                    _ => int(name).map(human::count),
                };
                // Equal in the shown units but not exactly: the exact figures.
                match (int(name), int(&format!("agent_{name}"))) {
                    (Some(a), Some(b)) if a != b && ours == theirs && ours.is_some() => {
                        format!("{} ≠ {}", human::whole(a), human::whole(b))
                    }
                    _ => pair(ours, theirs),
                }
            };
            let session = text("session_id");
            let short = match all_ids.binary_search(&session) {
                Ok(i) => prefixes[i].clone(),
                Err(_) => session,
            };
            let responses = pair(
                int("responses").filter(|n| *n > 0).map(human::whole),
                int("agent_requests").map(human::whole),
            );
            let cost = pair(
                real("cost_usd").map(human::cost),
                real("agent_cost_usd").map(human::cost),
            );
            [
                short,
                text("source"),
                human::model(&text("model")).to_string(),
                text("verdict"),
                responses,
                tokens("input_tokens"),
                tokens("output_tokens"),
                tokens("cache_read_tokens"),
                tokens("cache_write_tokens"),
                cost,
            ]
            .into_iter()
            .map(Value::Text)
            .collect()
        })
        .collect()
}
