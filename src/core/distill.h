/*
 * distill.h
 *	  A small regression-tree ensemble fitted to a model's margins on a
 *	  sample (distill.c): the cheap model of approximate top-K and cascades
 *	  that tracks the full model better than a prefix of the same size.
 *
 * The fit is least-squares boosting on binned features, depth-wise, fully
 * determined by its inputs (no randomness).  The result is an ordinary
 * model IR (regression, one output, x <= threshold goes left in double,
 * missing values to a learned side), compiled by hb_plan_build like any
 * other, so the cheap margins come from the same executors as the full
 * model's.  Its flat form (hb_trees_encode / hb_trees_decode) is what the
 * tuning catalog stores.
 */
#ifndef HB_DISTILL_H
#define HB_DISTILL_H

#include "model.h"

typedef struct HbDistillSpec
{
	int32_t		n_trees;		/* boosting rounds */
	int32_t		max_depth;		/* 1 to HB_DISTILL_MAX_DEPTH */
	double		eta;			/* shrinkage of every leaf */
	double		lambda;			/* L2 penalty on leaf values */
	int32_t		min_leaf;		/* fewest rows in a leaf */
	int32_t		max_bins;		/* value bins per feature, 2 to 255 */
} HbDistillSpec;

#define HB_DISTILL_MAX_DEPTH 10

/*
 * Fit n_trees trees to y (n rows) on features feat[0 .. n_feat) of x
 * (row-major, nf columns, NaN missing).  *out is a model of nf features
 * (named f0, f1, ...) whose trees split only on those.  False on bad
 * arguments or out of memory.
 */
extern bool hb_distill_fit(const double *x, size_t n, int32_t nf,
						   const double *y, const int32_t *feat, int32_t n_feat,
						   const HbDistillSpec *spec, HbModel **out,
						   HbError *err);

/*
 * The flat form of a single-output tree model with numeric splits:
 *	codes:	per tree, its node count, then per node (feature or -1 for a
 *			leaf, left, right, default_left)
 *	params:	the base margin, then per node the threshold or leaf value
 * hb_trees_decode checks every length and index and validates the result
 * like a model read from a file (the catalog row may be anyone's bytes).
 */
extern bool hb_trees_encode(const HbModel *m, int32_t **codes, int32_t *n_codes,
							double **params, int32_t *n_params, HbError *err);
extern bool hb_trees_decode(int32_t nf, int32_t n_trees, const int32_t *codes,
							int32_t n_codes, const double *params,
							int32_t n_params, HbModel **out, HbError *err);

#endif							/* HB_DISTILL_H */
