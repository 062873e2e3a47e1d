//! `cmstore.toml` plus environment overrides, with safe fallbacks.
//!
//! Capture reads the configuration on every hook, so a broken file must never break an agent:
//! every problem becomes a [`Problem`] and the default for that setting applies. A syntax
//! error costs only the lines it is on (`recover`): every setting that can still be read
//! applies. `cmstore config check` (and `status`) report the problems.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use crate::files::paths::Paths;
use crate::model::safety::{self, AddedRule, Rules, Scope};

pub mod budget;
pub mod checks;
pub mod push;
mod recover;
pub mod retention;

pub use checks::Checks;

/// Days of history `prune` keeps when nothing else is configured.
pub const DEFAULT_RETENTION_DAYS: u32 = 7;

/// What the safety gate does with a risky tool call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Record the risk; the tool proceeds.
    #[default]
    Audit,
    /// Deny the tool call with the agent's deny reply.
    Enforce,
}

/// Where the mode in effect was set, so a message can say how to change it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ModeOrigin {
    /// Nowhere: the default, audit.
    #[default]
    Default,
    /// `mode` in the configuration file at this path.
    File(String),
    /// The environment variable `CMSTORE_MODE`, which overrides the file.
    Env,
}

/// How much of each payload goes into the queue line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogLevel {
    /// The normalized fields only.
    #[default]
    Minimal,
    /// Also the raw payload, under `payload`.
    Verbose,
}

/// The effective configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub mode: Mode,
    /// Where `mode` was set.
    pub mode_origin: ModeOrigin,
    pub log_level: LogLevel,
    pub retention_days: u32,
    /// `retention_days` was given, validly, in the file or `CMSTORE_RETENTION_DAYS`: only
    /// then does a running `cmstore ingest` delete old history by itself. The default
    /// retention is for `prune`, never a reason to delete anything unasked.
    pub retention_explicit: bool,
    /// Automatic retention also compacts the queue file (`compact_queue = true`,
    /// `CMSTORE_COMPACT_QUEUE`), as `prune --compact-queue` does.
    pub compact_queue: bool,
    /// Keep prompt and response text (false: the text fields are dropped at capture).
    pub store_text: bool,
    /// A following `cmstore ingest` imports the agents' history as it grows
    /// (`follow_transcripts = false` to leave it to `cmstore import`).
    pub follow_transcripts: bool,
    /// Each transcript an import reads is also kept compressed in cmstore's folder
    /// (`archive_transcripts = true`; off by default).
    pub archive_transcripts: bool,
    /// Write the capture debug log.
    pub debug: bool,
    /// Per-event switches by canonical hook type; absent means enabled.
    pub events: BTreeMap<String, bool>,
    /// The safety gate's changes to its built-in rules.
    pub safety: Rules,
    /// Extra redaction patterns (regular expressions).
    pub redact: Vec<String>,
    /// `[prices."<model>"]`: prices replacing or adding to cmstore's table.
    pub prices: crate::model::prices::PriceTable,
    /// The post-edit and post-commit checks (`[checks]`); all off by default.
    pub checks: Checks,
    /// The spend limits (`[budget]`); none by default.
    pub budget: crate::model::budget::Budget,
    /// The team store (`[push]`), when the section is present.
    pub push: Option<push::PushSettings>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            mode: Mode::Audit,
            mode_origin: ModeOrigin::Default,
            log_level: LogLevel::Minimal,
            retention_days: DEFAULT_RETENTION_DAYS,
            retention_explicit: false,
            compact_queue: false,
            store_text: true,
            follow_transcripts: true,
            archive_transcripts: false,
            debug: false,
            events: BTreeMap::new(),
            safety: Rules::default(),
            redact: Vec::new(),
            prices: Default::default(),
            checks: Checks::default(),
            budget: Default::default(),
            push: None,
        }
    }
}

/// One thing wrong with the configuration; the default applied instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Where: the file path or the environment variable.
    pub origin: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

/// The longest [`error_note`], in characters.
pub const ERROR_NOTE_CHARS: usize = 1000;

/// Where to read the whole list when the note is cut.
const ERROR_NOTE_END: &str = " (cmstore config check)";

