//! The agent table: every agent cmstore knows, and everything about it that is data rather
//! than behaviour, in one row each ([`Agent::profile`]).
//!
//! Adding an agent is a variant of [`Agent`] and a row in [`PROFILES`]; the compiler then
//! points at every `match` that must learn it (the payload dialect in `wire/`, the reply in
//! `wire/reply.rs`, the outcome rules in `wire/outcome.rs`). A row says what the agent is
//! called (on the queue line, on the command line, by the ContextManager extension) and,
//! when cmstore can wire it, where its hook file lives and how handlers nest in it.

use serde_json::Value;

/// The agent that ran a hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Agent {
    /// Claude Code.
    Claude,
    /// VS Code agent hooks (Copilot Chat, the local harness).
    Vscode,
    /// GitHub Copilot CLI (and the cloud agent).
    Copilot,
    /// OpenAI Codex CLI.
    Codex,
    /// Gemini CLI.
    Gemini,
    /// Qwen Code (`@qwen-code/qwen-code`): Claude Code's payloads, replies and events.
    Qwen,
    /// Cursor.
    Cursor,
    /// Qoder CLI (`@qoder-ai/qodercli`): Claude Code's hooks, payloads, replies and transcript
    /// lines, in Qoder's own folders.
    Qoder,
    /// Factory's Droid (`droid`): Claude Code's payloads and replies, nine of its events, its own
    /// tool names (`Execute`) and no tool call ids.
    Droid,
    /// OpenCode (`opencode-ai`): no hook commands but in-process plugins; cmstore's plugin
    /// hands each event to `capture` under OpenCode's own event names.
    Opencode,
    /// Kilo's CLI (`@kilocode/cli`), an OpenCode fork: OpenCode's plugins and events, so
    /// cmstore's OpenCode plugin, in Kilo's folders, hands them on.
    Kilo,
    /// Cline's CLI (npm `cline`, 3.x): a hook script per event in a hooks folder, payloads of
    /// its own (`hookName`, `sessionContext`, `tool_call`, `tool_result`).
    Cline,
    /// Windsurf's Cascade (Devin Desktop): twelve snake_case actions of its own
    /// (`agent_action_name`, `tool_info`), no call ids, a deny by exit code 2.
    Windsurf,
    /// Kiro (`kiro-cli`, the Kiro IDE): Claude Code's shape of payload under its own trigger
    /// names, a deny by exit code 2 and context as plain text.
    Kiro,
    /// Goose (`goose`, the Agentic AI Foundation's): hooks of an Open Plugins plugin folder,
    /// Claude Code's nesting but payloads of its own (`event`, `matcher_context`,
    /// `working_dir`), a deny by exit code 2 and no other reply read.
    Goose,
    /// Kimi Code (`@moonshot-ai/kimi-code`): Claude Code's event names, payloads with fields of
    /// their own (`client_type`, the prompt as content parts, `tool_output`), a refusal by exit
    /// code 2 and a prompt's stdout read as text.
    Kimi,
    /// A payload no dialect recognised.
    Unknown,
}

