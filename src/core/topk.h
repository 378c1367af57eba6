/*
 * topk.h
 *	  Exact top-K scoring with bound pruning (topk.c).
 */
#ifndef HB_TOPK_H
#define HB_TOPK_H

#include "plan.h"

typedef struct HbTopkBounds HbTopkBounds;

typedef struct HbTopkStats
{
	int64_t		rows;			/* rows seen */
	int64_t		rows_full;		/* rows still in the race at the last tree */
	int64_t		pairs_scored;	/* (row, tree) pairs evaluated, closed rows
								 * scored on until compaction included */
} HbTopkStats;

/*
 * Called for each row whose exact margin is at least the threshold (with
 * lowest bounds: at most minus the threshold); returns the new threshold
 * (the K-th best margin once K rows are held, negated for lowest, else
 * -infinity).  row is the index within the x passed to hb_topk_score;
 * rows may be offered in any order (the likeliest first), so ties are the
 * caller's to rank by row.
 */
typedef double (*HbTopkOffer) (void *arg, size_t row, double margin);

/* Top-K needs one margin per row: single-output tree models. */
extern bool hb_topk_supported(const HbPlan *p);

/*
 * Per-tree leaf bounds of a plan, for the rows of highest margins (or,
 * _lowest, of lowest margins: then thresholds and the offers' returns are
 * in negated margins); NULL when out of memory.
 */
extern HbTopkBounds *hb_topk_bounds(const HbPlan *p);
extern HbTopkBounds *hb_topk_bounds_lowest(const HbPlan *p);
extern void hb_topk_bounds_free(HbTopkBounds *b);

/*
 * Whether the bounds prune at all: not for a model whose sums could
 * overflow (leaves near the largest float), whose margins may then be
 * infinite or NaN; every row is scored in full and offered.
 */
extern bool hb_topk_bounds_prune(const HbTopkBounds *b);

/*
 * Score n rows (row-major, n_features each), dropping rows whose margin can
 * no longer reach *threshold, and offer the others.  *threshold is updated
 * from the offers as rows complete.  False when out of memory.
 */
extern bool hb_topk_score(const HbPlan *p, const HbTopkBounds *b,
						  const double *x, size_t n, double *threshold,
						  HbTopkOffer offer, void *arg, HbTopkStats *stats);

#endif							/* HB_TOPK_H */
