//! `cmstore serve`: a read-only web dashboard over the store, for its owner only.
//!
//! - [`auth`]: who gets in (the token, the `Host` and `Origin` checks);
//! - [`routes`]: pages, embedded assets and the `/api/…` endpoints;
//! - [`api`]: the data behind each endpoint, from the statements the commands use;
//! - [`team_api`]: the same on a team store (`--store postgres://…`), with its users and
//!   machines.
//!
//! The HTTP stack is `tiny_http`: synchronous, no async runtime, no TLS (the dashboard listens
//! on the loopback address unless told otherwise). A few worker threads each hold a read-only
//! connection ([`ReadOnlyDb`]; on a team store a PostgreSQL connection whose every statement
//! runs in a read-only transaction); nothing here opens a store for writing. Every response
//! carries a strict Content-Security-Policy (no inline script, nothing from elsewhere),
//! `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer` and `Cache-Control:
//! no-store`. See `docs/serve.md`.

pub mod api;
pub mod auth;
pub mod routes;
pub mod team_api;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::read::push::server::ServerError;
use crate::store::read_only::{QueryError, ReadOnlyDb};
use auth::{Access, Seen, Verdict};
use routes::{Cache, Context, Reply, Source};
use team_api::{TeamDb, TeamSource};

/// The Content-Security-Policy of every response: only this server's own script, styles and
/// data; no inline script, no frames, no forms elsewhere.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

/// Worker threads, each with its own connection: a slow SQL query keeps one busy, not all.
pub const WORKERS: usize = 4;

/// How the dashboard is served.
#[derive(Debug, Clone)]
pub struct Options {
    /// The address to listen on (loopback unless the owner asks for another).
    pub addr: IpAddr,
    /// The port; 0 picks a free one.
    pub port: u16,
    /// The store.
    pub store: Store,
    /// The SQL page's time limit (0 = none).
    pub sql_timeout: Duration,
}

/// The store the dashboard shows.
#[derive(Debug, Clone)]
pub enum Store {
    /// The local store (its path).
    Local(PathBuf),
    /// A team store on PostgreSQL.
    Team(Arc<TeamSource>),
}

/// Why the dashboard could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The store cannot be read.
    #[error(transparent)]
    Store(#[from] QueryError),
    /// The team store cannot be reached or read.
    #[error("the team store: {}", .0.explained())]
    Team(#[from] ServerError),
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        message: String,
    },
    /// `0.0.0.0` or `::`: every interface, whose names the Host check cannot know.
    #[error("--bind {0}: give the one address to listen on, not every interface")]
    Unspecified(IpAddr),
}

/// A dashboard listening, not yet answering.
pub struct Server {
    http: Arc<tiny_http::Server>,
    access: Arc<Access>,
    options: Options,
    port: u16,
}

impl Server {
    /// Checks that the store can be read, then listens on the address of `options`.
    pub fn bind(options: Options) -> Result<Server, ServeError> {
        if options.addr.is_unspecified() {
            return Err(ServeError::Unspecified(options.addr));
        }
        // Read once now: a store that cannot be read says so before the address is given.
        match &options.store {
            Store::Local(path) => drop(ReadOnlyDb::open(path, None)?),
            Store::Team(source) => {
                team_api::version(&TeamDb::connect(Arc::clone(source))?).map_err(|e| match &e {
                    ServerError::Postgres { source: pg, .. }
                        if pg.code() == Some(&postgres::error::SqlState::UNDEFINED_TABLE) =>
                    {
                        ServerError::Settings(
                            "none in this database yet (no `machines` table): \
                                 `cmstore push` to it first (docs/teams.md)"
                                .to_string(),
                        )
                    }
                    _ => e,
                })?;
            }
        }
        let addr = SocketAddr::new(options.addr, options.port);
        let http = tiny_http::Server::http(addr).map_err(|e| ServeError::Bind {
            addr,
            message: e.to_string(),
        })?;
        let port = http
            .server_addr()
            .to_ip()
            .map_or(options.port, |a| a.port());
        let access = Access::new(Access::random_token(), &host_names(options.addr), port);
        Ok(Server {
            http: Arc::new(http),
            access: Arc::new(access),
            options,
            port,
        })
    }

