/*
 * pg_pushdown.c
 *	  Scoring where the rows are: the planner step that lets postgres_fdw
 *	  evaluate hbird's scoring calls on the shards (docs/scale-out.md).
 *
 * postgres_fdw ships a function to a foreign server only when it is
 * IMMUTABLE and belongs to an extension listed in the server's extensions
 * option, and a whole-row argument never ships as the row it is (a
 * foreign table's row deparses as an anonymous ROW(...), a partition's row
 * converted to its parent's type not at all).  So, before standard_planner
 * and on the Query:
 *
 *	1. Every plain scoring call over a foreign table of an hbird server (or
 *	   a partitioned table with such partitions) becomes its pinned form
 *	   (pg_pinned.c): the row as column names plus values, the model version
 *	   the coordinator sees now (number and SHA-256), the server's name.  It
 *	   binds by those names wherever it runs, and a shard whose active
 *	   version differs raises an error naming itself and both versions.
 *	   The plan then depends on the model catalog: the administration
 *	   functions invalidate it (pg_owner.c), on standbys too (the
 *	   invalidation travels in the WAL).
 *
 *	2. PostgreSQL 15 pushes neither a partial aggregate nor a LIMIT into
 *	   the partitions of a partitioned table, so a query over one
 *	   partitioned table that scores and aggregates (sum, count, avg, min,
 *	   max; any GROUP BY) or ends in ORDER BY ... LIMIT is written as a
 *	   UNION ALL of the same query per leaf partition, each of which
 *	   postgres_fdw pushes down whole (an aggregate, or ORDER BY and LIMIT
 *	   k + offset), under the combining aggregate or the final sort and
 *	   limit.  The union's Append runs the shards asynchronously
 *	   (async_capable); a MergeAppend PostgreSQL may prefer for the top-K
 *	   (it cannot run asynchronously) becomes a sort over an Append.
 *	   Permissions are checked on the partitioned table, as before: it
 *	   stays in the range table, the partitions carry no permission of
 *	   their own.
 *
 * Nothing happens while hbird.pushdown is off, or hbird.cascade is on (the
 * shards would score exactly what the coordinator approximates); what is
 * not rewritten is planned as before, and answers are the same either way.
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
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
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "partitioning/partdesc.h"
#include "rewrite/rewriteManip.h"
#include "storage/lmgr.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "hbird.h"
#include "pg_scan.h"
#include "pg_scaleout.h"

/* ---- which relations are on hbird servers ---- */

/* A foreign table on a server that ships hbird's functions. */
static bool
hbird_foreign_table(Oid relid, Oid *serverid)
{
	ForeignTable *ft;

	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	ft = GetForeignTable(relid);
	if (serverid)
		*serverid = ft->serverid;
	return hb_server_ships_hbird(ft->serverid);
}

/*
 * The leaf partitions of a partitioned table, in partition bound order,
 * locked as the planner locks them.
 */
static List *
leaf_partitions(Oid relid)
{
	Relation	rel = table_open(relid, NoLock);
	PartitionDesc pd = RelationGetPartitionDesc(rel, true);
	List	   *leaves = NIL;

	for (int i = 0; i < pd->nparts; i++)
	{
		Oid			child = pd->oids[i];

		LockRelationOid(child, AccessShareLock);
		if (get_rel_relkind(child) == RELKIND_PARTITIONED_TABLE)
			leaves = list_concat(leaves, leaf_partitions(child));
		else
			leaves = lappend_oid(leaves, child);
	}
	table_close(rel, NoLock);
	return leaves;
}

/*
 * Is relid a foreign table of an hbird server, or a partitioned table with
 * at least one leaf that is?  (Locks the partitions.)
 */
bool
hb_distributed_rel(Oid relid)
{
	char		kind = get_rel_relkind(relid);
	ListCell   *lc;

	if (kind == RELKIND_FOREIGN_TABLE)
		return hbird_foreign_table(relid, NULL);
	if (kind != RELKIND_PARTITIONED_TABLE)
		return false;
	foreach(lc, leaf_partitions(relid))
		if (hbird_foreign_table(lfirst_oid(lc), NULL))
			return true;
	return false;
}

/* ---- 1. pinned calls ---- */

typedef struct PinCtx
{
	Query	   *query;			/* whose range table the Vars refer to */
	HbPushdown *pd;
	List	   *remote;			/* rtindexes of distributed relations */
	List	   *local;			/* rtindexes known not to be */
	int			pinned;			/* calls rewritten */
} PinCtx;

