//! What each event records: the planner run on payloads and turns, with no I/O.

use serde_json::{json, Value};

use super::*;
use crate::config::{Config, LogLevel, Mode};
use crate::files::debug_log::DebugLog;
use crate::model::queue_line::{QueueEntry, ToolCallRecord};
use crate::model::transcript::{FinalTurn, Turn};
use crate::model::wire::Agent;

const NOW: i64 = 1_700_000_000_000;
const SECRET: &str = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";

fn hook<'a>(bytes: &'a [u8], agent: &'a str, event: Option<&'a str>) -> Hook<'a> {
    Hook {
        bytes,
        total_len: bytes.len() as u64,
        agent,
        event,
        now_ms: NOW,
        config_error: None,
        cwd: Some("/hook/cwd"),
        session_vars: &[],
    }
}

/// The plan for a payload, with `--agent auto` and no `--event`.
fn plan<'c>(payload: &Value, config: &'c Config) -> Plan<'c> {
    plan_with(payload, "auto", None, config)
}

fn plan_with<'c>(
    payload: &Value,
    agent: &str,
    event: Option<&str>,
    config: &'c Config,
) -> Plan<'c> {
    let bytes = payload.to_string();
    prepare(&hook(bytes.as_bytes(), agent, event), config, &mut quiet()).expect("a plan")
}

/// What a payload records, given the turns read from its transcript.
fn record(payload: &Value, config: &Config, turns: Option<Turns>) -> Outcome {
    plan(payload, config).finish(turns, &mut quiet())
}

fn quiet() -> DebugLog {
    DebugLog::default()
}

fn claude(event: &str, fields: Value) -> Value {
    let mut payload = json!({
        "session_id": "s1",
        "transcript_path": "/home/dev/.claude/projects/p/s1.jsonl",
        "cwd": "/home/dev/project",
        "hook_event_name": event,
    });
    for (k, v) in fields.as_object().expect("fields") {
        payload[k] = v.clone();
    }
    payload
}

fn bash(command: &str) -> Value {
    claude(
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": command}}),
    )
}

fn turn(n: u32) -> Turn {
    Turn {
        turn_id: Some(format!("u{n}")),
        user: format!("question {n}"),
        assistant: format!("answer {n}"),
        tool_calls: vec![ToolCallRecord {
            tool_name: "Bash".into(),
            input: r#"{"command":"cargo test"}"#.into(),
            ..ToolCallRecord::default()
        }],
        complete: true,
        ..Turn::default()
    }
}

fn types(entries: &[QueueEntry]) -> Vec<(&str, bool)> {
    entries
        .iter()
        .map(|e| (e.hook_type.as_str(), e.synthetic == Some(true)))
        .collect()
}

fn ready(reply: Reply) -> Value {
    match reply {
        Reply::Ready(value) => value,
        other => panic!("not a ready reply: {other:?}"),
    }
}

fn enforce() -> Config {
    Config {
        mode: Mode::Enforce,
        ..Config::default()
    }
}

#[test]
fn a_clean_pre_tool_use_is_recorded_with_no_finding() {
    for config in [Config::default(), enforce()] {
        let plan = plan(&bash("ls -la"), &config);
        assert_eq!(plan.transcript(), None, "PreToolUse reads no transcript");
        let out = plan.finish(None, &mut quiet());
        assert_eq!(types(&out.entries), [("PreToolUse", false)]);
        let e = &out.entries[0];
        assert_eq!((e.risk.as_deref(), e.decision.as_deref()), (None, None));
        assert_eq!(e.tool_name.as_deref(), Some("Bash"));
        assert_eq!(e.session_id.as_deref(), Some("s1"));
        assert_eq!(e.timestamp, NOW);
        assert_eq!(ready(out.reply), json!({}));
    }
}

#[test]
fn a_risky_pre_tool_use_in_audit_is_recorded_and_allowed() {
    let out = record(&bash("rm -rf /"), &Config::default(), None);
    let e = &out.entries[0];
    assert_eq!(e.risk.as_deref(), Some("rm-rf-root"));
    assert_eq!(e.decision.as_deref(), Some("allow"));
    assert_eq!(ready(out.reply), json!({}));
}

