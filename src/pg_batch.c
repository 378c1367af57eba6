/*
 * pg_batch.c
 *	  Batched scoring: the scoring aggregates (hb_predict_agg and
 *	  hb_predict_targets_agg here; hb_predict_class_agg, beside the other
 *	  class functions in pg_classify.c, shares their machinery), the
 *	  hb_predict_batch and hb_predict_targets_batch set-returning
 *	  functions, and hb_compile.
 *
 * Rows are collected into a feature matrix of up to hb_batch_rows() rows and
 * scored in one call of the plan, which then picks the strategy that suits a
 * batch of that size (PTT or GEMM where they win, see exec.c).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "catalog/pg_class.h"
#include "utils/memutils.h"
#include "parser/parse_type.h"
#include "utils/float.h"
#include "utils/typcache.h"

#include "hbird.h"
#include "device.h"

PG_FUNCTION_INFO_V1(hb_predict_agg_sfunc);
PG_FUNCTION_INFO_V1(hb_predict_agg_final);
PG_FUNCTION_INFO_V1(hb_predict_batch);
PG_FUNCTION_INFO_V1(hb_predict_targets_agg_sfunc);
PG_FUNCTION_INFO_V1(hb_predict_targets_agg_final);
PG_FUNCTION_INFO_V1(hb_predict_targets_batch);
PG_FUNCTION_INFO_V1(hb_compile);

/* ---- hb_predict_agg(name, row) -> float8[], and its class and targets forms ---- */

struct HbAggState
{
	const HbAggKind *kind;
	HbCacheEntry *entry;		/* pinned for the state's lifetime */
	int			batch;			/* rows per batch */
	int			cap;			/* rows the buffers hold now */
	int			nbuf;			/* rows waiting in x */
	bool		margins;		/* x holds raw margins (e->sparse) */
	int			width;			/* doubles per row of x */
	double	   *x;				/* cap x width */
	double	   *scratch;		/* cap x n_outputs */
	bool	   *bnull;			/* cap: the buffered row was NULL */
	double	   *preds;			/* every prediction so far, in input order */
	bool	   *pnull;			/* per prediction: its row was NULL */
	bool		any_null;
	int64		npreds;
	int64		pcap;
	int			pw;				/* doubles per prediction */
	HbCascade  *cascade;		/* tuned cascade (hbird.cascade), or NULL */
	HbLazy	   *lazy;			/* rows bound lazily for it (pg_lazy.c) */
	Datum	   *rows;			/* lazy: copies of the buffered rows, 0 for
								 * NULL; freed per batch (no context per
								 * group: see pg_topk.c's heap_init) */
	bool		scored;			/* the rows come scored (pg_scan_plan.c) */
};

/* Room for n more predictions. */
static void
agg_grow(HbAggState *s, int n)
{
	if (s->npreds + n > s->pcap)
	{
		int64		cap = Max(s->pcap * 2, s->npreds + n);

		if ((Size) cap * s->pw * sizeof(double) > MaxAllocHugeSize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("hb_predict_agg cannot hold more than %zu predictions",
							MaxAllocHugeSize / sizeof(double) / s->pw)));
		s->preds = s->preds ?
			repalloc_huge(s->preds, cap * s->pw * sizeof(double)) :
			MemoryContextAllocHuge(GetMemoryChunkContext(s), cap * s->pw * sizeof(double));
		s->pnull = s->pnull ?
			repalloc_huge(s->pnull, cap * sizeof(bool)) :
			MemoryContextAllocHuge(GetMemoryChunkContext(s), cap * sizeof(bool));
		s->pcap = cap;
	}
}

/*
 * Score n rows of x (raw margins when margins) into out: through the tuned
 * cascade when there is one (its rows completed through lazy, when given),
 * else every row with the plan, its targets or its values.  scratch holds
 * n x n_outputs doubles.
 */
static void
score_rows(HbCacheEntry *e, HbCascade *cascade, HbLazy *lazy, bool targets,
		   bool margins, const double *x, size_t n, double *scratch,
		   double *out)
{
	if (cascade)
		hb_cascade_run_lazy(e->plan, cascade, x, n, HB_CASCADE_PREDICT, out,
							NULL, lazy ? hb_lazy_complete : NULL, lazy);
	else if (targets && margins)
		hb_link_targets(e->plan, x, n, out);
	else if (targets)
		hb_plan_targets(e->plan, x, n, scratch, out);
	else if (margins)
		hb_link_predict(e->plan, x, n, out);
	else
		hb_plan_predict(e->plan, x, n, scratch, out);
}

