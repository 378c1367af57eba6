-- Scoring on shards (docs/scale-out.md), as the planner writes it: plans
-- over foreign tables of servers that list hbird in their extensions
-- option (EXPLAIN without ANALYZE only plans: the servers are never
-- reached), and the pinned calls evaluated here, row at a time and in
-- batches, against the plain calls.  test/sql_shell/scaleout.sh runs the
-- same shapes on real shards.
-- the planner hook is installed when hbird's library loads
LOAD 'hbird';
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS postgres_fdw;
RESET client_min_messages;
CREATE SERVER pd_shard1 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host 'shard1.invalid', dbname 'x', extensions 'hbird', async_capable 'true');
CREATE SERVER pd_shard2 FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host 'shard2.invalid', dbname 'x', extensions 'postgres_fdw, hbird', async_capable 'true');
CREATE SERVER pd_plain FOREIGN DATA WRAPPER postgres_fdw
	OPTIONS (host 'plain.invalid', dbname 'x');
CREATE USER MAPPING FOR CURRENT_USER SERVER pd_shard1;
CREATE USER MAPPING FOR CURRENT_USER SERVER pd_shard2;
CREATE USER MAPPING FOR CURRENT_USER SERVER pd_plain;
CREATE TABLE pd_dist (id integer, grp integer, amount float8, age float8, balance float8,
					  n_tx float8, risk float8, tenure float8) PARTITION BY HASH (id);
CREATE FOREIGN TABLE pd_p1 PARTITION OF pd_dist FOR VALUES WITH (modulus 2, remainder 0)
	SERVER pd_shard1 OPTIONS (table_name 't');
CREATE FOREIGN TABLE pd_p2 PARTITION OF pd_dist FOR VALUES WITH (modulus 2, remainder 1)
	SERVER pd_shard2 OPTIONS (table_name 't');
CREATE FOREIGN TABLE pd_ft (id integer, grp integer, amount float8, age float8, balance float8,
							n_tx float8, risk float8, tenure float8)
	SERVER pd_shard1 OPTIONS (table_name 't');
CREATE FOREIGN TABLE pd_plain_ft (id integer, grp integer, amount float8, age float8, balance float8,
								  n_tx float8, risk float8, tenure float8)
	SERVER pd_plain OPTIONS (table_name 't');
-- one local partition, one on a shard
CREATE TABLE pd_mixed (id integer, grp integer, amount float8, age float8, balance float8,
					   n_tx float8, risk float8, tenure float8) PARTITION BY LIST (grp);
CREATE TABLE pd_m_local PARTITION OF pd_mixed FOR VALUES IN (1);
CREATE FOREIGN TABLE pd_m_remote PARTITION OF pd_mixed FOR VALUES IN (2)
	SERVER pd_shard2 OPTIONS (table_name 't');
INSERT INTO pd_m_local SELECT id, 1, amount, age, balance, n_tx, risk, tenure
FROM binary_logistic_in WHERE id <= 20;

-- aggregates: one pushed-down aggregate per partition, combined here
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM pd_dist t;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT grp, avg(hb_predict('binary_logistic', t)), count(*), max(hb_predict_class('binary_logistic', t))
FROM pd_dist t GROUP BY grp HAVING count(*) > 1 ORDER BY grp;
-- a filter: shipped as it is, partitions as PostgreSQL expands them
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM pd_dist t WHERE hb_predict('binary_logistic', t) > 0.9;
-- top-K: each shard its own k + offset best, read at the same time
EXPLAIN (VERBOSE, COSTS OFF)
SELECT id, hb_predict('binary_logistic', t) FROM pd_dist t
ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 3 OFFSET 2;
-- the same in a CTE (a subplan of its own)
EXPLAIN (VERBOSE, COSTS OFF)
WITH y AS MATERIALIZED (SELECT id FROM pd_dist t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 3)
SELECT count(*) FROM y;
-- the array form, and the other kinds
EXPLAIN (VERBOSE, COSTS OFF)
SELECT sum(hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure])),
	   sum((hb_predict_proba('binary_logistic', t))[2]), sum((hb_predict_margin('binary_logistic', t))[1])
FROM pd_ft t;
-- one foreign table: postgres_fdw pushes the aggregate and the top-K itself
EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*) FROM pd_ft t WHERE hb_predict_class('binary_logistic', t) = 1;
EXPLAIN (VERBOSE, COSTS OFF) SELECT id FROM pd_ft t ORDER BY hb_predict('binary_logistic', t) LIMIT 4;
-- a local partition with a shard: the local part is scored here, in batches
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM pd_mixed t;

