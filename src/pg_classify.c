/*
 * pg_classify.c
 *	  Predicted classes: hb_predict_class (rows and arrays),
 *	  hb_predict_class_agg (on the aggregates' machinery of pg_batch.c),
 *	  hb_predict_class_batch, and hb_class_stats.
 *
 * Tree classifiers take the exact early exit of src/core/early_exit.c
 * unless hbird.early_exit is off: the answer is the same either way, only
 * the number of trees walked differs.  The per-tree bounds are built once
 * per compiled plan and live with it in the plan cache.  A linear model
 * over text takes its class from the margins its tokens give
 * (hb_classify_lazy with margins), as hb_predict does, never from a
 * feature vector tens of thousands wide.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/typcache.h"

#include "hbird.h"
#include "early_exit.h"

PG_FUNCTION_INFO_V1(hb_predict_class_record);
PG_FUNCTION_INFO_V1(hb_predict_class_array);
PG_FUNCTION_INFO_V1(hb_predict_class_agg_sfunc);
PG_FUNCTION_INFO_V1(hb_predict_class_agg_final);
PG_FUNCTION_INFO_V1(hb_predict_class_batch);
PG_FUNCTION_INFO_V1(hb_class_stats);
PG_FUNCTION_INFO_V1(hb_class_stats_reset);


/* What this backend's class predictions scored, for hb_class_stats(). */
static HbClassStats class_stats;

void
hb_check_classifier(const HbCacheEntry *e, const char *fn)
{
	if (!hb_class_supported(e->plan))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("model \"%s\" is a %s model; %s needs a classifier",
						e->name, hb_task_name(e->task), fn),
				 errhint("Use hb_predict for its value.")));
}

