-- Batched scoring: the aggregate, the set-returning form, every strategy,
-- and hb_compile.  Batched results must equal row-at-a-time scoring.
SET hbird.batch_memory = '64kB';	-- small batches: many of them per query

-- the aggregate, in input order, over whole tables and groups
SELECT count(*) FILTER (WHERE NOT hbt_close(p.v, e.pred)) AS bad, count(*) AS n
FROM (SELECT unnest(hb_predict_agg('binary_logistic', i ORDER BY id)) AS v,
			 generate_series(1, 200) AS id
	  FROM binary_logistic_in i) p
JOIN binary_logistic_exp e USING (id);
SELECT id % 3 AS g, cardinality(hb_predict_agg('multi_softprob', i ORDER BY id)) AS n,
	   hb_predict_agg('multi_softprob', i ORDER BY id) =
	   array_agg(hb_predict('multi_softprob', i) ORDER BY id) AS same
FROM multi_softprob_in i GROUP BY 1 ORDER BY 1;
SELECT hb_predict_agg('binary_logistic', i) IS NULL AS empty_is_null
FROM binary_logistic_in i WHERE false;

-- the set-returning form: whole table, or a query
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(b.score, e.pred)) AS bad
FROM hb_predict_batch('reg_squarederror', NULL::reg_squarederror_in) b
JOIN reg_squarederror_exp e ON e.id = (b.item).id;
SELECT (item).id, score = hb_predict('binary_logistic', item) AS same
FROM hb_predict_batch('binary_logistic', NULL::binary_logistic_in,
					  $$SELECT * FROM binary_logistic_in WHERE id <= 3 ORDER BY id$$);
SELECT hbt_try($$SELECT * FROM hb_predict_batch('binary_logistic', NULL::binary_logistic_in, 'SELECT 1')$$);
SELECT hbt_try($$SELECT * FROM hb_predict_batch('binary_logistic', 1, NULL)$$);
SELECT hbt_try($$SELECT * FROM hb_predict_batch('binary_logistic', NULL::binary_logistic_in, 'DELETE FROM binary_logistic_in')$$);
-- a data-modifying WITH is refused the same way, before anything runs
SELECT hbt_try($$SELECT * FROM hb_predict_batch('binary_logistic', NULL::binary_logistic_in, 'WITH d AS (DELETE FROM binary_logistic_in RETURNING *) SELECT * FROM d')$$);
SELECT hbt_try($$SELECT * FROM hb_topk('binary_logistic', 3, NULL::binary_logistic_in, 'WITH d AS (DELETE FROM binary_logistic_in RETURNING *) SELECT * FROM d')$$);
SELECT count(*) > 0 AS rows_kept FROM binary_logistic_in;
SELECT hbt_try($$SELECT * FROM hb_predict_batch('binary_logistic', NULL::binary_logistic_in, 'SELECT * INTO bl_copy FROM binary_logistic_in')$$);

-- a WITH HOLD cursor over the streamed rows, fetched before and after
-- COMMIT (the cursor of the query is held with it: COMMIT used to fail
-- with "the query of model ... is no longer open")
BEGIN;
DECLARE bl_hold CURSOR WITH HOLD FOR
	SELECT (item).id, score FROM hb_predict_batch('binary_logistic', NULL::binary_logistic_in,
												  'SELECT * FROM binary_logistic_in ORDER BY id');
FETCH 2 FROM bl_hold;
COMMIT;
CREATE TEMP TABLE bl_held AS SELECT 0 AS id, 0.0::float8 AS score WHERE false;
DO $$
DECLARE
	c refcursor := 'bl_hold';
	r record;
BEGIN
	LOOP
		FETCH c INTO r;
		EXIT WHEN NOT FOUND;
		INSERT INTO bl_held VALUES (r.id, r.score);
	END LOOP;
END $$;
CLOSE bl_hold;
SELECT count(*) AS rows_after_commit, min(id) AS first_after_commit,
	   bool_and(h.score = hb_predict('binary_logistic', i)) AS same_scores,
	   count(*) + 2 = (SELECT count(*) FROM binary_logistic_in) AS all_rows
