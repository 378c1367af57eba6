-- hb_predict_batch over a query, each item rescored by hb_predict in the
-- same statement: equal, and one version.
\set a random(0, :nrows - :span)
WITH s AS MATERIALIZED (
	SELECT (b.item).id AS id, b.score AS p1, hb_predict('ms', b.item) AS p2
	FROM hb_predict_batch('ms', NULL::tx,
		 format('SELECT * FROM tx WHERE id > %s AND id <= %s', :a::int, :a::int + :span::int)) b),
c AS (
	SELECT count(*) AS n, count(*) FILTER (WHERE p1 IS DISTINCT FROM p2) AS diff,
		   hb_load_versions_matching('ms', array_agg(id), array_agg(p1)) AS nver
	FROM s)
INSERT INTO hb_load_bad (script, a, detail)
SELECT 'batch', :a::int, format('n=%s batch_vs_row=%s versions=%s', n, diff, nver)
FROM c WHERE diff > 0 OR nver = 0 OR n <> :span::int;
