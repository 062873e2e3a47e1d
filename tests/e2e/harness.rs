//! What every end-to-end test shares: finding the installed agents, a private home per test,
//! running an agent under a deadline, and asking the store what it holds.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mock::MockServer;

/// How long one agent run may take before it is killed (they take seconds with the mock).
pub const AGENT_TIMEOUT: Duration = Duration::from_secs(120);

/// How long one cmstore command may take.
const CMSTORE_TIMEOUT: Duration = Duration::from_secs(60);

/// Where `.ci/install-agents` put the agents: `$CMSTORE_E2E_AGENTS`, else `target/e2e-agents`.
fn agents_dir() -> PathBuf {
    match std::env::var_os("CMSTORE_E2E_AGENTS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/e2e-agents"),
    }
}

/// The installed agent's entry point (`relative` under its prefix), or `None` with a printed
/// note. With `CMSTORE_E2E=require` (as `.ci/run` sets) a missing agent fails the test.
pub fn agent(name: &str, relative: &str) -> Option<PathBuf> {
    let path = agents_dir().join(name).join(relative);
    if path.exists() {
        return Some(path);
    }
    let note = format!(
        "{} is not installed: run .ci/install-agents (needs npm)",
        path.display()
    );
    if std::env::var("CMSTORE_E2E").as_deref() == Ok("require") {
        panic!("CMSTORE_E2E=require: {note}");
    }
    skipped(&note);
    None
}

/// Says that the running test skipped, and why, where a person sees it: libtest hides what a
/// passing test prints with `eprintln!`, so this writes to the process's stderr directly.
pub fn skipped(why: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
}

/// One test's world in a temporary directory: the user's home (and every config dir an agent
/// reads), cmstore's home, and the project the agent works in.
pub struct World {
    pub dir: tempfile::TempDir,
    /// Folders put before the PATH of every command: the agents' own, so that
    /// `cmstore hooks install` asks the installed agent its version, and this cmstore's, which
    /// a project's hooks run by name, as on a user's machine.
    path_first: std::cell::RefCell<Vec<PathBuf>>,
}

/// The folder of an installed agent's commands (`node_modules/.bin` of its prefix).
pub fn agent_bin(name: &str) -> PathBuf {
    agents_dir().join(name).join("node_modules/.bin")
}

impl World {
    pub fn new() -> World {
        let world = World {
            dir: tempfile::tempdir().expect("tempdir"),
            // This cmstore too: a project's hooks run `cmstore` from the PATH.
            path_first: std::cell::RefCell::new(vec![
                agent_bin("claude"),
                Path::new(env!("CARGO_BIN_EXE_cmstore"))
                    .parent()
                    .expect("the binary's folder")
                    .to_path_buf(),
            ]),
        };
        for dir in [world.home(), world.cmhome(), world.project(), world.tmp()] {
            std::fs::create_dir_all(dir).expect("create a test directory");
        }
        world
    }

    /// The user's home (`HOME`), never the real one.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// cmstore's home: queue, database, cmstore.toml.
    pub fn cmhome(&self) -> PathBuf {
        self.dir.path().join("cmhome")
    }

    /// The agent's working directory.
    pub fn project(&self) -> PathBuf {
        self.dir.path().join("project")
    }

    fn tmp(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// A path a denied command would create if it ran.
    pub fn marker(&self) -> PathBuf {
        self.dir.path().join("denied-command-ran")
    }

    /// The command of a Stop hook of the user's that blocks the first Stop with
    /// `{"decision": "block", "reason": "2 tests fail"}` on stdout and lets the next pass;
    /// [`World::blocked_once`] says whether it blocked.
    pub fn block_once_hook(&self) -> String {
        let script = self.home().join("block-once.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncat > /dev/null\nif [ -e '{0}' ]; then exit 0; fi\ntouch '{0}'\n\
                 echo '{{\"decision\":\"block\",\"reason\":\"2 tests fail\"}}'\n",
                self.blocked_marker().display()
            ),
        )
        .expect("write the blocking hook");
        format!("sh '{}'", script.display())
    }

    /// Whether the hook of [`World::block_once_hook`] (or Claude's of its own test) blocked.
    pub fn blocked_once(&self) -> bool {
        self.blocked_marker().exists()
    }

    /// The file a blocking Stop hook leaves once it blocked.
    pub fn blocked_marker(&self) -> PathBuf {
        self.home().join("blocked-once")
    }

    /// Puts `dir` first on the PATH of the commands run from now on.
    pub fn put_first_on_path(&self, dir: PathBuf) {
        self.path_first.borrow_mut().insert(0, dir);
    }

