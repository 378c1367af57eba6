#!/usr/bin/env bash
# Runs every hbird test and ends with one line "N passed, M failed".
#
#   0. the glue files call one way: no cycles among src/pg_*.c
#      (scripts/glue_deps.py, from the objects the build left)
#   1. C unit tests of the core (no PostgreSQL), incl. the conformance corpus,
#      then a short libFuzzer run of each format reader (test/fuzz)
#   2. pg_regress suites (test/sql) and shell checks (test/sql_shell) in a
#      throwaway cluster (pg_virtualenv), then the TAP tests (test/t), which
#      start clusters of their own
#   3. the pg_regress suites again against an ASan + UBSan build
#
# Each test prints TAP-style "ok ..." / "not ok ..." lines; this script counts
# them all.  Exit status is non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
log_dir=${HB_TEST_LOG_DIR:-$root/test/log}
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
	for t in test/core/bin/test_*; do
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

# 1a. the GPU hosts' standalone check (test/gpu/run.sh) still builds and
# passes here, without a device (its checks run in test_device too)
if bash test/gpu/run.sh --cpu-only >"$log_dir/gpu-cpu-only.log" 2>&1 &&
	! grep -q '^not ok' "$log_dir/gpu-cpu-only.log"; then
	echo "ok - test/gpu/run.sh --cpu-only"
else
	echo "not ok - test/gpu/run.sh --cpu-only, see $log_dir/gpu-cpu-only.log"
fi | tee -a "$log_dir/tap.log"

# 1b. fuzzing: a short run of every libFuzzer target (test/fuzz/run.sh;
# HB_FUZZ_SECONDS per target, 0 skips; longer runs: bash test/fuzz/run.sh 300)
fuzz_seconds=${HB_FUZZ_SECONDS:-10}
if [ "$fuzz_seconds" -gt 0 ] 2>/dev/null; then
	HB_FUZZ_ARTIFACTS="$log_dir/fuzz" bash test/fuzz/run.sh "$fuzz_seconds" 2>&1 |
		tee -a "$log_dir/tap.log" | grep -E '^(not ok|ok|#)' || true
else
	echo "ok - fuzz # SKIP HB_FUZZ_SECONDS=$fuzz_seconds" | tee -a "$log_dir/tap.log"
fi

# 2. SQL tests in a throwaway cluster that preloads hbird, as production
# does for hb_stat_models (test/t/006_stat_models_nopreload.pl covers
# the cluster without it)
HB_EXPECT_PRELOAD=1 pg_virtualenv -o shared_preload_libraries=hbird -t -v 15 bash test/run_sql_tests.sh 2>&1 | tee -a "$log_dir/tap.log" | grep -E '^(not ok|ok|#)' || true
if ! grep -q '^# sql tests finished' "$log_dir/tap.log"; then
	echo "not ok - sql tests did not run to the end (see $log_dir)" | tee -a "$log_dir/tap.log"
fi

# 2a. TAP tests (test/t/*.pl, `make prove_installcheck`): each starts its
# own throwaway clusters with PostgreSQL::Test::Cluster and removes them.
# initdb refuses to run as root, so as root they run as postgres, in a
# directory of its own; their logs are kept in $log_dir/tap/.
tap_dir=$(mktemp -d /tmp/hbird-tap.XXXXXX)
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
	chown postgres "$tap_dir"
	as_owner=(runuser -u postgres --)
fi
"${as_owner[@]}" make -s prove_installcheck TAP_TESTDIR="$tap_dir" PROVE_FLAGS=--verbose \
	>"$log_dir/prove.log" 2>&1
prove_rc=$?
grep -E '^(not )?ok ' "$log_dir/prove.log" | tee -a "$log_dir/tap.log" | grep -E '^(not ok|ok)' || true
if [ $prove_rc -ne 0 ] && ! grep -q '^not ok' "$log_dir/prove.log"; then
	echo "not ok - prove test/t exited with status $prove_rc, see $log_dir/prove.log" | tee -a "$log_dir/tap.log"
fi
rm -rf "$log_dir/tap"
cp -r "$tap_dir/tmp_check/log" "$log_dir/tap" 2>/dev/null
rm -rf "$tap_dir"

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
# (Test::More writes "# skip", the shell checks "# SKIP")
skipped=$(grep -ciE '^ok .*# SKIP' "$log_dir/tap.log" | tr -d ' ')
failed=$(grep -cE '^not ok' "$log_dir/tap.log" | tr -d ' ')
passed=$((passed - skipped))
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
