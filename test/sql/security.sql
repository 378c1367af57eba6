-- Attacks on the catalog: code planted where a superuser will run it,
-- ownership between model administrators, and roles that go away.
-- (docs/reliability.md, "Privileges")
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set bin `cat :fixtures/binary_logistic.json`
SET client_min_messages = warning;

CREATE FUNCTION sec_detail(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	d text;
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || SQLERRM || E'\n' || d;
END $$;

CREATE ROLE regress_sec_alice;		-- a model administrator
CREATE ROLE regress_sec_mallory;	-- another one, with a schema of its own
CREATE ROLE regress_sec_carol IN ROLE regress_sec_alice;
GRANT EXECUTE ON FUNCTION hb_model_upload(text, text, text, text[]),
	hb_model_activate(text, integer), hb_model_drop(text),
	hb_model_drop(text, integer), hb_model_grant(text, name),
	hb_model_revoke(text, name), hb_model_reassign(text, name),
	hb_tune(text, text, text, integer, double precision, double precision, integer),
	hb_tune_drop(text, text)
	TO regress_sec_alice, regress_sec_mallory;
CREATE SCHEMA sec_mallory AUTHORIZATION regress_sec_mallory;

-- the superuser's model, and alice's
SELECT hb_model_upload('sec_dba', :'bin') AS v;
SET ROLE regress_sec_alice;
SELECT hb_model_upload('sec_alice', :'bin') AS v;
RESET ROLE;

-- ---- 1. code a superuser runs on someone else's behalf ----

-- An index expression runs during the superuser's ANALYZE, as the table's
-- owner inside a security-restricted operation: hbird writes nothing there,
-- whoever the session's role is.
SET ROLE regress_sec_mallory;
CREATE FUNCTION sec_mallory.plant(x integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF current_setting('sec.armed', true) = 'drop' THEN
		PERFORM hb_model_drop('sec_dba');
	ELSIF current_setting('sec.armed', true) = 'tune' THEN
		PERFORM hb_tune_drop('sec_dba');
	ELSIF current_setting('sec.armed', true) = 'upload' THEN
		PERFORM hb_model_upload('sec_planted', current_setting('sec.body'));
	END IF;
	RETURN x;
END $$;
CREATE TABLE sec_mallory.t (x integer);
INSERT INTO sec_mallory.t SELECT g FROM generate_series(1, 10) g;
CREATE INDEX ON sec_mallory.t (sec_mallory.plant(x));
RESET ROLE;
SET sec.armed = 'drop';
SELECT hbt_try('ANALYZE sec_mallory.t') AS analyze_drops;
SET sec.armed = 'tune';
SELECT hbt_try('ANALYZE sec_mallory.t') AS analyze_tunes;
SELECT set_config('sec.body', :'bin', false) IS NOT NULL AS body_set;
SET sec.armed = 'upload';
SELECT hbt_try('ANALYZE sec_mallory.t') AS analyze_uploads;
SELECT hbt_try('REINDEX TABLE sec_mallory.t') AS reindex_uploads;
RESET sec.armed;
SELECT name, CASE WHEN owner = current_user::regrole THEN 'the superuser' ELSE owner::text END AS owner
FROM hb_models WHERE name LIKE 'sec%' ORDER BY name;

-- A SECURITY DEFINER function runs as its owner: the checks see mallory,
-- not the superuser calling it.
SET ROLE regress_sec_mallory;
CREATE FUNCTION sec_mallory.helper() RETURNS text
LANGUAGE sql SECURITY DEFINER AS $$ SELECT hb_model_drop('sec_dba')::text $$;
CREATE FUNCTION sec_mallory.helper_grant() RETURNS text
LANGUAGE sql SECURITY DEFINER AS $$ SELECT hb_model_grant('sec_dba', 'regress_sec_mallory')::text $$;
RESET ROLE;
SELECT hbt_try('SELECT sec_mallory.helper()') AS definer_drops;
SELECT hbt_try('SELECT sec_mallory.helper_grant()') AS definer_grants;
SELECT count(*) AS sec_dba_versions FROM hb_models WHERE name = 'sec_dba';
SELECT count(*) AS grants_planted FROM hb_model_grants WHERE name = 'sec_dba';

-- The internal store function is gone; the tuning tables are not writable.
SELECT count(*) AS store_functions FROM pg_proc WHERE proname = 'hb_tune_store';
SET ROLE regress_sec_mallory;
SELECT hbt_try($$INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed,
	sample_rows, eval_rows, approximation, approx_kind, approx_trees, approx_features,
	approx_params, accuracy, accuracy_bound, coverage, full_cost_us, approx_cost_us,
	expected_speedup, tuned_by) VALUES ('sec_dba', 1, 'cascade', 0, 0.5, 0.5, 0, 1, 1,
	'x', 'prefix', 1, '{}', '{}', 1, 1, 1, 1, 1, 1, 'x')$$) AS insert_tuning;
RESET ROLE;

-- No function is SECURITY DEFINER, and every administration function is
-- revoked from PUBLIC with search_path pinned.
SELECT p.oid::regprocedure AS definer_function
FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.classid = 'pg_proc'::regclass
	AND d.deptype = 'e' AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'hbird')
