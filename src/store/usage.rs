//! The `usage` and `prices` tables (migration 0014): one row per API response, upserted so
//! the final streamed count wins and a response read twice counts once; and the effective
//! price table the `v_usage*` views compute cost from when read, with a row for every model
//! the usage names that another row prices (`kimi-k2.5:cloud` through `moonshot/kimi-k2.5`).

use std::collections::BTreeMap;

use rusqlite::types::{ToSqlOutput, Value};
use rusqlite::{params, Connection, OptionalExtension};

use super::many_rows::{int, text, ManyRows, ROWS_PER_STATEMENT};
use crate::model::agents::Agent;
use crate::model::prices::{self, PriceTable};
use crate::model::queue_line::usage::UsageRecord;

/// One response. On a conflict each count keeps the larger value: streamed counts only
/// grow, and a response saved again elsewhere (Claude Code's compaction subagent re-saves
/// the parent's responses, with their final counts where the parent's file stopped at a
/// partial one) carries its final counts, whichever file is read first. The model, time and
/// tier of the line written later (greater `line_offset`) win. What links the row (session,
/// turn, agent) is kept once known; a response any file writes as the main thread's
/// (`sidechain` 0) is the main thread's, never the subagent's that re-saved it.
const UPSERT_USAGE: &str = "
    INSERT INTO usage(message_id, request_id, session_id, agent, turn_id, subagent_id,
      sidechain, model, ts, input_tokens, output_tokens, cache_write_tokens,
      cache_write_1h_tokens, cache_read_tokens, service_tier, line_offset, origin,
      reasoning_tokens, premium_requests)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,
      ?19)
    ON CONFLICT(message_id, request_id) DO UPDATE SET
      session_id = coalesce(session_id, excluded.session_id),
      agent = coalesce(agent, excluded.agent),
      turn_id = coalesce(turn_id, excluded.turn_id),
      subagent_id = CASE WHEN min(sidechain, excluded.sidechain) = 0 THEN NULL
        ELSE coalesce(subagent_id, excluded.subagent_id) END,
      sidechain = min(sidechain, excluded.sidechain),
      model = CASE WHEN excluded.line_offset >= line_offset
        THEN coalesce(excluded.model, model) ELSE model END,
      ts = CASE WHEN excluded.line_offset >= line_offset
        THEN coalesce(excluded.ts, ts) ELSE ts END,
      input_tokens = max(input_tokens, excluded.input_tokens),
      output_tokens = max(output_tokens, excluded.output_tokens),
      cache_write_tokens = max(cache_write_tokens, excluded.cache_write_tokens),
      cache_write_1h_tokens = max(coalesce(cache_write_1h_tokens, excluded.cache_write_1h_tokens),
        coalesce(excluded.cache_write_1h_tokens, cache_write_1h_tokens)),
      cache_read_tokens = max(cache_read_tokens, excluded.cache_read_tokens),
      reasoning_tokens = max(coalesce(reasoning_tokens, excluded.reasoning_tokens),
        coalesce(excluded.reasoning_tokens, reasoning_tokens)),
      premium_requests = max(coalesce(premium_requests, excluded.premium_requests),
        coalesce(excluded.premium_requests, premium_requests)),
      service_tier = CASE WHEN excluded.line_offset >= line_offset
        THEN coalesce(excluded.service_tier, service_tier) ELSE service_tier END,
      line_offset = max(line_offset, excluded.line_offset)";

/// Where a usage row was read, besides its own fields.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    /// The session when the record names none (the queue line's).
    pub session_id: Option<&'a str>,
    /// The coding agent (`claude`, ...).
    pub agent: Option<&'a str>,
    /// The time when the record has none (the queue line's), epoch ms.
    pub ts: Option<i64>,
    /// `hook` or `import`.
    pub origin: &'static str,
}

// A session's totals (`SESSION_TOTAL` rows) by their message ids' range (`;` follows `:`),
// spelled out so that each statement is one constant, prepared once.
/// Whether session ?1 has a response of its own (a row that is no total).
const SESSION_HAS_RESPONSES: &str = "SELECT 1 FROM usage WHERE session_id = ?1
    AND NOT (message_id >= 'copilot-total:' AND message_id < 'copilot-total;') LIMIT 1";
/// Deletes session ?1's totals.
const DELETE_SESSION_TOTALS: &str = "DELETE FROM usage WHERE session_id = ?1
    AND message_id >= 'copilot-total:' AND message_id < 'copilot-total;'";

