#!/usr/bin/env bash
# The whole benchmark suite in one command: capture vs an empty binary vs vstack's audit hooks,
# ingest vs sqlite3 and sqlite-utils, and ingest/query/summarize at growing backlog sizes, with
# a chart. Raw results go to benches/results/*.tsv, the chart to benches/results/throughput.svg.
#
# Needs: cargo, rustc, python3 (with venv), bash, sqlite3, GNU time, bc; network for
# `pip install vstack` (into a venv under WORK) and, unless present, sqlite-utils.
#
# Usage: benches/run-all.sh
# The capture part also runs benches/capture_neighbours.py (a control: the same hooks after
# different neighbours) and `cargo bench --bench capture` (Claude Code payloads).
# Environment (defaults in brackets):
#   WORK=DIR           scratch directory [mktemp under /tmp]; big queues and stores are deleted
#                      as soon as they have been measured
#   CAPTURE_RUNS=N     interleaved iterations of the capture comparison [200]
#   INGEST_LINES=N     lines for the three-way ingest comparison (benches/ingest.sh) [1000000]
#   INGEST_RUNS=N      runs of cmstore and sqlite3 there (sqlite-utils runs once) [3]
#   SIZES="N ..."      backlog sizes for the scaling part [100000 1000000 3000000 10000000]
#   QUERY_RUNS=N       runs per query/summarize timing (after one warm-up) [9]
#   GEN_MODE=small|""  line shape for every generated queue [small: ~276-byte lines]
#   SKIP="capture ingest scale"  parts to skip
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-run-all.XXXXXX)}
RES="$ROOT/benches/results"
CAPTURE_RUNS=${CAPTURE_RUNS:-200}
INGEST_LINES=${INGEST_LINES:-1000000}
INGEST_RUNS=${INGEST_RUNS:-3}
SIZES=${SIZES:-100000 1000000 3000000 10000000}
QUERY_RUNS=${QUERY_RUNS:-9}
GEN_MODE=${GEN_MODE-small}
SKIP=${SKIP:-}
mkdir -p "$WORK" "$RES"
skip() { case " $SKIP " in *" $1 "*) return 0 ;; esac; return 1; }

