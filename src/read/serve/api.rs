//! The dashboard's data: one function per `/api/…` endpoint, each a JSON value built from the
//! same statements as the commands that print the same figures.
//!
//! - overview and tools: `cmstore summarize --by day|tool` (the same statements,
//!   [`summaries::plan`], so the figures cannot drift apart);
//! - sessions: `cmstore sessions` ([`crate::read::sessions::list_sql`]);
//! - a session: `cmstore show --format json` ([`crate::read::story::load`]), plus its tool calls laid
//!   out for the timeline;
//! - gate: `cmstore gate report` ([`crate::read::gate::report`]);
//! - SQL: `cmstore query`'s guard ([`ReadOnlyDb`]): one read-only statement, a time limit, a
//!   row cap.

use std::collections::BTreeMap;
use std::time::Instant;

use rusqlite::types::Value;
use serde_json::{json, Value as Json};

use crate::model::shorten::cut_text;
use crate::read::gate::{self, tally};
use crate::read::render::{json_objects as objects, json_value};
use crate::read::report;
use crate::read::report::{integer, text};
use crate::read::sessions::{self, Filters};
use crate::read::story;
use crate::read::summaries::{self, By};
use crate::store::read_only::{Param, QueryError, ReadOnlyDb};
use crate::support::human;

/// The statement of `cmstore summarize --by <by> --since <since>` (the dashboard's filters
/// choose only the time).
fn summary(by: By, since: Option<i64>) -> summaries::Plan {
    summaries::plan(
        by,
        &Filters {
            since,
            ..Filters::default()
        },
    )
}

/// Characters of a tool's input or output sent when a timeline bar is clicked.
pub const MAX_CALL_TEXT: usize = 64 * 1024;

/// Rows the SQL page returns when no `max_rows` is asked for (as `cmstore query` on a
/// terminal), and the most it returns at all.
pub const SQL_DEFAULT_ROWS: u64 = 1000;
/// The most rows one SQL request returns (a download too).
pub const SQL_MAX_ROWS: u64 = 100_000;

/// What the store looks like now, cheaply (each figure is read from an index): it changes
/// whenever ingest commits new events or usage, `import` adds usage, or prune deletes rows. The pages poll it and reload their data when it changes.
pub fn version(db: &ReadOnlyDb) -> Result<String, QueryError> {
    let (_, rows) = report::fetch(
        db,
        "SELECT coalesce((SELECT max(seq) FROM events), 0), \
                coalesce((SELECT min(seq) FROM events), 0), \
                (SELECT count(*) FROM usage), coalesce((SELECT max(ts) FROM usage), 0), \
                (SELECT count(*) FROM sessions)",
        &[],
    )?;
    Ok(version_of(&rows))
}

/// A version from the figures of the first of `rows`: `12-1-40-…`.
pub fn version_of(rows: &[Vec<Value>]) -> String {
    let parts: Vec<String> = rows
        .first()
        .map(|r| {
            r.iter()
                .map(|v| integer(v).unwrap_or(0).to_string())
                .collect()
        })
        .unwrap_or_default();
    parts.join("-")
}

/// The overview: figures per day, the top tools, the gate's findings and the busiest
/// projects over `filters`' time range.
pub fn overview(db: &ReadOnlyDb, filters: &Filters) -> Result<Json, QueryError> {
    let days = days(db, filters)?;
    let mut tools = tools(db, filters)?;
    tools.truncate(10);
    let gate = gate_report(db, filters)?;
    let (projects, sessions) = projects(db, filters)?;
    Ok(json!({
        "totals": totals(&days, sessions),
        "days": days,
        "tools": tools,
        "gate": gate,
        "projects": projects,
        "newest_day": newest_day(db)?,
        "zone": crate::support::zone::chosen().label(crate::support::clock::now_ms()),
    }))
}

