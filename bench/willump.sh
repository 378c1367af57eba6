#!/bin/bash
# Statistical shortcuts benchmark: approximate top-K and cascades against
# full scoring, in one throwaway cluster, on tables the tuning never saw.
#
#   bash bench/willump.sh                 # 1,000,000 rows per table
#   WILLUMP_ROWS=100000 bash bench/willump.sh
#   WILLUMP_NUMERIC=0 bash bench/willump.sh   # text workloads only
#                                         # (bench/results/willump_text_latest.txt)
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
#   ranking with text: items_text(id, f0 .. f9, title), a scikit-learn
#            pipeline (scaling, TF-IDF of word unigrams and bigrams of the
#            title) into a 300-tree depth-6 XGBoost regression; top-10
#   fraud with text: tx_text(id, f0 .. f9, memo), the same featurizers into
#            a 300-tree depth-6 XGBoost classifier
# Tuning samples are separate tables (items_sample, tx_sample, WILLUMP_SAMPLE
# rows, another seed): the benchmark tables are held out.
#
#   WILLUMP_NUMERIC=0 / WILLUMP_TEXT=0 skip the numeric / text workloads;
#   WILLUMP_TEXT_ROWS (default WILLUMP_ROWS) sizes the text tables;
#   WILLUMP_CASCADE_TARGETS="" skips the cascades; WILLUMP_RESULT names
#   the results file.
#
# Measured (psql \timing, one process: max_parallel_workers_per_gather = 0):
#   ranking  ORDER BY hb_predict(...) DESC LIMIT 10     (full scoring, row by row:
#                                                        hbird.batch_scan = off)
#            hb_predict_batch + ORDER BY ... LIMIT 10    (full scoring, batched)
#            the plain query through the batching scan, hbird.topk_mode = exact
#            hb_topk mode 'exact'                        (bound pruning)
#            the plain query, tuned (hbird.topk_mode auto: approximate)
#            hb_topk mode 'approx'                       (tuned, target 0.95)
#            precision@10 of both approximate forms against exact: whole
#            table and ten id ranges (text: whole table)
#   fraud    count(*) FILTER (WHERE hb_predict(...) > 0.5), hbird.cascade off / on
#            (timed on its second run in its session, which the planner hook,
#            loaded by the first, batches through the scan: "FILTER"),
#            for each loss target of WILLUMP_CASCADE_TARGETS (default "0.001 0.01")
#            the same through hb_predict_agg, off / on
#            accuracy loss: share of rows whose class differs with the cascade
#   text     the same queries; approx and cascade with hbird.lazy_featurize
#            on (the text is featurized only for the rows re-scored or not
#            decided cheaply) and off (every row featurized in full): the
#            difference is the gain from skipped featurization
# Results: a table on stdout and in bench/results/willump_latest.txt.
set -euo pipefail

ROWS=${WILLUMP_ROWS:-1000000}
SAMPLE=${WILLUMP_SAMPLE:-50000}
TOPK_TARGET=${WILLUMP_TOPK_TARGET:-0.95}
CASCADE_TARGETS=${WILLUMP_CASCADE_TARGETS:-0.001 0.01}
NUMERIC=${WILLUMP_NUMERIC:-1}
TEXT=${WILLUMP_TEXT:-1}
TEXT_ROWS=${WILLUMP_TEXT_ROWS:-$ROWS}
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=$BENCH/data/willump
RESULT=$BENCH/results/willump_latest.txt
[ "${WILLUMP_NUMERIC:-1}" = 1 ] || RESULT=$BENCH/results/willump_text_latest.txt
RESULT=${WILLUMP_RESULT:-$RESULT}

