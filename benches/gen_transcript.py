#!/usr/bin/env python3
"""A synthetic Claude Code transcript of about SIZE bytes, for benches/usage_import.sh.

Realistic shape: a user prompt, then responses of three lines each (thinking, text, tool_use;
the usage repeated, output_tokens growing as Claude Code streams it), each tool call answered
by a user line holding a tool_result of a few KB. Deterministic (seeded).

Usage: benches/gen_transcript.py OUT [SIZE_MB]   (default 1024)
"""
import json
import random
import sys

out, size = sys.argv[1], int(sys.argv[2] if len(sys.argv) > 2 else 1024) << 20
rng = random.Random(16)
session = "bench-0000-0000-0000-000000000001"
words = "the quick brown fox jumps over the lazy dog while the build runs its tests".split()


def text(n):
    return " ".join(rng.choice(words) for _ in range(n))


def base(kind, uuid, parent):
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": "/w/app",
            "sessionId": session, "version": "2.1.33", "gitBranch": "main", "type": kind,
            "uuid": uuid, "timestamp": "2026-02-08T17:28:33.068Z"}


written, n, parent = 0, 0, None
with open(out, "w") as f:
    while written < size:
        n += 1
        if n % 20 == 1:
            line = base("user", f"u-{n}", parent)
            line["message"] = {"role": "user", "content": text(30)}
            parent = line["uuid"]
            s = json.dumps(line, separators=(",", ":")) + "\n"
            f.write(s)
            written += len(s)
        msg, req = f"msg_{n:012d}", f"req_{n:012d}"
        usage = {"input_tokens": rng.randint(1, 50),
                 "cache_creation_input_tokens": rng.randint(0, 5000),
                 "cache_read_input_tokens": rng.randint(0, 200000),
                 "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                 "output_tokens": 1, "service_tier": "standard"}
        usage["cache_creation"]["ephemeral_5m_input_tokens"] = usage["cache_creation_input_tokens"]
        final = rng.randint(20, 3000)
        blocks = [{"type": "thinking", "thinking": text(60), "signature": "sig"},
                  {"type": "text", "text": text(40)},
                  {"type": "tool_use", "id": f"toolu_{n}", "name": "Bash",
                   "input": {"command": "npm test", "description": "Run the tests"}}]
        for i, block in enumerate(blocks):
            line = base("assistant", f"a-{n}-{i}", parent)
            line["requestId"] = req
            u = dict(usage, output_tokens=final if i == len(blocks) - 1 else i + 1)
            line["message"] = {"model": "claude-sonnet-4-5-20250929", "id": msg, "type": "message",
                               "role": "assistant", "content": [block], "stop_reason": None,
                               "stop_sequence": None, "usage": u}
            parent = line["uuid"]
            s = json.dumps(line, separators=(",", ":")) + "\n"
            f.write(s)
            written += len(s)
        line = base("user", f"r-{n}", parent)
        line["message"] = {"role": "user", "content": [{"tool_use_id": f"toolu_{n}",
                                                         "type": "tool_result",
                                                         "content": text(rng.randint(200, 1200))}]}
        line["toolUseResult"] = {"stdout": "ok", "stderr": "", "interrupted": False}
        parent = line["uuid"]
        s = json.dumps(line, separators=(",", ":")) + "\n"
        f.write(s)
        written += len(s)
print(f"{out}: {written} bytes, {n} responses", file=sys.stderr)
