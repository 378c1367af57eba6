#!/usr/bin/python3
"""How far can exact bounds prune?  A study behind docs/strategies.md's top-K
and docs/early_exit.md's figures.

    /usr/bin/python3 bench/bounds_study.py topk MODEL ROWS_F32 N_FEATURES [N] [RANK]
    /usr/bin/python3 bench/bounds_study.py class MODEL ROWS_F32 N_FEATURES [N]
    /usr/bin/python3 bench/bounds_study.py fraud-rows OUT_F32 [N]
    HB_GROUP_SIZES=2,4,8 /usr/bin/python3 bench/bounds_study.py topk-groups MODEL ROWS_F32 N_FEATURES [N] [RANK]
    (and class-groups): bounds over groups of nearby rows (group_study)

For the first N rows (default 20,000) of an XGBoost model's scoring rows it
computes every (row, tree) leaf and, per tree, the largest (smallest) leaf
under the row's node at each level L (L = 0: the tree's own extremes, the
bound topk.c and early_exit.c use), then counts the (row, tree) pairs that
exact pruning must score before a row is settled, with a perfect bar:

  topk   the RANK-th best margin of the N rows (default 1: the 10th best of
         200,000 rows sits at about the best of 20,000); a row is dropped
         once partial + the remaining trees' bound < that margin;
  class  binary: decided once the interval excludes [-1e-5, 1e-5].

Checks every B trees.  Also: trees taken in another order (the largest mean
gap between bound and leaf first); the cost of computing level-L nodes of
every tree up front and resuming the walks from there (L/D of a walk per
tree, then the rest for the pairs still needed); joint bounds over blocks of
trees, as the data sees them (the largest block sum over the rows, a lower
bound on any certified bound) and certified for pairs of trees (the exact
maximum of two trees' sum over all inputs, from their leaves' boxes); and a
coordinate search for inputs that push the whole model (and one late block)
far above anything in the data.  `fraud-rows` writes rows drawn like
bench/early_exit.sh's table (standard normal rounded to float32, 5%
missing, 20 columns).  Debian's python3-xgboost 1.7.4 and numpy.
"""

import json
import os
import sys

import numpy as np


def load(model, rows, nf, n):
    import xgboost as xgb

    x = np.fromfile(rows, dtype="<f4").reshape(-1, nf)[:n]
    b = xgb.Booster()
    b.load_model(model)
    names = ["f%d" % i for i in range(nf)]
    d = xgb.DMatrix(x, missing=np.nan, feature_names=names)
    leaf = b.predict(d, pred_leaf=True).astype(np.int64)
    marg = b.predict(d, output_margin=True).astype(np.float64)
    trees = json.load(open(model))["learner"]["gradient_booster"]["model"]["trees"]
    return b, names, x, leaf, marg, trees


def tree_tables(tr, depth_cap):
    """Per node: value, depth, ancestor at each level, subtree max and min."""
    L = np.array(tr["left_children"])
    R = np.array(tr["right_children"])
    v = np.array(tr["split_conditions"], dtype=np.float32).astype(np.float64)
    n = len(L)
    depth = np.zeros(n, int)
    parent = -np.ones(n, int)
    for i in range(n):
        if L[i] >= 0:
            depth[L[i]] = depth[R[i]] = depth[i] + 1
            parent[L[i]] = parent[R[i]] = i
    leaf = L < 0
    mx = np.where(leaf, v, -np.inf)
    mn = np.where(leaf, v, np.inf)
    for i in np.argsort(-depth):
        if parent[i] >= 0:
            mx[parent[i]] = max(mx[parent[i]], mx[i])
            mn[parent[i]] = min(mn[parent[i]], mn[i])
    anc = np.zeros((depth_cap + 1, n), int)
    for i in range(n):
        chain = []
        j = i
        while j >= 0:
            chain.append(j)
            j = parent[j]
        chain = chain[::-1]
        for lv in range(depth_cap + 1):
            anc[lv, i] = chain[min(lv, len(chain) - 1)]
    return v, mx, mn, anc, int(depth.max())