if [ -z "${PGPORT:-}" ] || [ "${1:-}" != --in-cluster ]; then
	mkdir -p "$DATA" "$BENCH/results"
	if [ "$NUMERIC" = 1 ] && { [ ! -f "$DATA/willump_rank.json" ] || [ ! -f "$DATA/willump_fraud.json" ]; }; then
		echo "training the numeric models (once, cached in $DATA)" >&2
		/usr/bin/python3 "$BENCH/gen_willump_models.py" "$DATA" --numeric-only >&2
	fi
	if [ "$TEXT" = 1 ] && { [ ! -f "$DATA/willump_rank_text.json" ] || [ ! -f "$DATA/willump_fraud_text.json" ]; }; then
		echo "training the text models (once, cached in $DATA)" >&2
		/usr/bin/python3 "$BENCH/gen_willump_models.py" "$DATA" --text-only >&2
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
# warm SQL...: the same, the last statement run twice and its second run
# timed (the first loads the model and pays for the backend's first pass
# over the table and its first large allocations: up to 0.5 s of page
# faults on a virtual machine, which would hide the ratios of the short
# queries behind a constant)
warm() { timed "$@" -c "${*: -1}"; }

LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
x() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
log "load average: $LOAD_START; $ROWS rows, samples of $SAMPLE"
cols() { seq 0 $(($1 - 1)) | sed 's/.*/random() * 2 - 1 AS f&/' | paste -sd, -; }
# 12 words of w0 .. w299 (bench/gen_willump_models.py's texts)
words() { echo "(SELECT string_agg('w' || floor(random() * 300)::int, ' ') FROM generate_series(1, 12 + 0 * g))"; }
NUMERIC_REPORT=""
TEXT_REPORT=""
sql -c "CREATE EXTENSION hbird" >/dev/null
sql <<'SQL' >/dev/null
-- the plain query's answer under hbird.topk_mode (the caller sets it)
CREATE FUNCTION plain_ids(tab text, model text, pred text) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE r bigint[];
BEGIN
	EXECUTE format('SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict(%L, t) AS s FROM %I t WHERE %s ORDER BY s DESC, id LIMIT 10) q',
				   model, tab, pred) INTO r;
	RETURN r;
