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
 *	   a partitioned table with such partitions: pg_shard_map.c) becomes
 *	   its pinned form (pg_pinned.c): the row as column names plus values,
 *	   the model version the coordinator sees now (number and SHA-256), the
 *	   server's name.  It binds by those names wherever it runs, and a shard
 *	   whose active version differs raises an error naming itself and both
 *	   versions.
 *	   The plan then depends on the model catalog: the administration
 *	   functions invalidate it (pg_owner.c), on standbys too (the
 *	   invalidation travels in the WAL).
 *
 *	2. A query over one partitioned table of such tables that aggregates
 *	   or ends in ORDER BY ... LIMIT is written once per partition
 *	   (pg_partsplit.c), since PostgreSQL 15 pushes neither into
 *	   partitions.
 *
 * hb_topk over such a table ranks through the same step: one ORDER BY ...
 * LIMIT per partition (the shards rank), merged here in the order one node
 * would rank the rows in.  Nothing happens while hbird.pushdown is off,
 * or hbird.cascade is on (the shards would score exactly what the
 * coordinator approximates); what is not rewritten is planned as before,
 * and answers are the same either way.
 *
 * Whatever the GUCs, a pinned call in a query level with a foreign table
 * is checked against the planning role's right to score (3. below): the
 * shard would check only the user it maps that role to.
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
#include "optimizer/paths.h"
#include "parser/parse_coerce.h"
#include "parser/parse_func.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "partitioning/partdesc.h"
#include "rewrite/rewriteManip.h"
#include "miscadmin.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "parser/parse_type.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/inval.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "hbird.h"
#include "pg_scan.h"
#include "pg_scaleout.h"

/* ---- 1. pinned calls ---- */

typedef struct PinCtx
{
	Query	   *query;			/* whose range table the Vars refer to */
	HbPushdown *pd;
	List	   *remote;			/* rtindexes of distributed relations */
	List	   *local;			/* rtindexes known not to be */
	Bitmapset  *nullable;		/* rtindexes an outer join may null */
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
	bool		is_array;
	HbCallKind	kind = hb_scoring_call(plain->funcid, &is_array);
	Oid			argtypes[6] = {TEXTOID, INT4OID, TEXTOID, TEXTOID, TEXTARRAYOID, ANYOID};
	char	   *nsp = get_namespace_name(get_func_namespace(plain->funcid));

	if (kind == HB_CALL_NONE || nsp == NULL)
		return InvalidOid;
	return LookupFuncName(list_make2(makeString(nsp),
									 makeString(pstrdup(hb_pinned_function_name(kind)))),
						  6, argtypes, true);
}

/*
 * May the role execute f, the call a pinned form would replace?  The
 * pinned form is everyone's to execute; f may not be (REVOKE EXECUTE ...
 * FROM PUBLIC): without the right the call stays, and fails where the
 * executor checks it.  The plan depends on the role (pd->depends) and on
 * f's privileges (pd->replaced).
 */
static bool
may_execute(FuncExpr *f, PinCtx *ctx)
{
	ctx->pd->replaced = list_append_unique_oid(ctx->pd->replaced, f->funcid);
	return pg_proc_aclcheck(f->funcid, GetUserId(), ACL_EXECUTE) == ACLCHECK_OK;
}

/*
 * hb_xxx(name, row | array) over a distributed relation, as its pinned
 * form; NULL when the call stays as it is.
 */
