#!/bin/bash
# Approximate top-K step of the benchmark, after bench/topk.sh's exact one:
# hb_tune on a sample of other rows, then the tuned plain query and hb_topk
# against hbird's exact forms and batched full scoring, side by side in one
# session each, and precision@10 on query variants the tuner never saw.
#
# bench/topk.sh runs it when BENCH_SAMPLE_CSV is set (bench/ranking.sh sets
# it); by hand, against a database with t(id, f0 .. f27) and model 'm':
#
#   BENCH_OUT=/tmp/a.kv BENCH_SAMPLE_CSV=/path/bench_200000.csv bash bench/topk_approx.sh
#
# Inputs (environment):
#   BENCH_OUT             file to append key=value results to
#   BENCH_SAMPLE_CSV      rows like t's but not t's (header f0..f27), readable by
#                         psql; loaded into t_sample once
#   BENCH_LTR_MODEL       optional: a learning-to-rank model (bench/gen_ltr.py),
#                         readable by the server, uploaded as 'ltr' and measured too
#   BENCH_APPROX_TARGETS  precision targets for 'm' (default "0.99 0.95");
#                         'ltr' gets the first one
#   BENCH_APPROX_REPORT   the table, also printed (default bench/results/topk_approx_latest.txt)
#   BENCH_REPEAT          timed runs per query and session, the median reported
#                         (default 3: single runs of these sub-second queries
#                         moved by 20-30% on the shared benchmark machine)
#   BENCH_PAIRED_ROUNDS   rounds of the paired step below (default 5)
#
# Per model and target, one process (max_parallel_workers_per_gather = 0),
# every query timed from the second time it runs in its session (the first run
# loads the model, and pays for the backend's first pass over the table and
# its first large allocations: page faults, up to 0.5 s more per query on a
# virtual machine whose memory the host maps in lazily, which would hide
# the ratios of the short queries behind a constant):
#   tune     SELECT * FROM hb_tune(model, 'SELECT * FROM t_sample', kind => 'topk',
#            k => 10, target => TARGET, confidence => 0.95)
#   batch    SELECT (item).id FROM hb_predict_batch(model, NULL::t)
#            ORDER BY score DESC, (item).id LIMIT 10     (full scoring + top-N sort)
#   exact    the same ORDER BY hb_predict(model, t) DESC LIMIT 10 with
#            hbird.topk_mode = exact (the batching scan's exact pruning), and
#            hb_topk(model, 10, NULL::t, mode => 'exact')
#   approx   the plain query under hbird.topk_mode = auto (the tuning), and
#            hb_topk(model, 10, NULL::t, mode => 'approx')
#   paired   batch, the plain query and hb_topk approx in turn, BENCH_PAIRED_ROUNDS
#            rounds in one session after a warm-up of each: each round's ratios
#            batch / approximate, their median and range (the machine's speed
#            moves by a third over minutes; a round's queries run seconds apart)
# then precision@10 of both approximate forms against the exact answer on:
# all rows, each tenth by id, three hash subsets (1/2, 1/5, 1/20 of the ids)
# (rows drawn like the sample: what the tuning's statement covers), and
# WHERE f0 > 1 (a filter on a feature: rows unlike the sample, no statement).
# The tunings are dropped at the end.
set -euo pipefail

: "${BENCH_OUT:?}" "${BENCH_SAMPLE_CSV:?}"
BENCH_APPROX_TARGETS=${BENCH_APPROX_TARGETS:-0.99 0.95}
BENCH_PAIRED_ROUNDS=${BENCH_PAIRED_ROUNDS:-5}
export BENCH_REPEAT=${BENCH_REPEAT:-3}
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_APPROX_REPORT=${BENCH_APPROX_REPORT:-$BENCH/results/topk_approx_latest.txt}
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

out topk_approx_status failed
if [ "$(psql -X -At -c "SELECT count(*) FROM pg_class WHERE relname = 't_sample'")" = 0 ]; then
	log "approximate top-K: loading the sample rows from $BENCH_SAMPLE_CSV"
	cols=$(for ((i = 0; i < 28; i++)); do printf 'f%d float8,' "$i"; done)
	sql <<-EOF
		CREATE TABLE t_sample (${cols%,});
		\copy t_sample FROM '$BENCH_SAMPLE_CSV' WITH (FORMAT csv, HEADER true)
		VACUUM (FREEZE, ANALYZE) t_sample;
	EOF
fi
NS=$(psql -X -At -c "SELECT count(*) FROM t_sample")
NT=$(psql -X -At -c "SELECT count(*) FROM t")
MODELS="m"
if [ -n "${BENCH_LTR_MODEL:-}" ]; then
	psql -X -q -At -v ON_ERROR_STOP=1 -v p="$BENCH_LTR_MODEL" >/dev/null <<-'EOF'
		\set ltr `cat :p`
		SELECT hb_model_drop('ltr') FROM hb_models WHERE name = 'ltr' LIMIT 1;
		SELECT hb_model_upload('ltr', :'ltr');
	EOF
	MODELS="m ltr"
