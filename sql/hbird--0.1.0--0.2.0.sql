/* hbird 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION hbird UPDATE TO '0.2.0'" to load this file. \quit

/*
 * Every schema change from 0.1.0 on ships in an upgrade script; a fresh
 * CREATE EXTENSION runs hbird--0.1.0.sql and then this file, so fresh and
 * upgraded installations cannot drift apart.  Keep sections per feature.
 */

/* ---- Predicted classes, with the exact early exit ---- */

/*
 * The class index a classifier predicts: binary, 1 when the positive
 * probability is above 0.5; multiclass, the most probable class (the first
 * on ties).  Tree classifiers stop walking trees once the class is settled
 * (hbird.early_exit); the answer is that of full scoring.
 */
CREATE FUNCTION hb_predict_class(name text, "row" record)
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_record'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_class(name text, x double precision[])
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_array'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_class(name text, x real[])
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_predict_class_array'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_class_agg_sfunc(internal, name text, "row" record)
RETURNS internal
AS 'MODULE_PATHNAME', 'hb_predict_class_agg_sfunc'
LANGUAGE C STABLE PARALLEL SAFE;

CREATE FUNCTION hb_predict_class_agg_final(internal)
RETURNS integer[]
AS 'MODULE_PATHNAME', 'hb_predict_class_agg_final'
LANGUAGE C STABLE PARALLEL SAFE;

/* classes of a group's rows, in input order (use ORDER BY inside) */
CREATE AGGREGATE hb_predict_class_agg(name text, "row" record) (
	SFUNC = hb_predict_class_agg_sfunc,
	STYPE = internal,
	FINALFUNC = hb_predict_class_agg_final,
	PARALLEL = SAFE
);

/* every row of a query (default: the table behind the row type), classified */
CREATE FUNCTION hb_predict_class_batch(name text, rowtype anyelement, query text DEFAULT NULL)
RETURNS TABLE (class integer, item anyelement)
AS 'MODULE_PATHNAME', 'hb_predict_class_batch'
LANGUAGE C STABLE;

/* what this backend's class predictions scored, to see the early exit */
CREATE FUNCTION hb_class_stats(OUT rows bigint, OUT rows_early bigint,
							   OUT pairs_scored bigint, OUT pairs_total bigint)
AS 'MODULE_PATHNAME', 'hb_class_stats'
LANGUAGE C VOLATILE;

CREATE FUNCTION hb_class_stats_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'hb_class_stats_reset'
LANGUAGE C VOLATILE;
