#!/usr/bin/env python3
"""Whole-process timings of cmstore reports, two builds side by side, interleaved.

Usage: show_interleaved.py RUNS BASE_BIN BASE_DB NEW_BIN NEW_DB [ARGS...]

Each ARGS is one report's arguments as a single string, e.g.
"show sess-0042 --no-pager" (split as a shell would: quote a SQL text). For each report: one warm-up run of each build, then RUNS rounds,
each running the base build then the new one (so both see the same machine state); prints the
median of each, their ratio, and the load average before and after. Output goes to /dev/null,
as in benches/store.sh. A NEW_DB of "-" times one build only: BASE_BIN on BASE_DB (NEW_BIN is
ignored). Standard library only.
"""

import os
import shlex
import statistics
import subprocess
import sys
import time


def once(binary, db, args):
    # An empty configuration, not the user's (a --config that does not exist is an error).
    open(db + ".none.toml", "a").close()
    cmd = [binary, "--db", db, "--queue", db + ".none.jsonl", "--config", db + ".none.toml"]
    env = dict(os.environ, COLUMNS="100")
    t0 = time.perf_counter()
    subprocess.run(cmd + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env, check=True)
    return (time.perf_counter() - t0) * 1000


def main():
    runs = int(sys.argv[1])
    base_bin, base_db, new_bin, new_db = sys.argv[2:6]
    reports = sys.argv[6:]
    solo = new_db == "-"
    if solo:
        new_db = base_db
        new_bin = base_bin
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for report in reports:
        args = shlex.split(report)
        builds = [(new_bin, new_db)] if solo else [(base_bin, base_db), (new_bin, new_db)]
        for b, d in builds:
            once(b, d, args)
        times = [[] for _ in builds]
        for _ in range(runs):
            for i, (b, d) in enumerate(builds):
                times[i].append(once(b, d, args))
        med = [statistics.median(t) for t in times]
        if solo:
            print(f"{report:<58} {med[0]:8.1f} ms  (min {min(times[0]):.1f}, max {max(times[0]):.1f})")
        else:
            print(f"{report:<58} base {med[0]:8.1f} ms  new {med[1]:8.1f} ms  "
                  f"ratio {med[1] / med[0]:.2f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
