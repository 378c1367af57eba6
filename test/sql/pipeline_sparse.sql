-- Linear models over text features score from each document's non-zero
-- columns (featurize_sparse.c) in every form over rows: hb_predict,
-- hb_predict_proba, hb_predict_margin, hb_predict_class, their aggregates
-- and batched functions, row at a time and in the batching scan.
-- hbird.sparse_linear = off builds the dense feature vector instead.  Both
-- must agree with each other and with scikit-learn (test/fixtures/pipelines).
\getenv abs_srcdir PG_ABS_SRCDIR
\set pl :abs_srcdir '/fixtures/pipelines/'

CREATE TABLE sp_rows (id integer, age float8, income numeric, city text, plan integer, review text);
-- rows.csv, then rows_extra.csv (accented and non-ASCII text) without its header
\set csv `cat :pl/rows.csv; tail -n +2 :pl/rows_extra.csv`
INSERT INTO sp_rows
SELECT NULLIF(a[1], '')::integer, NULLIF(a[2], '')::float8, NULLIF(a[3], '')::numeric,
	   NULLIF(a[4], ''), NULLIF(a[5], '')::integer, NULLIF(a[6], '')
FROM unnest((regexp_split_to_array(rtrim(:'csv', E'\n'), E'\n'))[2:]) AS l(line),
	 LATERAL string_to_array(l.line, ',') AS a;

