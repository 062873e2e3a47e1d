//! The turns of a Codex rollout, as Codex's hooks record them (pure, with state per file).
//!
//! A rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`) is JSON Lines. Since
//! the autumn of 2025 each line is an envelope `{timestamp, type, payload}`:
//!
//! - `session_meta`: the session (`payload.id`, the hooks' `session_id`), `cwd`,
//!   `cli_version`, and `source` (`"cli"`, or `{"subagent": …}` for a review or a spawned
//!   agent's rollout);
//! - `turn_context`: the model (`payload.model`, the hooks' `model`) and, from some version
//!   before 0.118, the turn (`payload.turn_id`);
//! - `event_msg`: what the user interface was told: `task_started` (`turn_id`) begins a turn,
//!   `user_message` (`message`) is what the person typed, `agent_message` an answer,
//!   `task_complete` (`turn_id`, `last_agent_message`) ends a turn, `turn_aborted` (`turn_id`,
//!   `reason`) ends an interrupted one, `error` a failed one (then `task_complete` with a null
//!   `last_agent_message`); `token_count`, `exec_command_end`, `item_completed` and others;
//! - `response_item`: what the model saw and said: `message` (`role` `user`, `developer` or
//!   `assistant`, `content` parts `input_text` / `output_text`), `reasoning` (`summary` parts,
//!   sometimes `content`, often only `encrypted_content`), `function_call` (`name`,
//!   `arguments` as a JSON string, `call_id`), `custom_tool_call` (`input` as free text, e.g.
//!   `apply_patch`), `local_shell_call` (`action`), `web_search_call`, and the results
//!   `function_call_output` / `custom_tool_call_output` (`call_id`, `output`).
//!
//! What each version seen writes (the real rollouts under `shared/fixtures/real-more/codex`,
//! and the end-to-end suite's Codex 0.171.0):
//!
//! - **Before the envelope** (August and September 2025, `ocodex-legacy`): a first line
//!   `{id, timestamp, instructions}`, `{"record_type": "state"}` lines, and the response items
//!   bare, with no time and no turn id. A prompt is a `user` message that is not context the
//!   harness injects (`<environment_context>`, `<user_instructions>`, …); a turn ends at the
//!   next one. No Codex of that time had hooks, so no hook could have recorded these turns.
//! - **0.63, 0.77**: the envelope, `user_message` events, a `turn_context` for every model
//!   request but no turn id anywhere, and `turn_aborted` without one. A turn is a
//!   `user_message` and what follows up to the next; 0.77 writes a review's prompt twice.
//! - **0.118 (CLI and Desktop), 0.121**: each turn is `task_started` (its `turn_id`), the
//!   injected context (a `developer` message, `user` messages of `AGENTS.md` and
//!   `<environment_context>`), `turn_context` (the same `turn_id`), the prompt as a `user`
//!   message *and* a `user_message` event, then the model's items, and `task_complete` or
//!   `turn_aborted` (the same `turn_id`, and a `<turn_aborted>` `user` message that is no
//!   prompt). A `!command` the person runs is a task of its own with neither prompt nor
//!   answer, and a compaction one without a prompt: no turn.
//! - **0.171** (`codex exec` in the end-to-end suite): the same tasks, but no `user_message`
//!   event: the prompt is the `item_completed` event whose `item` is a `UserMessage`
//!   (`content` parts of type `text`); `item_completed` also comes for `AgentMessage`,
//!   `CommandExecution` and `HookPrompt` items, and new line types (`world_state`,
//!   `token_usage_record`) carry nothing a turn needs. A prompt the `UserPromptSubmit` hook
//!   refused leaves an empty task: no turn.
//!
//! The turn id is the hooks' `turn_id`: Codex sends its turn's `sub_id` as `turn_id` in
//! `UserPromptSubmit`, `Stop` and `Interrupt`, and writes the same `sub_id` into
//! `task_started`, `turn_context`, `task_complete` and `turn_aborted`. Checked on ten rollouts
//! of a run of the end-to-end suite (tests/e2e/codex.rs, Codex 0.171.0) against the queue
//! lines their hooks wrote: every hooked turn is a turn here with the same session and turn
//! id, the `UserPromptSubmit`'s prompt, the last `Stop`'s answer, the payload's model, and
//! `interrupted` where `Interrupt` fired; the one turn no hook saw was a run whose hooks were
//! not trusted. The answer is `task_complete`'s `last_agent_message`, the value the `Stop`
//! hook got as `last_assistant_message` (null when the last model request said nothing, even
//! after earlier progress messages); a turn without it (interrupted, older versions, still
//! going) takes its last assistant message.
//!
//! A blocking `Stop` hook's reason goes back to the model as a `user` message
//! `<hook_prompt hook_run_id="…">reason</hook_prompt>` (0.171: an `item_completed`
//! `HookPrompt`) in the same turn: no prompt, and no feedback either, as the hooks record none
//! for Codex. By Codex's source (not seen in a real rollout), a message the person sends while
//! the turn runs is injected into it (the same `turn_id`, a second `user_message`, a second
//! `UserPromptSubmit`); as ingest takes a turn's latest `UserPromptSubmit`, it becomes the
//! turn's prompt here too.
//!
//! A forked session's rollout begins with a copy of the parent's lines (its `session_meta`
//! included; Codex's source persists the forked history as it is), turns the hooks recorded
//! under the parent. Codex's ids are UUID v7: a turn whose id is older than the session's own
//! id is such a copy, and is left out ([`CodexTurnReader::copied_turns`]). No real fork's
//! rollout was at hand.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{ToolCallRecord, Turn, MAX_TOOL_CALLS, MAX_TOOL_INPUT_CHARS, MAX_TOOL_OUTPUT_CHARS};
use crate::model::shorten::{compact_json, cut_text};
use crate::support::clock::rfc3339_ms;

/// A turn read from a rollout, with when it began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexTurn {
    /// The turn, as the hooks would record it.
    pub turn: Turn,
    /// When its prompt's line was written (epoch ms), else its `task_started`'s; `None` when
    /// the lines say no time (rollouts before the envelope).
    pub started: Option<i64>,
}

/// Reads one rollout from its first line on, a line at a time, and gives each turn once it
/// has ended. Holds only the turn going on (at most [`MAX_TOOL_CALLS`] calls, each cut), never
/// the file.
#[derive(Debug, Default)]
pub struct CodexTurnReader {
    session: Option<String>,
    /// The first `session_meta` has been read: a later one is a copied parent's.
    meta_seen: bool,
    cwd: Option<String>,
    cli_version: Option<String>,
    subagent: bool,
    /// The model the latest `turn_context` named.
    model: Option<String>,
    open: Option<Open>,
    /// The time of the line being read.
    line_ts: Option<i64>,
    copied: u64,
}

/// The turn going on.
#[derive(Debug, Default)]
struct Open {
    turn_id: Option<String>,
    /// Begun by `task_started`: the prompt comes later, and a second one is injected.
    by_task: bool,
    /// A copy of a parent session's turn (a fork): never given.
    copied: bool,
    user: String,
    started: Option<i64>,
    /// The latest assistant message's text.
    assistant: String,
    /// `task_complete`'s `last_agent_message`, once read (`Some(None)`: null).
    answer: Option<Option<String>>,
    reasoning: Option<String>,
    calls: Vec<ToolCallRecord>,
    call_ids: Vec<Option<String>>,
    model: Option<String>,
    failed: bool,
    last_ts: Option<i64>,
    /// `last_ts` before the line being read: the turn's time when that line begins the next.
    before_line: Option<i64>,
}

