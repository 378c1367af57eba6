/*
 * pg_guc.c
 *	  Every hbird.* setting: its variable, its default (written once, here)
 *	  and its definition, in one block that _PG_init runs first.
 *
 * The settings are read where they act (hbird.h and pg_scan.h declare the
 * variables); an assign hook only forwards a new value to the core, which
 * keeps its own copy (the strategy override and the device).  hbird.stat_max
 * sizes shared memory, so it exists only when the library is preloaded (a
 * PGC_POSTMASTER variable cannot be created later); for the same reason
 * the statistics switch that scoring reads, hb_stat_on, is hbird.stat_track
 * only where the library was preloaded (pg_stats.c's shared table exists
 * only then).  This file calls no other glue file: every other one reads
 * it.
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "hbird.h"
#include "device.h"
#include "pg_scan.h"
#include "pg_scaleout.h"

/* models and plans */
int			hb_max_model_bytes = 256 * 1024 * 1024;
int			hb_plan_cache_entries = 32;
int			hb_shared_cache_size = 64 * 1024;	/* kB */
bool		hb_shared_cache = true;
static int	hb_tree_strategy = HB_STRATEGY_AUTO;

/* batches */
int			hb_batch_memory_kb = 64 * 1024;
bool		hb_batch_scan = true;
bool		hb_share_plans = true;
int			hb_share_plans_max = 32 * 1024;	/* kB */

/* scale-out: scoring on shards (pg_pushdown.c) */
bool		hb_pushdown_on = true;

/* classes, cascades, ranking */
bool		hb_early_exit = true;
bool		hb_cascade_on = false;
bool		hb_lazy_on = true;
bool		hb_sparse_on = true;
int			hb_topk_mode = HB_TOPK_AUTO;
bool		hb_topk_bar_cut = false;

/* statistics (pg_stats.c) */
bool		hb_stat_track = true;
int			hb_stat_max = 1000;
bool		hb_stat_on = false;	/* counting: stat_track and preloaded */
static bool stat_preloaded = false;

/* the GPU (device.h, docs/gpu.md) */
static int	hb_device_setting = HB_DEVICE_AUTO;
static int	hb_gpu_min_batch = HB_DEVICE_DEFAULT_MIN_BATCH;
static int	hb_gpu_memory_mb = (int) (HB_DEVICE_DEFAULT_BUDGET >> 20);

static const struct config_enum_entry strategy_options[] = {
	{"auto", HB_STRATEGY_AUTO, false},
	{"tt", HB_STRATEGY_TT, false},
	{"ptt", HB_STRATEGY_PTT, false},
	{"gemm", HB_STRATEGY_GEMM, false},
	{NULL, 0, false}
};

static const struct config_enum_entry topk_mode_options[] = {
	{"exact", HB_TOPK_EXACT, false},
	{"approx", HB_TOPK_APPROX, false},
	{"auto", HB_TOPK_AUTO, false},
	{NULL, 0, false}
};

static const struct config_enum_entry device_options[] = {
	{"auto", HB_DEVICE_AUTO, false},
	{"cpu", HB_DEVICE_CPU, false},
	{"gpu", HB_DEVICE_GPU, false},
	{NULL, 0, false}
};

static void
assign_tree_strategy(int newval, void *extra)
{
	hb_set_strategy_override((HbStrategy) newval);
}

static void
assign_stat_track(bool newval, void *extra)
{
	hb_stat_on = newval && stat_preloaded;
}

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

