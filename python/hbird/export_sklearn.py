"""Export a fitted scikit-learn pipeline as hbird pipeline JSON.

    from hbird.export_sklearn import export
    doc = export(pipe, columns=["age", "city", "review"])
    json.dump(doc, open("model.json", "w"))

hbird.upload(conn, name, pipe) does this and uploads the document.  From
the command line, for a pickled pipeline:

    python3 -m hbird.export_sklearn model.pkl --columns age,city,review > model.json

(scripts/hbird_export_sklearn.py is the same command.)

`columns` names the columns of the X the pipeline was fitted on, in order
(a pandas DataFrame's own names are used when the pipeline has
feature_names_in_); those names are what SQL columns bind to.  Supported:
Pipeline, ColumnTransformer (column names or positions, 'drop',
'passthrough', remainder), StandardScaler, MinMaxScaler, MaxAbsScaler,
RobustScaler, SimpleImputer (numeric; text before an encoder),
MissingIndicator, Binarizer, KBinsDiscretizer, Normalizer, OneHotEncoder,
OrdinalEncoder, PolynomialFeatures, HashingVectorizer, CountVectorizer,
TfidfVectorizer, then LogisticRegression, LinearRegression, Ridge, Lasso,
ElasticNet, SGDClassifier/Regressor, LinearSVC/LinearSVR, DecisionTree,
RandomForest, ExtraTrees, GradientBoosting and HistGradientBoosting
classifiers/regressors (LogisticRegression also one-vs-rest), and
XGBoost's XGBClassifier/XGBRegressor (and LightGBM's LGBMClassifier /
LGBMRegressor, written as the booster's text model).  Anything else is
refused by name.
Tested with scikit-learn 1.2.
"""
import json
import math
import sys

import numpy as np


# the deepest tree the server reads (HB_MAX_DEPTH, src/core/model.h)
MAX_DEPTH = 64


class Unsupported(ValueError):
    pass


def _num(x):
    x = float(x)
    return None if math.isnan(x) else x


def _nums(a):
    return [_num(v) for v in np.asarray(a, dtype=np.float64).ravel()]


class TextRef:
    """A text input, possibly with the value an imputer puts for NULL."""

    def __init__(self, name, null_as=None):
        self.name = name
        self.null_as = null_as


# token patterns the server's tokenizer implements: tokens of two or more
# word characters (scikit-learn's default), or of one or more
_TOKEN_PATTERNS = (r"(?u)\b\w\w+\b", r"(?u)\b\w+\b", r"\b\w\w+\b", r"\b\w+\b")


