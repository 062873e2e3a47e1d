//! A tool call's outcome read from the agent's own signal in its PostToolUse payload: the
//! structured result, or the exit code the agent writes into the result text in its own fixed
//! format. No guessing from the command's output: a successful command that prints "exit code 3"
//! is a success. What each agent gives, and what stays unknown, is in docs/agents.md.

use serde_json::Value;

use super::Agent;

/// What a PostToolUse result says about the call, beyond "it ran".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolOutcome {
    /// The command's exit code, when the result reports one.
    pub exit_code: Option<i64>,
    /// True when the agent's signal says the call failed: an exit code other than 0, or a
    /// result that carries an error (Gemini CLI's `error`).
    pub failed: bool,
}

/// Reads the outcome of `result` (the payload's `tool_response` / `toolResult`), as `agent`
/// writes it.
pub fn read(agent: Agent, result: &Value) -> ToolOutcome {
    let exit_code = structured_exit_code(result).or_else(|| match agent {
        Agent::Copilot => copilot_text(result).and_then(copilot_exit_code),
        Agent::Gemini => gemini_exit_code(result),
        Agent::Codex => codex_text(result).and_then(|t| codex_exit_code(&t)),
        Agent::Droid => result.as_str().and_then(droid_exit_code),
        Agent::Opencode | Agent::Kilo => super::opencode::exit_code(result),
        _ => None,
    });
    let errored = agent == Agent::Gemini && result.get("error").is_some_and(|e| !e.is_null());
    ToolOutcome {
        exit_code,
        failed: errored || exit_code.is_some_and(|c| c != 0),
    }
}

/// The exit code an agent writes on the last line of a text after `prefix` (Kiro's IDE
/// `Exit Code: N`, Kimi Code's `Command failed with exit code: N.`), a final period aside.
pub fn last_line_exit_code(text: &str, prefix: &str) -> Option<i64> {
    text.trim_end()
        .lines()
        .last()?
        .strip_prefix(prefix)?
        .trim_end_matches('.')
        .trim()
        .parse()
        .ok()
}

/// A numeric exit code in the result object itself (`exit_code`, `exitCode`), or in its
/// `metadata` (Codex's JSON shell output `{output, metadata: {exit_code}}`), also when the
/// result is that JSON as a string.
fn structured_exit_code(result: &Value) -> Option<i64> {
    let object = match result {
        Value::String(s) if s.trim_start().starts_with('{') => serde_json::from_str(s).ok()?,
        Value::Object(_) => result.clone(),
        _ => return None,
    };
    let field = |v: &Value| {
        ["exit_code", "exitCode"]
            .iter()
            .find_map(|k| v.get(*k).and_then(Value::as_i64))
    };
    field(&object).or_else(|| object.get("metadata").and_then(field))
}

/// Copilot CLI's result text (`textResultForLlm`), or the result when it is a plain string.
fn copilot_text(result: &Value) -> Option<&str> {
    match result {
        Value::String(s) => Some(s),
        Value::Object(m) => ["textResultForLlm", "text_result_for_llm"]
            .iter()
            .find_map(|k| m.get(*k).and_then(Value::as_str)),
        _ => None,
    }
}

/// Copilot CLI ends a shell tool's result with a line of its own, `<exited with exit code N>`,
/// or since 1.0.x `<shellId: ID completed with exit code N>` (seen with 1.0.102 in the
/// end-to-end suite): only that last line counts, never the same words earlier in the output.
fn copilot_exit_code(text: &str) -> Option<i64> {
    let last = text.trim_end().lines().next_back()?.trim();
    let inner = last.strip_prefix('<')?.strip_suffix('>')?;
    let code = match inner.strip_prefix("shellId: ") {
        Some(rest) => rest.split_once(" completed with exit code ")?.1,
        None => inner.strip_prefix("exited with exit code ")?,
    };
    code.trim().parse().ok()
}

