//! `[budget]`: limits on what the agents spend, counted by ingest into the spend file and
//! applied by capture without opening the database: a warning once per session past
//! `warn_at`, tool calls denied and prompts refused past a limit in enforce mode (each agent's
//! reply shape), recorded only in audit mode; `cmstore budget` and `gate report` show them.

use std::fs;

use serde_json::{json, Value};

use crate::common::{capture, json_rows, read_lines, TestEnv};

/// A Stop line of `agent`'s session `session` in `cwd` carrying one response of
/// `claude-sonnet-4-5` ($3 per million input tokens, $15 per million output) or, for
/// `gpt-5-unpriced`, of a model no price table knows.
fn usage_line(agent: &str, session: &str, cwd: &str, message: &str, model: &str) -> String {
    let ts = chrono::Utc::now().timestamp_millis() - 1000;
    json!({"hookType": "Stop", "timestamp": ts, "sessionId": session, "cwd": cwd,
           "id": uuid_for(message), "v": 1, "agent": agent,
           "usage": [{"messageId": message, "model": model, "input": 100_000, "output": 20_000,
                      "cacheWrite": 0, "cacheRead": 0, "ts": ts, "offset": 1}],
           "sizeBytes": 1, "estimatedTokens": 1, "hookExecutionMs": 0})
    .to_string()
}

/// A fixed UUID per message, so a line appended again is the same line.
fn uuid_for(message: &str) -> String {
    let n: u64 = message
        .bytes()
        .fold(7, |h, b| h.wrapping_mul(31).wrapping_add(b.into()));
    format!("01a00000-0000-7000-8000-{:012x}", n & 0xffff_ffff_ffff)
}

/// $0.60: 100,000 input and 20,000 output tokens of claude-sonnet-4-5.
const ONE_RESPONSE_USD: &str = "$0.60";

fn set_config(env: &TestEnv, text: &str) {
    fs::create_dir_all(env.home()).unwrap();
    fs::write(env.home().join("cmstore.toml"), text).unwrap();
}

