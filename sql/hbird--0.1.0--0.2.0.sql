/* hbird 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION hbird UPDATE TO '0.2.0'" to load this file. \quit

/*
 * Every schema change from 0.1.0 on ships in an upgrade script; a fresh
 * CREATE EXTENSION runs hbird--0.1.0.sql and then this file, so fresh and
 * upgraded installations cannot drift apart.  Keep sections per feature.
 */

/* ---- Statistics for operators: hb_stat_models (docs/operations.md) ---- */

/*
 * The shared-memory counters of the current database; rows of models the
 * caller may not score are left out unless the caller is a superuser or has
 * the privileges of pg_read_all_stats.  Raises 55000 unless hbird is in
 * shared_preload_libraries.
 */
CREATE FUNCTION hbird.stat_models(
	OUT name text, OUT version integer, OUT sha256 bytea,
	OUT calls bigint, OUT rows bigint,
	OUT total_time double precision, OUT mean_time double precision,
	OUT strategy text, OUT cache_hits bigint, OUT cache_misses bigint,
	OUT compile_time double precision, OUT topk_calls bigint,
	OUT topk_rows_pruned bigint, OUT topk_pairs_pruned bigint,
	OUT last_used timestamptz, OUT stats_since timestamptz,
	OUT timed_calls bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'hb_stat_models'
LANGUAGE C VOLATILE;

/* versions dropped since fall out through the join on the content hash */
CREATE VIEW hb_stat_models AS
SELECT s.name, s.version, s.calls, s.rows, s.total_time, s.mean_time,
	   s.strategy, s.cache_hits, s.cache_misses, s.compile_time,
	   s.topk_calls, s.topk_rows_pruned, s.topk_pairs_pruned,
	   s.last_used, s.stats_since
FROM hbird.stat_models() s
JOIN hbird.model_version v
  ON v.name OPERATOR(pg_catalog.=) (s.name COLLATE "C")
 AND v.version OPERATOR(pg_catalog.=) s.version
 AND v.sha256 OPERATOR(pg_catalog.=) s.sha256;

GRANT SELECT ON hb_stat_models TO PUBLIC;

/* discard the current database's statistics: all, or one model's */
CREATE FUNCTION hb_stat_models_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'hb_stat_models_reset_all'
LANGUAGE C VOLATILE;

CREATE FUNCTION hb_stat_models_reset(name text)
RETURNS void
AS 'MODULE_PATHNAME', 'hb_stat_models_reset_name'
LANGUAGE C VOLATILE;

REVOKE ALL ON FUNCTION hb_stat_models_reset() FROM PUBLIC;
REVOKE ALL ON FUNCTION hb_stat_models_reset(text) FROM PUBLIC;
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
