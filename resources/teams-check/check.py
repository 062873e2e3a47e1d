#!/usr/bin/env python3
"""Do the ClickHouse questions of docs/teams.md answer what the SQLite recipes of the same name
(examples/queries/*.sql) answer, on the same data?

1. replay.py replays the real Claude Code transcripts as hooks into a fresh store;
2. `cmstore export otlp --content` sends the store's spans to a loopback OTLP/HTTP receiver;
3. the spans become rows of the clickhouse exporter's `otel_traces`, in chdb (ClickHouse 26.9
   in-process), database `cmstore`;
4. each ClickHouse query, copied verbatim from docs/teams.md, and the SQLite recipe run, and
   their answers are compared per key, with the rows that differ and why.

    pip install chdb-core opentelemetry-proto
    python3 resources/teams-check/check.py --cmstore path/to/cmstore
"""

import argparse
import collections
import os
import re
import sqlite3
import sys
import tempfile

os.environ["TZ"] = "UTC"
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
REPO = os.path.dirname(os.path.dirname(HERE))

import otlp_load  # noqa: E402
import replay  # noqa: E402

QUESTIONS = ["delegations_to_subagents", "failed_tool_calls_per_session", "files_edited_today",
             "prompts_per_hour", "risky_commands", "sessions_without_end", "shell_commands",
             "slowest_tool_calls", "tokens_per_day_and_agent", "tool_failure_rate"]


def doc_queries(path):
    """The ClickHouse queries of the doc's section, by the name in their leading comment."""
    text = open(path, encoding="utf-8").read()
    sec = text.split("### The questions of `examples/queries/`, in ClickHouse", 1)[1]
    block = sec.split("```sql", 1)[1].split("```", 1)[0]
    out = {}
    for part in re.split(r"\n(?=-- [a-z_]+[:( ])", "\n" + block.strip()):
        part = part.strip()
        if not part:
            continue
        name = re.match(r"-- ([a-z_]+)", part).group(1)
        out[name] = part.rstrip().rstrip(";")
    return out


class Ctx:
    def __init__(self, db, sess):
        self.db, self.sess = db, sess

    def sql(self, q, *a):
        return [tuple(r) for r in self.db.execute(q, a).fetchall()]

    def ch(self, q):
        import json
        res = self.sess.query(q, "JSONCompact")
        data = json.loads(res.bytes() or b'{"data":[]}')
        return [tuple(r) for r in data.get("data", [])]


def cmp_maps(a, b):
    """Keys whose values differ: (key, sqlite, clickhouse)."""
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b), key=str) if a.get(k) != b.get(k)]


def show(diffs, n=8):
    lines = [f"      {k}: sqlite={s} clickhouse={c}" for k, s, c in diffs[:n]]
    if len(diffs) > n:
        lines.append(f"      … {len(diffs) - n} more")
    return "\n".join(lines)


# Per-call facts used to explain differences ------------------------------------------------

def call_spans(x):
    """call id -> span row (deduplicated as the doc does) of the execute_tool spans."""
    rows = x.ch("""SELECT SpanAttributes['gen_ai.tool.call.id'], SpanAttributes['gen_ai.tool.name'],
                          SpanAttributes['error.type'], StatusCode, Duration,
                          SpanAttributes['cmstore.hook_type'], SpanAttributes['cmstore.event.id']
                   FROM (SELECT * FROM cmstore.otel_traces
                         WHERE SpanAttributes['gen_ai.operation.name'] = 'execute_tool'
                         ORDER BY Duration DESC LIMIT 1 BY SpanId)""")
    return {r[0]: r for r in rows}


def explain_calls(x, call_ids):
    """Why tool calls of the store have no span: their tool_calls outcome."""
    c = collections.Counter()
    for cid in call_ids:
        r = x.sql("SELECT outcome, post_event_id IS NOT NULL FROM tool_calls WHERE call_key = ?", cid)
        c[f"outcome={r[0][0]}" if r else "no tool_calls row"] += 1
    return dict(c)


