//! `cmstore statusline`: one line for Claude Code's `statusLine` (or any status bar): what the
//! agents spent today and this week, and this session's cost as Claude Code reports it. It
//! reads the spend file a running ingest keeps ([`crate::model::spend`]) and the status
//! payload on stdin; it never opens the database, and prints its line whatever is missing.

use std::io::{self, IsTerminal, Read, Write};
use std::process::ExitCode;

use serde_json::Value;

use crate::config::Config;
use crate::files::paths::Paths;
use crate::model::budget::{Budget, Level};
use crate::model::spend::{window_starts, SpendFile, Spent};
use crate::support::{clock, human, zone};

/// Arguments of `cmstore statusline`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// The most of the status payload read from stdin.
const MAX_PAYLOAD: u64 = 1 << 20;

/// A spend file older than this says when it was counted.
const STALE_MS: i64 = 10 * 60 * 1000;

pub fn run(paths: &Paths, _args: Args) -> anyhow::Result<ExitCode> {
    let payload = read_payload();
    let file = crate::files::spend::read(&paths.spend_file()).ok();
    let now = clock::now_ms();
    let mut line = status_line(file.as_ref(), payload.as_ref(), now);
    let budget = Config::load_for(paths).0.budget;
    if let Some(state) = budget_state(&budget, file.as_ref(), payload.as_ref(), now) {
        line.push_str(" · ");
        line.push_str(&state);
    }
    let mut out = io::stdout().lock();
    writeln!(out, "{line}")?;
    Ok(ExitCode::SUCCESS)
}

/// The status payload on stdin (Claude Code's `statusLine` JSON), if any: nothing is waited
/// for on a terminal.
fn read_payload() -> Option<Value> {
    let stdin = io::stdin();
    if stdin.is_terminal() {
        return None;
    }
    let mut text = Vec::new();
    stdin.lock().take(MAX_PAYLOAD).read_to_end(&mut text).ok()?;
    serde_json::from_slice(&text).ok()
}

/// The line: `cmstore · today $12.30 · week $40.12 · session $0.42`; a window the file does
/// not cover (counted before it began) shows `–`, a file older than ten minutes says when it
/// was counted.
pub fn status_line(file: Option<&SpendFile>, payload: Option<&Value>, now_ms: i64) -> String {
    let mut parts = vec!["cmstore".to_string()];
    match file {
        None => parts.push("no spend yet (`cmstore ingest` counts it)".to_string()),
        Some(file) => {
            let (day, week, _) = window_starts(now_ms);
            let shown = |spent: &Spent, from: i64| {
                if spent.from == from {
                    cost(spent)
                } else {
                    "–".to_string()
                }
            };
            parts.push(format!("today {}", shown(&file.all.day, day)));
            parts.push(format!("week {}", shown(&file.all.week, week)));
            if now_ms - file.at > STALE_MS {
                parts.push(format!("as of {}", counted_at(file.at, now_ms)));
            }
        }
    }
    let session = payload
        .and_then(|p| p.pointer("/cost/total_cost_usd"))
        .and_then(Value::as_f64);
    if let Some(usd) = session {
        parts.push(format!("session {}", human::cost(usd)));
    }
    parts.join(" · ")
}

