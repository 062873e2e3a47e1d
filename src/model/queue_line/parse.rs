//! Turning one queue line into an [`EventRow`], or the reason it cannot be one. No I/O.
//!
//! Accepted shapes: cmstore's v1 line (camelCase), ContextManager's older lines (no `id`,
//! arbitrary key order) and vstack-style records (snake_case, ISO `timestamp`, `model_used`).
//! The fast path deserializes straight into borrowed fields; anything it cannot take
//! (duplicate keys, odd types) goes through a `serde_json::Value` first, so every line that is
//! a JSON object becomes a row.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

use super::row::{
    EventRow, GATE_UNREADABLE, MISSING_SESSION_ID, SESSION_WITHOUT_ACTOR, TOOL_WITHOUT_NAME,
    UNKNOWN_HOOK_TYPE,
};
use super::HookType;

/// Why a line is not an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectReason {
    /// The bytes are not UTF-8.
    InvalidUtf8,
    /// Not JSON (cut, garbage, empty).
    InvalidJson,
    /// JSON, but not an object.
    NotAnObject,
    /// Over the line length limit.
    TooLong,
}

impl RejectReason {
    /// The `rejects.reason` value.
    pub fn as_str(self) -> &'static str {
        match self {
            RejectReason::InvalidUtf8 => "invalid_utf8",
            RejectReason::InvalidJson => "invalid_json",
            RejectReason::NotAnObject => "not_an_object",
            RejectReason::TooLong => "too_long",
        }
    }
}

/// A scalar of any JSON type; arrays count their elements, objects are skipped.
#[derive(Debug, Clone, PartialEq)]
enum Loose<'a> {
    Str(Cow<'a, str>),
    Int(i64),
    Float(f64),
    Bool(bool),
    Seq(i64),
    Other,
}

