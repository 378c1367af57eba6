/*
 * pg_shared_cache.c
 *	  Compiled models kept in the server's shared memory, across backends.
 *
 * Every backend used to build each model it scored with from the compiled
 * image in the catalog: read several MB, build the layouts, touch all their
 * new pages (43-55 ms for the anchor model in a fresh connection), and keep
 * its own copy for as long as it lived.  With hbird in
 * shared_preload_libraries, hbird.shared_cache_size of the server's main
 * shared memory (not /dev/shm) holds compiled models written flat
 * (plan_flat.c): the first backend to compile a version writes it here, and
 * every other one, parallel workers included, reads it in place.
 *
 * This file keeps the blocks and knows nothing of what is in them: a block
 * is found by a 64-bit hash and a match function of the caller's
 * (pg_cache.c: name, version, content, database), written by the caller's
 * write function, and pinned by each backend that reads it while its
 * transaction uses it.  A pinned block never moves or goes; the least
 * recently used unpinned ones make room for a new one (only where that
 * makes room), and a block that does not fit even then is not stored (its
 * backend keeps its own copy, as without the cache).
 *
 * A backend keeps its entry for a block between transactions without a
 * pin (an idle session of a pool must not keep blocks from being evicted),
 * and pins it again before its next use: hb_shared_cache_repin succeeds
 * only where the slot still holds the block it had, which the slot's stamp
 * (given at each store, never reused) tells.  A backend pins at most
 * MAX_BACKEND_PINS blocks at once, and lets go of its pins when it exits.
 * Blocks start 64-aligned, as plan_flat.c's arrays do within them.
 *
 * Pins and the clock of last uses are atomic: a pin taken under the lock
 * held shared cannot race an eviction (which holds it exclusive), and a
 * release needs no lock (at worst an eviction just missed a block freed
 * meanwhile).
 *
 * Nothing here raises an error while the lock is held: a block is written
 * outside it, in a slot marked as being written by this process, and
 * marked ready after; a process that exits in between frees its slot (an
 * exit on a signal restarts the whole server, shared memory included).
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"

#include "hbird.h"

#define MAX_SLOTS 1024			/* blocks at most, whatever their sizes */
#define MAX_BACKEND_PINS 32		/* blocks one backend may pin at once */
#define BLOCK_ALIGN 64			/* plan_flat.c aligns arrays to 64 bytes */

typedef enum SlotState
{
	SLOT_FREE = 0,
	SLOT_WRITING,
	SLOT_READY
} SlotState;

typedef struct Slot
{
	SlotState	state;
	pg_atomic_uint32 pins;		/* backends' transactions reading it */
	int			writer;			/* pid, while SLOT_WRITING */
	uint64		hash;
	uint64		stamp;			/* which block: one number per store */
	pg_atomic_uint64 last_used; /* the store's clock at the last use */
	Size		off;			/* in the arena */
	Size		size;
} Slot;

typedef struct Store
{
	LWLock	   *lock;
	Size		arena_size;
	pg_atomic_uint64 clock;
	uint64		stamps;			/* stamps given so far */
	/* counters since the server started, for hb_stat_shared_cache */
	uint64		hits;
	uint64		stored;
	uint64		evicted;
	uint64		not_stored;
	Slot		slots[MAX_SLOTS];
} Store;

static Store *store = NULL;
static char *arena = NULL;

/* this backend's pins per slot, released at exit */
static int32 my_pins[MAX_SLOTS];
static int	my_pin_count = 0;	/* their sum */
static bool exit_registered = false;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static Size
arena_bytes(void)
{
	return mul_size((Size) hb_shared_cache_size, 1024);
}

static Size
store_shmem_size(void)
{
	return add_size(TYPEALIGN(BLOCK_ALIGN, sizeof(Store)) + BLOCK_ALIGN, arena_bytes());
}

static void
store_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(store_shmem_size());
	RequestNamedLWLockTranche("hbird_shared_cache", 1);
}

