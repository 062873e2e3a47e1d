//! `cmstore hooks install|status|uninstall`, `cmstore completions` and `cmstore man`, run as
//! the binary, against files in a temporary project and a temporary user home.

use std::fs;
use std::path::{Path, PathBuf};

use predicates::prelude::*;
use serde_json::Value;

use crate::common::{bin, TestEnv};

/// The program written into hook commands in these tests (`--command`).
const PROGRAM: &str = "/opt/cm tools/cmstore";

#[derive(Debug, Clone, Copy)]
struct Agent {
    name: &'static str,
    file: &'static str,
    events: usize,
    /// A file with the user's own hooks: another event, and one of ours with another command.
    user_file: &'static str,
    /// The user's entry under an event cmstore also writes, exactly as in `user_file`.
    user_block: &'static str,
    /// One event cmstore writes.
    event: &'static str,
    /// The token key and the text it holds at hooks-v3.
    marker: (&'static str, &'static str),
    timeout_key: &'static str,
    /// The file is the bare event map (Droid's `hooks.json`), with no `hooks` key around it.
    bare: bool,
}

const CLAUDE: Agent = Agent {
    name: "claude",
    file: ".claude/settings.json",
    events: 15,
    user_file: r#"{
    "permissions": {
        "allow": [
            "Bash(ls:*)"
        ]
    },
    "hooks": {
        "Stop": [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "notify-send done"
                    }
                ]
            }
        ],
        "PostCompact": [
            {
                "matcher": "auto",
                "hooks": [
                    {
                        "type": "command",
                        "command": "echo compacted",
                        "timeout": 5
                    }
                ]
            }
        ]
    },
    "model": "opus"
}
"#,
    user_block: r#"            {
                "hooks": [
                    {
                        "type": "command",
                        "command": "notify-send done"
                    }
                ]
            }"#,
    event: "Stop",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "timeout",
    bare: false,
};

const VSCODE: Agent = Agent {
    name: "vscode",
    file: ".github/hooks/cmstore-vscode.json",
    events: 8,
    user_file: "{\n  \"hooks\": {\n    \"SessionEnd\": [\n      {\n        \"type\": \"command\",\n        \"command\": \"./scripts/bye.sh\"\n      }\n    ],\n    \"Stop\": [\n      {\n        \"type\": \"command\",\n        \"command\": \"./scripts/stop.sh\",\n        \"timeout\": 15\n      }\n    ]\n  }\n}",
    user_block: "      {\n        \"type\": \"command\",\n        \"command\": \"./scripts/stop.sh\",\n        \"timeout\": 15\n      }",
    event: "Stop",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "timeout",
    bare: false,
};

const COPILOT: Agent = Agent {
    name: "copilot",
    file: ".github/hooks/cmstore.json",
    events: 12,
    user_file: "{\n\t\"version\": 1,\n\t\"hooks\": {\n\t\t\"permissionRequest\": [\n\t\t\t{\n\t\t\t\t\"type\": \"command\",\n\t\t\t\t\"bash\": \"./ask.sh\"\n\t\t\t}\n\t\t],\n\t\t\"sessionStart\": [\n\t\t\t{\n\t\t\t\t\"type\": \"command\",\n\t\t\t\t\"bash\": \"./hello.sh\",\n\t\t\t\t\"powershell\": \"./hello.ps1\",\n\t\t\t\t\"timeoutSec\": 5\n\t\t\t}\n\t\t]\n\t}\n}\n",
    user_block: "\t\t\t{\n\t\t\t\t\"type\": \"command\",\n\t\t\t\t\"bash\": \"./hello.sh\",\n\t\t\t\t\"powershell\": \"./hello.ps1\",\n\t\t\t\t\"timeoutSec\": 5\n\t\t\t}",
    event: "sessionStart",
    marker: ("comment", "cmstore hooks-v3"),
    timeout_key: "timeoutSec",
    bare: false,
};

const CODEX: Agent = Agent {
    name: "codex",
    file: ".codex/hooks.json",
    events: 12,
    user_file: r#"{
  "description": "team hooks",
  "hooks": {
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "python3 .codex/hooks/stop.py",
            "timeout": 20
          }
        ]
      }
    ],
    "PreToolUse": [
      {
        "matcher": "^Bash$",
        "hooks": [
          {
            "type": "command",
            "command": "./check.sh",
            "statusMessage": "checking"
          }
        ]
      }
    ]
  }
}
"#,
    user_block: r#"      {
        "hooks": [
          {
            "type": "command",
            "command": "python3 .codex/hooks/stop.py",
            "timeout": 20
          }
        ]
      }"#,
    event: "Stop",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "timeout",
    bare: false,
};

const GEMINI: Agent = Agent {
    name: "gemini",
    file: ".gemini/settings.json",
    events: 8,
    user_file: "{\n    \"theme\": \"GitHub\",\n    \"hooks\": {\n        \"BeforeTool\": [\n            {\n                \"matcher\": \"run_shell_command\",\n                \"hooks\": [\n                    {\n                        \"name\": \"guard\",\n                        \"type\": \"command\",\n                        \"command\": \"./guard.sh\",\n                        \"timeout\": 5000\n                    }\n                ]\n            }\n        ]\n    },\n    \"model\": {\n        \"name\": \"gemini-2.5-pro\"\n    }\n}\n",
    user_block: "            {\n                \"matcher\": \"run_shell_command\",\n                \"hooks\": [\n                    {\n                        \"name\": \"guard\",\n                        \"type\": \"command\",\n                        \"command\": \"./guard.sh\",\n                        \"timeout\": 5000\n                    }\n                ]\n            }",
    event: "BeforeTool",
    marker: ("name", "cmstore-hooks-v3"),
    timeout_key: "timeout",
    bare: false,
};

const QWEN: Agent = Agent {
    name: "qwen",
    file: ".qwen/settings.json",
    events: 15,
    user_file: "{\n  \"model\": {\n    \"name\": \"qwen3-coder-plus\"\n  },\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"run_shell_command\",\n        \"hooks\": [\n          {\n            \"name\": \"guard\",\n            \"type\": \"command\",\n            \"command\": \"./guard.sh\",\n            \"timeout\": 5\n          }\n        ]\n      }\n    ]\n  }\n}\n",
    user_block: "      {\n        \"matcher\": \"run_shell_command\",\n        \"hooks\": [\n          {\n            \"name\": \"guard\",\n            \"type\": \"command\",\n            \"command\": \"./guard.sh\",\n            \"timeout\": 5\n          }\n        ]\n      }",
    event: "PreToolUse",
    marker: ("name", "cmstore-hooks-v3"),
    timeout_key: "timeout",
    bare: false,
};

/// Cursor's handlers carry no timeout: its unit is not documented (seconds in Cursor's own
/// examples, milliseconds in others), so Cursor's default stands.
const CURSOR: Agent = Agent {
    name: "cursor",
    file: ".cursor/hooks.json",
    events: 11,
    user_file: "{\n  \"version\": 1,\n  \"hooks\": {\n    \"afterFileEdit\": [\n      {\n        \"command\": \"./format.sh\"\n      }\n    ],\n    \"stop\": [\n      {\n        \"command\": \"./notify.sh\",\n        \"loop_limit\": 3\n      }\n    ]\n  }\n}\n",
    user_block: "      {\n        \"command\": \"./notify.sh\",\n        \"loop_limit\": 3\n      }",
    event: "stop",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "",
    bare: false,
};

/// Droid's `hooks.json` is the bare event map: no `hooks` key around the events.
const DROID: Agent = Agent {
    name: "droid",
    file: ".factory/hooks.json",
    events: 9,
    user_file: "{\n  \"PreToolUse\": [\n    {\n      \"matcher\": \"Execute\",\n      \"hooks\": [\n        {\n          \"type\": \"command\",\n          \"command\": \"./guard.sh\",\n          \"timeout\": 5\n        }\n      ]\n    }\n  ],\n  \"showHookOutput\": true\n}\n",
    user_block: "    {\n      \"matcher\": \"Execute\",\n      \"hooks\": [\n        {\n          \"type\": \"command\",\n          \"command\": \"./guard.sh\",\n          \"timeout\": 5\n        }\n      ]\n    }",
    event: "PreToolUse",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "timeout",
    bare: true,
};

/// Windsurf's handlers carry no timeout: it documents none.
const WINDSURF: Agent = Agent {
    name: "windsurf",
    file: ".windsurf/hooks.json",
    events: 10,
    user_file: "{\n  \"hooks\": {\n    \"post_write_code\": [\n      {\n        \"command\": \"./format.sh\",\n        \"show_output\": true\n      }\n    ],\n    \"pre_run_command\": [\n      {\n        \"command\": \"python3 guard.py\",\n        \"working_directory\": \"tools\"\n      }\n    ]\n  }\n}\n",
    user_block: "      {\n        \"command\": \"python3 guard.py\",\n        \"working_directory\": \"tools\"\n      }",
    event: "pre_run_command",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "",
    bare: false,
};

/// Qoder CLI's `settings.json`: Claude Code's shape beside its other settings.
const QODER: Agent = Agent {
    name: "qoder",
    file: ".qoder/settings.json",
    events: 15,
    user_file: "{\n  \"model\": \"auto\",\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./guard.sh\",\n            \"timeout\": 5\n          }\n        ]\n      }\n    ]\n  }\n}\n",
    user_block: "      {\n        \"matcher\": \"Bash\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./guard.sh\",\n            \"timeout\": 5\n          }\n        ]\n      }",
    event: "PreToolUse",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "timeout",
    bare: false,
};

/// Goose's plugin folder of cmstore's own (`.agents/plugins/cmstore/hooks/hooks.json`): Claude
/// Code's nesting, a handler's `on_failure` Goose's own.
const GOOSE: Agent = Agent {
    name: "goose",
    file: ".agents/plugins/cmstore/hooks/hooks.json",
    events: 8,
    user_file: "{\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\n        \"matcher\": \"^shell$\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./guard.sh\",\n            \"timeout\": 5,\n            \"on_failure\": \"block\"\n          }\n        ]\n      }\n    ]\n  }\n}\n",
    user_block: "      {\n        \"matcher\": \"^shell$\",\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"./guard.sh\",\n            \"timeout\": 5,\n            \"on_failure\": \"block\"\n          }\n        ]\n      }",
    event: "PreToolUse",
    marker: ("cmstore", "hooks-v3"),
    timeout_key: "timeout",
    bare: false,
};

const AGENTS: [Agent; 11] = [
    CLAUDE, VSCODE, COPILOT, CODEX, GEMINI, QWEN, CURSOR, QODER, DROID, WINDSURF, GOOSE,
];

/// `agent`'s file `text` parsed, with its events under `hooks` even where the file holds
/// them bare.
fn parsed(agent: Agent, text: &str) -> Value {
    let doc: Value = serde_json::from_str(text).unwrap();
    if agent.bare {
        serde_json::json!({ "hooks": doc })
    } else {
        doc
    }
}

/// [`parsed`] undone: `doc` as `agent`'s file holds it.
fn unparsed(agent: Agent, doc: Value) -> Value {
    if agent.bare {
        doc["hooks"].clone()
    } else {
        doc
    }
}

/// `cmstore` without `CMSTORE_HOME`, which would otherwise be written into every hook command.
fn cmd(env: &TestEnv) -> assert_cmd::Command {
    let mut cmd = env.cmd();
    cmd.env_remove("CMSTORE_HOME");
    cmd
}

