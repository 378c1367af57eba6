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
 * Top-K and approximate top-K: pg_scan_topk.c.
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "lib/binaryheap.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/acl.h"
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
#include "pg_scan_exec.h"



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
	desc = hb_pinned_desc(DatumGetArrayTypeP(d), c->nvals, c->val_type, c->val_typmod,
						  &c->pin_read);
	hb_bind_desc(&c->bind, c->e, desc, c->cxt, c->e->name);
	c->bound = true;
	c->rowvals = palloc(sizeof(Datum) * c->nvals);
	c->rownulls = palloc(sizeof(bool) * c->nvals);
}

/*
 * The tuned cascade call c of model e scores through (hbird.cascade), or
 * NULL.  A pinned call is exact, as the coordinator that shipped it asked.
 */
static HbCascade *
call_cascade(const ScoreCall *c, HbCacheEntry *e, MemoryContext cxt)
{
	if ((c->kind == HB_CALL_PREDICT || c->kind == HB_CALL_CLASS) && hb_cascade_on &&
		c->source != HB_SOURCE_ARGS)
		return hb_cascade_for(e, cxt);
	return NULL;
}

/*
 * Whether call c binds its rows to the raw margins of e, a linear model
 * over text (hb_entry_sparse), rather than to feature vectors: every kind
 * of call does, but for arrays (by position) and cascades (the cheap model
 * reads features).
 */
static bool
binds_margins(const ScoreCall *c, const HbCacheEntry *e, const HbCascade *cascade)
{
	return hb_entry_sparse(e) != NULL && !c->is_array && cascade == NULL;
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
	c->cascade = call_cascade(c, e, c->cxt);
	c->sparse = binds_margins(c, e, c->cascade);
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
		hb_scan_read_cheaply(st, c, c->cascade != NULL ? c->cascade->approx : NULL,
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
 * HbCompleteRows for a cascade over lazily read rows: the rows (bound
 * indexes) its cheap model cannot decide, read again in full into xs.
 */
static void
complete_rows(void *arg, const size_t *rows, size_t n, double *xs)
{
	ScoreCall  *c = arg;

	for (size_t i = 0; i < n; i++)
		hb_scan_read_row_full(c, c->rows[rows[i]], xs + i * c->width,
					  c->x + rows[i] * c->width);
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
	if (c->pin_read)
	{
		MemoryContext old = MemoryContextSwitchTo(st->argcxt->ecxt_per_tuple_memory);

		hb_pinned_read(c->pin_read, c->rowvals, c->rownulls);
		MemoryContextSwitchTo(old);
	}
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
				if (c->bound)
					hb_bind_release(&c->bind);
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
		hb_scan_score_topk(st, c, nb);
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
				hb_classify_lazy(e, c->cascade, c->x, c->sparse, nb, c->cls,
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
		hb_scan_topk_start(st);

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
		return hb_scan_flush_waiting(st);
	if (hb_scan_flush_early(st))
		return true;
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
		return st->eof && hb_scan_flush_waiting(st);

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
	c->val_typmod = palloc(sizeof(int32) * Max(c->nvals, 1));
	c->val_col = palloc(sizeof(int) * Max(c->nvals, 1));
	c->val_es = palloc0(sizeof(ExprState *) * Max(c->nvals, 1));
	for_each_from(lc, r->args, 4)
	{
		Node	   *e = lfirst(lc);
		Var		   *var = (Var *) e;

		c->val_type[v] = exprType(e);
		c->val_typmod[v] = exprTypmod(e);
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
		if (!c->agg)
		{
			/*
			 * The node evaluates the call in the place of the FuncExpr it
			 * took over, so it checks what ExecInitFunc would have: the
			 * right to execute the function (a scoring aggregate's Agg
			 * checks its own)
			 */
			TargetEntry *te = list_nth(cs->custom_scan_tlist, st->n_input + j);
			Oid			fn = castNode(FuncExpr, te->expr)->funcid;
			AclResult	acl = pg_proc_aclcheck(fn, GetUserId(), ACL_EXECUTE);

			if (acl != ACLCHECK_OK)
				aclcheck_error(acl, OBJECT_FUNCTION, get_func_name(fn));
			InvokeFunctionExecuteHook(fn);
		}
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
			hb_scan_row_values(st, i);
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
	st->rule_kth = st->rule_bar = -INFINITY;
	if (st->best)
		binaryheap_reset(st->best);
	if (st->rule_best)
		binaryheap_reset(st->rule_best);
	if (st->wait_cxt)
		hb_scan_reset_waiting(st);
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
							 c->sparse ? "sparse text" :
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
								 hb_entry_sparse(e) &&
								 binds_margins(c, e, call_cascade(c, e, CurrentMemoryContext)) ?
								 "sparse text" :
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
		if (st->topk_on && st->approx && st->wait_ok)
			ExplainPropertyInteger("Rows Waited", NULL, st->rows_waited, es);
		if (st->topk_on && st->approx && st->approx->gate != NULL && st->wait_ok)
			ExplainPropertyInteger("Rows Gated Out", NULL, st->rows_gated, es);
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
	/* called where the planner made the node parallel-aware: below a Gather */
	.EstimateDSMCustomScan = hb_score_estimate_dsm,
	.InitializeDSMCustomScan = hb_score_init_dsm,
	.ReInitializeDSMCustomScan = hb_score_reinit_dsm,
	.InitializeWorkerCustomScan = hb_score_init_worker,
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
