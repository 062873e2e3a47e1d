//! `cmstore serve` in a real browser: headless Chromium loads every page of a store built
//! from the real Claude Code hook payloads (scripted data when `../shared` is absent), with no
//! script error, and the rendered DOM is checked (the session timeline has one bar per tool
//! call).
//!
//! Skipped with a note when `chromium` is not installed, unless `CMSTORE_BROWSER=require`
//! (`.ci/run` installs it where it can). `CMSTORE_SCREENSHOTS=DIR` keeps a screenshot of each
//! page there (how `docs/screenshots/` was made).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{capture, real_fixtures, skipped, TestEnv};
use crate::serve::{scripted_store, Served, STORY};

/// The browser, or `None` with a printed note (a failure under `CMSTORE_BROWSER=require`).
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists());
    if found.is_none() {
        let required = std::env::var("CMSTORE_BROWSER").is_ok_and(|v| v == "require");
        assert!(
            !required,
            "CMSTORE_BROWSER=require, but chromium is not installed"
        );
        skipped("chromium is not installed (apt-get install chromium)");
    }
    found
}

/// One Claude Code session of the real payloads, captured in the order it happened: each
/// PreToolUse followed by its PostToolUse. Returns the session id.
fn real_store(env: &TestEnv, real: &Path) -> String {
    let dir = real.join("claude-code/hooks-pragma");
    let read = |name: &str| -> Vec<Value> {
        std::fs::read_to_string(dir.join(name))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let pres = read("pre_tool_use.jsonl");
    // The session with the most finished calls.
    let mut counts = std::collections::BTreeMap::new();
    for post in read("post_tool_use.jsonl") {
        *counts
            .entry(post["session_id"].as_str().unwrap_or_default().to_string())
            .or_insert(0) += 1;
    }
    let session = counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .expect("post_tool_use payloads")
        .0;
    let mine = |v: &&Value| v["session_id"] == session.as_str();
    let posts: Vec<Value> = read("post_tool_use.jsonl")
        .into_iter()
        .chain(read("post_tool_use_failure.jsonl"))
        .filter(|v| mine(&v))
        .collect();
    let mut order: Vec<Value> = Vec::new();
    order.extend(
        read("session_start.jsonl")
            .iter()
            .filter(mine)
            .take(1)
            .cloned(),
    );
    order.extend(
        read("user_prompt_submit.jsonl")
            .iter()
            .filter(mine)
            .take(1)
            .cloned(),
    );
    for pre in pres.iter().filter(mine).take(60) {
        order.push(pre.clone());
        if let Some(post) = posts
            .iter()
            .find(|p| p["tool_use_id"] == pre["tool_use_id"])
        {
            order.push(post.clone());
        }
    }
    order.extend(read("subagent_stop.jsonl").iter().filter(mine).cloned());
    order.extend(
        read("pre_compact.jsonl")
            .iter()
            .filter(mine)
            .take(1)
            .cloned(),
    );
    order.extend(read("stop.jsonl").iter().filter(mine).take(1).cloned());
    for payload in order {
        capture(env, payload.to_string(), &["--agent", "claude"]);
    }
    env.ingest_once();
    session
}

/// Runs Chromium on `url` with `args`, bounded in time.
fn run_chromium(browser: &Path, profile: &Path, args: &[String], url: &str) -> String {
    run_chromium_in(browser, profile, args, url, None)
}

/// [`run_chromium`] in the zone `tz` (Chromium follows `TZ`), else the machine's.
fn run_chromium_in(
    browser: &Path,
    profile: &Path,
    args: &[String],
    url: &str,
    tz: Option<&str>,
) -> String {
    let mut command = Command::new(browser);
    if let Some(tz) = tz {
        command.env("TZ", tz);
    }
    let mut child = command
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--virtual-time-budget=5000",
            "--window-size=1280,900",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromium");
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());
    let deadline = Instant::now() + Duration::from_secs(90);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish {url} within 90 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    reader.join().unwrap()
}

