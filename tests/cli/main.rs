//! Black-box tests of the `cmstore` binary, one test binary for every subcommand.

mod common;
mod ingest;