static Node *
pin_call(FuncExpr *f, PinCtx *ctx)
{
	Node	   *name;
	Node	   *arg;
	bool		is_array;
	List	   *args;
	Const	   *cols;
	HbCatalogRef ref;
	Oid			fn;
	FuncExpr   *p;
	char	   *origin = "";

	if (f->funcretset || list_length(f->args) != 2 ||
		hb_scoring_call(f->funcid, &is_array) == HB_CALL_NONE ||
		hb_pinned_function(f->funcid))
		return NULL;
	name = linitial(f->args);
	arg = lsecond(f->args);
	if (!IsA(name, Const) || ((Const *) name)->constisnull)
		return NULL;

	if (!is_array)
	{
		Var		   *v = (Var *) arg;
		RangeTblEntry *rte;
		Relation	rel;
		TupleDesc	desc;
		Datum	   *d;
		Oid		   *types;
		int32	   *typmods;
		int			n = 0;

		/*
		 * a whole row of a distributed relation of this query level; not
		 * where an outer join may make that row up: the made-up row is NULL
		 * and scores NULL, while its columns, all NULL, would score as a
		 * row of missing values
		 */
		if (!IsA(arg, Var) || v->varattno != 0 || v->varlevelsup != 0 ||
			IS_SPECIAL_VARNO(v->varno) || bms_is_member(v->varno, ctx->nullable) ||
			!rte_distributed(ctx, v->varno))
			return NULL;
		ctx->pd->depends = true;
		if (!hb_catalog_lookup(TextDatumGetCString(((Const *) name)->constvalue), &ref) ||
			!hb_may_score(&ref) || !may_execute(f, ctx) ||
			!OidIsValid(fn = pinned_function(f)))
			return NULL;
		rte = rt_fetch(v->varno, ctx->query->rtable);
		rel = table_open(rte->relid, NoLock);
		desc = RelationGetDescr(rel);
		args = NIL;
		d = palloc(sizeof(Datum) * Max(desc->natts, 1));
		types = palloc(sizeof(Oid) * Max(desc->natts, 1));
		typmods = palloc(sizeof(int32) * Max(desc->natts, 1));
		for (int a = 0; a < desc->natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (att->attisdropped)
				continue;
			types[n] = att->atttypid;
			typmods[n] = att->atttypmod;
			d[n++] = CStringGetTextDatum(NameStr(att->attname));
			args = lappend(args, makeVar(v->varno, att->attnum, att->atttypid,
										 att->atttypmod, att->attcollation, 0));
		}
		if (rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE)
			origin = GetForeignServer(GetForeignTable(rte->relid)->serverid)->servername;
		table_close(rel, NoLock);
		if (n == 0)
			return NULL;
		/* the names and the declared types: the shard reads values as such */
		cols = makeConst(TEXTARRAYOID, -1, DEFAULT_COLLATION_OID, -1,
						 PointerGetDatum(hb_pin_columns(d, types, typmods, n)),
						 false, false);
	}
	else
	{
		/* an array read from a distributed relation of this query level */
		if (!reads_distributed_walker(arg, ctx))
			return NULL;
		ctx->pd->depends = true;
		if (!hb_catalog_lookup(TextDatumGetCString(((Const *) name)->constvalue), &ref) ||
			!hb_may_score(&ref) || !may_execute(f, ctx) ||
			!OidIsValid(fn = pinned_function(f)))
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
											   CStringGetTextDatum(hb_pin_identity(ref.sha256, ref.names_key)),
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
	if (rte->rtekind == RTE_RELATION && hb_shard_table(rte->relid, NULL))
		pd->topk_relids = lappend_oid(pd->topk_relids, rte->relid);
}

/*
 * The range table indexes under a node of a query's join tree; those on the
 * side of an outer join that it may null are added to *nullable.
 */
static Bitmapset *
jointree_rels(Node *jt, Bitmapset **nullable)
{
	ListCell   *lc;
	Bitmapset  *rels = NULL;

	if (jt == NULL)
		return NULL;
	if (IsA(jt, RangeTblRef))
		return bms_make_singleton(((RangeTblRef *) jt)->rtindex);
	if (IsA(jt, FromExpr))
	{
		foreach(lc, ((FromExpr *) jt)->fromlist)
			rels = bms_join(rels, jointree_rels(lfirst(lc), nullable));
		return rels;
	}
	if (IsA(jt, JoinExpr))
	{
		JoinExpr   *j = (JoinExpr *) jt;
		Bitmapset  *l = jointree_rels(j->larg, nullable);
		Bitmapset  *r = jointree_rels(j->rarg, nullable);

		if (j->jointype == JOIN_LEFT || j->jointype == JOIN_FULL)
			*nullable = bms_union(*nullable, r);
		if (j->jointype == JOIN_RIGHT || j->jointype == JOIN_FULL)
			*nullable = bms_union(*nullable, l);
		rels = bms_join(l, r);
		if (j->rtindex != 0)
			rels = bms_add_member(rels, j->rtindex);
	}
	return rels;
}

static bool
pin_query(Query *q, HbPushdown *pd)
{
	PinCtx		ctx = {q, pd, NIL, NIL, NULL, 0};
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
	(void) jointree_rels((Node *) q->jointree, &ctx.nullable);
	q->targetList = (List *) pin_mutator((Node *) q->targetList, &ctx);
	q->jointree = (FromExpr *) pin_mutator((Node *) q->jointree, &ctx);
	q->havingQual = pin_mutator(q->havingQual, &ctx);
	if (ctx.pinned > 0 && !hb_split_per_partition(q, pd))
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

/* ---- 3. pinned calls that may be shipped: the right to score ---- */

static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;

static bool
check_pinned_walker(Node *node, PlannerInfo *root)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
		return false;			/* a sublink's query: planned, and checked, itself */
	if (IsA(node, FuncExpr) && hb_pinned_function(((FuncExpr *) node)->funcid))
	{
		hb_pinned_check_shipped((FuncExpr *) node);

		/*
		 * The plan is good for this role only, and for the catalog as it
		 * is (pg_owner.c's writes invalidate plans that read "model").
		 * Marked here, on the plan being made, rather than by the planner
		 * hook: a backend that loaded hbird while planning this statement
		 * (hbird.scoring_support) did not run that hook for it.
		 */
		root->glob->dependsOnRole = true;
		root->glob->relationOids =
			list_append_unique_oid(root->glob->relationOids,
								   hb_catalog_relid("model"));
	}
	return expression_tree_walker(node, check_pinned_walker, root);
}

/*
 * Called for every base relation of every query level, once its
 * expressions are in their final form (views expanded, SQL functions
 * inlined): that is what postgres_fdw deparses for its server.
 */
static void
hb_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					RangeTblEntry *rte)
{
	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_FOREIGN_TABLE)
	{
		Query	   *q = root->parse;

		(void) check_pinned_walker((Node *) q->targetList, root);
		(void) check_pinned_walker((Node *) q->jointree, root);
		(void) check_pinned_walker(q->havingQual, root);
	}
}

