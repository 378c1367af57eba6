-- Tuned approximations: hb_tune, approximate top-K, cascades, hb_tunings.
-- Models from test/fixtures/willump/gen_willump.py; its rows are a formula of the
-- row id, so the tests tune on some ids and check on others (held out).
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/willump/'
\set m `cat :fixtures/willump_rank.json`
SELECT hb_model_upload('wrank', :'m');
\set m `cat :fixtures/willump_fraud.json`
SELECT hb_model_upload('wfraud', :'m');
\set m `cat :fixtures/willump_multi.json`
SELECT hb_model_upload('wmulti', :'m');

-- 30,000 rows the models never saw: ids <= 110000 tune, the rest check
CREATE TABLE items AS
SELECT id, hbt_wu(id, 0) f0, hbt_wu(id, 1) f1, hbt_wu(id, 2) f2, hbt_wu(id, 3) f3, hbt_wu(id, 4) f4,
	   hbt_wu(id, 5) f5, hbt_wu(id, 6) f6, hbt_wu(id, 7) f7, hbt_wu(id, 8) f8, hbt_wu(id, 9) f9
FROM generate_series(100001, 130000) id;
CREATE TABLE tx AS
SELECT id, f0, f1, f2, f3, f4, f5, f6, f7 FROM items;
CREATE TABLE obs AS
SELECT id, f0, f1, f2, f3, f4, f5 FROM items;
-- the full models' answers, before any shortcut exists
CREATE TABLE exact_tx AS SELECT id, hb_predict('wfraud', t) AS p FROM tx t;
CREATE TABLE exact_obs AS SELECT id, hb_predict('wmulti', o) AS c FROM obs o;

-- progress NOTICEs carry timings: keep them out of the expected output
SET client_min_messages = warning;

-- ---- bad arguments ----
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'topk', k => 10, target => 0)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'topk', k => 10, target => 1.5)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'topk', k => 10)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'topk', k => 10, target => 0.9, confidence => 1)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'topk', k => 10, target => 0.9, confidence => 0)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'bogus', target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'topk', target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'topk', k => 0, target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wfraud', 'SELECT * FROM tx', kind => 'cascade', k => 5, target => 0.01)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items WHERE false', kind => 'topk', k => 10, target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items WHERE id < 100100', kind => 'topk', k => 10, target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT id, f0, f1 FROM items', kind => 'topk', k => 10, target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'SELECT * FROM items', kind => 'cascade', target => 0.01)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wmulti', 'SELECT * FROM obs', kind => 'topk', k => 10, target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('nosuch', 'SELECT * FROM items', kind => 'topk', k => 10, target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_tune('wrank', 'DELETE FROM items', kind => 'topk', k => 10, target => 0.9)$$);
SELECT hbt_try($$SELECT * FROM hb_topk('wrank', 10, NULL::items, mode => 'approx')$$);
SET hbird.topk_mode = 'approx';
SELECT hbt_try($$SELECT hb_topk_agg('wrank', 3, i) FROM items i$$);
RESET hbird.topk_mode;

-- ---- approximate top-K ----
CREATE TABLE tune1 AS
SELECT * FROM hb_tune('wrank', $$SELECT * FROM items WHERE id <= 110000$$,
					  kind => 'topk', k => 10, target => 0.9, confidence => 0.95, seed => 1);
CREATE TABLE tune2 AS
SELECT * FROM hb_tune('wrank', $$SELECT * FROM items WHERE id <= 110000$$,
					  kind => 'topk', k => 10, target => 0.9, confidence => 0.95, seed => 1);
-- every candidate is measured, one is chosen, bounds meet the target
SELECT count(*) > 5 AS candidates,
	   count(*) FILTER (WHERE chosen) AS chosen,
	   count(*) FILTER (WHERE approximation LIKE 'prefix%') > 0 AS prefixes,
	   count(*) FILTER (WHERE approximation LIKE 'linear%') > 0 AS linear,
	   bool_and(accuracy_bound >= 0.9 AND kept >= 10 AND ratio = kept / 10.0 AND threshold IS NULL) AS bounds_met,
	   bool_and(cost_us > 0 AND expected_speedup > 0) AS costs
FROM tune1;
-- same seed, same configurations (costs are measured times: not compared;
-- which candidate is chosen depends on them, and the chosen one is fitted
-- again on the whole fitting half, the same way when both runs chose it)
SELECT count(*) AS differ
FROM tune1 a FULL JOIN tune2 b USING (candidate)
WHERE a.chosen IS NOT DISTINCT FROM b.chosen
  AND (a.approximation, a.ratio, a.kept, a.accuracy, a.accuracy_bound, a.coverage)
	  IS DISTINCT FROM (b.approximation, b.ratio, b.kept, b.accuracy, b.accuracy_bound, b.coverage);
SELECT name, version, active, kind, k, target, confidence, seed, sample_rows, eval_rows,
	   approximation = (SELECT approximation FROM tune2 WHERE chosen) AS chosen_one,
	   accuracy_bound >= target AS meets, expected_speedup > 0 AS speedup, tuned_by
FROM hb_tunings;
SELECT count(*) AS stored_candidates FROM hb_tuning_candidates WHERE name = 'wrank';

CREATE FUNCTION plan_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		RETURN NEXT l;
	END LOOP;
END $$;
-- held out: ten sets of 2,000 rows, approximate against exact
CREATE FUNCTION topk_precision(q text, k int) RETURNS float8
LANGUAGE sql AS $$
	SELECT count(*)::float8 / k
	FROM (SELECT (item).id FROM hb_topk('wrank', k, NULL::items, q, mode => 'approx')) a
	JOIN (SELECT (item).id FROM hb_topk('wrank', k, NULL::items, q, mode => 'exact')) e USING (id)
