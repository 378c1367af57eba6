#!/bin/bash
# The PostgreSQL half of the benchmark.  bench/run.sh runs this inside a
# throwaway cluster made by pg_virtualenv (which sets PGHOST, PGPORT, ...).
#
# Inputs (environment):
#   BENCH_ROWS     number of rows in the CSV
#   BENCH_CSV      CSV with header f0..f27 (empty cell = NULL), read by psql \copy
#   BENCH_MODEL    model JSON, readable by the server user (postgres)
#   BENCH_OUT      file to append key=value results to
#   BENCH_PY_ROWS  rows scored by the PL/Python variant (default 20000)
#   BENCH_HBIRD    1 to run the hbird step, 0 to skip it
set -euo pipefail

: "${BENCH_ROWS:?}" "${BENCH_CSV:?}" "${BENCH_MODEL:?}" "${BENCH_OUT:?}"
BENCH_PY_ROWS=${BENCH_PY_ROWS:-20000}
BENCH_HBIRD=${BENCH_HBIRD:-1}
NCOLS=28

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
out() { printf '%s=%s\n' "$1" "$2" >>"$BENCH_OUT"; }
sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

# timed LABEL SETUP_SQL QUERY
#   One session: run SETUP_SQL, run QUERY once to warm up (loads the model,
#   fills caches), then run QUERY again under \timing.  Records
#   LABEL_seconds and LABEL_result (the value of the second run).
timed() {
	local label=$1 setup=$2 query=$3 output result ms
	output=$(psql -X -At -v ON_ERROR_STOP=1 \
		-c "$setup" -c "$query" -c '\timing on' -c "$query") || {
		log "FAILED: $label: $query"
		return 1
	}
	result=$(printf '%s\n' "$output" | grep -v '^Time: ' | tail -n 1)
	ms=$(printf '%s\n' "$output" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -n 1)
	if [ -z "$ms" ]; then
		log "FAILED: $label: no timing in psql output:"
		printf '%s\n' "$output" >&2
		return 1
	fi
	out "${label}_seconds" "$(awk -v ms="$ms" 'BEGIN { printf "%.6f", ms / 1000 }')"
	out "${label}_result" "$result"
	log "$label: $result in $ms ms"
}

# "Workers Planned: N" of the plan, 0 when the plan has no Gather
workers_planned() {
	local setup=$1 query=$2 n
	n=$(psql -X -At -v ON_ERROR_STOP=1 -c "$setup" -c "EXPLAIN (COSTS OFF) $query" |
		sed -n 's/.*Workers Planned: \([0-9]*\).*/\1/p' | head -n 1)
	echo "${n:-0}"
}

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

SERIAL="SET max_parallel_workers_per_gather = 0; SET synchronize_seqscans = off"
DEFAULT="RESET max_parallel_workers_per_gather"

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
out py_version "$(psql -X -At -c "DO \$\$ import xgboost; plpy.notice(xgboost.__version__) \$\$ LANGUAGE plpython3u" 2>&1 | sed 's/^NOTICE: *//')"
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
timed hbird_py_subset "$SERIAL" \
	"SELECT sum(hb_predict('m', s.t)) FROM (SELECT t FROM t LIMIT $BENCH_PY_ROWS) s"
out hbird_status ok
