//! Claude Code transcript lines (`~/.claude/projects/<project>/<session>.jsonl`).
//!
//! Only `user`, `assistant` and `system` lines matter; `parse` is called for those alone.
//! See docs/design.md, "Transcripts", for the shapes.

use serde_json::Value;

use super::record::{tool_input, ParseOptions, Record, MAX_TOOL_OUTPUT_CHARS};
use crate::model::shorten::cut_text;

/// Prefix of the text Claude Code writes as a user line when the user interrupts a turn.
const INTERRUPTED: &str = "[Request interrupted by user";

/// How Claude Code heads the user line it writes when a hook blocks: `Stop hook feedback:`
/// (a Stop or SubagentStop hook kept the turn going), `Bash operation feedback:` (a
/// PostToolUse hook's reason about that tool's call). The model answers it in the same turn.
const HOOK_FEEDBACK_HEADS: [&str; 2] = [" hook feedback:", " operation feedback:"];

/// The `message.model` of lines Claude Code writes without the model.
pub(crate) const SYNTHETIC_MODEL: &str = "<synthetic>";

/// Records of one Claude Code line of type `kind` (`user`, `assistant` or `system`).
pub(crate) fn parse(kind: &str, line: &Value, options: ParseOptions) -> Vec<Record> {
    if flag(line, "isSidechain") != options.sidechain {
        return Vec::new();
    }
    match kind {
        "user" => user(line),
        "assistant" => assistant(line),
        "system" if line.get("subtype").and_then(Value::as_str) == Some("turn_duration") => {
            vec![Record::TurnEnd]
        }
        "tool_result" => function_responses(line),
        _ => Vec::new(),
    }
}

/// Qwen Code's `tool_result` line (seen with 0.14.2): Gemini's `functionResponse` parts, each
/// the call's id and its `response` (`{"output": …}`, or `{"error": …}` for a call that
/// failed), as the results of the calls they answer.
fn function_responses(line: &Value) -> Vec<Record> {
    let parts = line
        .get("message")
        .and_then(|m| m.get("parts"))
        .and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter_map(|part| {
            let response = part.get("functionResponse")?;
            let id = response.get("id")?.as_str()?.to_owned();
            let output = match response.get("response") {
                Some(Value::Object(r)) => match r.get("output").or_else(|| r.get("error")) {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => Value::Object(r.clone()).to_string(),
                },
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            };
            Some(Record::ToolResult { id, output })
        })
        .collect()
}

fn flag(line: &Value, name: &str) -> bool {
    line.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn user(line: &Value) -> Vec<Record> {
    // Claude Code 2.1 marks the feedback `isMeta` (with `hookText`); 1.0 wrote it as typed
    // text. Either way it is the hook's, and the turn goes on.
    if let Some(feedback) = hook_feedback(line) {
        return vec![feedback];
    }
    // Injected by the harness, not typed: skill expansions, command caveats, compaction
    // summaries, lines shown only in the transcript view.
    if ["isMeta", "isCompactSummary", "isVisibleInTranscriptOnly"]
        .iter()
        .any(|name| flag(line, name))
    {
        return Vec::new();
    }
    let Some(message) = line.get("message") else {
        return Vec::new();
    };
    let Some(content) = message.get("content") else {
        // Qwen Code's chats: the Claude Code envelope around Gemini's `parts`.
        let texts = part_texts(message, false);
        return prompt(line, texts.join("\n")).into_iter().collect();
    };
    let texts: Vec<&str> = match content {
        Value::String(text) => vec![text.as_str()],
        Value::Array(blocks) => {
            let results: Vec<Record> = blocks.iter().filter_map(tool_result).collect();
            let texts = blocks
                .iter()
                .filter(|b| block_type(b) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str));
            if blocks.iter().any(|b| block_type(b) == Some("tool_result")) {
                // Tool results are the assistant's own loop, not a new prompt; an interruption
                // can ride along with them and still ends the turn.
                let interrupted = texts.into_iter().any(|t| t.starts_with(INTERRUPTED));
                return results
                    .into_iter()
                    .chain(interrupted.then_some(Record::Interrupted))
                    .collect();
            }
            texts.collect()
        }
        _ => return Vec::new(),
    };
    // A reminder the harness puts beside the typed text is not part of it.
    let typed: Vec<&str> = texts.into_iter().filter(|t| !injected(t)).collect();
    prompt(line, typed.join("\n")).into_iter().collect()
}

/// Tags that open text the harness writes as a user line, never typed by a person.
const INJECTED: [&str; 2] = ["<system-reminder>", "<local-command-caveat>"];