class Exporter:
    def __init__(self, columns):
        self.columns = list(columns)
        self.steps = []
        self.types = {}         # input name -> "numeric" | "text"
        self.n = 0
        # a step's outputs are "name:k": never a column's name, or the
        # server would refuse the reference as naming both
        self.taken = set(str(c) for c in self.columns) | set(str(c).split(":")[0] for c in self.columns)

    def name(self, prefix):
        while True:
            self.n += 1
            name = "%s%d" % (prefix, self.n)
            if name not in self.taken:
                return name

    def add(self, op, **kw):
        name = self.name(op.split("_")[0])
        step = {"op": op, "name": name}
        step.update(kw)
        self.steps.append(step)
        return name

    # ---- inputs

    def column(self, c):
        if isinstance(c, (int, np.integer)):
            c = self.columns[int(c)]
        if c not in self.columns:
            raise Unsupported("column %r is not among the columns %r" % (c, self.columns))
        return c

    def select(self, cols):
        """ColumnTransformer column spec -> (list of names, 1-D?)."""
        if isinstance(cols, (str, int, np.integer)):
            return [self.column(cols)], True
        if isinstance(cols, slice):
            return [self.column(c) for c in range(len(self.columns))[cols]], False
        cols = list(cols)
        if cols and isinstance(cols[0], (bool, np.bool_)):
            return [self.columns[i] for i, b in enumerate(cols) if b], False
        return [self.column(c) for c in cols], False

    def use(self, name, kind):
        old = self.types.get(name)
        if old is not None and old != kind:
            raise Unsupported("column %r is used both as text and as a number" % name)
        self.types[name] = kind

    def numeric(self, refs):
        out = []
        for r in refs:
            if isinstance(r, TextRef):
                raise Unsupported("text column %r reaches a numeric transformer" % r.name)
            out.append(r)
        return out

    # ---- transformers

    def emit(self, t, refs, one_d=False):
        """Append the steps of transformer t over refs; its output refs."""
        from sklearn.pipeline import Pipeline, FeatureUnion
        from sklearn.compose import ColumnTransformer
        from sklearn import preprocessing as pp
        from sklearn.impute import SimpleImputer, MissingIndicator
        from sklearn.feature_extraction import text as fe

        kind = type(t).__name__
        if t == "passthrough" or t is None:
            return refs
        if isinstance(t, Pipeline):
            for _, s in t.steps:
                refs = self.emit(s, refs, one_d)
            return refs
        if isinstance(t, ColumnTransformer):
            out = []
            for name, tr, cols in t.transformers_:
                if tr == "drop":
                    continue
                names, od = self.select(cols)
                sub = []
                for c in names:
                    sub.append(TextRef(c) if self._texty(tr) else c)
                out += self.emit(tr, sub, od)
            return out
        if isinstance(t, FeatureUnion):
            out = []
            for _, tr in t.transformer_list:
                if tr != "drop":
                    out += self.emit(tr, refs, one_d)
            return out
        if isinstance(t, (fe.HashingVectorizer, fe.CountVectorizer)):
            return self.vectorizer(t, refs)
        if isinstance(t, pp.OneHotEncoder):
            return self.encoder(t, refs, True)
        if isinstance(t, pp.OrdinalEncoder):
            return self.encoder(t, refs, False)
        if isinstance(t, SimpleImputer) and refs and all(isinstance(r, TextRef) for r in refs):
            out = []
            for r, v in zip(refs, t.statistics_):
                if not isinstance(v, str):
                    raise Unsupported("SimpleImputer over text needs a text fill value")
                out.append(TextRef(r.name, v))
            if t.add_indicator:
                raise Unsupported("SimpleImputer(add_indicator=True) over text columns")
            return out
        refs = self.numeric(refs)
        for r in refs:
            if r in self.columns:
                self.use(r, "numeric")
        if isinstance(t, pp.StandardScaler):
            kw = {}
            # mean_ is fitted even with with_mean=False, but not subtracted
            if t.with_mean and t.mean_ is not None:
                kw["mean"] = _nums(t.mean_)
            if t.with_std and t.scale_ is not None:
                kw["scale"] = _nums(t.scale_)
            return self.outs(self.add("standard_scaler", **{"in": refs}, **kw), len(refs))
        if isinstance(t, pp.MinMaxScaler):
            kw = {}
            if t.clip:
                kw["clip"] = list(map(float, t.feature_range))
            return self.outs(self.add("minmax_scaler", **{"in": refs}, scale=_nums(t.scale_),
                                      min=_nums(t.min_), **kw), len(refs))
        if isinstance(t, pp.MaxAbsScaler):
            return self.outs(self.add("maxabs_scaler", **{"in": refs}, scale=_nums(t.scale_)), len(refs))
        if isinstance(t, pp.RobustScaler):
            kw = {}
            if t.center_ is not None:
                kw["center"] = _nums(t.center_)
            if t.scale_ is not None:
                kw["scale"] = _nums(t.scale_)
            return self.outs(self.add("robust_scaler", **{"in": refs}, **kw), len(refs))
        if isinstance(t, SimpleImputer):
            mv = t.missing_values
            kw = {}
            if not (isinstance(mv, float) and math.isnan(mv)):
                if mv is None or isinstance(mv, str):
                    raise Unsupported("SimpleImputer(missing_values=%r) over numbers" % (mv,))
                kw["missing_value"] = float(mv)
            stats = np.asarray(t.statistics_, dtype=np.float64)
            keep = [i for i, v in enumerate(stats) if not math.isnan(v)]
            if len(keep) != len(refs):
                # scikit-learn drops columns that were all missing when fitted
                pass
            imp = self.add("simple_imputer", **{"in": [refs[i] for i in keep]},
                           values=[float(stats[i]) for i in keep], **kw)
            out = self.outs(imp, len(keep))
            if t.add_indicator:
                out += self.emit(t.indicator_, refs)
            return out
        if isinstance(t, MissingIndicator):
            mv = t.missing_values
            kw = {}
            if not (isinstance(mv, float) and math.isnan(mv)):
                kw["missing_value"] = float(mv)
            sub = [refs[int(i)] for i in t.features_]
            if not sub:
                return []
            return self.outs(self.add("missing_indicator", **{"in": sub}, **kw), len(sub))
        if isinstance(t, pp.Binarizer):
            return self.outs(self.add("binarizer", **{"in": refs}, threshold=float(t.threshold)), len(refs))
        if isinstance(t, pp.Normalizer):
            return self.outs(self.add("normalizer", **{"in": refs}, norm=t.norm), len(refs))
        if isinstance(t, pp.KBinsDiscretizer):
            edges = [_nums(e) for e in t.bin_edges_]
            n = sum(len(e) - 1 for e in edges) if t.encode != "ordinal" else len(refs)
            return self.outs(self.add("kbins_discretizer", **{"in": refs}, edges=edges,
                                      encode="ordinal" if t.encode == "ordinal" else "onehot"), n)
        if isinstance(t, pp.PolynomialFeatures):
            powers = [[int(v) for v in row] for row in t.powers_]
            return self.outs(self.add("polynomial_features", **{"in": refs}, powers=powers), len(powers))
        if isinstance(t, pp.FunctionTransformer) and t.func is None:
            return refs
        raise Unsupported("transformer %s is not supported" % kind)

    @staticmethod
    def _texty(t):
        from sklearn.pipeline import Pipeline
        from sklearn.feature_extraction import text as fe
        from sklearn import preprocessing as pp
        if isinstance(t, Pipeline):
            return any(Exporter._texty(s) for _, s in t.steps)
        if isinstance(t, (fe.HashingVectorizer, fe.CountVectorizer)):
            return True
        if isinstance(t, (pp.OneHotEncoder, pp.OrdinalEncoder)):
            return any(isinstance(v, str) for c in t.categories_ for v in c)
        return False

    @staticmethod
    def outs(name, n):
        return ["%s:%d" % (name, i) for i in range(n)]

    def vectorizer(self, t, refs):
        from sklearn.feature_extraction import text as fe
        if len(refs) != 1 or not isinstance(refs[0], TextRef):
            raise Unsupported("%s must read one text column (a column name, not a list)"
                              % type(t).__name__)
        if refs[0].null_as is not None:
            raise Unsupported("an imputer before %s" % type(t).__name__)
        for attr, ok in (("preprocessor", None), ("tokenizer", None), ("input", "content")):
            if getattr(t, attr) != ok:
                raise Unsupported("%s(%s=%r) is not supported" % (type(t).__name__, attr, getattr(t, attr)))
        if t.strip_accents not in (None, "unicode", "ascii"):
            raise Unsupported("%s(strip_accents=%r) is not supported" % (type(t).__name__, t.strip_accents))
        if callable(t.analyzer) or t.analyzer not in ("word", "char", "char_wb"):
            raise Unsupported("%s(analyzer=%r) is not supported" % (type(t).__name__, t.analyzer))
        # the patterns the server tokenizes (read_pipeline.c); scikit-learn
        # ignores token_pattern for character n-grams, and so does the export
        if t.analyzer == "word" and t.token_pattern not in _TOKEN_PATTERNS:
            raise Unsupported("%s(token_pattern=%r) is not supported (%s)"
                              % (type(t).__name__, t.token_pattern,
                                 " or ".join(_TOKEN_PATTERNS[:2])))
        name = refs[0].name
        self.use(name, "text")
        sw = t.get_stop_words()
        kw = {"input": name, "analyzer": t.analyzer, "lowercase": bool(t.lowercase),
              "ngram_range": list(t.ngram_range), "binary": bool(t.binary)}
        if t.analyzer == "word":
            kw["token_pattern"] = t.token_pattern
        if sw and t.analyzer == "word":
            kw["stop_words"] = sorted(sw)
        if t.strip_accents:
            kw["strip_accents"] = t.strip_accents
        if isinstance(t, fe.HashingVectorizer):
            kw.update(n_features=int(t.n_features), alternate_sign=bool(t.alternate_sign), norm=t.norm)
            width = int(t.n_features)
            op = "hashing_vectorizer"
        else:
            vocab = {k: int(v) for k, v in t.vocabulary_.items()}
            kw["vocabulary"] = vocab
            width = len(vocab)
            if isinstance(t, fe.TfidfVectorizer):
                op = "tfidf_vectorizer"
                kw.update(norm=t.norm, sublinear_tf=bool(t.sublinear_tf))
                if t.use_idf:
                    kw["idf"] = _nums(t.idf_)
            else:
                op = "count_vectorizer"
        return self.outs(self.add(op, **kw), width)

    def encoder(self, t, refs, onehot):
        if getattr(t, "_infrequent_enabled", False):
            raise Unsupported("%s with infrequent categories" % type(t).__name__)
        ins, cats, null_as, null_codes = [], [], [], []
        for r, c in zip(refs, t.categories_):
            c = list(c)
            null_codes.append(None)
            if isinstance(r, TextRef):
                self.use(r.name, "text")
                ins.append(r.name)
                null_as.append(r.null_as)
                nan = [k for k, v in enumerate(c) if v is not None and not isinstance(v, str) and math.isnan(v)]
                none = [k for k, v in enumerate(c) if v is None]
                if nan and none:
                    # both are SQL NULL here, and scikit-learn tells them apart
                    raise Unsupported("%s with both None and NaN among the categories of %r"
                                      % (type(t).__name__, r.name))
                if none and not onehot:
                    # None is an ordinary category to OrdinalEncoder (its
                    # index), NaN the missing one (encoded_missing_value)
                    null_codes[-1] = none[0]
                cats.append([None if k in nan or k in none else str(v) for k, v in enumerate(c)])
            else:
                if r in self.columns:
                    self.use(r, "numeric")
                a = np.asarray(c)
                if a.dtype.kind in "iu" and any(abs(int(v)) > 2 ** 53 for v in a):
                    # rows are read as doubles, where 10**18 + 1 is 10**18
                    raise Unsupported("%s with integer categories beyond 2**53 (column %r)"
                                      % (type(t).__name__, r))
                ins.append(r)
                null_as.append(None)
                cats.append(_nums(c))
        unknown = t.handle_unknown
        if unknown == "infrequent_if_exist":
            unknown = "ignore"      # no infrequent categories (refused above): as scikit-learn
        kw = {"in": ins, "categories": cats, "handle_unknown": unknown}
        if any(v is not None for v in null_as):
            kw["null_as"] = null_as
        if onehot:
            drop = getattr(t, "drop_idx_", None)
            if drop is not None:
                kw["drop"] = [None if d is None else int(d) for d in drop]
            n = sum(len(c) - (0 if drop is None or drop[i] is None else 1) for i, c in enumerate(cats))
            return self.outs(self.add("one_hot_encoder", **kw), n)
        if t.handle_unknown == "use_encoded_value":
            kw["unknown_value"] = _num(t.unknown_value)
        kw["encoded_missing_value"] = _num(t.encoded_missing_value)
        if any(v is not None for v in null_codes):
            kw["null_codes"] = null_codes
        return self.outs(self.add("ordinal_encoder", **kw), len(cats))


