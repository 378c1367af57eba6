#!/usr/bin/env bash
# Another session's upload is seen by the next statement, never in the
# middle of one: a slow statement keeps scoring with the version it started
# with while a second session replaces the model, and the statement after
# it sees the new one.  Runs inside a throwaway cluster; prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=test/fixtures
db=hb_concurrent
. test/sql_shell/lib/db.sh
fresh_db
q -v a="$(cat $fx/binary_logistic.json)" >/dev/null <<'SQL'
CREATE EXTENSION hbird;
SELECT hb_model_upload('cv', :'a');
CREATE TABLE probe AS
SELECT g AS id, 0.5::float8 AS amount, -1.0::float8 AS age, 0.25::float8 AS balance,
	   1.0::float8 AS n_tx, 0.0::float8 AS risk, 2.0::float8 AS tenure
FROM generate_series(1, 150) g;
SQL
v1=$(q -c "SELECT hb_predict('cv', p) FROM probe p WHERE id = 1")
v2=$(q -v b="$(cat $fx/binary_logitraw.json)" <<'SQL' | sed -n 2p
BEGIN;
SELECT hb_model_upload('tmp_probe', :'b');
SELECT hb_predict('tmp_probe', p) FROM probe p WHERE id = 1;
ROLLBACK;
SQL
)

# session A: 150 rows, 20 ms each (3 s), one distinct score expected; with
# the batching scan (the model is resolved at its first batch and batches
# keep coming) and row at a time
for scan in on off; do
	out=$(mktemp)
	q -c "SET hbird.batch_scan = $scan" \
		-c "SELECT count(DISTINCT s), min(s) FROM (SELECT hb_predict('cv', p) AS s, pg_sleep(0.02) FROM probe p) q" >"$out" &
	pid=$!
	sleep 1
	# session B replaces the model in the middle of A's statement
	echo "SELECT hb_model_upload('cv', :'b');" | q -v b="$(cat $fx/binary_logitraw.json)" >/dev/null
	wait $pid
	res=$(cat "$out")
	rm -f "$out"
	[ "$res" = "1|$v1" ]
	tap $? "a statement keeps the version it started with while another session uploads, batch_scan $scan (got $res, version 1 scores $v1)"
	# back to version 1's model for the next round
	[ "$scan" = on ] && echo "SELECT hb_model_upload('cv', :'a');" | q -v a="$(cat $fx/binary_logistic.json)" >/dev/null
done

after=$(q -c "SELECT hb_predict('cv', p) FROM probe p WHERE id = 1")
[ -n "$v2" ] && [ "$after" = "$v2" ] && [ "$after" != "$v1" ]
tap $? "the next statement sees the new version ($after, expected $v2)"

# a session that has the model cached sees a drop at its next statement
err=$(psql -X -q -At -d "$db" -c "SELECT hb_predict('cv', p) FROM probe p WHERE id = 1" \
	-c "SELECT pg_sleep(1.5)" -c "SELECT hb_predict('cv', p) FROM probe p WHERE id = 1" 2>&1 &
	sleep 0.7; q -c "SELECT hb_model_drop('cv')" >/dev/null; wait)
grep -q 'model "cv" does not exist' <<<"$err"
tap $? "a drop by another session is seen by the next statement"

# a revoke committed by another session applies to an open REPEATABLE READ
# transaction's next statement, as PostgreSQL's own revokes do (its
# snapshot kept the grant until 2026-12-05)
q -v a="$(cat $fx/binary_logistic.json)" >/dev/null <<'SQL'
CREATE ROLE cv_reader;
SELECT hb_model_upload('cv2', :'a');
SELECT hb_model_grant('cv2', 'cv_reader');
SQL
score="SELECT round(hb_predict('cv2', ARRAY[0.5, -1, 0.25, 1, 0, 2]::float8[])::numeric, 6)"
out=$(psql -X -q -At -d "$db" -c "BEGIN ISOLATION LEVEL REPEATABLE READ" -c "SET LOCAL ROLE cv_reader" \
	-c "$score" -c "SELECT pg_sleep(1.5)" -c "$score" -c "COMMIT" 2>&1 &
	sleep 0.7; q -c "SELECT hb_model_revoke('cv2', 'cv_reader')" >/dev/null; wait)
[ "$(head -1 <<<"$out")" = "$(q -c "$score")" ] &&
	grep -q 'permission denied to score model "cv2"' <<<"$out"
tap $? "a revoke by another session applies to a REPEATABLE READ transaction's next statement (got: $(tr '\n' ' ' <<<"$out"))"
q -c "SELECT hb_model_drop('cv2')" -c "DROP ROLE cv_reader" >/dev/null
