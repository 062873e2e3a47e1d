//! Shared test set-up: every test gets its own home directory, never the user's.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as StdCommand, Stdio};
use std::time::{Duration, Instant};

use cmstore::model::queue_line::QueueEntry;
use serde_json::Value;

/// A private cmstore home (and user home) in a temporary directory.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let env = TestEnv {
            dir: tempfile::tempdir().expect("tempdir"),
        };
        env.fake_claude(Some("2.1.332 (Claude Code)"));
        env
    }

    /// Where the test's PATH looks first for the agents' CLIs.
    pub fn agent_bin(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    /// A `claude` first on the test's PATH that prints `says` to `--version` (`None`: no
    /// `claude` there). Each test has one saying it is the pinned Claude Code, so that
    /// `hooks install` writes the same events whatever is installed on the machine.
    pub fn fake_claude(&self, says: Option<&str>) {
        let path = self.agent_bin().join("claude");
        let Some(says) = says else {
            let _ = std::fs::remove_file(&path);
            return;
        };
        std::fs::create_dir_all(self.agent_bin()).expect("create bin");
        std::fs::write(&path, format!("#!/bin/sh\necho '{says}'\n")).expect("write claude");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .expect("chmod claude");
        }
    }

    /// The cmstore home (`CMSTORE_HOME`).
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("cmhome")
    }

    /// The fake user home (`HOME`), where transcripts are discovered.
    pub fn user_home(&self) -> PathBuf {
        self.dir.path().join("user")
    }

    pub fn queue(&self) -> PathBuf {
        self.home().join("hook-queue.jsonl")
    }

    /// `cmstore` with this environment's homes and no inherited `CMSTORE_*` settings.
    pub fn cmd(&self) -> assert_cmd::Command {
        assert_cmd::Command::from_std(self.std_cmd())
    }

    /// The same command as [`TestEnv::cmd`], as a std `Command` for spawning.
    pub fn std_cmd(&self) -> StdCommand {
        let mut cmd = StdCommand::new(bin());
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("CMSTORE_") {
                cmd.env_remove(&key);
            }
        }
        for key in [
            "APPDATA",
            "XDG_CONFIG_HOME",
            "CLAUDE_CONFIG_DIR",
            "USERPROFILE",
            "COPILOT_HOME",
            "CODEX_HOME",
            "QWEN_HOME",
            "QWEN_RUNTIME_DIR",
            "VSCODE_PORTABLE",
            "VSCODE_APPDATA",
            "XDG_DATA_HOME",
            "CLINE_DIR",
            "CLINE_DATA_DIR",
            "KIRO_SESSION_ID",
            "QODER_CONFIG_DIR",
            "KIMI_CODE_HOME",
            "GOOSE_PATH_ROOT",
        ] {
            cmd.env_remove(key);
        }
        cmd.env("CMSTORE_HOME", self.home());
        cmd.env("HOME", self.user_home());
        let mut path = vec![self.agent_bin()];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        cmd.env("PATH", std::env::join_paths(path).expect("a PATH"));
        cmd
    }

    pub fn db(&self) -> PathBuf {
        self.home().join("cmstore.db")
    }

    /// Every queue line, parsed.
    pub fn queue_lines(&self) -> Vec<Value> {
        read_lines(&self.queue())
    }

    /// Starts `cmstore ingest` in follow mode with `extra` arguments.
    pub fn spawn_follow(&self, extra: &[&str]) -> Child {
        self.std_cmd()
            .arg("ingest")
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn ingest")
    }

    /// Makes the queue path a symlink to an empty file in another directory (a queue kept on
    /// another disk, say) and returns that file.
    #[cfg(unix)]
    pub fn link_queue_elsewhere(&self) -> PathBuf {
        let elsewhere = self.dir.path().join("elsewhere");
        std::fs::create_dir_all(&elsewhere).expect("create elsewhere");
        std::fs::create_dir_all(self.home()).expect("create home");
        let real = elsewhere.join("queue.jsonl");
        std::fs::write(&real, "").expect("create the real queue");
        std::os::unix::fs::symlink(&real, self.queue()).expect("link the queue");
        real
    }

    /// `cmstore ingest --once`, asserted successful.
    pub fn ingest_once(&self) {
        self.cmd().args(["ingest", "--once"]).assert().success();
    }

    /// Appends lines through the library's locked append.
    pub fn append(&self, lines: &[String]) {
        cmstore::files::queue::append_lines(&self.queue(), lines).expect("append");
    }

    /// Appends raw bytes, unlocked (half-written lines, garbage).
    pub fn append_raw(&self, bytes: &[u8]) {
        std::fs::create_dir_all(self.home()).expect("create home");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.queue())
            .expect("open queue");
        f.write_all(bytes).expect("write queue");
    }

    /// A read-write connection to the database, for a test to stage what time or another
    /// program would have done.
    pub fn rw(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open(self.db()).expect("open db");
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn
    }

    /// Makes the store take its queue for another file, as a remount that changed `st_dev` or
    /// a copy of the queue put back would: the next ingest retires the live `sources` row and
    /// reads the queue again from its start.
    pub fn make_ingest_read_again_from_start(&self) {
        self.rw()
            .execute(
                "UPDATE sources SET fingerprint = 'another file', device = device + 1
                 WHERE retired_at IS NULL",
                [],
            )
            .expect("stage a re-read");
    }

    /// A read-only connection to the database.
    pub fn conn(&self) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open_with_flags(
            self.db(),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open db");
        conn.busy_timeout(Duration::from_secs(10)).unwrap();
        conn
    }

    /// One integer from `sql`.
    pub fn int(&self, sql: &str) -> i64 {
        self.conn()
            .query_row(sql, [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    /// One text from `sql` (NULL: the empty string).
    pub fn text(&self, sql: &str) -> String {
        self.conn()
            .query_row(sql, [], |r| r.get::<_, Option<String>>(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .unwrap_or_default()
    }

    /// Polls `sql` until it returns `want` or `timeout` passes; returns the last value.
    pub fn wait_for(&self, sql: &str, want: i64, timeout: Duration) -> i64 {
        let deadline = Instant::now() + timeout;
        loop {
            let got = if self.db().exists() {
                rusqlite::Connection::open_with_flags(
                    self.db(),
                    rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
                )
                .and_then(|c| c.query_row(sql, [], |r| r.get(0)))
                .unwrap_or(-1)
            } else {
                -1
            };
            if got == want || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Path of the binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cmstore"))
}

/// Parses every line of a JSONL file, failing the test on any line that does not parse.
pub fn read_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l:?}: {e}")))
        .collect()
}

/// Our own payload fixture from `tests/fixtures/payloads`.
pub fn payload(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/payloads")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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

/// The shared real fixtures (`../shared/fixtures/real`), or `None` with a printed note.
pub fn real_fixtures() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures/real");
    if dir.is_dir() {
        Some(dir)
    } else {
        skipped(&format!("{} is absent (real fixtures)", dir.display()));
        None
    }
}

/// The shared fixtures of more users and agents (`../shared/fixtures/real-more/<agent>`), or
/// `None` with a printed note.
pub fn real_more_fixtures(agent: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/fixtures/real-more")
        .join(agent);
    if dir.is_dir() {
        Some(dir)
    } else {
        skipped(&format!("{} is absent (real fixtures)", dir.display()));
        None
    }
}

/// `cmstore ARGS` in UTC at 100 columns, asserted successful; its stdout.
pub fn run_at_100(env: &TestEnv, args: &[&str]) -> String {
    run_in_zone(env, "UTC", args)
}

/// `cmstore verify --json`, asserted to find the chain whole (issue 39): no stored row
/// altered, removed or inserted since ingest stored it. Returns its report.
pub fn assert_chain_whole(env: &TestEnv) -> Value {
    let out = env.cmd().args(["verify", "--json"]).output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(out.status.success(), "{report}");
    assert_eq!(report["problems"], 0, "{report}");
    report
}

/// `cmstore ARGS --format json`, asserted successful: its rows.
pub fn json_rows(env: &TestEnv, args: &[&str]) -> Vec<Value> {
    let mut args = args.to_vec();
    args.extend(["--format", "json"]);
    match serde_json::from_str(&run_at_100(env, &args)).unwrap() {
        Value::Array(rows) => rows,
        other => panic!("not an array: {other}"),
    }
}

/// `cmstore ARGS` with `TZ` set to `tz`, at 100 columns, asserted successful; its stdout.
pub fn run_in_zone(env: &TestEnv, tz: &str, args: &[&str]) -> String {
    let out = env
        .cmd()
        .env("TZ", tz)
        .env("COLUMNS", "100")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The one error a failed command printed: asserts exit code 1, nothing on stdout, one line on
/// stderr starting `cmstore: ` in which no part of the cause chain (the text between `: `)
/// is said twice; returns that line.
pub fn the_one_error(out: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut lines = stderr.lines();
    let line = lines.next().unwrap_or_default().to_string();
    assert_eq!(lines.next(), None, "one line: {stderr}");
    let message = line
        .strip_prefix("cmstore: ")
        .unwrap_or_else(|| panic!("not an error of cmstore's: {line}"));
    let parts: Vec<&str> = message.split(": ").collect();
    for (i, part) in parts.iter().enumerate() {
        assert!(
            !parts[i + 1..].contains(part),
            "{part:?} said twice: {line}"
        );
    }
    line
}

/// Runs `cmstore capture` with `stdin` and `args`; asserts exit 0 and one JSON object on
/// stdout, and returns it.
pub fn capture(env: &TestEnv, stdin: impl Into<Vec<u8>>, args: &[&str]) -> Value {
    let out = env
        .cmd()
        .arg("capture")
        .args(args)
        .write_stdin(stdin.into())
        .output()
        .expect("run cmstore");
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    one_json_object(&out.stdout)
}

/// Parses stdout as exactly one JSON object (what every agent requires).
pub fn one_json_object(stdout: &[u8]) -> Value {
    let text = std::str::from_utf8(stdout).expect("stdout is UTF-8");
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let first = stream
        .next()
        .expect("stdout holds a JSON value")
        .expect("stdout parses");
    assert!(
        stream.next().is_none(),
        "stdout holds more than one JSON value: {text:?}"
    );
    assert!(first.is_object(), "stdout is not an object: {text:?}");
    first
}

/// A v1 line of `hook_type` in `session`, with a fresh UUIDv7 id.
pub fn line(hook_type: &str, session: &str) -> String {
    entry(hook_type, session).to_line()
}

/// A v1 entry of `hook_type` in `session`, to adjust before `to_line()`.
pub fn entry(hook_type: &str, session: &str) -> QueueEntry {
    let mut e = QueueEntry::new(hook_type, now_ms());
    e.session_id = Some(session.to_string());
    e.agent = Some("claude".into());
    if hook_type.contains("Tool") {
        e.tool_name = Some("Bash".into());
    }
    if hook_type.starts_with("Session") {
        e.actor_name = Some("main".into());
        e.actor_type = Some("agent".into());
    }
    e
}

/// `n` known, complete v1 lines spread over a few sessions.
pub fn lines(n: usize) -> Vec<String> {
    const TYPES: [&str; 4] = [
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Notification",
    ];
    (0..n)
        .map(|i| line(TYPES[i % TYPES.len()], &format!("s{}", i % 3)))
        .collect()
}

/// Sends SIGTERM to `child` (Unix `kill`, no `unsafe`).
#[cfg(unix)]
pub fn terminate(child: &Child) {
    let status = StdCommand::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// Waits at most `timeout` for `child` to exit.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The seeded generator the workloads use (`cmstore_workload::Rng`), for tests that choose
/// faults at random: one generator in the repository.
pub use cmstore_workload::Rng;

/// Now, in epoch milliseconds.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// One Claude Code transcript line of an API response `id` in `session` at `iso` (RFC 3339):
/// 10 input and 5 output tokens of `claude-sonnet-4-5`, request id `req_{id}`.
pub fn response_line(session: &str, id: &str, iso: &str) -> String {
    serde_json::json!({"type": "assistant", "sessionId": session, "timestamp": iso,
        "requestId": format!("req_{id}"), "message": {"id": id, "role": "assistant",
        "model": "claude-sonnet-4-5", "usage": {"input_tokens": 10, "output_tokens": 5}}})
    .to_string()
}

/// Writes `lines` as the transcript `name` beside `env`'s home and runs `cmstore import` on it.
pub fn import_lines(env: &TestEnv, name: &str, lines: &[String]) {
    let transcript = env.dir.path().join(name);
    std::fs::write(&transcript, lines.join("\n") + "\n").unwrap();
    env.cmd()
        .args(["import", transcript.to_str().unwrap()])
        .assert()
        .success();
}

/// A PostgreSQL database of its own for one test, dropped when the test ends.
pub struct PgDatabase {
    /// Its connection URL (loopback, no TLS).
    pub url: String,
    admin: String,
    name: String,
}

impl PgDatabase {
    /// A client of the database.
    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url, postgres::NoTls).expect("connect to the test database")
    }

    /// The one whole number `sql` selects.
    pub fn int(&self, sql: &str) -> i64 {
        self.client()
            .query_one(sql, &[])
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .get(0)
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        if let Ok(mut admin) = postgres::Client::connect(&self.admin, postgres::NoTls) {
            let _ = admin.batch_execute(&format!(
                "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                self.name
            ));
        }
    }
}

/// The test server's admin URL (a role that may create databases): `CMSTORE_TEST_PG` (a URL
/// naming the database `postgres`), else this machine's PostgreSQL cluster, started if it is
/// not running (`pg_ctlcluster`, as Debian has it; `.ci/run` does the same), with a test role
/// of its own (`cmstore_test`, created through `runuser -u postgres`). `None` when there is
/// no server to use.
fn pg_admin_url() -> Option<String> {
    static URL: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("CMSTORE_TEST_PG") {
            return Some(url);
        }
        let run = |program: &str, args: &[&str]| {
            StdCommand::new(program)
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let clusters = StdCommand::new("pg_lsclusters")
            .arg("--no-header")
            .output()
            .ok()?;
        let first = String::from_utf8_lossy(&clusters.stdout)
            .lines()
            .next()?
            .to_owned();
        let fields: Vec<&str> = first.split_whitespace().collect();
        let (version, cluster, port) = (fields.first()?, fields.get(1)?, fields.get(2)?);
        if !first.contains("online") && !run("pg_ctlcluster", &[version, cluster, "start"]) {
            return None;
        }
        let role = "DO $$ BEGIN CREATE ROLE cmstore_test LOGIN CREATEDB PASSWORD 'cmstore_test'; \
                    EXCEPTION WHEN duplicate_object THEN NULL; END $$;";
        let psql = ["-u", "postgres", "--", "psql", "-p", port, "-c", role];
        if !run("runuser", &psql) {
            return None;
        }
        Some(format!(
            "postgres://cmstore_test:cmstore_test@127.0.0.1:{port}/postgres?sslmode=disable"
        ))
    })
    .clone()
}

/// A fresh database on the test server, or `None` with a printed note.
pub fn pg_database() -> Option<PgDatabase> {
    let database = pg_database_if_any();
    if database.is_none() {
        skipped("no PostgreSQL server: set CMSTORE_TEST_PG or install postgresql");
    }
    database
}

/// [`pg_database`] for a test that runs without one too (saying so is the caller's part).
pub fn pg_database_if_any() -> Option<PgDatabase> {
    let Some(admin) = pg_admin_url() else {
        assert!(
            std::env::var("CMSTORE_PG").as_deref() != Ok("require"),
            "CMSTORE_PG=require: no PostgreSQL server"
        );
        return None;
    };
    let name = format!("cmstore_t_{}", uuid::Uuid::new_v4().simple());
    let mut client = postgres::Client::connect(&admin, postgres::NoTls)
        .unwrap_or_else(|e| panic!("the test server at {admin}: {e}"));
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .expect("create a test database");
    let url = match admin.rsplit_once("/postgres") {
        Some((base, query)) => format!("{base}/{name}{query}"),
        None => panic!("CMSTORE_TEST_PG must name the database `postgres`: {admin}"),
    };
    Some(PgDatabase { url, admin, name })
}

/// A PostgreSQL server of a test's own, in a temporary directory on a free port, which the
/// test may stop and start (the shared one, [`pg_database`], serves every test at once).
/// Trust authentication on loopback, user `cmstore`. Made by the `initdb` beside `pg_config
/// --bindir`, as the `postgres` user when the tests run as root (initdb refuses root). Unix
/// only: its socket directory, `id`, `chown` and `runuser`.
#[cfg(unix)]
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    as_postgres: bool,
    pub port: u16,
}

#[cfg(unix)]
impl PgCluster {
    /// A new cluster, started; `None` (said on stderr, or a panic under `CMSTORE_PG=require`)
    /// when there is no `initdb`.
    pub fn start() -> Option<PgCluster> {
        let bin = StdCommand::new("pg_config")
            .arg("--bindir")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .or_else(|| {
                let debian = Path::new("/usr/lib/postgresql");
                let mut versions: Vec<PathBuf> = std::fs::read_dir(debian)
                    .ok()?
                    .flatten()
                    .map(|e| e.path().join("bin"))
                    .collect();
                versions.sort();
                versions.pop()
            })
            .filter(|bin| bin.join("initdb").exists());
        let Some(bin) = bin else {
            let why = "no initdb: install postgresql";
            assert!(
                std::env::var("CMSTORE_PG").as_deref() != Ok("require"),
                "CMSTORE_PG=require: {why}"
            );
            skipped(why);
            return None;
        };
        let as_postgres = StdCommand::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        let dir = tempfile::tempdir().unwrap();
        if as_postgres {
            let chown = StdCommand::new("chown")
                .args(["-R", "postgres"])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(chown.success());
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = PgCluster {
            dir,
            bin,
            as_postgres,
            port,
        };
        let data = cluster.data();
        cluster.run(
            "initdb",
            &["-D", &data, "-U", "cmstore", "--auth=trust", "-E", "UTF8"],
        );
        cluster.start_server();
        Some(cluster)
    }

    fn data(&self) -> String {
        self.dir.path().join("data").display().to_string()
    }

    /// One of the server's programs, run as the user the cluster belongs to.
    fn command(&self, program: &str) -> StdCommand {
        let program = self.bin.join(program);
        match self.as_postgres {
            true => {
                let mut c = StdCommand::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&program);
                c
            }
            false => StdCommand::new(&program),
        }
    }

    /// Runs one of the server's programs; asserts success.
    fn run(&self, program: &str, args: &[&str]) {
        let out = self.command(program).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{program} {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server and waits until it takes connections.
    pub fn start_server(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.path().display()
        );
        let log = self.dir.path().join("server.log").display().to_string();
        let data = self.data();
        self.run(
            "pg_ctl",
            &["-D", &data, "-o", &options, "-l", &log, "-w", "start"],
        );
    }

    /// Stops the server at once, its connections cut (`pg_ctl stop -m immediate`: as a crash).
    pub fn stop_server(&self) {
        let data = self.data();
        self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!(
            "postgres://cmstore@127.0.0.1:{}/postgres?sslmode=disable",
            self.port
        )
    }

    pub fn client(&self) -> postgres::Client {
        postgres::Client::connect(&self.url(), postgres::NoTls).unwrap()
    }
}

#[cfg(unix)]
impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.data();
        let _ = self
            .command("pg_ctl")
            .args(["-D", &data, "-m", "immediate", "stop"])
            .output();
    }
}
