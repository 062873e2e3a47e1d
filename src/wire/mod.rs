//! Agent payload dialects -> the canonical queue entry.