/// A project directory inside the test environment.
fn project(env: &TestEnv) -> PathBuf {
    let dir = env.dir.path().join("project");
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn hooks(env: &TestEnv, args: &[&str], dir: &Path) -> assert_cmd::assert::Assert {
    cmd(env)
        .arg("hooks")
        .args(args)
        .arg("--project")
        .arg(dir)
        .assert()
}

fn install(env: &TestEnv, agent: Agent, dir: &Path) -> assert_cmd::assert::Assert {
    hooks(
        env,
        &["install", "--agent", agent.name, "--command", PROGRAM],
        dir,
    )
}

fn status(env: &TestEnv, agent: Agent, dir: &Path) -> Value {
    let out = hooks(
        env,
        &[
            "status",
            "--agent",
            agent.name,
            "--command",
            PROGRAM,
            "--format",
            "json",
        ],
        dir,
    )
    .get_output()
    .stdout
    .clone();
    let rows: Value = serde_json::from_slice(&out).expect("status --format json");
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    rows[0].clone()
}

fn state(env: &TestEnv, agent: Agent, dir: &Path) -> String {
    status(env, agent, dir)["state"]
        .as_str()
        .unwrap()
        .to_string()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

/// cmstore's handlers in a parsed file, with their event.
fn our_handlers(agent: Agent, doc: &Value) -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for (event, entries) in doc["hooks"].as_object().unwrap() {
        // Droid keeps `showHookOutput` and `hooksDisabled` among its events.
        for entry in entries.as_array().into_iter().flatten() {
            let handlers = match entry.get("hooks") {
                Some(Value::Array(hs)) => hs.clone(),
                _ => vec![entry.clone()],
            };
            for h in handlers {
                if h.get(agent.marker.0).and_then(Value::as_str) == Some(agent.marker.1) {
                    found.push((event.clone(), h));
                }
            }
        }
    }
    found
}

#[test]
fn install_into_an_empty_project_writes_every_event() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        install(&env, agent, &dir)
            .success()
            .stdout(predicates::str::contains("installed hooks-v3"));
        let text = read(&dir.join(agent.file));
        assert!(text.starts_with("{\n  \""), "{text}");
        assert!(text.ends_with("}\n"));
        let doc = parsed(agent, &text);
        let ours = our_handlers(agent, &doc);
        assert_eq!(ours.len(), agent.events, "{}", agent.name);
        for (event, h) in &ours {
            let commands: Vec<&str> = ["command", "windows", "bash", "powershell"]
                .iter()
                .filter_map(|k| h.get(*k).and_then(Value::as_str))
                .collect();
            assert!(!commands.is_empty(), "{h}");
            for c in commands {
                assert!(
                    c.contains("'/opt/cm tools/cmstore' capture --agent ")
                        || c.starts_with("& '/opt/cm tools/cmstore' capture --agent "),
                    "{c}"
                );
                assert!(c.contains(&format!("--agent {}", agent.name)), "{c}");
                if ["vscode", "copilot"].contains(&agent.name) {
                    assert!(c.contains(&format!("--event {event}")), "{c}");
                }
            }
            if !agent.timeout_key.is_empty() {
                assert!(h[agent.timeout_key].as_u64().unwrap() > 0, "{h}");
            }
        }
        if ["copilot", "cursor"].contains(&agent.name) {
            assert_eq!(doc["version"], 1);
        }
        let st = status(&env, agent, &dir);
        assert_eq!(st["state"], "installed", "{st}");
        assert_eq!(st["tokens"], serde_json::json!(["hooks-v3"]));
        assert_eq!(st["events_current"], agent.events);
    }
}

#[test]
fn claude_tool_events_match_every_tool() {
    let env = TestEnv::new();
    let dir = project(&env);
    install(&env, CLAUDE, &dir).success();
    let doc: Value = serde_json::from_str(&read(&dir.join(CLAUDE.file))).unwrap();
    assert_eq!(doc["hooks"]["PreToolUse"][0]["matcher"], "*");
    assert!(doc["hooks"]["UserPromptSubmit"][0].get("matcher").is_none());
    let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "SessionEnd",
            "Notification",
            "PermissionRequest",
            "PermissionDenied",
            "PostToolBatch",
            "MessageDisplay"
        ]
    );
    assert_eq!(doc["hooks"]["PermissionDenied"][0]["matcher"], "*");
    assert!(doc["hooks"]["PostToolBatch"][0].get("matcher").is_none());
}

/// docs/hooks.md's section on each agent names every event `install` writes, and a count it
/// spells out ("the twelve events") is the number written.
#[test]
fn the_docs_name_and_count_the_events_install_writes() {
    let docs = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/hooks.md"));
    let titles = [
        ("claude", "### Claude Code"),
        ("copilot", "### GitHub Copilot CLI"),
        ("vscode", "### VS Code"),
        ("codex", "### Codex"),
        ("gemini", "### Gemini CLI"),
        ("qwen", "### Qwen Code"),
        ("cursor", "### Cursor"),
        ("qoder", "### Qoder CLI"),
        ("droid", "### Factory Droid"),
        ("windsurf", "### Windsurf"),
        ("goose", "### Goose"),
    ];
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        install(&env, agent, &dir).success();
        let doc = parsed(agent, &read(&dir.join(agent.file)));
        let events: Vec<&String> = doc["hooks"].as_object().unwrap().keys().collect();
        let title = titles.iter().find(|(n, _)| *n == agent.name).unwrap().1;
        let section = docs_section(&docs, title);
        let words = section.split_whitespace().collect::<Vec<_>>().join(" ");
        for event in &events {
            assert!(section.contains(event.as_str()), "{title}: {event} missing");
        }
        for (n, word) in NUMBER_WORDS.iter().enumerate() {
            if words.to_lowercase().contains(&format!(" {word} events")) {
                assert_eq!(n + 1, events.len(), "{title} says \"{word} events\"");
            }
        }
    }
}

const NUMBER_WORDS: [&str; 20] = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
];

/// The text of the Markdown section under `title`, up to the next heading.
fn docs_section<'a>(docs: &'a str, title: &str) -> &'a str {
    let start = docs
        .find(&format!("{title}\n"))
        .unwrap_or_else(|| panic!("{title}"));
    let body = &docs[start + title.len()..];
    let end = body.find("\n#").unwrap_or(body.len());
    &body[..end]
}

#[test]
fn user_hooks_and_layout_are_kept_and_uninstall_restores_the_file() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        let path = dir.join(agent.file);
        write(&path, agent.user_file);
        let before = parsed(agent, agent.user_file);

        install(&env, agent, &dir).success();
        let text = read(&path);
        assert!(
            text.contains(agent.user_block),
            "{}: the user's entry is not verbatim:\n{text}",
            agent.name
        );
        assert_eq!(
            text.ends_with('\n'),
            agent.user_file.ends_with('\n'),
            "{}: final newline",
            agent.name
        );
        let second_line = agent.user_file.lines().nth(1).unwrap();
        assert_eq!(text.lines().nth(1).unwrap(), second_line, "{}", agent.name);
        let doc = parsed(agent, &text);
        let top: Vec<&String> = doc.as_object().unwrap().keys().collect();
        let top_before: Vec<&String> = before.as_object().unwrap().keys().collect();
        assert_eq!(top, top_before, "{}: top-level key order", agent.name);
        for (event, entries) in before["hooks"].as_object().unwrap() {
            // Droid's `showHookOutput` sits among the events.
            let now = &doc["hooks"][event];
            match entries.as_array() {
                Some(entries) => assert_eq!(now[0], entries[0], "{}: {event}", agent.name),
                None => assert_eq!(now, entries, "{}: {event}", agent.name),
            }
        }
        let event_entries = doc["hooks"][agent.event].as_array().unwrap();
        assert_eq!(event_entries.len(), 2, "{}: user's + ours", agent.name);
        assert_eq!(our_handlers(agent, &doc).len(), agent.events);
        assert_eq!(state(&env, agent, &dir), "installed");

        hooks(&env, &["uninstall", "--agent", agent.name], &dir)
            .success()
            .stdout(predicates::str::contains(format!(
                "removed {} hooks",
                agent.events
            )));
        assert_eq!(read(&path), agent.user_file, "{}: uninstall", agent.name);
        assert_eq!(state(&env, agent, &dir), "missing");
    }
}

#[test]
fn install_twice_is_byte_identical() {
    for agent in AGENTS {
        for start in [None, Some(agent.user_file)] {
            let env = TestEnv::new();
            let dir = project(&env);
            let path = dir.join(agent.file);
            if let Some(text) = start {
                write(&path, text);
            }
            install(&env, agent, &dir).success();
            let first = fs::read(&path).unwrap();
            install(&env, agent, &dir)
                .success()
                .stdout(predicates::str::contains("already installed"));
            assert_eq!(fs::read(&path).unwrap(), first, "{}", agent.name);
        }
    }
}

#[test]
fn a_hand_edited_entry_is_reported_and_only_replaced_with_force() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        let path = dir.join(agent.file);
        install(&env, agent, &dir).success();
        let fresh = read(&path);
        let mut doc = parsed(agent, &fresh);
        let entry = &mut doc["hooks"][agent.event][0];
        let handler = match entry.get_mut("hooks") {
            Some(hs) => &mut hs[0],
            None => entry,
        };
        let edited_key = match agent.timeout_key {
            "" => "matcher",
            key => key,
        };
        handler[edited_key] = Value::from(99);
        let edited = serde_json::to_string_pretty(&unparsed(agent, doc)).unwrap() + "\n";
        write(&path, &edited);

        let st = status(&env, agent, &dir);
        assert_eq!(st["state"], "modified-by-hand", "{st}");
        assert_eq!(
            st["notes"],
            serde_json::json!([format!("{}: edited by hand", agent.event)])
        );
        install(&env, agent, &dir)
            .failure()
            .code(1)
            .stderr(predicates::str::contains("--force"));
        assert_eq!(read(&path), edited, "{}: refused install wrote", agent.name);

        cmd(&env)
            .args(["hooks", "install", "--force", "--command", PROGRAM])
            .args(["--agent", agent.name, "--project"])
            .arg(&dir)
            .assert()
            .success();
        assert_eq!(read(&path), fresh, "{}", agent.name);
    }
}

#[test]
fn an_older_token_is_outdated_and_install_updates_it() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        let path = dir.join(agent.file);
        write(&path, agent.user_file);
        install(&env, agent, &dir).success();
        let current = read(&path);
        let old = current.replace("hooks-v3", "hooks-v0");
        write(&path, &old);

        let st = status(&env, agent, &dir);
        assert_eq!(st["state"], "outdated", "{st}");
        assert_eq!(st["tokens"], serde_json::json!(["hooks-v0"]));
        install(&env, agent, &dir)
            .success()
            .stdout(predicates::str::contains("updated hooks-v0 to hooks-v3"));
        assert_eq!(read(&path), current, "{}", agent.name);
        assert_eq!(state(&env, agent, &dir), "installed");
    }
}

/// hooks-v2 wired Codex for ten events, without the SessionEnd and Interrupt that Codex 0.171
/// fires: such an install is outdated, and `install` adds the two and changes nothing else.
#[test]
fn a_hooks_v2_codex_install_gets_session_end_and_interrupt() {
    let env = TestEnv::new();
    let dir = project(&env);
    let path = dir.join(CODEX.file);
    install(&env, CODEX, &dir).success();
    let current = read(&path);
    let mut v2: Value = serde_json::from_str(&current.replace("hooks-v3", "hooks-v2")).unwrap();
    let hooks = v2["hooks"].as_object_mut().unwrap();
    for event in ["SessionEnd", "Interrupt"] {
        assert!(hooks.remove(event).is_some(), "{event} installed");
    }
    write(
        &path,
        &format!("{}\n", serde_json::to_string_pretty(&v2).unwrap()),
    );

    let st = status(&env, CODEX, &dir);
    assert_eq!(st["state"], "outdated", "{st}");
    assert_eq!(st["tokens"], serde_json::json!(["hooks-v2"]));
    install(&env, CODEX, &dir)
        .success()
        .stdout(predicates::str::contains("updated hooks-v2 to hooks-v3"));
    assert_eq!(read(&path), current);
    let doc: Value = serde_json::from_str(&current).unwrap();
    for event in ["SessionEnd", "Interrupt"] {
        assert_eq!(doc["hooks"][event][0]["hooks"][0]["timeout"], 3, "{event}");
    }
}

#[test]
fn another_binary_path_is_outdated_and_install_moves_the_hooks_to_it() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        let path = dir.join(agent.file);
        cmd(&env)
            .args(["hooks", "install", "--command", "/old/cmstore"])
            .args(["--agent", agent.name, "--project"])
            .arg(&dir)
            .assert()
            .success();
        let st = status(&env, agent, &dir);
        assert_eq!(st["state"], "outdated", "{st}");
        let note = st["notes"][0].as_str().unwrap();
        assert!(
            note.contains("runs another command (/old/cmstore capture"),
            "{note}"
        );
        // For people, the events that share it are one line.
        let text = hooks(
            &env,
            &["status", "--agent", agent.name, "--command", PROGRAM],
            &dir,
        )
        .success()
        .get_output()
        .stdout
        .clone();
        let text = String::from_utf8(text).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("another command"))
            .collect();
        assert_eq!(lines.len(), 1, "{text}");
        let events = st["notes"].as_array().unwrap().len();
        assert_eq!(lines[0].matches(", ").count() + 1, events, "{text}");
        install(&env, agent, &dir)
            .success()
            .stdout(predicates::str::contains("at the new command"));
        assert!(!read(&path).contains("/old/cmstore"));
        assert_eq!(state(&env, agent, &dir), "installed");
    }
}

