/*
 * pg_topk.c
 *	  hb_topk and hb_topk_agg: the K best rows by score, fully scoring only
 *	  the rows that can still make the top K (see src/core/topk.c).
 *
 * Ties are broken by input order: of two rows with the same score, the one
 * read first ranks higher.  "Same score" is what hb_predict returns, not
 * the margin: near 0 or 1 a float32 sigmoid maps different margins to the
 * same probability, and ORDER BY hb_predict(...) sees those as equal too.  Memory is O(K + batch): the K best rows are
 * copied into a heap context, everything else is per batch.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "parser/parse_oper.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#include "hbird.h"
#include "pg_scaleout.h"
#include "topk.h"

PG_FUNCTION_INFO_V1(hb_topk);
PG_FUNCTION_INFO_V1(hb_topk_agg_sfunc);
PG_FUNCTION_INFO_V1(hb_topk_agg_final);
PG_FUNCTION_INFO_V1(hb_topk_stats);

/* The counters of this backend's last top-K, for hb_topk_stats(). */
static HbTopkStats last_stats;
static int64 last_pairs_total;

typedef struct TopEntry
{
	double		score;			/* what hb_predict returns: ranks first */
	double		margin;			/* prunes: the links are monotone */
	int64		ordinal;		/* input order, for ties */
	Datum		item;
} TopEntry;

/*
 * A min-heap of the K best by (score desc, ordinal asc): the root is the
 * entry the next better row replaces.
 */
typedef struct TopHeap
{
	int			k;
	int			n;
	int			cap;
	const HbPlan *plan;			/* for the scores */
	TopEntry   *e;
	MemoryContext cxt;			/* holds the items */
	int64		next_ordinal;	/* ordinal of the current batch's row 0 */
	Datum	   *batch_items;	/* current batch, to copy from */
	HbQueryRows *batch_rows;	/* or its rows, without items (hb_rows_item) */
	double		bar_root;		/* the root margin bar was found for */
	double		bar;			/* the least margin with the root's score */
	/*
	 * hb_topk only: once the held rows outgrow work_mem, a bounded sort
	 * takes every row instead (spill), which goes to disk as
	 * ORDER BY ... LIMIT k does; the heap's rows move into it
	 */
	Oid			spill_rowtype;	/* InvalidOid: never spill (hb_topk_agg) */
	Size		bytes;			/* held by the heap's entries and items */
	Tuplesortstate *spill;
	TupleTableSlot *spill_slot;
} TopHeap;

/*
 * a ranks below b: by score as ORDER BY score DESC ranks float8 (NaN
 * above every number, NaNs equal), ties by input order
 */
static inline bool
worse(const TopEntry *a, const TopEntry *b)
{
	int			c = float8_cmp_internal(a->score, b->score);

	return c < 0 || (c == 0 && a->ordinal > b->ordinal);
}

#define HB_HEAP_PREFIX top
#define HB_HEAP_ELEMENT_TYPE TopEntry
#define HB_HEAP_WORSE(a, b) worse(a, b)
#include "heap_template.h"

static void
heap_init(TopHeap *h, int k, const HbPlan *plan, MemoryContext parent)
{
	memset(h, 0, sizeof(*h));
	h->k = k;
	h->plan = plan;
	/*
	 * Small to start with, and no context of its own: a hash aggregate
	 * holds one heap per group, and it sums the memory of every child
	 * context whenever it checks its limit (quadratic in the groups).
	 * Items are freed one by one when they leave the heap.
	 */
	h->cxt = parent;
	h->cap = Min(k, 16);
	h->bar_root = NAN;
	h->e = MemoryContextAlloc(h->cxt, sizeof(TopEntry) * h->cap);
}

static double
heap_threshold(TopHeap *h)
{
	if (h->n < h->k)
		return -INFINITY;
	if (h->e[0].margin != h->bar_root)
	{
		h->bar_root = h->e[0].margin;
		/*
		 * The least margin whose score is the root's: a row whose margin
		 * stays below it scores below the root (the links are monotone),
		 * so it cannot make the K best.  The root's own margin would not
		 * do: the core completes the rows of a batch in any order, so the
		 * root can have been read after a row of a lower margin but the
		 * same score (a float32 probability near 0 or 1 is shared by many
		 * margins), which wins that tie.
		 */
		h->bar = hb_link_tie_floor(h->plan, h->e[0].margin);
	}
	return h->bar;
}