/// The overview's totals: the sums of its days' figures, and `sessions`.
pub fn totals(days: &[Json], sessions: usize) -> BTreeMap<&'static str, Json> {
    let mut totals = BTreeMap::new();
    for name in [
        "events",
        "prompts",
        "tool_uses",
        "tool_failures",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    ] {
        let sum: i64 = days.iter().filter_map(|d| d[name].as_i64()).sum();
        totals.insert(name, json!(sum));
    }
    // No priced response at all: no cost (as the views say), not $0.
    let costs: Vec<f64> = days.iter().filter_map(|d| d["cost_usd"].as_f64()).collect();
    let cost = (!costs.is_empty()).then(|| costs.iter().fold(0.0, |a, c| a + c));
    totals.insert("cost_usd", json!(cost));
    // The responses without a price: the cost then covers the others only (`+`, or `?`).
    let unpriced: i64 = days.iter().filter_map(|d| d["unpriced"].as_i64()).sum();
    totals.insert("unpriced", json!(unpriced));
    totals.insert("sessions", json!(sessions));
    totals
}

/// The newest day (in the reader's zone, as the days are) with an event or a response in the
/// whole store, whatever the range (two index lookups): a range with nothing in it can say
/// where the data is.
const NEWEST_DAY: &str = "
SELECT cmstore_day(max(ts)) FROM (
  SELECT max(ts) AS ts FROM events UNION ALL SELECT max(ts) FROM usage)";

/// See [`NEWEST_DAY`].
fn newest_day(db: &ReadOnlyDb) -> Result<Option<String>, QueryError> {
    let (_, rows) = report::fetch(db, NEWEST_DAY, &[])?;
    Ok(rows.first().and_then(|r| r.first()).and_then(|v| match v {
        rusqlite::types::Value::Text(day) => Some(day.clone()),
        _ => None,
    }))
}

/// `summarize --by day --since`, less the days at or after `until`.
fn days(db: &ReadOnlyDb, filters: &Filters) -> Result<Vec<Json>, QueryError> {
    let summaries::Plan { sql, params } = summary(By::Day, filters.since);
    let (columns, rows) = report::fetch(db, &sql, &params)?;
    let until_day = filters.until.and_then(|ms| {
        let day = crate::support::zone::chosen().day_of(ms)?;
        Some(day.format("%Y-%m-%d").to_string())
    });
    let days = objects(columns, &rows);
    Ok(days
        .into_iter()
        .filter(|d| match (&until_day, d["day"].as_str()) {
            (Some(until), Some(day)) => day <= until.as_str(),
            _ => true,
        })
        .collect())
}

/// `summarize --by tool --since`: one object per tool, the most called first, with its
/// failure rate (`summaries::FAILURE_RATE`: failed among the finished calls).
pub fn tools(db: &ReadOnlyDb, filters: &Filters) -> Result<Vec<Json>, QueryError> {
    let summaries::Plan { sql, params } = summary(By::Tool, filters.since);
    let (columns, rows) = report::fetch(db, &sql, &params)?;
    Ok(objects(columns, &rows))
}

/// The busiest projects (by events) of the sessions `filters` select, and how many sessions
/// that is.
fn projects(db: &ReadOnlyDb, filters: &Filters) -> Result<(Vec<Json>, usize), QueryError> {
    let (filter, params) = filters.where_clause();
    let (_, rows) = report::fetch(
        db,
        &format!(
            "SELECT cwd, count(*), total(events), total(tool_uses), total(tool_failures), \
             max(last_seen) FROM sessions {filter} GROUP BY cwd"
        ),
        &params,
    )?;
    Ok(busiest(&rows))
}

/// The ten busiest projects (by events) of rows `cwd, sessions, events, tool calls, failures,
/// last seen` (one per working directory: several directories may be one project), and the
/// sessions of all rows.
pub fn busiest(rows: &[Vec<Value>]) -> (Vec<Json>, usize) {
    let mut by_project: BTreeMap<String, [i64; 5]> = BTreeMap::new();
    let mut sessions = 0;
    for r in rows {
        let project = human::project(&text(&r[0]).unwrap_or_default()).to_string();
        let f = |i: usize| match &r[i] {
            Value::Real(x) => *x as i64,
            v => integer(v).unwrap_or(0),
        };
        let p = by_project.entry(project).or_default();
        p[0] += f(1);
        p[1] += f(2);
        p[2] += f(3);
        p[3] += f(4);
        p[4] = p[4].max(f(5));
        sessions += f(1) as usize;
    }
    let mut out: Vec<_> = by_project.into_iter().collect();
    out.sort_by_key(|(_, p)| std::cmp::Reverse(p[1]));
    out.truncate(10);
    let out = out
        .into_iter()
        .map(|(name, p)| {
            json!({"project": name, "sessions": p[0], "events": p[1], "tool_uses": p[2],
                   "tool_failures": p[3], "last_seen": p[4]})
        })
        .collect();
    (out, sessions)
}

