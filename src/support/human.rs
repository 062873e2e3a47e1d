//! Figures as a person reads them at a glance: `8m 02s`, `1.8M`, `2h ago`, times in the zone
//! a person reads them in ([`zone`]: local, or UTC with `--utc`), and a
//! working directory's last component as the project.
//!
//! Only the default tables and `cmstore show` use these; `--format json|jsonl|csv|tsv` and
//! `--wide` keep the raw values, so nothing a script reads is rounded.

use std::fmt::Write;

use chrono::{DateTime, FixedOffset, NaiveDateTime, Timelike};

use super::zone;

/// A duration in milliseconds: `350ms`, `4.2s`, `10s`, `8m 02s`, `3h 05m`, `2d 04h`. The one
/// style of every command (reports, `show`, ingest's lines).
pub fn duration(ms: i64) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    let secs = ms / 1000;
    let text = match secs {
        0 => format!("{ms}ms"),
        1..=59 if ms.is_multiple_of(1000) => format!("{secs}s"),
        1..=59 => format!("{:.1}s", ms as f64 / 1000.0),
        60..=3599 => format!("{}m {:02}s", secs / 60, secs % 60),
        3600..=86_399 => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
        _ => format!("{}d {:02}h", secs / 86_400, secs % 86_400 / 3600),
    };
    format!("{sign}{text}")
}

/// A model id as a list shows it: without the maker's `claude-` and a release date
/// (`claude-opus-4-7` → `opus-4-7`, `claude-sonnet-4-5-20250929` → `sonnet-4-5`), so that a
/// narrow column keeps what tells two models apart; any other id as it is.
pub fn model(id: &str) -> &str {
    let id = id.strip_prefix("claude-").unwrap_or(id);
    match id.rsplit_once('-') {
        Some((name, date)) if date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => id,
    }
}

/// A count: exact below 1,000, then `12.3k`, `1.8M`, `2.1B` (one decimal below 100 of the
/// unit, none above).
pub fn count(n: i64) -> String {
    let magnitude = n.unsigned_abs() as f64;
    let sign = if n < 0 { "-" } else { "" };
    for (unit, size) in [("B", 1e9), ("M", 1e6), ("k", 1e3)] {
        if magnitude >= size {
            let value = magnitude / size;
            return if value < 100.0 {
                format!("{sign}{:.1}{unit}", (value * 10.0).floor() / 10.0)
            } else {
                format!("{sign}{}{unit}", value.floor())
            };
        }
    }
    n.to_string()
}

/// A whole number with its thousands grouped: `1,200`, `-5,000,000`.
pub fn whole(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut grouped = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    match n < 0 {
        true => format!("-{grouped}"),
        false => grouped,
    }
}

/// An amount in US dollars: `$12.34`, `$1,234`, under a cent `<$0.01`, nothing spent `$0.00`.
pub fn cost(usd: f64) -> String {
    let sign = if usd < 0.0 { "-" } else { "" };
    let usd = usd.abs();
    if usd > 0.0 && usd < 0.005 {
        return format!("{sign}<$0.01");
    }
    if usd >= 1000.0 {
        return format!("{sign}${}", whole(usd.round() as i64));
    }
    format!("{sign}${usd:.2}")
}

/// A fractional quantity such as premium requests: at most two decimals, trailing zeros
/// dropped, thousands grouped: `3`, `0.33`, `1,234.5`.
pub fn decimal(n: f64) -> String {
    let hundredths = (n * 100.0).round() as i64;
    let (whole_part, cents) = (hundredths / 100, (hundredths % 100).unsigned_abs());
    let sign = if hundredths < 0 && whole_part == 0 {
        "-"
    } else {
        ""
    };
    let fraction = match cents {
        0 => String::new(),
        c if c % 10 == 0 => format!(".{}", c / 10),
        c => format!(".{c:02}"),
    };
    format!("{sign}{}{fraction}", whole(whole_part))
}

