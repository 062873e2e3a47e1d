//! Turn assembly: records in, `{user, assistant, reasoning, tool calls}` turns out.
//!
//! A turn is one user prompt and everything up to the next prompt. It is *complete* when the
//! next prompt starts or a [`Record::TurnEnd`] arrives, and only if the assistant produced
//! something (text, reasoning or a tool call). The turn still open at the end of the input is
//! kept as an [`OpenTurn`], which the cursor persists so that the next hook, reading only new
//! bytes, continues it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::record::Record;
use super::{ToolCallRecord, Turn};
use crate::model::shorten::{compact_json, cut_text};

/// Tool calls kept per turn (ContextManager's limit).
pub const MAX_TOOL_CALLS: usize = 10;

pub use super::record::{MAX_TOOL_INPUT_CHARS, MAX_TOOL_OUTPUT_CHARS};

/// Bytes of Stop hook feedback kept per turn: a hook that blocks every Stop (Claude Code lets
/// it 8 times in a row, and again after each answer) must not grow the cursor and each Stop
/// line without bound; the first feedbacks are kept, the later dropped.
pub const MAX_FEEDBACK_BYTES: usize = 4 * MAX_TOOL_OUTPUT_CHARS;

/// A turn whose prompt has been read but which has not ended yet.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenTurn {
    /// The prompt's id.
    pub turn_id: Option<String>,
    /// Byte offset of the prompt's line in the transcript.
    pub start_offset: u64,
    /// The prompt text.
    pub user: String,
    /// Text of the latest assistant message with non-empty text.
    pub assistant: String,
    /// Message id of `assistant`, to join the parts of a message split over several lines.
    pub assistant_message_id: Option<String>,
    /// Latest non-empty reasoning.
    pub reasoning: Option<String>,
    /// The first [`MAX_TOOL_CALLS`] tool calls.
    pub tool_calls: Vec<ToolCallRecord>,
    /// The id of each of `tool_calls` (same index), to pair a result with its call (absent in
    /// cursors written before results were kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_ids: Vec<Option<String>>,
    /// The model of the latest assistant line (absent in cursors written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The time of the turn's latest line that names one (epoch ms; absent in cursors
    /// written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ts: Option<i64>,
    /// What blocking Stop hooks told the agent during the turn, oldest first, joined by
    /// newlines, at most `MAX_FEEDBACK_BYTES` (absent in cursors written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// The reason a Stop hook blocked the turn's end with ([`Record::StopBlocked`]): the
    /// user message with this text, when it comes, is the hook's feedback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// The latest thing in the turn was an API error ([`Record::ApiError`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

impl OpenTurn {
    /// True when the turn has anything to record: what the assistant produced, or the API
    /// error that ended it.
    pub fn has_output(&self) -> bool {
        !self.assistant.trim().is_empty()
            || self.reasoning.is_some()
            || !self.tool_calls.is_empty()
            || self.failed
    }

    /// The turn as callers see it.
    pub fn to_turn(&self, complete: bool) -> Turn {
        Turn {
            turn_id: self.turn_id.clone(),
            user: self.user.clone(),
            assistant: self.assistant.clone(),
            reasoning: self.reasoning.clone(),
            tool_calls: self.tool_calls.clone(),
            complete,
            model: self.model.clone(),
            interrupted: false,
            failed: self.failed,
            ts: self.last_ts,
            feedback: self.feedback.clone(),
        }
    }

    /// Keeps a Stop hook's feedback: the turn goes on (at most [`MAX_TOOL_OUTPUT_CHARS`]
    /// characters of each, as of a tool's output, and [`MAX_FEEDBACK_BYTES`] in all).
    fn add_feedback(&mut self, text: &str) {
        let text = cut_text(text, MAX_TOOL_OUTPUT_CHARS);
        match &mut self.feedback {
            Some(all) if all.len() + 1 + text.len() > MAX_FEEDBACK_BYTES => {}
            Some(all) => {
                all.push('\n');
                all.push_str(&text);
            }
            None => self.feedback = Some(text),
        }
    }

    /// Notes that a line of the turn was written at `ts`, if it says.
    fn seen_at(&mut self, ts: Option<i64>) {
        self.last_ts = self.last_ts.max(ts);
    }