/// Whether the stored agent `agent` ends its sessions with usage totals
/// ([`Profile::usage_session_totals`](crate::model::agents::Profile)).
fn writes_session_totals(agent: Option<&str>) -> bool {
    agent
        .and_then(Agent::from_name)
        .is_some_and(|agent| agent.profile().usage_session_totals)
}

/// Upserts one response's row. A session's totals (Copilot CLI's `session.shutdown`) stand
/// in for its responses only while it has none: a total is not stored beside a response of
/// its session, and a Copilot response removes its session's totals, in whichever order
/// they arrive (docs/usage.md).
pub fn upsert(conn: &Connection, r: &UsageRecord, cx: Context<'_>) -> rusqlite::Result<()> {
    if let Some(session) = r.session_id.as_deref().or(cx.session_id) {
        if r.is_session_total() {
            // Kept apart as well, for `cmstore usage --check`, whatever happens to the row.
            let source = super::agent_totals::Source::CopilotShutdown;
            super::agent_totals::replace(conn, session, cx.agent, source, r, cx.origin)?;
            if conn
                .prepare_cached(SESSION_HAS_RESPONSES)?
                .exists([session])?
            {
                return Ok(());
            }
        } else if writes_session_totals(cx.agent) {
            conn.prepare_cached(DELETE_SESSION_TOTALS)?
                .execute([session])?;
        }
    }
    let saturate = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(UPSERT_USAGE)?.execute(params![
        r.message_id,
        r.request_id.as_deref().unwrap_or(""),
        r.session_id.as_deref().or(cx.session_id),
        cx.agent,
        r.turn_id,
        r.agent_id,
        r.sidechain,
        r.model,
        r.ts.or(cx.ts),
        saturate(r.input),
        saturate(r.output),
        saturate(r.cache_write),
        r.cache_write_1h.map(saturate),
        saturate(r.cache_read),
        r.service_tier,
        saturate(r.offset),
        cx.origin,
        r.reasoning.map(saturate),
        r.premium_requests,
    ])?;
    Ok(())
}

/// Upserts `records` as [`upsert`] does each, in their order; the plain responses (no
/// session total, no Copilot response that removes its session's totals) through statements
/// of [`ROWS_PER_STATEMENT`] rows each ([`super::many_rows`]: an import of a generated
/// 256 MB transcript spent a quarter of its time upserting its 40,732 responses one
/// statement each).
pub fn upsert_many(
    conn: &Connection,
    records: &[UsageRecord],
    cx: Context<'_>,
) -> rusqlite::Result<()> {
    let mut plain: Vec<&UsageRecord> = Vec::with_capacity(ROWS_PER_STATEMENT);
    let totals_agent = writes_session_totals(cx.agent);
    for r in records {
        let session = r.session_id.as_deref().or(cx.session_id);
        let special = session.is_some() && (r.is_session_total() || totals_agent);
        if special {
            upsert_rows(conn, &plain, cx)?;
            plain.clear();
            upsert(conn, r, cx)?;
            continue;
        }
        plain.push(r);
        if plain.len() == ROWS_PER_STATEMENT {
            upsert_rows(conn, &plain, cx)?;
            plain.clear();
        }
    }
    upsert_rows(conn, &plain, cx)
}

/// [`UPSERT_USAGE`]'s columns.
const UPSERT_COLUMNS: usize = 19;

/// Upserts `rows`, plain responses, in one statement.
fn upsert_rows(conn: &Connection, rows: &[&UsageRecord], cx: Context<'_>) -> rusqlite::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let mut values: Vec<ToSqlOutput<'_>> = Vec::with_capacity(rows.len() * UPSERT_COLUMNS);
    for r in rows {
        values.extend(row_values(r, cx));
    }
    static MANY: ManyRows = ManyRows::new(UPSERT_USAGE, UPSERT_COLUMNS);
    MANY.execute(conn, rows.len(), values)?;
    Ok(())
}

