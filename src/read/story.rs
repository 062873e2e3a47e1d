//! One session's story, in order: what `cmstore show` prints.
//!
//! Read from the store in a few statements (the session; its prompts, starts, ends and
//! compactions in one pass; its tool calls, from one index; its turns; its usage) and merged by
//! time into [`Item`]s. The prompt a person typed is shown where they typed it (its `UserPromptSubmit`); a turn's answer
//! where the turn ended, with the turn's own prompt in front only when no prompt event shows
//! it (a harvested VS Code turn, a session whose prompt hook was off).

use std::collections::HashMap;
use std::fmt::Write;

use rusqlite::types::Value;
use serde::Serialize;

use crate::model::queue_line::tool_input;
use crate::model::shorten::ELLIPSIS;
use crate::read::report;
use crate::read::report::{integer, take_text, text};
use crate::store::read_only::{Param, QueryError, ReadOnlyDb};
use crate::support::human;

/// Characters of a prompt or an answer shown without `--full`.
pub const SHORT_TEXT: usize = 240;

/// Characters of a tool input shown without `--full`: the call's line keeps room for its
/// outcome.
pub const SHORT_INPUT: usize = 100;

/// Real token usage and its cost (the `usage` table, priced at read time): a session's, or
/// one turn's.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Usage {
    /// API responses counted.
    pub responses: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_write_tokens: i64,
    pub cache_read_tokens: i64,
    /// The cost of the priced responses (USD); `None` when none has a price.
    pub cost_usd: Option<f64>,
    /// Responses whose model has no price.
    pub unpriced: i64,
}

impl Usage {
    /// Every token: input, output, cache writes and reads.
    pub fn tokens(&self) -> i64 {
        [
            self.input_tokens,
            self.output_tokens,
            self.cache_write_tokens,
            self.cache_read_tokens,
        ]
        .into_iter()
        .fold(0, i64::saturating_add)
    }

    fn add(&mut self, r: &Response) {
        self.responses += 1;
        self.input_tokens = self.input_tokens.saturating_add(r.tokens[0]);
        self.output_tokens = self.output_tokens.saturating_add(r.tokens[1]);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(r.tokens[2]);
        self.cache_read_tokens = self.cache_read_tokens.saturating_add(r.tokens[3]);
        match r.cost {
            Some(c) => self.cost_usd = Some(self.cost_usd.unwrap_or(0.0) + c),
            None => self.unpriced += 1,
        }
    }

    /// `37.0k tokens, $2.31` (`+` when some responses have no price).
    fn brief(&self) -> String {
        let cost = match self.cost_usd {
            Some(c) => format!(
                ", {}{}",
                human::cost(c),
                if self.unpriced > 0 { "+" } else { "" }
            ),
            None => String::new(),
        };
        format!("{} tokens{cost}", human::count(self.tokens()))
    }
}

/// One API response's usage, as read for the story ([`response_of`]).
#[derive(Debug, Clone)]
pub struct Response {
    ts: i64,
    turn_id: Option<String>,
    sidechain: bool,
    /// Input, output, cache writes, cache reads.
    tokens: [i64; 4],
    cost: Option<f64>,
}

/// The session's figures, as the header shows them.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Head {
    /// The full id.
    pub session_id: String,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub cwd: Option<String>,
    /// First and last event, epoch ms.
    pub first_seen: i64,
    pub last_seen: i64,
    /// A SessionEnd was recorded.
    pub ended: bool,
    pub prompts: i64,
    pub turns: i64,
    pub subagent_turns: i64,
    pub tool_uses: i64,
    pub tool_failures: i64,
    /// vstack's payload-size estimate (bytes / 4), not the model's usage.
    pub estimated_tokens: i64,
    /// The real usage of the session's responses, once the store has any.
    pub usage: Option<Usage>,
}

/// One thing that happened in the session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Item {
    /// The session started (`source`: startup, resume, clear, compact…).
    Start { ts: i64, source: Option<String> },
    /// A person's prompt.
    Prompt { ts: i64, text: String },
    /// A tool call, with what the safety gate said of it.
    ToolCall {
        ts: i64,
        tool: String,
        input: Option<String>,
        duration_ms: Option<i64>,
        /// succeeded, failed, denied, refused, abandoned; `None` while in flight.
        outcome: Option<String>,
        /// The safety rules that matched.
        risk: Option<String>,
        /// The gate's decision on a finding: allow or deny.
        decision: Option<String>,
        /// The agent a delegation went to.
        delegated_to: Option<String>,
        /// Who or what decided the call (`v_tool_call_decisions`): gate, classifier, user,
        /// mode, auto, settings; `None` when nothing tells (`unknown`).
        #[serde(skip_serializing_if = "Option::is_none")]
        decided_by: Option<String>,
        /// A failed call's exit code, as its result reported it.
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// Why a failed call failed: its error, else what it printed (stderr before stdout),
        /// whole; the text view shows its first line.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Read from the transcript by `cmstore import`: no hook recorded the call.
        imported: bool,
    },
    /// The end of a turn: its answer (and its prompt, when no prompt event showed it).
    Answer {
        ts: i64,
        prompt: Option<String>,
        text: String,
        model: Option<String>,
        /// A subagent's turn, not the main conversation's.
        subagent: bool,
        /// Harvested from the transcript rather than reported by a Stop.
        harvested: bool,
        /// Read from the transcript by `cmstore import`: no hook recorded the turn.
        imported: bool,
        /// How the turn ended when not by an answer: `interrupted`, `failed`.
        outcome: Option<String>,
        /// What blocking Stop hooks told the agent before this answer.
        feedback: Option<String>,
        /// The usage of the turn's responses (those since the previous turn of its kind
        /// ended), once the store has any.
        usage: Option<Usage>,
        /// The turn's id, to match usage that names it.
        #[serde(skip)]
        turn_id: Option<String>,
    },
    /// The conversation was compacted.
    Compaction { ts: i64, trigger: Option<String> },
    /// The session ended.
    End { ts: i64, reason: Option<String> },
}

impl Item {
    /// When it happened (epoch ms).
    pub fn ts(&self) -> i64 {
        match self {
            Item::Start { ts, .. }
            | Item::Prompt { ts, .. }
            | Item::ToolCall { ts, .. }
            | Item::Answer { ts, .. }
            | Item::Compaction { ts, .. }
            | Item::End { ts, .. } => *ts,
        }
    }

