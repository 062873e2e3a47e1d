// cmstore: hooks-v3
//
// cmstore's plugin for OpenCode: hands each OpenCode event below to `cmstore capture --agent
// opencode` (one JSON object on its stdin, under OpenCode's own event name) and does what its
// reply says: a denied tool call or a refused prompt is an error thrown, context is added to
// the prompt or to the tool's output. Written by `cmstore hooks install --agent opencode`;
// `cmstore hooks uninstall --agent opencode` removes it. Edit it and `cmstore hooks status`
// says so; `cmstore hooks install --force` writes it back.
//
// OpenCode awaits its plugin hooks but not its `event` handler, and exits once a run is
// done: capture runs synchronously so that every event is recorded before the exit. Capture
// never fails an agent: anything that goes wrong here (no cmstore, a reply that is not
// JSON) is "carry on".

import { spawnSync } from "node:child_process"

const COMMAND = {{command}}

// Only the plugin function is exported: OpenCode refuses a plugin file with other exports.
export const CmstorePlugin = async ({ directory }) => {
  // Each session's turn so far (its prompt, model and answer: OpenCode's idle event names
  // none), the context of a session start for its first prompt, the calls cmstore denied
  // (OpenCode then reports them failed too), the model calls and permission requests sent.
  const turns = new Map()
  const startContext = new Map()
  const denied = new Set()
  const sentResponses = new Set()
  const permissionCalls = new Map()

  const capture = (event, fields) => {
    const payload = JSON.stringify({ hook_event_name: event, cwd: directory, ...fields })
    try {
      const run = spawnSync(COMMAND[0], [...COMMAND.slice(1), "capture", "--agent", "opencode"], {
        input: payload,
        encoding: "utf8",
        timeout: 10000,
        windowsHide: true,
      })
      const reply = JSON.parse((run.stdout || "").trim() || "{}")
      return reply && typeof reply === "object" ? reply : {}
    } catch {
      return {}
    }
  }

  const denial = (reply) => {
    const out = reply.hookSpecificOutput || {}
    if (out.permissionDecision === "deny") return out.permissionDecisionReason || "Denied by cmstore"
    if (reply.decision === "block") return reply.reason || "Blocked by cmstore"
    return undefined
  }
  const context = (reply) => (reply.hookSpecificOutput || {}).additionalContext

  const textPart = (message, text) => ({
    id: "prt_zcmstore" + Date.now().toString(36) + Math.random().toString(36).slice(2, 8),
    sessionID: message.sessionID,
    messageID: message.id,
    type: "text",
    text,
    synthetic: true,
  })

  const onEvent = (event) => {
    const props = event.properties || {}
    const session_id = props.sessionID
    switch (event.type) {
      case "session.created": {
        const info = props.info || {}
        const reply = capture(event.type, {
          session_id,
          source: "startup",
          cwd: info.directory || directory,
        })
        if (context(reply)) startContext.set(session_id, context(reply))
        break
      }
      case "session.idle": {
        // An idle with no turn since the last (OpenCode goes idle again after an error) ends
        // nothing.
        const ended = turns.get(session_id)
        turns.delete(session_id)
        if (!ended || ended.failed) break
        const { prompt, model, answer } = ended
        capture(event.type, { session_id, prompt, model, response: answer })
        break
      }
      case "session.error": {
        const { prompt, model } = turns.get(session_id) || {}
        capture(event.type, { session_id, prompt, model, error: props.error })
        turns.set(session_id, { failed: true })
        break
      }
      case "session.compacted":
        capture(event.type, { session_id })
        break
      case "message.updated": {
        const info = props.info || {}
        if (info.role !== "assistant" || !(info.time || {}).completed) break
        if (sentResponses.has(info.id)) break
        sentResponses.add(info.id)
        const current = turns.get(session_id)
        if (current) current.model = info.modelID
        capture(event.type, { session_id, model: info.modelID, assistant_message: info })
        break
      }
      case "message.part.updated": {
        const part = props.part || {}
        const state = part.state || {}
        if (part.type !== "tool" || state.status !== "error") break
        if (denied.delete(part.sessionID + "\u0000" + part.callID)) break
        capture(event.type, {
          session_id: part.sessionID,
          tool_name: part.tool,
          tool_use_id: part.callID,
          tool_input: state.input,
          error: state.error,
        })
        break
      }
      case "permission.asked": {
        const call = (props.tool || {}).callID
        if (props.id && call) permissionCalls.set(props.id, call)
        capture(event.type, {
          session_id,
          tool_name: props.permission,
          tool_use_id: call,
          tool_input: { patterns: props.patterns, metadata: props.metadata },
        })
        break
      }
      case "permission.replied":
        capture(event.type, {
          session_id,
          reply: props.reply,
          tool_use_id: permissionCalls.get(props.requestID),
        })
        permissionCalls.delete(props.requestID)
        break
    }
  }

  return {
    "chat.message": async (input, output) => {
      const message = output.message || {}
      const parts = output.parts || []
      const prompt = parts
        .filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text)
        .join("\n")
      const reply = capture("chat.message", {
        session_id: input.sessionID,
        prompt,
        model: (message.model || {}).modelID,
        message_id: message.id,
      })
      const refused = denial(reply)
      if (refused) throw new Error(refused)
      turns.set(input.sessionID, { prompt, model: (message.model || {}).modelID })
      const told = [startContext.get(input.sessionID), context(reply)].filter(Boolean)
      startContext.delete(input.sessionID)
      if (told.length) parts.push(textPart(message, told.join("\n\n")))
    },
    "tool.execute.before": async (input, output) => {
      const reply = capture("tool.execute.before", {
        session_id: input.sessionID,
        tool_name: input.tool,
        tool_use_id: input.callID,
        tool_input: output.args,
      })
      const reason = denial(reply)
      if (reason) {
        denied.add(input.sessionID + "\u0000" + input.callID)
        throw new Error(reason)
      }
    },
    "tool.execute.after": async (input, output) => {
      const reply = capture("tool.execute.after", {
        session_id: input.sessionID,
        tool_name: input.tool,
        tool_use_id: input.callID,
        tool_input: input.args,
        tool_response: output,
      })
      const said = reply.decision === "block" ? reply.reason : context(reply)
      if (said && typeof output.output === "string") output.output += "\n\n" + said
    },
    "experimental.text.complete": async (input, output) => {
      const current = turns.get(input.sessionID)
      if (current && output.text) current.answer = output.text
    },
    "experimental.session.compacting": async (input) => {
      capture("experimental.session.compacting", { session_id: input.sessionID })
    },
    event: async ({ event }) => {
      try {
        onEvent(event)
      } catch {
        // Never the agent's problem.
      }
    },
  }
}