#[test]
fn a_risky_pre_tool_use_in_enforce_is_denied_in_each_agents_shape() {
    let config = enforce();
    let claude_out = record(&bash("rm -rf /"), &config, None);
    assert_eq!(claude_out.entries[0].decision.as_deref(), Some("deny"));
    let reply = ready(claude_out.reply);
    let hso = &reply["hookSpecificOutput"];
    assert_eq!(hso["hookEventName"], "PreToolUse");
    assert_eq!(hso["permissionDecision"], "deny");
    let reason = hso["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("rm-rf-root") && reason.contains("rm -rf /"),
        "{reason}"
    );

    let copilot = json!({"sessionId": "s1", "timestamp": 1, "toolName": "bash",
        "toolArgs": "{\"command\":\"rm -rf /\"}"});
    let out =
        plan_with(&copilot, "copilot", Some("preToolUse"), &config).finish(None, &mut quiet());
    assert_eq!(out.entries[0].agent.as_deref(), Some("copilot"));
    let reply = ready(out.reply);
    assert_eq!(reply["permissionDecision"], "deny");
    assert!(reply.get("hookSpecificOutput").is_none());

    let gemini = json!({"session_id": "s1", "hook_event_name": "BeforeTool",
        "tool_name": "run_shell_command", "tool_input": {"command": "rm -rf /"}});
    let out = record(&gemini, &config, None);
    assert_eq!(
        out.entries[0].agent.as_deref(),
        Some(Agent::Gemini.as_str())
    );
    assert_eq!(out.entries[0].hook_type, "PreToolUse");
    assert_eq!(ready(out.reply)["decision"], "deny");

    let vscode = json!({"sessionId": "s1", "hookEventName": "PreToolUse",
        "tool_name": "run_in_terminal", "tool_input": {"command": "rm -rf /"}});
    let reply = ready(record(&vscode, &config, None).reply);
    assert_eq!(reply["hookSpecificOutput"]["permissionDecision"], "deny");
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "PreToolUse");
}

#[test]
fn an_unreadable_pre_tool_use_is_allowed_unchecked_even_in_enforce() {
    let config = enforce();
    let bytes = b"{\"tool_name\": \"Bash\", \"tool_input\": ";
    let plan = prepare(
        &hook(bytes, "claude", Some("PreToolUse")),
        &config,
        &mut quiet(),
    )
    .expect("a plan");
    let out = plan.finish(None, &mut quiet());
    assert_eq!(types(&out.entries), [("PreToolUse", false)]);
    let e = &out.entries[0];
    assert!(e
        .parse_error
        .as_deref()
        .unwrap()
        .starts_with("payload is not JSON"));
    assert_eq!(e.risk.as_deref(), Some("unreadable"));
    assert_eq!(e.decision.as_deref(), Some("allow"));
    assert_eq!(ready(out.reply), json!({}));
}

#[test]
fn a_shell_call_with_no_command_is_allowed_and_marked() {
    let payload = claude("PreToolUse", json!({"tool_name": "Bash", "tool_input": {}}));
    let out = record(&payload, &enforce(), None);
    assert_eq!(out.entries[0].risk.as_deref(), Some("unreadable"));
    assert_eq!(out.entries[0].decision.as_deref(), Some("allow"));
    assert_eq!(ready(out.reply), json!({}));
}

#[test]
fn post_tool_use_records_harvested_turns_as_synthetic_stops_after_its_entry() {
    let config = Config::default();
    let payload = claude("PostToolUse", json!({"tool_name": "Edit"}));
    let plan = plan(&payload, &config);
    assert_eq!(
        plan.transcript(),
        Some(&TranscriptRead {
            kind: ReadKind::Harvest,
            session: "s1".into(),
            key: "s1".into(),
            location: Location::Given("/home/dev/.claude/projects/p/s1.jsonl".into()),
        })
    );
    let out = plan.finish(Some(Turns::Harvested(vec![turn(1), turn(2)])), &mut quiet());
    assert_eq!(
        types(&out.entries),
        [("PostToolUse", false), ("Stop", true), ("Stop", true)]
    );
    let stop = &out.entries[1];
    assert_eq!(stop.prompt.as_deref(), Some("question 1"));
    assert_eq!(stop.response.as_deref(), Some("answer 1"));
    assert_eq!(stop.turn_id.as_deref(), Some("u1"));
    assert_eq!(stop.session_id.as_deref(), Some("s1"));
    assert_eq!(stop.event.as_deref(), Some("PostToolUse"));
    assert_eq!(stop.tool_calls.as_ref().unwrap().len(), 1);
    let size = "question 1".len() + "answer 1".len() + "Bash".len() + 24;
    assert_eq!(stop.size_bytes, size as u64);
    assert_ne!(stop.id, out.entries[2].id);
    assert_eq!(ready(out.reply), json!({}));
}

