#!/bin/sh
# Idle cost of a follow-mode `cmstore ingest` whose state dir holds workspace files: CPU time
# (utime + stime from /proc/PID/stat) over SECONDS of idle, in a fresh home where FOLDERS
# folders each have 3 Claude Code sessions noted (transcripts present, nothing due), so every
# sweep lists the state dir and reads each workspace file. Linux only (/proc).
#
# Usage: benches/sweep_idle.sh BINARY [SECONDS [FOLDERS]]   (defaults 60 s, 20 folders)
set -eu
BIN=$1
SECS=${2:-60}
FOLDERS=${3:-20}
H=$(mktemp -d)
trap 'rm -rf "$H"' EXIT
mkdir -p "$H/home" "$H/t"
export CMSTORE_HOME="$H/home" HOME="$H"
f=0
while [ $f -lt "$FOLDERS" ]; do
    for s in a b c; do
        T="$H/t/$f-$s.jsonl"
        echo '{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}' >"$T"
        echo "{\"hook_event_name\":\"PostToolUse\",\"session_id\":\"$f-$s\",\"cwd\":\"/p/$f\",\"transcript_path\":\"$T\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"ls\"},\"tool_response\":{\"stdout\":\"x\"}}" |
            "$BIN" capture --agent claude >/dev/null
    done
    f=$((f + 1))
done
"$BIN" ingest 2>"$H/err" &
PID=$!
sleep 5
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
T0=$(ticks)
sleep "$SECS"
T1=$(ticks)
HZ=$(getconf CLK_TCK)
echo "$(ls "$H/home/state" | grep -c '^ws-.*json$') workspace files, $(ls "$H/home/state" | wc -l) state files; over ${SECS} s: $((T1 - T0)) ticks of 1/${HZ} s = $(echo "scale=3; ($T1 - $T0) / $HZ" | bc) s CPU = $(echo "scale=4; ($T1 - $T0) * 100 / $HZ / $SECS" | bc)% of a core"
kill -TERM $PID
wait $PID || true
