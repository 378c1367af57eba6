/*
 * pg_batch.c
 *	  Batched scoring: the hb_predict_agg aggregate, the hb_predict_batch
 *	  set-returning function, and hb_compile.
 *
 * Rows are collected into a feature matrix of up to hb_batch_rows() rows and
 * scored in one call of the plan, which then picks the strategy that suits a
 * batch of that size (PTT or GEMM where they win, see plan.c).
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
PG_FUNCTION_INFO_V1(hb_predict_class_agg_sfunc);
PG_FUNCTION_INFO_V1(hb_predict_class_agg_final);
PG_FUNCTION_INFO_V1(hb_predict_batch);
PG_FUNCTION_INFO_V1(hb_predict_targets_agg_sfunc);
PG_FUNCTION_INFO_V1(hb_predict_targets_agg_final);
PG_FUNCTION_INFO_V1(hb_predict_targets_batch);
PG_FUNCTION_INFO_V1(hb_compile);


#define HB_MAX_BATCH_ROWS 65536

/*
 * Wide rows (featurized text: a thousand features and more) are written one
 * by one into the batch and then read again for every tree, so the batch
 * has to stay in cache: a forest over 1,027 features scored 100,000 rows in
 * 2.0 s with 64 MB batches, 0.86 s with 1 MB and 0.80 s with 256 kB (row by
 * row: 1.8 s).  Narrow rows keep the big batches the strategies and the
 * device are tuned for.
 */
#define HB_WIDE_ROW_BYTES	(2 * 1024)
#define HB_WIDE_BATCH_BYTES (512 * 1024)
#define HB_WIDE_MIN_ROWS	64

/*
 * Rows per batch: as many as fit hbird.batch_memory with the inputs, the
 * margins and the outputs of each row, capped where bigger batches stop
 * paying (the strategies block rows internally).
 */
int
hb_batch_rows(const HbCacheEntry *e)
{
	double		per_row = sizeof(double) *
		((double) e->n_features + 2.0 * Max(e->n_outputs, 1) + Max(e->n_classes, 1));
	double		rows = (double) hb_batch_memory_kb * 1024.0 / per_row;

	if (rows > HB_MAX_BATCH_ROWS)
		rows = HB_MAX_BATCH_ROWS;
	if (per_row > HB_WIDE_ROW_BYTES)
		rows = Min(rows, Max(HB_WIDE_MIN_ROWS, HB_WIDE_BATCH_BYTES / per_row));
	return rows < 1 ? 1 : (int) rows;
}

/* ---- hb_predict_agg(name, row) -> float8[] ---- */

typedef struct HbAggState
{
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
	bool		classes;		/* hb_predict_class_agg: class indexes */
	bool		targets;		/* hb_predict_targets_agg: pw values a row */
	int			pw;				/* doubles per prediction */
	HbCascade  *cascade;		/* tuned cascade (hbird.cascade), or NULL */
	HbLazy	   *lazy;			/* rows bound lazily for it (pg_lazy.c) */
	Datum	   *rows;			/* lazy: copies of the buffered rows, 0 for
								 * NULL; freed per batch (no context per
								 * group: see pg_topk.c's heap_init) */
} HbAggState;

