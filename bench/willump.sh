#!/bin/bash
# Statistical shortcuts benchmark: approximate top-K and cascades against
# full scoring, in one throwaway cluster, on tables the tuning never saw.
#
#   bash bench/willump.sh                 # 1,000,000 rows per table
#   WILLUMP_ROWS=100000 bash bench/willump.sh
#
# Installs nothing: run `make install` first (the hbird installed is used).
# Runs itself inside `pg_virtualenv` when not already in a cluster.
#
# Workloads (bench/gen_willump_models.py trains the models; the tables are
# generated in SQL from the same distribution, uniform features):
#   ranking: items(id, f0 .. f49), a 300-tree depth-7 regression model over
#            50 features; top-10 queries
#   fraud:   tx(id, f0 .. f19), a 400-tree depth-7 binary classifier with
#            about 10% positives; count of predicted positives
# Tuning samples are separate tables (items_sample, tx_sample, WILLUMP_SAMPLE
# rows, another seed): the benchmark tables are held out.
#
# Measured (psql \timing, one process: max_parallel_workers_per_gather = 0):
#   ranking  ORDER BY hb_predict(...) DESC LIMIT 10     (full scoring, row by row)
#            hb_predict_batch + ORDER BY ... LIMIT 10    (full scoring, batched)
#            hb_topk mode 'exact'                        (bound pruning)
#            hb_topk mode 'approx'                       (tuned, target 0.95)
#            precision@10 of approx against exact: whole table and ten id ranges
#   fraud    count(*) FILTER (WHERE hb_predict(...) > 0.5), hbird.cascade off / on,
#            for each loss target of WILLUMP_CASCADE_TARGETS (default "0.001 0.01")
#            the same through hb_predict_agg, off / on
#            accuracy loss: share of rows whose class differs with the cascade
# Results: a table on stdout and in bench/results/willump_latest.txt.
set -euo pipefail

ROWS=${WILLUMP_ROWS:-1000000}
SAMPLE=${WILLUMP_SAMPLE:-50000}
TOPK_TARGET=${WILLUMP_TOPK_TARGET:-0.95}
CASCADE_TARGETS=${WILLUMP_CASCADE_TARGETS:-0.001 0.01}
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=$BENCH/data/willump
RESULT=$BENCH/results/willump_latest.txt

if [ -z "${PGPORT:-}" ] || [ "${1:-}" != --in-cluster ]; then
	mkdir -p "$DATA" "$BENCH/results"
	if [ ! -f "$DATA/willump_rank.json" ] || [ ! -f "$DATA/willump_fraud.json" ]; then
		echo "training the models (once, cached in $DATA)" >&2
		/usr/bin/python3 "$BENCH/gen_willump_models.py" "$DATA" >&2
	fi
	exec pg_virtualenv -t -v 15 -o shared_buffers=1GB -o max_parallel_workers_per_gather=0 \
		bash "$0" --in-cluster
fi

