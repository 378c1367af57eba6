# ALTER EXTENSION hbird UPDATE from every earlier released version keeps
# models, versions, grants and their predictions, and ends with the same
# extension objects as a fresh CREATE EXTENSION.  The earlier versions are
# the starting versions of sql/hbird--*.sql, as installed.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use HbirdTest;

my $root = repo_root();
my ($current) =
  slurp_file("$root/hbird.control") =~ /^default_version = '(.*)'/m;

# released versions: every install or upgrade script's starting version
my %seen;
my @olds =
  sort { version_cmp($a, $b) }
  grep { $_ ne $current && !$seen{$_}++ }
  map { m{hbird--([0-9.]*)(?:--.*)?\.sql$} ? $1 : () } glob("$root/sql/hbird--*.sql");

sub version_cmp
{
	my @a = split /\./, $_[0];
	my @b = split /\./, $_[1];
	while (@a || @b)
	{
		my $c = (shift(@a) // 0) <=> (shift(@b) // 0);
		return $c if $c;
	}
	return 0;
}

my $node = hbird_node('upgrade');

# the objects of the extension, described, in a stable order
my $members = q{
	SELECT pg_describe_object(classid, objid, 0) FROM pg_depend
	WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'hbird')
	ORDER BY 1};
my $scores =
  q{SELECT string_agg(format('%s:%s:%s', id, hb_predict('fraud', t), hb_predict_proba('multi', t)), ' ' ORDER BY id) FROM tx t};
my $models =
  q{SELECT string_agg(format('%s/%s/%s/%s', name, version, active, sha256), ' ' ORDER BY name, version) FROM hb_models};
my $grants =
  q{SELECT string_agg(format('%s/%s', name, grantee), ' ' ORDER BY name, grantee) FROM hb_model_grants};

$node->safe_psql('postgres', 'CREATE DATABASE hb_up_new');
query($node, 'hb_up_new', 'CREATE EXTENSION hbird');
my $fresh = query($node, 'hb_up_new', $members);
my $n_fresh = () = $fresh =~ /^/mg;

for my $old (@olds)
{
	my $db = "hb_up_$old";
	$db =~ s/\./_/g;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my ($ret, undef, $err) = query(
		$node, $db, <<'SQL',
CREATE EXTENSION hbird VERSION :'old';
SELECT hb_model_upload('fraud', :'bin');
SELECT hb_model_upload('fraud', :'reg');
SELECT hb_model_activate('fraud', 1);
SELECT hb_model_upload('multi', :'multi');
SELECT hb_model_grant('fraud', 'public');
CREATE TABLE tx AS
SELECT g AS id, sin(g) AS amount, cos(g) AS age,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE sin(g * 0.3) END AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0 AS tenure
FROM generate_series(1, 500) g;
SQL
		vars => {
			bin => fixture('binary_logistic.json'),
			multi => fixture('multi_softprob.json'),
			reg => fixture('reg_squarederror.json'),
			old => $old
		});
	is($ret, 0, "upgrade from $old: models uploaded at $old") or diag($err);

	# until the update, the old catalog's administration functions run as
	# their owner (SECURITY DEFINER), where no check can see the caller: a
	# role given EXECUTE on them changes nothing (it granted itself models
	# and dropped others' as the superuser did)
	for my $call ("hb_model_grant('fraud', 'hb_up_user')", "hb_model_drop('multi')")
	{
		($ret, undef, $err) = query($node, $db, <<"SQL");
DO \$\$ BEGIN CREATE ROLE hb_up_user; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$;
GRANT EXECUTE ON FUNCTION hb_model_drop(text), hb_model_grant(text, name) TO hb_up_user;
SET ROLE hb_up_user;
SELECT $call;
SQL
		like($err, qr/older than its library/,
			"upgrade from $old: a role given EXECUTE on the old $call is refused");
	}
	# hb_tune of the 0.2.0 catalog writes this library's columns: refused
	# before it reads the sample (it failed on the missing column after the
	# whole tuning had run)
	if ($old eq '0.2.0')
	{
		($ret, undef, $err) = query($node, $db,
			"SELECT count(*) FROM hb_tune('fraud', 'SELECT * FROM tx', kind => 'topk', k => 10, target => 0.9)");
		like($err, qr/predates this version of hbird's tunings.*\n.*ALTER EXTENSION hbird UPDATE/s,
			"upgrade from $old: hb_tune is refused until the update, with the hint to run it");
	}
	my $before_models = query($node, $db, $models);
	my $before_grants = query($node, $db, $grants);
	my $before_scores = query($node, $db, $scores);

	# a transaction that scored holds hbird's catalog until it ends: the
	# update (which rewrites catalog tables, not MVCC-safe) waits for it,
	# and the transaction keeps seeing its models
	my $tmp = PostgreSQL::Test::Utils::tempdir();
	my $reader = IPC::Run::start(
		[
			'psql', '-X', '-q', '-At', '-d', $node->connstr($db),
			'-c', 'BEGIN ISOLATION LEVEL REPEATABLE READ',
			'-c', "SELECT count(hb_predict('fraud', t)) FROM tx t",
			'-c', "SELECT pg_sleep(0.1) FROM generate_series(1, 30) WHERE NOT EXISTS (SELECT FROM pg_stat_activity WHERE query ~ 'lock_timeout' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid())",
			'-c', "SELECT pg_sleep(1.5)",
			'-c', "SELECT count(hb_predict('fraud', t)) FROM tx t",
			'-c', 'COMMIT'
		],
		'>', "$tmp/reader.out", '2>', "$tmp/reader.err");
	$node->poll_query_until($db,
		"SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query ~ 'generate_series.1, 30' AND pid <> pg_backend_pid())")
	  or diag('the reading transaction did not start');
	($ret, undef, $err) = query($node, $db,
		"SET lock_timeout = '1s'; ALTER EXTENSION hbird UPDATE");
	$reader->finish;
	like($err, qr/lock timeout/,
		"upgrade from $old: ALTER EXTENSION waits for a transaction that scored");
	# (pg_sleep's rows print as empty lines)
	is(join('', grep { /\S/ } split /^/, slurp_file("$tmp/reader.out") . slurp_file("$tmp/reader.err")),
		"500\n500\n",
		"upgrade from $old: that transaction scores the same 500 rows before and after");

	($ret, undef, $err) = query($node, $db, 'ALTER EXTENSION hbird UPDATE');
	is($ret, 0, "upgrade from $old: ALTER EXTENSION hbird UPDATE") or diag($err);
	if ($old eq '0.2.0')
	{
		($ret, undef, $err) = query($node, $db,
			"SELECT count(*) > 0 FROM hb_tune('fraud', 'SELECT * FROM tx', kind => 'topk', k => 10, target => 0.9)");
		unlike($err, qr/predates/, "upgrade from $old: hb_tune runs after the update");
	}
	my $v = query($node, $db,
		"SELECT extversion FROM pg_extension WHERE extname = 'hbird'");
	is($v, $current, "upgrade from $old: now at $current (got $v)");

	is(query($node, $db, $models), $before_models,
		"upgrade from $old: models, versions and active versions kept");
	is(query($node, $db, $grants), $before_grants,
		"upgrade from $old: grants kept");
	my $after_scores = query($node, $db, $scores);
	ok($before_scores ne '' && $after_scores eq $before_scores,
		"upgrade from $old: 500 rows score identically before and after");
	is(query($node, $db, $members), $fresh,
		"upgrade from $old: same extension objects as a fresh install ($n_fresh objects)"
	);
}

SKIP:
{
	skip 'upgrade: no earlier version', 1 unless @olds;
}

done_testing();