# ---- estimators

def _linear(est, task, link, classes):
    coef = np.atleast_2d(np.asarray(est.coef_, dtype=np.float64))
    icp = np.atleast_1d(np.asarray(est.intercept_, dtype=np.float64))
    if icp.size == 1 and coef.shape[0] > 1:
        icp = np.repeat(icp, coef.shape[0])
    m = {"kind": "linear", "task": task, "link": link,
         "coef": [_nums(r) for r in coef], "intercept": _nums(icp)}
    if classes is not None:
        m["classes"] = [c.item() if hasattr(c, "item") else c for c in classes]
        m["n_classes"] = len(classes)
    return m


def _numpy_sum(a):
    """A row's sum as numpy's add.reduce adds it (pairwise: in order below 8
    values, eight running sums up to 128, halves above), which the link "l1"
    computes (src/core/plan.c, numpy_sum)."""
    n = len(a)
    if n < 8:
        res = 0.0
        for x in a:
            res += float(x)
        return res
    if n <= 128:
        r = [float(x) for x in a[:8]]
        i = 8
        while i < n - (n % 8):
            for j in range(8):
                r[j] += float(a[i + j])
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for x in a[i:]:
            res += float(x)
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return _numpy_sum(a[:n2]) + _numpy_sum(a[n2:])


