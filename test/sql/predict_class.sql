-- hb_predict_class: the class XGBoost itself predicts (XGBClassifier's rule:
-- probability > 0.5 for binary models, the most probable class otherwise),
-- by row, by array, aggregated and batched, with the early exit on and off.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set m `cat :fixtures/categorical_binary.json`
\set csv `cat :fixtures/categorical_binary.csv`
\set exp `cat :fixtures/categorical_binary.expected.csv`
SELECT hb_model_upload('categorical_binary', :'m') AS version,
	   hbt_load('categorical_binary_in', :'csv') AS rows,
	   hbt_load('categorical_binary_exp', :'exp') AS expected;

-- Mismatches with XGBoost's class, per form.  want: binary, XGBoost's
-- probability (proba_1; for logitraw numpy's sigmoid of XGBoost's margin)
-- > 0.5; multiclass, XGBoost's own class (pred).
CREATE FUNCTION class_check(model text)
RETURNS TABLE (n bigint, by_row bigint, by_array bigint, by_real bigint,
			   by_agg bigint, by_batch bigint)
LANGUAGE plpgsql AS $$
DECLARE
	feats text;
	want text;
BEGIN
	SELECT string_agg(format('i.%I', f.feature), ', ' ORDER BY f.position) INTO feats
	FROM hb_model_features f JOIN hb_models m USING (name, version)
	WHERE f.name = model AND m.active;
	SELECT CASE WHEN task = 'binary' THEN '(e.proba_1 > 0.5)::int' ELSE 'e.pred::int' END
	INTO want FROM hb_models WHERE name = model AND active;
	RETURN QUERY EXECUTE format($q$
		WITH w AS (SELECT e.id, %3$s AS want FROM %2$I e),
		agg AS (SELECT u.c, u.id FROM unnest((SELECT hb_predict_class_agg(%1$L, i ORDER BY id) FROM %4$I i))
				WITH ORDINALITY AS u(c, id)),
		bat AS (SELECT (item).id, class FROM hb_predict_class_batch(%1$L, NULL::%4$I))
		SELECT count(*),
			   count(*) FILTER (WHERE hb_predict_class(%1$L, i) IS DISTINCT FROM w.want),
			   count(*) FILTER (WHERE hb_predict_class(%1$L, ARRAY[%5$s]::float8[]) IS DISTINCT FROM w.want),
			   count(*) FILTER (WHERE hb_predict_class(%1$L, ARRAY[%5$s]::real[]) IS DISTINCT FROM w.want),
			   count(*) FILTER (WHERE agg.c IS DISTINCT FROM w.want),
			   count(*) FILTER (WHERE bat.class IS DISTINCT FROM w.want)
		FROM %4$I i JOIN w USING (id) LEFT JOIN agg ON agg.id = i.id LEFT JOIN bat ON bat.id = i.id$q$,
		model, model || '_exp', want, model || '_in', feats);
END $$;

SELECT hb_class_stats_reset();
SELECT model, c.*
FROM (VALUES ('binary_logistic'), ('binary_logistic_deep'), ('binary_logitraw'),
			 ('categorical_binary'), ('multi_softmax'), ('multi_softprob')) AS m(model),
	 LATERAL class_check(model) c
ORDER BY model;
-- the early exit happened: rows stopped early, fewer (row, tree) pairs
SELECT rows > 0 AS scored, rows_early > 0 AS exited, pairs_scored < pairs_total AS saved
FROM hb_class_stats();

-- the same answers scoring every tree
SET hbird.early_exit = off;
SELECT hb_class_stats_reset();
SELECT model, c.*
FROM (VALUES ('binary_logistic'), ('binary_logistic_deep'), ('binary_logitraw'),
			 ('categorical_binary'), ('multi_softmax'), ('multi_softprob')) AS m(model),
	 LATERAL class_check(model) c
ORDER BY model;
SELECT rows > 0 AS scored, rows_early AS exited, pairs_scored = pairs_total AS every_tree
FROM hb_class_stats();
RESET hbird.early_exit;

-- every strategy, small batches: still XGBoost's classes
SET hbird.batch_memory = '64kB';
SET hbird.tree_strategy = tt;
SELECT model, c.* FROM (VALUES ('binary_logistic_deep'), ('multi_softprob')) AS m(model),
	 LATERAL class_check(model) c ORDER BY model;