    fn add_text(&mut self, message_id: Option<String>, text: String) {
        if text.trim().is_empty() {
            return;
        }
        let same_message = message_id.is_some() && message_id == self.assistant_message_id;
        if same_message && !self.assistant.is_empty() {
            self.assistant.push('\n');
            self.assistant.push_str(&text);
        } else {
            self.assistant = text;
            self.assistant_message_id = message_id;
        }
    }

    fn add_tool(&mut self, id: Option<String>, name: String, input: &Value) {
        // A message written again whole (Gemini CLI's, as its calls run) names its calls again.
        if id.is_some() && self.tool_ids.contains(&id) {
            return;
        }
        if self.tool_calls.len() < MAX_TOOL_CALLS {
            // A cursor from before ids were kept: its calls have none.
            self.tool_ids.resize(self.tool_calls.len(), None);
            self.tool_ids.push(id);
            self.tool_calls.push(ToolCallRecord {
                tool_name: name,
                input: compact_json(input, MAX_TOOL_INPUT_CHARS),
                output: String::new(),
            });
        }
    }

    /// Puts a result into the call it answers (none: a call past [`MAX_TOOL_CALLS`]).
    fn add_result(&mut self, id: &str, output: &str) {
        let index = self.tool_ids.iter().position(|c| c.as_deref() == Some(id));
        if let Some(call) = index.and_then(|i| self.tool_calls.get_mut(i)) {
            call.output = cut_text(output, MAX_TOOL_OUTPUT_CHARS);
        }
    }
}

/// Folds records into turns, starting from a (possibly carried-over) open turn.
#[derive(Debug, Default)]
pub struct Assembler {
    open: Option<OpenTurn>,
    completed: Vec<Turn>,
    /// The time of the line being fed ([`Assembler::at`]).
    line_ts: Option<i64>,
}

impl Assembler {
    /// An assembler that continues `open`.
    pub fn new(open: Option<OpenTurn>) -> Self {
        Assembler {
            open,
            completed: Vec::new(),
            line_ts: None,
        }
    }

    /// Says when the line whose records are fed next was written (`None`: it does not say).
    pub fn at(&mut self, ts: Option<i64>) {
        self.line_ts = ts;
    }

    /// Feeds the records of the line that starts at byte `offset`.
    pub fn feed(&mut self, offset: u64, record: Record) {
        let record = self.as_feedback(record);
        let opens = matches!(record, Record::UserPrompt { .. });
        if let Some(open) = self.open.as_mut().filter(|_| !opens) {
            open.seen_at(self.line_ts);
        }
        match record {
            Record::UserPrompt { id, text } => {
                self.close();
                self.open = Some(OpenTurn {
                    turn_id: id,
                    start_offset: offset,
                    user: text,
                    last_ts: self.line_ts,
                    ..OpenTurn::default()
                });
            }
            Record::TurnEnd => self.close(),
            Record::ApiError => {
                if let Some(open) = &mut self.open {
                    open.failed = true;
                }
            }
            Record::Interrupted => {
                if let Some(open) = self.open.take() {
                    self.completed.push(Turn {
                        interrupted: true,
                        ..open.to_turn(true)
                    });
                }
            }
            Record::Model { name } => {
                if let Some(open) = &mut self.open {
                    open.model = Some(name);
                }
            }
            // Output before any prompt (a cursor that started mid-turn) or after the turn
            // ended belongs to no turn we can name: dropped.
            Record::AssistantText { message_id, text } => {
                if let Some(open) = &mut self.open {
                    open.failed &= text.trim().is_empty();
                    open.add_text(message_id, text);
                }
            }
            Record::Reasoning { text } => {
                if let Some(open) = self.open.as_mut().filter(|_| !text.trim().is_empty()) {
                    open.reasoning = Some(text);
                }
            }
            Record::ToolUse { id, name, input } => {
                if let Some(open) = &mut self.open {
                    open.failed = false;
                    open.add_tool(id, name, &input);
                }
            }
            Record::ToolResult { id, output } => {
                if let Some(open) = &mut self.open {
                    open.add_result(&id, &output);
                }
            }
            Record::StopBlocked { reason } => {
                if let Some(open) = &mut self.open {
                    open.blocked_by = Some(reason);
                }
            }
            // Not a prompt: the turn it blocked from ending goes on. Before any prompt (a
            // cursor that started mid-turn) it belongs to no turn we can name.
            Record::HookFeedback { text } => {
                if let Some(open) = &mut self.open {
                    open.add_feedback(&text);
                }
            }
            // A local command (`/model`, `!ls`) opened a turn the model never answered.
            Record::LocalOutput => {
                if self.open.as_ref().is_some_and(|o| !o.has_output()) {
                    self.open = None;
                }
            }
        }
    }

