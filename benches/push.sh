#!/usr/bin/env bash
# Team store benchmark (issue 40): `cmstore push` of a store of LINES generated events into a
# fresh PostgreSQL database (loopback), under the `none` and `full` profiles, against the
# server's own ceiling in the same run: psql's `\copy` of the same events (the `full` columns,
# as CSV that sqlite3 wrote from the store) into a table of the same shape, keys and indexes.
# Also: a second push with nothing new (its fixed cost: connection, schema check, digests).
# Prints the median of RUNS runs.
#
# Needs a PostgreSQL server whose role may create databases: PGURL (default: the test role
# that tests/cli/common.rs creates, postgres://cmstore_test:cmstore_test@127.0.0.1:5432).
#
# Usage: benches/push.sh [LINES] [RUNS]   (defaults: 200000 lines, 3 runs; WORK=DIR keeps the
# files there; BASE=path/to/an/older/cmstore adds its pushes, interleaved, as a baseline)
set -euo pipefail

LINES=${1:-200000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-push-bench.XXXXXX)}
PGURL=${PGURL:-postgres://cmstore_test:cmstore_test@127.0.0.1:5432}
mkdir -p "$WORK"
for tool in sqlite3 psql bc; do
    command -v $tool >/dev/null || { echo "$tool missing" >&2; exit 1; }
done
QUEUE="$WORK/queue.jsonl"
rm -f "$WORK"/times.*

echo "== build (release)"
(cd "$ROOT" && cargo build --release --quiet && cargo build --release --quiet --example gen_queue)
BIN="$ROOT/target/release/cmstore"

echo "== generate and ingest $LINES lines"
"$ROOT/target/release/examples/gen_queue" "$QUEUE" "$LINES"
HOME_DIR="$WORK/home"
rm -rf "$HOME_DIR"; mkdir -p "$HOME_DIR"
"$BIN" --home "$HOME_DIR" --queue "$QUEUE" ingest --once 2>/dev/null
EVENTS=$(sqlite3 "$HOME_DIR/cmstore.db" "SELECT count(*) FROM events")
# The baseline pushes a store of its own making: an older cmstore refuses a store a newer one
# has migrated past its schema.
if [ -n "${BASE:-}" ]; then
    rm -rf "$WORK/home-base"; mkdir -p "$WORK/home-base"
    "$BASE" --home "$WORK/home-base" --queue "$QUEUE" ingest --once 2>/dev/null
fi

# An autovacuum worker on the database, which this role may not end, fails the DROP now and
# then: tried again.
fresh_db() {
    for _ in $(seq 60); do
        psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS cmstore_bench WITH (FORCE)" \
            -c "CREATE DATABASE cmstore_bench" >/dev/null 2>&1 && return 0
        sleep 1
    done
    return 1
}
now() { date +%s.%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
URL="$PGURL/cmstore_bench?sslmode=disable"

# push_run PROFILE [BINARY HOME]: a fresh server database and a fresh copy of the store (no
# cursor); seconds.
push_run() {
    fresh_db
    rm -rf "$WORK/copy"; cp -r "${3:-$HOME_DIR}" "$WORK/copy"
    local t0 t1
    t0=$(now)
    "${2:-$BIN}" --home "$WORK/copy" --queue "$QUEUE" push --url "$URL" --content "$1" \
        2>"$WORK/err.push"
    t1=$(now)
    echo "$t1 - $t0" | bc
}

# copy_run: the events as CSV (the columns the push sends), then psql \copy into a table of the
# same shape, primary key and indexes as the team schema's `events`; seconds of the \copy.
sqlite3 -csv "$HOME_DIR/cmstore.db" "SELECT 'm', id, seq, ts, hook_type, event, agent, session_id,
    tool_name, tool_call_id, turn_id, model, cwd, origin, actor_name, actor_type, delegated_agent,
    synthetic, prompt, response, tool_result_type, duration_ms, size_bytes, estimated_tokens,
    producer, risk, decision, entry, 'u', 't' FROM events" >"$WORK/events.csv"
copy_run() {
    fresh_db
    psql -q "$URL" -c "CREATE TABLE events (machine_id text NOT NULL, id text NOT NULL,
        seq bigint NOT NULL, ts bigint NOT NULL, hook_type text, event text, agent text,
        session_id text, tool_name text, tool_call_id text, turn_id text, model text, cwd text,
        origin text, actor_name text, actor_type text, delegated_agent text, synthetic bigint,
        prompt text, response text, tool_result_type text, duration_ms bigint, size_bytes bigint,
        estimated_tokens bigint, producer text, risk text, decision text, entry text,
        user_label text, team_label text, PRIMARY KEY (machine_id, id));
        CREATE INDEX events_ts ON events (ts);
        CREATE INDEX events_session ON events (machine_id, session_id);" >/dev/null
    local t0 t1
    t0=$(now)
    psql -q "$URL" -c "\\copy events FROM '$WORK/events.csv' WITH (FORMAT csv)" >/dev/null
    t1=$(now)
    echo "$t1 - $t0" | bc
}

rows="copy push-none push-full"
[ -n "${BASE:-}" ] && rows="copy push-none base-push-none push-full base-push-full"
# Interleaved: run i of every row, then run i + 1, so that a slow minute of the machine
# falls on every row alike.
for run in $(seq "$RUNS"); do
    for row in $rows; do
        case $row in
            copy) copy_run ;;
            push-none) push_run none ;;
            push-full) push_run full ;;
            base-push-none) push_run none "$BASE" "$WORK/home-base" ;;
            base-push-full) push_run full "$BASE" "$WORK/home-base" ;;
        esac >>"$WORK/times.$row"
    done
done
printf '%-26s %9s %12s\n' row seconds events/s
for row in $rows; do
    times=$(median <"$WORK/times.$row")
    printf '%-26s %9.2f %12.0f\n' "$row" "$times" "$(echo "$EVENTS / $times" | bc -l)"
done
tail -1 "$WORK/err.push"

# Nothing new: a second push of the pushed store (connection, schema check, digests).
again=$(for _ in $(seq "$RUNS"); do
    t0=$(now); "$BIN" --home "$WORK/copy" --queue "$QUEUE" push --url "$URL" 2>/dev/null; t1=$(now)
    echo "$t1 - $t0" | bc
done | median)
printf '%-26s %9.2f\n' "push, nothing new" "$again"
echo "events: $EVENTS; work: $WORK"
