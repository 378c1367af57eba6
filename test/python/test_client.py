"""Tests of the Python client (python/hbird) against a live database.

Run by test/sql_shell/python_client.sh inside the throwaway cluster (PG*
point at it, PGDATABASE at a fresh database); prints TAP lines.  Every
model is uploaded from Python with psycopg 3 and with psycopg2, scored in
SQL, and compared with what the original library predicts: XGBoost's
predict, scikit-learn's predict / predict_proba, the conformance corpus's
expected outputs (LightGBM, ONNX; skipped with a message where the corpus
is absent).  Then refusals (SQLSTATE, message, nothing written),
privileges (42501), version management, transactions, the large-object
path of psycopg2, the client's peak memory on a large model, the command
line and the exporter's old entry point.

Environment: HBIRD_CLI (the installed console script; else skipped),
HB_CONFORMANCE (default ../shared/conformance).
"""
import csv
import inspect
import json
import math
import os
import subprocess
import sys
import tempfile
import traceback

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
try:
    import hbird                    # installed (test/sql_shell/python_client.sh)
except ImportError:
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import hbird
import hbird.client  # noqa: E402
import psycopg  # noqa: E402
import psycopg2  # noqa: E402
import xgboost as xgb  # noqa: E402

FIX = os.path.join(ROOT, "test", "fixtures")
CORPUS = os.environ.get("HB_CONFORMANCE") or os.path.join(ROOT, "..", "shared", "conformance")
ANALYST = "hb_py_analyst"
ADMIN = "hb_py_admin"
TMP = tempfile.mkdtemp(prefix="hbird-py-")
failures = 0


def tap(ok, what, note=""):
    global failures
    if not ok:
        failures += 1
    print("%s - python client: %s%s" % ("ok" if ok else "not ok", what,
                                         (" (%s)" % note) if note else ""), flush=True)


def skip(what, why):
    print("ok - python client: %s # SKIP %s" % (what, why), flush=True)


def case(what):
    """Runs the function as one test: its result is (ok, note) or ok; an
    exception fails it with the traceback on stderr.  A coroutine function
    becomes one too, to be awaited."""
    def report(r, a):
        ok, note = r if isinstance(r, tuple) else (r, "")
        tap(ok, what(*a) if callable(what) else what, note)

    def failed(a):
        traceback.print_exc()
        tap(False, what(*a) if callable(what) else what, "exception, see stderr")

    def wrap(fn):
        if inspect.iscoroutinefunction(fn):
            async def arun(*a, **kw):
                try:
                    r = await fn(*a, **kw)
                except Exception:
                    return failed(a)
                report(r, a)
            return arun

        def run(*a, **kw):
            try:
                r = fn(*a, **kw)
            except Exception:
                return failed(a)
            report(r, a)
        return run
    return wrap


def connect(driver, autocommit=True):
    if driver == "psycopg":
        return psycopg.connect("", autocommit=autocommit)
    c = psycopg2.connect("")
    c.autocommit = autocommit
    return c


def q(conn, sql, params=None):
    cur = conn.cursor()
    cur.execute(sql, params)
    rows = cur.fetchall() if cur.description else None
    cur.close()
    return rows


def worst(got, want, abs_tol=1e-9, rel_tol=1e-6):
    """Largest excess over max(abs_tol, rel_tol * |want|); <= 0: within."""
    got = np.asarray(got, dtype=np.float64).ravel()
    want = np.asarray(want, dtype=np.float64).ravel()
    if got.shape != want.shape:
        return math.inf
    allowed = np.maximum(abs_tol, rel_tol * np.abs(want))
    return float(np.max(np.abs(got - want) - allowed)) if len(got) else 0.0


def score_arrays(conn, name, X, fn="hb_predict"):
    """fn(name, x) over rows of X (NaN -> NULL), in order."""
    rows = [(i, [None if math.isnan(v) else float(v) for v in r]) for i, r in enumerate(X)]
    cur = conn.cursor()
    cur.execute("CREATE TEMP TABLE IF NOT EXISTS hbt_x (id integer, x float8[])")
    cur.execute("TRUNCATE hbt_x")
    cur.executemany("INSERT INTO hbt_x VALUES (%s, %s::float8[])", rows)
    cur.execute("SELECT %s(%%s, x) FROM hbt_x ORDER BY id" % fn, (name,))
    out = [r[0] for r in cur.fetchall()]
    cur.close()
    return out


def read_csv(path):
    with open(path) as f:
        r = csv.reader(f)
        head = next(r)
        rows = [[float(v) if v != "" else math.nan for v in row] for row in r]
    return head, np.array(rows, dtype=np.float64)


def format_of(conn, name):
    return q(conn, "SELECT format FROM hb_models WHERE name = %s AND active", (name,))[0][0]


def n_versions(conn, name):
    return q(conn, "SELECT count(*) FROM hb_models WHERE name = %s", (name,))[0][0]


# ---- models trained here (fixed seeds, one thread)

rng = np.random.RandomState(7)
X4 = rng.normal(size=(400, 4)).astype(np.float32)
X4[rng.rand(*X4.shape) < 0.1] = np.nan
y_bin = (np.nan_to_num(X4[:, 0]) + 0.5 * np.nan_to_num(X4[:, 1]) > 0).astype(int)
y_reg = np.nan_to_num(X4[:, 0]) * 2 + np.nan_to_num(X4[:, 2])
y_multi = np.digitize(np.nan_to_num(X4[:, 1]), [-0.5, 0.5])
Xtest = X4[:200]
NAMES4 = ["amount", "age", "balance", "risk"]

booster_bin = xgb.train({"objective": "binary:logistic", "max_depth": 4, "nthread": 1, "seed": 1},
                        xgb.DMatrix(X4, label=y_bin, feature_names=NAMES4), 30)
booster_reg = xgb.train({"objective": "reg:squarederror", "max_depth": 5, "nthread": 1, "seed": 1},
                        xgb.DMatrix(X4, label=y_reg), 25)
clf_multi = xgb.XGBClassifier(n_estimators=20, max_depth=3, n_jobs=1, random_state=1)
clf_multi.fit(X4, y_multi)
reg_sk = xgb.XGBRegressor(n_estimators=15, max_depth=3, n_jobs=1, random_state=1)
reg_sk.fit(X4, y_reg)
# a learning-to-rank estimator: 40 queries of 10 documents, graded 0-5
ranker = xgb.XGBRanker(objective="rank:pairwise", n_estimators=25, max_depth=4, n_jobs=1,
                       random_state=1)
ranker.fit(X4, np.digitize(y_reg, [-2.0, -1.0, 0.0, 1.0, 2.0]), qid=np.repeat(np.arange(40), 10))

json_path = os.path.join(TMP, "reg.json")
ubj_path = os.path.join(TMP, "reg.ubj")
booster_reg.save_model(json_path)
booster_reg.save_model(ubj_path)
want_bin = booster_bin.predict(xgb.DMatrix(Xtest, feature_names=NAMES4))
want_reg = booster_reg.predict(xgb.DMatrix(Xtest))
want_multi = clf_multi.predict_proba(Xtest)
want_reg_sk = reg_sk.predict(Xtest)
want_rank = ranker.predict(Xtest)


def sklearn_models():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler
    r = np.random.RandomState(3)
    n = 300
    df = pd.DataFrame({
        "age": r.uniform(18, 80, n),
        "income": r.lognormal(10, 0.5, n),
        "city": r.choice(["Oslo", "Lyon", "Kraków", "Porto"], n),
    })
    df.loc[r.rand(n) < 0.1, "age"] = np.nan
    y = ((np.nan_to_num(df["age"], nan=40) > 45) ^ (df["city"] == "Lyon")).astype(int)
    pipe = Pipeline([
        ("prep", ColumnTransformer([
            ("num", Pipeline([("imp", SimpleImputer(strategy="median")), ("sc", StandardScaler())]),
             ["age", "income"]),
            ("cat", OneHotEncoder(handle_unknown="ignore"), ["city"]),
        ])),
        ("lr", LogisticRegression(max_iter=500)),
    ]).fit(df, y)
    test = df.iloc[:150].copy()
    test.loc[test.index[:5], "city"] = "Bergen"    # a category never seen
    Xg = r.normal(size=(300, 3))
    gbr = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0)
    gbr.fit(Xg, Xg[:, 0] * 3 + Xg[:, 1] ** 2)
    return pipe, test, gbr, Xg[:100]


# ---- every format, from each driver, scored in SQL

