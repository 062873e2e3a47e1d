//! The usage of one API response as a queue line carries it (`usage: [...]`), read by capture
//! from the transcript bytes it reads anyway and written by ingest into the `usage` table.
//!
//! ContextManager ignores the field. See docs/usage.md for what each agent records.

use std::collections::HashMap;
use std::hash::BuildHasher;

use serde::{Deserialize, Serialize};

/// The token counts of one API response, as the transcript line that carries them says.
///
/// One response may be written as several transcript lines (one per content block, streamed
/// counts growing): the dedup key is [`UsageRecord::key`], and of the lines sharing it the one
/// with the greatest `offset` (the last written) holds the final counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    /// The API message id (`message.id`).
    pub message_id: String,
    /// The API request id (`requestId`), when the transcript has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Input tokens not read from or written to the cache.
    #[serde(default)]
    pub input: u64,
    /// Output tokens.
    #[serde(default)]
    pub output: u64,
    /// Of `output`, the reasoning (thinking) tokens, when the agent reports them apart
    /// (Codex, Gemini CLI, Copilot CLI; not Claude Code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// Input tokens written to the cache, in all (`cache_creation_input_tokens`).
    #[serde(default)]
    pub cache_write: u64,
    /// Of `cache_write`, those with a 5-minute lifetime, when the transcript splits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_5m: Option<u64>,
    /// Of `cache_write`, those with a 1-hour lifetime, when the transcript splits them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<u64>,
    /// Input tokens read from the cache.
    #[serde(default)]
    pub cache_read: u64,
    /// The GitHub Copilot premium requests the response cost (its model's multiplier; 0 for
    /// an included model or your own key), as Copilot CLI reports them: a response's
    /// `usage.cost`, or a session's `requests.cost` per model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub premium_requests: Option<f64>,
    /// `usage.service_tier` (`standard`, `priority`, `batch`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<String>,
    /// The line's `timestamp`, epoch milliseconds. Never part of the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ts: Option<i64>,
    /// The line's `sessionId` (a subagent's lines name the parent session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The turn the response belongs to: the id of the user prompt that opened it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// True for a subagent's response (`isSidechain`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sidechain: bool,
    /// The subagent's id (`agentId`), when the line names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Byte offset of the line in its transcript: the later line of a response wins.
    #[serde(default)]
    pub offset: u64,
}

/// The message id prefix of a record that holds a session's totals for one model, as its
/// agent reported them at the end, rather than one response: Copilot CLI's
/// `session.shutdown` (`usage_copilot`). The store keeps such a record only for a session
/// with no per-response record (`store::usage`).
pub const SESSION_TOTAL: &str = "copilot-total:";

impl UsageRecord {
    /// The dedup key: (message id, request id), the request id empty when there is none.
    /// Never the timestamp: the lines of one response may carry different ones.
    pub fn key(&self) -> (&str, &str) {
        (&self.message_id, self.request_id.as_deref().unwrap_or(""))
    }

    /// True for a session's totals rather than one response ([`SESSION_TOTAL`]).
    pub fn is_session_total(&self) -> bool {
        self.message_id.starts_with(SESSION_TOTAL)
    }
}

/// One row per response: of the records sharing a key, the one with the greatest offset,
/// in the order the responses first appear.
pub fn dedup(records: Vec<UsageRecord>) -> Vec<UsageRecord> {
    let mut responses = Responses::default();
    for record in records {
        responses.push(record);
    }
    responses.into_records()
}

/// Usage records kept as [`dedup`] keeps them, as they are read: a response written over
/// several transcript lines takes one record's room, not one per line (the first hook of a
/// session reads a thousand such lines, and every record held is heap to fault in).
#[derive(Debug, Default)]
pub struct Responses {
    records: Vec<UsageRecord>,
    /// The hash of a key, to the index of the first record with that hash. Hashes, not
    /// keys: a lookup then costs no copy of the key; two keys sharing a hash are told apart
    /// by a scan of the records.
    index: HashMap<u64, usize>,
}

impl Responses {
    /// Adds `record`: a new response, or a later line of one already held, whose counts win
    /// when it was written later (its offset is not smaller).
    pub fn push(&mut self, record: UsageRecord) {
        let hash = self.index.hasher().hash_one(record.key());
        let held = match self.index.get(&hash) {
            Some(&i) if self.records[i].key() == record.key() => Some(i),
            Some(_) => self.records.iter().position(|r| r.key() == record.key()),
            None => None,
        };
        match held {
            Some(i) if self.records[i].offset <= record.offset => self.records[i] = record,
            Some(_) => {}
            None => {
                self.index.entry(hash).or_insert(self.records.len());
                self.records.push(record);
            }
        }
    }

    /// The records, one per response, in the order the responses first appeared.
    pub fn into_records(self) -> Vec<UsageRecord> {
        self.records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, req: Option<&str>, output: u64, offset: u64) -> UsageRecord {
        UsageRecord {
            message_id: id.into(),
            request_id: req.map(Into::into),
            output,
            offset,
            ..UsageRecord::default()
        }
    }

    #[test]
    fn the_last_line_of_a_response_wins_whatever_the_order_seen() {
        let got = dedup(vec![
            rec("m1", Some("r1"), 3, 10),
            rec("m2", None, 7, 20),
            rec("m1", Some("r1"), 1941, 30),
            rec("m1", Some("r1"), 5, 15),
            rec("m1", Some("r2"), 9, 40),
        ]);
        assert_eq!(
            got,
            vec![
                rec("m1", Some("r1"), 1941, 30),
                rec("m2", None, 7, 20),
                rec("m1", Some("r2"), 9, 40),
            ]
        );
    }

    #[test]
    fn keys_that_share_a_hash_stay_apart() {
        let mut responses = Responses::default();
        responses.push(rec("m1", None, 1, 10));
        // Forge a collision: the second key's hash already names the first record.
        let forged = responses.index.hasher().hash_one(("m2", ""));
        responses.index.insert(forged, 0);
        responses.push(rec("m2", None, 2, 20));
        responses.push(rec("m2", None, 3, 30));
        responses.push(rec("m1", None, 4, 40));
        assert_eq!(
            responses.into_records(),
            vec![rec("m1", None, 4, 40), rec("m2", None, 3, 30)]
        );
    }

    #[test]
    fn the_line_format_is_compact_and_round_trips() {
        let r = UsageRecord {
            message_id: "msg_1".into(),
            input: 3,
            cache_write_5m: Some(2),
            ..UsageRecord::default()
        };
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(
            text,
            r#"{"messageId":"msg_1","input":3,"output":0,"cacheWrite":0,"cacheWrite5m":2,"cacheRead":0,"offset":0}"#
        );
        assert_eq!(serde_json::from_str::<UsageRecord>(&text).unwrap(), r);
    }
}
