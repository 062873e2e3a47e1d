//! Leaves that know nothing of cmstore's data: the clock, the environment, time specs, the
//! zone times are read in, units for people, and the mapping from an error to an exit code.

pub mod clock;
pub mod env;
pub mod failure;
pub mod human;
pub mod timespec;
pub mod zone;