    /// Ties at one millisecond: the start first, the end last, a prompt before the calls it
    /// caused and the answer after them.
    fn rank(&self) -> u8 {
        match self {
            Item::Start { .. } => 0,
            Item::Prompt { .. } => 1,
            Item::ToolCall { .. } => 2,
            Item::Compaction { .. } => 3,
            Item::Answer { .. } => 4,
            Item::End { .. } => 5,
        }
    }
}

/// A session's story.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Story {
    pub session: Head,
    pub items: Vec<Item>,
}

/// Reads the story of `session_id` (a full id), with its tool inputs as `inputs` says, from
/// one snapshot of the store: its header and its items agree while an ingest writes.
/// `Ok(None)` when the store has no such session.
pub fn load(
    db: &ReadOnlyDb,
    session_id: &str,
    inputs: Inputs,
) -> Result<Option<Story>, QueryError> {
    db.in_one_snapshot(|db| load_now(db, session_id, inputs))
}

/// [`load`]'s statements, in a snapshot.
fn load_now(
    db: &ReadOnlyDb,
    session_id: &str,
    inputs: Inputs,
) -> Result<Option<Story>, QueryError> {
    let Some(session) = head(db, session_id)? else {
        return Ok(None);
    };
    let mut items = own_lines(db, session_id)?;
    let typed: std::collections::HashSet<String> = items
        .iter()
        .filter_map(|i| match i {
            Item::Prompt { text, .. } => Some(text.trim().to_owned()),
            _ => None,
        })
        .collect();
    items.extend(tool_calls(db, session_id, inputs)?);
    items.extend(imported_calls(db, session_id)?);
    items.extend(answers(db, session_id, &typed)?);
    let responses = responses(db, session_id)?;
    Ok(Some(assemble(session, items, &responses)))
}

/// A story of `session`'s `items` (in any order) and `responses`: the items in time order,
/// each prompt shown once, each answer with the usage of its responses, the header with all
/// of theirs. Whatever store they were read from.
pub fn assemble(mut session: Head, mut items: Vec<Item>, responses: &[Response]) -> Story {
    items.sort_by_key(|item| (item.ts(), item.rank()));
    drop_shown_prompts(&mut items);
    if !responses.is_empty() {
        let mut total = Usage::default();
        for r in responses {
            total.add(r);
        }
        session.usage = Some(total);
        attribute_usage(&mut items, responses);
    }
    Story { session, items }
}

/// The statement of `responses`: from the covering index `usage_session` (migration 0021),
/// in its order.
pub const RESPONSES: &str = "SELECT ts, turn_id, sidechain, input_tokens, output_tokens, \
        cache_write_tokens, cache_read_tokens, cost_usd \
     FROM v_usage WHERE session_id = :session ORDER BY ts, message_id";

/// The usage of every response of the session, by time.
fn responses(db: &ReadOnlyDb, session_id: &str) -> Result<Vec<Response>, QueryError> {
    let (_, rows) = report::fetch(db, RESPONSES, &bind(session_id))?;
    Ok(rows.into_iter().map(response_of).collect())
}

/// A response of a row of [`RESPONSES`]' columns (the team store's reads the same).
pub fn response_of(mut r: Vec<Value>) -> Response {
    Response {
        ts: integer(&r[0]).unwrap_or(i64::MIN),
        turn_id: take_text(&mut r[1]),
        sidechain: integer(&r[2]) == Some(1),
        tokens: [3, 4, 5, 6].map(|i| integer(&r[i]).unwrap_or(0)),
        cost: match r[7] {
            Value::Real(c) => Some(c),
            Value::Integer(c) => Some(c as f64),
            _ => None,
        },
    }
}

/// Gives each turn's answer the usage of its responses: those naming its turn id, else those
/// of its kind (main or subagent) after the previous such answer and not after it. Responses
/// after the last answer belong to a turn still running: the header's total counts them.
/// `items` are in time order, as [`load`] sorts them.
fn attribute_usage(items: &mut [Item], responses: &[Response]) {
    // A session of 50,000 events has thousands of answers and of responses: each response
    // finds its answer by a map lookup or a binary search, not by a walk over the answers.
    let mut by_turn: HashMap<&str, usize> = HashMap::new();
    // Per kind (main, subagent): each answer's time and index in `items`, in time order.
    let mut by_kind: [Vec<(i64, usize)>; 2] = [Vec::new(), Vec::new()];
    for (i, item) in items.iter().enumerate() {
        if let Item::Answer {
            ts,
            subagent,
            turn_id,
            ..
        } = item
        {
            if let Some(id) = turn_id {
                by_turn.entry(id.as_str()).or_insert(i);
            }
            by_kind[usize::from(*subagent)].push((*ts, i));
        }
    }
    debug_assert!(by_kind.iter().all(|k| k.is_sorted_by_key(|a| a.0)));
    let mut sums: Vec<Option<Usage>> = vec![None; items.len()];
    for r in responses {
        let by_id = r.turn_id.as_deref().and_then(|id| by_turn.get(id).copied());
        let by_time = || {
            let answers = &by_kind[usize::from(r.sidechain)];
            answers
                .get(answers.partition_point(|a| a.0 < r.ts))
                .map(|a| a.1)
        };
        if let Some(i) = by_id.or_else(by_time) {
            sums[i].get_or_insert_with(Usage::default).add(r);
        }
    }
    for (item, sum) in items.iter_mut().zip(sums) {
        if let (Item::Answer { usage, .. }, Some(sum)) = (item, sum) {
            *usage = Some(sum);
        }
    }
}

fn bind(session_id: &str) -> [Param; 1] {
    [Param {
        name: "session".into(),
        value: Value::Text(session_id.to_string()),
    }]
}

fn head(db: &ReadOnlyDb, session_id: &str) -> Result<Option<Head>, QueryError> {
    let (_, rows) = report::fetch(
        db,
        "SELECT session_id, agent, model, cwd, first_seen, last_seen, ended, prompts, turns, \
         subagent_turns, tool_uses, tool_failures, estimated_tokens \
         FROM v_session_summary WHERE session_id = :session",
        &bind(session_id),
    )?;
    Ok(rows.first().map(|r| head_of(r)))
}