def _l1_exact(v):
    """Whether the link "l1" (each count over the row's sum) gives
    scikit-learn's predict_proba bits for every node's counts v."""
    s = v.sum(axis=1, keepdims=True)
    s[s == 0] = 1
    p = v / s
    for row, prow in zip(v, p):
        t = _numpy_sum(row)
        if t == 0.0:
            t = 1.0
        if any(float(c) / t != float(q) for c, q in zip(row, prow)):
            return False
    return True


def _tree_arrays(tree, group, values):
    t = tree.tree_
    return {"group": group,
            "feature": [int(f) if l >= 0 else 0 for f, l in zip(t.feature, t.children_left)],
            "threshold": [float(v) if l >= 0 else 0.0 for v, l in zip(t.threshold, t.children_left)],
            "left": [int(v) for v in t.children_left],
            "right": [int(v) for v in t.children_right],
            "value": [float(v) for v in values]}


def _estimator(est, nf):
    from sklearn import linear_model as lm, svm, tree as sktree, ensemble as ens
    kind = type(est).__name__
    classes = getattr(est, "classes_", None)
    if isinstance(est, (lm.LinearRegression, lm.Ridge, lm.Lasso, lm.ElasticNet, lm.SGDRegressor,
                        svm.LinearSVR)):
        m = _linear(est, "regression", "identity", None)
        if len(m["coef"]) > 1:
            # fitted on a 2-D y: one coefficient row per target
            m["n_targets"] = len(m["coef"])
        return m
    if classes is not None and isinstance(classes, list):
        # fitted on a 2-D y: one set of classes per output
        raise Unsupported("multi-output classifier %s (%d outputs)" % (kind, len(classes)))
    if isinstance(est, lm.LogisticRegression):
        if len(classes) > 2:
            mc = est.multi_class
            if mc == "ovr" or (mc == "auto" and est.solver == "liblinear"):
                # one sigmoid per class, divided by their sum
                return _linear(est, "multiclass", "ovr", classes)
            return _linear(est, "multiclass", "softmax", classes)
        m = _linear(est, "binary", "sigmoid", classes)
        if est.multi_class == "multinomial":
            # predict_proba is the softmax of (-z, z): sigmoid(2z)
            m["coef"] = [[None if v is None else 2.0 * v for v in r] for r in m["coef"]]
            m["intercept"] = [2.0 * v for v in m["intercept"]]
        return m
    if isinstance(est, (lm.SGDClassifier, svm.LinearSVC, lm.RidgeClassifier, lm.Perceptron)):
        if isinstance(est, lm.SGDClassifier) and est.loss in ("log_loss", "log"):
            if len(classes) == 2:
                return _linear(est, "binary", "sigmoid", classes)
            # predict_proba: one sigmoid per class, divided by their sum
            return _linear(est, "multiclass", "ovr", classes)
        if isinstance(est, lm.SGDClassifier) and est.loss == "modified_huber":
            # its predict_proba is (clip(d, -1, 1) + 1) / 2, per class normalized,
            # which no link here computes: refused rather than given another
            raise Unsupported("SGDClassifier(loss='modified_huber')")
        # decision_function: binary -> the margin, multiclass -> argmax class
        task = "binary" if len(classes) == 2 else "multiclass"
        return _linear(est, task, "identity", classes)
    if isinstance(est, (sktree.DecisionTreeClassifier, ens.RandomForestClassifier,
                        ens.ExtraTreesClassifier)):
        trees = est.estimators_ if hasattr(est, "estimators_") else [est]
        k = len(classes)
        out = []
        counts = est.tree_.value[:, 0, :] if not hasattr(est, "estimators_") else None
        if counts is not None and _l1_exact(counts):
            # one tree: predict takes the largest weighted count, predict_proba
            # divides the counts by their sum (two counts a rounding step
            # apart can divide to one probability): the counts, and "l1"
            return {"kind": "trees", "task": "multiclass", "n_classes": k, "link": "l1",
                    "comparison": "le_f32", "trees": [_tree_arrays(est, g, counts[:, g]) for g in range(k)],
                    "base": [0.0] * k,
                    "classes": [c.item() if hasattr(c, "item") else c for c in classes]}
        for t in trees:
            v = t.tree_.value[:, 0, :]
            s = v.sum(axis=1, keepdims=True)
            s[s == 0] = 1
            p = v / s
            for g in range(k):
                out.append(_tree_arrays(t, g, p[:, g]))
        # "mean": summed, then divided by the trees, as scikit-learn averages
        return {"kind": "trees", "task": "multiclass", "n_classes": k, "link": "mean",
                "comparison": "le_f32", "trees": out, "base": [0.0] * k,
                "classes": [c.item() if hasattr(c, "item") else c for c in classes]}
    if isinstance(est, (sktree.DecisionTreeRegressor, ens.RandomForestRegressor,
                        ens.ExtraTreesRegressor)):
        trees = est.estimators_ if hasattr(est, "estimators_") else [est]
        # fitted on a 2-D y, tree_.value holds one value per target and node:
        # one tree per target, of the same structure, in its target's group
        k = int(getattr(est, "n_outputs_", 1))
        out = [_tree_arrays(t, g, t.tree_.value[:, g, 0])
               for t in trees for g in range(k)]
        m = {"kind": "trees", "task": "regression", "link": "mean",
             "comparison": "le_f32", "trees": out, "base": [0.0] * k}
        if k > 1:
            m["n_targets"] = k
        return m
    from sklearn.multioutput import MultiOutputRegressor
    if isinstance(est, MultiOutputRegressor):
        return _multi_output(est, nf)
    if isinstance(est, (ens.GradientBoostingClassifier, ens.GradientBoostingRegressor)):
        lr = float(est.learning_rate)
        if est.init is not None and not (isinstance(est.init, str) and est.init == "zero"):
            # the initial estimate is then that estimator's prediction for
            # the row, not a constant
            raise Unsupported("%s(init=%s)" % (kind, type(est.init).__name__))
        init = est._raw_predict_init(np.zeros((1, nf), dtype=np.float32))[0]
        stages = est.estimators_
        k = stages.shape[1]
        out = []
        for stage in stages:
            for g in range(k):
                t = stage[g]
                out.append(_tree_arrays(t, g, t.tree_.value[:, 0, 0] * lr))
        m = {"kind": "trees", "comparison": "le_f32", "trees": out, "base": _nums(init)}
        if isinstance(est, ens.GradientBoostingClassifier):
            if est.loss not in ("log_loss", "deviance"):
                raise Unsupported("GradientBoostingClassifier(loss=%r)" % est.loss)
            m["classes"] = [c.item() if hasattr(c, "item") else c for c in classes]
            if k == 1:
                m.update(task="binary", link="sigmoid", n_classes=2)
            else:
                m.update(task="multiclass", link="softmax", n_classes=k)
        else:
            if est.loss != "squared_error":
                raise Unsupported("GradientBoostingRegressor(loss=%r)" % est.loss)
            m.update(task="regression", link="identity")
        return m
    if isinstance(est, (ens.HistGradientBoostingClassifier, ens.HistGradientBoostingRegressor)):
        return _hist_gb(est, classes)
    if type(est).__module__.startswith("lightgbm"):
        # LGBMClassifier / LGBMRegressor: the booster's text model
        return {"format": "lightgbm-text", "text": est.booster_.model_to_string()}
    if type(est).__module__.startswith("xgboost"):
        from ._source import xgb_estimator_booster
        try:
            booster = xgb_estimator_booster(est)
        except ValueError as e:
            raise Unsupported(str(e))
        raw = booster.save_raw(raw_format="json")
        return {"format": "xgboost-json", "model": json.loads(bytes(raw).decode())}
    raise Unsupported("estimator %s is not supported" % kind)


