//! The summaries of `cmstore summarize` (and of the dashboard, which shows the same figures):
//! one `SELECT` per kind of row, over the views of migrations 0002/0003 (`v_session_summary`,
//! `v_session_tools`, `v_sessions`), 0014 (`v_usage*`: real tokens and cost;
//! `estimated_tokens` is vstack's payload size / 4, not usage) and 0016 (`v_daily` over the
//! daily rollup, the usage rollup), so `cmstore query` against the same view gives the same
//! figures. The report filters choose rows as [`plan`] says; [`readable_spec`] is the table a
//! person reads on a terminal.

use rusqlite::types::Value;

pub use super::plan::Plan;
use super::plan::{
    in_sessions, int_param, merge_params, session_conditions, where_of, JOINED_USAGE, ROLLUP_SUMS,
};
use crate::read::report::{self, col, optional_col, Column, Shown};
use crate::read::sessions::{self, Filters};
use crate::store::read_only::{Param, ReadOnlyDb};

/// What one summary row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// One row per session (default)
    Session,
    /// One row per tool
    Tool,
    /// One row per day, in the local zone (UTC with `--utc`)
    Day,
    /// One row per agent
    Agent,
    /// One row per model: real token usage and cost (from the transcripts)
    Model,
    /// One row per check (format, markdown, security): runs, failures, findings
    Check,
}

/// The token columns a readable table's `tokens` sums (the team store's reports too).
pub const TOKENS: &[&str] = &[
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
];

/// Columns of `--by session`: `v_session_summary` without its raw epoch-ms sort keys.
pub const SESSION_COLUMNS: &str = "session_id, agent, model, cwd, start, \"end\", duration_ms, \
     ended, prompts, turns, subagent_turns, tool_uses, tool_failures, tools, delegations, delegated_to, \
     estimated_tokens, unknown_total, unknown_breakdown";

/// The usage columns of `v_session_usage`, `v_daily_usage` and `v_agents_usage` (migration
/// 0011), after the hook figures.
pub const USAGE_COLUMNS: &str = "responses, input_tokens, output_tokens, cache_write_tokens, \
     cache_read_tokens, cost_usd, unpriced";

/// A tool's failure rate, the one definition of every report (the dashboard, `--by tool`, the
/// `tool_failure_rate` recipe): failed calls among the finished ones (succeeded or failed),
/// NULL when none finished. Denied, refused, abandoned and unfinished calls are counted apart.
pub const FAILURE_RATE: &str =
    "round(1.0 * sum(failed) / nullif(sum(succeeded) + sum(failed), 0), 4) AS failure_rate";

/// The statement for `by` over what `filters` choose (`filters.session` a full id).
///
/// `--since` and `--until` choose the sessions active in that time for `--by session`, `tool`
/// and `agent`; the days from `--since`'s day to `--until`'s for `--by day`; the responses in
/// that time for `--by model`. `--agent`, `--project` and `--session` choose sessions.
pub fn plan(by: By, filters: &Filters) -> Plan {
    match by {
        By::Session if filters.since.is_some() || filters.until.is_some() => {
            session_window_plan(filters)
        }
        By::Session => {
            let (wheres, params) = session_conditions(filters);
            Plan {
                sql: format!(
                    "SELECT {SESSION_COLUMNS}, {USAGE_COLUMNS}\nFROM v_session_usage{}\n\
                     ORDER BY last_seen DESC, session_id",
                    where_of(&wheres)
                ),
                params,
            }
        }
        // The same figures as v_tools, summed over the chosen sessions (total() and CAST: a
        // sum past the integer range saturates instead of failing).
        By::Tool => {
            let (chosen, params) = in_sessions("session_id", filters);
            Plan {
                sql: format!(
                    "SELECT tool_name, sum(calls) AS calls, sum(succeeded) AS succeeded, \
                     sum(failed) AS failed, sum(unfinished) AS unfinished, \
                     CASE WHEN sum(timed) > 0 THEN CAST(total(total_ms) AS INTEGER) END AS total_ms, \
                     CAST(total(total_ms) / nullif(sum(timed), 0) AS INTEGER) AS avg_ms, \
                     max(max_ms) AS max_ms, sum(denied) AS denied, sum(refused) AS refused, \
                     sum(abandoned) AS abandoned, {FAILURE_RATE}\n\
                     FROM v_session_tools{}\nGROUP BY tool_name\nORDER BY calls DESC, tool_name",
                    where_of(&Vec::from_iter(chosen))
                ),
                params,
            }
        }
        By::Day => super::days::plan(filters),
        By::Agent => agent_plan(filters),
        By::Model => model_plan(filters),
        By::Check => check_plan(filters),
    }
}

