//! One OTLP/HTTP request and its retries: protobuf, gzip, the configured headers; retried
//! with back-off on a network error, 429, 502, 503 and 504, honouring `Retry-After`; a 2xx is
//! the acknowledgement the cursor waits for.
//!
//! The client is `ureq` (blocking, rustls): the export runs on a thread of its own, so an
//! async runtime would buy nothing, and rustls lets it reach a collector over TLS without
//! the system's OpenSSL.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
use prost::Message;

use super::config::ExportConfig;

/// The longest pause between two tries, and the most of a `Retry-After` honoured.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// The first pause after a failed try.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// Why a request was not acknowledged.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// Worth trying again: the collector is down, busy or throttling.
    #[error("{why}")]
    Transient {
        /// What happened.
        why: String,
        /// The collector's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
    },
    /// The collector refused the request itself (a 4xx other than 429): sending it again
    /// would get the same answer.
    #[error("the collector answered {status}: {body}")]
    Refused {
        /// The HTTP status.
        status: u16,
        /// The start of its answer.
        body: String,
    },
    /// Retries were stopped: the time allowed ran out, or the process is stopping.
    #[error("gave up after {tries} tries in {secs:.1} s; last: {last}")]
    GaveUp {
        /// Tries made.
        tries: u32,
        /// Seconds spent.
        secs: f64,
        /// The last failure.
        last: String,
    },
}

/// What the collector said about an acknowledged request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ack {
    /// Spans it accepted the request with but rejected (OTLP partial success).
    pub rejected_spans: i64,
    /// Tries it took.
    pub tries: u32,
}

/// Posts protobuf bodies to one collector.
pub struct Sender {
    agent: ureq::Agent,
    url: String,
    headers: Vec<(String, String)>,
    gzip: bool,
}

impl Sender {
    /// A sender for `config`'s endpoint, headers, timeout and compression.
    pub fn new(config: &ExportConfig) -> Sender {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .user_agent(concat!("cmstore/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Sender {
            agent,
            url: config.traces_endpoint.clone(),
            headers: config.headers.clone(),
            gzip: config.gzip,
        }
    }

    /// One try.
    pub fn post(&self, body: &[u8]) -> Result<Ack, SendError> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Content-Type", "application/x-protobuf");
        for (k, v) in &self.headers {
            request = request.header(k.as_str(), v.as_str());
        }
        let result = if self.gzip {
            request
                .header("Content-Encoding", "gzip")
                .send(&gzip(body)[..])
        } else {
            request.send(body)
        };
        let mut response = result.map_err(|e| SendError::Transient {
            why: format!("cannot reach {}: {e}", self.url),
            retry_after: None,
        })?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let answer = response
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_vec()
            .unwrap_or_default();
        match status {
            200..=299 => Ok(Ack {
                rejected_spans: ExportTraceServiceResponse::decode(&answer[..])
                    .ok()
                    .and_then(|r| r.partial_success)
                    .map_or(0, |p| p.rejected_spans),
                tries: 1,
            }),
            429 | 502 | 503 | 504 => Err(SendError::Transient {
                why: format!("the collector answered {status}"),
                retry_after,
            }),
            _ => Err(SendError::Refused {
                status,
                body: String::from_utf8_lossy(&answer[..answer.len().min(300)]).into_owned(),
            }),
        }
    }

    /// Tries until acknowledged, a refusal, `stop`, or `give_up_after` has passed (never,
    /// when `None`), pausing between tries with doubling back-off or the collector's
    /// `Retry-After`. `on_retry` hears of each failed try and the pause that follows.
    pub fn post_with_retry(
        &self,
        body: &[u8],
        give_up_after: Option<Duration>,
        stop: &AtomicBool,
        on_retry: &mut dyn FnMut(&SendError, Duration),
    ) -> Result<Ack, SendError> {
        let started = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        let mut tries = 0;
        loop {
            tries += 1;
            let err = match self.post(body) {
                Ok(ack) => return Ok(Ack { tries, ..ack }),
                Err(e @ SendError::Refused { .. }) => return Err(e),
                Err(e) => e,
            };
            let pause = match &err {
                SendError::Transient {
                    retry_after: Some(after),
                    ..
                } => (*after).min(MAX_BACKOFF),
                _ => backoff,
            };
            backoff = (backoff * 2).min(MAX_BACKOFF);
            let out_of_time = give_up_after.is_some_and(|limit| started.elapsed() + pause > limit);
            if out_of_time || stop.load(Ordering::SeqCst) {
                return Err(SendError::GaveUp {
                    tries,
                    secs: started.elapsed().as_secs_f64(),
                    last: err.to_string(),
                });
            }
            on_retry(&err, pause);
            if !sleep_unless_stopped(pause, stop) {
                return Err(SendError::GaveUp {
                    tries,
                    secs: started.elapsed().as_secs_f64(),
                    last: err.to_string(),
                });
            }
        }
    }
}

/// Sleeps `pause` in short steps; `false` when `stop` was set meanwhile.
pub fn sleep_unless_stopped(pause: Duration, stop: &AtomicBool) -> bool {
    let until = Instant::now() + pause;
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
}

/// `Retry-After` in seconds (the HTTP-date form is left to the back-off).
fn parse_retry_after(value: &str) -> Option<Duration> {
    value.trim().parse::<u64>().ok().map(Duration::from_secs)
}

fn gzip(body: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(body.len() / 4),
        flate2::Compression::fast(),
    );
    // Writing to a Vec cannot fail.
    encoder.write_all(body).expect("gzip into memory");
    encoder.finish().expect("gzip into memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_seconds() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let body = b"spans spans spans".repeat(100);
        let packed = gzip(&body);
        assert!(packed.len() < body.len());
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&packed[..])
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, body);
    }

    #[test]
    fn a_stop_ends_the_pause() {
        let stop = AtomicBool::new(true);
        let t = Instant::now();
        assert!(!sleep_unless_stopped(Duration::from_secs(5), &stop));
        assert!(t.elapsed() < Duration::from_secs(1));
    }
}
