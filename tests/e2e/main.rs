//! End-to-end tests with real agent CLIs: each test runs an agent from npm (installed by
//! `.ci/install-agents`) against a scripted mock of its model API on loopback, with cmstore's
//! hooks wired the way a user wires them, and asserts that what the agent did is what the store
//! says. docs/dev/e2e.md describes the suite; without the agents every test skips with a note.

mod anthropic;
mod claude;
mod cline;
mod codex;
mod copilot;
mod droid;
mod gemini;
mod google;
mod goose;
mod harness;
mod kilo;
mod kimi;
mod mock;
mod openai;
mod opencode;
mod opencode_plugin;
mod qoder;
mod qwen;
