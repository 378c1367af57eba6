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
    if "commit" in meta:
        p("hbird:    commit %s; installed hbird.so %s" % (meta["commit"],
                                                        meta.get("hbird_so_before", "?")))
        if meta.get("hbird_so_after") != meta.get("hbird_so_before"):
            p("WARNING:  hbird.so was replaced during the run (now %s): later steps may have"
              % meta.get("hbird_so_after"))
            p("          run another build than earlier ones")
    p("model:    %s" % meta.get("model", "?"))
    p("table:    %s rows, %s on disk, loaded in %s s; shared_buffers=%s, jit=off; "
      "every query warmed up, then timed once"
      % (format(rows, ","), pg.get("table_size", "?"), pg.get("load_seconds", "?"),
         meta.get("shared_buffers", "?")))
    if "load_before" in meta:
        p("load:     load average %s before the run, %s after it; whole run %s s"
          % (meta["load_before"], meta.get("load_after", "?"), meta.get("run_seconds", "?")))
    p("")

    if meta.get("only") == "e2":
        p("BENCH_ONLY=e2: the binding step alone")
        p("")
        status |= binding_section(p, pg, rows)
        if meta.get("want_hbird") == "1" and pg.get("hbird_status") != "ok":
            p("hbird step: %s (see the log above)" % pg.get("hbird_status", "not run"))
            status = 1
        return finish(lines, out_path, status)

    # (label, rows scored, seconds, note)
    results = []

    def add(label, key_seconds, n, note=""):
        s = fnum(pg, key_seconds) if key_seconds else None
        results.append((label, n, s, note))
        cpu = None
        if s and s >= 1.0 and key_seconds and "parallel" not in key_seconds:
            cpu = fnum(pg, key_seconds.replace("_seconds", "_cpu_seconds"))
        cpu_share[label] = cpu / s if cpu is not None else None

    cpu_share = {}

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
    add("(d) hbird: same, row at a time (hbird.batch_scan = off), no workers",
        "hbird_rowwise_serial_seconds", rows, "the previous plain-SQL path")
    add("(d) hbird: same, row at a time, default parallel setting",
        "hbird_rowwise_parallel_seconds", rows, "")

    plan = pg.get("batch_plan", "?")
    for strategy, note in [("auto", "auto: " + plan), ("tt", ""), ("ptt", "")]:
        add("(e) hbird: sum(unnest(hb_predict_agg)), %s, no workers" % strategy,
            "agg_%s_seconds" % strategy, rows,
            note)
    for strategy, note in [("auto", ""), ("tt", ""), ("ptt", "")]:
        add("(e) hbird: sum(score) FROM hb_predict_batch, %s, no workers" % strategy,
            "batch_%s_seconds" % strategy, rows,
            note)

    hb_rate = None
    s = fnum(pg, "hbird_serial_seconds")
    if s:
        hb_rate = rows / s

    w = max(len(r[0]) for r in results)
    p("%-*s  %12s  %9s  %8s  %12s  %s"
      % (w, "method", "rows/s", "seconds", "cpu/wall", "vs hbird(1)", "note"))
    p("-" * (w + 50 + 30))
    for label, n, secs, note in results:
        if secs:
            rate = n / secs
            ratio = ("%.3gx" % (rate / hb_rate)) if hb_rate else "n/a"
            share = cpu_share.get(label)
            p("%-*s  %12s  %9.3f  %8s  %12s  %s"
              % (w, label, format(int(round(rate)), ","), secs,
                 "%.0f%%" % (100 * share) if share is not None else "-", ratio, note))
        else:
            p("%-*s  %12s  %9s  %8s  %12s  %s" % (w, label, "-", "-", "-", "-",
                                                  note or "did not run"))
    p("")
    p("'vs hbird(1)' = rows/s of the method / rows/s of hbird without parallel workers.")
    p("'cpu/wall' = CPU time of the backend during the query / its wall time, for one-process")
    p("queries of 1 s or more (the clock ticks are 10 ms): well under 100% means the backend")
    p("waited for a CPU (a busy machine) and the time is inflated.")
    p("(e): SET hbird.tree_strategy = auto | tt | ptt; both forms run in one process "
      "(no parallel plan exists for them); single-row hb_predict uses %s."
      % pg.get("batch_plan_1", "?"))
    s_capi_rate = rows / s_capi if s_capi else None
    for key, what in [("hbird_serial_seconds", "plain query, batching scan, no workers"),
                      ("hbird_parallel_seconds", "plain query, batching scan, default parallel"),
                      ("hbird_rowwise_serial_seconds", "plain query, row at a time, no workers")]:
        v = fnum(pg, key)
        if v and s_capi_rate:
            p("%-55s %.2fx XGBoost's C API (1 thread)" % (what + ":", rows / v / s_capi_rate))
    v = fnum(pg, "hbird_limit1_seconds")
    if v is not None:
        p("%-55s %.1f ms" % ("SELECT hb_predict('m', t) FROM t LIMIT 1:", 1000 * v))
    p("")
    status |= binding_section(p, pg, rows)

    status |= first_call_section(p, pg)
    status |= topk_section(p, pg, meta)

    # cross-checks
    checks = []
    csum = fnum(capi, "sum")
    cfirst = fnum(capi, "sum_first")
    pysum = fnum(pg, "py_serial_result")
    if pysum is not None and cfirst is not None and int(capi.get("check_rows", -1)) == py_rows:
        checks.append(("PL/Python sum (first %d rows) vs C API" % py_rows, pysum, cfirst))
    for key, what in [("hbird_serial_result", "hbird sum, no workers"),
                      ("hbird_parallel_result", "hbird sum, parallel"),
                      ("hbird_rowwise_serial_result", "hbird sum, row at a time"),
                      ("hbird_rowwise_parallel_result", "hbird sum, row at a time, parallel")] + \
            [("%s_%s_result" % (form, strategy), "hbird %s, %s" % (form, strategy))
             for form in ("agg", "batch") for strategy in ("auto", "tt", "ptt")]:
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
    if meta.get("want_hbird") == "1" and hb_status == "ok" and not meta.get("only"):
        steps = [("batched forms (e)", "batch_status"), ("first call (f)", "firstcall_status")]
        if meta.get("want_topk", "1") != "0":
            steps.append(("top-K (g)", "topk_status"))
        for what, key in steps:
            if pg.get(key) != "ok":
                p("%s: %s (see the log above)" % (what, pg.get(key, "not run")))
                status = 1

    return finish(lines, out_path, status)