/// The values of one row of [`UPSERT_USAGE`], in its order.
fn row_values<'r>(r: &'r UsageRecord, cx: Context<'r>) -> [ToSqlOutput<'r>; UPSERT_COLUMNS] {
    let saturate = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    [
        text(Some(&r.message_id)),
        text(Some(r.request_id.as_deref().unwrap_or(""))),
        text(r.session_id.as_deref().or(cx.session_id)),
        text(cx.agent),
        text(r.turn_id.as_deref()),
        text(r.agent_id.as_deref()),
        int(Some(i64::from(r.sidechain))),
        text(r.model.as_deref()),
        int(r.ts.or(cx.ts)),
        int(Some(saturate(r.input))),
        int(Some(saturate(r.output))),
        int(Some(saturate(r.cache_write))),
        int(r.cache_write_1h.map(saturate)),
        int(Some(saturate(r.cache_read))),
        text(r.service_tier.as_deref()),
        int(Some(saturate(r.offset))),
        text(Some(cx.origin)),
        int(r.reasoning.map(saturate)),
        match r.premium_requests {
            Some(p) => ToSqlOutput::Owned(Value::Real(p)),
            None => ToSqlOutput::Owned(Value::Null),
        },
    ]
}

/// Upserts the records of a queue line's `usage` (its JSON text); returns how many. A
/// value that does not parse as a list of records is passed over (`None`).
pub fn upsert_json(
    conn: &Connection,
    json: &str,
    cx: Context<'_>,
) -> rusqlite::Result<Option<usize>> {
    let Ok(records) = serde_json::from_str::<Vec<UsageRecord>>(json) else {
        return Ok(None);
    };
    for record in &records {
        upsert(conn, record, cx)?;
    }
    Ok(Some(records.len()))
}

/// One row of the `prices` table.
#[derive(Debug, Clone, PartialEq)]
struct PriceRow {
    rates: [f64; 5],
    as_of: Option<String>,
    /// `shipped`, `litellm`, `cmstore.toml`, or for a model priced through another row,
    /// `<that row's origin> via <that row>` (`free` for a `:free` variant).
    origin: String,
}

/// The rows the `prices` table should hold: every row of `table`, and for each model the
/// store's usage names that has none, the row [`prices::resolve`] finds for it, under the
/// model's own id (the `v_usage*` views join on it). A model nothing resolves stays
/// unpriced.
fn wanted_rows(
    conn: &Connection,
    table: &PriceTable,
) -> rusqlite::Result<BTreeMap<String, PriceRow>> {
    let mut rows: BTreeMap<String, PriceRow> = table
        .iter()
        .map(|(model, p)| {
            let row = PriceRow {
                rates: p.rates,
                as_of: p.as_of.clone(),
                origin: p.origin.to_owned(),
            };
            (model.clone(), row)
        })
        .collect();
    // The rollup's few rows per session and day, rather than every response.
    let mut stmt =
        conn.prepare_cached("SELECT DISTINCT model FROM usage_rollup WHERE model <> ''")?;
    let seen = stmt.query_map([], |r| r.get::<_, String>(0))?;
    for model in seen {
        let model = model?;
        if table.contains_key(&model) {
            continue;
        }
        if let Some(found) = prices::resolve(table, &model) {
            let origin = match found.price.origin {
                "free" => "free".to_owned(),
                origin => format!("{origin} via {}", found.row),
            };
            let row = PriceRow {
                rates: found.price.rates,
                as_of: found.price.as_of,
                origin,
            };
            rows.insert(model, row);
        }
    }
    Ok(rows)
}

/// The `meta` keys kept beside the `prices` table: the digest of what it was built from
/// ([`prices::source_digest`]), its rows (a build that knows no digest rewrites the table
/// and leaves the digest: the count tells), and how many models the usage named that no
/// row priced.
const PRICES_SOURCE: &str = "prices_source";
const PRICES_ROWS: &str = "prices_rows";
const PRICES_UNPRICED: &str = "prices_unpriced";

fn price_rows(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT count(*) FROM prices")?
        .query_row([], |r| r.get(0))
}

/// How many models the usage names have no row in `prices`.
fn models_without_a_row(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached(
        "SELECT count(*) FROM (SELECT DISTINCT model FROM usage_rollup WHERE model <> '')
         WHERE model NOT IN (SELECT model FROM prices)",
    )?
    .query_row([], |r| r.get(0))
}

fn meta_value(conn: &Connection, key: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()
}

/// True when the `prices` table is current for `overrides`: built from the same shipped
/// tables and overrides, and no model the usage names has lost or gained a row since (a
/// model first seen is given its row by the next [`sync_prices`]). Parses no table: a read
/// asks this before every summary.
pub fn prices_current(conn: &Connection, overrides: &PriceTable) -> rusqlite::Result<bool> {
    let digest = prices::source_digest(overrides) as i64;
    if meta_value(conn, PRICES_SOURCE)? != Some(digest)
        || meta_value(conn, PRICES_ROWS)? != Some(price_rows(conn)?)
    {
        return Ok(false);
    }
    Ok(meta_value(conn, PRICES_UNPRICED)? == Some(models_without_a_row(conn)?))
}

