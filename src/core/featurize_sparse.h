/*
 * featurize_sparse.h
 *	  Scoring linear models over wide text features without the dense
 *	  feature vector.
 *
 * When a linear model reads a text step's kept columns (HB_STEP_HASHING,
 * HB_STEP_TFIDF) as features, a row's margin needs only the document's
 * non-zero columns: the kept columns times the coefficient rows are folded,
 * once per plan, into a per-step weight table, and a row costs its tokens
 * (analyse, merge, weight, normalise, look up, accumulate) instead of the
 * step's width.  The other features go through the dense executor as
 * usual.  Nothing here is stored in the compiled image: the table is
 * rebuilt from the model and its pipeline whenever a plan is.
 */
#ifndef HB_FEATURIZE_SPARSE_H
#define HB_FEATURIZE_SPARSE_H

#include "featurize.h"
#include "model.h"
#include "plan.h"

typedef struct HbSparseLinear HbSparseLinear;

/*
 * Build the sparse scorer of model m over pipeline p (m's pipeline, or a
 * copy of it that outlives the scorer).  *out is NULL, with true, when
 * there is nothing to gain: not a linear model, a model that sums in
 * float32 (its order of summation is part of its result), or no text step
 * whose columns go straight to features.
 */
extern bool hb_sparse_linear_build(const HbModel *m, const HbPipeline *p,
								   HbSparseLinear **out, HbError *err);
extern void hb_sparse_linear_free(HbSparseLinear *s);

/* Text steps scored sparse (for tests and hb_compile-like reports). */
extern int32_t hb_sparse_linear_n_text_steps(const HbSparseLinear *s);

/*
 * What scoring n rows does before the link, as hb_plan_ops lists a plan's
 * ops: a "dot" of the features other steps give, then one "text weights"
 * op per text step (a row adds the weight rows of its non-zero columns;
 * flops < 0: they depend on the documents).  Returns the ops written.
 */
extern int	hb_sparse_linear_ops(const HbSparseLinear *s, size_t n,
								 HbPlanOp *ops, int max_ops);

/*
 * Raw margins (n x n_outputs, before the link) of the rows, as
 * hb_pipeline_run followed by hb_plan_margins would give them up to the
 * order of summation.  slots: hb_pipeline_row_slots(p) doubles of scratch.
 * Fails as hb_pipeline_run does.
 */
extern bool hb_sparse_linear_margins(const HbSparseLinear *s,
									 const HbRawRows *rows, double *margins,
									 double *slots, HbError *err);

/* The margins of a row whose features are all missing (a NULL row). */
extern void hb_sparse_linear_missing(const HbSparseLinear *s, double *margins);

#endif							/* HB_FEATURIZE_SPARSE_H */
