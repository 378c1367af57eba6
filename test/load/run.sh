#!/usr/bin/env bash
# hbird load test: concurrent scoring while models change under the scorers.
#
#   bash test/load/run.sh [SECONDS]        (default 60; about SECONDS + 10 s in all)
#
# In a throwaway cluster of its own (pg_virtualenv -t, loopback only):
#   - HB_LOAD_CLIENTS (4) pgbench clients score a 50,000-row table with
#     hb_predict per row (record twice + array), hb_predict_agg,
#     hb_predict_batch, hb_topk / hb_topk_agg against ORDER BY ... LIMIT, and
#     a plpgsql wrapper on model "mx" that catches only 42704;
#   - one pgbench client (HB_LOAD_ADMIN_RATE steps/s, default 20) uploads,
#     activates and drops versions of the same names, cycling through
#     binary_logistic, binary_logitraw, reg_logistic and multi_softprob
#     (same six features); the active versions of "ms" and "mr" are never
#     dropped, "mx" is dropped entirely now and then;
#   - a long-lived monitor session with hbird.plan_cache_entries =
#     HB_LOAD_CACHE_ENTRIES (4) scores every model each second and records its
#     plan cache (pg_backend_memory_contexts); the backends' RssAnon is
#     sampled every 5 s.
# Checks (TAP lines, then a summary; exit status 1 if any check fails):
#   no client aborted, no error in the server log, no crash; every statement
#   saw exactly one version (same row scored by two call sites, array form,
#   batch / agg / top-K against per-row scoring, every score equal to one
#   reference fixture's); plan cache entries <= the GUC and its memory flat;
#   backends' memory flat; after the run every model scores like its fixture.
# Logs: test/log/load/.  Knobs: HB_LOAD_CLIENTS, HB_LOAD_ROWS (50000),
# HB_LOAD_SPAN (rows per statement, 2000), HB_LOAD_ADMIN_RATE,
# HB_LOAD_CACHE_ENTRIES, HB_LOAD_PROTOCOL (pgbench -M: simple, extended,
# prepared; default simple).  Uses the hbird that is installed (make install).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
secs=${1:-60}
if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: bash test/load/run.sh [SECONDS]" >&2
	exit 2
fi

if [ -z "${HB_LOAD_INNER:-}" ]; then
	# a cluster of our own; -t keeps it apart from any "regress" cluster that
	# scripts/test.sh may be running at the same time
	exec timeout --kill-after=30 $((secs + 600)) \
		pg_virtualenv -t -v 15 env HB_LOAD_INNER=1 bash "$root/test/load/run.sh" "$secs"
fi

clients=${HB_LOAD_CLIENTS:-4}
nrows=${HB_LOAD_ROWS:-50000}
span=${HB_LOAD_SPAN:-2000}
admin_rate=${HB_LOAD_ADMIN_RATE:-20}
protocol=${HB_LOAD_PROTOCOL:-simple}
cache_limit=${HB_LOAD_CACHE_ENTRIES:-4}
db=hb_load
fx=$root/test/fixtures
ld=$root/test/load
out=$root/test/log/load
rm -rf "$out"
mkdir -p "$out"
failed=0
tap() {
	if [ "$1" = 0 ]; then echo "ok - $2"; else echo "not ok - $2"; failed=1; fi
}
q() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$db" "$@"; }

echo "# hbird load test: $secs s, $clients scoring clients (pgbench -M $protocol), $nrows rows, $span rows per statement, admin $admin_rate steps/s"
echo "# $(date -u '+%Y-%m-%d %H:%M:%S UTC'), PostgreSQL $(psql -X -At -c 'SHOW server_version'), port $PGPORT"

# the server log, with the SQLSTATE of every message
logfile=$(pg_lsclusters -h | awk -v p="$PGPORT" '$3 == p { print $NF }')
psql -X -q -c "ALTER SYSTEM SET log_line_prefix = '%m [%p] %e %a: '" \
	-c "SELECT pg_reload_conf()" >/dev/null
