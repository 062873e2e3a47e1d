#!/usr/bin/env python3
"""Stop and StopFailure hooks, whole process, binaries interleaved: each round appends one
Claude Code turn (a prompt, a tool call and its result, an answer: ~3 KB) to each binary's own
transcript, then fires EVENT through `BIN --home HOME capture`, which reads the new bytes.
Every binary reads the same bytes in the same order. Prints median wall ms per binary and
its ratio to the last one given (the baseline).

Usage: stop_interleaved.py ROUNDS EVENT BIN...   (EVENT: Stop or StopFailure)
"""
import json, os, shutil, statistics, subprocess, sys, time

rounds, event, bins = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
root = f"/tmp/stop-interleaved-{event}"
shutil.rmtree(root, ignore_errors=True)
os.makedirs(root)


def turn(n):
    def line(kind, fields):
        base = {"type": kind, "uuid": f"{kind}-{n}-{len(fields)}", "sessionId": "bench",
                "timestamp": "2026-12-06T05:00:00.000Z", "isSidechain": False}
        base.update(fields)
        return json.dumps(base)
    call = f"toolu_{n}"
    return "\n".join([
        line("user", {"uuid": f"p-{n}", "message": {"role": "user", "content": f"prompt {n} " + "p" * 200}}),
        line("assistant", {"message": {"id": f"m{n}a", "role": "assistant", "model": "claude-sonnet-4-5",
             "content": [{"type": "tool_use", "id": call, "name": "Bash", "input": {"command": "ls " + "x" * 300}}],
             "usage": {"input_tokens": 10, "output_tokens": 5}}}),
        line("user", {"message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": call, "content": "y" * 1500}]}}),
        line("assistant", {"message": {"id": f"m{n}b", "role": "assistant", "model": "claude-sonnet-4-5",
             "content": [{"type": "text", "text": "answer " + "z" * 500}],
             "usage": {"input_tokens": 10, "output_tokens": 5}}}),
    ]) + "\n"


samples = {b: [] for b in bins}
for r in range(rounds):
    text = turn(r)
    for i, b in enumerate(bins):
        home = os.path.join(root, f"home-{i}")
        transcript = os.path.join(root, f"t-{i}", ".claude", "projects", "p", "bench.jsonl")
        os.makedirs(os.path.dirname(transcript), exist_ok=True)
        with open(transcript, "a") as f:
            f.write(text)
        payload = {"session_id": "bench", "transcript_path": transcript, "cwd": root,
                   "hook_event_name": event, "stop_hook_active": False}
        if event == "StopFailure":
            payload["error"] = "overloaded"
        t = time.perf_counter()
        subprocess.run([b, "--home", home, "capture"], input=json.dumps(payload).encode(),
                       stdout=subprocess.DEVNULL, check=True)
        samples[b].append(time.perf_counter() - t)
base = statistics.median(samples[bins[-1]])
for b in bins:
    m = statistics.median(samples[b])
    print(f"{event}  {b}: {m * 1000:.3f} ms  ratio {m / base:.3f}x")
