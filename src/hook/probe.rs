//! `cmstore hooks doctor`'s probe: cmstore's installed hook command for an agent's session
//! start, run as the agent runs it (through its shell, the event's payload on stdin) with a
//! payload marked by a session id of its own, the line it writes sent to a queue of the
//! doctor's (`CMSTORE_QUEUE`), so that nothing reaches the store; then what came back is
//! checked: the exit code, one JSON object or nothing on stdout (any text, for an agent that
//! reads context as text), the line in the queue.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::hook::checks::process::{self, Ending, Piped};
use crate::model::agents::{Agent, Answer, Shape};

/// How long a probe may take (a hook's own timeouts are 10 s and more).
pub const LIMIT: Duration = Duration::from_secs(10);

/// What a probe fires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The event whose installed handler is run, as the hook file names it.
    pub event: &'static str,
    /// The payload on its stdin.
    pub payload: String,
    /// The session id that marks the probe's line.
    pub session: String,
    /// True when the agent reads stdout as text (Kiro), not as one JSON object.
    pub text_reply: bool,
}

/// The probe of `agent`'s session start, marked by `session`, as if in `cwd` at `now_ms`.
pub fn probe(agent: Agent, session: &str, cwd: &str, now_ms: i64) -> Probe {
    let (event, payload) = match agent {
        // Copilot CLI's own casing: its command names the event (`--event sessionStart`).
        Agent::Copilot => (
            "sessionStart",
            json!({"sessionId": session, "timestamp": now_ms, "cwd": cwd, "source": "new"}),
        ),
        // Cursor's own casing and fields (docs/agents.md, "Cursor").
        Agent::Cursor => (
            "sessionStart",
            json!({"hook_event_name": "sessionStart", "conversation_id": session,
                   "session_id": session, "generation_id": "", "workspace_roots": [cwd],
                   "is_background_agent": false}),
        ),
        // Cline's own payload of a run's start (docs/agents.md, "Cline").
        Agent::Cline => (
            "TaskStart",
            json!({"hookName": "agent_start", "taskId": format!("conv_{now_ms}_doctor"),
                   "sessionContext": {"rootSessionId": session}, "workspaceRoots": [cwd],
                   "clineVersion": "", "taskStart": {"taskMetadata": {}}}),
        ),
        // Windsurf has no session start: a file read's end, which nothing refuses
        // (docs/agents.md, "Windsurf").
        Agent::Windsurf => (
            "post_read_code",
            json!({"agent_action_name": "post_read_code", "trajectory_id": session,
                   "execution_id": format!("doctor-{now_ms}"), "model_name": "",
                   "tool_info": {"file_path": cwd}}),
        ),
        // Goose's own fields (docs/agents.md, "Goose").
        Agent::Goose => (
            "SessionStart",
            json!({"event": "SessionStart", "session_id": session, "matcher_context": null}),
        ),
        // What cmstore's OpenCode plugin sends at a session's start.
        Agent::Opencode | Agent::Kilo => (
            "session.created",
            json!({"hook_event_name": "session.created", "session_id": session, "cwd": cwd,
                   "source": "startup"}),
        ),
        _ => (
            "SessionStart",
            json!({"hook_event_name": "SessionStart", "session_id": session, "cwd": cwd,
                   "source": "startup"}),
        ),
    };
    Probe {
        event,
        payload: payload.to_string(),
        session: session.to_string(),
        text_reply: agent.answer() == Answer::ExitCodeAndText,
    }
}

/// The shell an agent runs a hook's command line with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shell {
    /// `sh -c` (Unix; Git Bash on Windows).
    Sh,
    /// PowerShell.
    PowerShell,
    /// `cmd /C`, the line passed as it is (Kiro's hook files on Windows).
    Cmd,
}

impl Shell {
    /// The shell that runs a command line of a hook file listing them (Kiro's): `sh`, or
    /// `cmd.exe` on Windows.
    pub fn system() -> Shell {
        match cfg!(windows) {
            true => Shell::Cmd,
            false => Shell::Sh,
        }
    }
}

/// The command line `agent` runs for `handler` on this system, and its shell.
pub fn command_line(agent: Agent, handler: &Value) -> Option<(Shell, String)> {
    let text = |key: &str| handler.get(key).and_then(Value::as_str).map(str::to_string);
    let windows = cfg!(windows);
    match agent.hook_file()?.shape {
        // Copilot CLI and VS Code: a line per shell, `command` for any.
        Shape::Flat if windows => text("powershell")
            .map(|l| (Shell::PowerShell, l))
            .or_else(|| text("command").map(|l| (Shell::PowerShell, l))),
        Shape::Flat => text("bash")
            .or_else(|| text("command"))
            .map(|l| (Shell::Sh, l)),
        Shape::Grouped => {
            let shell = match text("shell").as_deref() {
                Some("powershell") => Shell::PowerShell,
                _ if windows && agent != Agent::Claude => Shell::PowerShell,
                _ => Shell::Sh,
            };
            text("command").map(|l| (shell, l))
        }
    }
}

