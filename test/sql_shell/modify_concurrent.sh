#!/usr/bin/env bash
# UPDATE and DELETE under the batching scan when another session changes a
# row first: the statement waits for it, and PostgreSQL's EvalPlanQual
# re-runs the plan (the HbirdScore node included) on the row's new version.
# The score written, and the scored WHERE of a DELETE, must be the new
# version's, and the table must end exactly as with hbird.batch_scan = off.
# Runs inside a throwaway cluster; prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=test/fixtures
db=hb_modify
. test/sql_shell/lib/db.sh
fresh_db
q -v a="$(cat $fx/binary_logistic.json)" >/dev/null <<'SQL'
CREATE EXTENSION hbird;
SELECT hb_model_upload('mc', :'a');
CREATE TABLE probe0 AS
SELECT g AS id, round(sin(g)::numeric, 3)::float8 AS amount, round(cos(g)::numeric, 3)::float8 AS age,
	   round(sin(g * 0.3)::numeric, 2)::float8 AS balance, round(cos(g * 0.2)::numeric, 2)::float8 AS n_tx,
	   round(sin(g * 0.1)::numeric, 2)::float8 AS risk, (g % 9) / 4.0::float8 AS tenure,
	   NULL::float8 AS score
FROM generate_series(1, 20000) g;
-- the score of each row now, and after the other session's change to it:
-- amount + 3 (moves a score up) or amount - 3 (down)
CREATE VIEW moved AS
SELECT p.id, hb_predict('mc', p) AS before, hb_predict('mc', u) AS up, hb_predict('mc', d) AS down
FROM probe0 p,
	 LATERAL (SELECT p.amount + 3 AS amount, p.age, p.balance, p.n_tx, p.risk, p.tenure) u,
	 LATERAL (SELECT p.amount - 3 AS amount, p.age, p.balance, p.n_tx, p.risk, p.tenure) d;
SQL
up=$(q -c "SELECT id FROM moved WHERE before <= 0.5 AND up > 0.5 ORDER BY id LIMIT 1")
down=$(q -c "SELECT string_agg(id::text, ',') FROM (SELECT id FROM moved WHERE before > 0.5 AND down <= 0.5 ORDER BY id DESC LIMIT 2) d")
[ -n "$up" ] && [ -n "$down" ] && [ "$down" != "${down#*,}" ]
tap $? "rows whose score the other session's change moves across 0.5 (up: $up, down: $down)"
ids="$up,$down"

