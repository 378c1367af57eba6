#!/usr/bin/env bash
# Repro: in PL/pgSQL, "RETURN hb_predict(...)" (a simple expression) keeps
# the call site's fn_extra for the whole transaction, so the model version it
# resolved on the first call is used by every later statement of the
# transaction: in READ COMMITTED, a statement after another session's
# committed upload still scores with the old version, and a statement after
# a committed drop still scores the dropped model instead of raising 42704.
# (A PL/pgSQL query, SELECT ... INTO, is not affected.)
#   bash test/reliability/plpgsql_version.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
db=hb_rel_plpgsql
new_db
q -v a="$(cat $fx/binary_logistic.json)" >/dev/null <<'SQL'
SELECT hb_model_upload('m', :'a');
CREATE FUNCTION f_simple() RETURNS float8 LANGUAGE plpgsql AS
$$ BEGIN RETURN hb_predict('m', ARRAY[0.5, -1, 0.25, 1, 0, 2]::float8[]); END $$;
CREATE FUNCTION f_query() RETURNS float8 LANGUAGE plpgsql AS
$$ DECLARE r float8; BEGIN SELECT hb_predict('m', ARRAY[0.5, -1, 0.25, 1, 0, 2]::float8[]) INTO r; RETURN r; END $$;
SQL
# session A: two statements in one READ COMMITTED transaction; session B
# commits a new version (then a drop) between them
tmp=$(mktemp -d /tmp/hbird-plpgsql.XXXXXX)
trap 'rm -rf "$tmp"; dropdb --if-exists "$db" >/dev/null 2>&1' EXIT
cat >"$tmp/a.sql" <<'SQL'
BEGIN;
SELECT 'first', f_simple(), f_query();
SELECT pg_sleep(1.5);
SELECT 'second', f_simple(), f_query(), hb_predict('m', ARRAY[0.5, -1, 0.25, 1, 0, 2]::float8[]);
COMMIT;
SQL
psql -X -q -At -F ' ' -d "$db" -f "$tmp/a.sql" >"$tmp/a.out" 2>&1 &
sleep 0.7
q -c "SELECT hb_model_upload('m', \$j\$$(cat $fx/binary_logitraw.json)\$j\$)" >/dev/null
wait
read -r _ s1 q1 <<<"$(grep '^first' "$tmp/a.out")"
read -r _ s2 q2 d2 <<<"$(grep '^second' "$tmp/a.out")"
echo "# first statement: simple $s1, query $q1; after the upload: simple $s2, query $q2, top level $d2"
[ -n "${q2:-}" ] && [ "$s2" = "$q2" ] && [ "$q2" != "$q1" ]
tap $? "plpgsql: a simple expression sees the version committed before its statement (got $s2, the statement sees $q2, old version $q1)"

cat >"$tmp/b.sql" <<'SQL'
BEGIN;
SELECT 'first', f_simple();
SELECT pg_sleep(1.5);
SELECT 'second', f_simple();
COMMIT;
SQL
psql -X -q -At -F ' ' -d "$db" -f "$tmp/b.sql" >"$tmp/b.out" 2>&1 &
sleep 0.7
q -c "SELECT hb_model_drop('m')" >/dev/null
wait
sed 's/^/# after drop: /' "$tmp/b.out"
grep -q 'model "m" does not exist' "$tmp/b.out"
tap $? "plpgsql: a simple expression after a committed drop raises 42704 (instead of scoring the dropped model)"
