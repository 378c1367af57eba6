/*
 * pg_remote_scores.c
 *	  Scores in a foreign scan's own output computed by the shard
 *	  (docs/scale-out.md, "What runs on the shards").
 *
 * postgres_fdw 15 sends a plain scan of a foreign table as "SELECT columns
 * FROM table WHERE shipped quals": it ships expressions as filters, sort
 * keys and aggregates, never as output columns.  A query such as
 *
 *	SELECT id, hb_predict('m', t) FROM t_dist t
 *
 * therefore fetched every column the model reads and scored the rows on
 * the coordinator, one shard after the other (the batching node between
 * Append and the foreign scans kept them from running asynchronously).
 *
 * After standard_planner, before the batching scan's rewrite, a foreign
 * scan of an hbird server (pg_shard_map.c) whose target list or local
 * quals hold pinned calls (pg_pushdown.c wrote them) becomes the kind of
 * foreign scan postgres_fdw makes for a join or an aggregate it pushes
 * down: scanrelid 0, its tuples described by fdw_scan_tlist (the columns
 * the coordinator still needs, then one column per call), and a remote
 * query that wraps postgres_fdw's own:
 *
 *	SELECT s.c1, schema.hb_predict_pinned('m'::text, ..., s.c1, s.c2, ...)
 *	FROM (SELECT id, f0, ... FROM public.t_part WHERE ...) s(c1, c2, ...)
 *
 * (each value read as the coordinator would have read it: by the pinned
 * call, which carries the declared types, or for an array's elements by
 * hb_read_as: deparse_column).
 * The shard flattens the subquery and batches the call over its table
 * (its own batching scan); the coordinator reads the scores as it reads
 * any column (postgres_fdw asks the shard for extra_float_digits 3, so a
 * float8 arrives with its exact bits), and the scan stays asynchronous
 * under an Append.
 *
 * A join's calls over one side, and an Agg's over its input (scans, or
 * one side of a join), become those scans' columns first
 * (ship_join_calls, ship_agg_calls).
 *
 * Only where nothing else could change: a statement without row marks (no
 * EvalPlanQual recheck reads the scan's own row), a scan of the base
 * table (postgres_fdw's three private items, no fdw_scan_tlist, no system
 * column), every scoring call
 * evaluated for every row the scan returns, a pinned one with constant
 * leading arguments over plain columns of the table (or an ARRAY[] of
 * them) that the shard can cast to their declared types, results of a type
 * with an input function.  Anything else keeps
 * the scan as it was: the rows travel and the coordinator scores them.
 * The right to score was checked when the calls were pinned and again
 * for the planning role (pg_pushdown.c, hb_set_rel_pathlist); the shard
 * checks the version it holds.
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/plannodes.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "hbird.h"
#include "pg_scaleout.h"
#include "pg_scan.h"

/* postgres_fdw's private items of a base-table scan (its FdwScanPrivateIndex) */
#define FDW_PRIVATE_SQL			0
#define FDW_PRIVATE_ATTRS		1
#define FDW_PRIVATE_FETCH		2
#define FDW_PRIVATE_BASE_ITEMS	3

/* ---- what ships ---- */

/* The name postgres_fdw gives a column in its query. */
static char *
remote_column_name(Oid relid, AttrNumber attno)
{
	ListCell   *lc;

	foreach(lc, GetForeignColumnOptions(relid, attno))
	{
		DefElem    *d = lfirst(lc);

		if (strcmp(d->defname, "column_name") == 0)
			return pstrdup(quote_identifier(defGetString(d)));
	}
	return pstrdup(quote_identifier(get_attname(relid, attno, false)));
}

/* Whichever of two words *q starts with, past it; NULL for neither. */
static const char *
next_word(const char **q, const char *a, const char *b)
{
	if (strncmp(*q, a, strlen(a)) == 0)
	{
		*q += strlen(a);
		return a;
	}
	if (strncmp(*q, b, strlen(b)) == 0)
	{
		*q += strlen(b);
		return b;
	}
	return NULL;
}

/*
 * postgres_fdw's query, split for wrapping.  It ends in ORDER BY when the
 * plan above relies on the scan's order (a Group Aggregate over a Merge
 * Append, a merge join) or the query's LIMIT went to the shard with its
 * sort (ORDER BY a score LIMIT k).  An ORDER BY of plain columns as
 * postgres_fdw writes it ("col ASC NULLS LAST, ..." to the end) moves to
 * the wrapping query, by the wrapped query's column positions, so that the
 * shard flattens the subquery (it would not flatten a sorted one).  Any
 * other stays inside with its LIMIT: the wrapping query's subquery scan
 * hands on the rows in the order it gets them, and the calls of the
 * wrapping query then score only those rows.  *inner: the query to wrap;
 * *order: the wrapping query's ORDER BY (empty when none).  (A query that
 * locks rows belongs to a statement with row marks, which
 * hb_remote_scores leaves alone.)
 */
