#!/usr/bin/env python3
"""Replay real Claude Code transcripts as the hooks Claude Code fires, into a cmstore store.

For each transcript (default: the repository's sibling ../shared/fixtures/real/claude-code/transcript-*.jsonl),
in a temporary fake user HOME, the lines are written one by one to a *new* transcript
`$HOME/.claude/projects/-replay/<sessionId>.jsonl` (lines copied byte for byte, their own
`sessionId` kept), and `cmstore capture` is run (stdin = the hook payload, env
CMSTORE_HOME=<store>, HOME=<fake home>) at the points Claude Code would fire a hook.

The session of a transcript (the hooks' `session_id` and the file name) is the `sessionId` of
its last user/assistant line: a resumed session's file carries older lines with older ids,
Claude Code names the file, and fires the hooks, with the current one. `cwd` is the line's own
`cwd` field (else the last seen one).

Rules (isSidechain lines are written but fire no hook):

* typed prompt = a user line whose message.content is a string, or a list with text blocks and
  no tool_result, that is not isMeta / isCompactSummary and does not start with
  "[Request interrupted", "Stop hook feedback:", "<Tool> operation feedback:" (a blocking
  PostToolUse hook's reason: the turn goes on, no hook) or "<local-command" ("<command-..." counts as
  a prompt). Before writing it: end the previous turn (see Stop), then fire UserPromptSubmit
  {session_id, transcript_path, cwd, hook_event_name, prompt}.
* PreToolUse {tool_name, tool_input, tool_use_id} right AFTER writing an assistant line, for
  each of its tool_use blocks.
* PostToolUse {.., tool_response: the tool_result's content} right AFTER writing the user line
  holding the matching tool_result; PostToolUseFailure {.., error: the result's text} instead
  when the tool_result has is_error true. A tool_result with no tool_use seen: no hook.
* Stop {stop_hook_active, last_assistant_message: the turn's last assistant text} when a turn
  ends normally: before the next typed prompt if the turn had assistant output, was not
  interrupted and is not already stopped; at a system line with subtype turn_duration (after
  writing it); and at the end of the transcript if the last turn had output, was not interrupted
  and has no tool call in flight.
* "Stop hook feedback:" user line: a Stop (stop_hook_active false the first time, true when the
  turn was already continued by a Stop hook) BEFORE writing it; the turn goes on, and its later
  Stop carries stop_hook_active true.
* a user line starting "[Request interrupted" (string or text block): the turn ends with NO Stop.
* StopFailure {error: "unknown"} instead of Stop when the turn's last assistant line has
  isApiErrorMessage true.
* SessionEnd {reason: "other"} after the last line of each transcript.

Then `cmstore ingest --once` (same CMSTORE_HOME and HOME).

`retime=True` (check.py --retime) is the one departure from "lines as they are": each line's
`timestamp` is rewritten to the moment it is written, so the transcript's times agree with the
hooks' capture times as in a live session (the old transcripts' own times are months before
the replay, which breaks every match by time between hooks and transcript lines).
"""

from pathlib import Path
import datetime
import glob
import json
import os
import subprocess
import sys

FIXTURES = str(
    Path(__file__).resolve().parents[3] / "shared/fixtures/real/claude-code/transcript-*.jsonl"
)
NOT_PROMPT = ("[Request interrupted", "Stop hook feedback:", "<local-command")


def _text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _user_kind(d):
    """'prompt', 'interrupt', 'feedback', 'tool_result' or 'other' for a user line."""
    c = (d.get("message") or {}).get("content")
    if isinstance(c, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in c):
        return "tool_result"
    if isinstance(c, list) and not any(isinstance(b, dict) and b.get("type") == "text" for b in c):
        return "other"
    text = _text_of(c).lstrip()
    if text.startswith("[Request interrupted"):
        return "interrupt"
    if text.startswith("Stop hook feedback:"):
        return "feedback"
    if " operation feedback:" in text.split("\n", 1)[0]:
        return "other"
    if d.get("isMeta") or d.get("isCompactSummary"):
        return "other"
    if text.startswith(NOT_PROMPT):
        return "other"
    return "prompt"


def _result_text(content):
    if isinstance(content, str):
        return content
    return _text_of(content) if isinstance(content, list) else json.dumps(content)