/// One row of the agent table.
#[derive(Debug)]
pub struct Profile {
    /// The agent this row describes.
    pub agent: Agent,
    /// The name written in the queue line's `agent` field and accepted by `--agent`.
    pub name: &'static str,
    /// What a person calls it (`cmstore hooks --help`).
    pub title: &'static str,
    /// Other spellings `capture --agent` accepts.
    pub aliases: &'static [&'static str],
    /// ContextManager's `participant` value.
    pub participant: &'static str,
    /// The ContextManager extension's `SessionOrigin` for the agent: its own scripts write
    /// `claude-code-plugin`, `vscode-extension` and `copilot-cli-plugin`; it has none for the
    /// others, so `unknown`.
    pub origin: &'static str,
    /// Where and how `cmstore hooks` writes the agent's hooks; `None` while cmstore cannot.
    pub hook_file: Option<HookFile>,
    /// The plugin file `cmstore hooks` writes instead, for an agent that runs no hook
    /// commands (OpenCode).
    pub plugin: Option<PluginFile>,
    /// Its hooks name no turn (its Stop carries no turn id), while its transcripts do: a turn
    /// both an import and the hooks recorded is met by its prompt and time
    /// (`store::imported_turns`; docs/usage.md, "Whole sessions from transcripts").
    pub turns_by_prompt: bool,
    /// Its hooks run in the workspace's root and most of its payloads name no folder
    /// (Windsurf): the hook's own working directory is the session's.
    pub cwd_of_hook: bool,
    /// How it reads a hook's answer.
    pub answer: Answer,
    /// Its Stop names neither its prompt nor its turn, and no transcript of it is read: a turn
    /// takes the session's last prompt before its Stop (Cursor, Kiro).
    pub prompt_before_stop: bool,
    /// The environment variable that names the session in the hook's process, for payloads
    /// that do not (Kiro's `KIRO_SESSION_ID`).
    pub session_env: Option<&'static str>,
    /// A Stop hook's block reason comes back as a prompt of its own, then a Stop again with
    /// `stop_hook_active` (Gemini CLI, Copilot CLI): that prompt is hook feedback, not the
    /// person's.
    pub feedback_as_prompt: bool,
    /// The turn after such feedback is the blocked turn going on, one row (Gemini CLI).
    pub feedback_continues_turn: bool,
    /// A prompt no Stop answered before the next prompt or the session's end was interrupted:
    /// the agent fires no hook for it (Gemini CLI).
    pub unanswered_prompt_interrupted: bool,
    /// When a payload names no transcript, the hook looks for the session's in the folders
    /// where [`discover`](crate::files::transcript::discover) finds them: the agent's own are
    /// among them (Claude Code, VS Code, Copilot CLI), or the agent is not known. For any other
    /// agent the search would read Claude Code's and VS Code's folders on every hook and find
    /// nothing.
    pub finds_transcript: bool,
    /// The agent writes its transcript only after its Stop hook has run (Copilot CLI): a Stop
    /// takes only the transcript's complete turns, and its own turn is recorded later.
    pub transcript_after_stop: bool,
    /// Its transcripts are lines cmstore reads and its hooks name them (or, for a late writer,
    /// the shell finds them): the hook notes the running session in its workspace's file, so
    /// that a session whose SessionEnd never fired is closed from its transcript (Claude Code,
    /// VS Code, Copilot CLI, Qoder CLI).
    pub marks_workspace: bool,
    /// No hook reliably records its turn's end (VS Code, whose window may close; Copilot CLI,
    /// which writes the answer after its hooks): a running ingest closes its marked sessions
    /// from their transcripts once idle (`write::ingest::sweep`). Others' idle sessions are
    /// left to their own Stop, since closing one while a long tool call runs would record half
    /// a turn.
    pub closed_when_idle: bool,
    /// Its sessions may end with a total of their usage (Copilot CLI's `session.shutdown`, in
    /// the event log VS Code's Copilot writes too), which stands in for the session's responses
    /// only while the store has none: a response of it removes its session's totals
    /// (`store::usage`).
    pub usage_session_totals: bool,
}

/// How an agent reads what a hook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// One JSON object on stdout.
    Json,
    /// The exit code alone: 2 refuses the action, the reason on stderr; stdout is never read
    /// (Windsurf shows it at most).
    ExitCode,
    /// The exit code, 2 refusing the action with the reason on stderr, and stdout as plain
    /// text added to the conversation (Kiro: at a session's start and a prompt).
    ExitCodeAndText,
}

/// Files cmstore owns whole in a folder the agent reads, for an agent that runs no hook
/// commands from a configuration file: OpenCode's plugin (code it loads), Cline's hook scripts
/// (a file per event). Each is written from one template with the capture command in it.
#[derive(Debug)]
pub struct PluginFile {
    /// The agent the files hand events to `capture` as (`{{agent}}` in the template).
    pub agent: &'static str,
    /// The files' text (`resources/<agent>/…`, embedded at build time): `{{command}}` stands
    /// for the capture command as a JSON array of words, `{{sh}}` for it as a shell line,
    /// `{{sh_json}}` for the system shell's line (`sh`; `cmd.exe` on Windows) inside a JSON
    /// string.
    pub template: &'static str,
    /// What precedes cmstore's version token on a line near the top: `// cmstore: `.
    pub marker: &'static str,
    /// How the agent runs a file, and so how the doctor's probe does.
    pub runner: Runner,
    /// The folder, relative to a project directory.
    pub project: &'static [&'static str],
    /// The user's own folder.
    pub user: UserFolder,
    /// The files cmstore writes there.
    pub files: &'static [&'static str],
    /// The agent's events the files hand to `capture`, by the agent's names.
    pub events: &'static [&'static str],
    /// The list the agent loads plugins from, where an entry must name cmstore's folder
    /// (Kimi Code's `plugins/installed.json`); `None` for an agent that finds the files by
    /// their place.
    pub registry: Option<Registry>,
}