WHERE p.prosecdef ORDER BY 1;
SELECT p.oid::regprocedure AS admin_function,
	   has_function_privilege('public', p.oid, 'EXECUTE') AS public_may_run,
	   p.proconfig
FROM pg_proc p
WHERE p.proname IN ('hb_model_upload', 'hb_model_activate', 'hb_model_drop', 'hb_model_grant',
					'hb_model_revoke', 'hb_model_reassign', 'hb_tune', 'hb_tune_drop')
ORDER BY 1;

-- ---- 2. ownership between administrators ----

SET ROLE regress_sec_mallory;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', 'sec_alice', :'bin')) AS replace_alices;
SELECT hbt_try($$SELECT hb_model_activate('sec_alice', 1)$$) AS activate_alices;
SELECT hbt_try($$SELECT hb_model_grant('sec_alice', 'regress_sec_mallory')$$) AS grant_alices;
SELECT hbt_try($$SELECT hb_model_reassign('sec_alice', 'regress_sec_mallory')$$) AS take_alices;
SELECT hbt_try($$SELECT hb_model_drop('sec_alice')$$) AS drop_alices;
SELECT hbt_try($$SELECT hb_model_drop('sec_dba')$$) AS drop_superusers;
-- a new model is mallory's own
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', 'sec_mallory', :'bin')) AS upload_own;
-- mallory cannot give its model away to a role it is not a member of
SELECT hbt_try($$SELECT hb_model_reassign('sec_mallory', 'regress_sec_alice')$$) AS give_away;
RESET ROLE;
-- a member of alice's role acts as alice
SET ROLE regress_sec_carol;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', 'sec_alice', :'bin')) AS member_replaces;
SELECT hbt_try($$SELECT hb_model_grant('sec_alice', 'public')$$) AS member_grants;
RESET ROLE;
SELECT name, version, owner, uploaded_by FROM hb_models WHERE name = 'sec_alice' ORDER BY version;
SELECT grantee, granted_by FROM hb_model_grants WHERE name = 'sec_alice';
-- the superuser may change anyone's
SELECT hb_model_reassign('sec_alice', 'regress_sec_carol');
SELECT DISTINCT owner FROM hb_models WHERE name = 'sec_alice';
SELECT hb_model_reassign('sec_alice', 'regress_sec_alice');

-- ---- 3. names ----

SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', E'a\u202Eb', :'bin')) AS bidi_override;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', E'a\u200Bb', :'bin')) AS zero_width;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', E'a\u0085b', :'bin')) AS c1_control;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', E'a\x7fb', :'bin')) AS delete_char;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', E'a\tb', :'bin')) AS tab;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', '   ', :'bin')) AS blank;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', E'\u3000\u00A0', :'bin')) AS unicode_blank;
-- characters that render as nothing (default-ignorable): 'secr?et' would list as 'secret'
SELECT count(*) AS tried,
	   count(*) FILTER (WHERE hbt_try(format('SELECT hb_model_upload(%L, %L)', 'secr' || c || 'et', :'bin'))
						= '22023: model name must not contain control, formatting or invisible characters') AS refused
FROM unnest(ARRAY[E'\u00AD', E'\u034F', E'\u2061', E'\uFE0F', E'\U000E0041', E'\u180E',
				  E'\u3164', E'\uFFA0', E'\u115F', E'\U0001D173']) c;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L)', 'Café Ω', :'bin')) AS accented;
