#!/usr/bin/env python3
"""`cmstore show` against sqlite3 running the same statements, interleaved: how much of show's
time is SQLite reading the session, and how much is cmstore's.

Usage: show_vs_sqlite3.py RUNS BIN DB SESSION [SESSION...]

For each session (a full id): one warm-up of each command, then RUNS rounds of

  - `sqlite3 -readonly DB "select 1"` and `BIN query "select 1"` (the floor of each process),
  - `sqlite3 -readonly DB` running the five statements `cmstore show` runs (the session, its
    own lines, tool calls, turns and usage; written out from `src/read/story.rs`, which is where
    to look if they drift), output to /dev/null,
  - `BIN show SESSION --format json` and `BIN show SESSION --no-pager`,

and prints each one's median, the session's event count, and microseconds per event over each
floor. Output goes to /dev/null; COLUMNS=100. Standard library and the sqlite3 CLI only.
"""

import os
import statistics
import subprocess
import sys
import time

STATEMENTS = """
SELECT session_id, agent, model, cwd, first_seen, last_seen, ended, prompts, turns,
       subagent_turns, tool_uses, tool_failures, estimated_tokens
  FROM v_session_summary WHERE session_id = :session;
SELECT ts, hook_type, prompt,
       CASE hook_type WHEN 'SessionStart' THEN json_extract(entry, '$.source')
           WHEN 'SessionEnd' THEN json_extract(entry, '$.reason')
           WHEN 'PreCompact' THEN json_extract(entry, '$.trigger') END
  FROM events WHERE session_id = :session
   AND hook_type IN ('UserPromptSubmit', 'SessionStart', 'SessionEnd', 'PreCompact')
 ORDER BY ts, seq;
SELECT coalesce(start_ts, end_ts), coalesce(tool_name, '?'), duration_ms, outcome,
       input, risk, decision, delegated_agent, pre_event_id, post_event_id
  FROM tool_calls WHERE session_id = :session;
SELECT ts, prompt, response, model, hook_type = 'SubagentStop', synthetic, turn_id
  FROM turns WHERE session_id = :session;
SELECT ts, turn_id, sidechain, input_tokens, output_tokens, cache_write_tokens,
       cache_read_tokens, cost_usd
  FROM v_usage WHERE session_id = :session ORDER BY ts, message_id;
"""


def timed(cmd, stdin=None):
    env = dict(os.environ, COLUMNS="100")
    t0 = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   env=env, check=True)
    return (time.perf_counter() - t0) * 1000


def main():
    runs = int(sys.argv[1])
    binary, db = sys.argv[2:4]
    open(db + ".none.toml", "a").close()  # an empty configuration, not the user's
    cm = [binary, "--db", db, "--queue", db + ".none.jsonl", "--config", db + ".none.toml"]
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for session in sys.argv[4:]:
        quoted = "'" + session.replace("'", "''") + "'"
        script = (".output /dev/null\n" + STATEMENTS.replace(":session", quoted)).encode()
        events = subprocess.run(
            ["sqlite3", "-readonly", db,
             f"SELECT count(*) FROM events WHERE session_id = {quoted}"],
            capture_output=True, check=True, text=True).stdout.strip()
        commands = {
            "sqlite3: select 1": (["sqlite3", "-readonly", db, "select 1"], None),
            "cmstore: query 'select 1'": (cm + ["query", "select 1"], None),
            "sqlite3: show's five statements": (["sqlite3", "-readonly", db], script),
            "cmstore: show --format json": (cm + ["show", session, "--format", "json"], None),
            "cmstore: show --no-pager": (cm + ["show", session, "--no-pager"], None),
        }
        for cmd, stdin in commands.values():
            timed(cmd, stdin)
        times = {name: [] for name in commands}
        for _ in range(runs):
            for name, (cmd, stdin) in commands.items():
                times[name].append(timed(cmd, stdin))
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"session {session}: {events} events, medians of {runs}")
        for name, ms in med.items():
            floor = med["sqlite3: select 1"] if name.startswith("sqlite3") else \
                med["cmstore: query 'select 1'"]
            per_event = "" if "select 1" in name else \
                f"  {(ms - floor) * 1000 / max(int(events), 1):6.2f} us/event over its floor"
            print(f"  {name:<34} {ms:8.1f} ms{per_event}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
