#!/usr/bin/env python3
"""Control for capture_vs_vstack.py: does what runs between hooks change their start-up cost?

Usage: capture_neighbours.py CMSTORE EMPTY_HOOK VSTACK_PROJECT [RUNS]

For each "neighbour" (nothing, `bash -c true`, vstack's preToolUse hook set, a 130 ms sleep),
runs RUNS iterations of: neighbour, then the empty hook, then `cmstore capture --agent copilot
--event preToolUse`, all on the same ~2 KB payload, and prints the medians (ms) of the empty
hook and of cmstore. Standard library only.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import capture_vs_vstack as cvv  # noqa: E402


def timed(argv, data, cwd=None):
    t0 = time.perf_counter_ns()
    subprocess.run(argv, input=data, stdout=subprocess.DEVNULL, cwd=cwd)
    return (time.perf_counter_ns() - t0) / 1e6


def main():
    cmstore, empty, project = sys.argv[1:4]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    home = tempfile.mkdtemp(prefix="cmstore-capture-home.")
    data = cvv.payload("preToolUse")
    hooks = cvv.vstack_commands(project)["preToolUse"]

    def vstack():
        for _, bash, cwd in hooks:
            timed(["bash", "-c", bash], data, os.path.join(project, cwd))

    neighbours = {
        "nothing": lambda: None,
        "bash -c true": lambda: timed(["bash", "-c", "true"], data),
        "vstack preToolUse set": vstack,
        "sleep 130 ms": lambda: time.sleep(0.13),
    }
    cm = [cmstore, "--home", home, "capture", "--agent", "copilot", "--event", "preToolUse"]
    print(f"{'before each pair':<24} {'empty ms':>9} {'cmstore ms':>11} {'ratio':>6}")
    for name, before in neighbours.items():
        e, c = [], []
        for _ in range(runs):
            before()
            e.append(timed([empty], data))
            c.append(timed(cm, data))
        me, mc = statistics.median(e), statistics.median(c)
        print(f"{name:<24} {me:>9.3f} {mc:>11.3f} {mc / me:>5.2f}x")


if __name__ == "__main__":
    main()
