//! Black-box tests of the `cmstore` binary: one test binary, one module per subcommand.

mod agents;
mod browser;
mod capture;
mod checks;
mod common;
mod config;
mod gate;
mod hooks;
mod ingest;
mod prune;
mod query;
mod recipes;
mod resources;
mod safety;
mod serve;
mod sessions;
mod status;
mod summarize;
mod tool_calls;
mod torture;
mod transcripts;
mod usage;
mod workload;