def pairs_needed(pref, U, Lo, checks, thr, kind):
    """Mean share of trees scored before each row is settled."""
    N, T1 = pref.shape
    T = T1 - 1
    first = np.full(N, T)
    done = np.zeros(N, bool)
    for t in checks:
        if kind == "topk":
            ok = pref[:, t] + U[:, t] < thr
        else:
            ok = (pref[:, t] + U[:, t] < -1e-5) | (pref[:, t] + Lo[:, t] > 1e-5)
        ok &= ~done
        first[ok] = t
        done |= ok
    return first.mean() / T


def suffix(a):
    return np.concatenate([np.cumsum(a[:, ::-1], 1)[:, ::-1], np.zeros((a.shape[0], 1))], 1)


def leaf_boxes(tr):
    """Every leaf's box: lo <= x < hi per feature, NaN allowed or not."""
    L, R = tr["left_children"], tr["right_children"]
    f, c, dl = tr["split_indices"], tr["split_conditions"], tr["default_left"]
    out = []

    def walk(i, lo, hi, nan):
        if L[i] < 0:
            out.append((lo.copy(), hi.copy(), nan.copy(), np.float32(c[i])))
            return
        t = np.float32(c[i])
        for child, left in ((L[i], True), (R[i], False)):
            lo2, hi2, nan2 = lo.copy(), hi.copy(), nan.copy()
            if left:
                hi2[f[i]] = min(hi2[f[i]], t)
            else:
                lo2[f[i]] = max(lo2[f[i]], t)
            nan2[f[i]] = nan2[f[i]] and (bool(dl[i]) == left)
            if lo2[f[i]] < hi2[f[i]] or nan2[f[i]]:
                walk(child, lo2, hi2, nan2)

    return out, walk


def leaf_box_arrays(tr, nf):
    """A tree's leaves as arrays: lo, hi, NaN allowed (leaves x features)
    and value."""
    out, walk = leaf_boxes(tr)
    walk(0, np.full(nf, -np.inf), np.full(nf, np.inf), np.ones(nf, bool))
    return (np.array([o[0] for o in out]), np.array([o[1] for o in out]),
            np.array([o[2] for o in out]), np.array([o[3] for o in out], dtype=np.float64))


def pair_max(ta, tb, nf):
    lo, hi, nan, val = zip(leaf_box_arrays(ta, nf), leaf_box_arrays(tb, nf))
    meet = ((np.maximum(lo[0][:, None, :], lo[1][None, :, :]) <
             np.minimum(hi[0][:, None, :], hi[1][None, :, :])) |
            (nan[0][:, None, :] & nan[1][None, :, :])).all(2)
    s = val[0][:, None] + val[1][None, :]
    return s[meet].max(), val[0].max() + val[1].max()


def search_max(b, names, x0, trees, nf, t0, t1):
    """Coordinate ascent over the thresholds' gaps: an input's block sum."""
    import xgboost as xgb

    cuts = [set() for _ in range(nf)]
    for tr in trees[t0:t1]:
        for l, f, c in zip(tr["left_children"], tr["split_indices"], tr["split_conditions"]):
            if l >= 0:
                cuts[f].add(float(np.float32(c)))
    cand = []
    for f in range(nf):
        t = np.array(sorted(cuts[f]) or [0.0])
        cand.append(np.concatenate([[t[0] - 1], (t[:-1] + t[1:]) / 2, [t[-1] + 1]]).astype(np.float32))

    def F(X):
        return b.predict(xgb.DMatrix(X, missing=np.nan, feature_names=names),
                         output_margin=True, iteration_range=(t0, t1))

    v = F(x0)
    x = x0[int(np.argmax(v))].copy()
    data_max = best = float(v.max())
    for _ in range(3):
        for f in range(nf):
            X = np.repeat(x[None, :], len(cand[f]) + 1, 0)
            X[:-1, f] = cand[f]
            X[-1, f] = np.nan
            vv = F(X)
            j = int(np.argmax(vv))
            if vv[j] > best:
                best = float(vv[j])
                x = X[j].copy()
    return data_max, best


