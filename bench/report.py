#!/usr/bin/python3
"""Turn the key=value files of bench/run.sh into a table.

    report.py CAPI.kv PG.kv META.kv OUT.txt

Prints the table, writes it to OUT.txt, and exits 1 when a cross-check
fails or the hbird step did not run as asked.
"""

import sys


def read_kv(path):
    kv = {}
    try:
        with open(path) as fh:
            for line in fh:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    kv[k] = v          # last value wins
    except FileNotFoundError:
        pass
    return kv


def fnum(kv, key):
    try:
        return float(kv[key])
    except (KeyError, ValueError):
        return None


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def main():
    capi, pg, meta = read_kv(sys.argv[1]), read_kv(sys.argv[2]), read_kv(sys.argv[3])
    out_path = sys.argv[4]
    rows = int(meta["rows"])
    py_rows = int(pg.get("py_rows", "0") or 0)
    status = 0
    lines = []
    p = lines.append

    p("hbird benchmark: sum of binary:logistic scores over a %s x 28 float8 table"
      % format(rows, ","))
    p("date:     %s" % meta.get("date", "?"))
    p("machine:  %s, %s cores, %s RAM" % (meta.get("cpu", "?"), meta.get("cores", "?"),
                                          meta.get("mem", "?")))
    p("software: PostgreSQL %s, XGBoost %s (C API) / %s (PL/Python), hbird %s"
      % (pg.get("pg_version", "?"), capi.get("xgboost", "?"), pg.get("py_version", "?"),
         pg.get("hbird_version", "-")))
    p("model:    %s" % meta.get("model", "?"))
    p("table:    %s rows, %s on disk, loaded in %s s; shared_buffers=%s, jit=off; "
      "every query run once to warm up, then timed"
      % (format(rows, ","), pg.get("table_size", "?"), pg.get("load_seconds", "?"),
         meta.get("shared_buffers", "?")))
    p("")

    # (label, rows scored, seconds, note)
    results = []

    def add(label, key_seconds, n, note=""):
        s = fnum(pg, key_seconds) if key_seconds else None
        results.append((label, n, s, note))

    s_capi = fnum(capi, "seconds")
    results.append(("(a) XGBoost C API, PredictFromDense, nthread=1, data in memory",
                    rows, s_capi, ""))
    add("(b) PL/Python + xgboost per row (inplace_predict), 1 process",
        "py_serial_seconds", py_rows,
        "timed on the first %s rows, rows/s extrapolated" % format(py_rows, ","))
    add("(c) SELECT count(*) FROM t, no parallel workers", "count_serial_seconds", rows,
        "scan only, no scoring")
    add("(c) SELECT count(*) FROM t, default parallel setting", "count_parallel_seconds",
        rows, "%s workers planned" % pg.get("count_parallel_workers", "?"))
    hb_status = pg.get("hbird_status", "not run")
    add("(d) hbird: SELECT sum(hb_predict('m', t)), no parallel workers",
        "hbird_serial_seconds", rows, "" if hb_status == "ok" else "hbird: " + hb_status)
    add("(d) hbird: same, default parallel setting", "hbird_parallel_seconds", rows,
        ("%s workers planned" % pg.get("hbird_parallel_workers", "?"))
        if hb_status == "ok" else "hbird: " + hb_status)

    hb_rate = None
    s = fnum(pg, "hbird_serial_seconds")
    if s:
        hb_rate = rows / s

    w = max(len(r[0]) for r in results)
    p("%-*s  %12s  %9s  %12s  %s" % (w, "method", "rows/s", "seconds", "vs hbird(1)", "note"))
    p("-" * (w + 40 + 30))
    for label, n, secs, note in results:
        if secs:
            rate = n / secs
            ratio = ("%.3gx" % (rate / hb_rate)) if hb_rate else "n/a"
            p("%-*s  %12s  %9.3f  %12s  %s" % (w, label, format(int(round(rate)), ","),
                                               secs, ratio, note))
        else:
            p("%-*s  %12s  %9s  %12s  %s" % (w, label, "-", "-", "-", note or "did not run"))
    p("")
    p("'vs hbird(1)' = rows/s of the method / rows/s of hbird without parallel workers.")
    p("")

    # cross-checks
    checks = []
    csum = fnum(capi, "sum")
    cfirst = fnum(capi, "sum_first")
    pysum = fnum(pg, "py_serial_result")
    if pysum is not None and cfirst is not None and int(capi.get("check_rows", -1)) == py_rows:
        checks.append(("PL/Python sum (first %d rows) vs C API" % py_rows, pysum, cfirst))
    for key, what in [("hbird_serial_result", "hbird sum, no workers"),
                      ("hbird_parallel_result", "hbird sum, parallel")]:
        v = fnum(pg, key)
        if v is not None and csum is not None:
            checks.append(("%s vs C API" % what, v, csum))
    v = fnum(pg, "hbird_py_subset_result")
    if v is not None and cfirst is not None:
        checks.append(("hbird sum (first %d rows) vs C API" % py_rows, v, cfirst))
    cnt = fnum(pg, "count_serial_result")
    if cnt is not None and int(cnt) != rows:
        p("check FAILED: count(*) = %d, expected %d" % (cnt, rows))
        status = 1
    for what, a, b in checks:
        r = rel(a, b)
        ok = r <= 1e-6
        status |= 0 if ok else 1
        p("check %-4s %-45s %.17g vs %.17g (rel. diff %.2g, limit 1e-6)"
          % ("ok" if ok else "FAILED", what + ":", a, b, r))
    if meta.get("want_hbird") == "1" and hb_status != "ok":
        p("hbird step: %s (see the log above)" % hb_status)
        status = 1

    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(out_path, "w") as fh:
        fh.write(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
