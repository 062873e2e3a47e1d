//! The `[checks]` section of `cmstore.toml`: vstack's post-edit format, markdown quality and
//! post-commit security scan hooks as cmstore checks (docs/checks.md). Each is off until its
//! table is there; `enabled = false` turns a configured one off again.

use super::{parse_mode, Mode};

/// Time limit of the post-edit checks when none is set.
pub const DEFAULT_EDIT_TIMEOUT_MS: u64 = 10_000;
/// Time limit of the commit scan when none is set.
pub const DEFAULT_SCAN_TIMEOUT_MS: u64 = 30_000;
/// The longest time limit accepted: a check must never hold an agent for long.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

/// The files the markdown check looks at when no `patterns` are set.
pub const DEFAULT_MARKDOWN_PATTERNS: [&str; 2] = ["*.md", "*.markdown"];

/// The configured checks; `None` is a check that is off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checks {
    /// `[checks.format]` (vstack's post-edit-format).
    pub format: Option<FormatCheck>,
    /// `[checks.markdown]` (vstack's post-edit-markdown-quality).
    pub markdown: Option<MarkdownCheck>,
    /// `[checks.security]` (vstack's post-commit-security-scan).
    pub security: Option<SecurityCheck>,
}

impl Checks {
    /// True when no check is on: the hook then does no check work at all.
    pub fn is_empty(&self) -> bool {
        self.format.is_none() && self.markdown.is_none() && self.security.is_none()
    }
}

/// A format command and the files it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatCommand {
    /// Glob patterns of the files (`*.rs`, `src/**/*.ts`); a pattern without `/` matches
    /// the file name.
    pub patterns: Vec<String>,
    /// The command line, run by the shell in the agent's working directory; `{files}` is
    /// replaced by the matching edited files, each quoted.
    pub command: String,
}

/// `[checks.format]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatCheck {
    pub mode: Mode,
    pub timeout_ms: u64,
    pub commands: Vec<FormatCommand>,
}

/// `[checks.markdown]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkdownCheck {
    pub mode: Mode,
    pub timeout_ms: u64,
    /// The files it looks at.
    pub patterns: Vec<String>,
    /// A command to run instead of the built-in checks (`markdownlint {files}`).
    pub command: Option<String>,
    /// The built-in line-length check, off unless set.
    pub max_line_length: Option<usize>,
}

/// `[checks.security]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityCheck {
    pub mode: Mode,
    pub timeout_ms: u64,
    /// Also scan after a successful `git push`, not only after `git commit`.
    pub on_push: bool,
    /// A scanner run after cmstore's own patterns (`gitleaks git --log-opts=-1 --redact`).
    pub command: Option<String>,
}

/// The names a check's table may have: cmstore's, then vstack's hook name.
const FORMAT_NAMES: [&str; 2] = ["format", "post-edit-format"];
const MARKDOWN_NAMES: [&str; 2] = ["markdown", "post-edit-markdown-quality"];
const SECURITY_NAMES: [&str; 2] = ["security", "post-commit-security-scan"];

/// Reads `[checks]`; every problem is reported through `problem` and costs only its setting.
pub(super) fn read(mut table: toml::Table, problem: &mut impl FnMut(String)) -> Checks {
    let mut checks = Checks::default();
    if let Some((name, mut t)) = take_check(&mut table, &FORMAT_NAMES, problem) {
        let common = Common::read(&name, &mut t, DEFAULT_EDIT_TIMEOUT_MS, problem);
        let commands = format_commands(&name, &mut t, problem);
        unknown(&name, &t, problem);
        if commands.is_empty() && common.enabled {
            problem(format!("checks.{name}: no commands; the check is off"));
        }
        checks.format = (common.enabled && !commands.is_empty()).then_some(FormatCheck {
            mode: common.mode,
            timeout_ms: common.timeout_ms,
            commands,
        });
    }
    if let Some((name, mut t)) = take_check(&mut table, &MARKDOWN_NAMES, problem) {
        let common = Common::read(&name, &mut t, DEFAULT_EDIT_TIMEOUT_MS, problem);
        let patterns = patterns(&name, t.remove("patterns"), problem).unwrap_or_else(|| {
            DEFAULT_MARKDOWN_PATTERNS
                .iter()
                .map(|p| p.to_string())
                .collect()
        });
        let command = string(&name, "command", &mut t, problem);
        let max_line_length = match t.remove("max_line_length") {
            None => None,
            Some(v) => match v.as_integer().and_then(|n| usize::try_from(n).ok()) {
                Some(n) if n > 0 => Some(n),
                _ => {
                    problem(format!(
                        "checks.{name}.max_line_length = {v}: expected a positive whole number; ignored"
                    ));
                    None
                }
            },
        };
        unknown(&name, &t, problem);
        checks.markdown = common.enabled.then_some(MarkdownCheck {
            mode: common.mode,
            timeout_ms: common.timeout_ms,
            patterns,
            command,
            max_line_length,
        });
    }
    if let Some((name, mut t)) = take_check(&mut table, &SECURITY_NAMES, problem) {
        let common = Common::read(&name, &mut t, DEFAULT_SCAN_TIMEOUT_MS, problem);
        let on_push = match t.remove("on_push") {
            None => false,
            Some(v) => v.as_bool().unwrap_or_else(|| {
                problem(format!(
                    "checks.{name}.on_push = {v}: expected true or false; ignored"
                ));
                false
            }),
        };
        let command = string(&name, "command", &mut t, problem);
        unknown(&name, &t, problem);
        checks.security = common.enabled.then_some(SecurityCheck {
            mode: common.mode,
            timeout_ms: common.timeout_ms,
            on_push,
            command,
        });
    }
    for key in table.keys() {
        problem(format!("unknown check checks.{key}; ignored"));
    }
    checks
}

