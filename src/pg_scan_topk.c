/*
 * pg_scan_topk.c
 *	  The batching scan (pg_scan_exec.c) under ORDER BY <score> LIMIT k:
 *	  exact top-K pruning and the tuned approximate top-K.
 *
 * Top-K (a node feeding ORDER BY <score> LIMIT k, pg_scan_plan.c): rows
 * that can no longer reach the k best scores seen so far are not scored;
 * they are not handed up at all, or, when this node's expressions are
 * volatile (evaluating them is observable), go up with a score that sorts
 * below every real one (-Infinity, or +Infinity for ascending order), and
 * the sort above discards them.  That is the very answer of the
 * row-at-a-time plan, ties and their order included, because the bounded
 * sort (tuplesort's top-N heap) discards a row that does not beat the worst
 * of the k it holds without touching the heap, and such a row is worse than
 * that under either score: leaving it out changes nothing but the work.
 * "Worse" is in scores, which the sort compares, not in margins: a link can
 * give a lower margin the same score (the float32 sigmoid saturates, and
 * rounds neighbouring margins to one probability), and a later sort key
 * can then put that row first, so the bar is the least margin that scores
 * as the k-th best does (hb_link_tie_floor; for ascending order the
 * largest, hb_link_tie_ceil).
 * The sort only becomes a heap at its (2k+1)-th row (before, it would
 * quicksort everything it got, fake scores included, and a quicksort
 * orders ties otherwise than the heap), so none of the first 2k + 1 rows
 * is pruned: the sort turns into a heap where the row-at-a-time plan's
 * does;
 * and pruning is off when the k rows would not fit work_mem (an external
 * sort would see the fake scores).  The argument needs the bar a row is
 * measured against to come from rows before it in scan order; the core
 * completes rows of one call in any order (the likeliest first, chunk by
 * chunk), so within a call the bar stays the one of the rows before the
 * batch, and the k best take the batch's rows after it.
 *
 * Approximate top-K (descending, when hbird.topk_mode makes hb_topk
 * approximate: a tuning of kind 'topk' exists and the mode is auto, or the
 * mode is approx): the tuned cheap model scores the rows after the
 * (2k+1)-th;
 * those at or above its cut are scored by the full model with their batch
 * (a prefix only adds the remaining trees), and those below it wait under
 * hb_topk's rule (pg_waiting.c: while among the best `kept` less the
 * rows above the cut so far) and are scored
 * and handed up when the input ends (hb_scan_flush_waiting), or before
 * where they outgrow work_mem (hb_scan_flush_early); the others are left
 * out like pruned rows.  With a second stage (approx.h), a row at or above
 * the cut is finished only when its second score passes the cut too;
 * otherwise it waits like a row below it, ranked by that score, with its
 * partial sums.  (Where more than the call's score goes up for a row, the
 * best `kept` cheap scores so far are kept as they come instead, and every
 * row at or above the cut is finished; those are at most
 * HB_SCAN_APPROX_KEEP.)  With a cut relative to the bar
 * (approx.h), the cut of a batch is that one, from the k best margins
 * before it, and once the bar is at or above the tuning's tail floor the
 * rows still waiting are left out like pruned rows.
 * Every real score is the full model's, so the answer is the exact top k
 * of the rows kept, a superset of what hb_topk's approximate mode keeps;
 * docs/willump.md says what the tuning guarantees about them.  Where the
 * cheap model reads less than the row (some of the columns, or the steps
 * of a pipeline its features need: pg_lazy.c), rows are read for it alone
 * and their tuples kept for the batch, and the rows the full model scores
 * are read again in full (lazy_cols).
 */
#include "postgres.h"

#include <math.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/memutils.h"

#include "pg_scan_exec.h"

/*
 * How x ranks against y, both sign-adjusted margins (higher is better):
 * PostgreSQL orders NaN above every number, so a NaN is the best of a
 * descending order and the worst of an ascending one (nan_best false).
 */
static inline int
rank_cmp(double x, double y, bool nan_best)
{
	if (isnan(x) || isnan(y))
	{
		if (isnan(x) && isnan(y))
			return 0;
		return isnan(x) == nan_best ? 1 : -1;
	}
	return x < y ? -1 : x > y ? 1 : 0;
}

