-- Models of several targets: hb_predict refuses them (one value a row
-- would be the first target alone); hb_predict_targets, its aggregate and
-- batched form and the batching scan return every target, equal to the
-- library's own predictions (XGBoost: bit for bit; scikit-learn: 1e-6).
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set pl :abs_srcdir '/fixtures/pipelines/'

-- XGBoost 1.7, one tree per target; a 2.x model with vector leaves
\set m `cat :fixtures/multi_target.json`
\set csv `cat :fixtures/multi_target.csv`
\set exp `cat :fixtures/multi_target.expected.csv`
SELECT hb_model_upload('mt_xgb', :'m') AS v, hbt_load('mt_in', :'csv') AS rows, hbt_load('mt_exp', :'exp') AS expected;
\set m `cat :fixtures/vector_leaf.json`
\set csv `cat :fixtures/vector_leaf.csv`
\set exp `cat :fixtures/vector_leaf.expected.csv`
SELECT hb_model_upload('mt_vleaf', :'m') AS v, hbt_load('vl_in', :'csv') AS rows, hbt_load('vl_exp', :'exp') AS expected;
SELECT name, task, n_inputs, n_features, n_outputs, n_classes, n_trees FROM hb_models
WHERE name IN ('mt_xgb', 'mt_vleaf') ORDER BY name;

-- every form, against XGBoost's targets (exact)
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE hb_predict_targets('mt_xgb', t) <> ARRAY[e.target_0, e.target_1, e.target_2]) AS row_differ,
	   count(*) FILTER (WHERE hb_predict_targets('mt_xgb', ARRAY[amount, age, balance, n_tx, risk, tenure]) <>
						ARRAY[e.target_0, e.target_1, e.target_2]) AS array_differ,
	   count(*) FILTER (WHERE hb_predict_margin('mt_xgb', t) <> ARRAY[e.margin_0, e.margin_1, e.margin_2]) AS margin_differ
FROM mt_in t JOIN mt_exp e USING (id);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE hb_predict_targets('mt_vleaf', t) <> ARRAY[e.target_0, e.target_1, e.target_2]) AS differ
FROM vl_in t JOIN vl_exp e USING (id);
-- the aggregate: rows x targets, in input order; a NULL row is a row of NULLs
SELECT array_dims(a) AS dims,
	   (SELECT count(*) FROM mt_exp e WHERE a[e.id:e.id][1:3] <> ARRAY[[e.target_0, e.target_1, e.target_2]]) AS differ
FROM (SELECT hb_predict_targets_agg('mt_xgb', t ORDER BY id) AS a FROM mt_in t) s;
SELECT hb_predict_targets_agg('mt_xgb', t ORDER BY k.id) AS with_null_row
FROM (VALUES (1), (-1)) k(id) LEFT JOIN mt_in t USING (id);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE b.targets <> ARRAY[e.target_0, e.target_1, e.target_2]) AS differ
FROM hb_predict_targets_batch('mt_xgb', NULL::mt_in) b JOIN mt_exp e ON e.id = (b.item).id;
-- the batching scan (plain SQL), with and without
SET hbird.batch_scan = on;
EXPLAIN (COSTS OFF) SELECT hb_predict_targets('mt_xgb', t) FROM mt_in t;
CREATE TEMP TABLE mt_on AS SELECT id, hb_predict_targets('mt_xgb', t) AS p, (hb_predict_targets('mt_vleaf', v))[2] AS v2
FROM mt_in t JOIN vl_in v USING (id);
SET hbird.batch_scan = off;
CREATE TEMP TABLE mt_off AS SELECT id, hb_predict_targets('mt_xgb', t) AS p, (hb_predict_targets('mt_vleaf', v))[2] AS v2
FROM mt_in t JOIN vl_in v USING (id);
RESET hbird.batch_scan;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.p IS DISTINCT FROM b.p OR a.v2 IS DISTINCT FROM b.v2) AS differ
FROM mt_on a JOIN mt_off b USING (id);
SELECT avg((hb_predict_targets('mt_xgb', t))[3]) = avg(e.target_2) AS avg_of_a_target
FROM mt_in t JOIN mt_exp e USING (id);

