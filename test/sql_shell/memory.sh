#!/usr/bin/env bash
# Scoring millions of rows through every SQL entry point keeps the backend's
# memory flat: after a warm-up run of each statement, HB_MEMORY_RUNS more
# runs may not grow the backend's anonymous memory (RssAnon, read from
# /proc/self/status by the backend itself) nor its memory contexts
# (pg_backend_memory_contexts).  Also: the plan cache stays within
# hbird.plan_cache_entries while version after version is scored.  Runs
# inside a throwaway cluster (test/run_sql_tests.sh); prints TAP lines with
# the figures.
#
#   HB_MEMORY_ROWS   rows of the generated table (default 2000000)
#   HB_MEMORY_RUNS   runs after the warm-up (default 3)
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=test/fixtures
db=hb_memory
rows=${HB_MEMORY_ROWS:-2000000}
runs=${HB_MEMORY_RUNS:-3}
rss_tol_kb=1024			# RssAnon growth allowed per entry point
ctx_tol=65536			# memory-context growth allowed per entry point (bytes)
tmp=$(mktemp -d /tmp/hbird-memory.XXXXXX)
tap() { if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; fi; }
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }

dropdb --if-exists "$db" >/dev/null 2>&1
createdb "$db"
trap 'rm -rf "$tmp"; dropdb --if-exists "$db" >/dev/null 2>&1' EXIT
q -v a="$(cat $fx/binary_logistic.json)" -v rows="$rows" >/dev/null <<'SQL'
CREATE EXTENSION hbird;
SELECT hb_model_upload('m', :'a');
CREATE UNLOGGED TABLE big AS
SELECT g AS id, sin(g) AS amount, cos(g) AS age,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE sin(g * 0.3) END AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0::float8 AS tenure
FROM generate_series(1, :rows) g;
VACUUM ANALYZE big;
CREATE TABLE memlog (entry text, phase text, rss_kb bigint, hwm_kb bigint, ctx_bytes bigint,
					 at timestamptz DEFAULT clock_timestamp());
