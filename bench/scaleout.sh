#!/bin/bash
# Scale-out benchmark (docs/scale-out.md): the anchor workload (500 trees
# of depth 8, 28 features, bench/gen_bench.py) on one node against a
# coordinator with two shards, one process on each side.
#
#   bash bench/scaleout.sh [ROWS]      (default ROWS = 400000)
#
# Starts three throwaway clusters on Unix sockets (hbird preloaded,
# max_parallel_workers_per_gather = 0 everywhere): "coord" holds t, all
# rows (the single node), and t_dist, hash-partitioned by id into two
# postgres_fdw partitions on "shard1" and "shard2" (async_capable,
# extensions 'hbird').  The model is uploaded on coord and sent to the
# shards with hb_model_distribute.  Then, in alternating rounds, each query
# on t (one backend scores every row) and on t_dist (each shard scores its
# half, at the same time; the coordinator adds up):
#   sum      SELECT sum(hb_predict('m', t)) FROM ...
#   topk     SELECT id, hb_predict('m', t) FROM ... ORDER BY 2 DESC LIMIT 10
#   hb_topk  SELECT ... FROM hb_topk('m', 10, NULL::...)
#   scores   SELECT id, hb_predict('m', x) FROM ..., every row's score read
#            by the coordinator (a bit_xor of their hashes, which is not
#            pushed down: the scores come from the shards' plain scans);
#            also on t_dist with hbird.pushdown = off, the coordinator
#            scoring the rows the shards send (what the query did before
#            the scans returned the scores: "off" below)
#   join     every row's score beside a column of a small local table it
#            is joined with (dims, 10 rows; the same hash of the scores):
#            on t_dist the scored side's scans compute the scores and send
#            only them and the join key; also with hbird.pushdown = off
#            (the rows travel, the coordinator scores them above the join:
#            what such a query did before)
# and prints the medians, the ratios (single / two shards) and whether the
# answers agree, also into bench/results/scaleout_latest.txt.
#
# Needs hbird installed (make install) with the Debian packages of
# scripts/install-deps.sh; BENCH_PG_BIN points at another PostgreSQL 15
# bin directory (a private installation); BENCH_REPS (default 5) runs per
# query and side, in BENCH_ROUNDS (default 2) alternating rounds.
set -euo pipefail

