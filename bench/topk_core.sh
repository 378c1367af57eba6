#!/bin/bash
# Exact top-K and the class early exit against full scoring, in the core
# (no PostgreSQL), one thread, and the study of how far exact bounds can
# prune (bench/bounds_study.py).
#
#   bash bench/topk_core.sh [ROUNDS] [ROWS]
#
# Data, made once into bench/data/ (Debian's python3 with python3-xgboost
# 1.7.4): the anchor model and ROWS (default 200,000) scoring rows of
# bench/gen_bench.py (about 3 minutes to train), the fraud model of
# bench/gen_fraud.py (about 1.5 minutes).  Then approximate top-10 in the
# core (bench/approx_core.c): tuned on those ROWS rows, timed on APPROX_ROWS
# (default 1,000,000) other rows of gen_bench.py, for targets 0.99 and 0.95.  Builds bench/data/topk_core from
# the core's sources (-O2, as PGXS builds the extension) and writes
# bench/results/topk_core.md.  About a minute at 5 rounds on two cores.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
data="$here/data"
out="$here/results/topk_core.md"
py=/usr/bin/python3
rounds=${1:-5}
rows=${2:-200000}

"$py" -c 'import xgboost' 2>/dev/null ||
	{ echo "$py cannot import xgboost (apt-get install python3-xgboost)" >&2; exit 1; }
mkdir -p "$data" "$here/results"
"$py" "$here/gen_bench.py" "$rows" "$data" >&2
[ -f "$data/fraud.json" ] || "$py" "$here/gen_fraud.py" "$data/fraud.json" >&2

make -s -C "$root" src/core/onnx/onnx_ml.pb-c.c
gcc -std=gnu11 -O2 -Wall -Wextra -I"$root/src/core" -o "$data/topk_core" \
	"$here/topk_core.c" "$root"/src/core/*.c "$root"/src/core/onnx/*.c \
	-lopenblas -lprotobuf-c -lm
gcc -std=gnu11 -O2 -Wall -Wextra -I"$root/src/core" -o "$data/approx_core" \
	"$here/approx_core.c" "$root"/src/core/*.c "$root"/src/core/onnx/*.c \
	-lopenblas -lprotobuf-c -lm
arows=${APPROX_ROWS:-1000000}
[ "$arows" != "$rows" ] || { echo "APPROX_ROWS must differ from ROWS" >&2; exit 2; }
"$py" "$here/gen_bench.py" "$arows" "$data" >&2

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
{
	"$data/topk_core" "$data/model.json" "$data/bench_$rows.f32" "$data/fraud.json" "$rounds"
	echo
	echo "## How far exact bounds can prune (bench/bounds_study.py)"
	echo
	echo "With a perfect bar (the final K-th best from the start; for classes, the"
	echo "boundary), the share of (row, tree) pairs exact pruning must score, and"
	echo "joint bounds over blocks of trees.  The best of 20,000 rows stands for the"
	echo "10th best of 200,000."
	echo
	"$py" "$here/bounds_study.py" topk "$data/model.json" "$data/bench_$rows.f32" 28 20000 1
	echo
	"$py" "$here/bounds_study.py" fraud-rows "$data/fraud_rows.f32" 20000
	"$py" "$here/bounds_study.py" class "$data/fraud.json" "$data/fraud_rows.f32" 20 20000
	echo
	echo "## Approximate top-10 in the core (bench/approx_core.c)"
	echo
	for target in 0.99 0.95; do
		"$data/approx_core" "$data/model.json" "$data/bench_$rows.f32" "$rows" \
			"$data/bench_$arows.f32" "$arows" 28 10 "$target" 0.95 "$rounds"
	done
} > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out" >&2