\set m `cat :pl/logreg_tfidf.json`
\set e `cat :pl/logreg_tfidf.expected.csv`
SELECT hb_model_upload('sp_logreg', :'m') AS version, hbt_load('sp_logreg_exp', :'e') AS expected;
\set m `cat :pl/svc_words.json`
\set e `cat :pl/svc_words.expected.csv`
SELECT hb_model_upload('sp_svc', :'m') AS version, hbt_load('sp_svc_exp', :'e') AS expected;
\set m `cat :pl/ridge_char.json`
\set e `cat :pl/ridge_char.expected.csv`
SELECT hb_model_upload('sp_ridge', :'m') AS version, hbt_load('sp_ridge_exp', :'e') AS expected;
SELECT (:'m'::jsonb #>> '{model,intercept,0}')::float8 AS ridge_intercept \gset

-- row by row: probabilities, margins (the logit of scikit-learn's p1) and
-- predictions against scikit-learn
SELECT count(*) AS n,
	   count(*) FILTER (WHERE NOT hbt_close((hb_predict_proba('sp_logreg', r))[2], e.p1)) AS proba_bad,
	   count(*) FILTER (WHERE NOT hbt_close(1 / (1 + exp(-(hb_predict_margin('sp_logreg', r))[1])), e.p1)) AS margin_bad
FROM sp_rows r JOIN sp_logreg_exp e USING (id);
SELECT count(*) AS n, count(*) FILTER (WHERE hb_predict('sp_svc', r) <> e.pred) AS svc_bad
FROM sp_rows r JOIN sp_svc_exp e USING (id);
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(hb_predict('sp_ridge', r), e.pred)) AS ridge_bad
FROM sp_rows r JOIN sp_ridge_exp e USING (id);

-- classes from the margins against scikit-learn (the SVC's labels, the
-- logistic regression's p1 > 0.5), row at a time and in the batching scan
-- (target list, WHERE); the multiclass margins' first maximum is the class
CREATE FUNCTION sp_class_bad() RETURNS TABLE (n bigint, svc_bad bigint, logreg_bad bigint, where_svc bigint)
LANGUAGE sql AS $$
	SELECT (SELECT count(*) FROM sp_rows),
		   (SELECT count(*) FILTER (WHERE hb_predict_class('sp_svc', r) <> e.pred)
			FROM sp_rows r JOIN sp_svc_exp e USING (id)),
		   (SELECT count(*) FILTER (WHERE hb_predict_class('sp_logreg', r) <> (e.p1 > 0.5)::int)
			FROM sp_rows r JOIN sp_logreg_exp e USING (id)),
		   (SELECT count(*) FROM sp_rows r JOIN sp_svc_exp e USING (id)
			WHERE hb_predict_class('sp_svc', r) = e.pred::int)
$$;
SET hbird.batch_scan = off;
SELECT * FROM sp_class_bad();
RESET hbird.batch_scan;
SELECT * FROM sp_class_bad();
SELECT count(*) FILTER (WHERE (SELECT k - 1 FROM unnest(hb_predict_margin('sp_svc', r)) WITH ORDINALITY AS u(v, k)
							   ORDER BY v DESC, k LIMIT 1) <> hb_predict_class('sp_svc', r)) AS argmax_differ
FROM sp_rows r;
-- the scan says how it binds: the margins of the text, or feature vectors
-- where hbird.sparse_linear is off
EXPLAIN (COSTS OFF) SELECT hb_predict_class('sp_svc', r) FROM sp_rows r;
SET hbird.sparse_linear = off;
EXPLAIN (COSTS OFF) SELECT hb_predict_class('sp_svc', r) FROM sp_rows r;
RESET hbird.sparse_linear;
-- and hb_compile lists the sparse scorer's ops: the other features' dot,
-- a weight table per text step (its cost depends on the documents), the link
SELECT step, op, strategy, input_shape, output_shape, param_bytes, est_flops IS NULL AS per_document
FROM hb_compile('sp_logreg', 100);
SET hbird.sparse_linear = off;
SELECT step, op, strategy, input_shape, output_shape FROM hb_compile('sp_logreg', 100);
RESET hbird.sparse_linear;

-- every form with the sparse scorer on and off: the same classes, values
-- within rounding (the dense path sums the same terms in column order).
-- sp_forms(t) makes t (the batching scan), t_row (row at a time) and t_agg
-- (the aggregates and batched functions, in id order).
CREATE FUNCTION sp_forms(t text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	q text := 'SELECT id, hb_predict_class(''sp_svc'', r) AS svc_cls, hb_predict(''sp_svc'', r) AS svc_pred,
				  hb_predict_class(''sp_logreg'', r) AS lg_cls, (hb_predict_proba(''sp_logreg'', r))[2] AS lg_p1
			   FROM sp_rows r';
BEGIN
	EXECUTE format('CREATE TEMP TABLE %I AS %s', t, q);
	PERFORM set_config('hbird.batch_scan', 'off', true);
	EXECUTE format('CREATE TEMP TABLE %I AS %s', t || '_row', q);
	PERFORM set_config('hbird.batch_scan', 'on', true);
	EXECUTE format($q$CREATE TEMP TABLE %I AS
		SELECT (SELECT hb_predict_class_agg('sp_svc', r ORDER BY id) FROM sp_rows r) AS svc,
			   (SELECT hb_predict_class_agg('sp_logreg', r ORDER BY id) FROM sp_rows r) AS lg,
			   (SELECT array_agg(class ORDER BY (item).id) FROM hb_predict_class_batch('sp_svc', NULL::sp_rows)) AS svc_batch,
			   (SELECT array_agg(class ORDER BY (item).id) FROM hb_predict_class_batch('sp_logreg', NULL::sp_rows)) AS lg_batch,
			   (SELECT hb_predict_agg('sp_logreg', r ORDER BY id) FROM sp_rows r) AS lg_p1$q$, t || '_agg');
END $$;
SELECT sp_forms('sp_on');
SET hbird.sparse_linear = off;
SELECT sp_forms('sp_off');
SELECT * FROM sp_class_bad();
RESET hbird.sparse_linear;
SELECT count(*) AS n,
	   count(*) FILTER (WHERE a.svc_cls <> b.svc_cls OR a.svc_cls <> ar.svc_cls OR a.svc_cls <> br.svc_cls
						OR a.svc_pred <> b.svc_pred OR a.svc_pred <> ar.svc_pred) AS svc_differ,
	   count(*) FILTER (WHERE a.lg_cls <> b.lg_cls OR a.lg_cls <> ar.lg_cls OR a.lg_cls <> br.lg_cls) AS logreg_differ,
	   count(*) FILTER (WHERE NOT hbt_close(a.lg_p1, b.lg_p1) OR NOT hbt_close(a.lg_p1, ar.lg_p1)
						OR NOT hbt_close(a.lg_p1, br.lg_p1)) AS p1_differ,
	   count(*) FILTER (WHERE a.lg_cls <> (a.lg_p1 > 0.5)::int) AS cls_not_p1
FROM sp_on a JOIN sp_off b USING (id) JOIN sp_on_row ar USING (id) JOIN sp_off_row br USING (id);
SELECT a.svc = b.svc AS svc_agg_same, a.lg = b.lg AS logreg_agg_same,
	   a.svc_batch = a.svc AND a.lg_batch = a.lg AS batch_is_agg,
	   a.svc_batch = b.svc_batch AND a.lg_batch = b.lg_batch AS batch_same,
	   a.svc = (SELECT array_agg(pred::int ORDER BY id) FROM sp_svc_exp WHERE id IN (SELECT id FROM sp_rows)) AS svc_sklearn,
	   a.lg = (SELECT array_agg((e.p1 > 0.5)::int ORDER BY id) FROM sp_logreg_exp e WHERE id IN (SELECT id FROM sp_rows)) AS logreg_sklearn,
	   (SELECT bool_and(x = (y > 0.5)::int) FROM unnest(a.lg, a.lg_p1) AS u(x, y)) AS logreg_agg_p1,
	   cardinality(a.svc) AS n
FROM sp_on_agg a, sp_off_agg b;
-- a NULL row keeps its place in the class aggregate, with no class
SELECT cardinality(c) AS n, c[2] IS NULL AS null_row_is_null,
	   c[1] = (SELECT pred FROM sp_svc_exp WHERE id = 0) AND c[3] = (SELECT pred FROM sp_svc_exp WHERE id = 1) AS others
FROM (SELECT hb_predict_class_agg('sp_svc', r ORDER BY o) AS c
	  FROM (SELECT 1 AS o, s AS r FROM sp_rows s WHERE id = 0
			UNION ALL SELECT 2, NULL::sp_rows
			UNION ALL SELECT 3, s FROM sp_rows s WHERE id = 1) q) a;

-- the aggregate: scikit-learn's values in input order; a NULL row takes its
-- place with the intercept alone (every feature missing)
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(a.v, e.pred)) AS bad
FROM unnest((SELECT hb_predict_agg('sp_ridge', r ORDER BY id) FROM sp_rows r)) WITH ORDINALITY AS a(v, k)
JOIN (SELECT row_number() OVER (ORDER BY id) AS k, id FROM sp_rows) rr USING (k)
JOIN sp_ridge_exp e USING (id);
SELECT cardinality(p) AS n, p[2] IS NULL AS null_row_is_null,
	   hbt_close(p[1], (SELECT pred FROM sp_ridge_exp WHERE id = 0)) AS first_row,
	   hbt_close(p[3], (SELECT pred FROM sp_ridge_exp WHERE id = 1)) AS third_row
FROM (SELECT hb_predict_agg('sp_ridge', r ORDER BY o) AS p
	  FROM (SELECT 1 AS o, s AS r FROM sp_rows s WHERE id = 0
			UNION ALL SELECT 2, NULL::sp_rows
			UNION ALL SELECT 3, s FROM sp_rows s WHERE id = 1) q) a;
-- the class aggregate agrees with the aggregate of hb_predict
SELECT (SELECT hb_predict_agg('sp_svc', r ORDER BY id) FROM sp_rows r)::int[] =
	   (SELECT hb_predict_class_agg('sp_svc', r ORDER BY id) FROM sp_rows r) AS svc_agg_same;
-- aggregates over groups
SELECT count(*) AS groups, sum(cardinality(p)) AS rows,
	   bool_and(cardinality(p) = n) AS sizes_right
FROM (SELECT plan, hb_predict_agg('sp_logreg', r) AS p, count(*) AS n FROM sp_rows r GROUP BY plan) g;

-- the batch function
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(b.score, e.p1)) AS bad
FROM hb_predict_batch('sp_logreg', NULL::sp_rows) b
JOIN sp_logreg_exp e ON e.id = (b.item).id;
SELECT count(*) AS n, count(*) FILTER (WHERE b.score <> e.pred) AS bad
FROM hb_predict_batch('sp_svc', NULL::sp_rows, 'SELECT * FROM sp_rows ORDER BY id') b
JOIN sp_svc_exp e ON e.id = (b.item).id;
SELECT count(*) AS n, count(*) FILTER (WHERE NOT hbt_close(b.score, e.pred)) AS bad
FROM hb_predict_batch('sp_ridge', NULL::sp_rows) b
JOIN sp_ridge_exp e ON e.id = (b.item).id;

-- a text input bound from varchar / char(n) columns, in another order
CREATE TABLE sp_typed AS
SELECT review::varchar(200) AS "Review", plan, city::char(12) AS city, income, age, id FROM sp_rows;
SELECT count(*) FILTER (WHERE NOT hbt_close(hb_predict('sp_logreg', t), e.p1)) AS bad, count(*) AS n
FROM sp_typed t JOIN sp_logreg_exp e USING (id);

-- leave the catalog as the other suites expect it
SELECT count(hb_model_drop(m)) AS dropped FROM unnest(ARRAY['sp_logreg', 'sp_svc', 'sp_ridge']) AS m;
DROP TABLE sp_rows, sp_typed, sp_logreg_exp, sp_svc_exp, sp_ridge_exp;
DROP FUNCTION sp_class_bad(), sp_forms(text);
DROP TABLE sp_on, sp_on_row, sp_on_agg, sp_off, sp_off_row, sp_off_agg;
