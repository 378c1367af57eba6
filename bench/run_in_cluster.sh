#!/bin/bash
# The PostgreSQL half of the benchmark.  bench/run.sh runs this inside a
# throwaway cluster made by pg_virtualenv (which sets PGHOST, PGPORT, ...).
#
# Inputs (environment):
#   BENCH_ROWS     number of rows in the CSV
#   BENCH_CSV      CSV with header f0..f27 (empty cell = NULL), read by psql \copy
#   BENCH_MODEL    model JSON, readable by the server user (postgres)
#   BENCH_ONE_TREE the 1-tree model of step (e2), readable likewise
#   BENCH_OUT      file to append key=value results to
#   BENCH_PY_ROWS  rows scored by the PL/Python variant (default 20000)
#   BENCH_HBIRD    1 to run the hbird steps, 0 to skip them
#   BENCH_FIRSTCALL_REPS  fresh connections per first-call variant (default 10)
#   BENCH_TOPK     1 to run the top-K step (bench/topk.sh), 0 to skip it
#   BENCH_TOPK_K   the k of the top-K step (default "1 10 100 1000")
#   BENCH_ONLY     e2: the binding step (e2) alone
set -euo pipefail

: "${BENCH_ROWS:?}" "${BENCH_CSV:?}" "${BENCH_MODEL:?}" "${BENCH_OUT:?}"
BENCH_PY_ROWS=${BENCH_PY_ROWS:-20000}
BENCH_HBIRD=${BENCH_HBIRD:-1}
BENCH_FIRSTCALL_REPS=${BENCH_FIRSTCALL_REPS:-10}
BENCH_TOPK=${BENCH_TOPK:-1}
NCOLS=28

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/lib.sh
. "$BENCH/lib.sh"

out pg_version "$(psql -X -At -c 'SHOW server_version')"

# ---------------------------------------------------------------------------
log "loading $BENCH_ROWS rows from $BENCH_CSV"
cols=$(for ((i = 0; i < NCOLS; i++)); do printf 'f%d float8,' "$i"; done)
t0=$(date +%s.%N)
sql <<-EOF
	CREATE TABLE t (${cols%,});
	\copy t FROM '$BENCH_CSV' WITH (FORMAT csv, HEADER true)
	VACUUM (FREEZE, ANALYZE) t;
EOF
t1=$(date +%s.%N)
out load_seconds "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
n=$(psql -X -At -c 'SELECT count(*) FROM t')
[ "$n" = "$BENCH_ROWS" ] || { log "FAILED: table t has $n rows, expected $BENCH_ROWS"; exit 1; }
out table_size "$(psql -X -At -c "SELECT pg_size_pretty(pg_table_size('t'))")"
log "loaded: $(psql -X -At -c "SELECT pg_size_pretty(pg_table_size('t'))")"

