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
# The generated events carry no token usage: USAGE=N (default 1000000) writes N usage rows
# on the server after the pushes, spread over the pushed sessions (one INSERT, its rollup
# triggers included, timed), so that the spend questions read real volumes. ROLLUP_SCALE=K
# (default 10) then copies the rollups, sessions and machines K-1 times as further machines
# and asks again: what the rollups of a team with K times the machines and rows hold, where
# every team question reads (the base tables stay as pushed: 20M events would take ~9 GB of
# `events` alone). The questions are also asked through `cmstore summarize --store`.
#
# WAVES=W (default 1) pushes W waves of MACHINES machines, one after another: the true rows
# of W times the machines. `WAVES=10 USAGE=10000000 ROLLUP_SCALE=1` is the 20M-event team
# (~15 GB of database, ~25 minutes on 2 cores).
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
USAGE=${USAGE:-1000000}
ROLLUP_SCALE=${ROLLUP_SCALE:-10}
WAVES=${WAVES:-1}
mkdir -p "$WORK"

echo "== build (release)"
(cd "$ROOT" && cargo build --release --quiet && cargo build --release --quiet --example gen_queue)
BIN="$ROOT/target/release/cmstore"

echo "== $MACHINES stores of $LINES events"
"$ROOT/target/release/examples/gen_queue" "$WORK/queue.jsonl" "$LINES"
rm -rf "$WORK/base"; mkdir -p "$WORK/base"
"$BIN" --home "$WORK/base" --queue "$WORK/queue.jsonl" ingest --once 2>/dev/null
psql -q "$PGURL/postgres" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" \
    -c "CREATE DATABASE $DB" >/dev/null 2>&1
# The schema first (an empty store's push), so that the timed pushes do not queue behind one
# migration.
rm -rf "$WORK/empty"; mkdir -p "$WORK/empty"; : >"$WORK/empty.jsonl"
"$BIN" --home "$WORK/empty" --queue "$WORK/empty.jsonl" ingest --once 2>/dev/null
"$BIN" --home "$WORK/empty" --queue "$WORK/empty.jsonl" push --url "$URL" >/dev/null 2>&1
psql -q "$URL" -c "TRUNCATE events, sessions, turns, tool_calls, usage, machines" >/dev/null

busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }
hz=$(getconf CLK_TCK)

# One wave: MACHINES fresh copies of the base store (each makes its own machine id on its
# first push) pushing at once; the copies are removed after, so WAVES=10 reaches 20M events
# on the server without ten times the local disk.
push_wave() {
    local wave=$1 before rows
    for i in $(seq "$MACHINES"); do
        rm -rf "$WORK/m$i"; cp -r "$WORK/base" "$WORK/m$i"
    done
    rm -f "$WORK"/time.* "$WORK"/err.*
    echo "== push, wave $wave of $WAVES: $MACHINES at once, content $CONTENT"
    before=$(psql -tA "$URL" -c "SELECT count(*) FROM events")
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
    printf 'wall %.2f s; %d events on the server (%d this wave); %.0f events/s; pushes CPU %.1f s; rest of the machine %.1f s\n' \
        "$wall" "$rows" "$((rows - before))" "$(echo "($rows - $before) / $wall" | bc -l)" \
        "$own" "$(echo "$machine - $own" | bc -l)"
    grep -h "cmstore push:" "$WORK"/err.* | head -2
    if [ "$wave" -lt "$WAVES" ]; then
        for i in $(seq "$MACHINES"); do rm -rf "$WORK/m$i"; done
    fi
}
for wave in $(seq "$WAVES"); do push_wave "$wave"; done

if [ "$USAGE" -gt 0 ]; then
    echo "== $USAGE usage rows written on the server"
    t0=$(date +%s.%N)
    psql -q "$URL" -c "
        INSERT INTO usage (machine_id, message_id, request_id, session_id, agent, sidechain,
                           model, ts, input_tokens, output_tokens, cache_write_tokens,
                           cache_read_tokens)
        SELECT s.machine_id, 'msg-' || s.n || '-' || g, 'req', s.session_id, 'claude',
               (g % 7 = 0)::int,
               (ARRAY['claude-opus-4-5', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'no-price'])[g % 4 + 1],
               s.first_seen + g * 60000, 3 + g % 50, 200 + g % 900, g % 3000, 20000 + g % 9000
        FROM (SELECT machine_id, session_id, first_seen,
                     row_number() OVER (ORDER BY machine_id, session_id) AS n,
                     count(*) OVER () AS sessions FROM sessions) AS s,
             generate_series(1, ceil($USAGE::numeric / s.sessions)::int) AS g
        WHERE (s.n - 1) * ceil($USAGE::numeric / s.sessions) + g <= $USAGE"
    t1=$(date +%s.%N)
    printf 'usage rows: %s in %.2f s\n' "$(psql -tA "$URL" -c "SELECT count(*) FROM usage")" \
        "$(echo "$t1 - $t0" | bc)"
