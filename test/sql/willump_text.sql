-- Featurization cost and lazy featurization: a scikit-learn pipeline with a
-- text column (test/fixtures/willump/gen_willump.py, willump_text.json).
-- The word "alert" is in the note exactly when a > 0.2, and the label
-- depends on a only through a > 0.2: the cheap column and the expensive
-- text say the same.
\getenv abs_srcdir PG_ABS_SRCDIR
\set fixtures :abs_srcdir '/fixtures/willump/'
\set m `cat :fixtures/willump_text.json`
SELECT hb_model_upload('wtext', :'m');

-- the note of row id, as gen_willump.py's text_rows makes it
CREATE FUNCTION wnote(id bigint) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT string_agg(w, ' ' ORDER BY o)
	FROM (SELECT (ARRAY['amber', 'basil', 'cedar', 'delta', 'ember', 'fjord', 'glade', 'harbor',
						'indigo', 'juniper', 'kestrel', 'lagoon', 'meadow', 'nectar', 'orchid',
						'prairie'])[1 + floor((hbt_wu(id, j) + 1) * 8)::int] AS w, j::float8 AS o
		  FROM generate_series(3, 8) j
		  UNION ALL
		  SELECT 'alert', 4.5 WHERE hbt_wu(id, 0) > 0.2) q
$$;
CREATE TABLE notes AS
SELECT id, hbt_wu(id, 0) AS a, hbt_wu(id, 1) AS b, hbt_wu(id, 2) AS c, wnote(id) AS note
FROM generate_series(100001, 112000) id;
-- the full model's answers, before any shortcut exists
CREATE TABLE exact_notes AS
SELECT id, hb_predict('wtext', n) AS p, hb_predict_class('wtext', n) AS cls FROM notes n;
SELECT count(*) AS rows, count(*) FILTER (WHERE cls = 1) BETWEEN 2000 AND 8000 AS both_classes
FROM exact_notes;

SET client_min_messages = warning;

-- ---- featurization cost in the tuning and the catalog ----
CREATE TABLE ttune AS
SELECT * FROM hb_tune('wtext', $$SELECT * FROM notes WHERE id <= 110000$$,
					  kind => 'cascade', target => 0.02, seed => 4);
SELECT count(*) FILTER (WHERE chosen) AS chosen,
	   bool_and(featurize_us IS NOT NULL AND featurize_us <= cost_us) AS featurize_part_of_cost,
	   -- some candidate reads only the cheap columns
	   min(featurize_us) FILTER (WHERE approximation LIKE 'linear%') <
	   max(featurize_us) / 4 AS a_cheap_candidate
FROM ttune;
SELECT name, kind, feature_groups,
	   group_cost_us[4] > 4 * greatest(group_cost_us[1], group_cost_us[2], group_cost_us[3]) AS note_costs_most,
	   featurize_us >= group_cost_us[4] / 2 AS featurize_all,
	   full_cost_us > featurize_us AS full_includes_featurization
FROM hb_tunings WHERE name = 'wtext';
-- (how many linear candidates differ depends on measured costs)
SELECT count(*) > 5 AS candidates, count(*) = count(featurize_us) AS all_with_featurize_cost,
	   count(*) FILTER (WHERE chosen) AS chosen
FROM hb_tuning_candidates WHERE name = 'wtext';
-- the stored candidates are what hb_tune returned
SELECT count(*) AS differ
FROM ttune t FULL JOIN hb_tuning_candidates c ON c.name = 'wtext' AND c.candidate = t.candidate
WHERE (t.approximation, t.featurize_us, t.chosen) IS DISTINCT FROM (c.approximation, c.featurize_us, c.chosen);

-- ---- lazy featurization: same answers as featurizing everything ----
-- what the batching scan scored in full and read for a cheap model alone
-- (EXPLAIN ANALYZE's Rows Scored and Rows Read Lazily)
CREATE FUNCTION scan_rows(q text, OUT scored bigint, OUT lazily bigint)
LANGUAGE plpgsql AS $$
DECLARE
	j	jsonb;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) ' || q INTO j;
	scored := jsonb_path_query_first(j, 'strict $.**."Rows Scored"')::bigint;
	lazily := jsonb_path_query_first(j, 'strict $.**."Rows Read Lazily"')::bigint;