/// The header of a row of the session's id, agent, model, cwd, first and last seen, ended,
/// prompts, turns, subagent turns, tool uses and failures and estimated tokens (the team
/// store's reads the same).
pub fn head_of(r: &[Value]) -> Head {
    let n = |i: usize| integer(&r[i]).unwrap_or(0);
    Head {
        session_id: text(&r[0]).unwrap_or_default(),
        agent: text(&r[1]),
        model: text(&r[2]),
        cwd: text(&r[3]),
        first_seen: n(4),
        last_seen: n(5),
        ended: n(6) != 0,
        prompts: n(7),
        turns: n(8),
        subagent_turns: n(9),
        tool_uses: n(10),
        tool_failures: n(11),
        estimated_tokens: n(12),
        usage: None,
    }
}

/// The statement of `own_lines`: through the index `events_session` (migration 0025), one
/// seek per kind, the few rows sorted by time; each line's JSON read once, for the one field
/// its kind has.
pub const OWN_LINES: &str = "SELECT ts, hook_type, prompt, \
        CASE hook_type WHEN 'SessionStart' THEN json_extract(entry, '$.source') \
            WHEN 'SessionEnd' THEN json_extract(entry, '$.reason') \
            WHEN 'PreCompact' THEN json_extract(entry, '$.trigger') END \
     FROM events WHERE session_id = :session \
       AND hook_type IN ('UserPromptSubmit', 'SessionStart', 'SessionEnd', 'PreCompact') \
     ORDER BY ts, seq";

/// The session's prompts, starts, ends and compactions, in one pass over its rows.
fn own_lines(db: &ReadOnlyDb, session_id: &str) -> Result<Vec<Item>, QueryError> {
    let (_, rows) = report::fetch(db, OWN_LINES, &bind(session_id))?;
    Ok(rows.into_iter().filter_map(own_line_of).collect())
}

/// An item of a row of [`OWN_LINES`]' columns: time, hook type, prompt, the kind's field.
pub fn own_line_of(mut r: Vec<Value>) -> Option<Item> {
    let (ts, hook) = (integer(&r[0])?, take_text(&mut r[1])?);
    let field = take_text(&mut r[3]);
    Some(match hook.as_str() {
        "UserPromptSubmit" => Item::Prompt {
            ts,
            text: take_text(&mut r[2]).unwrap_or_default(),
        },
        "SessionStart" => Item::Start { ts, source: field },
        "SessionEnd" => Item::End { ts, reason: field },
        _ => Item::Compaction { ts, trigger: field },
    })
}

/// How much of each tool input [`load`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inputs {
    /// Whole, as `--format json` and `--full` show them: a long one (cut in its
    /// `tool_calls` row) is read from its line.
    Whole,
    /// As much as the text view shows ([`SHORT_INPUT`] characters): from the calls' rows
    /// alone, but in the rare case whitespace leaves a cut row too little.
    Short,
}

/// A call as its `tool_calls` row tells it (migration 0019).
struct CallRow {
    rowid: i64,
    ts: i64,
    tool: String,
    duration_ms: Option<i64>,
    outcome: Option<String>,
    input: Option<String>,
    risk: Option<String>,
    decision: Option<String>,
    delegated_to: Option<String>,
    pre_event_id: Option<String>,
    post_event_id: Option<String>,
    permission_mode: Option<String>,
}

impl CallRow {
    /// Its row's input is cut short of what `inputs` asks for: the line has to be read.
    fn wants_line(&self, inputs: Inputs) -> bool {
        let Some(kept) = self.input.as_deref().filter(|i| tool_input::is_cut(i)) else {
            return false;
        };
        inputs == Inputs::Whole || {
            // The text view collapses whitespace and cuts to SHORT_INPUT characters: the kept
            // part must still be longer than that for the cut to fall where it falls on the
            // whole input.
            let kept = kept.strip_suffix(ELLIPSIS).unwrap_or(kept);
            kept.split_whitespace()
                .map(|w| w.chars().count() + 1)
                .sum::<usize>()
                <= SHORT_INPUT + 1
        }
    }
}

/// How a call's line says who decided it (`gate report` says it alike); `None` for the gate,
/// whose finding the line says already, and where nothing tells.
pub fn decided_text(by: &str) -> Option<&'static str> {
    Some(match by {
        "user" => "by the user",
        "settings" => "by settings",
        "mode" => "by bypass mode",
        "auto" => "by auto mode",
        "classifier" => "by the classifier",
        _ => return None,
    })
}

/// Who or what decided each call of the session that says (`v_tool_call_decisions`, 0028 and
/// 0030), by the call's rowid; the calls it cannot tell (`unknown`) are left out. The view
/// costs a lookup per call; a session with no event that only it can pair to a call (a
/// `PermissionRequest`, a `PermissionDenied`: one look at `events_session`) is decided from
/// what the calls' rows hold, by the view's own rules ([`unpaired_decision`]).
fn decisions(
    db: &ReadOnlyDb,
    session_id: &str,
    calls: &[CallRow],
) -> Result<std::collections::HashMap<i64, String>, QueryError> {
    let (_, paired) = report::fetch(
        db,
        "SELECT EXISTS (SELECT 1 FROM events WHERE session_id = :session \
                        AND hook_type IN ('PermissionRequest', 'PermissionDenied'))",
        &bind(session_id),
    )?;
    if paired.first().and_then(|r| r.first()).and_then(integer) != Some(1) {
        return Ok(calls
            .iter()
            .filter_map(|c| {
                let by = unpaired_decision(c.outcome.as_deref(), c.permission_mode.as_deref())?;
                Some((c.rowid, by.to_string()))
            })
            .collect());
    }
    // `unknown` is left out here, not in SQL: a condition on `decided_by` would compute it
    // twice per call.
    let (_, rows) = report::fetch(
        db,
        "SELECT call_rowid, decided_by FROM v_tool_call_decisions WHERE session_id = :session",
        &bind(session_id),
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|mut r| Some((integer(&r[0])?, take_text(&mut r[1])?)))
        .filter(|(_, by)| by != "unknown")
        .collect())
}

