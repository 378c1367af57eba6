/*
 * fuzz_common.h
 *	  What every hbird fuzz target does with a model it managed to read:
 *	  write and re-read its image, build a plan, and score awkward rows with
 *	  every strategy, the link functions, top-K and the early-exit classes.
 *
 * Besides crashes and sanitizer reports, the targets check two things the
 * core promises, and abort when they fail:
 *	- TT, PTT and GEMM give bit-identical margins (NaN matches any NaN),
 *	  for a batch of all rows and for rows one at a time;
 *	- a model re-read from its image scores exactly like the model;
 *	- classes with the early exit equal the classes of the full margins
 *	  (fuzzed models are mostly too small to exit early, so this mainly runs
 *	  the bounds over odd models under the sanitizers; test_early_exit.c
 *	  covers the decisions).
 * Set HB_FUZZ_NO_DIFF=1 to look for crashes only.
 *
 * Included by exactly one .c file per target.
 */
#ifndef HB_FUZZ_COMMON_H
#define HB_FUZZ_COMMON_H

#include "early_exit.h"
#include "json.h"
#include "plan.h"
#include "topk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ROWS		12
#define FUZZ_LAYOUT		((size_t) 32 * 1024 * 1024)
#define FUZZ_MAX_WIDE	(1 << 14)	/* wider models get two rows */

static int	fuzz_diff = -1;

static inline void
fuzz_fail(const char *what, size_t row, size_t col, double a, double b)
{
	fprintf(stderr, "hbird fuzz: %s differ at row %zu output %zu: %.17g vs %.17g\n",
			what, row, col, a, b);
	abort();
}

/* Same margins, bit for bit, NaN matching any NaN. */
static inline void
fuzz_same(const char *what, const double *a, const double *b, size_t rows,
		  size_t cols)
{
	for (size_t i = 0; i < rows * cols; i++)
		if (!(isnan(a[i]) && isnan(b[i])) && memcmp(&a[i], &b[i], sizeof(double)) != 0)
			fuzz_fail(what, i / cols, i % cols, a[i], b[i]);
}

/* Deterministic pseudo-random numbers from the input. */
static inline uint64_t
fuzz_hash(const uint8_t *data, size_t size)
{
	uint64_t	h = 1469598103934665603ULL;

	for (size_t i = 0; i < size; i += 1 + size / 64)
		h = (h ^ data[i]) * 1099511628211ULL;
	return h;
}

static inline double
fuzz_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double) (*s >> 11) / 9007199254740992.0;	/* [0, 1) */
}

/* One of the categories in a categorical node's set, or -1. */
static inline double
fuzz_category(const HbModel *m, const HbNode *node)
{
	for (int32_t w = 0; w < node->cat_nwords; w++)
	{
		int64_t		at = (int64_t) node->cat_off + w;
		uint32_t	bits;

		if (at < 0 || at >= m->n_cat_words)
			return -1;
		bits = m->cat_words[at];
		if (node->cat_list)
			return (double) bits;
		for (int b = 0; b < 32; b++)
			if (bits & ((uint32_t) 1 << b))
				return ((double) node->cat_base + w) * 32 + b;
	}
	return -1;
}

