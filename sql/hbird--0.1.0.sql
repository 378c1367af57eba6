/* hbird 0.1.0: model catalog, upload, scoring */

\echo Use "CREATE EXTENSION hbird" to load this file. \quit

/*
 * Catalog.  Extension-owned tables in their own schema; the functions read
 * them with direct scans (no SQL, so no search_path exposure) and write them
 * with schema-qualified SQL from SECURITY DEFINER functions pinned to
 * pg_catalog.
 */
CREATE SCHEMA hbird;
REVOKE ALL ON SCHEMA hbird FROM PUBLIC;

CREATE TABLE hbird.model (
	name			text COLLATE "C" PRIMARY KEY
					CHECK (name <> '' AND octet_length(name) <= 200),
	owner			regrole NOT NULL,
	active_version	integer,
	last_version	integer NOT NULL,
	created_at		timestamptz NOT NULL DEFAULT pg_catalog.now()
);

CREATE TABLE hbird.model_version (
	name			text COLLATE "C" NOT NULL
					REFERENCES hbird.model (name) ON DELETE CASCADE,
	version			integer NOT NULL CHECK (version > 0),
	format			text NOT NULL,
	task			text NOT NULL,
	objective		text,
	n_features		integer NOT NULL,
	n_outputs		integer NOT NULL,
	n_classes		integer NOT NULL,
	n_trees			integer NOT NULL,
	max_depth		integer NOT NULL,
	feature_names	text[],			/* the upload's features argument, if any */
	body			bytea NOT NULL,	/* the uploaded bytes, verbatim */
	image			bytea,			/* compiled IR image: what backends load */
	sha256			bytea NOT NULL,
	size_bytes		bigint NOT NULL,
	uploaded_by		regrole NOT NULL,
	uploaded_at		timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (name, version)
);

/* images are read whole and are already compact: no compression */
ALTER TABLE hbird.model_version ALTER COLUMN image SET STORAGE EXTERNAL;

/*
 * Model files compress well, but pglz is slow on tens of megabytes and
 * cannot be interrupted: use lz4 where the server has it, else store the
 * bytes uncompressed.
 */
DO $$
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.pg_settings
			   WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals)) THEN
		ALTER TABLE hbird.model_version ALTER COLUMN body SET COMPRESSION lz4;
	ELSE
		ALTER TABLE hbird.model_version ALTER COLUMN body SET STORAGE EXTERNAL;
	END IF;
END
$$;

CREATE TABLE hbird.model_feature (
	name			text COLLATE "C" NOT NULL,
	version			integer NOT NULL,
	position		integer NOT NULL,
	feature			text NOT NULL,
	type			text NOT NULL,
	PRIMARY KEY (name, version, position),
	FOREIGN KEY (name, version) REFERENCES hbird.model_version (name, version)
		ON DELETE CASCADE
);

/* who may score a model besides its owner; grantee 0 ("-") is PUBLIC */
CREATE TABLE hbird.model_grant (
	name			text COLLATE "C" NOT NULL
					REFERENCES hbird.model (name) ON DELETE CASCADE,
	grantee			regrole NOT NULL,
	granted_by		regrole NOT NULL,
	granted_at		timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (name, grantee)
);

SELECT pg_catalog.pg_extension_config_dump('hbird.model', '');
SELECT pg_catalog.pg_extension_config_dump('hbird.model_version', '');
SELECT pg_catalog.pg_extension_config_dump('hbird.model_feature', '');
SELECT pg_catalog.pg_extension_config_dump('hbird.model_grant', '');

/* Administration: revoked from PUBLIC below, granted by the DBA. */

