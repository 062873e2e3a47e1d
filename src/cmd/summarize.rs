//! `cmstore summarize`: ready-made summaries per session, tool, day, agent or model.
//!
//! Every summary is one `SELECT` over the views of migrations 0002/0003 (`v_session_summary`,
//! `v_session_tools`, `v_sessions`), 0014 (`v_usage*`: real tokens and cost;
//! `estimated_tokens` is vstack's payload size / 4, not usage) and 0016 (`v_daily` over the
//! daily rollup, the usage rollup), so `cmstore query` against the same view gives the same figures;
//! `--show-sql` prints the statement. The report filters (`--since`, `--until`, `--agent`,
//! `--project`, `--session`) are those of every report: see [`plan`] for what each chooses.
//!
//! On a terminal the table is the readable one: the columns that fit 100 columns, in human
//! units (`8m 02s`, `1.8M`, `$12.34`, `2h ago`), the project as the working directory's last
//! component, session ids as the shortest unique prefix that `--session` accepts. `--wide`
//! and the machine formats give every column with raw values.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use rusqlite::types::Value;

use crate::cmd::sessions::ReportFilters;
use crate::paths::Paths;
use crate::render::Format;
use crate::report::{self, col, Column, Shown, Sink};
use crate::sessions::{self, Filters};
use crate::store::read_only::{Param, ReadOnlyDb};

/// What one summary row stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    /// One row per session (default)
    Session,
    /// One row per tool
    Tool,
    /// One row per UTC day
    Day,
    /// One row per agent
    Agent,
    /// One row per model: real token usage and cost (from the transcripts)
    Model,
    /// One row per check (format, markdown, security): runs, failures, findings
    Check,
}

/// Arguments of `cmstore summarize`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub filters: ReportFilters,
    /// Only this session: its id, or a unique prefix of it (as the table shows it)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// One row per session, tool, day, agent, model or check
    #[arg(long, value_enum, default_value_t = By::Session)]
    pub by: By,
    /// Every column, with raw values, in the table too
    #[arg(long)]
    pub wide: bool,
    /// Output format: table, json, jsonl, csv, tsv or markdown [default: table on a
    /// terminal, tsv otherwise]
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<Format>,
    /// Print the SQL that produced the summary on stderr
    #[arg(long)]
    pub show_sql: bool,
}

/// Columns of `--by session`: `v_session_summary` without its raw epoch-ms sort keys.
pub const SESSION_COLUMNS: &str = "session_id, agent, model, cwd, start, \"end\", duration_ms, \
     ended, prompts, turns, subagent_turns, tool_uses, tool_failures, tools, delegations, delegated_to, \
     estimated_tokens, unknown_total, unknown_breakdown";

/// The usage sums of groups of `v_usage_rollup` rows (migration 0016), each already a sum of
/// responses (a `usage` row counts as a group of one): real tokens from the transcripts and
/// their cost (`cost_usd` covers the priced responses; `unpriced` counts the others).
const ROLLUP_SUMS: &str = "sum(responses) AS responses, \
     CAST(total(input_tokens) AS INTEGER) AS input_tokens, \
     CAST(total(output_tokens) AS INTEGER) AS output_tokens, \
     CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens, \
     CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens, \
     round(sum(cost_usd), 6) AS cost_usd, sum(unpriced) AS unpriced";

/// The usage columns of `v_session_usage`, `v_daily_usage` and `v_agents_usage` (migration
/// 0011), after the hook figures.
pub const USAGE_COLUMNS: &str = "responses, input_tokens, output_tokens, cache_write_tokens, \
     cache_read_tokens, cost_usd, unpriced";

/// The usage columns a row gets from a joined usage group `u`: zero without usage, the cost
/// NULL then (as the views do).
const JOINED_USAGE: &str = "coalesce(u.responses, 0) AS responses, \
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
fn where_of(conditions: &[String]) -> String {
    if conditions.is_empty() {
        String::new()
    } else {
        format!("\nWHERE {}", conditions.join(" AND "))
    }
}

