-- hb_topk and hb_topk_agg return exactly what ORDER BY score DESC LIMIT k
-- returns (ties by input order), while fully scoring fewer rows.

-- ties: every row three times, so equal scores must go to input order
CREATE TABLE ranked AS
SELECT (c - 1) * 1000 + id AS id, bm25, tf, idf, doc_len, pagerank, freshness
FROM rank_pairwise_in, generate_series(1, 3) c;

CREATE FUNCTION topk_matches(model text, tab text, k int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	got text;
	want text;
BEGIN
	EXECUTE format('SELECT string_agg(format(''%%s:%%s'', (item).id, score), '','' ORDER BY rank)
					FROM hb_topk(%L, %s, NULL::%I, %L)',
				   model, k, tab, format('SELECT * FROM %I ORDER BY id', tab)) INTO got;
	EXECUTE format('SELECT string_agg(format(''%%s:%%s'', id, s), '','' ORDER BY s DESC, id)
					FROM (SELECT id, hb_predict(%L, t) AS s FROM %I t ORDER BY s DESC, id LIMIT %s) q',
				   model, tab, k) INTO want;
	RETURN CASE WHEN got IS NOT DISTINCT FROM want THEN 'same' ELSE 'DIFFERENT: ' || coalesce(got, '<none>') || ' vs ' || coalesce(want, '<none>') END;
END $$;

SELECT model, tab, k, topk_matches(model, tab, k)
FROM (VALUES ('binary_logistic', 'binary_logistic_in'),
			 ('binary_logistic_deep', 'binary_logistic_deep_in'),
			 ('reg_squarederror', 'reg_squarederror_in'),
			 ('count_poisson', 'count_poisson_in'),
			 ('rank_pairwise', 'rank_pairwise_in'),
			 ('rank_ndcg', 'rank_ndcg_in'),
			 ('rank_pairwise', 'ranked'),
			 ('categorical', 'categorical_in')) AS m(model, tab),
	 (VALUES (1), (3), (10), (199), (200), (1000)) AS ks(k)
ORDER BY model, tab, k;

-- k rows that outgrow work_mem go through a bounded sort, to disk where it
-- must (hb_topk held them all in memory): the same rows and ties
CREATE TABLE topk_big AS
SELECT (c - 1) * 100000 + id AS id, amount, age, balance, n_tx, risk, tenure
FROM binary_logistic_in, generate_series(1, 40) c;
SET work_mem = '64kB';
SELECT k, topk_matches('binary_logistic', 'topk_big', k) FROM (VALUES (500), (5000), (100000)) AS ks(k);
RESET work_mem;
DROP TABLE topk_big;

-- a linear model (gblinear) ranks too: every row scored, same answer
\getenv abs_srcdir PG_ABS_SRCDIR
\set lin `cat :abs_srcdir/fixtures/linear/linear_tiny.json`
\set lincsv `cat :abs_srcdir/fixtures/linear/linear_tiny.csv`
SELECT hb_model_upload('topk_linear', :'lin') AS version, hbt_load('topk_linear_in', :'lincsv') AS rows;
SELECT k, topk_matches('topk_linear', 'topk_linear_in', k) FROM (VALUES (1), (3), (1000)) AS ks(k);
SELECT (SELECT array_agg((r).id) FROM unnest(hb_topk_agg('topk_linear', 3, t ORDER BY id)) r) =
	   (SELECT array_agg(id) FROM (SELECT id FROM topk_linear_in t ORDER BY hb_predict('topk_linear', t) DESC, id LIMIT 3) q)
	   AS linear_agg_same
FROM topk_linear_in t;
-- infinite values: +inf times weights of both signs is a NaN score, which
-- ranks above every number (as ORDER BY ... DESC ranks it), two NaN rows
-- by input order; hb_topk dropped such rows
CREATE TABLE topk_linear_nan AS SELECT * FROM topk_linear_in;
INSERT INTO topk_linear_nan VALUES (1001, 'Infinity', 'Infinity', 0), (1002, 'Infinity', 0, 0),
	(1003, 0, 'Infinity', 0), (1004, 'Infinity', 'Infinity', 1);
SELECT count(*) FILTER (WHERE hb_predict('topk_linear', t) = 'NaN') AS nan_scores FROM topk_linear_nan t;
SELECT k, topk_matches('topk_linear', 'topk_linear_nan', k) FROM (VALUES (1), (2), (3), (5), (1000)) AS ks(k);
SELECT (SELECT array_agg((r).id) FROM unnest(hb_topk_agg('topk_linear', 5, t ORDER BY id)) r) =
	   (SELECT array_agg(id) FROM (SELECT id FROM topk_linear_nan t ORDER BY hb_predict('topk_linear', t) DESC, id LIMIT 5) q)
	   AS linear_nan_agg_same
FROM topk_linear_nan t;
SELECT hb_model_drop('topk_linear');
DROP TABLE topk_linear_in;

-- pruning happened: fewer (row, tree) pairs than full scoring (25 trees:
-- checks come at least 16 trees apart, so a model of 10 trees is scored
-- in full)
SELECT count(*) FROM hb_topk('binary_logistic', 1, NULL::binary_logistic_in);
SELECT rows, rows_fully_scored < rows AS pruned_rows, pairs_scored < pairs_total AS pruned_pairs
FROM hb_topk_stats();

-- typed rows come back
SELECT rank, (item).id, round(score::numeric, 6) AS score
FROM hb_topk('binary_logistic', 3, NULL::binary_logistic_in, $$SELECT * FROM binary_logistic_in ORDER BY id$$);

-- empty input, k larger than the input
SELECT count(*) FROM hb_topk('binary_logistic', 5, NULL::binary_logistic_in, $$SELECT * FROM binary_logistic_in WHERE false$$);
SELECT count(*) FROM hb_topk('binary_logistic', 500, NULL::binary_logistic_in, $$SELECT * FROM binary_logistic_in WHERE id < 20$$);

-- per group: the aggregate equals a window ranking
SELECT count(*) AS groups,
	   count(*) FILTER (WHERE a.ids IS DISTINCT FROM w.ids) AS differ
FROM (SELECT id % 7 AS g, (SELECT array_agg((r).id) FROM unnest(hb_topk_agg('rank_pairwise', 3, t ORDER BY id)) r) AS ids
	  FROM ranked t GROUP BY 1) a
JOIN (SELECT g, array_agg(id ORDER BY rn) AS ids
	  FROM (SELECT id % 7 AS g, id, row_number() OVER (PARTITION BY id % 7 ORDER BY hb_predict('rank_pairwise', t) DESC, id) AS rn
			FROM ranked t) q
	  WHERE rn <= 3 GROUP BY g) w USING (g);
SELECT cardinality(hb_topk_agg('binary_logistic', 1000, t)) AS all_rows FROM binary_logistic_in t;
SELECT hb_topk_agg('binary_logistic', 3, t) IS NULL AS empty FROM binary_logistic_in t WHERE false;
SELECT (hb_topk_agg('binary_logistic', 2, t ORDER BY id))[1].id AS best FROM binary_logistic_in t;

-- equal scores from different margins: a float32 sigmoid saturates at 1, so
-- margins 20 and 30 both score 1.0; ties still go to input order, as with
-- ORDER BY hb_predict(...) DESC
SELECT hb_model_upload('saturated', '{"learner":{"attributes":{},"feature_names":["a"],"feature_types":["float"],"gradient_booster":{"model":{"gbtree_model_param":{"num_parallel_tree":"1","num_trees":"1"},"tree_info":[0],"trees":[{"base_weights":[0,0,0],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],"default_left":[1,0,0],"id":0,"left_children":[1,-1,-1],"loss_changes":[0,0,0],"parents":[2147483647,0,0],"right_children":[2,-1,-1],"split_conditions":[0.5,20,30],"split_indices":[0,0,0],"split_type":[0,0,0],"sum_hessian":[1,1,1],"tree_param":{"num_deleted":"0","num_feature":"1","num_nodes":"3","size_leaf_vector":"0"}}]},"name":"gbtree"},"learner_model_param":{"base_score":"5E-1","num_class":"0","num_feature":"1","num_target":"1"},"objective":{"name":"binary:logistic","reg_loss_param":{"scale_pos_weight":"1"}}},"version":[1,7,4]}');
CREATE TABLE sat AS SELECT g AS id, (g % 2)::float8 AS a FROM generate_series(1, 10) g;
SELECT array_agg((item).id ORDER BY rank) AS topk, array_agg(score ORDER BY rank) AS scores,
	   (SELECT array_agg(id) FROM (SELECT id FROM sat s ORDER BY hb_predict('saturated', s) DESC, id LIMIT 3) q) AS order_by,
	   (SELECT array_agg(DISTINCT (hb_predict_margin('saturated', s))[1]) FROM sat s) AS margins
FROM hb_topk('saturated', 3, NULL::sat, 'SELECT * FROM sat ORDER BY id');
SELECT (SELECT array_agg((r).id) FROM unnest(hb_topk_agg('saturated', 3, s ORDER BY id)) r) AS topk_agg FROM sat s;
-- the plain ORDER BY score, id LIMIT through the batching scan: a row of a
-- lower margin but the same score, read after the k best margins, still
-- goes up to the sort, where its id puts it first (row at a time: the
-- same); rows of lower scores are pruned.  Two trees, on a and on b:
-- margins 0, 10, 20, 30 score 0.5, 0.99995, 1, 1 (XGBoost's own), and
-- 0, -200, -300, -500 score 0.5 and three times the same tiny probability
SELECT hb_model_upload('sat_hi', '{"learner":{"attributes":{},"feature_names":["a","b"],"feature_types":["float","float"],"gradient_booster":{"model":{"gbtree_model_param":{"num_parallel_tree":"1","num_trees":"2"},"tree_info":[0,0],"trees":[{"base_weights":[0.0,0.0,20.0],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],"default_left":[1,0,0],"id":0,"left_children":[1,-1,-1],"loss_changes":[0.0,0.0,0.0],"parents":[2147483647,0,0],"right_children":[2,-1,-1],"split_conditions":[0.5,0.0,20.0],"split_indices":[0,0,0],"split_type":[0,0,0],"sum_hessian":[1.0,1.0,1.0],"tree_param":{"num_deleted":"0","num_feature":"2","num_nodes":"3","size_leaf_vector":"0"}},{"base_weights":[0.0,0.0,10.0],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],"default_left":[1,0,0],"id":1,"left_children":[1,-1,-1],"loss_changes":[0.0,0.0,0.0],"parents":[2147483647,0,0],"right_children":[2,-1,-1],"split_conditions":[0.5,0.0,10.0],"split_indices":[1,0,0],"split_type":[0,0,0],"sum_hessian":[1.0,1.0,1.0],"tree_param":{"num_deleted":"0","num_feature":"2","num_nodes":"3","size_leaf_vector":"0"}}]},"name":"gbtree"},"learner_model_param":{"base_score":"5E-1","num_class":"0","num_feature":"2","num_target":"1"},"objective":{"name":"binary:logistic","reg_loss_param":{"scale_pos_weight":"1"}}},"version":[1,7,4]}') AS version;
SELECT hb_model_upload('sat_lo', '{"learner":{"attributes":{},"feature_names":["a","b"],"feature_types":["float","float"],"gradient_booster":{"model":{"gbtree_model_param":{"num_parallel_tree":"1","num_trees":"2"},"tree_info":[0,0],"trees":[{"base_weights":[0.0,0.0,-200.0],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],"default_left":[1,0,0],"id":0,"left_children":[1,-1,-1],"loss_changes":[0.0,0.0,0.0],"parents":[2147483647,0,0],"right_children":[2,-1,-1],"split_conditions":[0.5,0.0,-200.0],"split_indices":[0,0,0],"split_type":[0,0,0],"sum_hessian":[1.0,1.0,1.0],"tree_param":{"num_deleted":"0","num_feature":"2","num_nodes":"3","size_leaf_vector":"0"}},{"base_weights":[0.0,0.0,-300.0],"categories":[],"categories_nodes":[],"categories_segments":[],"categories_sizes":[],"default_left":[1,0,0],"id":1,"left_children":[1,-1,-1],"loss_changes":[0.0,0.0,0.0],"parents":[2147483647,0,0],"right_children":[2,-1,-1],"split_conditions":[0.5,0.0,-300.0],"split_indices":[1,0,0],"split_type":[0,0,0],"sum_hessian":[1.0,1.0,1.0],"tree_param":{"num_deleted":"0","num_feature":"2","num_nodes":"3","size_leaf_vector":"0"}}]},"name":"gbtree"},"learner_model_param":{"base_score":"5E-1","num_class":"0","num_feature":"2","num_target":"1"},"objective":{"name":"binary:logistic","reg_loss_param":{"scale_pos_weight":"1"}}},"version":[1,7,4]}') AS version;
CREATE TABLE sat_scan (id int, a float8, b float8);
INSERT INTO sat_scan SELECT g, 1, 1 FROM generate_series(101, 140) g;
INSERT INTO sat_scan SELECT g, 0, 0 FROM generate_series(1001, 1500) g;
INSERT INTO sat_scan VALUES (1, 1, 0), (2, 0, 1);
INSERT INTO sat_scan SELECT g, 1, 1 FROM generate_series(141, 160) g;
SELECT m, array_agg(DISTINCT hb_predict(m, s) ORDER BY hb_predict(m, s)) AS scores,
	   array_agg(DISTINCT (hb_predict_margin(m, s))[1] ORDER BY (hb_predict_margin(m, s))[1]) AS margins
FROM sat_scan s, (VALUES ('sat_hi'), ('sat_lo')) v(m) GROUP BY m ORDER BY m;
CREATE FUNCTION sat_order(q text, OUT batched int[], OUT row_at_a_time int[], OUT pruned bool,
						  OUT approximate bool)
LANGUAGE plpgsql AS $$
DECLARE
	plan text;
BEGIN
	EXECUTE 'SELECT array_agg(id) FROM (' || q || ') q' INTO batched;
	SET LOCAL hbird.batch_scan = off;
	EXECUTE 'SELECT array_agg(id) FROM (' || q || ') q' INTO row_at_a_time;
	SET LOCAL hbird.batch_scan = on;
	-- and the batching scan did prune (the rows of lower scores)
	pruned := false;
	approximate := false;
	FOR plan IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		pruned := pruned OR plan ~ 'Rows Pruned: [1-9]';
		approximate := approximate OR plan ~ 'approximate';
	END LOOP;
END $$;
SELECT * FROM sat_order('SELECT id FROM sat_scan s ORDER BY hb_predict(''sat_hi'', s) DESC, id LIMIT 3');
SELECT * FROM sat_order('SELECT id FROM sat_scan s ORDER BY hb_predict(''sat_lo'', s), id LIMIT 3');
SELECT * FROM sat_order('SELECT id FROM sat_scan s ORDER BY hb_predict(''sat_hi'', s) DESC, id DESC LIMIT 3');
SELECT * FROM sat_order('SELECT id FROM sat_scan s ORDER BY hb_predict(''sat_hi'', s) DESC LIMIT 3');
-- approximate top-K holds back the rows it scored in full below the same
-- bar: a tuning planted by hand (a prefix of 1 tree whose cheap score is
-- 0 * partial + 1, so that every row passes the cut 0.5 and is scored in
-- full) must give the row-at-a-time answer
INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed,
	sample_rows, eval_rows, approximation, approx_kind, approx_trees,
	approx_features, approx_params, ratio, kept, cheap_cut, accuracy,
	accuracy_bound, coverage, full_cost_us, approx_cost_us, expected_speedup, tuned_by)
VALUES ('sat_hi', 1, 'topk', 3, 0.9, 0.95, 0, 1000, 500, 'planted', 'prefix', 1,
	'{}', '{0, 1}', 10, 30, 0.5, 0.9, 0.9, 0.5, 1, 0.1, 2, current_user);
SET hbird.topk_mode = approx;
SELECT * FROM sat_order('SELECT id FROM sat_scan s ORDER BY hb_predict(''sat_hi'', s) DESC, id LIMIT 3');
SELECT * FROM sat_order('SELECT id FROM sat_scan s ORDER BY hb_predict(''sat_hi'', s) DESC, id DESC LIMIT 3');
RESET hbird.topk_mode;
DROP FUNCTION sat_order(text);
DROP TABLE sat, sat_scan;
SELECT hb_model_drop('saturated');
SELECT hb_model_drop('sat_hi');
SELECT hb_model_drop('sat_lo');

-- errors
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', 0, NULL::binary_logistic_in)$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', -3, NULL::binary_logistic_in)$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', NULL, NULL::binary_logistic_in)$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', 3, NULL::binary_logistic_in, 'SELECT 1, 2')$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', 3, NULL::binary_logistic_in, 'SELECT * FROM reg_squarederror_in')$$);
SELECT hbt_try($$SELECT * FROM hb_topk('multi_softprob', 3, NULL::multi_softprob_in)$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', 3, NULL::binary_logistic_in, NULL, 'approx')$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', 3, NULL::binary_logistic_in, NULL, 'bogus')$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', 3, 42)$$);
SELECT hbt_try($$SELECT hb_topk_agg('binary_logistic', 0, t) FROM binary_logistic_in t$$);
SELECT hbt_try($$SELECT hb_topk_agg('binary_logistic', 3, t.id) FROM binary_logistic_in t$$);
SELECT hbt_try($$SELECT hb_topk_agg('multi_softprob', 3, t) FROM multi_softprob_in t$$);