/// Tags that open the output of a command the user ran without the model.
const LOCAL_OUTPUT: [&str; 4] = [
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
];

/// A user line that is a blocking hook's feedback: its text, or its first text block, begins
/// with one word and one of [`HOOK_FEEDBACK_HEADS`] on its first line.
fn hook_feedback(line: &Value) -> Option<Record> {
    let content = line.get("message")?.get("content")?;
    let text = match content {
        Value::String(text) => text.as_str(),
        Value::Array(blocks) => blocks
            .iter()
            .find(|b| block_type(b) == Some("text"))?
            .get("text")?
            .as_str()?,
        _ => return None,
    };
    let head = text.trim_start().lines().next()?.trim_end();
    let feedback = HOOK_FEEDBACK_HEADS.iter().any(|tail| {
        head.strip_suffix(tail)
            .is_some_and(|name| !name.is_empty() && !name.contains(char::is_whitespace))
    });
    feedback.then(|| Record::HookFeedback {
        text: text.trim().to_owned(),
    })
}

fn injected(text: &str) -> bool {
    let text = text.trim_start();
    INJECTED.iter().any(|tag| text.starts_with(tag))
}

/// What a user line's typed text is: a prompt, an interruption, the output of a local
/// command, or nothing (empty once the injected parts are gone).
fn prompt(line: &Value, text: String) -> Option<Record> {
    let trimmed = text.trim_start();
    if trimmed.starts_with(INTERRUPTED) {
        return Some(Record::Interrupted);
    }
    if LOCAL_OUTPUT.iter().any(|tag| trimmed.starts_with(tag)) {
        return Some(Record::LocalOutput);
    }
    if trimmed.is_empty() {
        return None;
    }
    Some(Record::UserPrompt {
        id: line.get("uuid").and_then(Value::as_str).map(str::to_owned),
        text: slash_command(trimmed).unwrap_or(text),
    })
}

/// `/name args` for the tagged line Claude Code writes when the user runs a slash command
/// (`<command-message>…</command-message><command-name>/name</command-name>
/// <command-args>args</command-args>`); `None` for any other text.
fn slash_command(text: &str) -> Option<String> {
    if !text.starts_with("<command-") {
        return None;
    }
    let name = tag(text, "command-name")?.trim();
    let args = tag(text, "command-args").map(str::trim).unwrap_or_default();
    Some(if args.is_empty() {
        name.to_owned()
    } else {
        format!("{name} {args}")
    })
}

/// The text between `<name>` and `</name>`.
fn tag<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let open = format!("<{name}>");
    let start = text.find(&open)? + open.len();
    let len = text[start..].find(&format!("</{name}>"))?;
    Some(&text[start..start + len])
}

/// A `tool_result` block: the id of the call it answers and its text (the text blocks of an
/// array joined; images and other blocks left out).
fn tool_result(block: &Value) -> Option<Record> {
    if block_type(block) != Some("tool_result") {
        return None;
    }
    let id = block.get("tool_use_id")?.as_str()?.to_owned();
    let output = match block.get("content") {
        Some(Value::String(text)) => cut_text(text, MAX_TOOL_OUTPUT_CHARS),
        Some(Value::Array(parts)) => {
            let texts = parts
                .iter()
                .filter(|p| block_type(p) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str));
            cut_text(&texts.collect::<Vec<_>>().join("\n"), MAX_TOOL_OUTPUT_CHARS)
        }
        _ => String::new(),
    };
    Some(Record::ToolResult { id, output })
}

