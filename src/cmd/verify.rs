//! `cmstore verify`: proves that no stored event, usage or OTLP row was altered, removed or
//! inserted since cmstore stored it, by the record's chain ([`crate::store::chain`], docs/verify.md); `--head` prints
//! the chain's last hash to keep elsewhere, `--expect HASH` checks that one kept earlier is
//! still in the chain. Exit 1 when something was changed.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;

use crate::files::paths::Paths;
use crate::read::push::{team_query, team_verify};
use crate::read::report;
use crate::store::chain::{self, Verified};
use crate::store::read_only;
use crate::support::human;

/// Arguments of `cmstore verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the chain's head (its last hash) and nothing else, to keep elsewhere: a commit, a
    /// ticket, the team store
    #[arg(long, conflicts_with_all = ["expect", "json", "store"])]
    pub head: bool,
    /// Also check that this head, kept earlier, is still in the chain (it is rewritten, or
    /// was pruned past, when it is not)
    #[arg(long, value_name = "HASH")]
    pub expect: Option<String>,
    /// Print what was found as one JSON object
    #[arg(long)]
    pub json: bool,
    /// Check the team store instead (`postgres://…`, as `[push]` url takes it), read-only:
    /// each machine's chain as it pushed it, and the event rows it lists
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// On the team store: only this machine (its id, as `summarize --by machine` shows it)
    #[arg(long, value_name = "ID", requires = "store")]
    pub machine: Option<String>,
}

/// Runs `cmstore verify`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    if let Some(url) = args.store.as_deref() {
        return on_team_store(paths, url, &args);
    }
    // Opened the reports' way first: a missing store, or one behind the schema, says so there.
    drop(report::open_read_only(&paths.db)?);
    let mut conn = read_only::connection(&paths.db, read_only::MAX_BUSY_WAIT)
        .with_context(|| format!("opening {}", paths.db.display()))?;
    // A store whose rows from before the chain covered them by key are not taken in yet (the
    // process that migrated it stopped first): opening it for writing takes them in, rather
    // than naming them inserted. Checked here, not by every report: it costs a schema read.
    if chain::keyed::adoption_pending(&conn).context("reading the chain")? {
        drop(crate::store::open(&paths.db)?);
        conn = read_only::connection(&paths.db, read_only::MAX_BUSY_WAIT)
            .with_context(|| format!("opening {}", paths.db.display()))?;
    }
    let mut out = io::stdout().lock();
    if args.head {
        let head = chain::head(&conn).context("reading the chain")?;
        match head {
            Some((_, hash)) => writeln!(out, "{}", chain::hex(&hash))?,
            None => anyhow::bail!("the chain is empty: no row was stored since it began"),
        }
        return Ok(ExitCode::SUCCESS);
    }
    // One snapshot: the chain and the rows as one moment left them, whatever ingest commits.
    conn.execute_batch("BEGIN")?;
    let verified = chain::verify(&conn).context("verifying the chain")?;
    let expected = match &args.expect {
        Some(hex) => Some(chain::contains(&conn, hex).context("reading the chain")?),
        None => None,
    };
    conn.execute_batch("COMMIT")?;
    let failed = verified.problem_count > 0 || expected == Some(false);
    if args.json {
        let json = serde_json::json!({
            "records": verified.records,
            "rows": verified.rows,
            "pruned": verified.pruned,
            "before_chain": verified.before_chain,
            "by_table": verified.by_table,
            "head": verified.head.as_ref().map(|h| chain::hex(h)),
            "problems": verified.problem_count,
            "first_problems": verified.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "expected_head_found": expected,
        });
        writeln!(out, "{json}")?;
    } else {
        write_report(&mut out, &verified, args.expect.as_deref(), expected)?;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// ` (16 events, 4 usage)`: the rows verified of each table that has some, when another
/// table than `events` has some.
fn by_table(v: &Verified) -> String {
    let some: Vec<String> = v
        .by_table
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(table, n)| format!("{} {table}", human::whole(*n as i64)))
        .collect();
    match some.as_slice() {
        [] => String::new(),
        [only] if only.ends_with(" events") => String::new(),
        _ => format!(" ({})", some.join(", ")),
    }
}

fn write_report(
    out: &mut impl Write,
    v: &Verified,
    expect: Option<&str>,
    expected: Option<bool>,
) -> io::Result<()> {
    let count = |n: u64| human::whole(n as i64);
    match v.problem_count {
        0 if v.records == 0 => writeln!(
            out,
            "Nothing chained yet: the chain begins with the next rows ingest stores."
        )?,
        0 => writeln!(
            out,
            "Verified {} rows{} in {} chain records: none altered, removed or inserted.",
            count(v.rows),
            by_table(v),
            count(v.records)
        )?,
        _ => {
            let rows = format!("{} rows{}", count(v.rows), by_table(v));
            write_problems(out, "", v, &rows)?;
        }
    }
    if v.pruned > 0 {
        writeln!(
            out,
            "{} rows removed by prune, as chained.",
            count(v.pruned)
        )?;
    }
    if v.before_chain > 0 {
        writeln!(
            out,
            "{} rows stored before the chain began are not covered.",
            count(v.before_chain)
        )?;
    }
    match (expect, expected) {
        (Some(hash), Some(true)) => writeln!(out, "The head {hash} is in the chain.")?,
        (Some(hash), Some(false)) => writeln!(
            out,
            "The head {hash} is NOT in the chain: the chain was rewritten since, or pruned past it."
        )?,
        _ => {}
    }
    match &v.head {
        Some(head) => writeln!(out, "Head: {}", chain::hex(head)),
        // The first line said so.
        None => Ok(()),
    }
}

