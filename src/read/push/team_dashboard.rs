//! The statements of `cmstore serve --store postgres://…` beyond the team summaries
//! ([`super::team_reports`]): the overview's days with the columns the local overview draws,
//! the busiest projects, the gate's findings, the dashboard's version, what its filters offer,
//! and one session's tool calls for its timeline. Each reads the rollups, an index or one
//! machine's session, as the summaries do; every value the dashboard is given is a parameter.

use super::team_reports::{
    day_conditions, normalized, project_condition, rollup_conditions, sessions_conditions,
    tool_rollup, where_of, Query, TeamFilters, TeamPlan, USAGE_OR_NONE, USAGE_SUMS,
};
use crate::read::sessions::project_name;

/// What changes whenever a machine pushes (its `last_push`) or a machine is added: the pages
/// poll it and draw again when it changes. A push writes only when it has rows to send.
pub const VERSION: &str =
    "SELECT count(*), coalesce(max(last_push), 0), coalesce(min(first_push), 0) FROM machines";

/// The machines the dashboard's filter offers: id, user label, host, newest first.
pub const MACHINES: &str =
    "SELECT machine_id, user_label, host FROM machines ORDER BY last_push DESC, machine_id";

/// The agents the session list's filter offers (from the event rollup: a few rows per
/// machine and day).
pub const AGENTS: &str =
    "SELECT DISTINCT agent FROM rollup_events WHERE agent <> '' ORDER BY agent";

/// The newest UTC day with an event or a response, whatever the range.
pub const NEWEST_DAY: &str = "SELECT max(day) FROM (SELECT max(day) AS day FROM rollup_events \
     UNION ALL SELECT max(nullif(day, '')) FROM rollup_usage_days) AS d";

/// One session's tool calls for its timeline (`$1` machine, `$2` session), oldest first, with
/// the lane each ran in (the subagent that ran it) and the gate's finding.
pub const TIMELINE_CALLS: &str = "SELECT c.call_key, coalesce(c.tool_name, '?'), c.start_ts, \
     c.end_ts, c.duration_ms, c.outcome, coalesce(pre.actor_type, post.actor_type), \
     coalesce(pre.actor_name, post.actor_name), coalesce(c.risk, pre.risk), \
     coalesce(c.decision, pre.decision) \
     FROM tool_calls c \
     LEFT JOIN events pre ON pre.machine_id = c.machine_id AND pre.id = c.pre_event_id \
     LEFT JOIN events post ON post.machine_id = c.machine_id AND post.id = c.post_event_id \
     WHERE c.machine_id = $1 AND c.session_id = $2 \
     ORDER BY coalesce(c.start_ts, c.end_ts), c.call_key";

/// One tool call's input and output (`$1` machine, `$2` session, `$3` call key, `$4` the user
/// label its session must have, or `''` for any): from the lines that reported it where the
/// machine sent its lines (`full`, `redacted`), else the input the call's row carries (under
/// `none`, its digest), and who decided it, as the machine read it (team migration 0005).
pub const CALL: &str = "SELECT coalesce(c.tool_name, '?'), c.outcome, c.duration_ms, \
     c.start_ts, c.end_ts, \
     coalesce(team_jsonb(pre.entry) ->> 'toolInput', team_jsonb(post.entry) ->> 'toolInput', \
              c.input), \
     team_jsonb(post.entry) ->> 'toolResponse', \
     coalesce(team_jsonb(post.entry) ->> 'error', post.tool_result_type), \
     coalesce(c.risk, pre.risk), coalesce(c.decision, pre.decision), c.decided_by \
     FROM tool_calls c \
     LEFT JOIN events pre ON pre.machine_id = c.machine_id AND pre.id = c.pre_event_id \
     LEFT JOIN events post ON post.machine_id = c.machine_id AND post.id = c.post_event_id \
     WHERE c.machine_id = $1 AND c.session_id = $2 AND c.call_key = $3 \
       AND ($4 = '' OR EXISTS (SELECT 1 FROM sessions s WHERE s.machine_id = c.machine_id \
            AND s.session_id = c.session_id AND s.user_label = $4))";

