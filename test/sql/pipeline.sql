-- Featurizer pipelines (hbird pipeline JSON exported from scikit-learn):
-- rows bind to the raw inputs by name, text columns included; every
-- scoring entry point featurizes, and the results equal scikit-learn's
-- predict_proba / predict (test/fixtures/pipelines/gen_pipelines.py).
\getenv abs_srcdir PG_ABS_SRCDIR
\set pl :abs_srcdir '/fixtures/pipelines/'

-- the rows to score: id, age, income, city, plan, review (no commas in text)
CREATE TABLE pl_rows (id integer, age float8, income numeric, city text, plan integer, review text);
\set csv `cat :pl/rows.csv`
INSERT INTO pl_rows
SELECT NULLIF(a[1], '')::integer, NULLIF(a[2], '')::float8, NULLIF(a[3], '')::numeric,
	   NULLIF(a[4], ''), NULLIF(a[5], '')::integer, NULLIF(a[6], '')
FROM unnest((regexp_split_to_array(rtrim(:'csv', E'\n'), E'\n'))[2:]) AS l(line),
	 LATERAL string_to_array(l.line, ',') AS a;
SELECT count(*) AS rows, count(*) FILTER (WHERE city IS NULL) AS null_city,
	   count(*) FILTER (WHERE review IS NULL) AS null_review,
	   count(*) FILTER (WHERE city = 'Atlantis') AS unknown_city
FROM pl_rows;

