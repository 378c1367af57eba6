/*
 * pg_scan_exec.c
 *	  Running the batching scan (HbirdScore, see pg_scan.h): read a batch of
 *	  rows from the input plan, score every call over the batch at once,
 *	  and hand the rows up one by one with their scores.
 *
 * Every call scores exactly what its row-at-a-time function would return
 * for the same row: the same binding (by column name, the same type
 * checks and errors), the same plan entry points per kind (the sparse
 * scorer for linear models over text, cascades when hbird.cascade is on,
 * the class early exit), and every strategy adds each row's leaves in the
 * same order whatever the batch.  Models are resolved at the first row,
 * as the functions resolve them at their first call, so an empty input
 * raises nothing.
 *
 * Batches start at one row and double up to what hbird.batch_memory
 * allows for the models and the buffered rows, so that LIMIT 1, EXISTS or
 * a cursor's first FETCH do not wait for a full batch.
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
 * The sort only becomes a heap after 2k rows (before, it would quicksort
 * everything it got, fake scores included), so no row before the 2k-th is
 * pruned;
 * and pruning is off when the k rows would not fit work_mem (an external
 * sort would see the fake scores).  The argument needs the bar a row is
 * measured against to come from rows before it in scan order; the core
 * completes rows of one call in any order (the likeliest first, chunk by
 * chunk), so within a call the bar stays the one of the rows before the
 * batch, and the k best take the batch's rows after it.
 *
 * Approximate top-K (descending, when hbird.topk_mode makes hb_topk
 * approximate: a tuning of kind 'topk' exists and the mode is auto, or the
 * mode is approx): the tuned cheap model scores the rows after the 2k-th;
 * those at or above its cut are scored by the full model with their batch
 * (a prefix only adds the remaining trees), and those below it wait under
 * hb_topk's rule (pg_approx.c: while among the best `kept`, at most
 * HB_SCAN_APPROX_KEEP, less the rows above the cut so far) and are scored
 * and handed up when the input ends (flush_waiting); the others are left
 * out like pruned rows.  With a second stage (approx.h), a row at or above
 * the cut is finished only when its second score passes the cut too;
 * otherwise it waits like a row below it, ranked by that score, with its
 * partial sums.  (Where more than the call's score goes up for a row, the
 * best `kept` cheap scores so far are kept as they come instead, and every
 * row at or above the cut is finished.)
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

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "hbird.h"
#include "pg_scan.h"
#include "pg_scaleout.h"
#include "topk.h"

#define HB_SCAN_MAX_ROWS 65536
#define HB_SCAN_APPROX_KEEP 200000	/* rows kept whatever their cheap score */

typedef struct ScoreCall
{
	HbCallKind	kind;
	bool		is_array;
	HbRowSource source;
	Oid			rowtype;		/* COLUMNS: the type the row binds as */
	Oid			relid;			/* COLUMNS: the relation of the input */
	bool		agg;			/* feeds a scoring aggregate's argument */
	const char *fn;				/* the function, in messages */
	ExprState  *name_es;
	ExprState  *arg_es;			/* DATUM: the row or array */

	/* resolved at the first row of every (re)scan */
	bool		resolved;
	MemoryContext cxt;			/* what resolving allocated */
	char	   *name;
	HbCacheEntry *e;
	HbCascade  *cascade;		/* hbird.cascade's tuned cascade, or NULL */
	bool		sparse;			/* rows bind to margins (e->sparse) */
	int			width;			/* doubles per bound row */
	int			nout;			/* doubles per row of out */
	HbBinding	bind;
	bool		bound;			/* bind is valid for the rows' type */
	int		   *colmap;			/* COLUMNS: input column of each attribute
								 * of rowtype, or NULL when the same */
	HbColumnReader rd;			/* COLUMNS: those columns in the input's rows */

	/*
	 * COLUMNS, approximate top-K or a cascade: rows are read for the cheap
	 * model only (a model without featurizers: its columns; with
	 * featurizers: the steps its features need, pg_lazy.c), and their
	 * tuples kept for the batch, so that the rows scored in full are read
	 * again in full (read_cheaply)
	 */
	bool		lazy_cols;
	MemoryContext lazy_cxt;		/* what read_cheaply allocated, in cxt */
	HbColumnReader rd_cheap;
	HbBinding	bind_cheap;		/* bind, featurizing the cheap steps only */
	HbTupleStore tup;			/* the batch's tuples, per batch row (x_cap) */
	TupleDesc  *tup_desc;		/* the layout it came in (its slot's: with
								 * the defaults of columns added since) */
	Datum	   *rowvals;		/* ARGS: one row's values */
	bool	   *rownulls;

	/* ARGS (a pinned call, pg_pinned.c) */
	ExprState  *pin_es[4];		/* version, sha256, origin, columns */
	int			nvals;
	Oid		   *val_type;
	int		   *val_col;		/* input column of a value that is a plain
								 * column, else -1 */
	ExprState **val_es;			/* the other values' expressions */

	/* per batch, cap rows (the scoring buffers: x_cap) */
	int			x_cap;
	double	   *x;
	double	   *scratch;
	double	   *out;
	int32	   *cls;
	int		   *rows;			/* batch row of each bound row */
	Datum	   *values;			/* the scores, per batch row */
	bool	   *isnull;
} ScoreCall;

/*
 * Approximate top-K: a row below the cut that may still be owed a place
 * (one blob: its features bound in full, then the values handed up for
 * it, by-reference ones copied after them)
 */
typedef struct WaitRow
{
	double		cheap;
	double		raw;			/* what finishing continues */
	bool		refined;		/* raw is the second stage's (approx.h) */
	int64		ordinal;
	char	   *blob;
} WaitRow;

typedef struct HbScoreState
{
	CustomScanState css;
	int			n_input;
	int			n_phys;			/* of them, the input's own columns; the
								 * others are its rows' ctid or tableoid */
	AttrNumber *sys_attno;		/* per input column from n_phys on */
	int			n_calls;
	ScoreCall  *calls;

	TupleTableSlot *rowslot;	/* one input row, to evaluate arguments */
	ExprContext *argcxt;
	MemoryContext batch_cxt;	/* the rows' by-reference values, scores */
	MemoryContext state_cxt;	/* what lives as long as the node */
	int16	   *typlen;			/* per input column */
	bool	   *typbyval;
	bool	   *keep;			/* input columns the expressions read */
	int		   *kept;			/* the same, as a list */
	int			n_kept;
	int			last_col;		/* deform the input up to it */
	TupleDesc	in_desc;		/* the input's rows */
	bool		any_columns;	/* a call binds the input's columns */
	bool		need_resolve;	/* a (re)scan starts: models at its first row */
	MemoryContextCallback unpin_cb;

	Datum	   *vals;			/* cap x n_input */
	bool	   *nulls;
	ItemPointerData *tids;		/* cap: the rows' ctids, when read */
	int			cap;
	int			nrows;
	int			pos;
	bool		eof;
	int			next_rows;		/* rows to read for the next batch */
	int			max_rows;
	Size		max_bytes;

	/* top-K */
	int			topk_call;		/* -1: none */
	int64		k;
	bool		descending;
	bool		topk_on;		/* decided at the first batch */
	ExprState  *limit_count;
	ExprState  *limit_offset;
	HbTopkBounds *bounds;
	binaryheap *best;			/* the k best (sign * margin) so far */
	double		kth;			/* the k-th best of them, or -Infinity */
	double		threshold;		/* sign * margin a row must reach: the end
								 * of the run of margins that score as the
								 * k-th best does (hb_link_tie_floor, or
								 * _ceil for ascending order) */
	int64		seen;			/* rows handed up before this batch */
	bool		skip_ok;		/* pruned rows need not be handed up */
	bool	   *skip;			/* per batch row: pruned, not handed up */
	bool		defer_rows;		/* the rows' values are taken from the kept
								 * tuples of the top-K call, and only for the
								 * rows handed up */
	Datum	   *row_values;		/* in_desc->natts: one row deformed */
	bool	   *row_nulls;

	/* approximate top-K (tuned cheap model), or approx == NULL */
	HbTuning	tuning;
	HbCacheEntry *tuned_entry;	/* the entry the tuning was loaded for */
	const HbApprox *approx;
	int64		approx_keep;	/* rows kept whatever their cheap score */
	double		cut;			/* and every row at or above this */
	binaryheap *cheap_best;		/* the keep best cheap scores so far */
	double	   *raw;			/* per bound row: what finishing continues */
	int		   *kept_at;		/* per kept row: its place among the rows */
	double	   *score2;			/* per kept row: its second-stage score */
	bool	   *refined;		/* per waiting row flushed: raw is the second
								 * stage's */
	int			raw_cap;
	bool		wait_ok;		/* rows below the cut wait (hb_topk's rule),
								 * else the running best `kept` are kept */
	int64		above;			/* rows at or above the cut so far */
	int64		ordinal;		/* of the next row after the 2k-th */
	WaitRow    *wait;			/* min-heap: the worst waiting row first */
	int			n_wait;
	int			wait_cap;
	int			n_flushed;		/* at the end: waiting rows handed up */
	MemoryContext wait_cxt;

	/* EXPLAIN ANALYZE */
	int64		batches;
	int64		rows_in;
	int64		rows_scored;
	int64		rows_pruned;
	int64		rows_refined;	/* through the second stage (approx.h) */
	int64		rows_lazy;		/* read for a cheap model only (lazy_cols) */
} HbScoreState;