#[test]
fn a_transcript_not_named_is_looked_for_and_no_session_reads_none() {
    let config = Config::default();
    let mut payload = claude("PostToolUse", json!({}));
    payload.as_object_mut().unwrap().remove("transcript_path");
    let read = plan(&payload, &config).transcript().cloned().unwrap();
    assert_eq!(
        (read.kind, read.location),
        (ReadKind::Harvest, Location::Discover)
    );

    payload.as_object_mut().unwrap().remove("session_id");
    assert_eq!(plan(&payload, &config).transcript(), None);
}

/// An agent whose transcripts are not where `discover` looks reads none when its payload
/// names none: no search of Claude Code's and VS Code's folders on each of its hooks.
#[test]
fn only_agents_whose_transcripts_can_be_found_look_for_one() {
    let config = Config::default();
    let windsurf = json!({"agent_action_name": "post_run_command", "trajectory_id": "t-1",
        "execution_id": "e-1", "tool_info": {"command_line": "ls", "cwd": "/w"}});
    assert_eq!(
        plan_with(&windsurf, "windsurf", Some("post_run_command"), &config).transcript(),
        None
    );
    let cursor = json!({"hook_event_name": "stop", "conversation_id": "c-1",
        "generation_id": "g-1", "status": "completed", "workspace_roots": ["/w"]});
    assert_eq!(
        plan_with(&cursor, "cursor", Some("stop"), &config).transcript(),
        None
    );
    // Named, any agent's transcript is read.
    let named = json!({"hook_event_name": "stop", "conversation_id": "c-1",
        "generation_id": "g-1", "status": "completed", "workspace_roots": ["/w"],
        "transcript_path": "/h/.cursor/projects/w/agent-transcripts/c-1.jsonl"});
    assert_eq!(
        plan_with(&named, "cursor", Some("stop"), &config)
            .transcript()
            .map(|read| read.location.clone()),
        Some(Location::Given(
            "/h/.cursor/projects/w/agent-transcripts/c-1.jsonl".into()
        ))
    );
}

#[test]
fn a_copilot_cli_stop_takes_no_turn_from_its_late_transcript() {
    let config = Config::default();
    let payload = json!({"timestamp": NOW, "cwd": "/w", "sessionId": "cp-1",
        "transcriptPath": "/home/dev/.copilot/session-state/cp-1/events.jsonl",
        "stopReason": "end_turn"});
    let planned = plan_with(&payload, "auto", Some("agentStop"), &config);
    assert_eq!(planned.transcript().unwrap().kind, ReadKind::LateStop);
    let turns = Turns::Finished {
        earlier: vec![turn(1)],
        last: FinalTurn::Pending,
    };
    let out = planned.finish(Some(turns), &mut quiet());
    assert_eq!(types(&out.entries), [("Stop", true), ("Stop", false)]);
    let stop = &out.entries[1];
    assert_eq!((stop.prompt.as_ref(), stop.response.as_ref()), (None, None));
    assert_eq!(stop.turn_pending, Some(true));
    assert_eq!(out.entries[0].prompt.as_deref(), Some("question 1"));

    // Even when the cursor could not be read: a later hook records the turn.
    let planned = plan_with(&payload, "auto", Some("agentStop"), &config);
    let out = planned.finish(None, &mut quiet());
    assert_eq!(out.entries[0].turn_pending, Some(true));

    // Claude Code's Stop reads its final exchange as before.
    let planned = plan(&claude("Stop", json!({})), &config);
    assert_eq!(planned.transcript().unwrap().kind, ReadKind::FinishTurn);
}

#[test]
fn a_copilot_cli_session_end_marks_the_session_ended_and_takes_complete_turns_only() {
    let config = Config::default();
    let end = json!({"timestamp": NOW, "cwd": "/w", "sessionId": "cp-1", "reason": "complete"});
    let planned = plan_with(&end, "auto", Some("sessionEnd"), &config);
    let read = planned.transcript().cloned().unwrap();
    assert_eq!(
        (read.kind, read.location),
        (ReadKind::Harvest, Location::Discover)
    );
    let mark = planned.workspace().expect("a workspace mark").clone();
    assert_eq!((mark.cwd.as_str(), mark.ending), ("/w", false));
    assert_eq!(mark.seen.session, "cp-1");
    assert_eq!(mark.seen.ended_ms, Some(NOW));
    assert_eq!(
        mark.seen.transcript, "",
        "the shell fills in the one it read"
    );
    let prompt = json!({"timestamp": NOW, "cwd": "/w", "sessionId": "cp-1", "prompt": "q"});
    let planned = plan_with(&prompt, "auto", Some("userPromptSubmitted"), &config);
    let mark = planned.workspace().unwrap();
    assert_eq!((mark.seen.ended_ms, mark.seen.noted_ms), (None, Some(NOW)));
}