static int
best_cmp(Datum a, Datum b, void *arg)
{
	bool		descending = *(bool *) arg;

	/* a min-heap: the k-th best on top */
	return -rank_cmp(DatumGetFloat8(a), DatumGetFloat8(b), descending);
}

/*
 * Batch row i is pruned: not handed up, or, where the expressions above
 * are volatile, handed up with a score that sorts below every real one
 */
static inline void
hold_back(HbScoreState *st, ScoreCall *c, int i)
{
	c->values[i] = Float8GetDatum(st->descending ? -INFINITY : INFINITY);
	st->skip[i] = st->skip_ok;
	st->rows_pruned++;
}

/* A margin into the k best of heap h: the k-th best, and the bar it makes. */
static double
bar_offer(HbScoreState *st, binaryheap *h, double *kth_io, double *bar_io, double margin)
{
	double		v = st->descending ? margin : -margin;
	double		kth;

	if (h->bh_size < st->k)
		binaryheap_add(h, Float8GetDatum(v));
	else if (rank_cmp(v, DatumGetFloat8(binaryheap_first(h)), st->descending) > 0)
		binaryheap_replace_first(h, Float8GetDatum(v));
	kth = h->bh_size < st->k ? -INFINITY : DatumGetFloat8(binaryheap_first(h));
	if (kth != *kth_io)
	{
		/*
		 * The sort compares scores, not margins: a lower margin that scores
		 * as the k-th best does (a float32 sigmoid saturates at 1, and near
		 * 0.5 rounds neighbours together) ties with it, and a later sort
		 * key may put it first, so the bar is the lowest such margin
		 */
		const HbPlan *p = st->calls[st->topk_call].e->plan;

		*kth_io = kth;
		*bar_io = kth == -INFINITY ? -INFINITY :
			st->descending ? hb_link_tie_floor(p, kth) : -hb_link_tie_ceil(p, -kth);
	}
	return *bar_io;
}

/*
 * A row's exact margin is in: the k best so far, and what to beat.  Rows
 * scored early because the waiting rows outgrew work_mem raise the bar
 * that prunes (rows below the k best handed up cannot reach the sort's
 * answer) but not the rule's (rule_bar): the approximation's cut and its
 * letting go of waiting rows follow the rows the rule itself finishes, as
 * without the early scoring, so the rows scored are a superset of the
 * rule's.
 */
static double
topk_offer(void *arg, size_t row, double margin)
{
	HbScoreState *st = arg;

	(void) bar_offer(st, st->best, &st->kth, &st->threshold, margin);
	/* (exact top-K has no rule: its hot path keeps one heap) */
	if (st->approx != NULL && !st->flushing_early)
		(void) bar_offer(st, st->rule_best, &st->rule_kth, &st->rule_bar, margin);
	return st->threshold;
}

typedef struct TopkArg
{
	HbScoreState *st;
	double	   *margins;		/* per bound row: exact, or NaN if pruned */
	int			offset;
	double		bar;			/* the threshold of the rows before the batch */
} TopkArg;

/*
 * A row of the batch is complete: its margin is kept for the sort and the
 * k best take it, but the bar stays (see the top of the file).
 */
static double
topk_offer_row(void *arg, size_t row, double margin)
{
	TopkArg    *a = arg;

	a->margins[a->offset + row] = margin;
	(void) topk_offer(a->st, row, margin);
	return a->bar;
}

static int
cheap_cmp(Datum a, Datum b, void *arg)
{
	double		x = DatumGetFloat8(a);
	double		y = DatumGetFloat8(b);

	/* a min-heap: the keep-th best cheap score on top */
	return x < y ? 1 : x > y ? -1 : 0;
}