static bool
rte_distributed(PinCtx *ctx, Index rti)
{
	RangeTblEntry *rte;
	bool		d;

	if (list_member_int(ctx->remote, rti))
		return true;
	if (list_member_int(ctx->local, rti))
		return false;
	rte = rt_fetch(rti, ctx->query->rtable);
	d = rte->rtekind == RTE_RELATION && hb_distributed_rel(rte->relid);
	if (d)
		ctx->remote = lappend_int(ctx->remote, rti);
	else
		ctx->local = lappend_int(ctx->local, rti);
	return d;
}

/* Does expr read a column of a distributed relation of this query level? */
static bool
reads_distributed_walker(Node *node, PinCtx *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
	{
		Var		   *v = (Var *) node;

		return v->varlevelsup == 0 && !IS_SPECIAL_VARNO(v->varno) &&
			rte_distributed(ctx, v->varno);
	}
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, reads_distributed_walker, ctx);
}

/* The pinned function of a scoring call's kind, next to the plain one. */
static Oid
pinned_function(FuncExpr *plain)
{
	static const char *const names[] = {
		NULL, "hb_predict_pinned", "hb_predict_proba_pinned",
		"hb_predict_margin_pinned", "hb_predict_class_pinned",
		"hb_predict_targets_pinned"
	};
	bool		is_array;
	HbCallKind	kind = hb_scoring_call(plain->funcid, &is_array);
	Oid			argtypes[6] = {TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTARRAYOID, ANYOID};
	char	   *nsp = get_namespace_name(get_func_namespace(plain->funcid));

	if (kind == HB_CALL_NONE || nsp == NULL)
		return InvalidOid;
	return LookupFuncName(list_make2(makeString(nsp), makeString((char *) names[kind])),
						  6, argtypes, true);
}

/*
 * hb_xxx(name, row | array) over a distributed relation, as its pinned
 * form; NULL when the call stays as it is.
 */
static Node *
pin_call(FuncExpr *f, PinCtx *ctx)
{
	Node	   *name = linitial(f->args);
	Node	   *arg = lsecond(f->args);
	bool		is_array;
	List	   *args;
	Const	   *cols;
	HbCatalogRef ref;
	Oid			fn;
	FuncExpr   *p;
	char	   *origin = "";

	if (f->funcretset || list_length(f->args) != 2 ||
		hb_scoring_call(f->funcid, &is_array) == HB_CALL_NONE ||
		hb_pinned_function(f->funcid) ||
		!IsA(name, Const) || ((Const *) name)->constisnull)
		return NULL;

	if (!is_array)
	{
		Var		   *v = (Var *) arg;
		RangeTblEntry *rte;
		Relation	rel;
		TupleDesc	desc;
		Datum	   *d;
		int			n = 0;

		/* a whole row of a distributed relation of this query level */
		if (!IsA(arg, Var) || v->varattno != 0 || v->varlevelsup != 0 ||
			IS_SPECIAL_VARNO(v->varno) || !rte_distributed(ctx, v->varno))
			return NULL;
		ctx->pd->depends = true;
		if (!hb_catalog_lookup(TextDatumGetCString(((Const *) name)->constvalue), &ref) ||
			!hb_may_score(&ref) || !OidIsValid(fn = pinned_function(f)))
			return NULL;
		rte = rt_fetch(v->varno, ctx->query->rtable);
		rel = table_open(rte->relid, NoLock);
		desc = RelationGetDescr(rel);
		args = NIL;
		d = palloc(sizeof(Datum) * Max(desc->natts, 1));
		for (int a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (att->attisdropped)
				continue;
			d[n++] = CStringGetTextDatum(NameStr(att->attname));
			args = lappend(args, makeVar(v->varno, att->attnum, att->atttypid,
										 att->atttypmod, att->attcollation, 0));
		}
		if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE)
			origin = GetForeignServer(GetForeignTable(rte->relid)->serverid)->servername;
		table_close(rel, NoLock);
		if (n == 0)
			return NULL;
		cols = makeConst(TEXTARRAYOID, -1, DEFAULT_COLLATION_OID, -1,
						 PointerGetDatum(construct_array(d, n, TEXTOID, -1, false,
														 TYPALIGN_INT)),
						 false, false);
	}
	else
	{
		/* an array read from a distributed relation of this query level */
		if (!reads_distributed_walker(arg, ctx))
			return NULL;
		ctx->pd->depends = true;
		if (!hb_catalog_lookup(TextDatumGetCString(((Const *) name)->constvalue), &ref) ||
			!hb_may_score(&ref) || !OidIsValid(fn = pinned_function(f)))
			return NULL;
		args = list_make1(copyObject(arg));
		cols = makeNullConst(TEXTARRAYOID, -1, DEFAULT_COLLATION_OID);
		if (list_length(ctx->remote) == 1)
		{
			RangeTblEntry *rte = rt_fetch(linitial_int(ctx->remote), ctx->query->rtable);

			if (get_rel_relkind(rte->relid) == RELKIND_FOREIGN_TABLE)
				origin = GetForeignServer(GetForeignTable(rte->relid)->serverid)->servername;
		}
	}

	p = makeNode(FuncExpr);
	p->funcid = fn;
	p->funcresulttype = f->funcresulttype;
	p->funcretset = false;
	p->funcvariadic = false;
	p->funcformat = COERCE_EXPLICIT_CALL;
	/*
	 * No input collation: the strings are names, and postgres_fdw ships a
	 * call with one only when a foreign column gives it.
	 */
	p->funccollid = InvalidOid;
	p->inputcollid = InvalidOid;
	p->args = list_concat(list_make5(copyObject(name),
									 makeConst(INT4OID, -1, InvalidOid, 4,
											   Int32GetDatum(ref.version), false, true),
									 makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
											   CStringGetTextDatum(hb_sha256_hex(ref.sha256)),
											   false, false),
									 makeConst(TEXTOID, -1, DEFAULT_COLLATION_OID, -1,
											   CStringGetTextDatum(origin), false, false),
									 cols),
						  args);
	p->location = f->location;
	ctx->pinned++;
	return (Node *) p;
}

