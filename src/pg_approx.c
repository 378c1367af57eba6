/*
 * pg_approx.c
 *	  Approximate top-K: the tuned cheap model scores every row, the rows it
 *	  ranks best are kept, and only those are scored by the full model.
 *
 * A row is kept while it is among the best `kept` rows by cheap score, or
 * at or above the tuned cut (the cheap score at the kept share of the
 * tuning sample): on a big input the cut keeps the same share of rows the
 * tuning measured, on a small one `kept` rows remain.  A prefix
 * approximation keeps each row's partial sum, so re-scoring a kept row
 * costs only the remaining trees and gives exactly hb_predict's score; the
 * answer is then the k best kept rows by that score, ties by input order,
 * as the exact top-K ranks them.  Memory is O(kept rows); the rows above
 * the cut are capped (HB_APPROX_MAX_KEPT), beyond which the worst go.
 */
#include "postgres.h"

#include <math.h>

#include "utils/array.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "hbird.h"

#define HB_APPROX_MAX_KEPT 200000

typedef struct Kept
{
	double		cheap;
	double		raw;			/* partial margin (prefix) */
	int64		ordinal;
	double	   *x;
	Datum		item;
	double		score;			/* filled at the end */
} Kept;

struct HbApproxTopk
{
	HbCacheEntry *entry;
	const HbApprox *approx;
	int			k;
	int			keep;			/* always keep this many */
	double		cut;			/* and every row at or above this */
	int			max_kept;
	Kept	   *heap;			/* min-heap: root is the worst kept row */
	int			n;
	int			cap;
	MemoryContext cxt;
	int64		ordinal;
	double	   *raw;
	double	   *cheap;
	int			buf_rows;
	HbLazy	   *lazy;			/* rows bound lazily: kept rows are bound
								 * again from their item at the end */
};

/* a is a worse candidate than b: lower cheap score, or read later */
static inline bool
kept_worse(const Kept *a, const Kept *b)
{
	return a->cheap < b->cheap || (a->cheap == b->cheap && a->ordinal > b->ordinal);
}

#define HB_HEAP_PREFIX kept
#define HB_HEAP_ELEMENT_TYPE Kept
#define HB_HEAP_WORSE(a, b) kept_worse(a, b)
#include "heap_template.h"

static void
pop_root(HbApproxTopk *s)
{
	if (s->heap[0].x)
		pfree(s->heap[0].x);
	pfree(DatumGetPointer(s->heap[0].item));
	s->heap[0] = s->heap[--s->n];
	kept_sift_down(s->heap, s->n, 0);
}

/*
 * columns: the rows will come through a column reader (hb_scan_batches),
 * which reads only the cheap model's columns of a model without
 * featurizers (hb_lazy_for).
 */
HbApproxTopk *
hb_approx_topk_begin(HbCacheEntry *e, const HbTuning *t, int k,
					 bool columns, MemoryContext parent)
{
	HbApproxTopk *s = MemoryContextAllocZero(parent, sizeof(HbApproxTopk));
	double		keep = ceil(t->ratio * k);

	s->entry = e;
	s->approx = t->approx;
	s->k = k;
	s->keep = keep > INT_MAX / 2 ? INT_MAX / 2 : (int) Max(keep, k);
	/* the cut was measured for k up to the tuned one; above it, keep only */
	s->cut = k <= t->k ? t->cheap_cut : INFINITY;
	s->max_kept = Max(s->keep, HB_APPROX_MAX_KEPT);
	/*
	 * No context of its own: a hash aggregate holds one state per group,
	 * and it sums the memory of every child context each time it checks
	 * its limit.  What is allocated here is freed piece by piece.
	 */
	s->cxt = parent;
	s->cap = Min(s->keep, 1024);
	s->heap = MemoryContextAllocHuge(s->cxt, sizeof(Kept) * s->cap);
	s->lazy = hb_lazy_for(e, s->approx, columns, s->cxt);
	return s;
}

/* How the rows fed to s must be bound (hb_scan_batches, HbCallSlot). */
HbLazy *
hb_approx_topk_lazy(HbApproxTopk *s)
{
	return s->lazy;
}