/* Rows that sit on, next to and far from the model's splits. */
static inline void
fuzz_rows(const HbModel *m, const uint8_t *data, size_t size, double *x,
		  int rows)
{
	int			nf = m->n_features;
	uint64_t	seed = fuzz_hash(data, size);

	for (int r = 0; r < rows; r++)
		for (int f = 0; f < nf; f++)
		{
			double	   *v = &x[(size_t) r * nf + f];

			switch (r)
			{
				case 0:
					*v = NAN;
					break;
				case 1:
					*v = 0.0;
					break;
				case 2:
					*v = -0.0;
					break;
				case 7:
					*v = (f & 1) ? -1e300 : 1e300;
					break;
				case 8:
					*v = (f & 1) ? -INFINITY : INFINITY;
					break;
				case 9:
					{
						static const double odd[] = {1e10, -1, 2147483648.0, 0.5,
						-2147483649.0, 4294967296.0, 16777217.0};

						*v = odd[f % 7];
						break;
					}
				case 10:
					*v = (f & 1) ? -1e-36 : 1e-36;
					break;
				case 11:
					{
						double		u = fuzz_next(&seed);

						*v = u < 0.1 ? NAN : (u - 0.5) * 20;
						break;
					}
				default:
					*v = (double) (f % 5);
					break;
			}
		}

	/* rows 3-6: thresholds, just below, just above, and categories */
	if (rows < 7 || m->estimator != HB_EST_TREES)
		return;
	for (int t = 0; t < m->n_trees; t++)
	{
		const HbTree *tree = &m->trees[t];

		for (int i = 0; i < tree->n_nodes; i++)
		{
			const HbNode *node = &tree->nodes[i];
			int			f = node->feature;

			if (node->left == HB_LEAF || f < 0 || f >= nf)
				continue;
			if (node->is_cat)
			{
				double		c = fuzz_category(m, node);

				if (c >= 0)
					x[(size_t) 6 * nf + f] = c;
				continue;
			}
			x[(size_t) 3 * nf + f] = node->threshold;
			x[(size_t) 4 * nf + f] = nextafter(node->threshold, -INFINITY);
			x[(size_t) 5 * nf + f] = nextafter(node->threshold, INFINITY);
		}
	}
}

static inline double
fuzz_offer(void *arg, size_t row, double margin)
{
	double	   *best = arg;

	(void) row;
	/* keep the best two: the threshold is the second best */
	if (margin > best[0])
	{
		best[1] = best[0];
		best[0] = margin;
	}
	else if (margin > best[1])
		best[1] = margin;
	return best[1];
}

static inline void
fuzz_margins_all(const HbPlan *p, const double *x, size_t rows, int nf,
				 size_t nout, double *ref, double *got)
{
	static const HbStrategy strategies[] = {HB_STRATEGY_TT, HB_STRATEGY_PTT,
	HB_STRATEGY_GEMM};

	hb_plan_margins_with(p, HB_STRATEGY_TT, x, rows, ref);
	for (size_t s = 0; s < 3; s++)
	{
		hb_plan_margins_with(p, strategies[s], x, rows, got);
		if (fuzz_diff)
			fuzz_same(hb_strategy_name(strategies[s]), ref, got, rows, nout);
		/* one row at a time: the single-row paths */
		for (size_t r = 0; r < rows; r++)
			hb_plan_margins_with(p, strategies[s], x + r * nf, 1, got + r * nout);
		if (fuzz_diff)
			fuzz_same(hb_strategy_name(strategies[s]), ref, got, rows, nout);
	}
}

