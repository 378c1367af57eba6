#!/usr/bin/env bash
# Many small groups under HashAggregate: 20,000 groups of 10 rows.  Each
# hb_predict_agg group state once allocated the buffers of a full batch up
# front (hbird.batch_memory worth of rows: ~3.5 MB for a 6-feature model,
# even for 10 rows), so HashAggregate spilled into thousands of batches
# (12,657; with work_mem = 1GB, 2,000 groups reported 2.1 GB).  The buffers
# now grow with the group.  Then PostgreSQL's own rule for an aggregate
# with an internal state (the planner assumes 8 kB a group) made
# HashAggregate spill as much as array_agg over the same groups; the
# scoring aggregates now declare 1 kB a group (SSPACE).  The check: no
# more batches than array_agg of one float8 a row (what a group keeps: one
# prediction a row), and no more memory than HashAggregate's limit
# (work_mem x hash_mem_multiplier; a quarter more, since groups already
# held keep growing).
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
		-c "SET hbird.batch_scan = ${scan:-on}" \
		-c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT id % 20000, $3 FROM t GROUP BY 1"
}
hash_kb=$(q -c "SELECT round(pg_size_bytes(current_setting('work_mem')) * current_setting('hash_mem_multiplier')::float8 / 1024)")
base=$(plan off on "array_agg(amount)")
echo "$base" | sed 's/^/# array_agg: /'
base_kb=$(echo "$base" | sed -nE 's/.*Memory Usage: ([0-9]+)kB.*/\1/p' | head -1)
base_batches=$(echo "$base" | sed -nE 's/.*Batches: ([0-9]+).*/\1/p' | head -1)
# with the batching scan the groups keep predictions; without it they
# buffer rows and score them
for scan in on off; do
	hash=$(plan off on "hb_predict_agg('m', t)")
	sorted=$(plan on off "hb_predict_agg('m', t)")
	echo "$hash" | sed "s/^/# scan $scan, hash:   /"
	echo "$sorted" | sed "s/^/# scan $scan, sorted: /"
	kb=$(echo "$hash" | sed -nE 's/.*Memory Usage: ([0-9]+)kB.*/\1/p' | head -1)
	batches=$(echo "$hash" | sed -nE 's/.*Batches: ([0-9]+).*/\1/p' | head -1)
	ms_hash=$(echo "$hash" | sed -nE 's/Execution Time: ([0-9.]+) ms/\1/p')
	ms_sorted=$(echo "$sorted" | sed -nE 's/Execution Time: ([0-9.]+) ms/\1/p')
	[ "${batches:-99999}" -le "${base_batches:-0}" ] && [ "${kb:-99999999}" -le $((hash_kb * 5 / 4)) ]
	tap $? "agg groups, batching scan $scan: HashAggregate of 20000 groups of 10 rows spills no more than array_agg and holds at most 1.25 times work_mem x hash_mem_multiplier ($hash_kb kB; batches ${batches:-?} vs ${base_batches:-?}, memory ${kb:-?} kB vs ${base_kb:-?} kB; ${ms_hash:-?} ms vs sorted ${ms_sorted:-?} ms)"
done
