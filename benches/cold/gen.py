#!/usr/bin/env python3
# The cold scenario of benches/capture.rs (same lines, same payload) under /tmp/cold:
# t50m.jsonl (50 MB Claude Code transcript), payload.json (2 KB PostToolUse naming it) and
# post2k.json (the same payload, no transcript). benches/HISTORY.md, "The cold first hook's faults".
import json, os, sys
os.makedirs("/tmp/cold", exist_ok=True)
SESSION = "bench-session"
def dumps(v): return json.dumps(v, separators=(',', ':'), ensure_ascii=False)
def usage(n):
    return {"input_tokens": 3 + n % 7, "cache_creation_input_tokens": 812,
        "cache_read_input_tokens": 40211, "output_tokens": 120 + n % 50,
        "cache_creation": {"ephemeral_5m_input_tokens": 812, "ephemeral_1h_input_tokens": 0},
        "service_tier": "standard"}
def turn(n):
    user = f"u-{n}"
    text = "lorem ipsum dolor sit amet " * 40
    lines = [
        {"type":"user","uuid":user,"sessionId":SESSION,"message":{"role":"user","content":f"question {n}: {text}"}},
        {"type":"assistant","uuid":f"a1-{n}","requestId":f"req-{n}-1","message":{"id":f"msg-{n}-1","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"tool_use","id":f"toolu_{n}","name":"Bash","input":{"command":"cargo test"}}],"usage":usage(n)}},
        {"type":"user","uuid":f"r-{n}","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":f"toolu_{n}","content":text}]}},
        {"type":"assistant","uuid":f"a2-{n}","requestId":f"req-{n}-2","message":{"id":f"msg-{n}-2","model":"claude-sonnet-4-5-20250929","role":"assistant","content":[{"type":"text","text":f"answer {n}: {text}"}],"usage":usage(n)}},
    ]
    return "".join(dumps(l) + "\n" for l in lines)
size = 50 * 1024 * 1024
with open("/tmp/cold/t50m.jsonl", "w") as f:
    w = 0; n = 1_000_000
    while w < size:
        c = turn(n); f.write(c); w += len(c.encode()); n += 1
def payload(tp, size):
    v = {"session_id": SESSION, "transcript_path": tp, "cwd": "/home/dev/project",
         "permission_mode": "default", "hook_event_name": "PostToolUse", "tool_name": "Edit",
         "tool_input": {"file_path": "/home/dev/project/src/lib.rs", "old_string": "", "new_string": ""},
         "tool_response": {"filePath": "/home/dev/project/src/lib.rs", "success": True},
         "tool_use_id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV"}
    filler = max(0, size - len(dumps(v))) // 2
    v["tool_input"]["old_string"] = "a" * filler
    v["tool_input"]["new_string"] = "b" * filler
    return dumps(v)
open("/tmp/cold/payload.json", "w").write(payload("/tmp/cold/t50m.jsonl", 2048))
open("/tmp/cold/post2k.json", "w").write(payload("/nonexistent/x.jsonl", 2048))
