//! What the agent is told: a reply ready to print, or one built from a file the shell reads.

use serde_json::Value;

use crate::model::wire::{reply, Agent};

/// A file of the cmstore home whose text goes into a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextFile {
    /// `session-context.md`, injected as context.
    SessionContext,
    /// `knowledge-index.md`, shown as a system message before compaction.
    KnowledgeIndex,
}

/// The reply to the agent.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Print this as it is (`{}`, or the safety gate's deny reply).
    Ready(Value),
    /// Inject the session context (UserPromptSubmit, SubagentStart, SessionStart).
    Context {
        /// The agent, whose reply shape this is.
        agent: Agent,
        /// The event name the reply answers.
        event: String,
    },
    /// Show the knowledge index as a system message (PreCompact).
    SystemMessage,
}

impl Reply {
    /// The file whose text the reply needs, if any.
    pub fn needs(&self) -> Option<ContextFile> {
        match self {
            Reply::Ready(_) => None,
            Reply::Context { .. } => Some(ContextFile::SessionContext),
            Reply::SystemMessage => Some(ContextFile::KnowledgeIndex),
        }
    }

    /// The reply to print, given the text of [`Reply::needs`] (`None` when the file is missing
    /// or unreadable). Blank text gives `{}`.
    pub fn into_value(self, text: Option<&str>) -> Value {
        let text = text.map(str::trim).filter(|t| !t.is_empty());
        match (self, text) {
            (Reply::Ready(value), _) => value,
            (Reply::Context { agent, event }, Some(text)) => {
                reply::context_injection(agent, &event, text)
            }
            (Reply::SystemMessage, Some(text)) => reply::system_message(text),
            (Reply::Context { .. } | Reply::SystemMessage, None) => reply::empty(),
        }
    }
}

/// A budget warning to add to the reply, once the shell has it ([`Notice::told`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub(super) agent: Agent,
    pub(super) event: String,
    pub(super) text: String,
}

impl Notice {
    /// `reply` with the warning told to the agent ([`reply::with_notice`]).
    pub fn told(&self, reply: Value) -> Value {
        reply::with_notice(self.agent, &self.event, reply, &self.text)
    }
}