/// A PreToolUse of `agent` running `ls` in its shell tool, and its hook's capture flags.
fn tool_call(agent: &str, session: &str, cwd: &str) -> (Value, Vec<&'static str>) {
    match agent {
        "claude" => (
            json!({"session_id": session, "hook_event_name": "PreToolUse", "cwd": cwd,
                   "tool_name": "Bash", "tool_input": {"command": "ls"}}),
            vec!["--agent", "claude"],
        ),
        "vscode" => (
            json!({"timestamp": "2026-03-20T10:30:00.000Z", "hook_event_name": "PreToolUse",
                   "session_id": session, "cwd": cwd, "tool_name": "run_in_terminal",
                   "tool_input": {"command": "ls", "isBackground": false}}),
            vec!["--agent", "vscode"],
        ),
        "copilot" => (
            json!({"timestamp": 1704614600000u64, "cwd": cwd, "sessionId": session,
                   "toolName": "bash", "toolArgs": json!({"command": "ls"}).to_string()}),
            vec!["--agent", "copilot", "--event", "preToolUse"],
        ),
        "codex" => (
            json!({"session_id": session, "hook_event_name": "PreToolUse", "cwd": cwd,
                   "turn_id": "t1", "model": "gpt-5",
                   "tool_name": "shell", "tool_input": {"command": ["bash", "-lc", "ls"]}}),
            vec!["--agent", "codex"],
        ),
        "gemini" => (
            json!({"session_id": session, "hook_event_name": "BeforeTool", "cwd": cwd,
                   "timestamp": "2026-01-01T00:00:00Z",
                   "tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
            vec!["--agent", "gemini"],
        ),
        "cursor" => (
            json!({"conversation_id": session, "generation_id": "g1",
                   "hook_event_name": "preToolUse", "workspace_roots": [cwd], "cwd": cwd,
                   "tool_name": "Shell", "tool_input": {"command": "ls"}}),
            vec!["--agent", "cursor"],
        ),
        other => panic!("no payload for {other}"),
    }
}

/// A prompt of `agent`, and its hook's capture flags.
fn prompt(agent: &str, session: &str, cwd: &str) -> (Value, Vec<&'static str>) {
    match agent {
        "claude" | "codex" => (
            json!({"session_id": session, "hook_event_name": "UserPromptSubmit", "cwd": cwd,
                   "prompt": "go on"}),
            vec![
                "--agent",
                if agent == "claude" { "claude" } else { "codex" },
            ],
        ),
        "gemini" => (
            json!({"session_id": session, "hook_event_name": "BeforeAgent", "cwd": cwd,
                   "timestamp": "2026-01-01T00:00:00Z", "prompt": "go on"}),
            vec!["--agent", "gemini"],
        ),
        "copilot" => (
            json!({"timestamp": 1704614600000u64, "cwd": cwd, "sessionId": session,
                   "prompt": "go on"}),
            vec!["--agent", "copilot", "--event", "userPromptSubmitted"],
        ),
        "cursor" => (
            json!({"conversation_id": session, "generation_id": "g1",
                   "hook_event_name": "beforeSubmitPrompt", "workspace_roots": [cwd],
                   "prompt": "go on"}),
            vec!["--agent", "cursor"],
        ),
        other => panic!("no payload for {other}"),
    }
}

fn run(env: &TestEnv, (payload, args): (Value, Vec<&str>)) -> Value {
    capture(env, payload.to_string(), &args)
}

/// The queue's line whose `sessionId` is `session`, the last one.
fn last_line_of(env: &TestEnv, session: &str) -> Value {
    read_lines(&env.queue())
        .into_iter()
        .rev()
        .find(|l| l["sessionId"] == session)
        .unwrap_or_else(|| panic!("no line of {session}"))
}

/// The deny reason in the reply of each agent's tool-call hook.
fn deny_reason(agent: &str, reply: &Value) -> String {
    let reason = match agent {
        "claude" | "vscode" | "codex" => {
            assert_eq!(
                reply["hookSpecificOutput"]["permissionDecision"], "deny",
                "{agent}: {reply}"
            );
            &reply["hookSpecificOutput"]["permissionDecisionReason"]
        }
        "copilot" => {
            assert_eq!(reply["permissionDecision"], "deny", "{reply}");
            &reply["permissionDecisionReason"]
        }
        "gemini" => {
            assert_eq!(reply["decision"], "deny", "{reply}");
            &reply["reason"]
        }
        "cursor" => {
            assert_eq!(reply["permission"], "deny", "{reply}");
            &reply["user_message"]
        }
        other => panic!("{other}"),
    };
    reason.as_str().unwrap().to_string()
}

#[test]
fn past_warn_at_the_agent_is_told_once_then_every_agent_is_refused_past_the_limit() {
    let env = TestEnv::new();
    set_config(
        &env,
        "[budget]\nmode = \"enforce\"\nday = 1\nwarn_at = 0.5\n",
    );
    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/app",
        "m1",
        "claude-sonnet-4-5",
    )]);
    env.ingest_once();

    // 60 % of the day's dollar: the agent is told on its first prompt, once per session.
    let warning =
        format!("cmstore budget: {ONE_RESPONSE_USD} spent of the daily budget of $1.00 (60 %).");
    let told = run(&env, prompt("claude", "s1", "/w/app"));
    assert_eq!(told["systemMessage"], warning.as_str(), "{told}");
    assert_eq!(
        told["hookSpecificOutput"]["additionalContext"],
        warning.as_str()
    );
    let line = last_line_of(&env, "s1");
    assert_eq!(line["budget"]["limit"], "day.usd");
    assert_eq!(line["budget"]["level"], "warn");
    assert_eq!(run(&env, prompt("claude", "s1", "/w/app")), json!({}));
    assert!(last_line_of(&env, "s1").get("budget").is_none());
    assert_eq!(run(&env, tool_call("claude", "s1", "/w/app")), json!({}));
    let other_session = run(&env, prompt("claude", "s2", "/w/app"));
    assert_eq!(other_session["systemMessage"], warning.as_str());

    // $1.20: past the limit. Every agent's tool call is denied in its own shape.
    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/app",
        "m2",
        "claude-sonnet-4-5",
    )]);
    env.ingest_once();
    let config = env.home().join("cmstore.toml");
    for agent in ["claude", "vscode", "copilot", "codex", "gemini", "cursor"] {
        let session = format!("{agent}-1");
        let reply = run(&env, tool_call(agent, &session, "/w/app"));
        let reason = deny_reason(agent, &reply);
        assert!(
            reason.starts_with(&format!(
                "Blocked by cmstore budget: $1.20 spent of the daily budget of $1.00 — raise \
                 budget.day in {}, or set budget.mode = \"audit\" there, to go on",
                config.display()
            )),
            "{agent}: {reason}"
        );
        let line = last_line_of(&env, &session);
        assert_eq!(line["risk"], "budget:day.usd", "{agent}: {line}");
        assert_eq!(line["decision"], "deny");
        assert_eq!(line["budget"]["level"], "over");
        assert_eq!(line["budget"]["mode"], "enforce");
        assert_eq!(line["budget"]["spent"], 1.2);
        assert_eq!(line["budget"]["allowed"], 1.0);
    }
    // Prompts are refused where the agent's prompt hook can refuse one.
    let refused = |agent: &str| run(&env, prompt(agent, &format!("{agent}-1"), "/w/app"));
    assert_eq!(refused("claude")["decision"], "block");
    assert_eq!(refused("codex")["decision"], "block");
    assert_eq!(refused("gemini")["decision"], "deny");
    assert_eq!(refused("cursor")["continue"], false);
    // Copilot CLI reads no reply to a prompt: it goes on, and its line says what was crossed.
    assert_eq!(refused("copilot"), json!({}));
    let copilot = last_line_of(&env, "copilot-1");
    assert_eq!(copilot["hookType"], "UserPromptSubmit");
    assert_eq!(copilot["budget"]["level"], "over");
    assert!(copilot.get("decision").is_none());
    let claude_prompt = last_line_of(&env, "claude-1");
    assert_eq!(claude_prompt["decision"], "deny");

    // The gate's record counts the budget as a rule: six calls denied by it.
    env.ingest_once();
    let rows = json_rows(&env, &["gate", "report"]);
    let budget: Vec<&Value> = rows
        .iter()
        .filter(|r| r["rule"] == "budget:day.usd")
        .collect();
    let denied: i64 = budget.iter().map(|r| r["denied"].as_i64().unwrap()).sum();
    assert_eq!(denied, 6, "{rows:#?}");

    // Replayed: the same limit in audit mode allows the six; without the limit nothing flags
    // them; in enforce mode nothing changes.
    let replay = |name: &str, text: &str| -> Value {
        let path = env.dir.path().join(name);
        fs::write(&path, text).unwrap();
        json_rows(
            &env,
            &["gate", "replay", "--config", path.to_str().unwrap()],
        )
        .into_iter()
        .find(|r| r["rule"] == "budget:day.usd")
        .unwrap_or_else(|| panic!("no budget row"))
    };
    let audit = replay("audit.toml", "[budget]\nday = 1\n");
    assert_eq!(audit["flagged_after"], 6, "{audit}");
    assert_eq!(audit["newly_allowed"], 6, "{audit}");
    let gone = replay("none.toml", "");
    assert_eq!(gone["flagged_after"], 0, "{gone}");
    assert_eq!(gone["newly_allowed"], 6, "{gone}");
    let same = replay("same.toml", "[budget]\nmode = \"enforce\"\nday = 1\n");
    assert_eq!(same["unchanged"], 6, "{same}");
    assert_eq!(same["denied_after"], 6, "{same}");
    let text = crate::common::run_at_100(
        &env,
        &[
            "gate",
            "replay",
            "--format",
            "table",
            "--config",
            env.dir.path().join("same.toml").to_str().unwrap(),
        ],
    );
    assert!(
        text.contains("6 calls were past a budget limit: each is judged by the new [budget] mode"),
        "{text}"
    );
}