static bool pin_query(Query *q, HbPushdown *pd);

static Node *
pin_mutator(Node *node, PinCtx *ctx)
{
	if (node == NULL)
		return NULL;
	if (IsA(node, Query))
	{
		/* a sublink's query: its own range table */
		Query	   *sub = copyObject((Query *) node);

		(void) pin_query(sub, ctx->pd);
		return (Node *) sub;
	}
	if (IsA(node, FuncExpr))
	{
		Node	   *p = pin_call((FuncExpr *) node, ctx);

		if (p != NULL)
			return p;
	}
	return expression_tree_mutator(node, pin_mutator, ctx);
}

/* ---- 2. one query per partition ---- */

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
static bool
split_query(Query *q, HbPushdown *pd)
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

	parent = table_open(prte->relid, NoLock);
	pdesc = RelationGetDescr(parent);
	foreach(lc, leaf_partitions(prte->relid))
	{
		Leaf	   *leaf = palloc0(sizeof(Leaf));
		Relation	rel = table_open(lfirst_oid(lc), NoLock);
		Oid			server;

		leaf->relid = lfirst_oid(lc);
		leaf->parent_type = pdesc->tdtypeid;
		leaf->map = build_attrmap_by_name_if_req(RelationGetDescr(rel), pdesc);
		leaf->server = "";
		if (hbird_foreign_table(leaf->relid, &server))
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

/* ---- the whole query ---- */

/*
 * ORDER BY ... LIMIT over one foreign table of an hbird server: postgres_fdw
 * pushes both, and the scan returns k rows; under a UNION ALL of such
 * queries (one per shard, written by hand) it is one of the scans
 * hb_pushdown_finish runs asynchronously.
 */
static void
note_single_topk(Query *q, HbPushdown *pd)
{
	RangeTblEntry *rte;

	if (q->commandType != CMD_SELECT || q->sortClause == NIL ||
		q->limitCount == NULL || q->hasAggs || q->groupClause != NIL ||
		list_length(q->rtable) != 1)
		return;
	rte = linitial(q->rtable);
	if (rte->rtekind == RTE_RELATION && hbird_foreign_table(rte->relid, NULL))
		pd->topk_relids = lappend_oid(pd->topk_relids, rte->relid);
}

static bool
pin_query(Query *q, HbPushdown *pd)
{
	PinCtx		ctx = {q, pd, NIL, NIL, 0};
	ListCell   *lc;

	/* subqueries in FROM and WITH first: each is a query of its own */
	foreach(lc, q->rtable)
	{
		RangeTblEntry *rte = lfirst(lc);

		if (rte->rtekind == RTE_SUBQUERY && rte->subquery)
			(void) pin_query(rte->subquery, pd);
	}
	foreach(lc, q->cteList)
	{
		CommonTableExpr *cte = lfirst(lc);

		if (IsA(cte->ctequery, Query))
			(void) pin_query((Query *) cte->ctequery, pd);
	}
	q->targetList = (List *) pin_mutator((Node *) q->targetList, &ctx);
	q->jointree = (FromExpr *) pin_mutator((Node *) q->jointree, &ctx);
	q->havingQual = pin_mutator(q->havingQual, &ctx);
	if (ctx.pinned > 0 && !split_query(q, pd))
		note_single_topk(q, pd);
	return ctx.pinned > 0;
}

/* Is there a plain scoring call anywhere?  (a cheap first look) */
static bool
any_scoring_walker(Node *node, void *ctx)
{
	if (node == NULL)
		return false;
	if (IsA(node, FuncExpr))
	{
		bool		is_array;

		if (hb_scoring_call(((FuncExpr *) node)->funcid, &is_array) != HB_CALL_NONE)
			return true;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, any_scoring_walker, ctx, 0);
	return expression_tree_walker(node, any_scoring_walker, ctx);
}

void
hb_pushdown_prepare(Query *parse, HbPushdown *pd)
{
	memset(pd, 0, sizeof(*pd));
	if (!hb_pushdown_on || hb_cascade_on || parse->commandType != CMD_SELECT ||
		parse->utilityStmt != NULL ||
		!query_tree_walker(parse, any_scoring_walker, NULL, 0))
		return;
	(void) pin_query(parse, pd);
}

/* ---- after standard_planner ---- */

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

/* Number the nodes fix_topk made (after every existing one). */
static void
number_new_nodes(Plan *plan, int *next)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (plan->plan_node_id < 0)
		plan->plan_node_id = (*next)++;
	number_new_nodes(plan->lefttree, next);
	number_new_nodes(plan->righttree, next);
	if (IsA(plan, SubqueryScan))
		number_new_nodes(((SubqueryScan *) plan)->subplan, next);
	else if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			number_new_nodes(lfirst(lc), next);
	else if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			number_new_nodes(lfirst(lc), next);
}