static void
split_remote_query(ForeignScan *fs, Oid relid, char **inner, char **order)
{
	const char *sql = strVal(list_nth(fs->fdw_private, FDW_PRIVATE_SQL));
	List	   *retrieved = (List *) list_nth(fs->fdw_private, FDW_PRIVATE_ATTRS);
	const char *p = NULL;
	const char *q;
	StringInfoData buf;

	*inner = pstrdup(sql);
	*order = "";
	for (q = strstr(sql, " ORDER BY "); q != NULL; q = strstr(q + 1, " ORDER BY "))
		p = q;
	if (p == NULL)
		return;
	initStringInfo(&buf);
	appendStringInfoString(&buf, " ORDER BY ");
	for (q = p + strlen(" ORDER BY ");;)
	{
		ListCell   *lc;
		int			pos = 0;
		const char *dir;
		const char *nulls;

		foreach(lc, retrieved)
		{
			char	   *name;

			if (lfirst_int(lc) <= 0)
				continue;
			name = remote_column_name(relid, lfirst_int(lc));
			if (strncmp(q, name, strlen(name)) == 0 && q[strlen(name)] == ' ')
			{
				pos = foreach_current_index(lc) + 1;
				q += strlen(name);
				break;
			}
		}
		if (pos == 0 || (dir = next_word(&q, " ASC", " DESC")) == NULL ||
			(nulls = next_word(&q, " NULLS FIRST", " NULLS LAST")) == NULL)
			return;				/* the sort stays inside */
		appendStringInfo(&buf, "s.c%d%s%s", pos, dir, nulls);
		if (*q == '\0')
			break;
		if (strncmp(q, ", ", 2) != 0)
			return;
		q += 2;
		appendStringInfoString(&buf, ", ");
	}
	*inner = pnstrdup(sql, p - sql);
	*order = buf.data;
}

/*
 * A foreign scan this file may change: a plain scan of a table of an hbird
 * server as postgres_fdw planned it.
 */
static bool
plain_shard_scan(Plan *plan, PlannedStmt *stmt)
{
	ForeignScan *fs = (ForeignScan *) plan;
	RangeTblEntry *rte;
	Oid			serverid;

	if (!IsA(plan, ForeignScan) || fs->operation != CMD_SELECT ||
		fs->scan.scanrelid == 0 || fs->fdw_scan_tlist != NIL || fs->fsSystemCol ||
		list_length(fs->fdw_private) != FDW_PRIVATE_BASE_ITEMS ||
		!IsA(list_nth(fs->fdw_private, FDW_PRIVATE_SQL), String))
		return false;
	rte = rt_fetch(fs->scan.scanrelid, stmt->rtable);
	return rte->rtekind == RTE_RELATION && hb_shard_table(rte->relid, &serverid) &&
		serverid == fs->fs_server;
}

/* a call's argument column: a test of the node that stands for it */
typedef bool (*ColumnTest) (Node *node, void *arg);

/*
 * Can the shard compute this pinned call: constant leading arguments, the
 * values plain columns (or an ARRAY[] of them), a result of a type with
 * an input function (the score is read back as text).
 */
static bool
call_ships(FuncExpr *f, ColumnTest column, void *arg)
{
	Oid			type = f->funcresulttype;
	ListCell   *lc;

	if (f->funcretset || list_length(f->args) < 6 || type == RECORDOID ||
		get_typtype(type) == TYPTYPE_PSEUDO)
		return false;
	foreach(lc, f->args)
	{
		Node	   *a = lfirst(lc);

		if (foreach_current_index(lc) < 5)
		{
			if (!IsA(a, Const))
				return false;
		}
		else if (IsA(a, ArrayExpr))
		{
			ArrayExpr  *arr = (ArrayExpr *) a;
			ListCell   *le;

			if (arr->multidims || arr->elements == NIL)
				return false;
			foreach(le, arr->elements)
				if (!column(lfirst(le), arg))
					return false;
		}
		else if (!column(a, arg))
			return false;
	}
	return true;
}

/*
 * What a node's expressions read: the calls to ship, the columns read
 * outside them.  ok goes false on a call that cannot ship, a call that is
 * not evaluated for every row (a later CASE branch, a FILTERed aggregate:
 * the shard would score rows the query never scores), or a scoring call
 * that was not pinned.
 */
typedef struct Reads
{
	ColumnTest	column;
	void	   *arg;
	List	   *every_row;		/* pinned calls evaluated for every row */
	List	   *calls;			/* FuncExpr *, to ship */
	List	   *vars;			/* Var *, read outside them */
	bool		ok;
} Reads;

static bool
reads_walker(Node *node, Reads *r)
{
	if (node == NULL || !r->ok)
		return false;
	if (IsA(node, Var))
	{
		if (!list_member(r->vars, node))
			r->vars = lappend(r->vars, node);
		return false;
	}
	if (IsA(node, FuncExpr))
	{
		FuncExpr   *f = (FuncExpr *) node;
		bool		is_array;

		if (hb_pinned_function(f->funcid))
		{
			if (!list_member(r->every_row, f) || !call_ships(f, r->column, r->arg))
				r->ok = false;
			else if (!list_member(r->calls, f))
				r->calls = lappend(r->calls, f);
			return false;
		}
		if (hb_scoring_call(f->funcid, &is_array) != HB_CALL_NONE)
		{
			r->ok = false;
			return false;
		}
	}
	return expression_tree_walker(node, reads_walker, r);
}

/* The position of an equal node in list, from 1; 0 if none. */
static int
position_of(List *list, Node *node)
{
	ListCell   *lc;

	foreach(lc, list)
		if (equal(lfirst(lc), node))
			return foreach_current_index(lc) + 1;
	return 0;
}