void
hb_approx_topk_batch(HbApproxTopk *s, const double *x, const Datum *items,
					 HbQueryRows *rows, int n)
{
	const HbPlan *p = s->entry->plan;
	int			nf = s->entry->n_features;

	if (n > s->buf_rows)
	{
		if (s->raw)
		{
			pfree(s->raw);
			pfree(s->cheap);
		}
		s->raw = MemoryContextAllocHuge(s->cxt, sizeof(double) * n);
		s->cheap = MemoryContextAllocHuge(s->cxt, sizeof(double) * n);
		s->buf_rows = n;
	}
	hb_approx_margins(p, s->approx, x, n, s->raw, s->cheap);
	for (int i = 0; i < n; i++)
	{
		Kept		c;
		MemoryContext old;

		c.cheap = s->cheap[i];
		c.raw = s->raw[i];
		c.ordinal = s->ordinal + i;
		c.score = 0;
		/* full, and this row is neither above the cut nor better than the worst */
		if (s->n >= s->keep && c.cheap < s->cut && !kept_worse(&s->heap[0], &c))
			continue;
		if (s->n == s->cap)
		{
			s->cap = s->cap * 2;
			s->heap = repalloc_huge(s->heap, sizeof(Kept) * s->cap);
		}
		old = MemoryContextSwitchTo(s->cxt);
		c.x = NULL;
		if (s->lazy == NULL)
		{
			c.x = palloc(sizeof(double) * nf);
			memcpy(c.x, x + (size_t) i * nf, sizeof(double) * nf);
		}
		c.item = rows ? hb_rows_item(rows, i) : datumCopy(items[i], false, -1);
		MemoryContextSwitchTo(old);
		s->heap[s->n] = c;
		kept_sift_up(s->heap, s->n++);
		while (s->n > s->keep &&
			   (s->heap[0].cheap < s->cut || s->n > s->max_kept))
			pop_root(s);
	}
	s->ordinal += n;
}

static int
cmp_score(const void *a, const void *b)
{
	const Kept *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/*
 * The answer so far: the kept rows scored by the full model, the k best,
 * best first, with their scores; returns how many (at most k).  The state
 * is left as it was (an aggregate may be finalized and then fed more rows
 * in a window); its memory goes with the context it was begun in.
 */
int
hb_approx_topk_end(HbApproxTopk *s, double **scores, Datum **items,
				   HbTopkStats *stats)
{
	const HbPlan *p = s->entry->plan;
	int			nf = s->entry->n_features;
	int			n = s->n;
	int			out = Min(n, s->k);
	double	   *x = palloc_extended(sizeof(double) * Max(n, 1) * nf, MCXT_ALLOC_HUGE);
	double	   *raw = palloc_extended(sizeof(double) * Max(n, 1), MCXT_ALLOC_HUGE);
	double	   *sc = palloc_extended(sizeof(double) * Max(n, 1), MCXT_ALLOC_HUGE);
	Kept	   *all = palloc_extended(sizeof(Kept) * Max(n, 1), MCXT_ALLOC_HUGE);
	int			T = hb_plan_n_trees(p);

	for (int i = 0; i < n; i++)
	{
		if (s->heap[i].x)
			memcpy(x + (size_t) i * nf, s->heap[i].x, sizeof(double) * nf);
		else
			hb_lazy_fill(s->lazy, s->heap[i].item, x + (size_t) i * nf);
		raw[i] = s->heap[i].raw;
	}
	hb_approx_finish(p, s->approx, x, n, raw);
	hb_link_predict(p, raw, n, sc);
	memcpy(all, s->heap, sizeof(Kept) * n);
	for (int i = 0; i < n; i++)
		all[i].score = sc[i];
	qsort(all, n, sizeof(Kept), cmp_score);
	*scores = palloc(sizeof(double) * Max(out, 1));
	*items = palloc(sizeof(Datum) * Max(out, 1));
	for (int i = 0; i < out; i++)
	{
		(*scores)[i] = all[i].score;
		(*items)[i] = datumCopy(all[i].item, false, -1);
	}
	if (stats)
	{
		int			m = s->approx->kind == HB_APPROX_PREFIX ? s->approx->n_trees : 0;

		stats->rows = s->ordinal;
		stats->rows_full = n;
		stats->pairs_scored = s->ordinal * m + (int64) n * (T - m);
	}
	pfree(x);
	pfree(raw);
	pfree(sc);
	pfree(all);
	return out;
}
