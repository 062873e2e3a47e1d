//! What the agents spent today, this week and this month (local time): the spend file a
//! running ingest writes beside the queue after it stores new usage, which `cmstore
//! statusline` reads without opening the database. Its format is this module's; it is
//! written whole and replaced atomically, so a reader sees one version or the other.

use chrono::{DateTime, Datelike, Days, Local, NaiveDate, TimeZone};
use serde::{Deserialize, Serialize};

/// The spend file's name, in cmstore's home.
pub const FILE_NAME: &str = "spend.json";

/// The spend file: the figures of each window, and when they were counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpendFile {
    /// Format version.
    pub v: u32,
    /// When ingest counted them (epoch ms).
    pub at: i64,
    /// Today, from local midnight.
    pub day: Spent,
    /// This week, from Monday's local midnight.
    pub week: Spent,
    /// This month, from the 1st's local midnight.
    pub month: Spent,
}

/// What the responses of one window cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    /// Where the window starts (epoch ms).
    pub from: i64,
    /// The cost of its priced responses (USD); `None` when none is priced.
    pub usd: Option<f64>,
    /// Every token of its responses (input, output, cache reads and writes).
    pub tokens: i64,
    /// Its responses.
    pub responses: i64,
    /// Those with no price: `usd` leaves them out.
    pub unpriced: i64,
}

/// The starts (epoch ms) of the day, week and month that hold `now_ms`, in the local zone.
pub fn window_starts(now_ms: i64) -> (i64, i64, i64) {
    let now = DateTime::from_timestamp_millis(now_ms)
        .unwrap_or_default()
        .with_timezone(&Local);
    let today = now.date_naive();
    let monday = today
        .checked_sub_days(Days::new(u64::from(today.weekday().num_days_from_monday())))
        .unwrap_or(today);
    let first = today.with_day(1).unwrap_or(today);
    (midnight(today), midnight(monday), midnight(first))
}

/// The local midnight that starts `day` (the earliest, where a zone's change repeats it; the
/// first moment after it, where a change skips it).
fn midnight(day: NaiveDate) -> i64 {
    let start = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    match Local.from_local_datetime(&start) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.timestamp_millis()
        }
        chrono::LocalResult::None => Local
            .from_local_datetime(&(start + chrono::Duration::hours(1)))
            .earliest()
            .map_or(0, |t| t.timestamp_millis()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_start_at_local_midnights_monday_and_the_first() {
        // A Wednesday at noon, local time.
        let noon = Local
            .with_ymd_and_hms(2026, 12, 9, 12, 0, 0)
            .single()
            .unwrap()
            .timestamp_millis();
        let at = |y, m, d| {
            Local
                .with_ymd_and_hms(y, m, d, 0, 0, 0)
                .single()
                .unwrap()
                .timestamp_millis()
        };
        assert_eq!(
            window_starts(noon),
            (at(2026, 12, 9), at(2026, 12, 7), at(2026, 12, 1))
        );
        // On a Monday the week starts that day.
        let monday = at(2026, 12, 7) + 1;
        assert_eq!(window_starts(monday).1, at(2026, 12, 7));
    }

    #[test]
    fn the_file_reads_back_as_written() {
        let file = SpendFile {
            v: 1,
            at: 5,
            day: Spent {
                from: 1,
                usd: Some(1.5),
                tokens: 10,
                responses: 2,
                unpriced: 1,
            },
            week: Spent::default(),
            month: Spent::default(),
        };
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(serde_json::from_str::<SpendFile>(&text).unwrap(), file);
    }
}
