/*
 * approx.h
 *	  Cheap approximations of a compiled model (approx.c): what approximate
 *	  top-K and classification cascades score every row with, so that only
 *	  the rows that matter pay for the full model.
 *
 * Two kinds, both tuned by tune.c:
 *	- a prefix of the ensemble: the first n_trees trees, calibrated per output
 *	  (cheap = scale * partial + shift, fitted by least squares to the full
 *	  margin).  Its partial sums are kept, so finishing a row costs only the
 *	  remaining trees and gives exactly the full model's margin;
 *	- a linear model on a few cheap, important features, fitted to the full
 *	  model's margins; finishing a row runs the full model;
 *	- a small tree ensemble fitted to the full model's margins on a few
 *	  cheap, important features (distill.c), compiled into a plan of its
 *	  own; finishing a row runs the full model.  Single-output models only.
 */
#ifndef HB_APPROX_H
#define HB_APPROX_H

#include <math.h>

#include "plan.h"

typedef enum HbApproxKind
{
	HB_APPROX_PREFIX = 1,
	HB_APPROX_LINEAR = 2,
	HB_APPROX_TREES = 3
} HbApproxKind;

typedef struct HbApprox
{
	HbApproxKind kind;
	int32_t		n_outputs;

	/* PREFIX: trees [0, n_trees) of the plan */
	int32_t		n_trees;
	double	   *scale;			/* n_outputs */
	double	   *shift;			/* n_outputs */

	/* LINEAR: margin g = bias[g] + sum_j weight[j * n_outputs + g] * x_j */
	int32_t		n_feat;
	int32_t    *feat;			/* model feature index of each x_j */
	double	   *fill;			/* value of a missing x_j (its mean) */
	double	   *weight;
	double	   *bias;

	/*
	 * TREES: feat holds the flat codes of the trees (n_feat of them, see
	 * distill.h), n_trees their count, tparams their n_tparams numbers;
	 * cheap is the plan built from them.
	 */
	double	   *tparams;
	int32_t		n_tparams;
	HbPlan	   *cheap;

	/*
	 * Top-K's optional second stage (single-output tree models): a row the
	 * cheap model passes is scored by the plan's trees [0, refine_trees)
	 * (continuing a PREFIX's partial sum), as (refine_scale * partial +
	 * refine_shift) + refine_slack; only a row that passes the cut with that
	 * score too is finished, from the partial sum it has.  The screening
	 * score is min(cheap, that), one score with one cut (tune.c).  0: no
	 * second stage.
	 */
	int32_t		refine_trees;
	double		refine_scale;
	double		refine_shift;
	double		refine_slack;

	/*
	 * Top-K's optional gate (single-output models): a linear model (kind
	 * LINEAR) on features the cheap model reads, fitted to the full
	 * margins.  Its score plus gate_slack is one more term of the screening
	 * score, min(gate + slack, cheap[, second]), so the cut and its
	 * statement are about that one score.  It costs a multiply-add a
	 * feature where the cheap model costs a tree walk per tree, so where no
	 * row may wait (hb_waiting_close: the bar covers the tail's floor) a
	 * row whose gate score is below the cut is dropped without the cheap
	 * model.  NULL: none.
	 */
	struct HbApprox *gate;
	double		gate_slack;
} HbApprox;

/*
 * The value a linear approximation (a cheap model or a gate) reads for a
 * feature: a missing or infinite one reads as the feature's mean, fill,
 * both where it is fitted (tune.c) and where it scores: a linear model
 * would give an infinite or NaN score to a row the trees score finitely.
 */
static inline double
hb_linear_input(double v, double fill)
{
	return isfinite(v) ? v : fill;
}

/*
 * The catalog form: kind, n_trees, the feature list and one array of
 * doubles.  PREFIX: scale[0..k), shift[0..k).  LINEAR: fill[0..f),
 * weight[0..f*k), bias[0..k).  TREES: the flat codes as the feature list,
 * the thresholds and leaf values as the doubles.  hb_approx_from_params
 * checks every length and index against the plan (the catalog row may be
 * anyone's bytes).
 */