#[test]
fn in_audit_mode_a_call_past_the_limit_is_recorded_and_goes_on() {
    let env = TestEnv::new();
    set_config(&env, "[budget]\nday = 1\n");
    env.append(&[
        usage_line("claude", "s0", "/w/app", "m1", "claude-sonnet-4-5"),
        usage_line("claude", "s0", "/w/app", "m2", "claude-sonnet-4-5"),
    ]);
    env.ingest_once();
    assert_eq!(run(&env, tool_call("claude", "s1", "/w/app")), json!({}));
    let line = last_line_of(&env, "s1");
    assert_eq!(line["risk"], "budget:day.usd");
    assert_eq!(line["decision"], "allow");
    assert_eq!(line["budget"]["mode"], "audit");
    // The agent is told once that the budget is spent; its prompt goes on.
    let told = run(&env, prompt("claude", "s1", "/w/app"));
    assert_eq!(
        told["systemMessage"],
        "cmstore budget: $1.20 spent of the daily budget of $1.00 (120 %)."
    );
    assert_eq!(run(&env, prompt("claude", "s1", "/w/app")), json!({}));
}

#[test]
fn a_limit_counts_only_its_agent_or_project() {
    let env = TestEnv::new();
    set_config(
        &env,
        "[budget]\nmode = \"enforce\"\n\
         [budget.agents.codex]\nday = { tokens = 200000 }\n\
         [budget.projects.web]\nday = 1\n",
    );
    env.append(&[
        usage_line("claude", "s-web", "/w/web", "m1", "claude-sonnet-4-5"),
        usage_line("claude", "s-web", "/w/web", "m2", "claude-sonnet-4-5"),
        usage_line("codex", "s-api", "/w/api", "m3", "gpt-5-unpriced"),
        usage_line("codex", "s-api", "/w/api", "m4", "gpt-5-unpriced"),
    ]);
    env.ingest_once();
    let spend: Value =
        serde_json::from_slice(&fs::read(env.home().join("spend.json")).unwrap()).unwrap();
    let scopes = spend["scopes"].as_array().unwrap();
    assert_eq!(scopes.len(), 2, "{spend}");
    let codex = scopes.iter().find(|s| s["agent"] == "codex").unwrap();
    assert_eq!(codex["day"]["tokens"], 240_000);
    assert_eq!(codex["day"]["unpriced"], 2);
    let web = scopes.iter().find(|s| s["project"] == "web").unwrap();
    assert_eq!(web["day"]["usd"], 1.2);
    // The project's figure is what `summarize --project web` counts.
    let days = json_rows(&env, &["summarize", "--by", "day", "--project", "web"]);
    let summed: f64 = days
        .iter()
        .map(|d| d["cost_usd"].as_f64().unwrap_or(0.0))
        .sum();
    assert!((summed - 1.2).abs() < 1e-9, "{days:#?}");

    // Capture reads the spend file, never the database.
    fs::remove_file(env.db()).unwrap();
    let denied = |reply: &Value| reply["hookSpecificOutput"]["permissionDecision"] == "deny";
    assert!(denied(&run(&env, tool_call("claude", "a", "/w/web"))));
    assert!(denied(&run(
        &env,
        tool_call("claude", "b", "/home/me/web/")
    )));
    assert_eq!(run(&env, tool_call("claude", "c", "/w/api")), json!({}));
    let codex_reply = run(&env, tool_call("codex", "d", "/w/api"));
    assert!(denied(&codex_reply));
    let reason = codex_reply["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.starts_with(
            "Blocked by cmstore budget: 240,000 tokens spent of the daily budget of 200,000 \
             tokens (codex) — raise budget.agents.codex.day in "
        ),
        "{reason}"
    );
    assert_eq!(
        last_line_of(&env, "d")["risk"],
        "budget:day.tokens.agent=codex"
    );
    assert!(!env.db().exists());
}