    /// Puts the gate in enforce mode: risky tool calls are denied, not only recorded.
    pub fn enforce(&self) {
        std::fs::write(self.cmhome().join("cmstore.toml"), "mode = \"enforce\"\n")
            .expect("write cmstore.toml");
    }

    /// Sets `[budget]` to `budget` (in enforce mode, with the gate's) and records `responses`
    /// more responses of today, $0.60 each (100,000 input and 20,000 output tokens of
    /// claude-sonnet-4-5), of a session of its own; then ingests, which writes the spend file
    /// the hooks read.
    pub fn spend(&self, budget: &str, responses: usize) {
        std::fs::write(
            self.cmhome().join("cmstore.toml"),
            format!("mode = \"enforce\"\n[budget]\nmode = \"enforce\"\n{budget}"),
        )
        .expect("write cmstore.toml");
        let mut lines = String::new();
        let now = chrono::Utc::now().timestamp_millis() - 1000;
        for _ in 0..responses {
            let id = uuid::Uuid::now_v7().to_string();
            let line = json!({"hookType": "Stop", "timestamp": now, "sessionId": "spent",
                "cwd": "/elsewhere", "id": id, "v": 1, "agent": "claude",
                "usage": [{"messageId": id, "model": "claude-sonnet-4-5", "input": 100_000,
                           "output": 20_000, "cacheWrite": 0, "cacheRead": 0, "ts": now,
                           "offset": 1}],
                "sizeBytes": 1, "estimatedTokens": 1, "hookExecutionMs": 0});
            lines.push_str(&format!("{line}\n"));
        }
        let mut queue = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.cmhome().join("hook-queue.jsonl"))
            .expect("open the queue");
        std::io::Write::write_all(&mut queue, lines.as_bytes()).expect("append usage lines");
        self.ingest();
    }

    /// A command for `program` with nothing of the real environment but `PATH` (node, sh):
    /// homes, config dirs and temp dir inside this world, no proxies, no real keys.
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear();
        let mut path = self.path_first.borrow().clone();
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        cmd.env("PATH", std::env::join_paths(path).expect("a PATH"));
        let home = self.home();
        cmd.env("HOME", &home)
            .env("USERPROFILE", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("TMPDIR", self.tmp())
            .env("NO_PROXY", "127.0.0.1,localhost")
            .env("TERM", "dumb")
            .env("NO_COLOR", "1")
            .current_dir(self.project());
        cmd
    }

    /// `cmstore` with this world's homes.
    pub fn cmstore(&self) -> Command {
        let mut cmd = self.command(Path::new(env!("CARGO_BIN_EXE_cmstore")));
        cmd.arg("--home").arg(self.cmhome());
        cmd
    }

    /// Runs `cmstore ARGS`, failing the test unless it succeeds; returns stdout.
    /// Bounded like the agents: a cmstore that hangs fails the test instead of the suite.
    pub fn cmstore_ok(&self, args: &[&str]) -> String {
        let mut cmd = self.cmstore();
        cmd.args(args);
        let run = spawn(self, "cmstore", cmd).wait(CMSTORE_TIMEOUT);
        assert!(
            run.status.success(),
            "cmstore {args:?} failed: {}",
            run.stderr
        );
        run.stdout
    }

    /// `cmstore query --format json SQL`: the rows.
    pub fn query(&self, sql: &str) -> Vec<Value> {
        let out = self.cmstore_ok(&["query", "--format", "json", sql]);
        match serde_json::from_str(&out) {
            Ok(Value::Array(rows)) => rows,
            other => panic!("query {sql:?} gave {other:?}"),
        }
    }

    /// Mirrors the queue into the store (one-shot ingest).
    pub fn ingest(&self) {
        self.cmstore_ok(&["ingest", "--once"]);
    }

    /// The single value of a one-row, one-column query.
    pub fn scalar(&self, sql: &str) -> Value {
        let rows = self.query(sql);
        assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
        rows[0]
            .as_object()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone()
    }

    /// The queue lines, for messages when an assertion fails.
    pub fn queue_text(&self) -> String {
        std::fs::read_to_string(self.cmhome().join("hook-queue.jsonl")).unwrap_or_default()
    }

    /// The workspace files of cmstore's state dir (the sessions a sweep may close), for
    /// messages when an assertion fails.
    pub fn workspace_text(&self) -> String {
        let Ok(entries) = std::fs::read_dir(self.cmhome().join("state")) else {
            return "(no state dir)".into();
        };
        let mut text = String::new();
        for path in entries.flatten().map(|e| e.path()) {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if name.starts_with("ws-") && name.ends_with(".json") {
                let body = std::fs::read_to_string(&path).unwrap_or_default();
                text.push_str(&format!("{name}: {body}\n"));
            }
        }
        text
    }
}

