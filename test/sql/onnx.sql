-- ONNX-ML models: upload (auto-detected or named), metadata, scoring against
-- the fixtures of test/fixtures/onnx (gen_onnx.py: expected outputs from a
-- direct reading of the operator specification), and clean refusals.  The
-- real converter outputs are checked by the conformance corpus
-- (test/core/test_conformance.c).
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/onnx/'

-- within 1e-6 of max(|expected|, 1): float32 sums in another order (AVERAGE
-- divides each leaf, onnxruntime the sum) differ in the last bits
CREATE FUNCTION hbt_onnx_close(a float8, b float8) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$ SELECT abs(a - b) <= 1e-6 * greatest(abs(b), 1) $$;

-- rows of a headed CSV as float8[] (empty cell = NULL), numbered from 1
CREATE FUNCTION hbt_onnx_rows(body text) RETURNS TABLE (id bigint, v float8[])
LANGUAGE sql AS $$
	SELECT n, (SELECT array_agg(NULLIF(c, '')::float8 ORDER BY o)
			   FROM unnest(string_to_array(l, ',')) WITH ORDINALITY AS u(c, o))
	FROM unnest((regexp_split_to_array(rtrim(body, E'\n'), E'\n'))[2:]) WITH ORDINALITY AS t(l, n)
$$;

-- three classes, softmax, string labels: auto-detected from the bytes
\set m `base64 -w0 :fixtures/tree_softmax.onnx`
\set csv `cat :fixtures/tree_softmax.csv`
\set exp `cat :fixtures/tree_softmax.expected.csv`
SELECT hb_model_upload('onnx_softmax', decode(:'m', 'base64')) AS version;
SELECT name, format, task, objective, n_features, n_outputs, n_classes, n_trees
FROM hb_models WHERE name = 'onnx_softmax';
SELECT string_agg(feature, ',' ORDER BY position) FROM hb_model_features WHERE name = 'onnx_softmax';
CREATE TABLE onnx_softmax_in AS SELECT * FROM hbt_onnx_rows(:'csv');
CREATE TABLE onnx_softmax_exp AS SELECT * FROM hbt_onnx_rows(:'exp');
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE NOT (SELECT bool_and(hbt_onnx_close(p, w))
								   FROM unnest(hb_predict_proba('onnx_softmax', i.v), e.v) AS z(p, w))) AS proba_differ,
	   count(*) FILTER (WHERE hb_predict('onnx_softmax', i.v) <>
						(SELECT o - 1 FROM unnest(e.v) WITH ORDINALITY AS z(p, o) ORDER BY p DESC, o LIMIT 1)) AS class_differ
FROM onnx_softmax_in i JOIN onnx_softmax_exp e USING (id);
-- binding by name: the features are f0 .. f3
SELECT hb_predict('onnx_softmax', r) AS class, hbt_close((hb_predict_proba('onnx_softmax', r))[2],
	   (hb_predict_proba('onnx_softmax', ARRAY[r.f0, r.f1, r.f2, r.f3]))[2]) AS same_by_position
FROM (VALUES (0.5::float8, -1.0::float8, NULL::float8, 2.0::float8)) r(f0, f1, f2, f3);

-- every node mode, two targets, AVERAGE: format named explicitly
\set m `base64 -w0 :fixtures/tree_modes.onnx`
\set csv `cat :fixtures/tree_modes.csv`
\set exp `cat :fixtures/tree_modes.expected.csv`
SELECT hb_model_upload('onnx_modes', decode(:'m', 'base64'), format => 'onnx') AS version;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE NOT (SELECT bool_and(hbt_onnx_close(p, w))
								   FROM unnest(hb_predict_margin('onnx_modes', i.v), e.v) AS z(p, w))) AS differ
FROM hbt_onnx_rows(:'csv') i JOIN hbt_onnx_rows(:'exp') e USING (id);