static void
max_node_id(Plan *plan, int *max)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	*max = Max(*max, plan->plan_node_id);
	max_node_id(plan->lefttree, max);
	max_node_id(plan->righttree, max);
	if (IsA(plan, SubqueryScan))
		max_node_id(((SubqueryScan *) plan)->subplan, max);
	else if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			max_node_id(lfirst(lc), max);
	else if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			max_node_id(lfirst(lc), max);
	else if (IsA(plan, CustomScan))
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			max_node_id(lfirst(lc), max);
}

void
hb_pushdown_finish(PlannedStmt *stmt, HbPushdown *pd)
{
	/* model changes invalidate the plan (pg_owner.c sends the message) */
	if (pd->depends)
		stmt->relationOids = lappend_oid(stmt->relationOids,
										 hb_catalog_relid("model"));
	if (pd->topk_relids != NIL)
	{
		int			next = 0;
		ListCell   *lc;

		stmt->planTree = fix_topk(stmt->planTree, stmt, pd);
		max_node_id(stmt->planTree, &next);
		foreach(lc, stmt->subplans)
			max_node_id(lfirst(lc), &next);
		next++;
		number_new_nodes(stmt->planTree, &next);
	}
}

bool
hb_pushdown_keeps(const HbPushdown *pd, const Plan *plan)
{
	return pd != NULL && list_member_ptr(pd->keep, plan);
}

/* ---- hb_topk over a table of shards ---- */

/*
 * hb_topk(name, k, NULL::t) where t is a foreign table of an hbird server
 * or a partitioned table with such partitions: the query ORDER BY score
 * DESC, ctid LIMIT k, which the step above gives to the shards (each
 * ranks its own rows, with the batching scan's pruning, and the
 * coordinator merges their k best).  Ties come in each shard's input
 * order (ctid); rows of different shards with equal scores are ordered by
 * their ctids.  False when t is not such a table: the caller ranks.
 */
bool
hb_topk_on_shards(FunctionCallInfo fcinfo, HbCacheEntry *e, int k, Oid rowtype)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = typeidTypeRelid(rowtype);
	char	   *nsp;
	char	   *sql;
	MemoryContext cxt = CurrentMemoryContext;

	if (!hb_pushdown_on || hb_cascade_on || !OidIsValid(relid) ||
		!hb_distributed_rel(relid))
		return false;
	nsp = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
	sql = psprintf("SELECT %s.hb_predict(%s, t), t FROM %s t ORDER BY 1 DESC, t.ctid LIMIT %d",
				   quote_identifier(nsp), quote_literal_cstr(e->name),
				   quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
											  get_rel_name(relid)),
				   k);
	SPI_connect();
	if (SPI_execute(sql, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not rank the shards' rows: %s", sql);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		MemoryContext old;

		values[0] = Int32GetDatum((int32) i + 1);
		values[1] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &nulls[1]);
		values[2] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &nulls[2]);
		old = MemoryContextSwitchTo(cxt);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return true;
}
