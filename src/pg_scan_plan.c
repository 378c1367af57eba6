/*
 * pg_scan_plan.c
 *	  Where plain SQL gets batched: a planner hook that rewrites the
 *	  finished plan so that scoring calls are computed by an HbirdScore
 *	  node (pg_scan_exec.c) in batches instead of one row at a time.
 *
 * The rewrite runs after standard_planner, on the plan as it will run
 * (after setrefs): PostgreSQL has already chosen joins, parallelism and
 * where each expression is evaluated; hbird only changes how the scoring
 * calls among them are evaluated.  Two shapes cover the places a call can
 * be evaluated per row:
 *
 *	- a node that projects (a scan, a join, a Result, a subquery scan...)
 *	  and evaluates calls in its target list or quals: it keeps producing
 *	  the columns the calls read (a table's own columns for a whole-row
 *	  argument, so that no composite datum is formed), and an HbirdScore
 *	  node above it evaluates the original target list and the quals from
 *	  the first one that scores on, in their order, the calls read from its
 *	  batch (those of later quals and of the target list from the batch of
 *	  another node above it: score_above says why);
 *	- an Agg whose aggregate arguments score (sum(hb_predict(...))): the
 *	  HbirdScore node goes below it, appending a score column per call to
 *	  its input, and the Agg reads those columns.
 *
 * A bounded sort on a score (ORDER BY hb_predict(...) DESC LIMIT k) marks
 * its HbirdScore node as a top-K node: rows that can no longer reach the k
 * best are not scored (pg_scan_exec.c explains why the answer, ties
 * included, is that of the row-at-a-time plan).
 *
 * The scoring aggregates (hb_predict_agg and its class and targets forms)
 * are batched like a call inside an aggregate: the HbirdScore node below
 * the Agg scores their rows, and the aggregate's row argument becomes the
 * score.  A Function Scan of a batched function (hb_predict_batch, ...)
 * that runs once per execution of the statement becomes an HbirdBatch node
 * (pg_batch_stream.c), which streams the function's rows.
 *
 * Decision rule (docs/design.md, "Batching scan"): a call is batched where
 * the node evaluating it is estimated to produce at least two rows, its
 * model name does not depend on the row, and it is evaluated for every row
 * (not in a CASE branch, a later COALESCE argument or a FILTERed
 * aggregate).  Batching costs one batch of buffered rows and pays from the
 * second row on; everything else stays row at a time.  Statements that lock
 * rows of other relations (FOR UPDATE, UPDATE ... FROM: their row marks)
 * and MERGE are left alone.  An UPDATE or DELETE of one table is batched
 * unless it calls a volatile function (stmt_has_volatile): the node hands
 * up the scan's own tuples (their ctid and tableoid), and an EvalPlanQual
 * recheck re-runs a copy of the plan, the node included, over the row's
 * new version alone.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_class.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "optimizer/planmain.h"
#include "optimizer/planner.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/syscache.h"

#include "hbird.h"
#include "pg_scaleout.h"
#include "pg_scan.h"


static planner_hook_type prev_planner = NULL;

/* ---- rewriting expressions ---- */

typedef struct ReplaceCtx
{
	List	   *calls;			/* FoundCall * */
	int			varno;			/* of the replacing Vars */
	int			first_attno;	/* the first call's column */
} ReplaceCtx;

/* The position of node among the batched calls, or -1. */
static int
call_index(List *calls, Node *node)
{
	int			i = 0;
	ListCell   *lc;

	if (!IsA(node, FuncExpr))
		return -1;
	foreach(lc, calls)
	{
		if (equal(((FoundCall *) lfirst(lc))->expr, node))
			return i;
		i++;
	}
	return -1;
}

/* A Var of the column that holds call i's score. */
static Node *
call_var(List *calls, int i, int varno, int first_attno)
{
	FoundCall  *fc = list_nth(calls, i);

	return (Node *) makeVar(varno, first_attno + i, fc->expr->funcresulttype,
							-1, InvalidOid, 0);
}

/*
 * Every occurrence of a batched call becomes a Var of its column; a
 * scoring aggregate whose rows are batched gets that Var as its row
 * argument (its transition function then keeps the scores).
 */
static Node *
replace_calls_mutator(Node *node, ReplaceCtx *ctx)
{
	int			i;

	if (node == NULL)
		return NULL;
	if ((i = call_index(ctx->calls, node)) >= 0)
		return call_var(ctx->calls, i, ctx->varno, ctx->first_attno);
	if (IsA(node, Aggref))
	{
		FuncExpr   *f = hb_agg_call_expr((Aggref *) node);

		if (f != NULL && (i = call_index(ctx->calls, (Node *) f)) >= 0)
		{
			Aggref	   *a = (Aggref *) copyObject(node);
			TargetEntry *row = lsecond_node(TargetEntry, a->args);

			row->expr = (Expr *) call_var(ctx->calls, i, ctx->varno, ctx->first_attno);
			lsecond_oid(a->aggargtypes) = f->funcresulttype;
			return (Node *) a;
		}
	}
	return expression_tree_mutator(node, replace_calls_mutator, ctx);
}

static Node *
replace_calls(Node *node, List *calls, int varno, int first_attno)
{
	ReplaceCtx	ctx = {calls, varno, first_attno};

	return replace_calls_mutator(node, &ctx);
}

/* The input columns of a scoring node: Vars of the replaced node. */
typedef struct InputCols
{
	List	   *vars;			/* Var * (or Const for a dropped column) */
} InputCols;

static bool
same_var(const Var *a, const Var *b)
{
	return a->varno == b->varno && a->varattno == b->varattno &&
		a->vartype == b->vartype && a->vartypmod == b->vartypmod &&
		a->varcollid == b->varcollid && a->varlevelsup == b->varlevelsup;
}

/* 1-based position of var among the input columns, added if absent. */
static int
input_col(InputCols *in, Var *var)
{
	int			i = 1;
	ListCell   *lc;

	foreach(lc, in->vars)
	{
		Node	   *n = lfirst(lc);

		if (IsA(n, Var) && same_var((Var *) n, var))
			return i;
		i++;
	}
	in->vars = lappend(in->vars, copyObject(var));
	return i;
}

typedef struct RemapCtx
{
	InputCols  *in;
	int			varno;			/* what the Vars become */
} RemapCtx;

/* Vars of the replaced node become Vars of the scoring node's input. */
static Node *
remap_vars_mutator(Node *node, RemapCtx *ctx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;
		Var		   *nv = makeVar(ctx->varno, input_col(ctx->in, v), v->vartype,
								 v->vartypmod, v->varcollid, 0);

		return (Node *) nv;
	}
	return expression_tree_mutator(node, remap_vars_mutator, ctx);
}

