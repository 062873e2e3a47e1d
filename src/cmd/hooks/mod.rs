//! `cmstore hooks install|status|uninstall`: write, check and remove the hook configuration
//! that makes each agent run `cmstore capture`.
//!
//! The merge itself is pure (`crate::hook::agent_settings`); this module reads and writes the files: it
//! never overwrites a file it cannot parse, keeps the text of everything it did not change,
//! writes through a temporary file and a rename, keeps the replaced file's permissions, and
//! writes nothing when nothing changes.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::Value;

use crate::files::paths::Paths;
mod plugin;

use crate::hook::agent_settings::merge::{self, State};
use crate::hook::agent_settings::plugin::of as plugin_of;
use crate::hook::agent_settings::style::Style;
use crate::hook::agent_settings::versions::{self, Version};
use crate::hook::agent_settings::{codex_trust, splice, switches, vscode_settings};
use crate::hook::agent_settings::{Agent, Location, Wiring, CURRENT_VERSION};
use crate::hook::agent_version::{self, Asked};
use crate::hook::probe;
use crate::read::status::CatchUp;
use crate::support::env;

/// Arguments of `cmstore hooks`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// install, status or uninstall.
    #[command(subcommand)]
    pub action: Action,
}

/// What to do with the hooks.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Write cmstore's hooks into the agent's configuration, or update an outdated installation
    Install(InstallArgs),
    /// Report per agent: installed, missing, outdated or modified-by-hand
    Status(StatusArgs),
    /// Remove the hooks cmstore added, leaving every other hook as it was
    Uninstall(UninstallArgs),
    /// Check that the installed hooks will fire: each file's state, the switches that turn
    /// them off, and a probe event run through the installed command line (exit 1 when
    /// something is broken)
    Doctor(DoctorArgs),
}

/// Arguments of `cmstore hooks doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Agents to check [default: every agent with cmstore's hooks here]
    #[arg(long, value_parser = agent_value(), value_delimiter = ',')]
    pub agent: Vec<Agent>,
    /// Which configurations to check.
    #[command(flatten)]
    pub scope: StatusScope,
}

/// `--agent`'s values: the agents of the agent table that have a hook file, each with its
/// project file as help.
fn agent_value() -> impl clap::builder::TypedValueParser<Value = Agent> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = Agent::wired().map(|agent| {
        let project = match plugin_of(agent) {
            Some(plugin) => {
                let folder = plugin.project.join("/");
                match plugin.files {
                    [one] => format!("{folder}/{one}"),
                    _ => format!("{folder}/"),
                }
            }
            None => agent.file().project.join("/"),
        };
        let help = format!("{} (`{project}`)", agent.profile().title);
        PossibleValue::new(agent.as_str()).help(help)
    });
    PossibleValuesParser::new(values)
        .map(|name| Agent::from_flag(&name).expect("every value names an agent"))
}

/// Which configuration: a project's or the user's.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ScopeArgs {
    /// Project directory whose configuration to use [default: the current directory]
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Use the user's own configuration (~/.claude, ~/.copilot, ~/.codex, ~/.gemini, ~/.qwen,
    /// ~/.cursor, ~/.factory, ~/.config/opencode, ~/.cline) instead of a project's
    #[arg(long)]
    pub user: bool,
}

/// Arguments of `cmstore hooks install`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Agents to install for (repeat the flag or separate with commas)
    #[arg(long, value_parser = agent_value(), value_delimiter = ',', required = true)]
    pub agent: Vec<Agent>,
    /// Project or user configuration.
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Program the hooks run [default: in a project, `cmstore` when the PATH has one, as a
    /// file committed to a shared repository wants; else this binary's absolute path]
    #[arg(long, value_name = "PATH")]
    pub command: Option<String>,
    /// Replace cmstore's entries even when they were edited by hand
    #[arg(long)]
    pub force: bool,
    /// Claude Code only: also set the environment that makes it send its own telemetry
    /// (OTLP logs and metrics) to `cmstore ingest --otlp-listen` (opt-in)
    #[arg(long)]
    pub otel: bool,
    /// With --otel: where `cmstore ingest --otlp-listen` listens
    #[arg(long, value_name = "URL", requires = "otel",
          default_value = crate::hook::agent_settings::otel::DEFAULT_ENDPOINT)]
    pub otel_endpoint: String,
    /// Claude Code only: its version, when `claude --version` cannot tell (say, the one
    /// VS Code bundles); only the events that version knows are written
    #[arg(long, value_name = "X.Y.Z", value_parser = version_value)]
    pub agent_version: Option<Version>,
}

fn version_value(text: &str) -> Result<Version, String> {
    Version::parse(text).ok_or_else(|| format!("{text:?} is no version: write it as 2.1.332"))
}

/// Arguments of `cmstore hooks status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Agents to check [default: all]
    #[arg(long, value_parser = agent_value(), value_delimiter = ',')]
    pub agent: Vec<Agent>,
    /// Which configurations to check.
    #[command(flatten)]
    pub scope: StatusScope,
    /// Program the hooks are expected to run [default: what `install` would write there]
    #[arg(long, value_name = "PATH")]
    pub command: Option<String>,
    /// Output format
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// The configurations `hooks status` checks: by default the user's and the current
/// directory's, since an agent runs the hooks of both.
#[derive(Debug, clap::Args)]
pub struct StatusScope {
    /// Check only this project's configuration [default: the user's and the current
    /// directory's]
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Check only the user's own configuration (~/.claude, ~/.copilot, ~/.codex, ~/.gemini,
    /// ~/.qwen, ~/.cursor, ~/.factory)
    #[arg(long)]
    pub user: bool,
}

/// Arguments of `cmstore hooks uninstall`.
#[derive(Debug, clap::Args)]
pub struct UninstallArgs {
    /// Agents to uninstall for (repeat the flag or separate with commas)
    #[arg(long, value_parser = agent_value(), value_delimiter = ',', required = true)]
    pub agent: Vec<Agent>,
    /// Project or user configuration.
    #[command(flatten)]
    pub scope: ScopeArgs,
}

/// Output format of `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per agent, for people
    Text,
    /// A JSON array, one object per agent, for scripts
    Json,
}

/// Runs `cmstore hooks`. A `--home` or `--queue` given to it (or set through
/// `CMSTORE_HOME` / `CMSTORE_QUEUE`) is written into the hook command, so capture writes
/// where this cmstore reads even when the agent runs without those variables.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        Action::Install(a) => install(paths, a),
        Action::Status(a) => status(paths, a),
        Action::Doctor(a) => doctor(paths, a),
        Action::Uninstall(a) => uninstall(paths, a),
    }
}