/* Everything a backend would do with a model it read. */
static inline void
fuzz_exercise(const HbModel *m, const uint8_t *data, size_t size)
{
	HbPlan	   *p = NULL;
	HbPlan	   *p2 = NULL;
	HbModel    *m2 = NULL;
	HbError		err = {0};
	char	   *image = NULL;
	size_t		image_len = 0;
	int			rows;
	size_t		nout,
				nproba;
	int			nf = m->n_features;
	double	   *x,
			   *ref,
			   *got,
			   *out;
	HbPlanOp	ops[16];

	if (fuzz_diff < 0)
		fuzz_diff = getenv("HB_FUZZ_NO_DIFF") == NULL;

	if (!hb_plan_build_ex(m, FUZZ_LAYOUT, &p, &err))
		return;
	rows = nf > FUZZ_MAX_WIDE ? 2 : FUZZ_ROWS;
	nout = (size_t) hb_plan_n_outputs(p);
	/* hb_link_proba writes n_outputs values a row, two for binary models */
	nproba = nout > 2 ? nout : 2;
	x = malloc(sizeof(double) * rows * nf);
	ref = malloc(sizeof(double) * rows * nout);
	got = malloc(sizeof(double) * rows * nout);
	out = malloc(sizeof(double) * rows * nproba);
	if (x == NULL || ref == NULL || got == NULL || out == NULL)
		abort();
	fuzz_rows(m, data, size, x, rows);

	fuzz_margins_all(p, x, rows, nf, nout, ref, got);
	hb_plan_predict(p, x, rows, got, out);
	if (hb_plan_n_classes(p) > 0)
		hb_plan_proba(p, x, rows, got, out);
	(void) hb_plan_ops(p, 1, ops, 16);
	(void) hb_plan_ops(p, 100000, ops, 16);
	(void) hb_plan_bytes(p);

	if (hb_topk_supported(p))
	{
		HbTopkBounds *b = hb_topk_bounds(p);

		if (b != NULL)
		{
			double		best[2] = {-INFINITY, -INFINITY};
			double		threshold = -INFINITY;
			HbTopkStats st = {0};

			(void) hb_topk_score(p, b, x, rows, &threshold, fuzz_offer, best, &st);
			hb_topk_bounds_free(b);
		}
	}

	if (hb_class_supported(p))
	{
		HbClassBounds *cb = hb_class_bounds(p);
		int32_t		want[FUZZ_ROWS];
		int32_t		cls[FUZZ_ROWS];

		if (cb != NULL)
		{
			hb_link_class(p, ref, rows, want);
			if (hb_early_exit_classes(p, cb, x, rows, cls, NULL) && fuzz_diff)
				for (int r = 0; r < rows; r++)
					if (cls[r] != want[r])
						fuzz_fail("early-exit classes", r, 0, cls[r], want[r]);
			for (int r = 0; r < rows; r++)
				if (hb_early_exit_classes(p, cb, x + (size_t) r * nf, 1, cls, NULL) &&
					fuzz_diff && cls[0] != want[r])
					fuzz_fail("early-exit classes, one row", r, 0, cls[0], want[r]);
			hb_class_bounds_free(cb);
		}
	}

	/* the image must give the same model back */
	if (hb_model_image_write(m, &image, &image_len, &err))
	{
		memset(&err, 0, sizeof(err));
		if (hb_model_image_read(image, image_len, &m2, &err))
		{
			if (hb_plan_build_ex(m2, FUZZ_LAYOUT, &p2, &err))
			{
				hb_plan_margins_with(p2, HB_STRATEGY_TT, x, rows, got);
				if (fuzz_diff)
					fuzz_same("image re-read margins", ref, got, rows, nout);
				hb_plan_free(p2);
			}
			hb_model_free(m2);
		}
		else if (fuzz_diff && err.code != HB_ERR_NOMEM)
		{
			fprintf(stderr, "hbird fuzz: image of a valid model refused: code %d: %s\n",
					err.code, err.msg);
			abort();
		}
		hb_free(image);
	}

	free(x);
	free(ref);
	free(got);
	free(out);
	hb_plan_free(p);
}

/* Touch every value of a document through every accessor. */
static inline void
fuzz_walk(const HbJson *v, int depth)
{
	double		d;
	float		f;
	int64_t		i;
	bool		b;
	size_t		len;

	(void) hb_json_type_name(v);
	(void) hb_json_number(v, &d);
	(void) hb_json_float(v, &f);
	(void) hb_json_int(v, &i);
	(void) hb_json_bool(v, &b);
	(void) hb_json_number_text(v, &len);
	if (hb_json_is_string(v))
	{
		const char *s = hb_json_string(v);

		if (strlen(s) != hb_json_len(v))
			abort();			/* json.h: no NUL inside strings */
	}
	if (depth > HB_JSON_MAX_DEPTH + 2)
		abort();
	if (hb_json_is_array(v))
		for (size_t k = 0; k < hb_json_len(v); k++)
			fuzz_walk(hb_json_at(v, k), depth + 1);
	if (hb_json_is_object(v))
		for (size_t k = 0; k < hb_json_len(v); k++)
		{
			const char *key = hb_json_key_at(v, k);

			if (key == NULL)
				abort();
			(void) hb_json_get(v, key);
			fuzz_walk(hb_json_value_at(v, k), depth + 1);
		}
	(void) hb_json_at(v, 0);
	(void) hb_json_get(v, "learner");
}

/* Read with hb_model_read (which validates), then exercise the model. */
static inline void
fuzz_read(const uint8_t *data, size_t size, HbFormat format)
{
	HbModel    *m = NULL;
	HbError		err = {0};

	if (hb_model_read((const char *) data, size, format, &m, &err))
	{
		fuzz_exercise(m, data, size);
		hb_model_free(m);
	}
	else if (err.code == HB_OK || err.msg[0] == '\0' || m != NULL)
	{
		fprintf(stderr, "hbird fuzz: refused without an error message\n");
		abort();
	}
}

#endif							/* HB_FUZZ_COMMON_H */
