#!/usr/bin/env bash
# Repro: a model name that changes from row to row within a statement
# (SELECT hb_predict(t.model, t) FROM t) makes the call site resolve the name
# again on every change and allocate new buffers and a new binding in the
# statement-lifetime fn_mcxt each time: memory grows by about 1.3 kB per row
# until the statement ends, and scoring is ~8x slower.
#   bash test/reliability/name_per_row.sh [ROWS]     (default 200000)
# Prints TAP lines; "not ok" while the bug is there.
set -uo pipefail
source "$(dirname "$0")/common.sh"
db=hb_rel_name_per_row
rows=${1:-200000}
new_db
q -v a="$(cat $fx/binary_logistic.json)" -v b="$(cat $fx/reg_logistic.json)" -v rows="$rows" >/dev/null <<'SQL'
SELECT hb_model_upload('m_a', :'a');
SELECT hb_model_upload('m_b', :'b');
CREATE TABLE t AS
SELECT g AS id, CASE WHEN g % 2 = 0 THEN 'm_a' ELSE 'm_b' END AS model,
	   sin(g) AS amount, cos(g) AS age, sin(g * 0.3) AS balance, cos(g * 0.2) AS n_tx,
	   sin(g * 0.1) AS risk, (g % 9) / 4.0::float8 AS tenure
FROM generate_series(1, :rows) g;
SQL
out=$(q -F ' ' <<'SQL'
SET max_parallel_workers_per_gather = 0;
CREATE FUNCTION pg_temp.hwm() RETURNS bigint LANGUAGE sql AS
$$ SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1]::bigint $$;
SELECT count(hb_predict('m_a', t)) FROM t \g /dev/null
SELECT pg_temp.hwm() AS h0, extract(epoch FROM clock_timestamp()) AS t0 \gset
SELECT count(hb_predict(CASE WHEN id <= (SELECT count(*) / 2 FROM t) THEN 'm_a' ELSE 'm_b' END, t)) FROM t \g /dev/null
SELECT pg_temp.hwm() AS h1, extract(epoch FROM clock_timestamp()) AS t1 \gset
SELECT count(hb_predict(model, t)) FROM t \g /dev/null
SELECT pg_temp.hwm() AS h2, extract(epoch FROM clock_timestamp()) AS t2 \gset
SELECT :h1 - :h0, round(((:t1 - :t0) * 1000)::numeric), :h2 - :h1, round(((:t2 - :t1) * 1000)::numeric);
SQL
)
read -r grow_once ms_once grow_alt ms_alt <<<"$out"
echo "# $rows rows: name changes once: peak +${grow_once} kB, ${ms_once} ms; name alternates every row: peak +${grow_alt} kB, ${ms_alt} ms"
[ -n "${grow_alt:-}" ] && [ "$grow_alt" -le 32768 ]
tap $? "name per row: peak memory of the backend grows ${grow_alt:-?} kB over $rows rows (limit 32768 kB)"
[ -n "${ms_alt:-}" ] && [ "$ms_alt" -le $((3 * ms_once + 50)) ]
tap $? "name per row: alternating names cost ${ms_alt:-?} ms vs ${ms_once:-?} ms for one change (limit 3x)"
