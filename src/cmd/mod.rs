//! One module per subcommand, in data-flow order.

pub mod capture;
pub mod config;
pub mod generate;
pub mod hooks;
pub mod ingest;
pub mod prune;
pub mod query;
pub mod status;
pub mod summarize;
