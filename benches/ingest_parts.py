#!/usr/bin/env python3
"""What each index and trigger costs ingest: `ingest --once` of one queue into a fresh store
with the full schema, and again with one index (or trigger, or group) dropped beforehand, the
variants interleaved round by round. Dropping is safe for a measurement (an index or a trigger
only serves reads or a rollup); the store's tables and their derived rows stay as they are.

Prints per variant the median wall time and CPU time (user + system: steadier than wall
time on a shared machine), each with its difference to the full schema and that difference
as a share of the full figure. An index ingest sets aside for a large backlog
(store/indexes.rs, DEFERRABLE) is dropped before the load anyway, so dropping it measures
only its rebuild at the end. Not among the variants: the partial indexes ingest reads to pair
tool calls (`tool_calls_unpaired`, `tool_calls_in_flight`): without them a 1M-line load took
315 s instead of 11.

Usage: benches/ingest_parts.py BIN QUEUE [ROUNDS]   (e.g. a 1M-line queue from
`benches/ingest.sh`'s WORK directory, or `cargo run --release --example gen_queue`)
"""
import os, shutil, sqlite3, statistics, subprocess, sys, time

BIN, QUEUE = sys.argv[1], sys.argv[2]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 2
WORK = "/tmp/ingest-parts"

# (label, SQL run on the empty store before the load)
VARIANTS = [
    ("full schema", ""),
    ("- events_ts", "DROP INDEX events_ts"),
    ("- events_story", "DROP INDEX events_story"),
    ("- events_gate_calls", "DROP INDEX events_gate_calls"),
    ("- events_gate_findings", "DROP INDEX events_gate_findings"),
    ("- events_turn_prompt", "DROP INDEX events_turn_prompt"),
    ("- events_delegated", "DROP INDEX events_delegated"),
    ("- events_session_id, events_tool_name (deferred)",
     "DROP INDEX events_session_id; DROP INDEX events_tool_name"),
    ("- tool_calls_session_id (deferred)", "DROP INDEX tool_calls_session_id"),
    ("- tool_calls_ts", "DROP INDEX tool_calls_ts"),
    ("- turns_ts, turns_subagent", "DROP INDEX turns_ts; DROP INDEX turns_subagent"),
    ("- daily_sessions_session, sessions_last_seen",
     "DROP INDEX daily_sessions_session; DROP INDEX sessions_last_seen"),
    ("- every index ingest does not read",
     "DROP INDEX events_ts; DROP INDEX events_story; DROP INDEX events_gate_calls; "
     "DROP INDEX events_gate_findings; DROP INDEX events_turn_prompt; "
     "DROP INDEX events_delegated; DROP INDEX events_session_id; DROP INDEX events_tool_name; "
     "DROP INDEX tool_calls_session_id; DROP INDEX tool_calls_tool_name; "
     "DROP INDEX tool_calls_ts; DROP INDEX turns_ts; DROP INDEX turns_subagent; "
     "DROP INDEX daily_sessions_session; DROP INDEX sessions_last_seen"),
]


def run(args):
    """Runs `args` to the end; its CPU seconds (user + system, its threads included)."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    assert status == 0, f"{args} exited with {status}"
    return usage.ru_utime + usage.ru_stime


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    empty_queue = os.path.join(WORK, "empty.jsonl")
    open(empty_queue, "w").close()
    template = os.path.join(WORK, "template.db")
    run([BIN, "--home", WORK, "--db", template, "--queue", empty_queue, "ingest", "--once"])
    times = {label: [] for label, _ in VARIANTS}
    cpu = {label: [] for label, _ in VARIANTS}
    for r in range(ROUNDS):
        for label, sql in VARIANTS:
            home = os.path.join(WORK, "run")
            shutil.rmtree(home, ignore_errors=True)
            os.makedirs(home)
            db = os.path.join(home, "c.db")
            shutil.copy(template, db)
            if sql:
                conn = sqlite3.connect(db)
                conn.executescript(sql)
                conn.close()
            start = time.perf_counter()
            cpu[label].append(run([BIN, "--home", home, "--db", db, "--queue", QUEUE, "ingest",
                                   "--once"]))
            times[label].append(time.perf_counter() - start)
            print(f"round {r + 1} {label}: {times[label][-1]:.2f} s, cpu {cpu[label][-1]:.2f} s",
                  file=sys.stderr)
    full = statistics.median(times["full schema"])
    full_cpu = statistics.median(cpu["full schema"])
    print(f"{'variant':52} {'wall s':>7} {'saves':>6} {'share':>6} {'cpu s':>7} {'saves':>6} "
          f"{'share':>6}")
    for label, _ in VARIANTS:
        m, c = statistics.median(times[label]), statistics.median(cpu[label])
        print(f"{label:52} {m:7.2f} {full - m:6.2f} {100 * (full - m) / full:5.1f}% "
              f"{c:7.2f} {full_cpu - c:6.2f} {100 * (full_cpu - c) / full_cpu:5.1f}%")


main()
