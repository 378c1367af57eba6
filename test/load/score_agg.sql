-- hb_predict_agg next to hb_predict over the same rows in one statement:
-- equal element by element, and one version.
\set a random(0, :nrows - :span)
WITH g AS (
	SELECT hb_predict_agg('ms', t ORDER BY id) AS agg,
		   array_agg(hb_predict('ms', t) ORDER BY id) AS rowwise,
		   array_agg(id ORDER BY id) AS ids
	FROM tx t WHERE t.id > :a::int AND t.id <= :a::int + :span::int),
c AS (
	SELECT cardinality(agg) AS n,
		   (SELECT count(*) FROM unnest(agg, rowwise) u(p, q) WHERE p IS DISTINCT FROM q) AS diff,
		   hb_load_versions_matching('ms', ids, agg) AS nver
	FROM g)
INSERT INTO hb_load_bad (script, a, detail)
SELECT 'agg', :a::int, format('n=%s agg_vs_row=%s versions=%s', n, diff, nver)
FROM c WHERE diff > 0 OR nver = 0 OR n <> :span::int;
