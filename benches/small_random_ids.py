#!/usr/bin/env python3
"""Writes LINES small queue lines (~250 bytes: a PreToolUse/PostToolUse pair per call, a few
prompts and Stops, 50 sessions) whose ids are random UUIDv4s, as other producers' lines are:
where ingest's id index has no locality. Deterministic for a given LINES.

Usage: small_random_ids.py OUT LINES
"""
import json, random, sys, uuid

out, lines = sys.argv[1], int(sys.argv[2])
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
        f.write(json.dumps(line, separators=(",", ":")) + "\n")
