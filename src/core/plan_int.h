/*
 * plan_int.h
 *	  Inside of a compiled plan; only the core's executors include this.
 */
#ifndef HB_PLAN_INT_H
#define HB_PLAN_INT_H

#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HB_FN_DEFAULT_LEFT	0x01
#define HB_FN_CAT			0x02
#define HB_FN_CAT_IN_LEFT	0x04
#define HB_FN_CAT_LIST		0x08	/* the set is a sorted list (HbNode) */
#define HB_FN_MISSING_SHIFT 4
#define HB_FN_MISSING_MASK	0x30

/*
 * Strategy heuristic thresholds (plan.c), calibrated with bench/strategies.sh
 * (docs/strategies.md): one thread, 28 features, depth 2-10, 10-500 trees,
 * batches 1-65536.  TT wins below a few dozen rows; GEMM wins only at
 * depth 2 with few trees (its work grows as 4^depth); PTT wins everywhere
 * else by 2-9x as long as trees are not much sparser than perfect.
 */
#define HB_PTT_MAX_DEPTH		12	/* PTT layouts are built up to this depth */
#define HB_GEMM_MAX_DEPTH		6	/* GEMM layouts likewise (forced use only) */
#define HB_AUTO_MIN_BATCH		16	/* smaller batches traverse, unless PTT
									 * has its few-row kernel (strategy_ptt.c) */
#define HB_AUTO_GEMM_DEPTH		2
#define HB_AUTO_GEMM_MIN_BATCH	64
/*
 * ... and at most this many trees (unless PTT does not fit the trees at
 * all, HB_AUTO_PTT_FULLNESS): at depth 2 PTT pays a fixed cost a row
 * (the compact kernel's column ranks) and then less per tree than GEMM.
 * Measured (bench/results/strategies.md, batches 64-65536): with
 * OpenBLAS's Cooperlake kernels GEMM ran at 1.2-1.55x PTT at 10 trees and
 * PTT at 1.45-1.82x GEMM at 100 and 500 (per row about 43 + 1.1 T ns
 * against 22 + 2.0 T: even near 24 trees); with its Haswell kernels PTT
 * won from 10 trees (1.09-1.30x) and ran at 1.64-1.82x GEMM at 30.
 */
#define HB_AUTO_GEMM_TREES		16
#define HB_AUTO_PTT_DEPTH		HB_PTT_MAX_DEPTH
#define HB_AUTO_PTT_FULLNESS	0.35	/* mean leaf depth / max depth */

/* XGBoost refuses categories at or above 2^24: a float can't hold them all */
#define HB_MAX_CATEGORY 16777216.0

/* 16 bytes: the right child is always left + 1 */
typedef struct HbFlatNode
{
	float		thr;			/* split threshold, or the leaf value */
	int32_t		feature;		/* -1 for a leaf */
	int32_t		left;			/* absolute index of the left child */
	uint8_t		flags;
	uint8_t		pad[3];
} HbFlatNode;

/*
 * Tree strategies.  TT walks the flat node array above; PTT and GEMM keep
 * their own layouts (strategy_ptt.c, strategy_gemm.c) built from the IR and
 * hang off the plan.  Every strategy sums leaves per row in model tree
 * order, so all of them give the same bits.
 */
typedef struct HbPtt HbPtt;
typedef struct HbGemm HbGemm;


struct HbPlan
{
	HbTask		task;
	HbEstimator estimator;
	HbLink		link;
	HbCmp		cmp;
	bool		sum_f32;
	bool		predict_class;
	bool		zero_snap;
	int32_t		n_features;
	int32_t		n_outputs;
	int32_t		n_classes;
	int32_t		max_depth;
	double		avg_leaf_depth; /* mean depth of leaves, over trees */
	int64_t		n_leaves;
	size_t		bytes;
	double	   *base_margin;

	/* trees */
	int32_t		n_trees;
	int64_t		n_nodes;
	int32_t    *tree_root;
	int32_t    *tree_group;
	HbFlatNode *nodes;
	double	   *thr_d;			/* double thresholds (HB_CMP_LE_F64) */
	double	   *leaf_d;			/* double leaf values (!sum_f32) */
	/* (read only where !sum_f32: a float32 plan's flat view has neither) */
	int32_t		n_cat_words;
	uint32_t   *cat_words;
	int32_t    *cat_off;		/* per node, only when the model has sets */
	int32_t    *cat_nwords;
	int32_t    *cat_base;		/* a bitset's first word (HbNode.cat_base) */

	/* linear */
	double	   *weights;
	double	   *bias;

