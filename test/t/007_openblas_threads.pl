# A backend that loads hbird keeps no OpenBLAS worker threads.  Loading
# OpenBLAS starts one for every other core, and each spins for a while
# before it sleeps (about 120 ms of CPU each); hbird uses one thread and
# stops them when it is loaded (_PG_init).  Checked in a backend that loads
# hbird itself (no shared_preload_libraries) and in one forked from a
# postmaster that preloads it, after scoring with GEMM (the strategy that
# calls OpenBLAS) and TT, which must agree.  On a one-core machine OpenBLAS
# starts no thread and the checks hold trivially.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HbirdTest;

my $cores = `getconf _NPROCESSORS_ONLN` // '';
chomp $cores;
note("cores: $cores");

for my $preload (0, 1)
{
	my $what = $preload ? 'preloaded' : 'loaded by the backend';
	my $node = hbird_node('blas' . $preload, preload => $preload);
	my ($ret, $out, $err) = query(
		$node, 'postgres', <<'SQL',
CREATE EXTENSION hbird;
SELECT hb_model_upload('m', :'m') \g /dev/null
CREATE TABLE t AS SELECT g AS id, sin(g) AS amount, cos(g) AS age, sin(g * 0.3) AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0::float8 AS tenure
FROM generate_series(1, 2000) g;
SQL
		vars => { m => fixture('binary_logistic.json') });
	is($ret, 0, "openblas threads, hbird $what: set up") or diag($err);

	# a new session: the backend loads hbird (or inherits it) afresh
	$out = query(
		$node, 'postgres', <<'SQL',
SET hbird.tree_strategy = 'gemm';
SELECT 'strategy', strategy FROM hb_compile('m', 2000) LIMIT 1;
CREATE TEMP TABLE g AS SELECT id, hb_predict('m', t) AS s FROM t;
SET hbird.tree_strategy = 'tt';
SELECT 'differ', count(*) FROM g JOIN t USING (id) WHERE g.s IS DISTINCT FROM hb_predict('m', t);
SELECT 'threads', count(*) FROM pg_ls_dir('/proc/self/task');
SQL
		extra => [ '-F', ' ' ]);
	my ($differ) = $out =~ /^differ (\d+)$/m;
	my ($threads) = $out =~ /^threads (\d+)$/m;
	my ($strategy) = $out =~ /^strategy (\w+)$/m;
	is($strategy // '?', 'gemm', "openblas threads, hbird $what: the plan scores with GEMM");
	is($differ // '?', '0', "openblas threads, hbird $what: GEMM scores 2000 rows as TT does");
	is($threads // '?', '1',
		"openblas threads, hbird $what: the backend has one thread after scoring with GEMM ("
		  . ($threads // '?') . " on $cores cores)");
	$node->stop;
}

done_testing();