/* Batch row row's item, copied into the heap's context. */
static Datum
copy_item(TopHeap *h, size_t row)
{
	MemoryContext old = MemoryContextSwitchTo(h->cxt);
	Datum		item = h->batch_rows ? hb_rows_item(h->batch_rows, row) :
		datumCopy(h->batch_items[row], false, -1);

	MemoryContextSwitchTo(old);
	return item;
}

static inline Size
entry_bytes(const TopEntry *t)
{
	return sizeof(TopEntry) + VARSIZE_ANY(DatumGetPointer(t->item));
}

/* One entry into the bounded sort: (score, ordinal, row). */
static void
spill_put(TopHeap *h, const TopEntry *t)
{
	TupleTableSlot *slot = h->spill_slot;

	ExecClearTuple(slot);
	slot->tts_values[0] = Float8GetDatum(t->score);
	slot->tts_values[1] = Int64GetDatum(t->ordinal);
	slot->tts_values[2] = t->item;
	memset(slot->tts_isnull, 0, sizeof(bool) * 3);
	ExecStoreVirtualTuple(slot);
	tuplesort_puttupleslot(h->spill, slot);
}

/*
 * The held rows outgrew work_mem: a sort bounded by k, by score descending
 * as ORDER BY sorts float8 (NaN first) and input order, takes them and
 * every row from now on (no pruning: with a k this large it would prune
 * little).
 */
static void
start_spill(TopHeap *h)
{
	TupleDesc	desc;
	AttrNumber	cols[2] = {1, 2};
	Oid			ops[2];
	Oid			colls[2] = {InvalidOid, InvalidOid};
	bool		nulls_first[2] = {true, false};
	/* the heap's context: the batches' own is reset under the scan */
	MemoryContext old = MemoryContextSwitchTo(h->cxt);

	desc = CreateTemplateTupleDesc(3);
	TupleDescInitEntry(desc, 1, "score", FLOAT8OID, -1, 0);
	TupleDescInitEntry(desc, 2, "ordinal", INT8OID, -1, 0);
	TupleDescInitEntry(desc, 3, "item", h->spill_rowtype, -1, 0);
	get_sort_group_operators(FLOAT8OID, false, false, true, NULL, NULL, &ops[0], NULL);
	get_sort_group_operators(INT8OID, true, false, false, &ops[1], NULL, NULL, NULL);
	h->spill = tuplesort_begin_heap(desc, 2, cols, ops, colls, nulls_first,
									work_mem, NULL, TUPLESORT_NONE);
	tuplesort_set_bound(h->spill, h->k);
	h->spill_slot = MakeSingleTupleTableSlot(desc, &TTSOpsMinimalTuple);
	MemoryContextSwitchTo(old);
	for (int i = 0; i < h->n; i++)
	{
		spill_put(h, &h->e[i]);
		pfree(DatumGetPointer(h->e[i].item));
	}
	h->n = 0;
	h->bytes = 0;
}

/* HbTopkOffer: a complete row whose margin reached the threshold. */
static double
heap_offer(void *arg, size_t row, double margin)
{
	TopHeap    *h = (TopHeap *) arg;
	TopEntry	cand = {hb_link_score(h->plan, margin), margin,
		h->next_ordinal + (int64) row, (Datum) 0};

	if (h->spill)
	{
		cand.item = copy_item(h, row);
		spill_put(h, &cand);
		pfree(DatumGetPointer(cand.item));
		return -INFINITY;
	}
	if (h->n == h->k && !worse(&h->e[0], &cand))
		return heap_threshold(h);
	cand.item = copy_item(h, row);
	if (h->n < h->k)
	{
		if (h->n == h->cap)
		{
			h->cap = Min(h->k, h->cap * 2);
			h->e = repalloc_huge(h->e, sizeof(TopEntry) * h->cap);
		}
		h->e[h->n] = cand;
		top_sift_up(h->e, h->n++);
	}
	else
	{
		h->bytes -= entry_bytes(&h->e[0]);
		pfree(DatumGetPointer(h->e[0].item));
		h->e[0] = cand;
		top_sift_down(h->e, h->n, 0);
	}
	h->bytes += entry_bytes(&cand);
	if (OidIsValid(h->spill_rowtype) && h->bytes > (Size) work_mem * 1024)
	{
		start_spill(h);
		return -INFINITY;
	}
	return heap_threshold(h);
}