fn install(paths: &Paths, args: InstallArgs) -> anyhow::Result<ExitCode> {
    let location = location(&args.scope)?;
    let (program, program_note) = program_for(args.command.as_deref(), &location)?;
    let program = command_words(paths, program)?;
    let mut failed = false;
    if args.otel && agents(&args.agent).iter().any(|a| *a != Agent::Claude) {
        bail!("--otel is for Claude Code only (--agent claude)");
    }
    let otel = args.otel.then_some(args.otel_endpoint.as_str());
    if args.agent_version.is_some()
        && agents(&args.agent)
            .iter()
            .any(|a| !versions::is_version_aware(*a))
    {
        bail!("--agent-version is for Claude Code only (--agent claude)");
    }
    let mut notes: Vec<String> = program_note.into_iter().collect();
    for agent in agents(&args.agent) {
        if let Some(file) = plugin_of(agent) {
            match plugin::install(file, &location, &program, args.force) {
                Ok(message) => {
                    println!("{}: {message}", agent.as_str());
                    notes.extend(before_they_fire(agent, &location));
                }
                Err(err) => {
                    eprintln!("cmstore: {}: {err:#}", agent.as_str());
                    failed = true;
                }
            }
            notes.extend(plugin::twice(agent, file, &location, user_location().ok()));
            continue;
        }
        let asked = agent_version::resolve(agent, args.agent_version);
        let installing = Installing {
            program: &program,
            force: args.force,
            otel,
            asked: asked.as_ref(),
        };
        match install_one(agent, &location, &installing, &mut notes) {
            Ok(message) => println!("{}: {message}", agent.as_str()),
            Err(err) => {
                eprintln!("cmstore: {}: {err:#}", agent.as_str());
                failed = true;
            }
        }
        notes.extend(overlap_note(agent, &location));
    }
    // Said once, however many of the agents it concerns were installed.
    notes.dedup();
    for note in notes {
        eprintln!("note: {note}");
    }
    Ok(exit(failed))
}

/// What `hooks install` writes, besides the agent and where.
struct Installing<'a> {
    /// The cmstore command words before `capture`.
    program: &'a [String],
    /// Replace entries edited by hand.
    force: bool,
    /// `--otel`'s endpoint, when asked.
    otel: Option<&'a str>,
    /// The agent's version, for an agent whose versions differ in the events they accept.
    asked: Option<&'a Asked>,
}

fn install_one(
    agent: Agent,
    location: &Location,
    how: &Installing<'_>,
    notes: &mut Vec<String>,
) -> anyhow::Result<String> {
    let (force, otel) = (how.force, how.otel);
    let path = agent.config_path(location);
    let earlier = earlier_file(agent, &path);
    let read_from = earlier.as_deref().unwrap_or(&path);
    let existing = read_existing(read_from)?;
    let (mut doc, style) = parse(agent, existing.as_deref(), read_from)?;
    let mut expected = agent.expected_command(how.program);
    if let Some(said) = agent_version::fit(&mut expected, how.asked) {
        notes.push(format!("{}: {said}", agent.as_str()));
    }
    let shown = path.display();
    let before = merge::status(&doc, &expected).with_context(|| format!("{shown}"))?;
    notes.extend(
        will_not_fire(agent, &path, &doc)
            .into_iter()
            .map(|why| format!("{}: the hooks will not fire: {why}", agent.as_str())),
    );
    let telemetry = match otel {
        Some(endpoint) => crate::hook::agent_settings::otel::set_env(&mut doc, endpoint)
            .map_err(|why| anyhow::anyhow!("{shown}: {why}"))?,
        None => false,
    };
    let telemetry_note = if telemetry {
        format!(
            "; Claude Code sends its telemetry to {}",
            otel.unwrap_or_default()
        )
    } else {
        String::new()
    };
    match before.state {
        State::Installed if telemetry => {
            write_atomic(&path, &render(agent, existing.as_deref(), &doc, &style))?;
            return Ok(format!(
                "already installed (hooks-v{CURRENT_VERSION}) in {shown}{telemetry_note}"
            ));
        }
        State::Installed => {
            return Ok(format!(
                "already installed (hooks-v{CURRENT_VERSION}) in {shown}"
            ))
        }
        State::ModifiedByHand if !force => bail!(
            "{shown}: cmstore's hooks were changed by hand ({}); \
             re-run with --force to replace them, or uninstall first",
            before.notes.join("; ")
        ),
        _ => {}
    }
    if agent == Agent::Droid {
        notes.extend(droid_before_install(&path, &mut doc, &expected));
    }
    merge::install(&mut doc, &expected).with_context(|| format!("{shown}"))?;
    write_atomic(&path, &render(agent, existing.as_deref(), &doc, &style))?;
    if let Some(earlier) = &earlier {
        notes.push(move_aside(earlier));
    }
    notes.extend(before_they_fire(agent, location));
    let message = match before.state {
        State::Missing => format!(
            "installed hooks-v{CURRENT_VERSION} ({} events{}) into {shown}",
            expected.events.len(),
            expected
                .for_version
                .map(|v| format!(" for {} {v}", agent.profile().title))
                .unwrap_or_default()
        ),
        State::Outdated if before.refit => format!(
            "fitted hooks-v{CURRENT_VERSION} to {} {} ({} events) in {shown}",
            agent.profile().title,
            expected
                .for_version
                .map(|v| v.to_string())
                .unwrap_or_default(),
            expected.events.len()
        ),
        State::Outdated if before.versions.iter().all(|&v| v == CURRENT_VERSION) => {
            format!("pointed hooks-v{CURRENT_VERSION} at the new command in {shown}")
        }
        State::Outdated => format!(
            "updated {} to hooks-v{CURRENT_VERSION} in {shown}",
            tokens(&before.versions)
        ),
        _ => format!("replaced hand-edited hooks with hooks-v{CURRENT_VERSION} in {shown}"),
    };
    Ok(message + &telemetry_note)
}

