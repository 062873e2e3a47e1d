//! `cmstore completions SHELL` and `cmstore man`: shell completions and man pages generated
//! from the clap definitions, so they never drift from the real options. As git has, every
//! subcommand has a page of its own: `cmstore man ingest` prints cmstore-ingest(1),
//! `cmstore man hooks install` cmstore-hooks-install(1), `cmstore man --all DIR` writes them all.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};

/// Arguments of `cmstore completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// Shell to generate completions for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `cmstore man`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  cmstore man | man -l -\n  cmstore man ingest | man -l -\n  \
    cmstore man --all ~/.local/share/man/man1 && man cmstore-ingest"
)]
pub struct ManArgs {
    /// The subcommand whose page to print (`ingest`, `hooks install`); none: cmstore(1)
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "all")]
    pub command: Vec<String>,
    /// Write every page (cmstore.1, cmstore-ingest.1, …) into DIR instead, created if need be
    #[arg(long, value_name = "DIR")]
    pub all: Option<PathBuf>,
}

/// Prints the completion script for `args.shell`. `command` is the whole command line's
/// definition (`cli::Cli`), passed in so that this module need not import the layer above.
pub fn completions(args: CompletionsArgs, mut command: clap::Command) -> anyhow::Result<ExitCode> {
    // Generated into memory first: clap_complete panics on a write error such as a closed pipe.
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut command, "cmstore", &mut buf);
    print(&buf)
}

/// Prints the man page (roff) of `command` (the whole command line's definition) or of the
/// subcommand `args` names, or writes every page into `--all DIR`.
pub fn man(args: ManArgs, command: clap::Command) -> anyhow::Result<ExitCode> {
    let mut root = command.disable_help_subcommand(true);
    // Gives each subcommand its display name (`cmstore-ingest`), which titles its page.
    root.build();
    if let Some(dir) = &args.all {
        let written = write_all(&root, dir)?;
        let mut out = io::stdout().lock();
        writeln!(
            out,
            "{} man pages written to {}",
            written.len(),
            dir.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    let page = find(&root, &args.command)?;
    let mut buf = Vec::new();
    page_of(page).render(&mut buf)?;
    print(&buf)
}

/// The subcommand `path` names under `root` (`root` itself for an empty path).
fn find<'c>(root: &'c clap::Command, path: &[String]) -> anyhow::Result<&'c clap::Command> {
    let mut at = root;
    for name in path {
        at = match at.find_subcommand(name).filter(|c| !c.is_hide_set()) {
            Some(sub) => sub,
            None => {
                let names: Vec<&str> = at
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name())
                    .collect();
                bail!(
                    "no man page for `{} {name}`; pages exist for: {}",
                    display_name(at).replace('-', " "),
                    names.join(", ")
                )
            }
        };
    }
    Ok(at)
}

/// `command` and every subcommand below it that is not hidden, depth first.
fn pages(command: &clap::Command) -> Vec<&clap::Command> {
    let mut all = vec![command];
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        all.extend(pages(sub));
    }
    all
}

/// The page of `command`, every one saying which cmstore it documents.
fn page_of(command: &clap::Command) -> clap_mangen::Man {
    clap_mangen::Man::new(command.clone())
        .source(format!("cmstore {}", env!("CARGO_PKG_VERSION")))
        .manual("cmstore manual")
}

fn display_name(command: &clap::Command) -> &str {
    command.get_display_name().unwrap_or(command.get_name())
}

/// Writes every page of `root` into `dir` (private files, as every file cmstore creates) and
/// returns their paths.
fn write_all(root: &clap::Command, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut written = Vec::new();
    for page in pages(root) {
        let man = page_of(page);
        let path = dir.join(man.get_filename());
        let mut buf = Vec::new();
        man.render(&mut buf)?;
        let mut file = crate::files::paths::private_file_options()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        file.write_all(&buf)
            .with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

fn print(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