/// The sessions `filters` choose as conditions over a `sessions` row, and their parameters;
/// none when nothing is filtered.
fn session_conditions(filters: &Filters) -> (Vec<String>, Vec<Param>) {
    let (wheres, params) = filters.conditions();
    (wheres.into_iter().map(str::to_string).collect(), params)
}

/// `column IN (the chosen sessions)`, when `filters` choose any.
fn in_sessions(column: &str, filters: &Filters) -> (Option<String>, Vec<Param>) {
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

/// The statement for `by` over what `filters` choose (`filters.session` a full id).
///
/// `--since` and `--until` choose the sessions active in that time for `--by session`, `tool`
/// and `agent`; the days from `--since`'s day to `--until`'s for `--by day`; the responses in
/// that time for `--by model`. `--agent`, `--project` and `--session` choose sessions.
pub fn plan(by: By, filters: &Filters) -> Plan {
    match by {
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
                     sum(abandoned) AS abandoned\n\
                     FROM v_session_tools{}\nGROUP BY tool_name\nORDER BY calls DESC, tool_name",
                    where_of(&Vec::from_iter(chosen))
                ),
                params,
            }
        }
        By::Day => day_plan(filters),
        By::Agent => agent_plan(filters),
        By::Model => model_plan(filters),
        By::Check => check_plan(filters),
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

/// `--by day`: from the daily rollup (`v_daily`, `daily_sessions`), never from `events`.
fn day_plan(filters: &Filters) -> Plan {
    let mut params = Vec::new();
    let days = |day: &str| {
        let mut range = Vec::new();
        if filters.since.is_some() {
            range.push(format!("{day} >= date(:since / 1000, 'unixepoch')"));
        }
        if filters.until.is_some() {
            // The days that begin before `until`.
            range.push(format!("{day} <= date((:until - 1) / 1000, 'unixepoch')"));
        }
        range
    };
    params.extend(filters.since.map(|ms| int_param("since", ms)));
    params.extend(filters.until.map(|ms| int_param("until", ms)));
    let by_session = Filters {
        since: None,
        until: None,
        ..filters.clone()
    };
    let (chosen, more) = in_sessions("session_id", &by_session);
    params.extend(more);
    let Some(chosen) = chosen else {
        return Plan {
            sql: format!(
                "SELECT *\nFROM v_daily_usage{}\nORDER BY day",
                where_of(&days("day"))
            ),
            params,
        };
    };
    // v_daily_usage over the chosen sessions: their days in the rollup, their responses.
    let sql = format!(
        "WITH d AS (SELECT date(day_n * 86400, 'unixepoch') AS day, sum(events) AS events, \
         count(DISTINCT session_id) AS sessions, sum(prompts) AS prompts, \
         sum(tool_uses) AS tool_uses, sum(tool_failures) AS tool_failures, sum(stops) AS stops, \
         CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens\n\
         FROM daily_sessions WHERE no_session = 0 AND {chosen}\n\
         GROUP BY date(day_n * 86400, 'unixepoch')),\n\
         u AS (SELECT day, {ROLLUP_SUMS} FROM v_usage_rollup WHERE {chosen} GROUP BY day)\n\
         SELECT k.day, coalesce(d.events, 0) AS events, coalesce(d.sessions, 0) AS sessions, \
         coalesce(d.prompts, 0) AS prompts, coalesce(d.tool_uses, 0) AS tool_uses, \
         coalesce(d.tool_failures, 0) AS tool_failures, coalesce(d.stops, 0) AS stops, \
         coalesce(d.estimated_tokens, 0) AS estimated_tokens, {JOINED_USAGE}\n\
         FROM (SELECT day FROM d UNION SELECT day FROM u WHERE day IS NOT NULL) k\n\
         LEFT JOIN d ON d.day = k.day\nLEFT JOIN u ON u.day = k.day{}\nORDER BY k.day",
        where_of(&days("k.day"))
    );
    Plan { sql, params }
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
    // v_agents_usage over the chosen sessions: their usage, by each response's agent.
    Plan {
        sql: format!(
            "SELECT a.*, {JOINED_USAGE}\nFROM (\
             SELECT coalesce(agent, '?') AS agent, count(*) AS sessions, \
             sum(events) AS events, sum(prompts) AS prompts, sum(tool_uses) AS tool_uses, \
             sum(tool_failures) AS tool_failures, \
             CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(first_seen) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(last_seen) / 1000, 'unixepoch') AS last_seen\n\
             FROM sessions{filter}\nGROUP BY coalesce(agent, '?')) a\n\
             LEFT JOIN (SELECT coalesce(agent, '?') AS agent, {ROLLUP_SUMS} FROM v_usage_rollup \
             WHERE session_id IN (SELECT session_id FROM sessions{filter}) \
             GROUP BY coalesce(agent, '?')) u ON u.agent = a.agent\n\
             ORDER BY a.sessions DESC, a.agent"
        ),
        params,
    }
}