impl Open {
    /// Anything the model did: an answer, reasoning or a tool call.
    fn has_output(&self) -> bool {
        !self.assistant.trim().is_empty() || self.reasoning.is_some() || !self.calls.is_empty()
    }

    fn add_call(&mut self, id: Option<String>, name: String, input: &Value) {
        self.failed = false;
        if self.calls.len() < MAX_TOOL_CALLS {
            self.call_ids.push(id);
            self.calls.push(ToolCallRecord {
                tool_name: name,
                input: compact_json(input, MAX_TOOL_INPUT_CHARS),
                output: String::new(),
            });
        }
    }

    fn add_result(&mut self, id: &str, output: &str) {
        let index = self.call_ids.iter().position(|c| c.as_deref() == Some(id));
        if let Some(call) = index.and_then(|i| self.calls.get_mut(i)) {
            call.output = cut_text(output, MAX_TOOL_OUTPUT_CHARS);
        }
    }
}

/// How a turn ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// `task_complete`.
    Complete,
    /// `turn_aborted`.
    Aborted,
    /// The next turn began (the end of a turn in versions without end events; else a crash):
    /// dated by its own last line, not the next turn's first.
    Next,
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow)]
    payload: Option<&'a RawValue>,
    /// The first line of a rollout before the envelope: `{id, timestamp, instructions}`.
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    record_type: Option<serde::de::IgnoredAny>,
}

/// Every payload's fields that matter, those whose shape varies between versions or event
/// types kept raw and read on demand (a field of an unexpected shape loses only itself).
#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    turn_id: Option<&'a RawValue>,
    #[serde(borrow)]
    cwd: Option<&'a RawValue>,
    #[serde(borrow)]
    cli_version: Option<&'a RawValue>,
    #[serde(borrow)]
    source: Option<&'a RawValue>,
    #[serde(borrow)]
    model: Option<&'a RawValue>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    last_agent_message: Option<Option<&'a RawValue>>,
    #[serde(borrow)]
    role: Option<&'a RawValue>,
    #[serde(borrow)]
    content: Option<&'a RawValue>,
    #[serde(borrow)]
    summary: Option<&'a RawValue>,
    #[serde(borrow)]
    name: Option<&'a RawValue>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    #[serde(borrow)]
    action: Option<&'a RawValue>,
    #[serde(borrow)]
    call_id: Option<&'a RawValue>,
    #[serde(borrow)]
    output: Option<&'a RawValue>,
    #[serde(borrow)]
    item: Option<&'a RawValue>,
}

/// A field that is there, even as `null` (`Some(None)`), told from one that is not (`None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<&'de RawValue>>, D::Error> {
    let raw = <&RawValue>::deserialize(d)?;
    Ok(Some((raw.get() != "null").then_some(raw)))
}

/// A JSON string, borrowed from the line when it has no escapes.
#[derive(Deserialize)]
struct Str<'a>(#[serde(borrow)] Cow<'a, str>);

/// One part of a message or reasoning: `{type, text}`.
#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

/// The field as a string, if it is one.
fn string(raw: Option<&RawValue>) -> Option<Cow<'_, str>> {
    serde_json::from_str::<Str<'_>>(raw?.get())
        .ok()
        .map(|s| s.0)
}

/// The field as an owned, non-empty string.
fn owned(raw: Option<&RawValue>) -> Option<String> {
    string(raw).filter(|s| !s.is_empty()).map(Cow::into_owned)
}

/// The text of a list of parts whose type is one of `kinds`, joined by `sep`.
fn parts_text(raw: Option<&RawValue>, kinds: &[&str], sep: &str) -> String {
    let Some(parts) = raw.and_then(|r| serde_json::from_str::<Vec<Part<'_>>>(r.get()).ok()) else {
        return String::new();
    };
    let texts: Vec<Cow<'_, str>> = parts
        .into_iter()
        .filter(|p| p.kind.as_deref().is_some_and(|k| kinds.contains(&k)))
        .filter_map(|p| p.text)
        .filter(|t| !t.trim().is_empty())
        .collect();
    texts.join(sep)
}

/// A tool result's text: a string, the text parts of a list, or an object's `content`.
fn output_text(raw: &RawValue) -> String {
    if let Some(text) = string(Some(raw)) {
        return text.into_owned();
    }
    let text = parts_text(Some(raw), &["input_text", "output_text", "text"], "\n");
    if !text.is_empty() {
        return text;
    }
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::Object(mut map)) => match map.remove("content") {
            Some(Value::String(text)) => text,
            Some(content) => {
                let raw = serde_json::value::to_raw_value(&content).ok();
                parts_text(raw.as_deref(), &["input_text", "output_text", "text"], "\n")
            }
            None => Value::Object(map).to_string(),
        },
        Ok(Value::Null) | Err(_) => String::new(),
        Ok(other) => other.to_string(),
    }
}

/// The start of the texts Codex puts in `user` messages that no person typed: the session's
/// context, instructions, notices of an interruption or a command run outside the model, a
/// Stop hook's continuation, a finished review.
const INJECTED: [&str; 11] = [
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<hook_prompt",
    "<user_action>",
    "<skill>",
    "<subagent_notification>",
];

/// Whether a `user` message's text is context Codex injects, not a prompt.
pub fn is_injected(text: &str) -> bool {
    let text = text.trim_start();
    INJECTED.iter().any(|start| text.starts_with(start))
}

/// The time in a UUID v7 (Codex's session and turn ids since 0.118 or so), epoch ms.
fn uuid_v7_ms(id: &str) -> Option<u64> {
    let uuid = uuid::Uuid::parse_str(id).ok()?;
    if uuid.get_version_num() != 7 {
        return None;
    }
    let b = uuid.as_bytes();
    Some(u64::from_be_bytes([
        0, 0, b[0], b[1], b[2], b[3], b[4], b[5],
    ]))
}

impl CodexTurnReader {
    /// A reader for a rollout whose `session_meta` may be missing: `fallback` is the session
    /// (the uuid its file name ends with:
    /// [`CodexReader::session_of_path`](super::usage::CodexReader::session_of_path)),
    /// until the first `session_meta` names one.
    pub fn new(fallback: Option<String>) -> CodexTurnReader {
        CodexTurnReader {
            session: fallback,
            ..CodexTurnReader::default()
        }
    }

    /// The session: the first `session_meta`'s `id`, else the fallback.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The session's working directory, from its first `session_meta`.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// The Codex version that began the rollout (`session_meta.cli_version`).
    pub fn cli_version(&self) -> Option<&str> {
        self.cli_version.as_deref()
    }

    /// The rollout is a subagent's (a review, a spawned agent): `session_meta.source` names
    /// one. Its prompts are the parent agent's, not a person's.
    pub fn is_subagent(&self) -> bool {
        self.subagent
    }

    /// Turns left out so far as copies of a parent session's (a forked session's rollout).
    pub fn copied_turns(&self) -> u64 {
        self.copied
    }

    /// The line read last is of a turn copied from a parent session (a forked session's
    /// rollout), which the parent's hooks saw.
    pub fn in_copied_turn(&self) -> bool {
        self.open.as_ref().is_some_and(|o| o.copied)
    }

    /// The id of the turn going on, if it has one: the turn of the lines read now.
    pub fn open_turn_id(&self) -> Option<&str> {
        self.open.as_ref().and_then(|o| o.turn_id.as_deref())
    }

