//! cmstore's reports on a team store: the summaries of `cmstore summarize --store
//! postgres://…` (a team store's figures per session, tool, day, agent, model, user or
//! machine) and the list of `cmstore sessions --store`. Each is one `SELECT` over the tables and
//! the rollups the server keeps as rows arrive (team migration 0002), so a summary stays quick
//! at tens of millions of rows, and `cmstore query --store` on the same views gives the same
//! figures; `--show-sql` prints it.
//!
//! The team's machines may live in several time zones, so its days are UTC days: `--since` and
//! `--until` choose the UTC days they fall in (the events, calls and responses of those days),
//! and for `--by session` the sessions active in that time, as locally. `--machine` and
//! `--user` choose machines and user labels; `--agent`, `--project` and `--session` sessions.

use crate::read::report::{col, optional_col, Column, Shown};
use crate::read::sessions::{project_name, Filters};

/// What one row of a team summary stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TeamBy {
    /// One row per machine and session.
    Session,
    /// One row per tool.
    Tool,
    /// One row per UTC day.
    Day,
    /// One row per agent.
    Agent,
    /// One row per model.
    Model,
    /// One row per user label.
    User,
    /// One row per machine.
    Machine,
    /// One row per check (format, markdown, security).
    Check,
}

/// What a team summary counts: the report filters, and the team's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamFilters {
    /// `--since`, `--until`, `--agent`, `--project`, `--session` (a full id).
    pub common: Filters,
    /// Only this machine (its id, as `machines` holds it).
    pub machine: Option<String>,
    /// Only this user label.
    pub user: Option<String>,
}

/// One statement and the values of its `$1`, `$2`, … in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamPlan {
    pub sql: String,
    pub params: Vec<String>,
}

/// The statement for `by` over what `filters` choose.
pub fn plan(by: TeamBy, filters: &TeamFilters) -> TeamPlan {
    let filters = &normalized(filters);
    let mut q = Query::default();
    let sql = match by {
        TeamBy::Check => checks_sql(&mut q, filters),
        TeamBy::Session => sessions_sql(&mut q, filters),
        TeamBy::Tool => tools_sql(&mut q, filters),
        TeamBy::Model => models_sql(&mut q, filters),
        TeamBy::Day | TeamBy::Agent | TeamBy::User | TeamBy::Machine => {
            grouped_sql(&mut q, by, filters)
        }
    };
    TeamPlan {
        sql,
        params: q.params,
    }
}

/// `filters` as they are compared: agents are written lower-case (`claude`), so `Claude`
/// means `claude`, as locally.
pub(super) fn normalized(filters: &TeamFilters) -> TeamFilters {
    let mut filters = filters.clone();
    if let Some(agent) = filters.common.agent.as_mut() {
        *agent = agent.to_ascii_lowercase();
    }
    filters
}

/// Parameters as they are bound.
#[derive(Default)]
pub(super) struct Query {
    pub(super) params: Vec<String>,
}

impl Query {
    /// `value` as the next parameter: its `$n`.
    pub(super) fn bind(&mut self, value: impl Into<String>) -> String {
        self.params.push(value.into());
        format!("${}", self.params.len())
    }
}

/// The usage columns of every summary but `--by tool`, summed over the rollup `r`.
pub(super) const USAGE_SUMS: &str = "sum(r.responses)::bigint AS responses, \
     sum(r.input_tokens)::bigint AS input_tokens, sum(r.output_tokens)::bigint AS output_tokens, \
     sum(r.cache_write_tokens)::bigint AS cache_write_tokens, \
     sum(r.cache_read_tokens)::bigint AS cache_read_tokens, \
     round(sum(r.cost_usd)::numeric, 6) AS cost_usd, \
     coalesce(sum(r.responses) FILTER (WHERE r.cost_usd IS NULL), 0)::bigint AS unpriced";