/// What an install into Droid's `hooks.json` at `path` (`doc`, as the merge reads it) must do
/// first, and says. Droid runs one list of hooks per event: `hooks.json`'s, when it has the
/// event, else the `hooks` of the `settings.json` beside it (seen with Droid 0.225.2; its docs
/// say `settings.json` is read only without a `hooks.json`). So the user's `settings.json`
/// hooks of an event cmstore is about to add to `hooks.json` are carried into it, or they would
/// stop running without a word. And handlers that already run `capture --agent droid` without
/// cmstore's token (Droid's `/hooks` editor drops unknown keys when it saves) are named: with
/// them, every event would be captured twice.
fn droid_before_install(
    path: &Path,
    doc: &mut Value,
    expected: &crate::hook::agent_settings::Expected,
) -> Vec<String> {
    let mut notes = Vec::new();
    let settings = path
        .parent()
        .map(|dir| dir.join("settings.json"))
        .and_then(|file| fs::read_to_string(&file).ok().map(|text| (file, text)));
    if let Some((file, text)) = settings {
        let theirs: Option<Value> = serde_json::from_str(&text).ok();
        let carried = merge::carry_events(doc, theirs.as_ref(), expected);
        if !carried.is_empty() {
            notes.push(format!(
                "droid: Droid runs hooks.json's hooks of an event instead of {}'s: your hooks \
                 there for {} are carried into hooks.json, so they keep running (change them \
                 in hooks.json from now on)",
                file.display(),
                carried.join(", ")
            ));
        }
    }
    notes.extend(
        droid_never_run(doc)
            .into_iter()
            .map(|why| format!("droid: {why}; cmstore's hooks are written at its top, and run")),
    );
    let unmarked = merge::unmarked_commands(doc, Agent::Droid, "capture --agent droid");
    if !unmarked.is_empty() {
        notes.push(format!(
            "droid: {} already run `capture --agent droid` without cmstore's token (Droid's \
             /hooks editor drops it when it saves): remove those handlers, or each event is \
             captured twice",
            unmarked.join(", ")
        ));
    }
    notes
}

/// The user's own hooks in Droid's `hooks.json` (`doc`) that never run, said as a reason.
fn droid_never_run(doc: &Value) -> Option<String> {
    let events = switches::droid_hooks_never_run(doc);
    (!events.is_empty()).then(|| {
        format!(
            "your {} hooks under a \"hooks\" key in hooks.json (Droid reads only the events at \
             its top: move them up)",
            events.join(", ")
        )
    })
}

/// Droid's `hooks/hooks.json`, its hooks file before 0.136, when it is there and the
/// `hooks.json` at `path` is not: Droid reads it only while no `hooks.json` exists, so an
/// install starts from its hooks, and then moves it aside as Droid itself does on its next
/// save ([`move_aside`]).
fn earlier_file(agent: Agent, path: &Path) -> Option<PathBuf> {
    if agent != Agent::Droid || path.exists() {
        return None;
    }
    let earlier = path.parent()?.join("hooks").join("hooks.json");
    earlier.is_file().then_some(earlier)
}

/// Renames Droid's earlier `hooks/hooks.json`, whose hooks the new `hooks.json` now holds,
/// to `hooks.migrated.json` beside it (Droid's own name for it); says what was done.
fn move_aside(earlier: &Path) -> String {
    let shown = earlier.display();
    let aside = earlier.with_file_name("hooks.migrated.json");
    let carried = format!("droid: the hooks of {shown} are carried over into hooks.json");
    if aside.exists() {
        return format!(
            "{carried}; {shown} stays (Droid no longer reads it), as {} exists",
            aside.display()
        );
    }
    match fs::rename(earlier, &aside) {
        Ok(()) => format!(
            "{carried}, and it is now {}, as Droid would",
            aside.display()
        ),
        Err(err) => {
            format!("{carried}; {shown} could not be renamed ({err}); Droid no longer reads it")
        }
    }
}

/// The new file text of `doc` (as the merge reads it): over an existing file, its unchanged
/// parts keep their exact text.
fn render(agent: Agent, existing: Option<&str>, doc: &Value, style: &Style) -> String {
    let doc = agent.unnest_events(doc.clone());
    match existing {
        Some(text) if !text.trim_start_matches('\u{feff}').trim().is_empty() => {
            splice::rewrite(text, &doc)
        }
        _ => style.render(&doc),
    }
}

fn uninstall(paths: &Paths, args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let location = location(&args.scope)?;
    let mut failed = false;
    for agent in agents(&args.agent) {
        let removed = match plugin_of(agent) {
            Some(file) => {
                let (program, _) = program_for(None, &location)?;
                plugin::uninstall(file, &location, &command_words(paths, program)?)
            }
            None => uninstall_one(agent, &location),
        };
        match removed {
            Ok(message) => println!("{}: {message}", agent.as_str()),
            Err(err) => {
                eprintln!("cmstore: {}: {err:#}", agent.as_str());
                failed = true;
            }
        }
    }
    Ok(exit(failed))
}

fn uninstall_one(agent: Agent, location: &Location) -> anyhow::Result<String> {
    let path = agent.config_path(location);
    let shown = path.display();
    let Some(existing) = read_existing(&path)? else {
        return Ok(format!("not installed ({shown} does not exist)"));
    };
    let (mut doc, style) = parse(agent, Some(&existing), &path)?;
    let removed = merge::uninstall(&mut doc, agent).with_context(|| format!("{shown}"))?;
    if removed == 0 {
        return Ok(format!("not installed in {shown}"));
    }
    let expected = agent.expected("");
    let is_link = fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
    if merge::is_empty(&doc, &expected) && !is_link {
        fs::remove_file(&path).with_context(|| format!("cannot remove {shown}"))?;
        let folders = remove_empty_folders(&path, &agent.config_root(location));
        let folders = match folders.as_slice() {
            [] => String::new(),
            some => {
                let shown: Vec<String> = some.iter().map(|f| f.display().to_string()).collect();
                format!(", and the folders it left empty: {}", shown.join(", "))
            }
        };
        // Cursor reloads a changed hooks file but keeps a deleted one's hooks until it
        // restarts (seen with 3.17.19).
        let restart = match agent {
            Agent::Cursor => " (restart Cursor: it keeps a deleted file's hooks until then)",
            _ => "",
        };
        return Ok(format!(
            "removed {removed} hooks; {shown} held nothing else and was deleted{folders}{restart}"
        ));
    }
    write_atomic(&path, &render(agent, Some(&existing), &doc, &style))?;
    Ok(format!("removed {removed} hooks from {shown}"))
}

/// Removes the folders between `root` and the deleted `file` that are now empty, deepest
/// first (the ones an install creates: `.github/hooks`, `.github`), never `root` itself nor a
/// folder holding anything; returns those removed.
fn remove_empty_folders(file: &Path, root: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let mut dir = file.parent();
    while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
        // `remove_dir` refuses a folder that is not empty: that ends the walk.
        if fs::remove_dir(d).is_err() {
            break;
        }
        removed.push(d.to_path_buf());
        dir = d.parent();
    }
    removed
}

