//! `[export.otlp]` in `cmstore.toml`, with the standard `OTEL_EXPORTER_OTLP_*` variables on
//! top: where the spans go, with which headers, how they are packed, what leaves the machine.
//!
//! The variables override the file, as `CMSTORE_*` do; a signal-specific variable
//! (`OTEL_EXPORTER_OTLP_TRACES_*`) overrides the generic one, as the OTLP exporter
//! specification says. Capture never reads this section (it is not on the hook path).

use std::path::Path;
use std::time::Duration;

use crate::config::EnvLookup;

/// Where a collector listens when nothing says otherwise (OTLP/HTTP's default port).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// The OTLP/HTTP path of traces under a base endpoint.
pub const TRACES_PATH: &str = "v1/traces";

/// Events read from the store per request, when nothing says otherwise.
pub const DEFAULT_BATCH_EVENTS: usize = 512;

/// The most events one request carries, whatever the configuration says: a batch is held in
/// memory whole, and resent whole after a crash.
pub const MAX_BATCH_EVENTS: usize = 10_000;

/// The export settings in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    /// The full URL spans are posted to.
    pub traces_endpoint: String,
    /// Extra request headers (authentication), in the order given.
    pub headers: Vec<(String, String)>,
    /// How long one request may take.
    pub timeout: Duration,
    /// Gzip the request body.
    pub gzip: bool,
    /// Send prompts, responses and tool inputs and outputs (after redaction); off by default.
    pub content: bool,
    /// `user.id` on the resource, only when configured.
    pub user: Option<String>,
    /// `host.name` on the resource (the machine's name unless configured).
    pub host: Option<String>,
    /// Events per request.
    pub batch_events: usize,
    /// Whether `cmstore ingest` exports continuously (the `[export.otlp]` table is present and
    /// its `enabled` is not `false`).
    pub continuous: bool,
    /// Whether the file or the environment named an endpoint; `false` when it is OTLP's
    /// default, `http://localhost:4318`.
    pub endpoint_configured: bool,
}

/// A setting that cannot be used; the export does not start with it.
#[derive(Debug, thiserror::Error)]
#[error("{origin}: {message}")]
pub struct ConfigError {
    /// The file or variable it came from.
    pub origin: String,
    /// What is wrong.
    pub message: String,
    /// The file is not valid TOML at all (ingest, which reports that already, then runs
    /// without export).
    pub syntax: bool,
}

impl ExportConfig {
    /// Reads `[export.otlp]` from the file at `path` (absent is fine: defaults) and the
    /// environment through `env`.
    pub fn load(path: &Path, env: EnvLookup<'_>) -> Result<ExportConfig, ConfigError> {
        let origin = path.display().to_string();
        let table = match std::fs::read_to_string(path) {
            Ok(text) => section(&text, &origin)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(ConfigError {
                    origin,
                    message: format!("cannot read: {e}"),
                    syntax: false,
                })
            }
        };
        ExportConfig::from_parts(table.as_ref(), &origin, env)
    }

    /// The settings from an `[export.otlp]` table (if any) and the environment.
    pub fn from_parts(
        table: Option<&toml::Table>,
        origin: &str,
        env: EnvLookup<'_>,
    ) -> Result<ExportConfig, ConfigError> {
        let file = FileSettings::read(table, origin)?;
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let configured = var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_ENDPOINT").map(|base| traces_url(&base)))
            .or(file.traces_endpoint)
            .or_else(|| file.endpoint.as_deref().map(traces_url));
        let endpoint_configured = configured.is_some();
        let traces_endpoint = configured.unwrap_or_else(|| traces_url(DEFAULT_ENDPOINT));
        check_url(&traces_endpoint)?;
        let mut headers = file.headers;
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(text) = var(name) {
                for (key, value) in parse_headers(&text).map_err(|message| ConfigError {
                    origin: name.to_string(),
                    message,
                    syntax: false,
                })? {
                    headers.retain(|(k, _)| !k.eq_ignore_ascii_case(&key));
                    headers.push((key, value));
                }
            }
        }
        let timeout = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .map(|v| ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", v))
            .or_else(|| {
                var("OTEL_EXPORTER_OTLP_TIMEOUT").map(|v| ("OTEL_EXPORTER_OTLP_TIMEOUT", v))
            }) {
            Some((name, v)) => millis(&v).ok_or_else(|| ConfigError {
                origin: name.to_string(),
                message: format!("{v:?}: expected milliseconds, a whole number above 0"),
                syntax: false,
            })?,
            None => file.timeout.unwrap_or(Duration::from_secs(10)),
        };
        let gzip = match var("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION")
            .or_else(|| var("OTEL_EXPORTER_OTLP_COMPRESSION"))
        {
            Some(v) => compression(&v).ok_or_else(|| ConfigError {
                origin: "OTEL_EXPORTER_OTLP_COMPRESSION".to_string(),
                message: format!("{v:?}: expected gzip or none"),
                syntax: false,
            })?,
            None => file.gzip.unwrap_or(true),
        };
        Ok(ExportConfig {
            traces_endpoint,
            headers,
            timeout,
            gzip,
            content: file.content.unwrap_or(false),
            user: file.user,
            host: file.host.or_else(crate::support::env::host_name),
            batch_events: file.batch_events.unwrap_or(DEFAULT_BATCH_EVENTS),
            continuous: table.is_some() && file.enabled.unwrap_or(true),
            endpoint_configured,
        })
    }
}

