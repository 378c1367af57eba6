/*
 * hbird.c
 *	  Module entry: the core's allocator and interrupt hooks, the hooks
 *	  every component installs (the settings are in pg_guc.c), and the
 *	  mapping of core errors onto PostgreSQL errors.
 */
#include "postgres.h"

#include <cblas.h>

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "hbird.h"
#include "device.h"
#include "pg_scan.h"

/*
 * OpenBLAS (pthreads builds) stops its worker threads with this; absent
 * from other BLAS libraries and OpenBLAS builds, hence weak.
 */
extern int	blas_thread_shutdown_(void) __attribute__((weak));

PG_MODULE_MAGIC;

/*
 * Mode gpu and a batch that cannot run there.  The device code has
 * released what it held before calling this.
 */
static void
hb_pg_device_error(const HbError *err)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("hbird.device is gpu, but %s", err->msg),
			 errhint("SET hbird.device = auto runs batches on the CPU when no GPU can take them.")));
}

void		_PG_init(void);

/*
 * The core allocates in whatever context the glue made current, so a plan
 * built for the cache lands in the cache's context and scratch work in a
 * short-lived one.  Allocation failures come back as NULL (the core reports
 * them) rather than as a longjmp through core code.
 */
static void *
hb_pg_alloc(size_t size)
{
	return MemoryContextAllocExtended(CurrentMemoryContext, size ? size : 1,
									  MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
}

static void *
hb_pg_realloc(void *ptr, size_t size)
{
	return repalloc_huge(ptr, size ? size : 1);
}

static void *
hb_pg_alloc_must(size_t size)
{
	return MemoryContextAllocHuge(CurrentMemoryContext, size ? size : 1);
}

static void
hb_pg_free(void *ptr)
{
	pfree(ptr);
}

static void
hb_pg_interrupts(void)
{
	CHECK_FOR_INTERRUPTS();
}

void
_PG_init(void)
{
	static const HbAllocator pg_allocator = {hb_pg_alloc, hb_pg_realloc, hb_pg_free,
	hb_pg_alloc_must};

	hb_set_allocator(&pg_allocator);
	hb_interrupt_hook = hb_pg_interrupts;
	hb_device_error_hook = hb_pg_device_error;

	/*
	 * A backend is one of many processes on the machine: OpenBLAS must not
	 * use a thread per core in each of them.  Parallel query is how a
	 * statement uses more cores.  Setting one thread is not enough: loading
	 * OpenBLAS already started a worker thread for every other core, and
	 * each spins for a while before it sleeps (about 120 ms of CPU each in
	 * a backend that loads hbird without shared_preload_libraries).  Stop
	 * them; with one thread OpenBLAS never starts them again.  (With the
	 * preload, OpenBLAS stops them itself before the postmaster forks.)
	 */
	openblas_set_num_threads(1);
	if (blas_thread_shutdown_)
		blas_thread_shutdown_();

	hb_define_gucs();
	hb_stat_init();
	hb_cache_init();
	hb_shared_cache_init();
	hb_owner_init();
	hb_scan_init();
	hb_stream_init();
}

int
hb_errcode(HbErrCode code)
{
	switch (code)
	{
		case HB_ERR_PARSE:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
		case HB_ERR_INVALID:
		case HB_ERR_ARGUMENT:
			return ERRCODE_INVALID_PARAMETER_VALUE;
		case HB_ERR_UNSUPPORTED:
			return ERRCODE_FEATURE_NOT_SUPPORTED;
		case HB_ERR_LIMIT:
			return ERRCODE_PROGRAM_LIMIT_EXCEEDED;
		case HB_ERR_NOMEM:
			return ERRCODE_OUT_OF_MEMORY;
		case HB_ERR_DEVICE:
			return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
		case HB_OK:
			break;
	}
	return ERRCODE_INTERNAL_ERROR;
}

/* Raise a core error as "<what> "<name>": <message>". */
void
hb_report(const HbError *err, const char *what, const char *name)
{
	ereport(ERROR,
			(errcode(hb_errcode(err->code)),
			 errmsg("%s \"%s\": %s", what, name, err->msg),
			 err->detail[0] ? errdetail("%s", err->detail) : 0));
}

/* Arguments that may not be NULL: a clear error instead of a silent NULL. */
text *
hb_require_text(FunctionCallInfo fcinfo, int argno, const char *what)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be null", what)));
	return PG_GETARG_TEXT_PP(argno);
}
