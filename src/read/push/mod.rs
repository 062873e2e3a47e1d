//! The team store: this store's record mirrored into a PostgreSQL database that a team's
//! machines share (`cmstore push`, once or beside a running `cmstore ingest`; docs/teams.md).
//!
//! Exactly once: every row on the server is keyed by this store's machine id and the row's own
//! key, so a row pushed twice is one row. The events (which never change) go in `seq` order
//! after the server's cursor, kept in the local store and moved only after the server has
//! committed the batch; the rows derived from them (sessions, turns, tool calls, usage) go per
//! session whenever the session's digest changes, replacing what the server had of them. A
//! crash or `kill -9` between the server's commit and the local note sends that batch again,
//! to the same rows. A server that is down costs nothing locally: the store is the backlog.
//!
//! What text leaves the machine is the profile's choice ([`crate::config::push::Content`]); the server keeps what
//! local retention later deletes (its own retention is the team's).

pub mod local;
pub mod rows;
pub mod server;
pub mod service;
pub mod team_dashboard;
pub mod team_query;
pub mod team_reports;
pub mod team_story;
pub mod team_verify;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::push::{PushSettings, DEFAULT_INTERVAL};
use crate::config::EnvLookup;
use crate::model::redact::Redactor;
use crate::read::beside::{Beside, StartError};
use crate::store::{self, Store};

pub use server::ServerError;

/// Sessions written per server transaction.
const SESSIONS_PER_BATCH: usize = 100;

/// How often a following push looks at every session's digest even when only events came
/// (the sessions of those events are looked at on every pass).
const FULL_LOOK: Duration = Duration::from_secs(600);

/// The longest pause between two tries at a server that does not answer.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where and what to push: `[push]` with the connection settings resolved.
#[derive(Debug, Clone)]
pub struct Target {
    pub connection: postgres::Config,
    /// The server as messages and the cursor name it (no password).
    pub destination: String,
    pub settings: PushSettings,
}

impl Target {
    /// The target `settings` describe, the `PG*` variables read through `env`.
    pub fn new(settings: PushSettings, env: EnvLookup<'_>) -> Result<Target, ServerError> {
        let connection = server::settings(settings.url.as_deref(), env)?;
        Ok(Target {
            destination: server::destination(&connection),
            connection,
            settings,
        })
    }
}

/// How a push runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Keep going when caught up, looking at the store every `poll`.
    pub follow: bool,
    pub poll: Duration,
    /// How long a server that fails may be tried again before the push gives up (`None`:
    /// until stopped).
    pub give_up_after: Option<Duration>,
    /// The redaction patterns in force (`redaction.patterns`), for the `redacted` profile.
    pub redact: Vec<String>,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            follow: false,
            poll: DEFAULT_INTERVAL,
            give_up_after: Some(Duration::from_secs(30)),
            redact: Vec::new(),
        }
    }
}

/// What a push did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events the server committed.
    pub events: u64,
    /// Sessions whose derived rows were written.
    pub sessions: u64,
    /// Failed tries that were tried again.
    pub retries: u64,
    /// Events still after the cursor when the push ended.
    pub backlog: i64,
    /// The team schema's version on the server.
    pub schema: i64,
}