static void row_values_from_tuple(HbScoreState *st, int i);

/* ---- models ---- */

static Datum
eval_scan_const(HbScoreState *st, ExprState *es, bool *isnull)
{
	st->argcxt->ecxt_outertuple = NULL;
	return ExecEvalExprSwitchContext(es, st->argcxt, isnull);
}

/*
 * A pinned call's model: the active version, which must be the one the
 * coordinator pinned (pg_pinned.c raises the error naming both).
 */
static HbCacheEntry *
resolve_pinned(HbScoreState *st, ScoreCall *c)
{
	bool		isnull;
	Datum		d;
	int32		version;
	char	   *sha;
	char	   *origin;

	d = eval_scan_const(st, c->pin_es[0], &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pinned model version must not be null")));
	version = DatumGetInt32(d);
	d = eval_scan_const(st, c->pin_es[1], &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("pinned sha256 must not be null")));
	sha = TextDatumGetCString(d);
	d = eval_scan_const(st, c->pin_es[2], &isnull);
	origin = isnull ? "" : TextDatumGetCString(d);
	return hb_pinned_resolve(c->name, version, sha, origin);
}

/* A pinned call's values bind as a row of the names it carries. */
static void
bind_pinned(HbScoreState *st, ScoreCall *c)
{
	bool		isnull;
	Datum		d = eval_scan_const(st, c->pin_es[3], &isnull);
	TupleDesc	desc;

	Assert(!isnull);
	desc = hb_pinned_desc(DatumGetArrayTypeP(d), c->nvals, c->val_type);
	hb_bind_desc(&c->bind, c->e, desc, c->cxt, c->e->name);
	c->bound = true;
	c->rowvals = palloc(sizeof(Datum) * c->nvals);
	c->rownulls = palloc(sizeof(bool) * c->nvals);
}

/*
 * Read call c's rows for cheap model a only, as hb_lazy_for says (plain:
 * the cheap model's columns of a model without featurizers too; with
 * featurizers, the steps its features need), keeping their tuples so that
 * the rows the full model scores are read again in full (read_row_full);
 * in full when a reads every column or step, or a is NULL.
 */
static void
read_cheaply(HbScoreState *st, ScoreCall *c, const HbApprox *a, bool plain)
{
	HbLazy	   *l;

	c->lazy_cols = false;
	if (a == NULL)
		return;
	/* done again at every rescan: what the last time allocated goes */
	if (c->lazy_cxt == NULL)
		c->lazy_cxt = AllocSetContextCreate(c->cxt, "hbird batching scan lazy reading",
											ALLOCSET_SMALL_SIZES);
	MemoryContextReset(c->lazy_cxt);
	l = hb_lazy_for(c->e, a, plain, c->lazy_cxt);
	if (l == NULL)
		return;
	c->bind_cheap = c->bind;
	c->bind_cheap.steps = hb_lazy_steps(l);
	hb_reader_init(&c->rd_cheap, &c->bind_cheap, c->e, st->in_desc, c->colmap,
				   hb_lazy_steps(l), c->lazy_cxt);
	c->lazy_cols = c->rd_cheap.subset || c->bind.pipeline != NULL;
}

/*
 * The call's model for this scan: the name is evaluated (it may be a
 * parameter that changes between rescans) and looked up as the function
 * would look it up; a name unchanged since the last scan keeps its model.
 */
static void
resolve_call(HbScoreState *st, ScoreCall *c)
{
	bool		isnull;
	Datum		d;
	MemoryContext old;
	HbCacheEntry *e;
	char	   *name;

	d = eval_scan_const(st, c->name_es, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("model name must not be null")));
	name = TextDatumGetCString(d);
	if (c->resolved && strcmp(name, c->name) == 0)
		return;
	if (c->resolved)
	{
		hb_cache_unpin(c->e);
		c->resolved = false;
		c->e = NULL;
	}
	if (c->cxt == NULL)
		c->cxt = AllocSetContextCreate(st->state_cxt, "hbird batching scan call",
									   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(c->cxt);
	c->lazy_cxt = NULL;			/* gone with cxt */
	c->bound = false;
	c->colmap = NULL;
	c->cascade = NULL;
	old = MemoryContextSwitchTo(c->cxt);
	c->name = pstrdup(name);
	if (c->source == HB_SOURCE_ARGS)
		e = resolve_pinned(st, c);
	else
		e = hb_resolve_model(c->name);
	hb_cache_pin(e);
	c->e = e;
	c->resolved = true;
	/* the row-at-a-time functions' (or aggregates') checks, in their words */
	if (c->kind == HB_CALL_PROBA && e->n_classes < 2)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a %s model; hb_predict_proba needs a classifier",
						e->name, hb_task_name(e->task)),
				 errhint("Use hb_predict for its value.")));
	if (c->kind == HB_CALL_CLASS)
		hb_check_classifier(e, c->fn);
	if (c->kind == HB_CALL_PREDICT)
		hb_check_single_target(e, c->fn);
	if (c->kind == HB_CALL_TARGETS)
		hb_check_regression(e, c->fn);
	/* a pinned call is exact, as the coordinator that shipped it asked */
	if ((c->kind == HB_CALL_PREDICT || c->kind == HB_CALL_CLASS) && hb_cascade_on &&
		c->source != HB_SOURCE_ARGS)
		c->cascade = hb_cascade_for(e, c->cxt);
	c->sparse = e->sparse != NULL && !c->is_array &&
		(c->kind == HB_CALL_PROBA || c->kind == HB_CALL_MARGIN ||
		 c->kind == HB_CALL_TARGETS ||
		 (c->kind == HB_CALL_PREDICT && c->cascade == NULL));
	c->width = c->sparse ? e->n_outputs : e->n_features;
	c->nout = Max(e->n_outputs, Max(e->n_classes, 1));
	c->x_cap = 0;				/* buffers sized for this model */
	if (c->source == HB_SOURCE_COLUMNS)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc_copy(c->rowtype, -1);

		hb_bind_desc(&c->bind, e, desc, c->cxt, e->name);
		c->bound = true;
		if (get_rel_type_id(c->relid) != c->rowtype)
		{
			/* a partition bound as its parent: columns by name */
			c->colmap = palloc(sizeof(int) * desc->natts);
			for (int a = 0; a < desc->natts; a++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, a);

				c->colmap[a] = att->attisdropped ? -1 :
					get_attnum(c->relid, NameStr(att->attname)) - 1;
			}
		}
		/* the input's columns are the table's, in attribute order */
		hb_reader_init(&c->rd, &c->bind, e, st->in_desc, c->colmap, NULL, c->cxt);

		/*
		 * A cascade over a model with featurizers: rows are featurized for
		 * its cheap model, and those it cannot decide in full
		 * (complete_rows).  Without featurizers every column is read, as
		 * the row-at-a-time form does (docs/willump.md)
		 */
		read_cheaply(st, c, c->cascade != NULL && !c->sparse ? c->cascade->approx : NULL,
					 false);
	}
	if (c->source == HB_SOURCE_ARGS && !c->is_array)
		bind_pinned(st, c);
	MemoryContextSwitchTo(old);
}

