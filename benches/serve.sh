#!/usr/bin/env bash
# The dashboard's data (`cmstore serve`, issue 20) and `cmstore gate report` on a 1M-event store,
# measured through HTTP with curl and as whole processes.
#
# Builds the store as benches/store.sh does (benches/gen_queue.rs: LINES lines over 200
# sessions, plus `solo`, a session of 5,000 events), with one PreToolUse line in 50 given a
# safety-gate finding (`risk`, and `decision` deny or allow; gen_queue writes none), so the gate's
# figures have findings to count. gen_queue's events span 2026-01-01 to 01-03: the time range
# asked for is `since=2026-01-02` (57 % of them). The store is ingested by BEFORE when given (a baseline
# binary, e.g. built from main), else by BIN; each binary then answers from its own copy (BIN
# migrates the baseline's copy first: that time is printed). For each endpoint, RUNS requests:
#   - computed: the address with a throw-away parameter (`&_=N`), so the answer cache (keyed by
#     the address) never has it; the server's connections are warm after the first request;
#   - cached: the same address again.
# Each figure is the median (and min/max) of curl's time_total, in ms. The load average is
# printed with the figures: the machine may be shared.
#
# Needs: cargo, curl, sqlite3 (the WAL checkpoint after ingest).
# Usage: [BEFORE=path/to/old/cmstore] [BIN=cmstore] [WORK=DIR] [SKIP_BUILD=1] benches/serve.sh [LINES] [RUNS]
#        (defaults: 1000000 lines, 7 runs)
set -euo pipefail

LINES=${1:-1000000}
RUNS=${2:-7}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-serve-bench.XXXXXX)}
mkdir -p "$WORK"
: > "$WORK/none.toml"   # an empty configuration, not the user's
QUEUE="$WORK/queue.jsonl"
PRISTINE="$WORK/pristine.db"
BIN=${BIN:-$ROOT/target/release/cmstore}
BEFORE=${BEFORE:-}

for tool in curl sqlite3; do
    command -v "$tool" >/dev/null || { echo "$tool missing" >&2; exit 1; }
done

if [ -z "${SKIP_BUILD:-}" ]; then
    echo "== build (release)"
    (cd "$ROOT" && cargo build --release --locked --quiet --bin cmstore && cargo build --release --locked --quiet --example gen_queue)
fi

if [ ! -f "$PRISTINE" ]; then
    echo "== generate $LINES lines (one PreToolUse in 50 flagged) and ingest them"
    "$ROOT/target/release/examples/gen_queue" "$WORK/gen.jsonl" "$LINES"
    "$ROOT/target/release/examples/gen_queue" "$WORK/solo.jsonl" 5000
    sed 's/"sess-[0-9]*"/"solo"/g' "$WORK/solo.jsonl" >> "$WORK/gen.jsonl"
    # Rules by turns, denied on every other finding (enforce) and allowed on the rest (audit).
    awk 'BEGIN { split("rm-rf-root dd,mkfs curl-pipe-shell", rules, " ") }
         /"hookType":"PreToolUse"/ {
             n++
             if (n % 50 == 0) {
                 k = n / 50
                 d = (k % 2 == 0) ? "deny" : "allow"
                 sub(/^\{/, "{\"risk\":\"" rules[k % 3 + 1] "\",\"decision\":\"" d "\",")
             }
         }
         { print }' "$WORK/gen.jsonl" > "$QUEUE"
    rm -f "$WORK/gen.jsonl" "$WORK/solo.jsonl"
    start=$(date +%s%N)
    "${BEFORE:-$BIN}" --db "$PRISTINE" --queue "$QUEUE" --config "$WORK/none.toml" ingest --once
    echo "   ingest: $(( ($(date +%s%N) - start) / 1000000 )) ms"
    sqlite3 "$PRISTINE" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
fi
echo "   $(sqlite3 "$PRISTINE" "SELECT count(*) || ' events, ' || sum(hook_type = 'PreToolUse') || ' PreToolUse, ' || sum(instr(entry, '\"risk\"') > 0) || ' flagged' FROM events")"

# med_ms TIMES...: "median M ms (min A, max B)" of times in seconds.
med_ms() {
    printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 * 1000 }
        END { printf "%8.1f  (min %.1f, max %.1f)", a[int((NR + 1) / 2)], a[1], a[NR] }'
}

