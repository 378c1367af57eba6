-- GPU execution (docs/gpu.md).  Test machines have no usable CUDA device
-- (and may have a build without CUDA): batches must fall back to the CPU,
-- give the CPU's results and say why; hbird.device = gpu must refuse
-- clearly, batch by batch, while single rows still run on the CPU.
LOAD 'hbird';
SHOW hbird.device;
SHOW hbird.gpu_min_batch;
SHOW hbird.gpu_memory;
SELECT hbt_try($$SET hbird.device = 'tpu'$$);

-- no device, and the reason names CUDA (the wording depends on the build)
SELECT setting, available, device IS NULL AS no_name,
	   reason ~ '^no CUDA device' AS reason_says_no_cuda_device,
	   min_batch, memory_budget, memory_used, gpu_batches, fallbacks
FROM hb_device();

-- auto: batches big enough for a GPU run on the CPU, with the CPU's results
CREATE TEMP TABLE big AS SELECT i.*, g FROM binary_logistic_in i, generate_series(1, 10) g;
SET hbird.batch_memory = '64MB';
SET hbird.gpu_min_batch = 2;
SELECT DISTINCT device FROM hb_compile('binary_logistic', 100000);
SELECT cardinality(hb_predict_agg('binary_logistic', b ORDER BY id, g)) AS n,
	   hb_predict_agg('binary_logistic', b ORDER BY id, g) =
	   array_agg(hb_predict('binary_logistic', b) ORDER BY id, g) AS same
FROM big b;
SELECT count(*) AS n, count(*) FILTER (WHERE score <> hb_predict('binary_logistic', item)) AS differ
FROM hb_predict_batch('binary_logistic', NULL::big);
SELECT array_agg((item).id ORDER BY rank) =
	   (SELECT array_agg(id) FROM (SELECT id FROM binary_logistic_in i
								   ORDER BY hb_predict('binary_logistic', i) DESC, id LIMIT 5) s) AS topk_same
FROM hb_topk('binary_logistic', 5, NULL::binary_logistic_in,
			 $$SELECT * FROM binary_logistic_in ORDER BY id$$);
SELECT gpu_batches, fallbacks FROM hb_device();

-- gpu: every batched path refuses with 55000 and the reason
SET hbird.device = gpu;
SELECT substring(hbt_try($$SELECT * FROM hb_compile('binary_logistic')$$)
				 FROM '^55000: hbird.device is gpu, but no CUDA device') AS compile;
SELECT substring(hbt_try($$SELECT hb_predict_agg('binary_logistic', b) FROM big b$$)
				 FROM '^55000: hbird.device is gpu, but no CUDA device') AS agg;
SELECT substring(hbt_try($$SELECT * FROM hb_predict_batch('binary_logistic', NULL::big)$$)
				 FROM '^55000: hbird.device is gpu, but no CUDA device') AS batch;
SELECT substring(hbt_try($$SELECT * FROM hb_topk('binary_logistic', 5, NULL::big)$$)
				 FROM '^55000: hbird.device is gpu, but no CUDA device') AS topk;
SELECT substring(hbt_try($$SELECT hb_topk_agg('binary_logistic', 5, b) FROM big b$$)
				 FROM '^55000: hbird.device is gpu, but no CUDA device') AS topk_agg;
-- the plain query is batched too (the batching scan): the same rule
SELECT substring(hbt_try($$SELECT count(hb_predict('binary_logistic', b)) FROM big b$$)
				 FROM '^55000: hbird.device is gpu, but no CUDA device') AS plain_query;
-- one row per call stays on the CPU, and so does a batch of one row
SET hbird.batch_scan = off;
SELECT count(hb_predict('binary_logistic', i)) AS row_by_row FROM binary_logistic_in i;
RESET hbird.batch_scan;
SELECT hb_predict('binary_logistic', b) IS NOT NULL AS first_row FROM big b LIMIT 1;
SELECT cardinality(hb_predict_agg('binary_logistic', i)) AS one_row
FROM binary_logistic_in i WHERE id = 1;
SELECT setting, available FROM hb_device();

-- cpu: never the GPU
SET hbird.device = cpu;
SELECT DISTINCT device FROM hb_compile('binary_logistic', 100000);
SELECT count(*) AS n FROM hb_predict_batch('binary_logistic', NULL::big);
RESET hbird.device;
RESET hbird.gpu_min_batch;
RESET hbird.batch_memory;
