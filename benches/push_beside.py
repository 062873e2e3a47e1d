#!/usr/bin/env python3
# The hook and ingest paths while a push runs beside them (issue 40: "the local hook and ingest
# paths unchanged in cost while pushing"). Each round, with `[push]` off and then on (a
# running `cmstore ingest` pushes continuously into a fresh PostgreSQL database on loopback,
# `content = "full"`): a fresh store and `cmstore ingest` following its queue; a BACKLOG of
# generated lines, ingested; then, once the pusher is pushing that backlog (with push off:
# after as long a wait), a BURST of other lines appended at once and, at the same moment,
# CAPTURES `cmstore capture` runs of a PostToolUse payload one after another. Measured: the
# time until ingest has the whole burst in the store, and each capture's whole-process time;
# the server's events when the burst is in (fewer than all: the push was still running).
# Interleaved rounds; medians and ratios.
#
# Usage: benches/push_beside.py BACKLOG BURST path/to/cmstore [ROUNDS] [CAPTURES]
#   (BACKLOG, BURST: generated lines with distinct ids, e.g. `gen_queue b.jsonl 200000` and
#    `gen_queue q.jsonl 50000`; PGURL: a role that may create databases, default the test
#    role of tests/cli/common.rs)
import json, os, shutil, sqlite3, statistics, subprocess, sys, tempfile, time

backlog_file, queue_file, binary = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
captures = int(sys.argv[5]) if len(sys.argv) > 5 else 100
pgurl = os.environ.get("PGURL", "postgres://cmstore_test:cmstore_test@127.0.0.1:5432")
backlog = open(backlog_file, "rb").read()
backlog_lines = backlog.count(b"\n")
burst = open(queue_file, "rb").read()
lines = burst.count(b"\n")
payload = json.dumps({
    "session_id": "beside", "hook_event_name": "PostToolUse", "cwd": "/work/app",
    "tool_name": "Bash", "tool_use_id": "toolu_beside",
    "tool_input": {"command": "cargo test " + "x" * 600},
    "tool_response": {"stdout": "ok " * 300, "exit_code": 0},
}).encode()


def psql(*sql):
    for _ in range(30):
        args = ["psql", "-q", f"{pgurl}/postgres"]
        for s in sql:
            args += ["-c", s]
        if subprocess.run(args, capture_output=True).returncode == 0:
            return
        time.sleep(1)
    raise SystemExit("psql failed: " + "; ".join(sql))


def events(db):
    try:
        c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        n = c.execute("SELECT count(*) FROM events").fetchone()[0]
        c.close()
        return n
    except sqlite3.Error:
        return 0


def server_events(url):
    out = subprocess.run(["psql", "-tA", url, "-c", "SELECT count(*) FROM events"],
                         capture_output=True, text=True)
    return int(out.stdout.strip() or 0)


def drain(db, want):
    while events(db) < want:
        time.sleep(0.005)


def run(push):
    home = tempfile.mkdtemp(prefix="cmstore-beside.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CMSTORE_")}
    env["CMSTORE_HOME"] = home
    url = f"{pgurl}/cmstore_beside?sslmode=disable"
    if push:
        psql("DROP DATABASE IF EXISTS cmstore_beside WITH (FORCE)", "CREATE DATABASE cmstore_beside")
    with open(os.path.join(home, "cmstore.toml"), "w") as f:
        f.write(f'[push]\nurl = "{url}"\ncontent = "full"\nenabled = {"true" if push else "false"}\n')
    queue = os.path.join(home, "hook-queue.jsonl")
    open(queue, "wb").close()
    ingest = subprocess.Popen([binary, "ingest"], env=env, stderr=subprocess.DEVNULL)
    db = os.path.join(home, "cmstore.db")
    while not os.path.exists(db):
        time.sleep(0.01)
    time.sleep(1.0)
    # The backlog the pusher then works through.
    with open(queue, "ab") as f:
        f.write(backlog)
    drain(db, backlog_lines)
    # Until the pusher is at it (its look comes every few seconds); as long without a push.
    t0 = time.monotonic()
    while push and server_events(url) == 0:
        time.sleep(0.05)
    waited = time.monotonic() - t0
    if not push:
        time.sleep(run.waited_on or 2.0)
    run.waited_on = waited if push else run.waited_on
    # The measured part, while the push runs: a burst for ingest and captures.
    t0 = time.monotonic()
    with open(queue, "ab") as f:
        f.write(burst)
    took = []
    for _ in range(captures):
        c0 = time.monotonic()
        subprocess.run([binary, "capture", "--agent", "claude"], input=payload, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        took.append((time.monotonic() - c0) * 1000)
    drain(db, backlog_lines + lines + captures)
    drained = time.monotonic() - t0
    pushed = server_events(url) if push else None
    ingest.terminate()
    ingest.wait()
    shutil.rmtree(home, ignore_errors=True)
    return drained, statistics.median(took), sorted(took)[int(len(took) * 0.9)], pushed


run.waited_on = None

results = {False: [], True: []}
for r in range(rounds):
    for push in (False, True):
        results[push].append(run(push))
        d, med, p90, pushed = results[push][-1]
        print(f"round {r + 1} push {'on ' if push else 'off'}: ingest of {lines} more lines "
              f"{d:.2f} s; capture median {med:.2f} ms, p90 {p90:.2f} ms"
              + (f"; on the server by then: {pushed} of {backlog_lines + lines + captures} events"
                 if push else ""), flush=True)
for what, i in (("ingest of the burst, s", 0), ("capture median, ms", 1), ("capture p90, ms", 2)):
    off = statistics.median(x[i] for x in results[False])
    on = statistics.median(x[i] for x in results[True])
    print(f"{what:28} off {off:8.2f}  on {on:8.2f}  ratio {on / off:.3f}x")
