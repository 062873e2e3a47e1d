#!/usr/bin/env bash
# Query, summarize and prune benchmark on a 1M-event store, measured as whole processes.
#
# Builds the store once through the real path (benches/gen_queue.rs writes LINES realistic v1
# lines over 200 sessions; `cmstore ingest --once` loads them), keeps a pristine copy, then
# reports the median (and min/max) wall time of RUNS runs of:
#   - an indexed lookup through `cmstore query` (one event by id: the UNIQUE(id) index);
#   - `cmstore summarize` (default: per session) and --by tool|day|agent|model, as TSV and as the
#     readable table (COLUMNS=100), with and without report filters;
#   - `cmstore sessions` and `cmstore show <a session>` (the reports of issue 17): a session of
#     the generated store (LINES / 200 events) and `solo`, one of 5,000 events at any LINES;
#   - `cmstore prune --before <median ts>` (half of the rows) on a fresh copy each run, with
#     the longest single write-lock time prune itself reports.
#
# Needs: cargo, sqlite3 (only to pick an id and the median timestamp).
# Usage: benches/store.sh [LINES] [RUNS]   (defaults: 1000000 lines, 7 runs; prune runs
# PRUNE_RUNS times, default 3, 0 skips it; WORK=DIR keeps files there)
set -euo pipefail

LINES=${1:-1000000}
RUNS=${2:-7}
PRUNE_RUNS=${PRUNE_RUNS:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-store-bench.XXXXXX)}
mkdir -p "$WORK"
# An empty configuration: the user's own cmstore.toml must not change what is measured (a
# --config that does not exist is an error).
: > "$WORK/none.toml"
QUEUE="$WORK/queue.jsonl"
DB="$WORK/bench.db"
PRISTINE="$WORK/pristine.db"

command -v sqlite3 >/dev/null || { echo "sqlite3 missing: apt-get install -y sqlite3" >&2; exit 1; }

echo "== build (release)"
(cd "$ROOT" && cargo build --release --quiet --bin cmstore && cargo build --release --quiet --example gen_queue)
BIN="$ROOT/target/release/cmstore"
cm() { "$BIN" --db "$DB" --queue "$QUEUE" --config "$WORK/none.toml" "$@"; }

if [ ! -f "$PRISTINE" ] && { [ "$PRUNE_RUNS" -ne 0 ] || [ ! -f "$DB" ]; }; then
    echo "== generate $LINES lines and ingest them"
    "$ROOT/target/release/examples/gen_queue" "$QUEUE" "$LINES"
    # One session of a fixed size beside them, `solo` (5,000 events, what a session of the
    # 1M-line store has), for `show`: its time should follow the session's size, not the
    # store's.
    "$ROOT/target/release/examples/gen_queue" "$WORK/solo.jsonl" 5000
    sed 's/"sess-[0-9]*"/"solo"/g' "$WORK/solo.jsonl" >> "$QUEUE"
    rm -f "$DB" "$DB"-*
    start=$(date +%s%N)
    cm ingest --once
    echo "   ingest: $(( ($(date +%s%N) - start) / 1000000 )) ms"
    sqlite3 "$DB" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
    if [ "$PRUNE_RUNS" -eq 0 ]; then
        # Only the reports run: no pristine copy, and the queue is not needed any more (the
        # disk a 10M-line run takes: ~12 GB of store instead of ~31 GB).
        rm -f "$QUEUE"
    else
        cp "$DB" "$PRISTINE"
    fi
elif [ -f "$PRISTINE" ]; then
    cp "$PRISTINE" "$DB"
fi
EVENTS=$(sqlite3 "$DB" 'SELECT count(*) FROM events')
echo "   $EVENTS events, $(sqlite3 "$DB" 'SELECT count(*) FROM sessions') sessions, $(sqlite3 "$DB" 'SELECT count(*) FROM tool_calls') tool calls, $(stat -c %s "$DB") bytes"