/// A Copilot CLI response of `model` that cost `premium` premium requests (its own
/// `usage.cost`), on a Stop line of session `session`.
fn premium_line(session: &str, message: &str, model: &str, premium: f64) -> String {
    let mut line: Value =
        serde_json::from_str(&usage_line("copilot", session, "/w/app", message, model)).unwrap();
    line["usage"][0]["premiumRequests"] = json!(premium);
    line.to_string()
}

#[test]
fn a_limit_in_premium_requests_counts_copilots_and_denies_past_it() {
    let env = TestEnv::new();
    set_config(
        &env,
        "[budget]\nmode = \"enforce\"\n\
         [budget.agents.copilot]\nmonth = { premium_requests = 2 }\n",
    );
    env.append(&[
        premium_line("s1", "m1", "claude-sonnet-4-5", 1.0),
        premium_line("s1", "m2", "gpt-5-mini", 0.0),
        premium_line("s2", "m3", "claude-haiku-4-5", 0.33),
        usage_line("claude", "s3", "/w/app", "m4", "claude-sonnet-4-5"),
    ]);
    env.ingest_once();
    let spend: Value =
        serde_json::from_slice(&fs::read(env.home().join("spend.json")).unwrap()).unwrap();
    // Everything's figures count the premium requests too, Claude's response none.
    assert_eq!(spend["month"]["premium_requests"], 1.33, "{spend}");
    let copilot = &spend["scopes"][0];
    assert_eq!(copilot["agent"], "copilot");
    assert_eq!(copilot["month"]["premium_requests"], 1.33);
    assert_eq!(
        run(&env, tool_call("copilot", "s1", "/w/app")),
        json!({}),
        "1.33 of 2 is under warn_at"
    );

    env.append(&[premium_line("s2", "m5", "claude-sonnet-4-5", 1.0)]);
    env.ingest_once();
    let reply = run(&env, tool_call("copilot", "s2", "/w/app"));
    let reason = deny_reason("copilot", &reply);
    assert!(
        reason.starts_with(
            "Blocked by cmstore budget: 2.33 premium requests spent of the monthly budget of \
             2 premium requests (copilot) — raise budget.agents.copilot.month in "
        ),
        "{reason}"
    );
    assert_eq!(
        last_line_of(&env, "s2")["risk"],
        "budget:month.premium_requests.agent=copilot"
    );
    // Another agent's calls count toward no premium limit.
    assert_eq!(run(&env, tool_call("claude", "s3", "/w/app")), json!({}));
    let rows = json_rows(&env, &["budget"]);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["unit"], "premium_requests");
    assert_eq!(rows[0]["spent"], 2.33);
    assert_eq!(rows[0]["state"], "over");
}

