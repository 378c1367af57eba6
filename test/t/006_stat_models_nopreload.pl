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
