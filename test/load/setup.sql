-- hbird load test: schema, data, fixture bodies, reference scores, and the
-- functions the pgbench scripts call.  psql variables: nrows, and one per
-- fixture (binary_logistic, binary_logitraw, reg_logistic, multi_softprob).
\set ON_ERROR_STOP 1
CREATE EXTENSION hbird;

CREATE TABLE tx (id int PRIMARY KEY, amount float8, age float8, balance float8,
                 n_tx float8, risk float8, tenure float8);
INSERT INTO tx
SELECT g, 2 * sin(g), 2 * cos(g * 0.7),
       CASE WHEN g % 7 = 0 THEN NULL ELSE 3 * sin(g * 0.3) END,
       2 * cos(g * 0.2),
       CASE WHEN g % 11 = 0 THEN NULL ELSE 2 * sin(g * 0.1) END,
       (g % 9) / 4.0 - 1
FROM generate_series(1, :nrows) g;
ANALYZE tx;

-- the fixtures every model name cycles through (same six features):
-- family ms (scored: hb_predict, _agg, _batch) and mr (ranked: one output)
CREATE TABLE hb_load_fixture (family text, file text, body text, PRIMARY KEY (family, file));
INSERT INTO hb_load_fixture VALUES
	('ms', 'binary_logistic', :'binary_logistic'),
	('ms', 'binary_logitraw', :'binary_logitraw'),
	('ms', 'reg_logistic',    :'reg_logistic'),
	('ms', 'multi_softprob',  :'multi_softprob'),
	('mr', 'binary_logistic', :'binary_logistic'),
	('mr', 'binary_logitraw', :'binary_logitraw'),
	('mr', 'reg_logistic',    :'reg_logistic');

-- reference models that never change, and every row's score under each
SELECT hb_model_upload('ref_' || file, body) FROM hb_load_fixture WHERE family = 'ms';
CREATE TABLE hb_load_ref (family text, file text, id int, pred float8);
DO $$
DECLARE f record;
BEGIN
	FOR f IN SELECT family, file FROM hb_load_fixture LOOP
		EXECUTE format('INSERT INTO hb_load_ref SELECT %L, %L, id, hb_predict(%L, t) FROM tx t',
					   f.family, f.file, 'ref_' || f.file);
	END LOOP;
END $$;
CREATE INDEX ON hb_load_ref (family, id);
ANALYZE hb_load_ref;

-- what went wrong (scorers insert only on a mismatch), what happened
CREATE UNLOGGED TABLE hb_load_bad (at timestamptz DEFAULT clock_timestamp(), script text, a int, detail text);
CREATE UNLOGGED TABLE hb_load_event (at timestamptz DEFAULT clock_timestamp(), kind text);
CREATE UNLOGGED TABLE hb_load_admin_log (at timestamptz DEFAULT clock_timestamp(), model text, op text, version int);
CREATE UNLOGGED TABLE hb_load_mem (at timestamptz DEFAULT clock_timestamp(), entries int,
	cache_bytes bigint, backend_bytes bigint, cache_limit int);

-- first versions of the three scored names
SELECT hb_model_upload('ms', :'binary_logistic');
SELECT hb_model_upload('mr', :'binary_logistic');
SELECT hb_model_upload('mx', :'binary_logistic');

-- How many fixtures of a family score rows a..a+span exactly like s: a
-- statement that saw one version matches at least one (0 = versions mixed or
-- a wrong score).
CREATE FUNCTION hb_load_versions_matching(fam text, ids int[], preds float8[])
RETURNS bigint LANGUAGE sql STABLE AS $$
	SELECT count(*) FROM (
		SELECT r.file
		FROM unnest(ids, preds) AS s(id, pred)
		JOIN hb_load_ref r ON r.family = fam AND r.id = s.id AND r.pred = s.pred
		GROUP BY r.file
		HAVING count(*) = cardinality(ids)) m
$$;