/* A (re)scan starts: no row waits. */
void
hb_scan_reset_waiting(HbScoreState *st)
{
	st->ordinal = 0;
	st->n_flushed = 0;
	st->n_to_flush = 0;
	st->flushing_early = false;
	if (st->wait_cxt == NULL)
		st->wait_cxt = AllocSetContextCreate(st->state_cxt, "hbird waiting rows",
											 ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(st->wait_cxt);
	hb_waiting_init(&st->waiting, st->approx_keep, st->wait_cxt);
}

/*
 * Approximate or exact, as hb_topk_agg decides it (hbird.topk_mode): auto
 * approximates when the model's active version has a tuning for top-K,
 * approx insists on one.  Only the highest scores are tuned for.  A pinned
 * call ranks exactly: the coordinator that shipped it may have asked for
 * exact rows, and this session's hbird.topk_mode is not the coordinator's
 * (an exact answer is a right answer to an approximate query too).
 */
static void
approx_start(HbScoreState *st, ScoreCall *c)
{
	MemoryContext old;
	double		keep;

	st->approx = NULL;
	if (!st->descending || hb_topk_mode == HB_TOPK_EXACT ||
		c->source == HB_SOURCE_ARGS)
		return;
	if (st->tuned_entry != c->e)
	{
		old = MemoryContextSwitchTo(st->state_cxt);
		(void) hb_tuning_load(c->e, "topk", (int) st->k, st->state_cxt, &st->tuning);
		MemoryContextSwitchTo(old);
		st->tuned_entry = c->e;
	}
	if (!st->tuning.found)
	{
		if (hb_topk_mode == HB_TOPK_APPROX)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("model \"%s\" version %d has no tuned approximate top-K configuration",
							c->e->name, c->e->version),
					 errhint("Tune one with hb_tune(%s, <sample query>, kind => 'topk', k => %lld, target => 0.99), or SET hbird.topk_mode = exact.",
							 quote_literal_cstr(c->e->name), (long long) st->k)));
		return;
	}
	st->approx = st->tuning.approx;
	if (c->source == HB_SOURCE_COLUMNS && !c->sparse)
	{
		/*
		 * The cheap model's columns only, or with featurizers all the
		 * inputs but only the steps its features need: a text column's
		 * featurization is then paid by the rows scored in full alone
		 */
		hb_scan_read_cheaply(st, c, st->approx, true);
	}
	/* the cut, for a k above the tuned one too (pg_approx.c says why) */
	st->cut = st->tuning.cheap_cut;

	/*
	 * The rows below the cut wait for their place to be settled (hb_topk's
	 * rule) when what goes up for a row is its values and this call's
	 * score alone; otherwise the running best `kept` are kept as they come
	 */
	st->wait_ok = st->skip_ok && st->n_calls == 1 && c->source == HB_SOURCE_COLUMNS;
	/*
	 * As many as hb_topk keeps: waiting rows are held within work_mem
	 * (hb_scan_flush_early).  The running best, a heap allocated whole,
	 * are capped.
	 */
	keep = Min(Max(ceil(st->tuning.ratio * (double) st->k), (double) st->k), (double) (INT_MAX / 2));
	st->approx_keep = st->wait_ok ? (int64) keep :
		(int64) Min(keep, (double) Max(HB_SCAN_APPROX_KEEP, st->k));
	hb_scan_reset_waiting(st);
	if (st->cheap_best)
		binaryheap_free(st->cheap_best);
	st->cheap_best = NULL;
	if (!st->wait_ok)
	{
		old = MemoryContextSwitchTo(st->state_cxt);
		st->cheap_best = binaryheap_allocate((int) st->approx_keep, cheap_cmp, NULL);
		MemoryContextSwitchTo(old);
	}
}

