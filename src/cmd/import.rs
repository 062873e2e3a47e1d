//! `cmstore import`: existing transcripts into the store (their usage, and their sessions'
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
use crate::files::transcript::history::history_roots;
use crate::store;
use crate::write::import;

/// Arguments of `cmstore import`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Args {
    /// Transcripts (.jsonl, Gemini CLI's .json chats), agents' stores or folders to read
    /// [default: Claude Code's projects folder (`$CLAUDE_CONFIG_DIR/projects` or
    /// `~/.claude/projects`), Gemini CLI's `~/.gemini/tmp`, Codex's sessions (`$CODEX_HOME/sessions`
    /// or `~/.codex/sessions`), Copilot CLI's `session-state` (`$COPILOT_HOME` or `~/.copilot`),
    /// VS Code Copilot Chat's `workspaceStorage/*/GitHub.copilot-chat/transcripts`, Qwen Code's
    /// `projects` (`$QWEN_RUNTIME_DIR`, `$QWEN_HOME` or `~/.qwen`), Qoder CLI's `~/.qoder/projects`,
    /// Droid's `~/.factory/sessions`, OpenCode's and Kilo's stores
    /// (`~/.local/share/{opencode/opencode,kilo/kilo}.db`), Goose's
    /// (`~/.local/share/goose/sessions/sessions.db`), Kimi Code's `~/.kimi-code/sessions` and
    /// Cline's `~/.cline/data/sessions`, those that exist]
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Read every file again, also those unchanged since an import read them (by default such
    /// a file costs a look at its size and time, not a read)
    #[arg(long)]
    pub again: bool,
}

/// Runs `cmstore import`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let roots = if args.paths.is_empty() {
        let roots = history_roots();
        if roots.is_empty() {
            eprintln!(
                "cmstore import: no Claude Code, Gemini CLI, Codex, Copilot, Qwen Code, Qoder, \
                 Droid, OpenCode, Kilo, Goose, Kimi Code or Cline history found: nothing to \
                 import"
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
    let archive = paths.archive_dir();
    let options = import::Options {
        config: &config,
        again: args.again,
        archive: config.archive_transcripts.then_some(archive.as_path()),
    };
    let stats = import::import(&store, &files, &options, |bytes| {
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
    if stats.unchanged > 0 {
        eprintln!(
            "cmstore import: passed over {} file(s) unchanged since last read (`--again` \
             reads them)",
            stats.unchanged
        );
    }
    if stats.archived > 0 {
        eprintln!(
            "cmstore import: kept {} transcript copy(ies) in {}",
            stats.archived,
            archive.display()
        );
    }
    if !stats.not_archived.is_empty() {
        eprintln!(
            "cmstore import: could not copy {} file(s) into the archive {} (they were imported):",
            stats.not_archived.len(),
            archive.display()
        );
        for why in &stats.not_archived {
            eprintln!("  {why}");
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
