# The shared cache of compiled models (src/pg_shared_cache.c): a model one
# backend compiled is read in place by every other, with the same scores,
# bit for bit, as a backend that compiles it itself and within XGBoost's own
# predictions; pins keep a block in place while a transaction uses it, and
# go at its end (an idle session pins nothing; its entry pins the block
# again at its next use, or finds it evicted, its slot holding another
# model, and looks again); the least recently used unpinned blocks make
# room, and a block that cannot get any is not stored while its backend
# still scores (and nothing is evicted where that would not make room);
# sessions compiling one version at once store it once (a second wave that
# finishes after the first stored it reads that block); one backend pins at
# most 32 blocks; a backend ended by pg_terminate_backend lets go of its
# pins; databases do not share entries; a new version is a new entry;
# hbird.shared_cache_size = 0 turns it off.
# A cluster of its own: the size is a postmaster setting, and the test sets
# it from the sizes of the blocks it measures first.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use HbirdTest;

# a fixture's inputs as VALUES rows (id, ARRAY[...]) and XGBoost's preds
sub fixture_rows
{
	my ($name) = @_;
	my @in = split /\n/, fixture("$name.csv");
	my @exp = split /\n/, fixture("$name.expected.csv");
	my (@rows, @preds);

	shift @in;
	shift @exp;
	for my $line (@in)
	{
		my ($id, @f) = split /,/, $line, -1;
		push @rows,
		  "($id, ARRAY[" . join(',', map { $_ eq '' ? 'NULL' : $_ } @f) . ']::float8[])';
	}
	for my $line (@exp)
	{
		my ($id, $pred) = split /,/, $line;
		push @preds, "($id, $pred)";
	}
	return (join(",\n", @rows), join(",\n", @preds));
}

my @models = qw(binary_logistic_deep reg_squarederror binary_logistic);
my %short = (binary_logistic_deep => 'deep', reg_squarederror => 'reg',
	binary_logistic => 'small');

my $node = hbird_node('shared_cache', conf => "hbird.shared_cache_size = '16MB'");

my $setup = "CREATE EXTENSION hbird;\n";
for my $m (@models)
{
	my ($rows, $preds) = fixture_rows($m);
	my $s = $short{$m};
	$setup .= "SELECT hb_model_upload('$s', :'$s') IS NOT NULL;\n"
	  . "CREATE TABLE in_$s (id int, x float8[]);\n"
	  . "INSERT INTO in_$s VALUES $rows;\n"
	  . "CREATE TABLE want_$s (id int, pred float8);\n"
	  . "INSERT INTO want_$s VALUES $preds;\n";
}
$setup .= <<'SQL';
-- every score of a model as text, in id order, and how far the worst is
-- from XGBoost's own prediction (relative to 1 or the prediction)
CREATE FUNCTION scores(m text, OUT all_scores text, OUT worst float8)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT string_agg(s::text, '','' ORDER BY id),
		   max(abs(s - w.pred) / greatest(1, abs(w.pred)))
		FROM (SELECT id, hb_predict(%L, x) AS s FROM %I) t JOIN %I w USING (id)',
		m, 'in_' || m, 'want_' || m)
	INTO all_scores, worst;
END $$;
SQL
my ($ret, $out, $err) = query($node, 'postgres', $setup,
	vars => { map { ($short{$_} => fixture("$_.json")) } @models });
is($ret, 0, 'shared cache: models and inputs loaded') or diag($err);

sub stats
{
	my ($db) = @_;
	return scalar query($node, $db // 'postgres',
		'SELECT entries, pinned, hits, stored, evicted, not_stored FROM hb_stat_shared_cache()');
}

sub misses
{
	my ($m) = @_;
	return scalar query($node, 'postgres',
		"SELECT cache_misses FROM hb_stat_models WHERE name = '$m'");
}

# n blocks pinned: a session's pins go when its backend has exited, which
# may come after psql has
sub wait_pinned
{
	my ($n) = @_;
	return $node->poll_query_until('postgres',
		"SELECT pinned = $n FROM hb_stat_shared_cache()");
}

