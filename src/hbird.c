/*
 * hbird.c
 *	  Module entry: GUCs, the core's allocator and interrupt hooks, and the
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
#include "pg_scaleout.h"

PG_MODULE_MAGIC;

int			hb_max_model_bytes = 256 * 1024 * 1024;
static int	hb_tree_strategy = HB_STRATEGY_AUTO;

static const struct config_enum_entry strategy_options[] = {
	{"auto", HB_STRATEGY_AUTO, false},
	{"tt", HB_STRATEGY_TT, false},
	{"ptt", HB_STRATEGY_PTT, false},
	{"gemm", HB_STRATEGY_GEMM, false},
	{NULL, 0, false}
};

static void
assign_tree_strategy(int newval, void *extra)
{
	hb_set_strategy_override((HbStrategy) newval);
}
int			hb_plan_cache_entries = 32;

/* GPU execution (device.h, docs/gpu.md) */
static int	hb_device_setting = HB_DEVICE_AUTO;
static int	hb_gpu_min_batch = HB_DEVICE_DEFAULT_MIN_BATCH;
static int	hb_gpu_memory_mb = (int) (HB_DEVICE_DEFAULT_BUDGET >> 20);

static const struct config_enum_entry device_options[] = {
	{"auto", HB_DEVICE_AUTO, false},
	{"cpu", HB_DEVICE_CPU, false},
	{"gpu", HB_DEVICE_GPU, false},
	{NULL, 0, false}
};

static void
assign_device(int newval, void *extra)
{
	hb_device_set_mode((HbDeviceMode) newval);
}

static void
assign_gpu_min_batch(int newval, void *extra)
{
	hb_device_set_min_batch(newval);
}

static void
assign_gpu_memory(int newval, void *extra)
{
	hb_device_set_budget((size_t) newval << 20);
}

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
	 * start a thread per core in each of them.  Parallel query is how a
	 * statement uses more cores.
	 */
	openblas_set_num_threads(1);

	DefineCustomIntVariable("hbird.max_model_bytes",
							"Largest model file hb_model_upload accepts.",
							NULL,
							&hb_max_model_bytes,
							256 * 1024 * 1024,
							1024,
							1024 * 1024 * 1024 - 1,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("hbird.plan_cache_entries",
							"Compiled model versions each backend keeps.",
							"Least recently used plans beyond this are freed.",
							&hb_plan_cache_entries,
							32,
							1,
							10000,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("hbird.tree_strategy",
							 "How tree ensembles are executed.",
							 "auto picks per batch from depth, tree fullness and batch size; "
							 "tt, ptt and gemm force one (models a strategy cannot run fall back to tt).",
							 &hb_tree_strategy,
							 HB_STRATEGY_AUTO,
							 strategy_options,
							 PGC_USERSET,
							 0,
							 NULL, assign_tree_strategy, NULL);

	DefineCustomIntVariable("hbird.batch_memory",
							"Memory for one batch of rows in batched scoring.",
							"Batch sizes adapt so that inputs and outputs of a batch fit.",
							&hb_batch_memory_kb,
							64 * 1024,
							64,
							1024 * 1024,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	hb_stat_init();
	hb_owner_init();

	DefineCustomBoolVariable("hbird.batch_scan",
							 "Scores plain SQL calls in batches.",
							 "When on, the planner puts an HbirdScore node where hb_predict and the "
							 "other scoring functions are evaluated for many rows, so that they "
							 "score in batches (and ORDER BY a score LIMIT k prunes); off keeps "
							 "the row-at-a-time plans.  The answers are the same.",
							 &hb_batch_scan,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	hb_scan_init();
	hb_pushdown_define_gucs();
	DefineCustomBoolVariable("hbird.early_exit",
							 "Stops scoring a row once its class is settled.",
							 "Class predictions of tree classifiers skip the remaining trees "
							 "when no leaves of theirs could change the class; the answer is the same either way.",
							 &hb_early_exit,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	hb_tune_define_gucs();
	/*
	 * The device is probed at the first batch that could use it, in the
	 * backend: CUDA must never be initialised in the postmaster, whose
	 * children it would not survive.
	 */
	DefineCustomEnumVariable("hbird.device",
							 "Where batched scoring runs.",
							 "auto: on a CUDA GPU when one is usable and the batch has at least "
							 "hbird.gpu_min_batch rows, else on the CPU; cpu: always the CPU; "
							 "gpu: batches on the GPU, an error when there is none.  "
							 "Single rows always run on the CPU.",
							 &hb_device_setting,
							 HB_DEVICE_AUTO,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, assign_device, NULL);

	DefineCustomIntVariable("hbird.gpu_min_batch",
							"Smallest batch that hbird.device = auto sends to the GPU.",
							NULL,
							&hb_gpu_min_batch,
							HB_DEVICE_DEFAULT_MIN_BATCH,
							2,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL, assign_gpu_min_batch, NULL);

	DefineCustomIntVariable("hbird.gpu_memory",
							"GPU memory each backend may hold for compiled models.",
							"Least recently used models leave the GPU beyond this.",
							&hb_gpu_memory_mb,
							(int) (HB_DEVICE_DEFAULT_BUDGET >> 20),
							1,
							1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_MB,
							NULL, assign_gpu_memory, NULL);

	MarkGUCPrefixReserved("hbird");
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
