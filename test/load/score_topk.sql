-- hb_topk, hb_topk_agg and ORDER BY hb_predict DESC LIMIT k over the same
-- rows in one statement: the same ids in the same order, one version.
\set a random(0, :nrows - :span)
WITH k AS MATERIALIZED (
	SELECT rank, score, (item).id AS id
	FROM hb_topk('mr', 10, NULL::tx,
		 format('SELECT * FROM tx WHERE id > %s AND id <= %s ORDER BY id', :a::int, :a::int + :span::int))),
o AS MATERIALIZED (
	SELECT id, p FROM (SELECT id, hb_predict('mr', t) AS p FROM tx t
					   WHERE t.id > :a::int AND t.id <= :a::int + :span::int) x
	ORDER BY p DESC, id LIMIT 10),
g AS (
	SELECT hb_topk_agg('mr', 10, t ORDER BY id) AS arr
	FROM tx t WHERE t.id > :a::int AND t.id <= :a::int + :span::int),
c AS (
	SELECT (SELECT array_agg(id ORDER BY rank) FROM k) AS k_ids,
		   (SELECT array_agg(id ORDER BY p DESC, id) FROM o) AS o_ids,
		   (SELECT array_agg(u.id ORDER BY u.ordinality) FROM g, unnest(g.arr) WITH ORDINALITY AS u) AS g_ids,
		   (SELECT hb_load_versions_matching('mr', array_agg(id), array_agg(score)) FROM k) AS nver)
INSERT INTO hb_load_bad (script, a, detail)
SELECT 'topk', :a::int, format('topk=%s orderby=%s topk_agg=%s versions=%s', k_ids, o_ids, g_ids, nver)
FROM c WHERE k_ids IS DISTINCT FROM o_ids OR k_ids IS DISTINCT FROM g_ids OR nver = 0
	OR cardinality(k_ids) <> 10;