/* ---- a scan's own expressions ---- */

typedef struct ScanShip
{
	Index		scanrelid;
	List	   *retrieved;		/* postgres_fdw's retrieved attnums */
	List	   *vars;			/* scan tuple: these columns, */
	List	   *calls;			/* then these scores */
} ScanShip;

/* A plain column of the scanned table that the remote query returns. */
static bool
scan_column(Node *node, void *arg)
{
	ScanShip   *ss = arg;
	Var		   *v = (Var *) node;

	return node != NULL && IsA(node, Var) && v->varno == ss->scanrelid &&
		v->varlevelsup == 0 && v->varattno > 0 &&
		list_member_int(ss->retrieved, v->varattno);
}

/*
 * ... and as a call's argument: one the shard reads as the coordinator
 * does (hb_pin_reads_as: a built-in type, not a length-limited string);
 * otherwise the scan stays as it was
 */
static bool
scan_argument(Node *node, void *arg)
{
	return scan_column(node, arg) &&
		hb_pin_reads_as(((Var *) node)->vartype, ((Var *) node)->vartypmod);
}

/* The scan's expressions read the scan tuple that fdw_scan_tlist describes. */
static Node *
scan_tuple_mutator(Node *node, ScanShip *ss)
{
	int			pos;

	if (node == NULL)
		return NULL;
	if (IsA(node, Var))
		pos = position_of(ss->vars, node);
	else if (IsA(node, FuncExpr) && (pos = position_of(ss->calls, node)) > 0)
		pos += list_length(ss->vars);
	else
		return expression_tree_mutator(node, scan_tuple_mutator, ss);
	Assert(pos > 0);
	return (Node *) makeVar(INDEX_VAR, pos, exprType(node), exprTypmod(node),
							exprCollation(node), 0);
}

/* A type's name as postgres_fdw writes it: qualified unless built in. */
static char *
deparse_type(Oid type, int32 typmod)
{
	return format_type_extended(type, typmod,
								FORMAT_TYPE_TYPEMOD_GIVEN |
								(type >= FirstGenbkiObjectId ? FORMAT_TYPE_FORCE_QUALIFY : 0));
}

/* A constant as postgres_fdw would send it: a literal with its type. */
static void
deparse_const(StringInfo buf, Const *c)
{
	char	   *type = deparse_type(c->consttype, c->consttypmod);
	Oid			out;
	bool		varlena;

	if (c->constisnull)
	{
		appendStringInfo(buf, "NULL::%s", type);
		return;
	}
	getTypeOutputInfo(c->consttype, &out, &varlena);
	appendStringInfo(buf, "%s::%s",
					 quote_literal_cstr(OidOutputFunctionCall(out, c->constvalue)), type);
}

/*
 * A column of the wrapped query, named by its place in postgres_fdw's.  As
 * an element of an array a call scores (read_as: the schema of hbird's
 * functions there) it is read as the coordinator reads it: the
 * coordinator took the value's text through the declared type's input
 * function, and the shard's column may be declared otherwise (postgres_fdw
 * asks for the same types).  A cast would not give the same value (float8
 * 0.04999999999999999 as numeric(6,1): 0.1, read as text 0.0), hb_read_as
 * does (src/pg_read_as.c), and is planned away on the shard where the
 * types are the same.  A value of a row is read so by the pinned call
 * itself, which carries the declared types (pg_pinned.c).
 */
static void
deparse_column(StringInfo buf, ScanShip *ss, Var *v, const char *read_as)
{
	ListCell   *lc;
	int			pos = 0;

	foreach(lc, ss->retrieved)
		if (lfirst_int(lc) == v->varattno)
			pos = foreach_current_index(lc) + 1;
	Assert(pos > 0);
	if (read_as)
		appendStringInfo(buf, "%s.hb_read_as(s.c%d, NULL::%s)", read_as, pos,
						 deparse_type(v->vartype, v->vartypmod));
	else
		appendStringInfo(buf, "s.c%d", pos);
}

/*
 * The call as the shard runs it, over the wrapped query's columns.  The
 * origin (fourth argument) becomes the server's name when the planner
 * left it empty (a partition's call is pinned on the partitioned table):
 * a shard's errors then name it as the coordinator does.
 */
static void
deparse_call(StringInfo buf, ScanShip *ss, FuncExpr *f, const char *server)
{
	ListCell   *lc;
	const char *schema = quote_identifier(get_namespace_name(get_func_namespace(f->funcid)));

	appendStringInfo(buf, "%s.%s(", schema, quote_identifier(get_func_name(f->funcid)));
	foreach(lc, f->args)
	{
		Node	   *a = lfirst(lc);
		int			i = foreach_current_index(lc);

		if (i > 0)
			appendStringInfoString(buf, ", ");
		if (i == 3 && !((Const *) a)->constisnull &&
			TextDatumGetCString(((Const *) a)->constvalue)[0] == '\0')
			appendStringInfo(buf, "%s::text", quote_literal_cstr(server));
		else if (IsA(a, Const))
			deparse_const(buf, (Const *) a);
		else if (IsA(a, ArrayExpr))
		{
			ListCell   *le;

			appendStringInfoString(buf, "ARRAY[");
			foreach(le, ((ArrayExpr *) a)->elements)
			{
				if (foreach_current_index(le) > 0)
					appendStringInfoString(buf, ", ");
				deparse_column(buf, ss, lfirst(le), schema);
			}
			appendStringInfoChar(buf, ']');
		}
		else
			deparse_column(buf, ss, (Var *) a, NULL);
	}
	appendStringInfoChar(buf, ')');
}