/// `problems` as one line of at most [`ERROR_NOTE_CHARS`] characters, for the `configError`
/// field of every queue line capture writes while the configuration has a problem; `None`
/// when it has none.
pub fn error_note(problems: &[Problem]) -> Option<String> {
    let joined = problems
        .iter()
        .map(|p| {
            p.to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("; ");
    let text = match problems.len() {
        0 => return None,
        1 => joined,
        n => format!("{n} configuration problems: {joined}"),
    };
    let budget = ERROR_NOTE_CHARS - ERROR_NOTE_END.chars().count();
    Some(format!(
        "{}{ERROR_NOTE_END}",
        crate::model::shorten::cut_text(&text, budget)
    ))
}

/// A value read from the environment (injected for tests).
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<String>;

impl Config {
    /// Loads `path` (a missing file is fine) and applies `CMSTORE_*` overrides from the
    /// process environment. Never fails: problems are returned next to the result.
    pub fn load(path: &Path) -> (Config, Vec<Problem>) {
        // `value`, not `var`: an empty `CMSTORE_DEBUG` is a value here, the switch turned off
        // (blank values of the other variables count as unset, in `apply_env`).
        Config::load_with(path, &crate::support::env::value)
    }

    /// Loads the configuration file `paths` names, like [`Config::load`]; a file given with
    /// `--config` must exist (its absence is a problem), while the default one may be absent.
    /// Only capture gets here with a given file that is missing: every other command stops
    /// first ([`Paths::check_given_config`]).
    pub fn load_for(paths: &Paths) -> (Config, Vec<Problem>) {
        Config::load_from(
            &paths.config,
            paths.given.config.is_some(),
            &crate::support::env::value,
        )
    }

    /// [`Config::load`] with an explicit environment.
    pub fn load_with(path: &Path, env: EnvLookup<'_>) -> (Config, Vec<Problem>) {
        Config::load_from(path, false, env)
    }

    /// Loads `path`; `required`: it was named explicitly, so its absence is a problem.
    pub fn load_from(path: &Path, required: bool, env: EnvLookup<'_>) -> (Config, Vec<Problem>) {
        let mut config = Config::default();
        let mut problems = Vec::new();
        match std::fs::read_to_string(path) {
            Ok(text) => config.apply_file(&text, &path.display().to_string(), &mut problems),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !required => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => problems.push(Problem {
                origin: path.display().to_string(),
                message: "does not exist (named by --config); defaults apply".to_string(),
            }),
            Err(err) => problems.push(Problem {
                origin: path.display().to_string(),
                message: format!("cannot read: {err}"),
            }),
        }
        config.apply_env(env, &mut problems);
        (config, problems)
    }

    /// Whether events of `hook_type` are recorded.
    pub fn event_enabled(&self, hook_type: &str) -> bool {
        self.events.get(hook_type).copied().unwrap_or(true)
    }

    fn apply_file(&mut self, text: &str, origin: &str, problems: &mut Vec<Problem>) {
        let mut problem = |message: String| {
            problems.push(Problem {
                origin: origin.to_string(),
                message,
            })
        };
        // Read key by key, so one bad or unknown key costs only itself: an enforce mode or a
        // redaction pattern must not vanish because of a typo elsewhere in the file. The toml
        // crate parses; this walk stands in for a serde struct on purpose, for correctness
        // rather than speed: with `deny_unknown_fields` one typo rejected the whole file
        // (CHANGELOG, Fixed), and without it unknown keys would go unreported.
        //
        // A document that is not valid TOML is read statement by statement ([`recover`]):
        // a syntax error costs only its own lines, never the rest of the file.
        let mut table: toml::Table = match text.parse() {
            Ok(table) => table,
            Err(err) => {
                let (table, messages) = recover::recover(text, &err);
                messages.into_iter().for_each(&mut problem);
                table
            }
        };
        // The log level is also accepted as `capture.log_level` (docs/design.md).
        let mut capture = take_table(&mut table, "capture", &mut problem);
        if let Some(v) = table.remove("mode") {
            match v.as_str().and_then(parse_mode) {
                Some(mode) => {
                    self.mode = mode;
                    self.mode_origin = ModeOrigin::File(origin.to_string());
                }
                None => problem(format!(
                    "mode = {v}: expected \"audit\" or \"enforce\"; using audit"
                )),
            }
        }
        if let Some(v) = table
            .remove("log_level")
            .or_else(|| capture.remove("log_level"))
        {
            match v.as_str().and_then(parse_log_level) {
                Some(level) => self.log_level = level,
                None => problem(format!(
                    "log_level = {v}: expected \"minimal\" or \"verbose\"; using minimal"
                )),
            }
        }
        if let Some(v) = table.remove("retention_days") {
            match v.as_integer().and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0) {
                Some(days) => {
                    self.retention_days = days;
                    self.retention_explicit = true;
                }
                None => problem(format!(
                    "retention_days = {v}: expected a positive whole number; using {DEFAULT_RETENTION_DAYS} \
                     (and no automatic retention)"
                )),
            }
        }
        for (name, slot) in [
            ("store_text", &mut self.store_text),
            ("follow_transcripts", &mut self.follow_transcripts),
            ("archive_transcripts", &mut self.archive_transcripts),
            ("debug", &mut self.debug),
            ("compact_queue", &mut self.compact_queue),
        ] {
            if let Some(v) = table.remove(name) {
                match v.as_bool() {
                    Some(b) => *slot = b,
                    None => problem(format!("{name} = {v}: expected true or false; ignored")),
                }
            }
        }
        for (event, v) in take_table(&mut table, "events", &mut problem) {
            let known = crate::model::queue_line::HookType::from_event_name(&event);
            if known == Some(crate::model::queue_line::HookType::Usage) {
                problem(format!(
                    "events.{event}: cmstore's own usage lines are always recorded; ignored"
                ));
                continue;
            }
            if known.is_none() {
                if let Some(meant) = misspelled_event(&event) {
                    problem(format!(
                        "events.{event}: no such event (did you mean {meant}?); ignored"
                    ));
                    continue;
                }
            }
            // A name no agent maps onto a canonical type is kept as it is: such events are
            // recorded under their own name (docs/design.md), and this switches them.
            let name = known.map_or(event.clone(), |t| t.as_str().to_string());
            match v.as_bool() {
                Some(b) => {
                    self.events.insert(name, b);
                }
                None => problem(format!(
                    "events.{event} = {v}: expected true or false; ignored"
                )),
            }
        }
        let mut safety = take_table(&mut table, "safety", &mut problem);
        for (name, rule) in take_table(&mut safety, "add", &mut problem) {
            if let Some(rule) = added_rule(name, rule, &mut problem) {
                self.safety.add.push(rule);
            }
        }
        for name in take_strings(&mut safety, "remove", "safety.remove", &mut problem) {
            if safety::is_rule(&name) {
                self.safety.remove.push(name);
            } else {
                problem(format!("safety.remove: no built-in rule named {name:?}"));
            }
        }
        let mut redaction = take_table(&mut table, "redaction", &mut problem);
        for pattern in take_strings(
            &mut redaction,
            "patterns",
            "redaction.patterns",
            &mut problem,
        ) {
            match regex::Regex::new(&pattern) {
                Ok(_) => self.redact.push(pattern),
                Err(err) => problem(format!(
                    "redaction.patterns: invalid pattern {pattern:?}: {err}"
                )),
            }
        }
        for (model, v) in take_table(&mut table, "prices", &mut problem) {
            match crate::model::prices::parse_price(&v, "cmstore.toml") {
                Ok(price) => {
                    self.prices.insert(model, price);
                }
                Err(err) => problem(format!("prices.{model}: {err}; ignored")),
            }
        }
        let checks = take_table(&mut table, "checks", &mut problem);
        self.checks = checks::read(checks, &mut problem);
        let budget = take_table(&mut table, "budget", &mut problem);
        self.budget = budget::read(budget, &mut problem);
        if table.contains_key("push") {
            let push = take_table(&mut table, "push", &mut problem);
            self.push = Some(push::read(push, &mut problem));
        }
        // Read by `export` and the OTLP receiver, never on the hook path.
        for owned_elsewhere in ["export", "otlp_receiver"] {
            table.remove(owned_elsewhere);
        }
        for (section, rest) in [
            ("", table),
            ("capture.", capture),
            ("safety.", safety),
            ("redaction.", redaction),
        ] {
            for key in rest.keys() {
                problem(format!("unknown setting {section}{key}; ignored"));
            }
        }
    }

    fn apply_env(&mut self, env: EnvLookup<'_>, problems: &mut Vec<Problem>) {
        let mut problem = |var: &str, message: String| {
            problems.push(Problem {
                origin: var.to_string(),
                message,
            })
        };
        let set = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if let Some(v) = set("CMSTORE_MODE") {
            match parse_mode(&v) {
                Some(mode) => {
                    self.mode = mode;
                    self.mode_origin = ModeOrigin::Env;
                }
                None => problem(
                    "CMSTORE_MODE",
                    format!("{v:?}: expected audit or enforce; ignored"),
                ),
            }
        }
        if let Some(v) = set("CMSTORE_LOG_LEVEL") {
            match parse_log_level(&v) {
                Some(level) => self.log_level = level,
                None => problem(
                    "CMSTORE_LOG_LEVEL",
                    format!("{v:?}: expected minimal or verbose; ignored"),
                ),
            }
        }
        if let Some(v) = set("CMSTORE_RETENTION_DAYS") {
            match parse_retention_days(&v) {
                Some(days) => {
                    self.retention_days = days;
                    self.retention_explicit = true;
                }
                None => {
                    // A wrong value must not leave the file's retention deleting by itself:
                    // which one was meant is unknown.
                    self.retention_days = DEFAULT_RETENTION_DAYS;
                    self.retention_explicit = false;
                    problem(
                        "CMSTORE_RETENTION_DAYS",
                        format!(
                            "{v:?} is not a positive whole number; using {DEFAULT_RETENTION_DAYS} \
                             (and no automatic retention)"
                        ),
                    )
                }
            }
        }
        if let Some(v) = set("CMSTORE_COMPACT_QUEUE") {
            match parse_bool(&v) {
                Some(b) => self.compact_queue = b,
                None => problem(
                    "CMSTORE_COMPACT_QUEUE",
                    format!("{v:?}: expected true or false; ignored"),
                ),
            }
        }
        if let Some(v) = set("CMSTORE_STORE_TEXT") {
            match parse_bool(&v) {
                Some(b) => self.store_text = b,
                None => problem(
                    "CMSTORE_STORE_TEXT",
                    format!("{v:?}: expected true or false; ignored"),
                ),
            }
        }
        // Empty is the switch turned off; any other value must be one of the documented ones.
        if let Some(v) = env("CMSTORE_DEBUG") {
            match v
                .trim()
                .is_empty()
                .then_some(false)
                .or_else(|| parse_bool(&v))
            {
                Some(b) => self.debug = b,
                None => problem(
                    "CMSTORE_DEBUG",
                    format!("{v:?}: expected 1 or 0 (or true/false, yes/no, on/off); ignored"),
                ),
            }
        }
    }
}

/// A `[safety] add` rule: a pattern string (looking at shell commands), or a table with its
/// `pattern` and a `scope` (`shell`, the default, or `any`: every tool's text). A missing or
/// invalid pattern costs the rule; a bad `scope` or an unknown key costs only itself.
fn added_rule(
    name: String,
    value: toml::Value,
    problem: &mut impl FnMut(String),
) -> Option<AddedRule> {
    let mut table = match value {
        toml::Value::String(pattern) => {
            toml::Table::from_iter([("pattern".into(), pattern.into())])
        }
        toml::Value::Table(table) => table,
        other => {
            problem(format!(
                "safety.add.{name} = {other}: expected a pattern string or a table \
                 {{ pattern = '…', scope = \"any\" }}; ignored"
            ));
            return None;
        }
    };
    let pattern = table.remove("pattern");
    let scope = table.remove("scope").map_or(Scope::Shell, |v| {
        v.as_str().and_then(Scope::parse).unwrap_or_else(|| {
            problem(format!(
                "safety.add.{name}.scope = {v}: expected \"shell\" or \"any\"; using shell"
            ));
            Scope::Shell
        })
    });
    for key in table.keys() {
        problem(format!("unknown setting safety.add.{name}.{key}; ignored"));
    }
    let pattern = match pattern {
        Some(toml::Value::String(pattern)) => pattern,
        Some(other) => {
            problem(format!(
                "safety.add.{name}.pattern = {other}: expected a pattern string; ignored"
            ));
            return None;
        }
        None => {
            problem(format!("safety.add.{name}: no pattern; ignored"));
            return None;
        }
    };
    match regex::Regex::new(&pattern) {
        Ok(_) => Some(AddedRule {
            name,
            pattern,
            scope,
        }),
        Err(err) => {
            problem(format!("safety.add.{name}: invalid pattern: {err}"));
            None
        }
    }
}

/// Removes `key` from `table` as a table; another type is reported and ignored.
/// The canonical event an `[events]` name is a typo of (`Notifcation`: `Notification`), if it
/// is close enough to one and is none itself.
fn misspelled_event(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    crate::model::queue_line::HookType::ALL
        .iter()
        .map(|t| {
            (
                strsim::jaro_winkler(&lower, &t.as_str().to_ascii_lowercase()),
                t.as_str(),
            )
        })
        .filter(|(score, _)| *score >= 0.9)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| known)
}