static Node *
remap_vars(Node *node, InputCols *in, int varno)
{
	RemapCtx	ctx = {in, varno};

	return remap_vars_mutator(node, &ctx);
}

/*
 * An expression of the replaced node as the scoring node evaluates it:
 * call j becomes the scan tuple's column first_call + j, every other Var
 * the input column holding it (INDEX_VAR).  With collect, only records the
 * input columns needed (first_call is not known before all are).
 */
typedef struct RewriteExprCtx
{
	List	   *calls;
	InputCols  *in;
	int			first_call;
	bool		collect;
} RewriteExprCtx;

static Node *
rewrite_expr_mutator(Node *node, RewriteExprCtx *ctx)
{
	int			i;

	if (node == NULL)
		return NULL;
	if ((i = call_index(ctx->calls, node)) >= 0)
		return ctx->collect ? node : call_var(ctx->calls, i, INDEX_VAR, ctx->first_call);
	if (IsA(node, Var))
	{
		int			col = input_col(ctx->in, (Var *) node);
		Var		   *v = (Var *) node;

		return ctx->collect ? node :
			(Node *) makeVar(INDEX_VAR, col, v->vartype, v->vartypmod,
							 v->varcollid, 0);
	}
	return expression_tree_mutator(node, rewrite_expr_mutator, ctx);
}

static Node *
rewrite_expr(Node *node, List *calls, InputCols *in, int first_call,
			 bool collect)
{
	RewriteExprCtx ctx = {calls, in, first_call, collect};

	return rewrite_expr_mutator(node, &ctx);
}

/* Substitute a child's target list into Vars of OUTER_VAR (Agg's input). */
static Node *
inline_outer_mutator(Node *node, List *child_tlist)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == OUTER_VAR)
	{
		TargetEntry *te = list_nth(child_tlist, ((Var *) node)->varattno - 1);

		return (Node *) copyObject(te->expr);
	}
	return expression_tree_mutator(node, inline_outer_mutator, child_tlist);
}

/* ---- building the scoring node ---- */

typedef struct RewriteCtx
{
	PlannedStmt *stmt;
	int			next_id;		/* plan_node_id of the next new node */
	int			nodes;			/* HbirdScore nodes made */
	const HbPushdown *pd;		/* nodes the pushdown step keeps as they are */
} RewriteCtx;

static bool
is_scan_of_table(Plan *plan, RewriteCtx *ctx, Oid *relid)
{
	Index		rti;
	RangeTblEntry *rte;

	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
			break;
		default:
			return false;
	}
	rti = ((Scan *) plan)->scanrelid;
	rte = rt_fetch(rti, ctx->stmt->rtable);
	if (rte->rtekind != RTE_RELATION)
		return false;
	*relid = rte->relid;
	return true;
}

/*
 * A call whose row is the scanned table's own row (a whole-row Var of it,
 * or of a partition converted to its parent's type) can read the table's
 * columns straight from the input slot.  *rowtype gets the type the row
 * binds as (the parent's, for a partition).
 */
static bool
reads_whole_row(FuncExpr *f, Index scanrelid, Oid *rowtype)
{
	Node	   *arg = lsecond(f->args);

	if (IsA(arg, ConvertRowtypeExpr))
	{
		*rowtype = ((ConvertRowtypeExpr *) arg)->resulttype;
		arg = (Node *) ((ConvertRowtypeExpr *) arg)->arg;
	}
	else if (IsA(arg, Var))
		*rowtype = ((Var *) arg)->vartype;
	else
		return false;
	return IsA(arg, Var) && ((Var *) arg)->varno == scanrelid &&
		((Var *) arg)->varattno == 0 && ((Var *) arg)->varlevelsup == 0;
}

/*
 * What the scan evaluates for a call besides its name: the row or array,
 * or for a pinned call a RowExpr holding its other arguments.
 */
static Node *
call_arg(FoundCall *fc)
{
	RowExpr    *r;

	if (!fc->pinned)
		return lsecond(fc->expr->args);
	r = makeNode(RowExpr);
	r->args = list_copy_tail(fc->expr->args, 1);
	r->row_typeid = RECORDOID;
	r->row_format = COERCE_IMPLICIT_CAST;
	r->colnames = NIL;
	r->location = -1;
	return (Node *) r;
}

static List *
call_private(FoundCall *fc, HbRowSource source, Oid rowtype, Oid relid)
{
	return lappend(list_make5(makeInteger(fc->kind), makeInteger(fc->is_array),
							  makeInteger(source), makeInteger((int) rowtype),
							  makeInteger((int) relid)),
				   makeInteger(fc->agg));
}

/* A target list of Vars reading every column of sub, as setrefs makes. */
static List *
pass_through_tlist(Plan *sub, int varno)
{
	List	   *tl = NIL;
	ListCell   *lc;

	foreach(lc, sub->targetlist)
	{
		TargetEntry *te = lfirst(lc);
		Var		   *v = makeVarFromTargetEntry(varno, te);

		tl = lappend(tl, makeTargetEntry((Expr *) v, te->resno, te->resname,
										 te->resjunk));
	}
	return tl;
}

static void
copy_plan_fields(Plan *dst, const Plan *src, RewriteCtx *ctx)
{
	dst->startup_cost = src->startup_cost;
	dst->total_cost = src->total_cost;
	dst->plan_rows = src->plan_rows;
	dst->plan_width = src->plan_width;
	dst->parallel_aware = false;
	dst->parallel_safe = src->parallel_safe;
	dst->async_capable = false;
	dst->plan_node_id = ctx->next_id++;
	dst->extParam = bms_copy(src->extParam);
	dst->allParam = bms_copy(src->allParam);
}

/*
 * Whether the input columns after the table's natts are all the scanned
 * table's ctid or tableoid, which a scan's own tuples carry beside their
 * columns.
 */
static bool
system_columns_only(List *vars, int natts, Index scanrelid)
{
	ListCell   *lc;

	for_each_from(lc, vars, natts)
	{
		Var		   *v = lfirst(lc);

		if (!IsA(v, Var) || v->varno != scanrelid || v->varlevelsup != 0 ||
			(v->varattno != SelfItemPointerAttributeNumber &&
			 v->varattno != TableOidAttributeNumber))
			return false;
	}
	return true;
}

/*
 * The scoring node over input: its scan tuple is input's columns, then
 * sys (the scanned table's ctid or tableoid, taken from the input's rows'
 * identity: n_input columns in all), followed by the calls' scores; tlist
 * and quals read that tuple (INDEX_VAR).  display holds each call as
 * EXPLAIN shows it.
 */
