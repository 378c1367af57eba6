-- The gate of approximate top-K (docs/willump.md, "The gate"): a linear
-- score on features the cheap model reads, one more term of the screening
-- score; where no row may wait any more, a row below the cut by it skips
-- the cheap model.  Whether hb_tune adds one depends on measured times, so
-- it is planted here, with the cut relative to the bar it acts under.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/willump/'
\set m `cat :fixtures/willump_rank.json`
SELECT hb_model_upload('grank', :'m');
\set m `cat :fixtures/willump_fraud.json`
SELECT hb_model_upload('gfraud', :'m');

-- ids <= 110000 tune, the 40,000 after them are queried
CREATE TABLE gitems AS
SELECT id, hbt_wu(id, 0) f0, hbt_wu(id, 1) f1, hbt_wu(id, 2) f2, hbt_wu(id, 3) f3, hbt_wu(id, 4) f4,
	   hbt_wu(id, 5) f5, hbt_wu(id, 6) f6, hbt_wu(id, 7) f7, hbt_wu(id, 8) f8, hbt_wu(id, 9) f9
FROM generate_series(100001, 150000) id;
CREATE TABLE gtx AS SELECT id, f0, f1, f2, f3, f4, f5, f6, f7 FROM gitems;
CREATE FUNCTION plan_count(q text, what text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF l ~ (what || ': ') THEN
			RETURN substring(l FROM what || ': (\d+)')::bigint;
		END IF;
	END LOOP;
	RETURN NULL;
END $$;
SET client_min_messages = warning;
-- the cases below plant cuts relative to the bar (off by default)
SET hbird.topk_bar_cut = on;

SELECT count(*) FILTER (WHERE chosen) AS chosen
FROM hb_tune('grank', $$SELECT * FROM gitems WHERE id <= 110000$$,
			 kind => 'topk', k => 10, target => 0.9, confidence => 0.95, seed => 1);
CREATE TABLE saved AS
SELECT bar_slope, bar_floor, bar_margin, gate_features, gate_params, gate_slack
FROM hbird.tuning WHERE name = 'grank' AND kind = 'topk';
-- no gate, and a cut relative to the bar that every row's cheap score
-- passes (slope 0, margin 1e6: the bar less 1e6) and that covers its floor
-- (-1e9) from the first k rows scored, so that no row waits after them:
-- every row is finished, and the answer is the exact one.  A gate score
-- below the bar less 1e6 lets a row go
UPDATE hbird.tuning SET gate_features = NULL, gate_params = NULL, gate_slack = NULL,
	   bar_slope = 0, bar_floor = -1e9, bar_margin = 1e6
WHERE name = 'grank' AND kind = 'topk';
-- and a prefix of 5 trees as the cheap model (whatever the times picked):
-- a row finished continues from its partial sum, so a row's sum must
-- follow the row through the gate; with a fixed cut every cheap score
-- passes too, as it judges the rows before the first k are scored (the
-- chosen model's cut, on its own scale, let rows go there that the
-- answer needed, in runs where the times picked another model)
CREATE TABLE saved_cheap AS
SELECT approximation, approx_kind, approx_trees, approx_features, approx_params,
	   refine_trees, refine_scale, refine_shift, refine_slack, cheap_cut
FROM hbird.tuning WHERE name = 'grank' AND kind = 'topk';
UPDATE hbird.tuning SET approx_kind = 'prefix', approx_trees = 5, approx_features = '{}', approx_params = '{1, 0}',
	   refine_trees = NULL, refine_scale = NULL, refine_shift = NULL, refine_slack = NULL,
	   cheap_cut = -1e9
WHERE name = 'grank' AND kind = 'topk';
CREATE TABLE exact AS
SELECT rank, (item).id, score FROM hb_topk('grank', 10, NULL::gitems, 'SELECT * FROM gitems WHERE id > 110000', mode => 'exact');
CREATE TABLE nogate AS
SELECT rank, (item).id, score FROM hb_topk('grank', 10, NULL::gitems, 'SELECT * FROM gitems WHERE id > 110000', mode => 'approx');
CREATE TABLE nogate_stats AS SELECT * FROM hb_topk_stats();
CREATE TABLE nogate_plain AS
SELECT row_number() OVER () AS rank, id FROM (SELECT id FROM gitems g WHERE id > 110000 ORDER BY hb_predict('grank', g) DESC LIMIT 10) q;
SELECT (SELECT count(*) FROM nogate JOIN exact USING (rank, id, score)) AS same_as_exact,
	   (SELECT count(*) FROM nogate_plain JOIN exact USING (rank, id)) AS plain_same_as_exact;

-- the feature of the gate: one the cheap model reads (a gate on another
-- is refused when the tuning is read), the one whose lowest value among
-- the exact top 10 is highest, so that a step just below it lets go the
-- most rows and none of those
CREATE TABLE reads AS
SELECT j, hbt_try(format($$UPDATE hbird.tuning SET gate_features = '{%s}', gate_params = '{0, 0, 0}', gate_slack = 1e6
						   WHERE name = 'grank' AND kind = 'topk';
						   SELECT count(*) FROM hb_topk('grank', 10, NULL::gitems, 'SELECT * FROM gitems WHERE id > 149990', mode => 'approx')$$, j)) AS loaded
FROM generate_series(0, 9) j;
SELECT count(*) FILTER (WHERE loaded = 'ok') > 0 AS some_read,
	   bool_and(loaded = 'ok' OR loaded LIKE 'XX001: tuning of model "grank" version 1 is invalid: the gate reads feature ' || j || ', which the cheap model does not')
	   AS others_refused
FROM reads;
SELECT r.j AS gj, min(hbt_wu(e.id, r.j)) - 1e-6 AS theta
FROM reads r, exact e WHERE r.loaded = 'ok'
GROUP BY r.j ORDER BY theta DESC, r.j LIMIT 1 \gset

-- a loose gate (slack 1e6): nothing let go, the same rows as without
UPDATE hbird.tuning SET gate_features = ARRAY[:gj], gate_params = '{0, 1, 0}', gate_slack = 1e6
WHERE name = 'grank' AND kind = 'topk';
SELECT bool_and(a.id = n.id AND a.score = n.score) AND count(*) = 10 AS same_as_without
FROM hb_topk('grank', 10, NULL::gitems, 'SELECT * FROM gitems WHERE id > 110000', mode => 'approx') x,
	 LATERAL (SELECT x.rank, (x.item).id, x.score) a JOIN nogate n USING (rank);
SELECT s.pairs_scored = n.pairs_scored AS same_pairs FROM hb_topk_stats() s, nogate_stats n;
SELECT plan_count($$SELECT id FROM gitems g WHERE id > 110000 ORDER BY hb_predict('grank', g) DESC LIMIT 10$$, 'Rows Gated Out') AS plain_gated_out;
SELECT bool_and(a.id = n.id) AND count(*) = 10 AS plain_same_as_without
FROM (SELECT row_number() OVER () AS rank, id FROM (SELECT id FROM gitems g WHERE id > 110000 ORDER BY hb_predict('grank', g) DESC LIMIT 10) q) a
JOIN nogate_plain n USING (rank);

-- a step: 1e9 * (x_j - theta), below the cut (the bar less 1e6) where x_j
-- is below theta by 1e-3 or more, and at least 1,000 where x_j >= theta,
-- as for every row of the exact top 10 (theta is 1e-6 below their lowest
-- x_j): the rows let go are not among them, so the answer is still the
-- exact one, in the same order, with the same scores
UPDATE hbird.tuning SET gate_features = ARRAY[:gj], gate_params = ARRAY[0, 1e9, -1e9 * :theta], gate_slack = 0
WHERE name = 'grank' AND kind = 'topk';
SELECT count(*) FROM gitems WHERE id > 110000 AND hbt_wu(id, :gj) < :theta \gset below_
SELECT count(*) AS same_as_exact
FROM hb_topk('grank', 10, NULL::gitems, 'SELECT * FROM gitems WHERE id > 110000', mode => 'approx') x
JOIN exact e ON e.rank = x.rank AND e.id = (x.item).id AND e.score = x.score;
-- the rows let go never reached the cheap model: fewer (row, tree) pairs
SELECT s.pairs_scored < n.pairs_scored AS fewer_pairs FROM hb_topk_stats() s, nogate_stats n;
-- the plain query: most of the rows below the step let go (those before the
-- bar covers the floor are screened in full), the rest as they were
SELECT plan_count($$SELECT id FROM gitems g WHERE id > 110000 ORDER BY hb_predict('grank', g) DESC LIMIT 10$$, 'Rows Gated Out') AS gated \gset
SELECT :gated > :below_count / 2 AS most_let_go, :gated <= :below_count AS only_those;
SELECT count(*) AS plain_same_as_exact
FROM (SELECT row_number() OVER () AS rank, id, s
	  FROM (SELECT id, hb_predict('grank', g) AS s FROM gitems g WHERE id > 110000
			ORDER BY hb_predict('grank', g) DESC LIMIT 10) q) a
JOIN exact e ON e.rank = a.rank AND e.id = a.id AND e.score = a.s;
-- hb_topk_agg runs the same code as hb_topk
SELECT array_length(a, 1) AS agg_rows,
	   (SELECT array_agg((r).id) FROM unnest(a) r) = (SELECT array_agg(id ORDER BY rank) FROM exact) AS agg_same_as_exact
FROM (SELECT hb_topk_agg('grank', 10, g) AS a FROM gitems g WHERE id > 110000) q;

-- read back: a gate that is partly missing, not a number, of the wrong
-- length, or on a tuning that is not top-K, is refused
SELECT hbt_try($$UPDATE hbird.tuning SET gate_slack = NULL WHERE name = 'grank' AND kind = 'topk'$$);
UPDATE hbird.tuning SET gate_slack = 'NaN' WHERE name = 'grank' AND kind = 'topk';
SELECT hbt_try($$SELECT count(*) FROM hb_topk('grank', 10, NULL::gitems, mode => 'approx')$$);
UPDATE hbird.tuning SET gate_slack = 0, gate_params = '{0, 1}' WHERE name = 'grank' AND kind = 'topk';
SELECT hbt_try($$SELECT id FROM gitems g ORDER BY hb_predict('grank', g) DESC LIMIT 10$$);
UPDATE hbird.tuning SET gate_params = '{0, 1, "Infinity"}' WHERE name = 'grank' AND kind = 'topk';
SELECT hbt_try($$SELECT count(*) FROM hb_topk('grank', 10, NULL::gitems, mode => 'approx')$$);
UPDATE hbird.tuning SET gate_features = '{}', gate_params = '{0}' WHERE name = 'grank' AND kind = 'topk';
SELECT hbt_try($$SELECT count(*) FROM hb_topk('grank', 10, NULL::gitems, mode => 'approx')$$);
UPDATE hbird.tuning SET gate_features = '{42}', gate_params = '{0, 1, 0}' WHERE name = 'grank' AND kind = 'topk';
SELECT hbt_try($$SELECT count(*) FROM hb_topk('grank', 10, NULL::gitems, mode => 'approx')$$);
SELECT count(*) FILTER (WHERE chosen) AS chosen
FROM hb_tune('gfraud', $$SELECT * FROM gtx WHERE id <= 110000$$, kind => 'cascade', target => 0.05);
UPDATE hbird.tuning SET gate_features = '{0}', gate_params = '{0, 1, 0}', gate_slack = 0
WHERE name = 'gfraud' AND kind = 'cascade';
SET hbird.cascade = on;
SELECT hbt_try($$SELECT count(*) FROM gtx t WHERE hb_predict_class('gfraud', t) = 1$$);
RESET hbird.cascade;

-- back as tuned
UPDATE hbird.tuning t SET bar_slope = s.bar_slope, bar_floor = s.bar_floor, bar_margin = s.bar_margin,
	   gate_features = s.gate_features, gate_params = s.gate_params, gate_slack = s.gate_slack
FROM saved s WHERE name = 'grank' AND kind = 'topk';
UPDATE hbird.tuning t SET approx_kind = s.approx_kind, approx_trees = s.approx_trees,
	   approx_features = s.approx_features, approx_params = s.approx_params,
	   refine_trees = s.refine_trees, refine_scale = s.refine_scale,
	   refine_shift = s.refine_shift, refine_slack = s.refine_slack, cheap_cut = s.cheap_cut
FROM saved_cheap s WHERE name = 'grank' AND kind = 'topk';
SELECT count(*) AS rows FROM hb_topk('grank', 10, NULL::gitems, 'SELECT * FROM gitems WHERE id > 110000', mode => 'approx');
RESET client_min_messages;
SELECT hb_tune_drop('grank', 'topk'), hb_tune_drop('gfraud', 'cascade');
SELECT hb_model_drop('grank'), hb_model_drop('gfraud');
DROP TABLE gitems, gtx, saved, saved_cheap, exact, nogate, nogate_stats, nogate_plain, reads;
DROP FUNCTION plan_count(text, text);
