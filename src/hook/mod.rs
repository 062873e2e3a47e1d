//! The hook side: what runs when an agent fires a hook, and what wires an agent to it.
//!
//! Nothing here reaches the store (`tests/architecture.rs`): the hook runs before any
//! database is opened.
//!
//! - [`capture`]: the planner `cmstore capture` runs (decode, gate, transcript, reply);
//! - [`checks`]: the `[checks]` a PostToolUse asks for, and their detached runner;
//! - [`agent_settings`]: each agent's hook file, read and merged by `cmstore hooks`;
//! - [`agent_version`]: the installed agent's version, which decides the events written;
//! - [`probe`]: `hooks doctor`'s probe, an installed hook command fired with a marked event.

pub mod agent_settings;
pub mod agent_version;
pub mod capture;
pub mod checks;
pub mod probe;
