#!/usr/bin/python3
"""A fraud-style binary classifier for bench/early_exit.sh.

    /usr/bin/python3 bench/gen_fraud.py OUT.json [TREES] [regularized]

20 numeric features f0..f19, standard normal, 5% missing; about 2% of the
training rows are positive.  binary:logistic, depth 6, eta 0.1, TREES rounds
(default 400), seeded.  "regularized" adds min_child_weight 10 and
lambda 10: smaller leaves for the rare rows late trees fit.  bench/early_exit.sh generates the scoring table in
SQL with the same feature distribution.
"""

import sys

import numpy as np
import xgboost as xgb

N_TRAIN = 100000
N_FEATURES = 20


def main():
    out = sys.argv[1]
    trees = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    regularized = len(sys.argv) > 3 and sys.argv[3] == "regularized"
    rng = np.random.default_rng(7)
    x = rng.normal(size=(N_TRAIN, N_FEATURES)).astype(np.float32)
    z = x.astype(np.float64)
    logit = (-5.2 + 1.4 * z[:, 0] + 0.9 * z[:, 1] * z[:, 2] + 0.8 * np.sin(3 * z[:, 3])
             + 1.2 * (z[:, 4] > 1.2) + 0.4 * z[:, 5] ** 2 - 0.6 * z[:, 6] * (z[:, 7] > 0)
             + 0.3 * z[:, 8])
    y = (rng.random(N_TRAIN) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    x[rng.random(size=x.shape) < 0.05] = np.nan
    names = ["f%d" % i for i in range(N_FEATURES)]
    d = xgb.DMatrix(x, label=y, feature_names=names, missing=np.nan)
    params = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1,
              "tree_method": "hist", "nthread": 2, "seed": 0}
    if regularized:
        params.update({"min_child_weight": 10, "lambda": 10})
    booster = xgb.train(params, d, num_boost_round=trees)
    booster.save_model(out)
    p = booster.predict(d)
    print("positives %.2f%%, predicted positive %.2f%%" % (100 * y.mean(), 100 * (p > 0.5).mean()))


if __name__ == "__main__":
    main()