static void
store_shmem_startup(void)
{
	bool		found;
	char	   *base;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	base = ShmemInitStruct("hbird shared cache", store_shmem_size(), &found);
	store = (Store *) base;
	arena = (char *) TYPEALIGN(BLOCK_ALIGN, base + sizeof(Store));
	if (!found)
	{
		memset(store, 0, sizeof(Store));
		store->lock = &(GetNamedLWLockTranche("hbird_shared_cache"))->lock;
		store->arena_size = arena_bytes();
		pg_atomic_init_u64(&store->clock, 0);
		for (int i = 0; i < MAX_SLOTS; i++)
		{
			pg_atomic_init_u32(&store->slots[i].pins, 0);
			pg_atomic_init_u64(&store->slots[i].last_used, 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* The shared memory, when loaded by shared_preload_libraries with a size. */
void
hb_shared_cache_init(void)
{
	if (!process_shared_preload_libraries_in_progress || hb_shared_cache_size == 0)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = store_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = store_shmem_startup;
}

/*
 * Called once a backend scores with a model it did not compile.  glibc
 * hands blocks above M_MMAP_THRESHOLD out as mappings of their own and
 * gives freed memory above M_TRIM_THRESHOLD back to the kernel, and raises
 * both (to at most 32 and 64 MB) when a large mapped block is freed.  A
 * backend that compiles a model frees such blocks, and its batches' buffers
 * (about 28 MB for 65,536 rows of 28 features) then stay in its heap from
 * one query to the next.  A backend that only reads the shared cache never
 * raised them: it handed those buffers back at the end of every query and
 * faulted them in again (7,206 page faults a query against 621, 470 ms
 * against 385 ms over 200,000 rows of the anchor model, on a machine where
 * a fault costs about 11 us: bench/shared_cache.sh).  Set them to the
 * ceilings glibc's own adjustment reaches, where compiling a large model
 * leaves them: such a backend, like one that compiled, keeps up to 64 MB of
 * freed memory in its heap.
 */
void
hb_shared_cache_malloc_like_compiled(void)
{
#if defined(__GLIBC__) && SIZEOF_SIZE_T == 8
	static bool done = false;

	if (done)
		return;
	done = true;
	/* an administrator's own settings stay (glibc reads them at start) */
	if (getenv("MALLOC_MMAP_THRESHOLD_") != NULL || getenv("MALLOC_TRIM_THRESHOLD_") != NULL ||
		getenv("GLIBC_TUNABLES") != NULL)
		return;
	/* glibc's own ceilings for the two on 64-bit builds */
	(void) mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
	(void) mallopt(M_TRIM_THRESHOLD, 64 * 1024 * 1024);
#endif
}

/* Does this session read and write the shared cache? */
bool
hb_shared_cache_on(void)
{
	return store != NULL && hb_shared_cache;
}

/* Let go of every pin and unfinished block of this process. */
static void
store_exit(int code, Datum arg)
{
	/* (never held here: nothing under it raises an error; but never wait on it twice) */
	if (LWLockHeldByMe(store->lock))
		LWLockRelease(store->lock);
	LWLockAcquire(store->lock, LW_EXCLUSIVE);
	for (int i = 0; i < MAX_SLOTS; i++)
	{
		Slot	   *s = &store->slots[i];

		if (my_pins[i] > 0)
		{
			Assert(pg_atomic_read_u32(&s->pins) >= (uint32) my_pins[i]);
			pg_atomic_fetch_sub_u32(&s->pins, my_pins[i]);
			my_pin_count -= my_pins[i];
			my_pins[i] = 0;
		}
		if (s->state == SLOT_WRITING && s->writer == MyProcPid)
			s->state = SLOT_FREE;
	}
	LWLockRelease(store->lock);
}

/*
 * May this backend pin one more block?  Registers the exit callback first,
 * outside the lock (it raises FATAL when the list of callbacks is full).
 * The cap keeps one backend, whose transaction may score with many models,
 * from pinning every block; beyond it, it compiles for itself.
 */
static bool
may_pin(void)
{
	if (!exit_registered)
	{
		before_shmem_exit(store_exit, (Datum) 0);
		exit_registered = true;
	}
	return my_pin_count < MAX_BACKEND_PINS;
}

/* Under the lock, shared or exclusive: slot i pinned and used now. */
static void
pin(int i)
{
	Slot	   *s = &store->slots[i];

	pg_atomic_fetch_add_u32(&s->pins, 1);
	my_pins[i]++;
	my_pin_count++;
	pg_atomic_write_u64(&s->last_used, pg_atomic_add_fetch_u64(&store->clock, 1));
}

/*
 * Under the lock: the slot of the block with this hash that match accepts,
 * or -1; with writing, a block being written with this hash counts too
 * (unread: match reads ready blocks only).  match must raise nothing.
 */
static int
lookup_locked(uint64 hash, HbSharedMatch match, const void *arg, bool writing)
{
	for (int i = 0; i < MAX_SLOTS; i++)
	{
		const Slot *s = &store->slots[i];

		if (s->hash != hash)
			continue;
		if ((s->state == SLOT_READY && match(arena + s->off, s->size, arg)) ||
			(writing && s->state == SLOT_WRITING))
			return i;
	}
	return -1;
}

/* Under the lock: ready slot i pinned and used now; its slot + 1. */
static int
take_locked(int i, HbSharedBlock *found)
{
	Slot	   *s = &store->slots[i];

	pin(i);
	found->base = arena + s->off;
	found->size = s->size;
	found->stamp = s->stamp;
	return i + 1;
}

/*
 * The ready block with this hash that match accepts, pinned: its slot + 1,
 * or 0.  match reads the block under the lock; it must raise nothing.
 */
int
hb_shared_cache_find(uint64 hash, HbSharedMatch match, const void *arg,
					 HbSharedBlock *block)
{
	int			found = 0;
	int			i;

	if (!may_pin())
		return 0;
	LWLockAcquire(store->lock, LW_EXCLUSIVE);
	i = lookup_locked(hash, match, arg, false);
	if (i >= 0)
	{
		found = take_locked(i, block);
		store->hits++;
	}
	LWLockRelease(store->lock);
	return found;
}

/*
 * Pin slot again for a backend entry that read the block stamped stamp
 * there and let it go: true where the slot still holds that block.
 */
bool
hb_shared_cache_repin(int slot, uint64 stamp)
{
	int			i = slot - 1;
	bool		held;

	if (i < 0 || i >= MAX_SLOTS || !may_pin())
		return false;
	/* shared: an eviction, which holds it exclusive, cannot come between */
	LWLockAcquire(store->lock, LW_SHARED);
	held = store->slots[i].state == SLOT_READY && store->slots[i].stamp == stamp;
	if (held)
		pin(i);
	LWLockRelease(store->lock);
	return held;
}

void
hb_shared_cache_release(int slot)
{
	int			i = slot - 1;

	/* (after store_exit, nothing is held any more) */
	if (i < 0 || i >= MAX_SLOTS || my_pins[i] == 0)
		return;
	my_pins[i]--;
	my_pin_count--;
	pg_atomic_fetch_sub_u32(&store->slots[i].pins, 1);
}

static int
cmp_slot_off(const void *a, const void *b)
{
	const Slot *x = *(const Slot *const *) a;
	const Slot *y = *(const Slot *const *) b;

	return x->off < y->off ? -1 : x->off > y->off;
}

/* the bytes a block takes in the arena: the next one starts 64-aligned */
static Size
block_room(const Slot *s)
{
	return TYPEALIGN(BLOCK_ALIGN, s->size);
}

/*
 * The lowest offset where size bytes (a multiple of BLOCK_ALIGN) fit
 * between the blocks held, or -1; with only_kept, as if every block that
 * can be evicted (ready and unpinned) were gone.
 */
static int64
find_gap(Size size, bool only_kept)
{
	static const Slot *used[MAX_SLOTS];	/* (too big for the stack) */
	int			n = 0;
	Size		end = 0;

	for (int i = 0; i < MAX_SLOTS; i++)
	{
		Slot	   *s = &store->slots[i];

		if (s->state == SLOT_FREE ||
			(only_kept && s->state == SLOT_READY && pg_atomic_read_u32(&s->pins) == 0))
			continue;
		used[n++] = s;
	}
	qsort(used, n, sizeof(Slot *), cmp_slot_off);
	for (int i = 0; i < n; i++)
	{
		if (used[i]->off - end >= size)
			return (int64) end;
		end = used[i]->off + block_room(used[i]);
	}
	return store->arena_size - end >= size ? (int64) end : -1;
}

/* Free the least recently used unpinned ready block; false if none. */
static bool
evict_one(void)
{
	Slot	   *victim = NULL;

	for (int i = 0; i < MAX_SLOTS; i++)
	{
		Slot	   *s = &store->slots[i];

		if (s->state == SLOT_READY && pg_atomic_read_u32(&s->pins) == 0 &&
			(victim == NULL ||
			 pg_atomic_read_u64(&s->last_used) < pg_atomic_read_u64(&victim->last_used)))
			victim = s;
	}
	if (victim == NULL)
		return false;
	victim->state = SLOT_FREE;
	store->evicted++;
	return true;
}

/*
 * Store a block of size bytes, written by write_block(dst, write_arg)
 * outside the lock: its slot + 1, pinned, with *block where it lies.  A
 * ready block that match(block, size, match_arg) accepts is returned,
 * pinned, instead of writing a second copy.  0 where nothing was stored: no
 * room beside the pinned blocks, the same block being written by another
 * backend, or this backend at its cap of pins.
 */
int
hb_shared_cache_put(uint64 hash, Size size, HbSharedMatch match,
					const void *match_arg, HbSharedWrite write_block,
					const void *write_arg, HbSharedBlock *block)
{
	Size		need = TYPEALIGN(BLOCK_ALIGN, size);
	int64		off = -1;
	int			free_slot = -1;
	int			same;
	Slot	   *s;

	if (!may_pin())
		return 0;
	LWLockAcquire(store->lock, LW_EXCLUSIVE);
	same = lookup_locked(hash, match, match_arg, true);
	if (same >= 0)
	{
		int			found = 0;

		if (store->slots[same].state == SLOT_READY)
			found = take_locked(same, block);
		LWLockRelease(store->lock);
		return found;
	}
	/*
	 * Evict only where that makes room: not where the pinned blocks leave no
	 * gap of this size, or no slot, whatever goes.
	 */
	if (need <= store->arena_size && find_gap(need, true) >= 0)
	{
		for (;;)
		{
			free_slot = -1;
			for (int i = 0; i < MAX_SLOTS && free_slot < 0; i++)
				if (store->slots[i].state == SLOT_FREE)
					free_slot = i;
			off = free_slot >= 0 ? find_gap(need, false) : -1;
			if (off >= 0 || !evict_one())
				break;
		}
	}
	if (off < 0)
	{
		store->not_stored++;
		LWLockRelease(store->lock);
		return 0;
	}
	s = &store->slots[free_slot];
	s->state = SLOT_WRITING;
	s->writer = MyProcPid;
	s->hash = hash;
	s->off = (Size) off;
	s->size = size;
	s->stamp = ++store->stamps;
	pin(free_slot);
	LWLockRelease(store->lock);

	write_block(arena + off, write_arg);

	LWLockAcquire(store->lock, LW_EXCLUSIVE);
	s->state = SLOT_READY;
	store->stored++;
	LWLockRelease(store->lock);
	block->base = arena + off;
	block->size = size;
	block->stamp = s->stamp;
	return free_slot + 1;
}

/*
 * hb_stat_shared_cache(): the cache's size, what it holds and its counters
 * since the server started; zeros where there is no shared cache (no
 * preload, or hbird.shared_cache_size = 0).
 */
PG_FUNCTION_INFO_V1(hb_stat_shared_cache);
Datum
hb_stat_shared_cache(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[8] = {0};
	bool		nulls[8] = {0};
	int64		used = 0;
	int32		entries = 0;
	int32		pinned = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	for (int i = 0; i < 8; i++)
		values[i] = (i == 2 || i == 3) ? Int32GetDatum(0) : Int64GetDatum(0);
	if (store != NULL)
	{
		LWLockAcquire(store->lock, LW_SHARED);
		for (int i = 0; i < MAX_SLOTS; i++)
		{
			Slot	   *s = &store->slots[i];

			if (s->state == SLOT_FREE)
				continue;
			used += block_room(s);
			if (s->state == SLOT_READY)
				entries++;
			if (pg_atomic_read_u32(&s->pins) > 0)
				pinned++;
		}
		values[0] = Int64GetDatum((int64) store->arena_size);
		values[1] = Int64GetDatum(used);
		values[2] = Int32GetDatum(entries);
		values[3] = Int32GetDatum(pinned);
		values[4] = Int64GetDatum((int64) store->hits);
		values[5] = Int64GetDatum((int64) store->stored);
		values[6] = Int64GetDatum((int64) store->evicted);
		values[7] = Int64GetDatum((int64) store->not_stored);
		LWLockRelease(store->lock);
	}
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc),
													  values, nulls)));
}
