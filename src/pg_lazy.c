/*
 * pg_lazy.c
 *	  Lazy featurization for the statistical shortcuts.
 *
 * A cascade or an approximate top-K scores every row with a cheap model
 * that reads a few features.  For a model with featurizers, the rows are
 * bound with only the steps those features need (a binding's steps,
 * hb_lazy_steps); the rows the cheap model cannot decide, or keeps for
 * re-scoring, are featurized in full later by binding their row again
 * (hb_lazy_complete, hb_lazy_fill).  That recomputes the cheap steps of
 * those rows, which is cheap by construction, and keeps no raw inputs
 * around: the row datum every scoring path already holds is enough.  A
 * completed row goes through the same full featurization as an eager one,
 * so the full model sees the same bits.
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "hbird.h"

struct HbLazy
{
	const HbCacheEntry *e;
	bool	   *step_on;		/* the steps the cheap features need */
	int32	   *feats;			/* the cheap features */
	int32		n_feats;
	HbBindSteps steps;			/* the same, for a binding */
	MemoryContext cxt;
	bool		full_bound;
	HbBinding	full;			/* completion: a binding that featurizes all */
	Datum	   *rows;			/* the rows being scored (0: a NULL row) */
};


/*
 * A model without featurizers: the cheap model's features are read, the
 * other columns are not (a kept row is bound again in full).  Worth it
 * when the cheap model leaves columns out.
 */
static HbLazy *
lazy_columns(const HbCacheEntry *e, const HbApprox *a, MemoryContext cxt)
{
	HbLazy	   *l;
	bool	   *feat_on = MemoryContextAllocZero(cxt, sizeof(bool) * Max(e->n_features, 1));

	hb_approx_features(e->plan, a, feat_on);
	l = MemoryContextAllocZero(cxt, sizeof(HbLazy));
	l->feats = MemoryContextAlloc(cxt, sizeof(int32) * Max(e->n_features, 1));
	l->n_feats = hb_feature_list(feat_on, e->n_features, l->feats);
	pfree(feat_on);
	if (l->n_feats == e->n_features)
	{
		pfree(l->feats);
		pfree(l);
		return NULL;
	}
	elog(DEBUG1, "model \"%s\": reading lazily, %d of %d columns for the cheap model",
		 e->name, l->n_feats, e->n_features);
	l->e = e;
	l->cxt = cxt;
	l->steps.step_on = NULL;
	l->steps.feats = l->feats;
	l->steps.n_feats = l->n_feats;
	return l;
}

/*
 * How rows are bound lazily for cheap model a of e's model, or NULL when
 * eagerly.  plain: also for a model without featurizers, whose rows are
 * then read for the cheap model's features only (callers whose rows come
 * through a column reader: hb_reader_init's subset).
 */
HbLazy *
hb_lazy_for(const HbCacheEntry *e, const HbApprox *a, bool plain,
			MemoryContext cxt)
{
	const HbPipeline *p = e->pipeline;
	HbLazy	   *l;
	bool	   *feat_on;
	int			skipped = 0;

	if (!hb_lazy_on || a == NULL)
		return NULL;
	if (p == NULL)
		return plain ? lazy_columns(e, a, cxt) : NULL;
	l = MemoryContextAllocZero(cxt, sizeof(HbLazy));
	l->e = e;
	l->cxt = cxt;
	feat_on = MemoryContextAllocZero(cxt, sizeof(bool) * Max(p->n_features, 1));
	l->step_on = MemoryContextAllocZero(cxt, sizeof(bool) * Max(p->n_steps, 1));
	hb_approx_features(e->plan, a, feat_on);
	hb_pipeline_steps_for(p, feat_on, l->step_on);
	l->feats = MemoryContextAlloc(cxt, sizeof(int32) * Max(p->n_features, 1));
	l->n_feats = hb_feature_list(feat_on, p->n_features, l->feats);
	pfree(feat_on);
	for (int k = 0; k < p->n_steps; k++)
		skipped += !l->step_on[k];
	elog(DEBUG1, "model \"%s\": featurizing lazily, %d of %d featurizer steps skipped for the cheap model",
		 e->name, skipped, p->n_steps);
	if (skipped == 0)
	{
		/* the cheap model needs every step: nothing to save */
		pfree(l->step_on);
		pfree(l->feats);
		pfree(l);
		return NULL;
	}
	l->steps.step_on = l->step_on;
	l->steps.feats = l->feats;
	l->steps.n_feats = l->n_feats;
	return l;
}

/* What a binding runs to bind rows for the cheap model (HbBinding.steps). */
const HbBindSteps *
hb_lazy_steps(const HbLazy *l)
{
	return l ? &l->steps : NULL;
}

void
hb_lazy_set_rows(HbLazy *l, Datum *rows)
{
	l->rows = rows;
}

void
hb_lazy_fill(HbLazy *l, Datum row, double *x)
{
	HeapTupleHeader td;

	if (row == (Datum) 0)
	{
		/* a NULL row is all-missing, as the eager paths make it */
		for (int f = 0; f < l->e->n_features; f++)
			x[f] = get_float8_nan();
		return;
	}
	td = DatumGetHeapTupleHeader(row);
	if (!l->full_bound ||
		l->full.tupType != HeapTupleHeaderGetTypeId(td) ||
		l->full.tupTypmod != HeapTupleHeaderGetTypMod(td))
	{
		if (l->full_bound)
			hb_bind_release(&l->full);
		hb_bind_record(&l->full, l->e, td, l->cxt, l->e->name);
		l->full_bound = true;
	}
	hb_bind_row(&l->full, l->e, td, x);
}

void
hb_lazy_complete(void *arg, const size_t *rows, size_t n, double *xs)
{
	HbLazy	   *l = arg;

	for (size_t i = 0; i < n; i++)
		hb_lazy_fill(l, l->rows[rows[i]], xs + i * l->e->n_features);
}
