//! `cmstore budget`'s answer: where each `[budget]` limit stands, counted from the store now
//! (read-only), beside what the hooks see in the spend file a running ingest keeps.

use std::path::Path;

use anyhow::Context;
use rusqlite::types::Value;

use crate::model::budget::{Budget, BudgetMode, Level, Standing};
use crate::model::spend::{window_starts, SpendFile};
use crate::read::report;
use crate::store::read_only;
use crate::support::human;

/// The spend of everything and of each scope `budget` counts, from the store at `db` as it is
/// at `now_ms`.
pub fn spend_now(db: &Path, budget: &Budget, now_ms: i64) -> anyhow::Result<SpendFile> {
    // Opened the reports' way first: a missing store, or one behind the schema, says so there.
    drop(report::open_read_only(db)?);
    let conn = read_only::connection(db, read_only::MAX_BUSY_WAIT)
        .with_context(|| format!("opening {}", db.display()))?;
    crate::store::spend::spend_file(&conn, now_ms, window_starts(now_ms), &budget.scopes())
        .context("counting the spend")
}

/// The columns of [`rows`]: `unit` (`usd`, `tokens`, `premium_requests`) only in the raw
/// rows, whose numbers do not say it, and last, where it moves no column a script reads by
/// its place.
pub fn columns(readable: bool) -> Vec<String> {
    [
        "period",
        "scope",
        "limit",
        "spent",
        "share",
        "state",
        "hooks_see",
        "unit",
    ]
    .into_iter()
    .filter(|c| !readable || *c != "unit")
    .map(str::to_string)
    .collect()
}

/// One row per limit: its period, scope, (raw) unit, amount, the spend now, its share of the
/// limit, its state (`ok`, `warn`, `over`), and the spend the hooks see in the spend file
/// (`NULL` when the file does not count it). Readable (`$20.00`, `85 %`) when `readable`,
/// else raw numbers.
pub fn rows(
    budget: &Budget,
    now: &SpendFile,
    hooks: Option<&SpendFile>,
    now_ms: i64,
    readable: bool,
) -> Vec<Vec<Value>> {
    let seen = budget.standings(hooks, now_ms);
    budget
        .standings(Some(now), now_ms)
        .iter()
        .zip(&seen)
        .map(|(s, hooks)| row(s, hooks, readable))
        .collect()
}

fn row(s: &Standing<'_>, hooks: &Standing<'_>, readable: bool) -> Vec<Value> {
    let limit = s.limit;
    let amount = |a: Option<crate::model::budget::Amount>| match (a, readable) {
        (None, _) => Value::Null,
        (Some(a), true) => Value::Text(a.show_short()),
        (Some(a), false) => Value::Real(a.value()),
    };
    let share = match readable {
        true => Value::Text(format!("{:.0} %", s.share() * 100.0)),
        false => Value::Real((s.share() * 10_000.0).round() / 10_000.0),
    };
    let state = match (s.level, readable) {
        (Level::Over, true) => "OVER".to_string(),
        (level, _) => level.as_str().to_string(),
    };
    let mut row = vec![
        Value::Text(limit.period.as_str().to_string()),
        Value::Text(limit.scope.show()),
        amount(Some(limit.amount)),
        amount(s.spent),
        share,
        Value::Text(state),
        amount(hooks.spent),
    ];
    if !readable {
        row.push(Value::Text(limit.amount.unit().to_string()));
    }
    row
}

/// What a crossed limit does in `mode`, as the summaries say it.
fn what_mode_does(mode: BudgetMode) -> &'static str {
    match mode {
        BudgetMode::Enforce => "tool calls and prompts past a limit are refused",
        BudgetMode::Audit => "calls past a limit are recorded, not refused",
    }
}