/// `--project` on the working directory `cwd`, as the local store compares it
/// ([`crate::read::sessions`]): the whole path or its last component, exactly; a Windows path
/// ignoring ASCII case.
pub(super) fn project_condition(cwd: &str, project: &str) -> String {
    let windows = format!("(strpos({cwd}, '\\') > 0 OR {cwd} ~ '^[A-Za-z]:')");
    let path = format!(
        "(CASE WHEN {windows} THEN lower(rtrim({cwd}, '/\\')) ELSE rtrim({cwd}, '/\\') END)"
    );
    let wanted = format!("(CASE WHEN {windows} THEN lower({project}) ELSE {project} END)");
    format!(
        "({path} = {wanted} OR (length({project}) > 0 \
         AND right({path}, length({project}) + 1) IN ('/' || {wanted}, '\\' || {wanted})))"
    )
}

/// The conditions on a session's own row `s` (of `sessions`): agent, project, session,
/// machine and user.
fn session_row_conditions(q: &mut Query, filters: &TeamFilters, s: &str) -> Vec<String> {
    let mut wheres = Vec::new();
    if let Some(machine) = &filters.machine {
        wheres.push(format!("{s}.machine_id = {}", q.bind(machine)));
    }
    if let Some(user) = &filters.user {
        wheres.push(format!("{s}.user_label = {}", q.bind(user)));
    }
    if let Some(agent) = &filters.common.agent {
        wheres.push(format!("{s}.agent = {}", q.bind(agent)));
    }
    if let Some(project) = &filters.common.project {
        let p = q.bind(project_name(project));
        wheres.push(project_condition(&format!("{s}.cwd"), &p));
    }
    if let Some(session) = &filters.common.session {
        wheres.push(format!("{s}.session_id = {}", q.bind(session)));
    }
    wheres
}

/// The UTC days of `--since` and `--until` on the column `day` (YYYY-MM-DD).
pub(super) fn day_conditions(q: &mut Query, filters: &TeamFilters, day: &str) -> Vec<String> {
    let mut wheres = Vec::new();
    if let Some(since) = filters.common.since {
        wheres.push(format!("{day} >= {}", q.bind(utc_day(since))));
    }
    if let Some(until) = filters.common.until {
        // `--until` is exclusive: the day of its last millisecond.
        wheres.push(format!("{day} <= {}", q.bind(utc_day(until - 1))));
    }
    wheres
}

/// The conditions on a rollup row `r` with `machine_id`, `session_id` and `day` (and, for the
/// usage rollup, `user_label` and `agent`): the day window, the machine, and the session's
/// other filters through its row in `sessions`.
pub(super) fn rollup_conditions(
    q: &mut Query,
    filters: &TeamFilters,
    r: &str,
    labelled: bool,
) -> String {
    let days = day_conditions(q, filters, &format!("{r}.day"));
    where_of(&row_conditions(q, filters, r, labelled, days))
}

/// The conditions on a `usage` row `u` (by its time, not a day column): the window's whole UTC
/// days, as every team report counts them, as a range of `ts` an index can read; then those
/// of [`rollup_conditions`].
fn usage_conditions(q: &mut Query, filters: &TeamFilters, u: &str) -> Vec<String> {
    const DAY: i64 = 86_400_000;
    let mut times = Vec::new();
    if let Some(since) = filters.common.since {
        times.push(format!(
            "{u}.ts >= {}",
            q.bind((since.div_euclid(DAY) * DAY).to_string())
        ));
    }
    if let Some(until) = filters.common.until {
        // `--until` is exclusive: up to the end of the day of its last millisecond.
        let end = ((until - 1).div_euclid(DAY) + 1) * DAY;
        times.push(format!("{u}.ts < {}", q.bind(end.to_string())));
    }
    row_conditions(q, filters, u, true, times)
}