/// `--by session --since/--until`: the sessions active in the window, each with the usage of
/// its responses in the window ([`window_parts`]), not of its whole life: a session that ran
/// for a week costs a day's worth in `--since 24h`.
fn session_window_plan(filters: &Filters) -> Plan {
    let (parts, mut params) = window_parts(filters);
    let (wheres, more) = session_conditions(filters);
    merge_params(&mut params, more);
    Plan {
        sql: format!(
            "{parts},\nw AS (SELECT session_id AS usage_session, {ROLLUP_SUMS} FROM parts \
             GROUP BY session_id)\n\
             SELECT {SESSION_COLUMNS}, {JOINED_USAGE}\n\
             FROM v_session_summary LEFT JOIN w u ON u.usage_session = session_id{}\n\
             ORDER BY last_seen DESC, session_id",
            where_of(&wheres)
        ),
        params,
    }
}

/// `--by check`: the check results, which live in their events' lines (`check`,
/// docs/checks.md), in the chosen time, agent, project and session.
fn check_plan(filters: &Filters) -> Plan {
    let (wheres, params) = filters.event_conditions();
    let mut conditions = vec!["hook_type = 'CheckResult'".to_string()];
    conditions.extend(wheres.into_iter().map(str::to_string));
    Plan {
        sql: format!(
            "SELECT json_extract(entry, '$.check.name') AS \"check\", count(*) AS runs, \
             sum(json_extract(entry, '$.check.status') = 'passed') AS passed, \
             sum(json_extract(entry, '$.check.status') = 'failed') AS failed, \
             sum(json_extract(entry, '$.check.status') = 'timed_out') AS timed_out, \
             sum(json_extract(entry, '$.check.status') = 'error') AS errors, \
             sum(coalesce(json_extract(entry, '$.check.blocked'), 0)) AS blocked, \
             sum(coalesce(json_array_length(entry, '$.check.findings'), 0)) AS findings, \
             CAST(avg(json_extract(entry, '$.check.durationMs')) AS INTEGER) AS avg_ms, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(ts) / 1000, 'unixepoch') AS last_run\n\
             FROM events{}\nGROUP BY 1\nORDER BY 1",
            where_of(&conditions)
        ),
        params,
    }
}

/// `--by agent`: v_agents_usage, over the chosen sessions when any filter is set.
fn agent_plan(filters: &Filters) -> Plan {
    let (wheres, params) = session_conditions(filters);
    if wheres.is_empty() {
        return Plan {
            sql: "SELECT *\nFROM v_agents_usage\nORDER BY sessions DESC, agent".into(),
            params,
        };
    }
    let filter = where_of(&wheres);
    // v_agents_usage over the chosen sessions: their usage, by each response's agent; with
    // --since/--until their responses in that window.
    let (with, usage, params) = match filters.since.is_some() || filters.until.is_some() {
        true => {
            let (parts, mut all) = window_parts(filters);
            merge_params(&mut all, params);
            (format!("{parts}\n"), "parts", all)
        }
        false => (String::new(), "v_usage_rollup", params),
    };
    Plan {
        sql: format!(
            "{with}SELECT a.*, {JOINED_USAGE}\nFROM (\
             SELECT coalesce(agent, '?') AS agent, count(*) AS sessions, \
             sum(events) AS events, sum(prompts) AS prompts, sum(tool_uses) AS tool_uses, \
             sum(tool_failures) AS tool_failures, \
             CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(first_seen) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(last_seen) / 1000, 'unixepoch') AS last_seen\n\
             FROM sessions{filter}\nGROUP BY coalesce(agent, '?')) a\n\
             LEFT JOIN (SELECT coalesce(agent, '?') AS agent, {ROLLUP_SUMS} FROM {usage} \
             WHERE session_id IN (SELECT session_id FROM sessions{filter}) \
             GROUP BY coalesce(agent, '?')) u ON u.agent = a.agent\n\
             ORDER BY a.sessions DESC, a.agent"
        ),
        params,
    }
}

