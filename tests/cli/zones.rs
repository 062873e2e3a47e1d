//! One time rule: the days of `summarize --by day`, the dates given on the command line and
//! the times shown are in the local zone (`TZ`), or UTC with `--utc`; across a change to
//! summer time and in zones half and three quarters of an hour off UTC, where a day begins
//! inside a UTC hour.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::{entry, TestEnv};
use crate::summarize::usage;

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;
/// 2026-03-07T00:00:00Z.
const START: i64 = 1_772_841_600_000;
/// 2026-03-08T10:00:00Z: 02:00 in Los Angeles, where the clocks go forward to 03:00.
const LOS_ANGELES_SUMMER: i64 = 1_772_964_000_000;

/// Lines every 20 minutes at :05, :25 and :45 (both sides of every half and quarter hour)
/// over three days from [`START`], of two sessions, each of a kind the days count (a prompt,
/// a call that succeeded, one that failed, a turn's end), every fourth with a response.
/// Returns the store and each line's (time, session, kind, output tokens of its response).
fn three_days() -> (TestEnv, Vec<(i64, &'static str, &'static str, u64)>) {
    let env = TestEnv::new();
    let kinds = [
        "UserPromptSubmit",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
    ];
    let mut lines = Vec::new();
    let mut written = Vec::new();
    for (n, ts) in (0..3 * 72).map(|i| (i, START + 5 * MIN + i * 20 * MIN)) {
        let session = if n % 3 == 0 { "s-b" } else { "s-a" };
        let kind = kinds[n as usize % kinds.len()];
        let mut e = entry(kind, session);
        e.timestamp = ts;
        e.tool_name = kind.contains("Tool").then(|| "Bash".to_string());
        let output = if n % 4 == 3 { 10 + n as u64 } else { 0 };
        if output > 0 {
            let mut u = usage(&format!("r{n}"), "claude-sonnet-4-5", output);
            u.ts = Some(ts);
            e.usage = Some(vec![u]);
        }
        lines.push(e.to_line());
        written.push((ts, session, kind, output));
    }
    env.append(&lines);
    env.ingest_once();
    (env, written)
}

/// The day of `ts` for an offset from UTC that `offset` gives at that moment, as text.
fn day_of(ts: i64, offset: impl Fn(i64) -> i64) -> String {
    let local = ts + offset(ts);
    let days = local.div_euclid(DAY);
    chrono::DateTime::from_timestamp(days * 86_400, 0)
        .unwrap()
        .format("%Y-%m-%d")
        .to_string()
}

/// What each day holds, counted here from the lines as written: `day → (events, sessions,
/// prompts, tool uses, failures, stops, responses, output tokens)`.
fn expected(
    written: &[(i64, &str, &str, u64)],
    offset: impl Fn(i64) -> i64,
) -> BTreeMap<String, [i64; 8]> {
    let mut days: BTreeMap<String, ([i64; 8], BTreeSet<String>)> = BTreeMap::new();
    for (ts, session, kind, output) in written {
        let (figures, sessions) = days.entry(day_of(*ts, &offset)).or_default();
        sessions.insert(session.to_string());
        figures[0] += 1;
        figures[2] += i64::from(*kind == "UserPromptSubmit");
        figures[3] += i64::from(kind.starts_with("PostToolUse"));
        figures[4] += i64::from(*kind == "PostToolUseFailure");
        figures[5] += i64::from(*kind == "Stop");
        figures[6] += i64::from(*output > 0);
        figures[7] += *output as i64;
        figures[1] = sessions.len() as i64;
    }
    days.into_iter().map(|(day, (f, _))| (day, f)).collect()
}