/*
 * Make one foreign scan return its calls' scores (the top of the file).
 * The calls evaluated for every row it returns are those of its first
 * local qual, or of its target list when it has no local qual: the target
 * list is evaluated only for the rows that pass the quals, and each qual
 * only for the rows that passed the ones before it.
 */
static void
ship_scan(ForeignScan *fs, PlannedStmt *stmt)
{
	ScanShip	ss = {0};
	Reads		r = {scan_argument, &ss};
	RangeTblEntry *rte;
	const char *server;
	StringInfoData buf;
	List	   *tlist = NIL;
	List	   *attrs = NIL;
	ListCell   *lc;
	int			n = 0;
	char	   *inner;
	char	   *order;

	if (!plain_shard_scan((Plan *) fs, stmt))
		return;
	rte = rt_fetch(fs->scan.scanrelid, stmt->rtable);
	ss.scanrelid = fs->scan.scanrelid;
	ss.retrieved = (List *) list_nth(fs->fdw_private, FDW_PRIVATE_ATTRS);
	r.every_row = hb_pinned_calls_every_row(fs->scan.plan.qual != NIL ?
											linitial(fs->scan.plan.qual) :
											(Node *) fs->scan.plan.targetlist);
	r.ok = true;
	(void) reads_walker((Node *) fs->scan.plan.targetlist, &r);
	(void) reads_walker((Node *) fs->scan.plan.qual, &r);
	if (!r.ok || r.calls == NIL)
		return;
	foreach(lc, r.vars)
		if (!scan_column(lfirst(lc), &ss))
			return;				/* a whole row, a system column, an outer Var */
	ss.vars = r.vars;
	ss.calls = r.calls;

	/* the remote query: postgres_fdw's, its columns named by position */
	split_remote_query(fs, rte->relid, &inner, &order);
	server = GetForeignServer(fs->fs_server)->servername;
	initStringInfo(&buf);
	appendStringInfoString(&buf, "SELECT ");
	foreach(lc, ss.vars)
	{
		deparse_column(&buf, &ss, lfirst(lc), NULL);
		appendStringInfoString(&buf, ", ");
	}
	foreach(lc, ss.calls)
	{
		deparse_call(&buf, &ss, lfirst(lc), server);
		if (lnext(ss.calls, lc))
			appendStringInfoString(&buf, ", ");
	}
	appendStringInfo(&buf, " FROM (%s) s(", inner);
	for (int i = 1; i <= list_length(ss.retrieved); i++)
		appendStringInfo(&buf, "%sc%d", i > 1 ? ", " : "", i);
	appendStringInfo(&buf, ")%s", order);

	/* what the scan tuple holds: the columns, then the scores */
	foreach(lc, list_concat_copy(ss.vars, ss.calls))
	{
		Node	   *e = lfirst(lc);

		n++;
		tlist = lappend(tlist, makeTargetEntry((Expr *) copyObject(e), n,
											   IsA(e, Var) ? get_attname(rte->relid, ((Var *) e)->varattno, false) : NULL,
											   false));
		attrs = lappend_int(attrs, n);
	}

	fs->scan.plan.targetlist = (List *) scan_tuple_mutator((Node *) fs->scan.plan.targetlist, &ss);
	fs->scan.plan.qual = (List *) scan_tuple_mutator((Node *) fs->scan.plan.qual, &ss);
	/* read only by an EvalPlanQual recheck, which a plan without row marks never runs */
	fs->fdw_recheck_quals = NIL;
	fs->fdw_scan_tlist = tlist;

	/*
	 * A fourth item names the relation for EXPLAIN ("Relations: ..."), as
	 * in postgres_fdw's own pushed-down scans: the range table index as text.
	 */
	fs->fdw_private = list_make4(makeString(buf.data), attrs,
								 list_nth(fs->fdw_private, FDW_PRIVATE_FETCH),
								 makeString(psprintf("%u", fs->scan.scanrelid)));
	fs->scan.scanrelid = 0;
}

/* ---- calls that become columns below (an Agg's, a join's) ---- */

/* An argument of a call: one of the Agg's input columns. */
static bool
input_column(Node *node, void *arg)
{
	return node != NULL && IsA(node, Var) && ((Var *) node)->varno == OUTER_VAR;
}

/* The pinned calls inside the Agg's aggregates evaluated for every input row. */
static bool
aggref_calls_walker(Node *node, List **calls)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) node;

		*calls = list_concat(*calls, hb_pinned_calls_every_row((Node *) a->aggfilter));
		if (a->aggfilter == NULL)
			*calls = list_concat(*calls, hb_pinned_calls_every_row((Node *) a->args));
		return false;
	}
	return expression_tree_walker(node, aggref_calls_walker, calls);
}

/* Calls to shipped columns: each call (equal() to one) becomes its Var. */
typedef struct CallVars
{
	List	   *calls;
	List	   *vars;			/* the Var each call becomes */
} CallVars;