/// `wheres` (the time's conditions) and the others of `filters` on a row `r` with
/// `machine_id` and `session_id` (and, `labelled`, `user_label` and `agent`), the session's
/// through its row in `sessions`.
fn row_conditions(
    q: &mut Query,
    filters: &TeamFilters,
    r: &str,
    labelled: bool,
    mut wheres: Vec<String>,
) -> Vec<String> {
    let mut by_session = TeamFilters {
        common: Filters {
            since: None,
            until: None,
            ..filters.common.clone()
        },
        ..filters.clone()
    };
    if labelled {
        // The usage rollup carries these itself: no look into `sessions` for them.
        if let Some(user) = by_session.user.take() {
            wheres.push(format!("{r}.user_label = {}", q.bind(user)));
        }
        if let Some(agent) = by_session.common.agent.take() {
            wheres.push(format!("{r}.agent = {}", q.bind(agent)));
        }
    }
    if let Some(machine) = by_session.machine.take() {
        wheres.push(format!("{r}.machine_id = {}", q.bind(machine)));
    }
    if let Some(session) = by_session.common.session.take() {
        wheres.push(format!("{r}.session_id = {}", q.bind(session)));
    }
    let through = session_row_conditions(q, &by_session, "s");
    if !through.is_empty() {
        wheres.push(format!(
            "EXISTS (SELECT 1 FROM sessions s WHERE s.machine_id = {r}.machine_id \
             AND s.session_id = {r}.session_id AND {})",
            through.join(" AND ")
        ));
    }
    wheres
}

pub(super) fn where_of(wheres: &[String]) -> String {
    if wheres.is_empty() {
        String::new()
    } else {
        format!("\nWHERE {}", wheres.join("\n  AND "))
    }
}

/// `YYYY-MM-DD` of epoch milliseconds, in UTC.
fn utc_day(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%d")
        .to_string()
}

/// An epoch-ms column as ISO-8601 UTC, as the local reports' times are.
fn iso(column: &str) -> String {
    format!(
        "to_char(to_timestamp({column} / 1000.0) AT TIME ZONE 'UTC', \
         'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
    )
}

/// `cmstore sessions --store`: the newest `limit` sessions `filters` choose (all with `None`),
/// without those that went nowhere (no prompt, turn or tool call) unless `all`.
pub fn sessions_list(filters: &TeamFilters, limit: Option<u64>, all: bool) -> TeamPlan {
    let filters = &normalized(filters);
    let mut q = Query::default();
    let mut wheres = sessions_conditions(&mut q, filters);
    if !all {
        wheres.push(WENT_SOMEWHERE.to_string());
    }
    let sql = match limit {
        Some(limit) => format!("{}\nLIMIT {limit}", sessions_select(&wheres)),
        None => every_session_select(&wheres),
    };
    TeamPlan {
        sql,
        params: q.params,
    }
}

/// How many sessions `filters` choose that went nowhere (`sessions` leaves them out).
pub fn nowhere_count(filters: &TeamFilters) -> TeamPlan {
    let filters = &normalized(filters);
    let mut q = Query::default();
    let mut wheres = sessions_conditions(&mut q, filters);
    wheres.push(format!("NOT {WENT_SOMEWHERE}"));
    TeamPlan {
        sql: format!("SELECT count(*) FROM v_sessions s{}", where_of(&wheres)),
        params: q.params,
    }
}

/// A session with a prompt, a turn or a tool call (one begun or denied too), as the local
/// list counts them.
const WENT_SOMEWHERE: &str = "(coalesce(s.prompts, 0) > 0 OR s.turns > 0 \
     OR coalesce(s.tool_uses, 0) > 0 OR EXISTS (SELECT 1 FROM rollup_tools r \
     WHERE r.machine_id = s.machine_id AND r.session_id = s.session_id))";

/// The sessions `filters` choose: their own row's filters and those active in the window.
pub(super) fn sessions_conditions(q: &mut Query, filters: &TeamFilters) -> Vec<String> {
    let mut wheres = session_row_conditions(q, filters, "s");
    if let Some(since) = filters.common.since {
        wheres.push(format!("s.last_seen >= {}", q.bind(since.to_string())));
    }
    if let Some(until) = filters.common.until {
        wheres.push(format!("s.first_seen < {}", q.bind(until.to_string())));
    }
    wheres
}

