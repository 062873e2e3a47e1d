//! The pager the reading commands print through on a terminal, the way git does: `PAGER`,
//! else `less`, with `LESS=FRX` unless `LESS` is set (quit when the text fits one screen, keep
//! colours, leave the text on screen). Not a subcommand: `show`, `sessions` and `summarize`
//! share it. In a pipe, with `--no-pager`, or when the pager cannot start, the text is printed
//! as it is.

use std::io::{self, IsTerminal, Write};
use std::process::{Command, Stdio};

use anyhow::Context;

use crate::read::render::{self, Format};
use crate::read::report::{self, Sink};

/// Prints a report on stdout: a table through the pager on a terminal when `paged` allows
/// it (`--no-pager`), the other formats streamed as they are rendered. A table drawn in full
/// (`--wide`, wider than the terminal) has its lines chopped by `less`, not wrapped
/// (`LESS=FRXS`): the arrow keys scroll it sideways.
pub fn print_report(
    sink: Sink,
    columns: Vec<String>,
    rows: &[Vec<rusqlite::types::Value>],
    paged: bool,
) -> anyhow::Result<()> {
    let on_terminal = io::stdout().is_terminal();
    if sink.format == Format::Table && paged && on_terminal {
        let chop = sink.table.width.is_none();
        let mut text = Vec::new();
        report::render(&mut text, sink, columns, rows)?;
        return print_as(&text, true, if chop { "FRXS" } else { "FRX" });
    }
    let mut out = io::stdout().lock();
    if sink.format == Format::Table && sink.table.width.is_none() {
        // Drawn in full with no pager to scroll it: wider than the terminal, its lines would
        // wrap into noise, so it is drawn as records, as `query` does.
        let mut text = Vec::new();
        report::render(&mut text, sink, columns.clone(), rows)?;
        let width = report::terminal_width(on_terminal);
        let widest = String::from_utf8_lossy(&text)
            .lines()
            .map(render::display_width)
            .max()
            .unwrap_or(0);
        if let Some(width) = width.filter(|&w| widest > usize::from(w)) {
            text = render::render_records(&columns, rows, width, sink.table.color).into_bytes();
        }
        out.write_all(&text).context("writing")?;
        return out.flush().context("writing");
    }
    report::render(&mut out, sink, columns, rows)?;
    out.flush().context("writing")
}

/// Prints `text` on stdout, through the pager when `paged` allows it and stdout is a terminal.
pub fn print(text: &[u8], paged: bool) -> anyhow::Result<()> {
    print_as(text, paged, "FRX")
}

/// [`print`], with `less_flags` for `LESS` when it is unset.
fn print_as(text: &[u8], paged: bool, less_flags: &str) -> anyhow::Result<()> {
    if paged && io::stdout().is_terminal() && page(text, less_flags) {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.write_all(text).context("writing")?;
    out.flush().context("writing")
}

/// Shows `text` through the pager; false when no pager could start (the caller prints it).
fn page(text: &[u8], less_flags: &str) -> bool {
    let pager = crate::support::env::var("PAGER").unwrap_or_else(|| "less".to_string());
    let mut words = pager.split_whitespace();
    let Some(program) = words.next() else {
        return false;
    };
    let mut command = Command::new(program);
    command.args(words).stdin(Stdio::piped());
    if crate::support::env::var_os("LESS").is_none() {
        command.env("LESS", less_flags);
    }
    let Ok(mut child) = command.spawn() else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The reader quitting early (q in less) closes the pipe: not an error.
        let _ = stdin.write_all(text);
    }
    let _ = child.wait();
    true
}
