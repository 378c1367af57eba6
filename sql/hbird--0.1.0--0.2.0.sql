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