#[test]
fn without_a_spend_file_nothing_is_refused() {
    let env = TestEnv::new();
    set_config(&env, "[budget]\nmode = \"enforce\"\nday = 0.01\n");
    assert_eq!(run(&env, tool_call("claude", "s1", "/w/app")), json!({}));
    assert_eq!(run(&env, prompt("claude", "s1", "/w/app")), json!({}));
    let line = last_line_of(&env, "s1");
    assert!(line.get("budget").is_none() && line.get("decision").is_none());
}

#[test]
fn budget_shows_each_limit_against_the_spend_now_and_what_the_hooks_see() {
    let env = TestEnv::new();
    let out = env.cmd().arg("budget").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with("No budget is set. Add limits to "),
        "{text}"
    );

    set_config(
        &env,
        "[budget]\nday = 1\nweek = { usd = 10, tokens = 1000000 }\n\
         [budget.agents.codex]\nmonth = 50\n",
    );
    env.append(&[
        usage_line("claude", "s0", "/w/app", "m1", "claude-sonnet-4-5"),
        usage_line("claude", "s0", "/w/app", "m2", "claude-sonnet-4-5"),
    ]);
    env.ingest_once();
    // A response the hooks do not see yet: the spend file as it was before it was counted.
    let seen = fs::read(env.home().join("spend.json")).unwrap();
    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/app",
        "m3",
        "claude-sonnet-4-5",
    )]);
    env.ingest_once();
    fs::write(env.home().join("spend.json"), seen).unwrap();
    let text = crate::common::run_at_100(&env, &["budget", "--format", "table"]);
    insta::assert_snapshot!(text);
    let rows = json_rows(&env, &["budget"]);
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[0]["spent"], 1.8);
    assert_eq!(rows[0]["state"], "over");
    assert_eq!(rows[1]["share"], 0.18);
    assert_eq!(rows[2]["limit"], 1_000_000.0);
    assert_eq!(rows[2]["spent"], 360_000.0);
    assert_eq!(rows[3]["scope"], "codex");
    assert_eq!(rows[3]["spent"], 0.0);
    assert_eq!(rows[0]["hooks_see"], 1.2);
}