$$;
SELECT avg(p) >= 0.9 AS mean_precision_met, min(p) >= 0.7 AS worst_set_ok
FROM (SELECT topk_precision(format('SELECT * FROM items WHERE id > %s AND id <= %s', lo, lo + 2000), 10) AS p
	  FROM generate_series(110000, 128000, 2000) lo) s;
-- the whole held-out part, and k smaller than tuned
SELECT topk_precision('SELECT * FROM items WHERE id > 110000', 10) >= 0.9 AS all_rows,
	   topk_precision('SELECT * FROM items WHERE id > 110000', 3) >= 0.66 AS k3;
-- k rows, ranked by the full model's score (what hb_predict returns)
SELECT count(*) AS rows, bool_and(score = hb_predict('wrank', item)) AS full_scores,
	   bool_and(rank = r) AS ranked
FROM (SELECT rank, score, item, row_number() OVER (ORDER BY score DESC) AS r
	  FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx')) t;
SELECT rows, rows_fully_scored < rows / 4 AS few_rescored, pairs_scored < pairs_total / 4 AS cheap
FROM hb_topk_stats();
-- the cut relative to the bar (docs/willump.md): whether hb_tune sets one
-- depends on which candidate the measured times pick, so it is planted here.
-- Slope 0 and a huge margin: every row passes once k rows are scored (the
-- fixed cut judges those before), the answer is the exact one
CREATE TABLE bar_saved AS
SELECT bar_slope, bar_floor, bar_margin FROM hbird.tuning WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
CREATE TABLE bar_exact AS
SELECT rank, (item).id FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'exact');
UPDATE hbird.tuning SET bar_slope = 0, bar_floor = 0, bar_margin = 1e9 WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
-- off by default (hbird.topk_bar_cut): its statement rests on an
-- assumption the sample cannot check, so the cut is the fixed one, whose
-- statement hb_tune makes; the planted bar cut changes nothing
SELECT count(*) AS rows FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx');
SELECT rows_fully_scored < rows / 4 AS fixed_cut_only FROM hb_topk_stats();
SET hbird.topk_bar_cut = on;
SELECT count(*) FILTER (WHERE (item).id = e.id) AS same_as_exact
FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx') a
JOIN bar_exact e USING (rank);
SELECT rows_fully_scored > rows / 2 AS most_rescored FROM hb_topk_stats();
-- slope 0, margin 0, floor the fixed cut: a row is finished only when its
-- cheap score reaches the fixed cut and the k-th best full margin so far (a
-- rising cut), and the rows waiting to fill a small answer are let go once
-- that bar is above the floor: fewer rows re-scored than under the fixed
-- cut, and what comes back is still ranked by full scores
UPDATE hbird.tuning SET bar_slope = NULL, bar_floor = NULL, bar_margin = NULL WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
SELECT count(*) AS rows FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx');
CREATE TABLE bar_fixed AS SELECT rows_fully_scored AS scored FROM hb_topk_stats();
UPDATE hbird.tuning SET bar_slope = 0, bar_floor = cheap_cut, bar_margin = 0 WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
SELECT count(*) AS rows, bool_and(score = hb_predict('wrank', item)) AS full_scores,
	   bool_and(rank = r) AS ranked