def box_study(trees, x, pref, lv, thr, kind, nf, T):
    """Row-dependent bounds from small tables: the row's bins on a few
    features select, per tree, the largest (smallest) leaf whose box meets
    the row's cell.  Summed per block of 8 trees and suffix-summed, such a
    table costs one lookup per check, whatever the number of trees."""
    N = x.shape[0]
    # the features the trees' top three levels split on most often
    use = np.zeros(nf)
    for tr in trees:
        L, f = tr["left_children"], tr["split_indices"]
        depth = {0: 0}
        for i in range(len(L)):
            if L[i] >= 0:
                d = depth[i]
                if d < 3:
                    use[f[i]] += 1
                depth[L[i]] = depth[tr["right_children"][i]] = d + 1
    top = list(np.argsort(-use))
    boxes = [leaf_box_arrays(tr, nf) for tr in trees]
    print("Row-dependent bounds from tables over the row's bins on the m features the"
          " trees' top three levels split on most (quantile bins of the rows; a row"
          " with one of them missing gets the tree's own extreme):")
    print()
    print("| features (m) | bins each | cells | pairs scored (%s, checks every 8) |"
          % ("perfect bar" if kind == "topk" else "classes"))
    print("|---:|---:|---:|---:|")
    for m, nb in ((1, 64), (2, 16), (3, 8), (4, 6), (6, 4), (8, 3)):
        feats = top[:m]
        edges = [np.concatenate([[-np.inf], np.quantile(x[~np.isnan(x[:, g]), g],
                                                        np.arange(1, nb) / nb), [np.inf]]) for g in feats]
        cells = nb ** m
        cell = np.zeros(N, int)
        miss = np.zeros(N, bool)
        for g, e in zip(feats, edges):
            v = x[:, g]
            miss |= np.isnan(v)
            cell = cell * nb + np.clip(np.searchsorted(e, np.nan_to_num(v), side="right") - 1, 0, nb - 1)
        ub = np.empty((N, T))
        lb = np.empty((N, T))
        for t, (lo, hi, _, val) in enumerate(boxes):
            reach = np.ones((cells, len(val)), bool)
            idx = np.arange(cells)
            for gi, (g, e) in enumerate(zip(feats, edges)):
                b = (idx // nb ** (m - 1 - gi)) % nb
                reach &= (np.maximum(lo[:, g][None, :], e[b][:, None]) <
                          np.minimum(hi[:, g][None, :], e[b + 1][:, None]))
            tab = np.where(reach, val[None, :], -np.inf).max(1)
            tab = np.where(np.isfinite(tab), tab, val.max())
            ub[:, t] = np.where(miss, val.max(), tab[cell])
            tab = np.where(reach, val[None, :], np.inf).min(1)
            tab = np.where(np.isfinite(tab), tab, val.min())
            lb[:, t] = np.where(miss, val.min(), tab[cell])
        p = pairs_needed(pref, suffix(ub), suffix(lb), range(8, T, 8), thr, kind)
        print("| %d | %d | %d | %.1f%% |" % (m, nb, cells, 100 * p))


def scored(kind, model, rows, nf, n, rank):
    """The rows' leaves and running sums, and the perfect bar (top-K: the
    RANK-th best margin; classes: 0)."""
    b, names, x, leaf, marg, trees = load(model, rows, nf, n)
    N, T = leaf.shape
    tabs = [tree_tables(tr, 12) for tr in trees]
    D = max(t[4] for t in tabs)
    lv = np.stack([tabs[t][0][leaf[:, t]] for t in range(T)], 1)
    base = float(np.mean(marg - lv.sum(1)))
    pref = base + np.concatenate([np.zeros((N, 1)), np.cumsum(lv, 1)], 1)
    thr = np.sort(marg)[::-1][rank - 1] if kind == "topk" else 0.0
    return b, names, x, leaf, marg, trees, tabs, D, lv, base, pref, thr


def study(kind, model, rows, nf, n, rank):
    b, names, x, leaf, marg, trees, tabs, D, lv, base, pref, thr = scored(kind, model, rows, nf, n, rank)
    N, T = leaf.shape

    def level(L, which):
        k = 1 if which == "max" else 2
        return np.stack([tabs[t][k][tabs[t][3][min(L, 12), leaf[:, t]]] for t in range(T)], 1)

    print("### %s, %d trees (depth %d), %d rows; %s" % (model.split("/")[-1], T, D, N,
          "bar: margin %.4f, the best row" % thr if kind == "topk" and rank == 1
          else "bar: margin %.4f, the %d best rows' last" % (thr, rank) if kind == "topk"
          else "class 1: %.2f%% of rows" % (100 * (marg > 0).mean())))
    print()
    print("| bound | checks every | pairs scored (perfect bar) | cost, with level-L nodes up front |")
    print("|---|---:|---:|---:|")
    res = {}
    for L in range(0, D):
        U = suffix(level(L, "max"))
        Lo = suffix(level(L, "min")) if kind == "class" else None
        for B in ((1, 8, 16, 50) if L == 0 else (8,)):
            p = pairs_needed(pref, U, Lo, range(B, T, B), thr, kind)
            res[(L, B)] = p
            cost = "" if L == 0 else "%.1f%%" % (100 * (L / D + (1 - L / D) * p))
            print("| largest leaf under the row's level-%d node | %d | %.1f%% | %s |"
                  % (L, B, 100 * p, cost))
    for L in (0, 3):
        ub = level(L, "max")
        gap = (ub - lv).mean(0)
        order = np.argsort(-gap)
        U = suffix(ub[:, order])
        Lo = suffix(level(L, "min")[:, order]) if kind == "class" else None
        pref2 = base + np.concatenate([np.zeros((N, 1)), np.cumsum(lv[:, order], 1)], 1)
        p = pairs_needed(pref2, U, Lo, range(8, T, 8), thr, kind)
        print("| level %d, trees by mean gap between bound and leaf | 8 | %.1f%% | |" % (L, 100 * p))
    print()
    box_study(trees, x, pref, lv, thr, kind, nf, T)
    print()
    mx = np.array([t[1][0] for t in tabs])
    print("Joint bounds over blocks of trees (upper side):")
    print()
    print("| block of trees | sum of the trees' largest leaves | largest block sum over the rows |")
    print("|---:|---:|---:|")
    for B in (2, 10, 50, T):
        s_max = s_data = 0.0
        for a in range(0, T, B):
            s_max += mx[a:a + B].sum()
            s_data += lv[:, a:a + B].sum(1).max()
        print("| %d | %.2f | %.2f |" % (B, s_max, s_data))
    exact = total = 0.0
    for a in range(0, T - 1, 2):
        e, s = pair_max(trees[a], trees[a + 1], nf)
        exact += e
        total += s
    print()
    print("Certified, pairs of trees: the exact maxima of the %d pairs' sums add up to %.2f,"
          " their largest leaves to %.2f." % (T // 2, exact, total))
    for t0, t1 in ((0, T), (T // 2, T // 2 + T // 10)):
        dm, sm = search_max(b, names, x[:2000], trees, nf, t0, t1)
        print("Trees [%d, %d): largest sum over 2,000 rows %.2f; an input found by coordinate"
              " search %.2f." % (t0, t1, dm, sm))


def kd_groups(x, g):
    """Rows split into groups of at most g near one another: recursively at
    the median of the feature whose ranks spread widest in the part."""
    r = np.argsort(np.argsort(np.nan_to_num(x, nan=0.0), 0), 0) / len(x)
    out = []
    stack = [np.arange(len(x))]
    while stack:
        idx = stack.pop()
        if len(idx) <= g:
            out.append(idx)
            continue
        f = int(np.argmax(r[idx].max(0) - r[idx].min(0)))
        order = idx[np.argsort(r[idx, f], kind="stable")]
        stack += [order[:len(order) // 2], order[len(order) // 2:]]
    return out


def group_study(kind, model, rows, nf, n, rank):
    """Bounds over groups of nearby rows: per tree, the largest leaf whose
    box meets the box of the group's values (sound for every input in that
    box, so for each of its rows).  One walk of the parts of a tree that
    meet the box serves every row of the group; its cost per row is the
    nodes visited over the group's size, against D for the row's own walk."""
    b, names, x, leaf, marg, trees, tabs, D, lv, base, pref, thr = scored(kind, model, rows, nf, n, rank)
    N, T = leaf.shape
    boxes = [leaf_box_arrays(tr, nf) for tr in trees]
    print("### %s, %d trees (depth %d), %d rows; %s; checks every 8 trees, perfect bar"
          % (model.split("/")[-1], T, D, N, "top-K, bar: the %d best rows' last" % rank
             if kind == "topk" else "classes"))
    print()
    print("| rows a group | pairs scored | leaves a group's box meets, a tree (mean) | walk cost a row, in nodes (row's own walk: %d) |" % D)
    print("|---:|---:|---:|---:|")
    mx = np.array([bx[3].max() for bx in boxes])
    mn = np.array([bx[3].min() for bx in boxes])
    p0 = pairs_needed(pref, suffix(np.tile(mx, (N, 1))), suffix(np.tile(mn, (N, 1))),
                      range(8, T, 8), thr, kind)
    print("| (plain bound) | %.1f%% | | |" % (100 * p0))
    for g in [int(v) for v in os.environ.get("HB_GROUP_SIZES", "1,4,16,64,256").split(",")]:
        groups = kd_groups(x, g)
        G = len(groups)
        gmin = np.array([np.nanmin(np.where(np.isnan(x[i]), np.inf, x[i]), 0) for i in groups])
        gmax = np.array([np.nanmax(np.where(np.isnan(x[i]), -np.inf, x[i]), 0) for i in groups])
        gnan = np.array([np.isnan(x[i]).any(0) for i in groups])
        ub = np.empty((N, T))
        lb = np.empty((N, T))
        met = 0.0
        for t, (lo, hi, nanok, val) in enumerate(boxes):
            meet = (((lo[None, :, :] <= gmax[:, None, :]) & (gmin[:, None, :] < hi[None, :, :])) |
                    (gnan[:, None, :] & nanok[None, :, :])).all(2)
            met += meet.sum() / G
            u = np.where(meet, val[None, :], -np.inf).max(1)
            l = np.where(meet, val[None, :], np.inf).min(1)
            for gi, idx in enumerate(groups):
                ub[idx, t] = u[gi]
                lb[idx, t] = l[gi]
        p = pairs_needed(pref, suffix(ub), suffix(lb), range(8, T, 8), thr, kind)
        leaves = met / T
        # a walk of the parts of a tree meeting the box visits about as
        # many inner nodes as leaves it reaches, and D at the least
        cost = max(D, 2 * leaves) / (N / G)
        print("| %d | %.1f%% | %.1f | %.2f |" % (g, 100 * p, leaves, cost))


def fraud_rows(out, n):
    rng = np.random.default_rng(17)
    x = rng.normal(size=(n, 20)).astype(np.float32)
    x[rng.random(size=x.shape) < 0.05] = np.nan
    x.astype("<f4").tofile(out)


def main():
    kind = sys.argv[1]
    if kind == "fraud-rows":
        fraud_rows(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 20000)
        return
    model, rows, nf = sys.argv[2], sys.argv[3], int(sys.argv[4])
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 20000
    rank = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    if kind in ("topk-groups", "class-groups"):
        group_study(kind.split("-")[0], model, rows, nf, n, rank)
    else:
        study(kind, model, rows, nf, n, rank)


if __name__ == "__main__":
    main()