/// The program a Stop hook of the Claude settings in `dir` runs.
fn claude_program(dir: &Path) -> String {
    let doc: Value = serde_json::from_str(&read(&dir.join(CLAUDE.file))).unwrap();
    let command = doc["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let program = command.strip_suffix(" capture --agent claude").unwrap();
    program.trim_matches('\'').to_string()
}

/// Issue 35.2: a project's file is meant to be committed, so its hooks run `cmstore` from the
/// PATH, not a path of this machine; with no cmstore on the PATH, this binary's path and a
/// note saying what to do. The user's own file runs this binary by its path.
#[test]
fn a_projects_hooks_run_cmstore_from_the_path_and_the_users_this_binary() {
    let env = TestEnv::new();
    let only_ours = env.agent_bin();
    let run = |args: &[&str], dir: &Path| {
        let mut c = cmd(&env);
        c.env("PATH", &only_ours).arg("hooks").args(args);
        c.arg("--project").arg(dir).assert()
    };
    let exe = fs::canonicalize(bin()).unwrap();

    let no_cmstore = project(&env);
    run(&["install", "--agent", "claude"], &no_cmstore)
        .success()
        .stderr(predicates::str::contains(
            "note: no cmstore on the PATH: the project's hooks run",
        ));
    assert_eq!(fs::canonicalize(claude_program(&no_cmstore)).unwrap(), exe);
    run(&["status", "--agent", "claude"], &no_cmstore)
        .success()
        .stdout(predicates::str::contains("installed"));

    #[cfg(unix)]
    std::os::unix::fs::symlink(&exe, only_ours.join("cmstore")).unwrap();
    #[cfg(not(unix))]
    fs::copy(&exe, only_ours.join("cmstore.exe")).unwrap();
    let on_path = env.dir.path().join("on-path");
    fs::create_dir_all(&on_path).unwrap();
    run(&["install", "--agent", "claude"], &on_path)
        .success()
        .stderr(predicates::str::contains("note: no cmstore").not());
    assert_eq!(claude_program(&on_path), "cmstore");
    run(&["status", "--agent", "claude"], &on_path)
        .success()
        .stdout(predicates::str::contains("installed"));
    // The file written before, with this machine's path, is one to point at the PATH's.
    run(&["install", "--agent", "claude"], &no_cmstore)
        .success()
        .stdout(predicates::str::contains(
            "pointed hooks-v3 at the new command",
        ));
    assert_eq!(claude_program(&no_cmstore), "cmstore");

    let mut user = cmd(&env);
    user.env("PATH", &only_ours)
        .args(["hooks", "install", "--agent", "claude", "--user"])
        .assert()
        .success();
    let settings = env.user_home();
    assert_eq!(
        fs::canonicalize(claude_program(&settings)).unwrap(),
        exe,
        "the user's file runs this binary by its path"
    );
}

#[test]
fn malformed_files_are_never_touched() {
    for agent in AGENTS {
        // An event of this agent's that is not an array (Gemini CLI has no `Stop`).
        let (stop, start) = match agent.name {
            "gemini" => ("AfterAgent", "sessionStart"),
            "windsurf" => ("post_cascade_response", "pre_user_prompt"),
            _ => ("Stop", "sessionStart"),
        };
        let not_an_array = match agent.bare {
            false => format!("{{\"hooks\": {{\"{stop}\": {{}}, \"{start}\": 3}}}}"),
            true => format!("{{\"{stop}\": {{}}, \"{start}\": 3}}"),
        };
        // A bare event map has no `hooks` to be of the wrong kind: the top is.
        let hooks_not_an_object = match agent.bare {
            false => "{\"hooks\": []}",
            true => "\"hooks\"",
        };
        for bad in [
            "{\"hooks\": {\"Stop\": [}",
            "[1, 2]",
            hooks_not_an_object,
            not_an_array.as_str(),
        ] {
            let env = TestEnv::new();
            let dir = project(&env);
            let path = dir.join(agent.file);
            write(&path, bad);
            install(&env, agent, &dir)
                .failure()
                .code(1)
                .stderr(predicates::str::contains(
                    agent.file.rsplit('/').next().unwrap(),
                ));
            assert_eq!(read(&path), bad);
            // An event that is not an array holds nothing of cmstore's, so uninstall has
            // nothing to do there; the other shapes cannot be read at all.
            let uninstall = hooks(&env, &["uninstall", "--agent", agent.name], &dir);
            if bad != not_an_array {
                uninstall.failure().code(1);
            }
            assert_eq!(read(&path), bad);
            let out = hooks(
                &env,
                &["status", "--agent", agent.name, "--format", "json"],
                &dir,
            )
            .failure()
            .code(1)
            .get_output()
            .stdout
            .clone();
            let rows: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(rows[0]["state"], "invalid");
        }
    }
    let env = TestEnv::new();
    let dir = project(&env);
    write(&dir.join(CLAUDE.file), "{\n  \"a\": 1,\n}\n");
    install(&env, CLAUDE, &dir)
        .failure()
        .stderr(predicates::str::contains("is not valid JSON"));
}

#[test]
fn uninstall_of_a_fresh_install_deletes_the_file_and_nothing_else() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        install(&env, agent, &dir).success();
        hooks(&env, &["uninstall", "--agent", agent.name], &dir).success();
        assert!(!dir.join(agent.file).exists(), "{}", agent.name);
        // The folders the install made are gone too; the project stays.
        let first = Path::new(agent.file).components().next().unwrap();
        assert!(!dir.join(first).exists(), "{}: {first:?} left", agent.name);
        assert!(dir.is_dir());
        hooks(&env, &["uninstall", "--agent", agent.name], &dir)
            .success()
            .stdout(predicates::str::contains("not installed"));
    }
}

#[test]
fn uninstall_keeps_a_folder_that_holds_anything_else() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        install(&env, agent, &dir).success();
        let first = dir.join(Path::new(agent.file).components().next().unwrap());
        write(&first.join("mine.txt"), "the user's");
        hooks(&env, &["uninstall", "--agent", agent.name], &dir).success();
        assert!(!dir.join(agent.file).exists(), "{}", agent.name);
        assert_eq!(
            read(&first.join("mine.txt")),
            "the user's",
            "{}",
            agent.name
        );
    }
}

#[test]
fn an_empty_file_is_taken_as_an_empty_configuration() {
    for agent in AGENTS {
        let env = TestEnv::new();
        let dir = project(&env);
        write(&dir.join(agent.file), "");
        install(&env, agent, &dir)
            .success()
            .stdout(predicates::str::contains("note").not());
        assert_eq!(state(&env, agent, &dir), "installed");
    }
}

#[test]
fn a_file_in_another_layout_keeps_it_where_cmstore_did_not_write() {
    let env = TestEnv::new();
    let dir = project(&env);
    let path = dir.join(CLAUDE.file);
    let permissions = r#""permissions": { "allow": ["Bash(ls:*)", "Read"] }"#;
    let user_stop = r#"{ "hooks": [ {"type": "command", "command": "say done"} ] }"#;
    let other_event = r#""PostCompact": [{"hooks": [{"type": "command", "command": "beep"}]}]"#;
    let text = format!(
        "{{\n  {permissions},\n  \"hooks\": {{\n    \"Stop\": [ {user_stop} ],\n    {other_event}\n  }}\n}}\n"
    );
    write(&path, &text);
    install(&env, CLAUDE, &dir).success();
    let installed = read(&path);
    for part in [permissions, user_stop, other_event] {
        assert!(
            installed.contains(part),
            "{part} not kept verbatim:\n{installed}"
        );
    }
    assert_eq!(state(&env, CLAUDE, &dir), "installed");
    hooks(&env, &["uninstall", "--agent", "claude"], &dir).success();
    let after = read(&path);
    assert_eq!(
        serde_json::from_str::<Value>(&after).unwrap(),
        serde_json::from_str::<Value>(&text).unwrap()
    );
    for part in [permissions, user_stop, other_event] {
        assert!(after.contains(part), "{part} not kept verbatim:\n{after}");
    }
}

#[test]
fn uninstall_leaves_the_users_own_cmstore_hooks() {
    let env = TestEnv::new();
    let dir = project(&env);
    let path = dir.join(CLAUDE.file);
    let mine = "{\n  \"hooks\": {\n    \"Stop\": [\n      {\n        \"hooks\": [\n          {\n            \"type\": \"command\",\n            \"command\": \"cmstore capture --agent claude\"\n          }\n        ]\n      }\n    ]\n  }\n}\n";
    write(&path, mine);
    assert_eq!(state(&env, CLAUDE, &dir), "missing");
    install(&env, CLAUDE, &dir).success();
    hooks(&env, &["uninstall", "--agent", "claude"], &dir).success();
    assert_eq!(read(&path), mine);
}

#[test]
fn several_agents_at_once_and_status_of_all() {
    let env = TestEnv::new();
    let dir = project(&env);
    hooks(
        &env,
        &["install", "--agent", "claude,copilot", "--command", PROGRAM],
        &dir,
    )
    .success();
    let out = hooks(
        &env,
        &["status", "--command", PROGRAM, "--format", "json"],
        &dir,
    )
    .success()
    .get_output()
    .stdout
    .clone();
    let rows: Value = serde_json::from_slice(&out).unwrap();
    let states: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["agent"].as_str().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        states,
        [
            ("claude", "installed"),
            ("vscode", "missing"),
            ("copilot", "installed"),
            ("codex", "missing"),
            ("gemini", "missing"),
            ("qwen", "missing"),
            ("cursor", "missing"),
            ("qoder", "missing"),
            ("droid", "missing"),
            ("opencode", "missing"),
            ("kilo", "missing"),
            ("cline", "missing"),
            ("windsurf", "missing"),
            ("kiro", "missing"),
            // Not Kimi Code: it has no project scope.
            ("goose", "missing")
        ]
    );
}

#[test]
fn vscode_next_to_copilot_warns_about_double_capture() {
    let env = TestEnv::new();
    let dir = project(&env);
    install(&env, VSCODE, &dir).success();
    install(&env, COPILOT, &dir)
        .success()
        .stderr(predicates::str::contains("captured twice"));
}

#[test]
fn installing_vscode_and_copilot_together_warns_once() {
    let env = TestEnv::new();
    let dir = project(&env);
    install(&env, VSCODE, &dir).success();
    install(&env, COPILOT, &dir).success();
    let out = hooks(
        &env,
        &["install", "--agent", "vscode,copilot", "--command", PROGRAM],
        &dir,
    )
    .success()
    .get_output()
    .stderr
    .clone();
    let err = String::from_utf8(out).unwrap();
    assert_eq!(err.matches("captured twice").count(), 1, "{err}");
}

#[test]
fn status_text_has_a_header_row_and_a_line_per_agent() {
    let env = TestEnv::new();
    let dir = project(&env);
    install(&env, CODEX, &dir).success();
    install(&env, GEMINI, &dir).success();
    let out = hooks(&env, &["status", "--command", PROGRAM], &dir)
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    // A row's notes are indented below it (Codex's review: not trusted here).
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        lines[0], "AGENT    SCOPE    STATE             TOKEN     FILE",
        "{text}"
    );
    let agents: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(
        agents,
        [
            "claude", "vscode", "copilot", "codex", "gemini", "qwen", "cursor", "qoder", "droid",
            // Not Kimi Code: it has no project scope.
            "opencode", "kilo", "cline", "windsurf", "kiro", "goose"
        ],
        "{text}"
    );
    assert!(
        lines[4].starts_with("codex    project  installed         hooks-v3  ")
            && lines[4].ends_with(".codex/hooks.json"),
        "{text}"
    );
    assert!(
        lines[5].starts_with("gemini   project  installed"),
        "{text}"
    );
}

/// An agent runs the user's hooks and the project's: without `--user` or `--project`,
/// `status` shows both for every agent, and a project that is the home directory once.
#[test]
fn status_without_a_scope_shows_the_users_and_the_projects() {
    let env = TestEnv::new();
    let dir = project(&env);
    cmd(&env)
        .args(["hooks", "install", "--user", "--command", PROGRAM])
        .args(["--agent", "claude"])
        .assert()
        .success();
    install(&env, CODEX, &dir).success();
    let rows = |cwd: &Path| -> Vec<(String, String, String)> {
        let out = cmd(&env)
            .args(["hooks", "status", "--command", PROGRAM, "--format", "json"])
            .current_dir(cwd)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let rows: Value = serde_json::from_slice(&out).unwrap();
        rows.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let field = |k: &str| r[k].as_str().unwrap().to_string();
                (field("agent"), field("scope"), field("state"))
            })
            .collect()
    };
    let row = |agent: &str, scope: &str, state: &str| {
        (agent.to_string(), scope.to_string(), state.to_string())
    };
    let mut expected = Vec::new();
    for agent in [
        "claude", "vscode", "copilot", "codex", "gemini", "qwen", "cursor", "qoder", "droid",
        "opencode", "kilo", "cline", "windsurf", "kiro", "goose", "kimi",
    ] {
        let user = if agent == "claude" {
            "installed"
        } else {
            "missing"
        };
        let project = if agent == "codex" {
            "installed"
        } else {
            "missing"
        };
        expected.push(row(agent, "user", user));
        // Kimi Code reads plugins from the user's folder only: no project row.
        if agent != "kimi" {
            expected.push(row(agent, "project", project));
        }
    }
    assert_eq!(rows(&dir), expected);
    // In the home directory, Claude's, Codex's, Gemini's, Qwen's, Cursor's, Qoder's and Droid's
    // project files are the user's own, and so are Cline's (`~/.cline/hooks` both) and
    // Kiro's (`~/.kiro/hooks` both) and Goose's (`~/.agents/plugins` both), and Kimi Code has
    // the user's only;
    // OpenCode's and Kilo's user plugins are under ~/.config, their project ones under
    // ~/.opencode and ~/.kilo, and
    // Windsurf's user file under ~/.codeium/windsurf, its project one under ~/.windsurf: two.
    let home_rows = rows(&env.user_home());
    assert_eq!(home_rows.len(), 21, "{home_rows:?}");
    assert_eq!(home_rows[0], row("claude", "user", "installed"));
    assert!(
        !home_rows.contains(&row("claude", "project", "installed")),
        "{home_rows:?}"
    );
}