static CustomScan *
make_score_node(RewriteCtx *ctx, Plan *input, List *calls, List *display,
				List *call_privs, List *call_exprs, List *tlist, List *quals,
				const Plan *costs_from, List *sys)
{
	CustomScan *cs = makeNode(CustomScan);
	int			n_input = list_length(input->targetlist) + list_length(sys);
	List	   *scan_tlist = NIL;
	List	   *sys_attnos = NIL;
	ListCell   *lc;
	int			resno = 1;

	foreach(lc, input->targetlist)
	{
		TargetEntry *te = lfirst(lc);

		scan_tlist = lappend(scan_tlist,
							 makeTargetEntry((Expr *) makeVarFromTargetEntry(OUTER_VAR, te),
											 resno++, te->resname, false));
	}
	/* (only their types and EXPLAIN read these: the table's own Vars) */
	foreach(lc, sys)
	{
		scan_tlist = lappend(scan_tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++,
														 NULL, false));
		sys_attnos = lappend(sys_attnos, makeInteger(((Var *) lfirst(lc))->varattno));
	}
	foreach(lc, display)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), resno++,
														 NULL, false));

	copy_plan_fields(&cs->scan.plan, costs_from, ctx);
	/* the params the calls read were the replaced node's */
	cs->scan.plan.extParam = bms_union(cs->scan.plan.extParam, input->extParam);
	cs->scan.plan.allParam = bms_union(cs->scan.plan.allParam, input->allParam);
	cs->scan.plan.targetlist = tlist;
	cs->scan.plan.qual = quals;
	cs->scan.plan.lefttree = input;
	/*
	 * Only an Append runs a child asynchronously; a foreign scan marked so
	 * under this node would return no rows (postgres_fdw waits for the
	 * Append to fetch them).
	 */
	input->async_capable = false;
	cs->scan.scanrelid = 0;
	cs->flags = 0;
	cs->custom_plans = NIL;
	cs->custom_exprs = call_exprs;
	cs->custom_private = list_make4(makeInteger(n_input), call_privs, NIL, sys_attnos);
	cs->custom_scan_tlist = scan_tlist;
	cs->custom_relids = NULL;
	cs->methods = &hb_score_scan_methods;
	ctx->nodes++;
	return cs;
}

/*
 * Whether an output is a scoring aggregate's rows (an extra of score_above
 * below that moved quals, left for the node above it): that node must
 * batch it, since it is no function the executor could call.
 */
static bool
agg_call_output(List *tlist)
{
	ListCell   *lc;

	foreach(lc, tlist)
		if (hb_is_agg_call((Node *) ((TargetEntry *) lfirst(lc))->expr))
			return true;
	return false;
}

/*
 * A node that projects (scan, join, Result, ...) and evaluates calls in
 * its target list or quals, plus extra calls (in terms of the node's own
 * Vars) whose scores an Agg above needs: the node keeps producing only the
 * columns those read, and the scoring node above evaluates the rest.
 * Returns plan itself when there is nothing to batch.
 */