/// `cmstore gate report`: the totals and one row per rule, agent and project.
pub fn gate_report(db: &ReadOnlyDb, filters: &Filters) -> Result<Json, QueryError> {
    let (totals, rows) = gate::report(db, filters)?;
    Ok(gate_json(&totals, &rows))
}

/// `cmstore gate report`'s figures as the gate page reads them.
pub fn gate_json(totals: &tally::Totals, rows: &[tally::Row]) -> Json {
    let (columns, rows) = tally::raw(rows);
    json!({
        "totals": {
            "calls": totals.calls,
            "flagged": totals.flagged,
            "denied": totals.denied,
            "unreadable": totals.unreadable,
        },
        "rules": objects(columns, &rows),
    })
}

/// `cmstore sessions --format json` (`--all` when `all`), with each session's shortest unique
/// id prefix added as `short`, and how many sessions that went nowhere it left out
/// (`hidden`).
pub fn sessions(
    db: &ReadOnlyDb,
    filters: &Filters,
    limit: u64,
    all: bool,
) -> Result<Json, QueryError> {
    let (sql, params) = sessions::list_sql(filters, Some(limit), all);
    let hidden = match all {
        true => 0,
        false => sessions::empty_count(db, filters)?,
    };
    let (columns, rows) = report::fetch(db, &sql, &params)?;
    let mut list = objects(columns, &rows);
    add_shorts(&mut list, &sessions::all_ids(db)?);
    let (_, agents) = report::fetch(
        db,
        "SELECT DISTINCT agent FROM sessions WHERE agent IS NOT NULL ORDER BY agent",
        &[],
    )?;
    let agents: Vec<_> = agents.iter().filter_map(|r| text(&r[0])).collect();
    Ok(json!({ "sessions": list, "agents": agents, "hidden": hidden }))
}

/// Adds to each session of `list` the shortest prefix of its id that no other of `ids`
/// (sorted, distinct) shares (`short`).
pub fn add_shorts(list: &mut [Json], ids: &[String]) {
    let prefixes = human::unique_prefixes(ids, sessions::MIN_PREFIX);
    for s in list {
        let id = s["session_id"].as_str().unwrap_or_default().to_string();
        let short = match ids.binary_search(&id) {
            Ok(i) => prefixes[i].clone(),
            Err(_) => id,
        };
        s["short"] = json!(short);
    }
}

/// One session: the story `cmstore show --format json` prints (under `story`), and its tool
/// calls for the timeline (under `calls`), each in a lane: `main`, or the subagent's name.
/// `Ok(None)` when no session has that id or prefix.
pub fn session(db: &ReadOnlyDb, given: &str) -> Result<Option<Json>, QueryError> {
    let id = match sessions::resolve(db, given) {
        Ok(id) => id,
        Err(sessions::ResolveError::Query(e)) => return Err(e),
        Err(_) => return Ok(None),
    };
    let Some(story) = story::load(db, &id, story::Inputs::Whole)? else {
        return Ok(None);
    };
    let (_, rows) = report::fetch(
        db,
        "SELECT c.call_key, coalesce(c.tool_name, '?'), c.start_ts, c.end_ts, c.duration_ms, \
                c.outcome, coalesce(pre.actor_type, post.actor_type), \
                coalesce(pre.actor_name, post.actor_name), \
                pre.risk, pre.decision \
         FROM tool_calls c \
         LEFT JOIN events pre ON pre.id = c.pre_event_id \
         LEFT JOIN events post ON post.id = c.post_event_id \
         WHERE c.session_id = :session \
         ORDER BY coalesce(c.start_ts, c.end_ts), c.call_key",
        &[bind("session", &id)],
    )?;
    let calls = timeline(&rows);
    let story = serde_json::to_value(&story).unwrap_or(Json::Null);
    Ok(Some(json!({ "story": story, "calls": calls })))
}

