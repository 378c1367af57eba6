/* hbird 0.2.0 -> 0.3.0 */

\echo Use "ALTER EXTENSION hbird UPDATE TO '0.3.0'" to load this file. \quit

/*
 * Every schema change from 0.2.0 on; a fresh CREATE EXTENSION runs
 * hbird--0.1.0.sql, hbird--0.1.0--0.2.0.sql and then this file.  Keep
 * sections per feature.
 */

/* ---- Privileges: the role executing decides (docs/reliability.md) ---- */

/*
 * The administration functions run with the caller's rights: their checks
 * see the role actually executing (a SECURITY DEFINER function sees only
 * its owner, and the session's role is not who runs an index expression
 * under ANALYZE), and they write the catalog through the library as the
 * catalog's owner.  EXECUTE stays revoked from PUBLIC; a model is changed
 * only by superusers and members of its owner role.
 */
ALTER FUNCTION hb_model_upload(text, bytea, text, text[]) SECURITY INVOKER;
ALTER FUNCTION hb_model_upload(text, text, text, text[]) SECURITY INVOKER;
ALTER FUNCTION hb_model_activate(text, integer) SECURITY INVOKER;
ALTER FUNCTION hb_model_drop(text) SECURITY INVOKER;
ALTER FUNCTION hb_model_drop(text, integer) SECURITY INVOKER;
ALTER FUNCTION hb_model_grant(text, name) SECURITY INVOKER;
ALTER FUNCTION hb_model_revoke(text, name) SECURITY INVOKER;

/* tunings are written by hb_tune itself; nobody calls a store function */
DROP FUNCTION hb_tune_store(text, integer, text, integer, double precision,
							double precision, integer, bigint, bigint, integer,
							text, integer, integer[], double precision[],
							double precision, double precision, text[],
							double precision[], text[], double precision[],
							double precision);
