#!/usr/bin/env bash
# Builds hbird's libFuzzer targets and runs each for a bounded time.
#
#   bash test/fuzz/run.sh [seconds-per-target] [target...]
#
# Targets: xgboost_json xgboost_ubj lightgbm model_image pipeline onnx (default: all),
# 20 seconds each by default.  Prints one TAP line per target:
#   ok - fuzz <target>: N runs, no crash (cov: ...)
#   not ok - fuzz <target>: <what>, input saved as <file>
# and exits 1 when a target failed.  Without clang's libFuzzer it prints one
# "ok ... # SKIP" line and exits 0.
#
# Seeds: test/fuzz/corpus/<target> (committed; model_image seeds are made
# here from the model seeds, since images depend on the build), plus the
# small models of ../shared/conformance when it is there.  New inputs go to
# a scratch directory, or to $HB_FUZZ_CORPUS/<target> to keep them between
# runs.  Crash inputs and logs: $HB_FUZZ_ARTIFACTS (default
# test/fuzz/artifacts).  $HB_FUZZ_CORE builds another copy of src/core (in
# $HB_FUZZ_BUILD), to fuzz past a known bug.  Reproduce a crash with
#   test/fuzz/build/fuzz_<target> <file>
set -uo pipefail
cd "$(dirname "$0")/../.."

secs=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(xgboost_json xgboost_ubj lightgbm model_image pipeline onnx)
build=${HB_FUZZ_BUILD:-test/fuzz/build}
core=${HB_FUZZ_CORE:-src/core}
artifacts=${HB_FUZZ_ARTIFACTS:-test/fuzz/artifacts}
cc=${FUZZ_CC:-clang}

# libFuzzer is there when clang can link a trivial target with it
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void) d; (void) n; return 0; }\n' >"$probe/p.c"
if ! command -v "$cc" >/dev/null 2>&1 ||
	! "$cc" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" >/dev/null 2>&1; then
	echo "ok - fuzz # SKIP no libFuzzer ($cc -fsanitize=fuzzer; Debian: clang libclang-rt-14-dev)"
	exit 0
fi

mkdir -p "$build" "$artifacts"
if ! make -s -f test/fuzz/Makefile -j"$(nproc)" FUZZ_CC="$cc" BUILD="$build" CORE="$core" >"$build/build.log" 2>&1; then
	sed 's/^/# /' "$build/build.log" | tail -40
	echo "not ok - fuzz build (see $build/build.log)"
	exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$probe" "$work"' EXIT

# model_image seeds: images of every model seed and fixture
mkdir -p "$work/seed_model_image"
"$build/mkimage" "$work/seed_model_image" test/fuzz/corpus/xgboost_json/* \
	test/fuzz/corpus/lightgbm/* test/fuzz/corpus/pipeline/* test/fixtures/*.json >/dev/null 2>&1

# extra seeds from the conformance corpus, when present: small models only
conf=${HB_CONFORMANCE:-../shared/conformance}
extra_seeds() {
	local t=$1 dir="$work/extra_$1"
	[ -d "$conf" ] || return 0
	mkdir -p "$dir"
	case $t in
		xgboost_json) find "$conf" -name '*.json' -size -48k -path '*xgboost*' ;;
		lightgbm) find "$conf" -name '*model*.txt' -size -48k -path '*lightgbm*' ;;
		onnx) find "$conf" -name '*.onnx' -size -48k ;;
	esac 2>/dev/null | head -200 | while read -r f; do
		cp "$f" "$dir/$(echo "$f" | tr '/' '_')"
	done
	echo "$dir"
}

failed=0
for t in "${targets[@]}"; do
	bin="$build/fuzz_$t"
	if [ ! -x "$bin" ]; then
		echo "not ok - fuzz $t: no such target"
		failed=1
		continue
	fi
	if [ -n "${HB_FUZZ_CORPUS:-}" ]; then
		corpus="$HB_FUZZ_CORPUS/$t"
	else
		corpus="$work/corpus_$t"
	fi
	mkdir -p "$corpus"
	seeds=("test/fuzz/corpus/$t")
	[ "$t" = model_image ] && seeds=("$work/seed_model_image")
	extra=$(extra_seeds "$t")
	[ -n "$extra" ] && seeds+=("$extra")
	dict=()
	[ -f "test/fuzz/$t.dict" ] && dict=(-dict="test/fuzz/$t.dict")
	log="$artifacts/$t.log"

	OPENBLAS_NUM_THREADS=1 \
		ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}" \
		UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
		"$bin" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 \
		-max_len=65536 -print_final_stats=1 "${dict[@]}" \
		-artifact_prefix="$artifacts/$t-" "$corpus" "${seeds[@]}" >"$log" 2>&1
	rc=$?

	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
	if [ $rc -eq 0 ]; then
		echo "ok - fuzz $t: ${runs:-?} runs, no crash (${cov:-no coverage line}, ${secs}s)"
	else
		input=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
		what=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+|runtime error: .*|hbird fuzz: .*' "$log" |
			head -1)
		grep -E '^(==[0-9]+==ERROR|SUMMARY|    #[0-9]+ )|runtime error|hbird fuzz' "$log" | head -25 | sed 's/^/# /'
		echo "not ok - fuzz $t: ${what:-exit status $rc} after ${runs:-?} runs, input saved as ${input:-?} (log $log)"
		failed=1
	fi
done
exit $failed
