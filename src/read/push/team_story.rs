//! `cmstore show --store`: one session's story read from the team store, told as `show`
//! tells a local one ([`crate::read::story`]): its prompts, starts, ends and compactions from
//! the team's `events`, its tool calls, its answers from `turns`, and the usage of its
//! responses. What the machine's content profile kept off the server is said as such, not
//! left blank: under `none` a prompt or an answer reads [`NOT_SENT`]. Why a call failed (its
//! exit code and error) is read from the line that reported it where the machine sent its
//! lines; who decided a call as the machine read it from the call's lines (team migration
//! 0005).

use std::collections::HashMap;

use postgres::Client;
use rusqlite::types::Value;
use serde::Serialize;

use super::server::ServerError;
use super::team_query::run_report;
use crate::read::report::{integer, take_text};
use crate::read::story::{self, Item, Story};

/// What a prompt or an answer the machine did not send reads.
pub const NOT_SENT: &str = "(not sent to the team store: content \"none\")";

/// A session of the team store: on which machine, whose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Found {
    pub machine_id: String,
    pub user_label: Option<String>,
    pub session_id: String,
}

/// A story with the machine and user it is of.
#[derive(Debug, Clone, Serialize)]
pub struct TeamStory {
    pub machine_id: String,
    pub user_label: Option<String>,
    #[serde(flatten)]
    pub story: Story,
}

/// The session `given` names (a whole id, else a unique prefix), among those of `machine`
/// and `user` when given. An id two machines share needs `--machine`.
pub fn resolve(
    client: &mut Client,
    given: &str,
    machine: Option<&str>,
    user: Option<&str>,
) -> Result<Found, ServerError> {
    let sql = "SELECT machine_id, user_label, session_id, session_id = $1 FROM sessions \
               WHERE starts_with(session_id, $1) AND ($2 = '' OR machine_id = $2) \
               AND ($3 = '' OR user_label = $3) \
               ORDER BY session_id = $1 DESC, session_id, machine_id LIMIT 11";
    let params = [
        given.to_string(),
        machine.unwrap_or("").to_string(),
        user.unwrap_or("").to_string(),
    ];
    let (_, rows) = run_report(client, sql, &params)?;
    let found: Vec<(Found, bool)> = rows
        .into_iter()
        .map(|mut r| {
            let exact = integer(&r[3]) == Some(1);
            let found = Found {
                machine_id: take_text(&mut r[0]).unwrap_or_default(),
                user_label: take_text(&mut r[1]),
                session_id: take_text(&mut r[2]).unwrap_or_default(),
            };
            (found, exact)
        })
        .collect();
    let exact: Vec<&Found> = found.iter().filter(|f| f.1).map(|f| &f.0).collect();
    let candidates: Vec<&Found> = match exact.is_empty() {
        true => found.iter().map(|f| &f.0).collect(),
        false => exact,
    };
    match candidates.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ServerError::Settings(format!(
            "no session of the team store matches {given:?} (`cmstore sessions --store` lists them)"
        ))),
        many if many.iter().all(|f| f.session_id == many[0].session_id) => {
            let machines: Vec<&str> = many.iter().map(|f| f.machine_id.as_str()).collect();
            Err(ServerError::Settings(format!(
                "session {} is on {} machines ({}): choose one with --machine",
                many[0].session_id,
                machines.len(),
                machines.join(", ")
            )))
        }
        many => {
            let listed: Vec<String> = many
                .iter()
                .take(10)
                .map(|f| format!("{} on {}", f.session_id, f.machine_id))
                .collect();
            Err(ServerError::Settings(format!(
                "{given:?} names {} sessions of the team store ({}): give more of the id",
                if many.len() > 10 {
                    "more than 10".to_string()
                } else {
                    many.len().to_string()
                },
                listed.join(", ")
            )))
        }
    }
}

/// The story of `found`; `None` when it went from the server since it was found.
pub fn load(client: &mut Client, found: &Found) -> Result<Option<TeamStory>, ServerError> {
    let key = [found.machine_id.clone(), found.session_id.clone()];
    let (_, heads) = run_report(client, HEAD, &key)?;
    let Some(head) = heads.first().map(|r| story::head_of(r)) else {
        return Ok(None);
    };
    let (_, content) = run_report(
        client,
        "SELECT content FROM machines WHERE machine_id = $1",
        &key[..1],
    )?;
    let none_sent = content
        .first()
        .is_some_and(|r| matches!(&r[0], Value::Text(c) if c == "none"));
    let mut items: Vec<Item> = run_report(client, OWN_LINES, &key)?
        .1
        .into_iter()
        .filter_map(story::own_line_of)
        .collect();
    let (_, calls) = run_report(client, TOOL_CALLS, &key)?;
    // Why each failed call failed, from the line that reported it, where the machine sent its
    // lines (`full`, `redacted`).
    let (_, failures) = run_report(client, FAILURES, &key)?;
    let failures: HashMap<String, story::Failure> =
        failures.into_iter().filter_map(story::failure_of).collect();
    items.extend(calls.into_iter().filter_map(|r| call_of(r, &failures)));
    let answers = format!(
        "SELECT {} FROM turns WHERE machine_id = $1 AND session_id = $2",
        story::ANSWER_COLUMNS
    );
    items.extend(
        run_report(client, &answers, &key)?
            .1
            .into_iter()
            .filter_map(story::answer_of),
    );
    if none_sent {
        items.iter_mut().for_each(say_not_sent);
    }
    let responses: Vec<story::Response> = run_report(client, RESPONSES, &key)?
        .1
        .into_iter()
        .map(story::response_of)
        .collect();
    Ok(Some(TeamStory {
        machine_id: found.machine_id.clone(),
        user_label: found.user_label.clone(),
        story: story::assemble(head, items, &responses),
    }))
}