/// One agent's line of `status`.
#[derive(Debug, Serialize)]
struct Row {
    agent: &'static str,
    scope: &'static str,
    file: String,
    /// `installed`, `missing`, `outdated`, `modified-by-hand`, or `invalid` (unreadable file).
    state: &'static str,
    /// Tokens found on cmstore's entries.
    tokens: Vec<String>,
    current_token: String,
    /// The agent's version the events were checked against, when it is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_version: Option<String>,
    /// Why the hooks will not run although installed (a switch that turns them off).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    will_not_fire: Vec<String>,
    /// What keeps some of the agent's builds here from running them, not all (VS Code
    /// Insiders' settings beside Stable's): the person may use either.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    may_not_fire: Vec<String>,
    events: usize,
    events_current: usize,
    notes: Vec<String>,
}

fn status(paths: &Paths, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let locations = status_locations(&args.scope)?;
    // Per place, the program an install there would write.
    let programs = locations
        .iter()
        .map(|location| {
            let (program, _) = program_for(args.command.as_deref(), location)?;
            command_words(paths, program)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let chosen = if args.agent.is_empty() {
        Agent::wired().collect()
    } else {
        agents(&args.agent)
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut said = Vec::new();
    for agent in chosen {
        if let Some(file) = plugin_of(agent) {
            for (location, program) in locations.iter().zip(&programs) {
                if !plugin::serves(file, location) {
                    continue;
                }
                let row = plugin::status_row(agent, file, location, program);
                if !rows.iter().any(|r| r.file == row.file) {
                    rows.push(row);
                }
                said.extend(plugin::twice(agent, file, location, user_location().ok()));
            }
            continue;
        }
        // Asked only of an agent with a hook file here: nothing to check otherwise.
        let has_file = locations.iter().any(|l| agent.config_path(l).exists());
        let asked = has_file
            .then(|| agent_version::resolve(agent, None))
            .flatten();
        let mut wired = false;
        for (location, program) in locations.iter().zip(&programs) {
            let row = status_row(agent, location, program, asked.as_ref());
            wired |= row.state != "missing";
            // Run from the home directory, a project's file can be the user's own.
            if !rows.iter().any(|r| r.file == row.file) {
                rows.push(row);
            }
        }
        // Of an agent with cmstore's hooks somewhere: what its version fires.
        if wired {
            said.extend(version_note(agent, asked.as_ref()));
        }
    }
    let invalid = rows.iter().any(|r| r.state == "invalid");
    let mut out = io::stdout().lock();
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &rows)?;
            writeln!(out)?;
        }
        Format::Text => {
            writeln!(
                out,
                "{:<8} {:<8} {:<17} {:<9} FILE",
                "AGENT", "SCOPE", "STATE", "TOKEN"
            )?;
            for row in &rows {
                let token = if row.tokens.is_empty() {
                    "-".to_string()
                } else {
                    row.tokens.join(",")
                };
                writeln!(
                    out,
                    "{:<8} {:<8} {:<17} {:<9} {}",
                    row.agent, row.scope, row.state, token, row.file
                )?;
                if row.state != "installed" && row.state != "missing" {
                    for note in grouped_notes(&row.notes) {
                        writeln!(out, "    {note}")?;
                    }
                }
                for why in &row.will_not_fire {
                    writeln!(out, "    will not fire: {why}")?;
                }
                for why in &row.may_not_fire {
                    writeln!(out, "    may not fire: {why}")?;
                }
            }
            for note in &said {
                writeln!(out, "note: {note}")?;
            }
            for location in &locations {
                if let Some(note) = overlap_note(Agent::Vscode, location) {
                    writeln!(out, "note: {note}")?;
                }
            }
        }
    }
    Ok(exit(invalid))
}

/// `hooks doctor`: per installed file, what will keep its hooks from firing, and a probe
/// fired through its command line; exit 1 when anything is broken.
fn doctor(paths: &Paths, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let locations = status_locations(&args.scope)?;
    let chosen = if args.agent.is_empty() {
        Agent::wired().collect()
    } else {
        agents(&args.agent)
    };
    let mut out = io::stdout().lock();
    let (mut checked, mut broken, mut updates) = (0, 0, 0);
    let mut seen_files = Vec::new();
    for agent in chosen {
        let files: Vec<&Location> = locations.iter().filter(|l| is_wired_at(agent, l)).collect();
        let asked = (!files.is_empty() && plugin_of(agent).is_none())
            .then(|| agent_version::resolve(agent, None))
            .flatten();
        for location in files {
            let path = wired_path(agent, location);
            if seen_files.contains(&path) {
                continue;
            }
            seen_files.push(path.clone());
            let (program, _) = program_for(None, location)?;
            let program = command_words(paths, program)?;
            let row = match plugin_of(agent) {
                Some(file) => plugin::status_row(agent, file, location, &program),
                None => status_row(agent, location, &program, asked.as_ref()),
            };
            if row.state == "missing" {
                continue;
            }
            checked += 1;
            writeln!(out, "{:<8} {:<8} {}", row.agent, row.scope, row.file)?;
            let mut say = |level: &str, text: &str| -> io::Result<()> {
                broken += usize::from(level == "broken");
                updates += usize::from(level == "update");
                writeln!(out, "  {level:<7} {text}")
            };
            match row.state {
                "installed" => say(
                    "ok",
                    &format!(
                        "installed: hooks-v{CURRENT_VERSION}, {} events{}",
                        row.events,
                        row.agent_version
                            .as_deref()
                            .map(|v| format!(" for {} {v}", agent.profile().title))
                            .unwrap_or_default()
                    ),
                )?,
                // Out of date, the hooks still fire what they hold (the probe says whether they
                // run at all): an update, not a breakage.
                state => say(
                    if state == "outdated" {
                        "update"
                    } else {
                        "broken"
                    },
                    &format!(
                        "{state}: {}; `{}` fixes it",
                        grouped_notes(&row.notes).join("; "),
                        install_command(agent, location)
                    ),
                )?,
            }
            for why in &row.will_not_fire {
                say("broken", &format!("will not fire: {why}"))?;
            }
            for why in &row.may_not_fire {
                say("note", &format!("may not fire: {why}"))?;
            }
            let twice = plugin_of(agent)
                .and_then(|file| plugin::twice(agent, file, location, user_location().ok()));
            if let Some(twice) = twice {
                let said = twice.split_once(": ").map_or(twice.as_str(), |(_, t)| t);
                say("broken", said)?;
            }
            if row.state != "invalid" {
                let probed = match plugin_of(agent) {
                    Some(file) => plugin::probe_file(paths, agent, file, location),
                    None => probe_file(paths, agent, location, &path),
                };
                match probed {
                    Ok(text) => say("ok", &text)?,
                    Err(why) => say("broken", &format!("the probe failed: {why}"))?,
                }
            }
            // Codex's review is checked above, hook by hook; VS Code's folder is read when
            // its settings list it.
            let checked = match agent {
                Agent::Codex => true,
                Agent::Vscode => vscode_settings(location)
                    .iter()
                    .any(|files| vscode_settings::lists(files, vscode_folder(location))),
                _ => false,
            };
            let note = before_they_fire(agent, location).filter(|_| !checked);
            if let Some(note) = note {
                let note = note.split_once(": ").map_or(note.as_str(), |(_, n)| n);
                writeln!(out, "  {:<7} {note}", "note")?;
            }
        }
    }
    if checked == 0 {
        writeln!(
            out,
            "no agent here has cmstore's hooks: `cmstore hooks install --agent …` writes them"
        )?;
        return Ok(ExitCode::FAILURE);
    }
    broken += usize::from(write_ingest_check(&mut out, paths)?);
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut summary = match broken {
        0 => "nothing broken".to_string(),
        n => plural(n, "problem", "problems"),
    };
    if updates > 0 {
        summary += &format!("; {} to update", plural(updates, "file", "files"));
    }
    writeln!(out, "{summary}")?;
    Ok(exit(broken > 0))
}

