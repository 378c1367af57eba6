#!/usr/bin/env bash
# Approximate top-K reads only the cheap model's columns of a model without
# featurizers (hb_reader_init's subset, pg_lazy.c), and binds a kept row
# again in full from its datum: the answer must be the one eager binding
# gives (hbird.lazy_featurize = off), row for row and bit for bit, with the
# same rows re-scored, and its scores must be XGBoost's own; so must the
# plain ORDER BY hb_predict(...) DESC LIMIT k, whose batching scan also
# takes the values it hands up from the kept tuples of the rows it keeps.  The model
# (trained here with Debian's python3-xgboost) splits on f0..f3 only, so
# every cheap model hb_tune can choose reads a subset of its 10 columns.
# The same rows are read from tables laid out in different ways: floats
# with NULLs (the fixed-width walk), a text column first and numeric,
# float4 and int columns in another order (the general walk and
# conversions), and tuples written before ALTER TABLE ADD COLUMN (shorter
# than the row type: deformed).  Runs inside a throwaway cluster
# (test/run_sql_tests.sh); prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
db=hb_lazy_cols
tmp=$(mktemp -d /tmp/hbird-lazycols.XXXXXX)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"; dropdb --if-exists "$db" >/dev/null 2>&1' EXIT
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }

/usr/bin/python3 - "$tmp" <<'PY'
import sys, numpy as np, xgboost as xgb
out = sys.argv[1]
rng = np.random.default_rng(7)
n = 40000
X = rng.normal(size=(n, 10))
X[rng.random(n) < 0.1, 1] = np.nan            # f1 is missing in a tenth of the rows
y = (X[:, 0] + np.nan_to_num(X[:, 1]) * X[:, 2] + 0.5 * X[:, 3] ** 2
     + 0.3 * rng.normal(size=n) > 1).astype(int)
Xt = X.copy()
Xt[:, 4:] = 0.0                               # f4..f9 carry nothing: no tree splits on them
d = xgb.DMatrix(Xt, label=y, feature_names=[f"f{j}" for j in range(10)])
b = xgb.train({"objective": "binary:logistic", "max_depth": 5, "eta": 0.2,
               "base_score": 0.5, "seed": 1}, d, num_boost_round=60)
b.save_model(f"{out}/model.json")
p = b.predict(xgb.DMatrix(X, feature_names=[f"f{j}" for j in range(10)]))
with open(f"{out}/rows.csv", "w") as f:
    for i in range(n):
        vals = ["" if np.isnan(v) else repr(float(np.float32(v))) for v in X[i]]
        f.write(",".join([str(i + 1)] + vals + [repr(float(p[i]))]) + "\n")
PY
tap $? "lazy columns: model trained and rows written (python3-xgboost)"

dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
cols=$(for ((j = 0; j < 10; j++)); do printf 'f%d float8,' "$j"; done)
q >/dev/null <<SQL
\\set m \`cat $tmp/model.json\`
CREATE EXTENSION hbird;
SELECT hb_model_upload('lz', :'m');
CREATE TABLE src (id int8, ${cols} xgb float8);
\\copy src FROM '$tmp/rows.csv' WITH (FORMAT csv)
-- ids up to 20000 tune, the rest are scored
CREATE TABLE t_sample AS SELECT id, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 FROM src WHERE id <= 20000;
CREATE TABLE t_plain AS SELECT id, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 FROM src WHERE id > 20000;
CREATE TABLE t_mixed AS
SELECT 'row ' || id AS note, f9::float4 AS f9, id, f3::float4 AS f3, f0::numeric AS f0, f1,
	   (id % 7)::int4 AS grp, f2, f8::float4 AS f8, f4, f5, f6, f7
FROM src WHERE id > 20000;
-- tuples written before two of the cheap model's columns were added
CREATE TABLE t_added (id int8, f4 float8, f5 float8, f6 float8, f7 float8, f8 float8, f9 float8, f0 float8, f1 float8);
INSERT INTO t_added SELECT id, f4, f5, f6, f7, f8, f9, f0, f1 FROM src WHERE id > 20000 AND id <= 30000;
ALTER TABLE t_added ADD COLUMN f2 float8 DEFAULT 0.25, ADD COLUMN f3 float8 DEFAULT -0.5;
INSERT INTO t_added SELECT id, f4, f5, f6, f7, f8, f9, f0, f1, f2, f3 FROM src WHERE id > 30000;
SET client_min_messages = warning;
SELECT count(*) FROM hb_tune('lz', 'SELECT * FROM t_sample', kind => 'topk', k => 10, target => 0.9, confidence => 0.9);
SQL
tap $? "lazy columns: tables made and the model tuned"

chosen=$(q -c "SELECT approximation FROM hb_tunings WHERE name = 'lz'")
for t in t_plain t_mixed t_added; do
	run() {
		q -c "SET hbird.lazy_featurize = $1" \
		  -c "SELECT string_agg(format('%s:%s', (item).id, score), ' ' ORDER BY rank) FROM hb_topk('lz', ${2:-10}, NULL::$t, mode => 'approx')" \
		  -c "SELECT rows_fully_scored FROM hb_topk_stats()"
	}
	lazy=$(run on)
	eager=$(run off)
	[ -n "$lazy" ] && [ "$lazy" = "$eager" ]
	tap $? "lazy columns: $t, approximate top-10 read lazily = read eagerly (cheap model: $chosen)"
	lazy=$(run on 50)
	eager=$(run off 50)
	[ -n "$lazy" ] && [ "$lazy" = "$eager" ]
	tap $? "lazy columns: $t, approximate top-50 read lazily = read eagerly"
	# the plain query through the batching scan: the same rows, values and
	# scores, and the same rows scored in full (EXPLAIN ANALYZE)
	# (but for the rows read lazily: every row of the table, or of
	# t_added's its rows with a tuple of their own, none as it projects)
	plain() {
		q -c "SET hbird.lazy_featurize = $1" \
		  -c "SELECT string_agg(format('%s:%s:%s:%s', id, f2, f3, s), ' ') FROM (SELECT id, f2, f3, hb_predict('lz', x) AS s FROM $t x ORDER BY s DESC LIMIT ${2:-10}) y" \
		  -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT id FROM $t x ORDER BY hb_predict('lz', x) DESC LIMIT ${2:-10}" |
			grep -v 'Memory:' | tee "$tmp/plain_$1" | grep -v 'Rows Read Lazily:'
	}
	lazy=$(plain on)
	eager=$(plain off)
	[ -n "$lazy" ] && [ "$lazy" = "$eager" ] && grep -q 'approximate' <<<"$lazy" && grep -q 'Rows Scored' <<<"$lazy"
	tap $? "lazy columns: $t, plain ORDER BY ... LIMIT 10 read lazily = read eagerly"
	n_rows=$(q -c "SELECT count(*) FROM $t")
	n_lazy=$(grep -o 'Rows Read Lazily: [0-9]*' "$tmp/plain_on" | grep -o '[0-9]*$')
	if [ "$t" = t_added ]; then want_lazy=""; else want_lazy=$n_rows; fi
	[ "$n_lazy" = "$want_lazy" ] && ! grep -q 'Rows Read Lazily' "$tmp/plain_off"
	tap $? "lazy columns: $t, plain ORDER BY ... LIMIT 10 read ${n_lazy:-none} of $n_rows rows lazily (want ${want_lazy:-none})"
	lazy=$(plain on 40)
	eager=$(plain off 40)
	[ -n "$lazy" ] && [ "$lazy" = "$eager" ]
	tap $? "lazy columns: $t, plain ORDER BY ... LIMIT 40 read lazily = read eagerly"
	# ctid as a sort key: taken from the scan's own tuples, which are read
	# lazily; t_added's scan projects (columns with missing values), so its
	# rows have no tuple of their own and are read eagerly
	ctid_q="SELECT string_agg(format('%s:%s:%s', id, ctid, s), ' ') FROM (SELECT id, ctid, hb_predict('lz', x) AS s FROM $t x ORDER BY s DESC, ctid LIMIT 10) y"
	lazy=$(q -c "SET hbird.lazy_featurize = on" -c "$ctid_q")
	eager=$(q -c "SET hbird.lazy_featurize = off" -c "$ctid_q")
	[ -n "$lazy" ] && [ "$lazy" = "$eager" ]
	tap $? "lazy columns: $t, plain ORDER BY score, ctid read lazily = read eagerly"
	out=$(q -c "LOAD 'hbird'" -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM $t x ORDER BY hb_predict('lz', x) DESC, ctid LIMIT 10" |
		  grep -A1 'Seq Scan' | grep 'Output:' | sed 's/^ *//')
	if [ "$t" = t_added ]; then want=projects; else want="hands up its tuples"; fi
	if grep -q 'ctid' <<<"$out"; then got=projects; else got="hands up its tuples"; fi
	[ -n "$out" ] && [ "$got" = "$want" ]
	tap $? "lazy columns: $t, the scan under ORDER BY score, ctid $got ($out)"
	# the columns read: the cheap model's only
	for form in "SELECT count(*) FROM hb_topk('lz', 10, NULL::$t, mode => 'approx')" \
		"SELECT id FROM $t x ORDER BY hb_predict('lz', x) DESC LIMIT 10" \
		"SELECT id FROM $t x ORDER BY hb_predict('lz', x) DESC, ctid LIMIT 10"; do
		msg=$(q -c "SET client_min_messages = debug1" -c "$form" 2>&1 |
			  grep -o 'reading lazily, [0-9]* of 10 columns' | head -1)
		n=$(echo "$msg" | grep -o '[0-9]* of' | grep -o '[0-9]*')
		[ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -le 4 ]
		tap $? "lazy columns: $t reads ${n:-?} of the 10 columns for the cheap model (${form%% FROM*} ...)"
	done
done

# the scores are the full model's, XGBoost's own (float32 sums)
bad=$(q -c "SELECT count(*) FROM hb_topk('lz', 50, NULL::t_plain, mode => 'approx') h
			JOIN src s ON s.id = (h.item).id WHERE abs(h.score - s.xgb) > 1e-6")
[ "$bad" = 0 ]
tap $? "lazy columns: approximate top-50 scores equal XGBoost's ($bad differ)"
# the same rows and scores from another layout
a=$(q -c "SELECT string_agg(format('%s:%s', (item).id, score), ' ' ORDER BY rank) FROM hb_topk('lz', 10, NULL::t_plain, mode => 'approx')")
b=$(q -c "SELECT string_agg(format('%s:%s', (item).id, score), ' ' ORDER BY rank) FROM hb_topk('lz', 10, NULL::t_mixed, mode => 'approx')")
[ -n "$a" ] && [ "$a" = "$b" ]
tap $? "lazy columns: t_mixed ranks the rows of t_plain the same"
