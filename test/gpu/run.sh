#!/usr/bin/env bash
# GPU check and benchmark of the PG-free core: builds the core and the CUDA
# kernels with gcc and nvcc only (no PostgreSQL, no package downloads), then
# runs test/gpu/gpu_check.c: GPU margins against CPU margins on random
# models and the conformance corpus, and throughput for batches of 1 to
# 1,000,000 rows.  Without a GPU (or with --cpu-only) the GPU checks are
# reported as skipped and the exit status is 0.
#
#   bash test/gpu/run.sh [--cpu-only] [--no-bench] [--conformance DIR]
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc;
# none: without CUDA),
# CC (gcc), CUDA_ARCH (nvcc -gencode flags; default sm_90 code + PTX),
# HB_CONFORMANCE (corpus; default ../shared/conformance, then shared/conformance),
# HB_BLAS=none (build without OpenBLAS even where it is installed).
set -uo pipefail
cd "$(dirname "$0")/../.."

CC=${CC:-gcc}
NVCC=${NVCC:-$(command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })}
[ "$NVCC" = none ] && NVCC=""	# NVCC=none: build without CUDA
CUDA_ARCH=${CUDA_ARCH:-"-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"}
out=test/gpu/bin
mkdir -p "$out"

args=("$@")
have_conf=0
for a in "$@"; do [ "$a" = "--conformance" ] && have_conf=1; done
if [ $have_conf -eq 0 ] && [ -z "${HB_CONFORMANCE:-}" ]; then
	for d in ../shared/conformance shared/conformance; do
		if [ -f "$d/manifest.json" ]; then
			args+=(--conformance "$d")
			break
		fi
	done
fi

cflags=(-std=gnu11 -O2 -g -Wall -fno-strict-aliasing -fwrapv -Isrc/core -Itest/core)
libs=(-lm)

# BLAS: OpenBLAS when it is installed, else plain loops (test/gpu/compat;
# HB_BLAS=none forces them)
if [ "${HB_BLAS:-}" != none ] && printf '#include <cblas.h>\nint main(void){return 0;}\n' |
	$CC -x c - -lopenblas -o "$out/.blas_probe" >/dev/null 2>&1; then
	libs=(-lopenblas "${libs[@]}")
	echo "# BLAS: OpenBLAS"
else
	cflags+=(-Itest/gpu/compat)
	extra_src=(test/gpu/compat/cblas_min.c)
	echo "# BLAS: none installed, using test/gpu/compat/cblas_min.c"
fi
rm -f "$out/.blas_probe"

cuda_obj=()
if [ -n "$NVCC" ]; then
	cuda_home=${CUDA_HOME:-$(dirname "$(dirname "$NVCC")")}
	echo "# nvcc: $NVCC ($("$NVCC" --version | tail -1))"
	# shellcheck disable=SC2086
	if ! "$NVCC" -O3 -std=c++17 -Xcompiler -fPIC,-Wall $CUDA_ARCH -c -o "$out/hb_cuda.o" src/cuda/hb_cuda.cu; then
		echo "not ok - nvcc build of src/cuda/hb_cuda.cu"
		exit 1
	fi
	cflags+=(-DHB_USE_CUDA)
	cuda_obj=("$out/hb_cuda.o")
	libs+=(-L"$cuda_home/lib64" -lcudart_static -ldl -lpthread -lrt -lstdc++)
else
	echo "# nvcc not found: building without CUDA"
fi

# the core, compiled in parallel
objs=()
pids=()
# ONNX needs protobuf-c, which a GPU host may lack: the checks read no ONNX,
# so the ONNX reader (src/core/onnx/) is left out
extra_src+=(test/gpu/compat/onnx_none.c)
for src in src/core/*.c ${extra_src[@]+"${extra_src[@]}"}; do
	obj="$out/$(basename "${src%.c}").o"
	objs+=("$obj")
	$CC "${cflags[@]}" -c -o "$obj" "$src" &
	pids+=($!)
done
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
if [ $fail -ne 0 ] ||
	! $CC "${cflags[@]}" -o "$out/gpu_check" test/gpu/gpu_check.c "${objs[@]}" \
		${cuda_obj[@]+"${cuda_obj[@]}"} "${libs[@]}"; then
	echo "not ok - build of test/gpu/gpu_check"
	exit 1
fi
echo "ok - build of test/gpu/gpu_check"
command -v nvidia-smi >/dev/null 2>&1 &&
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | sed 's/^/# nvidia-smi: /'
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -m) $(nproc) cpus"
exec "$out/gpu_check" ${args[@]+"${args[@]}"}
