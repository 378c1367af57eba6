"""What a model object becomes on the wire: its bytes and the format name.

What must hold:
- The format name is given only where the client knows it for certain:
  an object it serialized itself (an XGBoost booster, an exported
  scikit-learn pipeline, an ONNX ModelProto, a LightGBM booster).  Files
  and bytes go as 'auto' unless the caller names the format: the server
  detects it from the content (one detector, src/core/model.c), not from a
  file name that may lie.
- No temporary files, and as few copies as the drivers allow: a file is
  read once (or, for psycopg2, piece by piece), bytes are passed as they
  are, an XGBoost booster is serialized into one buffer (save_raw).
- The libraries (xgboost, sklearn, onnx, lightgbm) are looked up in
  sys.modules only: an object of theirs cannot exist unless they are
  imported, and hbird itself imports none of them.
"""
import json
import math
import os

from ._conn import _is

# spellings of the two XGBoost formats the server accepts (model.c)
_XGB_RAW = {
    None: "ubj", "auto": "ubj",
    "xgboost-ubj": "ubj", "ubj": "ubj", "ubjson": "ubj", "xgboost-ubjson": "ubj",
    "xgboost-json": "json", "xgboost": "json", "json": "json",
}


class Payload:
    """Model bytes (in memory or in a file), the format to send, the features."""

    def __init__(self, fmt, data=None, path=None, features=None):
        self.format = fmt
        self.path = path
        self.features = None if features is None else [str(f) for f in features]
        self._data = data
        if data is not None:
            self.size = memoryview(data).nbytes
        else:
            self.size = os.stat(path).st_size

    def whole(self):
        """All the bytes as one bytes object (what psycopg 3 sends without
        copying); a file is read once."""
        if self._data is None:
            with open(self.path, "rb") as f:
                return f.read()
        if isinstance(self._data, bytes):
            return self._data
        return bytes(self._data)

    def pieces(self, n):
        """The bytes n at a time: slices of the buffer, or reads of the file."""
        if self._data is None:
            with open(self.path, "rb") as f:
                while True:
                    b = f.read(n)
                    if not b:
                        return
                    yield b
        mv = memoryview(self._data).cast("B")
        for i in range(0, len(mv), n):
            yield mv[i:i + n]


def xgb_estimator_booster(est):
    """The booster an XGBoost scikit-learn estimator predicts with.

    The estimator predicts with the iterations up to best_iteration where
    it was fitted with early stopping (XGBModel._get_iteration_range; the
    booster itself would score them all), and reads its own ``missing``
    value as missing: hbird reads only NULL and NaN so, and the model file
    does not say, so any other value is refused rather than scored as a
    number.
    """
    missing = est.get_params().get("missing", float("nan"))
    try:
        is_nan = missing is not None and math.isnan(float(missing))
    except (TypeError, ValueError):
        is_nan = False
    if missing is not None and not is_nan:
        raise ValueError(
            "%s(missing=%r): hbird reads only NULL and NaN as missing values; fit with "
            "missing=np.nan (map %r to NULL in SQL) to score it" % (type(est).__name__, missing, missing))
    booster = est.get_booster()
    try:
        best = int(est.best_iteration)
    except (AttributeError, TypeError, ValueError):
        best = None
    if best is not None and getattr(est, "booster", None) != "gblinear" \
            and best + 1 < booster.num_boosted_rounds():
        booster = booster[: best + 1]
    return booster


def _need_format(fmt, allowed, what):
    if fmt not in (None, "auto") and fmt not in allowed:
        raise ValueError("%s is uploaded as %s, not %r" % (what, " or ".join(allowed), fmt))


def _json_bytes(doc):
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def payload(model, format=None, features=None):
    """The Payload for anything hbird.upload accepts (see its docstring)."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return Payload(format or "auto", data=model, features=features)
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if isinstance(path, str) and ("\n" in path or path.lstrip().startswith("{")):
            raise TypeError("a str is a file path; give a model's text as bytes (text.encode())")
        if os.path.isdir(path):
            raise IsADirectoryError("%s is a directory, not a model file" % path)
        return Payload(format or "auto", path=path, features=features)
    if isinstance(model, dict):
        fmt = "hbird-pipeline" if model.get("format") == "hbird-pipeline" else "auto"
        return Payload(format or fmt, data=_json_bytes(model), features=features)

    if _is(model, "xgboost", "XGBModel"):
        model = xgb_estimator_booster(model)
    if _is(model, "xgboost", "Booster"):
        raw = _XGB_RAW.get(format)
        if raw is None:
            raise ValueError("an XGBoost model is uploaded as xgboost-json or xgboost-ubj, not %r"
                             % format)
        buf = model.save_raw(raw_format=raw)
        return Payload("xgboost-json" if raw == "json" else "xgboost-ubj",
                       data=bytes(buf), features=features)

    if _is(model, "lightgbm", "LGBMModel"):
        model = model.booster_
    if _is(model, "lightgbm", "Booster"):
        _need_format(format, ("lightgbm-text", "lightgbm"), "a LightGBM model")
        return Payload("lightgbm-text", data=model.model_to_string().encode("utf-8"),
                       features=features)

    if _is(model, "onnx", "ModelProto"):
        _need_format(format, ("onnx",), "an ONNX model")
        return Payload("onnx", data=model.SerializeToString(), features=features)

    if _is(model, "sklearn.base", "BaseEstimator"):
        _need_format(format, ("hbird-pipeline",), "a scikit-learn model")
        from .export_sklearn import export
        if features is None and getattr(model, "feature_names_in_", None) is None:
            raise ValueError("name the columns the scikit-learn model was fitted on: "
                             "features=[...] (they are what SQL columns bind to)")
        # the features name the pipeline's inputs, written into the document
        doc = export(model, columns=None if features is None else list(features))
        return Payload("hbird-pipeline", data=_json_bytes(doc))

    raise TypeError(
        "cannot upload a %s.%s: give an XGBoost Booster or XGBModel, a scikit-learn "
        "estimator or Pipeline, an ONNX ModelProto, a LightGBM Booster, a file path, "
        "bytes, or a model document as a dict"
        % (type(model).__module__, type(model).__qualname__))
