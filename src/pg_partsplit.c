/*
 * pg_partsplit.c
 *	  Aggregates and top-K over a partitioned table of shards, one query per
 *	  partition (docs/scale-out.md, "Aggregates and top-K over partitions").
 *
 * PostgreSQL 15 pushes neither a partial aggregate nor a LIMIT into the
 * partitions of a partitioned table, so a query over one such table that
 * scores (pinned calls, pg_pushdown.c) and aggregates, or ends in ORDER BY
 * ... LIMIT, is written as a UNION ALL of the same query per leaf
 * partition under a combining query; postgres_fdw pushes each
 * per-partition query down whole.  What must hold:
 *
 *	- the answer is the original query's: partial sum / count / min / max
 *	  per partition (an avg as a sum and a count, a real average summed in
 *	  float8 as avg does), combined with sum, min, max and a division, with
 *	  the original GROUP BY, HAVING, ORDER BY and LIMIT on top; or each
 *	  partition's ORDER BY ... LIMIT k + offset under the original sort,
 *	  limit and offset;
 *	- only shapes that split exactly are split (one partitioned table, no
 *	  joins, sublinks, window functions, DISTINCT, grouping sets, row
 *	  security, references to an outer query, whole rows of a partition
 *	  laid out otherwise than the parent, volatile target lists for a
 *	  top-K, aggregates without a partial form here); everything else is
 *	  left as PostgreSQL plans it;
 *	- permissions are the partitioned table's: it stays in the range table
 *	  with its permission bits, the partitions carry none (as when
 *	  PostgreSQL expands them itself).
 *
 * After standard_planner, the partitions' top-K scans run at the same time:
 * a MergeAppend over them (which reads its inputs one after the other)
 * becomes a Sort over an asynchronous Append, and the batching scan leaves
 * those scans alone (wrapped, they could not run asynchronously; they
 * return k + offset rows each).
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/table.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/tlist.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "hbird.h"
#include "pg_scan.h"
#include "pg_scaleout.h"

/* What an aggregate becomes: per partition, and combined. */
typedef enum AggSplit2
{
	SPLIT_SUM,
	SPLIT_COUNT,
	SPLIT_MINMAX,
	SPLIT_AVG
} AggSplit2;

typedef struct SplitAgg
{
	Aggref	   *orig;
	AggSplit2	how;
	int			col;			/* its first partial column (1-based) */
} SplitAgg;

static bool
numeric_type(Oid t)
{
	return t == INT2OID || t == INT4OID || t == INT8OID || t == FLOAT4OID ||
		t == FLOAT8OID || t == NUMERICOID;
}

/* How an aggregate splits into partial and combining ones, or false. */
static bool
agg_split_kind(Aggref *a, AggSplit2 *how)
{
	char	   *fname;
	Oid			argtype;

	if (a->aggdistinct != NIL || a->aggorder != NIL || a->aggdirectargs != NIL ||
		a->aggkind != AGGKIND_NORMAL || a->agglevelsup != 0 || a->aggvariadic ||
		get_func_namespace(a->aggfnoid) != PG_CATALOG_NAMESPACE)
		return false;
	fname = get_func_name(a->aggfnoid);
	argtype = list_length(a->aggargtypes) == 1 ? linitial_oid(a->aggargtypes) : InvalidOid;
	if (strcmp(fname, "count") == 0)
		*how = SPLIT_COUNT;
	else if (strcmp(fname, "sum") == 0 && numeric_type(argtype))
		*how = SPLIT_SUM;
	else if (strcmp(fname, "avg") == 0 && numeric_type(argtype))
		*how = SPLIT_AVG;
	else if ((strcmp(fname, "min") == 0 || strcmp(fname, "max") == 0) &&
			 OidIsValid(argtype))
		*how = SPLIT_MINMAX;
	else
		return false;
	return true;
}

typedef struct CollectAggs
{
	List	   *aggs;			/* SplitAgg * */
	bool		ok;
} CollectAggs;

static bool
collect_aggs_walker(Node *node, CollectAggs *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		Aggref	   *a = (Aggref *) node;
		SplitAgg   *s;
		ListCell   *lc;

		foreach(lc, c->aggs)
			if (equal(((SplitAgg *) lfirst(lc))->orig, a))
				return false;
		s = palloc0(sizeof(SplitAgg));
		s->orig = a;
		if (!agg_split_kind(a, &s->how))
			c->ok = false;
		c->aggs = lappend(c->aggs, s);
		return false;			/* no nested aggregates at this level */
	}
	if (IsA(node, GroupingFunc) || IsA(node, WindowFunc))
	{
		c->ok = false;
		return false;
	}
	return expression_tree_walker(node, collect_aggs_walker, c);
}

