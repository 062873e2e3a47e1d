//! The `[budget]` limits on the hook path: where the spend stands for the event's agent and
//! project, by the spend file the shell read (a running ingest keeps it; the hook never
//! opens the database), and what that does to the event.
//!
//! - A tool call past a limit: in enforce mode denied with the budget's reason (unless the
//!   safety gate denied it already); in either mode its entry carries the limit as a gate
//!   rule, `budget:<limit>`, in `risk`, and the limit's figures in `budget`.
//! - A prompt past a limit: in enforce mode refused where the agent allows it; its entry
//!   carries the figures.
//! - Past `warn_at` (or past a limit nothing was refused for), once per session and window:
//!   the agent is told on a prompt or a session start, the events whose replies add context.
//!   The shell holds the "once" ([`Warning::marker`]).

use super::plan::Plan;
use super::reply::Notice;
use crate::model::budget::{BudgetMode, Level, Standing, RULE_PREFIX};
use crate::model::queue_line::budget::BudgetMark;
use crate::model::queue_line::HookType;
use crate::model::spend::SpendFile;
use crate::model::wire::reply;

/// A warning for the agent, given once per session, window and limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    /// A name for the "once": the same for the same session, limit and window.
    pub marker: String,
    /// What the agent is told.
    pub text: String,
    mark: BudgetMark,
}

impl Plan<'_> {
    /// True when the event needs the spend file: a limit is set, and the event is a tool call,
    /// a prompt or a session start. Every other event costs the hook nothing.
    pub fn budget_due(&self) -> bool {
        !self.config.budget.is_empty()
            && matches!(
                self.hook_type,
                Some(HookType::PreToolUse | HookType::UserPromptSubmit | HookType::SessionStart)
            )
    }

    /// Applies the limits to the event by `file` (the spend file, `None` when there is none):
    /// denies or refuses past a limit in enforce mode, marks the entry, and returns the
    /// warning due, if any (the shell gives it once: [`Plan::warn`]).
    pub fn apply_budget(
        &mut self,
        file: Option<&SpendFile>,
        now_ms: i64,
        config_file: &str,
    ) -> Option<Warning> {
        let budget = &self.config.budget;
        let standings =
            budget.standings_for(self.agent.as_str(), self.entry.cwd.as_deref(), file, now_ms);
        let worst = standings.first()?;
        let counted_at = file.map_or(0, |f| f.at);
        let mark = |s: &Standing<'_>| BudgetMark {
            limit: s.limit.key(),
            level: s.level.as_str().to_string(),
            spent: s.spent.map_or(0.0, |a| a.value()),
            allowed: s.limit.amount.value(),
            mode: budget.mode.as_str().to_string(),
            counted_at,
        };
        let enforce = budget.mode == BudgetMode::Enforce;
        if worst.level == Level::Over {
            self.entry.budget = Some(mark(worst));
            let reason = worst.deny_reason(config_file);
            let refused = match self.hook_type {
                Some(HookType::PreToolUse) => {
                    self.over_budget_call(worst, enforce, &reason);
                    true
                }
                Some(HookType::UserPromptSubmit) if enforce => self.refuse_prompt(&reason),
                _ => false,
            };
            if refused {
                return None;
            }
        }
        if !matches!(worst.level, Level::Warn | Level::Over) || !self.can_be_told() {
            return None;
        }
        let session = self.entry.session_id.as_deref().unwrap_or("");
        Some(Warning {
            marker: format!("{session}\n{}\n{}", worst.limit.key(), worst.from),
            text: worst.warning(),
            mark: mark(worst),
        })
    }

    /// The warning is the session's first for its limit and window: the agent is told, and
    /// the entry says so (unless it carries the limit it was past already).
    pub fn warn(&mut self, warning: Warning) {
        if self.entry.budget.is_none() {
            self.entry.budget = Some(warning.mark);
        }
        let event = self.event.clone();
        let event = event.or_else(|| self.hook_type.map(|t| t.as_str().to_string()));
        self.notice = Some(Notice {
            agent: self.agent,
            event: event.unwrap_or_default(),
            text: warning.text,
        });
    }

    /// A tool call past a limit: the limit joins the gate's rules; in enforce mode the call is
    /// denied, unless the safety gate denied it already.
    fn over_budget_call(&mut self, standing: &Standing<'_>, enforce: bool, reason: &str) {
        let rule = format!("{RULE_PREFIX}{}", standing.limit.key());
        self.entry.risk = Some(match self.entry.risk.take() {
            Some(rules) => format!("{rules},{rule}"),
            None => rule,
        });
        if self.deny.is_some() {
            return;
        }
        let decision = if enforce { "deny" } else { "allow" };
        self.entry.decision = Some(decision.to_string());
        if enforce {
            let event = self.event.as_deref().unwrap_or("PreToolUse");
            self.deny = Some(reply::deny(self.agent, event, reason));
        }
    }

    /// Refuses the prompt where the agent allows it; true when it did.
    fn refuse_prompt(&mut self, reason: &str) -> bool {
        let event = self.event.as_deref().unwrap_or("UserPromptSubmit");
        let Some(refusal) = reply::refuse_prompt(self.agent, event, reason) else {
            return false;
        };
        self.entry.decision = Some("deny".to_string());
        self.deny = Some(refusal);
        true
    }

    /// Whether the event's reply can tell the agent something: a session start, or a prompt
    /// where the agent reads its reply's context ([`reply::prompt_reads_context`]).
    fn can_be_told(&self) -> bool {
        match self.hook_type {
            Some(HookType::SessionStart) => true,
            Some(HookType::UserPromptSubmit) => reply::prompt_reads_context(self.agent),
            _ => false,
        }
    }
}
