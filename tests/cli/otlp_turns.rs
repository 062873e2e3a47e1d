//! Turns on the road out: a Claude Code session written line by line as the agent writes its
//! transcript, its hooks fired through `capture` as Claude Code fires them (a turn interrupted
//! with Esc gets no Stop; a blocking Stop hook makes a second Stop; an API error gives
//! StopFailure), then `ingest` and `export otlp` into a collector in the test. The store and
//! the export must agree: one turn row and one span id per turn, every parent exported, the
//! hook's feedback no prompt.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::{json, Value};

use crate::common::{capture, entry, TestEnv};
use crate::otlp_collector::{attr, Collector};

const SESSION: &str = "5aab28de-0000-4000-8000-000000000032";

/// A session in progress: its transcript, and the hooks fired into the store's home.
struct Claude<'e> {
    env: &'e TestEnv,
    transcript: PathBuf,
    lines: usize,
    parent: Option<String>,
}

impl<'e> Claude<'e> {
    fn new(env: &'e TestEnv) -> Self {
        let dir = env.user_home().join(".claude/projects/-work-demo");
        std::fs::create_dir_all(&dir).unwrap();
        let transcript = dir.join(format!("{SESSION}.jsonl"));
        std::fs::write(&transcript, "").unwrap();
        Claude {
            env,
            transcript,
            lines: 0,
            parent: None,
        }
    }

    /// Appends one transcript line of `kind` with `fields`, dated now, chained to the last.
    fn write(&mut self, kind: &str, fields: Value) -> String {
        // Lines a millisecond apart at least: hooks and lines are ordered by time as well.
        std::thread::sleep(Duration::from_millis(3));
        self.lines += 1;
        let uuid = format!("00000000-0000-4000-8000-{:012}", self.lines);
        let mut line = json!({
            "parentUuid": self.parent,
            "isSidechain": false,
            "userType": "external",
            "cwd": "/work/demo",
            "sessionId": SESSION,
            "version": "2.1.111",
            "type": kind,
            "uuid": uuid,
            "timestamp": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        });
        for (k, v) in fields.as_object().unwrap() {
            line[k] = v.clone();
        }
        let mut file = OpenOptions::new()
            .append(true)
            .open(&self.transcript)
            .unwrap();
        writeln!(file, "{line}").unwrap();
        self.parent = Some(uuid.clone());
        uuid
    }

    fn user_text(&mut self, text: &str) {
        self.write(
            "user",
            json!({"message": {"role": "user", "content": [{"type": "text", "text": text}]}}),
        );
    }

