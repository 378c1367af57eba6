-- Rows bound straight from tuples (pg_bind.c's column reader), the batched
-- functions streamed by HbirdBatch (pg_batch_stream.c), and the scoring
-- aggregates fed by the batching scan: every form answers what the
-- row-at-a-time, materialized or aggregate-at-a-time path answers, bit for
-- bit (float8 text is shortest-exact), with the same errors.
\getenv abs_srcdir PG_ABS_SRCDIR
-- the planner hook is installed when hbird's library loads
LOAD 'hbird';
\set fixtures :abs_srcdir '/fixtures/'
\set m `cat :fixtures/multi_target.json`
SELECT hb_model_upload('br_mt', :'m') AS v;
\set m `cat :fixtures/reg_squarederror.json`
SELECT hb_model_upload('br_reg', :'m') AS v;

-- br_same(q): q with hbird.batch_scan on and off (off: no planner hook, a
-- Function Scan, the aggregates binding row by row), compared as text,
-- and which hbird node the batched plan uses
CREATE FUNCTION br_run(q text, batch boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
BEGIN
	PERFORM set_config('hbird.batch_scan', batch::text, true);
	EXECUTE format('SELECT string_agg(x::text, E''\n'' ORDER BY o) FROM (SELECT x, row_number() OVER () AS o FROM (%s) x) y', q)
		INTO r;
	RETURN r;
END $$;

CREATE FUNCTION br_nodes(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	found text := '';
BEGIN
	PERFORM set_config('hbird.batch_scan', 'on', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		IF line LIKE '%HbirdScore%' AND found NOT LIKE '%scan%' THEN
			found := found || ' scan';
		END IF;
		IF line LIKE '%HbirdBatch%' AND found NOT LIKE '%stream%' THEN
			found := found || ' stream';
		END IF;
	END LOOP;
	RETURN CASE WHEN found = '' THEN ' (row at a time)' ELSE ' (' || ltrim(found) || ')' END;
END $$;

CREATE FUNCTION br_same(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	a text := br_run(q, true);
	b text := br_run(q, false);
BEGIN
	RETURN CASE WHEN a IS NOT DISTINCT FROM b THEN 'same' || br_nodes(q)
				ELSE 'DIFFERENT' END;
END $$;

CREATE FUNCTION br_error(q text, batch boolean) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('hbird.batch_scan', batch::text, true);
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE FUNCTION br_same_error(q text) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE WHEN br_error(q, true) = br_error(q, false)
				THEN 'same: ' || br_error(q, true)
				ELSE 'DIFFERENT: ' || br_error(q, true) || ' vs ' || br_error(q, false) END
$$;

-- A table whose feature columns have every numeric type, with text of
-- varying width before and between them (their offsets change from row to
-- row), NULLs and a NaN, a dropped column between features (rows written
-- before the drop still hold its value), and a feature added after rows
-- were written (those rows do not hold it: its default fills in).
CREATE TABLE br_t (id integer, note text, amount float4, age integer, gone float8,
				   balance numeric, memo varchar, n_tx smallint, risk bigint);
INSERT INTO br_t
SELECT g, repeat('x', g % 37),
	   CASE WHEN g % 11 = 0 THEN NULL ELSE sin(g)::float4 END,
	   CASE WHEN g % 13 = 0 THEN NULL ELSE (cos(g) * 3)::integer END,
	   g * 1.5,
	   CASE WHEN g % 7 = 0 THEN NULL WHEN g % 29 = 0 THEN 'NaN' ELSE round(sin(g * 0.3)::numeric, 3) END,
	   CASE WHEN g % 5 = 0 THEN NULL ELSE repeat('y', g % 300) END,
	   (g % 9 - 4)::smallint,
	   CASE WHEN g % 17 = 0 THEN NULL ELSE (g % 5 - 2)::bigint END
FROM generate_series(1, 300) g;
ALTER TABLE br_t DROP COLUMN gone;
ALTER TABLE br_t ADD COLUMN tenure float8 DEFAULT 0.75;
INSERT INTO br_t
SELECT g, repeat('z', g % 41), cos(g)::float4, (g % 7)::integer,
	   round(cos(g * 0.3)::numeric, 2), NULL, (g % 3)::smallint, (g % 4)::bigint,
	   CASE WHEN g % 19 = 0 THEN NULL ELSE (g % 9) / 4.0 END
FROM generate_series(301, 600) g;
ANALYZE br_t;

-- The same without the dropped column (the scan hands its buffer tuples
-- over, not projected rows), and a table of float8 columns alone (fixed
-- offsets), with and without NULLs
CREATE TABLE br_t2 (id integer, note text, amount float4, age integer,
					balance numeric, memo varchar, n_tx smallint, risk bigint);
INSERT INTO br_t2 SELECT id, note, amount, age, balance, memo, n_tx, risk FROM br_t WHERE id <= 300;
ALTER TABLE br_t2 ADD COLUMN tenure float8 DEFAULT 0.75;
INSERT INTO br_t2 SELECT * FROM br_t WHERE id > 300;
CREATE TABLE br_f AS
SELECT id, amount::float8 AS amount, age::float8 AS age, balance::float8 AS balance,
	   n_tx::float8 AS n_tx, risk::float8 AS risk, tenure, note
FROM br_t;
ANALYZE br_t2;
ANALYZE br_f;

-- br_check(table): every row binds as its values cast to float8 by
-- position do (the array form, a separate path), row at a time (a
-- composite datum per row), in the batching scan (the table's tuples) and
-- in hb_predict_batch (the query's rows): rows whose score differs
CREATE FUNCTION br_check(tab regclass) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	arr text := 'hb_predict(''binary_logistic'', ARRAY[amount::float8, age::float8, balance::float8, n_tx::float8, risk::float8, tenure::float8])';
	n bigint;
	d_row bigint;
	d_scan bigint;
	d_batch bigint;
BEGIN
	PERFORM set_config('hbird.batch_scan', 'off', true);
	EXECUTE format('SELECT count(*), count(*) FILTER (WHERE hb_predict(''binary_logistic'', t) IS DISTINCT FROM %s) FROM %s t',
				   arr, tab) INTO n, d_row;
	PERFORM set_config('hbird.batch_scan', 'on', true);
	EXECUTE format('SELECT count(*) FILTER (WHERE hb_predict(''binary_logistic'', t) IS DISTINCT FROM %s) FROM %s t',
				   arr, tab) INTO d_scan;
	EXECUTE format('SELECT count(*) FILTER (WHERE b.score IS DISTINCT FROM (SELECT %s FROM %s t WHERE t.id = (b.item).id)) '
				   'FROM hb_predict_batch(''binary_logistic'', NULL::%s) b', arr, tab, tab) INTO d_batch;
	RETURN format('%s rows: %s differ row at a time, %s in the scan, %s in hb_predict_batch', n, d_row, d_scan, d_batch);
END $$;
SELECT br_check('br_t') AS br_t;
SELECT br_check('br_t2') AS br_t2;
SELECT br_check('br_f') AS br_f;
UPDATE br_f SET amount = coalesce(amount, 0.5), age = coalesce(age, 1), balance = coalesce(balance, -1),
				risk = coalesce(risk, 2), tenure = coalesce(tenure, 0);
SELECT br_check('br_f') AS br_f_no_nulls;
SELECT br_same($$SELECT id, hb_predict('binary_logistic', t) FROM br_t t ORDER BY id$$) AS plain;
-- a boolean feature, and the row of a join (a composite formed per row)
CREATE TABLE br_b AS
SELECT id, amount::float8 AS amount, age::float8 AS age, balance::float8 AS balance,
	   n_tx::float8 AS n_tx, risk::float8 AS risk, id % 3 = 0 AS tenure
FROM br_t;
SELECT count(*) AS n,
	   count(*) FILTER (WHERE hb_predict('binary_logistic', b) IS DISTINCT FROM
						hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk,
															tenure::integer::float8])) AS differ
FROM br_b b;
SELECT br_same($$SELECT b.id, hb_predict('binary_logistic', b) FROM br_b b JOIN br_t t USING (id) ORDER BY 1$$) AS join_rows;

-- hb_predict_batch over the table (its query returns no dropped column:
-- the row type's columns map to the query's), the rows themselves back
SELECT br_same($$SELECT (item).id, score FROM hb_predict_batch('binary_logistic', NULL::br_t) ORDER BY 1$$) AS batch;
SELECT count(*) AS n,
	   count(*) FILTER (WHERE b.item::text IS DISTINCT FROM t::text) AS rows_differ,
	   count(*) FILTER (WHERE b.score IS DISTINCT FROM hb_predict('binary_logistic', t)) AS scores_differ
FROM hb_predict_batch('binary_logistic', NULL::br_t) b JOIN br_t t ON t.id = (b.item).id;
-- a query that computes its columns (rows are projected, not the table's)
SELECT br_same($$SELECT (item).id, score FROM hb_predict_batch('binary_logistic', NULL::br_b,
	'SELECT id, amount * 2, age, balance, n_tx, risk, NOT tenure FROM br_b WHERE id % 2 = 0')$$) AS projected;
SELECT count(*) FILTER (WHERE b.score IS DISTINCT FROM
						hb_predict('binary_logistic', ROW(x.id, x.amount * 2, x.age, x.balance, x.n_tx, x.risk, NOT x.tenure)::br_b)) AS differ
FROM hb_predict_batch('binary_logistic', NULL::br_b,
	'SELECT id, amount * 2, age, balance, n_tx, risk, NOT tenure FROM br_b WHERE id % 2 = 0') b
JOIN br_b x ON x.id = (b.item).id;
-- columns bind by the row type's names, and the query's rows give the
-- row type's columns by position: a query listing them in another order
CREATE TYPE br_six AS (amount float8, age float8, balance float8, n_tx float8, risk float8, tenure float8);
SELECT count(*) AS n,
	   count(*) FILTER (WHERE b.score IS DISTINCT FROM
						hb_predict('binary_logistic', ROW(x.risk, x.n_tx, x.balance, x.age, x.amount, 0.5)::br_six)) AS differ
FROM hb_predict_batch('binary_logistic', NULL::br_six,
	'SELECT risk, n_tx, balance, age, amount, 0.5::float8 AS tenure FROM br_b ORDER BY id') WITH ORDINALITY b(score, item, o)
JOIN (SELECT *, row_number() OVER (ORDER BY id) AS o FROM br_b) x USING (o);

-- streamed: the same rows, in order, under LIMIT and in every form
EXPLAIN (COSTS OFF) SELECT sum(score) FROM hb_predict_batch('binary_logistic', NULL::br_t);
EXPLAIN (COSTS OFF) SELECT * FROM hb_predict_batch('binary_logistic', NULL::br_t) WITH ORDINALITY;
SELECT br_same($$SELECT (item).id, score FROM hb_predict_batch('binary_logistic', NULL::br_t,
	'SELECT * FROM br_t ORDER BY id DESC') LIMIT 7$$) AS limited;
SELECT br_same($$SELECT (item).id, class FROM hb_predict_class_batch('binary_logistic', NULL::br_t,
	'SELECT * FROM br_t ORDER BY id')$$) AS class_batch;
SELECT br_same($$SELECT (item).id, targets FROM hb_predict_targets_batch('br_mt', NULL::br_t,
	'SELECT * FROM br_t ORDER BY id')$$) AS targets_batch;
SELECT br_same($$SELECT count(*), sum(score) FROM hb_predict_batch('binary_logistic', NULL::br_t) WHERE score > 0.5$$) AS filtered;
-- batches start at one row and double
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT score FROM hb_predict_batch('binary_logistic', NULL::br_t, 'SELECT * FROM br_t ORDER BY id') LIMIT 3;
-- run again per outer row (a join's inner side, a correlated subquery):
-- materialized as before
SELECT br_same($$SELECT g, (SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::br_t) b
	WHERE (b.item).id % 5 = g) FROM generate_series(0, 4) g$$) AS correlated;
SELECT br_same($$SELECT g, (b.item).id, b.score FROM generate_series(1, 3) g
	CROSS JOIN LATERAL hb_predict_batch('binary_logistic', NULL::br_t,
		format('SELECT * FROM br_t WHERE id %% 100 = %s ORDER BY id', g)) b ORDER BY 1, 2$$) AS lateral_rows;
-- a PL/pgSQL loop that runs other statements between its fetches
CREATE FUNCTION br_loop() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	s float8 := 0;
	n integer := 0;
BEGIN
	FOR r IN SELECT * FROM hb_predict_batch('binary_logistic', NULL::br_t, 'SELECT * FROM br_t ORDER BY id') LOOP
		n := n + (SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::br_t,
				format('SELECT * FROM br_t WHERE id = %s', (r.item).id)));
		s := s + r.score;
	END LOOP;
	RETURN n || ' ' || s;
END $$;
SELECT br_same($$SELECT br_loop()$$) AS plpgsql_loop;
-- a scrollable cursor reads backward
BEGIN;
DECLARE br_c SCROLL CURSOR FOR
	SELECT (item).id, score FROM hb_predict_batch('binary_logistic', NULL::br_t, 'SELECT * FROM br_t ORDER BY id');
FETCH 3 FROM br_c;
FETCH PRIOR FROM br_c;
FETCH LAST FROM br_c;
COMMIT;
-- the query's cursor opened in a subtransaction that is rolled back is
-- gone: the next fetch says so
BEGIN;
DECLARE br_c CURSOR FOR
	SELECT (item).id FROM hb_predict_batch('binary_logistic', NULL::br_t, 'SELECT * FROM br_t ORDER BY id');
SAVEPOINT s;
FETCH 2 FROM br_c;
ROLLBACK TO SAVEPOINT s;
FETCH 2 FROM br_c;
ROLLBACK;
-- errors come when the function is called, before any row is read
CREATE TABLE br_empty (LIKE br_t);
SELECT br_same_error($$SELECT * FROM hb_predict_batch('no_such_model', NULL::br_empty)$$);
SELECT br_same_error($$SELECT * FROM hb_predict_batch('br_mt', NULL::br_empty)$$);
SELECT br_same_error($$SELECT * FROM hb_predict_class_batch('br_reg', NULL::br_empty)$$);
SELECT br_same_error($$SELECT * FROM hb_predict_batch('binary_logistic', NULL::br_t, 'SELECT 1')$$);
SELECT br_same_error($$SELECT * FROM hb_predict_batch('binary_logistic', NULL::br_t, 'DELETE FROM br_t')$$);

-- aggregates: scored by the batching scan below the Agg, in input order
-- (ORDER BY inside), per group, with NULL rows, HAVING and other
-- aggregates around them
SELECT br_same($$SELECT hb_predict_agg('binary_logistic', t ORDER BY id DESC) FROM br_t t$$) AS agg;
SELECT br_same($$SELECT id % 4, hb_predict_agg('binary_logistic', t ORDER BY id),
	hb_predict_class_agg('binary_logistic', t ORDER BY id), count(*)
	FROM br_t t GROUP BY 1 ORDER BY 1$$) AS groups;
SELECT br_same($$SELECT hb_predict_targets_agg('br_mt', t ORDER BY id) FROM br_t t WHERE id % 3 = 0$$) AS targets_agg;
SELECT br_same($$SELECT hb_predict_agg('binary_logistic', t ORDER BY k.g)
	FROM generate_series(-5, 40) k(g) LEFT JOIN br_t t ON t.id = k.g$$) AS null_rows;
SELECT br_same($$SELECT hb_predict_class_agg('binary_logistic', t ORDER BY k.g),
	hb_predict_targets_agg('br_mt', t ORDER BY k.g)
	FROM generate_series(-5, 40) k(g) LEFT JOIN br_t t ON t.id = k.g$$) AS null_rows_class_targets;
SELECT br_same($$SELECT id % 2, sum(hb_predict('binary_logistic', t)), hb_predict_agg('binary_logistic', t ORDER BY id)
	FROM br_t t GROUP BY 1 HAVING cardinality(hb_predict_agg('binary_logistic', t ORDER BY id)) > 10 ORDER BY 1$$) AS having;
SELECT br_same($$SELECT hb_predict_agg('binary_logistic', t ORDER BY id) FILTER (WHERE id % 2 = 0) FROM br_t t$$) AS filtered;
SELECT br_same($$SELECT hb_predict_agg(DISTINCT 'binary_logistic', t) FROM br_t t WHERE id < 50$$) AS distinct_rows;
SELECT br_same($$SELECT hb_predict_agg('binary_logistic', b ORDER BY b.id) FROM br_b b JOIN br_t t USING (id) WHERE t.id % 7 = 1$$) AS join_rows;
-- the aggregate's results are the row-at-a-time predictions, in order
SELECT (SELECT hb_predict_agg('binary_logistic', t ORDER BY id) FROM br_t t) =
	   (SELECT array_agg(hb_predict('binary_logistic', t) ORDER BY id) FROM br_t t) AS agg_is_rows;
EXPLAIN (VERBOSE, COSTS OFF) SELECT hb_predict_agg('binary_logistic', t) FROM br_t t;
-- the aggregates' own messages, with the scan and without
SELECT br_same_error($$SELECT hb_predict_agg('br_mt', t) FROM br_t t$$);
SELECT br_same_error($$SELECT hb_predict_class_agg('br_reg', t) FROM br_t t$$);
SELECT br_same_error($$SELECT hb_predict_targets_agg('binary_logistic', t) FROM br_t t$$);
SELECT br_same_error($$SELECT hb_predict_agg('no_such_model', t) FROM br_t t$$);
SELECT br_same_error($$SELECT hb_predict_agg(NULL, t) FROM br_t t$$);
SELECT br_same($$SELECT hb_predict_agg('no_such_model', t) FROM br_empty t$$) AS no_rows_no_error;

-- rows whose type changes from call to call are bound again each time;
-- each binding frees the one before (a pipeline's scratch is 8 bytes a
-- slot: 160 kB here, 1,000 rows kept 160 MB before)
SELECT hb_model_upload('br_wide', json_build_object(
	'format', 'hbird-pipeline', 'version', 1,
	'inputs', json_build_array(json_build_object('name', 'txt', 'type', 'text'),
							   json_build_object('name', 'num', 'type', 'numeric')),
	'steps', json_build_array(json_build_object('op', 'count_vectorizer', 'name', 'cv', 'input', 'txt',
		'vocabulary', (SELECT json_object_agg('w' || g, g - 1) FROM generate_series(1, 20000) g))),
	'features', json_build_array('cv', 'num'),
	'model', json_build_object('kind', 'linear', 'task', 'regression', 'link', 'identity',
		'coef', json_build_array((SELECT json_agg(0.001) FROM generate_series(1, 20001))),
		'intercept', json_build_array(0)))::text) AS v;
CREATE TABLE br_pa (txt text, num float8);
CREATE TABLE br_pb (num float8, txt text);
INSERT INTO br_pa VALUES ('w1 w2 w2', 1);
INSERT INTO br_pb VALUES (1, 'w1 w2 w2');
CREATE FUNCTION br_pick(g int) RETURNS record LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	IF g % 2 = 0 THEN SELECT * INTO r FROM br_pa; ELSE SELECT * INTO r FROM br_pb; END IF;
	RETURN r;
END $$;
CREATE FUNCTION br_mem() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT sum(total_bytes)::bigint FROM pg_backend_memory_contexts $$;
SELECT (SELECT br_mem()) AS before \gset
SELECT count(*), round(sum(s)::numeric, 6) AS sum, max(m) - :before < 16 * 1024 * 1024 AS flat
FROM (SELECT hb_predict('br_wide', br_pick(g)) AS s, br_mem() AS m FROM generate_series(1, 1000) g) q;
SET hbird.batch_scan = off;
SELECT count(*), round(sum(s)::numeric, 6) AS sum, max(m) - :before < 16 * 1024 * 1024 AS flat
FROM (SELECT hb_predict('br_wide', br_pick(g)) AS s, br_mem() AS m FROM generate_series(1, 1000) g) q;
RESET hbird.batch_scan;
DROP FUNCTION br_pick(int), br_mem();
DROP TABLE br_pa, br_pb;
SELECT hb_model_drop('br_wide');

DROP FUNCTION br_loop();
DROP FUNCTION br_check(regclass);
DROP TABLE br_t, br_t2, br_f, br_b, br_empty;
DROP TYPE br_six;
SELECT hb_model_drop('br_mt');
SELECT hb_model_drop('br_reg');
