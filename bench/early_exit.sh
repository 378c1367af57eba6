#!/bin/bash
# Exact early exit of hb_predict_class on a fraud-style binary classifier.
#
#   /usr/bin/python3 bench/gen_fraud.py bench/data/fraud.json   # once (about 1.5 min)
#   make -s install
#   pg_virtualenv -t -v 15 bash bench/early_exit.sh
#
# Inside a throwaway cluster (pg_virtualenv) it uploads the model
# (bench/data/fraud.json: XGBoost binary:logistic, 400 trees, depth 6,
# about 2% positives; bench/gen_fraud.py), builds t(id, f0 .. f19) with
# EE_ROWS rows of the training distribution (standard normal features
# rounded to float4, 5% NULL) and times, in one process each
# (max_parallel_workers_per_gather = 0):
#   row form    SELECT count(*) FILTER (WHERE hb_predict_class('fraud', t) = 1) FROM t
#   batch form  SELECT count(*) FILTER (WHERE class = 1) FROM hb_predict_class_batch('fraud', NULL::t)
# with hbird.early_exit on and off, and hb_predict('fraud', t) > 0.5 as the
# plain full-scoring reference.  hb_class_stats() gives the rows that exited
# early and the share of (row, tree) pairs scored.  The classes must be
# identical: row by row against hb_predict > 0.5, and batch against row.
#
# Environment: EE_ROWS (default 1000000), EE_MODEL (default
# bench/data/fraud.json), EE_REPS (timed runs per query, median; default 3).
# Results: a table on stdout and in bench/results/early_exit_latest.txt.
set -euo pipefail

EE_ROWS=${EE_ROWS:-1000000}
EE_REPS=${EE_REPS:-3}
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EE_MODEL=${EE_MODEL:-$BENCH/data/fraud.json}
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"
[ -f "$EE_MODEL" ] || { log "no model at $EE_MODEL: run /usr/bin/python3 bench/gen_fraud.py $EE_MODEL"; exit 1; }
mkdir -p "$BENCH/results"
RESULT=$BENCH/results/early_exit_latest.txt

psql -X -q -v ON_ERROR_STOP=1 -v model_path="$EE_MODEL" -v rows="$EE_ROWS" <<'SQL'
DROP EXTENSION IF EXISTS hbird CASCADE;
CREATE EXTENSION hbird;
\set model `cat :model_path`
SELECT hb_model_upload('fraud', :'model') \gset
DROP TABLE IF EXISTS t;
SELECT setseed(0.17);
-- Box-Muller normals, rounded to float4 like the training data, 5% NULL
CREATE TABLE t AS
SELECT g AS id, f[1] AS f0, f[2] AS f1, f[3] AS f2, f[4] AS f3, f[5] AS f4,
	   f[6] AS f5, f[7] AS f6, f[8] AS f7, f[9] AS f8, f[10] AS f9, f[11] AS f10,
	   f[12] AS f11, f[13] AS f12, f[14] AS f13, f[15] AS f14, f[16] AS f15,
	   f[17] AS f16, f[18] AS f17, f[19] AS f18, f[20] AS f19
FROM generate_series(1, :rows) g,
	 LATERAL (SELECT array_agg(CASE WHEN random() < 0.05 THEN NULL
							   ELSE (sqrt(-2 * ln(1 - random())) * cos(2 * pi() * random()))::real::float8 END) AS f
			  FROM generate_series(1, 20) j WHERE g > 0) a;
VACUUM (FREEZE, ANALYZE) t;
SQL
SERIAL="SET max_parallel_workers_per_gather = 0"
psql -X -At -c "$SERIAL" -c "SELECT count(*) FROM t" >/dev/null

