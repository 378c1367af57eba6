-- hb_stat_models: per model version, what every scoring entry point did.
-- Needs hbird in shared_preload_libraries (scripts/test.sh starts the test
-- cluster that way; test/sql_shell/stat_models_nopreload.sh checks the
-- error without it).  Expected counts come from count(*) of the inputs.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
-- (test/expected/stat_models_1.out: a cluster without it, where this stops here)
SELECT current_setting('shared_preload_libraries') ~ 'hbird' AS preloaded \gset
\if :preloaded
\else
\echo 'hbird is not in shared_preload_libraries: skipped'
\quit
\endif
SELECT hb_stat_models_reset();
SELECT count(*) AS rows_after_reset FROM hb_stat_models;
-- row at a time first (the batching scan counts differently, see the end)
SET hbird.batch_scan = off;

CREATE TEMP TABLE stm_in AS SELECT * FROM binary_logistic_in WHERE id <= 150;
SELECT count(*) AS n FROM stm_in \gset

-- row-at-a-time, record form: one call and one row per input row
SELECT count(hb_predict('binary_logistic', t)) FROM stm_in t;
SELECT calls = :n AS calls_ok, rows = :n AS rows_ok, strategy,
	   cache_misses + cache_hits AS lookups, total_time > 0 AS timed,
	   mean_time = total_time / calls AS mean_ok,
	   last_used >= stats_since AS order_ok,
	   last_used > now() - interval '1 hour' AS recent
FROM hb_stat_models WHERE name = 'binary_logistic';

-- a NULL row scores nothing
SELECT hb_predict('binary_logistic', NULL::stm_in);
-- proba and margin, record and array forms (3 x n + 2 calls)
SELECT count(hb_predict_proba('binary_logistic', t)), count(hb_predict_margin('binary_logistic', t)),
	   count(hb_predict_margin('binary_logistic',
							   ARRAY[amount, age, balance, n_tx, risk, tenure]))
FROM stm_in t;
SELECT hb_predict('binary_logistic', ARRAY[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]::real[]) IS NOT NULL AS scored,
	   hb_predict_proba('binary_logistic', ARRAY[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]::float8[]) IS NOT NULL AS scored_proba;
SELECT calls - 4 * :n AS extra_calls, rows - 4 * :n AS extra_rows
FROM hb_stat_models WHERE name = 'binary_logistic';

-- batched forms count one call per group / per call, and every row
SELECT hb_stat_models_reset('binary_logistic');
SELECT count(*) AS after_reset FROM hb_stat_models WHERE name = 'binary_logistic';
SELECT cardinality(hb_predict_agg('binary_logistic', t ORDER BY id)) FROM stm_in t;
SELECT calls, rows = :n AS rows_ok, strategy FROM hb_stat_models WHERE name = 'binary_logistic';
SELECT sum(cardinality(p)) FROM (SELECT hb_predict_agg('binary_logistic', t) AS p FROM stm_in t GROUP BY id % 3) g;
SELECT calls, rows = 2 * :n AS rows_ok FROM hb_stat_models WHERE name = 'binary_logistic';
SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::stm_in);
SELECT calls, rows = 3 * :n AS rows_ok FROM hb_stat_models WHERE name = 'binary_logistic';

-- class predictions count like the other forms: row, aggregate, batch
SELECT hb_stat_models_reset('binary_logistic');
SELECT count(hb_predict_class('binary_logistic', t)) FROM stm_in t;
SELECT calls = :n AS calls_ok, rows = :n AS rows_ok FROM hb_stat_models WHERE name = 'binary_logistic';
SELECT cardinality(hb_predict_class_agg('binary_logistic', t)) FROM stm_in t;
SELECT count(*) FROM hb_predict_class_batch('binary_logistic', NULL::stm_in);
SELECT calls - :n AS batched_calls, rows = 3 * :n AS rows_ok FROM hb_stat_models WHERE name = 'binary_logistic';

-- the strategy is the one the last batch ran with
SET hbird.tree_strategy = 'gemm';
SELECT count(*) FROM hb_predict_batch('binary_logistic', NULL::stm_in);
SELECT strategy FROM hb_stat_models WHERE name = 'binary_logistic';
SET hbird.tree_strategy = 'ptt';
SELECT cardinality(hb_predict_agg('binary_logistic', t)) FROM stm_in t;
SELECT strategy FROM hb_stat_models WHERE name = 'binary_logistic';
RESET hbird.tree_strategy;

-- top-K: rows and pruning, checked against hb_topk_stats()
SELECT hb_stat_models_reset();
SELECT count(*) FROM hb_topk('binary_logistic', 5, NULL::stm_in);
SELECT rows AS topk_rows, rows_fully_scored, pairs_scored, pairs_total FROM hb_topk_stats() \gset
SELECT calls, topk_calls, rows = :topk_rows AND rows = :n AS rows_ok,
	   topk_rows_pruned = :topk_rows - :rows_fully_scored AS rows_pruned_ok,
	   topk_pairs_pruned = :pairs_total - :pairs_scored AS pairs_pruned_ok,
	   total_time > 0 AS timed