END $$;
-- a cascade through a linear model on a, b, c (features 0, 1, 2): the
-- note is featurized only for the rows it cannot decide
-- (planted by hand, as a superuser may: hb_tune would pick its own)
DELETE FROM hbird.tuning WHERE name = 'wtext' AND kind = 'cascade';
INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed,
	sample_rows, eval_rows, approximation, approx_kind, approx_trees,
	approx_features, approx_params, threshold, accuracy, accuracy_bound,
	coverage, full_cost_us, approx_cost_us, expected_speedup, tuned_by)
VALUES ('wtext', 1, 'cascade', 0, 0.02, 0.95, 0, 1000, 500, 'cheap', 'linear', 0,
	'{0,1,2}', '{0,0,0, 3,0,0, -1.3}', 2.0, 0.99, 0.98, 0.5, 1.0, 0.5, 2, current_user);
SET hbird.cascade = on;
SET hbird.lazy_featurize = off;
CREATE TABLE eager AS
SELECT id, hb_predict('wtext', n) AS p, hb_predict_class('wtext', n) AS cls FROM notes n;
CREATE TABLE eager_agg AS
SELECT unnest(hb_predict_agg('wtext', n ORDER BY id)) AS p,
	   unnest(hb_predict_class_agg('wtext', n ORDER BY id)) AS cls,
	   unnest(array_agg(id ORDER BY id)) AS id FROM notes n;
CREATE TABLE eager_batch AS
SELECT (item).id, score AS p FROM hb_predict_batch('wtext', NULL::notes);
CREATE TABLE eager_cbatch AS
SELECT (item).id, class AS cls FROM hb_predict_class_batch('wtext', NULL::notes);
SET hbird.lazy_featurize = on;
-- the cascade decides some rows cheaply and sends the others on
SELECT count(*) FILTER (WHERE e.p <> x.p) > 1000 AS cheap_answers,
	   count(*) FILTER (WHERE e.p = x.p) > 1000 AS full_answers
FROM eager e JOIN exact_notes x USING (id);
SELECT count(*) AS differ FROM notes n JOIN eager e USING (id)
WHERE hb_predict('wtext', n) IS DISTINCT FROM e.p OR hb_predict_class('wtext', n) IS DISTINCT FROM e.cls;
SELECT count(*) AS differ
FROM (SELECT unnest(hb_predict_agg('wtext', n ORDER BY id)) AS p,
			 unnest(hb_predict_class_agg('wtext', n ORDER BY id)) AS cls,
			 unnest(array_agg(id ORDER BY id)) AS id FROM notes n) l
JOIN eager_agg e USING (id) WHERE (l.p, l.cls) IS DISTINCT FROM (e.p, e.cls);
SELECT count(*) AS differ
FROM hb_predict_batch('wtext', NULL::notes) b JOIN eager_batch e ON e.id = (b.item).id
WHERE b.score IS DISTINCT FROM e.p;
SELECT count(*) AS differ
FROM hb_predict_class_batch('wtext', NULL::notes) b JOIN eager_cbatch e ON e.id = (b.item).id
WHERE b.class IS DISTINCT FROM e.cls;
-- the batching scan: every row featurized for the cheap model, the rows
-- it cannot decide again in full (read from the kept tuples), as the
-- row-at-a-time and eager forms answer
SELECT count(*) AS rows, count(*) FILTER (WHERE (l.p, l.cls) IS DISTINCT FROM (e.p, e.cls)) AS differ
FROM (SELECT id, hb_predict('wtext', n) AS p, hb_predict_class('wtext', n) AS cls FROM notes n) l
JOIN eager e USING (id);
SELECT lazily = (SELECT count(*) FROM notes) AS all_lazily
FROM scan_rows('SELECT id, hb_predict(''wtext'', n), hb_predict_class(''wtext'', n) FROM notes n');
SELECT count(*) FILTER (WHERE hb_predict_class('wtext', n) = 1) =
	   (SELECT count(*) FILTER (WHERE cls = 1) FROM eager) AS filter_same
