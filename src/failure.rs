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
    (Some(format!("cmstore: {err:#}")), code)
}

/// True when `err` comes from writing to a closed pipe.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_failure_gets_its_message_and_code() {
        let pipe = anyhow::Error::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe))
            .context("writing");
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
        assert_eq!(
            describe(&plain),
            (
                Some("cmstore: cannot write: disk full".into()),
                ExitCode::FAILURE
            )
        );
    }
}