impl<'de: 'a, 'a> Deserialize<'de> for Loose<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Loose<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Loose::Str(Cow::Owned(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Loose::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(i64::try_from(v).map_or(Loose::Float(v as f64), Loose::Int))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(Loose::Float(v))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Loose::Bool(v))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Loose::Other)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut n = 0;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(Loose::Seq(n))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Loose::Other)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<'a> Loose<'a> {
    fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Loose::Str(s) if !s.is_empty() => Some(s),
            _ => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match self {
            Loose::Int(v) => Some(*v),
            Loose::Float(v) if v.is_finite() => Some(*v as i64),
            Loose::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn as_bool(&self) -> Option<bool> {
        match self {
            Loose::Bool(b) => Some(*b),
            Loose::Int(v) => Some(*v != 0),
            Loose::Str(s) => match s.as_ref() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
            _ => None,
        }
    }
}

/// The fields ingest reads, in both camelCase (cmstore, ContextManager) and snake_case
/// (vstack, raw payloads). Separate fields instead of serde aliases: a line carrying both
/// spellings is not an error.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Raw<'a> {
    #[serde(borrow, rename = "id")]
    id: Option<Loose<'a>>,
    #[serde(borrow, rename = "hookType")]
    hook_type: Option<Loose<'a>>,
    #[serde(borrow, rename = "hook_type")]
    hook_type_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "hook_event_name")]
    hook_event_name: Option<Loose<'a>>,
    #[serde(borrow, rename = "risk")]
    risk: Option<Loose<'a>>,
    #[serde(borrow, rename = "decision")]
    decision: Option<Loose<'a>>,
    #[serde(borrow, rename = "permissionMode")]
    permission_mode: Option<Loose<'a>>,
    #[serde(borrow, rename = "timestamp")]
    timestamp: Option<Loose<'a>>,
    #[serde(borrow, rename = "ts")]
    ts: Option<Loose<'a>>,
    #[serde(borrow, rename = "event")]
    event: Option<Loose<'a>>,
    #[serde(borrow, rename = "agent")]
    agent: Option<Loose<'a>>,
    #[serde(borrow, rename = "participant")]
    participant: Option<Loose<'a>>,
    #[serde(borrow, rename = "sessionId")]
    session_id: Option<Loose<'a>>,
    #[serde(borrow, rename = "session_id")]
    session_id_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "toolName")]
    tool_name: Option<Loose<'a>>,
    #[serde(borrow, rename = "tool_name")]
    tool_name_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "toolCallId")]
    tool_call_id: Option<Loose<'a>>,
    #[serde(borrow, rename = "tool_call_id")]
    tool_call_id_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "turnId")]
    turn_id: Option<Loose<'a>>,
    #[serde(borrow, rename = "turn_id")]
    turn_id_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "model")]
    model: Option<Loose<'a>>,
    #[serde(borrow, rename = "model_used")]
    model_used: Option<Loose<'a>>,
    #[serde(borrow, rename = "cwd")]
    cwd: Option<Loose<'a>>,
    #[serde(borrow, rename = "origin")]
    origin: Option<Loose<'a>>,
    #[serde(borrow, rename = "producer")]
    producer: Option<Loose<'a>>,
    #[serde(borrow, rename = "exitCode")]
    exit_code: Option<Loose<'a>>,
    #[serde(borrow, rename = "toolFailed")]
    tool_failed: Option<Loose<'a>>,
    /// A string (lines before the object form) or `{message, name, stack}`.
    #[serde(borrow, rename = "error")]
    error: Option<ErrorField<'a>>,
    #[serde(borrow, rename = "actorName")]
    actor_name: Option<Loose<'a>>,
    #[serde(borrow, rename = "actor_name")]
    actor_name_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "actorType")]
    actor_type: Option<Loose<'a>>,
    #[serde(borrow, rename = "actor_type")]
    actor_type_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "delegatedAgent")]
    delegated_agent: Option<Loose<'a>>,
    #[serde(borrow, rename = "delegated_agent_name")]
    delegated_agent_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "synthetic")]
    synthetic: Option<Loose<'a>>,
    #[serde(borrow, rename = "turnTs")]
    turn_ts: Option<Loose<'a>>,
    #[serde(borrow, rename = "prompt")]
    prompt: Option<Loose<'a>>,
    #[serde(borrow, rename = "response")]
    response: Option<Loose<'a>>,
    #[serde(borrow, rename = "thinking")]
    thinking: Option<Loose<'a>>,
    #[serde(borrow, rename = "turnPending")]
    turn_pending: Option<Loose<'a>>,
    #[serde(borrow, rename = "turnOutcome")]
    turn_outcome: Option<Loose<'a>>,
    #[serde(borrow, rename = "hookFeedback")]
    hook_feedback: Option<Loose<'a>>,
    #[serde(borrow, rename = "stopHookActive")]
    stop_hook_active: Option<Loose<'a>>,
    #[serde(borrow, rename = "toolResultType")]
    tool_result_type: Option<Loose<'a>>,
    #[serde(borrow, rename = "durationMs")]
    duration_ms: Option<Loose<'a>>,
    #[serde(borrow, rename = "sizeBytes")]
    size_bytes: Option<Loose<'a>>,
    #[serde(borrow, rename = "size_bytes")]
    size_bytes_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "estimatedTokens")]
    estimated_tokens: Option<Loose<'a>>,
    #[serde(borrow, rename = "estimated_tokens")]
    estimated_tokens_s: Option<Loose<'a>>,
    #[serde(borrow, rename = "toolCalls")]
    tool_calls: Option<Loose<'a>>,
    /// Raw JSON text, not parsed: read only to tell apart tool calls without an id.
    #[serde(borrow, rename = "toolInput")]
    tool_input: Option<&'a RawValue>,
    #[serde(borrow, rename = "tool_input")]
    tool_input_s: Option<&'a RawValue>,
    /// Raw JSON text: parsed only by the store, into usage rows.
    #[serde(borrow, rename = "usage")]
    usage: Option<&'a RawValue>,
}