/// `--by model`: v_usage_models over the chosen responses: by their own time, agent and
/// session, and for `--project` the sessions in it.
///
/// With `--since`/`--until` the whole UTC days strictly inside the window come from the usage
/// rollup (a row per session, agent, model and day) and only the responses of the window's
/// first and last day from `usage` itself (two ranges of `usage_ts`): the same figures as a
/// `GROUP BY` over every response in the window, read from a few rows per day.
fn model_plan(filters: &Filters) -> Plan {
    if filters.since.is_none() && filters.until.is_none() {
        return model_rollup_plan(filters);
    }
    let (wheres, mut params) = chosen_usage(filters);
    params.extend(filters.since.map(|ms| int_param("since", ms)));
    params.extend(filters.until.map(|ms| int_param("until", ms)));
    let (days, edges) = window_parts(filters);
    let cols = "model, session_id, input_tokens, output_tokens, cache_write_tokens, \
                cache_read_tokens, cost_usd";
    let mut whole = wheres.clone();
    whole.extend(days);
    let mut parts = vec![format!(
        "SELECT {cols}, responses, unpriced, first_ts, last_ts FROM v_usage_rollup{}",
        where_of(&whole)
    )];
    for edge in edges {
        let mut conditions = vec![edge];
        conditions.extend(wheres.iter().cloned());
        parts.push(format!(
            "SELECT {cols}, 1, cost_usd IS NULL, ts, ts FROM v_usage{}",
            where_of(&conditions)
        ));
    }
    Plan {
        sql: format!(
            "WITH parts AS ({})\n\
             SELECT coalesce(model, '?') AS model, count(DISTINCT session_id) AS sessions, \
             {ROLLUP_SUMS}, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(first_ts) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(last_ts) / 1000, 'unixepoch') AS last_seen\n\
             FROM parts\nGROUP BY coalesce(model, '?')\n\
             ORDER BY cost_usd IS NULL, cost_usd DESC, model",
            parts.join("\nUNION ALL ")
        ),
        params,
    }
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

/// The window `[since, until)` in parts: the rollup days inside it, and the conditions on
/// `usage` rows for the rest.
///
/// A day strictly between the day of `since` and the day of `until - 1` is inside the window
/// (a day follows its time), and so is an edge day the window covers whole (`since` at its
/// midnight, `until` at the next). The responses of a partial edge day come from `usage`:
/// each edge is one range of `ts`, which `usage_ts` serves, and the day checked exactly (the
/// range of the last day starts a second early: `ts / 1000` rounds toward zero, so before 1970
/// a day starts up to 999 ms before its midnight; a first day then is never taken as whole).
fn window_parts(filters: &Filters) -> (Vec<String>, Vec<String>) {
    const FIRST: &str = "date(:since / 1000, 'unixepoch')";
    const LAST: &str = "date((:until - 1) / 1000, 'unixepoch')";
    const DAY_OF_TS: &str = "date(ts / 1000, 'unixepoch')";
    let ms = |day: &str| format!("CAST(strftime('%s', {day}) AS INTEGER) * 1000");
    let first_whole = format!("(:since >= 0 AND :since = {})", ms(FIRST));
    let last_whole = format!(
        "(:until = {})",
        ms("date((:until - 1) / 1000, 'unixepoch', '+1 day')")
    );
    let next_ms = ms("date(:since / 1000, 'unixepoch', '+1 day')");
    let last_ms = format!("{} - 1000", ms(LAST));
    let mut days = Vec::new();
    let mut edges = Vec::new();
    if filters.since.is_some() {
        days.push(format!(
            "(day > {FIRST} OR (day = {FIRST} AND {first_whole}))"
        ));
        // The first day is read whole from the rollup when the window covers it: from its
        // midnight, and to its end (a later last day, or `until` at the next midnight).
        let (until, whole) = if filters.until.is_some() {
            (
                format!("min({next_ms}, :until)"),
                format!("({first_whole} AND ({LAST} > {FIRST} OR {last_whole}))"),
            )
        } else {
            (next_ms.clone(), first_whole.clone())
        };
        edges.push(format!(
            "ts >= :since AND ts < {until} AND {DAY_OF_TS} = {FIRST} AND NOT {whole}"
        ));
    }
    if filters.until.is_some() {
        days.push(format!("(day < {LAST} OR (day = {LAST} AND {last_whole}))"));
        let (since, other_day) = if filters.since.is_some() {
            (
                format!("max({last_ms}, :since)"),
                format!(" AND {LAST} > {FIRST}"),
            )
        } else {
            (last_ms, String::new())
        };
        edges.push(format!(
            "ts >= {since} AND ts < :until AND {DAY_OF_TS} = {LAST}{other_day} \
             AND NOT {last_whole}"
        ));
    }
    (days, edges)
}

/// `--by model` without a time: v_usage_models (the rollup) over the chosen sessions.
fn model_rollup_plan(filters: &Filters) -> Plan {
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
    let sql = if wheres.is_empty() {
        "SELECT *\nFROM v_usage_models\nORDER BY cost_usd IS NULL, cost_usd DESC, model".into()
    } else {
        format!(
            "SELECT coalesce(model, '?') AS model, count(DISTINCT session_id) AS sessions, \
             {ROLLUP_SUMS}, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(first_ts) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(last_ts) / 1000, 'unixepoch') AS last_seen\n\
             FROM v_usage_rollup{}\nGROUP BY coalesce(model, '?')\n\
             ORDER BY cost_usd IS NULL, cost_usd DESC, model",
            where_of(&wheres)
        )
    };
    Plan { sql, params }
}

fn int_param(name: &str, value: i64) -> Param {
    Param {
        name: name.into(),
        value: Value::Integer(value),
    }
}

/// The readable table of each summary: what fits 100 columns, in human units.
fn readable_spec(
    by: By,
) -> (
    &'static [Column],
    &'static [&'static str],
    &'static [&'static str],
) {
    use Shown::*;
    const TOKENS: &[&str] = &[
        "input_tokens",
        "output_tokens",
        "cache_write_tokens",
        "cache_read_tokens",
    ];
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
                    col("time", Duration("total_ms")),
                    col("avg", Duration("avg_ms")),
                    col("max", Duration("max_ms")),
                ];
                COLUMNS
            },
            &["tool"],
            &["time", "avg", "max"],
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
                    col("last", Ago("last_seen")),
                ];
                COLUMNS
            },
            &["model"],
            &["input", "output", "cache w", "cache r", "cost"],
        ),
    }
}

