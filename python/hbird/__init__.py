"""hbird: upload models to PostgreSQL's hbird extension from Python.

    import hbird, psycopg
    conn = psycopg.connect("dbname=shop")
    hbird.upload(conn, "fraud", booster)        # -> version number
    hbird.activate(conn, "fraud", 3)
    hbird.grant(conn, "fraud", "analysts")
    hbird.models(conn)                          # hb_models

Works with psycopg (3) and psycopg2 connections; hbird.aio has the same
calls for psycopg's AsyncConnection, awaited.  Server errors raise
hbird.Error (subclasses by SQLSTATE: PrivilegeError, NotFoundError,
DataError, NotSupportedError, LimitError) with .sqlstate, .message,
.detail and .hint.  The scikit-learn exporter is hbird.export_sklearn.
"""
from .client import activate, drop, grant, models, reassign, revoke, upload
from .errors import (DataError, Error, LimitError, NotFoundError, NotSupportedError,
                     PrivilegeError)

__version__ = "0.3.0"

__all__ = [
    "upload", "activate", "drop", "grant", "revoke", "reassign", "models",
    "Error", "PrivilegeError", "NotFoundError", "DataError", "NotSupportedError",
    "LimitError",
]


def __getattr__(name):
    # hbird.export_sklearn without importing it (and numpy) up front
    if name == "export_sklearn":
        import importlib
        return importlib.import_module(".export_sklearn", __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
