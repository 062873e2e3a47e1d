//! Realistic hook traffic for benchmarks and soak tests (see `examples/README.md`).
//!
//! ```text
//! # queue lines (format v1) straight to a file: fast, for 1M/10M-line ingest benchmarks
//! cargo run --release --example workload -- --mode queue --out queue.jsonl --events 1000000
//! # raw payloads plus the `cmstore` arguments to run each with, to drive `cmstore capture`
//! cargo run --release --example workload -- --mode payloads --out payloads/ --events 500
//! ```

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Parser, ValueEnum};
use cmstore_workload::{Options, Workload};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// Queue lines as `cmstore capture` would append them (one file, `-` for stdout).
    Queue,
    /// One payload file per hook run, and `plan.tsv` with the arguments for each.
    Payloads,
}

/// Writes synthetic hook traffic from concurrent Claude Code, VS Code, Copilot CLI and Codex
/// sessions. The same --seed gives the same output.
#[derive(Debug, Parser)]
struct Args {
    /// What to write.
    #[arg(long, value_enum, default_value = "queue")]
    mode: Mode,
    /// Output file (queue mode; `-` for stdout) or directory (payloads mode).
    #[arg(long)]
    out: PathBuf,
    /// Stop after this many hook runs (queue lines or payloads).
    #[arg(long, conflicts_with = "bytes")]
    events: Option<u64>,
    /// Stop once this much has been written (suffixes K, M, G: powers of 1024).
    #[arg(long, value_parser = parse_size)]
    bytes: Option<u64>,
    /// Sessions running at once; their events interleave.
    #[arg(long, default_value_t = 8)]
    sessions: usize,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Broken payloads / lines per thousand (cut, invalid UTF-8, not an object, …).
    #[arg(long, default_value_t = 5)]
    garbage: u64,
}

fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => t.split_at(i),
        None => (t, ""),
    };
    let n: u64 = digits.parse().map_err(|e| format!("{text:?}: {e}"))?;
    let unit = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        other => return Err(format!("unknown size unit {other:?}")),
    };
    Ok(n * unit)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.events.is_none() && args.bytes.is_none() {
        bail!("give --events N or --bytes SIZE");
    }
    let mut workload = Workload::new(Options {
        seed: args.seed,
        sessions: args.sessions,
        garbage_per_mille: args.garbage,
        ..Options::default()
    });
    let done = |events: u64, bytes: u64| {
        args.events.is_some_and(|n| events >= n) || args.bytes.is_some_and(|n| bytes >= n)
    };
    let (mut events, mut bytes, mut garbage) = (0u64, 0u64, 0u64);
    match args.mode {
        Mode::Queue => {
            let sink: Box<dyn Write> = if args.out.as_os_str() == "-" {
                Box::new(io::stdout().lock())
            } else {
                Box::new(File::create(&args.out).with_context(|| format!("{:?}", args.out))?)
            };
            let mut w = BufWriter::with_capacity(1 << 20, sink);
            while !done(events, bytes) {
                let call = workload.next_call();
                let line = call.to_queue_line(workload.rng());
                w.write_all(line.as_bytes())?;
                w.write_all(b"\n")?;
                events += 1;
                bytes += line.len() as u64 + 1;
                garbage += u64::from(call.garbage);
            }
            w.flush()?;
        }
        Mode::Payloads => {
            fs::create_dir_all(&args.out).with_context(|| format!("{:?}", args.out))?;
            let mut plan = BufWriter::new(File::create(args.out.join("plan.tsv"))?);
            while !done(events, bytes) {
                let call = workload.next_call();
                let name = format!("{events:08}.json");
                let stdin = call.stdin();
                fs::write(args.out.join(&name), &stdin)?;
                writeln!(plan, "{name}\t{}", call.args.join("\t"))?;
                events += 1;
                bytes += stdin.len() as u64;
                garbage += u64::from(call.garbage);
            }
            plan.flush()?;
        }
    }
    eprintln!(
        "workload: {events} events ({garbage} broken), {bytes} bytes, seed {}, {} sessions at once -> {}",
        args.seed,
        args.sessions,
        args.out.display()
    );
    Ok(())
}