FROM (SELECT rank, score, item, row_number() OVER (ORDER BY score DESC) AS r
	  FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx')) t;
SELECT s.rows_fully_scored < f.scored AS fewer_rescored, s.rows_fully_scored > 0 AS some_rescored
FROM hb_topk_stats() s, bar_fixed f;
-- the plain query takes the same cut: fewer rows scored than under the fixed
-- one; and rows below the cut stop waiting once the bar covers the floor
-- (they would be let go at the end): fewer rows wait than under the fixed
-- cut, where they wait to the end
SELECT (SELECT substring(l FROM 'Rows Scored: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Scored') AS bar_scored \gset
SELECT (SELECT substring(l FROM 'Rows Waited: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Waited') AS bar_waited \gset
UPDATE hbird.tuning SET bar_slope = NULL, bar_floor = NULL, bar_margin = NULL WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
SELECT (SELECT substring(l FROM 'Rows Scored: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Scored') AS fixed_scored \gset
SELECT (SELECT substring(l FROM 'Rows Waited: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Waited') AS fixed_waited \gset
SELECT :bar_scored < :fixed_scored AS plain_fewer_scored, :bar_waited < :fixed_waited AS plain_fewer_waited,
	   :bar_waited > 0 AS some_waited_first;
-- read back: a bar cut that is not a number, or partly missing, or a slope
-- outside [0, 1], is refused
SELECT hbt_try($$UPDATE hbird.tuning SET bar_slope = 0.5, bar_floor = 1 WHERE name = 'wrank' AND kind = 'topk' AND k = 10$$);
SELECT hbt_try($$UPDATE hbird.tuning SET bar_slope = 1.5, bar_floor = 1, bar_margin = 1 WHERE name = 'wrank' AND kind = 'topk' AND k = 10$$);
UPDATE hbird.tuning SET bar_slope = 0.5, bar_floor = 'NaN', bar_margin = 1 WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
SELECT hbt_try($$SELECT count(*) FROM hb_topk('wrank', 10, NULL::items, mode => 'approx')$$);
SELECT hbt_try($$SELECT id FROM items i ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$);
UPDATE hbird.tuning t SET bar_slope = s.bar_slope, bar_floor = s.bar_floor, bar_margin = s.bar_margin
FROM bar_saved s WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
DROP TABLE bar_saved, bar_exact, bar_fixed;
RESET hbird.topk_bar_cut;
-- off, a stored bar cut's floor (the full margin s* the fixed cut's
-- statement starts at) still lets the waiting rows go once the bar reaches
-- it, the answer then lying where that statement holds: fewer rows wait
-- than without the floor, under the same fixed cut
CREATE TABLE bar_saved AS
SELECT bar_slope, bar_floor, bar_margin FROM hbird.tuning WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
UPDATE hbird.tuning SET bar_slope = 0, bar_floor = cheap_cut, bar_margin = 0 WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
SELECT (SELECT substring(l FROM 'Rows Waited: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Waited') AS floor_waited \gset
SELECT (SELECT substring(l FROM 'Rows Scored: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Scored') AS floor_scored \gset
UPDATE hbird.tuning SET bar_slope = NULL, bar_floor = NULL, bar_margin = NULL WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
SELECT :floor_waited < :fixed_waited AS floor_fewer_waited, :floor_scored <= :fixed_scored AS floor_no_more_scored;
UPDATE hbird.tuning t SET bar_slope = s.bar_slope, bar_floor = s.bar_floor, bar_margin = s.bar_margin
FROM bar_saved s WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
DROP TABLE bar_saved;
-- memory (pg_approx.c, pg_topk.c): planted, no row reaches the cut and the
-- best ratio * k rows by cheap score wait to be scored at the end.  Where
-- they outgrow work_mem they are scored early and rows wait again: more
-- rows scored, a superset of the rule's, so at every rank a score at least
-- as high as with them held
CREATE TABLE mem_saved AS SELECT * FROM hbird.tuning WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
UPDATE hbird.tuning SET ratio = 200, cheap_cut = 1e300, bar_slope = NULL, bar_floor = NULL, bar_margin = NULL,
	   gate_features = NULL, gate_params = NULL, gate_slack = NULL,
	   refine_trees = NULL, refine_scale = NULL, refine_shift = NULL, refine_slack = NULL
WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
CREATE TABLE mem_held AS
SELECT rank, score FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx');
SELECT rows_fully_scored AS held_scored FROM hb_topk_stats();
SET work_mem = '64kB';
CREATE TABLE mem_flushed AS
SELECT rank, score, item FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx');
-- (rows scored early keep their places: not every row is scored)
SELECT rows_fully_scored > 2000 AS scored_early, rows_fully_scored < rows AS not_every_row
FROM hb_topk_stats();
RESET work_mem;
SELECT count(*) AS rows, bool_and(f.score >= h.score) AS no_worse,
	   bool_and(f.score = hb_predict('wrank', f.item)) AS full_scores
FROM mem_flushed f JOIN mem_held h USING (rank);
-- the plain query's batching scan hands the waiting rows up early instead
SELECT (SELECT substring(l FROM 'Rows Scored: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Scored') AS held_plain \gset
CREATE TABLE mem_plain_held AS
SELECT row_number() OVER () AS rank, s FROM (SELECT hb_predict('wrank', i) AS s FROM items i WHERE id > 110000 ORDER BY s DESC LIMIT 10) q;
SET work_mem = '64kB';
SELECT (SELECT substring(l FROM 'Rows Scored: (\d+)')::int FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l
		WHERE l ~ 'Rows Scored') AS flushed_plain \gset
CREATE TABLE mem_plain_flushed AS
SELECT row_number() OVER () AS rank, id, s FROM (SELECT id, hb_predict('wrank', i) AS s FROM items i WHERE id > 110000 ORDER BY s DESC LIMIT 10) q;
RESET work_mem;
SELECT :held_plain AS held_plain, :flushed_plain > :held_plain AS plain_scored_early,
	   :flushed_plain < 20000 AS plain_not_every_row;
SELECT count(*) AS rows, bool_and(f.s >= h.s) AS no_worse,
	   bool_and(f.s = hb_predict('wrank', i)) AS full_scores
FROM mem_plain_flushed f JOIN mem_plain_held h USING (rank) JOIN items i USING (id);
-- with a cut relative to the bar the rule's decisions follow the rows it
-- finishes itself: rows scored early (more of them at 64kB) do not raise
-- its bar (they did: the waiting rows were let go once it passed the
-- floor, and the true best was lost), so every path is again no worse
SET hbird.topk_bar_cut = on;
UPDATE hbird.tuning SET bar_slope = 0, bar_floor = 1.5, bar_margin = 0
WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
CREATE FUNCTION mem_answers() RETURNS TABLE (path text, rank bigint, s float8) LANGUAGE sql AS $$
	SELECT 'hb_topk', rank, score FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx')
	UNION ALL
	SELECT 'agg', j, hb_predict('wrank', a[j])
	FROM (SELECT hb_topk_agg('wrank', 10, i) AS a FROM items i WHERE id > 110000) x, generate_subscripts(a, 1) j
	UNION ALL
	SELECT 'plain', row_number() OVER (), s
	FROM (SELECT hb_predict('wrank', i) AS s FROM items i WHERE id > 110000 ORDER BY s DESC LIMIT 10) q
$$;
CREATE TABLE mem_bar_held AS SELECT * FROM mem_answers();
SET work_mem = '64kB';
CREATE TABLE mem_bar_flushed AS SELECT * FROM mem_answers();
RESET work_mem;
SELECT path, count(*) AS rows, bool_and(f.s >= h.s) AS no_worse
FROM mem_bar_flushed f JOIN mem_bar_held h USING (path, rank) GROUP BY path ORDER BY path;
UPDATE hbird.tuning SET bar_slope = NULL, bar_floor = NULL, bar_margin = NULL
WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
RESET hbird.topk_bar_cut;
-- ratio 1: the best k by cheap score alone, which misses some of the exact
-- answer; where k rows would not fit work_mem hb_topk ranks exactly
UPDATE hbird.tuning SET ratio = 1 WHERE name = 'wrank' AND kind = 'topk' AND k = 10;
CREATE TABLE mem_exact AS
SELECT rank, (item).id FROM hb_topk('wrank', 5000, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'exact');
SELECT count(*) FILTER (WHERE (a.item).id IS DISTINCT FROM e.id) > 0 AS approximate_differs
FROM hb_topk('wrank', 5000, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx') a
JOIN mem_exact e USING (rank);
SET work_mem = '64kB';
SELECT count(*) AS rows, count(*) FILTER (WHERE (a.item).id IS DISTINCT FROM e.id) AS differ_from_exact
FROM hb_topk('wrank', 5000, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx') a
JOIN mem_exact e USING (rank);
RESET work_mem;
UPDATE hbird.tuning t SET ratio = s.ratio, cheap_cut = s.cheap_cut, bar_slope = s.bar_slope,
	   bar_floor = s.bar_floor, bar_margin = s.bar_margin, gate_features = s.gate_features,
	   gate_params = s.gate_params, gate_slack = s.gate_slack, refine_trees = s.refine_trees,
	   refine_scale = s.refine_scale, refine_shift = s.refine_shift, refine_slack = s.refine_slack
FROM mem_saved s WHERE t.name = 'wrank' AND t.kind = 'topk' AND t.k = 10;
DROP TABLE mem_saved, mem_held, mem_flushed, mem_exact, mem_plain_held, mem_plain_flushed,
	mem_bar_held, mem_bar_flushed;
DROP FUNCTION mem_answers();
-- empty input, fewer rows than k, k above the tuned one
SELECT count(*) AS none FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE false', mode => 'approx');
SELECT cardinality(a) AS rows, a = e AS same_as_exact
FROM (SELECT array_agg((item).id ORDER BY rank) AS a FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 129995', mode => 'approx')) x,
	 (SELECT array_agg((item).id ORDER BY rank) AS e FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 129995', mode => 'exact')) y;
SELECT count(*) AS rows, bool_and(score = hb_predict('wrank', item)) AS full_scores
FROM hb_topk('wrank', 50, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx');
-- the plain query (batching scan) approximates too under hbird.topk_mode
-- auto: the tuned cheap model scores the rows, the rows it keeps get the
-- full model's scores, the others -Infinity; held out, against exact
SELECT count(*) FILTER (WHERE l ~ 'Top-K: descending, k = 10, approximate \(.+, tuned for k = 10\)') AS approximate,
	   count(*) FILTER (WHERE l ~ 'Rows Pruned: [1-9]') AS pruned
FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l;
-- ten held-out sets in one statement: the node is rescanned per set
CREATE VIEW plain_topk AS
SELECT lo, q.id, q.s
FROM generate_series(110000, 128000, 2000) lo,
	 LATERAL (SELECT id, hb_predict('wrank', i) AS s FROM items i
			  WHERE id > lo AND id <= lo + 2000 ORDER BY s DESC, id LIMIT 10) q;
CREATE TABLE plain_approx AS SELECT * FROM plain_topk;
SET hbird.topk_mode = 'exact';
SELECT count(*) FILTER (WHERE l ~ 'approximate') AS approximate
FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 10$$) l;
CREATE TABLE plain_exact AS SELECT * FROM plain_topk;
RESET hbird.topk_mode;
SELECT count(*) AS sets, avg(p) >= 0.9 AS mean_precision_met, min(p) >= 0.7 AS worst_set_ok,
	   bool_and(n = 10) AS k_rows
FROM (SELECT lo, count(*) AS n,
			 count(*) FILTER (WHERE id IN (SELECT id FROM plain_exact e WHERE e.lo = a.lo))::float8 / 10 AS p
	  FROM plain_approx a GROUP BY lo) s;
-- the scores it returns are the full model's, row at a time
SET hbird.batch_scan = off;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.s IS DISTINCT FROM hb_predict('wrank', i)) AS differ
FROM plain_approx a JOIN items i USING (id);
RESET hbird.batch_scan;
-- ascending order is not tuned for: exact; a model without a tuning: exact
-- under auto, an error under approx
SELECT count(*) FILTER (WHERE l ~ 'approximate') AS approximate
FROM plan_lines($$SELECT id FROM items i ORDER BY hb_predict('wrank', i) LIMIT 10$$) l;
SELECT count(*) FILTER (WHERE l ~ 'approximate') AS approximate
FROM plan_lines($$SELECT id FROM tx t ORDER BY hb_predict('wfraud', t) DESC LIMIT 10$$) l;
SET hbird.topk_mode = 'approx';
SELECT hbt_try($$SELECT id FROM tx t ORDER BY hb_predict('wfraud', t) DESC LIMIT 10$$);
RESET hbird.topk_mode;
-- a cheap model that is a tree ensemble, planted by hand for k = 3 (hb_tune
-- picks its own): one stump, f0 <= 0 scores -1, f0 > 0 scores 1, cut 0.5
INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed,
	sample_rows, eval_rows, approximation, approx_kind, approx_trees,
	approx_features, approx_params, ratio, kept, cheap_cut, accuracy,
	accuracy_bound, coverage, full_cost_us, approx_cost_us, expected_speedup, tuned_by)
VALUES ('wrank', 1, 'topk', 3, 0.9, 0.95, 0, 1000, 500, 'planted', 'trees', 1,
	'{3, 0,1,2,1, -1,-1,-1,0, -1,-1,-1,0}', '{0, 0.0, -1, 1}', 10, 30, 0.5, 0.9,
	0.9, 0.5, 1, 0.1, 2, current_user);
SELECT count(*) FILTER (WHERE l ~ 'approximate \(trees: 1 of depth 1 on 1 features, tuned for k = 3\)') AS planted
FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wrank', i) DESC LIMIT 3$$) l;
-- hb_topk keeps the rows with f0 > 0; the plain query also its first 2k
-- (the rows below the cut that waited at first lost their places as more
-- than 30 rows came above it)
SET hbird.topk_mode = 'exact';
CREATE TABLE planted_want AS
SELECT (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM items i
		WHERE id > 110000 AND f0 > 0 ORDER BY s DESC, id LIMIT 3) q) AS topk,
	   (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM items i
		WHERE id > 110000 AND (f0 > 0 OR id <= 110006) ORDER BY s DESC, id LIMIT 3) q) AS plain;
RESET hbird.topk_mode;
SELECT (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('wrank', 3, NULL::items,
			'SELECT * FROM items WHERE id > 110000', mode => 'approx')) = topk AS topk_keeps_f0_positive,
	   (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM items i
			WHERE id > 110000 ORDER BY s DESC, id LIMIT 3) q) = plain AS plain_keeps_f0_positive
FROM planted_want;
-- a k above every tuned one (4, the same model as 'wk' with only the
-- planted tuning for 3) keeps ratio * k rows and the rows above the cut
-- too, a superset of what k = 3 keeps: its first 3 are k = 3's (ratio * k
-- alone, the first 40 rows with f0 > 0, would miss them)
\set m `cat :fixtures/willump_rank.json`
SELECT hb_model_upload('wk', :'m') IS NOT NULL AS uploaded;
INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed,
	sample_rows, eval_rows, approximation, approx_kind, approx_trees,
	approx_features, approx_params, ratio, kept, cheap_cut, accuracy,
	accuracy_bound, coverage, full_cost_us, approx_cost_us, expected_speedup, tuned_by)
SELECT 'wk', 1, kind, k, target, confidence, seed, sample_rows, eval_rows, approximation,
	approx_kind, approx_trees, approx_features, approx_params, ratio, kept, cheap_cut, accuracy,
	accuracy_bound, coverage, full_cost_us, approx_cost_us, expected_speedup, tuned_by
FROM hbird.tuning WHERE name = 'wrank' AND k = 3;
SELECT (SELECT (array_agg((item).id ORDER BY rank))[1:3] FROM hb_topk('wk', 4, NULL::items,
			'SELECT * FROM items WHERE id > 110000', mode => 'approx')) = topk AS topk_k4_keeps_the_cut,
	   (SELECT (array_agg(id ORDER BY s DESC, id))[1:3] FROM (SELECT id, hb_predict('wk', i) AS s FROM items i
			WHERE id > 110000 ORDER BY s DESC, id LIMIT 4) q) = plain AS plain_k4_keeps_the_cut,
	   (SELECT count(*) FROM plan_lines($$SELECT id FROM items i WHERE id > 110000 ORDER BY hb_predict('wk', i) DESC LIMIT 4$$) l
		WHERE l ~ 'tuned for k = 3') AS approximate
FROM planted_want;
SELECT hb_model_drop('wk') IS NOT NULL AS dropped;
-- fewer rows above the cut (f0 > 0) than kept (30): the best 30 - A rows
-- below it also wait and are scored at the end; their cheap scores tie
-- (-1), so those are the first ones in input order
CREATE TABLE planted_few AS
SELECT * FROM items WHERE id > 110000 AND f0 IS NOT NULL AND (f0 <= 0 OR id <= 110040) ORDER BY id;
SET hbird.topk_mode = 'exact';
CREATE TABLE planted_few_want AS
WITH a AS (SELECT count(*) AS n FROM planted_few WHERE f0 > 0),
	 w AS (SELECT id FROM planted_few WHERE f0 <= 0 ORDER BY id LIMIT (SELECT 30 - n FROM a))
SELECT (SELECT n FROM a) AS above,
	   (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM planted_few i
		WHERE f0 > 0 OR id IN (SELECT id FROM w) ORDER BY s DESC, id LIMIT 3) q) AS topk;
RESET hbird.topk_mode;
SELECT above BETWEEN 1 AND 29 AS fewer_than_kept,
	   (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('wrank', 3, NULL::items,
			'SELECT * FROM planted_few', mode => 'approx')) = topk AS topk_scores_the_waiting_rows
FROM planted_few_want;
SELECT rows_fully_scored AS scored FROM hb_topk_stats();
-- the plain query: its first 2k rows (6), then the rows the same rule names
-- among the others, 30 of them
SET hbird.topk_mode = 'exact';
CREATE TABLE planted_few_plain AS
WITH r AS (SELECT * FROM planted_few WHERE id > (SELECT id FROM planted_few ORDER BY id OFFSET 5 LIMIT 1)),
	 a AS (SELECT count(*) AS n FROM r WHERE f0 > 0),
	 w AS (SELECT id FROM r WHERE f0 <= 0 ORDER BY id LIMIT (SELECT 30 - n FROM a))
SELECT array_agg(id ORDER BY s DESC, id) AS topk
FROM (SELECT id, hb_predict('wrank', i) AS s FROM planted_few i
	  WHERE id NOT IN (SELECT id FROM r) OR f0 > 0 OR id IN (SELECT id FROM w) ORDER BY s DESC, id LIMIT 3) q;
RESET hbird.topk_mode;
SELECT (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM planted_few i
			ORDER BY s DESC, id LIMIT 3) q) = topk AS plain_scores_the_waiting_rows
FROM planted_few_plain;
SELECT l FROM plan_lines($$SELECT id FROM planted_few i ORDER BY hb_predict('wrank', i) DESC, id LIMIT 3$$) l
WHERE l ~ 'Rows (Scored|Pruned)';
-- a second stage (the first 40 of the 80 trees) behind the planted stump
-- whose score is (0 * partial + 0) + slack: with slack 1 every row the
-- stump passes passes it too, and nothing changes but the rows it scored
UPDATE hbird.tuning SET refine_trees = 40, refine_scale = 0, refine_shift = 0, refine_slack = 1
WHERE name = 'wrank' AND k = 3;
SELECT (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('wrank', 3, NULL::items,
			'SELECT * FROM planted_few', mode => 'approx')) = w.topk AS topk_unchanged,
	   (SELECT rows_fully_scored FROM hb_topk_stats()) AS scored,
	   (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM planted_few i
			ORDER BY s DESC, id LIMIT 3) q) = p.topk AS plain_unchanged
FROM planted_few_want w, planted_few_plain p;
SELECT l FROM plan_lines($$SELECT id FROM planted_few i ORDER BY hb_predict('wrank', i) DESC, id LIMIT 3$$) l
WHERE l ~ 'Rows (Scored|Refined)|then prefix';
-- with slack -1 no row passes it: every row is below the cut after all, and
-- ranks by its second-stage score (-1) or its cheap one (-1), ties by input
-- order, so the first 30 rows wait and are finished, the ones the second
-- stage scored from its partial sums, the others from none
UPDATE hbird.tuning SET refine_slack = -1 WHERE name = 'wrank' AND k = 3;
SET hbird.topk_mode = 'exact';
CREATE TABLE refine_want AS
SELECT (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM
		(SELECT * FROM planted_few ORDER BY id LIMIT 30) i ORDER BY s DESC, id LIMIT 3) q) AS topk,
	   (SELECT array_agg(s ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM
		(SELECT * FROM planted_few ORDER BY id LIMIT 30) i ORDER BY s DESC, id LIMIT 3) q) AS scores,
	   (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM
		(SELECT * FROM planted_few ORDER BY id LIMIT 36) i ORDER BY s DESC, id LIMIT 3) q) AS plain,
	   (SELECT count(*) FROM (SELECT * FROM planted_few ORDER BY id LIMIT 30) i WHERE f0 > 0) AS refined_first30;