# ---------------------------------------------------------------------------
# (e2) binding: a 1-tree model over the same table, so that what is timed is
# reading the rows, binding their 28 columns to features and handing the
# scores back.  Baselines: the scan that deforms every column (sum(f27): the
# last column) and the scan that adds all 28 columns up in SQL.  Each query
# is timed three times in one session (after a warm-up); the best wall time
# and the best CPU time of the backend count.  The aggregate and the
# batched function also run with hbird.batch_scan = off: the aggregate
# then binds a whole-row datum per row, hb_predict_batch is a Function Scan
# that stores every row before the first is read.
bind_step() {
	local cols28 setup output best ticks i
	sql -c "SELECT hb_model_upload('one', pg_read_binary_file('$BENCH_ONE_TREE'))" >/dev/null
	cols28=$(for ((i = 0; i < NCOLS; i++)); do printf 'coalesce(f%d, 0) + ' "$i"; done)
	bind_forms=(scan_last scan_sum plain rowwise agg agg_noscan batch batch_noscan)
	bind_sql=(
		"SELECT sum(f27) FROM t"
		"SELECT sum(${cols28% + }) FROM t"
		"SELECT sum(hb_predict('one', t)) FROM t"
		"SELECT sum(hb_predict('one', t)) FROM t"
		"SELECT sum(v) FROM unnest((SELECT hb_predict_agg('one', t) FROM t)) v"
		"SELECT sum(v) FROM unnest((SELECT hb_predict_agg('one', t) FROM t)) v"
		"SELECT sum(score) FROM hb_predict_batch('one', NULL::t)"
		"SELECT sum(score) FROM hb_predict_batch('one', NULL::t)"
	)
	for i in "${!bind_forms[@]}"; do
		setup=$SERIAL
		case ${bind_forms[$i]} in
			rowwise | *_noscan) setup="$SERIAL; SET hbird.batch_scan = off" ;;
		esac
		output=$(psql -X -At -q -v ON_ERROR_STOP=1 -c "$setup" -c "${bind_sql[$i]}" -c '\timing on' \
			-c "$CPU_SQL" -c "${bind_sql[$i]}" -c "$CPU_SQL" -c "${bind_sql[$i]}" \
			-c "$CPU_SQL" -c "${bind_sql[$i]}" -c "$CPU_SQL") || {
			log "FAILED: binding step: ${bind_sql[$i]}"
			continue
		}
		# every second timing is a query's (the others read the CPU time)
		best=$(printf '%s\n' "$output" | psql_times | awk 'NR % 2 == 0' | sort -g | head -1)
		ticks=$(printf '%s\n' "$output" | sed -n 's/^cpu \([0-9]*\)$/\1/p' |
			awk 'NR > 1 { d = $1 - p; if (m == "" || d < m) m = d } { p = $1 } END { print m }')
		out "bind_${bind_forms[$i]}_seconds" "$(ms_to_s "$best")"
		[ -n "$ticks" ] && out "bind_${bind_forms[$i]}_cpu_seconds" \
			"$(awk -v t="$ticks" -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", t / hz }')"
		out "bind_${bind_forms[$i]}_result" "$(printf '%s\n' "$output" | grep -v '^Time:' | grep -v '^cpu ' | tail -1)"
		log "binding ${bind_forms[$i]}: best of 3 $best ms"
	done
}

# BENCH_ONLY=e2: the binding step alone (no PL/Python, no 500-tree model)
if [ "${BENCH_ONLY:-}" = e2 ]; then
	sql -c "CREATE EXTENSION hbird" >/dev/null || { out hbird_status failed; exit 1; }
	out hbird_version "$(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'hbird'")"
	bind_step
	out hbird_status ok
	exit 0
fi

# ---------------------------------------------------------------------------
# (c) the scan alone
timed count_serial "$SERIAL" "SELECT count(*) FROM t"
timed count_parallel "$DEFAULT" "SELECT count(*) FROM t"
out count_parallel_workers "$(workers_planned "$DEFAULT" "SELECT count(*) FROM t")"

# ---------------------------------------------------------------------------
# (b) PL/Python calling xgboost once per row, booster cached in SD.
# inplace_predict on a 1x28 numpy array is the fastest per-row call that
# xgboost's Python API offers (a DMatrix per row is about 1.3x slower; most
# of the ~200 us per call is xgboost's per-call overhead, not the trees).
log "PL/Python: scoring the first $BENCH_PY_ROWS rows"
sql <<-EOF
	CREATE EXTENSION IF NOT EXISTS plpython3u;
	CREATE OR REPLACE FUNCTION py_predict(r t) RETURNS float8
	LANGUAGE plpython3u STRICT PARALLEL SAFE AS \$py\$
	if 'bst' not in SD:
	    import numpy, xgboost
	    bst = xgboost.Booster(model_file='$BENCH_MODEL')
	    bst.set_param('nthread', 1)
	    SD['bst'] = bst
	    SD['np'] = numpy
	    SD['cols'] = ['f%d' % i for i in range($NCOLS)]
	np = SD['np']
	x = np.array([[np.nan if r[c] is None else r[c] for c in SD['cols']]],
	             dtype=np.float32)
	return float(SD['bst'].inplace_predict(x)[0])
	\$py\$;
EOF
out py_rows "$BENCH_PY_ROWS"
out py_version "$(psql -X -At -q -c "DO \$\$ import xgboost; plpy.notice(xgboost.__version__) \$\$ LANGUAGE plpython3u" 2>&1 | sed 's/^NOTICE: *//')"
timed py_serial "$SERIAL" \
	"SELECT sum(py_predict(s.t)) FROM (SELECT t FROM t LIMIT $BENCH_PY_ROWS) s"