/// How long the doctor waits for a running ingest to take in what the queue holds.
const CATCH_UP: Duration = Duration::from_secs(10);

/// Whether what the hooks write reaches the store: an ingest following the queue, which has
/// taken in every line the queue held when asked within [`CATCH_UP`] (the doctor's probes go
/// to a queue of their own: nothing is written to see). Without one the lines wait in the
/// queue, and `[budget]` limits are judged on an old spend or none: a note, not a breakage,
/// as `ingest --once` run later loses nothing. An ingest that runs but does not keep up is
/// broken: true then.
fn write_ingest_check(out: &mut impl Write, paths: &Paths) -> io::Result<bool> {
    writeln!(out, "ingest   {}", paths.queue.display())?;
    let text = match crate::files::ingest_lock::probe(&paths.db) {
        Ok(live) if live.running => {
            let pid = live.holder.map(|h| format!(" (pid {})", h.pid));
            let pid = pid.unwrap_or_default();
            let db = paths.db.display();
            match crate::read::status::catch_up(&paths.db, &paths.queue, CATCH_UP) {
                Ok(CatchUp::Reached(took)) => format!(
                    "ok      an ingest follows the queue into {db}{pid}: every line the queue \
                     held was in the store within {} ms",
                    took.as_millis()
                ),
                // Moving: a backlog being worked through, not a breakage.
                Ok(CatchUp::Behind { left, moved }) if moved > 0 => format!(
                    "note    an ingest follows the queue into {db}{pid} and is catching up: \
                     {left} bytes to go after {} s, {moved} taken in meanwhile",
                    CATCH_UP.as_secs()
                ),
                Ok(CatchUp::Behind { left, .. }) => {
                    writeln!(
                        out,
                        "  broken  an ingest runs{pid}, but is {left} bytes of the queue short \
                         of its end and took in nothing in {} s: `cmstore status` says why \
                         (its log: the ingest's stderr)",
                        CATCH_UP.as_secs()
                    )?;
                    return Ok(true);
                }
                Err(err) => format!(
                    "note    an ingest follows the queue into {db}{pid}; cannot tell whether \
                     it keeps up: {err:#}"
                ),
            }
        }
        Ok(_) => {
            let budget = match crate::config::Config::load_for(paths).0.budget.is_empty() {
                true => "",
                false => "\n  note    the [budget] limits are judged on the spend the last ingest counted",
            };
            format!(
                "note    no ingest runs: what the hooks write waits in the queue until \
                 `cmstore ingest` reads it{budget}"
            )
        }
        Err(err) => format!("note    cannot tell whether an ingest runs: {err}"),
    };
    writeln!(out, "  {text}")?;
    Ok(false)
}

/// The file that wires `agent` at `location`: its hook file, or the file (or folder of files)
/// cmstore writes for it.
fn wired_path(agent: Agent, location: &Location) -> PathBuf {
    match plugin_of(agent) {
        Some(file) => crate::hook::agent_settings::plugin::shown(file, location),
        None => agent.config_path(location),
    }
}

/// True when a file that may wire `agent` exists at `location`.
fn is_wired_at(agent: Agent, location: &Location) -> bool {
    match plugin_of(agent) {
        Some(file) if !plugin::serves(file, location) => false,
        Some(file) => crate::hook::agent_settings::plugin::paths(file, location)
            .iter()
            .any(|p| p.exists()),
        None => agent.config_path(location).exists(),
    }
}

/// The `hooks install` that brings `agent`'s file at `location` up to date.
fn install_command(agent: Agent, location: &Location) -> String {
    let scope = match location {
        Location::Project(dir) => format!("--project {}", dir.display()),
        Location::User { .. } => "--user".to_string(),
    };
    format!("cmstore hooks install --agent {} {scope}", agent.as_str())
}

/// Fires the doctor's probe through `agent`'s installed session-start command in the file at
/// `path`, its line sent to a queue of its own under cmstore's state directory (removed
/// after): nothing reaches the store.
fn probe_file(
    paths: &Paths,
    agent: Agent,
    location: &Location,
    path: &Path,
) -> Result<String, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("cannot read the file: {e}"))?;
    let (doc, _) = parse(agent, Some(&text), path).map_err(|e| format!("{e:#}"))?;
    let session = format!("cmstore-doctor-{}", uuid::Uuid::new_v4());
    let cwd = match location {
        Location::Project(dir) => dir.display().to_string(),
        Location::User { home, .. } => home.display().to_string(),
    };
    let probe = probe::probe(agent, &session, &cwd, crate::support::clock::now_ms());
    let handler = merge::installed_handler(&doc, agent, probe.event)
        .ok_or_else(|| format!("no cmstore handler for {}", probe.event))?;
    let (shell, line) = probe::command_line(agent, handler)
        .ok_or_else(|| format!("the {} handler has no command line", probe.event))?;
    // A folder of its own: the queue and its lock file go with it.
    let dir = paths.state_dir().join(&session);
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let queue = dir.join("hook-queue.jsonl");
    let ran = probe::fire(shell, &line, &probe, &queue);
    let written = fs::read_to_string(&queue).unwrap_or_default();
    let _ = fs::remove_dir_all(&dir);
    probe::verdict(&ran, &written, &probe)
}

/// What `hooks status` says of `agent`'s version: which it is, and what it will not fire.
fn version_note(agent: Agent, asked: Option<&Asked>) -> Option<String> {
    let mut expected = agent.expected("cmstore");
    let said = agent_version::fit(&mut expected, Some(asked?)).unwrap_or_else(|| {
        format!(
            "{} {} fires every event cmstore writes",
            agent.profile().title,
            expected
                .for_version
                .map(|v| v.to_string())
                .unwrap_or_default()
        )
    });
    Some(format!("{}: {said}", agent.as_str()))
}