    /// Reads one line (newline excluded); the turn it ended, if any, complete. A line that is
    /// not JSON is skipped.
    pub fn feed(&mut self, line: &[u8]) -> Option<CodexTurn> {
        let line = line.trim_ascii();
        if line.is_empty() {
            return None;
        }
        let envelope: Envelope<'_> = serde_json::from_slice(line).ok()?;
        self.line_ts = envelope.timestamp.as_deref().and_then(rfc3339_ms);
        self.touch();
        match (envelope.kind.as_deref(), envelope.payload) {
            (Some("session_meta"), Some(payload)) => {
                self.meta(&serde_json::from_str(payload.get()).ok()?);
                None
            }
            (Some("turn_context"), Some(payload)) => {
                self.context(&serde_json::from_str(payload.get()).ok()?);
                None
            }
            (Some("event_msg"), Some(payload)) => {
                self.event(serde_json::from_str(payload.get()).ok()?)
            }
            (Some("response_item"), Some(payload)) => {
                self.item(&serde_json::from_str(payload.get()).ok()?, false)
            }
            // Before the envelope: the first line names the session, the items are bare.
            (None, None) if envelope.record_type.is_none() => {
                if let Some(id) = owned(envelope.id).filter(|_| !self.meta_seen) {
                    self.meta_seen = true;
                    self.session = Some(id);
                }
                None
            }
            (Some(_), None) => self.item(&serde_json::from_slice(line).ok()?, true),
            _ => None,
        }
    }

    /// The turn still going at the end of what was read, taken (`complete: false`), if it
    /// has anything to record: a prompt or output.
    pub fn take_open(&mut self) -> Option<CodexTurn> {
        let open = self.open.take()?;
        let ts = open.last_ts;
        self.give(open, false, false, ts)
    }

    /// Notes that the line being read belongs to the turn going on (until it turns out to
    /// begin the next one).
    fn touch(&mut self) {
        let ts = self.line_ts;
        if let Some(open) = &mut self.open {
            open.before_line = open.last_ts;
            open.last_ts = open.last_ts.max(ts);
        }
    }

    fn meta(&mut self, p: &Payload<'_>) {
        if std::mem::replace(&mut self.meta_seen, true) {
            // A parent's, copied into a fork: the session is this file's first.
            return;
        }
        if let Some(id) = owned(p.id) {
            self.session = Some(id);
        }
        self.cwd = owned(p.cwd);
        self.cli_version = owned(p.cli_version);
        self.subagent = p
            .source
            .and_then(|s| serde_json::from_str::<Value>(s.get()).ok())
            .is_some_and(|s| s.get("subagent").is_some());
    }

    fn context(&mut self, p: &Payload<'_>) {
        if let Some(model) = owned(p.model) {
            self.model = Some(model.clone());
            if let Some(open) = &mut self.open {
                open.model = Some(model);
            }
        }
        let Some(turn_id) = owned(p.turn_id) else {
            return;
        };
        let copied = self.is_copied(&turn_id);
        if let Some(open) = self.open.as_mut().filter(|o| o.turn_id.is_none()) {
            open.turn_id = Some(turn_id);
            open.copied = copied;
        }
    }

    fn event(&mut self, p: Payload<'_>) -> Option<CodexTurn> {
        match p.kind.as_deref()? {
            "task_started" | "turn_started" => {
                let ended = self.end(End::Next);
                self.begin(owned(p.turn_id), true);
                ended
            }
            "user_message" => self.prompt(string(p.message)?.into_owned(), true),
            "agent_message" => {
                self.answer_text(string(p.message).as_deref().unwrap_or_default());
                None
            }
            // 0.171: each item once done; the same texts as the response items.
            "item_completed" => {
                let item: Payload<'_> = serde_json::from_str(p.item?.get()).ok()?;
                let text = parts_text(item.content, &["text", "Text"], "\n");
                match item.kind.as_deref()? {
                    "UserMessage" if !text.is_empty() => self.prompt(text, true),
                    "AgentMessage" => {
                        self.answer_text(&text);
                        None
                    }
                    _ => None,
                }
            }
            "task_complete" | "turn_complete" if self.ends_open(p.turn_id) => {
                if let (Some(open), Some(answer)) = (&mut self.open, p.last_agent_message) {
                    open.answer = Some(owned(answer));
                }
                self.end(End::Complete)
            }
            "turn_aborted" if self.ends_open(p.turn_id) => self.end(End::Aborted),
            "error" => {
                if let Some(open) = &mut self.open {
                    open.failed = true;
                }
                None
            }
            _ => None,
        }
    }

    fn item(&mut self, p: &Payload<'_>, bare: bool) -> Option<CodexTurn> {
        let name = || owned(p.name);
        let call_id = || owned(p.call_id);
        match p.kind.as_deref()? {
            "message" => match string(p.role).as_deref() {
                // With the envelope the prompt is the `user_message` event's text; before it,
                // the `user` message that is no injected context.
                Some("user") if bare => {
                    let text = parts_text(p.content, &["input_text"], "\n");
                    if text.trim().is_empty() || is_injected(&text) {
                        return None;
                    }
                    self.prompt(text, false)
                }
                Some("assistant") => {
                    self.answer_text(&parts_text(p.content, &["output_text"], "\n"));
                    None
                }
                _ => None,
            },
            "reasoning" => {
                let mut text = parts_text(p.summary, &["summary_text"], "\n\n");
                if text.trim().is_empty() {
                    text = parts_text(p.content, &["reasoning_text", "text"], "\n");
                }
                if let Some(open) = self.open.as_mut().filter(|_| !text.trim().is_empty()) {
                    open.reasoning = Some(text);
                }
                None
            }
            "function_call" => {
                let arguments = string(p.arguments).unwrap_or_default();
                let input = serde_json::from_str::<Value>(&arguments)
                    .unwrap_or_else(|_| Value::String(arguments.into_owned()));
                self.call(call_id(), name().unwrap_or_default(), &input)
            }
            "custom_tool_call" => {
                let input = Value::String(string(p.input).unwrap_or_default().into_owned());
                self.call(call_id(), name().unwrap_or_default(), &input)
            }
            "local_shell_call" => {
                let id = call_id().or_else(|| owned(p.id));
                self.call(id, "local_shell".to_owned(), &raw_value(p.action))
            }
            "web_search_call" => {
                let id = call_id().or_else(|| owned(p.id));
                self.call(id, "web_search".to_owned(), &raw_value(p.action))
            }
            "function_call_output" | "custom_tool_call_output" => {
                let (Some(id), Some(output)) = (call_id(), p.output) else {
                    return None;
                };
                if let Some(open) = &mut self.open {
                    open.add_result(&id, &output_text(output));
                }
                None
            }
            _ => None,
        }
    }

    fn call(&mut self, id: Option<String>, name: String, input: &Value) -> Option<CodexTurn> {
        if let Some(open) = &mut self.open {
            open.add_call(id, name, input);
        }
        None
    }

    /// An assistant message's text: the turn's latest answer so far.
    fn answer_text(&mut self, text: &str) {
        if let Some(open) = self.open.as_mut().filter(|_| !text.trim().is_empty()) {
            open.failed = false;
            text.clone_into(&mut open.assistant);
        }
    }

