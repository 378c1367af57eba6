/*
 * pg_scan_calls.c
 *	  Which scoring calls a plan node evaluates for every row it evaluates
 *	  its expressions for (pg_scan.h, FoundCall): what the batching scan
 *	  batches (pg_scan_plan.c) and what a shard's scan may compute instead
 *	  of the coordinator (pg_remote_scores.c).
 *
 * A call in a later CASE branch, a later COALESCE, AND/OR or row
 * comparison argument, or a FILTERed aggregate's argument runs for some
 * rows only: scoring it for every row would score rows the query never
 * scores (and raise their errors), so it is not found.
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"

#include "hbird.h"
#include "pg_scaleout.h"
#include "pg_scan.h"

typedef struct FindCtx
{
	List	   *calls;			/* FoundCall * */
	int			conditional;	/* > 0: inside a branch evaluated for some
								 * rows only */
	bool		outer_only;		/* Agg: calls must read only its input */
} FindCtx;

static bool
only_outer_vars_walker(Node *node, void *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varno != OUTER_VAR;
	return expression_tree_walker(node, only_outer_vars_walker, ctx);
}

/* Does the argument change from row to row (or run a subquery)? */
static bool
per_row(Node *arg)
{
	return contain_var_clause(arg) || contain_volatile_functions(arg) ||
		contain_subplans(arg);
}

/*
 * A pinned call (pg_pinned.c): name, version, sha256, origin and columns
 * must be the same for every row; the values are the row (or one array,
 * when columns is NULL).
 */
static HbCallKind
batchable_pinned(FuncExpr *f, HbCallKind kind, bool *is_array)
{
	Node	   *cols;

	if (list_length(f->args) < 6)
		return HB_CALL_NONE;
	for (int i = 0; i < 5; i++)
		if (per_row(list_nth(f->args, i)))
			return HB_CALL_NONE;
	for (int i = 5; i < list_length(f->args); i++)
		if (contain_subplans(list_nth(f->args, i)))
			return HB_CALL_NONE;
	cols = list_nth(f->args, 4);
	if (!IsA(cols, Const))
		return HB_CALL_NONE;
	*is_array = ((Const *) cols)->constisnull;
	if (*is_array && (list_length(f->args) != 6 ||
					  !hb_pin_array_type(exprType(list_nth(f->args, 5)))))
		return HB_CALL_NONE;	/* the function itself says what is wrong */
	return kind;
}

/* A scoring call the scan can batch, with its kind; else HB_CALL_NONE. */
static HbCallKind
batchable_call(FuncExpr *f, bool *is_array)
{
	HbCallKind	kind;

	if (f->funcretset)
		return HB_CALL_NONE;
	kind = hb_scoring_call(f->funcid, is_array);
	if (kind == HB_CALL_NONE)
		return kind;
	if (hb_pinned_function(f->funcid))
		return batchable_pinned(f, kind, is_array);
	if (list_length(f->args) != 2)
		return HB_CALL_NONE;
	/* the model must be the same for every row of the scan */
	if (per_row(linitial(f->args)))
		return HB_CALL_NONE;
	/* the row or array: evaluated per row by the scan; no subqueries */
	if (contain_subplans(lsecond(f->args)))
		return HB_CALL_NONE;
	return kind;
}

/*
 * The rows of a scoring aggregate (hb_predict_agg(name, row) and its class
 * and targets forms) can be scored by the batching scan below its Agg,
 * which then hands the aggregate each row's score instead of the row
 * (pg_batch.c keeps them).  That holds the same rows in the same order,
 * ORDER BY inside the aggregate and GROUP BY included, when every row the
 * aggregate is given is scored: no FILTER, no DISTINCT (which would
 * compare scores instead of rows), a model name that does not depend on
 * the row.  The call stands as the aggregate's function applied to one
 * row's arguments (never equal to a plain call of hb_predict), typed as
 * what one row scores to; NULL when the aggregate does not qualify.
 */