-- upload every fixture (format detected from the bytes) with its expected outputs
CREATE FUNCTION pl_load(n text, m text, exp text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM hb_model_upload(n, m);
	PERFORM hbt_load(n || '_exp', exp);
	RETURN n;
END $$;
\set m `cat :pl/logreg_tfidf.json`
\set e `cat :pl/logreg_tfidf.expected.csv`
SELECT pl_load('logreg_tfidf', :'m', :'e');
\set m `cat :pl/rf_hashing.json`
\set e `cat :pl/rf_hashing.expected.csv`
SELECT pl_load('rf_hashing', :'m', :'e');
\set m `cat :pl/gb_multiclass.json`
\set e `cat :pl/gb_multiclass.expected.csv`
SELECT pl_load('gb_multiclass', :'m', :'e');
\set m `cat :pl/ridge_char.json`
\set e `cat :pl/ridge_char.expected.csv`
SELECT pl_load('ridge_char', :'m', :'e');
\set m `cat :pl/svc_words.json`
\set e `cat :pl/svc_words.expected.csv`
SELECT pl_load('svc_words', :'m', :'e');
\set m `cat :pl/etr_hashing.json`
\set e `cat :pl/etr_hashing.expected.csv`
SELECT pl_load('etr_hashing', :'m', :'e');
\set m `cat :pl/strict_dt.json`
\set e `cat :pl/strict_dt.expected.csv`
SELECT pl_load('strict_dt', :'m', :'e');
\set m `cat :pl/gbr_sgd.json`
\set e `cat :pl/gbr_sgd.expected.csv`
SELECT pl_load('gbr_sgd', :'m', :'e');
\set m `cat :pl/xgb_onehot.json`
\set e `cat :pl/xgb_onehot.expected.csv`
SELECT pl_load('xgb_onehot', :'m', :'e');

SELECT name, format, task, n_features FROM hb_models
WHERE format = 'hbird-pipeline' ORDER BY name;
-- the catalog lists what rows bind to: the raw inputs, with type and cost
SELECT name, position, feature, type, cost FROM hb_model_features
WHERE name IN ('logreg_tfidf', 'gbr_sgd') ORDER BY name, position;

-- row by row: probabilities (classifiers) / predictions equal scikit-learn's
CREATE FUNCTION pl_check_proba(model text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	bad bigint;
	n bigint;
BEGIN
	EXECUTE format($q$
		SELECT count(*) FILTER (WHERE NOT ok), count(*) FROM (
		  SELECT bool_and(hbt_close(p.v, (to_jsonb(e) ->> ('p' || (p.k - 1)))::float8)) AS ok
		  FROM pl_rows r
		  JOIN %I e ON e.id = r.id,
		  LATERAL unnest(hb_predict_proba(%L, r)) WITH ORDINALITY AS p(v, k)
		  GROUP BY r.id) s$q$, model || '_exp', model) INTO bad, n;
	RETURN format('%s rows, %s differ', n, bad);
END $$;
CREATE FUNCTION pl_check_pred(model text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	bad bigint;
	n bigint;
BEGIN
	EXECUTE format($q$
		SELECT count(*) FILTER (WHERE NOT hbt_close(hb_predict(%L, r), e.pred)), count(*)
		FROM pl_rows r JOIN %I e ON e.id = r.id$q$, model, model || '_exp') INTO bad, n;
	RETURN format('%s rows, %s differ', n, bad);
END $$;
SELECT m, pl_check_proba(m) FROM unnest(ARRAY['logreg_tfidf', 'rf_hashing', 'gb_multiclass',
											  'strict_dt', 'xgb_onehot']) AS m;
SELECT m, pl_check_pred(m) FROM unnest(ARRAY['ridge_char', 'svc_words', 'etr_hashing', 'gbr_sgd']) AS m;
-- a backend reads a pipeline from the stored image straight into its
-- cache; where that part of the image is damaged (here cut short), it
-- parses the original bytes instead: the same answers, no error
CREATE TABLE pl_images AS
SELECT name, version, image FROM hbird.model_version
WHERE name IN ('logreg_tfidf', 'rf_hashing');
UPDATE hbird.model_version v SET image = substr(v.image, 1, length(v.image) - 4)
FROM pl_images i WHERE (v.name, v.version) = (i.name, i.version);
\c
SELECT m, pl_check_proba(m) AS damaged_image FROM unnest(ARRAY['logreg_tfidf', 'rf_hashing']) AS m;
UPDATE hbird.model_version v SET image = i.image
FROM pl_images i WHERE (v.name, v.version) = (i.name, i.version);
DROP TABLE pl_images;
\c
-- binary: hb_predict is the positive class's probability
SELECT count(*) FILTER (WHERE NOT hbt_close(hb_predict('logreg_tfidf', r), e.p1)) AS bad
FROM pl_rows r JOIN logreg_tfidf_exp e USING (id);

-- the aggregate, the batch function and top-K featurize the same way
SELECT m, (SELECT count(*) FILTER (WHERE NOT hbt_close(a.v, hb_predict(m, r)))
		   FROM unnest((SELECT hb_predict_agg(m, r ORDER BY id) FROM pl_rows r)) WITH ORDINALITY AS a(v, k)
		   JOIN (SELECT row_number() OVER (ORDER BY id) AS k, r FROM pl_rows r) rr USING (k)) AS agg_differ
FROM unnest(ARRAY['logreg_tfidf', 'rf_hashing', 'ridge_char', 'etr_hashing', 'xgb_onehot']) AS m;
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(b.score, e.pred)) AS bad
FROM hb_predict_batch('ridge_char', NULL::pl_rows) b
JOIN ridge_char_exp e ON e.id = (b.item).id;
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(b.score, e.p1)) AS bad
FROM hb_predict_batch('logreg_tfidf', NULL::pl_rows, 'SELECT * FROM pl_rows ORDER BY id') b
JOIN logreg_tfidf_exp e ON e.id = (b.item).id;
-- top-K (tree models): the same rows as ORDER BY score DESC LIMIT k
SELECT m, (SELECT string_agg((item).id::text, ',' ORDER BY rank)
		   FROM hb_topk(m, 5, NULL::pl_rows, 'SELECT * FROM pl_rows ORDER BY id')) =
		  (SELECT string_agg(id::text, ',' ORDER BY s DESC, id)
		   FROM (SELECT id, hb_predict(m, r) AS s FROM pl_rows r ORDER BY s DESC, id LIMIT 5) q)
	   AS topk_same
FROM unnest(ARRAY['etr_hashing', 'xgb_onehot', 'gbr_sgd']) AS m;
SELECT (SELECT array_agg(x.id ORDER BY ord)
		FROM unnest((SELECT hb_topk_agg('xgb_onehot', 4, r ORDER BY id) FROM pl_rows r))
			 WITH ORDINALITY AS x(id, age, income, city, plan, review, ord)) =
	   (SELECT array_agg(id ORDER BY s DESC, id)
		FROM (SELECT id, hb_predict('xgb_onehot', r) AS s FROM pl_rows r ORDER BY s DESC, id LIMIT 4) q)
	   AS topk_agg_same;

-- binding by name: column order and extra columns do not matter; varchar,
-- char(n) and name columns feed text inputs; a case-folded name binds too
CREATE TABLE pl_typed AS
SELECT review::varchar(200) AS "Review", plan, city::char(12) AS city, income, age, 'x' AS extra, id
FROM pl_rows;
SELECT count(*) FILTER (WHERE NOT hbt_close(hb_predict('logreg_tfidf', t), e.p1)) AS bad, count(*) AS n
FROM pl_typed t JOIN logreg_tfidf_exp e USING (id);
SELECT hb_predict('strict_dt', r) = hb_predict('strict_dt', (SELECT t FROM (SELECT r.age, r.income::float8, r.city::name AS city) t))
	   AS name_column_same
FROM pl_rows r WHERE id = 1;

-- errors
-- unknown category with handle_unknown='error': 22023 naming input and value
SELECT hbt_try($$SELECT hb_predict('strict_dt', r) FROM pl_rows r WHERE city = 'Atlantis'$$);
SELECT hbt_try($$SELECT hb_predict_agg('strict_dt', r) FROM pl_rows r$$);
-- a missing input column: 42703 naming it
SELECT hbt_try($$SELECT hb_predict('logreg_tfidf', t) FROM (SELECT age, income, city, plan FROM pl_rows) t$$);
-- a text input fed a number
SELECT hbt_try($$SELECT hb_predict('logreg_tfidf', t) FROM (SELECT age, income, city, plan, 7 AS review FROM pl_rows) t$$);
-- arrays cannot hold text inputs; numeric-only pipelines take their inputs as an array
SELECT hbt_try($$SELECT hb_predict('logreg_tfidf', ARRAY[1, 2, 3]::float8[])$$);
SELECT hb_predict('gbr_sgd', ARRAY[age, income::float8, plan]::float8[]) = hb_predict('gbr_sgd', r) AS array_same
FROM pl_rows r WHERE id IN (1, 2, 3);
SELECT hbt_try($$SELECT hb_predict('gbr_sgd', ARRAY[1, 2]::float8[])$$);
-- malformed pipeline JSON: 22P02 with the offset; bad fields: 22023 naming them
SELECT hbt_try($$SELECT hb_model_upload('pl_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [}')$$);
SELECT hbt_try($$SELECT hb_model_upload('pl_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a"}], "features": ["a"], "model": {"kind": "linear", "coef": [[1, 2]]}}')$$);
SELECT hbt_try($$SELECT hb_model_upload('pl_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a"}], "steps": [{"op": "one_hot_encoder", "in": ["a"], "categories": [[1, 2]], "handle_unknown": "sometimes"}], "features": ["a"], "model": {"kind": "linear", "coef": [[1]]}}')$$);
SELECT hbt_try($$SELECT hb_model_upload('pl_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a", "cost": "free"}], "features": ["a"], "model": {"kind": "linear", "coef": [[1]]}}')$$);
-- an input named like a step's output: the reference would read either
SELECT hbt_try($$SELECT hb_model_upload('pl_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a"}, {"name": "mm:0"}], "steps": [{"op": "minmax_scaler", "name": "mm", "in": ["a"], "scale": [1], "min": [0]}], "features": ["mm:0", "a"], "model": {"kind": "linear", "task": "regression", "link": "identity", "coef": [[1, 1]], "intercept": [0]}}')$$);
-- MinMaxScaler(clip=True): the step's name stands for the clipped values
SELECT hb_model_upload('pl_clip', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a", "type": "numeric"}], "steps": [{"op": "minmax_scaler", "name": "mm", "in": ["a"], "scale": [0.5], "min": [1], "clip": [0, 2]}], "features": ["mm"], "model": {"kind": "linear", "task": "regression", "link": "identity", "coef": [[1]], "intercept": [0]}}') AS v;
SELECT a, hb_predict('pl_clip', t) AS got, least(greatest(a * 0.5 + 1, 0), 2) AS want
FROM (VALUES (-5.0::float8), (-2.0), (0.5), (2.0), (7.0)) t(a);
SELECT hb_model_drop('pl_clip');

-- linear pipelines rank: hb_topk and hb_topk_agg give the rows, scores and
-- tie order of ORDER BY hb_predict(...) DESC, row order
CREATE FUNCTION pl_topk_same(m text, k int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	got text;
	agg text;
	want text;
BEGIN
	EXECUTE format('SELECT string_agg(format(''%%s:%%s'', (item).id, score), '','' ORDER BY rank)
					FROM hb_topk(%L, %s, NULL::pl_rows, ''SELECT * FROM pl_rows ORDER BY id'')', m, k) INTO got;
	EXECUTE format('SELECT string_agg((r).id::text, '','') FROM unnest((SELECT hb_topk_agg(%L, %s, t ORDER BY id) FROM pl_rows t)) r',
				   m, k) INTO agg;
	EXECUTE format('SELECT string_agg(format(''%%s:%%s'', id, s), '','' ORDER BY s DESC, id),
						   string_agg(id::text, '','' ORDER BY s DESC, id)
					FROM (SELECT id, hb_predict(%L, t) AS s FROM pl_rows t ORDER BY s DESC, id LIMIT %s) q', m, k)
		INTO want;
	RETURN CASE WHEN got = want AND agg = (SELECT string_agg(split_part(x, ':', 1), ',')
										   FROM unnest(string_to_array(want, ',')) x)
				THEN 'same' ELSE 'DIFFERENT: ' || coalesce(got, '-') || ' / ' || coalesce(agg, '-') || ' vs ' || coalesce(want, '-') END;
END $$;
SELECT m, k, pl_topk_same(m, k)
FROM (VALUES ('logreg_tfidf'), ('ridge_char'), ('gbr_sgd')) AS a(m),
	 (VALUES (1), (5), (1000)) AS b(k)
ORDER BY m, k;
DROP FUNCTION pl_topk_same(text, int);

-- what rows bind to (raw inputs) and what the model reads (features)
SELECT name, n_inputs, n_features FROM hb_models
WHERE name IN ('logreg_tfidf', 'gbr_sgd', 'xgb_onehot') ORDER BY name;

-- a database in another encoding than UTF-8: texts are converted to UTF-8
-- before tokenizers and encoders see them, and a model given as text is
-- stored as UTF-8 (non-ASCII values were unknown categories and terms)
SELECT current_database() AS home \gset
CREATE DATABASE hbird_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c hbird_latin1
SET client_encoding = 'UTF8';
SET client_min_messages = warning;
CREATE EXTENSION hbird;
SELECT hb_model_upload('city', convert_to('{"format": "hbird-pipeline", "version": 1,
  "inputs": [{"name": "city", "type": "text"}, {"name": "review", "type": "text"}],
  "steps": [{"op": "one_hot_encoder", "name": "oh", "in": ["city"], "categories": [["Zürich", "Paris"]], "handle_unknown": "ignore"},
            {"op": "count_vectorizer", "name": "cv", "input": "review", "vocabulary": {"café": 0, "plain": 1}}],
  "features": ["oh", "cv"],
  "model": {"kind": "linear", "task": "regression", "link": "identity", "coef": [[1, 10, 100, 1000]], "intercept": [0]}}', 'UTF8')) AS v;
SELECT hb_model_upload('city_text', '{"format": "hbird-pipeline", "version": 1,
  "inputs": [{"name": "city", "type": "text"}, {"name": "review", "type": "text"}],
  "steps": [{"op": "one_hot_encoder", "name": "oh", "in": ["city"], "categories": [["Zürich", "Paris"]], "handle_unknown": "ignore"},
            {"op": "count_vectorizer", "name": "cv", "input": "review", "vocabulary": {"café": 0, "plain": 1}}],
  "features": ["oh", "cv"],
  "model": {"kind": "linear", "task": "regression", "link": "identity", "coef": [[1, 10, 100, 1000]], "intercept": [0]}}') AS v;
CREATE TABLE lat (id int, city text, review varchar);
INSERT INTO lat VALUES (1, 'Zürich', 'café'), (2, 'Paris', 'plain café'), (3, 'Zürich', 'CAFÉ Café'), (4, 'Oslo', 'Crème');
SELECT id, hb_predict('city', t) AS bytes_model, hb_predict('city_text', t) AS text_model FROM lat t ORDER BY id;
SET hbird.batch_scan = off;
SELECT id, hb_predict('city', t) AS bytes_model FROM lat t ORDER BY id;
\c :home
DROP DATABASE hbird_latin1;
