#!/usr/bin/python3
"""Models of bench/willump.sh (approximate top-K and cascades).

    /usr/bin/python3 bench/gen_willump_models.py OUTDIR

Features are uniform on [-1, 1], as the benchmark's tables are generated
in SQL (random() * 2 - 1), so the models are trained on the distribution
they score.  Seeded and single-threaded.

    willump_rank.json   reg:squarederror, 50 features, 300 trees, depth 7
    willump_fraud.json  binary:logistic, 20 features, 400 trees, depth 7,
                        about 10% positives
"""

import os
import sys

import numpy as np
import xgboost as xgb

COMMON = {"nthread": 1, "seed": 0, "tree_method": "hist"}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)

    n, nf = 60000, 50
    x = rng.uniform(-1, 1, size=(n, nf))
    y = (2 * x[:, 0] + 1.5 * x[:, 1] * x[:, 2] + np.sin(3 * x[:, 3]) + x[:, 4] ** 2
         + 0.8 * np.cos(2 * x[:, 5]) * x[:, 6] + 0.5 * np.abs(x[:, 7])
         + 0.1 * x[:, 8:].sum(axis=1) + 0.3 * rng.normal(size=n))
    d = xgb.DMatrix(x, label=y, feature_names=["f%d" % i for i in range(nf)])
    b = xgb.train(dict(COMMON, objective="reg:squarederror", max_depth=7, eta=0.05),
                  d, num_boost_round=300)
    b.save_model(os.path.join(out, "willump_rank.json"))

    n, nf = 60000, 20
    x = rng.uniform(-1, 1, size=(n, nf))
    logit = (3 * x[:, 0] + 2 * x[:, 1] * x[:, 2] + 1.5 * np.sin(3 * x[:, 3]) + x[:, 4] ** 2
             + 0.2 * x[:, 5:].sum(axis=1) - 4.0)
    y = (logit + rng.logistic(size=n) > 0).astype(np.float64)
    d = xgb.DMatrix(x, label=y, feature_names=["f%d" % i for i in range(nf)])
    b = xgb.train(dict(COMMON, objective="binary:logistic", max_depth=7, eta=0.05),
                  d, num_boost_round=400)
    b.save_model(os.path.join(out, "willump_fraud.json"))
    print("positives in training: %.3f" % y.mean())


if __name__ == "__main__":
    main()
