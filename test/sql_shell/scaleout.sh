#!/usr/bin/env bash
# Scale-out (docs/scale-out.md) on five throwaway clusters of its own, on
# Unix sockets in one temporary directory: a coordinator whose table t_dist
# is hash-partitioned into two postgres_fdw partitions on two shard
# clusters, a streaming standby of the coordinator, and a coordinator that
# does not preload hbird.  Checks that
#   - the scoring calls run on the shards (EXPLAIN VERBOSE's Remote SQL),
#     those of a plain target list in the shards' scans;
#   - sums, filters, per-group aggregates, ORDER BY ... LIMIT and hb_topk
#     over t_dist equal the same queries over t_local, a single-node copy
#     (hb_topk's ties too: in the order one node reads the partitions)
#     (the second shard's table has its columns in another order: rows bind
#     by name);
#   - hb_model_distribute puts a version on every shard inside the caller's
#     transaction, hb_model_shards shows it, and a shard at another version
#     makes the query fail with an error naming the shard and both versions;
#   - the standby scores every model with every form after an upload and an
#     activation on the primary, without writing anything.
# Prints TAP lines; needs hbird installed (scripts/test.sh installs it).
set -uo pipefail
cd "$(dirname "$0")/../.."
fx=$(pwd)/test/fixtures
bin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
[ -x "$bin/initdb" ] || bin=/usr/lib/postgresql/15/bin
dir=$(mktemp -d /tmp/hbird-scaleout.XXXXXX)
[ "$(id -u)" = 0 ] && chown postgres "$dir"
nodes=()

as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
	for n in "${nodes[@]}"; do
		as_pg "$bin/pg_ctl" -D "$dir/$n" -m immediate stop >/dev/null 2>&1
	done
	rm -rf "$dir"
}
trap cleanup EXIT

tap() { if [ "$1" = 0 ]; then echo "ok - scaleout: $2"; else echo "not ok - scaleout: $2"; fi; }
# q PORT [psql args]: a query on one node, unaligned, errors stop it
q() { local port=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres "$@"; }
# fails PATTERN WHAT [psql args]: the statements on the coordinator end in
# an error matching PATTERN (grep -E)
fails() {
	local pat=$1 what=$2 err
	shift 2
	err=$(q $C "$@" 2>&1)
	grep -Eq "$pat" <<<"$err"
	tap $? "$what (got: $(grep -m1 ERROR <<<"$err"))"
}
# same: $1 = $2 (and no error in them), else print both
same() {
	if [ "$1" = "$2" ] && [ -n "$1" ] && ! grep -q 'ERROR' <<<"$1"; then return 0; fi
	# cut long output, and end the line: the TAP line that follows must
	# start one of its own to be counted
	printf '# got:  %s\n# want: %s\n' "$1" "$2" | head -c 2000 | sed 's/^/# /' | cut -c1-400
	echo
	return 1
}

# start_node NAME PORT [PRELOAD]: PRELOAD (default hbird) is
# shared_preload_libraries, empty for a node that loads hbird when it is used
start_node() {
	local name=$1 port=$2 preload=${3-hbird}
	nodes+=("$name")
	as_pg "$bin/pg_ctl" -D "$dir/$name" -w -l "$dir/$name.log" \
		-o "-c listen_addresses='' -c unix_socket_directories=$dir -c port=$port -c shared_preload_libraries=$preload -c cluster_name=$name -c max_parallel_workers_per_gather=0" \
		start >/dev/null
}
init_node() {
	as_pg "$bin/initdb" -D "$dir/$1" -A trust -U postgres >"$dir/$1.initdb.log" 2>&1 &&
		start_node "$@"
}
C=5432 S1=5433 S2=5434 SB=5435 CN=5436

if ! { init_node coord $C && init_node shard1 $S1 && init_node shard2 $S2; }; then
	tap 1 "clusters start"
	exit 0
fi

# the shards: hbird, and the partition's table (the second one with its
# columns in another order and one more column the coordinator does not have)
q $S1 >/dev/null <<'SQL'
CREATE EXTENSION hbird;
CREATE TABLE t_part (id integer, grp integer, amount float8, age float8, balance float8,
					 n_tx float8, risk float8, tenure float8, utilization float8, score float8);
SQL
q $S2 >/dev/null <<'SQL'
CREATE EXTENSION hbird;
CREATE TABLE t_part (note text, score float8, utilization float8, tenure float8, risk float8,
					 n_tx float8, balance float8, age float8, amount float8, grp integer, id integer);
SQL
out=$(q $C -v fraud="$(cat $fx/binary_logistic.json)" -v reg="$(cat $fx/reg_squarederror.json)" \
	-v multi="$(cat $fx/multi_softprob.json)" -v targets="$(cat $fx/multi_target.json)" \
	-v dir="$dir" -v s1=$S1 -v s2=$S2 2>&1 <<'SQL'
CREATE EXTENSION hbird;
CREATE EXTENSION postgres_fdw;
SELECT hb_model_upload('fraud', :'fraud'), hb_model_upload('reg', :'reg'),
	   hb_model_upload('multi', :'multi'), hb_model_upload('targets', :'targets');
CREATE SERVER shard1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host :'dir', port :'s1', dbname 'postgres', extensions 'hbird', async_capable 'true');
CREATE SERVER shard2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host :'dir', port :'s2', dbname 'postgres', extensions 'hbird', async_capable 'true');
CREATE USER MAPPING FOR postgres SERVER shard1 OPTIONS (user 'postgres');
CREATE USER MAPPING FOR postgres SERVER shard2 OPTIONS (user 'postgres');
CREATE TABLE t_local (id integer, grp integer, amount float8, age float8, balance float8,
					  n_tx float8, risk float8, tenure float8, utilization float8, score float8);
SELECT setseed(0.25);
INSERT INTO t_local
SELECT g, g % 7, random() * 4 - 2, random() * 4 - 2,
	   CASE WHEN g % 17 = 0 THEN NULL ELSE random() * 4 - 2 END,
	   random() * 4 - 2, random() * 4 - 2, random() * 4 - 2, random() * 2, random() * 100
FROM generate_series(1, 3000) g;
CREATE TABLE t_dist (LIKE t_local) PARTITION BY HASH (id);
CREATE FOREIGN TABLE t_p1 PARTITION OF t_dist FOR VALUES WITH (modulus 2, remainder 0)
	SERVER shard1 OPTIONS (table_name 't_part');
CREATE FOREIGN TABLE t_p2 PARTITION OF t_dist FOR VALUES WITH (modulus 2, remainder 1)
	SERVER shard2 OPTIONS (table_name 't_part');
INSERT INTO t_dist SELECT * FROM t_local;
ANALYZE t_local;
ANALYZE t_dist;
SELECT server, shard_version, action FROM hb_model_distribute('fraud')
UNION ALL SELECT server, shard_version, action FROM hb_model_distribute('reg')
UNION ALL SELECT server, shard_version, action FROM hb_model_distribute('multi')
UNION ALL SELECT server, shard_version, action FROM hb_model_distribute('targets');
SELECT (SELECT count(*) FROM t_dist) || ' ' || (SELECT count(*) FROM t_p1) || ' ' || (SELECT count(*) FROM t_p2);
SQL
)
rc=$?
tap $rc "coordinator, two shards, models distributed (hb_model_distribute)"
[ $rc = 0 ] || { echo "$out" | sed 's/^/# /' | tail -20; exit 0; }
rows=$(tail -1 <<<"$out")
[ "$(grep -c 'stored, activated' <<<"$out")" = 8 ] && [ "${rows%% *}" = 3000 ] &&
	[ "$(awk '{ print ($2 > 0 && $3 > 0 && $2 + $3 == $1) }' <<<"$rows")" = 1 ]
tap $? "every model stored and activated on both shards, rows on both ($rows)"

