#!/bin/bash
# A part of a tuned approximate top-K against the same tuning without it,
# in one cluster: the approximate top-10 of the anchor model over ROWS rows
# (plain ORDER BY ... LIMIT 10 and hb_topk), tuned on 200,000 other rows at
# target 0.99, run with the tuning as stored and with the part's columns
# set to NULL (what hbird did before it), alternated ROUNDS times, against
# batched full scoring in the same sessions.  PART is
#   bar    the cut relative to the bar (bar_*), against the fixed cut alone
#          (docs/willump.md, "Re-scoring fewer rows on big inputs")
#   gate   the gate (gate_*), against the same cuts without it
#          (docs/willump.md, "The gate")
#
#   bash bench/bar_cut.sh [ROWS] [ROUNDS] [PART]   (defaults 1000000, 3, bar)
#
# Installs nothing (make install first; hold /tmp/hbird-install.lock around
# both on a shared machine).  Data: bench/gen_bench.py's, cached in
# bench/data/ as for bench/ranking.sh.  Results:
# bench/results/bar_cut_latest.txt (bar) or gate_latest.txt (gate).
set -euo pipefail

BENCH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3

if [ "${1:-}" = --in-cluster ]; then
	# both parts act only under hbird.topk_bar_cut (off by default): every
	# session here, the tuning's included, runs with it on
	export PGOPTIONS="${PGOPTIONS:-} -c hbird.topk_bar_cut=on"
	. "$BENCH/lib.sh"
	anchor_table "$BAR_MODEL" "$BAR_CSV"
	cols=$(for ((i = 0; i < 28; i++)); do printf 'f%d float8,' "$i"; done)
	sql >/dev/null <<-EOF
		CREATE TABLE t_sample (${cols%,});
		\copy t_sample FROM '$BAR_SAMPLE_CSV' WITH (FORMAT csv, HEADER true)
		VACUUM (FREEZE, ANALYZE) t_sample;
	EOF
	log "tuning on t_sample"
	sql -At -c "SELECT approximation FROM hb_tune('m', 'SELECT * FROM t_sample', kind => 'topk', k => 10, target => 0.99, confidence => 0.95) WHERE chosen" >"$BAR_DIR/chosen"
	sql -At -F ' ' -c "SELECT bar_slope, bar_floor, bar_margin FROM hbird.tuning WHERE name = 'm' AND kind = 'topk'" >"$BAR_DIR/bar"
	sql -At -F ' ' -c "SELECT gate_slack, cardinality(gate_features) FROM hbird.tuning WHERE name = 'm' AND kind = 'topk'" >"$BAR_DIR/gate"
	part=$([ "$BAR_PART" = gate ] && echo gate_features gate_params gate_slack || echo bar_slope bar_floor bar_margin)
	first=${part%% *}
	if [ -z "$(sql -At -c "SELECT $first FROM hbird.tuning WHERE name = 'm' AND kind = 'topk'")" ]; then
		echo "the tuning has no $BAR_PART: nothing to compare" >&2
		exit 1
	fi
	sql -c "CREATE TABLE saved AS SELECT ${part// /, } FROM hbird.tuning WHERE name = 'm' AND kind = 'topk'" >/dev/null
	off=$(for c in $part; do printf '%s = NULL, ' "$c"; done)
	on=$(for c in $part; do printf '%s = s.%s, ' "$c" "$c"; done)
	full="SELECT count(*) FROM (SELECT (item).id FROM hb_predict_batch('m', NULL::t) ORDER BY score DESC, (item).id LIMIT 10) q"
	plain="SELECT count(*) FROM (SELECT id, hb_predict('m', t) AS score FROM t ORDER BY score DESC, ctid LIMIT 10) q"
	topk="SELECT count(*) FROM hb_topk('m', 10, NULL::t, mode => 'approx')"
	# one session per query and setting: a warm-up, then three timed runs
	# (LOAD first: without the preload a session's first statement runs row
	# at a time, README "The batching scan")
	run() {
		psql -X -At -v ON_ERROR_STOP=1 -c "$SERIAL" -c "LOAD 'hbird'" -c "$1" -c '\timing on' \
			-c "$1" -c "$1" -c "$1" | psql_times | median
	}
	for ((r = 1; r <= BAR_ROUNDS; r++)); do
		for mode in without with; do
			if [ $mode = without ]; then
				sql -c "UPDATE hbird.tuning SET ${off%, } WHERE name = 'm' AND kind = 'topk'"
			else
				sql -c "UPDATE hbird.tuning t SET ${on%, } FROM saved s WHERE name = 'm' AND kind = 'topk'"
			fi
			echo "$r $mode full $(run "$full")" >>"$BAR_DIR/times"
			echo "$r $mode plain $(run "$plain")" >>"$BAR_DIR/times"
			echo "$r $mode topk $(run "$topk")" >>"$BAR_DIR/times"
			explain=$(psql -X -At -c "$SERIAL" -c "LOAD 'hbird'" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) $plain")
			rows=$(sed -n 's/.*Rows Scored: \([0-9]*\).*/\1/p' <<<"$explain" | head -1)
			gated=$(sed -n 's/.*Rows Gated Out: \([0-9]*\).*/\1/p' <<<"$explain" | head -1)
			echo "$r $mode plain_rows ${rows:-?}" >>"$BAR_DIR/times"
			echo "$r $mode plain_gated ${gated:-0}" >>"$BAR_DIR/times"
			log "round $r, $mode: $(tail -5 "$BAR_DIR/times" | cut -d' ' -f3- | tr '\n' ' ')"
		done
	done
	exit 0