/// Runs `line` in `shell` with the probe's payload on stdin, its queue line sent to `queue`.
pub fn fire(shell: Shell, line: &str, probe: &Probe, queue: &Path) -> Piped {
    let mut cmd = match shell {
        Shell::Sh => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(line);
            c
        }
        Shell::PowerShell => {
            let mut c = Command::new("powershell");
            c.args(["-NoProfile", "-NonInteractive", "-Command", line]);
            c
        }
        Shell::Cmd => cmd_c(line),
    };
    cmd.env("CMSTORE_QUEUE", queue);
    process::run_piped(cmd, Some(probe.payload.as_bytes()), LIMIT, 64 * 1024)
}

/// `cmd /C line`, the line as it is: the standard library's quoting of an argument is not
/// `cmd.exe`'s.
#[cfg(windows)]
fn cmd_c(line: &str) -> Command {
    use std::os::windows::process::CommandExt;
    let mut c = Command::new("cmd");
    c.arg("/C").raw_arg(line);
    c
}

/// `cmd /C line` where there is no `cmd.exe`: the attempt fails to start, and says so.
#[cfg(not(windows))]
fn cmd_c(line: &str) -> Command {
    let mut c = Command::new("cmd");
    c.arg("/C").arg(line);
    c
}

/// Runs `words` as a plugin runs its capture command (the program itself, no shell), with the
/// probe's payload on stdin, its queue line sent to `queue`.
pub fn fire_words(words: &[String], probe: &Probe, queue: &Path) -> Piped {
    let mut cmd = Command::new(words.first().map_or("", String::as_str));
    cmd.args(words.iter().skip(1));
    cmd.env("CMSTORE_QUEUE", queue);
    process::run_piped(cmd, Some(probe.payload.as_bytes()), LIMIT, 64 * 1024)
}

/// What the probe's run says: what a person should know when it worked, or what failed.
pub fn verdict(ran: &Piped, queue_text: &str, probe: &Probe) -> Result<String, String> {
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let first_words = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    match &ran.ending {
        Ending::NotStarted(why) => return Err(format!("its shell could not start: {why}")),
        Ending::TimedOut => {
            return Err(format!(
                "no answer within {}s: the agent would give up on it",
                LIMIT.as_secs()
            ))
        }
        Ending::Exited(Some(0)) => {}
        Ending::Exited(code) => {
            let code = code.map_or("killed by a signal".to_string(), |c| format!("exit {c}"));
            return Err(format!("the hook command failed ({code}): {first_words}"));
        }
    }
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let reply = stdout.trim();
    let one_object = probe.text_reply
        || reply.is_empty()
        || serde_json::from_str::<Value>(reply).is_ok_and(|v| v.is_object());
    if !one_object {
        return Err(format!(
            "it printed what the agent cannot read (not one JSON object): {}",
            crate::model::shorten::cut_text(reply, 120)
        ));
    }
    let arrived = queue_text.lines().any(|line| {
        serde_json::from_str::<Value>(line)
            .is_ok_and(|v| v["sessionId"].as_str() == Some(probe.session.as_str()))
    });
    if !arrived {
        return Err(
            "it exited 0 but wrote no line to the queue (a command naming its own --queue, or \
             another program than cmstore)"
                .to_string(),
        );
    }
    Ok(format!(
        "a probe {} reached the queue in {}ms",
        probe.event,
        ran.duration.as_millis()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piped(code: i32, stdout: &str, stderr: &str) -> Piped {
        Piped {
            ending: Ending::Exited(Some(code)),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            duration: Duration::from_millis(12),
        }
    }

    #[test]
    fn a_probe_is_judged_by_its_exit_its_reply_and_its_line() {
        let p = probe(Agent::Claude, "cmstore-doctor-1", "/w", 0);
        let line = r#"{"hookType":"SessionStart","sessionId":"cmstore-doctor-1"}"#;
        assert_eq!(
            verdict(&piped(0, "{}", ""), line, &p),
            Ok("a probe SessionStart reached the queue in 12ms".to_string())
        );
        assert!(verdict(
            &piped(127, "", "sh: 1: /old/cmstore: not found\n"),
            line,
            &p
        )
        .unwrap_err()
        .ends_with("(exit 127): sh: 1: /old/cmstore: not found"));
        assert!(verdict(&piped(0, "hello\n", ""), line, &p)
            .unwrap_err()
            .contains("not one JSON object"));
        assert!(verdict(&piped(0, "", ""), "", &p)
            .unwrap_err()
            .contains("wrote no line to the queue"));
    }

    #[test]
    fn each_agents_line_and_shell() {
        let claude = json!({"type": "command", "command": "cmstore capture --agent claude"});
        assert_eq!(
            command_line(Agent::Claude, &claude),
            Some((Shell::Sh, "cmstore capture --agent claude".into()))
        );
        let ps = json!({"type": "command", "shell": "powershell", "command": "& 'c.exe' capture"});
        assert_eq!(
            command_line(Agent::Claude, &ps).unwrap().0,
            Shell::PowerShell
        );
        let copilot = json!({"bash": "b", "powershell": "p"});
        let want = if cfg!(windows) {
            (Shell::PowerShell, "p".to_string())
        } else {
            (Shell::Sh, "b".to_string())
        };
        assert_eq!(command_line(Agent::Copilot, &copilot), Some(want));
        assert_eq!(probe(Agent::Copilot, "x", "/w", 1).event, "sessionStart");
    }
}