# ---- pushdown: the calls are in the shards' SQL ----
explain() { q $C -c "EXPLAIN (VERBOSE, COSTS OFF) $1"; }
plan=$(explain "SELECT sum(hb_predict('fraud', t)) FROM t_dist t")
[ "$(grep -c 'Remote SQL: SELECT sum(public.hb_predict_pinned(' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'Async Foreign Scan' <<<"$plan")" = 2 ]
tap $? "sum(hb_predict(row)) is computed on both shards, at the same time (Async Foreign Scan)"
plan=$(explain "SELECT id FROM t_dist t WHERE hb_predict('fraud', t) > 0.8")
[ "$(grep -c 'WHERE ((public.hb_predict_pinned(' <<<"$plan")" = 2 ]
tap $? "a filter on a score is evaluated on the shards"
plan=$(explain "SELECT grp, avg(hb_predict('reg', t)), max(hb_predict_class('multi', t)) FROM t_dist t GROUP BY grp")
[ "$(grep -c 'Remote SQL: SELECT grp, sum(public.hb_predict_pinned(.*hb_predict_class_pinned(.*GROUP BY 1' <<<"$plan")" = 2 ]
tap $? "per-group aggregates of scores run on the shards (partial sums and counts, max)"
plan=$(explain "SELECT id FROM t_dist t ORDER BY hb_predict('reg', t) DESC LIMIT 7")
[ "$(grep -c 'ORDER BY public.hb_predict_pinned(.*DESC NULLS FIRST LIMIT 7' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'Async Foreign Scan' <<<"$plan")" = 2 ]
tap $? "ORDER BY score DESC LIMIT 7: each shard ranks its own rows, at the same time"
plan=$(explain "SELECT sum(hb_predict('fraud', ARRAY[amount, age, balance, n_tx, risk, tenure])), sum((hb_predict_proba('multi', t))[2]), sum((hb_predict_margin('fraud', t))[1]), sum((hb_predict_targets('targets', t))[3]) FROM t_dist t")
[ "$(grep -c 'NULL::text\[\], ARRAY\[amount, age' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'hb_predict_proba_pinned(.*hb_predict_margin_pinned(.*hb_predict_targets_pinned(' <<<"$plan")" -ge 2 ]
tap $? "array forms, probabilities, margins and targets are shipped too"
# scores in a plain scan's output: each shard's scan returns them (its
# remote query wraps postgres_fdw's), the coordinator scores nothing, and
# the two scans run at the same time
plan=$(explain "SELECT id, hb_predict('fraud', t), hb_predict_proba('multi', t) FROM t_dist t WHERE grp <> 3")
[ "$(grep -c 'Remote SQL: SELECT s.c1, public.hb_predict_pinned(.*shard[12].*public.hb_predict_proba_pinned(.* FROM (SELECT id, .* FROM public.t_part WHERE ((grp <> 3))) s(c1, ' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'Async Foreign Scan' <<<"$plan")" = 2 ] && ! grep -q 'HbirdScore' <<<"$plan"
tap $? "scores in a plain target list are computed by the shards' scans, at the same time (got: $(grep -m1 'Remote SQL' <<<"$plan" | head -c 300))"
plan=$(explain "SELECT id, hb_predict('fraud', t) FROM t_dist t WHERE hb_predict('fraud', t) < random() + 2")
[ "$(grep -c 'Remote SQL: SELECT s.c1, public.hb_predict_pinned(' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'Filter: (.* < (random() + ' <<<"$plan")" = 2 ]
tap $? "a filter on a score that stays on the coordinator reads the score the shard computed"
plan=$(explain "SELECT t, hb_predict('fraud', t) FROM t_dist t")
[ "$(grep -c 'Remote SQL: SELECT id, grp, ' <<<"$plan")" = 2 ] && [ "$(grep -c 'HbirdScore' <<<"$plan")" = 2 ]
tap $? "beside a whole row the scan keeps its rows and the coordinator scores them, in batches"
plan=$(explain "SELECT id, CASE WHEN id % 2 = 0 THEN hb_predict('fraud', t) END FROM t_dist t")
[ "$(grep -c 'Remote SQL: SELECT id, grp, ' <<<"$plan")" = 2 ] && ! grep -q 'pinned(.* FROM (SELECT' <<<"$plan"
tap $? "a call in a CASE branch is not sent to the shards (they would score rows the query does not)"
plan=$(explain "SELECT round(stddev(hb_predict('fraud', t))::numeric, 10), percentile_disc(0.5) WITHIN GROUP (ORDER BY hb_predict('reg', t)), count(DISTINCT hb_predict_class('multi', t)) FROM t_dist t WHERE grp <> 2")
[ "$(grep -c 'Remote SQL: SELECT public.hb_predict_pinned(.*public.hb_predict_class_pinned(.* FROM (SELECT id, .* WHERE ((grp <> 2))) s(c1, ' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'Async Foreign Scan' <<<"$plan")" = 2 ] && ! grep -q 'HbirdScore' <<<"$plan"
tap $? "aggregates the shards cannot combine (stddev, percentile_disc, count DISTINCT): the shards' scans compute their scores"
grouped="SELECT grp, percentile_cont(0.9) WITHIN GROUP (ORDER BY hb_predict('reg', t)), round(stddev(hb_predict('fraud', t))::numeric, 10), count(DISTINCT hb_predict_class('multi', t)) FROM @T t WHERE id > 100 GROUP BY grp ORDER BY grp"
plan=$(q $C -c "SET enable_hashagg = off" -c "EXPLAIN (VERBOSE, COSTS OFF) ${grouped//@T/t_dist}")
[ "$(grep -c 'Remote SQL: SELECT s.c2, public.hb_predict_pinned(.* FROM (SELECT id, .* WHERE ((id > 100))) s(c1, .*) ORDER BY s.c2 ASC NULLS LAST$' <<<"$plan")" = 2 ] &&
	grep -q 'Merge Append' <<<"$plan" && ! grep -q 'HbirdScore' <<<"$plan"
tap $? "a Group Aggregate over the shards' sorted scans: the scores come from the scans, the order from the wrapping query (got: $(grep -m1 'Remote SQL' <<<"$plan" | grep -o ') s(c1.*'))"

