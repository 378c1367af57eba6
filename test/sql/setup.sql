-- Set-up for the other suites: the extension, test helpers, every fixture
-- model uploaded under its own name with its inputs and XGBoost's outputs.
CREATE EXTENSION hbird;
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'

-- Load a CSV (header line, empty cell = NULL) into a new table: the first
-- column is an integer id, the rest float8.
CREATE FUNCTION hbt_load(tab text, body text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	lines text[] := regexp_split_to_array(rtrim(body, E'\n'), E'\r?\n');
	hdr text[] := string_to_array(lines[1], ',');
	cols text;
	exprs text;
	n bigint;
BEGIN
	SELECT string_agg(format('%I %s', h, CASE WHEN i = 1 THEN 'integer' ELSE 'float8' END), ', ' ORDER BY i),
		   string_agg(format('NULLIF(a[%s], '''')::%s', i, CASE WHEN i = 1 THEN 'integer' ELSE 'float8' END), ', ' ORDER BY i)
	  INTO cols, exprs
	  FROM unnest(hdr) WITH ORDINALITY AS u(h, i);
	EXECUTE format('CREATE TABLE %I (%s)', tab, cols);
	EXECUTE format('INSERT INTO %I SELECT %s FROM unnest($1) AS l(line), LATERAL string_to_array(l.line, '','') AS a', tab, exprs)
		USING lines[2:];
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;

-- Run a statement; 'ok' or its SQLSTATE and message.
CREATE FUNCTION hbt_try(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- The features of row id of the willump fixtures, as
-- test/fixtures/willump/gen_willump.py computes them.
CREATE FUNCTION hbt_wu(id bigint, j int) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
	SELECT 2 * (s - floor(s)) - 1 FROM (SELECT sin(id * 12.9898 + j * 78.233) * 43758.5453 AS s) q
$$;

-- Equal within 1e-6 relative (absolute near zero).
CREATE FUNCTION hbt_close(a float8, b float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT (a IS NULL AND b IS NULL) OR abs(a - b) <= 1e-6 * greatest(abs(b), 1e-6)
$$;

\set m `cat :fixtures/binary_logistic.json`
\set csv `cat :fixtures/binary_logistic.csv`
\set exp `cat :fixtures/binary_logistic.expected.csv`
SELECT hb_model_upload('binary_logistic', :'m') AS version, hbt_load('binary_logistic_in', :'csv') AS rows, hbt_load('binary_logistic_exp', :'exp') AS expected;
\set m `cat :fixtures/binary_logistic_deep.json`
\set csv `cat :fixtures/binary_logistic_deep.csv`
\set exp `cat :fixtures/binary_logistic_deep.expected.csv`
SELECT hb_model_upload('binary_logistic_deep', :'m') AS version, hbt_load('binary_logistic_deep_in', :'csv') AS rows, hbt_load('binary_logistic_deep_exp', :'exp') AS expected;
\set m `cat :fixtures/binary_logitraw.json`
\set csv `cat :fixtures/binary_logitraw.csv`
\set exp `cat :fixtures/binary_logitraw.expected.csv`
SELECT hb_model_upload('binary_logitraw', :'m') AS version, hbt_load('binary_logitraw_in', :'csv') AS rows, hbt_load('binary_logitraw_exp', :'exp') AS expected;
\set m `cat :fixtures/categorical.json`
\set csv `cat :fixtures/categorical.csv`
\set exp `cat :fixtures/categorical.expected.csv`
SELECT hb_model_upload('categorical', :'m') AS version, hbt_load('categorical_in', :'csv') AS rows, hbt_load('categorical_exp', :'exp') AS expected;
\set m `cat :fixtures/count_poisson.json`
\set csv `cat :fixtures/count_poisson.csv`
\set exp `cat :fixtures/count_poisson.expected.csv`
SELECT hb_model_upload('count_poisson', :'m') AS version, hbt_load('count_poisson_in', :'csv') AS rows, hbt_load('count_poisson_exp', :'exp') AS expected;
\set m `cat :fixtures/multi_softmax.json`
\set csv `cat :fixtures/multi_softmax.csv`
\set exp `cat :fixtures/multi_softmax.expected.csv`
SELECT hb_model_upload('multi_softmax', :'m') AS version, hbt_load('multi_softmax_in', :'csv') AS rows, hbt_load('multi_softmax_exp', :'exp') AS expected;
\set m `cat :fixtures/multi_softprob.json`
\set csv `cat :fixtures/multi_softprob.csv`
\set exp `cat :fixtures/multi_softprob.expected.csv`
SELECT hb_model_upload('multi_softprob', :'m') AS version, hbt_load('multi_softprob_in', :'csv') AS rows, hbt_load('multi_softprob_exp', :'exp') AS expected;
\set m `cat :fixtures/no_feature_names.json`
\set csv `cat :fixtures/no_feature_names.csv`
\set exp `cat :fixtures/no_feature_names.expected.csv`
SELECT hb_model_upload('no_feature_names', :'m') AS version, hbt_load('no_feature_names_in', :'csv') AS rows, hbt_load('no_feature_names_exp', :'exp') AS expected;
\set m `cat :fixtures/rank_ndcg.json`
\set csv `cat :fixtures/rank_ndcg.csv`
\set exp `cat :fixtures/rank_ndcg.expected.csv`
SELECT hb_model_upload('rank_ndcg', :'m') AS version, hbt_load('rank_ndcg_in', :'csv') AS rows, hbt_load('rank_ndcg_exp', :'exp') AS expected;
\set m `cat :fixtures/rank_pairwise.json`
\set csv `cat :fixtures/rank_pairwise.csv`
\set exp `cat :fixtures/rank_pairwise.expected.csv`
SELECT hb_model_upload('rank_pairwise', :'m') AS version, hbt_load('rank_pairwise_in', :'csv') AS rows, hbt_load('rank_pairwise_exp', :'exp') AS expected;
\set m `cat :fixtures/reg_logistic.json`
\set csv `cat :fixtures/reg_logistic.csv`
\set exp `cat :fixtures/reg_logistic.expected.csv`
SELECT hb_model_upload('reg_logistic', :'m') AS version, hbt_load('reg_logistic_in', :'csv') AS rows, hbt_load('reg_logistic_exp', :'exp') AS expected;
\set m `cat :fixtures/reg_squarederror.json`
\set csv `cat :fixtures/reg_squarederror.csv`
\set exp `cat :fixtures/reg_squarederror.expected.csv`
SELECT hb_model_upload('reg_squarederror', :'m') AS version, hbt_load('reg_squarederror_in', :'csv') AS rows, hbt_load('reg_squarederror_exp', :'exp') AS expected;
\set m `cat :fixtures/single_leaf.json`
\set csv `cat :fixtures/single_leaf.csv`
\set exp `cat :fixtures/single_leaf.expected.csv`
SELECT hb_model_upload('single_leaf', :'m') AS version, hbt_load('single_leaf_in', :'csv') AS rows, hbt_load('single_leaf_exp', :'exp') AS expected;

SELECT name, version, active, format, task, n_features, n_outputs, n_trees, max_depth,
	   size_bytes > 0 AS has_bytes, uploaded_by, objective, n_classes, length(sha256) AS sha_len
FROM hb_models ORDER BY name;