static void
agg_flush(HbAggState *s)
{
	instr_time	start;			/* hb_stat_models */
	double	   *out;

	if (s->nbuf == 0)
		return;
	agg_grow(s, s->nbuf);
	INSTR_TIME_SET_CURRENT(start);
	out = s->preds + s->npreds * s->pw;
	if (s->lazy)
		hb_lazy_set_rows(s->lazy, s->rows);
	if (s->kind->score)
		s->kind->score(s->entry, s->cascade, s->x, s->margins, s->nbuf, out,
					   s->lazy);
	else
		score_rows(s->entry, s->cascade, s->lazy, s->kind->targets,
				   s->margins, s->x, s->nbuf, s->scratch, out);
	hb_stat_batch(s->entry, s->nbuf, &start, false);
	for (int i = 0; i < s->nbuf; i++)
		s->pnull[s->npreds + i] = s->bnull[i];
	s->npreds += s->nbuf;
	if (s->lazy)
		for (int i = 0; i < s->nbuf; i++)
			if (s->rows[i] != (Datum) 0)
				pfree(DatumGetPointer(s->rows[i]));
	s->nbuf = 0;
}

/*
 * Buffers grow with the group up to a full batch: many small groups (a hash
 * aggregate holds all of them at once) must not each cost a whole batch.
 */
static void
agg_reserve(HbAggState *s)
{
	int			cap;
	MemoryContext cxt = GetMemoryChunkContext(s);

	if (s->nbuf < s->cap)
		return;
	cap = Min(s->batch, Max(16, s->cap * 2));
	if (s->x == NULL)
	{
		s->x = MemoryContextAllocHuge(cxt, sizeof(double) * cap * s->width);
		s->scratch = MemoryContextAllocHuge(cxt, sizeof(double) * cap * s->entry->n_outputs);
		s->bnull = MemoryContextAllocHuge(cxt, sizeof(bool) * cap);
	}
	else
	{
		s->x = repalloc_huge(s->x, sizeof(double) * cap * s->width);
		s->scratch = repalloc_huge(s->scratch, sizeof(double) * cap * s->entry->n_outputs);
		s->bnull = repalloc_huge(s->bnull, sizeof(bool) * cap);
	}
	if (s->lazy)
		s->rows = s->rows ? repalloc_huge(s->rows, sizeof(Datum) * cap) :
			MemoryContextAllocHuge(cxt, sizeof(Datum) * cap);
	s->cap = cap;
}

/*
 * A new group's state, its model resolved and checked as the aggregate's
 * first call does it.
 */
static HbAggState *
agg_start(FunctionCallInfo fcinfo, const HbAggKind *kind, MemoryContext aggcxt,
		  HbCallState *st)
{
	HbAggState *s = MemoryContextAllocZero(aggcxt, sizeof(HbAggState));

	s->kind = kind;
	s->entry = st->entry;
	hb_cache_pin_for(st->entry, aggcxt);
	s->batch = hb_batch_rows(st->entry);
	s->pw = kind->targets ? st->entry->n_outputs : 1;
	return s;
}

/*
 * The batching scan (pg_scan_plan.c) scores the rows of an aggregate over a
 * scan itself and hands the aggregate each row's prediction instead of the
 * row (the argument's type says so: float8, integer for classes, float8[]
 * for targets): the group only keeps them, in input order.  The scan did
 * the model's checks and counted the rows; the group counts its call.
 */
static Datum
agg_keep_scored(FunctionCallInfo fcinfo, const HbAggKind *kind,
				MemoryContext aggcxt, HbAggState *s)
{
	if (s == NULL)
	{
		HbCallState *st = hb_call_prepare(fcinfo, 1, false);

		kind->check(st->entry, kind->fn);
		s = agg_start(fcinfo, kind, aggcxt, st);
		s->scored = true;
	}
	agg_grow(s, 1);
	s->pnull[s->npreds] = PG_ARGISNULL(2);
	if (PG_ARGISNULL(2))
		s->any_null = true;
	else if (kind->targets)
	{
		ArrayType  *a = PG_GETARG_ARRAYTYPE_P(2);

		if (ARR_NDIM(a) != 1 || ARR_HASNULL(a) || ARR_ELEMTYPE(a) != FLOAT8OID ||
			ARR_DIMS(a)[0] != s->pw)
			elog(ERROR, "%s got a row's targets of an unexpected shape", kind->fn);
		memcpy(s->preds + s->npreds * s->pw, ARR_DATA_PTR(a), sizeof(double) * s->pw);
	}
	else if (kind->elemtype == INT4OID)
		s->preds[s->npreds] = (double) PG_GETARG_INT32(2);
	else
		s->preds[s->npreds] = PG_GETARG_FLOAT8(2);
	s->npreds++;
	PG_RETURN_POINTER(s);
}

