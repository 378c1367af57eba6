"""The hbird command line (console script `hbird`, or `python3 -m hbird`).

    hbird upload --dsn "dbname=shop" fraud model.json     # prints the new version
    hbird activate fraud 3
    hbird drop fraud [VERSION]
    hbird grant fraud analysts / hbird revoke fraud analysts
    hbird reassign fraud ml_admins
    hbird models [NAME] [--json]

The connection comes from --dsn (a libpq connection string or URI) and
libpq's environment (PGHOST, PGDATABASE, ...); psycopg 3 is used when it
can be imported, else psycopg2 (--driver chooses).  Exit status: 0, or 1
with the server's error (message, SQLSTATE, detail, hint) on stderr.
"""
import argparse
import datetime
import decimal
import json
import sys

from . import client
from .errors import Error

_TABLE_COLUMNS = ["name", "version", "active", "format", "task", "n_inputs", "n_trees",
                  "size_bytes", "owner", "uploaded_by", "uploaded_at"]


def _driver(name):
    """The driver module: the one named, else psycopg, else psycopg2."""
    for mod in ([name] if name else ["psycopg", "psycopg2"]):
        try:
            return __import__(mod)
        except ImportError:
            pass
    raise ImportError("hbird needs %s (Debian: python3-%s)"
                      % ((name, name) if name else ("psycopg or psycopg2", "psycopg")))


def _plain(v):
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def _print_table(rows, out):
    cols = [c for c in _TABLE_COLUMNS if not rows or c in rows[0]]
    cells = [["" if r.get(c) is None else str(_plain(r.get(c))) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    out.write("  ".join(c.ljust(w) for c, w in zip(cols, widths)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() + "\n")


def _parser():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dsn", default=argparse.SUPPRESS,
                        help="libpq connection string or URI (default: libpq's environment)")
    common.add_argument("--driver", choices=["psycopg", "psycopg2"], default=argparse.SUPPRESS,
                        help="database driver (default: psycopg if installed, else psycopg2)")
    ap = argparse.ArgumentParser(prog="hbird", parents=[common],
                                 description="Manage hbird models in a PostgreSQL database.")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("upload", parents=[common], help="upload a model file as a new, active version")
    p.add_argument("name")
    p.add_argument("file", help="the model file ('-': standard input)")
    p.add_argument("--format", help="xgboost-json, xgboost-ubj, lightgbm-text, onnx, "
                   "hbird-pipeline (default: detected by the server)")
    p.add_argument("--features", help="comma-separated feature names (renames the model's)")

    p = sub.add_parser("activate", parents=[common], help="make a version the active one")
    p.add_argument("name")
    p.add_argument("version", type=int)

    p = sub.add_parser("drop", parents=[common], help="drop a model, or one version")
    p.add_argument("name")
    p.add_argument("version", type=int, nargs="?")

    for cmd, what in (("grant", "let a role score a model ('public': everyone)"),
                      ("revoke", "take back a grant"),
                      ("reassign", "give a model another owner")):
        p = sub.add_parser(cmd, parents=[common], help=what)
        p.add_argument("name")
        p.add_argument("role")

    p = sub.add_parser("models", parents=[common], help="list models and versions (hb_models)")
    p.add_argument("name", nargs="?")
    p.add_argument("--json", action="store_true", help="every column, as a JSON array")
    return ap


def _run(a, conn, out):
    if a.command == "upload":
        features = a.features.split(",") if a.features else None
        model = sys.stdin.buffer.read() if a.file == "-" else a.file
        out.write("%d\n" % client.upload(conn, a.name, model, format=a.format, features=features))
    elif a.command == "activate":
        client.activate(conn, a.name, a.version)
    elif a.command == "drop":
        out.write("%d\n" % client.drop(conn, a.name, a.version))
    elif a.command in ("grant", "revoke", "reassign"):
        getattr(client, a.command)(conn, a.name, a.role)
    elif a.command == "models":
        rows = client.models(conn, a.name, as_frame=False)
        if a.json:
            json.dump([{k: _plain(v) for k, v in r.items()} for r in rows], out, indent=1)
            out.write("\n")
        else:
            _print_table(rows, out)


def main(argv=None, out=None):
    a = _parser().parse_args(argv)
    out = out or sys.stdout
    try:
        driver = _driver(getattr(a, "driver", None))
    except ImportError as e:
        sys.stderr.write("hbird: %s\n" % e)
        return 1
    try:
        conn = driver.connect(getattr(a, "dsn", ""))
    except driver.Error as e:  # libpq's message
        sys.stderr.write("hbird: could not connect: %s\n" % str(e).strip())
        return 1
    try:
        _run(a, conn, out)
    except Error as e:
        sys.stderr.write("hbird: ERROR: %s\n" % e)
        return 1
    except (OSError, TypeError, ValueError) as e:
        sys.stderr.write("hbird: %s\n" % e)
        return 1
    finally:
        conn.close()
    return 0
