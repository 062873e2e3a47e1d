//! Budgets: limits on what the agents spend per day, week and month (local time), in USD,
//! tokens or Copilot's premium requests, for everything or for one agent or project, and where the spend stands against
//! each. Pure: the figures come from the spend file ([`crate::model::spend`]) a running ingest
//! keeps; `capture` reads it to warn and deny, `cmstore budget`, `status` and `statusline` to
//! show it.
//!
//! A spend counted earlier in the same window is a lower bound of the spend now: usage only
//! grows within a window. So a limit the file shows crossed is crossed, however old the file;
//! a file counted in an earlier window says nothing about this one ([`Level::Unknown`]).

pub use crate::model::spend::{in_project, Scope};
use crate::model::spend::{window_starts, SpendFile, Spent, Windows};
use crate::support::human;

/// The prefix of a limit's rule name among the safety gate's, in a tool call's `risk`:
/// `budget:day.usd` ([`Limit::key`]).
pub const RULE_PREFIX: &str = "budget:";

/// The share of a limit past which the agent is warned, when `warn_at` is not set.
pub const DEFAULT_WARN_AT: f64 = 0.8;

/// What a crossed limit does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum BudgetMode {
    /// Record what would have been denied; deny nothing.
    #[default]
    Audit,
    /// Deny new tool calls and refuse prompts (where the agent allows it).
    Enforce,
}

impl BudgetMode {
    /// The name written in `cmstore.toml` and on the queue line.
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetMode::Audit => "audit",
            BudgetMode::Enforce => "enforce",
        }
    }
}

/// A budget's window, starting at local midnight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Period {
    /// From today's midnight.
    Day,
    /// From Monday's midnight.
    Week,
    /// From the 1st's midnight.
    Month,
}

impl Period {
    /// Every period, in the order they are shown.
    pub const ALL: [Period; 3] = [Period::Day, Period::Week, Period::Month];

    /// The key in `cmstore.toml` and on the queue line.
    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// The adjective a sentence uses: the *daily* budget.
    pub fn adjective(self) -> &'static str {
        match self {
            Period::Day => "daily",
            Period::Week => "weekly",
            Period::Month => "monthly",
        }
    }

    /// The window's figures in the spend file, for everything or for one scope.
    fn of(self, figures: &Windows) -> &Spent {
        match self {
            Period::Day => &figures.day,
            Period::Week => &figures.week,
            Period::Month => &figures.month,
        }
    }
}

/// How much a limit allows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Amount {
    /// The cost of the priced responses, in USD.
    Usd(f64),
    /// Every token of the responses (input, output, cache reads and writes).
    Tokens(i64),
    /// GitHub Copilot's premium requests (the responses of other agents cost none).
    PremiumRequests(f64),
}

impl Amount {
    /// The amount as a person reads it: `$20.00`, `5,000,000 tokens`.
    pub fn show(self) -> String {
        match self {
            Amount::Usd(usd) => human::cost(usd),
            Amount::Tokens(n) => format!("{} tokens", human::whole(n)),
            Amount::PremiumRequests(1.0) => "1 premium request".to_string(),
            Amount::PremiumRequests(n) => format!("{} premium requests", human::decimal(n)),
        }
    }

    /// The amount in few characters, for a status bar: `$20.00`, `5.0M tok`.
    pub fn show_short(self) -> String {
        match self {
            Amount::Usd(usd) => human::cost(usd),
            Amount::Tokens(n) => format!("{} tok", human::count(n)),
            Amount::PremiumRequests(n) => format!("{} req", human::decimal(n)),
        }
    }

    /// The unit's key in `cmstore.toml` (`usd`, `tokens`, `premium_requests`).
    pub fn unit(self) -> &'static str {
        match self {
            Amount::Usd(_) => "usd",
            Amount::Tokens(_) => "tokens",
            Amount::PremiumRequests(_) => "premium_requests",
        }
    }

    /// The amount as a number, in its unit.
    pub fn value(self) -> f64 {
        match self {
            Amount::Usd(usd) => usd,
            Amount::Tokens(n) => n as f64,
            Amount::PremiumRequests(n) => n,
        }
    }

    /// The same unit's spend in `spent`; `None` when `spent` did not count it (premium
    /// requests in a file an earlier cmstore wrote).
    fn spent_in(self, spent: &Spent) -> Option<Amount> {
        match self {
            Amount::Usd(_) => Some(Amount::Usd(spent.usd.unwrap_or(0.0))),
            Amount::Tokens(_) => Some(Amount::Tokens(spent.tokens)),
            Amount::PremiumRequests(_) => spent.premium_requests.map(Amount::PremiumRequests),
        }
    }
}

/// One limit: an amount per period, for a scope.
#[derive(Debug, Clone, PartialEq)]
pub struct Limit {
    pub period: Period,
    pub amount: Amount,
    pub scope: Scope,
}

