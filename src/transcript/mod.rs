//! Transcript readers (Claude Code, VS Code Copilot), per-session cursors, turn assembly.
//! TEMPORARY STUB: replaced by the real module on merge.
#![allow(missing_docs, unused_variables, dead_code)]
pub use crate::event::ToolCallRecord;
use std::path::{Path, PathBuf};
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Turn {
    pub turn_id: Option<String>,
    pub user: String,
    pub assistant: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub complete: bool,
}
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("io")]
    Io(#[from] std::io::Error),
}
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub start_offset: u64,
    pub end_offset: u64,
    pub bytes_read: u64,
}
pub struct Tracker;
impl Tracker {
    pub fn open(state_dir: &Path, key: &str, transcript: &Path) -> Result<Option<Tracker>, Error> {
        Ok(None)
    }
    pub fn harvest(&mut self) -> Result<Vec<Turn>, Error> {
        Ok(vec![])
    }
    pub fn finish_turn(&mut self) -> Result<(Vec<Turn>, Option<Turn>), Error> {
        Ok((vec![], None))
    }
    pub fn compact(&mut self) -> Result<Vec<Turn>, Error> {
        Ok(vec![])
    }
    pub fn stats(&self) -> ReadStats {
        ReadStats::default()
    }
    pub fn save(self) -> Result<(), Error> {
        Ok(())
    }
}
pub struct DiscoveryEnv {
    pub home: Option<PathBuf>,
    pub claude_config_dir: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub appdata: Option<PathBuf>,
}
impl DiscoveryEnv {
    pub fn from_env() -> Self {
        DiscoveryEnv {
            home: None,
            claude_config_dir: None,
            xdg_config_home: None,
            appdata: None,
        }
    }
}
pub fn discover(session_id: &str, env: &DiscoveryEnv) -> Option<PathBuf> {
    None
}
