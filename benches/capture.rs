//! Whole-process latency of `cmstore capture`, side by side with an empty hook binary.
//!
//! Run with `cargo bench --bench capture` (add `-- --runs N` to change the sample size, and
//! `-- --baseline PATH` to run a second cmstore binary, such as a build of an older commit, in
//! the same loop). Every scenario runs interleaved with the others in the same loop, so machine
//! noise hits all of them alike; the report gives medians, p90 and ratios to the empty binary's
//! median, and with `--baseline` each scenario's ratio of this build to the baseline.
//!
//! Scenarios:
//! - `empty`: `benches/empty_hook.rs` (drain stdin, print `{}`), built with `rustc -O`.
//! - `post-2k`: a 2 KB Claude Code PostToolUse payload, no transcript.
//! - `harvest-50k` / `harvest-50m`: PostToolUse with transcript harvesting, where one new
//!   turn (~3 KB) is appended to a 50 KB or a 50 MB transcript before each run, so every run
//!   reads and harvests exactly that turn. With the per-session cursor the two should cost
//!   the same. With `--baseline`, both binaries read the same transcripts, each with cursors
//!   of its own (its own home), so each harvests the same turn.
//! - `post-2k-checks`: `post-2k` with a format check configured in audit mode for its file
//!   (`[checks.format]`, docs/checks.md): the hook writes a job file and starts the detached
//!   `cmstore check run`, and waits for nothing else; against `post-2k` it is the cost the
//!   checks add to the hook.
//! - `post-2k-ingest` / `post-2k-checks-ingest`: `post-2k` and `post-2k-checks` with a
//!   `cmstore ingest` of the same binary following the home's queue (started before the loop,
//!   stopped after it). With this build the hook of `post-2k-checks-ingest` finds the ingest's
//!   check runner (a probe of the queue's runner lock) and only writes the job file, which the
//!   ingest runs; a baseline without that runner still starts `cmstore check run`. Its ratio
//!   to `post-2k-ingest` is what audit-mode checks cost a hook while ingest runs.
//! - cold: the first hook of a session on the 50 MB transcript (no cursor yet), timed apart,
//!   21 times per binary in fresh homes.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SESSION: &str = "bench-session";

/// First hooks of a session on the 50 MB transcript, per binary.
const COLD_RUNS: usize = 21;

/// The capture scenarios, in the order each loop iteration runs them.
const SCENARIOS: [&str; 6] = [
    "post-2k",
    "harvest-50k",
    "harvest-50m",
    "post-2k-checks",
    "post-2k-ingest",
    "post-2k-checks-ingest",
];

/// The scenarios whose homes have the checks configured, and those with an ingest following.
const WITH_CHECKS: [usize; 2] = [3, 5];
const WITH_INGEST: [usize; 2] = [4, 5];

/// The configuration of the `post-2k-checks` scenario's homes.
const AUDIT_CHECKS: &str = "[checks.format]\nmode = \"audit\"\n\
    commands = [{ pattern = \"*.rs\", command = \"true {files}\" }]\n";

/// One cmstore binary under test, with a home of its own per scenario.
struct Subject {
    /// `capture` for this build, `baseline` for the `--baseline` binary.
    label: &'static str,
    binary: PathBuf,
    homes: [PathBuf; 6],
    /// Samples per scenario, in [`SCENARIOS`] order.
    samples: [Vec<Duration>; 6],
    /// The ingests following the homes of [`WITH_INGEST`], killed when the subject is dropped.
    ingests: Vec<std::process::Child>,
}

