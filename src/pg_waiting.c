/*
 * pg_waiting.c
 *	  Approximate top-K's rows below the cut, waiting to learn whether they
 *	  are owed a place (hb_topk's rule, pg_approx.c; the batching scan's
 *	  approximate top-K, pg_scan_exec.c).
 *
 * The answer keeps `keep` rows by cheap score, and every row at or above
 * the cut.  A row below the cut is owed a place only while it is among
 * the best `keep` - (rows at or above the cut so far) of the rows below
 * it.  That number only shrinks, so a row that drops out is never owed a
 * place again: the rows waiting at the end of the input are exactly the
 * ones the rule names, and at most `keep` wait at any time.
 *
 * The rows are a min-heap on (cheap score, input order): the root is the
 * row the next better one replaces.  What a row carries (its features
 * bound in full, the values handed up for it, its datum) is the caller's,
 * allocated in cxt; a row that drops out frees it.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "hbird.h"

/* a is a worse candidate than b: lower cheap score, or read later */
static inline bool
wait_worse(const HbWaitRow *a, const HbWaitRow *b)
{
	return hb_ranks_below(a->cheap, a->ordinal, b->cheap, b->ordinal);
}

#define HB_HEAP_PREFIX wait
#define HB_HEAP_ELEMENT_TYPE HbWaitRow
#define HB_HEAP_WORSE(a, b) wait_worse(a, b)
#include "heap_template.h"

/* how many rows below the cut may wait: `keep` less the rows above it */
static inline int64
room(const HbWaiting *w)
{
	return Max(w->keep - w->above, 0);
}

/*
 * No rows wait, none passed the cut; the array is allocated in cxt as rows
 * come.  Starting over (a rescan), the caller frees what an earlier start
 * allocated, the array included, by resetting cxt first.
 */
void
hb_waiting_init(HbWaiting *w, int64 keep, MemoryContext cxt)
{
	w->rows = NULL;
	w->cap = 0;
	w->n = 0;
	w->keep = keep;
	w->above = 0;
	w->closed = false;
	w->bytes = 0;
	w->has_floor = false;
	w->cxt = cxt;
}

/* Whether a row below the cut, so ranked, would wait. */
bool
hb_waiting_may(const HbWaiting *w, double cheap, int64 ordinal)
{
	HbWaitRow	c = {.cheap = cheap,.ordinal = ordinal};

	if (w->closed)
		return false;
	if (w->has_floor && !wait_worse(&w->floor, &c))
		return false;
	if (w->n < room(w))
		return true;
	return w->n > 0 && wait_worse(&w->rows[0], &c);
}

static void
pop_root(HbWaiting *w)
{
	if (w->rows[0].data)
		pfree(w->rows[0].data);
	if (w->rows[0].item != (Datum) 0)
		pfree(DatumGetPointer(w->rows[0].item));
	w->bytes -= w->rows[0].bytes;
	w->rows[0] = w->rows[--w->n];
	wait_sift_down(w->rows, w->n, 0);
}

/* Drop the rows that no longer have a place. */
static void
drop_excess(HbWaiting *w)
{
	while (w->n > room(w))
		pop_root(w);
}

/*
 * Row r waits (hb_waiting_may said it would): the heap takes it, and the
 * worst row leaves when there is no room for both.
 */
void
hb_waiting_add(HbWaiting *w, const HbWaitRow *r)
{
	if (w->n == w->cap)
	{
		w->cap = Max(w->cap * 2, 64);
		w->rows = w->rows ? repalloc_huge(w->rows, sizeof(HbWaitRow) * w->cap) :
			MemoryContextAllocHuge(w->cxt, sizeof(HbWaitRow) * w->cap);
	}
	w->rows[w->n] = *r;
	w->bytes += r->bytes;
	wait_sift_up(w->rows, w->n++);
	drop_excess(w);
}

/*
 * No row will be owed a place: the rows waiting leave (their memory freed)
 * and no other may wait.  For a caller that knows the answer no longer
 * needs them (the cut relative to the bar covers it, approx.h): the bar
 * only rises, so it will cover it at the end too, where they would be let
 * go unscored; letting them go now saves keeping the best of the rest.
 */
void
hb_waiting_close(HbWaiting *w)
{
	while (w->n > 0)
		pop_root(w);
	w->closed = true;
}

/*
 * Whether the waiting rows outgrew work_mem: the caller then scores them
 * early and calls hb_waiting_scored.
 */
bool
hb_waiting_outgrown(const HbWaiting *w)
{
	return w->bytes > (Size) work_mem * 1024;
}

/*
 * The waiting rows were scored (and offered to the answer) by the caller,
 * early, because they outgrew work_mem: each keeps its place, its cheap
 * score and input order, so that the rows that wait from then on are
 * exactly those the rule names, and lets its data go.  Where those places
 * alone hold more than half of work_mem the worst of them go, and where every
 * place was taken the worst place becomes a floor: room rows so far are at
 * least as good as it, so the rule, which lets a row wait only when it is
 * among the best room rows so far (room only shrinks), lets none wait that
 * is not better; rows above the floor wait while there is room, a
 * superset of the rule's (with places free the rule lets any row wait, and
 * no floor is set).  A heap again afterwards.
 */
void
hb_waiting_scored(HbWaiting *w)
{
	Size		limit = (Size) work_mem * 1024 / 2;
	bool		full;

	for (int i = 0; i < w->n; i++)
	{
		HbWaitRow  *r = &w->rows[i];

		if (r->data)
			pfree(r->data);
		if (r->item != (Datum) 0)
			pfree(DatumGetPointer(r->item));
		r->data = NULL;
		r->item = (Datum) 0;
		r->scored = true;
		r->bytes = sizeof(HbWaitRow);
	}
	w->bytes = (Size) w->n * sizeof(HbWaitRow);
	for (int i = w->n / 2 - 1; i >= 0; i--)
		wait_sift_down(w->rows, w->n, i);
	full = w->n > 0 && w->n >= room(w);
	if (full && w->bytes > limit &&
		(!w->has_floor || wait_worse(&w->floor, &w->rows[0])))
	{
		w->floor = w->rows[0];
		w->has_floor = true;
	}
	while (w->n > 0 && w->bytes > limit)
		pop_root(w);
}

/* n more rows are at or above the cut: waiting rows may lose their place. */
void
hb_waiting_passed(HbWaiting *w, int64 n)
{
	w->above += n;
	drop_excess(w);
}

/* the rows still to score first, each part in input order */
static int
cmp_ordinal(const void *a, const void *b)
{
	const HbWaitRow *x = a,
			   *y = b;

	if (x->scored != y->scored)
		return x->scored ? 1 : -1;
	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/*
 * The rows to score now: those not scored early, first and in input order;
 * returns how many.  No longer a heap: nothing may be added until
 * hb_waiting_scored makes it one again (or at all, at the end).
 */
int
hb_waiting_in_order(HbWaiting *w)
{
	int			n = 0;

	qsort(w->rows, w->n, sizeof(HbWaitRow), cmp_ordinal);
	while (n < w->n && !w->rows[n].scored)
		n++;
	return n;
}
