//! The checks of `[checks]` (docs/checks.md) with real commands: `rustfmt --check` and shell
//! scripts as the formatter, the built-in markdown checks, and the commit scan over a real
//! git repository made in a temporary directory. Audit-mode tests wait (bounded) for the
//! detached runner's line.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{capture, TestEnv};

/// How long a detached check may take to append its line.
const DETACHED_WAIT: Duration = Duration::from_secs(10);

/// The fake secrets of every kind the scan knows, with the rule that names each.
const SECRETS: [(&str, &str); 8] = [
    (
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "api-key",
    ),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github-token"),
    ("AKIAIOSFODNN7EXAMPLE", "aws-key"),
    ("xoxb-123456789012-abcdefghijkl", "slack-token"),
    ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "google-key"),
    ("Bearer abcdefgh12345678xyz", "bearer-token"),
    ("-----BEGIN RSA PRIVATE KEY-----", "private-key"),
    ("corp-918273", "configured"),
];

fn configure(env: &TestEnv, toml: &str) {
    fs::create_dir_all(env.home()).unwrap();
    fs::write(env.home().join("cmstore.toml"), toml).unwrap();
}

/// A git repository in the test's directory, with one commit so `HEAD` exists.
fn repo(env: &TestEnv) -> PathBuf {
    let dir = env.dir.path().join("repo");
    fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q"]);
    fs::write(dir.join("README.md"), "# Repo\n").unwrap();
    git(&dir, &["add", "."]);
    git(&dir, &["commit", "-qm", "first"]);
    dir
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A Claude Code PostToolUse of `tool` with `input`, run in `cwd`.
fn claude_post(cwd: &Path, tool: &str, input: Value) -> Value {
    json!({
        "session_id": "s-checks", "hook_event_name": "PostToolUse",
        "cwd": cwd.to_string_lossy(), "tool_name": tool, "tool_input": input,
        "tool_use_id": "toolu_1", "tool_response": {"success": true}
    })
}

/// The `CheckResult` lines of the queue.
fn results(env: &TestEnv) -> Vec<Value> {
    env.queue_lines()
        .into_iter()
        .filter(|l| l["hookType"] == "CheckResult")
        .collect()
}

/// Waits (at most [`DETACHED_WAIT`]) for `n` `CheckResult` lines.
fn wait_results(env: &TestEnv, n: usize) -> Vec<Value> {
    let until = Instant::now() + DETACHED_WAIT;
    loop {
        let found = results(env);
        if found.len() >= n || Instant::now() > until {
            assert_eq!(found.len(), n, "CheckResult lines: {found:?}");
            return found;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

const UNFORMATTED: &str = "fn main(){let x=1;println!(\"{}\",x);}\n";
const FORMATTED: &str = "fn main() {\n    let x = 1;\n    println!(\"{}\", x);\n}\n";

#[test]
fn nothing_runs_until_a_check_is_configured() {
    let env = TestEnv::new();
    let repo = repo(&env);
    fs::write(repo.join("main.rs"), UNFORMATTED).unwrap();
    let input = json!({"file_path": repo.join("main.rs").to_string_lossy()});
    let reply = capture(&env, claude_post(&repo, "Write", input).to_string(), &[]);
    assert_eq!(reply, json!({}));
    std::thread::sleep(Duration::from_millis(300));
    assert!(results(&env).is_empty());
    assert!(!env.home().join("state/checks").exists());
}

#[test]
fn format_in_audit_mode_runs_detached_and_records_rustfmts_verdict() {
    let env = TestEnv::new();
    let repo = repo(&env);
    configure(
        &env,
        "[checks.format]\ncommands = [{ pattern = \"*.rs\", command = \"rustfmt --check {files}\" }]\n",
    );
    let file = repo.join("main.rs");
    fs::write(&file, UNFORMATTED).unwrap();
    let input = json!({"file_path": file.to_string_lossy(), "content": UNFORMATTED});
    let started = Instant::now();
    let reply = capture(&env, claude_post(&repo, "Write", input).to_string(), &[]);
    assert_eq!(reply, json!({}), "audit mode never answers");
    assert!(started.elapsed() < Duration::from_secs(5));
    let lines = wait_results(&env, 1);
    let check = &lines[0]["check"];
    assert_eq!(check["name"], "format");
    assert_eq!(check["mode"], "audit");
    assert_eq!(check["status"], "failed", "{check}");
    assert_eq!(check["exitCode"], 1);
    assert_eq!(check["files"], json!([file.to_string_lossy()]));
    assert!(
        check["output"].as_str().unwrap().contains("Diff in"),
        "{check}"
    );
    assert!(check.get("blocked").is_none());
    assert_eq!(lines[0]["sessionId"], "s-checks");
    assert_eq!(lines[0]["toolCallId"], "toolu_1");
    // The event's own line comes first.
    let all = env.queue_lines();
    assert_eq!(all[0]["hookType"], "PostToolUse");
    assert!(
        fs::read_dir(env.home().join("state/checks"))
            .unwrap()
            .next()
            .is_none(),
        "the job file is removed"
    );
}

#[test]
fn format_in_enforce_mode_blocks_until_the_file_is_fixed() {
    let env = TestEnv::new();
    let repo = repo(&env);
    configure(
        &env,
        "[checks.format]\nmode = \"enforce\"\ncommands = [{ pattern = \"*.rs\", command = \"rustfmt --check {files}\" }]\n",
    );
    let file = repo.join("main.rs");
    fs::write(&file, UNFORMATTED).unwrap();
    let payload = claude_post(&repo, "Edit", json!({"file_path": file.to_string_lossy()}));
    let reply = capture(&env, payload.to_string(), &[]);
    assert_eq!(reply["decision"], "block", "{reply}");
    let reason = reply["reason"].as_str().unwrap();
    assert!(reason.contains("cmstore format check failed"), "{reason}");
    assert!(reason.contains("main.rs"), "{reason}");
    let lines = results(&env);
    assert_eq!(lines.len(), 1, "recorded in the hook's own append");
    assert_eq!(lines[0]["check"]["blocked"], true);
    assert_eq!(lines[0]["check"]["mode"], "enforce");

    fs::write(&file, FORMATTED).unwrap();
    let reply = capture(&env, payload.to_string(), &[]);
    assert_eq!(reply, json!({}));
    let lines = results(&env);
    assert_eq!(lines[1]["check"]["status"], "passed");
}

/// A formatter script that always fails, saying which files it was given.
fn failing_formatter(env: &TestEnv) -> PathBuf {
    let script = env.dir.path().join("fmt.sh");
    fs::write(&script, "#!/bin/sh\necho \"would reformat $*\"\nexit 3\n").unwrap();
    script
}

#[cfg(unix)]
#[test]
fn enforce_mode_feedback_takes_each_agents_shape() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let script = failing_formatter(&env);
    configure(
        &env,
        &format!(
            "[checks.format]\nmode = \"enforce\"\ncommands = [{{ pattern = \"*.txt\", command = \"sh {} {{files}}\" }}]\n",
            script.display()
        ),
    );
    let cwd = repo.to_string_lossy().to_string();
    let patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-a\n+b\n*** End Patch\n";
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "claude",
            claude_post(
                &repo,
                "MultiEdit",
                json!({"file_path": "notes.txt", "edits": []}),
            ),
            vec![],
        ),
        (
            "vscode",
            json!({"hookEventName": "PostToolUse", "sessionId": "v", "cwd": cwd,
                   "tool_name": "replace_string_in_file", "tool_input": {"filePath": "notes.txt"},
                   "tool_response": "ok"}),
            vec!["--agent", "vscode"],
        ),
        (
            "copilot",
            json!({"sessionId": "c", "timestamp": 1_704_614_600_000_i64, "cwd": cwd,
                   "toolName": "edit", "toolArgs": "{\"path\":\"notes.txt\"}",
                   "toolResult": {"resultType": "success", "textResultForLlm": "ok"}}),
            vec!["--agent", "copilot", "--event", "postToolUse"],
        ),
        (
            "codex",
            json!({"session_id": "x", "turn_id": "t1", "hook_event_name": "PostToolUse",
                   "cwd": cwd, "tool_name": "apply_patch", "tool_input": {"command": patch},
                   "tool_response": "Success"}),
            vec!["--agent", "codex"],
        ),
        (
            "gemini",
            json!({"session_id": "g", "hook_event_name": "AfterTool", "cwd": cwd,
                   "timestamp": "2026-02-27T12:46:42.726Z", "tool_name": "write_file",
                   "tool_input": {"file_path": "notes.txt", "content": "b"}}),
            vec!["--agent", "gemini"],
        ),
    ];
    for (agent, payload, args) in cases {
        let reply = capture(&env, payload.to_string(), &args);
        let reason = match agent {
            "copilot" => {
                assert_eq!(reply.as_object().unwrap().len(), 1, "{agent}: {reply}");
                reply["additionalContext"].as_str()
            }
            "gemini" => {
                assert_eq!(reply["decision"], "deny", "{agent}: {reply}");
                reply["reason"].as_str()
            }
            _ => {
                assert_eq!(reply["decision"], "block", "{agent}: {reply}");
                assert_eq!(
                    reply["hookSpecificOutput"]["additionalContext"], reply["reason"],
                    "{agent}"
                );
                reply["reason"].as_str()
            }
        }
        .unwrap_or_else(|| panic!("{agent}: no reason in {reply}"));
        assert!(
            reason.contains("would reformat notes.txt"),
            "{agent}: {reason}"
        );
        assert!(reason.contains("exited 3"), "{agent}: {reason}");
    }
    let lines = results(&env);
    assert_eq!(lines.len(), 5);
    for line in &lines {
        assert_eq!(line["check"]["files"], json!(["notes.txt"]), "{line}");
        assert_eq!(line["check"]["exitCode"], 3);
    }
}

#[cfg(unix)]
#[test]
fn a_check_past_its_limit_is_killed_recorded_and_never_blocks() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let marker = env.dir.path().join("finished");
    let script = env.dir.path().join("slow.sh");
    fs::write(
        &script,
        format!("#!/bin/sh\nsleep 30\ntouch {}\n", marker.display()),
    )
    .unwrap();
    for mode in ["enforce", "audit"] {
        configure(
            &env,
            &format!(
                "[checks.format]\nmode = \"{mode}\"\ntimeout_secs = 0.5\ncommands = [{{ pattern = \"*.rs\", command = \"sh {}\" }}]\n",
                script.display()
            ),
        );
        let started = Instant::now();
        let payload = claude_post(&repo, "Write", json!({"file_path": "a.rs"}));
        let reply = capture(&env, payload.to_string(), &[]);
        assert_eq!(reply, json!({}), "{mode}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{mode}: {:?}",
            started.elapsed()
        );
    }
    let lines = wait_results(&env, 2);
    for line in &lines {
        let check = &line["check"];
        assert_eq!(check["status"], "timed_out", "{check}");
        assert!(
            check["error"].as_str().unwrap().contains("limit"),
            "{check}"
        );
        let ms = check["durationMs"].as_u64().unwrap();
        assert!((400..5000).contains(&ms), "{ms}");
    }
    assert!(!marker.exists(), "the script was killed, not left running");
}

