#!/usr/bin/env bash
# Tunings survive pg_dump / pg_restore and keep scoring the same; a long
# hb_tune is cancelled promptly.  Runs inside a throwaway cluster
# (test/run_sql_tests.sh); prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=test/fixtures/willump
dump=$(mktemp /tmp/hbird-wdump.XXXXXX)
trap 'rm -f "$dump"; dropdb --if-exists hb_w_src >/dev/null 2>&1; dropdb --if-exists hb_w_dst >/dev/null 2>&1' EXIT

tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

dropdb --if-exists hb_w_src >/dev/null 2>&1
dropdb --if-exists hb_w_dst >/dev/null 2>&1
createdb hb_w_src && createdb hb_w_dst
q -d hb_w_src >/dev/null <<SQL
\\set fraud \`cat $fx/willump_fraud.json\`
CREATE EXTENSION hbird;
SELECT hb_model_upload('wfraud', :'fraud');
CREATE FUNCTION wu(id bigint, j int) RETURNS float8 LANGUAGE sql IMMUTABLE AS
\$\$ SELECT 2 * (s - floor(s)) - 1 FROM (SELECT sin(id * 12.9898 + j * 78.233) * 43758.5453 AS s) q \$\$;
CREATE TABLE tx AS
SELECT id, wu(id, 0) f0, wu(id, 1) f1, wu(id, 2) f2, wu(id, 3) f3, wu(id, 4) f4,
	   wu(id, 5) f5, wu(id, 6) f6, wu(id, 7) f7
FROM generate_series(300001, 320000) id;
SET client_min_messages = warning;
SELECT count(*) FROM hb_tune('wfraud', 'SELECT * FROM tx WHERE id <= 310000', kind => 'cascade', target => 0.01);
SET hbird.cascade = on;
CREATE TABLE scored AS SELECT id, hb_predict('wfraud', t) AS p FROM tx t;
SQL
tap $? "tunings dump/restore: source database tuned"

pg_dump -Fc -d hb_w_src -f "$dump" && pg_restore -d hb_w_dst "$dump"
tap $? "tunings dump/restore: pg_dump and pg_restore"

src=$(q -d hb_w_src -c "SELECT string_agg(format('%s/%s/%s/%s/%s', name, version, kind, approximation, threshold), ' ') FROM hb_tunings")
dst=$(q -d hb_w_dst -c "SELECT string_agg(format('%s/%s/%s/%s/%s', name, version, kind, approximation, threshold), ' ') FROM hb_tunings")
[ -n "$src" ] && [ "$src" = "$dst" ]
tap $? "tunings dump/restore: the tuning comes back ($dst)"

diff=$(q -d hb_w_dst -c "SET hbird.cascade = on" -c "SELECT count(*) FROM scored s JOIN tx t USING (id) WHERE hb_predict('wfraud', t) IS DISTINCT FROM s.p")
[ "$diff" = 0 ]
tap $? "tunings dump/restore: the restored cascade scores the same ($diff differ)"

# cancel: a tuning on 800,000 rows takes seconds; statement_timeout stops
# it.  Delay = the statement's time (psql's \timing) minus the timeout, for
# a cascade and a top-K tuning, stopped early (sample query) and late.
q -d hb_w_src -c "CREATE TABLE big AS SELECT t.* FROM tx t, generate_series(1, 40)" >/dev/null
# the aim is 100 ms (docs/reliability.md); the check allows 200 so that a
# busy machine does not fail it, and prints each delay
max_ms=${HB_TUNE_CANCEL_MAX_MS:-200}
for kind in cascade topk; do
	k=""
	[ $kind = topk ] && k=", k => 10"
	for t in 300 1000; do
		out=$(psql -X -d hb_w_src -c "SET statement_timeout = '${t}ms'" -c "SET client_min_messages = warning" \
			-c '\timing on' \
			-c "SELECT count(*) FROM hb_tune('wfraud', 'SELECT * FROM big', kind => '$kind'$k, target => 0.01)" 2>&1)
		ms=$(echo "$out" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | tail -1)
		delay=$(awk -v m="${ms:-0}" -v t="$t" 'BEGIN { printf "%.1f", m - t }')
		grep -q "canceling statement due to statement timeout" <<<"$out" &&
			awk -v d="$delay" -v l="$max_ms" 'BEGIN { exit !(d >= 0 && d < l) }'
		tap $? "hb_tune ($kind) is cancelled by a ${t} ms statement_timeout ${delay} ms late (limit $max_ms ms)"
	done
done
