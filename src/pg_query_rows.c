/*
 * pg_query_rows.c
 *	  Reading the rows of a caller's query in batches, for the batched
 *	  set-returning functions (hb_predict_batch, hb_predict_class_batch,
 *	  hb_predict_targets_batch, hb_topk) and the tuning sample; where the
 *	  batched functions' rows go (their tuplestore, or HbirdBatch's
 *	  stream); how many rows a batch holds.
 *
 * (The batching scan, pg_scan*.c, reads its input plan's rows itself; this
 * file reads a query given as text, through a cursor.)  The query runs as
 * the caller, read-only, and has to return rows of the given row type;
 * its rows bind to a model's features by the names of the row type's
 * columns.  The cursor is opened through SPI (its checks and errors) and
 * read with PortalRunFetch into a receiver that binds each row from the
 * executor's own tuple as it comes: no tuple table, and a row is copied
 * only when the caller wants the rows themselves.  Memory is one batch:
 * each batch's rows are freed before the next one is read.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupconvert.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_type.h"
#include "tcop/pquery.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/float.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/typcache.h"

#include "hbird.h"

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

		if (q->utilityStmt != NULL && IsA(q->utilityStmt, CreateTableAsStmt))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must be a SELECT that only reads", what),
					 errdetail("It creates a table (SELECT INTO).")));
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

/* ---- the rows of a query, batch by batch ---- */

/*
 * The executor hands a fetch's rows to this receiver one by one: each is
 * bound at once from the executor's own tuple (no copy, when the query
 * does not project), and copied (once, as a composite datum) only when the
 * caller wants the rows themselves.
 */
typedef struct RowsDest
{
	DestReceiver pub;
	HbQueryRows *r;
} RowsDest;

struct HbQueryRows
{
	HbCacheEntry *e;
	Portal		portal;
	char	   *portal_name;
	TupleDesc	rowdesc;		/* the row type's */
	TupleConversionMap *map;	/* the query's columns to the row type's */
	HbBinding	bind;			/* by the row type's column names */
	HbColumnReader rd;			/* the same columns in the query's rows */
	bool		margins;
	int			width;			/* doubles per row of x */
	int			batch;
	int			next;			/* rows to read for the next batch */
	HbRowsItems items;			/* what of the rows themselves is kept */
	bool		done;
	MemoryContext batch_cxt;	/* one batch's items */
	double	   *x;				/* batch x width */
	Datum	   *item;			/* HB_ITEMS_ALL: the batch's rows */
	HbTupleStore tup;			/* HB_ITEMS_ON_DEMAND: the batch's tuples */
	uint64		n;				/* rows in the batch */
	RowsDest	dest;
};

static bool
rows_receive(TupleTableSlot *slot, DestReceiver *self)
{
	HbQueryRows *r = ((RowsDest *) self)->r;
	MemoryContext old = MemoryContextSwitchTo(r->batch_cxt);
	uint64		i = r->n++;

	Assert(i < (uint64) r->batch);
	hb_read_slot(&r->rd, &r->bind, r->e, slot, r->x + i * r->width, r->margins);
	if (r->items != HB_ITEMS_NONE)
	{
		/* the executor's tuple (a copy only if it has none) */
		HeapTuple	t = ExecFetchSlotHeapTuple(slot, false, NULL);

		if (r->map)
			t = execute_attr_map_tuple(t, r->map);
		if (r->items == HB_ITEMS_ALL)
			r->item[i] = heap_copy_tuple_as_datum(t, r->rowdesc);
		else
		{
			/*
			 * Most rows of a top-K are never kept: making a datum of each
			 * (an allocation and a copy) cost about a tenth of an
			 * approximate top-K's time
			 */
			hb_tuples_put(&r->tup, (int) i, t);
		}
	}
	MemoryContextSwitchTo(old);
	return true;
}

static void
rows_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
}

static void
rows_shutdown(DestReceiver *self)
{
}

