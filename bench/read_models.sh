#!/bin/bash
# How long the core takes to read a model, per format, on gen_bench.py's
# anchor model (XGBoost, 500 trees of depth 8, 10.7 MB of JSON; its UBJSON
# twin; the same trees written as LightGBM text and as ONNX: read_models.c),
# and side by side the core of another revision.
#
#   bash bench/read_models.sh [BASE_REV] [ROUNDS] [PASSES]
#   READ_MODELS_CALLGRIND=1 bash bench/read_models.sh ...   (adds instruction
#   counts under valgrind: several minutes more)
#
# Builds read_models.c against the working tree's src/core and, when
# BASE_REV is given, against BASE_REV's src/core (git archive into a
# temporary directory), then runs the builds alternately PASSES times
# (default 5; every other pass the other one first), each reading each file
# ROUNDS times (default 10) after a warm-up.  Writes bench/results/read_models.md: per format the median over
# the passes of each pass's median (CPU time of the reading thread: the
# wall clock of a shared machine counts other processes too), the ratio
# current / base, the load average and the command.  BENCH_DATA (default bench/data) holds the model;
# gen_bench.py trains it there when it is missing (about a minute).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
data=${BENCH_DATA:-$here/data}
base=${1:-}
rounds=${2:-10}
passes=${3:-5}
out="$here/results/read_models.md"
py=/usr/bin/python3

mkdir -p "$data" "$here/results"
[ -f "$data/model.json" ] || "$py" "$here/gen_bench.py" 1000 "$data" >&2
[ -f "$data/model.ubj" ] || "$py" -c '
import sys, xgboost
b = xgboost.Booster()
b.load_model(sys.argv[1])
b.save_model(sys.argv[2])' "$data/model.json" "$data/model.ubj"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# $1: a src/core to build against, $2: the binary
build() {
	protoc-c --proto_path="$1/onnx" --c_out="$1/onnx" "$1/onnx/onnx_ml.proto"
	gcc -std=gnu11 -O2 -Wall -I"$1" -I"$here" -o "$2" "$here/read_models.c" \
		"$1"/*.c "$1"/onnx/*.c -lopenblas -lprotobuf-c -lm
}
mkdir -p "$tmp/current"
cp -r "$root/src/core" "$tmp/current/"
rm -f "$tmp/current/core/onnx/onnx_ml.pb-c."[ch]
build "$tmp/current/core" "$tmp/read_current"
builds=(current)
if [ -n "$base" ]; then
	mkdir -p "$tmp/base"
	git -C "$root" archive "$base" src/core | tar -x -C "$tmp/base"
	build "$tmp/base/src/core" "$tmp/read_base"
	builds=(base current)
fi

export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
load0=$(cut -d' ' -f1 /proc/loadavg)
for ((p = 1; p <= passes; p++)); do
	# every other pass the other build first: neither always runs warm
	order=("${builds[@]}")
	[ $((p % 2)) -eq 0 ] && [ ${#builds[@]} -eq 2 ] && order=("${builds[1]}" "${builds[0]}")
	for b in "${order[@]}"; do
		"$tmp/read_$b" "$rounds" "$data/model.json" "$data/model.ubj" |
			sed "s/^/$b\t/" >>"$tmp/times.tsv"
	done
done
load1=$(cut -d' ' -f1 /proc/loadavg)

# READ_MODELS_CALLGRIND=1: also the instructions of one read of each format
# (callgrind, counting inside time_reads only: the warm-up and one read),
# which other processes on the machine do not change
if [ "${READ_MODELS_CALLGRIND:-0}" = 1 ]; then
	for f in xgboost-json xgboost-ubj lightgbm-text onnx; do
		for b in "${builds[@]}"; do
			READ_MODELS_ONLY=$f valgrind --tool=callgrind --toggle-collect=time_reads \
				--callgrind-out-file="$tmp/cg.$b.$f" "$tmp/read_$b" 1 \
				"$data/model.json" "$data/model.ubj" >/dev/null 2>&1
			ir=$(callgrind_annotate "$tmp/cg.$b.$f" 2>/dev/null |
				awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 / 2 }')
			printf '%s\t%s\t%s\n' "$b" "$f" "$ir" >>"$tmp/ir.tsv"
		done
	done
fi

{
	echo "# Reading models (bench/read_models.sh)"
	echo
	echo "\`$([ "${READ_MODELS_CALLGRIND:-0}" = 1 ] && echo "READ_MODELS_CALLGRIND=1 ")bash bench/read_models.sh ${base:-} $rounds $passes\`, $(date -u +%Y-%m-%d),"
	echo "$(nproc) cpus, load average $load0 before and $load1 after;"
	echo "current = the working tree ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet -- src/core || echo ', modified'))${base:+, base = $base ($(git -C "$root" rev-parse --short "$base"))}."
	echo "Milliseconds of CPU time per hb_model_read (parse, build, validate): the"
	echo "median over $passes passes of each pass's median of $rounds reads; fastest read"
	echo "in brackets."
	echo
	awk -F'\t' -v base="$base" '
		{ key = $2; bytes[key] = $3; med[$1, key, ++n[$1, key]] = $4;
		  if (!(($1, key) in best) || $5 < best[$1, key]) best[$1, key] = $5;
		  if (!(key in seen)) { seen[key] = 1; order[++k] = key } }
		function median(b, key,   i, j, c, v, t) {
			c = n[b, key]
			for (i = 1; i <= c; i++) v[i] = med[b, key, i]
			for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			return c % 2 ? v[(c + 1) / 2] : (v[c / 2] + v[c / 2 + 1]) / 2
		}
		END {
			if (base != "") {
				print "| format | bytes | base ms | current ms | current / base |"
				print "|---|---:|---:|---:|---:|"
			} else {
				print "| format | bytes | ms |"
				print "|---|---:|---:|"
			}
			for (i = 1; i <= k; i++) {
				key = order[i]; c = median("current", key)
				if (base != "") {
					b = median("base", key)
					printf "| %s | %d | %.1f (%.1f) | %.1f (%.1f) | %.3f |\n", key, bytes[key],
						b, best["base", key], c, best["current", key], c / b
				} else
					printf "| %s | %d | %.1f (%.1f) |\n", key, bytes[key], c, best["current", key]
			}
		}' "$tmp/times.tsv"
	if [ -f "$tmp/ir.tsv" ]; then
		echo
		echo "Instructions per read (callgrind, READ_MODELS_CALLGRIND=1), millions:"
		echo
		awk -F'\t' -v base="$base" '
			{ ir[$1, $2] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++k] = $2 } }
			END {
				if (base != "") {
					print "| format | base | current | current / base |"
					print "|---|---:|---:|---:|"
				} else {
					print "| format | current |"
					print "|---|---:|"
				}
				for (i = 1; i <= k; i++) {
					f = order[i]
					if (base != "")
						printf "| %s | %.1f | %.1f | %.3f |\n", f, ir["base", f] / 1e6,
							ir["current", f] / 1e6, ir["current", f] / ir["base", f]
					else
						printf "| %s | %.1f |\n", f, ir["current", f] / 1e6
				}
			}' "$tmp/ir.tsv"
	fi
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
