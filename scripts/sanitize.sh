#!/usr/bin/env bash
# Sanitized and checked runs of hbird's tests; each prints TAP lines and
# exits non-zero on any failure or report.
#
#   scripts/sanitize.sh core      core unit tests built with ASan + UBSan
#   scripts/sanitize.sh valgrind  core unit tests under valgrind memcheck
#   scripts/sanitize.sh check     the extension built with ASan + UBSan,
#                                 installed, and the pg_regress suites run in a
#                                 throwaway cluster whose server preloads
#                                 libasan; the normal build is installed again
#                                 afterwards
#
# Make targets: sanitize-core, valgrind-core, sanitize-check.  Builds go to
# test/log/sanitize/ (the worktree's normal objects are left alone).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=${HB_SANITIZE_DIR:-$root/test/log/sanitize}
mkdir -p "$out"
CC=${CC:-gcc}
SAN_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
export HB_CONFORMANCE=${HB_CONFORMANCE:-$root/../shared/conformance}

failed=0
tap() { echo "$1"; case $1 in "not ok"*) failed=1 ;; esac; }

# Build each core test into $1 with compiler flags $2 (the core's objects
# once, then one link per test; $3: only test/core/$3.c); echo the
# binaries into $1/list.
build_core() {
	local dir=$1 flags=$2 only=${3:-test_*} t b c objs=()
	mkdir -p "$dir/obj"
	# ONNX's protobuf messages are generated C (protoc-c, see Makefile)
	make -s src/core/onnx/onnx_ml.pb-c.c >>"$dir/build.log" 2>&1
	for c in src/core/*.c src/core/onnx/*.c; do
		b=$dir/obj/$(basename "$c" .c).o
		if ! $CC -std=gnu11 -g -Wall -Isrc/core $flags -c -o "$b" "$c" >>"$dir/build.log" 2>&1; then
			tap "not ok - build $c ($flags), see $dir/build.log"
			return
		fi
		objs+=("$b")
	done
	for t in test/core/$only.c; do
		b=$dir/$(basename "$t" .c)
		if ! $CC -std=gnu11 -g -Wall -Isrc/core $flags -o "$b" "$t" "${objs[@]}" \
			-lopenblas -lprotobuf-c -lm >>"$dir/build.log" 2>&1; then
			tap "not ok - build $(basename "$b") ($flags), see $dir/build.log"
			continue
		fi
		echo "$b" >>"$dir/list"
	done
}

# A run passes when it exits 0, printed no "not ok" and no sanitizer report.
judge() {
	local name=$1 rc=$2 log=$3
	if [ "$rc" -ne 0 ] || grep -q '^not ok' "$log" ||
		grep -qE 'ERROR: AddressSanitizer|runtime error:|ERROR SUMMARY: [1-9]|LeakSanitizer' "$log"; then
		tap "not ok - $name (exit $rc), see $log"
		grep -E 'ERROR: AddressSanitizer|runtime error:|ERROR SUMMARY|^not ok|definitely lost' "$log" | head -5 | sed 's/^/#   /'
	else
		tap "ok - $name"
	fi
}

run_core() {
	local dir=$out/core b rc
	rm -rf "$dir"
	build_core "$dir" "-O1 $SAN_FLAGS"
	[ -f "$dir/list" ] || return
	while read -r b; do
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			"$b" >"$b.log" 2>&1
		rc=$?
		judge "asan+ubsan $(basename "$b")" $rc "$b.log"
	done <"$dir/list"

	# the plain C kernels, as machines without SSE2 or x86-64 build them
	# (strategy_ptt.c's compact kernel: -DHB_NO_SIMD)
	dir=$out/core_nosimd
	rm -rf "$dir"
	build_core "$dir" "-O1 $SAN_FLAGS -DHB_NO_SIMD" test_strategies
	[ -f "$dir/list" ] || return
	while read -r b; do
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
			"$b" >"$b.log" 2>&1
		rc=$?
		judge "asan+ubsan -DHB_NO_SIMD $(basename "$b")" $rc "$b.log"
	done <"$dir/list"
}

run_valgrind() {
	local dir=$out/valgrind b rc
	if ! command -v valgrind >/dev/null; then
		tap "not ok - valgrind is not installed (scripts/install-deps.sh)"
		return
	fi
	rm -rf "$dir"
	build_core "$dir" "-O1"
	[ -f "$dir/list" ] || return
	while read -r b; do
		# OpenBLAS threads only add noise here; errors in hbird's code are
		# what is looked for
		OPENBLAS_NUM_THREADS=1 valgrind --tool=memcheck --error-exitcode=99 \
			--leak-check=full --errors-for-leak-kinds=definite \
			--show-leak-kinds=definite --track-origins=yes \
			"$b" >"$b.log" 2>&1
		rc=$?
		judge "valgrind $(basename "$b")" $rc "$b.log"
	done <"$dir/list"
}

run_check() {
	local dir=$out/check libasan
	libasan=$(readlink -f "$($CC -print-file-name=libasan.so)")
	if [ ! -f "$libasan" ]; then
		tap "not ok - no libasan for $CC"
		return
	fi
	rm -rf "$dir"
	mkdir -p "$dir/src" "$dir/reports"
	# Preloaded, libasan initialises on the first malloc, and the first one
	# comes from a library constructor (libgpg-error's, through libsystemd)
	# inside bindtextdomain(), which holds glibc's gettext lock; the
	# runtime's look-up of the optional swift_demangle symbol then fails,
	# dlerror() translates the message and takes that lock again: the
	# server hangs before main().  A stub swift_demangle avoids the failing
	# look-up; it is never called.
	echo 'char *swift_demangle(const char *m, unsigned long l, char *o, unsigned long *ol, unsigned f) { (void) m; (void) l; (void) o; (void) ol; (void) f; return 0; }' >"$dir/swift_stub.c"
	$CC -shared -fPIC -o "$dir/swift_stub.so" "$dir/swift_stub.c" || {
		tap "not ok - build $dir/swift_stub.so"
		return
	}
	# a copy of the tree, so the sanitized objects never mix with the normal ones
	tar -cf - --exclude=./.git --exclude=./test/log --exclude=./test/results \
		--exclude=./test/tmp_check --exclude='*.o' --exclude='*.so' --exclude='*.bc' --exclude=./test/core/bin --exclude=./test/core/obj . |
		tar -xf - -C "$dir/src"
	# CPU only: the sanitizers watch the host code; the CUDA part has its own checks
	if ! make -C "$dir/src" -s -j2 USE_CUDA=0 COPT="-O1 $SAN_FLAGS" \
		SHLIB_LINK="-lopenblas -lprotobuf-c -lm -lpq $SAN_FLAGS" >"$dir/build.log" 2>&1; then
		tap "not ok - sanitized build, see $dir/build.log"
		return
	fi
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo make -C "$dir/src" -s USE_CUDA=0 COPT="-O1 $SAN_FLAGS" SHLIB_LINK="-lopenblas -lprotobuf-c -lm -lpq $SAN_FLAGS" install >>"$dir/build.log" 2>&1
	HB_LIBASAN="$libasan $dir/swift_stub.so" HB_REPORTS=$dir/reports \
		pg_virtualenv -t -v 15 bash "$root/scripts/sanitize.sh" check-inner "$dir/src" \
		>"$dir/run.log" 2>&1 9>&-
	# the normal build back in place
	make -s -j2 >>"$dir/build.log" 2>&1 && $sudo make -s install >>"$dir/build.log" 2>&1 ||
		tap "not ok - reinstalling the normal build, see $dir/build.log"
	exec 9>&-
	grep -E '^(ok|not ok|#)' "$dir/run.log"
	grep -q '^not ok' "$dir/run.log" && failed=1
	if [ ! -s "$dir/reports/server.log" ]; then
		tap "not ok - no server log in $dir/reports"
	elif grep -qE 'ERROR: AddressSanitizer|runtime error:|terminated by signal' "$dir/reports/server.log"; then
		tap "not ok - sanitizer reports in $dir/reports/server.log"
		grep -E -A12 'ERROR: AddressSanitizer|runtime error:' "$dir/reports/server.log" | head -30 | sed 's/^/#   /'
	else
		tap "ok - no sanitizer report from the server"
	fi
}

# Inside pg_virtualenv: restart the cluster with libasan preloaded, check
# that it took, run the suites.
check_inner() {
	local src=$1 envf pid
	envf=$PG_CLUSTER_CONF_ROOT/15/regress/environment
	chmod u+w "$envf" 2>/dev/null
	cat >>"$envf" <<-EOF
		LD_PRELOAD = '$HB_LIBASAN'
		ASAN_OPTIONS = 'detect_leaks=0:abort_on_error=1:halt_on_error=1:verify_asan_link_order=0'
		UBSAN_OPTIONS = 'print_stacktrace=1:halt_on_error=1:abort_on_error=1'
	EOF
	pg_ctlcluster 15 regress restart || { echo "not ok - restart with libasan"; return; }
	if [ "$(psql -XAtc "SELECT count(*) FROM regexp_split_to_table(pg_read_file('/proc/self/maps'), E'\\n') l WHERE l LIKE '%libasan%'")" -gt 0 ]; then
		echo "ok - backends run with libasan preloaded"
	else
		echo "not ok - libasan is not mapped in a backend"
	fi
	cd "$src" || return
	make -s installcheck >"$src/installcheck.log" 2>&1
	awk '/\.\.\. ok/ { n = $0; sub(/^(test|     )? */, "", n); sub(/ .*/, "", n); print "ok - sanitized pg_regress " n }
		/\.\.\. FAILED|\.\.\. failed/ { n = $0; sub(/^(test|     )? */, "", n); sub(/ .*/, "", n); print "not ok - sanitized pg_regress " n }' \
		"$src/installcheck.log"
	[ -f test/regression.diffs ] && head -12 test/regression.diffs | sed 's/^/#   /'
	# the server's stderr, where the sanitizers write their reports
	cp "$PG_CLUSTER_CONF_ROOT"/../log/postgresql-15-regress.log "$HB_REPORTS/server.log" 2>/dev/null
}

case ${1:-} in
core) run_core ;;
valgrind) run_valgrind ;;
check) run_check ;;
check-inner) check_inner "$2"; exit 0 ;;
*) echo "usage: $0 core|valgrind|check" >&2; exit 2 ;;
esac
exit $failed
