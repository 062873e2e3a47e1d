//! VS Code Copilot Chat transcripts (`GitHub.copilot-chat/transcripts/<session>.jsonl`) and
//! Copilot CLI event logs, which share the envelope `{type, data, id, timestamp, parentId}`.
//!
//! A `user.message` whose `source` is a skill's (`skill-<name>`) or a subagent's (`agent-<id>`)
//! was injected, not typed: it is no prompt and does not split the user's turn.
//!
//! A Copilot CLI `hook.end` of a Stop hook that blocked (`decision: block`) names the reason
//! the agent then sends on as a `user.message`: that message is the hook's feedback
//! ([`Record::StopBlocked`]).
//!
//! `assistant.turn_end` is deliberately not a turn end: one user message is answered by many
//! assistant turns (one per model call), so only the next `user.message` closes the user's turn.

use serde_json::Value;

use super::record::{tool_input, Record};

/// Records of one line of type `kind` (`user.message`, `assistant.message`,
/// `tool.execution_start`, `tool.execution_complete` or `hook.end`).
pub(crate) fn parse(kind: &str, line: &Value) -> Vec<Record> {
    let Some(data) = line.get("data").filter(|d| d.is_object()) else {
        return Vec::new();
    };
    let text = |name: &str| data.get(name).and_then(Value::as_str).map(str::to_owned);
    match kind {
        "user.message" if injected(data) => Vec::new(),
        "user.message" => match text("content") {
            Some(content) => vec![Record::UserPrompt {
                id: line.get("id").and_then(Value::as_str).map(str::to_owned),
                text: content,
            }],
            None => Vec::new(),
        },
        "assistant.message" => {
            let mut records = Vec::new();
            // Copilot CLI names the model on each message (VS Code's transcript does not).
            if let Some(name) = text("model").filter(|m| !m.is_empty()) {
                records.push(Record::Model { name });
            }
            if let Some(reasoning) = text("reasoningText") {
                records.push(Record::Reasoning { text: reasoning });
            }
            if let Some(content) = text("content") {
                records.push(Record::AssistantText {
                    message_id: text("messageId"),
                    text: content,
                });
            }
            records
        }
        "tool.execution_start" => match text("toolName") {
            Some(name) => vec![Record::ToolUse {
                id: text("toolCallId"),
                name,
                input: tool_input(data.get("arguments")),
            }],
            None => Vec::new(),
        },
        "hook.end" => blocked_stop(data).into_iter().collect(),
        "tool.execution_complete" => match text("toolCallId") {
            Some(id) => vec![Record::ToolResult {
                id,
                output: result_text(data.get("result")),
            }],
            None => Vec::new(),
        },
        _ => Vec::new(),
    }
}

/// Sources of `user.message`s the harness writes rather than the user: a skill's expansion
/// (`skill-<name>`) and a message handed to a subagent (`agent-<id>`). A typed prompt names no
/// source, or another one: dropping a person's prompt would lose the whole turn, so only
/// these count as injected.
const INJECTED_SOURCES: [&str; 2] = ["skill-", "agent-"];

fn injected(data: &Value) -> bool {
    data.get("source")
        .and_then(Value::as_str)
        .is_some_and(|source| INJECTED_SOURCES.iter().any(|p| source.starts_with(p)))
}

/// A Copilot CLI Stop hook that blocked the turn's end (`hookType` `agentStop`, or `Stop` in
/// the VS Code-compatible casing; `output: {decision: "block", reason}`), with its reason.
fn blocked_stop(data: &Value) -> Option<Record> {
    let hook = data.get("hookType").and_then(Value::as_str)?;
    let output = data.get("output")?;
    let reason = output.get("reason").and_then(Value::as_str)?;
    (matches!(hook, "agentStop" | "Stop")
        && output.get("decision").and_then(Value::as_str) == Some("block"))
    .then(|| Record::StopBlocked {
        reason: reason.to_string(),
    })
}

