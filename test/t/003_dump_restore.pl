# pg_dump / pg_restore round trip: models, versions, active version, grants
# and features come back, and score exactly as before; restored into a
# second cluster whose roles have other OIDs, owners and grantees come back
# by name.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use Cwd qw(abs_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HbirdTest;

my $node = hbird_node('dump');
my $dump = abs_path(PostgreSQL::Test::Utils::tempdir) . '/hbird.dump';

$node->safe_psql('postgres',
	"CREATE DATABASE hb_dump_src;\nCREATE DATABASE hb_dump_dst;");
my ($ret, undef, $err) = query(
	$node, 'hb_dump_src', <<'SQL',
CREATE EXTENSION hbird;
SELECT hb_model_upload('fraud', :'bin');
SELECT hb_model_upload('fraud', :'reg');
SELECT hb_model_activate('fraud', 1);
SELECT hb_model_upload('multi', :'multi');
SELECT hb_model_grant('fraud', 'public');
CREATE TABLE tx AS
SELECT g AS id, sin(g) AS amount, cos(g) AS age,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE sin(g * 0.3) END AS balance,
	   cos(g * 0.2) AS n_tx, sin(g * 0.1) AS risk, (g % 9) / 4.0 AS tenure
FROM generate_series(1, 2000) g;
CREATE TABLE scored AS
SELECT id, hb_predict('fraud', t) AS p, hb_predict_proba('multi', t) AS pm FROM tx t;
SQL
	vars => {
		bin => fixture('binary_logistic.json'),
		multi => fixture('multi_softprob.json'),
		reg => fixture('reg_squarederror.json')
	});
is($ret, 0, 'dump/restore: source database set up') or diag($err);

$node->command_ok([ 'pg_dump', '-Fc', '-d', 'hb_dump_src', '-f', $dump ],
	'dump/restore: pg_dump');
$node->command_ok([ 'pg_restore', '-d', 'hb_dump_dst', $dump ],
	'dump/restore: pg_restore');

my $models =
  q{SELECT string_agg(format('%s/%s/%s/%s', name, version, active, sha256), ' ' ORDER BY name, version) FROM hb_models};
my $src = query($node, 'hb_dump_src', $models);
my $dst = query($node, 'hb_dump_dst', $models);
ok($src ne '' && $src eq $dst,
	"dump/restore: same models, versions and active versions ($dst)");

my $grants = query($node, 'hb_dump_dst',
	q{SELECT string_agg(name || ':' || grantee::text, ',') FROM hb_model_grants}
);
is($grants, 'fraud:-', "dump/restore: grants kept ($grants)");

my $diff = query(
	$node, 'hb_dump_dst', q{
	SELECT count(*) FROM scored s JOIN tx t USING (id)
	WHERE hb_predict('fraud', t) IS DISTINCT FROM s.p OR hb_predict_proba('multi', t) IS DISTINCT FROM s.pm});
my $rows = query($node, 'hb_dump_dst', 'SELECT count(*) FROM scored');
ok($diff eq '0' && $rows eq '2000',
	"dump/restore: identical predictions after restore ($rows rows, $diff differ)"
);

# pg_restore --jobs loads the catalog's tables at the same time: nothing may
# depend on the order their rows arrive in (it varies: three rounds)
my $features =
  q{SELECT count(*) || '/' || (SELECT count(*) FROM hb_model_grants) FROM hb_model_features};
my $src_features = query($node, 'hb_dump_src', $features);
for my $i (1 .. 3)
{
	$node->safe_psql('postgres', "CREATE DATABASE hb_dump_par$i");
	$node->command_ok([ 'pg_restore', '-j', '4', '-d', "hb_dump_par$i", $dump ],
		"dump/restore: pg_restore -j 4, round $i");
	my $m = query($node, "hb_dump_par$i", $models);
	my $f = query($node, "hb_dump_par$i", $features);
	ok($m eq $src && $f eq $src_features,
		"dump/restore: pg_restore -j 4, round $i: the same models, features and grants ($f)");
}

# Owners and grantees travel by name: a model owned by a role and granted
# to another, restored into a cluster whose roles have other OIDs (created
# in the other order, after a filler role), keeps the same role names.
query(
	$node, 'hb_dump_src', <<'SQL',
CREATE ROLE regress_dump_owner;
CREATE ROLE regress_dump_reader;
GRANT EXECUTE ON FUNCTION hb_model_upload(text, text, text, text[]),
	hb_model_grant(text, name) TO regress_dump_owner;
SET ROLE regress_dump_owner;
SELECT hb_model_upload('owned', :'bin');
SELECT hb_model_grant('owned', 'regress_dump_reader');
RESET ROLE;
GRANT SELECT ON tx TO regress_dump_reader;
SQL
	vars => { bin => fixture('binary_logistic.json') });
my $roles = q{
	SELECT string_agg(format('%s:%s:%s', m.name, m.owner, g.grantee), ',')
	FROM hbird.model m JOIN hbird.model_grant g USING (name) WHERE m.name = 'owned'};
my $owner_oid = q{SELECT owner::oid FROM hbird.model WHERE name = 'owned'};
my $roles_src = query($node, 'hb_dump_src', $roles);
my $oids_src = query($node, 'hb_dump_src', $owner_oid);
system_log('pg_dump', '-Fc', '-d', $node->connstr('hb_dump_src'), '-f', $dump);
query(
	$node, 'hb_dump_src', <<'SQL');
SET client_min_messages = warning;
DROP OWNED BY regress_dump_owner, regress_dump_reader;
DROP ROLE regress_dump_owner, regress_dump_reader;
SQL

# the second cluster, without hbird preloaded
my $other = hbird_node('dump_other', preload => 0);
query(
	$other, 'postgres', <<'SQL');
CREATE ROLE regress_dump_filler;
CREATE ROLE regress_dump_reader;
CREATE ROLE regress_dump_owner;
CREATE DATABASE hb_dump_other;
SQL
$other->command_ok([ 'pg_restore', '-d', 'hb_dump_other', $dump ],
	'dump/restore: restored into a second cluster');
my $roles_dst = query($other, 'hb_dump_other', $roles);
my $oids_dst = query($other, 'hb_dump_other', $owner_oid);
ok( $roles_src ne ''
	  && $roles_src eq $roles_dst
	  && $oids_src ne $oids_dst,
	"dump/restore: owner and grantee restored by name ($roles_dst; owner OID $oids_src there, $oids_dst here)"
);
my $scores = query($other, 'hb_dump_other',
	"SET ROLE regress_dump_reader;\nSELECT count(hb_predict('owned', t)) FROM tx t"
);
is($scores, '2000',
	"dump/restore: the restored grantee scores the restored model ($scores rows)"
);

done_testing();