    fn assistant(&mut self, id: &str, content: Value) {
        self.write(
            "assistant",
            json!({"requestId": format!("req_{id}"), "message": {
                "id": format!("msg_{id}"), "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5-20250929", "content": content,
                "usage": {"input_tokens": 10, "output_tokens": 5,
                          "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}}}),
        );
    }

    /// Fires `event` with the payload fields every Claude Code hook carries, and `fields`.
    fn hook(&self, event: &str, fields: Value) -> Value {
        std::thread::sleep(Duration::from_millis(3));
        let mut payload = json!({
            "session_id": SESSION,
            "transcript_path": self.transcript.to_string_lossy(),
            "cwd": "/work/demo",
            "permission_mode": "default",
            "hook_event_name": event,
        });
        for (k, v) in fields.as_object().unwrap() {
            payload[k] = v.clone();
        }
        capture(self.env, payload.to_string(), &[])
    }

    fn prompt(&mut self, text: &str) {
        self.hook("UserPromptSubmit", json!({"prompt": text}));
        self.write(
            "user",
            json!({"message": {"role": "user", "content": text}}),
        );
    }

    /// A Bash call and its result, with both tool hooks.
    fn bash(&mut self, call: &str, command: &str) {
        let input = json!({"command": command});
        self.assistant(
            call,
            json!([{"type": "tool_use", "id": call, "name": "Bash", "input": input}]),
        );
        let tool = json!({"tool_name": "Bash", "tool_input": input, "tool_use_id": call});
        self.hook("PreToolUse", tool.clone());
        self.write(
            "user",
            json!({"message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call, "content": "ok"}]}}),
        );
        let mut post = tool;
        post["tool_response"] = json!({"stdout": "ok", "stderr": "", "interrupted": false});
        self.hook("PostToolUse", post);
    }

    fn answer(&mut self, id: &str, text: &str) {
        self.assistant(id, json!([{"type": "text", "text": text}]));
    }

    fn stop(&self, again: bool, last: &str) {
        self.hook(
            "Stop",
            json!({"stop_hook_active": again, "last_assistant_message": last}),
        );
    }
}

/// The session of the issue's three cases, between two ordinary turns.
fn session(env: &TestEnv) {
    let mut c = Claude::new(env);
    // 1. An ordinary turn.
    c.prompt("one: list the files");
    c.bash("toolu_01", "ls");
    c.answer("a1", "Two files.");
    c.stop(false, "Two files.");
    // 2. Interrupted with Esc while a tool ran: no Stop.
    c.prompt("two: run the slow suite");
    c.bash("toolu_02", "make slow-test");
    c.user_text("[Request interrupted by user for tool use]");
    // 3. A blocking Stop hook: Claude Code writes its reason as a user line, the model
    //    answers it in the same turn, and Stop fires again.
    c.prompt("three: fix the build");
    c.bash("toolu_03", "make");
    c.answer("a3", "The build passes.");
    c.stop(false, "The build passes.");
    c.user_text("Stop hook feedback:\n- [make test]: 2 tests fail\n");
    c.bash("toolu_04", "make test");
    c.answer("a4", "Fixed the two tests; all pass.");
    c.stop(true, "Fixed the two tests; all pass.");
    // 4. An API error ends the turn: StopFailure, no Stop.
    c.prompt("four: and the docs");
    c.bash("toolu_05", "ls docs");
    c.write(
        "assistant",
        json!({"isApiErrorMessage": true, "message": {"id": "err", "role": "assistant",
               "model": "<synthetic>", "content": [{"type": "text",
               "text": "API Error: 529 overloaded"}]}}),
    );
    c.hook("StopFailure", json!({"error": "overloaded"}));
    // 5. One more ordinary turn, then the end.
    c.prompt("five: thanks");
    c.answer("a5", "You're welcome.");
    c.stop(false, "You're welcome.");
    c.hook("SessionEnd", json!({"reason": "prompt_input_exit"}));
}

type TurnRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// `(prompt, response, outcome, feedback)` of every turn, in time order.
fn turn_rows(env: &TestEnv) -> Vec<TurnRow> {
    let conn = env.conn();
    let mut stmt = conn
        .prepare("SELECT prompt, response, outcome, feedback FROM turns ORDER BY ts, rowid")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    rows
}

fn export(env: &TestEnv, collector: &Collector) {
    env.cmd()
        .args(["export", "otlp", "--endpoint", &collector.base()])
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
}

fn hex(id: &[u8]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_turn(span: &Span) -> bool {
    span.name.starts_with("invoke_agent") && span.parent_span_id.is_empty()
}

#[test]
fn interrupted_blocked_and_failed_turns_are_one_row_and_one_span_id_each() {
    let env = TestEnv::new();
    session(&env);
    env.ingest_once();

    let s = |t: &str| Some(t.to_string());
    let rows = turn_rows(&env);
    assert_eq!(
        rows,
        [
            (s("one: list the files"), s("Two files."), None, None),
            (s("two: run the slow suite"), None, s("interrupted"), None),
            (
                s("three: fix the build"),
                s("Fixed the two tests; all pass."),
                None,
                s("Stop hook feedback:\n- [make test]: 2 tests fail")
            ),
            (s("four: and the docs"), None, s("failed"), None),
            (s("five: thanks"), s("You're welcome."), None, None),
        ],
        "one row per turn; the feedback is the turn's, no prompt"
    );

    let collector = Collector::start();
    export(&env, &collector);
    let spans = collector.spans();
    let ids: BTreeSet<String> = spans.iter().map(|s| hex(&s.span_id)).collect();

    // Every parent named is a span that was sent.
    for span in &spans {
        if !span.parent_span_id.is_empty() {
            assert!(
                ids.contains(&hex(&span.parent_span_id)),
                "{} names a parent never sent",
                span.name
            );
        }
    }
    // One span id per turn: the turns' ids are distinct, and a turn sent twice (the Stop a
    // blocking hook repeated) is sent under its one id.
    let turns: BTreeMap<String, Vec<&Span>> =
        spans
            .iter()
            .filter(|s| is_turn(s))
            .fold(BTreeMap::new(), |mut by_id, span| {
                by_id.entry(hex(&span.span_id)).or_default().push(span);
                by_id
            });
    assert_eq!(turns.len(), 5, "five turns, five span ids");
    let by_outcome = |outcome: &str| -> Vec<&&Span> {
        turns
            .values()
            .flatten()
            .filter(|s| attr(s, "cmstore.turn.outcome").as_deref() == Some(outcome))
            .collect()
    };
    assert_eq!(by_outcome("interrupted").len(), 1);
    let failed = by_outcome("failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(
        failed[0].status.as_ref().map(|s| s.code),
        Some(2),
        "a failed turn has the error status"
    );
    let twice: Vec<&Vec<&Span>> = turns.values().filter(|v| v.len() > 1).collect();
    assert_eq!(twice.len(), 1, "only the blocked turn is sent twice");
    assert!(
        twice[0][1].end_time_unix_nano > twice[0][0].end_time_unix_nano,
        "the later Stop sends the turn with its later end"
    );

    // Each turn's calls are its children: the interrupted turn's included.
    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "execute_tool Bash")
        .collect();
    let calls: BTreeSet<String> = tools.iter().map(|s| hex(&s.span_id)).collect();
    assert_eq!((tools.len(), calls.len()), (5, 5), "one span per call");
    assert!(
        tools
            .iter()
            .all(|t| t.end_time_unix_nano > t.start_time_unix_nano),
        "a call without a reported duration lasts from its PreToolUse"
    );
    let children = |turn: &str| {
        tools
            .iter()
            .filter(|t| hex(&t.parent_span_id) == turn)
            .count()
    };
    let per_turn: Vec<usize> = turns.keys().map(|id| children(id)).collect();
    assert_eq!(per_turn.iter().sum::<usize>(), 5, "{per_turn:?}");
    assert_eq!(
        children(&hex(&by_outcome("interrupted")[0].span_id)),
        1,
        "the interrupted turn's call is its child"
    );
    assert_eq!(
        children(&hex(&twice[0][0].span_id)),
        2,
        "the blocked turn's calls, before and after the feedback"
    );

    // The same ids on a re-export, to another destination.
    let again = Collector::start();
    export(&env, &again);
    let ids_again: BTreeSet<String> = again.spans().iter().map(|s| hex(&s.span_id)).collect();
    assert_eq!(ids, ids_again);
}

#[test]
fn show_presents_the_hook_feedback_as_the_hooks_not_as_a_prompt() {
    let env = TestEnv::new();
    session(&env);
    env.ingest_once();
    let out = env
        .cmd()
        .args(["show", SESSION, "--no-pager"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let labelled = |label: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(label))
            .collect()
    };
    assert!(
        labelled("prompt")
            .iter()
            .all(|l| !l.contains("Stop hook feedback")),
        "{text}"
    );
    let hooks = labelled("hook");
    assert_eq!(hooks.len(), 1, "{text}");
    assert!(hooks[0].contains("[make test]: 2 tests fail"), "{text}");
    let outcomes: Vec<&str> = labelled("answer")
        .into_iter()
        .filter(|l| l.contains("[interrupted]") || l.contains("[failed]"))
        .collect();
    assert_eq!(outcomes.len(), 2, "{text}");
}

/// Fires each of `payloads` (`hook_event_name` and the fields beside those of `base`).
fn fire(env: &TestEnv, base: &Value, payloads: &[Value]) {
    for fields in payloads {
        let mut payload = base.clone();
        for (k, v) in fields.as_object().unwrap() {
            payload[k] = v.clone();
        }
        capture(env, payload.to_string(), &[]);
        std::thread::sleep(Duration::from_millis(3));
    }
}

/// The turn spans (roots) and the tool calls' parents of an export of `env`.
fn turns_and_parents(env: &TestEnv) -> (Vec<Span>, Vec<String>) {
    let collector = Collector::start();
    export(env, &collector);
    let spans = collector.spans();
    let parents = spans
        .iter()
        .filter(|s| s.name.starts_with("execute_tool"))
        .map(|s| hex(&s.parent_span_id))
        .collect();
    (spans.into_iter().filter(is_turn).collect(), parents)
}

#[test]
fn a_codex_turn_ended_by_interrupt_is_a_span_named_by_its_prompt() {
    let env = TestEnv::new();
    let base = json!({"session_id": "cx-1", "cwd": "/w", "model": "gpt-5-codex",
                      "transcript_path": "/nonexistent/rollout.jsonl"});
    let turn = |id: &str, event: &str| json!({"turn_id": id, "hook_event_name": event});
    let tool = |id: &str, event: &str, call: &str| {
        let mut t = turn(id, event);
        t["tool_name"] = json!("Bash");
        t["tool_input"] = json!({"command": "sleep 60"});
        t["tool_use_id"] = json!(call);
        t["tool_response"] = json!("done");
        t
    };
    let mut prompt = turn("t1", "UserPromptSubmit");
    prompt["prompt"] = json!("wait a minute");
    let mut next = turn("t2", "UserPromptSubmit");
    next["prompt"] = json!("never mind");
    fire(
        &env,
        &base,
        &[
            prompt,
            tool("t1", "PreToolUse", "call_0"),
            tool("t1", "PostToolUse", "call_0"),
            turn("t1", "Interrupt"),
            next,
            tool("t2", "PreToolUse", "call_1"),
            tool("t2", "PostToolUse", "call_1"),
            turn("t2", "Stop"),
        ],
    );
    env.ingest_once();
    assert_eq!(
        env.text("SELECT group_concat(coalesce(outcome, '-'), ',') FROM turns ORDER BY ts"),
        "interrupted,-"
    );
    let (turns, parents) = turns_and_parents(&env);
    let ids: Vec<String> = turns.iter().map(|s| hex(&s.span_id)).collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
    assert_eq!(
        attr(&turns[0], "cmstore.turn.outcome").as_deref(),
        Some("interrupted")
    );
    assert_eq!(parents, ids, "each call under its own turn");
}

#[test]
fn a_gemini_prompt_never_answered_is_a_span_its_calls_name_as_parent() {
    let env = TestEnv::new();
    let base = json!({"session_id": "gem-9", "cwd": "/w",
                      "transcript_path": "/nonexistent/.gemini/tmp/p/chats/session-9.json"});
    let event = |name: &str| json!({"hook_event_name": name});
    let tool = |name: &str| {
        let mut t = event(name);
        t["tool_name"] = json!("run_shell_command");
        t["tool_input"] = json!({"command": "sleep 60"});
        t["tool_response"] = json!({"llmContent": "ok", "returnDisplay": "ok"});
        t
    };
    let prompt = |text: &str| {
        let mut p = event("BeforeAgent");
        p["prompt"] = json!(text);
        p
    };
    let mut answer = event("AfterAgent");
    answer["prompt_response"] = json!("done");
    let mut end = event("SessionEnd");
    end["reason"] = json!("exit");
    fire(
        &env,
        &base,
        &[
            prompt("first"),
            tool("BeforeTool"),
            tool("AfterTool"),
            // Cancelled: no AfterAgent before the next prompt.
            prompt("second"),
            tool("BeforeTool"),
            tool("AfterTool"),
            answer,
            prompt("third"),
            tool("BeforeTool"),
            tool("AfterTool"),
            // The session ends with the third unanswered too.
            end,
        ],
    );
    env.ingest_once();
    assert_eq!(
        env.text("SELECT group_concat(coalesce(outcome, '-'), ',') FROM turns ORDER BY ts"),
        "interrupted,-,interrupted"
    );
    let (turns, parents) = turns_and_parents(&env);
    let ids: Vec<String> = turns.iter().map(|s| hex(&s.span_id)).collect();
    assert_eq!(ids.len(), 3, "one span per turn");
    let mut sorted_parents = parents.clone();
    sorted_parents.sort();
    let mut sorted_ids = ids.clone();
    sorted_ids.sort();
    assert_eq!(sorted_parents, sorted_ids, "each call under its own turn");
    let outcomes: Vec<Option<String>> = turns
        .iter()
        .map(|s| attr(s, "cmstore.turn.outcome"))
        .collect();
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| o.as_deref() == Some("interrupted"))
            .count(),
        2
    );
}

/// A Stop with the turn id of an earlier Stop, after a prompt the agent never answered (a
/// local command, a prompt a hook blocked): the same turn, the same span id, the first
/// Stop's prompt.
#[test]
fn a_turn_ended_again_after_an_unanswered_prompt_keeps_its_one_span_id() {
    let env = TestEnv::new();
    let t0 = 1_780_000_000_000;
    let mut at = 0;
    let mut line = |hook: &str, turn: Option<&str>, prompt: Option<&str>| {
        at += 100;
        let mut e = entry(hook, "s-first-end");
        e.timestamp = t0 + at;
        e.turn_id = turn.map(str::to_string);
        e.prompt = prompt.map(str::to_string);
        e
    };
    let lines = [
        line("UserPromptSubmit", None, Some("one")),
        line("Stop", Some("T1"), Some("one")),
        line("UserPromptSubmit", None, Some("/compact")),
        line("Stop", Some("T1"), None),
        line("UserPromptSubmit", None, Some("two")),
        line("Stop", Some("T2"), Some("two")),
    ];
    let prompt_ids = [lines[0].id.clone(), lines[4].id.clone()];
    env.append(&lines.iter().map(|e| e.to_line()).collect::<Vec<_>>());
    env.ingest_once();
    assert_eq!(env.int("SELECT count(*) FROM turns"), 2);
    let (turns, _) = turns_and_parents(&env);
    let prompts: Vec<String> = turns
        .iter()
        .map(|s| attr(s, "cmstore.prompt.event.id").unwrap_or_default())
        .collect();
    assert_eq!(
        prompts,
        [
            prompt_ids[0].clone(),
            prompt_ids[0].clone(),
            prompt_ids[1].clone()
        ],
        "the second Stop of T1 names T1's prompt"
    );
    let ids: BTreeSet<String> = turns.iter().map(|s| hex(&s.span_id)).collect();
    assert_eq!(ids.len(), 2, "two turns, two span ids");
}

/// Migration 0024: a turn stored before, whose "prompt" is a hook's feedback, keeps its row
/// and has the text as its feedback; a person's prompt that mentions such feedback stays.
#[test]
fn a_store_from_before_0024_moves_hook_feedback_out_of_prompts() {
    let env = TestEnv::new();
    // Lines as an older capture wrote them: the feedback as the prompt.
    let stop = |prompt: &str| {
        let mut e = entry("Stop", "s-0024");
        e.prompt = Some(prompt.to_string());
        e.to_line()
    };
    env.append(&[
        stop("Stop hook feedback:\n- [make test]: 2 tests fail"),
        stop("Bash operation feedback:\n- [lint]: error"),
        stop("why did the Stop hook feedback: say that?"),
    ]);
    env.ingest_once();
    crate::summarize::back_to_0023(&env.rw());
    env.ingest_once();
    assert_eq!(
        env.text(
            "SELECT group_concat(coalesce(prompt, '-') || ' | ' || coalesce(feedback, '-'), ' / ')
             FROM (SELECT prompt, feedback FROM turns ORDER BY ts, rowid)"
        ),
        "- | Stop hook feedback:\n- [make test]: 2 tests fail / \
         - | Bash operation feedback:\n- [lint]: error / \
         why did the Stop hook feedback: say that? | -"
    );
}

/// The hooks of a Gemini CLI session in which an `AfterAgent` hook of the user's blocks twice,
/// as Gemini CLI 0.61 fires them (seen in tests/e2e/gemini.rs): each block sends the reason
/// as a new `BeforeAgent` prompt, then `AfterAgent` again with `stop_hook_active: true`, the
/// person's prompt and every answer so far. A tool call runs in the continued turn.
fn gemini_blocked_twice() -> Vec<Value> {
    let prompt = |text: &str| json!({"hook_event_name": "BeforeAgent", "prompt": text});
    let answer = |prompt: &str, again: bool, text: &str| {
        json!({"hook_event_name": "AfterAgent", "prompt": prompt, "prompt_response": text,
               "stop_hook_active": again})
    };
    let tool = |name: &str| {
        json!({"hook_event_name": name, "tool_name": "run_shell_command",
               "tool_input": {"command": "make test"},
               "tool_response": {"llmContent": "ok", "returnDisplay": "ok"}})
    };
    vec![
        prompt("fix the build"),
        answer("fix the build", false, "Done."),
        prompt("2 tests fail"),
        tool("BeforeTool"),
        tool("AfterTool"),
        answer("fix the build", true, "Done.\nFixed two."),
        prompt("1 test fails"),
        answer("fix the build", true, "Done.\nFixed two.\nFixed the last."),
        prompt("thanks"),
        answer("thanks", false, "You're welcome."),
        json!({"hook_event_name": "SessionEnd", "reason": "exit"}),
    ]
}

const GEMINI_BASE: &str = r#"{"session_id": "gem-block", "cwd": "/w",
    "transcript_path": "/nonexistent/.gemini/tmp/p/chats/session-block.json"}"#;

/// Issue 32, Gemini's blocking AfterAgent: one turn with the person's prompt, the last answer
/// and both reasons as its feedback; the reasons neither prompts nor turns, in the rollups,
/// `show` and the export; the same whether ingest reads the lines at once or one by one.
#[test]
fn a_gemini_turn_a_stop_hook_blocked_is_one_turn_with_its_feedback() {
    let base: Value = serde_json::from_str(GEMINI_BASE).unwrap();
    let at_once = TestEnv::new();
    fire(&at_once, &base, &gemini_blocked_twice());
    at_once.ingest_once();
    let one_by_one = TestEnv::new();
    for payload in gemini_blocked_twice() {
        fire(&one_by_one, &base, &[payload]);
        one_by_one.ingest_once();
    }
    let s = |t: &str| Some(t.to_string());
    for env in [&at_once, &one_by_one] {
        assert_eq!(
            turn_rows(env),
            vec![
                (
                    s("fix the build"),
                    s("Done.\nFixed two.\nFixed the last."),
                    None,
                    s("2 tests fail\n1 test fails")
                ),
                (s("thanks"), s("You're welcome."), None, None),
            ]
        );
        let prompts = "SELECT group_concat(prompt, '|') FROM (SELECT prompt FROM events \
                       WHERE hook_type = 'UserPromptSubmit' ORDER BY seq)";
        assert_eq!(env.text(prompts), "fix the build|thanks");
        assert_eq!(
            env.int("SELECT count(*) FROM events WHERE hook_type = 'HookFeedback'"),
            2,
            "the reasons' events are kept"
        );
        assert_eq!(env.int("SELECT prompts FROM sessions"), 2);
        assert_eq!(env.int("SELECT sum(prompts) FROM hourly_sessions"), 2);
        assert_eq!(env.int("SELECT stops FROM sessions"), 4, "every firing");
    }

    let (turns, parents) = turns_and_parents(&at_once);
    let ids: BTreeSet<String> = turns.iter().map(|s| hex(&s.span_id)).collect();
    assert_eq!(ids.len(), 2, "two turns, two span ids: {turns:?}");
    assert_eq!(parents.len(), 1);
    let person = at_once.text(
        "SELECT id FROM events WHERE hook_type = 'UserPromptSubmit' AND prompt = 'fix the build'",
    );
    let named: Vec<String> = turns
        .iter()
        .filter(|t| attr(t, "cmstore.prompt.event.id").as_deref() == Some(person.as_str()))
        .map(|t| hex(&t.span_id))
        .collect();
    assert_eq!(named.len(), 3, "each of its three Stops, under one span id");
    assert!(named.iter().all(|id| id == &named[0]));
    assert_eq!(parents, [named[0].clone()], "the call is the turn's");

    let out = at_once
        .cmd()
        .args(["show", "gem-block", "--no-pager"])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let labelled = |label: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(label))
            .collect()
    };
    assert_eq!(labelled("prompt").len(), 2, "{text}");
    assert!(
        labelled("prompt").iter().all(|l| !l.contains("fail")),
        "{text}"
    );
    let hooks = labelled("hook");
    assert!(
        hooks.iter().any(|l| l.contains("2 tests fail"))
            && hooks.iter().any(|l| l.contains("1 test fails")),
        "{text}"
    );

    // Pruned whole, the rollups are left with nothing (no prompt taken back twice).
    at_once
        .cmd()
        .args(["prune", "--before", "now", "--yes"])
        .assert()
        .success();
    assert_eq!(at_once.int("SELECT count(*) FROM hourly_sessions"), 0);
}
