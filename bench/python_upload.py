#!/usr/bin/python3
"""The Python client's cost of uploading a large model: peak memory and time.

    pg_virtualenv -t -v 15 /usr/bin/python3 bench/python_upload.py [MB]   (default 50)

Needs hbird installed (take /tmp/hbird-install.lock around it) and
python3-psycopg, python3-psycopg2, python3-xgboost.  Writes an XGBoost JSON
model of about MB megabytes (a 25-tree model's trees repeated: valid, and
every byte of it parsed and compiled by the server), then uploads it with
hbird.upload in a fresh process per method, REPS times each:

  psycopg             a file path: read once into bytes, one binary parameter
  psycopg2            a file path: read and sent in pieces of CHUNK_BYTES
                      through a large object (the default above CHUNK_BYTES)
  psycopg2-one-param  the same with CHUNK_BYTES above the size: one
                      hex-escaped text parameter (what psycopg2 does alone)
  psycopg-booster     an xgboost.Booster loaded from the file (save_raw to
                      UBJSON inside upload)

Each process reports the growth of its peak resident size during the
upload call (VmHWM, reset through /proc/self/clear_refs after imports,
connecting and, for the booster, loading the model, minus VmRSS then) and
the call's wall time.  Prints key=value lines: the median over REPS of
each, and the growth over the size of what is sent (the file, or the
booster's UBJSON).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(HERE, "..", "python")
REPS = int(os.environ.get("BENCH_REPS", "3"))

PROBE = r"""
import os, sys, time
sys.path.insert(0, %(pkg)r)
import hbird, hbird.client, psycopg, psycopg2
def status(key):
    for l in open("/proc/self/status"):
        if l.startswith(key + ":"):
            return int(l.split()[1]) * 1024
method, path = sys.argv[1], sys.argv[2]
if method.startswith("psycopg2"):
    conn = psycopg2.connect(""); conn.autocommit = True
else:
    conn = psycopg.connect("", autocommit=True)
if method == "psycopg2-one-param":
    hbird.client.CHUNK_BYTES = 1 << 31
model = path
if method == "psycopg-booster":
    import xgboost
    model = xgboost.Booster(model_file=path)
hbird.models(conn, as_frame=False)
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")                # the peak (VmHWM) starts again from here
before = status("VmRSS")
t0 = time.perf_counter()
v = hbird.upload(conn, "bench_" + method.replace("-", "_"), model)
t1 = time.perf_counter()
print(v, status("VmHWM") - before, t1 - t0)
"""


def large_model(path, mb):
    import numpy as np
    import xgboost as xgb
    rng = np.random.RandomState(7)
    X = rng.normal(size=(2000, 8)).astype(np.float32)
    y = X[:, 0] * 2 + X[:, 1] ** 2
    b = xgb.train({"max_depth": 6, "nthread": 1, "seed": 1}, xgb.DMatrix(X, label=y), 25)
    doc = json.loads(b.save_raw("json"))
    model = doc["learner"]["gradient_booster"]["model"]
    trees, info = model["trees"], model["tree_info"]
    k = max(1, int(mb * 1e6 / len(json.dumps(trees))))
    model["trees"] = []
    for _ in range(k):
        for t in trees:
            t = dict(t)
            t["id"] = len(model["trees"])
            model["trees"].append(t)
    model["tree_info"] = info * k
    model["gbtree_model_param"]["num_trees"] = str(len(model["trees"]))
    with open(path, "w") as f:
        json.dump(doc, f)
    return len(model["trees"])


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def main():
    mb = float(sys.argv[1]) if len(sys.argv) > 1 else 50
    tmp = tempfile.mkdtemp(prefix="hbird-pyupload-")
    path = os.path.join(tmp, "large.json")
    n_trees = large_model(path, mb)
    size = os.path.getsize(path)
    subprocess.run(["psql", "-X", "-q", "-c", "CREATE EXTENSION IF NOT EXISTS hbird"], check=True)
    import xgboost as xgb
    ubj = len(xgb.Booster(model_file=path).save_raw("ubj"))
    print("# file=%d bytes (as UBJSON: %d) trees=%d reps=%d load=%s"
          % (size, ubj, n_trees, REPS, open("/proc/loadavg").read().split()[0]))
    for method in ("psycopg", "psycopg2", "psycopg2-one-param", "psycopg-booster"):
        grow, secs = [], []
        for _ in range(REPS):
            out = subprocess.run([sys.executable, "-c", PROBE % {"pkg": PKG}, method, path],
                                 capture_output=True, text=True, cwd=tmp)
            if out.returncode != 0:
                sys.stderr.write(out.stderr)
                sys.exit(1)
            _, g, s = out.stdout.split()
            grow.append(int(g))
            secs.append(float(s))
        print("%s_peak_growth_mb=%.1f" % (method, median(grow) / 1e6))
        sent = ubj if method == "psycopg-booster" else size
        print("%s_peak_growth_over_sent=%.2f" % (method, median(grow) / sent))
        print("%s_seconds=%.2f" % (method, median(secs)))
    os.remove(path)
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
