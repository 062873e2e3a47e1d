//! A mock model API on loopback: a minimal HTTP/1.1 server whose replies a test scripts.
//!
//! Written small on `std::net` rather than taken from a crate: the agents need one POST route
//! each, answered with JSON or a server-sent event stream of a known length, and nothing else
//! (no TLS, no compression, no routing). Every request is recorded for the test to inspect.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One request the mock received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    /// The request target, query string included.
    pub path: String,
    /// The body as JSON, `Null` when it is empty or not JSON.
    pub body: Value,
}

/// What the mock answers to a request.
pub enum Reply {
    /// 200 with a JSON body.
    Json(Value),
    /// 200 with `text/event-stream`: each event as `event: NAME` (when named) and `data: JSON`.
    Sse(Vec<(Option<&'static str>, Value)>),
    /// An empty reply with this status.
    Status(u16),
    /// No reply until the server stops: a model that never answers (for interrupted turns).
    Stall,
    /// The reply with these response headers added (say, the `request-id` an API sends).
    WithHeaders(Vec<(&'static str, String)>, Box<Reply>),
}

type Responder = dyn Fn(&Request) -> Reply + Send + Sync;

/// The running server; stops (and joins its accept thread) when dropped.
pub struct MockServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Listens on 127.0.0.1 on a free port and answers every request with `respond`.
    pub fn start(respond: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mock on loopback");
        let addr = listener.local_addr().expect("mock address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let respond: Arc<Responder> = Arc::new(respond);
        let accept = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || accept_loop(listener, respond, requests, stop))
        };
        MockServer {
            addr,
            requests,
            stop,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`, for the agent's base-URL variable.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Waits until a request matching `pred` has arrived, at most `limit`.
    pub fn wait_for(&self, limit: Duration, pred: impl Fn(&Request) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.requests().iter().any(&pred) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accept so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(handle) = self.accept.take() {
            let _ = handle.join();
        }
    }
}

fn accept_loop(
    listener: TcpListener,
    respond: Arc<Responder>,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
) {
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else { continue };
        let (respond, requests, stop) = (respond.clone(), requests.clone(), stop.clone());
        // Detached: a connection ends with its client, or at the read timeout.
        std::thread::spawn(move || serve(stream, &*respond, &requests, &stop));
    }
}

/// Answers the requests of one keep-alive connection in turn.
fn serve(stream: TcpStream, respond: &Responder, log: &Mutex<Vec<Request>>, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut input = BufReader::new(stream);
    while let Some(request) = read_request(&mut input) {
        log.lock().unwrap().push(request.clone());
        let reply = respond(&request);
        if matches!(reply, Reply::Stall) {
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            return;
        }
        if out.write_all(&encode(reply)).is_err() {
            return;
        }
    }
}

fn read_request(input: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    input.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let (mut length, mut chunked) = (0usize, false);
    loop {
        let mut header = String::new();
        input.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
        if name == "content-length" {
            length = value.parse().ok()?;
        } else if name == "transfer-encoding" && value.eq_ignore_ascii_case("chunked") {
            chunked = true;
        }
    }
    let body = if chunked {
        read_chunked(input)?
    } else {
        let mut body = vec![0; length];
        input.read_exact(&mut body).ok()?;
        body
    };
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Request { method, path, body })
}

fn read_chunked(input: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        input.read_line(&mut size).ok()?;
        let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
        let mut chunk = vec![0; size + 2];
        input.read_exact(&mut chunk).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(&chunk[..size]);
    }
}

fn encode(reply: Reply) -> Vec<u8> {
    let (extra, reply) = match reply {
        Reply::WithHeaders(headers, reply) => (headers, *reply),
        reply => (Vec::new(), reply),
    };
    let extra: String = extra
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let (status, kind, body) = match reply {
        Reply::Json(v) => (200, "application/json", v.to_string()),
        Reply::Sse(events) => (200, "text/event-stream", sse(&events)),
        Reply::Status(code) => (code, "text/plain", String::new()),
        Reply::Stall | Reply::WithHeaders(..) => unreachable!("no reply of its own"),
    };
    let head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n{extra}\r\n",
        if status == 200 { "OK" } else { "Error" },
        body.len()
    );
    [head.into_bytes(), body.into_bytes()].concat()
}

fn sse(events: &[(Option<&'static str>, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            out.push_str(&format!("event: {name}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}
