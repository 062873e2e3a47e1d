//! OpenTelemetry in: an OTLP/HTTP receiver for the agents' own telemetry (Claude Code's
//! `claude_code.*` events and metrics), run beside `cmstore ingest` on a thread of its own,
//! storing each log record and metric point once in `otel_logs` and `otel_metrics`.
//!
//! Loopback only unless `[otlp_receiver] allow_remote = true`; bodies above
//! `max_body_bytes` (after gzip too) get a 413; a body that cannot be decoded gets a 400 and
//! a row in `otel_rejects`. Nothing a client sends can end the thread.
//!
//! The HTTP server is `tiny_http`: small, synchronous, quick to build on a 2-core machine,
//! and it reads chunked request bodies (Claude Code sends them without `Content-Length`).

pub mod decode;
mod totals;
mod write;

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::store::{self, Store};

use decode::{Format, Signal};

/// The most bytes a request body may have when nothing says otherwise.
pub const DEFAULT_MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The receiver's settings: `[otlp_receiver]` in `cmstore.toml`, the command line on top.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiverConfig {
    /// Where to listen; `None`: the receiver is off.
    pub listen: Option<SocketAddr>,
    /// Listening on an address other than loopback is allowed.
    pub allow_remote: bool,
    /// The largest body accepted, in bytes (after gzip is undone, too).
    pub max_body_bytes: usize,
}

/// Errors starting the receiver.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration cannot be used.
    #[error("{0}")]
    Config(String),
    /// A non-loopback address without `allow_remote`.
    #[error(
        "refusing to listen on {0}: not a loopback address (set allow_remote = true under \
         [otlp_receiver] in cmstore.toml to accept telemetry from other machines)"
    )]
    NotLoopback(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {why}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        why: String,
    },
    /// The store could not be opened.
    #[error("cannot open the store")]
    Store(#[from] store::Error),
}

impl ReceiverConfig {
    /// Reads `[otlp_receiver]` from the file at `path` (absent: the receiver is off), then
    /// `listen` from the command line when given.
    pub fn load(path: &Path, listen: Option<&str>) -> Result<ReceiverConfig, Error> {
        let mut config = ReceiverConfig {
            listen: None,
            allow_remote: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        };
        let origin = path.display();
        let table = match std::fs::read_to_string(path) {
            // A file that is not TOML is reported by ingest already: the receiver then has
            // its defaults (and the command line's address), as capture has its own.
            Ok(text) => text
                .parse::<toml::Table>()
                .ok()
                .and_then(|mut table| table.remove("otlp_receiver")),
            Err(_) => None,
        };
        if let Some(table) = table {
            let toml::Value::Table(table) = table else {
                return Err(Error::Config(format!(
                    "{origin}: otlp_receiver: expected a table"
                )));
            };
            for (key, value) in table {
                match (key.as_str(), value) {
                    ("listen", toml::Value::String(s)) => config.listen = Some(parse_addr(&s)?),
                    ("allow_remote", toml::Value::Boolean(b)) => config.allow_remote = b,
                    ("max_body_bytes", toml::Value::Integer(n)) if n > 0 => {
                        config.max_body_bytes = usize::try_from(n).unwrap_or(usize::MAX)
                    }
                    (key, _) => {
                        return Err(Error::Config(format!(
                            "{origin}: otlp_receiver.{key}: unknown setting or wrong type"
                        )))
                    }
                }
            }
        }
        if let Some(listen) = listen {
            config.listen = Some(parse_addr(listen)?);
        }
        Ok(config)
    }
}

fn parse_addr(text: &str) -> Result<SocketAddr, Error> {
    let text = text.trim();
    let text = text
        .strip_prefix("localhost:")
        .map_or(text.to_string(), |port| format!("127.0.0.1:{port}"));
    text.parse().map_err(|e| {
        Error::Config(format!(
            "{text:?}: expected an address and port such as 127.0.0.1:4318 ({e})"
        ))
    })
}

/// A running receiver.
pub struct Receiver {
    /// The address it listens on (the port chosen when `:0` was asked).
    pub addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    handle: Option<JoinHandle<()>>,
}

impl Receiver {
    /// Listens per `config` (whose `listen` must be set) and stores into the store at `db`.
    pub fn start(
        db: &Path,
        config: &ReceiverConfig,
        on_warning: impl FnMut(String) + Send + 'static,
    ) -> Result<Receiver, Error> {
        let addr = config
            .listen
            .ok_or_else(|| Error::Config("no address to listen on".to_string()))?;
        if !addr.ip().is_loopback() && !config.allow_remote {
            return Err(Error::NotLoopback(addr));
        }
        let store = store::open(db)?;
        let server = tiny_http::Server::http(addr).map_err(|why| Error::Bind {
            addr,
            why: why.to_string(),
        })?;
        let addr = server.server_addr().to_ip().unwrap_or(addr);
        let server = Arc::new(server);
        let limit = config.max_body_bytes;
        let handle = {
            let server = Arc::clone(&server);
            let mut on_warning = on_warning;
            std::thread::Builder::new()
                .name("cmstore-otlp".into())
                .spawn(move || {
                    while let Ok(request) = server.recv() {
                        serve(&store, request, limit, &mut on_warning);
                    }
                    store.close();
                })
                .map_err(|e| Error::Config(format!("cannot start the receiver thread: {e}")))?
        };
        Ok(Receiver {
            addr,
            server,
            handle: Some(handle),
        })
    }

