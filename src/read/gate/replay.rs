//! `cmstore gate replay`: the rulings another rule set would have made on the recorded
//! PreToolUse calls, against the rulings the gate made.
//!
//! Each call is decided by [`safety::Gate`], the code capture's gate runs, on the tool name
//! and the tool input the line recorded, after the new configuration's redaction (capture
//! redacts before the gate looks). A call whose input the line does not hold exactly is not
//! replayed but counted: its payload was never read (cut at 16 MiB, or not JSON), no input was
//! recorded, or the input was shortened to fit the line.

use std::collections::BTreeMap;

use rusqlite::types::Value;

use super::{split_rules, Call};
use crate::config::{Config, Mode};
use crate::model::budget::{Budget, BudgetMode, RULE_PREFIX};
use crate::model::redact::Redactor;
use crate::model::safety::{self, Gate, Verdict};
use crate::model::shorten;
use crate::model::wire::Limits;

/// Why a call cannot be replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unreplayable {
    /// The payload was cut or did not parse: the gate saw no input.
    PayloadUnread,
    /// The line holds no tool input.
    NoInput,
    /// The tool input was shortened to fit the line.
    Shortened,
    /// The recorded input is not JSON.
    NotJson,
}

impl Unreplayable {
    /// How the reason reads in the summary.
    pub fn as_str(self) -> &'static str {
        match self {
            Unreplayable::PayloadUnread => "payload not read",
            Unreplayable::NoInput => "no input recorded",
            Unreplayable::Shortened => "input shortened",
            Unreplayable::NotJson => "input not JSON",
        }
    }
}

/// What happened to one call's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Allowed before, denied by the new rules.
    NewlyDenied,
    /// Denied before, allowed by the new rules.
    NewlyAllowed,
    /// The same decision, other rules matched.
    RulesChanged,
}

impl Change {
    /// How the change reads in the list.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::NewlyDenied => "newly denied",
            Change::NewlyAllowed => "newly allowed",
            Change::RulesChanged => "rules changed",
        }
    }
}

/// The counts of one rule (or of all calls) over the replayed calls.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleCounts {
    /// The rule's name, or [`ALL_CALLS`].
    pub rule: String,
    /// Replayed calls it matched before, and under the new rules.
    pub flagged_before: i64,
    pub flagged_after: i64,
    /// Of those, denied before, and denied under the new rules.
    pub denied_before: i64,
    pub denied_after: i64,
    /// Calls (it matched before or after) the new rules deny and the gate allowed.
    pub newly_denied: i64,
    /// Calls the new rules allow and the gate denied.
    pub newly_allowed: i64,
    /// Calls whose decision is the same.
    pub unchanged: i64,
    /// Calls it matched that could not be replayed.
    pub not_replayable: i64,
}

/// The name of the row that counts every call.
pub const ALL_CALLS: &str = "(all calls)";

/// One call whose ruling changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub change: Change,
    pub ts: i64,
    pub session_id: Option<String>,
    pub tool_name: Option<String>,
    /// The recorded `risk` and whether the gate denied the call.
    pub risk_before: Option<String>,
    pub denied_before: bool,
    /// The new rules' `risk` and decision.
    pub risk_after: Option<String>,
    pub denied_after: bool,
    /// The command line of a shell tool, or the line of another tool's text the new rules
    /// matched, else the start of the input's JSON ([`INPUT_CHARS`]).
    pub command: String,
}

/// The whole replay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    /// Every call read, replayed or not.
    pub calls: usize,
    /// The new configuration's mode is enforce.
    pub enforce: bool,
    /// Every call first ([`ALL_CALLS`]), then each rule that matched before or after, by name.
    pub rules: Vec<RuleCounts>,
    /// Calls that could not be replayed, by reason.
    pub not_replayable: BTreeMap<Unreplayable, usize>,
    /// Calls whose decision or rules changed, oldest first.
    pub changed: Vec<Changed>,
    /// Calls recorded past a `[budget]` limit (a `budget:` rule in `risk`).
    pub past_budget: usize,
}