/// The one turn of `world`'s store holds `prompt` and says it was interrupted (issue 15.5).
pub fn assert_interrupted_turn(world: &World, prompt: &str) {
    let queue = world.queue_text();
    let turns = world.query("select prompt from turns");
    assert_eq!(turns, vec![json!({ "prompt": prompt })], "queue:\n{queue}");
    let outcome = world.query("select outcome from turns");
    assert_eq!(
        outcome,
        vec![json!({"outcome": "interrupted"})],
        "queue:\n{queue}"
    );
}

/// An agent's finished run: exit status and what it printed.
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Fails the test, showing the output, unless the agent exited 0.
    pub fn assert_ok(&self) {
        assert!(
            self.status.success(),
            "agent exited {:?}\nstdout: {}\nstderr: {}",
            self.status,
            self.stdout,
            self.stderr
        );
    }

    /// The agent's stdout as one JSON object (`-p … --output-format json`).
    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("agent stdout is not JSON ({e}): {}", self.stdout))
    }
}

/// A started agent, killed (with everything it started) if the test lets go of it.
pub struct Running {
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

/// Starts `cmd` in its own process group, stdout and stderr to `NAME.stdout` and
/// `NAME.stderr` in `world`.
pub fn spawn(world: &World, name: &str, mut cmd: Command) -> Running {
    let out = world.dir.path().join(format!("{name}.stdout"));
    let err = world.dir.path().join(format!("{name}.stderr"));
    cmd.stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"));
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let child = cmd.spawn().expect("start the agent");
    Running { child, out, err }
}

impl Running {
    /// Waits for the agent to exit, at most `limit`; kills it and fails the test past that.
    pub fn wait(mut self, limit: Duration) -> Run {
        match self.wait_until(Instant::now() + limit) {
            Some(status) => self.finish(status),
            None => {
                self.kill();
                let run = self.finish_killed();
                panic!(
                    "agent still running after {limit:?}; killed\nstdout: {}\nstderr: {}",
                    run.stdout, run.stderr
                );
            }
        }
    }

    /// Sends SIGINT (Ctrl-C) to the agent's process group (Unix); elsewhere kills it.
    pub fn interrupt(&mut self) {
        self.signal("INT");
    }

    /// Waits at most `limit` for an exit; kills the agent after that. Never fails.
    pub fn wait_or_kill(mut self, limit: Duration) -> Run {
        match self.wait_until(Instant::now() + limit) {
            Some(status) => self.finish(status),
            None => {
                self.kill();
                self.finish_killed()
            }
        }
    }

    fn wait_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for the agent") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill(&mut self) {
        self.signal("KILL");
        let _ = self.child.kill();
    }

    /// Signals the whole process group: the agent's shells and hooks go with it.
    #[cfg(unix)]
    fn signal(&mut self, name: &str) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args([&format!("-{name}"), "--", &group])
            .status();
    }

    #[cfg(not(unix))]
    fn signal(&mut self, _name: &str) {
        let _ = self.child.kill();
    }

    fn finish_killed(&mut self) -> Run {
        let status = self.child.wait().expect("reap the agent");
        self.finish(status)
    }

    fn finish(&self, status: ExitStatus) -> Run {
        Run {
            status,
            stdout: std::fs::read_to_string(&self.out).unwrap_or_default(),
            stderr: std::fs::read_to_string(&self.err).unwrap_or_default(),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill();
            let _ = self.child.wait();
        }
    }
}

/// One agent run the tests of a file share: its world, the mock model API it talked to (kept
/// alive for the requests it saw), the run, and the session id the agent reported.
pub struct Session {
    pub world: World,
    pub mock: MockServer,
    pub run: Run,
    pub id: String,
}

/// The id of the one session of `agent` in `world`'s store after `run`; fails the test with
/// the queue and what the agent printed when there is none.
pub fn only_session(world: &World, agent: &str, run: &Run) -> String {
    let rows = world.query(&format!(
        "SELECT session_id FROM sessions WHERE agent = '{agent}'"
    ));
    rows.first()
        .and_then(|r| r["session_id"].as_str())
        .unwrap_or_else(|| {
            panic!(
                "no {agent} session in the store\nqueue:\n{}\nstdout: {}\nstderr: {}",
                world.queue_text(),
                run.stdout,
                run.stderr
            )
        })
        .to_string()
}