-- as a window aggregate: every running top 3 equals a fresh one over the
-- same prefix (the state keeps taking rows after each finalization)
SELECT count(*) AS rows, count(*) FILTER (WHERE w IS DISTINCT FROM f) AS differ
FROM (SELECT (SELECT array_agg((r).id) FROM unnest(q.w) r) AS w,
			 (SELECT array_agg((r).id) FROM unnest((SELECT hb_topk_agg('binary_logistic', 3, u ORDER BY id)
													FROM binary_logistic_in u WHERE u.id <= q.id)) r) AS f
	  FROM (SELECT id, hb_topk_agg('binary_logistic', 3, t) OVER (ORDER BY id) AS w
			FROM binary_logistic_in t) q) z;

-- equal scores of different margins: binary_logistic with every leaf times
-- 40 gives margins far above 17, where the float32 probability is exactly
-- 1 for thousands of rows.  Ties go to input order, not to the higher
-- margin, although the core completes the likeliest rows first.
\set bin `cat :abs_srcdir/fixtures/binary_logistic.json`
SELECT hb_model_upload('topk_saturated', (
	SELECT jsonb_set(m, '{learner,gradient_booster,model,trees}',
		(SELECT jsonb_agg(jsonb_set(t, '{split_conditions}',
			(SELECT jsonb_agg(CASE WHEN (t->'left_children'->>(i::int - 1))::int = -1
								   THEN to_jsonb((c::text)::float8 * 40) ELSE c END ORDER BY i)
			 FROM jsonb_array_elements(t->'split_conditions') WITH ORDINALITY e(c, i))) ORDER BY n)
		 FROM jsonb_array_elements(m->'learner'->'gradient_booster'->'model'->'trees')
			  WITH ORDINALITY tr(t, n)))::text
	FROM (SELECT :'bin'::jsonb AS m) j)) AS version;