def formats(driver, sk):
    p = "p3_" if driver == "psycopg" else "p2_"
    conn = connect(driver)

    @case("%s: xgboost.Booster object (UBJSON) scores as Booster.predict" % driver)
    def t():
        v = hbird.upload(conn, p + "bin", booster_bin)
        got = score_arrays(conn, p + "bin", Xtest)
        w = worst(got, want_bin)
        return (v == 1 and format_of(conn, p + "bin") == "xgboost-ubj" and w <= 0,
                "version %s, worst excess %.3g" % (v, w))
    t()

    @case("%s: rows bind to the Booster's feature names" % driver)
    def t():
        q(conn, "CREATE TEMP TABLE tx (id integer, risk float8, balance float8, age float8, amount float8)")
        rows = [(i,) + tuple(None if math.isnan(v) else float(v) for v in (r[3], r[2], r[1], r[0]))
                for i, r in enumerate(Xtest)]
        cur = conn.cursor()
        cur.executemany("INSERT INTO tx VALUES (%s, %s, %s, %s, %s)", rows)
        cur.close()
        got = [r[0] for r in q(conn, "SELECT hb_predict(%s, t) FROM tx t ORDER BY id", (p + "bin",))]
        return worst(got, want_bin) <= 0
    t()

    @case("%s: Booster with format='xgboost-json'" % driver)
    def t():
        hbird.upload(conn, p + "bin_json", booster_bin, format="xgboost-json")
        return (format_of(conn, p + "bin_json") == "xgboost-json"
                and worst(score_arrays(conn, p + "bin_json", Xtest), want_bin) <= 0)
    t()

    @case("%s: XGBClassifier (3 classes) scores as predict_proba" % driver)
    def t():
        hbird.upload(conn, p + "multi", clf_multi)
        got = score_arrays(conn, p + "multi", Xtest, "hb_predict_proba")
        w = worst(got, want_multi)
        return w <= 0, "worst excess %.3g" % w
    t()

    @case("%s: XGBRegressor scores as predict" % driver)
    def t():
        hbird.upload(conn, p + "reg_sk", reg_sk)
        return worst(score_arrays(conn, p + "reg_sk", Xtest), want_reg_sk) <= 0
    t()

    @case("%s: XGBRanker scores as predict, and ranks as it does" % driver)
    def t():
        hbird.upload(conn, p + "rank", ranker)
        got = score_arrays(conn, p + "rank", Xtest)
        w = worst(got, want_rank)
        # the ten best rows in SQL, as the ranker's scores order them (ties by id)
        top = [r[0] for r in q(conn, "SELECT id FROM hbt_x ORDER BY hb_predict(%s, x) DESC, id "
                                     "LIMIT 10", (p + "rank",))]
        want_top = [int(i) for i in np.lexsort((np.arange(len(want_rank)), -want_rank))[:10]]
        return w <= 0 and top == want_top, "worst excess %.3g, top %s, want %s" % (w, top, want_top)
    t()

    for path, fmt in ((json_path, "xgboost-json"), (ubj_path, "xgboost-ubj")):
        @case("%s: %s file, format detected as %s" % (driver, os.path.basename(path), fmt))
        def t():
            name = p + "file_" + fmt
            hbird.upload(conn, name, path)
            got = score_arrays(conn, name, Xtest)
            return format_of(conn, name) == fmt and worst(got, want_reg) <= 0
        t()

    @case("%s: bytes of a file, and features renaming" % driver)
    def t():
        with open(json_path, "rb") as f:
            data = f.read()
        hbird.upload(conn, p + "bytes", data, features=["a", "b", "c", "d"])
        names = [r[0] for r in q(conn, "SELECT feature FROM hb_model_features WHERE name = %s "
                                 "ORDER BY position", (p + "bytes",))]
        return (names == ["a", "b", "c", "d"]
                and worst(score_arrays(conn, p + "bytes", Xtest), want_reg) <= 0), str(names)
    t()

    # LightGBM text: the corpus's models, LightGBM's own outputs
    m = corpus_manifest()
    if m is None:
        skip("%s: LightGBM text file" % driver, "no conformance corpus at %s" % CORPUS)
    else:
        for cid, fn in (("lgbm460/boosters/binary_classification/model", "hb_predict"),
                        ("lgbm460/leaves/lgmulticlass", "hb_predict_proba")):
            @case("%s: LightGBM file %s scores as LightGBM" % (driver, cid))
            def t():
                c = m[cid]
                name = p + "lgbm_" + str(len(fn))
                hbird.upload(conn, name, os.path.join(CORPUS, c["model"]))
                _, X = read_csv(os.path.join(CORPUS, c["input"]))
                _, want = read_csv(os.path.join(CORPUS, c["expected"]["transformed"]))
                got = score_arrays(conn, name, X, fn)
                tol = c["tolerance"]
                w = worst(got, want, tol.get("abs", 0), tol.get("rel", 0))
                return (format_of(conn, name) == "lightgbm-text" and w <= 0,
                        "%d rows, worst excess %.3g" % (len(X), w))
            t()

    # ONNX: a fixture whose expected values are scikit-learn's predict_proba
    @case("%s: ONNX file scores as scikit-learn's predict_proba" % driver)
    def t():
        base = os.path.join(FIX, "onnx", "linear_softmax_binary")
        hbird.upload(conn, p + "onnx", base + ".onnx")
        _, X = read_csv(base + ".csv")
        _, want = read_csv(base + ".expected.csv")
        got = score_arrays(conn, p + "onnx", X, "hb_predict_proba")
        w = worst(got, want, 1e-6, 1e-6)
        return format_of(conn, p + "onnx") == "onnx" and w <= 0, "worst excess %.3g" % w
    t()

    if m is None:
        skip("%s: ONNX corpus model" % driver, "no conformance corpus at %s" % CORPUS)
    else:
        @case("%s: ONNX RandomForestClassifier from the corpus scores as scikit-learn" % driver)
        def t():
            c = m["onnx/sklearn_onnx_2018/SklearnMclRandomForestClassifier"]
            hbird.upload(conn, p + "onnx_rf", os.path.join(CORPUS, c["model"]))
            _, X = read_csv(os.path.join(CORPUS, c["input"]))
            head, want = read_csv(os.path.join(CORPUS, c["expected"]["sklearn"]))
            want = want[:, [i for i, h in enumerate(head) if h.startswith("prob_")]]
            got = score_arrays(conn, p + "onnx_rf", X, "hb_predict_proba")
            w = worst(got, want, c["tolerance"].get("abs", 0), c["tolerance"].get("rel", 0))
            return w <= 0, "worst excess %.3g" % w
        t()

    try:
        import onnx
    except ImportError:
        onnx = None
    if onnx is None:
        skip("%s: onnx.ModelProto object" % driver, "python3-onnx is not installed")
    else:
        @case("%s: onnx.ModelProto object" % driver)
        def t():
            base = os.path.join(FIX, "onnx", "linear_softmax_binary")
            hbird.upload(conn, p + "onnx_obj", onnx.load(base + ".onnx"))
            _, X = read_csv(base + ".csv")
            _, want = read_csv(base + ".expected.csv")
            return worst(score_arrays(conn, p + "onnx_obj", X, "hb_predict_proba"), want, 1e-6, 1e-6) <= 0
        t()

    pipe, test, gbr, Xg = sk

    @case("%s: scikit-learn Pipeline (imputer, scaler, one-hot text) scores as predict_proba" % driver)
    def t():
        v = hbird.upload(conn, p + "churn", pipe)
        q(conn, "CREATE TEMP TABLE cust (id integer, age float8, income float8, city text)")
        cur = conn.cursor()
        cur.executemany("INSERT INTO cust VALUES (%s, %s, %s, %s)",
                        [(i, None if math.isnan(a) else float(a), float(b), c)
                         for i, (a, b, c) in enumerate(zip(test["age"], test["income"], test["city"]))])
        cur.close()
        got = [r[0] for r in q(conn, "SELECT hb_predict_proba(%s, c) FROM cust c ORDER BY id",
                               (p + "churn",))]
        w = worst(got, pipe.predict_proba(test), 1e-12, 1e-9)
        return (v == 1 and format_of(conn, p + "churn") == "hbird-pipeline" and w <= 0,
                "worst excess %.3g" % w)
    t()

    @case("%s: bare GradientBoostingRegressor with features= as column names" % driver)
    def t():
        hbird.upload(conn, p + "gbr", gbr, features=["x", "y", "z"])
        names = [r[0] for r in q(conn, "SELECT feature FROM hb_model_features WHERE name = %s "
                                 "ORDER BY position", (p + "gbr",))]
        w = worst(score_arrays(conn, p + "gbr", Xg), gbr.predict(Xg), 1e-12, 1e-9)
        return names == ["x", "y", "z"] and w <= 0, "%s, worst excess %.3g" % (names, w)
    t()

    @case("%s: a scikit-learn model without column names is refused before sending" % driver)
    def t():
        try:
            hbird.upload(conn, p + "nocols", gbr)
        except ValueError as e:
            return "features=" in str(e) and n_versions(conn, p + "nocols") == 0
        return False
    t()
    conn.close()


_manifest = []


def corpus_manifest():
    if not _manifest:
        path = os.path.join(CORPUS, "manifest.json")
        if not os.path.isfile(path):
            _manifest.append(None)
        else:
            with open(path) as f:
                _manifest.append({c["id"]: c for c in json.load(f)["cases"]})
    return _manifest[0]


def standins():
    """A LightGBM Booster: no LightGBM package in Debian, so a stand-in
    module with the documented method (model_to_string) serves the corpus's
    LightGBM text; the scores are LightGBM's own, from the corpus."""
    m = corpus_manifest()
    if m is None:
        skip("lightgbm.Booster object", "no conformance corpus at %s" % CORPUS)
        return
    import types
    c = m["lgbm460/boosters/binary_classification/model"]
    with open(os.path.join(CORPUS, c["model"])) as f:
        text = f.read()

    class Booster:
        def model_to_string(self):
            return text
    mod = types.ModuleType("lightgbm")
    mod.Booster = Booster
    sys.modules["lightgbm"] = mod
    try:
        for driver in ("psycopg", "psycopg2"):
            @case("%s: lightgbm.Booster object (a stand-in class: no LightGBM in Debian)" % driver)
            def t():
                conn = connect(driver)
                name = "lgbm_obj_" + driver
                hbird.upload(conn, name, Booster())
                _, X = read_csv(os.path.join(CORPUS, c["input"]))
                _, want = read_csv(os.path.join(CORPUS, c["expected"]["transformed"]))
                w = worst(score_arrays(conn, name, X), want, c["tolerance"]["abs"], c["tolerance"]["rel"])
                fmt = format_of(conn, name)
                conn.close()
                return fmt == "lightgbm-text" and w <= 0
            t()
    finally:
        del sys.modules["lightgbm"]


