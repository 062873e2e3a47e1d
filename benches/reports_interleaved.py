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
    """Seconds the report took; `None` when this build refuses it (an older build without
    one of its options)."""
    none = db + ".none.toml"
    open(none, "a").close()
    start = time.perf_counter()
    done = subprocess.run(
        [binary, "--db", db, "--queue", db + ".none.jsonl", "--config", none] + args,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start if done.returncode == 0 else None


for args in REPORTS:
    # Warm-up (and the migration a build's first read may run); who can run it at all.
    able = [(b, db) for b, db in pairs if once(b, db, args) is not None]
    times = {b: [] for b, _ in able}
    for _ in range(rounds):
        for binary, db in able:
            times[binary].append(once(binary, db, args))
    base_bin = pairs[-1][0]
    base = statistics.median(times[base_bin]) if base_bin in times else None
    for binary, _ in pairs:
        if binary not in times:
            print(f"{' '.join(args):40} {binary}: not in this build")
            continue
        m = statistics.median(times[binary])
        ratio = f"ratio {m / base:.3f}" if base else "no baseline"
        print(f"{' '.join(args):40} {binary}: {m * 1000:7.1f} ms  {ratio}")