	/* optional strategy layouts, built on request (NULL when absent) */
	HbPtt	   *ptt;
	HbGemm	   *gemm;

	/* copy on a CUDA device (device.c), made at first use; NULL if none */
	struct HbDevPlan *dev;

	/*
	 * The arrays are a flat copy's (plan_flat.c: a parallel worker's view
	 * of its leader's plan): hb_plan_free frees the structs only.
	 */
	bool		borrowed;
};

/*
 * The pointer fields of a plan's structs, one at a time, for plan_flat.c:
 * slot is the field, bytes the size of what it points to (0 where it is
 * NULL).  The callback may point the field elsewhere (a flat copy) before
 * the next size is taken; sizes may read arrays visited earlier.  false
 * stops the walk.
 */
typedef bool (*HbArrayFn) (void **slot, size_t bytes, void *arg);
/*
 * Visit pointer field `field`, holding n elements (none when it is NULL),
 * in a walk of fn(arg); a false return of fn ends the walk.
 */
#define HB_VISIT_ARRAY(fn, arg, field, n) \
	do { \
		if (!(fn)((void **) &(field), \
				  (field) != NULL ? (size_t) (n) * sizeof(*(field)) : 0, (arg))) \
			return false; \
	} while (0)

/* the pointer fields of the plan and its layouts a flat copy holds (plan_flat.c) */
extern bool hb_plan_arrays(HbPlan *p, HbArrayFn fn, void *arg);

/* strategy_ptt.c: perfect-tree traversal; false (HB_ERR_LIMIT) when too big */
extern bool hb_ptt_build(HbPlan *p, const HbModel *m, size_t max_bytes,
						 HbError *err);
extern void hb_ptt_free(HbPtt *t);
extern size_t hb_ptt_bytes(const HbPtt *t);
extern void hb_ptt_margins(const HbPlan *p, const double *x, size_t n,
						   double *margins);
extern void hb_ptt_accumulate(const HbPlan *p, const double *x, size_t n,
							  int t_begin, int t_end, double *margins);
extern int	hb_ptt_ops(const HbPlan *p, size_t batch, HbPlanOp *ops, int max_ops);
/* PTT pays on a batch of n < HB_AUTO_MIN_BATCH rows (its few-row kernel) */
extern bool hb_ptt_small_pays(const HbPlan *p, size_t n);

/*
 * PTT's kernels (strategy_ptt.c), for tests and benchmarks: AUTO takes the
 * compact kernel where the plan has its layout and it pays, else the
 * eight-row walk; WALK8 always the eight-row walk; COMPACT the compact
 * kernel wherever the plan has its layout; PORTABLE likewise, in plain C
 * (no SSE2, no assembly), as other machines build it.  All give the same
 * bits.  Process-wide, like hb_set_strategy_override.
 */
typedef enum HbPttKernel
{
	HB_PTT_KERNEL_AUTO = 0,
	HB_PTT_KERNEL_WALK8,
	HB_PTT_KERNEL_COMPACT,
	HB_PTT_KERNEL_PORTABLE
} HbPttKernel;
extern void hb_ptt_set_kernel(HbPttKernel k);
/*
 * false: the compact kernel ranks every column with its search tree, as
 * machines without AVX-512 do; true (the default): by blocks where the CPU
 * has AVX-512 (strategy_ptt.c, "Ranks by blocks").  Same bits either way.
 */
extern void hb_ptt_set_block_ranks(bool on);
/* Does the plan's PTT layout include the compact kernel's? */
extern bool hb_ptt_has_compact(const HbPlan *p);
/* The columns the compact kernel ranks by blocks (0 where it cannot) */
extern int	hb_ptt_block_columns(const HbPlan *p);

/*
 * A chunk of rows for the compact kernel over tree ranges (strategy_ptt.c),
 * behind exec.c's HbExecChunk: it ranks up to hb_ptt_chunk_cap rows once,
 * adds trees block by block and keeps only the rows still open.  Every row
 * gets its trees in model order: its sums are hb_ptt_margins's bits.
 * hb_ptt_chunk_usable: the plan has the compact layout and its ranks pay
 * over trees [t_begin, t_end); hb_ptt_chunk_new is NULL otherwise (or out of
 * memory).
 */