fi

psql -q "$URL" -c "ANALYZE events, sessions, turns, tool_calls, usage, rollup_events, rollup_tools, rollup_usage"
question() {
    local name=$1 sql=$2
    local ms
    ms=$(for _ in 1 2 3 4 5; do
        psql -q "$URL" -c '\timing on' -c "$sql" 2>&1 | awk '/^Time:/ {print $2}'
    done | sort -n | awk '{a[NR]=$1} END {print a[3]}')
    printf '%-40s %10s ms\n' "$name" "$ms"
}
# summarize BY: the whole `cmstore summarize --store` process, median of 5.
summarize() {
    local ms
    ms=$(for _ in 1 2 3 4 5; do
        t0=$(date +%s%N)
        "$BIN" --home "$WORK/base" summarize --store "$URL" --by "$1" --format json >/dev/null
        t1=$(date +%s%N)
        echo "$(( (t1 - t0) / 1000 ))" | awk '{printf "%.1f\n", $1 / 1000}'
    done | sort -n | awk '{a[NR]=$1} END {print a[3]}')
    printf '%-40s %10s ms\n' "cmstore summarize --store --by $1" "$ms"
}
# The dashboard on the team store (`cmstore serve --store`): each endpoint's answer over HTTP,
# median of 5 by curl, each request with an address of its own (the dashboard caches answers
# by address until a push).
dashboard() {
    local out="$WORK/serve.out" port token machine
    "$BIN" --home "$WORK/base" serve --store "$URL" --port 0 >"$out" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do grep -q token= "$out" 2>/dev/null && break; sleep 0.1; done
    port=$(grep -o '127.0.0.1:[0-9]*' "$out" | head -1 | cut -d: -f2)
    token=$(grep -o 'token=[0-9a-f]*' "$out" | head -1 | cut -d= -f2)
    machine=$(psql -tA "$URL" -c "SELECT min(machine_id) FROM machines")
    local n=0
    endpoint() {
        local name=$1 path=$2 ms
        ms=$(for _ in 1 2 3 4 5; do
            n=$((n + 1))
            curl -s -o /dev/null -w '%{time_total}\n' -H "Cookie: cmstore_token_$port=$token" \
                "http://127.0.0.1:$port$path&n=$n"
        done | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[3] * 1000}')
        printf '%-40s %10s ms\n' "serve --store $name" "$ms"
    }
    endpoint "/api/overview (all time)" "/api/overview?since="
    endpoint "/api/tools" "/api/tools?since="
    endpoint "/api/gate" "/api/gate?since="
    endpoint "/api/sessions (newest 200)" "/api/sessions?since="
    endpoint "/api/session (one, its timeline)" "/api/session?id=sess-0042&machine=$machine"
    endpoint "/api/version" "/api/version?"
    kill "$pid"; wait "$pid" 2>/dev/null || true
}
ask() {
    echo "== the team's questions (median of 5)"
    psql -tA "$URL" -c "SELECT 'rows: events ' || (SELECT count(*) FROM events)
        || ', tool calls ' || (SELECT count(*) FROM tool_calls)
        || ', usage ' || (SELECT count(*) FROM usage)
        || ', sessions ' || (SELECT count(*) FROM sessions)
        || ', machines ' || (SELECT count(*) FROM machines) || '; rollup rows: events '
        || (SELECT count(*) FROM rollup_events) || ', tools ' || (SELECT count(*) FROM rollup_tools)
        || ', usage ' || (SELECT count(*) FROM rollup_usage) || ' and '
        || (SELECT count(*) FROM rollup_usage_days) || ' per day'"
    question "spend per user this month" \
        "SELECT user_label, sum(cost_usd) FROM v_daily_usage GROUP BY 1"
    question "spend per day and agent" \
        "SELECT day, agent, sum(responses), sum(cost_usd) FROM v_daily_usage GROUP BY 1, 2"
    question "spend per model (v_usage_models)" "SELECT * FROM v_usage_models"
    question "spend per user (v_usage_users)" "SELECT * FROM v_usage_users"
    question "tools (v_tools)" "SELECT * FROM v_tools"
    question "newest 50 sessions (v_sessions)" \
        "SELECT * FROM v_sessions ORDER BY last_seen DESC LIMIT 50"
    question "events per machine (v_daily_events)" \
        "SELECT machine_id, sum(events) FROM v_daily_events GROUP BY 1"
    question "events per machine, from events" \
        "SELECT machine_id, count(*) FROM events GROUP BY 1"
    question "tools, from tool_calls" \
        "SELECT tool_name, count(*), sum(duration_ms), max(duration_ms) FROM tool_calls GROUP BY 1"
    question "one session's events" \
        "SELECT * FROM events WHERE machine_id = (SELECT min(machine_id) FROM machines) AND session_id = 'sess-0042' ORDER BY seq"
    for by in user machine model day agent tool session; do summarize "$by"; done
    dashboard
}
ask
psql -tA "$URL" -c "SELECT pg_size_pretty(pg_database_size('$DB'))" | sed 's/^/database size: /'

