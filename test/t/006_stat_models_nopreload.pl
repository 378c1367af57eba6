# Without shared_preload_libraries hbird scores exactly as before, and
# hb_stat_models / hb_stat_models_reset fail with SQLSTATE 55000 and a
# hint.  A cluster of its own: the one of test/run_sql_tests.sh preloads
# hbird.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HbirdTest;

my $node = hbird_node('nopreload', preload => 0);

is( query(
		$node, 'postgres',
		q{SELECT current_setting('shared_preload_libraries') ~ 'hbird'}),
	'f',
	'stat_models without preload: the cluster does not preload hbird');

my ($ret, $out, $err) = query(
	$node, 'postgres', <<'SQL',
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
	vars => { m => fixture('binary_logistic.json') });
is($ret, 0, 'stat_models without preload: the statements ran') or diag($err);
is( join(' ', grep { /^(row|agg|batch|topk|same)\|/ } split /\n/, $out),
	'row|1000 agg|1000 batch|1000 topk|3 same|1000',
	'stat_models without preload: every entry point scores as before');

# The statement whose planning loads hbird (each query() is a new session)
# is batched like the later ones: the scoring functions' planner support
# function loads the library while planning, and the executor start
# rewrites that plan (src/pg_scan_plan.c).  On a build without it the first
# statement's plan has no HbirdScore node.
my $plan = query($node, 'postgres',
	q{EXPLAIN (COSTS OFF) SELECT id, hb_predict('np', t) FROM t WHERE id > 10});
like($plan, qr/Custom Scan \(HbirdScore\)/,
	'first statement of a session without preload: the scoring call is batched')
  or diag($plan);
$plan = query($node, 'postgres',
	q{EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
	  SELECT id FROM t ORDER BY hb_predict('np', t) DESC LIMIT 3});
like($plan, qr/Top-K: descending, k = 3.*Rows Pruned: [1-9]/s,
	'first statement of a session without preload: ORDER BY ... LIMIT prunes')
  or diag($plan);
$plan = query($node, 'postgres',
	q{EXPLAIN (COSTS OFF) SELECT (item).id FROM hb_predict_batch('np', NULL::t)});
like($plan, qr/Custom Scan \(HbirdBatch\)/,
	'first statement of a session without preload: a batched function streams')
  or diag($plan);
$plan = query($node, 'postgres',
	q{EXPLAIN (COSTS OFF) SELECT cardinality(hb_predict_agg('np', t)) FROM t});
like($plan, qr/Custom Scan \(HbirdScore\)/,
	'first statement of a session without preload: a scoring aggregate is batched')
  or diag($plan);
# a plan cached by the statement that loaded hbird is made again, batched
$plan = query($node, 'postgres',
	q{PREPARE p AS SELECT id FROM t ORDER BY hb_predict('np', t) DESC LIMIT 3;
	  EXECUTE p;
	  EXPLAIN (COSTS OFF) EXECUTE p;});
like($plan, qr/Custom Scan \(HbirdScore\)/,
	'first statement of a session without preload: its cached plan is batched when run again')
  or diag($plan);
# the same answers as row at a time, to the bit, the first statement too
my $first = query($node, 'postgres',
	q{SELECT string_agg(id || ':' || hb_predict('np', t)::text, ',' ORDER BY id) FROM t WHERE id > 10});
my $rowwise = query($node, 'postgres',
	q{SET hbird.batch_scan = off;
	  SELECT string_agg(id || ':' || hb_predict('np', t)::text, ',' ORDER BY id) FROM t WHERE id > 10});
ok($first ne '' && $first eq $rowwise,
	'first statement of a session without preload: the same scores as row at a time');
my $top = query($node, 'postgres',
	q{SELECT string_agg(id::text, ',') FROM (SELECT id FROM t ORDER BY hb_predict('np', t) DESC, id LIMIT 5) q});
my $top_rw = query($node, 'postgres',
	q{SET hbird.batch_scan = off;
	  SELECT string_agg(id::text, ',') FROM (SELECT id FROM t ORDER BY hb_predict('np', t) DESC, id LIMIT 5) q});
ok($top ne '' && $top eq $top_rw,
	'first statement of a session without preload: the top 5 are those of row at a time');
# a scrollable cursor declared as the statement that loads hbird reads
# backward (it runs row at a time: batched, it would need a store)
my $scroll = query($node, 'postgres',
	q{BEGIN;
	  DECLARE c SCROLL CURSOR FOR SELECT id, hb_predict('np', t) AS s FROM t WHERE id <= 20 ORDER BY id;
	  FETCH LAST FROM c;
	  FETCH PRIOR FROM c;
	  FETCH FIRST FROM c;
	  COMMIT;});
my $scroll_rw = query($node, 'postgres',
	q{SET hbird.batch_scan = off;
	  SELECT id || '|' || hb_predict('np', t) FROM t WHERE id IN (20, 19, 1) ORDER BY id DESC});
is(join(',', split /\n/, $scroll), join(',', (split /\n/, $scroll_rw)[0, 1, 2]),
	'first statement of a session without preload: a scroll cursor fetches backward');

($ret, undef, $err) = query($node, 'postgres', 'SELECT * FROM hb_stat_models',
	extra => [ '-v', 'VERBOSITY=verbose' ]);
ok( $ret != 0
	  && $err =~ /ERROR:  55000: hb_stat_models needs hbird to be loaded via shared_preload_libraries/
	  && $err =~ /HINT:  Add hbird to shared_preload_libraries/,
	'stat_models without preload: the view raises 55000 with a hint')
  or diag($err);

($ret, undef, $err) = query($node, 'postgres', 'SELECT hb_stat_models_reset()',
	extra => [ '-v', 'VERBOSITY=verbose' ]);
ok($ret != 0 && $err =~ /ERROR:  55000/,
	'stat_models without preload: reset raises 55000 too')
  or diag($err);

done_testing();
