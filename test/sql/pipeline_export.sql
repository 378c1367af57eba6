-- Exporter cases beyond the first pipelines: one-vs-rest logistic
-- regression, HistGradientBoosting trees (NaN routing, categorical splits,
-- unseen categories, float64 thresholds) and the char_wb / strip_accents
-- tokenizers, each equal to scikit-learn's predict_proba / predict on rows
-- with NULLs, unknown categories, accented and non-ASCII text and numbers
-- at split thresholds (test/fixtures/pipelines/gen_pipelines.py).
\getenv abs_srcdir PG_ABS_SRCDIR
\set pl :abs_srcdir '/fixtures/pipelines/'

CREATE TABLE pe_rows (id integer, age float8, income numeric, city text, plan integer, review text);
CREATE FUNCTION pe_add_rows(csv text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
BEGIN
	INSERT INTO pe_rows
	SELECT NULLIF(a[1], '')::integer, NULLIF(a[2], '')::float8, NULLIF(a[3], '')::numeric,
		   NULLIF(a[4], ''), NULLIF(a[5], '')::integer, NULLIF(a[6], '')
	FROM unnest((regexp_split_to_array(rtrim(csv, E'\n'), E'\n'))[2:]) AS l(line),
		 LATERAL string_to_array(l.line, ',') AS a;
	GET DIAGNOSTICS n = ROW_COUNT;
	RETURN n;
END $$;
\set csv `cat :pl/rows.csv`
SELECT pe_add_rows(:'csv') AS rows;
\set csv `cat :pl/rows_extra.csv`
SELECT pe_add_rows(:'csv') AS extra_rows;
SELECT count(*) FILTER (WHERE review ~ '[^[:ascii:]]') AS non_ascii_reviews,
	   count(*) FILTER (WHERE age IS NULL) AS null_age,
	   count(*) FILTER (WHERE plan = 9) AS unseen_plan
FROM pe_rows;

CREATE FUNCTION pe_load(n text, m text, exp text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM hb_model_upload(n, m);
	PERFORM hbt_load(n || '_exp', exp);
	RETURN n;
END $$;
\set m `cat :pl/ovr_charwb.json`
\set e `cat :pl/ovr_charwb.expected.csv`
SELECT pe_load('ovr_charwb', :'m', :'e');
\set m `cat :pl/liblinear_ascii.json`
\set e `cat :pl/liblinear_ascii.expected.csv`
SELECT pe_load('liblinear_ascii', :'m', :'e');
\set m `cat :pl/ridge_hash_wb.json`
\set e `cat :pl/ridge_hash_wb.expected.csv`
SELECT pe_load('ridge_hash_wb', :'m', :'e');
\set m `cat :pl/hgb_binary.json`
\set e `cat :pl/hgb_binary.expected.csv`
SELECT pe_load('hgb_binary', :'m', :'e');
\set m `cat :pl/hgb_multiclass.json`
\set e `cat :pl/hgb_multiclass.expected.csv`
SELECT pe_load('hgb_multiclass', :'m', :'e');
\set m `cat :pl/hgb_poisson.json`
\set e `cat :pl/hgb_poisson.expected.csv`
SELECT pe_load('hgb_poisson', :'m', :'e');
SELECT name, format, task, n_features FROM hb_models
WHERE name IN ('ovr_charwb', 'liblinear_ascii', 'ridge_hash_wb', 'hgb_binary',
			   'hgb_multiclass', 'hgb_poisson') ORDER BY name;

-- row by row: probabilities / predictions equal scikit-learn's
CREATE FUNCTION pe_check_proba(model text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	bad bigint;
	n bigint;
BEGIN
	EXECUTE format($q$
		SELECT count(*) FILTER (WHERE NOT ok), count(*) FROM (
		  SELECT bool_and(hbt_close(p.v, (to_jsonb(e) ->> ('p' || (p.k - 1)))::float8)) AS ok
		  FROM pe_rows r
		  JOIN %I e ON e.id = r.id,
		  LATERAL unnest(hb_predict_proba(%L, r)) WITH ORDINALITY AS p(v, k)
		  GROUP BY r.id) s$q$, model || '_exp', model) INTO bad, n;
	RETURN format('%s rows, %s differ', n, bad);
END $$;
CREATE FUNCTION pe_check_pred(model text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	bad bigint;
	n bigint;
BEGIN
	EXECUTE format($q$
		SELECT count(*) FILTER (WHERE NOT hbt_close(hb_predict(%L, r), e.pred)), count(*)
		FROM pe_rows r JOIN %I e ON e.id = r.id$q$, model, model || '_exp') INTO bad, n;
	RETURN format('%s rows, %s differ', n, bad);
END $$;
SELECT m, pe_check_proba(m)
FROM unnest(ARRAY['ovr_charwb', 'liblinear_ascii', 'hgb_binary', 'hgb_multiclass']) AS m;
SELECT m, pe_check_pred(m) FROM unnest(ARRAY['ridge_hash_wb', 'hgb_poisson']) AS m;
-- multiclass hb_predict_class: scikit-learn's most probable class
SELECT 'ovr_charwb' AS m, count(*) FILTER (WHERE hb_predict_class('ovr_charwb', r) <>
		  CASE WHEN e.p0 >= e.p1 AND e.p0 >= e.p2 THEN 0 WHEN e.p1 >= e.p2 THEN 1 ELSE 2 END) AS class_differ
FROM pe_rows r JOIN ovr_charwb_exp e USING (id)
UNION ALL
SELECT 'hgb_multiclass', count(*) FILTER (WHERE hb_predict_class('hgb_multiclass', r) <>
		  CASE WHEN e.p0 >= e.p1 AND e.p0 >= e.p2 THEN 0 WHEN e.p1 >= e.p2 THEN 1 ELSE 2 END)
FROM pe_rows r JOIN hgb_multiclass_exp e USING (id);

-- the batch function and top-K featurize and score the same way
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(b.score, e.pred)) AS bad
FROM hb_predict_batch('hgb_poisson', NULL::pe_rows, 'SELECT * FROM pe_rows ORDER BY id') b
JOIN hgb_poisson_exp e ON e.id = (b.item).id;
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(b.score, e.pred)) AS bad
FROM hb_predict_batch('ridge_hash_wb', NULL::pe_rows) b
JOIN ridge_hash_wb_exp e ON e.id = (b.item).id;
SELECT (SELECT string_agg((item).id::text, ',' ORDER BY rank)
		FROM hb_topk('hgb_binary', 5, NULL::pe_rows, 'SELECT * FROM pe_rows ORDER BY id')) =
	   (SELECT string_agg(id::text, ',' ORDER BY s DESC, id)
		FROM (SELECT id, hb_predict('hgb_binary', r) AS s FROM pe_rows r ORDER BY s DESC, id LIMIT 5) q)
	   AS topk_same;

-- bad native-tree fields: 22023 naming them
SELECT hbt_try($$SELECT hb_model_upload('pe_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a"}], "features": ["a"], "model": {"kind": "trees", "comparison": "le", "trees": [{"feature": [0, 0, 0], "threshold": [1, 0, 0], "left": [1, -1, -1], "right": [2, -1, -1], "value": [0, 1, 2], "missing_left": [1, 0]}]}}')$$);
SELECT hbt_try($$SELECT hb_model_upload('pe_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a"}], "features": ["a"], "model": {"kind": "trees", "comparison": "le", "trees": [{"feature": [0, 0, 0], "threshold": [1, 0, 0], "left": [1, -1, -1], "right": [2, -1, -1], "value": [0, 1, 2], "cat_sets": [[[1, -2], [3]], null, null]}]}}')$$);
SELECT hbt_try($$SELECT hb_model_upload('pe_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "t", "type": "text"}], "steps": [{"op": "hashing_vectorizer", "name": "h", "input": "t", "n_features": 4, "strip_accents": "latin"}], "features": ["h"], "model": {"kind": "linear", "coef": [[1, 1, 1, 1]]}}')$$);
SELECT hbt_try($$SELECT hb_model_upload('pe_bad', '{"format": "hbird-pipeline", "version": 1, "inputs": [{"name": "a"}], "features": ["a"], "model": {"kind": "linear", "link": "ovo", "coef": [[1]]}}')$$);
