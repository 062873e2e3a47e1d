//! Points in time given on the command line: `90m`, `24h`, `7d`, `2w` ago, `today`,
//! `yesterday`, `now`, or an ISO date/datetime.
//!
//! Used by the reports' `--since`/`--until` and `prune --before`. Dates and datetimes without an
//! offset are in the zone times are read in ([`zone`]: local, or UTC with
//! `--utc`), like `summarize --by day`'s days: `today` is that zone's midnight.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use super::zone::{self, Zone};

/// A `--since`/`--before` value that is neither a duration nor a date.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?}: expected a duration ago (90m, 36h, 7d, 2w), today, yesterday, now, or an ISO date/datetime (2026-11-30, 2026-11-30T08:00:00Z)")]
pub struct BadTime(pub String);

/// Milliseconds since the Unix epoch of `text`, durations counted back from `now_ms`, dates
/// in the zone of this process's output ([`zone::chosen`]).
pub fn parse_point(text: &str, now_ms: i64) -> Result<i64, BadTime> {
    parse_point_in(text, now_ms, zone::chosen())
}

/// [`parse_point`] with dates (and `today`, `yesterday`) in `zone`.
pub fn parse_point_in(text: &str, now_ms: i64, zone: Zone) -> Result<i64, BadTime> {
    let t = text.trim();
    let bad = || BadTime(text.to_owned());
    let today = || zone.day_of(now_ms).ok_or_else(bad);
    match t.to_ascii_lowercase().as_str() {
        "now" => return Ok(now_ms),
        "today" => return Ok(zone.midnight(today()?)),
        "yesterday" => return Ok(zone.midnight(today()?.pred_opt().ok_or_else(bad)?)),
        _ => {}
    }
    if let Some(unit) = t.chars().last().filter(|c| c.is_ascii_alphabetic()) {
        let number = &t[..t.len() - unit.len_utf8()];
        if !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()) {
            let n: i64 = number.parse().map_err(|_| bad())?;
            let hour = 3_600_000_i64;
            let per = match unit.to_ascii_lowercase() {
                'm' => 60_000,
                'h' => hour,
                'd' => 24 * hour,
                'w' => 7 * 24 * hour,
                _ => return Err(bad()),
            };
            return n
                .checked_mul(per)
                .and_then(|ago| now_ms.checked_sub(ago))
                .ok_or_else(bad);
        }
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp_millis());
    }
    for format in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M",
    ] {
        if let Ok(naive) = NaiveDateTime::parse_from_str(t, format) {
            return Ok(zone.instant(naive));
        }
    }
    if let Ok(day) = NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        return Ok(zone.midnight(day));
    }
    Err(bad())
}

/// `ms` as UTC ISO 8601 with seconds (`2026-11-30T08:00:00Z`), as the views print times.
pub fn iso(ms: i64) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|d| d.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_764_489_600_000; // 2025-11-30T08:00:00Z

    /// The tests' zone unless they name another.
    fn parse_point(text: &str, now_ms: i64) -> Result<i64, BadTime> {
        parse_point_in(text, now_ms, Zone::Utc)
    }

    #[test]
    fn durations_count_back_from_now() {
        assert_eq!(parse_point("24h", NOW), Ok(NOW - 86_400_000));
        assert_eq!(parse_point("7d", NOW), Ok(NOW - 7 * 86_400_000));
        assert_eq!(parse_point("2W", NOW), Ok(NOW - 14 * 86_400_000));
        assert_eq!(parse_point(" 0h ", NOW), Ok(NOW));
        assert_eq!(parse_point("90m", NOW), Ok(NOW - 90 * 60_000));
    }

    #[test]
    fn today_and_yesterday_start_at_the_zones_midnight() {
        let midnight = NOW - 8 * 3_600_000; // 2025-11-30T00:00:00Z
        assert_eq!(parse_point("today", NOW), Ok(midnight));
        assert_eq!(parse_point(" Yesterday", NOW), Ok(midnight - 86_400_000));
        assert_eq!(parse_point("now", NOW), Ok(NOW));
        assert_eq!(
            parse_point("today", midnight),
            Ok(midnight),
            "at midnight itself"
        );
        assert!(parse_point("tomorrow", NOW)
            .unwrap_err()
            .to_string()
            .contains("today, yesterday"));
    }

    #[test]
    fn dates_and_datetimes_without_an_offset_are_in_the_zone() {
        let los_angeles = Zone::Fixed(chrono::FixedOffset::west_opt(8 * 3600).unwrap());
        let hour = 3_600_000;
        // 2025-11-30T08:00Z is midnight in Los Angeles: today began then, yesterday a day before.
        assert_eq!(parse_point_in("today", NOW, los_angeles), Ok(NOW));
        assert_eq!(
            parse_point_in("today", NOW - 1, los_angeles),
            Ok(NOW - 24 * hour)
        );
        assert_eq!(
            parse_point_in("yesterday", NOW, los_angeles),
            Ok(NOW - 24 * hour)
        );
        assert_eq!(parse_point_in("2025-11-30", NOW, los_angeles), Ok(NOW));
        assert_eq!(
            parse_point_in("2025-11-30 09:30", NOW, los_angeles),
            Ok(NOW + 9 * hour + hour / 2)
        );
        // An offset given wins over the zone.
        assert_eq!(
            parse_point_in("2025-11-30T08:00:00Z", NOW, los_angeles),
            Ok(NOW)
        );
        assert_eq!(parse_point_in("24h", NOW, los_angeles), Ok(NOW - 24 * hour));
    }

    #[test]
    fn dates_and_datetimes_are_utc_in_utc() {
        assert_eq!(parse_point("2025-11-30", NOW), Ok(NOW - 8 * 3_600_000));
        assert_eq!(parse_point("2025-11-30T08:00:00Z", NOW), Ok(NOW));
        assert_eq!(parse_point("2025-11-30T09:00:00+01:00", NOW), Ok(NOW));
        assert_eq!(parse_point("2025-11-30T08:00:00", NOW), Ok(NOW));
        assert_eq!(parse_point("2025-11-30 08:00", NOW), Ok(NOW));
        assert_eq!(iso(NOW), "2025-11-30T08:00:00Z");
    }

    #[test]
    fn anything_else_is_refused() {
        for bad in [
            "",
            "d",
            "7",
            "7y",
            "-7d",
            "the day before",
            "2025-13-01",
            "99999999999999999999d",
        ] {
            assert!(parse_point(bad, NOW).is_err(), "{bad}");
        }
    }
}