# process_ms NAME CMD...: the median wall time of CMD as a whole process, after one warm-up.
process_ms() {
    local name=$1; shift
    "$@" >/dev/null
    local times=()
    for _ in $(seq "$RUNS"); do
        local t0; t0=$(date +%s%N)
        "$@" >/dev/null
        times+=("$(echo "scale=6; ($(date +%s%N) - $t0) / 1000000000" | bc)")
    done
    printf '   %-44s %s ms\n' "$name" "$(med_ms "${times[@]}")"
}

ENDPOINTS=(
    "/api/version"
    "/api/sessions"
    "/api/sessions?agent=claude"
    "/api/session?id=sess-0000"
    "/api/session?id=solo"
    "/api/tools"
    "/api/gate"
    "/api/gate?since=2026-01-02"
    "/api/overview?since=2026-01-02"
    "/api/overview"
)

# measure LABEL BINARY: the binary's own copy of the store, `gate report`, then each endpoint.
measure() {
    local label=$1 bin=$2 db="$WORK/$1.db"
    echo "== $label: $bin"
    cp "$PRISTINE" "$db"; rm -f "$db"-wal "$db"-shm
    local t0; t0=$(date +%s%N)
    "$bin" --db "$db" gate report --format tsv >/dev/null
    echo "   first gate report (with the migrations, if any): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
    process_ms "gate report (tsv)" "$bin" --db "$db" gate report --format tsv
    process_ms "gate report --since 2026-01-02 (tsv)" "$bin" --db "$db" gate report --since 2026-01-02 --format tsv
    process_ms "gate report --agent claude (tsv)" "$bin" --db "$db" gate report --agent claude --format tsv
    "$bin" --db "$db" gate report --format tsv > "$WORK/$label.gate.tsv"

    "$bin" --db "$db" serve --port 0 > "$WORK/$label.serve.out" 2>&1 &
    local pid=$!
    local url=""
    for _ in $(seq 100); do
        url=$(sed -n 's/^cmstore dashboard (read-only) at \(http[^ ]*\)$/\1/p' "$WORK/$label.serve.out")
        [ -n "$url" ] && break
        sleep 0.1
    done
    [ -n "$url" ] || { cat "$WORK/$label.serve.out" >&2; kill "$pid"; exit 1; }
    local base=${url%%/?token=*} token=${url##*token=}
    local port=${base##*:}
    local cookie="cmstore_token_$port=$token"
    echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '   %-30s %-36s %s\n' "endpoint" "computed: median ms" "cached: median ms"
    for ep in "${ENDPOINTS[@]}"; do
        local sep='?'; [[ $ep == *\?* ]] && sep='&'
        local first computed=() cached=()
        first=$(curl -s -o /dev/null -w '%{time_total}' -b "$cookie" "$base$ep")
        for i in $(seq "$RUNS"); do
            computed+=("$(curl -s -o /dev/null -w '%{time_total}' -b "$cookie" "$base$ep${sep}_=$i")")
        done
        for _ in $(seq "$RUNS"); do
            cached+=("$(curl -s -o /dev/null -w '%{time_total}' -b "$cookie" "$base$ep")")
        done
        printf '   %-30s %-36s %s   (first: %.1f ms)\n' "$ep" "$(med_ms "${computed[@]}")" \
            "$(med_ms "${cached[@]}")" "$(echo "$first * 1000" | bc)"
        curl -s -b "$cookie" "$base$ep" > "$WORK/$label.$(echo "$ep" | tr -c 'a-z0-9\n' '_').json"
    done
    echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg)"
    kill "$pid"; wait "$pid" 2>/dev/null || true
}

[ -n "$BEFORE" ] && measure before "$BEFORE"
measure after "$BIN"
if [ -n "$BEFORE" ]; then
    if cmp -s "$WORK/before.gate.tsv" "$WORK/after.gate.tsv"; then
        echo "== gate report: the same rows before and after"
    else
        echo "== gate report: the rows differ"; diff "$WORK/before.gate.tsv" "$WORK/after.gate.tsv" | head
    fi
fi
echo "(files in $WORK)"