static Plan *
score_above(RewriteCtx *ctx, Plan *plan, List *extra, bool keep_all_outputs,
			Bitmapset *outputs_used)
{
	List	   *calls = NIL;
	List	   *keep_quals = NIL;
	List	   *move_quals = NIL;
	InputCols	in = {NIL};
	Oid			relid = InvalidOid;
	bool		table = is_scan_of_table(plan, ctx, &relid);
	Index		scanrelid = table ? ((Scan *) plan)->scanrelid : 0;
	bool		columns = false;
	List	   *privs = NIL;
	List	   *exprs = NIL;
	List	   *display = NIL;
	List	   *tlist = NIL;
	List	   *quals;
	ListCell   *lc;
	int			n_input;
	int			resno;
	int			natts = 0;
	bool		own_tuples = true;	/* the scan would hand up its own tuples */
	List	   *sys = NIL;

	if (extra == NIL && !agg_call_output(plan->targetlist) &&
		(plan->plan_rows < 2.0 || hb_pushdown_keeps(ctx->pd, plan)))
		return plan;

	/*
	 * The quals run in their order (security barrier quals first, then by
	 * cost), and a qual only for the rows that passed those before it.  So
	 * the quals before the first one with a call stay below; that one and
	 * every later one move up, in order, and only the first one's calls are
	 * batched here: the row-at-a-time plan runs them for every row that
	 * reaches it, and the later quals' and the outputs' calls only for the
	 * rows that pass it.  Those are batched by another node above this one,
	 * which sees only the rows this one hands up.
	 */
	foreach(lc, plan->qual)
	{
		if (move_quals == NIL)
			calls = hb_find_calls(lfirst(lc), NIL, false);
		if (calls == NIL)
			keep_quals = lappend(keep_quals, lfirst(lc));
		else
			move_quals = lappend(move_quals, lfirst(lc));
	}
	if (move_quals == NIL)
	{
		/* a node below that moved quals left a scoring aggregate's rows here */
		foreach(lc, plan->targetlist)
			calls = hb_find_calls_or_agg((Node *) ((TargetEntry *) lfirst(lc))->expr, calls, false);
		foreach(lc, extra)
			calls = hb_find_calls_or_agg(lfirst(lc), calls, false);
	}
	if (calls == NIL)
		return plan;

	/* a table's own rows: its columns come first, in attribute order */
	foreach(lc, calls)
	{
		Oid			rowtype;

		if (table && !((FoundCall *) lfirst(lc))->is_array &&
			reads_whole_row(((FoundCall *) lfirst(lc))->expr, scanrelid, &rowtype))
			columns = true;
	}
	if (columns)
	{
		HeapTuple	reltup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));

		if (!HeapTupleIsValid(reltup))
			elog(ERROR, "cache lookup failed for relation %u", relid);
		natts = ((Form_pg_class) GETSTRUCT(reltup))->relnatts;
		ReleaseSysCache(reltup);
		for (AttrNumber a = 1; a <= natts; a++)
		{
			HeapTuple	atttup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid),
												 Int16GetDatum(a));
			Form_pg_attribute att;

			if (!HeapTupleIsValid(atttup))
				elog(ERROR, "cache lookup failed for attribute %d of relation %u", a, relid);
			att = (Form_pg_attribute) GETSTRUCT(atttup);
			/* what makes a scan project its rows (execScan.c) */
			if (att->attisdropped || att->atthasmissing)
				own_tuples = false;
			if (att->attisdropped)
				in.vars = lappend(in.vars, makeNullConst(INT4OID, -1, InvalidOid));
			else
				in.vars = lappend(in.vars, makeVar(scanrelid, a, att->atttypid,
												   att->atttypmod, att->attcollation, 0));
			ReleaseSysCache(atttup);
		}
	}

	/* per call: what it reads, evaluated over the input's columns */
	foreach(lc, calls)
	{
		FoundCall  *fc = lfirst(lc);
		Oid			rowtype = InvalidOid;

		if (columns && !fc->is_array &&
			reads_whole_row(fc->expr, scanrelid, &rowtype))
		{
			privs = lappend(privs, call_private(fc, HB_SOURCE_COLUMNS, rowtype, relid));
			exprs = lappend(exprs, remap_vars(linitial(fc->expr->args), &in, OUTER_VAR));
			exprs = lappend(exprs, makeNullConst(RECORDOID, -1, InvalidOid));
			/* EXPLAIN shows the call as written: t.* reads the range table */
			display = lappend(display, hb_display_call(fc, (Node *) fc->expr));
		}
		else
		{
			privs = lappend(privs, call_private(fc, fc->pinned ? HB_SOURCE_ARGS : HB_SOURCE_DATUM,
												InvalidOid, InvalidOid));
			exprs = lappend(exprs, remap_vars(linitial(fc->expr->args), &in, OUTER_VAR));
			exprs = lappend(exprs, remap_vars(call_arg(fc), &in, OUTER_VAR));
			display = lappend(display, hb_display_call(fc, remap_vars((Node *) fc->expr, &in, OUTER_VAR)));
		}
	}

	/*
	 * The node's outputs, scores read from the batch and everything else
	 * from the input's columns.  Outputs nobody reads any more (an Agg's
	 * input whose only use was a call's row) become NULLs, so that the
	 * input need not produce them.  First every input column is found,
	 * then the calls are numbered after them.
	 */
	resno = 1;
	foreach(lc, plan->targetlist)
	{
		TargetEntry *te = lfirst(lc);
		Expr	   *e = te->expr;
		TargetEntry *nte;

		if (!keep_all_outputs && !bms_is_member(te->resno, outputs_used))
			e = (Expr *) makeNullConst(exprType((Node *) e), exprTypmod((Node *) e),
									   exprCollation((Node *) e));
		nte = makeTargetEntry(e, resno++, te->resname, te->resjunk);
		nte->ressortgroupref = te->ressortgroupref;
		nte->resorigtbl = te->resorigtbl;
		nte->resorigcol = te->resorigcol;
		tlist = lappend(tlist, nte);
	}
	foreach(lc, extra)
		tlist = lappend(tlist, makeTargetEntry((Expr *) lfirst(lc), resno++, NULL, true));
	(void) rewrite_expr((Node *) tlist, calls, &in, 0, true);
	(void) rewrite_expr((Node *) move_quals, calls, &in, 0, true);
	n_input = list_length(in.vars);
	tlist = (List *) rewrite_expr((Node *) tlist, calls, &in, n_input + 1, false);
	quals = (List *) rewrite_expr((Node *) move_quals, calls, &in, n_input + 1, false);
	Assert(list_length(in.vars) == n_input);
	if (columns && own_tuples && n_input > natts && system_columns_only(in.vars, natts, scanrelid))
	{
		/*
		 * ctid or tableoid besides the table's columns (ORDER BY score,
		 * ctid): as columns of the input they would make the scan project
		 * every row, and its rows could no longer be read lazily; the node
		 * takes them from the rows' identity in the scan's slot instead.
		 */
		sys = list_copy_tail(in.vars, natts);
		in.vars = list_truncate(in.vars, natts);
	}

	/* the node itself now produces just those columns */
	{
		Plan	   *input = plan;
		List	   *itl = NIL;
		int			i = 1;
		Plan	   *node;

		foreach(lc, in.vars)
			itl = lappend(itl, makeTargetEntry(lfirst(lc), i++, NULL, false));
		input->targetlist = itl;
		input->qual = keep_quals;
		node = (Plan *) make_score_node(ctx, input, calls, display, privs, exprs,
										tlist, quals, plan, sys);
		/* the calls of the later quals and of the outputs, over its rows */
		if (move_quals != NIL)
			node = score_above(ctx, node, NIL, true, NULL);
		return node;
	}
}

/*
 * A scoring node over a plan that does not project (a Sort, a Hash...):
 * the input's rows pass through, the calls' scores follow them.
 */
static Plan *
score_over(RewriteCtx *ctx, Plan *input, List *calls_exprs)
{
	List	   *calls = NIL;
	List	   *privs = NIL;
	List	   *exprs = NIL;
	List	   *display = NIL;
	List	   *tlist;
	ListCell   *lc;
	int			resno;

	foreach(lc, calls_exprs)
		calls = hb_find_calls_or_agg(lfirst(lc), calls, true);
	foreach(lc, calls)
	{
		FoundCall  *fc = lfirst(lc);

		privs = lappend(privs, call_private(fc, fc->pinned ? HB_SOURCE_ARGS : HB_SOURCE_DATUM,
											InvalidOid, InvalidOid));
		exprs = lappend(exprs, copyObject(linitial(fc->expr->args)));
		exprs = lappend(exprs, copyObject(call_arg(fc)));
		display = lappend(display, hb_display_call(fc, (Node *) fc->expr));
	}
	tlist = pass_through_tlist(input, INDEX_VAR);
	resno = list_length(tlist) + 1;
	foreach(lc, calls)
		tlist = lappend(tlist,
						makeTargetEntry((Expr *) makeVar(INDEX_VAR, resno, ((FoundCall *) lfirst(lc))->expr->funcresulttype,
														 -1, InvalidOid, 0),
										resno, NULL, true)),
			resno++;
	return (Plan *) make_score_node(ctx, input, calls, display, privs, exprs,
									tlist, NIL, input, NIL);
}

/*
 * Nodes whose target list and quals may be evaluated by a node above
 * them: they produce rows from their inputs or a relation, one output row
 * per row they form, and their expressions read only those rows.  (An Agg
 * or a WindowAgg computes what only it can.)
 */
static bool
can_split(Plan *plan)
{
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_SubqueryScan:
		case T_FunctionScan:
		case T_TableFuncScan:
		case T_ValuesScan:
		case T_CteScan:
		case T_NamedTuplestoreScan:
		case T_WorkTableScan:
		case T_ForeignScan:
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
		case T_Gather:
			return true;
		case T_Result:
			return plan->lefttree != NULL;
		default:
			return false;
	}
}

static bool
is_score_node(Plan *plan)
{
	return plan != NULL && IsA(plan, CustomScan) &&
		((CustomScan *) plan)->methods == &hb_score_scan_methods;
}

/* Outputs of an Agg's input that the Agg still reads (1-based). */
static bool
outer_refs_walker(Node *node, Bitmapset **used)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == OUTER_VAR)
	{
		*used = bms_add_member(*used, ((Var *) node)->varattno);
		return false;
	}
	return expression_tree_walker(node, outer_refs_walker, used);
}

