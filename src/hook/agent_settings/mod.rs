//! Agent hook configuration: where each agent reads its hooks, what cmstore writes there,
//! and the pure merge logic (no I/O) that installs, checks and removes it.
//!
//! What is written comes from the templates in `resources/hooks/` (embedded at build time).
//! Every handler cmstore writes carries a version token (see [`Marker`]); a template change
//! must bump it, so `status` can tell an old installation from a current one and `install`
//! replaces it (ContextManager's installer never did, because its version was not bumped:
//! seed bug A-B6). A unit test pins each template's hash to its token to enforce the bump.

pub mod codex_trust;
pub mod merge;
pub mod otel;
pub mod plugin;
pub mod quote;
pub mod splice;
pub mod style;
pub mod switches;
pub mod versions;
pub mod vscode_settings;

use std::path::PathBuf;

use serde_json::{Map, Value};

pub use crate::model::agents::{Agent, HookFile, Marker, Shape};

/// The hook-token version the embedded templates carry.
pub const CURRENT_VERSION: u32 = 3;

/// The operating system the hooks will run on, where it changes what is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    /// Linux, macOS and the other Unix-likes.
    Unix,
    /// Windows.
    Windows,
}

impl Os {
    /// The system cmstore was built for.
    pub fn current() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else {
            Os::Unix
        }
    }
}

/// Which configuration to act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A project (workspace) directory.
    Project(PathBuf),
    /// The user's own configuration.
    User {
        /// The user's home directory.
        home: PathBuf,
        /// `CLAUDE_CONFIG_DIR`, which moves Claude Code's `~/.claude`.
        claude_config_dir: Option<PathBuf>,
        /// `COPILOT_HOME`, which moves Copilot CLI's `~/.copilot`.
        copilot_home: Option<PathBuf>,
        /// `CODEX_HOME`, which moves Codex's `~/.codex`.
        codex_home: Option<PathBuf>,
        /// `XDG_CONFIG_HOME`, which moves `~/.config` (OpenCode's `~/.config/opencode`).
        xdg_config_home: Option<PathBuf>,
        /// `CLINE_DIR`, which moves Cline's `~/.cline`.
        cline_dir: Option<PathBuf>,
    },
}

impl Location {
    /// `"project"` or `"user"`.
    pub fn scope(&self) -> &'static str {
        match self {
            Location::Project(_) => "project",
            Location::User { .. } => "user",
        }
    }
}

/// What cmstore writes for an agent and where: the agent table's [`HookFile`] put to use.
/// Only agents with a hook file reach here (`cmstore hooks` offers no other); asking for
/// another is a bug, and panics.
pub trait Wiring: Copy {
    /// The agent's hook file row.
    fn file(self) -> &'static HookFile;

    /// How this agent nests handlers.
    fn shape(self) -> Shape {
        self.file().shape
    }

    /// Where this agent's handlers carry the token.
    fn marker(self) -> Marker {
        self.file().marker
    }

    /// The embedded template (`resources/hooks/<agent>.json`).
    fn template(self) -> &'static str {
        self.file().template
    }

    /// True when cmstore owns the whole file (and may delete it once it is empty).
    fn owns_file(self) -> bool {
        self.file().owns_file
    }

    /// The file's document as the merge reads it: events under `hooks`, as in the template.
    /// A bare event map (Droid's `hooks.json`) is put under `hooks`; any other document is
    /// left as it is.
    fn nest_events(self, doc: Value) -> Value {
        match doc {
            Value::Object(events) if self.file().bare => Value::Object(Map::from_iter([(
                "hooks".to_string(),
                Value::Object(events),
            )])),
            other => other,
        }
    }

    /// [`Wiring::nest_events`] undone: the document as the file holds it.
    fn unnest_events(self, doc: Value) -> Value {
        match doc {
            Value::Object(mut top) if self.file().bare => top
                .shift_remove("hooks")
                .unwrap_or_else(|| Value::Object(Map::new())),
            other => other,
        }
    }

    /// The file this agent reads at `location`.
    fn config_path(self, location: &Location) -> PathBuf {
        let file = self.file();
        let segments = match location {
            Location::Project(_) => file.project,
            Location::User { .. } => file.user.file,
        };
        segments
            .iter()
            .fold(self.config_root(location), |p, s| p.join(s))
    }

    /// The folder the file's path starts from at `location`: the project, or the agent's own
    /// configuration folder (`~/.copilot`, `$CODEX_HOME`, …). The folders between it and the
    /// file are the ones an install may create.
    fn config_root(self, location: &Location) -> PathBuf {
        let file = self.file();
        match location {
            Location::Project(dir) => dir.clone(),
            Location::User {
                home,
                claude_config_dir,
                copilot_home,
                codex_home,
                ..
            } => {
                let moved = match file.user.dir_env {
                    Some("CLAUDE_CONFIG_DIR") => claude_config_dir.clone(),
                    Some("COPILOT_HOME") => copilot_home.clone(),
                    Some("CODEX_HOME") => codex_home.clone(),
                    // The agents' own variables that nothing else reads (`QWEN_HOME`,
                    // `QODER_CONFIG_DIR`), read where they are used.
                    Some(other) => crate::support::env::path(other),
                    None => None,
                };
                moved.unwrap_or_else(|| home.join(file.user.home_dir))
            }
        }
    }

    /// What cmstore writes for this agent, with `program` as the cmstore binary.
    fn expected(self, program: &str) -> Expected {
        self.expected_command(&[program])
    }

    /// What cmstore writes for this agent, with `words` (the cmstore binary and any global
    /// options such as `--home DIR`) before `capture`.
    fn expected_command<S: AsRef<str>>(self, words: &[S]) -> Expected {
        self.expected_for(words, Os::current())
    }

    /// [`Wiring::expected_command`] for hooks that run on `os`.
    fn expected_for<S: AsRef<str>>(self, words: &[S], os: Os) -> Expected;
}