static void
rows_destroy(DestReceiver *self)
{
}

/*
 * A query's rows are taken by position, as for any function returning rows
 * of a type, while features bind to the type's columns by name: a query
 * column named like another of the type's columns (SELECT * over a table
 * with the same columns in another order) would bind silently otherwise.
 */
static void
check_names_in_place(TupleDesc q, TupleDesc t, Oid rowtype)
{
	int			qi = 0,
				ti = 0,
				pos = 0;

	for (;;)
	{
		Form_pg_attribute qa,
					ta;

		while (qi < q->natts && TupleDescAttr(q, qi)->attisdropped)
			qi++;
		while (ti < t->natts && TupleDescAttr(t, ti)->attisdropped)
			ti++;
		if (qi >= q->natts || ti >= t->natts)
			return;
		qa = TupleDescAttr(q, qi);
		ta = TupleDescAttr(t, ti);
		pos++;
		if (strcmp(NameStr(qa->attname), NameStr(ta->attname)) != 0)
		{
			int			other = 0;

			for (int j = 0; j < t->natts; j++)
			{
				Form_pg_attribute tb = TupleDescAttr(t, j);

				if (tb->attisdropped)
					continue;
				other++;
				if (j != ti && strcmp(NameStr(tb->attname), NameStr(qa->attname)) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_DATATYPE_MISMATCH),
							 errmsg("column %d of the query is \"%s\", but \"%s\" is column %d of type %s",
									pos, NameStr(qa->attname), NameStr(qa->attname), other,
									format_type_be(rowtype)),
							 errdetail("The query's rows are taken by position as rows of type %s, whose column %d is \"%s\".",
									   format_type_be(rowtype), pos, NameStr(ta->attname)),
							 errhint("Select the columns in the order of type %s.",
									 format_type_be(rowtype))));
			}
		}
		qi++;
		ti++;
	}
}

/*
 * Open query (rows of type rowtype) for model e, batch rows at a time.
 * The row type's columns bind to e's features by name (the errors of a
 * missing or unfit column come first), then the query is opened as the
 * caller, read-only, and its columns must have the row type's types by
 * position.  Each batch's rows are bound into hb_rows_x (raw margins with
 * margins, a linear model over text); steps: featurize only those
 * (pg_lazy.c); items: what of the rows themselves is wanted (hb_rows_items:
 * every row; hb_rows_item: the rows a caller keeps), as composite datums of
 * the row type.  Everything lives in the current memory context;
 * a batch's memory is freed when the next one is read.
 */