fi

# the query variants of the precision check
sql <<-EOF >/dev/null
	DROP TABLE IF EXISTS bench_variants, bench_topk_res;
	CREATE TABLE bench_variants (n int, name text, pred text, like_sample bool);
	INSERT INTO bench_variants VALUES (0, 'all rows', 'true', true);
	INSERT INTO bench_variants
	SELECT i + 1, format('ids (%s, %s]', i * $NT / 10, (i + 1) * $NT / 10),
		   format('id > %s AND id <= %s', i * $NT / 10, (i + 1) * $NT / 10), true
	FROM generate_series(0, 9) i;
	INSERT INTO bench_variants VALUES
		(11, 'hash of id, 1/2', 'hashint8(id) & 1 = 0', true),
		(12, 'hash of id, 1/5', '(hashint8(id) & 2147483647) % 5 = 0', true),
		(13, 'hash of id, 1/20', '(hashint8(id) & 2147483647) % 20 = 0', true),
		(14, 'f0 > 1 (unlike the sample)', 'f0 > 1', false);
	CREATE TABLE bench_topk_res (model text, target text, variant int, how text, ids bigint[]);
	CREATE OR REPLACE FUNCTION bench_topk_ids(model text, pred text, how text) RETURNS bigint[]
	LANGUAGE plpgsql AS \$\$
	DECLARE r bigint[];
	BEGIN
		IF how = 'hb_topk' THEN
			EXECUTE format('SELECT array_agg((item).id ORDER BY rank) FROM hb_topk(%L, 10, NULL::t, %L, mode => ''approx'')',
						   model, 'SELECT * FROM t WHERE ' || pred) INTO r;
		ELSE
			EXECUTE format('SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict(%L, t) AS s FROM t WHERE %s ORDER BY s DESC, ctid LIMIT 10) q',
						   model, pred) INTO r;
		END IF;
		RETURN r;
	END \$\$;
EOF

REPORT=$(mktemp /tmp/hbird-approx.XXXXXX)
trap 'rm -f "$REPORT"' EXIT
{
	echo "approximate top-10: $NT rows of t, tuned on the $NS rows of t_sample (other rows, same distribution);"
	echo "one process; each query the median of $BENCH_REPEAT runs after a warm-up in its session; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "'cpu s': the backend's CPU time during the query (10 ms ticks); well under the wall time"
	echo "means it waited for a CPU, and '(cpu)' compares CPU times instead of wall times"
} >>"$REPORT"
x() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else printf "-" }'; }

