/*
 * pg_batch_stream.c
 *	  Streaming the batched set-returning functions (hb_predict_batch,
 *	  hb_predict_class_batch, hb_predict_targets_batch): a plan node,
 *	  HbirdBatch, that takes the place of their Function Scan and hands
 *	  their rows up batch by batch instead of storing them all first.
 *
 * A Function Scan calls a set-returning function once and keeps every row
 * it returns in a tuplestore, which spills to disk beyond work_mem: for a
 * function that returns each row of a query with its score, that is a
 * copy of the whole query's result written and read back.  HbirdBatch
 * calls the same C function, with the same arguments, privileges and
 * checks, but tells it (fcinfo->context, hb_stream_of) to open its query
 * and hand over its batch scorer instead of reading every row itself; the
 * node then reads the query one batch at a time (pg_query_rows.c), scores
 * the batch and returns its rows.  Memory is one batch, and the rows
 * themselves (the item column) are formed only when something reads them.
 *
 * The answer is the function's, row for row and in the same order.  What
 * differs is when the query's rows are read: as the plan above asks for
 * them, so a LIMIT above reads (and scores) only the rows it needs.  The
 * planner hook puts the node only where the function is run once per
 * execution of the statement (not on the inner side of a join, not in a
 * subquery run per outer row); where the executor may still ask for a
 * rescan or a backward scan (EXEC_FLAG_REWIND, _BACKWARD, _MARK), the node
 * materializes the function's set as the Function Scan would, and an
 * unexpected rescan of a stream calls the function again.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_proc.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "pgstat.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"
#include "utils/tuplestore.h"

#include "hbird.h"
#include "pg_scan.h"

typedef struct HbBatchState
{
	CustomScanState css;
	FuncExpr   *func;
	List	   *args;			/* ExprState * of the function's arguments */
	bool		want_items;		/* the item column is read above */
	bool		stream;			/* else materialized, as a Function Scan */
	bool		started;		/* the function was called */
	bool		empty;			/* strict, called with a NULL: no rows */
	MemoryContext call_cxt;		/* one call of the function */
	MemoryContext out_cxt;		/* one batch's rows */
	FmgrInfo	flinfo;
	ReturnSetInfo rsinfo;

	/* streamed */
	HbRowsStream s;
	HbRowsOut	out;
	uint64		pos;
	bool		finished;

	/* materialized */
	Tuplestorestate *store;
	TupleTableSlot *mslot;

	/* EXPLAIN ANALYZE */
	int64		batches;
} HbBatchState;

static const CustomExecMethods batch_exec_methods;
static const CustomScanMethods batch_scan_methods;

/*
 * The stream a batched function fills in when HbirdBatch calls it, or
 * NULL when it is to return its set as usual.
 */
HbRowsStream *
hb_stream_of(FunctionCallInfo fcinfo)
{
	Node	   *ctx = fcinfo->context;

	if (ctx != NULL && IsA(ctx, CustomScanState) &&
		((CustomScanState *) ctx)->methods == &batch_exec_methods &&
		((HbBatchState *) ctx)->stream)
		return &((HbBatchState *) ctx)->s;
	return NULL;
}

/*
 * A batched function's query (argument query_argno, rows of rowtype) run
 * through fn: streamed, when HbirdBatch called the function, by opening it
 * and handing fn, finish and arg to the node, which asks for the batches;
 * else read to the end now into the function's tuplestore and finished.
 * *out is where fn emits a batch's rows and *items whether they carry the
 * rows themselves (set before any row is read).  With a lazy binding the
 * rows are kept as datums whatever the node reads: the cascade binds the
 * rows it cannot decide again from them.
 */
void
hb_batch_function_run(FunctionCallInfo fcinfo, HbCacheEntry *e, Oid rowtype,
					  int query_argno, int batch, bool margins, HbLazy *lazy,
					  HbRowsOut **out, bool *items, HbBatchFn fn,
					  void (*finish) (void *arg), void *arg)
{
	HbRowsStream *stream = hb_stream_of(fcinfo);
	HbRowsOut	own;
	char	   *query;

	if (stream == NULL)
	{
		InitMaterializedSRF(fcinfo, 0);
		hb_rows_out_init(&own, (ReturnSetInfo *) fcinfo->resultinfo, 2);
		*out = &own;
		*items = true;
	}
	else
	{
		*out = stream->out;
		*items = stream->want_items;
	}
	query = hb_query_arg(fcinfo, query_argno, rowtype);
	if (stream)
	{
		stream->rows = hb_rows_open(e, query, rowtype, batch, margins,
									hb_lazy_steps(lazy),
									*items || lazy != NULL ? HB_ITEMS_ALL : HB_ITEMS_NONE);
		hb_rows_ramp_up(stream->rows);
		stream->fn = fn;
		stream->arg = arg;
		stream->finish = finish;
		return;
	}
	hb_scan_batches(e, query, rowtype, batch, margins, hb_lazy_steps(lazy),
					HB_ITEMS_ALL, fn, arg);
	finish(arg);
	*out = NULL;				/* own is gone with this frame */
}

