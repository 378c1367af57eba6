-- hb_predict per row: the same row scored twice (two record call sites) and
-- by array (a third call site); every row must come from one version.
\set a random(0, :nrows - :span)
WITH s AS MATERIALIZED (
	SELECT t.id, hb_predict('ms', t) AS p1, hb_predict('ms', t) AS p2,
		   hb_predict('ms', ARRAY[t.amount, t.age, t.balance, t.n_tx, t.risk, t.tenure]) AS p3
	FROM tx t WHERE t.id > :a::int AND t.id <= :a::int + :span::int),
c AS (
	SELECT count(*) AS n, count(*) FILTER (WHERE p1 IS DISTINCT FROM p2) AS twin,
		   count(*) FILTER (WHERE p1 IS DISTINCT FROM p3) AS arr,
		   hb_load_versions_matching('ms', array_agg(id), array_agg(p1)) AS nver
	FROM s)
INSERT INTO hb_load_bad (script, a, detail)
SELECT 'row', :a::int, format('n=%s twin=%s array=%s versions=%s', n, twin, arr, nver)
FROM c WHERE twin > 0 OR arr > 0 OR nver = 0 OR n <> :span::int;
