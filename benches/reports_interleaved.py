#!/usr/bin/env python3
"""Whole-process timings of the reports, any number of builds interleaved, each on its own
store (a build reads the store it ingested: its own schema). Output to /dev/null; an empty
configuration. Prints per report and build the median ms and the ratio to the last build.

Usage: reports_interleaved.py ROUNDS BIN=DB... (the last is the baseline)
"""
import os, statistics, subprocess, sys, time

rounds, pairs = int(sys.argv[1]), [a.split("=", 1) for a in sys.argv[2:]]
REPORTS = [
    ["sessions", "--no-pager"],
    ["summarize", "--no-pager"],
    ["summarize", "--by", "day", "--no-pager"],
    ["summarize", "--by", "tool", "--no-pager"],
    ["summarize", "--by", "model", "--no-pager"],
    ["show", "sess-0042", "--no-pager"],
    ["show", "sess-0042", "--format", "json"],
    ["gate", "report"],
    ["status", "--format", "json"],
]


def once(binary, db, args):
    none = db + ".none.toml"
    open(none, "a").close()
    start = time.perf_counter()
    subprocess.run([binary, "--db", db, "--queue", db + ".none.jsonl", "--config", none] + args,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


for args in REPORTS:
    for binary, db in pairs:  # warm-up (and the migration a build's first read may run)
        once(binary, db, args)
    times = {b: [] for b, _ in pairs}
    for _ in range(rounds):
        for binary, db in pairs:
            times[binary].append(once(binary, db, args))
    base = statistics.median(times[pairs[-1][0]])
    for binary, _ in pairs:
        m = statistics.median(times[binary])
        print(f"{' '.join(args):40} {binary}: {m * 1000:7.1f} ms  ratio {m / base:.3f}")