/// Replays `calls` under `config`'s rules and mode.
pub fn replay(calls: &[Call], config: &Config) -> Replay {
    let enforce = config.mode == Mode::Enforce;
    let budget_enforced = config.budget.mode == BudgetMode::Enforce;
    let gate = Gate::new(&config.safety, enforce);
    let redactor = Redactor::new(&config.redact);
    let mut out = Replay {
        calls: calls.len(),
        enforce,
        ..Replay::default()
    };
    let mut all = RuleCounts {
        rule: ALL_CALLS.to_string(),
        ..RuleCounts::default()
    };
    let mut by_rule: BTreeMap<String, RuleCounts> = BTreeMap::new();
    for call in calls {
        let before = call.rules();
        let input = match replayable_input(call, &redactor) {
            Ok(input) => input,
            Err(why) => {
                *out.not_replayable.entry(why).or_default() += 1;
                all.not_replayable += 1;
                for rule in &before {
                    counts(&mut by_rule, rule).not_replayable += 1;
                }
                continue;
            }
        };
        let ruling = gate.decide(call.tool_name.as_deref(), Some(&input));
        let (risk_after, over_budget) = with_budget_rules(ruling.risk(), &before, &config.budget);
        out.past_budget += usize::from(before.iter().any(|r| r.starts_with(RULE_PREFIX)));
        let after = split_rules(risk_after.as_deref());
        let (was, now) = (
            call.denied(),
            ruling.denied() || over_budget && budget_enforced,
        );
        tally(&mut all, !before.is_empty(), !after.is_empty(), was, now);
        let mut involved: Vec<&str> = before.iter().chain(&after).copied().collect();
        involved.sort_unstable();
        involved.dedup();
        for rule in involved {
            let row = counts(&mut by_rule, rule);
            tally(row, before.contains(&rule), after.contains(&rule), was, now);
        }
        if let Some(change) = change(was, now, &before, &after) {
            out.changed.push(Changed {
                change,
                ts: call.ts,
                session_id: call.session_id.clone(),
                tool_name: call.tool_name.clone(),
                risk_before: call.risk.clone(),
                denied_before: was,
                risk_after,
                denied_after: now,
                command: command(call.tool_name.as_deref(), &input, &ruling.verdict),
            });
        }
    }
    out.rules = std::iter::once(all).chain(by_rule.into_values()).collect();
    out
}

/// The input the gate saw, as the line recorded it, with `redactor` applied; or why the line
/// does not hold it exactly.
fn replayable_input(call: &Call, redactor: &Redactor) -> Result<serde_json::Value, Unreplayable> {
    let recorded = &call.input;
    if recorded.payload_unread {
        return Err(Unreplayable::PayloadUnread);
    }
    let text = recorded.text.as_deref().ok_or(Unreplayable::NoInput)?;
    // Shortening always leaves an ellipsis, and only an input longer than the limit is
    // shortened; a payload no larger than the limit cannot hold one.
    let limit = Limits::default().tool_input as i64;
    if text.contains(shorten::ELLIPSIS) && recorded.payload_bytes.is_none_or(|b| b > limit) {
        return Err(Unreplayable::Shortened);
    }
    let mut input: serde_json::Value =
        serde_json::from_str(text).map_err(|_| Unreplayable::NotJson)?;
    redactor.redact_value(&mut input);
    Ok(input)
}

/// The new rules' `risk` with the recorded budget rules (`budget:<limit>`) of the call whose
/// limit the new configuration still sets, and whether there are any. A budget rule is
/// replayed as recorded: the spend at the call's time is the record's; a limit the record
/// never crossed cannot be judged here.
fn with_budget_rules(
    risk: Option<String>,
    before: &[&str],
    budget: &Budget,
) -> (Option<String>, bool) {
    let kept: Vec<&str> = before
        .iter()
        .copied()
        .filter(|rule| {
            rule.strip_prefix(RULE_PREFIX)
                .is_some_and(|key| budget.limits.iter().any(|l| l.key() == key))
        })
        .collect();
    if kept.is_empty() {
        return (risk, false);
    }
    let rules: Vec<&str> = split_rules(risk.as_deref())
        .into_iter()
        .chain(kept)
        .collect();
    (Some(rules.join(",")), true)
}

fn counts<'m>(by_rule: &'m mut BTreeMap<String, RuleCounts>, rule: &str) -> &'m mut RuleCounts {
    by_rule
        .entry(rule.to_string())
        .or_insert_with(|| RuleCounts {
            rule: rule.to_string(),
            ..RuleCounts::default()
        })
}

fn tally(row: &mut RuleCounts, matched_before: bool, matched_after: bool, was: bool, now: bool) {
    let flag = |matched: bool, denied: bool| (i64::from(matched), i64::from(matched && denied));
    let (flagged, denied) = flag(matched_before, was);
    row.flagged_before += flagged;
    row.denied_before += denied;
    let (flagged, denied) = flag(matched_after, now);
    row.flagged_after += flagged;
    row.denied_after += denied;
    match (was, now) {
        (false, true) => row.newly_denied += 1,
        (true, false) => row.newly_allowed += 1,
        _ => row.unchanged += 1,
    }
}