class Replayer:
    def __init__(self, cmstore, store, home, log=None, retime=False):
        self.cmstore, self.store, self.home = cmstore, store, home
        self.retime = retime
        self.env = dict(os.environ, CMSTORE_HOME=store, HOME=home)
        self.fired = []  # (hook_event_name, session_id)
        self.log = log

    def fire(self, payload):
        r = subprocess.run([self.cmstore, "capture"], input=json.dumps(payload).encode(),
                           env=self.env, capture_output=True)
        if r.returncode != 0:
            print(f"capture {payload['hook_event_name']} exit {r.returncode}: "
                  f"{r.stderr.decode()[:200]}", file=sys.stderr)
        self.fired.append((payload["hook_event_name"], payload["session_id"]))

    def replay(self, path):
        raw = open(path, encoding="utf-8").read().splitlines(keepends=True)
        lines = []
        for l in raw:
            try:
                lines.append((l, json.loads(l)))
            except ValueError:
                lines.append((l, None))
        sid = None
        for _, d in lines:
            if d and d.get("type") in ("user", "assistant") and d.get("sessionId"):
                sid = d["sessionId"]
        sid = sid or os.path.basename(path)
        tdir = os.path.join(self.home, ".claude", "projects", "-replay")
        os.makedirs(tdir, exist_ok=True)
        tpath = os.path.join(tdir, f"{sid}.jsonl")
        out = open(tpath, "a", encoding="utf-8")
        cwd = next((d["cwd"] for _, d in lines if d and d.get("cwd")), "/")
        tools = {}       # tool_use_id -> (name, input)
        in_flight = set()
        turn = None      # dict: output, interrupted, stopped, last_text, api_error, active

        def base(event):
            return {"session_id": sid, "transcript_path": tpath, "cwd": cwd,
                    "hook_event_name": event}

        def stop(feedback=False):
            nonlocal turn
            if turn is None or turn["stopped"] or turn["interrupted"] or not turn["output"]:
                return
            if turn["api_error"] and not feedback:
                p = base("StopFailure")
                p.update(error="unknown", last_assistant_message=turn["last_text"])
            else:
                p = base("Stop")
                p.update(stop_hook_active=turn["active"],
                         last_assistant_message=turn["last_text"])
            self.fire(p)
            if feedback:
                turn["active"] = True
            else:
                turn["stopped"] = True

        def write(line):
            if self.retime and '"timestamp"' in line:
                try:
                    obj = json.loads(line)
                    if "timestamp" in obj:
                        obj["timestamp"] = datetime.datetime.now(datetime.timezone.utc) \
                            .strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
                        line = json.dumps(obj, ensure_ascii=False) + "\n"
                except ValueError:
                    pass
            out.write(line if line.endswith("\n") else line + "\n")
            out.flush()

        for line, d in lines:
            if d is None:
                write(line)
                continue
            if d.get("cwd"):
                cwd = d["cwd"]
            side = bool(d.get("isSidechain"))
            typ = d.get("type")
            if side:
                write(line)
                continue
            if typ == "user":
                kind = _user_kind(d)
                if kind == "prompt":
                    stop()
                    p = base("UserPromptSubmit")
                    p["prompt"] = _text_of(d["message"]["content"])
                    self.fire(p)
                    turn = dict(output=False, interrupted=False, stopped=False, last_text="",
                                api_error=False, active=False)
                    write(line)
                elif kind == "feedback":
                    stop(feedback=True)
                    write(line)
                elif kind == "interrupt":
                    write(line)
                    if turn is not None:
                        turn["interrupted"] = True
                elif kind == "tool_result":
                    write(line)
                    for b in d["message"]["content"]:
                        if not (isinstance(b, dict) and b.get("type") == "tool_result"):
                            continue
                        tid = b.get("tool_use_id")
                        if tid not in tools:
                            continue
                        name, tinput = tools[tid]
                        in_flight.discard(tid)
                        if b.get("is_error"):
                            p = base("PostToolUseFailure")
                            p.update(tool_name=name, tool_input=tinput, tool_use_id=tid,
                                     error=_result_text(b.get("content")))
                        else:
                            p = base("PostToolUse")
                            p.update(tool_name=name, tool_input=tinput, tool_use_id=tid,
                                     tool_response=b.get("content"))
                        self.fire(p)
                    # an interrupt text after a rejected tool call
                    if _text_of(d["message"]["content"]).lstrip().startswith("[Request interrupted") \
                            and turn is not None:
                        turn["interrupted"] = True
                else:
                    write(line)
            elif typ == "assistant":
                write(line)
                if turn is None:
                    turn = dict(output=False, interrupted=False, stopped=False, last_text="",
                                api_error=False, active=False)
                turn["output"] = True
                turn["api_error"] = bool(d.get("isApiErrorMessage"))
                c = (d.get("message") or {}).get("content")
                t = _text_of(c)
                if t:
                    turn["last_text"] = t
                if isinstance(c, list):
                    for b in c:
                        if isinstance(b, dict) and b.get("type") == "tool_use":
                            tools[b["id"]] = (b.get("name"), b.get("input"))
                            in_flight.add(b["id"])
                            p = base("PreToolUse")
                            p.update(tool_name=b.get("name"), tool_input=b.get("input"),
                                     tool_use_id=b["id"])
                            self.fire(p)
            elif typ == "system" and d.get("subtype") == "turn_duration":
                write(line)
                stop()
            else:
                write(line)
        if turn is not None and not in_flight:
            stop()
        p = base("SessionEnd")
        p["reason"] = "other"
        self.fire(p)
        out.close()
        return sid

    def ingest(self):
        r = subprocess.run([self.cmstore, "ingest", "--once"], env=self.env, capture_output=True)
        if r.returncode != 0:
            raise SystemExit(f"ingest failed: {r.stderr.decode()[:500]}")
        return r


def replay_all(cmstore, store, home, pattern=FIXTURES, retime=False):
    os.makedirs(store, exist_ok=True)
    os.makedirs(home, exist_ok=True)
    rp = Replayer(cmstore, store, home, retime=retime)
    files = sorted(glob.glob(pattern), key=lambda p: int(''.join(c for c in os.path.basename(p) if c.isdigit()) or 0))
    sessions = [rp.replay(f) for f in files]
    rp.ingest()
    return rp, sessions


if __name__ == "__main__":
    import argparse
    import collections
    ap = argparse.ArgumentParser()
    ap.add_argument("--cmstore", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--home", required=True)
    a = ap.parse_args()
    rp, sessions = replay_all(a.cmstore, a.store, a.home)
    print(len(sessions), "sessions;", dict(collections.Counter(e for e, _ in rp.fired)))