/// A line's `error`: its text, from the string form (cmstore before 0.4, raw payloads) or from
/// the object form's `message` (cmstore since, the extension's own `{message, name, stack}`).
#[derive(Debug, Clone, PartialEq)]
struct ErrorField<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for ErrorField<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = ErrorField<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an error string or object")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(ErrorField(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(ErrorField(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut message = None;
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if key == "message" && message.is_none() {
                        message = map.next_value::<Loose<'de>>()?.into_str();
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(ErrorField(message))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ErrorField(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(ErrorField(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(ErrorField(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(ErrorField(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(ErrorField(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(ErrorField(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The producer of a line: its `producer`, else cmstore for lines older cmstore versions wrote
/// (they named cmstore in `origin`).
fn producer<'a>(
    producer: Option<Loose<'a>>,
    origin: Option<&Cow<'a, str>>,
) -> Option<Cow<'a, str>> {
    producer.and_then(Loose::into_str).or_else(|| {
        origin
            .filter(|o| o.as_ref() == super::PRODUCER)
            .map(|_| Cow::Borrowed(super::PRODUCER))
    })
}

fn pick<'a>(first: Option<Loose<'a>>, second: Option<Loose<'a>>) -> Option<Cow<'a, str>> {
    first
        .and_then(Loose::into_str)
        .or_else(|| second.and_then(Loose::into_str))
}

fn pick_i64(first: &Option<Loose<'_>>, second: &Option<Loose<'_>>) -> Option<i64> {
    first
        .as_ref()
        .and_then(Loose::as_i64)
        .or_else(|| second.as_ref().and_then(Loose::as_i64))
}

/// Parses one line (newline excluded) read at ingest time `now_ms`.
pub fn parse_line(bytes: &[u8], now_ms: i64) -> Result<EventRow<'_>, RejectReason> {
    let text = std::str::from_utf8(bytes).map_err(|_| RejectReason::InvalidUtf8)?;
    let text = text.strip_suffix('\r').unwrap_or(text);
    // A byte-order mark, as Windows PowerShell 5.1 writes at the start of a file it creates
    // with `-Encoding UTF8`: never part of the JSON.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let starts_object = text.trim_start().starts_with('{');
    // serde would also take a JSON array as a struct, so only objects try the fast path.
    let fast = if starts_object {
        serde_json::from_str::<Raw<'_>>(text).ok()
    } else {
        None
    };
    let raw = match fast {
        Some(raw) => raw,
        None => return slow_path(text, now_ms),
    };
    Ok(build(raw, text, now_ms))
}

fn slow_path(text: &str, now_ms: i64) -> Result<EventRow<'_>, RejectReason> {
    let mut value: serde_json::Value =
        serde_json::from_str(text).map_err(|_| RejectReason::InvalidJson)?;
    let Some(fields) = value.as_object_mut() else {
        return Err(RejectReason::NotAnObject);
    };
    // A raw value cannot be borrowed from a `Value`: the tool input is taken out and written
    // back as JSON text, as a writer of compact JSON (cmstore) wrote it.
    let input = ["toolInput", "tool_input"]
        .iter()
        .find_map(|k| fields.remove(*k).filter(|v| !v.is_null()))
        .map(|v| v.to_string());
    fields.remove("tool_input");
    let usage = fields
        .remove("usage")
        .filter(|v| !v.is_null())
        .map(|v| v.to_string());
    // Every field of `Raw` takes any JSON type, so this only fails on a broken invariant;
    // the line is still an object and still becomes a row.
    let raw = Raw::deserialize(&value).unwrap_or_default();
    let mut row = detach(build(raw, text, now_ms), text);
    row.tool_input = input.map(Cow::Owned);
    row.usage = usage.map(Cow::Owned);
    Ok(row)
}

/// Rebinds a row built from a temporary `Value` to the line itself.
fn detach<'a>(row: EventRow<'_>, text: &'a str) -> EventRow<'a> {
    fn own(c: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
        c.map(|c| Cow::Owned(c.into_owned()))
    }
    EventRow {
        id: Cow::Owned(row.id.into_owned()),
        ts: row.ts,
        dated: row.dated,
        hook_type: own(row.hook_type),
        kind: row.kind,
        event: own(row.event),
        agent: own(row.agent),
        session_id: own(row.session_id),
        tool_name: own(row.tool_name),
        tool_call_id: own(row.tool_call_id),
        turn_id: own(row.turn_id),
        model: own(row.model),
        cwd: own(row.cwd),
        origin: own(row.origin),
        producer: own(row.producer),
        exit_code: row.exit_code,
        tool_failed: row.tool_failed,
        error: own(row.error),
        actor_name: own(row.actor_name),
        actor_type: own(row.actor_type),
        delegated_agent: own(row.delegated_agent),
        synthetic: row.synthetic,
        turn_ts: row.turn_ts,
        prompt: own(row.prompt),
        response: own(row.response),
        thinking: own(row.thinking),
        turn_pending: row.turn_pending,
        turn_outcome: own(row.turn_outcome),
        hook_feedback: own(row.hook_feedback),
        stop_hook_active: row.stop_hook_active,
        tool_result_type: own(row.tool_result_type),
        risk: own(row.risk),
        decision: own(row.decision),
        permission_mode: own(row.permission_mode),
        duration_ms: row.duration_ms,
        size_bytes: row.size_bytes,
        estimated_tokens: row.estimated_tokens,
        tool_call_count: row.tool_call_count,
        tool_input: own(row.tool_input),
        usage: own(row.usage),
        entry: text,
        unknown: row.unknown,
    }
}

fn build<'a>(raw: Raw<'a>, text: &'a str, now_ms: i64) -> EventRow<'a> {
    let dated = raw
        .timestamp
        .as_ref()
        .or(raw.ts.as_ref())
        .and_then(timestamp_ms);
    let ts = dated.unwrap_or(now_ms);
    let event = raw.event.and_then(Loose::into_str);
    let hook_type = pick(raw.hook_type, raw.hook_type_s).or_else(|| {
        // vstack records and raw payloads name the event instead; map it when it is canonical.
        let name = event.as_deref()?;
        Some(match HookType::from_event_name(name) {
            Some(t) => Cow::Borrowed(t.as_str()),
            None => Cow::Owned(name.to_string()),
        })
    });
    let hook_type = hook_type.or_else(|| raw.hook_event_name.and_then(Loose::into_str));
    let kind = hook_type.as_deref().and_then(HookType::from_canonical);
    let origin = raw.origin.and_then(Loose::into_str);
    let session_id = pick(raw.session_id, raw.session_id_s);
    let tool_name = pick(raw.tool_name, raw.tool_name_s);
    let actor_name = pick(raw.actor_name, raw.actor_name_s);
    let actor_type = pick(raw.actor_type, raw.actor_type_s);

    let mut unknown = [None; 5];
    if kind.is_none() {
        unknown[0] = Some(UNKNOWN_HOOK_TYPE);
    }
    if session_id.is_none() {
        unknown[1] = Some(MISSING_SESSION_ID);
    }
    let tool_event = matches!(
        kind,
        Some(HookType::PreToolUse | HookType::PostToolUse | HookType::PostToolUseFailure)
    );
    if tool_event && tool_name.is_none() {
        unknown[2] = Some(TOOL_WITHOUT_NAME);
    }
    let session_event = matches!(kind, Some(HookType::SessionStart | HookType::SessionEnd));
    if session_event && actor_name.is_none() && actor_type.is_none() {
        unknown[3] = Some(SESSION_WITHOUT_ACTOR);
    }
    let risk = raw.risk.and_then(Loose::into_str);
    if risk.as_deref() == Some(crate::model::safety::UNREADABLE) {
        unknown[4] = Some(GATE_UNREADABLE);
    }

    let id = match raw.id.and_then(Loose::into_str) {
        Some(id) => id,
        None => Cow::Owned(line_key(text.as_bytes())),
    };
    EventRow {
        id,
        ts,
        dated: dated.is_some(),
        hook_type,
        kind,
        event,
        agent: pick(raw.agent, raw.participant),
        session_id,
        tool_name,
        tool_call_id: pick(raw.tool_call_id, raw.tool_call_id_s),
        turn_id: pick(raw.turn_id, raw.turn_id_s),
        model: pick(raw.model, raw.model_used),
        cwd: raw.cwd.and_then(Loose::into_str),
        producer: producer(raw.producer, origin.as_ref()),
        origin,
        exit_code: raw.exit_code.as_ref().and_then(Loose::as_i64),
        tool_failed: raw.tool_failed.as_ref().and_then(Loose::as_bool),
        error: raw.error.and_then(|e| e.0),
        actor_name,
        actor_type,
        delegated_agent: pick(raw.delegated_agent, raw.delegated_agent_s),
        synthetic: raw.synthetic.as_ref().and_then(Loose::as_bool),
        turn_ts: raw.turn_ts.as_ref().and_then(timestamp_ms),
        prompt: raw.prompt.and_then(Loose::into_str),
        response: raw.response.and_then(Loose::into_str),
        thinking: raw.thinking.and_then(Loose::into_str),
        turn_outcome: raw.turn_outcome.and_then(Loose::into_str),
        hook_feedback: raw.hook_feedback.and_then(Loose::into_str),
        stop_hook_active: raw
            .stop_hook_active
            .as_ref()
            .and_then(Loose::as_bool)
            .unwrap_or(false),
        turn_pending: raw
            .turn_pending
            .as_ref()
            .and_then(Loose::as_bool)
            .unwrap_or(false),
        tool_result_type: raw.tool_result_type.and_then(Loose::into_str),
        risk,
        decision: raw.decision.and_then(Loose::into_str),
        permission_mode: raw.permission_mode.and_then(Loose::into_str),
        duration_ms: raw.duration_ms.as_ref().and_then(Loose::as_i64),
        size_bytes: pick_i64(&raw.size_bytes, &raw.size_bytes_s),
        estimated_tokens: pick_i64(&raw.estimated_tokens, &raw.estimated_tokens_s),
        tool_call_count: match raw.tool_calls {
            Some(Loose::Seq(n)) => Some(n),
            _ => None,
        },
        tool_input: raw
            .tool_input
            .or(raw.tool_input_s)
            .map(|v| Cow::Borrowed(v.get()))
            .filter(|v| v != "null"),
        usage: raw
            .usage
            .map(|v| Cow::Borrowed(v.get()))
            .filter(|v| v != "null"),
        entry: text,
        unknown,
    }
}

/// Epoch milliseconds from a numeric `timestamp` (taken as ms) or an ISO 8601 string.
fn timestamp_ms(v: &Loose<'_>) -> Option<i64> {
    match v {
        Loose::Int(ms) => Some(*ms),
        Loose::Float(ms) if ms.is_finite() => Some(*ms as i64),
        Loose::Str(s) => {
            let s = s.trim();
            if let Ok(ms) = s.parse::<i64>() {
                return Some(ms);
            }
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                return Some(t.timestamp_millis());
            }
            // ISO without an offset (PowerShell's local `o` format minus zone): read as UTC.
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|t| t.and_utc().timestamp_millis())
        }
        _ => None,
    }
}

/// The dedup key of a line without an `id`: a hash of its bytes.
pub fn line_key(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// What a rejected line is, for its key: the line's bytes, or, for a line too long to be read
/// whole, its first bytes and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectedBytes<'a> {
    /// The whole line, newline excluded.
    Whole(&'a [u8]),
    /// The first bytes of a line of `length` bytes.
    Cut {
        /// Its first bytes.
        prefix: &'a [u8],
        /// Its length, newline excluded.
        length: u64,
    },
}

/// The anchor of a rejected line at the start of its file, before any line that became an event.
pub const FILE_START: &str = "^";

/// True when `key` (a [`reject_key`]) is that of a rejected line before any event line of its
/// file: no line's time covers it.
pub fn at_file_start(key: &str) -> bool {
    key.strip_prefix(FILE_START)
        .is_some_and(|rest| rest.starts_with('#'))
}

/// The dedup key of a rejected line (`rejects.line_key`): where it is and what it is.
///
/// `anchor` is the `id` of the closest line before it that became an event ([`FILE_START`] when
/// there is none), `gap` how many lines after that one it comes (1: right after), and then a
/// hash of its bytes: `<anchor>#<gap>:<hex>`, or `<anchor>#<gap>:<hex>/<length>` for a line too
/// long to be read whole (the hash is of its first bytes). A file read again from its start
/// (replaced, rotated back, remounted, compacted) gives each rejected line the key it had, as
/// long as the line before it that is an event is still there; two equal garbage lines in two
/// places get two keys.
pub fn reject_key(anchor: &str, gap: u64, bytes: RejectedBytes<'_>) -> String {
    match bytes {
        RejectedBytes::Whole(line) => format!("{anchor}#{gap}:{}", hex(&Sha256::digest(line))),
        RejectedBytes::Cut { prefix, length } => {
            format!("{anchor}#{gap}:{}/{length}", hex(&Sha256::digest(prefix)))
        }
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::queue_line::QueueEntry;

    #[test]
    fn a_byte_order_mark_before_a_line_is_not_part_of_it() {
        let mut e = QueueEntry::new("Stop", 1_700_000_000_123);
        e.session_id = Some("s1".into());
        let line = e.to_line();
        let marked = format!("\u{feff}{line}\r");
        let row = parse_line(marked.as_bytes(), 5).unwrap();
        assert_eq!(row.id, e.id.as_str());
        assert_eq!(row.session_id.as_deref(), Some("s1"));
        assert_eq!(row.entry, line);
        // A line the slow path reads (no `id`, another producer's spelling) too.
        let other = "\u{feff}{\"hook_event_name\":\"Stop\",\"session_id\":\"s2\"}";
        let row = parse_line(other.as_bytes(), 5).unwrap();
        assert_eq!(row.session_id.as_deref(), Some("s2"));
    }

    #[test]
    fn a_v1_line_maps_every_column() {
        let mut e = QueueEntry::new("PostToolUse", 1_700_000_000_123);
        e.session_id = Some("s1".into());
        e.tool_name = Some("bash".into());
        e.tool_call_id = Some("tc1".into());
        e.agent = Some("claude".into());
        e.model = Some("opus".into());
        e.size_bytes = 10;
        e.estimated_tokens = 3;
        e.duration_ms = Some(42);
        let line = e.to_line();
        let row = parse_line(line.as_bytes(), 5).unwrap();
        assert_eq!(row.id, e.id.as_str());
        assert_eq!(row.ts, 1_700_000_000_123);
        assert!(row.dated);
        assert_eq!(row.kind, Some(HookType::PostToolUse));
        assert_eq!(row.session_id.as_deref(), Some("s1"));
        assert_eq!(row.tool_name.as_deref(), Some("bash"));
        assert_eq!(row.tool_call_id.as_deref(), Some("tc1"));
        assert_eq!(row.model.as_deref(), Some("opus"));
        assert_eq!(row.size_bytes, Some(10));
        assert_eq!(row.estimated_tokens, Some(3));
        assert_eq!(row.duration_ms, Some(42));
        assert_eq!(row.entry, line);
        assert_eq!(row.unknown, [None; 5]);
        assert!(matches!(row.id, Cow::Borrowed(_)));
    }

    #[test]
    fn a_line_without_a_time_is_dated_by_ingest_and_says_so() {
        let row = parse_line(br#"{"hookType":"Stop","id":"x"}"#, 77).unwrap();
        assert_eq!((row.ts, row.dated), (77, false));
        let row = parse_line(br#"{"hookType":"Stop","ts":5}"#, 77).unwrap();
        assert_eq!((row.ts, row.dated), (5, true));
        let row = parse_line(br#"{"timestamp":"soon"}"#, 77).unwrap();
        assert_eq!(
            (row.ts, row.dated),
            (77, false),
            "an unreadable time is no time"
        );
    }

    #[test]
    fn a_rejected_line_is_keyed_by_its_place_and_its_bytes() {
        let key = reject_key("e1", 2, RejectedBytes::Whole(b"garbage"));
        assert!(key.starts_with("e1#2:"), "{key}");
        assert_eq!(key.len(), "e1#2:".len() + 64);
        assert_ne!(key, reject_key("e1", 3, RejectedBytes::Whole(b"garbage")));
        assert_ne!(key, reject_key("e2", 2, RejectedBytes::Whole(b"garbage")));
        assert_ne!(key, reject_key("e1", 2, RejectedBytes::Whole(b"garbagf")));
        let cut = reject_key(
            FILE_START,
            1,
            RejectedBytes::Cut {
                prefix: b"xx",
                length: 9000,
            },
        );
        assert!(cut.starts_with("^#1:") && cut.ends_with("/9000"), "{cut}");
    }

    #[test]
    fn legacy_lines_get_a_hash_key_and_iso_timestamps_parse() {
        let line = br#"{"timestamp":"2026-01-02T03:04:05Z","event":"preToolUse","session_id":"s","tool_name":"bash","model_used":"gpt"}"#;
        let row = parse_line(line, 0).unwrap();
        assert!(row.id.starts_with("sha256:"));
        assert_eq!(row.id.len(), 7 + 64);
        assert_eq!(row.ts, 1_767_323_045_000);
        assert_eq!(row.hook_type.as_deref(), Some("PreToolUse"));
        assert_eq!(row.model.as_deref(), Some("gpt"));
        assert_eq!(row.unknown, [None; 5]);
        let ps = br#"{"timestamp":"2026-01-02T03:04:05.1234567+00:00","hookType":"Stop"}"#;
        assert_eq!(parse_line(ps, 0).unwrap().ts, 1_767_323_045_123);
    }

    #[test]
    fn unknowns_are_flagged() {
        let row = parse_line(br#"{"hookType":"WriteIntent","timestamp":1}"#, 0).unwrap();
        assert_eq!(
            row.unknown,
            [
                Some(UNKNOWN_HOOK_TYPE),
                Some(MISSING_SESSION_ID),
                None,
                None,
                None
            ]
        );
        let row = parse_line(br#"{"hookType":"PreToolUse","sessionId":"s"}"#, 9).unwrap();
        assert_eq!(
            row.unknown,
            [None, None, Some(TOOL_WITHOUT_NAME), None, None]
        );
        assert_eq!(row.ts, 9);
        let row = parse_line(br#"{"hookType":"SessionStart","sessionId":"s"}"#, 0).unwrap();
        assert_eq!(
            row.unknown,
            [None, None, None, Some(SESSION_WITHOUT_ACTOR), None]
        );
        let unreadable = br#"{"hookType":"PreToolUse","sessionId":"s","risk":"unreadable"}"#;
        let row = parse_line(unreadable, 0).unwrap();
        assert_eq!(
            row.unknown,
            [
                None,
                None,
                Some(TOOL_WITHOUT_NAME),
                None,
                Some(GATE_UNREADABLE)
            ]
        );
    }

    #[test]
    fn odd_objects_still_become_rows() {
        let dup = br#"{"hookType":"Stop","hookType":"Stop","sessionId":5,"toolCalls":[1,2,3]}"#;
        let row = parse_line(dup, 0).unwrap();
        assert_eq!(row.kind, Some(HookType::Stop));
        assert_eq!(row.session_id, None);
        let row = parse_line(br#"{"toolCalls":[{"a":1},{}],"synthetic":true}"#, 0).unwrap();
        assert_eq!(row.tool_call_count, Some(2));
        assert_eq!(row.synthetic, Some(true));
        assert!(parse_line(b"  {}\r", 0).is_ok());
    }

    #[test]
    fn the_tool_input_is_kept_as_its_json_text() {
        let input = |line: &str| {
            parse_line(line.as_bytes(), 0)
                .unwrap()
                .tool_input
                .map(Cow::into_owned)
        };
        let a = r#""{\"path\":\"/a\"}""#;
        assert_eq!(
            input(r#"{"hookType":"PreToolUse","toolInput":"{\"path\":\"/a\"}"}"#).as_deref(),
            Some(a)
        );
        // A duplicate key sends the line down the slow path: the same text.
        assert_eq!(
            input(r#"{"hookType":"Stop","hookType":"Stop","toolInput":"{\"path\":\"/a\"}"}"#)
                .as_deref(),
            Some(a)
        );
        assert_eq!(
            input(r#"{"tool_input":{"path":"/a"}}"#).as_deref(),
            Some(r#"{"path":"/a"}"#)
        );
        assert_eq!(input(r#"{"toolInput":null}"#), None);
        assert_eq!(input(r#"{"hookType":"Stop"}"#), None);
    }

    #[test]
    fn errors_of_both_forms_and_producers_old_and_new_are_read() {
        let old = br#"{"hookType":"PostToolUseFailure","origin":"cmstore","error":"Exit code 3"}"#;
        let row = parse_line(old, 0).unwrap();
        assert_eq!(row.error.as_deref(), Some("Exit code 3"));
        assert_eq!(
            row.producer.as_deref(),
            Some("cmstore"),
            "an older cmstore line"
        );
        let new = br#"{"hookType":"PostToolUseFailure","origin":"claude-code-plugin","producer":"cmstore","error":{"name":"E","message":"Exit code 3","stack":null}}"#;
        let row = parse_line(new, 0).unwrap();
        assert_eq!(row.error.as_deref(), Some("Exit code 3"));
        assert_eq!(row.origin.as_deref(), Some("claude-code-plugin"));
        assert_eq!(row.producer.as_deref(), Some("cmstore"));
        let ext =
            br#"{"hookType":"ErrorOccurred","origin":"copilot-cli-plugin","error":{"name":"E"}}"#;
        let row = parse_line(ext, 0).unwrap();
        assert_eq!((row.error, row.producer), (None, None));
        let dup = br#"{"hookType":"Stop","hookType":"Stop","error":{"message":"m"},"producer":"cmstore"}"#;
        let row = parse_line(dup, 0).unwrap();
        assert_eq!(row.error.as_deref(), Some("m"), "the slow path too");
    }

    #[test]
    fn a_post_tool_use_with_a_failing_exit_code_reports_a_failure() {
        fn row(line: &str) -> EventRow<'_> {
            parse_line(line.as_bytes(), 0).unwrap()
        }
        assert!(row(r#"{"hookType":"PostToolUse","exitCode":3}"#).reports_tool_failure());
        assert!(row(r#"{"hookType":"PostToolUse","toolFailed":true}"#).reports_tool_failure());
        assert!(!row(r#"{"hookType":"PostToolUse","exitCode":0}"#).reports_tool_failure());
        assert!(!row(r#"{"hookType":"PreToolUse","exitCode":3}"#).reports_tool_failure());
        assert!(row(r#"{"hookType":"PostToolUseFailure"}"#).reports_tool_failure());
    }

    #[test]
    fn rejects_say_why() {
        assert_eq!(parse_line(b"{nope", 0), Err(RejectReason::InvalidJson));
        assert_eq!(parse_line(b"", 0), Err(RejectReason::InvalidJson));
        assert_eq!(parse_line(b"[1,2]", 0), Err(RejectReason::NotAnObject));
        assert_eq!(parse_line(b"42", 0), Err(RejectReason::NotAnObject));
        assert_eq!(
            parse_line(b"{\"a\":\"\xff\"}", 0),
            Err(RejectReason::InvalidUtf8)
        );
    }
}
