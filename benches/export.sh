#!/usr/bin/env bash
# Export benchmark (issue 19): `cmstore ingest --once` of the same generated queue with the
# continuous OTLP export off, and on against a collector that is down, slow (200 ms per
# request) and fast; then `cmstore export otlp` of the whole store to the fast collector
# (events/s), with and without content. Prints the median wall time of RUNS runs.
#
# The collector is benches/otlp_sink.py (python3), on 127.0.0.1 only.
#
# Usage: benches/export.sh [LINES] [RUNS]   (defaults: 200000 lines, 3 runs; WORK=DIR keeps
# the files there)
set -euo pipefail

LINES=${1:-200000}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-export-bench.XXXXXX)}
mkdir -p "$WORK"
command -v sqlite3 >/dev/null || { echo "sqlite3 missing: apt-get install -y sqlite3" >&2; exit 1; }
command -v bc >/dev/null || { echo "bc missing: apt-get install -y bc" >&2; exit 1; }
QUEUE="$WORK/queue.jsonl"

echo "== build (release)"
(cd "$ROOT" && cargo build --release --quiet && cargo build --release --quiet --example gen_queue)
BIN="$ROOT/target/release/cmstore"

echo "== generate $LINES lines"
"$ROOT/target/release/examples/gen_queue" "$QUEUE" "$LINES"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
DOWN=$(free_port)
SLOW=$(free_port)
FAST=$(free_port)
python3 "$ROOT/benches/otlp_sink.py" "$SLOW" 200 & SLOW_PID=$!
python3 "$ROOT/benches/otlp_sink.py" "$FAST" 0 & FAST_PID=$!
trap 'kill $SLOW_PID $FAST_PID 2>/dev/null || true' EXIT
sleep 0.5

# ingest_run NAME ENDPOINT: a fresh home, `ingest --once`; prints seconds.
ingest_run() {
    local home="$WORK/home.$1"
    rm -rf "$home"; mkdir -p "$home"
    if [ -n "$2" ]; then
        printf '[export.otlp]\nendpoint = "%s"\n' "$2" >"$home/cmstore.toml"
    fi
    local t0 t1
    t0=$(date +%s.%N)
    "$BIN" --home "$home" --queue "$QUEUE" ingest --once 2>"$WORK/err.$1" >/dev/null
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-22s %10s %12s %8s\n' row seconds lines/s vs-off
OFF=""
for row in off on-down on-slow on-fast; do
    case $row in
        off) ep="" ;;
        on-down) ep="http://127.0.0.1:$DOWN" ;;
        on-slow) ep="http://127.0.0.1:$SLOW" ;;
        on-fast) ep="http://127.0.0.1:$FAST" ;;
    esac
    secs=$(for _ in $(seq "$RUNS"); do ingest_run "$row" "$ep"; done | median)
    [ -z "$OFF" ] && OFF=$secs
    printf '%-22s %10.2f %12.0f %7.1f%%\n' "ingest --once $row" "$secs" \
        "$(echo "$LINES / $secs" | bc -l)" "$(echo "100 * ($secs - $OFF) / $OFF" | bc -l)"
done
grep -h "exported" "$WORK"/err.on-* || true

# Export throughput: the store ingested with export off, exported whole to the fast sink.
for content in "" "--content"; do
    secs=$(for _ in $(seq "$RUNS"); do
        sqlite3 "$WORK/home.off/cmstore.db" "DELETE FROM export_cursors"
        t0=$(date +%s.%N)
        "$BIN" --home "$WORK/home.off" --queue "$QUEUE" export otlp \
            --endpoint "http://127.0.0.1:$FAST" $content 2>"$WORK/err.export" >/dev/null
        t1=$(date +%s.%N)
        echo "$t1 - $t0" | bc
    done | median)
    printf '%-22s %10.2f %12.0f events/s\n' "export otlp ${content:-(no content)}" "$secs" \
        "$(echo "$LINES / $secs" | bc -l)"
    tail -1 "$WORK/err.export"
done