/// Gemini CLI's shell result: `llmContent` is `Output: <output>` followed by lines of its own
/// (`Error: …`, `Exit Code: N` when it is not 0, `Signal: …`, `Process Group PGID: …`), and
/// `returnDisplay` is the output alone (or a message when there was none). Only the lines
/// after the output are read, so an output that prints "Exit Code: 3" is not taken for one.
/// Without those two fields in that shape (debug mode, a summarized output, another tool) there
/// is no exit code to read.
///
/// Gemini CLI 0.61 wraps `llmContent` in `<untrusted_context>` … `</untrusted_context>` lines
/// (seen in the end-to-end suite); the wrapper is taken off first.
fn gemini_exit_code(result: &Value) -> Option<i64> {
    let content = result.get("llmContent")?.as_str()?;
    let content = unwrap_untrusted_context(content);
    let display = result
        .get("returnDisplay")
        .and_then(Value::as_str)
        .unwrap_or("");
    let rest = content.strip_prefix("Output: ")?;
    let trailer = if !display.is_empty() && rest.starts_with(display) {
        &rest[display.len()..]
    } else {
        rest.strip_prefix("(empty)")?
    };
    if !trailer.is_empty() && !trailer.starts_with('\n') {
        return None;
    }
    trailer
        .lines()
        .find_map(|l| l.strip_prefix("Exit Code: "))
        .and_then(|n| n.trim().parse().ok())
}

/// `text` without the `<untrusted_context>` lines Gemini CLI puts around a tool's result,
/// when both are there.
fn unwrap_untrusted_context(text: &str) -> &str {
    text.strip_prefix("<untrusted_context>\n")
        .and_then(|inner| {
            inner
                .strip_suffix("\n</untrusted_context>")
                .or_else(|| inner.strip_suffix("\n</untrusted_context>\n"))
        })
        .unwrap_or(text)
}

/// Droid ends its shell tool's (`Execute`) result with a line of its own, `[Process exited
/// with code N]` (seen with Droid 0.225 in the end-to-end suite): only that last line
/// counts, never the same words earlier in the output.
fn droid_exit_code(text: &str) -> Option<i64> {
    let last = text.trim_end().lines().next_back()?.trim();
    let code = last
        .strip_prefix("[Process exited with code ")?
        .strip_suffix(']')?;
    code.trim().parse().ok()
}