fn assistant(line: &Value) -> Vec<Record> {
    // Lines Claude Code writes itself (`model: "<synthetic>"`: API errors, rate-limit notices,
    // "No response requested." after an interrupt) are not what the model answered. Not all
    // of them carry `isApiErrorMessage`, so the model is what tells.
    if flag(line, "isApiErrorMessage") {
        return vec![Record::ApiError];
    }
    let Some(message) = line.get("message") else {
        return Vec::new();
    };
    if message.get("model").and_then(Value::as_str) == Some(SYNTHETIC_MODEL) {
        return Vec::new();
    }
    let message_id = message.get("id").and_then(Value::as_str).map(str::to_owned);
    let model = message
        .get("model")
        .and_then(Value::as_str)
        .filter(|m| !m.is_empty())
        .map(|name| Record::Model {
            name: name.to_owned(),
        });
    let model = model.or_else(|| {
        // Qwen Code names the model on the line, not in the message.
        let name = line.get("model").and_then(Value::as_str)?;
        Some(Record::Model {
            name: name.to_owned(),
        })
        .filter(|_| !name.is_empty())
    });
    let records = match message.get("content") {
        None => parts(message),
        Some(Value::String(text)) => vec![Record::AssistantText {
            message_id,
            text: text.clone(),
        }],
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| match block_type(block)? {
                "text" => Some(Record::AssistantText {
                    message_id: message_id.clone(),
                    text: block.get("text")?.as_str()?.to_owned(),
                }),
                "thinking" => Some(Record::Reasoning {
                    text: block.get("thinking")?.as_str()?.to_owned(),
                }),
                "tool_use" => Some(Record::ToolUse {
                    id: block.get("id").and_then(Value::as_str).map(str::to_owned),
                    name: block.get("name")?.as_str()?.to_owned(),
                    input: tool_input(block.get("input")),
                }),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    // The model only for a line that says something: a line with no record belongs to no turn.
    match model {
        Some(model) if !records.is_empty() => std::iter::once(model).chain(records).collect(),
        _ => records,
    }
}

/// Qwen Code's `parts` (Gemini's shape inside the Claude Code envelope): the texts of the
/// parts that are (`thought`) or are not thinking.
fn part_texts(message: &Value, thought: bool) -> Vec<&str> {
    let parts = message.get("parts").and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter(|p| p.get("thought").and_then(Value::as_bool).unwrap_or(false) == thought)
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect()
}

/// An assistant message's `parts`: thinking, text and function calls, in order.
fn parts(message: &Value) -> Vec<Record> {
    let parts = message.get("parts").and_then(Value::as_array);
    parts
        .into_iter()
        .flatten()
        .filter_map(|part| {
            if let Some(call) = part.get("functionCall") {
                return Some(Record::ToolUse {
                    id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                    name: call.get("name")?.as_str()?.to_owned(),
                    input: tool_input(call.get("args")),
                });
            }
            let text = part.get("text")?.as_str()?.to_owned();
            Some(match part.get("thought").and_then(Value::as_bool) {
                Some(true) => Record::Reasoning { text },
                _ => Record::AssistantText {
                    message_id: None,
                    text,
                },
            })
        })
        .collect()
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_line;
    use super::*;
    use serde_json::json;

    fn main_chain(line: &str) -> Vec<Record> {
        parse_line(line.as_bytes(), ParseOptions::default())
    }

    fn prompt(id: &str, text: &str) -> Record {
        Record::UserPrompt {
            id: Some(id.into()),
            text: text.into(),
        }
    }

    #[test]
    fn user_prompts_from_strings_and_text_blocks() {
        assert_eq!(
            main_chain(
                r#"{"type":"user","uuid":"u1","message":{"role":"user","content":"fix it"}}"#
            ),
            vec![prompt("u1", "fix it")]
        );
        let blocks = r#"{"type":"user","uuid":"u2","message":{"content":[
            {"type":"text","text":"first"},{"type":"image","source":{}},{"type":"text","text":"second"}]}}"#
            .replace('\n', "");
        assert_eq!(main_chain(&blocks), vec![prompt("u2", "first\nsecond")]);
    }

    #[test]
    fn tool_results_are_not_prompts_but_results() {
        let line = r#"{"type":"user","uuid":"u3","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},"toolUseResult":"ok"}"#;
        assert_eq!(
            main_chain(line),
            vec![Record::ToolResult {
                id: "t".into(),
                output: "ok".into()
            }]
        );
        let blocks = r#"{"type":"user","uuid":"u4","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"text","text":"one"},{"type":"image","source":{}},{"type":"text","text":"two"}],"is_error":true},{"type":"tool_result","tool_use_id":"b"}]}}"#;
        assert_eq!(
            main_chain(blocks),
            vec![
                Record::ToolResult {
                    id: "a".into(),
                    output: "one\ntwo".into()
                },
                Record::ToolResult {
                    id: "b".into(),
                    output: String::new()
                },
            ]
        );
    }

    #[test]
    fn local_commands_and_reminders_are_no_prompts() {
        let caveat = r#"{"type":"user","uuid":"c","isMeta":true,"message":{"content":"<local-command-caveat>Caveat: ...</local-command-caveat>"}}"#;
        assert!(main_chain(caveat).is_empty());
        let command = r#"{"type":"user","uuid":"m","message":{"content":"<command-name>/model</command-name>\n            <command-message>model</command-message>\n            <command-args></command-args>"}}"#;
        assert_eq!(main_chain(command), vec![prompt("m", "/model")]);
        let with_args = r#"{"type":"user","uuid":"r","message":{"content":"<command-message>review is running…</command-message>\n<command-name>/review</command-name>\n<command-args>src/</command-args>"}}"#;
        assert_eq!(main_chain(with_args), vec![prompt("r", "/review src/")]);
        for output in [
            "<local-command-stdout>Set model to Haiku</local-command-stdout>",
            "<local-command-stdout></local-command-stdout>",
            "<local-command-stderr>nope</local-command-stderr>",
            "<bash-stdout>a.txt</bash-stdout><bash-stderr></bash-stderr>",
        ] {
            let line = json!({"type": "user", "uuid": "o", "message": {"content": output}});
            assert_eq!(
                main_chain(&line.to_string()),
                vec![Record::LocalOutput],
                "{output}"
            );
        }
        let reminder = r#"{"type":"user","uuid":"s","message":{"content":[{"type":"text","text":"<system-reminder>\nrefs\n</system-reminder>"}]}}"#;
        assert!(main_chain(reminder).is_empty());
        let beside = r#"{"type":"user","uuid":"t","message":{"content":[{"type":"text","text":"<system-reminder>\nrefs\n</system-reminder>"},{"type":"text","text":"fix it"}]}}"#;
        assert_eq!(main_chain(beside), vec![prompt("t", "fix it")]);
    }

    #[test]
    fn a_stop_hooks_feedback_is_no_prompt() {
        let line = r#"{"type":"user","uuid":"f","message":{"role":"user","content":[{"type":"text","text":"Stop hook feedback:\n- [make test]: 2 tests fail\n"}]}}"#;
        assert_eq!(
            main_chain(line),
            [Record::HookFeedback {
                text: "Stop hook feedback:\n- [make test]: 2 tests fail".into()
            }]
        );
    }

    #[test]
    fn a_post_tool_use_hooks_feedback_is_no_prompt_either() {
        // As Claude Code 1.0.112 wrote it (transcript-4).
        let line = r#"{"type":"user","uuid":"f","message":{"role":"user","content":[{"type":"text","text":"Bash operation feedback:\n- [uv run post_tool_use.py]: error\n"}]}}"#;
        assert_eq!(
            main_chain(line),
            [Record::HookFeedback {
                text: "Bash operation feedback:\n- [uv run post_tool_use.py]: error".into()
            }]
        );
        // A person's words that merely mention it stay a prompt.
        let typed = r#"{"type":"user","uuid":"t","message":{"role":"user","content":"why did the Stop hook feedback: say that?"}}"#;
        assert_eq!(
            main_chain(typed),
            [prompt("t", "why did the Stop hook feedback: say that?")]
        );
    }

    #[test]
    fn a_stop_hooks_feedback_marked_meta_is_feedback_too() {
        // As Claude Code 2.1.332 writes it.
        let line = r#"{"type":"user","uuid":"f","isMeta":true,"rowSource":"hook","hookText":true,"message":{"role":"user","content":"Stop hook feedback:\n[sh block.sh]: 2 tests fail\n"}}"#;
        assert_eq!(
            main_chain(line),
            [Record::HookFeedback {
                text: "Stop hook feedback:\n[sh block.sh]: 2 tests fail".into()
            }]
        );
    }

    #[test]
    fn injected_user_lines_are_skipped() {
        for name in [
            "isMeta",
            "isSidechain",
            "isCompactSummary",
            "isVisibleInTranscriptOnly",
        ] {
            let line = json!({"type": "user", "uuid": "u", name: true,
                "message": {"content": "injected"}});
            assert!(main_chain(&line.to_string()).is_empty(), "{name}");
        }
    }

    #[test]
    fn sidechain_lines_are_read_only_in_sidechain_mode() {
        let line =
            r#"{"type":"user","uuid":"s1","isSidechain":true,"message":{"content":"sub task"}}"#;
        assert!(main_chain(line).is_empty());
        let side = parse_line(line.as_bytes(), ParseOptions { sidechain: true });
        assert_eq!(side, vec![prompt("s1", "sub task")]);
        let main = r#"{"type":"user","uuid":"m1","message":{"content":"main"}}"#;
        assert!(parse_line(main.as_bytes(), ParseOptions { sidechain: true }).is_empty());
    }

    #[test]
    fn interruptions_end_the_turn() {
        let line = r#"{"type":"user","uuid":"i","message":{"content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#;
        assert_eq!(main_chain(line), vec![Record::Interrupted]);
    }

    #[test]
    fn assistant_blocks_become_text_reasoning_and_tool_uses() {
        let line = r#"{"type":"assistant","message":{"id":"msg_1","content":[
            {"type":"thinking","thinking":"hmm","signature":"x"},
            {"type":"text","text":"Running tests"},
            {"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"npm test"}},
            {"type":"redacted_thinking","data":"?"}]}}"#
            .replace('\n', "");
        assert_eq!(
            main_chain(&line),
            vec![
                Record::Reasoning { text: "hmm".into() },
                Record::AssistantText {
                    message_id: Some("msg_1".into()),
                    text: "Running tests".into()
                },
                Record::ToolUse {
                    id: Some("toolu_1".into()),
                    name: "Bash".into(),
                    input: json!({"command": "npm test"})
                },
            ]
        );
    }

    #[test]
    fn api_errors_are_no_answer_and_sidechain_assistant_lines_are_skipped() {
        let error = r#"{"type":"assistant","isApiErrorMessage":true,"message":{"id":"m","model":"<synthetic>","content":[{"type":"text","text":"API Error: 500"}]}}"#;
        assert_eq!(main_chain(error), vec![Record::ApiError]);
        let side = r#"{"type":"assistant","isSidechain":true,"message":{"id":"m","content":[{"type":"text","text":"sub"}]}}"#;
        assert!(main_chain(side).is_empty());
    }

    #[test]
    fn synthetic_placeholders_are_skipped_without_the_error_flag_too() {
        // Claude Code's placeholder after an interrupt, and rate-limit notices: `<synthetic>`
        // model, no `isApiErrorMessage` (or `false`).
        for flag in ["", r#""isApiErrorMessage":false,"#] {
            let line = format!(
                r#"{{"type":"assistant",{flag}"message":{{"id":"m","model":"<synthetic>","role":"assistant","content":[{{"type":"text","text":"No response requested."}}]}}}}"#
            );
            assert!(main_chain(&line).is_empty(), "{line}");
        }
        let real = r#"{"type":"assistant","message":{"id":"m","model":"claude-opus-4","content":[{"type":"text","text":"Done."}]}}"#;
        assert_eq!(
            main_chain(real),
            vec![
                Record::Model {
                    name: "claude-opus-4".into()
                },
                Record::AssistantText {
                    message_id: Some("m".into()),
                    text: "Done.".into()
                },
            ]
        );
    }

    #[test]
    fn turn_duration_ends_the_turn_other_system_lines_do_not() {
        let end = r#"{"type":"system","subtype":"turn_duration","durationMs":5}"#;
        assert_eq!(main_chain(end), vec![Record::TurnEnd]);
        let other = r#"{"type":"system","subtype":"stop_hook_summary"}"#;
        assert!(main_chain(other).is_empty());
    }

    /// Qwen Code's `tool_result` lines (0.14.2): each `functionResponse` is the result of the
    /// call it names, its output (or its error) the text.
    #[test]
    fn qwen_codes_tool_results_are_the_results_of_their_calls() {
        let line = r#"{"uuid":"e50d","type":"tool_result","message":{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"read_file","response":{"output":"the README"}}},{"functionResponse":{"id":"call_2","name":"run_shell_command","response":{"error":"exit 3"}}}]}}"#;
        assert_eq!(
            main_chain(line),
            vec![
                Record::ToolResult {
                    id: "call_1".into(),
                    output: "the README".into()
                },
                Record::ToolResult {
                    id: "call_2".into(),
                    output: "exit 3".into()
                },
            ]
        );
        let sidechain = r#"{"type":"tool_result","isSidechain":true,"message":{"parts":[{"functionResponse":{"id":"c","response":{"output":"x"}}}]}}"#;
        assert!(main_chain(sidechain).is_empty());
    }

    /// Qwen Code's chat lines (0.14.2): Claude Code's envelope, Gemini's `parts`.
    #[test]
    fn qwen_codes_parts_are_read_as_claude_codes_blocks() {
        let user = r#"{"uuid":"b009","sessionId":"6676","type":"user","message":{"role":"user","parts":[{"text":"make the landing page stunning"}]}}"#;
        assert_eq!(
            main_chain(user),
            vec![Record::UserPrompt {
                id: Some("b009".into()),
                text: "make the landing page stunning".into()
            }]
        );
        let assistant = r#"{"uuid":"ff7e","type":"assistant","model":"coder-model","message":{"role":"model","parts":[{"text":"I need the README first.","thought":true},{"text":"Let me look."},{"functionCall":{"id":"call_1","name":"read_file","args":{"file_path":"README.md"}}}]}}"#;
        assert_eq!(
            main_chain(assistant),
            vec![
                Record::Model {
                    name: "coder-model".into()
                },
                Record::Reasoning {
                    text: "I need the README first.".into()
                },
                Record::AssistantText {
                    message_id: None,
                    text: "Let me look.".into()
                },
                Record::ToolUse {
                    id: Some("call_1".into()),
                    name: "read_file".into(),
                    input: json!({"file_path": "README.md"}),
                },
            ]
        );
    }
}