static Node *
call_vars_mutator(Node *node, CallVars *cv)
{
	int			pos;

	if (node == NULL)
		return NULL;
	if (IsA(node, FuncExpr) && (pos = position_of(cv->calls, node)) > 0)
		return copyObject(list_nth(cv->vars, pos - 1));
	return expression_tree_mutator(node, call_vars_mutator, cv);
}

static Var *
call_var(int varno, AttrNumber pos, Node *call)
{
	return makeVar(varno, pos, exprType(call), exprTypmod(call), exprCollation(call), 0);
}

/*
 * Output columns nobody reads any more become NULL (a scan then does not
 * send them; a join's become NULL before its sides' columns go).
 */
static void
drop_unread(Plan *p, Bitmapset *read)
{
	ListCell   *lc;

	foreach(lc, p->targetlist)
	{
		TargetEntry *te = lfirst(lc);
		Node	   *e = (Node *) te->expr;

		if (!bms_is_member(te->resno, read))
			te->expr = (Expr *) makeNullConst(exprType(e), exprTypmod(e), exprCollation(e));
	}
}

/* The columns a node's keys name (sort, merge, grouping keys), read. */
static void
add_sort_columns(Bitmapset **read, int n, AttrNumber *cols)
{
	for (int i = 0; i < n; i++)
		*read = bms_add_member(*read, cols[i]);
}

/* ---- a join's calls over one side's scans ---- */

/*
 * A join's target list is evaluated above the join, so a query such as
 *
 *	SELECT c.name, hb_predict('m', t) FROM t_dist t JOIN customers c USING (cid)
 *
 * scored the rows of t_dist on the coordinator, after they had travelled.
 * A call over the columns of one side of a join becomes one more column
 * of that side's scans instead, passed up by the nodes between (Hash,
 * Sort, Material, Memoize, a projecting Result, Append, Merge Append,
 * lower joins), and the
 * join reads that column: then ship_scan makes each shard's scan compute
 * it.  The scans then score every row they return, also rows the join
 * drops (what the coordinator would have read anyway), and a row that
 * joins several times once.  Not where the join may null that side (the
 * made-up rows would get NULL, not the call's value over NULLs), nor over
 * parameterized scans, scans with local quals or anything else between.
 */

/* the plain Var a node's output column k is, or NULL */
static Var *
output_var(Plan *p, AttrNumber k)
{
	TargetEntry *te;

	if (k < 1 || k > list_length(p->targetlist))
		return NULL;
	te = list_nth(p->targetlist, k - 1);
	return IsA(te->expr, Var) && ((Var *) te->expr)->varlevelsup == 0 ?
		(Var *) te->expr : NULL;
}

/* May a call over side (OUTER_VAR, INNER_VAR) of a join of this type go down it? */
static bool
side_kept(JoinType jt, int side)
{
	switch (jt)
	{
		case JOIN_INNER:
			return true;
		case JOIN_LEFT:
		case JOIN_SEMI:
		case JOIN_ANTI:
			return side == OUTER_VAR;
		case JOIN_RIGHT:
			return side == INNER_VAR;
		default:
			return false;		/* FULL: either side may be made up */
	}
}

typedef struct Down
{
	Plan	   *p;				/* the node whose outputs the call reads */
	int			varno;			/* of the Vars to map: OUTER_VAR or INNER_VAR */
	int			side;			/* OUTER_VAR or INNER_VAR below a join, else 0 */
	bool		ok;
} Down;

/*
 * The call over node p's outputs (Vars of varno, by output position) as an
 * expression over what p reads: its child's outputs as Vars of OUTER_VAR
 * (d->side tells a join's side), or a scan's own columns.
 */
static Node *
down_mutator(Node *node, Down *d)
{
	if (node == NULL || !d->ok)
		return node;
	if (IsA(node, Var) && ((Var *) node)->varno == d->varno)
	{
		Var		   *v = output_var(d->p, ((Var *) node)->varattno);
		Var		   *nv;

		if (v == NULL)
		{
			d->ok = false;
			return node;
		}
		nv = copyObject(v);
		if (IsA(d->p, NestLoop) || IsA(d->p, HashJoin) || IsA(d->p, MergeJoin))
		{
			if (v->varno != OUTER_VAR && v->varno != INNER_VAR)
				d->ok = false;
			else if (d->side == 0)
				d->side = v->varno;
			else if (d->side != v->varno)
				d->ok = false;	/* columns of both sides */
			nv->varno = OUTER_VAR;
		}
		else if (!IsA(d->p, ForeignScan) && v->varno != OUTER_VAR)
			d->ok = false;
		return (Node *) nv;
	}
	return expression_tree_mutator(node, down_mutator, d);
}

/*
 * Make call (over p's outputs, Vars of varno) one more output column of p,
 * computed by the shard scans below it; its position, or 0 where it cannot
 * go down.  With apply false nothing changes (a check first: the nodes of
 * a path that fails later stay as they were).
 */