impl Row {
    /// The row of `agent`'s file at `path` in `location` before it is read: missing.
    fn missing(agent: Agent, location: &Location, path: &Path) -> Row {
        Row {
            agent: agent.as_str(),
            scope: location.scope(),
            file: path.display().to_string(),
            state: "missing",
            tokens: Vec::new(),
            current_token: format!("hooks-v{CURRENT_VERSION}"),
            agent_version: None,
            will_not_fire: Vec::new(),
            may_not_fire: Vec::new(),
            events: 0,
            events_current: 0,
            notes: Vec::new(),
        }
    }
}

fn status_row(agent: Agent, location: &Location, program: &[String], asked: Option<&Asked>) -> Row {
    let path = agent.config_path(location);
    let mut row = Row::missing(agent, location, &path);
    let mut expected = agent.expected_command(program);
    agent_version::fit(&mut expected, asked);
    row.agent_version = expected.for_version.map(|v| v.to_string());
    row.events = expected.events.len();
    let checked = read_existing(&path).and_then(|text| {
        let (doc, _) = parse(agent, text.as_deref(), &path)?;
        Ok((merge::status(&doc, &expected)?, doc))
    });
    match checked {
        Ok((st, doc)) => {
            row.state = st.state.name();
            row.tokens = st.versions.iter().map(|v| format!("hooks-v{v}")).collect();
            row.events_current = st.events_current;
            row.notes = st.notes;
            if st.state != State::Missing {
                row.will_not_fire = will_not_fire(agent, &path, &doc);
                match agent {
                    Agent::Codex => row
                        .will_not_fire
                        .extend(codex_review(location, &path, &doc)),
                    Agent::Vscode => {
                        let (off, notes) = vscode_review(location);
                        row.will_not_fire.extend(off);
                        row.may_not_fire.extend(notes);
                    }
                    Agent::Droid => row.will_not_fire.extend(droid_never_run(&doc)),
                    _ => {}
                }
            }
        }
        Err(err) => {
            row.state = "invalid";
            row.notes = vec![format!("{err:#}")];
        }
    }
    row
}

/// What must happen, once the file is written, before `agent` runs the hooks in it.
fn before_they_fire(agent: Agent, location: &Location) -> Option<String> {
    match (agent, location) {
        (Agent::Codex, _) => Some(
            "codex: Codex runs new or changed hooks only once you trust them (its hooks \
             review): `cmstore hooks doctor --agent codex` says which it will leave out and how \
             to trust them"
                .to_string(),
        ),
        (Agent::Qoder, Location::Project(_)) => Some(
            "qoder: Qoder runs a project's hooks only in a folder you trust (its `-p` and \
             other non-interactive runs trust it by themselves)"
                .to_string(),
        ),
        (Agent::Qwen, Location::Project(_)) => {
            Some("qwen: Qwen Code runs a project's hooks only in a folder you trust".to_string())
        }
        (Agent::Cursor, Location::Project(_)) => Some(
            "cursor: Cursor runs a project's hooks only in a workspace you trust; it also runs \
             Claude Code's hooks when its third-party hooks setting is on, so with cmstore \
             installed for Claude too its events are captured twice (docs/agents.md)"
                .to_string(),
        ),
        (Agent::Cursor, Location::User { .. }) => Some(
            "cursor: Cursor also runs Claude Code's hooks when its third-party hooks setting is \
             on, so with cmstore installed for Claude too its events are captured twice \
             (docs/agents.md)"
                .to_string(),
        ),
        (Agent::Windsurf, _) => Some(
            "windsurf: Cascade reads only the exit code: the gate refuses by exit 2, and no \
             context or budget warning reaches it (docs/agents.md)"
                .to_string(),
        ),
        (Agent::Goose, _) => Some(
            "goose: Goose reads only the exit code: no context or warning reaches it \
             (docs/agents.md)"
                .to_string(),
        ),
        (Agent::Kimi, _) => Some(
            "kimi: its answers and usage come from `cmstore import` of Kimi's logs \
             (docs/agents.md)"
                .to_string(),
        ),
        (Agent::Vscode, Location::User { .. }) => Some(
            "vscode: VS Code reads ~/.copilot/hooks only when its `chat.hookFilesLocations` \
             setting lists it: add \"~/.copilot/hooks\": true there (or install --agent claude \
             --user, whose file VS Code reads by default)"
                .to_string(),
        ),
        _ => None,
    }
}