/// A list of plugins an agent keeps in a JSON file of its own (`{"plugins": [entry, …]}`),
/// one entry cmstore's, by its id.
#[derive(Debug)]
pub struct Registry {
    /// The file, under the agent's own folder (the one [`UserFolder::Home`] names).
    pub file: &'static [&'static str],
    /// cmstore's entry's `id`.
    pub id: &'static str,
}

impl PluginFile {
    /// Whether the agent reads the files only from the user's folder (no project folder).
    pub fn user_only(&self) -> bool {
        self.project.is_empty()
    }
}

/// How an agent runs one of cmstore's files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// It loads the code, which runs the command its `const COMMAND` line names (OpenCode).
    Command,
    /// It runs the file with a shell, the event's payload on stdin (Cline).
    Shell,
    /// It reads the file as a list of hooks and runs each one's command line with a shell,
    /// the event's payload on stdin (Kiro's hook files).
    Listed,
}

/// Where the user's own folder of an agent's files is.
#[derive(Debug)]
pub enum UserFolder {
    /// Under the user's configuration directory (`XDG_CONFIG_HOME`, else `~/.config`).
    UnderConfig(&'static [&'static str]),
    /// Under the agent's own directory: the one an environment variable names, else one
    /// under the home directory.
    Home {
        /// The variable that moves the agent's directory (`CLINE_DIR`).
        dir_env: &'static str,
        /// The directory under the home directory otherwise (`.cline`).
        home_dir: &'static str,
        /// The folder inside it (`hooks`).
        sub: &'static [&'static str],
    },
    /// Under a directory of the agent's own in the home directory, which nothing moves.
    UnderHome {
        /// The directory under the home directory (`.kiro`).
        home_dir: &'static str,
        /// The folder inside it (`hooks`).
        sub: &'static [&'static str],
    },
}

/// An agent's hook configuration file, as `cmstore hooks install|status|uninstall` edits it.
#[derive(Debug)]
pub struct HookFile {
    /// How handlers nest under an event.
    pub shape: Shape,
    /// Where a handler carries cmstore's version token.
    pub marker: Marker,
    /// What cmstore writes (`resources/hooks/<agent>.json`, embedded at build time).
    pub template: &'static str,
    /// True when cmstore owns the whole file (and may delete it once it is empty).
    pub owns_file: bool,
    /// True when the file is the bare event map (Droid's `hooks.json`), not an object holding
    /// it under `hooks` as the template does.
    pub bare: bool,
    /// The file, relative to a project directory.
    pub project: &'static [&'static str],
    /// The user's own file: a directory an environment variable may move, else one under
    /// the home directory, and the file in it.
    pub user: UserFile,
}

/// Where an agent keeps the user's own hook file.
#[derive(Debug)]
pub struct UserFile {
    /// The variable that moves the agent's directory (`CLAUDE_CONFIG_DIR`), if any.
    pub dir_env: Option<&'static str>,
    /// The directory under the home directory when no variable moves it (`.claude`).
    pub home_dir: &'static str,
    /// The file inside that directory (`settings.json`, `hooks/cmstore.json`).
    pub file: &'static [&'static str],
}

/// How an agent nests handlers under an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `Event: [{"matcher": …, "hooks": [handler, …]}, …]` (Claude Code, Codex, Gemini CLI).
    Grouped,
    /// `Event: [handler, …]` (VS Code, Copilot CLI).
    Flat,
}

/// Where a handler carries cmstore's version token: a key and the text before `hooks-vN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    /// The handler key holding the token.
    pub key: &'static str,
    /// What precedes `hooks-v<N>` in its value.
    pub prefix: &'static str,
}

impl Marker {
    /// The token version in `handler`, if it carries this marker.
    pub fn version(&self, handler: &Value) -> Option<u32> {
        handler
            .get(self.key)?
            .as_str()?
            .strip_prefix(self.prefix)?
            .strip_prefix("hooks-v")?
            .parse()
            .ok()
    }

    /// The marker value for `version`.
    pub fn value(&self, version: u32) -> String {
        format!("{}hooks-v{version}", self.prefix)
    }
}

/// The origin of an agent the ContextManager extension has none for.
pub const UNKNOWN_ORIGIN: &str = "unknown";