static int
ship_down(Plan *p, int varno, Node *call, PlannedStmt *stmt, bool apply)
{
	Down		d = {p, varno, 0, true};
	Node	   *below;
	int			pos = 0;
	int			n;

	below = down_mutator(copyObject(call), &d);
	if (!d.ok)
		return 0;
	n = list_length(p->targetlist) + 1;
	if (IsA(p, ForeignScan))
	{
		ForeignScan *fs = (ForeignScan *) p;
		ScanShip	ss = {0};

		if (!plain_shard_scan(p, stmt) || p->qual != NIL || fs->fdw_exprs != NIL)
			return 0;
		ss.scanrelid = fs->scan.scanrelid;
		ss.retrieved = (List *) list_nth(fs->fdw_private, FDW_PRIVATE_ATTRS);
		if (!IsA(below, FuncExpr) || !call_ships((FuncExpr *) below, scan_argument, &ss))
			return 0;
		if (apply)
			p->targetlist = lappend(p->targetlist,
									makeTargetEntry((Expr *) below, n, NULL, false));
		return n;
	}
	if (IsA(p, Append) || IsA(p, MergeAppend))
	{
		List	   *kids = IsA(p, Append) ? ((Append *) p)->appendplans :
			((MergeAppend *) p)->mergeplans;
		ListCell   *lc;

		if (kids == NIL)
			return 0;
		/* each child's output k is the node's: the call over each child */
		foreach(lc, kids)
		{
			int			k = ship_down(lfirst(lc), OUTER_VAR, below, stmt, false);

			if (k == 0 || (pos != 0 && k != pos))
				return 0;
			pos = k;
		}
		if (apply)
			foreach(lc, kids)
				(void) ship_down(lfirst(lc), OUTER_VAR, below, stmt, true);
	}
	else if (IsA(p, NestLoop) || IsA(p, HashJoin) || IsA(p, MergeJoin))
	{
		Plan	   *kid = d.side == OUTER_VAR ? p->lefttree : p->righttree;

		/* not the side the join may null */
		if (d.side == 0 || !side_kept(((Join *) p)->jointype, d.side))
			return 0;
		if ((pos = ship_down(kid, OUTER_VAR, below, stmt, false)) == 0)
			return 0;
		if (apply)
			(void) ship_down(kid, OUTER_VAR, below, stmt, true);
		varno = d.side;
	}
	else if (IsA(p, Result) && p->lefttree != NULL && p->qual == NIL &&
			 ((Result *) p)->resconstantqual == NULL)
	{
		/* a projection (a sort key computed below a Sort) */
		if ((pos = ship_down(p->lefttree, OUTER_VAR, below, stmt, false)) == 0)
			return 0;
		if (apply)
			(void) ship_down(p->lefttree, OUTER_VAR, below, stmt, true);
		varno = OUTER_VAR;
	}
	else if (IsA(p, Hash) || IsA(p, Sort) || IsA(p, IncrementalSort) ||
			 IsA(p, Material) || IsA(p, Memoize))
	{
		if ((pos = ship_down(p->lefttree, OUTER_VAR, below, stmt, false)) == 0)
			return 0;
		if (apply)
			(void) ship_down(p->lefttree, OUTER_VAR, below, stmt, true);
		varno = OUTER_VAR;
	}
	else
		return 0;
	/*
	 * Nodes other than joins and Results do not project: their tuples are
	 * their input's, so the new column must take the same place in both
	 */
	if (!IsA(p, NestLoop) && !IsA(p, HashJoin) && !IsA(p, MergeJoin) && !IsA(p, Result) &&
		pos != n)
		return 0;
	if (apply)
		p->targetlist = lappend(p->targetlist,
								makeTargetEntry((Expr *) call_var(varno, pos, call), n, NULL, false));
	return n;
}

/* Rename one join side's Vars as the Vars of a node above it. */
static Node *
side_to_outer_mutator(Node *node, void *side)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Var) && ((Var *) node)->varno == *(int *) side)
	{
		Var		   *v = copyObject((Var *) node);

		v->varno = OUTER_VAR;
		return (Node *) v;
	}
	return expression_tree_mutator(node, side_to_outer_mutator, side);
}

/*
 * A call of join j over its side's columns, made a column of that side:
 * its position there, or 0.
 */
static int
ship_down_side(Join *j, int side, Node *call, PlannedStmt *stmt)
{
	Plan	   *kid = side == OUTER_VAR ? j->plan.lefttree : j->plan.righttree;
	Node	   *over_kid;

	if (!side_kept(j->jointype, side))
		return 0;
	over_kid = side_to_outer_mutator(call, &side);
	if (ship_down(kid, OUTER_VAR, over_kid, stmt, false) == 0)
		return 0;
	return ship_down(kid, OUTER_VAR, over_kid, stmt, true);
}

/* Does node read anything but Vars of one side of a join? */
static bool
join_call_column(Node *node, void *arg)
{
	return node != NULL && IsA(node, Var) &&
		(((Var *) node)->varno == OUTER_VAR || ((Var *) node)->varno == INNER_VAR);
}

/* The output positions of one join side (or a node's input) that expressions read */
typedef struct SideReads
{
	int			varno;
	Bitmapset  *read;
} SideReads;

static bool
side_reads_walker(Node *node, SideReads *r)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && ((Var *) node)->varno == r->varno)
	{
		r->read = bms_add_member(r->read, ((Var *) node)->varattno);
		return false;
	}
	return expression_tree_walker(node, side_reads_walker, r);
}

/*
 * The columns of the scans below a join's side that are read: *read, the
 * side's columns read above, becomes those of the scans, adding what the
 * nodes between read (they keep a column's place, but for a Result, which
 * projects: what its columns read are read below it); the scans go to
 * *scans.  False where the chain holds anything else.
 */
