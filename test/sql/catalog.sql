-- Versions, activation, drops, the features argument, and transactions.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set reg `cat :fixtures/reg_squarederror.json`
\set bin `cat :fixtures/binary_logistic.json`
\set nonames `cat :fixtures/no_feature_names.json`

-- bytea upload with an explicit format, then a text upload: versions 1 and 2
SELECT hb_model_upload('m', convert_to(:'reg', 'UTF8'), 'xgboost-json') AS v1;
SELECT hb_model_upload('m', :'bin') AS v2;
SELECT version, active, task, n_features FROM hb_models WHERE name = 'm' ORDER BY version;

-- the active version answers: v2 is binary (a probability), v1 regression
SELECT hb_predict('m', i) = hb_predict('binary_logistic', i) AS uses_v2
FROM binary_logistic_in i WHERE id = 1;
SELECT hb_model_activate('m', 1);
SELECT version, active FROM hb_models WHERE name = 'm' ORDER BY version;
SELECT hb_predict('m', i) = hb_predict('reg_squarederror', i) AS uses_v1
FROM reg_squarederror_in i WHERE id = 1;

-- the bytes are kept verbatim with their hash
SELECT body = convert_to(:'reg', 'UTF8') AS verbatim,
	   sha256 = sha256(convert_to(:'reg', 'UTF8')) AS hashed
FROM hbird.model_version WHERE name = 'm' AND version = 1;
SELECT position, feature, type FROM hb_model_features
WHERE name = 'm' AND version = 1 ORDER BY position;

-- body and image are compressed with lz4 where the server has it (pglz is
-- slow on megabytes and cannot be interrupted), else stored as they are
SELECT v.name, pg_column_compression(v.body) IS NOT DISTINCT FROM c.lz4 AS body_as_expected,
	   pg_column_compression(v.image) IS NOT DISTINCT FROM c.lz4 AS image_as_expected,
	   (pg_column_size(v.image) < octet_length(v.image)) = (c.lz4 IS NOT NULL) AS image_smaller
FROM hbird.model_version v,
	 (SELECT CASE WHEN 'lz4' = ANY (enumvals) THEN 'lz4' END AS lz4
	  FROM pg_settings WHERE name = 'default_toast_compression') c
WHERE v.name = 'binary_logistic_deep';

-- dropping the active version hands over to the newest remaining one
SELECT hb_model_drop('m', 1);
SELECT version, active FROM hb_models WHERE name = 'm' ORDER BY version;
SELECT hb_model_upload('m', :'reg') AS v3;
SELECT hb_model_drop('m') AS dropped;
SELECT count(*) FROM hb_models WHERE name = 'm';
SELECT count(*) FROM hbird.model_feature WHERE name = 'm';

-- a model without names gets f0.. and can be named at upload
SELECT hb_model_upload('anon', :'nonames');
SELECT string_agg(feature, ',' ORDER BY position) FROM hb_model_features WHERE name = 'anon';
SELECT hb_model_upload('named', :'nonames', 'auto', ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']);
SELECT string_agg(feature, ',' ORDER BY position) FROM hb_model_features WHERE name = 'named';
SELECT hbt_close(hb_predict('named', r), hb_predict('anon', ARRAY[r.a, r.b, r.c, r.d, r.e, r.f, r.g, r.h, r.i, r.j]))
FROM (SELECT f0 AS a, f1 AS b, f2 AS c, f3 AS d, f4 AS e, f5 AS f, f6 AS g, f7 AS h, f8 AS i, f9 AS j
	  FROM no_feature_names_in WHERE id = 3) r;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'named', :'nonames', 'auto', ARRAY['a', 'b']));
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'named', :'nonames', 'auto', ARRAY['a', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']));
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'named', :'nonames', 'auto', ARRAY['a', NULL, 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']));
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'named', :'nonames', 'auto', ARRAY['a', '', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']));
SELECT max(version) FROM hb_models WHERE name = 'named';

-- a rolled-back upload or drop leaves nothing behind
BEGIN;
SELECT hb_model_upload('ghost', :'reg');
SELECT hb_model_drop('named');
ROLLBACK;
SELECT name FROM hb_models WHERE name IN ('ghost', 'named') ORDER BY name;
SELECT count(*) FROM hbird.model WHERE name = 'ghost';

-- a new version is seen by the next statement of the same transaction
BEGIN;
SELECT hb_model_upload('flip', :'reg');
SELECT hb_predict('flip', i) = hb_predict('reg_squarederror', i) AS as_regression FROM reg_squarederror_in i WHERE id = 1;
SELECT hb_model_upload('flip', :'bin');
SELECT hb_predict('flip', i) = hb_predict('binary_logistic', i) AS as_binary FROM binary_logistic_in i WHERE id = 1;
COMMIT;
SELECT hb_model_drop('flip'), hb_model_drop('anon'), hb_model_drop('named');

-- XGBoost UBJSON (save_model("m.ubj")): detected from its first bytes or
-- named, and scoring exactly like the JSON twin of the same model
\set ubj `base64 -w0 :fixtures/binary_logistic.ubj`
SELECT hb_model_upload('ubj', decode(:'ubj', 'base64')) AS auto_detected;
SELECT hb_model_upload('ubj', decode(:'ubj', 'base64'), 'xgboost-ubj') AS named;
SELECT format, task, n_features, n_trees FROM hb_models WHERE name = 'ubj' ORDER BY version;
SELECT count(*) FILTER (WHERE hb_predict('ubj', i) <> hb_predict('binary_logistic', i)) AS differ, count(*) AS n
FROM binary_logistic_in i;
SELECT hbt_try(format('SELECT hb_model_upload(%L, decode(%L, %L), %L)', 'ubj', :'ubj', 'base64', 'xgboost-json'));
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text, %L)', 'ubj', :'bin', 'xgboost-ubj'));
SELECT hbt_try(format('SELECT hb_model_upload(%L, substring(decode(%L, %L) FROM 1 FOR 500))', 'ubj', :'ubj', 'base64'));
SELECT hb_model_drop('ubj');

-- a feature name longer than a column name binds to no column (a
-- warning at upload names it); arrays still score the model
SELECT hb_model_upload('long_names', :'bin', 'auto',
	ARRAY['amount', repeat('x', 64), 'balance', 'n_tx', 'risk', 'tenure']) AS version;
SELECT hb_predict('long_names', ARRAY[1, 2, 3, 4, 5, 6]) IS NOT NULL AS array_scores;
SELECT hb_model_drop('long_names');

-- a standalone composite type is not a table: its default query is refused
-- with a hint, and a query that returns rows of it works
CREATE TYPE cat_rowtype AS (amount float8, age float8, balance float8, n_tx float8, risk float8, tenure float8);
SELECT hbt_try($$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::cat_rowtype)$$);
SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::cat_rowtype,
	'SELECT amount, age, balance, n_tx, risk, tenure FROM binary_logistic_in');