# The questions ---------------------------------------------------------------------------

def q_delegations(x, chq, lq):
    s = {(r[0], r[1]): r[2] for r in x.sql(lq)}
    c = {(r[0], r[1]): r[2] for r in x.ch(chq)}
    d = cmp_maps(s, c)
    why = ""
    if d:
        pre = {r[0]: r[1] for r in x.sql("SELECT tool_call_id, delegated_agent FROM events "
                                          "WHERE hook_type='PreToolUse' AND delegated_agent IS NOT NULL")}
        spans = call_spans(x)
        missing = [k for k in pre if k not in spans]
        why = (f"{len(missing)} delegating PreToolUse without an execute_tool span: "
               f"{explain_calls(x, missing)}")
    return s, c, d, why


def q_failed(x, chq, lq):
    s = {r[0]: (r[1], r[2], tuple(sorted((r[3] or "").split(",")))) for r in x.sql(lq)}
    c = {r[0]: (r[1], r[2], tuple(sorted(r[3]))) for r in x.ch(chq)}
    d = cmp_maps(s, c)
    why = ""
    if d:
        spans = call_spans(x)
        parts = []
        for sess, _, _ in d:
            rows = x.sql("SELECT call_key, outcome, success FROM tool_calls WHERE session_id=?", sess)
            nospan = [r[0] for r in rows if r[0] not in spans]
            fail_mismatch = [r[0] for r in rows if r[0] in spans
                             and (r[2] == 0) != (spans[r[0]][2] == 'tool_error')]
            parts.append(f"{sess[:8]}: {len(nospan)} calls without span {explain_calls(x, nospan)}"
                         + (f", failure mismatch {fail_mismatch}" if fail_mismatch else ""))
        why = "; ".join(parts)
    return s, c, d, why


def q_files(x, chq, lq, today=True):
    if not today:
        chq = chq.replace("WHERE toDate(Timestamp) = today()\n        AND ", "WHERE ")
        lq = lq.replace("\n  AND ts >= CAST(strftime('%s', 'now', 'start of day') AS INTEGER) * 1000", "")
        assert "today()" not in chq and "start of day" not in lq
    s = {r[0]: (r[1], r[2]) for r in x.sql(lq)}
    c = {r[0]: (r[1], r[2]) for r in x.ch(chq)}
    d = cmp_maps(s, c)
    why = []
    if d:
        # per call: SQLite's PostToolUse edits vs the spans counted
        pre = x.sql("""SELECT tool_call_id, hook_type, tool_name,
                              json_extract(json_extract(entry,'$.toolInput'),'$.file_path'),
                              json_extract(entry,'$.toolFailed')
                       FROM events WHERE hook_type IN ('PostToolUse','PostToolUseFailure')
                         AND tool_name IN ('Edit','MultiEdit','Write','NotebookEdit')""")
        spans = call_spans(x)
        for cid, hook, tool, path, failed in pre:
            sp = spans.get(cid)
            counted_s = hook == 'PostToolUse'
            counted_c = sp is not None and sp[3] != 'Error'
            if counted_s != counted_c:
                why.append(f"{tool} {cid} {hook} toolFailed={failed} span status={sp and sp[3]} "
                           f"error.type={sp and sp[2]} path={path}")
        for k, sv, cv in d:
            if k in (None, ""):
                why.append(f"file key {k!r}: sqlite NULL vs ClickHouse '' (JSONExtractString "
                           "returns '' not NULL, so coalesce never falls through)")
    return s, c, d, "; ".join(why[:6]) + (f" (+{len(why) - 6})" if len(why) > 6 else "")


