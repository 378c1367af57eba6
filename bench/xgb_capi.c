/*
 * xgb_capi.c - score rows with XGBoost's own CPU predictor via its C API.
 *
 *   xgb_capi MODEL.json ROWS.f32 NROWS NCOLS [NTHREAD [CHECK_ROWS]]
 *
 * ROWS.f32 holds NROWS x NCOLS float32 values, row-major, NaN = missing.
 * The whole file is read into memory first; only the prediction is timed
 * (XGBoosterPredictFromDense, the "inplace" predictor, one call for all rows,
 * after one warm-up call on a few rows).  Prints key=value lines:
 *
 *   seconds=...  rows_per_s=...  sum=...  sum_first=...  (sum of the first
 *   CHECK_ROWS predictions, default 20000, for cross-checking a subset)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <xgboost/c_api.h>

#define CHECK(call) \
	do { \
		if ((call) != 0) { \
			fprintf(stderr, "xgb_capi: %s failed: %s\n", #call, XGBGetLastError()); \
			exit(1); \
		} \
	} while (0)

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const float *
predict(BoosterHandle booster, const float *data, long nrows, long ncols,
		bst_ulong *out_len)
{
	char		array[256];
	const char *config =
		"{\"type\": 0, \"training\": false, \"iteration_begin\": 0,"
		" \"iteration_end\": 0, \"strict_shape\": false, \"missing\": NaN,"
		" \"cache_id\": 0}";
	const bst_ulong *shape;
	bst_ulong	dim;
	const float *out;

	snprintf(array, sizeof(array),
			 "{\"data\": [%llu, true], \"shape\": [%ld, %ld],"
			 " \"typestr\": \"<f4\", \"version\": 3}",
			 (unsigned long long) (uintptr_t) data, nrows, ncols);
	CHECK(XGBoosterPredictFromDense(booster, array, config, NULL,
									&shape, &dim, &out));
	*out_len = 1;
	for (bst_ulong i = 0; i < dim; i++)
		*out_len *= shape[i];
	return out;
}

int
main(int argc, char **argv)
{
	if (argc < 5)
	{
		fprintf(stderr, "usage: %s MODEL.json ROWS.f32 NROWS NCOLS [NTHREAD [CHECK_ROWS]]\n",
				argv[0]);
		return 2;
	}
	const char *model_path = argv[1];
	const char *data_path = argv[2];
	long		nrows = atol(argv[3]);
	long		ncols = atol(argv[4]);
	const char *nthread = argc > 5 ? argv[5] : "1";
	long		check_rows = argc > 6 ? atol(argv[6]) : 20000;

	size_t		n = (size_t) nrows * ncols;
	float	   *data = malloc(n * sizeof(float));
	FILE	   *f = fopen(data_path, "rb");

	if (!data || !f)
	{
		fprintf(stderr, "xgb_capi: cannot open %s or allocate %zu floats\n", data_path, n);
		return 1;
	}
	if (fread(data, sizeof(float), n, f) != n)
	{
		fprintf(stderr, "xgb_capi: %s is shorter than %ld x %ld float32\n",
				data_path, nrows, ncols);
		return 1;
	}
	fclose(f);

	BoosterHandle booster;

	CHECK(XGBoosterCreate(NULL, 0, &booster));
	CHECK(XGBoosterLoadModel(booster, model_path));
	CHECK(XGBoosterSetParam(booster, "nthread", nthread));

	bst_ulong	len;
	long		warm = nrows < 1000 ? nrows : 1000;

	predict(booster, data, warm, ncols, &len);

	double		t0 = now();
	const float *out = predict(booster, data, nrows, ncols, &len);
	double		secs = now() - t0;

	if ((long) len != nrows)
	{
		fprintf(stderr, "xgb_capi: got %lu predictions for %ld rows\n",
				(unsigned long) len, nrows);
		return 1;
	}

	double		sum = 0, sum_first = 0;

	for (long i = 0; i < nrows; i++)
	{
		sum += out[i];
		if (i < check_rows)
			sum_first += out[i];
	}

	int			major, minor, patch;

	XGBoostVersion(&major, &minor, &patch);
	printf("xgboost=%d.%d.%d\n", major, minor, patch);
	printf("nthread=%s\n", nthread);
	printf("rows=%ld\n", nrows);
	printf("seconds=%.6f\n", secs);
	printf("rows_per_s=%.1f\n", nrows / secs);
	printf("sum=%.17g\n", sum);
	printf("check_rows=%ld\n", check_rows < nrows ? check_rows : nrows);
	printf("sum_first=%.17g\n", sum_first);

	XGBoosterFree(booster);
	free(data);
	return 0;
}
