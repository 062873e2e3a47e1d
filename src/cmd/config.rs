//! `cmstore config check|show`: what the configuration says, and what is wrong with it.

use std::io::Write;
use std::process::ExitCode;

use crate::config::{Config, LogLevel, Mode};
use crate::files::paths::Paths;
use crate::model::safety::Scope;

/// Arguments of `cmstore config`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub action: Action,
}

/// What to do with the configuration.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Action {
    /// Report problems in cmstore.toml and CMSTORE_* variables (exit 1 when there are any)
    Check,
    /// Print the effective configuration (file, environment and defaults combined)
    Show,
}

/// Runs `cmstore config`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let (config, problems) = Config::load_for(paths);
    let mut out = std::io::stdout().lock();
    match args.action {
        Action::Check => {
            if problems.is_empty() {
                let state = if paths.config.exists() {
                    ""
                } else {
                    " (absent: defaults apply)"
                };
                writeln!(out, "configuration OK: {}{state}", paths.config.display())?;
                return Ok(ExitCode::SUCCESS);
            }
            for problem in &problems {
                writeln!(out, "problem: {problem}")?;
            }
            writeln!(
                out,
                "{} problem(s); capture keeps working with defaults for those settings",
                problems.len()
            )?;
            Ok(ExitCode::FAILURE)
        }
        Action::Show => {
            writeln!(
                out,
                "# effective configuration ({})",
                paths.config.display()
            )?;
            let mode = match config.mode {
                Mode::Audit => "audit",
                Mode::Enforce => "enforce",
            };
            let level = match config.log_level {
                LogLevel::Minimal => "minimal",
                LogLevel::Verbose => "verbose",
            };
            writeln!(out, "mode = {mode:?}")?;
            writeln!(out, "log_level = {level:?}")?;
            writeln!(
                out,
                "retention_days = {}{}",
                config.retention_days,
                match config.retention_explicit {
                    true => "  # applied by a running `cmstore ingest` every hour",
                    false =>
                        "  # the default: for `cmstore prune` only, nothing is deleted by itself",
                }
            )?;
            writeln!(out, "compact_queue = {}", config.compact_queue)?;
            writeln!(out, "store_text = {}", config.store_text)?;
            writeln!(out, "debug = {}", config.debug)?;
            writeln!(out, "\n[events]")?;
            for (event, on) in &config.events {
                writeln!(out, "{event} = {on}")?;
            }
            writeln!(out, "\n[safety]")?;
            writeln!(
                out,
                "# built-in rules: {}",
                crate::model::safety::rule_names().join(", ")
            )?;
            writeln!(out, "remove = {:?}", config.safety.remove)?;
            for rule in &config.safety.add {
                let (name, pattern) = (&rule.name, &rule.pattern);
                match rule.scope {
                    Scope::Shell => writeln!(out, "add.{name} = {pattern:?}")?,
                    scope => writeln!(
                        out,
                        "add.{name} = {{ pattern = {pattern:?}, scope = {:?} }}",
                        scope.as_str()
                    )?,
                }
            }
            writeln!(out, "\n[redaction]")?;
            writeln!(out, "patterns = {:?}", config.redact)?;
            writeln!(
                out,
                "\n# [prices.\"<model>\"]: overrides of cmstore's price table (USD per million tokens)"
            )?;
            for (model, price) in &config.prices {
                let [input, output, w5, w1, read] = price.rates;
                writeln!(
                    out,
                    "prices.{model:?} = {{ input = {input}, output = {output}, \
                     cache_write_5m = {w5}, cache_write_1h = {w1}, cache_read = {read} }}"
                )?;
            }
            show_checks(&mut out, &config.checks)?;
            show_budget(&mut out, &config.budget)?;
            show_push(&mut out, config.push.as_ref())?;
            for problem in &problems {
                eprintln!("warning: {problem}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The team store (`[push]`), only when the section is present; the URL without its
/// password.
fn show_push(
    out: &mut impl Write,
    push: Option<&crate::config::push::PushSettings>,
) -> std::io::Result<()> {
    let Some(push) = push else { return Ok(()) };
    writeln!(out, "\n[push]")?;
    match crate::read::push::server::settings(push.url.as_deref(), &crate::support::env::value) {
        Ok(settings) => writeln!(
            out,
            "url = {:?}   # the password is not shown",
            crate::read::push::server::destination(&settings)
        )?,
        Err(err) => writeln!(out, "# url: {err}")?,
    }
    writeln!(out, "content = {:?}", push.content.as_str())?;
    for (key, value) in [("user", &push.user), ("team", &push.team)] {
        if let Some(value) = value {
            writeln!(out, "{key} = {value:?}")?;
        }
    }
    if let Some(ca) = &push.ca_file {
        writeln!(out, "ca_file = {:?}", ca.display().to_string())?;
    }
    writeln!(out, "batch_events = {}", push.batch_events)?;
    writeln!(out, "enabled = {}", push.continuous)
}

/// The budget's limits (`[budget]`), only when one is set: each as the setting that sets it.
fn show_budget(out: &mut impl Write, budget: &crate::model::budget::Budget) -> std::io::Result<()> {
    if budget.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n[budget]")?;
    writeln!(out, "mode = {:?}", budget.mode.as_str())?;
    writeln!(out, "warn_at = {}", budget.warn_at)?;
    match &budget.notify {
        crate::model::budget::Notify::Off => writeln!(out, "notify = false")?,
        crate::model::budget::Notify::Desktop => writeln!(out, "notify = true")?,
        crate::model::budget::Notify::Command(line) => {
            writeln!(out, "notify = {}", toml::Value::String(line.clone()))?
        }
    }
    for limit in &budget.limits {
        let setting = limit.setting();
        let setting = setting.strip_prefix("budget.").unwrap_or(&setting);
        writeln!(
            out,
            "{setting}.{} = {}",
            limit.amount.unit(),
            limit.amount.value()
        )?;
    }
    Ok(())
}

/// The configured checks (`[checks]`), each only when it is on.
fn show_checks(out: &mut impl Write, checks: &crate::config::Checks) -> std::io::Result<()> {
    let mode = |m: Mode| crate::hook::checks::trigger::mode_name(m);
    let secs = |ms: u64| ms as f64 / 1000.0;
    if let Some(c) = &checks.format {
        writeln!(out, "\n[checks.format]")?;
        writeln!(
            out,
            "mode = {:?}\ntimeout_secs = {}",
            mode(c.mode),
            secs(c.timeout_ms)
        )?;
        writeln!(out, "commands = [")?;
        for command in &c.commands {
            writeln!(
                out,
                "  {{ pattern = {:?}, command = {:?} }},",
                command.patterns, command.command
            )?;
        }
        writeln!(out, "]")?;
    }
    if let Some(c) = &checks.markdown {
        writeln!(out, "\n[checks.markdown]")?;
        writeln!(
            out,
            "mode = {:?}\ntimeout_secs = {}",
            mode(c.mode),
            secs(c.timeout_ms)
        )?;
        writeln!(out, "patterns = {:?}", c.patterns)?;
        if let Some(n) = c.max_line_length {
            writeln!(out, "max_line_length = {n}")?;
        }
        if let Some(command) = &c.command {
            writeln!(out, "command = {command:?}")?;
        }
    }
    if let Some(c) = &checks.security {
        writeln!(out, "\n[checks.security]")?;
        writeln!(
            out,
            "mode = {:?}\ntimeout_secs = {}",
            mode(c.mode),
            secs(c.timeout_ms)
        )?;
        writeln!(out, "on_push = {}", c.on_push)?;
        if let Some(command) = &c.command {
            writeln!(out, "command = {command:?}")?;
        }
    }
    Ok(())
}
