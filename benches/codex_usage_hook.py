#!/usr/bin/env python3
"""Codex hooks with usage at capture (issue 16): a build against a baseline, interleaved.

Usage: codex_usage_hook.py CMSTORE BASELINE [RUNS]

Writes a Codex rollout (`rollout-<time>-<uuid>.jsonl`, about 2 MB: session_meta, then turns of
turn_context, response_item messages and calls, and a token_count per response) and times two
scenarios, each binary in turn per iteration (interleaved), printing medians and their ratio:

- cold: a Stop hook with a fresh home (no cursor): the cursor reads the rollout's last 1 MB;
- warm: a Stop hook after one turn (about 6 KB, 2 responses) was appended since the cursor.

Standard library only.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

SID = "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"


def turn_lines(n, running):
    out = [{"timestamp": "2026-03-01T10:00:01.000Z", "type": "turn_context",
            "payload": {"cwd": "/w", "model": "gpt-5-codex", "turn_id": f"t{n}"}}]
    for i in range(2):
        out.append({"timestamp": "2026-03-01T10:00:02.000Z", "type": "response_item",
                    "payload": {"type": "message", "role": "assistant",
                                "content": [{"type": "output_text", "text": "x" * 2500}]}})
        last = {"input_tokens": 1200 + i, "cached_input_tokens": 1000, "output_tokens": 30,
                "reasoning_output_tokens": 7, "total_tokens": 1230 + i}
        running += last["total_tokens"]
        total = dict(last, total_tokens=running)
        out.append({"timestamp": "2026-03-01T10:00:03.000Z", "type": "event_msg",
                    "payload": {"type": "token_count", "info": {"total_token_usage": total,
                                "last_token_usage": last, "model_context_window": 258400}}})
    return [json.dumps(l) for l in out], running


def timed(argv, data):
    t0 = time.perf_counter_ns()
    subprocess.run(argv, input=data, stdout=subprocess.DEVNULL, check=True)
    return (time.perf_counter_ns() - t0) / 1e6


def main():
    binaries = {"this": sys.argv[1], "baseline": sys.argv[2]}
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    work = tempfile.mkdtemp(prefix="cmstore-codex-usage.")
    path = os.path.join(work, f"rollout-2026-03-01T10-00-00-{SID}.jsonl")
    meta = {"timestamp": "2026-03-01T10:00:00.000Z", "type": "session_meta",
            "payload": {"id": SID, "cwd": "/w"}}
    lines, running, n = [json.dumps(meta)], 0, 0
    while sum(len(l) + 1 for l in lines) < 2 << 20:
        more, running = turn_lines(n, running)
        lines += more
        n += 1
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    payload = json.dumps({"hook_event_name": "Stop", "session_id": SID, "cwd": "/w",
                          "transcript_path": path, "model": "gpt-5-codex"}).encode()
    times = {(s, b): [] for s in ("cold", "warm") for b in binaries}
    for i in range(runs):
        for name, binary in binaries.items():
            home = tempfile.mkdtemp(dir=work)
            argv = [binary, "--home", home, "capture", "--agent", "codex"]
            times[("cold", name)].append(timed(argv, payload))
            more, running = turn_lines(n + i, running)
            with open(path, "a") as f:
                f.write("\n".join(more) + "\n")
            times[("warm", name)].append(timed(argv, payload))
    print(f"{'scenario':<8} {'this ms':>9} {'baseline ms':>12} {'ratio':>6}")
    for s in ("cold", "warm"):
        a = statistics.median(times[(s, "this")])
        b = statistics.median(times[(s, "baseline")])
        print(f"{s:<8} {a:>9.3f} {b:>12.3f} {a / b:>5.3f}x")


if __name__ == "__main__":
    main()