static void
agg_flush(HbAggState *s)
{
	instr_time	start;			/* hb_stat_models */

	if (s->nbuf == 0)
		return;
	if (s->npreds + s->nbuf > s->pcap)
	{
		int64		cap = Max(s->pcap * 2, s->npreds + s->nbuf);

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
	INSTR_TIME_SET_CURRENT(start);
	if (s->classes)
	{
		int32	   *cls = palloc(sizeof(int32) * s->nbuf);

		if (s->lazy)
			hb_lazy_set_rows(s->lazy, s->rows);
		hb_classify_lazy(s->entry, s->cascade, s->x, s->nbuf, cls, s->lazy);
		for (int i = 0; i < s->nbuf; i++)
			s->preds[s->npreds + i] = cls[i];
		pfree(cls);
	}
	else if (s->cascade)
	{
		if (s->lazy)
			hb_lazy_set_rows(s->lazy, s->rows);
		hb_cascade_run_lazy(s->entry->plan, s->cascade, s->x, s->nbuf,
							HB_CASCADE_PREDICT, s->preds + s->npreds, NULL,
							s->lazy ? hb_lazy_complete : NULL, s->lazy);
	}
	else if (s->targets && s->margins)
		hb_link_targets(s->entry->plan, s->x, s->nbuf, s->preds + s->npreds * s->pw);
	else if (s->targets)
		hb_plan_targets(s->entry->plan, s->x, s->nbuf, s->scratch,
						s->preds + s->npreds * s->pw);
	else if (s->margins)
		hb_link_predict(s->entry->plan, s->x, s->nbuf, s->preds + s->npreds);
	else
		hb_plan_predict(s->entry->plan, s->x, s->nbuf, s->scratch,
						s->preds + s->npreds);
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

typedef enum AggKind
{
	AGG_PREDICT,
	AGG_CLASS,
	AGG_TARGETS
} AggKind;

static Datum
agg_sfunc(FunctionCallInfo fcinfo, AggKind kind)
{
	bool		classes = kind == AGG_CLASS;
	const char *fn = kind == AGG_CLASS ? "hb_predict_class_agg" :
		kind == AGG_TARGETS ? "hb_predict_targets_agg" : "hb_predict_agg";
	MemoryContext aggcxt;
	HbAggState *s;
	HbCallState *st;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "%s called in non-aggregate context", fn);

	st = hb_call_prepare(fcinfo, 1, false);
	if (classes)
		hb_check_classifier(st->entry, fn);
	else if (kind == AGG_TARGETS)
		hb_check_regression(st->entry, fn);
	else
		hb_check_single_target(st->entry, fn);
	s = PG_ARGISNULL(0) ? NULL : (HbAggState *) PG_GETARG_POINTER(0);
	if (s == NULL)
	{
		s = MemoryContextAllocZero(aggcxt, sizeof(HbAggState));
		s->entry = st->entry;
		hb_cache_pin_for(st->entry, aggcxt);
		s->batch = hb_batch_rows(st->entry);
		s->classes = classes;
		s->targets = kind == AGG_TARGETS;
		s->pw = s->targets ? st->entry->n_outputs : 1;
		s->cascade = s->targets ? NULL : hb_cascade_for(st->entry, aggcxt);
		if (s->cascade)
			s->lazy = hb_lazy_for(st->entry, s->cascade->approx, aggcxt);
		/* a linear model over text buffers margins, not 20,000-wide rows */
		s->margins = st->entry->sparse && !classes && s->cascade == NULL;
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

Datum
hb_predict_agg_sfunc(PG_FUNCTION_ARGS)
{
	return agg_sfunc(fcinfo, AGG_PREDICT);
}

Datum
hb_predict_class_agg_sfunc(PG_FUNCTION_ARGS)
{
	return agg_sfunc(fcinfo, AGG_CLASS);
}

Datum
hb_predict_targets_agg_sfunc(PG_FUNCTION_ARGS)
{
	return agg_sfunc(fcinfo, AGG_TARGETS);
}

/* The group's predictions (or class indexes) in input order. */
static Datum
agg_final(FunctionCallInfo fcinfo, bool classes)
{
	HbAggState *s;
	Datum	   *d;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	s = (HbAggState *) PG_GETARG_POINTER(0);
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

Datum
hb_predict_agg_final(PG_FUNCTION_ARGS)
{
	return agg_final(fcinfo, false);
}

Datum
hb_predict_class_agg_final(PG_FUNCTION_ARGS)
{
	return agg_final(fcinfo, true);
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

/*
 * The query argument argno of a batched entry point; NULL means the
 * relation behind the row type.
 */
char *
hb_query_arg(FunctionCallInfo fcinfo, int argno, Oid rowtype)
{
	Oid			relid;

	if (!PG_ARGISNULL(argno))
		return text_to_cstring(PG_GETARG_TEXT_PP(argno));
	relid = typeidTypeRelid(rowtype);

	/* a standalone composite type (CREATE TYPE ... AS) has no rows */
	if (!OidIsValid(relid) || get_rel_relkind(relid) == RELKIND_COMPOSITE_TYPE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("type %s is not the row type of a table", format_type_be(rowtype)),
				 errhint("Pass a query that returns rows of that type, as in (..., NULL::%s, 'SELECT ... FROM ...').",
						 format_type_be(rowtype))));
	return psprintf("SELECT * FROM %s",
					quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
											   get_rel_name(relid)));
}

Oid
hb_rowtype_arg(FunctionCallInfo fcinfo, int argno)
{
	Oid			t = get_fn_expr_argtype(fcinfo->flinfo, argno);

	if (!OidIsValid(t) || !type_is_rowtype(t) || t == RECORDOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("row type argument must be a named composite type, such as NULL::my_table")));
	return t;
}

/*
 * Open a read-only cursor over the caller's query (SPI connected).  It has
 * to be one SELECT that only reads: said up front and in those words,
 * rather than as the "not allowed in a non-volatile function" that SPI's
 * read-only mode would raise halfway.  what names the query in errors
 * ("query", "sample query").
 */
Portal
hb_open_query(const char *query, const char *what)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);
	List	   *sources;
	ListCell   *lc;

	if (plan == NULL)
		elog(ERROR, "could not prepare %s: %s", what, SPI_result_code_string(SPI_result));
	sources = SPI_plan_get_plan_sources(plan);
	if (list_length(sources) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a single SELECT that returns rows", what),
				 errdetail("It has %d statements.", list_length(sources))));
	foreach(lc, ((CachedPlanSource *) linitial(sources))->query_list)
	{
		Query	   *q = lfirst_node(Query, lc);
		const char *tag = GetCommandTagName(((CachedPlanSource *) linitial(sources))->commandTag);

		if (q->commandType != CMD_SELECT || q->utilityStmt != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be a SELECT that only reads, not %s", what, tag)));
		if (q->hasModifyingCTE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be a SELECT that only reads", what),
					 errdetail("Its WITH clause holds a data-modifying statement.")));
		if (q->rowMarks != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be a SELECT that only reads", what),
					 errdetail("It locks rows (FOR UPDATE / FOR SHARE).")));
	}
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be a single SELECT that returns rows", what)));
	return SPI_cursor_open(NULL, plan, NULL, NULL, true);
}