static int
cmp_best_first(const void *a, const void *b)
{
	const TopEntry *x = a,
			   *y = b;

	if (worse(x, y))
		return 1;
	if (worse(y, x))
		return -1;
	return 0;
}

/* Sort the heap best first (in place: it is no longer a heap after). */
static void
heap_sort(TopHeap *h)
{
	qsort(h->e, h->n, sizeof(TopEntry), cmp_best_first);
}

static int
k_arg(FunctionCallInfo fcinfo, int argno)
{
	int			k;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("k must not be null")));
	k = PG_GETARG_INT32(argno);
	if (k <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be positive, not %d", k)));
	return k;
}

static void
check_topk_model(const HbCacheEntry *e)
{
	if (!hb_topk_supported(e->plan))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" has %d outputs; top-K ranks models with one score per row",
						e->name, e->n_outputs)));
}

/*
 * Exact or approximate?  'exact' and 'approx' say so ('approx' needs a
 * tuning, hb_tune); 'auto' (or no mode) follows hbird.topk_mode, whose own
 * 'auto' approximates when the model's active version has a tuning.  The
 * tuning, if used, lands in *t.
 */
static bool
use_approx(const char *mode, const HbCacheEntry *e, int k, HbTuning *t)
{
	bool		want;

	if (mode == NULL || strcmp(mode, "auto") == 0)
		want = hb_topk_mode == HB_TOPK_APPROX ? true :
			hb_topk_mode == HB_TOPK_EXACT ? false :
			hb_tuning_load(e, "topk", k, CurrentMemoryContext, t);
	else if (strcmp(mode, "exact") == 0)
		want = false;
	else if (strcmp(mode, "approx") == 0)
		want = true;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("unknown top-K mode \"%s\"", mode),
				 errhint("Modes are 'exact', 'approx' and 'auto'.")));
	if (want && !t->found && !hb_tuning_load(e, "topk", k, CurrentMemoryContext, t))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("model \"%s\" version %d has no tuned approximate top-K configuration",
						e->name, e->version),
				 errhint("Tune one with hb_tune(%s, <sample query>, kind => 'topk', k => %d, target => 0.99), or rank with mode 'exact'.",
						 quote_literal_cstr(e->name), k)));
	return want;
}

/*
 * About how many bytes a row of rowtype takes as a datum: the columns'
 * average widths from the statistics where the type is a table's, else
 * their types' (as the planner estimates a relation's width).
 */
static double
rowtype_width(Oid rowtype)
{
	Oid			relid = get_typ_typrelid(rowtype);
	TupleDesc	desc = lookup_rowtype_tupdesc(rowtype, -1);
	double		width = MAXALIGN(SizeofHeapTupleHeader);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		int32		w = 0;

		if (att->attisdropped)
			continue;
		if (OidIsValid(relid))
			w = get_attavgwidth(relid, att->attnum);
		if (w <= 0)
			w = get_typavgwidth(att->atttypid, att->atttypmod);
		width += MAXALIGN(w);
	}
	ReleaseTupleDesc(desc);
	return width;
}

/*
 * The approximation holds its k best rows in memory (and the rows below
 * the cut that wait, which it scores early where they outgrow work_mem:
 * pg_approx.c).  Where k rows of the input's type would not fit work_mem,
 * hb_topk ranks exactly instead, which spills as ORDER BY ... LIMIT does:
 * the exact answer meets any tuned target, and with a k that large the
 * approximation saves little.
 */
static bool
approx_fits(int k, Oid rowtype)
{
	double		row = rowtype_width(rowtype) + 64.0;

	if ((double) k * row <= (double) work_mem * 1024.0)
		return true;
	ereport(DEBUG1,
			(errmsg_internal("hb_topk: %d rows of about %.0f bytes exceed work_mem; ranking exactly",
							 k, row)));
	return false;
}

/* The bounds of an entry's plan, built once per statement. */
static HbTopkBounds *
bounds_for(HbCacheEntry *e, MemoryContext mcxt)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	HbTopkBounds *b = hb_topk_bounds(e->plan);

	MemoryContextSwitchTo(old);
	if (b == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	return b;
}

static void
record_stats(const HbTopkStats *s, HbCacheEntry *e)
{
	last_stats = *s;
	last_pairs_total = s->rows * (int64) hb_plan_n_trees(e->plan);
	hb_stat_topk(e, s);
}

typedef struct TopkScan
{
	HbCacheEntry *entry;
	HbTopkBounds *bounds;
	TopHeap    *heap;
	double		threshold;
	HbTopkStats stats;
	bool		margins;		/* x holds the rows' margins (e->sparse) */
} TopkScan;