impl Limit {
    /// The limit as a sentence names it: `the daily budget of $20.00 (codex)`.
    pub fn show(&self) -> String {
        let scope = match self.scope.is_everything() {
            true => String::new(),
            false => format!(" ({})", self.scope.show()),
        };
        format!(
            "the {} budget of {}{scope}",
            self.period.adjective(),
            self.amount.show()
        )
    }

    /// A short name that stays the same while the limit does: `day.usd`,
    /// `week.tokens.agent=codex`; on the queue line and in the warning's marker.
    pub fn key(&self) -> String {
        let mut key = format!("{}.{}", self.period.as_str(), self.amount.unit());
        if let Some(agent) = &self.scope.agent {
            key.push_str(&format!(".agent={agent}"));
        }
        if let Some(project) = &self.scope.project {
            key.push_str(&format!(".project={project}"));
        }
        key
    }

    /// Where in `cmstore.toml` the limit is set: `budget.day`, `budget.agents.codex.week`.
    pub fn setting(&self) -> String {
        let period = self.period.as_str();
        match (&self.scope.agent, &self.scope.project) {
            (Some(agent), _) => format!("budget.agents.{agent}.{period}"),
            (None, Some(project)) => format!("budget.projects.{}.{period}", quoted_key(project)),
            (None, None) => format!("budget.{period}"),
        }
    }
}

/// A TOML key as written: bare when it can be, quoted otherwise.
fn quoted_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    match bare {
        true => key.to_string(),
        false => format!("{key:?}"),
    }
}

/// `[budget]`: the limits, the share past which the agent is warned, what a crossed limit
/// does, and how the person is told.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    pub mode: BudgetMode,
    /// A share of each limit (0 < warn_at ≤ 1).
    pub warn_at: f64,
    pub limits: Vec<Limit>,
    pub notify: Notify,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            mode: BudgetMode::Audit,
            warn_at: DEFAULT_WARN_AT,
            limits: Vec::new(),
            notify: Notify::Off,
        }
    }
}

/// How a following ingest tells the person that a limit's spend passed `warn_at` or the
/// limit, once per limit, level and window (`[budget] notify`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Notify {
    /// Not told (the default): the agent, `status`, `budget` and `statusline` say it.
    #[default]
    Off,
    /// The system's own notification: `notify-send` (Linux and the BSDs), `osascript`
    /// (macOS), a PowerShell toast (Windows).
    Desktop,
    /// A command line of the person's (run by the shell), the text on its stdin.
    Command(String),
}

impl Budget {
    /// True when no limit is set: nothing to read, nothing to check.
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty()
    }

    /// The scopes other than everything that the limits count, each once, in order: the spend
    /// file carries their figures.
    pub fn scopes(&self) -> Vec<Scope> {
        let mut scopes: Vec<Scope> = self
            .limits
            .iter()
            .map(|l| l.scope.clone())
            .filter(|s| !s.is_everything())
            .collect();
        scopes.sort();
        scopes.dedup();
        scopes
    }

    /// Where every limit stands at `now_ms`, by the spend file (none: nothing is known).
    pub fn standings(&self, file: Option<&SpendFile>, now_ms: i64) -> Vec<Standing<'_>> {
        self.limits
            .iter()
            .map(|limit| Standing::of(limit, self.warn_at, file, now_ms))
            .collect()
    }

    /// Where the limits that count an event of `agent` in `cwd` stand, worst first.
    pub fn standings_for(
        &self,
        agent: &str,
        cwd: Option<&str>,
        file: Option<&SpendFile>,
        now_ms: i64,
    ) -> Vec<Standing<'_>> {
        let mut standings: Vec<Standing<'_>> = self
            .standings(file, now_ms)
            .into_iter()
            .filter(|s| s.limit.scope.holds(agent, cwd))
            .collect();
        standings.sort_by(|a, b| b.level.cmp(&a.level).then(b.share().total_cmp(&a.share())));
        standings
    }
}

/// How far a limit's spend has gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// Not known: the spend file is missing, or was counted before the window began.
    Unknown,
    /// Below `warn_at`.
    Under,
    /// At or past `warn_at`, below the limit.
    Warn,
    /// At or past the limit.
    Over,
}

impl Level {
    /// The word `cmstore budget` and the queue line use.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Unknown => "unknown",
            Level::Under => "ok",
            Level::Warn => "warn",
            Level::Over => "over",
        }
    }
}

/// Where one limit stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing<'b> {
    pub limit: &'b Limit,
    /// The spend in the limit's unit, when known.
    pub spent: Option<Amount>,
    /// Responses with no price (a USD limit leaves them out of its spend).
    pub unpriced: i64,
    /// Where the window began (epoch ms).
    pub from: i64,
    pub level: Level,
}