HbQueryRows *
hb_rows_open(HbCacheEntry *e, const char *query, Oid rowtype, int batch,
			 bool margins, const HbBindSteps *steps, HbRowsItems items)
{
	HbQueryRows *r = palloc0(sizeof(HbQueryRows));
	const int  *attrmap = NULL;

	Assert(!margins || e->sparse != NULL);
	r->e = e;
	r->rowdesc = lookup_rowtype_tupdesc_copy(rowtype, -1);
	r->margins = margins;
	r->width = margins ? e->n_outputs : e->n_features;
	r->batch = batch;
	r->next = batch;
	r->items = items;
	r->x = palloc_extended(sizeof(double) * batch * Max(r->width, 1), MCXT_ALLOC_HUGE);
	if (items == HB_ITEMS_ALL)
		r->item = palloc_extended(sizeof(Datum) * batch, MCXT_ALLOC_HUGE);
	else if (items == HB_ITEMS_ON_DEMAND)
		hb_tuples_init(&r->tup, batch, CurrentMemoryContext);
	r->batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "hbird query rows",
										 ALLOCSET_DEFAULT_SIZES);
	/* features bind by the names of the row type's columns */
	hb_bind_desc(&r->bind, e, r->rowdesc, CurrentMemoryContext, e->name);
	r->bind.steps = steps;

	/*
	 * The cursor outlives the SPI connection that opened it (what SPI
	 * allocates goes at SPI_finish); it is read with PortalRunFetch.
	 */
	SPI_connect();
	r->portal = hb_open_query(query, "query");
	SPI_finish();
	r->portal_name = pstrdup(r->portal->name);

	/*
	 * Under a WITH HOLD cursor the statement's remaining rows are computed
	 * at COMMIT (PersistHoldablePortal), when the transaction's other
	 * portals are being dropped, in no set order: this one is held too, so
	 * that it is still there (its own remaining rows kept) whichever of the
	 * two COMMIT reaches first.
	 */
	if (ActivePortal != NULL && (ActivePortal->cursorOptions & CURSOR_OPT_HOLD))
		r->portal->cursorOptions |= CURSOR_OPT_HOLD;
	r->map = convert_tuples_by_position(r->portal->tupDesc, r->rowdesc,
										gettext_noop("query does not return rows of the given row type"));
	check_names_in_place(r->portal->tupDesc, r->rowdesc, rowtype);

	/* the row type's attribute a is the query's column attrmap[a] */
	if (r->map)
	{
		int		   *m = palloc(sizeof(int) * Max(r->rowdesc->natts, 1));

		for (int a = 0; a < r->rowdesc->natts; a++)
			m[a] = r->map->attrMap->attnums[a] - 1;
		attrmap = m;
	}
	hb_reader_init(&r->rd, &r->bind, e, r->portal->tupDesc, attrmap,
				   e->pipeline == NULL ? steps : NULL, CurrentMemoryContext);
	if (r->rd.subset)
	{
		/* what the cheap model does not read stays missing */
		for (int64 i = 0; i < (int64) batch * r->width; i++)
			r->x[i] = get_float8_nan();
	}

	r->dest.pub.receiveSlot = rows_receive;
	r->dest.pub.rStartup = rows_startup;
	r->dest.pub.rShutdown = rows_shutdown;
	r->dest.pub.rDestroy = rows_destroy;
	r->dest.pub.mydest = DestNone;
	r->dest.r = r;
	return r;
}

/*
 * Read and bind the next batch; its row count (0 at the end).  The
 * previous batch's rows and items are gone.
 */
uint64
hb_rows_next(HbQueryRows *r)
{
	MemoryContextReset(r->batch_cxt);
	r->n = 0;
	if (r->items == HB_ITEMS_ON_DEMAND)
		hb_tuples_reset(&r->tup);
	if (r->done)
		return 0;
	CHECK_FOR_INTERRUPTS();

	/*
	 * A cursor opened in a subtransaction that was rolled back since (the
	 * rows are streamed by a plan node, and the statement fetched its first
	 * rows there) is gone: say so rather than touch it.
	 */
	if (GetPortalByName(r->portal_name) != r->portal ||
		r->portal->status != PORTAL_READY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_CURSOR_STATE),
				 errmsg("the query of model \"%s\" is no longer open", r->e->name),
				 errdetail("Its cursor was closed when a subtransaction was rolled back.")));
	PortalRunFetch(r->portal, FETCH_FORWARD, r->next, &r->dest.pub);
	if (r->n < (uint64) r->next)
		r->done = true;
	r->next = Min(r->next * 2, r->batch);
	return r->n;
}

/*
 * Start with batches of one row, doubling up to the full batch: a LIMIT
 * above a stream of the rows (or a cursor's first FETCH) does not wait for
 * a full batch to be read and scored.
 */
void
hb_rows_ramp_up(HbQueryRows *r)
{
	r->next = 1;
}

double *
hb_rows_x(HbQueryRows *r)
{
	return r->x;
}

/* The batch's rows as composite datums of the row type (HB_ITEMS_ALL), or NULL. */
Datum *
hb_rows_items(HbQueryRows *r)
{
	return r->items == HB_ITEMS_ALL ? r->item : NULL;
}

/*
 * Row i of the batch as a new composite datum of the row type, in the
 * current memory context (it outlives the batch).
 */
