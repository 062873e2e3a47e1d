//! Budget notices (`[budget] notify`): when a limit's spend passes `warn_at` or the limit, a
//! following ingest tells the person once per limit, level and window, by a desktop
//! notification or a command line of their own (ntfy, a chat webhook) with the text on its
//! stdin. The agent is told by its hooks (once per session); this is for the person who is
//! not watching the agent.
//!
//! Run after the spend file is written, from the same figures; never on the hook path. Each
//! notifier gets 10 seconds to finish. The "once" is a mark in `state/budget/`, made before
//! the notifier runs, so a notifier that fails is not retried every few seconds.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::files::budget_marks;
use crate::hook::checks::process::{self, Ending};
use crate::model::budget::{Budget, Level, Notify, Standing};
use crate::model::spend::SpendFile;

/// How long a notifier may take.
const LIMIT: Duration = Duration::from_secs(10);

/// How a notifier runs beside the ingest.
#[derive(Debug, Clone, Copy)]
pub enum Wait {
    /// To its end, its problem returned (`ingest --once`, which ends after).
    Yes,
    /// On a thread of its own, its problem said by this: a following ingest does not wait for
    /// a notifier that hangs.
    No(fn(&str)),
}

/// Tells the person of each limit in `budget` whose spend in `file` passed `warn_at` or the
/// limit at `now_ms`, once per limit, level and window (marks in `state_dir`); the problems
/// met, each a sentence (with [`Wait::No`], those before a notifier runs).
pub fn notify_crossings(
    budget: &Budget,
    file: &SpendFile,
    now_ms: i64,
    state_dir: &Path,
    wait: Wait,
) -> Vec<String> {
    if budget.notify == Notify::Off {
        return Vec::new();
    }
    let mut problems = Vec::new();
    for standing in budget.standings(Some(file), now_ms) {
        if !matches!(standing.level, Level::Warn | Level::Over) {
            continue;
        }
        match due(&standing, state_dir) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(err) => {
                problems.push(format!("cannot mark a budget notice given: {err}"));
                continue;
            }
        }
        let text = standing.notice(budget.mode);
        let cmd = match command(&budget.notify, &text, &standing) {
            Ok(cmd) => cmd,
            Err(why) => {
                problems.push(format!("the budget notice was not given: {why}"));
                continue;
            }
        };
        let stdin = matches!(budget.notify, Notify::Command(_)).then(|| text.into_bytes());
        match wait {
            Wait::Yes => {
                if let Err(why) = run(cmd, stdin) {
                    problems.push(format!("the budget notice was not given: {why}"));
                }
            }
            Wait::No(say) => {
                std::thread::spawn(move || {
                    if let Err(why) = run(cmd, stdin) {
                        say(&format!(
                            "cmstore ingest: warning: the budget notice was not given: {why}"
                        ));
                    }
                });
            }
        }
    }
    problems
}

/// Whether `standing`'s notice is still to be given in its window: marks it given. A limit
/// that went past its limit at once is also marked warned, so no warning follows it.
fn due(standing: &Standing<'_>, state_dir: &Path) -> std::io::Result<bool> {
    // The amount too: a limit raised in its window is a new limit, told again.
    let mark = |level: Level| {
        format!(
            "notice:{}:{}:{}:{}",
            level.as_str(),
            standing.limit.key(),
            standing.limit.amount.value(),
            standing.from
        )
    };
    let first = budget_marks::mark_once(state_dir, &mark(standing.level))?;
    if standing.level == Level::Over {
        budget_marks::mark_once(state_dir, &mark(Level::Warn))?;
    }
    Ok(first)
}

/// The command that gives `text` by `notify`.
fn command(notify: &Notify, text: &str, standing: &Standing<'_>) -> Result<Command, String> {
    match notify {
        Notify::Off => Err("no notifier is set".into()),
        Notify::Desktop => desktop(text).ok_or_else(no_desktop),
        Notify::Command(line) => {
            let mut cmd = shell(line);
            cmd.env("CMSTORE_BUDGET_LEVEL", standing.level.as_str())
                .env("CMSTORE_BUDGET_LIMIT", standing.limit.key())
                .env("CMSTORE_BUDGET_SHARE", format!("{:.4}", standing.share()));
            Ok(cmd)
        }
    }
}