/* A one-argument aggregate of pg_catalog over arg. */
static Aggref *
make_agg(const char *fname, Node *arg, Expr *filter)
{
	Aggref	   *a = makeNode(Aggref);
	Oid			argtype = exprType(arg);
	Oid			anyarg = strcmp(fname, "count") == 0 ? ANYOID : argtype;

	a->aggfnoid = LookupFuncName(list_make2(makeString("pg_catalog"), makeString((char *) fname)),
								 1, &anyarg, false);
	a->aggtype = get_func_rettype(a->aggfnoid);
	a->aggcollid = InvalidOid;
	a->inputcollid = InvalidOid;
	a->aggtranstype = InvalidOid;
	a->aggargtypes = list_make1_oid(argtype);
	a->aggdirectargs = NIL;
	a->args = list_make1(makeTargetEntry((Expr *) arg, 1, NULL, false));
	a->aggorder = NIL;
	a->aggdistinct = NIL;
	a->aggfilter = filter;
	a->aggstar = false;
	a->aggvariadic = false;
	a->aggkind = AGGKIND_NORMAL;
	a->agglevelsup = 0;
	a->aggsplit = AGGSPLIT_SIMPLE;
	a->aggno = -1;
	a->aggtransno = -1;
	a->location = -1;
	return a;
}

static Node *
agg_arg(Aggref *a)
{
	return (Node *) ((TargetEntry *) linitial(a->args))->expr;
}

static Node *
cast_to(Node *e, Oid target)
{
	Node	   *c = coerce_to_target_type(NULL, e, exprType(e), target, -1,
										  COERCION_EXPLICIT, COERCE_EXPLICIT_CAST, -1);

	if (c == NULL)
		elog(ERROR, "no cast from %s to %s", format_type_be(exprType(e)),
			 format_type_be(target));
	return c;
}

/*
 * What combines the partial columns of s (Vars of the union, rti 1) into
 * the aggregate's answer.  Sums of integer counts come back as numeric and
 * are cast back; an average is the sum of sums over the sum of counts (a
 * float average sums in float8, as avg does).
 */
static Node *
combine(SplitAgg *s, List *union_tlist)
{
	TargetEntry *te = list_nth(union_tlist, s->col - 1);
	Var		   *v = makeVarFromTargetEntry(1, te);
	Aggref	   *a;

	switch (s->how)
	{
		case SPLIT_SUM:
			a = make_agg("sum", (Node *) v, NULL);
			return a->aggtype == s->orig->aggtype ? (Node *) a :
				cast_to((Node *) a, s->orig->aggtype);
		case SPLIT_COUNT:
			return cast_to((Node *) make_agg("sum", (Node *) v, NULL), INT8OID);
		case SPLIT_MINMAX:
			a = copyObject(s->orig);
			a->args = list_make1(makeTargetEntry((Expr *) v, 1, NULL, false));
			a->aggargtypes = list_make1_oid(exprType((Node *) v));
			a->aggfilter = NULL;
			a->aggno = a->aggtransno = -1;
			return (Node *) a;
		case SPLIT_AVG:
			{
				TargetEntry *ce = list_nth(union_tlist, s->col);
				Var		   *cv = makeVarFromTargetEntry(1, ce);
				Node	   *sum = (Node *) make_agg("sum", (Node *) v, NULL);
				Node	   *cnt = (Node *) make_agg("sum", (Node *) cv, NULL);

				if (s->orig->aggtype == FLOAT8OID)
					return (Node *) makeFuncExpr(F_FLOAT8DIV, FLOAT8OID,
												 list_make2(cast_to(sum, FLOAT8OID),
															cast_to(cnt, FLOAT8OID)),
												 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
				return (Node *) makeFuncExpr(F_NUMERIC_DIV, NUMERICOID,
											 list_make2(cast_to(sum, NUMERICOID),
														cast_to(cnt, NUMERICOID)),
											 InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
			}
	}
	return NULL;				/* keep compiler quiet */
}

/* The partial columns of s, per partition (the partition's expressions). */
static List *
partials(SplitAgg *s, Aggref *mapped)
{
	Node	   *arg;

	switch (s->how)
	{
		case SPLIT_SUM:
		case SPLIT_COUNT:
		case SPLIT_MINMAX:
			return list_make1(mapped);
		case SPLIT_AVG:
			arg = agg_arg(mapped);
			/* avg(real) sums in float8 */
			if (exprType(arg) == FLOAT4OID)
				arg = cast_to(arg, FLOAT8OID);
			return list_make2(make_agg("sum", arg, mapped->aggfilter),
							  make_agg("count", agg_arg(mapped), mapped->aggfilter));
	}
	return NIL;
}

/* Every pinned call in node takes origin as its server. */
static Node *
set_origin_mutator(Node *node, char *origin)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, FuncExpr) && hb_pinned_function(((FuncExpr *) node)->funcid) &&
		list_length(((FuncExpr *) node)->args) >= 6)
	{
		FuncExpr   *f = (FuncExpr *) copyObject(node);

		lfourth(f->args) = makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
									 CStringGetTextDatum(origin), false, false);
		return (Node *) f;
	}
	return expression_tree_mutator(node, set_origin_mutator, origin);
}

