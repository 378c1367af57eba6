#!/usr/bin/env bash
# hb_stat_models keeps at most hbird.stat_max rows and evicts the least
# recently used: in a throwaway cluster of its own (own_cluster.inc) with
# stat_max = 100 (the minimum), 100 versions are scored, version 1 is
# scored again, and 5 more versions push out versions 2-6 while version 1
# stays.  Prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }

. test/sql_shell/own_cluster.inc
if ! own_cluster -c shared_preload_libraries=hbird -c hbird.stat_max=100; then
	echo "not ok - stat_models eviction: could not start a cluster of its own"
	exit 0
fi

out=$(psql -X -q -At -v ON_ERROR_STOP=1 -v m="$(cat test/fixtures/linear/linear_tiny.json)" 2>&1 <<'SQL'
CREATE EXTENSION hbird;
CREATE TEMP TABLE src AS SELECT :'m'::text AS m;
CREATE FUNCTION upload_and_score(n integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		PERFORM hb_model_upload('ev', (SELECT m FROM src));
		PERFORM hb_predict('ev', ARRAY[1, 2, 3]::float8[]);
	END LOOP;
END $$;
SELECT upload_and_score(100);
SELECT 'full', count(*), min(version), max(version) FROM hb_stat_models;
SELECT hb_model_activate('ev', 1);
SELECT hb_predict('ev', ARRAY[1, 2, 3]::float8[]) IS NOT NULL;
SELECT upload_and_score(5);
SELECT 'after', count(*), min(version) FILTER (WHERE version > 1), max(version),
	   bool_or(version = 1), sum(calls) FROM hb_stat_models;
SELECT 'setting', current_setting('hbird.stat_max');
SQL
)
grep -q '^setting|100$' <<<"$out"
tap $? "stat_models eviction: the cluster runs with hbird.stat_max = 100"
grep -q '^full|100|1|100$' <<<"$out"
tap $? "stat_models eviction: 100 versions scored, 100 rows ($(grep '^full' <<<"$out"))"
grep -q '^after|100|7|105|t|101$' <<<"$out"
tap $? "stat_models eviction: 5 more versions evict the least recently used (2-6), not version 1 scored again ($(grep '^after' <<<"$out" || tr '\n' ' ' <<<"$out" | cut -c1-300))"