/// `v_tool_call_decisions.decided_by` (migration 0030's `CASE`) of a call no
/// `PermissionRequest` or `PermissionDenied` was fired for; `None` for `unknown`. The two are
/// held equal by `tests/cli/tool_calls.rs`.
fn unpaired_decision(outcome: Option<&str>, mode: Option<&str>) -> Option<&'static str> {
    match outcome? {
        "denied" => Some("gate"),
        "succeeded" | "failed" => match mode? {
            "bypassPermissions" => Some("mode"),
            "auto" => Some("auto"),
            "default" | "acceptEdits" | "plan" | "dontAsk" => Some("settings"),
            _ => None,
        },
        _ => None,
    }
}

/// Tool calls, from the covering index `tool_calls_session_id` (migration 0019: the input, the
/// gate's finding and the delegation are in it), in its order. Only an input cut in its row
/// that `inputs` wants whole is read from the call's lines.
fn tool_calls(db: &ReadOnlyDb, session_id: &str, inputs: Inputs) -> Result<Vec<Item>, QueryError> {
    let (_, rows) = report::fetch(
        db,
        "SELECT coalesce(start_ts, end_ts), coalesce(tool_name, '?'), duration_ms, outcome, \
                input, risk, decision, delegated_agent, pre_event_id, post_event_id, rowid, \
                permission_mode \
         FROM tool_calls WHERE session_id = :session",
        &bind(session_id),
    )?;
    let calls: Vec<CallRow> = rows
        .into_iter()
        .filter_map(|mut r| {
            Some(CallRow {
                rowid: integer(&r[10])?,
                ts: integer(&r[0])?,
                tool: take_text(&mut r[1]).unwrap_or_default(),
                duration_ms: integer(&r[2]),
                outcome: take_text(&mut r[3]),
                input: take_text(&mut r[4]),
                risk: take_text(&mut r[5]),
                decision: take_text(&mut r[6]),
                delegated_to: take_text(&mut r[7]),
                pre_event_id: take_text(&mut r[8]),
                post_event_id: take_text(&mut r[9]),
                permission_mode: take_text(&mut r[11]),
            })
        })
        .collect();
    let decided = decisions(db, session_id, &calls)?;
    let long: Vec<&CallRow> = calls.iter().filter(|c| c.wants_line(inputs)).collect();
    let pre = inputs_by_id(db, long.iter().filter_map(|c| c.pre_event_id.as_deref()))?;
    let no_input = long
        .iter()
        .filter(|c| pre_input(&pre, c).is_none())
        .filter_map(|c| c.post_event_id.as_deref());
    let post = inputs_by_id(db, no_input)?;
    let failed = failures_by_id(
        db,
        calls
            .iter()
            .filter(|c| c.outcome.as_deref() == Some("failed"))
            .filter_map(|c| c.post_event_id.as_deref()),
    )?;
    Ok(calls
        .into_iter()
        .map(|c| {
            let (exit_code, error) = c
                .post_event_id
                .as_ref()
                .and_then(|id| failed.get(id).cloned())
                .unwrap_or_default();
            let whole = c.wants_line(inputs).then(|| {
                let post = || {
                    c.post_event_id
                        .as_ref()
                        .and_then(|id| post.get(id).cloned())
                };
                pre_input(&pre, &c).or_else(|| post().flatten())
            });
            Item::ToolCall {
                ts: c.ts,
                tool: c.tool,
                // A line pruned since: the row's part is what is left.
                input: whole.flatten().map(tool_input::input_text).or(c.input),
                duration_ms: c.duration_ms,
                outcome: c.outcome,
                risk: c.risk,
                decision: c.decision,
                delegated_to: c.delegated_to,
                decided_by: decided.get(&c.rowid).cloned(),
                exit_code,
                error,
                imported: false,
            }
        })
        .collect())
}

/// The statement of `imported_calls`: the calls the session's transcript shows
/// (`transcript_items`, migration 0036) whose id no call a hook recorded has, those ids read
/// once.
pub const IMPORTED_CALLS: &str = "SELECT coalesce(ts, end_ts), coalesce(name, '?'), input, \
        end_ts - ts, outcome \
     FROM transcript_items WHERE session_id = :session AND kind = 'tool_call' \
       AND item_id NOT IN (SELECT tool_call_id FROM tool_calls \
                           WHERE session_id = :session AND tool_call_id IS NOT NULL)";

/// The tool calls no hook recorded that an import read from the session's transcript; none
/// (and no read of the session's calls) for a session no transcript of was imported.
fn imported_calls(db: &ReadOnlyDb, session_id: &str) -> Result<Vec<Item>, QueryError> {
    let (_, shown) = report::fetch(
        db,
        "SELECT EXISTS (SELECT 1 FROM transcript_items WHERE session_id = :session \
           AND kind = 'tool_call')",
        &bind(session_id),
    )?;
    if shown.first().and_then(|r| integer(&r[0])) != Some(1) {
        return Ok(Vec::new());
    }
    let (_, rows) = report::fetch(db, IMPORTED_CALLS, &bind(session_id))?;
    Ok(rows.into_iter().filter_map(imported_call_of).collect())
}

/// A call of a row of [`IMPORTED_CALLS`]' columns.
pub fn imported_call_of(mut r: Vec<Value>) -> Option<Item> {
    Some(Item::ToolCall {
        ts: integer(&r[0])?,
        tool: take_text(&mut r[1]).unwrap_or_default(),
        input: take_text(&mut r[2]),
        duration_ms: integer(&r[3]).filter(|ms| *ms >= 0),
        outcome: take_text(&mut r[4]),
        risk: None,
        decision: None,
        delegated_to: None,
        decided_by: None,
        exit_code: None,
        error: None,
        imported: true,
    })
}

/// The input of call `c`'s PreToolUse line, once read.
fn pre_input(pre: &HashMap<String, Option<String>>, c: &CallRow) -> Option<String> {
    c.pre_event_id
        .as_ref()
        .and_then(|id| pre.get(id).cloned().flatten())
}

/// The rows `SELECT id, <columns> FROM events` gives for these event ids (their lines read
/// once each), none when there are no ids.
fn lines_by_id<'a>(
    db: &ReadOnlyDb,
    columns: &str,
    ids: impl Iterator<Item = &'a str>,
) -> Result<Vec<Vec<Value>>, QueryError> {
    let ids: Vec<&str> = ids.collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
    let sql =
        format!("SELECT id, {columns} FROM events WHERE id IN (SELECT value FROM json_each(:ids))");
    let params = [Param {
        name: "ids".into(),
        value: Value::Text(ids),
    }];
    Ok(report::fetch(db, &sql, &params)?.1)
}