# ---------------------------------------------------------------------------
# (d) hbird
if [ "$BENCH_HBIRD" != 1 ]; then
	log "hbird step skipped"
	out hbird_status skipped
	exit 0
fi
out hbird_status failed    # until it works
log "hbird: CREATE EXTENSION and upload the model"
if ! msg=$(sql 2>&1 <<-EOF
	CREATE EXTENSION hbird;
	SELECT hb_model_upload('m', pg_read_binary_file('$BENCH_MODEL'));
EOF
); then
	printf '%s\n' "$msg" >&2
	out hbird_status "failed: $(printf '%s\n' "$msg" | grep -m 1 'ERROR' || echo 'see the log')"
	exit 1
fi
out hbird_version "$(psql -X -At -c "SELECT extversion FROM pg_extension WHERE extname = 'hbird'")"
HB="SELECT sum(hb_predict('m', t)) FROM t"
timed hbird_serial "$SERIAL" "$HB"
timed hbird_parallel "$DEFAULT" "$HB"
out hbird_parallel_workers "$(workers_planned "$DEFAULT" "$HB")"
# the same queries row at a time (the batching scan off), and the first row
timed hbird_rowwise_serial "$SERIAL; SET hbird.batch_scan = off" "$HB"
timed hbird_rowwise_parallel "$DEFAULT; SET hbird.batch_scan = off" "$HB"
timed hbird_limit1 "$SERIAL" "SELECT hb_predict('m', t) FROM t LIMIT 1"
timed hbird_py_subset "$SERIAL" \
	"SELECT sum(hb_predict('m', s.t)) FROM (SELECT t FROM t LIMIT $BENCH_PY_ROWS) s"
out hbird_status ok

# ---------------------------------------------------------------------------
# (e) batched forms, one process: the rows reach hbird in batches, so it can
# use a batch strategy (PTT) instead of walking the trees one row at a time.
# Neither form runs in parallel workers (hb_predict_agg has no combine
# function, hb_predict_batch is parallel unsafe), so only serial is timed.
# Warm-up: the same form on the first WARM rows (loads the model and
# compiles the plan for the same batch size); the full query runs once.
out batch_status failed
WARM=$((BENCH_ROWS < 100000 ? BENCH_ROWS : 100000))
out batch_plan "$(psql -X -At -c "SELECT string_agg(DISTINCT strategy, ',') || ' strategy, batches of ' ||
	max(split_part(input_shape, 'x', 1)) || ' rows' FROM hb_compile('m')")"
out batch_plan_1 "$(psql -X -At -c "SELECT string_agg(DISTINCT strategy, ',') FROM hb_compile('m', 1)")"
AGG="SELECT sum(v) FROM unnest((SELECT hb_predict_agg('m', t) FROM t)) v"
AGG_WARM="SELECT sum(v) FROM unnest((SELECT hb_predict_agg('m', s.t) FROM (SELECT t FROM t LIMIT $WARM) s)) v"
BATCH="SELECT sum(score) FROM hb_predict_batch('m', NULL::t)"
BATCH_WARM="SELECT sum(score) FROM hb_predict_batch('m', NULL::t, 'SELECT * FROM t LIMIT $WARM')"
for strategy in auto tt ptt; do
	setup="$SERIAL; SET hbird.tree_strategy = '$strategy'"
	timed "agg_$strategy" "$setup" "$AGG" "$AGG_WARM"
	timed "batch_$strategy" "$setup" "$BATCH" "$BATCH_WARM"
done
out batch_status ok

# (e2): see bind_step above
[ -n "${BENCH_ONE_TREE:-}" ] && bind_step

