//! The `[budget]` section of `cmstore.toml`: limits on what the agents spend per day, week and
//! month (docs/budget.md). Like every section, each bad key costs only itself: a problem is
//! reported and the rest applies.
//!
//! ```toml
//! [budget]
//! mode = "enforce"          # or "audit" (the default): record only
//! warn_at = 0.8             # tell the agent once per session past 80 % of a limit
//! notify = true             # and the person once per window: a desktop notification, or
//!                           # a command line that reads the text on its stdin
//! day = 20                  # USD a day, for everything
//! week = { usd = 100, tokens = 50_000_000 }
//!
//! [budget.agents.codex]
//! day = 5
//!
//! [budget.agents.copilot]
//! month = { premium_requests = 300 }
//!
//! [budget.projects.web]     # a working directory's last component, or its path
//! month = 200
//! ```

use crate::model::agents::{Agent, NAMES};
use crate::model::budget::{Amount, Budget, BudgetMode, Limit, Notify, Period, Scope};

/// Reads `[budget]` from its table; every problem goes to `problem`.
pub fn read(mut table: toml::Table, problem: &mut impl FnMut(String)) -> Budget {
    let mut budget = Budget::default();
    if let Some(v) = table.remove("mode") {
        match v.as_str().map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            Some("audit") => budget.mode = BudgetMode::Audit,
            Some("enforce") => budget.mode = BudgetMode::Enforce,
            _ => problem(format!(
                "budget.mode = {v}: expected \"audit\" or \"enforce\"; using audit"
            )),
        }
    }
    if let Some(v) = table.remove("warn_at") {
        let share = v.as_float().or_else(|| v.as_integer().map(|n| n as f64));
        match share.filter(|s| *s > 0.0 && *s <= 1.0) {
            Some(share) => budget.warn_at = share,
            None => problem(format!(
                "budget.warn_at = {v}: expected a share of the limit above 0 and at most 1 \
                 (0.8 is 80 %); using 0.8"
            )),
        }
    }
    if let Some(v) = table.remove("notify") {
        match &v {
            toml::Value::Boolean(true) => budget.notify = Notify::Desktop,
            toml::Value::Boolean(false) => budget.notify = Notify::Off,
            toml::Value::String(line) if !line.trim().is_empty() => {
                budget.notify = Notify::Command(line.trim().to_string())
            }
            _ => problem(format!(
                "budget.notify = {v}: expected true (a desktop notification), false, or a \
                 command line that reads the text on its stdin; not notifying"
            )),
        }
    }
    let everything = Scope::default();
    limits(
        &mut table,
        "budget",
        &everything,
        &mut budget.limits,
        problem,
    );
    for (agent, v) in take(&mut table, "agents", "budget", problem) {
        let name = format!("budget.agents.{agent}");
        let Some(known) = Agent::from_flag(&agent) else {
            problem(format!(
                "{name}: no agent named {agent:?} ({NAMES}); ignored"
            ));
            continue;
        };
        let scope = Scope {
            agent: Some(known.as_str().to_string()),
            project: None,
        };
        scoped(v, &name, &scope, &mut budget.limits, problem);
    }
    for (project, v) in take(&mut table, "projects", "budget", problem) {
        let name = format!("budget.projects.{project:?}");
        let trimmed = project.trim_end_matches(['/', '\\']);
        if trimmed.is_empty() {
            problem(format!(
                "{name}: a project is a folder's name or a path, not empty; ignored"
            ));
            continue;
        }
        let scope = Scope {
            agent: None,
            project: Some(trimmed.to_string()),
        };
        scoped(v, &name, &scope, &mut budget.limits, problem);
    }
    for key in table.keys() {
        problem(format!(
            "unknown setting budget.{key} (expected mode, warn_at, notify, day, week, month, agents \
             or projects); ignored"
        ));
    }
    budget
}

/// One agent's or project's table of limits.
fn scoped(
    v: toml::Value,
    name: &str,
    scope: &Scope,
    limits_out: &mut Vec<Limit>,
    problem: &mut impl FnMut(String),
) {
    let toml::Value::Table(mut table) = v else {
        problem(format!(
            "{name} = {v}: expected a table of day, week and month limits; ignored"
        ));
        return;
    };
    limits(&mut table, name, scope, limits_out, problem);
    for key in table.keys() {
        problem(format!(
            "unknown setting {name}.{key} (expected day, week or month); ignored"
        ));
    }
}

/// The `day`, `week` and `month` limits of `table`, for `scope`: a number is USD, a table
/// gives `usd`, `tokens` and `premium_requests`.
fn limits(
    table: &mut toml::Table,
    section: &str,
    scope: &Scope,
    out: &mut Vec<Limit>,
    problem: &mut impl FnMut(String),
) {
    for period in Period::ALL {
        let Some(v) = table.remove(period.as_str()) else {
            continue;
        };
        let name = format!("{section}.{}", period.as_str());
        let amounts = match v {
            toml::Value::Table(mut units) => {
                let usd = units.remove("usd").and_then(|v| usd(&v, &name, problem));
                let tokens = units
                    .remove("tokens")
                    .and_then(|v| tokens(&v, &name, problem));
                let premium = units
                    .remove("premium_requests")
                    .and_then(|v| premium_requests(&v, &name, problem));
                for key in units.keys() {
                    problem(format!(
                        "unknown setting {name}.{key} (expected usd, tokens or \
                         premium_requests); ignored"
                    ));
                }
                [usd, tokens, premium]
            }
            other => [usd(&other, &name, problem), None, None],
        };
        out.extend(amounts.into_iter().flatten().map(|amount| Limit {
            period,
            amount,
            scope: scope.clone(),
        }));
    }
}

