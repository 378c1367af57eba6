/*
 * pg_stats.c
 *	  Cluster-wide scoring statistics per model version: the hb_stat_models
 *	  view and its reset functions.
 *
 * Counters live in a fixed-size shared hash table (hbird.stat_max entries,
 * least recently used evicted), which exists only when hbird is in
 * shared_preload_libraries.  Scoring never touches it: each backend adds to
 * counters that hang off its plan cache entries and moves them into shared
 * memory at the end of every statement (ExecutorEnd, parallel workers
 * included), at transaction end, when a cache entry is evicted and at exit.
 * One shared LWLock guards the table's shape; each entry's counters have
 * their own spinlock, so concurrent flushes only share the lock.
 *
 * Row-at-a-time calls are timed on a random one in 32 (HB_STAT_SAMPLE in
 * hbird.h): reading the clock twice per row costs about 6% of a small
 * model's row.  Batched scoring is timed exactly.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "hbird.h"
#include "topk.h"

PG_FUNCTION_INFO_V1(hb_stat_models);
PG_FUNCTION_INFO_V1(hb_stat_models_reset_all);
PG_FUNCTION_INFO_V1(hb_stat_models_reset_name);

/* model names are at most 200 bytes (CHECK on hbird.model) */
#define HB_STAT_NAME_LEN 201

/* strategies as stored; 0 = none seen yet */
enum
{
	STRAT_NONE = 0,
	STRAT_TT,
	STRAT_PTT,
	STRAT_GEMM,
	STRAT_LINEAR
};

static const char *const strat_names[] = {NULL, "tt", "ptt", "gemm", "linear"};

typedef struct HbStatKey
{
	Oid			dbid;
	int32		version;
	uint8		sha256[HB_SHA256_LEN];
	char		name[HB_STAT_NAME_LEN];
} HbStatKey;

typedef struct HbStatCounters
{
	int64		calls;
	int64		rows;
	double		batch_ms;		/* batched scoring, timed exactly */
	int64		row_calls;		/* row-at-a-time calls ... */
	int64		row_timed;		/* ... of which timed ... */
	double		row_ms;			/* ... taking this long */
	int64		cache_hits;
	int64		cache_misses;
	double		compile_ms;
	int64		topk_calls;
	int64		topk_rows_pruned;	/* rows dropped before their last tree */
	int64		topk_pairs_pruned;	/* (row, tree) pairs never evaluated */
} HbStatCounters;

typedef struct HbStatEntry
{
	HbStatKey	key;			/* hash key: first */
	slock_t		mutex;			/* guards everything below */
	HbStatCounters c;
	int			strategy;
	TimestampTz last_used;
	TimestampTz since;
} HbStatEntry;

typedef struct HbStatShared
{
	LWLock	   *lock;			/* shared: find and update; exclusive: add,
								 * evict, reset */
} HbStatShared;

/* A backend's pending counters for one plan cache entry. */
typedef struct HbStatLocal
{
	HbCacheEntry *entry;		/* lives in entry->cxt */
	HbStatCounters c;
	size_t		last_n;			/* rows in the last scored batch */
	bool		last_topk;
	bool		queued;
	dlist_node	node;
	MemoryContextCallback cb;
} HbStatLocal;

uint64		hb_stat_rng = 0;

static HbStatShared *shared = NULL;
static HTAB *shared_hash = NULL;

static dlist_head pending = DLIST_STATIC_INIT(pending);
static bool callbacks_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

static void stat_flush(void);

static Size
stat_shmem_size(void)
{
	return add_size(MAXALIGN(sizeof(HbStatShared)),
					hash_estimate_size(hb_stat_max, sizeof(HbStatEntry)));
}

/* PostgreSQL 15 takes requests for shared memory only from this hook */
static void
stat_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(stat_shmem_size());
	RequestNamedLWLockTranche("hbird_stats", 1);
}

static void
stat_shmem_startup(void)
{
	HASHCTL		info;
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("hbird stat_models", sizeof(HbStatShared), &found);
	if (!found)
		shared->lock = &(GetNamedLWLockTranche("hbird_stats"))->lock;
	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(HbStatKey);
	info.entrysize = sizeof(HbStatEntry);
	shared_hash = ShmemInitHash("hbird stat_models hash", hb_stat_max, hb_stat_max,
								&info, HASH_ELEM | HASH_BLOBS);
	LWLockRelease(AddinShmemInitLock);
}

static void
stat_ExecutorEnd(QueryDesc *queryDesc)
{
	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
	if (!dlist_is_empty(&pending))
		stat_flush();
}

static void
stat_xact_callback(XactEvent event, void *arg)
{
	if (!dlist_is_empty(&pending))
		stat_flush();
}

