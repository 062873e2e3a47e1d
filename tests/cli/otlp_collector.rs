//! A local OTLP/HTTP collector for the tests: a tiny HTTP server on 127.0.0.1:0 in a thread
//! that answers as scripted and decodes what it got with the same proto types cmstore uses.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// One scripted answer.
#[derive(Debug, Clone, Copy)]
pub struct Answer {
    pub status: u16,
    pub retry_after: Option<u64>,
    /// Wait this long before answering (a slow collector).
    pub delay: Duration,
}

impl Answer {
    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            retry_after: None,
            delay: Duration::ZERO,
        }
    }

    pub fn retry_after(status: u16, secs: u64) -> Answer {
        Answer {
            retry_after: Some(secs),
            ..Answer::status(status)
        }
    }
}

/// A request as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub at: Instant,
    pub status: u16,
    pub gzip: bool,
    pub headers: Vec<(String, String)>,
    /// Decoded when the collector acknowledged it.
    pub request: Option<ExportTraceServiceRequest>,
}

#[derive(Default)]
struct State {
    script: VecDeque<Answer>,
    /// Answer for every request once the script is used up.
    then: Option<Answer>,
    received: Vec<Received>,
}

pub struct Collector {
    pub port: u16,
    server: Arc<tiny_http::Server>,
    state: Arc<Mutex<State>>,
    thread: Option<JoinHandle<()>>,
}

impl Collector {
    /// A collector answering 200 to everything.
    pub fn start() -> Collector {
        Collector::scripted(&[])
    }

    /// A collector answering `script` in order, then 200.
    pub fn scripted(script: &[Answer]) -> Collector {
        Collector::on_port(0, script)
    }

    /// The same on a given port (0: any).
    pub fn on_port(port: u16, script: &[Answer]) -> Collector {
        let server = Arc::new(tiny_http::Server::http(("127.0.0.1", port)).expect("bind"));
        let port = server.server_addr().to_ip().expect("ip").port();
        let state = Arc::new(Mutex::new(State {
            script: script.iter().copied().collect(),
            ..State::default()
        }));
        let thread = {
            let server = Arc::clone(&server);
            let state = Arc::clone(&state);
            std::thread::spawn(move || serve(&server, &state))
        };
        Collector {
            port,
            server,
            state,
            thread: Some(thread),
        }
    }

    /// Answers every later request with `answer`.
    pub fn answer_always(&self, answer: Answer) {
        self.state.lock().unwrap().then = Some(answer);
    }

    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }

    /// Every span of every acknowledged request, in order.
    pub fn spans(&self) -> Vec<Span> {
        self.received()
            .into_iter()
            .filter_map(|r| r.request)
            .flat_map(|r| r.resource_spans)
            .flat_map(|rs| rs.scope_spans)
            .flat_map(|ss| ss.spans)
            .collect()
    }

    /// Waits until at least `n` spans were acknowledged, or `timeout`.
    pub fn wait_spans(&self, n: usize, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.spans().len();
            if got >= n || Instant::now() > deadline {
                return got;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(server: &tiny_http::Server, state: &Mutex<State>) {
    while let Ok(mut request) = server.recv() {
        let answer = {
            let mut s = state.lock().unwrap();
            s.script
                .pop_front()
                .or(s.then)
                .unwrap_or(Answer::status(200))
        };
        let headers: Vec<(String, String)> = request
            .headers()
            .iter()
            .map(|h| {
                (
                    h.field.to_string().to_ascii_lowercase(),
                    h.value.to_string(),
                )
            })
            .collect();
        let gzip = headers
            .iter()
            .any(|(k, v)| k == "content-encoding" && v == "gzip");
        let mut body = Vec::new();
        let _ = request.as_reader().read_to_end(&mut body);
        if gzip {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&body[..])
                .read_to_end(&mut out)
                .expect("a gzip body");
            body = out;
        }
        std::thread::sleep(answer.delay);
        let ok = (200..300).contains(&answer.status);
        let decoded = ok.then(|| ExportTraceServiceRequest::decode(&body[..]).expect("protobuf"));
        state.lock().unwrap().received.push(Received {
            at: Instant::now(),
            status: answer.status,
            gzip,
            headers,
            request: decoded,
        });
        let mut response = tiny_http::Response::empty(answer.status);
        if let Some(secs) = answer.retry_after {
            response.add_header(
                tiny_http::Header::from_bytes("Retry-After", secs.to_string()).unwrap(),
            );
        }
        let _ = request.respond(response);
    }
}

/// A span's string attribute.
pub fn attr(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.clone()),
            Any::IntValue(i) => Some(i.to_string()),
            Any::BoolValue(b) => Some(b.to_string()),
            other => Some(format!("{other:?}")),
        })
}

/// A port nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}