/// `--by model`: v_usage_models over the chosen responses: by their own time, agent and
/// session, and for `--project` the sessions in it; with `--since`/`--until` the responses
/// of that window ([`window_parts`]).
fn model_plan(filters: &Filters) -> Plan {
    if filters.since.is_none() && filters.until.is_none() {
        return model_rollup_plan(filters);
    }
    let (parts, mut params) = window_parts(filters);
    let (mut wheres, _) = chosen_usage(filters);
    for (bound, op) in [(filters.since, ">="), (filters.until, "<")] {
        let name = if op == ">=" { "since" } else { "until" };
        if let Some(ms) = bound {
            wheres.push(format!("ts {op} :{name}"));
            if !params.iter().any(|p| p.name == name) {
                params.push(int_param(name, ms));
            }
        }
    }
    with_premium(
        format!(
            "{parts}\n\
             SELECT coalesce(model, '?') AS model, count(DISTINCT session_id) AS sessions, \
             {ROLLUP_SUMS}, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(first_ts) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(last_ts) / 1000, 'unixepoch') AS last_seen\n\
             FROM parts\nGROUP BY coalesce(model, '?')"
        ),
        &wheres,
        params,
    )
}

/// `models`, a query of one row per model (its column `model`), with the premium requests
/// of each beside (`premium_requests`, NULL for a model with none reported), summed over the
/// responses that `wheres` choose. Few responses report any (only Copilot's), and the
/// partial index `usage_premium` (0034) reads only those; the rollups do not carry them.
fn with_premium(models: String, wheres: &[String], params: Vec<Param>) -> Plan {
    let mut conditions = vec!["premium_requests IS NOT NULL".to_string()];
    conditions.extend(wheres.iter().cloned());
    Plan {
        sql: format!(
            "SELECT m.*, p.premium_requests\nFROM ({models}) m\n\
             LEFT JOIN (SELECT coalesce(model, '?') AS model, \
             round(total(premium_requests), 4) AS premium_requests FROM usage{} \
             GROUP BY coalesce(model, '?')) p ON p.model = m.model\n\
             ORDER BY m.cost_usd IS NULL, m.cost_usd DESC, m.model",
            where_of(&conditions)
        ),
        params,
    }
}

/// The responses of `[--since, --until)` that `--agent`, `--project` and `--session` choose,
/// as a `WITH parts AS (…)` clause of rows with `model`, `session_id`, `agent`, the token
/// sums, `cost_usd`, `responses`, `unpriced`, `first_ts` and `last_ts`: the whole UTC days
/// inside the window from the daily usage rollup (migration 0016), the whole hours of its edge
/// days from the hourly one (0020), and only the responses of its partial edge hours from
/// `usage` itself (a range of `usage_ts` each). Their sums are those of a `GROUP BY` over
/// every response in the window, read from a few rows per day and hour.
fn window_parts(filters: &Filters) -> (String, Vec<Param>) {
    let (wheres, mut params) = chosen_usage(filters);
    let window = Window::new(filters.since, filters.until);
    let mut parts = Vec::new();
    let mut part = |from: &str, range: Vec<String>, groups: &str| {
        let mut conditions = range;
        conditions.extend(wheres.iter().cloned());
        parts.push(format!(
            "SELECT model, session_id, agent, input_tokens, output_tokens, cache_write_tokens, \
             cache_read_tokens, cost_usd, {groups} FROM {from}{}",
            where_of(&conditions)
        ));
    };
    let groups = "responses, unpriced, first_ts, last_ts";
    if let Some(days) = window.days {
        let range = bounded(&mut params, days, ["first_day", "last_day"], |op, n| {
            format!("day {op} date(:{n} * 86400, 'unixepoch')")
        });
        part("v_usage_rollup", range, groups);
    }
    for (i, hours) in window.hours.into_iter().enumerate() {
        let names = [format!("first_hour_{i}"), format!("last_hour_{i}")];
        let range = bounded(&mut params, hours, names, |op, n| {
            format!("hour_n {op} :{n}")
        });
        part("v_usage_hourly", range, groups);
    }
    for (i, (from, to)) in window.edges.into_iter().enumerate() {
        // An edge's outer bound is the window's own, `:since` or `:until`.
        let mut bound = |ms: i64, given: Option<i64>, name: &str, op: &str| {
            if given == Some(ms) {
                format!("ts {op} :{name}")
            } else {
                let name = format!("edge_{name}_{i}");
                params.push(int_param(&name, ms));
                format!("ts {op} :{name}")
            }
        };
        let range = vec![
            bound(from, filters.since, "since", ">="),
            bound(to, filters.until, "until", "<"),
        ];
        part(
            "v_usage",
            range,
            "1 AS responses, cost_usd IS NULL AS unpriced, ts AS first_ts, ts AS last_ts",
        );
    }
    // `--since` or `--until` on an hour's start bounds no edge.
    let sql = parts.join("\nUNION ALL ");
    params.extend(filters.since.map(|ms| int_param("since", ms)));
    params.extend(filters.until.map(|ms| int_param("until", ms)));
    params.retain(|p| {
        !matches!(p.name.as_str(), "since" | "until") || sql.contains(&format!(":{}", p.name))
    });
    (format!("WITH parts AS ({sql})"), params)
}

