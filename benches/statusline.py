#!/usr/bin/env python3
"""`cmstore statusline` whole-process, interleaved with an empty process (`true`) and a
capture of the same size of payload, in one run: the status line must stay well under 5 ms
(it reads the spend file and stdin, never the database).

Usage: benches/statusline.py BINARY [ROUNDS]   (default 300 rounds; medians in ms)
A store with a spend file is made in a temporary home by `BINARY ingest --once`.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

binary = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
home = tempfile.mkdtemp(prefix="cmstore-statusline-")
env = dict(os.environ, CMSTORE_HOME=home)
subprocess.run([binary, "ingest", "--once"], env=env, check=True, stderr=subprocess.DEVNULL)
payload = b'{"session_id":"s","model":{"display_name":"Opus"},"cost":{"total_cost_usd":0.42}}'
cases = {
    "true": ["true"],
    "statusline": [binary, "statusline"],
    "capture Notification": [binary, "capture", "--agent", "claude"],
}
notification = b'{"hook_event_name":"Notification","session_id":"s","message":"hi"}'
times = {name: [] for name in cases}
for _ in range(rounds):
    for name, cmd in cases.items():
        data = notification if name.startswith("capture") else payload
        start = time.perf_counter()
        subprocess.run(cmd, input=data, stdout=subprocess.DEVNULL, env=env, check=True)
        times[name].append((time.perf_counter() - start) * 1000)
for name, values in times.items():
    print(f"{name:22} median {statistics.median(values):.3f} ms")
