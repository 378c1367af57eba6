#!/bin/bash
# Featurizer pipelines in the database against scikit-learn's own predict.
#
#   pg_virtualenv -t -v 15 bash bench/pipeline.sh [rows]     (default 200000)
#
# Two scikit-learn pipelines over numeric columns with NULLs, a categorical
# text column and a free-text review (bench/pipeline_prep.py): pl_linear
# (imputer + scaler, one-hot, tf-idf of words and bigrams, logistic
# regression) and pl_forest (imputer, one-hot, hashing vectorizer 2^18,
# random forest of 50 trees).  scikit-learn's predict_proba over all the
# rows is timed in the same run (one process, best of 2), then in the
# database (hbird installed, extension created here), each query timed once
# after a warm-up, serial (max_parallel_workers_per_gather = 0):
#   row by row   SELECT sum(hb_predict(m, r)) FROM r
#   aggregate    SELECT cardinality(hb_predict_agg(m, r)) FROM r
#   batch        SELECT count(*) FROM hb_predict_batch(m, NULL::r)
# and the same three for classes (hb_predict_class, hb_predict_class_agg,
# hb_predict_class_batch) against scikit-learn's predict.  For the linear
# model the six run again with hbird.sparse_linear = off: the dense
# feature vector, hbird's path before the sparse scorer (and the class
# forms' until 2026-12-03), on the same rows in the same run.
# Prints key=value lines with seconds and the ratios database / sklearn,
# and checks the first 2000 rows' probabilities and classes against
# scikit-learn's (hb_predict_proba: the forest is a two-class model whose
# hb_predict is the class index), with the sparse scorer on and off.
#
# HB_PIPELINE_PREP=DIR reuses the output of an earlier
# `bench/pipeline_prep.py DIR ROWS` (data, models, scikit-learn's timings),
# so that the part needing the installed build is short:
#   /usr/bin/python3 bench/pipeline_prep.py /tmp/plprep 200000
#   flock /tmp/hbird-install.lock sh -c 'make -s install && HB_PIPELINE_PREP=/tmp/plprep pg_virtualenv -t -v 15 bash bench/pipeline.sh 200000'
set -euo pipefail
ROWS=${1:-200000}
PY=/usr/bin/python3
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TMP=$(mktemp -d /tmp/hbird-pipeline.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
chmod 755 "$TMP"

echo "# $(date -u +%FT%TZ) rows=$ROWS commit=$(git -C "$BENCH/.." rev-parse --short HEAD 2>/dev/null || echo '?')"
if [ -n "${HB_PIPELINE_PREP:-}" ]; then
	cp "$HB_PIPELINE_PREP"/rows.csv "$HB_PIPELINE_PREP"/*.json "$HB_PIPELINE_PREP"/*.p1 \
		"$HB_PIPELINE_PREP"/*.cls \
		"$HB_PIPELINE_PREP"/sklearn.kv "$TMP"/
	[ "$(wc -l <"$TMP/rows.csv")" -ge "$ROWS" ] || { echo "prep has fewer than $ROWS rows" >&2; exit 1; }
else
	$PY "$BENCH/pipeline_prep.py" "$TMP" "$ROWS" >/dev/null
fi
cat "$TMP/sklearn.kv"

psql -X -q -v ON_ERROR_STOP=1 <<SQL
CREATE EXTENSION IF NOT EXISTS hbird;
DROP TABLE IF EXISTS r;
CREATE TABLE r (id integer, age float8, income float8, city text, plan integer, review text);
\copy r FROM '$TMP/rows.csv' WITH (FORMAT csv)
VACUUM ANALYZE r;
SQL
chmod 644 "$TMP"/*

# seconds of one statement (after a warm-up statement that loads the model)
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE OR REPLACE FUNCTION bench_time(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
	t0 := clock_timestamp();
	EXECUTE q;
	RETURN extract(epoch FROM clock_timestamp() - t0);
END $$;
SQL
# the timed forms of model $1, keys suffixed with $2
forms() {
	cat <<SQL
SELECT '${1}_row_s$2=' || round(bench_time(\$q\$SELECT sum(hb_predict('$1', r)) FROM r\$q\$)::numeric, 3);
SELECT '${1}_agg_s$2=' || round(bench_time(\$q\$SELECT cardinality(hb_predict_agg('$1', r)) FROM r\$q\$)::numeric, 3);
SELECT '${1}_batch_s$2=' || round(bench_time(\$q\$SELECT count(*) FROM hb_predict_batch('$1', NULL::r)\$q\$)::numeric, 3);
SELECT '${1}_class_row_s$2=' || round(bench_time(\$q\$SELECT sum(hb_predict_class('$1', r)) FROM r\$q\$)::numeric, 3);
SELECT '${1}_class_agg_s$2=' || round(bench_time(\$q\$SELECT cardinality(hb_predict_class_agg('$1', r)) FROM r\$q\$)::numeric, 3);
SELECT '${1}_class_batch_s$2=' || round(bench_time(\$q\$SELECT count(*) FROM hb_predict_class_batch('$1', NULL::r)\$q\$)::numeric, 3);
SELECT '${1}_check_max_abs_diff$2=' || max(abs((hb_predict_proba('$1', r))[2] - e.p))
FROM r JOIN exp e ON e.k = r.id + 1;
SELECT '${1}_check_class_differ$2=' || count(*) FILTER (WHERE hb_predict_class('$1', r) <> e.c)
FROM r JOIN exp e ON e.k = r.id + 1;
SQL
}
for m in pl_linear pl_forest; do
	{
		cat <<SQL
SET max_parallel_workers_per_gather = 0;
SELECT 'upload_s_$m=' || round(bench_time(\$q\$SELECT hb_model_upload('$m', pg_read_file('$TMP/$m.json'))\$q\$)::numeric, 3);
SELECT hb_predict('$m', r) IS NOT NULL AS warm FROM r LIMIT 1;
CREATE TEMP TABLE p1 (k serial, p float8);
\\copy p1 (p) FROM '$TMP/$m.p1'
CREATE TEMP TABLE c1 (k serial, c integer);
\\copy c1 (c) FROM '$TMP/$m.cls'
CREATE TEMP TABLE exp AS SELECT k, p, c FROM p1 JOIN c1 USING (k);
SQL
		forms "$m" ""
		# the dense feature vector: trees read only their columns either way
		if [ "$m" = pl_linear ]; then
			echo "SET hbird.sparse_linear = off;"
			forms "$m" _dense
		fi
	} | psql -X -At -v ON_ERROR_STOP=1
done 2>&1 | grep -v '^t$' | tee "$TMP/db.kv"

# ratios: database seconds / scikit-learn seconds (below 1: the database is faster)
cat "$TMP/sklearn.kv" "$TMP/db.kv" | $PY -c '
import sys
kv = dict(l.strip().split("=", 1) for l in sys.stdin if "=" in l)
for m in ("pl_linear", "pl_forest"):
    sk = float(kv[m + "_sklearn_s"])
    skc = float(kv[m + "_sklearn_predict_s"])
    for k in ("row", "agg", "batch", "class_row", "class_agg", "class_batch"):
        v = float(kv["%s_%s_s" % (m, k)])
        print("%s_%s_vs_sklearn=%.2f" % (m, k, v / (skc if k.startswith("class") else sk)))
        if m + "_" + k + "_s_dense" in kv:
            print("%s_%s_dense_vs_sparse=%.2f" % (m, k, float(kv["%s_%s_s_dense" % (m, k)]) / v))
'