/*
 * Open the query and check that its rows are of the wanted row type (same
 * column types by position, as a function returning that type would
 * need).  Returns the conversion map (NULL if none needed).
 */
static Portal
open_cursor(const char *query, TupleDesc rowdesc, TupleConversionMap **map)
{
	Portal		portal = hb_open_query(query, "query");

	*map = convert_tuples_by_position(portal->tupDesc, rowdesc,
									  gettext_noop("query does not return rows of the given row type"));
	return portal;
}

/*
 * Run query (rows of type rowtype) through a cursor, batch rows at a
 * time: each batch's rows are bound to model e's features into x and handed
 * to fn, with the rows themselves as composite datums of the row type.  A
 * batch's memory is freed before the next one, so memory is O(batch).
 */
static void
scan_batches(FunctionCallInfo fcinfo, HbCacheEntry *e, const char *query,
			 Oid rowtype, int batch, bool margins, HbBatchFn fn, void *arg,
			 const HbLazy *lazy)
{
	TupleDesc	rowdesc = lookup_rowtype_tupdesc_copy(rowtype, -1);
	MemoryContext batch_cxt;
	Portal		portal;
	TupleConversionMap *map;
	HbBinding	bind;
	double	   *x;
	int			width = margins ? e->n_outputs : e->n_features;

	Assert(!margins || e->sparse != NULL);
	x = palloc_extended(sizeof(double) * batch * width, MCXT_ALLOC_HUGE);
	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "hbird batch",
									  ALLOCSET_DEFAULT_SIZES);
	/* features bind by the names of the row type's columns */
	hb_bind_desc(&bind, e, rowdesc, fcinfo->flinfo->fn_mcxt, e->name);
	bind.lazy = lazy;

	SPI_connect();
	portal = open_cursor(query, rowdesc, &map);
	for (;;)
	{
		MemoryContext old;
		Datum	   *items;
		uint64		n;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, batch);
		n = SPI_processed;
		if (n == 0)
			break;
		old = MemoryContextSwitchTo(batch_cxt);
		items = palloc(sizeof(Datum) * n);
		for (uint64 i = 0; i < n; i++)
		{
			HeapTuple	tup = map ? execute_attr_map_tuple(SPI_tuptable->vals[i], map) :
				SPI_tuptable->vals[i];

			if (margins)
				hb_bind_tuple_margins(&bind, e, tup, x + i * width);
			else
				hb_bind_tuple(&bind, e, tup, x + i * width);
			items[i] = heap_copy_tuple_as_datum(tup, rowdesc);
		}
		fn(arg, x, items, n);
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_cxt);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	SPI_finish();
	MemoryContextDelete(batch_cxt);
	pfree(x);
}

void
hb_scan_batches(FunctionCallInfo fcinfo, HbCacheEntry *e, const char *query,
				Oid rowtype, int batch, HbBatchFn fn, void *arg,
				const HbLazy *lazy)
{
	scan_batches(fcinfo, e, query, rowtype, batch, false, fn, arg, lazy);
}

void
hb_scan_batches_margins(FunctionCallInfo fcinfo, HbCacheEntry *e,
						const char *query, Oid rowtype, int batch,
						HbBatchFn fn, void *arg)
{
	scan_batches(fcinfo, e, query, rowtype, batch, true, fn, arg, NULL);
}