/*
 * A role's memberships or attributes changed (GRANT/REVOKE of a role,
 * ALTER ROLE ... NOSUPERUSER): plans that pinned calls were made for what
 * the role could score and execute then, and PostgreSQL invalidates no
 * plan for that.  Every cached plan is made again; such changes are rare.
 */
static void
roles_changed(Datum arg, int cacheid, uint32 hashvalue)
{
	ResetPlanCache();
}

void
hb_pushdown_init(void)
{
	CacheRegisterSyscacheCallback(AUTHMEMROLEMEM, roles_changed, (Datum) 0);
	CacheRegisterSyscacheCallback(AUTHOID, roles_changed, (Datum) 0);
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = hb_set_rel_pathlist;
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

void
hb_pushdown_finish(PlannedStmt *stmt, HbPushdown *pd)
{
	/*
	 * model changes invalidate the plan (pg_owner.c sends the message), and
	 * so does running it as another role: whether a call was pinned to its
	 * shards (and scored there, unchecked here) depended on the planning
	 * role's right to score the model.  (Pinned calls that were already in
	 * the query mark the plan where they are checked, hb_set_rel_pathlist.)
	 * A pinned call is IMMUTABLE (postgres_fdw ships nothing else): over
	 * constants the planner computes it (in the query as written, or in
	 * an SQL function it inlines), checking the planning role's right to
	 * score, and the plan keeps only the value; the planner hook counts
	 * such runs (hb_pinned_runs), and that plan too is good for that role
	 * and that catalog only, whatever the GUCs.
	 */
	if (pd->depends || pd->folded_pinned)
	{
		ListCell   *lc;

		stmt->relationOids = lappend_oid(stmt->relationOids,
										 hb_catalog_relid("model"));
		stmt->dependsOnRole = true;
		/* a GRANT or REVOKE on a replaced function invalidates it too */
		foreach(lc, pd->replaced)
		{
			PlanInvalItem *item = makeNode(PlanInvalItem);

			item->cacheId = PROCOID;
			item->hashValue = GetSysCacheHashValue1(PROCOID,
													ObjectIdGetDatum(lfirst_oid(lc)));
			stmt->invalItems = lappend(stmt->invalItems, item);
		}
	}
	if (pd->topk_relids != NIL)
		hb_topk_scans_fix(stmt, pd);
	if (pd->depends)
		hb_remote_scores(stmt);
}

bool
hb_pushdown_keeps(const HbPushdown *pd, const Plan *plan)
{
	return pd != NULL && list_member_ptr(pd->keep, plan);
}

/* ---- hb_topk over a table of shards ---- */

/* One row of a shard's k best: its score, where it came from, its values. */
typedef struct ShardRow
{
	double		score;
	int			part;			/* the partition's place in the table's order */
	uint64		seq;			/* its place in the answer (its shard's order) */
	HeapTuple	tuple;			/* the SPI row: tableoid, score, ctid, columns */
} ShardRow;

/* where oid is in list, -1 if not */
static int
list_index_oid(List *list, Oid oid)
{
	ListCell   *lc;

	foreach(lc, list)
		if (lfirst_oid(lc) == oid)
			return foreach_current_index(lc);
	return -1;
}

/* best first: score desc, then the partition order, then the shard's order */
static int
shard_row_cmp(const void *a, const void *b)
{
	const ShardRow *x = a,
			   *y = b;

	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->part != y->part)
		return x->part < y->part ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq ? 1 : 0;
}