fn sessions_sql(q: &mut Query, filters: &TeamFilters) -> String {
    let wheres = sessions_conditions(q, filters);
    match wheres.is_empty() {
        true => every_session_select(&[]),
        false => sessions_select(&wheres),
    }
}

/// The columns of a session's row in a list, of a row `s` with `turns`, `responses`,
/// `cost_usd` and `unpriced` (as `v_sessions` has them).
fn session_columns() -> String {
    format!(
        "s.machine_id, s.user_label, s.session_id, s.agent, s.model, s.cwd, \
         {start} AS start, {end} AS \"end\", s.last_seen - s.first_seen AS duration_ms, \
         s.events, s.prompts, s.turns, s.tool_uses, s.tool_failures, s.responses, \
         s.cost_usd, s.unpriced",
        start = iso("s.first_seen"),
        end = iso("s.last_seen"),
    )
}

const SESSION_ORDER: &str = "ORDER BY s.last_seen DESC, s.machine_id, s.session_id";

fn sessions_select(wheres: &[String]) -> String {
    format!(
        "SELECT {}\nFROM v_sessions s{}\n{SESSION_ORDER}",
        session_columns(),
        where_of(wheres),
    )
}

/// Every session of the team that `wheres` keep (of a row `s` with `v_sessions`' columns):
/// `v_sessions` looks a session's usage and turns up one session at a time, which suits a
/// page of the newest; for all of them, the usage is summed once per session and joined with
/// the turns' rollup (team migration 0006).
fn every_session_select(wheres: &[String]) -> String {
    format!(
        "WITH u AS (SELECT machine_id, session_id, sum(responses)::bigint AS responses, \
         round(sum(cost_usd)::numeric, 6) AS cost_usd, \
         coalesce(sum(responses) FILTER (WHERE cost_usd IS NULL), 0)::bigint AS unpriced\n  \
         FROM v_usage_rollup GROUP BY machine_id, session_id),\n\
         s AS (SELECT s.*, coalesce(t.turns, 0) AS turns, u.responses, u.cost_usd, u.unpriced\n  \
         FROM sessions s\n  \
         LEFT JOIN rollup_session_turns t\n    \
         ON t.machine_id = s.machine_id AND t.session_id = s.session_id\n  \
         LEFT JOIN u ON u.machine_id = s.machine_id AND u.session_id = s.session_id)\n\
         SELECT {}\nFROM s{}\n{SESSION_ORDER}",
        session_columns(),
        where_of(wheres),
    )
}

/// `--by check`: the check results in the chosen time (each by its own time, exactly, as
/// locally), of the chosen machines, users, agents, projects and sessions.
fn checks_sql(q: &mut Query, filters: &TeamFilters) -> String {
    let mut wheres = session_row_conditions(q, filters, "c");
    if let Some(since) = filters.common.since {
        wheres.push(format!("c.ts >= {}", q.bind(since.to_string())));
    }
    if let Some(until) = filters.common.until {
        wheres.push(format!("c.ts < {}", q.bind(until.to_string())));
    }
    format!(
        "SELECT c.check_name AS \"check\", count(*) AS runs, \
         count(*) FILTER (WHERE c.status = 'passed') AS passed, \
         count(*) FILTER (WHERE c.status = 'failed') AS failed, \
         count(*) FILTER (WHERE c.status = 'timed_out') AS timed_out, \
         count(*) FILTER (WHERE c.status = 'error') AS errors, \
         sum(c.blocked)::bigint AS blocked, sum(c.findings)::bigint AS findings, \
         trunc(avg(c.duration_ms))::bigint AS avg_ms, {} AS last_run\n\
         FROM check_results c{}\nGROUP BY c.check_name\nORDER BY c.check_name",
        iso("max(c.ts)"),
        where_of(&wheres)
    )
}

