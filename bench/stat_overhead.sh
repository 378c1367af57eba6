#!/usr/bin/env bash
# Cost of the hb_stat_models counters on the hottest path: hb_predict called
# once per row over 200k rows, serial, median of 9 runs of the
# backend's on-CPU time.  Run inside a
# throwaway cluster, once with and once without preloading:
#
#   pg_virtualenv -t -v 15 bash bench/stat_overhead.sh
#   pg_virtualenv -o shared_preload_libraries=hbird -t -v 15 bash bench/stat_overhead.sh
#
# When preloaded it also times the same query with hbird.stat_track = off,
# in the same session, which isolates the counters from everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${ROWS:-200000}
runs=${RUNS:-9}
q() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }

q -v m="$(cat test/fixtures/binary_logistic.json)" <<SQL >/dev/null
DROP EXTENSION IF EXISTS hbird CASCADE;
DROP TABLE IF EXISTS so_rows;
CREATE EXTENSION hbird;
SELECT hb_model_upload('so', :'m');
CREATE TABLE so_rows AS
SELECT g AS id, sin(g) AS amount, cos(g * 0.7) AS age, sin(g * 1.3) * 2 AS balance,
	   cos(g * 0.11) AS n_tx, sin(g * 0.05) AS risk, (g % 13) / 6.0 - 1 AS tenure
FROM generate_series(1, $rows) g;
VACUUM ANALYZE so_rows;
SQL

preloaded=$(q -At -c "SELECT current_setting('shared_preload_libraries') ~ 'hbird'")
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# time_query SETTING: median on-CPU milliseconds of the backend for the
# query under SET SETTING (/proc/self/schedstat: nanoseconds on a CPU, so
# other load on the machine disturbs it far less than wall time)
time_query() {
	{
		echo "SET max_parallel_workers_per_gather = 0;"
		echo "$1;"
		echo "SELECT sum(hb_predict('so', t)) FROM so_rows t;"	# warm-up
		for _ in $(seq "$runs"); do
			echo "SELECT 'cpu', split_part(pg_read_file('/proc/self/schedstat'), ' ', 1);"
			echo "SELECT sum(hb_predict('so', t)) FROM so_rows t;"
		done
		echo "SELECT 'cpu', split_part(pg_read_file('/proc/self/schedstat'), ' ', 1);"
	} | q -At | sed -n 's/^cpu|//p' |
		awk 'NR > 1 { printf "%.3f\n", ($1 - prev) / 1e6 } { prev = $1 }' | median
}

echo "# rows=$rows runs=$runs preloaded=$preloaded"
if [ "$preloaded" = t ]; then
	# interleave on/off so that load from elsewhere hits both alike
	for round in 1 2 3 4 5; do
		echo "stat_track=on  round $round: $(time_query 'SET hbird.stat_track = on') ms"
		echo "stat_track=off round $round: $(time_query 'SET hbird.stat_track = off') ms"
	done
	q -c "SELECT name, version, calls, rows FROM hb_stat_models"
else
	for round in 1 2 3; do
		echo "not preloaded round $round: $(time_query 'SELECT 1') ms"
	done
fi