typedef struct Leaf
{
	Oid			relid;
	char	   *server;			/* a foreign table's server, else "" */
	AttrMap    *map;			/* parent's attnos -> the leaf's, or NULL */
	Oid			parent_type;
} Leaf;

/* An expression of the parent query as the leaf's query has it. */
static Node *
for_leaf(Node *node, Leaf *leaf)
{
	bool		whole_row;

	node = copyObject(node);
	if (leaf->map)
		node = map_variable_attnos(node, 1, 0, leaf->map, leaf->parent_type,
								   &whole_row);
	return set_origin_mutator(node, leaf->server);
}

/* A query over one leaf partition: rtable (leaf), where (the parent's). */
static Query *
leaf_query(Query *q, Leaf *leaf, RangeTblEntry *prte)
{
	Query	   *lq = makeNode(Query);
	ParseState *ps = make_parsestate(NULL);
	Relation	rel = table_open(leaf->relid, NoLock);
	ParseNamespaceItem *nsi;

	nsi = addRangeTableEntryForRelation(ps, rel, AccessShareLock,
										prte->alias ? copyObject(prte->alias) : NULL,
										false, false);
	/* permissions are the partitioned table's, checked at the top */
	nsi->p_rte->requiredPerms = 0;
	nsi->p_rte->selectedCols = NULL;
	table_close(rel, NoLock);
	lq->commandType = CMD_SELECT;
	lq->querySource = QSRC_ORIGINAL;
	lq->canSetTag = true;
	lq->rtable = ps->p_rtable;
	lq->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)),
								for_leaf(q->jointree->quals, leaf));
	((RangeTblRef *) linitial(lq->jointree->fromlist))->rtindex = 1;
	free_parsestate(ps);
	return lq;
}

