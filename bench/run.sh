#!/bin/bash
# hbird benchmark: scoring a 500-tree XGBoost model over a 1M x 28 table.
#
#   bash bench/run.sh [ROWS]        (default ROWS = 1000000)
#
# Compares, on the same rows and model:
#   (a) XGBoost's own predictor through its C API (bench/xgb_capi.c), 1 thread
#   (b) PL/Python calling xgboost once per row (timed on a subset)
#   (c) SELECT count(*) FROM t: the scan alone
#   (d) hbird: SELECT sum(hb_predict('m', t)) FROM t, serial and parallel
#   (e) hbird's batched forms (hb_predict_agg, hb_predict_batch), serial,
#       with hbird.tree_strategy auto, tt and ptt
#   (e2) the same table through a 1-tree model, where reading and binding
#       the rows is nearly all the work: every form against the scan alone
#   (f) the first hb_predict of a fresh backend: model loaded from the
#       stored image, from the JSON (image removed), and a second call
#   (g) top-K: hb_topk against ORDER BY hb_predict DESC LIMIT k (bench/topk.sh)
# and prints a table that also goes to bench/results/latest.txt.
# About 7 to 8 minutes on 2 cores for 1M rows once the data is cached.
#
# Needs (Debian): postgresql-15, postgresql-server-dev-15,
# postgresql-plpython3-15, postgresql-common (pg_virtualenv), python3-xgboost,
# python3-numpy, libxgboost-dev, gcc.  Run as root or as a user that can
# `make install` the extension.
#
# Environment knobs:
#   BENCH_PY_ROWS=20000       rows scored by the PL/Python variant
#   BENCH_SKIP_HBIRD=1        do not build, install or run hbird (steps a-c only)
#   BENCH_NO_INSTALL=1        use the hbird already installed; no make / make install
#   BENCH_SHARED_BUFFERS=2GB  shared_buffers of the throwaway cluster
#   BENCH_FIRSTCALL_REPS=10   fresh connections per first-call variant (f)
#   BENCH_TOPK=0              skip the top-K step (g)
#   BENCH_TOPK_K="1 10 100 1000"  the k of the top-K step
#   BENCH_ONLY=e2             the binding step (e2) alone: no XGBoost C API,
#                             PL/Python or 500-tree steps (about 2 minutes)
#
# Generated data and the model are cached in bench/data/ (not committed).
set -euo pipefail

ROWS=${1:-1000000}
if ! [[ $ROWS =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: bash bench/run.sh [ROWS]   (ROWS: a positive integer, default 1000000)" >&2
	exit 2
fi
BENCH_PY_ROWS=${BENCH_PY_ROWS:-20000}
((BENCH_PY_ROWS > ROWS)) && BENCH_PY_ROWS=$ROWS
BENCH_SHARED_BUFFERS=${BENCH_SHARED_BUFFERS:-2GB}
PY=/usr/bin/python3
PG_VERSION=15

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH")
DATA=$BENCH/data
mkdir -p "$DATA" "$BENCH/results"

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# other work on the machine disturbs the timings: note the load before we start
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before the run: $LOAD_BEFORE"

# --- prerequisites -------------------------------------------------------------
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found ($2)"; }
need pg_virtualenv "apt-get install postgresql-common"
need psql "apt-get install postgresql-client-$PG_VERSION"
need gcc "apt-get install gcc"
[ -x "$PY" ] || die "$PY not found"
[ -x /usr/lib/postgresql/$PG_VERSION/bin/postgres ] || die "PostgreSQL $PG_VERSION server not installed (apt-get install postgresql-$PG_VERSION)"
[ -f /usr/include/xgboost/c_api.h ] || die "xgboost C API header missing (apt-get install libxgboost-dev)"
"$PY" -c 'import xgboost, numpy' 2>/dev/null || die "$PY cannot import xgboost/numpy (apt-get install python3-xgboost)"
ls /usr/lib/postgresql/$PG_VERSION/lib/plpython3.so >/dev/null 2>&1 ||
	die "PL/Python missing (apt-get install postgresql-plpython3-$PG_VERSION)"

# --- data and model --------------------------------------------------------------
log "step 1: data and model (cached in $DATA)"
"$PY" "$BENCH/gen_bench.py" "$ROWS" "$DATA"
MODEL=$DATA/model.json
F32=$DATA/bench_$ROWS.f32
CSV=$DATA/bench_$ROWS.csv

# --- (a) XGBoost C API -----------------------------------------------------------------
BENCH_ONLY=${BENCH_ONLY:-}
case $BENCH_ONLY in
	'' | e2) ;;
	*) die "BENCH_ONLY=$BENCH_ONLY: the only step that runs alone is e2" ;;
esac
CAPI_KV=$DATA/capi_$ROWS.kv
if [ -n "$BENCH_ONLY" ]; then
	log "step 2: (a) skipped (BENCH_ONLY=$BENCH_ONLY)"
	: >"$CAPI_KV"
else
	log "step 2: (a) XGBoost C API, nthread=1"
	gcc -O2 -Wall -o "$DATA/xgb_capi" "$BENCH/xgb_capi.c" -lxgboost ||
		die "cannot build bench/xgb_capi.c (libxgboost-dev installed?)"
	"$DATA/xgb_capi" "$MODEL" "$F32" "$ROWS" 28 1 "$BENCH_PY_ROWS" | tee "$CAPI_KV" >&2
