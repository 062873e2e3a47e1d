//! `cmstore summarize`: ready-made summaries per session, tool, day, agent or model.
//!
//! Every summary is one `SELECT` over the views of migrations 0002/0003 (`v_session_summary`,
//! `v_session_tools`, `v_daily`, `v_sessions`) and of 0011 (`v_usage*`: real tokens and
//! cost; `estimated_tokens` is vstack's payload size / 4, not usage), so `cmstore query` against the same view gives
//! the same figures; `--show-sql` prints the statement. `--since` keeps the sessions seen since
//! then (their last event is at or after it) for `--by session|tool|agent`, and the days from
//! that day on for `--by day`.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;
use rusqlite::types::Value;

use crate::paths::Paths;
use crate::render::Format;
use crate::report::{self, Sink};
use crate::store::read_only::Param;
use crate::timespec;

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
    /// Only this session (with --by session, tool, model or check)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only sessions seen since then: a duration ago (24h, 7d, 2w) or an ISO date/datetime (UTC)
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// One row per session, tool, day, agent or check
    #[arg(long, value_enum, default_value_t = By::Session)]
    pub by: By,
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

/// The usage sums of a group of `v_usage` rows: real tokens from the transcripts and their
/// cost (`cost_usd` covers the priced responses; `unpriced` counts the others).
const USAGE_SUMS: &str = "count(*) AS responses, \
     CAST(total(input_tokens) AS INTEGER) AS input_tokens, \
     CAST(total(output_tokens) AS INTEGER) AS output_tokens, \
     CAST(total(cache_write_tokens) AS INTEGER) AS cache_write_tokens, \
     CAST(total(cache_read_tokens) AS INTEGER) AS cache_read_tokens, \
     round(sum(cost_usd), 6) AS cost_usd, sum(cost_usd IS NULL) AS unpriced";

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

/// Errors in the combination of options.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// `--session` with a summary that has no per-session rows.
    #[error("--session applies to --by session, tool and model only")]
    SessionWithout,
    /// A `--since` that does not parse.
    #[error("--since {0}")]
    Since(#[from] timespec::BadTime),
}

