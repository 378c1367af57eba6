-- Bad input: each case shows the SQLSTATE and message it gets, and the
-- catalog must be unchanged afterwards.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set bin `cat :fixtures/binary_logistic.json`
CREATE TEMP TABLE catalog_before AS
SELECT (SELECT count(*) FROM hbird.model) AS models,
	   (SELECT count(*) FROM hbird.model_version) AS versions,
	   (SELECT count(*) FROM hbird.model_feature) AS features;

CREATE TEMP TABLE bad_models (label text, body text);
INSERT INTO bad_models VALUES
	('empty', ''),
	('not json', 'hello world'),
	('json array', '[1, 2, 3]'),
	('empty object', '{}'),
	('truncated 10', left(:'bin', 10)),
	('truncated 1000', left(:'bin', 1000)),
	('truncated tail', left(:'bin', length(:'bin') - 3)),
	('trailing garbage', :'bin' || 'xyz'),
	('unknown objective', replace(:'bin', '"name":"binary:logistic"', '"name":"binary:bogus"')),
	('child out of range', regexp_replace(:'bin', '"left_children":\[1,', '"left_children":[9999,')),
	('cycle', regexp_replace(:'bin', '"left_children":\[1,', '"left_children":[0,')),
	('negative child', regexp_replace(:'bin', '"left_children":\[1,', '"left_children":[-7,')),
	('NaN threshold', regexp_replace(:'bin', '"split_conditions":\[[^,]*,', '"split_conditions":[NaN,')),
	('huge threshold', regexp_replace(:'bin', '"split_conditions":\[[^,]*,', '"split_conditions":[1e300,')),
	('wrong type', regexp_replace(:'bin', '"left_children":\[', '"left_children":"x",[')),
	('string children', regexp_replace(:'bin', '"left_children":\[[^]]*\]', '"left_children":"oops"')),
	('feature out of range', regexp_replace(:'bin', '"split_indices":\[[0-9]+,', '"split_indices":[4000,')),
	('bad base_score', replace(:'bin', '"base_score":"5E-1"', '"base_score":"half"')),
	('tree group out of range', regexp_replace(:'bin', '"tree_info":\[0,', '"tree_info":[5,')),
	('deep nesting', repeat('{"a":', 100000));
SELECT label, hbt_try(format('SELECT hb_model_upload(%L, %L::text)', 'bad', body)) AS result
FROM bad_models ORDER BY label;

-- formats, NULLs, names
SELECT hbt_try($$SELECT hb_model_upload('bad', '{}', 'onnx-nonsense')$$);
SELECT hbt_try($$SELECT hb_model_upload(NULL, '{}')$$);
SELECT hbt_try($$SELECT hb_model_upload('bad', NULL::text)$$);
SELECT hbt_try($$SELECT hb_model_upload('bad', NULL::bytea)$$);
SELECT hbt_try($$SELECT hb_model_upload('', '{}')$$);
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', repeat('x', 201), '{}'));
SELECT hbt_try($$SELECT hb_model_upload('bad', '\x00ff'::bytea)$$);

-- size limit
SET hbird.max_model_bytes = 1024;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text)', 'big', :'bin'));
RESET hbird.max_model_bytes;

-- administration of models that do not exist
SELECT hbt_try($$SELECT hb_model_activate('nosuch', 1)$$);
SELECT hbt_try($$SELECT hb_model_activate('binary_logistic', 99)$$);
SELECT hbt_try($$SELECT hb_model_activate('binary_logistic', NULL)$$);
SELECT hbt_try($$SELECT hb_model_drop('nosuch')$$);
SELECT hbt_try($$SELECT hb_model_drop('binary_logistic', 99)$$);
SELECT hbt_try($$SELECT hb_model_grant('nosuch', 'public')$$);
SELECT hbt_try($$SELECT hb_model_grant('binary_logistic', 'no_such_role')$$);

-- scoring
SELECT hbt_try($$SELECT hb_predict('nosuch', ARRAY[1, 2]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict(NULL, ARRAY[1, 2]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', ARRAY[1, 2]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', ARRAY[]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', ARRAY[[1, 2, 3], [4, 5, 6]]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6, 7]::real[])$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', r) FROM (SELECT 1.0 AS amount, 2.0 AS age) r$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', r) FROM (SELECT 'a'::text AS amount, 1 AS age, 1 AS balance, 1 AS n_tx, 1 AS risk, 1 AS tenure) r$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', r) FROM (SELECT 1 AS amount, 1 AS "AGE", 1 AS "Age", 1 AS balance, 1 AS n_tx, 1 AS risk, 1 AS tenure) r$$);
-- two columns of the same name (a join's row, c.* and o.*): either could be
-- meant, batched or not
SELECT hbt_try($$SELECT hb_predict('binary_logistic', r) FROM (SELECT 0.1::float8 AS amount, 1 AS age, 1 AS balance, 1 AS n_tx, 1 AS risk, 1 AS tenure, 99::float8 AS amount) r$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', r) FROM (SELECT 0.1::float8 AS amount, 1 AS age, 1 AS balance, 1 AS n_tx, 1 AS risk, 1 AS tenure, 99::float8 AS amount FROM generate_series(1, 3000)) r$$);
SELECT hbt_try($$SELECT hb_predict_proba('reg_squarederror', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$);
SELECT hbt_try($$SELECT hb_predict_proba('rank_pairwise', r) FROM rank_pairwise_in r LIMIT 1$$);

-- infinities are values, not errors; NaN is missing
SELECT hb_predict('binary_logistic', ARRAY['Infinity', '-Infinity', 0, 0, 0, 0]::float8[]) BETWEEN 0 AND 1 AS inf_ok,
	   hb_predict('binary_logistic', ARRAY['NaN', 0, 0, 0, 0, 0]::float8[]) =
	   hb_predict('binary_logistic', ARRAY[NULL, 0, 0, 0, 0, 0]::float8[]) AS nan_is_missing;

-- nothing was written
SELECT (SELECT count(*) FROM hbird.model) = models AS models_same,
	   (SELECT count(*) FROM hbird.model_version) = versions AS versions_same,
	   (SELECT count(*) FROM hbird.model_feature) = features AS features_same
FROM catalog_before;
