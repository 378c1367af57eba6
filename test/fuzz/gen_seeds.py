#!/usr/bin/python3
"""Write the committed seed corpora of hbird's fuzz targets.

Run with Debian's interpreter (python3-xgboost 1.7.4, python3-numpy), from
the repository root:

    /usr/bin/python3 test/fuzz/gen_seeds.py

Seeds are small on purpose (a few KB): libFuzzer mutates small inputs much
faster, and every construct of the formats shows up in a tiny model too.

    corpus/xgboost_json/   tiny XGBoost models, Booster.save_model("x.json")
    corpus/xgboost_ubj/    the same models, save_model("x.ubj")
    corpus/lightgbm/       hand-written LightGBM text models
    (model_image seeds are written by run.sh from these, with mkimage.c:
     images depend on the build)
"""

import os
import shutil

import numpy as np
import xgboost as xgb

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")


def data(rng, n, p, missing=0.1):
    x = rng.normal(size=(n, p)).astype(np.float32)
    x[rng.random(size=(n, p)) < missing] = np.nan
    return x


def models():
    rng = np.random.default_rng(7)
    x = data(rng, 300, 4)
    z = np.nan_to_num(x.astype(np.float64))
    y_reg = z[:, 0] - z[:, 1] ** 2 + rng.normal(scale=0.1, size=300)
    y_bin = (y_reg > 0).astype(np.float64)
    y_cls = np.digitize(y_reg, [-1.0, 0.0]).astype(np.float64)
    y_cnt = rng.poisson(np.exp(0.3 * z[:, 0]))
    base = {"nthread": 1, "seed": 0, "tree_method": "hist", "max_depth": 2}

    def train(params, rounds, y, xx=x, **kw):
        dm = xgb.DMatrix(xx, label=y, missing=np.nan, **kw)
        return xgb.train(dict(base, **params), dm, rounds)

    yield "binary", train({"objective": "binary:logistic"}, 3, y_bin,
                          feature_names=["a", "b", "c", "d"])
    yield "multi", train({"objective": "multi:softprob", "num_class": 3}, 2, y_cls)
    yield "softmax", train({"objective": "multi:softmax", "num_class": 3}, 1, y_cls)
    yield "poisson", train({"objective": "count:poisson"}, 2, y_cnt)
    yield "logitraw", train({"objective": "binary:logitraw", "max_depth": 3}, 2, y_bin)
    yield "dart", train({"booster": "dart", "objective": "reg:squarederror",
                         "rate_drop": 0.5, "one_drop": 1}, 3, y_reg)
    yield "linear", train({"booster": "gblinear", "objective": "reg:squarederror"},
                          2, y_reg)
    yield "rank", train({"objective": "rank:pairwise"}, 2, y_bin)
    yield "types", train({"objective": "reg:squarederror"}, 2, y_reg,
                         feature_names=["q", "i", "n", "f"],
                         feature_types=["q", "i", "int", "float"])

    xc = x.copy()
    xc[:, 1] = rng.integers(0, 5, size=300)
    xc[:, 3] = rng.integers(0, 40, size=300)
    y_cat = np.where(np.isin(xc[:, 1], [1, 3]), 1.0, -1.0) + 0.1 * z[:, 0]
    yield "categorical", train({"objective": "reg:squarederror",
                                "max_cat_to_onehot": 1}, 3, y_cat, xx=xc,
                               feature_types=["q", "c", "q", "c"],
                               enable_categorical=True)


LIGHTGBM = {
    "numerical": """tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=2
objective=regression
feature_names=a b c
feature_infos=[-3:3] [-3:3] [-3:3]
tree_sizes=1 1

Tree=0
num_leaves=3
num_cat=0
split_feature=0 1
split_gain=1 1
threshold=0.5 -1.0000000000000001e-35
decision_type=2 10
left_child=1 -1
right_child=-2 -3
leaf_value=0.25 -0.5 1.5
leaf_weight=1 1 1
leaf_count=1 1 1
internal_value=0 0
internal_weight=1 1
internal_count=3 2
is_linear=0
shrinkage=0.1


Tree=1
num_leaves=1
num_cat=0
split_feature=
split_gain=
threshold=
decision_type=
left_child=
right_child=
leaf_value=0.125
leaf_weight=
leaf_count=
internal_value=
internal_weight=
internal_count=
is_linear=0
shrinkage=1


end of trees

feature_importances:
a=1
b=1

parameters:
[boosting: gbdt]
[objective: regression]
end of parameters

pandas_categorical:null
""",
    "multiclass": """tree
version=v4
num_class=3
num_tree_per_iteration=3
label_index=0
max_feature_idx=1
objective=multiclass num_class:3
feature_names=x y
feature_infos=[0:1] [0:1]
tree_sizes=1 1 1

Tree=0
num_leaves=2
num_cat=0
split_feature=0
split_gain=1
threshold=0.5
decision_type=8
left_child=-1
right_child=-2
leaf_value=0.1 -0.1
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=1
internal_count=2
is_linear=0
shrinkage=1


Tree=1
num_leaves=2
num_cat=0
split_feature=1
split_gain=1
threshold=0.25
decision_type=0
left_child=-1
right_child=-2
leaf_value=0.2 -0.2
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=1
internal_count=2
is_linear=0
shrinkage=1


Tree=2
num_leaves=2
num_cat=0
split_feature=0
split_gain=1
threshold=0.75
decision_type=4
left_child=-1
right_child=-2
leaf_value=0.3 -0.3
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=1
internal_count=2
is_linear=0
shrinkage=1


end of trees
""",
}


def main():
    for d in ("xgboost_json", "xgboost_ubj", "lightgbm"):
        os.makedirs(os.path.join(HERE, "corpus", d), exist_ok=True)
    for name, booster in models():
        booster.save_model(os.path.join(HERE, "corpus", "xgboost_json", name + ".json"))
        booster.save_model(os.path.join(HERE, "corpus", "xgboost_ubj", name + ".ubj"))
    for ext, d in ((".json", "xgboost_json"), (".ubj", "xgboost_ubj")):
        shutil.copy(os.path.join(FIXTURES, "single_leaf" + ext),
                    os.path.join(HERE, "corpus", d, "single_leaf" + ext))
    shutil.copy(os.path.join(FIXTURES, "lightgbm_tiny.txt"),
                os.path.join(HERE, "corpus", "lightgbm", "tiny.txt"))
    for name, text in LIGHTGBM.items():
        with open(os.path.join(HERE, "corpus", "lightgbm", name + ".txt"), "w") as fh:
            fh.write(text)
    total = 0
    for root, _, files in os.walk(os.path.join(HERE, "corpus")):
        for f in files:
            size = os.path.getsize(os.path.join(root, f))
            assert size < 50 * 1024, (f, size)
            total += size
    print("corpus: %d bytes" % total)


if __name__ == "__main__":
    main()