-- binary, logistic: hb_predict is the positive class's probability
\set m `base64 -w0 :fixtures/tree_binary_logistic.onnx`
\set csv `cat :fixtures/tree_binary_logistic.csv`
\set exp `cat :fixtures/tree_binary_logistic.expected.csv`
SELECT hb_model_upload('onnx_binary', decode(:'m', 'base64')) AS version;
SELECT task, n_classes FROM hb_models WHERE name = 'onnx_binary';
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE NOT hbt_onnx_close(hb_predict('onnx_binary', i.v), e.v[2])) AS differ
FROM hbt_onnx_rows(:'csv') i JOIN hbt_onnx_rows(:'exp') e USING (id);
SELECT count(*) > 0 AS compiles FROM hb_compile('onnx_binary');

-- binary without a post-transform (a random forest as skl2onnx writes it):
-- the score is the probability itself, so the class flips at 0.5, also
-- where the early exit decides a row before its last tree (it once cut at
-- 0 and called every such row 1); the same with the exit off
\set m `base64 -w0 :fixtures/tree_binary_votes.onnx`
\set csv `cat :fixtures/tree_binary_votes.csv`
\set exp `cat :fixtures/tree_binary_votes.expected.csv`
SELECT hb_model_upload('onnx_votes', decode(:'m', 'base64')) AS version;
SELECT hb_class_stats_reset();
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE NOT hbt_onnx_close(hb_predict('onnx_votes', i.v), e.v[2])) AS differ,
	   count(*) FILTER (WHERE e.v[2] > 0 AND e.v[2] <= 0.5) AS below_half,
	   count(*) FILTER (WHERE e.v[2] > 0.5) AS above_half,
	   count(*) FILTER (WHERE hb_predict_class('onnx_votes', i.v) <> (e.v[2] > 0.5)::int) AS class_differ
FROM hbt_onnx_rows(:'csv') i JOIN hbt_onnx_rows(:'exp') e USING (id);
SELECT rows_early > 0 AS exited, pairs_scored < pairs_total AS saved FROM hb_class_stats();
SET hbird.early_exit = off;
SELECT count(*) FILTER (WHERE hb_predict_class('onnx_votes', i.v) <> (e.v[2] > 0.5)::int) AS class_differ_every_tree
FROM hbt_onnx_rows(:'csv') i JOIN hbt_onnx_rows(:'exp') e USING (id);
RESET hbird.early_exit;

-- refused cleanly
SELECT hbt_try(format('SELECT hb_model_upload(%L, substr(decode(%L, %L), 1, 40))', 'bad', :'m', 'base64')) AS truncated;
SELECT hbt_try(format('SELECT hb_model_upload(%L, convert_to(%L, %L), %L)', 'bad', '{"learner": {}}', 'UTF8', 'onnx')) AS json_as_onnx;
\set m `base64 -w0 :fixtures/unsupported_relu.onnx`
SELECT hbt_try(format('SELECT hb_model_upload(%L, decode(%L, %L))', 'bad', :'m', 'base64')) AS unsupported_op;
\set m `base64 -w0 :fixtures/unsupported_svm_rbf.onnx`
SELECT hbt_try(format('SELECT hb_model_upload(%L, decode(%L, %L))', 'bad', :'m', 'base64')) AS rbf_kernel;
\set m `base64 -w0 :fixtures/tree_too_deep.onnx`
SELECT hbt_try(format('SELECT hb_model_upload(%L, decode(%L, %L))', 'bad', :'m', 'base64')) AS too_deep;
-- a BRANCH_MEMBER node with no values whose false side is itself (it once
-- recursed until the backend's stack overflowed)
\set m `base64 -w0 :fixtures/member_empty_cycle.onnx`
SELECT hbt_try(format('SELECT hb_model_upload(%L, decode(%L, %L))', 'bad', :'m', 'base64')) AS member_cycle;
SELECT count(*) AS bad_versions FROM hb_models WHERE name = 'bad';

-- featurizers in front (Imputer, Scaler, ...): read into the model's
-- pipeline, stored with it and run before the trees, by position and by name
\set m `base64 -w0 :fixtures/featurized_trees.onnx`
\set csv `cat :fixtures/featurized_trees.csv`
\set exp `cat :fixtures/featurized_trees.expected.csv`
SELECT hb_model_upload('onnx_feat', decode(:'m', 'base64')) AS version;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE NOT hbt_onnx_close(hb_predict('onnx_feat', i.v), e.v[1])) AS differ
FROM hbt_onnx_rows(:'csv') i JOIN hbt_onnx_rows(:'exp') e USING (id);
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE NOT hbt_onnx_close(hb_predict('onnx_feat', r), e.v[1])) AS differ_by_name
FROM (SELECT id, v[1] AS f0, v[2] AS f1, v[3] AS f2, v[4] AS f3 FROM hbt_onnx_rows(:'csv')) r
	 JOIN hbt_onnx_rows(:'exp') e USING (id);
