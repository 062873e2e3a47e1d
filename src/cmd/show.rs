//! `cmstore show SESSION`: one session's story, in order.
//!
//! SESSION is a full id or a unique prefix of one. On a terminal the text goes through a pager
//! the way git's does (`PAGER`, else `less -FRX`; `--no-pager` to print directly); in a pipe,
//! and when the pager cannot start, it is printed as it is.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;

use crate::files::paths::Paths;
use crate::read::report;
use crate::read::sessions;
use crate::read::story::{self, TextOptions};

/// What `show` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ShowFormat {
    /// The story as text
    Text,
    /// The same as structured data
    Json,
}

/// Arguments of `cmstore show`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The session: its id, or a unique prefix of it (as `cmstore sessions` shows)
    #[arg(value_name = "SESSION")]
    pub session: String,
    /// Whole prompts, answers and tool inputs, not their first characters
    #[arg(long)]
    pub full: bool,
    /// Text or JSON
    #[arg(long, value_enum, default_value_t = ShowFormat::Text)]
    pub format: ShowFormat,
    /// Print directly, without a pager
    #[arg(long)]
    pub no_pager: bool,
}

/// Runs `cmstore show`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    let db = report::open_read_only(&paths.db)?;
    let id = sessions::resolve(&db, &args.session)?;
    // The text view shows a tool input's first characters, which the calls' rows hold.
    let inputs = if args.full || args.format == ShowFormat::Json {
        story::Inputs::Whole
    } else {
        story::Inputs::Short
    };
    let story = story::load(&db, &id, inputs)?
        .with_context(|| format!("session {id} vanished from the store while reading it"))?;
    if args.format == ShowFormat::Json {
        // Written as it is encoded: a long session's JSON is megabytes, never paged.
        let mut out = io::BufWriter::new(io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, &story).context("writing")?;
        out.write_all(b"\n")
            .and_then(|()| out.flush())
            .context("writing")?;
        return Ok(ExitCode::SUCCESS);
    }
    let text = story.to_text(TextOptions {
        full: args.full,
        now_ms: crate::support::clock::now_ms(),
        // A pipe gets the cut it always had; a terminal (or COLUMNS) one line per item.
        width: report::terminal_width(io::stdout().is_terminal()).map(usize::from),
    });
    super::pager::print(text.as_bytes(), !args.no_pager)?;
    Ok(ExitCode::SUCCESS)
}
