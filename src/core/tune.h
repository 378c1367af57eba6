/*
 * tune.h
 *	  Building and tuning cheap approximations on a sample (tune.c).
 *
 * Given a sample of rows, hb_tune builds candidate approximations of the
 * model (ensemble prefixes, linear models on the cheap important features),
 * measures what each costs per row and how well it does against the full
 * model on rows it was not fitted on, and picks the cheapest configuration
 * whose accuracy meets the target with the requested confidence.  See
 * docs/willump.md for the statements the numbers carry.
 */
#ifndef HB_TUNE_H
#define HB_TUNE_H

#include "approx.h"

typedef enum HbTuneKind
{
	HB_TUNE_TOPK = 1,			/* approximate top-K: precision@k */
	HB_TUNE_CASCADE = 2			/* cascade: accuracy loss */
} HbTuneKind;

/* top-K: whether the chosen cheap model gets a second stage (approx.h) */
typedef enum HbTuneStages
{
	HB_STAGES_AUTO = 0,			/* when the selection rows expect it cheaper */
	HB_STAGES_ONE = 1,			/* never */
	HB_STAGES_TWO = 2			/* always, the best one (tests, comparisons) */
} HbTuneStages;

typedef struct HbTuneSpec
{
	HbTuneKind	kind;
	int32_t		k;				/* top-K only */
	double		target;			/* top-K: precision@k; cascade: accuracy loss */
	double		confidence;
	uint64_t	seed;
	const double *feature_cost; /* per model feature; NULL: all alike */

	/*
	 * Featurization cost (a model with a featurizer pipeline), or n_groups
	 * 0.  feature_groups[j]: bit g set when feature j derives from group g
	 * (featurize_deps.c); group_ns[g]: what featurizing group g costs per
	 * row; featurize_ns: the whole pipeline per row.  A selection of
	 * features costs the sum over the groups it touches, whatever the
	 * number of features in them: the knapsack is over groups.
	 */
	int32_t		n_groups;
	const uint64_t *feature_groups;
	const double *group_ns;
	double		featurize_ns;
	HbTuneStages stages;
	HbTuneStages gate;			/* top-K's gate (approx.h): AUTO, never
								 * (ONE), or always where it can act (TWO,
								 * tests and comparisons: with the cut
								 * relative to the bar it needs, whether
								 * that pays or not) */
} HbTuneSpec;

typedef struct HbTuneCandidate
{
	char		label[128];
	HbApprox   *approx;
	double		cost_ns;		/* measured: cheap model per row, with the
								 * featurization of what it reads */
	double		featurize_ns;	/* of that: featurization */
	uint64_t	groups;			/* the feature groups it reads */
	double		rest_ns;		/* finishing a row the cheap model cannot decide */

	/* top-K */
	double		ratio;			/* kept / k */
	int32_t		kept;			/* rows re-scored with the full model */
	double		tau;			/* cheap score of the kept-th best evaluation row */
	int32_t		tail;			/* evaluation rows whose misses bound the precision */
	int32_t		misses;			/* misses allowed among them (the menu's e) */
	double		screened;		/* share through the second stage, if any */
	double		gate_ns;		/* the gate, if any: its cost per row */
	double		gated;			/* and the share it passes at the fixed cut */
	HbBarCut	bar;			/* the chosen one: the cut relative to the
								 * bar (approx.h); others: none (NaN) */
	double		select_ns;		/* expected cost per row on the selection rows:
								 * what the choice compares */
	int32_t		menu;			/* top-K: the chosen entry of the misses menu */
	int32_t    *fit_feat;		/* TREES: the features it was fitted on */
	int32_t		n_fit_feat;
	int32_t		fit_trees;		/* TREES: its shape */
	int32_t		fit_depth;

	/* cascade */
	double		threshold;		/* confidence gap taking the cheap answer */

	double		accuracy;		/* top-K: mean precision@k; cascade: agreement */
	double		bound;			/* top-K: lower precision quantile; cascade:
								 * upper bound of the accuracy loss */
	double		coverage;		/* top-K: share re-scored; cascade: share decided
								 * by the cheap model */
	double		expected_ns;
	double		speedup;
	bool		feasible;
	bool		chosen;
} HbTuneCandidate;

typedef struct HbTuneResult
{
	int32_t		n_cand;
	HbTuneCandidate *cand;
	int32_t		chosen;			/* index, -1 if none */
	double		full_ns;		/* measured: full model per row, with the
								 * whole featurization */
	double		featurize_ns;	/* of that: featurization */
	int64_t		n_fit;
	int64_t		n_eval;
	int32_t		tail;			/* top-K: the chosen candidate's tail: the
								 * evaluation rows' top `tail` by the full
								 * model are what misses are counted on */
} HbTuneResult;

typedef void (*HbTuneProgress) (void *arg, const char *msg);

/*
 * Tune on n sample rows x (row-major, n_features each).  Fails with
 * HB_ERR_ARGUMENT on a sample or spec that cannot be tuned on.
 */
extern bool hb_tune_run(const HbPlan *p, const double *x, size_t n,
					const HbTuneSpec *spec, HbTuneProgress progress,
					void *arg, HbTuneResult *res, HbError *err);
extern void hb_tune_result_free(HbTuneResult *res);

/*
 * One-sided Clopper-Pearson upper bound of a binomial proportion after
 * e successes in n trials, at the given confidence.
 */
extern double hb_binomial_upper(int64_t e, int64_t n, double confidence);

/* The seeded generator every random choice of tuning draws from. */
typedef struct HbRng
{
	uint64_t	s;
} HbRng;

extern void hb_rng_seed(HbRng *r, uint64_t seed);
extern uint64_t hb_rng_next(HbRng *r);
extern uint64_t hb_rng_below(HbRng *r, uint64_t n);

#endif							/* HB_TUNE_H */