-- left as they are: a server that does not list hbird, hbird.pushdown off,
-- hbird.cascade on, a model that does not exist, a name that is not a constant
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM pd_plain_ft t;
SET hbird.pushdown = off;
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM pd_ft t;
RESET hbird.pushdown;
SET hbird.cascade = on;
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM pd_ft t;
RESET hbird.cascade;
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict('nosuch', t)) FROM pd_ft t;
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict(CASE WHEN id > 0 THEN 'binary_logistic' END, t)) FROM pd_ft t;
-- pinned, but not split: an aggregate that has no partial form, DISTINCT
EXPLAIN (VERBOSE, COSTS OFF) SELECT stddev(hb_predict('binary_logistic', t)) FROM pd_dist t;
EXPLAIN (VERBOSE, COSTS OFF) SELECT DISTINCT hb_predict_class('binary_logistic', t) FROM pd_dist t;

-- functions without arguments next to the calls (clock_timestamp(), now())
SELECT clock_timestamp() IS NOT NULL AS ts,
	   round(hb_predict('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6]::float8[])::numeric, 6) AS p;
EXPLAIN (VERBOSE, COSTS OFF)
SELECT count(*) FROM pd_ft t WHERE hb_predict('binary_logistic', t) > 0.5 AND now() IS NOT NULL;

-- a role that may not score the model: its calls are not pinned (and fail
-- when they run, with the usual message)
CREATE ROLE regress_pd_nobody;
GRANT SELECT ON pd_ft TO regress_pd_nobody;
CREATE USER MAPPING FOR regress_pd_nobody SERVER pd_shard1;
SET ROLE regress_pd_nobody;
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(hb_predict('binary_logistic', t)) FROM pd_ft t;
RESET ROLE;
DROP USER MAPPING FOR regress_pd_nobody SERVER pd_shard1;
REVOKE ALL ON pd_ft FROM regress_pd_nobody;
DROP ROLE regress_pd_nobody;

-- a role that may score the model but not execute hb_predict(text, record)
-- (REVOKE EXECUTE ... FROM PUBLIC): the call is not pinned either (the
-- pinned form is everyone's), and a generic plan pinned before the REVOKE
-- is made again after it
CREATE ROLE regress_pd_norun;
GRANT SELECT ON pd_ft TO regress_pd_norun;
CREATE USER MAPPING FOR regress_pd_norun SERVER pd_shard1;
SELECT hb_model_grant('binary_logistic', 'regress_pd_norun');
SET plan_cache_mode = force_generic_plan;
SET ROLE regress_pd_norun;
PREPARE pd_norun AS SELECT sum(hb_predict('binary_logistic', t)) FROM pd_ft t;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE pd_norun;
RESET ROLE;
BEGIN;
REVOKE EXECUTE ON FUNCTION hb_predict(text, record) FROM PUBLIC;
SET LOCAL ROLE regress_pd_norun;
-- planned again, the call stays on the coordinator, whose executor refuses
-- it (the plan made before would have shipped it: EXPLAIN would show it)
SAVEPOINT pd_s;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE pd_norun;
ROLLBACK TO pd_s;
EXPLAIN (VERBOSE, COSTS OFF) SELECT hb_predict('binary_logistic', t) FROM pd_ft t;
ROLLBACK;
DEALLOCATE pd_norun;
RESET plan_cache_mode;
SELECT hb_model_revoke('binary_logistic', 'regress_pd_norun');
DROP USER MAPPING FOR regress_pd_norun SERVER pd_shard1;
REVOKE ALL ON pd_ft FROM regress_pd_norun;
DROP ROLE regress_pd_norun;

-- The pinned calls where they run: the same answers as the plain calls,
-- row at a time and batched, whatever the order of the columns named.
CREATE TEMP TABLE pd_pin AS
SELECT version, sha256 FROM hb_models WHERE name = 'binary_logistic' AND active;
CREATE TEMP TABLE pd_pin_reg AS
SELECT version, sha256 FROM hb_models WHERE name = 'reg_squarederror' AND active;
CREATE FUNCTION pd_compare(batch boolean) RETURNS TABLE (form text, same bigint, rows bigint)
LANGUAGE plpgsql AS $$
DECLARE
	v integer := (SELECT version FROM pd_pin);
	h text := (SELECT sha256 FROM pd_pin);
	rv integer := (SELECT version FROM pd_pin_reg);
	rh text := (SELECT sha256 FROM pd_pin_reg);
BEGIN
	PERFORM set_config('hbird.batch_scan', batch::text, true);
	RETURN QUERY EXECUTE format($q$
		SELECT 'predict', count(*) FILTER (WHERE hb_predict_pinned('binary_logistic', %1$s, %2$L, 's1',
				'{tenure,risk,n_tx,balance,age,amount,id}', tenure, risk, n_tx, balance, age, amount, id)
				IS NOT DISTINCT FROM hb_predict('binary_logistic', t)), count(*)
		FROM binary_logistic_in t
		UNION ALL
		SELECT 'proba', count(*) FILTER (WHERE hb_predict_proba_pinned('binary_logistic', %1$s, %2$L, 's1',
				'{amount,age,balance,n_tx,risk,tenure}', amount, age, balance, n_tx, risk, tenure)
				IS NOT DISTINCT FROM hb_predict_proba('binary_logistic', t)), count(*)
		FROM binary_logistic_in t
		UNION ALL
		SELECT 'margin', count(*) FILTER (WHERE hb_predict_margin_pinned('binary_logistic', %1$s, %2$L, 's1',
				'{risk,tenure,amount,age,balance,n_tx}', risk, tenure, amount, age, balance, n_tx)
				IS NOT DISTINCT FROM hb_predict_margin('binary_logistic', t)), count(*)
		FROM binary_logistic_in t
		UNION ALL
		SELECT 'class', count(*) FILTER (WHERE hb_predict_class_pinned('binary_logistic', %1$s, %2$L, 's1',
				'{amount,age,balance,n_tx,risk,tenure}', amount, age, balance, n_tx, risk, tenure)
				IS NOT DISTINCT FROM hb_predict_class('binary_logistic', t)), count(*)
		FROM binary_logistic_in t
		UNION ALL
		SELECT 'targets', count(*) FILTER (WHERE hb_predict_targets_pinned('reg_squarederror', %3$s, %4$L, 's1',
				'{score,utilization,tenure,risk,n_tx,balance,age,amount}', score, utilization, tenure, risk,
				n_tx, balance, age, amount)
				IS NOT DISTINCT FROM hb_predict_targets('reg_squarederror', t)), count(*)
		FROM reg_squarederror_in t
		UNION ALL
		SELECT 'array', count(*) FILTER (WHERE hb_predict_pinned('binary_logistic', %1$s, %2$L, 's1', NULL,
				ARRAY[amount, age, balance, n_tx, risk, tenure])
				IS NOT DISTINCT FROM hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk, tenure])), count(*)
		FROM binary_logistic_in t
		UNION ALL
		SELECT 'expression', count(*) FILTER (WHERE hb_predict_pinned('binary_logistic', %1$s, %2$L, 's1',
				'{amount,age,balance,n_tx,risk,tenure}', amount * 1, age, coalesce(balance, 0), n_tx, risk, tenure)
				IS NOT DISTINCT FROM hb_predict('binary_logistic',
					ARRAY[amount, age, coalesce(balance, 0), n_tx, risk, tenure])), count(*)
		FROM binary_logistic_in t$q$, v, h, rv, rh);
END $$;
SELECT * FROM pd_compare(false);
SELECT * FROM pd_compare(true);
-- XGBoost's own predictions, through the pinned form in batches
SELECT count(*) FILTER (WHERE hbt_close(hb_predict_pinned('binary_logistic', p.version, p.sha256, '',
		'{amount,age,balance,n_tx,risk,tenure}', i.amount, i.age, i.balance, i.n_tx, i.risk, i.tenure), e.pred)) AS agree,
	   count(*) AS rows
FROM binary_logistic_in i JOIN binary_logistic_exp e USING (id), pd_pin p;
-- batched: the scan binds the named columns, pinned
EXPLAIN (COSTS OFF)
SELECT sum(hb_predict_pinned('binary_logistic', 1, 'x', 's1', '{amount,age,balance,n_tx,risk,tenure}',
		   amount, age, balance, n_tx, risk, tenure)) FROM binary_logistic_in;
-- the version is checked where the call runs, batched or not
SELECT hbt_try($$SELECT sum(hb_predict_pinned('binary_logistic', 1, 'x', 's1',
		'{amount,age,balance,n_tx,risk,tenure}', amount, age, balance, n_tx, risk, tenure)) FROM binary_logistic_in$$) AS batched;
SET hbird.batch_scan = off;
SELECT hbt_try($$SELECT sum(hb_predict_pinned('binary_logistic', 7, (SELECT sha256 FROM pd_pin), 'x',
		'{amount,age,balance,n_tx,risk,tenure}', amount, age, balance, n_tx, risk, tenure)) FROM binary_logistic_in$$) AS row_at_a_time;
RESET hbird.batch_scan;

DROP FUNCTION pd_compare(boolean);
DROP TABLE pd_dist, pd_mixed;
DROP FOREIGN TABLE pd_ft, pd_plain_ft;
DROP USER MAPPING FOR CURRENT_USER SERVER pd_shard1;
DROP USER MAPPING FOR CURRENT_USER SERVER pd_shard2;
DROP USER MAPPING FOR CURRENT_USER SERVER pd_plain;
DROP SERVER pd_shard1, pd_shard2, pd_plain;
DROP EXTENSION postgres_fdw;
