#!/usr/bin/python3
"""Make the data and the model for bench/run.sh.

    /usr/bin/python3 bench/gen_bench.py [rows] [datadir]

Writes into datadir (default bench/data/), skipping files already there:

    model.json         XGBoost binary:logistic, 500 trees, max_depth 8, hist,
                       trained on 100,000 synthetic rows (features f0..f27)
    one_tree.json      the same training, one tree: the binding step (e2)
    bench_<rows>.f32   the scoring rows: raw float32, row-major, rows x 28
                       (NaN = missing), for bench/xgb_capi.c
    bench_<rows>.csv   the same rows as CSV (header f0..f27, empty = missing)
                       for COPY into PostgreSQL; numbers are repr() of the
                       float32 values, so float8 columns hold them exactly

The data looks a bit like HIGGS: 28 features, some are "low level" (normal,
exponential, angles), some are nonlinear "high level" combinations, and
about 1% of cells are missing.  Everything is seeded and deterministic.
"""

import os
import sys
import time

import numpy as np

N_FEATURES = 28
N_TRAIN = 100_000
N_TREES = 500
MAX_DEPTH = 8
MISSING = 0.01
CHUNK = 100_000


def make_rows(rng, n):
    x = np.empty((n, N_FEATURES), dtype=np.float64)
    # 21 "low-level" features: momenta-like (exponential), etas (normal),
    # phis (uniform angles)
    for j in range(21):
        if j % 3 == 0:
            x[:, j] = rng.exponential(1.0, n)
        elif j % 3 == 1:
            x[:, j] = rng.normal(0.0, 1.0, n)
        else:
            x[:, j] = rng.uniform(-np.pi, np.pi, n)
    # 7 "high-level" features: nonlinear combinations plus noise
    for k in range(7):
        a, b, c = x[:, 3 * k], x[:, 3 * k + 1], x[:, 3 * k + 2]
        x[:, 21 + k] = np.sqrt(a * (1 + b * b)) * (1 + 0.3 * np.cos(c)) + 0.1 * rng.normal(size=n)
    x = x.astype(np.float32)
    x[rng.random(size=x.shape) < MISSING] = np.nan
    return x


def label(rng, x):
    z = np.nan_to_num(x.astype(np.float64), nan=0.0)
    s = (np.sin(z[:, 2] - z[:, 5]) * z[:, 0]
         + 0.8 * z[:, 21] * (z[:, 22] > 1.0)
         - 0.5 * z[:, 24] ** 2 / (1 + z[:, 23])
         + np.tanh(z[:, 1] * z[:, 4]) + 0.3 * z[:, 7] * z[:, 10]
         + 0.5 * np.cos(z[:, 8]) * z[:, 26] - 0.4 * z[:, 27])
    s = s - np.median(s) + 0.8 * rng.normal(size=len(s))
    return (s > 0).astype(np.float32)


def train(path, n_trees=None):
    import xgboost as xgb

    rng = np.random.default_rng(20240601)
    x = make_rows(rng, N_TRAIN)
    y = label(rng, x)
    names = ["f%d" % j for j in range(N_FEATURES)]
    d = xgb.DMatrix(x, label=y, feature_names=names, missing=np.nan)
    params = {"objective": "binary:logistic", "tree_method": "hist",
              "max_depth": MAX_DEPTH, "eta": 0.1, "nthread": 2, "seed": 0,
              "min_child_weight": 1}
    t0 = time.time()
    n_trees = n_trees or N_TREES
    b = xgb.train(params, d, num_boost_round=n_trees)
    b.save_model(path + ".tmp.json")
    os.replace(path + ".tmp.json", path)
    print("gen_bench: trained %d trees (depth %d) on %d rows in %.0f s -> %s"
          % (n_trees, MAX_DEPTH, N_TRAIN, time.time() - t0, path))


def write_rows(rows, f32_path, csv_path):
    # The scoring rows use their own seed, independent of the training rows.
    rng = np.random.default_rng(7_000_000 + rows)
    t0 = time.time()
    header = ",".join("f%d" % j for j in range(N_FEATURES)) + "\n"
    with open(f32_path + ".tmp", "wb") as fb, open(csv_path + ".tmp", "w") as fc:
        fc.write(header)
        left = rows
        while left > 0:
            n = min(CHUNK, left)
            x = make_rows(rng, n)
            fb.write(np.ascontiguousarray(x, dtype="<f4").tobytes())
            # repr(float(float32)) is exact; NaN -> empty cell (NULL)
            xd = x.astype(np.float64).tolist()
            fc.write("".join(
                ",".join("" if v != v else repr(v) for v in row) + "\n" for row in xd))
            left -= n
    os.replace(f32_path + ".tmp", f32_path)
    os.replace(csv_path + ".tmp", csv_path)
    print("gen_bench: wrote %d rows in %.0f s -> %s, %s"
          % (rows, time.time() - t0, f32_path, csv_path))


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    here = os.path.dirname(os.path.abspath(__file__))
    datadir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "data")
    os.makedirs(datadir, exist_ok=True)

    model = os.path.join(datadir, "model.json")
    if not os.path.exists(model):
        train(model)
    else:
        print("gen_bench: using cached %s" % model)

    # the first tree of the same training: step (e2) of bench/run.sh, where
    # reading and binding the rows is nearly all the work
    one_tree = os.path.join(datadir, "one_tree.json")
    if not os.path.exists(one_tree):
        train(one_tree, 1)

    f32_path = os.path.join(datadir, "bench_%d.f32" % rows)
    csv_path = os.path.join(datadir, "bench_%d.csv" % rows)
    if not (os.path.exists(f32_path) and os.path.exists(csv_path)):
        write_rows(rows, f32_path, csv_path)
    else:
        print("gen_bench: using cached %s" % csv_path)


if __name__ == "__main__":
    main()