RESET hbird.topk_mode;
SELECT refined_first30 > 0 AS some_refined_rows_wait,
	   (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('wrank', 3, NULL::items,
			'SELECT * FROM planted_few', mode => 'approx')) = topk AS topk_first_30,
	   (SELECT array_agg(score ORDER BY rank) FROM hb_topk('wrank', 3, NULL::items,
			'SELECT * FROM planted_few', mode => 'approx')) = scores AS same_scores,
	   (SELECT rows_fully_scored FROM hb_topk_stats()) AS scored,
	   (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM planted_few i
			ORDER BY s DESC, id LIMIT 3) q) = plain AS plain_first_36
FROM refine_want;
SELECT l FROM plan_lines($$SELECT id FROM planted_few i ORDER BY hb_predict('wrank', i) DESC, id LIMIT 3$$) l
WHERE l ~ 'Rows (Scored|Refined)';
-- the same behind a prefix of 10 trees (every row passes its cut, 0 *
-- partial + 1): the waiting rows hold the partial sums of 40 trees, and
-- are finished from there, with exactly hb_predict's scores
UPDATE hbird.tuning SET approx_kind = 'prefix', approx_trees = 10, approx_features = '{}',
	approx_params = '{0, 1}' WHERE name = 'wrank' AND k = 3;