# ---------------------------------------------------------------------------
# (f) first call in a fresh backend.  Each repetition is a new connection
# that runs one hb_predict on a literal array twice under \timing: the
# first call loads hbird.so, reads the model from the catalog, loads and
# compiles it, and scores one row; the second finds the compiled model in
# the backend's cache.  \timing is the client's round trip of the statement:
# connecting and starting the backend are not in it.
out firstcall_status failed
out firstcall_reps "$BENCH_FIRSTCALL_REPS"
FLIST=$(seq -s, -f 'f%g' 0 $((NCOLS - 1)))
ref=$(psql -X -At -q -v ON_ERROR_STOP=1 -c "$SERIAL" -c "SELECT
	'ARRAY[' || array_to_string(ARRAY[$FLIST], ',') || ']::float8[]', hb_predict('m', t)
	FROM t WHERE num_nulls($FLIST) = 0 LIMIT 1")
ARR=${ref%|*}
out firstcall_ref "${ref##*|}"
out model_json_bytes "$(psql -X -At -c "SELECT octet_length(body) FROM hbird.model_version WHERE name = 'm'")"
out model_image_bytes "$(psql -X -At -c "SELECT coalesce(octet_length(image), 0) FROM hbird.model_version WHERE name = 'm'")"

# first_call LABEL QUERY
#   Records LABEL_first_ms (median over the connections), LABEL_first_min,
#   LABEL_first_max, LABEL_cached_ms (median of the second calls) and
#   LABEL_result (the distinct results, space separated).
first_call() {
	local label=$1 q=$2 i output times firsts='' seconds='' results=''
	for ((i = 0; i < BENCH_FIRSTCALL_REPS; i++)); do
		output=$(psql -X -At -q -v ON_ERROR_STOP=1 -c '\timing on' -c "$q" -c "$q") || {
			log "FAILED: $label: $q"
			return 1
		}
		times=$(printf '%s\n' "$output" | psql_times)
		[ "$(printf '%s\n' "$times" | wc -l)" = 2 ] || {
			log "FAILED: $label: no timing in psql output:"
			printf '%s\n' "$output" >&2
			return 1
		}
		firsts+=$(printf '%s\n' "$times" | sed -n 1p)$'\n'
		seconds+=$(printf '%s\n' "$times" | sed -n 2p)$'\n'
		results+=$(printf '%s\n' "$output" | grep -v '^Time: ')$'\n'
	done
	out "${label}_first_ms" "$(printf '%s' "$firsts" | median)"
	out "${label}_first_min" "$(printf '%s' "$firsts" | sort -g | head -n 1)"
	out "${label}_first_max" "$(printf '%s' "$firsts" | sort -g | tail -n 1)"
	out "${label}_cached_ms" "$(printf '%s' "$seconds" | median)"
	out "${label}_result" "$(printf '%s' "$results" | sort -u | paste -sd ' ')"
	log "$label: first call median $(printf '%s' "$firsts" | median) ms" \
		"(min $(printf '%s' "$firsts" | sort -g | head -n 1), max $(printf '%s' "$firsts" | sort -g | tail -n 1))," \
		"second call $(printf '%s' "$seconds" | median) ms, over $BENCH_FIRSTCALL_REPS connections"
}

out firstcall_load "$(cut -d' ' -f1-3 /proc/loadavg)"
# a baseline: the first statement of a fresh backend that loads hbird.so
# and calls into it without touching a model
first_call fc_nomodel "SELECT * FROM hb_topk_stats()"
# (i) the image stored at upload
first_call fc_image "SELECT hb_predict('m', $ARR)"
# (ii) no image: the backend parses the JSON body.  The image is put back
# byte for byte afterwards, even when the measurement fails.
sql -c "CREATE TABLE bench_image_save AS SELECT name, version, image, md5(image) AS md5
	FROM hbird.model_version WHERE name = 'm'" \
	-c "UPDATE hbird.model_version SET image = NULL WHERE name = 'm'"
fc_ok=1
first_call fc_json "SELECT hb_predict('m', $ARR)" || fc_ok=0
sql -c "UPDATE hbird.model_version v SET image = s.image FROM bench_image_save s
	WHERE v.name = s.name AND v.version = s.version"
out firstcall_image_restored "$(psql -X -At -c "SELECT bool_and(md5(v.image) IS NOT DISTINCT FROM s.md5)
	FROM hbird.model_version v JOIN bench_image_save s USING (name, version)")"
sql -c "DROP TABLE bench_image_save"
[ "$fc_ok" = 1 ] || exit 1
out firstcall_status ok

# ---------------------------------------------------------------------------
# (g) top-K
if [ "$BENCH_TOPK" = 0 ]; then
	log "top-K step skipped (BENCH_TOPK=0)"
	out topk_status "skipped (BENCH_TOPK=0)"
else
	bash "$BENCH/topk.sh"
fi