CREATE FUNCTION hb_model_upload(name text, model bytea,
								format text DEFAULT 'auto',
								features text[] DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_model_upload_bytea'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION hb_model_upload(name text, model text,
								format text DEFAULT 'auto',
								features text[] DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_model_upload_text'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION hb_model_activate(name text, version integer)
RETURNS void
AS 'MODULE_PATHNAME', 'hb_model_activate'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION hb_model_drop(name text)
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_model_drop_all'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION hb_model_drop(name text, version integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_model_drop_version'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION hb_model_grant(name text, role name)
RETURNS void
AS 'MODULE_PATHNAME', 'hb_model_grant'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

CREATE FUNCTION hb_model_revoke(name text, role name)
RETURNS void
AS 'MODULE_PATHNAME', 'hb_model_revoke'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

REVOKE ALL ON FUNCTION hb_model_upload(text, bytea, text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_model_upload(text, text, text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_model_activate(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_model_drop(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_model_drop(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_model_grant(text, name) FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_model_revoke(text, name) FROM PUBLIC;

/*
 * Scoring.  Invoker's rights: the functions check the model's grants
 * themselves.  STABLE because they read the catalog under the statement's
 * snapshot; PARALLEL SAFE because that snapshot is shared with workers.
 */

CREATE FUNCTION hb_predict(name text, "row" record)
RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_record'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict(name text, x double precision[])
RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_array'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict(name text, x real[])
RETURNS double precision
AS 'MODULE_PATHNAME', 'hb_predict_array'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_proba(name text, "row" record)
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_record'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_proba(name text, x double precision[])
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_array'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_proba(name text, x real[])
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_proba_array'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_margin(name text, "row" record)
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_record'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_margin(name text, x double precision[])
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_array'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_margin(name text, x real[])
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_margin_array'
LANGUAGE C STABLE PARALLEL SAFE;

/* Catalog views: metadata only, readable by everyone. */

CREATE VIEW hb_models AS
SELECT v.name,
	   v.version,
	   (m.active_version IS NOT DISTINCT FROM v.version) AS active,
	   v.format,
	   v.task,
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
	   m.owner
FROM hbird.model m
JOIN hbird.model_version v ON v.name OPERATOR(pg_catalog.=) m.name;

CREATE VIEW hb_model_features AS
SELECT name, version, position, feature, type
FROM hbird.model_feature;

CREATE VIEW hb_model_grants AS
SELECT name, grantee, granted_by, granted_at
FROM hbird.model_grant;

GRANT SELECT ON hb_models, hb_model_features, hb_model_grants TO PUBLIC;

/* Batched scoring. */

CREATE FUNCTION hb_predict_agg_sfunc(internal, name text, "row" record)
RETURNS internal
AS 'MODULE_PATHNAME', 'hb_predict_agg_sfunc'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_agg_final(internal)
RETURNS double precision[]
AS 'MODULE_PATHNAME', 'hb_predict_agg_final'
LANGUAGE C STABLE PARALLEL SAFE;

/* predictions of a group's rows, in input order (use ORDER BY inside) */
CREATE AGGREGATE hb_predict_agg(name text, "row" record) (
	SFUNC = hb_predict_agg_sfunc,
	STYPE = internal,
	FINALFUNC = hb_predict_agg_final,
	PARALLEL = SAFE
);

/* every row of a query (default: the table behind the row type), scored */
CREATE FUNCTION hb_predict_batch(name text, rowtype anyelement, query text DEFAULT NULL)
RETURNS TABLE (score double precision, item anyelement)
AS 'MODULE_PATHNAME', 'hb_predict_batch'
LANGUAGE C STABLE;

/* compile the active version into this backend's cache; show its plan */
CREATE FUNCTION hb_compile(name text, batch_size integer DEFAULT NULL)
RETURNS TABLE (step integer, op text, strategy text, input_shape text,
			   output_shape text, param_bytes bigint, est_flops double precision,
			   device text)
AS 'MODULE_PATHNAME', 'hb_compile'
LANGUAGE C STABLE;

/* Ranking: the K best rows by score, best first; ties go to input order. */

CREATE FUNCTION hb_topk(name text, k integer, rowtype anyelement,
						query text DEFAULT NULL, mode text DEFAULT 'auto')
RETURNS TABLE (rank integer, score double precision, item anyelement)
AS 'MODULE_PATHNAME', 'hb_topk'
LANGUAGE C STABLE;

CREATE FUNCTION hb_topk_agg_sfunc(internal, name text, k integer, "row" anyelement)
RETURNS internal
AS 'MODULE_PATHNAME', 'hb_topk_agg_sfunc'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_topk_agg_final(internal, name text, k integer, "row" anyelement)
RETURNS anyarray
AS 'MODULE_PATHNAME', 'hb_topk_agg_final'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE AGGREGATE hb_topk_agg(name text, k integer, "row" anyelement) (
	SFUNC = hb_topk_agg_sfunc,
	STYPE = internal,
	FINALFUNC = hb_topk_agg_final,
	FINALFUNC_EXTRA,
	PARALLEL = SAFE
);

/* what the last top-K of this backend scored, to see the pruning */
CREATE FUNCTION hb_topk_stats(OUT rows bigint, OUT rows_fully_scored bigint,
							  OUT pairs_scored bigint, OUT pairs_total bigint)
AS 'MODULE_PATHNAME', 'hb_topk_stats'
LANGUAGE C VOLATILE;
