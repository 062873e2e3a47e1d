//! Turning one planned step of a session into the payload an agent's hook would receive.
//!
//! [`render`] names the event in the session's dialect, writes the fields every payload of
//! that dialect starts with (`common_fields`), then those of the event itself (one function
//! per kind of event, `event_fields`), and wraps them with the `cmstore capture` arguments.
//! The random choices are drawn in a fixed order, so a seed always gives the same traffic:
//! reordering the calls on `rng` here changes every seed's output.

use serde_json::{json, Map, Value};

use cmstore::model::queue_line::{ToolCallRecord, TurnRecord};
use cmstore::model::shorten::compact_json;
use cmstore::model::transcript::{MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS};

use crate::{
    answer, cut, event_name, tool_output, Body, Dialect, Extra, HookCall, Kind, Rng, Session, Step,
    Tool,
};

/// A payload's fields, in the order the agent writes them.
type Fields = Map<String, Value>;

/// Turns one planned step into a hook call, or `None` when the dialect has no such hook.
pub(crate) fn render(
    s: &mut Session,
    step: Step,
    clock_ms: i64,
    rng: &mut Rng,
) -> Option<HookCall> {
    let d = s.dialect;
    let event = match step {
        Step::Event(k) | Step::Tool(k, _) => event_name(d, k)?.to_string(),
        Step::Unknown(name) => name.to_string(),
    };
    let mut m = common_fields(s, &event, clock_ms);
    let extra = event_fields(&mut m, s, step, rng);
    Some(HookCall {
        dialect: d,
        args: capture_args(d, &event),
        event,
        garbage: false,
        body: Body::Json(m),
        timestamp_ms: clock_ms,
        extra,
    })
}

/// The fields every payload of the session's dialect starts with, in its spelling and order.
fn common_fields(s: &Session, event: &str, clock_ms: i64) -> Fields {
    let mut m = Fields::new();
    match s.dialect {
        Dialect::Claude | Dialect::Codex => {
            m.insert("session_id".into(), json!(s.id));
            m.insert("transcript_path".into(), json!(s.transcript));
            m.insert("cwd".into(), json!(s.cwd));
            m.insert("hook_event_name".into(), json!(event));
            if s.dialect == Dialect::Codex {
                m.insert("model".into(), json!(s.model));
                m.insert("turn_id".into(), json!(format!("turn-{}", s.turn)));
            }
            m.insert("permission_mode".into(), json!("default"));
        }
        Dialect::VscodeSnake => {
            m.insert("timestamp".into(), json!(iso_time(clock_ms)));
            m.insert("hook_event_name".into(), json!(event));
            m.insert("session_id".into(), json!(s.id));
            m.insert("transcript_path".into(), json!(s.transcript));
            m.insert("cwd".into(), json!(s.cwd));
        }
        Dialect::VscodeCamel => {
            m.insert("timestamp".into(), json!(iso_time(clock_ms)));
            m.insert("cwd".into(), json!(s.cwd));
            m.insert("sessionId".into(), json!(s.id));
            m.insert("hookEventName".into(), json!(event));
            m.insert("transcript_path".into(), Value::Null);
        }
        Dialect::CopilotCamel => {
            m.insert("timestamp".into(), json!(clock_ms));
            m.insert("cwd".into(), json!(s.cwd));
            m.insert("sessionId".into(), json!(s.id));
        }
    }
    m
}

