//! `cmstore sessions` and `cmstore show`: the readable list, prefixes, filters and a session's
//! story.

use serde_json::Value;

use cmstore::model::queue_line::usage::UsageRecord;

use crate::common::run_at_100 as run;
use crate::common::{entry, skipped, TestEnv};

/// 2026-01-05T10:00:00Z: old enough that "ago" prints a date, so snapshots stay fixed.
const T0: i64 = 1_767_607_200_000;
const MIN: i64 = 60_000;

/// Three sessions: two whose ids share eleven characters, in two projects, two agents.
fn store() -> TestEnv {
    let env = TestEnv::new();
    let mut lines = Vec::new();
    let mut at = |hook: &str,
                  session: &str,
                  minute: i64,
                  edit: &dyn Fn(&mut cmstore::model::queue_line::QueueEntry)| {
        let mut e = entry(hook, session);
        e.timestamp = T0 + minute * MIN;
        e.cwd = Some(if session.starts_with("aaaa") {
            "/home/dev/cmstore".into()
        } else {
            "C:\\src\\webapp\\".into()
        });
        edit(&mut e);
        lines.push(e.to_line());
    };
    let none = |_: &mut cmstore::model::queue_line::QueueEntry| {};
    let story = "aaaaaaaa-1111-4000-8000-000000000001";
    at("SessionStart", story, 0, &|e| {
        e.model = Some("claude-sonnet-4-5".into());
        e.source = Some("startup".into());
    });
    at("UserPromptSubmit", story, 1, &|e| {
        e.prompt = Some("Fix the failing parser test".into())
    });
    at("PreToolUse", story, 2, &|e| {
        e.tool_call_id = Some("c1".into());
        e.tool_input = Some(r#"{"command":"cargo test parser"}"#.into());
    });
    at("PostToolUseFailure", story, 3, &|e| {
        e.tool_call_id = Some("c1".into());
        e.duration_ms = Some(2_100);
    });
    at("PreToolUse", story, 4, &|e| {
        e.tool_call_id = Some("c2".into());
        e.tool_input = Some(r#"{"command":"rm -rf /"}"#.into());
        e.risk = Some("rm-rf-root".into());
        e.decision = Some("deny".into());
    });
    at("PreToolUse", story, 5, &|e| {
        e.tool_call_id = Some("c3".into());
        e.tool_name = Some("Edit".into());
        e.tool_input =
            Some(r#"{"file_path":"src/parser.rs","old_string":"a","new_string":"b"}"#.into());
    });
    at("PostToolUse", story, 6, &|e| {
        e.tool_call_id = Some("c3".into());
        e.tool_name = Some("Edit".into());
        e.duration_ms = Some(40);
    });
    at("SubagentStop", story, 7, &|e| {
        e.turn_id = Some("sub1".into());
        e.usage = Some(vec![response("r1", 6, true, 20_000)]);
        e.prompt = Some("Find the parser tests".into());
        e.response = Some("Three tests in tests/parser.rs.".into());
    });
    at("Stop", story, 8, &|e| {
        e.turn_id = Some("t1".into());
        e.usage = Some(vec![
            response("r2", 2, false, 1_200_000),
            response("r3", 8, false, 3_000),
        ]);
        e.prompt = Some("Fix the failing parser test".into());
        e.response = Some("Fixed: the parser now accepts a trailing comma.".into());
    });
    at("PreCompact", story, 9, &|e| {
        e.trigger = Some("manual".into())
    });
    at("SessionEnd", story, 10, &|e| {
        e.reason = Some("prompt_input_exit".into())
    });
    at(
        "UserPromptSubmit",
        "aaaaaaaa-1112-4000-8000-000000000002",
        60,
        &none,
    );
    for minute in [120, 125] {
        at(
            "UserPromptSubmit",
            "bbbbbbbb-2222-4000-8000-000000000003",
            minute,
            &|e| {
                e.agent = Some("vscode".into());
            },
        );
    }
    env.append(&lines);
    env.ingest_once();
    env
}

/// The usage of one response at `minute`: 1000 input, `output` output, 2000 cache writes,
/// 4000 cache reads, Claude Sonnet 4.5's.
fn response(id: &str, minute: i64, sidechain: bool, output: u64) -> UsageRecord {
    UsageRecord {
        message_id: id.into(),
        request_id: Some(format!("req_{id}")),
        model: Some("claude-sonnet-4-5".into()),
        input: 1000,
        output,
        cache_write: 2000,
        cache_read: 4000,
        ts: Some(T0 + minute * MIN),
        sidechain,
        ..Default::default()
    }
}

#[test]
fn the_session_list_reads_at_a_glance_and_its_prefixes_are_unique() {
    let env = store();
    let table = run(&env, &["sessions", "--format", "table"]);
    insta::assert_snapshot!("sessions_table", table);
    for line in table.lines() {
        assert!(line.chars().count() <= 100, "{line}");
    }
    // Every prefix the table shows is one `show` accepts.
    for prefix in ["aaaaaaaa-1111", "aaaaaaaa-1112", "bbbbbbbb"] {
        assert!(
            table
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{prefix} "))),
            "{prefix}\n{table}"
        );
        assert!(run(&env, &["show", prefix, "--format", "json"]).contains("\"items\""));
    }
}

#[test]
fn filters_narrow_the_list_and_machine_formats_keep_raw_values() {
    let env = store();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["sessions", "--format", "json"];
        all.extend_from_slice(args);
        let rows: Vec<Value> = serde_json::from_str(&run(&env, &all)).unwrap();
        rows.iter()
            .map(|r| r["session_id"].as_str().unwrap()[..13].to_string())
            .collect()
    };
    assert_eq!(
        ids(&[]),
        ["bbbbbbbb-2222", "aaaaaaaa-1112", "aaaaaaaa-1111"]
    );
    assert_eq!(ids(&["--agent", "vscode"]), ["bbbbbbbb-2222"]);
    assert_eq!(ids(&["--project", "webapp"]), ["bbbbbbbb-2222"]);
    assert_eq!(ids(&["--project", "/home/dev/cmstore"]).len(), 2);
    assert!(
        ids(&["--project", "cms"]).is_empty(),
        "a whole component, not a substring"
    );
    // Trailing separators do not matter; a Windows path's case does not either, as on Windows.
    assert_eq!(ids(&["--project", "cmstore/"]).len(), 2);
    assert_eq!(ids(&["--project", "/home/dev/cmstore/"]).len(), 2);
    assert_eq!(ids(&["--project", "WebApp\\"]), ["bbbbbbbb-2222"]);
    assert_eq!(ids(&["--project", "c:\\SRC\\webapp"]), ["bbbbbbbb-2222"]);
    assert!(
        ids(&["--project", "CMSTORE"]).is_empty(),
        "a POSIX path keeps its case"
    );
    assert_eq!(
        ids(&["--since", "2026-01-05T11:00", "--until", "2026-01-05T11:30"]),
        ["aaaaaaaa-1112"]
    );
    assert_eq!(ids(&["--limit", "1"]), ["bbbbbbbb-2222"]);
    let rows: Vec<Value> =
        serde_json::from_str(&run(&env, &["sessions", "--format", "json"])).unwrap();
    assert_eq!(rows[0]["duration_ms"], 5 * MIN);
    assert_eq!(
        rows[0]["session_id"],
        "bbbbbbbb-2222-4000-8000-000000000003"
    );
    let wide = run(&env, &["sessions", "--format", "table", "--wide"]);
    assert!(
        wide.contains("unknown_total") || wide.contains("unknown_"),
        "{wide}"
    );
}

#[test]
fn a_bad_time_or_an_unknown_or_ambiguous_prefix_is_one_clear_error() {
    let env = store();
    let fail = |args: &[&str]| -> String {
        let out = env.cmd().args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty());
        String::from_utf8(out.stderr).unwrap()
    };
    let err = fail(&["sessions", "--since", "last tuesday"]);
    assert!(err.contains("--since") && err.contains("90m"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let err = fail(&["show", "aaaaaaaa"]);
    assert!(
        err.contains("matches 2 sessions")
            && err.contains("aaaaaaaa-1111-4000-8000-000000000001")
            && err.contains("aaaaaaaa-1112-4000-8000-000000000002"),
        "{err}"
    );
    let err = fail(&["show", "cccc"]);
    assert!(
        err.contains("no session in the store matches \"cccc\""),
        "{err}"
    );
}

#[test]
fn an_ambiguous_prefix_counts_every_match_and_an_empty_one_is_refused() {
    let env = TestEnv::new();
    let lines: Vec<String> = (0..20)
        .map(|i| {
            entry(
                "SessionStart",
                &format!("dddd{i:04}-0000-4000-8000-000000000000"),
            )
            .to_line()
        })
        .collect();
    env.append(&lines);
    env.ingest_once();
    let fail = |args: &[&str]| -> String {
        let out = env.cmd().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    for args in [&["show", "dddd"][..], &["summarize", "--session", "dddd"]] {
        let err = fail(args);
        assert!(err.contains("\"dddd\" matches 20 sessions: "), "{err}");
        assert!(err.contains("(the first 8 of 20 listed)"), "{err}");
        let listed = (0..20)
            .filter(|i| err.contains(&format!("dddd{i:04}-")))
            .count();
        assert_eq!(listed, 8, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    for args in [
        &["show", ""][..],
        &["show", " "],
        &["summarize", "--session", ""],
    ] {
        let err = fail(args);
        assert!(err.contains("the session id is empty"), "{args:?}: {err}");
    }
}

#[test]
fn show_tells_a_session_in_order() {
    let env = store();
    let text = run(&env, &["show", "aaaaaaaa-1111"]);
    insta::assert_snapshot!("show_text", text);
    let json: Value =
        serde_json::from_str(&run(&env, &["show", "aaaaaaaa-1111", "--format", "json"])).unwrap();
    let kinds: Vec<&str> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "start",
            "prompt",
            "tool_call",
            "tool_call",
            "tool_call",
            "answer",
            "answer",
            "compaction",
            "end"
        ]
    );
    assert_eq!(json["items"][3]["outcome"], "denied");
    assert_eq!(json["items"][3]["decision"], "deny");
    assert_eq!(json["items"][2]["duration_ms"], 2_100);
    // Usage: the session's in the header, each turn's with its answer.
    let usage = &json["session"]["usage"];
    assert_eq!(usage["responses"], 3);
    assert_eq!(usage["output_tokens"], 1_223_000);
    let sonnet = |output: f64| (1000.0 * 3.0 + output * 15.0 + 2000.0 * 3.75 + 4000.0 * 0.3) / 1e6;
    let cost = usage["cost_usd"].as_f64().unwrap();
    assert!((cost - (sonnet(20_000.0) + sonnet(1_200_000.0) + sonnet(3_000.0))).abs() < 1e-9);
    assert_eq!(json["items"][5]["subagent"], true);
    assert_eq!(json["items"][5]["usage"]["responses"], 1);
    assert_eq!(json["items"][6]["usage"]["responses"], 2);
    assert_eq!(json["items"][6]["usage"]["output_tokens"], 1_203_000);
    assert_eq!(json["items"][1]["kind"], "prompt");
    assert_eq!(
        json["session"]["session_id"],
        "aaaaaaaa-1111-4000-8000-000000000001"
    );
}

#[test]
fn show_shortens_unless_full_and_never_pages_into_a_pipe() {
    let env = TestEnv::new();
    let mut e = entry("Stop", "long-session");
    e.timestamp = T0;
    e.turn_id = Some("t".into());
    e.prompt = Some("p".into());
    e.response = Some(format!("{} END", "word ".repeat(200)));
    env.append(&[e.to_line()]);
    env.ingest_once();
    let marker = env.dir.path().join("pager-ran");
    let pager = format!("touch {}", marker.display());
    let out = env
        .cmd()
        .env("PAGER", &pager)
        .args(["show", "long-session"])
        .output()
        .unwrap();
    let short = String::from_utf8(out.stdout).unwrap();
    assert!(!short.contains("END") && short.contains('…'), "{short}");
    assert!(!marker.exists(), "stdout is a pipe: no pager");
    let full = run(&env, &["show", "long-session", "--full"]);
    assert!(full.contains("END"), "{full}");
}

/// On a terminal (a pseudo-terminal from `script`), `sessions`, `summarize` and `show` print
/// through `PAGER`; with `--no-pager` they print directly. Unix: `script` makes the terminal.
#[cfg(unix)]
#[test]
fn the_reports_page_on_a_terminal_unless_told_not_to() {
    use std::os::unix::fs::PermissionsExt;
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        skipped("no `script` (util-linux) to make a terminal");
        return;
    }
    let env = store();
    let paged = env.dir.path().join("paged.txt");
    let pager = env.dir.path().join("pager.sh");
    let less = env.dir.path().join("less.txt");
    std::fs::write(
        &pager,
        format!(
            "#!/bin/sh\necho \"$LESS\" > '{}'\ncat > '{}'\n",
            less.display(),
            paged.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&pager, std::fs::Permissions::from_mode(0o755)).unwrap();
    let on_terminal = |args: &str| -> String {
        let _ = std::fs::remove_file(&paged);
        let command = format!("{} {args}", crate::common::bin().display());
        let out = std::process::Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("HOME", env.user_home())
            .env("CMSTORE_HOME", env.home())
            .env("PAGER", &pager)
            .env("COLUMNS", "100")
            .env_remove("LESS")
            .output()
            .unwrap();
        assert!(out.status.success(), "{args}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for args in [
        "sessions",
        "summarize",
        "summarize --by tool",
        "show aaaaaaaa-1111",
    ] {
        let direct = on_terminal(args);
        let text = std::fs::read_to_string(&paged).unwrap_or_default();
        assert!(
            text.contains("aaaaaaaa") || text.contains("Bash"),
            "{args}: {text:?}"
        );
        assert!(
            !direct.contains("aaaaaaaa-1111"),
            "{args} printed past the pager: {direct}"
        );
        assert_eq!(std::fs::read_to_string(&less).unwrap(), "FRX\n", "{args}");
        let direct = on_terminal(&format!("{args} --no-pager"));
        assert!(!paged.exists(), "{args} --no-pager used the pager");
        assert!(
            direct.contains("aaaaaaaa") || direct.contains("Bash"),
            "{args}: {direct}"
        );
    }
    // A table drawn in full is chopped, not wrapped, and scrolls sideways.
    for args in ["sessions --wide", "summarize --wide"] {
        on_terminal(args);
        assert_eq!(std::fs::read_to_string(&less).unwrap(), "FRXS\n", "{args}");
        assert!(
            std::fs::read_to_string(&paged)
                .unwrap()
                .contains("session_id"),
            "{args}"
        );
    }
}

/// At a terminal's width (here `COLUMNS`) each item of the story is one line that fits it, its
/// outcome and usage kept whole; in a pipe without a width the text keeps its 240 characters.
#[test]
fn show_fits_each_line_to_the_terminal() {
    let env = TestEnv::new();
    let long = "word ".repeat(100);
    let mut prompt = entry("UserPromptSubmit", "wide-session");
    prompt.timestamp = T0;
    prompt.prompt = Some(format!("{long}END"));
    let mut pre = entry("PreToolUse", "wide-session");
    pre.timestamp = T0 + MIN;
    pre.tool_name = Some("Bash".into());
    pre.tool_call_id = Some("c1".into());
    pre.tool_input = Some(serde_json::json!({ "command": format!("echo {long}") }).to_string());
    let mut post = pre.clone();
    post.id = cmstore::model::queue_line::new_id();
    post.hook_type = "PostToolUse".into();
    post.timestamp = T0 + 2 * MIN;
    post.duration_ms = Some(1_500);
    env.append(&[prompt.to_line(), pre.to_line(), post.to_line()]);
    env.ingest_once();
    let at = |columns: &str| -> Vec<String> {
        let out = env
            .cmd()
            .env("COLUMNS", columns)
            .env("TZ", "UTC")
            .args(["show", "wide-session", "--no-pager"])
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines()
            .skip_while(|l| !l.is_empty())
            .skip(1)
            .map(str::to_string)
            .collect()
    };
    let lines = at("80");
    assert_eq!(lines.len(), 2, "{lines:?}");
    for line in &lines {
        assert_eq!(line.chars().count(), 80, "{line:?}");
    }
    assert!(
        lines[0].contains("  prompt   word word") && lines[0].ends_with('…'),
        "{lines:?}"
    );
    assert!(lines[1].ends_with("…  [succeeded, 1.5s]"), "{lines:?}");
    // A terminal narrower than a line's fixed parts keeps a few words of text, then wraps.
    let narrow = at("30");
    assert!(narrow[1].contains("  [succeeded, 1.5s]"), "{narrow:?}");
    // No width: the cut a pipe always had.
    let out = env
        .cmd()
        .env_remove("COLUMNS")
        .args(["show", "wide-session"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let prompt_line = text.lines().find(|l| l.contains("  prompt   ")).unwrap();
    assert_eq!(prompt_line.chars().count(), 19 + 240, "{prompt_line}");
}

#[test]
fn a_call_shows_its_input_from_whichever_line_has_it() {
    let env = TestEnv::new();
    let line = |hook: &str, minute: i64, call: &str, input: Option<&str>| {
        let mut e = entry(hook, "story-1");
        e.timestamp = T0 + minute * MIN;
        e.tool_call_id = Some(call.into());
        e.tool_input = input.map(str::to_string);
        e.to_line()
    };
    env.append(&[
        // The PreToolUse says the command: the story takes it from the session's own lines.
        line("PreToolUse", 0, "c1", Some(r#"{"command":"cargo build"}"#)),
        line(
            "PostToolUse",
            1,
            "c1",
            Some(r#"{"command":"not this one"}"#),
        ),
        // The PreToolUse has no input: the PostToolUse's is shown.
        line("PreToolUse", 2, "c2", None),
        line("PostToolUse", 3, "c2", Some(r#"{"command":"cargo test"}"#)),
        // Only the end was seen.
        line(
            "PostToolUseFailure",
            4,
            "c3",
            Some(r#"{"file_path":"src/x.rs"}"#),
        ),
    ]);
    env.ingest_once();
    let json: Value =
        serde_json::from_str(&run(&env, &["show", "story-1", "--format", "json"])).unwrap();
    let inputs: Vec<&Value> = json["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["input"])
        .collect();
    assert_eq!(inputs, ["cargo build", "cargo test", "src/x.rs"]);
}

#[test]
fn an_empty_report_says_so_on_stderr_as_every_other_does() {
    let env = store();
    let note = |args: &[&str]| -> (String, String) {
        let out = env
            .cmd()
            .env("COLUMNS", "100")
            .args(args)
            .args(["--format", "table"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (table, err) = note(&["summarize", "--by", "check"]);
    assert!(
        table.contains("check") && table.contains("findings"),
        "{table}"
    );
    assert_eq!(
        err,
        "no check results in the store yet (checks run once [checks] is set in cmstore.toml: \
         docs/checks.md)\n"
    );
    let (table, err) = note(&["sessions", "--agent", "nobody"]);
    assert!(
        table.contains("session") && table.lines().count() == 2,
        "{table}"
    );
    let unknown = "(no session of agent \"nobody\" is stored; agents: claude, vscode)";
    assert_eq!(err, format!("no sessions match the filters {unknown}\n"));
    let (_, err) = note(&["summarize", "--by", "tool", "--agent", "nobody"]);
    assert_eq!(err, format!("no tool calls match the filters {unknown}\n"));
    let (_, err) = note(&["summarize", "--by", "model", "--agent", "vscode"]);
    assert_eq!(
        err,
        "no responses with token usage match the filters (token usage is read from the \
         agents' transcripts: docs/usage.md)\n"
    );
    // A report with rows, and the machine formats, say nothing more.
    assert_eq!(note(&["sessions"]).1, "");
    let out = env
        .cmd()
        .args(["summarize", "--by", "check", "--format", "tsv"])
        .output()
        .unwrap();
    assert!(out.status.success() && out.stderr.is_empty());
}

/// `sessions` counts the calls that returned; `show` counts every call and says how many have
/// no result recorded, so the two figures read together.
#[test]
fn show_says_how_many_calls_sessions_does_not_count() {
    let env = TestEnv::new();
    let call = |hook: &str, id: &str| {
        let mut e = entry(hook, "ffff0000-1111-4000-8000-000000000001");
        e.tool_name = Some("Bash".into());
        e.tool_call_id = Some(id.into());
        e.to_line()
    };
    env.append(&[
        call("PreToolUse", "c1"),
        call("PostToolUse", "c1"),
        call("PreToolUse", "c2"),
    ]);
    env.ingest_once();
    let list = crate::common::run_at_100(&env, &["sessions", "--format", "json"]);
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list[0]["tool_uses"], 1, "{list}");
    let story = crate::common::run_at_100(&env, &["show", "ffff0000", "--no-pager"]);
    assert!(story.contains("· 2 tool calls, 1 in flight\n"), "{story}");
}

/// A filter that names what the store has none of says so, on stderr, beside the empty table.
#[test]
fn a_filter_that_matches_nothing_says_what_the_store_has() {
    let env = store();
    let stderr = |args: &[&str]| -> String {
        let out = env.cmd().env("COLUMNS", "100").args(args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8(out.stderr).unwrap()
    };
    let err = stderr(&["sessions", "--format", "table", "--agent", "foo"]);
    assert_eq!(
        err,
        "no sessions match the filters (no session of agent \"foo\" is stored; \
         agents: claude, vscode)\n"
    );
    let err = stderr(&["summarize", "--format", "table", "--project", "nope"]);
    assert!(
        err.starts_with(
            "no sessions match the filters (no session in a project \"nope\" is stored"
        ),
        "{err}"
    );
    // Each filter matches something, only not together: no hint.
    let err = stderr(&[
        "sessions",
        "--format",
        "table",
        "--agent",
        "vscode",
        "--project",
        "cmstore",
    ]);
    assert_eq!(err, "no sessions match the filters\n");
}

/// `--project` at the edges: a root (`/`, `C:\`), a Windows path written with `/`, a name
/// holding `%`, and an empty one (refused).
#[test]
fn project_filters_at_the_edges() {
    let env = TestEnv::new();
    let at = |session: &str, cwd: &str| {
        let mut e = entry("SessionStart", session);
        e.cwd = Some(cwd.into());
        e.to_line()
    };
    env.append(&[
        at("root", "/"),
        at("drive", "C:\\"),
        at("slashed", "C:/Users/Me/App"),
        at("percent", "/home/u/100%"),
        at("posix", "/home/u/app"),
    ]);
    env.ingest_once();
    let ids = |project: &str| -> Vec<String> {
        let out = run(
            &env,
            // Sessions that only started: --all lists them.
            &[
                "sessions",
                "--all",
                "--format",
                "json",
                "--project",
                project,
            ],
        );
        let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
        let mut ids: Vec<String> = rows
            .iter()
            .map(|r| r["session_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    assert_eq!(ids("/"), ["root"]);
    assert_eq!(ids("C:\\"), ["drive"]);
    assert_eq!(ids("c:"), ["drive"]);
    assert_eq!(
        ids("app"),
        ["posix", "slashed"],
        "a Windows path with `/` ignores case"
    );
    assert_eq!(ids("c:/users/me/app/"), ["slashed"]);
    assert_eq!(ids("100%"), ["percent"]);
    assert!(ids("100").is_empty() && ids("%").is_empty());
    let out = env
        .cmd()
        .args(["sessions", "--project", ""])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("--project is empty"));
}

/// From a new-user walkthrough: `--limit 0` is no limit (it read as an empty store), a typo in
/// a filter is said in every format, an agent's name and a pasted id ignore case, and `show
/// --format json` into a pipe closed early ends quietly.
#[test]
fn the_walkthroughs_rough_edges() {
    let env = store();
    let json_rows = |args: &[&str]| -> Vec<Value> {
        let out = env
            .cmd()
            .args(args)
            .args(["--format", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(json_rows(&["sessions", "--limit", "0"]).len(), 3);
    assert_eq!(json_rows(&["summarize", "--limit", "0"]).len(), 3);
    assert_eq!(json_rows(&["sessions", "--agent", "VSCode"]).len(), 1);
    let out = env
        .cmd()
        .args(["sessions", "--agent", "foo", "--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().lines().count(),
        1,
        "the header"
    );
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "cmstore: no session of agent \"foo\" is stored; agents: claude, vscode\n"
    );
    let story = run(&env, &["show", "AAAAAAAA-1111", "--format", "json"]);
    assert!(
        story.contains("aaaaaaaa-1111-4000-8000-000000000001"),
        "{story}"
    );

    let mut child = env
        .std_cmd()
        .args(["show", "aaaaaaaa-1111", "--format", "json", "--full"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(String::from_utf8(output.stderr).unwrap(), "");
}

/// A story that crosses midnight says the date where the day changes (its lines give only the
/// time of day); a session only its imported usage knows says why nothing follows the header.
#[test]
fn show_marks_each_new_day_and_a_session_without_events() {
    let env = TestEnv::new();
    let at = |hook: &str, ts: i64, prompt: &str| {
        let mut e = entry(hook, "night-session");
        e.timestamp = ts;
        e.prompt = Some(prompt.into());
        e.to_line()
    };
    let day = 86_400_000;
    env.append(&[
        at("UserPromptSubmit", T0, "before midnight"),
        at("UserPromptSubmit", T0 + 15 * 3_600_000, "after midnight"),
        at("UserPromptSubmit", T0 + 3 * day, "days later"),
    ]);
    env.ingest_once();
    let story = crate::common::run_at_100(&env, &["show", "night-session", "--no-pager"]);
    let dates: Vec<&str> = story.lines().filter(|l| l.starts_with("── ")).collect();
    assert_eq!(
        dates,
        ["── 2026-01-06 Tuesday ──", "── 2026-01-08 Thursday ──"],
        "{story}"
    );
    let after = story
        .lines()
        .position(|l| l.contains("after midnight"))
        .unwrap();
    assert_eq!(story.lines().nth(after - 1), Some(dates[0]), "{story}");

    let response = crate::common::response_line("usage-only", "m1", "2026-03-01T10:00:00Z");
    crate::common::import_lines(&env, "imported.jsonl", &[response]);
    let story = crate::common::run_at_100(&env, &["show", "usage-only", "--no-pager"]);
    assert!(
        story.ends_with(
            "(no hook event of this session is stored: its usage was read from its transcript)\n"
        ),
        "{story}"
    );
}

/// A session that went nowhere (a start, no prompt, turn or tool call) is left out of the
/// list, and stderr says how many were; `--all` lists them. A filter counts only its own.
#[test]
fn sessions_that_went_nowhere_are_left_out_unless_all() {
    let env = TestEnv::new();
    let at = |hook: &str, session: &str| entry(hook, session).to_line();
    env.append(&[
        at("SessionStart", "idle-1"),
        at("SessionStart", "idle-2"),
        at("SessionEnd", "idle-2"),
        at("SessionStart", "busy-1"),
        at("UserPromptSubmit", "busy-1"),
        at("PreToolUse", "tools-1"),
    ]);
    env.ingest_once();
    let listed = |args: &[&str]| -> (Vec<String>, String) {
        let out = env
            .cmd()
            .args(["sessions", "--format", "json"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success());
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let mut ids: Vec<String> = rows
            .iter()
            .map(|r| r["session_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        (ids, String::from_utf8(out.stderr).unwrap())
    };
    let (ids, err) = listed(&[]);
    assert_eq!(ids, ["busy-1", "tools-1"]);
    assert_eq!(
        err,
        "cmstore: 2 sessions that went nowhere (no prompt, turn or tool call) not shown; \
         --all shows them\n"
    );
    let (ids, err) = listed(&["--all"]);
    assert_eq!(ids, ["busy-1", "idle-1", "idle-2", "tools-1"]);
    assert_eq!(err, "");
    // Only what the filter chooses is counted: none of another agent's.
    let (ids, err) = listed(&["--agent", "vscode"]);
    assert!(ids.is_empty());
    assert!(!err.contains("went nowhere"), "{err}");
}

/// `today` and `yesterday` are the days' midnights, in UTC with `--utc` (in the local zone
/// otherwise: tests/cli/zones.rs), as `summarize --by day` counts days.
#[test]
fn since_today_and_yesterday_are_the_utc_days_with_utc() {
    let env = TestEnv::new();
    let now = crate::common::now_ms();
    let midnight = now - now.rem_euclid(86_400_000);
    let mut lines = Vec::new();
    for (session, ts) in [("today-1", now), ("yesterday-1", midnight - 3_600_000)] {
        let mut e = entry("UserPromptSubmit", session);
        e.timestamp = ts;
        e.prompt = Some("go".into());
        lines.push(e.to_line());
    }
    env.append(&lines);
    env.ingest_once();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["sessions", "--all", "--utc", "--format", "json"];
        all.extend_from_slice(args);
        let rows: Vec<Value> = serde_json::from_str(&run(&env, &all)).unwrap();
        rows.iter()
            .map(|r| r["session_id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(&["--since", "today"]), ["today-1"]);
    assert_eq!(
        ids(&["--since", "yesterday", "--until", "today"]),
        ["yesterday-1"]
    );
    assert_eq!(ids(&["--until", "now"]).len(), 2);
}

/// A long path a call read is cut in the middle: the line fits, the file name stays.
#[test]
fn show_cuts_a_long_path_in_the_middle_keeping_the_file_name() {
    let env = TestEnv::new();
    let path = format!(
        "/private/var/folders/{}/T/vibe-check-notes.md",
        "d".repeat(90)
    );
    let mut pre = entry("PreToolUse", "path-session");
    pre.timestamp = T0;
    pre.tool_name = Some("Read".into());
    pre.tool_call_id = Some("c1".into());
    pre.tool_input = Some(serde_json::json!({ "file_path": path }).to_string());
    let mut post = pre.clone();
    post.id = cmstore::model::queue_line::new_id();
    post.hook_type = "PostToolUse".into();
    post.timestamp = T0 + MIN;
    env.append(&[pre.to_line(), post.to_line()]);
    env.ingest_once();
    let shown = |args: &[&str]| -> String {
        let out = env.cmd().env("COLUMNS", "80").args(args).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let text = shown(&["show", "path-session", "--no-pager"]);
    let line = text.lines().find(|l| l.contains("Read")).unwrap();
    assert_eq!(line.chars().count(), 80, "{line}");
    assert!(
        line.contains("  /private/var/") && line.contains("…/vibe-check-notes.md  ["),
        "{line}"
    );
    let full = shown(&["show", "path-session", "--no-pager", "--full"]);
    assert!(full.contains(&path), "--full shows it whole: {full}");
}

/// Issue 35.10: `--wide` without a pager, wider than the terminal, is drawn as records (one
/// line per column) instead of ~300 columns wrapped into noise; where it fits, a table.
#[test]
fn a_wide_list_without_a_pager_is_records_when_it_does_not_fit() {
    let env = store();
    let at = |columns: &str| {
        let out = env
            .cmd()
            .env("COLUMNS", columns)
            .args(["sessions", "--wide", "--no-pager", "--format", "table"])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let narrow = at("100");
    assert!(narrow.starts_with("─[ row 1 ]"), "{narrow}");
    assert!(narrow.lines().all(|l| l.chars().count() <= 100), "{narrow}");
    assert!(narrow.contains("unknown_total"), "{narrow}");
    let roomy = at("1000");
    let header = roomy.lines().nth(1).unwrap_or_default();
    assert!(
        header.contains("session_id") && header.contains("unknown_total"),
        "one table, every column in its header: {roomy}"
    );
}