def schemas():
    """hbird in a schema of an odd name, off search_path; a database
    without hbird."""
    admin = connect("psycopg")
    for db in ("hb_pyclient_schema", "hb_pyclient_none"):
        q(admin, "DROP DATABASE IF EXISTS %s" % db)
        q(admin, "CREATE DATABASE %s" % db)
    try:
        for driver in ("psycopg", "psycopg2"):
            @case("%s: hbird installed in schema \"ml 100%%\", not on search_path" % driver)
            def t():
                dsn = "dbname=hb_pyclient_schema"
                conn = psycopg.connect(dsn, autocommit=True) if driver == "psycopg" else psycopg2.connect(dsn)
                if driver == "psycopg2":
                    conn.autocommit = True
                q(conn, 'CREATE SCHEMA IF NOT EXISTS "ml 100%"')
                q(conn, 'CREATE EXTENSION IF NOT EXISTS hbird SCHEMA "ml 100%"')
                q(conn, "SET search_path = pg_catalog")
                v = hbird.upload(conn, "s_" + driver, json_path)
                hbird.activate(conn, "s_" + driver, 1)
                rows = hbird.models(conn, "s_" + driver, as_frame=False)
                every = hbird.models(conn, as_frame=False)     # no name: no parameters of its own
                got = [r[0] for r in q(conn, 'SELECT "ml 100%%".hb_predict(%s, ARRAY[0.5, -1, 2, 0]::float8[])',
                                       ("s_" + driver,))]
                want = booster_reg.predict(xgb.DMatrix(np.array([[0.5, -1, 2, 0]], dtype=np.float32)))
                conn.close()
                return (v == 1 and len(rows) == 1 and rows[0]["active"] and worst(got, want) <= 0
                        and ("s_" + driver) in [r["name"] for r in every])
            t()

        @case("a database without hbird: hbird.Error saying so")
        def t():
            conn = psycopg.connect("dbname=hb_pyclient_none", autocommit=True)
            try:
                hbird.upload(conn, "x", json_path)
            except hbird.Error as e:
                return e.sqlstate is None and "CREATE EXTENSION hbird" in e.message, e.message
            finally:
                conn.close()
            return False
        t()
    finally:
        for db in ("hb_pyclient_schema", "hb_pyclient_none"):
            q(admin, "DROP DATABASE IF EXISTS %s" % db)
        admin.close()


# ---- refusals and privileges

def expect_error(fn, cls, state):
    try:
        fn()
    except hbird.Error as e:
        good = (type(e) is cls and e.sqlstate == state and isinstance(e.__cause__, Exception)
                and e.message == getattr(e.__cause__.diag, "message_primary", None))
        return good, e
    return False, None


def refusals(driver):
    p = "r3_" if driver == "psycopg" else "r2_"
    conn = connect(driver)

    def check(what, fn, name, cls, state, text):
        @case("%s: %s raises %s %s" % (driver, what, cls.__name__, state))
        def t():
            before = n_versions(conn, name)
            good, e = expect_error(fn, cls, state)
            return (good and text in e.message and n_versions(conn, name) == before,
                    repr(e.message if e else None))
        t()

    check("bytes of no known format", lambda: hbird.upload(conn, p + "junk", b"this is not a model"),
          p + "junk", hbird.DataError, "22P02", '"%sjunk"' % p)
    check("an ONNX model with an unsupported operator",
          lambda: hbird.upload(conn, p + "relu", os.path.join(FIX, "onnx", "unsupported_relu.onnx")),
          p + "relu", hbird.NotSupportedError, "0A000", "Relu")
    check("a truncated XGBoost JSON file",
          lambda: hbird.upload(conn, p + "trunc", open(json_path, "rb").read()[:5000]),
          p + "trunc", hbird.DataError, "22P02", '"%strunc"' % p)
    check("an unknown format name", lambda: hbird.upload(conn, p + "fmt", json_path, format="pmml"),
          p + "fmt", hbird.DataError, "22023", "pmml")

    @case("%s: the format error carries the server's hint" % driver)
    def t():
        _, e = expect_error(lambda: hbird.upload(conn, p + "fmt", json_path, format="pmml"),
                            hbird.DataError, "22023")
        return e is not None and "xgboost-json" in (e.hint or "") and "HINT:" in str(e)
    t()

    @case("%s: a model over hbird.max_model_bytes raises LimitError 54000" % driver)
    def t():
        q(conn, "SET hbird.max_model_bytes = '1kB'")
        try:
            good, e = expect_error(lambda: hbird.upload(conn, p + "big", json_path),
                                   hbird.LimitError, "54000")
        finally:
            q(conn, "RESET hbird.max_model_bytes")
        return good and "max_model_bytes" in e.message and n_versions(conn, p + "big") == 0
    t()

    @case("%s: activating a version that does not exist raises NotFoundError 42704" % driver)
    def t():
        hbird.upload(conn, p + "one", json_path)
        good, e = expect_error(lambda: hbird.activate(conn, p + "one", 7), hbird.NotFoundError, "42704")
        return good and "no version 7" in e.message
    t()

    @case("%s: an XGBoost model with a non-XGBoost format is refused before sending" % driver)
    def t():
        try:
            hbird.upload(conn, p + "xfmt", booster_bin, format="onnx")
        except ValueError:
            return n_versions(conn, p + "xfmt") == 0
        return False
    t()

    @case("%s: an object of no known kind raises TypeError" % driver)
    def t():
        try:
            hbird.upload(conn, p + "obj", object())
        except TypeError as e:
            return "cannot upload" in str(e)
        return False
    t()

    # privileges: a role without EXECUTE, and one with it that does not own
    # the model; SET ROLE makes them the role executing (GetUserId)
    @case("%s: a role without the privilege gets PrivilegeError 42501" % driver)
    def t():
        q(conn, "SET ROLE %s" % ANALYST)
        try:
            r = [expect_error(f, hbird.PrivilegeError, "42501") for f in (
                lambda: hbird.upload(conn, p + "priv", json_path),
                lambda: hbird.activate(conn, p + "one", 1),
                lambda: hbird.grant(conn, p + "one", ANALYST),
                lambda: hbird.drop(conn, p + "one"))]
        finally:
            q(conn, "RESET ROLE")
        return (all(g for g, _ in r) and n_versions(conn, p + "priv") == 0
                and n_versions(conn, p + "one") == 1, "; ".join(e.message for _, e in r if e))
    t()

    @case("%s: a model administrator who does not own the model gets 42501" % driver)
    def t():
        q(conn, "SET ROLE %s" % ADMIN)
        try:
            good, e = expect_error(lambda: hbird.upload(conn, p + "one", json_path),
                                   hbird.PrivilegeError, "42501")
            mine = hbird.upload(conn, p + "admins", json_path)    # a new name is allowed
        finally:
            q(conn, "RESET ROLE")
        owner = q(conn, "SELECT owner::text FROM hb_models WHERE name = %s", (p + "admins",))[0][0]
        return good and mine == 1 and owner == ADMIN and n_versions(conn, p + "one") == 1, e.message
    t()
    conn.close()


# ---- versions, grants, models()

def management(driver):
    p = "m3_" if driver == "psycopg" else "m2_"
    conn = connect(driver)
    name = p + "fraud"

    @case("%s: two versions, activate rolls back, scores follow the active version" % driver)
    def t():
        v1 = hbird.upload(conn, name, booster_bin)
        v2 = hbird.upload(conn, name, booster_reg, features=NAMES4)
        rows = hbird.models(conn, name, as_frame=False)
        ok2 = [(r["version"], r["active"]) for r in rows] == [(1, False), (2, True)]
        s2 = score_arrays(conn, name, Xtest)
        hbird.activate(conn, name, 1)
        rows = hbird.models(conn, name, as_frame=False)
        ok1 = [(r["version"], r["active"]) for r in rows] == [(1, True), (2, False)]
        s1 = score_arrays(conn, name, Xtest)
        return ((v1, v2) == (1, 2) and ok1 and ok2 and worst(s2, want_reg) <= 0
                and worst(s1, want_bin) <= 0)
    t()

    @case("%s: grant lets a role score; revoke takes it back (42501)" % driver)
    def t():
        hbird.grant(conn, name, ANALYST)
        grants = q(conn, "SELECT grantee::text FROM hb_model_grants WHERE name = %s", (name,))
        q(conn, "SET ROLE %s" % ANALYST)
        try:
            scored = q(conn, "SELECT hb_predict(%s, ARRAY[0.1, 0.2, 0.3, 0.4]::float8[])", (name,))
        finally:
            q(conn, "RESET ROLE")
        hbird.revoke(conn, name, ANALYST)
        q(conn, "SET ROLE %s" % ANALYST)
        state = None
        try:
            q(conn, "SELECT hb_predict(%s, ARRAY[0.1, 0.2, 0.3, 0.4]::float8[])", (name,))
        except (psycopg.Error, psycopg2.Error) as e:
            state = getattr(e, "sqlstate", None) or getattr(e, "pgcode", None)
        finally:
            q(conn, "RESET ROLE")
        return grants == [(ANALYST,)] and scored[0][0] is not None and state == "42501", state
    t()

    @case("%s: models() is a DataFrame with pandas, the same rows as the list" % driver)
    def t():
        import pandas as pd
        df = hbird.models(conn)
        rows = hbird.models(conn, as_frame=False)
        want_cols = {"name", "version", "active", "format", "task", "n_inputs", "n_features",
                     "sha256", "owner", "uploaded_at"}
        return (isinstance(df, pd.DataFrame) and want_cols <= set(df.columns)
                and df.to_dict("records") == rows
                and [(r["name"], r["version"]) for r in rows] == sorted((r["name"], r["version"]) for r in rows)
                and len(rows) == q(conn, "SELECT count(*) FROM hb_models")[0][0])
    t()

    @case("%s: reassign gives the model another owner" % driver)
    def t():
        hbird.reassign(conn, name, ADMIN)
        return {r["owner"] for r in hbird.models(conn, name, as_frame=False)} == {ADMIN}
    t()

    @case("%s: drop one version, then the model" % driver)
    def t():
        a = hbird.drop(conn, name, 2)
        left = [r["version"] for r in hbird.models(conn, name, as_frame=False)]
        b = hbird.drop(conn, name)
        return a == 1 and left == [1] and b == 1 and n_versions(conn, name) == 0, "%s %s %s" % (a, left, b)
    t()
    conn.close()