def finish(lines, out_path, status):
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(out_path, "w") as fh:
        fh.write(text)
    return status


def binding_section(p, pg, rows):
    """(e2): a 1-tree model, where reading and binding the rows is the work."""
    forms = [("scan_last", "SELECT sum(f27) FROM t: the scan, every column deformed"),
             ("scan_sum", "SELECT sum(coalesce(f0, 0) + ... + coalesce(f27, 0)) FROM t"),
             ("plain", "SELECT sum(hb_predict('one', t)) FROM t (batching scan)"),
             ("rowwise", "the same, row at a time (hbird.batch_scan = off)"),
             ("agg", "sum(unnest(hb_predict_agg('one', t)))"),
             ("agg_noscan", "the same, hbird.batch_scan = off (a whole row per call)"),
             ("batch", "sum(score) FROM hb_predict_batch('one', NULL::t)"),
             ("batch_noscan", "the same, hbird.batch_scan = off (Function Scan)")]
    base = fnum(pg, "bind_scan_last_seconds")
    cbase = fnum(pg, "bind_scan_last_cpu_seconds")
    if base is None:
        return 0
    p("(e2) binding: a 1-tree model (depth 8) over the same %s rows, no workers; best of 3"
      % format(rows, ","))
    p("     %-62s %9s  %16s  %9s  %16s" % ("query", "seconds", "beyond the scan",
                                           "cpu s", "cpu beyond"))
    for key, what in forms:
        v = fnum(pg, "bind_%s_seconds" % key)
        c = fnum(pg, "bind_%s_cpu_seconds" % key)
        if v is None:
            p("     %-62s %9s" % (what, "-"))
            continue
        extra = "" if key == "scan_last" else "%+.0f ns/row" % (1e9 * (v - base) / rows)
        cextra = "" if key == "scan_last" or c is None or cbase is None else \
            "%+.0f ns/row" % (1e9 * (c - cbase) / rows)
        p("     %-62s %9.3f  %16s  %9s  %16s" % (what, v, extra,
                                                  "-" if c is None else "%.2f" % c, cextra))
    p("     'beyond the scan' = (that time - the first row's) / rows: what reading the")
    p("     columns into features, scoring one tree and returning the score add per row;")
    p("     'cpu' = the backend's CPU time (10 ms ticks), which a busy machine inflates less.")
    status = 0
    ref = fnum(pg, "bind_plain_result")
    for key in ("rowwise", "agg", "agg_noscan", "batch", "batch_noscan"):
        v = fnum(pg, "bind_%s_result" % key)
        if ref is not None and v is not None and rel(v, ref) > 1e-9:
            p("     check FAILED: %s sums to %.17g, the batching scan to %.17g" % (key, v, ref))
            status = 1
    p("")
    return status