/* ---- planning ---- */

/* Does the expression read column attno (or the whole row) of INDEX_VAR? */
static bool
reads_column_walker(Node *node, int *attno)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == INDEX_VAR)
		return ((Var *) node)->varattno == *attno || ((Var *) node)->varattno == 0;
	return expression_tree_walker(node, reads_column_walker, attno);
}

/* The scan's Vars of its own relation become Vars of the scan tuple. */
static Node *
to_index_var_mutator(Node *node, Index *scanrelid)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == *scanrelid)
	{
		Var		   *v = (Var *) copyObject(node);

		v->varno = INDEX_VAR;
		return (Node *) v;
	}
	return expression_tree_mutator(node, to_index_var_mutator, scanrelid);
}

/*
 * HbirdBatch in place of a Function Scan of one of the batched functions
 * (the planner hook has checked which function it calls and that it runs
 * once per execution, pg_scan_plan.c), or NULL when the scan is of another
 * shape (several functions, ORDINALITY, ...).
 */
Plan *
hb_stream_function_scan(FunctionScan *fs, int plan_node_id)
{
	RangeTblFunction *rtf;
	FuncExpr   *func;
	TupleDesc	desc;
	Oid			rettype;
	CustomScan *cs;
	List	   *scan_tlist = NIL;
	Index		scanrelid = fs->scan.scanrelid;
	int			item_col = 2;

	if (list_length(fs->functions) != 1 || fs->funcordinality)
		return NULL;
	rtf = linitial_node(RangeTblFunction, fs->functions);
	if (!IsA(rtf->funcexpr, FuncExpr))
		return NULL;
	func = (FuncExpr *) rtf->funcexpr;
	if (!func->funcretset || func->funcvariadic ||
		contain_subplans((Node *) func->args))
		return NULL;
	if (get_expr_result_type((Node *) func, &rettype, &desc) != TYPEFUNC_COMPOSITE ||
		desc->natts != 2)
		return NULL;
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVar(scanrelid, a + 1, att->atttypid,
															  att->atttypmod, att->attcollation, 0),
											 a + 1, pstrdup(NameStr(att->attname)), false));
	}

	cs = makeNode(CustomScan);
	cs->scan.plan.startup_cost = fs->scan.plan.startup_cost;
	cs->scan.plan.total_cost = fs->scan.plan.total_cost;
	cs->scan.plan.plan_rows = fs->scan.plan.plan_rows;
	cs->scan.plan.plan_width = fs->scan.plan.plan_width;
	cs->scan.plan.parallel_aware = false;
	cs->scan.plan.parallel_safe = fs->scan.plan.parallel_safe;
	cs->scan.plan.async_capable = false;
	cs->scan.plan.plan_node_id = plan_node_id;
	cs->scan.plan.extParam = bms_copy(fs->scan.plan.extParam);
	cs->scan.plan.allParam = bms_copy(fs->scan.plan.allParam);
	cs->scan.plan.initPlan = fs->scan.plan.initPlan;
	cs->scan.plan.targetlist = (List *) to_index_var_mutator((Node *) fs->scan.plan.targetlist,
															 &scanrelid);
	cs->scan.plan.qual = (List *) to_index_var_mutator((Node *) fs->scan.plan.qual,
													   &scanrelid);
	cs->scan.scanrelid = 0;
	cs->flags = 0;
	cs->custom_plans = NIL;
	cs->custom_exprs = list_make1(copyObject(func));
	cs->custom_private = list_make1(makeInteger(reads_column_walker((Node *) cs->scan.plan.targetlist,
																	&item_col) ||
												reads_column_walker((Node *) cs->scan.plan.qual,
																	&item_col)));
	cs->custom_scan_tlist = scan_tlist;
	/* EXPLAIN names the function's columns after its range table entry */
	cs->custom_relids = bms_make_singleton(scanrelid);
	cs->methods = &batch_scan_methods;
	return (Plan *) cs;
}

