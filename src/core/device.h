/*
 * device.h
 *	  Running plans on a CUDA device, with the CPU as the fallback.
 *
 * The same binary serves machines with and without a GPU: the CUDA runtime
 * is linked statically and loads the driver at first use, so a missing
 * driver or device is found then and reported as a reason, never as a
 * failure to load.  Plans are copied to the device once and kept there,
 * within a memory budget, least recently used first out.
 *
 * The executor entry (hb_exec_trees, exec.c) asks hb_device_try_margins
 * first for full scoring, so every batched caller of the core runs on the
 * device when the mode and the batch size say so; a batch of one row (row-by-row scoring) always runs on
 * the CPU.  The margins are the CPU's to the bit (see src/cuda/hb_cuda.cu).
 */
#ifndef HB_DEVICE_H
#define HB_DEVICE_H

#include "plan.h"

typedef enum HbDeviceMode
{
	HB_DEVICE_AUTO = 0,			/* the GPU when present and the batch is big */
	HB_DEVICE_CPU,				/* never the GPU */
	HB_DEVICE_GPU				/* batches on the GPU; none there is an error */
} HbDeviceMode;

/*
 * Smallest batch that auto sends to the GPU.  A batch pays a launch and two
 * synchronous copies (tens of microseconds) before any work; one CPU core
 * scores a small model (tens of trees) at millions of rows a second, so
 * below about a thousand rows the fixed cost alone exceeds the CPU's time.
 * To be measured on a GPU host (docs/gpu.md); hbird.gpu_min_batch sets it.
 */
#define HB_DEVICE_DEFAULT_MIN_BATCH	1024

/* Device memory for plans, per process (hbird.gpu_memory). */
#define HB_DEVICE_DEFAULT_BUDGET	((size_t) 1024 * 1024 * 1024)

extern void hb_device_set_mode(HbDeviceMode mode);
extern HbDeviceMode hb_device_mode(void);
extern void hb_device_set_min_batch(int64_t rows);
extern void hb_device_set_budget(size_t bytes);

/* Built with CUDA at all. */
extern bool hb_device_built(void);

/*
 * Is a device usable?  Probes once (loads the driver).  False with the
 * reason in err (code HB_ERR_DEVICE) when not.
 */
extern bool hb_device_available(HbError *err);

/* Name of the device ("NVIDIA H200 (sm_90, 143771 MiB)"), or "". */
extern const char *hb_device_name(void);

/*
 * Would a batch of n rows of plan p run on the device?  True: yes.  False
 * with err->code == HB_OK: on the CPU.  False with an error: mode gpu and
 * no usable device.
 */
extern bool hb_device_wanted(const HbPlan *p, size_t n, HbError *err);

/*
 * Copy the plan to the device (once; later calls are no-ops) and free that
 * copy.  hb_plan_free calls hb_device_plan_free; so must anyone who frees a
 * plan's memory without hb_plan_free.
 */
extern bool hb_device_plan_upload(const HbPlan *p, HbError *err);
extern void hb_device_plan_free(const HbPlan *p);

/* Margins on the device, whatever the mode; false with the reason. */
extern bool hb_device_margins(const HbPlan *p, const double *x, size_t n,
							  double *margins, HbError *err);

/*
 * The dispatch of hb_exec_trees: true when the margins were computed on
 * the device.  In mode gpu a failure goes to hb_device_error_hook (which
 * raises it and does not return); without a hook, and in mode auto, the
 * caller computes on the CPU.
 */
extern bool hb_device_try_margins(const HbPlan *p, const double *x, size_t n,
								  double *margins);
extern void (*hb_device_error_hook) (const HbError *err);

typedef struct HbDeviceStats
{
	size_t		budget;
	size_t		resident_bytes; /* plans on the device */
	int			resident_plans;
	size_t		buffer_bytes;	/* batch buffers, kept between calls */
	int64_t		min_batch;
	int64_t		batches;		/* batches run on the device */
	int64_t		rows;
	int64_t		fallbacks;		/* batches auto moved back to the CPU */
	char		last_error[512];
} HbDeviceStats;

extern void hb_device_stats(HbDeviceStats *s);

/*
 * For test/gpu: the plan's device copy (an HbCudaPlan, src/cuda/hb_cuda.h)
 * after hb_device_plan_upload, or NULL.
 */
extern void *hb_device_plan_handle(const HbPlan *p);

/*
 * For tests: the margins the device would compute, by the kernels' own
 * per-row code run on the CPU (no driver needed).  *kernel: "ptt" or "tt",
 * chosen as for the device.  variant: 0 the row kernel as launched, 1 the
 * PTT row kernel reading inputs instead of staged keys (wide models), 2 the
 * (row, tree) kernel and reduction of small batches.
 */
extern bool hb_device_emulate_margins(const HbPlan *p, int variant,
									  const double *x, size_t n,
									  double *margins, const char **kernel,
									  HbError *err);

#endif							/* HB_DEVICE_H */
