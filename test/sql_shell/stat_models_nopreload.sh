#!/usr/bin/env bash
# Without shared_preload_libraries hbird scores exactly as before, and
# hb_stat_models / hb_stat_models_reset fail with SQLSTATE 55000 and a hint.
# Starts a throwaway cluster of its own (own_cluster.inc) since the
# cluster of test/run_sql_tests.sh preloads hbird.  Prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }

. test/sql_shell/own_cluster.inc
if ! own_cluster; then
	echo "not ok - stat_models without preload: could not start a cluster of its own"
	exit 0
fi

fx=test/fixtures
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
[ "$(q -c "SELECT current_setting('shared_preload_libraries') ~ 'hbird'")" = f ]
tap $? "stat_models without preload: the cluster does not preload hbird"

out=$(q -v m="$(cat $fx/binary_logistic.json)" 2>&1 <<'SQL'
CREATE EXTENSION hbird;
SELECT hb_model_upload('np', :'m');
CREATE TABLE t AS SELECT g AS id, sin(g) AS amount, cos(g) AS age, 0.5 AS balance,
	   1.0 AS n_tx, 0.0 AS risk, 2.0 AS tenure FROM generate_series(1, 1000) g;
SELECT 'row', count(hb_predict('np', t)) FROM t;
SELECT 'agg', cardinality(hb_predict_agg('np', t)) FROM t;
SELECT 'batch', count(*) FROM hb_predict_batch('np', NULL::t);
SELECT 'topk', count(*) FROM hb_topk('np', 3, NULL::t);
SELECT 'same', count(*) FROM t JOIN hb_predict_batch('np', NULL::t) b ON (b.item).id = t.id
WHERE b.score = hb_predict('np', t);
SQL
)
[ "$(grep -E '^(row|agg|batch|topk|same)\|' <<<"$out" | tr '\n' ' ')" = "row|1000 agg|1000 batch|1000 topk|3 same|1000 " ]
tap $? "stat_models without preload: every entry point scores as before ($(tr '\n' ' ' <<<"$out" | cut -c1-200))"

err=$(psql -X -At -v VERBOSITY=verbose -c "SELECT * FROM hb_stat_models" 2>&1)
grep -q 'ERROR:  55000: hb_stat_models needs hbird to be loaded via shared_preload_libraries' <<<"$err" &&
	grep -q 'HINT:  Add hbird to shared_preload_libraries' <<<"$err"
tap $? "stat_models without preload: the view raises 55000 with a hint ($(head -1 <<<"$err"))"

err=$(psql -X -At -v VERBOSITY=verbose -c "SELECT hb_stat_models_reset()" 2>&1)
grep -q 'ERROR:  55000' <<<"$err"
tap $? "stat_models without preload: reset raises 55000 too"
