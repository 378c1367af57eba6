#!/usr/bin/python3
"""Two ways to re-score fewer rows in approximate top-K, measured and not
taken: the study behind docs/willump.md's "Measured and not taken".

    /usr/bin/python3 bench/approx_study.py [DATA_DIR]

DATA_DIR (default bench/data) holds bench/gen_bench.py's model.json and the
scoring rows bench_1000000.f32 and bench_200000.f32 (the ranking benchmark's
table and tuning sample).  Debian's python3-xgboost 1.7.4 and numpy.

1. A cut relative to the bar.  At query time the k-th best full score seen
   so far (the bar b) is exact; a row whose screening score S is far below
   it could be dropped: keep only rows with S >= (1 - c) b + c s* - d, where
   s* is the tail's lowest full margin and d is the (e+1)-th largest
   (1 - c) F + c s* - S over the T_e best rows of an evaluation half (the
   same order statistic as the cut), c a slope fitted on the tail of
   another half (c = 0: a plain residual).  The screening score here is the
   model's first 140 trees, calibrated on the tail (what the tuned second
   stage uses).  Reported: the rows kept at 1M rows against the tuned cut's
   share, and precision@10 over the whole table and each tenth of it.
2. A cheap model fitted with weight on the upper tail.  Willump's small
   model only has to rank the top rows: 20 trees of depth 8 fitted to the
   full margins (XGBoost's hist method, 64 bins, as distill.c fits them),
   uniformly and with rows of high margin weighted up; reported is the
   share of evaluation rows at or above the cut that keeps all but e of the
   T_e best (the rows the query re-scores).
"""

import os
import sys

import numpy as np
import xgboost as xgb

NF = 28
NAMES = ["f%d" % i for i in range(NF)]
MENU = [(299, 0), (1441, 8)]		# (T_e, e) at target 0.99, confidence 0.95


def rows(path):
    return np.fromfile(path, dtype=np.float32).reshape(-1, NF)


def margins(bst, x, ntrees=0):
    d = xgb.DMatrix(x, missing=np.nan, feature_names=NAMES)
    return bst.predict(d, output_margin=True, iteration_range=(0, ntrees)).astype(np.float64)


def share_at_cut(s, f, t, e):
    best = np.argsort(-f)[:t]
    tau = np.sort(s[best])[e]
    return (s >= tau).mean()


def bar_study(bst, x, xs, halves):
    f, p = margins(bst, x), margins(bst, x, 140)
    fs, ps = margins(bst, xs), margins(bst, xs, 140)
    sel, ev = halves
    print("1. a cut relative to the bar (screening score: the first 140 trees, calibrated on the tail)")
    print("   T_e  e  slope c  kept by the cut  kept by the bar rule  precision@10 all rows  worst tenth")
    for t, e in MENU:
        tail = np.argsort(-fs[sel])[:t]
        c1, c0 = np.polyfit(ps[sel][tail], fs[sel][tail], 1)
        s, ss = c1 * p + c0, c1 * ps + c0
        slope = np.polyfit(fs[sel][tail], fs[sel][tail] - ss[sel][tail], 1)[0]
        tail_e = np.argsort(-fs[ev])[:t]
        fe, se = fs[ev][tail_e], ss[ev][tail_e]
        s_star = fe[-1]
        tau = np.sort(se)[e]
        for c in (0.0, max(slope, 0.0)):
            d = np.sort((1 - c) * fe + c * s_star - se)[::-1][e]

            def kept(fm, sm):
                b = np.sort(fm)[-10]
                thr = (1 - c) * b + c * s_star - d
                top = np.argsort(-fm)[:10]
                return (sm[top] >= thr).mean(), (sm >= thr).mean()
            prec, keep = kept(f, s)
            tenths = [kept(f[i::10], s[i::10])[0] for i in range(10)]
            print("  %4d %2d  %7.3f  %14.2f%%  %19.3f%%  %21.2f  %11.2f"
                  % (t, e, c, 100 * (s >= tau).mean(), 100 * keep, prec, min(tenths)))


def weight_study(xs, fs, idx):
    fit, ev = idx[:50000], idx[100000:]
    f = fs[fit]
    q = np.quantile(f, [0.8, 0.95])
    variants = [("uniform", np.ones(len(f))),
                ("top 20% x10", np.where(f >= q[0], 10.0, 1.0)),
                ("top 5% x10", np.where(f >= q[1], 10.0, 1.0)),
                ("by rank, 1 + 50 r^8", 1.0 + 50 * (np.argsort(np.argsort(f)) / len(f)) ** 8)]
    print("2. a cheap model of 20 trees of depth 8 fitted with weight on the upper tail")
    print("   weights                 " + "  ".join("re-scored at T_e = %d" % t for t, _ in MENU))
    for name, w in variants:
        d = xgb.DMatrix(xs[fit], label=f, weight=w, missing=np.nan)
        m = xgb.train({"max_depth": 8, "eta": 0.3, "tree_method": "hist", "max_bin": 64,
                       "min_child_weight": 20, "base_score": 0.0, "seed": 0}, d, 20)
        s = m.predict(xgb.DMatrix(xs[ev], missing=np.nan))
        print("   %-22s  " % name + "  ".join("%19.2f%%" % (100 * share_at_cut(s, fs[ev], t, e))
                                           for t, e in MENU))


def main():
    data = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "data")
    bst = xgb.Booster()
    bst.load_model(os.path.join(data, "model.json"))
    x = rows(os.path.join(data, "bench_1000000.f32"))
    xs = rows(os.path.join(data, "bench_200000.f32"))
    idx = np.random.default_rng(1).permutation(len(xs))
    bar_study(bst, x, xs, (idx[:100000], idx[100000:]))
    weight_study(xs, margins(bst, xs), idx)


if __name__ == "__main__":
    main()