fn stored_match(conn: &Connection, wanted: &BTreeMap<String, PriceRow>) -> rusqlite::Result<bool> {
    let mut stmt = conn.prepare(
        "SELECT model, input, output, cache_write_5m, cache_write_1h, cache_read, as_of, origin
         FROM prices ORDER BY model",
    )?;
    let stored: Vec<(String, PriceRow)> = stmt
        .query_map([], |r| {
            let row = PriceRow {
                rates: [r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?],
                as_of: r.get(6)?,
                origin: r.get(7)?,
            };
            Ok((r.get(0)?, row))
        })?
        .collect::<rusqlite::Result<_>>()?;
    Ok(stored.len() == wanted.len()
        && stored
            .iter()
            .zip(wanted)
            .all(|((model, row), (want_model, want))| model == want_model && row == want))
}

/// Makes the `prices` table hold the shipped tables with `overrides`, and a row for each
/// model the usage names that another row prices (`wanted_rows`), in one transaction;
/// true when it rewrote the table, false when it held those rows already.
pub fn sync_prices(conn: &mut Connection, overrides: &PriceTable) -> rusqlite::Result<bool> {
    if prices_current(conn, overrides)? {
        return Ok(false);
    }
    let table = prices::effective(overrides);
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let wanted = wanted_rows(&tx, &table)?;
    let rewrite = !stored_match(&tx, &wanted)?;
    if rewrite {
        tx.execute("DELETE FROM prices", [])?;
        let mut insert = tx.prepare(
            "INSERT INTO prices(model, input, output, cache_write_5m, cache_write_1h, cache_read,
               as_of, origin) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (model, p) in &wanted {
            let [i, o, w5, w1, r] = p.rates;
            insert.execute(params![model, i, o, w5, w1, r, p.as_of, p.origin])?;
        }
    }
    let unpriced = models_without_a_row(&tx)?;
    let digest = prices::source_digest(overrides) as i64;
    let mut set = tx.prepare_cached("INSERT OR REPLACE INTO meta(key, value) VALUES (?1, ?2)")?;
    set.execute(params![PRICES_SOURCE, digest])?;
    set.execute(params![PRICES_ROWS, price_rows(&tx)?])?;
    set.execute(params![PRICES_UNPRICED, unpriced])?;
    drop(set);
    tx.commit()?;
    Ok(rewrite)
}

/// [`sync_prices`] on a connection of `store`.
pub fn sync_store_prices(
    store: &super::Store,
    overrides: &PriceTable,
) -> Result<bool, super::Error> {
    let mut conn = store.conn()?;
    Ok(sync_prices(&mut conn, overrides)?)
}

