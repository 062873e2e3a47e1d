//! From a request's path and query to a [`Reply`]: the pages (one HTML shell), the embedded
//! assets, and the `/api/…` endpoints. Pure of HTTP: the server has already let the request
//! in (see [`super::auth`]) and turns the reply into a response.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value as Json};

use postgres::error::SqlState;

use super::api;
use super::team_api::{self, TeamDb};
use crate::read::push::server::ServerError;
use crate::read::render::{Format, Renderer, TableOptions};
use crate::read::sessions::Filters;
use crate::store::read_only::{QueryError, ReadOnlyDb};

/// The HTML shell every page loads; `app.js` draws the page its path names.
const INDEX_HTML: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/resources/web/index.html"
));
const APP_JS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/resources/web/app.js"));
const APP_CSS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/resources/web/app.css"
));
const FAVICON: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/resources/web/favicon.svg"
));

/// The paths that are pages (all served by the one HTML shell).
pub const PAGES: &[&str] = &["/", "/sessions", "/session", "/tools", "/gate", "/sql"];

/// An answer, before it becomes an HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Arc<Vec<u8>>,
    /// A file name to download the body as (`Content-Disposition: attachment`).
    pub download: Option<&'static str>,
}

impl Reply {
    fn new(status: u16, content_type: &'static str, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            content_type,
            body: Arc::new(body.into()),
            download: None,
        }
    }

    /// A JSON reply.
    pub fn json(status: u16, value: &Json) -> Reply {
        Reply::new(status, "application/json", value.to_string())
    }

    /// A plain-text error.
    pub fn text(status: u16, message: &str) -> Reply {
        Reply::new(status, "text/plain; charset=utf-8", format!("{message}\n"))
    }
}

/// The store a worker reads.
pub enum Source {
    /// The local store: this worker's read-only connection, and the store's path (for the SQL
    /// page's own connection with its time limit).
    Local {
        /// This worker's connection.
        db: ReadOnlyDb,
        /// The store.
        path: PathBuf,
    },
    /// A team store (`--store postgres://…`): this worker's connection.
    Team(TeamDb),
}

impl Source {
    /// `local` or `team`, as the pages are told.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Local { .. } => "local",
            Source::Team(_) => "team",
        }
    }
}

/// What a worker needs to answer: the store it reads and the cache shared by every worker.
pub struct Context {
    /// The store.
    pub source: Source,
    /// The SQL page's time limit.
    pub sql_timeout: Duration,
    /// Answers by address, with the store version they were computed at.
    pub cache: Arc<Cache>,
    /// Now, epoch ms (a function, for tests).
    pub now_ms: fn() -> i64,
}

/// Computed API answers, kept until the store changes.
#[derive(Default)]
pub struct Cache {
    entries: Mutex<HashMap<String, (String, Reply)>>,
}

/// Entries kept at most; the cache is emptied when full (the pages ask for a handful).
const CACHE_ENTRIES: usize = 256;

impl Cache {
    fn get(&self, key: &str, version: &str) -> Option<Reply> {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries
            .get(key)
            .filter(|(v, _)| v == version)
            .map(|(_, r)| r.clone())
    }

    fn put(&self, key: String, version: String, reply: Reply) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= CACHE_ENTRIES {
            entries.clear();
        }
        entries.insert(key, (version, reply));
    }
}

/// Answers `url` (path and query, already let in).
pub fn route(ctx: &Context, url: &str) -> Reply {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let params = Query::parse(query);
    match path {
        p if PAGES.contains(&p) => Reply::new(200, "text/html; charset=utf-8", INDEX_HTML),
        "/app.js" => Reply::new(200, "text/javascript; charset=utf-8", APP_JS),
        "/app.css" => Reply::new(200, "text/css; charset=utf-8", APP_CSS),
        "/favicon.svg" | "/favicon.ico" => Reply::new(200, "image/svg+xml", FAVICON),
        "/api/version" => match version(ctx) {
            Ok(v) => Reply::json(200, &json!({ "version": v, "store": ctx.source.kind() })),
            Err(reply) => reply,
        },
        "/api/sql" => sql(ctx, &params),
        p if p.starts_with("/api/") => match &ctx.source {
            // One snapshot for the store's version and the answer: the parts of an answer
            // (the overview's days, tools and projects; a session's story and timeline)
            // agree, and the cache keeps it under the version it was computed at.
            Source::Local { db, .. } => db
                .in_one_snapshot(|_| Ok(cached(ctx, url, |ctx| data(ctx, db, p, &params))))
                .unwrap_or_else(|e| error(&e)),
            Source::Team(team) => cached(ctx, url, |ctx| team_data(ctx, team, p, &params)),
        },
        _ => Reply::text(404, "not found"),
    }
}