extern int	hb_approx_n_params(const HbApprox *a);
extern void hb_approx_params(const HbApprox *a, double *out);
extern bool hb_approx_params_finite(const HbApprox *a);
extern bool hb_approx_from_params(const HbPlan *p, HbApproxKind kind,
								  int32_t n_trees, const int32_t *feat,
								  int32_t n_feat, const double *params,
								  int32_t n_params, HbApprox **out,
								  HbError *err);
/* used[j] set for every feature the cheap model reads (n_features). */
extern void hb_approx_features(const HbPlan *p, const HbApprox *a, bool *used);
extern HbApprox *hb_approx_new(HbApproxKind kind, int32_t n_outputs,
							   int32_t n_trees, int32_t n_feat);
extern void hb_approx_free(HbApprox *a);

/* A TREES approximation of plan p from a fitted model (distill.h). */
extern bool hb_approx_from_trees(const HbPlan *p, const HbModel *m,
								 HbApprox **out, HbError *err);
extern void hb_approx_describe(const HbPlan *p, const HbApprox *a, char *buf,
							   size_t len);

/*
 * Cheap margins of n rows (n x n_outputs).  raw, when not NULL, receives
 * what hb_approx_finish continues from (PREFIX: the partial sums; LINEAR:
 * nothing useful).
 */
extern void hb_approx_margins(const HbPlan *p, const HbApprox *a,
							  const double *x, size_t n, double *raw,
							  double *cheap);

/* raw (from hb_approx_margins, same rows) becomes the full margins. */
extern void hb_approx_finish(const HbPlan *p, const HbApprox *a,
							 const double *x, size_t n, double *raw);

/*
 * The second stage (a->refine_trees > 0): raw, from hb_approx_margins,
 * becomes the partial sums of the plan's first refine_trees trees, and
 * score2 the second-stage scores, slack included (single output).
 */
extern void hb_approx_refine(const HbPlan *p, const HbApprox *a,
							 const double *x, size_t n, double *raw,
							 double *score2);

/* raw, from hb_approx_refine, becomes the full margins. */
extern void hb_approx_finish_refined(const HbPlan *p, const HbApprox *a,
									 const double *x, size_t n, double *raw);

/*
 * raw becomes the full margins: row i continues from the second stage
 * when refined[i] (hb_approx_refine), from hb_approx_margins otherwise.
 * refined may be NULL (no row refined).
 */
extern void hb_approx_finish_rows(const HbPlan *p, const HbApprox *a,
								  const double *x, size_t n, double *raw,
								  const bool *refined);

/*
 * Check and set a second stage read back from the catalog: the trees
 * continue the cheap model's (more than a prefix's own, fewer than the
 * plan's), the calibration is finite.
 */
extern bool hb_approx_set_refine(const HbPlan *p, HbApprox *a, int32_t trees,
								 double scale, double shift, double slack,
								 HbError *err);

/*
 * The gate's scores of n rows, slack included (a->gate set): what the
 * screening score is at most.
 */
extern void hb_approx_gate(const HbApprox *a, const double *x, size_t n,
						   int nf, double *g);

/*
 * The rows of x (n of them, nf values each) whose gate scores g reach cut,
 * in order, copied into xo (x itself compacts them in place), their places
 * among the n in at; returns how many.
 */
extern int	hb_approx_gate_pass(const double *g, double cut, const double *x,
								int n, int nf, double *xo, int *at);

/*
 * Check and set a gate read back from the catalog: the LINEAR catalog form
 * (hb_approx_from_params), one output, only features the cheap model reads
 * (a row read lazily has no others), a finite slack.
 */
extern bool hb_approx_set_gate(const HbPlan *p, HbApprox *a,
							   const int32_t *feat, int32_t n_feat,
							   const double *params, int32_t n_params,
							   double slack, HbError *err);

/*
 * Top-K's cut relative to the bar (tune.c, docs/willump.md).  At query time
 * the k-th best full margin among the rows scored so far, the bar b, is
 * exact and at most the full margin of any row of the answer; a row whose
 * screening score is below
 *
 *		(1 - slope) * max(b, floor) + slope * floor - margin
 *
 * is dropped.  floor is the full margin of the lowest of the tuning's tail
 * rows (s*), margin the order statistic of (1 - slope) F + slope s* - S
 * over them that the cut's statement is about, slope the growth of the
 * screening score's shortfall up the tail, fitted on other rows.  A fixed
 * cut keeps the same share of any input, several percent at target 0.99,
 * while a top-10 of a million rows is its top 0.001%: this cut rises with
 * the answer.  Not set (floor NaN): the fixed cut alone.
 */