END $$;
SQL
if [ "$NUMERIC" = 1 ]; then
sql <<SQL >/dev/null
\\set rank \`cat $DATA/willump_rank.json\`
\\set fraud \`cat $DATA/willump_fraud.json\`
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
# (LOAD first: the plain query is planned through hbird's hook only once it is loaded)
T_ROW=$(timed -c "LOAD 'hbird'" -c "SET hbird.batch_scan = off" -c "$Q_ROW")
T_BATCH=$(warm -c "$Q_BATCH")
T_PLAIN=$(warm -c "LOAD 'hbird'" -c "SET hbird.topk_mode = exact" -c "$Q_ROW")
log "ranking: hb_topk exact and approx, the plain query approximate"
T_EXACT=$(warm -c "SELECT * FROM hb_topk('rank', 10, NULL::items, mode => 'exact')")
T_APPROX=$(warm -c "SELECT * FROM hb_topk('rank', 10, NULL::items, mode => 'approx')")
T_PLAIN_APPROX=$(warm -c "LOAD 'hbird'" -c "$Q_ROW")
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
P_PLAIN=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'hbird'" -c "CREATE TABLE plain_pred AS SELECT 'id > ' || lo || ' AND id <= ' || (lo + $ROWS / 10) AS pred FROM generate_series(0, $ROWS - $ROWS / 10, $ROWS / 10) lo UNION ALL SELECT 'true'" \
	-c "CREATE TABLE plain_approx AS SELECT pred, plain_ids('items', 'rank', pred) AS ids FROM plain_pred" \
	-c "SET hbird.topk_mode = exact" \
	-c "SELECT format('whole table %s; %s mean, %s min over %s ranges',
			max(p) FILTER (WHERE pred = 'true'), round(avg(p) FILTER (WHERE pred <> 'true')::numeric, 3),
			min(p) FILTER (WHERE pred <> 'true'), count(*) FILTER (WHERE pred <> 'true'))
		FROM (SELECT pred, (SELECT count(*) FROM unnest(ids) x WHERE x = ANY (plain_ids('items', 'rank', pred)))::float8 / 10 AS p
			  FROM plain_approx) s" \
	-c "DROP TABLE plain_pred, plain_approx" | tail -1)
SAME_ORDER=$(val "SET hbird.topk_mode = exact; SELECT (SELECT array_agg(id) FROM ($Q_ROW) q) = (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('rank', 10, NULL::items, mode => 'exact'))")

# ---- fraud ----
Q_CROW="SELECT count(*) FILTER (WHERE hb_predict('fraud', t) > 0.5) FROM tx t"
Q_CAGG="SELECT count(*) FILTER (WHERE p > 0.5) FROM unnest((SELECT hb_predict_agg('fraud', t) FROM tx t)) p"
log "fraud: count(*) FILTER and hb_predict_agg, full model"
T_COFF=$(warm -c "$Q_CROW")
T_AOFF=$(warm -c "$Q_CAGG")
sql -c "CREATE TABLE p_exact AS SELECT hb_predict_agg('fraud', t ORDER BY id) AS p FROM tx t" >/dev/null
CASC_REPORT=""
for target in $CASCADE_TARGETS; do
	log "cascade: tuning to loss <= $target on tx_sample, then scoring tx"
	t_tune=$(timed -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS tune_casc" -c "CREATE TABLE tune_casc AS SELECT * FROM hb_tune('fraud', 'SELECT * FROM tx_sample', kind => 'cascade', target => $target, confidence => 0.95)")
	table=$(psql -X -q -c "SELECT candidate, approximation, round(threshold::numeric, 3) AS threshold, round((1 - accuracy)::numeric, 5) AS loss, round((1 - accuracy_bound)::numeric, 5) AS loss_bound, round(coverage::numeric, 4) AS decided_cheaply, round(cost_us::numeric, 3) AS cost_us, round(expected_speedup::numeric, 1) AS speedup, chosen FROM tune_casc ORDER BY candidate")
	t_con=$(warm -c "SET hbird.cascade = on" -c "$Q_CROW")
	t_aon=$(warm -c "SET hbird.cascade = on" -c "$Q_CAGG")
	sql -c "DROP TABLE IF EXISTS p_casc" -c "SET hbird.cascade = on" \
		-c "CREATE TABLE p_casc AS SELECT hb_predict_agg('fraud', t ORDER BY id) AS p FROM tx t" >/dev/null
	loss=$(val "SELECT format('%s of %s rows (%s), %s predicted positive exactly',
			sum(((e > 0.5) <> (c > 0.5))::int), count(*),
			round(avg(((e > 0.5) <> (c > 0.5))::int)::numeric, 6), sum((e > 0.5)::int))
		FROM p_exact, p_casc, unnest(p_exact.p, p_casc.p) AS u(e, c)")
	CASC_REPORT+="
cascade tuned to accuracy loss <= $target with confidence 0.95 (hb_tune: ${t_tune} s)
$table
$(printf '%-52s %9s %9s' "FILTER (WHERE hb_predict > 0.5), cascade on" "$t_con" "$(awk -v a="$T_COFF" -v b="$t_con" 'BEGIN { printf "%.1fx", a / b }')")
$(printf '%-52s %9s %9s' "hb_predict_agg, cascade on" "$t_aon" "$(awk -v a="$T_COFF" -v b="$t_aon" 'BEGIN { printf "%.1fx", a / b }')")
cascade on vs off: FILTER $(awk -v a="$T_COFF" -v b="$t_con" 'BEGIN { printf "%.1fx", a / b }'), hb_predict_agg $(awk -v a="$T_AOFF" -v b="$t_aon" 'BEGIN { printf "%.1fx", a / b }')
accuracy loss on held-out rows (class differs from the full model): $loss
"
done

NUMERIC_REPORT=$(
	echo "ranking: items(50 features), 300 trees depth 7, top-10; hb_tune target precision@10 >= $TOPK_TARGET, confidence 0.95 (${T_TUNE_TOPK} s)"
	echo "$TUNE_TOPK_TABLE"
	echo
	printf '%-60s %9s %9s %9s\n' "query" "seconds" "speed-up" "vs batch"
	printf '%-60s %9s %9s %9s\n' "ORDER BY hb_predict DESC LIMIT 10 (full, row by row)" "$T_ROW" "1.0x" "$(x "$T_BATCH" "$T_ROW")"
	printf '%-60s %9s %9s %9s\n' "hb_predict_batch + ORDER BY LIMIT 10 (full, batched)" "$T_BATCH" "$(x "$T_ROW" "$T_BATCH")" "1.0x"
	printf '%-60s %9s %9s %9s\n' "ORDER BY hb_predict DESC LIMIT 10, batching scan, exact" "$T_PLAIN" "$(x "$T_ROW" "$T_PLAIN")" "$(x "$T_BATCH" "$T_PLAIN")"
	printf '%-60s %9s %9s %9s\n' "hb_topk mode 'exact'" "$T_EXACT" "$(x "$T_ROW" "$T_EXACT")" "$(x "$T_BATCH" "$T_EXACT")"
	printf '%-60s %9s %9s %9s\n' "ORDER BY hb_predict DESC LIMIT 10, tuned (approximate)" "$T_PLAIN_APPROX" "$(x "$T_ROW" "$T_PLAIN_APPROX")" "$(x "$T_BATCH" "$T_PLAIN_APPROX")"
	printf '%-60s %9s %9s %9s\n' "hb_topk mode 'approx'" "$T_APPROX" "$(x "$T_ROW" "$T_APPROX")" "$(x "$T_BATCH" "$T_APPROX")"
	echo "hb_topk approx vs exact hb_topk: $(x "$T_EXACT" "$T_APPROX"); $APPROX_STATS"
	echo "precision@10 of hb_topk approx against exact (held out): whole table $P_ALL; $P_RANGES"
	echo "precision@10 of the approximate plain query against exact: $P_PLAIN"
	echo "exact hb_topk = ORDER BY: $SAME_ORDER"
	echo
	echo "fraud: tx(20 features), 400 trees depth 7, hbird.cascade off (the full model)"
	printf '%-52s %9s %9s\n' "query" "seconds" "speed-up"
	printf '%-52s %9s %9s\n' "FILTER (WHERE hb_predict > 0.5), cascade off" "$T_COFF" "1.0x"
	printf '%-52s %9s %9s\n' "hb_predict_agg, cascade off" "$T_AOFF" "$(x "$T_COFF" "$T_AOFF")"
	echo "$CASC_REPORT"
)
fi

# ---- with text: featurization dominates, lazy featurization skips it ----
if [ "$TEXT" = 1 ]; then
log "text tables: $TEXT_ROWS rows"
sql <<SQL >/dev/null
\\set rank \`cat $DATA/willump_rank_text.json\`
\\set fraud \`cat $DATA/willump_fraud_text.json\`
SELECT hb_model_upload('rank_text', :'rank'), hb_model_upload('fraud_text', :'fraud');
SELECT setseed(0.55);
CREATE TABLE items_text AS SELECT g AS id, $(cols 10), $(words) AS title FROM generate_series(1, $TEXT_ROWS) g;
SELECT setseed(0.66);
CREATE TABLE items_text_sample AS SELECT g AS id, $(cols 10), $(words) AS title FROM generate_series(1, $SAMPLE) g;
SELECT setseed(0.77);
CREATE TABLE tx_text AS SELECT g AS id, $(cols 10), $(words) AS memo FROM generate_series(1, $TEXT_ROWS) g;
SELECT setseed(0.88);
CREATE TABLE tx_text_sample AS SELECT g AS id, $(cols 10), $(words) AS memo FROM generate_series(1, $SAMPLE) g;
VACUUM (FREEZE, ANALYZE) items_text, items_text_sample, tx_text, tx_text_sample;
SQL
log "text ranking: tuning top-10"
t_tune=$(timed -c "SET client_min_messages = warning" -c "CREATE TABLE tune_topk_text AS SELECT * FROM hb_tune('rank_text', 'SELECT * FROM items_text_sample', kind => 'topk', k => 10, target => $TOPK_TARGET, confidence => 0.95)")
tune_table=$(psql -X -q -c "SELECT candidate, approximation, ratio, kept, round(accuracy_bound::numeric, 4) AS bound, round(coverage::numeric, 5) AS rescored, round(cost_us::numeric, 3) AS cost_us, round(featurize_us::numeric, 3) AS featurize_us, round(expected_speedup::numeric, 1) AS speedup, chosen FROM tune_topk_text ORDER BY candidate")
groups=$(val "SELECT format('featurization per row: all %s us; per group: %s', round(featurize_us::numeric, 2), (SELECT string_agg(format('%s %s us', g, round(c::numeric, 3)), ', ') FROM unnest(feature_groups, group_cost_us) u(g, c))) FROM hb_tunings WHERE name = 'rank_text'")
log "text ranking: full, exact, approx (lazy on / off)"
TQ_ROW="SELECT id FROM items_text t ORDER BY hb_predict('rank_text', t) DESC, id LIMIT 10"
TQ_BATCH="SELECT (item).id FROM hb_predict_batch('rank_text', NULL::items_text) ORDER BY score DESC, (item).id LIMIT 10"
t_row=$(timed -c "LOAD 'hbird'" -c "SET hbird.batch_scan = off" -c "$TQ_ROW")
t_batch=$(warm -c "$TQ_BATCH")
t_plain=$(warm -c "LOAD 'hbird'" -c "SET hbird.topk_mode = exact" -c "$TQ_ROW")
t_exact=$(warm -c "SELECT * FROM hb_topk('rank_text', 10, NULL::items_text, mode => 'exact')")
t_approx=$(warm -c "SELECT * FROM hb_topk('rank_text', 10, NULL::items_text, mode => 'approx')")
t_approx_eager=$(warm -c "SET hbird.lazy_featurize = off" -c "SELECT * FROM hb_topk('rank_text', 10, NULL::items_text, mode => 'approx')")
t_plain_approx=$(warm -c "LOAD 'hbird'" -c "$TQ_ROW")
t_plain_approx_eager=$(warm -c "LOAD 'hbird'" -c "SET hbird.lazy_featurize = off" -c "$TQ_ROW")
rescored=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "SELECT count(*) FROM hb_topk('rank_text', 10, NULL::items_text, mode => 'approx')" \
	-c "SELECT format('%s of %s rows re-scored with the full model', rows_fully_scored, rows) FROM hb_topk_stats()" | tail -1)
prec=$(val "SELECT count(*)::float8 / 10
	FROM (SELECT (item).id FROM hb_topk('rank_text', 10, NULL::items_text, mode => 'approx')) a
	JOIN (SELECT (item).id FROM hb_topk('rank_text', 10, NULL::items_text, mode => 'exact')) e USING (id)")
prec_plain=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "LOAD 'hbird'" -c "CREATE TABLE plain_t AS SELECT plain_ids('items_text', 'rank_text', 'true') AS ids" \
	-c "SET hbird.topk_mode = exact" \
	-c "SELECT (SELECT count(*) FROM unnest(ids) x WHERE x = ANY (plain_ids('items_text', 'rank_text', 'true')))::float8 / 10 FROM plain_t" \
	-c "DROP TABLE plain_t" | tail -1)
same=$(val "SET hbird.topk_mode = exact; SELECT (SELECT array_agg(id) FROM ($TQ_ROW) q) = (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('rank_text', 10, NULL::items_text, mode => 'exact'))")
TEXT_REPORT+="ranking with text: items_text(10 numeric, title: TF-IDF 1-2 grams), 300 trees depth 6, top-10; $TEXT_ROWS rows
hb_tune target precision@10 >= $TOPK_TARGET, confidence 0.95 (${t_tune} s); $groups
$tune_table
$(printf '%-66s %9s %9s %9s' "query" "seconds" "speed-up" "vs batch")
$(printf '%-66s %9s %9s %9s' "ORDER BY hb_predict DESC LIMIT 10 (full, row by row)" "$t_row" "1.0x" "$(x "$t_batch" "$t_row")")
$(printf '%-66s %9s %9s %9s' "hb_predict_batch + ORDER BY LIMIT 10 (full, batched)" "$t_batch" "$(x "$t_row" "$t_batch")" "1.0x")
$(printf '%-66s %9s %9s %9s' "ORDER BY hb_predict DESC LIMIT 10, batching scan, exact" "$t_plain" "$(x "$t_row" "$t_plain")" "$(x "$t_batch" "$t_plain")")
$(printf '%-66s %9s %9s %9s' "hb_topk mode 'exact'" "$t_exact" "$(x "$t_row" "$t_exact")" "$(x "$t_batch" "$t_exact")")
$(printf '%-66s %9s %9s %9s' "ORDER BY hb_predict DESC LIMIT 10, tuned, lazy featurization off" "$t_plain_approx_eager" "$(x "$t_row" "$t_plain_approx_eager")" "$(x "$t_batch" "$t_plain_approx_eager")")
$(printf '%-66s %9s %9s %9s' "ORDER BY hb_predict DESC LIMIT 10, tuned, lazy featurization on" "$t_plain_approx" "$(x "$t_row" "$t_plain_approx")" "$(x "$t_batch" "$t_plain_approx")")
$(printf '%-66s %9s %9s %9s' "hb_topk mode 'approx', lazy featurization off" "$t_approx_eager" "$(x "$t_row" "$t_approx_eager")" "$(x "$t_batch" "$t_approx_eager")")
$(printf '%-66s %9s %9s %9s' "hb_topk mode 'approx', lazy featurization on" "$t_approx" "$(x "$t_row" "$t_approx")" "$(x "$t_batch" "$t_approx")")
skipped featurization alone (lazy on vs off): hb_topk $(x "$t_approx_eager" "$t_approx"), the plain query $(x "$t_plain_approx_eager" "$t_plain_approx"); $rescored
precision@10 against exact (held out, whole table): hb_topk approx $prec, plain query approx $prec_plain; exact hb_topk = ORDER BY: $same
"

log "text fraud: full model"
TQ_CROW="SELECT count(*) FILTER (WHERE hb_predict('fraud_text', t) > 0.5) FROM tx_text t"
TQ_CAGG="SELECT count(*) FILTER (WHERE p > 0.5) FROM unnest((SELECT hb_predict_agg('fraud_text', t) FROM tx_text t)) p"
t_coff=$(warm -c "$TQ_CROW")
t_aoff=$(warm -c "$TQ_CAGG")
sql -c "CREATE TABLE pt_exact AS SELECT hb_predict_agg('fraud_text', t ORDER BY id) AS p FROM tx_text t" >/dev/null
TEXT_REPORT+="
fraud with text: tx_text(10 numeric, memo: TF-IDF 1-2 grams), 300 trees depth 6; $TEXT_ROWS rows
$(printf '%-58s %9s %9s' "query" "seconds" "speed-up")
$(printf '%-58s %9s %9s' "FILTER (WHERE hb_predict > 0.5), cascade off" "$t_coff" "1.0x")
$(printf '%-58s %9s %9s' "hb_predict_agg, cascade off" "$t_aoff" "$(x "$t_coff" "$t_aoff")")
"
for target in $CASCADE_TARGETS; do
	log "text cascade: tuning to loss <= $target"
	t_tune=$(timed -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS tune_casc_text" -c "CREATE TABLE tune_casc_text AS SELECT * FROM hb_tune('fraud_text', 'SELECT * FROM tx_text_sample', kind => 'cascade', target => $target, confidence => 0.95)")
	table=$(psql -X -q -c "SELECT candidate, approximation, round(threshold::numeric, 3) AS threshold, round((1 - accuracy_bound)::numeric, 5) AS loss_bound, round(coverage::numeric, 4) AS decided_cheaply, round(cost_us::numeric, 3) AS cost_us, round(featurize_us::numeric, 3) AS featurize_us, round(expected_speedup::numeric, 1) AS speedup, chosen FROM tune_casc_text ORDER BY candidate")
	t_con=$(warm -c "SET hbird.cascade = on" -c "$TQ_CROW")
	t_con0=$(warm -c "SET hbird.cascade = on" -c "SET hbird.lazy_featurize = off" -c "$TQ_CROW")
	t_aon=$(warm -c "SET hbird.cascade = on" -c "$TQ_CAGG")
	t_aon0=$(warm -c "SET hbird.cascade = on" -c "SET hbird.lazy_featurize = off" -c "$TQ_CAGG")
	sql -c "DROP TABLE IF EXISTS pt_casc" -c "SET hbird.cascade = on" \
		-c "CREATE TABLE pt_casc AS SELECT hb_predict_agg('fraud_text', t ORDER BY id) AS p FROM tx_text t" >/dev/null
	loss=$(val "SELECT format('%s of %s rows (%s), %s predicted positive exactly',
			sum(((e > 0.5) <> (c > 0.5))::int), count(*),
			round(avg(((e > 0.5) <> (c > 0.5))::int)::numeric, 6), sum((e > 0.5)::int))
		FROM pt_exact, pt_casc, unnest(pt_exact.p, pt_casc.p) AS u(e, c)")
	TEXT_REPORT+="
cascade tuned to accuracy loss <= $target with confidence 0.95 (hb_tune: ${t_tune} s)
$table
$(printf '%-58s %9s %9s' "FILTER (WHERE hb_predict > 0.5), cascade on, lazy off" "$t_con0" "$(x "$t_coff" "$t_con0")")
$(printf '%-58s %9s %9s' "FILTER (WHERE hb_predict > 0.5), cascade on, lazy on" "$t_con" "$(x "$t_coff" "$t_con")")
$(printf '%-58s %9s %9s' "hb_predict_agg, cascade on, lazy off" "$t_aon0" "$(x "$t_coff" "$t_aon0")")
$(printf '%-58s %9s %9s' "hb_predict_agg, cascade on, lazy on" "$t_aon" "$(x "$t_coff" "$t_aon")")
cascade on vs off, same form: FILTER $(x "$t_coff" "$t_con"), hb_predict_agg $(x "$t_aoff" "$t_aon"); skipped featurization alone (lazy on vs off): FILTER $(x "$t_con0" "$t_con"), hb_predict_agg $(x "$t_aon0" "$t_aon")
accuracy loss on held-out rows (class differs from the full model): $loss
"
done
fi

{
	echo "hbird statistical shortcuts, $(date -u '+%Y-%m-%d %H:%M UTC'),$([ "$NUMERIC" = 1 ] && echo " $ROWS rows per numeric table,")$([ "$TEXT" = 1 ] && echo " $TEXT_ROWS per text table,") tuning samples of $SAMPLE rows (separate tables)"
	echo "load average at start: $LOAD_START; one process (no parallel workers)"
	echo
	[ -n "$NUMERIC_REPORT" ] && echo "$NUMERIC_REPORT" && echo
	[ -n "$TEXT_REPORT" ] && echo "$TEXT_REPORT"
	echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RESULT"