/* UNION ALL of the leaf queries (one alone stands for itself). */
static Query *
union_all(List *leaf_queries)
{
	Query	   *first = linitial(leaf_queries);
	Query	   *u;
	ParseState *ps;
	Node	   *tree = NULL;
	List	   *types = NIL,
			   *typmods = NIL,
			   *colls = NIL;
	ListCell   *lc;
	int			i = 0;

	if (list_length(leaf_queries) == 1)
		return first;
	foreach(lc, first->targetList)
	{
		TargetEntry *te = lfirst(lc);

		types = lappend_oid(types, exprType((Node *) te->expr));
		typmods = lappend_int(typmods, exprTypmod((Node *) te->expr));
		colls = lappend_oid(colls, exprCollation((Node *) te->expr));
	}
	ps = make_parsestate(NULL);
	foreach(lc, leaf_queries)
	{
		Query	   *lq = lfirst(lc);
		RangeTblRef *rtr = makeNode(RangeTblRef);
		ListCell   *lt,
				   *ty,
				   *tm;

		/* every leaf must give the same columns (it does: same expressions) */
		forthree(lt, lq->targetList, ty, types, tm, typmods)
		{
			Node	   *e = (Node *) ((TargetEntry *) lfirst(lt))->expr;

			if (exprType(e) != lfirst_oid(ty) || exprTypmod(e) != lfirst_int(tm))
				return NULL;
		}
		(void) addRangeTableEntryForSubquery(ps, lq,
											 makeAlias(psprintf("hbird_part_%d", ++i), NIL),
											 false, false);
		rtr->rtindex = i;
		if (tree == NULL)
			tree = (Node *) rtr;
		else
		{
			SetOperationStmt *so = makeNode(SetOperationStmt);

			so->op = SETOP_UNION;
			so->all = true;
			so->larg = tree;
			so->rarg = (Node *) rtr;
			so->colTypes = types;
			so->colTypmods = typmods;
			so->colCollations = colls;
			so->groupClauses = NIL;
			tree = (Node *) so;
		}
	}
	u = makeNode(Query);
	u->commandType = CMD_SELECT;
	u->querySource = QSRC_ORIGINAL;
	u->canSetTag = true;
	u->rtable = ps->p_rtable;
	u->jointree = makeFromExpr(NIL, NULL);
	u->setOperations = tree;
	i = 0;
	foreach(lc, first->targetList)
	{
		TargetEntry *te = lfirst(lc);

		i++;
		u->targetList = lappend(u->targetList,
								makeTargetEntry((Expr *) makeVar(1, i, exprType((Node *) te->expr),
																 exprTypmod((Node *) te->expr),
																 exprCollation((Node *) te->expr), 0),
												i, pstrdup(te->resname), false));
	}
	free_parsestate(ps);
	return u;
}

/* Group keys and aggregates of the parent query, in terms of the union. */
typedef struct OuterCtx
{
	List	   *group_exprs;	/* the parent's grouping expressions */
	List	   *aggs;			/* SplitAgg * */
	List	   *union_tlist;
	bool		failed;			/* a column outside them */
} OuterCtx;

static Node *
outer_mutator(Node *node, OuterCtx *c)
{
	ListCell   *lc;
	int			i = 0;

	if (node == NULL)
		return NULL;
	foreach(lc, c->group_exprs)
	{
		i++;
		if (equal(lfirst(lc), node))
			return (Node *) makeVarFromTargetEntry(1, list_nth(c->union_tlist, i - 1));
	}
	if (IsA(node, Aggref))
	{
		foreach(lc, c->aggs)
			if (equal(((SplitAgg *) lfirst(lc))->orig, node))
				return combine(lfirst(lc), c->union_tlist);
		c->failed = true;
		return node;
	}
	if (IsA(node, Var) && ((Var *) node)->varlevelsup == 0)
	{
		c->failed = true;
		return node;
	}
	return expression_tree_mutator(node, outer_mutator, c);
}

/*
 * Does the query read anything of an outer query (a correlated subquery, a
 * LATERAL one)?  The split moves it one or two levels down, where those
 * references would name other queries' columns (an error, or a crash
 * where an initplan ran with its parameter unset).
 */
static bool
outer_reference_walker(Node *node, void *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varlevelsup > 0;
	if (IsA(node, PlaceHolderVar))
		return ((PlaceHolderVar *) node)->phlevelsup > 0;
	if (IsA(node, Aggref))
		return ((Aggref *) node)->agglevelsup > 0 ||
			expression_tree_walker(node, outer_reference_walker, ctx);
	if (IsA(node, GroupingFunc))
		return ((GroupingFunc *) node)->agglevelsup > 0;
	return expression_tree_walker(node, outer_reference_walker, ctx);
}

/* Is there a whole-row reference to the table (t, row_to_json(t))? */
static bool
whole_row_walker(Node *node, void *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varattno == 0;
	return expression_tree_walker(node, whole_row_walker, ctx);
}

