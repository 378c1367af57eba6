#!/bin/bash
# Ranking in one run: exact top-K (bench/topk.sh: hb_topk and the plain
# ORDER BY ... LIMIT k against full batched scoring, k = 1, 10, 100, 1000)
# and approximate top-10 (bench/topk_approx.sh: hb_tune on a sample of other
# rows, the tuned plain query and hb_topk, precision on held-out variants)
# for the anchor model and a learning-to-rank model, in a throwaway cluster.
#
#   bash bench/ranking.sh [ROWS]          (default ROWS = 1000000)
#
# Installs nothing: the installed hbird is measured (make install first,
# and hold /tmp/hbird-install.lock around both on a shared machine).
# Data, cached in bench/data/: bench/gen_bench.py's model and ROWS rows (t),
# RANKING_SAMPLE rows (default 200,000, another seed: t_sample) and
# bench/gen_ltr.py's rank:pairwise model (300 trees).  About 10 minutes on
# 2 cores for 1M rows once the data is cached.
#
#   RANKING_SAMPLE         rows of the tuning sample (must differ from ROWS)
#   BENCH_APPROX_TARGETS   precision targets (default "0.99 0.95")
#   BENCH_TOPK_K           k of the exact step (default "1 10 100 1000")
# Results: bench/results/ranking_latest.txt (the exact step's table and the
# approximate step's, bench/results/topk_approx_latest.txt).
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
log() { printf '[ranking %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

if [ "${1:-}" = --in-cluster ]; then
	# inside pg_virtualenv: the table, the model, then the steps
	cols=$(for ((i = 0; i < 28; i++)); do printf 'f%d float8,' "$i"; done)
	psql -X -q -v ON_ERROR_STOP=1 -v m="$RANKING_MODEL" >/dev/null <<-EOF
		CREATE EXTENSION hbird;
		\set model \`cat :m\`
		SELECT hb_model_upload('m', :'model');
		CREATE TABLE t (${cols%,});
		\copy t FROM '$RANKING_CSV' WITH (FORMAT csv, HEADER true)
	EOF
	exec bash "$BENCH/topk.sh"
fi

ROWS=${1:-1000000}
SAMPLE=${RANKING_SAMPLE:-200000}
[ "$SAMPLE" != "$ROWS" ] || { echo "RANKING_SAMPLE must differ from ROWS (same seed, same rows)" >&2; exit 2; }
DATA=$BENCH/data
mkdir -p "$DATA" "$BENCH/results"

"$PY" "$BENCH/gen_bench.py" "$ROWS" "$DATA" >&2
"$PY" "$BENCH/gen_bench.py" "$SAMPLE" "$DATA" >&2
[ -f "$DATA/ltr.json" ] || "$PY" "$BENCH/gen_ltr.py" "$DATA/ltr.json" >&2

KV=$DATA/ranking_$ROWS.kv
: >"$KV"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before the run: $LOAD_BEFORE"
export BENCH_OUT=$KV BENCH_SAMPLE_CSV=$DATA/bench_$SAMPLE.csv BENCH_LTR_MODEL=$DATA/ltr.json
export RANKING_CSV=$DATA/bench_$ROWS.csv RANKING_MODEL=$DATA/model.json
pg_virtualenv -t -v 15 -o shared_buffers=2GB -o jit=off -o work_mem=64MB -o max_wal_size=4GB \
	bash "$BENCH/ranking.sh" --in-cluster
{
	echo "hbird ranking benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $ROWS rows, commit $(git -C "$BENCH/.." rev-parse --short HEAD)"
	echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo
	"$PY" -c "
import sys
sys.path.insert(0, '$BENCH')
import report
lines = []
report.topk_section(lines.append, report.read_kv('$KV'), {'rows': '$ROWS'})
print('\n'.join(lines))
"
	cat "$BENCH/results/topk_approx_latest.txt"
} | tee "$BENCH/results/ranking_latest.txt"