static void
stat_exit_callback(int code, Datum arg)
{
	if (!dlist_is_empty(&pending))
		stat_flush();
}

/* The shared memory, when loaded by shared_preload_libraries. */
void
hb_stat_init(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = stat_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = stat_shmem_startup;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = stat_ExecutorEnd;
}

/* ---- backend-local counters ---- */

static void
stat_local_release(void *arg)
{
	HbStatLocal *l = (HbStatLocal *) arg;

	/* the cache is freeing the entry: its counters go now */
	if (l->queued)
	{
		dlist_delete(&l->node);
		dlist_push_head(&pending, &l->node);
		stat_flush();
	}
}

static HbStatLocal *
stat_local(HbCacheEntry *e)
{
	HbStatLocal *l = (HbStatLocal *) e->stat;

	if (l == NULL)
	{
		l = MemoryContextAllocZero(e->cxt, sizeof(HbStatLocal));
		l->entry = e;
		l->cb.func = stat_local_release;
		l->cb.arg = l;
		MemoryContextRegisterResetCallback(e->cxt, &l->cb);
		e->stat = l;
	}
	if (!l->queued)
	{
		if (!callbacks_registered)
		{
			RegisterXactCallback(stat_xact_callback, NULL);
			before_shmem_exit(stat_exit_callback, (Datum) 0);
			callbacks_registered = true;
		}
		dlist_push_tail(&pending, &l->node);
		l->queued = true;
	}
	return l;
}

/* Off the pending list, counters zeroed (flushed or discarded). */
static void
local_done(HbStatLocal *l)
{
	dlist_delete(&l->node);
	l->queued = false;
	memset(&l->c, 0, sizeof(l->c));
}

static double
ms_since(const instr_time *start)
{
	instr_time	now;

	INSTR_TIME_SET_CURRENT(now);
	INSTR_TIME_SUBTRACT(now, *start);
	return INSTR_TIME_GET_MILLISEC(now);
}

/* One row-at-a-time call; sample is its start time when it was sampled. */
void
hb_stat_row(HbCacheEntry *e, const instr_time *sample)
{
	HbStatLocal *l;

	if (!hb_stat_on)
		return;
	l = stat_local(e);
	l->c.calls++;
	l->c.rows++;
	l->c.row_calls++;
	l->last_n = 1;
	l->last_topk = false;
	if (sample)
	{
		l->c.row_timed++;
		l->c.row_ms += ms_since(sample);
	}
}

/* n rows scored in one batch that started at start. */
void
hb_stat_batch(HbCacheEntry *e, int64 n, const instr_time *start, bool topk)
{
	HbStatLocal *l;

	if (!hb_stat_on)
		return;
	l = stat_local(e);
	l->c.rows += n;
	l->c.batch_ms += ms_since(start);
	l->last_n = (size_t) Max(n, 1);
	l->last_topk = topk;
}

/* A finished batched call (aggregate group, hb_predict_batch). */
void
hb_stat_call(HbCacheEntry *e)
{
	if (!hb_stat_on)
		return;
	stat_local(e)->c.calls++;
}

/* A finished top-K (rows were counted batch by batch). */
void
hb_stat_topk(HbCacheEntry *e, const HbTopkStats *s)
{
	HbStatLocal *l;
	int64		trees;

	if (!hb_stat_on)
		return;
	l = stat_local(e);
	trees = hb_plan_n_trees(e->plan);
	l->c.calls++;
	l->c.topk_calls++;
	l->c.topk_rows_pruned += s->rows - s->rows_full;
	l->c.topk_pairs_pruned += s->rows * trees - s->pairs_scored;
}

/* A lookup in the plan cache; a miss passes when compiling started. */
void
hb_stat_cache(HbCacheEntry *e, const instr_time *compile_start)
{
	HbStatLocal *l;

	if (!hb_stat_on)
		return;
	l = stat_local(e);
	if (compile_start)
	{
		l->c.cache_misses++;
		l->c.compile_ms += ms_since(compile_start);
	}
	else
		l->c.cache_hits++;
}

/* What the plan ran its last batch with (the plan is alive: l is in it). */
static int
local_strategy(const HbStatLocal *l)
{
	const HbPlan *p = l->entry->plan;
	HbStrategy	s;

	if (l->last_n == 0)
		return STRAT_NONE;
	if (hb_plan_n_trees(p) == 0)
		return STRAT_LINEAR;
	s = hb_plan_strategy(p, l->last_n);
	/* top-K has traversal kernels only: TT, or PTT for large batches */
	if (l->last_topk && s == HB_STRATEGY_GEMM)
		s = HB_STRATEGY_TT;
	switch (s)
	{
		case HB_STRATEGY_PTT:
			return STRAT_PTT;
		case HB_STRATEGY_GEMM:
			return STRAT_GEMM;
		default:
			return STRAT_TT;
	}
}

