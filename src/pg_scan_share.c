/*
 * pg_scan_share.c
 *	  The batching scan's models, shared with parallel workers.
 *
 * A parallel worker is a new process for every query, and used to compile
 * every model it scored with: read the stored image (several MB for 500
 * trees of depth 8), build the layouts and touch all their new pages,
 * about 95 ms a worker and a query on the anchor model here, while its
 * leader held the same plan.  Below a Gather, the scoring node is parallel-aware
 * (pg_scan_plan.c): the leader copies each model its calls name, compiled,
 * into the query's shared memory, and each worker is offered them
 * (pg_cache.c) before its first row.  A worker still looks the name up
 * under its own snapshot and checks its privileges as before; it reads the
 * leader's block only where the version and content match, and compiles
 * otherwise.
 *
 * The leader looks its models up when the Gather starts its workers, not
 * at its first row, and nothing it does then may raise an error the query
 * would not raise without workers (an empty input scores nothing, and
 * resolves nothing): only a name that is a constant or a parameter is
 * read; a model that does not exist, or that the role may not score, is
 * not shared; one it may score is taken from the cache or compiled from its
 * stored image quietly (hb_cache_acquire_quietly: not shared where that
 * would fail).  Errors still come at the first row, as without workers.
 * The blocks of one node stay within hbird.share_plans_max: shared memory
 * may be small (a container's /dev/shm), and a model left out is compiled
 * by each worker, as before.
 */
#include "postgres.h"

#include "access/parallel.h"
#include "utils/builtins.h"

#include "hbird.h"
#include "pg_scan_exec.h"

/* What the leader shares: the entries, in this layout, in the toc's chunk */
typedef struct SharedModels
{
	int32		n;
	Size		off[FLEXIBLE_ARRAY_MEMBER];	/* n + 1: each entry, then the end */
} SharedModels;

/* An entry the leader shares, and its bytes (taken once: a walk of the plan) */
typedef struct SharedModel
{
	HbCacheEntry *e;
	Size		size;
} SharedModel;

/*
 * The models the calls name, as the leader would resolve them now
 * (SharedModels): pinned until the node's end.  Pinned calls (a
 * coordinator's, on a shard) name a version of their own and are left to
 * the workers.
 */
static List *
models_to_share(HbScoreState *st)
{
	List	   *entries = NIL;
	Size		total = 0;

	for (int j = 0; j < st->n_calls; j++)
	{
		ScoreCall  *c = &st->calls[j];
		Expr	   *expr = c->name_es->expr;
		HbCatalogRef ref;
		HbCacheEntry *e;
		bool		isnull;
		Datum		d;
		char	   *name;
		ListCell   *lc;
		bool		dup = false;
		SharedModel *sm;
		Size		size;

		if (c->source == HB_SOURCE_ARGS)
			continue;
		/* evaluating anything else may raise an error, or run a subplan */
		if (!IsA(expr, Const) &&
			!(IsA(expr, Param) && ((Param *) expr)->paramkind == PARAM_EXTERN))
			continue;
		st->argcxt->ecxt_outertuple = NULL;
		d = ExecEvalExprSwitchContext(c->name_es, st->argcxt, &isnull);
		if (isnull)
			continue;
		name = TextDatumGetCString(d);
		if (!hb_catalog_lookup(name, &ref) || !hb_may_score(&ref))
			continue;
		e = hb_cache_acquire_quietly(&ref);
		if (e == NULL)
			continue;
		/*
		 * In the shared cache, the workers (whose hbird.shared_cache is
		 * the leader's) find it themselves: pinned here, it stays there
		 * until the node ends.
		 */
		if (e->shared_hold != NULL && hb_shared_cache_on())
		{
			hb_cache_pin_for(e, st->state_cxt);
			continue;
		}
		foreach(lc, entries)
			dup |= hb_cache_same(((SharedModel *) lfirst(lc))->e, e);
		if (dup)
			continue;
		size = hb_cache_share_size(e);
		if (size == 0 || total + size > (Size) hb_share_plans_max * 1024)
			continue;
		total += size;
		hb_cache_pin_for(e, st->state_cxt);
		sm = palloc(sizeof(SharedModel));
		sm->e = e;
		sm->size = size;
		entries = lappend(entries, sm);
	}
	return entries;
}

/*
 * Entries start at 64-byte boundaries, from a 64-aligned start in the
 * chunk (which shm_toc aligns less), so that the plans' arrays are
 * 64-aligned in memory as in the compiled plan.
 */
#define ENTRY_ALIGN 64

static Size
shared_header_size(int n)
{
	return TYPEALIGN(ENTRY_ALIGN, offsetof(SharedModels, off) + sizeof(Size) * (n + 1));
}

static SharedModels *
shared_models(void *coordinate)
{
	return (SharedModels *) TYPEALIGN(ENTRY_ALIGN, coordinate);
}

Size
hb_score_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	HbScoreState *st = (HbScoreState *) node;
	MemoryContext old = MemoryContextSwitchTo(st->state_cxt);
	Size		size;
	ListCell   *lc;

	st->shared = hb_share_plans ? models_to_share(st) : NIL;
	MemoryContextSwitchTo(old);
	size = ENTRY_ALIGN + shared_header_size(list_length(st->shared));
	foreach(lc, st->shared)
		size = add_size(size, TYPEALIGN(ENTRY_ALIGN, ((SharedModel *) lfirst(lc))->size));
	return size;
}

void
hb_score_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	HbScoreState *st = (HbScoreState *) node;
	SharedModels *sm = shared_models(coordinate);
	Size		off = shared_header_size(list_length(st->shared));
	ListCell   *lc;
	int			i = 0;

	sm->n = list_length(st->shared);
	foreach(lc, st->shared)
	{
		SharedModel *m = lfirst(lc);

		sm->off[i++] = off;
		hb_cache_share_write(m->e, m->size, (char *) sm + off);
		off += TYPEALIGN(ENTRY_ALIGN, m->size);
	}
	sm->off[i] = off;
}

/* A rescan launches workers again over the same blocks: nothing to redo. */
void
hb_score_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
}

void
hb_score_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	SharedModels *sm = shared_models(coordinate);

	for (int i = 0; i < sm->n; i++)
		hb_cache_offer((char *) sm + sm->off[i], sm->off[i + 1] - sm->off[i]);
}
