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

extern bool hb_plan_build(const HbModel *m, HbPlan **out, HbError *err);
extern void hb_plan_free(HbPlan *p);

extern int32_t hb_plan_n_features(const HbPlan *p);
extern int32_t hb_plan_n_outputs(const HbPlan *p);
extern int32_t hb_plan_n_classes(const HbPlan *p);
extern size_t hb_plan_bytes(const HbPlan *p);

/* Raw margins, n x n_outputs, before the link function. */
extern void hb_plan_margins(const HbPlan *p, const double *x, size_t n,
							double *margins);

/*
 * What hb_predict returns, one value per row: the regression value, the
 * positive-class probability, the ranking score, or the argmax class index.
 * scratch holds n x n_outputs doubles (the margins on the way).
 */
extern void hb_plan_predict(const HbPlan *p, const double *x, size_t n,
							double *scratch, double *out);

/* Class probabilities, n x n_classes; only for classifiers.  Same scratch. */
extern void hb_plan_proba(const HbPlan *p, const double *x, size_t n,
						  double *scratch, double *out);

/* Turn margins (n x n_outputs) into predictions / probabilities in place. */
extern void hb_link_predict(const HbPlan *p, const double *margins, size_t n,
							double *out);
extern void hb_link_proba(const HbPlan *p, const double *margins, size_t n,
						  double *out);

#endif							/* HB_PLAN_H */
