#!/usr/bin/env bash
# The guard: this work tree against one or more named baselines (a tag, a branch or a commit),
# each built side by side in release mode, measured in one run with the binaries interleaved,
# and printed as ratios to the first baseline. An A/A row (a copy of the first baseline under
# another name) shows what the machine's noise alone does to a ratio.
#
# Measures: capture, whole process, for each event kind (PostToolUse, PreToolUse,
# UserPromptSubmit, SessionStart, Notification: benches/hook_interleaved.py; Stop and
# StopFailure reading a new turn from their transcript: benches/stop_interleaved.py), and
# `ingest --once` of a 1M-line queue of 684-byte lines (benches/gen_queue.rs) and of 200k
# small lines with random UUIDv4 ids (benches/small_random_ids.py), and of the same lines
# with usage on each Stop (three responses a Stop, one an update), each into a fresh store,
# and the reports (sessions, summarize, show, gate report, status) on each build's 1M store
# (benches/reports_interleaved.py), and `cmstore import` of a generated Claude Code transcript
# of IMPORT_MB (benches/gen_transcript.py, benches/import_interleaved.py).
#
# Every change to the hook path, ingest or a migration runs this against the previous main and
# says the ratios in its commit or closing note; BENCHMARKS.md keeps the current table.
#
# Usage: benches/compare.sh BASE [BASE...]
# Env: HOOK_ROUNDS (300), INGEST_ROUNDS (3), REPORT_ROUNDS (7), LINES (1000000),
#      SMALL_LINES (200000), IMPORT_MB (1024), IMPORT_ROUNDS (3),
#      SKIP="capture ingest import" to leave a part out, WORK (/tmp/cmstore-compare).
# Needs: git, cargo, python3. Binaries run from WORK: on some machines a binary run from
# another file system pays ~0.2 ms more per start.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: benches/compare.sh BASE [BASE...]" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-/tmp/cmstore-compare}
HOOK_ROUNDS=${HOOK_ROUNDS:-300}
INGEST_ROUNDS=${INGEST_ROUNDS:-3}
REPORT_ROUNDS=${REPORT_ROUNDS:-7}
LINES=${LINES:-1000000}
SMALL_LINES=${SMALL_LINES:-200000}
IMPORT_MB=${IMPORT_MB:-1024}
IMPORT_ROUNDS=${IMPORT_ROUNDS:-3}
SKIP=${SKIP:-}
mkdir -p "$WORK/bin"

skipped() { [[ " $SKIP " == *" $1 "* ]]; }

echo "== build this work tree ($(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet || echo ', with changes'))"
(cd "$ROOT" && cargo build --release --locked --quiet && cargo build --release --quiet --example gen_queue)
cp "$ROOT/target/release/cmstore" "$WORK/bin/cmstore-head"

baselines=()
for base in "$@"; do
    sha=$(cd "$ROOT" && git rev-parse --short "$base^{commit}")
    tree="$WORK/src-$sha"
    echo "== build $base ($sha)"
    if [ ! -x "$WORK/bin/cmstore-$sha" ]; then
        [ -d "$tree" ] || (cd "$ROOT" && git worktree add --detach --quiet "$tree" "$sha")
        (cd "$tree" && CARGO_TARGET_DIR="$WORK/target-$sha" cargo build --release --quiet)
        cp "$WORK/target-$sha/release/cmstore" "$WORK/bin/cmstore-$sha"
        (cd "$ROOT" && git worktree remove --force "$tree")
    fi
    baselines+=("$WORK/bin/cmstore-$sha")
done
first=${baselines[0]}
# Every binary measured is a fresh copy made now: a file that has sat in the page cache since
# an earlier run (or that the linker wrote) took ~10 more page faults per start and ran up to
# 13 % slower than a fresh copy of itself in the same loop (benches/HISTORY.md, "The guard").
run="$WORK/run"
rm -rf "$run"; mkdir -p "$run"
fresh() { cp "$1" "$run/$(basename "$1")$2"; echo "$run/$(basename "$1")$2"; }
# The order: this tree, the other baselines, the A/A copy, the first baseline last (the
# scripts print each binary's ratio to the last one).
bins=("$(fresh "$WORK/bin/cmstore-head" "")")
for b in "${baselines[@]:1}"; do bins+=("$(fresh "$b" "")"); done
bins+=("$(fresh "$first" "-copy")" "$(fresh "$first" "")")
ls -l "${bins[@]}" | awk '{print "   ", $5, $NF}'

if ! skipped capture; then
    echo "== capture, whole process ($HOOK_ROUNDS rounds each)"
    for event in PostToolUse PreToolUse UserPromptSubmit SessionStart Notification; do
        HOOK_EVENT=$event python3 "$ROOT/benches/hook_interleaved.py" "$HOOK_ROUNDS" "${bins[@]}"
    done
    for event in Stop StopFailure; do
        python3 "$ROOT/benches/stop_interleaved.py" "$HOOK_ROUNDS" "$event" "${bins[@]}"
    done
fi

if ! skipped ingest; then
    echo "== ingest --once ($INGEST_ROUNDS rounds each)"
    queue="$WORK/queue-$LINES.jsonl"
    [ -s "$queue" ] || "$ROOT/target/release/examples/gen_queue" "$queue" "$LINES"
    small="$WORK/small-random-ids-$SMALL_LINES.jsonl"
    [ -s "$small" ] || python3 "$ROOT/benches/small_random_ids.py" "$small" "$SMALL_LINES"
    python3 "$ROOT/benches/ingest_interleaved.py" "$queue" "$INGEST_ROUNDS" "${bins[@]}"
    # The reports at 1M events, each build on the store it just ingested (its own schema).
    echo "== reports at $LINES events ($REPORT_ROUNDS rounds each)"
    stores=()
    for i in "${!bins[@]}"; do
        stores+=("${bins[$i]}=/tmp/ingest-interleaved/$i/c.db")
    done
    python3 "$ROOT/benches/reports_interleaved.py" "$REPORT_ROUNDS" "${stores[@]}"
    python3 "$ROOT/benches/ingest_interleaved.py" "$small" "$INGEST_ROUNDS" "${bins[@]}"
    # The same lines, each Stop carrying the usage of its responses (upserted, and chained).
    usage="$WORK/small-usage-$SMALL_LINES.jsonl"
    [ -s "$usage" ] || python3 "$ROOT/benches/small_random_ids.py" "$usage" "$SMALL_LINES" usage
    python3 "$ROOT/benches/ingest_interleaved.py" "$usage" "$INGEST_ROUNDS" "${bins[@]}"
fi

if ! skipped import; then
    echo "== import of a $IMPORT_MB MB transcript ($IMPORT_ROUNDS rounds each)"
    transcript="$WORK/transcript-$IMPORT_MB.jsonl"
    [ -s "$transcript" ] || python3 "$ROOT/benches/gen_transcript.py" "$transcript" "$IMPORT_MB"
    python3 "$ROOT/benches/import_interleaved.py" "$transcript" "$IMPORT_ROUNDS" "${bins[@]}"
fi
