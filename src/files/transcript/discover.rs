//! Finding a session's transcript when the hook payload gives no path.
//!
//! ContextManager searched only `%APPDATA%\Code\User\workspaceStorage` (Windows, VS Code
//! stable, seed bug A-B7). Here every platform's layout is checked, for Claude Code, for
//! VS Code stable and Insiders, and for Copilot CLI (whose SessionEnd names no transcript);
//! directories that do not exist are skipped. When several
//! candidates exist, the most recently modified one wins.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The environment [`discover`] looks in; a struct so that tests can point it at a tempdir.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoveryEnv {
    /// The user's home (`HOME`, else `USERPROFILE`).
    pub home: Option<PathBuf>,
    /// `CLAUDE_CONFIG_DIR`, which replaces `~/.claude`.
    pub claude_config_dir: Option<PathBuf>,
    /// `XDG_CONFIG_HOME`.
    pub xdg_config_home: Option<PathBuf>,
    /// `APPDATA` (Windows roaming profile).
    pub appdata: Option<PathBuf>,
    /// `COPILOT_HOME`, which replaces Copilot CLI's `~/.copilot`.
    pub copilot_home: Option<PathBuf>,
}

impl DiscoveryEnv {
    /// Reads `HOME`/`USERPROFILE`, `CLAUDE_CONFIG_DIR`, `XDG_CONFIG_HOME` and `APPDATA`;
    /// empty variables count as unset.
    pub fn from_env() -> Self {
        DiscoveryEnv {
            home: crate::files::paths::user_home(),
            claude_config_dir: crate::support::env::path("CLAUDE_CONFIG_DIR"),
            xdg_config_home: crate::support::env::path("XDG_CONFIG_HOME"),
            appdata: crate::support::env::path("APPDATA"),
            copilot_home: crate::support::env::path("COPILOT_HOME"),
        }
    }

    /// Copilot CLI's state dir: `COPILOT_HOME`, else `<home>/.copilot`.
    fn copilot_dir(&self) -> Option<PathBuf> {
        self.copilot_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".copilot")))
    }

    /// The folders of the Copilot event logs this environment has, those that exist:
    /// Copilot CLI's `<copilot dir>/session-state` and every VS Code workspace's
    /// `GitHub.copilot-chat/transcripts` (stable and Insiders).
    pub fn copilot_log_dirs(&self) -> Vec<PathBuf> {
        let cli = self.copilot_dir().map(|dir| dir.join("session-state"));
        let vscode = self.code_user_dirs().into_iter().flat_map(|user| {
            children(&user.join("workspaceStorage"))
                .map(|p| p.join("GitHub.copilot-chat").join("transcripts"))
                .collect::<Vec<_>>()
        });
        cli.into_iter()
            .chain(vscode)
            .filter(|dir| dir.is_dir())
            .collect()
    }

    /// Claude Code's config dir: `CLAUDE_CONFIG_DIR`, else `<home>/.claude`.
    pub fn claude_dir(&self) -> Option<PathBuf> {
        self.claude_config_dir
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".claude")))
    }

    /// Every VS Code `User` dir this environment could have, stable and Insiders.
    fn code_user_dirs(&self) -> Vec<PathBuf> {
        let mut config_roots = Vec::new();
        if let Some(home) = &self.home {
            config_roots.push(home.join(".config"));
            config_roots.push(home.join("Library").join("Application Support"));
            config_roots.push(home.join("AppData").join("Roaming"));
        }
        config_roots.extend(self.xdg_config_home.clone());
        config_roots.extend(self.appdata.clone());
        let mut dirs: Vec<PathBuf> = Vec::new();
        for root in config_roots {
            for product in ["Code", "Code - Insiders"] {
                let dir = root.join(product).join("User");
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
            }
        }
        dirs
    }
}

/// Finds the transcript of `session_id`: Claude Code `<claude dir>/projects/*/<id>.jsonl`,
/// VS Code `<Code/User>/workspaceStorage/*/GitHub.copilot-chat/transcripts/<id>.jsonl`, or
/// Copilot CLI `<copilot dir>/session-state/<id>/events.jsonl`.
///
/// Session ids holding path separators, `..` or other characters that could leave the
/// searched directories are rejected.
pub fn discover(session_id: &str, env: &DiscoveryEnv) -> Option<PathBuf> {
    if !is_safe_id(session_id) {
        return None;
    }
    let file_name = format!("{session_id}.jsonl");
    let mut candidates = Vec::new();
    if let Some(claude) = env.claude_dir() {
        candidates.extend(children(&claude.join("projects")).map(|p| p.join(&file_name)));
    }
    if let Some(copilot) = env.copilot_dir() {
        candidates.push(
            copilot
                .join("session-state")
                .join(session_id)
                .join("events.jsonl"),
        );
    }
    for user in env.code_user_dirs() {
        candidates.extend(children(&user.join("workspaceStorage")).map(|p| {
            p.join("GitHub.copilot-chat")
                .join("transcripts")
                .join(&file_name)
        }));
    }
    candidates
        .into_iter()
        .filter_map(|path| {
            let meta = fs::metadata(&path).ok().filter(|m| m.is_file())?;
            Some((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), path))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, path)| path)
}