/// A real Claude Code transcript, its times moved to the last minutes, read by a Stop hook:
/// its responses' real usage crosses the day's limit, and the next tool call is denied.
#[test]
fn a_real_transcripts_usage_crosses_the_limit_and_the_next_call_is_denied() {
    let Some(real) = crate::common::real_fixtures() else {
        return;
    };
    let env = TestEnv::new();
    let source = fs::read_to_string(real.join("claude-code/transcript-1.jsonl")).unwrap();
    let now = chrono::Utc::now();
    let lines: Vec<String> = source
        .lines()
        .enumerate()
        .map(|(i, line)| {
            let mut value: Value = serde_json::from_str(line).unwrap();
            if value.get("timestamp").is_some() {
                let at =
                    now - chrono::Duration::seconds(120) + chrono::Duration::milliseconds(i as i64);
                value["timestamp"] = json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
            }
            value.to_string()
        })
        .collect();
    let transcript = env.dir.path().join("session.jsonl");
    fs::write(&transcript, lines.join("\n") + "\n").unwrap();
    let stop = json!({"session_id": "real", "transcript_path": transcript, "cwd": "/w/app",
                      "hook_event_name": "Stop", "stop_hook_active": false});
    capture(&env, stop.to_string(), &["--agent", "claude"]);
    env.ingest_once();
    let today = env.text("SELECT printf('%.6f', sum(cost_usd)) FROM v_usage");
    let spent: f64 = today.parse().unwrap();
    assert!(spent > 0.0, "the transcript's responses are priced");
    // A limit at half of what the transcript's responses cost.
    set_config(
        &env,
        &format!("[budget]\nmode = \"enforce\"\nday = {}\n", spent / 2.0),
    );
    env.ingest_once();
    let reply = run(&env, tool_call("claude", "real", "/w/app"));
    let reason = deny_reason("claude", &reply);
    assert!(
        reason.starts_with(&format!(
            "Blocked by cmstore budget: ${spent:.2} spent of the daily budget of ${:.2}",
            spent / 2.0
        )),
        "{reason}"
    );
}

#[test]
fn the_status_line_says_where_the_budget_stands() {
    let env = TestEnv::new();
    set_config(
        &env,
        "[budget]\nday = 1\nwarn_at = 0.5\n[budget.projects.web]\nday = 2\n",
    );
    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/web",
        "m1",
        "claude-sonnet-4-5",
    )]);
    env.ingest_once();
    let line = |payload: Option<Value>| {
        let mut cmd = env.cmd();
        cmd.arg("statusline");
        if let Some(payload) = payload {
            cmd.write_stdin(payload.to_string());
        }
        String::from_utf8(cmd.output().unwrap().stdout).unwrap()
    };
    assert_eq!(
        line(None),
        "cmstore · today $0.60 · week $0.60 · budget day $0.60/$1.00 (60 %)\n"
    );
    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/web",
        "m2",
        "claude-sonnet-4-5",
    )]);
    env.ingest_once();
    // In the project two limits count the session: everything's, past its end, is shown
    // before the project's, at 60 %.
    assert_eq!(
        line(Some(
            json!({"cwd": "/w/web", "cost": {"total_cost_usd": 1.2}})
        )),
        "cmstore · today $1.20 · week $1.20 · session $1.20 · OVER budget day $1.20/$1.00\n"
    );
}