FuncExpr *
hb_agg_call_expr(Aggref *a)
{
	HbCallKind	kind;
	TargetEntry *name;
	TargetEntry *row;
	Oid			rettype;
	FuncExpr   *f;

	if (hb_scoring_role(a->aggfnoid, &kind) != HB_ROLE_AGG)
		return NULL;
	if (!OidIsValid(hb_scoring_row_function(a->aggfnoid)) ||
		a->aggkind != AGGKIND_NORMAL || a->aggdistinct != NIL ||
		a->aggfilter != NULL || a->aggstar || a->aggvariadic ||
		a->agglevelsup != 0 || a->aggsplit != AGGSPLIT_SIMPLE ||
		a->aggdirectargs != NIL || list_length(a->aggargtypes) != 2 ||
		list_length(a->args) < 2)
		return NULL;
	name = linitial_node(TargetEntry, a->args);
	row = lsecond_node(TargetEntry, a->args);
	if (name->resjunk || row->resjunk ||
		per_row((Node *) name->expr) ||
		contain_subplans((Node *) row->expr) ||
		!type_is_rowtype(exprType((Node *) row->expr)))
		return NULL;
	rettype = kind == HB_CALL_CLASS ? INT4OID :
		kind == HB_CALL_TARGETS ? FLOAT8ARRAYOID : FLOAT8OID;
	f = makeFuncExpr(a->aggfnoid, rettype,
					 list_make2(copyObject(name->expr), copyObject(row->expr)),
					 InvalidOid, a->inputcollid, COERCE_EXPLICIT_CALL);
	return f;
}

/* A scoring aggregate's rows as a call, once. */
static List *
add_agg_call(List *calls, FuncExpr *f)
{
	HbCallKind	kind;
	ListCell   *lc;
	FoundCall  *fc;

	foreach(lc, calls)
		if (equal(((FoundCall *) lfirst(lc))->expr, f))
			return calls;
	(void) hb_scoring_role(f->funcid, &kind);
	fc = palloc0(sizeof(FoundCall));
	fc->expr = f;
	fc->kind = kind;
	fc->is_array = false;
	fc->agg = true;
	fc->display_funcid = hb_scoring_row_function(f->funcid);
	return lappend(calls, fc);
}

/* Is f a scoring aggregate's rows (agg_call_expr)? */
bool
hb_is_agg_call(Node *node)
{
	HbCallKind	kind;

	return IsA(node, FuncExpr) &&
		hb_scoring_role(((FuncExpr *) node)->funcid, &kind) == HB_ROLE_AGG;
}

List *
hb_find_calls_or_agg(Node *node, List *calls, bool outer_only)
{
	if (hb_is_agg_call(node))
		return add_agg_call(calls, (FuncExpr *) node);
	return hb_find_calls(node, calls, outer_only);
}

/* What EXPLAIN shows for a call: an aggregate's rows as its row function. */
Node *
hb_display_call(FoundCall *fc, Node *expr)
{
	FuncExpr   *f = (FuncExpr *) copyObject(expr);

	f->funcid = fc->display_funcid;
	return (Node *) f;
}

