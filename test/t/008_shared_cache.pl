# The shared cache of compiled models (src/pg_shared_cache.c): a model one
# backend compiled is read in place by every other, with the same scores,
# bit for bit, as a backend that compiles it itself and within XGBoost's own
# predictions; pins keep a block in place while a backend uses it; the
# least recently used unpinned blocks make room, and a block that cannot get
# any is not stored while its backend still scores; a backend ended by
# pg_terminate_backend lets go of its pins; databases do not share entries;
# a new version is a new entry; hbird.shared_cache_size = 0 turns it off.
# A cluster of its own: the size is a postmaster setting, and the test sets
# it from the sizes of the blocks it measures first.
use strict;
use warnings;

use FindBin;
use lib "$FindBin::RealBin/../perl";
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
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

my $node = hbird_node('shared_cache', conf => "hbird.shared_cache_size = '8MB'");

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

# A session holding deep and small pins them: reg finds no room
query($node, 'postgres', 'SELECT hb_stat_models_reset()');
my $bg = $node->background_psql('postgres');
$bg->query_safe("SELECT md5(all_scores) FROM scores('deep'); SELECT md5(all_scores) FROM scores('small');");
is(settled(2), '2|2|4|3|1|0', 'shared cache: an open session pins the two blocks it read');
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
