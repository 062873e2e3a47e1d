//! Where each agent keeps its history: the folders and files `cmstore import` reads when it
//! is given none, and a following `cmstore ingest` watches (docs/usage.md).

use std::path::PathBuf;

use super::DiscoveryEnv;

/// The agents' standard locations that exist: Claude Code's projects, Gemini CLI's chats
/// (under `~/.gemini/tmp`), Codex's rollouts, Copilot CLI's session state, VS Code Copilot
/// Chat's transcripts, Qwen Code's chats (under its `projects`), Qoder CLI's projects, Droid's
/// sessions, Kimi Code's sessions and OpenCode's, Kilo's and Goose's stores.
pub fn history_roots() -> Vec<PathBuf> {
    let env = DiscoveryEnv::from_env();
    let codex = crate::support::env::path("CODEX_HOME")
        .or_else(|| env.home.as_ref().map(|h| h.join(".codex")));
    [
        env.claude_dir().map(|dir| dir.join("projects")),
        env.home.as_ref().map(|h| h.join(".gemini").join("tmp")),
        codex.map(|dir| dir.join("sessions")),
        qwen_runtime_dir().map(|dir| dir.join("projects")),
        qoder_dir(env.home.as_deref()).map(|dir| dir.join("projects")),
        env.home
            .as_ref()
            .map(|h| h.join(".factory").join("sessions")),
        super::kimi::home(env.home.as_deref()).map(|dir| dir.join("sessions")),
    ]
    .into_iter()
    .flatten()
    .chain(cline_sessions(env.home.as_deref()))
    .filter(|dir| dir.is_dir())
    .chain(opencode_store(env.home.as_deref()).filter(|file| file.is_file()))
    .chain(kilo_store(env.home.as_deref()).filter(|file| file.is_file()))
    .chain(super::goose::store(env.home.as_deref()).filter(|file| file.is_file()))
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

/// Qoder CLI's folder: `$QODER_CONFIG_DIR`, else `~/.qoder`.
fn qoder_dir(home: Option<&std::path::Path>) -> Option<PathBuf> {
    crate::support::env::path("QODER_CONFIG_DIR").or_else(|| home.map(|h| h.join(".qoder")))
}

/// True when `path` is in Qoder CLI's folder (a `.qoder` folder, or `$QODER_CONFIG_DIR`): its
/// transcripts are Claude Code's lines, the agent Qoder.
pub fn is_qoders(path: &std::path::Path) -> bool {
    path.ancestors()
        .any(|dir| dir.file_name().is_some_and(|n| n == ".qoder"))
        || crate::support::env::path("QODER_CONFIG_DIR").is_some_and(|dir| path.starts_with(dir))
}

/// Kilo's store: `kilo.db` in `$XDG_DATA_HOME/kilo`, else in `~/.local/share/kilo`.
fn kilo_store(home: Option<&std::path::Path>) -> Option<PathBuf> {
    let data = crate::support::env::path("XDG_DATA_HOME")
        .or_else(|| home.map(|h| h.join(".local").join("share")))?;
    Some(data.join("kilo").join("kilo.db"))
}

/// Where Qwen Code keeps its chats, as it chooses: `$QWEN_RUNTIME_DIR`, else `$QWEN_HOME`,
/// else `~/.qwen`.
fn qwen_runtime_dir() -> Option<PathBuf> {
    let env = crate::support::env::path;
    env("QWEN_RUNTIME_DIR")
        .or_else(|| env("QWEN_HOME"))
        .or_else(|| DiscoveryEnv::from_env().home.map(|h| h.join(".qwen")))
}