/// For `status`: a field per limit (`day`, `month codex`) and what it stands at (`$1.20 of
/// $1.00 (120 %): OVER`), after the mode; one row.
pub fn fields(budget: &Budget, now: &SpendFile, now_ms: i64) -> (Vec<String>, Vec<Value>) {
    let mode = format!("{}: {}", budget.mode.as_str(), what_mode_does(budget.mode));
    let mut columns = vec!["mode".to_string()];
    let mut row = vec![Value::Text(mode)];
    for s in budget.standings(Some(now), now_ms) {
        let scope = match s.limit.scope.is_everything() {
            true => String::new(),
            false => format!(" {}", s.limit.scope.show()),
        };
        // A limit in tokens or premium requests beside one in USD of the same period and
        // scope: a field of its own.
        let unit = match s.limit.amount {
            crate::model::budget::Amount::Usd(_) => "",
            crate::model::budget::Amount::Tokens(_) => " tokens",
            crate::model::budget::Amount::PremiumRequests(_) => " premium requests",
        };
        columns.push(format!("{}{scope}{unit}", s.limit.period.as_str()));
        let state = match s.level {
            Level::Over => ": OVER",
            Level::Warn => ": past warn_at",
            _ => "",
        };
        row.push(Value::Text(format!(
            "{} of {} ({:.0} %){state}",
            s.spent.map_or("?".to_string(), |a| a.show()),
            s.limit.amount.show(),
            s.share() * 100.0
        )));
    }
    (columns, row)
}

/// The lines above the table: the mode, `warn_at`, and how old the hooks' figures are.
pub fn summary(budget: &Budget, hooks: Option<&SpendFile>, now_ms: i64) -> String {
    let what = format!(
        "{} mode ({})",
        budget.mode.as_str(),
        what_mode_does(budget.mode)
    );
    let seen = match hooks {
        None => "The hooks see no spend yet: a running `cmstore ingest` counts it.".to_string(),
        Some(file) => format!(
            "The hooks see the spend ingest counted {} (hooks_see).",
            human::ago(file.at, now_ms)
        ),
    };
    format!(
        "Budget: {what}; the agent is warned at {:.0} %.\n{seen}",
        budget.warn_at * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::budget::{Amount, Limit, Period, Scope};
    use crate::model::spend::{Spent, Windows};

    #[test]
    fn each_limit_is_a_row_with_the_spend_now_and_what_the_hooks_see() {
        let now_ms = crate::support::clock::now_ms();
        let (day, week, month) = window_starts(now_ms);
        let spent = |from, usd| Spent {
            from,
            usd: Some(usd),
            tokens: 0,
            responses: 1,
            unpriced: 0,
            premium_requests: Some(0.0),
        };
        let file = |usd| SpendFile {
            v: 1,
            at: now_ms,
            all: Windows {
                day: spent(day, usd),
                week: spent(week, usd),
                month: spent(month, usd),
            },
            scopes: Vec::new(),
        };
        let budget = Budget {
            limits: vec![Limit {
                period: Period::Day,
                amount: Amount::Usd(10.0),
                scope: Scope::default(),
            }],
            ..Budget::default()
        };
        let rows = rows(&budget, &file(12.0), Some(&file(9.0)), now_ms, true);
        assert_eq!(
            rows,
            [[
                Value::Text("day".into()),
                Value::Text("everything".into()),
                Value::Text("$10.00".into()),
                Value::Text("$12.00".into()),
                Value::Text("120 %".into()),
                Value::Text("OVER".into()),
                Value::Text("$9.00".into()),
            ]]
        );
        let raw = super::rows(&budget, &file(8.5), None, now_ms, false);
        assert_eq!(raw[0][4], Value::Real(0.85));
        assert_eq!(raw[0][5], Value::Text("warn".into()));
        assert_eq!(raw[0][6], Value::Null);
        assert_eq!(raw[0][7], Value::Text("usd".into()));
        assert_eq!(columns(false).len(), raw[0].len());
        assert_eq!(columns(true).len(), rows[0].len());
    }
}
