#!/usr/bin/env python3
"""Writes LINES small queue lines (~250 bytes: a PreToolUse/PostToolUse pair per call, a few
prompts and Stops, 50 sessions) whose ids are random UUIDv4s, as other producers' lines are:
where ingest's id index has no locality. Deterministic for a given LINES.

With `usage` as a third argument, each Stop carries the usage of two responses, as capture
writes it from the transcript: a new one, and the previous Stop's second one again with its
final, larger count (an update of a row ingest stored), so that ingest's usage upserts, and
the chain's notes of each change (store/chain/keyed.rs), are measured.

Usage: small_random_ids.py OUT LINES [usage]
"""
import json, random, sys, uuid

out, lines = sys.argv[1], int(sys.argv[2])
with_usage = len(sys.argv) > 3 and sys.argv[3] == "usage"
rng = random.Random(lines)
hooks = ["PreToolUse", "PostToolUse", "PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"]
with open(out, "w") as f:
    for n in range(lines):
        hook = hooks[n % len(hooks)]
        line = {"v": 1, "id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
                "ts": 1_764_000_000_000 + n * 37, "hookType": hook, "agent": "claude",
                "sessionId": f"session-{(n // 6) % 50:03}", "cwd": "/work/app"}
        if hook.endswith("ToolUse"):
            line["toolName"] = ("Bash", "Read", "Edit")[n % 3]
            line["toolCallId"] = f"toolu_{n // 2}"
        if hook == "Stop" and with_usage:
            def response(k, output):
                return {"messageId": f"msg_{k}", "requestId": f"req_{k}",
                        "model": "claude-sonnet-4-5", "input": 3, "output": output,
                        "cacheWrite": 512, "cacheRead": 20_000, "offset": n, "ts": line["ts"]}
            line["usage"] = [response(n, 150), response(n + 1, 40)]
            if n >= len(hooks):
                line["usage"].append(response(n + 1 - len(hooks), 90))
        f.write(json.dumps(line, separators=(",", ":")) + "\n")