/* At the end of the statement (or an error), the models are let go. */
static void
unpin_calls(void *arg)
{
	HbScoreState *st = arg;

	for (int j = 0; j < st->n_calls; j++)
		if (st->calls[j].resolved)
		{
			hb_cache_unpin(st->calls[j].e);
			st->calls[j].resolved = false;
		}
}

static void
grow_buffers(HbScoreState *st, int cap)
{
	MemoryContext old = MemoryContextSwitchTo(st->state_cxt);

	if (cap <= st->cap)
	{
		MemoryContextSwitchTo(old);
		return;
	}
	st->vals = st->vals ? repalloc_huge(st->vals, sizeof(Datum) * cap * st->n_input) :
		MemoryContextAllocHuge(st->state_cxt, sizeof(Datum) * cap * Max(st->n_input, 1));
	st->nulls = st->nulls ? repalloc_huge(st->nulls, sizeof(bool) * cap * st->n_input) :
		MemoryContextAllocHuge(st->state_cxt, sizeof(bool) * cap * Max(st->n_input, 1));
	/* columns nothing reads are never copied: NULL for good */
	memset(st->nulls, true, sizeof(bool) * cap * st->n_input);
	if (st->n_phys < st->n_input)
		st->tids = st->tids ? repalloc_huge(st->tids, sizeof(ItemPointerData) * cap) :
			MemoryContextAllocHuge(st->state_cxt, sizeof(ItemPointerData) * cap);
	for (int j = 0; j < st->n_calls; j++)
	{
		ScoreCall  *c = &st->calls[j];

		if (c->values)
		{
			pfree(c->values);
			pfree(c->isnull);
			pfree(c->rows);
		}
		c->values = palloc(sizeof(Datum) * cap);
		c->isnull = palloc(sizeof(bool) * cap);
		c->rows = palloc(sizeof(int) * cap);
	}
	if (st->skip)
		pfree(st->skip);
	st->skip = palloc0(sizeof(bool) * cap);
	st->cap = cap;
	MemoryContextSwitchTo(old);
}

/* A call's scoring buffers for the current capacity (once resolved). */
static void
grow_call_buffers(HbScoreState *st, ScoreCall *c)
{
	int			cap = st->cap;

	if (c->x_cap >= cap)
		return;
	if (c->x)
	{
		pfree(c->x);
		pfree(c->scratch);
		pfree(c->out);
		pfree(c->cls);
	}
	c->x = MemoryContextAllocHuge(st->state_cxt, sizeof(double) * cap * Max(c->width, 1));
	c->scratch = MemoryContextAllocHuge(st->state_cxt, sizeof(double) * cap * c->nout);
	c->out = MemoryContextAllocHuge(st->state_cxt, sizeof(double) * cap * c->nout);
	c->cls = MemoryContextAllocHuge(st->state_cxt, sizeof(int32) * cap);
	if (c->tup_desc)
		pfree(c->tup_desc);
	hb_tuples_init(&c->tup, cap, st->state_cxt);
	c->tup_desc = MemoryContextAllocHuge(st->state_cxt, sizeof(TupleDesc) * cap);
	/*
	 * A cheap model's columns are all a lazily read row gets: the others
	 * start missing, and later hold whatever rows read in full left there,
	 * which the cheap model never reads (nor the pipeline's cheap steps,
	 * which write their own features only)
	 */
	for (int64 i = 0; c->lazy_cols && c->rd_cheap.subset && i < (int64) cap * Max(c->width, 1); i++)
		c->x[i] = get_float8_nan();
	c->x_cap = cap;
}

/*
 * Whether the input's row is a tuple of its own (a scan's, not a projection
 * formed from values): only such rows are read lazily, since keeping a
 * projected row would mean forming a tuple of it first.
 */
static inline bool
row_has_tuple(TupleTableSlot *in)
{
	return (TTS_IS_BUFFERTUPLE(in) || TTS_IS_HEAPTUPLE(in)) &&
		((HeapTupleTableSlot *) in)->tuple != NULL;
}

/*
 * Keep the tuple of batch row b of a lazily read call (lazy_cols), or of
 * the top-K call for the values the expressions read (defer_rows); a row
 * without a tuple of its own (none in tup) is read in full at once instead.
 */
static void
keep_row_tuple(ScoreCall *c, int b, TupleTableSlot *in)
{
	HeapTuple	t = ((HeapTupleTableSlot *) in)->tuple;

	hb_tuples_put(&c->tup, b, t);
	c->tup_desc[b] = in->tts_tupleDescriptor;
}

/*
 * Batch row b of a lazily read call, read again in full into x; a row read
 * in full already (no tuple kept) is copied from where it was read, src.
 */
static void
read_row_full(ScoreCall *c, int b, double *x, const double *src)
{
	HeapTupleData t;

	if (!hb_tuples_get(&c->tup, b, &t))
	{
		if (x != src)
			memcpy(x, src, sizeof(double) * c->width);
		return;
	}
	hb_read_tuple(&c->rd, &c->bind, c->e, &t, x, false);
}

/*
 * HbCompleteRows for a cascade over lazily read rows: the rows (bound
 * indexes) its cheap model cannot decide, read again in full into xs.
 */
static void
complete_rows(void *arg, const size_t *rows, size_t n, double *xs)
{
	ScoreCall  *c = arg;

	for (size_t i = 0; i < n; i++)
		read_row_full(c, c->rows[rows[i]], xs + i * c->width,
					  c->x + rows[i] * c->width);
}

/* ---- top-K ---- */

static int
best_cmp(Datum a, Datum b, void *arg)
{
	double		x = DatumGetFloat8(a);
	double		y = DatumGetFloat8(b);

	/* a min-heap: the k-th best on top */
	return x < y ? 1 : x > y ? -1 : 0;
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

/* A row's exact margin is in: the k best so far, and what to beat. */
static double
topk_offer(void *arg, size_t row, double margin)
{
	HbScoreState *st = arg;
	double		v = st->descending ? margin : -margin;
	double		kth;

	if (st->best->bh_size < st->k)
		binaryheap_add(st->best, Float8GetDatum(v));
	else if (v > DatumGetFloat8(binaryheap_first(st->best)))
		binaryheap_replace_first(st->best, Float8GetDatum(v));
	kth = st->best->bh_size < st->k ? -INFINITY :
		DatumGetFloat8(binaryheap_first(st->best));
	if (kth != st->kth)
	{
		/*
		 * The sort compares scores, not margins: a lower margin that scores
		 * as the k-th best does (a float32 sigmoid saturates at 1, and near
		 * 0.5 rounds neighbours together) ties with it, and a later sort
		 * key may put it first, so the bar is the lowest such margin
		 */
		const HbPlan *p = st->calls[st->topk_call].e->plan;

		st->kth = kth;
		st->threshold = kth == -INFINITY ? -INFINITY :
			st->descending ? hb_link_tie_floor(p, kth) : -hb_link_tie_ceil(p, -kth);
	}
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
static void
reset_waiting(HbScoreState *st)
{
	st->above = 0;
	st->ordinal = 0;
	st->n_wait = 0;
	st->n_flushed = 0;
	if (st->wait_cxt == NULL)
		st->wait_cxt = AllocSetContextCreate(st->state_cxt, "hbird waiting rows",
											 ALLOCSET_DEFAULT_SIZES);
	MemoryContextReset(st->wait_cxt);
}

/*
 * Approximate or exact, as hb_topk_agg decides it (hbird.topk_mode): auto
 * approximates when the model's active version has a tuning for top-K,
 * approx insists on one.  Only the highest scores are tuned for.
 */
static void
approx_start(HbScoreState *st, ScoreCall *c)
{
	MemoryContext old;
	double		keep;

	st->approx = NULL;
	if (!st->descending || hb_topk_mode == HB_TOPK_EXACT)
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
		read_cheaply(st, c, st->approx, true);
	}
	keep = ceil(st->tuning.ratio * (double) st->k);
	st->approx_keep = (int64) Min(Max(keep, (double) st->k),
								  (double) Max(HB_SCAN_APPROX_KEEP, st->k));
	/* the cut was measured for k up to the tuned one; above it, keep only */
	st->cut = st->k <= st->tuning.k ? st->tuning.cheap_cut : INFINITY;

	/*
	 * The rows below the cut wait for their place to be settled (hb_topk's
	 * rule) when what goes up for a row is its values and this call's
	 * score alone; otherwise the running best `kept` are kept as they come
	 */
	st->wait_ok = st->skip_ok && st->n_calls == 1 && c->source == HB_SOURCE_COLUMNS;
	reset_waiting(st);
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
static void
topk_start(HbScoreState *st)
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
		st->best = binaryheap_allocate((int) st->k, best_cmp, NULL);
		MemoryContextSwitchTo(old);
	}
	if (st->bounds == NULL)
		ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory")));
	st->kth = st->threshold = -INFINITY;
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
	}
	st->raw = MemoryContextAllocHuge(st->state_cxt, sizeof(double) * n);
	st->kept_at = MemoryContextAllocHuge(st->state_cxt, sizeof(int) * n);
	st->score2 = MemoryContextAllocHuge(st->state_cxt, sizeof(double) * n);
	st->refined = MemoryContextAllocHuge(st->state_cxt, sizeof(bool) * n);
	st->raw_cap = n;
}