/*
 * Whether reading t's leaf partitions one by one returns what reading t
 * does to the current role: t's own privileges and row-level security
 * decide that, the leaves' do not.  So only when the role may read all of
 * t and every leaf (a privilege on t alone would fail on the leaves), and
 * no policy applies to it on t.  Otherwise the caller ranks t's rows itself.
 */
static bool
shards_readable_as_table(Oid relid)
{
	Oid			user = GetUserId();
	ListCell   *lc;

	if (check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED ||
		pg_class_aclcheck(relid, user, ACL_SELECT) != ACLCHECK_OK)
		return false;
	if (get_rel_relkind(relid) != RELKIND_PARTITIONED_TABLE)
		return true;
	foreach(lc, hb_leaf_partitions(relid))
		if (pg_class_aclcheck(lfirst_oid(lc), user, ACL_SELECT) != ACLCHECK_OK ||
			check_enable_rls(lfirst_oid(lc), InvalidOid, true) == RLS_ENABLED)
			return false;
	return true;
}

/*
 * hb_topk(name, k, NULL::t) where t is a foreign table of an hbird server
 * or a partitioned table with such partitions: one query, a UNION ALL with
 * one arm per leaf partition, in the order a scan of t reads them:
 *
 *	(SELECT p.tableoid, hb_predict(name, p), p.ctid, p.c1, ... FROM part p
 *	 ORDER BY 2 DESC, 3 LIMIT k) UNION ALL ...
 *
 * The step above ships each arm to its shard (the model version pinned
 * and checked there) and runs the arms at the same time; each shard ranks
 * its own rows, with its ties in its input order (ctid).  The k best of
 * the arms, by score, then partition, then each shard's order, are the
 * answer hb_topk ranks on one node reading t partition after partition:
 * ties go to the row read first.  The row is rebuilt as t's row type by
 * column name.  False when t is not such a table, or when its partitions
 * would not read as t does for the caller (shards_readable_as_table): the
 * caller ranks.
 */