/* ---- execution ---- */

static Node *
batch_create_state(CustomScan *cscan)
{
	HbBatchState *st = (HbBatchState *) newNode(sizeof(HbBatchState), T_CustomScanState);

	st->css.methods = &batch_exec_methods;
	return (Node *) st;
}

static void
batch_begin(CustomScanState *node, EState *estate, int eflags)
{
	HbBatchState *st = (HbBatchState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	AclResult	aclresult;

	st->func = linitial_node(FuncExpr, cs->custom_exprs);
	st->want_items = intVal(linitial(cs->custom_private)) != 0;

	/* what a Function Scan checks before it calls the function */
	aclresult = pg_proc_aclcheck(st->func->funcid, GetUserId(), ACL_EXECUTE);
	if (aclresult != ACLCHECK_OK)
		aclcheck_error(aclresult, OBJECT_FUNCTION, get_func_name(st->func->funcid));
	InvokeFunctionExecuteHook(st->func->funcid);

	st->args = ExecInitExprList(st->func->args, &node->ss.ps);
	st->stream = (eflags & (EXEC_FLAG_REWIND | EXEC_FLAG_BACKWARD | EXEC_FLAG_MARK)) == 0;
	st->call_cxt = AllocSetContextCreate(estate->es_query_cxt, "hbird batched function",
										 ALLOCSET_DEFAULT_SIZES);
	st->mslot = ExecInitExtraTupleSlot(estate, node->ss.ss_ScanTupleSlot->tts_tupleDescriptor,
									   &TTSOpsMinimalTuple);
}

/* The end of a call's rows: the function's statistics, its cursor closed. */
static void
batch_finish(HbBatchState *st)
{
	if (!st->started || !st->stream || st->finished)
		return;
	Assert(!st->empty);
	st->finished = true;
	if (st->s.rows)
	{
		if (st->s.finish)
			st->s.finish(st->s.arg);
		hb_rows_close(st->s.rows);
	}
}

/* Call the function: it streams, or returns its materialized set. */
static void
batch_call(HbBatchState *st)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	int			nargs = list_length(st->args);
	LOCAL_FCINFO(fcinfo, FUNC_MAX_ARGS);
	PgStat_FunctionCallUsage fcusage;
	MemoryContext old;
	ListCell   *lc;
	int			i = 0;
	bool		anynull = false;

	MemoryContextReset(st->call_cxt);
	st->out_cxt = AllocSetContextCreate(st->call_cxt, "hbird batched rows",
										ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(st->call_cxt);
	memset(&st->s, 0, sizeof(st->s));
	hb_rows_out_init(&st->out, NULL, 2);
	st->out.cxt = st->out_cxt;
	st->s.out = &st->out;
	st->s.want_items = st->want_items;
	st->pos = 0;
	st->finished = false;
	st->empty = false;
	st->store = NULL;

	fmgr_info_cxt(st->func->funcid, &st->flinfo, st->call_cxt);
	fmgr_info_set_expr((Node *) st->func, &st->flinfo);
	memset(&st->rsinfo, 0, sizeof(st->rsinfo));
	st->rsinfo.type = T_ReturnSetInfo;
	st->rsinfo.econtext = econtext;
	st->rsinfo.expectedDesc = st->css.ss.ss_ScanTupleSlot->tts_tupleDescriptor;
	st->rsinfo.allowedModes = (int) (SFRM_ValuePerCall | SFRM_Materialize);
	st->rsinfo.returnMode = SFRM_ValuePerCall;
	InitFunctionCallInfoData(*fcinfo, &st->flinfo, nargs, st->func->inputcollid,
							 (Node *) st, (Node *) &st->rsinfo);
	foreach(lc, st->args)
	{
		fcinfo->args[i].value = ExecEvalExpr(lfirst(lc), econtext, &fcinfo->args[i].isnull);
		anynull |= fcinfo->args[i].isnull;
		i++;
	}
	st->started = true;
	if (st->flinfo.fn_strict && anynull)
	{
		/* a strict function is not called: no rows */
		st->empty = true;
		st->finished = true;
		MemoryContextSwitchTo(old);
		return;
	}
	pgstat_init_function_usage(fcinfo, &fcusage);
	(void) FunctionCallInvoke(fcinfo);
	pgstat_end_function_usage(&fcusage, true);
	if (st->stream)
	{
		if (st->s.rows == NULL || st->s.fn == NULL)
			elog(ERROR, "function %u did not stream its rows", st->func->funcid);
	}
	else
	{
		if (st->rsinfo.returnMode != SFRM_Materialize)
			elog(ERROR, "function %u did not return a materialized set", st->func->funcid);
		st->store = st->rsinfo.setResult;
	}
	MemoryContextSwitchTo(old);
}

/* The next row of the function, in the scan slot; false at the end. */
static bool
batch_next(HbBatchState *st, TupleTableSlot *slot)
{
	if (st->empty)
		return false;
	if (!st->stream)
	{
		if (st->store == NULL ||
			!tuplestore_gettupleslot(st->store, true, false, st->mslot))
			return false;
		slot_getallattrs(st->mslot);
		ExecClearTuple(slot);
		memcpy(slot->tts_values, st->mslot->tts_values,
			   sizeof(Datum) * slot->tts_tupleDescriptor->natts);
		memcpy(slot->tts_isnull, st->mslot->tts_isnull,
			   sizeof(bool) * slot->tts_tupleDescriptor->natts);
		ExecStoreVirtualTuple(slot);
		return true;
	}
	while (st->pos >= st->out.n)
	{
		MemoryContext old;
		uint64		n;

		if (st->finished)
			return false;
		MemoryContextReset(st->out_cxt);
		st->out.values = NULL;
		st->out.nulls = NULL;
		st->out.n = st->out.cap = 0;
		st->pos = 0;
		old = MemoryContextSwitchTo(st->out_cxt);
		n = hb_rows_next(st->s.rows);
		if (n > 0)
		{
			st->s.fn(st->s.arg, st->s.rows, hb_rows_x(st->s.rows),
					 hb_rows_items(st->s.rows), n);
			st->batches++;
		}
		MemoryContextSwitchTo(old);
		if (n == 0)
			batch_finish(st);
	}
	ExecClearTuple(slot);
	memcpy(slot->tts_values, st->out.values + st->pos * 2, sizeof(Datum) * 2);
	memcpy(slot->tts_isnull, st->out.nulls + st->pos * 2, sizeof(bool) * 2);
	ExecStoreVirtualTuple(slot);
	st->pos++;
	return true;
}

static TupleTableSlot *
batch_exec(CustomScanState *node)
{
	HbBatchState *st = (HbBatchState *) node;
	ExprContext *econtext = node->ss.ps.ps_ExprContext;
	ExprState  *qual = node->ss.ps.qual;
	ProjectionInfo *proj = node->ss.ps.ps_ProjInfo;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;

	if (!st->started)
		batch_call(st);
	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (!batch_next(st, slot))
			return NULL;
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
batch_end(CustomScanState *node)
{
	HbBatchState *st = (HbBatchState *) node;

	batch_finish(st);
	if (st->store)
		tuplestore_end(st->store);
	st->store = NULL;
}

static void
batch_rescan(CustomScanState *node)
{
	HbBatchState *st = (HbBatchState *) node;

	if (!st->started)
		return;
	if ((!st->stream || st->empty) && node->ss.ps.chgParam == NULL)
	{
		/* the same arguments: the same set again, as a Function Scan does */
		if (st->store)
			tuplestore_rescan(st->store);
		return;
	}
	batch_finish(st);
	if (st->store)
		tuplestore_end(st->store);
	st->store = NULL;
	st->started = false;
}

static void
batch_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	HbBatchState *st = (HbBatchState *) node;
	List	   *context;

	context = set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan, ancestors);
	ExplainPropertyText("Function Call",
						deparse_expression((Node *) st->func, context, es->verbose, false),
						es);
	ExplainPropertyText("Rows", st->stream ? "streamed in batches" : "materialized", es);
	if (es->analyze && st->stream)
		ExplainPropertyInteger("Batches", NULL, st->batches, es);
}

static const CustomExecMethods batch_exec_methods = {
	.CustomName = "HbirdBatch",
	.BeginCustomScan = batch_begin,
	.ExecCustomScan = batch_exec,
	.EndCustomScan = batch_end,
	.ReScanCustomScan = batch_rescan,
	.ExplainCustomScan = batch_explain,
};

static const CustomScanMethods batch_scan_methods = {
	.CustomName = "HbirdBatch",
	.CreateCustomScanState = batch_create_state,
};

void
hb_stream_init(void)
{
	RegisterCustomScanMethods(&batch_scan_methods);
}
