# Crash safety of the model catalog.  Models are uploaded, activated,
# dropped and granted after a checkpoint (so recovery has to replay them
# from the WAL); an explicit ROLLBACK of uploads and drops leaves nothing;
# then, with another transaction in flight (an upload and a drop not yet
# committed), the postmaster and every process of the cluster are killed
# with SIGKILL, the cluster is restarted and goes through crash recovery.
# Every committed model, version, active version and grant must be back,
# score exactly as before, nothing of the in-flight transaction may be, and
# uploads continue with the next version number.  Then the same once more
# with SIGKILL of one backend in the middle of an upload (the postmaster
# resets the whole cluster by itself: restart_after_crash = on, the
# server's default).
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use Cwd qw(abs_path);
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time sleep);
use HbirdTest;

my $node = hbird_node('crash', conf => 'restart_after_crash = on');
my $db = 'postgres';
my $tmp = abs_path(PostgreSQL::Test::Utils::tempdir);

sub wait_ready
{
	for (1 .. 300)
	{
		my ($ret, $out) = query($node, $db, 'SELECT 1');
		return 1 if $ret == 0 && $out eq '1';
		sleep 0.1;
	}
	return 0;
}

sub log_size
{
	return -s $node->logfile // 0;
}

sub log_since
{
	my ($offset) = @_;
	return slurp_file($node->logfile, $offset);
}

my ($ret, undef, $err) = query(
	$node, $db, <<'SQL',
CREATE EXTENSION hbird;
CREATE ROLE hb_crash_reader;
CREATE TABLE tx AS
SELECT g AS id, sin(g) AS amount, cos(g) AS age,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE sin(g * 0.3) END AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0 AS tenure,
	   sin(g * 0.7) AS utilization, cos(g * 0.9) AS score
FROM generate_series(1, 5000) g;
CHECKPOINT;
-- everything below is only in the WAL when the cluster dies
SELECT hb_model_upload('fraud', :'bl');
SELECT hb_model_upload('fraud', :'lr');
SELECT hb_model_upload('fraud', :'rl');
SELECT hb_model_activate('fraud', 2);
SELECT hb_model_drop('fraud', 3);
SELECT hb_model_upload('multi', :'ms');
SELECT hb_model_upload('reg', :'sq');
SELECT hb_model_upload('gone', :'bl');
SELECT hb_model_drop('gone');
SELECT hb_model_grant('fraud', 'hb_crash_reader');
SELECT hb_model_grant('multi', 'public');
CREATE TABLE scored AS
SELECT id, hb_predict('fraud', t) AS p_fraud, hb_predict_proba('multi', t) AS p_multi,
	   hb_predict('reg', t) AS p_reg FROM tx t;
CREATE VIEW catalog_now AS
SELECT (SELECT string_agg(format('%s/%s/%s/%s/%s', name, version, active, task, sha256), ' ' ORDER BY name, version) FROM hb_models)
	   || ' | ' || (SELECT string_agg(format('%s:%s', name, grantee::text), ' ' ORDER BY name, grantee::text) FROM hb_model_grants)
	   || ' | ' || (SELECT count(*) FROM hb_model_features)
	   || ' | ' || (SELECT string_agg(format('%s:%s:%s', name, active_version, last_version), ' ' ORDER BY name) FROM hbird.model) AS c;
CREATE TABLE catalog_before AS SELECT c FROM catalog_now;
SQL
	vars => {
		bl => fixture('binary_logistic.json'),
		lr => fixture('binary_logitraw.json'),
		rl => fixture('reg_logistic.json'),
		ms => fixture('multi_softprob.json'),
		sq => fixture('reg_squarederror.json')
	});
is($ret, 0,
	'crash: models uploaded, activated, dropped and granted after a checkpoint'
) or diag($err);
my $before = query($node, $db, 'SELECT c FROM catalog_before');

# an explicit rollback of an upload, a new version, a drop and an activation
query(
	$node, $db, <<'SQL',
BEGIN;
SELECT hb_model_upload('rolled_back', :'bl');
SELECT hb_model_upload('fraud', :'bl');
SELECT hb_model_activate('fraud', 1);
SELECT hb_model_drop('reg');
SELECT hb_model_grant('reg', 'public');
ROLLBACK;
SQL
	vars => { bl => fixture('binary_logistic.json') });
my $now = query($node, $db, 'SELECT c FROM catalog_now');
ok($before ne '' && $now eq $before,
	'crash: a rolled-back upload, activation, grant and drop leave the catalog as it was'
);

# one crash: the postmaster and all its processes get SIGKILL while a
# transaction that uploaded and dropped models is still open
sub crash_all
{
	my $pm = query($node, $db,
		"SELECT split_part(pg_read_file('postmaster.pid'), E'\\n', 1)");
	return 0 unless $pm =~ /^\d+$/;
	my @children = split ' ', `pgrep -P $pm`;

	# the postmaster first, as kill -9 PM CHILDREN would; kill9 also tells
	# the node object that the server is down
	$node->kill9;
	kill 'KILL', @children;
	my $alive;
	for (1 .. 100)
	{
		$alive = grep { kill 0, $_ } ($pm, @children);
		last unless $alive;
		sleep 0.1;
	}
	return !$alive;
}

my $bl = fixture('binary_logistic.json');
open my $fh, '>', "$tmp/inflight.sql" or die "$tmp/inflight.sql: $!";
print $fh "BEGIN;\n",
  "SELECT hb_model_upload('in_flight', \$j\$$bl\$j\$);\n",
  "SELECT hb_model_upload('fraud', \$j\$$bl\$j\$);\n",
  "SELECT hb_model_drop('reg');\n", "SELECT 'open';\n",
  "SELECT pg_sleep(60);\n";