/* Can every child of an Append take the calls itself? */
static bool
append_children_split(Append *app)
{
	ListCell   *lc;

	if (app->appendplans == NIL || app->plan.qual != NIL)
		return false;
	foreach(lc, app->appendplans)
	{
		Plan	   *child = lfirst(lc);

		if (!can_split(child) || IsA(child, Result) || is_score_node(child) ||
			list_length(child->targetlist) != list_length(app->plan.targetlist))
			return false;
	}
	return true;
}

/*
 * An Agg whose aggregate arguments score: a scoring node goes between it
 * and its input, and the Agg reads the scores as input columns.
 */
static Plan *
score_below_agg(RewriteCtx *ctx, Agg *agg)
{
	Plan	   *input = agg->plan.lefttree;
	List	   *calls;
	List	   *call_list = NIL;
	Bitmapset  *used = NULL;
	Plan	   *scored;
	int			first;
	ListCell   *lc;

	calls = hb_find_calls((Node *) agg->plan.targetlist, NIL, true);
	calls = hb_find_calls((Node *) agg->plan.qual, calls, true);
	if (calls == NIL || input == NULL || input->plan_rows < 2.0)
		return (Plan *) agg;
	first = list_length(input->targetlist) + 1;
	agg->plan.targetlist = (List *) replace_calls((Node *) agg->plan.targetlist,
												  calls, OUTER_VAR, first);
	agg->plan.qual = (List *) replace_calls((Node *) agg->plan.qual, calls,
											OUTER_VAR, first);
	(void) outer_refs_walker((Node *) agg->plan.targetlist, &used);
	(void) outer_refs_walker((Node *) agg->plan.qual, &used);
	for (int i = 0; i < agg->numCols; i++)
		used = bms_add_member(used, agg->grpColIdx[i]);
	foreach(lc, calls)
		call_list = lappend(call_list, ((FoundCall *) lfirst(lc))->expr);

	if (can_split(input) && !IsA(input, Result))
	{
		/* the calls in terms of the input's own Vars */
		List	   *inlined = NIL;

		foreach(lc, call_list)
			inlined = lappend(inlined, inline_outer_mutator(lfirst(lc), input->targetlist));
		scored = score_above(ctx, input, inlined, false, used);
	}
	else if (IsA(input, Append) && append_children_split((Append *) input))
	{
		/*
		 * Partitions (and UNION ALL): each child scores its own rows, and
		 * the Append passes the scores up as more columns.
		 */
		Append	   *app = (Append *) input;
		int			n = list_length(input->targetlist);
		int			j = 0;

		foreach(lc, app->appendplans)
		{
			Plan	   *child = lfirst(lc);
			List	   *inlined = NIL;
			ListCell   *lc2;

			foreach(lc2, call_list)
				inlined = lappend(inlined,
								  inline_outer_mutator(lfirst(lc2), child->targetlist));
			lfirst(lc) = score_above(ctx, child, inlined, false, used);
		}
		foreach(lc, calls)
		{
			FoundCall  *fc = lfirst(lc);

			j++;
			input->targetlist = lappend(input->targetlist,
										makeTargetEntry((Expr *) makeVar(OUTER_VAR, n + j,
																		 fc->expr->funcresulttype,
																		 -1, InvalidOid, 0),
														n + j, NULL, true));
		}
		scored = input;
	}
	else
		scored = score_over(ctx, input, call_list);
	agg->plan.lefttree = scored;
	return (Plan *) agg;
}

/* ---- walking the plan ---- */

/* A bounded sort on the way down: what a top-K node would need. */
typedef struct SortBound
{
	int64		bound;			/* rows the sort must return, or -1 */
	Node	   *count;			/* the Limit's expressions, when not constant */
	Node	   *offset;
} SortBound;

static const SortBound no_bound = {-1, NULL, NULL};

/*
 * a function a LIMIT bound may not call when the node evaluates it again,
 * perhaps in a parallel worker (immutability is contain_mutable_functions'
 * to check, below)
 */
static bool
unfit_bound_function(Oid funcid, void *ctx)
{
	return func_parallel(funcid) != PROPARALLEL_SAFE;
}

/*
 * Whether a LIMIT / OFFSET expression cannot be evaluated again by the
 * node, in its own process (a parallel worker), to the value the Limit
 * computes: it must be made of constants, a statement's parameters and
 * immutable, parallel-safe functions.  A volatile one (nextval, random)
 * would give the node another k than the Limit's, and evaluate twice what
 * the query says once; a parallel-restricted one cannot run in a worker.
 */
static bool
plain_param_walker(Node *node, void *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	if (IsA(node, Var) || IsA(node, SubPlan))
		return true;
	if (check_functions_in_node(node, unfit_bound_function, ctx))
		return true;
	return expression_tree_walker(node, plain_param_walker, ctx);
}

static SortBound
limit_bound(Limit *limit)
{
	SortBound	b = no_bound;

	if (limit->limitOption != LIMIT_OPTION_COUNT || limit->limitCount == NULL)
		return b;
	if (IsA(limit->limitCount, Const) &&
		(limit->limitOffset == NULL || IsA(limit->limitOffset, Const)))
	{
		Const	   *c = (Const *) limit->limitCount;
		Const	   *o = (Const *) limit->limitOffset;
		int64		off = o == NULL || o->constisnull ? 0 : DatumGetInt64(o->constvalue);

		if (c->constisnull || DatumGetInt64(c->constvalue) < 0 || off < 0)
			return b;
		b.bound = DatumGetInt64(c->constvalue) + off;
		return b;
	}
	/* parameters of a prepared statement: evaluated when the scan starts */
	if (!plain_param_walker(limit->limitCount, NULL) &&
		!plain_param_walker(limit->limitOffset, NULL) &&
		!contain_mutable_functions(limit->limitCount) &&
		!contain_mutable_functions(limit->limitOffset))
	{
		b.bound = 0;
		b.count = limit->limitCount;
		b.offset = limit->limitOffset;
	}
	return b;
}

/* Is every reference to column attno in the expressions a bare Var? */
typedef struct BareCtx
{
	int			attno;
	bool		other;			/* found inside a larger expression */
} BareCtx;

static bool
bare_walker(Node *node, BareCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		if (((Var *) node)->varno == INDEX_VAR && ((Var *) node)->varattno == ctx->attno)
			ctx->other = true;
		return false;
	}
	return expression_tree_walker(node, bare_walker, ctx);
}

static bool
only_bare_refs(List *tlist, int attno)
{
	BareCtx		ctx = {attno, false};
	ListCell   *lc;

	foreach(lc, tlist)
	{
		TargetEntry *te = lfirst(lc);

		if (IsA(te->expr, Var))
			continue;
		(void) bare_walker((Node *) te->expr, &ctx);
	}
	return !ctx.other;
}

