//! One module per subcommand, in data-flow order.

pub mod capture;
pub mod ingest;
