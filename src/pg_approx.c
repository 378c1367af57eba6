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
 * as the exact top-K ranks them.
 *
 * A row at or above the cut is kept whatever comes after it, so it is
 * scored in full with its batch, while the batch's rows are at hand, and
 * only the k best so far are held (a row's datum is made only when it
 * enters them).  A row below the cut is kept only while it is among the
 * best `kept` - (rows above the cut so far) below it: those wait, with
 * their datums, and are scored at the end (pg_waiting.c: a row that drops
 * out is never owed a place again), so memory is O(k + kept).
 *
 * With a second stage (approx.h), a row at or above the cut is first
 * scored by a prefix of the model; only when that score passes the cut
 * too is it finished (from the prefix's partial sum) with its batch.
 * Otherwise it is below the cut after all, and is offered to the waiting
 * rows like any other, with the partial sum it has.
 *
 * With a cut relative to the bar (approx.h), "the cut" is that one for
 * each batch, from the k best rows scored before it: it rises as the
 * answer does.  Once the bar is at or above the tail's floor, the answer
 * lies where the tuning's statement is about, and the rows still waiting
 * (kept only to fill a small input's answer) are let go: the bar only
 * rises, so they are let go as soon as it gets there, and no row waits
 * after that (on a large input, from the first batch or so).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/array.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "hbird.h"

/* a row scored in full */
typedef struct Scored
{
	double		score;
	int64		ordinal;
	Datum		item;			/* (Datum) 0 until it is among the k best */
	double		margin;			/* the full margin behind score */
} Scored;

struct HbApproxTopk
{
	HbCacheEntry *entry;
	const HbApprox *approx;
	int			k;
	int			keep;			/* always keep this many */
	double		cut;			/* and every row at or above this */
	HbBarCut	bar;			/* the cut relative to the bar, if tuned */
	double		cut_now;		/* the cut for the batch at hand */
	int64		refined;		/* rows scored by the second stage */
	int64		gated;			/* rows let go by the gate (approx.h) */
	int64		flushed;		/* waiting rows scored before the end, */
	int64		flushed_refined;	/* of them from the second stage */
	HbWaiting	wait;			/* the rows below the cut that wait: data,
								 * their features bound in full (or NULL:
								 * bound again from item) */
	Scored	   *best;			/* min-heap: the k best scored, worst first */
	int			n_best;
	int			best_cap;
	Scored	   *rule;			/* the same of the rows the rule finishes (no
								 * items; not those scored early because the
								 * waiting rows outgrew work_mem): the bar */
	int			n_rule;
	int			rule_cap;
	MemoryContext cxt;
	int64		ordinal;
	/* per batch (buf_rows) */
	double	   *raw;
	double	   *cheap;
	double	   *fx;				/* the rows scored in full, bound in full */
	double	   *fraw;
	double	   *fscore;
	int		   *fat;			/* their places in the batch */
	int		   *gate_at;		/* per row past the gate: its place in the batch */
	Datum	   *fitem;
	int			buf_rows;
	HbLazy	   *lazy;			/* rows bound lazily: kept rows are bound
								 * again in full from their datums */
};

/* a ranks below b: lower score, or read later (the exact top-K's order) */
static inline bool
scored_worse(const Scored *a, const Scored *b)
{
	return hb_ranks_below(a->score, a->ordinal, b->score, b->ordinal);
}

#define HB_HEAP_PREFIX scored
#define HB_HEAP_ELEMENT_TYPE Scored
#define HB_HEAP_WORSE(a, b) scored_worse(a, b)
#include "heap_template.h"

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
	/*
	 * The cut was measured for k up to the tuned one.  Above it, it still
	 * applies: without it a larger k would keep fewer rows than the tuned k
	 * (ratio * k best by cheap score, where the cut keeps a share of the
	 * input) and could miss rows the tuned k finds
	 */
	s->cut = t->cheap_cut;
	s->bar = t->bar;
	/*
	 * No context of its own: a hash aggregate holds one state per group,
	 * and it sums the memory of every child context each time it checks
	 * its limit.  What is allocated here is freed piece by piece.
	 */
	s->cxt = parent;
	hb_waiting_init(&s->wait, s->keep, s->cxt);
	s->best_cap = Min(k, 64);
	s->best = MemoryContextAlloc(s->cxt, sizeof(Scored) * s->best_cap);
	s->rule_cap = s->best_cap;
	s->rule = MemoryContextAlloc(s->cxt, sizeof(Scored) * s->rule_cap);
	s->lazy = hb_lazy_for(e, s->approx, columns, s->cxt);
	return s;
}

/* How the rows fed to s must be bound (hb_scan_batches, HbCallSlot). */
HbLazy *
hb_approx_topk_lazy(HbApproxTopk *s)
{
	return s->lazy;
}

static void
grow_batch_buffers(HbApproxTopk *s, int n)
{
	int			nf = s->entry->n_features;

	if (n <= s->buf_rows)
		return;
	if (s->raw)
	{
		pfree(s->raw);
		pfree(s->cheap);
		pfree(s->fx);
		pfree(s->fraw);
		pfree(s->fscore);
		pfree(s->fat);
		pfree(s->fitem);
		pfree(s->gate_at);
	}
	s->raw = MemoryContextAllocHuge(s->cxt, sizeof(double) * n);
	s->cheap = MemoryContextAllocHuge(s->cxt, sizeof(double) * n);
	s->fx = MemoryContextAllocHuge(s->cxt, sizeof(double) * n * nf);
	s->fraw = MemoryContextAllocHuge(s->cxt, sizeof(double) * n);
	s->fscore = MemoryContextAllocHuge(s->cxt, sizeof(double) * n);
	s->fat = MemoryContextAllocHuge(s->cxt, sizeof(int) * n);
	s->gate_at = MemoryContextAllocHuge(s->cxt, sizeof(int) * n);
	s->fitem = MemoryContextAllocHuge(s->cxt, sizeof(Datum) * n);
	s->buf_rows = n;
}

/* Batch row i as a datum of its own (in the current memory context). */
static Datum
row_item(const Datum *items, HbQueryRows *rows, int i)
{
	return rows ? hb_rows_item(rows, i) : datumCopy(items[i], false, -1);
}

/* whether c ranks among the k best of the min-heap h of n entries */
static inline bool
scored_admits(const Scored *h, int n, int k, const Scored *c)
{
	return n < k || scored_worse(&h[0], c);
}

/*
 * c, which scored_admits, into the min-heap of the k best (*h, *n of *cap
 * entries); *out gets the entry it replaced, or one whose item is 0.
 */
static void
scored_take(Scored **h, int *n, int *cap, int k, const Scored *c, Scored *out)
{
	out->item = (Datum) 0;
	if (*n < k)
	{
		if (*n == *cap)
		{
			*cap = Min(*cap * 2, k);
			*h = repalloc_huge(*h, sizeof(Scored) * *cap);
		}
		(*h)[*n] = *c;
		scored_sift_up(*h, (*n)++);
		return;
	}
	*out = (*h)[0];
	(*h)[0] = *c;
	scored_sift_down(*h, *n, 0);
}

/*
 * A row scored in full: among the k best so far (its datum kept, a copy
 * of item), or let go.
 */
static void
offer_scored(HbApproxTopk *s, double score, double margin, int64 ordinal,
			 Datum item)
{
	Scored		c = {score, ordinal, (Datum) 0, margin};
	Scored		out;
	MemoryContext old;

	if (!scored_admits(s->best, s->n_best, s->k, &c))
		return;
	old = MemoryContextSwitchTo(s->cxt);
	c.item = datumCopy(item, false, -1);
	MemoryContextSwitchTo(old);
	scored_take(&s->best, &s->n_best, &s->best_cap, s->k, &c, &out);
	if (out.item != (Datum) 0)
		pfree(DatumGetPointer(out.item));
}

/*
 * A row the rule finished (at or above the cut, with its batch): into the
 * k best of those, which make the bar (current_bar).
 */
static void
offer_rule(HbApproxTopk *s, double score, double margin, int64 ordinal)
{
	Scored		c = {score, ordinal, (Datum) 0, margin};
	Scored		out;

	if (scored_admits(s->rule, s->n_rule, s->k, &c))
		scored_take(&s->rule, &s->n_rule, &s->rule_cap, s->k, &c, &out);
}

/*
 * The least full margin a row of the answer can have, from the k best the
 * rule finished so far: the least margin that scores as the k-th best
 * does (a link may give lower margins the same score); -Infinity before k
 * rows.  The rows scored early (flush_waiting) do not raise it: the cut
 * relative to the bar and the letting go of the waiting rows follow the
 * rule's rows, as without them, so the rows scored are a superset of the
 * rule's.
 */
static double
current_bar(const HbApproxTopk *s)
{
	if (s->n_rule < s->k)
		return -INFINITY;
	return hb_link_tie_floor(s->entry->plan, s->rule[0].margin);
}

/*
 * A row joins the waiting rows: x its features bound in full (copied), or
 * NULL to bind it again from its datum at the end; the datum is batch row
 * i's, or item when that is not (Datum) 0 (copied).
 */
static void
add_waiting(HbApproxTopk *s, double cheap, double raw, bool refined,
			int64 ordinal, const double *x, const Datum *items,
			HbQueryRows *rows, int i, Datum item)
{
	int			nf = s->entry->n_features;
	HbWaitRow	r = {cheap, raw, refined, ordinal, NULL, (Datum) 0};
	MemoryContext old;

	old = MemoryContextSwitchTo(s->cxt);
	r.bytes = sizeof(HbWaitRow);
	if (x != NULL)
	{
		r.data = palloc(sizeof(double) * nf);
		memcpy(r.data, x, sizeof(double) * nf);
		r.bytes += sizeof(double) * nf;
	}
	r.item = item != (Datum) 0 ? datumCopy(item, false, -1) : row_item(items, rows, i);
	r.bytes += VARSIZE_ANY(DatumGetPointer(r.item));
	MemoryContextSwitchTo(old);
	hb_waiting_add(&s->wait, &r);
}

/*
 * The n waiting rows w scored in full: their margins into raw and scores
 * into sc; returns how many of them the second stage had scored.
 */
static int64
score_waiting(HbApproxTopk *s, const HbWaitRow *w, int n, double *raw, double *sc)
{
	const HbPlan *p = s->entry->plan;
	int			nf = s->entry->n_features;
	double	   *x = palloc_extended(sizeof(double) * Max(n, 1) * nf, MCXT_ALLOC_HUGE);
	bool	   *refined = palloc_extended(sizeof(bool) * Max(n, 1), MCXT_ALLOC_HUGE);
	int64		n_refined = 0;

	for (int i = 0; i < n; i++)
	{
		if (w[i].data)
			memcpy(x + (size_t) i * nf, w[i].data, sizeof(double) * nf);
		else
			hb_lazy_fill(s->lazy, w[i].item, x + (size_t) i * nf);
		raw[i] = w[i].raw;
		refined[i] = w[i].refined;
		n_refined += refined[i];
	}
	hb_approx_finish_rows(p, s->approx, x, n, raw, refined);
	hb_link_predict(p, raw, n, sc);
	pfree(refined);
	pfree(x);
	return n_refined;
}

/*
 * Copies of the waiting rows not scored yet (their data stays theirs);
 * returns how many.  The heap is left as it is.
 */
static int
unscored_rows(const HbWaiting *wait, HbWaitRow **out)
{
	HbWaitRow  *w = palloc_extended(sizeof(HbWaitRow) * Max(wait->n, 1), MCXT_ALLOC_HUGE);
	int			n = 0;

	for (int i = 0; i < wait->n; i++)
		if (!wait->rows[i].scored)
			w[n++] = wait->rows[i];
	*out = w;
	return n;
}

/*
 * The waiting rows outgrew work_mem: they are scored now and offered to
 * the k best like the rows above the cut, and keep their places, data let
 * go (hb_waiting_scored), so that the rows that wait from then on are the
 * ones the rule names; only where the places alone outgrow half of
 * work_mem are they let go too, and more rows wait (a superset).  The
 * answer is the exact top k of the rows scored, a superset of the rule's,
 * at least as good; the bar may rise sooner, from real scores, which the
 * cut relative to the bar allows (docs/willump.md).
 */
static void
flush_waiting(HbApproxTopk *s)
{
	HbWaitRow  *w;
	int			n = unscored_rows(&s->wait, &w);
	double	   *raw = palloc_extended(sizeof(double) * Max(n, 1), MCXT_ALLOC_HUGE);
	double	   *sc = palloc_extended(sizeof(double) * Max(n, 1), MCXT_ALLOC_HUGE);

	s->flushed_refined += score_waiting(s, w, n, raw, sc);
	for (int i = 0; i < n; i++)
		offer_scored(s, sc[i], raw[i], w[i].ordinal, w[i].item);
	s->flushed += n;
	hb_waiting_scored(&s->wait);
	pfree(w);
	pfree(raw);
	pfree(sc);
}

/*
 * The second stage over the batch's nfull rows at or above the cut (fx,
 * fraw, fat, fitem): the rows that pass it too stay, in order, and their
 * count is returned; the others are offered to the waiting rows with the
 * partial sums they have.
 */
static int
refine_batch(HbApproxTopk *s, int nfull)
{
	const HbPlan *p = s->entry->plan;
	int			nf = s->entry->n_features;
	int			m = 0;

	hb_approx_refine(p, s->approx, s->fx, nfull, s->fraw, s->fscore);
	s->refined += nfull;
	for (int j = 0; j < nfull; j++)
	{
		int			i = s->fat[j];

		if (s->fscore[j] >= s->cut_now)
		{
			if (m != j)
			{
				memcpy(s->fx + (size_t) m * nf, s->fx + (size_t) j * nf, sizeof(double) * nf);
				s->fraw[m] = s->fraw[j];
				s->fat[m] = i;
				s->fitem[m] = s->fitem[j];
			}
			m++;
		}
		else if (hb_waiting_may(&s->wait, s->fscore[j], s->ordinal + i))
			add_waiting(s, s->fscore[j], s->fraw[j], true, s->ordinal + i,
						s->lazy == NULL ? s->fx + (size_t) j * nf : NULL, NULL, NULL,
						0, s->fitem[j]);
	}
	return m;
}

void
hb_approx_topk_batch(HbApproxTopk *s, const double *x, const Datum *items,
					 HbQueryRows *rows, int n)
{
	const HbPlan *p = s->entry->plan;
	int			nf = s->entry->n_features;
	int			nfull = 0;
	MemoryContext scratch = NULL;
	double		bar = current_bar(s);
	const double *cx = x;		/* the rows through the cheap model */
	int			nc = n;
	const int  *at = NULL;		/* their places in the batch, if not 0.. */

	grow_batch_buffers(s, n);
	s->cut_now = hb_bar_cut(&s->bar, s->cut, bar);

	/*
	 * Once the bar covers the tail the statement is about it covers it at
	 * the end too (the bar only rises), where the waiting rows would be
	 * let go (hb_approx_topk_end): from then on none waits
	 */
	if (!s->wait.closed && hb_bar_cut_covers(&s->bar, bar))
		hb_waiting_close(&s->wait);
	/* a row's screening score is at most its gate score (fscore is free) */
	if (s->approx->gate != NULL)
		hb_approx_gate(s->approx, x, n, nf, s->fscore);
	if (s->wait.closed && s->approx->gate != NULL)
	{
		/*
		 * No row below the cut can be used any more: the rows below it by
		 * their gate scores are let go before the cheap model, the others
		 * gathered (fx is free until the rows above the cut are bound in
		 * full, below)
		 */
		nc = hb_approx_gate_pass(s->fscore, s->cut_now, x, n, nf, s->fx, s->gate_at);
		s->gated += n - nc;
		cx = s->fx;
		at = s->gate_at;
	}
	hb_approx_margins(p, s->approx, cx, nc, s->raw, s->cheap);
	for (int j = 0; j < nc; j++)
	{
		int			i = at ? at[j] : j;	/* its place in the batch */
		double		v = s->cheap[j];

		if (s->approx->gate != NULL && s->fscore[i] < v)
			v = s->fscore[i];	/* the screening score */
		if (v >= s->cut_now)
		{
			s->fraw[nfull] = s->raw[j];
			s->fat[nfull++] = i;
			continue;
		}
		/* (no row is let go by the gate while rows may wait: i is j) */
		if (hb_waiting_may(&s->wait, v, s->ordinal + i))
			add_waiting(s, v, s->raw[j], false, s->ordinal + i,
						s->lazy == NULL ? x + (size_t) i * nf : NULL, items, rows, i,
						(Datum) 0);
	}

	if (nfull > 0)
	{
		/*
		 * The rows above the cut, in full: bound again from their datums
		 * when bound lazily (made in a context of this batch's own; only
		 * the k best keep a copy)
		 */
		MemoryContext old = CurrentMemoryContext;

		if (rows != NULL || s->lazy != NULL)
		{
			scratch = AllocSetContextCreate(CurrentMemoryContext, "hbird approximate top-K batch",
											ALLOCSET_DEFAULT_SIZES);
			MemoryContextSwitchTo(scratch);
		}
		for (int j = 0; j < nfull; j++)
		{
			int			i = s->fat[j];

			s->fitem[j] = rows != NULL ? hb_rows_item(rows, i) : items[i];
			if (s->lazy != NULL)
				hb_lazy_fill(s->lazy, s->fitem[j], s->fx + (size_t) j * nf);
			else
				memcpy(s->fx + (size_t) j * nf, x + (size_t) i * nf, sizeof(double) * nf);
		}
		MemoryContextSwitchTo(old);
		if (s->approx->refine_trees > 0)
			nfull = refine_batch(s, nfull);
		hb_waiting_passed(&s->wait, nfull);
		if (s->approx->refine_trees > 0)
			hb_approx_finish_refined(p, s->approx, s->fx, nfull, s->fraw);
		else
			hb_approx_finish(p, s->approx, s->fx, nfull, s->fraw);
		hb_link_predict(p, s->fraw, nfull, s->fscore);
		for (int j = 0; j < nfull; j++)
		{
			offer_scored(s, s->fscore[j], s->fraw[j], s->ordinal + s->fat[j], s->fitem[j]);
			offer_rule(s, s->fscore[j], s->fraw[j], s->ordinal + s->fat[j]);
		}
		if (scratch)
			MemoryContextDelete(scratch);
	}
	s->ordinal += n;
	if (hb_waiting_outgrown(&s->wait))
		flush_waiting(s);
}

static int
cmp_scored(const void *a, const void *b)
{
	const Scored *x = a,
			   *y = b;

	return scored_worse(x, y) ? 1 : scored_worse(y, x) ? -1 : 0;
}

/*
 * The answer so far: the rows scored in full, with the waiting rows scored
 * now, the k best, best first, with their scores; returns how many (at
 * most k).  The state is left as it was (an aggregate may be finalized and
 * then fed more rows in a window); its memory goes with the context it was
 * begun in.
 */
int
hb_approx_topk_end(HbApproxTopk *s, double **scores, Datum **items,
				   HbTopkStats *stats)
{
	const HbPlan *p = s->entry->plan;

	/*
	 * Rows wait only to fill a small input's answer: once the bar is at or
	 * above the floor of the tail the statement is about, the answer lies
	 * above it and the cut relative to the bar has kept what it needs
	 */
	HbWaitRow  *w;
	int			n = unscored_rows(&s->wait, &w);
	int			total;
	int			out;
	double	   *raw = palloc_extended(sizeof(double) * Max(n, 1), MCXT_ALLOC_HUGE);
	double	   *sc = palloc_extended(sizeof(double) * Max(n, 1), MCXT_ALLOC_HUGE);
	int64		n_refined;
	Scored	   *all;
	int			T = hb_plan_n_trees(p);

	if (hb_bar_cut_covers(&s->bar, current_bar(s)))
		n = 0;
	total = s->n_best + n;
	n_refined = score_waiting(s, w, n, raw, sc);
	all = palloc_extended(sizeof(Scored) * Max(total, 1), MCXT_ALLOC_HUGE);

	memcpy(all, s->best, sizeof(Scored) * s->n_best);
	for (int i = 0; i < n; i++)
	{
		all[s->n_best + i].score = sc[i];
		all[s->n_best + i].ordinal = w[i].ordinal;
		all[s->n_best + i].item = w[i].item;
		all[s->n_best + i].margin = raw[i];
	}
	qsort(all, total, sizeof(Scored), cmp_scored);
	out = Min(total, s->k);
	*scores = palloc(sizeof(double) * Max(out, 1));
	*items = palloc(sizeof(Datum) * Max(out, 1));
	for (int i = 0; i < out; i++)
	{
		(*scores)[i] = all[i].score;
		(*items)[i] = datumCopy(all[i].item, false, -1);
	}
	if (stats)
	{
		int			m = hb_approx_cheap_trees(s->approx);
		int			m2 = s->approx->refine_trees;
		int64		full = s->wait.above + s->flushed + n;

		stats->rows = s->ordinal;
		stats->rows_full = full;
		if (m2 > 0)
		{
			/* rows finished from the second stage, and from the cheap model */
			int64		from2 = s->wait.above + s->flushed_refined + n_refined;

			stats->pairs_scored = (s->ordinal - s->gated) * m + s->refined * (m2 - m) +
				from2 * (T - m2) + (full - from2) * (T - m);
		}
		else
			stats->pairs_scored = (s->ordinal - s->gated) * m + full * (T - m);
	}
	pfree(w);
	pfree(raw);
	pfree(sc);
	pfree(all);
	return out;
}