static bool
chain_reads(Plan *p, Bitmapset **read, List **scans)
{
	SideReads	r = {OUTER_VAR, NULL};
	ListCell   *lc;

	switch (nodeTag(p))
	{
		case T_Result:
			if (p->lefttree == NULL || p->qual != NIL ||
				((Result *) p)->resconstantqual != NULL)
				return false;
			foreach(lc, p->targetlist)
				if (bms_is_member(((TargetEntry *) lfirst(lc))->resno, *read))
					(void) side_reads_walker((Node *) ((TargetEntry *) lfirst(lc))->expr, &r);
			*read = r.read;
			return chain_reads(p->lefttree, read, scans);
		case T_ForeignScan:
			*scans = lappend(*scans, p);
			return true;
		case T_Append:
		case T_MergeAppend:
			/* the scans themselves, which then read the same columns */
			if (IsA(p, MergeAppend))
				add_sort_columns(read, ((MergeAppend *) p)->numCols,
								 ((MergeAppend *) p)->sortColIdx);
			foreach(lc, IsA(p, Append) ? ((Append *) p)->appendplans :
					((MergeAppend *) p)->mergeplans)
			{
				if (!IsA(lfirst(lc), ForeignScan))
					return false;
				*scans = lappend(*scans, lfirst(lc));
			}
			return true;
		case T_Sort:
		case T_IncrementalSort:
			add_sort_columns(read, ((Sort *) p)->numCols, ((Sort *) p)->sortColIdx);
			break;
		case T_Hash:
			(void) side_reads_walker((Node *) ((Hash *) p)->hashkeys, &r);
			break;
		case T_Memoize:
			(void) side_reads_walker((Node *) ((Memoize *) p)->param_exprs, &r);
			break;
		case T_Material:
			break;
		default:
			return false;
	}
	*read = bms_join(*read, r.read);
	return chain_reads(p->lefttree, read, scans);
}

/*
 * Once a side's calls are its scans' columns, the columns they read need
 * not travel where nothing else reads them: the scans send NULL for them
 * (drop_unread; ship_scan then leaves them out of the shard's
 * answer).  Only where the nodes between are those chain_reads knows.
 */
static void
drop_unread_side(Join *j, int side)
{
	SideReads	r = {side, NULL};
	List	   *scans = NIL;
	ListCell   *lc;

	(void) side_reads_walker((Node *) j->plan.targetlist, &r);
	(void) side_reads_walker((Node *) j->plan.qual, &r);
	(void) side_reads_walker((Node *) j->joinqual, &r);
	if (IsA(j, HashJoin))
	{
		(void) side_reads_walker((Node *) ((HashJoin *) j)->hashclauses, &r);
		if (side == OUTER_VAR)
		{
			SideReads	k = {OUTER_VAR, NULL};

			(void) side_reads_walker((Node *) ((HashJoin *) j)->hashkeys, &k);
			r.read = bms_join(r.read, k.read);
		}
	}
	else if (IsA(j, MergeJoin))
		(void) side_reads_walker((Node *) ((MergeJoin *) j)->mergeclauses, &r);
	else if (IsA(j, NestLoop) && side == OUTER_VAR)
		foreach(lc, ((NestLoop *) j)->nestParams)
			(void) side_reads_walker((Node *) ((NestLoopParam *) lfirst(lc))->paramval, &r);
	if (!chain_reads(side == OUTER_VAR ? j->plan.lefttree : j->plan.righttree, &r.read, &scans))
		return;
	foreach(lc, scans)
		drop_unread(lfirst(lc), r.read);
}

static void
ship_join_calls(Join *j, PlannedStmt *stmt)
{
	List	   *every_row = hb_pinned_calls_every_row((Node *) j->plan.targetlist);
	CallVars	jr = {NIL, NIL};
	bool		shipped[2] = {false, false};	/* outer, inner */
	ListCell   *lc;

	foreach(lc, every_row)
	{
		FuncExpr   *f = lfirst(lc);
		bool		one_side = true;
		int			side = 0;
		int			pos;
		ListCell   *la;

		if (position_of(jr.calls, (Node *) f) > 0 || !call_ships(f, join_call_column, NULL))
			continue;
		/* the side its columns come from (the call is over the join's inputs) */
		foreach(la, pull_var_clause((Node *) f, 0))
		{
			Var		   *v = lfirst(la);

			if (side != 0 && side != v->varno)
				one_side = false;
			side = v->varno;
		}
		if (!one_side || side == 0)
			continue;
		pos = ship_down_side(j, side, (Node *) f, stmt);
		if (pos == 0)
			continue;
		shipped[side == INNER_VAR] = true;
		jr.calls = lappend(jr.calls, f);
		jr.vars = lappend(jr.vars, call_var(side, pos, (Node *) f));
	}
	if (jr.calls == NIL)
		return;
	/* the join's quals read the same column where they call the same */
	j->plan.targetlist = (List *) call_vars_mutator((Node *) j->plan.targetlist, &jr);
	j->plan.qual = (List *) call_vars_mutator((Node *) j->plan.qual, &jr);
	j->joinqual = (List *) call_vars_mutator((Node *) j->joinqual, &jr);
	if (shipped[0])
		drop_unread_side(j, OUTER_VAR);
	if (shipped[1])
		drop_unread_side(j, INNER_VAR);
}