/// The rows `cmstore ARGS --format json` prints with `TZ` set to `tz`.
fn rows_in(env: &TestEnv, tz: &str, args: &[&str]) -> Vec<Value> {
    let out = env
        .cmd()
        .env("TZ", tz)
        .args(args)
        .args(["--format", "json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `summarize --by day` with `TZ` set to `tz`, in the same shape as [`expected`].
fn by_day(env: &TestEnv, tz: &str, more: &[&str]) -> BTreeMap<String, [i64; 8]> {
    let mut args = vec!["summarize", "--by", "day"];
    args.extend(more);
    let int = |row: &Value, key: &str| row[key].as_i64().unwrap();
    let figures = [
        "events",
        "sessions",
        "prompts",
        "tool_uses",
        "tool_failures",
        "stops",
        "responses",
        "output_tokens",
    ];
    rows_in(env, tz, &args)
        .iter()
        .map(|r| {
            let day = r["day"].as_str().unwrap().to_string();
            (day, figures.map(|k| int(r, k)))
        })
        .collect()
}

/// The ids of the sessions `sessions --all --since SINCE` lists with `TZ` set to `tz`.
fn sessions_since(env: &TestEnv, tz: &str, since: &str, more: &[&str]) -> Vec<String> {
    let mut args = vec!["sessions", "--all", "--since", since];
    args.extend(more);
    let mut ids: Vec<String> = rows_in(env, tz, &args)
        .iter()
        .map(|r| r["session_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn los_angeles(ts: i64) -> i64 {
    if ts < LOS_ANGELES_SUMMER {
        -8 * HOUR
    } else {
        -7 * HOUR
    }
}

#[test]
fn days_are_the_local_zones_across_a_change_of_offset() {
    let (env, written) = three_days();
    let la = by_day(&env, "America/Los_Angeles", &[]);
    assert_eq!(la, expected(&written, los_angeles));
    // The day of the change is 23 hours long: 69 lines at 20 minutes, not 72.
    assert_eq!(la["2026-03-08"][0], 69, "{la:?}");
    // --utc, whatever TZ says, gives the days of the views.
    let utc = by_day(&env, "America/Los_Angeles", &["--utc"]);
    assert_eq!(utc, expected(&written, |_| 0));
    assert_eq!(utc, by_day(&env, "UTC", &[]));
    let view: Vec<(String, i64)> = env
        .conn()
        .prepare("SELECT day, events FROM v_daily_usage ORDER BY day")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let from_view: Vec<(String, i64)> = utc.iter().map(|(d, f)| (d.clone(), f[0])).collect();
    assert_eq!(view, from_view);
}

#[test]
fn a_day_that_begins_inside_an_hour_is_counted_from_its_lines() {
    let (env, written) = three_days();
    for (tz, offset) in [
        ("Asia/Kolkata", 5 * HOUR + 30 * MIN),
        ("Asia/Kathmandu", 5 * HOUR + 45 * MIN),
        ("America/St_Johns", -(3 * HOUR + 30 * MIN)),
    ] {
        // St John's changes on 2026-03-08 too, at 02:00 local (05:30 UTC).
        let rule = |ts: i64| match tz {
            "America/St_Johns" if ts >= 1_772_947_800_000 => offset + HOUR,
            _ => offset,
        };
        assert_eq!(by_day(&env, tz, &[]), expected(&written, rule), "{tz}");
    }
    // One session: the split hours' lines of that session only.
    let one: Vec<_> = written.iter().filter(|w| w.1 == "s-b").copied().collect();
    assert_eq!(
        by_day(&env, "Asia/Kolkata", &["--session", "s-b"]),
        expected(&one, |_| 5 * HOUR + 30 * MIN)
    );
}

#[test]
fn dates_given_are_the_local_zones_midnights() {
    let (env, written) = three_days();
    // The days from --since's to --until's: one local day, whole.
    let la = by_day(
        &env,
        "America/Los_Angeles",
        &["--since", "2026-03-08", "--until", "2026-03-08 23:59"],
    );
    let all = expected(&written, los_angeles);
    assert_eq!(la.keys().collect::<Vec<_>>(), ["2026-03-08"]);
    assert_eq!(la["2026-03-08"], all["2026-03-08"]);
    // A session list from a local date: the sessions active since Los Angeles' midnight of
    // the 9th (07:00 UTC that day, before the last lines at 23:45 UTC): both.
    let both = ["s-a", "s-b"];
    assert_eq!(
        sessions_since(&env, "America/Los_Angeles", "2026-03-09", &[]),
        both
    );
    // Tokyo's 10th begins at 15:00 UTC on the 9th, before the last lines: both; UTC's 10th
    // begins after them: none, and so with --utc whatever TZ says.
    assert_eq!(sessions_since(&env, "Asia/Tokyo", "2026-03-10", &[]), both);
    assert!(sessions_since(&env, "UTC", "2026-03-10", &[]).is_empty());
    assert!(sessions_since(&env, "Asia/Tokyo", "2026-03-10", &["--utc"]).is_empty());
}

#[test]
fn query_names_a_local_day_with_cmstore_day() {
    let (env, written) = three_days();
    let sql = "SELECT cmstore_day(ts) AS day, count(*) AS n FROM events GROUP BY 1 ORDER BY 1";
    let got: BTreeMap<String, i64> = rows_in(&env, "Asia/Kathmandu", &["query", sql])
        .iter()
        .map(|r| (r["day"].as_str().unwrap().into(), r["n"].as_i64().unwrap()))
        .collect();
    let want: BTreeMap<String, i64> = expected(&written, |_| 5 * HOUR + 45 * MIN)
        .into_iter()
        .map(|(d, f)| (d, f[0]))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn today_begins_at_the_local_midnight() {
    let env = TestEnv::new();
    let now = crate::common::now_ms();
    let offset = 5 * HOUR + 30 * MIN; // Asia/Kolkata, all year
    let midnight = (now + offset).div_euclid(DAY) * DAY - offset;
    let mut lines = Vec::new();
    for (session, ts) in [("before", midnight - MIN), ("after", now)] {
        let mut e = entry("UserPromptSubmit", session);
        e.timestamp = ts;
        lines.push(e.to_line());
    }
    env.append(&lines);
    env.ingest_once();
    let ids = |since: &str| sessions_since(&env, "Asia/Kolkata", since, &[]);
    assert_eq!(ids("today"), ["after"]);
    assert_eq!(ids("yesterday"), ["after", "before"]);
}
