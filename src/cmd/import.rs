//! `cmstore import`: existing transcripts into the store (their usage; a Claude Code session's
//! turns and tool calls), idempotently (run twice, same rows), streaming, with a progress bar
//! on a terminal. The work is in
//! [`crate::write::import`].

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use crate::config::Config;
use crate::files::paths::Paths;
use crate::files::transcript::DiscoveryEnv;
use crate::store;
use crate::write::import;

/// Arguments of `cmstore import`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Transcripts (.jsonl, Gemini CLI's .json chats) or folders to read [default: Claude Code's projects folder
    /// (`$CLAUDE_CONFIG_DIR/projects` or `~/.claude/projects`), Gemini CLI's `~/.gemini/tmp`,
    /// Codex's sessions (`$CODEX_HOME/sessions` or `~/.codex/sessions`), Copilot CLI's
    /// `session-state` (`$COPILOT_HOME` or `~/.copilot`), VS Code Copilot Chat's
    /// `workspaceStorage/*/GitHub.copilot-chat/transcripts`, Qwen Code's `projects`
    /// (`$QWEN_RUNTIME_DIR`, `$QWEN_HOME` or `~/.qwen`), Droid's `~/.factory/sessions`,
    /// OpenCode's store (`~/.local/share/opencode/opencode.db`) and Cline's
    /// `~/.cline/data/sessions`, those that exist]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
}

/// Runs `cmstore import`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let roots = if args.paths.is_empty() {
        let roots = default_roots();
        if roots.is_empty() {
            eprintln!(
                "cmstore import: no Claude Code, Gemini CLI, Codex, Copilot, Qwen Code, Droid, \
                 OpenCode or Cline history found: nothing to import"
            );
            return Ok(ExitCode::SUCCESS);
        }
        roots
    } else {
        args.paths
    };
    let found = import::find_transcripts(&roots)?;
    let total: u64 = found.iter().map(|(_, len)| len).sum();
    let files: Vec<PathBuf> = found.into_iter().map(|(path, _)| path).collect();
    let store = store::open(&paths.db)
        .with_context(|| format!("cannot open database {}", paths.db.display()))?;
    let started = Instant::now();
    let bar = progress_bar(total);
    let (config, _) = Config::load_for(paths);
    let stats = import::import(&store, &files, &config, |bytes| {
        if let Some(bar) = &bar {
            bar.set_position(bytes);
        }
    })
    // A store it cannot write (read-only file or folder, full disk) is named, not left to a
    // bare SQLite message.
    .with_context(|| format!("cannot import into {}", paths.db.display()))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    // After the import: the models it brought in get their rows (docs/usage.md, "Cost").
    store::usage::sync_store_prices(&store, &config.prices)
        .with_context(|| format!("cannot update the price table in {}", paths.db.display()))?;
    // The last connection removes the WAL; waited for here, not left to the process's exit.
    store.close();
    if stats.hook_payload_files > 0 {
        eprintln!(
            "cmstore import: passed over {} file(s) of hook payloads, not transcripts",
            stats.hook_payload_files
        );
    }
    if stats.not_chats > 0 {
        eprintln!(
            "cmstore import: passed over {} .json file(s) named like Gemini CLI chats that hold none",
            stats.not_chats
        );
    }
    if !stats.checked.is_empty() {
        let sessions: u64 = stats.checked.values().sum();
        let agents: Vec<String> = stats
            .checked
            .iter()
            .map(|(agent, n)| format!("{agent} {n}"))
            .collect();
        let checked = format!(
            "cmstore import: {sessions} session(s) checked against the agent's own totals ({})",
            agents.join(", ")
        );
        match stats.differing.as_slice() {
            [] => eprintln!("{checked}: equal"),
            differing => {
                eprintln!("{checked}; these differ (the responses are what is stored):");
                for line in differing {
                    eprintln!("  {line}");
                }
            }
        }
    }
    if stats.turns_pruned > 0 {
        eprintln!(
            "cmstore import: left out {} turn(s) older than what prune deleted",
            stats.turns_pruned
        );
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "cmstore import: {} transcript(s), {:.1} MB in {:.2} s ({:.0} MB/s): {} usage record(s) \
         read, {} new response row(s), {} in all{}{}",
        stats.files,
        stats.bytes as f64 / 1e6,
        secs,
        if secs > 0.0 {
            stats.bytes as f64 / 1e6 / secs
        } else {
            0.0
        },
        stats.records,
        stats.rows_after - stats.rows_before,
        stats.rows_after,
        match stats.turns {
            0 => String::new(),
            n => format!(
                "; {n} turn(s) read, {} new turn row(s)",
                stats.turn_rows_after - stats.turn_rows_before
            ),
        },
        match stats.too_long {
            0 => String::new(),
            n => format!(
                "; {n} line(s) over {} MB passed over",
                import::MAX_LINE_BYTES >> 20
            ),
        }
    );
    Ok(ExitCode::SUCCESS)
}

/// The agents' standard locations that exist: Claude Code's projects, Gemini CLI's chats
/// (under `~/.gemini/tmp`), Codex's rollouts, Copilot CLI's session state, VS Code Copilot
/// Chat's transcripts, Qwen Code's chats (under its `projects`), Droid's sessions and
/// OpenCode's store.
fn default_roots() -> Vec<PathBuf> {
    let env = DiscoveryEnv::from_env();
    let codex = crate::support::env::path("CODEX_HOME")
        .or_else(|| env.home.as_ref().map(|h| h.join(".codex")));
    [
        env.claude_dir().map(|dir| dir.join("projects")),
        env.home.as_ref().map(|h| h.join(".gemini").join("tmp")),
        codex.map(|dir| dir.join("sessions")),
        qwen_runtime_dir().map(|dir| dir.join("projects")),
        env.home
            .as_ref()
            .map(|h| h.join(".factory").join("sessions")),
    ]
    .into_iter()
    .flatten()
    .chain(cline_sessions(env.home.as_deref()))
    .filter(|dir| dir.is_dir())
    .chain(opencode_store(env.home.as_deref()).filter(|file| file.is_file()))
    .chain(env.copilot_log_dirs())
    .collect()
}

/// Cline's sessions: `$CLINE_DATA_DIR/sessions`, else `$CLINE_DIR/data/sessions` or
/// `~/.cline/data/sessions`.
fn cline_sessions(home: Option<&std::path::Path>) -> Option<PathBuf> {
    let env = crate::support::env::path;
    crate::files::transcript::cline::data_dir(
        env("CLINE_DATA_DIR"),
        env("CLINE_DIR"),
        home.map(std::path::Path::to_path_buf),
    )
    .map(|data| data.join("sessions"))
}

/// OpenCode's store: `opencode.db` in `$XDG_DATA_HOME/opencode`, else in
/// `~/.local/share/opencode` (the file itself: the folder beside it holds OpenCode's snapshot
/// repositories, not to be walked).
fn opencode_store(home: Option<&std::path::Path>) -> Option<PathBuf> {
    let data = crate::support::env::path("XDG_DATA_HOME")
        .or_else(|| home.map(|h| h.join(".local").join("share")))?;
    Some(data.join("opencode").join("opencode.db"))
}

/// Where Qwen Code keeps its chats, as it chooses: `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`,
/// else `~/.qwen`.
fn qwen_runtime_dir() -> Option<PathBuf> {
    let env = crate::support::env::path;
    env("QWEN_RUNTIME_DIR")
        .or_else(|| env("QWEN_HOME"))
        .or_else(|| DiscoveryEnv::from_env().home.map(|h| h.join(".qwen")))
}

fn progress_bar(total: u64) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} import [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    Some(bar)
}