FROM bl_held h JOIN binary_logistic_in i USING (id);

-- every strategy gives the same bits, NULLs included, on every fixture
CREATE TEMP TABLE strategy_runs (model text, strategy text, preds float8[]);
DO $$
DECLARE
	m text;
	s text;
BEGIN
	FOREACH m IN ARRAY ARRAY['binary_logistic', 'binary_logistic_deep', 'binary_logitraw',
							 'categorical', 'count_poisson', 'multi_softmax', 'multi_softprob',
							 'no_feature_names', 'rank_ndcg', 'rank_pairwise', 'reg_logistic',
							 'reg_squarederror', 'single_leaf']
	LOOP
		FOREACH s IN ARRAY ARRAY['tt', 'ptt', 'gemm', 'auto']
		LOOP
			PERFORM set_config('hbird.tree_strategy', s, true);
			EXECUTE format('INSERT INTO strategy_runs SELECT %L, %L, hb_predict_agg(%L, i ORDER BY id) FROM %I i',
						   m, s, m, m || '_in');
		END LOOP;
	END LOOP;
END $$;
RESET hbird.tree_strategy;
SELECT model, count(DISTINCT preds) AS distinct_results, count(*) AS strategies
FROM strategy_runs GROUP BY model ORDER BY model;

-- hb_compile shows the plan it would run for a batch size
SELECT step, op, strategy, input_shape, output_shape, param_bytes > 0 AS has_params, device
FROM hb_compile('binary_logistic', 1);
SELECT DISTINCT strategy FROM hb_compile('binary_logistic', 4096);
SET hbird.tree_strategy = 'gemm';
SELECT step, op, strategy, input_shape, output_shape FROM hb_compile('binary_logistic', 256);
SET hbird.tree_strategy = 'ptt';
SELECT step, op, strategy, input_shape, output_shape FROM hb_compile('binary_logistic', 256);
RESET hbird.tree_strategy;
SELECT strategy, count(*) AS ops, max(step) AS steps, bool_or(op = 'reduce') AS reduces
FROM hb_compile('binary_logistic_deep', 4096) GROUP BY strategy;
SELECT hbt_try($$SELECT * FROM hb_compile('binary_logistic', 0)$$);
SELECT hbt_try($$SELECT * FROM hb_compile('nosuch')$$);
RESET hbird.batch_memory;

-- a NULL row (the unmatched side of an outer join) scores NULL in every
-- form: the aggregates agree with array_agg of the row-at-a-time call
CREATE TABLE keys AS SELECT g AS id FROM generate_series(-3, 30) g;
SELECT hb_predict_agg('binary_logistic', t ORDER BY k.id) IS NOT DISTINCT FROM
	   array_agg(hb_predict('binary_logistic', t) ORDER BY k.id) AS agg_same,
	   hb_predict_class_agg('binary_logistic', t ORDER BY k.id) IS NOT DISTINCT FROM
	   array_agg(hb_predict_class('binary_logistic', t) ORDER BY k.id) AS class_agg_same,
	   count(*) FILTER (WHERE t IS NULL) AS null_rows,
	   (SELECT count(*) FROM unnest(hb_predict_agg('binary_logistic', t ORDER BY k.id)) v WHERE v IS NULL) AS null_predictions
FROM keys k LEFT JOIN binary_logistic_in t USING (id);
SELECT hb_predict_agg('multi_softprob', t ORDER BY k.id) IS NOT DISTINCT FROM
	   array_agg(hb_predict('multi_softprob', t) ORDER BY k.id) AS multi_agg_same,
	   hb_predict_class_agg('multi_softprob', t ORDER BY k.id) IS NOT DISTINCT FROM
	   array_agg(hb_predict_class('multi_softprob', t) ORDER BY k.id) AS multi_class_agg_same
FROM keys k LEFT JOIN multi_softprob_in t USING (id);
-- only NULL rows
SELECT hb_predict_agg('binary_logistic', NULL::binary_logistic_in) AS all_null FROM generate_series(1, 3);
DROP TABLE keys;