FROM notes n;
SET hbird.lazy_featurize = off;
SELECT lazily IS NULL AS none_lazily
FROM scan_rows('SELECT id, hb_predict(''wtext'', n), hb_predict_class(''wtext'', n) FROM notes n');
SET hbird.lazy_featurize = on;
-- rows without a tuple of their own (c was added after they were written,
-- so the scan projects) are read in full at once, and the rows the cheap
-- model cannot decide are completed from there: the same answers
CREATE TABLE notes_added AS SELECT id, a, b, note FROM notes;
ALTER TABLE notes_added ADD COLUMN c float8 DEFAULT 0.25;
SET hbird.lazy_featurize = off;
CREATE TABLE eager_added AS
SELECT id, hb_predict('wtext', n) AS p, hb_predict_class('wtext', n) AS cls FROM notes_added n;
SET hbird.lazy_featurize = on;
SELECT count(*) AS rows, count(*) FILTER (WHERE (l.p, l.cls) IS DISTINCT FROM (e.p, e.cls)) AS differ,
	   count(*) FILTER (WHERE e.p <> x.p) > 100 AS cheap_answers
FROM (SELECT id, hb_predict('wtext', n) AS p, hb_predict_class('wtext', n) AS cls FROM notes_added n) l
JOIN eager_added e USING (id) JOIN exact_notes x USING (id);
SELECT lazily IS NULL AS none_lazily
FROM scan_rows('SELECT id, hb_predict(''wtext'', n), hb_predict_class(''wtext'', n) FROM notes_added n');
DROP TABLE notes_added, eager_added;
-- grouped (one state per group, NULL rows among them)
SELECT count(*) AS differ
FROM (SELECT id % 7 AS g, hb_predict_agg('wtext', n ORDER BY id) AS p FROM notes n GROUP BY 1) l
JOIN (SELECT id % 7 AS g, array_agg(p ORDER BY id) AS p FROM eager GROUP BY 1) e USING (g)
WHERE l.p IS DISTINCT FROM e.p;
SET hbird.lazy_featurize = off;
CREATE TABLE eager_null AS
SELECT hb_predict_agg('wtext', n ORDER BY v.id) AS p
FROM (VALUES (1, (SELECT n FROM notes n WHERE id = 100001)), (2, NULL::notes),
			 (3, (SELECT n FROM notes n WHERE id = 100002))) v(id, n);
SET hbird.lazy_featurize = on;
SELECT e.p = l.p AS null_row_same, cardinality(l.p) AS rows
FROM eager_null e,
	 (SELECT hb_predict_agg('wtext', n ORDER BY v.id) AS p
	  FROM (VALUES (1, (SELECT n FROM notes n WHERE id = 100001)), (2, NULL::notes),
				   (3, (SELECT n FROM notes n WHERE id = 100002))) v(id, n)) l;
-- the lazy path is taken (a message at DEBUG1 names the steps it skips)
SET client_min_messages = debug1;
SELECT count(*) FROM hb_predict_batch('wtext', NULL::notes, 'SELECT * FROM notes WHERE id < 100010');
SET client_min_messages = warning;
RESET hbird.cascade;

-- approximate top-K on the same linear model: same rows, same scores
DELETE FROM hbird.tuning WHERE name = 'wtext' AND kind = 'topk' AND k = 10;
INSERT INTO hbird.tuning (name, version, kind, k, target, confidence, seed,
	sample_rows, eval_rows, approximation, approx_kind, approx_trees,
	approx_features, approx_params, ratio, kept, cheap_cut, accuracy,
	accuracy_bound, coverage, full_cost_us, approx_cost_us, expected_speedup,
	tuned_by)
VALUES ('wtext', 1, 'topk', 10, 0.9, 0.95, 0, 1000, 500, 'cheap', 'linear', 0,
	'{0,1,2}', '{0,0,0, 3,0,0, 0}', 30, 300, 0.5, 0.99, 0.95, 0.05, 1.0, 0.5, 2,
	current_user);