/*
 * Mark the scoring nodes that feed a bounded sort whose first key is a
 * score of theirs (output column col of plan).  Through an Append (each
 * child's rows reach the sort among others) and a Gather (each worker's
 * do): every node prunes with what it has seen itself, which is never
 * more than the sort has (see pg_scan_exec.c).
 */
static void
mark_topk(Plan *plan, int col, Sort *sort, SortBound sb)
{
	CustomScan *cs;
	TargetEntry *te;
	Var		   *v;
	int			n_input;
	int			call;
	List	   *privs;
	bool		descending;
	ListCell   *lc;

	if (sb.bound < 0 || plan == NULL)
		return;
	if (IsA(plan, Append))
	{
		foreach(lc, ((Append *) plan)->appendplans)
			mark_topk(lfirst(lc), col, sort, sb);
		return;
	}
	if (IsA(plan, Gather))
	{
		te = list_nth(plan->targetlist, col - 1);
		if (IsA(te->expr, Var) && ((Var *) te->expr)->varno == OUTER_VAR &&
			plan->qual == NIL)
			mark_topk(plan->lefttree, ((Var *) te->expr)->varattno, sort, sb);
		return;
	}
	if (!is_score_node(plan))
		return;
	cs = (CustomScan *) plan;
	if (cs->scan.plan.qual != NIL)
		return;
	te = list_nth(cs->scan.plan.targetlist, col - 1);
	if (!IsA(te->expr, Var) || ((Var *) te->expr)->varno != INDEX_VAR)
		return;
	v = (Var *) te->expr;
	n_input = intVal(linitial(cs->custom_private));
	call = v->varattno - n_input - 1;
	if (call < 0 || lthird(cs->custom_private) != NIL)
		return;
	/*
	 * Pruned rows do not go up, unless this node's expressions are volatile
	 * (pg_scan_exec.c's skip_ok): then they carry a stand-in score, which
	 * only the sort may read.  Otherwise expressions of the score (a cast,
	 * a rounding beside the sort key) see real scores only.
	 */
	if (!only_bare_refs(cs->scan.plan.targetlist, v->varattno) &&
		contain_volatile_functions((Node *) cs->scan.plan.targetlist))
		return;
	privs = list_nth(lsecond(cs->custom_private), call);
	if (intVal(linitial(privs)) != HB_CALL_PREDICT)
		return;
	if (sort->sortOperators[0] == Float8LessOperator)
		descending = false;
	else if (sort->sortOperators[0] == get_commutator(Float8LessOperator))
		descending = true;
	else
		return;
	lthird(cs->custom_private) = list_make3(makeInteger(call),
											makeInteger((int) Min(sb.bound, INT_MAX)),
											makeInteger(descending));
	if (sb.count != NULL)
	{
		cs->custom_exprs = lappend(cs->custom_exprs, copyObject(sb.count));
		cs->custom_exprs = lappend(cs->custom_exprs,
								   sb.offset ? copyObject(sb.offset) :
								   (Node *) makeConst(INT8OID, -1, InvalidOid, 8,
													  Int64GetDatum(0), false, true));
	}
}

/* A Material over plan, as setrefs would have built it (mark, rewind). */
static Plan *
material_over(RewriteCtx *ctx, Plan *plan)
{
	Material   *m = makeNode(Material);

	copy_plan_fields(&m->plan, plan, ctx);
	m->plan.targetlist = pass_through_tlist(plan, OUTER_VAR);
	m->plan.lefttree = plan;
	m->plan.extParam = bms_copy(plan->extParam);
	m->plan.allParam = bms_copy(plan->allParam);
	return (Plan *) m;
}

static Plan *rewrite_plan(RewriteCtx *ctx, Plan *plan, SortBound sb);

static List *
rewrite_list(RewriteCtx *ctx, List *plans)
{
	ListCell   *lc;

	foreach(lc, plans)
		lfirst(lc) = rewrite_plan(ctx, lfirst(lc), no_bound);
	return plans;
}

static Plan *
rewrite_plan(RewriteCtx *ctx, Plan *plan, SortBound sb)
{
	if (plan == NULL)
		return NULL;
	check_stack_depth();

	switch (nodeTag(plan))
	{
		case T_Limit:
			plan->lefttree = rewrite_plan(ctx, plan->lefttree,
										  limit_bound((Limit *) plan));
			return plan;
		case T_Sort:
			plan->lefttree = rewrite_plan(ctx, plan->lefttree, no_bound);
			if (((Sort *) plan)->numCols > 0)
				mark_topk(plan->lefttree, ((Sort *) plan)->sortColIdx[0],
						  (Sort *) plan, sb);
			return plan;
		case T_GatherMerge:
			/* the bound reaches the workers' sorts (tuples_needed) */
			plan->lefttree = rewrite_plan(ctx, plan->lefttree, sb);
			return plan;
		case T_Agg:
			plan->lefttree = rewrite_plan(ctx, plan->lefttree, no_bound);
			return score_below_agg(ctx, (Agg *) plan);
		case T_Append:
			rewrite_list(ctx, ((Append *) plan)->appendplans);
			return plan;
		case T_MergeAppend:
			rewrite_list(ctx, ((MergeAppend *) plan)->mergeplans);
			return plan;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				rewrite_plan(ctx, ((SubqueryScan *) plan)->subplan, no_bound);
			break;
		case T_CustomScan:
			rewrite_list(ctx, ((CustomScan *) plan)->custom_plans);
			return plan;
		case T_BitmapAnd:
		case T_BitmapOr:
		case T_ProjectSet:
		case T_WindowAgg:
			plan->lefttree = rewrite_plan(ctx, plan->lefttree, no_bound);
			plan->righttree = rewrite_plan(ctx, plan->righttree, no_bound);
			return plan;
		case T_MergeJoin:
			plan->lefttree = rewrite_plan(ctx, plan->lefttree, no_bound);
			plan->righttree = rewrite_plan(ctx, plan->righttree, no_bound);
			/* the inner side is marked and restored: a scoring node is not */
			if (is_score_node(plan->righttree))
				plan->righttree = material_over(ctx, plan->righttree);
			break;
		default:
			plan->lefttree = rewrite_plan(ctx, plan->lefttree, no_bound);
			plan->righttree = rewrite_plan(ctx, plan->righttree, no_bound);
			break;
	}

	/* a node that projects: scan, join, Result with an input, ... */
	if (!can_split(plan))
		return plan;
	return score_above(ctx, plan, NIL, true, NULL);
}

/* ---- streaming the batched functions (pg_batch_stream.c) ---- */