Datum
hb_rows_item(HbQueryRows *r, uint64 i)
{
	HeapTupleData t;

	Assert(i < r->n && r->items != HB_ITEMS_NONE);
	if (r->items == HB_ITEMS_ALL)
		return datumCopy(r->item[i], false, -1);
	if (!hb_tuples_get(&r->tup, (int) i, &t))
		elog(ERROR, "row %llu of the batch was not kept", (unsigned long long) i);
	return heap_copy_tuple_as_datum(&t, r->rowdesc);
}

/* Close the query's cursor (if still open). */
void
hb_rows_close(HbQueryRows *r)
{
	if (r->portal != NULL && GetPortalByName(r->portal_name) == r->portal)
		PortalDrop(r->portal, false);
	r->portal = NULL;
	r->done = true;
}

/*
 * Run query (rows of type rowtype) through a cursor, batch rows at a time:
 * each batch's rows are bound to model e's features into x and handed to
 * fn, with the rows themselves as composite datums of the row type with
 * HB_ITEMS_ALL (else NULL; hb_rows_item with HB_ITEMS_ON_DEMAND).  Memory
 * is O(batch).
 */
void
hb_scan_batches(HbCacheEntry *e, const char *query, Oid rowtype, int batch,
				bool margins, const HbBindSteps *steps, HbRowsItems items,
				HbBatchFn fn, void *arg)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "hbird query",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	HbQueryRows *r = hb_rows_open(e, query, rowtype, batch, margins, steps, items);
	uint64		n;

	MemoryContextSwitchTo(old);

	/*
	 * fn runs in the batch's context, which the next batch resets (as the
	 * streamed form runs it, pg_batch_stream.c): what it allocates per row
	 * (arrays of targets, the cascade's work) lasts one batch; what it keeps
	 * across batches it allocates in a context of its own.
	 */
	while ((n = hb_rows_next(r)) > 0)
	{
		old = MemoryContextSwitchTo(r->batch_cxt);
		fn(arg, r, r->x, hb_rows_items(r), n);
		MemoryContextSwitchTo(old);
	}
	hb_rows_close(r);
	MemoryContextDelete(cxt);
}

/*
 * Where a batched function's rows go: a tuplestore (the function returns
 * a materialized set) or, when a plan node streams the function
 * (pg_batch_stream.c), this batch's rows, which the node hands up one by
 * one before it asks for the next batch.
 */
void
hb_rows_out_init(HbRowsOut *o, ReturnSetInfo *rsinfo, int ncols)
{
	if (rsinfo && rsinfo->setDesc->natts != ncols)
		elog(ERROR, "incorrect number of output columns: %d, expected %d",
			 rsinfo->setDesc->natts, ncols);
	memset(o, 0, sizeof(*o));
	o->rsinfo = rsinfo;
	o->ncols = ncols;
}

void
hb_rows_emit(HbRowsOut *o, const Datum *values, const bool *nulls)
{
	if (o->rsinfo)
	{
		tuplestore_putvalues(o->rsinfo->setResult, o->rsinfo->setDesc,
							 (Datum *) values, (bool *) nulls);
		return;
	}
	if (o->n == o->cap)
	{
		o->cap = Max(64, o->cap * 2);
		o->values = o->values ?
			repalloc_huge(o->values, sizeof(Datum) * o->cap * o->ncols) :
			MemoryContextAllocHuge(o->cxt, sizeof(Datum) * o->cap * o->ncols);
		o->nulls = o->nulls ?
			repalloc_huge(o->nulls, sizeof(bool) * o->cap * o->ncols) :
			MemoryContextAllocHuge(o->cxt, sizeof(bool) * o->cap * o->ncols);
	}
	memcpy(o->values + o->n * o->ncols, values, sizeof(Datum) * o->ncols);
	memcpy(o->nulls + o->n * o->ncols, nulls, sizeof(bool) * o->ncols);
	o->n++;
}
