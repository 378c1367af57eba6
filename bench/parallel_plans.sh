#!/bin/bash
# Parallel workers scoring with their leader's compiled model
# (hbird.share_plans = on, src/pg_scan_share.c) against compiling it again
# in every worker (off, what hbird did before), in one cluster: the anchor
# model (500 trees of depth 8) over ROWS rows, SELECT sum(hb_predict(...))
# with 1 and 2 workers beside the leader, with 2 workers alone (the
# leader scoring no row: parallel_leader_participation = off, where the
# workers' own start counts in full) and serially, the settings alternated
# ROUNDS times.  The sessions keep out of the shared cache of compiled
# models (hbird.shared_cache = off; bench/shared_cache.sh measures it),
# where workers would find the model whatever hbird.share_plans says.
# Each session warms up with one run and times three; each worker's first
# row (EXPLAIN ANALYZE VERBOSE) shows what it did before it scored.
#
#   bash bench/parallel_plans.sh [ROWS] [ROUNDS]   (defaults 200000, 7)
#
# Installs nothing (make install first; hold /tmp/hbird-install.lock around
# both on a shared machine).  Data: bench/gen_bench.py's, cached in
# bench/data/.  Results: bench/results/parallel_plans_latest.txt.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3

if [ "${1:-}" = --in-cluster ]; then
	. "$BENCH/lib.sh"
	anchor_table "$PP_MODEL" "$PP_CSV"
	query="SELECT sum(hb_predict('m', t)) FROM t"
	costs="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0"
	# WORKERS is 1, 2 or 2only (no leader participation)
	setting() {
		case $1 in
		2only) echo "SET max_parallel_workers_per_gather = 2; SET parallel_leader_participation = off" ;;
		*) echo "SET max_parallel_workers_per_gather = $1" ;;
		esac
	}
	# the machine's CPU time so far (user + system, in clock ticks): the
	# leader's and its workers' together, with nothing else running
	ticks() { awk '/^cpu / { print $2 + $3 + $4 }' /proc/stat; }
	# run WORKERS SHARE: one session, a warm-up, then three timed runs; the
	# median ms, then the CPU ms a query of the session
	run() {
		local t0 t1 ms
		t0=$(ticks)
		ms=$(psql -X -At -v ON_ERROR_STOP=1 -c "$costs" -c "$(setting $1)" \
			-c "SET hbird.share_plans = $2" -c "SET hbird.shared_cache = off" -c "LOAD 'hbird'" -c "$query" -c '\timing on' \
			-c "$query" -c "$query" -c "$query" | psql_times | median)
		t1=$(ticks)
		echo "$ms $(awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.0f", d * 1000 / hz / 4 }')"
	}
	# first WORKERS SHARE: the workers' first rows out of the scoring node (ms)
	first() {
		psql -X -At -v ON_ERROR_STOP=1 -c "$costs" -c "$(setting $1)" \
			-c "SET hbird.share_plans = $2" -c "SET hbird.shared_cache = off" -c "LOAD 'hbird'" -c "$query" \
			-c "EXPLAIN (ANALYZE, VERBOSE, COSTS OFF) $query" |
			awk '/HbirdScore/ { s = 1; next } s && /Worker [0-9]+: +actual time=/ {
				sub(/.*actual time=/, ""); sub(/\.\..*/, ""); printf "%s ", $0 } /Seq Scan/ { s = 0 }'
	}
	for ((r = 1; r <= PP_ROUNDS; r++)); do
		echo "$r serial - $(run 0 on)" >>"$PP_DIR/times"
		for w in 1 2 2only; do
			for share in on off; do
				echo "$r $w $share $(run $w $share)" >>"$PP_DIR/times"
				echo "$r $w $share-first $(first $w $share)" >>"$PP_DIR/first"
			done
		done
		log "round $r: $(grep "^$r " "$PP_DIR/times" | cut -d' ' -f2- | tr '\n' ' ')"
	done
	# the same sums either way
	for share in on off; do
		psql -X -At -q -c "$costs" -c "SET max_parallel_workers_per_gather = 2" -c "SET hbird.share_plans = $share" \
			-c "LOAD 'hbird'" -c "SELECT round(sum(hb_predict('m', t))::numeric, 6) FROM t" | tail -1 >>"$PP_DIR/sums"
	done
	psql -X -At -q -c "SET max_parallel_workers_per_gather = 0" -c "LOAD 'hbird'" \
		-c "SELECT round(sum(hb_predict('m', t))::numeric, 6) FROM t" | tail -1 >>"$PP_DIR/sums"
	exit 0
fi

ROWS=${1:-200000}
ROUNDS=${2:-7}
DATA=$BENCH/data
mkdir -p "$DATA" "$BENCH/results"
"$PY" "$BENCH/gen_bench.py" "$ROWS" "$DATA" >&2
DIR=$(mktemp -d)
chmod 755 "$DIR"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
export PP_MODEL=$DATA/model.json PP_CSV=$DATA/bench_$ROWS.csv PP_DIR=$DIR PP_ROUNDS=$ROUNDS
. "$BENCH/lib.sh"
preloaded_cluster "$BENCH/parallel_plans.sh"
med() { A=$1 B=$2 column_median "$DIR/times" "${3:-4}" '$2 == a && $3 == b' %.1f; }
firsts() { awk -v w="$1" -v s="$2-first" '$2 == w && $3 == s { $1 = $2 = $3 = ""; printf "%s", $0 }' "$DIR/first" |
	tr -s ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else printf "-" }'; }
{
	echo "hbird parallel plans benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $ROWS rows, $ROUNDS rounds, commit $(git -C "$BENCH/.." rev-parse --short HEAD), $(nproc) CPUs"
	echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "SELECT sum(hb_predict('m', t)) FROM t, anchor model; medians over the rounds of each session's median of 3 runs (ms)"
	echo "cpu = the machine's CPU time (user + system) over the session, per query (its 4 queries: the first compiles in the leader either way), median over the rounds"
	echo "first row = the median of the workers' first rows out of the scoring node (EXPLAIN ANALYZE VERBOSE, ms)"
	s=$(med serial -)
	printf '  %-52s %8s   cpu %4s ms\n' "serial (no workers)" "$s" "$(med serial - 5)"
	for w in 1 2 2only; do
		on=$(med $w on)
		off=$(med $w off)
		name="$w worker(s) and the leader"
		[ $w = 2only ] && name="2 workers alone"
		printf '  %-52s %8s   cpu %4s ms   first row %6s ms\n' "$name, compiled in each (off)" "$off" \
			"$(med $w off 5)" "$(firsts $w off)"
		printf '  %-52s %8s   cpu %4s ms   first row %6s ms   %5.2fx off, %5.2fx serial\n' \
			"$name, the leader's plan (on)" "$on" "$(med $w on 5)" \
			"$(firsts $w on)" "$(awk -v a="$off" -v b="$on" 'BEGIN { print a / b }')" \
			"$(awk -v a="$s" -v b="$on" 'BEGIN { print a / b }')"
	done
	echo "sums (2 workers on, 2 workers off, serial): $(tr '\n' ' ' <"$DIR/sums")"
	echo "every session (round, workers, share, median ms, cpu ms a query):"
	sed 's/^/  /' "$DIR/times"
	echo "workers' first rows (round, workers, share, ms each):"
	sed 's/^/  /' "$DIR/first"
} | tee "$BENCH/results/parallel_plans_latest.txt"
rm -rf "$DIR"
