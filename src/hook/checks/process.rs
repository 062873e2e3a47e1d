//! Running a check's command within its time limit: output collected on threads, the
//! process (and on Unix its whole process group) killed when the limit passes.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Bytes of a check command's output kept per stream; the rest is read and dropped, so the
/// command never blocks on a full pipe.
const KEEP_BYTES: usize = 64 * 1024;

/// Bytes kept of a program's output read whole (`git show` of a commit).
const KEEP_PROGRAM_BYTES: usize = 32 * 1024 * 1024;

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited, with this code (`None`: killed by a signal).
    Exited(Option<i32>),
    /// It ran past the limit and was killed.
    TimedOut,
    /// It could not be started.
    NotStarted(String),
}

/// A finished command.
#[derive(Debug, Clone)]
pub struct Ran {
    pub ending: Ending,
    /// stdout then stderr, lossily decoded.
    pub output: String,
    pub duration: Duration,
}

/// `command_line` run by the shell (`sh -c`, `cmd /C` on Windows) in `cwd`, within `limit`.
pub fn shell(command_line: &str, cwd: &Path, limit: Duration) -> Ran {
    #[cfg(unix)]
    let mut cmd = {
        let mut c = Command::new("sh");
        c.arg("-c").arg(command_line);
        c
    };
    #[cfg(not(unix))]
    let mut cmd = {
        let mut c = Command::new("cmd");
        c.arg("/C").arg(command_line);
        c
    };
    cmd.current_dir(cwd);
    run(cmd, limit, KEEP_BYTES)
}

/// `program` with `args` in `cwd`, within `limit`.
pub fn program(program: &str, args: &[&str], cwd: &Path, limit: Duration) -> Ran {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(cwd);
    run(cmd, limit, KEEP_PROGRAM_BYTES)
}

/// Runs `cmd` with no stdin, its output piped (the first `keep` bytes of each stream kept),
/// in a process group of its own (Unix), and waits at most `limit`.
pub fn run(cmd: Command, limit: Duration, keep: usize) -> Ran {
    let piped = run_piped(cmd, None, limit, keep);
    let mut output = String::from_utf8_lossy(&piped.stdout).into_owned();
    if !piped.stderr.is_empty() {
        if !output.is_empty() && !output.ends_with('\n') {
            output.push('\n');
        }
        output.push_str(&String::from_utf8_lossy(&piped.stderr));
    }
    Ran {
        ending: piped.ending,
        output,
        duration: piped.duration,
    }
}

/// A finished command, its two streams apart.
#[derive(Debug, Clone)]
pub struct Piped {
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub duration: Duration,
}

/// [`run`] with `input` on stdin (none: stdin empty), the streams kept apart.
pub fn run_piped(mut cmd: Command, input: Option<&[u8]>, limit: Duration, keep: usize) -> Piped {
    let started = Instant::now();
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(err) => {
            return Piped {
                ending: Ending::NotStarted(err.to_string()),
                stdout: Vec::new(),
                stderr: Vec::new(),
                duration: started.elapsed(),
            }
        }
    };
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        let input = input.to_vec();
        // On a thread: a child that does not read its input must not block this one.
        std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, &input);
        });
    }
    let stdout = collect(child.stdout.take(), keep);
    let stderr = collect(child.stderr.take(), keep);
    let ending = wait(&mut child, started + limit);
    // A grandchild that left the group may hold a pipe open: read what came, then go.
    Piped {
        ending,
        stdout: finish(stdout),
        stderr: finish(stderr),
        duration: started.elapsed(),
    }
}

/// Waits for `child` until `deadline`; past it, kills the child and its group.
fn wait(child: &mut Child, deadline: Instant) -> Ending {
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ending::Exited(status.code()),
            Ok(None) => {}
            Err(err) => return Ending::NotStarted(format!("waiting for it failed: {err}")),
        }
        let now = Instant::now();
        if now >= deadline {
            kill(child);
            return Ending::TimedOut;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Kills the child's process group (Unix: the shell and whatever it started), then the child.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        let group = format!("-{}", child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    #[cfg(windows)]
    {
        let _ = Command::new("taskkill")
            .args(["/F", "/T", "/PID", &child.id().to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

type Collected = (Arc<Mutex<Vec<u8>>>, Option<JoinHandle<()>>);

/// Reads `pipe` on a thread, keeping the first `keep` bytes.
fn collect(pipe: Option<impl Read + Send + 'static>, keep: usize) -> Collected {
    let kept = Arc::new(Mutex::new(Vec::new()));
    let handle = pipe.map(|mut pipe| {
        let kept = Arc::clone(&kept);
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                let room = keep.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        })
    });
    (kept, handle)
}

/// What a reader kept, after waiting briefly for it to reach the end of its pipe.
fn finish((kept, handle): Collected) -> Vec<u8> {
    if let Some(handle) = handle {
        let until = Instant::now() + Duration::from_millis(200);
        while !handle.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(2));
        }
        if handle.is_finished() {
            let _ = handle.join();
        }
    }
    let kept = kept.lock().unwrap_or_else(|e| e.into_inner());
    kept.clone()
}

/// `files` quoted for the shell, joined by spaces: what replaces `{files}`.
pub fn quote_files(files: &[String]) -> String {
    files.iter().map(|f| quote(f)).collect::<Vec<_>>().join(" ")
}

#[cfg(unix)]
fn quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

#[cfg(not(unix))]
fn quote(arg: &str) -> String {
    format!("\"{}\"", arg.replace('"', "\"\""))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_output_are_kept() {
        let dir = std::env::temp_dir();
        let ran = shell(
            "echo out; echo err >&2; exit 3",
            &dir,
            Duration::from_secs(10),
        );
        assert_eq!(ran.ending, Ending::Exited(Some(3)));
        assert_eq!(ran.output, "out\nerr\n");
    }

    #[test]
    fn a_command_past_its_limit_is_killed_with_its_children() {
        let dir = std::env::temp_dir();
        let started = Instant::now();
        let ran = shell(
            "sleep 30 & sleep 30; echo never",
            &dir,
            Duration::from_millis(200),
        );
        assert_eq!(ran.ending, Ending::TimedOut);
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(!ran.output.contains("never"));
    }

    #[test]
    fn a_missing_program_does_not_start() {
        let ran = program(
            "cmstore-no-such-program",
            &[],
            &std::env::temp_dir(),
            Duration::from_secs(1),
        );
        assert!(
            matches!(ran.ending, Ending::NotStarted(_)),
            "{:?}",
            ran.ending
        );
    }

    #[test]
    fn files_are_quoted_for_the_shell() {
        assert_eq!(
            quote_files(&["a b.rs".into(), "it's.md".into()]),
            r"'a b.rs' 'it'\''s.md'"
        );
    }
}