SELECT (SELECT array_agg((item).id ORDER BY rank) FROM hb_topk('wrank', 3, NULL::items,
			'SELECT * FROM planted_few', mode => 'approx')) = topk AS prefix_topk_first_30,
	   (SELECT array_agg(score ORDER BY rank) FROM hb_topk('wrank', 3, NULL::items,
			'SELECT * FROM planted_few', mode => 'approx')) = scores AS prefix_same_scores,
	   (SELECT (rows_fully_scored, pairs_scored) FROM hb_topk_stats()) AS scored_pairs,
	   (SELECT array_agg(id ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM planted_few i
			ORDER BY s DESC, id LIMIT 3) q) = plain AS prefix_plain_first_36,
	   (SELECT array_agg(s ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM planted_few i
			ORDER BY s DESC, id LIMIT 3) q) =
	   (SELECT array_agg(s ORDER BY s DESC, id) FROM (SELECT id, hb_predict('wrank', i) AS s FROM
			(SELECT * FROM planted_few ORDER BY id LIMIT 36) i ORDER BY s DESC, id LIMIT 3) q) AS prefix_plain_scores
FROM refine_want;
SELECT count(*) AS rows FROM planted_few;
-- a second stage that is not one is refused when it is read
UPDATE hbird.tuning SET refine_trees = 10 WHERE name = 'wrank' AND k = 3;
SELECT hbt_try($$SELECT id FROM items i ORDER BY hb_predict('wrank', i) DESC LIMIT 3$$);
UPDATE hbird.tuning SET refine_trees = 80 WHERE name = 'wrank' AND k = 3;
SELECT hbt_try($$SELECT id FROM items i ORDER BY hb_predict('wrank', i) DESC LIMIT 3$$);
SELECT hbt_try($$UPDATE hbird.tuning SET refine_slack = NULL WHERE name = 'wrank' AND k = 3$$);
UPDATE hbird.tuning SET refine_trees = NULL, refine_scale = NULL, refine_shift = NULL, refine_slack = NULL,
	approx_kind = 'trees', approx_trees = 1, approx_features = '{3, 0,1,2,1, -1,-1,-1,0, -1,-1,-1,0}',
	approx_params = '{0, 0.0, -1, 1}'
