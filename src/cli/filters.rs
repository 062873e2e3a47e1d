//! Options more than one subcommand takes, defined once so that they read and behave the
//! same everywhere.

/// Which sessions a report covers: the options every report shares (`sessions`, `summarize`,
/// `gate report`, `gate replay`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReportFilters {
    /// Only sessions active since then: a duration ago (90m, 36h, 7d, 2w), today, yesterday,
    /// or a date/datetime (local time, UTC with --utc)
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only sessions that started before then (same forms as --since)
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only sessions of this agent (claude, vscode, copilot, codex, gemini, qwen, cursor, qoder,
    /// droid, opencode, kilo, cline, windsurf, kiro, goose, kimi)
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// Only sessions in this project: the working directory's last component, or its path
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}

impl ReportFilters {
    /// The filters, times parsed against `now_ms`.
    pub fn parse(&self, now_ms: i64) -> anyhow::Result<crate::read::sessions::Filters> {
        let when = |flag: &str, value: &Option<String>| -> anyhow::Result<Option<i64>> {
            value
                .as_deref()
                .map(|v| crate::support::timespec::parse_point(v, now_ms))
                .transpose()
                .map_err(|e| anyhow::anyhow!("{flag} {e}"))
        };
        if self.project.as_deref().is_some_and(|p| p.trim().is_empty()) {
            anyhow::bail!("--project is empty: give a project (a folder's name) or a path");
        }
        Ok(crate::read::sessions::Filters {
            since: when("--since", &self.since)?,
            until: when("--until", &self.until)?,
            agent: self.agent.clone(),
            project: self.project.clone(),
            session: None,
        })
    }
}

/// A report on the team store instead of this machine's (`summarize`, `sessions`), and the
/// team's own filters.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TeamStore {
    /// Read the team store instead (`postgres://…`, as `[push]` url takes it), read-only;
    /// its days are UTC days
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// On the team store: only this machine (its id, as `summarize --by machine` shows it)
    #[arg(long, value_name = "ID", requires = "store")]
    pub machine: Option<String>,
    /// On the team store: only this user label (`[push] user`)
    #[arg(long, value_name = "LABEL", requires = "store")]
    pub user: Option<String>,
}