/// The rollup of tool calls that answers `filters`, its tool name and its conditions: the
/// second level (per machine, UTC day and tool; team migration 0006) when they choose no more
/// than a machine and days, else the first (per session), which the others need.
pub(super) fn tool_rollup(
    q: &mut Query,
    filters: &TeamFilters,
) -> (&'static str, &'static str, String) {
    let by_day =
        !chooses_sessions(filters) && filters.user.is_none() && filters.common.agent.is_none();
    if by_day {
        let mut wheres = day_conditions(q, filters, "r.day");
        if !wheres.is_empty() {
            // The calls with no time are '' here, NULL in the first level: never in a window.
            wheres.push("r.day <> ''".to_string());
        }
        if let Some(machine) = &filters.machine {
            wheres.push(format!("r.machine_id = {}", q.bind(machine.clone())));
        }
        (
            "rollup_tools_days",
            "nullif(r.tool_name, '')",
            where_of(&wheres),
        )
    } else {
        let wheres = rollup_conditions(q, filters, "r", false);
        ("rollup_tools", "r.tool_name", wheres)
    }
}

fn tools_sql(q: &mut Query, filters: &TeamFilters) -> String {
    let (table, tool, wheres) = tool_rollup(q, filters);
    format!(
        "SELECT {tool} AS tool_name, sum(r.calls)::bigint AS calls, sum(r.succeeded)::bigint AS succeeded, \
         sum(r.failed)::bigint AS failed, sum(r.denied)::bigint AS denied, \
         sum(r.refused)::bigint AS refused, sum(r.abandoned)::bigint AS abandoned, \
         sum(r.unfinished)::bigint AS unfinished, \
         round(1.0 * sum(r.failed) / nullif(sum(r.succeeded) + sum(r.failed), 0), 4) \
         AS failure_rate, sum(r.total_ms)::bigint AS total_ms, \
         (sum(r.total_ms) / nullif(sum(r.timed), 0))::bigint AS avg_ms, max(r.max_ms) AS max_ms\n\
         FROM {table} r{wheres}\nGROUP BY 1\nORDER BY calls DESC, 1"
    )
}

/// Whether `filters` choose sessions by more than their machine, so that only the rollup per
/// session can answer.
fn chooses_sessions(filters: &TeamFilters) -> bool {
    filters.common.session.is_some() || filters.common.project.is_some()
}

/// One row per model, with the premium requests of each beside (`premium_requests`, NULL for
/// a model with none reported), summed over the responses that report them under the same
/// filters: through the partial index `usage_premium` (team migration 0009), as locally; the
/// rollups do not carry them.
fn models_sql(q: &mut Query, filters: &TeamFilters) -> String {
    let models = models_only_sql(q, filters);
    let mut conditions = vec!["u.premium_requests IS NOT NULL".to_string()];
    conditions.extend(usage_conditions(q, filters, "u"));
    format!(
        "SELECT m.*, p.premium_requests\nFROM ({models}) m\n\
         LEFT JOIN (SELECT coalesce(u.model, '?') AS model, \
         round(sum(u.premium_requests)::numeric, 4) AS premium_requests FROM usage u{} \
         GROUP BY coalesce(u.model, '?')) p ON p.model = m.model\n\
         ORDER BY m.cost_usd DESC NULLS LAST, m.model",
        where_of(&conditions)
    )
}