fn change(was: bool, now: bool, before: &[&str], after: &[&str]) -> Option<Change> {
    match (was, now) {
        (false, true) => Some(Change::NewlyDenied),
        (true, false) => Some(Change::NewlyAllowed),
        _ if before != after => Some(Change::RulesChanged),
        _ => None,
    }
}

/// Characters of a tool's input shown for a call no rule matches any more.
pub const INPUT_CHARS: usize = 200;

/// What a person recognises a call by, never a whole file: what the new rules matched (a shell
/// tool's command line, else the matched line), a shell tool's command line, else the start of
/// its input's JSON.
fn command(tool: Option<&str>, input: &serde_json::Value, verdict: &Verdict) -> String {
    let shell = tool.is_some_and(safety::is_shell_tool);
    match verdict {
        Verdict::Risky { text, .. } => text.clone(),
        _ => shell
            .then(|| safety::shell_command(input))
            .flatten()
            .unwrap_or_else(|| shorten::compact_json(input, INPUT_CHARS)),
    }
}

/// Columns of the raw per-rule rows (the machine formats).
pub const RULE_COLUMNS: [&str; 9] = [
    "rule",
    "flagged_before",
    "flagged_after",
    "denied_before",
    "denied_after",
    "newly_denied",
    "newly_allowed",
    "unchanged",
    "not_replayable",
];

/// The per-rule rows with raw values, under [`RULE_COLUMNS`].
pub fn rules_raw(replay: &Replay) -> (Vec<String>, Vec<Vec<Value>>) {
    let rows = replay
        .rules
        .iter()
        .map(|r| {
            let mut row = vec![Value::Text(r.rule.clone())];
            row.extend(
                [
                    r.flagged_before,
                    r.flagged_after,
                    r.denied_before,
                    r.denied_after,
                    r.newly_denied,
                    r.newly_allowed,
                    r.unchanged,
                    r.not_replayable,
                ]
                .map(Value::Integer),
            );
            row
        })
        .collect();
    (RULE_COLUMNS.iter().map(|c| c.to_string()).collect(), rows)
}

/// The per-rule rows as a person reads them: before and after side by side.
pub fn rules_readable(replay: &Replay) -> (Vec<String>, Vec<Vec<Value>>) {
    let names = [
        "rule",
        "flagged",
        "denied",
        "newly denied",
        "newly allowed",
        "unchanged",
        "not replayable",
    ];
    let arrow = |a: i64, b: i64| Value::Text(format!("{a} → {b}"));
    let rows = replay
        .rules
        .iter()
        .map(|r| {
            vec![
                Value::Text(r.rule.clone()),
                arrow(r.flagged_before, r.flagged_after),
                arrow(r.denied_before, r.denied_after),
                Value::Integer(r.newly_denied),
                Value::Integer(r.newly_allowed),
                Value::Integer(r.unchanged),
                Value::Integer(r.not_replayable),
            ]
        })
        .collect();
    (names.iter().map(|s| s.to_string()).collect(), rows)
}

/// Columns of the raw changed calls.
pub const CHANGE_COLUMNS: [&str; 9] = [
    "change",
    "ts",
    "session_id",
    "tool_name",
    "risk_before",
    "decision_before",
    "risk_after",
    "decision_after",
    "command",
];

fn decision(denied: bool) -> &'static str {
    if denied {
        "deny"
    } else {
        "allow"
    }
}

fn opt(text: &Option<String>) -> Value {
    text.clone().map_or(Value::Null, Value::Text)
}

/// The changed calls with raw values, under [`CHANGE_COLUMNS`].
pub fn changes_raw(replay: &Replay) -> (Vec<String>, Vec<Vec<Value>>) {
    let rows = replay
        .changed
        .iter()
        .map(|c| {
            vec![
                Value::Text(c.change.as_str().to_string()),
                Value::Integer(c.ts),
                opt(&c.session_id),
                opt(&c.tool_name),
                opt(&c.risk_before),
                Value::Text(decision(c.denied_before).to_string()),
                opt(&c.risk_after),
                Value::Text(decision(c.denied_after).to_string()),
                Value::Text(c.command.clone()),
            ]
        })
        .collect();
    (CHANGE_COLUMNS.iter().map(|c| c.to_string()).collect(), rows)
}

/// Characters of a command the readable list shows before the table fits it further.
const COMMAND_CHARS: usize = 120;