-- what this backend holds: anonymous resident memory, its peak (all
-- resident memory), and the bytes of its memory contexts
CREATE FUNCTION mem_sample(entry text, phase text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO memlog (entry, phase, rss_kb, hwm_kb, ctx_bytes)
	SELECT entry, phase,
		   (regexp_match(s, 'RssAnon:\s+(\d+)'))[1]::bigint,
		   (regexp_match(s, 'VmHWM:\s+(\d+)'))[1]::bigint,
		   (SELECT sum(total_bytes) FROM pg_backend_memory_contexts)
	FROM pg_read_file('/proc/self/status') AS s
$$;
SQL
tap $? "memory: $rows-row table set up"

names=(hb_predict_row hb_predict_array hb_predict_proba hb_predict_margin hb_predict_batch
	hb_predict_agg hb_predict_agg_groups hb_topk hb_topk_agg hb_topk_agg_groups
	scan_order_by_limit scan_class_filter)
stmts=(
	"SELECT count(hb_predict('m', b)) FROM big b"
	"SELECT count(hb_predict('m', ARRAY[amount, age, balance, n_tx, risk, tenure])) FROM big b"
	"SELECT count(hb_predict_proba('m', b)) FROM big b"
	"SELECT count(hb_predict_margin('m', b)) FROM big b"
	"SELECT count(*), sum(score) FROM hb_predict_batch('m', NULL::big)"
	"SELECT cardinality(hb_predict_agg('m', b)) FROM big b"
	"SELECT count(*) FROM (SELECT id % 1000, hb_predict_agg('m', b) FROM big b GROUP BY 1) g"
	"SELECT count(*) FROM hb_topk('m', 10, NULL::big)"
	"SELECT cardinality(hb_topk_agg('m', 10, b)) FROM big b"
	"SELECT count(*) FROM (SELECT id % 1000, hb_topk_agg('m', 3, b) FROM big b GROUP BY 1) g"
	"SELECT count(*) FROM (SELECT id FROM big b ORDER BY hb_predict('m', b) DESC LIMIT 10) s"
	"SELECT count(*) FROM big b WHERE hb_predict_class('m', b) = 1"
)

# one session runs everything; serial plans, so this backend does the work
{
	echo "SET max_parallel_workers_per_gather = 0;"
	echo "SELECT mem_sample('start', 'start');"
	for i in "${!names[@]}"; do
		echo "${stmts[$i]};"
		echo "${stmts[$i]};"
		echo "SELECT mem_sample('${names[$i]}', 'warm');"
		for ((r = 1; r <= runs; r++)); do
			echo "${stmts[$i]};"
		done
		echo "SELECT mem_sample('${names[$i]}', 'after');"
	done
} >"$tmp/session.sql"
start=$(date +%s)
q -f "$tmp/session.sql" >"$tmp/session.out" 2>&1
rc=$?
tap $rc "memory: every entry point scored $rows rows $((runs + 2)) times in $(($(date +%s) - start)) s"
[ $rc = 0 ] || sed 's/^/# /' "$tmp/session.out" | head -5

for i in "${!names[@]}"; do
	row=$(q -F ' ' -c "SELECT w.rss_kb, a.rss_kb, w.ctx_bytes, a.ctx_bytes, a.hwm_kb
		FROM memlog w JOIN memlog a USING (entry)
		WHERE entry = '${names[$i]}' AND w.phase = 'warm' AND a.phase = 'after'")
	read -r rss0 rss1 ctx0 ctx1 hwm <<<"$row"
	[ -n "${ctx1:-}" ] && [ "$rss1" -le $((rss0 + rss_tol_kb)) ] && [ "$ctx1" -le $((ctx0 + ctx_tol)) ]
	tap $? "memory: ${names[$i]} x$runs on $rows rows: RssAnon ${rss0:-?} -> ${rss1:-?} kB (limit +$rss_tol_kb), contexts ${ctx0:-?} -> ${ctx1:-?} bytes (limit +$ctx_tol); peak resident so far ${hwm:-?} kB (VmHWM, shared buffers included)"
done

# the whole session: from after the first entry point's warm-up to the end
row=$(q -F ' ' -c "SELECT (SELECT rss_kb FROM memlog WHERE entry = '${names[0]}' AND phase = 'warm'),
	(SELECT rss_kb FROM memlog ORDER BY at DESC LIMIT 1),
	(SELECT hwm_kb FROM memlog ORDER BY at DESC LIMIT 1)")
read -r first last hwm <<<"$row"
echo "# memory: session RssAnon ${first:-?} kB after the first warm-up, ${last:-?} kB at the end; peak resident ${hwm:-?} kB (VmHWM)"

# the plan cache: 40 versions, each scored once by one long session with
# room for 4 plans; entries stay at 4 and the cache's memory does not grow
# with the number of versions seen
{
	echo "SET hbird.plan_cache_entries = 4;"
	for v in $(seq 1 40); do
		[ $((v % 2)) = 1 ] && f=binary_logistic || f=reg_logistic
		echo "SELECT hb_model_upload('pc', \$json\$$(cat $fx/$f.json)\$json\$) \\gset"
		echo "SELECT hb_predict('pc', b) IS NOT NULL FROM big b WHERE id = 1 \\g /dev/null"
		echo "INSERT INTO memlog (entry, phase, ctx_bytes, rss_kb)
			  SELECT 'plan_cache', '$v', coalesce(sum(total_bytes) FILTER (WHERE name = 'hbird plan cache' OR parent = 'hbird plan cache'), 0),
					 count(*) FILTER (WHERE parent = 'hbird plan cache')
			  FROM pg_backend_memory_contexts;"
	done
} >"$tmp/cache.sql"
q -f "$tmp/cache.sql" >"$tmp/cache.out" 2>&1
row=$(q -F ' ' -c "SELECT max(rss_kb), (SELECT ctx_bytes FROM memlog WHERE entry = 'plan_cache' AND phase = '4'),
	max(ctx_bytes), (SELECT ctx_bytes FROM memlog WHERE entry = 'plan_cache' AND phase = '40'), count(*)
	FROM memlog WHERE entry = 'plan_cache'")
read -r max_entries ctx4 ctxmax ctx40 n <<<"$row"
[ "${n:-0}" = 40 ] && [ "$max_entries" -le 4 ] && [ "$ctxmax" -le $((ctx4 + ctx4 / 2)) ]
tap $? "memory: plan cache over 40 versions with hbird.plan_cache_entries = 4: at most ${max_entries:-?} entries; cache ${ctx4:-?} bytes after 4 versions, ${ctx40:-?} after 40 (max ${ctxmax:-?})"

# A materialized batched function (WITH ORDINALITY is not streamed) frees
# each batch's per-row allocations (here the arrays of three targets) before
# it reads the next batch: while it scores the whole table, the backend's
# resident peak may rise above where it started by at most what one batch
# and the result's tuplestore (spilled beyond work_mem) hold (measured: 19
# MB on 2M rows), not by what every row allocated (the arrays and the rows'
# datums: 270 MB on 2M rows when the callback ran in the caller's context).  The peak
# is reset first (writing 5 to /proc/self/clear_refs, from the backend
# itself with COPY); a warm-up run touches the table's shared buffers first.
peak_tol_kb=$((80 * 1024))
# peak SETUP STMT WHAT: after SETUP and a warm-up run of STMT, the backend's
# resident peak while STMT runs again may rise above where it started by at
# most peak_tol_kb
peak() {
	local row rss0 hwm
	row=$(q -F ' ' <<SQL 2>&1
SET max_parallel_workers_per_gather = 0;
$1
$2 \g /dev/null
COPY (SELECT 5) TO '/proc/self/clear_refs';
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmRSS:\s+(\d+)'))[1] AS rss0 \gset
$2 \g /dev/null
SELECT :rss0, (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1];
SQL
)
	read -r rss0 hwm <<<"$row"
	[ -n "${hwm:-}" ] && [ "$hwm" -le $((rss0 + peak_tol_kb)) ]
	tap $? "memory: $3: resident peak ${rss0:-?} -> ${hwm:-?} kB (limit +$peak_tol_kb)"
	[ -n "${hwm:-}" ] || echo "$row" | sed 's/^/# /' | head -5
}
peak "\\set mt \`cat $fx/multi_target.json\`
SELECT hb_model_upload('mt', :'mt') \\g /dev/null" \
	"SELECT count(*), sum(cardinality(targets)) FROM hb_predict_targets_batch('mt', NULL::big) WITH ORDINALITY" \
	"materialized hb_predict_targets_batch over $rows rows"

# hb_topk with a k beyond the rows holds them in a bounded sort once they
# outgrow work_mem (to disk here), as ORDER BY ... LIMIT k does: the peak
# may rise by what the result's tuplestore and the scan's batches hold,
# not by every row (399 MB on 2M rows when the heap kept them all).
peak "SET work_mem = '1MB';" "SELECT count(*) FROM hb_topk('m', 2000000000, NULL::big)" \
	"hb_topk with k beyond the $rows rows at work_mem 1MB"

# The approximate hb_topk, on a tuning planted so that no row reaches the
# cut and every row may wait (the best 10^7 by cheap score): the waiting
# rows are scored early whenever they outgrow work_mem (held to the end,
# as at work_mem 2GB: a peak of +537 MB on 2M rows).  With a k beyond the
# rows, k rows would not fit work_mem and it ranks exactly (+624 MB when it
# held them all, as at work_mem 2GB).
peak "SET work_mem = '1MB';
SET client_min_messages = warning;
SELECT count(*) FROM hb_tune('m', 'SELECT * FROM big WHERE id <= 20000', kind => 'topk', k => 10, target => 0.9) \\g /dev/null
UPDATE hbird.tuning SET ratio = 1e6, cheap_cut = 1e300, bar_slope = NULL, bar_floor = NULL, bar_margin = NULL,
	gate_features = NULL, gate_params = NULL, gate_slack = NULL,
	refine_trees = NULL, refine_scale = NULL, refine_shift = NULL, refine_slack = NULL
WHERE name = 'm' AND kind = 'topk';" \
	"SELECT count(*) FROM hb_topk('m', 10, NULL::big, mode => 'approx')" \
	"approximate hb_topk whose $rows rows all wait, at work_mem 1MB"
peak "SET work_mem = '1MB';" "SELECT count(*) FROM hb_topk('m', 2000000000, NULL::big, mode => 'approx')" \
	"approximate hb_topk with k beyond the $rows rows at work_mem 1MB"
# The plain query's approximate top-K on the same tuning waits as hb_topk
# does (every row here: it kept at most 200,000 before its waiting rows
# were held within work_mem) and hands them up whenever they outgrow it
peak "SET work_mem = '1MB';" "SELECT id FROM big b ORDER BY hb_predict('m', b) DESC LIMIT 10" \
	"plain ORDER BY hb_predict(...) DESC LIMIT 10, approximate, whose $rows rows all wait, at work_mem 1MB"
row=$(q -F ' ' <<'SQL' 2>&1
SET work_mem = '1MB';
SET max_parallel_workers_per_gather = 0;
CREATE FUNCTION scored_rows(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF l ~ 'Rows Scored' THEN
			RETURN substring(l FROM 'Rows Scored: (\d+)')::bigint;
		END IF;
	END LOOP;
	RETURN NULL;
END $$;
SELECT count(*) FROM hb_topk('m', 10, NULL::big, mode => 'approx') \g /dev/null
SELECT rows_fully_scored AS topk FROM hb_topk_stats() \gset
SELECT :topk, scored_rows($$SELECT id FROM big b ORDER BY hb_predict('m', b) DESC LIMIT 10$$);
SQL
)
read -r topk_scored plain_scored <<<"$row"
[ "${topk_scored:-x}" = "$rows" ] && [ "${plain_scored:-y}" = "$rows" ]
tap $? "memory: with every row waiting, hb_topk and the plain query score all $rows rows (got ${topk_scored:-?} and ${plain_scored:-?})"
[ "${topk_scored:-x}" = "$rows" ] || echo "$row" | sed 's/^/# /' | head -5

# Uploading a large model: a 10 MB XGBoost JSON file (the fixture's trees
# repeated) may raise the backend's peak resident memory (VmHWM, which also
# counts the shared buffers the insert touches) by at most 8 times its size.
# The text argument is stored as it came, the compiled plan and the IR are
# freed once the image is written, and numbers in the parsed document are
# packed (docs/reliability.md, "Memory").
big_model=$tmp/big_model.json
/usr/bin/python3 - "$fx/binary_logistic.json" "$big_model" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
gb = m["learner"]["gradient_booster"]["model"]
trees = gb["trees"]
out, size = [], 0
while size < 10 * 1024 * 1024:
    for t in trees:
        t = dict(t, id=len(out))
        out.append(t)
        size += len(json.dumps(t))
gb["trees"] = out
gb["tree_info"] = [0] * len(out)
gb["gbtree_model_param"]["num_trees"] = str(len(out))
json.dump(m, open(sys.argv[2], "w"))
PY
chmod 644 "$big_model"
bytes=$(stat -c %s "$big_model")
# (read by the server: a 10 MB literal in the query text would add
# PostgreSQL's own copies of it to the figure)
chmod 755 "$tmp"
row=$(q -F ' ' -v path="$big_model" <<'SQL'
SELECT (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1] AS hwm \gset before_
SELECT hb_model_upload('big_upload', pg_read_binary_file(:'path')) AS v \gset
SELECT :before_hwm, (regexp_match(pg_read_file('/proc/self/status'), 'VmHWM:\s+(\d+)'))[1];
SQL
)
hwm0=${row%% *}
hwm1=${row##* }
grow_kb=$(( ${hwm1:-0} - ${hwm0:-0} ))
[ -n "$hwm0" ] && [ "$grow_kb" -le $((8 * bytes / 1024)) ]
tap $? "memory: uploading a $((bytes / 1024)) kB model raised the backend's peak by $grow_kb kB ($(awk -v g="$grow_kb" -v b="$bytes" 'BEGIN { printf "%.1f", g * 1024 / b }')x the file; limit 8x)"
q -c "SELECT hb_model_drop('big_upload')" >/dev/null
