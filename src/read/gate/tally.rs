//! `cmstore gate report`: how often each rule fired, per agent and project, and what the gate
//! denied and allowed.

use std::collections::BTreeMap;

use rusqlite::types::Value;

use super::Call;
use crate::support::human;

/// The calls a report covers, in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Recorded PreToolUse calls.
    pub calls: usize,
    /// Calls with a finding (a rule matched, or the gate could not read them).
    pub flagged: usize,
    /// Calls the gate denied.
    pub denied: usize,
    /// Calls the gate could not read (allowed, `risk: "unreadable"`).
    pub unreadable: usize,
}

/// How often one rule fired for one agent in one project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The rule's name (`unreadable` for calls the gate could not read).
    pub rule: String,
    pub agent: String,
    /// The last component of the working directory; empty when none was recorded.
    pub project: String,
    /// Calls the rule matched.
    pub fired: i64,
    /// Of those, denied (enforce mode).
    pub denied: i64,
    /// Of those, allowed (audit mode, or unreadable).
    pub allowed: i64,
    /// The first and last time it fired, epoch milliseconds.
    pub first_ts: i64,
    pub last_ts: i64,
}

/// Recorded calls with the same finding in the same place: the gate's `risk` and `decision`,
/// the agent and the working directory, how many calls, and when the first and the last was.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finding {
    /// The rules that matched, as recorded (comma-separated, or `unreadable`).
    pub risk: String,
    /// `allow` or `deny`.
    pub decision: Option<String>,
    pub agent: Option<String>,
    pub cwd: Option<String>,
    /// Calls with this finding here.
    pub calls: i64,
    /// The first and last of them, epoch milliseconds.
    pub first_ts: i64,
    pub last_ts: i64,
}

/// The totals and one row per (rule, agent, project), the most fired first.
pub fn tally(calls: &[Call]) -> (Totals, Vec<Row>) {
    let findings: Vec<Finding> = calls
        .iter()
        .filter_map(|call| {
            Some(Finding {
                risk: call.risk.clone()?,
                decision: call.decision.clone(),
                agent: call.agent.clone(),
                cwd: call.cwd.clone(),
                calls: 1,
                first_ts: call.ts,
                last_ts: call.ts,
            })
        })
        .collect();
    tally_findings(calls.len() as i64, &findings)
}

/// [`tally`] of `calls` recorded calls, of which `findings` are those with a `risk`, grouped.
pub fn tally_findings(calls: i64, findings: &[Finding]) -> (Totals, Vec<Row>) {
    let mut totals = Totals {
        calls: usize::try_from(calls).unwrap_or_default(),
        ..Totals::default()
    };
    let mut rows: BTreeMap<(String, String, String), Row> = BTreeMap::new();
    for found in findings {
        let rules = super::split_rules(Some(&found.risk));
        if rules.is_empty() {
            continue;
        }
        let n = usize::try_from(found.calls).unwrap_or_default();
        let denied = found.decision.as_deref() == Some("deny");
        totals.flagged += n;
        totals.denied += if denied { n } else { 0 };
        if rules.contains(&crate::model::safety::UNREADABLE) {
            totals.unreadable += n;
        }
        let agent = found.agent.as_deref().unwrap_or("unknown");
        let project = found.cwd.as_deref().map(human::project).unwrap_or_default();
        for rule in rules {
            let key = (rule.to_string(), agent.to_string(), project.to_string());
            let row = rows.entry(key).or_insert_with(|| Row {
                rule: rule.to_string(),
                agent: agent.to_string(),
                project: project.to_string(),
                fired: 0,
                denied: 0,
                allowed: 0,
                first_ts: found.first_ts,
                last_ts: found.last_ts,
            });
            row.fired += found.calls;
            if denied {
                row.denied += found.calls;
            } else {
                row.allowed += found.calls;
            }
            row.first_ts = row.first_ts.min(found.first_ts);
            row.last_ts = row.last_ts.max(found.last_ts);
        }
    }
    let mut rows: Vec<Row> = rows.into_values().collect();
    // Stable: the BTreeMap already ordered ties by rule, agent, project.
    rows.sort_by_key(|r| std::cmp::Reverse(r.fired));
    (totals, rows)
}

/// Columns of the raw rows (the machine formats).
pub const COLUMNS: [&str; 8] = [
    "rule", "agent", "project", "fired", "denied", "allowed", "first_ts", "last_ts",
];

