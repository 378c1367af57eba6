/*
 * early_exit.h
 *	  Predicted classes with an exact early exit (early_exit.c).
 */
#ifndef HB_EARLY_EXIT_H
#define HB_EARLY_EXIT_H

#include "plan.h"

typedef struct HbClassBounds HbClassBounds;

typedef struct HbClassStats
{
	int64_t		rows;			/* rows classified */
	int64_t		rows_early;		/* rows decided before their last tree */
	int64_t		trees_scored;	/* (row, tree) pairs evaluated */
	int64_t		trees_total;	/* (row, tree) pairs full scoring evaluates */
} HbClassStats;

/* Classifiers: binary (n_classes 2, one margin) and multiclass. */
extern bool hb_class_supported(const HbPlan *p);

/*
 * Binary: the margin above which the class is 1 (0 for a logit, 0.5 for a
 * probability); false where the class is not one side of a cut (PROBIT).
 */
extern bool hb_binary_cut(const HbPlan *p, double *cut);

/*
 * Per-tree leaf bounds of a tree classifier, in model order; NULL when out
 * of memory.  A plan whose bounds are unusable (no trees, a leaf that is
 * not finite) gets a valid object that simply never exits early.
 */
extern HbClassBounds *hb_class_bounds(const HbPlan *p);
extern void hb_class_bounds_free(HbClassBounds *b);

/*
 * The class full scoring predicts from margins (n x n_outputs): binary,
 * the positive probability of hb_link_proba > 0.5; multiclass, the first
 * maximum margin (what hb_predict returns).
 */
extern void hb_link_class(const HbPlan *p, const double *margins, size_t n,
						  int32_t *out);

/*
 * Classes of n rows (row-major, n_features each).  With bounds, rows are
 * scored tree block by tree block and a row stops as soon as its class is
 * settled whatever the remaining trees give; without (b == NULL) every row
 * is scored on every tree.  Either way out[] equals hb_link_class of the
 * full margins, bit for bit.  stats (may be NULL) accumulates.  False when
 * out of memory.
 */
extern bool hb_early_exit_classes(const HbPlan *p, const HbClassBounds *b,
								  const double *x, size_t n, int32_t *out,
								  HbClassStats *stats);

#endif							/* HB_EARLY_EXIT_H */
