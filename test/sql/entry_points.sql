-- Every SQL entry point of hbird x bad arguments: one row per case with the
-- SQLSTATE and message it gets ("ok: ..." with a small, stable value when
-- the input is accepted).  The output is the table of docs/reliability.md.
-- Models come from setup: binary_logistic (6 features: amount, age,
-- balance, n_tx, risk, tenure), multi_softprob (3 classes), rank_pairwise.
-- The statistics functions need hbird in shared_preload_libraries (how CI
-- runs); test/expected/entry_points_1.out is the output without it (55000).
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set reg `cat :fixtures/reg_squarederror.json`

-- Run a statement; 'ok: ' and its first column, or SQLSTATE: message.
-- Whatever a case that succeeds wrote is rolled back (the HB000 exception
-- undoes the block's subtransaction), so cases cannot affect each other.
CREATE FUNCTION ep_try(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	EXECUTE stmt INTO r;
	RAISE SQLSTATE 'HB000';
EXCEPTION WHEN OTHERS THEN
	IF SQLSTATE = 'HB000' THEN
		RETURN 'ok: ' || coalesce(r, 'NULL');
	END IF;
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE TABLE ep_rows AS SELECT * FROM binary_logistic_in WHERE id <= 5;
CREATE TABLE ep_wrong (id integer, amount text, age float8);
INSERT INTO ep_wrong VALUES (1, 'x', 1);
CREATE TABLE ep_short (id integer, amount float8, age float8);
INSERT INTO ep_short VALUES (1, 1, 1);
CREATE TABLE ep_empty (LIKE ep_rows);
CREATE TABLE ep_huge AS SELECT array_fill(1.0::float8, ARRAY[1000000]) AS a;
CREATE TEMP TABLE catalog_before AS
SELECT (SELECT count(*) FROM hbird.model) AS models,
	   (SELECT count(*) FROM hbird.model_version) AS versions,
	   (SELECT count(*) FROM hbird.model_grant) AS grants,
	   (SELECT count(*) FROM hbird.tuning) AS tunings;

\set x6 'ARRAY[1, 2, 3, 4, 5, 6]'
CREATE TEMP TABLE ep_case (n serial, entry text, bad text, stmt text);
INSERT INTO ep_case (entry, bad, stmt) VALUES
-- hb_model_upload(text, text, text, text[]) and (text, bytea, ...)
('hb_model_upload', 'NULL name', $$SELECT hb_model_upload(NULL, '{}')$$),
('hb_model_upload', 'empty name', $$SELECT hb_model_upload('', '{}')$$),
('hb_model_upload', '201-byte name', format('SELECT hb_model_upload(%L, %L)', repeat('x', 201), '{}')),
('hb_model_upload', 'NULL text body', $$SELECT hb_model_upload('ep', NULL::text)$$),
('hb_model_upload', 'NULL bytea body', $$SELECT hb_model_upload('ep', NULL::bytea)$$),
('hb_model_upload', 'empty text body', $$SELECT hb_model_upload('ep', ''::text)$$),
('hb_model_upload', 'empty bytea body', $$SELECT hb_model_upload('ep', ''::bytea)$$),
('hb_model_upload', 'over hbird.max_model_bytes', format('SELECT hb_model_upload(%L, %L::text) FROM (SELECT set_config(%L, %L, true)) s', 'ep', :'reg', 'hbird.max_model_bytes', '1024')),
('hb_model_upload', 'binary garbage', $$SELECT hb_model_upload('ep', '\xdeadbeef'::bytea)$$),
('hb_model_upload', 'NULL format', format('SELECT hb_model_upload(%L, %L::text, NULL)', 'ep', :'reg')),
('hb_model_upload', 'empty format', format('SELECT hb_model_upload(%L, %L::text, %L)', 'ep', :'reg', '')),
('hb_model_upload', 'unknown format', format('SELECT hb_model_upload(%L, %L::text, %L)', 'ep', :'reg', 'pmml')),
('hb_model_upload', 'wrong format', format('SELECT hb_model_upload(%L, %L::text, %L)', 'ep', :'reg', 'lightgbm')),
('hb_model_upload', 'empty features', format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'ep', :'reg', 'auto', '{}')),
('hb_model_upload', 'too few features', format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'ep', :'reg', 'auto', '{a,b}')),
('hb_model_upload', 'NULL feature', format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'ep', :'reg', 'auto', '{a,b,c,d,e,f,g,NULL}')),
('hb_model_upload', 'empty feature', format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'ep', :'reg', 'auto', '{a,b,c,d,e,f,g,""}')),
('hb_model_upload', 'duplicate features', format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'ep', :'reg', 'auto', '{a,b,c,d,e,f,g,a}')),
('hb_model_upload', '100,000 features', format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'ep', :'reg', 'auto', (SELECT array_agg('f' || i) FROM generate_series(1, 100000) i))),
('hb_model_upload', '2-D features', format('SELECT hb_model_upload(%L, %L::text, %L, %L)', 'ep', :'reg', 'auto', '{{a,b,c,d},{e,f,g,h}}')),
-- hb_model_activate(text, integer)
('hb_model_activate', 'NULL name', $$SELECT hb_model_activate(NULL, 1)$$),
('hb_model_activate', 'empty name', $$SELECT hb_model_activate('', 1)$$),
('hb_model_activate', 'unknown model', $$SELECT hb_model_activate('nosuch', 1)$$),
('hb_model_activate', 'NULL version', $$SELECT hb_model_activate('binary_logistic', NULL)$$),
('hb_model_activate', 'version 0', $$SELECT hb_model_activate('binary_logistic', 0)$$),
('hb_model_activate', 'version -1', $$SELECT hb_model_activate('binary_logistic', -1)$$),
('hb_model_activate', 'unknown version', $$SELECT hb_model_activate('binary_logistic', 99)$$),
-- hb_model_drop(text), hb_model_drop(text, integer)
('hb_model_drop', 'NULL name', $$SELECT hb_model_drop(NULL)$$),
('hb_model_drop', 'empty name', $$SELECT hb_model_drop('')$$),
('hb_model_drop', 'unknown model', $$SELECT hb_model_drop('nosuch')$$),
('hb_model_drop(v)', 'NULL name', $$SELECT hb_model_drop(NULL, 1)$$),
('hb_model_drop(v)', 'unknown model', $$SELECT hb_model_drop('nosuch', 1)$$),
('hb_model_drop(v)', 'NULL version', $$SELECT hb_model_drop('binary_logistic', NULL)$$),
('hb_model_drop(v)', 'version 0', $$SELECT hb_model_drop('binary_logistic', 0)$$),
('hb_model_drop(v)', 'version -1', $$SELECT hb_model_drop('binary_logistic', -1)$$),
('hb_model_drop(v)', 'unknown version', $$SELECT hb_model_drop('binary_logistic', 99)$$),
-- hb_model_grant(text, name), hb_model_revoke(text, name)
('hb_model_grant', 'NULL name', $$SELECT hb_model_grant(NULL, 'public')$$),
('hb_model_grant', 'unknown model', $$SELECT hb_model_grant('nosuch', 'public')$$),
('hb_model_grant', 'NULL role', $$SELECT hb_model_grant('binary_logistic', NULL)$$),
('hb_model_grant', 'empty role', $$SELECT hb_model_grant('binary_logistic', '')$$),
('hb_model_grant', 'unknown role', $$SELECT hb_model_grant('binary_logistic', 'no_such_role')$$),
('hb_model_revoke', 'NULL name', $$SELECT hb_model_revoke(NULL, 'public')$$),
('hb_model_revoke', 'unknown model', $$SELECT hb_model_revoke('nosuch', 'public')$$),
('hb_model_revoke', 'NULL role', $$SELECT hb_model_revoke('binary_logistic', NULL)$$),
('hb_model_revoke', 'unknown role', $$SELECT hb_model_revoke('binary_logistic', 'no_such_role')$$),
('hb_model_revoke', 'role not granted', $$SELECT hb_model_revoke('binary_logistic', 'public')$$),
-- hb_predict / hb_predict_proba / hb_predict_margin (name, record)
('hb_predict(record)', 'NULL name', $$SELECT hb_predict(NULL, r) FROM ep_rows r LIMIT 1$$),
('hb_predict(record)', 'empty name', $$SELECT hb_predict('', r) FROM ep_rows r LIMIT 1$$),
('hb_predict(record)', 'unknown model', $$SELECT hb_predict('nosuch', r) FROM ep_rows r LIMIT 1$$),
('hb_predict(record)', 'NULL row', $$SELECT hb_predict('binary_logistic', NULL::ep_rows) IS NOT NULL$$),
('hb_predict(record)', 'all-NULL row', $$SELECT hb_predict('binary_logistic', ROW(NULL, NULL, NULL, NULL, NULL, NULL, NULL)::ep_rows) IS NOT NULL$$),
('hb_predict(record)', 'missing columns', $$SELECT hb_predict('binary_logistic', r) FROM ep_short r$$),
('hb_predict(record)', 'text column', $$SELECT hb_predict('binary_logistic', r) FROM ep_wrong r$$),
('hb_predict(record)', 'anonymous row', $$SELECT hb_predict('binary_logistic', ROW(1, 2, 3, 4, 5, 6))$$),
('hb_predict(record)', 'scalar', $$SELECT hb_predict('binary_logistic', 1)$$),
('hb_predict(record)', 'NaN/Infinity columns', $$SELECT hb_predict('binary_logistic', ROW(1, 'NaN', 'Infinity', '-Infinity', 'NaN', 0, 0)::ep_rows) BETWEEN 0 AND 1$$),
('hb_predict_proba(record)', 'unknown model', $$SELECT hb_predict_proba('nosuch', r) FROM ep_rows r LIMIT 1$$),
('hb_predict_proba(record)', 'regression model', $$SELECT hb_predict_proba('reg_squarederror', r) FROM reg_squarederror_in r LIMIT 1$$),
('hb_predict_proba(record)', 'ranking model', $$SELECT hb_predict_proba('rank_pairwise', r) FROM rank_pairwise_in r LIMIT 1$$),
('hb_predict_proba(record)', 'NULL row', $$SELECT array_length(hb_predict_proba('multi_softprob', NULL::multi_softprob_in), 1)$$),
('hb_predict_margin(record)', 'unknown model', $$SELECT hb_predict_margin('nosuch', r) FROM ep_rows r LIMIT 1$$),
('hb_predict_margin(record)', 'text column', $$SELECT hb_predict_margin('binary_logistic', r) FROM ep_wrong r$$),
('hb_predict_margin(record)', 'NULL row', $$SELECT array_length(hb_predict_margin('multi_softprob', NULL::multi_softprob_in), 1)$$),
-- the same, float8[] / real[]
('hb_predict(float8[])', 'NULL name', format('SELECT hb_predict(NULL, %s::float8[])', :'x6')),
('hb_predict(float8[])', 'unknown model', format('SELECT hb_predict(%L, %s::float8[])', 'nosuch', :'x6')),
('hb_predict(float8[])', 'NULL array', $$SELECT hb_predict('binary_logistic', NULL::float8[]) IS NULL$$),
('hb_predict(float8[])', 'empty array', $$SELECT hb_predict('binary_logistic', '{}'::float8[])$$),
('hb_predict(float8[])', 'too short', $$SELECT hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5]::float8[])$$),
('hb_predict(float8[])', 'too long', $$SELECT hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6, 7]::float8[])$$),
('hb_predict(float8[])', '2-D 2x3', $$SELECT hb_predict('binary_logistic', ARRAY[[1, 2, 3], [4, 5, 6]]::float8[])$$),
('hb_predict(float8[])', 'lower bound 0', $$SELECT hb_predict('binary_logistic', '[0:5]={1,2,3,4,5,6}'::float8[]) BETWEEN 0 AND 1$$),
('hb_predict(float8[])', 'NULL elements', $$SELECT hb_predict('binary_logistic', ARRAY[NULL, NULL, NULL, NULL, NULL, NULL]::float8[]) BETWEEN 0 AND 1$$),
('hb_predict(float8[])', 'NaN = missing', $$SELECT hb_predict('binary_logistic', ARRAY['NaN', 2, 3, 4, 5, 6]::float8[]) = hb_predict('binary_logistic', ARRAY[NULL, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict(float8[])', '+-Infinity', $$SELECT hb_predict('binary_logistic', ARRAY['Infinity', '-Infinity', 'Infinity', '-Infinity', 0, 0]::float8[]) BETWEEN 0 AND 1$$),
('hb_predict(float8[])', 'huge (1M elements)', $$SELECT hb_predict('binary_logistic', a) FROM ep_huge$$),
('hb_predict(real[])', 'too short', $$SELECT hb_predict('binary_logistic', ARRAY[1, 2]::real[])$$),
('hb_predict(real[])', '2-D 3x2', $$SELECT hb_predict('binary_logistic', ARRAY[[1, 2], [3, 4], [5, 6]]::real[])$$),
('hb_predict(real[])', 'NaN/Infinity', $$SELECT hb_predict('binary_logistic', ARRAY['NaN', 'Infinity', '-Infinity', 0, 0, 0]::real[]) BETWEEN 0 AND 1$$),
('hb_predict(int[])', 'integer array', format('SELECT hb_predict(%L, %s)', 'binary_logistic', :'x6')),
('hb_predict_proba(float8[])', 'regression model', $$SELECT hb_predict_proba('reg_squarederror', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$),
('hb_predict_proba(float8[])', 'too long', $$SELECT hb_predict_proba('multi_softprob', ARRAY[1, 2, 3, 4, 5, 6, 7]::float8[])$$),
('hb_predict_proba(real[])', 'NULL array', $$SELECT hb_predict_proba('multi_softprob', NULL::real[]) IS NULL$$),
('hb_predict_margin(float8[])', 'empty array', $$SELECT hb_predict_margin('multi_softprob', '{}'::float8[])$$),
('hb_predict_margin(real[])', 'huge (1M elements)', $$SELECT hb_predict_margin('multi_softprob', a::real[]) FROM ep_huge$$),
-- hb_predict_agg(name, record)
('hb_predict_agg', 'NULL name', $$SELECT hb_predict_agg(NULL, r) FROM ep_rows r$$),
('hb_predict_agg', 'unknown model', $$SELECT hb_predict_agg('nosuch', r) FROM ep_rows r$$),
('hb_predict_agg', 'no rows', $$SELECT hb_predict_agg('binary_logistic', r) IS NULL FROM ep_empty r$$),
('hb_predict_agg', 'NULL rows', $$SELECT array_length(hb_predict_agg('binary_logistic', NULL::ep_rows), 1) FROM ep_rows$$),
('hb_predict_agg', 'text column', $$SELECT hb_predict_agg('binary_logistic', r) FROM ep_wrong r$$),
('hb_predict_agg', 'NaN/Infinity columns', $$SELECT array_length(hb_predict_agg('binary_logistic', ROW(id, 'NaN', 'Infinity', '-Infinity', 'NaN', 0, 0)::ep_rows), 1) FROM ep_rows$$),
('hb_predict_agg', 'two models in a group', $$SELECT hb_predict_agg(CASE WHEN id = 1 THEN 'binary_logistic' ELSE 'binary_logitraw' END, r ORDER BY id) FROM ep_rows r$$),
('hb_predict_agg_sfunc', 'called directly (no internal value in SQL)', $$SELECT hb_predict_agg_sfunc(NULL::internal, 'binary_logistic'::text, r) FROM ep_rows r LIMIT 1$$),
('hb_predict_agg_final', 'called directly (no internal value in SQL)', $$SELECT hb_predict_agg_final(NULL::internal) IS NULL$$),
-- hb_predict_batch(name, rowtype, query)
('hb_predict_batch', 'NULL name', $$SELECT count(*) FROM hb_predict_batch(NULL, NULL::ep_rows)$$),
('hb_predict_batch', 'unknown model', $$SELECT count(*) FROM hb_predict_batch('nosuch', NULL::ep_rows)$$),
('hb_predict_batch', 'record rowtype', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::record)$$),
('hb_predict_batch', 'scalar rowtype', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::integer, 'SELECT 1')$$),
('hb_predict_batch', 'wrong columns', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_wrong)$$),
('hb_predict_batch', 'empty query', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, '')$$),
('hb_predict_batch', 'syntax error', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, 'SELEC')$$),
('hb_predict_batch', 'two statements', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, 'SELECT * FROM ep_rows; SELECT * FROM ep_rows')$$),
('hb_predict_batch', 'DML query', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, 'DELETE FROM ep_rows RETURNING *')$$),
('hb_predict_batch', 'utility query', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, 'VACUUM ep_rows')$$),
('hb_predict_batch', 'query of other row type', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, 'SELECT * FROM ep_short')$$),
('hb_predict_batch', 'no rows', $$SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, 'SELECT * FROM ep_empty')$$),
('hb_predict_batch', 'NULL rows', $$SELECT count(score) FROM hb_predict_batch('binary_logistic', NULL::ep_rows, 'SELECT (NULL::ep_rows).* FROM ep_rows')$$),
-- hb_compile(name, batch_size)
('hb_compile', 'NULL name', $$SELECT count(*) FROM hb_compile(NULL)$$),
('hb_compile', 'unknown model', $$SELECT count(*) FROM hb_compile('nosuch')$$),
('hb_compile', 'batch_size 0', $$SELECT count(*) FROM hb_compile('binary_logistic', 0)$$),
('hb_compile', 'batch_size -1', $$SELECT count(*) FROM hb_compile('binary_logistic', -1)$$),
('hb_compile', 'batch_size 2^31-1', $$SELECT count(*) > 0 FROM hb_compile('binary_logistic', 2147483647)$$),
-- hb_topk(name, k, rowtype, query, mode)
('hb_topk', 'NULL name', $$SELECT count(*) FROM hb_topk(NULL, 3, NULL::ep_rows)$$),
('hb_topk', 'unknown model', $$SELECT count(*) FROM hb_topk('nosuch', 3, NULL::ep_rows)$$),
('hb_topk', 'NULL k', $$SELECT count(*) FROM hb_topk('binary_logistic', NULL, NULL::ep_rows)$$),
('hb_topk', 'k = 0', $$SELECT count(*) FROM hb_topk('binary_logistic', 0, NULL::ep_rows)$$),
('hb_topk', 'k = -1', $$SELECT count(*) FROM hb_topk('binary_logistic', -1, NULL::ep_rows)$$),
('hb_topk', 'k = 2^31-1', $$SELECT count(*) FROM hb_topk('binary_logistic', 2147483647, NULL::ep_rows)$$),
('hb_topk', 'multi-class model', $$SELECT count(*) FROM hb_topk('multi_softprob', 3, NULL::multi_softprob_in)$$),
('hb_topk', 'record rowtype', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::record)$$),
('hb_topk', 'wrong columns', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_wrong)$$),
('hb_topk', 'syntax error', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, 'SELEC')$$),
('hb_topk', 'DML query', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, 'DELETE FROM ep_rows RETURNING *')$$),
('hb_topk', 'query of other row type', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, 'SELECT * FROM ep_short')$$),
('hb_topk', 'no rows', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, 'SELECT * FROM ep_empty')$$),
('hb_topk', 'NULL rows', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, 'SELECT (NULL::ep_rows).* FROM ep_rows')$$),
('hb_topk', 'NULL mode', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, NULL, NULL)$$),
('hb_topk', 'empty mode', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, NULL, '')$$),
('hb_topk', 'unknown mode', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, NULL, 'fast')$$),
('hb_topk', 'approx, not tuned', $$SELECT count(*) FROM hb_topk('binary_logistic', 3, NULL::ep_rows, NULL, 'approx')$$),
-- hb_topk_agg(name, k, row)
('hb_topk_agg', 'NULL name', $$SELECT hb_topk_agg(NULL, 3, r) FROM ep_rows r$$),
('hb_topk_agg', 'unknown model', $$SELECT hb_topk_agg('nosuch', 3, r) FROM ep_rows r$$),
('hb_topk_agg', 'NULL k', $$SELECT hb_topk_agg('binary_logistic', NULL, r) FROM ep_rows r$$),
('hb_topk_agg', 'k = 0', $$SELECT hb_topk_agg('binary_logistic', 0, r) FROM ep_rows r$$),
('hb_topk_agg', 'k = -1', $$SELECT hb_topk_agg('binary_logistic', -1, r) FROM ep_rows r$$),
('hb_topk_agg', 'k = 2^31-1', $$SELECT array_length(hb_topk_agg('binary_logistic', 2147483647, r), 1) FROM ep_rows r$$),
('hb_topk_agg', 'k changes in a group', $$SELECT hb_topk_agg('binary_logistic', id, r ORDER BY id) FROM ep_rows r$$),
('hb_topk_agg', 'k NULL after row 1', $$SELECT hb_topk_agg('binary_logistic', CASE WHEN id = 1 THEN 3 END, r ORDER BY id) FROM ep_rows r$$),
('hb_topk_agg', 'NaN/Infinity columns', $$SELECT array_length(hb_topk_agg('binary_logistic', 3, ROW(id, 'NaN', 'Infinity', '-Infinity', 'NaN', 0, 0)::ep_rows), 1) FROM ep_rows$$),
('hb_topk_agg', 'two models in a group', $$SELECT hb_topk_agg(CASE WHEN id = 1 THEN 'binary_logistic' ELSE 'binary_logitraw' END, 3, r ORDER BY id) FROM ep_rows r$$),
('hb_topk_agg', 'multi-class model', $$SELECT hb_topk_agg('multi_softprob', 3, r) FROM multi_softprob_in r$$),
('hb_topk_agg', 'record rows', $$SELECT hb_topk_agg('binary_logistic', 3, ROW(1, 2, 3, 4, 5, 6, 7))$$),
('hb_topk_agg', 'wrong columns', $$SELECT hb_topk_agg('binary_logistic', 3, r) FROM ep_wrong r$$),
('hb_topk_agg', 'no rows', $$SELECT hb_topk_agg('binary_logistic', 3, r) IS NULL FROM ep_empty r$$),
('hb_topk_agg', 'NULL rows', $$SELECT array_length(hb_topk_agg('binary_logistic', 3, NULL::ep_rows), 1) FROM ep_rows$$),
('hb_topk_agg_sfunc', 'called directly (no internal value in SQL)', $$SELECT hb_topk_agg_sfunc(NULL::internal, 'binary_logistic'::text, 3, r) FROM ep_rows r LIMIT 1$$),
('hb_topk_agg_final', 'called directly (no internal value in SQL)', $$SELECT hb_topk_agg_final(NULL::internal, 'binary_logistic'::text, 3, NULL::ep_rows) IS NULL$$),
-- no arguments
('hb_topk_stats', 'no top-K yet in a new backend', $$SELECT rows >= 0 FROM hb_topk_stats()$$),
-- 0.2.0: hb_predict_class(name, record | float8[] | real[])
('hb_predict_class(record)', 'NULL name', $$SELECT hb_predict_class(NULL, r) FROM ep_rows r LIMIT 1$$),
('hb_predict_class(record)', 'empty name', $$SELECT hb_predict_class('', r) FROM ep_rows r LIMIT 1$$),
('hb_predict_class(record)', 'unknown model', $$SELECT hb_predict_class('nosuch', r) FROM ep_rows r LIMIT 1$$),
('hb_predict_class(record)', 'NULL row', $$SELECT hb_predict_class('binary_logistic', NULL::ep_rows) IS NULL$$),
('hb_predict_class(record)', 'regression model', $$SELECT hb_predict_class('reg_squarederror', r) FROM reg_squarederror_in r LIMIT 1$$),
('hb_predict_class(record)', 'ranking model', $$SELECT hb_predict_class('rank_pairwise', r) FROM rank_pairwise_in r LIMIT 1$$),
('hb_predict_class(record)', 'missing columns', $$SELECT hb_predict_class('binary_logistic', r) FROM ep_short r$$),
('hb_predict_class(record)', 'text column', $$SELECT hb_predict_class('binary_logistic', r) FROM ep_wrong r$$),
('hb_predict_class(record)', 'anonymous row', $$SELECT hb_predict_class('binary_logistic', ROW(1, 2, 3, 4, 5, 6))$$),
('hb_predict_class(record)', 'NaN/Infinity columns', $$SELECT hb_predict_class('binary_logistic', ROW(1, 'NaN', 'Infinity', '-Infinity', 'NaN', 0, 0)::ep_rows) IN (0, 1)$$),
('hb_predict_class(float8[])', 'NULL name', format('SELECT hb_predict_class(NULL, %s::float8[])', :'x6')),
('hb_predict_class(float8[])', 'unknown model', format('SELECT hb_predict_class(%L, %s::float8[])', 'nosuch', :'x6')),
('hb_predict_class(float8[])', 'NULL array', $$SELECT hb_predict_class('binary_logistic', NULL::float8[]) IS NULL$$),
('hb_predict_class(float8[])', 'empty array', $$SELECT hb_predict_class('binary_logistic', '{}'::float8[])$$),
('hb_predict_class(float8[])', 'too short', $$SELECT hb_predict_class('multi_softprob', ARRAY[1, 2, 3, 4, 5]::float8[])$$),
('hb_predict_class(float8[])', '2-D 2x3', $$SELECT hb_predict_class('binary_logistic', ARRAY[[1, 2, 3], [4, 5, 6]]::float8[])$$),
('hb_predict_class(float8[])', 'regression model', $$SELECT hb_predict_class('reg_squarederror', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$),
('hb_predict_class(float8[])', 'NULL elements', $$SELECT hb_predict_class('multi_softprob', ARRAY[NULL, NULL, NULL, NULL, NULL, NULL]::float8[]) BETWEEN 0 AND 2$$),
('hb_predict_class(real[])', 'too long', $$SELECT hb_predict_class('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6, 7]::real[])$$),
('hb_predict_class(real[])', 'NULL array', $$SELECT hb_predict_class('multi_softprob', NULL::real[]) IS NULL$$),
('hb_predict_class(real[])', 'huge (1M elements)', $$SELECT hb_predict_class('binary_logistic', a::real[]) FROM ep_huge$$),
-- hb_predict_class_agg(name, record)
('hb_predict_class_agg', 'NULL name', $$SELECT hb_predict_class_agg(NULL, r) FROM ep_rows r$$),
('hb_predict_class_agg', 'unknown model', $$SELECT hb_predict_class_agg('nosuch', r) FROM ep_rows r$$),
('hb_predict_class_agg', 'no rows', $$SELECT hb_predict_class_agg('binary_logistic', r) IS NULL FROM ep_empty r$$),
('hb_predict_class_agg', 'NULL rows', $$SELECT array_length(hb_predict_class_agg('binary_logistic', NULL::ep_rows), 1) FROM ep_rows$$),
('hb_predict_class_agg', 'regression model', $$SELECT hb_predict_class_agg('reg_squarederror', r) FROM reg_squarederror_in r$$),
('hb_predict_class_agg', 'text column', $$SELECT hb_predict_class_agg('binary_logistic', r) FROM ep_wrong r$$),
('hb_predict_class_agg', 'two models in a group', $$SELECT hb_predict_class_agg(CASE WHEN id = 1 THEN 'binary_logistic' ELSE 'binary_logitraw' END, r ORDER BY id) FROM ep_rows r$$),
('hb_predict_class_agg_sfunc', 'called directly (no internal value in SQL)', $$SELECT hb_predict_class_agg_sfunc(NULL::internal, 'binary_logistic'::text, r) FROM ep_rows r LIMIT 1$$),
('hb_predict_class_agg_final', 'called directly (no internal value in SQL)', $$SELECT hb_predict_class_agg_final(NULL::internal) IS NULL$$),
-- hb_predict_class_batch(name, rowtype, query)
('hb_predict_class_batch', 'NULL name', $$SELECT count(*) FROM hb_predict_class_batch(NULL, NULL::ep_rows)$$),
('hb_predict_class_batch', 'unknown model', $$SELECT count(*) FROM hb_predict_class_batch('nosuch', NULL::ep_rows)$$),
('hb_predict_class_batch', 'regression model', $$SELECT count(*) FROM hb_predict_class_batch('reg_squarederror', NULL::reg_squarederror_in)$$),
('hb_predict_class_batch', 'record rowtype', $$SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::record)$$),
('hb_predict_class_batch', 'wrong columns', $$SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::ep_wrong)$$),
('hb_predict_class_batch', 'empty query', $$SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::ep_rows, '')$$),
('hb_predict_class_batch', 'syntax error', $$SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::ep_rows, 'SELEC')$$),
('hb_predict_class_batch', 'DML query', $$SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::ep_rows, 'DELETE FROM ep_rows RETURNING *')$$),
('hb_predict_class_batch', 'utility query', $$SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::ep_rows, 'VACUUM ep_rows')$$),
('hb_predict_class_batch', 'no rows', $$SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::ep_rows, 'SELECT * FROM ep_empty')$$),
('hb_predict_class_batch', 'NULL rows', $$SELECT count(class) FROM hb_predict_class_batch('binary_logistic', NULL::ep_rows, 'SELECT (NULL::ep_rows).* FROM ep_rows')$$),
('hb_class_stats', 'no class yet in a new backend', $$SELECT rows >= 0 FROM hb_class_stats()$$),
('hb_class_stats_reset', 'no arguments', $$SELECT hb_class_stats_reset()$$),
-- hb_tune(name, sample_query, kind, k, target, confidence, seed)
('hb_tune', 'NULL name', $$SELECT count(*) FROM hb_tune(NULL, 'SELECT * FROM ep_rows', 'topk', 3, 0.9)$$),
('hb_tune', 'empty name', $$SELECT count(*) FROM hb_tune('', 'SELECT * FROM ep_rows', 'topk', 3, 0.9)$$),
('hb_tune', 'unknown model', $$SELECT count(*) FROM hb_tune('nosuch', 'SELECT * FROM ep_rows', 'topk', 3, 0.9)$$),
('hb_tune', 'NULL sample query', $$SELECT count(*) FROM hb_tune('binary_logistic', NULL, 'topk', 3, 0.9)$$),
('hb_tune', 'empty sample query', $$SELECT count(*) FROM hb_tune('binary_logistic', '', 'topk', 3, 0.9)$$),
('hb_tune', 'syntax error', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELEC', 'topk', 3, 0.9)$$),
('hb_tune', 'two statements', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows; SELECT * FROM ep_rows', 'topk', 3, 0.9)$$),
('hb_tune', 'DML sample', $$SELECT count(*) FROM hb_tune('binary_logistic', 'DELETE FROM ep_rows RETURNING *', 'topk', 3, 0.9)$$),
('hb_tune', 'utility sample', $$SELECT count(*) FROM hb_tune('binary_logistic', 'VACUUM ep_rows', 'topk', 3, 0.9)$$),
('hb_tune', 'sample without the features', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_short', 'topk', 3, 0.9)$$),
('hb_tune', 'sample with a text feature', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_wrong', 'topk', 3, 0.9)$$),
('hb_tune', 'sample of no rows', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_empty', 'topk', 3, 0.9)$$),
('hb_tune', 'sample of 1 row (cascade)', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows WHERE id = 1', 'cascade', target => 0.01)$$),
('hb_tune', 'sample of 5 rows (top-3)', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 0.9)$$),
('hb_tune', 'NULL kind', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', NULL, 3, 0.9)$$),
('hb_tune', 'empty kind', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', '', 3, 0.9)$$),
('hb_tune', 'unknown kind', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'exact', 3, 0.9)$$),
('hb_tune', 'top-K, NULL k', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', NULL, 0.9)$$),
('hb_tune', 'top-K, k = 0', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 0, 0.9)$$),
('hb_tune', 'top-K, k = -1', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', -1, 0.9)$$),
('hb_tune', 'cascade with a k', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'cascade', 3, 0.01)$$),
('hb_tune', 'NULL target', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, NULL)$$),
('hb_tune', 'target 0', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 0)$$),
('hb_tune', 'target 1', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 1)$$),
('hb_tune', 'target -0.5', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, -0.5)$$),
('hb_tune', 'target NaN', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 'NaN')$$),
('hb_tune', 'NULL confidence', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 0.9, NULL)$$),
('hb_tune', 'confidence 0', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 0.9, 0)$$),
('hb_tune', 'confidence 1', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 0.9, 1)$$),
('hb_tune', 'confidence Infinity', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_rows', 'topk', 3, 0.9, 'Infinity')$$),
('hb_tune', 'NULL seed = 0 (then: no rows)', $$SELECT count(*) FROM hb_tune('binary_logistic', 'SELECT * FROM ep_empty', 'topk', 3, 0.9, 0.95, NULL)$$),
('hb_tune', 'cascade of a regression model', $$SELECT count(*) FROM hb_tune('reg_squarederror', 'SELECT * FROM reg_squarederror_in', 'cascade', target => 0.01)$$),
('hb_tune', 'cascade of a ranking model', $$SELECT count(*) FROM hb_tune('rank_pairwise', 'SELECT * FROM rank_pairwise_in', 'cascade', target => 0.01)$$),
('hb_tune', 'top-K of a multi-class model', $$SELECT count(*) FROM hb_tune('multi_softprob', 'SELECT * FROM multi_softprob_in', 'topk', 3, 0.9)$$),
-- hb_predict_targets(name, row | array), its aggregate and batched form
('hb_predict_targets', 'NULL name', $$SELECT hb_predict_targets(NULL, ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$),
('hb_predict_targets', 'unknown model', $$SELECT hb_predict_targets('nosuch', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$),
('hb_predict_targets', 'one-target model', $$SELECT array_length(hb_predict_targets('reg_squarederror', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[]), 1)$$),
('hb_predict_targets', 'integer array', $$SELECT array_length(hb_predict_targets('reg_squarederror', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]), 1)$$),
('hb_predict_targets', 'classifier', $$SELECT hb_predict_targets('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_targets', 'NULL row', $$SELECT hb_predict_targets('reg_squarederror', NULL::reg_squarederror_in) IS NULL$$),
('hb_predict_targets', 'wrong length', $$SELECT hb_predict_targets('reg_squarederror', ARRAY[1, 2]::float8[])$$),
('hb_predict_targets_agg', 'rows', $$SELECT array_dims(hb_predict_targets_agg('reg_squarederror', t)) FROM reg_squarederror_in t$$),
('hb_predict_targets_agg', 'no rows', $$SELECT hb_predict_targets_agg('reg_squarederror', t) IS NULL FROM reg_squarederror_in t WHERE false$$),
('hb_predict_targets_agg', 'classifier', $$SELECT hb_predict_targets_agg('binary_logistic', t) FROM ep_rows t$$),
('hb_predict_targets_batch', 'rows', $$SELECT count(*) FROM hb_predict_targets_batch('reg_squarederror', NULL::reg_squarederror_in)$$),
('hb_predict_targets_batch', 'record row type', $$SELECT count(*) FROM hb_predict_targets_batch('reg_squarederror', NULL::record)$$),
('hb_predict_targets_batch', 'classifier', $$SELECT count(*) FROM hb_predict_targets_batch('binary_logistic', NULL::ep_rows)$$),
-- hb_model_reassign(name, new_owner)
('hb_model_reassign', 'NULL name', $$SELECT hb_model_reassign(NULL, current_user)$$),
('hb_model_reassign', 'unknown model', $$SELECT hb_model_reassign('nosuch', current_user)$$),
('hb_model_reassign', 'NULL role', $$SELECT hb_model_reassign('binary_logistic', NULL)$$),
('hb_model_reassign', 'unknown role', $$SELECT hb_model_reassign('binary_logistic', 'nosuch_role')$$),
('hb_model_reassign', 'PUBLIC', $$SELECT hb_model_reassign('binary_logistic', 'public')$$),
('hb_model_reassign', 'to the current owner', $$SELECT hb_model_reassign('binary_logistic', current_user)$$),
-- hb_tune_drop(name, kind)
('hb_tune_drop', 'NULL name', $$SELECT hb_tune_drop(NULL)$$),
('hb_tune_drop', 'empty name', $$SELECT hb_tune_drop('')$$),
('hb_tune_drop', 'unknown model', $$SELECT hb_tune_drop('nosuch')$$),
('hb_tune_drop', 'NULL kind = all kinds', $$SELECT hb_tune_drop('binary_logistic', NULL)$$),
('hb_tune_drop', 'empty kind', $$SELECT hb_tune_drop('binary_logistic', '')$$),
('hb_tune_drop', 'unknown kind', $$SELECT hb_tune_drop('binary_logistic', 'exact')$$),
-- settings of 0.2.0
('hbird.cascade', 'not a boolean', $$SELECT set_config('hbird.cascade', 'maybe', true)$$),
('hbird.topk_mode', 'unknown mode', $$SELECT set_config('hbird.topk_mode', 'fast', true)$$),
('hbird.device', 'unknown device', $$SELECT set_config('hbird.device', 'tpu', true)$$),
('hbird.gpu_min_batch', 'negative', $$SELECT set_config('hbird.gpu_min_batch', '-1', true)$$),
('hb_device', 'no arguments', $$SELECT cuda_built IS NOT NULL AND memory_used >= 0 FROM hb_device()$$),
-- statistics (hbird in shared_preload_libraries; without it test/expected/entry_points_1.out)
('stat_models', 'no arguments', $$SELECT count(*) >= 0 FROM hbird.stat_models()$$),
('hb_stat_models_reset', 'all', $$SELECT hb_stat_models_reset()$$),
('hb_stat_models_reset(name)', 'NULL name', $$SELECT hb_stat_models_reset(NULL)$$),
('hb_stat_models_reset(name)', 'empty name', $$SELECT hb_stat_models_reset('')$$),
('hb_stat_models_reset(name)', 'unknown model', $$SELECT hb_stat_models_reset('nosuch')$$),
('hb_stat_models_reset(name)', 'a model', $$SELECT hb_stat_models_reset('binary_logistic')$$),
('hb_stat_shared_cache', 'no arguments', $$SELECT size_bytes >= 0 AND used_bytes BETWEEN 0 AND size_bytes AND pinned <= entries FROM hb_stat_shared_cache()$$),
-- scale-out: the pinned forms (name, version, sha256, origin, columns, VARIADIC values)
('hb_predict_pinned', 'a row by name, any order', $$SELECT bool_and(hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{tenure,risk,n_tx,balance,age,amount}', tenure, risk, n_tx, balance, age, amount) = hb_predict('binary_logistic', r)) FROM ep_rows r$$),
('hb_predict_pinned', 'an array', $$SELECT round(hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])::numeric, 6)$$),
('hb_predict_pinned', 'NULL name', $$SELECT hb_predict_pinned(NULL, 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_pinned', 'unknown model', $$SELECT hb_predict_pinned('nosuch', 1, 'ab', 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_pinned', 'NULL version', $$SELECT hb_predict_pinned('binary_logistic', NULL, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_pinned', 'another version', $$SELECT hb_predict_pinned('binary_logistic', 2, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_pinned', 'another sha256', $$SELECT hb_predict_pinned('binary_logistic', 1, repeat('ab', 32), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_pinned', 'NULL sha256', $$SELECT hb_predict_pinned('binary_logistic', 1, NULL, 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_pinned', 'another version, batched', $$SELECT count(hb_predict_pinned('binary_logistic', 2, 'ab', 's1', '{amount,age,balance,n_tx,risk,tenure}', amount, age, balance, n_tx, risk, tenure)) FROM ep_rows$$),
('hb_predict_pinned', 'fewer names than values', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{amount}', 1, 2)$$),
('hb_predict_pinned', 'NULL column name', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{amount,NULL}', 1, 2)$$),
('hb_predict_pinned', 'no column names, two values', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, 1, 2)$$),
('hb_predict_pinned', 'no column names, a number for the array', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, 1)$$),
('hb_predict_pinned', 'no column names, a row for the array', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ROW(1, 2, 3, 4, 5, 6))$$),
('hb_predict_pinned', 'no column names, a number for the array, over rows', $$SELECT count(hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, amount)) FROM ep_rows$$),
('hb_predict_targets_pinned', 'no column names, a bigint for the array', $$SELECT hb_predict_targets_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), NULL, NULL, 42::bigint)$$),
('hb_predict_pinned', 'a feature without its column', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{amount,age}', 1.0, 2.0)$$),
('hb_predict_pinned', 'a text column', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{amount,age,balance,n_tx,risk,tenure}', 'x'::text, 2.0, 3.0, 4.0, 5.0, 6.0)$$),
('hb_predict_pinned', 'declared types: read as declared (over rows)', $$SELECT bool_and(p = hb_predict('binary_logistic', ARRAY[round((r).amount::text::numeric)::float8, (r).age::text::real::float8, (r).balance, (r).n_tx, (r).risk, (r).tenure])) AND bool_or(p <> hb_predict('binary_logistic', r)) FROM (SELECT r, hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{{amount,age,balance,n_tx,risk,tenure},{"numeric(3,0)",real,"","","",""}}', amount, age, balance, n_tx, risk, tenure) AS p FROM ep_rows r) x$$),
('hb_predict_pinned', 'declared types: read as declared (one row)', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{{amount,age,balance,n_tx,risk,tenure},{"numeric(6,1)",float8,"","","",""}}', 0.04999999999999999::float8, 0.1::real, 1.0, 2.0, 3.0, 4.0) = hb_predict('binary_logistic', ARRAY[0.0, 0.1, 1.0, 2.0, 3.0, 4.0]::float8[])$$),
('hb_predict_pinned', 'declared types: the same types', $$SELECT bool_and(hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{{amount,age,balance,n_tx,risk,tenure},{"double precision",float8,"","","",""}}', amount, age, balance, n_tx, risk, tenure) = hb_predict('binary_logistic', r)) FROM ep_rows r$$),
('hb_predict_pinned', 'declared types: three rows of columns', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{{amount},{float8},{float8}}', 1.0)$$),
('hb_predict_pinned', 'declared types: no such type', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{{amount},{nosuchtype}}', 1.0)$$),
('hb_predict_pinned', 'declared types: NULL type', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{{amount},{NULL}}', 1.0)$$),
('hb_predict_pinned', 'declared types: a value its type cannot read', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', '{{amount,age,balance,n_tx,risk,tenure},{"numeric(2,1)","","","","",""}}', 123.0::float8, 2.0, 3.0, 4.0, 5.0, 6.0)$$),
('hb_predict_pinned', 'array of the wrong length', $$SELECT hb_predict_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2]::float8[])$$),
('hb_predict_proba_pinned', 'regression model', $$SELECT hb_predict_proba_pinned('reg_squarederror', 1, (SELECT sha256 FROM hb_models WHERE name = 'reg_squarederror' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$),
('hb_predict_proba_pinned', 'an array', $$SELECT array_length(hb_predict_proba_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]), 1)$$),
('hb_predict_margin_pinned', 'an array', $$SELECT array_length(hb_predict_margin_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6]), 1)$$),
('hb_predict_class_pinned', 'regression model', $$SELECT hb_predict_class_pinned('reg_squarederror', 1, (SELECT sha256 FROM hb_models WHERE name = 'reg_squarederror' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$),
('hb_predict_class_pinned', 'an array', $$SELECT hb_predict_class_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6])$$),
('hb_predict_targets_pinned', 'classifier', $$SELECT hb_predict_targets_pinned('binary_logistic', 1, (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6])$$),
('hb_predict_targets_pinned', 'an array', $$SELECT array_length(hb_predict_targets_pinned('reg_squarederror', 1, (SELECT sha256 FROM hb_models WHERE name = 'reg_squarederror' AND active), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6, 7, 8]), 1)$$),
-- hb_model_distribute(name, version), hb_model_receive(...), hb_model_shards(name)
('hb_model_distribute', 'NULL name', $$SELECT count(*) FROM hb_model_distribute(NULL)$$),
('hb_model_distribute', 'empty name', $$SELECT count(*) FROM hb_model_distribute('')$$),
('hb_model_distribute', 'unknown model', $$SELECT count(*) FROM hb_model_distribute('nosuch')$$),
('hb_model_distribute', 'unknown version', $$SELECT count(*) FROM hb_model_distribute('binary_logistic', 99)$$),
('hb_model_distribute', 'no shards', $$SELECT count(*) FROM hb_model_distribute('binary_logistic')$$),
('hb_model_receive', 'NULL name', format('SELECT hb_model_receive(NULL, 1, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), current_user, true, %L, %L, %L)', 'xgboost-json', :'reg', 'UTF8', :'reg', 'UTF8', 'hex', '{}', '[]', '[]')),
('hb_model_receive', 'NULL body', format('SELECT hb_model_receive(%L, 1, %L, NULL, NULL, %L, current_user, true, %L, %L, %L)', 'ep', 'xgboost-json', 'ab', '{}', '[]', '[]')),
('hb_model_receive', 'version 0', format('SELECT hb_model_receive(%L, 0, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), current_user, true, %L, %L, %L)', 'ep', 'xgboost-json', :'reg', 'UTF8', :'reg', 'UTF8', 'hex', '{}', '[]', '[]')),
('hb_model_receive', 'unknown format', format('SELECT hb_model_receive(%L, 1, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), current_user, true, %L, %L, %L)', 'ep', 'pmml', :'reg', 'UTF8', :'reg', 'UTF8', 'hex', '{}', '[]', '[]')),
('hb_model_receive', 'bytes that do not match the sha256', format('SELECT hb_model_receive(%L, 1, %L, NULL, convert_to(%L, %L), repeat(%L, 32), current_user, true, %L, %L, %L)', 'ep', 'xgboost-json', :'reg', 'UTF8', 'ab', '{}', '[]', '[]')),
('hb_model_receive', 'unknown owner', format('SELECT hb_model_receive(%L, 1, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), %L, true, %L, %L, %L)', 'ep', 'xgboost-json', :'reg', 'UTF8', :'reg', 'UTF8', 'hex', 'nosuch_role', '{}', '[]', '[]')),
('hb_model_receive', 'unknown grantee', format('SELECT hb_model_receive(%L, 1, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), current_user, true, %L, %L, %L)', 'ep', 'xgboost-json', :'reg', 'UTF8', :'reg', 'UTF8', 'hex', '{nosuch_role}', '[]', '[]')),
('hb_model_receive', 'another version under the same number', format('SELECT hb_model_receive(%L, 1, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), current_user, true, %L, %L, %L)', 'binary_logistic', 'xgboost-json', :'reg', 'UTF8', :'reg', 'UTF8', 'hex', '{}', '[]', '[]')),
('hb_model_receive', 'invalid model', format('SELECT hb_model_receive(%L, 1, %L, NULL, %L::bytea, encode(sha256(%L::bytea), %L), current_user, true, %L, %L, %L)', 'ep', 'auto', '\xdeadbeef', '\xdeadbeef', 'hex', '{}', '[]', '[]')),
('hb_model_receive', 'a new model', format('SELECT hb_model_receive(%L, 3, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), current_user, true, %L, %L, %L)', 'ep', 'xgboost-json', :'reg', 'UTF8', :'reg', 'UTF8', 'hex', '{public}', '[]', '[]')),
('hb_model_receive', 'the version it has', $$SELECT hb_model_receive('binary_logistic', 1, 'xgboost-json', NULL, (SELECT body FROM hbird.model_version WHERE name = 'binary_logistic' AND version = 1), (SELECT sha256 FROM hb_models WHERE name = 'binary_logistic' AND active), current_user, true, '{}', '[]', '[]')$$),
('hb_model_shards', 'no shards', $$SELECT count(*) FROM hb_model_shards('binary_logistic')$$),
('hb_model_shards', 'NULL name = every model', $$SELECT count(*) FROM hb_model_shards(NULL)$$),
-- the catalog's cascading deletes: a trigger function only
('cascade_delete', 'called directly', $$SELECT hbird.cascade_delete()$$),
-- the pinned forms' planner support function: answers nothing
('scoring_support', 'called directly (no internal value in SQL)', $$SELECT hbird.scoring_support(NULL::internal) IS NULL$$),
-- a shard's value as the coordinator reads it: through text, with the
-- declared typmod (a cast would round float8 to 15 digits first: 0.1)
('hb_read_as', 'float8 as numeric(6,1)', $$SELECT hb_read_as(0.04999999999999999::float8, NULL::numeric(6,1))$$),
('hb_read_as', 'real as float8', $$SELECT hb_read_as(0.1::real, NULL::float8)$$),
('hb_read_as', 'the same type', $$SELECT hb_read_as(2.5::float8, NULL::float8)$$),
('hb_read_as', 'NULL value', $$SELECT hb_read_as(NULL::integer, NULL::integer)$$),
('hb_read_as', 'too long for varchar(2)', $$SELECT hb_read_as('abc'::text, NULL::varchar(2))$$),
('hb_read_as', 'not a number', $$SELECT hb_read_as('x'::text, NULL::float8)$$),
('read_as_support', 'called directly (no internal value in SQL)', $$SELECT hbird.read_as_support(NULL::internal) IS NULL$$);

SELECT n, entry, bad, ep_try(stmt) AS result FROM ep_case ORDER BY n;

-- every function of the extension has cases above: a new function needs its own
SELECT p.oid::regprocedure AS function_without_cases
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'hbird'
WHERE p.proname NOT IN (SELECT regexp_replace(entry, '\(.*$', '') FROM ep_case)
ORDER BY 1;

-- nothing was written by any case
SELECT (SELECT count(*) FROM hbird.model) = models AS models_same,
	   (SELECT count(*) FROM hbird.model_version) = versions AS versions_same,
	   (SELECT count(*) FROM hbird.model_grant) = grants AS grants_same,
	   (SELECT count(*) FROM hbird.tuning) = tunings AS tunings_same
FROM catalog_before;

DROP TABLE ep_rows, ep_wrong, ep_short, ep_empty, ep_huge;
DROP FUNCTION ep_try(text);