/* Is this query one the split covers? */
static bool
split_shape(Query *q, RangeTblEntry **prte)
{
	RangeTblEntry *rte;
	RangeTblRef *rtr;

	if (q->commandType != CMD_SELECT || q->utilityStmt != NULL ||
		q->setOperations != NULL || q->cteList != NIL || q->hasWindowFuncs ||
		q->hasTargetSRFs || q->hasSubLinks || q->hasRecursive ||
		q->hasModifyingCTE || q->hasForUpdate || q->rowMarks != NIL ||
		q->distinctClause != NIL || q->groupingSets != NIL ||
		q->limitOption != LIMIT_OPTION_COUNT || q->hasRowSecurity ||
		list_length(q->rtable) != 1 || q->jointree == NULL ||
		list_length(q->jointree->fromlist) != 1 ||
		!IsA(linitial(q->jointree->fromlist), RangeTblRef))
		return false;
	/* (no sublinks: nothing below q to shift) */
	if (query_tree_walker(q, outer_reference_walker, NULL, 0))
		return false;
	rtr = linitial(q->jointree->fromlist);
	rte = rt_fetch(rtr->rtindex, q->rtable);
	if (rtr->rtindex != 1 || rte->rtekind != RTE_RELATION || !rte->inh ||
		rte->relkind != RELKIND_PARTITIONED_TABLE || rte->tablesample != NULL ||
		rte->securityQuals != NIL)
		return false;
	*prte = rte;
	return true;
}

/* Does the query score with a pinned call anywhere? */
static bool
has_pinned_walker(Node *node, void *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr) && hb_pinned_function(((FuncExpr *) node)->funcid))
		return true;
	return expression_tree_walker(node, has_pinned_walker, ctx);
}

/*
 * Rewrite q (in place) as a query over a UNION ALL of per-partition
 * queries; false when it is not one of the covered shapes.
 */
