#!/bin/bash
# Top-K step of the benchmark: hb_topk against ORDER BY hb_predict DESC LIMIT k.
#
# bench/run_in_cluster.sh runs this inside the benchmark's cluster after the
# other steps (it changes table t); it can also be run by hand against any
# database that has the benchmark's table t(f0 .. f27 float8) and model 'm'
# (PGHOST, PGPORT, PGDATABASE, ... select it):
#
#   BENCH_OUT=/tmp/topk.kv bash bench/topk.sh
#
# Inputs (environment):
#   BENCH_OUT      file to append key=value results to
#   BENCH_TOPK_K   the values of k (default "1 10 100 1000")
#   BENCH_SAMPLE_CSV  rows like t's but not t's: then the approximate step
#                  (bench/topk_approx.sh, which reads the BENCH_* it names) runs
#                  after the exact one
#
# For each k, a session per query, each running its query once untimed and
# then timed under psql's \timing (the first run loads the model and pays
# for the backend's first pass over the table and its first large
# allocations, up to 0.5 s of page faults on a virtual machine; the
# row-at-a-time plan, 30 to 50 s on 1M rows, is warmed with a light query):
#   hb_topk                SELECT * FROM hb_topk('m', k, NULL::t), then
#                          SELECT * FROM hb_topk_stats() in the same session
#   ORDER BY, serial       SELECT id, hb_predict('m', t) AS score FROM t
#                          ORDER BY score DESC, ctid LIMIT k
#                          (max_parallel_workers_per_gather = 0): the
#                          batching scan's top-K path
#   ORDER BY, row at a time  the same with hbird.batch_scan = off
#   ORDER BY, parallel     the same with the default parallel setting
#   batch + ORDER BY       SELECT (item).id, score FROM hb_predict_batch('m', NULL::t)
#                          ORDER BY score DESC, (item).id LIMIT k: full scoring
#                          with the batch strategy, then PostgreSQL's top-N sort
# and the four results must agree (bench/topk_check.py): the same ids in the
# same order with the same scores (float8 text, which is exact: equal text =
# equal bits), or the same up to the order inside runs of equal scores.
# hb_topk ranks by score (what hb_predict returns), as ORDER BY does, even
# where binary:logistic's float32 probability gives rows of different
# margins the same score.  The check also recomputes hb_predict for
# hb_topk's ids and requires score order, equal scores in physical order.
#
# hb_topk reads the table in its physical order and gives ties to the earlier
# row; ORDER BY ..., ctid does the same.  The table gets an id column first
# (ALTER TABLE t ADD COLUMN id bigserial: a rewrite that numbers the rows in
# physical order); hbird binds features by name and ignores it.
set -euo pipefail

: "${BENCH_OUT:?}"
BENCH_TOPK_K=${BENCH_TOPK_K:-1 10 100 1000}
PY=/usr/bin/python3
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