static inline bool
wait_worse(const WaitRow *a, const WaitRow *b)
{
	return hb_ranks_below(a->cheap, a->ordinal, b->cheap, b->ordinal);
}

#define HB_HEAP_PREFIX wait
#define HB_HEAP_ELEMENT_TYPE WaitRow
#define HB_HEAP_WORSE(a, b) wait_worse(a, b)
#include "heap_template.h"

/* how many rows below the cut may wait: `kept` less the rows above it */
static inline int64
waiting_room(const HbScoreState *st)
{
	return Max(st->approx_keep - st->above, 0);
}

static void
wait_pop(HbScoreState *st)
{
	pfree(st->wait[0].blob);
	st->wait[0] = st->wait[--st->n_wait];
	wait_sift_down(st->wait, st->n_wait, 0);
}

/* A waiting row's blob: its features, then the values handed up for it. */
static inline double *
wait_x(const WaitRow *w)
{
	return (double *) w->blob;
}

static inline Datum *
wait_values(const WaitRow *w, int nf)
{
	return (Datum *) (w->blob + MAXALIGN(sizeof(double) * nf));
}

static inline bool *
wait_nulls(const HbScoreState *st, const WaitRow *w, int nf)
{
	return (bool *) (w->blob + MAXALIGN(sizeof(double) * nf) +
					 MAXALIGN(sizeof(Datum) * st->n_kept));
}

/*
 * Batch row b, bound at x, is below the cut: it waits while it is among
 * the best `kept` less the rows above the cut so far (hb_topk's rule,
 * pg_approx.c: the number it must be among only shrinks, so a row that
 * drops out is never owed a place again), with copies of its features
 * bound in full and of the values handed up for it; the rows still
 * waiting at the end of the input are scored and handed up then
 * (flush_waiting).
 */
static void
offer_wait(HbScoreState *st, ScoreCall *c, int b, const double *x,
		   double cheap, double raw, bool refined, int64 ordinal)
{
	WaitRow		w = {cheap, raw, refined, ordinal, NULL};
	int			nf = c->e->n_features;
	Datum	   *rv = st->vals + (size_t) b * st->n_input;
	bool	   *rn = st->nulls + (size_t) b * st->n_input;
	Size		size;
	Datum	   *wv;
	bool	   *wn;
	char	   *data;

	if (st->n_wait >= waiting_room(st) &&
		(st->n_wait == 0 || !wait_worse(&st->wait[0], &w)))
		return;
	if (st->defer_rows)
		row_values_from_tuple(st, b);
	size = MAXALIGN(sizeof(double) * nf) + MAXALIGN(sizeof(Datum) * st->n_kept) +
		MAXALIGN(sizeof(bool) * Max(st->n_kept, 1));
	for (int k = 0; k < st->n_kept; k++)
	{
		int			col = st->kept[k];

		if (!rn[col] && !st->typbyval[col])
			size += MAXALIGN(datumGetSize(rv[col], false, st->typlen[col]));
	}
	w.blob = MemoryContextAlloc(st->wait_cxt, size);
	if (c->lazy_cols)
		read_row_full(c, b, wait_x(&w), x);
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
	if (st->n_wait == st->wait_cap)
	{
		st->wait_cap = Max(st->wait_cap * 2, 64);
		st->wait = st->wait ? repalloc_huge(st->wait, sizeof(WaitRow) * st->wait_cap) :
			MemoryContextAllocHuge(st->state_cxt, sizeof(WaitRow) * st->wait_cap);
	}
	st->wait[st->n_wait] = w;
	wait_sift_up(st->wait, st->n_wait++);
	while (st->n_wait > waiting_room(st))
		wait_pop(st);
}

static int
wait_cmp_ordinal(const void *a, const void *b)
{
	const WaitRow *x = a,
			   *y = b;

	return x->ordinal < y->ordinal ? -1 : x->ordinal > y->ordinal;
}

/*
 * The input is done: the next batch of the rows still waiting, in input
 * order, scored in full and handed up like the kept rows of a batch.
 * False when none is left (or none waits).
 */