bool
hb_split_per_partition(Query *q, HbPushdown *pd)
{
	RangeTblEntry *prte;
	bool		agg_shape;
	List	   *leaves = NIL;
	List	   *leaf_queries = NIL;
	List	   *group_exprs = NIL;
	CollectAggs ca = {NIL, true};
	Relation	parent;
	TupleDesc	pdesc;
	int64		bound = 0;
	Query	   *u;
	Query	   *o;
	ParseState *ps;
	RangeTblEntry *perms;
	bool		any_remote = false;
	bool		whole_row;		/* the query reads whole rows of the table */
	ListCell   *lc;

	if (!split_shape(q, &prte) ||
		!has_pinned_walker((Node *) q->targetList, NULL))
		return false;
	agg_shape = q->hasAggs || q->groupClause != NIL;
	if (agg_shape)
	{
		(void) collect_aggs_walker((Node *) q->targetList, &ca);
		(void) collect_aggs_walker(q->havingQual, &ca);
		if (!ca.ok)
			return false;
		foreach(lc, q->groupClause)
			group_exprs = lappend(group_exprs,
								  get_sortgroupclause_expr(lfirst(lc), q->targetList));
	}
	else
	{
		/* the parser leaves LIMIT 5 as int8(5) */
		Const	   *cnt = (Const *) (q->limitCount ?
									 eval_const_expressions(NULL, copyObject(q->limitCount)) : NULL);
		Const	   *off = (Const *) (q->limitOffset ?
									 eval_const_expressions(NULL, copyObject(q->limitOffset)) : NULL);

		/* ORDER BY ... LIMIT k [OFFSET o], k and o constants */
		if (q->sortClause == NIL || cnt == NULL || !IsA(cnt, Const) || cnt->constisnull ||
			(off != NULL && (!IsA(off, Const) || off->constisnull)) ||
			contain_volatile_functions((Node *) q->targetList))
			return false;
		bound = DatumGetInt64(cnt->constvalue) +
			(off ? DatumGetInt64(off->constvalue) : 0);
		if (bound <= 0 || DatumGetInt64(cnt->constvalue) < 0)
			return false;
	}

	whole_row = query_tree_walker(q, whole_row_walker, NULL, 0);
	parent = table_open(prte->relid, NoLock);
	pdesc = RelationGetDescr(parent);
	foreach(lc, hb_leaf_partitions(prte->relid))
	{
		Leaf	   *leaf = palloc0(sizeof(Leaf));
		Relation	rel = table_open(lfirst_oid(lc), NoLock);
		Oid			server;

		leaf->relid = lfirst_oid(lc);
		leaf->parent_type = pdesc->tdtypeid;
		leaf->map = build_attrmap_by_name_if_req(RelationGetDescr(rel), pdesc);
		/*
		 * A whole row of a partition whose columns lie otherwise than the
		 * parent's (another order, a dropped column) would be read as the
		 * parent's row: not split
		 */
		if (leaf->map != NULL && whole_row)
		{
			table_close(rel, NoLock);
			table_close(parent, NoLock);
			return false;
		}
		leaf->server = "";
		if (hb_shard_table(leaf->relid, &server))
		{
			leaf->server = GetForeignServer(server)->servername;
			any_remote = true;
		}
		table_close(rel, NoLock);
		leaves = lappend(leaves, leaf);
	}
	table_close(parent, NoLock);
	if (!any_remote)
		return false;

	/* per leaf: the same rows, partial aggregates or its own top rows */
	foreach(lc, leaves)
	{
		Leaf	   *leaf = lfirst(lc);
		Query	   *lq = leaf_query(q, leaf, prte);
		int			resno = 0;
		ListCell   *lt;

		if (agg_shape)
		{
			ListCell   *lg;
			int			g = 0;

			foreach(lg, group_exprs)
			{
				TargetEntry *te = makeTargetEntry((Expr *) for_leaf(lfirst(lg), leaf),
												  ++resno, psprintf("hb_g%d", ++g), false);
				SortGroupClause *sgc = copyObject(list_nth(q->groupClause, g - 1));

				te->ressortgroupref = sgc->tleSortGroupRef;
				lq->targetList = lappend(lq->targetList, te);
				lq->groupClause = lappend(lq->groupClause, sgc);
			}
			foreach(lg, ca.aggs)
			{
				SplitAgg   *s = lfirst(lg);
				ListCell   *lp;

				s->col = resno + 1;
				foreach(lp, partials(s, (Aggref *) for_leaf((Node *) s->orig, leaf)))
				{
					resno++;
					lq->targetList = lappend(lq->targetList,
											 makeTargetEntry(lfirst(lp), resno,
															 psprintf("hb_p%d", resno), false));
				}
			}
			lq->hasAggs = true;
		}
		else
		{
			foreach(lt, q->targetList)
			{
				TargetEntry *te = copyObject(lfirst(lt));

				te->expr = (Expr *) for_leaf((Node *) te->expr, leaf);
				te->resjunk = false;
				if (te->resname == NULL)
					te->resname = psprintf("hb_c%d", te->resno);
				lq->targetList = lappend(lq->targetList, te);
			}
			lq->sortClause = copyObject(q->sortClause);
			lq->limitCount = (Node *) makeConst(INT8OID, -1, InvalidOid, 8,
												Int64GetDatum(bound), false, FLOAT8PASSBYVAL);
			lq->limitOption = LIMIT_OPTION_COUNT;
			pd->topk_relids = lappend_oid(pd->topk_relids, leaf->relid);
		}
		leaf_queries = lappend(leaf_queries, lq);
	}
	u = union_all(leaf_queries);
	if (u == NULL)
		return false;

	/* the query over the union: the parent stays for permissions */
	o = makeNode(Query);
	ps = make_parsestate(NULL);
	(void) addRangeTableEntryForSubquery(ps, u, makeAlias("hbird_shards", NIL), false, true);
	perms = copyObject(prte);
	perms->inh = false;
	o->rtable = lappend(ps->p_rtable, perms);
	free_parsestate(ps);
	o->commandType = CMD_SELECT;
	o->querySource = q->querySource;
	o->canSetTag = q->canSetTag;
	o->queryId = q->queryId;
	o->stmt_location = q->stmt_location;
	o->stmt_len = q->stmt_len;
	o->jointree = makeFromExpr(list_make1(makeNode(RangeTblRef)), NULL);
	((RangeTblRef *) linitial(o->jointree->fromlist))->rtindex = 1;
	o->sortClause = q->sortClause;
	o->limitCount = q->limitCount;
	o->limitOffset = q->limitOffset;
	o->limitOption = q->limitOption;
	if (agg_shape)
	{
		OuterCtx	oc = {group_exprs, ca.aggs, ((Query *) linitial(leaf_queries))->targetList, false};

		foreach(lc, q->targetList)
		{
			TargetEntry *te = copyObject(lfirst(lc));

			te->expr = (Expr *) outer_mutator((Node *) te->expr, &oc);
			o->targetList = lappend(o->targetList, te);
		}
		o->havingQual = outer_mutator(q->havingQual, &oc);
		if (oc.failed)
			return false;
		o->groupClause = q->groupClause;
		o->hasAggs = true;
	}
	else
	{
		int			i = 0;

		foreach(lc, q->targetList)
		{
			TargetEntry *te = lfirst(lc);
			TargetEntry *ute = list_nth(((Query *) linitial(leaf_queries))->targetList, i++);
			TargetEntry *nte = makeTargetEntry((Expr *) makeVarFromTargetEntry(1, ute),
											   te->resno, te->resname, te->resjunk);

			nte->ressortgroupref = te->ressortgroupref;
			nte->resorigtbl = te->resorigtbl;
			nte->resorigcol = te->resorigcol;
			o->targetList = lappend(o->targetList, nte);
		}
	}
	memcpy(q, o, sizeof(Query));
	return true;
}