WHERE name = 'wrank' AND k = 3;
DROP TABLE planted_few, planted_few_want, planted_few_plain, refine_want;
-- a corrupted flat form is refused when it is read
UPDATE hbird.tuning SET approx_features = '{3, 0,1,9,1, -1,-1,-1,0, -1,-1,-1,0}'
WHERE name = 'wrank' AND k = 3;
SELECT hbt_try($$SELECT id FROM items i ORDER BY hb_predict('wrank', i) DESC LIMIT 3$$);
UPDATE hbird.tuning SET approx_features = '{3, 0,1,2,1, -1,-1,-1,0, -1,-1,-1,0}' WHERE name = 'wrank' AND k = 3;
-- so is a cut that is not a number (no row would pass it) or missing
UPDATE hbird.tuning SET cheap_cut = 'NaN' WHERE name = 'wrank' AND k = 3;
SELECT hbt_try($$SELECT id FROM items i ORDER BY hb_predict('wrank', i) DESC LIMIT 3$$);
SELECT hbt_try($$SELECT count(*) FROM hb_topk('wrank', 3, NULL::items, mode => 'approx')$$);
UPDATE hbird.tuning SET cheap_cut = NULL WHERE name = 'wrank' AND k = 3;
SELECT hbt_try($$SELECT count(*) FROM hb_topk('wrank', 3, NULL::items, mode => 'approx')$$);
DELETE FROM hbird.tuning WHERE name = 'wrank' AND k = 3;
DROP TABLE planted_want;
-- negative scores: the same trees shifted by -100, tuned and checked again
\set m `cat :fixtures/willump_rank.json`
SELECT hb_model_upload('wneg', replace(:'m', '"base_score":"5E-1"', '"base_score":"-1E2"'));
SELECT count(*) FILTER (WHERE chosen) AS chosen
FROM hb_tune('wneg', $$SELECT * FROM items WHERE id <= 110000$$, kind => 'topk', k => 10, target => 0.9, seed => 2);
SELECT count(*) AS rows, max(score) < -90 AS all_negative, bool_and(score = hb_predict('wneg', item)) AS full_scores,
	   count(*) FILTER (WHERE (item).id IN (SELECT (item).id FROM hb_topk('wneg', 10, NULL::items,
			'SELECT * FROM items WHERE id > 110000', mode => 'exact'))) >= 9 AS precision_met