ALTER FUNCTION hb_tune_drop(text, text) SECURITY INVOKER;
REVOKE ALL ON FUNCTION hb_tune(text, text, text, integer, double precision,
							   double precision, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_tune_drop(text, text) FROM PUBLIC;

/* give a model another owner (REASSIGN OWNED does it for all of a role's) */
CREATE FUNCTION hb_model_reassign(name text, new_owner name)
RETURNS void
AS 'MODULE_PATHNAME', 'hb_model_reassign'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION hb_model_reassign(text, name) FROM PUBLIC;

/*
 * Who uploaded, granted or tuned: the role's name at the time, a record
 * that outlives the role (a regrole of a dropped role is a bare OID, which
 * a restore would give to whichever role has it).  Owners and grantees stay
 * regrole: roles that hold them cannot be dropped while hbird is loaded.
 */
DROP VIEW hb_models;
DROP VIEW hb_model_grants;
DROP VIEW hb_tunings;

ALTER TABLE hbird.model_version ALTER COLUMN uploaded_by TYPE name
	USING uploaded_by::text::name;
ALTER TABLE hbird.model_grant ALTER COLUMN granted_by TYPE name
	USING granted_by::text::name;
ALTER TABLE hbird.tuning ALTER COLUMN tuned_by TYPE name
	USING tuned_by::text::name;

/*
 * n_inputs: what a row binds to columns (a pipeline's raw inputs, else the
 * features); n_features: the model's features after featurization.
 */
CREATE VIEW hb_models AS
SELECT v.name,
	   v.version,
	   (m.active_version IS NOT DISTINCT FROM v.version) AS active,
	   v.format,
	   v.task,
	   (SELECT pg_catalog.count(*) FROM hbird.model_feature f
		 WHERE f.name OPERATOR(pg_catalog.=) v.name
		   AND f.version OPERATOR(pg_catalog.=) v.version)::integer AS n_inputs,
	   v.n_features,
	   v.n_outputs,
	   v.n_trees,
	   v.max_depth,
	   v.size_bytes,
	   v.uploaded_by,
	   v.uploaded_at,
	   v.objective,
	   v.n_classes,
	   pg_catalog.encode(v.sha256, 'hex') AS sha256,
	   m.owner,
	   v.feature_names
FROM hbird.model m
JOIN hbird.model_version v ON v.name OPERATOR(pg_catalog.=) m.name;

CREATE VIEW hb_model_grants AS
SELECT name, grantee, granted_by, granted_at
FROM hbird.model_grant;

CREATE VIEW hb_tunings AS
SELECT t.name,
	   t.version,
	   (m.active_version IS NOT DISTINCT FROM t.version) AS active,
	   t.kind,
	   NULLIF(t.k, 0) AS k,
	   t.target,
	   t.confidence,
	   t.seed,
	   t.sample_rows,
	   t.eval_rows,
	   t.approximation,
	   t.ratio,
	   t.kept,
	   t.threshold,
	   t.accuracy,
	   t.accuracy_bound,
	   t.coverage,
	   t.full_cost_us,
	   t.approx_cost_us,
	   t.expected_speedup,
	   t.featurize_us,
	   t.feature_groups,
	   t.group_cost_us,
	   t.tuned_by,
	   t.tuned_at
FROM hbird.tuning t
JOIN hbird.model m ON m.name OPERATOR(pg_catalog.=) t.name;

GRANT SELECT ON hb_models, hb_model_grants, hb_tunings TO PUBLIC;

/* ---- end of privileges ---- */

/* ---- Arrays of any numeric type ---- */

/*
 * ARRAY[1, 2, 3] is an integer[] and ARRAY[1.5, 2] a numeric[]: with only
 * float8[] and real[] forms the call was ambiguous.  The same C functions
 * read every element type, NULL elements as missing values.
 */
CREATE FUNCTION hb_predict(name text, x smallint[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict(name text, x integer[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict(name text, x bigint[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict(name text, x numeric[]) RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_array' LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_proba(name text, x smallint[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_proba(name text, x integer[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_proba(name text, x bigint[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_proba(name text, x numeric[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_array' LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_margin(name text, x smallint[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_margin(name text, x integer[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_margin(name text, x bigint[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_margin(name text, x numeric[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_array' LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_class(name text, x smallint[]) RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_class(name text, x integer[]) RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_class(name text, x bigint[]) RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_class(name text, x numeric[]) RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_array' LANGUAGE C STABLE PARALLEL SAFE;

/* ---- end of arrays ---- */

/* ---- Models of several targets ---- */

/*
 * hb_predict answers one value per row, and refuses a model of several
 * targets (42809); hb_predict_targets answers all of them, after each
 * target's link, as an array (one element for a model of one target).
 */
CREATE FUNCTION hb_predict_targets(name text, "row" record) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_record' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_targets(name text, x double precision[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_targets(name text, x real[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_targets(name text, x smallint[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_targets(name text, x integer[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_targets(name text, x bigint[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_array' LANGUAGE C STABLE PARALLEL SAFE;
CREATE FUNCTION hb_predict_targets(name text, x numeric[]) RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_array' LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_targets_agg_sfunc(internal, name text, "row" record)
RETURNS internal
AS 'MODULE_PATHNAME', 'hb_predict_targets_agg_sfunc'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_targets_agg_final(internal)
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_agg_final'
LANGUAGE C STABLE PARALLEL SAFE;

/* a group's targets in input order: rows x targets (use ORDER BY inside) */
CREATE AGGREGATE hb_predict_targets_agg(name text, "row" record) (
	SFUNC = hb_predict_targets_agg_sfunc,
	STYPE = internal,
	SSPACE = 1024,			/* see "Group states" below */
	FINALFUNC = hb_predict_targets_agg_final,
	PARALLEL = SAFE
);

/* every row of a query (default: the table behind the row type), all targets */
CREATE FUNCTION hb_predict_targets_batch(name text, rowtype anyelement, query text DEFAULT NULL)
RETURNS TABLE (targets double precision[], item anyelement)
AS 'MODULE_PATHNAME', 'hb_predict_targets_batch'
LANGUAGE C STABLE;

/* ---- end of several targets ---- */

/* ---- tuned small tree ensembles (docs/willump.md) ---- */

/*
 * A tuning's cheap model may be a small tree ensemble fitted to the full
 * margins: approx_features holds its flat codes, approx_params its
 * thresholds and leaf values (src/core/distill.h).
 */
ALTER TABLE hbird.tuning DROP CONSTRAINT tuning_approx_kind_check;
ALTER TABLE hbird.tuning ADD CONSTRAINT tuning_approx_kind_check
	CHECK (approx_kind IN ('prefix', 'linear', 'trees'));

/* ---- end of tuned small tree ensembles ---- */

/* ---- two-stage approximate top-K (docs/willump.md) ---- */

/*
 * A top-K tuning's optional second stage: the rows the cheap model passes
 * are scored by the model's first refine_trees trees, as (refine_scale *
 * partial + refine_shift) + refine_slack, and only those that pass the cut
 * with that score too are finished (src/core/approx.h).  NULL: none.
 */
ALTER TABLE hbird.tuning
	ADD COLUMN refine_trees integer CHECK (refine_trees > 0),
	ADD COLUMN refine_scale double precision,
	ADD COLUMN refine_shift double precision,
	ADD COLUMN refine_slack double precision,
	ADD CONSTRAINT tuning_refine_check CHECK
		((refine_trees IS NULL) = (refine_scale IS NULL) AND
		 (refine_trees IS NULL) = (refine_shift IS NULL) AND
		 (refine_trees IS NULL) = (refine_slack IS NULL));

/*
 * A top-K tuning's cut relative to the bar: a row is finished only when its
 * screening score is at or above (1 - bar_slope) * max(b, bar_floor) +
 * bar_slope * bar_floor - bar_margin, b the k-th best full margin so far
 * (src/core/approx.h, docs/willump.md).  NULL: the fixed cut alone.
 */
ALTER TABLE hbird.tuning
	ADD COLUMN bar_slope double precision CHECK (bar_slope >= 0 AND bar_slope <= 1),
	ADD COLUMN bar_floor double precision,
	ADD COLUMN bar_margin double precision,
	ADD CONSTRAINT tuning_bar_check CHECK
		((bar_slope IS NULL) = (bar_floor IS NULL) AND
		 (bar_slope IS NULL) = (bar_margin IS NULL));

/*
 * A top-K tuning's gate: a linear model on features the cheap model reads
 * (gate_features; gate_params holds the values of missing features, the
 * weights and the bias, as approx_params does for a linear cheap model).
 * Its score plus gate_slack is one more term of the screening score, and
 * where no row may wait a row below the cut by it skips the cheap model
 * (src/core/approx.h).  NULL: none.
 */
ALTER TABLE hbird.tuning
	ADD COLUMN gate_features integer[],
	ADD COLUMN gate_params double precision[],
	ADD COLUMN gate_slack double precision,
	ADD CONSTRAINT tuning_gate_check CHECK
		((gate_features IS NULL) = (gate_params IS NULL) AND
		 (gate_features IS NULL) = (gate_slack IS NULL));

/* ---- end of two-stage approximate top-K ---- */

/* ---- Scale-out: scoring on shards, models on every node (docs/scale-out.md) ---- */

/*
 * The pinned forms of the scoring functions: what a coordinator ships to a
 * shard through postgres_fdw.  The row comes as column names and values
 * (bound by those names), the model version as its number and SHA-256 (the
 * call raises an error, naming the server and both versions, where the
 * active version is another), origin names the server the call was planned
 * for.  The planner writes them from plain calls over foreign tables; they
 * are IMMUTABLE because, given the pinned version, the answer is fixed,
 * and only immutable functions are shipped.  columns NULL: the one value
 * is an array, bound by position.  Their planner support function answers
 * nothing: it makes the planner load hbird before it plans any of them, so
 * that the check of the caller's right to score (pg_pushdown.c) runs in a
 * backend that has not loaded hbird yet too.  The plain scoring functions
 * have it too (below): the statement whose planning loads hbird is then
 * batched like the later ones (src/pg_scan_plan.c).
 */
CREATE FUNCTION hbird.scoring_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'hb_scoring_support' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION hbird.scoring_support(internal) FROM PUBLIC;
CREATE FUNCTION hb_predict_pinned(name text, version integer, sha256 text,
								  origin text, columns text[], VARIADIC "any")
RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_pinned' LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT hbird.scoring_support;
CREATE FUNCTION hb_predict_proba_pinned(name text, version integer, sha256 text,
										origin text, columns text[], VARIADIC "any")
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_pinned' LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT hbird.scoring_support;
CREATE FUNCTION hb_predict_margin_pinned(name text, version integer, sha256 text,
										 origin text, columns text[], VARIADIC "any")
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_pinned' LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT hbird.scoring_support;
CREATE FUNCTION hb_predict_class_pinned(name text, version integer, sha256 text,
										origin text, columns text[], VARIADIC "any")
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_pinned' LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT hbird.scoring_support;
CREATE FUNCTION hb_predict_targets_pinned(name text, version integer, sha256 text,
										  origin text, columns text[], VARIADIC "any")
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_targets_pinned' LANGUAGE C IMMUTABLE PARALLEL SAFE
SUPPORT hbird.scoring_support;

/*
 * the plain scoring functions load hbird when planned, too (above), and so
 * do the aggregates' transition functions, whose cost the planner asks
 */
DO $$
DECLARE
	f pg_catalog.regprocedure;
BEGIN
	FOR f IN
		SELECT p.oid::pg_catalog.regprocedure
		FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_depend d
		  ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
		 AND d.objid OPERATOR(pg_catalog.=) p.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
		JOIN pg_catalog.pg_extension e
		  ON d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
		 AND d.refobjid OPERATOR(pg_catalog.=) e.oid
		WHERE e.extname OPERATOR(pg_catalog.=) 'hbird' AND p.prokind OPERATOR(pg_catalog.=) 'f'
		  AND p.proname OPERATOR(pg_catalog.=) ANY ('{hb_predict,hb_predict_proba,hb_predict_margin,hb_predict_class,hb_predict_targets,hb_predict_batch,hb_predict_class_batch,hb_predict_targets_batch,hb_predict_agg_sfunc,hb_predict_class_agg_sfunc,hb_predict_targets_agg_sfunc}'::pg_catalog.name[])
	LOOP
		EXECUTE pg_catalog.format('ALTER FUNCTION %s SUPPORT hbird.scoring_support', f);
	END LOOP;
END
$$;

/*
 * On the coordinator: make a model version (default: the active one) with
 * its activation, grants and tunings present on every shard, that is every
 * postgres_fdw server whose extensions option lists hbird, through the
 * caller's user mappings, inside the caller's transaction.  Model owners
 * and superusers; EXECUTE granted by the DBA.
 */
CREATE FUNCTION hb_model_distribute(name text, version integer DEFAULT NULL)
RETURNS TABLE (server name, shard_version integer, shard_sha256 text, action text)
AS 'MODULE_PATHNAME', 'hb_model_distribute'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;

/*
 * On a shard: store what hb_model_distribute sends (called by it, through
 * the foreign server's connection).  The same rules as hb_model_upload: an
 * existing model is changed by its owner's members and superusers.
 */
CREATE FUNCTION hb_model_receive(name text, version integer, format text,
								 features text[], body bytea, sha256 text,
								 owner name, active boolean, grants name[],
								 tunings json, tuning_candidates json)
RETURNS text
AS 'MODULE_PATHNAME', 'hb_model_receive'
LANGUAGE C VOLATILE
SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION hb_model_distribute(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_model_receive(text, integer, text, text[], bytea, text,
										name, boolean, name[], json, json) FROM PUBLIC;

/*
 * Every shard's active versions next to the coordinator's (one model, or
 * all): a row per (shard, model) that either side has.
 */
CREATE FUNCTION hb_model_shards(name text DEFAULT NULL)
RETURNS TABLE (server name, model text, version integer, sha256 text,
			   shard_version integer, shard_sha256 text, in_sync boolean)
AS 'MODULE_PATHNAME', 'hb_model_shards'
LANGUAGE C VOLATILE;

/* ---- end of scale-out ---- */

/* ---- Deletes cascade by triggers, not foreign keys ---- */

/*
 * pg_restore --jobs loads an extension's configuration tables at the same
 * time (it cannot order their data), and a foreign key between them made
 * the COPY of whichever came first fail: a half-restored catalog.  The
 * tables' rows are written together by hbird's functions; deletes cascade
 * as the foreign keys did.
 */
ALTER TABLE hbird.model_version DROP CONSTRAINT model_version_name_fkey;
ALTER TABLE hbird.model_feature DROP CONSTRAINT model_feature_name_version_fkey;
ALTER TABLE hbird.model_grant DROP CONSTRAINT model_grant_name_fkey;
ALTER TABLE hbird.tuning DROP CONSTRAINT tuning_name_version_fkey;
ALTER TABLE hbird.tuning_candidate DROP CONSTRAINT tuning_candidate_name_version_kind_k_fkey;

CREATE FUNCTION hbird.cascade_delete() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF TG_TABLE_NAME = 'model' THEN
		DELETE FROM hbird.model_version WHERE name = OLD.name;
		DELETE FROM hbird.model_grant WHERE name = OLD.name;
	ELSIF TG_TABLE_NAME = 'model_version' THEN
		DELETE FROM hbird.model_feature WHERE name = OLD.name AND version = OLD.version;
		DELETE FROM hbird.tuning WHERE name = OLD.name AND version = OLD.version;
	ELSIF TG_TABLE_NAME = 'tuning' THEN
		DELETE FROM hbird.tuning_candidate
		WHERE name = OLD.name AND version = OLD.version AND kind = OLD.kind AND k = OLD.k;
	END IF;
	RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION hbird.cascade_delete() FROM PUBLIC;

CREATE TRIGGER cascade_delete AFTER DELETE ON hbird.model
	FOR EACH ROW EXECUTE FUNCTION hbird.cascade_delete();
CREATE TRIGGER cascade_delete AFTER DELETE ON hbird.model_version
	FOR EACH ROW EXECUTE FUNCTION hbird.cascade_delete();
CREATE TRIGGER cascade_delete AFTER DELETE ON hbird.tuning
	FOR EACH ROW EXECUTE FUNCTION hbird.cascade_delete();

/* ---- end of cascading deletes ---- */

/* ---- Compiled images compressed with lz4 ---- */

/*
 * An image is not as compact as 0.1.0 assumed: lz4 stores the anchor
 * model's 8.1 MB image in 1.8 MB, and a new backend's first call is no
 * slower (docs/design.md, "Fast first call in a new backend").  Less to
 * write also shortens the stretch of an upload that cannot be cancelled
 * (writing the row's TOAST chunks).  Without lz4 the image stays
 * uncompressed: pglz is slow on megabytes and cannot be interrupted.
 * Images stored before keep their form.
 */
DO $$
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.pg_settings
			   WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
		ALTER TABLE hbird.model_version ALTER COLUMN image SET STORAGE EXTENDED;
		ALTER TABLE hbird.model_version ALTER COLUMN image SET COMPRESSION lz4;
	END IF;
END
$$;

/* ---- end of compressed images ---- */

/* ---- Group states the planner can size ---- */

/*
 * A group of hb_predict_agg or hb_predict_class_agg keeps a small state and
 * one prediction a row (its buffers grow with the group).  Without SSPACE
 * the planner assumes 8 kB a group, as for any internal state, and
 * HashAggregate spills groups that would fit: 2,000 groups of 100 rows
 * took 257 batches under the default work_mem, and take one
 * (test/sql_shell/agg_groups.sh).  HashAggregate still spills on the memory
 * the groups really use.  hb_topk_agg keeps K whole rows a group: the
 * default stays.
 */
CREATE OR REPLACE AGGREGATE hb_predict_agg(name text, "row" record) (
	SFUNC = hb_predict_agg_sfunc,
	STYPE = internal,
	SSPACE = 1024,
	FINALFUNC = hb_predict_agg_final,
	PARALLEL = SAFE
);
CREATE OR REPLACE AGGREGATE hb_predict_class_agg(name text, "row" record) (
	SFUNC = hb_predict_class_agg_sfunc,
	STYPE = internal,
	SSPACE = 1024,
	FINALFUNC = hb_predict_class_agg_final,
	PARALLEL = SAFE
);

/* ---- end of group states ---- */

/* ---- The shared cache of compiled models (docs/operations.md) ---- */

/*
 * hbird.shared_cache_size of the server's shared memory keeps compiled
 * models for every backend (src/pg_shared_cache.c).  Sizes and counters
 * only, no model's name or content: every role may read them.  Zeros where
 * there is no shared cache (hbird not preloaded, or a size of 0).
 */
CREATE FUNCTION hb_stat_shared_cache(
	OUT size_bytes bigint, OUT used_bytes bigint, OUT entries integer,
	OUT pinned integer, OUT hits bigint, OUT stored bigint,
	OUT evicted bigint, OUT not_stored bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'hb_stat_shared_cache'
LANGUAGE C VOLATILE STRICT PARALLEL SAFE;

/* ---- end of the shared cache ---- */

/* ---- Values read on a shard as the coordinator reads them ---- */

/*
 * hb_read_as(value, NULL::type): value through its output function and
 * type's input function with the second argument's typmod, as postgres_fdw
 * and the coordinator read a column a foreign table declares with another
 * type than the shard's (src/pg_read_as.c).  The wrapped queries that make
 * shards compute scores (src/pg_remote_scores.c) pass the elements of an
 * array a call scores through it (a pinned call reads the values of a row
 * as declared itself); where the types are the same, its planner support
 * function removes the call.  Not strict: the second argument is always
 * NULL.
 */
CREATE FUNCTION hbird.read_as_support(internal) RETURNS internal
AS 'MODULE_PATHNAME', 'hb_read_as_support' LANGUAGE C STRICT;
REVOKE ALL ON FUNCTION hbird.read_as_support(internal) FROM PUBLIC;
CREATE FUNCTION hb_read_as(value "any", type_of anyelement) RETURNS anyelement
AS 'MODULE_PATHNAME', 'hb_read_as' LANGUAGE C STABLE PARALLEL SAFE
SUPPORT hbird.read_as_support;

/* ---- end of values read on a shard ---- */