/// The DOM of page `name` at `url` as Chromium drew it (in the zone `tz`), which must be drawn
/// with no script error and no load error. A fresh profile each time: the token in the
/// address is the way in, as on a first visit.
fn drawn(browser: &Path, url: &str, name: &str, tz: Option<&str>) -> String {
    let profile = tempfile::tempdir().unwrap();
    let dom = run_chromium_in(browser, profile.path(), &["--dump-dom".into()], url, tz);
    assert!(
        dom.contains(&format!("data-drawn=\"{name}\"")),
        "{name}: the page was not drawn:\n{dom}"
    );
    assert!(
        dom.contains("<pre id=\"errors\" hidden=\"\"></pre>"),
        "{name}: script errors:\n{dom}"
    );
    assert!(!dom.contains("id=\"load-error\""), "{name}: {dom}");
    dom
}

#[test]
fn every_page_renders_in_chromium_without_errors() {
    let Some(browser) = chromium() else { return };
    let (env, session) = match real_fixtures() {
        Some(real) => {
            let env = TestEnv::new();
            let id = real_store(&env, &real);
            (env, id)
        }
        None => (scripted_store(), STORY.to_string()),
    };
    let served = Served::start(&env);
    let base = format!("http://127.0.0.1:{}", served.port);
    let shown: Value = serde_json::from_slice(
        &env.cmd()
            .args(["show", &session, "--format", "json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let tool_calls = shown["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "tool_call")
        .count();
    assert!(tool_calls > 0, "the session has tool calls to draw");

    let shots = std::env::var_os("CMSTORE_SCREENSHOTS").map(PathBuf::from);
    let pages = [
        ("overview", "/?range="),
        ("sessions", "/sessions?range="),
        ("session", &*format!("/session?id={session}&range=")),
        ("tools", "/tools?range="),
        ("gate", "/gate?range="),
        (
            "sql",
            "/sql?q=SELECT+tool_name%2C+count(*)+AS+calls+FROM+tool_calls+GROUP+BY+1+ORDER+BY+2+DESC&range=",
        ),
    ];
    for (name, path) in pages {
        let url = format!("{base}{path}&token={}", served.token);
        let dom = drawn(&browser, &url, name, None);
        match name {
            "overview" => {
                assert!(dom.contains("data-chart=\"events\""), "{dom}");
                assert!(dom.contains("Top tools"), "{dom}");
            }
            "sessions" => assert!(dom.contains(&format!("/session?id={session}")), "{dom}"),
            "session" => {
                let bars = dom.matches("<rect class=\"call ").count();
                assert_eq!(bars, tool_calls, "one bar per tool call");
            }
            "tools" => assert!(dom.contains("Every tool"), "{dom}"),
            "gate" => assert!(dom.contains("calls checked"), "{dom}"),
            "sql" => {
                assert!(dom.contains("Download CSV"), "{dom}");
                assert!(!dom.contains("id=\"sql-error\""), "{dom}");
            }
            _ => unreachable!(),
        }
        if let Some(dir) = &shots {
            std::fs::create_dir_all(dir).unwrap();
            let file = dir.join(format!("{name}.png"));
            let profile = tempfile::tempdir().unwrap();
            run_chromium(
                &browser,
                profile.path(),
                &[format!("--screenshot={}", file.display())],
                &url,
            );
            assert!(file.exists(), "{}", file.display());
        }
    }
}

/// Issue 35.9 and 35.11: the overview's day charts have a column for every day of the range,
/// the empty ones too (an axis that skipped them made a month look like one step), and a
/// range with nothing in it says where the store's newest data is, with a way to show it.
#[test]
fn the_overview_draws_every_day_and_points_to_older_data() {
    let Some(browser) = chromium() else { return };
    let env = TestEnv::new();
    // Two busy days nine days apart, long before the default range of 30 days.
    let day = |n: i64, session: &str| {
        let mut e = crate::common::entry("UserPromptSubmit", session);
        e.timestamp = 1_767_607_200_000 + n * 86_400_000;
        e.to_line()
    };
    // A call of a day and an hour: its duration as the CLI prints it (`1d 01h`, issue 35.9;
    // the dashboard said `25h 01m`).
    let mut call = crate::common::entry("PostToolUse", "b");
    call.timestamp = 1_767_607_200_000 + 9 * 86_400_000;
    call.tool_name = Some("Bash".into());
    call.tool_call_id = Some("toolu_long".into());
    call.duration_ms = Some(90_061_000);
    env.append(&[day(0, "a"), day(0, "a"), day(9, "b"), call.to_line()]);
    env.ingest_once();
    let served = Served::start(&env);
    let base = format!("http://127.0.0.1:{}", served.port);
    let dom = |range: &str| {
        let url = format!("{base}/?{range}token={}", served.token);
        let profile = tempfile::tempdir().unwrap();
        let dom = run_chromium(&browser, profile.path(), &["--dump-dom".into()], &url);
        assert!(dom.contains("data-drawn=\"overview\""), "{dom}");
        assert!(
            dom.contains("<pre id=\"errors\" hidden=\"\"></pre>"),
            "{dom}"
        );
        dom
    };

    let all_time = dom("range=&");
    let chart = all_time
        .split("data-chart=\"events\"")
        .nth(1)
        .and_then(|rest| rest.split("</svg>").next())
        .unwrap_or_default();
    assert_eq!(chart.matches("<rect ").count(), 10, "{chart}");
    assert!(!all_time.contains("id=\"older-data\""), "{all_time}");
    assert!(all_time.contains(">1d 01h<"), "{all_time}");

    let default_range = dom("");
    assert!(
        default_range.contains("id=\"older-data\"")
            && default_range.contains("the newest data is from 2026-01-14")
            && default_range.contains("Show all time"),
        "{default_range}"
    );
}

/// The dashboard's days are the server's zone's and its footer names it; two events four hours
/// apart across Los Angeles' midnight (one UTC day) are two days there.
#[test]
fn the_overview_counts_days_in_the_zone_and_says_which() {
    let Some(browser) = chromium() else { return };
    let env = TestEnv::new();
    let at = |ts: i64, session: &str| {
        let mut e = crate::common::entry("UserPromptSubmit", session);
        e.timestamp = ts;
        e.to_line()
    };
    // 2026-01-05T06:00Z and T10:00Z (twice): 22:00 on the 4th and 02:00 on the 5th in Los
    // Angeles.
    let mut empty = crate::common::entry("SessionStart", "went-nowhere");
    empty.timestamp = 1_767_607_200_000;
    env.append(&[
        at(1_767_592_800_000, "a"),
        at(1_767_607_200_000, "b"),
        empty.to_line(),
    ]);
    env.ingest_once();
    let zone = "America/Los_Angeles";
    let served = Served::start_with(&env, &[("TZ", zone)]);
    let url = format!(
        "http://127.0.0.1:{}/?range=&token={}",
        served.port, served.token
    );
    let profile = tempfile::tempdir().unwrap();
    let dom = run_chromium_in(
        &browser,
        profile.path(),
        &["--dump-dom".into()],
        &url,
        Some(zone),
    );
    assert!(dom.contains("data-drawn=\"overview\""), "{dom}");
    let chart = dom
        .split("data-chart=\"events\"")
        .nth(1)
        .and_then(|rest| rest.split("</svg>").next())
        .unwrap_or_default();
    assert_eq!(chart.matches("<rect ").count(), 2, "{chart}");
    assert!(
        chart.contains("2026-01-04: 1") && chart.contains("2026-01-05: 2"),
        "{chart}"
    );
    assert!(
        dom.contains("Days and times in America/Los_Angeles."),
        "{dom}"
    );
    // The session list leaves out the one that went nowhere, and says so.
    let profile = tempfile::tempdir().unwrap();
    let list = run_chromium_in(
        &browser,
        profile.path(),
        &["--dump-dom".into()],
        &format!(
            "http://127.0.0.1:{}/sessions?range=&token={}",
            served.port, served.token
        ),
        Some(zone),
    );
    assert!(
        list.contains("1 session that went nowhere (no prompt, no tool call) not listed.")
            && list.contains("List them too")
            && !list.contains(">went-nowhere<"),
        "{list}"
    );
    // A browser elsewhere is told the days are the server's.
    let profile = tempfile::tempdir().unwrap();
    let tokyo = run_chromium_in(
        &browser,
        profile.path(),
        &["--dump-dom".into()],
        &url,
        Some("Asia/Tokyo"),
    );
    assert!(
        tokyo.contains("Days as the server counts them (America/Los_Angeles); times in this browser's zone (Asia/Tokyo)."),
        "{tokyo}"
    );
}

/// `serve --store` (issue 40): every page of a team store's dashboard renders without a script
/// error, the overview has its per-user and per-machine tables, the session list links each
/// session with its machine, and a session's timeline has one bar per tool call.
#[test]
fn every_page_of_a_team_store_renders_in_chromium() {
    let Some(browser) = chromium() else { return };
    let Some(db) = crate::common::pg_database() else {
        return;
    };
    let env = crate::push::filled_with_checks(61, 600);
    std::fs::write(
        env.home().join("cmstore.toml"),
        "[push]\nuser = \"ana\"\nteam = \"web\"\n",
    )
    .unwrap();
    crate::push::push_ok(&env, &db.url, &["--content", "full"]);
    let machine = crate::push::machine_of(&env);
    let session = env.text("SELECT session_id FROM sessions ORDER BY tool_uses DESC LIMIT 1");
    let served = Served::start_on(&env, &[("TZ", "UTC")], &["--store", &db.url]);
    let base = format!("http://127.0.0.1:{}", served.port);
    let story = served.json(&format!("/api/session?id={session}&machine={machine}"));
    let tool_calls = story["calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !c["start"].is_null() || !c["end"].is_null())
        .count();
    assert!(tool_calls > 0, "the session has tool calls to draw");
    let pages = [
        ("overview", "/?range=".to_string()),
        ("sessions", "/sessions?range=".to_string()),
        (
            "session",
            format!("/session?id={session}&machine={machine}&range="),
        ),
        ("tools", "/tools?range=&user=ana".to_string()),
        ("gate", "/gate?range=".to_string()),
        (
            "sql",
            "/sql?q=SELECT+user_label%2C+sum(events)+FROM+v_daily_events+GROUP+BY+1&range="
                .to_string(),
        ),
    ];
    for (name, path) in pages {
        let url = format!("{base}{path}&token={}", served.token);
        let dom = drawn(&browser, &url, name, Some("UTC"));
        assert!(
            dom.contains("Read-only view of the team store."),
            "{name}: {dom}"
        );
        match name {
            "overview" => {
                assert!(dom.contains("data-chart=\"events\""), "{dom}");
                assert!(
                    dom.contains("Per user") && dom.contains("Per machine"),
                    "{dom}"
                );
                assert!(dom.contains("href=\"/sessions?user=ana\""), "{dom}");
            }
            "sessions" => assert!(
                dom.contains(&format!("/session?id={session}&amp;machine={machine}")),
                "{dom}"
            ),
            "session" => {
                let bars = dom.matches("<rect class=\"call ").count();
                assert_eq!(bars, tool_calls, "one bar per tool call");
                assert!(dom.contains(">ana<"), "the session's user: {dom}");
            }
            "tools" => {
                assert!(dom.contains("Every tool"), "{dom}");
                assert!(dom.contains("Only user ana."), "{dom}");
            }
            "gate" => assert!(dom.contains("calls checked"), "{dom}"),
            "sql" => {
                assert!(dom.contains("Download CSV"), "{dom}");
                assert!(!dom.contains("id=\"sql-error\""), "{dom}");
                assert!(dom.contains("cmstore query --store"), "{dom}");
                assert!(dom.contains(">ana<"), "{dom}");
            }
            _ => unreachable!(),
        }
    }
}