/// The session `given` names: [`sessions::resolve`], else an id that only usage rows carry
/// (a transcript imported without hook events).
fn resolve_session(db: &ReadOnlyDb, given: &str) -> anyhow::Result<String> {
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

/// Runs `cmstore summarize`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let now = crate::clock::now_ms();
    let mut filters = args.filters.parse(now)?;
    let (config, _) = crate::config::Config::load_for(paths);
    report::refresh_prices(&paths.db, &config.prices);
    let db = report::open_read_only(&paths.db)?;
    if let Some(given) = args.session.as_deref() {
        filters.session = Some(resolve_session(&db, given)?);
    }
    let plan = plan(args.by, &filters);
    if args.show_sql {
        eprintln!("{};", plan.sql);
    }
    let (columns, rows) = report::fetch(&db, &plan.sql, &plan.params)?;
    let mut sink = Sink::for_stdout(args.format);
    let (columns, rows) = if sink.format == Format::Table && !args.wide {
        let (spec, cuttable, right) = readable_spec(args.by);
        sink.table.plain = true;
        sink.table.cuttable = cuttable;
        sink.table.right = right;
        let all_ids = if args.by == By::Session {
            sessions::all_ids(&db)?
        } else {
            Vec::new()
        };
        let prefixes = crate::human::unique_prefixes(&all_ids, sessions::MIN_PREFIX);
        let cx = report::Glance {
            all_ids: &all_ids,
            prefixes: &prefixes,
            now_ms: now,
        };
        report::readable(&columns, &rows, spec, cx)
    } else {
        // Every column: drawn in full, for a terminal that scrolls or a pager.
        sink.table.width = None;
        (columns, rows)
    };
    let table = sink.format == Format::Table;
    let mut out = io::stdout().lock();
    report::render(&mut out, sink, columns, &rows)?;
    out.flush().context("writing")?;
    if table && rows.is_empty() {
        let (what, hint) = nothing_of(args.by);
        eprintln!(
            "{}",
            report::empty_note(what, filters != Filters::default(), hint)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// What an empty summary has none of, and where such rows come from when that is not plain.
fn nothing_of(by: By) -> (&'static str, Option<&'static str>) {
    match by {
        By::Session | By::Agent => ("sessions", None),
        By::Tool => ("tool calls", None),
        By::Day => ("events", None),
        By::Model => (
            "token usage",
            Some("it is read from the agents' transcripts: docs/usage.md"),
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
            assert_eq!(
                names,
                ["agent", "project", "session", "since", "until"],
                "{by:?}"
            );
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
        assert!(plan(By::Day, &since)
            .sql
            .contains("FROM v_daily_usage\nWHERE day >= date(:since / 1000, 'unixepoch')"));
        // Days of chosen sessions come from the rollup, never from events.
        let p = plan(By::Day, &all());
        assert!(p.sql.contains("FROM daily_sessions") && !p.sql.contains("events "));
        assert!(
            p.sql.contains("k.day <= date((:until - 1) / 1000"),
            "{}",
            p.sql
        );
        // Models in a window: the whole days from the rollup, the two edge days' responses
        // from `usage`, each a range of `ts`, all three of the chosen sessions.
        let p = plan(By::Model, &all());
        assert_eq!(
            p.sql
                .matches(
                    "FROM v_usage_rollup\nWHERE agent = :agent AND \
             session_id = :session AND session_id IN (SELECT session_id FROM sessions WHERE"
                )
                .count(),
            1,
            "{}",
            p.sql
        );
        assert_eq!(
            p.sql.matches("FROM v_usage\nWHERE ts >= ").count(),
            2,
            "{}",
            p.sql
        );
        assert_eq!(p.sql.matches("AND ts < ").count(), 2, "{}", p.sql);
        assert_eq!(
            p.sql
                .matches("AND agent = :agent AND session_id = :session AND")
                .count(),
            2
        );
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
}
