//! The `[push]` section of `cmstore.toml`: the team store on PostgreSQL that `cmstore push`
//! mirrors this store into (docs/teams.md). Like every section, each bad key costs only
//! itself: a problem is reported and the rest applies.
//!
//! ```toml
//! [push]
//! url = "postgres://ana@team-db.example.com/cmstore?sslmode=require"   # or the PG* variables
//! content = "none"          # or "redacted", "full": what text leaves the machine
//! user = "ana"              # the user label on every row (default: the login name)
//! team = "web"              # the team label (default: none)
//! # ca_file = "/etc/ssl/team-db.pem"   # a server certificate signed by your own authority
//! # enabled = false         # keep the settings for `cmstore push`; no continuous push
//! ```

use std::path::PathBuf;
use std::time::Duration;

/// Events per server transaction, when nothing says otherwise.
pub const DEFAULT_BATCH_EVENTS: usize = 2000;

/// The most events one transaction carries, whatever the configuration says: a batch is held
/// in memory whole.
pub const MAX_BATCH_EVENTS: usize = 20_000;

/// The pause between two looks at the store once a continuous push has caught up.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// What text leaves the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Content {
    /// Counts, times, outcomes, costs, models, tool names and a digest of each tool call's
    /// input; never a prompt, an answer, a thought, a tool's input or output, or the queue
    /// line. The default.
    #[default]
    None,
    /// The text too, with the redaction patterns in force applied again as it is sent
    /// (capture redacted it when it was recorded, with the patterns in force then).
    Redacted,
    /// The text as the store holds it (redacted at capture), and the whole queue line.
    Full,
}

impl Content {
    /// The name `cmstore.toml` and `--content` spell it with.
    pub fn as_str(self) -> &'static str {
        match self {
            Content::None => "none",
            Content::Redacted => "redacted",
            Content::Full => "full",
        }
    }

    /// The profile `text` names, if any.
    pub fn parse(text: &str) -> Option<Content> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Some(Content::None),
            "redacted" => Some(Content::Redacted),
            "full" => Some(Content::Full),
            _ => None,
        }
    }
}

/// The push settings the file gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSettings {
    /// The server's connection URL or `key=value` string; `None`: the `PG*` variables.
    pub url: Option<String>,
    /// What text leaves the machine.
    pub content: Content,
    /// The user label on every row; `None`: the login name.
    pub user: Option<String>,
    /// The team label on every row.
    pub team: Option<String>,
    /// A PEM file of certificate authorities trusted besides the built-in roots.
    pub ca_file: Option<PathBuf>,
    /// Events per server transaction.
    pub batch_events: usize,
    /// Whether a running `cmstore ingest` pushes continuously (`enabled` is not `false`).
    pub continuous: bool,
}

impl Default for PushSettings {
    fn default() -> PushSettings {
        PushSettings {
            url: None,
            content: Content::default(),
            user: None,
            team: None,
            ca_file: None,
            batch_events: DEFAULT_BATCH_EVENTS,
            continuous: true,
        }
    }
}

/// Reads `[push]` from its table; every problem goes to `problem`.
pub fn read(mut table: toml::Table, problem: &mut impl FnMut(String)) -> PushSettings {
    let mut settings = PushSettings::default();
    let mut text = |table: &mut toml::Table, key: &str| match table.remove(key) {
        None => None,
        Some(toml::Value::String(s)) if !s.trim().is_empty() => Some(s),
        Some(other) => {
            problem(format!("push.{key} = {other}: expected a text; ignored"));
            None
        }
    };
    settings.url = text(&mut table, "url");
    settings.user = text(&mut table, "user");
    settings.team = text(&mut table, "team");
    settings.ca_file = text(&mut table, "ca_file").map(PathBuf::from);
    if let Some(name) = text(&mut table, "content") {
        match Content::parse(&name) {
            Some(content) => settings.content = content,
            None => problem(format!(
                "push.content = {name:?}: expected \"none\", \"redacted\" or \"full\"; using none"
            )),
        }
    }
    if let Some(v) = table.remove("batch_events") {
        let n = v.as_integer().filter(|n| *n > 0);
        match n {
            Some(n) => settings.batch_events = (n as usize).min(MAX_BATCH_EVENTS),
            None => problem(format!(
                "push.batch_events = {v}: expected a positive whole number; using \
                 {DEFAULT_BATCH_EVENTS}"
            )),
        }
    }
    if let Some(v) = table.remove("enabled") {
        match v.as_bool() {
            Some(on) => settings.continuous = on,
            None => problem(format!(
                "push.enabled = {v}: expected true or false; using true"
            )),
        }
    }
    for key in table.keys() {
        problem(format!("unknown setting push.{key}; ignored"));
    }
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> (PushSettings, Vec<String>) {
        let mut problems = Vec::new();
        let settings = read(text.parse().unwrap(), &mut |p| problems.push(p));
        (settings, problems)
    }

    #[test]
    fn every_key_is_read() {
        let (s, problems) = read_text(
            r#"url = "postgres://ana@db/team"
               content = "Redacted"
               user = "ana"
               team = "web"
               ca_file = "/etc/ca.pem"
               batch_events = 500
               enabled = false"#,
        );
        assert_eq!(problems, Vec::<String>::new());
        assert_eq!(
            s,
            PushSettings {
                url: Some("postgres://ana@db/team".into()),
                content: Content::Redacted,
                user: Some("ana".into()),
                team: Some("web".into()),
                ca_file: Some("/etc/ca.pem".into()),
                batch_events: 500,
                continuous: false,
            }
        );
    }

    #[test]
    fn a_bad_key_costs_only_itself_and_nothing_says_send_text() {
        let (s, problems) = read_text(
            r#"content = "all"
               batch_events = 0
               user = 7
               colour = "red"
               team = "web""#,
        );
        assert_eq!(s.content, Content::None, "no text unless named");
        assert_eq!(s.batch_events, DEFAULT_BATCH_EVENTS);
        assert_eq!(s.user, None);
        assert_eq!(s.team.as_deref(), Some("web"));
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems
            .iter()
            .any(|p| p.contains("unknown setting push.colour")));
    }

    #[test]
    fn a_huge_batch_is_held_to_the_most() {
        let (s, _) = read_text("batch_events = 1000000");
        assert_eq!(s.batch_events, MAX_BATCH_EVENTS);
    }
}
