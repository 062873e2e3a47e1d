//! Transcript readers (Claude Code, VS Code Copilot), per-session cursors, turn assembly.
