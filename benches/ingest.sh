#!/usr/bin/env bash
# Ingest benchmark: cmstore `ingest --once` vs the sqlite3 CLI vs `sqlite-utils insert --nl`,
# all loading the same generated queue of realistic v1 lines into a database with the same
# events table and indexes. Prints the median wall time of RUNS runs, lines/s, the ratio to
# sqlite3, and peak RSS (GNU time's "Maximum resident set size").
#
# Rows: cmstore (default: a large backlog loads with its session/tool indexes set aside and
# rebuilt at the end), cmstore-never (`--defer-indexes never`: every index kept up to date row
# by row), sqlite3 (one INSERT ... SELECT with every index live), sqlite3-late (the same, the
# indexes created after the load), sqlite3-floor (only the line and its unique id: the least
# any exactly-once store of whole lines writes), rust-floor (the same in Rust with cmstore's
# 10k-line transactions, benches/floor_load.rs), sqlite-utils.
#
# Needs: cargo, GNU time (/usr/bin/time), sqlite3 (`apt-get install -y sqlite3` if missing),
# optionally sqlite-utils (`pip install sqlite-utils`; skipped when absent).
#
# Usage: benches/ingest.sh [LINES] [RUNS]   (defaults: 1000000 lines, 3 runs; sqlite-utils runs
# SLOW_RUNS times, default 1, 0 skips it; WORK=DIR keeps files there; GEN_MODE=small for
# ~250-byte lines; BASELINE=/path/to/an/older/cmstore adds a cmstore-baseline row, that binary
# run the same way in the same loop; ONLY="cmstore cmstore-baseline sqlite3" runs just those,
# sqlite3 among them)
set -euo pipefail

LINES=${1:-1000000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-bench.XXXXXX)}
mkdir -p "$WORK"
QUEUE="$WORK/queue.jsonl"
TIME=/usr/bin/time

command -v sqlite3 >/dev/null || { echo "sqlite3 missing: apt-get install -y sqlite3" >&2; exit 1; }
[ -x "$TIME" ] || { echo "GNU time missing: apt-get install -y time" >&2; exit 1; }

echo "== build (release)"
(cd "$ROOT" && cargo build --release --quiet && cargo build --release --quiet --example gen_queue \
    && cargo build --release --quiet --example floor_load)
BIN="$ROOT/target/release/cmstore"

# Results of an earlier run in the same WORK would otherwise count in this run's medians.
rm -f "$WORK"/all.* "$WORK"/time.*

echo "== generate $LINES lines into $QUEUE"
"$ROOT/target/release/examples/gen_queue" "$QUEUE" "$LINES" ${GEN_MODE:-}
BYTES=$(stat -c %s "$QUEUE")
echo "   $BYTES bytes, $((BYTES / LINES)) bytes/line"

# The events table of cmstore's first migration, indexes included: sqlite3 and sqlite-utils
# get the same table cmstore writes (cmstore also fills sources/sessions/tool_calls/turns).
SCHEMA="$ROOT/migrations/0001_create_tables.sql"

# run NAME CMD...: runs CMD after a fresh database, records "seconds maxrss_kb".
run() {
    local name=$1; shift
    rm -f "$WORK"/bench.db "$WORK"/bench.db-* "$WORK"/bench.db.*
    sync
    "$TIME" -f "%e %M" -o "$WORK/time.$name" "$@" >/dev/null 2>"$WORK/err.$name" \
        || { echo "$name failed:"; cat "$WORK/err.$name"; exit 1; }
    cat "$WORK/time.$name" >>"$WORK/all.$name"
}

cmstore_run() {
    "$BIN" --db "$WORK/bench.db" --queue "$QUEUE" ingest --once
}

# The same with another build (BASELINE), to compare two builds side by side.
cmstore_baseline_run() {
    "$BASELINE" --db "$WORK/bench.db" --queue "$QUEUE" ingest --once
}

# The same, keeping every index up to date row by row (as in follow mode on a small backlog).
cmstore_never_run() {
    "$BIN" --db "$WORK/bench.db" --queue "$QUEUE" ingest --once --defer-indexes never
}

# The load of sqlite3's rows: every events column cmstore fills, from the line's JSON.
events_insert_sql() {
    cat <<'SQL'
INSERT INTO events(id, ts, hook_type, event, agent, session_id, tool_name, tool_call_id,
    turn_id, model, cwd, origin, actor_name, actor_type, delegated_agent, synthetic, prompt,
    response, tool_result_type, duration_ms, size_bytes, estimated_tokens, entry, source_id,
    source_offset, ingested_at)
SELECT line->>'id', coalesce(line->>'timestamp', 0), line->>'hookType', line->>'event',
    line->>'agent', line->>'sessionId', line->>'toolName', line->>'toolCallId', line->>'turnId',
    line->>'model', line->>'cwd', line->>'origin', line->>'actorName', line->>'actorType',
    line->>'delegatedAgent', line->>'synthetic', line->>'prompt', line->>'response',
    line->>'toolResultType', line->>'durationMs', line->>'sizeBytes', line->>'estimatedTokens',
    line, 1, rowid, 0
FROM raw WHERE true
ON CONFLICT(id) DO NOTHING;
SQL
}

# Every sqlite3 row starts the same way: the queue file, one line per row, into a temporary
# table, inside the transaction that then fills events.
raw_import_sql() {
    cat <<SQL
CREATE TEMP TABLE raw(line TEXT);
.mode ascii
.separator $(printf '\037') "\n"
BEGIN;
.import $QUEUE raw
SQL
}

sqlite3_run() {
    sqlite3 "$WORK/bench.db" <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
.read $SCHEMA
$(raw_import_sql)
$(events_insert_sql)
COMMIT;
SQL
}