def q_prompts(x, chq, lq):
    s = {r[0]: (r[1], r[2]) for r in x.sql(lq)}
    c = {r[0][:13].replace("T", " ") + ":00": (r[1], r[2]) for r in x.ch(chq)}
    # hour keys: SQLite '%Y-%m-%d %H:00'; ClickHouse DateTime 'YYYY-MM-DD HH:00:00'
    c = {k[:16]: v for k, v in c.items()}
    d = cmp_maps(s, c)
    why = ""
    prompts = x.sql("SELECT id, session_id, seq FROM events WHERE hook_type='UserPromptSubmit'")
    with_span = {r[0] for r in x.ch("""SELECT DISTINCT SpanAttributes['cmstore.prompt.event.id']
        FROM cmstore.otel_traces WHERE SpanName LIKE 'invoke_agent %' AND ParentSpanId = ''""")}
    missing = [p for p in prompts if p[0] not in with_span]
    if missing:
        kinds = collections.Counter()
        ex = []
        for pid, sess, seq in missing:
            t = x.sql("SELECT hook_type, outcome, synthetic, turn_key FROM turns WHERE session_id=? "
                      "AND prompt IS NOT NULL AND ts >= (SELECT ts FROM events WHERE id=?) "
                      "ORDER BY ts LIMIT 1", sess, pid)
            nxt = x.sql("SELECT hook_type FROM events WHERE session_id=? AND seq>? AND hook_type IN "
                        "('UserPromptSubmit','Stop','StopFailure','SessionEnd') ORDER BY seq LIMIT 1",
                        sess, seq)
            k = f"next event {nxt[0][0] if nxt else None}"
            kinds[k] += 1
            ex.append(pid)
        why = f"{len(missing)} prompt events begin no exported turn span ({dict(kinds)}); e.g. {ex[:3]}"
    return s, c, d, why


def q_risky(x, chq, lq):
    s = collections.Counter((r[1], r[2], r[3], r[4], r[5]) for r in x.sql(lq))
    c = collections.Counter((r[1], r[2], r[3], r[4], r[5]) for r in x.ch(chq))
    d = cmp_maps(dict(s), dict(c))
    why = ""
    if d:
        pre = x.sql("SELECT tool_call_id, risk, decision FROM events WHERE hook_type='PreToolUse' "
                    "AND json_extract(entry,'$.risk') IS NOT NULL")
        spans = call_spans(x)
        why = f"{sum(1 for p in pre if p[0] not in spans)} flagged PreToolUse without a span: " \
              f"{explain_calls(x, [p[0] for p in pre if p[0] not in spans])}"
    return s, c, d, why


def q_sessions(x, chq, lq):
    s = {r[0]: (r[1], r[5], r[6]) for r in x.sql(lq)}
    c = {r[0]: (r[1], r[5], r[6]) for r in x.ch(chq)}
    d = cmp_maps(s, c)
    # the same session keys without the ended filter: turns and tool uses of v_session_summary
    allv = {r[0]: (r[1], r[2], r[3]) for r in x.sql(
        "SELECT session_id, agent, turns, tool_uses FROM v_session_summary")}
    cnt = {k: (v[0], v[1], v[2]) for k, v in c.items()}
    d2 = cmp_maps(allv, cnt)
    ended = x.sql("SELECT count(*) FROM v_session_summary WHERE ended = 1")[0][0]
    why = (f"SQLite lists only sessions with ended = 0; every replayed session has a SessionEnd "
           f"({ended} ended), which is no span, so ClickHouse lists all {len(c)}. "
           f"Without the filter (agent, turns, tool_uses) vs v_session_summary (agent, turns, "
           f"tool_uses): {len(d2)} differ\n" + show(d2))
    return s, c, d, why