ROWS=${1:-400000}
[[ $ROWS =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash bench/scaleout.sh [ROWS]" >&2; exit 2; }
REPS=${BENCH_REPS:-5}
ROUNDS=${BENCH_ROUNDS:-2}
BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=$BENCH/data
BIN=${BENCH_PG_BIN:-$(pg_config --bindir)}
mkdir -p "$DATA" "$BENCH/results"
OUT=$BENCH/results/scaleout_latest.txt

log() { printf '[scaleout %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before the run: $LOAD_BEFORE"

[ -f "$DATA/model.json" ] && [ -f "$DATA/bench_$ROWS.csv" ] ||
	/usr/bin/python3 "$BENCH/gen_bench.py" "$ROWS" "$DATA" >&2

dir=$(mktemp -d /tmp/hbird-scaleout-bench.XXXXXX)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$dir"
nodes=()
cleanup() {
	[ -n "${BENCH_KEEP:-}" ] && { log "clusters kept in $dir"; return; }
	for n in "${nodes[@]}"; do as_pg "$BIN/pg_ctl" -D "$dir/$n" -m immediate stop >/dev/null 2>&1; done
	rm -rf "$dir"
}
trap cleanup EXIT
start() {
	local name=$1 port=$2
	as_pg "$BIN/initdb" -D "$dir/$name" -A trust -U postgres >"$dir/$name.initdb.log" 2>&1
	nodes+=("$name")
	as_pg "$BIN/pg_ctl" -D "$dir/$name" -w -l "$dir/$name.log" \
		-o "-c listen_addresses='' -c unix_socket_directories=$dir -c port=$port -c shared_preload_libraries=hbird -c shared_buffers=512MB -c max_parallel_workers_per_gather=0 -c synchronize_seqscans=off -c jit=off" \
		start >/dev/null
}
q() { local port=$1; shift; "$BIN/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres "$@"; }
C=5442 S1=5443 S2=5444
start coord $C
start shard1 $S1
start shard2 $S2

fcols="f0 float8"
for i in $(seq 1 27); do fcols="$fcols, f$i float8"; done
cols="id integer, $fcols"
for p in $S1 $S2; do q $p -c "CREATE EXTENSION hbird" -c "CREATE TABLE t_part ($cols)"; done
log "loading $ROWS rows into the single node and the two shards"
q $C -v dir="$dir" -v s1=$S1 -v s2=$S2 -v model="$DATA/model.json" >/dev/null <<SQL
CREATE EXTENSION hbird;
CREATE EXTENSION postgres_fdw;
SELECT hb_model_upload('m', pg_read_binary_file(:'model'));
CREATE TABLE t_csv ($fcols);
\copy t_csv FROM '$DATA/bench_$ROWS.csv' WITH (FORMAT csv, HEADER true)
CREATE TABLE t ($cols);
INSERT INTO t SELECT row_number() OVER (), * FROM t_csv;
DROP TABLE t_csv;
CREATE SERVER shard1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host :'dir', port :'s1', dbname 'postgres', extensions 'hbird', async_capable 'true', batch_size '1000', fetch_size '1000');
CREATE SERVER shard2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host :'dir', port :'s2', dbname 'postgres', extensions 'hbird', async_capable 'true', batch_size '1000', fetch_size '1000');
CREATE USER MAPPING FOR postgres SERVER shard1 OPTIONS (user 'postgres');
CREATE USER MAPPING FOR postgres SERVER shard2 OPTIONS (user 'postgres');
CREATE TABLE t_dist ($cols) PARTITION BY HASH (id);
CREATE FOREIGN TABLE t_p1 PARTITION OF t_dist FOR VALUES WITH (modulus 2, remainder 0)
	SERVER shard1 OPTIONS (table_name 't_part');
CREATE FOREIGN TABLE t_p2 PARTITION OF t_dist FOR VALUES WITH (modulus 2, remainder 1)
	SERVER shard2 OPTIONS (table_name 't_part');
INSERT INTO t_dist SELECT * FROM t;
CREATE TABLE dims AS SELECT g AS k, 'label ' || g AS label FROM generate_series(0, 9) g;
SELECT count(*) FROM hb_model_distribute('m');
VACUUM ANALYZE t;
ANALYZE t_dist;
SQL
for p in $S1 $S2; do q $p -c "VACUUM ANALYZE t_part"; done
split=$(q $C -c "SELECT (SELECT count(*) FROM t_p1) || '/' || (SELECT count(*) FROM t_p2)")
log "rows per shard: $split; models: $(q $C -c "SELECT string_agg(server || ' ' || shard_version || ' ' || in_sync, ', ') FROM hb_model_shards('m')")"

declare -A SQL
SQL[sum]="SELECT sum(hb_predict('m', x)) FROM @T x"
# the answer of a top-K: its scores in order, and the rows above the k-th
# score (rows tied with it are SQL's choice: a float32 probability near 1
# is shared by many rows of this model)
SQL[topk]="WITH y AS (SELECT id, hb_predict('m', x) AS s FROM @T x ORDER BY 2 DESC LIMIT 10) SELECT string_agg(s::text, ' ' ORDER BY s DESC) || ' | ' || coalesce(string_agg(id::text, ' ' ORDER BY id) FILTER (WHERE s > (SELECT min(s) FROM y)), '') FROM y"
SQL[hb_topk]="WITH y AS (SELECT (item).id, score AS s FROM hb_topk('m', 10, NULL::@T)) SELECT string_agg(s::text, ' ' ORDER BY s DESC) || ' | ' || coalesce(string_agg(id::text, ' ' ORDER BY id) FILTER (WHERE s > (SELECT min(s) FROM y)), '') FROM y"
SQL[scores]="SELECT bit_xor(hashfloat8(s) # id) || ' ' || count(*) FROM (SELECT id, hb_predict('m', x) AS s FROM @T x) y"
SQL[join]="SELECT bit_xor(hashfloat8(s) # id # hashtext(label)) || ' ' || count(*) FROM (SELECT x.id, hb_predict('m', x) AS s, d.label FROM @T x JOIN dims d ON d.k = x.id % 10) y"
declare -A MS ANSWER

# cpu NODE: CPU ticks (user + system) used so far by the node's processes:
# the postmaster's own and its reaped children's (backends that ended),
# and the live children's
cpu() {
	local pm c p
	pm=$(head -1 "$dir/$1/postmaster.pid")
	c=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat")
	for p in $(pgrep -P "$pm"); do
		c=$((c + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo $c
}
declare -A CPU
# timed_runs LABEL TABLE [KEY SETTING]: one session, a warm-up run, then REPS
# timed runs; CPU seconds per run of each node, taken around the whole
# session; KEY (default TABLE) names the results of a run under SETTING
timed_runs() {
	local label=$1 tab=$2 query out n before=()
	local key=${3:-$2}
	query=${SQL[$label]//@T/$tab}
	local args=()
	[ -n "${4:-}" ] && args+=(-c "$4")
	args+=(-c "$query" -c '\timing on')
	for _ in $(seq "$REPS"); do args+=(-c "$query"); done
	for n in coord shard1 shard2; do before+=("$(cpu $n)"); done
	out=$(q $C "${args[@]}")
	sleep 0.5					# the backends end, and the postmasters reap them
	i=0
	for n in coord shard1 shard2; do
		CPU[$label/$key/$n]=$(( ${CPU[$label/$key/$n]:-0} + $(cpu $n) - ${before[$i]} ))
		i=$((i + 1))
	done
	ANSWER[$label/$key]=$(sed -n 1p <<<"$out")
	MS[$label/$key]="${MS[$label/$key]:-} $(sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' <<<"$out" | tr '\n' ' ')"
}
# cpu_nodes LABEL/KEY: CPU seconds per run of coordinator + shard1 + shard2
cpu_nodes() {
	awk -v c="${CPU[$1/coord]}" -v a="${CPU[$1/shard1]}" -v b="${CPU[$1/shard2]}" \
		-v h="$(getconf CLK_TCK)" -v r="$(( (REPS + 1) * ROUNDS ))" \
		'BEGIN { printf "%.2f + %.2f + %.2f", c / h / r, a / h / r, b / h / r }'
}
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for round in $(seq "$ROUNDS"); do
	for label in sum topk hb_topk scores join; do
		log "round $round: $label"
		timed_runs "$label" t
		timed_runs "$label" t_dist
	done
	timed_runs scores t_dist off "SET hbird.pushdown = off"
	timed_runs join t_dist off "SET hbird.pushdown = off"
done
plan=$(q $C -c "EXPLAIN (VERBOSE, COSTS OFF) ${SQL[sum]//@T/t_dist}" | grep -c 'Remote SQL: SELECT sum(public.hb_predict_pinned(')
scan=$(q $C -c "EXPLAIN (VERBOSE, COSTS OFF) ${SQL[scores]//@T/t_dist}" | grep -c 'Remote SQL: SELECT s.c1, public.hb_predict_pinned(')
join_scan=$(q $C -c "EXPLAIN (VERBOSE, COSTS OFF) ${SQL[join]//@T/t_dist}" | grep -c 'Remote SQL: SELECT s.c1, public.hb_predict_pinned(' || true)

{
	echo "bench/scaleout.sh $ROWS: one node against a coordinator with two shards"
	echo "rows per shard $split; $REPS runs per query and side in $ROUNDS alternating rounds;"
	echo "one process each side (max_parallel_workers_per_gather = 0); $(nproc) cores;"
	echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "sum pushed down to both shards: $([ "$plan" = 2 ] && echo yes || echo NO)"
	echo "scores computed by both shards' scans: $([ "$scan" = 2 ] && echo yes || echo NO)"
	echo "the join's scores computed by both shards' scans (sending only the id beside them): $([ "$join_scan" = 2 ] && echo yes || echo NO)"
	echo "CPU seconds per run (warm-up included), one node: coordinator; two shards: coordinator + shard1 + shard2"
	printf '%-8s %12s %12s %8s  %-11s %s\n' query "one node ms" "2 shards ms" ratio "same answer" "CPU s: one node | two shards"
	hz=$(getconf CLK_TCK)
	runs=$(( (REPS + 1) * ROUNDS ))
	for label in sum topk hb_topk scores join; do
		one=$(median <<<"${MS[$label/t]}")
		two=$(median <<<"${MS[$label/t_dist]}")
		a=${ANSWER[$label/t]}
		b=${ANSWER[$label/t_dist]}
		if [ "$label" = sum ]; then
			same=$(awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; print (d <= 1e-9 * (a < 0 ? -a : a)) ? "yes" : "NO" }')
		else
			same=$([ "$a" = "$b" ] && echo yes || echo NO)
		fi
		cpu1=$(awk -v c="${CPU[$label/t/coord]}" -v h="$hz" -v r="$runs" 'BEGIN { printf "%.2f", c / h / r }')
		printf '%-8s %12.1f %12.1f %7.2fx  %-11s %s | %s\n' "$label" "$one" "$two" "$(awk -v a="$one" -v b="$two" 'BEGIN { print a / b }')" "$same" "$cpu1" "$(cpu_nodes "$label/t_dist")"
	done
	echo "on two shards: the coordinator scoring (hbird.pushdown = off) against the shards' scans"
	printf '%-8s %12s %12s %8s  %-11s %s\n' query "off ms" "on ms" ratio "same answer" "CPU s: off | on"
	for label in scores join; do
		off=$(median <<<"${MS[$label/off]}")
		two=$(median <<<"${MS[$label/t_dist]}")
		printf '%-8s %12.1f %12.1f %7.2fx  %-11s %s | %s\n' "$label" "$off" "$two" \
			"$(awk -v a="$off" -v b="$two" 'BEGIN { print a / b }')" \
			"$([ "${ANSWER[$label/off]}" = "${ANSWER[$label/t]}" ] && echo yes || echo NO)" \
			"$(cpu_nodes $label/off)" "$(cpu_nodes $label/t_dist)"
	done
} | tee "$OUT"