/// The conditions of an inclusive range, `condition(">=", first)` and `condition("<=", last)`
/// (none on a side without a bound), their values bound in `params`.
fn bounded<S: AsRef<str>>(
    params: &mut Vec<Param>,
    (lo, hi): (Option<i64>, Option<i64>),
    [first, last]: [S; 2],
    condition: impl Fn(&str, &str) -> String,
) -> Vec<String> {
    let mut range = Vec::new();
    for (name, op, bound) in [(first.as_ref(), ">=", lo), (last.as_ref(), "<=", hi)] {
        if let Some(value) = bound {
            range.push(condition(op, name));
            params.push(int_param(name, value));
        }
    }
    range
}

/// The conditions `--agent`, `--session` and `--project` put on a usage row (of `usage` or of
/// the rollup: both have `agent` and `session_id`), and their parameters.
fn chosen_usage(filters: &Filters) -> (Vec<String>, Vec<Param>) {
    let (wheres, mut params) = Filters {
        session: filters.session.clone(),
        agent: filters.agent.clone(),
        ..Filters::default()
    }
    .conditions();
    let mut wheres: Vec<String> = wheres.into_iter().map(str::to_string).collect();
    let (in_project, more) = in_sessions(
        "session_id",
        &Filters {
            project: filters.project.clone(),
            ..Filters::default()
        },
    );
    wheres.extend(in_project);
    params.extend(more);
    (wheres, params)
}

/// The UTC hour of the time `ts` (epoch ms) as the rollups count it: the hours since 1970 of
/// `ts / 1000` rounded toward zero (as SQLite's `date(ts / 1000, 'unixepoch')` rounds it).
fn hour_of(ts: i64) -> i64 {
    (ts / 1000).div_euclid(3600)
}

/// The first time (epoch ms) of the UTC hour `hour`. Up to 1970's first second a time up to
/// 999 ms before the hour's start is one of its times: `ts / 1000` rounds toward zero.
fn hour_start(hour: i64) -> i64 {
    let seconds = hour.saturating_mul(3600);
    let ms = seconds.saturating_mul(1000);
    if seconds > 0 {
        ms
    } else {
        ms.saturating_sub(999)
    }
}

/// An inclusive range of days or hours, open on a side without a bound.
type Span = (Option<i64>, Option<i64>);

/// The window `[since, until)` in the parts that are read from each table.
#[derive(Debug, PartialEq)]
struct Window {
    /// The UTC days (since 1970) all inside the window, from the daily rollup.
    days: Option<Span>,
    /// The hours all inside the window on its edge days, from the hourly rollup.
    hours: Vec<Span>,
    /// The rest, each `[from, to)` in epoch ms (the partial edge hours), from `usage`.
    edges: Vec<(i64, i64)>,
}

