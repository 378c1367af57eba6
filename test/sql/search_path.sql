-- Functions are immune to search_path tricks: an operator and functions
-- shadowing pg_catalog's in a schema ahead of it change nothing.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/'
\set reg `cat :fixtures/reg_squarederror.json`
CREATE SCHEMA evil;
CREATE FUNCTION evil.texteq_trap(text, text) RETURNS boolean
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'trap fired'; RETURN true; END $$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq_trap);
CREATE FUNCTION evil.now() RETURNS timestamptz
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'trap fired'; RETURN 'epoch'; END $$;
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement
LANGUAGE plpgsql AS $$ BEGIN RAISE NOTICE 'trap fired'; END $$;
SET search_path = evil, public, pg_catalog;

SELECT hb_model_upload('sp_model', :'reg') AS version;
SELECT hb_model_upload('sp_model', :'reg') AS version;
SELECT hb_model_activate('sp_model', 1);
SELECT count(*) AS features FROM hb_model_features WHERE name OPERATOR(pg_catalog.=) 'sp_model';
SELECT hbt_close(hb_predict('sp_model', r), e.pred) FROM reg_squarederror_in r JOIN reg_squarederror_exp e USING (id) WHERE id OPERATOR(pg_catalog.=) 1;
SELECT hb_model_grant('sp_model', 'public');
-- hb_model_shards reads the active versions here through SQL (no shards here)
SELECT count(*) AS shard_rows FROM hb_model_shards('sp_model');
SELECT count(*) AS shard_rows FROM hb_model_shards();
-- the default query of hb_predict_batch / hb_topk reads the row type's own
-- table, schema-qualified: a table of that name earlier in the path is not read
CREATE TABLE evil.reg_squarederror_in (LIKE public.reg_squarederror_in);
INSERT INTO evil.reg_squarederror_in SELECT * FROM public.reg_squarederror_in LIMIT 1;
SELECT (SELECT count(*) FROM hb_predict_batch('sp_model', NULL::public.reg_squarederror_in)) AS batch_rows,
	   (SELECT count(*) FROM hb_topk('sp_model', 100000, NULL::public.reg_squarederror_in)) AS topk_rows,
	   (SELECT count(*) FROM public.reg_squarederror_in) AS table_rows;
SELECT hb_model_drop('sp_model', 2);
SELECT hb_model_drop('sp_model');

RESET search_path;
DROP SCHEMA evil CASCADE;
