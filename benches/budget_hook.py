#!/usr/bin/env python3
"""What a `[budget]` costs the hook: `cmstore capture` of a PreToolUse, whole process, in a
home without a budget and in one with three limits (everything, an agent, a project) and a
spend file counted by `ingest --once`, interleaved in one run; and a UserPromptSubmit past
`warn_at` (its warning given once, then the marker found). Medians in ms.

Usage: benches/budget_hook.py BINARY [ROUNDS]   (default 300 rounds)
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

binary = sys.argv[1]
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300


def home(config):
    path = tempfile.mkdtemp(prefix="cmstore-budget-")
    with open(os.path.join(path, "cmstore.toml"), "w") as f:
        f.write(config)
    now = int(time.time() * 1000) - 1000
    line = ('{"hookType":"Stop","timestamp":%d,"sessionId":"s0","cwd":"/w/web","id":'
            '"01a00000-0000-7000-8000-000000000001","v":1,"agent":"claude","usage":[{"messageId":'
            '"m1","model":"claude-sonnet-4-5","input":100000,"output":20000,"cacheWrite":0,'
            '"cacheRead":0,"ts":%d,"offset":1}],"sizeBytes":1,"estimatedTokens":1,'
            '"hookExecutionMs":0}\n') % (now, now)
    with open(os.path.join(path, "hook-queue.jsonl"), "w") as f:
        f.write(line)
    env = dict(os.environ, CMSTORE_HOME=path)
    subprocess.run([binary, "ingest", "--once"], env=env, check=True, stderr=subprocess.DEVNULL)
    return env


plain = home("")
budget = home('[budget]\nday = 1000\nwarn_at = 0.0001\n[budget.agents.codex]\nweek = 50\n'
              '[budget.projects.web]\nmonth = { tokens = 900000000 }\n')
tool = (b'{"hook_event_name":"PreToolUse","session_id":"s1","cwd":"/w/web","tool_name":"Bash",'
        b'"tool_input":{"command":"ls -la"}}')
prompt = (b'{"hook_event_name":"UserPromptSubmit","session_id":"s1","cwd":"/w/web",'
          b'"prompt":"go on"}')
cases = {
    "PreToolUse, no budget": (plain, tool),
    "PreToolUse, 3 limits": (budget, tool),
    "UserPromptSubmit, no budget": (plain, prompt),
    "UserPromptSubmit, 3 limits": (budget, prompt),
}
times = {name: [] for name in cases}
for _ in range(rounds):
    for name, (env, data) in cases.items():
        start = time.perf_counter()
        subprocess.run([binary, "capture", "--agent", "claude"], input=data,
                       stdout=subprocess.DEVNULL, env=env, check=True)
        times[name].append((time.perf_counter() - start) * 1000)
for name, values in times.items():
    print(f"{name:28} median {statistics.median(values):.3f} ms")