/// The `[export.otlp]` table of a configuration file's text, if it has one.
fn section(text: &str, origin: &str) -> Result<Option<toml::Table>, ConfigError> {
    let mut table: toml::Table = text.parse().map_err(|e| ConfigError {
        origin: origin.to_string(),
        message: format!("cannot parse: {e}"),
        syntax: true,
    })?;
    let Some(export) = table.remove("export") else {
        return Ok(None);
    };
    let bad = |what: &str| ConfigError {
        origin: origin.to_string(),
        message: format!("{what}: expected a table"),
        syntax: false,
    };
    let toml::Value::Table(mut export) = export else {
        return Err(bad("export"));
    };
    match export.remove("otlp") {
        None => Ok(None),
        Some(toml::Value::Table(otlp)) => Ok(Some(otlp)),
        Some(_) => Err(bad("export.otlp")),
    }
}

/// What the file says, each setting checked.
#[derive(Default)]
struct FileSettings {
    endpoint: Option<String>,
    traces_endpoint: Option<String>,
    headers: Vec<(String, String)>,
    timeout: Option<Duration>,
    gzip: Option<bool>,
    content: Option<bool>,
    user: Option<String>,
    host: Option<String>,
    batch_events: Option<usize>,
    enabled: Option<bool>,
}

impl FileSettings {
    fn read(table: Option<&toml::Table>, origin: &str) -> Result<FileSettings, ConfigError> {
        let Some(table) = table else {
            return Ok(FileSettings::default());
        };
        let err = |key: &str, expected: &str| ConfigError {
            origin: origin.to_string(),
            message: format!("export.otlp.{key}: expected {expected}"),
            syntax: false,
        };
        let mut s = FileSettings::default();
        for (key, value) in table {
            match (key.as_str(), value) {
                ("endpoint", toml::Value::String(v)) => s.endpoint = Some(v.clone()),
                ("traces_endpoint", toml::Value::String(v)) => s.traces_endpoint = Some(v.clone()),
                ("headers", toml::Value::Table(h)) => {
                    for (k, v) in h {
                        let v = v.as_str().ok_or_else(|| err("headers", "string values"))?;
                        s.headers.push((k.clone(), v.to_string()));
                    }
                }
                ("timeout_ms", toml::Value::Integer(ms)) if *ms > 0 => {
                    s.timeout = Some(Duration::from_millis(*ms as u64))
                }
                ("compression", toml::Value::String(v)) => {
                    s.gzip = Some(compression(v).ok_or_else(|| err(key, "gzip or none"))?)
                }
                ("content", toml::Value::Boolean(b)) => s.content = Some(*b),
                ("enabled", toml::Value::Boolean(b)) => s.enabled = Some(*b),
                ("user", toml::Value::String(v)) => s.user = Some(v.clone()),
                ("host", toml::Value::String(v)) => s.host = Some(v.clone()),
                ("batch_events", toml::Value::Integer(n))
                    if (1..=MAX_BATCH_EVENTS as i64).contains(n) =>
                {
                    s.batch_events = Some(*n as usize)
                }
                ("batch_events", _) => {
                    return Err(err(
                        key,
                        &format!("a whole number from 1 to {MAX_BATCH_EVENTS}"),
                    ))
                }
                ("timeout_ms", _) => return Err(err(key, "milliseconds above 0")),
                (
                    "endpoint" | "traces_endpoint" | "compression" | "user" | "host" | "headers"
                    | "content" | "enabled",
                    _,
                ) => return Err(err(key, "another type")),
                (other, _) => {
                    return Err(ConfigError {
                        origin: origin.to_string(),
                        message: format!("unknown setting export.otlp.{other}"),
                        syntax: false,
                    })
                }
            }
        }
        Ok(s)
    }
}

