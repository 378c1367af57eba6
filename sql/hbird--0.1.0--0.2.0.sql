/* hbird 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION hbird UPDATE TO '0.2.0'" to load this file. \quit

/*
 * Every schema change from 0.1.0 on ships in an upgrade script; a fresh
 * CREATE EXTENSION runs hbird--0.1.0.sql and then this file, so fresh and
 * upgraded installations cannot drift apart.  Keep sections per feature.
 */

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