impl Window {
    /// The parts of `[since, until)`, a side without a bound open. An hour is inside the
    /// window when all of its times are, a day when all of its hours are.
    fn new(since: Option<i64>, until: Option<i64>) -> Window {
        // The first hour from `since` on, and the last one before `until`.
        let first = since.map(|s| hour_of(s) + i64::from(hour_start(hour_of(s)) != s));
        let last = until.map(|u| hour_of(u) - 1);
        if let (Some(s), Some(u), Some(f), Some(l)) = (since, until, first, last) {
            if f > l {
                // Within two hours at most (or empty, `until` not after `since`): every
                // response is read.
                return Window {
                    days: None,
                    hours: Vec::new(),
                    edges: vec![(s, u)],
                };
            }
        }
        let mut edges: Vec<(i64, i64)> = since
            .zip(first)
            .map(|(s, f)| (s, hour_start(f)))
            .into_iter()
            .collect();
        edges.extend(until.zip(last).map(|(u, l)| (hour_start(l + 1), u)));
        edges.retain(|(from, to)| from < to);
        // The whole days between those hours, and the edge days' hours each side of them.
        let first_day = first.map(|h| -(-h).div_euclid(24));
        let last_day = last.map(|h| (h + 1).div_euclid(24) - 1);
        let (days, mut hours) = match (first_day, last_day) {
            (Some(f), Some(l)) if f > l => (None, vec![(first, last)]),
            _ => {
                let mut hours: Vec<Span> = first
                    .zip(first_day)
                    .map(|(h, d)| (Some(h), Some(d * 24 - 1)))
                    .into_iter()
                    .collect();
                hours.extend(
                    last.zip(last_day)
                        .map(|(h, d)| (Some(d * 24 + 24), Some(h))),
                );
                (Some((first_day, last_day)), hours)
            }
        };
        hours.retain(|span| matches!(span, (Some(lo), Some(hi)) if lo <= hi));
        Window { days, hours, edges }
    }
}

/// `--by model` without a time: v_usage_models (the rollup) over the chosen sessions.
fn model_rollup_plan(filters: &Filters) -> Plan {
    let (wheres, params) = chosen_usage(filters);
    let models = if wheres.is_empty() {
        "SELECT * FROM v_usage_models".to_string()
    } else {
        format!(
            "SELECT coalesce(model, '?') AS model, count(DISTINCT session_id) AS sessions, \
             {ROLLUP_SUMS}, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(first_ts) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(last_ts) / 1000, 'unixepoch') AS last_seen\n\
             FROM v_usage_rollup{}\nGROUP BY coalesce(model, '?')",
            where_of(&wheres)
        )
    };
    with_premium(models, &wheres, params)
}

/// The raw columns of each summary whose values add up to a total (its `total` row also adds
/// the tokens and the cost): not a day's sessions (one session spans days), nor averages,
/// maxima or times.
pub fn summed_columns(by: By) -> &'static [&'static str] {
    match by {
        By::Session => &["prompts", "tool_uses", "tool_failures"],
        By::Tool => &[
            "calls",
            "succeeded",
            "failed",
            "denied",
            "unfinished",
            "total_ms",
        ],
        By::Day => &[
            "events",
            "prompts",
            "tool_uses",
            "tool_failures",
            "responses",
        ],
        By::Agent => &[
            "sessions",
            "events",
            "prompts",
            "tool_uses",
            "tool_failures",
        ],
        By::Check => &[
            "runs",
            "passed",
            "failed",
            "timed_out",
            "errors",
            "blocked",
            "findings",
        ],
        By::Model => &[
            "responses",
            "input_tokens",
            "output_tokens",
            "cache_write_tokens",
            "cache_read_tokens",
            "premium_requests",
        ],
    }
}