/// A size in bytes as a person reads it: `708 B`, `1.3 MB`, `14.8 GB` (powers of 1,000, as
/// `ls --si` and the file managers count).
pub fn bytes(n: i64) -> String {
    const UNITS: [&str; 5] = ["kB", "MB", "GB", "TB", "PB"];
    if n.abs() < 1000 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1000.0;
    let mut unit = 0;
    while value.abs() >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// How long before `now_ms` the moment `ms` was: `just now`, `5m ago`, `2h ago`, `3d ago`; past
/// 30 days, the local date.
pub fn ago(ms: i64, now_ms: i64) -> String {
    let secs = (now_ms - ms) / 1000;
    match secs {
        i64::MIN..=59 => "just now".to_string(),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        86_400..=2_591_999 => format!("{}d ago", secs / 86_400),
        _ => local(ms, "%Y-%m-%d"),
    }
}

/// How far ahead of `now_ms` the moment `ms` is: `in 5m`, `in 3h`, `in 6d` (`now` within a
/// minute, or past).
pub fn ahead(ms: i64, now_ms: i64) -> String {
    let secs = (ms - now_ms) / 1000;
    match secs {
        i64::MIN..=59 => "now".to_string(),
        60..=3599 => format!("in {}m", secs / 60),
        3600..=86_399 => format!("in {}h", secs / 3600),
        _ => format!("in {}d", secs / 86_400),
    }
}

/// `ms` as local date and time to the minute: `2026-11-30 14:02`.
pub fn local_time(ms: i64) -> String {
    local(ms, "%Y-%m-%d %H:%M")
}

/// `ms` as local date and time to the second with the zone's offset, a moment no reader can
/// take for another zone's: `2026-11-30 14:02:05 +01:00`.
pub fn moment(ms: i64) -> String {
    let zone = zone::chosen();
    match (zone.local(ms), DateTime::from_timestamp_millis(ms)) {
        (Some(time), Some(utc)) => {
            let seconds = zone.offset_at(utc.naive_utc()).local_minus_utc();
            let sign = if seconds < 0 { '-' } else { '+' };
            let minutes = seconds.unsigned_abs() / 60;
            format!(
                "{} {sign}{:02}:{:02}",
                time.format("%Y-%m-%d %H:%M:%S"),
                minutes / 60,
                minutes % 60
            )
        }
        _ => ms.to_string(),
    }
}

/// Writes moments as their local time of day to the second (`14:02:05`), many in a row: the
/// zone's offset is looked up once per UTC hour. (A lookup and a `strftime` pattern per
/// moment were 7 % of `show`'s time for a session of 50,000 events.)
#[derive(Debug, Default)]
pub struct Clock {
    /// The UTC hour (epoch ms / 3,600,000) last looked up, and its offset when the offset
    /// was the same all through it.
    hour: Option<(i64, Option<FixedOffset>)>,
}

const HOUR_MS: i64 = 3_600_000;

impl Clock {
    /// Appends `ms` as `14:02:05` (its local time of day) to `out`.
    pub fn push(&mut self, out: &mut String, ms: i64) {
        let Some(time) = self.local(ms) else {
            out.push_str(&ms.to_string());
            return;
        };
        // `write!` to a String cannot fail.
        let _ = write!(
            out,
            "{:02}:{:02}:{:02}",
            time.hour(),
            time.minute(),
            time.second()
        );
    }

    /// The local date of `ms` (`None` past chrono's range).
    pub fn date(&mut self, ms: i64) -> Option<chrono::NaiveDate> {
        self.local(ms).map(|t| t.date())
    }

    /// `ms` as local date and time, the offset looked up once per UTC hour.
    fn local(&mut self, ms: i64) -> Option<NaiveDateTime> {
        let utc = DateTime::from_timestamp_millis(ms)?;
        let hour = ms.div_euclid(HOUR_MS);
        let offset = match self.hour {
            Some((cached, offset)) if cached == hour => offset,
            _ => {
                let offset = steady_offset(hour);
                self.hour = Some((hour, offset));
                offset
            }
        };
        let local = offset.unwrap_or_else(|| offset_at(utc.naive_utc()));
        Some(utc.naive_utc() + local)
    }
}

/// The local zone's offset all through UTC hour `hour`, or `None` when it changes within it
/// (no zone changes twice within an hour).
fn steady_offset(hour: i64) -> Option<FixedOffset> {
    let at = |ms: i64| DateTime::from_timestamp_millis(ms).map(|t| offset_at(t.naive_utc()));
    let first = at(hour * HOUR_MS)?;
    (at(hour * HOUR_MS + HOUR_MS - 1)? == first).then_some(first)
}

fn offset_at(utc: NaiveDateTime) -> FixedOffset {
    zone::chosen().offset_at(utc)
}

/// `ms` formatted in the zone times are read in ([`zone::chosen`]).
fn local(ms: i64, format: &str) -> String {
    match zone::chosen().local(ms) {
        Some(time) => time.format(format).to_string(),
        None => ms.to_string(),
    }
}

/// The project a working directory stands for: its last component (`/home/me/cmstore/` and
/// `C:\src\cmstore` both give `cmstore`).
pub fn project(cwd: &str) -> &str {
    let trimmed = cwd.trim_end_matches(['/', '\\']);
    match trimmed.rfind(['/', '\\']) {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

/// The shortest prefix of each of `ids` (sorted, distinct) that no other id shares, at least
/// `min` characters (or the whole id): what `--session` accepts back.
pub fn unique_prefixes(ids: &[String], min: usize) -> Vec<String> {
    let common = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    ids.iter()
        .enumerate()
        .map(|(i, id)| {
            let before = i.checked_sub(1).map_or(0, |j| common(&ids[j], id));
            let after = ids.get(i + 1).map_or(0, |next| common(next, id));
            let len = (before.max(after) + 1).max(min);
            id.chars().take(len).collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_read_in_powers_of_a_thousand() {
        let shown: Vec<String> = [0, 708, 999, 1000, 1_343_488, 999_950, 14_844_000_000]
            .into_iter()
            .map(bytes)
            .collect();
        assert_eq!(
            shown,
            ["0 B", "708 B", "999 B", "1.0 kB", "1.3 MB", "1.0 MB", "14.8 GB"]
        );
    }

    use super::*;

    #[test]
    fn the_clock_writes_what_chrono_formats_for_the_local_zone() {
        let mut clock = Clock::default();
        // Three days at 17-minute steps, then back and forth across hours.
        let mut moments: Vec<i64> = (0..260)
            .map(|i| 1_774_700_000_000 + i * 1_020_000)
            .collect();
        moments.extend([0, -1, 3_599_999, 3_600_000, 1_774_742_400_000, 59_999]);
        for ms in moments {
            let mut out = String::from("at ");
            clock.push(&mut out, ms);
            assert_eq!(out, format!("at {}", local(ms, "%H:%M:%S")), "{ms}");
        }
    }

    #[test]
    fn durations_read_at_a_glance() {
        assert_eq!(model("claude-opus-4-7"), "opus-4-7");
        assert_eq!(model("claude-sonnet-4-5-20250929"), "sonnet-4-5");
        assert_eq!(model("claude-haiku-4-5-20251001"), "haiku-4-5");
        assert_eq!(model("gpt-5.2-codex"), "gpt-5.2-codex");
        assert_eq!(model("gemini-2.5-pro"), "gemini-2.5-pro");
        assert_eq!(model(""), "");
        assert_eq!(duration(350), "350ms");
        assert_eq!(duration(4_200), "4.2s");
        assert_eq!(duration(10_000), "10s", "a whole second has no .0");
        assert_eq!(duration(482_000), "8m 02s");
        assert_eq!(duration(3 * 3_600_000 + 5 * 60_000), "3h 05m");
        assert_eq!(duration(2 * 86_400_000 + 4 * 3_600_000), "2d 04h");
        assert_eq!(duration(-150), "-150ms");
    }

    #[test]
    fn counts_round_down_to_one_decimal() {
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1.0k");
        assert_eq!(count(12_345), "12.3k");
        assert_eq!(count(123_456), "123k");
        assert_eq!(count(1_899_999), "1.8M");
        assert_eq!(count(2_100_000_000), "2.1B");
        assert_eq!(count(-1_500), "-1.5k");
    }

    #[test]
    fn decimals_keep_two_places_at_most() {
        assert_eq!(decimal(3.0), "3");
        assert_eq!(decimal(0.33), "0.33");
        assert_eq!(decimal(12.5), "12.5");
        assert_eq!(decimal(1234.567), "1,234.57");
        assert_eq!(decimal(0.001), "0");
        assert_eq!(decimal(-0.5), "-0.5");
    }

    #[test]
    fn costs_read_as_dollars() {
        assert_eq!(cost(12.344), "$12.34");
        assert_eq!(cost(0.0), "$0.00");
        assert_eq!(cost(0.004), "<$0.01");
        assert_eq!(cost(0.006), "$0.01");
        assert_eq!(cost(1234.5), "$1,235");
        assert_eq!(cost(1_234_567.0), "$1,234,567");
        assert_eq!(whole(999), "999");
        assert_eq!(whole(-5_000_000), "-5,000,000");
    }

    #[test]
    fn times_ago_and_projects() {
        let now = 1_800_000_000_000;
        assert_eq!(ago(now - 5_000, now), "just now");
        assert_eq!(ago(now - 5 * 60_000, now), "5m ago");
        assert_eq!(ago(now - 2 * 3_600_000, now), "2h ago");
        assert_eq!(ago(now - 3 * 86_400_000, now), "3d ago");
        assert_eq!(ago(now - 40 * 86_400_000, now).len(), "2026-11-30".len());
        assert_eq!(project("/home/me/cmstore/"), "cmstore");
        assert_eq!(project(r"C:\src\cmstore"), "cmstore");
        assert_eq!(project("cmstore"), "cmstore");
    }

    #[test]
    fn prefixes_are_unique_and_at_least_the_minimum() {
        let ids: Vec<String> = ["abcdefgh1111", "abcdefgh1122", "abcdefgx", "b"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            unique_prefixes(&ids, 8),
            ["abcdefgh111", "abcdefgh112", "abcdefgx", "b"]
        );
    }
}