/// The changed calls as a person reads them: `session` is whatever `short` makes of the id (a
/// unique prefix), `when` what `time` makes of the moment; `rules` the rules that matched,
/// `before → after` when they differ (`-` for none).
pub fn changes_readable(
    replay: &Replay,
    short: &dyn Fn(&str) -> String,
    time: &dyn Fn(i64) -> String,
) -> (Vec<String>, Vec<Vec<Value>>) {
    let names = ["change", "session", "when", "tool", "rules", "command"];
    let rows = replay
        .changed
        .iter()
        .map(|c| {
            vec![
                Value::Text(c.change.as_str().to_string()),
                Value::Text(c.session_id.as_deref().map(short).unwrap_or_default()),
                Value::Text(time(c.ts)),
                Value::Text(c.tool_name.clone().unwrap_or_default()),
                Value::Text(rules_text(&c.risk_before, &c.risk_after)),
                Value::Text(shorten::cut_text(&c.command, COMMAND_CHARS)),
            ]
        })
        .collect();
    (names.iter().map(|s| s.to_string()).collect(), rows)
}

/// `rm-rf-root` when the same rules matched before and after, else `dd → -`.
fn rules_text(before: &Option<String>, after: &Option<String>) -> String {
    let shown = |risk: &Option<String>| risk.clone().unwrap_or_else(|| "-".to_string());
    if before == after {
        shown(before)
    } else {
        format!("{} → {}", shown(before), shown(after))
    }
}

/// Columns of the readable list that may be cut to fit.
pub const CHANGES_CUTTABLE: &[&str] = &["command", "rules"];

/// Columns of the readable per-rule table that may be cut to fit.
pub const RULES_CUTTABLE: &[&str] = &["rule"];

