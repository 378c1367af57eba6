/*
 * pg_cache.c
 *	  Per-backend cache of compiled models, and the per-statement binding of
 *	  a model name to one cached version.
 *
 * Entries are keyed by content (name, version, SHA-256 of the bytes and the
 * upload's feature names), so a catalog change never has to invalidate
 * anything: the next statement looks the name up under its own snapshot and
 * lands on a different key.  A statement pins the entry it resolved, which
 * keeps eviction from freeing a plan that is still being scored with.
 *
 * A miss looks in two places before compiling: the blocks a parallel
 * worker's leader wrote for it, and the shared cache of the server
 * (pg_shared_cache.c), both in one layout (SharedEntry, then the plan flat)
 * and read in place.  What this backend compiles goes to the shared cache.
 * An entry read from the shared cache pins its block only while a
 * transaction uses it, and pins it again before the next one does (or
 * finds it gone and looks again).
 */
#include "postgres.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include "access/parallel.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "hbird.h"
#include "device.h"

static MemoryContext cache_cxt = NULL;
static dlist_head cache_lru = DLIST_STATIC_INIT(cache_lru);	/* newest first */
static int	cache_count = 0;

/* Is (name, version, sha256, names_key) the key of ref's version? */
static bool
key_matches(const char *name, int32 version, const uint8 *sha256,
			const char *names_key, const HbCatalogRef *ref)
{
	if (version != ref->version || strcmp(name, ref->name) != 0 ||
		memcmp(sha256, ref->sha256, HB_SHA256_LEN) != 0)
		return false;
	if ((names_key == NULL) != (ref->names_key == NULL))
		return false;
	return names_key == NULL || strcmp(names_key, ref->names_key) == 0;
}

static bool
entry_matches(const HbCacheEntry *e, const HbCatalogRef *ref)
{
	return key_matches(e->name, e->version, e->sha256, e->names_key, ref);
}

/* Out of the cache and freed (its hold on a shared block let go). */
static void
drop_entry(HbCacheEntry *e)
{
	dlist_delete(&e->lru);
	cache_count--;
	hb_device_plan_free(e->plan);	/* GPU memory is not in cxt */
	MemoryContextDelete(e->cxt);
}

/*
 * Drop the oldest unpinned entries beyond hbird.plan_cache_entries, never
 * keep: the entry about to be returned, not pinned yet.  With every other
 * entry pinned by the running statement, the cache grows past the limit;
 * the next look-up after they are unpinned shrinks it.  (Not at unpinning:
 * a caller may hold an entry it looked up and has not pinned yet.)
 */
static void
evict_unpinned(const HbCacheEntry *keep)
{
	dlist_node *cur;

	if (dlist_is_empty(&cache_lru))
		return;
	/* oldest first, skipping entries a running statement still uses */
	cur = dlist_tail_node(&cache_lru);
	while (cur != NULL && cache_count > hb_plan_cache_entries)
	{
		dlist_node *prev = dlist_has_prev(&cache_lru, cur) ?
			dlist_prev_node(&cache_lru, cur) : NULL;
		HbCacheEntry *e = dlist_container(HbCacheEntry, lru, cur);

		if (e->pins == 0 && e != keep)
			drop_entry(e);
		cur = prev;
	}
}

/* An entry for ref's version, keyed as entry_matches reads it, in cxt. */
static HbCacheEntry *
new_entry(const HbCatalogRef *ref, MemoryContext cxt)
{
	HbCacheEntry *e = MemoryContextAllocZero(cxt, sizeof(HbCacheEntry));

	e->cxt = cxt;
	e->name = MemoryContextStrdup(cxt, ref->name);
	e->version = ref->version;
	memcpy(e->sha256, ref->sha256, HB_SHA256_LEN);
	e->names_key = ref->names_key ? MemoryContextStrdup(cxt, ref->names_key) : NULL;
	return e;
}

/*
 * Parse and compile one version; everything lands in a fresh context.
 * quiet: from the stored image only, and NULL where anything would have
 * raised an error (a model with featurizers too, which is not shared), for
 * a caller that must not raise one (pg_scan_share.c); catalog reads and
 * memory still raise theirs.
 */