def _multi_output(est, nf):
    """MultiOutputRegressor: its per-target regressors as one model of
    several targets.  They must be native models of one kind, link and
    comparison (linear rows stacked; trees filed under their target)."""
    parts = [_estimator(e, nf) for e in est.estimators_]
    first = parts[0]
    for p in parts:
        if "kind" not in p:
            raise Unsupported("MultiOutputRegressor of %s (embedded models)"
                              % type(est.estimators_[0]).__name__)
        if p.get("task") != "regression" or p.get("n_targets", 1) != 1:
            raise Unsupported("MultiOutputRegressor of multi-target or non-regression estimators")
        for key in ("kind", "link", "comparison"):
            if p.get(key) != first.get(key):
                raise Unsupported("MultiOutputRegressor mixing estimators (%s %r and %r)"
                                  % (key, first.get(key), p.get(key)))
    k = len(parts)
    if first["kind"] == "linear":
        return {"kind": "linear", "task": "regression", "link": first["link"],
                "n_targets": k, "coef": [p["coef"][0] for p in parts],
                "intercept": [p["intercept"][0] for p in parts]}
    if first["link"] == "mean" and len({len(p["trees"]) for p in parts}) > 1:
        # "mean" divides every target's sum by one count of trees
        raise Unsupported("MultiOutputRegressor of forests of different sizes")
    trees = []
    for g, p in enumerate(parts):
        for t in p["trees"]:
            t["group"] = g
            trees.append(t)
    m = {"kind": "trees", "task": "regression", "link": first["link"], "n_targets": k,
         "trees": trees, "base": [p["base"][0] for p in parts]}
    if "comparison" in first:
        m["comparison"] = first["comparison"]
    return m