/// The text of a tool result: `result.content` when it is text, else its compact JSON.
fn result_text(result: Option<&Value>) -> String {
    match result.and_then(|r| r.get("content")) {
        Some(Value::String(text)) => text.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse::parse_line;
    use super::super::record::ParseOptions;
    use super::*;
    use serde_json::json;

    fn parse(line: &str) -> Vec<Record> {
        parse_line(line.as_bytes(), ParseOptions::default())
    }

    #[test]
    fn a_stop_hook_that_blocked_gives_its_reason() {
        let line = |hook: &str, output: Value| {
            json!({"type": "hook.end", "data": {"hookInvocationId": "h", "hookType": hook,
                   "success": true, "output": output}, "id": "e9"})
            .to_string()
        };
        assert_eq!(
            parse(&line(
                "agentStop",
                json!({"decision": "block", "reason": "2 tests fail"})
            )),
            vec![Record::StopBlocked {
                reason: "2 tests fail".into()
            }]
        );
        for (hook, output) in [
            ("agentStop", json!({})),
            ("agentStop", json!({"decision": "allow", "reason": "ok"})),
            ("preToolUse", json!({"decision": "block", "reason": "no"})),
        ] {
            assert_eq!(parse(&line(hook, output)), vec![], "{hook}");
        }
    }

    #[test]
    fn user_message_is_a_prompt_with_the_line_id() {
        assert_eq!(
            parse(
                r#"{"type":"user.message","data":{"content":"Run the tests"},"id":"e2","timestamp":"t","parentId":"e1"}"#
            ),
            vec![Record::UserPrompt {
                id: Some("e2".into()),
                text: "Run the tests".into()
            }]
        );
    }

    #[test]
    fn assistant_message_gives_reasoning_then_text() {
        assert_eq!(
            parse(
                r#"{"type":"assistant.message","data":{"messageId":"m1","content":"","reasoningText":"Need to run tests.","toolRequests":[{"name":"x"}]},"id":"e4"}"#
            ),
            vec![
                Record::Reasoning {
                    text: "Need to run tests.".into()
                },
                Record::AssistantText {
                    message_id: Some("m1".into()),
                    text: String::new()
                },
            ]
        );
    }

    #[test]
    fn tool_arguments_as_object_or_json_string() {
        let object = r#"{"type":"tool.execution_start","data":{"toolCallId":"c","toolName":"run_in_terminal","arguments":{"command":"npm test"}},"id":"e5"}"#;
        let string = r#"{"type":"tool.execution_start","data":{"toolCallId":"c","toolName":"run_in_terminal","arguments":"{\"command\":\"npm test\"}"},"id":"e5"}"#;
        let expected = vec![Record::ToolUse {
            id: Some("c".into()),
            name: "run_in_terminal".into(),
            input: json!({"command": "npm test"}),
        }];
        assert_eq!(parse(object), expected);
        assert_eq!(parse(string), expected);
    }

    #[test]
    fn a_tool_result_names_its_call() {
        assert_eq!(
            parse(
                r#"{"type":"tool.execution_complete","data":{"toolCallId":"c","success":true,"result":{"content":"5 passing"}},"id":"e6"}"#
            ),
            vec![Record::ToolResult {
                id: "c".into(),
                output: "5 passing".into()
            }]
        );
        assert_eq!(
            parse(
                r#"{"type":"tool.execution_complete","data":{"toolCallId":"c","success":true},"id":"e6"}"#
            ),
            vec![Record::ToolResult {
                id: "c".into(),
                output: String::new()
            }]
        );
    }

    #[test]
    fn injected_user_messages_are_no_prompts() {
        let skill = r#"{"type":"user.message","data":{"content":"<skill-context name=\"x\">do it</skill-context>","source":"skill-x"},"id":"e9"}"#;
        assert!(parse(skill).is_empty());
        let handed =
            r#"{"type":"user.message","data":{"content":"task","source":"agent-a1"},"id":"e9"}"#;
        assert!(parse(handed).is_empty());
        for source in ["", "user", "cli"] {
            let typed = json!({"type": "user.message", "data": {"content": "hi", "source": source},
                "id": "e10"});
            assert_eq!(
                parse(&typed.to_string()),
                vec![Record::UserPrompt {
                    id: Some("e10".into()),
                    text: "hi".into()
                }],
                "{source:?}"
            );
        }
    }

    #[test]
    fn turn_end_and_other_events_are_skipped() {
        for line in [
            r#"{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"e7"}"#,
            r#"{"type":"assistant.turn_start","data":{"turnId":"0"},"id":"e3"}"#,
            r#"{"type":"assistant.message_delta","data":{"deltaContent":"x"},"id":"e8"}"#,
            r#"{"type":"user.message","data":"oops","id":"e9"}"#,
        ] {
            assert!(parse(line).is_empty(), "{line}");
        }
    }

    #[test]
    fn a_copilot_cli_message_names_its_model() {
        let records = parse_line(
            br#"{"type":"assistant.message","data":{"messageId":"m1","model":"gpt-5.4","content":"Done."},"id":"e4"}"#,
            ParseOptions::default(),
        );
        assert_eq!(
            records.first(),
            Some(&Record::Model {
                name: "gpt-5.4".into()
            })
        );
    }
}