static HbCacheEntry *
compile_entry(const HbCatalogRef *ref, bool quiet)
{
	MemoryContext work;
	MemoryContext entry_cxt;
	MemoryContext old;
	HbCacheEntry *e;
	HbModel    *m = NULL;
	HbError		err = {0};
	HbFormat	format = HB_FORMAT_AUTO;
	bytea	   *body;
	bytea	   *image;
	size_t		pipeline_at = 0;
	HbPipeline *pipeline = NULL;

	/*
	 * The entry's context starts under a scratch context, so an error
	 * anywhere below frees both; it moves under the cache on success.
	 */
	work = AllocSetContextCreate(CurrentMemoryContext, "hbird compile",
								 ALLOCSET_DEFAULT_SIZES);
	entry_cxt = AllocSetContextCreate(work, "hbird plan",
									  ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(work);

	/*
	 * The compiled image when it is one this build reads, else the bytes.
	 * A pipeline in the image is read into the entry's memory, where it
	 * stays; the rest of m goes with the scratch context.  (Read with m and
	 * then copied, a pipeline was read and checked twice.)
	 */
	image = hb_catalog_bytes(ref->name, ref->version, "image");
	if (image != NULL &&
		hb_model_image_read_split(VARDATA_ANY(image), VARSIZE_ANY_EXHDR(image),
								  &m, &pipeline_at, &err) &&
		pipeline_at != 0 && !quiet)
	{
		MemoryContextSwitchTo(entry_cxt);
		if (!hb_model_image_read_pipeline(VARDATA_ANY(image), VARSIZE_ANY_EXHDR(image),
										  pipeline_at, m->n_features,
										  &pipeline, &err))
			m = NULL;			/* freed with work; the original is read */
		MemoryContextSwitchTo(work);
	}
	if (m == NULL)
	{
		pipeline_at = 0;
		if (quiet)
			goto quit;
		/* a stale or damaged image only costs a parse of the original */
		if (err.code == HB_ERR_NOMEM)
			hb_report(&err, "could not load model", ref->name);
		memset(&err, 0, sizeof(err));
		body = hb_catalog_bytes(ref->name, ref->version, "body");
		if (ref->format)
			(void) hb_format_parse(ref->format, &format);
		if (!hb_model_read(VARDATA_ANY(body), VARSIZE_ANY_EXHDR(body), format,
						   &m, &err))
			hb_report(&err, "could not load model", ref->name);
		if (ref->feature_names)
		{
			Datum	   *elems;
			bool	   *nulls;
			int			n;
			char	  **names;

			deconstruct_array(ref->feature_names, TEXTOID, -1, false, TYPALIGN_INT,
							  &elems, &nulls, &n);
			names = palloc0(sizeof(char *) * (n + 1));
			for (int i = 0; i < n; i++)
				names[i] = nulls[i] ? NULL : TextDatumGetCString(elems[i]);
			if (!hb_model_set_feature_names(m, names, n, &err))
				hb_report(&err, "could not load model", ref->name);
		}
	}
	if (quiet && (m->pipeline != NULL || pipeline_at != 0))
		goto quit;

	MemoryContextSwitchTo(entry_cxt);
	e = new_entry(ref, entry_cxt);
	if (!hb_plan_build(m, &e->plan, &err))
	{
		if (quiet)
			goto quit;
		hb_report(&err, "could not compile model", ref->name);
	}
	e->task = m->task;
	e->n_features = m->n_features;
	e->n_outputs = m->n_outputs;
	e->n_classes = m->n_classes;
	e->pipeline = pipeline;
	if (m->pipeline && !hb_pipeline_copy(m->pipeline, &e->pipeline, &err))
		hb_report(&err, "could not compile model", ref->name);
	/* rebuilt with every plan, never stored in the image */
	if (e->pipeline && !hb_sparse_linear_build(m, e->pipeline, &e->sparse, &err))
		hb_report(&err, "could not compile model", ref->name);
	e->feature_names = palloc(sizeof(char *) * m->n_features);
	e->feature_types = palloc(sizeof(HbFeatureType) * m->n_features);
	for (int i = 0; i < m->n_features; i++)
	{
		e->feature_names[i] = pstrdup(m->features[i].name);
		e->feature_types[i] = m->features[i].type;
	}

	MemoryContextSwitchTo(old);
	MemoryContextSetParent(entry_cxt, old);	/* the cache's once added */
	MemoryContextDelete(work);
	return e;

quit:
	MemoryContextSwitchTo(old);
	MemoryContextDelete(work);
	return NULL;
}

/*
 * Entries shared with parallel workers.  The leader writes an entry it
 * compiled into the query's shared memory (pg_scan_share.c): the key, what
 * binding needs, and the plan flat (plan_flat.c).  A worker is offered the
 * blocks before its first row; a look-up it would compile instead reads
 * the matching block in place, so the worker neither reads the stored
 * image nor builds the layouts again.  Workers end with their query, and
 * the blocks with it.  Models with featurizers are compiled as before.
 */
#define SHARED_MAGIC 0x48425345		/* "HBSE" */

typedef struct SharedEntry
{
	uint32		magic;
	uint64		library[4];		/* the writer's library_id */
	Oid			database;		/* names are a database's own */
	int32		version;
	uint8		sha256[HB_SHA256_LEN];
	int32		task;
	int32		n_features;
	int32		n_outputs;
	int32		n_classes;
	bool		has_names_key;
	uint64		strings_len;	/* name, names_key, feature names, NULs */
	uint64		plan_off;		/* from the start, MAXALIGNed */
	uint64		plan_len;
	/* then int32 feature types, then the strings, then the plan */
} SharedEntry;

/*
 * Which build of hbird this process runs: the library file it loaded
 * (device, inode, size, modification time, taken at load).  A worker
 * started after hbird was installed again loads the new file, whose plan
 * layout may differ under the same struct sizes: it compiles its models
 * itself.  All zero where the file is not known (nothing is shared then).
 */
static uint64 library_id[4];

void
hb_cache_init(void)
{
	Dl_info		info;
	struct stat st;

	if (dladdr((void *) hb_cache_init, &info) != 0 && info.dli_fname != NULL &&
		stat(info.dli_fname, &st) == 0)
	{
		library_id[0] = (uint64) st.st_dev;
		library_id[1] = (uint64) st.st_ino;
		library_id[2] = (uint64) st.st_size;
		library_id[3] = (uint64) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	}
}

static bool
library_known(void)
{
	return (library_id[0] | library_id[1] | library_id[2] | library_id[3]) != 0;
}

typedef struct Offer
{
	const char *base;
	Size		size;
} Offer;

static List *offers = NIL;		/* in TopMemoryContext; workers only */

static uint64
shared_strings_len(const HbCacheEntry *e)
{
	uint64		n = strlen(e->name) + 1;

	if (e->names_key)
		n += strlen(e->names_key) + 1;
	for (int i = 0; i < e->n_features; i++)
		n += strlen(e->feature_names[i]) + 1;
	return n;
}

static uint64
shared_plan_off(const HbCacheEntry *e)
{
	/* the plan's arrays 64-aligned wherever the block is */
	return TYPEALIGN(64, sizeof(SharedEntry) + sizeof(int32) * (uint64) e->n_features +
					 shared_strings_len(e));
}

/*
 * An entry's hold on its block in the shared cache.  It is pinned while a
 * transaction uses the entry: from the look-up that finds the entry until
 * the transaction ends, or until the last statement still holding the
 * entry then lets it go.  In between the entry stays in this backend's
 * cache unpinned, and the next look-up pins the block again, or finds it
 * gone (evicted, its slot perhaps holding another block by then) and
 * drops the entry.  The entry's context holds it: its deletion, on any
 * path, lets go of the pin.
 */
typedef struct HbSharedHold
{
	int			slot;			/* the shared cache's slot + 1 */
	uint64		stamp;			/* the block the entry reads there */
	const char *base;			/* where the block lies, and its size */
	Size		size;
	bool		pinned;			/* pinned in the shared cache now */
	bool		let_go;			/* the transaction ended while in use */
	HbCacheEntry *entry;		/* NULL until made */
	dlist_node	node;			/* in holds */
	MemoryContextCallback cb;
} HbSharedHold;

/* The bytes hb_cache_share_write needs for e; 0 where it is not shared. */
Size
hb_cache_share_size(const HbCacheEntry *e)
{
	size_t		plan_len;

	/* read from the shared cache: that block is the same layout */
	if (e->shared_hold != NULL)
		return e->shared_hold->size;
	if (e->pipeline != NULL || e->sparse != NULL || !library_known())
		return 0;
	plan_len = hb_plan_flat_size(e->plan);
	if (plan_len == 0)
		return 0;
	return shared_plan_off(e) + plan_len;
}

/* s and its NUL at dst; returns what follows */
static char *
put_string(char *dst, const char *s)
{
	size_t		n = strlen(s) + 1;

	memcpy(dst, s, n);
	return dst + n;
}

/* e at dst, in the size bytes hb_cache_share_size gave for it */
void
hb_cache_share_write(const HbCacheEntry *e, Size size, void *dst)
{
	SharedEntry *h = dst;
	int32	   *types = (int32 *) (h + 1);
	char	   *str = (char *) (types + e->n_features);

	if (e->shared_hold != NULL)
	{
		memcpy(dst, e->shared_hold->base, e->shared_hold->size);
		return;
	}
	memset(h, 0, sizeof(*h));
	h->magic = SHARED_MAGIC;
	memcpy(h->library, library_id, sizeof(library_id));
	h->database = MyDatabaseId;
	h->version = e->version;
	memcpy(h->sha256, e->sha256, HB_SHA256_LEN);
	h->task = e->task;
	h->n_features = e->n_features;
	h->n_outputs = e->n_outputs;
	h->n_classes = e->n_classes;
	h->has_names_key = e->names_key != NULL;
	h->strings_len = shared_strings_len(e);
	h->plan_off = shared_plan_off(e);
	h->plan_len = size - h->plan_off;
	for (int i = 0; i < e->n_features; i++)
		types[i] = e->feature_types[i];
	str = put_string(str, e->name);
	if (e->names_key)
		str = put_string(str, e->names_key);
	for (int i = 0; i < e->n_features; i++)
		str = put_string(str, e->feature_names[i]);
	hb_plan_flat_write(e->plan, (char *) dst + h->plan_off);
}

/*
 * A worker is offered a block its leader wrote (size bytes at src, which
 * stays mapped until the worker exits).
 */
void
hb_cache_offer(const void *src, Size size)
{
	MemoryContext old;
	Offer	   *o;

	/* (offered_entry's block_matches checks what the block is) */
	if (!IsParallelWorker())
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	o = palloc(sizeof(Offer));
	o->base = src;
	o->size = size;
	offers = lappend(offers, o);
	MemoryContextSwitchTo(old);
}

/*
 * Is the block at base (size bytes) this build's entry for ref's version?
 * Reads only the block's header and key: an HbSharedMatch, run under the
 * shared cache's lock, so it raises nothing.
 */
static bool
block_matches(const char *base, Size size, const void *arg)
{
	const HbCatalogRef *ref = arg;
	const SharedEntry *h = (const SharedEntry *) base;
	const char *str;
	const char *names_key = NULL;

	if (size < sizeof(SharedEntry) || h->magic != SHARED_MAGIC ||
		memcmp(h->library, library_id, sizeof(library_id)) != 0 ||
		h->database != MyDatabaseId || h->n_features < 0 ||
		sizeof(SharedEntry) + sizeof(int32) * (uint64) h->n_features +
		h->strings_len > h->plan_off || h->plan_off > size ||
		h->plan_len > size - h->plan_off)
		return false;
	str = (const char *) ((const int32 *) (h + 1) + h->n_features);
	if (h->has_names_key)
		names_key = str + strlen(str) + 1;
	return key_matches(str, h->version, h->sha256, names_key, ref);
}

static dlist_head holds = DLIST_STATIC_INIT(holds);

static void
hold_unpin(HbSharedHold *h)
{
	if (h->pinned)
		hb_shared_cache_release(h->slot);
	h->pinned = false;
	h->let_go = false;
}

static void
hold_free(void *arg)
{
	HbSharedHold *h = (HbSharedHold *) arg;

	dlist_delete(&h->node);
	hold_unpin(h);
}

/*
 * At the end of a transaction, its pins go: an idle session keeps no block
 * from being evicted.  An entry a statement still holds (a portal not yet
 * dropped on abort) is let go when that statement unpins it.
 */
static void
holds_xact_callback(XactEvent event, void *arg)
{
	dlist_iter	it;

	if (event != XACT_EVENT_COMMIT && event != XACT_EVENT_ABORT &&
		event != XACT_EVENT_PREPARE && event != XACT_EVENT_PARALLEL_COMMIT &&
		event != XACT_EVENT_PARALLEL_ABORT)
		return;
	dlist_foreach(it, &holds)
	{
		HbSharedHold *h = dlist_container(HbSharedHold, node, it.cur);

		if (h->entry != NULL && h->entry->pins > 0)
			h->let_go = h->pinned;
		else
			hold_unpin(h);
	}
}

/* A new hold on block b, pinned in slot, owned by cxt. */
static HbSharedHold *
hold_new(MemoryContext cxt, int slot, const HbSharedBlock *b)
{
	static bool registered = false;
	HbSharedHold *h;

	if (!registered)
	{
		RegisterXactCallback(holds_xact_callback, NULL);
		registered = true;
	}
	h = MemoryContextAllocZero(cxt, sizeof(HbSharedHold));
	h->slot = slot;
	h->stamp = b->stamp;
	h->base = b->base;
	h->size = b->size;
	h->pinned = true;
	h->cb.func = hold_free;
	h->cb.arg = h;
	dlist_push_head(&holds, &h->node);
	MemoryContextRegisterResetCallback(cxt, &h->cb);
	return h;
}

/*
 * Is e's plan readable in this transaction?  An entry from the shared cache
 * pins its block again where it let it go; false where the block is gone.
 */
static bool
entry_usable(HbCacheEntry *e)
{
	HbSharedHold *h = e->shared_hold;

	if (h == NULL)
		return true;
	h->let_go = false;			/* used in this transaction */
	if (!h->pinned)
		h->pinned = hb_shared_cache_repin(h->slot, h->stamp);
	return h->pinned;
}

/*
 * An entry for ref read in place from a block block_matches accepted, in a
 * context of its own under the caller's (add_entry moves it under the
 * cache's); NULL where the plan is not this build's (the caller compiles as
 * usual).  slot: the shared cache's pin on
 * the block (0 for a parallel worker's offer), which the entry's context
 * holds from the moment *held is set: its deletion, on any path, releases
 * it.
 */
static HbCacheEntry *
entry_from_block(const HbSharedBlock *b, const HbCatalogRef *ref, int slot,
				 volatile bool *held)
{
	const char *base = b->base;
	const SharedEntry *h = (const SharedEntry *) base;
	const int32 *types = (const int32 *) (h + 1);
	const char *str = (const char *) (types + h->n_features);
	MemoryContext entry_cxt;
	MemoryContext old;
	HbCacheEntry *e;
	HbSharedHold *hold = NULL;
	HbPlan	   *plan = NULL;
	HbError		err = {0};

	entry_cxt = AllocSetContextCreate(CurrentMemoryContext, "hbird plan (shared)",
									  ALLOCSET_SMALL_SIZES);
	if (slot != 0)
	{
		hold = hold_new(entry_cxt, slot, b);
		*held = true;
	}
	old = MemoryContextSwitchTo(entry_cxt);
	if (!hb_plan_flat_view(base + h->plan_off, h->plan_len, &plan, &err))
	{
		MemoryContextSwitchTo(old);
		MemoryContextDelete(entry_cxt);
		return NULL;
	}
	e = new_entry(ref, entry_cxt);
	e->plan = plan;
	if (hold != NULL)
	{
		e->shared_hold = hold;
		hold->entry = e;
	}
	e->task = h->task;
	e->n_features = h->n_features;
	e->n_outputs = h->n_outputs;
	e->n_classes = h->n_classes;
	e->feature_names = palloc(sizeof(char *) * Max(h->n_features, 1));
	e->feature_types = palloc(sizeof(HbFeatureType) * Max(h->n_features, 1));
	str += strlen(str) + 1;
	if (h->has_names_key)
		str += strlen(str) + 1;
	for (int i = 0; i < h->n_features; i++)
	{
		e->feature_names[i] = pstrdup(str);
		str += strlen(str) + 1;
		e->feature_types[i] = (HbFeatureType) types[i];
	}
	MemoryContextSwitchTo(old);
	return e;
}

/* The offered entry for ref, read in place, or NULL. */
static HbCacheEntry *
offered_entry(const HbCatalogRef *ref)
{
	ListCell   *lc;

	foreach(lc, offers)
	{
		Offer	   *o = lfirst(lc);
		HbSharedBlock b = {o->base, o->size, 0};
		HbCacheEntry *e;

		if (!block_matches(o->base, o->size, ref))
			continue;
		e = entry_from_block(&b, ref, 0, NULL);
		if (e != NULL)
			return e;
	}
	return NULL;
}

/*
 * The shared cache (pg_shared_cache.c) holds blocks of the same layout in
 * the server's shared memory, keyed by this hash.
 */
static uint64
shared_hash(const HbCatalogRef *ref)
{
	uint64		h = hash_bytes_extended((const unsigned char *) ref->name,
										strlen(ref->name), MyDatabaseId);

	h = hash_bytes_extended(ref->sha256, HB_SHA256_LEN, h ^ (uint64) ref->version);
	if (ref->names_key)
		h = hash_bytes_extended((const unsigned char *) ref->names_key,
								strlen(ref->names_key), h);
	return h;
}

/*
 * The entry for ref in the pinned block at base, or NULL (the pin released
 * then); an error releases the pin too.
 */
static HbCacheEntry *
entry_pinned(const HbSharedBlock *b, const HbCatalogRef *ref, int slot)
{
	volatile bool held = false;
	HbCacheEntry *e = NULL;

	PG_TRY();
	{
		e = entry_from_block(b, ref, slot, &held);
	}
	PG_CATCH();
	{
		if (!held)
			hb_shared_cache_release(slot);
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (e == NULL && !held)
		hb_shared_cache_release(slot);
	return e;
}

/* ref's version from the shared cache, read in place, or NULL. */
static HbCacheEntry *
shared_entry(const HbCatalogRef *ref)
{
	HbSharedBlock b;
	int			slot;
	HbCacheEntry *e;

	if (!hb_shared_cache_on() || !library_known())
		return NULL;
	slot = hb_shared_cache_find(shared_hash(ref), block_matches, ref, &b);
	if (slot == 0)
		return NULL;
	e = entry_pinned(&b, ref, slot);
	if (e != NULL)
		hb_shared_cache_malloc_like_compiled();
	return e;
}

typedef struct ShareWrite
{
	const HbCacheEntry *e;
	Size		size;
} ShareWrite;

static void
write_shared(void *dst, const void *arg)
{
	const ShareWrite *w = arg;

	hb_cache_share_write(w->e, w->size, dst);
}

/*
 * A version this backend compiled goes to the shared cache, and the
 * backend reads it there too, its own copy freed; e itself where the cache
 * is off or has no room for it.  Where another backend stored the same
 * version meanwhile, that block is read and nothing is written.
 */
static HbCacheEntry *
share_compiled(HbCacheEntry *e, const HbCatalogRef *ref)
{
	HbSharedBlock b;
	ShareWrite	w;
	int			slot;
	HbCacheEntry *s;

	w.e = e;
	if (!hb_shared_cache_on() || (w.size = hb_cache_share_size(e)) == 0)
		return e;
	slot = hb_shared_cache_put(shared_hash(ref), w.size, block_matches, ref,
							   write_shared, &w, &b);
	if (slot == 0)
		return e;
	/* (an error frees e with the caller's context: not in the cache yet) */
	s = entry_pinned(&b, ref, slot);
	if (s == NULL)
		return e;
	hb_device_plan_free(e->plan);
	MemoryContextDelete(e->cxt);
	return s;
}

/*
 * The cached entry for ref's version, readable in this transaction, or NULL
 * (the cache made on first use).  An entry whose shared block is gone
 * leaves the cache.
 */
static HbCacheEntry *
cached_entry(const HbCatalogRef *ref)
{
	dlist_iter	it;

	if (cache_cxt == NULL)
		cache_cxt = AllocSetContextCreate(TopMemoryContext, "hbird plan cache",
										  ALLOCSET_SMALL_SIZES);
	dlist_foreach(it, &cache_lru)
	{
		HbCacheEntry *e = dlist_container(HbCacheEntry, lru, it.cur);

		if (!entry_matches(e, ref))
			continue;
		if (entry_usable(e))
			return e;
		/* (unpinned: a statement holding it would hold its block too) */
		Assert(e->pins == 0);
		drop_entry(e);
		return NULL;
	}
	return NULL;
}

/*
 * A new entry joins the cache, newest first; the oldest unpinned may go.
 * Until then its context is under the caller's, so that an error on the
 * way frees it (and lets go of its shared block).
 */
static void
add_entry(HbCacheEntry *e)
{
	MemoryContextSetParent(e->cxt, cache_cxt);
	dlist_push_head(&cache_lru, &e->lru);
	cache_count++;
	evict_unpinned(e);
}

/* The compiled plan of a catalog version, from the cache or built now. */
HbCacheEntry *
hb_cache_acquire(const HbCatalogRef *ref)
{
	HbCacheEntry *e = cached_entry(ref);
	instr_time	start;			/* hb_stat_models: compile time */

	if (e != NULL)
	{
		dlist_move_head(&cache_lru, &e->lru);
		hb_stat_cache(e, NULL);
		/* back to the limit once a statement that outgrew it is over */
		if (cache_count > hb_plan_cache_entries)
			evict_unpinned(e);
		return e;
	}

	/*
	 * A parallel worker reads what its leader compiled, where it can; any
	 * backend what another compiled into the shared cache.
	 */
	e = offers != NIL ? offered_entry(ref) : NULL;
	if (e == NULL)
		e = shared_entry(ref);
	if (e != NULL)
	{
		add_entry(e);			/* first: from here the cache frees it */
		hb_stat_cache(e, NULL);
	}
	else
	{
		INSTR_TIME_SET_CURRENT(start);
		e = share_compiled(compile_entry(ref, false), ref);
		add_entry(e);
		hb_stat_cache(e, &start);
	}
	return e;
}

/*
 * The compiled plan of a catalog version, for a caller that must not raise
 * an error where scoring would (pg_scan_share.c, before any row): the
 * cached entry, else compiled from the stored image, else NULL.  Not a
 * use of the model: no hit is counted (a compilation is).
 */
HbCacheEntry *
hb_cache_acquire_quietly(const HbCatalogRef *ref)
{
	HbCacheEntry *e = cached_entry(ref);
	instr_time	start;

	if (e != NULL)
		return e;
	e = shared_entry(ref);
	if (e != NULL)
	{
		add_entry(e);
		return e;
	}
	INSTR_TIME_SET_CURRENT(start);
	e = compile_entry(ref, true);
	if (e == NULL)
		return NULL;
	e = share_compiled(e, ref);
	add_entry(e);
	hb_stat_cache(e, &start);
	return e;
}

void
hb_cache_pin(HbCacheEntry *e)
{
	e->pins++;
}

void
hb_cache_unpin(HbCacheEntry *e)
{
	Assert(e->pins > 0);
	e->pins--;
	/* the last statement of an ended transaction lets go of the block */
	if (e->pins == 0 && e->shared_hold != NULL && e->shared_hold->let_go)
		hold_unpin(e->shared_hold);
}

/*
 * The active version of a model, compiled: what a statement scores with.
 * The caller pins the entry for as long as it keeps it.
 */
HbCacheEntry *
hb_resolve_model(const char *name)
{
	HbCatalogRef ref;

	if (!hb_catalog_lookup(name, &ref))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("model \"%s\" does not exist", name)));
	hb_check_score_privilege(&ref);
	return hb_cache_acquire(&ref);
}

/*
 * The model named by argument argno of a call, pinned for as long as the
 * call's FmgrInfo lives (the statement).
 */
HbCacheEntry *
hb_resolve_model_arg(FunctionCallInfo fcinfo, int argno)
{
	char	   *name = text_to_cstring(hb_require_text(fcinfo, argno, "model name"));
	HbCacheEntry *e = hb_resolve_model(name);

	hb_cache_pin_for(e, fcinfo->flinfo->fn_mcxt);
	return e;
}

/* Two entries for the same model version (one may be a recompiled copy). */
bool
hb_cache_same(const HbCacheEntry *a, const HbCacheEntry *b)
{
	return a == b ||
		(a->version == b->version && strcmp(a->name, b->name) == 0 &&
		 memcmp(a->sha256, b->sha256, HB_SHA256_LEN) == 0);
}

static void
unpin_callback(void *arg)
{
	hb_cache_unpin((HbCacheEntry *) arg);
}

/* Pin e until cxt is reset or deleted. */
void
hb_cache_pin_for(HbCacheEntry *e, MemoryContext cxt)
{
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	cb->func = unpin_callback;
	cb->arg = e;
	hb_cache_pin(e);
	MemoryContextRegisterResetCallback(cxt, cb);
}