/// Errors of a push.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The local store could not be read or its push tables written.
    #[error("store")]
    Store(#[from] store::Error),
    /// A local query failed.
    #[error("store")]
    Sql(#[from] rusqlite::Error),
    /// The server could not be reached or written (in time).
    #[error("push to {destination}: {source}")]
    Server {
        destination: String,
        #[source]
        source: ServerError,
    },
    /// The push thread could not start, or ended in a panic.
    #[error("push thread: {0}")]
    Thread(String),
}

/// Pushes what the server lacks; with `options.follow`, keeps going until `stop`.
pub fn run(
    store: &Store,
    target: &Target,
    options: &RunOptions,
    stop: &AtomicBool,
    on_warning: &mut dyn FnMut(String),
) -> Result<Stats, Error> {
    let conn = store.conn()?;
    let now = crate::support::clock::now_ms();
    let settings = &target.settings;
    let machine = server::Machine {
        id: local::machine_id(&conn, now)?,
        user: settings
            .user
            .clone()
            .or_else(crate::support::env::user_name),
        team: settings.team.clone(),
        host: crate::support::env::host_name(),
        content: settings.content.as_str(),
    };
    let redactor = Redactor::new(&options.redact);
    let profile = rows::Profile {
        content: settings.content,
        redactor: &redactor,
    };
    let mut stats = Stats::default();
    let mut failing_since: Option<Instant> = None;
    let mut pause = Duration::from_secs(1);
    while !stop.load(Ordering::SeqCst) {
        let before = (stats.events, stats.sessions);
        let failed = session(&conn, target, &machine, &profile, options, stop, &mut stats);
        let (destination, source) = match failed {
            Ok(()) => break,
            Err(Error::Server {
                destination,
                source,
            }) => (destination, source),
            Err(e) => return Err(e),
        };
        let why = crate::support::failure::chain(&source);
        let _ = local::note_error(&conn, &destination, &why, crate::support::clock::now_ms());
        // A connection that moved the push on before it failed starts the count of failures,
        // and the back-off, afresh.
        if (stats.events, stats.sessions) != before {
            failing_since = None;
            pause = Duration::from_secs(1);
        }
        let since = *failing_since.get_or_insert_with(Instant::now);
        let out_of_time = options
            .give_up_after
            .is_some_and(|limit| since.elapsed() + pause > limit);
        if !retriable(&source) || out_of_time {
            return Err(Error::Server {
                destination,
                source,
            });
        }
        stats.retries += 1;
        on_warning(format!(
            "push to {destination}: {why}; trying again in {} s",
            pause.as_secs()
        ));
        sleep_unless_stopped(pause, stop);
        pause = (pause * 2).min(MAX_BACKOFF);
    }
    stats.backlog = local::backlog(&conn, &target.destination)?;
    Ok(stats)
}

/// Whether trying again may help: the server was unreachable, went away or failed a
/// transaction; not a setting that cannot work, a refused login or a statement the server
/// rejects (SQLSTATE classes 28 and 42).
fn retriable(error: &ServerError) -> bool {
    match error {
        ServerError::Settings(_) | ServerError::Refused(_) => false,
        ServerError::Postgres { source, .. } => source
            .code()
            .is_none_or(|code| !code.code().starts_with("28") && !code.code().starts_with("42")),
    }
}

/// One connection's work: the schema, the prices, then the events and the sessions, again
/// and again while following.
fn session(
    conn: &rusqlite::Connection,
    target: &Target,
    machine: &server::Machine,
    profile: &rows::Profile<'_>,
    options: &RunOptions,
    stop: &AtomicBool,
    stats: &mut Stats,
) -> Result<(), Error> {
    let destination = target.destination.as_str();
    let on_server = |source| Error::Server {
        destination: destination.to_string(),
        source,
    };
    let mut client = server::connect(&target.connection, target.settings.ca_file.as_deref())
        .map_err(on_server)?;
    stats.schema = server::migrate(&mut client).map_err(on_server)?;
    let mut prices_sent = None;
    // The store as this connection last looked at it: `PRAGMA data_version` moves whenever
    // another connection (ingest, import, prune) commits. While it stands still, a following
    // push has nothing to look for: the digests of every session are not computed again.
    let mut looked_at = None;
    let mut last_full = Instant::now();
    loop {
        let version: i64 = conn.query_row("PRAGMA data_version", [], |r| r.get(0))?;
        if looked_at == Some(version) {
            if !options.follow || !sleep_unless_stopped(options.poll, stop) {
                return Ok(());
            }
            continue;
        }
        let prices = local::prices(conn)?;
        if prices_sent.as_ref() != Some(&prices) {
            server::write_prices(&mut client, &machine.id, &prices).map_err(on_server)?;
            prices_sent = Some(prices);
        }
        let batch = target.settings.batch_events;
        // The sessions of the events this pass pushes: while the store only grows by events,
        // theirs are the only digests that can have changed.
        let mut touched: BTreeSet<String> = BTreeSet::new();
        let mut pushed_events = false;
        loop {
            if stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            let after = local::cursor(conn, destination)?;
            // The events and their check results from one snapshot: a prune between two
            // reads would take results the cursor then passes.
            let snapshot = conn.unchecked_transaction()?;
            let (events, last) = local::events_after(&snapshot, after, batch, profile)?;
            let Some(last) = last else { break };
            let checks = local::check_results_between(&snapshot, (after, last), profile)?;
            drop(snapshot);
            server::write(&mut client, machine, &[&events, &checks], &[]).map_err(on_server)?;
            touched.extend(events.texts("session_id").map(str::to_owned));
            pushed_events = true;
            let now = crate::support::clock::now_ms();
            if local::advance(conn, destination, (after, last), events.len(), now)? {
                stats.events += events.len() as u64;
            }
            // The records of what went, right after it: a verify of the server in between
            // sees few rows whose records have not come yet.
            push_chain(conn, &mut client, machine, destination)?;
        }
        push_chain(conn, &mut client, machine, destination)?;
        // Everything is looked at on the first pass, every FULL_LOOK, and when the store
        // changed without new events (an import, a prune); else only the touched sessions.
        let full = looked_at.is_none() || !pushed_events || last_full.elapsed() >= FULL_LOOK;
        let touched: Vec<String> = touched.into_iter().collect();
        let changed = local::changed_sessions(conn, destination, (!full).then_some(&touched[..]))?;
        if full {
            last_full = Instant::now();
        }
        for chunk in changed.chunks(SESSIONS_PER_BATCH) {
            if stop.load(Ordering::SeqCst) {
                return Ok(());
            }
            let r = local::session_rows(conn, chunk, profile)?;
            let ids: Vec<String> = chunk.iter().map(|(s, _)| s.clone()).collect();
            let tables = [&r.sessions, &r.turns, &r.tool_calls, &r.usage];
            server::write(&mut client, machine, &tables, &ids).map_err(on_server)?;
            local::sessions_sent(conn, destination, chunk)?;
            stats.sessions += chunk.len() as u64;
        }
        looked_at = Some(version);
        if !options.follow || !sleep_unless_stopped(options.poll, stop) {
            return Ok(());
        }
    }
}

/// Chain records per server transaction.
const CHAIN_RECORDS_PER_BATCH: usize = 200;

/// Sends the chain records the server lacks (after its last one for this machine), up to the
/// first that lists an event not pushed yet. Each is written once (`DO NOTHING` on its id):
/// a machine whose chain was rewritten since keeps its first one on the server.
fn push_chain(
    conn: &rusqlite::Connection,
    client: &mut postgres::Client,
    machine: &server::Machine,
    destination: &str,
) -> Result<(), Error> {
    let on_server = |source| Error::Server {
        destination: destination.to_string(),
        source,
    };
    let mut after = server::chain_head_id(client, &machine.id).map_err(on_server)?;
    let pushed = local::cursor(conn, destination)?;
    // Found once: read again for every batch, it scanned to the chain's end each time.
    let block = local::chain_block(conn, after, pushed)?;
    loop {
        let records = local::chain_after(conn, after, block, CHAIN_RECORDS_PER_BATCH)?;
        let Some(last) = records.ints("id").max() else {
            return Ok(());
        };
        server::write(client, machine, &[&records], &[]).map_err(on_server)?;
        after = last;
    }
}

/// Sleeps `pause` in short steps; `false` once `stop` is set.
pub fn sleep_unless_stopped(pause: Duration, stop: &AtomicBool) -> bool {
    let step = Duration::from_millis(50);
    let until = Instant::now() + pause;
    while Instant::now() < until {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        std::thread::sleep(step.min(until.saturating_duration_since(Instant::now())));
    }
    !stop.load(Ordering::SeqCst)
}

/// A push running beside `cmstore ingest`, on its own thread with its own connections.
pub struct Continuous {
    beside: Beside<Result<Stats, Error>>,
    destination: String,
}

impl Continuous {
    /// Starts pushing to `target` until [`Continuous::finish`] or `stop`.
    pub fn start(
        db: &std::path::Path,
        target: Target,
        options: RunOptions,
        stop: Arc<AtomicBool>,
        on_warning: impl FnMut(String) + Send + 'static,
    ) -> Result<Continuous, Error> {
        let mut on_warning = on_warning;
        let destination = target.destination.clone();
        let options = RunOptions {
            follow: true,
            give_up_after: None,
            ..options
        };
        let work = move |store: &Store, stop: &AtomicBool| {
            run(store, &target, &options, stop, &mut on_warning)
        };
        match Beside::start("cmstore-push", db, stop, work) {
            Ok(beside) => Ok(Continuous {
                beside,
                destination,
            }),
            Err(StartError::Store(e)) => Err(Error::Store(e)),
            Err(StartError::Thread(e)) => Err(Error::Thread(e.to_string())),
        }
    }

    /// The server it pushes to (no password).
    pub fn destination(&self) -> &str {
        &self.destination
    }

    /// Stops the push and says what it did.
    pub fn finish(self) -> Result<Stats, Error> {
        self.beside
            .finish()
            .unwrap_or_else(|| Err(Error::Thread("it panicked".to_string())))
    }
}

/// The continuous push a following `cmstore ingest` runs when `[push]` is in the configuration
/// (and its `enabled` is not `false`); `None` without it, or when its settings cannot work,
/// which `on_warning` hears of (ingest goes on without it).
pub fn beside_ingest(
    paths: &crate::files::paths::Paths,
    on_warning: impl FnMut(String) + Send + Clone + 'static,
) -> Option<Continuous> {
    let mut warn = on_warning.clone();
    let (config, _) = crate::config::Config::load_for(paths);
    let settings = config.push.filter(|p| p.continuous)?;
    let target = match Target::new(settings, &crate::support::env::value) {
        Ok(target) => target,
        Err(err) => {
            warn(format!("push: not started: {err}"));
            return None;
        }
    };
    let options = RunOptions {
        follow: true,
        give_up_after: None,
        redact: config.redact,
        ..RunOptions::default()
    };
    let stop = Arc::new(AtomicBool::new(false));
    match Continuous::start(&paths.db, target, options, stop, on_warning) {
        Ok(c) => Some(c),
        Err(err) => {
            warn(format!(
                "push: not started: {}",
                crate::support::failure::chain(&err)
            ));
            None
        }
    }
}
