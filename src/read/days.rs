//! `summarize --by day` (and the dashboard's days): one row per day in the zone a person reads
//! times in (local, or UTC with `--utc`; [`crate::support::zone`]), with the columns of
//! `v_daily_usage`, which counts UTC days.
//!
//! Read from the rollups per UTC hour, never from every event: the events' (`hourly_sessions`,
//! migration 0031) and the responses' (`usage_hourly`, 0020). An hour belongs to the day its
//! first moment falls on, except an hour a day begins inside (a zone half or three quarters of
//! an hour off UTC, once a day): its events and responses are read themselves
//! (`cmstore_splits_hour`, a range of `events_ts` and `usage_ts` each), so every figure is the
//! one a `GROUP BY` over the rows by their local day gives.

use chrono::NaiveDate;
use rusqlite::types::Value;

use super::plan::{in_sessions, int_param, where_of, Plan, JOINED_USAGE, ROLLUP_SUMS};
use super::sessions::Filters;
use crate::store::read_only::Param;
use crate::support::zone::{self, Zone};

const HOUR_MS: i64 = 3_600_000;

/// The statement of `--by day` over what `filters` choose: the days from `--since`'s day to
/// `--until`'s (the day of its last moment) in the chosen zone, of the chosen sessions.
pub fn plan(filters: &Filters) -> Plan {
    let zone = zone::chosen();
    let mut params = Vec::new();
    let range = DayRange::of(filters, zone);
    let mut hours = Vec::new();
    let mut days = Vec::new();
    if let Some((first_day, first_hour)) = range.first {
        hours.push("hour_n >= :first_hour".to_string());
        days.push("k.day >= :first_day".to_string());
        params.push(int_param("first_hour", first_hour));
        params.push(text_param("first_day", first_day));
    }
    if let Some((last_day, end_hour)) = range.last {
        hours.push("hour_n < :end_hour".to_string());
        days.push("k.day <= :last_day".to_string());
        params.push(int_param("end_hour", end_hour));
        params.push(text_param("last_day", last_day));
    }
    // The sessions chosen by agent, project or id; the time chooses days, not sessions.
    let by_session = Filters {
        since: None,
        until: None,
        ..filters.clone()
    };
    let (chosen, more) = in_sessions("session_id", &by_session);
    params.extend(more);
    let (event_rows, usage_rows) = match &chosen {
        Some(chosen) => {
            let mut events = hours.clone();
            events.extend(["no_session = 0".to_string(), chosen.clone()]);
            let mut usage = hours.clone();
            usage.push(chosen.clone());
            (events, usage)
        }
        None => (hours.clone(), hours),
    };
    // The same choice over the rows of the split hours (its parameters are those bound above).
    let split_rows = |alias: &str| match in_sessions(&format!("{alias}.session_id"), &by_session).0
    {
        Some(chosen) => format!("\n  WHERE {alias}.session_id IS NOT NULL AND {chosen}"),
        None => String::new(),
    };
    let sql = format!(
        "WITH h AS (SELECT hour_n, no_session, session_id, events, prompts, tool_uses, \
         tool_failures, stops, estimated_tokens FROM hourly_sessions{}),\n\
         hu AS (SELECT hour_n, session_id, responses, input_tokens, output_tokens, \
         cache_write_tokens, cache_read_tokens, cost_usd, unpriced FROM v_usage_hourly{}),\n\
         split AS (SELECT hour_n FROM h WHERE cmstore_splits_hour(hour_n) \
         UNION SELECT hour_n FROM hu WHERE cmstore_splits_hour(hour_n)),\n\
         ev AS (SELECT cmstore_day(hour_n * {HOUR_MS}) AS day, no_session, session_id, events, \
         prompts, tool_uses, tool_failures, stops, estimated_tokens\n  \
         FROM h WHERE NOT cmstore_splits_hour(hour_n)\n  UNION ALL\n  \
         SELECT cmstore_day(e.ts), e.session_id IS NULL, coalesce(e.session_id, ''), 1, \
         e.hook_type = 'UserPromptSubmit', \
         e.hook_type IN ('PostToolUse', 'PostToolUseFailure'), \
         CASE WHEN e.hook_type = 'PostToolUseFailure' THEN 1 \
         WHEN e.hook_type = 'PostToolUse' THEN cmstore_tool_failure(e.entry) ELSE 0 END, \
         e.hook_type IN ('Stop', 'SubagentStop') AND coalesce(e.synthetic, 0) = 0, \
         coalesce(e.estimated_tokens, 0)\n  \
         FROM split s JOIN events e \
         ON e.ts >= s.hour_n * {HOUR_MS} AND e.ts < (s.hour_n + 1) * {HOUR_MS}{}),\n\
         us AS (SELECT cmstore_day(hour_n * {HOUR_MS}) AS day, session_id, responses, \
         input_tokens, output_tokens, cache_write_tokens, cache_read_tokens, cost_usd, \
         unpriced\n  FROM hu WHERE NOT cmstore_splits_hour(hour_n)\n  UNION ALL\n  \
         SELECT cmstore_day(v.ts), v.session_id, 1, v.input_tokens, v.output_tokens, \
         v.cache_write_tokens, v.cache_read_tokens, v.cost_usd, v.cost_usd IS NULL\n  \
         FROM split s JOIN v_usage v \
         ON v.ts >= s.hour_n * {HOUR_MS} AND v.ts < (s.hour_n + 1) * {HOUR_MS}{}),\n\
         d AS (SELECT day, sum(events) AS events, sum(prompts) AS prompts, \
         sum(tool_uses) AS tool_uses, sum(tool_failures) AS tool_failures, \
         sum(stops) AS stops, CAST(total(estimated_tokens) AS INTEGER) AS estimated_tokens \
         FROM ev GROUP BY day),\n\
         u AS (SELECT day, {ROLLUP_SUMS} FROM us GROUP BY day),\n\
         s AS (SELECT day, count(*) AS sessions FROM (\
         SELECT day, session_id FROM ev WHERE no_session = 0 \
         UNION SELECT day, session_id FROM us WHERE session_id IS NOT NULL) GROUP BY day)\n\
         SELECT k.day, coalesce(d.events, 0) AS events, coalesce(s.sessions, 0) AS sessions, \
         coalesce(d.prompts, 0) AS prompts, coalesce(d.tool_uses, 0) AS tool_uses, \
         coalesce(d.tool_failures, 0) AS tool_failures, coalesce(d.stops, 0) AS stops, \
         coalesce(d.estimated_tokens, 0) AS estimated_tokens, {JOINED_USAGE}\n\
         FROM (SELECT day FROM d UNION SELECT day FROM u WHERE day IS NOT NULL) k\n\
         LEFT JOIN d ON d.day = k.day\nLEFT JOIN u ON u.day = k.day\n\
         LEFT JOIN s ON s.day = k.day{}\nORDER BY k.day",
        where_of(&event_rows),
        where_of(&usage_rows),
        split_rows("e"),
        split_rows("v"),
        where_of(&days),
    );
    Plan { sql, params }
}

/// The days `--since` and `--until` choose: each end's day and the UTC hour that bounds it
/// (the first hour of the first day; the hour after the last day's last moment).
struct DayRange {
    first: Option<(String, i64)>,
    last: Option<(String, i64)>,
}

impl DayRange {
    fn of(filters: &Filters, zone: Zone) -> DayRange {
        let text = |day: NaiveDate| day.format("%Y-%m-%d").to_string();
        let first = filters.since.and_then(|since| {
            let day = zone.day_of(since)?;
            Some((text(day), zone.midnight(day).div_euclid(HOUR_MS)))
        });
        let last = filters.until.and_then(|until| {
            let day = zone.day_of(until.saturating_sub(1))?;
            let end = zone.midnight(day.succ_opt()?);
            // The hour holding the next day's first moment still holds the last of this one.
            Some((text(day), (end + HOUR_MS - 1).div_euclid(HOUR_MS)))
        });
        DayRange { first, last }
    }
}

fn text_param(name: &str, value: String) -> Param {
    Param {
        name: name.into(),
        value: Value::Text(value),
    }
}
