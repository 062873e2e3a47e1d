//! `cmstore export otlp`: send the events not yet acknowledged to an OpenTelemetry collector
//! as OTLP/HTTP spans, then exit (`--follow`: keep going as events arrive).
//!
//! Exit codes: 0 caught up (or stopped by SIGINT/SIGTERM), 1 error: no database yet (export
//! never creates one), or the collector refused a batch or did not acknowledge it in time;
//! the cursor stays before that batch.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::config::Config;
use crate::files::paths::Paths;
use crate::read::export::{self, ExportConfig, RunOptions};
use crate::store;

/// How long one batch is retried, by default.
const GIVE_UP_SECS: u64 = 300;

/// How long one batch is retried when no collector is configured and OTLP's default endpoint
/// is tried.
const DEFAULTED_GIVE_UP_SECS: u64 = 10;

/// Arguments of `cmstore export`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub target: Target,
}

/// Where to export to.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum Target {
    /// OTLP/HTTP protobuf to a collector (`[export.otlp]` in cmstore.toml and the standard
    /// OTEL_EXPORTER_OTLP_* variables)
    #[command(
        after_help = "Exit status: 0 when caught up, 1 when there is no database yet \
        (export never creates one), or when a batch was refused or not acknowledged in time \
        (the next run starts again from that batch)."
    )]
    Otlp(OtlpArgs),
}

/// Arguments of `cmstore export otlp`.
#[derive(Debug, Clone, clap::Args)]
pub struct OtlpArgs {
    /// The collector's base URL (`/v1/traces` is appended); overrides the configuration and
    /// OTEL_EXPORTER_OTLP_ENDPOINT
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Also send prompts, responses and tool inputs and outputs, after redaction
    #[arg(long)]
    pub content: bool,
    /// Events per request
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=export::config::MAX_BATCH_EVENTS as u64))]
    pub batch_events: Option<u64>,
    /// How long to retry one batch (network errors, 429, 502, 503, 504) before exiting 1 with
    /// the cursor before it; --follow retries until stopped instead [default: 300; 10 when no
    /// collector is configured and the OTLP default is tried]
    #[arg(long, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub give_up_after: Option<u64>,
    /// Keep exporting as events arrive, until Ctrl-C
    #[arg(long)]
    pub follow: bool,
    /// Follow mode: the pause between looks at the store once caught up
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub poll_ms: u64,
}

/// Runs `cmstore export`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let Target::Otlp(args) = args.target;
    // Exporting only reads events: a store it created would be an empty one, "exported" in
    // full, hiding a mistyped --db or an ingest that never ran (as `query` says it too).
    if !paths.db.exists() {
        bail!(
            "no database at {}: nothing to export; run `cmstore ingest` first",
            paths.db.display()
        );
    }
    let mut config = ExportConfig::load(&paths.config, &crate::support::env::value)?;
    if let Some(base) = &args.endpoint {
        config.traces_endpoint = export::config::traces_url(base);
    }
    if args.content {
        config.content = true;
    }
    if let Some(n) = args.batch_events {
        config.batch_events = n as usize;
    }
    // Nothing names a collector: OTLP's default is tried, briefly, and said (a first user
    // would otherwise wait five minutes on a port where nothing listens).
    let defaulted = args.endpoint.is_none() && !config.endpoint_configured;
    if defaulted {
        eprintln!(
            "cmstore export otlp: no collector configured (--endpoint, `endpoint` in \
             [export.otlp] of cmstore.toml, or OTEL_EXPORTER_OTLP_ENDPOINT): trying OTLP's \
             default, {}",
            config.traces_endpoint
        );
    }
    let give_up_after = Duration::from_secs(args.give_up_after.unwrap_or(match defaulted {
        true => DEFAULTED_GIVE_UP_SECS,
        false => GIVE_UP_SECS,
    }));
    let (capture_config, _) = Config::load_for(paths);
    let store = store::open(&paths.db)
        .with_context(|| format!("cannot open database {}", paths.db.display()))?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("cannot install the SIGINT/SIGTERM handler")?;
    }
    let options = RunOptions {
        follow: args.follow,
        poll: Duration::from_millis(args.poll_ms),
        // Following, a collector that is down is waited for, as ingest's export does.
        give_up_after: (!args.follow).then_some(give_up_after),
        redact: capture_config.redact,
    };
    let started = Instant::now();
    let run = export::run(&store, &config, &options, &stop, &mut |w| {
        eprintln!("cmstore {w}")
    });
    let stats = match run {
        Err(err) if defaulted => {
            return Err(anyhow::Error::new(err).context(
                "no collector at OTLP's default endpoint: start one there, or name yours with \
                 --endpoint, [export.otlp] in cmstore.toml or OTEL_EXPORTER_OTLP_ENDPOINT",
            ))
        }
        other => other?,
    };
    // The last connection removes the WAL; waited for here, not left to the process's exit.
    store.close();
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "cmstore export otlp: {} events, {} spans in {} requests to {} in {:.2} s ({:.0} events/s){}; {} events left",
        stats.events,
        stats.spans,
        stats.requests,
        config.traces_endpoint,
        secs,
        if secs > 0.0 { stats.events as f64 / secs } else { 0.0 },
        match stats.retries {
            0 => String::new(),
            n => format!(", {n} retries"),
        },
        stats.backlog,
    );
    Ok(ExitCode::SUCCESS)
}