impl Drop for Subject {
    fn drop(&mut self) {
        for child in &mut self.ingests {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Subject {
    fn new(label: &'static str, binary: PathBuf, work: &Path) -> Subject {
        let homes = SCENARIOS.map(|s| work.join(format!("home-{label}-{s}")));
        for i in WITH_CHECKS {
            fs::create_dir_all(&homes[i]).expect("home");
            fs::write(homes[i].join("cmstore.toml"), AUDIT_CHECKS).expect("config");
        }
        Subject {
            label,
            binary,
            homes,
            samples: Default::default(),
            ingests: Vec::new(),
        }
    }

    /// Starts `cmstore ingest` following the homes of [`WITH_INGEST`], and waits until each
    /// has created its database (and, where checks are configured, until a runner of this
    /// build holds the runner lock: a baseline may have none).
    fn start_ingests(&mut self) {
        for i in WITH_INGEST {
            let home = &self.homes[i];
            fs::create_dir_all(home).expect("home");
            let child = Command::new(&self.binary)
                .arg("--home")
                .arg(home)
                .arg("ingest")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start ingest");
            self.ingests.push(child);
            let until = Instant::now() + Duration::from_secs(20);
            let queue = home.join("hook-queue.jsonl");
            let ready = || {
                home.join("cmstore.db").exists()
                    && (self.label == "baseline"
                        || !WITH_CHECKS.contains(&i)
                        || cmstore::hook::checks::detach::runner_alive(&queue))
            };
            while !ready() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert!(
                ready(),
                "{}: the ingest of {} never got ready",
                self.label,
                home.display()
            );
        }
    }

    fn run(&mut self, scenario: usize, stdin: &[u8]) {
        let took = time_run(&self.binary, &self.homes[scenario], stdin);
        self.samples[scenario].push(took);
    }

    fn synthetic_in(&self, scenario: usize) -> usize {
        count_synthetic(&self.homes[scenario].join("hook-queue.jsonl"))
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flag = |name: &str| {
        args.iter()
            .skip_while(|a| *a != name)
            .nth(1)
            .map(String::as_str)
    };
    let runs = flag("--runs")
        .and_then(|n| n.parse().ok())
        .unwrap_or(200usize);
    let work = tempfile::tempdir().expect("tempdir");
    let this_build = fresh_copy(
        Path::new(env!("CARGO_BIN_EXE_cmstore")),
        work.path(),
        "cmstore-capture",
    );
    let mut subjects = vec![Subject::new("capture", this_build, work.path())];
    if let Some(baseline) = flag("--baseline") {
        let binary = fresh_copy(Path::new(baseline), work.path(), "cmstore-baseline");
        subjects.push(Subject::new("baseline", binary, work.path()));
    }
    let empty = fresh_copy(&build_empty_hook(work.path()), work.path(), "empty-hook");

    let post_2k = post_tool_use_payload(None, 2048);
    let t50k = work.path().join("t50k.jsonl");
    let t50m = work.path().join("t50m.jsonl");
    grow_transcript(&t50k, 50 * 1024);
    grow_transcript(&t50m, 50 * 1024 * 1024);
    let harvest_50k = post_tool_use_payload(Some(&t50k), 2048);
    let harvest_50m = post_tool_use_payload(Some(&t50m), 2048);
    let payloads = [
        &post_2k,
        &harvest_50k,
        &harvest_50m,
        &post_2k,
        &post_2k,
        &post_2k,
    ];

    // Cold start: the first hook of a session on a big transcript (tail-bounded read), each
    // time in a home of its own (no cursor yet), the binaries taking turns going first.
    let mut cold_50m: Vec<Vec<Duration>> = vec![Vec::new(); subjects.len()];
    for run in 0..COLD_RUNS {
        for i in 0..subjects.len() {
            let pick = if run % 2 == 0 {
                i
            } else {
                subjects.len() - 1 - i
            };
            let s = &subjects[pick];
            let home = work.path().join(format!("cold-{}-{run}", s.label));
            cold_50m[pick].push(time_run(&s.binary, &home, &harvest_50m));
        }
    }
    // Warm the cursors so the loop measures steady state.
    for s in &mut subjects {
        s.start_ingests();
        time_run(&s.binary, &s.homes[1], &harvest_50k);
        time_run(&s.binary, &s.homes[2], &harvest_50m);
    }

    let harvested_before: Vec<usize> = subjects.iter().map(|s| s.synthetic_in(2)).collect();
    let mut empty_samples = Vec::new();
    for run in 0..runs {
        empty_samples.push(time_spawn(Command::new(&empty), &post_2k));
        for (scenario, payload) in payloads.iter().enumerate() {
            match scenario {
                1 => append_turn(&t50k, run + 1),
                2 => append_turn(&t50m, run + 1),
                _ => {}
            }
            // Alternate which binary goes first, so neither always runs right after the
            // transcript was written (or right after the other binary).
            let count = subjects.len();
            for i in 0..count {
                let pick = if run % 2 == 0 { i } else { count - 1 - i };
                subjects[pick].run(scenario, payload);
            }
        }
    }

    let empty_median = percentile(&mut empty_samples, 50);
    println!("runs per scenario: {runs} (interleaved)");
    println!("| scenario | median ms | p90 ms | ratio |");
    println!("|---|---:|---:|---|");
    println!(
        "| empty binary | {empty_median:.3} | {:.3} | 1.00x |",
        percentile(&mut empty_samples, 90)
    );
    let mut medians = Vec::new();
    for s in &mut subjects {
        let m: Vec<f64> = s.samples.iter_mut().map(|v| percentile(v, 50)).collect();
        for (i, scenario) in SCENARIOS.iter().enumerate() {
            let ratio = match i {
                2 => format!("{:.2}x harvest-50k", m[2] / m[1]),
                3 => format!("{:.2}x post-2k", m[3] / m[0]),
                5 => format!("{:.2}x post-2k-ingest", m[5] / m[4]),
                _ => format!("{:.2}x empty", m[i] / empty_median),
            };
            println!(
                "| {} {scenario} | {:.3} | {:.3} | {ratio} |",
                s.label,
                m[i],
                percentile(&mut s.samples[i], 90)
            );
        }
        medians.push(m);
    }
    if subjects.len() == 2 {
        println!();
        println!(
            "this build against the baseline ({})",
            flag("--baseline").unwrap_or_default()
        );
        println!("| scenario | capture ms | baseline ms | capture / empty | baseline / empty | capture / baseline |");
        println!("|---|---:|---:|---:|---:|---:|");
        for (i, scenario) in SCENARIOS.iter().enumerate() {
            let (new, old) = (medians[0][i], medians[1][i]);
            println!(
                "| {scenario} | {new:.3} | {old:.3} | {:.2}x | {:.2}x | {:.3}x |",
                new / empty_median,
                old / empty_median,
                new / old
            );
        }
        println!();
    }
    for (s, cold) in subjects.iter().zip(&mut cold_50m) {
        println!(
            "{}: cold first hook on the 50 MB transcript: median {:.3} ms of {COLD_RUNS}",
            s.label,
            percentile(cold, 50)
        );
    }
    println!(
        "{}",
        probe_cost(&subjects[0].homes[5].join("hook-queue.jsonl"))
    );
    for (s, before) in subjects.iter().zip(&harvested_before) {
        let harvested = s.synthetic_in(2) - before;
        println!(
            "{}: synthetic Stop lines harvested from the 50 MB transcript: {harvested} (runs: {runs})",
            s.label
        );
    }
}

fn build_empty_hook(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/empty_hook.rs");
    let out = dir.join("empty_hook");
    let status = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["-O", "--edition", "2021", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("run rustc");
    assert!(status.success(), "building the empty hook failed");
    out
}

/// A copy of `binary` in `dir`, which the bench runs instead of the original. Every binary is
/// read from a file written the same way: on this VM the same bytes start with 9-11 more page
/// faults from the file the linker wrote, or from an older copy, than from a fresh copy, which
/// would skew a comparison of a fresh build with a copied baseline.
fn fresh_copy(binary: &Path, dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(name);
    fs::copy(binary, &copy).unwrap_or_else(|err| panic!("copying {}: {err}", binary.display()));
    copy
}

fn time_run(cmstore: &Path, home: &Path, stdin: &[u8]) -> Duration {
    let mut cmd = Command::new(cmstore);
    cmd.arg("--home")
        .arg(home)
        .arg("capture")
        .env_remove("CMSTORE_DEBUG");
    time_spawn(cmd, stdin)
}

/// Wall time of one whole process: spawn, write `stdin`, wait for exit.
fn time_spawn(mut cmd: Command, stdin: &[u8]) -> Duration {
    let start = Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let status = child.wait().unwrap();
    let took = start.elapsed();
    assert!(status.success());
    took
}

/// A Claude Code PostToolUse payload of about `size` bytes.
fn post_tool_use_payload(transcript: Option<&Path>, size: usize) -> Vec<u8> {
    let mut v = serde_json::json!({
        "session_id": SESSION,
        "transcript_path": transcript.map_or("/nonexistent/x.jsonl".into(), |p| p.display().to_string()),
        "cwd": "/home/dev/project",
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Edit",
        "tool_input": {"file_path": "/home/dev/project/src/lib.rs", "old_string": "", "new_string": ""},
        "tool_response": {"filePath": "/home/dev/project/src/lib.rs", "success": true},
        "tool_use_id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV"
    });
    let filler = size.saturating_sub(v.to_string().len()) / 2;
    v["tool_input"]["old_string"] = "a".repeat(filler).into();
    v["tool_input"]["new_string"] = "b".repeat(filler).into();
    v.to_string().into_bytes()
}

/// The `usage` object Claude Code writes on every assistant line (since issue 16 capture reads it).
fn usage(n: usize) -> serde_json::Value {
    serde_json::json!({"input_tokens": 3 + n % 7, "cache_creation_input_tokens": 812,
        "cache_read_input_tokens": 40_211, "output_tokens": 120 + n % 50,
        "cache_creation": {"ephemeral_5m_input_tokens": 812, "ephemeral_1h_input_tokens": 0},
        "service_tier": "standard"})
}

/// One Claude Code turn: prompt, tool call, tool result, final answer (~3 KB).
fn turn_lines(n: usize) -> String {
    let user = format!("u-{n}");
    let text = "lorem ipsum dolor sit amet ".repeat(40);
    let lines = [
        serde_json::json!({"type":"user","uuid":user,"sessionId":SESSION,"message":{"role":"user","content":format!("question {n}: {text}")}}),
        serde_json::json!({"type":"assistant","uuid":format!("a1-{n}"),"requestId":format!("req-{n}-1"),"message":{"id":format!("msg-{n}-1"),"model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"tool_use","id":format!("toolu_{n}"),"name":"Bash","input":{"command":"cargo test"}}],"usage":usage(n)}}),
        serde_json::json!({"type":"user","uuid":format!("r-{n}"),"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":format!("toolu_{n}"),"content":text}]}}),
        serde_json::json!({"type":"assistant","uuid":format!("a2-{n}"),"requestId":format!("req-{n}-2"),"message":{"id":format!("msg-{n}-2"),"model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text","text":format!("answer {n}: {text}")}],"usage":usage(n)}}),
    ];
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn grow_transcript(path: &Path, size: u64) {
    let mut out = fs::File::create(path).unwrap();
    let mut written = 0u64;
    let mut n = 1_000_000;
    while written < size {
        let chunk = turn_lines(n);
        out.write_all(chunk.as_bytes()).unwrap();
        written += chunk.len() as u64;
        n += 1;
    }
}

fn append_turn(path: &Path, n: usize) {
    let mut f = OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(turn_lines(n).as_bytes()).unwrap();
}

fn count_synthetic(queue: &Path) -> usize {
    fs::read_to_string(queue)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"synthetic\":true"))
        .count()
}

fn percentile(samples: &mut [Duration], pct: usize) -> f64 {
    samples.sort();
    let idx = ((samples.len() - 1) * pct) / 100;
    samples[idx].as_secs_f64() * 1e3
}

/// What the hook's probe of the runner lock costs, on a lock a following ingest holds: the
/// median of 2000 probes.
fn probe_cost(queue: &Path) -> String {
    let mut samples: Vec<Duration> = (0..2000)
        .map(|_| {
            let start = Instant::now();
            assert!(cmstore::hook::checks::detach::runner_alive(queue));
            start.elapsed()
        })
        .collect();
    format!(
        "runner-lock probe (a held lock): median {:.1} us of 2000",
        percentile(&mut samples, 50) * 1e3
    )
}
