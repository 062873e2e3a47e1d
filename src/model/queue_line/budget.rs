//! The `budget` object of a queue line: what a `[budget]` limit said of the event
//! (docs/budget.md). capture writes it on a tool call or prompt made past a limit, and on the
//! event whose reply warned the agent past `warn_at`. No I/O.

use serde::{Deserialize, Serialize};

/// A limit's standing when the event came, as the spend file showed it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetMark {
    /// The limit ([`Limit::key`](crate::model::budget::Limit::key)): `day.usd`,
    /// `week.tokens.agent=codex`.
    pub limit: String,
    /// `over` (the limit reached: denied in enforce mode, recorded in audit mode) or `warn`
    /// (past `warn_at`: the agent was told).
    pub level: String,
    /// The spend in the limit's unit (USD or tokens).
    pub spent: f64,
    /// The limit, in its unit.
    pub allowed: f64,
    /// `[budget]`'s mode: `audit` or `enforce`.
    pub mode: String,
    /// When ingest counted the spend (the spend file's `at`, epoch ms).
    pub counted_at: i64,
}
