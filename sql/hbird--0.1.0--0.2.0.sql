/* hbird 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION hbird UPDATE TO '0.2.0'" to load this file. \quit

/*
 * Every schema change from 0.1.0 on ships in an upgrade script; a fresh
 * CREATE EXTENSION runs hbird--0.1.0.sql and then this file, so fresh and
 * upgraded installations cannot drift apart.  Keep sections per feature.
 */

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
