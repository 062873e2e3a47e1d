//! Kimi Code's history: a record log per agent of each session,
//! `<home>/sessions/<workspace>/<session>/agents/<agent>/wire.jsonl` (`<home>`:
//! `$KIMI_CODE_HOME`, else `~/.kimi-code`; `main` is the session's own agent, `agent-N` a
//! subagent), with the session's `state.json` (its `cwd`) two folders up. Read for
//! `cmstore import`; the records become turns, calls and usage in
//! [`crate::model::transcript::kimi`].

use std::path::{Path, PathBuf};

/// Kimi Code's folder: `$KIMI_CODE_HOME`, else `~/.kimi-code`.
pub fn home(user_home: Option<&Path>) -> Option<PathBuf> {
    crate::support::env::path("KIMI_CODE_HOME").or_else(|| user_home.map(|h| h.join(".kimi-code")))
}

/// The session and whether the log is a subagent's, when `path` is named as a log of Kimi
/// Code's: `…/sessions/<workspace>/<session>/agents/<agent>/wire.jsonl`.
pub fn log_of(path: &Path) -> Option<(String, bool)> {
    let name = |p: &Path| p.file_name().and_then(|n| n.to_str()).map(str::to_owned);
    if name(path)? != "wire.jsonl" {
        return None;
    }
    let agent_dir = path.parent()?;
    let agents = agent_dir.parent()?;
    let session = agents.parent()?;
    let sessions = session.parent()?.parent()?;
    if name(agents)? != "agents" || name(sessions)? != "sessions" {
        return None;
    }
    Some((name(session)?, name(agent_dir)? != "main"))
}

/// The session's folder (`cwd` of its `state.json`) for the log at `path`.
pub fn cwd_of(path: &Path) -> Option<String> {
    let state = path.parent()?.parent()?.parent()?.join("state.json");
    let state: serde_json::Value = serde_json::from_slice(&std::fs::read(state).ok()?).ok()?;
    state["cwd"]
        .as_str()
        .filter(|cwd| !cwd.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kimi_logs_are_told_by_their_place() {
        let main =
            Path::new("/h/.kimi-code/sessions/wd_app_3775bc/session_5f86/agents/main/wire.jsonl");
        assert_eq!(log_of(main), Some(("session_5f86".to_string(), false)));
        let sub = Path::new(
            "/h/.kimi-code/sessions/wd_app_3775bc/session_5f86/agents/agent-0/wire.jsonl",
        );
        assert_eq!(log_of(sub), Some(("session_5f86".to_string(), true)));
        assert_eq!(log_of(Path::new("/h/.kimi/sessions/x/y/wire.jsonl")), None);
        assert_eq!(log_of(Path::new("/h/.claude/projects/p/s.jsonl")), None);
    }

    #[test]
    fn a_sessions_folder_is_its_states_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let session = dir.path().join("sessions/wd_app_1/session_1");
        std::fs::create_dir_all(session.join("agents/main")).unwrap();
        std::fs::write(
            session.join("state.json"),
            r#"{"id":"session_1","cwd":"/w/app"}"#,
        )
        .unwrap();
        let log = session.join("agents/main/wire.jsonl");
        assert_eq!(cwd_of(&log).as_deref(), Some("/w/app"));
    }
}