def _bits(words):
    """The members of a 256-bit bitset of eight uint32 words."""
    return [32 * w + b for w, v in enumerate(words) for b in range(32) if (int(v) >> b) & 1]


def _hist_gb(est, classes):
    """HistGradientBoosting*: the predictor trees on raw (unbinned) values.

    A numeric split sends x <= num_threshold left, in float64 (scikit-learn
    validates X as float64); NaN goes by missing_go_to_left.  A categorical
    split's raw-category bitset becomes the categories going left; the other
    categories seen when fitting go right, and unseen ones go where missing
    values go, as scikit-learn's predictor does.
    """
    known, f_idx_map = est._bin_mapper.make_known_categories_bitsets()
    link_name = type(est._loss.link).__name__
    links = {"IdentityLink": "identity", "LogitLink": "sigmoid", "LogLink": "exp",
             "MultinomialLogit": "softmax"}
    if link_name not in links:
        raise Unsupported("%s with the %s link" % (type(est).__name__, link_name))
    out = []
    for it in est._predictors:
        for g, pr in enumerate(it):
            nodes = pr.nodes
            leaf = nodes["is_leaf"].astype(bool)
            t = {"group": g,
                 "feature": [0 if lf else int(f) for f, lf in zip(nodes["feature_idx"], leaf)],
                 "threshold": [0.0 if lf else float(v) for v, lf in zip(nodes["num_threshold"], leaf)],
                 "left": [-1 if lf else int(v) for v, lf in zip(nodes["left"], leaf)],
                 "right": [-1 if lf else int(v) for v, lf in zip(nodes["right"], leaf)],
                 "value": [float(v) if lf else 0.0 for v, lf in zip(nodes["value"], leaf)],
                 "missing_left": [0 if lf else int(v) for v, lf in zip(nodes["missing_go_to_left"], leaf)]}
            if nodes["is_categorical"][~leaf].any():
                cats = []
                for nd, lf in zip(nodes, leaf):
                    if lf or not nd["is_categorical"]:
                        cats.append(None)
                        continue
                    left = _bits(pr.raw_left_cat_bitsets[nd["bitset_idx"]])
                    seen = _bits(known[f_idx_map[nd["feature_idx"]]])
                    cats.append([left, [c for c in seen if c not in set(left)]])
                t["cat_sets"] = cats
            out.append(t)
    base = _nums(np.asarray(est._baseline_prediction, dtype=np.float64).ravel())
    k = int(est.n_trees_per_iteration_)
    m = {"kind": "trees", "comparison": "le", "link": links[link_name], "trees": out, "base": base}
    if isinstance(est, _hgb_classifier()):
        m["classes"] = [c.item() if hasattr(c, "item") else c for c in classes]
        if k == 1:
            m.update(task="binary", n_classes=2)
        else:
            m.update(task="multiclass", n_classes=k)
    else:
        m["task"] = "regression"
    return m