impl Session {
    /// Runs `cmd` (the agent `agent`) in `world` against `mock` to its end, which must be a
    /// success, and ingests: the one session of the agent it leaves.
    pub fn run(world: World, mock: MockServer, agent: &str, cmd: Command) -> Session {
        let run = spawn(&world, agent, cmd).wait(AGENT_TIMEOUT);
        run.assert_ok();
        world.ingest();
        let id = only_session(&world, agent, &run);
        Session {
            world,
            mock,
            run,
            id,
        }
    }

    /// The hook types of the session's events of `agent`, in their order.
    pub fn hook_types(&self, agent: &str) -> Vec<String> {
        self.query(&format!(
            "SELECT hook_type FROM events WHERE session_id = :sid AND agent = '{agent}' \
             ORDER BY seq"
        ))
        .iter()
        .map(|r| r["hook_type"].as_str().unwrap_or("").to_string())
        .collect()
    }

    /// Rows of `sql` over the session's store, `:sid` standing for the session id.
    pub fn query(&self, sql: &str) -> Vec<Value> {
        let sql = sql.replace(":sid", &format!("'{}'", self.id));
        self.world.query(&sql)
    }

    /// What a failing assertion prints: the queue and what the agent printed.
    pub fn context(&self) -> String {
        format!(
            "queue:\n{}\nagent stdout: {}\nagent stderr: {}",
            self.world.queue_text(),
            self.run.stdout,
            self.run.stderr
        )
    }
}

/// Asserts that the model behind `mock` was told where the budget [`World::spend`] set
/// (`day = 1`, `warn_at = 0.5`, one response) stands: the agent passed the hook's context on.
pub fn assert_budget_warned(world: &World, mock: &MockServer) {
    let warning = "cmstore budget: $0.60 spent of the daily budget of $1.00 (60 %).";
    let sent: String = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(
        sent.contains(warning),
        "the warning reached the model\n{}",
        world.queue_text()
    );
}

/// Asserts that the agent's `run` in `world` refused `prompt` on a `[budget]` limit: the
/// prompt never reached `mock`, and the `UserPromptSubmit` line holding it is denied past the
/// limit (Gemini CLI puts the context its session start was given in front of the prompt).
/// Returns what to print with a later assertion that fails.
pub fn assert_prompt_refused(world: &World, mock: &MockServer, run: &Run, prompt: &str) -> String {
    world.ingest();
    let context = format!(
        "stdout: {}\nstderr: {}\nqueue:\n{}",
        run.stdout,
        run.stderr,
        world.queue_text()
    );
    assert!(
        mock.requests()
            .iter()
            .all(|r| !r.body.to_string().contains(prompt)),
        "the refused prompt reached the model\n{context}"
    );
    let prompts = world.query(&format!(
        "select decision, json_extract(entry, '$.budget.level') level from events
         where hook_type = 'UserPromptSubmit' and instr(prompt, '{}') > 0",
        prompt.replace('\'', "''")
    ));
    assert_eq!(
        prompts,
        vec![json!({"decision": "deny", "level": "over"})],
        "{context}"
    );
    context
}

/// Issue 37: an import of the agent's transcripts after its hooks leaves `turns` as the hooks
/// made it (`by_hooks`, the rows of `sql` before), and `v_coverage` counts each of them shown
/// and hooked.
pub fn assert_import_changed_no_turn(world: &World, (sql, by_hooks): (&str, &[Value]), ctx: &str) {
    assert_eq!(world.query(sql), by_hooks, "after import\n{ctx}");
    assert_eq!(
        world.query(
            "SELECT sum(transcript_turns) shown, sum(hooked_turns) hooked, \
             sum(missed_turns) missed FROM v_coverage"
        ),
        vec![json!({"shown": by_hooks.len(), "hooked": by_hooks.len(), "missed": 0})],
        "{ctx}"
    );
}

/// Issue 37: every tool call the session's transcript (or store) shows, the hooks recorded by
/// the same id, and every call the hooks recorded the transcript shows.
pub fn assert_every_call_hooked(s: &Session, ctx: &str) {
    let calls = s.query("SELECT count(*) n FROM tool_calls WHERE session_id = :sid");
    assert_eq!(
        s.query(
            "SELECT transcript_tool_calls n, missed_tool_calls missed,
                    hook_only_tool_calls hook_only FROM v_coverage WHERE session_id = :sid"
        ),
        vec![json!({"n": calls[0]["n"], "missed": 0, "hook_only": 0})],
        "{ctx}"
    );
}