/// The tool input (`$.toolInput`, as `json_extract` gives it) of the lines of these event ids,
/// by id.
fn inputs_by_id<'a>(
    db: &ReadOnlyDb,
    ids: impl Iterator<Item = &'a str>,
) -> Result<HashMap<String, Option<String>>, QueryError> {
    let columns =
        "coalesce(json_extract(entry, '$.toolInput'), json_extract(entry, '$.tool_input'))";
    Ok(lines_by_id(db, columns, ids)?
        .into_iter()
        .filter_map(|mut r| Some((take_text(&mut r[0])?, take_text(&mut r[1]))))
        .collect())
}

/// Why a call failed: its exit code, and its error or what it printed.
pub type Failure = (Option<i64>, Option<String>);

/// Why each failed call failed, by the id of the event that reported it: the exit code and
/// the error, else the output, of its line.
fn failures_by_id<'a>(
    db: &ReadOnlyDb,
    ids: impl Iterator<Item = &'a str>,
) -> Result<HashMap<String, Failure>, QueryError> {
    let columns = "json_extract(entry, '$.exitCode'), json_extract(entry, '$.error.message'), \
                   json_extract(entry, '$.toolResponse')";
    Ok(lines_by_id(db, columns, ids)?
        .into_iter()
        .filter_map(failure_of)
        .collect())
}

/// A failure of a row of the event's id, its line's exit code, error message and tool
/// response (the team store's reads the same).
pub fn failure_of(mut r: Vec<Value>) -> Option<(String, Failure)> {
    let id = take_text(&mut r[0])?;
    let error = take_text(&mut r[2])
        .filter(|e| !e.trim().is_empty())
        .or_else(|| take_text(&mut r[3]).and_then(|out| what_it_printed(&out)));
    Some((id, (integer(&r[1]), error)))
}

/// What a tool's result says of its failure: a shell result's `stderr`, else its `stdout`
/// (or an `error`/`output` field), when the result is such an object; else the text itself.
/// `None` when all of it is blank.
fn what_it_printed(result: &str) -> Option<String> {
    let said = match serde_json::from_str::<serde_json::Value>(result) {
        Ok(serde_json::Value::Object(fields)) => ["stderr", "error", "stdout", "output"]
            .iter()
            .find_map(|key| fields.get(*key)?.as_str().filter(|s| !s.trim().is_empty()))
            .map(str::to_string),
        _ => Some(result.to_string()),
    };
    said.filter(|s| !s.trim().is_empty())
}

/// The first line of an error that says something: its first non-blank line, and when that
/// only says the exit code (Claude Code's `Exit code 101`), the line after it too.
fn gist(error: &str) -> String {
    let mut lines = error.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let only_the_code = first
        .strip_prefix("Exit code ")
        .is_some_and(|code| code.parse::<i64>().is_ok());
    match lines.next() {
        Some(next) if only_the_code => format!("{first}: {next}"),
        _ => first.to_string(),
    }
}

/// The columns of a turn's answer, as [`answer_of`] reads them (the team store's `turns`
/// has them too).
pub const ANSWER_COLUMNS: &str = "ts, prompt, response, model, hook_type = 'SubagentStop', \
     synthetic, turn_id, outcome, feedback, imported";

/// Turn ends; before an imported main turn, its prompt, when it was typed, unless a prompt
/// event of the same text is stored (`typed`: its hook fired, its Stop did not);
/// `drop_shown_prompts` then takes it off the answer.
fn answers(
    db: &ReadOnlyDb,
    session_id: &str,
    typed: &std::collections::HashSet<String>,
) -> Result<Vec<Item>, QueryError> {
    let (_, rows) = report::fetch(
        db,
        &format!(
            "SELECT {ANSWER_COLUMNS}, \
               (SELECT i.ts FROM transcript_items i WHERE turns.imported = 1 \
                  AND i.session_id = turns.session_id AND i.kind = 'turn' \
                  AND i.item_id = turns.turn_key) \
             FROM turns WHERE session_id = :session"
        ),
        &bind(session_id),
    )?;
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        let started = integer(&row[ANSWER_COLUMN_COUNT]);
        let Some(answer) = answer_of(row) else {
            continue;
        };
        if let (
            Some(ts),
            Item::Answer {
                prompt: Some(text),
                subagent: false,
                ..
            },
        ) = (started, &answer)
        {
            if typed.contains(text.trim()) {
                items.push(answer);
                continue;
            }
            items.push(Item::Prompt {
                ts,
                text: text.clone(),
            });
        }
        items.push(answer);
    }
    Ok(items)
}

/// The number of [`ANSWER_COLUMNS`].
const ANSWER_COLUMN_COUNT: usize = 10;

/// An answer of a row of [`ANSWER_COLUMNS`].
pub fn answer_of(mut r: Vec<Value>) -> Option<Item> {
    Some(Item::Answer {
        ts: integer(&r[0])?,
        prompt: take_text(&mut r[1]).filter(|p| !p.trim().is_empty()),
        text: take_text(&mut r[2]).unwrap_or_default(),
        model: take_text(&mut r[3]),
        subagent: integer(&r[4]) == Some(1),
        harvested: integer(&r[5]) == Some(1),
        imported: integer(&r[9]) == Some(1),
        outcome: take_text(&mut r[7]),
        feedback: take_text(&mut r[8]).filter(|f| !f.trim().is_empty()),
        usage: None,
        turn_id: take_text(&mut r[6]),
    })
}

/// Takes a main turn's prompt off its answer when the prompt event just before it says the
/// same: the story shows each prompt once, where it was typed.
fn drop_shown_prompts(items: &mut [Item]) {
    let mut last_prompt: Option<String> = None;
    for item in items.iter_mut() {
        match item {
            Item::Prompt { text, .. } => last_prompt = Some(text.trim().to_string()),
            Item::Answer {
                prompt,
                subagent: false,
                ..
            } => {
                let shown = last_prompt.take();
                if prompt.as_deref().map(str::trim) == shown.as_deref() {
                    *prompt = None;
                }
            }
            _ => {}
        }
    }
}