/// `clock_ms` as VS Code writes its timestamps: RFC 3339, milliseconds, `Z`.
fn iso_time(clock_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(clock_ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Adds the fields of the event itself to `m`, and returns what capture would add to its
/// queue line from the transcript.
fn event_fields(m: &mut Fields, s: &mut Session, step: Step, rng: &mut Rng) -> Extra {
    let kind = match step {
        Step::Tool(kind, index) => {
            tool_fields(m, s, kind, index, rng);
            return Extra::default();
        }
        Step::Unknown(_) => {
            // An event cmstore does not know: the dialect's common fields and a detail.
            m.insert("detail".into(), json!({"count": rng.below(20)}));
            return Extra::default();
        }
        Step::Event(kind) => kind,
    };
    match kind {
        Kind::SessionStart => session_start(m, s, rng),
        Kind::Prompt => {
            m.insert("prompt".into(), json!(s.prompt));
        }
        Kind::SubagentStart => subagent_start(m, s, rng),
        Kind::SubagentStop => subagent_stop(m, s, rng),
        Kind::Stop => return stop(m, s, rng),
        Kind::PreCompact => return pre_compact(m, s, rng),
        Kind::Notification => notification(m, rng),
        Kind::Error => error(m),
        Kind::SessionEnd => session_end(m, s.dialect, rng),
        Kind::Pre | Kind::Post | Kind::PostFailure | Kind::Refused => {
            unreachable!("tool events are planned as Step::Tool")
        }
    }
    Extra::default()
}

/// SessionStart: how the session began, and for Claude Code its model.
fn session_start(m: &mut Fields, s: &Session, rng: &mut Rng) {
    let source = match s.dialect {
        Dialect::VscodeSnake | Dialect::VscodeCamel => "new",
        _ => *rng.pick(&["startup", "startup", "resume", "clear"]),
    };
    m.insert("source".into(), json!(source));
    if s.dialect == Dialect::Claude {
        m.insert("model".into(), json!(s.model));
    }
}

/// PreToolUse, PostToolUse or PostToolUseFailure of the session's tool call `index`.
fn tool_fields(m: &mut Fields, s: &mut Session, kind: Kind, index: usize, rng: &mut Rng) {
    let d = s.dialect;
    let (tool, id) = &s.tools[index];
    let (name, input) = tool_call(d, tool);
    if let Some((agent_id, agent_type)) = &s.subagent {
        if d != Dialect::CopilotCamel {
            m.insert("agent_id".into(), json!(agent_id));
            m.insert("agent_type".into(), json!(agent_type));
        }
    }
    if d == Dialect::CopilotCamel {
        m.insert("toolName".into(), json!(name));
        m.insert("toolArgs".into(), json!(input.to_string()));
    } else {
        m.insert("tool_name".into(), json!(name));
        m.insert("tool_input".into(), input);
        m.insert("tool_use_id".into(), json!(id));
    }
    let output = tool_output(tool, rng);
    tool_result(m, d, kind, tool, &output, rng);
    // The main agent's last tool output stands in for its reply; a subagent's is its own.
    if kind != Kind::Pre && s.subagent.is_none() {
        s.response = cut(&output, 300);
    }
}

/// What a Post or PostFailure payload says came back from `tool` (nothing for Pre).
fn tool_result(m: &mut Fields, d: Dialect, kind: Kind, tool: &Tool, output: &str, rng: &mut Rng) {
    match (kind, d) {
        (Kind::Pre, _) => {}
        (Kind::Refused, Dialect::CopilotCamel) => {
            m.insert(
                "toolResult".into(),
                json!({"resultType": "denied", "textResultForLlm": "The user denied this tool call."}),
            );
        }
        (Kind::Refused, _) => {
            m.insert("reason".into(), json!("Denied by the auto mode classifier"));
        }
        (Kind::PostFailure, Dialect::CopilotCamel) => {
            m.insert("error".into(), json!(output));
        }
        (Kind::PostFailure, _) => {
            m.insert("error".into(), json!(format!("Exit code 1\n{output}")));
            m.insert("is_interrupt".into(), json!(false));
        }
        (_, Dialect::CopilotCamel) => {
            m.insert(
                "toolResult".into(),
                json!({"resultType": "success", "textResultForLlm": output}),
            );
        }
        (_, Dialect::Claude) => {
            m.insert(
                "tool_response".into(),
                claude_tool_response(tool, output, rng),
            );
        }
        _ => {
            m.insert("tool_response".into(), json!(output));
        }
    }
}

/// Claude Code's structured `tool_response` for `tool`.
fn claude_tool_response(tool: &Tool, output: &str, rng: &mut Rng) -> Value {
    match tool {
        Tool::Shell { .. } => {
            json!({"stdout": output, "stderr": "", "interrupted": false, "isImage": false})
        }
        Tool::Read { path, lines } => {
            json!({"type": "text", "file": {"filePath": path, "content": output, "numLines": lines, "startLine": 1, "totalLines": lines}})
        }
        Tool::Delegate { .. } => {
            json!({"status": "completed", "content": [{"type": "text", "text": output}], "totalDurationMs": rng.range(4000, 90000)})
        }
        Tool::Edit { path, .. } | Tool::Write { path, .. } => {
            json!({"filePath": path, "success": true})
        }
        Tool::Grep { .. } => {
            json!({"mode": "content", "numFiles": rng.range(1, 9), "content": output})
        }
    }
}

/// SubagentStart: the subagent of the turn's latest delegation starts; the session's tool
/// calls are its own until SubagentStop.
fn subagent_start(m: &mut Fields, s: &mut Session, rng: &mut Rng) {
    let agent = s
        .tools
        .iter()
        .rev()
        .find_map(|(t, _)| match t {
            Tool::Delegate { agent, .. } => Some(agent.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "general-purpose".into());
    let agent_id = format!("a{:07x}", rng.below(1 << 28));
    if s.dialect == Dialect::CopilotCamel {
        m.insert("transcriptPath".into(), json!(s.transcript));
        m.insert("agentName".into(), json!(agent));
        m.insert("agentDisplayName".into(), json!(title(&agent)));
    } else {
        m.insert("agent_id".into(), json!(agent_id));
        m.insert("agent_type".into(), json!(agent));
    }
    s.subagent = Some((agent_id, agent));
}

/// SubagentStop: the running subagent ends with its answer.
fn subagent_stop(m: &mut Fields, s: &mut Session, rng: &mut Rng) {
    let (agent_id, agent) = s.subagent.take().unwrap_or_default();
    let last = answer(rng);
    if s.dialect == Dialect::CopilotCamel {
        m.insert("transcriptPath".into(), json!(s.transcript));
        m.insert("agentId".into(), json!(agent_id));
        m.insert("agentType".into(), json!("custom"));
        m.insert("agentName".into(), json!(agent));
        m.insert("response".into(), json!(last));
        m.insert("stopReason".into(), json!("end_turn"));
        return;
    }
    m.insert("stop_hook_active".into(), json!(false));
    m.insert("agent_id".into(), json!(agent_id));
    m.insert("agent_type".into(), json!(agent));
    if s.dialect == Dialect::Claude {
        let path = s.transcript.as_deref().unwrap_or_default();
        let sub = path.trim_end_matches(".jsonl");
        m.insert(
            "agent_transcript_path".into(),
            json!(format!("{sub}/subagents/agent-{agent_id}.jsonl")),
        );
        m.insert("last_assistant_message".into(), json!(last));
    }
}

/// Stop: the turn ends with the agent's answer, which joins the session's history; capture
/// reads the final exchange from the transcript.
fn stop(m: &mut Fields, s: &mut Session, rng: &mut Rng) -> Extra {
    let last = answer(rng);
    match s.dialect {
        Dialect::CopilotCamel => {
            m.insert("transcriptPath".into(), json!(s.transcript));
            m.insert("stopReason".into(), json!("end_turn"));
            m.insert("stop_hook_active".into(), json!(false));
        }
        Dialect::Claude | Dialect::Codex => {
            m.insert("stop_hook_active".into(), json!(false));
            m.insert("last_assistant_message".into(), json!(last));
        }
        Dialect::VscodeSnake | Dialect::VscodeCamel => {
            m.insert("stop_hook_active".into(), json!(false));
        }
    }
    let extra = final_exchange(s);
    s.history.push(TurnRecord {
        user: s.prompt.clone(),
        assistant: last,
        turn_id: extra.turn_id.clone(),
    });
    extra
}

/// What capture reads from the transcript at Stop: the turn's prompt, id and tool calls.
fn final_exchange(s: &Session) -> Extra {
    let tool_calls = s
        .tools
        .iter()
        .take(MAX_TOOL_CALLS)
        .map(|(t, _)| {
            let (tool_name, input) = tool_call(s.dialect, t);
            ToolCallRecord {
                tool_name,
                input: compact_json(&input, MAX_TOOL_INPUT_CHARS),
                output: String::new(),
            }
        })
        .collect();
    Extra {
        prompt: Some(s.prompt.clone()),
        tool_calls: Some(tool_calls),
        turns: None,
        turn_id: Some(format!("turn-{}", s.turn)),
    }
}

/// PreCompact: the context is compacted; capture hands on the turns since the last one.
fn pre_compact(m: &mut Fields, s: &mut Session, rng: &mut Rng) -> Extra {
    let trigger = *rng.pick(&["auto", "auto", "manual"]);
    if matches!(
        s.dialect,
        Dialect::Claude | Dialect::Codex | Dialect::VscodeSnake
    ) {
        m.insert("trigger".into(), json!(trigger));
        m.insert("custom_instructions".into(), json!(""));
    } else {
        m.insert("transcriptPath".into(), json!(s.transcript));
        m.insert("trigger".into(), json!(trigger));
        m.insert("customInstructions".into(), json!(""));
    }
    Extra {
        turns: Some(std::mem::take(&mut s.history)),
        ..Extra::default()
    }
}

/// Notification: a permission prompt, an idle prompt or a finished background shell.
fn notification(m: &mut Fields, rng: &mut Rng) {
    let (kind, text) = *rng.pick(&[
        (
            "permission_prompt",
            "Claude needs your permission to use Bash",
        ),
        ("idle_prompt", "Claude is waiting for your input"),
        ("shell_completed", "Background shell finished"),
    ]);
    m.insert("hook_event_name".into(), json!("Notification"));
    m.insert("message".into(), json!(text));
    m.insert("notification_type".into(), json!(kind));
}

/// Copilot CLI's errorOccurred: a model call that timed out.
fn error(m: &mut Fields) {
    m.insert(
        "error".into(),
        json!({"message": "Request timed out after 60000ms", "name": "TimeoutError"}),
    );
    m.insert("errorContext".into(), json!("model_call"));
    m.insert("recoverable".into(), json!(true));
}

/// SessionEnd: why the session ended, in the dialect's words.
fn session_end(m: &mut Fields, d: Dialect, rng: &mut Rng) {
    let reason = match d {
        Dialect::CopilotCamel => *rng.pick(&["complete", "user_exit", "abort"]),
        _ => *rng.pick(&["other", "logout", "prompt_input_exit", "clear"]),
    };
    m.insert("reason".into(), json!(reason));
}

/// The `cmstore` arguments to run the hook with: `capture --agent A`, and for Copilot CLI,
/// whose payloads do not name their event, `--event E`.
fn capture_args(d: Dialect, event: &str) -> Vec<String> {
    let mut args = vec![
        "capture".to_string(),
        "--agent".to_string(),
        d.agent().as_str().to_string(),
    ];
    if d == Dialect::CopilotCamel {
        args.push("--event".into());
        args.push(event.to_string());
    }
    args
}

/// The dialect's tool name and arguments for `tool`.
fn tool_call(d: Dialect, tool: &Tool) -> (String, Value) {
    let (name, input) = match tool {
        Tool::Shell {
            command,
            description,
        } => shell_call(d, command, description),
        Tool::Read { path, lines } => read_call(d, path, *lines),
        Tool::Edit { path, old, new } => edit_call(d, path, old, new),
        Tool::Write { path, content } => write_call(d, path, content),
        Tool::Grep { pattern, path } => grep_call(d, pattern, path),
        Tool::Delegate { agent, prompt } => delegate_call(d, agent, prompt),
    };
    (name.to_string(), input)
}

/// A shell command: VS Code's terminal, Copilot CLI's `bash`, Claude Code's and Codex's `Bash`.
fn shell_call(d: Dialect, command: &str, description: &str) -> (&'static str, Value) {
    match d {
        Dialect::VscodeSnake | Dialect::VscodeCamel => (
            "run_in_terminal",
            json!({"command": command, "explanation": description, "isBackground": false}),
        ),
        Dialect::CopilotCamel => (
            "bash",
            json!({"command": command, "description": description}),
        ),
        Dialect::Codex => ("Bash", json!({"command": command})),
        Dialect::Claude => (
            "Bash",
            json!({"command": command, "description": description}),
        ),
    }
}

/// A file read (Codex reads with `sed`).
fn read_call(d: Dialect, path: &str, lines: u64) -> (&'static str, Value) {
    match d {
        Dialect::VscodeSnake | Dialect::VscodeCamel => (
            "read_file",
            json!({"filePath": path, "startLine": 1, "endLine": lines}),
        ),
        Dialect::CopilotCamel => ("view", json!({"path": path})),
        Dialect::Codex => (
            "Bash",
            json!({"command": format!("sed -n '1,{lines}p' {path}")}),
        ),
        Dialect::Claude => ("Read", json!({"file_path": path})),
    }
}

/// A string replacement in a file (Codex sends a patch).
fn edit_call(d: Dialect, path: &str, old: &str, new: &str) -> (&'static str, Value) {
    match d {
        Dialect::VscodeSnake | Dialect::VscodeCamel => (
            "replace_string_in_file",
            json!({"filePath": path, "oldString": old, "newString": new}),
        ),
        Dialect::CopilotCamel => (
            "edit",
            json!({"path": path, "old_str": old, "new_str": new}),
        ),
        Dialect::Codex => (
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Update File: {path}\n-{old}\n+{new}\n*** End Patch\n")}),
        ),
        Dialect::Claude => (
            "Edit",
            json!({"file_path": path, "old_string": old, "new_string": new, "replace_all": false}),
        ),
    }
}

/// A new file (Codex sends a patch).
fn write_call(d: Dialect, path: &str, content: &str) -> (&'static str, Value) {
    match d {
        Dialect::VscodeSnake | Dialect::VscodeCamel => {
            ("create_file", json!({"filePath": path, "content": content}))
        }
        Dialect::CopilotCamel => ("create", json!({"path": path, "file_text": content})),
        Dialect::Codex => (
            "apply_patch",
            json!({"input": format!("*** Begin Patch\n*** Add File: {path}\n+{content}\n*** End Patch\n")}),
        ),
        Dialect::Claude => ("Write", json!({"file_path": path, "content": content})),
    }
}

/// A regex search (Codex runs `rg`).
fn grep_call(d: Dialect, pattern: &str, path: &str) -> (&'static str, Value) {
    match d {
        Dialect::VscodeSnake | Dialect::VscodeCamel => (
            "grep_search",
            json!({"query": pattern, "isRegexp": true, "includePattern": format!("{path}/**")}),
        ),
        Dialect::CopilotCamel => ("grep", json!({"pattern": pattern, "path": path})),
        Dialect::Codex => (
            "Bash",
            json!({"command": format!("rg -n '{pattern}' {path}")}),
        ),
        Dialect::Claude => (
            "Grep",
            json!({"pattern": pattern, "path": path, "output_mode": "content", "-n": true}),
        ),
    }
}

/// A delegation to a subagent: `runSubagent`, `task` or `Task`.
fn delegate_call(d: Dialect, agent: &str, prompt: &str) -> (&'static str, Value) {
    let description = cut(prompt, 40);
    match d {
        Dialect::VscodeSnake | Dialect::VscodeCamel => (
            "runSubagent",
            json!({"agentName": agent, "prompt": prompt, "description": description}),
        ),
        Dialect::CopilotCamel => (
            "task",
            json!({"agent_type": agent, "prompt": prompt, "description": description}),
        ),
        Dialect::Claude | Dialect::Codex => (
            "Task",
            json!({"description": description, "prompt": prompt, "subagent_type": agent}),
        ),
    }
}

/// `code-reviewer` as Copilot CLI displays it: `Code Reviewer`.
fn title(agent: &str) -> String {
    agent
        .split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}