typedef struct HbPttChunk HbPttChunk;
extern bool hb_ptt_chunk_usable(const HbPlan *p, int t_begin, int t_end);
extern HbPttChunk *hb_ptt_chunk_new(const HbPlan *p);
extern void hb_ptt_chunk_free(HbPttChunk *c);
extern int	hb_ptt_chunk_cap(const HbPttChunk *c);
extern int	hb_ptt_chunk_rows(const HbPttChunk *c);
/*
 * n rows of x (zero snapping done): ranks, base margins, ids first_id..;
 * x stays the caller's while the chunk holds them (trees with categorical
 * or zero-as-missing nodes read it)
 */
extern void hb_ptt_chunk_load(HbPttChunk *c, const double *x, int n,
							  size_t first_id);
/* add trees [t_begin, t_end) to the sums of the first nr rows held */
extern void hb_ptt_chunk_run(HbPttChunk *c, int nr, int t_begin, int t_end);
/* keep rows[0..m), distinct indexes of rows held, in that order */
extern void hb_ptt_chunk_select(HbPttChunk *c, const int32_t *rows, int m);
/*
 * drop the rows whose keep[] is 0, moving as many of the last rows into
 * their places (order changes, ids follow); keep[] follows too
 */
extern void hb_ptt_chunk_drop(HbPttChunk *c, uint8_t *keep);
/* running sums of the rows held, rows x outputs, as doubles */
extern void hb_ptt_chunk_margins(const HbPttChunk *c, double *out);
extern const size_t *hb_ptt_chunk_ids(const HbPttChunk *c);
/*
 * false: hb_ptt_chunk_usable says no, so HbExecChunk is plain and top-K
 * and the early exit take the range kernel block by block, as before
 * chunks (tests, benchmarks).
 */
extern void hb_ptt_set_chunks(bool on);

/* The PTT layout, read-only, for copying it to a device (device.c). */
typedef struct HbPttView
{
	int32_t		n_used;
	const int32_t *used;
	int64_t		n_nodes;
	int64_t		n_leaves;
	const int32_t *fsel;
	const uint32_t *tk32;
	const uint64_t *tk64;
	const float *leaf_f;
	const double *leaf_d;
	bool		general;		/* some tree needs hb_step_general */
} HbPttView;
extern bool hb_ptt_view(const HbPlan *p, HbPttView *v);
extern void hb_ptt_view_tree(const HbPlan *p, int i, int64_t *node_off,
							 int64_t *leaf_off, int32_t *depth, int32_t *group);

/* the layout's pointer fields (plan_flat.c); false if a walk stopped */
extern size_t hb_ptt_struct_size(void);
extern bool hb_ptt_arrays(HbPtt *t, const HbPlan *p, HbArrayFn fn, void *arg);

/* strategy_gemm.c: Hummingbird's GEMM strategy over OpenBLAS */
extern bool hb_gemm_build(HbPlan *p, const HbModel *m, size_t max_bytes,
						  HbError *err);
extern void hb_gemm_free(HbGemm *g);
extern size_t hb_gemm_bytes(const HbGemm *g);
extern void hb_gemm_margins(const HbPlan *p, const double *x, size_t n,
							double *margins);
extern int	hb_gemm_ops(const HbPlan *p, size_t batch, HbPlanOp *ops, int max_ops);
extern size_t hb_gemm_struct_size(void);
extern bool hb_gemm_arrays(HbGemm *g, HbArrayFn fn, void *arg);

/*
 * One op row of a strategy's listing (hb_*_ops, read by hb_plan_ops for
 * hb_compile): the strategies fill rows as data and call nothing above
 * them.  false when the array is full.
 */
static inline bool
hb_op_add(HbPlanOp *ops, int max_ops, int *n, const char *op,
		  const char *in, const char *out, int64_t param_bytes, double flops)
{
	HbPlanOp   *o;

	if (*n >= max_ops)
		return false;
	o = &ops[(*n)++];
	memset(o, 0, sizeof(*o));
	o->op = op;
	snprintf(o->in_shape, sizeof(o->in_shape), "%s", in);
	snprintf(o->out_shape, sizeof(o->out_shape), "%s", out);
	o->param_bytes = param_bytes;
	o->flops = flops;
	return true;
}

/* exec_tt.c */
extern void hb_linear_margins(const HbPlan *p, const double *x, size_t n,
							  double *margins);
extern void hb_tt_margins(const HbPlan *p, const double *x, size_t n,
						  double *margins);
/* trees [t0, t1) added to running sums, per row in model order */
extern void hb_tt_accumulate(const HbPlan *p, const double *x, size_t n,
							 int t0, int t1, double *margins);
extern int	hb_tt_ops(const HbPlan *p, size_t batch, HbPlanOp *ops, int max_ops);