/// A base endpoint with the traces path appended (the specification's rule for
/// `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub fn traces_url(base: &str) -> String {
    let base = base.trim();
    if base.ends_with('/') {
        format!("{base}{TRACES_PATH}")
    } else {
        format!("{base}/{TRACES_PATH}")
    }
}

fn check_url(url: &str) -> Result<(), ConfigError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(ConfigError {
            origin: "export endpoint".to_string(),
            message: format!("{url:?}: expected an http:// or https:// URL"),
            syntax: false,
        })
    }
}

/// `OTEL_EXPORTER_OTLP_HEADERS`: `key=value` pairs separated by commas, values
/// percent-decoded (the W3C baggage format the specification names).
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("{pair:?}: expected key=value"))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("{pair:?}: empty header name"));
        }
        out.push((key.to_string(), percent_decode(value.trim())));
    }
    Ok(out)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn millis(text: &str) -> Option<Duration> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|ms| *ms > 0)
        .map(Duration::from_millis)
}

fn compression(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "gzip" => Some(true),
        "none" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn table(text: &str) -> toml::Table {
        section(text, "t").unwrap().unwrap()
    }

    #[test]
    fn defaults_without_file_or_environment() {
        let c = ExportConfig::from_parts(None, "t", &env_of(&[])).unwrap();
        assert_eq!(c.traces_endpoint, "http://localhost:4318/v1/traces");
        assert!(c.gzip);
        assert!(!c.content);
        assert!(!c.continuous);
        assert_eq!(c.user, None);
        assert_eq!(c.timeout, Duration::from_secs(10));
        assert_eq!(c.batch_events, DEFAULT_BATCH_EVENTS);
    }

    #[test]
    fn the_environment_overrides_the_file_and_the_signal_variable_the_generic_one() {
        let t = table(
            "[export.otlp]\nendpoint = \"http://file:4318\"\nheaders = { authorization = \"file\", x-a = \"1\" }\ncompression = \"gzip\"\n",
        );
        let c = ExportConfig::from_parts(
            Some(&t),
            "t",
            &env_of(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://env:4318/"),
                (
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "Authorization=Bearer%20abc, x-b=2",
                ),
                ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
                ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
            ]),
        )
        .unwrap();
        assert_eq!(c.traces_endpoint, "https://env:4318/v1/traces");
        assert_eq!(
            c.headers,
            vec![
                ("x-a".to_string(), "1".to_string()),
                ("Authorization".to_string(), "Bearer abc".to_string()),
                ("x-b".to_string(), "2".to_string()),
            ]
        );
        assert_eq!(c.timeout, Duration::from_millis(2500));
        assert!(!c.gzip);
        assert!(c.continuous);
        let c = ExportConfig::from_parts(
            Some(&t),
            "t",
            &env_of(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://env:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "https://traces/custom",
                ),
            ]),
        )
        .unwrap();
        assert_eq!(c.traces_endpoint, "https://traces/custom");
    }

    #[test]
    fn bad_settings_are_errors_that_name_their_origin() {
        let t = table("[export.otlp]\nbatch_events = 0\n");
        let e = ExportConfig::from_parts(Some(&t), "f.toml", &env_of(&[])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("f.toml: export.otlp.batch_events"),
            "{e}"
        );
        let t = table("[export.otlp]\nendpiont = \"x\"\n");
        let e = ExportConfig::from_parts(Some(&t), "f.toml", &env_of(&[])).unwrap_err();
        assert!(
            e.to_string()
                .contains("unknown setting export.otlp.endpiont"),
            "{e}"
        );
        let e = ExportConfig::from_parts(
            None,
            "f",
            &env_of(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "soon")]),
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with("OTEL_EXPORTER_OTLP_TIMEOUT"),
            "{e}"
        );
        let e = ExportConfig::from_parts(
            None,
            "f",
            &env_of(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("http:// or https://"), "{e}");
    }

    #[test]
    fn enabled_false_keeps_the_settings_for_the_one_shot_but_not_for_ingest() {
        let t = table("[export.otlp]\nenabled = false\ncontent = true\nuser = \"ana\"\n");
        let c = ExportConfig::from_parts(Some(&t), "t", &env_of(&[])).unwrap();
        assert!(!c.continuous);
        assert!(c.content);
        assert_eq!(c.user.as_deref(), Some("ana"));
    }

    #[test]
    fn headers_parse_and_decode() {
        assert_eq!(
            parse_headers("a=b%2Cc,d = e ").unwrap(),
            vec![("a".into(), "b,c".into()), ("d".into(), "e".into())]
        );
        assert!(parse_headers("novalue").is_err());
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }
}