for tool in sqlite3 bc python3; do
    command -v $tool >/dev/null || { echo "$tool missing (apt-get install -y $tool)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "GNU time missing: apt-get install -y time" >&2; exit 1; }

echo "== machine"
{
    echo -e "key\tvalue"
    echo -e "date\t$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo -e "nproc\t$(nproc)"
    echo -e "cpu\t$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
    echo -e "ram\t$(free -h | awk '/^Mem:/ { print $2 }')"
    echo -e "disk\t$(df -h "$WORK" | awk 'NR == 2 { print $1 " " $2 " (" $4 " free)" }'), $(findmnt -no FSTYPE -T "$WORK" 2>/dev/null || echo '?')"
    echo -e "kernel\t$(uname -sr)"
    echo -e "rustc\t$(rustc --version)"
    echo -e "sqlite3 CLI\t$(sqlite3 --version | cut -d' ' -f1)"
    echo -e "load before\t$(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RES/machine.tsv"

echo "== build (release)"
(cd "$ROOT" && cargo build --release --quiet --bin cmstore && cargo build --release --quiet --example gen_queue)
BIN="$ROOT/target/release/cmstore"
GEN="$ROOT/target/release/examples/gen_queue"
rustc -O --edition 2021 -o "$WORK/empty_hook" "$ROOT/benches/empty_hook.rs"

# ---------------------------------------------------------------------------------------------
if ! skip capture; then
    echo "== capture vs empty binary vs vstack hooks"
    VENV="$WORK/venv"
    if [ ! -x "$VENV/bin/vstack" ]; then
        python3 -m venv "$VENV"
        "$VENV/bin/pip" install --quiet vstack
    fi
    echo "   $("$VENV/bin/vstack" --version)"
    PROJ="$WORK/vstack-project"
    rm -rf "$PROJ"; mkdir -p "$PROJ"
    (cd "$PROJ" && git init --quiet . && "$VENV/bin/vstack" init --only hook >/dev/null)
    ls "$PROJ"/.github/hooks/*.json | sed 's|.*/|   rendered |'
    python3 "$ROOT/benches/capture_vs_vstack.py" "$BIN" "$WORK/empty_hook" "$PROJ" \
        "$CAPTURE_RUNS" "$RES/capture_vs_vstack.tsv" | tee "$WORK/capture.out"
    echo "== capture: does what runs between hooks change start-up? (control)"
    python3 "$ROOT/benches/capture_neighbours.py" "$BIN" "$WORK/empty_hook" "$PROJ" 60 \
        | tee "$RES/capture_neighbours.txt"
    echo "== capture: benches/capture.rs (Claude Code payloads, back to back)"
    (cd "$ROOT" && cargo bench --quiet --bench capture -- --runs "$CAPTURE_RUNS") 2>&1 \
        | grep -v '^ *\(Finished\|Running\|Compiling\)' | tee "$RES/capture_rs.txt"
fi

# ---------------------------------------------------------------------------------------------
if ! skip ingest; then
    echo "== ingest: cmstore vs sqlite3 vs sqlite-utils ($INGEST_LINES lines)"
    command -v sqlite-utils >/dev/null || echo "   (sqlite-utils missing: pip install sqlite-utils; skipped)"
    mkdir -p "$WORK/ingest"
    rm -f "$WORK"/ingest/all.*
    WORK="$WORK/ingest" GEN_MODE="$GEN_MODE" "$ROOT/benches/ingest.sh" "$INGEST_LINES" "$INGEST_RUNS" \
        | tee "$WORK/ingest.out"
    {
        echo -e "tool\trun\tseconds\tmaxrss_kb"
        for t in cmstore sqlite3 sqlite-utils; do
            [ -f "$WORK/ingest/all.$t" ] || continue
            awk -v t="$t" '{ print t "\t" NR "\t" $1 "\t" $2 }' "$WORK/ingest/all.$t"
        done
    } >"$RES/ingest.tsv"
    echo -e "lines\t$INGEST_LINES\nbytes\t$(stat -c %s "$WORK/ingest/queue.jsonl")" >"$RES/ingest_queue.tsv"
    rm -f "$WORK"/ingest/queue.jsonl "$WORK"/ingest/bench.db*
fi

# ---------------------------------------------------------------------------------------------
# median_ms CMD...: one warm-up run, then QUERY_RUNS runs; prints "median p90 min max" in ms.
median_ms() {
    "$@" >/dev/null
    local t=()
    for _ in $(seq "$QUERY_RUNS"); do
        local t0; t0=$(date +%s%N)
        "$@" >/dev/null
        t+=($(( ($(date +%s%N) - t0) / 1000 )))
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{ a[NR] = $1 / 1000 } END {
        p = int(0.9 * NR + 0.999); if (p > NR) p = NR;
        printf "%.1f\t%.1f\t%.1f\t%.1f\n", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[p], a[1], a[NR] }'
}

if ! skip scale; then
    echo "== growth with backlog size: $SIZES (GEN_MODE=${GEN_MODE:-full})"
    echo -e "lines\tqueue_bytes\tgen_s\tingest_s\tlines_per_s\tmaxrss_kb\tdb_bytes\tevents\ttool_calls" >"$RES/scale_ingest.tsv"
    echo -e "lines\tquery\tmedian_ms\tp90_ms\tmin_ms\tmax_ms\truns" >"$RES/scale_query.tsv"
    for n in $SIZES; do
        d="$WORK/scale-$n"; rm -rf "$d"; mkdir -p "$d"; : > "$d/none.toml"
        q="$d/queue.jsonl"; db="$d/store.db"
        cm() { "$BIN" --db "$db" --queue "$q" --config "$d/none.toml" "$@"; }
        t0=$(date +%s%N)
        "$GEN" "$q" "$n" $GEN_MODE
        gen_s=$(echo "scale=2; ($(date +%s%N) - $t0) / 1000000000" | bc)
        bytes=$(stat -c %s "$q")
        sync
        /usr/bin/time -f "%e %M" -o "$d/time" "$BIN" --db "$db" --queue "$q" --config "$d/none.toml" ingest --once >/dev/null
        read -r secs rss <"$d/time"
        sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null
        events=$(sqlite3 "$db" 'SELECT count(*) FROM events')
        calls=$(sqlite3 "$db" 'SELECT count(*) FROM tool_calls')
        [ "$events" = "$n" ] || { echo "expected $n events, found $events" >&2; exit 1; }
        dbb=$(stat -c %s "$db")
        lps=$(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
        echo -e "$n\t$bytes\t$gen_s\t$secs\t$lps\t$rss\t$dbb\t$events\t$calls" >>"$RES/scale_ingest.tsv"
        echo "   $n lines ($bytes bytes, generated in ${gen_s}s): ingest ${secs}s = $lps lines/s, RSS $((rss / 1024)) MB, store $dbb bytes"
        rm -f "$q"   # the queue is not needed for reads; free the disk before timing
        id=$(sqlite3 "$db" "SELECT id FROM events WHERE seq = $((events / 2))")
        while IFS='|' read -r name; do
            case $name in
                by-id) r=$(median_ms cm query "SELECT seq, ts, hook_type, session_id, tool_name FROM events WHERE id = :id" --param "id=$id" --format tsv) ;;
                session-prompts) r=$(median_ms cm query "SELECT count(*) FROM events WHERE session_id = 'sess-0042' AND hook_type = 'UserPromptSubmit'" --format tsv) ;;
                summarize) r=$(median_ms cm summarize --format tsv) ;;
                summarize-by-tool) r=$(median_ms cm summarize --by tool --format tsv) ;;
            esac
            echo -e "$n\t$name\t$r\t$QUERY_RUNS" >>"$RES/scale_query.tsv"
            echo "   $n $name: median/p90/min/max ms $(echo "$r" | tr '\t' ' ')"
        done <<<"$(printf '%s\n' by-id session-prompts summarize summarize-by-tool)"
        rm -rf "$d"
    done
fi

echo "== chart and summary"
python3 "$ROOT/benches/report.py" "$RES"
echo "(results in $RES; scratch in $WORK)"
