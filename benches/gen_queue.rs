//! Writes a realistic queue of v1 lines for the ingest benchmark (`benches/ingest.sh`).
//!
//! Usage: `cargo run --release --example gen_queue -- OUT LINES [small]`. The mix follows a real agent
//! session: tool calls dominate (PreToolUse/PostToolUse pairs with call ids and compact JSON
//! inputs), with prompts, Stops carrying the final exchange and tool calls, session starts and
//! ends, notifications, and a few unknown hook types. Deterministic for a given LINES.
//! `small` keeps the same mix but drops the free text (inputs, responses, prompts, paths), for
//! ~250-byte lines like those of the scratch SQLite insert test behind the ingest goal
//! (BENCHMARKS.md).

use std::io::{BufWriter, Write};

use cmstore::model::queue_line::{QueueEntry, ToolCallRecord};

const TOOLS: [&str; 8] = [
    "Bash",
    "Read",
    "Edit",
    "Grep",
    "Write",
    "Glob",
    "runSubagent",
    "WebFetch",
];

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

fn text(rng: &mut Rng, min: u64, max: u64) -> String {
    const WORDS: [&str; 12] = [
        "the",
        "queue",
        "ingest",
        "offset",
        "session",
        "tool",
        "file",
        "src/main.rs",
        "fix",
        "test",
        "cargo",
        "error",
    ];
    let n = min + rng.below(max - min + 1);
    let mut s = String::new();
    while (s.len() as u64) < n {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
    }
    s
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| "queue.jsonl".into());
    let lines: u64 = args.next().map_or(Ok(1_000_000), |n| n.parse())?;
    let small = args.next().as_deref() == Some("small");
    let mut w = BufWriter::new(std::fs::File::create(&out)?);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut ts: i64 = 1_767_225_600_000;
    let mut written = 0;
    let mut pending_call: Option<(String, String, String)> = None;
    while written < lines {
        let session = format!("sess-{:04}", rng.below(200));
        ts += 1 + rng.below(400) as i64;
        let roll = rng.below(100);
        let mut e;
        if let Some((id, tool, sid)) = pending_call.take() {
            e = QueueEntry::new(
                if roll < 4 {
                    "PostToolUseFailure"
                } else {
                    "PostToolUse"
                },
                ts,
            );
            e.session_id = Some(sid);
            e.tool_name = Some(tool);
            e.tool_call_id = Some(id);
            e.tool_response = Some(text(&mut rng, 40, 400));
            e.duration_ms = Some(rng.below(3000) as i64);
        } else if roll < 55 {
            e = QueueEntry::new("PreToolUse", ts);
            let tool = TOOLS[rng.below(TOOLS.len() as u64) as usize].to_string();
            let id = format!("toolu_{:016x}", rng.below(u64::MAX));
            e.tool_input = Some(format!(
                "{{\"command\":\"{}\",\"description\":\"{}\"}}",
                text(&mut rng, 20, 200),
                text(&mut rng, 10, 60)
            ));
            e.tool_name = Some(tool.clone());
            e.tool_call_id = Some(id.clone());
            e.session_id = Some(session.clone());
            pending_call = Some((id, tool, session.clone()));
        } else if roll < 70 {
            e = QueueEntry::new("UserPromptSubmit", ts);
            e.prompt = Some(text(&mut rng, 20, 600));
        } else if roll < 82 {
            e = QueueEntry::new("Stop", ts);
            e.turn_id = Some(format!("turn-{}", rng.below(1 << 40)));
            e.prompt = Some(text(&mut rng, 20, 300));
            e.response = Some(text(&mut rng, 50, 900));
            e.synthetic = (rng.below(4) == 0).then_some(true);
            e.tool_calls = Some(
                (0..rng.below(4))
                    .map(|_| ToolCallRecord {
                        tool_name: "Read".into(),
                        input: "{\"file_path\":\"src/lib.rs\"}".into(),
                        output: String::new(),
                    })
                    .collect(),
            );
        } else if roll < 88 {
            e = QueueEntry::new(
                if roll < 85 {
                    "SessionStart"
                } else {
                    "SessionEnd"
                },
                ts,
            );
            e.actor_name = Some("main".into());
            e.actor_type = Some("agent".into());
        } else if roll < 98 {
            e = QueueEntry::new("Notification", ts);
            e.message = Some(text(&mut rng, 10, 80));
        } else {
            e = QueueEntry::new("PostToolBatch", ts);
        }
        if e.session_id.is_none() {
            e.session_id = Some(session);
        }
        e.agent = Some("claude".into());
        e.model = Some("claude-opus-4".into());
        if small {
            e.tool_input = None;
            e.tool_response = None;
            e.prompt = None;
            e.response = None;
            e.tool_calls = None;
            e.message = None;
            e.origin = None;
        } else {
            e.cwd = Some("/home/dev/project".into());
            e.event = Some(e.hook_type.clone());
            e.transcript_path = Some("/home/dev/.claude/projects/p/transcript.jsonl".into());
        }
        let line = e.to_line();
        e.size_bytes = line.len() as u64;
        e.estimated_tokens = cmstore::model::queue_line::estimate_tokens(e.size_bytes);
        e.hook_execution_ms = 2;
        writeln!(w, "{}", e.to_line())?;
        written += 1;
    }
    w.flush()?;
    Ok(())
}
