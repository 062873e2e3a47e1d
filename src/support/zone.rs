//! The time zone a person reads times in: the local zone (`TZ` where the system honours it),
//! or UTC when `--utc` says so. Every time a command prints for a person, every `--by day`
//! bucket and every date given on the command line (`--since 2026-04-01`, `today`) is in
//! this zone; machine formats keep epoch milliseconds and ISO 8601 times that carry their
//! offset (`Z`).
//!
//! The zone is chosen once per process, by `main` before any command runs
//! ([`choose`]); code that must not follow it (the budget's windows, which capture counts in
//! the local zone whatever a command line says) names [`Zone::Local`] itself.

use std::sync::OnceLock;

use chrono::{DateTime, FixedOffset, Local, NaiveDate, NaiveDateTime, Offset, TimeZone};

/// A zone times are read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    /// The system's local zone (`TZ` on Unix).
    Local,
    /// Coordinated Universal Time.
    Utc,
    /// A fixed offset (tests).
    Fixed(FixedOffset),
}

static CHOSEN: OnceLock<Zone> = OnceLock::new();

/// Sets the zone of this process's output; the first call wins.
pub fn choose(zone: Zone) {
    let _ = CHOSEN.set(zone);
}

/// The zone of this process's output: what [`choose`] set, else the local zone.
pub fn chosen() -> Zone {
    *CHOSEN.get().unwrap_or(&Zone::Local)
}

const HOUR_MS: i64 = 3_600_000;

impl Zone {
    /// The zone's offset from UTC at the instant `utc`.
    pub fn offset_at(self, utc: NaiveDateTime) -> FixedOffset {
        match self {
            Zone::Local => Local.offset_from_utc_datetime(&utc).fix(),
            Zone::Utc => FixedOffset::east_opt(0).expect("zero offset"),
            Zone::Fixed(offset) => offset,
        }
    }

    /// The wall-clock time of `ms` (epoch milliseconds) in this zone.
    pub fn local(self, ms: i64) -> Option<NaiveDateTime> {
        let utc = DateTime::from_timestamp_millis(ms)?.naive_utc();
        Some(utc + self.offset_at(utc))
    }

    /// The date `ms` falls on in this zone.
    pub fn day_of(self, ms: i64) -> Option<NaiveDate> {
        self.local(ms).map(|t| t.date())
    }

    /// The instant (epoch ms) of the wall-clock time `time` in this zone: the earlier one
    /// where a change of offset repeats it, the first minute after the gap where a change
    /// skips it (gaps last an hour, in a few zones half an hour or two).
    pub fn instant(self, time: NaiveDateTime) -> i64 {
        (0..=180)
            .find_map(|minutes| self.earliest(time + chrono::Duration::minutes(minutes)))
            .unwrap_or_else(|| time.and_utc().timestamp_millis())
    }

    /// The instant of `time` when the zone has it (the earlier of two).
    fn earliest(self, time: NaiveDateTime) -> Option<i64> {
        match self {
            Zone::Local => Local
                .from_local_datetime(&time)
                .earliest()
                .map(|t| t.timestamp_millis()),
            Zone::Utc | Zone::Fixed(_) => self
                .offset_at(time)
                .from_local_datetime(&time)
                .earliest()
                .map(|t| t.timestamp_millis()),
        }
    }

    /// The instant `day` begins in this zone (see [`Zone::instant`] for a midnight a change
    /// of offset repeats or skips).
    pub fn midnight(self, day: NaiveDate) -> i64 {
        self.instant(day.and_hms_opt(0, 0, 0).unwrap_or_default())
    }

    /// True when the UTC hour `hour_n` (`floor(ms / 3_600_000)`) holds the start of a day in
    /// this zone after its first millisecond: the zone is half or three quarters of an hour
    /// off UTC, or changed its offset by a half hour. Such an hour's figures belong to two
    /// days, so a report by day reads its rows rather than the hour's rollup.
    pub fn splits_hour(self, hour_n: i64) -> bool {
        let start = hour_n.saturating_mul(HOUR_MS);
        self.day_of(start) != self.day_of(start.saturating_add(HOUR_MS - 1))
    }

    /// The zone as a person reads its name: `UTC`, the `TZ` variable's value, the system
    /// zone's name (`Europe/Paris`), else the offset now (`+05:30`).
    pub fn label(self, now_ms: i64) -> String {
        match self {
            Zone::Utc => "UTC".to_string(),
            Zone::Local => match super::env::var("TZ") {
                Some(tz) if !tz.trim().is_empty() => tz.trim_start_matches(':').to_string(),
                _ => iana_time_zone::get_timezone().unwrap_or_else(|_| offset_label(self, now_ms)),
            },
            Zone::Fixed(_) => offset_label(self, now_ms),
        }
    }
}

/// `+05:30`, `-08:00`, `+00:00`: the zone's offset at `now_ms`.
fn offset_label(zone: Zone, now_ms: i64) -> String {
    let utc = DateTime::from_timestamp_millis(now_ms)
        .unwrap_or_default()
        .naive_utc();
    let seconds = zone.offset_at(utc).local_minus_utc();
    let sign = if seconds < 0 { '-' } else { '+' };
    let minutes = seconds.unsigned_abs() / 60;
    format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    fn fixed(seconds: i32) -> Zone {
        Zone::Fixed(FixedOffset::east_opt(seconds).unwrap())
    }

    #[test]
    fn a_day_begins_at_the_zones_midnight() {
        let utc_midnight = 1_764_460_800_000; // 2025-11-30T00:00:00Z
        assert_eq!(Zone::Utc.midnight(date(2025, 11, 30)), utc_midnight);
        assert_eq!(
            fixed(-8 * 3600).midnight(date(2025, 11, 30)),
            utc_midnight + 8 * HOUR_MS
        );
        assert_eq!(
            fixed(5 * 3600 + 1800).midnight(date(2025, 11, 30)),
            utc_midnight - 5 * HOUR_MS - HOUR_MS / 2
        );
        assert_eq!(
            fixed(-8 * 3600).day_of(utc_midnight + 8 * HOUR_MS - 1),
            Some(date(2025, 11, 29))
        );
    }

    #[test]
    fn only_a_zone_off_the_hour_splits_hours() {
        let hour = 1_764_460_800_000 / HOUR_MS; // 2025-11-30T00:00Z
        assert!(!Zone::Utc.splits_hour(hour));
        assert!(!fixed(-8 * 3600).splits_hour(hour + 8));
        // +05:30: the day begins at 18:30 UTC, inside the hour from 18:00.
        let india = fixed(5 * 3600 + 1800);
        assert!(india.splits_hour(hour + 18));
        assert!(!india.splits_hour(hour + 17));
        assert!(!india.splits_hour(hour + 19));
    }

    #[test]
    fn labels_name_the_zone_or_its_offset() {
        assert_eq!(Zone::Utc.label(0), "UTC");
        assert_eq!(fixed(5 * 3600 + 1800).label(0), "+05:30");
        assert_eq!(fixed(-8 * 3600).label(0), "-08:00");
    }
}