# the other session changes the rows and commits 3 s later; this one
# starts its statement once the change is made, so it waits on the first
# of them and rechecks each (the second recheck rescans the rechecking plan)
run() {
	local scan=$1 stmt=$2 t0 t1
	q -c "DROP TABLE IF EXISTS probe" -c "CREATE TABLE probe AS SELECT * FROM probe0" >/dev/null
	q -c "BEGIN" -c "UPDATE probe p SET amount = amount + CASE WHEN id = $up THEN 3 ELSE -3 END WHERE id IN ($ids)" \
		-c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
	local other=$!
	for _ in $(seq 100); do
		[ "$(q -c "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(3)'")" = 1 ] && break
		sleep 0.1
	done
	t0=$(date +%s.%N)
	q -c "SET hbird.batch_scan = $scan" -c "$stmt" >/dev/null
	t1=$(date +%s.%N)
	wait $other
	waited=$(awk "BEGIN { print ($t1 - $t0 >= 0.5) ? 1 : 0 }")
	digest=$(q -c "SELECT count(*) || ' ' || md5(string_agg(p::text, ',' ORDER BY id)) FROM probe p")
}

upd="UPDATE probe p SET score = hb_predict('mc', p)"
del="DELETE FROM probe p WHERE hb_predict('mc', p) > 0.5"
plan=$(q -c "CREATE TABLE probe AS SELECT * FROM probe0" -c "EXPLAIN (COSTS OFF) $upd" -c "EXPLAIN (COSTS OFF) $del")
[ "$(echo "$plan" | grep -c HbirdScore)" = 2 ]
tap $? "UPDATE and DELETE over the table are batched (HbirdScore in both plans)"

for scan in on off; do
	run $scan "$upd"
	declare "upd_$scan=$digest"
	bad=$(q -c "SELECT count(*) FILTER (WHERE score IS DISTINCT FROM hb_predict('mc', p)) FROM probe p")
	new=$(q -c "SELECT count(*) FROM probe p JOIN moved m USING (id) WHERE p.id IN ($ids) AND p.score = CASE WHEN id = $up THEN m.up ELSE m.down END AND p.score <> m.before")
	[ "$waited" = 1 ] && [ "$bad" = 0 ] && [ "$new" = 3 ]
	tap $? "UPDATE SET score, batch_scan $scan: waited for the other session ($waited), every score is its row's ($bad differ), the 3 changed rows scored as changed ($new)"

	run $scan "$del"
	declare "del_$scan=$digest"
	left=$(q -c "SELECT string_agg(id::text, ',' ORDER BY id) FROM probe WHERE id IN ($ids)")
	high=$(q -c "SELECT count(*) FROM probe p WHERE hb_predict('mc', p) > 0.5 AND id <> $up")
	want=$(printf '%s\n' $up $(echo "$down" | tr ',' ' ') | sort -n | paste -sd, -)
	[ "$waited" = 1 ] && [ "$left" = "$want" ] && [ "$high" = 0 ]
	tap $? "DELETE WHERE score > 0.5, batch_scan $scan: the rows moved below 0.5 stay, the row moved above stays (its old version did not qualify) ($left, want $want), no other row above 0.5 left ($high)"
done
[ "$upd_on" = "$upd_off" ]
tap $? "UPDATE: the table ends the same with the batching scan as row at a time ($upd_on)"
[ "$del_on" = "$del_off" ]
tap $? "DELETE: the table ends the same with the batching scan as row at a time ($del_on)"

# through postgres_fdw: UPDATE and DELETE of a foreign table fetch the
# remote ctid beside the row, and the node hands it on (a loopback server
# to this database; the remote statement runs row at a time)
fdw() {
	local scan=$1
	q -c "SET client_min_messages = warning" -c "CREATE EXTENSION IF NOT EXISTS postgres_fdw" \
		-c "DROP TABLE IF EXISTS probe" -c "CREATE TABLE probe AS SELECT * FROM probe0" \
		-c "DROP SERVER IF EXISTS loop CASCADE" \
		-c "CREATE SERVER loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$sock', port '$port', dbname '$db')" \
		-c "CREATE USER MAPPING FOR CURRENT_USER SERVER loop OPTIONS (user '$(q -c 'SELECT current_user')')" \
		-c "CREATE FOREIGN TABLE fprobe (id integer, amount float8, age float8, balance float8, n_tx float8, risk float8, tenure float8, score float8) SERVER loop OPTIONS (table_name 'probe')" >/dev/null
	fplan=$(q -c "SET hbird.batch_scan = $scan" -c "EXPLAIN (COSTS OFF) UPDATE fprobe f SET score = hb_predict('mc', f)" | grep -c HbirdScore)
	q -c "SET hbird.batch_scan = $scan" -c "UPDATE fprobe f SET score = hb_predict('mc', f)" \
		-c "DELETE FROM fprobe f WHERE hb_predict('mc', f) BETWEEN 0.3 AND 0.5" >/dev/null
	digest=$(q -c "SELECT count(*) || ' ' || md5(string_agg(p::text, ',' ORDER BY id)) FROM probe p")
	fbad=$(q -c "SELECT count(*) FILTER (WHERE score IS DISTINCT FROM hb_predict('mc', p) OR hb_predict('mc', p) BETWEEN 0.3 AND 0.5) FROM probe p")
}
# over this cluster's socket (a TCP loopback would ask for a password)
sock=$(q -c "SHOW unix_socket_directories" | cut -d, -f1)
port=$(q -c "SHOW port")
fdw on
fdw_on=$digest
[ "$fplan" = 1 ] && [ "$fbad" = 0 ]
tap $? "a foreign table: UPDATE SET score and a scored DELETE through the batching scan (HbirdScore in the plan: $fplan; rows scored wrong or left: $fbad)"
fdw off
[ "$fplan" = 0 ] && [ "$fbad" = 0 ] && [ "$fdw_on" = "$digest" ]
tap $? "a foreign table: the remote table ends the same as row at a time ($fdw_on)"