fn models_only_sql(q: &mut Query, filters: &TeamFilters) -> String {
    let only_machine = !chooses_sessions(filters)
        && filters.user.is_none()
        && filters.common.agent.is_none()
        && filters.common.since.is_none()
        && filters.common.until.is_none();
    if only_machine {
        // The second level: sums per day and model, and the sessions of each model counted
        // where they are kept, with no DISTINCT over a row per session.
        let (wheres, of_machine) = match &filters.machine {
            Some(machine) => {
                let m = q.bind(machine);
                (
                    format!("\nWHERE r.machine_id = {m}"),
                    format!(" WHERE machine_id = {m}"),
                )
            }
            None => (String::new(), String::new()),
        };
        return format!(
            "SELECT coalesce(nullif(r.model, ''), '?') AS model, \
             coalesce(max(s.sessions), 0) AS sessions, {USAGE_SUMS}, \
             max(nullif(r.day, '')) AS last_day\nFROM v_usage_days r\n\
             LEFT JOIN (SELECT model, count(*) AS sessions FROM rollup_session_models{of_machine} \
             GROUP BY model) AS s ON s.model = r.model{wheres}\n\
             GROUP BY r.model\nORDER BY cost_usd DESC NULLS LAST, model"
        );
    }
    format!(
        "SELECT coalesce(r.model, '?') AS model, \
         count(DISTINCT length(r.machine_id) || ':' || r.machine_id || r.session_id) AS sessions, \
         {USAGE_SUMS}, max(r.day) AS last_day\nFROM v_usage_rollup r{}\n\
         GROUP BY coalesce(r.model, '?')\nORDER BY cost_usd DESC NULLS LAST, model",
        rollup_conditions(q, filters, "r", true)
    )
}

/// The usage of a row of [`grouped_sql`]: as locally, a row without responses has none of
/// them and no tokens (0), and no cost (NULL).
pub(super) const USAGE_OR_NONE: &str = "coalesce(u.responses, 0) AS responses, \
     coalesce(u.input_tokens, 0) AS input_tokens, coalesce(u.output_tokens, 0) AS output_tokens, \
     coalesce(u.cache_write_tokens, 0) AS cache_write_tokens, \
     coalesce(u.cache_read_tokens, 0) AS cache_read_tokens, u.cost_usd, \
     coalesce(u.unpriced, 0) AS unpriced";

/// `--by day`, `agent`, `user` and `machine`: the events of the event rollup (or, when
/// sessions are chosen, of those sessions), the usage of the usage rollup, and for all but
/// days the sessions active in the window, joined on the row's key.
fn grouped_sql(q: &mut Query, by: TeamBy, filters: &TeamFilters) -> String {
    let (key, name) = match by {
        TeamBy::Day => ("day", "day"),
        TeamBy::Agent => ("agent", "agent"),
        TeamBy::User => ("user_label", "user_label"),
        _ => ("machine_id", "machine_id"),
    };
    let events = events_part(q, filters, key);
    // The rollup per session only when sessions are chosen; else the second level ('' for
    // NULL in its keys).
    let usage = match chooses_sessions(filters) {
        true => format!(
            "SELECT r.{key} AS k, {USAGE_SUMS}\n  FROM v_usage_rollup r{}\n  GROUP BY r.{key}",
            rollup_conditions(q, filters, "r", true)
        ),
        false => format!(
            "SELECT nullif(r.{key}, '') AS k, {USAGE_SUMS}\n  FROM v_usage_days r{}\n  \
             GROUP BY 1",
            rollup_conditions(q, filters, "r", true)
        ),
    };
    let mut with = vec![format!("e AS ({events})"), format!("u AS ({usage})")];
    let mut parts = vec!["e", "u"];
    let mut session_columns = "";
    if by != TeamBy::Day {
        let wheres = sessions_conditions(q, filters);
        with.push(format!(
            "s AS (SELECT s.{key} AS k, count(*) AS sessions, \
             count(DISTINCT s.machine_id) AS machines, max(s.last_seen) AS last_seen\n  \
             FROM sessions s{}\n  GROUP BY s.{key})",
            where_of(&wheres)
        ));
        parts.push("s");
        session_columns = "s.sessions, s.machines, ";
    }
    // Every key any part has (UNION: one NULL key), each part joined to it; a FULL JOIN
    // cannot match NULL keys (IS NOT DISTINCT FROM is neither hashable nor mergeable).
    let union: Vec<String> = parts.iter().map(|p| format!("SELECT k FROM {p}")).collect();
    with.push(format!("keys AS ({})", union.join(" UNION ")));
    let joins: String = parts
        .iter()
        .map(|p| format!("\nLEFT JOIN {p} ON {p}.k IS NOT DISTINCT FROM keys.k"))
        .collect();
    let (extra, extra_join, order) = match by {
        TeamBy::Day => ("", "", name.to_string()),
        TeamBy::Machine => (
            ", m.user_label AS machine_user, m.host, m.cmstore_version",
            "\nLEFT JOIN machines m ON m.machine_id = keys.k",
            "cost_usd DESC NULLS LAST, events DESC NULLS LAST, machine_id".to_string(),
        ),
        _ => (
            "",
            "",
            format!("cost_usd DESC NULLS LAST, events DESC NULLS LAST, {name}"),
        ),
    };
    let last_seen = match by {
        TeamBy::Day => String::new(),
        _ => format!(", {} AS last_seen", iso("s.last_seen")),
    };
    format!(
        "WITH {}\nSELECT keys.k AS {name}{extra}, {session_columns}coalesce(e.events, 0) AS events, \
         {USAGE_OR_NONE}{last_seen}\nFROM keys{joins}{extra_join}\nORDER BY {order}",
        with.join(",\n")
    )
}

