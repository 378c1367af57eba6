-- The batching scan (HbirdScore): plain SQL scoring calls run in batches,
-- and every form answers exactly what the row-at-a-time plan answers.
-- bs_same(query) runs a query with hbird.batch_scan on and off and
-- compares the results as text (floats print shortest-exact, so equal
-- text is equal bits); it also says whether the batched plan was used.
\getenv abs_srcdir PG_ABS_SRCDIR
-- the planner hook is installed when hbird's library loads: without
-- shared_preload_libraries, a session's first statement plans before that
LOAD 'hbird';
\set fixtures :abs_srcdir '/fixtures/'

-- (an UPDATE or DELETE runs on bs_mod, made afresh from bs: its result is
-- the table's rows after it, and its RETURNING rows, as digests)
CREATE FUNCTION bs_run(q text, batch boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	r text;
	tab text;
BEGIN
	IF q ~* '^\s*(update|delete)' THEN
		DROP TABLE IF EXISTS bs_mod;
		CREATE TABLE bs_mod AS SELECT *, NULL::float8 AS p, NULL::integer AS c FROM bs;
	END IF;
	PERFORM set_config('hbird.batch_scan', batch::text, true);
	IF q ~* '^\s*(update|delete)' AND q !~* 'returning' THEN
		EXECUTE q;
	ELSIF q ~* '^\s*(update|delete)' THEN
		EXECUTE format('WITH r AS (%s) SELECT md5(string_agg(r::text, '','' ORDER BY r::text)) FROM r', q) INTO r;
	ELSE
		EXECUTE format('SELECT string_agg(x::text, E''\n'' ORDER BY o) FROM (SELECT x, row_number() OVER () AS o FROM (%s) x) y', q)
			INTO r;
		RETURN r;
	END IF;
	PERFORM set_config('hbird.batch_scan', 'on', true);
	SELECT count(*) || ' rows, ' || md5(string_agg(m::text, ',' ORDER BY id)) INTO tab FROM bs_mod m;
	RETURN tab || coalesce(', returning ' || r, '');
END $$;

CREATE FUNCTION bs_batched(q text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
	line text;
	found boolean := false;
BEGIN
	PERFORM set_config('hbird.batch_scan', 'on', true);
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		found := found OR line LIKE '%HbirdScore%';
	END LOOP;
	RETURN found;
END $$;

CREATE FUNCTION bs_same(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	a text := bs_run(q, true);
	b text := bs_run(q, false);
BEGIN
	RETURN CASE WHEN a IS NOT DISTINCT FROM b
				THEN 'same' || CASE WHEN bs_batched(q) THEN ' (batched)' ELSE ' (row at a time)' END
				ELSE 'DIFFERENT' END;
END $$;

-- Errors: the same SQLSTATE and message with the scan on and off.
CREATE FUNCTION bs_error(q text, batch boolean) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('hbird.batch_scan', batch::text, true);
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE FUNCTION bs_same_error(q text) RETURNS text
LANGUAGE sql AS $$
	SELECT CASE WHEN bs_error(q, true) = bs_error(q, false)
				THEN 'same: ' || bs_error(q, true) ELSE 'DIFFERENT: ' || bs_error(q, true) || ' vs ' || bs_error(q, false) END
$$;

-- 20,000 rows with missing, NaN and infinite values, duplicated rows (so
-- that scores tie), in the columns of binary_logistic, multi_softprob and
-- reg_squarederror
CREATE TABLE bs AS
SELECT g AS id,
	   CASE WHEN g % 11 = 0 THEN NULL WHEN g % 97 = 0 THEN 'NaN'::float8 ELSE round(sin(g)::numeric, 2)::float8 END AS amount,
	   CASE WHEN g % 13 = 0 THEN NULL WHEN g % 101 = 0 THEN 'Infinity'::float8 ELSE round(cos(g)::numeric, 2)::float8 END AS age,
	   CASE WHEN g % 7 = 0 THEN NULL WHEN g % 103 = 0 THEN '-Infinity'::float8 ELSE round(sin(g * 0.3)::numeric, 1)::float8 END AS balance,
	   round(cos(g * 0.2)::numeric, 1)::float8 AS n_tx,
	   round(sin(g * 0.1)::numeric, 1)::float8 AS risk,
	   (g % 9) / 4.0::float8 AS tenure,
	   (g % 5) / 5.0::float8 AS utilization,
	   CASE WHEN g % 17 = 0 THEN NULL ELSE (g % 23)::float8 END AS score,
	   (g % 4) AS grp
FROM generate_series(1, 20000) g;
ANALYZE bs;
-- the same rows with other column types: float4, integers, numeric
CREATE TABLE bs_types AS
SELECT id, amount::float4 AS amount, (age * 100)::integer AS age, balance::numeric AS balance,
	   (n_tx * 10)::smallint AS n_tx, (risk * 10)::bigint AS risk, tenure > 1 AS tenure
FROM bs WHERE amount <> 'NaN' AND age <> 'Infinity' AND balance <> '-Infinity';
ANALYZE bs_types;
CREATE TABLE bs_keys AS SELECT g AS id, g % 3 AS k FROM generate_series(-100, 19000, 7) g;
ANALYZE bs_keys;
-- four rows that tie, then one that scores lower: under LIMIT 2 the sort
-- turns into a heap at its fifth row, so that row must reach it (the sort's
-- order of ties is another as a quicksort of four)
CREATE TABLE bs_ties AS
SELECT i AS id, b.amount, b.age, b.balance, b.n_tx, b.risk, b.tenure, b.utilization, b.score, b.grp
FROM (SELECT * FROM bs t WHERE amount IS NOT NULL ORDER BY hb_predict('binary_logistic', t) DESC, id LIMIT 1) b,
	 generate_series(1, 4) i
UNION ALL
SELECT 5, b.amount, b.age, b.balance, b.n_tx, b.risk, b.tenure, b.utilization, b.score, b.grp
FROM (SELECT * FROM bs t WHERE amount IS NOT NULL ORDER BY hb_predict('binary_logistic', t), id LIMIT 1) b;
ANALYZE bs_ties;

-- what plans look like
EXPLAIN (COSTS OFF) SELECT id, hb_predict('binary_logistic', t) FROM bs t;
EXPLAIN (COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM bs t;
EXPLAIN (COSTS OFF) SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 10;
-- the score read beside the sort key prunes too (pruned rows do not go up),
-- unless the node's expressions are volatile (a volatile sort key: pruned
-- rows then go up with a stand-in score that only the sort may read)
EXPLAIN (COSTS OFF) SELECT id, round(hb_predict('binary_logistic', t)::numeric, 3) FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id, round(hb_predict('binary_logistic', t)::numeric, 3) FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, random() LIMIT 10;
EXPLAIN (COSTS OFF) SELECT id FROM bs t WHERE hb_predict_class('binary_logistic', t) = 1 AND grp = 2;
-- a call on constants, one row: row at a time
EXPLAIN (COSTS OFF) SELECT hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6]);
EXPLAIN (COSTS OFF) SELECT hb_predict('binary_logistic', v) FROM (VALUES (1, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)) v(id, amount, age, balance, n_tx, risk, tenure);
EXPLAIN (COSTS OFF) SELECT hb_predict('binary_logistic', t) FROM bs t WHERE id = 5;

-- every form, on and off
CREATE TEMP TABLE bs_case (n serial, what text, q text);
INSERT INTO bs_case (what, q) VALUES
('predict, row', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t$$),
('predict, array', $$SELECT id, hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure]) FROM bs t$$),
('predict, real[]', $$SELECT id, hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure]::real[]) FROM bs t$$),
('proba, row', $$SELECT id, hb_predict_proba('multi_softprob', t) FROM bs t$$),
('proba, array', $$SELECT id, hb_predict_proba('multi_softprob', ARRAY[amount, age, balance, n_tx, risk, tenure]) FROM bs t$$),
('margin, row', $$SELECT id, hb_predict_margin('multi_softprob', t) FROM bs t$$),
('margin, array', $$SELECT id, hb_predict_margin('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure]) FROM bs t$$),
('class, row', $$SELECT id, hb_predict_class('multi_softprob', t) FROM bs t$$),
('class, array', $$SELECT id, hb_predict_class('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure]) FROM bs t$$),
('regression', $$SELECT id, hb_predict('reg_squarederror', t) FROM bs t$$),
('ranking model', $$SELECT id, hb_predict('rank_pairwise', t) FROM (SELECT id, amount AS bm25, age AS tf, balance AS idf, n_tx AS doc_len, risk AS pagerank, tenure AS freshness FROM bs) t$$),
('column types', $$SELECT id, hb_predict('binary_logistic', t), hb_predict_class('binary_logistic', t) FROM bs_types t$$),
('several models and calls', $$SELECT id, hb_predict('binary_logistic', t), hb_predict('reg_squarederror', t), hb_predict_proba('multi_softprob', t), hb_predict_class('binary_logistic', t) FROM bs t$$),
('inside expressions', $$SELECT id, round(hb_predict('binary_logistic', t)::numeric, 3) + 1, hb_predict('binary_logistic', t) > 0.5 AS flag, greatest(hb_predict('binary_logistic', t), hb_predict('reg_squarederror', t)) FROM bs t$$),
('CASE condition', $$SELECT id, CASE WHEN hb_predict('binary_logistic', t) > 0.5 THEN 'fraud' ELSE 'ok' END FROM bs t$$),
('CASE branch (row at a time)', $$SELECT id, CASE WHEN grp = 1 THEN hb_predict('binary_logistic', t) END FROM bs t$$),
('row comparison, first pair', $$SELECT id, (hb_predict('binary_logistic', t), grp) < (0.5, 2) FROM bs t$$),
('row comparison, later pair (row at a time)', $$SELECT id, (grp, hb_predict('binary_logistic', t)) < (2, 0.5) FROM bs t$$),
('WHERE on a score', $$SELECT id FROM bs t WHERE hb_predict('binary_logistic', t) > 0.3$$),
('WHERE on a class with a filter', $$SELECT id FROM bs t WHERE hb_predict_class('binary_logistic', t) = 1 AND grp = 2$$),
('WHERE on a multiclass class', $$SELECT id, hb_predict_class('multi_softprob', t) FROM bs t WHERE hb_predict_class('multi_softprob', t) <> 0$$),
('WHERE on two models', $$SELECT id FROM bs t WHERE hb_predict('binary_logistic', t) > 0.3 AND hb_predict('reg_squarederror', t) > 0.4$$),
('WHERE on one model, outputs of others', $$SELECT id, hb_predict('reg_squarederror', t), hb_predict_proba('multi_softprob', t), hb_predict('binary_logistic', t) FROM bs t WHERE hb_predict('binary_logistic', t) > 0.5$$),
('WHERE on a score, then a filter', $$SELECT id, hb_predict('reg_squarederror', t) FROM bs t WHERE hb_predict('binary_logistic', t) > 0.2 AND grp = 1 AND hb_predict_class('multi_softprob', t) = 2$$),
('WHERE on a class, ORDER BY another score LIMIT', $$SELECT id FROM bs t WHERE hb_predict_class('binary_logistic', t) = 1 ORDER BY hb_predict('reg_squarederror', t) DESC, id LIMIT 10$$),
('WHERE on a score, sum of another', $$SELECT sum(hb_predict('reg_squarederror', t)), count(*) FROM bs t WHERE hb_predict('binary_logistic', t) > 0.5$$),
('WHERE on a score, scoring aggregate of another', $$SELECT hb_predict_agg('reg_squarederror', t), hb_predict_class_agg('multi_softprob', t) FROM bs t WHERE hb_predict('binary_logistic', t) > 0.5$$),
('sum', $$SELECT sum(hb_predict('binary_logistic', t)), count(hb_predict('binary_logistic', t)) FROM bs t$$),
('GROUP BY', $$SELECT grp, sum(hb_predict('binary_logistic', t)), max(hb_predict('reg_squarederror', t)), count(*) FILTER (WHERE hb_predict_class('binary_logistic', t) = 1) FROM bs t GROUP BY grp ORDER BY grp$$),
('GROUP BY a score', $$SELECT hb_predict_class('multi_softprob', t) AS c, count(*) FROM bs t GROUP BY 1 ORDER BY 1$$),
('aggregate FILTER (row at a time)', $$SELECT sum(hb_predict('binary_logistic', t)) FILTER (WHERE grp = 1) FROM bs t$$),
('avg of a proba', $$SELECT grp, avg((hb_predict_proba('multi_softprob', t))[2]) FROM bs t GROUP BY grp ORDER BY grp$$),
('join', $$SELECT k.id, k.k, hb_predict('binary_logistic', t) FROM bs_keys k JOIN bs t USING (id)$$),
('outer join: NULL rows score NULL', $$SELECT k.id, hb_predict('binary_logistic', t), hb_predict_class('binary_logistic', t) FROM bs_keys k LEFT JOIN bs t USING (id)$$),
('join, aggregate', $$SELECT k.k, sum(hb_predict('binary_logistic', t)) FROM bs_keys k JOIN bs t USING (id) GROUP BY k.k ORDER BY k.k$$),
('subquery', $$SELECT id, hb_predict('binary_logistic', s) FROM (SELECT id, amount, age, balance, n_tx, risk, tenure FROM bs WHERE grp <> 3) s$$),
('subquery, renamed columns', $$SELECT hb_predict('binary_logistic', s) FROM (SELECT amount AS amount, age, balance, n_tx, risk, tenure, id * 2 AS x FROM bs OFFSET 3) s$$),
('CTE', $$WITH c AS MATERIALIZED (SELECT * FROM bs WHERE grp = 1) SELECT id, hb_predict('binary_logistic', c) FROM c$$),
('scalar subquery', $$SELECT (SELECT max(hb_predict('binary_logistic', t)) FROM bs t WHERE t.grp = g.grp) FROM (VALUES (0), (1), (2)) g(grp)$$),
('correlated model name', $$SELECT m, (SELECT sum(hb_predict(m, t)) FROM bs t) FROM unnest(ARRAY['binary_logistic', 'reg_squarederror', 'binary_logistic']) m$$),
('UNION ALL', $$SELECT hb_predict('binary_logistic', t) FROM bs t WHERE grp = 1 UNION ALL SELECT hb_predict('reg_squarederror', t) FROM bs t WHERE grp = 2$$),
('LIMIT', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t LIMIT 7$$),
('LIMIT OFFSET', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t LIMIT 100 OFFSET 5000$$),
('EXISTS', $$SELECT EXISTS (SELECT 1 FROM bs t WHERE hb_predict('binary_logistic', t) > 0.99)$$),
('ORDER BY a score DESC LIMIT', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 10$$),
('ORDER BY a score DESC LIMIT, ties', $$SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 500$$),
('ORDER BY a score DESC LIMIT 2, four ties and a lower row', $$SELECT id FROM bs_ties t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 2$$),
('ORDER BY a score DESC LIMIT 1, four ties and a lower row', $$SELECT id FROM bs_ties t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 1$$),
('ORDER BY a score ASC LIMIT', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t ORDER BY hb_predict('binary_logistic', t) LIMIT 25$$),
('ORDER BY a score DESC LIMIT OFFSET', $$SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 10 OFFSET 40$$),
('ORDER BY a score, id', $$SELECT id FROM bs t ORDER BY hb_predict('reg_squarederror', t) DESC, id LIMIT 50$$),
('ORDER BY a score NULLS LAST', $$SELECT k.id FROM bs_keys k LEFT JOIN bs t USING (id) ORDER BY hb_predict('binary_logistic', t) DESC NULLS LAST LIMIT 20$$),
('ORDER BY a score, outer join', $$SELECT k.id FROM bs_keys k LEFT JOIN bs t USING (id) ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 20$$),
('ORDER BY a ranking score', $$SELECT id FROM (SELECT id, amount AS bm25, age AS tf, balance AS idf, n_tx AS doc_len, risk AS pagerank, tenure AS freshness FROM bs) t ORDER BY hb_predict('rank_pairwise', t) DESC LIMIT 15$$),
('ORDER BY a score, whole table', $$SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, id$$),
('ORDER BY an expression of a score', $$SELECT id, -ln(hb_predict('binary_logistic', t)) FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 10$$),
('ORDER BY a score, its text beside it', $$SELECT id, hb_predict('reg_squarederror', t)::text FROM bs t ORDER BY hb_predict('reg_squarederror', t) DESC, id LIMIT 30$$),
('ORDER BY a score and a volatile key, its text beside it', $$SELECT id, hb_predict('reg_squarederror', t)::text FROM bs t ORDER BY hb_predict('reg_squarederror', t) DESC, 0 * random(), id LIMIT 30$$),
('ORDER BY LIMIT k above the rows', $$SELECT id FROM bs t WHERE id < 30 ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 100$$),
('ORDER BY LIMIT 0', $$SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 0$$),
('ORDER BY LIMIT NULL', $$SELECT count(*) FROM (SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT NULL) s$$),
('FETCH FIRST WITH TIES', $$SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC FETCH FIRST 3 ROWS WITH TIES$$),
('window over a score', $$SELECT id, rank() OVER (ORDER BY hb_predict('binary_logistic', t) DESC) FROM bs t WHERE grp = 1$$),
('DISTINCT scores', $$SELECT DISTINCT hb_predict('binary_logistic', t) FROM bs t$$),
('INSERT ... SELECT', $$WITH ins AS (SELECT id, hb_predict('binary_logistic', t) AS p FROM bs t) SELECT count(*), sum(p) FROM ins$$);

SELECT n, what, bs_same(q) FROM bs_case ORDER BY n;

-- The quals run in the planner's order, each only for the rows that passed
-- the ones before it, and the outputs' calls only for the rows that pass
-- them all, as row at a time: a costly qual after a scoring one, and an
-- output whose call fails on rows the scoring qual rejects, raise nothing.
-- The later calls are batched by a second node over the first one's rows.
CREATE FUNCTION bs_picky(i int) RETURNS boolean LANGUAGE plpgsql COST 1000 AS
$$ BEGIN IF i = 7 THEN RAISE EXCEPTION 'bs_picky saw %', i; END IF; RETURN true; END $$;
SELECT bs_same_error($$SELECT count(*) FROM bs t WHERE hb_predict('binary_logistic', t) > 2 AND bs_picky(id)$$);
SELECT bs_same_error($$SELECT sum(hb_predict('binary_logistic', CASE WHEN id = 7 THEN ARRAY[1.0] ELSE ARRAY[amount, age, balance, n_tx, risk, tenure] END)) FROM bs t WHERE hb_predict('reg_squarederror', t) > 1e9$$);
SELECT bs_same_error($$SELECT id, hb_predict('binary_logistic', CASE WHEN id = 7 THEN ARRAY[1.0] ELSE ARRAY[amount, age, balance, n_tx, risk, tenure] END) FROM bs t WHERE hb_predict('reg_squarederror', t) - CASE WHEN id = 7 THEN 1e9 ELSE 0 END > -1e8$$);
SELECT bs_same_error($$SELECT id FROM bs t WHERE hb_predict('reg_squarederror', t) > 1e9 AND hb_predict('binary_logistic', CASE WHEN id = 7 THEN ARRAY[1.0] ELSE ARRAY[amount, age, balance, n_tx, risk, tenure] END) > 0$$);
-- (the same output call over every row fails as it does row at a time)
SELECT bs_same_error($$SELECT id, hb_predict('binary_logistic', CASE WHEN id = 7 THEN ARRAY[1.0] ELSE ARRAY[amount, age, balance, n_tx, risk, tenure] END) FROM bs t WHERE hb_predict('reg_squarederror', t) > -1e9$$);
EXPLAIN (COSTS OFF) SELECT count(*) FROM bs t WHERE hb_predict('binary_logistic', t) > 2 AND bs_picky(id);
EXPLAIN (COSTS OFF) SELECT id, hb_predict('reg_squarederror', t) FROM bs t WHERE hb_predict('binary_logistic', t) > 0.5 AND grp = 1 AND hb_predict_class('multi_softprob', t) = 2;
-- the later node prunes for top-K as usual
EXPLAIN (COSTS OFF) SELECT id FROM bs t WHERE hb_predict_class('binary_logistic', t) = 1 ORDER BY hb_predict('reg_squarederror', t) DESC LIMIT 10;
DROP FUNCTION bs_picky(int);
-- a scoring aggregate over partitions whose scans the planner expects to
-- return one row each: its rows are batched by the second node of each
-- partition (the first left them for it; it failed with "aggregate_dummy")
CREATE TABLE bs_small (LIKE bs) PARTITION BY LIST (grp);
CREATE TABLE bs_small0 PARTITION OF bs_small FOR VALUES IN (0);
CREATE TABLE bs_small1 PARTITION OF bs_small FOR VALUES IN (1);
CREATE TABLE bs_small2 PARTITION OF bs_small FOR VALUES IN (2);
CREATE TABLE bs_small3 PARTITION OF bs_small FOR VALUES IN (3);
INSERT INTO bs_small SELECT * FROM bs WHERE id <= 8;
ANALYZE bs_small;
SELECT bs_same($$SELECT hb_predict_agg('reg_squarederror', t) FROM bs_small t WHERE amount < 5 AND hb_predict('binary_logistic', t) > 0.1$$);
DROP TABLE bs_small;

-- Row-level security: a policy that scores runs before the user's own
-- quals (PostgreSQL's rule for quals that are not leakproof), batched or not:
-- the user's function sees only the rows the policy lets through.
CREATE TABLE bs_rls AS SELECT * FROM bs WHERE id <= 400;
CREATE TABLE bs_rls_seen (batched boolean, id int);
CREATE FUNCTION bs_rls_peek(i int) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS
$$ BEGIN INSERT INTO bs_rls_seen VALUES (current_setting('hbird.batch_scan')::boolean, i); RETURN true; END $$;
CREATE ROLE regress_bs_rls;
GRANT SELECT ON bs_rls TO regress_bs_rls;
GRANT INSERT ON bs_rls_seen TO regress_bs_rls;
SELECT hb_model_grant('binary_logistic', 'regress_bs_rls');
ALTER TABLE bs_rls ENABLE ROW LEVEL SECURITY;
CREATE POLICY bs_rls_p ON bs_rls FOR SELECT USING (hb_predict('binary_logistic', bs_rls) > 0.5);
SET ROLE regress_bs_rls;
SET hbird.batch_scan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM bs_rls WHERE bs_rls_peek(id);
SELECT count(*) FROM bs_rls WHERE bs_rls_peek(id);
SET hbird.batch_scan = off;
SELECT count(*) FROM bs_rls WHERE bs_rls_peek(id);
RESET hbird.batch_scan;
RESET ROLE;
SELECT batched, count(*), count(*) FILTER (WHERE hb_predict('binary_logistic', r) <= 0.5) AS hidden_rows_seen
FROM bs_rls_seen s JOIN bs_rls r USING (id) GROUP BY batched ORDER BY batched;
DROP TABLE bs_rls, bs_rls_seen;
DROP FUNCTION bs_rls_peek(int);
SELECT hb_model_revoke('binary_logistic', 'regress_bs_rls');
DROP ROLE regress_bs_rls;

-- cascades (hbird.cascade): the cheap model answers its confident rows in
-- both plans; a tuning planted by hand (hb_tune would choose its own)
INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed,
	sample_rows, eval_rows, approximation, approx_kind, approx_trees,
	approx_features, approx_params, threshold, accuracy, accuracy_bound,
	coverage, full_cost_us, approx_cost_us, expected_speedup, tuned_by)
VALUES ('binary_logistic', 1, 'cascade', 0, 0.02, 0.95, 0, 1000, 500, 'cheap', 'linear', 0,
	'{0,1,2}', '{0,0,0, 3,0,0, -1.3}', 0.5, 0.99, 0.98, 0.5, 1.0, 0.5, 2, current_user);
SET hbird.cascade = on;
SELECT what, bs_same(q) FROM (VALUES
	('cascade predict', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t$$),
	('cascade class', $$SELECT id, hb_predict_class('binary_logistic', t) FROM bs t$$),
	('cascade class filter', $$SELECT count(*) FROM bs t WHERE hb_predict_class('binary_logistic', t) = 1$$),
	('cascade array', $$SELECT id, hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure]) FROM bs t$$),
	('cascade top-K (no pruning)', $$SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 5$$),
	('cascade UPDATE', $$UPDATE bs_mod m SET p = hb_predict('binary_logistic', m), c = hb_predict_class('binary_logistic', m)$$),
	('cascade DELETE', $$DELETE FROM bs_mod m WHERE hb_predict_class('binary_logistic', m) = 1$$)) c(what, q);
DROP TABLE bs_mod;
-- (the cascade is in use: its answers differ from the full model's)
CREATE TEMP TABLE bs_casc AS SELECT id, hb_predict('binary_logistic', t) AS p FROM bs t;
RESET hbird.cascade;
SELECT count(*) FILTER (WHERE c.p IS DISTINCT FROM hb_predict('binary_logistic', t)) > 0 AS cascade_used
FROM bs_casc c JOIN bs t USING (id);
SET hbird.cascade = on;
RESET hbird.cascade;
DELETE FROM hbird.tuning WHERE name = 'binary_logistic' AND kind = 'cascade';

-- INSERT ... SELECT writes the same rows
CREATE TABLE bs_out (id integer, p float8, c integer);
SET hbird.batch_scan = on;
INSERT INTO bs_out SELECT id, hb_predict('binary_logistic', t), hb_predict_class('multi_softprob', t) FROM bs t;
SET hbird.batch_scan = off;
INSERT INTO bs_out SELECT -id, hb_predict('binary_logistic', t), hb_predict_class('multi_softprob', t) FROM bs t;
RESET hbird.batch_scan;
SELECT count(*) AS rows, count(*) FILTER (WHERE a.p IS DISTINCT FROM b.p OR a.c IS DISTINCT FROM b.c) AS differ
FROM bs_out a JOIN bs_out b ON b.id = -a.id WHERE a.id > 0;
DROP TABLE bs_out;

-- UPDATE and DELETE score in batches too, where the statement locks no rows
-- of other relations: the table ends as it does row at a time (bs_run
-- runs them on a fresh bs_mod)
SELECT bs_run('DELETE FROM bs_mod WHERE false', true) LIKE '20000 rows, %' AS made;
CREATE FUNCTION bs_seen() RETURNS integer
LANGUAGE sql VOLATILE AS $$SELECT count(*)::integer FROM bs_mod WHERE p IS NOT NULL$$;
EXPLAIN (COSTS OFF) UPDATE bs_mod m SET p = hb_predict('binary_logistic', m);
EXPLAIN (COSTS OFF) DELETE FROM bs_mod m WHERE hb_predict('binary_logistic', m) > 0.5;
SELECT what, bs_same(q) FROM (VALUES
	('UPDATE SET', $$UPDATE bs_mod m SET p = hb_predict('binary_logistic', m), c = hb_predict_class('multi_softprob', m)$$),
	('UPDATE SET a feature and its score', $$UPDATE bs_mod m SET amount = coalesce(amount, 0) + 1, p = hb_predict('binary_logistic', m)$$),
	('UPDATE WHERE on a class', $$UPDATE bs_mod m SET c = 7 WHERE hb_predict_class('multi_softprob', m) = 1$$),
	('UPDATE RETURNING', $$UPDATE bs_mod m SET p = hb_predict('binary_logistic', m) WHERE grp = 2 RETURNING id, p, hb_predict('reg_squarederror', m)$$),
	('DELETE WHERE', $$DELETE FROM bs_mod m WHERE hb_predict('binary_logistic', m) > 0.5$$),
	('DELETE RETURNING', $$DELETE FROM bs_mod m WHERE hb_predict_class('multi_softprob', m) = 2 RETURNING id, hb_predict('binary_logistic', m)$$),
	('UPDATE FROM (rows of another table locked: row at a time)',
	 $$UPDATE bs_mod m SET p = hb_predict('binary_logistic', m) FROM bs_keys k WHERE k.id = m.id$$),
	-- a volatile function sees the rows the statement changed before its
	-- row (here: how many are scored so far), so such a statement stays row
	-- at a time: batched, a batch's call arguments would be evaluated before
	-- its rows are changed (in this one, the score would differ)
	('DELETE with a volatile qual (row at a time)',
	 $$DELETE FROM bs_mod m WHERE hb_predict('binary_logistic', m) > 0.5 AND random() >= 0$$),
	('UPDATE calling a volatile function (row at a time)',
	 $$UPDATE bs_mod m SET p = hb_predict('binary_logistic', ARRAY[bs_seen() / 100.0, age, balance, n_tx, risk, tenure]::float8[]),
							   c = bs_seen() WHERE id <= 300$$)) c(what, q);
SELECT count(DISTINCT c) > 100 AS seen_grows FROM bs_mod WHERE id <= 300;
DROP FUNCTION bs_seen();
DROP TABLE bs_mod;

-- pipelines: text and categorical inputs bound by name, the sparse scorer
\set pl :abs_srcdir '/fixtures/pipelines/'
CREATE TABLE bs_pl (id integer, age float8, income numeric, city text, plan integer, review text);
\set csv `cat :pl/rows.csv`
INSERT INTO bs_pl
SELECT NULLIF(a[1], '')::integer, NULLIF(a[2], '')::float8, NULLIF(a[3], '')::numeric,
	   NULLIF(a[4], ''), NULLIF(a[5], '')::integer, NULLIF(a[6], '')
FROM unnest((regexp_split_to_array(rtrim(:'csv', E'\n'), E'\n'))[2:]) AS l(line),
	 LATERAL string_to_array(l.line, ',') AS a;
INSERT INTO bs_pl SELECT id + 1000 * g, age, income, city, plan, review FROM bs_pl, generate_series(1, 20) g;
ANALYZE bs_pl;
\set m `cat :pl/logreg_tfidf.json`
SELECT hb_model_upload('bs_logreg', :'m') AS v;
\set m `cat :pl/rf_hashing.json`
SELECT hb_model_upload('bs_rf', :'m') AS v;
\set m `cat :pl/xgb_onehot.json`
SELECT hb_model_upload('bs_xgb', :'m') AS v;
SELECT what, bs_same(q) FROM (VALUES
	('sparse linear', $$SELECT id, hb_predict('bs_logreg', r), hb_predict_proba('bs_logreg', r), hb_predict_margin('bs_logreg', r) FROM bs_pl r$$),
	('sparse linear, class', $$SELECT id, hb_predict_class('bs_logreg', r) FROM bs_pl r$$),
	('hashed text forest', $$SELECT id, hb_predict('bs_rf', r), hb_predict_class('bs_rf', r) FROM bs_pl r$$),
	('one-hot trees', $$SELECT id, hb_predict('bs_xgb', r) FROM bs_pl r$$),
	('top-K over text', $$SELECT id FROM bs_pl r ORDER BY hb_predict('bs_xgb', r) DESC LIMIT 7$$),
	('top-K sparse linear', $$SELECT id FROM bs_pl r ORDER BY hb_predict('bs_logreg', r) DESC LIMIT 7$$)) c(what, q);
-- long texts stored compressed: a row's detoasted text is freed as soon as
-- the row is featurized (batches are sized by hbird.batch_memory from what
-- they keep, which is not the texts), so memory stays flat; when the texts
-- were kept to the end of their batch, the aggregate below grew by 49 MB
-- and the top-K by 17 MB
CREATE TABLE bs_long AS
SELECT id, age, income, city, plan, left(repeat(coalesce(review, 'none') || ' ', 100000), 200000) AS review
FROM (SELECT * FROM bs_pl ORDER BY id LIMIT 600) p;
SELECT max(pg_column_size(review)) < 40000 AS compressed, min(octet_length(review)) = 200000 AS long,
	   count(*) AS n FROM bs_long;
CREATE FUNCTION bs_mem() RETURNS bigint LANGUAGE sql VOLATILE AS
$$ SELECT sum(used_bytes)::bigint FROM pg_backend_memory_contexts $$;
SELECT (SELECT bs_mem()) AS before \gset
SELECT max(bs_mem()) - :before < 8 * 1024 * 1024 AS flat, count(*) AS n,
	   count(*) FILTER (WHERE hb_predict('bs_rf', r) > 0.5) > 0 AS some_positive
FROM bs_long r;
SELECT max(m) - :before < 8 * 1024 * 1024 AS flat_topk, count(*) AS n
FROM (SELECT id, bs_mem() AS m FROM bs_long r ORDER BY hb_predict('bs_rf', r) DESC LIMIT 3) q;
SELECT bs_batched($$SELECT count(*) FILTER (WHERE hb_predict('bs_rf', r) > 0.5), max(bs_mem()) FROM bs_long r$$) AS batched,
	   bs_batched($$SELECT id, bs_mem() FROM bs_long r ORDER BY hb_predict('bs_rf', r) DESC LIMIT 3$$) AS batched_topk;
-- hb_tune reads its sample's texts after featurizing them (its timing
-- sample): it keeps them until then (it read freed memory)
SET client_min_messages = warning;
SELECT count(*) > 0 AS tuned FROM hb_tune('bs_rf', 'SELECT * FROM bs_long', kind => 'cascade', target => 0.05);
RESET client_min_messages;
SELECT hb_tune_drop('bs_rf') IS NOT NULL AS dropped;
DROP FUNCTION bs_mem();
DROP TABLE bs_long;

-- partitions: each partition's scan batches, rows bound as the parent
CREATE TABLE bs_part (id integer, grp integer, amount float8, age float8, balance float8,
					  n_tx float8, risk float8, tenure float8) PARTITION BY LIST (grp);
CREATE TABLE bs_part_0 PARTITION OF bs_part FOR VALUES IN (0, 1);
CREATE TABLE bs_part_1 (tenure float8, risk float8, n_tx float8, grp integer, id integer,
						balance float8, age float8, amount float8);
ALTER TABLE bs_part ATTACH PARTITION bs_part_1 FOR VALUES IN (2, 3);
INSERT INTO bs_part SELECT id, grp, amount, age, balance, n_tx, risk, tenure FROM bs;
ANALYZE bs_part;
EXPLAIN (COSTS OFF) SELECT sum(hb_predict('binary_logistic', p)) FROM bs_part p;
SELECT what, bs_same(q) FROM (VALUES
	('partitions', $$SELECT id, hb_predict('binary_logistic', p) FROM bs_part p$$),
	('partitions, sum', $$SELECT sum(hb_predict('binary_logistic', p)) FROM bs_part p$$),
	('partitions, top-K', $$SELECT id FROM bs_part p ORDER BY hb_predict('binary_logistic', p) DESC LIMIT 12$$)) c(what, q);
-- an UPDATE of the partitioned table, rows moving between partitions by
-- their score, as row at a time (the same statement on two copies)
CREATE TABLE bs_part_b (LIKE bs_part) PARTITION BY LIST (grp);
CREATE TABLE bs_part_b0 PARTITION OF bs_part_b FOR VALUES IN (0, 1);
CREATE TABLE bs_part_b1 PARTITION OF bs_part_b FOR VALUES IN (2, 3);
CREATE TABLE bs_part_a (LIKE bs_part) PARTITION BY LIST (grp);
CREATE TABLE bs_part_a0 PARTITION OF bs_part_a FOR VALUES IN (0, 1);
CREATE TABLE bs_part_a1 PARTITION OF bs_part_a FOR VALUES IN (2, 3);
INSERT INTO bs_part_a SELECT * FROM bs_part;
INSERT INTO bs_part_b SELECT * FROM bs_part;
EXPLAIN (COSTS OFF)
UPDATE bs_part_a p SET grp = CASE WHEN hb_predict('binary_logistic', p) > 0.5 THEN 0 ELSE 3 END,
	tenure = hb_predict('binary_logistic', p);
UPDATE bs_part_a p SET grp = CASE WHEN hb_predict('binary_logistic', p) > 0.5 THEN 0 ELSE 3 END,
	tenure = hb_predict('binary_logistic', p);
SET hbird.batch_scan = off;
UPDATE bs_part_b p SET grp = CASE WHEN hb_predict('binary_logistic', p) > 0.5 THEN 0 ELSE 3 END,
	tenure = hb_predict('binary_logistic', p);
RESET hbird.batch_scan;
SELECT (SELECT count(*) FROM bs_part_a0) AS part0, (SELECT count(*) FROM bs_part_a1) AS part1,
	   (SELECT count(*) FROM bs_part_a0) <> (SELECT count(*) FROM bs_part WHERE grp IN (0, 1)) AS moved,
	   (SELECT md5(string_agg(a::text, ',' ORDER BY id)) FROM bs_part_a0 a) =
	   (SELECT md5(string_agg(b::text, ',' ORDER BY id)) FROM bs_part_b0 b) AND
	   (SELECT md5(string_agg(a::text, ',' ORDER BY id)) FROM bs_part_a1 a) =
	   (SELECT md5(string_agg(b::text, ',' ORDER BY id)) FROM bs_part_b1 b) AS same;
DROP TABLE bs_part_a, bs_part_b;
-- and of a table with an inheritance child (the rows of both, under one
-- node over their Append)
CREATE TABLE bs_inh_a AS SELECT id, amount, age, balance, n_tx, risk, tenure, NULL::float8 AS p FROM bs WHERE id <= 10000;
CREATE TABLE bs_inh_a1 (extra integer) INHERITS (bs_inh_a);
INSERT INTO bs_inh_a1 SELECT id, amount, age, balance, n_tx, risk, tenure, NULL, id % 3 FROM bs WHERE id > 10000;
CREATE TABLE bs_inh_b AS SELECT * FROM ONLY bs_inh_a;
CREATE TABLE bs_inh_b1 (extra integer) INHERITS (bs_inh_b);
INSERT INTO bs_inh_b1 SELECT * FROM bs_inh_a1;
SELECT bs_batched($$UPDATE bs_inh_a i SET p = hb_predict('binary_logistic', i)$$) AS batched;
UPDATE bs_inh_a i SET p = hb_predict('binary_logistic', i);
SET hbird.batch_scan = off;
UPDATE bs_inh_b i SET p = hb_predict('binary_logistic', i);
RESET hbird.batch_scan;
SELECT (SELECT count(*) FROM bs_inh_a WHERE p IS NOT NULL) AS scored,
	   (SELECT md5(string_agg(a::text, ',' ORDER BY id)) FROM bs_inh_a1 a) =
	   (SELECT md5(string_agg(b::text, ',' ORDER BY id)) FROM bs_inh_b1 b) AND
	   (SELECT md5(string_agg(a::text, ',' ORDER BY id)) FROM ONLY bs_inh_a a) =
	   (SELECT md5(string_agg(b::text, ',' ORDER BY id)) FROM ONLY bs_inh_b b) AS same;
DROP TABLE bs_inh_a, bs_inh_b CASCADE;

-- top-K's values beside the score come from the tuple kept for them,
-- deformed only for the rows handed up: fixed-width ones, one after a text
-- column, a text one, with NULLs among them and among the features
CREATE TABLE bs_direct AS
SELECT CASE WHEN id % 5 = 0 THEN NULL ELSE (id % 300)::int2 END AS flag, *,
	   CASE WHEN id % 3 = 0 THEN NULL ELSE 'n' || id END AS note, id::int8 * 2 AS id2
FROM bs;
ANALYZE bs_direct;
SELECT what, bs_same(q) FROM (VALUES
	('top-K, fixed-width values beside it', $$SELECT id, flag FROM bs_direct t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 40$$),
	('top-K, a value after a text column', $$SELECT id, id2 FROM bs_direct t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 40$$),
	('top-K, a text value beside it', $$SELECT id, note, flag FROM bs_direct t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 40$$)) c(what, q);
DROP TABLE bs_direct;

-- row goals: LIMIT 1 scores one row, not a batch
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT hb_predict('binary_logistic', t) FROM bs t LIMIT 1;
-- top-K prunes (rows before the 2k-th are always scored); pruned rows are
-- not handed up to the sort
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 3;
-- unless the node evaluates something volatile for them (a sort key below
-- the sort): then every row goes up (a pruned one with -Infinity), and the
-- function runs as often as row at a time
CREATE SEQUENCE bs_seq;
SELECT array_agg(id) AS ids, currval('bs_seq') AS evaluated
FROM (SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, nextval('bs_seq') LIMIT 3) q;
SELECT setval('bs_seq', 1, false);
SET hbird.batch_scan = off;
SELECT array_agg(id) AS ids, currval('bs_seq') AS evaluated
FROM (SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, nextval('bs_seq') LIMIT 3) q;
RESET hbird.batch_scan;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, nextval('bs_seq') LIMIT 3;
DROP SEQUENCE bs_seq;

-- cursors: forward in pieces, scrollable with backward fetches
BEGIN;
SET LOCAL hbird.batch_scan = on;
DECLARE c_on SCROLL CURSOR FOR SELECT id, hb_predict('binary_logistic', t) FROM bs t WHERE id <= 300;
DECLARE c_fwd CURSOR FOR SELECT id, hb_predict('binary_logistic', t) FROM bs t WHERE id <= 300;
SET LOCAL hbird.batch_scan = off;
DECLARE c_off SCROLL CURSOR FOR SELECT id, hb_predict('binary_logistic', t) FROM bs t WHERE id <= 300;
CREATE TEMP TABLE fetched (which text, step int, r text);
CREATE FUNCTION bs_fetch(cur text, which text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	dir text;
	s int := 0;
	x record;
BEGIN
	FOREACH dir IN ARRAY ARRAY['FORWARD 10', 'FORWARD 1', 'BACKWARD 5', 'ABSOLUTE 200', 'RELATIVE -3',
							   'FORWARD 150', 'BACKWARD ALL', 'FORWARD 2', 'LAST', 'PRIOR'] LOOP
		s := s + 1;
		FOR x IN EXECUTE format('FETCH %s FROM %I', dir, cur) LOOP
			INSERT INTO fetched VALUES (which, s, x::text);
		END LOOP;
	END LOOP;
END $$;
SELECT bs_fetch('c_on', 'on'), bs_fetch('c_off', 'off');
SELECT (SELECT array_agg(r ORDER BY step, ctid) FROM fetched WHERE which = 'on') =
	   (SELECT array_agg(r ORDER BY step, ctid) FROM fetched WHERE which = 'off') AS scroll_same,
	   (SELECT count(*) FROM fetched WHERE which = 'on') AS fetched;
FETCH 3 FROM c_fwd;
FETCH 2 FROM c_fwd;
COMMIT;

-- prepared statements, generic plans with parameters for the model and k
SET plan_cache_mode = force_generic_plan;
PREPARE bs_top(text, int) AS SELECT id FROM bs t ORDER BY hb_predict($1, t) DESC LIMIT $2;
PREPARE bs_sum(text) AS SELECT sum(hb_predict($1, t)) FROM bs t;
EXPLAIN (COSTS OFF) EXECUTE bs_top('binary_logistic', 5);
EXPLAIN (COSTS OFF) EXECUTE bs_sum('binary_logistic');
RESET plan_cache_mode;
DEALLOCATE bs_top;
DEALLOCATE bs_sum;
-- (EXECUTE is not a subquery: compare through PL/pgSQL instead)
CREATE FUNCTION bs_prepared(batch boolean) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	a text;
	b text;
BEGIN
	PERFORM set_config('hbird.batch_scan', batch::text, true);
	PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
	EXECUTE 'SELECT string_agg(id::text, '','') FROM (SELECT id FROM bs t ORDER BY hb_predict($1, t) DESC LIMIT $2) s'
		INTO a USING 'binary_logistic', 9;
	EXECUTE 'SELECT sum(hb_predict($1, t))::text FROM bs t' INTO b USING 'reg_squarederror';
	RETURN a || ' / ' || b;
END $$;
SELECT bs_prepared(true) = bs_prepared(false) AS prepared_same;

-- PL/pgSQL: a loop over a query, and simple expressions
CREATE FUNCTION bs_plpgsql(batch boolean) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
	r record;
	s float8 := 0;
BEGIN
	PERFORM set_config('hbird.batch_scan', batch::text, true);
	FOR r IN SELECT t AS row, hb_predict('binary_logistic', t) AS p FROM bs t WHERE grp = 1 LOOP
		s := s + r.p - hb_predict('binary_logistic', r.row);
	END LOOP;
	RETURN s;
END $$;
SELECT bs_plpgsql(true) AS loop_diff, bs_plpgsql(true) = bs_plpgsql(false) AS plpgsql_same;

-- forced parallel plans: every worker batches its share
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET force_parallel_mode = on;
EXPLAIN (COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM bs t;
SELECT what, bs_same(q) FROM (VALUES
	('parallel sum', $$SELECT sum(hb_predict('binary_logistic', t)), count(*) FROM bs t$$),
	('parallel rows', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t ORDER BY id$$),
	('parallel top-K', $$SELECT id, hb_predict('binary_logistic', t) FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, id LIMIT 20$$),
	('parallel top-K by score, ctid', $$SELECT id, ctid FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 20$$),
	('parallel filter', $$SELECT count(*) FROM bs t WHERE hb_predict_class('binary_logistic', t) = 1$$)) c(what, q);
-- a LIMIT the node cannot evaluate again as the Limit does gives it no k:
-- a parallel-restricted function (it would run in the workers) and a
-- volatile one (the node would get another k than the Limit: 5 rows
-- pruned against while the Limit asks for 60, and nextval called twice)
CREATE TEMP TABLE bs_kt (n int);
INSERT INTO bs_kt VALUES (4);
CREATE FUNCTION pg_temp.bs_k() RETURNS int LANGUAGE sql STABLE PARALLEL RESTRICTED AS 'SELECT n FROM bs_kt';
SET parallel_leader_participation = off;	-- the workers score every row
EXPLAIN (COSTS OFF) SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, id LIMIT pg_temp.bs_k();
SELECT string_agg(id::text, ',') = (SELECT string_agg(id::text, ',') FROM (SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, id LIMIT 4) q) AS restricted_limit_same
FROM (SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, id LIMIT pg_temp.bs_k()) q;
RESET parallel_leader_participation;
RESET force_parallel_mode;
CREATE SEQUENCE bs_k START 60 INCREMENT -55 MINVALUE -1000 MAXVALUE 1000;
EXPLAIN (COSTS OFF) SELECT id FROM bs t ORDER BY hb_predict('reg_squarederror', t) DESC, id LIMIT nextval('bs_k');
SELECT count(*) AS n, string_agg(id::text, ',') = (SELECT string_agg(id::text, ',') FROM (SELECT id FROM bs t ORDER BY hb_predict('reg_squarederror', t) DESC, id LIMIT 60) q) AS volatile_limit_same
FROM (SELECT id FROM bs t ORDER BY hb_predict('reg_squarederror', t) DESC, id LIMIT nextval('bs_k')) q;
SELECT last_value AS limit_evaluated_once FROM bs_k;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- ctid and tableoid of the scanned table come from its tuples' identity:
-- the scan under the node hands up its own tuples (no ctid among its
-- outputs, so it does not project); with a dropped column the scan projects
-- anyway, and ctid is one of its outputs as before
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id, ctid FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 3;
CREATE TABLE bs_drop AS SELECT id, 0 AS junk, amount, age, balance, n_tx, risk, tenure FROM bs;
ALTER TABLE bs_drop DROP COLUMN junk;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id, ctid FROM bs_drop t ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 3;
CREATE INDEX bs_id ON bs (id);
SELECT what, bs_same(q) FROM (VALUES
	('ctid and tableoid', $$SELECT id, ctid, tableoid::regclass, hb_predict('binary_logistic', t) FROM bs t$$),
	('top-K by score, ctid', $$SELECT id, ctid FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 25$$),
	('top-K ascending, ctid descending', $$SELECT id, ctid FROM bs t ORDER BY hb_predict('binary_logistic', t), ctid DESC LIMIT 25$$),
	('ctid in the scored qual', $$SELECT id, ctid::text FROM bs t WHERE hb_predict('binary_logistic', t) > ((ctid::text)::point)[1] / 40$$),
	('partitions, tableoid and ctid', $$SELECT id, tableoid::regclass, ctid FROM bs_part p ORDER BY hb_predict('binary_logistic', p) DESC, tableoid, ctid LIMIT 12$$),
	('dropped column, ctid', $$SELECT id, ctid FROM bs_drop t ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 9$$)) c(what, q);
-- an index scan's tuples, and a bitmap heap scan's
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF)
SELECT id, ctid FROM bs t WHERE id < 3000 ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 15;
SELECT bs_batched($$SELECT id, ctid, hb_predict('binary_logistic', t) FROM bs t WHERE id < 3000$$) AS batched,
	   bs_same($$SELECT id, ctid, hb_predict('binary_logistic', t) FROM bs t WHERE id < 3000 ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 15$$) AS index_scan;
RESET enable_bitmapscan;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF)
SELECT id, ctid FROM bs t WHERE id < 3000 ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 15;
SELECT bs_same($$SELECT id, ctid, hb_predict('binary_logistic', t) FROM bs t WHERE id < 3000 ORDER BY hb_predict('binary_logistic', t) DESC, ctid LIMIT 15$$) AS bitmap_scan;
RESET enable_indexscan;
RESET enable_seqscan;
DROP INDEX bs_id;
DROP TABLE bs_drop;

-- the same errors, SQLSTATE and message
CREATE TABLE bs_wrong (id integer, amount text, age float8, balance float8, n_tx float8, risk float8, tenure float8);
INSERT INTO bs_wrong SELECT g, 'x', 1, 1, 1, 1, 1 FROM generate_series(1, 50) g;
CREATE TABLE bs_short AS SELECT id, amount, age FROM bs;
CREATE ROLE regress_bs_nobody;
GRANT SELECT ON bs TO regress_bs_nobody;
SELECT what, bs_same_error(q) FROM (VALUES
	('unknown model', $$SELECT hb_predict('bs_nosuch', t) FROM bs t$$),
	('NULL model name', $$SELECT hb_predict(NULL, t) FROM bs t$$),
	('missing column', $$SELECT hb_predict('binary_logistic', t) FROM bs_short t$$),
	('mistyped column', $$SELECT hb_predict('binary_logistic', t) FROM bs_wrong t$$),
	('proba of a regression', $$SELECT hb_predict_proba('reg_squarederror', t) FROM bs t$$),
	('class of a regression', $$SELECT hb_predict_class('reg_squarederror', t) FROM bs t$$),
	('array of the wrong length', $$SELECT hb_predict('binary_logistic', ARRAY[amount, age]) FROM bs t$$),
	('array with two dimensions', $$SELECT hb_predict('binary_logistic', ARRAY[[amount, age, balance], [n_tx, risk, tenure]]) FROM bs t$$),
	('empty table, unknown model', $$SELECT hb_predict('bs_nosuch', t) FROM bs t WHERE false$$)) c(what, q);
SET ROLE regress_bs_nobody;
SELECT bs_error($$SELECT hb_predict('binary_logistic', t) FROM bs t$$, true) =
	   bs_error($$SELECT hb_predict('binary_logistic', t) FROM bs t$$, false) AS privilege_same,
	   bs_error($$SELECT hb_predict('binary_logistic', t) FROM bs t$$, true) AS privilege_error;
RESET ROLE;
-- the right to execute the function itself: with the model granted but
-- EXECUTE on hb_predict (record) and hb_predict_class revoked, every form is
-- refused, batched as row at a time (the node checks what ExecInitFunc would)
SELECT hb_model_grant('binary_logistic', 'regress_bs_nobody');
REVOKE EXECUTE ON FUNCTION hb_predict(text, record), hb_predict_class(text, record),
	hb_predict_proba(text, record) FROM PUBLIC;
SET ROLE regress_bs_nobody;
SELECT what, bs_same_error(q) FROM (VALUES
	('target list', $$SELECT hb_predict('binary_logistic', t) FROM bs t$$),
	('sum', $$SELECT sum(hb_predict('binary_logistic', t)) FROM bs t$$),
	('top-K', $$SELECT id FROM bs t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 3$$),
	('WHERE on a class', $$SELECT count(*) FROM bs t WHERE hb_predict_class('binary_logistic', t) = 1$$),
	('probabilities', $$SELECT hb_predict_proba('binary_logistic', t) FROM bs t$$),
	('over another scoring node', $$SELECT hb_predict_proba('binary_logistic', t) FROM bs t WHERE hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure]) > 0.5$$)) c(what, q);
-- the array form is still granted
SELECT bs_same(q) FROM (VALUES ($$SELECT sum(hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure])) FROM bs t$$)) c(q);
RESET ROLE;
GRANT EXECUTE ON FUNCTION hb_predict(text, record), hb_predict_class(text, record),
	hb_predict_proba(text, record) TO PUBLIC;
SELECT hb_model_revoke('binary_logistic', 'regress_bs_nobody');
REVOKE ALL ON bs FROM regress_bs_nobody;
DROP ROLE regress_bs_nobody;

SELECT hb_model_drop('bs_logreg'), hb_model_drop('bs_rf'), hb_model_drop('bs_xgb');
DROP TABLE bs_pl, bs_part, bs_wrong, bs_short, bs_keys, bs_ties, bs_types, bs;
DROP FUNCTION bs_same(text), bs_run(text, boolean), bs_batched(text), bs_error(text, boolean),
	bs_same_error(text), bs_fetch(text, text), bs_prepared(boolean), bs_plpgsql(boolean);
