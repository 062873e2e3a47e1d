//! One module per subcommand, in data-flow order.
//!
//! A subcommand returns its exit code, or an error that [`crate::failure::describe`] turns into the one
//! message and exit code the user sees; nothing here prints an error itself.

pub mod capture;
pub mod config;
pub mod export;
pub mod generate;
pub mod hooks;
pub mod ingest;
pub mod prune;
pub mod query;
pub mod sessions;
pub mod show;
pub mod status;
pub mod summarize;