    /// The address to open, with the token: `http://127.0.0.1:PORT/?token=…`.
    pub fn url(&self) -> String {
        let host = host_names(self.options.addr).remove(0);
        format!("http://{host}:{}/?token={}", self.port, self.access.token())
    }

    /// Answers requests until the process ends.
    pub fn run(self) -> Result<(), ServeError> {
        let cache = Arc::new(Cache::default());
        let mut workers = Vec::new();
        for _ in 0..WORKERS {
            let source = match &self.options.store {
                Store::Local(path) => Source::Local {
                    db: ReadOnlyDb::open(path, None)?,
                    path: path.clone(),
                },
                Store::Team(source) => Source::Team(TeamDb::lazy(Arc::clone(source))),
            };
            let ctx = Context {
                source,
                sql_timeout: self.options.sql_timeout,
                cache: Arc::clone(&cache),
                now_ms: crate::support::clock::now_ms,
            };
            let http = Arc::clone(&self.http);
            let access = Arc::clone(&self.access);
            workers.push(std::thread::spawn(move || loop {
                match http.recv() {
                    Ok(request) => answer(&ctx, &access, request),
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }));
        }
        for worker in workers {
            let _ = worker.join();
        }
        Ok(())
    }
}

/// The names a browser may use for `addr` in the Host header: the loopback address and
/// `localhost`, or the one address given.
fn host_names(addr: IpAddr) -> Vec<String> {
    let literal = match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    };
    if addr.is_loopback() {
        vec![literal, "localhost".to_string()]
    } else {
        vec![literal]
    }
}

/// Checks one request, answers it, and sends the response (a failed send is the browser's
/// business: it went away).
fn answer(ctx: &Context, access: &Access, request: tiny_http::Request) {
    let header = |name: &str| {
        request
            .headers()
            .iter()
            .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str().to_string())
    };
    let (host, origin, cookie, site) = (
        header("Host"),
        header("Origin"),
        header("Cookie"),
        header("Sec-Fetch-Site"),
    );
    let method = request.method().as_str().to_ascii_uppercase();
    let url = request.url().to_string();
    let seen = Seen {
        method: &method,
        url: &url,
        host: host.as_deref(),
        origin: origin.as_deref(),
        cookie: cookie.as_deref(),
        sec_fetch_site: site.as_deref(),
    };
    let mut extra = Vec::new();
    let reply = match access.check(&seen) {
        Verdict::Allow => routes::route(ctx, &url),
        Verdict::SetCookie { location } => {
            extra.push(("Set-Cookie", access.set_cookie()));
            extra.push(("Location", location));
            Reply::text(303, "see the address without the token")
        }
        Verdict::Deny { status, reason } => Reply::text(status, reason),
    };
    let _ = request.respond(response(reply, &extra, method == "HEAD"));
}

/// The HTTP response of `reply`, with the security headers every response carries.
fn response(
    reply: Reply,
    extra: &[(&str, String)],
    head: bool,
) -> tiny_http::Response<std::io::Cursor<Vec<u8>>> {
    let body = if head {
        Vec::new()
    } else {
        Arc::try_unwrap(reply.body).unwrap_or_else(|shared| (*shared).clone())
    };
    let mut response = tiny_http::Response::from_data(body).with_status_code(reply.status);
    let mut headers: Vec<(&str, String)> = vec![
        ("Content-Type", reply.content_type.to_string()),
        ("Content-Security-Policy", CSP.to_string()),
        ("X-Content-Type-Options", "nosniff".to_string()),
        ("Referrer-Policy", "no-referrer".to_string()),
        ("X-Frame-Options", "DENY".to_string()),
        ("Cache-Control", "no-store".to_string()),
        ("Cross-Origin-Resource-Policy", "same-origin".to_string()),
    ];
    if let Some(name) = reply.download {
        headers.push((
            "Content-Disposition",
            format!("attachment; filename=\"{name}\""),
        ));
    }
    headers.extend(extra.iter().cloned());
    for (name, value) in headers {
        if let Ok(h) = tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes()) {
            response.add_header(h);
        }
    }
    response
}