/// Codex's shell result text: the result as a string, or its `output` field.
fn codex_text(result: &Value) -> Option<String> {
    match result {
        Value::String(s) => Some(s.clone()),
        Value::Object(m) => m.get("output").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// Codex writes a header before the command's output (`Exit code: N` or `Process exited with
/// code N`, `Wall time: …`, then a line `Output:`). Only the header is read, and only when
/// the `Output:` line that ends it is there.
fn codex_exit_code(text: &str) -> Option<i64> {
    let mut code = None;
    for line in text.lines() {
        let line = line.trim_end();
        if line == "Output:" {
            return code;
        }
        let number = line
            .strip_prefix("Exit code: ")
            .or_else(|| line.strip_prefix("Process exited with code "));
        if let Some(n) = number {
            code = n.trim().parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn droid_reads_only_its_own_last_line() {
        // Droid 0.225, as a run against the mock recorded it.
        let ok = json!("hi\n\n\n[Process exited with code 0]");
        assert_eq!(
            read(Agent::Droid, &ok),
            ToolOutcome {
                exit_code: Some(0),
                failed: false
            }
        );
        let failed = json!("boom\n[Process exited with code 3]\n");
        assert_eq!(read(Agent::Droid, &failed).exit_code, Some(3));
        assert!(read(Agent::Droid, &failed).failed);
        let printed = json!("[Process exited with code 3]\nand more output");
        assert_eq!(read(Agent::Droid, &printed), ToolOutcome::default());
        // Another agent's text in Droid's words is output, not a signal.
        assert_eq!(read(Agent::Claude, &failed), ToolOutcome::default());
    }

    #[test]
    fn copilot_reads_only_its_own_last_line() {
        let failed = json!({"resultType": "success",
            "textResultForLlm": "boom\n<exited with exit code 3>"});
        assert_eq!(
            read(Agent::Copilot, &failed),
            ToolOutcome {
                exit_code: Some(3),
                failed: true
            }
        );
        let ok = json!({"resultType": "success",
            "textResultForLlm": "it said <exited with exit code 3>\nfine\n<exited with exit code 0>\n"});
        assert_eq!(read(Agent::Copilot, &ok).exit_code, Some(0));
        assert!(!read(Agent::Copilot, &ok).failed);
        let printed = json!({"resultType": "success",
            "textResultForLlm": "<exited with exit code 3>\nand then more output"});
        assert_eq!(read(Agent::Copilot, &printed), ToolOutcome::default());
        // Copilot CLI 1.0.102, as the end-to-end suite recorded it.
        let shell = json!({"resultType": "success",
            "textResultForLlm": "failing\n<shellId: 0 completed with exit code 3>"});
        assert_eq!(
            read(Agent::Copilot, &shell),
            ToolOutcome {
                exit_code: Some(3),
                failed: true
            }
        );
        let shell_ok = json!({"resultType": "success",
            "textResultForLlm": "hi\n<shellId: 1 completed with exit code 0>"});
        assert_eq!(read(Agent::Copilot, &shell_ok).exit_code, Some(0));
        let shell_printed = json!({"resultType": "success",
            "textResultForLlm": "<shellId: 0 completed with exit code 3>\nmore"});
        assert_eq!(read(Agent::Copilot, &shell_printed), ToolOutcome::default());
    }

    #[test]
    fn gemini_reads_the_lines_after_the_output_and_its_error() {
        let failed = json!({"llmContent": "Output: (empty)\nExit Code: 3\nProcess Group PGID: 41",
            "returnDisplay": "Command exited with code: 3"});
        assert_eq!(
            read(Agent::Gemini, &failed),
            ToolOutcome {
                exit_code: Some(3),
                failed: true
            }
        );
        let printed = json!({"llmContent": "Output: Exit Code: 3\nProcess Group PGID: 41",
            "returnDisplay": "Exit Code: 3"});
        assert_eq!(read(Agent::Gemini, &printed), ToolOutcome::default());
        let multi = json!({"llmContent": "Output: a\nExit Code: 9\nb\nExit Code: 2\nProcess Group PGID: 7",
            "returnDisplay": "a\nExit Code: 9\nb"});
        assert_eq!(read(Agent::Gemini, &multi).exit_code, Some(2));
        let errored = json!({"llmContent": "no such file", "returnDisplay": "x",
            "error": {"message": "File not found", "type": "FILE_NOT_FOUND"}});
        assert!(read(Agent::Gemini, &errored).failed);
        assert_eq!(read(Agent::Gemini, &errored).exit_code, None);
        // Gemini CLI 0.61, as the end-to-end suite recorded it.
        let wrapped = json!({"llmContent": "<untrusted_context>\nOutput: failing\nExit Code: 3\nProcess Group PGID: 17916\n</untrusted_context>",
            "returnDisplay": "failing"});
        assert_eq!(read(Agent::Gemini, &wrapped).exit_code, Some(3));
        let wrapped_printed = json!({"llmContent": "<untrusted_context>\nOutput: Exit Code: 3\nProcess Group PGID: 1\n</untrusted_context>",
            "returnDisplay": "Exit Code: 3"});
        assert_eq!(
            read(Agent::Gemini, &wrapped_printed),
            ToolOutcome::default()
        );
        let ok = json!({"llmContent": "Output: hi\nProcess Group PGID: 41", "returnDisplay": "hi"});
        assert_eq!(read(Agent::Gemini, &ok), ToolOutcome::default());
    }

    #[test]
    fn codex_reads_its_header_and_its_structured_output() {
        let text = json!("Exit code: 3\nWall time: 0.1 seconds\nOutput:\nboom\n");
        assert_eq!(read(Agent::Codex, &text).exit_code, Some(3));
        assert!(read(Agent::Codex, &text).failed);
        let unified = json!(
            "Chunk ID: a1\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nExit code: 3\n"
        );
        assert_eq!(read(Agent::Codex, &unified).exit_code, Some(0));
        assert!(!read(Agent::Codex, &unified).failed);
        let headless = json!("Exit code: 3");
        assert_eq!(read(Agent::Codex, &headless), ToolOutcome::default());
        let json_string =
            json!(r#"{"output":"boom","metadata":{"exit_code":2,"duration_seconds":0.1}}"#);
        assert_eq!(read(Agent::Codex, &json_string).exit_code, Some(2));
        let object = json!({"exit_code": 0, "stdout": "exit code 3"});
        assert_eq!(read(Agent::Codex, &object).exit_code, Some(0));
    }

    #[test]
    fn claude_results_say_nothing_beyond_their_event() {
        let bash = json!({"stdout": "Exit code: 3\nOutput:\n", "stderr": "", "interrupted": false});
        assert_eq!(read(Agent::Claude, &bash), ToolOutcome::default());
        assert_eq!(
            read(Agent::Claude, &json!("Exit code 3")),
            ToolOutcome::default()
        );
    }
}