void
hb_define_gucs(void)
{
	/* before hbird.stat_track: its definition runs the assign hook */
	stat_preloaded = process_shared_preload_libraries_in_progress;

	DefineCustomIntVariable("hbird.max_model_bytes",
							"Largest model file hb_model_upload accepts.",
							NULL,
							&hb_max_model_bytes,
							hb_max_model_bytes,
							1024,
							1024 * 1024 * 1024 - 1,
							PGC_SUSET,
							GUC_UNIT_BYTE,
							NULL, NULL, NULL);

	DefineCustomIntVariable("hbird.plan_cache_entries",
							"Compiled model versions each backend keeps.",
							"Least recently used plans beyond this are freed.",
							&hb_plan_cache_entries,
							hb_plan_cache_entries,
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
							 hb_tree_strategy,
							 strategy_options,
							 PGC_USERSET,
							 0,
							 NULL, assign_tree_strategy, NULL);

	DefineCustomIntVariable("hbird.batch_memory",
							"Memory for one batch of rows in batched scoring.",
							"Batch sizes adapt so that inputs and outputs of a batch fit.",
							&hb_batch_memory_kb,
							hb_batch_memory_kb,
							64,
							1024 * 1024,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.batch_scan",
							 "Scores plain SQL calls in batches.",
							 "When on, the planner puts an HbirdScore node where hb_predict and the "
							 "other scoring functions are evaluated for many rows, so that they "
							 "score in batches (and ORDER BY a score LIMIT k prunes); off keeps "
							 "the row-at-a-time plans.  The answers are the same.",
							 &hb_batch_scan,
							 hb_batch_scan,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.share_plans",
							 "Parallel workers score with their leader's compiled models.",
							 "When on, the leader of a parallel query copies each model its "
							 "batching scans score with, compiled, into the query's shared memory, "
							 "and its workers read it there instead of compiling it again. "
							 "The answers are the same either way.",
							 &hb_share_plans,
							 hb_share_plans,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("hbird.share_plans_max",
							"Most shared memory a parallel query's scoring node gives its models.",
							"With hbird.share_plans on, the models a batching scan below a Gather "
							"shares with its workers take at most this much of the query's shared "
							"memory; a model beyond it is compiled by each worker.",
							&hb_share_plans_max,
							hb_share_plans_max,
							0, 1024 * 1024,
							PGC_USERSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.pushdown",
							 "Scores on the shards: ships scoring calls over foreign tables.",
							 "When on, scoring calls over foreign tables of servers whose extensions "
							 "option lists hbird are evaluated there (pinned to the coordinator's "
							 "model version), and aggregates and ORDER BY ... LIMIT over a "
							 "partitioned table of such tables run on every partition's server. "
							 "The answers are the same either way.",
							 &hb_pushdown_on,
							 hb_pushdown_on,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.early_exit",
							 "Stops scoring a row once its class is settled.",
							 "Class predictions of tree classifiers skip the remaining trees "
							 "when no leaves of theirs could change the class; the answer is the same either way.",
							 &hb_early_exit,
							 hb_early_exit,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.cascade",
							 "Score classifiers through their tuned cascade.",
							 "When on, hb_predict and the batched forms let a tuned cheap model "
							 "answer the rows it is confident about (see hb_tune).",
							 &hb_cascade_on,
							 hb_cascade_on,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.lazy_featurize",
							 "Featurize only what a cascade's or approximate top-K's cheap model reads.",
							 "The other featurizers run only for the rows the full model scores; "
							 "approximate top-K of a model without featurizers reads only the cheap "
							 "model's columns. Answers are the same either way.",
							 &hb_lazy_on,
							 hb_lazy_on,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.sparse_linear",
							 "Scores linear models over text from each document's non-zero columns.",
							 "A linear model whose pipeline has text featurizers adds weight times "
							 "value for the columns a row's text produces, instead of building its "
							 "feature vector (tens of thousands of columns).  Off builds the vector, "
							 "to compare; the answers agree to rounding.",
							 &hb_sparse_on,
							 hb_sparse_on,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("hbird.topk_mode",
							 "How hb_topk_agg, hb_topk with mode 'auto' and ORDER BY <score> DESC LIMIT k rank.",
							 "exact scores every row exactly; approx uses the tuned approximation "
							 "(an error without one); auto uses it when one exists.",
							 &hb_topk_mode,
							 hb_topk_mode,
							 topk_mode_options,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.topk_bar_cut",
							 "Lets approximate top-K use a tuning's cut relative to the bar.",
							 "That cut re-scores fewer rows on large inputs, but its precision "
							 "statement assumes what the tuning sample cannot check; off, the "
							 "fixed cut alone decides, whose statement hb_tune reports.",
							 &hb_topk_bar_cut,
							 hb_topk_bar_cut,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.stat_track",
							 "Collects scoring statistics for hb_stat_models.",
							 NULL,
							 &hb_stat_track,
							 hb_stat_track,
							 PGC_SUSET,
							 0,
							 NULL, assign_stat_track, NULL);

	/* a PGC_POSTMASTER variable can only be created while preloading */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("hbird.stat_max",
								"Model versions tracked by hb_stat_models.",
								"The least recently used are evicted beyond this. "
								"Needs hbird in shared_preload_libraries.",
								&hb_stat_max,
								hb_stat_max,
								100,
								100000,
								PGC_POSTMASTER,
								0,
								NULL, NULL, NULL);

	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("hbird.shared_cache_size",
								"Shared memory that keeps compiled models for every backend.",
								"The first backend to compile a model version writes it there, "
								"and the others read it in place.  0 turns the shared cache off. "
								"Needs hbird in shared_preload_libraries.",
								&hb_shared_cache_size,
								hb_shared_cache_size,
								0,
								INT_MAX,
								PGC_POSTMASTER,
								GUC_UNIT_KB,
								NULL, NULL, NULL);

	DefineCustomBoolVariable("hbird.shared_cache",
							 "This session reads and writes compiled models in the shared cache.",
							 "When off, the session compiles each model version for itself, as "
							 "without hbird.shared_cache_size.  The answers are the same either way.",
							 &hb_shared_cache,
							 hb_shared_cache,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

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
							 hb_device_setting,
							 device_options,
							 PGC_USERSET,
							 0,
							 NULL, assign_device, NULL);

	DefineCustomIntVariable("hbird.gpu_min_batch",
							"Smallest batch that hbird.device = auto sends to the GPU.",
							NULL,
							&hb_gpu_min_batch,
							hb_gpu_min_batch,
							2,
							INT_MAX,
							PGC_USERSET,
							0,
							NULL, assign_gpu_min_batch, NULL);

	DefineCustomIntVariable("hbird.gpu_memory",
							"GPU memory each backend may hold for compiled models.",
							"Least recently used models leave the GPU beyond this.",
							&hb_gpu_memory_mb,
							hb_gpu_memory_mb,
							1,
							1024 * 1024,
							PGC_SUSET,
							GUC_UNIT_MB,
							NULL, assign_gpu_memory, NULL);

	MarkGUCPrefixReserved("hbird");
}