# the statistics once the sessions that ended have let go of their pins
sub settled
{
	my ($n, $db) = @_;
	wait_pinned($n // 0);
	return stats($db);
}

# The scores of each model in a backend that compiles it itself, and each
# model's block size, measured in the 8MB cache.
my (%private, %size);
for my $m (@models)
{
	my $s = $short{$m};
	$private{$s} = query($node, 'postgres',
		"SET hbird.shared_cache = off; SELECT * FROM scores('$s');");
	my ($all, $worst) = split /\|/, $private{$s};
	ok(defined $worst && $worst < 1e-6,
		"shared cache: $s scored privately within 1e-6 of XGBoost (worst $worst)");
	my $before = query($node, 'postgres', 'SELECT used_bytes FROM hb_stat_shared_cache()');
	is(query($node, 'postgres', "SELECT * FROM scores('$s')"), $private{$s},
		"shared cache: $s, written to the cache by its compiler, scores bit for bit as compiled privately");
	$size{$s} = query($node, 'postgres', 'SELECT used_bytes FROM hb_stat_shared_cache()') - $before;
	ok($size{$s} > 0, "shared cache: $s takes $size{$s} bytes");
}
is(settled(), '3|0|0|3|0|0', 'shared cache: three entries stored, no hit, none pinned once their sessions ended');

query($node, 'postgres', 'SELECT hb_stat_models_reset()');
for my $round (1 .. 2)
{
	is(query($node, 'postgres', "SELECT * FROM scores('deep')"), $private{deep},
		"shared cache: a new session ($round) reads deep in place, same scores");
}
is(misses('deep'), '0', 'shared cache: two new sessions scored deep and compiled nothing');
is(settled(), '3|0|2|3|0|0', 'shared cache: the two sessions were hits');

# Sessions that compile one version at the same moment store it once: the
# ones that finish after it is stored read that block, the ones that finish
# while it is being written keep their own copy.  crowd: deep's trees 20
# times over (200 trees), long enough to compile that the six sessions all
# miss the cache and compile at once.
my $crowd = JSON::PP::decode_json(fixture('binary_logistic_deep.json'));
my $gb = $crowd->{learner}{gradient_booster}{model};
my @trees = map { my $k = $_; map { { %$_, id => 0 } } @{ $gb->{trees} } } 1 .. 20;
$trees[$_]{id} = $_ for 0 .. $#trees;
$gb->{trees} = \@trees;
$gb->{tree_info} = [ (0) x @trees ];
$gb->{gbtree_model_param}{num_trees} = scalar(@trees) . '';
# (too long for an argument of psql: read from a file)
my $crowd_file = "$PostgreSQL::Test::Utils::tmp_check/crowd.json";
PostgreSQL::Test::Utils::append_to_file($crowd_file, JSON::PP::encode_json($crowd));
($ret, $out, $err) = query($node, 'postgres', <<'SQL',
\set crowd `cat :'crowd_file'`
SELECT hb_model_upload('race', :'m') IS NOT NULL;
CREATE TABLE in_race AS SELECT * FROM in_deep;
CREATE TABLE want_race AS SELECT * FROM want_deep;
SELECT hb_model_upload('crowd', :'crowd') IS NOT NULL;
CREATE TABLE in_crowd AS SELECT * FROM in_deep;
CREATE TABLE want_crowd AS SELECT * FROM want_deep;
SQL
	vars => { m => fixture('binary_logistic_deep.json'), crowd_file => $crowd_file });
is($ret, 0, 'shared cache: race (deep\'s content under another name) and crowd uploaded') or diag($err);
my $crowd_private = query($node, 'postgres',
	"SET hbird.shared_cache = off; SELECT md5(all_scores) FROM scores('crowd');");
query($node, 'postgres', 'SELECT hb_stat_models_reset()');
my ($stored_before) = (settled() =~ /^\d+\|\d+\|\d+\|(\d+)\|/);
my $gate = $node->background_psql('postgres');
$gate->query_safe('SELECT pg_advisory_lock(42), pg_advisory_lock(43)');
my @racers;
for my $i (1 .. 6)
{
	my ($o, $e) = ('', '');
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'),
		  '-c', 'SELECT pg_advisory_lock_shared(' . ($i <= 3 ? 42 : 43) . ')',
		  '-c', "SELECT md5(all_scores) FROM scores('crowd')" ],
		'>', \$o, '2>', \$e);
	push @racers, [ $h, \$o ];
}
$node->poll_query_until('postgres',
	"SELECT count(*) = 6 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
# two waves, the second 30 ms later: it misses the cache while the first
# compiles, and finishes after the first has stored it
$gate->query_safe('SELECT pg_advisory_unlock(42); SELECT pg_sleep(0.03); SELECT pg_advisory_unlock(43);');
$gate->quit;
my %md5s;
for my $r (@racers)
{
	$r->[0]->finish;
	$md5s{ (split /\n/, ${ $r->[1] })[-1] // '' }++;
}
like($crowd_private, qr/^[0-9a-f]{32}$/, 'shared cache: crowd scored privately');
is(join(',', keys %md5s), $crowd_private, 'shared cache: six sessions compiling crowd at once all score as compiled privately');
my ($stored_after) = (settled() =~ /^\d+\|\d+\|\d+\|(\d+)\|/);
is($stored_after - $stored_before, 1, 'shared cache: the six sessions stored crowd once');
is(query($node, 'postgres', "SELECT cache_misses >= 2 FROM hb_stat_models WHERE name = 'crowd'"), 't',
	'shared cache: more than one of them compiled it (they raced)');

# One backend pins at most 32 blocks: a transaction that scores with 40
# models compiles the 8 beyond them for itself
($ret, $out, $err) = query($node, 'postgres', <<'SQL', vars => { m => fixture('linear/linear_tiny.json') });
CREATE TEMP TABLE src AS SELECT :'m'::text AS m;
SELECT count(hb_model_upload('lin' || i, (SELECT m FROM src))) FROM generate_series(1, 40) i;
SQL
is($ret, 0, 'shared cache: 40 small models uploaded') or diag($err);
my $many = $node->background_psql('postgres');
$many->query_safe("SET hbird.plan_cache_entries = 100");
$many->query_safe("BEGIN");
$many->query_safe("SELECT count(hb_predict('lin' || i, ARRAY[1, 2, 3]::float8[])) FROM generate_series(1, 40) i");
like(settled(32), qr/^\d+\|32\|/, 'shared cache: a transaction scoring with 40 models pins 32 blocks');
$many->query_safe("COMMIT");
ok(wait_pinned(0), 'shared cache: and lets them go when it commits');
my ($hits_before) = (stats() =~ /^\d+\|\d+\|(\d+)\|/);
$many->query_safe("BEGIN");
is($many->query_safe("SELECT sum(hb_predict('lin' || i, ARRAY[1, 2, 3]::float8[])) = 40 * hb_predict('lin1', ARRAY[1, 2, 3]::float8[]) FROM generate_series(1, 40) i"),
	't', 'shared cache: the same session scores the 40 again, same scores');
like(settled(32), qr/^\d+\|32\|/, 'shared cache: its next transaction pins the 32 blocks again');
my ($hits_after) = (stats() =~ /^\d+\|\d+\|(\d+)\|/);
is($hits_after, $hits_before, 'shared cache: from the entries it kept, without looking them up again');
$many->quit;
ok(wait_pinned(0), 'shared cache: and lets them go when it ends');

# Room for deep and reg only: small needs the room of the least recently used
$node->append_conf('postgresql.conf',
	"hbird.shared_cache_size = '" . int(($size{deep} + $size{reg} + $size{small} - 1024) / 1024) . "kB'");
$node->restart;
is(query($node, 'postgres', 'SELECT size_bytes < ' . ($size{deep} + $size{reg} + $size{small})
	  . ' AND size_bytes >= ' . ($size{deep} + $size{reg}) . ' FROM hb_stat_shared_cache()'), 't',
	'shared cache: restarted with room for deep and reg, not small too');
query($node, 'postgres', "SELECT * FROM scores('deep')");
query($node, 'postgres', "SELECT * FROM scores('reg')");
query($node, 'postgres', "SELECT * FROM scores('deep')");
is(settled(), '2|0|1|2|0|0', 'shared cache: deep and reg stored, deep read again');
is(query($node, 'postgres', "SELECT * FROM scores('small')"), $private{small},
	'shared cache: small, stored by evicting, scores as compiled privately');
is(settled(), '2|0|1|3|1|0', 'shared cache: small took the place of reg, the least recently used');
is(query($node, 'postgres', "SELECT * FROM scores('deep')"), $private{deep},
	'shared cache: deep, still cached, same scores');
is(settled(), '2|0|2|3|1|0', 'shared cache: deep stayed through the eviction');

# A transaction that read deep and small pins them: reg finds no room
query($node, 'postgres', 'SELECT hb_stat_models_reset()');
my $bg = $node->background_psql('postgres');
$bg->query_safe("BEGIN; SELECT md5(all_scores) FROM scores('deep'); SELECT md5(all_scores) FROM scores('small');");
is(settled(2), '2|2|4|3|1|0', 'shared cache: an open transaction pins the two blocks it read');
is(query($node, 'postgres', "SELECT * FROM scores('reg')"), $private{reg},
	'shared cache: reg, with no room beside two pinned blocks, scores compiled privately');
is(settled(2), '2|2|4|3|1|1', 'shared cache: reg was not stored, nothing pinned was evicted');
# (and not in the next session either: not_stored is 2 from here)
is(query($node, 'postgres', "SELECT * FROM scores('reg')"), $private{reg},
	'shared cache: reg again, in a new session, same scores');
is(misses('reg'), '2', 'shared cache: each session compiled reg itself');

# Ended from outside, the session lets go of its pins
my $pid = $bg->query_safe('SELECT pg_backend_pid()');
query($node, 'postgres', "SELECT pg_terminate_backend($pid)");
$bg->quit;
ok(wait_pinned(0), 'shared cache: a terminated session lets go of its pins');
is(query($node, 'postgres', "SELECT * FROM scores('reg')"), $private{reg},
	'shared cache: reg stored once the pins are gone, same scores');
like(settled(), qr/^[12]\|0\|\d+\|4\|[23]\|2$/, 'shared cache: reg was stored, evicting unpinned blocks');

# Another database: the same name and content is its own entry
query($node, 'postgres', 'CREATE DATABASE other');
($ret, $out, $err) = query($node, 'other', <<'SQL', vars => { m => fixture('binary_logistic.json') });
CREATE EXTENSION hbird;
SELECT hb_model_upload('small', :'m') IS NOT NULL;
SELECT hb_predict('small', ARRAY[0.5, -1, 2, 0, 1, -0.25]::float8[]) IS NOT NULL;
SQL
is($ret, 0, 'shared cache: small uploaded and scored in another database') or diag($err);
like(settled(0, 'other'), qr/^\d\|0\|\d+\|5\|\d+\|2$/,
	'shared cache: the other database compiled and stored its own entry');

# A new version is a new entry: reg's content uploaded as deep's version 2
($ret, $out, $err) = query($node, 'postgres', <<'SQL', vars => { m => fixture('reg_squarederror.json') });
SELECT hb_model_upload('deep', :'m') IS NOT NULL;
SELECT string_agg(hb_predict('deep', x)::text, ',' ORDER BY id) FROM in_reg;
SQL
is($ret, 0, 'shared cache: deep version 2 uploaded and scored') or diag($err);
is((split /\n/, $out)[-1], (split /\|/, $private{reg})[0],
	'shared cache: deep version 2 scores as reg does, not from version 1\'s block');

# Pinned blocks leave no room: nothing is evicted for nothing.  Room for
# less than deep and reg: reg pinned first, at the start, small after it;
# deep cannot fit beside reg whatever goes, so small stays
$node->append_conf('postgresql.conf',
	"hbird.shared_cache_size = '" . int(($size{deep} + $size{reg} - 1024) / 1024) . "kB'");
$node->restart;
my $holder = $node->background_psql('postgres');
$holder->query_safe("BEGIN; SELECT md5(all_scores) FROM scores('reg')");
query($node, 'postgres', "SELECT * FROM scores('small')");
is(settled(1), '2|1|0|2|0|0', 'shared cache: reg (pinned) and small stored');
is(query($node, 'postgres', "SELECT * FROM scores('race')"), $private{deep},
	'shared cache: race (deep\'s content), with no room beside pinned reg, scores compiled privately');
is(settled(1), '2|1|0|2|0|1', 'shared cache: race not stored, and small not evicted for it');
$holder->quit;

# An idle session pins nothing, and its entries do not outlive their
# blocks.  A fresh cache with room for race (deep's content, deep's size:
# deep is reg's content since its version 2) and reg, not small too: the
# idle session stores race first (slot 1, at the start of the arena); small
# comes after it; reg then evicts race, the least recently used, and takes
# its slot and its place.  The idle session's entry for race must find its
# block gone, not read reg's there.
$node->append_conf('postgresql.conf',
	"hbird.shared_cache_size = '" . int(($size{deep} + $size{reg} + $size{small} - 1024) / 1024) . "kB'");
$node->restart;
query($node, 'postgres', 'SELECT hb_stat_models_reset()');
my $idle = $node->background_psql('postgres', on_error_stop => 0);
is($idle->query_safe("SELECT * FROM scores('race')"), $private{deep},
	'shared cache: a session scored race and stored it');
is(settled(0), '1|0|0|1|0|0', 'shared cache: race stored, not pinned once its transaction ended');
is($idle->query_safe("SELECT * FROM scores('race')"), $private{deep},
	'shared cache: the session scores race again, same scores');
is(settled(0), '1|0|0|1|0|0', 'shared cache: from its own entry, the block pinned again (no look-up, no hit)');
# (the scan holds race when the division fails: the transaction ends
# before the statement lets go of it)
my (undef, $failed) = $idle->query(
	"SELECT hb_predict('race', x) / (id - 3) FROM in_race ORDER BY id");
is($failed, 1, 'shared cache: a statement of the idle session fails while scoring race');
$idle->{stderr} = '';
is(settled(0), '1|0|0|1|0|0', 'shared cache: its failed transaction lets go of its pins too');
# A statement may still hold an entry when its transaction ends: a
# PL/pgSQL function's simple expressions live until then, and are freed
# after hbird's end-of-transaction callback.  The entry lets its block go
# when they are, not at the next transaction's end: the same message
# commits and then looks (one Query message, \; between its statements).
$idle->query_safe(<<'SQL');
CREATE FUNCTION race_one(a float8[]) RETURNS float8 LANGUAGE plpgsql AS $$
BEGIN
	RETURN hb_predict('race', a);
END $$;
SQL
is($idle->query_safe(
		"BEGIN \\; SELECT race_one(x) = hb_predict('race', x) FROM in_race WHERE id = 1 \\; "
		  . "COMMIT \\; SELECT pinned FROM hb_stat_shared_cache()"),
	"t\n0", 'shared cache: a PL/pgSQL function scored race, and once committed nothing is pinned');
query($node, 'postgres', "SELECT * FROM scores('small')");
query($node, 'postgres', "SELECT * FROM scores('reg')");
# (small goes too where reg needs more than race's room)
is(settled(0), $size{reg} <= $size{deep} ? '2|0|0|3|1|0' : '1|0|0|3|2|0',
	'shared cache: small stored, then reg in the place of race');
is($idle->query_safe("SELECT * FROM scores('race')"), $private{deep},
	'shared cache: the idle session, its block of race evicted and its slot reused by reg, scores race as compiled');
is(misses('race'), '2', 'shared cache: it compiled race again (its entry was dropped, the block gone)');
$idle->quit;

# Off: no shared memory, every session compiles
$node->append_conf('postgresql.conf', "hbird.shared_cache_size = 0");
$node->restart;
is(query($node, 'postgres', 'SELECT * FROM hb_stat_shared_cache()'), '0|0|0|0|0|0|0|0',
	'shared cache: hbird.shared_cache_size = 0 has no cache');
query($node, 'postgres', 'SELECT hb_stat_models_reset()');
for my $round (1 .. 2)
{
	is(query($node, 'postgres', "SELECT * FROM scores('small')"), $private{small},
		"shared cache: off, session $round scores small as before");
}
is(misses('small'), '2', 'shared cache: off, each session compiled small');

done_testing();