# sqlite3 creating the secondary indexes of events after the load, in the same transaction
# (close to what cmstore does for a large backlog, which sets aside the session and tool indexes
# and keeps ts).
sqlite3_late_run() {
    sqlite3 "$WORK/bench.db" <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
.read $SCHEMA
DROP INDEX events_ts;
DROP INDEX events_session_id;
DROP INDEX events_tool_name;
$(raw_import_sql)
$(events_insert_sql)
CREATE INDEX events_ts ON events(ts);
CREATE INDEX events_session_id ON events(session_id);
CREATE INDEX events_tool_name ON events(tool_name);
COMMIT;
SQL
}

# The floor: the least any exactly-once store of whole lines does, one table with the line and
# its unique id, no other column, no other index.
sqlite3_floor_run() {
    sqlite3 "$WORK/bench.db" <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
CREATE TABLE events(seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, entry TEXT NOT NULL);
$(raw_import_sql)
INSERT INTO events(id, entry) SELECT line->>'id', line FROM raw WHERE true
ON CONFLICT(id) DO NOTHING;
COMMIT;
SQL
}


# The same floor in Rust with cmstore's transaction size and journal: 10k-line transactions, WAL,
# NORMAL
# (benches/floor_load.rs).
rust_floor_run() {
    "$ROOT/target/release/examples/floor_load" "$QUEUE" "$WORK/bench.db"
}

sqlite_utils_run() {
    sqlite-utils create-table "$WORK/bench.db" events id text timestamp integer hookType text \
        sessionId text toolName text --pk id
    sqlite-utils create-index "$WORK/bench.db" events timestamp
    sqlite-utils create-index "$WORK/bench.db" events sessionId
    sqlite-utils create-index "$WORK/bench.db" events toolName
    sqlite-utils insert "$WORK/bench.db" events "$QUEUE" --nl --alter --ignore --batch-size 10000
}

TOOLS="cmstore cmstore-never sqlite3 sqlite3-late sqlite3-floor rust-floor"
if command -v sqlite-utils >/dev/null; then TOOLS="$TOOLS sqlite-utils"; else
    echo "   sqlite-utils not installed (pip install sqlite-utils): skipped"; fi
if [ -n "${BASELINE:-}" ]; then TOOLS="cmstore cmstore-baseline ${TOOLS#cmstore }"; fi
TOOLS=${ONLY:-$TOOLS}

for i in $(seq "$RUNS"); do
    for t in $TOOLS; do
        # sqlite-utils is an order of magnitude slower: SLOW_RUNS runs only (default 1).
        if [ "$t" = sqlite-utils ] && [ "$i" -gt "${SLOW_RUNS:-1}" ]; then continue; fi
        echo "== run $i: $t"
        case $t in
            cmstore) run cmstore bash -c "$(declare -f cmstore_run); BIN='$BIN' WORK='$WORK' QUEUE='$QUEUE' cmstore_run" ;;
            cmstore-baseline) run cmstore-baseline bash -c "$(declare -f cmstore_baseline_run); BASELINE='$BASELINE' WORK='$WORK' QUEUE='$QUEUE' cmstore_baseline_run" ;;
            cmstore-never) run cmstore-never bash -c "$(declare -f cmstore_never_run); BIN='$BIN' WORK='$WORK' QUEUE='$QUEUE' cmstore_never_run" ;;
            sqlite3-late) run sqlite3-late bash -c "$(declare -f raw_import_sql events_insert_sql sqlite3_late_run); WORK='$WORK' QUEUE='$QUEUE' SCHEMA='$SCHEMA' sqlite3_late_run" ;;
            sqlite3-floor) run sqlite3-floor bash -c "$(declare -f raw_import_sql sqlite3_floor_run); WORK='$WORK' QUEUE='$QUEUE' sqlite3_floor_run" ;;
            rust-floor) run rust-floor bash -c "$(declare -f rust_floor_run); ROOT='$ROOT' WORK='$WORK' QUEUE='$QUEUE' rust_floor_run" ;;
            sqlite3) run sqlite3 bash -c "$(declare -f raw_import_sql events_insert_sql sqlite3_run); WORK='$WORK' QUEUE='$QUEUE' SCHEMA='$SCHEMA' sqlite3_run" ;;
            sqlite-utils) run sqlite-utils bash -c "$(declare -f sqlite_utils_run); WORK='$WORK' QUEUE='$QUEUE' sqlite_utils_run" ;;
        esac
        cat "$WORK/time.$t"
    done
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo
echo "lines=$LINES bytes=$BYTES runs=$RUNS"
printf "%-14s %10s %12s %10s %12s\n" tool "median s" "lines/s" "vs sqlite3" "peak RSS MB"
base=$(cut -d' ' -f1 "$WORK/all.sqlite3" | median)
for t in $TOOLS; do
    [ -f "$WORK/all.$t" ] || continue
    s=$(cut -d' ' -f1 "$WORK/all.$t" | median)
    rss=$(cut -d' ' -f2 "$WORK/all.$t" | sort -n | tail -1)
    awk -v t="$t" -v s="$s" -v n="$LINES" -v b="$base" -v r="$rss" \
        'BEGIN { printf "%-14s %10.2f %12.0f %9.2fx %12.1f\n", t, s, n / s, b / s, r / 1024 }'
done
if [ -f "$WORK/all.cmstore-baseline" ]; then
    new=$(cut -d' ' -f1 "$WORK/all.cmstore" | median)
    old=$(cut -d' ' -f1 "$WORK/all.cmstore-baseline" | median)
    awk -v n="$new" -v o="$old" 'BEGIN { printf "cmstore / cmstore-baseline: %.3f (below 1: this build is faster)\n", n / o }'
fi
echo "(work dir: $WORK)"