/// The store's version, or the reply that says why it cannot be read.
fn version(ctx: &Context) -> Result<String, Reply> {
    match &ctx.source {
        Source::Local { db, .. } => api::version(db).map_err(|e| error(&e)),
        Source::Team(team) => team_api::version(team).map_err(|e| team_error(&e)),
    }
}

/// A data endpoint's answer, from the cache when the store has not changed since.
fn cached(ctx: &Context, url: &str, compute: impl FnOnce(&Context) -> Reply) -> Reply {
    let Ok(version) = version(ctx) else {
        return compute(ctx);
    };
    if let Some(reply) = ctx.cache.get(url, &version) {
        return reply;
    }
    let reply = compute(ctx);
    if reply.status == 200 {
        ctx.cache.put(url.to_string(), version, reply.clone());
    }
    reply
}

fn data(ctx: &Context, db: &ReadOnlyDb, path: &str, q: &Query) -> Reply {
    let filters = match q.filters((ctx.now_ms)()) {
        Ok(f) => f,
        Err(message) => return Reply::json(400, &json!({ "error": message })),
    };
    let result = match path {
        "/api/overview" => api::overview(db, &filters).map(Some),
        "/api/tools" => api::tools(db, &filters).map(|t| Some(json!(t))),
        "/api/gate" => api::gate_report(db, &filters).map(Some),
        "/api/sessions" => {
            let (limit, all) = q.listing();
            api::sessions(db, &filters, limit, all).map(Some)
        }
        "/api/session" => api::session(db, q.get("id").unwrap_or_default()),
        "/api/call" => api::call(
            db,
            q.get("session").unwrap_or_default(),
            q.get("key").unwrap_or_default(),
        ),
        _ => return Reply::json(404, &json!({ "error": "no such endpoint" })),
    };
    answered(result, error)
}

/// A data endpoint's reply: its value, 404 for what is not there, else the error's reply.
fn answered<E>(result: Result<Option<Json>, E>, error: impl FnOnce(&E) -> Reply) -> Reply {
    match result {
        Ok(Some(value)) => Reply::json(200, &value),
        Ok(None) => Reply::json(404, &json!({ "error": "not in the store" })),
        Err(e) => error(&e),
    }
}

/// [`data`] on a team store: the same endpoints, with `machine` and `user` as filters too
/// (within those the dashboard was started with).
fn team_data(ctx: &Context, team: &TeamDb, path: &str, q: &Query) -> Reply {
    let common = match q.filters((ctx.now_ms)()) {
        Ok(f) => f,
        Err(message) => return Reply::json(400, &json!({ "error": message })),
    };
    let filters = team.filters(common, q.get("machine"), q.get("user"));
    let result = match path {
        "/api/overview" => team_api::overview(team, &filters).map(Some),
        "/api/tools" => team_api::tools(team, &filters).map(|t| Some(json!(t))),
        "/api/gate" => team_api::gate_report(team, &filters).map(Some),
        "/api/sessions" => {
            let (limit, all) = q.listing();
            team_api::sessions(team, &filters, limit, all).map(Some)
        }
        "/api/session" => {
            team_api::session(team, q.get("id").unwrap_or_default(), &filters).map(Some)
        }
        "/api/call" => match &filters.machine {
            Some(machine) => team_api::call(
                team,
                machine,
                filters.user.as_deref(),
                q.get("session").unwrap_or_default(),
                q.get("key").unwrap_or_default(),
            ),
            None => return Reply::json(400, &json!({ "error": "a call needs its machine" })),
        },
        _ => return Reply::json(404, &json!({ "error": "no such endpoint" })),
    };
    answered(result, team_error)
}

fn error(e: &QueryError) -> Reply {
    Reply::json(500, &json!({ "error": e.to_string() }))
}

/// A team store's error: what was asked for is not there (404: no such session, or an id
/// two sessions share), or the server failed (500) or cannot be reached (503).
fn team_error(e: &ServerError) -> Reply {
    let status = match e {
        ServerError::Settings(_) => 404,
        ServerError::Refused(_) => 403,
        ServerError::Postgres { source, .. } if source.as_db_error().is_none() => 503,
        ServerError::Postgres { .. } => 500,
    };
    Reply::json(status, &json!({ "error": e.explained() }))
}

