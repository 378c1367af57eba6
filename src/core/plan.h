/*
 * plan.h
 *	  Compiled plans: the flat, cache-friendly form a model is scored from.
 *
 * A plan is built once from the IR (per backend, per model version) and is
 * read-only afterwards, so one plan can serve any number of calls.  Inputs
 * are row-major doubles, n_features per row, NaN for a missing value.
 */
#ifndef HB_PLAN_H
#define HB_PLAN_H

#include "model.h"

typedef struct HbPlan HbPlan;

/* How tree ensembles are executed (see docs/strategies.md). */
typedef enum HbStrategy
{
	HB_STRATEGY_AUTO = 0,
	HB_STRATEGY_TT,				/* tree traversal over the flat layout */
	HB_STRATEGY_PTT,			/* perfect tree traversal, branch-free */
	HB_STRATEGY_GEMM			/* Hummingbird's GEMM over OpenBLAS */
} HbStrategy;

extern const char *hb_strategy_name(HbStrategy s);

/* One tensor op of a plan, for hb_compile and the docs. */
typedef struct HbPlanOp
{
	HbStrategy	strategy;
	const char *op;				/* "gather", "compare", "gemm", ... */
	char		in_shape[64];	/* e.g. "1024x28" */
	char		out_shape[64];
	int64_t		param_bytes;
	double		flops;			/* per batch of the given size */
} HbPlanOp;


/*
 * Strategy that hb_plan_margins uses from now on in this process; AUTO lets
 * the heuristic choose per batch.  A forced strategy a plan lacks (PTT
 * refused for depth, say) falls back to TT.
 */
extern void hb_set_strategy_override(HbStrategy s);

/* The strategy a batch of n rows runs with: the heuristic's, or the forced one */
extern HbStrategy hb_plan_strategy(const HbPlan *p, size_t n);

/*
 * Build a plan.  layout_bytes bounds the extra PTT / GEMM layouts: a
 * strategy that would need more is not built (TT always is).
 */
extern bool hb_plan_build(const HbModel *m, HbPlan **out, HbError *err);
extern bool hb_plan_build_ex(const HbModel *m, size_t layout_bytes,
							 HbPlan **out, HbError *err);
extern void hb_plan_free(HbPlan *p);

/*
 * A plan as one block of bytes another process reads in place, wherever
 * it maps it (plan_flat.c: a parallel worker, its leader's plan).  size is
 * 0 for a plan that cannot be written (itself a view).  A view's arrays
 * are the block's: it must outlive the plan, which scores with the same
 * bits as the one written.
 */
extern size_t hb_plan_flat_size(const HbPlan *p);
extern void hb_plan_flat_write(const HbPlan *p, void *dst);
extern bool hb_plan_flat_view(const void *src, size_t size, HbPlan **out,
							  HbError *err);

extern int32_t hb_plan_n_features(const HbPlan *p);
extern int32_t hb_plan_n_outputs(const HbPlan *p);
extern int32_t hb_plan_n_classes(const HbPlan *p);
extern int32_t hb_plan_n_trees(const HbPlan *p);
extern size_t hb_plan_bytes(const HbPlan *p);

/* Raw margins, n x n_outputs, before the link function. */
extern void hb_plan_margins(const HbPlan *p, const double *x, size_t n,
							double *margins);
extern void hb_plan_margins_with(const HbPlan *p, HbStrategy s,
								 const double *x, size_t n, double *margins);

/*
 * Trees [t0, t1) added to running margins (n x n_outputs), in model order;
 * with t0 = 0 the margins must start at the base margin (float-rounded for
 * float32 models), and trees [0, T) give hb_plan_margins' bits.
 */
extern void hb_plan_accumulate(const HbPlan *p, const double *x, size_t n,
							   int t0, int t1, double *margins);
extern void hb_plan_base_margins(const HbPlan *p, size_t n, double *margins);

/*
 * The plan's tensor ops for a batch of n rows with the strategy it would
 * use; returns how many were written (at most max_ops).
 */
extern int	hb_plan_ops(const HbPlan *p, size_t n, HbPlanOp *ops,
						int max_ops);

/*
 * What hb_predict returns, one value per row: the regression value, the
 * positive-class probability, the ranking score, or the argmax class index.
 * scratch holds n x n_outputs doubles (the margins on the way).  A
 * multi-target model has no one value per row: this gives its first target
 * only, and callers that return one value refuse such models
 * (hb_plan_is_multi_target).
 */
extern void hb_plan_predict(const HbPlan *p, const double *x, size_t n,
							double *scratch, double *out);

/*
 * Multi-target regression: several outputs (targets), none of them a class
 * (n_outputs > 1, not a classifier); hb_model_is_multi_target says the same
 * of the IR.
 */
extern bool hb_plan_is_multi_target(const HbPlan *p);

/*
 * Every output after the link, n x n_outputs, row-major: each target of a
 * multi-target model through the link its objective implies for one output
 * (identity for squared error, exp for Poisson / gamma / Tweedie, the
 * sigmoid for reg:logistic, ONNX's post-transforms), which is what
 * hb_plan_predict gives for a model of one target; for any other model that
 * is not a classifier, the same values as hb_plan_predict.  Classifiers'
 * outputs are per-class margins: their probabilities come from
 * hb_plan_proba (here each output would only get the one-output link).
 * scratch holds n x n_outputs doubles; out may be scratch.
 */
extern void hb_plan_targets(const HbPlan *p, const double *x, size_t n,
							double *scratch, double *out);

/* Class probabilities, n x n_classes; only for classifiers.  Same scratch. */
extern void hb_plan_proba(const HbPlan *p, const double *x, size_t n,
						  double *scratch, double *out);

/*
 * Turn margins (n x n_outputs, computed by hb_plan_margins or elsewhere:
 * the sparse text path, a device) into predictions, probabilities or
 * targets; out may be margins for hb_link_targets.
 */
extern void hb_link_predict(const HbPlan *p, const double *margins, size_t n,
							double *out);
extern void hb_link_targets(const HbPlan *p, const double *margins, size_t n,
							double *out);

/* A multiclass row's class from its margins: hb_predict's (first maximum) */
extern int	hb_link_argmax(const HbPlan *p, const double *m);
/* whether that is always the largest margin's (bounds on margins decide it) */
extern bool hb_link_class_is_margins(const HbPlan *p);

/* hb_predict's score of one margin of a single-output model */
extern double hb_link_score(const HbPlan *p, double margin);

/*
 * The margins whose hb_predict score equals that of margin: a link may map
 * distinct margins to one score (the float32 sigmoid saturates at 1, and
 * near 0.5 rounds neighbours together), so that a row of a lower margin
 * ties on the score and a later sort key decides.  _floor is the least
 * such margin, _ceil the largest: margin itself for an identity link, the
 * probability link or a NaN margin or score; -Infinity and +Infinity for a
 * multiclass model of one output (one class) and for links whose scores
 * are not monotone in the margin (onnxruntime's PROBIT and two-class
 * SOFTMAX), where no margin can be ruled out by its order.
 */
extern double hb_link_tie_floor(const HbPlan *p, double margin);
extern double hb_link_tie_ceil(const HbPlan *p, double margin);
extern void hb_link_proba(const HbPlan *p, const double *margins, size_t n,
						  double *out);

#endif							/* HB_PLAN_H */