SET hbird.lazy_featurize = off;
CREATE TABLE eager_topk AS
SELECT rank, score, (item).id FROM hb_topk('wtext', 10, NULL::notes, mode => 'approx');
CREATE TABLE eager_topagg AS
SELECT id % 3 AS g, (SELECT array_agg(r) FROM unnest(hb_topk_agg('wtext', 10, n ORDER BY id)) r) AS t
FROM notes n GROUP BY 1;
SET hbird.lazy_featurize = on;
SELECT count(*) AS rows, count(*) FILTER (WHERE (l.score, l.id) IS DISTINCT FROM (e.score, e.id)) AS differ
FROM (SELECT rank, score, (item).id FROM hb_topk('wtext', 10, NULL::notes, mode => 'approx')) l
JOIN eager_topk e USING (rank);
SELECT count(*) AS groups, count(*) FILTER (WHERE l.t::text IS DISTINCT FROM e.t::text) AS differ
FROM (SELECT id % 3 AS g, (SELECT array_agg(r) FROM unnest(hb_topk_agg('wtext', 10, n ORDER BY id)) r) AS t
	  FROM notes n GROUP BY 1) l JOIN eager_topagg e USING (g);
-- and the scores are the full model's
SELECT bool_and(score = hb_predict('wtext', n)) AS full_scores
FROM eager_topk t JOIN notes n USING (id);
-- the plain ORDER BY ... LIMIT through the batching scan: the cheap model
-- reads rows featurized by its steps only, the rows it keeps are read
-- again in full; the same rows, values and scores as featurizing every
-- row
SET hbird.lazy_featurize = off;
CREATE TABLE eager_plain AS
SELECT row_number() OVER () AS rank, id, note, s
FROM (SELECT id, note, hb_predict('wtext', n) AS s FROM notes n ORDER BY s DESC LIMIT 10) q;
CREATE TABLE eager_plain40 AS
SELECT row_number() OVER () AS rank, id, a, s
FROM (SELECT id, a, hb_predict('wtext', n) AS s FROM notes n ORDER BY s DESC, id LIMIT 40) q;
SET hbird.lazy_featurize = on;
SET client_min_messages = debug1;
SELECT count(*) FROM (SELECT id FROM notes n ORDER BY hb_predict('wtext', n) DESC LIMIT 10) q;
SET client_min_messages = warning;
-- every row is read for the cheap model only (EXPLAIN ANALYZE's Rows Read
-- Lazily), and only the rows scored in full are read again in full;
-- featurizing eagerly reads none lazily
SELECT lazily = (SELECT count(*) FROM notes) AS all_lazily, scored < lazily AS some_not_scored
FROM scan_rows('SELECT id FROM notes n ORDER BY hb_predict(''wtext'', n) DESC LIMIT 10');
SET hbird.lazy_featurize = off;
SELECT scored > 0 AS scored, lazily IS NULL AS none_lazily
FROM scan_rows('SELECT id FROM notes n ORDER BY hb_predict(''wtext'', n) DESC LIMIT 10');
SET hbird.lazy_featurize = on;
SELECT count(*) AS rows, count(*) FILTER (WHERE (l.id, l.note, l.s) IS DISTINCT FROM (e.id, e.note, e.s)) AS differ
FROM (SELECT row_number() OVER () AS rank, id, note, s
	  FROM (SELECT id, note, hb_predict('wtext', n) AS s FROM notes n ORDER BY s DESC LIMIT 10) q) l
JOIN eager_plain e USING (rank);
SELECT count(*) AS rows, count(*) FILTER (WHERE (l.id, l.a, l.s) IS DISTINCT FROM (e.id, e.a, e.s)) AS differ
FROM (SELECT row_number() OVER () AS rank, id, a, s
	  FROM (SELECT id, a, hb_predict('wtext', n) AS s FROM notes n ORDER BY s DESC, id LIMIT 40) q) l
JOIN eager_plain40 e USING (rank);
RESET hbird.lazy_featurize;
RESET client_min_messages;
SELECT hb_model_drop('wtext');
DROP TABLE notes, exact_notes, ttune, eager, eager_agg, eager_batch, eager_cbatch, eager_null,
	eager_topk, eager_topagg, eager_plain, eager_plain40;
DROP FUNCTION wnote(bigint);
DROP FUNCTION scan_rows(text);
