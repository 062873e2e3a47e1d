//! Black-box tests of the `cmstore` binary: one test binary, one module per subcommand.

mod agents;
mod capture;
mod common;
mod config;
mod hooks;
mod ingest;
mod otlp_collector;
mod otlp_continuous;
mod otlp_export;
mod otlp_receiver;
mod prune;
mod query;
mod recipes;
mod resources;
mod safety;
mod sessions;
mod status;
mod summarize;
mod tool_calls;
mod torture;
mod transcripts;
mod workload;
