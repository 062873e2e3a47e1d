//! Black-box tests of the `cmstore` binary: one test binary, one module per subcommand.

mod capture;
mod common;
mod hooks;
mod ingest;
mod query;
mod resources;
mod safety;
mod workload;
