//! Events as OpenTelemetry spans, after the GenAI semantic conventions (semantic-conventions
//! v1.41.0, development status; docs/teams.md): a turn or a subagent is an `invoke_agent`
//! span, a tool call an `execute_tool` span, the session `gen_ai.conversation.id`. Pure: the
//! store reading that finds each span's turn and gate decision is in `source.rs`.
//!
//! Ids are derived from what a span stands for, never random: a turn's span id from its
//! prompt's event id (else from its session and turn key), a tool call's from its session and
//! call id (else its event id), a subagent's from its event id. A resent batch carries the same
//! trace and span ids, so a collector or the query behind it can recognise (and drop) the
//! repeat; distinct turns and calls never share one.

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use sha2::{Digest, Sha256};

use crate::model::redact::Redactor;

/// The semantic conventions version the attributes follow (the span's schema URL).
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";

/// One stored event with what a span needs of it (a row of `events`, some fields read from
/// its line).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventRecord {
    /// `events.seq`: the export cursor's unit.
    pub seq: i64,
    /// The event id (the queue line's `id`).
    pub id: String,
    /// Epoch ms.
    pub ts: i64,
    pub hook_type: Option<String>,
    pub agent: Option<String>,
    pub session_id: Option<String>,
    pub tool_name: Option<String>,
    pub tool_call_id: Option<String>,
    pub turn_id: Option<String>,
    pub model: Option<String>,
    pub delegated_agent: Option<String>,
    pub actor_name: Option<String>,
    pub duration_ms: Option<i64>,
    pub estimated_tokens: Option<i64>,
    pub prompt: Option<String>,
    pub response: Option<String>,
    pub tool_input: Option<String>,
    pub tool_response: Option<String>,
    /// The line's `toolFailed`: a PostToolUse whose result says it failed.
    pub tool_failed: bool,
    /// The line's `error.message`.
    pub error: Option<String>,
    /// The safety gate's finding and decision on this event's line (PreToolUse).
    pub risk: Option<String>,
    pub decision: Option<String>,
    /// A Stop harvested from the transcript (`synthetic`), not fired by the agent.
    pub synthetic: bool,
    /// A harvested turn's own time (`turnTs`, epoch ms), apart from the hook's.
    pub turn_ts: Option<i64>,
    /// A Stop whose turn a later line records (`turnPending`): it stands for no turn.
    pub turn_pending: bool,
    /// How the turn ended when not by an answer (`turnOutcome`: `interrupted`, `failed`).
    pub turn_outcome: Option<String>,
}

impl EventRecord {
    /// When the turn a turn event stands for ended: a harvested turn's own time, else the
    /// event's.
    pub fn turn_end(&self) -> i64 {
        match self.turn_ts {
            Some(ts) if self.synthetic => ts,
            _ => self.ts,
        }
    }

    /// How its turn ended, when not by an answer.
    fn outcome(&self) -> Option<&str> {
        match self.hook_type.as_deref() {
            Some("Interrupt") => Some("interrupted"),
            Some("StopFailure") => Some("failed"),
            _ => self.turn_outcome.as_deref(),
        }
    }
}

/// What a span takes from other events: found by the store reader, deterministically (the
/// same for a resend).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Links {
    /// The prompt of the turn: for a tool call or a subagent, the session's latest
    /// UserPromptSubmit before it (its parent); for a turn event, the turn's own prompt
    /// (`None` when no prompt event began it).
    pub turn: Option<TurnStart>,
    /// For a [`Kind::Unanswered`] event: the prompt whose turn it showed was never answered
    /// (the store made that turn `interrupted`).
    pub unanswered: Option<TurnStart>,
    /// For a SubagentStop: the time of the session's latest SubagentStart before it.
    pub subagent_start: Option<i64>,
    /// For a tool call: the gate's risk and decision on its PreToolUse.
    pub gate: Option<(Option<String>, Option<String>)>,
    /// For a tool call: the time of its PreToolUse (its start when the agent reports no
    /// duration, as the store times it).
    pub call_start: Option<i64>,
    /// Token usage of the turn, when the store has it.
    pub usage: Option<Usage>,
}