/// Issue 39: the person is told too (`[budget] notify`), once per limit, level and window,
/// by an ingest: by a command of theirs (the text on its stdin, the level, limit and share in
/// its environment) or the desktop's notifier (`notify-send` here, a stand-in on the PATH).
/// A notifier that fails is said once, and changes nothing else.
#[cfg(unix)]
#[test]
fn past_warn_at_and_past_the_limit_the_person_is_notified_once_each() {
    use std::os::unix::fs::PermissionsExt;

    let env = TestEnv::new();
    let told = env.dir.path().join("told.txt");
    set_config(
        &env,
        &format!(
            "[budget]\nday = 1\nwarn_at = 0.5\nnotify = \"(cat; echo \\\" $CMSTORE_BUDGET_LEVEL \
             $CMSTORE_BUDGET_LIMIT $CMSTORE_BUDGET_SHARE\\\") >> '{}'\"\n",
            told.display()
        ),
    );
    let spend = |message: &str| {
        env.append(&[usage_line(
            "claude",
            "s0",
            "/w/app",
            message,
            "claude-sonnet-4-5",
        )]);
        env.ingest_once();
    };
    spend("m1");
    let text = fs::read_to_string(&told).unwrap();
    assert_eq!(
        text,
        format!(
            "cmstore budget: {ONE_RESPONSE_USD} spent of the daily budget of $1.00 (60 %). \
             warn day.usd 0.6000\n"
        )
    );
    // Nothing new to say: nothing said.
    env.ingest_once();
    assert_eq!(fs::read_to_string(&told).unwrap(), text);
    spend("m2");
    let text = fs::read_to_string(&told).unwrap();
    assert!(
        text.ends_with(
            "cmstore budget: $1.20 spent of the daily budget of $1.00 (120 %). The limit is \
             reached (audit: nothing is refused). over day.usd 1.2000\n"
        ),
        "{text}"
    );
    assert_eq!(text.lines().count(), 2, "{text}");

    // The desktop's own notifier (notify-send on Linux; macOS's osascript is not stood in
    // for), for a new limit; one that fails is a warning, once.
    if !cfg!(target_os = "linux") {
        return;
    }
    let notifier = env.agent_bin().join("notify-send");
    let desktop = env.dir.path().join("desktop.txt");
    fs::write(
        &notifier,
        format!(
            "#!/bin/sh\nprintf '%s|' \"$@\" >> '{}'\n",
            desktop.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&notifier, fs::Permissions::from_mode(0o755)).unwrap();
    set_config(&env, "[budget]\nweek = 1\nnotify = true\n");
    env.ingest_once();
    assert_eq!(
        fs::read_to_string(&desktop).unwrap(),
        "--app-name=cmstore|cmstore budget|cmstore budget: $1.20 spent of the weekly budget of \
         $1.00 (120 %). The limit is reached (audit: nothing is refused).|"
    );
    fs::write(&notifier, "#!/bin/sh\necho 'no display' >&2\nexit 1\n").unwrap();
    set_config(&env, "[budget]\nmonth = 1\nnotify = true\n");
    let out = env.cmd().args(["ingest", "--once"]).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(
        stderr.contains(
            "cmstore ingest: warning: the budget notice was not given: the notifier failed \
             (exit 1): no display"
        ),
        "{stderr}"
    );
    let out = env.cmd().args(["ingest", "--once"]).assert().success();
    assert!(
        !String::from_utf8_lossy(&out.get_output().stderr).contains("notice"),
        "said once"
    );
}

/// A following ingest gives its notices on a thread of their own: a notifier that takes its
/// time (here 30 s) does not hold up the lines that come after.
#[cfg(unix)]
#[test]
fn a_following_ingest_does_not_wait_for_a_slow_notifier() {
    use std::time::{Duration, Instant};
    let env = TestEnv::new();
    let told = env.dir.path().join("told.txt");
    set_config(
        &env,
        &format!(
            "[budget]\nday = 1\nwarn_at = 0.5\nnotify = \"cat >> '{}'; sleep 30\"\n",
            told.display()
        ),
    );
    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/app",
        "m1",
        "claude-sonnet-4-5",
    )]);
    let mut child = env.spawn_follow(&["--poll-ms", "20"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while fs::read_to_string(&told).unwrap_or_default().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        fs::read_to_string(&told)
            .unwrap_or_default()
            .contains("(60 %)"),
        "no notice"
    );
    // The notifier sleeps on; the next line is in the store all the same.
    env.append(&[usage_line(
        "claude",
        "s1",
        "/w/app",
        "m2",
        "claude-sonnet-4-5",
    )]);
    let events = "SELECT count(*) FROM events";
    // Within less than a notifier's 10 s: one waited for would hold the ingest that long.
    assert_eq!(env.wait_for(events, 2, Duration::from_secs(5)), 2);
    crate::common::terminate(&child);
    assert!(crate::common::wait_timeout(&mut child, Duration::from_secs(20)).is_some());
}

