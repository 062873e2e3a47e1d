#!/usr/bin/env python3
# Follow-mode latency: time from appending one line to the queue until a read-only query sees
# its row, with `cmstore ingest` following the queue. 50 appends, 100 ms apart.
# Usage: benches/follow_latency.py HOME_DIR path/to/cmstore   (HOME_DIR: an empty directory)
import json, os, sqlite3, subprocess, sys, time, uuid, statistics
home = sys.argv[1]; binary = sys.argv[2]
env = {k: v for k, v in os.environ.items() if not k.startswith("CMSTORE_")}
env["CMSTORE_HOME"] = home
p = subprocess.Popen([binary, "ingest"], env=env, stderr=subprocess.PIPE)
q = os.path.join(home, "hook-queue.jsonl")
time.sleep(0.5)
lat = []
for i in range(50):
    lid = str(uuid.uuid4())
    line = json.dumps({"hookType": "Notification", "timestamp": int(time.time()*1000), "sessionId": "lat", "id": lid, "v": 1}, separators=(",", ":")) + "\n"
    t0 = time.monotonic()
    with open(q, "a") as f:
        f.write(line)
    while True:
        try:
            c = sqlite3.connect(f"file:{home}/cmstore.db?mode=ro", uri=True)
            n = c.execute("select count(*) from events where id = ?", (lid,)).fetchone()[0]
            c.close()
        except sqlite3.Error:
            n = 0
        if n:
            break
        time.sleep(0.002)
    lat.append((time.monotonic() - t0) * 1000)
    time.sleep(0.1)
p.terminate(); p.wait()
lat.sort()
print(f"n={len(lat)} median={statistics.median(lat):.1f} ms p90={lat[int(len(lat)*0.9)]:.1f} ms max={lat[-1]:.1f} ms")