/// The UserPromptSubmit that started a turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnStart {
    /// Its event id: the turn span's id is derived from it.
    pub event_id: String,
    /// Epoch ms: the turn span's start.
    pub ts: i64,
    /// The prompt, for a Stop whose line has none.
    pub prompt: Option<String>,
    /// Its event's `seq`.
    pub seq: i64,
}

/// Token usage as Anthropic reports it: `input` excludes the cached tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input: i64,
    pub output: i64,
    pub cache_read: i64,
    pub cache_creation: i64,
}

/// The spans an event becomes, if any: events that are neither the end of a tool call, a
/// denied tool call, the end of a turn nor of a subagent become none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Tool,
    Denied,
    /// The end of a turn: a Stop (fired, or harvested from the transcript), a StopFailure, a
    /// Codex Interrupt. A Stop whose turn a later line records stands for none.
    Turn,
    Subagent,
    /// A Gemini CLI prompt or session end, which may show that the session's previous prompt
    /// was never answered: that turn's span, when the store made it `interrupted`.
    Unanswered,
}

impl Kind {
    /// The span kind of an event, or `None` when it becomes no span.
    pub fn of(event: &EventRecord) -> Option<Kind> {
        match event.hook_type.as_deref()? {
            "PostToolUse" | "PostToolUseFailure" | "PermissionDenied" => Some(Kind::Tool),
            "PreToolUse" if event.decision.as_deref() == Some("deny") => Some(Kind::Denied),
            "Stop" if event.turn_pending => None,
            "Stop" | "StopFailure" | "Interrupt" => Some(Kind::Turn),
            "SubagentStop" => Some(Kind::Subagent),
            "UserPromptSubmit" | "SessionEnd" if event.agent.as_deref() == Some("gemini") => {
                Some(Kind::Unanswered)
            }
            _ => None,
        }
    }
}

/// What goes into every span besides the event: the content switch and its redaction.
pub struct Mapper<'a> {
    /// Prompts, responses and tool I/O leave the machine (after redaction).
    pub content: bool,
    /// The redaction applied to that content.
    pub redactor: &'a Redactor,
}

/// The resource every span is sent under: `service.name = cmstore`, the host, the user only
/// when configured.
pub fn resource(host: Option<&str>, user: Option<&str>) -> Resource {
    let mut attributes = vec![
        kv("service.name", "cmstore"),
        kv("service.version", env!("CARGO_PKG_VERSION")),
    ];
    if let Some(host) = host {
        attributes.push(kv("host.name", host));
    }
    if let Some(user) = user {
        attributes.push(kv("user.id", user));
    }
    Resource {
        attributes,
        ..Resource::default()
    }
}

/// One request carrying `spans` under `resource`.
pub fn request(resource: Resource, spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "cmstore".to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..InstrumentationScope::default()
                }),
                spans,
                schema_url: SCHEMA_URL.to_string(),
            }],
            schema_url: SCHEMA_URL.to_string(),
        }],
    }
}

/// The 16-byte trace id of a session (every span of a session is one trace); an event
/// without a session is a trace of its own.
pub fn trace_id(event: &EventRecord) -> Vec<u8> {
    match &event.session_id {
        Some(session) => digest("trace:session:", session, 16),
        None => digest("trace:event:", &event.id, 16),
    }
}

/// The 8-byte span id of the span an event id names.
pub fn span_id(event_id: &str) -> Vec<u8> {
    digest("span:", event_id, 8)
}

/// The span id of a turn no prompt event began: its session and turn key (the turn id,
/// else its event's id), as the store keys its `turns` row.
pub fn turn_span_id(event: &EventRecord) -> Vec<u8> {
    let key = event.turn_id.as_deref().unwrap_or(&event.id);
    digest("turn:", &keyed(event.session_id.as_deref(), key), 8)
}