def fmt_ms(v):
    return "-" if v is None else "%.2f" % v


def first_call_section(p, pg):
    """(f): the first hb_predict of a fresh backend; returns 1 on a failed check."""
    if "fc_image_first_ms" not in pg and "fc_nomodel_first_ms" not in pg:
        return 0
    status = 0
    reps = pg.get("firstcall_reps", "?")
    p("(f) first call in a fresh backend: SELECT hb_predict('m', ARRAY[28 values]::float8[]), "
      "median of %s new connections" % reps)
    p("    (psql \\timing of the statement; connection and backend start-up not included)")
    if "firstcall_load" in pg:
        p("    (load average when this step started: %s)" % pg["firstcall_load"])
    json_b, img_b = fnum(pg, "model_json_bytes"), fnum(pg, "model_image_bytes")
    rows = [
        ("baseline: first statement, SELECT * FROM hb_topk_stats() (loads hbird.so, no model)",
         "fc_nomodel_first"),
        ("(i)   first hb_predict, model loaded from the stored image (%s bytes)"
         % (format(int(img_b), ",") if img_b else "?"), "fc_image_first"),
        ("(ii)  first hb_predict, image set to NULL: JSON parsed (%s bytes)"
         % (format(int(json_b), ",") if json_b else "?"), "fc_json_first"),
        ("(iii) second hb_predict in the same backend (cached), median over the (i) backends",
         "fc_image_cached"),
    ]
    w = max(len(r[0]) for r in rows)
    p("    %-*s  %9s  %9s  %9s" % (w, "", "median ms", "min ms", "max ms"))
    for label, key in rows:
        if key.endswith("_cached"):
            med, lo, hi = fnum(pg, key + "_ms"), None, None
        else:
            med, lo, hi = fnum(pg, key + "_ms"), fnum(pg, key + "_min"), fnum(pg, key + "_max")
        p("    %-*s  %9s  %9s  %9s" % (w, label, fmt_ms(med), fmt_ms(lo), fmt_ms(hi)))
    img, js = fnum(pg, "fc_image_first_ms"), fnum(pg, "fc_json_first_ms")
    base, cached = fnum(pg, "fc_nomodel_first_ms"), fnum(pg, "fc_image_cached_ms")
    if img and js:
        p("    first call with the image: %.3gx faster than with the JSON parse" % (js / img))
    if img and js and base is not None and img > base:
        p("    model load + compile beyond the baseline: image %.1f ms, JSON %.1f ms (%.3gx)"
          % (img - base, js - base, (js - base) / (img - base)))
    if img and cached:
        p("    first call (image) / cached call: %.3gx" % (img / cached))
    # checks: every call gave the row's hb_predict; the image came back intact
    ref = pg.get("firstcall_ref")
    for key, what in [("fc_image_result", "image"), ("fc_json_result", "JSON")]:
        if key in pg:
            ok = ref is not None and pg[key] == ref
            status |= 0 if ok else 1
            p("    check %-4s first calls (%s) all return hb_predict of the same row as a record: "
              "%s vs %s" % ("ok" if ok else "FAILED", what, pg[key], ref))
    if "firstcall_image_restored" in pg:
        ok = pg["firstcall_image_restored"] == "t"
        status |= 0 if ok else 1
        p("    check %-4s the image was restored byte for byte after (ii)"
          % ("ok" if ok else "FAILED"))
    p("")
    return status