typedef struct StreamCtx
{
	int		   *next_id;
	int			nodes;
} StreamCtx;

/*
 * Walk the nodes that run once per execution of their parent (a join's
 * outer side, an Append's children, ...), never a join's inner side or a
 * recursive term, which run again within the statement, and put HbirdBatch
 * in place of a Function Scan of a batched function there.
 */
static Plan *
stream_walk(Plan *plan, StreamCtx *ctx)
{
	ListCell   *lc;

	if (plan == NULL)
		return NULL;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_FunctionScan:
			{
				FunctionScan *fs = (FunctionScan *) plan;
				RangeTblFunction *rtf;
				HbCallKind	kind;
				Plan	   *p;

				if (list_length(fs->functions) != 1)
					return plan;
				rtf = linitial_node(RangeTblFunction, fs->functions);
				if (!IsA(rtf->funcexpr, FuncExpr) ||
					hb_scoring_role(((FuncExpr *) rtf->funcexpr)->funcid, &kind) != HB_ROLE_BATCH)
					return plan;
				p = hb_stream_function_scan(fs, *ctx->next_id);
				if (p == NULL)
					return plan;
				(*ctx->next_id)++;
				ctx->nodes++;
				return p;
			}
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				lfirst(lc) = stream_walk(lfirst(lc), ctx);
			return plan;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				lfirst(lc) = stream_walk(lfirst(lc), ctx);
			return plan;
		case T_SubqueryScan:
			((SubqueryScan *) plan)->subplan =
				stream_walk(((SubqueryScan *) plan)->subplan, ctx);
			return plan;
		case T_CustomScan:
			/* the batching scan reads its input once per scan */
			if (is_score_node(plan))
				plan->lefttree = stream_walk(plan->lefttree, ctx);
			return plan;
		case T_RecursiveUnion:
		case T_BitmapAnd:
		case T_BitmapOr:
		case T_Gather:
		case T_GatherMerge:
			return plan;
		default:
			/* joins: the outer side only */
			plan->lefttree = stream_walk(plan->lefttree, ctx);
			return plan;
	}
}

/*
 * Is there a scoring call, a scoring aggregate or a batched function
 * anywhere in the statement?  (a cheap first look)
 */
static bool
any_call_walker(Node *node, void *ctx)
{
	HbCallKind	kind;

	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) &&
		hb_scoring_role(((FuncExpr *) node)->funcid, &kind) != HB_ROLE_NONE)
		return true;
	if (IsA(node, Aggref) &&
		hb_scoring_role(((Aggref *) node)->aggfnoid, &kind) == HB_ROLE_AGG)
		return true;
	return expression_tree_walker(node, any_call_walker, ctx);
}

/*
 * Whether test holds for an expression of plan or of a plan below it: the
 * target lists and quals, and a function scan's functions.
 */
static bool
plan_any_expr(Plan *plan, bool (*test) (Node *node))
{
	ListCell   *lc;

	if (plan == NULL)
		return false;
	if (test((Node *) plan->targetlist) || test((Node *) plan->qual))
		return true;
	if (plan_any_expr(plan->lefttree, test) || plan_any_expr(plan->righttree, test))
		return true;
	switch (nodeTag(plan))
	{
		case T_Append:
			foreach(lc, ((Append *) plan)->appendplans)
				if (plan_any_expr(lfirst(lc), test))
					return true;
			break;
		case T_MergeAppend:
			foreach(lc, ((MergeAppend *) plan)->mergeplans)
				if (plan_any_expr(lfirst(lc), test))
					return true;
			break;
		case T_SubqueryScan:
			return plan_any_expr(((SubqueryScan *) plan)->subplan, test);
		case T_FunctionScan:
			return test((Node *) ((FunctionScan *) plan)->functions);
		default:
			break;
	}
	return false;
}

static bool
has_call(Node *node)
{
	return any_call_walker(node, NULL);
}

static bool
plan_has_calls(Plan *plan)
{
	return plan_any_expr(plan, has_call);
}

/*
 * Whether the statement calls a volatile function anywhere, its subqueries
 * included.  An UPDATE or DELETE that does stays row at a time: a batch
 * evaluates its rows' expressions (the calls' arguments, the quals below
 * the node) before ModifyTable handles the first of those rows, and a
 * volatile function sees the statement's earlier changes row at a time.
 */
static bool
stmt_has_volatile(PlannedStmt *stmt)
{
	ListCell   *lc;

	if (plan_any_expr(stmt->planTree, contain_volatile_functions))
		return true;
	foreach(lc, stmt->subplans)
		if (plan_any_expr(lfirst(lc), contain_volatile_functions))
			return true;
	return false;
}

/*
 * Planning without the hook.  A backend that has not loaded hbird (no
 * shared_preload_libraries) loads it while planning its first statement
 * that calls a scoring function: the functions' planner support function
 * (hb_scoring_support) runs hbird's code as the expressions are simplified.
 * planner() had already passed planner_hook by then, so that statement is
 * planned without hb_planner, and would run row at a time.  The support
 * function notes it (hb_planner clears hb_just_loaded before it plans, so
 * that is still set only outside it), and the statement's
 * executor start rewrites a copy of its plan as hb_planner would have
 * (without moving calls to shards: pg_pushdown.c's rewrite of the query
 * needs the planner).  Only until the first statement planned or started
 * through the hooks (hb_just_loaded): later, expression_planner calls the
 * support function without hb_planner too.  Any statement planned through
 * hb_planner clears the note, so it can only reach the next plan to start,
 * the one whose planning loaded hbird; a plan that holds an HbirdScore or
 * HbirdBatch node already is left alone all the same.
 */
static bool hb_unhooked_plan = false;
static bool hb_just_loaded = true;	/* no statement started or planned
									 * through the hooks since the load */
static ExecutorStart_hook_type prev_executor_start = NULL;

PG_FUNCTION_INFO_V1(hb_scoring_support);

/*
 * The planner support function of the scoring functions and their pinned
 * forms.  It answers no request.  It is there so that planning a statement
 * that calls one runs hbird's code, and so loads the library, while the
 * expressions are simplified: before the planner reaches its base
 * relations, where hb_set_rel_pathlist (pg_pushdown.c) checks a pinned
 * call (a backend that had not loaded hbird would otherwise plan its first
 * such statement without the check, and ship the call unchecked), and
 * before the executor starts, where such a statement is batched (above).
 */
Datum
hb_scoring_support(PG_FUNCTION_ARGS)
{
	/*
	 * Only in the statement that loaded hbird, planned without hb_planner:
	 * later, expression_planner (a CALL's arguments, a default) calls this
	 * without hb_planner too
	 */
	if (hb_just_loaded)
		hb_unhooked_plan = true;
	PG_RETURN_POINTER(NULL);
}

