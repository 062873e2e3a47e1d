//! The tool calls a transcript shows, into `transcript_items` (coverage: what the hooks
//! missed; `show` brings back the calls no hook recorded): each call once whatever the number
//! of lines or imports that show it, with its input as `tool_calls.input` keeps a hook's
//! (redacted as capture redacts it) and, once its result is read, when it ended and how.

use std::collections::HashMap;

use rusqlite::{params, Connection, TransactionBehavior};

use super::Error;
use crate::model::queue_line::tool_input;
use crate::model::redact::Redactor;
use crate::model::transcript::items::{ToolCallItem, ToolResultItem};

/// A call the transcript shows, with its end (?8, ?9) when its result is read beside it; its
/// input kept only when none is yet (a call first imported before inputs were kept gets
/// one), its end kept when none is read.
const NOTE_CALL: &str = "
    INSERT INTO transcript_items(session_id, kind, item_id, agent, ts, name, sidechain, input,
      end_ts, outcome)
    VALUES (?1, 'tool_call', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
    ON CONFLICT(session_id, kind, item_id) DO UPDATE SET input = coalesce(input, excluded.input),
      end_ts = coalesce(excluded.end_ts, end_ts), outcome = coalesce(excluded.outcome, outcome)";

/// The result of call ?2 of session ?1: when it came (?3) and how the call ended (?4).
const NOTE_RESULT: &str = "
    UPDATE transcript_items SET end_ts = ?3, outcome = ?4
    WHERE session_id = ?1 AND kind = 'tool_call' AND item_id = ?2";

/// Writes `calls` and `results` in one short transaction, each in the session its line names,
/// else `fallback`; the calls attributed to `agent`.
pub fn write(
    conn: &mut Connection,
    (calls, results): (Vec<ToolCallItem>, Vec<ToolResultItem>),
    redactor: &Redactor,
    (agent, fallback): (&str, &Option<String>),
) -> Result<(), Error> {
    if calls.is_empty() && results.is_empty() {
        return Ok(());
    }
    let session_of = |named| session_of(named, fallback);
    // A result read in the same batch as its call (most are) ends it in the call's own row:
    // one statement for both.
    let mut ends: HashMap<(&str, &str), &ToolResultItem> = results
        .iter()
        .filter_map(|r| Some(((session_of(&r.session_id)?, r.id.as_str()), r)))
        .collect();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // What prune deleted stays deleted, as the turns.
    let pruned_before = super::turns::pruned_before(&tx)?;
    {
        let mut note = tx.prepare_cached(NOTE_CALL)?;
        for call in &calls {
            let Some(session) = session_of(&call.session_id) else {
                continue;
            };
            if call.ts.is_some_and(|ts| ts < pruned_before) {
                continue;
            }
            let input = call
                .input
                .as_deref()
                .and_then(|raw| kept_input(raw, redactor));
            let end = ends.remove(&(session, call.id.as_str()));
            note.execute(params![
                session,
                call.id,
                agent,
                call.ts,
                call.name,
                call.sidechain,
                input,
                end.and_then(|r| r.ts),
                end.map(outcome),
            ])?;
        }
        let mut ended = tx.prepare_cached(NOTE_RESULT)?;
        for ((session, id), result) in ends {
            ended.execute(params![session, id, result.ts, outcome(result)])?;
        }
    }
    tx.commit()?;
    Ok(())
}

/// The session an item's line names, else the file's.
fn session_of<'s>(named: &'s Option<String>, fallback: &'s Option<String>) -> Option<&'s str> {
    named.as_deref().or(fallback.as_deref())
}

/// How a call ended, as its result says.
fn outcome(result: &ToolResultItem) -> &'static str {
    if result.failed {
        "failed"
    } else {
        "succeeded"
    }
}

/// A call's input (JSON text) as `tool_calls.input` keeps a hook's: each of its strings
/// redacted, decoded (a secret after an escaped newline is a secret), as capture redacts a
/// tool input; then the story's text of it, cut.
fn kept_input(raw: &str, redactor: &Redactor) -> Option<String> {
    let redacted = redactor.redact_json_text(raw);
    tool_input::story_text(&redacted).map(tool_input::stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_is_redacted_whole_before_it_is_cut() {
        let redactor = Redactor::new(&[]);
        let secret = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let raw = format!(r#"{{"command":"curl -H 'Authorization: token {secret}' x"}}"#);
        let kept = kept_input(&raw, &redactor).unwrap();
        assert!(!kept.contains(secret), "{kept}");
        assert!(kept.starts_with("curl -H"), "{kept}");
        // After an escaped newline, as a heredoc writes it: still found.
        let heredoc =
            format!(r#"{{"command":"gh auth login --with-token <<'EOF'\n{secret}\nEOF"}}"#);
        let kept = kept_input(&heredoc, &redactor).unwrap();
        assert!(!kept.contains(secret), "{kept}");
        // A configured pattern never eats the JSON around a string.
        let greedy = Redactor::new(&[r"corp-\S+".to_owned()]);
        let kept = kept_input(r#"{"command":"login corp-1234"}"#, &greedy).unwrap();
        assert!(
            kept.starts_with("login ") && !kept.contains("1234"),
            "{kept}"
        );
        let long = format!(r#"{{"file_path":"/{}"}}"#, "a".repeat(400));
        let kept = kept_input(&long, &redactor).unwrap();
        assert!(tool_input::is_cut(&kept), "{kept}");
        assert_eq!(kept_input("17", &redactor), None);
    }
}
