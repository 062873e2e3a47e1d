//! Shared test set-up: every test gets its own home directory, never the user's.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// A private cmstore home (and user home) in a temporary directory.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        TestEnv {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The cmstore home (`CMSTORE_HOME`).
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("cmhome")
    }

    /// The fake user home (`HOME`), where transcripts are discovered.
    pub fn user_home(&self) -> PathBuf {
        self.dir.path().join("user")
    }

    pub fn queue(&self) -> PathBuf {
        self.home().join("hook-queue.jsonl")
    }

    /// `cmstore` with this environment's homes and no inherited `CMSTORE_*` settings.
    pub fn cmd(&self) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::new(bin());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("CMSTORE_") {
                cmd.env_remove(&key);
            }
        }
        for key in [
            "APPDATA",
            "XDG_CONFIG_HOME",
            "CLAUDE_CONFIG_DIR",
            "USERPROFILE",
            "COPILOT_HOME",
        ] {
            cmd.env_remove(key);
        }
        cmd.env("CMSTORE_HOME", self.home());
        cmd.env("HOME", self.user_home());
        cmd
    }

    /// Every queue line, parsed.
    pub fn queue_lines(&self) -> Vec<Value> {
        read_lines(&self.queue())
    }
}

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cmstore"))
}

/// Parses every line of a JSONL file, failing the test on any line that does not parse.
pub fn read_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

/// Our own payload fixture from `tests/fixtures/payloads`.
pub fn payload(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/payloads")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The shared real fixtures (`../shared/fixtures/real`), or `None` with a printed note.
pub fn real_fixtures() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "note: {} is absent; real-fixture test skipped",
            dir.display()
        );
        None
    }
}

/// Parses stdout as exactly one JSON object (what every agent requires).
pub fn one_json_object(stdout: &[u8]) -> Value {
    let text = std::str::from_utf8(stdout).expect("stdout is UTF-8");
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = stream
        .next()
        .expect("stdout holds a JSON value")
        .expect("stdout parses");
    assert!(
        stream.next().is_none(),
        "stdout holds more than one JSON value: {text:?}"
    );
    assert!(first.is_object(), "stdout is not an object: {text:?}");
    first
}