/// An agent that kills its hook at its own time limit while an enforce-mode check still runs
/// (Claude Code's PostToolUse has 15 s; a scan may take longer) loses the check's result, not
/// the event: its line is in the queue before any check runs.
#[cfg(unix)]
#[test]
fn a_hook_killed_while_its_enforced_check_runs_has_already_queued_the_event() {
    use std::io::Write as _;
    use std::process::Stdio;
    let env = TestEnv::new();
    let repo = repo(&env);
    let started_check = env.dir.path().join("check-started");
    let script = env.dir.path().join("slow.sh");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec sleep 30\n",
            started_check.display()
        ),
    )
    .unwrap();
    configure(
        &env,
        &format!(
            "[checks.format]\nmode = \"enforce\"\ntimeout_secs = 60\ncommands = [{{ pattern = \"*.rs\", command = \"sh {}\" }}]\n",
            script.display()
        ),
    );
    let payload = claude_post(&repo, "Write", json!({"file_path": "a.rs"}));
    let mut hook = env
        .std_cmd()
        .args(["capture", "--agent", "claude"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    hook.stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fs::read_to_string(&started_check).map_or(true, |t| !t.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the check never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // As the agent does at its limit: SIGKILL, the check still running.
    hook.kill().unwrap();
    hook.wait().unwrap();
    // The check outlives the hook (the agent's kill reaches only the hook): end it here.
    let pid = fs::read_to_string(&started_check).unwrap_or_default();
    let _ = Command::new("kill").arg(pid.trim()).status();
    let queue = fs::read_to_string(env.queue()).unwrap_or_default();
    let lines: Vec<Value> = queue
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{queue}");
    assert_eq!(lines[0]["hookType"], "PostToolUse", "{queue}");
}

#[test]
fn a_missing_command_is_recorded_as_an_error_and_never_blocks() {
    let env = TestEnv::new();
    let repo = repo(&env);
    configure(
        &env,
        "[checks.format]\nmode = \"enforce\"\ncommands = [{ pattern = \"*.rs\", command = \"cmstore-no-such-formatter {files}\" }]\n",
    );
    let payload = claude_post(&repo, "Write", json!({"file_path": "a.rs"}));
    let reply = capture(&env, payload.to_string(), &[]);
    assert_eq!(reply, json!({}));
    let lines = results(&env);
    assert_eq!(lines[0]["check"]["status"], "error", "{}", lines[0]);
    assert_eq!(lines[0]["check"]["error"], "command not found");
}

const BAD_MARKDOWN: &str =
    "# Title\n### Skipped\ntrailing \nSee [gone](missing.md) and [ok](README.md).\n```sh\nopen\n";

#[test]
fn markdown_built_in_checks_in_audit_and_enforce_mode() {
    let env = TestEnv::new();
    let repo = repo(&env);
    fs::write(repo.join("guide.md"), BAD_MARKDOWN).unwrap();
    let payload = claude_post(&repo, "Write", json!({"file_path": "guide.md"}));

    configure(&env, "[checks.markdown]\n");
    assert_eq!(capture(&env, payload.to_string(), &[]), json!({}));
    let lines = wait_results(&env, 1);
    let rules: Vec<(String, u64)> = lines[0]["check"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["file"], "guide.md");
            (
                f["rule"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rules,
        [
            ("heading-skip".to_string(), 2),
            ("trailing-whitespace".to_string(), 3),
            ("broken-link".to_string(), 4),
            ("unclosed-fence".to_string(), 5),
        ]
    );

    configure(
        &env,
        "[checks.post-edit-markdown-quality]\nmode = \"enforce\"\n",
    );
    let reply = capture(&env, payload.to_string(), &[]);
    let reason = reply["reason"].as_str().unwrap();
    assert!(
        reason.contains("cmstore markdown check failed for guide.md"),
        "{reason}"
    );
    assert!(reason.contains("guide.md:4: broken-link"), "{reason}");

    fs::write(
        repo.join("guide.md"),
        "# Title\n\n## Part\n\nSee [ok](README.md).\n",
    )
    .unwrap();
    assert_eq!(capture(&env, payload.to_string(), &[]), json!({}));
    assert_eq!(results(&env)[2]["check"]["status"], "passed");
}

/// Commits a file holding every fake secret and returns the `git commit` PostToolUse.
fn commit_secrets(repo: &Path) -> Value {
    let text: String = SECRETS
        .iter()
        .map(|(secret, _)| format!("value = \"{secret}\"\n"))
        .collect();
    fs::write(repo.join("settings.py"), format!("# config\n{text}")).unwrap();
    git(repo, &["add", "settings.py"]);
    git(repo, &["commit", "-qm", "add settings"]);
    commit_post(repo)
}

/// The PostToolUse of a successful `git commit` in `repo`.
fn commit_post(repo: &Path) -> Value {
    let mut post = claude_post(
        repo,
        "Bash",
        json!({"command": "git add settings.py && git commit -m 'add settings'"}),
    );
    post["tool_response"] = json!({"stdout": "[main 1a2b3c4] add settings", "stderr": "",
                                   "interrupted": false});
    post
}

fn assert_no_secret(what: &str, text: &str) {
    for (secret, _) in SECRETS {
        let value = secret.trim_start_matches("Bearer ");
        assert!(!text.contains(value), "{what} holds {value}");
    }
}

#[test]
fn the_commit_scan_reports_every_secret_kind_by_rule_and_line_never_by_value() {
    let env = TestEnv::new();
    let repo = repo(&env);
    configure(
        &env,
        "[redaction]\npatterns = ['corp-[0-9]{6}']\n[checks.security]\n",
    );
    let reply = capture(&env, commit_secrets(&repo).to_string(), &[]);
    assert_eq!(reply, json!({}));
    let lines = wait_results(&env, 1);
    let check = &lines[0]["check"];
    assert_eq!(check["status"], "failed");
    assert_eq!(check["files"], json!(["settings.py"]));
    assert_eq!(check["commit"].as_str().unwrap().len(), 40);
    let found: Vec<(String, u64)> = check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert_eq!(f["file"], "settings.py");
            (
                f["rule"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(String, u64)> = SECRETS
        .iter()
        .enumerate()
        .map(|(i, (_, rule))| (rule.to_string(), i as u64 + 2))
        .collect();
    assert_eq!(found, want);
    assert_no_secret("the queue", &fs::read_to_string(env.queue()).unwrap());

    env.ingest_once();
    let out = env
        .cmd()
        .args(["query", "--format", "json", "SELECT * FROM events"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_no_secret("the store", &String::from_utf8_lossy(&out.stdout));
    let out = env
        .cmd()
        .args(["summarize", "--by", "check", "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows[0]["check"], "security");
    assert_eq!(rows[0]["runs"], 1);
    assert_eq!(rows[0]["failed"], 1);
    assert_eq!(rows[0]["findings"], SECRETS.len());
}

#[test]
fn the_commit_scan_in_enforce_mode_tells_the_agent_without_the_values() {
    let env = TestEnv::new();
    let repo = repo(&env);
    configure(
        &env,
        "[redaction]\npatterns = ['corp-[0-9]{6}']\n[checks.post-commit-security-scan]\nmode = \"enforce\"\n",
    );
    let reply = capture(&env, commit_secrets(&repo).to_string(), &[]);
    assert_eq!(reply["decision"], "block", "{reply}");
    let reason = reply["reason"].as_str().unwrap();
    for (_, rule) in SECRETS {
        assert!(reason.contains(&format!(": {rule}")), "{rule}: {reason}");
    }
    assert!(reason.contains("settings.py:4: aws-key"), "{reason}");
    assert_no_secret("the reply", &reply.to_string());
    assert_no_secret("the queue", &fs::read_to_string(env.queue()).unwrap());

    // A failed commit, or another command, is not scanned.
    let mut failed = commit_post(&repo);
    failed["tool_name"] = json!("Bash");
    failed["hook_event_name"] = json!("PostToolUseFailure");
    assert_eq!(capture(&env, failed.to_string(), &[]), json!({}));
    let status = claude_post(&repo, "Bash", json!({"command": "git status"}));
    assert_eq!(capture(&env, status.to_string(), &[]), json!({}));
    assert_eq!(results(&env).len(), 1);
}

#[cfg(unix)]
#[test]
fn a_configured_scanner_runs_after_the_built_in_patterns() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let scanner = env.dir.path().join("scan.sh");
    fs::write(
        &scanner,
        "#!/bin/sh\necho 'leak found: AKIAIOSFODNN7EXAMPLE'\nexit 1\n",
    )
    .unwrap();
    configure(
        &env,
        &format!(
            "[checks.security]\nmode = \"enforce\"\ncommand = \"sh {}\"\n",
            scanner.display()
        ),
    );
    fs::write(repo.join("clean.txt"), "nothing secret\n").unwrap();
    git(&repo, &["add", "clean.txt"]);
    git(&repo, &["commit", "-qm", "clean"]);
    let post = claude_post(&repo, "Bash", json!({"command": "git commit -m clean"}));
    let reply = capture(&env, post.to_string(), &[]);
    assert_eq!(reply["decision"], "block", "{reply}");
    let lines = results(&env);
    let check = &lines[0]["check"];
    assert_eq!(check["status"], "failed");
    assert_eq!(check["exitCode"], 1);
    assert_eq!(check["output"], "leak found: [REDACTED:aws-key]");
    assert!(check.get("findings").is_none());
    assert_no_secret("the reply", &reply.to_string());
}

#[test]
fn config_show_and_check_know_the_checks() {
    let env = TestEnv::new();
    configure(
        &env,
        "[checks.format]\nmode = \"enforce\"\ncommands = [{ pattern = \"*.rs\", command = \"rustfmt --check {files}\" }]\n[checks.markdown]\nmode = \"loud\"\n",
    );
    let out = env.cmd().args(["config", "show"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("[checks.format]\nmode = \"enforce\""),
        "{text}"
    );
    assert!(
        text.contains("{ pattern = [\"*.rs\"], command = \"rustfmt --check {files}\" }"),
        "{text}"
    );
    assert!(
        text.contains("[checks.markdown]\nmode = \"audit\""),
        "{text}"
    );
    assert!(!text.contains("[checks.security]"), "{text}");
    let out = env.cmd().args(["config", "check"]).output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("checks.markdown.mode"), "{all}");
}

/// A `cmstore ingest` in follow mode, killed (SIGKILL) when dropped if still running.
struct Follower(std::process::Child);

impl Follower {
    /// Starts one and waits until its check runner holds the queue's runner lock.
    fn start(env: &TestEnv) -> Follower {
        let follower = Follower(env.spawn_follow(&["--heartbeat-ms", "0"]));
        let until = Instant::now() + DETACHED_WAIT;
        while !cmstore::hook::checks::detach::runner_alive(&env.queue()) {
            assert!(
                Instant::now() < until,
                "the ingest's check runner never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        follower
    }

    fn kill(mut self) {
        self.0.kill().expect("kill ingest");
        self.0.wait().expect("reap ingest");
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `cmstore capture` with debugging on, asserted to answer `{}` (audit mode never answers).
fn capture_logged(env: &TestEnv, payload: &Value) {
    let out = env
        .cmd()
        .arg("capture")
        .env("CMSTORE_DEBUG", "1")
        .write_stdin(payload.to_string())
        .output()
        .expect("run cmstore");
    assert!(out.status.success());
    assert_eq!(crate::common::one_json_object(&out.stdout), json!({}));
}

fn debug_log(env: &TestEnv) -> String {
    fs::read_to_string(env.home().join("logs/capture.log")).unwrap_or_default()
}

/// A formatter that writes the command line of the first cmstore process among its
/// ancestors (the check's runner) to `runners`, one line per run, and passes.
#[cfg(target_os = "linux")]
fn runner_reporting_formatter(env: &TestEnv, runners: &Path) -> PathBuf {
    let script = env.dir.path().join("who.sh");
    let text = format!(
        "#!/bin/sh\np=$$\nwhile [ \"$p\" -gt 1 ]; do\n  c=$(tr '\\0' ' ' < /proc/$p/cmdline)\n  \
         case \"$c\" in *cmstore*) echo \"$c\" >> {}; exit 0;; esac\n  \
         p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2)\ndone\necho none >> {}\n",
        runners.display(),
        runners.display()
    );
    fs::write(&script, text).unwrap();
    script
}

fn check_rows(env: &TestEnv) -> i64 {
    env.int("SELECT COUNT(*) FROM events WHERE hook_type = 'CheckResult'")
}

fn job_files(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(target_os = "linux")]
#[test]
fn audit_checks_are_left_to_a_following_ingest_which_records_each_once() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let runners = env.dir.path().join("runners");
    let script = runner_reporting_formatter(&env, &runners);
    configure(
        &env,
        &format!(
            "[checks.format]\ncommands = [{{ pattern = \"*.rs\", command = \"sh {} {{files}}\" }}]\n\
             [checks.markdown]\n",
            script.display()
        ),
    );
    fs::write(repo.join("b.md"), "# B\n```\nopen\n").unwrap();
    let follower = Follower::start(&env);
    capture_logged(
        &env,
        &claude_post(&repo, "Write", json!({"file_path": "a.rs"})),
    );
    capture_logged(
        &env,
        &claude_post(&repo, "Write", json!({"file_path": "b.md"})),
    );
    let lines = wait_results(&env, 2);
    let log = debug_log(&env);
    assert_eq!(log.matches("left to ingest").count(), 2, "{log}");
    assert!(
        !log.contains("detached"),
        "the hook started no runner: {log}"
    );
    let ran_by = fs::read_to_string(&runners).unwrap();
    assert_eq!(ran_by.lines().count(), 1, "{ran_by}");
    assert!(ran_by.contains(" ingest"), "run by the ingest: {ran_by}");
    assert!(!ran_by.contains("check run"), "{ran_by}");
    let mut names: Vec<&str> = lines
        .iter()
        .map(|l| l["check"]["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["format", "markdown"]);
    assert_eq!(lines[0]["sessionId"], "s-checks");
    assert_ne!(lines[0]["id"], lines[1]["id"], "two results, two ids");
    let markdown = lines
        .iter()
        .find(|l| l["check"]["name"] == "markdown")
        .unwrap();
    assert_eq!(markdown["check"]["status"], "failed", "{markdown}");
    // The following ingest records them too, once each.
    assert_eq!(
        env.wait_for(
            "SELECT COUNT(*) FROM events WHERE hook_type = 'CheckResult'",
            2,
            DETACHED_WAIT
        ),
        2
    );
    follower.kill();
    env.ingest_once();
    assert_eq!(check_rows(&env), 2);
    assert_eq!(results(&env).len(), 2);
    let jobs = env.home().join("state/checks");
    assert!(job_files(&jobs).is_empty(), "{:?}", job_files(&jobs));
    assert!(job_files(&jobs.join("running")).is_empty());
}

#[cfg(target_os = "linux")]
#[test]
fn checks_configured_after_a_following_ingest_started_are_left_to_it() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let runners = env.dir.path().join("runners");
    let script = runner_reporting_formatter(&env, &runners);
    // No `[checks]` yet: the ingest starts its runner all the same.
    let follower = Follower::start(&env);
    configure(&env, &format_check(&script));
    write_a_passing_rs(&env, &repo);
    let log = debug_log(&env);
    assert!(log.contains("left to ingest"), "{log}");
    assert!(
        !log.contains("detached"),
        "the hook started no runner: {log}"
    );
    let ran_by = fs::read_to_string(&runners).unwrap();
    assert!(ran_by.contains(" ingest"), "run by the ingest: {ran_by}");
    assert_eq!(
        env.wait_for(
            "SELECT COUNT(*) FROM events WHERE hook_type = 'CheckResult'",
            1,
            DETACHED_WAIT
        ),
        1
    );
    follower.kill();
}

#[cfg(target_os = "linux")]
#[test]
fn without_a_following_ingest_the_hook_starts_a_runner_of_its_own() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let runners = env.dir.path().join("runners");
    let script = runner_reporting_formatter(&env, &runners);
    configure(&env, &format_check(&script));
    write_a_passing_rs(&env, &repo);
    let log = debug_log(&env);
    assert!(log.contains("check format detached"), "{log}");
    assert!(!log.contains("left to ingest"), "{log}");
    let ran_by = fs::read_to_string(&runners).unwrap();
    assert!(ran_by.contains("check run --job"), "{ran_by}");
    // An ingest starting afterwards finds nothing left to run.
    env.ingest_once();
    assert_eq!(check_rows(&env), 1);
    assert_eq!(results(&env).len(), 1);
}

/// Waits until the ingest's runner has taken a job (its file is in `running/`); returns it.
fn wait_taken(env: &TestEnv) -> PathBuf {
    let running = env.home().join("state/checks/running");
    let until = Instant::now() + DETACHED_WAIT;
    loop {
        if let Some(file) = job_files(&running).into_iter().next() {
            return file;
        }
        assert!(Instant::now() < until, "no job taken");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(unix)]
#[test]
fn a_check_whose_ingest_was_killed_mid_check_is_run_by_the_next_and_recorded_once() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let started = env.dir.path().join("started");
    let script = env.dir.path().join("slow-fmt.sh");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\necho run >> {}\nsleep 1\necho \"would reformat $*\"\nexit 1\n",
            started.display()
        ),
    )
    .unwrap();
    configure(&env, &format_check(&script));
    let follower = Follower::start(&env);
    capture_logged(
        &env,
        &claude_post(&repo, "Write", json!({"file_path": "a.rs"})),
    );
    let taken = wait_taken(&env);
    let job = fs::read(&taken).unwrap();
    let until = Instant::now() + DETACHED_WAIT;
    while !started.exists() {
        assert!(Instant::now() < until, "the check never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    follower.kill();
    // Past the script's end: a result from the killed runner would be there by now.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        results(&env).is_empty(),
        "the killed runner appended nothing"
    );
    assert!(taken.exists(), "the taken job is still there");

    env.ingest_once();
    let lines = results(&env);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["check"]["status"], "failed");
    assert_eq!(
        fs::read_to_string(&started).unwrap().lines().count(),
        2,
        "run again"
    );
    assert_eq!(check_rows(&env), 1);
    assert!(!taken.exists());

    // Killed after its append, before removing the job: run a third time, the store keeps one.
    fs::write(&taken, &job).unwrap();
    env.ingest_once();
    assert_eq!(results(&env).len(), 2, "appended again, with the same id");
    assert_eq!(results(&env)[0]["id"], results(&env)[1]["id"]);
    assert_eq!(check_rows(&env), 1);
    env.ingest_once();
    assert_eq!(results(&env).len(), 2, "nothing left to run");
}

#[cfg(unix)]
#[test]
fn a_check_hanging_inside_ingest_times_out_while_ingest_keeps_ingesting() {
    let env = TestEnv::new();
    let repo = repo(&env);
    configure(
        &env,
        "[checks.format]\ntimeout_secs = 4\ncommands = [{ pattern = \"*.rs\", command = \"sleep 60\" }]\n",
    );
    let _follower = Follower::start(&env);
    capture_logged(
        &env,
        &claude_post(&repo, "Write", json!({"file_path": "a.rs"})),
    );
    let taken = wait_taken(&env);
    let hung_at = Instant::now();
    capture_logged(
        &env,
        &claude_post(&repo, "Read", json!({"file_path": "a.rs"})),
    );
    assert_eq!(
        env.wait_for(
            "SELECT COUNT(*) FROM events WHERE tool_name = 'Read'",
            1,
            Duration::from_secs(3)
        ),
        1,
        "ingested while the check hangs"
    );
    assert!(hung_at.elapsed() < Duration::from_secs(3));
    assert!(taken.exists(), "the check is still running");
    let lines = wait_results(&env, 1);
    let check = &lines[0]["check"];
    assert_eq!(check["status"], "timed_out", "{check}");
    let ms = check["durationMs"].as_u64().unwrap();
    assert!((3500..9000).contains(&ms), "{ms}");
    assert_eq!(
        env.wait_for(
            "SELECT COUNT(*) FROM events WHERE hook_type = 'CheckResult'",
            1,
            DETACHED_WAIT
        ),
        1
    );
    assert!(!taken.exists());
}

/// Codex 0.171's PostToolUse of shell call `call_id` that ran a `git commit` in `repo`: its
/// result gives only the output, the exit code is in the rollout (the recorded one: `call_0`
/// exited 0, `call_1` exited 3).
fn codex_commit_post(env: &TestEnv, repo: &Path, call_id: &str) -> Value {
    let rollout = env.dir.path().join("rollout.jsonl");
    fs::write(
        &rollout,
        crate::common::payload("codex-0.171-rollout.jsonl"),
    )
    .unwrap();
    let mut post: Value =
        serde_json::from_str(&crate::common::payload("codex-0.171-post-tool-use.json")).unwrap();
    post["transcript_path"] = json!(rollout.to_string_lossy());
    post["cwd"] = json!(repo.to_string_lossy());
    post["tool_input"] = json!({"command": "git commit -qm 'add settings'"});
    post["tool_response"] = json!("");
    post["tool_use_id"] = json!(call_id);
    post
}

#[test]
fn a_codex_commit_that_failed_by_its_rollout_starts_no_scan() {
    let env = TestEnv::new();
    let repo = repo(&env);
    configure(&env, "[checks.security]\nmode = \"enforce\"\n");
    // HEAD holds secrets: a scan started by the failed commit would find them.
    commit_secrets(&repo);
    let failed = codex_commit_post(&env, &repo, "call_1");
    assert_eq!(
        capture(&env, failed.to_string(), &["--agent", "codex"]),
        json!({})
    );
    assert_eq!(env.queue_lines()[0]["exitCode"], 3);
    assert!(results(&env).is_empty(), "{:?}", results(&env));
    // The same commit, successful by the rollout, is scanned.
    let succeeded = codex_commit_post(&env, &repo, "call_0");
    let reply = capture(&env, succeeded.to_string(), &["--agent", "codex"]);
    assert_eq!(reply["decision"], "block", "{reply}");
    assert_eq!(results(&env).len(), 1);
    assert_eq!(results(&env)[0]["check"]["name"], "security");
}

/// A following ingest that starts while another runner (a detached `cmstore check run`)
/// holds the queue's check jobs takes them over once that runner is gone: the hooks then
/// leave their checks to it instead of starting runners of their own.
#[cfg(target_os = "linux")]
#[test]
fn a_following_ingest_takes_the_check_jobs_over_once_the_other_runner_is_gone() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let runners = env.dir.path().join("runners");
    let script = runner_reporting_formatter(&env, &runners);
    configure(&env, &format_check(&script));
    let lock = cmstore::hook::checks::detach::runner_lock(&env.queue());
    fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let other_runner = cmstore::files::lock::exclusive(&lock, Duration::ZERO)
        .unwrap()
        .expect("no runner yet");
    let mut follower = Follower(env.spawn_follow(&["--heartbeat-ms", "0"]));
    let said = stderr_lines(&mut follower.0);
    wait_for_line(&said, "another runner holds the check jobs of this queue");
    drop(other_runner);
    wait_for_line(&said, "the check runner started");
    assert!(cmstore::hook::checks::detach::runner_alive(&env.queue()));

    write_a_passing_rs(&env, &repo);
    let log = debug_log(&env);
    assert!(log.contains("left to ingest"), "{log}");
    let ran_by = fs::read_to_string(&runners).unwrap();
    assert!(ran_by.contains(" ingest"), "run by the ingest: {ran_by}");
    follower.kill();
}

/// A following ingest whose check runner cannot start for a reason other than another runner
/// (here the jobs directory is a file) says so once, and does not try again every two seconds.
#[test]
fn a_check_runner_that_cannot_start_is_said_once() {
    let env = TestEnv::new();
    let state = env.home().join("state");
    fs::create_dir_all(&state).unwrap();
    fs::write(cmstore::hook::checks::jobs_dir(&state), "not a directory").unwrap();
    let mut follower = Follower(env.spawn_follow(&["--heartbeat-ms", "0"]));
    let said = stderr_lines(&mut follower.0);
    wait_for_line(&said, "the check runner cannot start (cannot create ");
    // Two of the chore's looks (every 2 s) would have said it again.
    let until = Instant::now() + Duration::from_millis(4_500);
    let mut later = Vec::new();
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        if let Ok(line) = said.recv_timeout(left) {
            later.push(line);
        }
    }
    follower.kill();
    assert!(
        !later.iter().any(|l| l.contains("cannot start")),
        "said again: {later:#?}"
    );
}

/// `[checks.format]` in audit mode running `script` on every `.rs` file.
fn format_check(script: &Path) -> String {
    format!(
        "[checks.format]\ncommands = [{{ pattern = \"*.rs\", command = \"sh {} {{files}}\" }}]\n",
        script.display()
    )
}

/// A hook of a `Write` of `a.rs` in `repo`, and its check's result, asserted passed.
fn write_a_passing_rs(env: &TestEnv, repo: &Path) {
    capture_logged(
        env,
        &claude_post(repo, "Write", json!({"file_path": "a.rs"})),
    );
    let lines = wait_results(env, 1);
    assert_eq!(lines[0]["check"]["status"], "passed", "{}", lines[0]);
}

/// The lines `child` writes on stderr, as they come.
fn stderr_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("stderr piped");
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if send.send(line).is_err() {
                break;
            }
        }
    });
    lines
}

/// Waits (at most [`DETACHED_WAIT`]) for a line of `lines` that contains `text`.
fn wait_for_line(lines: &std::sync::mpsc::Receiver<String>, text: &str) {
    let until = Instant::now() + DETACHED_WAIT;
    let mut seen = Vec::new();
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(text) => return,
            Ok(line) => seen.push(line),
            Err(_) => break,
        }
    }
    panic!("no line with {text:?} on stderr; saw {seen:#?}");
}