/*
 * A linear model over text binds rows to their margins through the sparse
 * scorer, as hb_predict does: ranking them from the dense feature vector
 * would sum in another order and could order near-ties differently from
 * ORDER BY hb_predict(...).  Every row is complete; offer those that reach
 * the threshold (a NaN one ranks above every number, as in the core).
 */
static void
offer_margins(const double *m, size_t n, double *threshold, TopHeap *h,
			  HbTopkStats *stats)
{
	for (size_t i = 0; i < n; i++)
		if (m[i] >= *threshold || (isnan(m[i]) && !isnan(*threshold)))
			*threshold = heap_offer(h, i, m[i]);
	stats->rows += n;
	stats->rows_full += n;
}

static void
topk_batch(void *arg, HbQueryRows *rows, const double *x, Datum *items,
		   uint64 n)
{
	TopkScan   *s = arg;
	instr_time	start;			/* hb_stat_models */

	s->heap->batch_rows = rows;
	INSTR_TIME_SET_CURRENT(start);
	if (s->margins)
		offer_margins(x, n, &s->threshold, s->heap, &s->stats);
	else if (!hb_topk_score(s->entry->plan, s->bounds, x, n, &s->threshold,
							heap_offer, s->heap, &s->stats))
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	hb_stat_batch(s->entry, (int64) n, &start, true);
	s->heap->next_ordinal += n;
}

static void
approx_batch(void *arg, HbQueryRows *rows, const double *x, Datum *items,
			 uint64 n)
{
	hb_approx_topk_batch((HbApproxTopk *) arg, x, NULL, rows, (int) n);
}

/* the columns of hb_topk(), in order (sql/hbird--*.sql) */
#define HB_TOPK_COLS 3

/* One row of hb_topk's answer. */
static void
emit_ranked(HbRowsOut *out, int rank, double score, Datum item)
{
	Datum		values[HB_TOPK_COLS] = {Int32GetDatum(rank), Float8GetDatum(score), item};
	bool		nulls[HB_TOPK_COLS] = {0};

	hb_rows_emit(out, values, nulls);
}

Datum
hb_topk(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HbCallState *st = hb_call_prepare(fcinfo, 0, false);
	HbCacheEntry *e = st->entry;
	int			k = k_arg(fcinfo, 1);
	Oid			rowtype = hb_rowtype_arg(fcinfo, 2);
	TopHeap		heap;
	TopkScan	scan = {0};
	char	   *query;
	HbTuning	tuning = {0};
	bool		approx;
	HbRowsOut	out;

	check_topk_model(e);
	approx = use_approx(PG_ARGISNULL(4) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(4)),
						e, k, &tuning) && approx_fits(k, rowtype);
	InitMaterializedSRF(fcinfo, 0);
	hb_rows_out_init(&out, rsinfo, HB_TOPK_COLS);
	/* a table of shards: each ranks its rows, this merges (pg_pushdown.c) */
	if (!approx && PG_ARGISNULL(3) && hb_topk_on_shards(fcinfo, e, k, rowtype))
	{
		memset(&scan.stats, 0, sizeof(scan.stats));
		record_stats(&scan.stats, e);
		return (Datum) 0;
	}
	query = hb_query_arg(fcinfo, 3, rowtype);
	if (approx)
	{
		HbApproxTopk *a = hb_approx_topk_begin(e, &tuning, k, true, CurrentMemoryContext);
		double	   *scores;
		Datum	   *items;
		int			n;

		hb_scan_batches(e, query, rowtype, Min(hb_batch_rows(e), HB_TOPK_BATCH_ROWS), false,
						hb_lazy_steps(hb_approx_topk_lazy(a)), HB_ITEMS_ON_DEMAND,
						approx_batch, a);
		n = hb_approx_topk_end(a, &scores, &items, &scan.stats);
		for (int i = 0; i < n; i++)
		{
			emit_ranked(&out, i + 1, scores[i], items[i]);
		}
		record_stats(&scan.stats, e);
		return (Datum) 0;
	}

	heap_init(&heap, k, e->plan, CurrentMemoryContext);
	heap.spill_rowtype = rowtype;
	scan.entry = e;
	scan.bounds = bounds_for(e, CurrentMemoryContext);
	scan.heap = &heap;
	scan.threshold = -INFINITY;
	scan.margins = hb_entry_sparse(e) != NULL;
	hb_scan_batches(e, query, rowtype, scan.margins ? HB_TOPK_BATCH_ROWS : Min(hb_batch_rows(e), HB_TOPK_BATCH_ROWS),
					scan.margins, NULL, HB_ITEMS_ON_DEMAND, topk_batch, &scan);

	if (heap.spill)
	{
		TupleTableSlot *slot = heap.spill_slot;
		int			rank = 0;

		/* (a sort whose k rows do not fit work_mem runs on disk unbounded) */
		tuplesort_performsort(heap.spill);
		while (rank < k && tuplesort_gettupleslot(heap.spill, true, false, slot, NULL))
		{
			slot_getallattrs(slot);
			emit_ranked(&out, ++rank, DatumGetFloat8(slot->tts_values[0]),
						slot->tts_values[2]);
		}
		tuplesort_end(heap.spill);
		ExecDropSingleTupleTableSlot(slot);
	}
	else
	{
		heap_sort(&heap);
		for (int i = 0; i < heap.n; i++)
		{
			emit_ranked(&out, i + 1, heap.e[i].score, heap.e[i].item);
		}
	}
	record_stats(&scan.stats, e);
	hb_topk_bounds_free(scan.bounds);
	return (Datum) 0;
}