    /// A prompt: the one a `task_started` turn awaits (or a later one injected into it), else
    /// the beginning of a turn of its own. `event`: read from a `user_message` event.
    fn prompt(&mut self, text: String, event: bool) -> Option<CodexTurn> {
        if let Some(open) = self.open.as_mut().filter(|o| o.by_task) {
            if open.user.is_empty() {
                open.started = self.line_ts.or(open.started);
            }
            open.user = text;
            return None;
        }
        // 0.77 writes a review's prompt twice; 0.171 writes a prompt as an item too.
        if event
            && self
                .open
                .as_ref()
                .is_some_and(|o| o.user == text && !o.has_output())
        {
            return None;
        }
        let ended = self.end(End::Next);
        self.begin(None, false);
        if let Some(open) = &mut self.open {
            open.user = text;
        }
        ended
    }

    fn begin(&mut self, turn_id: Option<String>, by_task: bool) {
        let copied = turn_id.as_deref().is_some_and(|id| self.is_copied(id));
        self.open = Some(Open {
            turn_id,
            by_task,
            copied,
            started: self.line_ts,
            last_ts: self.line_ts,
            model: self.model.clone(),
            ..Open::default()
        });
    }

    /// Whether an end event naming `turn_id` ends the turn going on (one without an id, or
    /// naming none, matches).
    fn ends_open(&self, turn_id: Option<&RawValue>) -> bool {
        match (&self.open, owned(turn_id)) {
            (None, _) => false,
            (Some(open), Some(id)) => open.turn_id.as_deref().is_none_or(|own| own == id),
            (Some(_), None) => true,
        }
    }

    /// A turn id older than the session's: a parent's turn, copied into a fork.
    fn is_copied(&self, turn_id: &str) -> bool {
        let session = self.session.as_deref().and_then(uuid_v7_ms);
        matches!((uuid_v7_ms(turn_id), session), (Some(turn), Some(session)) if turn < session)
    }

    fn end(&mut self, how: End) -> Option<CodexTurn> {
        let open = self.open.take()?;
        let ts = match how {
            End::Next => open.before_line,
            End::Complete | End::Aborted => open.last_ts,
        };
        self.give(open, true, how == End::Aborted, ts)
    }

    /// The turn as the hooks would record it, unless it is a copy or holds nothing (a
    /// command run without the model, a compaction).
    fn give(
        &mut self,
        open: Open,
        complete: bool,
        interrupted: bool,
        ts: Option<i64>,
    ) -> Option<CodexTurn> {
        if open.copied {
            self.copied += 1;
            return None;
        }
        if open.user.trim().is_empty() && !open.has_output() {
            return None;
        }
        let assistant = match open.answer {
            Some(answer) => answer.unwrap_or_default(),
            None => open.assistant,
        };
        Some(CodexTurn {
            turn: Turn {
                turn_id: open.turn_id,
                user: open.user,
                assistant,
                reasoning: open.reasoning,
                tool_calls: open.calls,
                complete,
                model: open.model,
                interrupted,
                failed: open.failed,
                ts,
                feedback: None,
            },
            started: open.started,
        })
    }
}