SET hbird.tree_strategy = ptt;
SELECT model, c.* FROM (VALUES ('binary_logistic_deep'), ('multi_softprob')) AS m(model),
	 LATERAL class_check(model) c ORDER BY model;
RESET hbird.tree_strategy;
RESET hbird.batch_memory;

-- the issue's query: per group, how many rows the model flags
SELECT t.id % 4 AS category,
	   count(*) FILTER (WHERE hb_predict_class('binary_logistic', t) = 1) AS hbird,
	   count(*) FILTER (WHERE e.pred > 0.5) AS xgboost,
	   count(*) AS n
FROM binary_logistic_in t JOIN binary_logistic_exp e USING (id)
GROUP BY 1 ORDER BY 1;
SELECT e.pred::int AS xgboost_class,
	   count(*) AS n,
	   count(*) FILTER (WHERE hb_predict_class('multi_softprob', t) = e.pred::int) AS same
FROM multi_softprob_in t JOIN multi_softprob_exp e USING (id)
GROUP BY 1 ORDER BY 1;
-- per group through the aggregate, in input order
SELECT id % 3 AS g,
	   hb_predict_class_agg('multi_softmax', i ORDER BY id) =
	   array_agg(hb_predict_class('multi_softmax', i) ORDER BY id) AS same
FROM multi_softmax_in i GROUP BY 1 ORDER BY 1;

-- PARALLEL SAFE: workers classify like the leader, and like hb_predict > 0.5
CREATE TABLE class_big AS
SELECT g AS id,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE sin(g) END AS amount,
	   cos(g * 0.7) AS age,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE sin(g * 1.3) * 2 END AS balance,
	   cos(g * 0.11) AS n_tx,
	   sin(g * 0.05) AS risk,
	   (g % 13) / 6.0 - 1 AS tenure
FROM generate_series(1, 30000) g;
ANALYZE class_big;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT count(*) FILTER (WHERE hb_predict_class('binary_logistic', b) = 1) FROM class_big b;
SELECT count(*) AS n,
	   count(*) FILTER (WHERE hb_predict_class('binary_logistic', b) IS DISTINCT FROM
							  (hb_predict('binary_logistic', b) > 0.5)::int) AS differ
FROM class_big b;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
DROP TABLE class_big;

-- LightGBM (test/fixtures/lightgbm_tiny.txt, hand-written): margin = tree 0
-- (x <= 5 or missing: -1, else +1) + tree 1 (color in {1, 3, 40}: +0.5, else
-- -0.25); the class is margin > 0.
\set lgb `cat :fixtures/lightgbm_tiny.txt`
SELECT hb_model_upload('lgb_class', :'lgb') AS version;
SELECT x, color, hb_predict_class('lgb_class', r) AS class, want,
	   hb_predict_class('lgb_class', ARRAY[x, color]::float8[]) AS by_array
FROM (VALUES (3, 1, 0), (7, 3, 1), (NULL, 40, 0), (5, 33, 0), (6, -0.5, 1),
			 (1e-36, 2, 0), (7, NULL, 1), (5.000001, 1, 1)) r(x, color, want);
SELECT hb_model_drop('lgb_class');

-- NULL row: NULL; errors name the model
SELECT hb_predict_class('binary_logistic', NULL::binary_logistic_in) IS NULL AS null_row;
SELECT hbt_try($$SELECT hb_predict_class('reg_squarederror', t) FROM reg_squarederror_in t$$);
SELECT hbt_try($$SELECT hb_predict_class('rank_pairwise', ARRAY[1,2,3,4,5]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict_class_agg('count_poisson', t) FROM count_poisson_in t$$);
SELECT hbt_try($$SELECT * FROM hb_predict_class_batch('categorical', NULL::categorical_in)$$);
SELECT hbt_try($$SELECT hb_predict_class('no_such_model', ARRAY[1]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict_class(NULL, ARRAY[1]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict_class('binary_logistic', ARRAY[1, 2]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict_class_agg(m, t) FROM (SELECT t, CASE WHEN id = 1 THEN 'binary_logistic' ELSE 'binary_logitraw' END AS m FROM binary_logistic_in t) q$$);
SELECT hb_model_drop('categorical_binary');