/// The overview's days (UTC) over the window, machine, user and agent of `filters` (the
/// overview chooses no project or session): the sessions active that day (from their first
/// to their last event), events, prompts, finished tool calls and failed ones, and the
/// usage, with the columns of the local overview's days.
pub fn days(filters: &TeamFilters) -> TeamPlan {
    let filters = &TeamFilters {
        common: crate::read::sessions::Filters {
            project: None,
            session: None,
            ..normalized(filters).common
        },
        ..filters.clone()
    };
    let mut q = Query::default();
    let mut event_wheres = day_conditions(&mut q, filters, "day");
    for (column, value) in [
        ("machine_id", &filters.machine),
        ("user_label", &filters.user),
        ("agent", &filters.common.agent),
    ] {
        if let Some(value) = value {
            event_wheres.push(format!("{column} = {}", q.bind(value.clone())));
        }
    }
    let events = format!(
        "SELECT day AS k, sum(events)::bigint AS events, \
         coalesce(sum(events) FILTER (WHERE hook_type = 'UserPromptSubmit'), 0)::bigint \
         AS prompts, coalesce(sum(events) FILTER (WHERE hook_type IN ('PostToolUse', \
         'PostToolUseFailure')), 0)::bigint AS tool_uses\n  FROM v_daily_events{}\n  \
         GROUP BY day",
        where_of(&event_wheres)
    );
    let (tools, _, tool_wheres) = tool_rollup(&mut q, filters);
    let failures = format!(
        "SELECT nullif(r.day, '') AS k, sum(r.failed)::bigint AS tool_failures\n  \
         FROM {tools} r{tool_wheres}\n  GROUP BY 1"
    );
    let usage = format!(
        "SELECT nullif(r.day, '') AS k, {USAGE_SUMS}\n  FROM v_usage_days r{}\n  GROUP BY 1",
        rollup_conditions(&mut q, filters, "r", true)
    );
    let sessions = sessions_per_day(&mut q, filters);
    let sql = format!(
        "WITH e AS ({events}),\nf AS ({failures}),\nu AS ({usage}),\ns AS ({sessions}),\n\
         keys AS (SELECT k FROM e UNION SELECT k FROM f UNION SELECT k FROM u \
         UNION SELECT k FROM s)\n\
         SELECT keys.k AS day, coalesce(s.sessions, 0) AS sessions, \
         coalesce(e.events, 0) AS events, coalesce(e.prompts, 0) AS prompts, \
         coalesce(e.tool_uses, 0) AS tool_uses, coalesce(f.tool_failures, 0) AS tool_failures, \
         {USAGE_OR_NONE}\nFROM keys\nLEFT JOIN e ON e.k = keys.k\nLEFT JOIN f ON f.k = keys.k\n\
         LEFT JOIN u ON u.k = keys.k\nLEFT JOIN s ON s.k = keys.k\nWHERE keys.k IS NOT NULL\n\
         ORDER BY day"
    );
    TeamPlan {
        sql,
        params: q.params,
    }
}

/// The sessions active on each UTC day of the window that `filters` choose (from their
/// first to their last event), as `k` (the day) and `sessions`. Days are counted as numbers
/// (epoch milliseconds / 86,400,000) and named once grouped; a session within one day (most)
/// is counted without a series: 40,000 sessions in 22 ms, where a series of days per session
/// took 100.
fn sessions_per_day(q: &mut Query, filters: &TeamFilters) -> String {
    const DAY_MS: i64 = 86_400_000;
    let mut one_day = sessions_conditions(q, filters);
    one_day.push("s.first_seen / 86400000 = s.last_seen / 86400000".into());
    let mut more_days = sessions_conditions(q, filters);
    more_days.push("s.first_seen / 86400000 <> s.last_seen / 86400000".into());
    let mut window = Vec::new();
    if let Some(since) = filters.common.since {
        window.push(format!(
            "x.n >= {}",
            q.bind(since.div_euclid(DAY_MS).to_string())
        ));
    }
    if let Some(until) = filters.common.until {
        let last = (until - 1).div_euclid(DAY_MS);
        window.push(format!("x.n <= {}", q.bind(last.to_string())));
    }
    format!(
        "SELECT to_char(to_timestamp(x.n * 86400) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS k, \
         sum(x.c)::bigint AS sessions\n  FROM (SELECT s.first_seen / 86400000 AS n, count(*) AS c \
         FROM sessions s{}\n    GROUP BY 1\n    UNION ALL\n    SELECT g.n, count(*) FROM sessions s, \
         generate_series(s.first_seen / 86400000, s.last_seen / 86400000) AS g(n){}\n    \
         GROUP BY 1) AS x{}\n  GROUP BY x.n",
        where_of(&one_day),
        where_of(&more_days),
        where_of(&window)
    )
}

