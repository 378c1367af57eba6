#!/usr/bin/python3
"""Models of bench/willump.sh (approximate top-K and cascades).

    /usr/bin/python3 bench/gen_willump_models.py OUTDIR [--numeric-only | --text-only]

Features are uniform on [-1, 1], as the benchmark's tables are generated
in SQL (random() * 2 - 1), so the models are trained on the distribution
they score.  Seeded and single-threaded.

    willump_rank.json   reg:squarederror, 50 features, 300 trees, depth 7
    willump_fraud.json  binary:logistic, 20 features, 400 trees, depth 7,
                        about 10% positives

With text (scikit-learn Pipelines exported to hbird pipeline JSON by
scripts/hbird_export_sklearn.py: numeric columns scaled, a text column
through TfidfVectorizer with word unigrams and bigrams, into an XGBoost
model inside the pipeline).  Text is 12 words drawn uniformly from the
VOCAB words w0 .. w299, as bench/willump.sh generates it in SQL:

    willump_rank_text.json   ranking: 10 numeric columns and `title`,
                             reg:squarederror, 300 trees, depth 6
    willump_fraud_text.json  fraud: 10 numeric columns and `memo`,
                             binary:logistic, 300 trees, depth 6
"""

import json
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


VOCAB = 300
N_WORDS = 12


def texts(rng, n):
    w = rng.integers(0, VOCAB, size=(n, N_WORDS))
    return [" ".join("w%d" % v for v in row) for row in w], w


def text_models(out):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
    from hbird_export_sklearn import export
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler
    from xgboost import XGBClassifier, XGBRegressor

    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    n, nf = 40000, 10
    cols = ["f%d" % i for i in range(nf)]

    def frame(x, t):
        d = np.empty((len(t), nf + 1), dtype=object)
        d[:, :nf] = x
        d[:, nf] = t
        return d

    def pipe(est):
        return Pipeline([
            ("pre", ColumnTransformer([
                ("num", StandardScaler(), list(range(nf))),
                ("txt", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True,
                                                max_features=3000), nf)])),
            ("model", est)])

    # ranking: mostly the numeric columns, some signal words
    x = rng.uniform(-1, 1, size=(n, nf))
    t, w = texts(rng, n)
    words = np.zeros((n, VOCAB))
    for i in range(N_WORDS):
        words[np.arange(n), w[:, i]] = 1
    y = (2 * x[:, 0] + 1.5 * x[:, 1] * x[:, 2] + np.sin(3 * x[:, 3]) + x[:, 4] ** 2
         + 0.5 * words[:, :10].sum(axis=1) - 0.5 * words[:, 10:20].sum(axis=1)
         + 0.2 * rng.normal(size=n))
    p = pipe(XGBRegressor(n_estimators=300, max_depth=6, learning_rate=0.05, n_jobs=1,
                          random_state=0, tree_method="hist"))
    p.fit(frame(x, t), y)
    doc = export(p, cols + ["title"], costs={"title": "expensive"})
    with open(os.path.join(out, "willump_rank_text.json"), "w") as f:
        json.dump(doc, f)

    # fraud: rare positives, a few words raise the odds
    x = rng.uniform(-1, 1, size=(n, nf))
    t, w = texts(rng, n)
    words = np.zeros((n, VOCAB))
    for i in range(N_WORDS):
        words[np.arange(n), w[:, i]] = 1
    logit = (3 * x[:, 0] + 2 * x[:, 1] * x[:, 2] + 1.5 * np.sin(3 * x[:, 3])
             + 1.0 * words[:, :8].sum(axis=1) - 4.0)
    y = (logit + rng.logistic(size=n) > 0).astype(int)
    p = pipe(XGBClassifier(n_estimators=300, max_depth=6, learning_rate=0.05, n_jobs=1,
                           random_state=0, tree_method="hist"))
    p.fit(frame(x, t), y)
    doc = export(p, cols + ["memo"], costs={"memo": "expensive"})
    with open(os.path.join(out, "willump_fraud_text.json"), "w") as f:
        json.dump(doc, f)
    print("text fraud positives in training: %.3f" % y.mean())


if __name__ == "__main__":
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    if only != "--text-only":
        main()
    if only != "--numeric-only":
        text_models(sys.argv[1])
