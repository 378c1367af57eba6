"""The client calls: upload, activate, drop, grant, revoke, reassign, models.

Each is a thin wrapper over hbird's SQL function of the same name (README,
"Uploading and managing models"): the server does every check (format,
privileges, ownership) and the client reports its errors as they are.

What must hold:
- Model bytes travel as a bytea query parameter, never through a file on
  the server.  psycopg 3 sends the bytes object itself as a binary
  parameter; libpq copies it once into its send buffer.  psycopg2 has only
  text parameters (hex escaping: more than twice the size, and several
  copies of that), so above CHUNK_BYTES it sends the model in pieces of
  CHUNK_BYTES, each a bytea parameter, into a large object that the upload
  reads with lo_get and that is unlinked in the same transaction (a
  failure rolls it back with the rest).
- One call, one unit: see _conn.Session.run.
"""
from ._conn import Session
from ._source import payload

# psycopg2 sends models larger than this in pieces of this size
CHUNK_BYTES = 1 << 20


def _fn(s, name):
    return "%s.%s" % (s.schema, name)


def upload(conn, name, model, format=None, features=None):
    """Upload a model as a new version of `name`, make it active, return
    the version number.

    model is one of:
    - an xgboost.Booster, XGBClassifier, XGBRegressor or XGBRanker (sent
      as XGBoost's UBJSON, or JSON with format="xgboost-json");
    - a fitted scikit-learn estimator or Pipeline, written as hbird
      pipeline JSON by hbird.export_sklearn (featurizers included);
      `features` then names the columns it was fitted on (default: its
      feature_names_in_);
    - an onnx.ModelProto; a lightgbm.Booster or LGBMModel;
    - a path (str or os.PathLike) to a model file, or the model's bytes;
      the server detects the format from the content unless `format` names
      it ('xgboost-json', 'xgboost-ubj', 'lightgbm-text', 'onnx',
      'hbird-pipeline');
    - a dict: a model document (hbird pipeline or XGBoost JSON).
    features (other than for scikit-learn) renames the model's features,
    as hb_model_upload's argument of that name.
    """
    p = payload(model, format, features)

    def call(s):
        if s.driver == "psycopg2" and p.size > CHUNK_BYTES:
            return _upload_in_pieces(s, _fn(s, "hb_model_upload"), name, p)
        return s.value(*upload_sql(s, name, p))
    return Session(conn).run(call)


# ---- the statements of the calls, shared with hbird.aio: each takes the
# session (its schema and driver) and returns (sql, params)

def upload_sql(s, name, p):
    """The upload of payload p as one bytea parameter."""
    return ("SELECT %s(%%s::text, %s, %%s::text, %%s::text[])"
            % (_fn(s, "hb_model_upload"), s.binary_placeholder),
            (name, s.binary(p.whole()), p.format, p.features))


def activate_sql(s, name, version):
    return ("SELECT %s(%%s::text, %%s::integer)" % _fn(s, "hb_model_activate"), (name, version))


def drop_sql(s, name, version):
    fn = _fn(s, "hb_model_drop")
    if version is None:
        return ("SELECT %s(%%s::text)" % fn, (name,))
    return ("SELECT %s(%%s::text, %%s::integer)" % fn, (name, version))


def role_sql(s, function, name, role):
    return ("SELECT %s(%%s::text, %%s::name)" % _fn(s, function), (name, role))


def models_sql(s, name):
    # always with parameters: the schema's name may hold a "%",
    # which the drivers read as "%%" only when formatting
    return ("SELECT * FROM %s WHERE (%%s::text IS NULL OR name OPERATOR(pg_catalog.=) %%s::text)"
            " ORDER BY name, version" % _fn(s, "hb_models"), (name, name))


def models_result(columns, rows, as_frame):
    """hb_models' rows as models() returns them."""
    if as_frame is not False:
        try:
            import pandas
        except ImportError:
            if as_frame:
                raise
        else:
            return pandas.DataFrame([tuple(r) for r in rows], columns=columns)
    return [dict(zip(columns, r)) for r in rows]


def _upload_in_pieces(s, fn, name, p):
    oid = None
    offset = 0
    for piece in p.pieces(CHUNK_BYTES):
        if oid is None:
            oid = s.value("SELECT pg_catalog.lo_from_bytea(0, %s)", (s.binary(piece),))
        else:
            s.execute("SELECT pg_catalog.lo_put(%s::oid, %s::bigint, %s)",
                      (oid, offset, s.binary(piece)))
        offset += len(piece)
    if oid is None:
        # an empty file: the server's error for an empty model
        return s.value("SELECT %s(%%s::text, ''::bytea, %%s::text, %%s::text[])" % fn,
                       (name, p.format, p.features))
    version = s.value("SELECT %s(%%s::text, pg_catalog.lo_get(%%s::oid), %%s::text, %%s::text[])"
                      % fn, (name, oid, p.format, p.features))
    s.execute("SELECT pg_catalog.lo_unlink(%s::oid)", (oid,))
    return version


def activate(conn, name, version):
    """Make `version` the active version of model `name` (roll back)."""
    Session(conn).run(lambda s: s.execute(*activate_sql(s, name, version)))


def drop(conn, name, version=None):
    """Drop all versions of `name`, or one; returns how many were dropped."""
    return Session(conn).run(lambda s: s.value(*drop_sql(s, name, version)))


def _role_call(conn, function, name, role):
    Session(conn).run(lambda s: s.execute(*role_sql(s, function, name, role)))


def grant(conn, name, role):
    """Let `role` score model `name` ('public': everyone)."""
    _role_call(conn, "hb_model_grant", name, role)


def revoke(conn, name, role):
    """Take back a grant of model `name` to `role`."""
    _role_call(conn, "hb_model_revoke", name, role)


def reassign(conn, name, role):
    """Make `role` the owner of model `name`."""
    _role_call(conn, "hb_model_reassign", name, role)


def models(conn, name=None, as_frame=None):
    """The hb_models view (every version of every model, or of `name`),
    ordered by name and version: a pandas DataFrame when pandas can be
    imported (as_frame=None) or as_frame=True, else a list of dicts."""
    def call(s):
        rows = s.execute(*models_sql(s, name)).fetchall()
        return s.columns(), rows
    columns, rows = Session(conn).run(call)
    return models_result(columns, rows, as_frame)