/// The span id of a tool call: its session and call id, so the halves and reports of one call
/// (a denied PreToolUse, then the agent's refusal) are one span; its event's id without one.
pub fn call_span_id(event: &EventRecord) -> Vec<u8> {
    match event.tool_call_id.as_deref() {
        Some(call) => digest("call:", &keyed(event.session_id.as_deref(), call), 8),
        None => span_id(&event.id),
    }
}

/// `session` and `key` as one text no other pair makes (the session's length first).
fn keyed(session: Option<&str>, key: &str) -> String {
    let session = session.unwrap_or("");
    format!("{}:{session}:{key}", session.len())
}

fn digest(tag: &str, text: &str, len: usize) -> Vec<u8> {
    let mut h = Sha256::new();
    h.update(tag.as_bytes());
    h.update(text.as_bytes());
    let mut id = h.finalize()[..len].to_vec();
    // All zeroes is the invalid id; a digest that starts so is not worth a branch elsewhere.
    if id.iter().all(|b| *b == 0) {
        id[len - 1] = 1;
    }
    id
}

impl Mapper<'_> {
    /// The span `event` becomes, or `None`.
    pub fn span(&self, event: &EventRecord, links: &Links) -> Option<Span> {
        let kind = Kind::of(event)?;
        let (mut span, end) = match kind {
            Kind::Tool | Kind::Denied => (self.tool_span(event, kind, links), event.ts),
            Kind::Turn => (self.agent_span(event, kind, links), event.turn_end()),
            Kind::Subagent => (self.agent_span(event, kind, links), event.ts),
            Kind::Unanswered => (
                self.unanswered_span(event, links.unanswered.as_ref()?),
                event.ts,
            ),
        };
        span.trace_id = trace_id(event);
        span.kind = SpanKind::Internal as i32;
        span.end_time_unix_nano = nanos(end);
        span.start_time_unix_nano = span.start_time_unix_nano.min(span.end_time_unix_nano);
        let common = [
            opt_kv("gen_ai.conversation.id", event.session_id.as_deref()),
            opt_kv(
                "gen_ai.provider.name",
                event.agent.as_deref().and_then(provider),
            ),
            opt_kv("cmstore.agent", event.agent.as_deref()),
            opt_kv("cmstore.hook_type", event.hook_type.as_deref()),
            Some(kv("cmstore.event.id", &event.id)),
        ];
        span.attributes.extend(common.into_iter().flatten());
        Some(span)
    }

    fn tool_span(&self, event: &EventRecord, kind: Kind, links: &Links) -> Span {
        let tool = event.tool_name.as_deref().unwrap_or("unknown");
        // The agent's duration, else the time since the call's PreToolUse, as `tool_calls`
        // has it; a denied call never ran.
        let duration = match (kind, event.duration_ms, links.call_start) {
            (Kind::Tool, Some(ms), _) if ms >= 0 => Some(ms),
            (Kind::Tool, _, Some(pre)) if pre <= event.ts => Some(event.ts - pre),
            _ => None,
        };
        let start = event.ts - duration.unwrap_or(0);
        let (risk, decision) = match kind {
            Kind::Denied => (event.risk.clone(), event.decision.clone()),
            _ => links.gate.clone().unwrap_or_default(),
        };
        let mut attributes = vec![
            kv("gen_ai.operation.name", "execute_tool"),
            kv("gen_ai.tool.name", tool),
        ];
        attributes.extend(
            [
                opt_kv("gen_ai.tool.call.id", event.tool_call_id.as_deref()),
                opt_kv("cmstore.gate.risk", risk.as_deref()),
                opt_kv("cmstore.gate.decision", decision.as_deref()),
            ]
            .into_iter()
            .flatten(),
        );
        if let Some(ms) = duration {
            attributes.push(int_kv("cmstore.duration_ms", ms));
        }
        let failure = match (kind, event.hook_type.as_deref()) {
            (Kind::Denied, _) => Some((
                "denied",
                format!(
                    "denied by the safety gate: {}",
                    risk.as_deref().unwrap_or("risky")
                ),
            )),
            (_, Some("PermissionDenied")) => Some((
                "denied",
                "refused by the agent's permission check".to_string(),
            )),
            (_, Some("PostToolUseFailure")) => Some((
                "tool_error",
                event
                    .error
                    .clone()
                    .unwrap_or_else(|| "the tool call failed".into()),
            )),
            _ if event.tool_failed => Some((
                "tool_error",
                event
                    .error
                    .clone()
                    .unwrap_or_else(|| "the tool reported a failure".into()),
            )),
            _ => None,
        };
        if self.content {
            attributes.extend(
                [
                    self.text_kv("gen_ai.tool.call.arguments", event.tool_input.as_deref()),
                    self.text_kv("gen_ai.tool.call.result", event.tool_response.as_deref()),
                ]
                .into_iter()
                .flatten(),
            );
        }
        if let Some(agent) = event.delegated_agent.as_deref() {
            attributes.push(kv("cmstore.delegated_agent", agent));
        }
        let status = status(failure.as_ref(), &mut attributes, self);
        Span {
            span_id: call_span_id(event),
            parent_span_id: links
                .turn
                .as_ref()
                .map(|t| span_id(&t.event_id))
                .unwrap_or_default(),
            name: format!("execute_tool {tool}"),
            start_time_unix_nano: nanos(start),
            attributes,
            status: Some(status),
            ..Span::default()
        }
    }

    fn agent_span(&self, event: &EventRecord, kind: Kind, links: &Links) -> Span {
        let name = match kind {
            Kind::Subagent => event
                .delegated_agent
                .as_deref()
                .or(event.actor_name.as_deref())
                .unwrap_or("subagent"),
            _ => event.agent.as_deref().unwrap_or("agent"),
        };
        let (id, parent, start) = match (kind, &links.turn) {
            // A turn's span is named by its prompt, so its tool calls (exported before the
            // Stop) can name it as their parent.
            (Kind::Turn, Some(t)) => (span_id(&t.event_id), Vec::new(), t.ts),
            (Kind::Turn, None) => (turn_span_id(event), Vec::new(), event.turn_end()),
            (_, turn) => (
                span_id(&event.id),
                turn.as_ref()
                    .map(|t| span_id(&t.event_id))
                    .unwrap_or_default(),
                links.subagent_start.unwrap_or(event.ts),
            ),
        };
        let mut attributes = vec![
            kv("gen_ai.operation.name", "invoke_agent"),
            kv("gen_ai.agent.name", name),
        ];
        attributes.extend(
            [
                opt_kv("gen_ai.request.model", event.model.as_deref()),
                opt_kv("cmstore.turn.id", event.turn_id.as_deref()),
                opt_kv(
                    "cmstore.turn.outcome",
                    event.outcome().filter(|_| kind == Kind::Turn),
                ),
                opt_kv(
                    "cmstore.prompt.event.id",
                    links
                        .turn
                        .as_ref()
                        .map(|t| t.event_id.as_str())
                        .filter(|_| kind == Kind::Turn),
                ),
            ]
            .into_iter()
            .flatten(),
        );
        if let Some(tokens) = event.estimated_tokens.filter(|t| *t > 0) {
            attributes.push(int_kv("cmstore.estimated_tokens", tokens));
        }
        if let Some(usage) = links.usage {
            attributes.extend(usage_attributes(usage));
        }
        if self.content {
            let prompt = event
                .prompt
                .as_deref()
                .or_else(|| links.turn.as_ref()?.prompt.as_deref());
            attributes.extend(
                [
                    self.message_kv("gen_ai.input.messages", "user", prompt),
                    self.message_kv(
                        "gen_ai.output.messages",
                        "assistant",
                        event.response.as_deref(),
                    ),
                ]
                .into_iter()
                .flatten(),
            );
        }
        let failure = (event.hook_type.as_deref() == Some("StopFailure")).then(|| {
            (
                "agent_error",
                event
                    .error
                    .clone()
                    .unwrap_or_else(|| "the turn ended on an error".into()),
            )
        });
        let status = status(failure.as_ref(), &mut attributes, self);
        Span {
            span_id: id,
            parent_span_id: parent,
            name: format!("invoke_agent {name}"),
            start_time_unix_nano: nanos(start),
            attributes,
            status: Some(status),
            ..Span::default()
        }
    }

    /// The span of a Gemini CLI turn never answered (`prompt`), ended by `event` (the next
    /// prompt, or the session's end): a root `invoke_agent` span named by its prompt, as an
    /// answered turn's is.
    fn unanswered_span(&self, event: &EventRecord, prompt: &TurnStart) -> Span {
        let name = event.agent.as_deref().unwrap_or("agent");
        let mut attributes = vec![
            kv("gen_ai.operation.name", "invoke_agent"),
            kv("gen_ai.agent.name", name),
            kv("cmstore.turn.outcome", "interrupted"),
            kv("cmstore.prompt.event.id", &prompt.event_id),
        ];
        if self.content {
            attributes.extend(self.message_kv(
                "gen_ai.input.messages",
                "user",
                prompt.prompt.as_deref(),
            ));
        }
        Span {
            span_id: span_id(&prompt.event_id),
            name: format!("invoke_agent {name}"),
            start_time_unix_nano: nanos(prompt.ts),
            attributes,
            status: Some(Status::default()),
            ..Span::default()
        }
    }

    fn text_kv(&self, key: &str, text: Option<&str>) -> Option<KeyValue> {
        text.map(|t| kv(key, &self.redactor.redact(t)))
    }

    /// A message list attribute in the conventions' JSON shape (one text part).
    fn message_kv(&self, key: &str, role: &str, text: Option<&str>) -> Option<KeyValue> {
        let text = self.redactor.redact(text?);
        let messages =
            serde_json::json!([{"role": role, "parts": [{"type": "text", "content": text}]}]);
        Some(kv(key, &messages.to_string()))
    }
}