static void
key_of(HbStatKey *key, const HbCacheEntry *e)
{
	memset(key, 0, sizeof(*key));
	key->dbid = MyDatabaseId;
	key->version = e->version;
	memcpy(key->sha256, e->sha256, HB_SHA256_LEN);
	strlcpy(key->name, e->name, sizeof(key->name));
}

static void
add_counters(HbStatEntry *s, const HbStatLocal *l, int strategy, TimestampTz now)
{
	const HbStatCounters *c = &l->c;

	SpinLockAcquire(&s->mutex);
	s->c.calls += c->calls;
	s->c.rows += c->rows;
	s->c.batch_ms += c->batch_ms;
	s->c.row_calls += c->row_calls;
	s->c.row_timed += c->row_timed;
	s->c.row_ms += c->row_ms;
	s->c.cache_hits += c->cache_hits;
	s->c.cache_misses += c->cache_misses;
	s->c.compile_ms += c->compile_ms;
	s->c.topk_calls += c->topk_calls;
	s->c.topk_rows_pruned += c->topk_rows_pruned;
	s->c.topk_pairs_pruned += c->topk_pairs_pruned;
	if (strategy != STRAT_NONE)
		s->strategy = strategy;
	s->last_used = now;
	SpinLockRelease(&s->mutex);
}

/* Make room for one entry: drop the least recently used.  Exclusive lock. */
static void
evict_one(void)
{
	HASH_SEQ_STATUS seq;
	HbStatEntry *s;
	HbStatEntry *victim = NULL;

	hash_seq_init(&seq, shared_hash);
	while ((s = hash_seq_search(&seq)) != NULL)
		if (victim == NULL || s->last_used < victim->last_used)
			victim = s;
	if (victim)
		hash_search(shared_hash, &victim->key, HASH_REMOVE, NULL);
}

/*
 * Move every pending counter into shared memory.  Runs at statement and
 * transaction end and at exit, so it must not throw: allocation in the
 * shared hash cannot fail once an entry was evicted, and nothing else here
 * allocates.
 */
static void
stat_flush(void)
{
	dlist_mutable_iter it;
	TimestampTz now;
	bool		missing = false;

	if (shared == NULL)
	{
		/* nothing to flush into; keep the list short */
		dlist_foreach_modify(it, &pending)
		{
			HbStatLocal *l = dlist_container(HbStatLocal, node, it.cur);

			local_done(l);
		}
		return;
	}
	now = GetCurrentTimestamp();

	/* existing entries under the shared lock; new ones need it exclusive */
	for (int pass = 0; pass < 2; pass++)
	{
		LWLockAcquire(shared->lock, pass == 0 ? LW_SHARED : LW_EXCLUSIVE);
		dlist_foreach_modify(it, &pending)
		{
			HbStatLocal *l = dlist_container(HbStatLocal, node, it.cur);
			HbStatKey	key;
			HbStatEntry *s;
			bool		found;

			key_of(&key, l->entry);
			s = hash_search(shared_hash, &key, HASH_FIND, NULL);
			if (s == NULL && pass == 1)
			{
				if (hash_get_num_entries(shared_hash) >= hb_stat_max)
					evict_one();
				s = hash_search(shared_hash, &key, HASH_ENTER_NULL, &found);
				if (s && !found)
				{
					SpinLockInit(&s->mutex);
					memset(&s->c, 0, sizeof(s->c));
					s->strategy = STRAT_NONE;
					s->since = now;
				}
			}
			if (s == NULL)
			{
				missing = true;
				continue;
			}
			add_counters(s, l, local_strategy(l), now);
			local_done(l);
		}
		LWLockRelease(shared->lock);
		if (!missing)
			break;
		missing = false;
	}

	/* what found no room (shared memory exhausted) is dropped, not kept */
	dlist_foreach_modify(it, &pending)
	{
		HbStatLocal *l = dlist_container(HbStatLocal, node, it.cur);

		local_done(l);
	}
}

/* ---- SQL ---- */

static void
require_shared(void)
{
	if (shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("hb_stat_models needs hbird to be loaded via shared_preload_libraries"),
				 errhint("Add hbird to shared_preload_libraries in postgresql.conf and restart the server.")));
}

/* May the current user see the statistics of this model? */
static bool
may_see(const char *name, bool all)
{
	HbCatalogRef ref;

	if (all)
		return true;
	if (!hb_catalog_lookup(name, &ref))
		return false;
	return hb_may_score(&ref);
}

/* the columns of hb_stat_models(), in order (sql/hbird--*.sql) */
#define HB_STAT_MODELS_COLS 17

/*
 * Every entry of the current database the user may see.  The view joins
 * the catalog, which hides versions that were dropped since.
 */