/// Runs a notifier, `stdin` on its input, within [`LIMIT`].
fn run(cmd: Command, stdin: Option<Vec<u8>>) -> Result<(), String> {
    let ran = process::run_piped(cmd, stdin.as_deref(), LIMIT, 4096);
    match ran.ending {
        Ending::Exited(Some(0)) => Ok(()),
        Ending::Exited(code) => Err(format!(
            "the notifier failed (exit {}): {}",
            code.map_or("by a signal".to_string(), |c| c.to_string()),
            String::from_utf8_lossy(&ran.stderr).trim()
        )),
        Ending::TimedOut => Err(format!("the notifier ran past {}s", LIMIT.as_secs())),
        Ending::NotStarted(why) => Err(format!("the notifier could not start: {why}")),
    }
}

fn no_desktop() -> String {
    "no desktop notifier here (notify-send on Linux); set budget.notify to a command".into()
}

/// The application user model id of Windows PowerShell, registered by Windows itself.
const POWERSHELL_APP_ID: &str =
    r"{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\WindowsPowerShell\v1.0\powershell.exe";

/// Keeps a console program from opening a window of its own (Windows).
#[cfg(windows)]
fn no_window(cmd: &mut Command) {
    use std::os::windows::process::CommandExt;
    const CREATE_NO_WINDOW: u32 = 0x0800_0000;
    cmd.creation_flags(CREATE_NO_WINDOW);
}

#[cfg(not(windows))]
fn no_window(_: &mut Command) {}

/// `line` run by the shell (`sh -c`, `cmd /C` on Windows).
fn shell(line: &str) -> Command {
    if cfg!(windows) {
        let mut cmd = Command::new("cmd");
        cmd.arg("/C").arg(line);
        cmd
    } else {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(line);
        cmd
    }
}

/// The system's notifier showing `text`, when there is one.
fn desktop(text: &str) -> Option<Command> {
    const TITLE: &str = "cmstore budget";
    if cfg!(target_os = "macos") {
        let quoted = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
        let mut cmd = Command::new("osascript");
        cmd.arg("-e").arg(format!(
            "display notification {} with title {}",
            quoted(text),
            quoted(TITLE)
        ));
        Some(cmd)
    } else if cfg!(windows) {
        // A toast by the Windows Runtime's own API, from Windows PowerShell (no module to
        // install); the text goes in an environment variable, never into the script.
        let script = "$ErrorActionPreference = 'Stop'; \
            [Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, \
            ContentType = WindowsRuntime] > $null; \
            $x = [Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent(\
            [Windows.UI.Notifications.ToastTemplateType]::ToastText02); \
            $t = $x.GetElementsByTagName('text'); \
            $t.Item(0).AppendChild($x.CreateTextNode($env:CMSTORE_NOTICE_TITLE)) > $null; \
            $t.Item(1).AppendChild($x.CreateTextNode($env:CMSTORE_NOTICE)) > $null; \
            [Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier(\
            $env:CMSTORE_NOTICE_APP).Show([Windows.UI.Notifications.ToastNotification]::new($x))";
        let mut cmd = Command::new("powershell");
        cmd.args(["-NoProfile", "-NonInteractive", "-Command", script])
            .env("CMSTORE_NOTICE_TITLE", TITLE)
            .env("CMSTORE_NOTICE", text)
            // A toast shows only under an application id Windows knows: Windows PowerShell's.
            .env("CMSTORE_NOTICE_APP", POWERSHELL_APP_ID);
        no_window(&mut cmd);
        Some(cmd)
    } else {
        crate::support::env::find_on_path("notify-send")?;
        let mut cmd = Command::new("notify-send");
        cmd.args(["--app-name=cmstore", TITLE, text]);
        Some(cmd)
    }
}