#[test]
fn user_scope_writes_under_home_and_honours_config_dir_variables() {
    let env = TestEnv::new();
    for agent in AGENTS {
        cmd(&env)
            .args(["hooks", "install", "--user", "--command", PROGRAM])
            .args(["--agent", agent.name])
            .assert()
            .success();
    }
    let home = env.user_home();
    assert!(home.join(".claude/settings.json").is_file());
    assert!(home.join(".copilot/hooks/cmstore.json").is_file());
    assert!(home.join(".copilot/hooks/cmstore-vscode.json").is_file());
    assert!(home.join(".codex/hooks.json").is_file());
    assert!(home.join(".gemini/settings.json").is_file());
    cmd(&env)
        .args(["hooks", "status", "--user", "--command", PROGRAM])
        .assert()
        .success()
        .stdout(predicates::str::contains("claude   user     installed"));

    let moved = env.dir.path().join("moved");
    cmd(&env)
        .env("CLAUDE_CONFIG_DIR", moved.join("claude"))
        .env("COPILOT_HOME", moved.join("copilot"))
        .env("CODEX_HOME", moved.join("codex"))
        .args([
            "hooks",
            "install",
            "--user",
            "--agent",
            "claude,copilot,codex",
        ])
        .assert()
        .success();
    assert!(moved.join("claude/settings.json").is_file());
    assert!(moved.join("copilot/hooks/cmstore.json").is_file());
    assert!(moved.join("codex/hooks.json").is_file());
}

#[test]
fn home_and_queue_given_to_install_are_written_into_the_command() {
    let env = TestEnv::new();
    let dir = project(&env);
    let home = env.dir.path().join("my home");
    env.cmd()
        .env("CMSTORE_HOME", &home)
        .args([
            "hooks",
            "install",
            "--agent",
            "copilot,claude",
            "--command",
            "cmstore",
        ])
        .args(["--queue", "q.jsonl", "--project"])
        .arg(&dir)
        .current_dir(env.dir.path())
        .assert()
        .success();
    let queue = env.dir.path().join("q.jsonl");
    let doc: Value = serde_json::from_str(&read(&dir.join(COPILOT.file))).unwrap();
    assert_eq!(
        doc["hooks"]["sessionStart"][0]["bash"],
        format!(
            "cmstore --home '{}' --queue {} capture --agent copilot --event sessionStart || true",
            home.display(),
            queue.display()
        )
    );
    assert_eq!(
        doc["hooks"]["sessionStart"][0]["powershell"],
        format!(
            "cmstore --home '{}' --queue {} capture --agent copilot --event sessionStart; exit 0",
            home.display(),
            queue.display()
        )
    );
    let st = status(&env, CLAUDE, &dir);
    assert_eq!(st["state"], "outdated", "without the same --home: {st}");
    assert!(st["notes"][0].as_str().unwrap().contains("--home"), "{st}");
}

#[test]
fn a_missing_project_directory_is_an_error() {
    let env = TestEnv::new();
    hooks(
        &env,
        &["install", "--agent", "claude"],
        &env.dir.path().join("nope"),
    )
    .failure()
    .code(1)
    .stderr(predicates::str::contains("does not exist"));
}

#[cfg(unix)]
#[test]
fn permissions_and_symlinks_survive_a_rewrite() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let dir = project(&env);
    let path = dir.join(CLAUDE.file);
    write(&path, CLAUDE.user_file);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    install(&env, CLAUDE, &dir).success();
    assert_eq!(
        fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let dotfiles = env.dir.path().join("dotfiles/settings.json");
    write(&dotfiles, CLAUDE.user_file);
    let linked = env.dir.path().join("linked");
    fs::create_dir_all(linked.join(".claude")).unwrap();
    std::os::unix::fs::symlink(&dotfiles, linked.join(CLAUDE.file)).unwrap();
    install(&env, CLAUDE, &linked).success();
    assert!(fs::symlink_metadata(linked.join(CLAUDE.file))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(read(&dotfiles).contains("hooks-v3"));
    hooks(&env, &["uninstall", "--agent", "claude"], &linked).success();
    assert_eq!(read(&dotfiles), CLAUDE.user_file);
    let leftovers: Vec<_> = fs::read_dir(dotfiles.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "temporary files left: {leftovers:?}");
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = cmd(&TestEnv::new())
            .args(["completions", shell])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let text = String::from_utf8(out).unwrap();
        for name in ["capture", "hooks", "completions", "man"] {
            assert!(text.contains(name), "{shell}: no {name}");
        }
    }
}

#[test]
fn man_page_is_roff_naming_the_subcommands() {
    let out = cmd(&TestEnv::new())
        .arg("man")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.starts_with(".ie") || text.contains(".TH cmstore"),
        "{text}"
    );
    for name in ["capture", "hooks", "completions"] {
        assert!(text.contains(name), "no {name}");
    }
}

#[test]
fn every_subcommand_has_a_man_page_of_its_own() {
    let env = TestEnv::new();
    let page = |args: &[&str]| {
        let out = cmd(&env).arg("man").args(args).assert().success();
        String::from_utf8(out.get_output().stdout.clone()).unwrap()
    };
    let ingest = page(&["ingest"]);
    assert!(ingest.contains(".TH cmstore-ingest 1"), "{ingest}");
    assert!(
        ingest.contains("cmstore\\-ingest \\- Mirror the queue"),
        "{ingest}"
    );
    assert!(ingest.contains("\\-\\-heartbeat\\-ms"), "{ingest}");
    assert!(
        !ingest.contains("retention\\-interval"),
        "hidden options stay hidden"
    );
    let install = page(&["hooks", "install"]);
    assert!(install.contains(".TH cmstore-hooks-install 1"), "{install}");
    cmd(&env)
        .args(["man", "nope"])
        .assert()
        .failure()
        .stderr(predicates::str::contains(
            "no man page for `cmstore nope`; pages exist for: capture, ingest,",
        ));

    let dir = env.dir.path().join("man1");
    let definition = cmstore::cli::Cli::definition();
    // A page for cmstore and each visible subcommand, at every depth.
    fn visible(command: &clap::Command) -> usize {
        1 + command
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(visible)
            .sum::<usize>()
    }
    cmd(&env)
        .args(["man", "--all"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicates::str::contains(format!(
            "{} man pages written to",
            visible(&definition)
        )));
    for sub in definition.get_subcommands().filter(|s| !s.is_hide_set()) {
        let file = dir.join(format!("cmstore-{}.1", sub.get_name()));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        assert!(
            text.contains(&format!(".TH cmstore-{} 1", sub.get_name())),
            "{text}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{file:?}");
        }
    }
    assert!(dir.join("cmstore.1").exists());
    assert!(dir.join("cmstore-hooks-uninstall.1").exists());
}

/// Runs the command cmstore installed for `agent` under `event` (through `sh`, as the agent
/// would) with `payload` on stdin, and returns the queue line it wrote.
#[cfg(unix)]
fn run_installed(env: &TestEnv, agent: Agent, event: &str, payload: &str) -> Value {
    let dir = project(env);
    let home = env.home();
    cmd(env)
        .arg("--home")
        .arg(&home)
        .args(["hooks", "install", "--agent", agent.name, "--command"])
        .arg(bin())
        .arg("--project")
        .arg(&dir)
        .assert()
        .success();
    let doc: Value = serde_json::from_str(&read(&dir.join(agent.file))).unwrap();
    let command = doc["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let mut child = std::process::Command::new("sh")
        .args(["-c", &command])
        .env("HOME", env.user_home())
        .env_remove("CMSTORE_HOME")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), payload.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines = env.queue_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    lines[0].clone()
}

#[cfg(unix)]
#[test]
fn the_installed_gemini_hook_captures_a_real_gemini_event() {
    let Some(real) = crate::common::real_fixtures() else {
        return;
    };
    let samples =
        fs::read_to_string(real.join("gemini-cli/hook-after-tool.embedded-samples.jsonl")).unwrap();
    let payload = samples.lines().next().unwrap();
    let env = TestEnv::new();
    let line = run_installed(&env, GEMINI, "AfterTool", payload);
    assert_eq!(line["agent"], "gemini");
    assert_eq!(line["hookType"], "PostToolUse");
    assert_eq!(line["sessionId"], "b4576730-3466-4e78-877c-6376b070d9a4");
}

#[cfg(unix)]
#[test]
fn the_installed_codex_hook_captures_a_codex_event() {
    let env = TestEnv::new();
    let payload = r#"{"session_id":"c1","turn_id":"t1","transcript_path":null,"cwd":"/tmp","hook_event_name":"PreToolUse","model":"gpt-5","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"u1"}"#;
    let line = run_installed(&env, CODEX, "PreToolUse", payload);
    assert_eq!(line["agent"], "codex");
    assert_eq!(line["hookType"], "PreToolUse");
    assert_eq!(line["sessionId"], "c1");
}

/// The events of cmstore's Claude handlers in the project's settings, in file order.
fn claude_events(dir: &Path) -> Vec<String> {
    let doc: Value = serde_json::from_str(&read(&dir.join(CLAUDE.file))).unwrap();
    our_handlers(CLAUDE, &doc)
        .into_iter()
        .map(|(event, _)| event)
        .collect()
}

/// Issue 35.1: an older Claude Code rejects a whole settings file naming an event it does
/// not know, `permissions.deny` included. `hooks install` asks `claude --version` and writes
/// only what that version knows; after an upgrade `status` says what the new one would fire
/// and `install` adds it.
#[cfg(unix)]
#[test]
fn an_older_claude_gets_only_the_events_it_knows_and_an_upgrade_adds_the_rest() {
    let env = TestEnv::new();
    let dir = project(&env);
    env.fake_claude(Some("2.1.100 (Claude Code)"));
    install(&env, CLAUDE, &dir)
        .success()
        .stdout(predicates::str::contains(
            "installed hooks-v3 (13 events for Claude Code 2.1.100)",
        ))
        .stderr(predicates::str::contains(
            "note: claude: Claude Code 2.1.100 does not know PostToolBatch, MessageDisplay: \
             left out",
        ));
    let events = claude_events(&dir);
    assert_eq!(events.len(), 13, "{events:?}");
    assert!(!events
        .iter()
        .any(|e| e == "PostToolBatch" || e == "MessageDisplay"));
    assert_eq!(state(&env, CLAUDE, &dir), "installed");
    assert_eq!(status(&env, CLAUDE, &dir)["agent_version"], "2.1.100");

    env.fake_claude(Some("2.1.332 (Claude Code)"));
    let row = status(&env, CLAUDE, &dir);
    assert_eq!(row["state"], "outdated", "{row}");
    assert!(
        row["notes"]
            .to_string()
            .contains("PostToolBatch: not installed; Claude Code 2.1.332 fires it"),
        "{row}"
    );
    install(&env, CLAUDE, &dir).success();
    assert_eq!(claude_events(&dir).len(), 15);
    assert_eq!(state(&env, CLAUDE, &dir), "installed");
}

/// A Claude Code older than an install (a downgrade, or a file written by hand for a newer
/// one): `status` says which events it does not know, and `install` takes them out.
#[cfg(unix)]
#[test]
fn events_an_older_claude_does_not_know_are_named_and_taken_out() {
    let env = TestEnv::new();
    let dir = project(&env);
    install(&env, CLAUDE, &dir).success();
    assert_eq!(claude_events(&dir).len(), 15);
    env.fake_claude(Some("2.0.50 (Claude Code)"));
    let row = status(&env, CLAUDE, &dir);
    assert_eq!(row["state"], "outdated", "{row}");
    let notes = row["notes"].to_string();
    for event in [
        "PostToolUseFailure",
        "PermissionDenied",
        "PostToolBatch",
        "MessageDisplay",
    ] {
        assert!(
            notes.contains(&format!(
                "{event}: Claude Code 2.0.50 does not know this event"
            )),
            "{row}"
        );
    }
    install(&env, CLAUDE, &dir).success();
    assert_eq!(claude_events(&dir).len(), 11);
    assert_eq!(state(&env, CLAUDE, &dir), "installed");
}