/// The readable table of each summary: what fits 100 columns, in human units.
pub fn readable_spec(
    by: By,
) -> (
    &'static [Column],
    &'static [&'static str],
    &'static [&'static str],
) {
    use Shown::*;
    match by {
        By::Session => (
            {
                const COLUMNS: &[Column] = &[
                    col("session", Session("session_id")),
                    col("agent", Raw("agent")),
                    col("project", Project("cwd")),
                    col("last", Ago("end")),
                    col("lasted", Duration("duration_ms")),
                    col("prompts", Raw("prompts")),
                    col("tools", Raw("tool_uses")),
                    col("failed", Raw("tool_failures")),
                    col("tokens", Sum(TOKENS)),
                    col("cost", Cost),
                ];
                COLUMNS
            },
            &["agent", "project"],
            &["lasted", "tokens", "cost"],
        ),
        By::Tool => (
            {
                const COLUMNS: &[Column] = &[
                    col("tool", Raw("tool_name")),
                    col("calls", Raw("calls")),
                    col("ok", Raw("succeeded")),
                    col("failed", Raw("failed")),
                    col("denied", Raw("denied")),
                    col("unfinished", Raw("unfinished")),
                    col("fail %", Percent("failure_rate")),
                    col("time", Duration("total_ms")),
                    col("avg", Duration("avg_ms")),
                    col("max", Duration("max_ms")),
                ];
                COLUMNS
            },
            &["tool"],
            &["fail %", "time", "avg", "max"],
        ),
        By::Day => (
            {
                const COLUMNS: &[Column] = &[
                    col("day", Raw("day")),
                    col("sessions", Raw("sessions")),
                    col("events", Count("events")),
                    col("prompts", Raw("prompts")),
                    col("tools", Raw("tool_uses")),
                    col("failed", Raw("tool_failures")),
                    col("responses", Raw("responses")),
                    col("tokens", Sum(TOKENS)),
                    col("cost", Cost),
                ];
                COLUMNS
            },
            &[],
            &["events", "tokens", "cost"],
        ),
        By::Agent => (
            {
                const COLUMNS: &[Column] = &[
                    col("agent", Raw("agent")),
                    col("sessions", Raw("sessions")),
                    col("events", Count("events")),
                    col("prompts", Raw("prompts")),
                    col("tools", Raw("tool_uses")),
                    col("failed", Raw("tool_failures")),
                    col("tokens", Sum(TOKENS)),
                    col("cost", Cost),
                    col("last", Ago("last_seen")),
                ];
                COLUMNS
            },
            &["agent"],
            &["events", "tokens", "cost"],
        ),
        By::Check => (
            {
                const COLUMNS: &[Column] = &[
                    col("check", Raw("check")),
                    col("runs", Raw("runs")),
                    col("passed", Raw("passed")),
                    col("failed", Raw("failed")),
                    col("timed out", Raw("timed_out")),
                    col("errors", Raw("errors")),
                    col("blocked", Raw("blocked")),
                    col("findings", Raw("findings")),
                    col("avg", Duration("avg_ms")),
                    col("last", Ago("last_run")),
                ];
                COLUMNS
            },
            &["check"],
            &[
                "runs",
                "passed",
                "failed",
                "timed out",
                "errors",
                "blocked",
                "findings",
                "avg",
            ],
        ),
        By::Model => (
            {
                const COLUMNS: &[Column] = &[
                    col("model", Raw("model")),
                    col("sessions", Raw("sessions")),
                    col("responses", Raw("responses")),
                    col("input", Count("input_tokens")),
                    col("output", Count("output_tokens")),
                    col("cache w", Count("cache_write_tokens")),
                    col("cache r", Count("cache_read_tokens")),
                    col("cost", Cost),
                    optional_col("premium", Decimal("premium_requests")),
                    col("last", Ago("last_seen")),
                ];
                COLUMNS
            },
            &["model"],
            &["input", "output", "cache w", "cache r", "cost", "premium"],
        ),
    }
}

/// The session `given` names: [`sessions::resolve`], else an id that only usage rows carry
/// (a transcript imported without hook events).
pub fn resolve_session(db: &ReadOnlyDb, given: &str) -> anyhow::Result<String> {
    match sessions::resolve(db, given) {
        Err(sessions::ResolveError::NotFound(_)) => {
            let (_, rows) = report::fetch(
                db,
                "SELECT 1 FROM usage WHERE session_id = :id LIMIT 1",
                &[Param {
                    name: "id".into(),
                    value: Value::Text(given.to_string()),
                }],
            )?;
            if rows.is_empty() {
                Err(sessions::ResolveError::NotFound(given.to_string()).into())
            } else {
                Ok(given.to_string())
            }
        }
        other => Ok(other?),
    }
}