/// The events per `key` in the window: from the event rollup, or from the chosen sessions'
/// events when `--session` or `--project` choose sessions (the rollup has no session).
fn events_part(q: &mut Query, filters: &TeamFilters, key: &str) -> String {
    if filters.common.session.is_none() && filters.common.project.is_none() {
        let mut wheres = day_conditions(q, filters, "day");
        if let Some(machine) = &filters.machine {
            wheres.push(format!("machine_id = {}", q.bind(machine)));
        }
        if let Some(user) = &filters.user {
            wheres.push(format!("user_label = {}", q.bind(user)));
        }
        if let Some(agent) = &filters.common.agent {
            wheres.push(format!("agent = {}", q.bind(agent)));
        }
        return format!(
            "SELECT {key} AS k, sum(events)::bigint AS events\n  FROM v_daily_events{}\n  \
             GROUP BY {key}",
            where_of(&wheres)
        );
    }
    let mut wheres = day_conditions(q, filters, "team_day(x.ts)");
    let sessions = session_row_conditions(q, filters, "s");
    wheres.push(format!(
        "EXISTS (SELECT 1 FROM sessions s WHERE s.machine_id = x.machine_id \
         AND s.session_id = x.session_id AND {})",
        sessions.join(" AND ")
    ));
    let key = match key {
        "day" => "team_day(x.ts)".to_string(),
        other => format!("x.{other}"),
    };
    format!(
        "SELECT {key} AS k, count(*) AS events\n  FROM events x{}\n  GROUP BY {key}",
        where_of(&wheres)
    )
}