/// The sessions `filters` choose, per working directory (the project name under `none`):
/// how many, their events, tool calls and failures, and the newest activity.
pub fn projects(filters: &TeamFilters) -> TeamPlan {
    let filters = &normalized(filters);
    let mut q = Query::default();
    let wheres = sessions_conditions(&mut q, filters);
    TeamPlan {
        sql: format!(
            "SELECT s.cwd, count(*), coalesce(sum(s.events), 0)::bigint, \
             coalesce(sum(s.tool_uses), 0)::bigint, coalesce(sum(s.tool_failures), 0)::bigint, \
             max(s.last_seen)\nFROM sessions s{}\nGROUP BY s.cwd",
            where_of(&wheres)
        ),
        params: q.params,
    }
}

/// The conditions on the gate's rollup `g` (team migration 0004): the UTC days of the window,
/// the machine, user, agent and project.
fn gate_rollup_conditions(q: &mut Query, filters: &TeamFilters) -> Vec<String> {
    let mut wheres = day_conditions(q, filters, "g.day");
    for (column, value) in [
        ("machine_id", &filters.machine),
        ("user_label", &filters.user),
        ("agent", &filters.common.agent),
    ] {
        if let Some(value) = value {
            wheres.push(format!("g.{column} = {}", q.bind(value.clone())));
        }
    }
    if let Some(project) = &filters.common.project {
        let p = q.bind(project_name(project));
        wheres.push(project_condition("g.cwd", &p));
    }
    wheres
}

/// The gate's rollup `g` with the conditions `filters` choose and `extra` (the rollup keeps
/// no session: the dashboard's gate chooses none).
fn gate_rows(q: &mut Query, filters: &TeamFilters, extra: &[&str]) -> String {
    let mut wheres = gate_rollup_conditions(q, filters);
    wheres.extend(extra.iter().map(|c| c.to_string()));
    format!("rollup_gate g{}", where_of(&wheres))
}

/// How many calls the gate checked among those `filters` choose (cmstore's own PreToolUse
/// lines, by the UTC days of the window, as every team report counts days; by time, machine,
/// user, agent and project, not session).
pub fn gate_calls(filters: &TeamFilters) -> TeamPlan {
    let filters = &normalized(filters);
    let mut q = Query::default();
    let sql = format!(
        "SELECT coalesce(sum(g.calls), 0)::bigint FROM {}",
        gate_rows(&mut q, filters, &[])
    );
    TeamPlan {
        sql,
        params: q.params,
    }
}

/// The gate's findings among the calls `filters` choose, grouped as `gate report` groups
/// them before it splits their rules: risk, decision, agent, working directory, calls, first
/// and last time.
pub fn gate_findings(filters: &TeamFilters) -> TeamPlan {
    let filters = &normalized(filters);
    let mut q = Query::default();
    let sql = format!(
        "SELECT g.risk, nullif(g.decision, ''), nullif(g.agent, ''), nullif(g.cwd, ''), \
         sum(g.calls)::bigint, min(g.first_ts), max(g.last_ts)\nFROM {}\n\
         GROUP BY g.risk, g.decision, g.agent, g.cwd",
        gate_rows(&mut q, filters, &["g.risk <> ''"])
    );
    TeamPlan {
        sql,
        params: q.params,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::sessions::Filters;

    #[test]
    fn every_value_is_a_parameter() {
        let filters = TeamFilters {
            common: Filters {
                since: Some(1_764_979_200_000),
                until: Some(1_765_065_600_000),
                agent: Some("Claude".into()),
                project: Some("it's/app".into()),
                session: Some("s'1".into()),
            },
            machine: Some("m'1".into()),
            user: Some("a'na".into()),
        };
        for plan in [
            days(&filters),
            projects(&filters),
            gate_calls(&filters),
            gate_findings(&filters),
        ] {
            for spliced in ["m'1", "a'na", "it's", "s'1", "Claude"] {
                assert!(!plan.sql.contains(spliced), "{spliced}: {}", plan.sql);
            }
            let highest = (1..=plan.params.len())
                .rev()
                .find(|n| plan.sql.contains(&format!("${n}")));
            assert_eq!(highest, Some(plan.params.len()), "{}", plan.sql);
            assert!(plan.params.contains(&"m'1".to_string()), "{}", plan.sql);
        }
        // The overview's days choose no project or session, the gate no session; the agent
        // is compared lower-case.
        assert!(!gate_calls(&filters).params.contains(&"s'1".to_string()));
        let d = days(&filters);
        assert!(!d.params.iter().any(|p| p == "it's/app" || p == "s'1"));
        assert!(d.params.contains(&"claude".to_string()));
        assert!(d.params.contains(&"2025-12-06".to_string()));
        assert!(!d.params.contains(&"2025-12-07".to_string()));
    }
}