#[test]
fn stop_with_a_fresh_turn_records_its_exchange_after_earlier_turns() {
    let config = Config::default();
    let payload = claude("Stop", json!({}));
    let plan = plan(&payload, &config);
    assert_eq!(plan.transcript().unwrap().kind, ReadKind::FinishTurn);
    let turns = Turns::Finished {
        earlier: vec![turn(1)],
        last: FinalTurn::Fresh(turn(2)),
    };
    let out = plan.finish(Some(turns), &mut quiet());
    assert_eq!(types(&out.entries), [("Stop", true), ("Stop", false)]);
    let stop = &out.entries[1];
    assert_eq!(stop.prompt.as_deref(), Some("question 2"));
    assert_eq!(stop.response.as_deref(), Some("answer 2"));
    assert_eq!(stop.turn_id.as_deref(), Some("u2"));
    assert_eq!(stop.tool_calls.as_ref().unwrap()[0].tool_name, "Bash");
    assert_eq!(out.entries[0].prompt.as_deref(), Some("question 1"));
}

#[test]
fn a_stop_whose_turn_is_recorded_is_still_one_line_marked_with_the_turn() {
    let turns = Turns::Finished {
        earlier: vec![turn(1)],
        last: FinalTurn::Recorded(Some("u2".into())),
    };
    let out = record(&claude("Stop", json!({})), &Config::default(), Some(turns));
    assert_eq!(types(&out.entries), [("Stop", true), ("Stop", false)]);
    let stop = &out.entries[1];
    assert_eq!(stop.turn_id.as_deref(), Some("u2"), "the turn it closes");
    assert_eq!(stop.turn_recorded, Some(true));
    assert_eq!(
        (stop.prompt.as_ref(), stop.tool_calls.as_ref()),
        (None, None)
    );

    let turns = Turns::Finished {
        earlier: vec![],
        last: FinalTurn::Recorded(Some("u2".into())),
    };
    let payload = claude("Stop", json!({"last_assistant_message": "done"}));
    let out = record(&payload, &Config::default(), Some(turns));
    assert_eq!(types(&out.entries), [("Stop", false)]);
    assert_eq!(out.entries[0].response.as_deref(), Some("done"));
    assert_eq!(out.entries[0].turn_recorded, Some(true));
}

#[test]
fn stop_with_no_turn_records_the_payload_alone() {
    let payload = claude("Stop", json!({"last_assistant_message": "done"}));
    let missing = Turns::Finished {
        earlier: vec![],
        last: FinalTurn::Missing,
    };
    for turns in [Some(missing), None] {
        let out = record(&payload, &Config::default(), turns);
        assert_eq!(types(&out.entries), [("Stop", false)]);
        let stop = &out.entries[0];
        assert_eq!(stop.response.as_deref(), Some("done"));
        assert_eq!(
            (stop.prompt.as_deref(), stop.tool_calls.as_ref()),
            (None, None)
        );
    }
}

#[test]
fn subagent_stop_reads_the_subagents_own_transcript_or_none() {
    let config = Config::default();
    let payload = claude(
        "SubagentStop",
        json!({"agent_id": "a7", "agent_transcript_path": "/t/agent-a7.jsonl",
            "last_assistant_message": "sub done"}),
    );
    let planned = plan(&payload, &config);
    assert_eq!(
        planned.transcript(),
        Some(&TranscriptRead {
            kind: ReadKind::FinishTurn,
            session: "s1".into(),
            key: "s1:a7".into(),
            location: Location::Given("/t/agent-a7.jsonl".into()),
        })
    );
    let turns = Turns::Finished {
        earlier: vec![],
        last: FinalTurn::Fresh(turn(3)),
    };
    let out = planned.finish(Some(turns), &mut quiet());
    assert_eq!(types(&out.entries), [("SubagentStop", false)]);
    let e = &out.entries[0];
    assert_eq!(
        e.response.as_deref(),
        Some("sub done"),
        "the payload's text wins"
    );
    assert_eq!(e.prompt.as_deref(), Some("question 3"));
    assert_eq!(e.actor_type.as_deref(), Some("subagent"));

    // Without a transcript of its own, the main transcript is not read for it.
    let payload = claude("SubagentStop", json!({"agent_id": "a7"}));
    assert_eq!(plan(&payload, &config).transcript(), None);
}