/// What every check's table has.
struct Common {
    enabled: bool,
    mode: Mode,
    timeout_ms: u64,
}

impl Common {
    fn read(
        name: &str,
        t: &mut toml::Table,
        default_timeout_ms: u64,
        problem: &mut impl FnMut(String),
    ) -> Common {
        let enabled = match t.remove("enabled") {
            None => true,
            Some(v) => v.as_bool().unwrap_or_else(|| {
                problem(format!(
                    "checks.{name}.enabled = {v}: expected true or false; the check is off"
                ));
                false
            }),
        };
        let mode = match t.remove("mode") {
            None => Mode::Audit,
            Some(v) => v.as_str().and_then(parse_mode).unwrap_or_else(|| {
                problem(format!(
                    "checks.{name}.mode = {v}: expected \"audit\" or \"enforce\"; using audit"
                ));
                Mode::Audit
            }),
        };
        let timeout_ms = match t.remove("timeout_secs") {
            None => default_timeout_ms,
            Some(v) => match v.as_float().or_else(|| v.as_integer().map(|n| n as f64)) {
                Some(secs) if secs > 0.0 && secs * 1000.0 <= MAX_TIMEOUT_MS as f64 => {
                    (secs * 1000.0).round() as u64
                }
                _ => {
                    problem(format!(
                        "checks.{name}.timeout_secs = {v}: expected seconds above 0, at most {}; using {}",
                        MAX_TIMEOUT_MS / 1000,
                        default_timeout_ms / 1000
                    ));
                    default_timeout_ms
                }
            },
        };
        Common {
            enabled,
            mode,
            timeout_ms,
        }
    }
}

/// Removes the check's table under any of its `names`; the first one found is used, a
/// second is reported.
fn take_check(
    table: &mut toml::Table,
    names: &[&str],
    problem: &mut impl FnMut(String),
) -> Option<(String, toml::Table)> {
    let mut found: Option<(String, toml::Table)> = None;
    for name in names {
        match table.remove(*name) {
            None => {}
            Some(toml::Value::Table(t)) if found.is_none() => found = Some((name.to_string(), t)),
            Some(toml::Value::Table(_)) => problem(format!(
                "checks.{name}: the same check as checks.{}; ignored",
                found.as_ref().map_or("", |f| f.0.as_str())
            )),
            Some(other) => problem(format!(
                "checks.{name} = {other}: expected a table; ignored"
            )),
        }
    }
    found
}

fn format_commands(
    name: &str,
    t: &mut toml::Table,
    problem: &mut impl FnMut(String),
) -> Vec<FormatCommand> {
    let items = match t.remove("commands") {
        None => return Vec::new(),
        Some(toml::Value::Array(items)) => items,
        Some(other) => {
            problem(format!(
                "checks.{name}.commands = {other}: expected a list of {{ pattern, command }}; ignored"
            ));
            return Vec::new();
        }
    };
    let mut commands = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        let where_ = format!("{name}.commands[{i}]");
        let toml::Value::Table(mut item) = item else {
            problem(format!(
                "checks.{where_}: expected {{ pattern, command }}; ignored"
            ));
            continue;
        };
        let patterns = patterns(&where_, item.remove("pattern"), problem);
        let command = string(&where_, "command", &mut item, problem);
        unknown(&where_, &item, problem);
        match (patterns, command) {
            (Some(patterns), Some(command)) => commands.push(FormatCommand { patterns, command }),
            _ => problem(format!(
                "checks.{where_}: needs a pattern and a command; ignored"
            )),
        }
    }
    commands
}

