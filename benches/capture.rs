//! Whole-process latency of `cmstore capture`, side by side with an empty hook binary.
//!
//! Run with `cargo bench --bench capture` (add `-- --runs N` to change the sample size).
//! Every scenario runs interleaved with the others in the same loop, so machine noise hits all
//! of them alike; the report gives medians, p90 and ratios to the empty binary's median.
//!
//! Scenarios:
//! - `empty`: `benches/empty_hook.rs` (drain stdin, print `{}`), built with `rustc -O`.
//! - `post-2k`: a 2 KB Claude Code PostToolUse payload, no transcript.
//! - `harvest-50k` / `harvest-50m`: PostToolUse with transcript harvesting, where one new
//!   turn (~3 KB) is appended to a 50 KB or a 50 MB transcript before each run, so every run
//!   reads and harvests exactly that turn. With the per-session cursor the two should cost
//!   the same.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SESSION: &str = "bench-session";

fn main() {
    let runs = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(200usize);
    let cmstore = PathBuf::from(env!("CARGO_BIN_EXE_cmstore"));
    let work = tempfile::tempdir().expect("tempdir");
    let empty = build_empty_hook(work.path());

    let post_2k = post_tool_use_payload(None, 2048);
    let t50k = work.path().join("t50k.jsonl");
    let t50m = work.path().join("t50m.jsonl");
    grow_transcript(&t50k, 50 * 1024);
    grow_transcript(&t50m, 50 * 1024 * 1024);
    let harvest_50k = post_tool_use_payload(Some(&t50k), 2048);
    let harvest_50m = post_tool_use_payload(Some(&t50m), 2048);

    let homes: Vec<PathBuf> = (0..4)
        .map(|i| work.path().join(format!("home{i}")))
        .collect();
    // Cold start: the first hook of a session on a big transcript (tail-bounded read).
    let cold_50m = time_run(&cmstore, &homes[3], &harvest_50m);
    // Warm the cursors so the loop measures steady state.
    time_run(&cmstore, &homes[2], &harvest_50k);
    time_run(&cmstore, &homes[3], &harvest_50m);

    let harvested_before = count_synthetic(&homes[3].join("hook-queue.jsonl"));
    let mut samples: [Vec<Duration>; 4] = Default::default();
    let mut turn = 0usize;
    for _ in 0..runs {
        samples[0].push(time_spawn(Command::new(&empty), &post_2k));
        samples[1].push(time_run(&cmstore, &homes[1], &post_2k));
        turn += 1;
        append_turn(&t50k, turn);
        samples[2].push(time_run(&cmstore, &homes[2], &harvest_50k));
        append_turn(&t50m, turn);
        samples[3].push(time_run(&cmstore, &homes[3], &harvest_50m));
    }

    let harvested = count_synthetic(&homes[3].join("hook-queue.jsonl")) - harvested_before;
    let names = [
        "empty binary",
        "capture post-2k",
        "capture harvest-50k",
        "capture harvest-50m",
    ];
    let medians: Vec<f64> = samples.iter_mut().map(|s| percentile(s, 50)).collect();
    println!("runs per scenario: {runs} (interleaved)");
    println!("| scenario | median ms | p90 ms | ratio |");
    println!("|---|---:|---:|---|");
    for (i, name) in names.iter().enumerate() {
        let ratio = match i {
            1 => format!("{:.2}x empty", medians[1] / medians[0]),
            3 => format!("{:.2}x harvest-50k", medians[3] / medians[2]),
            2 => format!("{:.2}x empty", medians[2] / medians[0]),
            _ => "1.00x".to_string(),
        };
        println!(
            "| {name} | {:.3} | {:.3} | {ratio} |",
            medians[i],
            percentile(&mut samples[i], 90)
        );
    }
    println!(
        "cold first hook on the 50 MB transcript: {:.3} ms",
        cold_50m.as_secs_f64() * 1e3
    );
    println!(
        "synthetic Stop lines harvested from the 50 MB transcript: {harvested} (runs: {runs})"
    );
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

/// One Claude Code turn: prompt, tool call, tool result, final answer (~3 KB).
fn turn_lines(n: usize) -> String {
    let user = format!("u-{n}");
    let text = "lorem ipsum dolor sit amet ".repeat(40);
    let lines = [
        serde_json::json!({"type":"user","uuid":user,"sessionId":SESSION,"message":{"role":"user","content":format!("question {n}: {text}")}}),
        serde_json::json!({"type":"assistant","uuid":format!("a1-{n}"),"message":{"id":format!("msg-{n}-1"),"role":"assistant","content":[{"type":"tool_use","id":format!("toolu_{n}"),"name":"Bash","input":{"command":"cargo test"}}]}}),
        serde_json::json!({"type":"user","uuid":format!("r-{n}"),"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":format!("toolu_{n}"),"content":text}]}}),
        serde_json::json!({"type":"assistant","uuid":format!("a2-{n}"),"message":{"id":format!("msg-{n}-2"),"role":"assistant","content":[{"type":"text","text":format!("answer {n}: {text}")}]}}),
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