if [ "$ROLLUP_SCALE" -gt 1 ]; then
    echo "== the rollups, sessions and machines copied $((ROLLUP_SCALE - 1)) times as further machines"
    psql -q "$URL" -c "
        BEGIN;
        -- Copied level by level as they are: the second level is copied, not recounted.
        ALTER TABLE rollup_usage DISABLE TRIGGER USER;
        INSERT INTO rollup_usage SELECT machine_id || '-x' || k, session_id, day, agent, model,
            user_label, team_label, responses, input_tokens, output_tokens, cache_write_tokens,
            cache_write_1h_tokens, cache_read_tokens, subagent_responses
            FROM rollup_usage, generate_series(2, $ROLLUP_SCALE) AS k;
        ALTER TABLE rollup_usage ENABLE TRIGGER USER;
        INSERT INTO rollup_usage_days SELECT machine_id || '-x' || k, day, agent, model,
            user_label, team_label, responses, input_tokens, output_tokens, cache_write_tokens,
            cache_write_1h_tokens, cache_read_tokens, subagent_responses
            FROM rollup_usage_days, generate_series(2, $ROLLUP_SCALE) AS k;
        INSERT INTO rollup_session_models SELECT machine_id || '-x' || k, session_id, model, parts
            FROM rollup_session_models, generate_series(2, $ROLLUP_SCALE) AS k;
        INSERT INTO rollup_session_users SELECT machine_id || '-x' || k, session_id, user_label,
            team_label, parts FROM rollup_session_users, generate_series(2, $ROLLUP_SCALE) AS k;
        INSERT INTO rollup_tools SELECT machine_id || '-x' || k, session_id, tool_name, day,
            calls, succeeded, failed, unfinished, total_ms, timed, max_ms, denied, refused,
            abandoned FROM rollup_tools, generate_series(2, $ROLLUP_SCALE) AS k;
        INSERT INTO rollup_events SELECT machine_id || '-x' || k, day, agent, hook_type,
            user_label, team_label, events FROM rollup_events, generate_series(2, $ROLLUP_SCALE) AS k;
        INSERT INTO rollup_gate SELECT machine_id || '-x' || k, day, agent, cwd, user_label,
            team_label, risk, decision, calls, first_ts, last_ts
            FROM rollup_gate, generate_series(2, $ROLLUP_SCALE) AS k;
        INSERT INTO sessions SELECT machine_id || '-x' || k, session_id, agent, model, cwd,
            first_seen, last_seen, events, prompts, tool_uses, tool_failures, stops,
            estimated_tokens, ended, ended_at, user_label, team_label
            FROM sessions, generate_series(2, $ROLLUP_SCALE) AS k;
        INSERT INTO machines SELECT machine_id || '-x' || k, user_label, team_label, host,
            cmstore_version, content, first_push, last_push
            FROM machines, generate_series(2, $ROLLUP_SCALE) AS k;
        COMMIT;
        ANALYZE rollup_usage, rollup_usage_days, rollup_session_models, rollup_session_users,
            rollup_tools, rollup_events, rollup_gate, sessions, machines;"
    ask
fi
echo "work: $WORK"
