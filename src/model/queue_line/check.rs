//! The `check` object of a `CheckResult` line: one post-edit or post-commit check's result
//! (docs/checks.md). No I/O.
//!
//! The ContextManager extension ignores hook types it does not know, so a `CheckResult` line
//! and its `check` field change nothing for it.

use serde::{Deserialize, Serialize};

/// How a check ended.
pub mod status {
    /// The command exited 0, or the built-in checks found nothing.
    pub const PASSED: &str = "passed";
    /// The command exited non-zero, or the built-in checks found something.
    pub const FAILED: &str = "failed";
    /// The command ran past its time limit and was killed.
    pub const TIMED_OUT: &str = "timed_out";
    /// The command could not be started (missing program, bad working directory).
    pub const ERROR: &str = "error";
}

/// One thing a check found, at a file and line. A secret is named by its rule, never by its
/// value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The rule: `unclosed-fence`, `heading-skip`, …, or a secret kind (`aws-key`).
    pub rule: String,
    /// The file, as the check saw it (relative to the repository for a commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// What is wrong, in a few words (never a secret's value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One check's result, as the `check` field of a `CheckResult` queue line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRecord {
    /// The check: `format`, `markdown` or `security`.
    pub name: String,
    /// `audit` (run detached from the hook) or `enforce` (run inside it).
    pub mode: String,
    /// [`status`]: `passed`, `failed`, `timed_out` or `error`.
    pub status: String,
    /// The command line run, when the check ran one (its `{files}` filled in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The files checked (the edited ones, or those the commit touched).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The command's exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Wall time of the check, in milliseconds.
    pub duration_ms: u64,
    /// The first lines of the command's output (stdout then stderr), secrets redacted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// What the check found, by file and line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The commit scanned (security check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Why the check could not run or was cut short (`error`, `timed_out`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// True when the result was sent back to the agent as feedback (enforce mode, failed).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub blocked: bool,
}

impl CheckRecord {
    /// True when the check ran and found a problem (not a time-out or a start failure).
    pub fn failed(&self) -> bool {
        self.status == status::FAILED
    }
}

/// The `check` object of a whole queue line, if it has a readable one.
pub fn from_line(line: &str) -> Option<CheckRecord> {
    #[derive(Deserialize)]
    struct Line {
        check: Option<CheckRecord>,
    }
    serde_json::from_str::<Line>(line).ok()?.check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_round_trips_through_a_line_and_omits_what_is_empty() {
        let record = CheckRecord {
            name: "security".into(),
            mode: "audit".into(),
            status: status::FAILED.into(),
            duration_ms: 12,
            findings: vec![Finding {
                rule: "aws-key".into(),
                file: Some("config.py".into()),
                line: Some(3),
                message: None,
            }],
            ..CheckRecord::default()
        };
        let line = serde_json::json!({"hookType": "CheckResult", "check": record}).to_string();
        assert!(!line.contains("exitCode"), "{line}");
        assert!(!line.contains("blocked"), "{line}");
        assert_eq!(from_line(&line), Some(record));
        assert_eq!(from_line(r#"{"hookType":"CheckResult"}"#), None);
        assert_eq!(from_line(r#"{"check":5}"#), None);
    }
}