FROM hb_stat_models WHERE name = 'binary_logistic';
SELECT cardinality(hb_topk_agg('binary_logistic', 3, t)) FROM stm_in t;
SELECT rows AS topk_rows, rows_fully_scored, pairs_scored, pairs_total FROM hb_topk_stats() \gset
SELECT calls, topk_calls, rows = 2 * :n AS rows_ok,
	   topk_rows_pruned >= :topk_rows - :rows_fully_scored AS rows_pruned_ok
FROM hb_stat_models WHERE name = 'binary_logistic';

-- cache: one lookup per call site and statement; this backend compiled the
-- model before the reset, so these are hits; hb_compile counts a lookup too
SELECT hb_stat_models_reset();
SELECT count(hb_predict('binary_logistic', t)) FROM stm_in t;
SELECT count(*) > 0 FROM hb_compile('binary_logistic');
SELECT cache_hits, cache_misses, calls FROM hb_stat_models WHERE name = 'binary_logistic';

-- a new version is a new row; its first use compiles (a miss)
\set m `cat :fixtures/binary_logistic.json`
SELECT hb_model_upload('stm_model', :'m') AS v1;
SELECT count(hb_predict('stm_model', t)) FROM stm_in t;
\set lin `cat :fixtures/linear/linear_tiny.json`
SELECT hb_model_upload('stm_model', :'lin') AS v2;
SELECT hb_predict('stm_model', ARRAY[1, 2, 3]::float8[]) IS NOT NULL AS scored;
SELECT version, calls, rows = CASE version WHEN 1 THEN :n ELSE 1 END AS rows_ok,
	   strategy, cache_misses, cache_hits, compile_time >= 0 AS compile_timed
FROM hb_stat_models WHERE name = 'stm_model' ORDER BY version;

-- a dropped version leaves the view; a re-upload under the same name and
-- number starts from zero
SELECT hb_model_drop('stm_model', 2);
SELECT version FROM hb_stat_models WHERE name = 'stm_model' ORDER BY version;
SELECT hb_model_drop('stm_model');
SELECT count(*) AS dropped_rows FROM hb_stat_models WHERE name = 'stm_model';
SELECT hb_model_upload('stm_model', :'lin') AS v1_again;
SELECT count(*) AS rows_before_use FROM hb_stat_models WHERE name = 'stm_model';
SELECT hb_predict('stm_model', ARRAY[1, 2, 3]::float8[]) IS NOT NULL AS scored;
SELECT version, calls, rows, strategy FROM hb_stat_models WHERE name = 'stm_model';

-- privileges: rows of models one may score; everything for superusers
-- and pg_read_all_stats; reset only for superusers and grantees
CREATE ROLE regress_stat_user;
CREATE ROLE regress_stat_reader IN ROLE pg_read_all_stats;
GRANT SELECT ON stm_in TO regress_stat_user;
SELECT count(hb_predict('binary_logistic', t)) FROM stm_in t;
SET ROLE regress_stat_user;
SELECT count(*) AS visible FROM hb_stat_models;
SELECT hbt_try($$SELECT hb_stat_models_reset()$$);
SELECT hbt_try($$SELECT hb_stat_models_reset('binary_logistic')$$);
SELECT hbt_try($$SELECT * FROM hbird.stat_models()$$);
RESET ROLE;
SELECT hb_model_grant('stm_model', 'regress_stat_user');
SET ROLE regress_stat_user;
SELECT name, version, calls FROM hb_stat_models ORDER BY name, version;
RESET ROLE;
SET ROLE regress_stat_reader;
SELECT count(DISTINCT name) >= 2 AS sees_all FROM hb_stat_models;
SELECT hbt_try($$SELECT hb_stat_models_reset()$$);
RESET ROLE;
GRANT EXECUTE ON FUNCTION hb_stat_models_reset(text) TO regress_stat_user;
SET ROLE regress_stat_user;
SELECT hb_stat_models_reset('stm_model');
RESET ROLE;
SELECT count(*) AS stm_rows FROM hb_stat_models WHERE name = 'stm_model';
SELECT count(*) > 0 AS others_kept FROM hb_stat_models;
SELECT hbt_try($$SELECT hb_stat_models_reset(NULL)$$);

-- hbird.stat_track = off: nothing is counted
SET hbird.stat_track = off;
SELECT hb_stat_models_reset();
SELECT count(hb_predict('binary_logistic', t)) FROM stm_in t;
SELECT count(*) AS tracked FROM hb_stat_models;
RESET hbird.stat_track;
SELECT current_setting('hbird.stat_max') AS stat_max;

-- the batching scan: one call per scan (per partition, per worker), every row
RESET hbird.batch_scan;
SELECT hb_stat_models_reset();
SELECT count(hb_predict('binary_logistic', t)) FROM stm_in t;
SELECT calls, rows = :n AS rows_ok, strategy IS NOT NULL AS strategy_known
FROM hb_stat_models WHERE name = 'binary_logistic';
SELECT count(*) FROM (SELECT t.id FROM stm_in t ORDER BY hb_predict('binary_logistic', t) DESC LIMIT 3) s;
SELECT calls, rows = 2 * :n AS rows_ok FROM hb_stat_models WHERE name = 'binary_logistic';

SELECT hb_model_drop('stm_model');
DROP OWNED BY regress_stat_user, regress_stat_reader;
DROP ROLE regress_stat_user, regress_stat_reader;
