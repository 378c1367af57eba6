-- LightGBM text models: upload (auto-detected or named), metadata, scoring.
-- test/fixtures/lightgbm_tiny.txt is hand-written: tree 0 sends x <= 5 (and
-- missing x) left to -1, else +1; tree 1 sends categories {1, 3, 40} of
-- "color" left to +0.5, everything else (unknown, negative, NaN) right to
-- -0.25.  The numeric truth on real models is checked by the conformance
-- corpus (test/core/test_conformance.c).
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set lgb `cat :fixtures/lightgbm_tiny.txt`
SELECT hb_model_upload('lgb', :'lgb') AS auto_detected;
SELECT hb_model_upload('lgb', convert_to(:'lgb', 'UTF8'), 'lightgbm-text') AS named;
SELECT name, version, format, task, objective, n_features, n_trees, max_depth
FROM hb_models WHERE name = 'lgb' ORDER BY version;
SELECT string_agg(feature, ',' ORDER BY position) FROM hb_model_features WHERE name = 'lgb' AND version = 1;

SELECT x, color, hb_predict_margin('lgb', r) AS margin,
	   hb_predict('lgb', r) = 1 / (1 + exp(-(hb_predict_margin('lgb', r))[1])) AS is_sigmoid
FROM (VALUES (3, 1), (7, 3), (NULL, 40), (5, 33), (5, -0.5), (1e-36, 2), (5.000001, NULL)) r(x, color);

-- refused cleanly: truncated, linear trees
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text)', 'bad', left(:'lgb', 300)));
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text)', 'bad', replace(:'lgb', 'is_linear=0', 'is_linear=1')));
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text, %L)', 'bad', :'lgb', 'xgboost-json'));
SELECT hb_model_drop('lgb');
