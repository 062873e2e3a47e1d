//! One module per subcommand, in data-flow order, and `pager`, which the reading commands
//! share.
//!
//! A subcommand returns its exit code, or an error that [`crate::support::failure::describe`] turns into the one
//! message and exit code the user sees; nothing here prints an error itself.

pub mod budget;
pub mod capture;
pub mod check;
pub mod config;
pub mod export;
pub mod gate;
pub mod generate;
pub mod hooks;
pub mod import;
pub mod ingest;
pub mod pager;
pub mod prune;
pub mod push;
pub mod query;
pub mod serve;
pub mod sessions;
pub mod show;
pub mod status;
pub mod statusline;
pub mod summarize;
pub mod usage;
pub mod verify;
