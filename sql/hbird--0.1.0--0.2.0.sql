/* hbird 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION hbird UPDATE TO '0.2.0'" to load this file. \quit

/*
 * Every schema change from 0.1.0 on ships in an upgrade script; a fresh
 * CREATE EXTENSION runs hbird--0.1.0.sql and then this file, so fresh and
 * upgraded installations cannot drift apart.  Keep sections per feature.
 */