SELECT hb_model_drop('onnx_feat');

-- string graph inputs: text inputs of the model, bound by column name
-- (LabelEncoder and OneHotEncoder over strings in front of a tree; the
-- expected values are scikit-learn's predictions, see gen_onnx.py)
\set m `base64 -w0 :fixtures/text_inputs.onnx`
\set csv `cat :fixtures/text_inputs.csv`
\set exp `cat :fixtures/text_inputs.expected.csv`
SELECT hb_model_upload('onnx_text', decode(:'m', 'base64')) AS version;
SELECT position, feature, type FROM hb_model_features WHERE name = 'onnx_text' ORDER BY position;
CREATE TABLE onnx_text_in AS
SELECT n AS id, c[1]::float8 AS num_0, c[2]::float8 AS num_1, c[3] AS city, c[4] AS color
FROM unnest((regexp_split_to_array(rtrim(:'csv', E'\n'), E'\n'))[2:]) WITH ORDINALITY AS t(l, n),
	 LATERAL string_to_array(l, ',') AS c;
SELECT count(*) AS rows,
	   count(*) FILTER (WHERE city NOT IN ('Lyon', 'Oslo', 'Porto', 'Riga', 'Tartu')) AS unseen_city,
	   count(*) FILTER (WHERE color NOT IN ('blue', 'green', 'red')) AS unseen_color,
	   count(*) FILTER (WHERE NOT hbt_onnx_close(hb_predict('onnx_text', i), e.v[1])) AS differ
FROM onnx_text_in i JOIN hbt_onnx_rows(:'exp') e USING (id);
-- column order does not matter; varchar feeds a text input
SELECT count(*) FILTER (WHERE NOT hbt_onnx_close(hb_predict('onnx_text', t), e.v[1])) AS differ_reordered
FROM (SELECT id, color::varchar(10) AS color, num_1, city, num_0 FROM onnx_text_in) t
	 JOIN hbt_onnx_rows(:'exp') e USING (id);
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_onnx_close(b.score, e.v[1])) AS differ_batch
FROM hb_predict_batch('onnx_text', NULL::onnx_text_in) b
	 JOIN hbt_onnx_rows(:'exp') e ON e.id = (b.item).id;
-- a NULL city is an unknown string (the encoder's default), not an error
SELECT hb_predict('onnx_text', t) = hb_predict('onnx_text', u) AS null_is_unknown
FROM (SELECT 3.0::float8 AS num_0, 4.0::float8 AS num_1, NULL::text AS city, 'red' AS color) t,
	 (SELECT 3.0::float8 AS num_0, 4.0::float8 AS num_1, 'Atlantis' AS city, 'red' AS color) u;
-- text inputs cannot come in an array; a missing text column is named
SELECT hbt_try($$SELECT hb_predict('onnx_text', ARRAY[1, 2, 3, 4]::float8[])$$) AS array_refused;
SELECT hbt_try($$SELECT hb_predict('onnx_text', t) FROM (SELECT 1.0::float8 AS num_0, 2.0::float8 AS num_1, 'red' AS color) t$$) AS missing_column;
-- a map to strings cannot be a model: refused naming the node and the op
\set m `base64 -w0 :fixtures/unsupported_label_strings.onnx`
SELECT hbt_try(format('SELECT hb_model_upload(%L, decode(%L, %L))', 'bad', :'m', 'base64')) AS string_output;
SELECT hb_model_drop('onnx_text');
DROP TABLE onnx_text_in;

SELECT hb_model_drop('onnx_softmax'), hb_model_drop('onnx_modes'), hb_model_drop('onnx_binary');
DROP TABLE onnx_softmax_in, onnx_softmax_exp;
DROP FUNCTION hbt_onnx_rows(text), hbt_onnx_close(float8, float8);