bool
hb_topk_on_shards(FunctionCallInfo fcinfo, HbCacheEntry *e, int k, Oid rowtype)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = typeidTypeRelid(rowtype);
	const char *nsp;
	char	   *cols;
	List	   *parts = NIL;
	StringInfoData sql;
	TupleDesc	desc;
	ShardRow   *rows;
	uint64		n = 0;
	int			natts;
	int			nlive = 0;
	Datum	   *values;
	bool	   *nulls;
	MemoryContext cxt = CurrentMemoryContext;
	Relation	rel;
	ListCell   *lc;
	int			part = 0;

	if (!hb_pushdown_on || hb_cascade_on || !OidIsValid(relid) ||
		!hb_distributed_rel(relid) || !shards_readable_as_table(relid))
		return false;
	nsp = quote_identifier(get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid)));

	/* the leaf partitions in the order a scan reads them */
	rel = table_open(relid, AccessShareLock);
	parts = rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE ?
		hb_leaf_partitions(relid) : list_make1_oid(relid);
	desc = CreateTupleDescCopy(RelationGetDescr(rel));
	table_close(rel, AccessShareLock);
	natts = desc->natts;

	/* t's columns by name (partitions may order theirs otherwise) */
	{
		StringInfoData c;

		initStringInfo(&c);
		for (int a = 0; a < natts; a++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, a);

			if (att->attisdropped)
				continue;
			appendStringInfo(&c, ", p.%s", quote_identifier(NameStr(att->attname)));
			nlive++;
		}
		cols = c.data;
	}
	if (parts == NIL)
		return true;			/* no partitions: no rows */
	initStringInfo(&sql);
	foreach(lc, parts)
	{
		Oid			p = lfirst_oid(lc);

		/*
		 * Nothing but columns besides the score: the arm stays a plain scan
		 * of the foreign table, which runs asynchronously
		 */
		appendStringInfo(&sql, "%s(SELECT p.tableoid, %s.hb_predict(%s, p), p.ctid%s FROM %s p ORDER BY 2 DESC, 3 LIMIT %d)",
						 part > 0 ? " UNION ALL " : "", nsp,
						 quote_literal_cstr(e->name), cols,
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(p)),
													get_rel_name(p)),
						 k);
		part++;
	}

	SPI_connect();
	if (SPI_execute(sql.data, true, 0) != SPI_OK_SELECT ||
		SPI_tuptable->tupdesc->natts != 3 + nlive)
		elog(ERROR, "could not rank the shards' rows: %s", sql.data);
	rows = palloc(sizeof(ShardRow) * Max(SPI_processed, 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		bool		isnull;
		Datum		d;

		/* a row with no score is not ranked, as on one node */
		d = SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull);
		if (isnull)
			continue;
		rows[n].score = DatumGetFloat8(d);
		rows[n].part = list_index_oid(parts,
									  DatumGetObjectId(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull)));
		rows[n].seq = i;
		rows[n].tuple = tup;
		n++;
	}
	qsort(rows, n, sizeof(ShardRow), shard_row_cmp);

	values = palloc(sizeof(Datum) * Max(natts, 1));
	nulls = palloc(sizeof(bool) * Max(natts, 1));
	for (uint64 i = 0; i < n && i < (uint64) k; i++)
	{
		Datum		out[3];
		bool		onulls[3] = {0};
		int			col = 0;
		int			src = 4;	/* the SPI row's first column of t */
		MemoryContext old;

		for (int a = 0; a < natts; a++)
		{
			if (TupleDescAttr(desc, a)->attisdropped)
			{
				values[a] = (Datum) 0;
				nulls[a] = true;
				continue;
			}
			values[a] = SPI_getbinval(rows[i].tuple, SPI_tuptable->tupdesc, src++, &nulls[a]);
		}
		/* hb_topk's (rank, score, item): it checked the columns */
		out[col++] = Int32GetDatum((int32) i + 1);
		out[col++] = Float8GetDatum(rows[i].score);
		out[col++] = HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
		Assert(col == lengthof(out));
		old = MemoryContextSwitchTo(cxt);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, onulls);
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	return true;
}