def q_shell(x, chq, lq):
    s = collections.Counter((r[1], r[2], r[3], r[4]) for r in x.sql(lq))
    c = collections.Counter((r[1], r[2], r[3], r[4]) for r in x.ch(chq))
    d = cmp_maps(dict(s), dict(c))
    # per call, with the durations
    sq = x.sql(lq.replace("SELECT strftime(", "SELECT e.tool_call_id, strftime(", 1))
    cq = x.ch(chq.replace("SELECT Timestamp AS at,",
                          "SELECT SpanAttributes['gen_ai.tool.call.id'] AS call_id, Timestamp AS at,", 1))
    sm = {r[0]: (r[5], r[6]) for r in sq}
    cm = {r[0]: (r[5], r[6]) for r in cq}
    only_s = [k for k in sm if k not in cm]
    outcome_diff = [(k, sm[k][0], cm[k][0]) for k in sm if k in cm and sm[k][0] != cm[k][0]]
    dur_diff = [(k, sm[k][1], cm[k][1]) for k in sm if k in cm and sm[k][1] != cm[k][1]]
    why = (f"calls only in SQLite: {len(only_s)} {collections.Counter(sm[k][0] for k in only_s)}; "
           f"outcome differs: {len(outcome_diff)} {outcome_diff[:3]}; "
           f"duration_ms differs: {len(dur_diff)} of {len(cm)} (e.g. {dur_diff[:3]})")
    return s, c, d, why


def q_slowest(x, chq, lq):
    s = [(r[0], r[1], r[2], r[3]) for r in x.sql(lq)]
    c = [(r[0], r[1], float(r[2]), r[3]) for r in x.ch(chq)]
    d = [] if [(a, b, float(e), f) for a, b, e, f in s] == c else \
        [(i, s[i] if i < len(s) else None, c[i] if i < len(c) else None) for i in range(max(len(s), len(c)))
         if (s[i:i + 1] and (s[i][0], s[i][1], float(s[i][2]), s[i][3])) != (c[i:i + 1] and c[i])]
    nz = x.ch("""SELECT countIf(Duration > 0), count(), countIf(SpanAttributes['cmstore.duration_ms'] != '')
                 FROM (SELECT * FROM cmstore.otel_traces WHERE SpanAttributes['gen_ai.operation.name']
                       = 'execute_tool' ORDER BY Duration DESC LIMIT 1 BY SpanId)""")[0]
    st = x.sql("SELECT count(*), sum(c.duration_ms > 0), sum(c.duration_ms IS NOT NULL), "
               "sum(json_extract(e.entry,'$.durationMs') IS NOT NULL OR e.duration_ms IS NOT NULL) "
               "FROM tool_calls c LEFT JOIN events e ON e.id = c.post_event_id")[0]
    why = (f"spans with Duration > 0: {nz[0]} of {nz[1]} (cmstore.duration_ms present on {nz[2]}); "
           f"tool_calls with duration_ms > 0: {st[1]} of {st[0]}, non-NULL {st[2]}, "
           f"reported by the agent {st[3]} — the store times a call Post − Pre, the span only "
           f"from a reported duration (else start = end)")
    return s, c, d, why


def q_tokens(x, chq, lq):
    s = {(r[0], r[1]): r[2] for r in x.sql(lq)}
    c = {(str(r[0]), r[1]): int(r[2]) for r in x.ch(chq)}
    d = cmp_maps(s, c)
    ci = x.ch(chq)
    stop_tok = x.sql("SELECT sum(estimated_tokens) FROM events WHERE hook_type IN ('Stop','StopFailure')")[0][0]
    us = x.sql("SELECT sum(input_tokens+cache_read_tokens+cache_write_tokens), sum(output_tokens) "
               "FROM usage WHERE sidechain = 0")[0]
    why = (f"SQLite: estimated tokens of every event; ClickHouse: of the turn spans only, one "
           f"version per SpanId (all Stop/StopFailure events: {stop_tok}). ClickHouse also sums "
           f"gen_ai.usage: input {sum(int(r[3]) for r in ci)}, output {sum(int(r[4]) for r in ci)} "
           f"(store usage table, main conversation: input+cache {us[0]}, output {us[1]}; the "
           f"spans only cover responses between a turn's prompt and its end)")
    return s, c, d, why