typedef struct HbBarCut
{
	double		slope;
	double		floor;
	double		margin;
	bool		fixed;			/* the fixed cut decides; floor only says when
								 * the answer lies in the tail its statement
								 * covers (hb_bar_cut_covers) */
} HbBarCut;

static inline bool
hb_bar_cut_on(const HbBarCut *bc)
{
	return bc->floor == bc->floor;	/* not NaN */
}

/*
 * The screening score a row needs, given the fixed cut and the bar.  Each
 * row is judged by one of the two cuts, and each cut's statement bounds
 * the chance of missing a row of the answer it judges.
 */
static inline double
hb_bar_cut(const HbBarCut *bc, double cut, double bar)
{
	double		b;

	/*
	 * No bar yet (fewer than k rows scored: -Infinity), or an infinite one
	 * (infinite margins, which would give slope 1 a NaN cut): the fixed
	 * cut, whose own statement covers the rows it judges
	 */
	if (!hb_bar_cut_on(bc) || bc->fixed || !(bar - bar == 0.0))
		return cut;
	b = bar > bc->floor ? bar : bc->floor;
	return (1.0 - bc->slope) * b + bc->slope * bc->floor - bc->margin;
}

/*
 * Whether the answer lies above the tail the statement is about (the bar,
 * a lower bound of the answer's margins, at or above floor): rows kept
 * only to fill a small input's answer are then not needed.
 */
static inline bool
hb_bar_cut_covers(const HbBarCut *bc, double bar)
{
	return hb_bar_cut_on(bc) && bar >= bc->floor;
}

/*
 * Check a bar cut read back from the catalog: all three numbers finite, or
 * all three NaN (none); the slope in [0, 1].
 */
extern bool hb_bar_cut_check(const HbBarCut *bc, HbError *err);

/* trees of the plan a row has been scored by after the cheap model */
static inline int32_t
hb_approx_cheap_trees(const HbApprox *a)
{
	return a->kind == HB_APPROX_PREFIX ? a->n_trees : 0;
}


/*
 * How sure the cheap model is of its class: binary, the margin's distance
 * to the cut where the class flips (hb_binary_cut: 0 for a logit, 0.5 for
 * a probability; -infinity, never sure, where there is none); multiclass,
 * the gap between the two largest margins.  *cls gets the class.
 */
extern double hb_approx_confidence(const HbPlan *p, const double *margins,
								   int *cls);

/* ---- cascades ---- */

typedef struct HbCascade
{
	HbApprox   *approx;
	double		threshold;		/* confidence at or above it: cheap answer */
} HbCascade;

typedef struct HbCascadeStats
{
	int64_t		rows;
	int64_t		rows_full;		/* rows the full model decided */
} HbCascadeStats;

/*
 * What hb_predict returns (HB_CASCADE_PREDICT: probability, ranking value
 * or class index) or the class index (HB_CASCADE_CLASS), for n rows: the
 * cheap model's answer where it is confident, the full model's elsewhere.
 */
typedef enum HbCascadeOut
{
	HB_CASCADE_PREDICT,
	HB_CASCADE_CLASS
} HbCascadeOut;

extern void hb_cascade_run(const HbPlan *p, const HbCascade *c,
						   const double *x, size_t n, HbCascadeOut what,
						   double *out, HbCascadeStats *stats);

/*
 * Lazy featurization: x holds only the features the cheap model reads
 * (hb_approx_features); the full feature vectors of the rows the cheap
 * model cannot decide come from complete(arg, rows, n, xs), rows being
 * indexes into x, written to xs (n x n_features).
 */
typedef void (*HbCompleteRows) (void *arg, const size_t *rows, size_t n,
								double *xs);

extern void hb_cascade_run_lazy(const HbPlan *p, const HbCascade *c,
								const double *x, size_t n, HbCascadeOut what,
								double *out, HbCascadeStats *stats,
								HbCompleteRows complete, void *arg);

/* The class of full margins: hb_link_class's (hb_predict_class's). */
extern int	hb_margin_class(const HbPlan *p, const double *margins);

#endif							/* HB_APPROX_H */