/// No `claude` to ask: the events every Claude Code since the floor knows, and a note that
/// says so and how to do better; `--agent-version` says it instead.
#[test]
fn a_claude_that_cannot_be_asked_gets_the_floors_events() {
    let env = TestEnv::new();
    let dir = project(&env);
    env.fake_claude(None);
    let only_ours = env.agent_bin();
    std::fs::create_dir_all(&only_ours).unwrap();
    // `hooks install --agent claude` with nothing but the test's own folder on the PATH.
    let install_claude = |extra: &[&str]| {
        let mut install = cmd(&env);
        install
            .env("PATH", &only_ours)
            .args([
                "hooks",
                "install",
                "--agent",
                "claude",
                "--command",
                PROGRAM,
            ])
            .args(extra)
            .arg("--project")
            .arg(&dir);
        install
    };
    install_claude(&[])
        .assert()
        .success()
        .stdout(predicates::str::contains("installed hooks-v3 (12 events)"))
        .stderr(predicates::str::contains(
            "note: claude: Claude Code's version is not known: no `claude` on the PATH;",
        ))
        .stderr(predicates::str::contains(
            "only the events every Claude Code since 2.0.56 knows (left out: PermissionDenied, \
             PostToolBatch, MessageDisplay); pass --agent-version",
        ));
    assert_eq!(claude_events(&dir).len(), 12);

    install_claude(&["--agent-version", "2.1.152"])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "claude: fitted hooks-v3 to Claude Code 2.1.152 (15 events) in",
        ));
    assert_eq!(claude_events(&dir).len(), 15, "2.1.152 knows them all");

    hooks(
        &env,
        &["install", "--agent", "codex", "--agent-version", "0.171.0"],
        &dir,
    )
    .failure()
    .stderr(predicates::str::contains(
        "--agent-version is for Claude Code only",
    ));
    hooks(
        &env,
        &["install", "--agent", "claude", "--agent-version", "latest"],
        &dir,
    )
    .failure()
    .stderr(predicates::str::contains("\"latest\" is no version"));
}