log() { printf '[willump %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
val() { psql -X -q -At -v ON_ERROR_STOP=1 -c "$1"; }
# timed SQL...: seconds of the last statement (psql's \timing)
timed() {
	psql -X -q -At -v ON_ERROR_STOP=1 -c '\timing on' "$@" |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1 | awk '{ printf "%.3f", $1 / 1000 }'
}

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average: $LOAD_START; $ROWS rows, samples of $SAMPLE"
cols() { seq 0 $(($1 - 1)) | sed 's/.*/random() * 2 - 1 AS f&/' | paste -sd, -; }
sql <<SQL >/dev/null
\\set rank \`cat $DATA/willump_rank.json\`
\\set fraud \`cat $DATA/willump_fraud.json\`
CREATE EXTENSION hbird;
SELECT hb_model_upload('rank', :'rank'), hb_model_upload('fraud', :'fraud');
SELECT setseed(0.11);
CREATE TABLE items AS SELECT g AS id, $(cols 50) FROM generate_series(1, $ROWS) g;
SELECT setseed(0.22);
CREATE TABLE items_sample AS SELECT g AS id, $(cols 50) FROM generate_series(1, $SAMPLE) g;
SELECT setseed(0.33);
CREATE TABLE tx AS SELECT g AS id, $(cols 20) FROM generate_series(1, $ROWS) g;
SELECT setseed(0.44);
CREATE TABLE tx_sample AS SELECT g AS id, $(cols 20) FROM generate_series(1, $SAMPLE) g;
VACUUM (FREEZE, ANALYZE) items, items_sample, tx, tx_sample;
SQL
log "tables ready"

# ---- ranking ----
log "tuning top-10 on items_sample"
T_TUNE_TOPK=$(timed -c "SET client_min_messages = warning" -c "CREATE TABLE tune_topk AS SELECT * FROM hb_tune('rank', 'SELECT * FROM items_sample', kind => 'topk', k => 10, target => $TOPK_TARGET, confidence => 0.95)")
TUNE_TOPK_TABLE=$(psql -X -q -c "SELECT candidate, approximation, ratio, kept, round(accuracy::numeric, 4) AS accuracy, round(accuracy_bound::numeric, 4) AS bound, round(coverage::numeric, 5) AS rescored, round(cost_us::numeric, 3) AS cost_us, round(expected_speedup::numeric, 1) AS speedup, chosen FROM tune_topk ORDER BY candidate")
log "ranking: full scoring"
Q_ROW="SELECT id FROM items t ORDER BY hb_predict('rank', t) DESC, id LIMIT 10"
Q_BATCH="SELECT (item).id FROM hb_predict_batch('rank', NULL::items) ORDER BY score DESC, (item).id LIMIT 10"
T_ROW=$(timed -c "$Q_ROW")
T_BATCH=$(timed -c "$Q_BATCH")
log "ranking: hb_topk exact and approx"
T_EXACT=$(timed -c "SELECT * FROM hb_topk('rank', 10, NULL::items, mode => 'exact')")
T_APPROX=$(timed -c "SELECT * FROM hb_topk('rank', 10, NULL::items, mode => 'approx')")
APPROX_STATS=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "SELECT count(*) FROM hb_topk('rank', 10, NULL::items, mode => 'approx')" \
	-c "SELECT format('%s of %s rows re-scored with the full model', rows_fully_scored, rows) FROM hb_topk_stats()" | tail -1)
sql <<'SQL' >/dev/null
CREATE FUNCTION prec(q text) RETURNS float8 LANGUAGE sql AS $$
	SELECT count(*)::float8 / 10
	FROM (SELECT (item).id FROM hb_topk('rank', 10, NULL::items, q, mode => 'approx')) a
	JOIN (SELECT (item).id FROM hb_topk('rank', 10, NULL::items, q, mode => 'exact')) e USING (id)
$$;
SQL
P_ALL=$(val "SELECT prec('SELECT * FROM items')")
P_RANGES=$(val "SELECT format('%s mean, %s min over %s ranges', round(avg(p)::numeric, 3), min(p), count(*))
	FROM (SELECT prec(format('SELECT * FROM items WHERE id > %s AND id <= %s', lo, lo + $ROWS / 10)) AS p
		  FROM generate_series(0, $ROWS - $ROWS / 10, $ROWS / 10) lo) s")
SAME_ORDER=$(val "SELECT (SELECT array_agg(id) FROM ($Q_ROW) q) = (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('rank', 10, NULL::items, mode => 'exact'))")

# ---- fraud ----
Q_CROW="SELECT count(*) FILTER (WHERE hb_predict('fraud', t) > 0.5) FROM tx t"
Q_CAGG="SELECT count(*) FILTER (WHERE p > 0.5) FROM unnest((SELECT hb_predict_agg('fraud', t) FROM tx t)) p"
log "fraud: row by row and hb_predict_agg, full model"
T_COFF=$(timed -c "$Q_CROW")
T_AOFF=$(timed -c "$Q_CAGG")
sql -c "CREATE TABLE p_exact AS SELECT hb_predict_agg('fraud', t ORDER BY id) AS p FROM tx t" >/dev/null
CASC_REPORT=""
for target in $CASCADE_TARGETS; do
	log "cascade: tuning to loss <= $target on tx_sample, then scoring tx"
	t_tune=$(timed -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS tune_casc" -c "CREATE TABLE tune_casc AS SELECT * FROM hb_tune('fraud', 'SELECT * FROM tx_sample', kind => 'cascade', target => $target, confidence => 0.95)")
	table=$(psql -X -q -c "SELECT candidate, approximation, round(threshold::numeric, 3) AS threshold, round((1 - accuracy)::numeric, 5) AS loss, round((1 - accuracy_bound)::numeric, 5) AS loss_bound, round(coverage::numeric, 4) AS decided_cheaply, round(cost_us::numeric, 3) AS cost_us, round(expected_speedup::numeric, 1) AS speedup, chosen FROM tune_casc ORDER BY candidate")
	t_con=$(timed -c "SET hbird.cascade = on" -c "$Q_CROW")
	t_aon=$(timed -c "SET hbird.cascade = on" -c "$Q_CAGG")
	sql -c "DROP TABLE IF EXISTS p_casc" -c "SET hbird.cascade = on" \
		-c "CREATE TABLE p_casc AS SELECT hb_predict_agg('fraud', t ORDER BY id) AS p FROM tx t" >/dev/null
	loss=$(val "SELECT format('%s of %s rows (%s), %s predicted positive exactly',
			sum(((e > 0.5) <> (c > 0.5))::int), count(*),
			round(avg(((e > 0.5) <> (c > 0.5))::int)::numeric, 6), sum((e > 0.5)::int))
		FROM p_exact, p_casc, unnest(p_exact.p, p_casc.p) AS u(e, c)")
	CASC_REPORT+="
cascade tuned to accuracy loss <= $target with confidence 0.95 (hb_tune: ${t_tune} s)
$table
$(printf '%-52s %9s %9s' "hb_predict row by row, cascade on" "$t_con" "$(awk -v a="$T_COFF" -v b="$t_con" 'BEGIN { printf "%.1fx", a / b }')")
$(printf '%-52s %9s %9s' "hb_predict_agg, cascade on" "$t_aon" "$(awk -v a="$T_COFF" -v b="$t_aon" 'BEGIN { printf "%.1fx", a / b }')")
cascade on vs off: row by row $(awk -v a="$T_COFF" -v b="$t_con" 'BEGIN { printf "%.1fx", a / b }'), hb_predict_agg $(awk -v a="$T_AOFF" -v b="$t_aon" 'BEGIN { printf "%.1fx", a / b }')
accuracy loss on held-out rows (class differs from the full model): $loss
"
done

x() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
{
	echo "hbird statistical shortcuts, $(date -u '+%Y-%m-%d %H:%M UTC'), $ROWS rows per table, tuning samples of $SAMPLE rows (separate tables)"
	echo "load average at start: $LOAD_START; one process (no parallel workers)"
	echo
	echo "ranking: items(50 features), 300 trees depth 7, top-10; hb_tune target precision@10 >= $TOPK_TARGET, confidence 0.95 (${T_TUNE_TOPK} s)"
	echo "$TUNE_TOPK_TABLE"
	echo
	printf '%-52s %9s %9s\n' "query" "seconds" "speed-up"
	printf '%-52s %9s %9s\n' "ORDER BY hb_predict DESC LIMIT 10 (full, row by row)" "$T_ROW" "1.0x"
	printf '%-52s %9s %9s\n' "hb_predict_batch + ORDER BY LIMIT 10 (full, batched)" "$T_BATCH" "$(x "$T_ROW" "$T_BATCH")"
	printf '%-52s %9s %9s\n' "hb_topk mode 'exact'" "$T_EXACT" "$(x "$T_ROW" "$T_EXACT")"
	printf '%-52s %9s %9s\n' "hb_topk mode 'approx'" "$T_APPROX" "$(x "$T_ROW" "$T_APPROX")"
	echo "approx vs batched full scoring: $(x "$T_BATCH" "$T_APPROX"); vs exact hb_topk: $(x "$T_EXACT" "$T_APPROX"); $APPROX_STATS"
	echo "precision@10 of approx against exact (held out): whole table $P_ALL; $P_RANGES"
	echo "exact hb_topk = ORDER BY: $SAME_ORDER"
	echo
	echo "fraud: tx(20 features), 400 trees depth 7, hbird.cascade off (the full model)"
	printf '%-52s %9s %9s\n' "query" "seconds" "speed-up"
	printf '%-52s %9s %9s\n' "hb_predict row by row, cascade off" "$T_COFF" "1.0x"
	printf '%-52s %9s %9s\n' "hb_predict_agg, cascade off" "$T_AOFF" "$(x "$T_COFF" "$T_AOFF")"
	echo "$CASC_REPORT"
} | tee "$RESULT"
