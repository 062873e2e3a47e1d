//! What the agents spent today, this week and this month (local time): the spend file a
//! running ingest writes beside the queue after it stores new usage, which `cmstore
//! statusline` reads without opening the database. Its format is this module's; it is
//! written whole and replaced atomically, so a reader sees one version or the other.

use chrono::{DateTime, Datelike, Days, Local, NaiveDate};
use serde::{Deserialize, Serialize};

use crate::support::zone::Zone;

/// The spend file's name, in cmstore's home.
pub const FILE_NAME: &str = "spend.json";

/// The spend file: the figures of each window, for everything and for each scope a budget
/// limit counts, and when they were counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpendFile {
    /// Format version.
    pub v: u32,
    /// When ingest counted them (epoch ms).
    pub at: i64,
    /// Everything's figures.
    #[serde(flatten)]
    pub all: Windows,
    /// The figures of each scope a `[budget]` limit counts (an agent, a project), when
    /// counted: a file written before the limit was set has none of its scope.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<ScopeSpend>,
}

impl SpendFile {
    /// The figures of `scope`, if the file has them.
    pub fn figures(&self, scope: &Scope) -> Option<&Windows> {
        if scope.is_everything() {
            return Some(&self.all);
        }
        self.scopes
            .iter()
            .find(|s| &s.scope == scope)
            .map(|s| &s.windows)
    }
}

/// The figures of today, this week and this month.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Windows {
    /// Today, from local midnight.
    pub day: Spent,
    /// This week, from Monday's local midnight.
    pub week: Spent,
    /// This month, from the 1st's local midnight.
    pub month: Spent,
}

/// One scope's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeSpend {
    #[serde(flatten)]
    pub scope: Scope,
    #[serde(flatten)]
    pub windows: Windows,
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
    /// The premium requests its responses cost (GitHub Copilot's; no other agent reports
    /// them); `None` in a file an earlier cmstore wrote, which did not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub premium_requests: Option<f64>,
}

/// Whose spend a limit counts: everything, one agent's, or one project's.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Scope {
    /// The agent's name on the queue line (`claude`, `codex`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// A project as `--project` names one: a working directory's last component, or its path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

impl Scope {
    /// True for the scope of everything.
    pub fn is_everything(&self) -> bool {
        self.agent.is_none() && self.project.is_none()
    }

    /// True when an event of `agent` in `cwd` counts toward this scope.
    pub fn holds(&self, agent: &str, cwd: Option<&str>) -> bool {
        let agent_ok = self.agent.as_deref().is_none_or(|a| a == agent);
        let project_ok = match &self.project {
            None => true,
            Some(project) => cwd.is_some_and(|cwd| in_project(cwd, project)),
        };
        agent_ok && project_ok
    }

    /// The scope as a sentence names it: `everything`, `codex`, `project web`.
    pub fn show(&self) -> String {
        match (&self.agent, &self.project) {
            (None, None) => "everything".to_string(),
            (Some(agent), None) => agent.clone(),
            (None, Some(project)) => format!("project {project}"),
            (Some(agent), Some(project)) => format!("{agent} in project {project}"),
        }
    }
}

/// True when the working directory `cwd` is the project `project`: its last component, or
/// the whole path, compared without trailing separators (ASCII case aside on a Windows path),
/// as `--project` compares them in the store.
pub fn in_project(cwd: &str, project: &str) -> bool {
    let trim = |s: &str| s.trim_end_matches(['/', '\\']).to_string();
    let windows = cwd.contains('\\') || cwd.as_bytes().get(1) == Some(&b':');
    let fold = |s: String| if windows { s.to_ascii_lowercase() } else { s };
    let (cwd, project) = (fold(trim(cwd)), fold(trim(project)));
    if project.is_empty() {
        return false;
    }
    cwd == project
        || cwd
            .strip_suffix(project.as_str())
            .is_some_and(|head| head.ends_with('/') || head.ends_with('\\'))
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

/// The local midnight that starts `day` (budgets count in the local zone whatever `--utc`
/// says: capture counts them so).
fn midnight(day: NaiveDate) -> i64 {
    Zone::Local.midnight(day)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

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
            all: Windows {
                day: Spent {
                    from: 1,
                    usd: Some(1.5),
                    tokens: 10,
                    responses: 2,
                    unpriced: 1,
                    premium_requests: Some(0.33),
                },
                ..Windows::default()
            },
            scopes: vec![ScopeSpend {
                scope: Scope {
                    agent: Some("codex".into()),
                    project: None,
                },
                windows: Windows::default(),
            }],
        };
        let text = serde_json::to_string(&file).unwrap();
        assert_eq!(serde_json::from_str::<SpendFile>(&text).unwrap(), file);
    }
}