static bool
flush_waiting(HbScoreState *st)
{
	ScoreCall  *c;
	const HbPlan *p;
	int			nf;
	int			m;
	double		bar;

	if (!st->topk_on || st->approx == NULL || !st->wait_ok ||
		st->n_flushed >= st->n_wait)
		return false;
	c = &st->calls[st->topk_call];
	p = c->e->plan;
	nf = c->e->n_features;
	if (st->n_flushed == 0)
		qsort(st->wait, st->n_wait, sizeof(WaitRow), wait_cmp_ordinal);
	MemoryContextReset(st->batch_cxt);
	hb_tuples_reset(&c->tup);	/* the values are the waiting rows' own */
	m = Min(st->n_wait - st->n_flushed, st->cap);
	grow_raw(st, m);
	for (int b = 0; b < m; b++)
	{
		const WaitRow *w = &st->wait[st->n_flushed + b];
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
			/* below the k best handed up: the sort would drop it (score_topk) */
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

	grow_raw(st, n);
	hb_approx_margins(p, st->approx, x, n, st->raw, cheap);
	for (int i = 0; i < n; i++)
	{
		double		v = cheap[i];
		bool		keep = v >= st->cut;

		if (st->wait_ok)
		{
			if (!keep)
				offer_wait(st, c, c->rows[from + i], x + (size_t) i * nf, v, st->raw[i],
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
			read_row_full(c, c->rows[from + i], x + (size_t) nk * nf, x + (size_t) i * nf);
		else if (nk != i)
			memcpy(x + (size_t) nk * nf, x + (size_t) i * nf, sizeof(double) * nf);
		st->raw[nk] = st->raw[i];
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

			if (st->score2[j] >= st->cut)
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
		st->above += nk;
		st->ordinal += n;
	}
	/* an earlier waiting row may have lost its place to this batch's */
	while (st->wait_ok && st->n_wait > waiting_room(st))
		wait_pop(st);
	for (int j = 0; j < nk; j++)
		m[st->kept_at[j]] = st->raw[j];
}

/*
 * The top-K call over nb bound rows: rows before the 2k-th of the scan are
 * scored in full, later ones through the pruning scorer (or the tuned
 * approximation).
 */
static void
score_topk(HbScoreState *st, ScoreCall *c, int nb)
{
	const HbPlan *p = c->e->plan;
	int			nf = c->e->n_features;
	int			full = 0;
	double	   *m = c->scratch;
	HbTopkStats ts = {0};
	TopkArg		a = {st, m, 0, 0};
	double		kept_bar = -INFINITY;

	while (full < nb && st->seen + c->rows[full] < 2 * st->k)
		full++;
	if (full > 0)
	{
		for (int b = 0; c->lazy_cols && b < full; b++)
			read_row_full(c, c->rows[b], c->x + (size_t) b * nf, c->x + (size_t) b * nf);
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
		 * before the batch, and the batch's before the 2k-th) would be
		 * dropped by the sort without a look: it is pruned after all (not
		 * handed up); the others raise the bar (below).  No row before the
		 * 2k-th is pruned (the top of the file says why)
		 */
		kept_bar = st->threshold;	/* with the batch's rows before the 2k-th */
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

/* ---- scoring a batch ---- */

static Datum
float8_array_datum(const double *v, int n)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(n, 1));

	for (int i = 0; i < n; i++)
		d[i] = Float8GetDatum(v[i]);
	return PointerGetDatum(construct_array(d, n, FLOAT8OID, sizeof(float8),
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * Batch row (rv, rn) as the outer tuple of the arguments' expressions.
 */
static void
row_to_slot(HbScoreState *st, Datum *rv, bool *rn)
{
	TupleTableSlot *slot = st->rowslot;

	ExecClearTuple(slot);
	memcpy(slot->tts_values, rv, sizeof(Datum) * st->n_input);
	memcpy(slot->tts_isnull, rn, sizeof(bool) * st->n_input);
	ExecStoreVirtualTuple(slot);
	st->argcxt->ecxt_outertuple = slot;
}

/*
 * Value v of a pinned call for the batch row (rv, rn): a plain column is
 * read from the row; any other value is evaluated over it, the row put in
 * the slot once (*loaded) for all of them.
 */
static Datum
pinned_value(HbScoreState *st, ScoreCall *c, int v, Datum *rv, bool *rn,
			 bool *loaded, bool *isnull)
{
	if (c->val_col[v] >= 0)
	{
		*isnull = rn[c->val_col[v]];
		return rv[c->val_col[v]];
	}
	if (!*loaded)
	{
		row_to_slot(st, rv, rn);
		*loaded = true;
	}
	return ExecEvalExprSwitchContext(c->val_es[v], st->argcxt, isnull);
}

static bool
bind_pinned_row(HbScoreState *st, ScoreCall *c, Datum *rv, bool *rn, double *x)
{
	HbCacheEntry *e = c->e;
	bool		loaded = false;

	ResetExprContext(st->argcxt);
	if (c->is_array)
	{
		bool		isnull;
		Datum		d = pinned_value(st, c, 0, rv, rn, &loaded, &isnull);
		MemoryContext old;

		if (isnull)
			return false;
		old = MemoryContextSwitchTo(st->argcxt->ecxt_per_tuple_memory);
		hb_array_row(DatumGetArrayTypeP(d), e, x, e->name);
		MemoryContextSwitchTo(old);
		return true;
	}
	for (int v = 0; v < c->nvals; v++)
		c->rowvals[v] = pinned_value(st, c, v, rv, rn, &loaded, &c->rownulls[v]);
	if (c->sparse)
		hb_bind_values_margins(&c->bind, e, c->rowvals, c->rownulls, x);
	else
		hb_bind_values(&c->bind, e, c->rowvals, c->rownulls, x);
	return true;
}

/*
 * Bind row i of the batch for call c (its argument evaluated over the row)
 * into its next slot of c->x.  (A call that binds the input's columns
 * bound the row as it was read, fill_batch.)
 */
static bool
bind_row(HbScoreState *st, ScoreCall *c, int i, int nb)
{
	Datum	   *rv = st->vals + (size_t) i * st->n_input;
	bool	   *rn = st->nulls + (size_t) i * st->n_input;
	double	   *x = c->x + (size_t) nb * c->width;
	HbCacheEntry *e = c->e;

	if (c->source == HB_SOURCE_ARGS)
		return bind_pinned_row(st, c, rv, rn, x);
	Assert(c->source == HB_SOURCE_DATUM);
	{
		ExprContext *ec = st->argcxt;
		bool		isnull;
		Datum		d;

		row_to_slot(st, rv, rn);
		ResetExprContext(ec);
		d = ExecEvalExprSwitchContext(c->arg_es, ec, &isnull);
		if (isnull)
			return false;
		if (c->is_array)
		{
			MemoryContext old = MemoryContextSwitchTo(ec->ecxt_per_tuple_memory);

			hb_array_row(DatumGetArrayTypeP(d), e, x, e->name);
			MemoryContextSwitchTo(old);
			return true;
		}
		{
			HeapTupleHeader td = DatumGetHeapTupleHeader(d);

			if (!c->bound || c->bind.tupType != HeapTupleHeaderGetTypeId(td) ||
				c->bind.tupTypmod != HeapTupleHeaderGetTypMod(td))
			{
				hb_bind_record(&c->bind, e, td, c->cxt, e->name);
				c->bound = true;
			}
			if (c->sparse)
				hb_bind_row_margins(&c->bind, e, td, x);
			else
				hb_bind_row(&c->bind, e, td, x);
		}
		return true;
	}
}

static void
score_call(HbScoreState *st, ScoreCall *c, bool topk)
{
	HbCacheEntry *e = c->e;
	const HbPlan *p = e->plan;
	int			nb = 0;
	instr_time	start;

	grow_call_buffers(st, c);
	for (int i = 0; i < st->nrows; i++)
	{
		c->isnull[i] = false;
		if (c->source == HB_SOURCE_COLUMNS || bind_row(st, c, i, nb))
			c->rows[nb++] = i;
		else
		{
			c->isnull[i] = true;
			c->values[i] = (Datum) 0;
		}
	}
	if (nb == 0)
		return;
	INSTR_TIME_SET_CURRENT(start);
	if (topk)
		score_topk(st, c, nb);
	else
		switch (c->kind)
		{
			case HB_CALL_PREDICT:
				if (c->cascade)
					hb_cascade_run_lazy(p, c->cascade, c->x, nb, HB_CASCADE_PREDICT, c->out, NULL,
										c->lazy_cols ? complete_rows : NULL, c);
				else if (c->sparse)
					hb_link_predict(p, c->x, nb, c->out);
				else
					hb_plan_predict(p, c->x, nb, c->scratch, c->out);
				for (int b = 0; b < nb; b++)
					c->values[c->rows[b]] = Float8GetDatum(c->out[b]);
				break;
			case HB_CALL_PROBA:
				if (c->sparse)
					hb_link_proba(p, c->x, nb, c->out);
				else
					hb_plan_proba(p, c->x, nb, c->scratch, c->out);
				for (int b = 0; b < nb; b++)
					c->values[c->rows[b]] = float8_array_datum(c->out + (size_t) b * e->n_classes,
															   e->n_classes);
				break;
			case HB_CALL_MARGIN:
				if (c->sparse)
					memcpy(c->out, c->x, sizeof(double) * nb * e->n_outputs);
				else
					hb_plan_margins(p, c->x, nb, c->out);
				for (int b = 0; b < nb; b++)
					c->values[c->rows[b]] = float8_array_datum(c->out + (size_t) b * e->n_outputs,
															   e->n_outputs);
				break;
			case HB_CALL_CLASS:
				hb_classify_lazy(e, c->cascade, c->x, nb, c->cls,
								 c->lazy_cols ? complete_rows : NULL, c);
				for (int b = 0; b < nb; b++)
					c->values[c->rows[b]] = Int32GetDatum(c->cls[b]);
				break;
			case HB_CALL_TARGETS:
				if (c->sparse)
					hb_link_targets(p, c->x, nb, c->out);
				else
					hb_plan_targets(p, c->x, nb, c->scratch, c->out);
				for (int b = 0; b < nb; b++)
					c->values[c->rows[b]] = float8_array_datum(c->out + (size_t) b * e->n_outputs,
															   e->n_outputs);
				break;
			default:
				elog(ERROR, "unexpected scoring call kind %d", (int) c->kind);
		}
	hb_stat_batch(e, nb, &start, topk);
	st->rows_scored += nb;
}

/* The batch's limits, once the models are known. */
static void
size_batches(HbScoreState *st)
{
	int			rows = HB_SCAN_MAX_ROWS;

	for (int j = 0; j < st->n_calls; j++)
		rows = Min(rows, hb_batch_rows(st->calls[j].e));
	/* the buffered rows get hbird.batch_memory too */
	st->max_bytes = (Size) hb_batch_memory_kb * 1024;
	st->max_rows = Max(rows, 1);
	if (!hb_batch_scan)
		st->max_rows = 1;		/* a cached plan, batching turned off since */
}

/*
 * The models, as the functions resolve them at their first call (at the
 * first row of a scan); then the batches' sizes, which depend on them.
 */
static void
resolve_calls(HbScoreState *st)
{
	for (int j = 0; j < st->n_calls; j++)
		resolve_call(st, &st->calls[j]);
	st->need_resolve = false;
	size_batches(st);
	if (st->topk_call >= 0)
		topk_start(st);

	/*
	 * A top-K batch's rows are read, scored by the bounds or the cheap
	 * model, and some read again and handed up: in batches of hb_topk's
	 * size they stay in the CPU's caches across those passes (at 65,536
	 * rows the approximate plain query took 1.7 times as long).
	 */
	if (st->topk_on)
		st->max_rows = Min(st->max_rows, HB_TOPK_BATCH_ROWS);
	st->next_rows = Min(st->next_rows, st->max_rows);
	for (int j = 0; j < st->n_calls; j++)
		grow_call_buffers(st, &st->calls[j]);

	/*
	 * Top-K keeps each row's tuple for its model (lazy_cols), or for this
	 * alone: the values the expressions above read (the id beside the
	 * score, often the table's last column) are then deformed only for the
	 * rows handed up, a few percent of them, unless another call evaluates
	 * its argument from every row.  Deforming every row up to its last
	 * column had cost a seventh of an approximate plain query.
	 */
	st->defer_rows = st->topk_on && st->skip_ok &&
		st->calls[st->topk_call].source == HB_SOURCE_COLUMNS;
	for (int j = 0; j < st->n_calls; j++)
		if (st->calls[j].source != HB_SOURCE_COLUMNS)
			st->defer_rows = false;
	if (st->defer_rows && st->row_values == NULL)
	{
		st->row_values = MemoryContextAlloc(st->state_cxt, sizeof(Datum) * Max(st->in_desc->natts, 1));
		st->row_nulls = MemoryContextAlloc(st->state_cxt, sizeof(bool) * Max(st->in_desc->natts, 1));
	}
}

/*
 * defer_rows: batch row i's values that the expressions read, from the
 * tuple its top-K call kept (by-reference values point into that tuple,
 * which lasts until the next batch is read).
 */
static void
row_values_from_tuple(HbScoreState *st, int i)
{
	ScoreCall  *c = &st->calls[st->topk_call];
	Datum	   *rv = st->vals + (size_t) i * st->n_input;
	bool	   *rn = st->nulls + (size_t) i * st->n_input;
	HeapTupleData t;

	if (!hb_tuples_get(&c->tup, i, &t))
		return;					/* read when it came: no tuple of its own */
	heap_deform_tuple(&t, c->tup_desc[i], st->row_values, st->row_nulls);
	for (int k = 0; k < st->n_kept; k++)
	{
		int			col = st->kept[k];

		if (col >= st->n_phys)
			continue;			/* the row's identity: read when it came */
		rv[col] = st->row_values[col];
		rn[col] = st->row_nulls[col];
	}
}

/*
 * Input column col (from n_phys on) of batch row b: its ctid or tableoid,
 * from the identity of the scan's tuple in the input slot.  The planner
 * asks for this only of a scan that hands up its own tuples (pg_scan.h),
 * which always carry one.
 */
static void
row_identity(HbScoreState *st, TupleTableSlot *in, int col, int b,
			 Datum *value, bool *isnull)
{
	*isnull = false;
	if (st->sys_attno[col - st->n_phys] == SelfItemPointerAttributeNumber)
	{
		if (!ItemPointerIsValid(&in->tts_tid))
			elog(ERROR, "batching scan: input row without a ctid");
		st->tids[b] = in->tts_tid;
		*value = PointerGetDatum(&st->tids[b]);
	}
	else
	{
		if (!OidIsValid(in->tts_tableOid))
			elog(ERROR, "batching scan: input row without a tableoid");
		*value = ObjectIdGetDatum(in->tts_tableOid);
	}
}

static bool
fill_batch(HbScoreState *st)
{
	PlanState  *outer = outerPlanState(&st->css.ss.ps);
	MemoryContext old;
	int			target;
	Size		bytes = 0;

	if (st->eof)
		return flush_waiting(st);
	MemoryContextReset(st->batch_cxt);
	st->nrows = 0;
	for (int j = 0; j < st->n_calls; j++)
		hb_tuples_reset(&st->calls[j].tup);
	st->pos = 0;
	target = Min(st->next_rows, st->max_rows);
	st->next_rows = Min((int64) st->next_rows * 2, (int64) st->max_rows);
	grow_buffers(st, target);
	if (!st->need_resolve)
		for (int j = 0; j < st->n_calls; j++)
			grow_call_buffers(st, &st->calls[j]);

	/*
	 * The input runs in the executor's context (a scan allocates its state
	 * at its first row); only the copies of the rows' values go into the
	 * batch's context, which the next batch resets.  A call that binds the
	 * input's columns binds each row as it is read, straight from the
	 * input's tuple: those columns are not copied.
	 */
	while (st->nrows < target && bytes < st->max_bytes)
	{
		TupleTableSlot *in = ExecProcNode(outer);
		Datum	   *rv;
		bool	   *rn;
		bool		lazy_row;
		bool		read_lazily = false;	/* for some call's cheap model */

		if (TupIsNull(in))
		{
			st->eof = true;
			break;
		}
		if (st->need_resolve)
			resolve_calls(st);
		rv = st->vals + (size_t) st->nrows * st->n_input;
		rn = st->nulls + (size_t) st->nrows * st->n_input;
		lazy_row = st->defer_rows && row_has_tuple(in);
		if (st->last_col > 0 && !lazy_row)
			slot_getsomeattrs(in, Min(st->last_col, st->n_phys));
		for (int k = 0; k < st->n_kept; k++)
		{
			int			col = st->kept[k];

			if (col >= st->n_phys)
			{
				row_identity(st, in, col, st->nrows, &rv[col], &rn[col]);
				continue;
			}
			if (lazy_row)
				continue;
			if (in->tts_isnull[col])
			{
				rv[col] = (Datum) 0;
				rn[col] = true;
				continue;
			}
			rn[col] = false;
			if (st->typbyval[col])
				rv[col] = in->tts_values[col];
			else
			{
				/* the input's slot changes with its next row */
				Size		sz = datumGetSize(in->tts_values[col], false, st->typlen[col]);

				old = MemoryContextSwitchTo(st->batch_cxt);
				rv[col] = datumCopy(in->tts_values[col], false, st->typlen[col]);
				MemoryContextSwitchTo(old);
				bytes += sz;
			}
		}
		if (st->any_columns)
		{
			old = MemoryContextSwitchTo(st->batch_cxt);
			for (int j = 0; j < st->n_calls; j++)
			{
				ScoreCall  *c = &st->calls[j];

				if (c->source == HB_SOURCE_COLUMNS && c->lazy_cols && row_has_tuple(in))
				{
					hb_read_slot(&c->rd_cheap, &c->bind_cheap, c->e, in,
								 c->x + (size_t) st->nrows * c->width, false);
					keep_row_tuple(c, st->nrows, in);
					bytes += c->tup.len[st->nrows];
					read_lazily = true;
				}
				else if (c->source == HB_SOURCE_COLUMNS)
				{
					hb_read_slot(&c->rd, &c->bind, c->e, in,
								 c->x + (size_t) st->nrows * c->width, c->sparse);
					/* read in full, the tuple kept for the values (defer_rows) */
					if (lazy_row && j == st->topk_call)
					{
						keep_row_tuple(c, st->nrows, in);
						bytes += c->tup.len[st->nrows];
					}
				}
			}
			MemoryContextSwitchTo(old);
		}
		st->rows_lazy += read_lazily;
		bytes += st->n_kept * (sizeof(Datum) + sizeof(bool));
		st->nrows++;
	}
	if (st->nrows == 0)
		return st->eof && flush_waiting(st);

	old = MemoryContextSwitchTo(st->batch_cxt);
	if (st->topk_on)
		memset(st->skip, 0, sizeof(bool) * st->nrows);
	for (int j = 0; j < st->n_calls; j++)
		score_call(st, &st->calls[j], st->topk_on && j == st->topk_call);
	MemoryContextSwitchTo(old);
	st->batches++;
	st->rows_in += st->nrows;
	return true;
}

/* ---- executor methods ---- */

static bool
keep_vars_walker(Node *node, HbScoreState *st)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		if ((v->varno == INDEX_VAR || v->varno == OUTER_VAR) &&
			v->varattno > 0 && v->varattno <= st->n_input)
		{
			st->keep[v->varattno - 1] = true;
			st->last_col = Max(st->last_col, v->varattno);
		}
		else if ((v->varno == INDEX_VAR || v->varno == OUTER_VAR) && v->varattno == 0)
		{
			for (int c = 0; c < st->n_input; c++)
				st->keep[c] = true;
			st->last_col = st->n_input;
		}
		return false;
	}
	return expression_tree_walker(node, keep_vars_walker, st);
}

/*
 * A pinned call's arguments after the name (version, sha256, origin,
 * columns, values...): every column they read is copied with the batch's
 * rows; a value that is a plain input column is read from there, any
 * other is evaluated per row.
 */
static void
init_pinned(HbScoreState *st, ScoreCall *c, RowExpr *r)
{
	PlanState  *ps = &st->css.ss.ps;
	int			v = 0;
	ListCell   *lc;

	for (int i = 0; i < 4; i++)
		c->pin_es[i] = ExecInitExpr(list_nth(r->args, i), ps);
	c->nvals = list_length(r->args) - 4;
	c->val_type = palloc(sizeof(Oid) * Max(c->nvals, 1));
	c->val_col = palloc(sizeof(int) * Max(c->nvals, 1));
	c->val_es = palloc0(sizeof(ExprState *) * Max(c->nvals, 1));
	for_each_from(lc, r->args, 4)
	{
		Node	   *e = lfirst(lc);
		Var		   *var = (Var *) e;

		c->val_type[v] = exprType(e);
		(void) keep_vars_walker(e, st); /* copied with the batch's rows */
		if (IsA(e, Var) && (var->varno == OUTER_VAR || var->varno == INDEX_VAR) &&
			var->varattno > 0 && var->varattno <= st->n_input)
			c->val_col[v] = var->varattno - 1;
		else
		{
			c->val_col[v] = -1;
			c->val_es[v] = ExecInitExpr((Expr *) e, ps);
		}
		v++;
	}
}

static void
hb_score_begin(CustomScanState *node, EState *estate, int eflags)
{
	HbScoreState *st = (HbScoreState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	List	   *calls = lsecond(cs->custom_private);
	List	   *topk = lthird(cs->custom_private);
	ListCell   *lc;
	int			j = 0;
	TupleDesc	in_desc;
	TupleDesc	row_desc;
	List	   *sys = list_length(cs->custom_private) > 3 ? lfourth(cs->custom_private) : NIL;

	st->state_cxt = AllocSetContextCreate(estate->es_query_cxt, "hbird batching scan",
										  ALLOCSET_DEFAULT_SIZES);
	st->batch_cxt = AllocSetContextCreate(st->state_cxt, "hbird batch rows",
										  ALLOCSET_DEFAULT_SIZES);
	outerPlanState(node) = ExecInitNode(outerPlan(cs), estate, eflags);
	in_desc = ExecGetResultType(outerPlanState(node));
	st->in_desc = in_desc;
	st->n_input = intVal(linitial(cs->custom_private));
	st->n_phys = st->n_input - list_length(sys);
	Assert(st->n_phys == in_desc->natts);
	st->sys_attno = palloc(sizeof(AttrNumber) * Max(list_length(sys), 1));
	/* a row as the arguments' expressions see it: the columns, then sys */
	row_desc = CreateTemplateTupleDesc(st->n_input);
	for (int c = 0; c < st->n_phys; c++)
		TupleDescCopyEntry(row_desc, c + 1, in_desc, c + 1);
	foreach(lc, sys)
	{
		int			c = st->n_phys + foreach_current_index(lc);

		st->sys_attno[c - st->n_phys] = intVal(lfirst(lc));
		TupleDescInitEntry(row_desc, c + 1, NULL,
						   intVal(lfirst(lc)) == SelfItemPointerAttributeNumber ? TIDOID : OIDOID,
						   -1, 0);
	}
	st->rowslot = ExecInitExtraTupleSlot(estate, row_desc, &TTSOpsVirtual);
	st->argcxt = CreateExprContext(estate);
	st->typlen = palloc(sizeof(int16) * Max(st->n_input, 1));
	st->typbyval = palloc(sizeof(bool) * Max(st->n_input, 1));
	st->keep = palloc0(sizeof(bool) * Max(st->n_input, 1));
	for (int c = 0; c < st->n_input; c++)
	{
		Form_pg_attribute att = TupleDescAttr(row_desc, c);

		st->typlen[c] = att->attlen;
		st->typbyval[c] = att->attbyval;
	}

	st->n_calls = list_length(calls);
	st->calls = palloc0(sizeof(ScoreCall) * Max(st->n_calls, 1));
	foreach(lc, calls)
	{
		List	   *priv = lfirst(lc);
		ScoreCall  *c = &st->calls[j];
		Expr	   *name = list_nth(cs->custom_exprs, 2 * j);
		Expr	   *arg = list_nth(cs->custom_exprs, 2 * j + 1);

		c->kind = intVal(linitial(priv));
		c->is_array = intVal(lsecond(priv)) != 0;
		c->source = intVal(lthird(priv));
		c->rowtype = (Oid) intVal(lfourth(priv));
		c->relid = (Oid) intVal(list_nth(priv, 4));
		c->agg = list_length(priv) > 5 && intVal(list_nth(priv, 5)) != 0;
		c->fn = hb_call_function_name(c->kind, c->agg);
		c->name_es = ExecInitExpr(name, &node->ss.ps);
		if (c->source == HB_SOURCE_DATUM)
		{
			c->arg_es = ExecInitExpr(arg, &node->ss.ps);
			(void) keep_vars_walker((Node *) arg, st);
		}
		else if (c->source == HB_SOURCE_ARGS)
			init_pinned(st, c, castNode(RowExpr, arg));
		j++;
	}
	/* what the node's own expressions read of the input */
	(void) keep_vars_walker((Node *) cs->scan.plan.targetlist, st);
	(void) keep_vars_walker((Node *) cs->scan.plan.qual, st);
	st->kept = palloc(sizeof(int) * Max(st->n_input, 1));
	for (int c = 0; c < st->n_input; c++)
		if (st->keep[c])
			st->kept[st->n_kept++] = c;
	for (j = 0; j < st->n_calls; j++)
		if (st->calls[j].source == HB_SOURCE_COLUMNS)
			st->any_columns = true;

	/*
	 * A pruned row cannot be among the k the sort above returns, so it need
	 * not go up at all, unless evaluating this node's expressions for it is
	 * observable (a volatile function would run fewer times).
	 */
	st->skip_ok = !contain_volatile_functions((Node *) cs->scan.plan.targetlist) &&
		!contain_volatile_functions((Node *) cs->scan.plan.qual);
	st->topk_call = -1;
	if (topk != NIL)
	{
		st->topk_call = intVal(linitial(topk));
		st->k = intVal(lsecond(topk));
		st->descending = intVal(lthird(topk)) != 0;
		if (list_length(cs->custom_exprs) > 2 * st->n_calls)
		{
			st->limit_count = ExecInitExpr(list_nth(cs->custom_exprs, 2 * st->n_calls),
										   &node->ss.ps);
			st->limit_offset = ExecInitExpr(list_nth(cs->custom_exprs, 2 * st->n_calls + 1),
											&node->ss.ps);
		}
	}
	st->next_rows = 1;
	st->max_rows = HB_SCAN_MAX_ROWS;
	st->max_bytes = (Size) hb_batch_memory_kb * 1024;
	st->need_resolve = true;
	st->unpin_cb.func = unpin_calls;
	st->unpin_cb.arg = st;
	MemoryContextRegisterResetCallback(st->state_cxt, &st->unpin_cb);
}

static TupleTableSlot *
hb_score_exec(CustomScanState *node)
{
	HbScoreState *st = (HbScoreState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	ExprState  *qual = node->ss.ps.qual;
	ProjectionInfo *proj = node->ss.ps.ps_ProjInfo;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;

	for (;;)
	{
		int			i;

		CHECK_FOR_INTERRUPTS();
		if (st->pos >= st->nrows)
		{
			if (st->topk_on)
				st->seen += st->nrows;
			if (!fill_batch(st))
				return NULL;
		}
		i = st->pos++;
		if (st->topk_on && st->skip[i])
			continue;
		if (st->defer_rows)
			row_values_from_tuple(st, i);
		ExecClearTuple(slot);
		/* only what the expressions read; the other columns are NULL */
		for (int k = 0; k < st->n_kept; k++)
			slot->tts_values[st->kept[k]] = st->vals[(size_t) i * st->n_input + st->kept[k]];
		memcpy(slot->tts_isnull, st->nulls + (size_t) i * st->n_input,
			   sizeof(bool) * st->n_input);
		for (int j = 0; j < st->n_calls; j++)
		{
			slot->tts_values[st->n_input + j] = st->calls[j].values[i];
			slot->tts_isnull[st->n_input + j] = st->calls[j].isnull[i];
		}
		ExecStoreVirtualTuple(slot);

		ResetExprContext(econtext);
		econtext->ecxt_scantuple = slot;
		if (qual && !ExecQual(qual, econtext))
		{
			InstrCountFiltered1(node, 1);
			continue;
		}
		if (proj)
			return ExecProject(proj);
		return slot;
	}
}

static void
hb_score_end(CustomScanState *node)
{
	HbScoreState *st = (HbScoreState *) node;

	/* (an aggregate counts its calls itself, one per group) */
	for (int j = 0; j < st->n_calls; j++)
		if (st->calls[j].resolved && !st->calls[j].agg)
			hb_stat_call(st->calls[j].e);
	if (st->bounds)
		hb_topk_bounds_free(st->bounds);
	st->bounds = NULL;
	ExecEndNode(outerPlanState(node));
}

static void
hb_score_rescan(CustomScanState *node)
{
	HbScoreState *st = (HbScoreState *) node;
	PlanState  *outer = outerPlanState(node);

	st->nrows = 0;
	st->pos = 0;
	st->eof = false;
	st->next_rows = 1;
	st->seen = 0;
	st->kth = st->threshold = -INFINITY;
	if (st->best)
		binaryheap_reset(st->best);
	if (st->wait_cxt)
		reset_waiting(st);
	MemoryContextReset(st->batch_cxt);
	/* the models may be named by parameters that changed */
	st->need_resolve = true;
	if (outer->chgParam == NULL)
		ExecReScan(outer);
}

static void
hb_score_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	HbScoreState *st = (HbScoreState *) node;
	StringInfoData buf;

	initStringInfo(&buf);
	for (int j = 0; j < st->n_calls; j++)
	{
		ScoreCall  *c = &st->calls[j];
		CustomScan *cs = (CustomScan *) node->ss.ps.plan;
		Node	   *name = list_nth(cs->custom_exprs, 2 * j);

		if (buf.len > 0)
			appendStringInfoString(&buf, ", ");
		if (c->resolved)
			appendStringInfo(&buf, "%s v%d (%s)", c->name, c->e->version,
							 hb_strategy_name(hb_plan_strategy(c->e->plan, st->max_rows)));
		else if (IsA(name, Const) && !((Const *) name)->constisnull)
		{
			/* not run: what it would score with, if the caller may */
			char	   *mname = TextDatumGetCString(((Const *) name)->constvalue);
			HbCatalogRef ref;

			if (hb_catalog_lookup(mname, &ref) && hb_may_score(&ref))
			{
				HbCacheEntry *e = hb_cache_acquire(&ref);

				appendStringInfo(&buf, "%s v%d (%s)", mname, e->version,
								 hb_strategy_name(hb_plan_strategy(e->plan, hb_batch_rows(e))));
			}
			else
				appendStringInfoString(&buf, mname);
		}
		else
			appendStringInfoString(&buf, "(named per execution)");
		appendStringInfoString(&buf, c->source == HB_SOURCE_COLUMNS ||
							   (c->source == HB_SOURCE_ARGS && !c->is_array) ?
							   " columns" : " rows");
		if (c->source == HB_SOURCE_ARGS)
			appendStringInfoString(&buf, ", pinned");
	}
	ExplainPropertyText("Models", buf.data, es);
	if (st->calls[0].resolved)
		ExplainPropertyInteger("Batch Size", "rows", st->max_rows, es);
	if (st->topk_call >= 0)
	{
		resetStringInfo(&buf);
		if (st->limit_count && !st->batches)
			appendStringInfo(&buf, "%s, k from LIMIT", st->descending ? "descending" : "ascending");
		else
			appendStringInfo(&buf, "%s, k = %lld%s", st->descending ? "descending" : "ascending",
							 (long long) st->k,
							 st->batches && !st->topk_on ? ", not pruning" : "");
		if (st->topk_on && st->approx)
		{
			char		label[128];

			hb_approx_describe(st->calls[st->topk_call].e->plan, st->approx, label, sizeof(label));
			appendStringInfo(&buf, ", approximate (%s, tuned for k = %d)", label, st->tuning.k);
		}
		ExplainPropertyText("Top-K", buf.data, es);
	}
	if (es->analyze)
	{
		ExplainPropertyInteger("Batches", NULL, st->batches, es);
		ExplainPropertyInteger("Rows Scored", NULL, st->rows_scored, es);
		if (st->topk_call >= 0)
			ExplainPropertyInteger("Rows Pruned", NULL, st->rows_pruned, es);
		if (st->topk_on && st->approx && st->approx->refine_trees > 0)
			ExplainPropertyInteger("Rows Refined", NULL, st->rows_refined, es);
		if (st->rows_lazy > 0)
			ExplainPropertyInteger("Rows Read Lazily", NULL, st->rows_lazy, es);
	}
}

static const CustomExecMethods hb_score_exec_methods = {
	.CustomName = "HbirdScore",
	.BeginCustomScan = hb_score_begin,
	.ExecCustomScan = hb_score_exec,
	.EndCustomScan = hb_score_end,
	.ReScanCustomScan = hb_score_rescan,
	.ExplainCustomScan = hb_score_explain,
};

Node *
hb_score_create_state(CustomScan *cscan)
{
	HbScoreState *st = (HbScoreState *) newNode(sizeof(HbScoreState), T_CustomScanState);

	st->css.methods = &hb_score_exec_methods;
	return (Node *) st;
}

const CustomScanMethods hb_score_scan_methods = {
	.CustomName = "HbirdScore",
	.CreateCustomScanState = hb_score_create_state,
};
