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

// How long capture may take: a tool's end runs the checks cmstore.toml enforces.
const TIMEOUT_MS = 10000
const CHECKS_TIMEOUT_MS = 120000

// Only the plugin function is exported: OpenCode refuses a plugin file with other exports.
export const CmstorePlugin = async (input) => {
  // The same plugin in the user's folder and a project's: OpenCode loads both for one
  // project (one `input` object), and every event would be recorded twice. The first one
  // records; another project of the same process (`opencode serve`) has its own `input`.
  const loaded = Symbol.for("cmstore.opencode")
  const seen = (globalThis[loaded] ||= new WeakSet())
  if (seen.has(input)) return {}
  seen.add(input)
  const { directory } = input

  // Per session: its prompts since it was last idle, in order, each with its model, answer
  // and how it ended (OpenCode's idle event names none of these), and which prompt each
  // model call answers. Also the sessions seen started, the context of a session start for
  // its first prompt, the calls that will fail with no `tool.execute.after` (denied by
  // cmstore, refused by OpenCode's permission: their error part is no new call), the model
  // calls and permission requests sent.
  const sessions = new Map()
  const started = new Set()
  const startContext = new Map()
  const settled = new Set()
  const sentResponses = new Set()
  const permissionCalls = new Map()

  const session = (id) => {
    if (!sessions.has(id)) sessions.set(id, { prompts: [], byId: new Map(), answers: new Map() })
    return sessions.get(id)
  }
  const current = (id) => {
    const s = sessions.get(id)
    return s && s.prompts[s.prompts.length - 1]
  }
  const promptOf = (s, assistantId) => s.byId.get(s.answers.get(assistantId)) || s.prompts[s.prompts.length - 1]

  const capture = (event, fields, timeout = TIMEOUT_MS) => {
    try {
      const payload = JSON.stringify({ hook_event_name: event, cwd: directory, ...fields })
      const run = spawnSync(COMMAND[0], [...COMMAND.slice(1), "capture", "--agent", "{{agent}}"], {
        input: payload,
        encoding: "utf8",
        timeout,
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

  const start = (session_id, source, cwd) => {
    started.add(session_id)
    const reply = capture("session.created", { session_id, source, cwd: cwd || directory })
    if (context(reply)) startContext.set(session_id, context(reply))
  }

  // The session's prompts since it was last idle each end a turn: answered, failed on an
  // error it did not recover from, or stopped by the person.
  const idle = (session_id) => {
    const s = sessions.get(session_id)
    sessions.delete(session_id)
    for (const p of (s && s.prompts) || []) {
      const fields = { session_id, prompt: p.prompt, model: p.model }
      if (p.error) capture("session.error", { ...fields, error: p.error })
      else capture("session.idle", { ...fields, response: p.answer, outcome: p.aborted ? "interrupted" : undefined })
    }
  }

  const onEvent = (event) => {
    const props = event.properties || {}
    const session_id = props.sessionID
    switch (event.type) {
      case "session.created": {
        const info = props.info || {}
        start(session_id, "startup", info.directory)
        break
      }
      case "session.idle":
        idle(session_id)
        break
      case "session.error": {
        // An error outside a turn (no session, no prompt yet) ends none.
        const p = session_id && current(session_id)
        if (!p) break
        const error = props.error || {}
        if (error.name === "MessageAbortedError") p.aborted = true
        else p.error = error
        break
      }
      case "session.compacted":
        capture(event.type, { session_id })
        break
      case "message.updated": {
        const info = props.info || {}
        if (info.role !== "assistant") break
        const s = session(session_id)
        if (info.parentID) s.answers.set(info.id, info.parentID)
        if (!(info.time || {}).completed || sentResponses.has(info.id)) break
        sentResponses.add(info.id)
        const p = promptOf(s, info.id)
        if (p) {
          p.model = info.modelID
          // A model call that completed after an error (OpenCode compacts a context that
          // overflowed, then goes on): the turn recovered.
          if (!info.error) p.error = undefined
        }
        capture(event.type, { session_id, model: info.modelID, assistant_message: info })
        break
      }
      case "message.part.updated": {
        const part = props.part || {}
        const state = part.state || {}
        if (part.type !== "tool" || state.status !== "error") break
        if (settled.delete(part.sessionID + "\u0000" + part.callID)) break
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
      case "permission.replied": {
        const call = permissionCalls.get(props.requestID)
        permissionCalls.delete(props.requestID)
        if (props.reply === "reject" && call) settled.add(session_id + "\u0000" + call)
        capture(event.type, { session_id, reply: props.reply, tool_use_id: call })
        break
      }
    }
  }

  return {
    "chat.message": async (input, output) => {
      const message = output.message || {}
      const parts = output.parts || []
      const sid = input.sessionID
      // A session this process did not see start (`opencode run --continue`, a session
      // opened again) starts here.
      if (!started.has(sid)) start(sid, "resume")
      const prompt = parts
        .filter((p) => p.type === "text" && !p.synthetic)
        .map((p) => p.text)
        .join("\n")
      const model = (message.model || {}).modelID
      const reply = capture("chat.message", { session_id: sid, prompt, model, message_id: message.id })
      const refused = denial(reply)
      if (refused) throw new Error(refused)
      const turn = { prompt, model }
      const s = session(sid)
      s.prompts.push(turn)
      if (message.id) s.byId.set(message.id, turn)
      const told = [startContext.get(sid), context(reply)].filter(Boolean)
      startContext.delete(sid)
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
        settled.add(input.sessionID + "\u0000" + input.callID)
        throw new Error(reason)
      }
    },
    "tool.execute.after": async (input, output) => {
      // What the model read and how the tool ended; not its attachments (images, files).
      const { attachments, ...result } = output || {}
      const reply = capture(
        "tool.execute.after",
        {
          session_id: input.sessionID,
          tool_name: input.tool,
          tool_use_id: input.callID,
          tool_input: input.args,
          tool_response: result,
        },
        CHECKS_TIMEOUT_MS,
      )
      const said = reply.decision === "block" ? reply.reason : context(reply)
      if (said && typeof output.output === "string") output.output += "\n\n" + said
    },
    "experimental.text.complete": async (input, output) => {
      const s = sessions.get(input.sessionID)
      const p = s && promptOf(s, input.messageID)
      if (p && output.text) p.answer = output.text
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