/// A USD amount: a positive number.
fn usd(v: &toml::Value, name: &str, problem: &mut impl FnMut(String)) -> Option<Amount> {
    let usd = v.as_float().or_else(|| v.as_integer().map(|n| n as f64));
    match usd.filter(|u| u.is_finite() && *u > 0.0) {
        Some(usd) => Some(Amount::Usd(usd)),
        None => {
            problem(format!(
                "{name} = {v}: expected a positive amount of USD, or {{ usd = …, tokens = … }}; \
                 ignored"
            ));
            None
        }
    }
}

/// A token amount: a positive whole number.
fn tokens(v: &toml::Value, name: &str, problem: &mut impl FnMut(String)) -> Option<Amount> {
    match v.as_integer().filter(|n| *n > 0) {
        Some(n) => Some(Amount::Tokens(n)),
        None => {
            problem(format!(
                "{name}.tokens = {v}: expected a positive whole number of tokens; ignored"
            ));
            None
        }
    }
}

/// A number of premium requests: a positive number (a model's multiplier may be a fraction).
fn premium_requests(
    v: &toml::Value,
    name: &str,
    problem: &mut impl FnMut(String),
) -> Option<Amount> {
    let n = v.as_float().or_else(|| v.as_integer().map(|n| n as f64));
    match n.filter(|n| n.is_finite() && *n > 0.0) {
        Some(n) => Some(Amount::PremiumRequests(n)),
        None => {
            problem(format!(
                "{name}.premium_requests = {v}: expected a positive number of premium \
                 requests; ignored"
            ));
            None
        }
    }
}

/// Removes `key` from `table` as a table; another value is reported.
fn take(
    table: &mut toml::Table,
    key: &str,
    section: &str,
    problem: &mut impl FnMut(String),
) -> toml::Table {
    match table.remove(key) {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(other) => {
            problem(format!(
                "{section}.{key} = {other}: expected a table; ignored"
            ));
            toml::Table::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Budget, Vec<String>) {
        let table: toml::Table = text.parse().unwrap();
        let mut problems = Vec::new();
        let budget = read(table, &mut |p| problems.push(p));
        (budget, problems)
    }

    #[test]
    fn limits_for_everything_an_agent_and_a_project() {
        let (budget, problems) = parse(
            r#"
            mode = "enforce"
            warn_at = 0.9
            day = 20
            week = { usd = 100.5, tokens = 50_000_000 }
            [agents.Codex]
            day = 5
            [projects."web/"]
            month = { tokens = 1000 }
            [agents.copilot]
            month = { premium_requests = 300, usd = 10 }
            "#,
        );
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(budget.mode, BudgetMode::Enforce);
        assert_eq!(budget.warn_at, 0.9);
        let keys: Vec<String> = budget.limits.iter().map(Limit::key).collect();
        assert_eq!(
            keys,
            [
                "day.usd",
                "week.usd",
                "week.tokens",
                "day.usd.agent=codex",
                "month.usd.agent=copilot",
                "month.premium_requests.agent=copilot",
                "month.tokens.project=web"
            ]
        );
        assert_eq!(budget.limits[1].amount, Amount::Usd(100.5));
        assert_eq!(budget.limits[5].amount, Amount::PremiumRequests(300.0));
    }

    #[test]
    fn each_bad_key_costs_only_itself() {
        let (budget, problems) = parse(
            r#"
            mode = "block"
            warn_at = 80
            day = -1
            week = { usd = 10, dollars = 3, tokens = 1.5, premium_requests = 0 }
            monthly = 5
            agents = 3
            [projects.""]
            day = 1
            "#,
        );
        assert_eq!(budget.mode, BudgetMode::Audit);
        assert_eq!(budget.warn_at, 0.8);
        assert_eq!(budget.limits.len(), 1, "{:?}", budget.limits);
        assert_eq!(budget.limits[0].key(), "week.usd");
        assert_eq!(problems.len(), 9, "{problems:#?}");
        assert!(problems[0].starts_with("budget.mode = \"block\""));
        assert!(problems.iter().any(|p| p.contains("budget.week.dollars")));
        assert!(problems
            .iter()
            .any(|p| p.contains("unknown setting budget.monthly")));

        let (budget, problems) = parse("[agents.aider]\nday = 1\n[agents.claude]\nyear = 1");
        assert!(budget.is_empty());
        assert!(
            problems[0].contains("no agent named \"aider\""),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("budget.agents.claude.year"),
            "{problems:?}"
        );
    }
}