/* A row's prediction, class or targets, where the aggregate takes a row. */
static bool
is_scored_arg(Oid type)
{
	return type == FLOAT8OID || type == INT4OID || type == FLOAT8ARRAYOID;
}

/*
 * The transition function of a scoring aggregate (name, row): the row is
 * bound into the group's batch, and a full batch is scored.
 */
Datum
hb_agg_sfunc(FunctionCallInfo fcinfo, const HbAggKind *kind)
{
	const char *fn = kind->fn;
	MemoryContext aggcxt;
	HbAggState *s;
	HbCallState *st;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "%s called in non-aggregate context", fn);
	s = PG_ARGISNULL(0) ? NULL : (HbAggState *) PG_GETARG_POINTER(0);
	if (s ? s->scored : is_scored_arg(get_fn_expr_argtype(fcinfo->flinfo, 2)))
		return agg_keep_scored(fcinfo, kind, aggcxt, s);

	st = hb_call_prepare(fcinfo, 1, false);
	kind->check(st->entry, fn);
	if (s == NULL)
	{
		s = agg_start(fcinfo, kind, aggcxt, st);
		s->cascade = kind->targets ? NULL : hb_cascade_for(st->entry, aggcxt);
		if (s->cascade)
			s->lazy = hb_lazy_for(st->entry, s->cascade->approx, false, aggcxt);
		/* a linear model over text buffers margins, not 20,000-wide rows */
		s->margins = hb_entry_sparse(st->entry) != NULL && s->cascade == NULL;
		s->width = s->margins ? st->entry->n_outputs : st->entry->n_features;
		if (s->margins)
			s->batch = HB_MAX_BATCH_ROWS;
	}
	else if (!hb_cache_same(s->entry, st->entry))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must score one model per group", fn)));

	agg_reserve(s);
	/*
	 * A NULL row (the unmatched side of an outer join) has no prediction,
	 * as hb_predict gives it none; it still takes its place in the order,
	 * scored as all-missing only to keep the batch dense.
	 */
	s->bnull[s->nbuf] = PG_ARGISNULL(2);
	if (s->bnull[s->nbuf])
		s->any_null = true;
	if (s->margins)
	{
		double	   *m = s->x + (size_t) s->nbuf * s->width;

		if (PG_ARGISNULL(2))
			hb_sparse_linear_missing(s->entry->sparse, m);
		else
			hb_call_load_margins(fcinfo, st, 2, m);
	}
	else if (PG_ARGISNULL(2))
	{
		for (int f = 0; f < s->entry->n_features; f++)
			s->x[(size_t) s->nbuf * s->entry->n_features + f] = get_float8_nan();
		if (s->lazy)
			s->rows[s->nbuf] = (Datum) 0;
	}
	else
	{
		st->cur->lazy = s->lazy;
		hb_call_load_record(fcinfo, st, 2);
		memcpy(s->x + (size_t) s->nbuf * s->entry->n_features, st->x,
			   sizeof(double) * s->entry->n_features);
		if (s->lazy)
		{
			MemoryContext old = MemoryContextSwitchTo(aggcxt);

			s->rows[s->nbuf] = datumCopy(PG_GETARG_DATUM(2), false, -1);
			MemoryContextSwitchTo(old);
		}
	}
	if (++s->nbuf == s->batch)
		agg_flush(s);
	PG_RETURN_POINTER(s);
}

/* The group's predictions (or class indexes) in input order. */
Datum
hb_agg_final(FunctionCallInfo fcinfo)
{
	HbAggState *s;
	Datum	   *d;
	bool		classes;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = (HbAggState *) PG_GETARG_POINTER(0);
	classes = s->kind->elemtype == INT4OID;
	agg_flush(s);
	hb_stat_call(s->entry);
	d = palloc_extended(sizeof(Datum) * Max(s->npreds, 1), MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < s->npreds; i++)
		d[i] = s->pnull[i] ? (Datum) 0 :
			classes ? Int32GetDatum((int32) s->preds[i]) :
			Float8GetDatum(s->preds[i]);
	{
		int			dims[1] = {(int) s->npreds};
		int			lbs[1] = {1};

		if (classes)
			PG_RETURN_ARRAYTYPE_P(construct_md_array(d, s->any_null ? s->pnull : NULL,
													 1, dims, lbs, INT4OID,
													 sizeof(int32), true, TYPALIGN_INT));
		PG_RETURN_ARRAYTYPE_P(construct_md_array(d, s->any_null ? s->pnull : NULL,
												 1, dims, lbs, FLOAT8OID,
												 sizeof(float8), FLOAT8PASSBYVAL,
												 TYPALIGN_DOUBLE));
	}
}

