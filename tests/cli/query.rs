//! `cmstore query`: read-only guarantees, every output format parsed back, parameters, SQL
//! sources, row cap, time limit, SQL errors and broken pipes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use serde_json::Value;

use crate::common::{bin, TestEnv};

/// An integer past 2^53, where a JSON parser using doubles would lose it.
const BIG: i64 = 9_007_199_254_740_993;

/// Creates `<home>/cmstore.db` with a few events and a `vals` table of tricky values.
fn store(env: &TestEnv) -> PathBuf {
    std::fs::create_dir_all(env.home()).unwrap();
    let path = env.home().join("cmstore.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE events(seq INTEGER PRIMARY KEY, id TEXT UNIQUE NOT NULL, ts INTEGER NOT NULL,
                             hook_type TEXT, session_id TEXT, tool_name TEXT, prompt TEXT,
                             entry TEXT);
         INSERT INTO events(id, ts, hook_type, session_id, tool_name, prompt, entry) VALUES
           ('e1', 1000, 'UserPromptSubmit', 's1', NULL, 'fix the bug', '{}'),
           ('e2', 2000, 'PreToolUse', 's1', 'Bash', NULL, '{}'),
           ('e3', 3000, 'PostToolUse', 's1', 'Bash', NULL, '{}'),
           ('e4', 4000, 'UserPromptSubmit', '0123', NULL, 'other', '{}'),
           ('e5', 5000, 'Stop', 's2', NULL, NULL, '{}');
         CREATE TABLE vals(n, big, real, uni, nl, quote, blob, empty);
         PRAGMA user_version = 3;",
    )
    .unwrap();
    conn.execute(
        "INSERT INTO vals VALUES (NULL, ?1, 1.0, 'héllo 🦀', 'two\nlines', 'say \"hi\", ok',
                                  x'0001feff', '')",
        [BIG],
    )
    .unwrap();
    path
}