/// What an empty summary has none of, and where such rows come from when that is not plain.
pub fn nothing_of(by: By) -> (&'static str, Option<&'static str>) {
    match by {
        By::Session | By::Agent => ("sessions", None),
        By::Tool => ("tool calls", None),
        By::Day => ("events", None),
        By::Model => (
            "responses with token usage",
            Some("token usage is read from the agents' transcripts: docs/usage.md"),
        ),
        By::Check => (
            "check results",
            Some("checks run once [checks] is set in cmstore.toml: docs/checks.md"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Filters {
        Filters {
            since: Some(5),
            until: Some(9),
            agent: Some("claude".into()),
            project: Some("web".into()),
            session: Some("x'; drop".into()),
        }
    }

    #[test]
    fn plans_bind_every_value_and_never_inline_it() {
        for by in [
            By::Session,
            By::Tool,
            By::Day,
            By::Agent,
            By::Model,
            By::Check,
        ] {
            let p = plan(by, &all());
            assert!(!p.sql.contains("drop") && !p.sql.contains("web"), "{by:?}");
            let mut names: Vec<&str> = p.params.iter().map(|p| p.name.as_str()).collect();
            names.sort_unstable();
            // `--by day` binds the days (and their hours) that --since and --until fall on.
            let time: &[&str] = match by {
                By::Day => &["end_hour", "first_day", "first_hour", "last_day"],
                _ => &["since", "until"],
            };
            let mut expected = vec!["agent", "project", "session"];
            expected.extend(time);
            expected.sort_unstable();
            assert_eq!(names, expected, "{by:?}");
            for name in names {
                assert!(p.sql.contains(&format!(":{name}")), "{by:?} {name}");
            }
        }
        let p = plan(By::Session, &Filters::default());
        assert!(p.params.is_empty() && !p.sql.contains("WHERE"));
    }

    #[test]
    fn each_summary_reads_what_its_filters_name() {
        let since = Filters {
            since: Some(5),
            ..Filters::default()
        };
        assert!(plan(By::Session, &since)
            .sql
            .contains("WHERE last_seen >= :since"));
        // Days come from the hourly rollups; events and responses only for the hours a day
        // begins inside.
        let p = plan(By::Day, &since);
        assert!(p
            .sql
            .contains("FROM hourly_sessions\nWHERE hour_n >= :first_hour"));
        assert!(p.sql.contains("FROM split s JOIN events e"), "{}", p.sql);
        let p = plan(By::Day, &all());
        assert!(p.sql.contains("k.day <= :last_day"), "{}", p.sql);
        // Models in a window cutting hours: the whole days from the daily rollup, the whole
        // hours of the two edge days from the hourly one, the two edge hours' responses from
        // `usage`, each a range of `ts`, all five of the chosen sessions.
        let ms = |iso: &str| crate::support::timespec::parse_point(iso, 0).unwrap();
        let cut = Filters {
            since: Some(ms("2026-01-01T12:30:00Z")),
            until: Some(ms("2026-01-03T06:15:00Z")),
            ..all()
        };
        let p = plan(By::Model, &cut);
        let chosen = "agent = :agent AND session_id = :session AND session_id IN \
                      (SELECT session_id FROM sessions WHERE";
        for (from, count) in [
            ("FROM v_usage_rollup\nWHERE day >= date(:first_day", 1),
            ("FROM v_usage_hourly\nWHERE hour_n >= :first_hour_", 2),
            ("FROM v_usage\nWHERE ts >= :", 2),
        ] {
            assert_eq!(p.sql.matches(from).count(), count, "{from}: {}", p.sql);
        }
        // The premium requests: the window's responses that report any, of the same sessions.
        assert_eq!(p.sql.matches(chosen).count(), 6, "{}", p.sql);
        assert!(
            p.sql.contains(
                "FROM usage\nWHERE premium_requests IS NOT NULL AND agent = :agent AND \
                 session_id = :session AND session_id IN"
            ) && p.sql.contains("AND ts >= :since AND ts < :until GROUP BY"),
            "{}",
            p.sql
        );
        for name in [
            "first_day",
            "first_hour_1",
            "edge_until_0",
            "edge_since_1",
            "until",
        ] {
            assert!(p.params.iter().any(|p| p.name == name), "{name}");
        }
        // Within an hour: the responses of the window, nothing else.
        let p = plan(By::Model, &all());
        assert_eq!(p.sql.matches("UNION ALL").count(), 0, "{}", p.sql);
        assert!(p
            .sql
            .contains("FROM v_usage\nWHERE ts >= :since AND ts < :until AND"));
        let until = Filters {
            until: Some(9),
            ..Filters::default()
        };
        let p = plan(By::Model, &until);
        assert_eq!(p.sql.matches("UNION ALL").count(), 1, "{}", p.sql);
        assert!(!p.sql.contains(":since"), "{}", p.sql);
        let p = plan(By::Agent, &since);
        assert_eq!(p.sql.matches("last_seen >= :since").count(), 2, "{}", p.sql);
        assert!(plan(By::Tool, &Filters::default()).params.is_empty());
    }

    const HOUR: i64 = 3_600_000;

    #[test]
    fn an_hour_starts_where_the_rollups_put_its_first_time() {
        for hour in [-49, -2, -1, 0, 1, 2, 491_028] {
            let start = hour_start(hour);
            assert_eq!(hour_of(start), hour, "{hour}");
            assert_eq!(hour_of(start - 1), hour - 1, "{hour}");
        }
        // `ts / 1000` rounds toward zero: 1970's first hour begins 999 ms before it.
        assert_eq!(hour_start(0), -999);
        assert_eq!(hour_start(1), HOUR);
        assert_eq!(hour_start(-1), -HOUR - 999);
    }

    #[test]
    fn a_window_is_whole_days_whole_hours_and_the_partial_edge_hours() {
        let day0 = 20_454 * 24; // the first hour of 2026-01-01
        let at = |hour: i64, ms: i64| hour * HOUR + ms;
        // 2026-01-01T12:30 to 2026-01-03T06:15: one whole day, 11 + 6 whole hours.
        let w = Window::new(Some(at(day0 + 12, HOUR / 2)), Some(at(day0 + 54, HOUR / 4)));
        assert_eq!(w.days, Some((Some(20_455), Some(20_455))));
        assert_eq!(
            w.hours,
            [
                (Some(day0 + 13), Some(day0 + 23)),
                (Some(day0 + 48), Some(day0 + 53))
            ]
        );
        assert_eq!(
            w.edges,
            [
                (at(day0 + 12, HOUR / 2), at(day0 + 13, 0)),
                (at(day0 + 54, 0), at(day0 + 54, HOUR / 4))
            ]
        );
        // On whole hours and days: nothing from `usage`, no hours on a whole edge day.
        let w = Window::new(Some(at(day0, 0)), Some(at(day0 + 48, 0)));
        assert_eq!(
            (w.days, w.hours.len(), w.edges.len()),
            (Some((Some(20_454), Some(20_455))), 0, 0)
        );
        // Inside one day: its whole hours, no day.
        let w = Window::new(Some(at(day0 + 1, 1)), Some(at(day0 + 5, 0)));
        assert_eq!(
            (w.days, w.hours.clone()),
            (None, vec![(Some(day0 + 2), Some(day0 + 4))])
        );
        assert_eq!(w.edges, [(at(day0 + 1, 1), at(day0 + 2, 0))]);
        // Across one hour's end: both partial hours in one range; an empty window alike.
        for (since, until) in [(at(day0, 1), at(day0 + 1, 1)), (at(day0, 9), at(day0, 2))] {
            let w = Window::new(Some(since), Some(until));
            assert!(w.days.is_none() && w.hours.is_empty());
            assert_eq!(w.edges, [(since, until)]);
        }
        // One side only: the days open on the other.
        let w = Window::new(None, Some(at(day0 + 30, 5)));
        assert_eq!(w.days, Some((None, Some(20_454))));
        assert_eq!(w.hours, [(Some(day0 + 24), Some(day0 + 29))]);
        assert_eq!(w.edges, [(at(day0 + 30, 0), at(day0 + 30, 5))]);
        let w = Window::new(Some(at(day0 + 30, 0)), None);
        assert_eq!(w.days, Some((Some(20_456), None)));
        assert_eq!(w.hours, [(Some(day0 + 30), Some(day0 + 47))]);
        assert!(w.edges.is_empty());
    }
}