/// The rows with raw values, under [`COLUMNS`].
pub fn raw(rows: &[Row]) -> (Vec<String>, Vec<Vec<Value>>) {
    let out = rows
        .iter()
        .map(|r| {
            vec![
                Value::Text(r.rule.clone()),
                Value::Text(r.agent.clone()),
                Value::Text(r.project.clone()),
                Value::Integer(r.fired),
                Value::Integer(r.denied),
                Value::Integer(r.allowed),
                Value::Integer(r.first_ts),
                Value::Integer(r.last_ts),
            ]
        })
        .collect();
    (COLUMNS.iter().map(|c| c.to_string()).collect(), out)
}

/// The rows as a person reads them: when the rule last fired, as "2h ago".
pub fn readable(rows: &[Row], now_ms: i64) -> (Vec<String>, Vec<Vec<Value>>) {
    let names = [
        "rule", "agent", "project", "fired", "denied", "allowed", "last",
    ];
    let out = rows
        .iter()
        .map(|r| {
            vec![
                Value::Text(r.rule.clone()),
                Value::Text(r.agent.clone()),
                Value::Text(r.project.clone()),
                Value::Integer(r.fired),
                Value::Integer(r.denied),
                Value::Integer(r.allowed),
                Value::Text(human::ago(r.last_ts, now_ms)),
            ]
        })
        .collect();
    (names.iter().map(|s| s.to_string()).collect(), out)
}

/// Columns of the readable table that may be cut to fit a narrow terminal.
pub const READABLE_CUTTABLE: &[&str] = &["project", "agent", "rule"];

/// One line saying what the rows are out of: `12 PreToolUse calls: 5 flagged (2 denied, 3
/// allowed), 1 of them unreadable.`
pub fn summary(totals: &Totals) -> String {
    let unreadable = match totals.unreadable {
        0 => String::new(),
        n => format!("; {n} of them unreadable"),
    };
    format!(
        "{} PreToolUse {}: {} flagged ({} denied, {} allowed){unreadable}.",
        totals.calls,
        if totals.calls == 1 { "call" } else { "calls" },
        totals.flagged,
        totals.denied,
        totals.flagged - totals.denied,
    )
}

/// A line saying who allowed the flagged calls the gate allowed: `Of the 6 allowed: 3 by
/// settings, 2 by the user, 1 not told.`; `None` when it allowed none, or nothing tells of
/// any (a line saying only that would be noise).
pub fn allowed_by_line(by: &[(String, i64)]) -> Option<String> {
    let total: i64 = by.iter().map(|(_, n)| n).sum();
    if by.iter().all(|(who, _)| who == "unknown") {
        return None;
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(who, n)| match crate::read::story::decided_text(who) {
            Some(by) => format!("{n} {by}"),
            None => format!("{n} not told"),
        })
        .collect();
    Some(format!("Of the {total} allowed: {}.", parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(ts: i64, agent: &str, cwd: &str, risk: Option<&str>, decision: Option<&str>) -> Call {
        Call {
            ts,
            agent: Some(agent.into()),
            cwd: Some(cwd.into()),
            risk: risk.map(str::to_string),
            decision: decision.map(str::to_string),
            ..Call::default()
        }
    }

    #[test]
    fn each_rule_counts_per_agent_and_project() {
        let calls = [
            call(1, "claude", "/p/web", Some("rm-rf-root"), Some("deny")),
            call(2, "claude", "/p/web/", Some("rm-rf-root,dd"), Some("allow")),
            call(3, "codex", "/p/api", Some("dd"), Some("deny")),
            call(4, "codex", "/p/api", None, None),
            call(5, "vscode", "/p/api", Some("unreadable"), Some("allow")),
        ];
        let (totals, rows) = tally(&calls);
        assert_eq!(
            totals,
            Totals {
                calls: 5,
                flagged: 4,
                denied: 2,
                unreadable: 1
            }
        );
        let got: Vec<_> = rows
            .iter()
            .map(|r| {
                (
                    r.rule.as_str(),
                    r.agent.as_str(),
                    r.project.as_str(),
                    r.fired,
                    r.denied,
                    r.allowed,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("rm-rf-root", "claude", "web", 2, 1, 1),
                ("dd", "claude", "web", 1, 0, 1),
                ("dd", "codex", "api", 1, 1, 0),
                ("unreadable", "vscode", "api", 1, 0, 1),
            ]
        );
        assert_eq!((rows[0].first_ts, rows[0].last_ts), (1, 2));
        assert_eq!(
            summary(&totals),
            "5 PreToolUse calls: 4 flagged (2 denied, 2 allowed); 1 of them unreadable."
        );
    }
}