# ---- transactions

def transactions():
    other = connect("psycopg")

    @case("psycopg, no autocommit: an upload outside a transaction is committed")
    def t():
        c = connect("psycopg", autocommit=False)
        hbird.upload(c, "tx_p3_commit", json_path)
        status = c.info.transaction_status
        c.close()
        return n_versions(other, "tx_p3_commit") == 1 and status == psycopg.pq.TransactionStatus.IDLE
    t()

    @case("psycopg2, no autocommit: an upload outside a transaction is committed")
    def t():
        c = connect("psycopg2", autocommit=False)
        hbird.upload(c, "tx_p2_commit", json_path)
        status = c.get_transaction_status()
        c.close()
        return (n_versions(other, "tx_p2_commit") == 1
                and status == psycopg2.extensions.TRANSACTION_STATUS_IDLE)
    t()

    for driver in ("psycopg", "psycopg2"):
        @case("%s: inside the caller's transaction the caller decides; a failed upload "
              "leaves the transaction usable" % driver)
        def t():
            c = connect(driver, autocommit=False)
            q(c, "SELECT 1")                      # the caller's transaction is open
            hbird.upload(c, "tx_inner_" + driver, json_path)
            failed, _ = expect_error(lambda: hbird.upload(c, "tx_bad_" + driver, b"junk"),
                                     hbird.DataError, "22P02")
            seen = n_versions(c, "tx_inner_" + driver)
            c.rollback()
            gone = n_versions(other, "tx_inner_" + driver)
            c.close()
            return failed and seen == 1 and gone == 0
        t()

        @case("%s: in a failed transaction the server's 25P02 comes back; rollback() then works"
              % driver)
        def t():
            c = connect(driver, autocommit=False)
            try:
                q(c, "SELECT 1/0")
            except (psycopg.Error, psycopg2.Error):
                pass
            good, e = expect_error(lambda: hbird.upload(c, "tx_failed_" + driver, json_path),
                                   hbird.Error, "25P02")
            c.rollback()
            v = hbird.upload(c, "tx_failed_" + driver, json_path)
            c.close()
            return good and v == 1 and n_versions(other, "tx_failed_" + driver) == 1
        t()
    other.close()


# ---- psycopg2's large-object path, and the client's memory on a large model

def pieces():
    conn = connect("psycopg2")
    saved = hbird.client.CHUNK_BYTES
    hbird.client.CHUNK_BYTES = 4096
    try:
        @case("psycopg2: a model larger than CHUNK_BYTES goes in pieces and scores the same")
        def t():
            size = os.path.getsize(json_path)
            hbird.upload(conn, "pieces_file", json_path)
            with open(json_path, "rb") as f:
                hbird.upload(conn, "pieces_bytes", f.read())
            sha = q(conn, "SELECT DISTINCT sha256 FROM hb_models WHERE name IN ('pieces_file', 'pieces_bytes')")
            return (size > 4 * 4096 and len(sha) == 1
                    and worst(score_arrays(conn, "pieces_file", Xtest), want_reg) <= 0
                    and q(conn, "SELECT count(*) FROM pg_largeobject_metadata")[0][0] == 0,
                    "%d bytes" % size)
        t()

        @case("psycopg2: a refused model sent in pieces leaves no large object behind")
        def t():
            good, _ = expect_error(lambda: hbird.upload(conn, "pieces_junk", b"x" * 20000),
                                   hbird.DataError, "22P02")
            q(conn, "SET ROLE %s" % ANALYST)
            try:
                denied, _ = expect_error(lambda: hbird.upload(conn, "pieces_denied", json_path),
                                         hbird.PrivilegeError, "42501")
            finally:
                q(conn, "RESET ROLE")
            return good and denied and q(conn, "SELECT count(*) FROM pg_largeobject_metadata")[0][0] == 0
        t()
    finally:
        hbird.client.CHUNK_BYTES = saved
        conn.close()


def large_model(path, mb):
    """An XGBoost JSON model of about mb MB: booster_reg's trees repeated."""
    doc = json.loads(booster_reg.save_raw("json"))
    model = doc["learner"]["gradient_booster"]["model"]
    trees, info = model["trees"], model["tree_info"]
    one = len(json.dumps(trees))
    k = max(1, int(mb * 1e6 / one))
    model["trees"] = []
    for j in range(k):
        for t in trees:
            t = dict(t)
            t["id"] = len(model["trees"])
            model["trees"].append(t)
    model["tree_info"] = info * k
    model["gbtree_model_param"]["num_trees"] = str(len(model["trees"]))
    with open(path, "w") as f:
        json.dump(doc, f)
    return k


MEMORY_PROBE = r"""
import os, sys
sys.path[:0] = [p for p in os.environ.get("HB_PY_PATH", "").split(":") if p]
import hbird, %(driver)s
def hwm():
    for l in open("/proc/self/status"):
        if l.startswith("VmHWM:"):
            return int(l.split()[1]) * 1024
conn = %(connect)s
hbird.models(conn, as_frame=False)      # everything imported and connected
before = hwm()
v = hbird.upload(conn, "mem_" + "%(driver)s", sys.argv[1])
print(v, before, hwm())
"""


def memory():
    path = os.path.join(TMP, "large.json")
    large_model(path, 20)
    size = os.path.getsize(path)
    res = {}
    # psycopg 3: the file's bytes and libpq's copy of them; psycopg2: pieces
    # of CHUNK_BYTES, hex-escaped (a few copies of a piece, whatever the size)
    for driver, conn_expr, limit in (
            ("psycopg", "psycopg.connect('', autocommit=True)", 2.3 * size),
            ("psycopg2", "psycopg2.connect('')", 16 * hbird.client.CHUNK_BYTES)):
        @case("%s: client peak memory uploading a %.0f MB file" % (driver, size / 1e6))
        def t():
            env = dict(os.environ, HB_PY_PATH=os.path.dirname(os.path.dirname(hbird.__file__)))
            out = subprocess.run([sys.executable, "-c", MEMORY_PROBE % {"driver": driver, "connect": conn_expr},
                                  path], env=env, capture_output=True, text=True, timeout=300, cwd=TMP)
            if out.returncode != 0:
                sys.stderr.write(out.stderr)
                return False
            v, before, after = map(int, out.stdout.split())
            res[driver] = (after - before) / size
            return (v == 1 and after - before < limit,
                    "peak grew by %.1f MB, %.2fx the file size (limit %.1f MB)"
                    % ((after - before) / 1e6, res[driver], limit / 1e6))
        t()
    return res


# ---- the command line