/* ---- the plan: the partitions' top rows at the same time ---- */

/* Would postgres_fdw run this scan asynchronously under an Append? */
static bool
async_ok(ForeignScan *fs, PlannedStmt *stmt)
{
	FdwRoutine *r;
	ForeignServer *server;
	Index		rti;
	bool		async = false;
	ListCell   *lc;

	if (!enable_async_append)
		return false;
	r = GetFdwRoutineByServerId(fs->fs_server);
	if (r->IsForeignPathAsyncCapable == NULL || r->ForeignAsyncRequest == NULL)
		return false;
	server = GetForeignServer(fs->fs_server);
	foreach(lc, server->options)
		if (strcmp(((DefElem *) lfirst(lc))->defname, "async_capable") == 0)
			async = defGetBoolean(lfirst(lc));
	rti = fs->scan.scanrelid > 0 ? fs->scan.scanrelid : bms_next_member(fs->fs_relids, -1);
	if (rti > 0)
	{
		RangeTblEntry *rte = rt_fetch(rti, stmt->rtable);

		if (rte->rtekind == RTE_RELATION)
			foreach(lc, GetForeignTable(rte->relid)->options)
				if (strcmp(((DefElem *) lfirst(lc))->defname, "async_capable") == 0)
					async = defGetBoolean(lfirst(lc));
	}
	return async;
}

/* A scan of one partition of a distributed top-K (its LIMIT is remote). */
static bool
topk_scan(Plan *p, PlannedStmt *stmt, HbPushdown *pd)
{
	ForeignScan *fs = (ForeignScan *) p;
	Index		rti;

	if (p == NULL || !IsA(p, ForeignScan))
		return false;
	rti = fs->scan.scanrelid > 0 ? fs->scan.scanrelid : bms_next_member(fs->fs_relids, -1);
	return rti > 0 && list_member_oid(pd->topk_relids, rt_fetch(rti, stmt->rtable)->relid);
}

static bool
all_topk_scans(List *plans, PlannedStmt *stmt, HbPushdown *pd)
{
	ListCell   *lc;

	foreach(lc, plans)
		if (!topk_scan(lfirst(lc), stmt, pd))
			return false;
	return plans != NIL;
}

/*
 * The scans of a distributed top-K: run asynchronously where the server
 * allows, and left row at a time by the batching scan (they return k rows
 * each; wrapping them would make them synchronous).
 */
static void
mark_scans(List *plans, PlannedStmt *stmt, HbPushdown *pd)
{
	ListCell   *lc;

	foreach(lc, plans)
	{
		Plan	   *p = lfirst(lc);

		if (async_ok((ForeignScan *) p, stmt))
			p->async_capable = true;
		pd->keep = lappend(pd->keep, p);
	}
}

/*
 * A MergeAppend of the partitions' top rows under the Limit reads them one
 * server after the other; a Sort over an Append reads them all at once.
 */