static const HbAggKind predict_agg = {
	"hb_predict_agg", hb_check_single_target, NULL, false, FLOAT8OID
};
static const HbAggKind targets_agg = {
	"hb_predict_targets_agg", hb_check_regression, NULL, true, FLOAT8OID
};

Datum
hb_predict_agg_sfunc(PG_FUNCTION_ARGS)
{
	return hb_agg_sfunc(fcinfo, &predict_agg);
}

Datum
hb_predict_agg_final(PG_FUNCTION_ARGS)
{
	return hb_agg_final(fcinfo);
}

Datum
hb_predict_targets_agg_sfunc(PG_FUNCTION_ARGS)
{
	return hb_agg_sfunc(fcinfo, &targets_agg);
}

/* The group's targets, one row of n_outputs per input row (NULLs for a NULL row). */
Datum
hb_predict_targets_agg_final(PG_FUNCTION_ARGS)
{
	HbAggState *s;
	Datum	   *d;
	bool	   *nulls;
	int			dims[2];
	int			lbs[2] = {1, 1};
	int			pw;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = (HbAggState *) PG_GETARG_POINTER(0);
	agg_flush(s);
	hb_stat_call(s->entry);
	pw = s->pw;
	if (s->npreds == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(FLOAT8OID));
	d = palloc_extended(sizeof(Datum) * s->npreds * pw, MCXT_ALLOC_HUGE);
	nulls = palloc_extended(sizeof(bool) * s->npreds * pw, MCXT_ALLOC_HUGE);
	for (int64 i = 0; i < s->npreds; i++)
		for (int j = 0; j < pw; j++)
		{
			nulls[i * pw + j] = s->pnull[i];
			d[i * pw + j] = s->pnull[i] ? (Datum) 0 : Float8GetDatum(s->preds[i * pw + j]);
		}
	dims[0] = (int) s->npreds;
	dims[1] = pw;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(d, s->any_null ? nulls : NULL, 2, dims, lbs,
											 FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
											 TYPALIGN_DOUBLE));
}

/* ---- hb_predict_batch(name, rowtype, query) -> (score, item) ---- */

typedef struct PredictBatch
{
	HbCacheEntry *entry;
	HbRowsOut  *out;
	bool		targets;		/* hb_predict_targets_batch */
	bool		items;			/* the rows go out with their scores */
	double	   *scratch;
	double	   *pred;
	HbCascade  *cascade;
	HbLazy	   *lazy;			/* rows bound lazily for the cascade */
	bool		margins;		/* x holds raw margins (e->sparse) */
} PredictBatch;