    /// Stops listening and waits for the request in hand.
    pub fn finish(mut self) {
        self.server.unblock();
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

/// The answer to one request.
struct Answer {
    status: u16,
    body: Vec<u8>,
    content_type: &'static str,
}

impl Answer {
    fn text(status: u16, body: impl Into<String>) -> Answer {
        Answer {
            status,
            body: body.into().into_bytes(),
            content_type: "text/plain; charset=utf-8",
        }
    }
}

fn serve(
    store: &Store,
    mut request: tiny_http::Request,
    limit: usize,
    on_warning: &mut dyn FnMut(String),
) {
    let answer = answer(store, &mut request, limit, on_warning);
    let mut response = tiny_http::Response::from_data(answer.body).with_status_code(answer.status);
    if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", answer.content_type) {
        response.add_header(h);
    }
    // A client that went away has no answer to get.
    let _ = request.respond(response);
}

fn header<'r>(request: &'r tiny_http::Request, name: &str) -> Option<&'r str> {
    request
        .headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

fn answer(
    store: &Store,
    request: &mut tiny_http::Request,
    limit: usize,
    on_warning: &mut dyn FnMut(String),
) -> Answer {
    let path = request.url().to_string();
    let Some(signal) = Signal::of_path(&path) else {
        return Answer::text(
            404,
            "cmstore receives OTLP/HTTP logs and metrics: /v1/logs, /v1/metrics",
        );
    };
    if request.method() != &tiny_http::Method::Post {
        return Answer::text(405, "POST only");
    }
    let content_type = header(request, "Content-Type").map(str::to_string);
    let gzip = header(request, "Content-Encoding").is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    // `length`: the bytes the request carried (read, or declared when it was not read);
    // `body`: what was read of them, whose first bytes are kept.
    let mut reject = |status: u16, reason: String, length: usize, body: &[u8]| {
        let row = write::Reject {
            path: &path,
            content_type: content_type.as_deref(),
            length,
            status,
            reason: &reason,
            prefix: body,
        };
        if let Err(err) = write::reject(store, &row) {
            on_warning(format!("otlp: cannot record a rejected request: {err}"));
        }
        Answer::text(status, reason)
    };
    let Some(format) = content_type.as_deref().and_then(Format::of_content_type) else {
        // Read (up to the limit) before answering, so the client hears the answer rather
        // than a closed connection; the first bytes are kept to show what was sent.
        let declared = request.body_length();
        let (read, prefix) = read_limited(request, limit);
        let length = declared.unwrap_or(0).max(read);
        let reason = format!(
            "unsupported Content-Type {content_type:?}: application/x-protobuf or application/json"
        );
        return reject(415, reason, length, &prefix);
    };
    if let Some(declared) = request.body_length().filter(|n| *n > limit) {
        return reject(413, format!("body over {limit} bytes"), declared, b"");
    }
    let mut body = Vec::new();
    if let Err(err) = request
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body)
    {
        return reject(
            400,
            format!("cannot read the body: {err}"),
            body.len(),
            &body,
        );
    }
    if body.len() > limit {
        return reject(413, format!("body over {limit} bytes"), body.len(), &body);
    }
    let sent = body.len();
    if gzip {
        body = match decode::gunzip(&body, limit) {
            Ok(Some(unpacked)) => unpacked,
            Ok(None) => {
                let reason = format!("body over {limit} bytes once unpacked");
                return reject(413, reason, sent, &body);
            }
            Err(err) => return reject(400, err.to_string(), sent, &body),
        };
    }
    let decoded = match decode::decode(signal, format, &body) {
        Ok(decoded) => decoded,
        Err(err) => return reject(400, err.to_string(), sent, &body),
    };
    match write::rows(store, &decoded) {
        Ok(()) => Answer {
            status: 200,
            body: decode::success_body(format).to_vec(),
            content_type: match format {
                Format::Protobuf => "application/x-protobuf",
                Format::Json => "application/json",
            },
        },
        Err(err) => {
            on_warning(format!("otlp: cannot store a request: {err}"));
            // The client's SDK retries a 503; the records are not lost.
            Answer::text(503, "the store is busy; try again")
        }
    }
}

/// Starts the receiver beside ingest when `listen` (the command line) or the configuration
/// names an address; `Ok(None)` when neither does.
pub fn beside_ingest(
    paths: &crate::files::paths::Paths,
    listen: Option<&str>,
    on_warning: impl FnMut(String) + Send + 'static,
) -> Result<Option<Receiver>, Error> {
    let config = ReceiverConfig::load(&paths.config, listen)?;
    if config.listen.is_none() {
        return Ok(None);
    }
    Receiver::start(&paths.db, &config, on_warning).map(Some)
}

/// Reads up to `limit` bytes of the body: how many were read, and the first
/// [`write::PREFIX_BYTES`] of them. A read error ends the reading; what came before counts.
fn read_limited(request: &mut tiny_http::Request, limit: usize) -> (usize, Vec<u8>) {
    let mut reader = request.as_reader().take(limit as u64);
    let mut prefix = Vec::new();
    let kept = (&mut reader)
        .take(write::PREFIX_BYTES as u64)
        .read_to_end(&mut prefix)
        .unwrap_or(prefix.len());
    let rest = std::io::copy(&mut reader, &mut std::io::sink()).unwrap_or(0);
    (kept + rest as usize, prefix)
}