fn is_safe_id(id: &str) -> bool {
    !id.is_empty()
        && !id.contains("..")
        && !id
            .chars()
            .any(|c| matches!(c, '/' | '\\' | ':' | '\0') || c.is_control())
}

/// Subdirectories of `dir`; nothing when it is missing or unreadable.
fn children(dir: &Path) -> impl Iterator<Item = PathBuf> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, b"{}\n").unwrap();
    }

    fn env_at(root: &Path) -> DiscoveryEnv {
        DiscoveryEnv {
            home: Some(root.join("home")),
            ..DiscoveryEnv::default()
        }
    }

    fn vscode_transcript(user_dir: &Path, id: &str) -> PathBuf {
        user_dir
            .join("workspaceStorage")
            .join("0a1b2c")
            .join("GitHub.copilot-chat")
            .join("transcripts")
            .join(format!("{id}.jsonl"))
    }

    #[test]
    fn finds_claude_code_transcripts_under_home_or_config_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let env = env_at(tmp.path());
        let path = tmp
            .path()
            .join("home/.claude/projects/-home-me-app/abc-123.jsonl");
        touch(&path);
        assert_eq!(discover("abc-123", &env), Some(path));
        assert_eq!(discover("other", &env), None);

        let config = tmp.path().join("claude-config");
        let moved = config.join("projects/-x/def.jsonl");
        touch(&moved);
        let env = DiscoveryEnv {
            claude_config_dir: Some(config),
            ..env
        };
        assert_eq!(discover("def", &env), Some(moved));
    }

    #[test]
    fn finds_vscode_transcripts_on_linux_macos_and_windows() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let layouts = [
            ("linux", home.join(".config/Code/User"), env_at(tmp.path())),
            (
                "insiders",
                home.join(".config/Code - Insiders/User"),
                env_at(tmp.path()),
            ),
            (
                "macos",
                home.join("Library/Application Support/Code/User"),
                env_at(tmp.path()),
            ),
            (
                "win-home",
                home.join("AppData/Roaming/Code/User"),
                env_at(tmp.path()),
            ),
            (
                "xdg",
                tmp.path().join("xdg/Code/User"),
                DiscoveryEnv {
                    xdg_config_home: Some(tmp.path().join("xdg")),
                    ..DiscoveryEnv::default()
                },
            ),
            (
                "appdata",
                tmp.path().join("appdata/Code - Insiders/User"),
                DiscoveryEnv {
                    appdata: Some(tmp.path().join("appdata")),
                    ..DiscoveryEnv::default()
                },
            ),
        ];
        for (id, user_dir, env) in layouts {
            let path = vscode_transcript(&user_dir, id);
            touch(&path);
            assert_eq!(discover(id, &env), Some(path), "{id}");
        }
    }

    /// Copilot CLI 1.0.102's SessionEnd names no transcript (seen in the end-to-end suite).
    #[test]
    fn finds_copilot_cli_session_state() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp
            .path()
            .join("home/.copilot/session-state/7cead6db-1886/events.jsonl");
        touch(&path);
        assert_eq!(discover("7cead6db-1886", &env_at(tmp.path())), Some(path));
        let moved = tmp.path().join("ch/session-state/s2/events.jsonl");
        touch(&moved);
        let env = DiscoveryEnv {
            copilot_home: Some(tmp.path().join("ch")),
            ..env_at(tmp.path())
        };
        assert_eq!(discover("s2", &env), Some(moved));
        assert_eq!(
            discover("7cead6db-1886", &env),
            None,
            "COPILOT_HOME replaces ~/.copilot"
        );
    }

    #[test]
    fn missing_dirs_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let env = DiscoveryEnv {
            home: Some(tmp.path().join("nowhere")),
            claude_config_dir: Some(tmp.path().join("none")),
            xdg_config_home: Some(tmp.path().join("nothing")),
            appdata: None,
            copilot_home: Some(tmp.path().join("no-copilot")),
        };
        assert_eq!(discover("abc", &env), None);
        assert_eq!(discover("abc", &DiscoveryEnv::default()), None);
    }

    #[test]
    fn unsafe_session_ids_are_rejected() {
        let tmp = tempfile::tempdir().unwrap();
        let env = env_at(tmp.path());
        touch(&tmp.path().join("home/.claude/projects/p/x.jsonl"));
        touch(&tmp.path().join("home/.claude/x.jsonl"));
        assert_eq!(
            discover("x", &env),
            Some(tmp.path().join("home/.claude/projects/p/x.jsonl"))
        );
        for bad in ["", "../x", "..", "p/x", "p\\x", "C:x", "a\0b"] {
            assert_eq!(discover(bad, &env), None, "{bad:?}");
        }
    }
}