close $fh;
my $inflight = IPC::Run::start(
	[ 'psql', '-X', '-q', '-At', '-d', $node->connstr($db), '-f', "$tmp/inflight.sql" ],
	'>&', "$tmp/inflight.out");
my $open_lines = sub {
	my $out = -e "$tmp/inflight.out" ? slurp_file("$tmp/inflight.out") : '';
	return scalar(() = $out =~ /open/g);
};
for (1 .. 100)
{
	last if $open_lines->();
	sleep 0.1;
}
my $offset = log_size();
my $t0 = time;
ok(crash_all(),
	'crash: SIGKILL to the postmaster and all its children (transaction in flight: '
	  . $open_lines->()
	  . ' open)');
$inflight->finish;
$node->start(fail_ok => 1);
my $ready = wait_ready();
ok($ready,
	sprintf(
		'crash: pg_ctl start, crash recovery, accepting connections in %.1f s',
		time - $t0));
like(
	log_since($offset),
	qr/not properly shut down|redo starts|automatic recovery/,
	'crash: the server log shows crash recovery (redo from the WAL)');

sub check_after
{
	my ($label) = @_;
	my $now = query($node, $db, 'SELECT c FROM catalog_now');
	ok($before ne '' && $now eq $before,
		"crash ($label): every committed model, version, active version, grant and feature is back; nothing of the in-flight transaction"
	) or diag("before: $before\nafter:  $now");

	# a new backend loads each model from the catalog and scores as before
	my $diff = query(
		$node, $db, q{
		SELECT count(*) FROM scored s JOIN tx t USING (id)
		WHERE hb_predict('fraud', t) IS DISTINCT FROM s.p_fraud
		   OR hb_predict_proba('multi', t) IS DISTINCT FROM s.p_multi
		   OR hb_predict('reg', t) IS DISTINCT FROM s.p_reg});
	is($diff, '0',
		"crash ($label): 5000 rows x 3 models score identically after recovery ($diff differ)"
	);

	my $fresh = query($node, $db, q{SELECT hb_model_upload('fraud', :'rl')},
		vars => { rl => fixture('reg_logistic.json') });
	my ($last) = $before =~ /fraud:[0-9]+:([0-9]+)/;
	my $expect = ($last // 0) + 1;
	is($fresh, "$expect",
		"crash ($label): uploads continue after recovery (new version $fresh, expected $expect)"
	);

	# back to the committed state, which the next crash must keep
	query($node, $db,
		"SELECT hb_model_activate('fraud', 2);\nSELECT hb_model_drop('fraud', $fresh);"
	) if $fresh =~ /^\d+$/;
	$before = query($node, $db, 'SELECT c FROM catalog_now');
	return;
}
check_after('postmaster killed');

# two: SIGKILL to one backend in the middle of an upload; the postmaster
# kills the others, recovers and restarts on its own.  The upload is of a
# big model (the deep fixture's trees 400 times) so that it is caught
# while it runs.
my $upload;
if (system('/usr/bin/python3', '-c', <<'PY', fixture_path('binary_logistic_deep.json'), "$tmp/big.json") == 0)
import json, sys
m = json.load(open(sys.argv[1]))
b = m["learner"]["gradient_booster"]["model"]
trees = b["trees"]
reps = 400
b["trees"] = [dict(t, id=i) for i, t in enumerate(trees * reps)]
b["tree_info"] = b["tree_info"] * reps
b["gbtree_model_param"]["num_trees"] = str(len(b["trees"]))
if "iteration_indptr" in b:
    n = len(b["trees"])
    b["iteration_indptr"] = list(range(0, n + 1))
open(sys.argv[2], "w").write(json.dumps(m))
PY
{
	$upload =
	  "SELECT hb_model_upload('in_flight', pg_read_binary_file('$tmp/big.json'))";
}
else
{
	$upload =
	  "SELECT hb_model_upload('in_flight', '$bl'), pg_sleep(60)";
}
my $victim_pid_file = "$tmp/victim.pid";
open $fh, '>', "$tmp/victim.sql" or die "$tmp/victim.sql: $!";
print $fh "SELECT pg_backend_pid() \\g $victim_pid_file\n", "BEGIN;\n",
  "SELECT hb_model_drop('multi');\n", "$upload;\n" x 3;
close $fh;
my $victim_psql = IPC::Run::start(
	[ 'psql', '-X', '-q', '-At', '-d', $node->connstr($db), '-f', "$tmp/victim.sql" ],
	'>&', "$tmp/victim.out");
for (1 .. 100)
{
	last if -s $victim_pid_file;
	sleep 0.05;
}
my $victim = -s $victim_pid_file ? slurp_file($victim_pid_file) : '0';
($victim) = $victim =~ /(\d+)/;
$victim //= 0;

# wait until it is inside hb_model_upload
my $act = '';
for (1 .. 200)
{
	$act = query($node, $db,
		"SELECT query FROM pg_stat_activity WHERE pid = '$victim' AND state = 'active'"
	);
	last if $act =~ /hb_model_upload/;
	sleep 0.02;
}
sleep 0.1;
$offset = log_size();
$t0 = time;
ok($victim && kill('KILL', $victim) == 1,
	"crash: SIGKILL to backend $victim while it runs: "
	  . substr($act, 0, 60) . '...');
$victim_psql->finish;
sleep 0.5;
$ready = wait_ready();
ok($ready,
	sprintf(
		'crash: the postmaster reset the cluster and accepts connections again in %.1f s',
		time - $t0));
like(
	log_since($offset),
	qr/terminated by signal 9|all server processes terminated/,
	'crash: the server log shows the backend crash and the reinitialization');
check_after('backend killed');

done_testing();
