//! `cmstore completions SHELL` and `cmstore man`: shell completions and a man page generated
//! from the clap definitions, so they never drift from the real options.

use std::io::{self, Write};
use std::process::ExitCode;

/// Arguments of `cmstore completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// Shell to generate completions for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `cmstore man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {}

/// Prints the completion script for `args.shell`. `command` is the whole command line's
/// definition (`cli::Cli`), passed in so that this module need not import the layer above.
pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    // Generated into memory first: clap_complete panics on a write error such as a closed pipe.
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut command, "cmstore", &mut buf);
    print(&buf)
}

/// Prints the man page (roff) for `command`, the whole command line's definition.
pub fn man(_args: ManArgs, command: clap::Command) -> anyhow::Result<ExitCode> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(command).render(&mut buf)?;
    print(&buf)
}

fn print(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