createdb "$db"
if ! q -v nrows="$nrows" \
	-v binary_logistic="$(cat "$fx/binary_logistic.json")" \
	-v binary_logitraw="$(cat "$fx/binary_logitraw.json")" \
	-v reg_logistic="$(cat "$fx/reg_logistic.json")" \
	-v multi_softprob="$(cat "$fx/multi_softprob.json")" \
	-f "$ld/setup.sql" >"$out/setup.log" 2>&1; then
	cat "$out/setup.log"
	echo "not ok - load test setup"
	exit 1
fi
# the detector itself: rows scored by two different fixtures match no
# single one, rows scored by one fixture match it
selftest=$(q -c "
	SELECT hb_load_versions_matching('ms', array_agg(id), array_agg(CASE WHEN id % 2 = 0
			THEN hb_predict('ref_binary_logistic', t) ELSE hb_predict('ref_reg_logistic', t) END)),
		   hb_load_versions_matching('ms', array_agg(id), array_agg(hb_predict('ref_reg_logistic', t)))
	FROM tx t WHERE id <= $span")
[ "$selftest" = "0|1" ]
tap $? "mixed-version detector: two fixtures mixed match 0 fixtures, one fixture matches 1 (got $selftest)"
log_start=$(stat -c %s "$logfile" 2>/dev/null || echo 0)
end=$(($(date +%s) + secs))

# the long-lived monitor session: scores every model (so it meets version
# after version) and records its plan cache once a second
monitor_feed() {
	echo "SET application_name = 'hb_load_monitor';"
	echo "SET hbird.plan_cache_entries = $cache_limit;"
	while [ "$(date +%s)" -lt "$end" ]; do
		echo "SELECT count(*) FROM (SELECT hb_predict('ms', t), hb_predict('mr', t) FROM tx t WHERE id <= 10) x;"
		echo "SELECT hb_load_score_mx(0, 10);"
		echo "INSERT INTO hb_load_mem (entries, cache_bytes, backend_bytes, cache_limit)
		      SELECT entries, cache_bytes, backend_bytes, current_setting('hbird.plan_cache_entries')::int
		      FROM hb_load_cache_memory;"
		sleep 1
	done
}
monitor_feed | psql -X -q -At -d "$db" >"$out/monitor.log" 2>&1 &
monitor_pid=$!

# backends' anonymous memory every 5 s
rss_sampler() {
	while [ "$(date +%s)" -lt "$end" ]; do
		sleep 5
		psql -X -At -d "$db" -F ' ' -c "SELECT pid, application_name FROM pg_stat_activity
			WHERE datname = '$db' AND application_name LIKE 'hb_load%'" 2>/dev/null |
			while read -r pid app; do
				kb=$(awk '/^RssAnon:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
				[ -n "$kb" ] && echo "$(date +%s) $pid $app $kb"
			done
	done
}
rss_sampler >"$out/rss.log" 2>&1 &
rss_pid=$!

PGAPPNAME=hb_load_admin pgbench -n -c 1 -j 1 -T "$secs" -R "$admin_rate" \
	-f "$ld/admin.sql" "$db" >"$out/admin.out" 2>"$out/admin.err" &
admin_pid=$!
PGAPPNAME=hb_load_scorer pgbench -n -c "$clients" -j 2 -T "$secs" -P 10 -M "$protocol" \
	-D nrows="$nrows" -D span="$span" \
	-f "$ld/score_row.sql@3" -f "$ld/score_agg.sql@2" -f "$ld/score_batch.sql@2" \
	-f "$ld/score_topk.sql@2" -f "$ld/score_volatile.sql@1" \
	"$db" >"$out/scorers.out" 2>"$out/scorers.err"
scorers_rc=$?
wait "$admin_pid"
admin_rc=$?
wait "$monitor_pid" "$rss_pid"

# ---- checks ----
aborted=$(grep -c 'aborted' "$out/scorers.err")
[ "$scorers_rc" = 0 ] && [ "$aborted" = 0 ]
tap $? "scoring clients: pgbench exit $scorers_rc, $aborted aborted-client messages"
grep -i 'aborted\|error' "$out/scorers.err" | head -5 | sed 's/^/#   /'
admin_aborted=$(grep -c 'aborted' "$out/admin.err")
[ "$admin_rc" = 0 ] && [ "$admin_aborted" = 0 ]
tap $? "admin client: pgbench exit $admin_rc, $admin_aborted aborted-client messages"
grep -i 'aborted\|error' "$out/admin.err" | head -5 | sed 's/^/#   /'

tail -c +"$((log_start + 1))" "$logfile" >"$out/server.log"
sed -nE 's/^[^[]*\[[0-9]+\] ([0-9A-Z]{5}) [^:]*: *(ERROR|FATAL|PANIC): +(.*)$/\1 \2 \3/p' \
	"$out/server.log" >"$out/errors.txt"
grep -vE '^00000 FATAL: +terminating connection' "$out/errors.txt" >"$out/errors_unexpected.txt" || true
unexpected=$(grep -vcE '^42704 ERROR: +model "[a-z]+" does not exist' "$out/errors_unexpected.txt")
crashes=$(grep -cE 'terminated by signal|was terminated by|server process .* exited with exit code|PANIC' "$out/server.log")
[ "$unexpected" = 0 ] && [ "$crashes" = 0 ]
tap $? "server log: $unexpected errors other than 42704, $crashes backend crashes"
head -5 "$out/errors_unexpected.txt" | sed 's/^/#   /'

bad=$(q -c "SELECT count(*) FROM hb_load_bad")
[ "$bad" = 0 ]
tap $? "one model version per statement: $bad mismatching statements"
q -c "SELECT script || ' a=' || a || ': ' || detail FROM hb_load_bad ORDER BY at LIMIT 5" | sed 's/^/#   /'

# plan cache of the monitor session: bounded entries, flat memory
read -r samples max_entries warm_cache last_cache warm_backend last_backend <<<"$(q -F ' ' -c "
	WITH m AS (SELECT row_number() OVER (ORDER BY at) AS i, count(*) OVER () AS n, * FROM hb_load_mem)
	SELECT max(n), max(entries),
		   max(cache_bytes) FILTER (WHERE i <= greatest(n / 4, 3)),
		   (SELECT cache_bytes FROM m m2 WHERE m2.i = m.n LIMIT 1),
		   max(backend_bytes) FILTER (WHERE i <= greatest(n / 4, 3)),
		   (SELECT backend_bytes FROM m m2 WHERE m2.i = m.n LIMIT 1)
	FROM m GROUP BY n")"
versions_seen=$(q -c "SELECT count(*) FROM hb_load_admin_log WHERE op IN ('create', 'upload')")
[ -n "${samples:-}" ] && [ "$max_entries" -le "$cache_limit" ]
tap $? "plan cache entries stay <= hbird.plan_cache_entries ($max_entries <= $cache_limit over $samples samples, $versions_seen versions uploaded)"
[ -n "${samples:-}" ] && [ "$last_cache" -le $((warm_cache + warm_cache / 2 + 65536)) ] &&
	[ "$last_backend" -le $((warm_backend + 1048576)) ]
tap $? "plan cache memory flat: cache $warm_cache -> $last_cache bytes, monitor backend $warm_backend -> $last_backend bytes (first quarter max -> end)"

# backends' RssAnon: first sample after a quarter of the run vs the last one
rss_summary=$(awk -v t0="$((end - secs + secs / 4))" '
	$1 >= t0 { if (!($2 in first)) { first[$2] = $4; app[$2] = $3 } last[$2] = $4 }
	END {
		worst = 0
		for (p in first) {
			d = last[p] - first[p]; if (d > worst) worst = d
			printf "%s %s %d %d\n", p, app[p], first[p], last[p] > "/dev/stderr"
		}
		print worst + 0, length(first)
	}' "$out/rss.log" 2>"$out/rss_summary.txt")
read -r rss_worst rss_n <<<"$rss_summary"
[ "${rss_n:-0}" -gt 0 ] && [ "$rss_worst" -le 16384 ]
tap $? "backend memory flat: largest RssAnon growth ${rss_worst} kB over $rss_n backends (after warm-up to end, limit 16384 kB)"
sed 's/^/#   pid app first_kB last_kB: /' "$out/rss_summary.txt"

# after the run: each model's active version scores every row like its fixture
final=$(q -F ' ' -c "
	SELECT m.name, coalesce(f.file, '?'), coalesce(c.d, -1)
	FROM hb_models m
	LEFT JOIN LATERAL (SELECT substr(r.name, 5) AS file FROM hb_models r
					   WHERE r.name LIKE 'ref\_%' AND r.sha256 = m.sha256 LIMIT 1) f ON true
	LEFT JOIN LATERAL (
		SELECT count(*) AS d FROM tx t JOIN hb_load_ref x ON x.id = t.id AND x.family = 'ms' AND x.file = f.file
		WHERE hb_predict(m.name, t) IS DISTINCT FROM x.pred) c ON true
	WHERE m.active AND m.name IN ('ms', 'mr', 'mx') ORDER BY m.name")
final_bad=$(echo "$final" | awk '$3 != 0' | wc -l)
final_n=$(echo "$final" | awk '$1 == "ms" || $1 == "mr"' | wc -l)
[ "$final_bad" = 0 ] && [ "$final_n" = 2 ]
tap $? "after the run the active versions score every row like their fixtures ($(echo "$final" | awk '{ printf "%s%s=%s: %s rows differ", sep, $1, $2, $3; sep = "; " }'))"

# ---- summary ----
echo "# ---- summary ----"
echo "# scorers (pgbench -c $clients -T $secs):"
grep -E '^(number of transactions actually processed|number of failed|tps|latency average|SQL script| - [0-9]+ transactions)' \
	"$out/scorers.out" | sed 's/^/#   /'
echo "# admin (pgbench -c 1 -R $admin_rate):"
grep -E '^(number of transactions actually processed|tps)' "$out/admin.out" | sed 's/^/#   /'
q -F ' ' -c "SELECT op, count(*) FROM hb_load_admin_log GROUP BY op ORDER BY op" | sed 's/^/#   admin op: /'
q -c "SELECT string_agg(format('%s %s', model, n), ', ' ORDER BY model) FROM (SELECT model, count(*) AS n
	FROM hb_load_admin_log WHERE op IN ('create', 'upload', 'activate', 'drop all') GROUP BY model) x" |
	sed 's/^/#   changes of the active version (or drops) per model: /'
echo "# errors in the server log by SQLSTATE (uncaught):"
if [ -s "$out/errors.txt" ]; then
	awk '{ print $1, $2 }' "$out/errors.txt" | sort | uniq -c | sed 's/^/#   /'
else
	echo "#   none"
fi
echo "# errors caught by the mx wrapper, by SQLSTATE:"
q -F ' ' -c "SELECT count(*) FILTER (WHERE kind LIKE '42704%') AS \"42704\", count(*) FILTER (WHERE kind = 'mx scored') AS scored FROM hb_load_event" |
	awk '{ print "#   42704 (model \"mx\" does not exist): " $1 ", mx statements that scored: " $2 }'
echo "# mismatching statements: $bad"
echo "# plan cache (monitor, limit $cache_limit): max entries $max_entries; cache bytes $warm_cache -> $last_cache; backend bytes $warm_backend -> $last_backend"
echo "# logs: $out"
[ "$failed" = 0 ] && echo "# load test passed" || echo "# load test FAILED"
exit "$failed"
