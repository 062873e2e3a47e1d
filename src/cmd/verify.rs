//! `cmstore verify`: proves that no stored event, usage or OTLP row was altered, removed or
//! inserted since cmstore stored it, by the record's chain ([`crate::store::chain`], docs/verify.md); `--head` prints
//! the chain's last hash to keep elsewhere, `--expect HASH` checks that one kept earlier is
//! still in the chain. Exit 1 when something was changed.

use std::io::{self, Write};
use std::process::ExitCode;

use anyhow::Context;

use crate::files::paths::Paths;
use crate::read::report;
use crate::store::chain::{self, Verified};
use crate::store::read_only;
use crate::support::human;

/// Arguments of `cmstore verify`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the chain's head (its last hash) and nothing else, to keep elsewhere: a commit, a
    /// ticket, the team store
    #[arg(long, conflicts_with_all = ["expect", "json"])]
    pub head: bool,
    /// Also check that this head, kept earlier, is still in the chain (it is rewritten, or
    /// was pruned past, when it is not)
    #[arg(long, value_name = "HASH")]
    pub expect: Option<String>,
    /// Print what was found as one JSON object
    #[arg(long)]
    pub json: bool,
}

/// Runs `cmstore verify`.
pub fn run(paths: &Paths, args: Args) -> anyhow::Result<ExitCode> {
    // Opened the reports' way first: a missing store, or one behind the schema, says so there.
    drop(report::open_read_only(&paths.db)?);
    let conn = read_only::connection(&paths.db, read_only::MAX_BUSY_WAIT)
        .with_context(|| format!("opening {}", paths.db.display()))?;
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
        n => {
            writeln!(
                out,
                "{} {} found ({} rows{} verified in {} chain records):",
                count(n),
                if n == 1 { "change" } else { "changes" },
                count(v.rows),
                by_table(v),
                count(v.records)
            )?;
            for problem in &v.problems {
                writeln!(out, "  {problem}")?;
            }
            if n > v.problems.len() as u64 {
                writeln!(out, "  … and {} more", count(n - v.problems.len() as u64))?;
            }
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
