#!/usr/bin/env python3
# Usage: interleave.py ROUNDS BINARY... (the last is the baseline). Run gen.py first;
# each run gets a fresh home under /tmp/cold/homes.
# Interleaved cold first hooks: median wall ms and minor faults per binary.
import subprocess, time, tempfile, resource, statistics, sys, os
os.makedirs("/tmp/cold/homes", exist_ok=True)
bins = sys.argv[2:]; rounds = int(sys.argv[1])
payload = open("/tmp/cold/payload.json", "rb").read()
res = {b: ([], [], []) for b in bins}
for r in range(rounds):
    order = bins if r % 2 == 0 else bins[::-1]
    for b in order:
        home = tempfile.mkdtemp(dir="/tmp/cold/homes")
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
        t = time.perf_counter()
        p = subprocess.run([b, "--home", home, "capture"], input=payload, stdout=subprocess.DEVNULL)
        dt = time.perf_counter() - t
        assert p.returncode == 0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        res[b][0].append(dt * 1e3); res[b][1].append(after.ru_minflt - before)
base = statistics.median(res[bins[-1]][0])
for b in bins:
    w, f, _ = res[b]
    print(f"{os.path.basename(b):8} wall median {statistics.median(w):7.3f} ms  ratio {statistics.median(w)/base:.3f}  faults median {statistics.median(f):.0f}")