# ---- the same answers as one node ----
# cmp_sql SQL_WITH_T: the query over t_dist (pushed down) and over t_local
cmp_sql() {
	local d l
	d=$(q $C -c "${1//@T/t_dist}" 2>&1)
	l=$(q $C -c "${1//@T/t_local}" 2>&1)
	same "$d" "$l"
}
# sums differ in the order of their additions: compared to 1e-12 relative
cmp_sql "SELECT round(sum(hb_predict('fraud', t))::numeric, 8), round(sum(hb_predict('reg', t))::numeric, 6), count(hb_predict('fraud', t)) FROM @T t"
tap $? "sum and count of scores equal a single node's"
cmp_sql "SELECT count(*), sum(id), min(id), max(id) FROM @T t WHERE hb_predict('fraud', t) > 0.8 AND hb_predict('reg', t) < 3"
tap $? "the rows a filter on scores keeps are a single node's"
cmp_sql "SELECT grp, round(avg(hb_predict('reg', t))::numeric, 10), count(*), min(hb_predict('fraud', t)), max(hb_predict_class('multi', t)), sum(hb_predict_class('fraud', t)) FROM @T t GROUP BY grp HAVING count(*) > 1 ORDER BY grp"
tap $? "per-group avg, count, min, max, sum of classes equal a single node's"
cmp_sql "SELECT string_agg(id || ':' || s, ' ') FROM (SELECT id, hb_predict('reg', t) AS s FROM @T t ORDER BY hb_predict('reg', t) DESC LIMIT 10) x"
tap $? "ORDER BY score DESC LIMIT 10: the rows and scores of a single node"
cmp_sql "SELECT string_agg(id::text, ' ') FROM (SELECT id FROM @T t WHERE grp <> 3 ORDER BY hb_predict('fraud', t), id LIMIT 5 OFFSET 3) x"
# one shard's table: postgres_fdw sends the sort and the LIMIT, and the
# scores of the rows it returns come with them (the sort stays inside the
# wrapped query): the coordinator scores nothing
part0="(SELECT * FROM t_local WHERE satisfies_hash_partition('t_dist'::regclass, 2, 0, id))"
one_topk="SELECT string_agg(id || ':' || s, ' ') FROM (SELECT id, hb_predict('reg', t) AS s FROM @T t ORDER BY hb_predict('reg', t) DESC, id LIMIT 7) x"
plan=$(explain "SELECT id, hb_predict('reg', t) FROM t_p1 t ORDER BY hb_predict('reg', t) DESC, id LIMIT 7")
grep -q 'Remote SQL: SELECT s.c1, public.hb_predict_pinned(.* FROM (SELECT id, .* ORDER BY public.hb_predict_pinned(.* DESC NULLS FIRST, id ASC NULLS LAST LIMIT 7::bigint) s(c1, ' <<<"$plan" &&
	! grep -q 'HbirdScore' <<<"$plan" &&
	same "$(q $C -c "${one_topk//@T/t_p1}" 2>&1)" "$(q $C -c "${one_topk//@T/$part0}" 2>&1)"
tap $? "ORDER BY score LIMIT 7 on one shard's table: its scores come from the shard with its rows, a single node's"
tap $? "ORDER BY score LIMIT 5 OFFSET 3 with a filter: a single node's rows"
cmp_sql "SELECT string_agg(rank || ':' || (item).id || ':' || score, ' ') FROM hb_topk('reg', 12, NULL::@T)"
tap $? "hb_topk over the partitioned table: a single node's ranks, rows and scores"
# ties: eight more copies of the second shard's best row (reg), new ids
# spread over both shards; one node ranks ties in the order it reads the
# rows, and reading t_dist means partition after partition, each in its
# shard's order: the first shard's copies (last in its table) before the
# original (early in the second's).  t_one holds the rows in that order;
# the coordinator reading every row itself, one partition after the other,
# must agree too.
q $C >/dev/null <<'SQL'
INSERT INTO t_dist SELECT 5000 + g, grp, amount, age, balance, n_tx, risk, tenure, utilization, score
FROM (SELECT * FROM t_local t WHERE satisfies_hash_partition('t_dist'::regclass, 2, 1, id)
	  ORDER BY hb_predict('reg', t) DESC, id LIMIT 1) b, generate_series(1, 8) g;
INSERT INTO t_local SELECT * FROM t_dist WHERE id > 5000;
CREATE TABLE t_one AS SELECT * FROM t_local
ORDER BY NOT satisfies_hash_partition('t_dist'::regclass, 2, 0, id), id;
SQL
topk_ties="SELECT string_agg(rank || ':' || (item).id || ':' || score, ' ') FROM hb_topk('reg', 20, NULL::@T)"
d=$(q $C -c "${topk_ties//@T/t_dist}" 2>&1)
same "$d" "$(q $C -c "${topk_ties//@T/t_one}" 2>&1)" &&
	same "$d" "$(q $C -c "SET hbird.pushdown = off" -c "SET enable_async_append = off" -c "${topk_ties//@T/t_dist}" 2>&1)" &&
	[ "$(q $C -c "SELECT count(*) = 9 AND count(DISTINCT satisfies_hash_partition('t_dist'::regclass, 2, 0, (item).id)) = 2 FROM hb_topk('reg', 20, NULL::t_dist) WHERE score = (SELECT hb_predict('reg', t) FROM t_local t WHERE id = 5001)")" = t ]
tap $? "hb_topk over the partitioned table with ties across both shards: a single node's order"
plan=$(q $C -c "EXPLAIN (VERBOSE, COSTS OFF) (SELECT p.tableoid, hb_predict('reg', p), p.ctid, p.id FROM t_p1 p ORDER BY 2 DESC, 3 LIMIT 12) UNION ALL (SELECT p.tableoid, hb_predict('reg', p), p.ctid, p.id FROM t_p2 p ORDER BY 2 DESC, 3 LIMIT 12)")
[ "$(grep -c 'Async Foreign Scan' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'ORDER BY public.hb_predict_pinned(.*DESC NULLS FIRST, ctid ASC NULLS LAST LIMIT 12' <<<"$plan")" = 2 ]
tap $? "hb_topk's query (one arm per partition): each shard ranks its rows, at the same time"
# every row's score, as the shards' scans return them: exactly a single node's
cmp_sql "SELECT md5(string_agg(id || ':' || hb_predict('fraud', t) || ':' || hb_predict('reg', t) || ':' || hb_predict_proba('multi', t)::text || ':' || hb_predict_class('multi', t) || ':' || hb_predict_margin('fraud', t)::text || ':' || hb_predict_targets('targets', t)::text || ':' || hb_predict('fraud', ARRAY[amount, age, balance, n_tx, risk, tenure]), ',' ORDER BY id)), count(*) FROM @T t"
tap $? "every form's score in a plain target list equals a single node's, row by row"
cmp_sql "SELECT md5(string_agg(id || ':' || s, ',' ORDER BY id)), count(*) FROM (SELECT id, round(hb_predict('fraud', t)::numeric, 4) * 2 AS s FROM @T t WHERE hb_predict('fraud', t) < random() + 2 AND id % 3 <> 0) x"
tap $? "a score inside an expression, with a filter the shards cannot run on it: a single node's rows"
cmp_sql "SELECT md5(string_agg(id || ':' || coalesce(s::text, '-'), ',' ORDER BY id)) FROM (SELECT id, CASE WHEN id % 2 = 0 THEN hb_predict('fraud', t) END AS s FROM @T t) x"
tap $? "a call in a CASE branch: a single node's scores"
cmp_sql "SELECT round(stddev(hb_predict('fraud', t))::numeric, 10), percentile_disc(0.5) WITHIN GROUP (ORDER BY hb_predict('reg', t)), count(DISTINCT hb_predict_class('multi', t)), bit_xor(hashfloat8(hb_predict('fraud', t)) # id) FROM @T t WHERE grp <> 2"
tap $? "stddev, percentile_disc, count DISTINCT and a hash of every score over the shards' scores: a single node's"
cmp_sql "SELECT grp, count(*) FILTER (WHERE hb_predict('fraud', t) > 0.5), array_length(array_agg(hb_predict('reg', t)) FILTER (WHERE id % 2 = 0), 1), round(variance(hb_predict('reg', t))::numeric, 9) FROM @T t GROUP BY grp ORDER BY grp"
tap $? "grouped aggregates with FILTERs over scores: a single node's"
# the table on the nullable side of an outer join: a row the join makes up
# (all NULL) is a NULL row, scored NULL, not a row of missing values
cmp_sql "SELECT md5(string_agg(x.i || ':' || coalesce(hb_predict('fraud', t)::text, '-') || ':' || coalesce(hb_predict_class('multi', t)::text, '-'), ',' ORDER BY x.i)), count(hb_predict('reg', t)) FROM generate_series(1, 40) x(i) LEFT JOIN @T t ON t.id = x.i * 100"
tap $? "scores of the nullable side of a LEFT JOIN (10 rows made up by the join): a single node's"
cmp_sql "SELECT md5(string_agg(x.i || ':' || coalesce(hb_predict('fraud', t)::text, '-'), ',' ORDER BY x.i)) FROM @T t RIGHT JOIN generate_series(1, 40) x(i) ON t.id = x.i * 100"
tap $? "scores of the nullable side of a RIGHT JOIN: a single node's"
cmp_sql "SELECT md5(string_agg(coalesce(x.i::text, '-') || ':' || coalesce(t.id::text, '-') || ':' || coalesce(hb_predict('fraud', t)::text, '-'), ',' ORDER BY t.id, x.i)), count(*) FROM @T t FULL JOIN generate_series(1, 40) x(i) ON t.id = x.i * 200"
tap $? "scores over a FULL JOIN (both sides made up): a single node's"
# scores over one side of a join: that side's scans compute them on the
# shards (each scan returns them as a column, the nodes between pass it up)
q $C >/dev/null <<'SQL'
CREATE TABLE dims (grp integer, label text);
INSERT INTO dims SELECT g, 'g' || g FROM generate_series(0, 5) g;
ANALYZE dims;
SQL
# (compared row by row: under an aggregate the calls would be the Agg's)
join_q="SELECT t.id, hb_predict('fraud', t) AS s, round(hb_predict('reg', t)::numeric, 6) AS r, d.label FROM @T t JOIN dims d ON d.grp = t.grp ORDER BY t.id"
plan=$(explain "${join_q//@T/t_dist}")
[ "$(grep -c 'Remote SQL: SELECT s.c1, s.c2, public.hb_predict_pinned(.*public.hb_predict_pinned(.* FROM (SELECT id, grp, ' <<<"$plan")" = 2 ] &&
	[ "$(grep -c 'Async Foreign Scan' <<<"$plan")" = 2 ] && ! grep -q 'HbirdScore' <<<"$plan" &&
	grep -q 'Hash Join' <<<"$plan"
tap $? "scores over one side of a join are computed by that side's scans on the shards, which send only them and the columns the join reads (got: $(grep -m1 'Remote SQL' <<<"$plan" | head -c 200))"
cmp_sql "$join_q"
tap $? "scores over one side of a hash join: a single node's, row by row"
for j in "enable_hashjoin = off; SET enable_nestloop = off|merge join" "enable_hashjoin = off; SET enable_mergejoin = off|nested loop"; do
	set_j=${j%%|*}
	d=$(q $C -c "SET $set_j" -c "${join_q//@T/t_dist}" 2>&1)
	plan=$(q $C -c "SET $set_j" -c "EXPLAIN (VERBOSE, COSTS OFF) ${join_q//@T/t_dist}")
	same "$d" "$(q $C -c "${join_q//@T/t_local}" 2>&1)" &&
		[ "$(grep -c 'Remote SQL: SELECT s.c1, .*public.hb_predict_pinned(' <<<"$plan")" = 2 ] &&
		grep -qi "${j##*|}" <<<"$plan" && ! grep -q 'HbirdScore' <<<"$plan"
	tap $? "scores over one side of a ${j##*|}: the shards compute them, a single node's"
done
# a merge join on an expression of the scored side: a Result computes the
# sort key between the Sort and the scans (it projects: the call passes
# through it, and so do the columns the key reads)
join_expr="SELECT t.id, hb_predict('fraud', t) AS s, d.label FROM @T t JOIN dims d ON d.grp = t.id % 6 ORDER BY t.id"
d=$(q $C -c "SET enable_hashjoin = off; SET enable_nestloop = off" -c "${join_expr//@T/t_dist}" 2>&1)
plan=$(q $C -c "SET enable_hashjoin = off; SET enable_nestloop = off" -c "EXPLAIN (VERBOSE, COSTS OFF) ${join_expr//@T/t_dist}")
same "$d" "$(q $C -c "${join_expr//@T/t_local}" 2>&1)" &&
	[ "$(grep -c 'Remote SQL: SELECT s.c1, public.hb_predict_pinned(' <<<"$plan")" = 2 ] &&
	grep -q 'Merge Join' <<<"$plan" && grep -q 'Result' <<<"$plan" && ! grep -q 'HbirdScore' <<<"$plan"
tap $? "a merge join on an expression of the scored side (a Result between): the shards compute the scores and send only the id, a single node's"
# shipped WHAT SQL_WITH_T PATTERN: on t_dist, both shards' Remote SQL
# matches PATTERN and the coordinator scores nothing; the answer is a
# single node's
shipped() {
	plan=$(explain "${2//@T/t_dist}")
	[ "$(grep -c "$3" <<<"$plan")" = 2 ] && ! grep -q 'HbirdScore' <<<"$plan"
	tap $? "$1: computed by the shards"
	cmp_sql "$2"
	tap $? "$1: a single node's"
}
# three tables, the call two joins up, the score in the join's filter too
shipped "a call two joins up, and in a join's filter" \
	"SELECT t.id, hb_predict('reg', t) AS s, d.label, e.label AS l2 FROM dims d JOIN @T t ON t.grp = d.grp JOIN dims e ON e.grp = (t.id % 6) WHERE hb_predict('reg', t) > d.grp - 3 ORDER BY t.id" \
	'Remote SQL: SELECT .*public.hb_predict_pinned('
# t the preserved side of a LEFT JOIN whose condition reads one of its
# columns (which must still travel)
shipped "scores of the preserved side of a LEFT JOIN (id, grp and amount travel)" \
	"SELECT t.id, hb_predict('fraud', t) AS s, coalesce(d.label, '-') AS label FROM @T t LEFT JOIN dims d ON d.grp = t.grp AND d.grp < 3 AND t.amount > d.grp - 2 ORDER BY t.id" \
	'Remote SQL: SELECT s.c1, s.c2, s.c3, public.hb_predict_pinned('
# aggregates over a join: the calls in their arguments go down one side,
# which sends only the scores and the join key
shipped "aggregates of scores over a join" \
	"SELECT d.label, round(avg(hb_predict('reg', t))::numeric, 8), count(*), max(hb_predict_class('multi', t)) FROM @T t JOIN dims d ON d.grp = t.grp GROUP BY d.label ORDER BY d.label" \
	'Remote SQL: SELECT s.c[0-9]*, public.hb_predict_pinned(.*public.hb_predict_class_pinned('
# an aggregate whose calls go down in part: an argument under a FILTER is
# evaluated for the rows the filter keeps only, so it stays on the
# coordinator (the shards would score rows the query does not), with the
# columns it reads; the others, the FILTER's own condition too, are the
# shards'
partly="SELECT grp, round(stddev(hb_predict('fraud', t))::numeric, 10), sum(hb_predict_class('multi', t)) FILTER (WHERE id % 2 = 0 AND hb_predict('fraud', t) < 0.9), percentile_disc(0.5) WITHIN GROUP (ORDER BY hb_predict('reg', t)) FROM @T t GROUP BY grp ORDER BY grp"
plan=$(explain "${partly//@T/t_dist}")
[ "$(grep -c 'Remote SQL: SELECT s.c[0-9]*, .*public.hb_predict_pinned(.*public.hb_predict_pinned(' <<<"$plan")" = 2 ] &&
	! grep -q 'Remote SQL: .*hb_predict_class_pinned' <<<"$plan" && grep -q 'sum(hb_predict_class_pinned(' <<<"$plan"
tap $? "an aggregate's calls go down but for an argument under a FILTER"
cmp_sql "$partly"
tap $? "an aggregate's calls gone down but for an argument under a FILTER: a single node's"
# an array form on the side a LEFT JOIN may null: pinned, but not sent
# down (the made-up rows score as missing values above the join, as on one
# node); a hash join (a nested loop would scan t_dist with a parameter,
# which keeps its calls anyway)
null_arr="SELECT x.i, coalesce(hb_predict('fraud', ARRAY[t.amount, t.age, t.balance, t.n_tx, t.risk, t.tenure])::text, '-') FROM generate_series(1, 40) x(i) LEFT JOIN @T t ON t.id = x.i * 100 ORDER BY x.i"
plan=$(q $C -c "SET enable_nestloop = off" -c "EXPLAIN (VERBOSE, COSTS OFF) ${null_arr//@T/t_dist}")
! grep -q 'Remote SQL: SELECT s.c1' <<<"$plan" && grep -q 'Hash' <<<"$plan"
tap $? "an array form over the nullable side of a LEFT JOIN is not computed by the scans"
same "$(q $C -c "SET enable_nestloop = off" -c "${null_arr//@T/t_dist}" 2>&1)" "$(q $C -c "${null_arr//@T/t_local}" 2>&1)"
tap $? "an array form over the nullable side of a LEFT JOIN: a single node's"
d=$(q $C -c "SET enable_hashagg = off" -c "${grouped//@T/t_dist}" 2>&1)
same "$d" "$(q $C -c "${grouped//@T/t_local}" 2>&1)"
tap $? "percentile_cont, stddev and count DISTINCT per group over the shards' sorted scans: a single node's"
# a foreign table declaring other types than the shard's (postgres_fdw asks
# for the same ones): the shard reads the values as the coordinator reads
# them (the pinned call carries the declared types); a length-limited
# string keeps its table's scores on the coordinator
# declared TABLE QUERY PATTERN: the plan of a scoring scan of TABLE
# matches PATTERN, and QUERY's answer is the coordinator's own
# (hbird.pushdown = off)
declared() {
	plan=$(explain "SELECT id, hb_predict('fraud', t) FROM $1 t")
	grep -q "$3" <<<"$plan" &&
		same "$(q $C -c "$2" 2>&1)" "$(q $C -c "SET hbird.pushdown = off" -c "$2" 2>&1)"
}
# t_ty: values where a cast and the coordinator's read differ: float8
# 0.04999999999999999 as numeric(6,1) (cast 0.1, read 0.0), real 0.1 as
# float8 (cast 0.10000000149011612, read 0.1)
q $S1 >/dev/null <<'SQL'
CREATE TABLE t_part_ty AS SELECT * FROM t_part;
ALTER TABLE t_part_ty ALTER COLUMN age TYPE real;
UPDATE t_part_ty SET amount = 0.04999999999999999 + (id % 3) * 0.1, age = 0.1 + (id % 7) * 0.3;
SQL
q $C >/dev/null <<'SQL'
CREATE FOREIGN TABLE t_ty (id integer, grp integer, amount numeric(6,1), age float8, balance float8,
	n_tx float8, risk float8, tenure float8, utilization float8, score float8)
	SERVER shard1 OPTIONS (table_name 't_part_ty');
CREATE FOREIGN TABLE t_typed (id integer, grp integer, amount numeric(6,1), age real, balance float8,
	n_tx float8, risk float8, tenure float8, utilization float8, score float8)
	SERVER shard1 OPTIONS (table_name 't_part');
CREATE FOREIGN TABLE t_vc (id integer, grp varchar(1), amount float8, age float8, balance float8,
	n_tx float8, risk float8, tenure float8, utilization float8, score float8)
	SERVER shard1 OPTIONS (table_name 't_part');
SQL
declared t_typed "SELECT md5(string_agg(id || ':' || hb_predict('fraud', t), ',' ORDER BY id)), count(*) FROM t_typed t" \
	'Remote SQL: SELECT s.c1, public.hb_predict_pinned(.*{{id,grp,amount,age,balance,.*},{integer,integer,"numeric(6,1)",real,"double precision",.*}}.*, s.c1, s.c2, s.c3, s.c4, s.c5'
tap $? "columns declared with other types than the shard's: read there as the coordinator reads them, its scores"
declared t_ty "SELECT md5(string_agg(id || ':' || hb_predict('fraud', t) || ':' || amount || ':' || age, ',' ORDER BY id)), count(*) FROM t_ty t" \
	'{integer,integer,"numeric(6,1)","double precision",'
tap $? "values whose cast differs from the coordinator's read (float8 as numeric(6,1), real as float8): the shard reads them as the coordinator does"
# the forms postgres_fdw ships itself evaluate the pinned call on the
# shard over its own columns: the call reads them as declared too, over
# one foreign table (postgres_fdw's own sum, filter, sort) and over a
# partitioned table of such (the per-partition forms)
q $C >/dev/null <<'SQL'
CREATE TABLE t_tyd (id integer, grp integer, amount numeric(6,1), age float8, balance float8,
	n_tx float8, risk float8, tenure float8, utilization float8, score float8) PARTITION BY HASH (id);
CREATE FOREIGN TABLE t_tyd1 PARTITION OF t_tyd FOR VALUES WITH (modulus 2, remainder 0)
	SERVER shard1 OPTIONS (table_name 't_part_ty');
CREATE FOREIGN TABLE t_tyd2 PARTITION OF t_tyd FOR VALUES WITH (modulus 2, remainder 1)
	SERVER shard2 OPTIONS (table_name 't_part');
SQL
for form in "SELECT round(sum(hb_predict('fraud', t))::numeric, 6), count(*) FROM @T t|sum(public.hb_predict_pinned(" \
	"SELECT count(*), sum(id) FROM @T t WHERE hb_predict('fraud', t) > 0.5|WHERE ((public.hb_predict_pinned(" \
	"SELECT grp, round(avg(hb_predict('fraud', t))::numeric, 6), count(*) FROM @T t GROUP BY grp ORDER BY grp|GROUP BY" \
	"SELECT id, hb_predict_class('fraud', t) FROM @T t ORDER BY hb_predict('fraud', t) DESC, id LIMIT 15|ORDER BY public.hb_predict_pinned("; do
	sql=${form%|*}
	for t in t_ty t_tyd; do
		explain "${sql//@T/$t}" | grep 'Remote SQL:' | grep -F "${form#*|}" | grep -q '"numeric(6,1)"' &&
			same "$(q $C -c "${sql//@T/$t}" 2>&1)" "$(q $C -c "SET hbird.pushdown = off" -c "${sql//@T/$t}" 2>&1)"
		tap $? "declared types, in a form postgres_fdw ships (${sql%% FROM*} ... over $t): the shard reads the values as the coordinator does"
	done
done
# on the shard, where the types are the same, the reading is planned away
plan=$(q $S1 -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT public.hb_read_as(id, NULL::integer), public.hb_read_as(amount, NULL::float8), public.hb_read_as(age, NULL::float8) FROM t_part_ty")
grep -q 'Output: id, amount, hb_read_as(age, NULL::double precision)$' <<<"$plan"
tap $? "hb_read_as of a column of the declared type is no call at all (got: $(grep -m1 Output <<<"$plan"))"
# a column of a domain of the coordinator's (a shard may not have it, or
# have one of that name over another type): the scores stay here
q $C >/dev/null <<'SQL'
CREATE DOMAIN dfloat AS float8;
CREATE FOREIGN TABLE t_dom (id integer, grp integer, amount dfloat, age float8, balance float8,
	n_tx float8, risk float8, tenure float8, utilization float8, score float8)
	SERVER shard1 OPTIONS (table_name 't_part');
SQL
dom="SELECT md5(string_agg(id || ':' || hb_predict('fraud', t), ',' ORDER BY id)), count(*) FROM t_dom t"
plan=$(explain "SELECT id, hb_predict('fraud', t) FROM t_dom t")
! grep -q 'pinned(.* FROM (SELECT' <<<"$plan" && grep -q 'Remote SQL: SELECT id, grp, amount' <<<"$plan" &&
	same "$(q $C -c "$dom" 2>&1)" "$(q $C -c "SET hbird.pushdown = off" -c "$dom" 2>&1)"
tap $? "a column of a domain among a call's values: the scores stay on the coordinator, the same"
plan=$(explain "SELECT id, hb_predict('fraud', t) FROM t_vc t")
grep -q 'Remote SQL: SELECT id, grp, amount' <<<"$plan" && ! grep -q 'pinned(.* FROM (SELECT' <<<"$plan"
tap $? "a varchar(1) column among a call's values: the scores stay on the coordinator"
# correlated subqueries and LATERAL over t_dist: the per-partition split
# would move their outer references a level or two down (an error, or a
# crash of the coordinator's backend where an initplan ran without its
# parameter); they are planned as they are
cmp_sql "SELECT d.grp, (SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM @T t WHERE t.grp = d.grp) FROM dims d ORDER BY d.grp"
tap $? "a correlated subquery summing scores: a single node's"
cmp_sql "SELECT d.grp, s.id, s.sc FROM dims d, LATERAL (SELECT t.id, hb_predict('reg', t) AS sc FROM @T t WHERE t.grp = d.grp ORDER BY hb_predict('reg', t) DESC, t.id LIMIT 2) s ORDER BY d.grp, s.id"
tap $? "a LATERAL top-2 by score per group: a single node's"
q $C >/dev/null <<'SQL'
CREATE TABLE t_solo (LIKE t_local) PARTITION BY HASH (id);
CREATE FOREIGN TABLE t_solo_p PARTITION OF t_solo FOR VALUES WITH (modulus 1, remainder 0)
	SERVER shard1 OPTIONS (table_name 't_part');
SQL
one="SELECT d.grp, (SELECT (SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM @T t WHERE t.grp = d.grp)) FROM dims d ORDER BY d.grp"
same "$(q $C -c "${one//@T/t_solo}" 2>&1)" "$(q $C -c "${one//@T/t_p1}" 2>&1)"
tap $? "a subquery two levels below its correlation, over a table of one partition: the foreign table's own answer"
# a partition whose columns lie in another order than its parent's: the
# split would read its whole rows as the parent's
q $C >/dev/null <<'SQL'
CREATE TABLE t_sw (LIKE t_local) PARTITION BY HASH (id);
CREATE FOREIGN TABLE t_sw1 PARTITION OF t_sw FOR VALUES WITH (modulus 2, remainder 0)
	SERVER shard1 OPTIONS (table_name 't_part');
CREATE FOREIGN TABLE t_sw2 (id integer, grp integer, age float8, amount float8, balance float8,
	n_tx float8, risk float8, tenure float8, utilization float8, score float8)
	SERVER shard2 OPTIONS (table_name 't_part');
ALTER TABLE t_sw ATTACH PARTITION t_sw2 FOR VALUES WITH (modulus 2, remainder 1);
SQL
sw=$(q $C -c "SELECT t FROM t_sw t ORDER BY hb_predict('reg', t) DESC, id LIMIT 3" -c "SELECT count(*), max(hb_predict('fraud', t)) FROM t_sw t WHERE (row_to_json(t)->>'amount')::float8 > 1.9" 2>&1)
same "$sw" "$(q $C -c "SELECT t FROM t_local t ORDER BY hb_predict('reg', t) DESC, id LIMIT 3" -c "SELECT count(*), max(hb_predict('fraud', t)) FROM t_local t WHERE (row_to_json(t)->>'amount')::float8 > 1.9" 2>&1)"
tap $? "whole rows of a partition whose columns lie in another order, in a top-K and an aggregate: a single node's"
plan=$(explain "SELECT round(sum(hb_predict('fraud', t))::numeric, 8), count(*) FROM t_sw t WHERE amount > 1")
[ "$(grep -c 'Remote SQL: SELECT sum(public.hb_predict_pinned(' <<<"$plan")" = 2 ] &&
	same "$(q $C -c "SELECT round(sum(hb_predict('fraud', t))::numeric, 8), count(*) FROM t_sw t WHERE amount > 1" 2>&1)" "$(q $C -c "SELECT round(sum(hb_predict('fraud', t))::numeric, 8), count(*) FROM t_local t WHERE amount > 1" 2>&1)"
tap $? "a sum over that table (columns mapped by name) still splits per partition: a single node's"
d=$(q $C -c "PREPARE plain(int) AS SELECT md5(string_agg(id || ':' || hb_predict('fraud', t), ',' ORDER BY id)) FROM t_dist t WHERE id < \$1" \
	-c "SET plan_cache_mode = force_generic_plan" -c "EXECUTE plain(1000)" -c "EXECUTE plain(2000)" 2>&1)
same "$d" "$(q $C -c "SELECT md5(string_agg(id || ':' || hb_predict('fraud', t), ',' ORDER BY id)) FROM t_local t WHERE id < 1000" -c "SELECT md5(string_agg(id || ':' || hb_predict('fraud', t), ',' ORDER BY id)) FROM t_local t WHERE id < 2000" 2>&1)"
tap $? "a generic plan with a parameter sent to the shards: a single node's scores"
cmp_sql "SELECT round(sum((hb_predict_proba('multi', t))[2])::numeric, 8), round(sum((hb_predict_margin('fraud', t))[1])::numeric, 8), round(sum((hb_predict_targets('targets', t))[3])::numeric, 8), round(sum(hb_predict('fraud', ARRAY[amount, age, balance, n_tx, risk, tenure]))::numeric, 8) FROM @T t"
tap $? "probabilities, margins, targets and the array form equal a single node's"
d=$(q $C -c "SET hbird.pushdown = off" -c "SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM t_dist t")
l=$(q $C -c "SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM t_dist t")
same "$d" "$l"
tap $? "hbird.pushdown = off scores on the coordinator, with the same answer"

# ---- roles: what the shards run is what the caller may read and score ----
q $C >/dev/null <<'SQL'
CREATE ROLE so_reader;
CREATE ROLE so_nomodel;
GRANT SELECT ON t_dist TO so_reader, so_nomodel;
SELECT hb_model_grant('reg', 'so_reader');
CREATE USER MAPPING FOR PUBLIC SERVER shard1 OPTIONS (user 'postgres', password_required 'false');
CREATE USER MAPPING FOR PUBLIC SERVER shard2 OPTIONS (user 'postgres', password_required 'false');
SQL
topk_as() { q $C -c "SET ROLE $1" -c "SET enable_async_append = off" -c "SELECT string_agg(rank || ':' || (item).id || ':' || score, ' ') FROM hb_topk('reg', 12, NULL::t_dist${2:+, $2})" 2>&1; }
d=$(topk_as so_reader)
same "$d" "$(topk_as so_reader "'SELECT * FROM t_dist'")"
tap $? "hb_topk over shards for a role that may read t_dist but not its partitions: t_dist's rows (got: $(head -c 100 <<<"$d"))"
q $C >/dev/null <<'SQL'
GRANT SELECT ON t_p1, t_p2 TO so_reader;
ALTER TABLE t_dist ENABLE ROW LEVEL SECURITY;
CREATE POLICY so_low ON t_dist FOR SELECT TO so_reader USING (id <= 1500);
CREATE POLICY so_all ON t_dist FOR SELECT TO postgres USING (true);
SQL
d=$(topk_as so_reader)
same "$d" "$(topk_as so_reader "'SELECT * FROM t_dist'")" &&
	[ "$(q $C -c "SET ROLE so_reader" -c "SELECT max((item).id) <= 1500 FROM hb_topk('reg', 12, NULL::t_dist)")" = t ]
tap $? "hb_topk over shards under t_dist's row-level security: the rows its policy lets the role read"
q $C -c "ALTER TABLE t_dist DISABLE ROW LEVEL SECURITY" >/dev/null
# a plan that ships the call to the shards was made for a role that may
# score the model: run by one that may not, it is planned again (and fails)
fails 'permission denied to score model "reg"' \
	"a prepared statement that scores on the shards, run by a role without the model's grant: refused" \
	-c "PREPARE so_sum AS SELECT sum(hb_predict('reg', t)) FROM t_dist t" \
	-c "EXECUTE so_sum" -c "SET ROLE so_nomodel" -c "EXECUTE so_sum"
# a pinned call written by hand (or by a view, or by an SQL function the
# planner inlines) over a foreign table with a text column ships to the
# shard, which checks only the user the role is mapped to: the coordinator
# checks the role's right to score first
q $C >/dev/null <<'SQL'
CREATE FOREIGN TABLE t_notes (note text, score float8, utilization float8, tenure float8, risk float8,
							  n_tx float8, balance float8, age float8, amount float8, grp integer, id integer)
	SERVER shard2 OPTIONS (table_name 't_part');
GRANT SELECT ON t_notes TO so_reader, so_nomodel;
SQL
sha=$(q $C -c "SELECT sha256 FROM hb_models WHERE name = 'reg' AND active")
pin="hb_predict_pinned('reg', 1, '$sha', 'shard2', '{note,score,utilization,tenure,risk,n_tx,balance,age,amount,grp,id}', @.note, @.score, @.utilization, @.tenure, @.risk, @.n_tx, @.balance, @.age, @.amount, @.grp, @.id)"
q $C -c "CREATE FUNCTION so_pin(t_notes) RETURNS float8 LANGUAGE sql IMMUTABLE AS \$\$ SELECT ${pin//@/\$1} \$\$" >/dev/null
plan=$(q $C -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(${pin//@/t}) FROM t_notes t")
plan2=$(q $C -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(so_pin(t)) FROM t_notes t")
grep -q 'Remote SQL: SELECT sum(public.hb_predict_pinned(' <<<"$plan" &&
	grep -q 'Remote SQL: SELECT sum(public.hb_predict_pinned(' <<<"$plan2"
tap $? "a hand-written pinned call with a text column among its values is shipped to the shard, in an SQL function too"
for what in "sum(${pin//@/t}) FROM t_notes t" "count(*) FROM t_notes t WHERE ${pin//@/t} > 0.5" \
	"sum(so_pin(t)) FROM t_notes t"; do
	fails 'permission denied to score model "reg"' \
		"a hand-written pinned call, run by a role without the model's grant: refused (SELECT ${what:0:40}...)" \
		-c "SET ROLE so_nomodel" -c "SELECT $what"
done
e4=$(q $C -c "SET ROLE so_reader" -c "SELECT sum(${pin//@/t}) FROM t_notes t" -c "SELECT sum(${pin//@/t}) FROM t_notes t WHERE note IS NULL OR note <> 'x'" 2>&1)
same "$e4" "$(q $C -c "SELECT sum(hb_predict('reg', t)) FROM t_p2 t" -c "SELECT sum(hb_predict('reg', t)) FROM t_p2 t")"
tap $? "the same calls by a role with the grant score as the plain calls do"
# a role mapped to another role on the shard, granted the model on the
# coordinator only: the shard refuses, naming itself and its role, and says
# where a grant that lasts is made (a grant on the shard alone is replaced
# by the next hb_model_distribute)
q $S2 -c "CREATE ROLE so_svc LOGIN; GRANT SELECT ON t_part TO so_svc" >/dev/null
q $C >/dev/null <<'SQL'
CREATE ROLE so_mapped;
CREATE USER MAPPING FOR so_mapped SERVER shard2 OPTIONS (user 'so_svc', password_required 'false');
GRANT SELECT ON t_p2 TO so_mapped;
SELECT hb_model_grant('reg', 'so_mapped');
SQL
fails 'HINT:  Grants come from the coordinator: there the model.s owner can run hb_model_grant\(.reg., .so_svc.\) \(the role must exist there too\), then hb_model_distribute\(.reg.\)' \
	"a role the shard does not let score: refused there, with the role it connects as and where to grant" \
	-c "SET ROLE so_mapped" -c "SELECT sum(hb_predict('reg', t)) FROM t_p2 t"
fails 'the model name of hb_predict_pinned over a foreign table must be a constant' \
	"a pinned call whose model name is not a constant is refused" \
	-c "SELECT sum(hb_predict_pinned(note, 1, '$sha', 'shard2', '{amount}', amount)) FROM t_notes"
# the same check on a coordinator that does not preload hbird: a new
# session's first statement is planned before anything has loaded it (the
# pinned forms' planner support function loads it), and a plan made for a
# role with the grant is not run unchecked by another role
if init_node coord_np $CN ''; then
	q $CN -v reg="$(cat $fx/reg_squarederror.json)" -v dir="$dir" -v s2=$S2 >/dev/null <<'SQL'
CREATE EXTENSION hbird;
CREATE EXTENSION postgres_fdw;
SELECT hb_model_upload('reg', :'reg');
CREATE SERVER shard2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host :'dir', port :'s2', dbname 'postgres', extensions 'hbird');
CREATE ROLE np_nomodel LOGIN;
CREATE USER MAPPING FOR PUBLIC SERVER shard2 OPTIONS (user 'postgres', password_required 'false');
CREATE FOREIGN TABLE t_notes (note text, score float8, utilization float8, tenure float8, risk float8,
							  n_tx float8, balance float8, age float8, amount float8, grp integer, id integer)
	SERVER shard2 OPTIONS (table_name 't_part');
GRANT SELECT ON t_notes TO np_nomodel;
SQL
	np="SELECT sum(${pin//@/t}) FROM t_notes t"
	err=$(psql -X -q -At -h "$dir" -p $CN -U np_nomodel -d postgres -c "$np" 2>&1)
	grep -q 'permission denied to score model "reg"' <<<"$err"
	tap $? "without the preload, a new session's first statement: a hand-written pinned call by a role without the grant is refused (got: $(grep -m1 ERROR <<<"$err"))"
	err=$(q $CN -c "PREPARE np AS $np" -c "EXECUTE np" -c "SET ROLE np_nomodel" -c "EXECUTE np" 2>&1)
	grep -q 'permission denied to score model "reg"' <<<"$err" &&
		same "$(head -1 <<<"$err")" "$(q $C -c "SELECT sum(${pin//@/t}) FROM t_notes t")"
	tap $? "without the preload, a plan prepared by the owner in a new session: scores, then is refused to a role without the grant (got: $(tr '\n' ' ' <<<"$err" | head -c 200))"
else
	tap 1 "a coordinator without the preload starts"
fi

# ---- models on every node ----
q $C -v v2="$(cat $fx/binary_logitraw.json)" <<<"SELECT hb_model_upload('fraud', :'v2')" >/dev/null
same "$(q $C -c "SELECT string_agg(server || ':' || version || '/' || shard_version || ':' || in_sync, ' ' ORDER BY server) FROM hb_model_shards('fraud')")" \
	"shard1:2/1:false shard2:2/1:false"
tap $? "hb_model_shards shows the shards still at version 1 after an upload on the coordinator"
other_version='model "fraud" on shard "shard[12]" is at version 1 \(sha256 [0-9a-f]{12}\), but the coordinator scores version 2 \(sha256 [0-9a-f]{12}\)'
fails "$other_version" "a shard at another version: an error naming the shard and both versions" \
	-c "SELECT sum(hb_predict('fraud', t)) FROM t_dist t"
fails "$other_version" "scores in a plain target list over shards at another version: the same error" \
	-c "SELECT id, hb_predict('fraud', t) FROM t_dist t"
fails 'model "fraud" on shard "shard1" is at version 1' "a plain scan of one shard's foreign table names the server in that error" \
	-c "SELECT id, hb_predict('fraud', t) FROM t_p1 t"
fails "$other_version" "hb_topk over shards at another version: the same error" \
	-c "SELECT count(*) FROM hb_topk('fraud', 5, NULL::t_dist)"
q $C >/dev/null <<'SQL'
BEGIN;
SELECT * FROM hb_model_distribute('fraud');
ROLLBACK;
SQL
same "$(q $C -c "SELECT string_agg(shard_version::text, ' ' ORDER BY server) FROM hb_model_shards('fraud')")" "1 1"
tap $? "a distribution rolled back leaves every shard as it was"
q $C >/dev/null <<'SQL'
SET client_min_messages = warning;
SELECT hb_model_grant('fraud', 'public');
SELECT count(*) FROM hb_tune('fraud', 'SELECT * FROM t_local', 'topk', 10, 0.9);
SQL
same "$(q $C -c "SELECT string_agg(server || ':' || shard_version || ':' || action, ' ' ORDER BY server) FROM hb_model_distribute('fraud')")" \
	"shard1:2:stored, activated, tunings shard2:2:stored, activated, tunings"
tap $? "hb_model_distribute stores and activates version 2 with its tuning on both shards"
same "$(q $S2 -c "SELECT (SELECT string_agg(version || ':' || active, ' ' ORDER BY version) FROM hb_models WHERE name = 'fraud') || ' ' || (SELECT string_agg(grantee::text, ' ') FROM hb_model_grants WHERE name = 'fraud') || ' ' || (SELECT count(*) FROM hb_tunings WHERE name = 'fraud' AND version = 2)")" \
	"1:false 2:true - 1"
tap $? "the shard has both versions, the grant to PUBLIC and the tuning"
same "$(q $C -c "SELECT bool_and(in_sync) FROM hb_model_shards()")" "t"
tap $? "hb_model_shards: every model in sync"
cmp_sql "SELECT round(sum(hb_predict('fraud', t))::numeric, 8), count(*) FILTER (WHERE hb_predict_class('fraud', t) = 1) FROM @T t"
tap $? "version 2 scores on the shards as on a single node"
# a prepared statement keeps a plan: it follows an activation all the same
out=$(q $C <<'SQL'
PREPARE p AS SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM t_dist t;
EXECUTE p; EXECUTE p; EXECUTE p; EXECUTE p; EXECUTE p; EXECUTE p;
SELECT hb_model_activate('fraud', 1);
SELECT count(*) FROM hb_model_distribute('fraud');
EXECUTE p;
SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM t_local t;
SQL
)
same "$(sed -n 9p <<<"$out")" "$(sed -n 10p <<<"$out")" && [ "$(sed -n 1p <<<"$out")" != "$(sed -n 9p <<<"$out")" ]
tap $? "a prepared statement scores with the version activated since"
# the same bytes uploaded on a shard with other feature names bind rows
# otherwise: not in sync, not received over, not scored
q $S1 -v m="$(cat $fx/binary_logistic.json)" <<<"SELECT hb_model_upload('swap', :'m')" >/dev/null
q $S2 -v m="$(cat $fx/binary_logistic.json)" <<<"SELECT hb_model_upload('swap', :'m')" >/dev/null
q $C -v m="$(cat $fx/binary_logistic.json)" <<<"SELECT hb_model_upload('swap', :'m', features => ARRAY['age', 'amount', 'balance', 'n_tx', 'risk', 'tenure'])" >/dev/null
same "$(q $C -c "SELECT string_agg(server || ':' || version || '/' || shard_version || ':' || (sha256 = shard_sha256) || ':' || in_sync, ' ' ORDER BY server) FROM hb_model_shards('swap')")" \
	"shard1:1/1:true:false shard2:1/1:true:false"
tap $? "hb_model_shards: the same bytes with other feature names on the shards are not in sync"
fails 'model "swap" has version 1 on this server with other feature names than the coordinator' \
	"hb_model_distribute refuses to call them the same version" -c "SELECT * FROM hb_model_distribute('swap')"
fails 'model "swap" on shard "shard[12]" is version 1 with other feature names than the coordinator' \
	"scoring it on the shards fails, naming the shard" -c "SELECT sum(hb_predict('swap', t)) FROM t_dist t"
q $S1 -c "SET client_min_messages = warning" -c "SELECT hb_model_drop('swap', 1)" >/dev/null
q $S2 -c "SET client_min_messages = warning" -c "SELECT hb_model_drop('swap', 1)" >/dev/null
q $C -c "SELECT count(*) FROM hb_model_distribute('swap')" >/dev/null
cmp_sql "SELECT round(sum(hb_predict('swap', t))::numeric, 8) FROM @T t"
tap $? "distributed again, the shards score it with the coordinator's feature names"
# owners and grantees whose names need quoting
q $C >/dev/null <<'SQL'
CREATE ROLE "ML Team";
CREATE ROLE "Analysts";
SELECT hb_model_reassign('swap', 'ML Team');
SELECT hb_model_grant('swap', 'Analysts');
SQL
q $S1 -c 'CREATE ROLE "ML Team"; CREATE ROLE "Analysts"' >/dev/null
q $S2 -c 'CREATE ROLE "ML Team"; CREATE ROLE "Analysts"' >/dev/null
out=$(q $C -c "SELECT string_agg(server || ':' || action, ' ' ORDER BY server) FROM hb_model_distribute('swap')" 2>&1)
same "$out" "shard1:owner, present, active shard2:owner, present, active" &&
	same "$(q $S2 -c "SELECT owner::text || ' ' || (SELECT string_agg(grantee::text, ',') FROM hb_model_grants WHERE name = 'swap') FROM hb_models WHERE name = 'swap' AND active")" '"ML Team" "Analysts"'
tap $? "a model owned by and granted to roles whose names need quoting is distributed"
# a shard that is down: hb_model_shards warns and still shows the others
q $C -c "CREATE SERVER shard_down FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '$dir', port '5499', dbname 'postgres', extensions 'hbird')" \
	-c "CREATE USER MAPPING FOR postgres SERVER shard_down OPTIONS (user 'postgres')" >/dev/null
out=$(q $C -c "SELECT string_agg(server || ':' || model || ':' || coalesce(shard_version::text, '-') || ':' || in_sync, ' ' ORDER BY server) FROM hb_model_shards('swap')" 2>&1)
grep -q 'WARNING:  could not read the models of shard "shard_down"' <<<"$out" &&
	same "$(tail -1 <<<"$out")" "shard1:swap:1:true shard2:swap:1:true shard_down:swap:-:false"
tap $? "hb_model_shards with a shard down: a warning naming it, the other shards' rows (got: $(head -1 <<<"$out"))"
q $C -c "DROP SERVER shard_down CASCADE" >/dev/null 2>&1
q $C -c "CREATE ROLE so_other; GRANT EXECUTE ON FUNCTION hb_model_distribute(text, integer) TO so_other" >/dev/null
fails 'must be owner of model "fraud"' "only the model's owner distributes it" \
	-c "SET ROLE so_other" -c "SELECT * FROM hb_model_distribute('fraud')"

# a top-K tuning goes to the shards with its model, but a shard's own
# hbird.topk_mode is not the coordinator's: the shards rank exactly, so
# that the coordinator's exact ORDER BY ... LIMIT and hb_topk(mode =>
# 'exact') get exact rows (until 2026-12-05 the shards approximated)
q $C -v reg="$(cat $fx/reg_squarederror.json)" >/dev/null <<'SQL'
SELECT hb_model_upload('rk', :'reg');
SELECT count(*) FROM hb_tune('rk', 'SELECT * FROM t_local', 'topk', 10, 0.5);
SELECT count(*) FROM hb_model_distribute('rk');
SQL
s1_top="SELECT string_agg(id::text, ' ') FROM (SELECT id FROM t_part t ORDER BY hb_predict('rk', t) DESC LIMIT 20) x"
[ "$(q $S1 -c "SET hbird.topk_mode = approx" -c "$s1_top")" != "$(q $S1 -c "SET hbird.topk_mode = exact" -c "$s1_top")" ]
lossy=$?
ok=0
# (the nine rows tied at the third place all fall within k: the rows are
# a single node's whatever the order of ties; hb_topk's order is t_one's)
for k in 15 20 40; do
	cmp_sql "SET hbird.topk_mode = exact; SELECT string_agg(id || ':' || s, ' ' ORDER BY id) FROM (SELECT id, hb_predict('rk', t) AS s FROM @T t ORDER BY hb_predict('rk', t) DESC LIMIT $k) x" || ok=1
	q_topk="SELECT string_agg(rank || ':' || (item).id || ':' || score, ' ') FROM hb_topk('rk', $k, NULL::@T, mode => 'exact')"
	same "$(q $C -c "${q_topk//@T/t_dist}" 2>&1)" "$(q $C -c "${q_topk//@T/t_one}" 2>&1)" || ok=1
done
[ $lossy = 0 ] && [ $ok = 0 ]
tap $? "a top-K tuning on the shards: exact ORDER BY ... LIMIT and hb_topk(mode => 'exact') over them get a single node's exact rows (the tuning loses rows on a shard: $([ $lossy = 0 ] && echo yes || echo no))"

# ---- a streaming standby of the coordinator ----
nodes+=(standby)
if ! as_pg "$bin/pg_basebackup" -D "$dir/standby" -R -X stream -h "$dir" -p $C -U postgres >"$dir/basebackup.log" 2>&1 ||
	! start_node standby $SB; then
	tap 1 "a streaming standby of the coordinator starts"
	exit 0
fi
replayed() {
	local lsn i
	lsn=$(q $C -c "SELECT pg_current_wal_insert_lsn()")
	for i in $(seq 1 100); do
		[ "$(q $SB -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && return 0
		sleep 0.1
	done
	return 1
}
# every scoring form, one line each; nothing here may write
forms="
SELECT round(sum(hb_predict('sb', t))::numeric, 10) FROM t_local t;
SELECT round(sum(hb_predict('sb', ARRAY[amount, age, balance, n_tx, risk, tenure]))::numeric, 10) FROM t_local t;
SELECT round(sum((hb_predict_proba('sb', t))[1])::numeric, 10), round(sum((hb_predict_margin('sb', t))[1])::numeric, 10), sum(hb_predict_class('sb', t)) FROM t_local t;
SELECT round(sum((hb_predict_targets('targets', t))[2])::numeric, 10) FROM t_local t;
SELECT round(sum(x)::numeric, 10) FROM (SELECT unnest(hb_predict_agg('sb', t ORDER BY id)) x FROM t_local t) s;
SELECT round(sum(score)::numeric, 10) FROM hb_predict_batch('sb', NULL::t_local);
SELECT string_agg((item).id::text, ' ') FROM hb_topk('sb', 5, NULL::t_local);
SELECT array_length(hb_topk_agg('sb', 5, t), 1) FROM t_local t;
SELECT count(*) > 0 FROM hb_compile('sb');
SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM t_dist t;
"
q $C -v m="$(cat $fx/binary_logistic.json)" <<<"SELECT hb_model_upload('sb', :'m')" >/dev/null
replayed
tap $? "the standby replays the upload"
p=$(q $C <<<"$forms" 2>&1)
s=$(q $SB <<<"$forms" 2>&1)
same "$s" "$p"
tap $? "the standby scores a model uploaded on the primary with every form, as the primary does"
same "$(q $SB -c "SELECT pg_is_in_recovery(), calls > 0 AND rows > 0 FROM hb_stat_models WHERE name = 'sb'")" "t|t"
tap $? "hb_stat_models counts the standby's scoring"
q $C -v m="$(cat $fx/binary_logitraw.json)" <<<"SELECT hb_model_upload('sb', :'m')" >/dev/null
replayed
p2=$(q $C <<<"$forms" 2>&1)
s2=$(q $SB <<<"$forms" 2>&1)
same "$s2" "$p2" && [ "$(head -1 <<<"$s2")" != "$(head -1 <<<"$s")" ]
tap $? "after a second upload on the primary the standby scores the new version"
# a plan prepared on the standby follows an activation replayed from the
# primary (the session on the standby stays open across it)
cat >"$dir/activate.sh" <<SH
psql -X -q -At -h '$dir' -p $C -U postgres -d postgres \
	-c "SELECT hb_model_activate('sb', 1), hb_model_activate('fraud', 2)" \
	-c "SELECT count(*) FROM hb_model_distribute('fraud')" >/dev/null
lsn=\$(psql -X -At -h '$dir' -p $C -U postgres -d postgres -c "SELECT pg_current_wal_insert_lsn()")
for i in \$(seq 1 100); do
	[ "\$(psql -X -At -h '$dir' -p $SB -U postgres -d postgres -c "SELECT pg_last_wal_replay_lsn() >= '\$lsn'")" = t ] && break
	sleep 0.1
done
SH
s3=$(q $SB 2>&1 <<SQL
PREPARE p AS SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM t_dist t;
EXECUTE p; EXECUTE p; EXECUTE p; EXECUTE p; EXECUTE p; EXECUTE p;
\\! bash $dir/activate.sh
SELECT round(sum(hb_predict('sb', t))::numeric, 10) FROM t_local t;
EXECUTE p;
SQL
)
same "$(sed -n 7p <<<"$s3")" "$(head -1 <<<"$s")" &&
	same "$(sed -n 8p <<<"$s3")" "$(q $C -c "SELECT round(sum(hb_predict('fraud', t))::numeric, 8) FROM t_local t")"
tap $? "after an activation on the primary the standby scores the activated version, prepared statements included"