def cli(sk):
    exe = os.environ.get("HBIRD_CLI")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    module = ["/usr/bin/python3", "-m", "hbird"]

    def run(cmd, *args, stdin=None):
        # not from the repository's root, where the extension's hbird.so
        # would be found first by 'python3 -m hbird'
        return subprocess.run(cmd + list(args), env=env, input=stdin, capture_output=True,
                              timeout=120, cwd=TMP)

    conn = connect("psycopg")
    if not exe:
        skip("console script", "HBIRD_CLI is not set (the package is not installed)")
    else:
        @case("hbird upload / models --json / activate / grant / drop (console script)")
        def t():
            dsn = "dbname=%s" % os.environ.get("PGDATABASE", "")
            a = run([exe], "upload", "--dsn", dsn, "cli_m", json_path)
            b = run([exe], "--dsn", dsn, "upload", "cli_m", ubj_path, "--format", "xgboost-ubj")
            c = run([exe], "models", "cli_m", "--json")
            d = run([exe], "activate", "cli_m", "1")
            e = run([exe], "grant", "cli_m", ANALYST)
            f = run([exe], "models")
            listed = json.loads(c.stdout) if c.returncode == 0 else []
            ok = (a.stdout == b"1\n" and b.stdout == b"2\n"
                  and [(r["version"], r["format"]) for r in listed] == [(1, "xgboost-json"), (2, "xgboost-ubj")]
                  and d.returncode == 0 and e.returncode == 0
                  and q(conn, "SELECT version FROM hb_models WHERE name = 'cli_m' AND active") == [(1,)]
                  and q(conn, "SELECT count(*) FROM hb_model_grants WHERE name = 'cli_m'") == [(1,)]
                  and f.returncode == 0 and b"cli_m" in f.stdout and b"xgboost-ubj" in f.stdout)
            g = run([exe], "drop", "cli_m")
            for r in (a, b, c, d, e, f, g):
                sys.stderr.write(r.stderr.decode())
            return ok and g.stdout == b"2\n" and n_versions(conn, "cli_m") == 0
        t()

        @case("hbird: a refused model exits 1 with the SQLSTATE on stderr")
        def t():
            r = run([exe], "upload", "cli_bad", "-", stdin=b"not a model")
            return (r.returncode == 1 and b"SQLSTATE 22P02" in r.stderr and b'"cli_bad"' in r.stderr,
                    r.stderr.decode().strip())
        t()

    @case("python3 -m hbird with psycopg2: upload from standard input, models")
    def t():
        with open(os.path.join(FIX, "onnx", "linear_softmax_binary.onnx"), "rb") as f:
            data = f.read()
        a = run(module, "--driver", "psycopg2", "upload", "cli_stdin", "-", stdin=data)
        b = run(module, "--driver", "psycopg2", "models", "cli_stdin")
        sys.stderr.write(a.stderr.decode() + b.stderr.decode())
        return (a.returncode == 0 and a.stdout == b"1\n" and b"onnx" in b.stdout
                and format_of(conn, "cli_stdin") == "onnx")
    t()

    @case("hbird: a role without the privilege exits 1 with SQLSTATE 42501")
    def t():
        r = run(module, "--dsn", "options='-c role=%s'" % ANALYST, "upload", "cli_priv", json_path)
        return r.returncode == 1 and b"SQLSTATE 42501" in r.stderr, r.stderr.decode().strip()
    t()

    @case("the exporter's old entry point and python3 -m hbird.export_sklearn write the same document")
    def t():
        import pickle
        from hbird.export_sklearn import export
        pipe = sk[0]
        pkl = os.path.join(TMP, "pipe.pkl")
        with open(pkl, "wb") as f:
            pickle.dump(pipe, f)
        a = run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "hbird_export_sklearn.py")], pkl)
        b = run(["/usr/bin/python3", "-m", "hbird.export_sklearn"], pkl)
        want = json.loads(json.dumps(export(pipe)))
        return (a.returncode == 0 and b.returncode == 0
                and json.loads(a.stdout) == want and json.loads(b.stdout) == want)
    t()
    conn.close()


# ---- the exporter against scikit-learn, where it went wrong before