/// How the text view is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextOptions {
    /// Whole texts, not [`SHORT_TEXT`] characters.
    pub full: bool,
    /// Now (epoch ms), for "2h ago".
    pub now_ms: i64,
    /// The terminal's width: without `full`, each line's text is cut so the line fits it
    /// (never below [`MIN_FIT`] characters, never past the cut without a width).
    pub width: Option<usize>,
}

/// Characters a line's text keeps however narrow the terminal: below that a cut says nothing.
pub const MIN_FIT: usize = 20;

/// Characters before a line's text: the time (`14:02:05`), two spaces, an 8-character label
/// and a space.
const LINE_PREFIX: usize = 19;

/// The characters a line's text may take: what `width` leaves after `fixed` characters of the
/// line, within [`MIN_FIT`] and `most` (the cut without a width).
fn fit(width: Option<usize>, fixed: usize, most: usize) -> usize {
    width.map_or(most, |w| {
        w.saturating_sub(fixed).clamp(MIN_FIT.min(most), most)
    })
}

impl Story {
    /// The story as text for a person: a header, then one line (or block) per item.
    pub fn to_text(&self, options: TextOptions) -> String {
        let mut out = self.header(options.now_ms);
        out.push('\n');
        // About what a line takes in a generated session: the buffer seldom grows.
        out.reserve(self.items.len() * 100);
        let mut clock = human::Clock::default();
        let mut line = Line {
            full: options.full,
            width: options.width,
            tail: String::new(),
        };
        if self.items.is_empty() {
            // A session only usage rows know: a transcript imported, no hook of it ingested.
            out.push_str(match self.session.usage {
                Some(_) => "(no hook event of this session is stored: its usage was read from its transcript)\n",
                None => "(no event of this session is stored)\n",
            });
        }
        // A line of the date before the first item of each local day but the session's first
        // (the header says when it started): the lines give only the time of day.
        let mut day = clock.date(self.session.first_seen);
        for item in &self.items {
            let date = clock.date(item.ts());
            if date != day {
                if let Some(date) = date {
                    let _ = writeln!(out, "── {} ──", date.format("%Y-%m-%d %A"));
                }
                day = date;
            }
            push_line(&mut out, item, &mut line, &mut clock);
        }
        out
    }

    fn header(&self, now_ms: i64) -> String {
        let s = &self.session;
        let mut about = vec![s.agent.clone().unwrap_or_else(|| "?".into())];
        about.extend(s.model.clone());
        if let Some(cwd) = &s.cwd {
            about.push(format!("{} ({cwd})", human::project(cwd)));
        }
        let calls = self
            .items
            .iter()
            .filter_map(|i| match i {
                Item::ToolCall { outcome, .. } => Some(outcome.as_deref()),
                _ => None,
            })
            .collect::<Vec<_>>();
        let of = |o: &str| calls.iter().filter(|c| **c == Some(o)).count();
        let mut tally = vec![
            plural(calls.len() as i64, "tool call")
                + &imported_part(
                    self.items
                        .iter()
                        .filter(|i| matches!(i, Item::ToolCall { imported: true, .. })),
                ),
        ];
        for outcome in ["failed", "denied", "refused", "abandoned"] {
            if of(outcome) > 0 {
                tally.push(format!("{} {outcome}", of(outcome)));
            }
        }
        // Calls with no result recorded: `sessions` counts only the calls that returned.
        let in_flight = calls.iter().filter(|c| c.is_none()).count();
        if in_flight > 0 {
            tally.push(format!("{in_flight} in flight"));
        }
        let subagents = if s.subagent_turns > 0 {
            format!(" + {} subagent", s.subagent_turns)
        } else {
            String::new()
        };
        let usage = match &s.usage {
            Some(u) => format!(
                "{} · {} tokens ({} in, {} out, {} cache written, {} cache read){}{}\n",
                plural(u.responses, "response"),
                human::count(u.tokens()),
                human::count(u.input_tokens),
                human::count(u.output_tokens),
                human::count(u.cache_write_tokens),
                human::count(u.cache_read_tokens),
                u.cost_usd
                    .map_or(String::new(), |c| format!(" · {}", human::cost(c))),
                if u.unpriced > 0 {
                    format!(" ({} without a price)", u.unpriced)
                } else {
                    String::new()
                },
            ),
            None => String::new(),
        };
        format!(
            "session {}\n{}\nstarted {}{}, {} {}\n{} · {}{subagents} · {}\n{usage}",
            s.session_id,
            about.join(" · "),
            human::local_time(s.first_seen),
            match human::ago(s.first_seen, now_ms) {
                // Past a month `ago` is the date, which the time already says.
                ago if ago.ends_with("ago") || ago == "just now" => format!(" ({ago})"),
                _ => String::new(),
            },
            if s.ended { "lasted" } else { "active for" },
            human::duration(s.last_seen - s.first_seen),
            plural(s.prompts, "prompt"),
            plural(s.turns, "turn")
                + &imported_part(self.items.iter().filter(|i| {
                    matches!(
                        i,
                        Item::Answer {
                            imported: true,
                            subagent: false,
                            ..
                        }
                    )
                })),
            tally.join(", "),
        )
    }
}

/// ` (3 imported)` when `items` are any, of how many were read from the transcript by an
/// import and by no hook; else nothing.
fn imported_part<'i>(items: impl Iterator<Item = &'i Item>) -> String {
    match items.count() {
        0 => String::new(),
        n => format!(" ({n} imported)"),
    }
}