/// Issue 35.2: hooks reported installed that will never fire. `install` says what must still
/// happen (Codex's trust, VS Code's `chat.hookFilesLocations` for the user's folder), and
/// `status` names a switch that turns them off (Gemini CLI's `hooksConfig`, Codex's
/// `[features] hooks`).
#[test]
fn hooks_that_will_not_fire_are_said_so() {
    let env = TestEnv::new();
    let dir = project(&env);
    install(&env, CODEX, &dir)
        .success()
        .stderr(predicates::str::contains(
            "note: codex: Codex runs new or changed hooks only once you trust them",
        ));
    write(
        &dir.join(".codex/config.toml"),
        "model = \"gpt-5\"\n\n[features]\nhooks = false\n",
    );
    let row = status(&env, CODEX, &dir);
    assert_eq!(row["state"], "installed", "{row}");
    let reasons: Vec<&str> = row["will_not_fire"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert_eq!(reasons.len(), 3, "{row}");
    assert_eq!(
        reasons[0],
        "Codex's hooks are off ([features] hooks = false in config.toml)"
    );
    assert!(reasons[1].starts_with("Codex reads a project's .codex/ only once you trust"));
    assert!(reasons[2].starts_with("Codex leaves out 12 of cmstore's 12 hooks"));

    write(
        &dir.join(GEMINI.file),
        r#"{"hooksConfig": {"disabled": ["cmstore-hooks-v3"]}}"#,
    );
    install(&env, GEMINI, &dir)
        .success()
        .stderr(predicates::str::contains(
            "note: gemini: the hooks will not fire: Gemini CLI skips cmstore's hooks: \
             \"hooksConfig.disabled\" lists \"cmstore-hooks-v3\"",
        ));
    hooks(
        &env,
        &["status", "--agent", "gemini", "--command", PROGRAM],
        &dir,
    )
    .success()
    .stdout(predicates::str::contains(
        "    will not fire: Gemini CLI skips cmstore's hooks",
    ));

    let mut vscode_user = cmd(&env);
    vscode_user
        .args(["hooks", "install", "--agent", "vscode", "--user"])
        .assert()
        .success()
        .stderr(predicates::str::contains(
            "note: vscode: VS Code reads ~/.copilot/hooks only when its \
             `chat.hookFilesLocations` setting lists it",
        ));
    hooks(&env, &["install", "--agent", "vscode"], &dir)
        .success()
        .stderr(predicates::str::contains("chat.hookFilesLocations").not());
}

/// Droid (issue 38): its hooks before 0.136 in `hooks/hooks.json`, which it stops reading once
/// a `hooks.json` exists, are carried into the new file, and the old one is moved aside as
/// Droid moves it; the switches and files that keep its hooks from running are said; the
/// user's own file is `~/.factory/hooks.json`.
#[test]
fn droid_hooks_carry_its_earlier_file_over_and_say_what_turns_them_off() {
    let env = TestEnv::new();
    let dir = project(&env);
    let earlier = dir.join(".factory/hooks/hooks.json");
    let theirs = "{\n  \"Stop\": [\n    {\n      \"hooks\": [\n        {\n          \"type\": \"command\",\n          \"command\": \"./notify.sh\"\n        }\n      ]\n    }\n  ]\n}\n";
    write(&earlier, theirs);
    install(&env, DROID, &dir)
        .success()
        .stderr(predicates::str::contains(
            "are carried over into hooks.json, and it is now",
        ));
    assert!(!earlier.exists());
    assert_eq!(
        read(&dir.join(".factory/hooks/hooks.migrated.json")),
        theirs
    );
    let doc = parsed(DROID, &read(&dir.join(DROID.file)));
    assert_eq!(
        doc["hooks"]["Stop"][0]["hooks"][0]["command"],
        "./notify.sh"
    );
    assert_eq!(doc["hooks"]["Stop"].as_array().unwrap().len(), 2);
    assert_eq!(our_handlers(DROID, &doc).len(), DROID.events);
    assert_eq!(state(&env, DROID, &dir), "installed");

    let reasons = |env: &TestEnv| -> Vec<String> {
        status(env, DROID, &dir)["will_not_fire"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r.as_str().unwrap().to_string())
            .collect()
    };
    assert!(reasons(&env).is_empty());
    write(
        &dir.join(".factory/settings.json"),
        r#"{"model": "claude-sonnet-4-5", "hooks": {"hooksDisabled": true}}"#,
    );
    let mut doc = read(&dir.join(DROID.file));
    doc = doc.replacen(
        "\"type\": \"command\",\n          \"command\": \"./notify.sh\"",
        "\"type\": \"prompt\",\n          \"command\": \"./notify.sh\"",
        1,
    );
    write(&dir.join(DROID.file), &doc);
    assert_eq!(
        reasons(&env),
        [
            "Droid's hooks are off (\"hooksDisabled\": true in settings.json)",
            "Droid ignores the whole file: a hook of Stop is not of \"type\": \"command\"",
        ]
    );

    cmd(&env)
        .args(["hooks", "install", "--agent", "droid", "--user"])
        .assert()
        .success();
    let user_file = env.user_home().join(".factory/hooks.json");
    let user_doc: Value = serde_json::from_str(&read(&user_file)).unwrap();
    assert!(user_doc.get("hooks").is_none(), "bare: {user_doc}");
    assert!(user_doc["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .ends_with("capture --agent droid"));
}

/// Droid runs one list of hooks per event, `hooks.json`'s where it has the event, else the
/// `settings.json` beside it (seen with Droid 0.225.2): an install carries the user's
/// `settings.json` hooks of the events it writes into `hooks.json`, so they keep running, and
/// names handlers that already run cmstore without its token (Droid's `/hooks` editor drops
/// it), which would capture every event twice.
#[test]
fn droid_install_keeps_the_settings_hooks_running_and_names_unmarked_cmstore_handlers() {
    let env = TestEnv::new();
    let dir = project(&env);
    let guard = serde_json::json!([{"matcher": "Execute",
        "hooks": [{"type": "command", "command": "./guard.sh"}]}]);
    write(
        &dir.join(".factory/settings.json"),
        &serde_json::json!({"model": "gpt-5-codex", "hooks": {
            "PreToolUse": guard, "Custom": [{"hooks": []}]}})
        .to_string(),
    );
    write(
        &dir.join(DROID.file),
        r#"{"Stop": [{"hooks": [{"type": "command", "command": "/usr/bin/cmstore capture --agent droid"}]}]}"#,
    );
    install(&env, DROID, &dir)
        .success()
        .stderr(predicates::str::contains(
            "your hooks there for PreToolUse are carried into hooks.json",
        ))
        .stderr(predicates::str::contains(
            "droid: Stop already run `capture --agent droid` without cmstore's token",
        ));
    let doc = parsed(DROID, &read(&dir.join(DROID.file)));
    assert_eq!(doc["hooks"]["PreToolUse"][0], guard[0], "theirs first");
    assert_eq!(doc["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert!(
        doc["hooks"].get("Custom").is_none(),
        "only the events cmstore writes"
    );
    assert!(
        read(&dir.join(".factory/settings.json")).contains("guard.sh"),
        "settings.json is left as it was"
    );
    // Installed again: nothing more to carry, nothing said twice.
    install(&env, DROID, &dir)
        .success()
        .stderr(predicates::str::contains("carried").not());
}

/// The trap Droid's users fall into (Factory-AI/factory#3): hooks written into `hooks.json` in
/// the settings shape, under a `hooks` key, load as nothing. Install adds cmstore's at the top
/// (they run) and says the user's never do; the doctor says so too.
#[test]
fn droid_hooks_in_the_settings_shape_are_said_to_never_run() {
    let env = TestEnv::new();
    let dir = project(&env);
    write(
        &dir.join(DROID.file),
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./notify.sh"}]}]}}"#,
    );
    install(&env, DROID, &dir)
        .success()
        .stderr(predicates::str::contains(
            "note: droid: your Stop hooks under a \"hooks\" key in hooks.json (Droid reads only \
             the events at its top: move them up); cmstore's hooks are written at its top, and run",
        ));
    let doc: Value = serde_json::from_str(&read(&dir.join(DROID.file))).unwrap();
    assert!(
        doc["SessionStart"].is_array(),
        "cmstore's at the top: {doc}"
    );
    assert_eq!(
        doc["hooks"]["Stop"][0]["hooks"][0]["command"],
        "./notify.sh"
    );
    hooks(&env, &["doctor", "--agent", "droid"], &dir)
        .failure()
        .stdout(predicates::str::contains(
            "broken  will not fire: your Stop hooks under a \"hooks\" key in hooks.json",
        ));
}

/// Issue 39's hooks doctor, with the common breakages staged: a file whose command names a
/// binary that is gone, Codex's hooks switched off, nothing installed at all. A working file
/// passes with a probe fired through its own command line, and no probe reaches the store.
#[cfg(unix)]
#[test]
fn hooks_doctor_fires_a_probe_through_each_installed_command_and_names_what_is_broken() {
    let env = TestEnv::new();
    let dir = project(&env);
    let doctor = |dir: &Path| hooks(&env, &["doctor"], dir);

    let empty = doctor(&dir).failure();
    let text = String::from_utf8(empty.get_output().stdout.clone()).unwrap();
    assert!(text.contains("no agent here has cmstore's hooks"), "{text}");

    let exe = bin().display().to_string();
    hooks(
        &env,
        &[
            "install",
            "--agent",
            "claude,gemini,cursor",
            "--command",
            &exe,
        ],
        &dir,
    )
    .success();
    let fine = doctor(&dir).success();
    let text = String::from_utf8(fine.get_output().stdout.clone()).unwrap();
    assert_eq!(
        text.matches("  ok      a probe SessionStart reached the queue in ")
            .count(),
        2,
        "{text}"
    );
    // Cursor's own casing and payload.
    assert_eq!(
        text.matches("  ok      a probe sessionStart reached the queue in ")
            .count(),
        1,
        "{text}"
    );
    assert!(text.ends_with("nothing broken\n"), "{text}");
    // What the hooks write reaches the store only through an ingest: none runs here.
    assert!(
        text.contains(
            "\n  note    no ingest runs: what the hooks write waits in the queue until \
             `cmstore ingest` reads it\n"
        ),
        "{text}"
    );

    // The binary the Codex hooks name is gone, and Codex's hooks are off.
    hooks(
        &env,
        &["install", "--agent", "codex", "--command", "/gone/cmstore"],
        &dir,
    )
    .success();
    write(
        &dir.join(".codex/config.toml"),
        "[features]\nhooks = false\n",
    );
    let broken = doctor(&dir).failure();
    let text = String::from_utf8(broken.get_output().stdout.clone()).unwrap();
    let codex: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("codex"))
        .take_while(|l| l.starts_with("codex") || l.starts_with("  "))
        .collect();
    assert!(
        codex
            .iter()
            .any(|l| l.starts_with("  broken  will not fire: Codex's hooks are off")),
        "{text}"
    );
    assert!(
        codex.iter().any(|l| l
            .starts_with("  broken  the probe failed: the hook command failed (exit 127)")
            && l.contains("/gone/cmstore")),
        "{text}"
    );
    // And the two of Codex's review: the project is not trusted, the changed hooks are not.
    assert!(text.ends_with("4 problems; 1 file to update\n"), "{text}");

    // Probes leave nothing behind: no line in the queue, no file in the state folder.
    let queue = std::fs::read_to_string(env.user_home().join(".contextmanager/hook-queue.jsonl"))
        .unwrap_or_default();
    assert!(!queue.contains("cmstore-doctor-"), "{queue}");
    let state = env.user_home().join(".contextmanager/state");
    let left: Vec<_> = std::fs::read_dir(&state)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        left.iter()
            .all(|n| !n.to_string_lossy().starts_with("cmstore-doctor-")),
        "{left:?}"
    );
}

/// Gemini CLI's switches staged as a user leaves them: the old `hooks.enabled` of Gemini CLI
/// before `hooksConfig`, then `hooksConfig.disabled` naming cmstore's hooks. The doctor names
/// each as a reason the hooks will not fire, and fails, though its probe (which runs the
/// command itself) passes.
#[test]
fn hooks_doctor_names_gemini_switches_that_keep_the_hooks_from_firing() {
    let env = TestEnv::new();
    let dir = project(&env);
    let exe = bin().display().to_string();
    hooks(
        &env,
        &["install", "--agent", "gemini", "--command", &exe],
        &dir,
    )
    .success();
    let settings = dir.join(".gemini/settings.json");
    let installed: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    let broken_lines = |doc: &serde_json::Value| -> Vec<String> {
        write(&settings, &serde_json::to_string_pretty(doc).unwrap());
        let out = hooks(&env, &["doctor"], &dir).failure();
        let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
        assert!(
            text.contains("  ok      a probe SessionStart reached the queue in "),
            "{text}"
        );
        text.lines()
            .filter(|l| l.starts_with("  broken  will not fire: "))
            .map(str::to_string)
            .collect()
    };

    let mut old_switch = installed.clone();
    old_switch["hooks"]["enabled"] = serde_json::json!(false);
    assert_eq!(
        broken_lines(&old_switch),
        ["  broken  will not fire: Gemini CLI's hooks are off (\"hooks\": {\"enabled\": false})"]
    );

    let names: Vec<String> = installed["hooks"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|groups| groups.as_array().unwrap().iter())
        .flat_map(|group| group["hooks"].as_array().unwrap().iter())
        .filter_map(|h| h["name"].as_str().map(str::to_string))
        .collect();
    let name = names.first().expect("cmstore's hooks are named").clone();
    let mut disabled = installed.clone();
    disabled["hooksConfig"] = serde_json::json!({ "disabled": [name.clone()] });
    assert_eq!(
        broken_lines(&disabled),
        [format!(
            "  broken  will not fire: Gemini CLI skips cmstore's hooks: \"hooksConfig.disabled\" lists {name:?}"
        )]
    );
}

/// The `config.toml` lines a doctor's report says would trust what Codex leaves out: its
/// lines indented under a "will not fire".
fn codex_trust_lines(report: &str) -> String {
    report
        .lines()
        .filter(|l| l.starts_with("        ") && !l.trim().is_empty())
        .map(|l| format!("{}\n", l.trim()))
        .collect()
}

/// Issue 39: Codex (0.129 and later) runs a project's hooks only in a trusted project, and
/// each hook only once it is trusted as it is now (`[hooks.state]` in the user's
/// `config.toml`); `codex exec` never asks. The doctor names each state, and the lines it
/// gives make Codex's review pass (the hashes themselves are held to a real Codex in
/// tests/e2e/codex.rs and to one Codex wrote in the unit tests).
#[test]
fn hooks_doctor_names_codex_hooks_its_review_leaves_out() {
    let env = TestEnv::new();
    let dir = project(&env);
    let exe = bin().display().to_string();
    let doctor = || {
        let out = hooks(&env, &["doctor", "--agent", "codex"], &dir)
            .get_output()
            .clone();
        (out.status.success(), String::from_utf8(out.stdout).unwrap())
    };
    hooks(
        &env,
        &["install", "--agent", "codex", "--command", &exe],
        &dir,
    )
    .success();
    let (ok, text) = doctor();
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "  broken  will not fire: Codex reads a project's .codex/ only once you trust the project"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "  broken  will not fire: Codex leaves out 12 of cmstore's 12 hooks (12 not reviewed) \
             until you trust them"
        ),
        "{text}"
    );
    assert!(text.ends_with("2 problems\n"), "{text}");
    let config = env.user_home().join(".codex/config.toml");
    let hooks_file = dir.join(".codex/hooks.json").display().to_string();
    // A key as TOML writes it (a Windows path's backslashes escaped).
    let key = |event: &str| toml::Value::String(format!("{hooks_file}:{event}:0:0")).to_string();
    let lines = codex_trust_lines(&text);
    assert_eq!(
        lines.matches("trusted_hash = \"sha256:").count(),
        12,
        "{lines}"
    );
    assert!(
        lines.contains(&format!("[hooks.state.{}]", key("pre_tool_use"))),
        "{lines}"
    );

    // What the doctor said, added to the user's config.toml: nothing is left out.
    write(&config, &format!("model = \"gpt-5\"\n\n{lines}"));
    let (ok, text) = doctor();
    assert!(ok, "{text}");
    assert!(!text.contains("will not fire"), "{text}");
    assert!(text.ends_with("nothing broken\n"), "{text}");

    // A new command line (cmstore moved) changes every hook's hash; one turned off stays off.
    hooks(
        &env,
        &["install", "--agent", "codex", "--command", "/opt/cmstore"],
        &dir,
    )
    .success();
    let stop = format!("[hooks.state.{}]\n", key("stop"));
    let trusted = fs::read_to_string(&config).unwrap();
    assert!(trusted.contains(&stop), "{trusted}");
    write(
        &config,
        &trusted.replace(&stop, &format!("{stop}enabled = false\n")),
    );
    let (ok, text) = doctor();
    assert!(!ok, "{text}");
    assert!(
        text.contains("  broken  will not fire: 1 of cmstore's 12 hooks are turned off in "),
        "{text}"
    );
    assert!(
        text.contains(
            "Codex leaves out 11 of cmstore's 12 hooks (11 changed since you trusted them)"
        ),
        "{text}"
    );
    // The fix for a changed hook sets its table's hash (a second table would make the file
    // unreadable); done as said, only the hook turned off is left.
    // A TOML string as written (a key, a hash), read back.
    let string_of = |written: &str| -> String {
        let doc: toml::Table = format!("x = {written}").parse().unwrap();
        doc["x"].as_str().unwrap().to_string()
    };
    let mut config_doc: toml::Table = fs::read_to_string(&config).unwrap().parse().unwrap();
    let said: Vec<&str> = text.lines().map(str::trim).collect();
    let mut set = 0;
    for pair in said.windows(2) {
        let (Some(table), Some(hash)) = (
            pair[0]
                .strip_prefix("under [hooks.state.")
                .and_then(|t| t.strip_suffix(']')),
            pair[1].strip_prefix("trusted_hash = "),
        ) else {
            continue;
        };
        let key: String = string_of(table);
        let hash: String = string_of(hash);
        config_doc["hooks"]["state"][key.as_str()]["trusted_hash"] = toml::Value::String(hash);
        set += 1;
    }
    assert_eq!(set, 11, "{text}");
    write(&config, &config_doc.to_string());
    let (ok, text) = doctor();
    assert!(!ok, "{text}");
    assert!(!text.contains("Codex leaves out"), "{text}");
    // What is left: the hook turned off, and the probe of a command that is not there.
    assert!(
        text.contains("1 of cmstore's 12 hooks are turned off"),
        "{text}"
    );
    assert!(text.ends_with("2 problems; 1 file to update\n"), "{text}");

    // Codex before 0.129 has no hooks review: only the hook turned off is said no more
    // either, and nothing of the hashes.
    let fake = env.agent_bin().join("codex");
    fs::write(&fake, "#!/bin/sh\necho 'codex-cli 0.128.0'\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (_, text) = doctor();
    if cfg!(unix) {
        assert!(!text.contains("turned off"), "{text}");
        assert!(!text.contains("Codex leaves out"), "{text}");
    }
    fs::remove_file(&fake).unwrap();

    // A project the user's config.toml names untrusted.
    let untrusted = format!(
        "[projects.{}]\ntrust_level = \"untrusted\"\n",
        toml::Value::String(dir.display().to_string())
    );
    write(&config, &untrusted);
    let (_, text) = doctor();
    assert!(
        text.contains("Codex reads nothing of this project's .codex/: ")
            && text.contains("names it untrusted"),
        "{text}"
    );
}

/// Issue 39: in a linked git worktree Codex takes the project hooks from the main checkout's
/// same folder, and trusts the project by the main checkout's entry. The doctor says so
/// when only the worktree has cmstore's hooks, and checks the main checkout's file's review
/// when it has them. (The layout is staged as `git worktree add` leaves it: Codex reads the
/// files, not git.)
#[test]
fn hooks_doctor_follows_codex_into_the_main_checkout_of_a_worktree() {
    let env = TestEnv::new();
    let main = env.dir.path().join("main");
    let tree = env.dir.path().join("feature");
    fs::create_dir_all(main.join(".git/worktrees/feature")).unwrap();
    fs::create_dir_all(&tree).unwrap();
    write(
        &tree.join(".git"),
        &format!(
            "gitdir: {}\n",
            main.join(".git/worktrees/feature").display()
        ),
    );
    let exe = bin().display().to_string();
    let doctor = || {
        let out = hooks(&env, &["doctor", "--agent", "codex"], &tree)
            .get_output()
            .clone();
        (out.status.success(), String::from_utf8(out.stdout).unwrap())
    };
    let install = |dir: &Path| {
        hooks(
            &env,
            &["install", "--agent", "codex", "--command", &exe],
            dir,
        )
        .success();
    };
    install(&tree);
    let (ok, text) = doctor();
    assert!(!ok, "{text}");
    let main_file = main.join(".codex").join("hooks.json");
    assert!(
        text.contains(&format!(
            "  broken  will not fire: this folder is in a linked git worktree: Codex runs the \
             project hooks of the main checkout's {} here, not this file's; `cmstore hooks \
             install --agent codex --project {}` puts them there",
            main_file.display(),
            main.display()
        )),
        "{text}"
    );

    // Installed in the main checkout, and trusted there as the doctor says: the worktree's
    // hooks fire, its project trusted by the main checkout's entry.
    install(&main);
    let (ok, text) = doctor();
    assert!(!ok, "{text}");
    assert!(!text.contains("linked git worktree"), "{text}");
    let key = toml::Value::String(format!("{}:pre_tool_use:0:0", main_file.display())).to_string();
    let lines = codex_trust_lines(&text);
    assert!(lines.contains(&format!("[hooks.state.{key}]")), "{lines}");
    // The project is to be trusted by its main checkout's entry, as Codex asks.
    let main_key = toml::Value::String(main.canonicalize().unwrap().display().to_string());
    assert!(lines.contains(&format!("[projects.{main_key}]")), "{lines}");
    write(&env.user_home().join(".codex/config.toml"), &lines);
    let (ok, text) = doctor();
    assert!(ok, "{text}");
    assert!(text.ends_with("nothing broken\n"), "{text}");
}

/// Where VS Code keeps the user's settings in a test's home (stable build).
fn vscode_user_settings(env: &TestEnv) -> PathBuf {
    let root = if cfg!(windows) {
        env.user_home().join("AppData").join("Roaming")
    } else if cfg!(target_os = "macos") {
        env.user_home().join("Library").join("Application Support")
    } else {
        env.user_home().join(".config")
    };
    root.join("Code").join("User").join("settings.json")
}

/// Issue 39: VS Code's settings that keep its hooks from running: `chat.useHooks: false`, and
/// `chat.hookFilesLocations` turning cmstore's folder off, read from the user's settings (JSONC,
/// comments and trailing commas) and the workspace's, whose keys win. The user's folder
/// `~/.copilot/hooks` is noted unless the settings list it.
#[test]
fn hooks_doctor_names_vscode_settings_that_keep_its_hooks_from_running() {
    let env = TestEnv::new();
    let dir = project(&env);
    let exe = bin().display().to_string();
    let doctor = |args: &[&str]| {
        let out = cmd(&env)
            .args(["hooks", "doctor", "--agent", "vscode"])
            .args(args)
            .assert()
            .get_output()
            .clone();
        (out.status.success(), String::from_utf8(out.stdout).unwrap())
    };
    hooks(
        &env,
        &["install", "--agent", "vscode", "--command", &exe],
        &dir,
    )
    .success();
    let (ok, text) = doctor(&["--project", &dir.display().to_string()]);
    assert!(ok, "{text}");

    let settings = vscode_user_settings(&env);
    write(
        &settings,
        "{\n  // mine\n  \"chat.hookFilesLocations\": {\".github/hooks\": false,},\n}\n",
    );
    let (ok, text) = doctor(&["--project", &dir.display().to_string()]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "  broken  will not fire: VS Code does not read .github/hooks \
             (\"chat.hookFilesLocations\": {{\".github/hooks\": false}} in {})",
            settings.display()
        )),
        "{text}"
    );
    // The workspace's own settings win over the user's.
    write(
        &dir.join(".vscode/settings.json"),
        r#"{"chat.hookFilesLocations": {".github/hooks": true}}"#,
    );
    let (ok, text) = doctor(&["--project", &dir.display().to_string()]);
    assert!(ok, "{text}");

    write(&settings, r#"{"chat.useHooks": false}"#);
    let (ok, text) = doctor(&["--project", &dir.display().to_string()]);
    assert!(!ok, "{text}");
    assert!(
        text.contains(
            "  broken  will not fire: VS Code runs no hooks (\"chat.useHooks\": false in "
        ),
        "{text}"
    );

    // With Stable and Insiders both set up, a setting of one of them is that build's only:
    // a note naming it, not a broken install for a user of the other one.
    let insiders = settings
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .unwrap()
        .join("Code - Insiders/User/settings.json");
    write(&insiders, r#"{"chat.useHooks": false}"#);
    write(&settings, "{}");
    let (ok, text) = doctor(&["--project", &dir.display().to_string()]);
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "  note    may not fire: VS Code Insiders only: VS Code runs no hooks (\"chat.useHooks\": false in {})",
            insiders.display()
        )),
        "{text}"
    );
    // Both builds off: broken, each said with its file.
    write(&settings, r#"{"chat.useHooks": false}"#);
    let (ok, text) = doctor(&["--project", &dir.display().to_string()]);
    assert!(!ok, "{text}");
    for file in [&settings, &insiders] {
        assert!(
            text.contains(&format!("(\"chat.useHooks\": false in {})", file.display())),
            "{text}"
        );
    }
    fs::remove_file(&insiders).unwrap();

    // The user's folder: a note until the settings list it.
    cmd(&env)
        .args([
            "hooks",
            "install",
            "--agent",
            "vscode",
            "--user",
            "--command",
            &exe,
        ])
        .assert()
        .success();
    write(&settings, "{}");
    let (ok, text) = doctor(&["--user"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("  note    VS Code reads ~/.copilot/hooks only when"),
        "{text}"
    );
    write(
        &settings,
        r#"{"chat.hookFilesLocations": {"~/.copilot/hooks": true}}"#,
    );
    let (ok, text) = doctor(&["--user"]);
    assert!(ok, "{text}");
    assert!(!text.contains("~/.copilot/hooks only when"), "{text}");
}

/// Issue 39: the doctor's check that what the hooks write reaches the store: a following
/// ingest, named by its pid, must take in every line the queue holds within 10 s (the first
/// doctor after it starts may not see it yet: it is seen by its lock). One that runs but is stopped
/// (SIGSTOP: alive, holding its lock, reading nothing) is broken, and said so.
#[cfg(unix)]
#[test]
fn hooks_doctor_proves_a_running_ingest_takes_the_queue_in() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let env = TestEnv::new();
    let dir = project(&env);
    let exe = bin().display().to_string();
    hooks(
        &env,
        &["install", "--agent", "claude", "--command", &exe],
        &dir,
    )
    .success();
    // The user's own queue and store, as the hooks and the doctor use them.
    let home = env.user_home().join(".contextmanager");
    let queue = home.join("hook-queue.jsonl");
    let line = |n: usize| {
        serde_json::json!({"hookType": "Notification", "timestamp": 1767225600000u64 + n as u64,
            "sessionId": "s-doctor", "id": format!("0199a000-0000-7000-8000-{n:012}"), "v": 1})
        .to_string()
    };
    cmstore::files::queue::append_lines(&queue, &[line(1), line(2)]).unwrap();
    let mut child = env
        .std_cmd()
        .env_remove("CMSTORE_HOME")
        .args(["ingest", "--poll-ms", "20"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let doctor = || {
        let out = hooks(&env, &["doctor"], &dir).get_output().clone();
        let text = String::from_utf8(out.stdout).unwrap();
        (out.status.success(), text)
    };
    // The doctor sees the ingest by its lock, taken once it follows.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (ok, text) = loop {
        cmstore::files::queue::append_lines(&queue, &[line(3)]).unwrap();
        let (ok, text) = doctor();
        if text.contains("an ingest follows") || Instant::now() > deadline {
            break (ok, text);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(ok, "{text}");
    assert!(
        text.contains(&format!(
            "  ok      an ingest follows the queue into {} (pid {}): every line the queue held \
             was in the store within ",
            home.join("cmstore.db").display(),
            child.id()
        )),
        "{text}"
    );

    // Stopped: alive and locked, reading nothing.
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap()
    };
    signal("-STOP");
    cmstore::files::queue::append_lines(&queue, &[line(4)]).unwrap();
    let (ok, text) = doctor();
    signal("-CONT");
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "  broken  an ingest runs (pid {pid}), but is {} bytes of the queue short of its \
             end and took in nothing in 10 s",
            line(4).len() + 1
        )),
        "{text}"
    );
    assert!(text.ends_with("1 problem\n"), "{text}");
    // Going again, it takes the line in.
    let (ok, text) = doctor();
    assert!(ok, "{text}");
    // The queue replaced by a shorter file while the ingest is stopped: the store's offset is
    // the old file's, past this one's end, and counts for none of it.
    signal("-STOP");
    let replaced = home.join("hook-queue.jsonl.new");
    std::fs::write(&replaced, format!("{}\n", line(5))).unwrap();
    std::fs::rename(&replaced, &queue).unwrap();
    let (ok, text) = doctor();
    signal("-CONT");
    assert!(!ok, "{text}");
    assert!(
        text.contains(&format!(
            "but is {} bytes of the queue short of its end",
            line(5).len() + 1
        )),
        "{text}"
    );
    let (ok, text) = doctor();
    assert!(ok, "once it noticed the new file: {text}");
    crate::common::terminate(&child);
    assert!(crate::common::wait_timeout(&mut child, Duration::from_secs(20)).is_some());
}

