#!/usr/bin/python3
"""A learning-to-rank model over the benchmark's features, for bench/topk.sh.

    /usr/bin/python3 bench/gen_ltr.py OUT.json [TREES] [OBJECTIVE]

The rows are bench/gen_bench.py's (28 features f0..f27, about 1% missing),
in queries of 50 rows; each row's relevance (0 to 4) is the quintile of
gen_bench.py's latent score within its query, plus noise.  XGBoost
OBJECTIVE (default rank:pairwise), depth 6, eta 0.1, TREES rounds (default
300), seeded.  The model scores the benchmark's table t like the anchor
model does; what it ranks is the same rows.
"""

import os
import sys
import time

import numpy as np
import xgboost as xgb

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_bench  # noqa: E402

N_TRAIN = 100_000
GROUP = 50


def main():
    out = sys.argv[1]
    trees = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    objective = sys.argv[3] if len(sys.argv) > 3 else "rank:pairwise"
    rng = np.random.default_rng(20241202)
    x = gen_bench.make_rows(rng, N_TRAIN)
    z = np.nan_to_num(x.astype(np.float64), nan=0.0)
    s = (np.sin(z[:, 2] - z[:, 5]) * z[:, 0]
         + 0.8 * z[:, 21] * (z[:, 22] > 1.0)
         - 0.5 * z[:, 24] ** 2 / (1 + z[:, 23])
         + np.tanh(z[:, 1] * z[:, 4]) + 0.3 * z[:, 7] * z[:, 10]
         + 0.5 * np.cos(z[:, 8]) * z[:, 26] - 0.4 * z[:, 27])
    s = s + 0.5 * rng.normal(size=len(s))
    rel = np.empty(N_TRAIN, dtype=np.float32)
    for g0 in range(0, N_TRAIN, GROUP):
        q = s[g0:g0 + GROUP]
        rel[g0:g0 + GROUP] = np.searchsorted(np.quantile(q, [0.2, 0.4, 0.6, 0.8]), q)
    names = ["f%d" % j for j in range(gen_bench.N_FEATURES)]
    d = xgb.DMatrix(x, label=rel, feature_names=names, missing=np.nan)
    d.set_group([GROUP] * (N_TRAIN // GROUP))
    params = {"objective": objective, "max_depth": 6, "eta": 0.1,
              "tree_method": "hist", "nthread": 2, "seed": 0}
    t0 = time.time()
    booster = xgb.train(params, d, num_boost_round=trees)
    booster.save_model(out + ".tmp.json")
    os.replace(out + ".tmp.json", out)
    print("gen_ltr: trained %d trees (%s, depth 6) on %d rows in %.0f s -> %s"
          % (trees, objective, N_TRAIN, time.time() - t0, out))


if __name__ == "__main__":
    main()