#[test]
fn pre_compact_records_the_turns_and_shows_the_knowledge_index() {
    let config = Config::default();
    let plan = plan(&claude("PreCompact", json!({"trigger": "auto"})), &config);
    assert_eq!(
        plan.transcript().unwrap().kind,
        ReadKind::Compact { last_turn: false }
    );
    let out = plan.finish(Some(Turns::Compacted(vec![turn(1), turn(2)])), &mut quiet());
    assert_eq!(types(&out.entries), [("PreCompact", false)]);
    let turns = out.entries[0].turns.as_ref().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1].assistant, "answer 2");
    assert_eq!(turns[1].turn_id.as_deref(), Some("u2"));

    assert_eq!(out.reply.needs(), Some(ContextFile::KnowledgeIndex));
    assert_eq!(
        out.reply.clone().into_value(Some("  index\n")),
        json!({"systemMessage": "index"})
    );
    assert_eq!(out.reply.clone().into_value(Some(" \n")), json!({}));
    assert_eq!(out.reply.into_value(None), json!({}));
}

#[test]
fn user_prompt_submit_injects_the_session_context() {
    let config = Config::default();
    let out = record(
        &claude("UserPromptSubmit", json!({"prompt": "fix it"})),
        &config,
        None,
    );
    assert_eq!(out.entries[0].prompt.as_deref(), Some("fix it"));
    assert_eq!(out.reply.needs(), Some(ContextFile::SessionContext));
    assert_eq!(
        out.reply.into_value(Some("ctx\n")),
        json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
            "additionalContext": "ctx"}})
    );

    // Copilot CLI's own event name, and its top-level shape.
    let copilot = json!({"sessionId": "s1", "timestamp": 1, "prompt": "hi"});
    let out = plan_with(&copilot, "copilot", Some("userPromptSubmitted"), &config)
        .finish(None, &mut quiet());
    assert_eq!(out.entries[0].hook_type, "UserPromptSubmit");
    assert_eq!(
        out.reply.into_value(Some("ctx")),
        json!({"additionalContext": "ctx"})
    );
}

#[test]
fn store_text_false_drops_every_text_field() {
    let config = Config {
        store_text: false,
        log_level: LogLevel::Verbose,
        ..Config::default()
    };
    let out = record(
        &claude("UserPromptSubmit", json!({"prompt": "private"})),
        &config,
        None,
    );
    let e = &out.entries[0];
    assert_eq!(e.prompt, None);
    let raw = e.payload.as_ref().expect("verbose keeps the payload");
    assert!(raw.get("prompt").is_none() && raw.get("session_id").is_some());

    let payload = claude("PostToolUse", json!({"tool_name": "Edit"}));
    let mut thoughtful = turn(1);
    thoughtful.reasoning = Some("private reasoning".into());
    let out = record(&payload, &config, Some(Turns::Harvested(vec![thoughtful])));
    let stop = &out.entries[1];
    assert_eq!((stop.prompt.as_ref(), stop.response.as_ref()), (None, None));
    assert_eq!(stop.thinking, None);
    assert_eq!(stop.turn_id.as_deref(), Some("u1"), "the rest stays");

    let out = record(
        &claude("PreCompact", json!({})),
        &config,
        Some(Turns::Compacted(vec![turn(1)])),
    );
    let turns = out.entries[0].turns.as_ref().unwrap();
    assert_eq!(
        (turns[0].user.as_str(), turns[0].assistant.as_str()),
        ("", "")
    );
}

#[test]
fn secrets_are_redacted_in_the_payload_and_in_turns_from_the_transcript() {
    let config = Config::default();
    let payload = claude(
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": format!("echo {SECRET}")},
            "tool_response": format!("token {SECRET}")}),
    );
    let mut leaky = turn(1);
    leaky.user = format!("use {SECRET}");
    leaky.reasoning = Some(format!("the token is {SECRET}"));
    leaky.tool_calls[0].output = format!("printed {SECRET}");
    let out = record(&payload, &config, Some(Turns::Harvested(vec![leaky])));
    for e in &out.entries {
        let line = e.to_line();
        assert!(!line.contains(SECRET), "{line}");
        assert!(line.contains("[REDACTED"), "{line}");
    }
    let input: Value = serde_json::from_str(out.entries[0].tool_input.as_ref().unwrap()).unwrap();
    assert!(input["command"].as_str().unwrap().starts_with("echo "));
    assert!(out
        .redactor
        .redact(&format!("open {SECRET}"))
        .contains("[REDACTED"));
}

