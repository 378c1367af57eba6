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
# and, on the first 20000 rows, hb_predict against hb_predict_class (the
# class form builds the dense feature vector: the reference for the sparse
# path of the linear model).
# Prints key=value lines with seconds and the ratios database / sklearn,
# and checks the first 2000 rows' probabilities against scikit-learn's
# (hb_predict_proba: the forest is a two-class model whose hb_predict is the
# class index).
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
for m in pl_linear pl_forest; do
	psql -X -At -v ON_ERROR_STOP=1 <<SQL
SET max_parallel_workers_per_gather = 0;
SELECT 'upload_s_$m=' || round(bench_time(\$q\$SELECT hb_model_upload('$m', pg_read_file('$TMP/$m.json'))\$q\$)::numeric, 3);
SELECT hb_predict('$m', r) IS NOT NULL AS warm FROM r LIMIT 1;
SELECT '${m}_row_s=' || round(bench_time(\$q\$SELECT sum(hb_predict('$m', r)) FROM r\$q\$)::numeric, 3);
SELECT '${m}_agg_s=' || round(bench_time(\$q\$SELECT cardinality(hb_predict_agg('$m', r)) FROM r\$q\$)::numeric, 3);
SELECT '${m}_batch_s=' || round(bench_time(\$q\$SELECT count(*) FROM hb_predict_batch('$m', NULL::r)\$q\$)::numeric, 3);
-- the dense feature vector on the first 20000 rows (the class form builds it)
-- against the same rows scored by hb_predict
SELECT '${m}_first20k_row_s=' || round(bench_time(\$q\$SELECT sum(hb_predict('$m', q.r)) FROM (SELECT r FROM r WHERE id < 20000) q\$q\$)::numeric, 3);
SELECT '${m}_first20k_dense_class_row_s=' || round(bench_time(\$q\$SELECT sum(hb_predict_class('$m', q.r)) FROM (SELECT r FROM r WHERE id < 20000) q\$q\$)::numeric, 3);
CREATE TEMP TABLE exp (k serial, p float8);
\copy exp (p) FROM '$TMP/$m.p1'
SELECT '${m}_check_max_abs_diff=' || max(abs((hb_predict_proba('$m', r))[2] - e.p))
FROM r JOIN exp e ON e.k = r.id + 1;
SQL
done 2>&1 | grep -v '^t$' | tee "$TMP/db.kv"

# ratios: database seconds / scikit-learn seconds (below 1: the database is faster)
cat "$TMP/sklearn.kv" "$TMP/db.kv" | $PY -c '
import sys
kv = dict(l.strip().split("=", 1) for l in sys.stdin if "=" in l)
for m in ("pl_linear", "pl_forest"):
    sk = float(kv[m + "_sklearn_s"])
    for k in ("row", "agg", "batch"):
        v = float(kv["%s_%s_s" % (m, k)])
        print("%s_%s_vs_sklearn=%.2f" % (m, k, v / sk))
'