/// Runs capture with `args` on `payload`, for the agents that read the exit code: the exit
/// code, stdout and stderr.
fn run_plain(env: &TestEnv, payload: Value, args: &[&str]) -> (i32, String, String) {
    let out = env
        .cmd()
        .arg("capture")
        .args(args)
        .write_stdin(payload.to_string())
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (
        out.status.code().unwrap(),
        text(out.stdout),
        text(out.stderr),
    )
}

/// Windsurf, Kiro and Goose read the exit code: past the limit their tool calls and their
/// prompts are refused by exit 2 with the reason on stderr, except a prompt of Kiro's agent
/// configuration hooks and Goose's, which cannot be refused (the line says what was crossed);
/// Kiro reads the warning as text, Windsurf and Goose cannot be told.
#[test]
fn agents_that_read_the_exit_code_are_refused_by_it() {
    let env = TestEnv::new();
    set_config(
        &env,
        "[budget]\nmode = \"enforce\"\nday = 1\nwarn_at = 0.5\n",
    );
    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/app",
        "m1",
        "claude-sonnet-4-5",
    )]);
    env.ingest_once();
    let kiro_prompt = |session: &str, event: &str| {
        json!({"session_id": session, "hook_event_name": event, "cwd": "/w/app",
               "prompt": "go on"})
    };
    let warned = run_plain(
        &env,
        kiro_prompt("k0", "UserPromptSubmit"),
        &["--agent", "kiro"],
    );
    assert_eq!(warned.0, 0);
    assert!(
        warned.1.starts_with("cmstore budget: ") && !warned.1.starts_with('{'),
        "{warned:?}"
    );

    env.append(&[usage_line(
        "claude",
        "s0",
        "/w/app",
        "m2",
        "claude-sonnet-4-5",
    )]);
    env.ingest_once();
    let windsurf_call = json!({"agent_action_name": "pre_run_command", "trajectory_id": "w1",
        "execution_id": "x1", "tool_info": {"command_line": "ls", "cwd": "/w/app"}});
    let windsurf_prompt = json!({"agent_action_name": "pre_user_prompt", "trajectory_id": "w1",
        "execution_id": "x2", "tool_info": {"user_prompt": "go on"}});
    let kiro_call = json!({"session_id": "k1", "hook_event_name": "PreToolUse", "cwd": "/w/app",
        "tool_name": "execute_bash", "tool_input": {"command": "ls"}});
    let goose_call = json!({"event": "PreToolUse", "session_id": "g1", "matcher_context": "shell",
        "tool_call_id": "c1", "tool_name": "shell", "tool_input": {"command": "ls"},
        "working_dir": "/w/app"});
    for (payload, agent) in [
        (windsurf_call, "windsurf"),
        (windsurf_prompt, "windsurf"),
        (kiro_call, "kiro"),
        (goose_call, "goose"),
        (kiro_prompt("k1", "UserPromptSubmit"), "kiro"),
    ] {
        let (code, stdout, stderr) = run_plain(&env, payload, &["--agent", agent]);
        assert_eq!((code, stdout.as_str()), (2, ""), "{agent}: {stderr}");
        assert!(
            stderr.starts_with("Blocked by cmstore budget: $1.20 spent"),
            "{stderr}"
        );
    }
    // What cannot be refused is told, as text.
    let (code, stdout, _) = run_plain(
        &env,
        kiro_prompt("k2", "userPromptSubmit"),
        &["--agent", "kiro"],
    );
    assert_eq!(
        (code, stdout.as_str()),
        (
            0,
            "cmstore budget: $1.20 spent of the daily budget of $1.00 (120 %).\n"
        )
    );
    let line = last_line_of(&env, "k2");
    assert_eq!(line["budget"]["level"], "over");
    assert!(line.get("decision").is_none(), "{line}");
    assert_eq!(last_line_of(&env, "k1")["decision"], "deny");
    // Goose: neither refused nor told, nothing printed.
    let goose_prompt = json!({"event": "UserPromptSubmit", "session_id": "g2",
        "matcher_context": "go on", "message": "go on"});
    assert_eq!(
        run_plain(&env, goose_prompt, &["--agent", "goose"]),
        (0, String::new(), String::new())
    );
    let line = last_line_of(&env, "g2");
    assert_eq!(line["budget"]["level"], "over");
    assert!(line.get("decision").is_none(), "{line}");
}
