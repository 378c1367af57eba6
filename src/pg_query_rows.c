/*
 * pg_query_rows.c
 *	  Reading the rows of a caller's query in batches, for the batched
 *	  set-returning functions (hb_predict_batch, hb_predict_class_batch,
 *	  hb_predict_targets_batch, hb_topk) and the tuning sample; how many
 *	  rows a batch holds.
 *
 * (The batching scan, pg_scan*.c, reads its input plan's rows itself; this
 * file reads a query given as text, through a cursor.)  The query runs as
 * the caller, read-only, and has to return rows of the given row type;
 * its rows bind to a model's features by the names of the row type's
 * columns.  Memory is one batch: each batch's rows are freed before the
 * next one is read.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/typcache.h"

#include "hbird.h"

int			hb_batch_memory_kb = 64 * 1024;

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
	bind.steps = hb_lazy_steps(lazy);

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