#[test]
fn an_event_disabled_in_events_is_not_written() {
    let mut config = Config::default();
    config.events.insert("PostToolUse".into(), false);
    let payload = claude("PostToolUse", json!({"tool_name": "Edit"}));
    let out = record(&payload, &config, Some(Turns::Harvested(vec![turn(1)])));
    assert_eq!(
        types(&out.entries),
        [("Stop", true)],
        "harvested turns still are"
    );

    config.events.insert("Stop".into(), false);
    let out = record(&payload, &config, Some(Turns::Harvested(vec![turn(1)])));
    assert!(out.entries.is_empty());

    // A clean PreToolUse follows the switch.
    let mut config = Config::default();
    config.events.insert("PreToolUse".into(), false);
    assert!(record(&bash("ls"), &config, None).entries.is_empty());
}

#[test]
fn a_gate_finding_is_recorded_even_when_pre_tool_use_is_switched_off() {
    // enforce: denied, and the denial is in the queue.
    let mut config = enforce();
    config.events.insert("PreToolUse".into(), false);
    let out = record(&bash("rm -rf /"), &config, None);
    assert_eq!(types(&out.entries), [("PreToolUse", false)]);
    assert_eq!(out.entries[0].decision.as_deref(), Some("deny"));
    assert_eq!(out.entries[0].risk.as_deref(), Some("rm-rf-root"));
    assert_eq!(
        ready(out.reply)["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    // audit: allowed, and the finding is in the queue.
    let mut config = Config::default();
    config.events.insert("PreToolUse".into(), false);
    let out = record(&bash("rm -rf /"), &config, None);
    assert_eq!(types(&out.entries), [("PreToolUse", false)]);
    assert_eq!(out.entries[0].decision.as_deref(), Some("allow"));
    // A call the gate could not read is a finding too (`risk: "unreadable"`).
    let out = record(
        &claude("PreToolUse", json!({"tool_name": "Bash", "tool_input": {}})),
        &config,
        None,
    );
    assert_eq!(out.entries.len(), 1, "{:?}", out.entries);
}

#[test]
fn an_empty_payload_records_nothing_unless_the_event_is_named() {
    let config = Config::default();
    for bytes in [&b""[..], b"  \n"] {
        assert!(prepare(&hook(bytes, "auto", None), &config, &mut quiet()).is_none());
    }
    let plan = prepare(
        &hook(b"", "copilot", Some("sessionEnd")),
        &config,
        &mut quiet(),
    )
    .expect("a named event is recorded");
    let out = plan.finish(None, &mut quiet());
    assert_eq!(types(&out.entries), [("SessionEnd", false)]);
    assert_eq!(out.entries[0].parse_error.as_deref(), Some("empty payload"));
    assert_eq!(out.entries[0].agent.as_deref(), Some("copilot"));
}

#[test]
fn a_truncated_payload_keeps_what_can_be_sniffed() {
    let config = Config::default();
    let full = claude("Stop", json!({"last_assistant_message": "x".repeat(100)})).to_string();
    let kept = &full.as_bytes()[..full.len() - 40];
    let hook = Hook {
        total_len: full.len() as u64,
        ..hook(kept, "auto", None)
    };
    assert!(hook.truncated());
    let plan = prepare(&hook, &config, &mut quiet()).expect("a plan");
    // The payload is not decoded, so no transcript path: the session's is looked for.
    let read = plan.transcript().cloned().unwrap();
    assert_eq!(
        (read.session.as_str(), read.location),
        ("s1", Location::Discover)
    );
    let out = plan.finish(None, &mut quiet());
    assert_eq!(types(&out.entries), [("Stop", false)]);
    let e = &out.entries[0];
    assert_eq!(e.truncated, Some(true));
    assert_eq!(e.session_id.as_deref(), Some("s1"));
    assert_eq!(e.size_bytes, full.len() as u64);
    assert_eq!(
        e.parse_error.as_deref(),
        Some("payload exceeds the size limit and was cut")
    );
    assert_eq!(e.response, None);
}

#[test]
fn invalid_utf8_is_replaced_and_noted() {
    let mut bytes = br#"{"session_id":"s1","hook_event_name":"Notification","message":"a"#.to_vec();
    bytes.extend([0xff, b'"', b'}']);
    let config = Config::default();
    let plan = prepare(&hook(&bytes, "auto", None), &config, &mut quiet()).unwrap();
    let out = plan.finish(None, &mut quiet());
    let e = &out.entries[0];
    assert_eq!(e.message.as_deref(), Some("a\u{fffd}"));
    assert!(e.parse_error.as_deref().unwrap().contains("invalid UTF-8"));
}

#[test]
fn queue_lines_stamp_the_time_and_leave_out_a_raw_payload_too_long() {
    let config = Config {
        log_level: LogLevel::Verbose,
        ..Config::default()
    };
    let payload = claude("Notification", json!({"message": "m".repeat(500)}));
    let mut out = record(&payload, &config, None);
    let lines = queue_lines(&mut out.entries, 7, 100_000, &mut quiet());
    assert_eq!(lines.len(), 1);
    let line: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert_eq!(line["hookExecutionMs"], 7);
    assert!(line.get("payload").is_some());

    let lines = queue_lines(&mut out.entries, 7, 800, &mut quiet());
    assert_eq!(lines.len(), 1, "the long line is replaced, not added to");
    let line: Value = serde_json::from_str(lines.lines().next().unwrap()).unwrap();
    assert!(line.get("payload").is_none());
    assert_eq!(
        line["message"].as_str().unwrap().len(),
        500,
        "the fields stay"
    );
}

#[test]
fn a_configuration_problem_is_noted_on_every_entry_harvested_ones_too() {
    let config = Config::default();
    let bytes = claude("PostToolUse", json!({"tool_name": "Edit"})).to_string();
    let note = "cmstore.toml: line 2: retention_days: not valid TOML; ignored";
    let hook = Hook {
        config_error: Some(note),
        ..hook(bytes.as_bytes(), "auto", None)
    };
    let plan = prepare(&hook, &config, &mut quiet()).expect("a plan");
    let out = plan.finish(Some(Turns::Harvested(vec![turn(1)])), &mut quiet());
    assert_eq!(
        types(&out.entries),
        [("PostToolUse", false), ("Stop", true)]
    );
    for entry in &out.entries {
        assert_eq!(
            entry.config_error.as_deref(),
            Some(note),
            "{}",
            entry.hook_type
        );
    }
    let clean = record(
        &json!({"hook_event_name": "Stop", "session_id": "s1"}),
        &config,
        None,
    );
    assert!(clean.entries.iter().all(|e| e.config_error.is_none()));
}

#[test]
fn session_end_records_turns_never_recorded_ahead_of_itself() {
    let config = Config::default();
    let planned = plan(&claude("SessionEnd", json!({"reason": "exit"})), &config);
    assert_eq!(planned.transcript().unwrap().kind, ReadKind::Close);
    let out = planned.finish(Some(Turns::Closed(vec![turn(1)])), &mut quiet());
    assert_eq!(types(&out.entries), [("Stop", true), ("SessionEnd", false)]);
    let manual = claude("PreCompact", json!({"trigger": "manual"}));
    assert_eq!(
        plan(&manual, &config).transcript().unwrap().kind,
        ReadKind::Compact { last_turn: true }
    );
}

#[test]
fn an_earlier_session_closed_in_the_workspace_is_recorded_as_its_own_and_redacted() {
    let config = Config::default();
    let payload = claude("UserPromptSubmit", json!({"prompt": "next"}));
    let mut plan = plan(&payload, &config);
    let mark = plan.workspace().expect("a workspace mark").clone();
    assert_eq!(mark.cwd, "/home/dev/project");
    assert_eq!(mark.seen.session, "s1");
    assert!(!mark.ending);
    let mut last = turn(7);
    last.assistant = format!("token {SECRET}");
    let old = crate::files::transcript::SeenSession {
        session: "s0".into(),
        transcript: "/t/s0.jsonl".into(),
        agent: Some("vscode".into()),
        participant: Some("copilot".into()),
        ended_ms: None,
        noted_ms: None,
    };
    plan.add_closed(old, vec![last]);
    let out = plan.finish(None, &mut quiet());
    assert_eq!(out.entries.len(), 2);
    let closed = &out.entries[0];
    assert_eq!(closed.hook_type, "Stop");
    assert_eq!(closed.synthetic, Some(true));
    assert_eq!(closed.session_id.as_deref(), Some("s0"));
    assert_eq!(closed.agent.as_deref(), Some("vscode"));
    assert_eq!(closed.transcript_path.as_deref(), Some("/t/s0.jsonl"));
    assert!(!closed.response.as_deref().unwrap().contains(SECRET));
    assert_eq!(out.entries[1].hook_type, "UserPromptSubmit");
}

#[test]
fn a_closed_session_goes_first_then_earlier_turns_the_event_and_harvested_ones() {
    let config = Config::default();
    let old = crate::files::transcript::SeenSession {
        session: "s0".into(),
        transcript: "/t/s0.jsonl".into(),
        agent: Some("claude".into()),
        participant: None,
        ended_ms: None,
        noted_ms: None,
    };
    let session = |e: &QueueEntry| e.session_id.clone().unwrap_or_default();
    let turn_of = |e: &QueueEntry| e.turn_id.clone().unwrap_or_default();

    let mut planned = plan(&claude("PostToolUse", json!({})), &config);
    planned.add_closed(old.clone(), vec![turn(7), turn(8)]);
    let out = planned.finish(Some(Turns::Harvested(vec![turn(1), turn(2)])), &mut quiet());
    assert_eq!(
        types(&out.entries),
        [
            ("Stop", true),
            ("Stop", true),
            ("PostToolUse", false),
            ("Stop", true),
            ("Stop", true)
        ]
    );
    let order: Vec<(String, String)> = out
        .entries
        .iter()
        .map(|e| (session(e), turn_of(e)))
        .collect();
    assert_eq!(order[0], ("s0".into(), "u7".into()));
    assert_eq!(order[1], ("s0".into(), "u8".into()));
    assert_eq!(order[2].0, "s1");
    assert_eq!(order[3], ("s1".into(), "u1".into()));
    assert_eq!(order[4], ("s1".into(), "u2".into()));

    let mut planned = plan(&claude("Stop", json!({})), &config);
    planned.add_closed(old, vec![turn(7)]);
    let turns = Turns::Finished {
        earlier: vec![turn(1)],
        last: FinalTurn::Fresh(turn(2)),
    };
    let out = planned.finish(Some(turns), &mut quiet());
    let order: Vec<(String, String, bool)> = out
        .entries
        .iter()
        .map(|e| (session(e), turn_of(e), e.synthetic == Some(true)))
        .collect();
    assert_eq!(
        order,
        [
            ("s0".into(), "u7".into(), true),
            ("s1".into(), "u1".into(), true),
            ("s1".into(), "u2".into(), false)
        ]
    );
}

#[test]
fn only_agents_whose_transcripts_are_read_get_a_workspace_mark() {
    let config = Config::default();
    let codex = json!({"hook_event_name": "Stop", "session_id": "c", "cwd": "/w",
        "transcript_path": "/h/.codex/sessions/r.jsonl"});
    assert!(plan_with(&codex, "codex", None, &config)
        .workspace()
        .is_none());
    let no_cwd = json!({"hook_event_name": "Stop", "session_id": "s",
        "transcript_path": "/h/.claude/projects/p/s.jsonl"});
    assert!(plan_with(&no_cwd, "claude", None, &config)
        .workspace()
        .is_none());
    let end = claude("SessionEnd", json!({}));
    assert!(plan(&end, &config).workspace().unwrap().ending);
    // Qoder CLI's transcripts are Claude Code's lines, closed the same way.
    let qoder = json!({"hook_event_name": "Stop", "session_id": "q", "cwd": "/w",
        "transcript_path": "/h/.qoder/projects/-w/q.jsonl"});
    let mark = plan_with(&qoder, "auto", None, &config)
        .workspace()
        .cloned()
        .expect("Qoder's workspace mark");
    assert_eq!(
        (mark.seen.agent.as_deref(), mark.seen.transcript.as_str()),
        (Some("qoder"), "/h/.qoder/projects/-w/q.jsonl")
    );
}

/// A cut payload of an agent whose session is not `session_id` still has its session: sniffed
/// from Windsurf's `trajectory_id`, or taken from Kiro's `KIRO_SESSION_ID`.
#[test]
fn a_truncated_payload_keeps_its_session_in_any_agents_key() {
    let config = Config::default();
    let full = json!({"agent_action_name": "post_cascade_response", "trajectory_id": "t-1",
                      "tool_info": {"response": "x".repeat(100)}})
    .to_string();
    let kept = &full.as_bytes()[..full.len() - 40];
    let windsurf = Hook {
        total_len: full.len() as u64,
        ..hook(kept, "windsurf", Some("post_cascade_response"))
    };
    let plan = prepare(&windsurf, &config, &mut quiet()).expect("a plan");
    assert_eq!(
        plan.finish(None, &mut quiet()).entries[0]
            .session_id
            .as_deref(),
        Some("t-1")
    );

    let full =
        json!({"hook_event_name": "stop", "cwd": "/w", "assistant_response": "y".repeat(100)})
            .to_string();
    let kept = &full.as_bytes()[..full.len() - 40];
    let vars = [(Agent::Kiro, "k-1".to_string())];
    let kiro = Hook {
        total_len: full.len() as u64,
        session_vars: &vars,
        ..hook(kept, "kiro", Some("stop"))
    };
    let plan = prepare(&kiro, &config, &mut quiet()).expect("a plan");
    assert_eq!(
        plan.finish(None, &mut quiet()).entries[0]
            .session_id
            .as_deref(),
        Some("k-1")
    );
}
