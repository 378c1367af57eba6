-- Who may do what: administration is revoked from PUBLIC and granted by
-- the DBA; scoring a model takes its owner, a superuser or a grant.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set reg `cat :fixtures/reg_squarederror.json`
CREATE ROLE regress_hbird_admin;
CREATE ROLE regress_hbird_scorer;
CREATE ROLE regress_hbird_other;
GRANT EXECUTE ON FUNCTION hb_model_upload(text, text, text, text[]),
	hb_model_activate(text, integer), hb_model_drop(text),
	hb_model_grant(text, name), hb_model_revoke(text, name)
	TO regress_hbird_admin;
GRANT SELECT ON binary_logistic_in, reg_squarederror_in TO PUBLIC;
CREATE TABLE probe AS
SELECT i.*, e.pred FROM binary_logistic_in i JOIN binary_logistic_exp e USING (id) WHERE id = 1;
CREATE TABLE probe_reg AS
SELECT i.*, e.pred FROM reg_squarederror_in i JOIN reg_squarederror_exp e USING (id) WHERE id = 1;
GRANT SELECT ON probe, probe_reg TO PUBLIC;

-- a role with no grants can read the catalog views but do nothing else
SET ROLE regress_hbird_other;
SELECT count(*) > 0 AS sees_models FROM hb_models;
SELECT hbt_try(format('SELECT hb_model_upload(%L, %L::text)', 'x', :'reg'));
SELECT hbt_try($$SELECT hb_model_drop('binary_logistic')$$);
SELECT hbt_try($$SELECT hb_model_activate('binary_logistic', 1)$$);
SELECT hbt_try($$SELECT hb_model_grant('binary_logistic', 'regress_hbird_other')$$);
SELECT hbt_try($$SELECT hb_predict('binary_logistic', p) FROM probe p$$);
SELECT hbt_try($$SELECT hb_predict_proba('binary_logistic', ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$);
SELECT hbt_try($$SELECT body FROM hbird.model_version LIMIT 1$$);
SELECT hbt_try($$DELETE FROM hbird.model$$);
RESET ROLE;

-- a granted scorer scores, and only that
SELECT hb_model_grant('binary_logistic', 'regress_hbird_scorer');
SET ROLE regress_hbird_scorer;
SELECT hbt_close(hb_predict('binary_logistic', p), p.pred) AS scored FROM probe p;
SELECT hbt_try($$SELECT hb_predict('reg_squarederror', r) FROM reg_squarederror_in r LIMIT 1$$);
SELECT hbt_try($$SELECT hb_model_drop('binary_logistic')$$);
RESET ROLE;
SELECT name, grantee FROM hb_model_grants ORDER BY name, grantee::text;

-- a model admin uploads, owns and scores its own model, grants it
SET ROLE regress_hbird_admin;
SELECT hb_model_upload('admin_model', :'reg') AS version;
SELECT uploaded_by, owner FROM hb_models WHERE name = 'admin_model';
SELECT hbt_close(hb_predict('admin_model', r), r.pred) AS scored FROM probe_reg r;
SELECT hb_model_grant('admin_model', 'public');
RESET ROLE;

-- PUBLIC grants reach everyone; revoking takes it back
SET ROLE regress_hbird_other;
SELECT hbt_try($$SELECT hb_predict('admin_model', r) FROM reg_squarederror_in r LIMIT 1$$);
RESET ROLE;
SELECT hb_model_revoke('admin_model', 'public');
SET ROLE regress_hbird_other;
SELECT hbt_try($$SELECT hb_predict('admin_model', r) FROM reg_squarederror_in r LIMIT 1$$);
RESET ROLE;
-- only lower-case 'public' is PUBLIC, as in PostgreSQL: a role "Public"
-- is a role (a grant to it went to everyone), and there is no "PUBLIC"
CREATE ROLE "Public";
SELECT hb_model_grant('admin_model', 'Public');
SELECT grantee FROM hb_model_grants WHERE name = 'admin_model' ORDER BY 1;
SET ROLE regress_hbird_other;
SELECT hbt_try($$SELECT hb_predict('admin_model', r) FROM reg_squarederror_in r LIMIT 1$$);
RESET ROLE;
SELECT hbt_try($$SELECT hb_model_revoke('admin_model', 'PUBLIC')$$);
SELECT hb_model_revoke('admin_model', 'Public');
DROP ROLE "Public";

-- members of a granted role inherit the grant
GRANT regress_hbird_scorer TO regress_hbird_other;
SET ROLE regress_hbird_other;
SELECT hbt_try($$SELECT hb_predict('binary_logistic', p) FROM probe p$$);
RESET ROLE;

-- a call site kept for the transaction (a PL/pgSQL function's simple
-- expression) is checked again for another role: a SECURITY DEFINER
-- function scoring through it, then its caller; a superuser, then SET ROLE
CREATE ROLE regress_hbird_nogrant;
CREATE FUNCTION priv_score(x float8[]) RETURNS float8 LANGUAGE plpgsql
AS $$ BEGIN RETURN hb_predict('binary_logistic', x); END $$;
CREATE FUNCTION priv_summary() RETURNS float8 LANGUAGE plpgsql SECURITY DEFINER
AS $$ BEGIN RETURN round(priv_score(ARRAY[0, 0, 0, 0, 0, 0]::float8[])::numeric, 1); END $$;
GRANT EXECUTE ON FUNCTION priv_summary() TO regress_hbird_nogrant;
BEGIN;
SET LOCAL ROLE regress_hbird_nogrant;
SELECT priv_summary() IS NOT NULL AS definer_scores;
SELECT hbt_try($$SELECT priv_score(ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$);
SELECT hbt_try($$SELECT priv_score(ARRAY[9, 9, 9, 9, 9, 9]::float8[])$$);
COMMIT;
BEGIN;
SELECT priv_score(ARRAY[1, 2, 3, 4, 5, 6]::float8[]) IS NOT NULL AS superuser_scores;
SET LOCAL ROLE regress_hbird_nogrant;
SELECT hbt_try($$SELECT priv_score(ARRAY[1, 2, 3, 4, 5, 6]::float8[])$$);
COMMIT;
DROP FUNCTION priv_summary(), priv_score(float8[]);
DROP ROLE regress_hbird_nogrant;

SELECT hb_model_drop('admin_model');
SELECT hb_model_revoke('binary_logistic', 'regress_hbird_scorer');
DROP TABLE probe, probe_reg;
REVOKE SELECT ON binary_logistic_in, reg_squarederror_in FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION hb_model_upload(text, text, text, text[]),
	hb_model_activate(text, integer), hb_model_drop(text),
	hb_model_grant(text, name), hb_model_revoke(text, name)
	FROM regress_hbird_admin;
DROP ROLE regress_hbird_admin, regress_hbird_scorer, regress_hbird_other;