/* ---- hb_topk_agg(name, k, row) -> rows best first ---- */

typedef struct TopAggState
{
	HbCacheEntry *entry;		/* pinned for the state's lifetime */
	HbTopkBounds *bounds;
	Oid			rowtype;
	TopHeap		heap;
	double		threshold;
	int			batch;			/* rows per batch */
	int			cap;			/* rows the buffers hold now */
	int			nbuf;
	double	   *x;
	Datum	   *items;			/* the buffered rows, copies freed per batch */
	HbTopkStats stats;
	HbApproxTopk *approx;		/* tuned approximation, or NULL: exact */
	bool		margins;		/* x holds margins (see offer_margins) */
	int			width;			/* doubles per buffered row */
} TopAggState;

static void
topagg_flush(TopAggState *s)
{
	instr_time	start;			/* hb_stat_models */

	if (s->nbuf == 0)
		return;
	s->heap.batch_items = s->items;
	INSTR_TIME_SET_CURRENT(start);
	if (s->approx)
		hb_approx_topk_batch(s->approx, s->x, s->items, NULL, s->nbuf);
	else if (s->margins)
		offer_margins(s->x, s->nbuf, &s->threshold, &s->heap, &s->stats);
	else if (!hb_topk_score(s->entry->plan, s->bounds, s->x, s->nbuf, &s->threshold,
							heap_offer, &s->heap, &s->stats))
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	hb_stat_batch(s->entry, s->nbuf, &start, true);
	s->heap.next_ordinal += s->nbuf;
	for (int i = 0; i < s->nbuf; i++)
		pfree(DatumGetPointer(s->items[i]));
	s->nbuf = 0;
}

/* Buffers grow with the group up to a full batch (see agg_reserve). */
static void
topagg_reserve(TopAggState *s, MemoryContext cxt)
{
	int			cap;

	if (s->nbuf < s->cap)
		return;
	cap = Min(s->batch, Max(16, s->cap * 2));
	if (s->x == NULL)
	{
		s->x = MemoryContextAllocHuge(cxt, sizeof(double) * cap * s->width);
		s->items = MemoryContextAlloc(cxt, sizeof(Datum) * cap);
	}
	else
	{
		s->x = repalloc_huge(s->x, sizeof(double) * cap * s->width);
		s->items = repalloc(s->items, sizeof(Datum) * cap);
	}
	s->cap = cap;
}

