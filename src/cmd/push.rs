//! `cmstore push`: mirror the store into the team's PostgreSQL database (`[push]` in
//! cmstore.toml, `--url`, or the standard `PG*` variables), then exit; `--follow` keeps going
//! as events arrive (a running `cmstore ingest` does that by itself when `[push]` is set).
//!
//! Exit codes: 0 caught up (or stopped by SIGINT/SIGTERM), 1 error: no database yet (push
//! never creates one), no server named, or a server that failed for longer than
//! `--give-up-after`; the cursor stays where the server's last commit left it.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use crate::config::push::{Content, PushSettings, MAX_BATCH_EVENTS};
use crate::config::Config;
use crate::files::paths::Paths;
use crate::read::push::{self, RunOptions, Target};
use crate::store;

/// Arguments of `cmstore push`.
#[derive(Debug, Clone, clap::Args)]
#[command(
    after_help = "The server: --url, else `url` in [push] of cmstore.toml, else the \
    standard PG* variables (PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, PGSSLMODE, \
    PGSERVICE with its service file) and \
    the password file (PGPASSFILE, ~/.pgpass). \
    docs/teams.md says what is sent under each --content profile.\n\n\
    Exit status: 0 when caught up, 1 when there is no database yet, no server is named, or \
    the server failed for longer than --give-up-after (the next run resumes where it stopped)."
)]
pub struct Args {
    /// The team store: `postgres://user@host/db?sslmode=require` or `key=value` words
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// What text leaves the machine: none (counts, outcomes, costs, tool names and input
    /// digests only), redacted (text, with the redaction patterns applied again) or full
    #[arg(long, value_name = "PROFILE", value_parser = ["none", "redacted", "full"])]
    pub content: Option<String>,
    /// Events per server transaction
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u64).range(1..=MAX_BATCH_EVENTS as u64))]
    pub batch_events: Option<u64>,
    /// How long to keep trying a server that fails before exiting 1 [default: 30; --follow:
    /// until stopped]
    #[arg(long, value_name = "SECS",
          value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub give_up_after: Option<u64>,
    /// Keep pushing as events arrive, until Ctrl-C
    #[arg(long)]
    pub follow: bool,
    /// Follow mode: the pause between looks at the store once caught up
    #[arg(long, value_name = "MS", default_value_t = 5000,
          value_parser = clap::value_parser!(u64).range(10..=600_000))]
    pub poll_ms: u64,
}

/// Runs `cmstore push`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    // Pushing only reads the record: a store it created would be an empty one, "pushed" in
    // full, hiding a mistyped --db or an ingest that never ran.
    if !paths.db.exists() {
        bail!(
            "no database at {}: nothing to push; run `cmstore ingest` first",
            paths.db.display()
        );
    }
    let (config, _) = Config::load_for(paths);
    let env = &crate::support::env::value;
    let named_by_env = ["PGHOST", "PGDATABASE", "PGSERVICE"]
        .iter()
        .any(|v| crate::support::env::var(v).is_some());
    let mut settings = match (config.push.clone(), &args.url) {
        (Some(settings), _) => settings,
        (None, Some(_)) => PushSettings::default(),
        (None, None) if named_by_env => PushSettings::default(),
        (None, None) => bail!(
            "no team store named: give --url, set `url` in [push] of {}, or the PG* \
             variables (docs/teams.md)",
            paths.config.display()
        ),
    };
    if let Some(url) = &args.url {
        settings.url = Some(url.clone());
    }
    if let Some(content) = args.content.as_deref().and_then(Content::parse) {
        settings.content = content;
    }
    if let Some(n) = args.batch_events {
        settings.batch_events = n as usize;
    }
    let target = Target::new(settings, env)?;
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
        give_up_after: (!args.follow)
            .then(|| Duration::from_secs(args.give_up_after.unwrap_or(30))),
        redact: config.redact,
    };
    let started = Instant::now();
    let stats = push::run(&store, &target, &options, &stop, &mut |w| {
        eprintln!("cmstore {w}")
    })?;
    store.close();
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "cmstore push: {} events and {} sessions to {} (team schema {}, content {}) in {:.2} s \
         ({:.0} events/s){}; {} events left",
        stats.events,
        stats.sessions,
        target.destination,
        stats.schema,
        target.settings.content.as_str(),
        secs,
        if secs > 0.0 {
            stats.events as f64 / secs
        } else {
            0.0
        },
        match stats.retries {
            0 => String::new(),
            n => format!(", {n} retries"),
        },
        stats.backlog,
    );
    Ok(ExitCode::SUCCESS)
}