def q_failrate(x, chq, lq):
    s = {r[0]: (r[1], r[2], r[3], r[4]) for r in x.sql(lq)}
    c = {r[0]: (r[1], r[2], r[3], int(r[4]) if r[4] is not None else None) for r in x.ch(chq)}
    d = cmp_maps(s, c)
    d_counts = [k for k, a, b in d if (a or (None,) * 4)[:3] != (b or (None,) * 4)[:3]]
    un = {r[0]: r[1:] for r in x.sql("SELECT tool_name, unfinished, abandoned, denied, refused FROM v_tools")}
    why = (f"{len(d)} tools differ; in calls/failed/pct: {len(d_counts)} "
           f"{[(k, 'unfinished/abandoned/denied/refused=' + str(un.get(k))) for k in d_counts[:5]]}; "
           f"avg_ms: spans have Duration 0 unless a duration was reported")
    return s, c, d, why


HANDLERS = {"delegations_to_subagents": q_delegations, "failed_tool_calls_per_session": q_failed,
            "files_edited_today": q_files, "prompts_per_hour": q_prompts, "risky_commands": q_risky,
            "sessions_without_end": q_sessions, "shell_commands": q_shell,
            "slowest_tool_calls": q_slowest, "tokens_per_day_and_agent": q_tokens,
            "tool_failure_rate": q_failrate}


def summary(m):
    if isinstance(m, (dict, collections.Counter)):
        n = len(m)
        return f"{n} rows" + (f", total {sum(v if isinstance(v, int) else v[0] for v in m.values())}"
                              if m and all(isinstance(v, int) or (isinstance(v, tuple) and isinstance(v[0], int))
                                           for v in m.values()) else "")
    return f"{len(m)} rows"


