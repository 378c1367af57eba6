#!/usr/bin/env bash
# Crash safety of the model catalog.  Models are uploaded, activated,
# dropped and granted after a checkpoint (so recovery has to replay them
# from the WAL); an explicit ROLLBACK of uploads and drops leaves nothing;
# then, with another transaction in flight (an upload and a drop not yet
# committed), the postmaster and every process of the cluster are killed
# with SIGKILL, the cluster is restarted and goes through crash recovery.
# Every committed model, version, active version and grant must be back,
# score exactly as before, nothing of the in-flight transaction may be, and
# uploads continue with the next version number.  Then the same once more
# with SIGKILL of one backend in the middle of an upload (the postmaster
# resets the whole cluster by itself).
# Runs inside a throwaway cluster (tests/run_sql_tests.sh, pg_virtualenv);
# skips when it cannot find the cluster with pg_lsclusters.  Prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=tests/fixtures
db=hb_crash
tmp=$(mktemp -d /tmp/hbird-crash.XXXXXX)
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }

read -r cl_version cl_name cl_log <<<"$(pg_lsclusters -h 2>/dev/null |
	awk -v p="${PGPORT:-5432}" '$3 == p && $4 == "online" { print $1, $2, $NF }')"
if [ -z "${cl_name:-}" ] || [ "${PGHOST:-localhost}" != localhost ]; then
	echo "ok - crash: # SKIP no local cluster on port ${PGPORT:-?} found with pg_lsclusters"
	exit 0
fi

