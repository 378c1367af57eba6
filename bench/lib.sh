# Helpers shared by bench/run_in_cluster.sh and bench/topk.sh (sourced, not
# run).  They talk to the cluster of the environment (PGHOST, PGPORT, ...)
# and append key=value lines to $BENCH_OUT.

log() { printf '[bench %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
out() { printf '%s=%s\n' "$1" "$2" >>"$BENCH_OUT"; }
sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

SERIAL="SET max_parallel_workers_per_gather = 0; SET synchronize_seqscans = off"
DEFAULT="RESET max_parallel_workers_per_gather"

# The CPU time (user + system, in clock ticks) this backend has used so far,
# printed as "cpu TICKS": read before and after a timed query, it tells how
# much of the wall time the backend actually ran.  On a busy machine a serial
# query's CPU time falls short of its wall time; then the timing is disturbed.
# (pg_read_file of /proc/self/stat: needs a superuser, which the benchmark is.)
CPU_SQL="SELECT 'cpu ' || (split_part(split_part(s, ') ', 2), ' ', 12)::bigint +
	split_part(split_part(s, ') ', 2), ' ', 13)::bigint) FROM pg_read_file('/proc/self/stat') s"
CLK_TCK=$(getconf CLK_TCK)

# record_cpu LABEL [RUNS]: from psql output on stdin with two "cpu N" lines,
# record LABEL_cpu_seconds, the backend's CPU time between them (per run,
# when RUNS runs of the query lie between them)
record_cpu() {
	local ticks
	ticks=$(sed -n 's/^cpu \([0-9]*\)$/\1/p' | awk 'NR == 1 { a = $1 } NR == 2 { print $1 - a }')
	[ -n "$ticks" ] && out "${1}_cpu_seconds" "$(awk -v t="$ticks" -v hz="$CLK_TCK" -v n="${2:-1}" 'BEGIN { printf "%.2f", t / hz / n }')"
	return 0
}

# ms_to_s MS: milliseconds (psql's \timing) to seconds
ms_to_s() { awk -v ms="$1" 'BEGIN { printf "%.6f", ms / 1000 }'; }

