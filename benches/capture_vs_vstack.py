#!/usr/bin/env python3
"""Capture latency: cmstore vs an empty hook binary vs vstack's own audit hooks.

Usage: capture_vs_vstack.py CMSTORE EMPTY_HOOK VSTACK_PROJECT RUNS OUT_TSV

VSTACK_PROJECT is a directory where `vstack init --only hook` has rendered
`.github/hooks/*.json`. For each of a Copilot CLI preToolUse and postToolUse payload (~2 KB,
camelCase), one iteration runs, in a rotating order so machine noise hits them alike:

- `empty`: the empty hook binary, payload on stdin;
- `cmstore`: `cmstore --home H capture --agent copilot --event <event>`, payload on stdin;
- `vstack`: every bash command the rendered hook files register for that event, one
  `bash -c <command>` process after another, cwd = the project, payload on stdin each time,
  which is how Copilot CLI runs repository hooks. The set is timed as a whole.

Each sample is the wall time from spawn to exit. Raw samples go to OUT_TSV
(`event, scenario, run, ms`); the summary (median, p90, ratios) is printed.
Standard library only.
"""

import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

EVENTS = ("preToolUse", "postToolUse")


def payload(event: str) -> bytes:
    command = "cargo test --workspace -- --nocapture && " + " ".join(
        f"echo step-{i} src/module_{i}.rs" for i in range(60)
    )
    p = {
        "timestamp": 1764480000000,
        "cwd": "/home/dev/project",
        "sessionId": "0199a7c2-5b1e-7d2a-9f00-2b6f0c1d3e4f",
        "toolName": "bash",
        "toolArgs": json.dumps({"command": command, "description": "run the test suite"}),
    }
    if event == "postToolUse":
        p["toolResult"] = {"resultType": "success", "textResultForLlm": "test result: ok. " * 20}
    data = json.dumps(p).encode()
    return data


def vstack_commands(project: str) -> dict:
    """event -> [(hook file, bash command)] in file order, as rendered by vstack."""
    out = {e: [] for e in EVENTS}
    for path in sorted(glob.glob(os.path.join(project, ".github/hooks/*.json"))):
        with open(path) as f:
            doc = json.load(f)
        for event, actions in doc.get("hooks", {}).items():
            if event not in out:
                continue
            for a in actions:
                if a.get("type") == "command" and a.get("bash"):
                    out[event].append((os.path.basename(path), a["bash"], a.get("cwd", ".")))
    return out


def run(argv, stdin: bytes, cwd=None, env=None) -> None:
    r = subprocess.run(argv, input=stdin, stdout=subprocess.DEVNULL, cwd=cwd, env=env)
    if r.returncode != 0:
        raise SystemExit(f"{argv[:3]} exited with {r.returncode}")


def timed(fn) -> float:
    t0 = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - t0) / 1e6


def p90(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.9 * len(s)))]


def main() -> None:
    cmstore, empty, project, runs, out_tsv = sys.argv[1:6]
    runs = int(runs)
    home = tempfile.mkdtemp(prefix="cmstore-capture-home.")
    hooks = vstack_commands(project)
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("CMSTORE_")]:
        del env[k]
    for e in EVENTS:
        names = ", ".join(n for n, _, _ in hooks[e])
        print(f"   vstack {e}: {len(hooks[e])} hook commands ({names})")
        if not hooks[e]:
            raise SystemExit(f"no vstack hook registered for {e}")

    def scenario(name: str, event: str, data: bytes):
        if name == "empty":
            return lambda: run([empty], data)
        if name == "cmstore":
            return lambda: run(
                [cmstore, "--home", home, "capture", "--agent", "copilot", "--event", event],
                data,
                env=env,
            )

        def vstack():
            for _, bash, cwd in hooks[event]:
                run(["bash", "-c", bash], data, cwd=os.path.join(project, cwd), env=env)

        return vstack

    names = ("empty", "cmstore", "vstack")
    samples = {(e, n): [] for e in EVENTS for n in names}
    jobs = [(e, n, scenario(n, e, payload(e))) for e in EVENTS for n in names]
    for e in EVENTS:
        print(f"   {e} payload: {len(payload(e))} bytes")
    for _, _, fn in jobs:  # warm-up: page cache, log directories, cmstore's queue and config
        for _ in range(3):
            fn()
    for i in range(runs):
        k = i % len(jobs)
        for e, n, fn in jobs[k:] + jobs[:k]:
            samples[(e, n)].append(timed(fn))

    with open(out_tsv, "w") as f:
        f.write("event\tscenario\trun\tms\n")
        for (e, n), xs in samples.items():
            for i, x in enumerate(xs):
                f.write(f"{e}\t{n}\t{i}\t{x:.3f}\n")

    queue = os.path.join(home, "hook-queue.jsonl")
    lines = sum(1 for _ in open(queue)) if os.path.exists(queue) else 0
    print(f"   cmstore queue: {lines} lines (expected {2 * (runs + 3)})")
    print(f"\n{'event':<12} {'scenario':<9} {'hooks':>5} {'median ms':>10} {'p90 ms':>8} "
          f"{'vs empty':>9} {'vstack/cmstore':>15}")
    for e in EVENTS:
        med = {n: statistics.median(samples[(e, n)]) for n in names}
        for n in names:
            xs = samples[(e, n)]
            k = len(hooks[e]) if n == "vstack" else 1
            extra = f"{med['vstack'] / med['cmstore']:>14.2f}x" if n == "vstack" else ""
            print(f"{e:<12} {n:<9} {k:>5} {med[n]:>10.3f} {p90(xs):>8.3f} "
                  f"{med[n] / med['empty']:>8.2f}x {extra}")


if __name__ == "__main__":
    main()