def _negative_categories_missing(ex, model, refs):
    """The features of categorical splits through a missing_below step.

    scikit-learn's HistGradientBoosting predictor reads any negative value
    of a categorical feature as missing, where a native tree's categorical
    node truncates toward zero first (-0.5 is category 0 there, LightGBM's
    rule).  Such a feature is split on categorically only, so making its
    negative values NaN before the trees gives scikit-learn's routing.
    """
    cat = set()
    for t in model.get("trees", ()):
        for f, c in zip(t["feature"], t.get("cat_sets") or ()):
            if c is not None:
                cat.add(f)
    if not cat:
        return refs
    cat = sorted(cat)
    name = ex.add("missing_below", **{"in": [refs[j] for j in cat]}, threshold=0.0)
    refs = list(refs)
    for j, r in zip(cat, ex.outs(name, len(cat))):
        refs[j] = r
    return refs


def _hgb_classifier():
    from sklearn.ensemble import HistGradientBoostingClassifier
    return HistGradientBoostingClassifier


def _used_features(model, nf):
    """Features a native model reads (to drop wide text columns it ignores)."""
    if model.get("kind") == "linear":
        coef = np.asarray([[0.0 if v is None else v for v in r] for r in model["coef"]])
        return [j for j in range(nf) if np.any(coef[:, j] != 0)]
    if model.get("kind") == "trees":
        used = set()
        for t in model["trees"]:
            for f, l in zip(t["feature"], t["left"]):
                if l >= 0:
                    used.add(f)
        return sorted(used)
    return list(range(nf))


def _compact(model, keep):
    pos = {j: i for i, j in enumerate(keep)}
    if model.get("kind") == "linear":
        model["coef"] = [[r[j] for j in keep] for r in model["coef"]]
    elif model.get("kind") == "trees":
        for t in model["trees"]:
            t["feature"] = [pos[f] if l >= 0 else 0 for f, l in zip(t["feature"], t["left"])]


def _sparse_out(t, sparse_in):
    """Whether transformer t, fed a sparse matrix or not, gives one."""
    from sklearn.pipeline import Pipeline, FeatureUnion
    from sklearn.compose import ColumnTransformer
    from sklearn import preprocessing as pp
    from sklearn.impute import MissingIndicator
    from sklearn.feature_extraction import text as fe
    if t is None or isinstance(t, str):
        return sparse_in
    if isinstance(t, Pipeline):
        for _, s in t.steps:
            sparse_in = _sparse_out(s, sparse_in)
        return sparse_in
    if isinstance(t, ColumnTransformer):
        return bool(getattr(t, "sparse_output_", False))
    if isinstance(t, FeatureUnion):
        # scikit-learn stacks sparse when any part is
        return any(_sparse_out(tr, sparse_in) for _, tr in t.transformer_list if tr != "drop")
    if isinstance(t, (fe.HashingVectorizer, fe.CountVectorizer)):
        return True
    if isinstance(t, pp.OneHotEncoder):
        return bool(getattr(t, "sparse_output", getattr(t, "sparse", True)))
    if isinstance(t, pp.KBinsDiscretizer):
        return t.encode == "onehot"
    if isinstance(t, MissingIndicator):
        return sparse_in if t.sparse == "auto" else bool(t.sparse)
    # scalers, imputers, binarizer, normalizer, polynomial features: as fed
    return sparse_in