static bool
find_calls_walker(Node *node, FindCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) node;
		bool		is_array;
		HbCallKind	kind = batchable_call(f, &is_array);

		if (kind != HB_CALL_NONE && ctx->conditional == 0 &&
			(!ctx->outer_only || !only_outer_vars_walker((Node *) f->args, NULL)))
		{
			ListCell   *lc;

			foreach(lc, ctx->calls)
				if (equal(((FoundCall *) lfirst(lc))->expr, f))
					return false;
			{
				FoundCall  *fc = palloc0(sizeof(FoundCall));

				fc->expr = f;
				fc->kind = kind;
				fc->is_array = is_array;
				fc->display_funcid = f->funcid;
				fc->pinned = hb_pinned_function(f->funcid);
				ctx->calls = lappend(ctx->calls, fc);
			}
			return false;
		}
	}
	if (IsA(node, Aggref) && ctx->conditional == 0)
	{
		FuncExpr   *f = hb_agg_call_expr((Aggref *) node);

		if (f != NULL &&
			(!ctx->outer_only || !only_outer_vars_walker((Node *) f->args, NULL)))
		{
			ctx->calls = add_agg_call(ctx->calls, f);
			return false;
		}
	}
	if (IsA(node, CaseExpr))
	{
		/* only the first condition is evaluated for every row */
		CaseExpr   *c = (CaseExpr *) node;
		bool		first = true;
		ListCell   *lc;

		if (find_calls_walker((Node *) c->arg, ctx))
			return true;
		foreach(lc, c->args)
		{
			CaseWhen   *w = lfirst_node(CaseWhen, lc);

			if (!first)
				ctx->conditional++;
			if (find_calls_walker((Node *) w->expr, ctx))
				return true;
			if (first)
				ctx->conditional++;
			if (find_calls_walker((Node *) w->result, ctx))
				return true;
			ctx->conditional--;
			if (!first)
				ctx->conditional--;
			first = false;
		}
		ctx->conditional++;
		if (find_calls_walker((Node *) c->defresult, ctx))
			return true;
		ctx->conditional--;
		return false;
	}
	if (IsA(node, CoalesceExpr) || IsA(node, BoolExpr))
	{
		/* the first argument always, the others only sometimes */
		List	   *args = IsA(node, CoalesceExpr) ?
		((CoalesceExpr *) node)->args : ((BoolExpr *) node)->args;
		ListCell   *lc;

		foreach(lc, args)
		{
			if (lc != list_head(args))
				ctx->conditional++;
			if (find_calls_walker(lfirst(lc), ctx))
				return true;
			if (lc != list_head(args))
				ctx->conditional--;
		}
		return false;
	}
	if (IsA(node, RowCompareExpr))
	{
		/* (a, b) < (c, d): the first pair always, later ones only on ties */
		RowCompareExpr *rc = (RowCompareExpr *) node;
		ListCell   *l;
		ListCell   *r;

		forboth(l, rc->largs, r, rc->rargs)
		{
			bool		later = l != list_head(rc->largs);

			if (later)
				ctx->conditional++;
			if (find_calls_walker(lfirst(l), ctx) || find_calls_walker(lfirst(r), ctx))
				return true;
			if (later)
				ctx->conditional--;
		}
		return false;
	}
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) node;
		bool		filtered = a->aggfilter != NULL;

		if (find_calls_walker((Node *) a->aggfilter, ctx))
			return true;
		if (filtered)
			ctx->conditional++;
		if (find_calls_walker((Node *) a->args, ctx) ||
			find_calls_walker((Node *) a->aggdirectargs, ctx))
			return true;
		if (filtered)
			ctx->conditional--;
		return false;
	}
	if (IsA(node, SubPlan) || IsA(node, AlternativeSubPlan) ||
		IsA(node, WindowFunc))
		return false;
	return expression_tree_walker(node, find_calls_walker, ctx);
}

List *
hb_find_calls(Node *node, List *calls, bool outer_only)
{
	FindCtx		ctx = {calls, 0, outer_only};

	(void) find_calls_walker(node, &ctx);
	return ctx.calls;
}

/*
 * The pinned calls in node that are evaluated for every row node is
 * evaluated for: not in a later CASE branch, COALESCE or AND/OR argument,
 * or a FILTERed aggregate (pg_remote_scores.c ships only those).
 */
List *
hb_pinned_calls_every_row(Node *node)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, hb_find_calls(node, NIL, false))
	{
		FoundCall  *fc = lfirst(lc);

		if (fc->pinned && !fc->agg)
			out = lappend(out, fc->expr);
	}
	return out;
}
