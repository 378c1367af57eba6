-- The privilege matrix: every hbird function (and the catalog behind it)
-- x every kind of role, 'ok' or the SQLSTATE it gets.  Roles:
--   superuser    the regression user; hbird is not a trusted extension,
--                so only a superuser can create it and the extension owner
--                is always a superuser: one column covers both
--   model_owner  a model administrator (EXECUTE on the admin functions,
--                granted by a superuser) who uploaded pm_model
--   owner_member a member of model_owner's role, with no grant of its own
--   model_admin  another model administrator, not pm_model's owner: it may
--                create models but change only its own
--   scorer       granted scoring of pm_model with hb_model_grant
--   public       no grant at all
-- Each case runs in a subtransaction that is rolled back whatever happens,
-- so the cases see the same catalog and cannot affect each other.
-- hb_stat_models needs hbird in shared_preload_libraries (how CI runs);
-- test/expected/privilege_matrix_1.out is the output without it (55000).
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set bin `cat :fixtures/binary_logistic.json`
\set reg `cat :fixtures/reg_squarederror.json`
SET client_min_messages = warning;

CREATE ROLE regress_pm_owner;
CREATE ROLE regress_pm_member IN ROLE regress_pm_owner;
CREATE ROLE regress_pm_admin;
CREATE ROLE regress_pm_scorer;
CREATE ROLE regress_pm_public;
GRANT EXECUTE ON FUNCTION hb_model_upload(text, text, text, text[]),
	hb_model_upload(text, bytea, text, text[]),
	hb_model_activate(text, integer), hb_model_drop(text),
	hb_model_drop(text, integer),
	hb_model_grant(text, name), hb_model_revoke(text, name),
	hb_model_reassign(text, name),
	hb_tune(text, text, text, integer, double precision, double precision, integer),
	hb_tune_drop(text, text), hb_model_distribute(text, integer),
	hb_model_receive(text, integer, text, text[], bytea, text, name, boolean, name[], json, json)
	TO regress_pm_owner, regress_pm_admin;
CREATE TABLE pm_rows AS SELECT * FROM binary_logistic_in WHERE id <= 20;
GRANT SELECT ON pm_rows TO PUBLIC;
CREATE TABLE pm_reg_rows AS SELECT * FROM reg_squarederror_in WHERE id <= 20;
GRANT SELECT ON pm_reg_rows TO PUBLIC;
-- a tuning sample big enough for top-5 at precision 0.5, confidence 0.5
CREATE TABLE pm_sample AS SELECT * FROM binary_logistic_in;
GRANT SELECT ON pm_sample TO PUBLIC;
SET ROLE regress_pm_owner;
SELECT hb_model_upload('pm_model', :'bin') AS v1, hb_model_upload('pm_model', :'bin') AS v2;
SELECT hb_model_grant('pm_model', 'regress_pm_scorer');
SELECT hb_model_upload('pm_reg', :'reg') AS v1;
SELECT hb_model_grant('pm_reg', 'regress_pm_scorer');
RESET ROLE;
SELECT name, owner, count(*) AS versions FROM hb_models WHERE name = 'pm_model' GROUP BY 1, 2;

