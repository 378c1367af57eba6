-- Scoring against XGBoost's own outputs (test/fixtures, 200 rows each,
-- about 10% of the inputs missing).  Each line counts the rows that differ
-- by more than 1e-6 relative: all counts must be 0.

SELECT 'binary_logistic' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logistic', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logistic', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logistic', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('binary_logistic', i))[1], e.margin_0))) AS margin_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_proba('binary_logistic', i))[1], e.proba_0) AND hbt_close((hb_predict_proba('binary_logistic', i))[2], e.proba_1))) AS proba_bad,
       count(*) FILTER (WHERE cardinality(hb_predict_proba('binary_logistic', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float8[])) <> 2) AS proba_len_bad,
       count(*) FILTER (WHERE i."amount" IS NULL OR i."age" IS NULL OR i."balance" IS NULL OR i."n_tx" IS NULL OR i."risk" IS NULL OR i."tenure" IS NULL) > 0 AS has_nulls
FROM binary_logistic_in i JOIN binary_logistic_exp e USING (id);

SELECT 'binary_logistic_deep' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logistic_deep', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logistic_deep', ARRAY[i."f0", i."f1", i."f2", i."f3", i."f4", i."f5", i."f6", i."f7"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logistic_deep', ARRAY[i."f0", i."f1", i."f2", i."f3", i."f4", i."f5", i."f6", i."f7"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('binary_logistic_deep', i))[1], e.margin_0))) AS margin_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_proba('binary_logistic_deep', i))[1], e.proba_0) AND hbt_close((hb_predict_proba('binary_logistic_deep', i))[2], e.proba_1))) AS proba_bad,
       count(*) FILTER (WHERE cardinality(hb_predict_proba('binary_logistic_deep', ARRAY[i."f0", i."f1", i."f2", i."f3", i."f4", i."f5", i."f6", i."f7"]::float8[])) <> 2) AS proba_len_bad,
       count(*) FILTER (WHERE i."f0" IS NULL OR i."f1" IS NULL OR i."f2" IS NULL OR i."f3" IS NULL OR i."f4" IS NULL OR i."f5" IS NULL OR i."f6" IS NULL OR i."f7" IS NULL) > 0 AS has_nulls
FROM binary_logistic_deep_in i JOIN binary_logistic_deep_exp e USING (id);

SELECT 'binary_logitraw' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logitraw', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logitraw', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logitraw', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('binary_logitraw', i))[1], e.margin_0))) AS margin_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_proba('binary_logitraw', i))[1], e.proba_0) AND hbt_close((hb_predict_proba('binary_logitraw', i))[2], e.proba_1))) AS proba_bad,
       count(*) FILTER (WHERE cardinality(hb_predict_proba('binary_logitraw', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float8[])) <> 2) AS proba_len_bad,
       count(*) FILTER (WHERE i."amount" IS NULL OR i."age" IS NULL OR i."balance" IS NULL OR i."n_tx" IS NULL OR i."risk" IS NULL OR i."tenure" IS NULL) > 0 AS has_nulls
FROM binary_logitraw_in i JOIN binary_logitraw_exp e USING (id);

SELECT 'categorical' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('categorical', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('categorical', ARRAY[i."amount", i."color", i."age", i."city", i."risk"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('categorical', ARRAY[i."amount", i."color", i."age", i."city", i."risk"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('categorical', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."amount" IS NULL OR i."color" IS NULL OR i."age" IS NULL OR i."city" IS NULL OR i."risk" IS NULL) > 0 AS has_nulls
FROM categorical_in i JOIN categorical_exp e USING (id);

SELECT 'count_poisson' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('count_poisson', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('count_poisson', ARRAY[i."visits", i."days", i."spend", i."items", i."returns", i."region_score"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('count_poisson', ARRAY[i."visits", i."days", i."spend", i."items", i."returns", i."region_score"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('count_poisson', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."visits" IS NULL OR i."days" IS NULL OR i."spend" IS NULL OR i."items" IS NULL OR i."returns" IS NULL OR i."region_score" IS NULL) > 0 AS has_nulls
FROM count_poisson_in i JOIN count_poisson_exp e USING (id);

SELECT 'multi_softmax' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('multi_softmax', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('multi_softmax', ARRAY[i."sepal_length", i."sepal_width", i."petal_length", i."petal_width", i."stem"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('multi_softmax', ARRAY[i."sepal_length", i."sepal_width", i."petal_length", i."petal_width", i."stem"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('multi_softmax', i))[1], e.margin_0) AND hbt_close((hb_predict_margin('multi_softmax', i))[2], e.margin_1) AND hbt_close((hb_predict_margin('multi_softmax', i))[3], e.margin_2))) AS margin_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_proba('multi_softmax', i))[1], e.proba_0) AND hbt_close((hb_predict_proba('multi_softmax', i))[2], e.proba_1) AND hbt_close((hb_predict_proba('multi_softmax', i))[3], e.proba_2))) AS proba_bad,
       count(*) FILTER (WHERE cardinality(hb_predict_proba('multi_softmax', ARRAY[i."sepal_length", i."sepal_width", i."petal_length", i."petal_width", i."stem"]::float8[])) <> 3) AS proba_len_bad,
       count(*) FILTER (WHERE i."sepal_length" IS NULL OR i."sepal_width" IS NULL OR i."petal_length" IS NULL OR i."petal_width" IS NULL OR i."stem" IS NULL) > 0 AS has_nulls
FROM multi_softmax_in i JOIN multi_softmax_exp e USING (id);

SELECT 'multi_softprob' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('multi_softprob', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('multi_softprob', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('multi_softprob', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('multi_softprob', i))[1], e.margin_0) AND hbt_close((hb_predict_margin('multi_softprob', i))[2], e.margin_1) AND hbt_close((hb_predict_margin('multi_softprob', i))[3], e.margin_2) AND hbt_close((hb_predict_margin('multi_softprob', i))[4], e.margin_3))) AS margin_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_proba('multi_softprob', i))[1], e.proba_0) AND hbt_close((hb_predict_proba('multi_softprob', i))[2], e.proba_1) AND hbt_close((hb_predict_proba('multi_softprob', i))[3], e.proba_2) AND hbt_close((hb_predict_proba('multi_softprob', i))[4], e.proba_3))) AS proba_bad,
       count(*) FILTER (WHERE cardinality(hb_predict_proba('multi_softprob', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float8[])) <> 4) AS proba_len_bad,
       count(*) FILTER (WHERE i."amount" IS NULL OR i."age" IS NULL OR i."balance" IS NULL OR i."n_tx" IS NULL OR i."risk" IS NULL OR i."tenure" IS NULL) > 0 AS has_nulls
FROM multi_softprob_in i JOIN multi_softprob_exp e USING (id);

SELECT 'no_feature_names' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('no_feature_names', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('no_feature_names', ARRAY[i."f0", i."f1", i."f2", i."f3", i."f4", i."f5", i."f6", i."f7", i."f8", i."f9"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('no_feature_names', ARRAY[i."f0", i."f1", i."f2", i."f3", i."f4", i."f5", i."f6", i."f7", i."f8", i."f9"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('no_feature_names', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."f0" IS NULL OR i."f1" IS NULL OR i."f2" IS NULL OR i."f3" IS NULL OR i."f4" IS NULL OR i."f5" IS NULL OR i."f6" IS NULL OR i."f7" IS NULL OR i."f8" IS NULL OR i."f9" IS NULL) > 0 AS has_nulls
FROM no_feature_names_in i JOIN no_feature_names_exp e USING (id);

SELECT 'rank_ndcg' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('rank_ndcg', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('rank_ndcg', ARRAY[i."bm25", i."tf", i."idf", i."doc_len", i."pagerank", i."freshness"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('rank_ndcg', ARRAY[i."bm25", i."tf", i."idf", i."doc_len", i."pagerank", i."freshness"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('rank_ndcg', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."bm25" IS NULL OR i."tf" IS NULL OR i."idf" IS NULL OR i."doc_len" IS NULL OR i."pagerank" IS NULL OR i."freshness" IS NULL) > 0 AS has_nulls
FROM rank_ndcg_in i JOIN rank_ndcg_exp e USING (id);

SELECT 'rank_pairwise' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('rank_pairwise', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('rank_pairwise', ARRAY[i."bm25", i."tf", i."idf", i."doc_len", i."pagerank", i."freshness"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('rank_pairwise', ARRAY[i."bm25", i."tf", i."idf", i."doc_len", i."pagerank", i."freshness"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('rank_pairwise', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."bm25" IS NULL OR i."tf" IS NULL OR i."idf" IS NULL OR i."doc_len" IS NULL OR i."pagerank" IS NULL OR i."freshness" IS NULL) > 0 AS has_nulls
FROM rank_pairwise_in i JOIN rank_pairwise_exp e USING (id);

SELECT 'reg_logistic' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('reg_logistic', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('reg_logistic', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('reg_logistic', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('reg_logistic', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."amount" IS NULL OR i."age" IS NULL OR i."balance" IS NULL OR i."n_tx" IS NULL OR i."risk" IS NULL OR i."tenure" IS NULL) > 0 AS has_nulls
FROM reg_logistic_in i JOIN reg_logistic_exp e USING (id);

SELECT 'reg_squarederror' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('reg_squarederror', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('reg_squarederror', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure", i."utilization", i."score"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('reg_squarederror', ARRAY[i."amount", i."age", i."balance", i."n_tx", i."risk", i."tenure", i."utilization", i."score"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('reg_squarederror', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."amount" IS NULL OR i."age" IS NULL OR i."balance" IS NULL OR i."n_tx" IS NULL OR i."risk" IS NULL OR i."tenure" IS NULL OR i."utilization" IS NULL OR i."score" IS NULL) > 0 AS has_nulls
FROM reg_squarederror_in i JOIN reg_squarederror_exp e USING (id);

SELECT 'single_leaf' AS model,
       count(*) AS rows,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('single_leaf', i), e.pred)) AS pred_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('single_leaf', ARRAY[i."a", i."b", i."c", i."d"]::float8[]), e.pred)) AS array_bad,
       count(*) FILTER (WHERE NOT hbt_close(hb_predict('single_leaf', ARRAY[i."a", i."b", i."c", i."d"]::float4[]), e.pred)) AS float4_bad,
       count(*) FILTER (WHERE NOT (hbt_close((hb_predict_margin('single_leaf', i))[1], e.margin_0))) AS margin_bad,
       0 AS proba_bad,
       0 AS proba_len_bad,
       count(*) FILTER (WHERE i."a" IS NULL OR i."b" IS NULL OR i."c" IS NULL OR i."d" IS NULL) > 0 AS has_nulls
FROM single_leaf_in i JOIN single_leaf_exp e USING (id);

-- hb_predict of a multiclass model is the class index; of a binary model
-- the positive probability, equal to hb_predict_proba's second element.
SELECT count(*) FILTER (WHERE hb_predict('multi_softprob', i) <> (SELECT k - 1 FROM unnest(hb_predict_proba('multi_softprob', i)) WITH ORDINALITY AS u(p, k) ORDER BY p DESC, k LIMIT 1)) AS argmax_bad
FROM multi_softprob_in i;
SELECT count(*) FILTER (WHERE hb_predict('binary_logistic', i) <> (hb_predict_proba('binary_logistic', i))[2]) AS binary_bad,
       count(*) FILTER (WHERE abs((hb_predict_proba('binary_logistic', i))[1] + (hb_predict_proba('binary_logistic', i))[2] - 1) > 1e-12) AS sum_bad
FROM binary_logistic_in i;

-- All features missing: every tree follows its default branches.
SELECT hbt_close(hb_predict('binary_logistic', ARRAY[NULL, NULL, NULL, NULL, NULL, NULL]::float8[]),
                 hb_predict('binary_logistic', ARRAY['NaN', 'NaN', 'NaN', 'NaN', 'NaN', 'NaN']::float8[])) AS null_is_nan;

-- Binding by name: column order does not matter, extra columns are ignored,
-- integer/numeric/boolean columns convert.
CREATE TEMP TABLE shuffled AS
SELECT id, tenure, risk, n_tx::numeric AS n_tx, balance, age, amount, 'extra'::text AS note
FROM binary_logistic_in;
SELECT count(*) FILTER (WHERE NOT hbt_close(hb_predict('binary_logistic', s), e.pred)) AS shuffled_bad
FROM shuffled s JOIN binary_logistic_exp e USING (id);
CREATE TEMP TABLE typed (amount int, age smallint, balance bigint, n_tx numeric, risk boolean, tenure real);
INSERT INTO typed VALUES (1, 2, 3, 4.5, true, 0.25), (NULL, NULL, NULL, NULL, NULL, NULL);
SELECT hbt_close(hb_predict('binary_logistic', t), hb_predict('binary_logistic', ARRAY[amount, age, balance, n_tx, risk::int, tenure]::float8[])) AS typed_ok
FROM typed t;
-- A NULL row or array scores to NULL.
SELECT hb_predict('binary_logistic', NULL::float8[]) IS NULL AS null_array,
       hb_predict('binary_logistic', NULL::binary_logistic_in) IS NULL AS null_row;