    /// The user message that carries the reason a Stop hook blocked the open turn with, as
    /// the hook's feedback; any other record as it is.
    fn as_feedback(&mut self, record: Record) -> Record {
        let Some(open) = self.open.as_mut() else {
            return record;
        };
        match record {
            Record::UserPrompt { text, .. }
                if open.blocked_by.as_deref() == Some(text.as_str()) =>
            {
                open.blocked_by = None;
                Record::HookFeedback { text }
            }
            other => other,
        }
    }

    fn close(&mut self) {
        if let Some(open) = self.open.take().filter(OpenTurn::has_output) {
            self.completed.push(open.to_turn(true));
        }
    }

    /// The turns completed so far (oldest first), taken: a long transcript read whole
    /// (`cmstore import`) does not keep them all.
    pub fn take_completed(&mut self) -> Vec<Turn> {
        std::mem::take(&mut self.completed)
    }

    /// The turn still open.
    pub fn open(&self) -> Option<&OpenTurn> {
        self.open.as_ref()
    }

    /// Completed turns (oldest first) and the turn still open.
    pub fn finish(self) -> (Vec<Turn>, Option<OpenTurn>) {
        (self.completed, self.open)
    }
}

/// Parses a whole transcript at once: its complete turns, then the open trailing turn (with
/// `complete: false`) if it has any output. For tests and one-off tools; hooks use the
/// incremental [`Tracker`](crate::files::transcript::Tracker).
pub fn assemble(bytes: &[u8], options: super::ParseOptions) -> Vec<Turn> {
    let mut assembler = Assembler::default();
    let mut offset = 0u64;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let value = line
            .ends_with(b"\n")
            .then(|| super::parse::parse_value(line))
            .flatten();
        if let Some(value) = value {
            assembler.at(super::parse::line_time(&value));
            for record in super::parse::records_of(&value, options) {
                assembler.feed(offset, record);
            }
        }
        offset += line.len() as u64;
    }
    let (mut turns, open) = assembler.finish();
    turns.extend(open.filter(OpenTurn::has_output).map(|o| o.to_turn(false)));
    turns
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt(id: &str) -> Record {
        Record::UserPrompt {
            id: Some(id.into()),
            text: format!("prompt {id}"),
        }
    }

    fn text(message: &str, text: &str) -> Record {
        Record::AssistantText {
            message_id: Some(message.into()),
            text: text.into(),
        }
    }

    fn run(records: Vec<Record>) -> (Vec<Turn>, Option<OpenTurn>) {
        let mut assembler = Assembler::default();
        for (i, record) in records.into_iter().enumerate() {
            assembler.feed(i as u64 * 10, record);
        }
        assembler.finish()
    }

    #[test]
    fn next_prompt_completes_a_turn_and_keeps_the_last_message() {
        let (turns, open) = run(vec![
            prompt("a"),
            text("m1", "first"),
            text("m2", "second"),
            text("m3", "  "),
            prompt("b"),
        ]);
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].turn_id.as_deref(), Some("a"));
        assert_eq!(turns[0].user, "prompt a");
        assert_eq!(turns[0].assistant, "second");
        assert!(turns[0].complete);
        let open = open.unwrap();
        assert_eq!(open.turn_id.as_deref(), Some("b"));
        assert_eq!(open.start_offset, 40);
    }

    #[test]
    fn a_stop_hooks_feedback_stays_in_its_turn_and_is_bounded() {
        let feedback = |n: usize| Record::HookFeedback {
            text: format!("Stop hook feedback: {n} {}", "x".repeat(1500)),
        };
        let mut records = vec![prompt("a"), text("m1", "first answer")];
        records.extend((0..20).map(feedback));
        records.push(text("m2", "last answer"));
        let (turns, open) = run(records);
        assert!(turns.is_empty(), "the feedback began no turn: {turns:?}");
        let open = open.unwrap();
        assert_eq!(open.turn_id.as_deref(), Some("a"));
        assert_eq!(open.assistant, "last answer");
        let kept = open.feedback.unwrap();
        assert!(kept.len() <= MAX_FEEDBACK_BYTES, "{}", kept.len());
        assert!(kept.starts_with("Stop hook feedback: 0 "));
        assert!(
            kept.contains("\nStop hook feedback: 1 "),
            "the next on a line of its own"
        );
    }

    /// Claude Code: a turn whose last word is an API error it gave up on ended `failed`, even
    /// with nothing answered; one that went on after an error did not.
    #[test]
    fn a_turn_an_api_error_ends_is_failed() {
        let (turns, open) = run(vec![
            prompt("a"),
            Record::ApiError,
            prompt("b"),
            text("m1", "working"),
            Record::ApiError,
            text("m2", "recovered"),
            prompt("c"),
            text("m3", "one"),
            Record::ApiError,
        ]);
        let failed: Vec<(&str, bool)> = turns.iter().map(|t| (t.user.as_str(), t.failed)).collect();
        assert_eq!(failed, [("prompt a", true), ("prompt b", false)]);
        assert!(open.unwrap().failed);
    }

    /// Copilot CLI: a blocked Stop's reason comes back as a user message; that message is the
    /// hook's feedback, the one after it (another text) a prompt again. The reason awaited is
    /// carried in the open turn, so a later hook reading on from a cursor still knows it.
    #[test]
    fn the_message_carrying_a_blocked_stops_reason_is_feedback() {
        let blocked = |reason: &str| Record::StopBlocked {
            reason: reason.into(),
        };
        let typed = |id: &str, text: &str| Record::UserPrompt {
            id: Some(id.into()),
            text: text.into(),
        };
        let (turns, open) = run(vec![
            prompt("a"),
            text("m1", "first answer"),
            blocked("2 tests fail"),
        ]);
        assert!(turns.is_empty());
        let mut assembler = Assembler::new(open);
        for record in [
            typed("r", "2 tests fail"),
            text("m2", "fixed"),
            typed("b", "2 tests fail"),
            text("m3", "again?"),
        ] {
            assembler.feed(100, record);
        }
        let (turns, open) = assembler.finish();
        assert_eq!(turns.len(), 1, "{turns:?}");
        assert_eq!(turns[0].user, "prompt a");
        assert_eq!(turns[0].assistant, "fixed");
        assert_eq!(turns[0].feedback.as_deref(), Some("2 tests fail"));
        assert_eq!(
            open.unwrap().user,
            "2 tests fail",
            "typed by a person once the reason came: a prompt"
        );
    }

    #[test]
    fn an_interrupted_turn_is_kept_with_its_prompt_even_unanswered() {
        let (turns, open) = run(vec![
            prompt("a"),
            Record::ToolUse {
                id: None,
                name: "Bash".into(),
                input: json!({}),
            },
            Record::Interrupted,
            prompt("b"),
            Record::Interrupted,
            prompt("c"),
            text("m1", "answered"),
            Record::TurnEnd,
        ]);
        let seen: Vec<(Option<&str>, bool)> = turns
            .iter()
            .map(|t| (t.turn_id.as_deref(), t.interrupted))
            .collect();
        assert_eq!(
            seen,
            [(Some("a"), true), (Some("b"), true), (Some("c"), false)]
        );
        assert_eq!(turns[1].user, "prompt b");
        assert!(open.is_none());
    }

    #[test]
    fn a_turn_is_dated_by_its_latest_line_that_says_when() {
        let mut assembler = Assembler::default();
        for (ts, record) in [
            (Some(10), prompt("a")),
            (Some(20), text("m1", "answer")),
            (None, Record::Reasoning { text: "r".into() }),
            (Some(30), prompt("b")),
            (Some(40), text("m2", "second")),
            (Some(50), Record::TurnEnd),
            (Some(60), text("m3", "after the end")),
        ] {
            assembler.at(ts);
            assembler.feed(0, record);
        }
        let (turns, open) = assembler.finish();
        let times: Vec<_> = turns.iter().map(|t| t.ts).collect();
        assert_eq!(times, [Some(20), Some(50)]);
        assert!(open.is_none());

        // A turn carried over in a cursor goes on from its time; lines without one change
        // nothing.
        let mut assembler = Assembler::new(Some(OpenTurn {
            turn_id: Some("c".into()),
            last_ts: Some(70),
            ..OpenTurn::default()
        }));
        assembler.at(None);
        assembler.feed(0, text("m4", "late"));
        assert_eq!(assembler.open().unwrap().to_turn(true).ts, Some(70));
    }

    #[test]
    fn parts_of_one_message_are_joined() {
        let (turns, _) = run(vec![
            prompt("a"),
            text("m1", "part one"),
            Record::ToolUse {
                id: None,
                name: "Bash".into(),
                input: json!({}),
            },
            text("m1", "part two"),
            Record::TurnEnd,
        ]);
        assert_eq!(turns[0].assistant, "part one\npart two");
    }

    #[test]
    fn turns_without_output_are_dropped_and_output_after_the_end_is_ignored() {
        let (turns, open) = run(vec![
            text("m0", "orphan before any prompt"),
            prompt("a"),
            prompt("b"),
            text("m1", "answer"),
            Record::TurnEnd,
            text("m2", "late"),
        ]);
        assert_eq!(turns.len(), 1);
        assert_eq!(turns[0].turn_id.as_deref(), Some("b"));
        assert_eq!(turns[0].assistant, "answer");
        assert!(open.is_none());
    }

    #[test]
    fn results_go_to_their_calls_shortened() {
        let call = |id: &str| Record::ToolUse {
            id: Some(id.into()),
            name: format!("tool {id}"),
            input: json!({}),
        };
        let result = |id: &str, output: String| Record::ToolResult {
            id: id.into(),
            output,
        };
        let (turns, _) = run(vec![
            prompt("a"),
            call("c1"),
            call("c2"),
            result("c2", "two".into()),
            result("c1", "é".repeat(5000)),
            result("unknown", "lost".into()),
            Record::TurnEnd,
            result("c1", "after the end".into()),
        ]);
        let calls = &turns[0].tool_calls;
        assert_eq!(calls[1].output, "two");
        assert_eq!(calls[0].output.chars().count(), MAX_TOOL_OUTPUT_CHARS);
        assert!(calls[0].output.ends_with(crate::model::shorten::ELLIPSIS));
        assert!(calls[0].output.starts_with("éé"));
    }

    #[test]
    fn results_reach_calls_of_a_cursor_that_kept_no_ids() {
        let mut assembler = Assembler::new(Some(OpenTurn {
            turn_id: Some("a".into()),
            tool_calls: vec![ToolCallRecord::default()],
            ..OpenTurn::default()
        }));
        assembler.feed(
            0,
            Record::ToolUse {
                id: Some("c2".into()),
                name: "second".into(),
                input: json!({}),
            },
        );
        assembler.feed(
            1,
            Record::ToolResult {
                id: "c2".into(),
                output: "out".into(),
            },
        );
        let open = assembler.open().unwrap();
        assert_eq!(open.tool_calls[0].output, "");
        assert_eq!(open.tool_calls[1].output, "out");
    }

    #[test]
    fn a_local_command_drops_only_a_turn_without_output() {
        let (turns, open) = run(vec![
            prompt("a"),
            text("m1", "answer"),
            // Kept: the turn has an answer.
            Record::LocalOutput,
            prompt("model-command"),
            // Dropped: `/model` was no prompt.
            Record::LocalOutput,
            prompt("b"),
            text("m2", "second"),
            Record::TurnEnd,
        ]);
        assert!(open.is_none());
        let ids: Vec<_> = turns.iter().map(|t| t.turn_id.as_deref()).collect();
        assert_eq!(ids, [Some("a"), Some("b")]);
        assert_eq!(turns[0].assistant, "answer");
    }

    #[test]
    fn reasoning_and_tool_calls_are_kept_and_capped() {
        let mut records = vec![prompt("a"), Record::Reasoning { text: "r1".into() }];
        records.push(Record::Reasoning { text: "".into() });
        for i in 0..12 {
            records.push(Record::ToolUse {
                id: Some(format!("c{i}")),
                name: format!("t{i}"),
                input: json!({"s": "x".repeat(5000)}),
            });
        }
        records.push(Record::TurnEnd);
        let (turns, _) = run(records);
        let turn = &turns[0];
        assert_eq!(turn.assistant, "");
        assert_eq!(turn.reasoning.as_deref(), Some("r1"));
        assert_eq!(turn.tool_calls.len(), MAX_TOOL_CALLS);
        assert_eq!(turn.tool_calls[9].tool_name, "t9");
        for call in &turn.tool_calls {
            assert!(call.input.chars().count() <= MAX_TOOL_INPUT_CHARS);
            serde_json::from_str::<Value>(&call.input).unwrap();
            assert_eq!(call.output, "");
        }
    }
}
