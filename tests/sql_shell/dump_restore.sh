#!/usr/bin/env bash
# pg_dump / pg_restore round trip: models, versions, active version, grants
# and features come back, and score exactly as before.  Runs inside a
# throwaway cluster (tests/run_sql_tests.sh); prints TAP lines.
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=tests/fixtures
dump=$(mktemp /tmp/hbird-dump.XXXXXX)
trap 'rm -f "$dump"; dropdb --if-exists hb_dump_src >/dev/null 2>&1; dropdb --if-exists hb_dump_dst >/dev/null 2>&1' EXIT

tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

dropdb --if-exists hb_dump_src >/dev/null 2>&1
dropdb --if-exists hb_dump_dst >/dev/null 2>&1
createdb hb_dump_src && createdb hb_dump_dst
q -d hb_dump_src -v bin="$(cat $fx/binary_logistic.json)" -v multi="$(cat $fx/multi_softprob.json)" \
	-v reg="$(cat $fx/reg_squarederror.json)" >/dev/null <<'SQL'
CREATE EXTENSION hbird;
SELECT hb_model_upload('fraud', :'bin');
SELECT hb_model_upload('fraud', :'reg');
SELECT hb_model_activate('fraud', 1);
SELECT hb_model_upload('multi', :'multi');
SELECT hb_model_grant('fraud', 'public');
CREATE TABLE tx AS
SELECT g AS id, sin(g) AS amount, cos(g) AS age,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE sin(g * 0.3) END AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0 AS tenure
FROM generate_series(1, 2000) g;
CREATE TABLE scored AS
SELECT id, hb_predict('fraud', t) AS p, hb_predict_proba('multi', t) AS pm FROM tx t;
SQL
tap $? "dump/restore: source database set up"

pg_dump -Fc -d hb_dump_src -f "$dump"
tap $? "dump/restore: pg_dump"
pg_restore -d hb_dump_dst "$dump"
tap $? "dump/restore: pg_restore"

src=$(q -d hb_dump_src -c "SELECT string_agg(format('%s/%s/%s/%s', name, version, active, sha256), ' ' ORDER BY name, version) FROM hb_models")
dst=$(q -d hb_dump_dst -c "SELECT string_agg(format('%s/%s/%s/%s', name, version, active, sha256), ' ' ORDER BY name, version) FROM hb_models")
[ -n "$src" ] && [ "$src" = "$dst" ]
tap $? "dump/restore: same models, versions and active versions ($dst)"

grants=$(q -d hb_dump_dst -c "SELECT string_agg(name || ':' || grantee::text, ',') FROM hb_model_grants")
[ "$grants" = "fraud:-" ]
tap $? "dump/restore: grants kept ($grants)"

diff=$(q -d hb_dump_dst -c "SELECT count(*) FROM scored s JOIN tx t USING (id)
	WHERE hb_predict('fraud', t) IS DISTINCT FROM s.p OR hb_predict_proba('multi', t) IS DISTINCT FROM s.pm")
rows=$(q -d hb_dump_dst -c "SELECT count(*) FROM scored")
[ "$diff" = 0 ] && [ "$rows" = 2000 ]
tap $? "dump/restore: identical predictions after restore ($rows rows, $diff differ)"

# Owners and grantees travel by name: a model owned by a role and granted
# to another, restored into a cluster whose roles have other OIDs (created
# in the other order, after a filler role), keeps the same role names.
q -d hb_dump_src -v bin="$(cat $fx/binary_logistic.json)" >/dev/null <<'SQL'
CREATE ROLE regress_dump_owner;
CREATE ROLE regress_dump_reader;
GRANT EXECUTE ON FUNCTION hb_model_upload(text, text, text, text[]),
	hb_model_grant(text, name) TO regress_dump_owner;
SET ROLE regress_dump_owner;
SELECT hb_model_upload('owned', :'bin');
SELECT hb_model_grant('owned', 'regress_dump_reader');
RESET ROLE;
GRANT SELECT ON tx TO regress_dump_reader;
SQL
roles_src=$(q -d hb_dump_src -c "SELECT string_agg(format('%s:%s:%s', m.name, m.owner, g.grantee), ',')
	FROM hbird.model m JOIN hbird.model_grant g USING (name) WHERE m.name = 'owned'")
oids_src=$(q -d hb_dump_src -c "SELECT owner::oid FROM hbird.model WHERE name = 'owned'")
pg_dump -Fc -d hb_dump_src -f "$dump"
q -d hb_dump_src -c "SET client_min_messages = warning" \
	-c "DROP OWNED BY regress_dump_owner, regress_dump_reader" \
	-c "DROP ROLE regress_dump_owner, regress_dump_reader"
(
	. tests/sql_shell/own_cluster.inc
	own_cluster || { echo "not ok - dump/restore: second cluster did not start"; exit 0; }
	q -c "CREATE ROLE regress_dump_filler" -c "CREATE ROLE regress_dump_reader" \
		-c "CREATE ROLE regress_dump_owner" -c "CREATE DATABASE hb_dump_other" >/dev/null
	pg_restore -d hb_dump_other "$dump" 2>"$own_cluster_dir/restore.err"
	tap $? "dump/restore: restored into a second cluster"
	roles_dst=$(q -d hb_dump_other -c "SELECT string_agg(format('%s:%s:%s', m.name, m.owner, g.grantee), ',')
		FROM hbird.model m JOIN hbird.model_grant g USING (name) WHERE m.name = 'owned'")
	oids_dst=$(q -d hb_dump_other -c "SELECT owner::oid FROM hbird.model WHERE name = 'owned'")
	[ -n "$roles_src" ] && [ "$roles_src" = "$roles_dst" ] && [ "$oids_src" != "$oids_dst" ]
	tap $? "dump/restore: owner and grantee restored by name ($roles_dst; owner OID $oids_src there, $oids_dst here)"
	scores=$(q -d hb_dump_other -c "SET ROLE regress_dump_reader" -c "SELECT count(hb_predict('owned', t)) FROM tx t")
	[ "$scores" = 2000 ]
	tap $? "dump/restore: the restored grantee scores the restored model ($scores rows)"
)