CREATE TABLE topk_saturated_in AS
SELECT g AS id,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE round(sin(g)::numeric, 2)::float8 END AS amount,
	   round(cos(g)::numeric, 2)::float8 AS age,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE round(sin(g * 0.3)::numeric, 1)::float8 END AS balance,
	   round(cos(g * 0.2)::numeric, 1)::float8 AS n_tx,
	   round(sin(g * 0.1)::numeric, 1)::float8 AS risk,
	   (g % 9) / 4.0::float8 AS tenure
FROM generate_series(1, 5000) g;
SELECT count(*) FILTER (WHERE s = 1) > 1000 AS many_at_one,
	   count(DISTINCT m) FILTER (WHERE s = 1) > 100 AS of_many_margins
FROM (SELECT hb_predict('topk_saturated', t) AS s, (hb_predict_margin('topk_saturated', t))[1] AS m
	  FROM topk_saturated_in t) q;
SELECT k, topk_matches('topk_saturated', 'topk_saturated_in', k),
	   (SELECT array_agg((r).id) FROM unnest((SELECT hb_topk_agg('topk_saturated', k, t ORDER BY id)
											  FROM topk_saturated_in t)) r) =
	   (SELECT array_agg(id) FROM (SELECT id FROM topk_saturated_in t
								   ORDER BY hb_predict('topk_saturated', t) DESC, id LIMIT k) q) AS agg_same
FROM (VALUES (1), (10), (100), (1000)) AS ks(k);
SELECT hb_model_drop('topk_saturated');
DROP TABLE topk_saturated_in;

DROP FUNCTION topk_matches(text, text, int);
DROP TABLE ranked;