/// Why the hooks in `doc`, `agent`'s file at `path`, will not run although installed: a
/// switch in the same settings (Gemini CLI, Qwen Code, Qoder), in the `config.toml` beside it
/// (Codex), or in the `settings.json` beside it and the organisation's (Droid).
fn will_not_fire(agent: Agent, path: &Path, doc: &Value) -> Vec<String> {
    match agent {
        Agent::Gemini => switches::gemini(doc, &handler_names(agent)),
        Agent::Qwen => switches::qwen(doc, &handler_names(agent)),
        Agent::Qoder => switches::qoder(doc),
        Agent::Droid => {
            let read = |file: &Path| {
                fs::read_to_string(file)
                    .ok()
                    .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            };
            let settings = path
                .parent()
                .and_then(|dir| read(&dir.join("settings.json")));
            let managed = read(Path::new(switches::DROID_MANAGED));
            switches::droid(doc, settings.as_ref(), managed.as_ref())
        }
        Agent::Codex => path
            .parent()
            .map(|dir| dir.join("config.toml"))
            .and_then(|config| fs::read_to_string(config).ok())
            .map(|text| switches::codex(&text))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// What Codex's hook review will leave out of its file at `path` (`doc`), by the user's
/// `config.toml`, where Codex keeps what was trusted.
fn codex_review(location: &Location, path: &Path, doc: &Value) -> Vec<String> {
    let user = match location {
        Location::User { .. } => location.clone(),
        Location::Project(_) => match user_location() {
            Ok(user) => user,
            Err(_) => return Vec::new(),
        },
    };
    let config = Agent::Codex
        .config_path(&user)
        .with_file_name("config.toml");
    let text = fs::read_to_string(&config).ok();
    let project = match location {
        Location::Project(dir) => Some(dir.as_path()),
        Location::User { .. } => None,
    };
    let marker = Agent::Codex.marker();
    let main_file;
    let (path, doc) = match codex_worktree_file(project, path) {
        None => (path, doc),
        Some(Ok(found)) => {
            main_file = found;
            (main_file.0.as_path(), &main_file.1)
        }
        Some(Err(why)) => return vec![why],
    };
    // Codex names a file by `CODEX_HOME` made canonical, else as it finds it.
    let moved = matches!(
        location,
        Location::User {
            codex_home: Some(_),
            ..
        }
    );
    let named = match path.parent().map(fs::canonicalize) {
        Some(Ok(dir)) if moved => dir.join(path.file_name().unwrap_or_default()),
        _ => path.to_path_buf(),
    };
    // Codex before 0.129 runs hooks unreviewed: only its project trust applies then.
    let reviews = match agent_version::ask(Agent::Codex) {
        Asked::Version(v) => v >= Version(0, 129, 0),
        Asked::Unknown(_) => true,
    };
    codex_trust::will_not_fire(&named, doc, &config, text.as_deref(), project, |h| {
        reviews && marker.version(h).is_some()
    })
}

/// In a linked worktree Codex runs the project hooks of the main checkout's same folder: that
/// file and its hooks when they are cmstore's, else why the hooks at `path` will not fire;
/// `None` outside a linked worktree.
fn codex_worktree_file(
    project: Option<&Path>,
    path: &Path,
) -> Option<Result<(PathBuf, Value), String>> {
    let main_file = project
        .and_then(codex_trust::worktree_hooks_folder)
        .map(|folder| folder.join(path.file_name().unwrap_or_default()))
        .filter(|main_file| main_file != path)?;
    let ours = read_existing(&main_file)
        .ok()
        .flatten()
        .and_then(|text| parse(Agent::Codex, Some(&text), &main_file).ok())
        .map(|(doc, _)| doc)
        .filter(|doc| {
            let events = doc.get("hooks").and_then(Value::as_object);
            events
                .into_iter()
                .flatten()
                .any(|(event, _)| merge::installed_handler(doc, Agent::Codex, event).is_some())
        });
    Some(match ours {
        Some(doc) => Ok((main_file, doc)),
        None => {
            let folder = main_file.parent().and_then(Path::parent).unwrap_or(path);
            Err(format!(
                "this folder is in a linked git worktree: Codex runs the project hooks of the \
                 main checkout's {} here, not this file's; `{}` puts them there",
                main_file.display(),
                install_command(Agent::Codex, &Location::Project(folder.to_path_buf()))
            ))
        }
    })
}

/// The hook folder VS Code knows cmstore's file at `location` by (a key of its
/// `chat.hookFilesLocations`).
fn vscode_folder(location: &Location) -> &'static str {
    match location {
        Location::Project(_) => ".github/hooks",
        Location::User { .. } => "~/.copilot/hooks",
    }
}

/// The settings files each VS Code build here reads for `location`: per build, its user
/// settings, then the project's `.vscode/settings.json` (whose keys win).
fn vscode_settings(location: &Location) -> Vec<Vec<vscode_settings::SettingsFile>> {
    let read = |path: PathBuf| {
        let text = fs::read_to_string(&path).ok()?;
        let doc = vscode_settings::parse(&text)?;
        Some(vscode_settings::SettingsFile { path, doc })
    };
    let home = match location {
        Location::User { home, .. } => Some(home.clone()),
        Location::Project(_) => crate::files::paths::user_home(),
    };
    let users: Vec<_> = home
        .map(|home| vscode_settings::user_settings_paths(&home, crate::support::env::path))
        .unwrap_or_default()
        .into_iter()
        .filter_map(read)
        .collect();
    let workspace = match location {
        Location::Project(dir) => read(dir.join(".vscode").join("settings.json")),
        Location::User { .. } => None,
    };
    if users.is_empty() {
        return vec![workspace.into_iter().collect()];
    }
    users
        .into_iter()
        .map(|user| std::iter::once(user).chain(workspace.clone()).collect())
        .collect()
}

/// Why VS Code will not run cmstore's hook file at `location`, by its settings: what keeps
/// every build here from running it (the first list), and what keeps only some of them,
/// naming the build (the second). A user with Stable and Insiders may use either; a
/// setting of the one they do not use breaks nothing.
fn vscode_review(location: &Location) -> (Vec<String>, Vec<String>) {
    let verdicts: Vec<(String, Vec<String>)> = vscode_settings(location)
        .into_iter()
        .map(|files| {
            let build = files
                .first()
                .and_then(|f| vscode_settings::build_of(&f.path))
                .unwrap_or_else(|| "VS Code".into());
            (
                build,
                vscode_settings::will_not_fire(&files, vscode_folder(location)),
            )
        })
        .collect();
    let mut off: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let every_build = verdicts.iter().all(|(_, why)| !why.is_empty());
    for (build, reasons) in &verdicts {
        for why in reasons {
            if every_build {
                if !off.contains(why) {
                    off.push(why.clone());
                }
            } else {
                notes.push(format!("{build} only: {why}"));
            }
        }
    }
    (off, notes)
}

/// The names cmstore's handlers carry in `agent`'s file, of every token version.
fn handler_names(agent: Agent) -> Vec<String> {
    let marker = agent.file().marker;
    (1..=CURRENT_VERSION).map(|v| marker.value(v)).collect()
}

/// VS Code and Copilot CLI both read every `*.json` in the same hooks directory, so with
/// both installed side by side each of their events is captured twice. The same words
/// whichever of the two `agent` is, so that it is said once.
fn overlap_note(agent: Agent, location: &Location) -> Option<String> {
    if !matches!(agent, Agent::Vscode | Agent::Copilot) {
        return None;
    }
    let mine = Agent::Vscode.config_path(location);
    let theirs = Agent::Copilot.config_path(location);
    (mine.exists() && theirs.exists()).then(|| {
        format!(
            "{} and {} are both in {}: VS Code and Copilot CLI each read both files, so their \
             events are captured twice; keep only one (see docs/hooks.md)",
            file_name(&mine),
            file_name(&theirs),
            mine.parent().unwrap_or(Path::new(".")).display()
        )
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn tokens(versions: &std::collections::BTreeSet<u32>) -> String {
    let names: Vec<String> = versions.iter().map(|v| format!("hooks-v{v}")).collect();
    names.join(",")
}

fn agents(args: &[Agent]) -> Vec<Agent> {
    let mut agents: Vec<Agent> = args.to_vec();
    agents.sort();
    agents.dedup();
    agents
}

fn exit(failed: bool) -> ExitCode {
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn location(scope: &ScopeArgs) -> anyhow::Result<Location> {
    if scope.user {
        user_location()
    } else {
        project_location(scope.project.as_deref())
    }
}

/// What `hooks status` checks: the one scope asked for, or the user's (when there is a home
/// directory) and the current directory's.
fn status_locations(scope: &StatusScope) -> anyhow::Result<Vec<Location>> {
    if scope.user {
        return Ok(vec![user_location()?]);
    }
    if scope.project.is_some() {
        return Ok(vec![project_location(scope.project.as_deref())?]);
    }
    let user = user_location().ok();
    Ok(user.into_iter().chain([project_location(None)?]).collect())
}

fn user_location() -> anyhow::Result<Location> {
    let home = crate::files::paths::user_home()
        .context("cannot find the user's home directory (HOME / USERPROFILE)")?;
    Ok(Location::User {
        home,
        claude_config_dir: crate::support::env::path("CLAUDE_CONFIG_DIR"),
        copilot_home: crate::support::env::path("COPILOT_HOME"),
        codex_home: crate::support::env::path("CODEX_HOME"),
        xdg_config_home: crate::support::env::path("XDG_CONFIG_HOME"),
        cline_dir: crate::support::env::path("CLINE_DIR"),
    })
}

/// `dir`, else the current directory, which must exist.
fn project_location(dir: Option<&Path>) -> anyhow::Result<Location> {
    let dir = match dir {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !dir.is_dir() {
        bail!("project directory {} does not exist", dir.display());
    }
    Ok(Location::Project(
        std::path::absolute(&dir).unwrap_or_else(|_| dir.clone()),
    ))
}

/// What the hooks run before `capture`: `--command`, else this binary's absolute path,
/// then `--home` and `--queue` as absolute paths when they were given.
/// The program the hooks run: `--command`; else, in a project's file (one meant to be
/// committed), the name `cmstore` when the PATH has one, never a path of this machine; else
/// this binary's absolute path. With what a person should know of the choice.
fn program_for(
    command: Option<&str>,
    location: &Location,
) -> anyhow::Result<(String, Option<String>)> {
    match command {
        Some(command) if command.trim().is_empty() => bail!("--command must not be empty"),
        Some(command) => return Ok((command.to_string(), None)),
        None => {}
    }
    let exe = std::env::current_exe().context("cannot find this cmstore binary; use --command")?;
    let absolute = utf8(&exe, "the path of this binary")?;
    if !matches!(location, Location::Project(_)) {
        return Ok((absolute, None));
    }
    let Some(found) = env::find_on_path(PATH_NAME) else {
        return Ok((
            absolute.clone(),
            Some(format!(
                "no {PATH_NAME} on the PATH: the project's hooks run {absolute}, a path of this \
                 machine; put {PATH_NAME} on the PATH and run this again before committing \
                 them (or pass --command)"
            )),
        ));
    };
    let same = |p: &Path| fs::canonicalize(p).ok();
    let note = (same(&found) != same(&exe)).then(|| {
        format!(
            "the project's hooks run {PATH_NAME} from the PATH, {}, not this binary ({absolute})",
            found.display()
        )
    });
    Ok((PATH_NAME.to_string(), note))
}

/// The name the hooks of a project's file run cmstore by.
const PATH_NAME: &str = "cmstore";

/// `program` and the global options the hooks must repeat (`--home`, `--queue`).
fn command_words(paths: &Paths, program: String) -> anyhow::Result<Vec<String>> {
    let mut words = vec![program];
    for (flag, path) in [
        ("--home", &paths.given.home),
        ("--queue", &paths.given.queue),
    ] {
        if let Some(path) = path {
            let path = std::path::absolute(path)
                .with_context(|| format!("cannot resolve {flag} {}", path.display()))?;
            words.push(flag.to_string());
            words.push(utf8(&path, flag)?);
        }
    }
    Ok(words)
}

fn utf8(path: &Path, what: &str) -> anyhow::Result<String> {
    path.to_str().map(str::to_string).with_context(|| {
        format!(
            "{what} is not UTF-8 ({}); hook files are JSON text",
            path.display()
        )
    })
}

/// The file's text, or `None` when it does not exist.
fn read_existing(path: &Path) -> anyhow::Result<Option<String>> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .with_context(|| format!("{} is not UTF-8; not touching it", path.display())),
        // A folder on the way that is a file (a project's `.clinerules` of rules): no file.
        Err(err)
            if matches!(
                err.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The parsed document, as the merge reads it ([`Wiring::nest_events`]), and its layout; a
/// missing or blank file is an empty object.
fn parse(agent: Agent, text: Option<&str>, path: &Path) -> anyhow::Result<(Value, Style)> {
    let Some(text) = text.filter(|t| !t.trim_start_matches('\u{feff}').trim().is_empty()) else {
        return Ok((
            agent.nest_events(Value::Object(Default::default())),
            Style::default(),
        ));
    };
    let body = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc = serde_json::from_str(body).with_context(|| {
        format!(
            "{} is not valid JSON; fix it or move it away (cmstore never overwrites a file \
             it cannot read)",
            path.display()
        )
    })?;
    Ok((agent.nest_events(doc), Style::detect(text)))
}

/// [`crate::files::paths::replace_file`] with `text`, and the path in the error.
fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    crate::files::paths::replace_file(path, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `notes` (`<event>: <what>`) with the events that share a `what` on one line, in the order
/// each `what` first appears: an outdated binary path is one line, not one per event. A
/// command's own `--event <name>` (camelCase hooks) reads `--event <event>` there.
fn grouped_notes(notes: &[String]) -> Vec<String> {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for note in notes {
        let Some((event, what)) = note.split_once(": ") else {
            groups.push((note.clone(), Vec::new()));
            continue;
        };
        let what = what.replace(&format!("--event {event}"), "--event <event>");
        match groups
            .iter_mut()
            .find(|(w, events)| *w == what && !events.is_empty())
        {
            Some((_, events)) => events.push(event),
            None => groups.push((what, vec![event])),
        }
    }
    groups
        .into_iter()
        .map(|(what, events)| match events.as_slice() {
            [] => what,
            events => format!("{}: {what}", events.join(", ")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_sharing_a_problem_are_one_line() {
        let notes: Vec<String> = [
            "SessionStart: runs another command (/old/cmstore capture)",
            "Stop: edited by hand",
            "PreToolUse: runs another command (/old/cmstore capture)",
            "a note without an event",
            "stop: runs another command (/old/cmstore capture --event stop)",
            "sessionStart: runs another command (/old/cmstore capture --event sessionStart)",
        ]
        .map(str::to_owned)
        .to_vec();
        assert_eq!(
            grouped_notes(&notes),
            [
                "SessionStart, PreToolUse: runs another command (/old/cmstore capture)",
                "Stop: edited by hand",
                "a note without an event",
                "stop, sessionStart: runs another command (/old/cmstore capture --event <event>)",
            ]
        );
    }
}