# median_ms NAME CMD...: runs CMD RUNS times (after one warm-up), prints median/min/max ms.
median_ms() {
    local name=$1; shift
    "$@" >/dev/null
    local times=()
    for _ in $(seq "$RUNS"); do
        local t0; t0=$(date +%s%N)
        "$@" >/dev/null
        times+=($(( ($(date +%s%N) - t0) / 100000 )))
    done
    sorted=($(printf '%s\n' "${times[@]}" | sort -n))
    local mid=${sorted[$(( ${#sorted[@]} / 2 ))]}
    printf '%-34s median %6s ms   min %6s   max %6s   (%s runs)\n' "$name" \
        "$(echo "scale=1; $mid / 10" | bc)" "$(echo "scale=1; ${sorted[0]} / 10" | bc)" \
        "$(echo "scale=1; ${sorted[-1]} / 10" | bc)" "$RUNS"
}

ID=$(sqlite3 "$DB" "SELECT id FROM events WHERE seq = $((EVENTS / 2))")
echo "== query and summarize (whole processes)"
median_ms "query: event by id" cm query "SELECT seq, ts, hook_type, session_id, tool_name FROM events WHERE id = :id" --param "id=$ID" --format tsv
median_ms "query: one session's prompts" cm query "SELECT count(*) FROM events WHERE session_id = 'sess-0042' AND hook_type = 'UserPromptSubmit'" --format tsv
median_ms "summarize (by session)" cm summarize --format tsv
median_ms "summarize --by tool" cm summarize --by tool --format tsv
median_ms "summarize --by agent" cm summarize --by agent --format tsv
median_ms "summarize --by day" cm summarize --by day --format tsv
median_ms "summarize --by model" cm summarize --by model --format tsv
echo "== the readable reports (table at 100 columns) and the report filters"
export COLUMNS=100
median_ms "summarize (table)" cm summarize --format table
median_ms "summarize --by tool (table)" cm summarize --by tool --format table
median_ms "summarize --by day (table)" cm summarize --by day --format table
median_ms "summarize --by agent (table)" cm summarize --by agent --format table
median_ms "summarize --by model (table)" cm summarize --by model --format table
median_ms "summarize --by day --since 7d" cm summarize --by day --since 7d --format tsv
median_ms "summarize --by day --agent claude" cm summarize --by day --agent claude --format tsv
median_ms "summarize --by tool --session sess-0042" cm summarize --by tool --session sess-0042 --format tsv
median_ms "sessions (table)" cm sessions --format table
median_ms "sessions --project (table)" cm sessions --project cmstore --format table
median_ms "show sess-0042" cm show sess-0042 --no-pager
median_ms "show sess-0042 --format json" cm show sess-0042 --format json
median_ms "show solo (5,000 events)" cm show solo --no-pager
unset COLUMNS

if [ "$PRUNE_RUNS" -eq 0 ]; then echo "(prune skipped: PRUNE_RUNS=0; files in $WORK)"; exit 0; fi
CUT=$(sqlite3 "$DB" "SELECT strftime('%Y-%m-%dT%H:%M:%SZ', ts / 1000, 'unixepoch') FROM events ORDER BY ts LIMIT 1 OFFSET $((EVENTS / 2))")
echo "== prune --before $CUT (half of the events), fresh copy each run"
locks=(); walls=()
for i in $(seq "$PRUNE_RUNS"); do
    cp "$PRISTINE" "$DB"; rm -f "$DB"-wal "$DB"-shm
    sync
    t0=$(date +%s%N)
    out=$(cm prune --before "$CUT")
    wall=$(( ($(date +%s%N) - t0) / 1000000 ))
    lock=$(echo "$out" | sed -n 's/^longest write lock: \([0-9.]*\) ms.*/\1/p')
    what=$(echo "$out" | sed -n 's/^longest write lock: .* over \([0-9]*\) transaction(s) (a \(.*\) batch)/\1 transactions, longest: \2/p')
    removed=$(echo "$out" | awk '$1 == "events" { print $2 }')
    echo "   run $i: wall $wall ms, removed $removed events, longest lock $lock ms ($what)"
    locks+=("$lock"); walls+=("$wall")
done
med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "   median over $PRUNE_RUNS runs: longest lock $(med "${locks[@]}") ms, wall $(med "${walls[@]}") ms"
echo "$out" | sed 's/^/   /'

echo "== prune --before $CUT --compact-queue (the queue too), fresh copies each run"
[ -f "$WORK/queue.orig" ] || cp "$QUEUE" "$WORK/queue.orig"
for i in $(seq "$PRUNE_RUNS"); do
    cp "$PRISTINE" "$DB"; rm -f "$DB"-wal "$DB"-shm
    cp "$WORK/queue.orig" "$QUEUE"
    sync
    t0=$(date +%s%N)
    out=$(cm prune --before "$CUT" --compact-queue)
    wall=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "   run $i: wall $wall ms; $(echo "$out" | grep '^queue:')"
done
cp "$WORK/queue.orig" "$QUEUE"
echo "(files in $WORK)"