def exporter_cases():
    """Estimators and transformers whose export was silently wrong or failed
    with an unrelated error: each scores as scikit-learn does, or is refused
    by name before anything is sent."""
    import pandas as pd
    from sklearn import linear_model as lm, preprocessing as pp
    from sklearn.compose import ColumnTransformer
    from sklearn.ensemble import GradientBoostingClassifier, GradientBoostingRegressor
    from sklearn.pipeline import Pipeline
    from sklearn.tree import DecisionTreeClassifier
    from hbird.export_sklearn import Unsupported
    conn = connect("psycopg")
    r = np.random.RandomState(7)
    X = r.normal(size=(400, 3))
    y2 = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
    y3 = np.digitize(X[:, 0] + 0.3 * X[:, 2], [-0.5, 0.5])
    # rows far outside the fitted range too (a clipping scaler must clip them)
    Xt = np.vstack([X[:50], r.normal(scale=8.0, size=(50, 3))])

    def arrays(name, fn, want, tol=1e-9):
        got = score_arrays(conn, name, Xt, fn)
        w = worst(got, want, tol, tol)
        return w <= 0, "worst excess %.3g" % w

    @case("exporter: MinMaxScaler(clip=True) clips rows outside the fitted range")
    def t():
        pipe = Pipeline([("mm", pp.MinMaxScaler(feature_range=(-1, 2), clip=True)),
                         ("lr", lm.LinearRegression())]).fit(X, X[:, 0] * 3 - X[:, 1])
        hbird.upload(conn, "ex_clip", pipe, features=["a", "b", "c"])
        return arrays("ex_clip", "hb_predict", pipe.predict(Xt))
    t()

    @case("exporter: binary LogisticRegression(multi_class='multinomial') scores as predict_proba")
    def t():
        m = lm.LogisticRegression(multi_class="multinomial").fit(X, y2)
        hbird.upload(conn, "ex_lr_mn", m, features=["a", "b", "c"])
        ok, note = arrays("ex_lr_mn", "hb_predict", m.predict_proba(Xt)[:, 1])
        cls = score_arrays(conn, "ex_lr_mn", Xt, "hb_predict_class")
        return ok and list(cls) == list(m.predict(Xt)), note
    t()

    @case("exporter: SGDClassifier(loss='log_loss') on 3 classes: hb_predict_proba is predict_proba")
    def t():
        m = lm.SGDClassifier(loss="log_loss", random_state=0).fit(X, y3)
        hbird.upload(conn, "ex_sgd3", m, features=["a", "b", "c"])
        got = score_arrays(conn, "ex_sgd3", Xt, "hb_predict_proba")
        w = worst(got, m.predict_proba(Xt), 1e-9, 1e-9)
        return w <= 0, "worst excess %.3g" % w
    t()

    for est in (GradientBoostingRegressor(init=lm.LinearRegression(), n_estimators=5),
                GradientBoostingClassifier(init=lm.LogisticRegression(), n_estimators=5)):
        @case("exporter: %s with an estimator as init is refused" % type(est).__name__)
        def t():
            est.fit(X, y2)
            try:
                hbird.upload(conn, "ex_init", est, features=["a", "b", "c"])
            except Unsupported as e:
                return "init=" in str(e) and n_versions(conn, "ex_init") == 0, str(e)
            return False
        t()

    @case("exporter: HistGradientBoosting categorical values below 0 are missing, as scikit-learn")
    def t():
        from sklearn.ensemble import HistGradientBoostingRegressor
        c = r.randint(0, 5, 2000).astype(float)
        x = r.normal(size=2000)
        Xc = np.column_stack([c, x, r.randint(0, 3, 2000).astype(float)])
        m = HistGradientBoostingRegressor(categorical_features=[0, 2], max_iter=20,
                                          random_state=0)
        m.fit(Xc, np.where(c == 0, 5.0, 0.0) + x - 3.0 * (c == 2) + Xc[:, 2])
        # -0.5 and -0.999 are missing there (category 0 under LightGBM's
        # truncation), 0.5 and 2.7 categories 0 and 2, 7 unseen: missing
        v = np.array([0.0, -0.5, -0.999, -1.0, -3.0, np.nan, 0.5, 2.7, 7.0, -0.0])
        Xt2 = np.column_stack([np.tile(v, 10), r.normal(size=100), np.repeat(v, 10)])
        hbird.upload(conn, "ex_hgb_neg", m, features=["a", "b", "c"])
        got = score_arrays(conn, "ex_hgb_neg", Xt2, "hb_predict")
        w = worst(got, m.predict(Xt2), 1e-9, 1e-9)
        return w <= 0 and np.ptp(m.predict(Xt2[:10])) > 1, "worst excess %.3g" % w
    t()

    @case("exporter: GradientBoostingRegressor(init='zero') scores as predict")
    def t():
        m = GradientBoostingRegressor(init="zero", n_estimators=10, random_state=0).fit(X, X[:, 0] + 5)
        hbird.upload(conn, "ex_gb_zero", m, features=["a", "b", "c"])
        return arrays("ex_gb_zero", "hb_predict", m.predict(Xt))
    t()

    @case("exporter: a multi-output classifier is refused by name")
    def t():
        m = DecisionTreeClassifier(max_depth=3).fit(X, np.column_stack([y2, y3]))
        try:
            hbird.upload(conn, "ex_mo", m, features=["a", "b", "c"])
        except Unsupported as e:
            return "multi-output classifier" in str(e), str(e)
        return False
    t()

    @case("exporter: a column named like a step's output is not confused with it")
    def t():
        df = pd.DataFrame({"a": X[:, 0], "standard1:0": X[:, 1]})
        pipe = Pipeline([("ct", ColumnTransformer([("sc", pp.StandardScaler(), ["a"]),
                                                   ("keep", "passthrough", ["standard1:0"])])),
                         ("lr", lm.LinearRegression())]).fit(df, X[:, 0] * 2 + X[:, 1] * 7)
        hbird.upload(conn, "ex_names", pipe)
        q(conn, 'CREATE TEMP TABLE ex_names_t (id integer, a float8, "standard1:0" float8)')
        cur = conn.cursor()
        cur.executemany("INSERT INTO ex_names_t VALUES (%s, %s, %s)",
                        [(i, float(v[0]), float(v[1])) for i, v in enumerate(Xt)])
        cur.close()
        got = [row[0] for row in q(conn, "SELECT hb_predict('ex_names', t) FROM ex_names_t t ORDER BY id")]
        want = pipe.predict(pd.DataFrame({"a": Xt[:, 0], "standard1:0": Xt[:, 1]}))
        w = worst(got, want, 1e-9, 1e-9)
        return w <= 0, "worst excess %.3g" % w
    t()

    @case("exporter: integer categories beyond 2**53 are refused; infrequent_if_exist without infrequent ones is ignore")
    def t():
        ids = np.array([[10 ** 18], [10 ** 18 + 1000]] * 20, dtype=np.int64)
        enc = Pipeline([("oh", pp.OneHotEncoder(handle_unknown="ignore")),
                        ("lr", lm.LinearRegression())]).fit(ids, np.arange(40) % 2)
        try:
            hbird.upload(conn, "ex_big", enc, features=["id"])
            refused = False
        except Unsupported as e:
            refused = "2**53" in str(e)
        Xc = np.array([[1.0], [2.0], [3.0]] * 10)
        pipe = Pipeline([("oh", pp.OneHotEncoder(handle_unknown="infrequent_if_exist")),
                         ("lr", lm.LinearRegression())]).fit(Xc, np.arange(30) % 3)
        hbird.upload(conn, "ex_infreq", pipe, features=["a"])
        Xu = np.array([[1.0], [2.0], [3.0], [4.0]])
        got = score_arrays(conn, "ex_infreq", Xu)
        w = worst(got, pipe.predict(Xu), 1e-9, 1e-9)
        return refused and n_versions(conn, "ex_big") == 0 and w <= 0, "worst excess %.3g" % w
    t()

    def table_scores(name, df, types, fn="hb_predict"):
        """fn over the rows of df put in a table (NaN and None -> NULL)."""
        cols = list(df.columns)
        q(conn, "CREATE TEMP TABLE %s_t (id integer, %s)"
          % (name, ", ".join('"%s" %s' % (c, types[c]) for c in cols)))
        rows = [tuple([i] + [None if v is None or (isinstance(v, float) and math.isnan(v)) else v
                             for v in r]) for i, r in enumerate(df.itertuples(index=False))]
        cur = conn.cursor()
        cur.executemany("INSERT INTO %s_t VALUES (%s)" % (name, ", ".join(["%s"] * (len(cols) + 1))),
                        rows)
        cur.close()
        return [row[0] for row in q(conn, "SELECT %s('%s', t) FROM %s_t t ORDER BY id"
                                    % (fn, name, name))]

    try:
        import xgboost as xgb
    except ImportError:
        xgb = None

    @case("exporter: XGBoost on a sparse matrix: a stored value is present however small "
          "(|x| <= 1e-35 read as missing before), an absent one (0) missing")
    def t():
        from sklearn.feature_extraction.text import CountVectorizer
        rs = np.random.RandomState(3)
        xs = rs.choice([np.nan, -1.0, 1.0, 2.0], 300)
        txt = rs.choice(["a b", "b c", "c d", "d a"], 300)
        yv = np.where(np.isnan(xs), 5.0, np.nan_to_num(xs)) + rs.normal(scale=0.1, size=300)
        df = pd.DataFrame({"x": xs, "txt": txt})
        pipe = Pipeline([("ct", ColumnTransformer([("n", "passthrough", ["x"]),
                                                   ("t", CountVectorizer(token_pattern=r"(?u)\b\w+\b"), "txt")],
                                                  sparse_threshold=1.0)),
                         ("m", xgb.XGBRegressor(n_estimators=5, max_depth=2, n_jobs=1))]).fit(df, yv)
        hbird.upload(conn, "ex_sparse_tiny", pipe)
        dt = pd.DataFrame({"x": [1e-36, -1e-36, 1e-300, 1e-20, 0.0, np.nan, 1.0, 2.0],
                           "txt": ["a b", "c d", "b c", "d a", "a b", "c d", "", "d a"]})
        got = table_scores("ex_sparse_tiny", dt, {"x": "float8", "txt": "text"})
        w = worst(got, pipe.predict(dt), 1e-6, 1e-6)
        return w <= 0, "worst excess %.3g; got %s" % (w, got[:4])
    if xgb is not None:
        t()

    for kind in ("nested Pipeline", "FeatureUnion"):
        @case("exporter: XGBoost after a sparse matrix from a %s: absent entries are missing "
              "(the exporter saw no sparse output before)" % kind)
        def t():
            from sklearn.feature_extraction.text import CountVectorizer
            from sklearn.pipeline import FeatureUnion
            docs = ["good", "bad", "good good", "bad bad bad", "ok", "fine ok", "good bad"] * 30
            yv = np.array([2.0, -1.0, 4.0, -3.0, 0.0, 0.0, 1.0] * 30)
            ct = ColumnTransformer([("t", CountVectorizer(), "txt")])
            pre = (Pipeline([("ct", ct), ("sc", pp.MaxAbsScaler())]) if kind == "nested Pipeline"
                   else FeatureUnion([("a", ct)]))
            pipe = Pipeline([("prep", pre),
                             ("m", xgb.XGBRegressor(n_estimators=10, max_depth=3, n_jobs=1))])
            pipe.fit(pd.DataFrame({"txt": docs}), yv)
            name = "ex_sparse_" + ("nested" if kind == "nested Pipeline" else "union")
            hbird.upload(conn, name, pipe, features=["txt"])
            dt = pd.DataFrame({"txt": ["good", "bad", "", "ok fine", "good good bad"]})
            got = table_scores(name, dt, {"txt": "text"})
            w = worst(got, pipe.predict(dt), 1e-6, 1e-6)
            return w <= 0, "worst excess %.3g" % w
        if xgb is not None:
            t()

    @case("exporter: a top-level OneHotEncoder (sparse) before XGBoost scores as predict")
    def t():
        city = np.array([1, 2, 3] * 40)
        yv = np.array([1.0, -1.0, 3.0] * 40)
        pipe = Pipeline([("ohe", pp.OneHotEncoder(handle_unknown="ignore")),
                         ("m", xgb.XGBRegressor(n_estimators=10, max_depth=3, n_jobs=1))])
        pipe.fit(pd.DataFrame({"city": city}), yv)
        hbird.upload(conn, "ex_ohe_top", pipe)
        dt = pd.DataFrame({"city": [1, 2, 3, 7]})
        got = table_scores("ex_ohe_top", dt, {"city": "integer"})
        w = worst(got, pipe.predict(dt), 1e-6, 1e-6)
        return w <= 0, "worst excess %.3g; got %s" % (w, got)
    if xgb is not None:
        t()

    @case("exporter: a top-level OneHotEncoder over a text column scores as predict_proba "
          "(a raw ValueError before)")
    def t():
        pipe = Pipeline([("ohe", pp.OneHotEncoder(handle_unknown="ignore")),
                         ("lr", lm.LogisticRegression())])
        pipe.fit(pd.DataFrame({"city": list("abcabcab")}), [0, 1, 1, 0, 1, 0, 0, 1])
        hbird.upload(conn, "ex_ohe_text", pipe)
        dt = pd.DataFrame({"city": ["a", "b", "c", "z"]})
        got = table_scores("ex_ohe_text", dt, {"city": "text"})
        w = worst(got, pipe.predict_proba(dt)[:, 1], 1e-9, 1e-9)
        return w <= 0, "worst excess %.3g" % w
    t()

    @case("exporter: HashingVectorizer(alternate_sign=True) before XGBoost on a sparse matrix is refused "
          "(a stored 0 of terms that cancel read as missing)")
    def t():
        from sklearn.feature_extraction.text import HashingVectorizer
        pipe = Pipeline([("ct", ColumnTransformer([("h", HashingVectorizer(n_features=4, norm=None), "txt")],
                                                  sparse_threshold=1.0)),
                         ("m", xgb.XGBRegressor(n_estimators=5, max_depth=2, n_jobs=1))])
        pipe.fit(pd.DataFrame({"txt": ["w0 w10", "w1", "w2 w3", "w0"] * 10}), np.arange(40) % 3)
        try:
            hbird.upload(conn, "ex_hash_zero", pipe)
        except Unsupported as e:
            return "alternate_sign" in str(e) and n_versions(conn, "ex_hash_zero") == 0, str(e)
        return False, "uploaded"
    if xgb is not None:
        t()

    @case("exporter: a tree deeper than the server reads (64 levels) is refused by the exporter")
    def t():
        from sklearn.tree import DecisionTreeRegressor
        xv = np.arange(200.0).reshape(-1, 1)
        m = DecisionTreeRegressor().fit(xv, 3.0 ** xv.ravel())
        try:
            hbird.upload(conn, "ex_deep", m, features=["x"])
        except Unsupported as e:
            return "levels" in str(e) and n_versions(conn, "ex_deep") == 0, str(e)
        return False, "uploaded (depth %d)" % m.get_depth()
    t()

    @case("exporter: OrdinalEncoder over text whose categories hold None (pandas' NULL from "
          "read_sql) encodes NULL as None's index, as scikit-learn; None and NaN together are refused")
    def t():
        city = (["a", "b", None, "c", "b", None, "a", "c"] * 10)
        yv = np.array([{"a": 1.0, "b": 2.0, "c": 3.0, None: 9.0}[v] for v in city]) + np.arange(80) * 0.01
        df = pd.DataFrame({"city": pd.Series(city, dtype=object)})
        pipe = Pipeline([("ct", ColumnTransformer([("o", pp.OrdinalEncoder(), ["city"])])),
                         ("lr", lm.LinearRegression())]).fit(df, yv)
        hbird.upload(conn, "ex_ord_none", pipe)
        dt = pd.DataFrame({"city": pd.Series(["a", None, "c", "b"], dtype=object)})
        got = table_scores("ex_ord_none", dt, {"city": "text"})
        w = worst(got, pipe.predict(dt), 1e-9, 1e-9)
        both = pd.DataFrame({"city": pd.Series(["a", None, float("nan"), "b"] * 5, dtype=object)})
        try:
            Pipeline([("ct", ColumnTransformer([("o", pp.OrdinalEncoder(), ["city"])])),
                      ("lr", lm.LinearRegression())]).fit(both, np.arange(20.0))
            fitted = True
        except ValueError:
            fitted = False          # a scikit-learn that refuses the mix itself
        refused = True
        if fitted:
            try:
                hbird.upload(conn, "ex_ord_both", Pipeline([
                    ("ct", ColumnTransformer([("o", pp.OrdinalEncoder(), ["city"])])),
                    ("lr", lm.LinearRegression())]).fit(both, np.arange(20.0)))
                refused = False
            except Unsupported as e:
                refused = "None and NaN" in str(e) and n_versions(conn, "ex_ord_both") == 0
        return w <= 0 and refused, "worst excess %.3g; mixed None/NaN %s" % (
            w, "refused" if fitted and refused else "not fitted by scikit-learn" if not fitted else "uploaded")
    t()

    @case("exporter: SGDClassifier(loss='modified_huber') is refused by name (its predict_proba "
          "clips the margins)")
    def t():
        m = lm.SGDClassifier(loss="modified_huber", random_state=0).fit(X, y2)
        try:
            hbird.upload(conn, "ex_mhuber", m, features=["a", "b", "c"])
        except Unsupported as e:
            return "modified_huber" in str(e) and n_versions(conn, "ex_mhuber") == 0, str(e)
        return False, "uploaded"
    t()

    @case("exporter: forests average after the sum (link 'mean'): probabilities and classes are "
          "scikit-learn's to the bit, ties at 0.5 included; regression forests too")
    def t():
        from sklearn.ensemble import ExtraTreesRegressor, RandomForestClassifier, RandomForestRegressor
        rf = np.random.default_rng(0)
        Xf = rf.normal(size=(3000, 3))
        yf = rf.integers(0, 2, 3000)
        notes, ok = [], True
        for name, m in (("ex_rf3", RandomForestClassifier(n_estimators=3, min_samples_leaf=3, max_leaf_nodes=100,
                                                          random_state=0)),
                        ("ex_rf6", RandomForestClassifier(n_estimators=6, min_samples_leaf=2, max_leaf_nodes=100,
                                                          random_state=0))):
            m.fit(Xf[:1000], yf[:1000])
            hbird.upload(conn, name, m, features=["a", "b", "c"])
            proba = m.predict_proba(Xf)
            ties = int(np.sum(proba[:, 0] == proba[:, 1]))
            got = score_arrays(conn, name, Xf, "hb_predict_proba")
            cls = score_arrays(conn, name, Xf, "hb_predict_class")
            differ = int(np.sum(np.asarray(got, dtype=np.float64) != proba))
            wrong = int(np.sum(np.asarray(cls) != m.predict(Xf)))
            ok = ok and differ == 0 and wrong == 0 and ties > 0
            notes.append("%s: %d ties, %d probabilities and %d classes differ" % (name, ties, differ, wrong))
        for name, m, yv in (("ex_rfr", RandomForestRegressor(n_estimators=7, max_depth=6, random_state=0),
                             Xf[:1000, 0] * 3 + rf.normal(size=1000)),
                            ("ex_etr2", ExtraTreesRegressor(n_estimators=5, max_depth=5, random_state=0),
                             np.column_stack([Xf[:1000, 0], Xf[:1000, 1] - Xf[:1000, 2]]))):
            m.fit(Xf[:1000], yv)
            hbird.upload(conn, name, m, features=["a", "b", "c"])
            fn = "hb_predict_targets" if np.ndim(yv) > 1 else "hb_predict"
            got = np.asarray(score_arrays(conn, name, Xf, fn), dtype=np.float64)
            differ = int(np.sum(got.reshape(m.predict(Xf).shape) != m.predict(Xf)))
            ok = ok and differ == 0
            notes.append("%s: %d scores differ" % (name, differ))
        return ok, "; ".join(notes)
    t()

    @case("exporter: a single DecisionTreeClassifier's class is the largest weighted count (its "
          "predict), its probabilities the counts over their sum, where two counts divide to one")
    def t():
        from sklearn.tree import DecisionTreeClassifier
        xd = np.array([[0.]] * 4 + [[1.]] * 2)
        m = DecisionTreeClassifier(random_state=0).fit(xd, np.array([0, 0, 1, 2, 1, 1]),
                                                       sample_weight=np.array([0.6, 0.3, 0.9, 0.6, 1.0, 1.0]))
        hbird.upload(conn, "ex_dtc_tie", m, features=["x"])
        rows = np.array([[0.], [1.], [-5.]])
        proba = m.predict_proba(rows)
        got = np.asarray(score_arrays(conn, "ex_dtc_tie", rows, "hb_predict_proba"), dtype=np.float64)
        cls = score_arrays(conn, "ex_dtc_tie", rows, "hb_predict_class")
        pred = score_arrays(conn, "ex_dtc_tie", rows, "hb_predict")
        tie = proba[0, 0] == proba[0, 1]
        ok = (tie and int(np.sum(got != proba)) == 0 and list(cls) == list(m.predict(rows)) and
              list(pred) == list(m.predict(rows)))
        note = "probabilities %s, classes %s and %s against predict %s" % (
            got.tolist(), list(cls), list(pred), list(m.predict(rows)))
        # twelve classes: numpy sums a row of 8 or more in eight running sums
        rd = np.random.RandomState(3)
        x12 = rd.randint(0, 4, size=(600, 2)).astype(float)
        m12 = DecisionTreeClassifier(class_weight="balanced", min_samples_leaf=3, random_state=0).fit(
            x12, rd.choice(12, size=600))
        hbird.upload(conn, "ex_dtc12", m12, features=["x", "y"])
        got12 = np.asarray(score_arrays(conn, "ex_dtc12", x12[:200], "hb_predict_proba"), dtype=np.float64)
        cls12 = score_arrays(conn, "ex_dtc12", x12[:200], "hb_predict_class")
        differ = int(np.sum(got12 != m12.predict_proba(x12[:200])))
        wrong = int(np.sum(np.asarray(cls12) != np.searchsorted(m12.classes_, m12.predict(x12[:200]))))
        links = [r[0] for r in q(conn, "SELECT op FROM hb_compile('ex_dtc12', 16) WHERE op IN ('l1', 'mean')")]
        return ok and differ == 0 and wrong == 0 and links == ["l1"], \
            note + "; 12 classes: %d probabilities, %d classes differ (link %s)" % (differ, wrong, links)
    t()

    @case("XGBoost estimators fitted with early stopping score as their predict: iterations up to "
          "best_iteration, uploaded alone and inside a Pipeline")
    def t():
        Xe = r.normal(size=(600, 3))
        ye = (Xe[:, 0] + Xe[:, 1] ** 2 + r.normal(size=600) > 1).astype(int)
        m = xgb.XGBClassifier(n_estimators=200, learning_rate=0.3, max_depth=6, early_stopping_rounds=5,
                              n_jobs=1, random_state=0)
        m.fit(Xe[:400], ye[:400], eval_set=[(Xe[400:], ye[400:])], verbose=False)
        hbird.upload(conn, "ex_es", m, features=["a", "b", "c"])
        got = score_arrays(conn, "ex_es", Xe, "hb_predict")
        cls = score_arrays(conn, "ex_es", Xe, "hb_predict_class")
        w = worst(got, m.predict_proba(Xe)[:, 1], 1e-7, 1e-6)
        sc = pp.StandardScaler().fit(Xe[:400])
        mr = xgb.XGBRegressor(n_estimators=200, learning_rate=0.3, max_depth=4, early_stopping_rounds=5,
                              n_jobs=1, random_state=0)
        mr.fit(sc.transform(Xe[:400]), Xe[:400, 2] + ye[:400], eval_set=[(sc.transform(Xe[400:]),
               Xe[400:, 2] + ye[400:])], verbose=False)
        pipe = Pipeline([("sc", sc), ("m", mr)])
        hbird.upload(conn, "ex_es_pipe", pipe, features=["a", "b", "c"])
        w2 = worst(score_arrays(conn, "ex_es_pipe", Xe, "hb_predict"), pipe.predict(Xe), 1e-6, 1e-6)
        stopped = m.best_iteration + 1 < m.get_booster().num_boosted_rounds() and \
            mr.best_iteration + 1 < mr.get_booster().num_boosted_rounds()
        return (stopped and w <= 0 and list(cls) == list(m.predict(Xe)) and w2 <= 0,
                "best %d of %d, %d of %d; worst excess %.3g, %.3g"
                % (m.best_iteration + 1, m.get_booster().num_boosted_rounds(), mr.best_iteration + 1,
                   mr.get_booster().num_boosted_rounds(), w, w2))
    if xgb is not None:
        t()

    @case("an XGBoost estimator with its own missing value (not NaN) is refused by name, alone "
          "and inside a Pipeline; a float32 NaN is NaN")
    def t():
        m = xgb.XGBRegressor(n_estimators=5, max_depth=2, n_jobs=1, missing=-999.0).fit(X, X[:, 0])
        notes = []
        for name, obj, cls in (("ex_miss", m, ValueError),
                               ("ex_miss_pipe", Pipeline([("sc", pp.StandardScaler().fit(X)), ("m", m)]),
                                Unsupported)):
            try:
                hbird.upload(conn, name, obj, features=["a", "b", "c"])
                notes.append("%s uploaded" % name)
            except cls as e:
                if "missing=-999" not in str(e) or n_versions(conn, name) != 0:
                    notes.append(str(e))
        # NaN of any float type is the default, not a value of its own
        nan32 = xgb.XGBRegressor(n_estimators=5, max_depth=2, n_jobs=1, missing=np.float32("nan")).fit(X, X[:, 0])
        hbird.upload(conn, "ex_miss_nan32", nan32, features=["a", "b", "c"])
        w = worst(score_arrays(conn, "ex_miss_nan32", Xt), nan32.predict(Xt), 1e-6, 1e-6)
        if w > 0:
            notes.append("missing=float32 NaN: worst excess %.3g" % w)
        hbird.drop(conn, "ex_miss_nan32")
        return not notes, "; ".join(notes)
    if xgb is not None:
        t()

    @case("exporter: a word token_pattern the server does not tokenize is refused before upload; "
          "character n-grams ignore it, as scikit-learn does")
    def t():
        from sklearn.feature_extraction.text import CountVectorizer
        docs = ["the cat sat", "a dog ran far", "cats and dogs", "x y z 42", "The End, the end"] * 8
        test_docs = docs[:5] + ["an unseen cat", "", "dog-dog_dog 7"]
        yv = np.arange(len(docs)) % 3

        def pipe(vec):
            return Pipeline([("ct", ColumnTransformer([("v", vec, "doc")])),
                             ("lr", lm.LinearRegression())]).fit(pd.DataFrame({"doc": docs}), yv)
        try:
            hbird.upload(conn, "ex_tok", pipe(CountVectorizer(token_pattern=r"[a-z]+")))
            refused, note = False, "uploaded"
        except Unsupported as e:
            refused, note = "token_pattern" in str(e), str(e)
        chars = pipe(CountVectorizer(analyzer="char_wb", ngram_range=(2, 3), token_pattern=r"[a-z]+"))
        hbird.upload(conn, "ex_tok_chars", chars)
        q(conn, "CREATE TEMP TABLE ex_tok_t (id integer, doc text)")
        cur = conn.cursor()
        cur.executemany("INSERT INTO ex_tok_t VALUES (%s, %s)", list(enumerate(test_docs)))
        cur.close()
        got = [row[0] for row in q(conn, "SELECT hb_predict('ex_tok_chars', t) FROM ex_tok_t t ORDER BY id")]
        w = worst(got, chars.predict(pd.DataFrame({"doc": test_docs})), 1e-9, 1e-9)
        return refused and n_versions(conn, "ex_tok") == 0 and w <= 0, "%s; worst excess %.3g" % (note, w)
    t()

    @case("import hbird gives hbird.export_sklearn")
    def t():
        # a fresh interpreter: this one has imported the module already
        r = subprocess.run([sys.executable, "-c", "import hbird; print(hbird.export_sklearn.export.__name__)"],
                           capture_output=True, text=True, cwd=tempfile.gettempdir())
        return r.stdout.strip() == "export", (r.stdout + r.stderr).strip()[-200:]
    t()
    for name in ("ex_clip", "ex_lr_mn", "ex_sgd3", "ex_gb_zero", "ex_names", "ex_infreq", "ex_tok_chars",
                 "ex_es", "ex_es_pipe", "ex_ord_none", "ex_rf3", "ex_rf6", "ex_rfr", "ex_etr2",
                 "ex_dtc_tie", "ex_dtc12"):
        if n_versions(conn, name):
            hbird.drop(conn, name)
    conn.close()