Datum
hb_stat_models(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		all = superuser() || has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS);
	HASH_SEQ_STATUS seq;
	HbStatEntry *s;
	HbStatEntry *copy;
	int			n = 0;
	int			cap;

	require_shared();
	stat_flush();
	InitMaterializedSRF(fcinfo, 0);
	if (rsinfo->setDesc->natts != HB_STAT_MODELS_COLS)
		elog(ERROR, "incorrect number of output columns of hb_stat_models");

	/* copy out under the lock; the privilege checks read the catalog */
	LWLockAcquire(shared->lock, LW_SHARED);
	cap = Max(hash_get_num_entries(shared_hash), 1);
	copy = palloc(sizeof(HbStatEntry) * cap);
	hash_seq_init(&seq, shared_hash);
	while ((s = hash_seq_search(&seq)) != NULL)
	{
		if (s->key.dbid != MyDatabaseId || n >= cap)
			continue;
		SpinLockAcquire(&s->mutex);
		copy[n++] = *s;
		SpinLockRelease(&s->mutex);
	}
	LWLockRelease(shared->lock);

	for (int i = 0; i < n; i++)
	{
		HbStatEntry *e = &copy[i];
		HbStatCounters *c = &e->c;
		Datum		values[HB_STAT_MODELS_COLS];
		bool		nulls[HB_STAT_MODELS_COLS] = {0};
		int			col = 0;
		double		total;
		bytea	   *sha;

		if (!may_see(e->key.name, all))
			continue;
		total = c->batch_ms;
		if (c->row_timed > 0)
			total += c->row_ms * ((double) c->row_calls / c->row_timed);

		sha = palloc(VARHDRSZ + HB_SHA256_LEN);
		SET_VARSIZE(sha, VARHDRSZ + HB_SHA256_LEN);
		memcpy(VARDATA(sha), e->key.sha256, HB_SHA256_LEN);

		values[col++] = CStringGetTextDatum(e->key.name);
		values[col++] = Int32GetDatum(e->key.version);
		values[col++] = PointerGetDatum(sha);
		values[col++] = Int64GetDatum(c->calls);
		values[col++] = Int64GetDatum(c->rows);
		values[col++] = Float8GetDatum(total);
		if (c->calls > 0)
			values[col++] = Float8GetDatum(total / c->calls);
		else
			nulls[col++] = true;
		if (e->strategy > STRAT_NONE && e->strategy <= STRAT_LINEAR)
			values[col++] = CStringGetTextDatum(strat_names[e->strategy]);
		else
			nulls[col++] = true;
		values[col++] = Int64GetDatum(c->cache_hits);
		values[col++] = Int64GetDatum(c->cache_misses);
		values[col++] = Float8GetDatum(c->compile_ms);
		values[col++] = Int64GetDatum(c->topk_calls);
		values[col++] = Int64GetDatum(c->topk_rows_pruned);
		values[col++] = Int64GetDatum(c->topk_pairs_pruned);
		values[col++] = TimestampTzGetDatum(e->last_used);
		values[col++] = TimestampTzGetDatum(e->since);
		values[col++] = Int64GetDatum(c->row_timed);
		Assert(col == HB_STAT_MODELS_COLS);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/* Drop the current database's entries (of one model, or all). */
static void
stat_reset(const char *name)
{
	HASH_SEQ_STATUS seq;
	HbStatEntry *s;
	dlist_mutable_iter it;

	require_shared();

	/* this backend's counters gathered so far go too */
	dlist_foreach_modify(it, &pending)
	{
		HbStatLocal *l = dlist_container(HbStatLocal, node, it.cur);

		if (name == NULL || strcmp(l->entry->name, name) == 0)
		{
			local_done(l);
		}
	}

	LWLockAcquire(shared->lock, LW_EXCLUSIVE);
	hash_seq_init(&seq, shared_hash);
	while ((s = hash_seq_search(&seq)) != NULL)
		if (s->key.dbid == MyDatabaseId &&
			(name == NULL || strcmp(s->key.name, name) == 0))
			hash_search(shared_hash, &s->key, HASH_REMOVE, NULL);
	LWLockRelease(shared->lock);
}

Datum
hb_stat_models_reset_all(PG_FUNCTION_ARGS)
{
	stat_reset(NULL);
	PG_RETURN_VOID();
}

Datum
hb_stat_models_reset_name(PG_FUNCTION_ARGS)
{
	char	   *name = text_to_cstring(hb_require_text(fcinfo, 0, "model name"));
	HbCatalogRef ref;

	/* a misspelt name would otherwise reset nothing, silently */
	require_shared();
	if (!hb_catalog_lookup(name, &ref))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name)));
	stat_reset(name);
	PG_RETURN_VOID();
}