/// `--store URL`: each machine's chain on the team store ([`team_verify`]).
fn on_team_store(paths: &Paths, url: &str, args: &Args) -> anyhow::Result<ExitCode> {
    let (config, _) = crate::config::Config::load_for(paths);
    let mut client = team_query::connect_store(url, &config)?;
    let machines =
        team_verify::verify(&mut client, args.machine.as_deref(), args.expect.as_deref())?;
    if machines.is_empty() {
        anyhow::bail!(
            "{}",
            match &args.machine {
                Some(m) => format!("no machine {m} on the team store"),
                None => "no machine has pushed to the team store".to_string(),
            }
        );
    }
    let expected = args.expect.as_ref().map(|_| {
        machines
            .iter()
            .find(|m| m.holds_expected)
            .map(|m| m.machine.clone())
    });
    let failed =
        machines.iter().any(|m| m.verified.problem_count > 0) || matches!(expected, Some(None));
    let mut out = io::stdout().lock();
    if args.json {
        let json = serde_json::json!({
            "machines": machines.iter().map(machine_json).collect::<Vec<_>>(),
            "expected_head_found": expected.as_ref().map(Option::is_some),
            "expected_head_machine": expected.flatten(),
        });
        writeln!(out, "{json}")?;
    } else {
        for m in &machines {
            write_machine(&mut out, m)?;
        }
        match (args.expect.as_deref(), expected) {
            (Some(hash), Some(Some(machine))) => {
                writeln!(out, "The head {hash} is in the chain of machine {machine}.")?
            }
            (Some(hash), Some(None)) => writeln!(
                out,
                "The head {hash} is NOT in {}: not pushed yet, or rewritten on the server.",
                match &args.machine {
                    Some(m) => format!("the chain of machine {m}"),
                    None => "any machine's chain".to_string(),
                }
            )?,
            _ => {}
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn machine_json(m: &team_verify::MachineVerified) -> serde_json::Value {
    let v = &m.verified;
    serde_json::json!({
        "machine": m.machine,
        "user": m.user,
        "host": m.host,
        "content": m.content,
        "records": v.records,
        "rows": v.rows,
        "by_presence": m.by_presence,
        "pruned": v.pruned,
        "before_chain": v.before_chain,
        "begins_at": m.begins_at,
        "head": v.head.as_ref().map(|h| chain::hex(h)),
        "problems": v.problem_count,
        "first_problems": v.problems.iter().map(ToString::to_string).collect::<Vec<_>>(),
    })
}

/// `3 changes found (14 rows verified in 2 chain records):` and the problems kept, each
/// line after `indent`.
fn write_problems(out: &mut impl Write, indent: &str, v: &Verified, rows: &str) -> io::Result<()> {
    let count = |n: u64| human::whole(n as i64);
    let n = v.problem_count;
    writeln!(
        out,
        "{indent}{} {} found ({rows} verified in {} chain records):",
        count(n),
        if n == 1 { "change" } else { "changes" },
        count(v.records)
    )?;
    for problem in &v.problems {
        writeln!(out, "{indent}  {problem}")?;
    }
    if n > v.problems.len() as u64 {
        writeln!(
            out,
            "{indent}  … and {} more",
            count(n - v.problems.len() as u64)
        )?;
    }
    Ok(())
}

/// One machine's lines: who, what was verified, what was found.
fn write_machine(out: &mut impl Write, m: &team_verify::MachineVerified) -> io::Result<()> {
    let v = &m.verified;
    let count = |n: u64| human::whole(n as i64);
    let who: Vec<&str> = [m.user.as_deref(), m.host.as_deref()]
        .into_iter()
        .flatten()
        .collect();
    writeln!(
        out,
        "machine {} ({}; content {}):",
        m.machine,
        if who.is_empty() {
            "no labels".to_string()
        } else {
            who.join(" on ")
        },
        m.content
    )?;
    let checked = v.rows + m.by_presence;
    match v.problem_count {
        0 if v.records == 0 => writeln!(out, "  nothing chained on the server yet")?,
        0 => writeln!(
            out,
            "  verified {} rows in {} chain records: none altered, removed or inserted",
            count(checked),
            count(v.records)
        )?,
        _ => {
            write_problems(out, "  ", v, &format!("{} rows", count(checked)))?;
        }
    }
    if m.by_presence > 0 {
        writeln!(
            out,
            "  {} of them by their presence and time only: pushed as `none` or `redacted`, the \
             server has not their lines as written",
            count(m.by_presence)
        )?;
    }
    if let Some(id) = m.begins_at {
        writeln!(
            out,
            "  the chain on the server begins at record {id}, after the anchor of a pushed \
             prune: the records before it were pruned before they were pushed"
        )?;
    }
    if v.pruned > 0 {
        writeln!(
            out,
            "  {} rows the machine pruned before it pushed them, as its chain says",
            count(v.pruned)
        )?;
    }
    if v.before_chain > 0 {
        writeln!(
            out,
            "  {} rows pushed before the chain began are not covered",
            count(v.before_chain)
        )?;
    }
    if let Some(head) = &v.head {
        writeln!(out, "  head: {}", chain::hex(head))?;
    }
    Ok(())
}