def topk_section(p, pg, meta):
    """(g): hb_topk vs ORDER BY ... LIMIT k; returns 1 on a failed check."""
    status_kv = pg.get("topk_status")
    if status_kv is None:
        return 0
    if status_kv.startswith("skipped"):
        p("(g) top-K: %s" % status_kv)
        p("")
        return 0
    ks = pg.get("topk_ks", "").split()
    p("(g) top-K over the %s rows: SELECT * FROM hb_topk('m', k, NULL::t)  vs"
      % format(int(pg.get("topk_rows", meta.get("rows", 0))), ","))
    p("    SELECT id, hb_predict('m', t) AS score FROM t ORDER BY score DESC, ctid LIMIT k"
      "  (serial, and default parallel: %s workers planned)"
      % pg.get("topk_order_parallel_workers", "?"))
    hdr = ("k", "hb_topk s", "ORDER BY 1p s", "ORDER BY par s", "row at a time s", "batch s",
           "vs 1p", "vs par", "vs batch", "1p/row", "cpu/wall", "rows fully scored",
           "pairs scored", "hb_topk = ORDER BY")
    fmt = "    %5s  %9s  %13s  %14s  %15s  %7s  %6s  %6s  %8s  %6s  %9s  %17s  %12s  %s"
    p(fmt % hdr)
    status = 0
    for k in ks:
        t = fnum(pg, "topk_k%s_seconds" % k)
        s1 = fnum(pg, "topk_k%s_order_serial_seconds" % k)
        sp = fnum(pg, "topk_k%s_order_parallel_seconds" % k)
        sb = fnum(pg, "topk_k%s_batch_seconds" % k)
        sr = fnum(pg, "topk_k%s_order_rowwise_seconds" % k)
        full, stats_rows = fnum(pg, "topk_k%s_rows_full" % k), fnum(pg, "topk_k%s_stats_rows" % k)
        pairs, total = fnum(pg, "topk_k%s_pairs_scored" % k), fnum(pg, "topk_k%s_pairs_total" % k)
        c_t = fnum(pg, "topk_k%s_cpu_seconds" % k)
        c_1 = fnum(pg, "topk_k%s_order_serial_cpu_seconds" % k)
        cpu = "%s/%s" % ("%.0f%%" % (100 * c_t / t) if t and t >= 1 and c_t is not None else "-",
                         "%.0f%%" % (100 * c_1 / s1) if s1 and s1 >= 1 and c_1 is not None else "-")
        v_topk = pg.get("topk_k%s_same_topk" % k, "not checked")
        v_par = pg.get("topk_k%s_same_parallel" % k, "not checked")
        v_batch = pg.get("topk_k%s_same_batch" % k, "not checked")
        v_row = pg.get("topk_k%s_same_rowwise" % k, "not checked")
        ok = all(v.startswith(("identical", "ties")) for v in (v_topk, v_par, v_batch)) and \
            v_row == "identical"
        status |= 0 if ok else 1
        p(fmt % (k,
                 "%.3f" % t if t else "-",
                 "%.3f" % s1 if s1 else "-",
                 "%.3f" % sp if sp else "-",
                 "%.3f" % sr if sr else "-",
                 "%.3f" % sb if sb else "-",
                 "%.3gx" % (s1 / t) if t and s1 else "-",
                 "%.3gx" % (sp / t) if t and sp else "-",
                 "%.3gx" % (sb / t) if t and sb else "-",
                 "%.3gx" % (sr / s1) if s1 and sr else "-",
                 cpu,
                 ("%s (%.2g%%)" % (format(int(full), ","), 100 * full / stats_rows))
                 if full is not None and stats_rows else "-",
                 "%.1f%%" % (100 * pairs / total) if pairs is not None and total else "-",
                 ("" if ok else "FAILED: ") + v_topk
                 + ("" if v_par == "identical" else "; ORDER BY parallel: " + v_par)
                 + ("" if v_batch == "identical" else "; batch: " + v_batch)
                 + ("" if v_row == "identical" else "; row at a time: " + v_row)))
    p("    'batch' = SELECT (item).id, score FROM hb_predict_batch('m', NULL::t)")
    p("              ORDER BY score DESC, (item).id LIMIT k  (full scoring, batch strategy; one process)")
    p("    'ORDER BY 1p' runs the batching scan's top-K path; 'row at a time' is the same query with")
    p("    hbird.batch_scan = off, and must return exactly the same rows in the same order.")
    p("    'vs 1p' / 'vs par' / 'vs batch' = that time / hb_topk time (above 1x: hb_topk is faster);")
    p("    '1p/row' = row-at-a-time time / ORDER BY 1p time.")
    p("    'cpu/wall': of hb_topk / of ORDER BY 1p.")
    p("    'rows fully scored', 'pairs scored' = (row, tree) pairs evaluated / (rows x trees): from")
    p("    hb_topk_stats() right after the timed call.")
    p("    'hb_topk = ORDER BY': identical = the same ids in the same order with the same scores")
    p("    (float8 text: equal text = equal bits); ties = the same scores at every rank and the")
    p("    same ids in each run of equal scores, but another order inside some runs (not expected:")
    p("    hb_topk ranks by score with ties in physical order, as ORDER BY score DESC, ctid does);")
    p("    hb_topk's scores and order are also checked against hb_predict of its ids.  ORDER BY parallel and")
    p("    batch must equal ORDER BY serial (id follows the physical order, so (item).id = ctid order).")
    ties = ["k=%s: %s" % (k, pg["topk_k%s_ties" % k]) for k in ks
            if pg.get("topk_k%s_ties" % k, "0") != "0"]
    if ties:
        p("    adjacent equal scores in the ORDER BY result: " + ", ".join(ties))
    if status_kv != "ok":
        p("    top-K step: %s (see the log above)" % status_kv)
        status = 1
    p("")
    return status


if __name__ == "__main__":
    sys.exit(main())
