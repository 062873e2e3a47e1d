//! OpenTelemetry out: the store's events as OTLP/HTTP spans to a collector, once
//! (`cmstore export otlp`) or continuously beside a running `cmstore ingest`.
//!
//! The store is the backlog: each batch is read after the destination's cursor, sent, and
//! the cursor moved past it only once the collector answered 2xx. A crash between the answer
//! and the cursor's move sends that one batch again, with the same ids ([`spans`]); a
//! collector that is down leaves the events where they are, and nothing piles up in memory.
//! Continuous export runs on its own thread with its own connection, so ingest never waits
//! for the network.

pub mod config;
pub mod send;
pub mod source;
pub mod spans;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prost::Message;

use crate::model::redact::Redactor;
use crate::read::beside::{Beside, StartError};
use crate::store::{self, Store};

pub use config::ExportConfig;
pub use send::SendError;

/// How an export runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Keep going when caught up (continuous export), polling the store.
    pub follow: bool,
    /// The pause between looks at the store once caught up.
    pub poll: Duration,
    /// How long one batch may be retried before the export gives up (`None`: until stopped).
    pub give_up_after: Option<Duration>,
    /// Extra redaction patterns (the configuration's `redaction.patterns`).
    pub redact: Vec<String>,
}

/// What an export did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events the cursor moved past.
    pub events: u64,
    /// Spans acknowledged.
    pub spans: u64,
    /// Requests acknowledged.
    pub requests: u64,
    /// Failed tries that were retried.
    pub retries: u64,
    /// Spans the collector accepted the request with but rejected.
    pub rejected_spans: i64,
    /// Events still after the cursor when the export ended.
    pub backlog: i64,
}

