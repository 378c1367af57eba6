# What hbird's TAP tests (test/t/*.pl) share: a throwaway cluster set up
# like the one the pg_regress suites run in, the fixtures, and psql calls
# that report a failure as a value instead of dying, so that one failed step
# fails its own check and the checks after it still run.
#
# The clusters come from PostgreSQL::Test::Cluster (postgresql-server-dev-15),
# which removes them when the test ends; `make prove_installcheck` sets the
# environment it needs (PATH to the server's bindir, TESTDIR, PG_REGRESS).
package HbirdTest;

use strict;
use warnings;

use Exporter 'import';
use FindBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(hbird_node fixture fixture_path query repo_root);

# the repository's root: test/t/../..
sub repo_root
{
	return "$FindBin::RealBin/../..";
}

sub fixture_path
{
	my ($name) = @_;
	return repo_root() . "/test/fixtures/$name";
}

sub fixture
{
	my ($name) = @_;
	return slurp_file(fixture_path($name));
}

# A started cluster named $name.  Unless preload => 0, hbird is in
# shared_preload_libraries, as in the cluster of test/run_sql_tests.sh.
# wal_level and max_wal_senders are put back to the server's defaults
# (PostgreSQL::Test::Cluster lowers them), so that what is WAL-logged is what
# production writes.  conf => '...' adds settings.
sub hbird_node
{
	my ($name, %opts) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);

	$node->init;
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'hbird'")
	  if $opts{preload} // 1;
	$node->append_conf('postgresql.conf',
		"wal_level = replica\nmax_wal_senders = 10");
	$node->append_conf('postgresql.conf', $opts{conf}) if $opts{conf};
	$node->start;
	return $node;
}

# Runs $sql with psql -X -q -At and ON_ERROR_STOP (variables: vars => {name
# => value}; more options: extra => [...]).  Returns psql's output, or in
# list context (exit status, output, stderr); stderr of a failed call goes
# to the test's log.
sub query
{
	my ($node, $db, $sql, %opts) = @_;
	my ($out, $err) = ('', '');
	my @extra;

	push @extra, '-v', "$_=$opts{vars}{$_}" for sort keys %{ $opts{vars} || {} };
	push @extra, @{ $opts{extra} } if $opts{extra};
	my $ret = $node->psql(
		$db, $sql,
		stdout => \$out,
		stderr => \$err,
		extra_params => \@extra,
		on_error_stop => $opts{on_error_stop} // 1);
	note("psql on $db exited with $ret: $err") if $ret;
	return wantarray ? ($ret, $out, $err) : $out;
}

1;