/// A raw field as a JSON value (`null` when absent or not JSON).
fn raw_value(raw: Option<&RawValue>) -> Value {
    raw.and_then(|r| serde_json::from_str(r.get()).ok())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A session and a turn id in Codex's shape (UUID v7, the turn's later than the session's).
    const SID: &str = "019d6d67-1952-7e83-93ef-94497e3c15b6";
    const T1: &str = "019d6d67-5781-7653-ba27-f15f2653c068";
    const T2: &str = "019d6d68-3de5-72b1-a82b-1e9a99ef6ad4";

    fn at(second: u32, kind: &str, payload: Value) -> String {
        json!({"timestamp": format!("2026-04-08T14:03:{second:02}.000Z"), "type": kind,
               "payload": payload})
        .to_string()
    }

    fn ms(second: u32) -> Option<i64> {
        rfc3339_ms(&format!("2026-04-08T14:03:{second:02}.000Z"))
    }

    fn meta(id: &str) -> String {
        at(
            0,
            "session_meta",
            json!({"id": id, "cwd": "/w", "originator": "codex-tui",
            "cli_version": "0.118.0", "source": "cli", "base_instructions": {"text": "…"}}),
        )
    }

    fn started(second: u32, turn: &str) -> String {
        at(
            second,
            "event_msg",
            json!({"type": "task_started", "turn_id": turn,
            "model_context_window": 258400}),
        )
    }

    fn context(second: u32, turn: &str, model: &str) -> String {
        at(
            second,
            "turn_context",
            json!({"turn_id": turn, "cwd": "/w", "model": model}),
        )
    }

    fn user_item(second: u32, text: &str) -> String {
        at(
            second,
            "response_item",
            json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": text}]}),
        )
    }

    fn prompt(second: u32, text: &str) -> Vec<String> {
        vec![
            user_item(second, text),
            at(
                second,
                "event_msg",
                json!({"type": "user_message", "message": text,
                "images": [], "local_images": [], "text_elements": []}),
            ),
        ]
    }

    fn said(second: u32, text: &str) -> Vec<String> {
        vec![
            at(
                second,
                "event_msg",
                json!({"type": "agent_message", "message": text,
                "phase": "commentary"}),
            ),
            at(
                second,
                "response_item",
                json!({"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}], "phase": "commentary"}),
            ),
        ]
    }

    fn complete(second: u32, turn: &str, answer: Option<&str>) -> String {
        at(
            second,
            "event_msg",
            json!({"type": "task_complete", "turn_id": turn,
            "last_agent_message": answer}),
        )
    }

    /// The injected context every turn of 0.118 and later begins with.
    fn injected(second: u32) -> Vec<String> {
        vec![
            at(
                second,
                "response_item",
                json!({"type": "message", "role": "developer",
                "content": [{"type": "input_text", "text": "<permissions instructions>…"}]}),
            ),
            user_item(
                second,
                "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>…</INSTRUCTIONS>",
            ),
            user_item(
                second,
                "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
            ),
        ]
    }

    fn read(lines: &[String]) -> (Vec<CodexTurn>, CodexTurnReader) {
        let mut reader = CodexTurnReader::new(None);
        let turns = lines
            .iter()
            .filter_map(|l| reader.feed(l.as_bytes()))
            .collect();
        (turns, reader)
    }

    fn turns(lines: &[String]) -> Vec<Turn> {
        read(lines).0.into_iter().map(|t| t.turn).collect()
    }

    /// The whole shape of a 0.118 turn: its id, the person's prompt (none of the injected
    /// context), the final answer, the reasoning, the calls with their results, the model.
    #[test]
    fn a_task_is_one_turn_keyed_by_its_turn_id() {
        let mut lines = vec![meta(SID), started(2, T1)];
        lines.extend(injected(2));
        lines.push(context(2, T1, "gpt-5.4"));
        lines.extend(prompt(3, "fix the build"));
        lines.push(at(
            4,
            "event_msg",
            json!({"type": "token_count", "info": null}),
        ));
        lines.push(at(
            5,
            "response_item",
            json!({"type": "reasoning",
            "summary": [{"type": "summary_text", "text": "**Looking**"},
                        {"type": "summary_text", "text": "at the build"}],
            "content": null, "encrypted_content": "gAAA"}),
        ));
        lines.extend(said(6, "Checking the build first."));
        lines.push(at(
            7,
            "response_item",
            json!({"type": "function_call",
            "name": "exec_command", "arguments": "{\"cmd\": \"cargo build\"}",
            "call_id": "call_1"}),
        ));
        lines.push(at(
            8,
            "event_msg",
            json!({"type": "exec_command_end", "call_id": "call_1",
            "turn_id": T1, "exit_code": 0}),
        ));
        lines.push(at(
            8,
            "response_item",
            json!({"type": "function_call_output",
            "call_id": "call_1", "output": "Exit code: 0\nOutput:\nok\n"}),
        ));
        lines.extend(said(9, "Fixed."));
        lines.push(complete(10, T1, Some("Fixed.")));
        let (got, reader) = read(&lines);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            got[0].turn,
            Turn {
                turn_id: Some(T1.into()),
                user: "fix the build".into(),
                assistant: "Fixed.".into(),
                reasoning: Some("**Looking**\n\nat the build".into()),
                tool_calls: vec![ToolCallRecord {
                    tool_name: "exec_command".into(),
                    input: r#"{"cmd":"cargo build"}"#.into(),
                    output: "Exit code: 0\nOutput:\nok\n".into(),
                }],
                complete: true,
                model: Some("gpt-5.4".into()),
                interrupted: false,
                failed: false,
                ts: ms(10),
                feedback: None,
            }
        );
        assert_eq!(got[0].started, ms(3), "the prompt's line");
        assert_eq!(reader.session(), Some(SID));
        assert_eq!(reader.cwd(), Some("/w"));
        assert_eq!(reader.cli_version(), Some("0.118.0"));
        assert!(!reader.is_subagent());
        assert!(reader.open_turn_id().is_none());
    }

    /// The answer is what `Stop` got: `task_complete`'s `last_agent_message`, null included,
    /// even when progress messages came before.
    #[test]
    fn the_answer_is_the_stop_hooks_last_assistant_message() {
        let mut lines = vec![meta(SID), started(1, T1), context(1, T1, "m")];
        lines.extend(prompt(2, "look around"));
        lines.extend(said(3, "I will look around."));
        lines.push(complete(4, T1, None));
        let got = turns(&lines);
        assert_eq!(got[0].assistant, "", "{got:?}");
        assert_eq!(got[0].response(), None);
        assert!(got[0].complete && !got[0].failed);
    }

    /// `turn_aborted` ends the turn, interrupted, with its prompt; the `<turn_aborted>` notice
    /// is no prompt, and the turn's lines after the end belong to no turn.
    #[test]
    fn an_aborted_turn_is_interrupted_with_its_prompt() {
        let mut lines = vec![meta(SID), started(1, T1), context(1, T1, "m")];
        lines.extend(prompt(2, "configure the font"));
        lines.extend(said(3, "Looking for the font."));
        lines.push(user_item(
            4,
            "<turn_aborted>\nThe user interrupted the previous turn on purpose.",
        ));
        lines.push(at(
            4,
            "event_msg",
            json!({"type": "turn_aborted", "turn_id": T1,
            "reason": "interrupted"}),
        ));
        lines.push(at(
            9,
            "event_msg",
            json!({"type": "exec_command_end", "call_id": "c9",
            "turn_id": T1, "exit_code": 0}),
        ));
        lines.push(started(12, T2));
        lines.push(context(12, T2, "m"));
        lines.extend(prompt(12, "I use ghostty"));
        lines.extend(said(13, "Ghostty it is."));
        lines.push(complete(14, T2, Some("Ghostty it is.")));
        let got = turns(&lines);
        let seen: Vec<_> = got
            .iter()
            .map(|t| {
                (
                    t.turn_id.as_deref().unwrap(),
                    t.user.as_str(),
                    t.interrupted,
                    t.ts,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (T1, "configure the font", true, ms(4)),
                (T2, "I use ghostty", false, ms(14))
            ]
        );
        assert_eq!(
            got[0].assistant, "Looking for the font.",
            "its last message"
        );
    }

    /// An API error ends the turn (`error`, then `task_complete` without an answer): failed.
    #[test]
    fn a_turn_an_error_ends_is_failed() {
        let mut lines = vec![meta(SID), started(1, T1), context(1, T1, "m")];
        lines.extend(prompt(2, "Hello?"));
        lines.push(at(
            3,
            "event_msg",
            json!({"type": "error",
            "message": "exceeded retry limit, last status: 429", "codex_error_info": "other"}),
        ));
        lines.push(complete(3, T1, None));
        let got = turns(&lines);
        assert_eq!(got.len(), 1);
        assert!(got[0].failed && got[0].complete && !got[0].interrupted);
        assert_eq!(got[0].user, "Hello?");
    }

    /// A `!command` the person runs is a task without prompt or model, as is a compaction:
    /// no turn, and no hook records one.
    #[test]
    fn tasks_without_a_prompt_or_output_are_no_turns() {
        let lines = vec![
            meta(SID),
            started(1, T1),
            at(
                2,
                "event_msg",
                json!({"type": "exec_command_end", "call_id": "c1",
                "turn_id": T1, "exit_code": 1}),
            ),
            user_item(
                2,
                "<user_shell_command>\n<command>\nls\n</command>\n</user_shell_command>",
            ),
            complete(2, T1, None),
            started(3, T2),
            at(
                4,
                "compacted",
                json!({"message": "", "replacement_history": []}),
            ),
            complete(4, T2, None),
        ];
        assert!(turns(&lines).is_empty());
    }

    /// A message sent while the turn runs goes into it (no `task_started`): the same turn, whose
    /// prompt becomes the latest, as ingest takes the turn's latest `UserPromptSubmit`.
    #[test]
    fn a_message_sent_during_the_turn_is_its_latest_prompt() {
        let mut lines = vec![meta(SID), started(1, T1), context(1, T1, "m")];
        lines.extend(prompt(2, "run the tests"));
        lines.extend(said(3, "Running."));
        lines.extend(prompt(5, "only the fast ones"));
        lines.push(complete(6, T1, Some("Done.")));
        let got = read(&lines).0;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].turn.user, "only the fast ones");
        assert_eq!(got[0].started, ms(2), "the turn began at its first prompt");
    }

    /// A blocking Stop hook's reason goes back to the model as a `<hook_prompt>` user message
    /// in the same turn: no prompt, no new turn; the answer is the last one.
    #[test]
    fn a_stop_hooks_continuation_stays_in_its_turn() {
        let mut lines = vec![meta(SID), started(1, T1), context(1, T1, "m")];
        lines.extend(prompt(2, "fix the build"));
        lines.extend(said(3, "The build passes."));
        lines.push(user_item(
            4,
            "<hook_prompt hook_run_id=\"stop:0:/h/hooks.json\">run the tests too</hook_prompt>",
        ));
        lines.extend(said(5, "Tests pass too."));
        lines.push(complete(6, T1, Some("Tests pass too.")));
        let got = turns(&lines);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            (got[0].user.as_str(), got[0].assistant.as_str()),
            ("fix the build", "Tests pass too.")
        );
        assert_eq!(got[0].feedback, None);
    }

    /// 0.63 to 0.77: no task events and no turn ids; each `user_message` begins a turn (the
    /// review prompt 0.77 writes twice once), the model is the latest `turn_context`'s.
    #[test]
    fn without_task_events_each_prompt_begins_a_turn() {
        let user = |second: u32, text: &str| {
            at(
                second,
                "event_msg",
                json!({"type": "user_message", "message": text, "images": []}),
            )
        };
        let lines = vec![
            meta("019b55c1-d022-7061-bbb9-b0c90708472b"),
            user_item(1, "<environment_context>\n</environment_context>"),
            user_item(1, "first"),
            user(1, "first"),
            at(
                1,
                "turn_context",
                json!({"cwd": "/w", "model": "gpt-5.1-codex-max"}),
            ),
            said(2, "one")[1].clone(),
            user(3, "A"),
            at(
                3,
                "turn_context",
                json!({"cwd": "/w", "model": "gpt-5.2-codex"}),
            ),
            said(4, "two")[1].clone(),
            user(5, "A"),
            said(6, "three")[1].clone(),
            at(
                7,
                "event_msg",
                json!({"type": "turn_aborted", "reason": "interrupted"}),
            ),
            at(8, "event_msg", json!({"type": "entered_review_mode"})),
            user(8, "Review the changes"),
            user(8, "Review the changes"),
            at(9, "event_msg", json!({"type": "exited_review_mode"})),
            user_item(
                9,
                "<user_action>\n  <context>User initiated a review task.</context>",
            ),
            user(10, "fix them"),
            said(11, "fixed")[1].clone(),
        ];
        let (got, mut reader) = read(&lines);
        let seen: Vec<_> = got
            .iter()
            .map(|t| {
                let t = &t.turn;
                (
                    t.user.as_str(),
                    t.assistant.as_str(),
                    t.model.as_deref(),
                    t.interrupted,
                    t.ts,
                )
            })
            .collect();
        let (m1, m2) = (Some("gpt-5.1-codex-max"), Some("gpt-5.2-codex"));
        assert_eq!(
            seen,
            [
                ("first", "one", m1, false, ms(2)),
                ("A", "two", m2, false, ms(4)),
                ("A", "three", m2, true, ms(7)),
                ("Review the changes", "", m2, false, ms(9)),
            ]
        );
        assert!(got
            .iter()
            .all(|t| t.turn.turn_id.is_none() && t.turn.complete));
        let last = reader.take_open().unwrap();
        assert_eq!(
            (last.turn.user.as_str(), last.turn.complete),
            ("fix them", false)
        );
        assert_eq!(last.turn.assistant, "fixed");
        assert!(reader.take_open().is_none());
    }

    /// Before the envelope: bare items without times or turn ids, the session on the first
    /// line, prompts told from injected context by their text, reasoning as `reasoning_text`.
    #[test]
    fn rollouts_before_the_envelope() {
        let lines: Vec<String> = [
            json!({"id": "40cb3c9c-9557-4cb0-b9cf-f6661872da35",
                   "timestamp": "2025-08-31T11:51:11.655Z", "instructions": null}),
            json!({"record_type": "state"}),
            json!({"type": "message", "id": null, "role": "user", "content": [
                {"type": "input_text", "text": "<user_instructions>\n\n# Rules</user_instructions>"}]}),
            json!({"type": "message", "id": null, "role": "user", "content": [
                {"type": "input_text", "text": "<environment_context>\n</environment_context>"}]}),
            json!({"type": "message", "id": null, "role": "user", "content": [
                {"type": "input_text", "text": "what is the date today"}]}),
            json!({"type": "function_call", "id": null, "name": "shell",
                   "arguments": "{\"command\":[\"zsh\",\"-c\",\"date\"]}", "call_id": "call_a"}),
            json!({"type": "function_call_output", "call_id": "call_a",
                   "output": "{\"output\":\"2025-08-31\\n\",\"metadata\":{\"exit_code\":0}}"}),
            json!({"type": "reasoning", "id": "", "summary": [], "content": [
                {"type": "reasoning_text", "text": "Use the system date."}]}),
            json!({"type": "message", "id": null, "role": "assistant", "content": [
                {"type": "output_text", "text": "It is 2025-08-31."}]}),
            json!({"record_type": "state"}),
            json!({"type": "message", "id": null, "role": "user", "content": [
                {"type": "input_text", "text": "and tomorrow?"}]}),
        ]
        .iter()
        .map(Value::to_string)
        .collect();
        let (got, mut reader) = read(&lines);
        assert_eq!(
            reader.session(),
            Some("40cb3c9c-9557-4cb0-b9cf-f6661872da35")
        );
        assert_eq!(got.len(), 1);
        let turn = &got[0].turn;
        assert_eq!(
            (
                turn.turn_id.as_deref(),
                turn.user.as_str(),
                turn.assistant.as_str()
            ),
            (None, "what is the date today", "It is 2025-08-31.")
        );
        assert_eq!(turn.reasoning.as_deref(), Some("Use the system date."));
        assert_eq!(turn.tool_calls[0].tool_name, "shell");
        assert_eq!(
            turn.tool_calls[0].input,
            r#"{"command":["zsh","-c","date"]}"#
        );
        assert!(turn.tool_calls[0]
            .output
            .starts_with("{\"output\":\"2025-08-31"));
        assert_eq!((turn.ts, got[0].started), (None, None));
        assert_eq!(reader.take_open().unwrap().turn.user, "and tomorrow?");
    }

    /// A fork's rollout: its own `session_meta`, then the parent's lines (its `session_meta`
    /// and turns, recorded by the hooks under the parent), then its own turns.
    #[test]
    fn a_forks_copied_turns_are_left_out() {
        let parent = "019d6d60-0000-7000-8000-000000000001";
        let parent_turn = "019d6d60-1111-7000-8000-000000000002";
        let mut lines = vec![meta(SID), meta(parent), started(1, parent_turn)];
        lines.extend(prompt(1, "the parent's prompt"));
        lines.extend(said(1, "the parent's answer"));
        lines.push(complete(1, parent_turn, Some("the parent's answer")));
        lines.push(started(5, T1));
        lines.extend(prompt(5, "the fork's prompt"));
        lines.push(complete(6, T1, Some("the fork's answer")));
        let (got, reader) = read(&lines);
        let ids: Vec<_> = got.iter().map(|t| t.turn.turn_id.as_deref()).collect();
        assert_eq!(ids, [Some(T1)]);
        assert_eq!(reader.copied_turns(), 1);
        assert_eq!(reader.session(), Some(SID), "the file's own session");
        assert_eq!(reader.cli_version(), Some("0.118.0"));
    }

    /// The first ten calls, each input compact JSON cut so that it parses, each output cut;
    /// `apply_patch`'s free-text input, a local shell's action, an output given as parts.
    #[test]
    fn tool_calls_are_capped_and_cut() {
        let mut lines = vec![meta(SID), started(1, T1)];
        lines.extend(prompt(1, "edit"));
        lines.push(at(
            2,
            "response_item",
            json!({"type": "custom_tool_call",
            "status": "completed", "call_id": "p", "name": "apply_patch",
            "input": "*** Begin Patch\n*** End Patch\n"}),
        ));
        lines.push(at(
            2,
            "response_item",
            json!({"type": "custom_tool_call_output",
            "call_id": "p", "output": [{"type": "input_text", "text": "Success."}]}),
        ));
        lines.push(at(
            2,
            "response_item",
            json!({"type": "local_shell_call", "call_id": "l",
            "status": "completed", "action": {"type": "exec", "command": ["ls"]}}),
        ));
        for i in 0..12 {
            let args = json!({"cmd": "x".repeat(5000)}).to_string();
            lines.push(at(
                3,
                "response_item",
                json!({"type": "function_call",
                "name": format!("t{i}"), "arguments": args, "call_id": format!("c{i}")}),
            ));
            lines.push(at(
                3,
                "response_item",
                json!({"type": "function_call_output",
                "call_id": format!("c{i}"), "output": "é".repeat(3000)}),
            ));
        }
        lines.push(complete(4, T1, None));
        let got = turns(&lines);
        let calls = &got[0].tool_calls;
        assert_eq!(calls.len(), MAX_TOOL_CALLS);
        assert_eq!(
            (
                calls[0].tool_name.as_str(),
                calls[0].input.as_str(),
                calls[0].output.as_str()
            ),
            (
                "apply_patch",
                r#""*** Begin Patch\n*** End Patch\n""#,
                "Success."
            )
        );
        assert_eq!(calls[1].tool_name, "local_shell");
        assert_eq!(calls[1].input, r#"{"type":"exec","command":["ls"]}"#);
        assert_eq!(calls[9].tool_name, "t7");
        for call in &calls[2..] {
            assert!(call.input.chars().count() <= MAX_TOOL_INPUT_CHARS);
            serde_json::from_str::<Value>(&call.input).unwrap();
            assert_eq!(call.output.chars().count(), MAX_TOOL_OUTPUT_CHARS);
        }
    }

    /// The turn still going at the end of the file: taken once, incomplete; its id known.
    #[test]
    fn the_open_turn_is_taken_at_the_end() {
        let mut lines = vec![meta(SID), started(1, T1), context(1, T1, "m")];
        lines.extend(prompt(2, "go on"));
        lines.push(at(
            3,
            "response_item",
            json!({"type": "function_call", "name": "exec_command",
            "arguments": "{}", "call_id": "c"}),
        ));
        let (got, mut reader) = read(&lines);
        assert!(got.is_empty());
        assert_eq!(reader.open_turn_id(), Some(T1));
        let open = reader.take_open().unwrap();
        assert_eq!(
            (
                open.turn.turn_id.as_deref(),
                open.turn.complete,
                open.turn.ts,
                open.started
            ),
            (Some(T1), false, ms(3), ms(2))
        );
        assert!(reader.take_open().is_none());
        // A task that has shown nothing yet is no turn.
        let mut reader = CodexTurnReader::new(Some(SID.into()));
        assert!(reader.feed(started(1, T2).as_bytes()).is_none());
        assert!(reader.take_open().is_none());
    }

    #[test]
    fn lines_that_are_no_json_or_of_no_interest_change_nothing() {
        let mut reader = CodexTurnReader::new(Some(SID.into()));
        for line in [
            "",
            "   ",
            "{",
            "not json",
            "[1,2]",
            "{\"type\":\"event_msg\",\"payload\":7}",
        ] {
            assert!(reader.feed(line.as_bytes()).is_none(), "{line}");
        }
        assert_eq!(reader.session(), Some(SID), "the fallback");
        assert!(reader.take_open().is_none());
        assert!(is_injected(
            "  <environment_context>\n</environment_context>"
        ));
        assert!(!is_injected("why does <environment_context> matter?"));
    }

    /// Codex 0.171's shapes (a run of the end-to-end suite's blocking Stop hook): no
    /// `user_message` event, the prompt an `item_completed` `UserMessage`; the hook's reason a
    /// `HookPrompt` item and a `<hook_prompt>` message in the same turn; new line types.
    #[test]
    fn codex_0_171_prompt_is_the_completed_user_message_item() {
        let turn = "01a250e6-4a5b-7062-bcaf-a6acbb4080df";
        let completed = |second: u32, item: Value| {
            at(
                second,
                "event_msg",
                json!({"type": "item_completed",
                "thread_id": "01a250e6-4a1e-7432-95e2-cc386aefcdb2", "turn_id": turn,
                "item": item}),
            )
        };
        let answer = |second: u32| {
            vec![
                completed(
                    second,
                    json!({"type": "AgentMessage", "id": "msg_0",
                    "content": [{"type": "Text", "text": "The build passes."}]}),
                ),
                at(
                    second,
                    "response_item",
                    json!({"type": "message", "status": "completed",
                    "id": "msg_0", "role": "assistant", "content": [{"type": "output_text",
                    "text": "The build passes.", "annotations": []}]}),
                ),
                at(
                    second,
                    "token_usage_record",
                    json!({"turn_id": turn, "response_id": "resp_0"}),
                ),
            ]
        };
        let mut lines = vec![
            at(
                0,
                "session_meta",
                json!({"session_id": "01a250e6-4a1e-7432-95e2-cc386aefcdb2",
                "id": "01a250e6-4a1e-7432-95e2-cc386aefcdb2", "cwd": "/p",
                "originator": "codex_exec", "cli_version": "0.171.0", "source": "exec"}),
            ),
            at(
                1,
                "event_msg",
                json!({"type": "task_started", "turn_attribution": {
                "turn_id": turn, "turn_trigger": "exec"}, "turn_id": turn}),
            ),
            user_item(
                1,
                "<environment_context>\n  <cwd>/p</cwd>\n</environment_context>",
            ),
            at(1, "world_state", json!({"full": true, "state": {}})),
            context(1, turn, "gpt-5-codex"),
            user_item(2, "fix the build"),
            completed(
                2,
                json!({"type": "UserMessage", "id": "u1",
                "content": [{"type": "text", "text": "fix the build", "text_elements": []}]}),
            ),
        ];
        lines.extend(answer(3));
        lines.push(user_item(
            4,
            "<hook_prompt hook_run_id=\"stop:10:/h/.codex/hooks.json\">2 tests fail</hook_prompt>",
        ));
        lines.push(completed(
            4,
            json!({"type": "HookPrompt", "id": "m2",
            "fragments": [{"text": "2 tests fail", "hookRunId": "stop:10:/h/.codex/hooks.json"}]}),
        ));
        lines.extend(answer(5));
        lines.push(complete(6, turn, Some("The build passes.")));
        let (got, reader) = read(&lines);
        assert_eq!(got.len(), 1, "{got:?}");
        let t = &got[0].turn;
        assert_eq!(
            (
                t.turn_id.as_deref(),
                t.user.as_str(),
                t.response(),
                t.model.as_deref()
            ),
            (
                Some(turn),
                "fix the build",
                Some("The build passes."),
                Some("gpt-5-codex")
            )
        );
        assert_eq!(
            (got[0].started, t.ts, t.feedback.as_deref()),
            (ms(2), ms(6), None)
        );
        assert_eq!(reader.cli_version(), Some("0.171.0"));
    }

    /// The real Codex 0.171 rollout the end-to-end suite recorded, against the hook payloads
    /// of the same run: the turn id is the hooks' `turn_id`, the prompt `UserPromptSubmit`'s
    /// `prompt`, the answer `Stop`'s `last_assistant_message`.
    #[test]
    fn codex_0_171_turn_is_the_hooks_turn() {
        let fixture = |name: &str| {
            let path = format!(
                "{}/tests/fixtures/payloads/{name}",
                env!("CARGO_MANIFEST_DIR")
            );
            std::fs::read_to_string(path).expect("a recorded fixture")
        };
        let stop: Value = serde_json::from_str(&fixture("codex-0.171-stop.json")).unwrap();
        let prompt: Value =
            serde_json::from_str(&fixture("codex-0.171-user-prompt-submit.json")).unwrap();
        let rollout = fixture("codex-0.171-rollout.jsonl");
        let mut reader = CodexTurnReader::new(Some(stop["session_id"].as_str().unwrap().into()));
        let got: Vec<CodexTurn> = rollout
            .lines()
            .filter_map(|l| reader.feed(l.as_bytes()))
            .collect();
        assert_eq!(got.len(), 1, "{got:?}");
        let turn = &got[0].turn;
        assert_eq!(turn.turn_id.as_deref(), stop["turn_id"].as_str());
        assert_eq!(turn.turn_id.as_deref(), prompt["turn_id"].as_str());
        assert_eq!(Some(turn.user.as_str()), prompt["prompt"].as_str());
        assert_eq!(turn.response(), stop["last_assistant_message"].as_str());
        let calls: Vec<_> = turn
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.tool_name.as_str(),
                    c.output.lines().last().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(calls.len(), 3, "{calls:?}");
        assert_eq!(calls[0], ("exec_command", "hi"));
        assert!(
            calls[2].1.contains("Blocked by cmstore safety gate"),
            "{calls:?}"
        );
        assert!(turn.complete && !turn.interrupted && !turn.failed);
    }
}