def setup_roles():
    conn = connect("psycopg")
    for role in (ANALYST, ADMIN):
        q(conn, "DROP ROLE IF EXISTS %s" % role)
        q(conn, "CREATE ROLE %s" % role)
    q(conn, "GRANT EXECUTE ON FUNCTION hb_model_upload(text, bytea, text, text[]) TO %s" % ADMIN)
    conn.close()


def cleanup_roles():
    conn = connect("psycopg")
    for name in [r[0] for r in q(conn, "SELECT DISTINCT name FROM hb_models")]:
        hbird.drop(conn, name)
    q(conn, "REVOKE EXECUTE ON FUNCTION hb_model_upload(text, bytea, text, text[]) FROM %s" % ADMIN)
    for role in (ANALYST, ADMIN):
        q(conn, "DROP ROLE %s" % role)
    conn.close()


# ---- hbird.aio: the same calls awaited on a psycopg AsyncConnection

def async_calls():
    import asyncio
    import hbird.aio

    async def run():
        conn = await psycopg.AsyncConnection.connect("", autocommit=True)
        sync = connect("psycopg")
        try:
            @case("aio: upload of a Booster scores as Booster.predict; models lists it")
            async def t():
                v = await hbird.aio.upload(conn, "aio_bin", booster_bin)
                got = score_arrays(sync, "aio_bin", Xtest)
                listed = await hbird.aio.models(conn, "aio_bin", as_frame=False)
                seen = [(m["version"], m["active"]) for m in listed]
                return v == 1 and worst(got, want_bin) <= 0 and seen == [(1, True)], "version %s, %s" % (v, seen)
            await t()

            @case("aio: a second version, activate back to the first, drop one version")
            async def t():
                v2 = await hbird.aio.upload(conn, "aio_bin", booster_reg)
                await hbird.aio.activate(conn, "aio_bin", 1)
                first = worst(score_arrays(sync, "aio_bin", Xtest), want_bin) <= 0
                dropped = await hbird.aio.drop(conn, "aio_bin", 2)
                left = [m["version"] for m in await hbird.aio.models(conn, "aio_bin", as_frame=False)]
                return v2 == 2 and first and dropped == 1 and left == [1], "v2 %s, dropped %s, left %s" % (v2, dropped, left)
            await t()

            @case("aio: grant, revoke and reassign reach the server (an unknown role: 42704)")
            async def t():
                grants = "SELECT count(*) FROM hb_model_grants WHERE name = 'aio_bin' AND grantee::text = %s"
                await hbird.aio.grant(conn, "aio_bin", ANALYST)
                may = q(sync, grants, (ANALYST,))
                await hbird.aio.revoke(conn, "aio_bin", ANALYST)
                after = q(sync, grants, (ANALYST,))
                try:
                    await hbird.aio.reassign(conn, "aio_bin", "hb_no_such_role")
                    err = None
                except hbird.Error as e:
                    err = e.sqlstate
                return may == [(1,)] and after == [(0,)] and err == "42704", "%s %s %s" % (may, after, err)
            await t()

            @case("aio: a bad model is an hbird.Error with the server's SQLSTATE, and the connection stays usable")
            async def t():
                try:
                    await hbird.aio.upload(conn, "aio_bad", b"{\"learner\": 1}", format="xgboost-json")
                    return False, "no error"
                except hbird.Error as e:
                    state = e.sqlstate
                n = await hbird.aio.models(conn, "aio_bad", as_frame=False)
                return state is not None and state[:2] in ("22", "XX", "0A") and n == [], "%s, %s" % (state, n)
            await t()

            @case("aio: inside the caller's transaction the caller decides (a rollback leaves nothing)")
            async def t():
                async with conn.transaction() as tx:
                    await hbird.aio.upload(conn, "aio_tx", booster_bin)
                    seen = len(await hbird.aio.models(conn, "aio_tx", as_frame=False))
                    raise psycopg.Rollback(tx)
                after = await hbird.aio.models(conn, "aio_tx", as_frame=False)
                return seen == 1 and after == [], "seen %d inside, %d after" % (seen, len(after))
            await t()

            @case("aio: in a failed transaction the server's 25P02 comes back; after rollback() the call works")
            async def t():
                c2 = await psycopg.AsyncConnection.connect("")
                try:
                    try:
                        await c2.execute("SELECT 1 / 0")
                    except psycopg.Error:
                        pass
                    try:
                        await hbird.aio.models(c2, "aio_bin", as_frame=False)
                        state = None
                    except hbird.Error as e:
                        state = e.sqlstate
                    await c2.rollback()
                    n = len(await hbird.aio.models(c2, "aio_bin", as_frame=False))
                    await c2.commit()
                finally:
                    await c2.close()
                return state == "25P02" and n == 1, "%s, then %d" % (state, n)
            await t()

            @case("aio: a synchronous connection is refused with a TypeError naming what it wants")
            async def t():
                try:
                    await hbird.aio.models(sync)
                    return False
                except TypeError as e:
                    return "AsyncConnection" in str(e), str(e)
            await t()

            @case("the synchronous calls refuse an AsyncConnection and point to hbird.aio")
            async def t():
                try:
                    hbird.models(conn)
                    return False
                except TypeError as e:
                    return "hbird.aio" in str(e), str(e)
            await t()
            await hbird.aio.drop(conn, "aio_bin")
        finally:
            await conn.close()
            sync.close()

    asyncio.run(run())


if __name__ == "__main__":
    print("# python client tests (psycopg %s, psycopg2 %s, xgboost %s)"
          % (psycopg.__version__, psycopg2.__version__.split()[0], xgb.__version__), flush=True)
    c0 = connect("psycopg")
    q(c0, "CREATE EXTENSION IF NOT EXISTS hbird")
    c0.close()
    setup_roles()
    SK = sklearn_models()
    for drv in ("psycopg", "psycopg2"):
        formats(drv, SK)
        refusals(drv)
        management(drv)
    standins()
    schemas()
    transactions()
    async_calls()
    exporter_cases()
    pieces()
    ratios = memory()
    cli(SK)
    cleanup_roles()
    if ratios:
        print("# client peak memory over the file size: %s"
              % ", ".join("%s %.2fx" % kv for kv in sorted(ratios.items())))
    sys.exit(1 if failures else 0)