impl Wiring for Agent {
    fn file(self) -> &'static HookFile {
        self.hook_file()
            .unwrap_or_else(|| panic!("cmstore writes no hook file for {}", self.as_str()))
    }

    /// On Windows, Claude Code runs a
    /// plain command through Git Bash as `bash --login -i -c`, which flashes a console window
    /// on every event; its `"shell": "powershell"` handlers run hidden, so there cmstore
    /// writes those, with the PowerShell-quoted command.
    fn expected_for<S: AsRef<str>>(self, words: &[S], os: Os) -> Expected {
        let sh = quote::sh_line(words);
        let ps = quote::powershell_line(words);
        let mut template = self.template().to_string();
        if self == Agent::Claude && os == Os::Windows {
            template = template.replace(
                "\"command\": \"{{sh}}",
                "\"shell\": \"powershell\", \"command\": \"{{ps}}",
            );
        }
        let mut doc: Value =
            serde_json::from_str(&template).expect("embedded hook templates are valid JSON");
        fill(&mut doc, &sh, &ps);
        let Value::Object(mut top) = doc else {
            panic!("hook template is not an object")
        };
        let Some(Value::Object(hooks)) = top.shift_remove("hooks") else {
            panic!("hook template has no hooks object")
        };
        let events = hooks
            .into_iter()
            .map(|(event, entries)| {
                let mut entries = match entries {
                    Value::Array(a) if a.len() == 1 => a,
                    _ => panic!("hook template event {event} must hold one entry"),
                };
                (event, entries.remove(0))
            })
            .collect();
        Expected {
            agent: self,
            top,
            events,
            for_version: None,
            left_out: Vec::new(),
        }
    }
}

/// Replaces the template placeholders in every string of `value`.
fn fill(value: &mut Value, sh: &str, ps: &str) {
    match value {
        Value::String(s) => *s = s.replace("{{sh}}", sh).replace("{{ps}}", ps),
        Value::Array(items) => items.iter_mut().for_each(|v| fill(v, sh, ps)),
        Value::Object(map) => map.values_mut().for_each(|v| fill(v, sh, ps)),
        _ => {}
    }
}

