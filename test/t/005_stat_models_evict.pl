# hb_stat_models keeps at most hbird.stat_max rows and evicts the least
# recently used: with stat_max = 100 (the minimum), 100 versions are
# scored, version 1 is scored again, and 5 more versions push out versions
# 2-6 while version 1 stays.  A cluster of its own: stat_max is a
# postmaster setting.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use HbirdTest;

my $node = hbird_node('evict', conf => 'hbird.stat_max = 100');

my ($ret, $out, $err) = query(
	$node, 'postgres', <<'SQL',
CREATE EXTENSION hbird;
CREATE TEMP TABLE src AS SELECT :'m'::text AS m;
CREATE FUNCTION upload_and_score(n integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	FOR i IN 1..n LOOP
		PERFORM hb_model_upload('ev', (SELECT m FROM src));
		PERFORM hb_predict('ev', ARRAY[1, 2, 3]::float8[]);
	END LOOP;
END $$;
SELECT upload_and_score(100);
SELECT 'full', count(*), min(version), max(version) FROM hb_stat_models;
SELECT hb_model_activate('ev', 1);
SELECT hb_predict('ev', ARRAY[1, 2, 3]::float8[]) IS NOT NULL;
SELECT upload_and_score(5);
SELECT 'after', count(*), min(version) FILTER (WHERE version > 1), max(version),
	   bool_or(version = 1), sum(calls) FROM hb_stat_models;
SELECT 'setting', current_setting('hbird.stat_max');
SQL
	vars => { m => fixture('linear/linear_tiny.json') });
is($ret, 0, 'stat_models eviction: the statements ran') or diag($err);

my %line = map { my ($k, $v) = split /\|/, $_, 2; ($k => $v) }
  grep { /^(full|after|setting)\|/ } split /\n/, $out;

is($line{setting}, '100',
	'stat_models eviction: the cluster runs with hbird.stat_max = 100');
is($line{full}, '100|1|100',
	'stat_models eviction: 100 versions scored, 100 rows');
is($line{after}, '100|7|105|t|101',
	'stat_models eviction: 5 more versions evict the least recently used (2-6), not version 1 scored again');

done_testing();