/// A pattern or a list of them; `None` when absent or unusable.
fn patterns(
    name: &str,
    value: Option<toml::Value>,
    problem: &mut impl FnMut(String),
) -> Option<Vec<String>> {
    let list: Vec<String> = match value? {
        toml::Value::String(s) => vec![s],
        toml::Value::Array(items) => items
            .into_iter()
            .filter_map(|v| match v {
                toml::Value::String(s) => Some(s),
                other => {
                    problem(format!(
                        "checks.{name}: pattern {other} is not a string; ignored"
                    ));
                    None
                }
            })
            .collect(),
        other => {
            problem(format!(
                "checks.{name}: pattern {other}: expected a string or a list of strings; ignored"
            ));
            return None;
        }
    };
    let list: Vec<String> = list.into_iter().filter(|p| !p.trim().is_empty()).collect();
    (!list.is_empty()).then_some(list)
}

fn string(
    name: &str,
    key: &str,
    t: &mut toml::Table,
    problem: &mut impl FnMut(String),
) -> Option<String> {
    match t.remove(key)? {
        toml::Value::String(s) if !s.trim().is_empty() => Some(s),
        other => {
            problem(format!(
                "checks.{name}.{key} = {other}: expected a non-empty string; ignored"
            ));
            None
        }
    }
}

fn unknown(name: &str, t: &toml::Table, problem: &mut impl FnMut(String)) {
    for key in t.keys() {
        problem(format!("unknown setting checks.{name}.{key}; ignored"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_text(text: &str) -> (Checks, Vec<String>) {
        let table: toml::Table = text.parse().unwrap();
        let mut problems = Vec::new();
        let checks = read(table, &mut |p| problems.push(p));
        (checks, problems)
    }

    #[test]
    fn nothing_is_on_until_configured() {
        let (checks, problems) = read_text("");
        assert!(checks.is_empty());
        assert!(problems.is_empty());
    }

    #[test]
    fn every_check_is_read_with_its_settings() {
        let (checks, problems) = read_text(
            r#"
[format]
mode = "enforce"
timeout_secs = 2.5
commands = [
  { pattern = "*.rs", command = "rustfmt --check {files}" },
  { pattern = ["*.ts", "web/**/*.js"], command = "prettier --check {files}" },
]
[post-edit-markdown-quality]
max_line_length = 100
[security]
on_push = true
command = "gitleaks git --log-opts=-1 --redact"
"#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let format = checks.format.unwrap();
        assert_eq!(format.mode, Mode::Enforce);
        assert_eq!(format.timeout_ms, 2500);
        assert_eq!(format.commands.len(), 2);
        assert_eq!(format.commands[1].patterns, ["*.ts", "web/**/*.js"]);
        let markdown = checks.markdown.unwrap();
        assert_eq!(markdown.mode, Mode::Audit);
        assert_eq!(markdown.patterns, DEFAULT_MARKDOWN_PATTERNS);
        assert_eq!(markdown.max_line_length, Some(100));
        assert_eq!(markdown.command, None);
        let security = checks.security.unwrap();
        assert!(security.on_push);
        assert_eq!(security.timeout_ms, DEFAULT_SCAN_TIMEOUT_MS);
    }

    #[test]
    fn a_bad_setting_costs_only_itself_and_disabled_means_off() {
        let (checks, problems) = read_text(
            r#"
[format]
commands = [{ pattern = "*.rs" }]
[markdown]
mode = "loud"
timeout_secs = 0
colour = 1
[security]
enabled = false
[lint]
"#,
        );
        assert!(checks.format.is_none());
        assert_eq!(checks.markdown.as_ref().unwrap().mode, Mode::Audit);
        assert_eq!(
            checks.markdown.as_ref().unwrap().timeout_ms,
            DEFAULT_EDIT_TIMEOUT_MS
        );
        assert!(checks.security.is_none());
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("checks.lint")));
        assert!(problems
            .iter()
            .any(|p| p.contains("checks.markdown.colour")));
    }
}