-- the query's rows are taken by position: a column named like another of
-- the type's columns is refused (the type's names bind the features);
-- unnamed expressions are fine
SELECT hbt_try($$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::cat_rowtype,
	'SELECT age, amount, balance, n_tx, risk, tenure FROM binary_logistic_in')$$);
SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::cat_rowtype,
	'SELECT amount * 1, age + 0, balance, n_tx, risk, tenure FROM binary_logistic_in');
DROP TYPE cat_rowtype;

-- a read-only transaction (as on a standby): the change is named
BEGIN READ ONLY;
SELECT hbt_try($$SELECT hb_model_activate('m', 1)$$);
SELECT hbt_try($$SELECT hb_model_upload('m', '{}')$$);
SELECT hbt_try($$SELECT hb_model_drop('m')$$);
ROLLBACK;

-- deletes cascade through the catalog (by triggers: its tables have no
-- foreign keys, as pg_restore --jobs loads them in any order)
SELECT hb_model_upload('cat_cascade', :'bin') AS v1, hb_model_upload('cat_cascade', :'bin') AS v2;
SELECT hb_model_grant('cat_cascade', 'public');
SELECT hb_model_drop('cat_cascade', 1);
SELECT (SELECT count(*) FROM hbird.model_feature WHERE name = 'cat_cascade' AND version = 1) AS v1_features,
	   (SELECT count(*) FROM hbird.model_feature WHERE name = 'cat_cascade') AS v2_features;
SELECT hb_model_drop('cat_cascade');
SELECT (SELECT count(*) FROM hbird.model_version WHERE name = 'cat_cascade') AS versions,
	   (SELECT count(*) FROM hbird.model_feature WHERE name = 'cat_cascade') AS features,
	   (SELECT count(*) FROM hbird.model_grant WHERE name = 'cat_cascade') AS grants;

-- one statement scoring more models than hbird.plan_cache_entries holds,
-- in a new session (nothing compiled yet): the cache grows while the
-- statement pins them (the entry just compiled was freed, then used)
\c
SET hbird.plan_cache_entries = 1;
SELECT round(hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6])::numeric, 6) AS a,
	   round(hb_predict('binary_logitraw', ARRAY[1, 2, 3, 4, 5, 6])::numeric, 6) AS b,
	   round(hb_predict('reg_squarederror', ARRAY[1, 2, 3, 4, 5, 6, 7, 8])::numeric, 6) AS c,
	   round(hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6])::numeric, 6) AS a_again;
RESET hbird.plan_cache_entries;
SELECT round(hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6])::numeric, 6) AS a,
	   round(hb_predict('binary_logitraw', ARRAY[1, 2, 3, 4, 5, 6])::numeric, 6) AS b,
	   round(hb_predict('reg_squarederror', ARRAY[1, 2, 3, 4, 5, 6, 7, 8])::numeric, 6) AS c;