static Plan *
fix_topk(Plan *plan, PlannedStmt *stmt, HbPushdown *pd)
{
	ListCell   *lc;

	if (plan == NULL)
		return NULL;
	if (IsA(plan, Limit) && plan->lefttree && IsA(plan->lefttree, MergeAppend) &&
		((MergeAppend *) plan->lefttree)->part_prune_info == NULL &&
		all_topk_scans(((MergeAppend *) plan->lefttree)->mergeplans, stmt, pd))
	{
		MergeAppend *ma = (MergeAppend *) plan->lefttree;
		Append	   *app = makeNode(Append);
		Sort	   *sort = makeNode(Sort);
		int			n = 0;

		app->plan = ma->plan;
		app->plan.type = T_Append;
		app->plan.targetlist = copyObject(ma->plan.targetlist);
		app->apprelids = ma->apprelids;
		app->appendplans = ma->mergeplans;
		app->first_partial_plan = list_length(ma->mergeplans);
		app->part_prune_info = NULL;
		mark_scans(app->appendplans, stmt, pd);
		foreach(lc, app->appendplans)
			if (((Plan *) lfirst(lc))->async_capable)
				n++;
		app->nasyncplans = n;

		sort->plan = ma->plan;
		sort->plan.type = T_Sort;
		sort->plan.targetlist = copyObject(ma->plan.targetlist);
		sort->plan.lefttree = (Plan *) app;
		sort->plan.plan_node_id = -1;	/* numbered below */
		sort->numCols = ma->numCols;
		sort->sortColIdx = ma->sortColIdx;
		sort->sortOperators = ma->sortOperators;
		sort->collations = ma->collations;
		sort->nullsFirst = ma->nullsFirst;
		plan->lefttree = (Plan *) sort;
		return plan;
	}
	if (IsA(plan, Append) && all_topk_scans(((Append *) plan)->appendplans, stmt, pd))
	{
		mark_scans(((Append *) plan)->appendplans, stmt, pd);
		return plan;
	}
	plan->lefttree = fix_topk(plan->lefttree, stmt, pd);
	plan->righttree = fix_topk(plan->righttree, stmt, pd);
	if (IsA(plan, SubqueryScan))
		((SubqueryScan *) plan)->subplan = fix_topk(((SubqueryScan *) plan)->subplan, stmt, pd);
	else if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			lfirst(lc) = fix_topk(lfirst(lc), stmt, pd);
	else if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			lfirst(lc) = fix_topk(lfirst(lc), stmt, pd);
	return plan;
}

/*
 * A plan node's children: its left and right trees and the plans it lists
 * (an Append's, a subquery scan's, a custom scan's...).  Post-planning
 * steps walk plans with it (here, pg_remote_scores.c).
 */
List *
hb_plan_children(Plan *plan)
{
	List	   *children = NIL;

	if (plan->lefttree)
		children = lappend(children, plan->lefttree);
	if (plan->righttree)
		children = lappend(children, plan->righttree);
	switch (nodeTag(plan))
	{
		case T_Append:
			return list_concat(children, ((Append *) plan)->appendplans);
		case T_MergeAppend:
			return list_concat(children, ((MergeAppend *) plan)->mergeplans);
		case T_SubqueryScan:
			return lappend(children, ((SubqueryScan *) plan)->subplan);
		case T_CustomScan:
			return list_concat(children, ((CustomScan *) plan)->custom_plans);
		case T_BitmapAnd:
			return list_concat(children, ((BitmapAnd *) plan)->bitmapplans);
		case T_BitmapOr:
			return list_concat(children, ((BitmapOr *) plan)->bitmapplans);
		default:
			return children;
	}
}

/* Number the nodes fix_topk made (after every existing one). */
static void
number_new_nodes(Plan *plan, int *next)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (plan->plan_node_id < 0)
		plan->plan_node_id = (*next)++;
	foreach(lc, hb_plan_children(plan))
		number_new_nodes(lfirst(lc), next);
}

static void
max_node_id(Plan *plan, int *max)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	*max = Max(*max, plan->plan_node_id);
	foreach(lc, hb_plan_children(plan))
		max_node_id(lfirst(lc), max);
}

/*
 * The plan_node_id for a node added after planning: one past every id in
 * the main plan and its subplans (the executor indexes by them).  Here,
 * below the planner hook, so that both the planner hook and the top-K fix
 * below number their new nodes from it.
 */
int
hb_plan_next_node_id(PlannedStmt *stmt)
{
	int			max = 0;
	ListCell   *lc;

	max_node_id(stmt->planTree, &max);
	foreach(lc, stmt->subplans)
		max_node_id(lfirst(lc), &max);
	return max + 1;
}

/* The scans of the partitions' top rows: asynchronous, left alone. */
void
hb_topk_scans_fix(PlannedStmt *stmt, HbPushdown *pd)
{
	int			next;
	ListCell   *lc;

	/* in the main plan and in subplans (a CTE's, a subquery's) */
	stmt->planTree = fix_topk(stmt->planTree, stmt, pd);
	foreach(lc, stmt->subplans)
		lfirst(lc) = fix_topk(lfirst(lc), stmt, pd);
	next = hb_plan_next_node_id(stmt);
	number_new_nodes(stmt->planTree, &next);
	foreach(lc, stmt->subplans)
		number_new_nodes(lfirst(lc), &next);
}