/* Whether pruning can be exact for this query (see the top of the file). */
void
hb_scan_topk_start(HbScoreState *st)
{
	ScoreCall  *c = &st->calls[st->topk_call];
	CustomScan *cs = (CustomScan *) st->css.ss.ps.plan;
	List	   *topk = lthird(cs->custom_private);
	double		row_bytes = (double) cs->scan.plan.plan_width + 64.0;

	st->topk_on = false;
	if (c->cascade == NULL)
		c->lazy_cols = false;	/* approx_start's to set (a cascade's stays) */
	if (st->bounds)
		hb_topk_bounds_free(st->bounds);
	st->bounds = NULL;
	if (c->cascade != NULL || c->sparse || hb_plan_n_trees(c->e->plan) == 0 ||
		!hb_topk_supported(c->e->plan))
		return;
	st->k = intVal(lsecond(topk));
	if (st->limit_count)
	{
		bool		cnull,
					onull;
		Datum		cnt = ExecEvalExprSwitchContext(st->limit_count, st->argcxt, &cnull);
		Datum		off = ExecEvalExprSwitchContext(st->limit_offset, st->argcxt, &onull);

		if (cnull || DatumGetInt64(cnt) < 0)
			return;
		st->k = DatumGetInt64(cnt) + (onull ? 0 : Max(DatumGetInt64(off), 0));
	}
	if (st->k <= 0 || st->k > INT_MAX / 2 ||
		2.0 * st->k * row_bytes > (double) work_mem * 1024.0)
		return;
	{
		MemoryContext old = MemoryContextSwitchTo(st->state_cxt);

		st->bounds = st->descending ? hb_topk_bounds(c->e->plan) :
			hb_topk_bounds_lowest(c->e->plan);
		if (st->best)
			binaryheap_free(st->best);
		st->best = binaryheap_allocate((int) st->k, best_cmp, &st->descending);
		if (st->rule_best)
			binaryheap_free(st->rule_best);
		st->rule_best = binaryheap_allocate((int) st->k, best_cmp, &st->descending);
		MemoryContextSwitchTo(old);
	}
	if (st->bounds == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	/*
	 * A model whose sums could overflow may give NaN margins, which this
	 * path takes for pruned rows: every row goes up for the sort to rank
	 */
	if (!hb_topk_bounds_prune(st->bounds))
		return;
	st->kth = st->threshold = -INFINITY;
	st->rule_kth = st->rule_bar = -INFINITY;
	st->topk_on = true;
	approx_start(st, c);
}

/* the approximate top-K's per-row buffers for n rows */
static void
grow_raw(HbScoreState *st, int n)
{
	if (st->raw_cap >= n)
		return;
	if (st->raw)
	{
		pfree(st->raw);
		pfree(st->kept_at);
		pfree(st->score2);
		pfree(st->refined);
		pfree(st->gate_at);
	}
	st->raw = MemoryContextAllocHuge(st->state_cxt, sizeof(double) * n);
	st->kept_at = MemoryContextAllocHuge(st->state_cxt, sizeof(int) * n);
	st->score2 = MemoryContextAllocHuge(st->state_cxt, sizeof(double) * n);
	st->refined = MemoryContextAllocHuge(st->state_cxt, sizeof(bool) * n);
	st->gate_at = MemoryContextAllocHuge(st->state_cxt, sizeof(int) * n);
	st->raw_cap = n;
}

/* A waiting row's blob: its features, then the values handed up for it. */
static inline double *
wait_x(const HbWaitRow *w)
{
	return (double *) w->data;
}

static inline Datum *
wait_values(const HbWaitRow *w, int nf)
{
	return (Datum *) ((char *) w->data + MAXALIGN(sizeof(double) * nf));
}

static inline bool *
wait_nulls(const HbScoreState *st, const HbWaitRow *w, int nf)
{
	return (bool *) ((char *) w->data + MAXALIGN(sizeof(double) * nf) +
					 MAXALIGN(sizeof(Datum) * st->n_kept));
}

/*
 * Batch row b, bound at x, is below the cut: it waits while it is among
 * the best `kept` less the rows above the cut so far (pg_waiting.c:
 * the number it must be among only shrinks, so a row that drops out is
 * never owed a place again), with copies of its features
 * bound in full and of the values handed up for it; the rows still
 * waiting at the end of the input are scored and handed up then
 * (hb_scan_flush_waiting).
 */
static void
offer_wait(HbScoreState *st, ScoreCall *c, int b, const double *x,
		   double cheap, double raw, bool refined, int64 ordinal)
{
	HbWaitRow	w = {cheap, raw, refined, ordinal, NULL, (Datum) 0};
	int			nf = c->e->n_features;
	Datum	   *rv = st->vals + (size_t) b * st->n_input;
	bool	   *rn = st->nulls + (size_t) b * st->n_input;
	Size		size;
	Datum	   *wv;
	bool	   *wn;
	char	   *data;

	if (!hb_waiting_may(&st->waiting, cheap, ordinal))
		return;
	if (st->defer_rows)
		hb_scan_row_values(st, b);
	size = MAXALIGN(sizeof(double) * nf) + MAXALIGN(sizeof(Datum) * st->n_kept) +
		MAXALIGN(sizeof(bool) * Max(st->n_kept, 1));
	for (int k = 0; k < st->n_kept; k++)
	{
		int			col = st->kept[k];

		if (!rn[col] && !st->typbyval[col])
			size += MAXALIGN(datumGetSize(rv[col], false, st->typlen[col]));
	}
	w.data = MemoryContextAlloc(st->wait_cxt, size);
	w.bytes = sizeof(HbWaitRow) + size;
	if (c->lazy_cols)
		hb_scan_read_row_full(c, b, wait_x(&w), x);
	else
		memcpy(wait_x(&w), x, sizeof(double) * nf);
	wv = wait_values(&w, nf);
	wn = wait_nulls(st, &w, nf);
	data = (char *) wn + MAXALIGN(sizeof(bool) * Max(st->n_kept, 1));
	for (int k = 0; k < st->n_kept; k++)
	{
		int			col = st->kept[k];

		wn[k] = rn[col];
		wv[k] = rn[col] ? (Datum) 0 : rv[col];
		if (!rn[col] && !st->typbyval[col])
		{
			Size		sz = datumGetSize(rv[col], false, st->typlen[col]);

			memcpy(data, DatumGetPointer(rv[col]), sz);
			wv[k] = PointerGetDatum(data);
			data += MAXALIGN(sz);
		}
	}
	hb_waiting_add(&st->waiting, &w);
	st->rows_waited++;
}

/*
 * The input is done: the next batch of the rows still waiting, in input
 * order, scored in full and handed up like the kept rows of a batch.
 * False when none is left (or none waits).
 */
bool
hb_scan_flush_waiting(HbScoreState *st)
{
	ScoreCall  *c;
	const HbPlan *p;
	int			nf;
	int			m;
	double		bar;

	if (!st->topk_on || st->approx == NULL || !st->wait_ok ||
		(st->n_flushed > 0 && st->n_flushed >= st->n_to_flush))
		return false;
	/*
	 * The rows wait only to fill a small input's answer: with the bar at
	 * or above the floor of the tail the tuning's statement is about, the
	 * cut relative to the bar has kept what the answer needs
	 */
	if (st->n_flushed == 0 && hb_bar_cut_covers(&st->tuning.bar, st->rule_bar))
		return false;
	c = &st->calls[st->topk_call];
	p = c->e->plan;
	nf = c->e->n_features;
	if (st->n_flushed == 0)
		st->n_to_flush = hb_waiting_in_order(&st->waiting);
	if (st->n_flushed >= st->n_to_flush)
		return false;			/* (every row waiting was scored early) */
	MemoryContextReset(st->batch_cxt);
	hb_tuples_reset(&c->tup);	/* the values are the waiting rows' own */
	m = Min(st->n_to_flush - st->n_flushed, st->cap);
	grow_raw(st, m);
	for (int b = 0; b < m; b++)
	{
		const HbWaitRow *w = &st->waiting.rows[st->n_flushed + b];
		Datum	   *wv = wait_values(w, nf);
		bool	   *wn = wait_nulls(st, w, nf);

		memcpy(c->x + (size_t) b * nf, wait_x(w), sizeof(double) * nf);
		for (int k = 0; k < st->n_kept; k++)
		{
			st->vals[(size_t) b * st->n_input + st->kept[k]] = wv[k];
			st->nulls[(size_t) b * st->n_input + st->kept[k]] = wn[k];
		}
		st->raw[b] = w->raw;
		st->refined[b] = w->refined;
		st->skip[b] = false;
	}
	hb_approx_finish_rows(p, st->approx, c->x, m, st->raw, st->refined);
	bar = st->threshold;
	for (int b = 0; b < m; b++)
	{
		c->isnull[b] = false;
		if (st->raw[b] < bar)
		{
			/* below the k best handed up: the sort would drop it (hb_scan_score_topk) */
			hold_back(st, c, b);
			continue;
		}
		(void) topk_offer(st, b, st->raw[b]);
		c->values[b] = Float8GetDatum(hb_link_score(p, st->raw[b]));
	}
	st->n_flushed += m;
	st->nrows = m;
	st->pos = 0;
	st->rows_scored += m;
	st->rows_pruned -= m;
	return true;
}

/*
 * Before the next batch of the input: where the waiting rows outgrew
 * work_mem, the next batch of them, scored and handed up as at the end
 * (hb_scan_flush_waiting); once all are, they keep their places without
 * their data (hb_waiting_scored, as in hb_topk: pg_approx.c), and false.
 */
bool
hb_scan_flush_early(HbScoreState *st)
{
	if (!st->flushing_early)
	{
		if (!st->topk_on || st->approx == NULL || !st->wait_ok ||
			!hb_waiting_outgrown(&st->waiting))
			return false;
		st->flushing_early = true;
	}
	if (hb_scan_flush_waiting(st))
		return true;
	/* all handed up (or let go: the bar covers the tail) */
	hb_waiting_scored(&st->waiting);
	st->n_flushed = 0;
	st->flushing_early = false;
	return false;
}

/*
 * Approximate top-K over n bound rows from row `from` of the call's
 * buffer: cheap margins, then the rows kept (at or above the cut, or among
 * the keep best cheap scores so far) are moved to the front of the buffer,
 * in order, and finished by the full model; m gets their margins and NaN
 * for the others.
 */
static void
score_approx(HbScoreState *st, ScoreCall *c, int from, int n, double *m)
{
	const HbPlan *p = c->e->plan;
	int			nf = c->e->n_features;
	double	   *x = c->x + (size_t) from * nf;
	double	   *cheap = c->out;
	int			nk = 0;
	int			nc = n;			/* rows through the cheap model */
	const int  *at = NULL;		/* their places in the batch, if not 0.. */
	/* the fixed cut, or the one relative to the bar of the rows before */
	double		cut = hb_bar_cut(&st->tuning.bar, st->cut, st->rule_bar);

	/*
	 * Rows below the cut wait only to fill a small input's answer: once the
	 * bar covers the tail the tuning's statement is about, it covers it at
	 * the end too (the bar only rises), where they would be let go
	 * (hb_scan_flush_waiting), so from then on none waits
	 */
	if (st->wait_ok && !st->waiting.closed &&
		hb_bar_cut_covers(&st->tuning.bar, st->rule_bar))
		hb_waiting_close(&st->waiting);
	grow_raw(st, n);
	/* a row's screening score is at most its gate score */
	if (st->approx->gate != NULL)
		hb_approx_gate(st->approx, x, n, nf, st->score2);
	if (st->wait_ok && st->waiting.closed && st->approx->gate != NULL)
	{
		/*
		 * No row below the cut can be used any more: the rows below it by
		 * their gate scores are let go before the cheap model, the others
		 * move to the front, in order, with their places in the batch in
		 * gate_at
		 */
		nc = hb_approx_gate_pass(st->score2, cut, x, n, nf, x, st->gate_at);
		st->rows_gated += n - nc;
		at = st->gate_at;
	}
	hb_approx_margins(p, st->approx, x, nc, st->raw, cheap);
	for (int j = 0; j < nc; j++)
	{
		int			i = at ? at[j] : j;	/* its place in the batch */
		double		v = cheap[j];
		bool		keep;

		if (st->approx->gate != NULL && st->score2[i] < v)
			v = st->score2[i];	/* the screening score */
		keep = v >= cut;

		if (st->wait_ok)
		{
			/* (no row is let go by the gate while rows may wait: i is j) */
			if (!keep && !st->waiting.closed)
				offer_wait(st, c, c->rows[from + i], x + (size_t) j * nf, v, st->raw[j],
						   false, st->ordinal + i);
		}
		else if (st->cheap_best->bh_size < st->approx_keep)
		{
			binaryheap_add(st->cheap_best, Float8GetDatum(v));
			keep = true;
		}
		else if (v > DatumGetFloat8(binaryheap_first(st->cheap_best)))
		{
			binaryheap_replace_first(st->cheap_best, Float8GetDatum(v));
			keep = true;
		}
		if (!keep)
			continue;
		/* kept rows move to the front, in order: they only move down */
		if (c->lazy_cols)
			hb_scan_read_row_full(c, c->rows[from + i], x + (size_t) nk * nf, x + (size_t) j * nf);
		else if (nk != j)
			memcpy(x + (size_t) nk * nf, x + (size_t) j * nf, sizeof(double) * nf);
		st->raw[nk] = st->raw[j];
		st->kept_at[nk++] = i;
	}
	if (st->wait_ok && st->approx->refine_trees > 0 && nk > 0)
	{
		/*
		 * The second stage: a row that fails it is below the cut after all,
		 * and may wait with the partial sum it has
		 */
		int			np = 0;

		hb_approx_refine(p, st->approx, x, nk, st->raw, st->score2);
		st->rows_refined += nk;
		for (int j = 0; j < nk; j++)
		{
			int			i = st->kept_at[j];

			if (st->score2[j] >= cut)
			{
				if (np != j)
					memcpy(x + (size_t) np * nf, x + (size_t) j * nf, sizeof(double) * nf);
				st->raw[np] = st->raw[j];
				st->kept_at[np++] = i;
			}
			else
				offer_wait(st, c, c->rows[from + i], x + (size_t) j * nf, st->score2[j],
						   st->raw[j], true, st->ordinal + i);
		}
		nk = np;
		if (nk > 0)
			hb_approx_finish_refined(p, st->approx, x, nk, st->raw);
	}
	else if (nk > 0)
		hb_approx_finish(p, st->approx, x, nk, st->raw);
	if (st->wait_ok)
	{
		/* an earlier waiting row may have lost its place to these */
		hb_waiting_passed(&st->waiting, nk);
		st->ordinal += n;
	}
	for (int j = 0; j < nk; j++)
		m[st->kept_at[j]] = st->raw[j];
}

/*
 * The top-K call over nb bound rows: the first 2k + 1 rows of the scan are
 * scored in full, later ones through the pruning scorer (or the tuned
 * approximation).
 */
void
hb_scan_score_topk(HbScoreState *st, ScoreCall *c, int nb)
{
	const HbPlan *p = c->e->plan;
	int			nf = c->e->n_features;
	int			full = 0;
	double	   *m = c->scratch;
	HbTopkStats ts = {0};
	TopkArg		a = {st, m, 0, 0};
	double		kept_bar = -INFINITY;

	while (full < nb && st->seen + c->rows[full] <= 2 * st->k)
		full++;
	if (full > 0)
	{
		for (int b = 0; c->lazy_cols && b < full; b++)
			hb_scan_read_row_full(c, c->rows[b], c->x + (size_t) b * nf, c->x + (size_t) b * nf);
		hb_plan_margins(p, c->x, full, m);
		for (int b = 0; b < full; b++)
			(void) topk_offer(st, b, m[b]);
	}
	for (int b = full; b < nb; b++)
		m[b] = NAN;
	if (nb > full && st->approx)
	{
		/*
		 * A kept row whose full score cannot reach the k best of the rows
		 * before it in the scan that are not still to be scored (those
		 * before the batch, and the batch's among the first 2k + 1) would be
		 * dropped by the sort without a look: it is pruned after all (not
		 * handed up); the others raise the bar (below).  No row before the
		 * (2k+1)-th is pruned (the top of the file says why)
		 */
		kept_bar = st->threshold;	/* with the batch's first 2k + 1 rows */
		score_approx(st, c, full, nb - full, m + full);
	}
	else if (nb > full)
	{
		double		bar = st->threshold;

		a.offset = full;
		a.bar = bar;
		if (!hb_topk_score(p, st->bounds, c->x + (size_t) full * nf, nb - full,
						   &bar, topk_offer_row, &a, &ts))
			ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	}
	for (int b = 0; b < nb; b++)
	{
		/* finished by the approximation (not yet offered) */
		bool		approx = st->approx != NULL && b >= full;

		if (isnan(m[b]))
		{
			hold_back(st, c, c->rows[b]);
			st->rows_scored--;
			continue;
		}
		if (approx && m[b] < kept_bar)
		{
			/* scored in full, and below the bar */
			hold_back(st, c, c->rows[b]);
			continue;
		}
		if (approx)
			(void) topk_offer(st, b, m[b]);
		c->values[c->rows[b]] = Float8GetDatum(hb_link_score(p, m[b]));
	}
}