def _explicit_zeros(t):
    """A transformer of the pipeline that can store a 0 in a sparse matrix."""
    from sklearn.pipeline import Pipeline, FeatureUnion
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_extraction import text as fe
    if isinstance(t, Pipeline):
        return next((z for _, s in t.steps if (z := _explicit_zeros(s))), None)
    if isinstance(t, ColumnTransformer):
        return next((z for _, tr, _ in t.transformers_ if (z := _explicit_zeros(tr))), None)
    if isinstance(t, FeatureUnion):
        return next((z for _, tr in t.transformer_list if (z := _explicit_zeros(tr))), None)
    if isinstance(t, fe.HashingVectorizer) and t.alternate_sign:
        return "HashingVectorizer(alternate_sign=True)"
    return None


def _depth_check(model):
    """Trees deeper than the server reads (HB_MAX_DEPTH) are refused here."""
    for i, t in enumerate(model.get("trees", [])):
        left, right = t["left"], t["right"]
        depth, stack = 0, [(0, 0)]
        while stack:
            n, d = stack.pop()
            depth = max(depth, d)
            if left[n] >= 0:
                stack += [(left[n], d + 1), (right[n], d + 1)]
        if depth > MAX_DEPTH:
            raise Unsupported("tree %d is %d levels deep; hbird reads trees of at most %d "
                              "levels (fit with max_depth=%d or less)" % (i, depth, MAX_DEPTH, MAX_DEPTH))


def _top_refs(t, refs, columns):
    """The table's columns as a top-level step reads them: text where it
    reads text (a ColumnTransformer says so per transformer itself)."""
    from sklearn import preprocessing as pp
    from sklearn.feature_extraction import text as fe
    if isinstance(t, (fe.HashingVectorizer, fe.CountVectorizer)):
        return [TextRef(r) if r in columns else r for r in refs]
    if isinstance(t, (pp.OneHotEncoder, pp.OrdinalEncoder)):
        return [TextRef(r) if r in columns and any(isinstance(v, str) for v in c) else r
                for r, c in zip(refs, t.categories_)]
    return refs


def export(pipe, columns=None, costs=None):
    """hbird pipeline JSON (a dict) for a fitted Pipeline or estimator."""
    from sklearn.pipeline import Pipeline
    if columns is None:
        columns = getattr(pipe, "feature_names_in_", None)
        if columns is None:
            raise Unsupported("give the column names (columns=[...])")
    ex = Exporter([str(c) for c in columns])
    if isinstance(pipe, Pipeline):
        steps = [s for _, s in pipe.steps]
    else:
        steps = [pipe]
    refs = list(ex.columns)
    final = steps[-1]
    for s in steps[:-1]:
        refs = ex.emit(s, _top_refs(s, refs, ex.columns))
    for r in refs:
        if isinstance(r, TextRef):
            raise Unsupported("text column %r reaches the estimator untransformed" % r.name)
        if r in ex.columns:
            ex.use(r, "numeric")
    model = _estimator(final, len(refs))
    _depth_check(model)
    sparse = False
    for s in steps[:-1]:
        sparse = _sparse_out(s, sparse)
    if model.get("format") == "xgboost-json" and sparse:
        # XGBoost reads the zeros a sparse matrix leaves out as missing
        # values, and a zero the matrix stores as the value 0: a row read by
        # row cannot tell them apart
        z = next((z for z in map(_explicit_zeros, steps[:-1]) if z), None)
        if z:
            raise Unsupported("%s before an XGBoost model on a sparse matrix: colliding terms "
                              "that cancel are a stored 0, which XGBoost reads as the value 0 "
                              "and hbird as missing" % z)
        model["zero_is_missing"] = True
    if "kind" in model:
        keep = _used_features(model, len(refs))
        if not keep:
            keep = [0]
        if len(keep) < len(refs):
            _compact(model, keep)
            refs = [refs[j] for j in keep]
        refs = _negative_categories_missing(ex, model, refs)
    costs = costs or {}
    inputs = []
    for c in ex.columns:
        if c not in ex.types:
            continue
        t = ex.types[c]
        inputs.append({"name": c, "type": t,
                       "cost": costs.get(c, "cheap" if t == "numeric" else "medium")})
    # text steps whose columns are never referred to cost nothing: keep them anyway
    return {"format": "hbird-pipeline", "version": 1, "inputs": inputs,
            "steps": ex.steps, "features": refs, "model": model}


def main(argv):
    import argparse
    import pickle
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("pickle", help="a pickled, fitted scikit-learn Pipeline")
    ap.add_argument("--columns", help="comma-separated names of X's columns")
    a = ap.parse_args(argv)
    with open(a.pickle, "rb") as f:
        pipe = pickle.load(f)
    cols = a.columns.split(",") if a.columns else None
    try:
        doc = export(pipe, cols)
    except Unsupported as e:
        print("hbird.export_sklearn: %s" % e, file=sys.stderr)
        return 2
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