/// The statement for `by`, restricted to `session` and to what was seen since `since` (ms).
pub fn plan(by: By, session: Option<&str>, since: Option<i64>) -> Result<Plan, PlanError> {
    let mut params = Vec::new();
    let mut wheres = Vec::new();
    if let Some(id) = session {
        wheres.push("session_id = :session");
        params.push(Param {
            name: "session".into(),
            value: Value::Text(id.to_owned()),
        });
    }
    if let Some(ms) = since {
        wheres.push(match by {
            By::Day => "day >= date(:since / 1000, 'unixepoch')",
            By::Tool => {
                "session_id IN (SELECT session_id FROM v_sessions WHERE last_seen >= :since)"
            }
            By::Session | By::Agent => "last_seen >= :since",
            By::Model => "ts >= :since",
            By::Check => "ts >= :since",
        });
        params.push(Param {
            name: "since".into(),
            value: Value::Integer(ms),
        });
    }
    let filter = if wheres.is_empty() {
        String::new()
    } else {
        format!("\nWHERE {}", wheres.join(" AND "))
    };
    let sql = match by {
        By::Session => format!(
            "SELECT {SESSION_COLUMNS}, {USAGE_COLUMNS}\nFROM v_session_usage{filter}\n\
             ORDER BY last_seen DESC, session_id"
        ),
        // The same figures as v_tools, summed over the chosen sessions (total() and CAST: a
        // sum past the integer range saturates instead of failing).
        By::Tool => format!(
            "SELECT tool_name, sum(calls) AS calls, sum(succeeded) AS succeeded, \
             sum(failed) AS failed, sum(unfinished) AS unfinished, \
             CASE WHEN sum(timed) > 0 THEN CAST(total(total_ms) AS INTEGER) END AS total_ms, \
             CAST(total(total_ms) / nullif(sum(timed), 0) AS INTEGER) AS avg_ms, \
             max(max_ms) AS max_ms, sum(denied) AS denied, sum(refused) AS refused, \
             sum(abandoned) AS abandoned\n\
             FROM v_session_tools{filter}\nGROUP BY tool_name\nORDER BY calls DESC, tool_name"
        ),
        // Check results live in their events' lines (`check`, docs/checks.md).
        By::Check => {
            let filter = filter.replace("\nWHERE ", "\n  AND ");
            format!(
                "SELECT json_extract(entry, '$.check.name') AS \"check\", count(*) AS runs, \
                 sum(json_extract(entry, '$.check.status') = 'passed') AS passed, \
                 sum(json_extract(entry, '$.check.status') = 'failed') AS failed, \
                 sum(json_extract(entry, '$.check.status') = 'timed_out') AS timed_out, \
                 sum(json_extract(entry, '$.check.status') = 'error') AS errors, \
                 sum(coalesce(json_extract(entry, '$.check.blocked'), 0)) AS blocked, \
                 sum(coalesce(json_array_length(entry, '$.check.findings'), 0)) AS findings, \
                 CAST(avg(json_extract(entry, '$.check.durationMs')) AS INTEGER) AS avg_ms, \
                 strftime('%Y-%m-%dT%H:%M:%SZ', max(ts) / 1000, 'unixepoch') AS last_run\n\
                 FROM events\nWHERE hook_type = 'CheckResult'{filter}\n\
                 GROUP BY 1\nORDER BY 1"
            )
        }
        By::Day => {
            if session.is_some() {
                return Err(PlanError::SessionWithout);
            }
            format!("SELECT *\nFROM v_daily_usage{filter}\nORDER BY day")
        }
        // The same figures as v_agents, over the chosen sessions.
        By::Agent => {
            if session.is_some() {
                return Err(PlanError::SessionWithout);
            }
            if since.is_none() {
                return Ok(Plan {
                    sql: "SELECT *\nFROM v_agents_usage\nORDER BY sessions DESC, agent".into(),
                    params,
                });
            }
            // v_agents_usage over the chosen sessions: their usage, by each response's agent.
            format!(
                "SELECT a.*, {JOINED_USAGE}\nFROM (\
                 SELECT coalesce(agent, '?') AS agent, count(*) AS sessions, \
                 sum(events) AS events, sum(prompts) AS prompts, sum(tool_uses) AS tool_uses, \
                 sum(tool_failures) AS tool_failures, \
                 CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens, \
                 strftime('%Y-%m-%dT%H:%M:%SZ', min(first_seen) / 1000, 'unixepoch') AS first_seen, \
                 strftime('%Y-%m-%dT%H:%M:%SZ', max(last_seen) / 1000, 'unixepoch') AS last_seen\n\
                 FROM v_sessions{filter}\nGROUP BY coalesce(agent, '?')) a\n\
                 LEFT JOIN (SELECT coalesce(agent, '?') AS agent, {USAGE_SUMS} FROM v_usage \
                 WHERE session_id IN (SELECT session_id FROM v_sessions{filter}) \
                 GROUP BY coalesce(agent, '?')) u ON u.agent = a.agent\n\
                 ORDER BY a.sessions DESC, a.agent"
            )
        }
        // v_usage_models over the chosen responses.
        By::Model => format!(
            "SELECT coalesce(model, '?') AS model, count(DISTINCT session_id) AS sessions, \
             {USAGE_SUMS}, \
             strftime('%Y-%m-%dT%H:%M:%SZ', min(ts) / 1000, 'unixepoch') AS first_seen, \
             strftime('%Y-%m-%dT%H:%M:%SZ', max(ts) / 1000, 'unixepoch') AS last_seen\n\
             FROM v_usage{filter}\nGROUP BY coalesce(model, '?')\n\
             ORDER BY cost_usd IS NULL, cost_usd DESC, model"
        ),
    };
    Ok(Plan { sql, params })
}

/// Runs `cmstore summarize`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let since = args
        .since
        .as_deref()
        .map(|s| timespec::parse_point(s, crate::clock::now_ms()))
        .transpose()
        .map_err(PlanError::from)?;
    let plan = plan(args.by, args.session.as_deref(), since)?;
    if args.show_sql {
        eprintln!("{};", plan.sql);
    }
    let (config, _) = crate::config::Config::load_for(paths);
    report::refresh_prices(&paths.db, &config.prices);
    let db = report::open_read_only(&paths.db)?;
    let (columns, rows) = report::fetch(&db, &plan.sql, &plan.params)?;
    let sink = Sink::for_stdout(args.format);
    let mut out = io::stdout().lock();
    report::render(&mut out, sink, columns, &rows)?;
    out.flush().context("writing")?;
    if rows.is_empty() && args.session.is_some() && args.by == By::Session {
        eprintln!(
            "cmstore summarize: no session {:?} in the store",
            args.session.unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_bind_every_value_and_never_inline_it() {
        let p = plan(By::Session, Some("x'; drop"), Some(5)).unwrap();
        assert!(p
            .sql
            .contains("session_id = :session AND last_seen >= :since"));
        assert!(!p.sql.contains("drop"));
        assert_eq!(p.params.len(), 2);
        let p = plan(By::Day, None, Some(5)).unwrap();
        assert!(p.sql.contains("FROM v_daily"));
        assert_eq!(
            plan(By::Day, Some("s"), None),
            Err(PlanError::SessionWithout)
        );
        assert_eq!(
            plan(By::Agent, Some("s"), None),
            Err(PlanError::SessionWithout)
        );
        assert!(plan(By::Tool, None, None).unwrap().params.is_empty());
        let p = plan(By::Model, Some("s"), Some(5)).unwrap();
        assert!(p
            .sql
            .contains("FROM v_usage\nWHERE session_id = :session AND ts >= :since"));
        let p = plan(By::Agent, None, Some(5)).unwrap();
        assert_eq!(p.sql.matches("last_seen >= :since").count(), 2, "{}", p.sql);
    }
}
