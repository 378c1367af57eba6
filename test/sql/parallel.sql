-- hb_predict is PARALLEL SAFE: a large scan scores in parallel workers,
-- with the same results as a serial scan.
-- the planner hook is installed when hbird's library loads: without
-- shared_preload_libraries, a session's first statement plans before that
LOAD 'hbird';
CREATE TABLE big AS
SELECT g AS id,
	   CASE WHEN g % 11 = 0 THEN NULL ELSE sin(g) END AS amount,
	   cos(g * 0.7) AS age,
	   CASE WHEN g % 7 = 0 THEN NULL ELSE sin(g * 1.3) * 2 END AS balance,
	   cos(g * 0.11) AS n_tx,
	   sin(g * 0.05) AS risk,
	   (g % 13) / 6.0 - 1 AS tenure
FROM generate_series(1, 50000) g;
ANALYZE big;

SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT sum(hb_predict('binary_logistic', b)) FROM big b;
-- (the batching scan's counters are the leader's share: left out)
CREATE FUNCTION par_explain(q text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	line text;
BEGIN
	FOR line IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		IF line !~ '(Batches|Rows Scored|Batch Size):' THEN
			RETURN NEXT line;
		END IF;
	END LOOP;
END $$;
SELECT par_explain($$SELECT sum(hb_predict('binary_logistic', b)) FROM big b$$);
CREATE TEMP TABLE par AS SELECT id, hb_predict('binary_logistic', b) AS p FROM big b;

SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE ser AS SELECT id, hb_predict('binary_logistic', b) AS p FROM big b;
SELECT count(*) AS rows, count(*) FILTER (WHERE par.p <> ser.p) AS differ
FROM par JOIN ser USING (id);

-- The workers score with the model their leader compiled, read from the
-- query's shared memory (hbird.share_plans, pg_scan_share.c; that they
-- compile nothing is test/sql_shell/stat_models_parallel.sh's check, which
-- needs the preload): with the leader scoring no row, with sharing off, and
-- with a limit the model does not fit, the scores are the serial ones.
SET max_parallel_workers_per_gather = 2;
SET parallel_leader_participation = off;
CREATE TEMP TABLE par_shared AS SELECT id, hb_predict('binary_logistic', b) AS p FROM big b;
SELECT count(*) AS rows, count(*) FILTER (WHERE par_shared.p <> ser.p) AS differ
FROM par_shared JOIN ser USING (id);
SET hbird.share_plans = off;
CREATE TEMP TABLE par_compiled AS SELECT id, hb_predict('binary_logistic', b) AS p FROM big b;
SELECT count(*) AS rows, count(*) FILTER (WHERE par_compiled.p <> ser.p) AS differ
FROM par_compiled JOIN ser USING (id);
RESET hbird.share_plans;
SET hbird.share_plans_max = '1kB';
CREATE TEMP TABLE par_capped AS SELECT id, hb_predict('binary_logistic', b) AS p FROM big b;
SELECT count(*) AS rows, count(*) FILTER (WHERE par_capped.p <> ser.p) AS differ
FROM par_capped JOIN ser USING (id);
RESET hbird.share_plans_max;
-- A Gather in an initplan: its scoring node is parallel-aware too (shares
-- the leader's model), and counts the serial answer
EXPLAIN (COSTS OFF)
SELECT (SELECT count(*) FROM big b WHERE hb_predict('binary_logistic', b) > 0.5) AS n;
SELECT (SELECT count(*) FROM big b WHERE hb_predict('binary_logistic', b) > 0.5) =
	   (SELECT count(*) FROM ser WHERE p > 0.5) AS same_count;
-- Setting up the workers raises no error the plan without them would not:
-- over no row, a model name that fails to evaluate is never read
EXPLAIN (COSTS OFF)
SELECT count(hb_predict(current_setting('hbird_test.no_such_setting'), b)) FROM big b WHERE id < 0;
SELECT count(hb_predict(current_setting('hbird_test.no_such_setting'), b)) FROM big b WHERE id < 0;
-- EXPLAIN of the same: the scoring node is parallel-aware
SELECT par_explain($$SELECT id, hb_predict('binary_logistic', b) FROM big b$$);
RESET parallel_leader_participation;
RESET ALL;
DROP TABLE big;
DROP FUNCTION par_explain(text);