/// Claude Code drops unknown handler keys silently and VS Code reads only the keys it knows,
/// so both get a `cmstore` key, as Codex does (its `hooks.json` refuses unknown keys at the
/// top only, not in a handler).
const CMSTORE_KEY: Marker = Marker {
    key: "cmstore",
    prefix: "",
};

/// Cline's hook events, each a hook file of its name.
const CLINE_EVENTS: &[&str] = &[
    "TaskStart",
    "TaskResume",
    "TaskCancel",
    "TaskComplete",
    "TaskError",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "SessionShutdown",
];

/// cmstore's OpenCode plugin, which OpenCode and Kilo load.
const OPENCODE_PLUGIN: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/resources/opencode/cmstore.js"
));

/// OpenCode's events the plugin hands to `capture`, by OpenCode's names.
const OPENCODE_EVENTS: &[&str] = &[
    "chat.message",
    "tool.execute.before",
    "tool.execute.after",
    "experimental.session.compacting",
    "session.created",
    "session.idle",
    "session.error",
    "session.compacted",
    "message.updated",
    "message.part.updated",
    "permission.asked",
    "permission.replied",
];

/// What a row says where it says nothing: an agent cmstore can wire no hooks for, read by
/// no rule of its own, that reads its reply as one JSON object (each row names what differs).
/// The unknown agent's row is this one, but that its transcript may be any agent's, so it is
/// looked for.
const NO_AGENT: Profile = Profile {
    agent: Agent::Unknown,
    name: "unknown",
    title: "an agent no payload dialect recognised",
    aliases: &[],
    participant: "unknown",
    origin: UNKNOWN_ORIGIN,
    hook_file: None,
    plugin: None,
    turns_by_prompt: false,
    cwd_of_hook: false,
    answer: Answer::Json,
    prompt_before_stop: false,
    session_env: None,
    feedback_as_prompt: false,
    feedback_continues_turn: false,
    unanswered_prompt_interrupted: false,
    finds_transcript: false,
    transcript_after_stop: false,
    marks_workspace: false,
    closed_when_idle: false,
    usage_session_totals: false,
};