fi

ROWS=${1:-1000000}
ROUNDS=${2:-3}
PART=${3:-bar}
case $PART in bar | gate) ;; *) echo "PART is bar or gate" >&2; exit 2 ;; esac
SAMPLE=200000
DATA=$BENCH/data
mkdir -p "$DATA" "$BENCH/results"
"$PY" "$BENCH/gen_bench.py" "$ROWS" "$DATA" >&2
"$PY" "$BENCH/gen_bench.py" "$SAMPLE" "$DATA" >&2
DIR=$(mktemp -d)
chmod 755 "$DIR"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
export BAR_MODEL=$DATA/model.json BAR_CSV=$DATA/bench_$ROWS.csv BAR_SAMPLE_CSV=$DATA/bench_$SAMPLE.csv
export BAR_DIR=$DIR BAR_ROUNDS=$ROUNDS BAR_PART=$PART
pg_virtualenv -t -v 15 -o shared_buffers=2GB -o jit=off -o work_mem=64MB -o max_wal_size=4GB \
	bash "$BENCH/bar_cut.sh" --in-cluster
med() { awk -v m="$1" -v q="$2" '$2 == m && $3 == q { print $4 }' "$DIR/times" | sort -g |
	awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
{
	echo "hbird $PART benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $ROWS rows, $ROUNDS rounds, commit $(git -C "$BENCH/.." rev-parse --short HEAD)"
	echo "load average before: $LOAD_BEFORE, after: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "tuned (target 0.99, confidence 0.95, the default seed): $(cat "$DIR/chosen")"
	echo "cut relative to the bar (slope, floor, margin): $(cat "$DIR/bar")"
	echo "gate (slack, features): $(cat "$DIR/gate")"
	echo "medians over the rounds of each session's median of 3 runs (ms); rows = the plain query's Rows Scored, gated = its Rows Gated Out"
	printf '  %-28s %10s %10s %10s %10s %10s %12s\n' "$PART" full plain hb_topk "plain rows" gated "vs full"
	for mode in without with; do
		f=$(med $mode full)
		p=$(med $mode plain)
		t=$(med $mode topk)
		rows=$(awk -v m=$mode '$2 == m && $3 == "plain_rows" { print $4 }' "$DIR/times" | tail -1)
		gated=$(awk -v m=$mode '$2 == m && $3 == "plain_gated" { print $4 }' "$DIR/times" | tail -1)
		printf '  %-28s %10s %10s %10s %10s %10s %5.2fx/%4.2fx\n' \
			"$mode" "$f" "$p" "$t" "$rows" "$gated" "$(awk -v a="$f" -v b="$p" 'BEGIN { print a / b }')" \
			"$(awk -v a="$f" -v b="$t" 'BEGIN { print a / b }')"
	done
	echo "every round (round, $PART, query, ms):"
	sed 's/^/  /' "$DIR/times"
} | tee "$BENCH/results/$([ "$PART" = gate ] && echo gate || echo bar_cut)_latest.txt"
rm -rf "$DIR"