/// The SQL page: one statement through `cmstore query`'s guard on a connection of its own
/// with the time limit (on a team store, as `query --store` runs it: a read-only
/// transaction); JSON for the page, or a CSV/JSON download.
fn sql(ctx: &Context, q: &Query) -> Reply {
    let text = q.get("q").unwrap_or_default();
    let max_rows = q
        .number("max_rows")
        .unwrap_or(api::SQL_DEFAULT_ROWS)
        .clamp(1, api::SQL_MAX_ROWS);
    let timeout = Some(ctx.sql_timeout).filter(|t| !t.is_zero());
    let result = match &ctx.source {
        Source::Local { path, .. } => ReadOnlyDb::open(path, timeout)
            .and_then(|db| api::sql(&db, text, max_rows))
            .map_err(|e| {
                let status = match e {
                    QueryError::Refused(_) | QueryError::MultipleStatements => 403,
                    QueryError::Database { .. } | QueryError::MissingDatabase(_) => 500,
                    _ => 400,
                };
                Reply::json(status, &json!({ "error": e.to_string() }))
            }),
        Source::Team(team) => team_api::sql(team, text, max_rows, timeout).map_err(|e| {
            let status = match &e {
                // What a read-only transaction refuses: a write.
                ServerError::Postgres { source, .. }
                    if source.code() == Some(&SqlState::READ_ONLY_SQL_TRANSACTION) =>
                {
                    403
                }
                ServerError::Refused(_) => 403,
                ServerError::Postgres { source, .. } if source.as_db_error().is_none() => 503,
                _ => 400,
            };
            Reply::json(status, &json!({ "error": e.explained() }))
        }),
    };
    let result = match result {
        Ok(r) => r,
        Err(reply) => return reply,
    };
    let (format, content_type, name) = match q.get("format") {
        Some("csv") => (Format::Csv, "text/csv; charset=utf-8", "cmstore-query.csv"),
        Some("json") => (Format::Json, "application/json", "cmstore-query.json"),
        _ => return Reply::json(200, &result.to_json()),
    };
    match rendered(format, &result) {
        Ok(body) => Reply {
            download: Some(name),
            ..Reply::new(200, content_type, body)
        },
        Err(e) => Reply::text(500, &format!("rendering: {e}")),
    }
}

/// The rows through `cmstore query`'s renderers.
fn rendered(format: Format, result: &api::SqlResult) -> std::io::Result<Vec<u8>> {
    let mut renderer = Renderer::new(
        format,
        Vec::new(),
        result.columns.clone(),
        TableOptions::default(),
    )?;
    for row in &result.rows {
        renderer.row(row)?;
    }
    renderer.finish()
}

/// A parsed query string.
#[derive(Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses `a=1&b=x%20y` (`+` is a space).
    pub fn parse(query: &str) -> Query {
        let pairs = query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect();
        Query { pairs }
    }

    /// The last value of `name`, when given and not empty.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }

    fn number(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(|v| v.parse().ok())
    }

    /// The session list's `limit` (200 unless given, at most 10,000) and `all`.
    fn listing(&self) -> (u64, bool) {
        let limit = self.number("limit").unwrap_or(200).clamp(1, 10_000);
        (limit, self.get("all").is_some_and(|v| v == "1"))
    }

    /// The report filters: `since`/`until` (as `--since`: 7d, 2026-11-30, …), `agent`,
    /// `project`.
    pub fn filters(&self, now_ms: i64) -> Result<Filters, String> {
        let when = |name: &str| {
            self.get(name)
                .map(|v| crate::support::timespec::parse_point(v, now_ms))
                .transpose()
                .map_err(|e| format!("{name} {e}"))
        };
        Ok(Filters {
            since: when("since")?,
            until: when("until")?,
            agent: self.get("agent").map(str::to_string),
            project: self.get("project").map(str::to_string),
            session: None,
        })
    }
}

/// Percent-decoding, `+` as a space; invalid UTF-8 is replaced.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let digit = |at: usize| bytes.get(at).and_then(|&b| hex(b));
                match (digit(i + 1), digit(i + 2)) {
                    (Some(h), Some(l)) => {
                        out.push(h * 16 + l);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_strings_are_decoded() {
        assert_eq!(decode("a+b%20c%2B%zz%4"), "a b c+%zz%4");
        assert_eq!(decode("%C3%A9"), "é");
        let q = Query::parse("q=SELECT+1&agent=&agent=claude&since=7d");
        assert_eq!(q.get("q"), Some("SELECT 1"));
        assert_eq!(q.get("agent"), Some("claude"));
        let f = q.filters(10 * 86_400_000).unwrap();
        assert_eq!(f.since, Some(3 * 86_400_000));
        assert_eq!(f.agent.as_deref(), Some("claude"));
        assert!(Query::parse("since=soon").filters(0).is_err());
    }
}