/// A session's tool calls for the timeline, from rows `key, tool, start, end, duration,
/// outcome, actor type, actor name, risk, decision`: each in a lane, `main` or the subagent's.
pub fn timeline(rows: &[Vec<Value>]) -> Vec<Json> {
    rows.iter()
        .map(|r| {
            let lane = match (text(&r[6]).as_deref(), text(&r[7])) {
                (Some("subagent"), Some(name)) => name,
                (Some("subagent"), None) => "subagent".to_string(),
                _ => "main".to_string(),
            };
            json!({
                "key": text(&r[0]),
                "tool": text(&r[1]),
                "start": integer(&r[2]),
                "end": integer(&r[3]),
                "duration_ms": integer(&r[4]),
                "outcome": text(&r[5]),
                "lane": lane,
                "risk": text(&r[8]),
                "decision": text(&r[9]),
            })
        })
        .collect()
}

/// One call's detail from a row `tool, outcome, duration, start, end, input, output, error,
/// risk, decision` and, where the store knows it, who decided it: long texts cut at
/// [`MAX_CALL_TEXT`].
pub fn call_detail(r: &[Value]) -> Json {
    let long = |v: &Value| match v {
        Value::Null => None,
        Value::Text(t) => Some(cut_text(t, MAX_CALL_TEXT)),
        other => Some(json_value(other).to_string()),
    };
    json!({
        "tool": text(&r[0]),
        "outcome": text(&r[1]),
        "duration_ms": integer(&r[2]),
        "start": integer(&r[3]),
        "end": integer(&r[4]),
        "input": long(&r[5]),
        "output": long(&r[6]),
        "error": long(&r[7]),
        "risk": text(&r[8]),
        "decision": text(&r[9]),
        "decided_by": r.get(10).and_then(text),
    })
}

/// One tool call's input and output, for the timeline's detail pane. `Ok(None)` when the
/// session has no call with that key.
pub fn call(db: &ReadOnlyDb, session: &str, key: &str) -> Result<Option<Json>, QueryError> {
    let (_, rows) = report::fetch(
        db,
        "SELECT coalesce(c.tool_name, '?'), c.outcome, c.duration_ms, c.start_ts, c.end_ts, \
                coalesce(json_extract(pre.entry, '$.toolInput'), \
                         json_extract(post.entry, '$.toolInput')), \
                json_extract(post.entry, '$.toolResponse'), \
                coalesce(json_extract(post.entry, '$.error'), post.tool_result_type), \
                pre.risk, pre.decision, \
                (SELECT d.decided_by FROM v_tool_call_decisions d WHERE d.call_rowid = c.rowid) \
         FROM tool_calls c \
         LEFT JOIN events pre ON pre.id = c.pre_event_id \
         LEFT JOIN events post ON post.id = c.post_event_id \
         WHERE c.session_id = :session AND c.call_key = :key",
        &[bind("session", session), bind("key", key)],
    )?;
    Ok(rows.first().map(|r| call_detail(r)))
}

fn bind(name: &str, value: &str) -> Param {
    Param {
        name: name.into(),
        value: Value::Text(value.to_string()),
    }
}

/// The result of one SQL statement through the read-only guard: its columns, at most
/// `max_rows` rows, whether more were cut, and the time it took.
pub struct SqlResult {
    /// Column names.
    pub columns: Vec<String>,
    /// The rows, at most the cap.
    pub rows: Vec<Vec<Value>>,
    /// More rows existed than were returned.
    pub cut: bool,
    /// Milliseconds spent.
    pub elapsed_ms: u128,
}

/// Runs `sql` through `cmstore query`'s guard (the caller opened `db` with the time limit).
pub fn sql(db: &ReadOnlyDb, sql: &str, max_rows: u64) -> Result<SqlResult, QueryError> {
    let started = Instant::now();
    let mut query = db.prepare(sql)?;
    let columns = query.columns();
    let mut rows = query.run(&[])?;
    let mut out = Vec::new();
    let mut cut = false;
    while let Some(row) = rows.next()? {
        if out.len() as u64 >= max_rows {
            cut = true;
            break;
        }
        out.push(row);
    }
    Ok(SqlResult {
        columns,
        rows: out,
        cut,
        elapsed_ms: started.elapsed().as_millis(),
    })
}

impl SqlResult {
    /// The result as the SQL page reads it.
    pub fn to_json(&self) -> Json {
        let rows: Vec<Json> = self
            .rows
            .iter()
            .map(|r| Json::Array(r.iter().map(json_value).collect()))
            .collect();
        json!({
            "columns": self.columns,
            "rows": rows,
            "cut": self.cut,
            "elapsed_ms": self.elapsed_ms as u64,
        })
    }
}