fn take_table(table: &mut toml::Table, key: &str, problem: &mut impl FnMut(String)) -> toml::Table {
    match table.remove(key) {
        None => toml::Table::new(),
        Some(toml::Value::Table(t)) => t,
        Some(other) => {
            problem(format!("{key} = {other}: expected a table; ignored"));
            toml::Table::new()
        }
    }
}

/// Removes `key` from `table` as a list of strings; other values are reported and skipped.
fn take_strings(
    table: &mut toml::Table,
    key: &str,
    name: &str,
    problem: &mut impl FnMut(String),
) -> Vec<String> {
    match table.remove(key) {
        None => Vec::new(),
        Some(toml::Value::Array(items)) => items
            .into_iter()
            .filter_map(|v| match v {
                toml::Value::String(s) => Some(s),
                other => {
                    problem(format!("{name}: {other} is not a string; ignored"));
                    None
                }
            })
            .collect(),
        Some(other) => {
            problem(format!(
                "{name} = {other}: expected a list of strings; ignored"
            ));
            Vec::new()
        }
    }
}

/// A retention in days: a positive whole number, or `None`.
pub fn parse_retention_days(text: &str) -> Option<u32> {
    text.trim().parse::<u32>().ok().filter(|d| *d > 0)
}

fn parse_mode(text: &str) -> Option<Mode> {
    match text.trim().to_ascii_lowercase().as_str() {
        "audit" => Some(Mode::Audit),
        "enforce" => Some(Mode::Enforce),
        _ => None,
    }
}