/*
 * Is category c in the ascending list w[0..n)?  By halves: a list is what a
 * set far sparser than its span becomes (model_builder.c), so n is small
 * next to the bitset it replaces.
 */
static inline bool
hb_cat_in_list(const uint32_t *w, int32_t n, uint32_t c)
{
	int32_t		lo = 0,
				hi = n;

	while (lo < hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;

		if (w[mid] < c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && w[lo] == c;
}

/*
 * Is category x in the set of plan node idx (flags: its HbFlatNode's)?
 * Invalid categories are in no set.  XGBoost (float32 models) refuses any
 * negative value; LightGBM (double models) truncates toward zero first, so
 * -0.5 is category 0.  A bitset holds words cat_base .. cat_base +
 * cat_nwords - 1 of the categories: below cat_base the unsigned word index
 * wraps past cat_nwords, so one compare bounds it on both sides.
 */
static inline bool
hb_cat_in_set(const HbPlan *p, int flags, int64_t idx, double x)
{
	uint32_t	c,
				w;

	if (p->cmp == HB_CMP_LT_F32 ? !(x >= 0.0) : !(x > -1.0))
		return false;
	if (x >= HB_MAX_CATEGORY)
		return false;
	c = (uint32_t) x;
	/* an empty set (a damaged or odd model): no words, maybe no array */
	if (p->cat_nwords[idx] == 0)
		return false;
	if (flags & HB_FN_CAT_LIST)
		return hb_cat_in_list(p->cat_words + p->cat_off[idx],
							  p->cat_nwords[idx], c);
	w = c / 32 - (uint32_t) p->cat_base[idx];
	if (w >= (uint32_t) p->cat_nwords[idx])
		return false;
	return (p->cat_words[p->cat_off[idx] + w] >> (c % 32)) & 1;
}

/*
 * The general step from a split node: missing values, categorical sets and
 * both comparison semantics.  Executors take a fast path for plain numeric
 * nodes and call this for the rest.
 */
static inline int32_t
hb_step_general(const HbPlan *p, const HbFlatNode *n, int64_t idx, double x)
{
	int			missing = (n->flags & HB_FN_MISSING_MASK) >> HB_FN_MISSING_SHIFT;
	bool		go_left;

	if (isnan(x))
	{
		if (missing == HB_MISSING_NAN)
			return n->left + !(n->flags & HB_FN_DEFAULT_LEFT);
		x = 0.0;
	}
	if (missing == HB_MISSING_ZERO && fabs(x) <= HB_ZERO_THRESHOLD)
		return n->left + !(n->flags & HB_FN_DEFAULT_LEFT);
	if (n->flags & HB_FN_CAT)
	{
		bool		in = hb_cat_in_set(p, n->flags, idx, p->cmp == HB_CMP_LT_F32 ?
									   (double) (float) x : x);

		go_left = (n->flags & HB_FN_CAT_IN_LEFT) ? in : !in;
	}
	else if (p->cmp == HB_CMP_LT_F32)
		go_left = (float) x < n->thr;
	else
		go_left = x <= p->thr_d[idx];
	return n->left + !go_left;
}

/*
 * One tree, one row.  Plain numeric nodes (no category set, NaN-style
 * missing) take the short path; everything else the general step.
 */
static inline int64_t
hb_walk_f32(const HbPlan *p, int64_t idx, const double *row)
{
	const HbFlatNode *nodes = p->nodes;

	while (nodes[idx].feature >= 0)
	{
		const HbFlatNode *n = &nodes[idx];
		double		v = row[n->feature];

		if (n->flags & ~HB_FN_DEFAULT_LEFT)
			idx = hb_step_general(p, n, idx, v);
		else if (isnan(v))
			idx = n->left + !(n->flags & HB_FN_DEFAULT_LEFT);
		else
			idx = n->left + !((float) v < n->thr);
	}
	return idx;
}

static inline int64_t
hb_walk_f64(const HbPlan *p, int64_t idx, const double *row)
{
	const HbFlatNode *nodes = p->nodes;

	while (nodes[idx].feature >= 0)
	{
		const HbFlatNode *n = &nodes[idx];
		double		v = row[n->feature];

		if (n->flags & ~HB_FN_DEFAULT_LEFT)
			idx = hb_step_general(p, n, idx, v);
		else if (isnan(v))
			idx = n->left + !(n->flags & HB_FN_DEFAULT_LEFT);
		else
			idx = n->left + !(v <= p->thr_d[idx]);
	}
	return idx;
}

#endif							/* HB_PLAN_INT_H */
