//! The hook's planner: what one agent event records and what the agent is told, with no I/O.
//!
//! `cmstore capture` (`cmd/capture.rs`) is a thin shell around this stage: it reads stdin, the
//! clock, the configuration, the environment and the transcript, passes their values in,
//! appends the lines the plan gives, saves the transcript cursor and prints the reply. Every
//! decision about what an event records is made here, in two steps:
//!
//! 1. [`prepare`]: decode the payload, tell the agent and the event, normalize the payload
//!    into a [`QueueEntry`](crate::model::queue_line::QueueEntry), run the safety gate on PreToolUse,
//!    and name the transcript read the event needs ([`Plan::transcript`]).
//! 2. [`Plan::finish`]: with the [`Turns`] the shell read, fill in the final exchange of a
//!    Stop, add synthetic Stops for harvested turns, redact every entry, drop text when
//!    `store_text = false`, apply the `[events]` switches, and say the [`Reply`].
//!
//! [`queue_lines`] then serializes the entries once the shell knows how long the hook took.
//!
//! Debug-log notes go into the [`DebugLog`](crate::files::debug_log::DebugLog) buffer passed in (the
//! shell writes it out), built lazily so they cost nothing when the log is off. The one value
//! not passed in is each entry's id: [`QueueEntry::new`](crate::model::queue_line::QueueEntry::new)
//! draws a fresh UUIDv7 (clock and random bits), as every queue line needs its own.

mod budget;
mod exchange;
mod finish;
mod gate;
mod line;
mod plan;
mod privacy;
mod reading;
mod reply;
#[cfg(test)]
mod tests;

pub use budget::Warning;
pub use finish::{carry_usage, closed_entries, usage_entry, Outcome, Turns};
pub use line::queue_lines;
pub use plan::{prepare, Hook, PendingChecks, Plan};
pub use reading::{Location, ReadKind, TranscriptRead, WorkspaceMark};
pub use reply::{ContextFile, Notice, Reply};

/// Characters of each side of an exchange, or of a risky command, shown in the debug log.
const DEBUG_EXCERPT: usize = 80;