impl<'b> Standing<'b> {
    fn of(limit: &'b Limit, warn_at: f64, file: Option<&SpendFile>, now_ms: i64) -> Standing<'b> {
        let from = start_of(limit.period, now_ms);
        let figures = file.and_then(|file| file.figures(&limit.scope));
        let spent = figures
            .map(|f| limit.period.of(f))
            .filter(|spent| spent.from == from)
            .and_then(|spent| Some((spent, limit.amount.spent_in(spent)?)));
        let Some((spent, amount)) = spent else {
            return Standing {
                limit,
                spent: None,
                unpriced: 0,
                from,
                level: Level::Unknown,
            };
        };
        let (used, allowed) = (amount.value(), limit.amount.value());
        let level = if used >= allowed {
            Level::Over
        } else if used >= allowed * warn_at {
            Level::Warn
        } else {
            Level::Under
        };
        Standing {
            limit,
            spent: Some(amount),
            unpriced: match limit.amount {
                Amount::Usd(_) => spent.unpriced,
                Amount::Tokens(_) | Amount::PremiumRequests(_) => 0,
            },
            from,
            level,
        }
    }

    /// The share of the limit spent (0 when not known).
    pub fn share(&self) -> f64 {
        let allowed = self.limit.amount.value();
        match self.spent {
            Some(spent) if allowed > 0.0 => spent.value() / allowed,
            Some(_) => f64::INFINITY,
            None => 0.0,
        }
    }

    /// The spend as a sentence says it: `$21.30 (and 2 unpriced responses)`.
    pub fn spent_text(&self) -> String {
        let Some(spent) = self.spent else {
            return "not known".to_string();
        };
        match self.unpriced {
            0 => spent.show(),
            1 => format!("{} and 1 unpriced response", spent.show()),
            n => format!("{} and {n} unpriced responses", spent.show()),
        }
    }

    /// The warning the agent is given once per session past `warn_at`.
    pub fn warning(&self) -> String {
        format!(
            "cmstore budget: {} spent of {} ({:.0} %).",
            self.spent_text(),
            self.limit.show(),
            self.share() * 100.0
        )
    }

    /// What the person is told once the spend passes `warn_at` or the limit, with what the
    /// limit does in `mode`.
    pub fn notice(&self, mode: BudgetMode) -> String {
        let past = match (self.level, mode) {
            (Level::Over, BudgetMode::Enforce) => {
                " The limit is reached: new tool calls and prompts are refused."
            }
            (Level::Over, BudgetMode::Audit) => {
                " The limit is reached (audit: nothing is refused)."
            }
            _ => "",
        };
        format!("{}{past}", self.warning())
    }

    /// Why a tool call or prompt is refused: the budget, its spend, and how to raise it.
    pub fn deny_reason(&self, config_file: &str) -> String {
        format!(
            "Blocked by cmstore budget: {} spent of {} — raise {} in {config_file}, or set \
             budget.mode = \"audit\" there, to go on.",
            self.spent_text(),
            self.limit.show(),
            self.limit.setting()
        )
    }
}

/// Where the window of `period` that holds `now_ms` began.
fn start_of(period: Period, now_ms: i64) -> i64 {
    let (day, week, month) = window_starts(now_ms);
    match period {
        Period::Day => day,
        Period::Week => week,
        Period::Month => month,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::spend::ScopeSpend;

    fn spent(from: i64, usd: f64, tokens: i64) -> Spent {
        Spent {
            from,
            usd: Some(usd),
            tokens,
            responses: 10,
            unpriced: 0,
            premium_requests: Some(0.0),
        }
    }

    fn file(now: i64, day_usd: f64, codex_day_usd: f64) -> SpendFile {
        let (d, w, m) = window_starts(now);
        SpendFile {
            v: 1,
            at: now,
            all: Windows {
                day: spent(d, day_usd, 1000),
                week: spent(w, day_usd * 3.0, 3000),
                month: spent(m, day_usd * 9.0, 9000),
            },
            scopes: vec![ScopeSpend {
                scope: Scope {
                    agent: Some("codex".into()),
                    project: None,
                },
                windows: Windows {
                    day: spent(d, codex_day_usd, 100),
                    week: spent(w, codex_day_usd, 100),
                    month: spent(m, codex_day_usd, 100),
                },
            }],
        }
    }

    fn limit(period: Period, amount: Amount, agent: Option<&str>) -> Limit {
        Limit {
            period,
            amount,
            scope: Scope {
                agent: agent.map(str::to_string),
                project: None,
            },
        }
    }

    #[test]
    fn each_limit_stands_under_warn_or_over_by_its_own_window_and_scope() {
        let now = crate::support::clock::now_ms();
        let budget = Budget {
            mode: BudgetMode::Enforce,
            warn_at: 0.8,
            notify: Notify::Off,
            limits: vec![
                limit(Period::Day, Amount::Usd(20.0), None),
                limit(Period::Week, Amount::Usd(50.0), None),
                limit(Period::Month, Amount::Tokens(8000), None),
                limit(Period::Day, Amount::Usd(5.0), Some("codex")),
            ],
        };
        let file = file(now, 17.0, 6.0);
        let levels: Vec<Level> = budget
            .standings(Some(&file), now)
            .iter()
            .map(|s| s.level)
            .collect();
        assert_eq!(
            levels,
            [Level::Warn, Level::Over, Level::Over, Level::Over],
            "$17 of $20 is 85 %; $51 of $50; 9,000 of 8,000 tokens; codex $6 of $5"
        );
        // Claude's events count toward everything's limits, not codex's; worst first.
        let claude = budget.standings_for("claude", Some("/w/app"), Some(&file), now);
        assert_eq!(claude.len(), 3);
        assert_eq!(claude[0].level, Level::Over);
        assert_eq!(claude[2].level, Level::Warn);
        assert_eq!(
            budget.standings_for("codex", None, Some(&file), now).len(),
            4
        );
        // No file, or one counted yesterday: nothing is known of today.
        assert!(budget
            .standings(None, now)
            .iter()
            .all(|s| s.level == Level::Unknown));
        let day = 86_400_000;
        let old = budget.standings(Some(&file), now + 2 * day);
        assert_eq!(old[0].level, Level::Unknown);
    }

    #[test]
    fn the_reason_names_the_budget_its_spend_and_the_setting_to_raise() {
        let now = crate::support::clock::now_ms();
        let budget = Budget {
            limits: vec![limit(Period::Day, Amount::Usd(5.0), Some("codex"))],
            ..Budget::default()
        };
        let file = file(now, 1.0, 6.5);
        let standing = &budget.standings(Some(&file), now)[0];
        assert_eq!(
            standing.deny_reason("/h/cmstore.toml"),
            "Blocked by cmstore budget: $6.50 spent of the daily budget of $5.00 (codex) — \
             raise budget.agents.codex.day in /h/cmstore.toml, or set budget.mode = \"audit\" \
             there, to go on."
        );
        assert_eq!(
            standing.warning(),
            "cmstore budget: $6.50 spent of the daily budget of $5.00 (codex) (130 %)."
        );
        assert_eq!(standing.limit.key(), "day.usd.agent=codex");
    }

    #[test]
    fn premium_requests_stand_by_their_own_count_and_are_unknown_in_an_older_file() {
        let now = crate::support::clock::now_ms();
        let budget = Budget {
            limits: vec![limit(
                Period::Month,
                Amount::PremiumRequests(300.0),
                Some("copilot"),
            )],
            ..Budget::default()
        };
        let mut file = file(now, 1.0, 1.0);
        file.scopes[0].scope.agent = Some("copilot".into());
        file.scopes[0].windows.month.premium_requests = Some(250.33);
        let standing = &budget.standings(Some(&file), now)[0];
        assert_eq!(standing.level, Level::Warn, "250.33 of 300 is 83 %");
        assert_eq!(
            standing.warning(),
            "cmstore budget: 250.33 premium requests spent of the monthly budget of 300 \
             premium requests (copilot) (83 %)."
        );
        assert_eq!(standing.limit.key(), "month.premium_requests.agent=copilot");
        assert_eq!(
            standing.spent.map(Amount::show_short).unwrap(),
            "250.33 req"
        );
        // A file written before premium requests were counted says nothing of them.
        file.scopes[0].windows.month.premium_requests = None;
        assert_eq!(budget.standings(Some(&file), now)[0].level, Level::Unknown);
    }

    #[test]
    fn a_project_is_the_last_component_or_the_whole_path() {
        assert!(in_project("/home/me/web", "web"));
        assert!(in_project("/home/me/web/", "web"));
        assert!(in_project("/home/me/web", "/home/me/web"));
        assert!(in_project("/home/me/web", "me/web"));
        assert!(!in_project("/home/me/myweb", "web"));
        assert!(!in_project("/home/me/web/src", "web"));
        assert!(in_project(r"C:\Users\Me\Web", "web"));
        assert!(!in_project("/home/me/Web", "web"));
        let scope = Scope {
            agent: None,
            project: Some("web".into()),
        };
        assert!(scope.holds("claude", Some("/x/web")));
        assert!(!scope.holds("claude", None));
        assert_eq!(
            Limit {
                period: Period::Week,
                amount: Amount::Tokens(1_000_000),
                scope: Scope {
                    agent: None,
                    project: Some("my app".into())
                }
            }
            .setting(),
            "budget.projects.\"my app\".week"
        );
    }
}