/// Responses stored, for tests and status.
pub fn count(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT count(*) FROM usage", [], |r| r.get(0))
        .optional()
        .map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Connection) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let store = crate::store::open(&path).unwrap();
        drop(store);
        let conn = Connection::open(&path).unwrap();
        (dir, conn)
    }

    fn rec(output: u64, offset: u64) -> UsageRecord {
        UsageRecord {
            message_id: "m1".into(),
            model: Some("claude-sonnet-4-20250514".into()),
            input: 10,
            output,
            cache_write: 1_000_000,
            cache_write_1h: Some(0),
            cache_read: 2_000_000,
            offset,
            ..UsageRecord::default()
        }
    }

    const CX: Context<'static> = Context {
        session_id: Some("s1"),
        agent: Some("claude"),
        ts: Some(5),
        origin: "hook",
    };

    /// Every table an upsert writes (the rows and their rollups), whole.
    fn tables(conn: &Connection) -> Vec<String> {
        let mut all = Vec::new();
        for table in ["usage", "usage_rollup", "usage_hourly"] {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {table} ORDER BY 1, 2, 3, 4"))
                .unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    let cells: rusqlite::Result<Vec<String>> = (0..n)
                        .map(|i| r.get::<_, Value>(i).map(|v| format!("{v:?}")))
                        .collect();
                    cells.map(|c| format!("{table}: {}", c.join(" | ")))
                })
                .unwrap();
            all.extend(rows.map(Result::unwrap));
        }
        all
    }

    /// Records of every kind, more than a statement holds: responses of several sessions and
    /// models, some read again with other counts, Copilot's responses and a session's totals.
    fn many() -> Vec<UsageRecord> {
        let mut records = Vec::new();
        for i in 0..(2 * ROWS_PER_STATEMENT as u64 + 7) {
            records.push(UsageRecord {
                message_id: format!("m{}", i % 50),
                request_id: (i % 3 == 0).then(|| format!("r{i}")),
                session_id: (i % 5 != 0).then(|| format!("s{}", i % 4)),
                model: Some(["claude-sonnet-4-5", "gpt-5"][(i % 2) as usize].into()),
                ts: (i % 11 != 0).then_some(1_770_000_000_000 + i as i64 * 600_000),
                premium_requests: (i % 13 == 0).then_some(1.5),
                reasoning: (i % 7 == 0).then_some(i),
                service_tier: Some("standard".into()),
                ..rec(i * 3, i)
            });
        }
        let total = UsageRecord {
            message_id: format!("{}s9:gpt-5", crate::model::queue_line::usage::SESSION_TOTAL),
            session_id: Some("s9".into()),
            ..rec(77, 1)
        };
        records.insert(40, total.clone());
        records.push(total);
        records
    }

    #[test]
    fn many_at_once_are_what_each_upserted_alone_makes() {
        for cx in [
            CX,
            Context {
                agent: Some("copilot"),
                ..CX
            },
        ] {
            let (_one, alone) = store();
            let (_many, together) = store();
            let records = many();
            for r in &records {
                upsert(&alone, r, cx).unwrap();
            }
            upsert_many(&together, &records, cx).unwrap();
            let want = tables(&alone);
            assert!(want.len() > 50, "{}", want.len());
            assert_eq!(tables(&together), want);
        }
    }

    #[test]
    fn a_response_counts_once_with_its_last_line_whatever_the_order() {
        let (_dir, conn) = store();
        for (output, offset) in [(3, 100), (1941, 400), (3, 200), (1941, 400)] {
            upsert(&conn, &rec(output, offset), CX).unwrap();
        }
        let (n, out): (i64, i64) = conn
            .query_row("SELECT count(*), sum(output_tokens) FROM usage", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!((n, out), (1, 1941));
    }

    #[test]
    fn a_response_resaved_by_a_subagent_keeps_its_final_counts_and_stays_the_parents() {
        // The parent's file stopped at a partial count (late in a long file); the compaction
        // subagent's file re-saves the response with its final count (early in a short one).
        let partial = rec(23, 90_000);
        let resaved = UsageRecord {
            sidechain: true,
            agent_id: Some("acompact-1".into()),
            ..rec(787, 4_000)
        };
        for order in [[&partial, &resaved], [&resaved, &partial]] {
            let (_dir, conn) = store();
            for r in order {
                upsert(&conn, r, CX).unwrap();
            }
            let row: (i64, i64, Option<String>) = conn
                .query_row(
                    "SELECT output_tokens, sidechain, subagent_id FROM usage",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            assert_eq!(row, (787, 0, None));
        }
    }

    #[test]
    fn the_reasoning_a_later_read_reports_fills_in_a_row_stored_without_it() {
        let (_dir, conn) = store();
        upsert(&conn, &rec(300, 10), CX).unwrap();
        let reasoning = |conn: &Connection| -> Option<i64> {
            conn.query_row("SELECT reasoning_tokens FROM usage", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(
            reasoning(&conn),
            None,
            "stored before 0026, or by an agent without it"
        );
        let with = UsageRecord {
            reasoning: Some(120),
            ..rec(300, 10)
        };
        upsert(&conn, &with, CX).unwrap();
        upsert(&conn, &rec(300, 10), CX).unwrap();
        assert_eq!(reasoning(&conn), Some(120));
    }

    #[test]
    fn a_sessions_totals_stand_in_for_its_responses_only_while_it_has_none() {
        let copilot = Context {
            agent: Some("copilot"),
            ..CX
        };
        let total = UsageRecord {
            message_id: "copilot-total:gpt-5.4".into(),
            request_id: Some("1780883337913".into()),
            ..rec(50, 900)
        };
        let response = rec(30, 100);
        let rows = |conn: &Connection| -> Vec<String> {
            let mut stmt = conn
                .prepare("SELECT message_id FROM usage ORDER BY 1")
                .unwrap();
            let ids = stmt.query_map([], |r| r.get(0)).unwrap();
            ids.collect::<Result<_, _>>().unwrap()
        };
        for order in [[&total, &response], [&response, &total]] {
            let (_dir, conn) = store();
            upsert(&conn, order[0], copilot).unwrap();
            upsert(&conn, order[1], copilot).unwrap();
            assert_eq!(rows(&conn), ["m1"], "the response wins");
        }
        let (_dir, conn) = store();
        upsert(&conn, &total, copilot).unwrap();
        upsert(&conn, &total, copilot).unwrap();
        assert_eq!(rows(&conn), ["copilot-total:gpt-5.4"], "alone, once");
        // Another session's response leaves it.
        upsert(
            &conn,
            &response,
            Context {
                session_id: Some("s2"),
                ..copilot
            },
        )
        .unwrap();
        assert_eq!(rows(&conn), ["copilot-total:gpt-5.4", "m1"]);
    }

    #[test]
    fn cost_follows_the_price_table_and_unknown_models_stay_unpriced() {
        let (_dir, mut conn) = store();
        upsert(&conn, &rec(1_000_000, 1), CX).unwrap();
        let mut other = rec(5, 1);
        other.message_id = "m2".into();
        other.model = Some("my-local-model".into());
        upsert(&conn, &other, CX).unwrap();
        let cost = |conn: &Connection| -> (Option<f64>, i64) {
            conn.query_row(
                "SELECT cost_usd, unpriced FROM v_usage_sessions WHERE session_id = 's1'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
        };
        assert_eq!(cost(&conn), (None, 2), "no prices synced yet");
        let mut overrides = PriceTable::new();
        assert!(sync_prices(&mut conn, &overrides).unwrap());
        assert!(!sync_prices(&mut conn, &overrides).unwrap(), "unchanged");
        // 10 input * 3 + 1M output * 15 + 1M 5m-writes * 3.75 + 2M reads * 0.3, per million.
        let expected = (10.0 * 3.0) / 1e6 + 15.0 + 3.75 + 0.6;
        let (got, unpriced) = cost(&conn);
        assert!((got.unwrap() - expected).abs() < 1e-6, "{got:?}");
        assert_eq!(unpriced, 1);
        let mut sonnet = crate::model::prices::shipped()["claude-sonnet-4-20250514"].clone();
        (sonnet.rates, sonnet.origin) = ([0.0, 1.0, 0.0, 0.0, 0.0], "cmstore.toml");
        overrides.insert("claude-sonnet-4-20250514".into(), sonnet);
        assert!(sync_prices(&mut conn, &overrides).unwrap());
        assert_eq!(
            cost(&conn).0,
            Some(1.0),
            "an override reprices all of history"
        );
        assert_eq!(count(&conn).unwrap(), 2);
    }

    #[test]
    fn a_model_id_priced_through_another_row_gets_a_row_of_its_own_when_first_seen() {
        let (_dir, mut conn) = store();
        let none = PriceTable::new();
        assert!(sync_prices(&mut conn, &none).unwrap());
        let mut kimi = rec(1_000_000, 1);
        kimi.model = Some("kimi-k2.5:cloud".into());
        (kimi.cache_write, kimi.cache_write_1h, kimi.cache_read) = (0, None, 0);
        upsert(&conn, &kimi, CX).unwrap();
        assert!(
            !prices_current(&conn, &none).unwrap(),
            "a new model is seen"
        );
        assert!(sync_prices(&mut conn, &none).unwrap());
        assert!(prices_current(&conn, &none).unwrap());
        let (origin, cost): (String, f64) = conn
            .query_row(
                "SELECT p.origin, u.cost_usd FROM v_usage u JOIN prices p USING (model)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(origin, "litellm via moonshot/kimi-k2.5");
        // 10 input at 0.6 and 1M output at 3.0 per million.
        assert!((cost - (10.0 * 0.6 / 1e6 + 3.0)).abs() < 1e-9, "{cost}");
        assert!(!sync_prices(&mut conn, &none).unwrap(), "unchanged");
        // A build that knows no digest rewrote the table: the count tells.
        conn.execute("DELETE FROM prices WHERE model = 'gpt-5.4'", [])
            .unwrap();
        assert!(!prices_current(&conn, &none).unwrap());
        assert!(sync_prices(&mut conn, &none).unwrap());
        // A model nothing prices is counted once, and leaves the table current.
        let mut local = kimi.clone();
        (local.message_id, local.model) = ("m9".into(), Some("my-local-model".into()));
        upsert(&conn, &local, CX).unwrap();
        assert!(!prices_current(&conn, &none).unwrap());
        assert!(!sync_prices(&mut conn, &none).unwrap(), "no row to add");
        assert!(prices_current(&conn, &none).unwrap());
    }
}
