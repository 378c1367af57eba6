/*
 * hb_cuda.h
 *	  The C interface of the CUDA part (hb_cuda.cu).
 *
 * The CUDA code sees no core header: src/core/device.c flattens a plan into
 * the plain description below, and the CUDA side copies it to the device
 * in its own layout.  Everything here is callable from C; no function
 * aborts or exits, each returns 0 on failure with the reason in why.
 */
#ifndef HB_CUDA_H
#define HB_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* kernels */
#define HB_CUDA_KERNEL_TT	1	/* flat-node walk: every node kind */
#define HB_CUDA_KERNEL_PTT	2	/* perfect trees on integer keys */

/* mirror plan_int.h / model.h (device.c checks that they agree) */
#define HB_CUDA_FN_DEFAULT_LEFT	0x01
#define HB_CUDA_FN_CAT			0x02
#define HB_CUDA_FN_CAT_IN_LEFT	0x04
#define HB_CUDA_FN_CAT_LIST		0x08
#define HB_CUDA_FN_MISSING_SHIFT 4
#define HB_CUDA_FN_MISSING_MASK	0x30
#define HB_CUDA_MISSING_NAN		0
#define HB_CUDA_MISSING_ZERO	1
#define HB_CUDA_MISSING_NONE	2

/* One PTT tree: what strategy_ptt.c lays out. */
typedef struct HbCudaTree
{
	int64_t		node_off;
	int64_t		leaf_off;
	int32_t		depth;
	int32_t		group;
} HbCudaTree;

/*
 * A plan, flattened.  Host pointers; the CUDA side copies what its kernel
 * needs and keeps nothing of the caller's.
 */
typedef struct HbCudaDesc
{
	int			kernel;			/* HB_CUDA_KERNEL_* */
	int			cmp_f32;		/* float32 "<" compares, else double "<=" */
	int			sum_f32;		/* float32 sums in tree order, else double */
	int			input_f32;		/* inputs cross as float (exact for the
								 * compares this plan makes) */
	int			zero_snap;		/* |x| <= zero threshold becomes 0 first */
	int32_t		n_features;
	int32_t		n_outputs;
	int32_t		n_trees;
	const double *base_margin;	/* n_outputs */

	/* HB_CUDA_KERNEL_TT: the plan's flat nodes (16 bytes each, HbFlatNode) */
	int64_t		n_nodes;
	const void *nodes;
	const double *thr_d;		/* per node; only read for double compares */
	const double *leaf_d;		/* per node; only read for double sums */
	const int32_t *tree_root;
	const int32_t *tree_group;
	int32_t		n_cat_words;
	const uint32_t *cat_words;
	const int32_t *cat_off;		/* per node, or NULL without sets */
	const int32_t *cat_nwords;
	const int32_t *cat_base;	/* a bitset's first word */

	/* HB_CUDA_KERNEL_PTT */
	int32_t		n_used;
	const int32_t *used;		/* column -> feature */
	const HbCudaTree *trees;	/* n_trees */
	int64_t		ptt_nodes;
	int64_t		ptt_leaves;
	const int32_t *fsel;
	const uint32_t *tk32;		/* cmp_f32 */
	const uint64_t *tk64;		/* !cmp_f32 */
	const float *leaf_f;		/* sum_f32 */
	const double *pleaf_d;		/* !sum_f32 */
} HbCudaDesc;

typedef struct HbCudaPlan HbCudaPlan;

/*
 * First use: load the driver, pick device 0.  1 when a device is usable,
 * else 0 with the reason (cudaGetErrorString of what failed).  name gets
 * the device's name and compute capability.  Cheap after the first call.
 */
extern int	hb_cuda_init(char *name, size_t name_len, char *why, size_t why_len);

/* Copy a plan to the device; NULL on failure.  *bytes: device memory held. */
extern HbCudaPlan *hb_cuda_plan_upload(const HbCudaDesc *d, size_t *bytes,
									   char *why, size_t why_len);
extern void hb_cuda_plan_free(HbCudaPlan *cp);

/*
 * Margins (n x n_outputs doubles, host) of n host rows (n x n_features
 * doubles, NaN missing).  The rows go in chunks through pinned staging
 * buffers that this module keeps between calls (hb_cuda_release_buffers
 * frees them).  1: done; 0: the buffers could not be allocated (the device
 * is still usable); -1: a copy or the kernel failed (the CUDA context may be
 * unusable from now on).
 */
extern int	hb_cuda_margins(HbCudaPlan *cp, const double *x, size_t n,
							double *margins, char *why, size_t why_len);
extern size_t hb_cuda_buffer_bytes(void);
extern void hb_cuda_release_buffers(void);

/*
 * For the benchmark: rows already on the device.  hb_cuda_stage copies n
 * host rows to a new device buffer in the plan's input type (*dx, free
 * with hb_cuda_free_device) and allocates the margins buffer (*dm).
 * hb_cuda_time_resident runs the kernel reps times on them and returns the
 * mean seconds per run (CUDA events), or a negative value on failure;
 * hb_cuda_fetch copies the margins back.
 */
extern int	hb_cuda_stage(HbCudaPlan *cp, const double *x, size_t n,
						  void **dx, void **dm, char *why, size_t why_len);
extern double hb_cuda_time_resident(HbCudaPlan *cp, const void *dx, size_t n,
									void *dm, int reps, char *why,
									size_t why_len);
extern int	hb_cuda_fetch(HbCudaPlan *cp, const void *dm, size_t n,
						  double *margins, char *why, size_t why_len);
extern void hb_cuda_free_device(void *ptr);

/*
 * Host-to-device bandwidth in bytes/second for a copy of bytes, from
 * pinned (pinned != 0) or pageable memory; negative on failure.
 */
extern double hb_cuda_h2d_bandwidth(size_t bytes, int pinned, char *why,
									size_t why_len);

/*
 * The kernels' per-row code run on the host, on the host arrays of the
 * description: what the device would compute, for checking the kernels'
 * arithmetic on machines without a GPU.  variant: HB_CUDA_EMU_*.  Needs no
 * driver.
 */
#define HB_CUDA_EMU_ROWS		0	/* the row kernel as launched */
#define HB_CUDA_EMU_ROWS_GLOBAL	1	/* PTT: keys from the inputs, not staged */
#define HB_CUDA_EMU_PAIRS		2	/* (row, tree) kernel, then the reduction */
extern int	hb_cuda_emulate(const HbCudaDesc *d, const double *x, size_t n,
							double *margins, int variant, char *why,
							size_t why_len);

#ifdef __cplusplus
}
#endif

#endif							/* HB_CUDA_H */
