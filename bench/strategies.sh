#!/bin/bash
# Throughput of hbird's tree strategies (TT, PTT, GEMM) vs XGBoost's C API
# predictor, one thread, on a grid of depth x trees x batch.
#
#   bash bench/strategies.sh [CELL_SECONDS]
#
# Trains the models once into bench/data/strategies/ (Debian's python3 with
# python3-xgboost 1.7.4), builds bench/data/strategies/bench from the core's
# sources, and writes bench/results/strategies.md.  About 3 to 5 minutes on
# two cores, most of it in the slow cells; CELL_SECONDS (default 0.2) is the
# minimum time spent per cell.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
data="$here/data/strategies"
out="$here/results/strategies.md"
py=/usr/bin/python3

for f in /usr/include/xgboost/c_api.h /usr/include/x86_64-linux-gnu/cblas.h; do
	[ -e "$f" ] || { echo "missing $f (apt-get install libxgboost-dev libopenblas-dev)" >&2; exit 1; }
done
"$py" -c 'import xgboost' 2>/dev/null ||
	{ echo "$py cannot import xgboost (apt-get install python3-xgboost)" >&2; exit 1; }

mkdir -p "$data" "$here/results"
"$py" "$here/gen_strategy_models.py" "$data"

# -O2 as PGXS builds the extension; no -march, so no instruction the
# packaged extension would not have either
# (the ONNX reader, src/core/onnx, includes generated C: see Makefile)
make -s -C "$root" src/core/onnx/onnx_ml.pb-c.c
gcc -std=gnu11 -O2 -Wall -Wextra -I"$root/src/core" -o "$data/bench" \
	"$here/strategies.c" "$root"/src/core/*.c "$root"/src/core/onnx/*.c \
	-lxgboost -lopenblas -lprotobuf-c -lm

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
"$data/bench" "$data" "${1:-0.2}" > "$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out" >&2