# psql_times: the milliseconds of every "Time: ..." line on stdin, one a line
psql_times() { sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'; }

# median: the median of the numbers on stdin (mean of the middle two when
# their count is even)
median() {
	sort -g | awk '{ v[NR] = $1 }
		END { if (NR == 0) exit 1
		      if (NR % 2) printf "%.3f", v[(NR + 1) / 2]
		      else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# column_median FILE COLUMN CONDITION [FORMAT]: the median of COLUMN over
# the lines of FILE that the awk CONDITION selects (awk variables a and b:
# A and B of the environment), printed with FORMAT (default %.2f)
column_median() {
	awk -v a="${A:-}" -v b="${B:-}" "$3 { print \$$2 }" "$1" | sort -g |
		awk -v f="${4:-%.2f}" '{ v[NR] = $1 }
			END { printf f, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# preloaded_cluster SCRIPT: SCRIPT --in-cluster in a throwaway cluster with
# hbird preloaded, 1GB of shared buffers, no JIT, up to 8 parallel workers
preloaded_cluster() {
	pg_virtualenv -t -v 15 -o shared_buffers=1GB -o jit=off -o max_parallel_workers=8 \
		-o shared_preload_libraries=hbird bash "$1" --in-cluster
}

# timed LABEL SETUP_SQL QUERY [WARMUP_QUERY]
#   One session: run SETUP_SQL, run WARMUP_QUERY (default: QUERY itself) once
#   to warm up (loads the model, fills caches), then run QUERY under \timing,
#   BENCH_REPEAT times (default 1).  Records LABEL_seconds (the median run),
#   LABEL_result (the last line QUERY printed) and LABEL_cpu_seconds (the CPU
#   time of this backend per run of QUERY; parallel workers' time is not in
#   it).
#   A lighter WARMUP_QUERY is used where running QUERY twice would cost too
#   much; it must load the same model and plan (same strategy, same batch
#   size) so that the timed run finds every cache filled.
timed() {
	local label=$1 setup=$2 query=$3 warmup=${4:-$3} output result ms
	local -a runs=()
	for ((r = 0; r < ${BENCH_REPEAT:-1}; r++)); do runs+=(-c "$query"); done
	output=$(psql -X -At -v ON_ERROR_STOP=1 \
		-c "$setup" -c "$warmup" -c "$CPU_SQL" -c '\timing on' "${runs[@]}" \
		-c '\timing off' -c "$CPU_SQL") || {
		log "FAILED: $label: $query"
		return 1
	}
	# the warm-up's output comes before "Timing is on."
	result=$(printf '%s\n' "$output" | sed -e '1,/^Timing is on\.$/d' -e '/^Timing is off\.$/,$d' |
		grep -v '^Time: ' | tail -n 1) || true
	ms=$(printf '%s\n' "$output" | psql_times | median)
	if [ -z "$ms" ]; then
		log "FAILED: $label: no timing in psql output:"
		printf '%s\n' "$output" >&2
		return 1
	fi
	out "${label}_seconds" "$(ms_to_s "$ms")"
	out "${label}_result" "$result"
	printf '%s\n' "$output" | record_cpu "$label" "${BENCH_REPEAT:-1}"
	log "$label: $result in $ms ms"
}

# timed_to FILE LABEL SETUP_SQL WARMUP_QUERY QUERY [AFTER_SQL]
#   Like timed, but QUERY's whole output goes to FILE (psql \o; one row a
#   line, fields separated by |), and AFTER_SQL, if given, runs in the same
#   session right after QUERY; its output is printed on stdout (the setup's
#   and the warm-up's go nowhere).  Records LABEL_seconds and
#   LABEL_cpu_seconds.
timed_to() {
	local file=$1 label=$2 setup=$3 warmup=$4 query=$5 after=${6:-} output ms
	local args=(-c '\o /dev/null' -c "$setup" -c "$warmup" -c '\o' -c "$CPU_SQL"
		-c "\\o $file" -c '\timing on' -c "$query" -c '\timing off' -c '\o' -c "$CPU_SQL")
	[ -n "$after" ] && args+=(-c "$after")
	output=$(psql -X -At -q -v ON_ERROR_STOP=1 "${args[@]}") || {
		log "FAILED: $label: $query"
		return 1
	}
	ms=$(printf '%s\n' "$output" | psql_times | tail -n 1)
	if [ -z "$ms" ]; then
		log "FAILED: $label: no timing in psql output:"
		printf '%s\n' "$output" >&2
		return 1
	fi
	out "${label}_seconds" "$(ms_to_s "$ms")"
	printf '%s\n' "$output" | record_cpu "$label"
	log "$label: $(wc -l <"$file") rows in $ms ms"
	printf '%s\n' "$output" | grep -v -e '^Time: ' -e '^cpu [0-9]*$' || true
}

# "Workers Planned: N" of the plan, 0 when the plan has no Gather
workers_planned() {
	local setup=$1 query=$2 n
	n=$(psql -X -At -v ON_ERROR_STOP=1 -c "$setup" -c "EXPLAIN (COSTS OFF) $query" |
		sed -n 's/.*Workers Planned: \([0-9]*\).*/\1/p' | head -n 1)
	echo "${n:-0}"
}

# anchor_table MODEL CSV [EXTRA]: hbird, MODEL uploaded as 'm', and table t
# (id bigserial, f0..f27 float8 [, EXTRA]) loaded from CSV (bench/gen_bench.py's
# rows, with their header), frozen and analyzed
anchor_table() {
	local cols names
	cols=$(for ((i = 0; i < 28; i++)); do printf 'f%d float8,' "$i"; done)
	names=$(for ((i = 0; i < 28; i++)); do printf 'f%d,' "$i"; done)
	sql -v m="$1" >/dev/null <<-EOF
		CREATE EXTENSION hbird;
		\set model \`cat :m\`
		SELECT hb_model_upload('m', :'model');
		CREATE TABLE t (id bigserial, ${cols%,}${3:+, $3});
		\copy t (${names%,}) FROM '$2' WITH (FORMAT csv, HEADER true)
		VACUUM (FREEZE, ANALYZE) t;
	EOF
}