/// A few lines: whose rules, what was replayed and what changed, what could not be.
pub fn summary(replay: &Replay, origin: &str) -> String {
    let all = replay.rules.first().cloned().unwrap_or_default();
    let replayed = replay.calls - replay.not_replayable.values().sum::<usize>();
    let mode = if replay.enforce { "enforce" } else { "audit" };
    let mut text = format!(
        "Rules of {origin} (mode {mode})\n\
         Replayed {replayed} of {} recorded PreToolUse calls: \
         {} newly denied, {} newly allowed, {} unchanged.",
        replay.calls, all.newly_denied, all.newly_allowed, all.unchanged
    );
    if replay.past_budget > 0 {
        text.push_str(&format!(
            "\n{} calls were past a budget limit: each is judged by the new [budget] mode if \
             the new configuration still sets that limit (a new limit is not replayed).",
            replay.past_budget
        ));
    }
    if !replay.not_replayable.is_empty() {
        let why: Vec<String> = replay
            .not_replayable
            .iter()
            .map(|(why, n)| format!("{n} {}", why.as_str()))
            .collect();
        text.push_str(&format!(
            "\nNot replayable: {} ({}).",
            all.not_replayable,
            why.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::safety::{AddedRule, Rules};
    use crate::read::gate::RecordedInput;

    fn shell(command: &str, risk: Option<&str>, decision: Option<&str>) -> Call {
        Call {
            ts: 1,
            session_id: Some("s".into()),
            tool_name: Some("Bash".into()),
            risk: risk.map(str::to_string),
            decision: decision.map(str::to_string),
            input: RecordedInput {
                text: Some(serde_json::json!({ "command": command }).to_string()),
                payload_unread: false,
                payload_bytes: Some(100),
            },
            ..Call::default()
        }
    }

    fn config(mode: Mode, rules: Rules) -> Config {
        Config {
            mode,
            safety: rules,
            ..Config::default()
        }
    }

    #[test]
    fn enforcing_denies_what_audit_allowed_and_counts_per_rule() {
        let calls = [
            shell("rm -rf /", Some("rm-rf-root"), Some("allow")),
            shell("git push --force", Some("git-push-force"), Some("allow")),
            shell("ls", None, None),
        ];
        let strict = config(
            Mode::Enforce,
            Rules {
                remove: vec!["git-push-force".into()],
                add: vec![AddedRule::shell("ls", r"^ls$")],
            },
        );
        let r = replay(&calls, &strict);
        let all = &r.rules[0];
        assert_eq!(
            (all.newly_denied, all.newly_allowed, all.unchanged),
            (2, 0, 1)
        );
        let rule = |name: &str| r.rules.iter().find(|c| c.rule == name).unwrap().clone();
        assert_eq!(
            (
                rule("rm-rf-root").flagged_after,
                rule("rm-rf-root").newly_denied
            ),
            (1, 1)
        );
        let push = rule("git-push-force");
        assert_eq!(
            (push.flagged_before, push.flagged_after, push.unchanged),
            (1, 0, 1)
        );
        assert_eq!(rule("ls").newly_denied, 1);
        let changes: Vec<_> = r
            .changed
            .iter()
            .map(|c| (c.change, c.command.as_str()))
            .collect();
        assert_eq!(
            changes,
            vec![
                (Change::NewlyDenied, "rm -rf /"),
                (Change::RulesChanged, "git push --force"),
                (Change::NewlyDenied, "ls"),
            ]
        );
    }

    #[test]
    fn calls_whose_input_is_not_on_the_line_are_counted_not_guessed() {
        let mut unread = shell("rm -rf /", Some("unreadable"), Some("allow"));
        unread.input.payload_unread = true;
        let mut none = shell("x", None, None);
        none.input.text = None;
        let long = format!("rm -rf / {}", "x".repeat(9000));
        let mut cut = shell(
            &shorten::cut_text(&long, 8000),
            Some("rm-rf-root"),
            Some("allow"),
        );
        cut.input.payload_bytes = Some(9100);
        // An ellipsis in a small payload is the user's own: replayed.
        let small = shell("echo … && rm -rf /", Some("rm-rf-root"), Some("allow"));
        let r = replay(
            &[unread, none, cut, small],
            &config(Mode::Enforce, Rules::default()),
        );
        let why: Vec<_> = r.not_replayable.iter().map(|(w, n)| (*w, *n)).collect();
        assert_eq!(
            why,
            vec![
                (Unreplayable::PayloadUnread, 1),
                (Unreplayable::NoInput, 1),
                (Unreplayable::Shortened, 1)
            ]
        );
        assert_eq!((r.rules[0].not_replayable, r.rules[0].newly_denied), (3, 1));
        let unread_row = r.rules.iter().find(|c| c.rule == "unreadable").unwrap();
        assert_eq!(unread_row.not_replayable, 1);
        assert_eq!(
            summary(&r, "x.toml"),
            "Rules of x.toml (mode enforce)\n\
             Replayed 1 of 4 recorded PreToolUse calls: 1 newly denied, 0 newly allowed, \
             0 unchanged.\n\
             Not replayable: 3 (1 payload not read, 1 no input recorded, 1 input shortened)."
        );
    }

    #[test]
    fn a_changed_call_to_another_tool_shows_a_line_or_the_start_never_a_file() {
        let content = format!(
            "{}\ndrop table users;\n{}",
            "a".repeat(3000),
            "b".repeat(3000)
        );
        let input = serde_json::json!({"file_path": "/m.sql", "content": content});
        let write = |risk: Option<&str>, decision: Option<&str>| Call {
            tool_name: Some("Write".into()),
            risk: risk.map(str::to_string),
            decision: decision.map(str::to_string),
            input: RecordedInput {
                text: Some(input.to_string()),
                payload_unread: false,
                payload_bytes: Some(7000),
            },
            ..Call::default()
        };
        let on_files = Rules {
            add: vec![AddedRule {
                scope: crate::model::safety::Scope::AnyText,
                ..AddedRule::shell("drops", r"(?i)\bdrop\s+table\b")
            }],
            ..Rules::default()
        };
        let denied = replay(&[write(None, None)], &config(Mode::Enforce, on_files));
        assert_eq!(denied.changed[0].command, "drop table users;");
        // Recorded as denied by a cmstore whose SQL rules looked at files: allowed now.
        let allowed = replay(
            &[write(Some("drop-table"), Some("deny"))],
            &config(Mode::Enforce, Rules::default()),
        );
        let shown = &allowed.changed[0].command;
        assert_eq!(allowed.changed[0].change, Change::NewlyAllowed);
        assert!(shown.chars().count() <= INPUT_CHARS, "{shown}");
        let parsed: serde_json::Value = serde_json::from_str(shown).unwrap();
        assert_eq!(parsed["file_path"], "/m.sql");
    }

    #[test]
    fn the_new_configurations_redaction_applies_before_its_rules() {
        let call = shell("deploy --token hunter2-secret", None, None);
        let rules = Rules {
            add: vec![AddedRule::shell("deploy-secret", r"hunter2")],
            remove: Vec::new(),
        };
        let mut strict = config(Mode::Enforce, rules);
        assert_eq!(
            replay(std::slice::from_ref(&call), &strict).rules[0].newly_denied,
            1
        );
        strict.redact = vec!["hunter2-secret".into()];
        assert_eq!(replay(&[call], &strict).rules[0].newly_denied, 0);
    }
}