def structure(x):
    out = []
    orphans = x.ch("""SELECT SpanName, SpanAttributes['cmstore.event.id'], ParentSpanId
        FROM cmstore.otel_traces WHERE ParentSpanId != ''
          AND ParentSpanId NOT IN (SELECT SpanId FROM cmstore.otel_traces)""")
    out.append(f"orphans (ParentSpanId not any SpanId): {len(orphans)}"
               + (f" e.g. {orphans[:3]}" if orphans else ""))
    roots = x.ch("""SELECT uniq(SpanId), count() FROM cmstore.otel_traces
                    WHERE SpanName LIKE 'invoke_agent %' AND ParentSpanId = ''""")[0]
    turns = x.sql("SELECT count(*) FROM turns WHERE hook_type <> 'SubagentStop'")[0][0]
    out.append(f"root invoke_agent: {roots[0]} distinct SpanIds ({roots[1]} spans) vs turns rows "
               f"(not SubagentStop): {turns}")
    tools = x.ch("""SELECT uniq(SpanId), count() FROM cmstore.otel_traces
                    WHERE SpanAttributes['gen_ai.operation.name'] = 'execute_tool'""")[0]
    tc = x.sql("SELECT count(*) FROM tool_calls WHERE outcome IS NOT NULL")[0][0]
    oc = dict(x.sql("SELECT coalesce(outcome,'NULL'), count(*) FROM tool_calls GROUP BY 1"))
    out.append(f"execute_tool: {tools[0]} distinct SpanIds ({tools[1]} spans) vs tool_calls with an "
               f"outcome: {tc} (outcomes {oc})")
    # turns rows -> span ids: the span whose cmstore.event.id is one of the Stop events of the
    # turn (turns.event_id is the row's latest end event)
    sp = x.ch("""SELECT SpanAttributes['cmstore.event.id'], SpanId,
                        SpanAttributes['cmstore.prompt.event.id'], Timestamp + Duration
                 FROM cmstore.otel_traces WHERE SpanName LIKE 'invoke_agent %' AND ParentSpanId = ''""")
    by_event = {r[0]: r for r in sp}
    rows = x.sql("SELECT session_id, turn_key, event_id, outcome FROM turns WHERE hook_type <> 'SubagentStop'")
    by_span = collections.defaultdict(list)
    nospan = []
    for sess, key, ev, oc_ in rows:
        if ev in by_event:
            by_span[by_event[ev][1]].append((sess, key, oc_))
        else:
            nospan.append((sess, key, ev, oc_))
    shared = {k: v for k, v in by_span.items() if len(v) > 1}
    out.append(f"turns rows sharing one span id: {len(shared)} span ids"
               + (f" e.g. {list(shared.items())[:2]}" if shared else ""))
    out.append(f"turns rows whose end event is no span: {len(nospan)}"
               + (f" e.g. {nospan[:3]}" if nospan else ""))
    # spans whose span id no turns row maps to
    mapped = set(by_span)
    extra = {r[1] for r in sp} - mapped
    out.append(f"root span ids no turns row's end event maps to: {len(extra)}")
    return out, shared, nospan, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cmstore", required=True)
    ap.add_argument("--work", default=None, help="work directory (default: a new temp dir)")
    ap.add_argument("--fixtures", default=replay.FIXTURES)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--retime", action="store_true",
                    help="rewrite each transcript line's timestamp to its replay time (see replay.py)")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="teams-check-")
    store, home = os.path.join(work, "store"), os.path.join(work, "home")
    if os.path.exists(os.path.join(store, "cmstore.db")):
        raise SystemExit(f"{store} already holds a store: pass a new --work")
    cmstore = os.path.abspath(a.cmstore)
    blob = open(cmstore, "rb").read()
    missing = [k for k in (b"cmstore.prompt.event.id", b"cmstore.turn.outcome", b"cmstore.delegated_agent")
               if k not in blob]
    if missing:
        print(f"WARNING: {cmstore} lacks {missing}: built before the export of docs/teams.md "
              "(commit d4c02ae); its answers test an older exporter")

    rp, sessions = replay.replay_all(cmstore, store, home, a.fixtures, retime=a.retime)
    fired = collections.Counter(e for e, _ in rp.fired)
    print(f"replayed {len(sessions)} transcripts: {dict(fired)}")

    env = dict(os.environ, CMSTORE_HOME=store, HOME=home)
    with otlp_load.Receiver() as rx:
        r = otlp_load.export(cmstore, env, rx.port)
    print(f"export: exit {r.returncode}; {r.stdout.strip() or r.stderr.strip()}; "
          f"{len(rx.requests)} requests, {len(rx.spans)} spans, receiver errors {rx.errors}")
    if r.returncode != 0:
        raise SystemExit(r.stderr)
    rows = [otlp_load.row(*s) for s in rx.spans]

    from chdb import session as chs
    sess = chs.Session(os.path.join(work, "chdb"))
    otlp_load.load(sess, rows, work)
    db = sqlite3.connect(f"file:{os.path.join(store, 'cmstore.db')}?mode=ro", uri=True)
    x = Ctx(db, sess)
    print(f"chdb: {x.ch('SELECT version(), count() FROM cmstore.otel_traces')[0]}; work dir {work}\n")

    chqs = doc_queries(os.path.join(REPO, "docs", "teams.md"))
    table = []
    for q in QUESTIONS:
        lq = open(os.path.join(REPO, "examples", "queries", f"{q}.sql"), encoding="utf-8").read()
        runs = [(q, {})] + ([(q + " (no date filter)", {"today": False})] if q == "files_edited_today" else [])
        for label, kw in runs:
            try:
                s, c, d, why = HANDLERS[q](x, chqs[q], lq, **kw)
            except Exception as e:  # noqa: BLE001
                table.append((label, "ERROR", repr(e)[:300], False, ""))
                continue
            table.append((label, summary(c), summary(s), not d, why, d))

    print("== per question ==")
    for t in table:
        label, ch, sq, eq, why = t[:5]
        print(f"{label}\n  ClickHouse: {ch} | SQLite: {sq} | {'equal' if eq else 'DIFFERS'}")
        if not eq and len(t) > 5:
            print(show(t[5], 8 if a.verbose else 4))
        if why and (not eq or a.verbose):
            print("  why: " + why)
    print("\n== ids ==")
    lines, *_ = structure(x)
    for l in lines:
        print("  " + l)


if __name__ == "__main__":
    main()