/* The entry's class bounds, built on first use in the entry's context. */
static const HbClassBounds *
class_bounds(HbCacheEntry *e)
{
	if (e->class_bounds == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(e->cxt);

		e->class_bounds = hb_class_bounds(e->plan);
		MemoryContextSwitchTo(old);
		if (e->class_bounds == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory")));
	}
	return (const HbClassBounds *) e->class_bounds;
}

/*
 * Classes of n bound rows of e's classifier (checked by the caller), with
 * the early exit unless hbird.early_exit is off.
 */
void
hb_classify(HbCacheEntry *e, const HbCascade *cascade, const double *x,
			size_t n, int32 *out)
{
	hb_classify_lazy(e, cascade, x, false, n, out, NULL, NULL);
}

/*
 * hb_classify of rows bound lazily for the cascade (pg_lazy.c): complete
 * (when not NULL) gives the full features of the rows its cheap model
 * cannot decide (hb_cascade_run_lazy).  With margins, x holds the raw
 * margins of a linear model over text (hb_bind_row_margins:
 * hb_entry_sparse, never with a cascade), whose class is the one full
 * scoring predicts from its margins; such a model has no trees to skip.
 */
void
hb_classify_lazy(HbCacheEntry *e, const HbCascade *cascade, const double *x,
				 bool margins, size_t n, int32 *out, HbCompleteRows complete,
				 void *arg)
{
	const HbClassBounds *b;

	if (margins)
	{
		Assert(cascade == NULL);
		hb_link_class(e->plan, x, n, out);
		class_stats.rows += n;
		return;
	}
	if (cascade != NULL)
	{
		/* tuned cascade (hbird.cascade): the cheap model's confident rows */
		double	   *cls = palloc(sizeof(double) * Max(n, 1));

		hb_cascade_run_lazy(e->plan, cascade, x, n, HB_CASCADE_CLASS, cls, NULL,
							complete, arg);
		for (size_t i = 0; i < n; i++)
			out[i] = (int32) cls[i];
		pfree(cls);
		return;
	}
	b = hb_early_exit ? class_bounds(e) : NULL;
	if (!hb_early_exit_classes(e->plan, b, x, n, out, &class_stats))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
}

static Datum
predict_class(FunctionCallInfo fcinfo, bool record)
{
	HbCallState *st = hb_call_prepare(fcinfo, 0, false);
	HbCacheEntry *e = st->entry;
	int32		cls;
	instr_time	start;			/* hb_stat_models, as in hb_predict */
	bool		timed = HB_STAT_SAMPLE();

	hb_check_classifier(e, "hb_predict_class");
	if (PG_ARGISNULL(1))
		PG_RETURN_NULL();
	if (timed)
		INSTR_TIME_SET_CURRENT(start);
	/* a linear model over text: margins from the tokens, as hb_predict */
	if (record && hb_entry_sparse(e) && hb_call_cascade(st) == NULL)
	{
		hb_call_load_margins(fcinfo, st, 1, st->scratch);
		hb_classify_lazy(e, NULL, st->scratch, true, 1, &cls, NULL, NULL);
		hb_stat_row(e, timed ? &start : NULL);
		PG_RETURN_INT32(cls);
	}
	if (record)
		hb_call_load_record(fcinfo, st, 1);
	else
		hb_array_row(PG_GETARG_ARRAYTYPE_P(1), e, st->x, e->name);
	if (record && hb_call_cascade(st) != NULL)
	{
		double		c;

		hb_call_cascade_run(st, PG_GETARG_DATUM(1), HB_CASCADE_CLASS, &c);
		cls = (int32) c;
	}
	else
		hb_classify(e, hb_call_cascade(st), st->x, 1, &cls);
	hb_stat_row(e, timed ? &start : NULL);
	PG_RETURN_INT32(cls);
}

Datum
hb_predict_class_record(PG_FUNCTION_ARGS)
{
	return predict_class(fcinfo, true);
}

Datum
hb_predict_class_array(PG_FUNCTION_ARGS)
{
	return predict_class(fcinfo, false);
}

/* ---- hb_predict_class_agg(name, row) -> integer[] ---- */

static void
class_agg_score(HbCacheEntry *e, const HbCascade *cascade, const double *x,
				bool margins, int n, double *out, HbLazy *lazy)
{
	int32	   *cls = palloc(sizeof(int32) * Max(n, 1));

	hb_classify_lazy(e, cascade, x, margins, n, cls, lazy ? hb_lazy_complete : NULL, lazy);
	for (int i = 0; i < n; i++)
		out[i] = cls[i];
	pfree(cls);
}

static const HbAggKind class_agg = {
	"hb_predict_class_agg", hb_check_classifier, class_agg_score, false, INT4OID
};

Datum
hb_predict_class_agg_sfunc(PG_FUNCTION_ARGS)
{
	return hb_agg_sfunc(fcinfo, &class_agg);
}

Datum
hb_predict_class_agg_final(PG_FUNCTION_ARGS)
{
	return hb_agg_final(fcinfo);
}

/* ---- hb_predict_class_batch(name, rowtype, query) -> (class, item) ---- */

typedef struct ClassBatch
{
	HbCacheEntry *entry;
	HbRowsOut  *out;
	bool		items;			/* the rows go out with their classes */
	int32	   *cls;
	HbCascade  *cascade;		/* tuned cascade (hbird.cascade), or NULL */
	HbLazy	   *lazy;			/* rows bound lazily for it, or NULL */
	bool		margins;		/* x holds raw margins (hb_entry_sparse) */
} ClassBatch;

static void
class_batch(void *arg, HbQueryRows *rows, const double *x, Datum *items,
			uint64 n)
{
	ClassBatch *b = arg;
	instr_time	start;			/* hb_stat_models */
	Datum		values[2];
	bool		nulls[2] = {false, !b->items};

	INSTR_TIME_SET_CURRENT(start);
	if (b->lazy)
		hb_lazy_set_rows(b->lazy, items);
	hb_classify_lazy(b->entry, b->cascade, x, b->margins, n, b->cls,
					 b->lazy ? hb_lazy_complete : NULL, b->lazy);
	hb_stat_batch(b->entry, (int64) n, &start, false);
	for (uint64 i = 0; i < n; i++)
	{
		int			col = 0;

		values[col++] = Int32GetDatum(b->cls[i]);
		values[col++] = b->items ? items[i] : (Datum) 0;
		Assert(col == lengthof(values));
		hb_rows_emit(b->out, values, nulls);
	}
}

static void
class_batch_finish(void *arg)
{
	hb_stat_call(((ClassBatch *) arg)->entry);
}

Datum
hb_predict_class_batch(PG_FUNCTION_ARGS)
{
	Oid			rowtype = hb_rowtype_arg(fcinfo, 1);
	HbCallState *st = hb_call_prepare(fcinfo, 0, false);
	ClassBatch *b = palloc0(sizeof(ClassBatch));
	int			batch;

	b->entry = st->entry;
	b->cascade = hb_cascade_for(b->entry, CurrentMemoryContext);
	b->lazy = b->cascade ? hb_lazy_for(b->entry, b->cascade->approx, false, CurrentMemoryContext) : NULL;
	hb_check_classifier(b->entry, "hb_predict_class_batch");
	b->margins = hb_entry_sparse(b->entry) != NULL && b->cascade == NULL;
	batch = hb_batch_rows(b->entry);
	b->cls = palloc_extended(sizeof(int32) * batch, MCXT_ALLOC_HUGE);
	hb_batch_function_run(fcinfo, b->entry, rowtype, 2, batch, b->margins, b->lazy,
						  &b->out, &b->items, class_batch, class_batch_finish, b);
	return (Datum) 0;
}

/* ---- hb_class_stats() ---- */

/* the columns of hb_class_stats(), in order (sql/hbird--*.sql) */
#define HB_CLASS_STATS_COLS 4

Datum
hb_class_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[HB_CLASS_STATS_COLS];
	bool		nulls[HB_CLASS_STATS_COLS] = {0};
	int			col = 0;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (desc->natts != HB_CLASS_STATS_COLS)
		elog(ERROR, "incorrect number of output columns of hb_class_stats");
	values[col++] = Int64GetDatum(class_stats.rows);
	values[col++] = Int64GetDatum(class_stats.rows_early);
	values[col++] = Int64GetDatum(class_stats.trees_scored);
	values[col++] = Int64GetDatum(class_stats.trees_total);
	Assert(col == HB_CLASS_STATS_COLS);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

Datum
hb_class_stats_reset(PG_FUNCTION_ARGS)
{
	memset(&class_stats, 0, sizeof(class_stats));
	PG_RETURN_VOID();
}