/// The readable table of `by` on a terminal: its columns, those that may go when the
/// terminal is narrow, and those aligned right.
pub fn readable_spec(
    by: TeamBy,
) -> (
    &'static [Column],
    &'static [&'static str],
    &'static [&'static str],
) {
    use crate::read::summaries::TOKENS;
    use Shown::*;
    const RIGHT: &[&str] = &["events", "tokens", "cost"];
    match by {
        TeamBy::Session => {
            const COLUMNS: &[Column] = &[
                col("machine", Raw("machine_id")),
                col("user", Raw("user_label")),
                col("session", Session("session_id")),
                col("agent", Raw("agent")),
                col("project", Project("cwd")),
                col("last", Ago("end")),
                col("lasted", Duration("duration_ms")),
                col("prompts", Raw("prompts")),
                col("tools", Raw("tool_uses")),
                col("failed", Raw("tool_failures")),
                col("cost", Cost),
            ];
            (
                COLUMNS,
                &["machine", "agent", "project"],
                &["lasted", "cost"],
            )
        }
        // The local summaries' columns: the team's have the same names.
        TeamBy::Tool => crate::read::summaries::readable_spec(crate::read::summaries::By::Tool),
        TeamBy::Check => crate::read::summaries::readable_spec(crate::read::summaries::By::Check),
        TeamBy::Model => {
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
                col("last day", Raw("last_day")),
            ];
            (
                COLUMNS,
                &["model"],
                &["input", "output", "cache w", "cache r", "cost", "premium"],
            )
        }
        TeamBy::Day => {
            const COLUMNS: &[Column] = &[
                col("day (UTC)", Raw("day")),
                col("events", Count("events")),
                col("responses", Raw("responses")),
                col("tokens", Sum(TOKENS)),
                col("cost", Cost),
            ];
            (COLUMNS, &[], RIGHT)
        }
        TeamBy::Agent => {
            const COLUMNS: &[Column] = &[
                col("agent", Raw("agent")),
                col("sessions", Raw("sessions")),
                col("machines", Raw("machines")),
                col("events", Count("events")),
                col("responses", Raw("responses")),
                col("tokens", Sum(TOKENS)),
                col("cost", Cost),
                col("last", Ago("last_seen")),
            ];
            (COLUMNS, &["agent"], RIGHT)
        }
        TeamBy::User => {
            const COLUMNS: &[Column] = &[
                col("user", Raw("user_label")),
                col("machines", Raw("machines")),
                col("sessions", Raw("sessions")),
                col("events", Count("events")),
                col("responses", Raw("responses")),
                col("tokens", Sum(TOKENS)),
                col("cost", Cost),
                col("last", Ago("last_seen")),
            ];
            (COLUMNS, &["user"], RIGHT)
        }
        TeamBy::Machine => {
            const COLUMNS: &[Column] = &[
                col("machine", Raw("machine_id")),
                col("user", Raw("machine_user")),
                col("host", Raw("host")),
                col("sessions", Raw("sessions")),
                col("events", Count("events")),
                col("responses", Raw("responses")),
                col("tokens", Sum(TOKENS)),
                col("cost", Cost),
                col("last", Ago("last_seen")),
            ];
            (COLUMNS, &["host", "machine"], RIGHT)
        }
    }
}

/// The columns a readable table's total row sums.
pub fn summed_columns(by: TeamBy) -> &'static [&'static str] {
    match by {
        TeamBy::Session => &["prompts", "tool_uses", "tool_failures"],
        TeamBy::Tool => crate::read::summaries::summed_columns(crate::read::summaries::By::Tool),
        TeamBy::Model => &["responses"],
        TeamBy::Check => crate::read::summaries::summed_columns(crate::read::summaries::By::Check),
        TeamBy::Day | TeamBy::Agent | TeamBy::User | TeamBy::Machine => &["events", "responses"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filter_is_a_parameter_and_none_is_spliced() {
        let filters = TeamFilters {
            common: Filters {
                since: Some(1_764_979_200_000), // 2025-12-06T00:00:00Z
                until: Some(1_765_065_600_000), // 2025-12-07T00:00:00Z
                agent: Some("claude".into()),
                project: Some("it's/app/".into()),
                session: None,
            },
            machine: Some("m'1".into()),
            user: Some("ana".into()),
        };
        for by in [
            TeamBy::Session,
            TeamBy::Tool,
            TeamBy::Day,
            TeamBy::Agent,
            TeamBy::Model,
            TeamBy::User,
            TeamBy::Machine,
            TeamBy::Check,
        ] {
            let plan = plan(by, &filters);
            assert!(
                !plan.sql.contains("m'1") && !plan.sql.contains("it's"),
                "{by:?}"
            );
            assert!(plan.params.contains(&"it's/app".to_string()), "{by:?}");
            let highest = (1..=plan.params.len())
                .rev()
                .find(|n| plan.sql.contains(&format!("${n}")));
            assert_eq!(highest, Some(plan.params.len()), "{by:?}: {}", plan.sql);
        }
        let day = plan(TeamBy::Day, &filters);
        assert!(day.params.contains(&"2025-12-06".to_string()));
        assert!(
            !day.params.contains(&"2025-12-07".to_string()),
            "--until is exclusive"
        );
    }
}
