//! `cmstore show SESSION`: one session's story, in order.
//!
//! SESSION is a full id or a unique prefix of one. On a terminal the text goes through a pager
//! the way git's does (`PAGER`, else `less -FRX`; `--no-pager` to print directly); in a pipe,
//! and when the pager cannot start, it is printed as it is.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::filters::TeamStore;
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
    #[command(flatten)]
    pub team: TeamStore,
}

/// Runs `cmstore show`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    if let Some(url) = args.team.store.as_deref() {
        return on_team_store(paths, url, &args);
    }
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
        return write_json(&story);
    }
    print_text(&story.to_text(text_options(&args)), &args)
}

/// `--store URL`: the story of a session of the team store.
fn on_team_store(paths: &Paths, url: &str, args: &Args) -> anyhow::Result<ExitCode> {
    use crate::read::push::{team_query, team_story};
    let (config, _) = crate::config::Config::load_for(paths);
    let mut client = team_query::connect_store(url, &config)?;
    let found = team_story::resolve(
        &mut client,
        &args.session,
        args.team.machine.as_deref(),
        args.team.user.as_deref(),
    )?;
    let story = team_story::load(&mut client, &found)?.with_context(|| {
        format!(
            "session {} went from the team store while reading it",
            found.session_id
        )
    })?;
    if args.format == ShowFormat::Json {
        return write_json(&story);
    }
    let whose = story
        .user_label
        .as_deref()
        .map_or(String::new(), |u| format!(", user {u}"));
    let text = format!(
        "team store: machine {}{whose}\n{}",
        story.machine_id,
        story.story.to_text(text_options(args))
    );
    print_text(&text, args)
}

/// Writes `story` as JSON as it is encoded: a long session's is megabytes, never paged.
fn write_json(story: &impl serde::Serialize) -> anyhow::Result<ExitCode> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    serde_json::to_writer_pretty(&mut out, story).context("writing")?;
    out.write_all(b"\n")
        .and_then(|()| out.flush())
        .context("writing")?;
    Ok(ExitCode::SUCCESS)
}

fn text_options(args: &Args) -> TextOptions {
    TextOptions {
        full: args.full,
        now_ms: crate::support::clock::now_ms(),
        // A pipe gets the cut it always had; a terminal (or COLUMNS) one line per item.
        width: report::terminal_width(io::stdout().is_terminal()).map(usize::from),
    }
}

fn print_text(text: &str, args: &Args) -> anyhow::Result<ExitCode> {
    super::pager::print(text.as_bytes(), !args.no_pager)?;
    Ok(ExitCode::SUCCESS)
}
