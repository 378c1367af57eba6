#!/usr/bin/env bash
# Runs every hbird test and ends with one line "N passed, M failed".
#
#   0. the glue files call one way: no cycles among src/pg_*.c
#      (scripts/glue_deps.py, from the objects the build left)
#   1. C unit tests of the core (no PostgreSQL), incl. the conformance corpus,
#      then a short libFuzzer run of each format reader (tests/fuzz)
#   2. pg_regress suites and shell checks in a throwaway cluster (pg_virtualenv)
#   3. the pg_regress suites again against an ASan + UBSan build
#
# Each test prints TAP-style "ok ..." / "not ok ..." lines; this script counts
# them all.  Exit status is non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
log_dir=${HB_TEST_LOG_DIR:-$root/tests/log}
mkdir -p "$log_dir"

bash scripts/install-deps.sh

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! { make -s >"$log_dir/build.log" 2>&1 && $sudo make -s install >>"$log_dir/build.log" 2>&1; }; then
	cat "$log_dir/build.log"
	echo "not ok - build"
	echo "0 passed, 1 failed"
	exit 1
fi

: >"$log_dir/tap.log"

# 0. the glue calls one way (docs/design.md, "Layers"): no cycles among
# src/pg_*.c, read from the objects just built (scripts/glue_deps.py)
python3 scripts/glue_deps.py --tap 2>&1 | tee -a "$log_dir/tap.log"

# 1. core unit tests
if make -s core-tests >"$log_dir/core-build.log" 2>&1; then
	for t in tests/core/bin/test_*; do
		echo "# $t"
		"$t" 2>&1
		rc=$?
		[ $rc -eq 0 ] || echo "not ok - $t exited with status $rc"
	done | tee -a "$log_dir/tap.log" | grep -E '^(not ok|#)' || true
else
	cat "$log_dir/core-build.log"
	echo "not ok - core unit tests build" | tee -a "$log_dir/tap.log"
fi

# 1a. the same core unit tests built with ASan + UBSan (scripts/sanitize.sh)
HB_SANITIZE_DIR="$log_dir/sanitize" bash scripts/sanitize.sh core 2>&1 |
	tee -a "$log_dir/tap.log" | grep -E '^(not ok|#)' || true

# 1a. the GPU hosts' standalone check (tests/gpu/run.sh) still builds and
# passes here, without a device (its checks run in test_device too)
if bash tests/gpu/run.sh --cpu-only >"$log_dir/gpu-cpu-only.log" 2>&1 &&
	! grep -q '^not ok' "$log_dir/gpu-cpu-only.log"; then
	echo "ok - tests/gpu/run.sh --cpu-only"
else
	echo "not ok - tests/gpu/run.sh --cpu-only, see $log_dir/gpu-cpu-only.log"
fi | tee -a "$log_dir/tap.log"

# 1b. fuzzing: a short run of every libFuzzer target (tests/fuzz/run.sh;
# HB_FUZZ_SECONDS per target, 0 skips; longer runs: bash tests/fuzz/run.sh 300)
fuzz_seconds=${HB_FUZZ_SECONDS:-10}
if [ "$fuzz_seconds" -gt 0 ] 2>/dev/null; then
	HB_FUZZ_ARTIFACTS="$log_dir/fuzz" bash tests/fuzz/run.sh "$fuzz_seconds" 2>&1 |
		tee -a "$log_dir/tap.log" | grep -E '^(not ok|ok|#)' || true
else
	echo "ok - fuzz # SKIP HB_FUZZ_SECONDS=$fuzz_seconds" | tee -a "$log_dir/tap.log"
fi

# 2. SQL tests in a throwaway cluster that preloads hbird, as production
# does for hb_stat_models (tests/sql_shell/stat_models_nopreload.sh covers
# the cluster without it)
HB_EXPECT_PRELOAD=1 pg_virtualenv -o shared_preload_libraries=hbird -t -v 15 bash tests/run_sql_tests.sh 2>&1 | tee -a "$log_dir/tap.log" | grep -E '^(not ok|ok|#)' || true
if ! grep -q '^# sql tests finished' "$log_dir/tap.log"; then
	echo "not ok - sql tests did not run to the end (see $log_dir)" | tee -a "$log_dir/tap.log"
fi

# 3. the regression suites against an ASan + UBSan build of the extension
# (about 2 minutes; HB_SANITIZE_CHECK=0 skips); the normal build is
# installed again afterwards
if [ "${HB_SANITIZE_CHECK:-1}" != 0 ]; then
	HB_SANITIZE_DIR="$log_dir/sanitize" bash scripts/sanitize.sh check 2>&1 |
		tee -a "$log_dir/tap.log" | grep -E '^(not ok|ok|#)' || true
else
	echo "ok - sanitized regression suites # SKIP HB_SANITIZE_CHECK=0" | tee -a "$log_dir/tap.log"
fi

passed=$(grep -cE '^ok ' "$log_dir/tap.log" | tr -d ' ')
skipped=$(grep -cE '^ok .*# SKIP' "$log_dir/tap.log" | tr -d ' ')
failed=$(grep -cE '^not ok' "$log_dir/tap.log" | tr -d ' ')
passed=$((passed - skipped))
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