static void
predict_batch(void *arg, HbQueryRows *rows, const double *x, Datum *items,
			  uint64 n)
{
	PredictBatch *b = arg;
	instr_time	start;			/* hb_stat_models */
	Datum		values[2];
	bool		nulls[2] = {false, !b->items};

	INSTR_TIME_SET_CURRENT(start);
	/* the lazy rows are the cascade's (there is none for targets) */
	if (b->lazy)
		hb_lazy_set_rows(b->lazy, items);
	score_rows(b->entry, b->cascade, b->lazy, b->targets, b->margins, x, n,
			   b->scratch, b->pred);
	hb_stat_batch(b->entry, (int64) n, &start, false);
	if (b->targets)
	{
		int			nt = b->entry->n_outputs;

		for (uint64 i = 0; i < n; i++)
		{
			Datum	   *d = palloc(sizeof(Datum) * nt);
			int			col = 0;

			for (int j = 0; j < nt; j++)
				d[j] = Float8GetDatum(b->pred[i * nt + j]);
			values[col++] = PointerGetDatum(construct_array(d, nt, FLOAT8OID, sizeof(float8),
															FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			values[col++] = b->items ? items[i] : (Datum) 0;
			Assert(col == lengthof(values));
			hb_rows_emit(b->out, values, nulls);
		}
		return;
	}
	for (uint64 i = 0; i < n; i++)
	{
		int			col = 0;

		values[col++] = Float8GetDatum(b->pred[i]);
		values[col++] = b->items ? items[i] : (Datum) 0;
		Assert(col == lengthof(values));
		hb_rows_emit(b->out, values, nulls);
	}
}

static void
predict_batch_finish(void *arg)
{
	hb_stat_call(((PredictBatch *) arg)->entry);
}

static Datum
predict_batch_call(FunctionCallInfo fcinfo, bool targets)
{
	Oid			rowtype = hb_rowtype_arg(fcinfo, 1);
	HbCallState *st = hb_call_prepare(fcinfo, 0, false);
	PredictBatch *b = palloc0(sizeof(PredictBatch));
	int			batch;

	b->entry = st->entry;
	b->targets = targets;
	if (targets)
		hb_check_regression(b->entry, "hb_predict_targets_batch");
	else
		hb_check_single_target(b->entry, "hb_predict_batch");
	batch = hb_batch_rows(b->entry);
	b->scratch = palloc_extended(sizeof(double) * batch * b->entry->n_outputs, MCXT_ALLOC_HUGE);
	b->pred = palloc_extended(sizeof(double) * batch * (targets ? b->entry->n_outputs : 1),
							  MCXT_ALLOC_HUGE);
	b->cascade = targets ? NULL : hb_cascade_for(b->entry, CurrentMemoryContext);
	b->lazy = b->cascade ? hb_lazy_for(b->entry, b->cascade->approx, false, CurrentMemoryContext) : NULL;
	b->margins = hb_entry_sparse(b->entry) != NULL && b->cascade == NULL;
	hb_batch_function_run(fcinfo, b->entry, rowtype, 2, batch, b->margins, b->lazy,
						  &b->out, &b->items, predict_batch, predict_batch_finish, b);
	return (Datum) 0;
}

Datum
hb_predict_batch(PG_FUNCTION_ARGS)
{
	return predict_batch_call(fcinfo, false);
}

/* ---- hb_predict_targets_batch(name, rowtype, query) -> (targets, item) ---- */

Datum
hb_predict_targets_batch(PG_FUNCTION_ARGS)
{
	return predict_batch_call(fcinfo, true);
}

/* ---- hb_compile(name, batch_size) ---- */

/* the columns of hb_compile(), in order (sql/hbird--*.sql) */
#define HB_COMPILE_COLS 8

Datum
hb_compile(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	HbCallState *st = hb_call_prepare(fcinfo, 0, false);
	HbCacheEntry *e = st->entry;
	HbPlanOp	ops[128];
	int			batch;
	int			n;
	bool		on_gpu;
	HbSparseLinear *sparse = hb_entry_sparse(e);	/* linear over text */

	if (PG_ARGISNULL(1))
		batch = hb_batch_rows(e);
	else
	{
		batch = PG_GETARG_INT32(1);
		if (batch < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch size must be positive")));
	}
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != HB_COMPILE_COLS)
		elog(ERROR, "incorrect number of output columns of hb_compile");
	if (sparse)
	{
		/* the sparse scorer's ops, then the plan's link (its last op) */
		HbPlanOp	plan_ops[8];
		int			np = hb_plan_ops(e->plan, batch, plan_ops, lengthof(plan_ops));

		n = hb_sparse_linear_ops(sparse, batch, ops, lengthof(ops) - 1);
		if (np > 0)
			ops[n++] = plan_ops[np - 1];
	}
	else
		n = hb_plan_ops(e->plan, batch, ops, lengthof(ops));
	{
		/* where a batch of this size runs; mode gpu without one is an error */
		HbError		derr = {0};

		on_gpu = hb_device_wanted(e->plan, batch, &derr);
		if (derr.code != HB_OK)
			hb_device_error_hook(&derr);
	}
	for (int i = 0; i < n; i++)
	{
		Datum		values[HB_COMPILE_COLS];
		bool		nulls[HB_COMPILE_COLS] = {0};
		int			col = 0;

		values[col++] = Int32GetDatum(i + 1);
		values[col++] = CStringGetTextDatum(ops[i].op);
		values[col++] = CStringGetTextDatum(sparse ? "sparse text" :
											hb_strategy_name(ops[i].strategy));
		values[col++] = CStringGetTextDatum(ops[i].in_shape);
		values[col++] = CStringGetTextDatum(ops[i].out_shape);
		values[col++] = Int64GetDatum(ops[i].param_bytes);
		nulls[col] = ops[i].flops < 0;	/* depends on the documents */
		values[col++] = Float8GetDatum(ops[i].flops);
		values[col++] = CStringGetTextDatum(on_gpu ? "gpu" : "cpu");
		Assert(col == HB_COMPILE_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