SELECT hb_model_drop('Café Ω');
-- a hint quotes a name as SQL does
SET ROLE regress_sec_mallory;
SELECT hb_model_upload($$it's$$, :'bin') AS v;
RESET ROLE;
CREATE ROLE regress_sec_nobody;
SET ROLE regress_sec_nobody;
SELECT hb_predict($$it's$$, ARRAY[1, 2, 3, 4, 5, 6]::float8[]);
RESET ROLE;
SELECT hb_model_drop($$it's$$);

-- ---- 4. owners that are gone ----

-- An owner that no longer exists (a role dropped from another database,
-- or while hbird was not loaded) grants nothing; a superuser gives the
-- model a new owner.
SET ROLE regress_sec_mallory;
SELECT hb_model_upload('sec_orphan', :'bin') AS v;
RESET ROLE;
UPDATE hbird.model SET owner = 4000000000::oid::regrole WHERE name = 'sec_orphan';
SET ROLE regress_sec_mallory;
SELECT sec_detail($$SELECT hb_model_drop('sec_orphan')$$) AS orphan_drop;
SELECT hbt_try($$SELECT hb_predict('sec_orphan', ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$) AS orphan_score;
RESET ROLE;
SELECT hb_model_reassign('sec_orphan', 'regress_sec_mallory');
SET ROLE regress_sec_mallory;
SELECT hbt_try($$SELECT hb_model_drop('sec_orphan')$$) AS reassigned_drop;
RESET ROLE;

-- ---- 4b. tunings received from a coordinator ----
-- hb_model_receive keeps who tuned and when only where the caller could
-- have tuned as that role; a model administrator receiving a tuning that
-- names another role records itself, now (as the grants record who
-- received them)
SELECT count(*) > 0 AS tuned FROM hb_tune('sec_dba', 'SELECT * FROM binary_logistic_in', 'topk', 3, 0.5);
SELECT json_agg(jsonb_set(jsonb_set(jsonb_set(to_jsonb(t), '{name}', '"sec_recv"'),
								   '{tuned_by}', '"regress_sec_mallory"'),
						 '{tuned_at}', '"2001-01-01 00:00:00+00"'))::text AS tj
FROM hbird.tuning t WHERE name = 'sec_dba' AND version = 1 \gset
GRANT EXECUTE ON FUNCTION hb_model_receive(text, integer, text, text[], bytea, text,
										   name, boolean, name[], json, json) TO regress_sec_alice;
SET ROLE regress_sec_alice;
SELECT hb_model_receive('sec_recv', 1, 'xgboost-json', NULL, convert_to(:'bin', 'UTF8'),
						encode(sha256(convert_to(:'bin', 'UTF8')), 'hex'), 'regress_sec_alice',
						true, '{}', :'tj', '[]') AS received;
RESET ROLE;
SELECT tuned_by, tuned_at > '2001-01-02' AS recent FROM hb_tunings WHERE name = 'sec_recv';
-- a superuser's receive keeps them
SELECT hb_model_receive('sec_recv2', 1, 'xgboost-json', NULL, convert_to(:'bin', 'UTF8'),
						encode(sha256(convert_to(:'bin', 'UTF8')), 'hex'), 'regress_sec_alice',
						true, '{}', replace(:'tj', 'sec_recv', 'sec_recv2')::json, '[]') AS received;
SELECT tuned_by, tuned_at > '2001-01-02' AS recent FROM hb_tunings WHERE name = 'sec_recv2';
REVOKE EXECUTE ON FUNCTION hb_model_receive(text, integer, text, text[], bytea, text,
											name, boolean, name[], json, json) FROM regress_sec_alice;
SELECT hb_model_drop('sec_recv'), hb_model_drop('sec_recv2'), hb_tune_drop('sec_dba');

-- ---- 5. roles that own models or hold their grants ----

-- the DETAIL lists what depends on the role, as PostgreSQL does
SELECT hb_model_grant('sec_dba', 'regress_sec_carol');
SELECT sec_detail('DROP ROLE regress_sec_alice') AS drop_owner;
SELECT sec_detail('DROP ROLE regress_sec_carol') AS drop_grantee;
SELECT sec_detail('DROP ROLE IF EXISTS regress_sec_alice, regress_sec_nosuch') AS drop_if_exists;

-- REASSIGN OWNED moves alice's models to carol; DROP OWNED then revokes
-- alice's privileges, and the role goes
REASSIGN OWNED BY regress_sec_alice TO regress_sec_carol;
SELECT DISTINCT name, CASE WHEN owner = current_user::regrole THEN 'the superuser' ELSE owner::text END AS owner
FROM hb_models WHERE name LIKE 'sec%' ORDER BY name;
DROP OWNED BY regress_sec_alice;
SELECT hbt_try('DROP ROLE regress_sec_alice') AS drop_alice_now;
-- who uploaded is a name: it outlives the role
SELECT DISTINCT uploaded_by FROM hb_models WHERE name = 'sec_alice';
-- DROP OWNED drops carol's models and revokes its grants
DROP OWNED BY regress_sec_carol;
SELECT DISTINCT name, CASE WHEN owner = current_user::regrole THEN 'the superuser' ELSE owner::text END AS owner
FROM hb_models WHERE name LIKE 'sec%' ORDER BY name;
SELECT count(*) AS grants_left FROM hb_model_grants WHERE grantee::text LIKE 'regress_sec%';
SELECT hbt_try('DROP ROLE regress_sec_carol') AS drop_carol_now;
DROP OWNED BY regress_sec_mallory;
SELECT name FROM hb_models WHERE name LIKE 'sec%' ORDER BY name;

-- ---- 6. pinned calls over constants ----
-- The planner computes an IMMUTABLE call over constants, checking the
-- planning role's right to score, and the plan keeps only the value: it is
-- made again for another role, and after a revoke.
SELECT format('PREPARE sec_pin AS SELECT round(hb_predict_pinned(%L, %s, %L, %L, NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])::numeric, 6) AS p',
			  name, version, sha256, 's1')
FROM hb_models WHERE name = 'sec_dba' AND active \gexec
SET plan_cache_mode = force_generic_plan;
EXECUTE sec_pin;
-- a statement run as role r: 'ok' or its error
CREATE FUNCTION sec_as(r name, stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	res text;
BEGIN
	EXECUTE format('SET LOCAL ROLE %I', r);
	res := hbt_try(stmt);
	RESET ROLE;
	RETURN res;
END $$;
SELECT sec_as('regress_sec_mallory', 'EXECUTE sec_pin') AS other_role;
SELECT hb_model_grant('sec_dba', 'regress_sec_mallory');
SELECT sec_as('regress_sec_mallory', 'EXECUTE sec_pin') AS granted;
SELECT hb_model_revoke('sec_dba', 'regress_sec_mallory');
SELECT sec_as('regress_sec_mallory', 'EXECUTE sec_pin') AS after_revoke;
-- the same call inside an SQL function the planner inlines and computes
SELECT format('CREATE FUNCTION sec_pin_f() RETURNS numeric LANGUAGE sql AS %L',
			  format('SELECT round(hb_predict_pinned(%L, %s, %L, %L, NULL, ARRAY[1, 2, 3, 4, 5, 6]::float8[])::numeric, 6)',
					 name, version, sha256, 's1'))
FROM hb_models WHERE name = 'sec_dba' AND active \gexec
PREPARE sec_pin_inlined AS SELECT sec_pin_f() AS p;
EXECUTE sec_pin_inlined;
SELECT sec_as('regress_sec_mallory', 'EXECUTE sec_pin_inlined') AS other_role_inlined;
-- a grant through a role's membership, revoked: the plan is made again
CREATE ROLE regress_sec_group;
SELECT hb_model_grant('sec_dba', 'regress_sec_group');
GRANT regress_sec_group TO regress_sec_mallory;
SELECT sec_as('regress_sec_mallory', 'EXECUTE sec_pin') AS through_membership;
REVOKE regress_sec_group FROM regress_sec_mallory;
SELECT sec_as('regress_sec_mallory', 'EXECUTE sec_pin') AS membership_revoked;
SELECT hb_model_revoke('sec_dba', 'regress_sec_group');
DROP ROLE regress_sec_group;
DEALLOCATE sec_pin;
DEALLOCATE sec_pin_inlined;
DROP FUNCTION sec_pin_f(), sec_as(name, text);
RESET plan_cache_mode;

SELECT hb_model_drop('sec_dba');
DROP ROLE regress_sec_mallory, regress_sec_nobody;
SELECT count(*) AS models_left FROM hb_models WHERE name LIKE 'sec%';
DROP FUNCTION sec_detail(text);
RESET client_min_messages;
