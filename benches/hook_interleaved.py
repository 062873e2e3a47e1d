#!/usr/bin/env python3
"""Every hook's whole-process time, binaries interleaved: a Claude Code hook payload (no
transcript) through `BIN --home HOME capture`, each binary with a home of its own under
/tmp/hook-interleaved, ROUNDS times in turn. Prints median wall ms and minor faults, and each
binary's ratio to the last one given.

The event is HOOK_EVENT (default PostToolUse, a 2 KB payload); also PreToolUse (a command the
gate reads), UserPromptSubmit (a prompt; context injected when there is any), SessionStart
and Notification; and cursor:postToolUse, cursor:preToolUse, Cursor's own payloads of those
(docs/agents.md, "Cursor"), as its installed hook runs them (`--agent cursor --event …`); and
opencode:NAME, the payload cmstore's OpenCode plugin sent in a real run
(tests/fixtures/payloads/opencode-1.18-NAME.json: tool-execute-before-bash,
tool-execute-after-bash, message-updated, …), as the plugin runs it (`--agent opencode`);
and cline:NAME, a payload of Cline 3.0.65 (tests/fixtures/payloads/cline-3.0.65-NAME.json:
pre-tool-use, post-tool-use, …), as cmstore's hook script runs it (`--agent cline`); and
windsurf:NAME, a payload Devin Desktop's Cascade logged
(tests/fixtures/payloads/windsurf-devin-2026-06-NAME.json: pre-run-command, post-write-code,
pre-user-prompt, …), as its installed hook runs it (`--agent windsurf`; it prints nothing);
and kiro:NAME, a payload Kiro 2.16 logged (tests/fixtures/payloads/kiro-2.16-NAME.json:
pre-tool-use, post-tool-use, …), as cmstore's hook file runs it (`--agent kiro`); and
goose:NAME, kimi:NAME, payloads Goose 1.52 and Kimi Code 2.1 gave in runs here
(tests/fixtures/payloads/goose-1.52-NAME.json, kimi-2.1-NAME.json: pre-tool-use,
post-tool-use, …), as cmstore's hooks run them (`--agent goose`, `--agent kimi`).

Usage: [HOOK_EVENT=…] hook_interleaved.py ROUNDS BIN... (the last is the baseline)
"""
import json, os, statistics, subprocess, sys, time

rounds, bins = int(sys.argv[1]), sys.argv[2:]
root = "/tmp/hook-interleaved"
os.makedirs(root, exist_ok=True)
event = os.environ.get("HOOK_EVENT", "PostToolUse")
common = {"session_id": "bench-session", "transcript_path": "/nonexistent/t.jsonl", "cwd": root,
          "hook_event_name": event}
fields = {
    "PostToolUse": {"tool_name": "Bash", "tool_input": {"command": "ls -la " + "x" * 800},
                    "tool_response": {"stdout": "y" * 1000, "stderr": "", "interrupted": False}},
    "PreToolUse": {"tool_name": "Bash", "tool_use_id": "toolu_1",
                   "tool_input": {"command": "git status && cargo test --workspace " + "x" * 200}},
    "UserPromptSubmit": {"prompt": "refactor the parser so that " + "p" * 400},
    "SessionStart": {"source": "startup"},
    "Notification": {"message": "Claude needs your permission to use Bash"},
}.get(event, {})
payload = json.dumps({**common, **fields}).encode()
extra = []
if event.startswith("cursor:"):
    name = event.split(":", 1)[1]
    cursor = {"conversation_id": "bench-conversation", "generation_id": "g1", "model": "default",
              "hook_event_name": name, "cursor_version": "3.7.27", "workspace_roots": [root],
              "tool_name": "Shell", "tool_use_id": "tool_1",
              "tool_input": {"command": "ls -la " + "x" * 800, "cwd": "", "timeout": 30000}}
    if name == "postToolUse":
        cursor["tool_output"] = json.dumps({"output": "y" * 1000, "exitCode": 0})
        cursor["duration"] = 280.475
    payload = json.dumps(cursor).encode()
    extra = ["--agent", "cursor", "--event", name]
    event = "cursor-" + name
fixtures = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures",
                        "payloads")
for agent, version in [("opencode", "1.18"), ("cline", "3.0.65"), ("windsurf", "devin-2026-06"),
                       ("kiro", "2.16"), ("goose", "1.52"), ("kimi", "2.1")]:
    if event.startswith(agent + ":"):
        name = event.split(":", 1)[1]
        payload = open(os.path.join(fixtures, f"{agent}-{version}-{name}.json"), "rb").read()
        extra = ["--agent", agent]
        event = f"{agent}-{name}"
path = os.path.join(root, f"{event}.json")
open(path, "wb").write(payload)
samples = {b: [] for b in bins}
for r in range(rounds):
    for i, b in enumerate(bins):
        home = os.path.join(root, f"home-{i}")
        with open(path, "rb") as stdin:
            t = time.perf_counter()
            p = subprocess.Popen([b, "--home", home, "capture", *extra], stdin=stdin,
                                 stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(p.pid, 0)
            samples[b].append((time.perf_counter() - t, usage.ru_minflt))
        assert status == 0, f"{b} exited with {status}"
base = statistics.median(s[0] for s in samples[bins[-1]])
for b in bins:
    wall = statistics.median(s[0] for s in samples[b])
    faults = statistics.median(s[1] for s in samples[b])
    print(f"{event}  {b}: wall median {wall * 1e3:.3f} ms  faults {faults:.0f}  "
          f"ratio {wall / base:.3f}")