/// OpenCode runs no hook commands: `hooks install --agent opencode` writes cmstore's plugin,
/// a file cmstore owns whole, into the project's `.opencode/plugin/` or the user's
/// `$XDG_CONFIG_HOME/opencode/plugin/`; status tells it installed, outdated (another
/// binary) or edited; uninstall deletes only cmstore's file and the folders it leaves empty.
#[test]
fn opencode_gets_a_plugin_file_that_install_status_and_uninstall_own() {
    let env = TestEnv::new();
    let dir = project(&env);
    let file = dir.join(".opencode/plugin/cmstore.js");
    hooks(
        &env,
        &["install", "--agent", "opencode", "--command", PROGRAM],
        &dir,
    )
    .success()
    .stdout(predicates::str::contains(
        "opencode: installed hooks-v3 (a plugin for 12 events) into",
    ));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("// cmstore: hooks-v3\n"), "{text}");
    assert!(
        text.contains(&format!("const COMMAND = [{PROGRAM:?}]\n")),
        "the plugin runs the program itself, no shell"
    );
    hooks(
        &env,
        &["install", "--agent", "opencode", "--command", PROGRAM],
        &dir,
    )
    .success()
    .stdout(predicates::str::contains("already installed (hooks-v3)"));
    let state = |env: &TestEnv, command: &str| plugin_state(env, "opencode", command, &dir);
    assert_eq!(state(&env, PROGRAM), ("installed".to_string(), vec![]));
    assert_eq!(
        state(&env, "/new/cmstore"),
        (
            "outdated".to_string(),
            vec![format!("runs another command ({PROGRAM})")]
        )
    );

    // Edited by hand: kept unless forced.
    std::fs::write(&file, text.clone() + "// mine\n").unwrap();
    assert_eq!(state(&env, PROGRAM).0, "modified-by-hand");
    hooks(
        &env,
        &["install", "--agent", "opencode", "--command", PROGRAM],
        &dir,
    )
    .failure()
    .stderr(predicates::str::contains("changed by hand"));
    hooks(
        &env,
        &[
            "install",
            "--agent",
            "opencode",
            "--command",
            PROGRAM,
            "--force",
        ],
        &dir,
    )
    .success();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);

    // OpenCode keeps files of its own in `.opencode`: only the emptied `plugin/` goes.
    std::fs::write(dir.join(".opencode/package.json"), "{}").unwrap();
    hooks(&env, &["uninstall", "--agent", "opencode"], &dir)
        .success()
        .stdout(predicates::str::contains("removed the plugin"));
    assert!(!file.exists() && !dir.join(".opencode/plugin").exists());
    assert!(dir.join(".opencode/package.json").exists());

    // A plugin of the user's own at that path is theirs: neither replaced nor removed.
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, "export const Mine = async () => ({})\n").unwrap();
    hooks(
        &env,
        &["install", "--agent", "opencode", "--command", PROGRAM],
        &dir,
    )
    .failure()
    .stderr(predicates::str::contains(
        "cmstore.js is not cmstore's; move it away",
    ));
    hooks(&env, &["uninstall", "--agent", "opencode"], &dir)
        .success()
        .stdout(predicates::str::contains("(not cmstore's)"));
    assert!(file.exists());

    // cmstore's plugin changed by hand is left too; one whose line ends a Windows checkout
    // turned into CRLF is still cmstore's own.
    std::fs::write(&file, text.replace('\n', "\r\n")).unwrap();
    assert_eq!(state(&env, PROGRAM).0, "installed");
    std::fs::write(&file, text.clone() + "// mine\n").unwrap();
    hooks(&env, &["uninstall", "--agent", "opencode"], &dir)
        .success()
        .stdout(predicates::str::contains(
            "(changed by hand: remove it yourself)",
        ));
    assert!(file.exists());
}

#[test]
fn opencodes_user_plugin_follows_xdg_config_home_and_the_doctor_probes_it() {
    let env = TestEnv::new();
    let config = env.dir.path().join("xdg");
    cmd(&env)
        .env("XDG_CONFIG_HOME", &config)
        .args(["hooks", "install", "--user", "--agent", "opencode"])
        .assert()
        .success();
    let file = config.join("opencode/plugin/cmstore.js");
    assert!(file.exists());
    let out = cmd(&env)
        .env("XDG_CONFIG_HOME", &config)
        .args(["hooks", "doctor", "--user", "--agent", "opencode"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("ok      installed: hooks-v3, 12 events")
            && text.contains("ok      a probe session.created reached the queue in"),
        "{text}"
    );
    // Without the variable, ~/.config.
    cmd(&env)
        .args(["hooks", "install", "--user", "--agent", "opencode"])
        .assert()
        .success();
    assert!(env
        .user_home()
        .join(".config/opencode/plugin/cmstore.js")
        .exists());
}

/// Cline runs a hook script per event from its hooks folders: `hooks install --agent cline`
/// writes one per event into the project's `.cline/hooks/` or the user's
/// `$CLINE_DIR/hooks/` (`~/.cline/hooks/`), each a shell script that runs capture; status
/// tells a folder missing some, uninstall removes cmstore's and leaves the user's own; both
/// folders at once would capture every event twice, which install and status say; the
/// doctor runs one as Cline does.
#[test]
fn cline_gets_a_hook_script_per_event_that_install_status_and_uninstall_own() {
    let env = TestEnv::new();
    let dir = project(&env);
    // A project's `.clinerules` may be a file of rules: not in the way.
    std::fs::write(dir.join(".clinerules"), "Use tabs.\n").unwrap();
    let folder = dir.join(".cline/hooks");
    hooks(
        &env,
        &["install", "--agent", "cline", "--command", PROGRAM],
        &dir,
    )
    .success()
    .stdout(predicates::str::contains(
        "cline: installed hooks-v3 (10 hook scripts for 10 events) into",
    ));
    let script = std::fs::read_to_string(folder.join("PreToolUse")).unwrap();
    assert!(
        script.starts_with("#!/bin/sh\n# cmstore: hooks-v3\n")
            && script.ends_with("\nexec '/opt/cm tools/cmstore' capture --agent cline\n"),
        "{script}"
    );
    let names: std::collections::BTreeSet<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 10, "{names:?}");
    // One gone, one of the user's own beside them.
    std::fs::remove_file(folder.join("TaskCancel")).unwrap();
    std::fs::write(folder.join("TaskStart.py"), "print('mine')\n").unwrap();
    let out = hooks(
        &env,
        &[
            "status",
            "--agent",
            "cline",
            "--format",
            "json",
            "--command",
            PROGRAM,
        ],
        &dir,
    )
    .get_output()
    .stdout
    .clone();
    let rows: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(rows[0]["state"], "outdated", "{rows}");
    assert_eq!(rows[0]["notes"], serde_json::json!(["TaskCancel: missing"]));
    hooks(
        &env,
        &["install", "--agent", "cline", "--command", PROGRAM],
        &dir,
    )
    .success()
    .stdout(predicates::str::contains(
        "updated 10 hook scripts to hooks-v3",
    ));
    assert!(folder.join("TaskCancel").exists());

    // The user's folder too: said, as Cline would run both.
    let user = env.dir.path().join("cline-dir");
    let out = cmd(&env)
        .env("CLINE_DIR", &user)
        .current_dir(&dir)
        .args(["hooks", "install", "--agent", "cline", "--user"])
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(user.join("hooks/SessionShutdown").exists());
    assert!(String::from_utf8_lossy(&out.stderr).is_empty());
    cmd(&env)
        .env("CLINE_DIR", &user)
        .args(["hooks", "status", "--agent", "cline", "--project"])
        .arg(&dir)
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "Cline runs the hooks of {} and of {} alike: every event is captured twice"
                .replacen("{}", &user.join("hooks").display().to_string(), 1)
                .replacen("{}", &folder.display().to_string(), 1),
        ));

    // The doctor calls it a problem.
    let out = cmd(&env)
        .env("CLINE_DIR", &user)
        .args(["hooks", "doctor", "--agent", "cline", "--project"])
        .arg(&dir)
        .output()
        .unwrap();
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(
        said.contains("  broken  Cline runs the hooks of ") && !out.status.success(),
        "{said}"
    );

    hooks(&env, &["uninstall", "--agent", "cline"], &dir)
        .success()
        .stdout(predicates::str::contains("removed 10 hook scripts from"));
    assert_eq!(
        std::fs::read_dir(&folder).unwrap().count(),
        1,
        "the user's own TaskStart.py stays"
    );
}