/// The entries cmstore writes for one agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    /// The agent.
    pub agent: Agent,
    /// Top-level keys besides `hooks` (Copilot's `"version": 1`).
    pub top: Map<String, Value>,
    /// Per event, in template order, the one entry cmstore adds (a matcher group for
    /// Claude, a handler otherwise).
    pub events: Vec<(String, Value)>,
    /// The agent's version, when known, that `events` were chosen for
    /// ([`versions::keep_known`]).
    pub for_version: Option<versions::Version>,
    /// The template's events left out of `events`: those the agent's version does not
    /// know (an entry of cmstore's found there is one to take out), or, its version not
    /// known, those newer than its floor (an entry found there is left alone).
    pub left_out: Vec<versions::LeftOut>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// FNV-1a, enough to notice any edit of a template; carriage returns are skipped so a
    /// CRLF checkout hashes the same.
    fn fnv(text: &str) -> u64 {
        text.bytes()
            .filter(|&b| b != b'\r')
            .fold(0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            })
    }

    /// Each template's hash at the current token. If this fails you edited a template: bump
    /// `CURRENT_VERSION` and every `hooks-vN` in `resources/hooks/`, then update the hashes,
    /// so installed copies show up as outdated and `install` replaces them (seed bug A-B6).
    #[test]
    fn templates_changed_without_bumping_the_token() {
        let pinned = [
            (Agent::Claude, 3, 2_782_324_023_439_542_578),
            (Agent::Vscode, 3, 7_565_588_521_407_655_550),
            (Agent::Copilot, 3, 12_803_527_363_840_540_676u64),
            (Agent::Codex, 3, 1_632_269_557_051_786_733),
            (Agent::Gemini, 3, 556_865_949_638_800_239),
            (Agent::Qwen, 3, 6_113_532_284_470_002_431),
            (Agent::Cursor, 3, 16157748614473827788u64),
            (Agent::Droid, 3, 12383244396802804392u64),
            (Agent::Windsurf, 3, 17950658796258184812u64),
            (Agent::Qoder, 3, 12916333413315077261u64),
            (Agent::Goose, 3, 16808874929847010974u64),
        ];
        for (agent, version, hash) in pinned {
            assert_eq!(
                version, CURRENT_VERSION,
                "{agent:?}: bump the pinned version"
            );
            assert_eq!(fnv(agent.template()), hash, "{agent:?}: template edited");
        }
    }

    /// Droid's `hooks.json` is the bare event map: read with its events under `hooks`, as the
    /// template holds them, and written back bare; another agent's document is left alone.
    #[test]
    fn a_bare_event_map_is_read_under_hooks_and_written_bare() {
        let bare = serde_json::json!({"Stop": [], "showHookOutput": true});
        let read = Agent::Droid.nest_events(bare.clone());
        assert_eq!(read, serde_json::json!({"hooks": bare}));
        assert_eq!(Agent::Droid.unnest_events(read), bare);
        assert_eq!(
            Agent::Droid.unnest_events(serde_json::json!({})),
            serde_json::json!({})
        );
        let settings = serde_json::json!({"hooks": {"Stop": []}, "model": "opus"});
        assert_eq!(Agent::Claude.nest_events(settings.clone()), settings);
        assert_eq!(Agent::Claude.unnest_events(settings.clone()), settings);
        assert_eq!(
            Agent::Droid.nest_events(serde_json::json!([1])),
            serde_json::json!([1])
        );
    }

    #[test]
    fn every_template_handler_carries_the_current_token() {
        for agent in Agent::with_hook_files() {
            let expected = agent.expected("cmstore");
            assert!(!expected.events.is_empty());
            for (event, entry) in &expected.events {
                let handlers = match agent.shape() {
                    Shape::Grouped => entry["hooks"].as_array().unwrap().clone(),
                    Shape::Flat => vec![entry.clone()],
                };
                for h in handlers {
                    assert_eq!(
                        agent.marker().version(&h),
                        Some(CURRENT_VERSION),
                        "{agent:?} {event}"
                    );
                    let text = h.to_string();
                    assert!(!text.contains("{{"), "{agent:?} {event}: unfilled {text}");
                    assert!(
                        text.contains(&format!("capture --agent {}", agent.as_str())),
                        "{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn copilot_and_vscode_commands_name_their_event() {
        for agent in [Agent::Vscode, Agent::Copilot] {
            for (event, h) in agent.expected("cm").events {
                for key in ["command", "windows", "bash", "powershell"] {
                    if let Some(cmd) = h.get(key).and_then(Value::as_str) {
                        assert!(cmd.contains(&format!("--event {event}")), "{cmd}");
                    }
                }
            }
        }
    }

    #[test]
    fn program_is_quoted_per_shell() {
        let e = Agent::Copilot.expected("/opt/my tools/cmstore");
        let h = &e.events[0].1;
        assert_eq!(
            h["bash"],
            "'/opt/my tools/cmstore' capture --agent copilot --event sessionStart || true"
        );
        assert_eq!(
            h["powershell"],
            "& '/opt/my tools/cmstore' capture --agent copilot --event sessionStart; exit 0"
        );
        assert_eq!(e.top["version"], 1);
    }

    #[test]
    fn claude_on_windows_runs_through_powershell() {
        let e = Agent::Claude.expected_for(&[r"C:\Program Files\cmstore.exe"], Os::Windows);
        for (_, group) in &e.events {
            let h = &group["hooks"][0];
            assert_eq!(h["shell"], "powershell");
            assert_eq!(
                h["command"],
                r"& 'C:\Program Files\cmstore.exe' capture --agent claude"
            );
        }
        let unix = Agent::Claude.expected_for(&["/bin/cm"], Os::Unix);
        assert!(unix.events[0].1["hooks"][0].get("shell").is_none());
        let vscode = Agent::Vscode.expected_for(&["cm"], Os::Windows);
        assert_eq!(vscode, Agent::Vscode.expected_for(&["cm"], Os::Unix));
    }

    #[test]
    fn config_paths() {
        let p = Location::Project(PathBuf::from("/p"));
        assert_eq!(
            Agent::Claude.config_path(&p),
            Path::new("/p/.claude/settings.json")
        );
        assert_eq!(
            Agent::Copilot.config_path(&p),
            Path::new("/p/.github/hooks/cmstore.json")
        );
        assert_eq!(
            Agent::Vscode.config_path(&p),
            Path::new("/p/.github/hooks/cmstore-vscode.json")
        );
        let u = Location::User {
            home: PathBuf::from("/h"),
            claude_config_dir: None,
            copilot_home: None,
            codex_home: None,
            xdg_config_home: None,
            cline_dir: None,
        };
        assert_eq!(
            Agent::Claude.config_path(&u),
            Path::new("/h/.claude/settings.json")
        );
        assert_eq!(
            Agent::Copilot.config_path(&u),
            Path::new("/h/.copilot/hooks/cmstore.json")
        );
        let moved = Location::User {
            home: PathBuf::from("/h"),
            claude_config_dir: Some(PathBuf::from("/c")),
            copilot_home: Some(PathBuf::from("/g")),
            codex_home: Some(PathBuf::from("/x")),
            xdg_config_home: None,
            cline_dir: None,
        };
        assert_eq!(
            Agent::Claude.config_path(&moved),
            Path::new("/c/settings.json")
        );
        assert_eq!(
            Agent::Vscode.config_path(&moved),
            Path::new("/g/hooks/cmstore-vscode.json")
        );
        assert_eq!(
            Agent::Codex.config_path(&p),
            Path::new("/p/.codex/hooks.json")
        );
        assert_eq!(
            Agent::Codex.config_path(&u),
            Path::new("/h/.codex/hooks.json")
        );
        assert_eq!(Agent::Codex.config_path(&moved), Path::new("/x/hooks.json"));
        assert_eq!(
            Agent::Gemini.config_path(&p),
            Path::new("/p/.gemini/settings.json")
        );
        assert_eq!(
            Agent::Gemini.config_path(&moved),
            Path::new("/h/.gemini/settings.json")
        );
    }

    #[test]
    fn codex_and_gemini_get_their_own_events_and_units() {
        let codex = Agent::Codex.expected("cm");
        let names: Vec<&str> = codex.events.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(
            names,
            [
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PermissionRequest",
                "PostToolUse",
                "PreCompact",
                "PostCompact",
                "SubagentStart",
                "SubagentStop",
                "Stop",
                "SessionEnd",
                "Interrupt"
            ]
        );
        let h = &codex.events[0].1["hooks"][0];
        assert_eq!(h["command"], "cm capture --agent codex");
        assert_eq!(h["timeout"], 10, "seconds");
        // Codex clamps these two to 3 s (and says so at every start when given more).
        for (event, entry) in &codex.events[10..] {
            assert_eq!(entry["hooks"][0]["timeout"], 3, "{event}");
        }
        let gemini = Agent::Gemini.expected("cm");
        let names: Vec<&str> = gemini.events.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(
            names,
            [
                "SessionStart",
                "BeforeAgent",
                "BeforeTool",
                "AfterTool",
                "AfterAgent",
                "PreCompress",
                "Notification",
                "SessionEnd"
            ]
        );
        let h = &gemini.events[0].1["hooks"][0];
        assert_eq!(h["timeout"], 10_000, "milliseconds");
        assert_eq!(h["name"], "cmstore-hooks-v3");
        // Every event name is one capture knows.
        for (event, _) in codex.events.iter().chain(&gemini.events) {
            assert!(
                crate::model::queue_line::HookType::from_event_name(event).is_some(),
                "{event}"
            );
        }
    }
}
