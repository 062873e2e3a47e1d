#!/bin/sh
# Idle cost of a follow-mode `cmstore ingest`: CPU time (utime + stime from /proc/PID/stat) over
# SECONDS of idle, and its thread count (/proc/PID/status), with a queue of 200 captured events
# already ingested, in a fresh home. Linux only (/proc).
#
# With TRANSCRIPTS=N, the home also holds N small Claude Code transcripts (N/100 projects),
# which the follow imports at its start and then looks at every minute (one `stat` each).
#
# Usage: [TRANSCRIPTS=N] benches/follow_idle.sh BINARY [SECONDS [INGEST OPTIONS...]]
#        (default 60 s)
set -eu
BIN=$1
SECS=${2:-60}
shift
[ $# -gt 0 ] && shift
H=$(mktemp -d)
trap 'rm -rf "$H"' EXIT
mkdir -p "$H/home"
export CMSTORE_HOME="$H/home" HOME="$H"
i=0
while [ $i -lt 200 ]; do
    echo '{"hook_event_name":"PostToolUse","session_id":"s1","cwd":"/tmp","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{"stdout":"x"}}' |
        "$BIN" capture --agent claude >/dev/null
    i=$((i + 1))
done
n=0
while [ "$n" -lt "${TRANSCRIPTS:-0}" ]; do
    dir="$H/.claude/projects/-p$((n / 100))"
    mkdir -p "$dir"
    id=$(printf '00000000-0000-4000-8000-%012d' "$n")
    printf '{"type":"user","uuid":"u%d","sessionId":"%s","timestamp":"2026-12-01T10:00:00Z","message":{"role":"user","content":"hi"}}\n{"type":"assistant","uuid":"a%d","sessionId":"%s","timestamp":"2026-12-01T10:00:01Z","message":{"id":"m%d","model":"claude-sonnet-4-5","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":1,"output_tokens":1}}}\n' \
        "$n" "$id" "$n" "$id" "$n" >"$dir/$id.jsonl"
    n=$((n + 1))
done
"$BIN" ingest "$@" 2>"$H/err" &
PID=$!
sleep 5 # the backlog ingested, the first retention check and heartbeat schedule set
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
T0=$(ticks)
sleep "$SECS"
T1=$(ticks)
HZ=$(getconf CLK_TCK)
THREADS=$(awk '/^Threads:/ {print $2}' "/proc/$PID/status")
echo "over ${SECS} s: $((T1 - T0)) ticks of 1/${HZ} s = $(echo "scale=3; ($T1 - $T0) / $HZ" | bc) s CPU = $(echo "scale=4; ($T1 - $T0) * 100 / $HZ / $SECS" | bc)% of a core; $THREADS threads"
kill -TERM $PID
wait $PID
cat "$H/err"