fn user_version(path: &Path) -> i64 {
    let conn = Connection::open(path).unwrap();
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

fn stdout_of(output: &std::process::Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr_of(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs `cmstore query <args>` and expects success.
fn query_ok(env: &TestEnv, args: &[&str]) -> String {
    let output = env.cmd().arg("query").args(args).output().unwrap();
    assert!(
        output.status.success(),
        "query {args:?} failed: {}",
        stderr_of(&output)
    );
    stdout_of(&output)
}

/// Runs `cmstore query <args>`, expects exit 1 and an empty stdout; returns stderr.
fn query_fails(env: &TestEnv, args: &[&str]) -> String {
    let output = env.cmd().arg("query").args(args).output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(1),
        "query {args:?} did not fail: {}",
        stdout_of(&output)
    );
    assert_eq!(stdout_of(&output), "", "query {args:?} printed rows");
    stderr_of(&output)
}

#[test]
fn every_write_form_is_refused_and_the_database_is_unchanged() {
    let env = TestEnv::new();
    let db = store(&env);
    let before = std::fs::read(&db).unwrap();
    let copy = env.dir.path().join("copy.db");
    let other = env.dir.path().join("other.db");
    let writes = [
        "INSERT INTO events(id, ts) VALUES ('x', 1)".to_owned(),
        "insert into events(id, ts) values ('x', 1) returning seq".to_owned(),
        "WITH n AS (SELECT 1) INSERT INTO events(id, ts) SELECT 'y', 1 FROM n".to_owned(),
        "UPDATE events SET ts = 0".to_owned(),
        "DELETE FROM events".to_owned(),
        "REPLACE INTO events(id, ts) VALUES ('e1', 1)".to_owned(),
        "DROP TABLE events".to_owned(),
        "DROP TABLE IF EXISTS vals".to_owned(),
        "CREATE TABLE t(a)".to_owned(),
        "CREATE TEMP TABLE t(a)".to_owned(),
        "CREATE INDEX i ON events(ts)".to_owned(),
        "CREATE VIEW v AS SELECT 1".to_owned(),
        "CREATE TRIGGER tr AFTER INSERT ON events BEGIN SELECT 1; END".to_owned(),
        "ALTER TABLE events ADD COLUMN z".to_owned(),
        "ALTER TABLE events RENAME TO e".to_owned(),
        format!("ATTACH '{}' AS o", other.display()),
        "ATTACH ':memory:' AS m".to_owned(),
        "DETACH main".to_owned(),
        "VACUUM".to_owned(),
        format!("VACUUM INTO '{}'", copy.display()),
        "PRAGMA user_version = 5".to_owned(),
        "pragma user_version=5".to_owned(),
        "PRAGMA journal_mode = delete".to_owned(),
        "PRAGMA journal_mode = wal".to_owned(),
        "PRAGMA query_only = OFF".to_owned(),
        "PRAGMA writable_schema = ON".to_owned(),
        "PRAGMA wal_checkpoint(TRUNCATE)".to_owned(),
        "PRAGMA optimize".to_owned(),
        "BEGIN IMMEDIATE".to_owned(),
        "ANALYZE".to_owned(),
        "REINDEX".to_owned(),
    ];
    for sql in &writes {
        let stderr = query_fails(&env, &[sql]);
        assert!(
            stderr.starts_with("cmstore: query refused: the store is read-only ("),
            "{sql}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{sql}: {stderr}");
    }
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "database bytes changed"
    );
    assert_eq!(user_version(&db), 3);
    assert!(!copy.exists(), "VACUUM INTO wrote a copy");
    assert!(!other.exists(), "ATTACH created a database");
    // The rows are all still there.
    assert_eq!(
        query_ok(&env, &["select count(*) as n from events"]),
        "n\n5\n"
    );
}

#[test]
fn a_write_hidden_after_a_read_is_refused_as_a_second_statement() {
    let env = TestEnv::new();
    store(&env);
    for sql in [
        "select 1; delete from events",
        "select 1; select 2",
        "PRAGMA query_only = OFF; DELETE FROM events",
    ] {
        let stderr = query_fails(&env, &[sql]);
        assert!(stderr.contains("query refused"), "{sql}: {stderr}");
    }
    assert_eq!(
        query_ok(&env, &["select count(*) from events"]),
        "count(*)\n5\n"
    );
    // A trailing semicolon or comment is not a second statement.
    assert_eq!(query_ok(&env, &["select 7 as n; -- done\n"]), "n\n7\n");
}

#[test]
fn attach_is_refused_with_its_name_in_the_message() {
    let env = TestEnv::new();
    store(&env);
    let other = env.dir.path().join("attached.db");
    let sql = format!("attach database '{}' as a", other.display());
    let stderr = query_fails(&env, &[&sql]);
    assert!(stderr.contains("ATTACH"), "{stderr}");
    assert!(!other.exists());
}

#[test]
fn reading_pragmas_and_schema_introspection_work() {
    let env = TestEnv::new();
    store(&env);
    assert_eq!(
        query_ok(&env, &["pragma user_version"]),
        "user_version\n3\n"
    );
    let info = query_ok(&env, &["pragma table_info(events)"]);
    assert!(info.contains("\tsession_id\tTEXT\t"), "{info}");
    let info = query_ok(
        &env,
        &["select name from pragma_table_info('vals') limit 2"],
    );
    assert_eq!(info, "name\nn\nbig\n");
    let tables = query_ok(
        &env,
        &["select name from sqlite_master where type = 'table' order by 1"],
    );
    assert_eq!(tables, "name\nevents\nvals\n");
}

#[test]
fn a_missing_database_is_reported_and_never_created() {
    let env = TestEnv::new();
    let default_db = env.home().join("cmstore.db");
    let stderr = query_fails(&env, &["select 1"]);
    assert!(stderr.contains("no database at"), "{stderr}");
    assert!(
        stderr.contains(&default_db.display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("run `cmstore ingest` first"), "{stderr}");
    assert!(!default_db.exists());

    let elsewhere = env.dir.path().join("nowhere").join("x.db");
    let output = env
        .cmd()
        .args(["--db", elsewhere.to_str().unwrap(), "query", "select 1"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr_of(&output).contains("no database at"));
    assert!(!elsewhere.exists() && !elsewhere.parent().unwrap().exists());
}

#[test]
fn json_is_exact() {
    let env = TestEnv::new();
    store(&env);
    let out = query_ok(&env, &["--format", "json", "select * from vals"]);
    let rows: Value = serde_json::from_str(&out).unwrap();
    let row = &rows.as_array().unwrap()[0];
    assert!(row["n"].is_null());
    assert_eq!(row["big"].as_i64(), Some(BIG));
    assert!(row["real"].is_f64(), "{out}");
    assert_eq!(row["real"].as_f64(), Some(1.0));
    assert_eq!(row["uni"], "héllo 🦀");
    assert_eq!(row["nl"], "two\nlines");
    assert_eq!(row["quote"], "say \"hi\", ok");
    assert_eq!(
        row["blob"],
        serde_json::json!({"$base64": true, "encoded": "AAH+/w=="})
    );
    assert_eq!(row["empty"], "");
    // Columns keep their order.
    let keys: Vec<&str> = out.split('"').skip(1).step_by(2).take(3).collect();
    assert_eq!(keys, ["n", "big", "real"]);

    let empty = query_ok(&env, &["--format", "json", "select * from vals where 0"]);
    assert_eq!(
        serde_json::from_str::<Value>(&empty).unwrap(),
        serde_json::json!([])
    );
}

#[test]
fn jsonl_is_one_exact_object_per_line() {
    let env = TestEnv::new();
    store(&env);
    let out = query_ok(
        &env,
        &[
            "--format",
            "jsonl",
            "select seq, session_id, tool_name from events order by seq",
        ],
    );
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(
        rows[1],
        serde_json::json!({"seq": 2, "session_id": "s1", "tool_name": "Bash"})
    );
    assert!(rows[0]["tool_name"].is_null());

    let out = query_ok(&env, &["--format", "jsonl", "select big, nl from vals"]);
    assert_eq!(out.lines().count(), 1);
    let row: Value = serde_json::from_str(out.trim_end()).unwrap();
    assert_eq!(row["big"].as_i64(), Some(BIG));
    assert_eq!(row["nl"], "two\nlines");
}

#[test]
fn csv_follows_rfc4180() {
    let env = TestEnv::new();
    store(&env);
    let out = query_ok(&env, &["--format", "csv", "select * from vals"]);
    assert_eq!(
        out,
        "n,big,real,uni,nl,quote,blob,empty\r\n\
         ,9007199254740993,1.0,héllo 🦀,\"two\nlines\",\"say \"\"hi\"\", ok\",X'0001FEFF',\"\"\r\n"
    );
}

#[test]
fn tsv_escapes_and_is_the_default_in_a_pipe() {
    let env = TestEnv::new();
    store(&env);
    let sql = "select n, big, real, uni, nl, quote, empty, 'a\tb\\c' as esc from vals";
    let out = query_ok(&env, &["--format", "tsv", sql]);
    assert_eq!(
        out,
        "n\tbig\treal\tuni\tnl\tquote\tempty\tesc\n\
         \\N\t9007199254740993\t1.0\théllo 🦀\ttwo\\nlines\tsay \"hi\", ok\t\ta\\tb\\\\c\n"
    );
    // stdout is a pipe here: no --format means TSV.
    assert_eq!(query_ok(&env, &[sql]), out);
}

#[test]
fn markdown_escapes_pipes_and_newlines() {
    let env = TestEnv::new();
    store(&env);
    let out = query_ok(
        &env,
        &[
            "--format",
            "markdown",
            "select n, nl, 'a|b' as pipe, big from vals",
        ],
    );
    assert_eq!(
        out,
        "| n | nl | pipe | big |\n\
         | --- | --- | --- | --- |\n\
         | ∅ | two<br>lines | a\\|b | 9007199254740993 |\n"
    );
}

#[test]
fn table_fits_the_width_and_cuts_wide_cells() {
    let env = TestEnv::new();
    store(&env);
    let long = "w".repeat(200);
    let sql = format!("select seq, session_id, '{long}' as wide from events order by seq limit 2");
    let output = env
        .cmd()
        .env("COLUMNS", "60")
        .args(["query", "--format", "table", &sql])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr_of(&output));
    let out = stdout_of(&output);
    for line in out.lines() {
        assert!(line.chars().count() <= 60, "too wide: {line:?}");
    }
    assert!(out.contains('…'), "{out}");
    assert!(out.contains("s1"), "{out}");
    assert!(!out.contains('\u{1b}'), "escape codes in a pipe: {out:?}");

    let out = query_ok(&env, &["--format", "table", "select n, nl from vals"]);
    assert!(out.contains('∅'), "NULL is marked: {out}");
    assert!(out.contains("two↵lines"), "{out}");
}

#[test]
fn every_column_of_the_events_table_reads_at_100_columns() {
    let env = TestEnv::new();
    for name in [
        "codex-0.171-pre-tool-use.json",
        "codex-0.171-post-tool-use.json",
    ] {
        crate::common::capture(&env, crate::common::payload(name), &["--agent", "codex"]);
    }
    env.ingest_once();
    let columns: Vec<String> = env
        .conn()
        .prepare("select name from pragma_table_info('events')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(columns.len() > 25, "{columns:?}");
    let out = crate::common::run_at_100(
        &env,
        &["query", "--format", "table", "select * from events"],
    );
    for line in out.lines() {
        assert!(line.chars().count() <= 100, "wider than 100: {line:?}");
    }
    // Each row is a record: every column's name whole at the start of a line, with its value.
    assert_eq!(out.matches("─[ row ").count(), 2, "{out}");
    for name in &columns {
        let named = format!("{name} ");
        assert_eq!(
            out.lines().filter(|l| l.starts_with(&named)).count(),
            2,
            "{name} not whole once per row:\n{out}"
        );
    }
    assert!(out.contains("│ PreToolUse"), "{out}");
    assert!(out.contains("│ PostToolUse"), "{out}");
}

#[test]
fn named_parameters_bind_integers_and_text() {
    let env = TestEnv::new();
    store(&env);
    let out = query_ok(
        &env,
        &[
            "select typeof(:n) tn, :n + 1 n1, typeof(:s) ts, :s s, typeof(:z) tz",
            "--param",
            "n=41",
            "--param",
            "s=it's ok",
            "--param",
            "z=007",
        ],
    );
    assert_eq!(out, "tn\tn1\tts\ts\ttz\ninteger\t42\ttext\tit's ok\ttext\n");
    // A session id that looks numeric still matches its text.
    let out = query_ok(
        &env,
        &[
            "select id from events where session_id = :sid",
            "--param",
            "sid=0123",
        ],
    );
    assert_eq!(out, "id\ne4\n");
    let out = query_ok(
        &env,
        &[
            "select count(*) c from events where session_id = @sid and ts >= $from",
            "--param",
            "sid=s1",
            "--param",
            "from=2000",
        ],
    );
    assert_eq!(out, "c\n2\n");

    let stderr = query_fails(&env, &["select :missing"]);
    assert!(stderr.contains("--param missing=VALUE"), "{stderr}");
    let stderr = query_fails(&env, &["select 1", "--param", "typo=1"]);
    assert!(stderr.contains("--param typo"), "{stderr}");
    let stderr = query_fails(&env, &["select ?"]);
    assert!(stderr.contains("positional"), "{stderr}");
    let output = env
        .cmd()
        .args(["query", "select 1", "--param", "novalue"])
        .output()
        .unwrap();
    assert!(!output.status.success());
}

#[test]
fn sql_comes_from_a_file_or_stdin() {
    let env = TestEnv::new();
    store(&env);
    let file = env.dir.path().join("q.sql");
    std::fs::write(
        &file,
        "-- how many prompts?\nselect count(*) as prompts\nfrom events\nwhere hook_type = :t;\n",
    )
    .unwrap();
    let out = query_ok(
        &env,
        &[
            "--file",
            file.to_str().unwrap(),
            "--param",
            "t=UserPromptSubmit",
        ],
    );
    assert_eq!(out, "prompts\n2\n");

    let output = env
        .cmd()
        .args(["query", "-"])
        .write_stdin("select max(ts) as last from events")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert_eq!(stdout_of(&output), "last\n5000\n");

    let missing = env.dir.path().join("absent.sql");
    let stderr = query_fails(&env, &["--file", missing.to_str().unwrap()]);
    assert!(stderr.contains("reading SQL from"), "{stderr}");
    let stderr = query_fails(&env, &["  -- nothing\n"]);
    assert!(stderr.contains("no SQL statement"), "{stderr}");
}

#[test]
fn max_rows_cuts_with_a_notice_on_stderr() {
    let env = TestEnv::new();
    store(&env);
    let output = env
        .cmd()
        .args([
            "query",
            "--max-rows",
            "2",
            "select seq from events order by seq",
        ])
        .output()
        .unwrap();
    assert!(output.status.success());
    assert_eq!(stdout_of(&output), "seq\n1\n2\n");
    assert!(
        stderr_of(&output).contains("output cut after 2 rows"),
        "{}",
        stderr_of(&output)
    );

    // Exactly as many rows as the cap: nothing is cut, nothing is said.
    let output = env
        .cmd()
        .args(["query", "--max-rows", "5", "select seq from events"])
        .output()
        .unwrap();
    assert_eq!(stdout_of(&output).lines().count(), 6);
    assert_eq!(stderr_of(&output), "");

    // Tables stop at 1000 rows by default; machine formats do not.
    let many = "with recursive c(x) as (select 1 union all select x + 1 from c where x < 1500) select x from c";
    let output = env
        .cmd()
        .args(["query", "--format", "table", many])
        .output()
        .unwrap();
    assert!(stdout_of(&output).contains("│ 1000 │"));
    assert!(!stdout_of(&output).contains("│ 1001 │"));
    assert!(stderr_of(&output).contains("output cut after 1000 rows"));
    let output = env.cmd().args(["query", many]).output().unwrap();
    assert_eq!(stdout_of(&output).lines().count(), 1501);
    assert_eq!(stderr_of(&output), "");
    let output = env
        .cmd()
        .args(["query", "--format", "table", "--max-rows", "0", many])
        .output()
        .unwrap();
    assert!(stdout_of(&output).contains("│ 1500 │"));
}

#[test]
fn timeout_interrupts_a_runaway_query() {
    let env = TestEnv::new();
    store(&env);
    let started = Instant::now();
    let stderr = query_fails(
        &env,
        &[
            "--timeout",
            "1",
            "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c",
        ],
    );
    let took = started.elapsed();
    assert!(stderr.contains("query interrupted after 1s"), "{stderr}");
    assert!(
        took >= Duration::from_millis(900),
        "stopped early: {took:?}"
    );
    assert!(
        took < Duration::from_secs(2),
        "took {took:?} for a 1 s limit"
    );
}

#[test]
fn sql_errors_show_sqlites_message_and_position() {
    let env = TestEnv::new();
    store(&env);
    let stderr = query_fails(&env, &["select *\nfrm events"]);
    assert!(
        stderr.contains("SQL error: near \"frm\": syntax error"),
        "{stderr}"
    );
    assert!(stderr.contains("line 2, column 1"), "{stderr}");
    assert!(stderr.contains("  frm events\n  ^"), "{stderr}");
    let stderr = query_fails(&env, &["select * from nope"]);
    assert!(stderr.contains("no such table: nope"), "{stderr}");
    let stderr = query_fails(&env, &["select nope from events"]);
    assert!(stderr.contains("no such column: nope"), "{stderr}");
}

#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    let env = TestEnv::new();
    store(&env);
    let mut child = std::process::Command::new(bin())
        .env("CMSTORE_HOME", env.home())
        .env_remove("CMSTORE_DB")
        .args([
            "query",
            "--format",
            "jsonl",
            "--timeout",
            "20",
            "with recursive c(x) as (select 1 union all select x + 1 from c) select x, 'padding padding padding' p from c",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    {
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        reader.read_line(&mut first).unwrap();
        // Dropping the reader closes the pipe, as `head -1` does.
    }
    assert_eq!(
        serde_json::from_str::<Value>(&first).unwrap(),
        serde_json::json!({"x": 1, "p": "padding padding padding"})
    );
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "exit {:?}: {}",
        output.status,
        stderr_of(&output)
    );
    assert_eq!(stderr_of(&output), "");
}

#[test]
fn a_wal_store_in_use_by_a_writer_is_read_and_left_unchanged() {
    let env = TestEnv::new();
    let db = store(&env);
    // The ingester's situation: WAL mode, a connection open, committed rows still in the WAL,
    // and a write transaction in progress.
    let writer = Connection::open(&db).unwrap();
    writer.pragma_update(None, "journal_mode", "wal").unwrap();
    writer.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    writer
        .execute("INSERT INTO events(id, ts) VALUES ('e6', 6000)", [])
        .unwrap();
    writer
        .execute_batch("BEGIN IMMEDIATE; INSERT INTO events(id, ts) VALUES ('e7', 7000);")
        .unwrap();
    let wal = db.with_extension("db-wal");
    let (main_before, wal_before) = (std::fs::read(&db).unwrap(), std::fs::read(&wal).unwrap());

    let started = Instant::now();
    assert_eq!(query_ok(&env, &["select count(*) n from events"]), "n\n6\n");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the reader waited on the writer"
    );
    for sql in [
        "delete from events",
        "pragma journal_mode = delete",
        "vacuum",
    ] {
        let stderr = query_fails(&env, &[sql]);
        assert!(stderr.contains("query refused"), "{sql}: {stderr}");
    }
    assert_eq!(std::fs::read(&db).unwrap(), main_before);
    assert_eq!(std::fs::read(&wal).unwrap(), wal_before);
    writer.execute_batch("COMMIT").unwrap();
    assert_eq!(query_ok(&env, &["select count(*) n from events"]), "n\n7\n");
}

#[test]
fn time_spent_waiting_on_a_slow_reader_does_not_count_against_the_timeout() {
    let env = TestEnv::new();
    store(&env);
    let mut child = std::process::Command::new(bin())
        .env("CMSTORE_HOME", env.home())
        .env_remove("CMSTORE_DB")
        .args([
            "query",
            "--format",
            "jsonl",
            "--timeout",
            "1",
            // 2 MB in 2000 wide rows: the pipe fills all the same, but SQLite's own share of
            // the limit stays a few milliseconds, even on a loaded machine (200,000 narrow
            // rows took it past 1 s there).
            "with recursive c(x) as (select 1 union all select x + 1 from c where x < 2000) select x, printf('%1000s', 'padding') p from c",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    // The pipe fills and cmstore blocks on it for longer than the limit.
    std::thread::sleep(Duration::from_millis(1500));
    let rest = std::io::Read::bytes(reader).count();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr_of(&output));
    assert!(rest > 1_000_000, "only {rest} bytes after the first line");
}