fi

# --- hbird build --------------------------------------------------------------------
PG_KV=$DATA/pg_$ROWS.kv
: >"$PG_KV"
WANT_HBIRD=1
RUN_HBIRD=1
if [ "${BENCH_SKIP_HBIRD:-0}" = 1 ]; then
	WANT_HBIRD=0
	RUN_HBIRD=0
	echo "hbird_status=skipped (BENCH_SKIP_HBIRD=1)" >>"$PG_KV"
elif [ "${BENCH_NO_INSTALL:-0}" = 1 ]; then
	log "step 3: using the installed hbird (BENCH_NO_INSTALL=1)"
else
	log "step 3: make && make install (log: $DATA/make.log)"
	if [ ! -f "$ROOT/Makefile" ]; then
		log "no $ROOT/Makefile: hbird cannot be built; skipping step (d)"
		RUN_HBIRD=0
		echo "hbird_status=not built (no Makefile)" >>"$PG_KV"
	elif ! { make -C "$ROOT" -j"$(nproc)" && make -C "$ROOT" install; } >"$DATA/make.log" 2>&1; then
		tail -n 30 "$DATA/make.log" >&2
		log "make / make install failed (full log: $DATA/make.log); skipping step (d)"
		RUN_HBIRD=0
		echo "hbird_status=make or make install failed" >>"$PG_KV"
	fi
fi

# --- PostgreSQL: (b), (c), (d) -----------------------------------------------------------
# The server runs as user postgres: give it a copy of the model it can read.
SRV=$(mktemp -d /tmp/hbird-bench.XXXXXX)
trap 'rm -rf "$SRV"' EXIT
chmod 755 "$SRV"
cp "$MODEL" "$SRV/model.json"
cp "$DATA/one_tree.json" "$SRV/one_tree.json"
chmod 644 "$SRV/model.json" "$SRV/one_tree.json"

log "step 4: throwaway PostgreSQL $PG_VERSION cluster (pg_virtualenv): (b) PL/Python, (c) count(*), (d)-(g) hbird"
# Others may reinstall hbird while this runs (new backends then load the new
# library): note the installed library before and after, and the commit.
SO=$(pg_config --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/$PG_VERSION/lib)/hbird.so
so_id() { [ -f "$SO" ] && echo "$(md5sum <"$SO" | cut -c1-12) $(date -u -r "$SO" '+%Y-%m-%d %H:%M:%S UTC')" || echo none; }
SO_BEFORE=$(so_id)
CLUSTER_OK=1
BENCH_ROWS=$ROWS BENCH_CSV=$CSV BENCH_MODEL=$SRV/model.json BENCH_ONE_TREE=$SRV/one_tree.json \
	BENCH_OUT=$PG_KV \
	BENCH_PY_ROWS=$BENCH_PY_ROWS BENCH_HBIRD=$RUN_HBIRD \
	BENCH_FIRSTCALL_REPS=${BENCH_FIRSTCALL_REPS:-10} BENCH_TOPK=${BENCH_TOPK:-1} \
	BENCH_TOPK_K=${BENCH_TOPK_K:-1 10 100 1000} BENCH_ONLY=$BENCH_ONLY \
	pg_virtualenv -t -v "$PG_VERSION" \
	-o "shared_buffers=$BENCH_SHARED_BUFFERS" -o jit=off -o max_wal_size=4GB \
	-o work_mem=64MB \
	bash "$BENCH/run_in_cluster.sh" || CLUSTER_OK=0
if [ "$CLUSTER_OK" = 0 ]; then
	log "the PostgreSQL step failed (see above); reporting what was measured"
fi

# --- report ---------------------------------------------------------------------------
META=$DATA/meta_$ROWS.kv
{
	echo "rows=$ROWS"
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "cores=$(nproc)"
	echo "mem=$(free -g | awk '/^Mem:/ { print $2 " GiB" }')"
	echo "shared_buffers=$BENCH_SHARED_BUFFERS"
	echo "want_hbird=$WANT_HBIRD"
	echo "want_topk=${BENCH_TOPK:-1}"
	echo "only=$BENCH_ONLY"
	echo "load_before=$LOAD_BEFORE"
	echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)"
	echo "run_seconds=$SECONDS"
	echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(
		[ -n "$(git -C "$ROOT" status --porcelain -- src sql Makefile 2>/dev/null)" ] &&
		echo ' + uncommitted changes in src/sql')"
	echo "hbird_so_before=$SO_BEFORE"
	echo "hbird_so_after=$(so_id)"
	"$PY" - "$MODEL" <<-'EOF'
		import json, sys
		L = json.load(open(sys.argv[1]))["learner"]
		trees = L["gradient_booster"]["model"]["trees"]
		nodes = sum(len(t["left_children"]) for t in trees)
		print("model=%s, %d trees, max_depth 8, %d nodes, %d features"
		      % (L["objective"]["name"], len(trees), nodes,
		         int(L["learner_model_param"]["num_feature"])))
	EOF
} >"$META"

echo
status=0
"$PY" "$BENCH/report.py" "$CAPI_KV" "$PG_KV" "$META" "$BENCH/results/latest.txt" || status=1
echo
log "written to bench/results/latest.txt"
if [ "$CLUSTER_OK" = 0 ]; then status=1; fi
exit $status
