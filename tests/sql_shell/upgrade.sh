#!/usr/bin/env bash
# ALTER EXTENSION hbird UPDATE from every earlier released version keeps
# models, versions, grants and their predictions, and ends with the same
# extension objects as a fresh CREATE EXTENSION.  Runs inside a throwaway
# cluster (tests/run_sql_tests.sh); prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=tests/fixtures
trap 'dropdb --if-exists hb_up_old >/dev/null 2>&1; dropdb --if-exists hb_up_new >/dev/null 2>&1' EXIT

tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

current=$(sed -n "s/^default_version = '\(.*\)'/\1/p" hbird.control)
# released versions: every install or upgrade script's starting version
olds=$(ls sql/hbird--*.sql | sed -n 's/.*hbird--\([0-9.]*\)\(--.*\)\{0,1\}\.sql/\1/p' | sort -uV | grep -vx "$current")

# the objects of the extension, described, in a stable order
members="SELECT pg_describe_object(classid, objid, 0) FROM pg_depend
		 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
		   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'hbird')
		 ORDER BY 1"
scores="SELECT string_agg(format('%s:%s:%s', id, hb_predict('fraud', t), hb_predict_proba('multi', t)), ' ' ORDER BY id) FROM tx t"

dropdb --if-exists hb_up_new >/dev/null 2>&1
createdb hb_up_new && q -d hb_up_new -c "CREATE EXTENSION hbird"
fresh=$(q -d hb_up_new -c "$members")

for old in $olds; do
	dropdb --if-exists hb_up_old >/dev/null 2>&1
	createdb hb_up_old
	q -d hb_up_old -v bin="$(cat $fx/binary_logistic.json)" -v multi="$(cat $fx/multi_softprob.json)" \
		-v reg="$(cat $fx/reg_squarederror.json)" -v old="$old" >/dev/null <<'SQL'
CREATE EXTENSION hbird VERSION :'old';
SELECT hb_model_upload('fraud', :'bin');
SELECT hb_model_upload('fraud', :'reg');
SELECT hb_model_activate('fraud', 1);
SELECT hb_model_upload('multi', :'multi');
SELECT hb_model_grant('fraud', 'public');
CREATE TABLE tx AS
SELECT g AS id, sin(g) AS amount, cos(g) AS age,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE sin(g * 0.3) END AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0 AS tenure
FROM generate_series(1, 500) g;
SQL
	tap $? "upgrade from $old: models uploaded at $old"
	before_models=$(q -d hb_up_old -c "SELECT string_agg(format('%s/%s/%s/%s', name, version, active, sha256), ' ' ORDER BY name, version) FROM hb_models")
	before_grants=$(q -d hb_up_old -c "SELECT string_agg(format('%s/%s', name, grantee), ' ' ORDER BY name, grantee) FROM hb_model_grants")
	before_scores=$(q -d hb_up_old -c "$scores")

	q -d hb_up_old -c "ALTER EXTENSION hbird UPDATE"
	tap $? "upgrade from $old: ALTER EXTENSION hbird UPDATE"
	v=$(q -d hb_up_old -c "SELECT extversion FROM pg_extension WHERE extname = 'hbird'")
	[ "$v" = "$current" ]; tap $? "upgrade from $old: now at $current (got $v)"

	[ "$(q -d hb_up_old -c "SELECT string_agg(format('%s/%s/%s/%s', name, version, active, sha256), ' ' ORDER BY name, version) FROM hb_models")" = "$before_models" ]
	tap $? "upgrade from $old: models, versions and active versions kept"
	[ "$(q -d hb_up_old -c "SELECT string_agg(format('%s/%s', name, grantee), ' ' ORDER BY name, grantee) FROM hb_model_grants")" = "$before_grants" ]
	tap $? "upgrade from $old: grants kept"
	after_scores=$(q -d hb_up_old -c "$scores")
	[ -n "$before_scores" ] && [ "$after_scores" = "$before_scores" ]
	tap $? "upgrade from $old: 500 rows score identically before and after"
	upgraded=$(q -d hb_up_old -c "$members")
	diff <(echo "$fresh") <(echo "$upgraded") >&2
	tap $? "upgrade from $old: same extension objects as a fresh install ($(echo "$fresh" | wc -l) objects)"
done
[ -n "$olds" ] || echo "ok - upgrade # SKIP no earlier version"