CREATE FUNCTION pm_try(r name, stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SET LOCAL ROLE %I', r);
	EXECUTE stmt;
	RAISE SQLSTATE 'HB000';
EXCEPTION WHEN OTHERS THEN
	IF SQLSTATE = 'HB000' THEN
		RETURN 'ok';
	END IF;
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

CREATE TEMP TABLE pm_role (col text, r name);
INSERT INTO pm_role VALUES
	('superuser', current_user), ('model_owner', 'regress_pm_owner'),
	('owner_member', 'regress_pm_member'), ('model_admin', 'regress_pm_admin'), ('scorer', 'regress_pm_scorer'),
	('public', 'regress_pm_public');
CREATE TEMP TABLE pm_fn (n serial, fn text, stmt text);
INSERT INTO pm_fn (fn, stmt) VALUES
('hb_model_upload(text, text, ...)', format('SELECT hb_model_upload(%L, %L::text)', 'pm_model', :'bin')),
('hb_model_upload(text, bytea, ...)', format('SELECT hb_model_upload(%L, convert_to(%L, %L))', 'pm_model', :'bin', 'UTF8')),
('hb_model_upload (new model)', format('SELECT hb_model_upload(%L, %L::text)', 'pm_new', :'bin')),
('hb_model_activate', $$SELECT hb_model_activate('pm_model', 1)$$),
('hb_model_drop(name, version)', $$SELECT hb_model_drop('pm_model', 1)$$),
('hb_model_drop(name)', $$SELECT hb_model_drop('pm_model')$$),
('hb_model_grant', $$SELECT hb_model_grant('pm_model', 'regress_pm_public')$$),
('hb_model_revoke', $$SELECT hb_model_revoke('pm_model', 'regress_pm_scorer')$$),
('hb_model_reassign (to self)', $$SELECT hb_model_reassign('pm_model', current_user)$$),
('hb_model_reassign (to the owner)', $$SELECT hb_model_reassign('pm_model', 'regress_pm_owner')$$),
('hb_predict(record)', $$SELECT hb_predict('pm_model', r) FROM pm_rows r$$),
('hb_predict(float8[])', $$SELECT hb_predict('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict(real[])', $$SELECT hb_predict('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::real[])$$),
('hb_predict_proba(record)', $$SELECT hb_predict_proba('pm_model', r) FROM pm_rows r$$),
('hb_predict_proba(float8[])', $$SELECT hb_predict_proba('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_proba(real[])', $$SELECT hb_predict_proba('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::real[])$$),
('hb_predict_margin(record)', $$SELECT hb_predict_margin('pm_model', r) FROM pm_rows r$$),
('hb_predict_margin(float8[])', $$SELECT hb_predict_margin('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_margin(real[])', $$SELECT hb_predict_margin('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::real[])$$),
('hb_predict_agg', $$SELECT hb_predict_agg('pm_model', r ORDER BY id) FROM pm_rows r$$),
('hb_predict_batch', $$SELECT count(*) FROM hb_predict_batch('pm_model', NULL::pm_rows)$$),
('hb_compile', $$SELECT count(*) FROM hb_compile('pm_model')$$),
('hb_topk', $$SELECT count(*) FROM hb_topk('pm_model', 3, NULL::pm_rows)$$),
('hb_topk_agg', $$SELECT hb_topk_agg('pm_model', 3, r) FROM pm_rows r$$),
('hb_topk_stats', $$SELECT * FROM hb_topk_stats()$$),
('hb_predict_class(record)', $$SELECT hb_predict_class('pm_model', r) FROM pm_rows r$$),
('hb_predict_class(float8[])', $$SELECT hb_predict_class('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$),
('hb_predict_class(real[])', $$SELECT hb_predict_class('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::real[])$$),
('hb_predict_class_agg', $$SELECT hb_predict_class_agg('pm_model', r ORDER BY id) FROM pm_rows r$$),
('hb_predict_class_batch', $$SELECT count(*) FROM hb_predict_class_batch('pm_model', NULL::pm_rows)$$),
('hb_predict(integer[])', $$SELECT hb_predict('pm_model', ARRAY[1, 2, 3, 4, 5, 6])$$),
('hb_predict_class(numeric[])', $$SELECT hb_predict_class('pm_model', ARRAY[1.5, 2, 3, 4, 5, 6])$$),
('hb_predict_proba(bigint[])', $$SELECT hb_predict_proba('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::bigint[])$$),
('hb_predict_margin(smallint[])', $$SELECT hb_predict_margin('pm_model', ARRAY[1, 2, 3, 4, 5, 6]::smallint[])$$),
('hb_predict_targets(record)', $$SELECT hb_predict_targets('pm_reg', r) FROM pm_reg_rows r$$),
('hb_predict_targets(float8[])', $$SELECT hb_predict_targets('pm_reg', ARRAY[1, 2, 3, 4, 5, 6, 7, 8]::float8[])$$),
('hb_predict_targets_agg', $$SELECT hb_predict_targets_agg('pm_reg', r) FROM pm_reg_rows r$$),
('hb_predict_targets_batch', $$SELECT count(*) FROM hb_predict_targets_batch('pm_reg', NULL::pm_reg_rows)$$),
('hb_class_stats', $$SELECT * FROM hb_class_stats()$$),
('hb_class_stats_reset', $$SELECT hb_class_stats_reset()$$),
('hb_tune (stores the result)', $$SELECT count(*) FROM hb_tune('pm_model', 'SELECT * FROM pm_sample', 'topk', 5, 0.5, 0.5)$$),
('hb_tune_drop', $$SELECT hb_tune_drop('pm_model')$$),
('hb_device', $$SELECT * FROM hb_device()$$),
('stat_models (hbird schema)', $$SELECT count(*) FROM hbird.stat_models()$$),
('hb_stat_models_reset()', $$SELECT hb_stat_models_reset()$$),
('hb_stat_models_reset(name)', $$SELECT hb_stat_models_reset('pm_model')$$),
('view hb_stat_models', $$SELECT count(*) FROM hb_stat_models$$),
('hb_stat_shared_cache()', $$SELECT count(*) FROM hb_stat_shared_cache()$$),
('view hb_tunings', $$SELECT count(*) FROM hb_tunings$$),
('view hb_tuning_candidates', $$SELECT count(*) FROM hb_tuning_candidates$$),
('SELECT hbird.tuning', $$SELECT count(*) FROM hbird.tuning$$),
('DELETE hbird.tuning', $$DELETE FROM hbird.tuning$$),
('view hb_models', $$SELECT count(*) FROM hb_models$$),
('view hb_model_features', $$SELECT count(*) FROM hb_model_features$$),
('view hb_model_grants', $$SELECT count(*) FROM hb_model_grants$$),
('SELECT hbird.model_version', $$SELECT body FROM hbird.model_version$$),
('UPDATE hbird.model', $$UPDATE hbird.model SET owner = current_user::regrole$$),
('INSERT hbird.model_grant', $$INSERT INTO hbird.model_grant VALUES ('pm_model', 0, 0)$$),
('ALTER EXTENSION hbird UPDATE', $$ALTER EXTENSION hbird UPDATE$$),
('COMMENT ON EXTENSION hbird', $$COMMENT ON EXTENSION hbird IS 'x'$$),
('hb_predict_pinned', $$SELECT hb_predict_pinned('pm_model', 2, (SELECT sha256 FROM hb_models WHERE name = 'pm_model' AND version = 2), 's1', '{amount,age,balance,n_tx,risk,tenure}', amount, age, balance, n_tx, risk, tenure) FROM pm_rows$$),
('hb_predict_proba_pinned', $$SELECT hb_predict_proba_pinned('pm_model', 2, (SELECT sha256 FROM hb_models WHERE name = 'pm_model' AND version = 2), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6])$$),
('hb_predict_margin_pinned', $$SELECT hb_predict_margin_pinned('pm_model', 2, (SELECT sha256 FROM hb_models WHERE name = 'pm_model' AND version = 2), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6])$$),
('hb_predict_class_pinned', $$SELECT hb_predict_class_pinned('pm_model', 2, (SELECT sha256 FROM hb_models WHERE name = 'pm_model' AND version = 2), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6])$$),
('hb_predict_targets_pinned', $$SELECT hb_predict_targets_pinned('pm_reg', 1, (SELECT sha256 FROM hb_models WHERE name = 'pm_reg' AND version = 1), 's1', NULL, ARRAY[1, 2, 3, 4, 5, 6, 7, 8])$$),
('hb_read_as', $$SELECT hb_read_as(0.25::float8, NULL::numeric(6,1))$$),
('hb_model_distribute (no shards)', $$SELECT count(*) FROM hb_model_distribute('pm_model')$$),
('hb_model_receive', format('SELECT hb_model_receive(%L, 9, %L, NULL, convert_to(%L, %L), encode(sha256(convert_to(%L, %L)), %L), %L, true, %L, %L, %L)', 'pm_model', 'xgboost-json', :'bin', 'UTF8', :'bin', 'UTF8', 'hex', 'regress_pm_owner', '{}', '[]', '[]')),
('hb_model_shards (no shards)', $$SELECT count(*) FROM hb_model_shards()$$),
('cascade_delete (a trigger function)', $$SELECT hbird.cascade_delete()$$);

CREATE TEMP TABLE pm_result AS
SELECT n, fn, col, pm_try(r, stmt) AS res FROM pm_fn, pm_role;

SELECT fn,
	   max(left(res, 5)) FILTER (WHERE col = 'superuser') AS superuser,
	   max(left(res, 5)) FILTER (WHERE col = 'model_owner') AS model_owner,
	   max(left(res, 5)) FILTER (WHERE col = 'owner_member') AS owner_member,
	   max(left(res, 5)) FILTER (WHERE col = 'model_admin') AS model_admin,
	   max(left(res, 5)) FILTER (WHERE col = 'scorer') AS scorer,
	   max(left(res, 5)) FILTER (WHERE col = 'public') AS public
FROM pm_result
GROUP BY n, fn ORDER BY n;

-- every function of the extension is in the matrix (the aggregates' support
-- functions and the pinned forms' planner support function take type
-- internal and cannot be called from SQL)
SELECT p.oid::regprocedure AS function_not_in_matrix
FROM pg_proc p
JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'hbird'
WHERE p.proname NOT IN (SELECT regexp_replace(fn, '[ (].*$', '') FROM pm_fn)
  AND p.proname !~ '_(sfunc|final|support)$'
ORDER BY 1;

-- the refusals' messages, one of each kind
SELECT DISTINCT regexp_replace(regexp_replace(res, 'regress_pm_\w+', 'ROLE', 'g'),
							   'function \S+\(.*\)', 'function F') AS error
FROM pm_result WHERE res <> 'ok'
ORDER BY 1;
RESET ROLE;

-- No function runs the caller's SQL with more rights than the caller: the
-- query of hb_predict_batch / hb_topk runs as the caller.  The scorer may
-- score pm_model but not read pm_secret, nor run the admin functions.
CREATE TABLE pm_secret AS SELECT * FROM pm_rows;
REVOKE ALL ON pm_secret FROM PUBLIC;
SET ROLE regress_pm_scorer;
SELECT hbt_try($$SELECT count(*) FROM hb_predict_batch('pm_model', NULL::pm_secret)$$) AS batch_default_query;
SELECT hbt_try($$SELECT count(*) FROM hb_predict_batch('pm_model', NULL::pm_rows, 'SELECT * FROM pm_secret')$$) AS batch_query;
SELECT hbt_try($$SELECT count(*) FROM hb_topk('pm_model', 3, NULL::pm_rows, 'SELECT * FROM pm_secret')$$) AS topk_query;
SELECT hbt_try($$SELECT count(*) FROM hb_topk('pm_model', 3, NULL::pm_rows, 'SELECT r.* FROM pm_rows r WHERE hb_model_drop(''pm_model'') > 0')$$) AS topk_query_calls_admin;
SELECT hbt_try($$SELECT count(*) FROM hb_predict_class_batch('pm_model', NULL::pm_secret)$$) AS class_batch_default_query;
SELECT hbt_try($$SELECT count(*) FROM hb_tune('pm_model', 'SELECT * FROM pm_secret', 'topk', 5, 0.5, 0.5)$$) AS tune_sample;
-- tuning is changing the model: the scorer may not run it at all
SELECT hbt_try($$SELECT count(*) FROM hb_tune('pm_model', 'SELECT r.* FROM pm_sample r WHERE current_user = ''regress_pm_scorer''', 'topk', 5, 0.5, 0.5)$$) AS tune_as_scorer;
RESET ROLE;
-- the owner's member tunes, and its sample is read with its own rights
SET ROLE regress_pm_member;
SELECT hbt_try($$SELECT count(*) FROM hb_tune('pm_model', 'SELECT * FROM pm_secret', 'topk', 5, 0.5, 0.5)$$) AS tune_sample_member;
SELECT count(*) > 0 AS tuned_as_member
FROM hb_tune('pm_model', 'SELECT r.* FROM pm_sample r WHERE current_user = ''regress_pm_member''', 'topk', 5, 0.5, 0.5);
RESET ROLE;
SELECT tuned_by FROM hb_tunings WHERE name = 'pm_model';
SET ROLE regress_pm_scorer;
-- the query sees the caller as current_user (all 20 rows pass its filter)
SELECT count(*) AS rows_as_scorer
FROM hb_predict_batch('pm_model', NULL::pm_rows, 'SELECT r.* FROM pm_rows r WHERE current_user = ''regress_pm_scorer''');
SELECT count(*) AS rows_as_scorer
FROM hb_topk('pm_model', 100, NULL::pm_rows, 'SELECT r.* FROM pm_rows r WHERE current_user = ''regress_pm_scorer''');
RESET ROLE;

-- Admin functions take names as data, never as SQL: a name made of SQL is
-- stored verbatim and nothing else happens.
SET ROLE regress_pm_owner;
SELECT hb_model_upload($$x'); DELETE FROM hbird.model; --$$, :'bin') AS version;
SELECT hb_model_grant($$x'); DELETE FROM hbird.model; --$$, 'public');
RESET ROLE;
SELECT name FROM hb_models WHERE name LIKE $$x'%$$ OR name = 'pm_model' ORDER BY name, version;
SELECT hb_model_drop($$x'); DELETE FROM hbird.model; --$$);

SELECT hb_model_drop('pm_model'), hb_model_drop('pm_reg');
DROP TABLE pm_rows, pm_secret, pm_sample, pm_reg_rows;
DROP FUNCTION pm_try(name, text);
REVOKE EXECUTE ON FUNCTION hb_model_upload(text, text, text, text[]),
	hb_model_upload(text, bytea, text, text[]),
	hb_model_activate(text, integer), hb_model_drop(text),
	hb_model_drop(text, integer),
	hb_model_grant(text, name), hb_model_revoke(text, name),
	hb_model_reassign(text, name),
	hb_tune(text, text, text, integer, double precision, double precision, integer),
	hb_tune_drop(text, text), hb_model_distribute(text, integer),
	hb_model_receive(text, integer, text, text[], bytea, text, name, boolean, name[], json, json)
	FROM regress_pm_owner, regress_pm_admin;
DROP ROLE regress_pm_member, regress_pm_owner, regress_pm_admin, regress_pm_scorer, regress_pm_public;
RESET client_min_messages;
