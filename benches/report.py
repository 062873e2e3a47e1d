#!/usr/bin/env python3
"""Summary table and chart for benches/run-all.sh. Standard library only.

Usage: report.py RESULTS_DIR

Reads capture_vs_vstack.tsv, ingest.tsv, scale_ingest.tsv and scale_query.tsv (whichever
exist), prints one summary table, and writes RESULTS_DIR/throughput.svg: ingest lines/s
against backlog size (left) and query/summarize median ms against backlog size (right), both
on a log x axis.
"""

import csv
import math
import os
import statistics
import sys
from collections import defaultdict


def read(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def p90(xs):
    s = sorted(xs)
    return s[min(len(s) - 1, int(0.9 * len(s)))]


def human(n):
    n = float(n)
    for unit, div in (("M", 1e6), ("k", 1e3)):
        if n >= div:
            v = n / div
            return f"{v:g}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{n:g}"


def summary(res):
    cap = read(os.path.join(res, "capture_vs_vstack.tsv"))
    if cap:
        by = defaultdict(list)
        for r in cap:
            by[(r["event"], r["scenario"])].append(float(r["ms"]))
        print("capture (whole processes, interleaved)")
        print(f"  {'event':<12} {'scenario':<9} {'median ms':>10} {'p90 ms':>8} {'vs empty':>9} {'vs cmstore':>11}")
        for ev in ("preToolUse", "postToolUse"):
            med = {s: statistics.median(by[(ev, s)]) for s in ("empty", "cmstore", "vstack")}
            for s in ("empty", "cmstore", "vstack"):
                print(f"  {ev:<12} {s:<9} {med[s]:>10.3f} {p90(by[(ev, s)]):>8.3f} "
                      f"{med[s] / med['empty']:>8.2f}x {med[s] / med['cmstore']:>10.2f}x")
    ing = read(os.path.join(res, "ingest.tsv"))
    if ing:
        lines = None
        qpath = os.path.join(res, "ingest_queue.tsv")
        if os.path.exists(qpath):
            with open(qpath) as f:
                q = dict(line.rstrip("\n").split("\t") for line in f if "\t" in line)
            lines = int(q.get("lines", 0))
        by = defaultdict(list)
        for r in ing:
            by[r["tool"]].append(float(r["seconds"]))
        base = statistics.median(by["sqlite3"]) if by.get("sqlite3") else None
        print(f"ingest ({human(lines) if lines else '?'} lines)")
        print(f"  {'tool':<13} {'runs':>4} {'median s':>9} {'lines/s':>9} {'vs sqlite3':>11}")
        for t, xs in by.items():
            m = statistics.median(xs)
            lps = f"{lines / m:>9.0f}" if lines else f"{'?':>9}"
            ratio = f"{base / m:>10.2f}x" if base else ""
            print(f"  {t:<13} {len(xs):>4} {m:>9.2f} {lps} {ratio}")
    sc = read(os.path.join(res, "scale_ingest.tsv"))
    sq = read(os.path.join(res, "scale_query.tsv"))
    if sc:
        print("growth with backlog size (cmstore ingest --once, then whole-process queries)")
        names = []
        for r in sq:
            if r["query"] not in names:
                names.append(r["query"])
        qm = {(r["lines"], r["query"]): float(r["median_ms"]) for r in sq}
        head = f"  {'lines':>6} {'ingest s':>9} {'lines/s':>8} {'store MB':>9}"
        head += "".join(f" {n + ' ms':>{max(10, len(n) + 3)}}" for n in names)
        print(head)
        for r in sc:
            row = f"  {human(r['lines']):>6} {float(r['ingest_s']):>9.2f} {int(r['lines_per_s']):>8} " \
                  f"{int(r['db_bytes']) / 1e6:>9.0f}"
            row += "".join(f" {qm.get((r['lines'], n), float('nan')):>{max(10, len(n) + 3)}.1f}" for n in names)
            print(row)


def svg(res):
    sc = read(os.path.join(res, "scale_ingest.tsv"))
    sq = read(os.path.join(res, "scale_query.tsv"))
    if not sc:
        return None
    W, H = 960, 420
    panels = [(60, "ingest throughput (lines/s)"), (540, "query / summarize (median ms)")]
    pw, ph, top = 380, 300, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">cmstore against '
           f'backlog size (benches/run-all.sh)</text>']
    sizes = sorted({int(r["lines"]) for r in sc})
    lx0, lx1 = math.log10(min(sizes)), math.log10(max(sizes))
    if lx1 - lx0 < 1e-9:
        lx0, lx1 = lx0 - 0.5, lx1 + 0.5
    pad = 0.08 * (lx1 - lx0)
    lx0, lx1 = lx0 - pad, lx1 + pad
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]

    def frame(x0, title, ylabel_fmt, y_ticks, ymap):
        out.append(f'<rect x="{x0}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>')
        out.append(f'<text x="{x0 + pw / 2}" y="{top - 8}" text-anchor="middle">{title}</text>')
        for s in sizes:
            x = x0 + (math.log10(s) - lx0) / (lx1 - lx0) * pw
            out.append(f'<line x1="{x:.1f}" y1="{top + ph}" x2="{x:.1f}" y2="{top + ph + 5}" stroke="#444"/>')
            out.append(f'<text x="{x:.1f}" y="{top + ph + 18}" text-anchor="middle">{human(s)}</text>')
        out.append(f'<text x="{x0 + pw / 2}" y="{top + ph + 36}" text-anchor="middle">events in the backlog (log scale)</text>')
        for v in y_ticks:
            y = ymap(v)
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x0 + pw}" y2="{y:.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 5}" y="{y + 4:.1f}" text-anchor="end">{ylabel_fmt(v)}</text>')

    def xmap(x0, s):
        return x0 + (math.log10(s) - lx0) / (lx1 - lx0) * pw

    def series(x0, pts, ymap, color, label, li):
        pts = sorted(pts)
        d = " ".join(f"{xmap(x0, s):.1f},{ymap(v):.1f}" for s, v in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="2"/>')
        for s, v in pts:
            out.append(f'<circle cx="{xmap(x0, s):.1f}" cy="{ymap(v):.1f}" r="3.5" fill="{color}"/>')
        ly = top + 14 + 16 * li
        out.append(f'<line x1="{x0 + 10}" y1="{ly - 4}" x2="{x0 + 28}" y2="{ly - 4}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{x0 + 32}" y="{ly}">{label}</text>')

    # Left: lines/s, linear y from 0.
    x0 = panels[0][0]
    lps = [(int(r["lines"]), float(r["lines_per_s"])) for r in sc]
    ymax = max(v for _, v in lps) * 1.25
    step = 10 ** math.floor(math.log10(ymax / 4))
    step *= 2 if ymax / step > 10 else 1
    ticks = [i * step for i in range(int(ymax / step) + 1)]

    def ymap_l(v):
        return top + ph - v / ymax * ph

    frame(x0, panels[0][1], lambda v: f"{v / 1000:g}k", ticks, ymap_l)
    series(x0, lps, ymap_l, colors[0], "cmstore ingest --once", 0)
    for s, v in lps:
        out.append(f'<text x="{xmap(x0, s):.1f}" y="{ymap_l(v) + 16:.1f}" text-anchor="middle" fill="#555">{v / 1000:.1f}k</text>')

    # Right: ms, log y.
    x0 = panels[1][0]
    names = []
    for r in sq:
        if r["query"] not in names:
            names.append(r["query"])
    vals = [float(r["median_ms"]) for r in sq] or [1.0]
    ly0 = math.floor(math.log10(min(vals)))
    ly1 = math.ceil(math.log10(max(vals)) + 0.05)
    if ly1 <= ly0:
        ly1 = ly0 + 1

    def ymap_r(v):
        return top + ph - (math.log10(v) - ly0) / (ly1 - ly0) * ph

    frame(x0, panels[1][1] + " (log scale)", lambda v: f"{v:g}", [10 ** e for e in range(ly0, ly1 + 1)], ymap_r)
    for i, n in enumerate(names):
        pts = [(int(r["lines"]), float(r["median_ms"])) for r in sq if r["query"] == n]
        series(x0, pts, ymap_r, colors[(i + 1) % len(colors)], n, i)
    out.append("</svg>")
    path = os.path.join(res, "throughput.svg")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def main():
    res = sys.argv[1]
    summary(res)
    path = svg(res)
    if path:
        print(f"chart: {path}")


if __name__ == "__main__":
    main()