for model in $MODELS; do
	targets=$BENCH_APPROX_TARGETS
	[ "$model" = m ] || targets=${BENCH_APPROX_TARGETS%% *}
	WARM="SELECT hb_predict('$model', t) FROM t LIMIT 1"
	PLAIN="SELECT id, hb_predict('$model', t) AS score FROM t ORDER BY score DESC, ctid LIMIT 10"
	for target in $targets; do
		tag="${model}_${target/./}"
		log "approximate top-K, model $model, target $target: tuning on t_sample"
		sql -c "SELECT hb_tune_drop('$model', 'topk')" >/dev/null
		timed "topk_approx_${tag}_tune" "$SERIAL; SET client_min_messages = warning" \
			"SELECT approximation || ' re-scoring ' || round(100 * coverage::numeric, 2) || '% of the held-out half, bound ' || round(accuracy_bound::numeric, 4) FROM hb_tune('$model', 'SELECT * FROM t_sample', kind => 'topk', k => 10, target => $target, confidence => 0.95) WHERE chosen" \
			"SELECT 1"
		chosen=$(psql -X -At -c "SELECT format('%s (kept %s, cut %s, %s of %s held-out rows re-scored)', approximation, kept, round(cheap_cut::numeric, 4), round(coverage::numeric, 4), eval_rows) FROM hbird.tuning WHERE name = '$model' AND kind = 'topk'")
		out "topk_approx_${tag}_chosen" "$chosen"
		timed "topk_approx_${tag}_batch" "$SERIAL" \
			"SELECT count(*) FROM (SELECT (item).id FROM hb_predict_batch('$model', NULL::t) ORDER BY score DESC, (item).id LIMIT 10) q"
		timed "topk_approx_${tag}_exact_plain" "$SERIAL; SET hbird.topk_mode = exact" \
			"SELECT count(*) FROM ($PLAIN) q"
		timed "topk_approx_${tag}_exact_topk" "$SERIAL" \
			"SELECT count(*) FROM hb_topk('$model', 10, NULL::t, mode => 'exact')"
		timed "topk_approx_${tag}_plain" "$SERIAL" "SELECT count(*) FROM ($PLAIN) q"
		stats=$(psql -X -At -v ON_ERROR_STOP=1 -c "$SERIAL" \
			-c "SELECT count(*) FROM hb_topk('$model', 10, NULL::t, mode => 'approx')" \
			-c '\timing on' -c "SELECT count(*) FROM hb_topk('$model', 10, NULL::t, mode => 'approx')" -c '\timing off' \
			-c "SELECT rows_fully_scored || '|' || rows FROM hb_topk_stats()")
		ms=$(printf '%s\n' "$stats" | psql_times | tail -n 1)
		out "topk_approx_${tag}_topk_seconds" "$(ms_to_s "$ms")"
		timed "topk_approx_${tag}_topk_again" "$SERIAL" \
			"SELECT count(*) FROM hb_topk('$model', 10, NULL::t, mode => 'approx')"
		out "topk_approx_${tag}_topk_rescored" "$(printf '%s\n' "$stats" | tail -n 1)"
		# (the warm-up loads hbird, whose planner hook makes the plan)
		# (rows scored by the full model: pruned rows include those scored
		# and then found below the bar, so the two may overlap)
		plan=$(psql -X -At -c "$SERIAL" -c "$WARM" -c "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY OFF, COSTS OFF) $PLAIN")
		pruned=$(printf '%s\n' "$plan" | sed -n 's/.*Rows Pruned: \([0-9]*\).*/\1/p' | head -n 1)
		scored=$(printf '%s\n' "$plan" | sed -n 's/.*Rows Scored: \([0-9]*\).*/\1/p' | head -n 1)
		out "topk_approx_${tag}_plain_pruned" "${pruned:-?}"
		out "topk_approx_${tag}_plain_scored" "${scored:-?}"

		# paired rounds: the three queries in turn, seconds apart, in one session
		BATCHQ="SELECT count(*) FROM (SELECT (item).id FROM hb_predict_batch('$model', NULL::t) ORDER BY score DESC, (item).id LIMIT 10) q"
		TOPKQ="SELECT count(*) FROM hb_topk('$model', 10, NULL::t, mode => 'approx')"
		pargs=(-c "$SERIAL" -c "$BATCHQ" -c "SELECT count(*) FROM ($PLAIN) q" -c "$TOPKQ" -c '\timing on')
		for ((r = 0; r < BENCH_PAIRED_ROUNDS; r++)); do
			pargs+=(-c "$BATCHQ" -c "SELECT count(*) FROM ($PLAIN) q" -c "$TOPKQ")
		done
		paired=$(psql -X -At -v ON_ERROR_STOP=1 "${pargs[@]}" | psql_times |
			awk '{ t[NR % 3] = $1 }
				 NR % 3 == 0 { printf "%s %.4f %.4f\n", t[1], t[1] / t[2], t[1] / t[0] }')
		pr() { printf '%s\n' "$paired" | awk -v c="$1" '{ print $c }' | median; }
		rng() { printf '%s\n' "$paired" | awk -v c="$1" 'NR == 1 || $c < lo { lo = $c } NR == 1 || $c > hi { hi = $c } END { printf "%.2f-%.2fx", lo, hi }'; }
		out "topk_approx_${tag}_paired_plain" "$(pr 2)"
		out "topk_approx_${tag}_paired_topk" "$(pr 3)"
		log "  paired rounds: plain $(pr 2)x ($(rng 2)), hb_topk $(pr 3)x ($(rng 3)), batch $(pr 1) ms"

		log "  precision on the query variants"
		psql -X -q -v ON_ERROR_STOP=1 -o /dev/null -c "$SERIAL" -c "$WARM" -c "SET hbird.topk_mode = exact" \
			-c "INSERT INTO bench_topk_res SELECT '$model', '$target', n, 'exact', bench_topk_ids('$model', pred, 'plain') FROM bench_variants" \
			-c "RESET hbird.topk_mode" \
			-c "INSERT INTO bench_topk_res SELECT '$model', '$target', n, 'plain', bench_topk_ids('$model', pred, 'plain') FROM bench_variants" \
			-c "INSERT INTO bench_topk_res SELECT '$model', '$target', n, 'hb_topk', bench_topk_ids('$model', pred, 'hb_topk') FROM bench_variants"
		prec=$(psql -X -At -c "
			SELECT string_agg(format('%s|%s|%s|%s', v.name, v.like_sample,
					  round(p.plain::numeric, 2), round(p.topk::numeric, 2)), E'\n' ORDER BY v.n)
			FROM bench_variants v
			JOIN (SELECT e.variant,
						 (SELECT count(*) FROM unnest(a.ids) x WHERE x = ANY (e.ids))::float8 / cardinality(e.ids) AS plain,
						 (SELECT count(*) FROM unnest(h.ids) x WHERE x = ANY (e.ids))::float8 / cardinality(e.ids) AS topk
				  FROM bench_topk_res e
				  JOIN bench_topk_res a ON (a.model, a.target, a.variant, a.how) = (e.model, e.target, e.variant, 'plain')
				  JOIN bench_topk_res h ON (h.model, h.target, h.variant, h.how) = (e.model, e.target, e.variant, 'hb_topk')
				  WHERE e.model = '$model' AND e.target = '$target' AND e.how = 'exact') p ON p.variant = v.n")
		pmin_like=$(printf '%s\n' "$prec" | awk -F'|' '$2 == "t" { if (m == "" || $3 < m) m = $3; if ($4 < m) m = $4 } END { print m }')
		out "topk_approx_${tag}_precision_min" "$pmin_like"
		out "topk_approx_${tag}_precision_filter" "$(printf '%s\n' "$prec" | awk -F'|' '$2 == "f" { print $3 "/" $4 }')"

		kv() { sed -n "s/^topk_approx_${tag}_$1=//p" "$BENCH_OUT" | tail -n 1; }
		b=$(kv batch_seconds) ep=$(kv exact_plain_seconds) et=$(kv exact_topk_seconds)
		ap=$(kv plain_seconds) at=$(kv topk_again_seconds)
		cb=$(kv batch_cpu_seconds) cep=$(kv exact_plain_cpu_seconds) cet=$(kv exact_topk_cpu_seconds)
		cap=$(kv plain_cpu_seconds) cat_=$(kv topk_again_cpu_seconds)
		tt=$(sed -n "s/^topk_approx_${tag}_tune_seconds=//p" "$BENCH_OUT" | tail -n 1)
		rs=$(printf '%s\n' "$stats" | tail -n 1)
		{
			echo
			echo "model $model ($(psql -X -At -c "SELECT objective || ', ' || n_trees || ' trees of depth ' || max_depth FROM hb_models WHERE name = '$model' AND active")), target precision@10 >= $target, confidence 0.95"
			echo "  hb_tune: $tt s; chosen: $chosen"
			printf '  %-56s %8s %8s %9s %9s %s\n' "query" "seconds" "cpu s" "vs batch" "(cpu)" "rows re-scored"
			printf '  %-56s %8.3f %8s %9s %9s %s\n' "hb_predict_batch + ORDER BY score DESC LIMIT 10 (full)" "$b" "$cb" "1.00x" "1.00x" "$NT"
			printf '  %-56s %8.3f %8s %9s %9s %s\n' "ORDER BY hb_predict DESC LIMIT 10, topk_mode exact" "$ep" "$cep" "$(x "$b" "$ep")" "$(x "$cb" "$cep")" "(exact pruning)"
			printf '  %-56s %8.3f %8s %9s %9s %s\n' "hb_topk mode 'exact'" "$et" "$cet" "$(x "$b" "$et")" "$(x "$cb" "$cet")" "(exact pruning)"
			printf '  %-56s %8.3f %8s %9s %9s %s\n' "ORDER BY hb_predict DESC LIMIT 10, tuned (approximate)" "$ap" "$cap" "$(x "$b" "$ap")" "$(x "$cb" "$cap")" "${scored:-?}"
			printf '  %-56s %8.3f %8s %9s %9s %s\n' "hb_topk mode 'approx'" "$at" "$cat_" "$(x "$b" "$at")" "$(x "$cb" "$cat_")" "${rs%%|*}"
			echo "  paired, $BENCH_PAIRED_ROUNDS rounds of batch, plain, hb_topk in one session (median and range of the rounds' ratios to batch):"
			echo "    plain $(pr 2 | awk '{ printf "%.2fx", $1 }') ($(rng 2)), hb_topk $(pr 3 | awk '{ printf "%.2fx", $1 }') ($(rng 3)), batch median $(pr 1 | awk '{ printf "%.3f s", $1 / 1000 }')"
			echo "  precision@10 against the exact answer (plain query / hb_topk):"
			printf '%s\n' "$prec" | awk -F'|' '{ printf "    %-34s %s / %s%s\n", $1, $3, $4, $2 == "f" ? "   (not drawn like the sample)" : "" }'
		} >>"$REPORT"
		sql -c "SELECT hb_tune_drop('$model', 'topk')" >/dev/null
	done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$REPORT"
mkdir -p "$(dirname "$BENCH_APPROX_REPORT")"
cp "$REPORT" "$BENCH_APPROX_REPORT"
cat "$REPORT" >&2
sql -c "DROP TABLE bench_variants, bench_topk_res" -c "DROP FUNCTION bench_topk_ids(text, text, text)" >/dev/null
out topk_approx_status ok
