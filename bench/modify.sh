#!/bin/bash
# Scoring into the table: UPDATE ... SET score = hb_predict(...) and
# DELETE ... WHERE hb_predict(...) > x with the batching scan against the
# same statements row at a time (hbird.batch_scan = off, what hbird did
# before 2026-12-03), and, for scale, SELECT sum(hb_predict(...)) and the
# UPDATE of a constant (the cost of writing the rows), all in one cluster,
# alternated ROUNDS times.  Each statement runs in a subtransaction that is
# rolled back, and the table is vacuumed after it, so every round starts
# from the same table.  Model and rows: the anchor model (500 trees of
# depth 8, 28 columns) and bench/gen_bench.py's rows, cached in bench/data/.
#
#   bash bench/modify.sh [ROWS] [ROUNDS]     (defaults 1000000, 3)
#
# Installs nothing (make install first; hold /tmp/hbird-install.lock around
# both on a shared machine).  Results: bench/results/modify_latest.txt.
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3

if [ "${1:-}" = --in-cluster ]; then
	. "$BENCH/lib.sh"
	anchor_table "$MOD_MODEL" "$MOD_CSV" "score float8"
	sql >/dev/null <<-EOF
		-- seconds of a statement run in a subtransaction rolled back after it
		CREATE FUNCTION bench_dml(stmt text, scan text) RETURNS float8
		LANGUAGE plpgsql AS \$\$
		DECLARE
			t0 timestamptz;
		BEGIN
			PERFORM set_config('hbird.batch_scan', scan, true);
			t0 := clock_timestamp();
			EXECUTE stmt;
			RAISE EXCEPTION USING MESSAGE = extract(epoch FROM clock_timestamp() - t0)::text,
				ERRCODE = 'HB001';
		EXCEPTION WHEN SQLSTATE 'HB001' THEN
			RETURN SQLERRM::float8;
		END \$\$;
	EOF
	declare -A stmts=(
		[update]="UPDATE t SET score = hb_predict('m', t)"
		[delete]="DELETE FROM t WHERE hb_predict('m', t) > 0.9"
		[select]="SELECT sum(hb_predict('m', t)) FROM t"
		[write]="UPDATE t SET score = 1"
	)
	for ((r = 1; r <= MOD_ROUNDS; r++)); do
		for s in update delete select write; do
			for scan in on off; do
				[ "$s" = write ] && [ "$scan" = off ] && continue
				v=$(psql -X -q -At -v ON_ERROR_STOP=1 -c "$SERIAL" -c "LOAD 'hbird'" \
					-c "SELECT bench_dml(\$q\$${stmts[$s]}\$q\$, '$scan')")
				echo "$s $scan $v" >>"$MOD_DIR/times"
				sql -c "VACUUM t" >/dev/null
				log "round $r: $s, batch_scan $scan: $v s"
			done
		done
	done
	sql -At -c "SELECT count(*) FILTER (WHERE hb_predict('m', t) > 0.9) FROM t" >"$MOD_DIR/deleted"
	exit 0
fi

ROWS=${1:-1000000}
ROUNDS=${2:-3}
DATA=$BENCH/data
OUT=$BENCH/results/modify_latest.txt
mkdir -p "$DATA" "$BENCH/results"
[ -s "$DATA/bench_$ROWS.csv" ] || $PY "$BENCH/gen_bench.py" "$ROWS" "$DATA" >&2
[ -s "$DATA/model.json" ] || { echo "no $DATA/model.json: run bench/gen_bench.py first" >&2; exit 1; }
dir=$(mktemp -d /tmp/hbird-modify.XXXXXX)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$DATA/bench_$ROWS.csv" "$DATA/model.json" "$dir/"
chmod 644 "$dir"/*
load=$(cut -d' ' -f1-3 /proc/loadavg)
MOD_DIR=$dir MOD_ROUNDS=$ROUNDS MOD_CSV=$dir/bench_$ROWS.csv MOD_MODEL=$dir/model.json \
	pg_virtualenv -t -v 15 -o shared_buffers=2GB bash "$BENCH/modify.sh" --in-cluster
{
	echo "# bench/modify.sh $ROWS $ROUNDS, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$BENCH/.." rev-parse --short HEAD 2>/dev/null || echo '?'), load average $load -> $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "# seconds per statement (median of $ROUNDS, one serial backend each); rows deleted: $(cat "$dir/deleted")"
	awk '{ k = $1 " " $2; v[k] = v[k] " " $3 } END { for (k in v) print k, v[k] }' "$dir/times" |
		sort | while read -r s scan vals; do
		echo "$s $scan $(echo $vals | tr ' ' '\n' | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }') ($vals)"
	done
} | tee "$OUT.tmp"
awk '$2 == "on" || $2 == "off" { m[$1 " " $2] = $3 } END {
	for (s in m) { split(s, p, " "); if (p[2] == "on" && (p[1] " off") in m)
		printf "%s: row at a time / batched = %.2fx\n", p[1], m[p[1] " off"] / m[s] }
	if (("write on") in m && ("update on") in m && ("update off") in m)
		printf "update less the write: row at a time / batched = %.2fx\n",
			(m["update off"] - m["write on"]) / (m["update on"] - m["write on"]) }' "$OUT.tmp" | tee -a "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