# time_pair LABEL QUERY: QUERY with hbird.early_exit on and off, alternating
# in one session (EE_REPS each, after a warm-up on 1000 rows), so that load
# from elsewhere hits both alike; then one more run with the early exit on
# for hb_class_stats().  Prints "on_seconds|off_seconds|result|stats".
time_pair() {
	local label=$1 query=$2 warm out ms_on ms_off res stats
	local sub_row="FROM (SELECT * FROM t LIMIT 1000) t" sub_batch="NULL::t, 'SELECT * FROM t LIMIT 1000')"
	warm=${query//"FROM t"/$sub_row}
	warm=${warm//"NULL::t)"/$sub_batch}
	local args=(-c "$SERIAL" -c "$warm" -c '\timing on')
	for _ in $(seq "$EE_REPS"); do
		args+=(-c "SET hbird.early_exit = on" -c "$query" -c "SET hbird.early_exit = off" -c "$query")
	done
	args+=(-c '\timing off' -c "SET hbird.early_exit = on" -c "SELECT hb_class_stats_reset()" -c "$query"
		-c "SELECT rows, rows_early, pairs_scored, pairs_total FROM hb_class_stats()")
	out=$(psql -X -At -q -v ON_ERROR_STOP=1 "${args[@]}")
	# every other Time: line is a SET
	ms_on=$(printf '%s\n' "$out" | psql_times | awk 'NR % 4 == 2' | median)
	ms_off=$(printf '%s\n' "$out" | psql_times | awk 'NR % 4 == 0' | median)
	res=$(printf '%s\n' "$out" | tail -n 2 | head -n 1)
	stats=$(printf '%s\n' "$out" | tail -n 1)
	log "$label: $res; early exit on $ms_on ms, off $ms_off ms (stats $stats)"
	echo "$(ms_to_s "$ms_on")|$(ms_to_s "$ms_off")|$res|$stats"
}

# time_one LABEL QUERY: median of EE_REPS runs after a warm-up
time_one() {
	local label=$1 query=$2 out ms
	local sub_row="FROM (SELECT * FROM t LIMIT 1000) t"
	local args=(-c "$SERIAL" -c "${query//"FROM t"/$sub_row}" -c '\timing on')
	for _ in $(seq "$EE_REPS"); do args+=(-c "$query"); done
	out=$(psql -X -At -q -v ON_ERROR_STOP=1 "${args[@]}")
	ms=$(printf '%s\n' "$out" | psql_times | median)
	log "$label: $(printf '%s\n' "$out" | grep -v '^Time: ' | tail -n 1) in $ms ms"
	echo "$(ms_to_s "$ms")|$(printf '%s\n' "$out" | grep -v '^Time: ' | tail -n 1)"
}

ROWQ="SELECT count(*) FILTER (WHERE hb_predict_class('fraud', t) = 1) FROM t"
BATQ="SELECT count(*) FILTER (WHERE class = 1) FROM hb_predict_class_batch('fraud', NULL::t)"
REFQ="SELECT count(*) FILTER (WHERE hb_predict('fraud', t) > 0.5) FROM t"

row=$(time_pair "row form" "$ROWQ")
bat=$(time_pair "batch form" "$BATQ")
ref=$(time_one "row, hb_predict > 0.5" "$REFQ")
ON="SET hbird.early_exit = on"

# identical answers: every row, early exit on, against full scoring
mism_row=$(psql -X -At -q -c "$SERIAL" -c "$ON" -c "SELECT count(*) FROM t
	WHERE hb_predict_class('fraud', t) IS DISTINCT FROM (hb_predict('fraud', t) > 0.5)::int")
mism_bat=$(psql -X -At -q -c "$SERIAL" -c "$ON" -c "SELECT count(*) FROM hb_predict_class_batch('fraud', NULL::t) b
	JOIN t ON t.id = (b.item).id WHERE b.class IS DISTINCT FROM (hb_predict('fraud', t) > 0.5)::int")

field() { cut -d'|' -f"$2" <<<"$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
speed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
{
	echo "# early exit: $EE_ROWS rows, model $(basename "$EE_MODEL"), one process, median of $EE_REPS (on and off alternating)"
	echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-12s %10s %10s %10s %10s %12s %14s\n' form "on (s)" "off (s)" speed-up positives rows_early pairs_scored
	for v in "row|$row" "batch|$bat"; do
		IFS='|' read -r name s_on s_off res rows early pairs total <<<"$v"
		printf '%-12s %10s %10s %10s %10s %12s %14s\n' "$name" "$s_on" "$s_off" "$(speed "$s_off" "$s_on")" \
			"$res" "$(pct "$early" "$rows")" "$(pct "$pairs" "$total")"
	done
	echo "# reference, hb_predict('fraud', t) > 0.5 row by row: $(field "$ref" 1) s, $(field "$ref" 2) positives"
	echo "# classes different from hb_predict > 0.5 (early exit on): row form $mism_row, batch form $mism_bat"
} | tee "$RESULT"
[ "$mism_row" = 0 ] && [ "$mism_bat" = 0 ]