/// The budget limit closest to its end (or past it) among those that count the session's
/// spend (Claude Code's, in the payload's working directory; everything's without a payload):
/// `budget day $8.00/$20.00`, `budget day $17.00/$20.00 (85 %)` past `warn_at`, `OVER budget
/// day $21.30/$20.00` past the limit. `None` without a limit, or when none is known.
pub fn budget_state(
    budget: &Budget,
    file: Option<&SpendFile>,
    payload: Option<&Value>,
    now_ms: i64,
) -> Option<String> {
    let standings = match payload {
        Some(payload) => {
            let cwd = payload
                .get("cwd")
                .or_else(|| payload.pointer("/workspace/current_dir"))
                .and_then(Value::as_str);
            budget.standings_for("claude", cwd, file, now_ms)
        }
        None => budget
            .standings(file, now_ms)
            .into_iter()
            .filter(|s| s.limit.scope.is_everything())
            .collect(),
    };
    let worst = standings
        .into_iter()
        .filter(|s| s.level != Level::Unknown)
        .max_by(|a, b| a.level.cmp(&b.level).then(a.share().total_cmp(&b.share())))?;
    let limit = worst.limit;
    let scope = match limit.scope.is_everything() {
        true => String::new(),
        false => format!("{} ", limit.scope.show()),
    };
    let spent = worst.spent.map_or("?".to_string(), |a| a.show_short());
    let figures = format!(
        "{scope}{} {spent}/{}",
        limit.period.as_str(),
        limit.amount.show_short()
    );
    Some(match worst.level {
        Level::Over => format!("OVER budget {figures}"),
        Level::Warn => format!("budget {figures} ({:.0} %)", worst.share() * 100.0),
        Level::Under | Level::Unknown => format!("budget {figures}"),
    })
}

/// When the spend file was counted, as short as tells it (a status line has little room):
/// `14:02` the same day, `12-05 14:02` before.
fn counted_at(at_ms: i64, now_ms: i64) -> String {
    let zone = zone::chosen();
    match (zone.local(at_ms), zone.local(now_ms)) {
        (Some(at), Some(now)) if at.date() == now.date() => at.format("%H:%M").to_string(),
        (Some(at), _) => at.format("%m-%d %H:%M").to_string(),
        _ => human::local_time(at_ms),
    }
}

/// A window's cost as the reports write it: `+` when some responses have no price, `?` when
/// none has.
fn cost(spent: &Spent) -> String {
    match (spent.usd, spent.unpriced) {
        (None, 0) => human::cost(0.0),
        (None, _) => "?".to_string(),
        (Some(usd), 0) => human::cost(usd),
        (Some(usd), _) => format!("{}+", human::cost(usd)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::spend::Windows;
    use serde_json::json;

    fn spent(from: i64, usd: Option<f64>, unpriced: i64) -> Spent {
        Spent {
            from,
            usd,
            tokens: 0,
            responses: 3,
            unpriced,
            premium_requests: Some(0.0),
        }
    }

    #[test]
    fn the_line_says_today_the_week_and_the_session() {
        let now = clock::now_ms();
        let (day, week, month) = window_starts(now);
        let file = SpendFile {
            v: 1,
            at: now - 1000,
            all: Windows {
                day: spent(day, Some(12.3), 0),
                week: spent(week, Some(40.12), 2),
                month: spent(month, None, 0),
            },
            scopes: Vec::new(),
        };
        let payload = json!({"cost": {"total_cost_usd": 0.4212}});
        assert_eq!(
            status_line(Some(&file), Some(&payload), now),
            "cmstore · today $12.30 · week $40.12+ · session $0.42"
        );
        // Counted yesterday: today is not known; and a day old, it says when.
        let old = SpendFile {
            at: now - 86_400_000,
            all: Windows {
                day: spent(day - 86_400_000, Some(5.0), 0),
                ..file.all.clone()
            },
            ..file.clone()
        };
        let line = status_line(Some(&old), None, now);
        assert!(line.starts_with("cmstore · today – · week "), "{line}");
        let yesterday = zone::chosen().local(now - 86_400_000).unwrap();
        assert!(
            line.ends_with(&format!(" · as of {}", yesterday.format("%m-%d %H:%M"))),
            "{line}"
        );
        // Counted twenty minutes ago, the same day: the time alone.
        let noon = day + 12 * 3_600_000;
        let recent = SpendFile {
            at: noon - 20 * 60_000,
            ..file.clone()
        };
        let at = zone::chosen().local(noon - 20 * 60_000).unwrap();
        assert!(
            status_line(Some(&recent), None, noon)
                .ends_with(&format!(" · as of {}", at.format("%H:%M"))),
            "{}",
            status_line(Some(&recent), None, noon)
        );
        assert_eq!(
            status_line(None, None, now),
            "cmstore · no spend yet (`cmstore ingest` counts it)"
        );
    }
}
