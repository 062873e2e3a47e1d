//! A Codex tool call's exit code, read from the session's rollout
//! (`~/.codex/sessions/…/rollout-…-<session>.jsonl`).
//!
//! Codex 0.171's `PostToolUse` gives only the command's output as `tool_response` (`"failing\n"`
//! for `echo failing; exit 3`): no exit code at all. The rollout has it, and Codex has written
//! the call's line by the time the hook runs (seen in every run of the end-to-end suite): an
//! `event_msg` whose payload is `item_completed` with a `CommandExecution` item (`id` the call
//! id, `exit_code`). Older rollouts wrote `exec_command_end` (`call_id`, `exit_code`). A hook
//! must be fast, so only the rollout's last [`TAIL_BYTES`] are read; a call not found there
//! has no exit code, as before.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// How much of the rollout's end is read for a call's line: it is among the last few written.
pub const TAIL_BYTES: u64 = 1024 * 1024;

/// What is read first: the call's line is nearly always in the last few KiB, and a hook that
/// reads 1 MiB on every shell call of a long session pays for it each time.
const FIRST_TAIL_BYTES: u64 = 64 * 1024;

/// The exit code Codex's rollout at `path` records for the shell call `call_id`, from its
/// last 64 KiB, else its last `TAIL_BYTES` (1 MiB). `Ok(None)` when no line there names it
/// with one.
pub fn exit_code(path: &Path, call_id: &str) -> io::Result<Option<i64>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    match exit_code_in_tail(&mut file, len, FIRST_TAIL_BYTES, call_id)? {
        None if len > FIRST_TAIL_BYTES => exit_code_in_tail(&mut file, len, TAIL_BYTES, call_id),
        found => Ok(found),
    }
}

/// [`exit_code_in`] over the last `tail` bytes of `file` (`len` bytes long).
fn exit_code_in_tail(
    file: &mut File,
    len: u64,
    tail: u64,
    call_id: &str,
) -> io::Result<Option<i64>> {
    let start = len.saturating_sub(tail);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(tail).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    // Started mid-file: the first line is a piece of one.
    let text = match (start, text.find('\n')) {
        (0, _) => &text[..],
        (_, Some(end)) => &text[end + 1..],
        (_, None) => "",
    };
    Ok(exit_code_in(text, call_id))
}

/// The exit code of `call_id` in rollout lines `text`, the last line naming it winning. Lines
/// that do not mention the id are not parsed.
pub fn exit_code_in(text: &str, call_id: &str) -> Option<i64> {
    text.lines()
        .rev()
        .filter(|line| line.contains(call_id))
        .find_map(|line| line_exit_code(&serde_json::from_str(line).ok()?, call_id))
}

/// The exit code one rollout line gives `call_id`, if it is that call's end.
fn line_exit_code(line: &Value, call_id: &str) -> Option<i64> {
    if line["type"] != "event_msg" {
        return None;
    }
    let payload = &line["payload"];
    let (id, code) = match payload["type"].as_str()? {
        "item_completed" if payload["item"]["type"] == "CommandExecution" => {
            (&payload["item"]["id"], &payload["item"]["exit_code"])
        }
        "exec_command_end" => (&payload["call_id"], &payload["exit_code"]),
        _ => return None,
    };
    if id.as_str() != Some(call_id) {
        return None;
    }
    code.as_i64()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of a real Codex 0.171 rollout (tests/fixtures/payloads/codex-0.171-rollout.jsonl),
    /// recorded by the end-to-end suite.
    fn rollout() -> String {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/payloads/codex-0.171-rollout.jsonl"
        );
        std::fs::read_to_string(path).expect("the recorded rollout")
    }

    #[test]
    fn the_real_rollout_gives_each_calls_exit_code() {
        let text = rollout();
        assert_eq!(exit_code_in(&text, "call_0"), Some(0));
        assert_eq!(exit_code_in(&text, "call_1"), Some(3));
        // The call the gate denied never ran: no exit code.
        assert_eq!(exit_code_in(&text, "call_2"), None);
        assert_eq!(exit_code_in(&text, "call_9"), None);
    }

    #[test]
    fn only_the_calls_own_end_counts() {
        let printed = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"c1","exit_code":3}}}"#;
        assert_eq!(exit_code_in(printed, "c1"), None);
        let other = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"c2","exit_code":3,"aggregated_output":"c1"}}}"#;
        assert_eq!(exit_code_in(other, "c1"), None);
        let older = r#"{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"c1","exit_code":2}}"#;
        assert_eq!(exit_code_in(older, "c1"), Some(2));
        let running = r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"c1","exit_code":null}}}"#;
        assert_eq!(exit_code_in(running, "c1"), None);
    }

    #[test]
    fn a_long_rollout_is_read_from_its_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        let filler = format!("{}\n", "x".repeat(1000));
        let end = r#"{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"late","exit_code":7}}"#;
        let early = r#"{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"early","exit_code":5}}"#;
        let text = format!("{early}\n{}{end}\n", filler.repeat(2 * 1024));
        std::fs::write(&path, text).unwrap();
        assert_eq!(exit_code(&path, "late").unwrap(), Some(7));
        // Beyond the tail: not read, so no exit code (the hook stays fast).
        assert_eq!(exit_code(&path, "early").unwrap(), None);
        assert!(exit_code(&dir.path().join("absent"), "late").is_err());
    }

    #[test]
    fn a_call_past_the_first_64_kib_is_found_in_the_wider_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rollout.jsonl");
        let filler = format!("{}\n", "x".repeat(1000));
        let call = r#"{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"mid","exit_code":4}}"#;
        std::fs::write(&path, format!("{call}\n{}", filler.repeat(200))).unwrap();
        assert_eq!(exit_code(&path, "mid").unwrap(), Some(4));
    }
}
