#!/usr/bin/env bash
# Team store load test (issue 40): MACHINES stores of LINES generated events each (one
# generated queue, ingested once and copied, so every copy makes its own machine id), pushed
# at the same time into one fresh PostgreSQL database on loopback; then the team's questions
# on the whole (their median of 5, by psql's \timing).
#
# Prints: the wall time until the last push ends, events/s in all, the pushes' own CPU, and
# the rest of the machine's busy time in that span (the server's, mostly: the machine is
# otherwise idle); then each question's median.
#
# Needs a PostgreSQL server whose role may create databases: PGURL (default: the test role
# that tests/cli/common.rs creates).
#
# Usage: benches/push_load.sh [MACHINES] [LINES] [CONTENT]   (defaults: 20, 100000, none;
# WORK=DIR keeps the files there)
set -euo pipefail

MACHINES=${1:-20}
LINES=${2:-100000}
CONTENT=${3:-none}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-push-load.XXXXXX)}
PGURL=${PGURL:-postgres://cmstore_test:cmstore_test@127.0.0.1:5432}
DB=cmstore_load
URL="$PGURL/$DB?sslmode=disable"
mkdir -p "$WORK"

echo "== build (release)"
(cd "$ROOT" && cargo build --release --quiet && cargo build --release --quiet --example gen_queue)
BIN="$ROOT/target/release/cmstore"

echo "== $MACHINES stores of $LINES events"
"$ROOT/target/release/examples/gen_queue" "$WORK/queue.jsonl" "$LINES"
rm -rf "$WORK/base"; mkdir -p "$WORK/base"
"$BIN" --home "$WORK/base" --queue "$WORK/queue.jsonl" ingest --once 2>/dev/null
for i in $(seq "$MACHINES"); do
    rm -rf "$WORK/m$i"; cp -r "$WORK/base" "$WORK/m$i"
done
psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" \
    -c "CREATE DATABASE $DB" >/dev/null 2>&1
# The schema first, so that the timed pushes do not queue behind one migration.
"$BIN" --home "$WORK/base" --queue "$WORK/queue.jsonl" push --url "$URL" --batch-events 1 \
    --give-up-after 30 >/dev/null 2>&1 || true
psql -q "$URL" -c "TRUNCATE events, sessions, turns, tool_calls, usage, machines" >/dev/null

busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
hz=$(getconf CLK_TCK)

echo "== push, $MACHINES at once, content $CONTENT"
b0=$(busy); t0=$(date +%s.%N)
pids=()
for i in $(seq "$MACHINES"); do
    ( /usr/bin/time -f "%U %S" -o "$WORK/time.$i" \
        "$BIN" --home "$WORK/m$i" --queue "$WORK/queue.jsonl" push --url "$URL" \
        --content "$CONTENT" --give-up-after 600 2>"$WORK/err.$i" ) &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
t1=$(date +%s.%N); b1=$(busy)
wall=$(echo "$t1 - $t0" | bc)
own=$(cat "$WORK"/time.* | awk '{s += $1 + $2} END {print s}')
machine=$(echo "($b1 - $b0) / $hz" | bc -l)
rows=$(psql -tA "$URL" -c "SELECT count(*) FROM events")
printf 'wall %.2f s; %d events on the server; %.0f events/s; pushes CPU %.1f s; rest of the machine %.1f s\n' \
    "$wall" "$rows" "$(echo "$rows / $wall" | bc -l)" "$own" "$(echo "$machine - $own" | bc -l)"
grep -h "cmstore push:" "$WORK"/err.* | head -2

echo "== the team's questions at $rows events (median of 5)"
question() {
    local name=$1 sql=$2
    local ms
    ms=$(for _ in 1 2 3 4 5; do
        psql -q "$URL" -c '\timing on' -c "$sql" 2>&1 | awk '/^Time:/ {print $2}'
    done | sort -n | awk '{a[NR]=$1} END {print a[3]}')
    printf '%-34s %10s ms\n' "$name" "$ms"
}
question "spend per user this month" \
    "SELECT user_label, sum(cost_usd) FROM v_daily_usage GROUP BY 1"
question "spend per day and agent" \
    "SELECT day, agent, sum(responses), sum(cost_usd) FROM v_daily_usage GROUP BY 1, 2"
question "tools (v_tools)" "SELECT * FROM v_tools"
question "newest 50 sessions (v_sessions)" \
    "SELECT * FROM v_sessions ORDER BY last_seen DESC LIMIT 50"
question "events per machine" "SELECT machine_id, count(*) FROM events GROUP BY 1"
question "one session's events" \
    "SELECT * FROM events WHERE machine_id = (SELECT min(machine_id) FROM machines) AND session_id = 'sess-0042' ORDER BY seq"
psql -tA "$URL" -c "SELECT pg_size_pretty(pg_database_size('$DB'))" | sed 's/^/database size: /'
echo "work: $WORK"