-- one value per row is refused, in every form, naming what to use
SELECT hbt_try($$SELECT hb_predict('mt_xgb', t) FROM mt_in t$$) AS plain;
SELECT hbt_try($$SELECT hb_predict('mt_xgb', ARRAY[1, 2, 3, 4, 5, 6])$$) AS array_form;
SELECT hbt_try($$SELECT hb_predict_agg('mt_xgb', t) FROM mt_in t$$) AS agg;
SELECT hbt_try($$SELECT * FROM hb_predict_batch('mt_xgb', NULL::mt_in)$$) AS batch;
SELECT hbt_try($$SELECT * FROM hb_topk('mt_xgb', 3, NULL::mt_in)$$) AS topk;
SELECT hbt_try($$SELECT count(*) FROM (SELECT id FROM mt_in t ORDER BY hb_predict('mt_xgb', t) DESC LIMIT 3) s$$) AS order_by;
SELECT hb_predict('mt_xgb', t) FROM mt_in t LIMIT 1;
-- a model of one target answers one-element arrays; classifiers are refused
SELECT hb_predict_targets('reg_squarederror', t) = ARRAY[hb_predict('reg_squarederror', t)] AS one_target
FROM reg_squarederror_in t WHERE id = 1;
SELECT hbt_try($$SELECT hb_predict_targets('binary_logistic', t) FROM binary_logistic_in t$$) AS classifier;
SELECT hbt_try($$SELECT hb_predict_targets_agg('binary_logistic', t) FROM binary_logistic_in t$$) AS classifier_agg;

-- scikit-learn multi-output regressors through the exporter (pipelines)
CREATE TABLE mt_pl (id integer, age float8, income numeric, city text, plan integer, review text);
\set csv `cat :pl/rows.csv`
INSERT INTO mt_pl
SELECT NULLIF(a[1], '')::integer, NULLIF(a[2], '')::float8, NULLIF(a[3], '')::numeric,
	   NULLIF(a[4], ''), NULLIF(a[5], '')::integer, NULLIF(a[6], '')
FROM unnest((regexp_split_to_array(rtrim(:'csv', E'\n'), E'\n'))[2:]) AS l(line),
	 LATERAL string_to_array(l.line, ',') AS a;
CREATE FUNCTION mt_pl_check(m text, body text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	bad bigint;
	lines text[] := regexp_split_to_array(rtrim(body, E'\n'), E'\r?\n');
BEGIN
	SELECT count(*), count(*) FILTER (WHERE EXISTS (
			SELECT 1 FROM generate_subscripts(hb_predict_targets(m, r), 1) AS i
			WHERE NOT hbt_close((hb_predict_targets(m, r))[i], (string_to_array(l, ','))[i + 1]::float8)))
	  INTO n, bad
	  FROM mt_pl r JOIN unnest(lines[2:]) l ON split_part(l, ',', 1)::int = r.id;
	RETURN n || ' rows, ' || bad || ' differ';
END $$;
\set m `cat :pl/rf_targets.json`
SELECT hb_model_upload('rf_targets', :'m') AS v;
\set m `cat :pl/ridge_targets.json`
SELECT hb_model_upload('ridge_targets', :'m') AS v;
\set m `cat :pl/multi_gbr.json`
SELECT hb_model_upload('multi_gbr', :'m') AS v;
\set e1 `cat :pl/rf_targets.expected.csv`
\set e2 `cat :pl/ridge_targets.expected.csv`
\set e3 `cat :pl/multi_gbr.expected.csv`
SELECT m, mt_pl_check(m, e) FROM (VALUES ('rf_targets', :'e1'), ('ridge_targets', :'e2'), ('multi_gbr', :'e3')) v(m, e);
-- the pipelines through the batching scan and the batched form
SELECT count(*) AS rows, count(*) FILTER (WHERE b.targets IS DISTINCT FROM hb_predict_targets('ridge_targets', (b.item))) AS differ
FROM hb_predict_targets_batch('ridge_targets', NULL::mt_pl) b;

SELECT hb_model_drop('mt_xgb'), hb_model_drop('mt_vleaf'), hb_model_drop('rf_targets'),
	   hb_model_drop('ridge_targets'), hb_model_drop('multi_gbr');
DROP FUNCTION mt_pl_check(text, text);
DROP TABLE mt_in, mt_exp, vl_in, vl_exp, mt_pl;