/// The agent table, one row per [`Agent`], in [`Agent::ALL`]'s order.
pub const PROFILES: [Profile; 17] = [
    Profile {
        agent: Agent::Claude,
        name: "claude",
        title: "Claude Code",
        aliases: &["claude-code", "claudecode"],
        participant: "claude-code",
        origin: "claude-code-plugin",
        hook_file: Some(HookFile {
            shape: Shape::Grouped,
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/claude.json"
            )),
            owns_file: false,
            bare: false,
            project: &[".claude", "settings.json"],
            user: UserFile {
                dir_env: Some("CLAUDE_CONFIG_DIR"),
                home_dir: ".claude",
                file: &["settings.json"],
            },
        }),
        finds_transcript: true,
        marks_workspace: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Vscode,
        name: "vscode",
        title: "VS Code agent hooks",
        aliases: &["vs-code", "copilot-chat"],
        participant: "copilot",
        origin: "vscode-extension",
        hook_file: Some(HookFile {
            shape: Shape::Flat,
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/vscode.json"
            )),
            owns_file: true,
            bare: false,
            // VS Code reads the hook files of `.github/hooks`, as Copilot CLI does.
            project: &[".github", "hooks", "cmstore-vscode.json"],
            user: UserFile {
                dir_env: Some("COPILOT_HOME"),
                home_dir: ".copilot",
                file: &["hooks", "cmstore-vscode.json"],
            },
        }),
        finds_transcript: true,
        marks_workspace: true,
        closed_when_idle: true,
        usage_session_totals: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Copilot,
        name: "copilot",
        title: "GitHub Copilot CLI",
        aliases: &["copilot-cli", "github-copilot"],
        participant: "copilot-cli",
        origin: "copilot-cli-plugin",
        hook_file: Some(HookFile {
            shape: Shape::Flat,
            // Copilot CLI documents a free-text `comment` field.
            marker: Marker {
                key: "comment",
                prefix: "cmstore ",
            },
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/copilot.json"
            )),
            owns_file: true,
            bare: false,
            project: &[".github", "hooks", "cmstore.json"],
            user: UserFile {
                dir_env: Some("COPILOT_HOME"),
                home_dir: ".copilot",
                file: &["hooks", "cmstore.json"],
            },
        }),
        feedback_as_prompt: true,
        finds_transcript: true,
        transcript_after_stop: true,
        marks_workspace: true,
        closed_when_idle: true,
        usage_session_totals: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Codex,
        name: "codex",
        title: "OpenAI Codex CLI",
        participant: "codex",
        hook_file: Some(HookFile {
            shape: Shape::Grouped,
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/codex.json"
            )),
            // `hooks.json` is shared with the user's own hooks.
            owns_file: false,
            bare: false,
            project: &[".codex", "hooks.json"],
            user: UserFile {
                dir_env: Some("CODEX_HOME"),
                home_dir: ".codex",
                file: &["hooks.json"],
            },
        }),
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Gemini,
        name: "gemini",
        title: "Gemini CLI",
        aliases: &["gemini-cli"],
        participant: "gemini-cli",
        hook_file: Some(HookFile {
            shape: Shape::Grouped,
            // Gemini CLI documents a `name` for a handler.
            marker: Marker {
                key: "name",
                prefix: "cmstore-",
            },
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/gemini.json"
            )),
            // `settings.json` holds all of Gemini CLI's settings.
            owns_file: false,
            bare: false,
            project: &[".gemini", "settings.json"],
            user: UserFile {
                dir_env: None,
                home_dir: ".gemini",
                file: &["settings.json"],
            },
        }),
        turns_by_prompt: true,
        feedback_as_prompt: true,
        feedback_continues_turn: true,
        unanswered_prompt_interrupted: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Qwen,
        name: "qwen",
        title: "Qwen Code",
        aliases: &["qwen-code", "qwencode"],
        participant: "qwen-code",
        hook_file: Some(HookFile {
            shape: Shape::Grouped,
            // Qwen Code names a handler by `name` (its `hooks.disabled` lists names), as
            // Gemini CLI, which it began as, does.
            marker: Marker {
                key: "name",
                prefix: "cmstore-",
            },
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/qwen.json"
            )),
            // `settings.json` holds all of Qwen Code's settings.
            owns_file: false,
            bare: false,
            project: &[".qwen", "settings.json"],
            user: UserFile {
                dir_env: Some("QWEN_HOME"),
                home_dir: ".qwen",
                file: &["settings.json"],
            },
        }),
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Cursor,
        name: "cursor",
        title: "Cursor",
        aliases: &["cursor-agent"],
        participant: "cursor",
        hook_file: Some(HookFile {
            shape: Shape::Flat,
            // Cursor reads `command`, `matcher`, `timeout`, `type`, `failClosed` and
            // `loop_limit` of a handler; third-party hook files carry keys of their own.
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/cursor.json"
            )),
            // Its `"version": 1` is cmstore's to take away with its entries: a file holding
            // nothing else goes (the user's own hooks keep it).
            owns_file: true,
            bare: false,
            project: &[".cursor", "hooks.json"],
            user: UserFile {
                dir_env: None,
                home_dir: ".cursor",
                file: &["hooks.json"],
            },
        }),
        prompt_before_stop: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Qoder,
        name: "qoder",
        title: "Qoder CLI",
        aliases: &["qodercli", "qoder-cli"],
        participant: "qoder",
        hook_file: Some(HookFile {
            shape: Shape::Grouped,
            // Qoder's handlers are Claude Code's (`type`, `command`, `timeout`, `async`, …).
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/qoder.json"
            )),
            // `settings.json` holds all of Qoder's settings.
            owns_file: false,
            bare: false,
            project: &[".qoder", "settings.json"],
            user: UserFile {
                dir_env: Some("QODER_CONFIG_DIR"),
                home_dir: ".qoder",
                file: &["settings.json"],
            },
        }),
        marks_workspace: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Droid,
        name: "droid",
        title: "Factory Droid",
        aliases: &["factory", "factory-droid"],
        participant: "droid",
        hook_file: Some(HookFile {
            shape: Shape::Grouped,
            // Droid strips handler keys it does not know when its `/hooks` editor saves the
            // file, and keeps them otherwise (docs/agents.md, "Factory Droid").
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/droid.json"
            )),
            // A `hooks.json` holding nothing but cmstore's goes: while one exists, Droid does
            // not read the older `hooks/hooks.json` beside it.
            owns_file: true,
            bare: true,
            project: &[".factory", "hooks.json"],
            user: UserFile {
                dir_env: None,
                home_dir: ".factory",
                file: &["hooks.json"],
            },
        }),
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Opencode,
        name: "opencode",
        title: "OpenCode",
        aliases: &["opencode-ai", "open-code"],
        participant: "opencode",
        plugin: Some(PluginFile {
            agent: "opencode",
            template: OPENCODE_PLUGIN,
            marker: "// cmstore: ",
            runner: Runner::Command,
            // OpenCode loads `{plugin,plugins}/*.{js,ts}` of each configuration directory.
            project: &[".opencode", "plugin"],
            user: UserFolder::UnderConfig(&["opencode", "plugin"]),
            files: &["cmstore.js"],
            events: OPENCODE_EVENTS,
            registry: None,
        }),
        turns_by_prompt: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Kilo,
        name: "kilo",
        title: "Kilo",
        aliases: &["kilocode", "kilo-cli"],
        participant: "kilo",
        plugin: Some(PluginFile {
            agent: "kilo",
            template: OPENCODE_PLUGIN,
            marker: "// cmstore: ",
            runner: Runner::Command,
            // OpenCode's plugin: Kilo loads `{plugin,plugins}/*.{js,ts}` of each
            // configuration directory (`~/.config/kilo`, a project's `.kilo` or `.kilocode`).
            project: &[".kilo", "plugin"],
            user: UserFolder::UnderConfig(&["kilo", "plugin"]),
            files: &["cmstore.js"],
            events: OPENCODE_EVENTS,
            registry: None,
        }),
        turns_by_prompt: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Cline,
        name: "cline",
        title: "Cline",
        aliases: &["cline-cli"],
        participant: "cline",
        plugin: Some(PluginFile {
            agent: "cline",
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/cline/hook.sh"
            )),
            marker: "# cmstore: ",
            runner: Runner::Shell,
            // Cline runs every file named after an event (any case, an optional extension)
            // in each of its hooks folders; it runs one with a `sh` shebang through bash. Of
            // a workspace's two (`.clinerules/hooks/`, `.cline/hooks/`), `.clinerules` may be
            // a file of rules instead of a folder.
            project: &[".cline", "hooks"],
            user: UserFolder::Home {
                dir_env: "CLINE_DIR",
                home_dir: ".cline",
                sub: &["hooks"],
            },
            // A file per event, named after it.
            files: CLINE_EVENTS,
            events: CLINE_EVENTS,
            registry: None,
        }),
        turns_by_prompt: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Windsurf,
        name: "windsurf",
        title: "Windsurf",
        aliases: &["cascade", "devin-desktop", "windsurf-cascade"],
        participant: "windsurf",
        hook_file: Some(HookFile {
            shape: Shape::Flat,
            // Windsurf documents `command`, `powershell`, `show_output` and
            // `working_directory` of a handler; cmstore's token rides in a key of its own, as
            // in Cursor's file.
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/windsurf.json"
            )),
            // The file holds only `hooks`: one holding nothing else once cmstore's entries
            // are gone is removed.
            owns_file: true,
            bare: false,
            project: &[".windsurf", "hooks.json"],
            user: UserFile {
                dir_env: None,
                home_dir: ".codeium",
                file: &["windsurf", "hooks.json"],
            },
        }),
        cwd_of_hook: true,
        answer: Answer::ExitCode,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Kiro,
        name: "kiro",
        title: "Kiro",
        aliases: &["kiro-cli", "kiro-ide"],
        participant: "kiro",
        // Kiro's standalone hook files (CLI 3, IDE 1.x): every `*.json` of the user's and
        // the workspace's `hooks` folders runs, so cmstore's is a file of its own.
        plugin: Some(PluginFile {
            agent: "kiro",
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/kiro/cmstore.json"
            )),
            // In each hook's `description`, a field Kiro documents: JSON has no comments.
            marker: "cmstore: ",
            runner: Runner::Listed,
            project: &[".kiro", "hooks"],
            user: UserFolder::UnderHome {
                home_dir: ".kiro",
                sub: &["hooks"],
            },
            files: &["cmstore.json"],
            events: &[
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "Stop",
            ],
            registry: None,
        }),
        answer: Answer::ExitCodeAndText,
        prompt_before_stop: true,
        session_env: Some("KIRO_SESSION_ID"),
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Goose,
        name: "goose",
        title: "Goose",
        aliases: &["goose-cli", "aaif-goose"],
        participant: "goose",
        hook_file: Some(HookFile {
            shape: Shape::Grouped,
            // Goose reads `type`, `command`, `timeout` and `on_failure` of a handler and
            // ignores other keys (a known key of the wrong type drops the whole file).
            marker: CMSTORE_KEY,
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/hooks/goose.json"
            )),
            // cmstore's own plugin folder: every folder of `.agents/plugins` is a plugin, its
            // `hooks/hooks.json` its hooks, so the file is no one else's.
            owns_file: true,
            bare: false,
            project: &[".agents", "plugins", "cmstore", "hooks", "hooks.json"],
            // `GOOSE_PATH_ROOT` stands for the home directory: Goose then reads
            // `$GOOSE_PATH_ROOT/.agents/plugins`.
            user: UserFile {
                dir_env: Some("GOOSE_PATH_ROOT"),
                home_dir: "",
                file: &[".agents", "plugins", "cmstore", "hooks", "hooks.json"],
            },
        }),
        // Its store names its turns, its hooks do not.
        turns_by_prompt: true,
        // SessionStart, UserPromptSubmit and SessionEnd name no folder; Goose runs its hooks
        // in its own working directory, the session's.
        cwd_of_hook: true,
        answer: Answer::ExitCode,
        prompt_before_stop: true,
        ..NO_AGENT
    },
    Profile {
        agent: Agent::Kimi,
        name: "kimi",
        title: "Kimi Code",
        aliases: &["kimi-code", "kimi-cli"],
        participant: "kimi",
        // A plugin of cmstore's own: its manifest lists the hooks, and Kimi loads the plugins
        // its `plugins/installed.json` lists (the user's only; a project has none), so the
        // user's `config.toml` is never edited.
        plugin: Some(PluginFile {
            agent: "kimi",
            template: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/resources/kimi/kimi.plugin.json"
            )),
            // In the manifest's `description`: a hook entry takes no key but its own four.
            marker: "cmstore: ",
            runner: Runner::Listed,
            project: &[],
            user: UserFolder::Home {
                dir_env: "KIMI_CODE_HOME",
                home_dir: ".kimi-code",
                sub: &["plugins", "cmstore"],
            },
            files: &["kimi.plugin.json"],
            events: &[
                "SessionStart",
                "SessionEnd",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                "Stop",
                "StopFailure",
                "Interrupt",
                "PreCompact",
                "PostCompact",
                "SubagentStart",
                "SubagentStop",
            ],
            registry: Some(Registry {
                file: &["plugins", "installed.json"],
                id: "cmstore",
            }),
        }),
        // Its record logs name its turns, its hooks do not.
        turns_by_prompt: true,
        answer: Answer::ExitCodeAndText,
        prompt_before_stop: true,
        ..NO_AGENT
    },
    Profile {
        finds_transcript: true,
        ..NO_AGENT
    },
];

