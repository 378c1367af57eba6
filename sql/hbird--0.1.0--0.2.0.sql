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
/* ---- Statistical shortcuts: tuned approximations (approximate top-K, cascades) ---- */

/*
 * One tuned configuration per model version, kind and k (k = 0 for
 * cascades): the chosen cheap model and its parameters, and what was
 * measured.  A tuning belongs to one version: it is used only while that
 * version is active, and goes with the version when it is dropped.
 */
CREATE TABLE hbird.tuning (
	name			text COLLATE "C" NOT NULL,
	version			integer NOT NULL,
	kind			text NOT NULL CHECK (kind IN ('topk', 'cascade')),
	k				integer NOT NULL CHECK (k >= 0),
	target			double precision NOT NULL,
	confidence		double precision NOT NULL,
	seed			integer NOT NULL,
	sample_rows		bigint NOT NULL,
	eval_rows		bigint NOT NULL,
	approximation	text NOT NULL,
	approx_kind		text NOT NULL CHECK (approx_kind IN ('prefix', 'linear')),
	approx_trees	integer NOT NULL,
	approx_features integer[] NOT NULL,
	approx_params	double precision[] NOT NULL,
	ratio			double precision,	/* top-K: rows re-scored per row returned */
	kept			integer,			/* top-K: at least this many re-scored */
	cheap_cut		double precision,	/* top-K: rows at or above it are re-scored */
	threshold		double precision,	/* cascade: confidence gap */
	accuracy		double precision NOT NULL,
	accuracy_bound	double precision NOT NULL,
	coverage		double precision NOT NULL,
	full_cost_us	double precision NOT NULL,
	approx_cost_us	double precision NOT NULL,
	expected_speedup double precision NOT NULL,
	/* a model with featurizers: per row, all of it, and per feature group */
	featurize_us	double precision,
	feature_groups	text[],
	group_cost_us	double precision[],
	tuned_by		regrole NOT NULL,
	tuned_at		timestamptz NOT NULL DEFAULT pg_catalog.now(),
	PRIMARY KEY (name, version, kind, k),
	FOREIGN KEY (name, version) REFERENCES hbird.model_version (name, version)
		ON DELETE CASCADE
);

/* every configuration a tuning measured, the chosen one marked */
CREATE TABLE hbird.tuning_candidate (
	name			text COLLATE "C" NOT NULL,
	version			integer NOT NULL,
	kind			text NOT NULL,
	k				integer NOT NULL,
	candidate		integer NOT NULL,
	approximation	text NOT NULL,
	ratio			double precision,
	kept			integer,
	threshold		double precision,
	accuracy		double precision NOT NULL,
	accuracy_bound	double precision NOT NULL,
	coverage		double precision NOT NULL,
	cost_us			double precision NOT NULL,
	expected_speedup double precision NOT NULL,
	chosen			boolean NOT NULL,
	featurize_us	double precision,	/* of cost_us: featurizing its groups */
	PRIMARY KEY (name, version, kind, k, candidate),
	FOREIGN KEY (name, version, kind, k) REFERENCES hbird.tuning (name, version, kind, k)
		ON DELETE CASCADE
);

SELECT pg_catalog.pg_extension_config_dump('hbird.tuning', '');
SELECT pg_catalog.pg_extension_config_dump('hbird.tuning_candidate', '');

/*
 * Tune: runs the sample query with the caller's rights, measures the
 * candidates, returns them, and stores the chosen one through
 * hb_tune_store (which only the model's owner and model administrators
 * may run, see below).
 */
CREATE FUNCTION hb_tune(name text, sample_query text, kind text,
						k integer DEFAULT NULL,
						target double precision DEFAULT NULL,
						confidence double precision DEFAULT 0.95,
						seed integer DEFAULT 0)
RETURNS TABLE (candidate integer, approximation text, ratio double precision,
			   kept integer, threshold double precision,
			   accuracy double precision, accuracy_bound double precision,
			   coverage double precision, cost_us double precision,
			   expected_speedup double precision, chosen boolean,
			   featurize_us double precision)
AS 'MODULE_PATHNAME', 'hb_tune'
LANGUAGE C VOLATILE;

/*
 * Writing a tuning: superusers, members of the model's owner role, and
 * roles that may run hb_model_upload (model administrators).  Callable by
 * everyone, checked inside, so that an owner needs no extra grant.
 */
CREATE FUNCTION hb_tune_store(name text, version integer, kind text, k integer,
							  target double precision, confidence double precision,
							  seed integer, sample_rows bigint, eval_rows bigint,
							  chosen integer, approx_kind text, approx_trees integer,
							  approx_features integer[], approx_params double precision[],
							  cheap_cut double precision, full_cost_us double precision,
							  labels text[], measures double precision[],
							  feature_groups text[] DEFAULT NULL,
							  group_cost_us double precision[] DEFAULT NULL,
							  featurize_us double precision DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'hb_tune_store'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

/* forget a model's tunings (of one kind, or all); returns how many */
CREATE FUNCTION hb_tune_drop(name text, kind text DEFAULT NULL)
RETURNS integer
AS 'MODULE_PATHNAME', 'hb_tune_drop'
LANGUAGE C VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp;

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

CREATE VIEW hb_tuning_candidates AS
SELECT name, version, kind, NULLIF(k, 0) AS k, candidate, approximation, ratio,
	   kept, threshold, accuracy, accuracy_bound, coverage, cost_us,
	   expected_speedup, chosen, featurize_us
FROM hbird.tuning_candidate;

GRANT SELECT ON hb_tunings, hb_tuning_candidates TO PUBLIC;
/* ---- GPU execution (docs/gpu.md) ---- */

/*
 * Where batched scoring runs in this backend: hbird.device, whether hbird
 * was built with CUDA, whether a device is usable (its name) or why not,
 * and what this backend holds on it.  Probes the device at the first call.
 */
CREATE FUNCTION hb_device(OUT setting text, OUT cuda_built boolean,
						  OUT available boolean, OUT device text,
						  OUT reason text, OUT min_batch bigint,
						  OUT memory_budget bigint, OUT memory_used bigint,
						  OUT gpu_batches bigint, OUT fallbacks bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'hb_device'
LANGUAGE C VOLATILE;
/* ---- featurizer pipelines (hbird pipeline JSON, text and categorical inputs) ---- */

/*
 * A model with featurizers binds rows to its raw inputs: model_feature
 * lists those (type 'numeric' or 'text') with their featurization cost
 * class; for other models cost stays NULL.
 */
ALTER TABLE hbird.model_feature ADD COLUMN cost text;

CREATE OR REPLACE VIEW hb_model_features AS
SELECT name, version, position, feature, type, cost
FROM hbird.model_feature;

/* ---- end of featurizer pipelines ---- */