/// `gen_ai.usage.*` of a turn. The conventions count cached tokens in the input tokens;
/// Anthropic does not, so they are added here.
pub fn usage_attributes(usage: Usage) -> Vec<KeyValue> {
    vec![
        int_kv(
            "gen_ai.usage.input_tokens",
            usage
                .input
                .saturating_add(usage.cache_read)
                .saturating_add(usage.cache_creation),
        ),
        int_kv("gen_ai.usage.output_tokens", usage.output),
        int_kv("gen_ai.usage.cache_read.input_tokens", usage.cache_read),
        int_kv(
            "gen_ai.usage.cache_creation.input_tokens",
            usage.cache_creation,
        ),
    ]
}

/// The span status of a failure (an error status, `error.type`) or success (unset). The
/// message is the agent's, redacted like content, and sent only with content on.
fn status(
    failure: Option<&(&str, String)>,
    attributes: &mut Vec<KeyValue>,
    mapper: &Mapper<'_>,
) -> Status {
    let Some((kind, message)) = failure else {
        return Status::default();
    };
    attributes.push(kv("error.type", kind));
    Status {
        code: StatusCode::Error as i32,
        message: if mapper.content {
            mapper.redactor.redact(message).into_owned()
        } else {
            (*kind).to_string()
        },
    }
}