impl Agent {
    /// Every agent, in the table's order.
    pub const ALL: [Agent; 17] = [
        Agent::Claude,
        Agent::Vscode,
        Agent::Copilot,
        Agent::Codex,
        Agent::Gemini,
        Agent::Qwen,
        Agent::Cursor,
        Agent::Qoder,
        Agent::Droid,
        Agent::Opencode,
        Agent::Kilo,
        Agent::Cline,
        Agent::Windsurf,
        Agent::Kiro,
        Agent::Goose,
        Agent::Kimi,
        Agent::Unknown,
    ];

    /// This agent's row of the table.
    pub fn profile(self) -> &'static Profile {
        let row = &PROFILES[self as usize];
        debug_assert_eq!(row.agent, self, "PROFILES is in Agent's order");
        row
    }

    /// The name written in the queue line's `agent` field and accepted by `--agent`.
    pub fn as_str(self) -> &'static str {
        self.profile().name
    }

    /// ContextManager's `participant` value for this agent.
    pub fn participant(self) -> &'static str {
        self.profile().participant
    }

    /// The session origin the ContextManager extension uses for this agent.
    pub fn origin(self) -> &'static str {
        self.profile().origin
    }

    /// Whether a turn of the agent is met by its prompt and time ([`Profile::turns_by_prompt`]).
    pub fn turns_by_prompt(self) -> bool {
        self.profile().turns_by_prompt
    }

    /// Whether the hook's working directory is the session's ([`Profile::cwd_of_hook`]).
    pub fn cwd_of_hook(self) -> bool {
        self.profile().cwd_of_hook
    }

    /// Whether the agent speaks OpenCode's events, through cmstore's OpenCode plugin
    /// (OpenCode, and Kilo, its fork).
    pub fn speaks_opencode(self) -> bool {
        matches!(self, Agent::Opencode | Agent::Kilo)
    }

    /// Whether a turn takes the session's last prompt before its Stop
    /// ([`Profile::prompt_before_stop`]).
    pub fn prompt_before_stop(self) -> bool {
        self.profile().prompt_before_stop
    }

    /// How the agent reads a hook's answer ([`Profile::answer`]).
    pub fn answer(self) -> Answer {
        self.profile().answer
    }

    /// Where `cmstore hooks` writes this agent's hooks, when it can.
    pub fn hook_file(self) -> Option<&'static HookFile> {
        self.profile().hook_file.as_ref()
    }

    /// The agents whose hooks cmstore can write, in the table's order.
    pub fn with_hook_files() -> impl Iterator<Item = Agent> {
        Agent::ALL.into_iter().filter(|a| a.hook_file().is_some())
    }

    /// The agents `cmstore hooks` can wire, by a hook file or a plugin, in the table's order.
    pub fn wired() -> impl Iterator<Item = Agent> {
        Agent::ALL
            .into_iter()
            .filter(|a| a.hook_file().is_some() || a.profile().plugin.is_some())
    }

    /// The agent a stored row names (the queue line's `agent`: the canonical name), without
    /// the aliases and case [`Agent::from_flag`] accepts.
    pub fn from_name(name: &str) -> Option<Agent> {
        PROFILES.iter().find(|p| p.name == name).map(|p| p.agent)
    }

    /// Parses an `--agent` value by name or alias, any case; `None` for `auto`, `unknown`
    /// and anything unrecognised (which means "sniff").
    pub fn from_flag(flag: &str) -> Option<Agent> {
        let flag = flag.trim().to_ascii_lowercase();
        PROFILES
            .iter()
            .filter(|p| p.agent != Agent::Unknown)
            .find(|p| p.name == flag || p.aliases.contains(&flag.as_str()))
            .map(|p| p.agent)
    }
}

