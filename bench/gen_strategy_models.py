#!/usr/bin/python3
"""Models and rows for bench/strategies.sh (the tree-strategy grid).

    /usr/bin/python3 bench/gen_strategy_models.py [datadir]

Use Debian's interpreter (python3-xgboost 1.7.4), not a pyenv one.  Writes
into datadir (default bench/data/strategies/), skipping files already there:

    d{D}_t{T}.json   XGBoost binary:logistic, max_depth D in {2,4,6,8,10},
                     the first T in {10,30,100,500} trees of one 500-round run
                     per depth (hist, eta 0.1), features f0..f27
    rows.f32         65,536 scoring rows: raw float32, row-major, 28 columns,
                     NaN = missing (about 1% of cells)

The data is synthetic and seeded: 21 "low-level" features (exponential,
normal, angles) and 7 nonlinear combinations of them, a nonlinear label
with noise, so that trees grow to their full depth.
"""

import os
import sys
import time

import numpy as np

N_FEATURES = 28
N_TRAIN = 50_000
N_ROWS = 65_536
DEPTHS = (2, 4, 6, 8, 10)
TREES = (10, 30, 100, 500)
MISSING = 0.01


def make_rows(rng, n):
    x = np.empty((n, N_FEATURES), dtype=np.float64)
    for j in range(21):
        if j % 3 == 0:
            x[:, j] = rng.exponential(1.0, n)
        elif j % 3 == 1:
            x[:, j] = rng.normal(0.0, 1.0, n)
        else:
            x[:, j] = rng.uniform(-np.pi, np.pi, n)
    for k in range(7):
        a, b, c = x[:, 3 * k], x[:, 3 * k + 1], x[:, 3 * k + 2]
        x[:, 21 + k] = (np.sqrt(a * (1 + b * b)) * (1 + 0.3 * np.cos(c))
                        + 0.1 * rng.normal(size=n))
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


def main():
    import xgboost as xgb

    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "data", "strategies")
    os.makedirs(out, exist_ok=True)

    rows_path = os.path.join(out, "rows.f32")
    if not os.path.exists(rows_path):
        x = make_rows(np.random.default_rng(7), N_ROWS)
        x.tofile(rows_path + ".tmp")
        os.replace(rows_path + ".tmp", rows_path)

    rng = np.random.default_rng(20240601)
    x = make_rows(rng, N_TRAIN)
    y = label(rng, x)
    names = ["f%d" % j for j in range(N_FEATURES)]
    d = xgb.DMatrix(x, label=y, feature_names=names, missing=np.nan)
    for depth in DEPTHS:
        paths = {t: os.path.join(out, "d%d_t%d.json" % (depth, t)) for t in TREES}
        if all(os.path.exists(p) for p in paths.values()):
            continue
        params = {"objective": "binary:logistic", "tree_method": "hist",
                  "max_depth": depth, "eta": 0.1, "nthread": 2, "seed": 0,
                  "min_child_weight": 0.5}
        t0 = time.time()
        b = xgb.train(params, d, num_boost_round=max(TREES))
        for t, p in paths.items():
            b[0:t].save_model(p + ".tmp.json")
            os.replace(p + ".tmp.json", p)
        print("depth %d: %d trees trained in %.1f s" % (depth, max(TREES),
                                                        time.time() - t0),
              file=sys.stderr)


if __name__ == "__main__":
    main()