fn parse_log_level(text: &str) -> Option<LogLevel> {
    match text.trim().to_ascii_lowercase().as_str() {
        "minimal" => Some(LogLevel::Minimal),
        "verbose" => Some(LogLevel::Verbose),
        _ => None,
    }
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_export_and_receiver_sections_are_not_unknown_to_capture() {
        let (_, problems) = load(
            "mode = \"audit\"\n[export.otlp]\nendpoint = \"http://c:4318\"\n[otlp_receiver]\nlisten = \"127.0.0.1:4318\"\n",
            &[],
        );
        assert!(problems.is_empty(), "{problems:?}");
    }

    fn load(text: &str, env: &[(&str, &str)]) -> (Config, Vec<Problem>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cmstore.toml");
        std::fs::write(&path, text).unwrap();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::load_with(&path, &|k| {
            env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn missing_file_means_defaults_without_problems() {
        let (config, problems) =
            Config::load_with(Path::new("/nonexistent/cmstore.toml"), &|_| None);
        assert_eq!(config, Config::default());
        assert!(problems.is_empty());
    }

    #[test]
    fn problems_make_one_bounded_line_for_the_queue() {
        assert_eq!(error_note(&[]), None);
        let (_, problems) = load("mode = enforce\nretention_days = 0\n", &[]);
        let note = error_note(&problems).unwrap();
        assert!(!note.contains('\n'), "{note}");
        assert!(note.starts_with("2 configuration problems: "), "{note}");
        assert!(note.contains("line 1: mode"), "{note}");
        assert!(note.contains("retention_days = 0"), "{note}");
        assert!(note.ends_with("(cmstore config check)"), "{note}");
        let many: Vec<Problem> = (0..100)
            .map(|i| Problem {
                origin: "cmstore.toml".into(),
                message: format!("line {i}: {}", "x".repeat(100)),
            })
            .collect();
        let note = error_note(&many).unwrap();
        assert!(note.chars().count() <= ERROR_NOTE_CHARS, "{}", note.len());
        assert!(note.ends_with("(cmstore config check)"), "{note}");
    }

    #[test]
    fn a_file_named_explicitly_must_exist() {
        let missing = Path::new("/nonexistent/cmstore.toml");
        let (config, problems) = Config::load_from(missing, true, &|_| None);
        assert_eq!(config, Config::default());
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].message.contains("does not exist"),
            "{problems:?}"
        );
    }

    #[test]
    fn prices_are_read_and_a_bad_one_costs_only_itself() {
        let (config, problems) = load(
            "[prices.\"claude-sonnet-4\"]\ninput = 3\noutput = 15.0\ncache_write_5m = 3.75\n\
             cache_write_1h = 6\ncache_read = 0.3\n[prices.\"half\"]\ninput = 1\n",
            &[],
        );
        assert_eq!(
            config.prices["claude-sonnet-4"].rates,
            [3.0, 15.0, 3.75, 6.0, 0.3]
        );
        assert!(!config.prices.contains_key("half"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0]
            .message
            .starts_with("prices.half: output is missing"));
    }

    #[test]
    fn a_full_file_is_read() {
        let (config, problems) = load(
            r#"
mode = "enforce"
log_level = "verbose"
retention_days = 30
store_text = false
[events]
PostToolUse = false
notification = false
[safety]
add = { no-npm-publish = "npm\\s+publish" }
remove = ["git-push-force"]
[redaction]
patterns = ["corp-[0-9]{6}"]
"#,
            &[],
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(config.mode, Mode::Enforce);
        assert_eq!(config.log_level, LogLevel::Verbose);
        assert_eq!(config.retention_days, 30);
        assert!(!config.store_text);
        assert!(!config.event_enabled("PostToolUse"));
        assert!(
            !config.event_enabled("Notification"),
            "event names are canonicalized"
        );
        assert!(config.event_enabled("Stop"));
        assert_eq!(
            config.safety.add,
            vec![AddedRule::shell("no-npm-publish", "npm\\s+publish")]
        );
        assert_eq!(config.safety.remove, vec!["git-push-force".to_string()]);
        assert_eq!(config.redact, vec!["corp-[0-9]{6}".to_string()]);
    }

    #[test]
    fn broken_files_fall_back_to_defaults_with_a_reason() {
        let (config, problems) = load("mode = [unclosed", &[]);
        assert_eq!(config, Config::default());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].message.starts_with("line 1: "), "{problems:?}");
        assert!(problems[0].message.contains("not valid TOML"));

        let (config, problems) = load(
            "mode = \"loud\"\nretention_days = -3\nlog_level = 5\n[safety]\nadd = { bad = \"(\" }\nremove = [\"nope\"]",
            &[],
        );
        assert_eq!(config.mode, Mode::Audit);
        assert_eq!(config.retention_days, DEFAULT_RETENTION_DAYS);
        assert_eq!(config.log_level, LogLevel::Minimal);
        assert!(config.safety.add.is_empty());
        assert_eq!(problems.len(), 5, "{problems:?}");

        let (_, problems) = load("colour = \"blue\"", &[]);
        assert!(problems[0].message.contains("colour"), "{problems:?}");
    }

    #[test]
    fn a_typo_of_an_event_is_caught_and_another_agents_event_is_kept() {
        for (typo, meant) in [
            ("Notifcation", "Notification"),
            ("SesionStart", "SessionStart"),
            ("PreTooluse", "PreToolUse"),
            ("UserPromptSubmitt", "UserPromptSubmit"),
        ] {
            assert_eq!(misspelled_event(typo), Some(meant), "{typo}");
        }
        for raw in [
            "WorktreeCreate",
            "Setup",
            "TaskCompleted",
            "frobnicate",
            "ConfigChange",
        ] {
            assert_eq!(misspelled_event(raw), None, "{raw}");
        }
        let (config, problems) = load(
            "[events]\nWorktreeCreate = false\nNotifcation = false\nUsage = false\n",
            &[],
        );
        assert!(
            !config.event_enabled("WorktreeCreate"),
            "kept under its own name"
        );
        assert!(
            config.event_enabled("Notification"),
            "a typo switches nothing"
        );
        assert!(config.event_enabled("Usage"));
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages
            .iter()
            .any(|m| m.contains("did you mean Notification?")));
        assert!(messages
            .iter()
            .any(|m| m.contains("usage lines are always recorded")));
    }

    #[test]
    fn one_bad_key_costs_only_itself() {
        let (config, problems) = load(
            "mode = \"enforce\"\ncolour = \"blue\"\nevents = true\nstore_text = false\n\
             [capture]\nlog_level = \"verbose\"\n[safety]\nremove = \"git-push-force\"\n\
             [redaction]\npatterns = [\"corp-[0-9]+\", 5]\n",
            &[],
        );
        assert_eq!(config.mode, Mode::Enforce, "kept despite the unknown key");
        assert!(!config.store_text);
        assert_eq!(
            config.log_level,
            LogLevel::Verbose,
            "capture.log_level is accepted"
        );
        assert_eq!(config.redact, vec!["corp-[0-9]+".to_string()]);
        assert_eq!(problems.len(), 4, "{problems:?}");
    }

    /// The messages of `problems`, for asserting on.
    fn messages(problems: &[Problem]) -> Vec<&str> {
        problems.iter().map(|p| p.message.as_str()).collect()
    }

    #[test]
    fn a_syntax_error_costs_only_its_own_line() {
        let (config, problems) = load(
            r#"mode = "enforce"
retention_days = 3O
store_text = false
[safety]
remove = ["git-push-force"]
add = { npm-publish = 'npm\s+publish' }
oops this is not toml
[redaction]
patterns = ['corp-[0-9]{6}']
"#,
            &[],
        );
        assert_eq!(config.mode, Mode::Enforce, "{problems:?}");
        assert!(!config.store_text);
        assert_eq!(config.retention_days, DEFAULT_RETENTION_DAYS);
        assert_eq!(config.safety.remove, vec!["git-push-force".to_string()]);
        assert_eq!(
            config.safety.add,
            vec![AddedRule::shell("npm-publish", "npm\\s+publish")]
        );
        assert_eq!(config.redact, vec!["corp-[0-9]{6}".to_string()]);
        let messages = messages(&problems);
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(
            messages[0].starts_with("line 2: retention_days: not valid TOML"),
            "{messages:?}"
        );
        assert!(
            messages[1].starts_with("line 7: in [safety]: not valid TOML"),
            "{messages:?}"
        );
    }

    #[test]
    fn statements_spanning_lines_are_read_whole_or_dropped_whole() {
        // A multi-line array, a multi-line string and dotted keys, read as TOML reads them,
        // with a syntax error elsewhere.
        let (config, problems) = load(
            r#"[redaction]
patterns = [
  'a-[0-9]+', # a comment ]
  "b]",
]
notes = '''
mode = "enforce"
'''
[safety]
add.rule-one = 'one'
add . "rule two" = "two"
[events]
Stop = flase
[capture]
log_level = "verbose"
"#,
            &[],
        );
        assert_eq!(
            config.redact,
            vec!["a-[0-9]+".to_string(), "b]".to_string()]
        );
        assert_eq!(
            config.mode,
            Mode::Audit,
            "the string's content is no setting"
        );
        assert_eq!(
            config.safety.add,
            vec![
                AddedRule::shell("rule two", "two"),
                AddedRule::shell("rule-one", "one")
            ]
        );
        assert!(config.event_enabled("Stop"));
        assert_eq!(config.log_level, LogLevel::Verbose);
        let messages = messages(&problems);
        assert!(
            messages[0].starts_with("line 13: events.Stop: not valid TOML"),
            "{messages:?}"
        );
        assert!(messages[1].contains("unknown setting redaction.notes"));
        assert_eq!(messages.len(), 2, "{messages:?}");

        // A broken multi-line array is dropped as a whole, its lines named.
        let (config, problems) = load(
            "mode = \"enforce\"\n[redaction]\npatterns = [\n  'a',\n  'b' 'c',\n]\n",
            &[],
        );
        assert_eq!(config.mode, Mode::Enforce);
        assert!(config.redact.is_empty());
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .message
                .starts_with("lines 3-6: redaction.patterns: not valid TOML"),
            "{problems:?}"
        );

        // An opening never closed costs its own line only: what follows is read.
        let (config, problems) = load(
            "redaction.patterns = ['a',\nmode = \"enforce\"\nretention_days = 9\n",
            &[],
        );
        assert_eq!(config.mode, Mode::Enforce, "{problems:?}");
        assert_eq!(config.retention_days, 9);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .message
                .starts_with("line 1: redaction.patterns"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_broken_table_header_costs_its_section() {
        let (config, problems) = load(
            "mode = \"enforce\"\n[safety\nremove = [\"dd\"]\n\n[redaction]\npatterns = ['x']\n",
            &[],
        );
        assert_eq!(config.mode, Mode::Enforce);
        assert!(config.safety.remove.is_empty(), "its table is unknown");
        assert_eq!(config.redact, vec!["x".to_string()]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].message.starts_with("lines 2-3: "),
            "{problems:?}"
        );
    }

    #[test]
    fn a_key_set_twice_is_reported_and_enforce_wins_for_mode() {
        let (config, problems) = load(
            "mode = \"audit\"\nretention_days = 5\nmode = \"enforce\"\nretention_days = 6\n",
            &[],
        );
        assert_eq!(config.mode, Mode::Enforce, "the stricter mode applies");
        assert_eq!(config.retention_days, 5, "otherwise the first one applies");
        let messages = messages(&problems);
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(
            messages[0].starts_with("line 3: mode is set again (first on line 1)"),
            "{messages:?}"
        );
        assert!(
            messages[1].starts_with("line 4: retention_days is set again"),
            "{messages:?}"
        );

        // Valid statements in an invalid document (a table defined twice) are still read,
        // and the document's own error is reported.
        let (config, problems) = load(
            "[safety]\nremove = [\"dd\"]\n[safety]\nadd = { x = 'y' }\n",
            &[],
        );
        assert_eq!(config.safety.remove, vec!["dd".to_string()]);
        assert_eq!(config.safety.add, vec![AddedRule::shell("x", "y")]);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].message.starts_with("line 3: not valid TOML"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_safety_rule_is_a_pattern_or_a_table_with_its_scope() {
        let (config, problems) = load(
            "[safety]\nadd = { npm = 'npm\\s+publish', sql = { pattern = '(?i)delete from', scope = \"any\" }, \
             sh = { pattern = 'x', scope = \"shell\" } }\n",
            &[],
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            config.safety.add,
            vec![
                AddedRule::shell("npm", "npm\\s+publish"),
                AddedRule::shell("sh", "x"),
                AddedRule {
                    scope: Scope::AnyText,
                    ..AddedRule::shell("sql", "(?i)delete from")
                },
            ]
        );
        let (config, _) = load(
            "[safety.add]\nnpm = 'npm'\n[safety.add.sql]\npattern = 'drop'\nscope = \"any\"\n",
            &[],
        );
        assert_eq!(
            config
                .safety
                .add
                .iter()
                .map(|r| r.scope)
                .collect::<Vec<_>>(),
            [Scope::Shell, Scope::AnyText]
        );
    }

    #[test]
    fn a_bad_safety_rule_table_costs_only_what_is_wrong() {
        let (config, problems) = load(
            "[safety.add]\nwide = { pattern = 'a', scope = \"everywhere\", tools = 1 }\n\
             none = { scope = \"any\" }\nnumber = { pattern = 5 }\nlist = ['a']\n",
            &[],
        );
        assert_eq!(config.safety.add, vec![AddedRule::shell("wide", "a")]);
        let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "safety.add.list = [\"a\"]: expected a pattern string or a table \
                 { pattern = '…', scope = \"any\" }; ignored",
                "safety.add.none: no pattern; ignored",
                "safety.add.number.pattern = 5: expected a pattern string; ignored",
                "safety.add.wide.scope = \"everywhere\": expected \"shell\" or \"any\"; using shell",
                "unknown setting safety.add.wide.tools; ignored",
            ]
        );
    }

    #[test]
    fn the_mode_knows_where_it_was_set() {
        let (config, _) = load("retention_days = 3\n", &[]);
        assert_eq!(
            (config.mode, config.mode_origin),
            (Mode::Audit, ModeOrigin::Default)
        );
        let (config, _) = load("mode = \"enforce\"\n", &[]);
        assert_eq!(config.mode, Mode::Enforce);
        assert!(
            matches!(&config.mode_origin, ModeOrigin::File(path) if path.ends_with("cmstore.toml")),
            "{:?}",
            config.mode_origin
        );
        for file in ["", "mode = \"audit\"\n", "mode = \"enforce\"\n"] {
            let (config, _) = load(file, &[("CMSTORE_MODE", "enforce")]);
            assert_eq!(
                (config.mode, config.mode_origin),
                (Mode::Enforce, ModeOrigin::Env),
                "{file:?}"
            );
        }
        let (config, _) = load("mode = \"enforce\"\n", &[("CMSTORE_MODE", "loud")]);
        assert!(
            matches!(config.mode_origin, ModeOrigin::File(_)),
            "a bad variable is ignored"
        );
    }

    #[test]
    fn a_broken_mode_line_says_enforce_is_lost() {
        let (config, problems) = load("mode = enforce\n", &[]);
        assert_eq!(config.mode, Mode::Audit);
        assert!(
            problems[0].message.contains("the safety gate only audits"),
            "{problems:?}"
        );
    }

    #[test]
    fn environment_overrides_the_file() {
        let (config, problems) = load(
            "mode = \"audit\"\nretention_days = 30",
            &[
                ("CMSTORE_MODE", "enforce"),
                ("CMSTORE_RETENTION_DAYS", "14"),
            ],
        );
        assert!(problems.is_empty());
        assert_eq!(config.mode, Mode::Enforce);
        assert_eq!(config.retention_days, 14);
    }

    #[test]
    fn only_documented_debug_values_are_accepted() {
        for (value, on) in [
            ("1", true),
            ("true", true),
            ("on", true),
            ("0", false),
            ("", false),
        ] {
            let (config, problems) = load("", &[("CMSTORE_DEBUG", value)]);
            assert_eq!(config.debug, on, "{value:?}");
            assert!(problems.is_empty(), "{value:?}: {problems:?}");
        }
        for bad in ["7", "debug", "-1"] {
            let (config, problems) = load("debug = false", &[("CMSTORE_DEBUG", bad)]);
            assert!(!config.debug, "{bad:?} is ignored");
            assert_eq!(problems.len(), 1, "{bad:?}: {problems:?}");
            assert_eq!(problems[0].origin, "CMSTORE_DEBUG");
        }
    }

    #[test]
    fn invalid_retention_from_the_environment_falls_back_to_seven() {
        for bad in ["abc", "0", "-5", "1.5"] {
            let (config, problems) =
                load("retention_days = 30", &[("CMSTORE_RETENTION_DAYS", bad)]);
            assert_eq!(config.retention_days, 7, "{bad}");
            assert_eq!(problems.len(), 1, "{bad}");
            assert!(problems[0].message.contains("using 7"));
        }
    }

    #[test]
    fn only_a_retention_given_validly_is_explicit() {
        type Env<'a> = &'a [(&'a str, &'a str)];
        let cases: [(&str, Env<'_>, u32, bool); 6] = [
            ("", &[], 7, false),
            ("retention_days = 30", &[], 30, true),
            ("retention_days = 7", &[], 7, true),
            ("retention_days = 0", &[], 7, false),
            ("", &[("CMSTORE_RETENTION_DAYS", "3")], 3, true),
            (
                "retention_days = 30",
                &[("CMSTORE_RETENTION_DAYS", "x")],
                7,
                false,
            ),
        ];
        for (file, env, days, explicit) in cases {
            let (config, _) = load(file, env);
            assert_eq!(config.retention_days, days, "{file:?} {env:?}");
            assert_eq!(config.retention_explicit, explicit, "{file:?} {env:?}");
        }
    }

    #[test]
    fn queue_compaction_is_off_unless_asked_for() {
        assert!(!load("", &[]).0.compact_queue);
        assert!(load("compact_queue = true", &[]).0.compact_queue);
        let (config, problems) = load("compact_queue = 1", &[]);
        assert!(!config.compact_queue);
        assert!(
            problems[0].message.contains("compact_queue"),
            "{problems:?}"
        );
        let on = load("", &[("CMSTORE_COMPACT_QUEUE", "yes")]).0;
        assert!(on.compact_queue);
        let off = load("compact_queue = true", &[("CMSTORE_COMPACT_QUEUE", "0")]).0;
        assert!(!off.compact_queue);
    }
}