TMP=$(mktemp -d /tmp/hbird-topk.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

out topk_status failed
out topk_ks "$BENCH_TOPK_K"

log "top-K: adding id bigserial to t (table rewrite), then VACUUM (FREEZE, ANALYZE)"
if [ "$(psql -X -At -c "SELECT count(*) FROM pg_attribute
		WHERE attrelid = 't'::regclass AND attname = 'id' AND NOT attisdropped")" = 0 ]; then
	sql -c "ALTER TABLE t ADD COLUMN id bigserial"
fi
sql -c "VACUUM (FREEZE, ANALYZE) t"
# the rewrite went through a small ring of buffers: read the table back into
# shared_buffers before anything is timed
psql -X -At -c "$SERIAL" -c "SELECT count(*) FROM t" >/dev/null
psql -X -At -c "$SERIAL" -c "SELECT count(*) FROM t" >/dev/null
out topk_rows "$(psql -X -At -c "SELECT count(*) FROM t")"

ORDER_WARM="SELECT hb_predict('m', t) FROM t LIMIT 1"
ORDER_Q="SELECT id, hb_predict('m', t) AS score FROM t ORDER BY score DESC, ctid LIMIT"
BATCH_Q="SELECT (item).id, score FROM hb_predict_batch('m', NULL::t) ORDER BY score DESC, (item).id LIMIT"
out topk_order_parallel_workers "$(workers_planned "$DEFAULT" "$ORDER_Q 10")"

# id|score lines, best first
topk_ids() { awk -F'|' '{ item = $3; sub(/\)$/, "", item); sub(/.*,/, "", item); print item "|" $2 }'; }

for k in $BENCH_TOPK_K; do
	# hb_topk (one process: it reads the table itself, through SPI)
	stats=$(timed_to "$TMP/topk_$k.raw" "topk_k${k}" "$SERIAL" \
		"SELECT count(*) FROM hb_topk('m', $k, NULL::t)" \
		"SELECT * FROM hb_topk('m', $k, NULL::t)" \
		"SELECT * FROM hb_topk_stats()")
	IFS='|' read -r rows full pairs total <<<"$stats"
	out "topk_k${k}_stats_rows" "$rows"
	out "topk_k${k}_rows_full" "$full"
	out "topk_k${k}_pairs_scored" "$pairs"
	out "topk_k${k}_pairs_total" "$total"
	log "  hb_topk_stats: rows $rows, fully scored $full, pairs $pairs of $total" \
		"($(awk -v a="$pairs" -v b="$total" 'BEGIN { printf "%.1f%%", 100 * a / b }'))"
	# the rank column must be 1..n
	awk -F'|' '$1 != NR { bad = 1 } END { exit bad }' "$TMP/topk_$k.raw" ||
		log "  hb_topk: the rank column is not 1, 2, ..."
	topk_ids <"$TMP/topk_$k.raw" >"$TMP/topk_$k.txt"

	timed_to "$TMP/serial_$k.txt" "topk_k${k}_order_serial" "$SERIAL" "$ORDER_Q $k" "$ORDER_Q $k"
	timed_to "$TMP/parallel_$k.txt" "topk_k${k}_order_parallel" "$DEFAULT" "$ORDER_Q $k" "$ORDER_Q $k"
	timed_to "$TMP/batch_$k.txt" "topk_k${k}_batch" "$SERIAL" "$BATCH_Q $k" "$BATCH_Q $k"
	timed_to "$TMP/rowwise_$k.txt" "topk_k${k}_order_rowwise" "$SERIAL; SET hbird.batch_scan = off" \
		"$ORDER_WARM" "$ORDER_Q $k"

	out "topk_k${k}_n" "$(wc -l <"$TMP/topk_$k.txt")"
	# ties: rows of the top-k whose score equals the next row's
	out "topk_k${k}_ties" "$(awk -F'|' 'NR > 1 && $2 == prev { t++ } { prev = $2 } END { print t + 0 }' "$TMP/serial_$k.txt")"
	# hb_topk's ids: hb_predict, the margin and the physical order, for the check
	ids=$(cut -d'|' -f1 "$TMP/topk_$k.txt" | paste -sd,)
	psql -X -At -q -v ON_ERROR_STOP=1 -c "$SERIAL" -c "SELECT id, hb_predict('m', t),
		(hb_predict_margin('m', t))[1], row_number() OVER (ORDER BY ctid)
		FROM t WHERE id = ANY ('{$ids}'::bigint[])" >"$TMP/margins_$k.txt"
	ok=1
	verdict=$("$PY" "$BENCH/topk_check.py" "$k" "$TMP/serial_$k.txt" "$TMP/topk_$k.txt" \
		"$TMP/margins_$k.txt") || ok=0
	out "topk_k${k}_same_topk" "$verdict"
	log "  hb_topk vs ORDER BY serial: $verdict"
	verdict=$("$PY" "$BENCH/topk_check.py" "$k" "$TMP/serial_$k.txt" "$TMP/parallel_$k.txt") || ok=0
	out "topk_k${k}_same_parallel" "$verdict"
	log "  ORDER BY parallel vs serial: $verdict"
	verdict=$("$PY" "$BENCH/topk_check.py" "$k" "$TMP/serial_$k.txt" "$TMP/rowwise_$k.txt") || ok=0
	out "topk_k${k}_same_rowwise" "$verdict"
	log "  ORDER BY row at a time vs batched: $verdict"
	verdict=$("$PY" "$BENCH/topk_check.py" "$k" "$TMP/serial_$k.txt" "$TMP/batch_$k.txt") || ok=0
	out "topk_k${k}_same_batch" "$verdict"
	log "  hb_predict_batch + ORDER BY vs ORDER BY serial: $verdict"
	if [ "$ok" = 0 ]; then
		diff "$TMP/serial_$k.txt" "$TMP/topk_$k.txt" | head -n 10 >&2 || true
	fi
done
out topk_status ok

# approximate top-K (bench/topk_approx.sh) when a sample of other rows is given
if [ -n "${BENCH_SAMPLE_CSV:-}" ]; then
	bash "$BENCH/topk_approx.sh"
fi