/// The real rollouts of `shared/fixtures/real-more/codex` (Codex 0.63 to 0.121 and the format
/// before the envelope; skipped when that folder is absent, e.g. in a standalone checkout),
/// against what a few lines of plain JSON reading count in each.
#[cfg(test)]
mod real_tests {
    use std::collections::{HashMap, HashSet};
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    use super::*;

    fn fixtures() -> Option<PathBuf> {
        super::super::real_transcript_tests::shared_fixtures("real-more/codex")
    }

    fn rollouts(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rollouts(&path, found);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                found.push(path);
            }
        }
    }

    /// All of a file's turns: the ended ones, then the one still going.
    fn read_all(bytes: &[u8]) -> Vec<CodexTurn> {
        let mut reader = CodexTurnReader::new(None);
        let mut turns: Vec<CodexTurn> = bytes
            .split(|&b| b == b'\n')
            .filter_map(|line| reader.feed(line))
            .collect();
        turns.extend(reader.take_open());
        turns
    }

    /// What the file says of its turns, read independently of the reader: with task events,
    /// a turn is a `task_started` whose `user_message` came (a `!command` or a compaction has
    /// none); without, each `user_message` (one written twice in a row counted once); before
    /// the envelope, each `user` message that is not a tag or `# AGENTS.md` block.
    #[derive(Default)]
    struct Expected {
        ids: Vec<Option<String>>,
        aborted: HashSet<String>,
        answers: HashMap<String, Option<String>>,
    }

    fn expected(bytes: &[u8]) -> Expected {
        let lines: Vec<Value> = bytes
            .split(|&b| b == b'\n')
            .filter_map(|l| serde_json::from_slice(l).ok())
            .collect();
        let event =
            |v: &Value, kind: &str| v["type"] == "event_msg" && v["payload"]["type"] == kind;
        let id = |v: &Value| v["payload"]["turn_id"].as_str().map(str::to_owned);
        let mut out = Expected::default();
        if lines.iter().any(|v| event(v, "task_started")) {
            let mut current = None;
            for v in &lines {
                if event(v, "task_started") {
                    current = id(v);
                } else if event(v, "user_message") {
                    out.ids.extend(current.take().map(Some));
                } else if event(v, "turn_aborted") {
                    out.aborted.extend(id(v));
                } else if event(v, "task_complete") {
                    let answer = v["payload"]["last_agent_message"]
                        .as_str()
                        .map(str::to_owned);
                    out.answers.insert(id(v).unwrap(), answer);
                }
            }
        } else if lines.iter().any(|v| v.get("payload").is_some()) {
            let (mut previous, mut answered) = (None, false);
            for v in &lines {
                let p = &v["payload"];
                if event(v, "user_message") {
                    if previous != p["message"].as_str() || answered {
                        out.ids.push(None);
                    }
                    (previous, answered) = (p["message"].as_str(), false);
                } else if v["type"] == "response_item"
                    && (p["role"] == "assistant"
                        || p["type"].as_str().is_some_and(|t| t.ends_with("_call")))
                {
                    answered = true;
                }
            }
        } else {
            for v in &lines {
                let text = v["content"][0]["text"].as_str().unwrap_or_default();
                if v["role"] == "user" && !text.starts_with('<') && !text.starts_with("# AGENTS.md")
                {
                    out.ids.push(None);
                }
            }
        }
        out
    }

    #[test]
    fn real_rollouts_give_the_turns_their_lines_show() {
        let Some(dir) = fixtures() else { return };
        let mut files = Vec::new();
        rollouts(&dir, &mut files);
        files.sort();
        assert!(files.len() >= 10, "{files:?}");
        let (mut total, mut keyed) = (0, 0);
        for file in &files {
            let name = file.strip_prefix(&dir).unwrap().display().to_string();
            let bytes = std::fs::read(file).unwrap();
            let turns = read_all(&bytes);
            let want = expected(&bytes);
            let ids: Vec<Option<String>> = turns.iter().map(|t| t.turn.turn_id.clone()).collect();
            eprintln!("{name}: {} turns", turns.len());
            assert_eq!(ids, want.ids, "{name}: the turns and their ids");
            for CodexTurn { turn, started } in &turns {
                let context = format!("{name}: {:?}", turn.turn_id);
                for tag in [
                    "<environment_context>",
                    "<user_instructions>",
                    "AGENTS.md instructions",
                    "<permissions instructions>",
                    "<turn_aborted>",
                    "<user_shell_command>",
                    "<user_action>",
                    "<hook_prompt",
                ] {
                    assert!(
                        !turn.user.contains(tag),
                        "{context}: an injected prompt {:?}",
                        turn.user
                    );
                }
                assert!(!turn.user.trim().is_empty(), "{context}: no prompt");
                if let Some(id) = &turn.turn_id {
                    keyed += 1;
                    assert_eq!(turn.interrupted, want.aborted.contains(id), "{context}");
                    if let Some(answer) = want.answers.get(id) {
                        assert_eq!(turn.response(), answer.as_deref(), "{context}: the answer");
                    }
                    assert!(turn.model.is_some(), "{context}: no model");
                }
                assert!(
                    turn.ts >= *started,
                    "{context}: {:?} before {started:?}",
                    turn.ts
                );
                assert!(turn.tool_calls.len() <= MAX_TOOL_CALLS);
            }
            total += turns.len();
        }
        assert!(
            total >= 70 && keyed >= 10,
            "{total} turns, {keyed} with an id"
        );
    }

    /// The 0.77 session was committed eight times as it grew, each a prefix of the next: read
    /// up to a commit's size, the turns that had ended are the first of the whole file's.
    #[test]
    fn a_growing_rollout_gives_its_ended_turns_the_same() {
        let Some(dir) = fixtures() else { return };
        let path = dir.join(
            "local-voice-assistant-codex/sessions/2025/12/25/\
             rollout-2025-12-25T22-45-23-019b55c1-d022-7061-bbb9-b0c90708472b.jsonl",
        );
        let bytes = std::fs::read(path).unwrap();
        let whole = read_all(&bytes);
        for size in [1_753_196, 1_813_719, 1_882_339, 1_912_925] {
            let mut reader = CodexTurnReader::new(None);
            let ended: Vec<CodexTurn> = bytes[..size]
                .split(|&b| b == b'\n')
                .filter_map(|line| reader.feed(line))
                .collect();
            assert!(ended.len() > 40, "{size}: {}", ended.len());
            assert_eq!(ended[..], whole[..ended.len()], "{size}");
            let open = reader.take_open().map(|t| t.turn);
            assert!(open.is_none_or(|t| !t.complete), "{size}");
        }
    }
}
