#!/usr/bin/env bash
# Token usage per session: `cmstore import` against ccusage's `session` report on the same
# Claude Code transcripts. Prints one row per session (transcript) with both tools' input,
# output, cache-write and cache-read sums and costs, and whether the token sums agree.
#
# Needs: a built cmstore (CMSTORE=path, default target/release/cmstore, else target/debug),
# node + npm (ccusage 20.0.24 is installed into $WORK/ccu), python3.
#
# Usage: benches/usage_vs_ccusage.sh DIR
#   DIR holds transcript-*.jsonl and, for a session with subagents, transcript-N.subagents/.
#   They are laid out as Claude Code does: projects/-fixtures/<name>.jsonl and
#   projects/-fixtures/<name>/subagents/agent-*.jsonl. WORK=DIR keeps the files there.
set -euo pipefail

SRC=${1:?usage: benches/usage_vs_ccusage.sh DIR-OF-TRANSCRIPTS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${WORK:-$(mktemp -d /tmp/cmstore-usage.XXXXXX)}
BIN=${CMSTORE:-$ROOT/target/release/cmstore}
[ -x "$BIN" ] || BIN=$ROOT/target/debug/cmstore
CCU_VERSION=20.0.24

PROJECTS="$WORK/home/.claude/projects/-fixtures"
rm -rf "$WORK/home" "$WORK"/cm-*
mkdir -p "$PROJECTS"
for f in "$SRC"/transcript-*.jsonl; do
    name=$(basename "$f" .jsonl)
    cp "$f" "$PROJECTS/$name.jsonl"
    if [ -d "$SRC/$name.subagents" ]; then
        mkdir -p "$PROJECTS/$name/subagents"
        cp "$SRC/$name.subagents"/*.jsonl "$PROJECTS/$name/subagents/"
    fi
done

[ -x "$WORK/ccu/node_modules/.bin/ccusage" ] \
    || npm install --silent --prefix "$WORK/ccu" "ccusage@$CCU_VERSION" >/dev/null
echo "== ccusage $CCU_VERSION: HOME=$WORK/home CLAUDE_CONFIG_DIR=$WORK/home/.claude ccusage claude session --json --offline"
HOME="$WORK/home" CLAUDE_CONFIG_DIR="$WORK/home/.claude" \
    "$WORK/ccu/node_modules/.bin/ccusage" claude session --json --offline > "$WORK/ccusage.json"
HOME="$WORK/home" CLAUDE_CONFIG_DIR="$WORK/home/.claude" \
    "$WORK/ccu/node_modules/.bin/ccusage" claude daily --json --offline > "$WORK/ccusage-daily.json"

echo "== cmstore: one store per session, cmstore --home H import <name>.jsonl [<name>/]"
: > "$WORK/cmstore.jsonl"
for f in "$PROJECTS"/*.jsonl; do
    name=$(basename "$f" .jsonl)
    home="$WORK/cm-$name"
    paths=("$f")
    [ -d "$PROJECTS/$name" ] && paths+=("$PROJECTS/$name")
    "$BIN" --home "$home" import "${paths[@]}" 2>/dev/null
    "$BIN" --home "$home" query --format jsonl \
        "select '$name' as session, count(*) as responses, sum(input_tokens) as input,
                sum(output_tokens) as output, sum(cache_write_tokens) as cache_write,
                sum(cache_read_tokens) as cache_read, sum(cost_usd) as cost,
                sum(cost_usd is null) as unpriced from v_usage" >> "$WORK/cmstore.jsonl"
done
"$BIN" --home "$WORK/cm-all" import "$WORK/home/.claude/projects" 2>/dev/null
"$BIN" --home "$WORK/cm-all" query --format jsonl \
    "select day, sum(input_tokens) as input, sum(output_tokens) as output,
            sum(cache_write_tokens) as cache_write, sum(cache_read_tokens) as cache_read,
            sum(cost_usd) as cost from v_usage group by day order by day" > "$WORK/cmstore-daily.jsonl"

python3 - "$WORK" <<'PY'
import json, sys
work = sys.argv[1]
cc = {s["sessionId"]: s for s in json.load(open(f"{work}/ccusage.json"))["sessions"]}
cm = {r["session"]: r for r in map(json.loads, open(f"{work}/cmstore.jsonl"))}
print(f"{'session':14} {'tool':8} {'input':>9} {'output':>8} {'cache_write':>11} {'cache_read':>11} {'cost $':>9}  tokens")
for name in sorted(cm, key=lambda n: int(n.split("-")[1])):
    c, m = cc.get(name), cm[name]
    cost = "n/a" if m["cost"] is None else f"{m['cost']:.4f}"
    if m["unpriced"]:
        cost += f" +{m['unpriced']} unpriced"
    same = c and [c["inputTokens"], c["outputTokens"], c["cacheCreationTokens"], c["cacheReadTokens"]] == \
        [m["input"], m["output"], m["cache_write"], m["cache_read"]]
    print(f"{name:14} {'cmstore':8} {m['input']:>9} {m['output']:>8} {m['cache_write']:>11} {m['cache_read']:>11} {cost:>9}")
    if c:
        print(f"{'':14} {'ccusage':8} {c['inputTokens']:>9} {c['outputTokens']:>8} {c['cacheCreationTokens']:>11} {c['cacheReadTokens']:>11} {c['totalCost']:>9.4f}  {'same' if same else 'DIFFER'}")
print()
print("daily (UTC days, cmstore) vs ccusage daily (its local-time days):")
ccd = {d["date"]: d for d in json.load(open(f"{work}/ccusage-daily.json"))["daily"]}
cmd = {r["day"]: r for r in map(json.loads, open(f"{work}/cmstore-daily.jsonl"))}
for day in sorted(set(ccd) | set(k for k in cmd if k)):
    a, b = cmd.get(day), ccd.get(day)
    fa = f"{a['input']}/{a['output']}/{a['cache_write']}/{a['cache_read']}" if a else "-"
    fb = f"{b['inputTokens']}/{b['outputTokens']}/{b['cacheCreationTokens']}/{b['cacheReadTokens']}" if b else "-"
    print(f"{day}  cmstore {fa:40} ccusage {fb:40} {'same' if fa == fb else 'DIFFER'}")
PY