/* ---- an Agg's calls over its input ---- */

/*
 * An Agg computes its arguments from its input's columns: sum of a score
 * is split per partition (pg_partsplit.c), but stddev, percentile_cont,
 * array_agg, DISTINCT or ordered aggregates of scores read the rows below
 * and score them above.  Each call in the aggregates' arguments (evaluated
 * for every input row: not under a FILTER) over the input's columns goes
 * down as a join's calls do (ship_down): one more column of the shard
 * scans below, passed up by the nodes between (Sorts, an Append or Merge
 * Append of the scans, one side of a join, ...), and the Agg reads it.
 * Then the columns nothing reads any more stay on the shards: the scans'
 * where only non-joining nodes stand between (chain_reads), else the
 * join's outputs the Agg no longer reads, and with them its sides'
 * columns nothing else reads (a side that sent calls down).  Calls outside
 * the arguments (evaluated once a group), and those that cannot go down,
 * stay where they are.
 */
static void
ship_agg_calls(Agg *agg, PlannedStmt *stmt)
{
	Plan	   *input = agg->plan.lefttree;
	Plan	   *below;			/* input, under the Agg's Sorts */
	List	   *every_row = NIL;
	List	   *scans = NIL;
	CallVars	cv = {NIL, NIL};
	SideReads	r = {OUTER_VAR, NULL};
	bool		over_join;		/* below is a join */
	bool		shipped[2] = {false, false};	/* a join's outer, inner side */
	ListCell   *lc;

	if (agg->groupingSets != NIL || agg->chain != NIL || input == NULL)
		return;
	below = input;
	while (IsA(below, Sort))
		below = below->lefttree;
	over_join = IsA(below, NestLoop) || IsA(below, HashJoin) || IsA(below, MergeJoin);
	(void) aggref_calls_walker((Node *) agg->plan.targetlist, &every_row);
	(void) aggref_calls_walker((Node *) agg->plan.qual, &every_row);
	foreach(lc, every_row)
	{
		FuncExpr   *f = lfirst(lc);
		int			pos;

		if (position_of(cv.calls, (Node *) f) > 0 || !call_ships(f, input_column, NULL) ||
			ship_down(input, OUTER_VAR, (Node *) f, stmt, false) == 0)
			continue;
		pos = ship_down(input, OUTER_VAR, (Node *) f, stmt, true);
		cv.calls = lappend(cv.calls, f);
		cv.vars = lappend(cv.vars, call_var(OUTER_VAR, pos, (Node *) f));
		if (over_join)
		{
			/* the join's new column names the side it came from */
			Var		   *jv = output_var(below, list_length(below->targetlist));

			if (jv != NULL)
				shipped[jv->varno == INNER_VAR] = true;
		}
	}
	if (cv.calls == NIL)
		return;
	agg->plan.targetlist = (List *) call_vars_mutator((Node *) agg->plan.targetlist, &cv);
	agg->plan.qual = (List *) call_vars_mutator((Node *) agg->plan.qual, &cv);

	/* what the Agg reads of its input now: grouping keys, Vars outside the calls */
	add_sort_columns(&r.read, agg->numCols, agg->grpColIdx);
	(void) side_reads_walker((Node *) agg->plan.targetlist, &r);
	(void) side_reads_walker((Node *) agg->plan.qual, &r);
	if (over_join)
	{
		/* the join's outputs nobody reads are NULL, then its sides' columns */
		for (Plan *p = input; p != below; p = p->lefttree)
			add_sort_columns(&r.read, ((Sort *) p)->numCols, ((Sort *) p)->sortColIdx);
		drop_unread(below, r.read);
		if (shipped[0])
			drop_unread_side((Join *) below, OUTER_VAR);
		if (shipped[1])
			drop_unread_side((Join *) below, INNER_VAR);
	}
	else if (chain_reads(input, &r.read, &scans))
		foreach(lc, scans)
			drop_unread(lfirst(lc), r.read);
}

/* ---- the plan ---- */

static void
ship_walk(Plan *plan, PlannedStmt *stmt)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	/* an Agg first: its calls become its scans' (over a join: one side's) */
	if (IsA(plan, Agg))
		ship_agg_calls((Agg *) plan, stmt);
	/* a join's calls over one side: that side's scans' */
	if (IsA(plan, NestLoop) || IsA(plan, HashJoin) || IsA(plan, MergeJoin))
		ship_join_calls((Join *) plan, stmt);
	if (IsA(plan, ForeignScan))
		ship_scan((ForeignScan *) plan, stmt);
	foreach(lc, hb_plan_children(plan))
		ship_walk(lfirst(lc), stmt);
}

/*
 * Every foreign scan of the statement whose scores the shard can compute
 * returns them (the top of the file).  Statements with row marks are left
 * alone: an EvalPlanQual recheck would read the scan's row as the table's.
 */
void
hb_remote_scores(PlannedStmt *stmt)
{
	ListCell   *lc;

	if (stmt->rowMarks != NIL || stmt->commandType != CMD_SELECT)
		return;
	ship_walk(stmt->planTree, stmt);
	foreach(lc, stmt->subplans)
		ship_walk(lfirst(lc), stmt);
}