#[test]
fn the_doctor_runs_a_cline_hook_script_as_cline_does() {
    let env = TestEnv::new();
    let user = env.dir.path().join("cline-dir");
    cmd(&env)
        .env("CLINE_DIR", &user)
        .args(["hooks", "install", "--user", "--agent", "cline"])
        .assert()
        .success();
    let out = cmd(&env)
        .env("CLINE_DIR", &user)
        .args(["hooks", "doctor", "--user", "--agent", "cline"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("ok      installed: hooks-v3, 10 events")
            && text.contains("ok      a probe TaskStart reached the queue in"),
        "{text}"
    );
}

/// The state and notes `hooks status` gives `agent`'s files in `dir`, for `command`.
fn plugin_state(env: &TestEnv, agent: &str, command: &str, dir: &Path) -> (String, Vec<String>) {
    let args = [
        "status",
        "--agent",
        agent,
        "--format",
        "json",
        "--command",
        command,
    ];
    let out = hooks(env, &args, dir).get_output().stdout.clone();
    let rows: Value = serde_json::from_slice(&out).unwrap();
    let notes = rows[0]["notes"].as_array().unwrap();
    (
        rows[0]["state"].as_str().unwrap().to_string(),
        notes
            .iter()
            .map(|n| n.as_str().unwrap().to_string())
            .collect(),
    )
}

/// Kiro's hook file (`.kiro/hooks/cmstore.json`, the standalone format of Kiro CLI 3 and the
/// IDE 1.x): a JSON list of five hooks, each running the capture command through Kiro's shell
/// (quoted for `sh`, escaped for JSON); status tells it installed, written for another command,
/// or edited; uninstall leaves the project as it was, the user's other hook files untouched.
#[test]
fn kiro_gets_a_hook_file_that_install_status_and_uninstall_own() {
    let env = TestEnv::new();
    let dir = project(&env);
    let theirs = dir.join(".kiro/hooks/lint.json");
    write(&theirs, "{\"version\": \"v1\", \"hooks\": []}\n");
    let file = dir.join(".kiro/hooks/cmstore.json");
    hooks(
        &env,
        &["install", "--agent", "kiro", "--command", PROGRAM],
        &dir,
    )
    .success()
    .stdout(predicates::str::contains(
        "kiro: installed hooks-v3 (a hook file for 5 events) into",
    ));
    let doc: Value = serde_json::from_str(&read(&file)).unwrap();
    assert_eq!(doc["version"], "v1");
    let listed = doc["hooks"].as_array().unwrap();
    let triggers: Vec<&str> = listed
        .iter()
        .map(|h| h["trigger"].as_str().unwrap())
        .collect();
    assert_eq!(
        triggers,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "Stop"
        ]
    );
    for hook in listed {
        assert_eq!(
            hook["action"],
            serde_json::json!({"type": "command",
                               "command": "'/opt/cm tools/cmstore' capture --agent kiro"})
        );
        assert_eq!(hook["timeout"], 10);
    }
    assert_eq!(
        listed[2]["matcher"], ".*",
        "every tool, as a regular expression"
    );
    let state = |command: &str| plugin_state(&env, "kiro", command, &dir).0;
    assert_eq!(state(PROGRAM), "installed");
    assert_eq!(state("/usr/bin/cmstore"), "outdated");
    let edited = read(&file).replace("\"timeout\": 10}", "\"timeout\": 99}");
    write(&file, &edited);
    assert_eq!(state(PROGRAM), "modified-by-hand");
    hooks(&env, &["uninstall", "--agent", "kiro"], &dir)
        .success()
        .stdout(predicates::str::contains(
            "changed by hand: remove it yourself",
        ));
    assert_eq!(read(&file), edited);
    hooks(
        &env,
        &[
            "install",
            "--agent",
            "kiro",
            "--force",
            "--command",
            PROGRAM,
        ],
        &dir,
    )
    .success();
    assert_eq!(state(PROGRAM), "installed");
    hooks(&env, &["uninstall", "--agent", "kiro"], &dir).success();
    assert!(!file.exists());
    assert_eq!(read(&theirs), "{\"version\": \"v1\", \"hooks\": []}\n");
}

/// The doctor runs the user's Kiro hook file's command through `sh -c`, a session start's
/// payload on stdin; the context Kiro reads as text is no failure.
#[test]
fn the_doctor_runs_a_kiro_hook_files_command_as_kiro_does() {
    let env = TestEnv::new();
    std::fs::create_dir_all(env.home()).unwrap();
    std::fs::write(env.home().join("session-context.txt"), "Project: demo\n").unwrap();
    cmd(&env)
        .args(["hooks", "install", "--user", "--agent", "kiro"])
        .assert()
        .success();
    assert!(env.user_home().join(".kiro/hooks/cmstore.json").exists());
    let out = cmd(&env)
        .args(["hooks", "doctor", "--user", "--agent", "kiro"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("ok      installed: hooks-v3, 5 events")
            && text.contains("ok      a probe SessionStart reached the queue in"),
        "{text}"
    );
}

/// Kilo loads OpenCode's plugins: its file is cmstore's OpenCode plugin in Kilo's folders,
/// handing events on as `--agent kilo` (OpenCode's still as `--agent opencode`).
#[test]
fn kilo_gets_the_opencode_plugin_in_its_own_folders() {
    let env = TestEnv::new();
    let dir = project(&env);
    hooks(
        &env,
        &["install", "--agent", "kilo,opencode", "--command", PROGRAM],
        &dir,
    )
    .success();
    let kilo = read(&dir.join(".kilo/plugin/cmstore.js"));
    let opencode = read(&dir.join(".opencode/plugin/cmstore.js"));
    assert!(kilo.contains(r#""capture", "--agent", "kilo"]"#), "{kilo}");
    assert!(opencode.contains(r#""capture", "--agent", "opencode"]"#));
    assert_eq!(
        kilo.replace("\"--agent\", \"kilo\"", "\"--agent\", \"opencode\""),
        opencode
    );
    assert_eq!(plugin_state(&env, "kilo", PROGRAM, &dir).0, "installed");
    assert_eq!(
        plugin_state(&env, "kilo", "/new/cmstore", &dir),
        (
            "outdated".to_string(),
            vec![format!("runs another command ({PROGRAM})")]
        )
    );
    hooks(&env, &["uninstall", "--agent", "kilo"], &dir).success();
    assert!(!dir.join(".kilo").exists());
    assert_eq!(read(&dir.join(".opencode/plugin/cmstore.js")), opencode);
}

/// An agent whose folder an environment variable of its own moves (`QWEN_HOME`,
/// `QODER_CONFIG_DIR`; Goose's `GOOSE_PATH_ROOT`, its home) gets its user hooks there, as the
/// agent reads them.
#[test]
fn a_user_install_follows_the_agents_own_folder_variable() {
    for (agent, var) in [("qwen", "QWEN_HOME"), ("qoder", "QODER_CONFIG_DIR")] {
        let env = TestEnv::new();
        let moved = env.dir.path().join(format!("moved-{agent}"));
        cmd(&env)
            .args([
                "hooks",
                "install",
                "--user",
                "--agent",
                agent,
                "--command",
                PROGRAM,
            ])
            .env(var, &moved)
            .assert()
            .success();
        assert!(moved.join("settings.json").is_file(), "{agent}");
        let home_file = env
            .user_home()
            .join(format!(".{agent}"))
            .join("settings.json");
        assert!(!home_file.exists(), "{agent}");
    }
}

/// Kimi Code loads the plugins its `plugins/installed.json` lists: install writes cmstore's
/// plugin and lists it there beside the user's own entries, status says when the entry is
/// gone (outdated) or turned off (will not fire), uninstall takes both away and leaves the
/// list as it was, byte for byte; a project gets none (Kimi reads no project plugins).
#[test]
fn kimi_gets_a_plugin_listed_in_its_plugins_list_and_none_in_a_project() {
    let env = TestEnv::new();
    let kimi_home = env.user_home().join(".kimi-code");
    let list = kimi_home.join("plugins/installed.json");
    fs::create_dir_all(list.parent().unwrap()).unwrap();
    let theirs = "{\n  \"version\": 1,\n  \"plugins\": [\n    {\n      \"id\": \"notes\",\n      \"root\": \"/opt/notes\",\n      \"source\": \"local-path\",\n      \"enabled\": true,\n      \"installedAt\": \"2026-11-01T10:00:00.000Z\"\n    }\n  ]\n}\n";
    fs::write(&list, theirs).unwrap();
    let user = |action: &str| {
        let mut c = cmd(&env);
        c.args(["hooks", action, "--user", "--agent", "kimi"]);
        if action == "install" {
            c.args(["--command", PROGRAM]);
        }
        c.assert()
    };
    let said = String::from_utf8(user("install").success().get_output().stdout.clone()).unwrap();
    assert!(said.contains("listed it in"), "{said}");
    let manifest = kimi_home.join("plugins/cmstore/kimi.plugin.json");
    let doc: Value = serde_json::from_str(&read(&manifest)).unwrap();
    assert_eq!(doc["hooks"].as_array().unwrap().len(), 13);
    assert_eq!(
        doc["hooks"][0]["command"],
        format!("'{PROGRAM}' capture --agent kimi")
    );
    let listed: Value = serde_json::from_str(&read(&list)).unwrap();
    assert_eq!(listed["plugins"][0]["id"], "notes");
    assert_eq!(
        listed["plugins"][1]["root"],
        manifest.parent().unwrap().display().to_string()
    );
    let state = |env: &TestEnv| -> Value {
        let out = cmd(env)
            .args([
                "hooks", "status", "--user", "--agent", "kimi", "--format", "json",
            ])
            .args(["--command", PROGRAM])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        serde_json::from_slice::<Value>(&out).unwrap()[0].clone()
    };
    assert_eq!(state(&env)["state"], "installed");
    // Turned off in Kimi (`/plugins disable cmstore`): installed, but it will not fire.
    let off = read(&list).replacen(
        "\"enabled\": true,\n      \"installedAt\": \"2026-12",
        "\"enabled\": false,\n      \"installedAt\": \"2026-12",
        1,
    );
    fs::write(&list, &off).unwrap();
    let row = state(&env);
    assert_eq!(row["state"], "installed", "{row}");
    assert!(row.to_string().contains("turned off in Kimi Code"), "{row}");
    // Its entry gone: outdated, and an install lists it again.
    fs::write(&list, theirs).unwrap();
    assert_eq!(state(&env)["state"], "outdated");
    user("install").success();
    assert_eq!(state(&env)["state"], "installed");
    user("uninstall").success();
    assert_eq!(read(&list), theirs);
    assert!(!manifest.exists());
    // A project: refused, and no row.
    let dir = project(&env);
    hooks(
        &env,
        &["install", "--agent", "kimi", "--command", PROGRAM],
        &dir,
    )
    .failure()
    .stderr(predicates::str::contains("user's folder only"));
    assert!(!dir.join("kimi.plugin.json").exists());
}