const HEAD: &str = "SELECT s.session_id, s.agent, s.model, s.cwd, s.first_seen, s.last_seen, \
     s.ended, s.prompts, s.turns, \
     (SELECT count(*) FROM turns t WHERE t.machine_id = s.machine_id \
       AND t.session_id = s.session_id AND t.hook_type = 'SubagentStop'), \
     s.tool_uses, s.tool_failures, s.estimated_tokens \
     FROM v_sessions s WHERE s.machine_id = $1 AND s.session_id = $2";

/// As the local story's (`story::OWN_LINES`), the kind's field from the line when it was sent
/// (`team_jsonb`, team migration 0003: NULL for a line that is not JSON PostgreSQL takes).
const OWN_LINES: &str = "SELECT ts, hook_type, prompt, \
     CASE hook_type WHEN 'SessionStart' THEN team_jsonb(entry) ->> 'source' \
         WHEN 'SessionEnd' THEN team_jsonb(entry) ->> 'reason' \
         WHEN 'PreCompact' THEN team_jsonb(entry) ->> 'trigger' END \
     FROM events WHERE machine_id = $1 AND session_id = $2 \
       AND hook_type IN ('UserPromptSubmit', 'SessionStart', 'SessionEnd', 'PreCompact') \
     ORDER BY ts, seq";

/// Who decided each call (`decided_by`, team migration 0005) as the machine read it from the
/// call's lines; NULL where an older cmstore pushed the call.
const TOOL_CALLS: &str = "SELECT coalesce(start_ts, end_ts), coalesce(tool_name, '?'), \
     duration_ms, outcome, input, risk, decision, delegated_agent, post_event_id, decided_by \
     FROM tool_calls WHERE machine_id = $1 AND session_id = $2";

/// As the local story's failures: each failed call's reporting line's exit code, error and
/// tool response (none where the line was not sent, or is not JSON PostgreSQL takes).
const FAILURES: &str = "SELECT e.id, \
     CASE WHEN jsonb_typeof(j -> 'exitCode') = 'number' \
         THEN (j ->> 'exitCode')::numeric::bigint END, \
     j -> 'error' ->> 'message', j ->> 'toolResponse' \
     FROM tool_calls c \
     JOIN events e ON e.machine_id = c.machine_id AND e.id = c.post_event_id, \
     LATERAL (SELECT team_jsonb(e.entry) AS j) AS line \
     WHERE c.machine_id = $1 AND c.session_id = $2 AND c.outcome = 'failed' \
       AND e.entry IS NOT NULL";

/// As the local story's (`story::RESPONSES`).
const RESPONSES: &str = "SELECT ts, turn_id, sidechain, input_tokens, output_tokens, \
     cache_write_tokens, cache_read_tokens, cost_usd \
     FROM v_usage WHERE machine_id = $1 AND session_id = $2 ORDER BY ts, message_id";

fn call_of(mut r: Vec<Value>, failures: &HashMap<String, story::Failure>) -> Option<Item> {
    let (exit_code, error) = take_text(&mut r[8])
        .and_then(|id| failures.get(&id).cloned())
        .unwrap_or_default();
    Some(Item::ToolCall {
        ts: integer(&r[0])?,
        tool: take_text(&mut r[1]).unwrap_or_default(),
        duration_ms: integer(&r[2]),
        outcome: take_text(&mut r[3]),
        input: take_text(&mut r[4]),
        risk: take_text(&mut r[5]),
        decision: take_text(&mut r[6]),
        delegated_to: take_text(&mut r[7]),
        // As locally: a call nothing tells of (`unknown`) says nothing.
        decided_by: take_text(&mut r[9]).filter(|by| by != "unknown"),
        exit_code,
        error,
        // The team store holds the calls the hooks recorded, not the transcripts' items.
        imported: false,
    })
}

/// A prompt or an answer without text, of a machine that sends none, says so.
fn say_not_sent(item: &mut Item) {
    match item {
        Item::Prompt { text, .. } | Item::Answer { text, .. } if text.is_empty() => {
            *text = NOT_SENT.to_string();
        }
        _ => {}
    }
}
