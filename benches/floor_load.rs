//! The floor for ingest: the least a program can do to store every queue line exactly once in
//! SQLite, with cmstore's own settings (WAL, `synchronous = NORMAL`, 10k lines per transaction)
//! but nothing else: one table of the line and its unique id, no other column, index, derived
//! row, offset or identity check. `benches/ingest.sh` runs it beside cmstore.
//!
//! Usage: `floor_load QUEUE DB` (DB must not exist).

use std::borrow::Cow;
use std::io::{BufRead, BufReader};

use anyhow::Context;

#[derive(serde::Deserialize)]
struct Id<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, queue, db] = args.as_slice() else {
        anyhow::bail!("usage: floor_load QUEUE DB");
    };
    let mut conn = rusqlite::Connection::open(db).context("open db")?;
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    conn.execute_batch(
        "PRAGMA synchronous = NORMAL;
         CREATE TABLE events(seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, entry TEXT NOT NULL);",
    )?;
    let mut reader = BufReader::with_capacity(
        256 * 1024,
        std::fs::File::open(queue).context("open queue")?,
    );
    let started = std::time::Instant::now();
    let mut line = String::new();
    let mut lines = 0u64;
    let mut done = false;
    while !done {
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO events(id, entry) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
            )?;
            for _ in 0..10_000 {
                line.clear();
                if reader.read_line(&mut line)? == 0 {
                    done = true;
                    break;
                }
                let entry = line.trim_end_matches('\n');
                let id = serde_json::from_str::<Id<'_>>(entry)
                    .ok()
                    .and_then(|i| i.id)
                    .context("a line without an id")?;
                insert.execute((id.as_ref(), entry))?;
                lines += 1;
            }
        }
        tx.commit()?;
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "floor_load: {lines} lines in {secs:.2} s ({:.0} lines/s)",
        lines as f64 / secs
    );
    Ok(())
}