/// The agents' names in the table's order (not `unknown`), as the `--agent` help texts list
/// them. Spelled out, not joined at run time: every hook builds the command line's help
/// texts; a test holds it to the table.
pub const NAMES: &str =
    "claude, vscode, copilot, codex, gemini, qwen, cursor, qoder, droid, opencode, kilo, cline, \
     windsurf, kiro, goose, kimi";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_texts_names_are_every_agent_of_the_table_but_unknown() {
        let table: Vec<&str> = PROFILES
            .iter()
            .filter(|p| p.agent != Agent::Unknown)
            .map(|p| p.name)
            .collect();
        assert_eq!(NAMES, table.join(", "));
    }

    #[test]
    fn the_table_is_in_the_enums_order_and_names_are_unique() {
        for (i, agent) in Agent::ALL.into_iter().enumerate() {
            assert_eq!(PROFILES[i].agent, agent);
            assert_eq!(agent.profile().agent, agent);
        }
        let mut names: Vec<&str> = PROFILES
            .iter()
            .flat_map(|p| std::iter::once(p.name).chain(p.aliases.iter().copied()))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a name or alias names two agents");
    }

    #[test]
    fn flags_name_agents_by_name_or_alias_in_any_case() {
        assert_eq!(Agent::from_flag("Claude-Code"), Some(Agent::Claude));
        assert_eq!(Agent::from_flag(" gemini-cli "), Some(Agent::Gemini));
        assert_eq!(Agent::from_flag("copilot-chat"), Some(Agent::Vscode));
        assert_eq!(Agent::from_flag("cursor"), Some(Agent::Cursor));
        assert_eq!(Agent::from_flag("auto"), None);
        assert_eq!(Agent::from_flag("unknown"), None);
        for agent in Agent::ALL.into_iter().filter(|a| *a != Agent::Unknown) {
            assert_eq!(Agent::from_flag(agent.as_str()), Some(agent));
        }
    }

    #[test]
    fn a_stored_name_is_the_canonical_one_only() {
        for agent in Agent::ALL {
            assert_eq!(Agent::from_name(agent.as_str()), Some(agent));
        }
        assert_eq!(Agent::from_name("Claude"), None);
        assert_eq!(Agent::from_name("claude-code"), None);
    }

    #[test]
    fn every_hook_file_template_is_json_with_hooks() {
        for agent in Agent::with_hook_files() {
            let file = agent.hook_file().unwrap();
            let doc: Value = serde_json::from_str(file.template).unwrap();
            assert!(doc["hooks"].is_object(), "{agent:?}");
        }
        assert_eq!(Agent::with_hook_files().count(), 11);
    }
}
