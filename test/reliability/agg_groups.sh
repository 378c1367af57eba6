#!/usr/bin/env bash
# Observation: each hb_predict_agg / hb_topk_agg group state allocates the
# buffers of a full batch up front (hbird.batch_memory worth of rows, 65,536
# rows x features x 8 bytes: ~3.5 MB for a 6-feature model), even for a
# group of 10 rows.  Pages that are never touched stay virtual, but
# HashAggregate accounts them: with many groups it spills into thousands of
# batches (with a large work_mem it reports gigabytes of "Memory Usage")
# and runs slower than the sorted plan.
#   bash test/reliability/agg_groups.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
db=hb_rel_agg_groups
new_db
q -v a="$(cat $fx/binary_logistic.json)" -v table="$fx/agg_groups_table.sql" >/dev/null <<'SQL'
SELECT hb_model_upload('m', :'a');
\i :table
SQL
plan() {
	q -c "SET max_parallel_workers_per_gather = 0" -c "SET enable_sort = $1" -c "SET enable_hashagg = $2" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT id % 20000, hb_predict_agg('m', t) FROM t GROUP BY 1"
}
hash=$(plan off on)
sorted=$(plan on off)
echo "$hash" | sed 's/^/# hash:   /'
echo "$sorted" | sed 's/^/# sorted: /'
kb=$(echo "$hash" | sed -nE 's/.*Memory Usage: ([0-9]+)kB.*/\1/p' | head -1)
ms_hash=$(echo "$hash" | sed -nE 's/Execution Time: ([0-9.]+) ms/\1/p')
ms_sorted=$(echo "$sorted" | sed -nE 's/Execution Time: ([0-9.]+) ms/\1/p')
batches=$(echo "$hash" | sed -nE 's/.*Batches: ([0-9]+).*/\1/p' | head -1)
[ "${batches:-99}" -le 4 ]
tap $? "agg groups: HashAggregate of 20000 groups of 10 rows fits work_mem (batches ${batches:-?}, memory ${kb:-?} kB; ${ms_hash:-?} ms vs sorted ${ms_sorted:-?} ms)"