/// `gen_ai.provider.name` for the agents whose provider is certain.
fn provider(agent: &str) -> Option<&'static str> {
    match agent {
        "claude" => Some("anthropic"),
        "codex" => Some("openai"),
        "gemini" => Some("gcp.gemini"),
        _ => None,
    }
}

fn nanos(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0).saturating_mul(1_000_000)
}

/// A string attribute.
pub fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(Any::StringValue(value.to_string())),
        }),
        ..KeyValue::default()
    }
}

fn opt_kv(key: &str, value: Option<&str>) -> Option<KeyValue> {
    value.map(|v| kv(key, v))
}

fn int_kv(key: &str, value: i64) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(Any::IntValue(value)),
        }),
        ..KeyValue::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr<'s>(span: &'s Span, key: &str) -> Option<&'s Any> {
        span.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
    }

    fn text(span: &Span, key: &str) -> Option<String> {
        match attr(span, key) {
            Some(Any::StringValue(s)) => Some(s.clone()),
            _ => None,
        }
    }

    fn event(hook: &str) -> EventRecord {
        EventRecord {
            seq: 7,
            id: format!("ev-{hook}"),
            ts: 10_000,
            hook_type: Some(hook.to_string()),
            agent: Some("claude".into()),
            session_id: Some("s1".into()),
            tool_name: Some("Bash".into()),
            tool_call_id: Some("toolu_1".into()),
            duration_ms: Some(250),
            prompt: Some(
                "deploy with key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789".into(),
            ),
            response: Some("done".into()),
            tool_input: Some("{\"command\":\"ls\"}".into()),
            tool_response: Some("a b".into()),
            ..EventRecord::default()
        }
    }

    fn turn_start(ts: i64) -> TurnStart {
        TurnStart {
            event_id: "prompt-1".into(),
            ts,
            prompt: None,
            seq: 1,
        }
    }

    fn mapper(content: bool, redactor: &Redactor) -> Mapper<'_> {
        Mapper { content, redactor }
    }

    #[test]
    fn a_tool_call_is_an_execute_tool_span_under_its_turn() {
        let r = Redactor::new(&[]);
        let links = Links {
            turn: Some(turn_start(9_000)),
            gate: Some((Some("rm-rf".into()), None)),
            ..Links::default()
        };
        let span = mapper(false, &r)
            .span(&event("PostToolUse"), &links)
            .unwrap();
        assert_eq!(span.name, "execute_tool Bash");
        assert_eq!(
            text(&span, "gen_ai.operation.name").as_deref(),
            Some("execute_tool")
        );
        assert_eq!(text(&span, "gen_ai.tool.name").as_deref(), Some("Bash"));
        assert_eq!(
            text(&span, "gen_ai.tool.call.id").as_deref(),
            Some("toolu_1")
        );
        assert_eq!(text(&span, "gen_ai.conversation.id").as_deref(), Some("s1"));
        assert_eq!(text(&span, "cmstore.gate.risk").as_deref(), Some("rm-rf"));
        assert_eq!(span.start_time_unix_nano, 9_750_000_000);
        assert_eq!(span.end_time_unix_nano, 10_000_000_000);
        assert_eq!(span.parent_span_id, span_id("prompt-1"));
        assert_eq!(span.span_id, call_span_id(&event("PostToolUse")));
        assert_eq!(span.trace_id.len(), 16);
        assert_eq!(span.status.clone().unwrap().code, StatusCode::Unset as i32);
        assert_eq!(
            text(&span, "gen_ai.tool.call.arguments"),
            None,
            "content is off"
        );
    }

    #[test]
    fn a_call_without_a_reported_duration_starts_at_its_pre_tool_use() {
        let r = Redactor::new(&[]);
        let mut post = event("PostToolUse");
        post.duration_ms = None;
        let links = Links {
            call_start: Some(9_400),
            ..Links::default()
        };
        let span = mapper(false, &r).span(&post, &links).unwrap();
        assert_eq!(span.start_time_unix_nano, 9_400_000_000);
        assert_eq!(span.end_time_unix_nano, 10_000_000_000);
        assert_eq!(
            attr(&span, "cmstore.duration_ms"),
            Some(&Any::IntValue(600))
        );
        // The agent's own duration wins.
        let span = mapper(false, &r)
            .span(&event("PostToolUse"), &links)
            .unwrap();
        assert_eq!(span.start_time_unix_nano, 9_750_000_000);
        let no_pre = mapper(false, &r).span(&post, &Links::default()).unwrap();
        assert_eq!(no_pre.start_time_unix_nano, no_pre.end_time_unix_nano);
        assert_eq!(attr(&no_pre, "cmstore.duration_ms"), None);
    }

    #[test]
    fn failures_and_denials_have_an_error_status() {
        let r = Redactor::new(&[]);
        let mut failed = event("PostToolUseFailure");
        failed.error = Some("exit 1".into());
        let span = mapper(false, &r).span(&failed, &Links::default()).unwrap();
        assert_eq!(text(&span, "error.type").as_deref(), Some("tool_error"));
        let status = span.status.clone().unwrap();
        assert_eq!(status.code, StatusCode::Error as i32);
        assert_eq!(
            status.message, "tool_error",
            "the agent's message is content"
        );
        let mut denied = event("PreToolUse");
        denied.decision = Some("deny".into());
        denied.risk = Some("rm-rf".into());
        let span = mapper(true, &r).span(&denied, &Links::default()).unwrap();
        assert_eq!(
            text(&span, "cmstore.gate.decision").as_deref(),
            Some("deny")
        );
        assert_eq!(text(&span, "error.type").as_deref(), Some("denied"));
        assert!(span.status.clone().unwrap().message.contains("rm-rf"));
        assert_eq!(
            mapper(true, &r).span(&event("PreToolUse"), &Links::default()),
            None
        );
    }

    #[test]
    fn a_turn_is_an_invoke_agent_span_named_by_its_prompt_and_content_is_redacted() {
        let r = Redactor::new(&[]);
        let links = Links {
            turn: Some(turn_start(4_000)),
            ..Links::default()
        };
        let span = mapper(true, &r).span(&event("Stop"), &links).unwrap();
        assert_eq!(span.name, "invoke_agent claude");
        assert_eq!(span.span_id, span_id("prompt-1"));
        assert!(span.parent_span_id.is_empty());
        assert_eq!(span.start_time_unix_nano, 4_000_000_000);
        let input = text(&span, "gen_ai.input.messages").unwrap();
        assert!(input.contains("\"role\":\"user\""), "{input}");
        assert!(!input.contains("AbCdEfGhIjKlMnOp"), "redacted: {input}");
        assert_eq!(
            text(&span, "gen_ai.provider.name").as_deref(),
            Some("anthropic")
        );
        let off = mapper(false, &r).span(&event("Stop"), &links).unwrap();
        assert_eq!(text(&off, "gen_ai.input.messages"), None);
        assert_eq!(text(&off, "gen_ai.output.messages"), None);
    }

    #[test]
    fn a_turn_no_prompt_began_is_named_by_its_key_and_a_harvested_one_ends_when_it_did() {
        let r = Redactor::new(&[]);
        let m = mapper(false, &r);
        let mut harvested = event("Stop");
        harvested.synthetic = true;
        harvested.turn_id = Some("u1".into());
        harvested.turn_ts = Some(8_000);
        harvested.turn_outcome = Some("interrupted".into());
        let span = m.span(&harvested, &Links::default()).unwrap();
        assert_eq!(span.span_id, turn_span_id(&harvested));
        assert_eq!(
            span.end_time_unix_nano, 8_000_000_000,
            "the turn's own time"
        );
        assert_eq!(
            text(&span, "cmstore.turn.outcome").as_deref(),
            Some("interrupted")
        );
        assert_eq!(text(&span, "cmstore.prompt.event.id"), None);
        // The same turn in another line (its Stop fired again) is the same span.
        let mut again = event("Stop");
        again.id = "another-line".into();
        again.turn_id = Some("u1".into());
        assert_eq!(
            m.span(&again, &Links::default()).unwrap().span_id,
            span.span_id
        );
        let mut other = again.clone();
        other.turn_id = Some("u2".into());
        assert_ne!(
            m.span(&other, &Links::default()).unwrap().span_id,
            span.span_id
        );
    }

    #[test]
    fn a_pending_stop_is_no_span_an_interrupt_and_a_failure_are_turns() {
        let r = Redactor::new(&[]);
        let m = mapper(false, &r);
        let mut pending = event("Stop");
        pending.turn_pending = true;
        assert_eq!(Kind::of(&pending), None);
        let interrupt = m.span(&event("Interrupt"), &Links::default()).unwrap();
        assert_eq!(
            text(&interrupt, "cmstore.turn.outcome").as_deref(),
            Some("interrupted")
        );
        assert_eq!(interrupt.status.unwrap().code, StatusCode::Unset as i32);
        let failed = m.span(&event("StopFailure"), &Links::default()).unwrap();
        assert_eq!(
            text(&failed, "cmstore.turn.outcome").as_deref(),
            Some("failed")
        );
        assert_eq!(failed.status.unwrap().code, StatusCode::Error as i32);
    }

    #[test]
    fn a_gemini_prompt_shows_an_unanswered_turn_only_when_the_store_made_one() {
        let r = Redactor::new(&[]);
        let m = mapper(false, &r);
        let mut next = event("UserPromptSubmit");
        next.agent = Some("gemini".into());
        assert_eq!(Kind::of(&next), Some(Kind::Unanswered));
        assert_eq!(m.span(&next, &Links::default()), None);
        let links = Links {
            unanswered: Some(turn_start(4_000)),
            ..Links::default()
        };
        let span = m.span(&next, &links).unwrap();
        assert_eq!(span.span_id, span_id("prompt-1"));
        assert!(span.parent_span_id.is_empty());
        assert_eq!(span.start_time_unix_nano, 4_000_000_000);
        assert_eq!(
            Kind::of(&event("UserPromptSubmit")),
            None,
            "claude's is none"
        );
    }

    #[test]
    fn a_subagent_is_an_invoke_agent_span_under_the_turn() {
        let r = Redactor::new(&[]);
        let mut e = event("SubagentStop");
        e.delegated_agent = Some("Explore".into());
        let links = Links {
            turn: Some(turn_start(4_000)),
            subagent_start: Some(6_000),
            ..Links::default()
        };
        let span = mapper(false, &r).span(&e, &links).unwrap();
        assert_eq!(span.name, "invoke_agent Explore");
        assert_eq!(span.span_id, span_id("ev-SubagentStop"));
        assert_eq!(span.parent_span_id, span_id("prompt-1"));
        assert_eq!(span.start_time_unix_nano, 6_000_000_000);
    }

    #[test]
    fn ids_are_the_same_for_the_same_event_and_differ_between_events() {
        let r = Redactor::new(&[]);
        let m = mapper(false, &r);
        let a = m.span(&event("PostToolUse"), &Links::default()).unwrap();
        let b = m.span(&event("PostToolUse"), &Links::default()).unwrap();
        assert_eq!((&a.trace_id, &a.span_id), (&b.trace_id, &b.span_id));
        let c = m
            .span(&event("PostToolUseFailure"), &Links::default())
            .unwrap();
        assert_eq!(a.span_id, c.span_id, "one call id, one call");
        let mut other_call = event("PostToolUse");
        other_call.tool_call_id = Some("toolu_2".into());
        let d = m.span(&other_call, &Links::default()).unwrap();
        assert_ne!(a.span_id, d.span_id);
        assert_eq!(a.trace_id, d.trace_id, "one session, one trace");
        let mut no_call_id = event("PostToolUse");
        no_call_id.tool_call_id = None;
        let e = m.span(&no_call_id, &Links::default()).unwrap();
        assert_eq!(e.span_id, span_id("ev-PostToolUse"), "its event's id");
    }

    #[test]
    fn usage_counts_cached_tokens_in_the_input_as_the_conventions_do() {
        let attrs = usage_attributes(Usage {
            input: 10,
            output: 5,
            cache_read: 100,
            cache_creation: 20,
        });
        let get = |k: &str| {
            attrs
                .iter()
                .find(|kv| kv.key == k)
                .and_then(|kv| match kv.value.as_ref()?.value {
                    Some(Any::IntValue(v)) => Some(v),
                    _ => None,
                })
        };
        assert_eq!(get("gen_ai.usage.input_tokens"), Some(130));
        assert_eq!(get("gen_ai.usage.output_tokens"), Some(5));
        assert_eq!(get("gen_ai.usage.cache_read.input_tokens"), Some(100));
    }

    #[test]
    fn the_resource_names_the_user_only_when_configured() {
        let keys = |r: &Resource| {
            r.attributes
                .iter()
                .map(|kv| kv.key.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            keys(&resource(Some("h"), None)),
            ["service.name", "service.version", "host.name"]
        );
        assert!(keys(&resource(None, Some("ana"))).contains(&"user.id".to_string()));
    }
}
