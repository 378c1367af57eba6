#!/bin/bash
# The shared cache of compiled models (hbird.shared_cache, src/pg_shared_cache.c)
# against compiling in every backend (hbird.shared_cache = off, what hbird did
# before), in one cluster with hbird preloaded, on the anchor model (500
# trees of depth 8), the settings alternated ROUNDS times:
#  (a) the first hb_predict of a new connection (psql's \timing of the
#      statement; connection and backend start not included), and the
#      memory its plan takes in that backend (pg_backend_memory_contexts:
#      the contexts "hbird plan*");
#  (b) a parallel query over 1,000 rows with two workers beside the leader
#      (hbird.share_plans on in both): with the cache, the leader writes no
#      copy of the plan into the query's shared memory; median of a
#      session's 5 runs after one warm-up;
#  (c) the same over ROWS rows;
#  (d) ROWS rows serially (no workers): scoring from the shared block
#      against the backend's own copy, once both are loaded;
#  (e) one-row transactions (pgbench, 2 clients, 5 s, the first call's
#      statement): each transaction pins the block again, or uses the
#      backend's own copy; microseconds a transaction (1 / the rate).
# The order of on and off alternates from round to round.
#
#   bash bench/shared_cache.sh [ROWS] [ROUNDS]   (defaults 200000, 11)
#
# Installs nothing (make install first; hold /tmp/hbird-install.lock around
# both on a shared machine).  Data: bench/gen_bench.py's, cached in
# bench/data/.  Results: bench/results/shared_cache_latest.txt.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3

if [ "${1:-}" = --in-cluster ]; then
	. "$BENCH/lib.sh"
	anchor_table "$SC_MODEL" "$SC_CSV"
	sql -c "CREATE TABLE t1k AS SELECT * FROM t WHERE id <= 1000" -c "VACUUM (FREEZE, ANALYZE) t1k"
	row=$(psql -X -At -c "SELECT array_to_string(ARRAY[f0,f1,f2,f3,f4,f5,f6,f7,f8,f9,f10,f11,f12,f13,
		f14,f15,f16,f17,f18,f19,f20,f21,f22,f23,f24,f25,f26,f27], ',') FROM t WHERE id = 7")
	first_call="SELECT hb_predict('m', ARRAY[$row]::float8[])"
	plan_mem="SELECT 'mem', coalesce(sum(total_bytes), 0) FROM pg_backend_memory_contexts
		WHERE name LIKE 'hbird plan%'"
	# the model in the cache once, by a session of its own
	psql -X -At -q -c "$first_call" >/dev/null
	costs="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2"
	# parallel TABLE CACHE [WORKERS]: a session's median of 5 runs after a
	# warm-up (ms)
	parallel() {
		local q="SELECT sum(hb_predict('m', $1)) FROM $1"
		PGOPTIONS="-c hbird.shared_cache=$2" psql -X -At -v ON_ERROR_STOP=1 -c "$costs" \
			-c "SET max_parallel_workers_per_gather = ${3:-2}" -c "$q" \
			-c '\timing on' -c "$q" -c "$q" -c "$q" -c "$q" -c "$q" | psql_times | median
	}
	echo "$first_call;" >"$SC_DIR/tx.sql"
	short_tx() {
		PGOPTIONS="-c hbird.shared_cache=$1" pgbench -n -c 2 -j 2 -T 5 -f "$SC_DIR/tx.sql" 2>/dev/null |
			awk '/^tps/ { printf "%.2f\n", 1e6 / $3 }'
	}
	for ((r = 1; r <= SC_ROUNDS; r++)); do
		order="on off"
		[ $((r % 2)) = 0 ] && order="off on"
		for cache in $order; do
			out=$(PGOPTIONS="-c hbird.shared_cache=$cache" psql -X -At -q -v ON_ERROR_STOP=1 \
				-c '\timing on' -c "$first_call" -c '\timing off' -c "$plan_mem")
			echo "$r $cache first $(psql_times <<<"$out") $(sed -n 's/^mem|//p' <<<"$out") $(grep -v -e '^Time: ' -e '^mem|' <<<"$out" | head -n 1)" \
				>>"$SC_DIR/times"
			echo "$r $cache p1k $(parallel t1k $cache)" >>"$SC_DIR/times"
			echo "$r $cache pall $(parallel t $cache)" >>"$SC_DIR/times"
			echo "$r $cache serial $(parallel t $cache 0)" >>"$SC_DIR/times"
			echo "$r $cache tx $(short_tx $cache)" >>"$SC_DIR/times"
		done
		log "round $r: $(grep "^$r " "$SC_DIR/times" | cut -d' ' -f2-4 | tr '\n' ' ')"
	done
	psql -X -At -c "SELECT * FROM hb_stat_shared_cache()" >"$SC_DIR/stat"
	for cache in on off; do
		PGOPTIONS="-c hbird.shared_cache=$cache" psql -X -At -q -c "$costs" \
			-c "SELECT round(sum(hb_predict('m', t))::numeric, 6) FROM t" | tail -1 >>"$SC_DIR/sums"
	done
	exit 0
fi

ROWS=${1:-200000}
ROUNDS=${2:-11}
DATA=$BENCH/data
mkdir -p "$DATA" "$BENCH/results"
"$PY" "$BENCH/gen_bench.py" "$ROWS" "$DATA" >&2
DIR=$(mktemp -d)
chmod 755 "$DIR"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
export SC_MODEL=$DATA/model.json SC_CSV=$DATA/bench_$ROWS.csv SC_DIR=$DIR SC_ROUNDS=$ROUNDS
. "$BENCH/lib.sh"
preloaded_cluster "$BENCH/shared_cache.sh"
# med CACHE WHAT [COLUMN]: the median over the rounds
med() { A=$1 B=$2 column_median "$DIR/times" "${3:-4}" '$2 == a && $3 == b'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
{
	echo "hbird shared cache benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $ROWS rows, $ROUNDS rounds, commit $(git -C "$BENCH/.." rev-parse --short HEAD), $(nproc) CPUs"
	echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "anchor model (500 trees, depth 8); medians over the rounds; off = hbird.shared_cache = off (each backend compiles)"
	for what in first p1k pall serial tx; do
		case $what in
		first) name="(a) first hb_predict of a new connection (ms)" ;;
		p1k) name="(b) 1,000 rows, 2 workers and the leader (ms)" ;;
		pall) name="(c) $ROWS rows, 2 workers and the leader (ms)" ;;
		serial) name="(d) $ROWS rows, serial (ms)" ;;
		tx) name="(e) one-row transactions, 2 clients (us each)" ;;
		esac
		on=$(med on $what)
		off=$(med off $what)
		printf '  %-52s off %9s   on %9s   %s faster\n' "$name" "$off" "$on" "$(ratio "$off" "$on")"
	done
	printf '  %-52s off %9s   on %9s\n' "(a) the backend's plan memory after it (bytes)" "$(med off first 5)" "$(med on first 5)"
	echo "first calls' results (every round, on and off): $(awk '$3 == "first" { print $6 }' "$DIR/times" | sort -u | tr '\n' ' ')"
	echo "sums over the $ROWS rows (on, off): $(tr '\n' ' ' <"$DIR/sums")"
	echo "hb_stat_shared_cache() at the end (size, used, entries, pinned, hits, stored, evicted, not stored): $(cat "$DIR/stat")"
	echo "every measurement (round, cache, what, ms or us [, plan bytes, result]):"
	sed 's/^/  /' "$DIR/times"
} | tee "$BENCH/results/shared_cache_latest.txt"
rm -rf "$DIR"
