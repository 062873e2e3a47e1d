//! What the configuration asks of automatic retention: the days kept, whether a running
//! ingest applies them by itself, and whether the queue is compacted too.

use crate::config::Config;

/// What the configuration asks of automatic retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Days kept.
    pub days: u32,
    /// `days` was set explicitly: a running ingest applies it.
    pub automatic: bool,
    /// The queue is compacted too.
    pub compact_queue: bool,
}

impl Policy {
    /// The policy `config` sets.
    pub fn of(config: &Config) -> Policy {
        Policy {
            days: config.retention_days,
            automatic: config.retention_explicit,
            compact_queue: config.compact_queue,
        }
    }

    /// The cutoff at `now_ms`: what is older goes.
    pub fn cutoff(&self, now_ms: i64) -> i64 {
        now_ms - i64::from(self.days) * 86_400_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_retention_is_automatic() {
        let mut config = Config::default();
        assert!(!Policy::of(&config).automatic);
        config.retention_days = 3;
        config.retention_explicit = true;
        let policy = Policy::of(&config);
        assert!(policy.automatic);
        assert_eq!(policy.cutoff(4 * 86_400_000), 86_400_000);
    }
}