typedef struct PredictBatch
{
	HbCacheEntry *entry;
	ReturnSetInfo *rsinfo;
	bool		targets;		/* hb_predict_targets_batch */
	double	   *scratch;
	double	   *pred;
	HbCascade  *cascade;
	HbLazy	   *lazy;			/* rows bound lazily for the cascade */
	bool		margins;		/* x holds raw margins (e->sparse) */
} PredictBatch;

static void
predict_batch(void *arg, const double *x, Datum *items, uint64 n)
{
	PredictBatch *b = arg;
	instr_time	start;			/* hb_stat_models */

	INSTR_TIME_SET_CURRENT(start);
	if (b->targets)
	{
		int			nt = b->entry->n_outputs;

		if (b->margins)
			hb_link_targets(b->entry->plan, x, n, b->pred);
		else
			hb_plan_targets(b->entry->plan, x, n, b->scratch, b->pred);
		hb_stat_batch(b->entry, (int64) n, &start, false);
		for (uint64 i = 0; i < n; i++)
		{
			Datum		values[2];
			bool		nulls[2] = {false, false};
			Datum	   *d = palloc(sizeof(Datum) * nt);

			for (int j = 0; j < nt; j++)
				d[j] = Float8GetDatum(b->pred[i * nt + j]);
			values[0] = PointerGetDatum(construct_array(d, nt, FLOAT8OID, sizeof(float8),
														FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			values[1] = items[i];
			tuplestore_putvalues(b->rsinfo->setResult, b->rsinfo->setDesc, values, nulls);
		}
		return;
	}
	if (b->cascade)
	{
		if (b->lazy)
			hb_lazy_set_rows(b->lazy, items);
		hb_cascade_run_lazy(b->entry->plan, b->cascade, x, n, HB_CASCADE_PREDICT,
							b->pred, NULL, b->lazy ? hb_lazy_complete : NULL,
							b->lazy);
	}
	else if (b->margins)
		hb_link_predict(b->entry->plan, x, n, b->pred);
	else
		hb_plan_predict(b->entry->plan, x, n, b->scratch, b->pred);
	hb_stat_batch(b->entry, (int64) n, &start, false);
	for (uint64 i = 0; i < n; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Float8GetDatum(b->pred[i]);
		values[1] = items[i];
		tuplestore_putvalues(b->rsinfo->setResult, b->rsinfo->setDesc,
							 values, nulls);
	}
}

static Datum
predict_batch_call(FunctionCallInfo fcinfo, bool targets)
{
	Oid			rowtype = hb_rowtype_arg(fcinfo, 1);
	HbCallState *st = hb_call_prepare(fcinfo, 0, false);
	PredictBatch b;
	char	   *query;
	int			batch;

	b.entry = st->entry;
	b.targets = targets;
	if (targets)
		hb_check_regression(b.entry, "hb_predict_targets_batch");
	else
		hb_check_single_target(b.entry, "hb_predict_batch");
	b.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	InitMaterializedSRF(fcinfo, 0);
	query = hb_query_arg(fcinfo, 2, rowtype);
	batch = hb_batch_rows(b.entry);
	b.scratch = palloc_extended(sizeof(double) * batch * b.entry->n_outputs, MCXT_ALLOC_HUGE);
	b.pred = palloc_extended(sizeof(double) * batch * (targets ? b.entry->n_outputs : 1),
							 MCXT_ALLOC_HUGE);
	b.cascade = targets ? NULL : hb_cascade_for(b.entry, CurrentMemoryContext);
	b.lazy = b.cascade ? hb_lazy_for(b.entry, b.cascade->approx, CurrentMemoryContext) : NULL;
	b.margins = b.entry->sparse != NULL && b.cascade == NULL;
	if (b.margins)
		hb_scan_batches_margins(fcinfo, b.entry, query, rowtype, batch,
								predict_batch, &b);
	else
		hb_scan_batches(fcinfo, b.entry, query, rowtype, batch, predict_batch, &b,
						b.lazy);
	hb_stat_call(b.entry);
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
		Datum		values[8];
		bool		nulls[8] = {0};

		values[0] = Int32GetDatum(i + 1);
		values[1] = CStringGetTextDatum(ops[i].op);
		values[2] = CStringGetTextDatum(hb_strategy_name(ops[i].strategy));
		values[3] = CStringGetTextDatum(ops[i].in_shape);
		values[4] = CStringGetTextDatum(ops[i].out_shape);
		values[5] = Int64GetDatum(ops[i].param_bytes);
		values[6] = Float8GetDatum(ops[i].flops);
		values[7] = CStringGetTextDatum(on_gpu ? "gpu" : "cpu");
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