/// `1 prompt`, `2 prompts`.
fn plural(n: i64, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// How the lines of the text view are cut, and a buffer for what follows a line's text (its
/// outcome, its usage), written first so the text knows the room left, then copied: one
/// buffer for all the lines.
struct Line {
    full: bool,
    width: Option<usize>,
    tail: String,
}

/// Appends one item as text to `out`: the local time, a label, the text. Written piece by
/// piece into the one buffer: a session's story has tens of thousands of lines, and a
/// `String` for each part of each was a fifth of `show`'s time at 50,000 events.
fn push_line(out: &mut String, item: &Item, line: &mut Line, clock: &mut human::Clock) {
    let (full, width) = (line.full, line.width);
    // `fixed`: the characters of the line besides the text.
    let text = |out: &mut String, t: &str, fixed: usize, most: usize| {
        if full {
            out.push_str(t.trim());
        } else {
            push_one_line(out, t, fit(width, fixed, most));
        }
    };
    let tail = &mut line.tail;
    tail.clear();
    let labelled = |out: &mut String, clock: &mut human::Clock, label: &str| {
        clock.push(out, item.ts());
        out.push_str("  ");
        out.push_str(label);
        out.push(' ');
    };
    match item {
        Item::Start { source, .. } => {
            labelled(out, clock, "start   ");
            out.push_str(source.as_deref().unwrap_or("session started"));
        }
        Item::Prompt { text: prompt, .. } => {
            labelled(out, clock, "prompt  ");
            text(out, prompt, LINE_PREFIX, SHORT_TEXT);
        }
        Item::ToolCall {
            tool,
            input,
            duration_ms,
            outcome,
            risk,
            decision,
            delegated_to,
            decided_by,
            exit_code,
            error,
            imported,
            ..
        } => {
            labelled(out, clock, "tool    ");
            let head = out.len();
            out.push_str(tool);
            if let Some(agent) = delegated_to {
                out.push_str("  -> ");
                out.push_str(agent);
            }
            tail.push_str("  [");
            tail.push_str(outcome.as_deref().unwrap_or("in flight"));
            if let Some(code) = exit_code {
                let _ = write!(tail, ", exit {code}");
            }
            if let Some(ms) = duration_ms {
                tail.push_str(", ");
                tail.push_str(&human::duration(*ms));
            }
            let by = decided_by.as_deref().and_then(decided_text);
            match (risk, by) {
                // Who decided is said only of a call the gate let through: its `(allow)`
                // would repeat it.
                (Some(risk), Some(_)) => {
                    tail.push_str(", gate: ");
                    tail.push_str(risk);
                }
                (Some(risk), None) => {
                    // `write!` to a String cannot fail.
                    let _ = write!(
                        tail,
                        ", gate: {risk} ({})",
                        decision.as_deref().unwrap_or("?")
                    );
                }
                _ => {}
            }
            if let Some(by) = by {
                tail.push_str(", ");
                tail.push_str(by);
            }
            tail.push(']');
            if *imported {
                tail.push_str("  (imported)");
            }
            if let Some(input) = input {
                out.push_str("  ");
                // Counted only when there is a width to fit: `show` into a pipe skips it.
                let fixed = match width {
                    Some(_) => LINE_PREFIX + out[head..].chars().count() + tail.chars().count(),
                    None => 0,
                };
                match path_like(input) {
                    // A path keeps its file name: cut in the middle.
                    Some(path) if !full => {
                        push_path(out, path, fit(width, fixed, SHORT_INPUT));
                    }
                    _ => text(out, input, fixed, SHORT_INPUT),
                }
            }
            out.push_str(tail);
            // Why it failed, on a line of its own: the first line of it, all of it in --full.
            if let Some(error) = error {
                out.push('\n');
                labelled(out, clock, "error   ");
                let gist = gist(error);
                text(
                    out,
                    if full { error } else { &gist },
                    LINE_PREFIX,
                    SHORT_TEXT,
                );
            }
        }
        Item::Answer {
            prompt,
            text: answer,
            subagent,
            harvested,
            imported,
            outcome,
            feedback,
            usage,
            ..
        } => {
            if let Some(p) = prompt {
                labelled(out, clock, "prompt  ");
                text(out, p, LINE_PREFIX, SHORT_TEXT);
                out.push('\n');
            }
            // The hook's words, not the person's: the turn went on after them.
            if let Some(f) = feedback {
                labelled(out, clock, "hook    ");
                text(out, f, LINE_PREFIX, SHORT_TEXT);
                out.push('\n');
            }
            labelled(out, clock, if *subagent { "subagent" } else { "answer  " });
            if let Some(outcome) = outcome {
                let _ = write!(tail, "  [{outcome}]");
            }
            if *imported {
                tail.push_str("  (imported)");
            } else if *harvested {
                tail.push_str("  (from the transcript)");
            }
            if let Some(u) = usage {
                let _ = write!(tail, "  [{}]", u.brief());
            }
            let fixed = match width {
                Some(_) => LINE_PREFIX + tail.chars().count(),
                None => 0,
            };
            text(out, answer, fixed, SHORT_TEXT);
            out.push_str(tail);
        }
        Item::Compaction { trigger, .. } => {
            labelled(out, clock, "compact ");
            out.push_str(trigger.as_deref().unwrap_or("conversation compacted"));
        }
        Item::End { reason, .. } => {
            labelled(out, clock, "end     ");
            out.push_str(reason.as_deref().unwrap_or("session ended"));
        }
    }
    out.push('\n');
}

/// Appends `t` on one line (whitespace runs as one space), cut to `max` characters as
/// [`crate::model::shorten::cut_text`] cuts. Only as many words as the cut can keep are copied: a
/// session's story has thousands of long texts, and joining each whole was a sixth of
/// `show`'s time at 50,000 events.
/// `input` when it is one path (a single word holding `/` or `\\`, as a Read's or an
/// Edit's `file_path` is shown).
fn path_like(input: &str) -> Option<&str> {
    let t = input.trim();
    let one_word = !t.is_empty() && !t.contains(char::is_whitespace);
    (one_word && t.contains(['/', '\\'])).then_some(t)
}

/// Appends `path`, at most `max` characters: whole when it fits, else its start, `…` and its
/// end, the end keeping the last component (the file name) whole when that leaves the start
/// a few characters; a file name longer than that keeps its own end.
fn push_path(out: &mut String, path: &str, max: usize) {
    let chars = path.chars().count();
    if chars <= max {
        out.push_str(path);
        return;
    }
    if max < 3 {
        push_one_line(out, path, max);
        return;
    }
    let least_start = 8.min((max - 1) / 2);
    let name_at = path.rfind(['/', '\\']).unwrap_or(0);
    let name_chars = path[name_at..].chars().count();
    let keep_end = name_chars.min(max - 1 - least_start);
    let keep_start = max - 1 - keep_end;
    out.extend(path.chars().take(keep_start));
    out.push(ELLIPSIS);
    out.extend(path.chars().skip(chars - keep_end));
}

fn push_one_line(out: &mut String, t: &str, max: usize) {
    let start = out.len();
    let mut chars = 0;
    for word in t.split_whitespace() {
        // One character past `max` is enough to know the text is cut.
        if chars > max {
            break;
        }
        if out.len() > start {
            out.push(' ');
            chars += 1;
        }
        out.push_str(word);
        chars += word.chars().count();
    }
    if chars > max {
        // As `cut_text`: the first `max - 1` characters and `…`; no room for it at 0.
        let keep = out[start..]
            .char_indices()
            .nth(max.saturating_sub(1))
            .map_or(out.len(), |(i, _)| start + i);
        out.truncate(keep);
        if max > 0 {
            out.push(ELLIPSIS);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::shorten::cut_text;

    /// What SQLite plans for `sql`, one step a line.
    fn plan(sql: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.db");
        drop(crate::store::open(&path).unwrap());
        let conn = rusqlite::Connection::open(&path).unwrap();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let steps = stmt
            .query_map(["s"], |r| r.get::<_, String>(3))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        steps.join("\n")
    }

    #[test]
    fn a_session_s_responses_are_read_from_one_index_in_its_order() {
        let plan = plan(RESPONSES);
        assert!(plan.contains("COVERING INDEX usage_session"), "{plan}");
        assert!(!plan.contains("TEMP B-TREE"), "{plan}");
    }

    #[test]
    fn a_long_path_keeps_its_file_name() {
        let cut = |path: &str, max: usize| {
            let mut out = String::new();
            push_path(&mut out, path, max);
            out
        };
        let path = "/private/var/folders/5b/dd_48xk2v1s7/T/vibe-check-notes.md";
        assert_eq!(cut(path, 200), path);
        let short = cut(path, 40);
        assert_eq!(short, "/private/var/folder…/vibe-check-notes.md");
        assert_eq!(short.chars().count(), 40);
        // A file name longer than half the room keeps its own end.
        let long_name = format!("/a/{}.rs", "x".repeat(60));
        let cut_long = cut(&long_name, 30);
        assert_eq!(cut_long.chars().count(), 30);
        assert!(
            cut_long.starts_with("/a/xx") && cut_long.ends_with("xxx.rs"),
            "{cut_long}"
        );
        assert_eq!(
            path_like(r"C:\src\app\main.rs"),
            Some(r"C:\src\app\main.rs")
        );
        assert_eq!(path_like("cargo test --all"), None);
        assert_eq!(path_like("README.md"), None);
    }

    #[test]
    fn push_one_line_cuts_as_the_whole_text_joined_would() {
        let joined = |t: &str, max: usize| {
            cut_text(&t.split_whitespace().collect::<Vec<_>>().join(" "), max)
        };
        let texts = [
            String::new(),
            "  one  ".into(),
            "a b".repeat(200),
            format!("{} tail", "é\u{3000}ü\n\t ".repeat(90)),
            format!("{}x y", "w".repeat(99)),
            format!("{}  y", "w".repeat(100)),
            "word ".repeat(60),
        ];
        for t in &texts {
            for max in [0, 1, 2, 99, 100, 101, 240] {
                let mut out = String::from("before ");
                push_one_line(&mut out, t, max);
                assert_eq!(out, format!("before {}", joined(t, max)), "{t:?} at {max}");
            }
        }
    }

    #[test]
    fn a_prompt_is_shown_once_where_it_was_typed() {
        let mut items = vec![
            Item::Prompt {
                ts: 1,
                text: "fix it".into(),
            },
            Item::Answer {
                ts: 5,
                prompt: Some("fix it".into()),
                text: "done".into(),
                model: None,
                subagent: false,
                harvested: false,
                imported: false,
                outcome: None,
                feedback: None,
                usage: None,
                turn_id: None,
            },
            Item::Answer {
                ts: 9,
                prompt: Some("harvested prompt".into()),
                text: "ok".into(),
                model: None,
                subagent: false,
                harvested: true,
                imported: false,
                outcome: None,
                feedback: None,
                usage: None,
                turn_id: None,
            },
        ];
        drop_shown_prompts(&mut items);
        assert!(matches!(&items[1], Item::Answer { prompt: None, .. }));
        assert!(
            matches!(&items[2], Item::Answer { prompt: Some(p), .. } if p == "harvested prompt")
        );
    }

    fn answer(ts: i64, subagent: bool, turn_id: Option<&str>) -> Item {
        Item::Answer {
            ts,
            prompt: None,
            text: "a".into(),
            model: None,
            subagent,
            harvested: false,
            imported: false,
            outcome: None,
            feedback: None,
            usage: None,
            turn_id: turn_id.map(str::to_string),
        }
    }

    fn response(ts: i64, sidechain: bool, turn_id: Option<&str>, cost: Option<f64>) -> Response {
        Response {
            ts,
            turn_id: turn_id.map(str::to_string),
            sidechain,
            tokens: [1, 10, 100, 1000],
            cost,
        }
    }

    #[test]
    fn each_turn_gets_the_usage_of_its_own_responses() {
        let mut items = vec![
            answer(10, false, None),
            answer(15, true, None),
            answer(20, false, Some("t2")),
        ];
        let responses = [
            response(5, false, None, Some(1.0)),
            response(10, false, None, None),
            response(12, true, None, Some(0.5)),
            response(13, false, None, Some(2.0)),
            // Names its turn: counted there whatever its time.
            response(1, false, Some("t2"), Some(4.0)),
            // After every answer: a turn still running, in no answer.
            response(30, false, None, Some(8.0)),
        ];
        attribute_usage(&mut items, &responses);
        let usage = |i: usize| match &items[i] {
            Item::Answer { usage, .. } => usage.clone().unwrap(),
            _ => unreachable!(),
        };
        assert_eq!(usage(0).responses, 2);
        assert_eq!(usage(0).cost_usd, Some(1.0));
        assert_eq!(usage(0).unpriced, 1);
        assert_eq!(usage(0).tokens(), 2 * 1111);
        assert_eq!(usage(0).brief(), "2.2k tokens, $1.00+");
        assert_eq!((usage(1).responses, usage(1).cost_usd), (1, Some(0.5)));
        assert_eq!((usage(2).responses, usage(2).cost_usd), (2, Some(6.0)));
    }
}
