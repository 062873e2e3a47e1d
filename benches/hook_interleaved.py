#!/usr/bin/env python3
"""Every hook's whole-process time, binaries interleaved: a 2 KB Claude Code PostToolUse
(no transcript) through `BIN --home HOME capture`, each binary with a home of its own under
/tmp/hook-interleaved, ROUNDS times in turn. Prints median wall ms and minor faults, and each
binary's ratio to the last one given.

Usage: hook_interleaved.py ROUNDS BIN... (the last is the baseline)
"""
import json, os, statistics, subprocess, sys, time

rounds, bins = int(sys.argv[1]), sys.argv[2:]
root = "/tmp/hook-interleaved"
os.makedirs(root, exist_ok=True)
payload = json.dumps({
    "session_id": "bench-session", "transcript_path": "/nonexistent/t.jsonl", "cwd": root,
    "hook_event_name": "PostToolUse", "tool_name": "Bash",
    "tool_input": {"command": "ls -la " + "x" * 800},
    "tool_response": {"stdout": "y" * 1000, "stderr": "", "interrupted": False},
}).encode()
path = os.path.join(root, "post.json")
open(path, "wb").write(payload)
samples = {b: [] for b in bins}
for r in range(rounds):
    for i, b in enumerate(bins):
        home = os.path.join(root, f"home-{i}")
        with open(path, "rb") as stdin:
            t = time.perf_counter()
            p = subprocess.Popen([b, "--home", home, "capture"], stdin=stdin,
                                 stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(p.pid, 0)
            samples[b].append((time.perf_counter() - t, usage.ru_minflt))
        assert status == 0, f"{b} exited with {status}"
base = statistics.median(s[0] for s in samples[bins[-1]])
for b in bins:
    wall = statistics.median(s[0] for s in samples[b])
    faults = statistics.median(s[1] for s in samples[b])
    print(f"{b}: wall median {wall * 1e3:.3f} ms  faults {faults:.0f}  ratio {wall / base:.3f}")