/* Does the plan hold an HbirdScore or HbirdBatch node already? */
static bool
has_hbird_node(Plan *plan)
{
	ListCell   *lc;
	List	   *kids = NIL;

	if (plan == NULL)
		return false;
	if (IsA(plan, CustomScan))
	{
		const char *name = ((CustomScan *) plan)->methods->CustomName;

		if (strcmp(name, "HbirdScore") == 0 || strcmp(name, "HbirdBatch") == 0)
			return true;
		kids = ((CustomScan *) plan)->custom_plans;
	}
	else if (IsA(plan, Append))
		kids = ((Append *) plan)->appendplans;
	else if (IsA(plan, MergeAppend))
		kids = ((MergeAppend *) plan)->mergeplans;
	else if (IsA(plan, BitmapAnd))
		kids = ((BitmapAnd *) plan)->bitmapplans;
	else if (IsA(plan, BitmapOr))
		kids = ((BitmapOr *) plan)->bitmapplans;
	else if (IsA(plan, SubqueryScan))
		return has_hbird_node(((SubqueryScan *) plan)->subplan);
	foreach(lc, kids)
		if (has_hbird_node(lfirst(lc)))
			return true;
	return has_hbird_node(plan->lefttree) || has_hbird_node(plan->righttree);
}

static bool
stmt_has_hbird_node(PlannedStmt *stmt)
{
	ListCell   *lc;

	if (has_hbird_node(stmt->planTree))
		return true;
	foreach(lc, stmt->subplans)
		if (has_hbird_node(lfirst(lc)))
			return true;
	return false;
}

/*
 * Below a Gather, the scoring nodes are parallel-aware: their leader
 * shares the compiled models with the workers (pg_scan_share.c), and
 * EXPLAIN calls them "Parallel Custom Scan".  Whether it does is decided
 * when the query runs (hbird.share_plans), so plans do not depend on it.
 */
static void
mark_parallel(Plan *plan, bool below_gather)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
		below_gather = true;
	if (below_gather && is_score_node(plan))
		plan->parallel_aware = true;
	foreach(lc, hb_plan_children(plan))
		mark_parallel(lfirst(lc), below_gather);
}

/*
 * The batching scan's rewrite of a finished plan (the top of the file);
 * scroll: the plan must run backward too.
 */
static PlannedStmt *
rewrite_stmt(PlannedStmt *stmt, HbPushdown *pd, bool scroll)
{
	RewriteCtx	ctx;
	bool		any = false;
	ListCell   *lc;

	if (!hb_batch_scan ||
		(stmt->commandType != CMD_SELECT && stmt->commandType != CMD_INSERT &&
		 stmt->commandType != CMD_UPDATE && stmt->commandType != CMD_DELETE) ||
		stmt->rowMarks != NIL || stmt->utilityStmt != NULL)
		return stmt;
	any = plan_has_calls(stmt->planTree);
	foreach(lc, stmt->subplans)
		any = any || plan_has_calls(lfirst(lc));
	if (!any)
		return stmt;
	if ((stmt->commandType == CMD_UPDATE || stmt->commandType == CMD_DELETE) &&
		stmt_has_volatile(stmt))
		return stmt;

	ctx.stmt = stmt;
	ctx.next_id = hb_plan_next_node_id(stmt);
	ctx.nodes = 0;
	ctx.pd = pd;

	stmt->planTree = rewrite_plan(&ctx, stmt->planTree, no_bound);
	foreach(lc, stmt->subplans)
		lfirst(lc) = rewrite_plan(&ctx, lfirst(lc), no_bound);
	/* batched functions run once per statement stream their rows */
	{
		StreamCtx	sctx = {&ctx.next_id, 0};

		stmt->planTree = stream_walk(stmt->planTree, &sctx);
		ctx.nodes += sctx.nodes;
	}

	/* a scrollable cursor needs backward fetches: rows come from a store */
	if (ctx.nodes > 0 && scroll && !ExecSupportsBackwardScan(stmt->planTree))
		stmt->planTree = material_over(&ctx, stmt->planTree);
	/* (a Gather may sit in an initplan or subplan, as in the plan's tree) */
	if (ctx.nodes > 0 && stmt->parallelModeNeeded)
	{
		mark_parallel(stmt->planTree, false);
		foreach(lc, stmt->subplans)
			mark_parallel(lfirst(lc), false);
	}
	return stmt;
}

static PlannedStmt *
hb_planner(Query *parse, const char *query_string, int cursorOptions,
		   ParamListInfo boundParams)
{
	PlannedStmt *stmt;
	HbPushdown	pd;
	uint64		pinned_runs = hb_pinned_runs;	/* to see the planner run one */

	/* a plan made through this hook: no earlier one is still waiting */
	hb_unhooked_plan = false;
	hb_just_loaded = false;

	/* scoring calls over foreign tables go to the shards (pg_pushdown.c) */
	hb_pushdown_prepare(parse, &pd);
	stmt = prev_planner ?
		prev_planner(parse, query_string, cursorOptions, boundParams) :
		standard_planner(parse, query_string, cursorOptions, boundParams);
	pd.folded_pinned = hb_pinned_runs != pinned_runs;
	hb_pushdown_finish(stmt, &pd);
	return rewrite_stmt(stmt, &pd, (cursorOptions & CURSOR_OPT_SCROLL) != 0);
}

/*
 * The executor start of the statement whose planning loaded hbird (above):
 * its plan, planned without hb_planner, is rewritten as a copy (the plan
 * may be a cached one that others use), the rows scored in batches from
 * the first statement of a session on.  Plans cached while hbird was not
 * loaded (this one, a PL/pgSQL statement's) are made again, through the
 * hook, when next used.  A plan that must run backward (a cursor that
 * PostgreSQL made scrollable because the plan could) is left as it is: its
 * rewrite would need a store of every row it returns.
 */
static void
hb_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (hb_unhooked_plan)
	{
		HbPushdown	pd = {false, NIL, NIL};
		PlannedStmt *stmt = queryDesc->plannedstmt;

		hb_unhooked_plan = false;
		ResetPlanCache();
		if (hb_batch_scan && !(eflags & EXEC_FLAG_BACKWARD) &&
			!stmt_has_hbird_node(stmt))
			queryDesc->plannedstmt = rewrite_stmt(copyObject(stmt), &pd, false);
	}
	hb_just_loaded = false;
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

void
hb_scan_init(void)
{
	RegisterCustomScanMethods(&hb_score_scan_methods);
	prev_planner = planner_hook;
	planner_hook = hb_planner;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = hb_executor_start;
	hb_pushdown_init();
}
