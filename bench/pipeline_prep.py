#!/usr/bin/python3
"""Data, models and scikit-learn's own timings for bench/pipeline.sh.

Usage: pipeline_prep.py OUTDIR ROWS

Generates ROWS rows (two numeric columns with NULLs, a 50-value city, an
integer plan, a review of 5-30 words from a 3000-word vocabulary with
some non-ASCII words), trains two scikit-learn pipelines on 20000 other
rows, exports them with scripts/hbird_export_sklearn.py and times
scikit-learn's predict_proba and predict over the ROWS rows (best of 2),
writing:
  OUTDIR/rows.csv        the rows (CSV, NULL = empty)
  OUTDIR/<model>.json    the exported pipelines
  OUTDIR/<model>.p1      scikit-learn's positive-class probability of the first 2000 rows
  OUTDIR/<model>.cls     scikit-learn's predicted class of the first 2000 rows
  OUTDIR/sklearn.kv      <model>_sklearn_s=<seconds> (predict_proba),
                         <model>_sklearn_transform_s=..., <model>_sklearn_predict_s=...
"""
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from hbird_export_sklearn import export  # noqa: E402

from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn import preprocessing as pp  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer, HashingVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402

COLUMNS = ["age", "income", "city", "plan", "review"]


def make(rng, n):
    vocab = ["w%d" % i for i in range(2900)] + ["café%d" % i for i in range(50)] + \
        ["Straße%d" % i for i in range(50)]
    cities = ["city%02d" % i for i in range(50)]
    z = rng.zipf(1.3, size=(n, 30)) % len(vocab)
    lens = rng.randint(5, 31, size=n)
    age = np.round(rng.normal(40, 12, n), 1)
    inc = np.round(rng.lognormal(10, 0.5, n), 2)
    age[rng.rand(n) < 0.05] = np.nan
    inc[rng.rand(n) < 0.05] = np.nan
    city = rng.randint(0, 50, n)
    plan = rng.randint(1, 6, n)
    X = np.empty((n, 5), dtype=object)
    texts = [" ".join(vocab[j] for j in z[i, :lens[i]]) for i in range(n)]
    for i in range(n):
        X[i, 0] = age[i]
        X[i, 1] = inc[i]
        X[i, 2] = cities[city[i]] if rng.rand() > 0.03 else np.nan
        X[i, 3] = float(plan[i])
        X[i, 4] = texts[i]
    score = np.nan_to_num(age, nan=40) / 20 + (city % 7) * 0.3 + \
        np.array([t.count("w1 ") + t.count("w7") for t in texts]) * 0.5
    y = (score + rng.normal(0, 1, n) > np.median(score)).astype(int)
    return X, y


def pipelines():
    yield "pl_linear", Pipeline([
        ("pre", ColumnTransformer([
            ("num", make_pipeline(SimpleImputer(), pp.StandardScaler()), [0, 1]),
            ("cat", make_pipeline(SimpleImputer(strategy="constant", fill_value="none"),
                                  pp.OneHotEncoder(handle_unknown="ignore")), [2]),
            ("plan", pp.OneHotEncoder(handle_unknown="ignore"), [3]),
            ("txt", TfidfVectorizer(ngram_range=(1, 2), max_features=20000, sublinear_tf=True), 4)])),
        ("clf", LogisticRegression(max_iter=500))])
    yield "pl_forest", Pipeline([
        ("pre", ColumnTransformer([
            ("num", SimpleImputer(), [0, 1]),
            ("cat", make_pipeline(SimpleImputer(strategy="constant", fill_value="none"),
                                  pp.OneHotEncoder(handle_unknown="ignore")), [2]),
            ("txt", HashingVectorizer(n_features=2 ** 18), 4)])),
        ("clf", RandomForestClassifier(n_estimators=50, max_depth=10, random_state=0, n_jobs=1))])


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    rng = np.random.RandomState(1)
    Xtr, ytr = make(rng, 20000)
    X, _ = make(rng, n)
    with open(os.path.join(out, "rows.csv"), "w") as f:
        for i in range(n):
            r = X[i]
            cells = ["" if isinstance(v, float) and np.isnan(v) else
                     (str(int(v)) if j == 3 else repr(v) if j < 2 else v) for j, v in enumerate(r)]
            f.write("%d,%s\n" % (i, ",".join(cells)))
    kv = []
    for name, pipe in pipelines():
        pipe.fit(Xtr, ytr)
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(export(pipe, columns=COLUMNS), f)
        best = best_t = best_c = 1e9
        for _ in range(2):
            t0 = time.perf_counter()
            p = pipe.predict_proba(X)
            best = min(best, time.perf_counter() - t0)
            t0 = time.perf_counter()
            pipe[:-1].transform(X)
            best_t = min(best_t, time.perf_counter() - t0)
            t0 = time.perf_counter()
            c = pipe.predict(X)
            best_c = min(best_c, time.perf_counter() - t0)
        np.savetxt(os.path.join(out, name + ".p1"), p[:2000, 1], fmt="%.17g")
        np.savetxt(os.path.join(out, name + ".cls"), c[:2000], fmt="%d")
        kv.append("%s_sklearn_s=%.3f" % (name, best))
        kv.append("%s_sklearn_transform_s=%.3f" % (name, best_t))
        kv.append("%s_sklearn_predict_s=%.3f" % (name, best_c))
        print(kv[-3], kv[-2], kv[-1], flush=True)
    with open(os.path.join(out, "sklearn.kv"), "w") as f:
        f.write("\n".join(kv) + "\n")


if __name__ == "__main__":
    main()