-- Scoring of the volatile model mx, which the admin drops now and then:
-- "model does not exist" (42704) is the one expected error; it is caught and
-- counted, anything else propagates (and aborts the pgbench client).
CREATE FUNCTION hb_load_score_mx(a int, span int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	n bigint; twin bigint; arr bigint; nver bigint; msg text;
BEGIN
	WITH s AS MATERIALIZED (
		SELECT t.id, hb_predict('mx', t) AS p1, hb_predict('mx', t) AS p2,
			   hb_predict('mx', ARRAY[t.amount, t.age, t.balance, t.n_tx, t.risk, t.tenure]) AS p3
		FROM tx t WHERE t.id > a AND t.id <= a + span)
	SELECT count(*), count(*) FILTER (WHERE p1 IS DISTINCT FROM p2),
		   count(*) FILTER (WHERE p1 IS DISTINCT FROM p3),
		   hb_load_versions_matching('ms', array_agg(id), array_agg(p1))
	INTO n, twin, arr, nver FROM s;
	IF twin > 0 OR arr > 0 OR nver = 0 OR n <> span THEN
		INSERT INTO hb_load_bad (script, a, detail)
		VALUES ('volatile', a, format('n=%s twin=%s array=%s versions=%s', n, twin, arr, nver));
	END IF;
	INSERT INTO hb_load_event (kind) VALUES ('mx scored');
	RETURN 0;
EXCEPTION WHEN undefined_object THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT;
	IF msg <> 'model "mx" does not exist' THEN
		RAISE;
	END IF;
	INSERT INTO hb_load_event (kind) VALUES ('42704 model "mx" does not exist');
	RETURN 1;
END $$;

-- One administrative step on a random model: upload a random fixture (new
-- active version), activate or drop a random non-active version, keep at
-- most 5 versions; mx is sometimes dropped entirely (and re-created by a
-- later step).  The active versions of ms and mr are never dropped, so
-- their scorers never see "does not exist".
CREATE FUNCTION hb_load_admin_step() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	m text := (ARRAY['ms', 'mr', 'mx'])[1 + floor(random() * 3)::int];
	fam text;
	b text;
	v int;
	r float8 := random();
	op text;
BEGIN
	fam := CASE m WHEN 'mr' THEN 'mr' ELSE 'ms' END;
	SELECT f.body INTO b FROM hb_load_fixture f WHERE f.family = fam ORDER BY random() LIMIT 1;
	IF NOT EXISTS (SELECT 1 FROM hbird.model WHERE name = m) THEN
		v := hb_model_upload(m, b); op := 'create';
	ELSIF m = 'mx' AND r < 0.15 THEN
		PERFORM hb_model_drop(m); op := 'drop all';
	ELSIF r < 0.5 THEN
		v := hb_model_upload(m, b); op := 'upload';
	ELSE
		SELECT version INTO v FROM hb_models WHERE name = m AND NOT active ORDER BY random() LIMIT 1;
		IF v IS NULL THEN
			v := hb_model_upload(m, b); op := 'upload';
		ELSIF r < 0.75 THEN
			PERFORM hb_model_activate(m, v); op := 'activate';
		ELSE
			PERFORM hb_model_drop(m, v); op := 'drop version';
		END IF;
	END IF;
	INSERT INTO hb_load_admin_log (model, op, version) VALUES (m, op, v);
	FOR v IN SELECT version FROM hb_models WHERE name = m AND NOT active
			 ORDER BY version DESC OFFSET 4 LOOP
		PERFORM hb_model_drop(m, v);
		INSERT INTO hb_load_admin_log (model, op, version) VALUES (m, 'drop old', v);
	END LOOP;
	RETURN op;
END $$;

-- This backend's plan cache: entries (one 'hbird plan' context each, under
-- 'hbird plan cache'), the cache's bytes, and the whole backend's bytes.
CREATE VIEW hb_load_cache_memory AS
SELECT count(*) FILTER (WHERE parent = 'hbird plan cache') AS entries,
	   coalesce(sum(total_bytes) FILTER (WHERE name = 'hbird plan cache' OR parent = 'hbird plan cache'), 0) AS cache_bytes,
	   sum(total_bytes) AS backend_bytes
FROM pg_backend_memory_contexts;
