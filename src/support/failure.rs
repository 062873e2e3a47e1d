//! The one place where a failed command becomes what the user sees: one message on stderr
//! and an exit code. Subcommands and the library return errors; only `main` prints them,
//! through [`describe`].

use std::process::ExitCode;

/// Exit code of a command that refused to run beside another one and changed nothing.
pub const REFUSED: u8 = 3;

/// A command that refused to run beside another one and changed nothing (exit code 3).
#[derive(Debug, thiserror::Error)]
#[error("{why}; {what}")]
pub struct Refused {
    /// What stood in the way.
    pub why: anyhow::Error,
    /// What the command did instead, for the user.
    pub what: &'static str,
}

/// The message to print for `err` (`None` when there is nothing to say) and the exit code.
///
/// - a write to a closed pipe (`cmstore query … | head`) is not an error for a command-line
///   tool: nothing is said and the exit code is 0;
/// - [`Refused`] (another ingest holds the database): exit code 3;
/// - anything else: exit code 1.
pub fn describe(err: &anyhow::Error) -> (Option<String>, ExitCode) {
    if is_broken_pipe(err) {
        return (None, ExitCode::SUCCESS);
    }
    let code = if err.downcast_ref::<Refused>().is_some() {
        ExitCode::from(REFUSED)
    } else {
        ExitCode::FAILURE
    };
    (Some(format!("cmstore: {}", chain(&**err))), code)
}

/// `err` and its causes as one line, `what failed: why: root cause`, each said once.
///
/// A cause whose text is already in what was said is left out: a message that repeats its
/// source, or SQLite's `Error code N: description` under rusqlite's own message, which
/// holds that description already. Errors of cmstore's own keep their cause out of their
/// message (it is their `source`); this is for the ones that do not.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut said = err.to_string();
    for cause in std::iter::successors(err.source(), |cause| cause.source()) {
        let text = cause.to_string();
        let repeated = said.contains(&text)
            || cause
                .downcast_ref::<rusqlite::ffi::Error>()
                .is_some_and(|sqlite| {
                    said.contains(rusqlite::ffi::code_to_str(sqlite.extended_code))
                });
        if !repeated {
            said.push_str(": ");
            said.push_str(&text);
        }
    }
    said
}

/// True when `err` comes from writing to a closed pipe, directly or through serde_json's
/// writer (whose error does not give the I/O error as its source).
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    let pipe = Some(std::io::ErrorKind::BrokenPipe);
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            == pipe
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(serde_json::Error::io_error_kind)
                == pipe
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that says its source in its own message.
    #[derive(Debug, thiserror::Error)]
    #[error("twice: {0}")]
    struct Twice(#[source] std::io::Error);

    #[test]
    fn sqlite_s_code_under_rusqlite_s_message_is_not_said_again() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            Some("database is locked".into()),
        );
        assert_eq!(
            chain(&*anyhow::Error::from(busy).context("cannot write")),
            "cannot write: database is locked"
        );
        // Not a repetition: SQLite's code adds to the message.
        let syntax = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
            Some("no such table: x".into()),
        );
        assert_eq!(
            chain(&*anyhow::Error::from(syntax)),
            "no such table: x: Error code 1: SQL logic error"
        );
    }

    #[test]
    fn each_kind_of_failure_gets_its_message_and_code() {
        let pipe = anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            .context("writing");
        assert_eq!(describe(&pipe), (None, ExitCode::SUCCESS));
        // serde_json's writer wraps the I/O error without giving it as its source.
        let json = serde_json::Error::io(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        let pipe = anyhow::Error::from(json).context("writing");
        assert_eq!(describe(&pipe), (None, ExitCode::SUCCESS));

        let refused = anyhow::Error::from(Refused {
            why: anyhow::anyhow!("another ingest is running"),
            what: "not starting a second one",
        });
        assert_eq!(
            describe(&refused),
            (
                Some("cmstore: another ingest is running; not starting a second one".into()),
                ExitCode::from(REFUSED)
            )
        );

        let plain = anyhow::anyhow!("disk full").context("cannot write");
        let said_twice =
            anyhow::Error::from(Twice(std::io::Error::other("disk full"))).context("cannot write");
        assert_eq!(
            describe(&said_twice).0.as_deref(),
            Some("cmstore: cannot write: twice: disk full")
        );
        assert_eq!(
            describe(&plain),
            (
                Some("cmstore: cannot write: disk full".into()),
                ExitCode::FAILURE
            )
        );
    }
}