/// Errors of an export run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store could not be read or the cursor written.
    #[error("store")]
    Store(#[from] store::Error),
    /// A query failed.
    #[error("store")]
    Sql(#[from] rusqlite::Error),
    /// The export thread could not start, or ended in a panic.
    #[error("export thread: {0}")]
    Thread(String),
    /// The collector did not acknowledge a batch.
    #[error("export to {url} stopped at event seq {seq}")]
    Send {
        /// The traces endpoint.
        url: String,
        /// The cursor, where the next export resumes.
        seq: i64,
        /// Why.
        source: SendError,
    },
}

/// Exports the events after the cursor of `config`'s destination, batch by batch, until
/// caught up (or, with `follow`, until `stop`). `on_warning` hears of retries and of another
/// exporter moving the cursor.
pub fn run(
    store: &Store,
    config: &ExportConfig,
    options: &RunOptions,
    stop: &AtomicBool,
    on_warning: &mut dyn FnMut(String),
) -> Result<Stats, Error> {
    let sender = send::Sender::new(config);
    let redactor = Redactor::new(&options.redact);
    let mapper = spans::Mapper {
        content: config.content,
        redactor: &redactor,
    };
    let resource = spans::resource(config.host.as_deref(), config.user.as_deref());
    let destination = config.traces_endpoint.as_str();
    let conn = store.conn()?;
    let mut stats = Stats::default();
    loop {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        if options.follow && source::indexes_set_aside(&conn)? {
            // Ingest is bulk-loading; the lookups would compete with it for the table.
            send::sleep_unless_stopped(options.poll, stop);
            continue;
        }
        let after = source::cursor(&conn, destination)?;
        let events = source::batch(&conn, after, config.batch_events)?;
        let Some(last) = events.last().map(|e| e.seq) else {
            if options.follow && send::sleep_unless_stopped(options.poll, stop) {
                continue;
            }
            break;
        };
        let mut batch = Vec::new();
        for event in &events {
            let links = source::links(&conn, event)?;
            batch.extend(mapper.span(event, &links));
        }
        let span_count = batch.len();
        if span_count > 0 {
            let body = spans::request(resource.clone(), batch).encode_to_vec();
            let mut on_retry = |err: &SendError, pause: Duration| {
                stats.retries += 1;
                on_warning(format!(
                    "export: {err}; trying again in {:.1} s",
                    pause.as_secs_f64()
                ));
            };
            let ack =
                match sender.post_with_retry(&body, options.give_up_after, stop, &mut on_retry) {
                    Ok(ack) => ack,
                    // Continuous export never skips a batch: a refusal may be a credential that
                    // is being fixed, so the batch is offered again after the longest pause.
                    Err(err @ SendError::Refused { .. }) if options.follow => {
                        on_warning(format!(
                            "export: {err}; the same batch again in {} s",
                            send::MAX_BACKOFF.as_secs()
                        ));
                        send::sleep_unless_stopped(send::MAX_BACKOFF, stop);
                        continue;
                    }
                    Err(_) if stop.load(Ordering::SeqCst) => break,
                    Err(source) => {
                        return Err(Error::Send {
                            url: destination.to_string(),
                            seq: after,
                            source,
                        })
                    }
                };
            stats.requests += 1;
            stats.spans += span_count as u64;
            stats.rejected_spans += ack.rejected_spans;
            if ack.rejected_spans > 0 {
                on_warning(format!(
                    "export: the collector rejected {} of {span_count} spans",
                    ack.rejected_spans
                ));
            }
        }
        let moved = source::advance(
            &conn,
            destination,
            after,
            last,
            events.len(),
            span_count,
            crate::support::clock::now_ms(),
        )?;
        if moved {
            stats.events += events.len() as u64;
        } else {
            on_warning(format!(
                "export: another exporter moved the cursor of {destination}; going on from there"
            ));
        }
    }
    stats.backlog = source::backlog(&conn, destination)?;
    Ok(stats)
}

/// A continuous export on a thread of its own, beside ingest.
pub struct Continuous {
    beside: Beside<Result<Stats, Error>>,
}

impl Continuous {
    /// Starts exporting from the store at `db` (its own pool, so ingest's connection is never
    /// shared) with `config`, until [`Continuous::finish`] or `stop`.
    pub fn start(
        db: &std::path::Path,
        config: ExportConfig,
        options: RunOptions,
        stop: Arc<AtomicBool>,
        on_warning: impl FnMut(String) + Send + 'static,
    ) -> Result<Continuous, Error> {
        let mut on_warning = on_warning;
        let options = RunOptions {
            follow: true,
            give_up_after: None,
            ..options
        };
        let work = move |store: &Store, stop: &AtomicBool| {
            run(store, &config, &options, stop, &mut on_warning)
        };
        match Beside::start("cmstore-export", db, stop, work) {
            Ok(beside) => Ok(Continuous { beside }),
            Err(StartError::Store(e)) => Err(Error::Store(e)),
            Err(StartError::Thread(e)) => Err(Error::Thread(e.to_string())),
        }
    }

    /// Stops the export (after its current try: at most one request timeout) and returns
    /// what it did.
    pub fn finish(self) -> Result<Stats, Error> {
        self.beside
            .finish()
            .unwrap_or_else(|| Err(Error::Thread("it panicked".to_string())))
    }
}

/// Starts the continuous export when the configuration asks for it (`[export.otlp]`, its
/// `enabled` not `false`): `None` when it does not, or when its settings cannot be used,
/// which `on_warning` hears of (ingest goes on without it).
pub fn beside_ingest(
    paths: &crate::files::paths::Paths,
    on_warning: impl FnMut(String) + Send + Clone + 'static,
) -> Option<Continuous> {
    let mut warn = on_warning.clone();
    let config = match ExportConfig::load(&paths.config, &crate::support::env::value) {
        Ok(config) if config.continuous => config,
        Ok(_) => return None,
        // `cmstore ingest` reports a file that is not TOML already (ConfigWatch).
        Err(err) if err.syntax => return None,
        Err(err) => {
            warn(format!("export: not started: {err}"));
            return None;
        }
    };
    let (capture_config, _) = crate::config::Config::load_for(paths);
    let options = RunOptions {
        follow: true,
        poll: Duration::from_millis(500),
        give_up_after: None,
        redact: capture_config.redact,
    };
    let stop = Arc::new(AtomicBool::new(false));
    match Continuous::start(&paths.db, config, options, stop, on_warning) {
        Ok(c) => Some(c),
        Err(err) => {
            warn(format!(
                "export: not started: {}",
                crate::support::failure::chain(&err)
            ));
            None
        }
    }
}
