#!/usr/bin/env bash
# hb_stat_models counts what parallel workers score: with the leader kept
# out of the scan (parallel_leader_participation = off) every row is scored
# in a worker, and the view must still show one call and one row per input
# row; batched, the workers read the model their leader compiled
# (pg_scan_share.c) or find it in the shared cache (pg_shared_cache.c)
# and compile nothing.  Needs the preloaded cluster of test/run_sql_tests.sh; prints TAP.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=test/fixtures
db=hb_stat_parallel
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }

# scripts/test.sh sets HB_EXPECT_PRELOAD: there a missing preload is a failure
if [ "$(psql -X -At -c "SELECT current_setting('shared_preload_libraries') ~ 'hbird'" 2>/dev/null)" != t ]; then
	if [ -n "${HB_EXPECT_PRELOAD:-}" ]; then
		echo "not ok - stat_models parallel: the test cluster does not preload hbird"
	else
		echo "ok - stat_models parallel # SKIP hbird is not in shared_preload_libraries"
	fi
	exit 0
fi
dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
trap 'dropdb --if-exists "$db" >/dev/null 2>&1' EXIT

q -v m="$(cat $fx/binary_logistic.json)" >/dev/null <<'SQL'
CREATE EXTENSION hbird;
SELECT hb_model_upload('par', :'m');
CREATE TABLE big AS
SELECT g AS id, sin(g) AS amount, cos(g * 0.7) AS age, sin(g * 1.3) * 2 AS balance,
	   cos(g * 0.11) AS n_tx, sin(g * 0.05) AS risk, (g % 13) / 6.0 - 1 AS tenure
FROM generate_series(1, 40000) g;
ANALYZE big;
SQL

# row at a time: one call per row, each worker compiles; batching scan: one
# call per worker scan, and the workers read the model their leader
# compiled (pg_scan_share.c), unless sharing is off or the model does not
# fit hbird.share_plans_max.  Each case in a new session (a cold cache),
# without the shared cache, then with it: the first session's leader
# compiles and stores the model, its workers read it there, and the next
# session compiles nothing.  initplan: shared as in "shared", the Gather in
# an initplan.
for mode in rows shared unshared capped initplan cached cached_again; do
	no_cache="SET hbird.shared_cache = off;"
	query="SELECT sum(hb_predict('par', b)) FROM big b"
	case $mode in
	rows) set_mode="$no_cache SET hbird.batch_scan = off;" ;;
	shared) set_mode="$no_cache" ;;
	unshared) set_mode="$no_cache SET hbird.share_plans = off;" ;;
	capped) set_mode="$no_cache SET hbird.share_plans_max = '1kB';" ;;
	initplan)
		set_mode="$no_cache"
		query="SELECT (SELECT sum(hb_predict('par', b)) FROM big b)"
		;;
	cached | cached_again) set_mode="" ;;
	esac
	out=$(q <<SQL
SELECT hb_stat_models_reset();
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
$set_mode
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
$query;
SELECT 'stats', calls, rows, cache_misses + cache_hits, cache_misses FROM hb_stat_models WHERE name = 'par';
SQL
)
	launched=$(sed -n 's/.*Workers Launched: \([0-9]*\).*/\1/p' <<<"$out")
	stats=$(grep '^stats|' <<<"$out")
	[ "${launched:-0}" -ge 1 ]
	tap $? "stat_models parallel, $mode: the scan ran in parallel workers (launched: ${launched:-none})"
	l=${launched:-0}
	case $mode in
	# each worker compiles the model
	rows) want="stats|40000|40000|$l|$l" ;;
	# the leader compiles it to share it, the workers read it; EXPLAIN
	# looks it up once more in the leader, to show it
	shared | initplan) want="stats|$l|40000|$((l + 2))|1" ;;
	# each worker compiles it, and the leader for EXPLAIN
	unshared) want="stats|$l|40000|$((l + 1))|$((l + 1))" ;;
	# the leader compiles it, finds it too big to share; each worker compiles it
	capped) want="stats|$l|40000|$((l + 2))|$((l + 1))" ;;
	# the leader compiles it and stores it, the workers read it there
	# (the leader writes no copy into the query's memory)
	cached) want="stats|$l|40000|$((l + 2))|1" ;;
	# already stored: nobody compiles; the leader's look-up at the set-up,
	# not a use of the model, counts only where it compiles
	cached_again) want="stats|$l|40000|$((l + 1))|0" ;;
	esac
	[ "$stats" = "$want" ]
	tap $? "stat_models parallel, $mode: every row scored in a worker is counted, one lookup per worker, compiled where expected (got '$stats', want '$want')"
done