FROM hb_topk('wneg', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'approx');
SELECT hb_model_drop('wneg');
-- hbird.topk_mode for the aggregate (and hb_topk's 'auto')
CREATE TABLE grp AS
SELECT id % 5 AS g,
	   (SELECT array_agg((r).id) FROM unnest(hb_topk_agg('wrank', 10, i ORDER BY id)) r) AS ids
FROM items i WHERE id > 110000 GROUP BY 1;
-- in a window the aggregate is finalized again and again, and fed more rows
SELECT array_agg(cardinality(a) ORDER BY id) AS running_sizes,
	   (array_agg((a[1]).id ORDER BY id DESC))[1] =
	   (SELECT id FROM items i WHERE id > 129994 ORDER BY hb_predict('wrank', i) DESC, id LIMIT 1) AS last_has_best
FROM (SELECT id, hb_topk_agg('wrank', 3, i) OVER (ORDER BY id) AS a FROM items i WHERE id > 129994) w;
SET hbird.topk_mode = 'exact';
CREATE TABLE grp_exact AS
SELECT id % 5 AS g,
	   (SELECT array_agg((r).id) FROM unnest(hb_topk_agg('wrank', 10, i ORDER BY id)) r) AS ids
FROM items i WHERE id > 110000 GROUP BY 1;
SELECT count(*) AS groups,
	   avg((SELECT count(*) FROM unnest(a.ids) x WHERE x = ANY (e.ids)) / 10.0) >= 0.9 AS precision_met,
	   bool_and(cardinality(a.ids) = 10) AS k_rows
FROM grp a JOIN grp_exact e USING (g);
SELECT count(*) AS differ
FROM grp_exact e
JOIN (SELECT id % 5 AS g, array_agg(id ORDER BY rn) AS ids
	  FROM (SELECT id, row_number() OVER (PARTITION BY id % 5 ORDER BY hb_predict('wrank', i) DESC, id) AS rn
			FROM items i WHERE id > 110000) q
	  WHERE rn <= 10 GROUP BY 1) w USING (g)
WHERE e.ids IS DISTINCT FROM w.ids;
SELECT (SELECT array_agg((item).id) FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000')) =
	   (SELECT array_agg((item).id) FROM hb_topk('wrank', 10, NULL::items, 'SELECT * FROM items WHERE id > 110000', mode => 'exact'))
	   AS auto_follows_exact;
RESET hbird.topk_mode;

-- ---- cascades ----
CREATE TABLE ctune AS
SELECT * FROM hb_tune('wfraud', $$SELECT * FROM tx WHERE id <= 110000$$,
					  kind => 'cascade', target => 0.01, seed => 3);
SELECT count(*) FILTER (WHERE chosen) AS chosen,
	   bool_and(ratio IS NULL AND kept IS NULL) AS no_ratio,
	   bool_and(NOT chosen OR (1 - accuracy_bound <= 0.01 AND coverage > 0.3 AND threshold > 0)) AS chosen_meets
FROM ctune;
-- off: exact; on: the cascade, within the target on held-out rows
SELECT count(*) AS differ FROM tx t JOIN exact_tx e USING (id) WHERE hb_predict('wfraud', t) <> e.p;
SET hbird.cascade = on;
CREATE TABLE casc_tx AS SELECT id, hb_predict('wfraud', t) AS p FROM tx t;
SELECT count(*) AS held_out,
	   avg(((c.p > 0.5) <> (e.p > 0.5))::int) <= 0.01 AS loss_within_target,
	   count(*) FILTER (WHERE c.p <> e.p) > 0 AS cheap_answers,
	   count(*) FILTER (WHERE c.p = e.p) > 0 AS full_answers
FROM casc_tx c JOIN exact_tx e USING (id) WHERE id > 110000;
-- parallel workers read the same tuning under the statement's snapshot
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT count(*) AS differ
FROM (SELECT id, hb_predict('wfraud', t) AS p FROM tx t) q JOIN casc_tx c USING (id) WHERE q.p <> c.p;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- the batched forms run the same cascade
SELECT count(*) AS differ
FROM (SELECT unnest(hb_predict_agg('wfraud', t ORDER BY id)) AS p, unnest(array_agg(id ORDER BY id)) AS id FROM tx t) a
JOIN casc_tx c USING (id) WHERE a.p <> c.p;
SELECT count(*) AS differ
FROM hb_predict_batch('wfraud', NULL::tx) b JOIN casc_tx c ON c.id = (b.item).id WHERE b.score <> c.p;
-- proba and margins stay exact
SELECT count(*) AS differ FROM tx t JOIN exact_tx e USING (id)
WHERE (hb_predict_proba('wfraud', t))[2] <> e.p;
-- multiclass: the gap between the two best classes
CREATE TABLE mtune AS
SELECT * FROM hb_tune('wmulti', $$SELECT * FROM obs WHERE id <= 110000$$,
					  kind => 'cascade', target => 0.02, confidence => 0.9, seed => 5);
SELECT count(*) FILTER (WHERE chosen) AS chosen FROM mtune;
SELECT count(*) AS held_out, avg((hb_predict('wmulti', o) <> e.c)::int) <= 0.02 AS loss_within_target,
	   count(DISTINCT hb_predict('wmulti', o)) AS classes
FROM obs o JOIN exact_obs e USING (id) WHERE id > 110000;
RESET hbird.cascade;

-- ---- stale tunings ----
SELECT name, version, active, kind FROM hb_tunings ORDER BY name, kind;
\set m `cat :fixtures/willump_fraud.json`
SELECT hb_model_upload('wfraud', :'m');
SELECT name, version, active, kind FROM hb_tunings WHERE name = 'wfraud';
SET hbird.cascade = on;
SELECT count(*) AS differ FROM tx t JOIN exact_tx e USING (id) WHERE hb_predict('wfraud', t) <> e.p;
SELECT hb_model_activate('wfraud', 1);
SELECT count(*) > 0 AS cascade_again FROM tx t JOIN exact_tx e USING (id) WHERE hb_predict('wfraud', t) <> e.p;
RESET hbird.cascade;
SELECT hb_model_drop('wfraud', 1);
SELECT count(*) AS wfraud_tunings FROM hb_tunings WHERE name = 'wfraud';
SELECT count(*) AS wfraud_candidates FROM hb_tuning_candidates WHERE name = 'wfraud';
\set m `cat :fixtures/willump_rank.json`
SELECT hb_model_upload('wrank', :'m');
SELECT hbt_try($$SELECT * FROM hb_topk('wrank', 10, NULL::items, mode => 'approx')$$);
SELECT hb_model_activate('wrank', 1);
SELECT count(*) AS approx_again FROM hb_topk('wrank', 10, NULL::items, mode => 'approx');
SELECT hb_tune_drop('wrank', 'cascade') AS none, hb_tune_drop('wrank') AS dropped;

-- ---- privileges: only the owner tunes; the sample runs as the caller ----
CREATE ROLE hbt_tuner;
SELECT hb_model_grant('wmulti', 'hbt_tuner');
GRANT SELECT ON obs TO hbt_tuner;
GRANT EXECUTE ON FUNCTION hb_tune(text, text, text, integer, double precision, double precision, integer),
	hb_tune_drop(text, text) TO hbt_tuner;
SET ROLE hbt_tuner;
-- allowed to run hb_tune and to score, but not the owner
SELECT hbt_try($$SELECT * FROM hb_tune('wmulti', 'SELECT * FROM obs', kind => 'cascade', target => 0.05)$$);
SELECT hbt_try($$SELECT hb_tune_drop('wmulti')$$);
RESET ROLE;
SELECT hb_model_reassign('wmulti', 'hbt_tuner');
SET ROLE hbt_tuner;
-- the owner now, but the sample is read with its own rights
SELECT hbt_try($$SELECT * FROM hb_tune('wmulti', 'SELECT * FROM exact_obs', kind => 'cascade', target => 0.05)$$);
SELECT hbt_try($$SELECT hb_tune_drop('wmulti')$$);
RESET ROLE;
SELECT count(*) AS wmulti_tunings FROM hb_tunings WHERE name = 'wmulti';
SELECT hb_model_reassign('wmulti', current_user);
SELECT hb_model_revoke('wmulti', 'hbt_tuner');
REVOKE ALL ON obs FROM hbt_tuner;
REVOKE ALL ON FUNCTION hb_tune(text, text, text, integer, double precision, double precision, integer),
	hb_tune_drop(text, text) FROM hbt_tuner;
DROP ROLE hbt_tuner;

-- a sample with values a linear fit cannot take as they are (one +inf, a
-- fifth of a column at +-1e300): hb_tune succeeds (before, the fit failed,
-- and hb_tune with it) and stores only what later queries load (an infinite
-- parameter made every top-K query of the model fail until the tuning
-- was dropped); the rows with those values rank like the others
CREATE TABLE items_inf AS SELECT * FROM items WHERE id <= 110000;
UPDATE items_inf SET f0 = 'Infinity' WHERE id = 100017;
UPDATE items_inf SET f1 = CASE WHEN id % 2 = 0 THEN 1e300 ELSE -1e300 END WHERE id % 5 = 0;
SELECT count(*) > 0 AS tuned FROM hb_tune('wrank', 'SELECT * FROM items_inf', kind => 'topk', k => 7, target => 0.9, confidence => 0.9);
SELECT count(*) AS approx_rows FROM hb_topk('wrank', 7, NULL::items, mode => 'approx');
SELECT count(*) AS approx_rows, count(*) FILTER (WHERE score = hb_predict('wrank', item)) AS exact_scores
FROM hb_topk('wrank', 7, NULL::items_inf, mode => 'approx');
DROP TABLE items_inf;

RESET client_min_messages;
SELECT hb_model_drop('wrank'), hb_model_drop('wfraud'), hb_model_drop('wmulti');
SELECT count(*) AS tunings_left FROM hb_tunings;
DROP VIEW plain_topk;
DROP TABLE plain_approx, plain_exact;
DROP FUNCTION plan_lines(text);
DROP TABLE tune1, tune2, grp, grp_exact, ctune, mtune, casc_tx, exact_tx, exact_obs, items, tx, obs;
DROP FUNCTION topk_precision(text, int);