wait_ready() {
	for _ in $(seq 1 300); do
		pg_isready -q -d "$db" && psql -X -At -d "$db" -c 'SELECT 1' >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"; wait_ready >/dev/null 2>&1; dropdb --if-exists "$db" >/dev/null 2>&1; psql -X -q -c "DROP ROLE IF EXISTS hb_crash_reader" >/dev/null 2>&1' EXIT

q -v bl="$(cat $fx/binary_logistic.json)" -v lr="$(cat $fx/binary_logitraw.json)" \
	-v rl="$(cat $fx/reg_logistic.json)" -v ms="$(cat $fx/multi_softprob.json)" \
	-v sq="$(cat $fx/reg_squarederror.json)" >"$tmp/setup.out" 2>&1 <<'SQL'
CREATE EXTENSION hbird;
DROP ROLE IF EXISTS hb_crash_reader;
CREATE ROLE hb_crash_reader;
CREATE TABLE tx AS
SELECT g AS id, sin(g) AS amount, cos(g) AS age,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE sin(g * 0.3) END AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0 AS tenure,
	   sin(g * 0.7) AS utilization, cos(g * 0.9) AS score
FROM generate_series(1, 5000) g;
CHECKPOINT;
-- everything below is only in the WAL when the cluster dies
SELECT hb_model_upload('fraud', :'bl');
SELECT hb_model_upload('fraud', :'lr');
SELECT hb_model_upload('fraud', :'rl');
SELECT hb_model_activate('fraud', 2);
SELECT hb_model_drop('fraud', 3);
SELECT hb_model_upload('multi', :'ms');
SELECT hb_model_upload('reg', :'sq');
SELECT hb_model_upload('gone', :'bl');
SELECT hb_model_drop('gone');
SELECT hb_model_grant('fraud', 'hb_crash_reader');
SELECT hb_model_grant('multi', 'public');
CREATE TABLE scored AS
SELECT id, hb_predict('fraud', t) AS p_fraud, hb_predict_proba('multi', t) AS p_multi,
	   hb_predict('reg', t) AS p_reg FROM tx t;
CREATE VIEW catalog_now AS
SELECT (SELECT string_agg(format('%s/%s/%s/%s/%s', name, version, active, task, sha256), ' ' ORDER BY name, version) FROM hb_models)
	   || ' | ' || (SELECT string_agg(format('%s:%s', name, grantee::text), ' ' ORDER BY name, grantee::text) FROM hb_model_grants)
	   || ' | ' || (SELECT count(*) FROM hb_model_features)
	   || ' | ' || (SELECT string_agg(format('%s:%s:%s', name, active_version, last_version), ' ' ORDER BY name) FROM hbird.model) AS c;
CREATE TABLE catalog_before AS SELECT c FROM catalog_now;
SQL
tap $? "crash: models uploaded, activated, dropped and granted after a checkpoint"
[ -s "$tmp/setup.out" ] && grep -i error "$tmp/setup.out" | head -3 | sed 's/^/# /'
before=$(q -c "SELECT c FROM catalog_before")

# an explicit rollback of an upload, a new version, a drop and an activation
q -v bl="$(cat $fx/binary_logistic.json)" >/dev/null 2>&1 <<'SQL'
BEGIN;
SELECT hb_model_upload('rolled_back', :'bl');
SELECT hb_model_upload('fraud', :'bl');
SELECT hb_model_activate('fraud', 1);
SELECT hb_model_drop('reg');
SELECT hb_model_grant('reg', 'public');
ROLLBACK;
SQL
now=$(q -c "SELECT c FROM catalog_now")
[ -n "$before" ] && [ "$now" = "$before" ]
tap $? "crash: a rolled-back upload, activation, grant and drop leave the catalog as it was"

# one crash: the postmaster and all its processes get SIGKILL while a
# transaction that uploaded and dropped models is still open
crash_all() {
	local pm children
	pm=$(q -c "SELECT split_part(pg_read_file('postmaster.pid'), E'\n', 1)")
	children=$(pgrep -P "$pm" | tr '\n' ' ')
	[ -n "$pm" ] || return 1
	kill -9 "$pm" $children 2>/dev/null
	for _ in $(seq 1 100); do
		alive=0
		for p in $pm $children; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	[ $alive = 0 ]
}

{
	echo "BEGIN;"
	echo "SELECT hb_model_upload('in_flight', \$j\$$(cat $fx/binary_logistic.json)\$j\$);"
	echo "SELECT hb_model_upload('fraud', \$j\$$(cat $fx/binary_logistic.json)\$j\$);"
	echo "SELECT hb_model_drop('reg');"
	echo "SELECT 'open';"
	echo "SELECT pg_sleep(60);"
} >"$tmp/inflight.sql"
psql -X -q -At -d "$db" -f "$tmp/inflight.sql" >"$tmp/inflight.out" 2>&1 &
for _ in $(seq 1 100); do grep -q open "$tmp/inflight.out" && break; sleep 0.1; done
log_size=$(stat -c %s "$cl_log" 2>/dev/null || echo 0)
t0=$(date +%s.%N)
crash_all
tap $? "crash: SIGKILL to the postmaster and all its children (transaction in flight: $(grep -c open "$tmp/inflight.out") open)"
wait 2>/dev/null
pg_ctlcluster "$cl_version" "$cl_name" start >"$tmp/start.out" 2>&1
wait_ready
rc=$?
t1=$(date +%s.%N)
tap $rc "crash: pg_ctlcluster $cl_version $cl_name start, crash recovery, accepting connections in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
[ $rc = 0 ] || sed 's/^/# /' "$tmp/start.out"
tail -c +"$((log_size + 1))" "$cl_log" 2>/dev/null | grep -qE 'not properly shut down|redo starts|automatic recovery'
tap $? "crash: the server log shows crash recovery (redo from the WAL)"

check_after() {	# $1: label
	local now diff fresh
	now=$(q -c "SELECT c FROM catalog_now")
	[ -n "$before" ] && [ "$now" = "$before" ]
	tap $? "crash ($1): every committed model, version, active version, grant and feature is back; nothing of the in-flight transaction"
	[ "$now" = "$before" ] || { echo "# before: $before"; echo "# after:  $now"; }
	# a new backend loads each model from the catalog and scores as before
	diff=$(q -c "SELECT count(*) FROM scored s JOIN tx t USING (id)
		WHERE hb_predict('fraud', t) IS DISTINCT FROM s.p_fraud
		   OR hb_predict_proba('multi', t) IS DISTINCT FROM s.p_multi
		   OR hb_predict('reg', t) IS DISTINCT FROM s.p_reg")
	[ "$diff" = 0 ]
	tap $? "crash ($1): 5000 rows x 3 models score identically after recovery ($diff differ)"
	fresh=$(q -c "SELECT hb_model_upload('fraud', \$j\$$(cat $fx/reg_logistic.json)\$j\$)")
	expect=$(($(echo "$before" | grep -oE 'fraud:[0-9]+:[0-9]+' | cut -d: -f3) + 1))
	[ "$fresh" = "$expect" ]
	tap $? "crash ($1): uploads continue after recovery (new version $fresh, expected $expect)"
	# back to the committed state, which the next crash must keep
	q -c "SELECT hb_model_activate('fraud', 2)" -c "SELECT hb_model_drop('fraud', $fresh)" >/dev/null
	before=$(q -c "SELECT c FROM catalog_now")
}
check_after "postmaster killed"

# two: SIGKILL to one backend in the middle of an upload; the postmaster
# kills the others, recovers and restarts on its own
big=$(/usr/bin/python3 - "$fx/binary_logistic_deep.json" <<'PY' 2>/dev/null
import json, sys
m = json.load(open(sys.argv[1]))
b = m["learner"]["gradient_booster"]["model"]
trees = b["trees"]
reps = 400
b["trees"] = [dict(t, id=i) for i, t in enumerate(trees * reps)]
b["tree_info"] = b["tree_info"] * reps
b["gbtree_model_param"]["num_trees"] = str(len(b["trees"]))
if "iteration_indptr" in b:
    n = len(b["trees"])
    b["iteration_indptr"] = list(range(0, n + 1))
print(json.dumps(m))
PY
)
if [ -n "$big" ]; then
	printf '%s' "$big" >"$tmp/big.json"
	upload="SELECT hb_model_upload('in_flight', pg_read_binary_file('$tmp/big.json'))"
	chmod 755 "$tmp"; chmod 644 "$tmp/big.json"
else
	upload="SELECT hb_model_upload('in_flight', '$(cat $fx/binary_logistic.json)'), pg_sleep(60)"
fi
victim_pid_file=$tmp/victim.pid
{
	echo "SELECT pg_backend_pid() \\g $victim_pid_file"
	echo "BEGIN;"
	echo "SELECT hb_model_drop('multi');"
	echo "$upload;"
	echo "$upload;"
	echo "$upload;"
} >"$tmp/victim.sql"
psql -X -q -At -d "$db" -f "$tmp/victim.sql" >"$tmp/victim.out" 2>&1 &
for _ in $(seq 1 100); do [ -s "$victim_pid_file" ] && break; sleep 0.05; done
victim=$(head -1 "$victim_pid_file" 2>/dev/null)
# wait until it is inside hb_model_upload
for _ in $(seq 1 200); do
	act=$(psql -X -At -d "$db" -c "SELECT query FROM pg_stat_activity WHERE pid = '${victim:-0}' AND state = 'active'" 2>/dev/null)
	case $act in *hb_model_upload*) break ;; esac
	sleep 0.02
done
sleep 0.1
log_size=$(stat -c %s "$cl_log" 2>/dev/null || echo 0)
t0=$(date +%s.%N)
kill -9 "$victim" 2>/dev/null
tap $? "crash: SIGKILL to backend $victim while it runs: ${act:0:60}..."
wait 2>/dev/null
sleep 0.5
wait_ready
rc=$?
t1=$(date +%s.%N)
tap $rc "crash: the postmaster reset the cluster and accepts connections again in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
tail -c +"$((log_size + 1))" "$cl_log" 2>/dev/null | grep -qE 'terminated by signal 9|all server processes terminated'
tap $? "crash: the server log shows the backend crash and the reinitialization"
check_after "backend killed"