Datum
hb_topk_agg_sfunc(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	TopAggState *s;
	HbCallState *st;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "hb_topk_agg_sfunc called in non-aggregate context");

	st = hb_call_prepare(fcinfo, 1, false);
	s = PG_ARGISNULL(0) ? NULL : (TopAggState *) PG_GETARG_POINTER(0);
	if (s == NULL)
	{
		int			k = k_arg(fcinfo, 2);

		check_topk_model(st->entry);
		s = MemoryContextAllocZero(aggcxt, sizeof(TopAggState));
		s->entry = st->entry;
		hb_cache_pin_for(st->entry, aggcxt);
		s->rowtype = get_fn_expr_argtype(fcinfo->flinfo, 3);
		if (!OidIsValid(s->rowtype) || !type_is_rowtype(s->rowtype))
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("hb_topk_agg ranks rows: its third argument must be a row, not %s",
							format_type_be(s->rowtype))));
		{
			HbTuning	t = {0};
			MemoryContext old = MemoryContextSwitchTo(aggcxt);

			if (use_approx(NULL, st->entry, k, &t))
				s->approx = hb_approx_topk_begin(st->entry, &t, k, false, aggcxt);
			MemoryContextSwitchTo(old);
		}
		s->bounds = bounds_for(st->entry, aggcxt);
		s->margins = hb_entry_sparse(st->entry) != NULL && s->approx == NULL;
		s->width = s->margins ? 1 : st->entry->n_features;
		heap_init(&s->heap, k, st->entry->plan, aggcxt);
		s->threshold = -INFINITY;
		s->batch = Min(hb_batch_rows(st->entry), 1024);
	}
	else if (!hb_cache_same(s->entry, st->entry))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hb_topk_agg must rank with one model per group")));
	else if (k_arg(fcinfo, 2) != s->heap.k)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hb_topk_agg must rank with one k per group, not %d and %d",
						s->heap.k, PG_GETARG_INT32(2))));

	/* a NULL row has no score: it is not ranked */
	if (PG_ARGISNULL(3))
		PG_RETURN_POINTER(s);

	topagg_reserve(s, aggcxt);
	if (s->margins)
		hb_call_load_margins(fcinfo, st, 3, s->x + s->nbuf);
	else
	{
		st->cur->lazy = s->approx ? hb_approx_topk_lazy(s->approx) : NULL;
		hb_call_load_record(fcinfo, st, 3);
		memcpy(s->x + (size_t) s->nbuf * s->entry->n_features, st->x,
			   sizeof(double) * s->entry->n_features);
	}
	{
		MemoryContext old = MemoryContextSwitchTo(aggcxt);

		s->items[s->nbuf] = datumCopy(PG_GETARG_DATUM(3), false, -1);
		MemoryContextSwitchTo(old);
	}
	if (++s->nbuf == s->batch)
		topagg_flush(s);
	PG_RETURN_POINTER(s);
}

Datum
hb_topk_agg_final(PG_FUNCTION_ARGS)
{
	TopAggState *s;
	Datum	   *items;
	int16		typlen;
	bool		typbyval;
	char		typalign;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = (TopAggState *) PG_GETARG_POINTER(0);
	topagg_flush(s);
	get_typlenbyvalalign(s->rowtype, &typlen, &typbyval, &typalign);
	if (s->approx)
	{
		double	   *scores;
		int			n = hb_approx_topk_end(s->approx, &scores, &items, &s->stats);

		record_stats(&s->stats, s->entry);
		PG_RETURN_ARRAYTYPE_P(construct_array(items, n, s->rowtype,
											  typlen, typbyval, typalign));
	}
	{
		/*
		 * Sort a copy: as a window aggregate the state takes more rows after
		 * a finalization, and must still be a heap then.
		 */
		TopHeap		sorted = s->heap;

		sorted.e = palloc(sizeof(TopEntry) * Max(s->heap.n, 1));
		memcpy(sorted.e, s->heap.e, sizeof(TopEntry) * s->heap.n);
		heap_sort(&sorted);
		items = palloc(sizeof(Datum) * Max(s->heap.n, 1));
		for (int i = 0; i < sorted.n; i++)
			items[i] = sorted.e[i].item;
		pfree(sorted.e);
	}
	record_stats(&s->stats, s->entry);
	PG_RETURN_ARRAYTYPE_P(construct_array(items, s->heap.n, s->rowtype,
										  typlen, typbyval, typalign));
}

/* the columns of hb_topk_stats(), in order (sql/hbird--*.sql) */
#define HB_TOPK_STATS_COLS 4

/* Counters of this backend's last top-K: how much pruning saved. */
Datum
hb_topk_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[HB_TOPK_STATS_COLS];
	bool		nulls[HB_TOPK_STATS_COLS] = {0};
	int			col = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (desc->natts != HB_TOPK_STATS_COLS)
		elog(ERROR, "incorrect number of output columns of hb_topk_stats");
	values[col++] = Int64GetDatum(last_stats.rows);
	values[col++] = Int64GetDatum(last_stats.rows_full);
	values[col++] = Int64GetDatum(last_stats.pairs_scored);
	values[col++] = Int64GetDatum(last_pairs_total);
	Assert(col == HB_TOPK_STATS_COLS);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
