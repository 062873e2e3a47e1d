#!/usr/bin/env python3
"""`cmstore import` of one transcript into a fresh store, binaries interleaved round by round.
Prints per binary the median wall s, MB/s, CPU s (user + system) and peak RSS, and its ratio to
the last one given (the baseline).

Usage: import_interleaved.py TRANSCRIPT ROUNDS BIN...
  (a transcript from benches/gen_transcript.py; the guard, benches/compare.sh, makes one of
  IMPORT_MB)
"""
import os, shutil, statistics, subprocess, sys, time

transcript, rounds, given = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
# A build from before `import` (a49112a) is named and left out, as the reports leave it out.
bins = []
for b in given:
    has = subprocess.run([b, "import", "--help"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL).returncode == 0
    if has:
        bins.append(b)
    else:
        print(f"import {os.path.basename(transcript)}  {b}: not in this build")
size_mb = os.path.getsize(transcript) / 1e6
root = "/tmp/import-interleaved"
samples = {b: [] for b in bins}
for r in range(rounds):
    for i, b in enumerate(bins):
        home = os.path.join(root, str(i))
        shutil.rmtree(home, ignore_errors=True)
        os.makedirs(home)
        start = time.perf_counter()
        p = subprocess.Popen([b, "--home", home, "import", transcript],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        assert status == 0, f"{b} exited with {status}"
        wall = time.perf_counter() - start
        samples[b].append((wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024))
shutil.rmtree(root, ignore_errors=True)
base = statistics.median(s[0] for s in samples[bins[-1]])
name = os.path.basename(transcript)
for b in bins:
    wall = statistics.median(s[0] for s in samples[b])
    cpu = statistics.median(s[1] for s in samples[b])
    rss = max(s[2] for s in samples[b])
    print(f"import {name}  {b}: {wall:.2f} s  {size_mb / wall:,.0f} MB/s  cpu {cpu:.2f} s  "
          f"peak {rss:.0f} MB  ratio {wall / base:.3f}")
